"""Snow operators: generate a snow cover, add/remove live trails, bake the interaction buffer.

Each operator gathers inputs and calls one plain function that scripts and the CLI call too.
"""

from __future__ import annotations

import json
import re
import math
import os

import bpy
import numpy as np
from bpy.props import BoolProperty

from .. import bridge, progress
from . import bend as bend_ops
from ..core import bend as core_bend
from ..core import snow as core_snow
from ..shader_nodes import bend as bend_nodes
from ..shader_nodes import common
from ..shader_nodes import snow as snow_nodes
from .common import (NeedsScene, ObjectsResult, changeable, edit_mode_text, evaluated_check, in_edit_mode,
                     kept_by_override_reason, linked_reason, output_folder, path_in_file, refuse_edit_mode,
                     report_result)

MODIFIER_NAME = "EnvFX Snow Trails"
COVERAGE_MODIFIER = "EnvFX Snow Coverage"
COVERAGE_TYPES = {"MESH", "CURVES", "POINTCLOUD"}
SNOW_TAG = "envfx_snow"            # custom property on generated snow objects (value: the LOD level)
TERRAIN_TAG = "envfx_snow_terrain"  # custom property on generated snow objects: JSON list of the terrain names
COLLECTION_NAME = "EnvFX Snow"
COLLECTION_KEY = "envfx_snow_collection"  # the scene's ID property pointing at its snow collection
ACTOR_TYPES = {"MESH", "CURVE", "CURVES", "POINTCLOUD", "SURFACE", "META", "FONT", "EMPTY", "ARMATURE", "VOLUME"}


class SnowInputError(ValueError):
    """Nothing could be done; the scene is unchanged. ``cli`` (when given): the same advice for ``envfx snow``,
    which names its command-line options where the message names the panel's buttons."""

    def __init__(self, message: str, cli: str | None = None):
        super().__init__(message)
        self.cli = cli


# --- geometry from Blender --------------------------------------------------------------------------------
# An object's geometry is what it draws: its own evaluated mesh and every instance it makes (a collection
# instance, geometry-nodes instances, particle or vertex/face instances, nested ones included), each placed by its
# world matrix. ``to_mesh`` of the object alone has no instances, so they are read from the depsgraph's
# ``object_instances``, in one pass for all the objects asked about.


def _instances_collection(obj) -> bool:
    """Whether ``obj`` is a collection instance (an Empty showing a collection)."""
    return obj.instance_type == "COLLECTION" and obj.instance_collection is not None


def _makes_instances(obj) -> bool:
    """Whether ``obj`` may put instances into the scene (only then are the depsgraph's instances walked)."""
    return (obj.instance_type != "NONE" or len(obj.particle_systems) > 0
            or any(m.type == "NODES" for m in obj.modifiers))


def _shows_itself(obj) -> bool:
    """Whether the object's own geometry is drawn: an object instancing on its vertices, faces or particles can
    hide itself (Instancing > Render, the emitter's Show Emitter in renders)."""
    if obj.instance_type in {"VERTS", "FACES"} or len(obj.particle_systems):
        return obj.show_instancer_for_render
    return True


GEOMETRY_OBJECT_TYPES = bridge.GEOMETRY_TYPES | {"SURFACE", "META"}  # object types whose geometry can be read


def _local_mesh(ev, with_weights: str = "", with_uvs: bool = False):
    """(positions (N, 3), triangle corners (T, 3) as vertex indices, weights (T, 3) of the point attribute
    ``with_weights`` or None, UVs (T, 3, 2) of the active UV map or None) of the evaluated object ``ev``'s mesh,
    object space; None when it has no mesh or no faces."""
    if ev.type not in GEOMETRY_OBJECT_TYPES:  # an Empty, a light...: to_mesh would complain on the console
        return None
    try:
        mesh = ev.to_mesh()
    except RuntimeError:
        return None
    try:
        if mesh is None:
            return None
        mesh.calc_loop_triangles()
        nt = len(mesh.loop_triangles)
        if not nt:  # a point scatter's own points, an instancer's empty mesh: nothing to draw, no UVs needed
            return None
        pos = bridge.get_positions(mesh).astype(np.float64)
        idx = np.empty(nt * 3, dtype=np.int32)
        mesh.loop_triangles.foreach_get("vertices", idx)
        idx = idx.reshape(nt, 3)
        weights = None
        attr = mesh.attributes.get(with_weights) if with_weights else None
        if attr is not None and attr.domain == "POINT" and attr.data_type == "FLOAT":
            buf = np.empty(len(mesh.vertices), dtype=np.float32)
            attr.data.foreach_get("value", buf)
            weights = buf.astype(np.float64)[idx]
        uvs = None
        if with_uvs and mesh.uv_layers.active is not None:
            loops = np.empty(nt * 3, dtype=np.int32)
            mesh.loop_triangles.foreach_get("loops", loops)
            uv = np.empty(len(mesh.loops) * 2, dtype=np.float32)
            mesh.uv_layers.active.uv.foreach_get("vector", uv)
            uvs = uv.reshape(-1, 2)[loops.reshape(nt, 3)]
        return pos, idx, weights, uvs
    finally:
        ev.to_mesh_clear()


def _placed(local, m):
    """(world triangles (T, 3, 3), weights, UVs) of a ``_local_mesh`` placed by the world matrix ``m``, wound for
    the world (``_world_winding``; the weights and UVs corner for corner with the triangles)."""
    pos, idx, weights, uvs = local
    pos = pos @ m[:3, :3].T + m[:3, 3]
    idx, weights, uvs = (None if a is None else _world_winding(a, m) for a in (idx, weights, uvs))
    return pos[idx], weights, uvs


def evaluated_parts(objects, depsgraph, with_weights: str = "", with_uvs: bool = False, counts=None) -> list:
    """For each of ``objects``, the list of the parts of the geometry it draws, each (world triangles (T, 3, 3),
    weights (T, 3) or None, UVs (T, 3, 2) or None; see ``_local_mesh``): its own evaluated mesh (unless it hides
    itself, ``_shows_itself``) and its instances. ``counts(instancer, source)`` (original objects; default: all)
    says whether an instance of ``source`` made by ``instancer`` counts. Instances sharing a mesh read it once."""
    objects = list(objects)
    parts = [[] for _ in objects]
    instancers = {}
    for i, obj in enumerate(objects):
        if _shows_itself(obj):
            ev = obj.evaluated_get(depsgraph)
            local = _local_mesh(ev, with_weights, with_uvs)
            if local is not None:
                parts[i].append(_placed(local, bridge.matrix_to_numpy(ev.matrix_world)))
        if _makes_instances(obj):
            instancers[obj.as_pointer()] = i
    if not instancers:
        return parts
    meshes = {}  # an instance's evaluated mesh is owned by the depsgraph: read each one once
    for inst in depsgraph.object_instances:  # an instance's objects are valid only during its step
        if not inst.is_instance:
            continue
        i = instancers.get(inst.parent.original.as_pointer())
        if i is None:
            continue
        ev = inst.object
        if counts is not None and not counts(objects[i], ev.original):
            continue
        key = ev.data.as_pointer() if ev.type == "MESH" and ev.data is not None else None
        local = meshes.get(key) if key is not None else None
        if local is None:
            local = _local_mesh(ev, with_weights, with_uvs)
            if local is None:
                continue
            if key is not None:
                meshes[key] = local
        parts[i].append(_placed(local, bridge.matrix_to_numpy(inst.matrix_world)))
    return parts


def _joined(parts) -> tuple[np.ndarray, np.ndarray | None]:
    """(triangles, weights) of the parts of one object, joined; parts without weights count as weight 1 (None
    when no part has any)."""
    if not parts:
        return np.zeros((0, 3, 3)), None
    tris = np.concatenate([t for t, _w, _uv in parts])
    if all(w is None for _t, w, _uv in parts):
        return tris, None
    return tris, np.concatenate([np.ones((t.shape[0], 3)) if w is None else w for t, w, _uv in parts])


def objects_triangles(objects, depsgraph, with_weights: str = "", counts=None) -> list:
    """[(world triangles, weights)] of each of ``objects`` (``world_triangles`` for many objects at once, one
    walk through the instances; ``counts`` as in ``evaluated_parts``)."""
    return [_joined(p) for p in evaluated_parts(objects, depsgraph, with_weights, counts=counts)]


def image_and_uvs(objects, depsgraph, image):
    """(pixels (H, W, C), UVs (T, 3, 2) of every triangle of ``objects``, corner for corner with
    ``terrain_triangles``) for a density texture."""
    w, h = image.size
    if w == 0 or h == 0:
        raise SnowInputError(f"The density texture {image.name!r} has no pixels (missing file?): load an image")
    pixels = np.empty(w * h * image.channels, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    pixels = pixels.reshape(h, w, image.channels)
    out = []
    for obj, parts in zip(objects, evaluated_parts(objects, depsgraph, with_uvs=True, counts=_instance_rendered)):
        if any(uv is None for _t, _w, uv in parts):
            raise SnowInputError(f"{obj.name} has no UV map: the density texture needs one (unwrap it, or clear "
                                 f"the texture)")
        out.extend(uv for _t, _w, uv in parts)
    return pixels, np.concatenate(out) if out else np.zeros((0, 3, 2), dtype=np.float32)


def _world_winding(idx, m):
    """Triangle corner indices (T, 3), or anything per corner (weights, UVs), wound for the world: a mirroring
    matrix (negative determinant, e.g. a tile scaled -1 on one axis) turns a counter-clockwise triangle clockwise,
    so its normal would point away from the side Blender shows as the front; swapping two corners keeps the
    normals as Blender draws them."""
    if np.linalg.det(m[:3, :3]) < 0:
        return idx[:, ::-1]
    return idx


def world_triangles(obj, depsgraph, with_weights: str = "") -> tuple[np.ndarray, np.ndarray | None]:
    """(T, 3, 3) world-space triangles of the geometry the evaluated object draws, its instances included
    (``evaluated_parts``; wound so that their normals are Blender's world normals, mirrored objects included),
    and (T, 3) weights of the point attribute ``with_weights`` of the evaluated meshes (None when no part has
    one; parts without it count as 1)."""
    return objects_triangles([obj], depsgraph, with_weights)[0]


def rest_triangles(obj) -> np.ndarray:
    """(T, 3, 3) world-space triangles of a mesh object's own data (no modifiers)."""
    mesh = obj.data
    mesh.calc_loop_triangles()
    nt = len(mesh.loop_triangles)
    idx = np.empty(nt * 3, dtype=np.int32)
    if nt:
        mesh.loop_triangles.foreach_get("vertices", idx)
    pos = bridge.get_positions(mesh).astype(np.float64)
    m = bridge.matrix_to_numpy(obj.matrix_world)
    pos = pos @ m[:3, :3].T + m[:3, 3]
    return pos[_world_winding(idx.reshape(nt, 3), m)]


MASK_ATTRIBUTE = "envfx_snow_mask"


def _mask_reader(group_name: str):
    """A throw-away node group copying vertex group ``group_name`` into the point attribute MASK_ATTRIBUTE
    (vertex groups have no bulk accessor; attributes do)."""
    tree = bpy.data.node_groups.new("EnvFX Snow Mask Reader", "GeometryNodeTree")
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    b = snow_nodes.SnowBuilder(tree)
    gi = b.node("NodeGroupInput", "In")
    go = b.node("NodeGroupOutput", "Out")
    geo = b.store(gi.outputs[0], MASK_ATTRIBUTE, b.named(group_name).outputs["Attribute"])
    b.link(geo, go.inputs[0])
    return tree


OCCLUDER_READER = "EnvFX Snow Occluder Reader"


def collection_triangles(scene, coll) -> np.ndarray:
    """(T, 3, 3) world triangles of everything the collection ``coll`` draws, its instances realized, read the way
    the live trails read their occluders (Collection Info in Original space, Realize Instances): an object of the
    collection hidden in the viewport counts, and so do the instances it makes. A temporary object of ``scene``
    evaluates it and is removed again, with its mesh and node group."""
    tree = bpy.data.node_groups.new(OCCLUDER_READER, "GeometryNodeTree")
    mesh = obj = None
    try:
        common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
        common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
        b = snow_nodes.SnowBuilder(tree)
        out = b.node("NodeGroupOutput", "Out")
        info = b.node("GeometryNodeCollectionInfo", "Occluders", transform_space="ORIGINAL")
        info.inputs["Collection"].default_value = coll
        info.inputs["Separate Children"].default_value = False
        info.inputs["Reset Children"].default_value = False
        realize = b.node("GeometryNodeRealizeInstances", "Occluders Real")
        b.link(info.outputs[0], realize.inputs[0])
        b.link(realize.outputs[0], out.inputs[0])
        mesh = bpy.data.meshes.new(OCCLUDER_READER)
        obj = bpy.data.objects.new(OCCLUDER_READER, mesh)
        obj.hide_render = True
        obj.modifiers.new(OCCLUDER_READER, "NODES").node_group = tree
        scene.collection.objects.link(obj)
        bpy.context.view_layer.update()
        return world_triangles(obj, bpy.context.evaluated_depsgraph_get())[0]
    finally:
        if obj is not None:
            bpy.data.objects.remove(obj)
        if mesh is not None:
            bpy.data.meshes.remove(mesh)
        bpy.data.node_groups.remove(tree)
        bpy.context.view_layer.update()


def terrain_triangles(objects, depsgraph, mask_group: str = ""):
    """World triangles of all ``objects`` (their instances too, but not the helpers inside a collection instance
    that are never rendered or drawn only as an outline: ``_instance_rendered``) and, with ``mask_group``,
    per-corner weights of that vertex group (objects without the group count as weight 1). Temporary modifiers
    are removed again."""
    if not mask_group:
        return np.concatenate([t for t, _w in objects_triangles(objects, depsgraph, counts=_instance_rendered)]), None
    with_group = [o for o in objects if o.vertex_groups.get(mask_group) is not None]
    if not with_group:
        raise SnowInputError(f"No vertex group named {mask_group!r} on {', '.join(o.name for o in objects)}: "
                             f"pick the density mask's vertex group or clear it")
    tree = _mask_reader(mask_group)
    added = []
    try:
        for obj in with_group:
            mod = obj.modifiers.new("EnvFX Snow Mask Reader", "NODES")
            mod.node_group = tree
            added.append((obj, mod))
        bpy.context.view_layer.update()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        tris, weights = [], []
        for obj, (t, w) in zip(objects, objects_triangles(objects, depsgraph, MASK_ATTRIBUTE, _instance_rendered)):
            tris.append(t)
            weights.append(w if w is not None and obj in with_group else np.ones((t.shape[0], 3)))
        return np.concatenate(tris), np.concatenate(weights)
    finally:
        for obj, mod in added:
            obj.modifiers.remove(mod)
        bpy.data.node_groups.remove(tree)
        bpy.context.view_layer.update()


def is_snow_object(obj) -> bool:
    return obj.get(SNOW_TAG) is not None


def snow_objects(scene):
    return [o for o in scene.objects if is_snow_object(o)]


def _in_scene_tree(coll, scene) -> bool:
    return coll == scene.collection or coll in scene.collection.children_recursive


def snow_collection(scene):
    """The collection ``scene``'s new snow goes into, or None: one per scene, like the groups ("EnvFX Snow", later
    ones "EnvFX Snow (scene name)"), so snow generated in one scene of a file is in no other. The scene points at
    it; a file saved before scenes had their own has one "EnvFX Snow" (``split_shared_snow`` shares it out after
    loading): a scene it is in takes it when no other scene has. A collection the scene points at that is not in
    the scene (copied with Scene > New > Copy Settings) is not its own."""
    coll = scene.get(COLLECTION_KEY)
    if isinstance(coll, bpy.types.Collection) and coll.library is None and _in_scene_tree(coll, scene):
        return coll
    legacy = bpy.data.collections.get(COLLECTION_NAME)
    if (legacy is not None and legacy.library is None and _in_scene_tree(legacy, scene)
            and not any(s != scene and s.get(COLLECTION_KEY) == legacy for s in bpy.data.scenes)):
        return legacy
    return None


def ensure_snow_collection(scene):
    """``scene``'s snow collection (``snow_collection``), made and linked into the scene when it has none."""
    coll = snow_collection(scene)
    if coll is None:
        taken = bpy.data.collections.get(COLLECTION_NAME) is not None
        coll = bpy.data.collections.new(f"{COLLECTION_NAME} ({scene.name})" if taken else COLLECTION_NAME)
        scene.collection.children.link(coll)
    if scene.get(COLLECTION_KEY) != coll:
        scene[COLLECTION_KEY] = coll
    return coll


def _terrain_scenes(obj, scenes):
    """The scenes of ``scenes`` that hold the terrain snow object ``obj`` was generated over (TERRAIN_TAG), or
    None when that is not known (no tag, or a terrain object no longer in the file)."""
    try:
        names = json.loads(obj.get(TERRAIN_TAG) or "[]")
    except (TypeError, ValueError):
        return None
    terrain = [bpy.data.objects.get(n) for n in names] if isinstance(names, list) else []
    if not terrain or any(t is None for t in terrain):
        return None
    return [s for s in scenes if any(common.in_scene(t, s) for t in terrain)]


def split_shared_snow() -> list:
    """A file saved when every scene's snow went into one "EnvFX Snow" collection, linked into each scene that
    generated snow (so each scene showed, rendered and trailed the others' snow): the snow whose terrain is in only
    some of those scenes moves to their own snow collection (the first scene keeps "EnvFX Snow"), and the shared
    one leaves the scenes none of its snow belongs to. Snow whose terrain is in all of them (a Linked Copy of the
    scene) or unknown stays shared. Nothing is done in a file whose scenes point at their collections already.
    Returns the names of the snow objects moved; run after a file is loaded."""
    legacy = bpy.data.collections.get(COLLECTION_NAME)
    if (legacy is None or legacy.library is not None
            or any(isinstance(s.get(COLLECTION_KEY), bpy.types.Collection) for s in bpy.data.scenes)):
        return []
    sharing = [s for s in bpy.data.scenes if _in_scene_tree(legacy, s)]
    if len(sharing) < 2:
        return []
    owner = sharing[0]
    owner[COLLECTION_KEY] = legacy
    moved, needed, trailed = [], {owner.name}, {}
    for obj in list(legacy.objects):
        homes = _terrain_scenes(obj, sharing) if is_snow_object(obj) else None
        if not homes or len(homes) == len(sharing) or owner in homes:
            needed.update(s.name for s in (homes or sharing))
            continue
        for scene in homes:
            ensure_snow_collection(scene).objects.link(obj)
        legacy.objects.unlink(obj)
        moved.append(obj.name)
        if trails_modifiers(obj) and len(homes) == 1:
            trailed.setdefault(homes[0], []).append(obj)
    for scene in sharing:
        if scene.name not in needed and legacy.name in scene.collection.children:
            scene.collection.children.unlink(legacy)
    for scene, objs in trailed.items():  # trailed by another scene's group (Add Trails there took it): its own
        try:
            add_trails(scene, objs)
        except (SnowInputError, core_snow.SnowError) as exc:
            print(f"EnvFX: the snow {', '.join(o.name for o in objs)} moved to scene {scene.name!r} keeps the trails "
                  f"it had ({exc}); press Add Trails in {scene.name!r}")
    return moved


OCCLUDER_TYPES = GEOMETRY_OBJECT_TYPES  # what keeps snow from under it: what draws a surface


def _drawn_as_rendered(obj) -> bool:
    """Whether the object is rendered and drawn as a surface: a helper that is never rendered (Disable in Renders)
    or drawn only as Wire or Bounds (trigger volumes, collision and navigation blockers) is not."""
    return not obj.hide_render and obj.display_type in {"SOLID", "TEXTURED"}


def _rendered_objects(scene) -> set:
    """Pointers of the objects of ``scene`` in at least one collection path that renders (no collection on the
    way disabled in renders)."""
    found, stack = set(), [scene.collection]
    while stack:
        coll = stack.pop()
        found.update(o.as_pointer() for o in coll.objects)
        stack.extend(c for c in coll.children if not c.hide_render)
    return found


def _instance_rendered(instancer, source) -> bool:
    """Whether an instance of ``source`` made by ``instancer`` is rendered and drawn as a surface: each object of a
    collection instance by its own settings (geometry-nodes, particle and vertex instances are drawn whatever
    their source is set to: scatter sources are usually hidden)."""
    return not _instances_collection(instancer) or _drawn_as_rendered(source)


def _occluder_objects(scene, exclude):
    """The objects of ``scene`` that keep snow from under them while it is generated: the rendered geometry (its
    instances included, ``_instance_rendered``) shown in the viewport, but not ``exclude`` (names), the snow or
    the actors."""
    actors = set()
    coll = scene.envfx.snow.actors
    if coll is not None:
        actors = {o.name for o in coll.all_objects}
    rendered = _rendered_objects(scene)
    return [o for o in scene.objects
            if (o.type in OCCLUDER_TYPES or _instances_collection(o)) and o.name not in exclude
            and not is_snow_object(o) and o.name not in actors and o.visible_get() and _drawn_as_rendered(o)
            and o.as_pointer() in rendered]


# --- snow cover -------------------------------------------------------------------------------------------

def cover_params(scene) -> core_snow.CoverParams:
    s = scene.envfx.snow
    return core_snow.CoverParams(
        spacing=s.spacing, thickness=s.thickness, max_slope=s.max_slope, border_width=s.border_width,
        drift_direction=(math.cos(s.drift_direction), math.sin(s.drift_direction)), drift=s.drift,
        noise=s.noise, noise_scale=s.noise_scale, seed=s.seed, lods=s.lods, vertex_budget=s.vertex_budget,
    )


class _Unbent:
    """Context manager: the world bend switched off (in the viewport) on ``objects`` while they are evaluated,
    so they are read where they physically are; each bend modifier's switch is restored exactly."""

    def __init__(self, objects):
        from .bend import bend_modifiers

        self.muted = [(o.name, m.name) for o in objects for m in bend_modifiers(o)
                      if m.show_viewport and o.library is None]

    def __enter__(self):
        for on, mn in self.muted:
            bpy.data.objects[on].modifiers[mn].show_viewport = False
        if self.muted:
            bpy.context.view_layer.update()
        return self

    def __exit__(self, *_exc):
        for on, mn in self.muted:
            obj = bpy.data.objects.get(on)
            if obj is not None and mn in obj.modifiers:
                obj.modifiers[mn].show_viewport = True
        if self.muted:
            bpy.context.view_layer.update()


def _cover_base_name(terrain) -> str:
    return terrain[0].name if len(terrain) == 1 else "Terrain"


def covers_of(scene, terrain) -> list:
    """The snow objects of ``scene`` generated over exactly the objects ``terrain`` (those of them snow can cover,
    ``snow_terrain``, as ``generate_snow`` tags them; by TERRAIN_TAG; snow made before the tag existed: by its
    name, "<terrain> Snow" or "<terrain> Snow LOD<n>"), coarsest level last."""
    terrain = snow_terrain(terrain)
    if not terrain:
        return []
    names = json.dumps(sorted(o.name for o in terrain))
    base = _cover_base_name(terrain) + " Snow"
    found = []
    for obj in snow_objects(scene):
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

    def __init__(self, objects=(), warnings=()):
        super().__init__(objects)
        self.warnings = list(warnings)


TERRAIN_TYPES = {"MESH", "CURVE", "SURFACE", "META", "FONT"}


def snow_terrain(objects) -> list:
    """The objects of ``objects`` snow can be generated over (what ``generate_snow`` covers and ``covers_of``
    looks up): geometry and collection instances (their instances are covered, as geometry-nodes instances of a
    mesh are); other empties, cameras, lights... are left out."""
    return [o for o in objects if o.type in TERRAIN_TYPES or _instances_collection(o)]


def _check_bend_settings(scene):
    """The scene's bend settings, checked before snow that takes the bend is built (raises SnowInputError)."""
    try:
        bend_nodes.params_from_scene(scene).validate()
    except core_bend.BendError as exc:
        raise SnowInputError(f"The terrain is bent, so the snow takes the scene's bend, but the bend settings are "
                             f"refused: {exc}") from None


def generate_snow(scene, objects, depsgraph, mask_group: str = "", mask_image=None,
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
    stale = evaluated_check(scene, "generate the snow again")
    not_evaluated = [f"{o.name} {stale(o)}" for o in terrain if stale(o) is not None]
    if not_evaluated:  # its stale place and mesh would put the snow where the terrain was when last shown
        raise SnowInputError("; ".join(not_evaluated))
    occluders = _occluder_objects(scene, {o.name for o in terrain})
    with _Unbent(terrain + occluders) as unbent:
        if unbent.muted:
            depsgraph = bpy.context.evaluated_depsgraph_get()
        tris, mask = terrain_triangles(terrain, depsgraph, mask_group)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        pixels = uvs = None
        if mask_image is not None:
            pixels, uvs = image_and_uvs(terrain, depsgraph, mask_image)
        occ = [t for t, _w in objects_triangles(occluders, depsgraph, counts=_instance_rendered)]
    occ = np.concatenate(occ) if occ else None
    bent = {n for n, _m in unbent.muted} & {o.name for o in terrain}
    if bent:
        _check_bend_settings(scene)
    cover = core_snow.generate_cover(tris, cover_params(scene), occluder_tris=occ, mask_weights=mask,
                                     mask_uvs=uvs, mask_pixels=pixels)
    # all checks passed: build the meshes
    coll = ensure_snow_collection(scene)
    material = snow_nodes.ensure_material()
    base = _cover_base_name(terrain)
    old = {int(o[SNOW_TAG]): o for o in covers_of(scene, terrain)} if replace else {}
    made = GeneratedSnow()
    for level, lod in enumerate(cover.lods):
        name = f"{base} Snow" + (f" LOD{level}" if len(cover.lods) > 1 else "")
        mesh = mesh_from_cover(name, lod)
        mesh.materials.append(material)
        obj = old.pop(level, None)
        if obj is not None:  # regenerate in place: the object stays, its mesh is the new one
            previous, obj.data = obj.data, mesh
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
        obj[TERRAIN_TAG] = json.dumps(sorted(o.name for o in terrain))
        obj["envfx_surface_spacing"] = [v * 2 ** level for v in cover.surface_spacing]
        made.append(obj)
    for obj in old.values():  # levels of detail the new cover does not have
        mesh = obj.data
        bpy.data.objects.remove(obj)
        if mesh is not None and mesh.users == 0:
            bpy.data.meshes.remove(mesh)
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


def mesh_from_cover(name: str, lod: core_snow.CoverMesh):
    mesh = bpy.data.meshes.new(name)
    nv, nf = lod.vertices.shape[0], lod.faces.shape[0]
    mesh.vertices.add(nv)
    mesh.attributes["position"].data.foreach_set("vector", lod.vertices.astype(np.float32).ravel())
    mesh.loops.add(nf * 4)
    mesh.polygons.add(nf)
    mesh.polygons.foreach_set("loop_start", np.arange(0, nf * 4, 4, dtype=np.int32))
    mesh.loops.foreach_set("vertex_index", lod.faces.astype(np.int32).ravel())
    mesh.update(calc_edges=True)
    mesh.validate(clean_customdata=False)
    attr = mesh.attributes.new("snow_thickness", "FLOAT", "POINT")
    attr.data.foreach_set("value", lod.thickness.astype(np.float32))
    mesh.polygons.foreach_set("use_smooth", np.ones(nf, dtype=bool))
    mesh.update()
    return mesh


# --- actors -----------------------------------------------------------------------------------------------

def _actor_extent(obj, corners=None):
    """(world size x, y, z measured along the actor's own heading, height of its origin above its lowest point)
    of the box ``corners`` (8, 3) in the object's space (default: its bounding box).

    The size is taken in the actor's heading (its rotation about world Z taken out), so an actor's radius is the
    same whichever way it faces: the live trails (built when the actors change) and a bake (started at any
    frame) give a walking, turning actor one radius. The world matrix brings in the parents' scale, and a
    negative scale gives the same size as a positive one."""
    if corners is None:
        corners = np.array([list(c) for c in obj.bound_box], dtype=np.float64)
    m = bridge.matrix_to_numpy(obj.matrix_world)
    rel = corners @ m[:3, :3].T  # world offsets of the bounding box corners from the origin
    hx, hy = m[0, 0], m[1, 0]  # the heading: the local X axis seen from above ...
    if hx * hx + hy * hy < 1e-18:  # ... or, with X upright, the local Y axis turned back by 90 degrees
        hx, hy = m[1, 1], -m[0, 1]
    n = float(np.hypot(hx, hy))
    c, s = (hx / n, hy / n) if n > 0 else (1.0, 0.0)
    x = c * rel[:, 0] + s * rel[:, 1]
    y = -s * rel[:, 0] + c * rel[:, 1]
    dims = np.array([np.ptp(x), np.ptp(y), np.ptp(rel[:, 2])])
    return dims, float(-rel[:, 2].min())


def bent_actors(scene) -> list:
    """The actors of ``scene`` that show a bend (their measure needs their evaluated mesh, ``_unbent_box``)."""
    coll = scene.envfx.snow.actors
    return [o for o in coll.all_objects if bend_nodes.shown_group(o) is not None] if coll is not None else []


def _unbent_box(obj, scene, depsgraph=None):
    """The 8 corners (object space) of the bounding box of ``obj`` as its modifiers before the bend make it, for an
    actor that shows a bend; None otherwise. ``bound_box`` includes every modifier, the bend too: an actor away
    from the player's flat zone would measure its feet lower by the bend's drop there, sink below the snow and
    carve nothing. The bend moves a point along world Z only, by a drop that depends on its world X and Y, so
    adding it back to the evaluated vertices (``core.bend.inverse``) gives them exactly as before the bend.
    Read in ``depsgraph`` (default: the context's)."""
    group = bend_nodes.shown_group(obj)
    if group is None or obj.type != "MESH" or scene != getattr(bpy.context, "scene", None):
        return None
    depsgraph = depsgraph or bpy.context.evaluated_depsgraph_get()
    local = bridge.evaluated_positions(obj, depsgraph).astype(np.float64)
    if not len(local):
        return None
    owner = common.group_owner(group) or scene
    params = bend_nodes.params_shown_in(scene, owner)
    m = bridge.matrix_to_numpy(obj.evaluated_get(depsgraph).matrix_world)
    if core_bend.is_flattened(m):
        return None
    world = core_bend.inverse(local @ m[:3, :3].T + m[:3, 3], params)
    local = np.linalg.solve(m[:3, :3], (world - m[:3, 3]).T).T
    return _box_corners(local.min(axis=0), local.max(axis=0))


def _box_corners(lo, hi) -> np.ndarray:
    """(8, 3) corners of the axis-aligned box from ``lo`` to ``hi``."""
    return np.array([(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])],
                    dtype=np.float64)


def measure_actor(obj, scene, depsgraph=None):
    """(radius, depth, bottom offset) of the actor ``obj`` as it is now, or why it does not touch snow (a str).
    With ``depsgraph``, as evaluated there (the buffer bake measures each actor at each frame it bakes: an actor
    whose size is animated, or a hidden one the context's evaluation leaves at an old frame)."""
    if obj.type not in ACTOR_TYPES:
        return f"{obj.type.lower()} objects do not touch snow"
    s = scene.envfx.snow
    o = obj.envfx.snow
    ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    if obj.type == "EMPTY":
        # its display size in world units (parents' and negative scale included, as for meshes); its origin is its
        # bottom
        k = float(ev.empty_display_size)
        dims = _actor_extent(ev, _box_corners((-k,) * 3, (k,) * 3))[0] if o.radius <= 0 else (0.0, 0.0, 0.0)
        offset = 0.0
    else:
        dims, offset = _actor_extent(ev, _unbent_box(obj, scene, depsgraph))
    radius, depth = core_snow.actor_size(dims, o.radius, o.depth, s.thickness)
    if radius <= 0:
        return NO_SIZE
    return radius, depth, offset


NO_SIZE = "has no size: set its Snow Radius"  # measure_actor's reason for an actor of size 0 (now)


def actor_specs(scene, sizeless: bool = False):
    """([(name, radius, depth, bottom offset)], {name: why skipped}) for the scene's actor collection. A bent
    actor is measured as before its bend (``_unbent_box``), so it carves where it physically stands. With
    ``sizeless``, an actor of size 0 now (a keyed grow-in: the buffer bake measures it at each frame) counts, as
    radius 0, instead of being skipped."""
    s = scene.envfx.snow
    coll = s.actors
    if coll is None:
        raise SnowInputError("No actor collection: choose the collection of snow actors in the Snow panel "
                             "(scene.envfx.snow.actors)",
                             cli="No actor collection: pass --actors COLLECTION (the collection of snow actors)")
    if bpy.data.collections.get(coll.name) is None:
        raise SnowInputError(f"The actor collection {coll.name!r} was deleted: choose another",
                             cli=f"The actor collection {coll.name!r} was deleted: pass --actors COLLECTION")
    specs, skipped = [], {}
    for obj in sorted(coll.all_objects, key=lambda o: o.name):
        measured = measure_actor(obj, scene)
        if sizeless and measured == NO_SIZE:
            specs.append((obj.name, 0.0, 0.0, 0.0))
        elif isinstance(measured, str):
            skipped[obj.name] = measured
        else:
            specs.append((obj.name, *measured))
    if not specs:
        why = "; ".join(f"{n} ({r})" for n, r in skipped.items())
        raise SnowInputError(f"The actor collection {coll.name!r} has no usable actors" + (f": {why}" if why else
                             ": add characters to it"))
    return specs, skipped


# --- live trails ------------------------------------------------------------------------------------------

def trails_modifiers(obj):
    """The object's live-trails modifiers (of any scene's trails group)."""
    return [m for m in obj.modifiers if m.type == "NODES" and snow_nodes.is_trails_group(m.node_group)]


def _cannot_carry_snow_reason(obj) -> str | None:
    if obj.type != "MESH":
        return f"{obj.type.lower()} objects cannot carry snow"
    return linked_reason(obj)


def add_trails(scene, objects) -> tuple[list, dict]:
    """Give ``objects`` (snow meshes) the live trails; returns (changed names, skipped {name: why}). Snow with
    the trails of another scene of the file (linked into both) takes this scene's trails and actors."""
    specs, skipped = actor_specs(scene)
    candidates = changeable(objects, ObjectsResult(skipped=skipped), _cannot_carry_snow_reason)
    if not candidates and not any(trails_modifiers(o) for o in objects):
        raise SnowInputError("No snow mesh to add trails to: generate snow first or select snow meshes",
                             cli="No snow mesh to add trails to: add --generate --objects TERRAIN to make the snow "
                             "first")
    tree = snow_nodes.ensure_trails(scene, specs)
    targets = []
    for obj in candidates:
        # snow with the trails of another scene (linked into both) or of another file takes this scene's
        previous = common.move_to_group(trails_modifiers(obj), tree,
                                        lambda o=obj: bridge.add_modifier_before_bend(o, MODIFIER_NAME, tree))
        if previous == tree:
            continue
        for mod in trails_modifiers(obj):
            snow_nodes.drive_modifier(obj, mod, specs)  # also drops the drivers of the other group's actors
        targets.append(obj)
    _give_coverage(scene, specs)
    sync_surfaces(scene, tree)
    return [o.name for o in targets], skipped


def claim_appended(scene) -> list:
    """Snow with live trails appended into ``scene`` from another file, or a library override of such snow,
    takes the scene's trails and actors (when the scene has usable actors; else it keeps its own). Returns the
    names that joined."""
    users = common.orphan_users(scene, snow_nodes.KIND)
    if not users:
        return []
    objects = list({obj.name: obj for obj, _mod in users}.values())
    try:
        add_trails(scene, objects)
    except SnowInputError:
        return []
    return [obj.name for obj in objects]


def _give_coverage(scene, specs):
    """Actors get the snow_coverage attribute where they are in the snow."""
    coverage = snow_nodes.ensure_coverage(scene)
    for name, *_ in specs:
        actor = bpy.data.objects[name]
        if actor.type not in COVERAGE_TYPES or actor.library is not None:
            continue
        mods = [m for m in actor.modifiers if m.type == "NODES" and common.is_scene_group(
            m.node_group, snow_nodes.COVERAGE_KIND, snow_nodes.COVERAGE_GROUP)]
        # another scene's or file's coverage becomes this one's
        common.move_to_group(mods, coverage,
                             lambda a=actor: bridge.add_modifier_before_bend(a, COVERAGE_MODIFIER, coverage))


# --- following the actors ---------------------------------------------------------------------------------
# The app handlers (handlers.py) call follow_actors on every frame change and dependency-graph update: actors
# added to or removed from the actor collection, or given another Snow Radius / Snow Depth, change the trails
# without pressing Add Trails again; so does an actor whose world scale changes (animated, or a parent's). Cheap
# when nothing changed: the collection's object names, the actors' world scales and the group's actor stamp
# are compared with what they were; the actors' sizes are measured again only after a change.

_followed: dict = {}  # scene name -> signature of what the trails were last brought up to date with
_clean_later: set = set()  # names of scenes follow_actors found left-overs in (see clean_up_pending)
_surface_users: dict = {}  # scene name -> the user counts of its surfaces' snow at surfaces_left_scene's last look


def forget_followed(scene=None):
    """After loading a file, or when an actor's Snow Radius / Snow Depth changes: check every scene again (or
    ``scene``). After loading, nothing is left to clean up either."""
    if scene is not None:
        _followed.pop(scene.name, None)
        return
    _followed.clear()
    _clean_later.clear()
    _surface_users.clear()


def surfaces_left_scene(scene) -> bool:
    """Whether an object of ``scene``'s snow surfaces collection is in none of the scenes that read it any more
    (unlinked or moved out, not deleted). For the dependency-graph handler when collections changed (edits, not
    frames). It looks again only when a snow mesh's user count or the scene's object count changed since the last
    look (unlinking a snow mesh takes one of its users; moving it to a collection outside the scene keeps its
    users but takes an object from the scene). Among 5000 objects the check costs ~0.2 ms, and a look ~30 us more
    per snow mesh."""
    coll = snow_nodes.surfaces_for(scene)
    if coll is None or not coll.objects:
        return False
    users = (len(scene.objects), *((obj.name, obj.users) for obj in coll.objects))
    if _surface_users.get(scene.name) == users:
        return False
    _surface_users[scene.name] = users
    readers = [s for s in bpy.data.scenes if snow_nodes.surfaces_for(s) == coll]
    return any(not any(common.in_scene(obj, s) for s in readers) for obj in coll.objects)


def _signature(scene, tree):
    # the group's users and the file's objects: snow copied (Shift-D), deleted or losing its trails by hand
    # changes which snow the actors sink into (the scene's surfaces collection). (The file's object count, not
    # the scene's: counting a scene's objects walks its collections, ~90 us a frame for 2000 objects here, ~3x
    # the file's.)
    own = (tree.users, len(bpy.data.objects))
    coll = scene.envfx.snow.actors
    if coll is None:
        return ("", (), (), tree.get(snow_nodes.ACTORS_KEY), own)
    objs = coll.all_objects
    # an actor's size follows its world scale (a character that grows, or squashes and stretches): ~2 us an actor
    scales = tuple(tuple(round(v, 4) for v in o.matrix_world.to_scale()) for o in objs if o.type in ACTOR_TYPES)
    return (coll.name, tuple(objs.keys()), scales, tree.get(snow_nodes.ACTORS_KEY), own)


def trails_users(scene, tree=None) -> list:
    """The objects of ``scene`` that carry the scene's live trails."""
    tree = tree or snow_nodes.group_for(scene)
    if tree is None:
        return []
    return common.users_in(scene, tree)


def scene_has_trails(scene, tree=None) -> bool:
    """Whether an object of ``scene`` carries the scene's live trails (a scene without them leaves its group
    alone: no rebuild for its actors)."""
    return bool(trails_users(scene, tree))


def sync_surfaces(scene, tree=None) -> bool:
    """The scene's snow surfaces collection (what its actors' coverage reads) holds exactly the objects of the
    scene that carry the scene's trails: copies made with Shift-D join, deleted snow and snow whose trails were
    removed leave. A collection other scenes share (scenes that share their snow, a Linked Copy) holds those of
    each of them. True when it changed."""
    coll = snow_nodes.surfaces_for(scene)
    if coll is None or coll.library is not None:
        return False
    wanted = {obj.name: obj for obj in trails_users(scene, tree)}
    for other in bpy.data.scenes:
        if other != scene and snow_nodes.surfaces_for(other) == coll:
            wanted.update((obj.name, obj) for obj in trails_users(other))
    changed = False
    for obj in list(coll.objects):
        if obj.name not in wanted:
            coll.objects.unlink(obj)
            changed = True
    for name, obj in wanted.items():
        if name not in coll.objects:
            coll.objects.link(obj)
            changed = True
    return changed


def claim_legacy_surfaces(scenes=None) -> list:
    """A file saved before each scene had its own snow surfaces collection (one "EnvFX Snow Surfaces" that every
    scene's coverage group read): each scene whose coverage group reads a collection but that has none of its own
    gets one (the first takes the old one over) and it is brought up to date, so syncing one scene no longer takes
    the other scenes' snow out of what their actors sink into. A coverage group two scenes share (a scene copy)
    is left to its split. Returns the names of the scenes that got one; run after a file is loaded."""
    claimed = []
    for scene in bpy.data.scenes if scenes is None else scenes:
        if snow_nodes.surfaces_for(scene) is not None:
            continue
        coverage = common.scene_group(scene, snow_nodes.COVERAGE_KIND, snow_nodes.COVERAGE_GROUP)
        if coverage is None or snow_nodes.SURFACES_NODE not in coverage.nodes:
            continue
        if any(s != scene for s in common.scenes_using(coverage, snow_nodes.COVERAGE_KIND)):
            continue
        socket = coverage.nodes[snow_nodes.SURFACES_NODE].inputs["Collection"]
        coll = snow_nodes.ensure_surfaces_collection(scene, socket.default_value)
        if socket.default_value != coll:
            socket.default_value = coll
        sync_surfaces(scene)
        claimed.append(scene.name)
    return claimed


_SCENE_KEYS = (common.scene_key(snow_nodes.KIND), common.scene_key(snow_nodes.COVERAGE_KIND), snow_nodes.SURFACES_KEY)


def drop_copied_pointers(scenes) -> list:
    """Scenes of ``scenes`` that point at the snow groups or surfaces collection of another scene (Scene > New >
    Copy Settings and Linked Copy copy the scene's properties) but have no snow carrying those trails let go of
    them, so the scene that uses them keeps its surfaces in sync and Remove Trails can remove them. Returns the
    names of the scenes that let go."""
    dropped = []
    for scene in scenes:
        shared = [key for key in _SCENE_KEYS if scene.get(key) is not None
                  and any(other != scene and other.get(key) == scene.get(key) for other in bpy.data.scenes)]
        if not shared or scene_has_trails(scene):
            continue
        for key in shared:
            del scene[key]
        dropped.append(scene.name)
    return dropped


def _shares_groups(scene, tree) -> bool:
    """Whether ``scene`` still shares its trails or coverage group with another scene (a scene copy)."""
    if any(s != scene for s in common.scenes_using(tree, snow_nodes.KIND)):
        return True
    coverage = common.scene_group(scene, snow_nodes.COVERAGE_KIND, snow_nodes.COVERAGE_GROUP)
    return coverage is not None and any(s != scene for s in common.scenes_using(coverage, snow_nodes.COVERAGE_KIND))


def follow_actors(scene, may_split: bool = True) -> bool | None:
    """Bring the live trails up to date with ``scene``'s actor collection; True when they changed. Only the
    actor part of the trails group is rebuilt: the trails already carved stay. An empty collection (or one
    without usable actors) leaves the trails as they are, with no actor stamping. The scene's snow surfaces
    follow the snow that carries its trails.

    A scene that still shares its groups with the scene it was copied from gets its own here (unless the two
    share their snow, ``snow_nodes.shares_snow``: a Linked Copy keeps one set of groups); with
    ``may_split=False`` (Blender's frame_change_pre, see handlers.py) nothing is done and None is returned, to be
    called again after the frame change; so it is when the actors changed and one of them is bent (it is measured
    on its evaluated mesh, ``_unbent_box``, which frame_change_pre must not evaluate). A scene none of whose snow
    carries its trails any more, or whose snow kept the drivers of a trails modifier removed by hand, is booked
    for ``clean_up_pending``."""
    tree = snow_nodes.group_for(scene)
    if tree is None or tree.users == 0 or tree.library is not None:
        return False
    sig = _signature(scene, tree)
    if _followed.get(scene.name) == sig:
        return False
    if _shares_groups(scene, tree) and not snow_nodes.shares_snow(scene, tree):  # a copy: a split, or let go
        if not may_split:
            return None
        if drop_copied_pointers(bpy.data.scenes):  # a Copy Settings without snow
            tree = snow_nodes.group_for(scene)
            if tree is None:
                return False
            sig = _signature(scene, tree)
    if any(_stale_trails_drivers(o) for o in snow_objects(scene) if o.animation_data is not None):
        _clean_later.add(scene.name)
    if not scene_has_trails(scene, tree):  # no snow of the scene has its trails (any more)
        sync_surfaces(scene, tree)
        _followed[scene.name] = _signature(scene, tree)
        _clean_later.add(scene.name)
        return False
    if not may_split and bent_actors(scene):  # a bent actor is measured on its evaluated mesh: not in there
        return None
    try:
        specs = actor_specs(scene)[0]
    except SnowInputError:
        specs = []
    changed = tree.get(snow_nodes.ACTORS_KEY) != snow_nodes._actor_stamp(specs)
    if changed:
        tree = snow_nodes.ensure_trails(scene, specs)
        _give_coverage(scene, specs)
    sync_surfaces(scene, tree)
    _followed[scene.name] = _signature(scene, tree)
    return changed


# a library override cannot remove a modifier that came from its library: what to do instead
_SWITCH_OFF_INSTEAD = ("switch it off instead (the modifier's viewport and render toggles), or make it local "
                       "(Object > Relations > Make Local)")


def _stale_trails_drivers(obj) -> list:
    """The drivers of ``obj`` that drove the actor inputs of a trails modifier that is gone (removed by hand with
    the X or Apply: Blender keeps the drivers, invalid, and a later modifier of that name would take them)."""
    if obj.animation_data is None:
        return []
    names = {m.name for m in obj.modifiers}
    stale = []
    for fc in obj.animation_data.drivers:
        if not fc.data_path.startswith('modifiers["'):
            continue
        name = fc.data_path[len('modifiers["'):].split('"]', 1)[0]
        if name in names:
            continue
        ours = fc.driver.variables and all(v.name == "loc" and v.type == "TRANSFORMS" for v in fc.driver.variables)
        if name.startswith(MODIFIER_NAME) or ours:
            stale.append(fc)
    return stale


def remove_trails(objects, scene=None) -> ObjectsResult:
    """Remove the live trails from ``objects`` (snow meshes), with their actor drivers, and the drivers a trails
    modifier removed by hand left behind. When no snow of ``scene`` (default: the context's) carries its trails
    any more, its actors lose their snow coverage, and its trails and coverage groups (unless something else uses
    them) and its snow surfaces collection go too."""
    scene = scene or bpy.context.scene
    result = ObjectsResult()
    for obj in changeable(objects, result):
        mods = trails_modifiers(obj)
        stale = _stale_trails_drivers(obj)
        if not mods and not stale:
            result.unchanged.append(obj.name)
            continue
        reason = kept_by_override_reason(obj, mods, "live trails", _SWITCH_OFF_INSTEAD) if mods else None
        if reason is not None:
            result.skipped[obj.name] = reason
            continue
        for mod in mods:
            snow_nodes.undrive_modifier(obj, mod)
            obj.modifiers.remove(mod)
        for fc in _stale_trails_drivers(obj):
            obj.animation_data.drivers.remove(fc)
        result.changed.append(obj.name)
    tree = snow_nodes.group_for(scene)
    claim_legacy_surfaces([scene])  # a file saved before scenes had their own (and not loaded since)
    drop_copied_pointers([s for s in bpy.data.scenes if s != scene])  # copies without snow let go of its groups
    sync_surfaces(scene, tree)
    if not scene_has_trails(scene, tree):
        _remove_scene_snow_groups(scene, tree)
    return result


# --- clean-up of trails removed by hand ---------------------------------------------------------------------
# A trails modifier removed by hand (its X, or Apply) leaves its actor drivers on the snow, and once no snow of
# the scene carries the trails (removed, deleted or unlinked from the scene) the actors keep their coverage
# modifiers, evaluated every frame for nothing, and the file keeps the groups and the surfaces collection.
# follow_actors (called from the frame and dependency-graph handlers) only books the scene: removing modifiers,
# drivers, node groups or collections while Blender evaluates the scene can crash it. clean_up_pending does the
# work at a safe point: a one-shot bpy.app.timers callback (the main loop, between events, outside any
# evaluation: like an operator), and save_pre (before the file is written: no evaluation runs; it also covers
# background scripts, which run no timers).

def pending_clean_up() -> bool:
    """Whether a scene is booked for ``clean_up_pending`` (cheap: the frame handlers ask)."""
    return bool(_clean_later)


def clean_up_dropped_trails(scene) -> ObjectsResult | None:
    """What Remove Trails does for trails that went by other means: the drivers a trails modifier removed by hand
    left on ``scene``'s snow go, and when no snow of the scene carries its trails any more, its actors' coverage
    modifiers, its trails and coverage groups (unless something else uses them) and its surfaces collection go.
    Snow that still carries the trails keeps them. None when there was nothing to do."""
    tree = snow_nodes.group_for(scene)
    stale = [o for o in snow_objects(scene) if o.animation_data is not None and o.library is None
             and not trails_modifiers(o) and _stale_trails_drivers(o)]
    if not stale and (tree is None or scene_has_trails(scene, tree)):
        return None
    return remove_trails(stale, scene)


def clean_up_pending(scenes=None) -> list:
    """Clean up (``clean_up_dropped_trails``) the scenes follow_actors booked, or ``scenes``. Not from a frame or
    dependency-graph handler (see above). Returns the names of the scenes cleaned up."""
    if scenes is None:
        scenes = [bpy.data.scenes[n] for n in sorted(_clean_later) if n in bpy.data.scenes]
    _clean_later.clear()
    return [scene.name for scene in scenes if clean_up_dropped_trails(scene) is not None]


def _used_by_modifiers(tree) -> bool:
    return any(m.type == "NODES" and m.node_group == tree for o in bpy.data.objects for m in o.modifiers)


def _remove_scene_snow_groups(scene, tree):
    """No snow of ``scene`` carries its trails: its actors' coverage modifiers, its coverage and trails groups
    (when no other object uses them and no other scene has them) and its surfaces collection go. A group with a
    fake user, or nested in another node group, is kept, and stays the scene's (as ``common.release_if_unused``
    keeps one): this runs at every save and from the clean-up timer, not only when asked."""
    coverage = common.scene_group(scene, snow_nodes.COVERAGE_KIND, snow_nodes.COVERAGE_GROUP)
    if coverage is not None and common.scenes_using(coverage, snow_nodes.COVERAGE_KIND) in ([], [scene]):
        for obj in scene.objects:
            if obj.library is not None or obj.override_library is not None:
                continue
            for mod in [m for m in obj.modifiers if m.type == "NODES" and m.node_group == coverage]:
                obj.modifiers.remove(mod)
    kept = set()
    for group, kind in ((coverage, snow_nodes.COVERAGE_KIND), (tree, snow_nodes.KIND)):
        if group is None or _used_by_modifiers(group):
            continue
        scenes = common.scenes_using(group, kind)
        if scenes not in ([], [scene]):
            continue
        if group.use_fake_user or group.users > len(scenes):  # kept by the user, or nested in another group
            kept.add(common.scene_key(kind))
            continue
        bpy.data.node_groups.remove(group)
    surfaces = snow_nodes.surfaces_for(scene)
    if surfaces is not None and not snow_nodes.surfaces_shared(scene, surfaces) and surfaces.library is None:
        bpy.data.collections.remove(surfaces)
    for key in (common.scene_key(snow_nodes.KIND), common.scene_key(snow_nodes.COVERAGE_KIND), snow_nodes.SURFACES_KEY):
        if key in scene and key not in kept:
            del scene[key]
    _followed.pop(scene.name, None)


# --- interaction buffer bake ------------------------------------------------------------------------------

def stamp_params(scene) -> core_snow.StampParams:
    s = scene.envfx.snow
    fps = scene.render.fps / scene.render.fps_base
    return core_snow.StampParams(rim_height=s.rim_height, rim_width=s.rim_width, fade_height=s.fade_height,
                                 refill_rate=s.refill_rate, fps=fps)


def _output_folder(path: str) -> str:
    """The Snow bake's Output Folder, refused when blank or relative to a .blend file never saved."""
    return output_folder(path, "The output folder",
                         "No output folder: set the Snow bake's Output Folder (scene.envfx.snow.output_dir)",
                         SnowInputError)


def _check_output_dir(path: str) -> str:
    path = _output_folder(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise SnowInputError(f"The output folder {path!r} is a file, not a folder: choose a folder",
                             cli=f"The output folder {path!r} is a file, not a folder: pass a folder as --out-dir")
    probe = path
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe.rstrip(os.sep))
    if not probe or not os.path.isdir(probe) or not os.access(probe, os.W_OK):
        raise SnowInputError(f"The output folder {path!r} cannot be written: choose a writable folder",
                             cli=f"The output folder {path!r} cannot be written: pass a writable --out-dir")
    return path


def bake_inputs(scene):
    """Validate the bake settings (raises SnowInputError / core_snow.SnowError; nothing changes). The snow meshes'
    data is read, so none may be in Edit Mode."""
    refuse_edit_mode(snow_objects(scene), SnowInputError)
    s = scene.envfx.snow
    if s.frame_end < s.frame_start:
        raise SnowInputError(f"The frame range {s.frame_start}-{s.frame_end} is reversed: set End >= Start",
                             cli=f"The file's frame range {s.frame_start}-{s.frame_end} is reversed: pass --frames "
                             "START:END")
    frame = bpy.types.Scene.bl_rna.properties["frame_current"]
    if s.frame_start < frame.hard_min or s.frame_end > frame.hard_max:  # a frame change would stop at the limit
        raise SnowInputError(f"The frame range {s.frame_start}-{s.frame_end} goes beyond Blender's frames "
                             f"({frame.hard_min} to {frame.hard_max}): set Start and End within them",
                             cli=f"The file's frame range {s.frame_start}-{s.frame_end} goes beyond Blender's frames "
                             f"({frame.hard_min} to {frame.hard_max}): pass --frames START:END within them")
    core_snow.BufferParams(resolution=int(s.buffer_resolution), size=float(s.buffer_size)).validate()
    if s.framing == "FOLLOW" and s.pivot is None:
        raise SnowInputError("Follow-pivot framing needs a pivot: choose the player or camera to follow",
                             cli="--framing FOLLOW needs a pivot: pass --pivot OBJECT (the player or camera to "
                             "follow)")
    out = _check_output_dir(s.output_dir)
    # before the frames are stepped through: a bake that cannot fit on the disk is refused at once
    core_snow.check_disk_space(out, int(s.buffer_resolution), *bake_counts(scene))
    specs, skipped = actor_specs(scene, sizeless=True)  # sizes are measured at each baked frame
    return out, specs, skipped


def range_warning(scene, first: int, last: int, sequence: bool = True) -> str | None:
    """What a bake of frames ``first``..``last`` misses of ``scene``'s frame range, or None. Snow driven by a
    sequence holds the last baked frame after them and is untouched before them; by the final state only, it
    shows that state at every frame."""
    missed = []
    if last < scene.frame_end:
        missed.append(f"after frame {last} the snow holds frame {last}'s trails (what the actors do up to the "
                      f"scene's end, {scene.frame_end}, is not in it)")
    if first > scene.frame_start and sequence:
        missed.append(f"before frame {first} the snow is untouched (the scene starts at {scene.frame_start})")
    if not missed:
        return None
    return (f"The bake covers frames {first}-{last}, not the scene's {scene.frame_start}-{scene.frame_end}: "
            + "; ".join(missed) + ". To follow the actors all through, bake the scene's frames (the Snow bake's "
            "Start and End)")


def bake_counts(scene) -> tuple[int, int]:
    """(the images the buffer bake writes, the frames it steps through): every frame, or the last only."""
    s = scene.envfx.snow
    frames = s.frame_end - s.frame_start + 1
    return (frames if s.sequence else 1), frames


TRACK_PROBE = "EnvFX Snow Bake Probe"


def _add_track_probe(scene, names):
    """A temporary empty in the scene that depends on the objects ``names`` (a Copy Transforms constraint each),
    so stepping the frames evaluates them wherever they are: an actor in a collection disabled in viewports,
    excluded from the view layer or hidden itself is not in the scene's evaluation, and its ``matrix_world``
    would keep the frame it was last evaluated at; as a dependency of a visible object it is evaluated. Returns
    the probe's name (``_remove_track_probe`` removes it)."""
    probe = bpy.data.objects.new(TRACK_PROBE, None)
    probe.hide_render = True
    for n in dict.fromkeys(names):
        con = probe.constraints.new("COPY_TRANSFORMS")
        con.target = bpy.data.objects[n]
    scene.collection.objects.link(probe)
    return probe.name


def _remove_track_probe(name):
    probe = bpy.data.objects.get(name)
    if probe is not None:
        bpy.data.objects.remove(probe)


def bake_job(scene):
    """Generator: gather the actors' paths over the frame range, bake the buffer into the output folder.
    Yields progress; returns a ``core.snow.BakeResult``. The scene's frame and modifiers are restored."""
    out, _specs, _ = bake_inputs(scene)
    s = scene.envfx.snow
    frames = list(range(s.frame_start, s.frame_end + 1))
    # every actor is measured at each frame (its size may be animated, and one without a size at the current
    # frame may have one at another), so the bake does not depend on the frame it was started at
    names = sorted(o.name for o in s.actors.all_objects if o.type in ACTOR_TYPES)
    tracks = np.zeros((len(frames), len(names), 3))
    radii, depths = np.zeros((len(frames), len(names))), np.zeros((len(frames), len(names)))
    pivot_track = np.zeros((len(frames), 3)) if s.framing == "FOLLOW" else None
    old_frame = scene.frame_current
    from . import snow_render  # (imports this module)

    # the snow meshes' own trails are not needed to find the actors: switch them off while stepping
    muted = [(o.name, m.name) for o in snow_objects(scene) for m in trails_modifiers(o) if m.show_viewport]
    # these frame changes simulate nothing; switched on again afterwards, the trails start over
    with snow_render.not_simulating(scene):
        for on, mn in muted:
            bpy.data.objects[on].modifiers[mn].show_viewport = False
        probe = _add_track_probe(scene, names + ([s.pivot.name] if pivot_track is not None else []))
        try:
            for i, f in enumerate(frames):
                scene.frame_set(f)
                depsgraph = bpy.context.evaluated_depsgraph_get()
                for j, n in enumerate(names):
                    obj = bpy.data.objects[n]
                    measured = measure_actor(obj, scene, depsgraph)
                    radius, depth, offset = (0.0, 0.0, 0.0) if isinstance(measured, str) else measured
                    radii[i, j], depths[i, j] = radius, depth
                    tracks[i, j] = np.array(obj.evaluated_get(depsgraph).matrix_world.translation) - (0.0, 0.0, offset)
                if pivot_track is not None:
                    pivot_track[i] = tuple(s.pivot.evaluated_get(depsgraph).matrix_world.translation)
                yield 0.3 * (i + 1) / len(frames)
        finally:
            _remove_track_probe(probe)
            scene.frame_set(old_frame)
            for on, mn in muted:
                bpy.data.objects[on].modifiers[mn].show_viewport = True
    sized = radii.max(axis=0) > 0  # an actor without a size at any baked frame is left out
    if not sized.any():
        raise SnowInputError(f"No actor of {s.actors.name!r} has a size at any frame of the bake "
                             f"({s.frame_start}-{s.frame_end}): set their Snow Radius, or scale them up within "
                             f"the frames")
    tracks, radii, depths = tracks[:, sized], radii[:, sized], depths[:, sized]
    snow = snow_objects(scene)
    # the snow at rest (its mesh data, no trails or bend), as the live trails' vertical fade sees it
    snow_tris = [rest_triangles(o) for o in snow if o.get(SNOW_TAG) == 0 and o.type == "MESH"]
    snow_tris = np.concatenate(snow_tris) if snow_tris else np.zeros((0, 3, 3))
    occ_tris = None
    if s.occluders is not None:
        occ_tris = collection_triangles(scene, s.occluders)  # as the live trails read them
        if not occ_tris.shape[0]:
            occ_tris = None
    if s.framing == "AREA":
        if snow_tris.shape[0]:
            pts = snow_tris.reshape(-1, 3)
        else:
            pts = tracks.reshape(-1, 3)
        lo, hi = pts[:, :2].min(0), pts[:, :2].max(0)
        margin = float(radii.max()) * 2.0
        size = float(max(hi - lo)) + 2.0 * margin
        origin = (float(lo[0] - margin), float(lo[1] - margin))
    else:
        size, origin = float(s.buffer_size), (0.0, 0.0)
    buf = core_snow.BufferParams(resolution=int(s.buffer_resolution), size=size, framing=s.framing, origin=origin,
                                 occluder_depth=float(s.thickness))
    surface = None
    if snow_tris.shape[0]:
        # rest surface of the snow on the buffer's grid (whole area), for the vertical fade
        lo_all = snow_tris.reshape(-1, 3)[:, :2].min(0)
        hi_all = snow_tris.reshape(-1, 3)[:, :2].max(0)
        texel = min(buf.texel, float(max(hi_all - lo_all)) / 64 or buf.texel)
        shape = (int(np.ceil((hi_all[1] - lo_all[1]) / texel)) + 1, int(np.ceil((hi_all[0] - lo_all[0]) / texel)) + 1)
        if shape[0] * shape[1] <= 64_000_000:
            z, _, _ = core_snow.rasterize_top(snow_tris, lo_all, texel, shape)
            surface = core_snow.HeightField(lo_all, texel, z)
    job = core_snow.bake_job(tracks, radii, depths, stamp_params(scene), buf, frame_start=s.frame_start,
                             pivot_track=pivot_track, surface=surface, occluder_tris=occ_tris, out_dir=out,
                             sequence=s.sequence, unit_scale=bend_ops.unit_scale(scene))
    try:
        while True:
            yield 0.3 + 0.7 * next(job)
    except StopIteration as stop:
        refresh_buffer_groups(out)  # snow driven by this folder's bake shows it as it is now (its frame range)
        return stop.value
    finally:
        job.close()


def refresh_buffer_groups(folder: str | None = None) -> list:
    """Bring the Snow from Bake groups up to date with the bakes they show: a group saved by an older EnvFX is
    rebuilt in place, and every group takes its bake's frame range and window from the ``snow_buffer.json`` beside
    its images as it is now (a bake again into the same folder, over another range, is the bake the snow shows).
    ``folder``: only the groups showing that folder's bake. A group whose bake cannot be read, or now is a single
    image where it was a sequence (or the other way round), is left alone (Snow from Bake again sets it up).
    Returns the groups updated."""
    done = []
    for tree in list(bpy.data.node_groups):
        if not snow_nodes.is_buffer_group(tree) or tree.library is not None or "Buffer" not in tree.nodes:
            continue
        image = tree.nodes["Buffer"].inputs["Image"].default_value
        if image is None or image.library is not None:
            continue
        where = os.path.dirname(os.path.normpath(bpy.path.abspath(image.filepath)))
        if folder is not None and where != os.path.normpath(folder):
            continue
        try:
            meta = core_snow.read_buffer_metadata(os.path.join(where, "snow_buffer.json"))
        except (OSError, core_snow.SnowError):
            continue
        if bool(meta["sequence"]) != (image.source == "SEQUENCE"):
            continue
        snow_nodes.ensure_buffer_group(image, meta)
        image.reload()
        done.append(tree)
    return done


# --- snow driven by the bake -----------------------------------------------------------------------------

BUFFER_MODIFIER = "EnvFX Snow Buffer"


def drive_from_bake(scene, objects, out_dir: str = "") -> ObjectsResult:
    """Offset ``objects`` (snow meshes) by the baked buffer in ``out_dir`` (default: the scene's output
    folder) instead of the live trails, which are switched off (linked objects are skipped). An empty folder
    setting, or one relative to a .blend file never saved, is refused as Bake Interaction Buffer refuses it."""

    result = ObjectsResult()
    targets = [o for o in changeable(objects, result) if o.type == "MESH" and is_snow_object(o)]
    if not targets:
        why = f" ({result.skipped_text()})" if result.skipped else ""
        raise SnowInputError(f"No snow mesh to drive{why}: generate snow first or select snow meshes")
    out_dir = _output_folder(out_dir or scene.envfx.snow.output_dir)
    meta_path = os.path.join(out_dir, "snow_buffer.json")
    if not os.path.isfile(meta_path):
        raise SnowInputError(f"No baked buffer in {out_dir!r}: bake the interaction buffer first")
    try:
        meta = core_snow.read_buffer_metadata(meta_path)
    except core_snow.SnowError as exc:
        raise SnowInputError(f"{meta_path} is damaged or not an EnvFX bake: {exc}. Bake the interaction buffer "
                             f"again into {out_dir!r}, or choose the folder of an EnvFX bake") from None
    files = [f["file"] for f in meta["frames"] if "file" in f]
    if not files or not all(os.path.isfile(os.path.join(out_dir, f)) for f in files):
        raise SnowInputError(f"The bake in {out_dir!r} is incomplete (images missing): bake it again")
    if meta["sequence"] and meta["frames"][0]["frame"] < 0:
        raise SnowInputError(f"The bake in {out_dir!r} numbers its images from frame {meta['frames'][0]['frame']} "
                             f"({files[0]}), and Blender's image sequences cannot read frames below 0: bake from "
                             f"frame 0 or later, or only the final frame (Image Sequence off)")
    warning = range_warning(scene, meta["frames"][0]["frame"], meta["frames"][-1]["frame"], meta["sequence"])
    if warning is not None:
        result.warnings.append(warning)
    image = bpy.data.images.load(os.path.join(out_dir, files[0]), check_existing=True)
    image.filepath = path_in_file(os.path.join(out_dir, files[0]))
    image.reload()
    image.source = "SEQUENCE" if meta["sequence"] else "FILE"
    image.colorspace_settings.name = "Non-Color"
    image.alpha_mode = "CHANNEL_PACKED"
    tree = snow_nodes.ensure_buffer_group(image, meta)
    for obj in targets:
        for mod in trails_modifiers(obj):
            mod.show_viewport = mod.show_render = False
        mods = buffer_modifiers(obj)
        if mods:  # driven by another bake before: this one replaces it (never two buffers on one mesh)
            mods[0].node_group = tree
            for extra in mods[1:]:
                obj.modifiers.remove(extra)
        else:
            bridge.add_modifier_before_bend(obj, BUFFER_MODIFIER, tree)
        result.changed.append(obj.name)
    return result


def buffer_modifiers(obj):
    """The object's modifiers that offset it by a baked buffer (of any bake)."""
    return [m for m in obj.modifiers if m.type == "NODES" and snow_nodes.is_buffer_group(m.node_group)]


def drive_from_trails(objects) -> ObjectsResult:
    """Back to the live trails: remove the buffer modifiers, switch the trails on again."""
    result = ObjectsResult()
    for obj in changeable(objects, result):
        mods = buffer_modifiers(obj)
        reason = kept_by_override_reason(obj, mods, "baked buffer", _SWITCH_OFF_INSTEAD)
        if reason is not None:
            result.skipped[obj.name] = reason
            continue
        for mod in mods:
            obj.modifiers.remove(mod)
        for mod in trails_modifiers(obj):
            mod.show_viewport = mod.show_render = True
        (result.changed if mods else result.unchanged).append(obj.name)
    return result


# --- operators --------------------------------------------------------------------------------------------

class ENVFX_OT_snow_generate(NeedsScene, bpy.types.Operator):
    """Cover the selected objects with snow: up-facing faces only, nothing under other objects, tapered
    borders, drift and noise, levels of detail"""

    bl_idname = "envfx.snow_generate"
    bl_label = "Generate Snow"
    bl_options = {"REGISTER", "UNDO"}


    def execute(self, context):
        objects = [o for o in getattr(context, "selected_objects", []) or [] if not is_snow_object(o)]
        try:
            context.view_layer.update()
            s = context.scene.envfx.snow
            made = generate_snow(context.scene, objects, context.evaluated_depsgraph_get(), s.density_mask,
                                 s.density_texture)
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


class ENVFX_OT_snow_trails_add(bpy.types.Operator):
    """Let the scene's snow actors carve live trails into the selected snow meshes (all snow meshes when none
    is selected)"""

    bl_idname = "envfx.snow_trails_add"
    bl_label = "Add Trails"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        selected = [o for o in getattr(context, "selected_objects", []) or [] if is_snow_object(o)]
        objects = selected or snow_objects(context.scene)
        try:
            changed, skipped = add_trails(context.scene, objects)
        except (SnowInputError, core_snow.SnowError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if skipped:
            self.report({"WARNING"}, "Skipped: " + "; ".join(f"{n} ({r})" for n, r in skipped.items()))
        self.report({"INFO"}, f"Trails on {len(changed)} new snow mesh(es); actors updated")
        return {"FINISHED"}


class ENVFX_OT_snow_trails_remove(bpy.types.Operator):
    """Remove the live trails from the selected snow meshes (all snow meshes when none is selected)"""

    bl_idname = "envfx.snow_trails_remove"
    bl_label = "Remove Trails"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        selected = [o for o in getattr(context, "selected_objects", []) or [] if is_snow_object(o)]
        report_result(self, remove_trails(selected or snow_objects(context.scene), context.scene),
                      "Removed the trails from")
        return {"FINISHED"}


class ENVFX_OT_snow_bake_buffer(progress.ModalJobOperator, bpy.types.Operator):
    """Bake the top-down interaction buffer (R snow, G grass sway, B ripples, A grass push-down) over the frame
    range into EXR images and a JSON file for the game"""

    bl_idname = "envfx.snow_bake_buffer"
    bl_label = "Bake Interaction Buffer"
    bl_options = {"REGISTER"}
    job_label = "Snow buffer bake"

    @classmethod
    def poll(cls, context):
        names = in_edit_mode(snow_objects(context.scene))  # the bake reads the snow meshes' data
        if names:
            cls.poll_message_set(edit_mode_text(names))
        return not names

    def make_job(self, context):
        try:
            bake_inputs(context.scene)
        except (SnowInputError, core_snow.SnowError) as exc:
            self.report({"ERROR"}, str(exc))
            return None
        return bake_job(context.scene)

    def finish(self, context, result):
        s = context.scene.envfx.snow
        warning = range_warning(context.scene, s.frame_start, s.frame_end, s.sequence)
        if warning is not None:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, f"Wrote {len(result.files)} image(s) and {os.path.basename(result.metadata_path)}")
        return {"FINISHED"}


class ENVFX_OT_snow_drive_from_bake(bpy.types.Operator):
    """Offset the snow meshes by the baked interaction buffer (in the Output Folder) instead of the live trails,
    or back to the live trails"""

    bl_idname = "envfx.snow_drive_from_bake"
    bl_label = "Snow from Bake"
    bl_options = {"REGISTER", "UNDO"}

    use_bake: BoolProperty(name="Use Bake", description="On: the bake drives the snow; off: the live trails",
                           default=True)

    def execute(self, context):
        selected = [o for o in getattr(context, "selected_objects", []) or [] if is_snow_object(o)]
        objects = selected or snow_objects(context.scene)
        if not self.use_bake:
            report_result(self, drive_from_trails(objects), "The live trails drive")
            return {"FINISHED"}
        try:
            result = drive_from_bake(context.scene, objects)
        except (SnowInputError, OSError, RuntimeError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        report_result(self, result, "The bake drives")
        return {"FINISHED"}


classes = (
    ENVFX_OT_snow_generate,
    ENVFX_OT_snow_drive_from_bake,
    ENVFX_OT_snow_trails_add,
    ENVFX_OT_snow_trails_remove,
    ENVFX_OT_snow_bake_buffer,
)
