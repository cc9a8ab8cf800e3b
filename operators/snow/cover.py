"""Snow cover: Generate Snow makes snow meshes over the terrain (levels of detail), or regenerates them in place."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import bpy
import numpy as np

from ... import bridge
from ...core import bend as core_bend
from ...core import snow as core_snow
from ...shader_nodes import bend as bend_nodes
from ...shader_nodes import snow as snow_nodes
from .. import bend as bend_ops
from ..common import NeedsScene, evaluated_check
from .collection import (SNOW_TAG, TERRAIN_TAG, SnowInputError, cover_terrain, ensure_snow_collection,
                         is_snow_object, set_cover_terrain, snow_objects, update_view_layer)
from .terrain import image_and_uvs, instance_rendered, occluder_objects, terrain_triangles

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems


def cover_params(scene: bpy.types.Scene) -> core_snow.CoverParams:
    s = bridge.envfx_settings(scene).snow
    return core_snow.CoverParams(
        spacing=s.spacing, thickness=s.thickness, max_slope=s.max_slope, border_width=s.border_width,
        drift_direction=(math.cos(s.drift_direction), math.sin(s.drift_direction)), drift=s.drift,
        noise=s.noise, noise_scale=s.noise_scale, seed=s.seed, lods=s.lods, vertex_budget=s.vertex_budget,
    )


class _Unbent:
    """Context manager: the world bend switched off (in the viewport) on ``objects`` while they are evaluated,
    so they are read where they physically are; each bend modifier's switch is restored exactly."""

    def __init__(self, objects: Iterable[bpy.types.Object]):
        self.muted = [(o.name, m.name) for o in objects for m in bend_ops.bend_modifiers(o)
                      if m.show_viewport and o.library is None]

    def __enter__(self):
        for on, mn in self.muted:
            bpy.data.objects[on].modifiers[mn].show_viewport = False
        if self.muted:
            update_view_layer()
        return self

    def __exit__(self, *_exc):
        for on, mn in self.muted:
            obj = bpy.data.objects.get(on)
            if obj is not None and mn in obj.modifiers:
                obj.modifiers[mn].show_viewport = True
        if self.muted:
            update_view_layer()


def _cover_base_name(terrain) -> str:
    return terrain[0].name if len(terrain) == 1 else "Terrain"


def covers_of(scene: bpy.types.Scene, terrain: Iterable[bpy.types.Object]) -> list[bpy.types.Object]:
    """The snow objects of ``scene`` generated over exactly the objects ``terrain`` (those of them snow can cover,
    ``snow_terrain``, as ``generate_snow`` tags them; by the terrain objects it keeps, renamed or not, else by
    TERRAIN_TAG; snow made before the tag existed: by its name, "<terrain> Snow" or "<terrain> Snow LOD<n>"),
    coarsest level last."""
    terrain = snow_terrain(terrain)
    if not terrain:
        return []
    names = json.dumps(sorted(o.name for o in terrain))
    base = _cover_base_name(terrain) + " Snow"
    found = []
    for obj in snow_objects(scene):
        kept = cover_terrain(obj)
        if kept is not None:  # (then not by names: another object may have taken a renamed terrain's name)
            if {t.as_pointer() for t in kept} == {t.as_pointer() for t in terrain}:
                found.append(obj)
            continue
        tag = obj.get(TERRAIN_TAG)
        if tag is not None and tag != names:
            tag = _tag_in_scene(tag, scene)
        if tag == names or tag is None and (obj.name == base or obj.name.startswith(base + " LOD")):
            found.append(obj)
    return sorted(found, key=lambda o: (int(o[SNOW_TAG]), o.name))


def _tag_in_scene(tag: str, scene) -> str | None:
    """A cover's TERRAIN_TAG with each terrain name that ``scene`` does not hold replaced by the scene's one copy
    of it (Scene > New > Full Copy copies "Ground" as "Ground.001" and the copy's snow keeps the tag "Ground"), or
    the tag as it was."""
    try:
        tagged = json.loads(tag)
    except (TypeError, ValueError):
        return tag
    if not isinstance(tagged, list):
        return tag
    mapped = []
    for name in tagged:
        if not isinstance(name, str):
            return tag
        copies = [] if name in scene.objects else [o.name for o in scene.objects
                                                    if re.fullmatch(re.escape(name) + r"\.\d{3,}", o.name)]
        mapped.append(copies[0] if len(copies) == 1 else name)
    return json.dumps(sorted(mapped))


class GeneratedSnow(list):
    """The snow objects ``generate_snow`` made or regenerated (finest level first), with ``warnings``: what it
    changed besides the meshes, for the operator and the command line to report."""

    def __init__(self, objects: Iterable[bpy.types.Object] = (), warnings: Iterable[str] = ()) -> None:
        super().__init__(objects)
        self.warnings = list(warnings)


TERRAIN_TYPES = {"MESH", "CURVE", "SURFACE", "META", "FONT"}


def snow_terrain(objects: Iterable[bpy.types.Object]) -> list[bpy.types.Object]:
    """The objects of ``objects`` snow can be generated over (what ``generate_snow`` covers and ``covers_of``
    looks up): geometry and collection instances (their instances are covered, as geometry-nodes instances of a
    mesh are); other empties, cameras, lights... are left out."""
    return [o for o in objects if o.type in TERRAIN_TYPES or bridge.instances_collection(o)]


def _check_bend_settings(scene):
    """The scene's bend settings, checked before snow that takes the bend is built (raises SnowInputError)."""
    try:
        bend_nodes.params_from_scene(scene).validate()
    except core_bend.BendError as exc:
        raise SnowInputError(f"The terrain is bent, so the snow takes the scene's bend, but the bend settings are "
                             f"refused: {exc}") from None


def generate_snow(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object], depsgraph: bpy.types.Depsgraph,
                  mask_group: str = "", mask_image: bpy.types.Image | None = None,
                  replace: bool = False) -> GeneratedSnow:
    """Generate snow cover meshes over ``objects`` (their evaluated geometry, world space, without the world
    bend: the snow lies on the physical ground). Returns the new objects (finest level first); when the terrain
    is bent they take the scene's bend too. Everything is checked before the scene changes (the bend settings
    too, when the terrain is bent).

    With ``replace``, the cover already made over exactly these objects (``covers_of``) is regenerated in place:
    its objects keep their names, modifiers (trails), collections and visibility and get the new meshes;
    levels the new cover no longer has are deleted. Running it twice gives one cover, not two. The cover follows
    its terrain: bent terrain bends it, and the bend of a cover whose terrain is no longer bent is removed (named
    in the result's ``warnings``)."""
    terrain = snow_terrain(objects)
    if not terrain:
        raise SnowInputError("Nothing to cover: select the terrain meshes to put snow on",
                             cli="Nothing to cover: none of --objects is a mesh, curve, surface, metaball, text or "
                             "collection instance: name the terrain objects")
    broken = [o.name for o in terrain if not np.isfinite(bridge.matrix_to_numpy(o.matrix_world)).all()]
    if broken:  # (its faces would all be left out, and the message would be that none looks up)
        raise SnowInputError(f"The location, rotation or scale of {', '.join(broken)} (or of a parent) is not a "
                             f"number (NaN or infinite): fix the transform (Object > Clear) and generate again")
    stale = evaluated_check(scene, "generate the snow again")
    not_evaluated = [f"{o.name} {stale(o)}" for o in terrain if stale(o) is not None]
    if not_evaluated:  # its stale place and mesh would put the snow where the terrain was when last shown
        raise SnowInputError("; ".join(not_evaluated))
    occluders = occluder_objects(scene, {o.name for o in terrain})
    with _Unbent(terrain + occluders) as unbent:
        if unbent.muted:
            depsgraph = bpy.context.evaluated_depsgraph_get()
        tris, mask = terrain_triangles(terrain, depsgraph, mask_group)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        pixels = uvs = None
        if mask_image is not None:
            pixels, uvs = image_and_uvs(terrain, depsgraph, mask_image)
        occ = [t for t, _w in bridge.objects_triangles(occluders, depsgraph, counts=instance_rendered)]
    occ = np.concatenate(occ) if occ else None
    bent = {n for n, _m in unbent.muted} & {o.name for o in terrain}
    if bent:
        _check_bend_settings(scene)
    cover = core_snow.generate_cover(tris, cover_params(scene), occluder_tris=occ, mask_weights=mask,
                                     mask_uvs=uvs, mask_pixels=pixels)
    # all checks passed: build the meshes
    made = GeneratedSnow()
    if cover.not_finite:
        made.warnings.append(f"{cover.not_finite:,} face(s) of {', '.join(o.name for o in terrain)} have a corner "
                             f"that is not a number (NaN or infinite) and got no snow: fix those vertices")
    coll = ensure_snow_collection(scene)
    material = snow_nodes.ensure_material()
    base = _cover_base_name(terrain)
    old = {int(o[SNOW_TAG]): o for o in covers_of(scene, terrain)} if replace else {}
    for level, lod in enumerate(cover.lods):
        name = f"{base} Snow" + (f" LOD{level}" if len(cover.lods) > 1 else "")
        mesh = mesh_from_cover(name, lod)
        mesh.materials.append(material)
        obj = old.pop(level, None)
        if obj is not None:  # regenerate in place: the object stays, its mesh is the new one
            previous = cast(bpy.types.Mesh, obj.data)  # a level of a cover: a mesh object (made below)
            obj.data = mesh
            if previous.users == 0:
                mesh_name = previous.name
                bpy.data.meshes.remove(previous)
                mesh.name = mesh_name
        else:
            obj = bpy.data.objects.new(name, mesh)
            coll.objects.link(obj)
            if level > 0:  # coarser levels are for export; only the finest one shows
                obj.hide_render = True
                obj.hide_viewport = True
        obj[SNOW_TAG] = level
        set_cover_terrain(obj, terrain)
        obj["envfx_surface_spacing"] = [v * 2 ** level for v in cover.surface_spacing]
        made.append(obj)
    for obj in old.values():  # levels of detail the new cover does not have
        previous = cast("bpy.types.Mesh | None", obj.data)  # a level of a cover: a mesh object
        bpy.data.objects.remove(obj)
        if previous is not None and previous.users == 0:
            bpy.data.meshes.remove(previous)
    if bent:  # the snow belongs to the bent level like its terrain
        bend_ops.add_bend(scene, made)
    else:  # regenerated over terrain that is no longer bent: the snow lies on it unbent
        unbend = [o for o in made if bend_ops.bend_modifiers(o)]
        if unbend:
            result = bend_ops.remove_bend(unbend)
            if result.changed:
                made.warnings.append(f"removed the bend from {', '.join(result.changed)}: the terrain is no longer "
                                     f"bent")
            for name, why in result.skipped.items():
                made.warnings.append(f"{name} keeps its bend ({why}) though the terrain is no longer bent")
    return made


def mesh_from_cover(name: str, lod: core_snow.CoverMesh) -> bpy.types.Mesh:
    return bridge.quad_mesh(name, lod.vertices, lod.faces, {"snow_thickness": lod.thickness})


class ENVFX_OT_snow_generate(NeedsScene, bpy.types.Operator):
    """Cover the selected objects with snow: up-facing faces only, nothing under other objects, tapered
    borders, drift and noise, levels of detail"""

    bl_idname = "envfx.snow_generate"
    bl_label = "Generate Snow"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = bridge.context_scene(context)
        objects = [o for o in getattr(context, "selected_objects", []) or [] if not is_snow_object(o)]
        try:
            update_view_layer()
            s = bridge.envfx_settings(scene).snow
            made = generate_snow(scene, objects, context.evaluated_depsgraph_get(), s.density_mask,
                                 s.density_texture, replace=True)  # (pressed again: the cover regenerated in place)
        except (SnowInputError, core_snow.SnowError, core_bend.BendError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        for warning in made.warnings:
            self.report({"WARNING"}, warning[:1].upper() + warning[1:])
        n = sum(len(o.data.vertices) for o in made[:1])
        lo, hi = made[0]["envfx_surface_spacing"]
        if hi > 1.2 * s.spacing:
            self.report({"WARNING"}, f"Slopes steeper than 48 deg stretch the vertex spacing up to {hi:.3g} "
                        f"(asked {s.spacing:.3g}): lower the max slope, or accept coarser snow there")
        self.report({"INFO"}, f"Made {len(made)} snow mesh(es), {n:,} vertices at the finest level, "
                    f"{lo:.3g} to {hi:.3g} apart along the surface")
        return {"FINISHED"}
