"""What snow lies on and what keeps it off, read from Blender: the terrain's triangles (with a density mask's
weights or a density texture's UVs), and the occluders over it (the objects while the snow is generated, the
occluder collection as the live trails read it)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import cast

import bpy
import numpy as np

from ... import bridge
from ...bridge import evaluated_parts, instances_collection, objects_triangles, world_triangles
from ...shader_nodes import common
from ...shader_nodes import snow as snow_nodes
from .collection import SnowInputError, is_snow_object, update_view_layer

OCCLUDER_TYPES = bridge.GEOMETRY_OBJECT_TYPES  # what keeps snow from under it: what draws a surface


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


def instance_rendered(instancer: bpy.types.Object, source: bpy.types.Object) -> bool:
    """Whether an instance of ``source`` made by ``instancer`` is rendered and drawn as a surface: each object of a
    collection instance by its own settings (geometry-nodes, particle and vertex instances are drawn whatever
    their source is set to: scatter sources are usually hidden)."""
    return not instances_collection(instancer) or _drawn_as_rendered(source)


def occluder_objects(scene: bpy.types.Scene, exclude: Collection[str]) -> list[bpy.types.Object]:
    """The objects of ``scene`` that keep snow from under them while it is generated: the rendered geometry (its
    instances included, ``instance_rendered``) shown in the viewport, but not ``exclude`` (names), the snow or
    the actors."""
    actors = set()
    coll = bridge.envfx_settings(scene).snow.actors
    if coll is not None:
        actors = {o.name for o in coll.all_objects}
    rendered = _rendered_objects(scene)
    return [o for o in scene.objects
            if (o.type in OCCLUDER_TYPES or instances_collection(o)) and o.name not in exclude
            and not is_snow_object(o) and o.name not in actors and o.visible_get() and _drawn_as_rendered(o)
            and o.as_pointer() in rendered]


MASK_ATTRIBUTE = "envfx_snow_mask"


def _mask_reader(group_name: str) -> bpy.types.NodeTree:
    """A throw-away node group copying vertex group ``group_name`` into the point attribute MASK_ATTRIBUTE
    (vertex groups have no bulk accessor; attributes do)."""
    tree = bpy.data.node_groups.new(
        "EnvFX Snow Mask Reader", "GeometryNodeTree")  # pyright: ignore[reportArgumentType] -- the 4.2 stubs list only "DUMMY" for the tree type
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    b = snow_nodes.SnowBuilder(tree)
    gi = b.node("NodeGroupInput", "In")
    go = b.node("NodeGroupOutput", "Out")
    geo = b.store(gi.outputs[0], MASK_ATTRIBUTE, b.named(group_name).outputs["Attribute"])
    b.link(geo, go.inputs[0])
    return tree


OCCLUDER_READER = "EnvFX Snow Occluder Reader"


def collection_triangles(scene: bpy.types.Scene, coll: bpy.types.Collection) -> np.ndarray:
    """(T, 3, 3) world triangles of everything the collection ``coll`` draws, its instances realized, read the way
    the live trails read their occluders (Collection Info in Original space, Realize Instances): an object of the
    collection hidden in the viewport counts, and so do the instances it makes. A temporary object of ``scene``
    evaluates it and is removed again, with its mesh and node group."""
    tree = bpy.data.node_groups.new(
        OCCLUDER_READER, "GeometryNodeTree")  # pyright: ignore[reportArgumentType] -- the 4.2 stubs list only "DUMMY" for the tree type
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
        cast(bpy.types.NodesModifier, obj.modifiers.new(OCCLUDER_READER, "NODES")).node_group = tree
        scene.collection.objects.link(obj)
        update_view_layer()
        return world_triangles(obj, bpy.context.evaluated_depsgraph_get())[0]
    finally:
        if obj is not None:
            bpy.data.objects.remove(obj)
        if mesh is not None:
            bpy.data.meshes.remove(mesh)
        bpy.data.node_groups.remove(tree)
        update_view_layer()


def terrain_triangles(objects: Sequence[bpy.types.Object], depsgraph: bpy.types.Depsgraph,
                      mask_group: str = "") -> tuple[np.ndarray, np.ndarray | None]:
    """World triangles of all ``objects`` (their instances too, but not the helpers inside a collection instance
    that are never rendered or drawn only as an outline: ``instance_rendered``) and, with ``mask_group``,
    per-corner weights of that vertex group (objects without the group count as weight 1). Temporary modifiers
    are removed again."""
    if not mask_group:
        return np.concatenate([t for t, _w in objects_triangles(objects, depsgraph, counts=instance_rendered)]), None
    with_group = [o for o in objects if o.vertex_groups.get(mask_group) is not None]
    if not with_group:
        raise SnowInputError(f"No vertex group named {mask_group!r} on {', '.join(o.name for o in objects)}: "
                             f"pick the density mask's vertex group or clear it")
    tree = _mask_reader(mask_group)
    added = []
    try:
        for obj in with_group:
            mod = cast(bpy.types.NodesModifier, obj.modifiers.new("EnvFX Snow Mask Reader", "NODES"))
            mod.node_group = tree
            added.append((obj, mod))
        update_view_layer()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        tris, weights = [], []
        for obj, (t, w) in zip(objects, objects_triangles(objects, depsgraph, MASK_ATTRIBUTE, instance_rendered)):
            tris.append(t)
            weights.append(w if w is not None and obj in with_group else np.ones((t.shape[0], 3)))
        return np.concatenate(tris), np.concatenate(weights)
    finally:
        for obj, mod in added:
            obj.modifiers.remove(mod)
        bpy.data.node_groups.remove(tree)
        update_view_layer()


def image_and_uvs(objects: Sequence[bpy.types.Object], depsgraph: bpy.types.Depsgraph,
                  image: bpy.types.Image) -> tuple[np.ndarray, np.ndarray]:
    """(pixels (H, W, C), UVs (T, 3, 2) of every triangle of ``objects``, corner for corner with
    ``terrain_triangles``) for a density texture."""
    w, h = image.size
    if w == 0 or h == 0:
        raise SnowInputError(f"The density texture {image.name!r} has no pixels (missing file?): load an image")
    pixels = bridge.image_pixels(image)
    out = []
    for obj, parts in zip(objects, evaluated_parts(objects, depsgraph, with_uvs=True, counts=instance_rendered)):
        if any(uv is None for _t, _w, uv in parts):
            raise SnowInputError(f"{obj.name} has no UV map: the density texture needs one (unwrap it, or clear "
                                 f"the texture)")
        out.extend(uv for _t, _w, uv in parts)
    return pixels, np.concatenate(out) if out else np.zeros((0, 3, 2), dtype=np.float32)
