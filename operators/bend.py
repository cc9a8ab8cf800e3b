"""World bend operators: thin wrappers around plain functions that scripts can call too."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, cast

import bpy
import numpy as np
import numpy.typing as npt
from bpy.props import BoolProperty, StringProperty

from .. import bridge
from ..core import bend as core_bend
from ..core import bend_engines
from ..core import wind as core_wind
from ..shader_nodes import bend as bend_nodes
from ..shader_nodes import bend_gpu
from ..shader_nodes import common
from ..shader_nodes import snow as snow_nodes
from ..shader_nodes import wind as wind_nodes
from .common import (PATH_OPTIONS, NeedsScene, ObjectsResult, PicksFolder, changeable, evaluated_check, instancers_of,
                     join_scene_group, kept_by_override_reason, linked_reason, mesh_of, no_modifier_reason,
                     nodes_modifiers, output_folder, poll_not_in_edit_mode, refuse_edit_mode, report_result)

if TYPE_CHECKING:  # the stubs' names for an operator's result and report literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems, WmReportItems

MODIFIER_NAME = "EnvFX Bend"
SUBDIVISION_NAME = "EnvFX Bend Subdivision"  # the Simple subdivision Add Bend puts before the bend of a coarse mesh
APPLIED_MARK = "envfx_bend_applied"  # custom property apply_bend leaves on a mesh (value: the scene's name)


BendResult = ObjectsResult


class BendInputError(ValueError):
    """Nothing could be done; the scene is unchanged."""


class TargetsContext(Protocol):
    """What ``gather_targets`` reads of a context: ``bpy.context``, or the command line's ``batch.SceneContext``
    (a scene and the objects to act on, built without a UI)."""

    @property
    def scene(self) -> bpy.types.Scene | None: ...


def gather_targets(context: TargetsContext, collection_name: str = "") -> list[bpy.types.Object]:
    """The objects an operator acts on: the named collection's (recursively), else the selection. The collection
    must be in the context's scene: its objects take that scene's bend."""
    if collection_name:
        coll = bpy.data.collections.get(collection_name)
        scene = context.scene
        if scene is None:
            raise BendInputError(f"No scene to find collection {collection_name!r} in: run it in a window with a "
                                 f"scene")
        in_scene = scene.collection.children_recursive
        if coll is None or coll not in in_scene:
            names = ", ".join(sorted(c.name for c in in_scene)) or "none"
            where = "" if coll is None else f" in scene {scene.name!r} (it is in another scene, or in none)"
            raise BendInputError(f"No collection named {collection_name!r}{where}: pick one of the scene's "
                                 f"collections ({names}), or link it into the scene first")
        objects = list(coll.all_objects)
        if not objects:
            raise BendInputError(f"Collection {collection_name!r} has no objects: add objects to it first")
        return objects
    objects = list(getattr(context, "selected_objects", None) or [])
    if not objects:
        raise BendInputError("Nothing selected: select the objects to bend, or pass collection=\"Name\"")
    return objects


def bend_applied(obj: bpy.types.Object) -> bool:
    """Whether a bend was baked into ``obj``'s mesh by apply_bend (the mesh carries APPLIED_MARK)."""
    return obj.type == "MESH" and obj.data is not None and mesh_of(obj).get(APPLIED_MARK) is not None


def bend_modifiers(obj: bpy.types.Object) -> list[bpy.types.NodesModifier]:
    """The object's bend modifiers (of any scene's bend group)."""
    return [m for m in nodes_modifiers(obj) if bend_nodes.is_bend_group(m.node_group)]


def _bent_mesh(obj) -> bool:
    """Whether Apply Bend would bake into ``obj``'s mesh (to grey it out when that mesh is in Edit Mode)."""
    return obj.type == "MESH" and bool(bend_modifiers(obj))


def _cannot_bend_reason(obj) -> str | None:
    reason = no_modifier_reason(obj)
    if reason is None and obj.envfx.bend_exclude:
        return "excluded from the bend (object.envfx.bend_exclude)"
    return reason


def _cannot_bend_gpu_reason(obj) -> str | None:
    """Why ``obj`` cannot be bent on the GPU (in its materials), with what to do; None when it can."""
    reason = linked_reason(obj)
    if reason is None and bridge.envfx_settings(obj).bend_exclude:
        return "excluded from the bend (object.envfx.bend_exclude)"
    if reason is None and not bend_gpu.materials_of(obj):
        return ("it has no material: Bend on GPU bends an object in its materials; give it one, or switch Bend on "
                "GPU off to bend it with the modifier")
    for mat in bend_gpu.materials_of(obj) if reason is None else ():
        reason = bend_gpu.material_reason(mat)
        if reason is not None:
            break
    return reason


def add_bend(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object]) -> BendResult:
    """Bend ``objects`` with the scene's shared bend. Objects already bent by this scene are left alone (never
    two bends); an object bent by another scene of the file (linked into both) follows this scene's bend from
    now on; excluded objects, non-geometry objects and linked objects are skipped and named. Objects with Bend on
    GPU (``object.envfx.bend_gpu``) are bent in their materials instead (``shader_nodes.bend_gpu``); an object bent
    the other way switches."""
    result = BendResult()
    objects = list(dict.fromkeys(objects))
    on_gpu = changeable([o for o in objects if bridge.envfx_settings(o).bend_gpu], result, _cannot_bend_gpu_reason)
    candidates = changeable([o for o in objects if not bridge.envfx_settings(o).bend_gpu], result,
                            _cannot_bend_reason)
    if not candidates and not on_gpu:
        raise BendInputError(f"Nothing to bend: {result.skipped_text()}")
    core_params = bend_nodes.params_from_scene(scene)
    core_params.validate()
    if on_gpu:
        _add_gpu(scene, on_gpu, core_params, result)
    switched = [o for o in candidates if bend_gpu.is_gpu_bent(o)]
    for obj in switched:  # (from the GPU: its materials let go once nothing else bends in them)
        del obj[bend_gpu.GATE]
    if switched:
        bend_gpu.release()
    if not candidates:
        return result

    tree = bend_nodes.ensure_bend(scene)
    for obj in candidates:
        join_scene_group(result, obj, bend_modifiers(obj), tree, lambda o=obj: _add_modifier(o, tree), "was bent by",
                         "bend")
        after, moved = _move_bend_last(obj)
        if after and moved:
            if obj.name in result.unchanged:
                result.unchanged.remove(obj.name)
                result.changed.append(obj.name)
            result.warnings.append(f"{obj.name}: moved the bend back to the last modifier, after {', '.join(after)}, "
                                   f"so it bends what the other modifiers make")
        elif after:
            result.warnings.append(f"{obj.name}: the bend stays before {', '.join(after)}: they came from its "
                                   f"library, and a library override cannot reorder them; reorder them in the "
                                   f"library file, or make it local (Object > Relations > Make Local)")

    for obj in candidates:
        systems = [ps.name for ps in getattr(obj, "particle_systems", ())]
        if systems:
            result.warnings.append(
                f"{obj.name}: its particle system(s) {', '.join(systems)} do not follow the bend: Blender draws hair "
                f"and particle instances from the particle data, which a geometry modifier does not move; convert "
                f"hair to a Curves object (Object > Convert > Curves) or scatter with geometry nodes (Instance on "
                f"Points, before the bend) to bend them")
    for name, instances in instancers_of(scene, result.changed).items():
        result.warnings.append(
            f"{name} is also shown by collection instance(s) {', '.join(instances)}: an instance shows the bend of "
            f"{name}'s own place, not its own; make them real (Object > Apply > Make Instances Real) to bend each "
            f"where it stands")
    settings = bridge.envfx_settings(scene).bend
    if settings.pivot is None:
        result.warnings.append("No pivot set: the bend is centred on the world origin; choose a pivot (the player "
                               "or camera): Pivot in the EnvFX panel, or --pivot on the command line")
    elif settings.pivot.name not in scene.objects:
        result.warnings.append(f"Pivot {settings.pivot.name!r} is not in this scene (deleted?): choose another pivot")
    _check_coarse(scene, candidates, core_params, result)
    extent, worst = _scene_extent_and_drop([bpy.data.objects[n] for n in result.changed + result.unchanged],
                                           core_params)
    if extent > 0 and worst > 10.0 * extent:
        result.warnings.append(
            f"Strength {settings.strength:g} drops these objects by up to {worst:.3g} m over {extent:.3g} m: "
            f"they fold out of sight; lower the strength"
        )
    sync_readers(scene)  # a terrain or snow bent now: what reads its geometry undoes its bend
    return result


def _add_gpu(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object], params: core_bend.BendParams,
             result: BendResult) -> None:
    """Bend ``objects`` (checked by ``_cannot_bend_gpu_reason``) in their materials: a bend modifier they had goes;
    their materials get the file's GPU bend group (``shader_nodes.bend_gpu.apply``) and they carry its gate."""
    groups = set()
    switched = set()  # (the objects that had the modifier's bend)
    for obj in objects:
        mods = bend_modifiers(obj)
        if mods:
            switched.add(obj.name)
        groups.update(m.node_group for m in mods)
        for mod in [*mods, *bend_subdivisions(obj)]:
            obj.modifiers.remove(mod)
    _release(groups)
    tree = bend_gpu.ensure_group()
    bend_gpu.sync_scene(scene)
    extent, _worst = _scene_extent_and_drop(list(scene.objects), params)
    # how far the bend may move a vertex anywhere in the scene, wherever the pivot goes in it (Blender 5.0 grows
    # each bent object's drawing bounds by it, so what the bend moves into view is drawn)
    reach = min(core_bend.MAX_DISTANCE, (abs(params.strength) + abs(params.side_strength)) * extent * extent + 1.0)
    for obj in objects:
        for mat in bend_gpu.materials_of(obj):
            bend_gpu.apply(mat, tree, reach)
        if obj.get(bend_gpu.GATE) == 1.0 and obj.name not in switched:
            result.unchanged.append(obj.name)
        else:
            obj[bend_gpu.GATE] = 1.0
            result.changed.append(obj.name)
        obj.update_tag()
    _check_coarse(scene, objects, params, result)  # (the GPU bend moves vertices only, as the modifier does)


def bend_subdivisions(obj: bpy.types.Object) -> list[bpy.types.SubsurfModifier]:
    """The Simple subdivisions Add Bend put before the object's bend (Subdivide Coarse Meshes)."""
    return [cast(bpy.types.SubsurfModifier, m) for m in obj.modifiers
            if m.type == "SUBSURF" and m.name.startswith(SUBDIVISION_NAME)]


def _levels_before_bend(obj, ours: bool = True) -> int:
    """Subdivision levels the viewport shows before the object's bend (any Subdivision Surface modifier; without
    ``ours``, not counting the EnvFX Bend Subdivision): each level halves the edges the bend sees."""
    mods = list(obj.modifiers)
    bends = bend_modifiers(obj)
    end = mods.index(bends[0]) if bends else len(mods)
    skip = () if ours else bend_subdivisions(obj)
    return sum(m.levels for m in mods[:end] if m.type == "SUBSURF" and m.show_viewport and m not in skip)


def coarse_meshes(objects: Iterable[bpy.types.Object], params: core_bend.BendParams,
                  tolerance: float) -> list[tuple[str, float, int]]:
    """(name, error, levels) of each mesh object whose straight edges, as the bend sees them (its mesh, halved by
    each Subdivision Surface level before the bend), are more than ``tolerance`` off the bent curve
    (``core.bend.edge_errors`` at the current pivot): ``error`` the worst, in Blender units; ``levels`` the Simple
    subdivision levels that bring it within the tolerance (not counting the EnvFX Bend Subdivision)."""
    rows = []
    for obj in objects:
        if obj.type != "MESH" or obj.data is None or bridge.envfx_settings(obj).bend_exclude \
                or not len(mesh_of(obj).edges):
            continue
        error = float(core_bend.edge_errors(bridge.world_positions(obj), bridge.get_edges(mesh_of(obj)), params).max())
        shown = error / 4.0 ** _levels_before_bend(obj)  # each level halves the edges: a quarter of the error
        if shown > tolerance:
            own = error / 4.0 ** _levels_before_bend(obj, ours=False)
            rows.append((obj.name, shown, core_bend.subdivision_levels(own, tolerance)))
    return rows


def _subdivide_before_bend(obj, levels: int):
    """Give ``obj`` the EnvFX Bend Subdivision (Simple, ``levels``) just before its bend; its mesh is untouched."""
    mods = bend_subdivisions(obj)
    mod = mods[0] if mods else obj.modifiers.new(SUBDIVISION_NAME, "SUBSURF")
    mod.subdivision_type = "SIMPLE"
    mod.uv_smooth = "NONE"  # straight in UV too: the subdivision only adds vertices for the bend to move
    mod.levels = mod.render_levels = levels
    mod.show_viewport = mod.show_render = True
    bends = bend_modifiers(obj)
    index = list(obj.modifiers).index(mod)
    if not bends:  # (bent on the GPU: the materials bend what the last modifier makes)
        if index != len(obj.modifiers) - 1:
            obj.modifiers.move(index, len(obj.modifiers) - 1)
        return
    first_bend = list(obj.modifiers).index(bends[0])
    if index != first_bend - 1:
        obj.modifiers.move(index, first_bend if index > first_bend else first_bend - 1)


def _check_coarse(scene, objects, params, result: BendResult):
    """Warn about the meshes too coarse for the bend, or (the scene's Subdivide Coarse Meshes) subdivide them."""
    settings = scene.envfx.bend
    tolerance = settings.tolerance
    coarse = coarse_meshes([o for o in objects if bend_modifiers(o) or bend_gpu.is_gpu_bent(o)], params, tolerance)
    if not coarse:
        return
    if not settings.subdivide:
        names = ", ".join(f"{name} ({error:.3g} m)" for name, error, _levels in coarse[:5])
        more = f" and {len(coarse) - 5} more" if len(coarse) > 5 else ""
        result.warnings.append(
            f"Too coarse for the bend: {names}{more}: a straight edge between two bent vertices is that far off the "
            f"curve (tolerance {tolerance:g} m), since a bend moves vertices only; add vertices along the bend, or "
            f"switch on Subdivide Coarse Meshes (scene.envfx.bend.subdivide) and Add Bend again: a Simple "
            f"subdivision before the bend, the mesh untouched")
        return
    capped = []
    for name, error, levels in coarse:
        obj = bpy.data.objects[name]
        override = obj.override_library is not None
        if override:
            result.warnings.append(f"{name}: too coarse for the bend ({error:.3g} m off), and a library override "
                                   f"cannot take the subdivision before its bend; subdivide it in its library")
            continue
        _subdivide_before_bend(obj, min(levels, core_bend.MAX_SUBDIVISION_LEVELS))
        if levels > core_bend.MAX_SUBDIVISION_LEVELS:
            capped.append(f"{name} (needs {levels})")
        if name in result.unchanged:
            result.unchanged.remove(name)
            result.changed.append(name)
    done = [name for name, _e, _l in coarse if bpy.data.objects[name].override_library is None]
    if done:
        result.warnings.append(f"Subdivided before the bend (Simple, the mesh untouched): {', '.join(done)}")
    if capped:
        result.warnings.append(
            f"Still coarse after {core_bend.MAX_SUBDIVISION_LEVELS} subdivision levels: {', '.join(capped)}: add "
            f"vertices along the bend to the mesh itself")


_coarse_cache = {"key": None, "rows": []}


def coarse_in_scene(scene: bpy.types.Scene) -> list[tuple[str, float, int]]:
    """``coarse_meshes`` of every mesh ``scene`` bends, for the Bend panel: computed again only when the bend, the
    tolerance, or an object's mesh, place or subdivision levels change (cheap to call on every redraw)."""
    tree = bend_nodes.group_for(scene)
    settings = bridge.envfx_settings(scene).bend
    objects = [o for o in scene.objects if o.type == "MESH" and o.data is not None
               and not bridge.envfx_settings(o).bend_exclude
               and (any(m.node_group == tree and m.show_viewport for m in bend_modifiers(o))
                    or bend_gpu.is_gpu_bent(o))]
    if not objects:
        return []
    params = bend_nodes.params_from_scene(scene)
    try:
        params.validate()
    except core_bend.BendError:
        return []
    key = (scene.name, params, settings.tolerance,
           [(o.name, mesh_of(o).name, len(mesh_of(o).vertices), len(mesh_of(o).edges),
             tuple(bridge.matrix_to_numpy(o.matrix_world).ravel().tolist()), _levels_before_bend(o)) for o in objects])
    if _coarse_cache["key"] != key:
        _coarse_cache["rows"] = coarse_meshes(objects, params, settings.tolerance)
        _coarse_cache["key"] = key
    return _coarse_cache["rows"]


def _add_modifier(obj, tree):
    obj.modifiers.new(MODIFIER_NAME, "NODES").node_group = tree


def _move_bend_last(obj) -> tuple[list, bool]:
    """Move the bend modifiers of ``obj`` after all its other modifiers (a modifier added by hand after the bend
    works on the bent mesh); returns (the names of the modifiers the bend came before, whether it now follows
    them). A library override keeps the order of modifiers from its library: Blender would not keep a new order
    when the file is opened again (it adds the library's modifiers back), so those are left as they are."""
    mods = bend_modifiers(obj)
    first = list(obj.modifiers).index(mods[0]) if mods else len(obj.modifiers)
    after = [m for m in list(obj.modifiers)[first:] if m not in mods]
    if obj.override_library is not None and any(m.is_override_data for m in after + mods):
        return [m.name for m in after], False
    for mod in mods if after else ():
        obj.modifiers.move(list(obj.modifiers).index(mod), len(obj.modifiers) - 1)
    return [m.name for m in after], True


def _scene_extent_and_drop(objects, params):
    corners = []
    for obj in objects:
        m = bridge.matrix_to_numpy(obj.matrix_world)
        box = np.array([list(c) for c in obj.bound_box], dtype=np.float64)
        corners.append(box @ m[:3, :3].T + m[:3, 3])
    if not corners:
        return 0.0, 0.0
    pts = np.concatenate(corners)
    bmin, bmax = pts.min(axis=0), pts.max(axis=0)
    extent = float(np.linalg.norm(bmax - bmin))
    return extent, core_bend.max_drop_over_box(bmin, bmax, params)


def remove_bend(objects: Iterable[bpy.types.Object]) -> BendResult:
    """Take ``objects`` out of the bend. When the last object leaves a scene's bend, its group goes too (the
    scene's settings stay; Add Bend builds it again)."""
    result = BendResult()
    groups: set[bpy.types.NodeTree | None] = set()
    on_gpu = False
    for obj in changeable(objects, result):
        mods = bend_modifiers(obj)
        if bend_gpu.is_gpu_bent(obj):
            del obj[bend_gpu.GATE]
            obj.update_tag()
            on_gpu = True
            if not mods:
                for mod in bend_subdivisions(obj):
                    obj.modifiers.remove(mod)
                result.changed.append(obj.name)
                continue
        if not mods:
            result.unchanged.append(obj.name)
            continue
        reason = kept_by_override_reason(obj, mods, "bend", "exclude it from the bend instead (Exclude from Bend), "
                                         "or make it local (Object > Relations > Make Local)")
        if reason is not None:
            result.skipped[obj.name] = reason
            continue
        groups.update(m.node_group for m in mods)
        for mod in [*mods, *bend_subdivisions(obj)]:
            obj.modifiers.remove(mod)
        result.changed.append(obj.name)
    _release(groups)
    if on_gpu:
        bend_gpu.release()
    sync_readers()  # what read these objects' bent geometry (terrain follow, snow coverage) lets go
    return result


def _cannot_apply_reason(obj, mods) -> str | None:
    """Why the bend of ``obj`` (its bend modifiers ``mods``) cannot be baked as it is shown, with what to do."""
    if obj.type != "MESH":
        return f"{obj.type.lower()} objects cannot be baked; convert to a mesh first"
    reason = linked_reason(obj, mesh_too=True)
    if reason is not None:
        return reason
    if not any(m.show_viewport for m in mods):
        if obj.envfx.bend_exclude:
            return ("excluded from the bend, so it shows unbent and there is nothing to bake; its bend stays "
                    "switched off: include it again to bake its bend, or Remove Bend to drop it")
        return ("its bend modifier is switched off in the viewport, so it shows unbent and there is nothing to "
                "bake; switch the modifier on to bake its bend")
    reason = kept_by_override_reason(obj, mods, "bend", "apply the bend in the library file, or make it local "
                                     "(Object > Relations > Make Local) and apply it then")
    if reason is not None:  # its library would bring the modifier back onto the baked mesh: bent twice
        return reason
    if core_bend.is_flattened(bridge.matrix_to_numpy(obj.matrix_world)):
        return ("its scale or a parent's is zero on an axis, so its bend cannot be baked: give it, or that parent, a "
                "non-zero scale, or apply the scale with Object > Apply > Scale, then apply the bend")
    return None


def _release(groups):
    """The scenes let go of the bend groups (left by removed modifiers) that no object uses any more."""
    for tree in groups:
        common.release_if_unused(tree, bend_nodes.KIND)


def apply_bend(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object]) -> BendResult:
    """Bake the bend into the mesh data of bent mesh objects and remove their bend modifier.

    The bend of the base mesh (and of every shape key) is written with ``core.bend``, using the object's
    current world matrix and the pivot's current position, as ``scene`` shows it: the structure (mode, axis,
    pivot) of the scene whose bend it has (``scene`` when that scene was deleted) with the numbers of ``scene``
    (of its bend's scene for an object ``scene`` does not show). An object that shows no bend (excluded, or its
    bend modifier switched off) and one whose bend cannot be baked (not a mesh, linked, a scale of zero on an
    axis) are skipped, named with why, and keep their bend. Every bent mesh is computed before any is written,
    so a failure changes nothing. Meshes shared with other objects are made single-user first so the others
    are not bent with the wrong transform. Nothing is changed when one of the meshes it would bake is in Edit
    Mode (``BendInputError``). The mesh keeps APPLIED_MARK, so batch runs (``envfx bend --apply``) know not to bend
    it a second time.
    """
    result = BendResult()
    bend_nodes.params_from_scene(scene).validate()
    params_of = {}
    candidates = []
    stale = None
    for obj in dict.fromkeys(objects):  # each once: a script may pass one twice
        mods = bend_modifiers(obj)
        if not mods and bend_gpu.is_gpu_bent(obj):
            result.skipped[obj.name] = ("bent on the GPU, in its materials, which Apply Bend cannot bake: switch "
                                        "Bend on GPU off and Add Bend, then Apply Bend")
            continue
        if not mods:
            result.unchanged.append(obj.name)
            continue
        reason = _cannot_apply_reason(obj, mods)
        if reason is None and scene.objects.get(obj.name) == obj:
            stale = stale or evaluated_check(scene, "apply the bend again")
            reason = stale(obj)  # a stale matrix_world: it would be baked at the wrong place
        if reason is not None:
            result.skipped[obj.name] = reason
            continue
        owner = common.group_owner(mods[0].node_group) or scene
        seen_in = scene if scene.objects.get(obj.name) == obj else owner
        if (owner, seen_in) not in params_of:
            params_of[(owner, seen_in)] = bend_nodes.params_shown_in(seen_in, owner).validate()
        candidates.append((obj, mods, params_of[(owner, seen_in)]))
    if not candidates:
        raise BendInputError(
            "Nothing to apply: select bent mesh objects" + (f" ({result.skipped_text()})" if result.skipped else "")
        )
    refuse_edit_mode([obj for obj, _mods, _params in candidates], BendInputError)
    groups = set()
    baked = []
    for obj, mods, obj_params in candidates:
        keys, positions = _bent_positions(obj, obj_params)
        result.warnings += _partial_key_warnings(obj, keys, obj_params)
        baked.append((obj, mods, (keys, positions)))
    for obj, mods, (keys, positions) in baked:
        first = list(obj.modifiers).index(mods[0])
        before = [m.name for m in list(obj.modifiers)[:first]]
        if before:
            result.warnings.append(
                f"{obj.name}: the bend was baked into the base mesh; modifiers {', '.join(before)} now work on "
                f"the bent mesh"
            )
        if obj.data.users > 1:
            obj.data = obj.data.copy()
        mesh = obj.data
        for key, co in zip(mesh.shape_keys.key_blocks if mesh.shape_keys is not None else (), keys, strict=True):
            bridge.set_shape_key_positions(key, co)
        bridge.set_positions(mesh, positions)
        if any(mesh.attributes.get(name) is not None for name in core_wind.LIVE_ATTRS):
            wind_nodes.write_live_attributes(mesh)  # the live wind reads the rest positions: those of the bent mesh
        groups.update(m.node_group for m in mods)
        for mod in mods:
            obj.modifiers.remove(mod)
        mesh[APPLIED_MARK] = scene.name
        result.changed.append(obj.name)
    _release(groups)
    sync_readers()  # what read these objects' bent geometry (terrain follow, snow coverage) lets go
    return result


def bend_and_apply(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object]) -> tuple[BendResult, list[str]]:
    """Bend ``objects`` with ``scene``'s bend and bake it into their meshes at once (``envfx bend --apply``);
    returns the result and the names of the meshes left as they were because their bend was baked already.

    A mesh the bend was already baked into (and that has no bend now) is not bent a second time: it counts as
    unchanged. The scene is evaluated between adding and baking (the bake reads world matrices: parents,
    constraints, animation). An object the bake skips keeps the state it had: no live bend that this call added.
    Raises BendInputError and core_bend.BendError as add_bend and apply_bend do."""
    baked = [o.name for o in objects if not bend_modifiers(o) and bend_applied(o)]
    objects = [o for o in objects if o.name not in baked]
    result = BendResult()
    if objects:
        unbent = [o for o in objects if not bend_modifiers(o)]
        result = add_bend(scene, objects)
        with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
            bpy.context.evaluated_depsgraph_get().update()
        warnings = result.warnings
        result = apply_bend(scene, objects)
        result.warnings[:0] = warnings
        remove_bend([o for o in unbent if o.name in result.skipped])
    result.unchanged += baked
    return result, baked


def _partial_key_warnings(obj, bent_keys, params) -> list[str]:
    """Warnings for shape keys whose current value the bake cannot keep as the viewport shows it.

    Each key is baked bent as a shape of its own (as Blender applies a deform modifier to a mesh with shape keys),
    so a key at 0 or 1 mixes to exactly what the viewport shows. The drop is quadratic, so a key at a value in
    between that moves vertices across the ground mixes to a slightly different shape: named, with how far."""
    mesh = obj.data
    if mesh.shape_keys is None or not mesh.shape_keys.use_relative:
        return []
    blocks = list(mesh.shape_keys.key_blocks)
    matrix = bridge.matrix_to_numpy(obj.matrix_world)
    warnings = []
    for i, kb in enumerate(blocks[1:], start=1):
        w = float(kb.value)
        if kb.mute or not 1e-6 < w < 1.0 - 1e-6:
            continue
        ref = blocks.index(kb.relative_key) if kb.relative_key is not None else 0
        base, key = bridge.get_shape_key_positions(blocks[ref]), bridge.get_shape_key_positions(kb)
        shown = core_bend.forward_local(base + w * (key - base), matrix, params)
        mixed = bent_keys[ref] + w * (bent_keys[i] - bent_keys[ref])
        off = float(np.linalg.norm((shown - mixed) @ matrix[:3, :3].T, axis=1).max(initial=0.0))
        if off > 1e-4:
            warnings.append(
                f"{obj.name}: shape key {kb.name!r} is at {w:.3g}: each shape key is baked bent as a shape of its "
                f"own (as Blender applies a deform modifier), so at this value the mesh shows up to {off:.3g} m "
                f"away from the bent viewport; it matches at 0 and 1 (set the key to 0 or 1 before baking, or "
                f"apply the shape keys first)")
    return warnings


def _bent_positions(obj, params) -> tuple[list, np.ndarray]:
    """(the bent positions of each shape key of ``obj``'s mesh, of its base mesh), float32; nothing is written."""
    matrix = bridge.matrix_to_numpy(obj.matrix_world)
    mesh = obj.data
    keys = [] if mesh.shape_keys is None else mesh.shape_keys.key_blocks
    bent_keys = [core_bend.forward_local(bridge.get_shape_key_positions(k), matrix, params).astype(np.float32)
                 for k in keys]
    return bent_keys, core_bend.forward_local(bridge.get_positions(mesh), matrix, params).astype(np.float32)


def set_exclude(objects: Iterable[bpy.types.Object], exclude: bool) -> BendResult:
    """Exclude ``objects`` from the bend (or include them again, ``exclude`` False)."""
    result = BendResult()
    for obj in changeable(objects, result):
        bridge.envfx_settings(obj).bend_exclude = exclude
        result.changed.append(obj.name)
    return result


def sync_readers(scene: bpy.types.Scene | None = None) -> bool:
    """Point the groups that read another object's bent geometry (the wind's terrain follow, the snow coverage)
    of ``scene`` (default: every scene) at the bend that geometry shows now, or at none. Call it after a bend is
    added to, removed from, applied to or switched on or off on an object; the dependency-graph handler calls it
    too (a change made by hand is caught at the next update). Cheap: a few modifiers per scene. Returns whether
    anything changed. (It lives here, above the node modules it calls, so that ``shader_nodes.bend``, which both
    of them import, imports neither.)"""
    changed = False
    for s in bpy.data.scenes if scene is None else (scene,):
        changed |= wind_nodes.sync_terrain_bend(s)
        changed |= snow_nodes.sync_coverage_bend(s)
    return changed


class _BendTargetsOperator(NeedsScene):
    """Shared shape of the operators that act on the selection or on a collection's objects."""

    bl_options = {"REGISTER", "UNDO"}
    verb = ""

    if TYPE_CHECKING:  # what the operator class it is mixed into has (not declared here: Blender reads annotations)
        def report(self, type: set[WmReportItems] | None, message: str) -> None: ...  # noqa: A002 - bpy's name

    collection: StringProperty(
        name="Collection",
        description="Act on every object of this collection instead of the selection",
        default="",
    )


    def run(self, context: bpy.types.Context,
            objects: list[bpy.types.Object]) -> BendResult:  # pragma: no cover - interface
        raise NotImplementedError

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            result = self.run(context, gather_targets(context, self.collection))
        except (BendInputError, core_bend.BendError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        report_result(self, result, self.verb)
        return {"FINISHED"}


class ENVFX_OT_bend_add(_BendTargetsOperator, bpy.types.Operator):
    """Bend the selected objects (or a collection's) with the scene's shared world bend"""

    bl_idname = "envfx.bend_add"
    bl_label = "Add Bend"
    verb = "Bent"

    def run(self, context: bpy.types.Context, objects: list[bpy.types.Object]) -> BendResult:
        return add_bend(bridge.context_scene(context), objects)


class ENVFX_OT_bend_remove(_BendTargetsOperator, bpy.types.Operator):
    """Remove the world bend from the selected objects (or a collection's)"""

    bl_idname = "envfx.bend_remove"
    bl_label = "Remove Bend"
    verb = "Removed the bend from"

    def run(self, context: bpy.types.Context, objects: list[bpy.types.Object]) -> BendResult:
        return remove_bend(objects)


class ENVFX_OT_bend_apply(_BendTargetsOperator, bpy.types.Operator):
    """Bake the current bend into the mesh of the selected bent objects (the meshes become bent for real)"""

    bl_idname = "envfx.bend_apply"
    bl_label = "Apply Bend"
    verb = "Baked the bend into"

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return super().poll(context) and poll_not_in_edit_mode(cls, context, _bent_mesh)

    def run(self, context: bpy.types.Context, objects: list[bpy.types.Object]) -> BendResult:
        if context.view_layer is not None:  # (a context with a scene has one)
            context.view_layer.update()
        return apply_bend(bridge.context_scene(context), objects)


class ENVFX_OT_bend_exclude(bpy.types.Operator):
    """Exclude the selected objects from the bend (or include them again)"""

    bl_idname = "envfx.bend_exclude"
    bl_label = "Exclude from Bend"
    bl_options = {"REGISTER", "UNDO"}

    exclude: BoolProperty(name="Exclude", description="Exclude (on) or include again (off)", default=True)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        objects = list(getattr(context, "selected_objects", []) or [])
        if not objects:
            self.report({"ERROR"}, "Nothing selected: select the objects to exclude from the bend")
            return {"CANCELLED"}
        result = set_exclude(objects, self.exclude)
        report_result(self, result, "Excluded" if self.exclude else "Included")
        return {"FINISHED"}


def unit_scale(scene: bpy.types.Scene) -> float:
    """Metres per Blender unit as Blender's FBX exporter reads the scene: ``scale_length``, except with the unit
    system None, where it writes 1 m (io_scene_fbx ``units_blender_to_fbx_factor``)."""
    units = scene.unit_settings
    return 1.0 if units.system == "NONE" else float(units.scale_length)


def flat_bounds(scene: bpy.types.Scene, params: core_bend.BendParams, depsgraph: bpy.types.Depsgraph | None = None
                ) -> list[tuple[str, npt.NDArray[np.float64], npt.NDArray[np.float64]]]:
    """(name, world min, world max) of every object ``scene`` bends, unbent: its evaluated geometry (all
    modifiers, the bend too) in world space, the bend taken off exactly (``core.bend.inverse``). This is the box
    a game engine computes for the physical mesh it imports. Objects with no geometry are left out."""
    tree = bend_nodes.group_for(scene)
    if tree is None:
        return []
    if depsgraph is None and scene == bpy.context.scene:
        depsgraph = bpy.context.evaluated_depsgraph_get()
    elif depsgraph is None:  # another scene (the CLI's --scene): its first view layer's, evaluated now
        with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
            depsgraph = bpy.context.evaluated_depsgraph_get()
    rows = []
    for obj in scene.objects:
        if bridge.envfx_settings(obj).bend_exclude or not any(m.node_group == tree and m.show_viewport
                                                               for m in bend_modifiers(obj)):
            continue
        try:
            local = bridge.evaluated_positions(obj, depsgraph)
        except RuntimeError:  # an object Blender cannot turn into a mesh
            continue
        if not len(local):
            continue
        m = bridge.matrix_to_numpy(obj.evaluated_get(depsgraph).matrix_world)
        world = core_bend.inverse(local.astype(np.float64) @ m[:3, :3].T + m[:3, 3], params)
        rows.append((obj.name, world.min(axis=0), world.max(axis=0)))
    return rows


def export_engines(scene: bpy.types.Scene, folder: str, view_distance: float | None = None) -> list[str]:
    """Write the scene's bend as shader includes for Godot, Unity and Unreal (each with a ready-to-use example
    material and the game code that sets the pivot every frame) and ``envfx_bend.json`` into
    ``folder``, in each engine's units for the scene's unit scale; returns the paths. The JSON's culling section
    covers the scene's bent objects (``flat_bounds``) for ``view_distance`` (Blender units; default the scene's
    ``envfx.bend.view_distance``). Raises BendInputError (with what to do) for a blank or unwritable folder or
    one relative to a .blend file never saved (``operators.common.output_folder``), and core_bend.BendError for
    bad settings; nothing is written then."""
    path = output_folder(folder, "The folder", "No folder: choose the folder the engine files are written to",
                         BendInputError)
    params = bend_nodes.params_from_scene(scene).validate()
    source = f"{bpy.path.basename(bpy.data.filepath) or 'unsaved file'}, scene {scene.name}"
    view = bridge.envfx_settings(scene).bend.view_distance if view_distance is None else view_distance
    objects = flat_bounds(scene, params)
    try:
        return bend_engines.export_files(params, path, source=source, unit_scale=unit_scale(scene),
                                         objects=objects, view_distance=view)
    except OSError as exc:
        raise BendInputError(f"Cannot write the engine files into {path!r} ({exc.strerror or exc}): "
                             "choose a writable folder") from None


class ENVFX_OT_bend_export_engines(NeedsScene, PicksFolder, bpy.types.Operator):
    """Write the scene's bend for game engines: shader includes for Godot, Unity (Shader Graph Custom Function)
    and Unreal with ready-to-use examples (a material and the game code that sets the pivot every frame), and
    envfx_bend.json with every number in each engine's axes and units"""

    bl_idname = "envfx.bend_export_engines"
    bl_label = "Export for Game Engines"

    directory: StringProperty(name="Folder", description="Folder the engine files are written to (// is the .blend "
                              "file's folder)", default="", subtype="DIR_PATH", options=PATH_OPTIONS)

    def draw(self, context: bpy.types.Context) -> None:
        if self.layout is None:  # (Blender sets it for draw())
            return
        # the culling bounds' view distance is the scene's setting (the CLI and scripts read it too)
        self.layout.prop(bridge.envfx_settings(bridge.context_scene(context)).bend, "view_distance")

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            paths = export_engines(bridge.context_scene(context), self.directory)
        except (BendInputError, core_bend.BendError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote {len(paths)} files for game engines into {os.path.dirname(paths[0])}")
        return {"FINISHED"}


classes = (
    ENVFX_OT_bend_add,
    ENVFX_OT_bend_remove,
    ENVFX_OT_bend_apply,
    ENVFX_OT_bend_exclude,
    ENVFX_OT_bend_export_engines,
)
