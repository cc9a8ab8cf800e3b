"""Wind operators: bake wind data, add / remove the live wind, presets. Thin wrappers around plain functions
(``bake_job``, ``bake``, ``add_wind``, ``remove_wind``, ``apply_preset``) that scripts and the CLI call too."""

from __future__ import annotations

import math
import os
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import bpy
import numpy as np
import numpy.typing as npt
from bpy.props import BoolProperty, EnumProperty

from .. import bridge, progress
from ..core import wind as core_wind
from ..core import wind_hierarchy
from ..shader_nodes import bend as bend_nodes
from ..shader_nodes import common as nodes_common
from ..shader_nodes import wind as wind_nodes
from ..shader_nodes import wind_gpu, wind_rigid
from ..shader_nodes import wind_view as view_nodes
from ..shader_nodes.snow import buffer as snow_buffer_nodes
from . import snow as snow_ops
from . import wind_armature
from .common import (NUMBER_LIMIT, ObjectsResult, changeable, evaluated_check, join_scene_group,
                     kept_by_override_reason, linked_reason, mesh_of, no_modifier_reason, nodes_modifiers,
                     poll_not_in_edit_mode, refuse_edit_mode, report_result, update_world_matrices)
from .snow import live_push

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

MODIFIER_NAME = "EnvFX Wind"
HEIGHT_ATTR = "EnvFX_Height"
WIND_ATTR = "EnvFX_Wind"
EXPORT_ATTR = "EnvFX_Wind_Export"
HEIGHT_UV = "EnvFX_Height_UV"  # UV map: U the height gradient, V 0 (what FBX and glTF carry to a game)
MAX_UV_MAPS = 8  # Blender's limit per mesh
# on a baked mesh: the asset height per unit of world Z scale. Each object showing the mesh (linked duplicates of
# a plant at random scales) gets it times its own world Z scale as its Asset Height (``assign_heights``)
UNIT_HEIGHT_KEY = "envfx_wind_unit_height"
# this many separate objects in one scene's wind: Add Wind says what they cost a frame. Each object pays the wind
# group's per-object part at every frame whatever its size (docs/wind.md, "Cost per plant object": 5,000 small
# props measured 0.5-0.8 ms each on Blender 5.0, 2 cores)
MANY_OBJECTS = 1000

# material-slot overrides: a material whose name contains one of these words marks its faces
MATERIAL_WORDS = (
    (core_wind.LABEL_TRUNK, ("trunk", "bark")),
    (core_wind.LABEL_BRANCH, ("branch",)),
    (core_wind.LABEL_LEAF, ("leaf", "leaves", "needle", "frond")),
)


class WindInputError(ValueError):
    """Nothing could be done; the scene is unchanged."""


@dataclass
class WindResult(ObjectsResult):
    stats: dict[str, Any] = field(default_factory=dict)


# the job generator of a bake: yields progress fractions, returns the WindResult
WindJob = Generator[float, None, WindResult]


def _not_mesh_reason(obj) -> str | None:
    """Why ``obj`` can neither be baked nor move in the wind (the wind moves vertices by their baked wind data,
    which only a mesh holds), or None."""
    if obj.type != "MESH":
        return (f"{obj.type.lower()} object, not a mesh: wind data is baked on meshes only; convert it first "
                f"(Object > Convert > Mesh)")
    return None


def _is_mesh(obj) -> bool:
    return obj.type == "MESH"


def _skip_reason(obj) -> str | None:
    reason = _not_mesh_reason(obj)
    if reason is not None:
        return reason
    reason = linked_reason(obj, mesh_too=True)
    if reason is not None:
        return reason
    mesh = obj.data
    if len(mesh.vertices) == 0:
        return "has no vertices"
    if len(mesh.polygons) == 0:
        what = "loose edges" if len(mesh.edges) else "points"
        return f"has no faces ({what} only); wind data needs a mesh with faces"
    return None


def material_labels(obj: bpy.types.Object) -> npt.NDArray[np.int8]:
    """Per-vertex override labels from the object's material slots (0 where no slot marks it; its own materials
    while it shows the wind data view)."""
    mesh = mesh_of(obj)
    nv = len(mesh.vertices)
    materials = view_nodes.own_materials(obj)
    slot_label = np.zeros(max(len(materials), 1), np.int8)
    for i, material in enumerate(materials):
        name = material.name.lower() if material is not None else ""
        for label, words in MATERIAL_WORDS:
            if any(w in name for w in words):
                slot_label[i] = label
                break
    labels = np.zeros(nv, np.int8)
    if not slot_label.any():
        return labels
    mat, totals = bridge.face_materials(mesh)
    loop_verts = bridge.corner_vertices(mesh)
    face_label = slot_label[np.clip(mat, 0, len(slot_label) - 1)]
    np.maximum.at(labels, loop_verts, np.repeat(face_label, totals))
    return labels


VERTEX_GROUPS = (
    (core_wind.LABEL_TRUNK, "EnvFX_Trunk"),
    (core_wind.LABEL_BRANCH, "EnvFX_Branch"),
    (core_wind.LABEL_LEAF, "EnvFX_Leaf"),
)


def vertex_group_labels(obj: bpy.types.Object, scene: bpy.types.Scene) -> npt.NDArray[np.int8]:
    """Per-vertex override labels from vertex groups ``EnvFX_Trunk`` / ``EnvFX_Branch`` / ``EnvFX_Leaf`` (weight
    above 0.5), read in bulk (``bridge.vertex_group_weights``)."""
    labels = np.zeros(len(mesh_of(obj).vertices), np.int8)
    present = [(label, name) for label, name in VERTEX_GROUPS if obj.vertex_groups.get(name) is not None]
    weights = bridge.vertex_group_weights(obj, [name for _label, name in present], scene)
    for column, (label, _name) in enumerate(present):
        chosen = weights[:, column] > 0.5
        labels[chosen] = np.maximum(labels[chosen], label)
    return labels


def _mesh_triangles(mesh) -> np.ndarray:
    return bridge.loop_triangle_vertices(mesh).astype(np.int64)


def _faced_vertices(mesh) -> np.ndarray:
    """Per vertex: whether it belongs to a face (loose points and the vertices of loose edges do not)."""
    loops = bridge.corner_vertices(mesh)
    faced = np.zeros(len(mesh.vertices), bool)
    faced[loops] = True
    return faced


def _faceless_warnings(meshes, counts, faceless) -> list:
    """Name the objects whose vertices without faces were left out of the structure (the artist can clean them)."""
    out, start = [], 0
    for obj, count in zip(meshes, counts):
        k = int(faceless[start:start + count].sum())
        start += count
        if k:
            one = k == 1
            out.append(f"{obj.name}: {k} {'vertex' if one else 'vertices'} without faces (loose points or edges) "
                       f"{'was' if one else 'were'} left out of the trunk and branch detection and "
                       f"{'takes' if one else 'take'} the wind data of the nearest vertex with faces; if stray, "
                       f"delete {'it' if one else 'them'} (Edit Mode: Mesh > Clean Up > Delete Loose)")
    return out


def _modifier_warnings(objects, depsgraph) -> list:
    out = []
    for obj in objects:
        changing = [m.name for m in obj.modifiers if m.show_viewport and not (
            m.type == "NODES" and (wind_nodes.is_wind_group(m.node_group) or bend_nodes.is_bend_group(m.node_group)))]
        if not changing:
            continue
        ev = obj.evaluated_get(depsgraph)
        try:
            count = len(ev.data.vertices) if ev.data is not None else len(obj.data.vertices)
        except AttributeError:
            continue
        if count != len(obj.data.vertices):
            out.append(f"{obj.name}: modifiers {', '.join(changing)} change the vertex count "
                       f"({len(obj.data.vertices)} -> {count}); the base mesh was baked and the modifiers' output "
                       f"gets interpolated wind data")
    return out


def validate(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], layout: str = "HZD",
             custom: Sequence[str] | None = None) -> tuple[list[bpy.types.Object], dict[str, str], list[str]]:
    """Check everything before changing anything; returns (meshes, skipped, warnings)."""
    if not objects:
        raise WindInputError("Nothing selected: select the objects of one asset (trunk, branches, leaves)")
    meshes: list[bpy.types.Object] = []
    skipped: dict[str, str] = {}
    warnings: list[str] = []
    seen: dict[str, str] = {}
    stale = evaluated_check(scene)
    for obj in dict.fromkeys(objects):  # an object given twice is one object, not two sharing a mesh
        reason = _skip_reason(obj) or stale(obj)
        if reason is None and mesh_of(obj).name in seen:
            reason = f"shares its mesh with {seen[mesh_of(obj).name]}, which is baked (one bake per mesh)"
        if reason is not None:
            skipped[obj.name] = reason
        else:
            meshes.append(obj)
            seen[mesh_of(obj).name] = obj.name
    if not meshes:
        raise WindInputError("Nothing to bake: " + "; ".join(f"{n} ({w})" for n, w in skipped.items()))
    refuse_edit_mode(meshes, WindInputError)
    if layout not in core_wind.LAYOUTS:
        raise WindInputError(f"Unknown channel layout {layout!r}: use one of {', '.join(core_wind.LAYOUTS)}")
    if layout == "CUSTOM":
        names = tuple(custom or ())
        if len(names) != 4 or any(c not in core_wind.SOURCES for c in names):
            raise WindInputError(f"Custom channel mapping {names!r} needs four of {', '.join(core_wind.SOURCES)}")
    update_world_matrices(scene)  # (a script may have moved, turned or scaled the asset since the scene was evaluated)
    for obj in meshes:
        m = obj.matrix_world
        if not all(math.isfinite(v) for row in m for v in row):
            raise WindInputError(f"{obj.name}'s location, rotation or scale is not a number (NaN or infinite): "
                                 f"give it a finite transform and bake again")
        if m.determinant() < 0:
            warnings.append(f"{obj.name} has a negative scale (mirrored): baked as it stands in the scene")
    # a flat asset is refused here, naming it, not by the bake (after the other assets of a batch were baked)
    zs = [bridge.get_positions(mesh_of(o)).astype(np.float64)[_faced_vertices(mesh_of(o))]
          @ bridge.matrix_to_numpy(o.matrix_world)[2, :3] + o.matrix_world[2][3] for o in meshes]
    bad = [o.name for o, zo in zip(meshes, zs) if not np.isfinite(zo).all()]
    if bad:
        raise WindInputError(f"{', '.join(bad)} has vertices whose position is not a number (NaN or infinite): "
                             f"fix or delete them (Mesh > Clean Up) and bake again")
    z = np.concatenate(zs)
    if len(z) and z.max() - z.min() <= core_wind.FLAT_HEIGHT:
        if all(z_scale(o) == 0.0 for o in meshes):
            raise WindInputError(f"The asset {', '.join(o.name for o in meshes)} is scaled to nothing at this frame "
                                 f"(a keyed grow-in?): bake it at a frame where it has its size")
        raise WindInputError(str(core_wind.flat_error([o.name for o in meshes])))
    if len(z) and z.max() - z.min() > NUMBER_LIMIT:
        raise WindInputError(f"The asset {', '.join(o.name for o in meshes)} is {z.max() - z.min():.3g} units tall: "
                             f"the wind takes assets up to {NUMBER_LIMIT:g} units; scale it down and bake again")
    return meshes, skipped, warnings


def bake_job(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], depsgraph: bpy.types.Depsgraph | None = None,
             ao_samples: int | None = None, leaf_size: float | None = None, layout: str | None = None,
             custom: Sequence[str] | None = None, height_uv: bool | None = None) -> WindJob:
    """Job generator: bake the wind data of ``objects`` (one asset) and write the attributes at the very end.
    Returns a ``WindResult``. Closing it early (cancel) leaves every mesh as it was."""
    s = bridge.envfx_settings(scene).wind
    height_uv = bool(s.height_uv) if height_uv is None else height_uv
    ao_samples = int(s.ao_samples) if ao_samples is None else ao_samples
    leaf_size = float(s.leaf_size) if leaf_size is None else leaf_size
    layout = str(s.channel_layout) if layout is None else layout
    if custom is None:
        custom = (s.custom_r, s.custom_g, s.custom_b, s.custom_a)
    meshes, skipped, warnings = validate(scene, objects, layout, custom)
    if not 0 <= ao_samples <= core_wind.MAX_AO_SAMPLES:  # before any work
        raise WindInputError(f"AO samples {ao_samples} must be 0 (no AO) to {core_wind.MAX_AO_SAMPLES}")
    result = WindResult(skipped=skipped, warnings=warnings)
    no_room = [obj.name for obj in meshes if height_uv and mesh_of(obj).uv_layers.get(HEIGHT_UV) is None
               and len(mesh_of(obj).uv_layers) >= MAX_UV_MAPS]
    if no_room:
        result.warnings.append(f"{', '.join(no_room)} already has {MAX_UV_MAPS} UV maps (Blender's limit): no height "
                               f"UV map {HEIGHT_UV} written; remove a UV map, or switch Height UV Map off")
    if depsgraph is not None:
        result.warnings += _modifier_warnings(meshes, depsgraph)

    positions, edges, labels, faced, counts, triangles = [], [], [], [], [], []
    offset = 0
    for obj in meshes:
        mesh = mesh_of(obj)
        co = bridge.get_positions(mesh).astype(np.float64)
        m = bridge.matrix_to_numpy(obj.matrix_world)
        positions.append(co @ m[:3, :3].T + m[:3, 3])
        edges.append(bridge.get_edges(mesh).astype(np.int64) + offset)
        if ao_samples > 0:  # (the AO's alone)
            triangles.append(_mesh_triangles(mesh) + offset)
        labels.append(np.maximum(material_labels(obj), vertex_group_labels(obj, scene)))
        faced.append(_faced_vertices(mesh))
        counts.append(len(co))
        offset += len(co)
    yield 0.05
    core_job = core_wind.bake_steps(np.concatenate(positions), np.concatenate(edges), np.concatenate(labels),
                                    leaf_fraction=leaf_size, faced=np.concatenate(faced))
    try:
        while True:
            yield 0.05 + 0.6 * next(core_job)
    except StopIteration as stop:
        res = stop.value
    except core_wind.WindError as exc:
        raise WindInputError(str(exc)) from None
    # a skinned asset: B and G from its bones (operators/wind_armature.py; sets result.stats["from"])
    try:
        res = wind_armature.from_armature(scene, meshes, objects, np.concatenate(positions), counts, res, result)
    except core_wind.WindError as exc:
        raise WindInputError(str(exc)) from None
    result.warnings += res.warnings + _faceless_warnings(meshes, counts, res.faceless)
    n = len(res.height)
    ao = np.ones(n, np.float32)
    if ao_samples > 0:
        yield 0.7
        # occlusion by the asset itself (its other objects too), in world space; a vertex without faces takes
        # its nearest faced vertex's
        ao = wind_hierarchy.ambient_occlusion(np.concatenate(positions), np.concatenate(triangles),
                                              directions=ao_directions(ao_samples))[res.source]
        leafy = res.kind == core_wind.LABEL_LEAF
        if leafy.any() and float(ao[leafy].max()) <= 1e-3:
            result.warnings.append(f"AO (A) is 0 on all {res.n_leaves} leaves: they are enclosed by the asset; "
                                   f"check for a closed hull around the foliage, or mark its material as a leaf")
        yield 0.95
    hzd = core_wind.pack_channels(res, ao, "HZD")
    export = core_wind.pack_channels(res, ao, layout, custom) if layout != "HZD" else None
    # all computed: write
    start = 0
    for obj, count in zip(meshes, counts):
        sl = slice(start, start + count)
        start += count
        _write(mesh_of(obj), res.height[sl], hzd[sl], None if export is None else export[sl], height_uv)
        result.changed.append(obj.name)
    for obj in meshes:
        bridge.envfx_settings(obj).wind.asset_height = res.asset_height
        scale = z_scale(obj)
        if scale > 0.0:
            mesh_of(obj)[UNIT_HEIGHT_KEY] = res.asset_height / scale
        elif UNIT_HEIGHT_KEY in mesh_of(obj):
            del mesh_of(obj)[UNIT_HEIGHT_KEY]
    baked = {mesh_of(obj).name for obj in meshes}
    done = set(meshes)
    sharers = [obj for obj in bpy.data.objects if obj.type == "MESH" and obj.data is not None
               and obj.data.name in baked and obj.library is None and obj not in done]
    assign_heights(sharers, result)  # instances sharing a baked mesh (grass clumps) get its height at their scale
    result.stats.update(vertices=n, islands=res.n_islands, leaves=res.n_leaves, branches=res.n_branches,
                        height=res.asset_height, structure=core_wind.levels_text(res), levels=list(res.levels))
    not_grass = [o.name for o in meshes if bridge.envfx_settings(o).wind.category != "GRASS"]
    if res.multi_stem and res.n_stems >= GRASS_FIELD_STEMS and not_grass:
        result.warnings.append(f"{', '.join(not_grass)}: {res.n_stems} blades stand on the ground side by side with "
                               f"no trunk, like grass: set the wind Category to Grass (Preset > Grass), or the blades "
                               f"barely move (the Tree category bends the whole asset, and blades are short)")
    yield 1.0
    return result


# this many stems side by side with no trunk read as grass (a bush or a flower patch has fewer)
GRASS_FIELD_STEMS = 12


def z_scale(obj: bpy.types.Object) -> float:
    """How much ``obj``'s world matrix stretches heights: the length of the Z row of its 3x3 part (its scale for an
    upright asset, its Y scale for a Y-up asset stood up by a 90 degree X rotation; 1 for any rotation)."""
    return obj.matrix_world.row[2].xyz.length


def assign_heights(objects: Iterable[bpy.types.Object], result: ObjectsResult) -> list[bpy.types.Object]:
    """Give each of ``objects`` whose mesh was baked (it carries ``UNIT_HEIGHT_KEY``) the Asset Height of the
    baked asset at its own size: the baked height times its world Z scale over the baked object's, so a linked
    duplicate scaled 2x sways twice as far, like a scaled copy. Each object is judged in its own scene (a duplicate
    in another level of the file is evaluated there), brought up to date first (``update_world_matrices``).
    Objects Blender does not evaluate (their world matrix is stale), and objects scaled to nothing now (a keyed
    grow-in at its first frame), keep theirs, named in one warning each. Returns the objects whose height
    changed."""
    checks: dict[bpy.types.Scene, Any] = {}
    changed: list[bpy.types.Object] = []
    kept: list[str] = []
    flat: list[str] = []
    for obj in objects:
        mesh = obj.data
        unit = mesh.get(UNIT_HEIGHT_KEY) if isinstance(mesh, bpy.types.Mesh) else None
        if unit is None or obj.library is not None:
            continue
        scene = obj.users_scene[0] if obj.users_scene else None
        if scene is None:
            kept.append(obj.name)
            continue
        if scene not in checks:
            update_world_matrices(scene)  # (its size now, were it scaled by a script since the last evaluation)
            checks[scene] = evaluated_check(scene)
        if checks[scene](obj) is not None:
            kept.append(obj.name)
            continue
        scale = z_scale(obj)
        if scale <= 1e-6:
            flat.append(obj.name)
            continue
        height = float(unit) * scale
        wind = bridge.envfx_settings(obj).wind
        if not math.isclose(wind.asset_height, height, rel_tol=1e-6):
            wind.asset_height = height
            changed.append(obj)

    def listed(names):
        return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    one = len(kept) == 1
    if kept:
        result.warnings.append(f"{listed(kept)} {'shares' if one else 'share'} a baked mesh but Blender does not "
                               f"evaluate {'it' if one else 'them'} (disabled in viewports or not in "
                               f"the view layer), so {'its' if one else 'their'} size cannot be read: "
                               f"Asset Height left as it was; enable {'it' if one else 'them'} in the "
                               f"viewport and Add Wind again")
    if flat:
        result.warnings.append(f"{listed(flat)} {'is' if len(flat) == 1 else 'are'} scaled to nothing at this frame "
                               f"(a keyed grow-in?), so the Asset Height, which follows the size, was left as it "
                               f"was: run Add Wind again at a frame where they have their full size")
    return changed


def _write(mesh, height, rgba, export, height_uv):
    for name, kind, data in ((HEIGHT_ATTR, "FLOAT", height), (WIND_ATTR, "FLOAT_COLOR", rgba),
                             (EXPORT_ATTR, "FLOAT_COLOR", export)):
        bridge.write_point_attribute(mesh, name, kind, data)
    if any(mesh.attributes.get(name) is not None for name in core_wind.LIVE_ATTRS):
        wind_nodes.write_live_attributes(mesh)  # in wind already: the live wind follows the new bake
    _write_height_uv(mesh, height if height_uv else None)
    colors = mesh.color_attributes
    default = EXPORT_ATTR if export is not None else WIND_ATTR
    colors.active_color_name = default
    colors.default_color_name = default
    mesh.update()


def _write_height_uv(mesh, height):
    """The height gradient in the U of the UV map ``HEIGHT_UV`` (V 0), or no such map when ``height`` is None.
    The mesh's active and render UV maps stay what they were; a mesh at Blender's UV map limit gets none (the
    bake warned)."""
    uv = mesh.uv_layers.get(HEIGHT_UV)
    if height is None:
        if uv is not None:
            mesh.uv_layers.remove(uv)
        return
    if uv is None:
        if len(mesh.uv_layers) >= MAX_UV_MAPS:
            return
        uv = mesh.uv_layers.new(name=HEIGHT_UV, do_init=False)
    loops = bridge.corner_vertices(mesh)
    coords = np.zeros((len(loops), 2), np.float32)
    coords[:, 0] = np.asarray(height, np.float32)[loops]
    bridge.set_corner_uvs(uv, coords)


def ao_directions(samples: int) -> int:
    """Ray directions of the AO for the AO Samples setting: the setting, at least 16 and at most 256."""
    return int(min(max(samples, 16), 256))


def bake(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], depsgraph: bpy.types.Depsgraph | None = None,
         **kw: Any) -> WindResult:
    """Bake wind data now (scripts); progress lines in background mode."""
    return progress.run(bake_job(scene, objects, depsgraph, **kw), "Wind bake")


# --- live wind --------------------------------------------------------------------------------------------

def wind_modifiers(obj: bpy.types.Object) -> list[bpy.types.NodesModifier]:
    """The object's live-wind modifiers (of any scene's wind group)."""
    return [m for m in nodes_modifiers(obj) if wind_nodes.is_wind_group(m.node_group)]


def check_source(scene: bpy.types.Scene) -> None:
    """Refuse a wind object that is no longer in ``scene`` or is not a Wind force field."""
    obj = bridge.envfx_settings(scene).wind.source_object
    if obj is None:
        return
    if scene.objects.get(obj.name) is not obj:
        raise WindInputError(f"Wind object {obj.name!r} was deleted or is not in this scene: choose another wind "
                             f"object or clear it to use the scene's direction and strength")
    if obj.field is None or obj.field.type != "WIND":
        raise WindInputError(f"Wind object {obj.name!r} is not a Wind force field: choose a Wind field or clear it")


def _linked_mesh_reason(obj) -> str | None:
    """The live wind reads per-vertex data that it writes onto the mesh; a mesh linked from a library (as a
    library override's is) cannot take it, so it must bring it along."""
    mesh = obj.data
    if not isinstance(mesh, bpy.types.Mesh) or mesh.library is None:
        return None
    if all(mesh.attributes.get(name) is not None for name in core_wind.LIVE_ATTRS):
        return None
    return (f"its mesh is linked from library {mesh.library.filepath!r} without live wind data: put it in the "
            f"wind in that file, or make its mesh local (Object > Relations > Make Local > Selected Objects and "
            f"Data)")


def _rigid_reason(obj) -> str | None:
    return linked_reason(obj) or wind_rigid.foreign_rotation_reason(obj)


def add_wind(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object]) -> WindResult:
    """Put the live wind on ``objects`` (objects already in this scene's wind are left alone; an object in the
    wind of another scene of the file, linked into both, follows this scene's wind from now on). Objects with
    Rigid Sway on (``object.envfx.wind.rigid``) sway whole, by drivers (``shader_nodes.wind_rigid``); the others
    get the wind's modifier, and those that are not meshes are skipped, with why: they cannot hold wind data, so
    they would never move. An object in the wind the other way switches. Nothing is changed when one of the
    meshes it would change is in Edit Mode (``WindInputError``)."""
    check_source(scene)
    result = WindResult()
    objects = list(dict.fromkeys(objects))
    rigid_ones = [o for o in objects if bridge.envfx_settings(o).wind.rigid]
    rigid = changeable(rigid_ones, result, _rigid_reason)
    gpu_ones = [o for o in objects if _mode(o) == "GPU"]
    on_gpu = changeable(gpu_ones, result, lambda o: linked_reason(o) or _not_mesh_reason(o)
                        or _linked_mesh_reason(o) or wind_gpu.reason(o, scene))
    candidates = changeable([o for o in objects if _mode(o) == "MODIFIER"], result,
                            lambda o: no_modifier_reason(o) or _not_mesh_reason(o) or _linked_mesh_reason(o))
    refuse_edit_mode(candidates + on_gpu + [o for o in rigid if wind_modifiers(o)], WindInputError)
    if not candidates and not rigid and not on_gpu:
        raise WindInputError(f"Nothing to put in wind: {result.skipped_text() or 'select objects'}")
    if rigid:
        _add_rigid(scene, rigid, result)
    if on_gpu:
        _add_gpu(scene, on_gpu, result)
    if not candidates:
        return result
    for obj in candidates:  # (switching from rigid sway or the GPU: its drivers or properties go first)
        if wind_rigid.is_rigid(obj):
            wind_rigid.remove_prop(obj)
    switched = [o for o in candidates if wind_gpu.is_gpu_wind(o)]
    for obj in switched:
        wind_gpu.remove(obj)
    if switched:
        wind_gpu.release()
    wind_rigid.release_unused_clocks(wind_gpu.is_gpu_wind)
    tree = wind_nodes.ensure_wind(scene)
    for obj in candidates:
        joined = join_scene_group(result, obj, wind_modifiers(obj), tree,
                                  lambda o=obj: bend_nodes.add_modifier_before_bend(o, MODIFIER_NAME, tree),
                                  "was in the wind of", "wind")
        mesh = mesh_of(obj)  # (changeable kept meshes only)
        wind_nodes.write_live_attributes(mesh)  # adding again refreshes the live data
        if not joined:
            continue
        wind_nodes.sync_object(obj)
        if mesh.attributes.get(HEIGHT_ATTR) is None:
            result.warnings.append(f"{obj.name}: no baked wind data, so it will not move until you bake it "
                                   f"(Bake Wind Data)")
    # each at its own size (adding again refreshes it too; the property's update reaches the modifier). After the
    # joins: bringing the scene up to date to read the world matrices runs the depsgraph handlers
    for obj in assign_heights(candidates, result):
        if obj.name in result.unchanged:
            result.unchanged.remove(obj.name)
            result.changed.append(obj.name)
    in_wind = sum(1 for o in scene.objects if any(m.node_group is tree for m in wind_modifiers(o)))
    if in_wind >= MANY_OBJECTS:
        result.warnings.append(
            f"{in_wind} separate objects are in this scene's wind: each pays the wind's work per object at every "
            f"frame, whatever its size (about half a millisecond or more each: playback may be slow). Grass sways "
            f"blade by blade in one object: join grass clumps into a few fields and bake them again to play faster; "
            f"small props can sway whole for far less (Rigid Sway in the object's wind settings)")
    return result


def _mode(obj: bpy.types.Object) -> str:
    """How Add Wind puts ``obj`` in the wind: ``RIGID`` (Rigid Sway on), ``GPU`` (Wind on GPU on) or
    ``MODIFIER``."""
    w = bridge.envfx_settings(obj).wind
    return "RIGID" if w.rigid else ("GPU" if w.gpu else "MODIFIER")


def _add_gpu(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], result: WindResult) -> None:
    """The wind on the GPU for ``objects`` (checked by ``wind_gpu.reason``): a modifier of the wind or a rigid sway
    they had goes; their meshes get the live data, their materials the file's group (``shader_nodes.wind_gpu``),
    which reads the scene's clock; each takes its own size, as with the modifier."""
    switching = [o for o in objects if wind_modifiers(o) or wind_rigid.is_rigid(o)]
    if switching:
        remove_wind(switching)
    wind_rigid.ensure_clock(scene)
    tree = wind_gpu.ensure_group()
    wind_gpu.sync_scene(scene)
    wind_gpu.revive()
    for obj in objects:
        mesh = mesh_of(obj)
        wind_nodes.write_live_attributes(mesh)
        if mesh.attributes.get(HEIGHT_ATTR) is None:
            result.warnings.append(f"{obj.name}: no baked wind data, so it will not move until you bake it "
                                   f"(Bake Wind Data)")
    assign_heights(objects, result)
    for obj in objects:
        was = wind_gpu.is_gpu_wind(obj)
        wind_gpu.add(obj, tree)
        (result.unchanged if was and obj not in switching else result.changed).append(obj.name)
    wind_rigid.release_unused_clocks(wind_gpu.is_gpu_wind)


def _add_rigid(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], result: WindResult) -> None:
    """Rigid sway on ``objects`` (checked by ``_rigid_reason``): a modifier of the wind they had goes (and their
    meshes' live data, unless another object in the wind shares it); a prop already swaying is refreshed (where
    it stands, its settings) and follows ``scene``'s wind."""
    switching = [o for o in objects if wind_modifiers(o) or wind_gpu.is_gpu_wind(o)]
    if switching:
        remove_wind(switching)
    clock = wind_rigid.ensure_clock(scene)
    for obj in objects:
        was = wind_rigid.prop_clock(obj)
        wind_rigid.add_prop(clock, obj)
        if was != clock or obj in switching:
            result.changed.append(obj.name)
        else:
            result.unchanged.append(obj.name)
    wind_rigid.release_unused_clocks(wind_gpu.is_gpu_wind)


def remove_wind(objects: Sequence[bpy.types.Object]) -> WindResult:
    """Take ``objects`` out of the live wind (and their meshes' live-wind data, unless another object in the wind
    shares the mesh). When the last object leaves a scene's wind, its group goes too (the scene's settings stay;
    Add Wind builds it again)."""
    refuse_edit_mode([obj for obj in objects if wind_modifiers(obj) or wind_gpu.is_gpu_wind(obj)], WindInputError)
    result = WindResult()
    groups: set[bpy.types.NodeTree | None] = set()
    # the meshes of the objects taken out, by pointer: their live data goes unless still in the wind
    left: dict[int, bpy.types.Mesh] = {}
    rigid = on_gpu = False
    for obj in changeable(objects, result):
        mods = wind_modifiers(obj)
        if wind_rigid.is_rigid(obj) or wind_gpu.is_gpu_wind(obj):
            if wind_rigid.is_rigid(obj):
                wind_rigid.remove_prop(obj)
                rigid = True
            else:
                wind_gpu.remove(obj)
                on_gpu = True
                if obj.type == "MESH":
                    left[mesh_of(obj).as_pointer()] = mesh_of(obj)
            if not mods:
                result.changed.append(obj.name)
                continue
        if not mods:
            result.unchanged.append(obj.name)
            continue
        reason = kept_by_override_reason(obj, mods, "wind", "make it local (Object > Relations > Make Local)")
        if reason is not None:
            result.skipped[obj.name] = reason
            continue
        groups.update(m.node_group for m in mods)
        for mod in mods:
            obj.modifiers.remove(mod)
        if obj.type == "MESH":
            left[mesh_of(obj).as_pointer()] = mesh_of(obj)
        result.changed.append(obj.name)
    if left:  # one pass over the file's objects, after the loop: linear in the number of objects, not quadratic
        for o in bpy.data.objects:
            key = o.data.as_pointer() if o.type == "MESH" and o.data is not None else None
            if key in left and (wind_modifiers(o) or wind_gpu.is_gpu_wind(o)):
                del left[key]
        for mesh in left.values():
            wind_nodes.remove_live_attributes(mesh)
    for tree in groups:
        nodes_common.release_if_unused(tree, wind_nodes.KIND)
    if on_gpu:
        wind_gpu.release()
    if rigid or on_gpu:
        wind_rigid.release_unused_clocks(wind_gpu.is_gpu_wind)
    return result


def apply_preset(objects: Iterable[bpy.types.Object], preset: str) -> WindResult:
    """Set the wind response of ``objects`` to the preset ``preset`` (a key of ``core.wind.PRESETS``)."""
    if preset not in core_wind.PRESETS:
        raise WindInputError(f"Unknown wind preset {preset!r}: use one of {', '.join(core_wind.PRESETS)}")
    result = WindResult()
    for obj in changeable(objects, result):
        for key, value in core_wind.PRESETS[preset].items():
            setattr(bridge.envfx_settings(obj).wind, key, value)
        result.changed.append(obj.name)
    return result


def _image_of(tree):
    """The image a bake's group reads (Snow from Bake, Water Ripples from Bake), else None; a live buffer's group
    (``live_push``) reads no bake: None."""
    node = tree.nodes.get("Buffer") if tree.bl_idname == "GeometryNodeTree" else None
    image = node.inputs["Image"].default_value if node is not None and node.bl_idname == "GeometryNodeImageTexture" \
        else None
    return None if live_push.is_live_image(image) else image


def _scene_buffers(scene) -> list:
    """The baked-buffer images that objects of ``scene`` show (Snow from Bake, Water Ripples from Bake), in object
    order, no repeats."""
    images = []
    for obj in scene.objects:
        for mod in obj.modifiers:
            tree = mod.node_group if mod.type == "NODES" else None
            image = _image_of(tree) if tree is not None else None
            if image is not None and image not in images and wind_nodes.is_buffer_image(image):
                images.append(image)
    return images


def _baked_buffer(scene, image):
    """The baked buffer grass push reads (see ``grass_push``), or None when the scene and file have none."""
    s = bridge.envfx_settings(scene).wind
    if image is None and wind_nodes.is_buffer_image(s.push_buffer) and not live_push.is_live_image(s.push_buffer):
        image = s.push_buffer
    if image is None:
        shown = _scene_buffers(scene)
        in_file = []
        for tree in bpy.data.node_groups:
            found = _image_of(tree)
            if found is not None and found not in in_file and wind_nodes.is_buffer_image(found):
                in_file.append(found)
        image = shown[0] if shown else (in_file[0] if len(in_file) == 1 else None)
        if image is None and len(in_file) > 1:
            raise WindInputError(f"{len(in_file)} baked buffers in this file and none shown in this scene: pick "
                                 f"the Push Buffer, then Push Grass")
    if image is None:
        image = _load_output_folder_bake(scene)
    return image


def grass_push(scene: bpy.types.Scene, on: bool = True, image: bpy.types.Image | None = None) -> str:
    """Turn the scene's grass push on or off. On, it reads ``image``, else the scene's Push Buffer, else the baked
    buffer the scene shows (Snow from Bake, Water Ripples from Bake), else the file's only one, else the bake in the
    Snow bake's Output Folder (loaded as Snow from Bake loads it); with no bake at all, the live interaction buffer
    (``operators.snow.live_push``: the snow actors' paths over the Snow bake's frames, stepped as the bake steps them,
    while the timeline plays and in renders). Returns what it did. Off, the live buffer (its image and group) goes.
    Raises ``WindInputError`` and changes nothing when there is neither a bake nor usable snow actors, or a push
    setting is not a number."""
    s = bridge.envfx_settings(scene).wind
    if not on:
        was_live = live_push.is_live_image(s.push_buffer)
        s.grass_push = False
        if was_live:
            s.push_buffer = None
        live_push.stop(scene)
        return "Grass push off"
    for label, value in (("Push Strength", s.push_strength), ("Push Sway", s.push_sway)):
        if not math.isfinite(value):
            raise WindInputError(f"{label} is {value}: set it to a number of 0 or more, then Push Grass")
    if image is not None and (live_push.is_live_image(image) or not wind_nodes.is_buffer_image(image)):
        raise WindInputError(f"Image {image.name!r} is no baked interaction buffer: bake one (Snow > Bake "
                             f"Interaction Buffer), then Push Grass")
    image = _baked_buffer(scene, image)
    if image is not None:
        live_push.stop(scene)
        s.push_buffer = image
        s.grass_push = True
        return f"Grass pushed by the baked buffer {image.name}"
    try:
        image = live_push.start(scene)
    except snow_ops.SnowInputError as exc:
        raise WindInputError(f"No baked buffer in scene {scene.name!r} to push the grass, and it cannot be pushed "
                             f"live: {exc}. Live push reads the Snow panel's Actors as they move; or bake the "
                             f"interaction buffer (Snow > Bake Interaction Buffer), then Push Grass") from None
    s.push_buffer = image
    s.grass_push = True
    snow = bridge.envfx_settings(scene).snow
    return (f"Grass pushed live by the snow actors of {snow.actors.name!r} (no baked buffer: the live buffer "
            f"{image.name!r}, {image.size[0]} x {image.size[1]} texels, the Snow bake's frames {snow.frame_start}-"
            f"{snow.frame_end})")


def _load_output_folder_bake(scene):
    """The image of the bake in the Snow bake's Output Folder, loaded (with its group) as Snow from Bake loads it;
    None when the folder holds no bake (unset, or no snow_buffer.json). A damaged or incomplete bake there is
    refused (``WindInputError``) before anything is loaded."""
    folder = scene.envfx.snow.output_dir.strip()
    if not folder or (folder.startswith("//") and not bpy.data.filepath):
        return None
    if not os.path.isfile(os.path.join(bpy.path.abspath(folder), "snow_buffer.json")):
        return None
    try:
        image, meta = snow_ops.load_bake(scene, folder, ObjectsResult())
    except snow_ops.SnowInputError as exc:
        raise WindInputError(str(exc)) from None
    snow_buffer_nodes.ensure_buffer_group(image, meta)
    return image


def _selected(context):
    objects = list(getattr(context, "selected_objects", []) or [])
    if not objects:
        raise WindInputError("Nothing selected: select the objects of the asset first")
    return objects


def _report(op, result: WindResult, verb: str):
    details = ""
    if result.stats:
        st = result.stats
        details = (f" ({st['vertices']} vertices, {st['islands']} islands: {st['structure']}; "
                   f"height {st['height']:.3g} m; B and G from {st.get('from', 'the geometry')})")
    report_result(op, result, verb, details)


def _poll_selection(cls, context):
    if context.scene is None:
        cls.poll_message_set("Needs a scene")
        return False
    if not getattr(context, "selected_objects", None):
        cls.poll_message_set("Select the objects of an asset first")
        return False
    return True


class ENVFX_OT_wind_bake_data(progress.ModalJobOperator, bpy.types.Operator):
    """Bake wind data (height, branch and leaf distances, branch phase, AO) of the selected objects as one asset"""

    bl_idname = "envfx.wind_bake_data"
    bl_label = "Bake Wind Data"
    bl_options = {"REGISTER", "UNDO"}
    job_label = "Wind bake"

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _poll_selection(cls, context) and poll_not_in_edit_mode(cls, context, _is_mesh)

    def make_job(self, context: bpy.types.Context) -> WindJob | None:
        try:
            objects = _selected(context)
            scene = bridge.context_scene(context)
            s = bridge.envfx_settings(scene).wind
            validate(scene, objects, s.channel_layout, (s.custom_r, s.custom_g, s.custom_b, s.custom_a))
        except (WindInputError, core_wind.WindError) as exc:
            self.report({"ERROR"}, str(exc))
            return None
        return self._guard(bake_job(scene, objects, context.evaluated_depsgraph_get()))

    @staticmethod
    def _guard(job):
        try:
            result = yield from job
        except core_wind.WindError as exc:
            raise WindInputError(str(exc)) from None
        return result

    def finish(self, context: bpy.types.Context, result: WindResult) -> set[OperatorReturnItems]:
        _report(self, result, "Baked wind data of")
        return {"FINISHED"}


class ENVFX_OT_wind_add(bpy.types.Operator):
    """Put the selected objects in the scene's live wind (geometry nodes, animates on playback)"""

    bl_idname = "envfx.wind_add"
    bl_label = "Add Wind"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _poll_selection(cls, context) and poll_not_in_edit_mode(cls, context, _is_mesh)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            result = add_wind(bridge.context_scene(context), _selected(context))
        except WindInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        _report(self, result, "Put in wind")
        return {"FINISHED"}


class ENVFX_OT_wind_remove(bpy.types.Operator):
    """Take the selected objects out of the live wind"""

    bl_idname = "envfx.wind_remove"
    bl_label = "Remove Wind"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _poll_selection(cls, context) and poll_not_in_edit_mode(cls, context, wind_modifiers)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            result = remove_wind(_selected(context))
        except WindInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        _report(self, result, "Removed the wind from")
        return {"FINISHED"}


class ENVFX_OT_wind_preset(bpy.types.Operator):
    """Set the selected assets' wind response for a common asset type"""

    bl_idname = "envfx.wind_preset"
    bl_label = "Wind Preset"
    bl_options = {"REGISTER", "UNDO"}

    preset: EnumProperty(
        name="Preset",
        items=(("TREE", "Tree", "Whole-asset bend, slow tree spring"),
               ("BUSH", "Bush", "No whole-asset bend, quicker plant spring, responds early"),
               ("GRASS", "Grass", "Grass spring and ambient motion"),
               ("BANNER", "Hanging Banner", "Loose, cloth-like, large sway and lift")),
        default="TREE",
        description="Asset type",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _poll_selection(cls, context)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            result = apply_preset(_selected(context), self.preset)
        except WindInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        _report(self, result, f"Applied the {self.preset.lower()} preset to")
        return {"FINISHED"}


class ENVFX_OT_wind_grass_push(bpy.types.Operator):
    """Actors push the grass in wind down and away, and it wobbles back: the grass reads the baked interaction
    buffer's grass channels (G sway, A push-down)"""

    bl_idname = "envfx.wind_grass_push"
    bl_label = "Push Grass"
    bl_options = {"REGISTER", "UNDO"}

    on: BoolProperty(name="On", default=True, description="Turn grass push on (off: the grass ignores actors)")

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            text = grass_push(bridge.context_scene(context), self.on)
        except WindInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, text)
        return {"FINISHED"}


classes = (
    ENVFX_OT_wind_bake_data,
    ENVFX_OT_wind_add,
    ENVFX_OT_wind_remove,
    ENVFX_OT_wind_preset,
    ENVFX_OT_wind_grass_push,
)

