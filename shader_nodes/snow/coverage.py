"""Actor snow coverage: the actors sink into the snow meshes of the scene's surfaces collection and get the
``snow_coverage`` attribute where they are in the snow (the "EnvFX Snow Coverage" group of each scene)."""

from __future__ import annotations

from typing import cast

import bpy

from .. import bend as bend_nodes
from .. import common
from .base import SnowBuilder
from .trails import _drive, _scene_group, shares_snow

# --- actor snow coverage ----------------------------------------------------------------------------------

COVERAGE_GROUP = "EnvFX Snow Coverage"
COVERAGE_KIND = "snow_coverage"
COVERAGE_VERSION = 3
COVERAGE_DRIVEN = {"Melt Time": "coverage_melt_time"}
SURFACES_COLLECTION = "EnvFX Snow Surfaces"  # not linked to a scene: the snow meshes the actors sink into
SURFACES_KEY = "envfx_snow_surfaces"  # the scene's ID property pointing at its surfaces collection
SURFACES_NODE = "Snow Surfaces"  # the coverage group's Collection Info node


def surfaces_for(scene: bpy.types.Scene) -> bpy.types.Collection | None:
    """The scene's snow surfaces collection, or None."""
    coll = scene.get(SURFACES_KEY)
    return coll if isinstance(coll, bpy.types.Collection) else None


def surfaces_shared(scene: bpy.types.Scene, coll: bpy.types.Collection) -> bool:
    """Whether another scene's surfaces collection is ``coll`` too (a scene copied from another, until it gets
    its own)."""
    return any(s != scene and s.get(SURFACES_KEY) == coll for s in bpy.data.scenes)


def ensure_surfaces_collection(scene: bpy.types.Scene, current: bpy.types.Collection | None = None,
                               keep_shared: bool = False) -> bpy.types.Collection:
    """The hidden collection of the snow meshes ``scene``'s actors sink into: one per scene, like the groups
    ("EnvFX Snow Surfaces", later ones "EnvFX Snow Surfaces (scene name)"). A scene without one takes ``current``
    (what its coverage group reads, in a file saved before scenes had their own) unless another scene has it; a
    scene copied from another gets its own (with ``keep_shared``, one sharing its snow keeps the shared one)."""
    coll = surfaces_for(scene) or current
    if coll is None or coll.library is not None or surfaces_shared(scene, coll) and not (
            keep_shared and coll == surfaces_for(scene)):
        taken = bpy.data.collections.get(SURFACES_COLLECTION) is not None
        coll = bpy.data.collections.new(f"{SURFACES_COLLECTION} ({scene.name})" if taken else SURFACES_COLLECTION)
    if scene.get(SURFACES_KEY) != coll:
        scene[SURFACES_KEY] = coll
    return coll


def _build_coverage(tree):
    b = SnowBuilder(tree)
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    common.socket(tree, "Band", "INPUT", "NodeSocketFloat", default=0.1, min_value=1e-6,
                  description="Height over which the coverage fades from 1 (in the snow) to 0 (above it)")
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    group_in = b.node("NodeGroupInput", "Group Input", location=(-1400, 0))
    group_out = b.node("NodeGroupOutput", "Group Output", location=(1400, 0))
    info = b.node("GeometryNodeCollectionInfo", SURFACES_NODE, transform_space="ORIGINAL")  # ensure_coverage sets it
    info.inputs["Separate Children"].default_value = False
    info.inputs["Reset Children"].default_value = False
    realize = b.node("GeometryNodeRealizeInstances", "Snow Real")
    b.link(info.outputs[0], realize.inputs[0])
    self_info = b.node("GeometryNodeObjectInfo", "Self Info", transform_space="ORIGINAL")
    b.link(b.node("GeometryNodeSelfObject", "Self").outputs[0], self_info.inputs["Object"])
    to_world = b.node("FunctionNodeTransformPoint", "To World")
    position = b.node("GeometryNodeInputPosition", "Position").outputs[0]
    b.link(position, to_world.inputs["Vector"])
    b.link(self_info.outputs["Transform"], to_world.inputs["Transform"])
    P = to_world.outputs[0]
    # the snow surface straight below (or above) the vertex: a ray down from far above
    ray = b.node("GeometryNodeRaycast", "Snow Below")
    b.link(realize.outputs[0], ray.inputs["Target Geometry"])
    b.link(b.vmath("ADD", P, b.vector("High", (0.0, 0.0, 1.0e4))), ray.inputs["Source Position"])
    ray.inputs["Ray Direction"].default_value = (0.0, 0.0, -1.0)
    ray.inputs["Ray Length"].default_value = 2.0e4
    hit = b.node("ShaderNodeSeparateXYZ", "Hit Sep")
    b.link(ray.outputs["Hit Position"], hit.inputs[0])
    pz = b.node("ShaderNodeSeparateXYZ", "P Sep")
    b.link(P, pz.inputs[0])
    # the ray hits the snow as its bend draws it, the actor's vertices are physical (before the actor's own bend):
    # the snow's physical height here is the hit's plus the drop its bend gives this vertex's world x, y
    # (common.build_bend_drop; 0 when the snow shows no bend)
    drop = common.build_bend_drop(b, group_in.outputs["Geometry"], position, self_info.outputs["Transform"],
                                  "Snow Drop")
    snow_z = b.math("ADD", hit.outputs["Z"], drop, label="Snow Z")
    band = group_in.outputs["Band"]
    cover = b.clamp01(b.math("DIVIDE", b.math("ADD", b.math("SUBTRACT", snow_z, pz.outputs["Z"]), band),
                             band), label="Coverage")
    cover = b.math("MULTIPLY", cover, ray.outputs["Is Hit"], label="Coverage Hit")
    # the layer stays on and melts linearly over "Melt Time" seconds (0: only while in the snow): a simulation
    # keeps last frame's coverage per point (the actor's topology does not change, so points match by index)
    melt = b.value("Melt Time", 0.0)
    sim_in = b.node("GeometryNodeSimulationInput", "Coverage Sim In")
    sim_out = b.node("GeometryNodeSimulationOutput", "Coverage Sim Out")
    sim_in.pair_with_output(sim_out)
    first = b.store(group_in.outputs["Geometry"], "snow_coverage", cover, label="Coverage First")
    b.link(first, sim_in.inputs["Geometry"])
    prev = b.sample_index(sim_in.outputs["Geometry"], b.named("snow_coverage").outputs["Attribute"],
                          b.node("GeometryNodeInputIndex", "Coverage Index").outputs[0], label="Coverage Prev")
    melted = b.math("SUBTRACT", prev, b.math("DIVIDE", sim_in.outputs["Delta Time"], b.math("MAXIMUM", melt, 1e-6)),
                    label="Coverage Melted")
    kept = b.math("MAXIMUM", cover, melted, label="Coverage Kept")
    geo = b.store(group_in.outputs["Geometry"], "snow_coverage", kept, label="Coverage Store")
    b.link(geo, sim_out.inputs["Geometry"])
    b.link(sim_out.outputs["Geometry"], group_out.inputs[0])


def ensure_coverage(scene) -> bpy.types.NodeTree:
    """"EnvFX Snow Coverage": the point attribute ``snow_coverage`` (0..1) on an actor, 1 where it is in the
    snow (below the trail-deformed snow surface), fading to 0 over Band above it; where the actor leaves the
    snow the layer melts away over ``scene.envfx.snow.coverage_melt_time`` seconds (a simulation). One group
    per scene, like the trails; scenes that share their snow (``shares_snow``) share it and its surfaces."""
    keep = shares_snow(scene)
    tree = _scene_group(scene, COVERAGE_KIND, COVERAGE_GROUP, str(COVERAGE_VERSION), _build_coverage, keep)
    surfaces = cast(bpy.types.NodeSocketCollection, tree.nodes[SURFACES_NODE].inputs["Collection"])
    coll = ensure_surfaces_collection(scene, surfaces.default_value, keep)
    if surfaces.default_value != coll:
        surfaces.default_value = coll
    _drive(scene, tree, COVERAGE_DRIVEN)
    common.point_bend_reader(tree, surfaces_bend(coll))
    return tree


def surfaces_bend(coll: bpy.types.Collection | None) -> bpy.types.NodeTree | None:
    """The bend the snow of the surfaces collection ``coll`` shows (the first one shown among its objects), or
    None. The coverage reads the snow as that bend draws it; all the scene's snow is taken to share one bend (a
    bent level bends its snow with its terrain): snow left unbent beside bent snow reads as if bent."""
    if coll is None:
        return None
    for obj in coll.objects:
        group = bend_nodes.shown_group(obj)
        if group is not None:
            return group
    return None


def sync_coverage_bend(scene) -> bool:
    """Point ``scene``'s coverage group at the bend its snow surfaces show (or at none). Returns whether anything
    changed."""
    tree = common.scene_group(scene, COVERAGE_KIND, COVERAGE_GROUP)
    if tree is None or tree.library is not None or tree.nodes.get(common.BEND_READER) is None:
        return False
    return common.point_bend_reader(tree, surfaces_bend(tree.nodes[SURFACES_NODE].inputs["Collection"].default_value))
