"""Per-frame cost as playback pays it: frame changes of an effect's scene against a reference scene, interleaved.

Timeline playback changes the frame (``scene.frame_set``: animation, drivers, the frame handlers, then the
dependency graph), and that is what a per-frame effect costs a user. The per-frame benchmarks (``bench_bend.py``,
``bench_snow.py``) build the effect's scene and, in the same process, a reference scene holding the same geometry
with a minimal time-dependent modifier (``reference_scene``: a bare Set Position whose offset follows the scene
time, so every frame re-evaluates it). ``frame_change`` then steps both scenes through the same frames, one
frame of one scene then the same frame of the other (which scene goes first alternates frame by frame), for many
rounds: a slow spell of the machine (it is shared) touches both alike. Every scene's dependency graph is made
active (``ensure_depsgraph``), as the graph of the scene a window plays is: an active graph costs more, and only
the file's own scene had one before (its frame changes measured against an inactive reference, which inflated
every ratio: 4-7x between two identical scenes on Blender 4.2, 1.35-1.9x on 5.0). The ratio quoted is per frame
effect / reference; ``summary`` gives its median and spread (min, quartiles, max) over the rounds' medians,
and ``per_frame`` the ratio against the frame number (for effects whose cost changes over a shot).

Used as a module from the benchmarks (``sys.path`` holds ``benchmarks/``); it needs ``bpy``.
"""

from __future__ import annotations

import json
import os
import statistics
import time

import bpy
import numpy as np

REFERENCE_GROUP = "Reference Set Position"


def emit(**kw):
    """Print one JSON line, with the Blender version, the machine's load and its CPU count."""
    kw.setdefault("blender", bpy.app.version_string)
    kw["loadavg_1min"] = round(os.getloadavg()[0], 2)
    kw["cpus"] = os.cpu_count()
    print(json.dumps(kw), flush=True)


def grid_mesh(name: str, side: int, size: float = 100.0):
    """A side x side vertex grid of quads over ``size`` metres (faces, edges and normals to keep up to date)."""
    xs = np.linspace(-size / 2, size / 2, side, dtype=np.float32)
    gx, gy = np.meshgrid(xs, xs)
    co = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size, np.float32)], axis=1)
    idx = np.arange(side * side, dtype=np.int32).reshape(side, side)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], axis=-1).reshape(-1)
    n_faces = (side - 1) ** 2
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(co))
    mesh.vertices.foreach_set("co", co.ravel())
    mesh.loops.add(len(quads))
    mesh.loops.foreach_set("vertex_index", quads)
    mesh.polygons.add(n_faces)
    mesh.polygons.foreach_set("loop_start", np.arange(0, 4 * n_faces, 4, dtype=np.int32))
    mesh.update(calc_edges=True)
    return mesh



def grass_mesh(name: str, blades: int, rng: np.random.Generator) -> tuple[bpy.types.Mesh, float]:
    """A field of ``blades`` grass blades, each a quad 2 cm wide and 0.3-0.5 m tall turned at random (drawn from
    ``rng``), scattered at 100 blades a square metre (250000 blades over 50 x 50 m): (the mesh, the field's side in
    metres)."""
    side = 50.0 * float(np.sqrt(blades / 250000.0))
    root = rng.uniform(-side / 2, side / 2, (blades, 2)).astype(np.float32)
    h = rng.uniform(0.3, 0.5, blades).astype(np.float32)
    a = rng.uniform(0.0, np.pi, blades).astype(np.float32)
    w = np.stack([0.01 * np.cos(a), 0.01 * np.sin(a)], 1)
    co = np.zeros((blades, 4, 3), np.float32)
    for k, (sign, up) in enumerate(((-1, 0), (1, 0), (1, 1), (-1, 1))):
        co[:, k, :2] = root + sign * w
        co[:, k, 2] = up * h
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(4 * blades)
    mesh.vertices.foreach_set("co", co.ravel())
    mesh.loops.add(4 * blades)
    mesh.loops.foreach_set("vertex_index", np.arange(4 * blades, dtype=np.int32))
    mesh.polygons.add(blades)
    mesh.polygons.foreach_set("loop_start", np.arange(0, 4 * blades, 4, dtype=np.int32))
    mesh.update(calc_edges=True)
    return mesh, side

def reference_group() -> bpy.types.NodeTree:
    """A bare time-dependent Set Position: every vertex moves by (0, 0, 1e-4 * scene seconds), so a frame change
    re-evaluates it, and it does as little per vertex as any modifier that moves vertices can."""
    tree = bpy.data.node_groups.get(REFERENCE_GROUP)
    if tree is not None:
        return tree
    tree = bpy.data.node_groups.new(
        REFERENCE_GROUP, "GeometryNodeTree")  # pyright: ignore[reportArgumentType] -- the 4.2 stubs list only "DUMMY" for the tree type
    interface = tree.interface  # (optional in the API stubs; a new group always has one)
    assert interface is not None
    interface.new_socket(name="Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    interface.new_socket(name="Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    gin = tree.nodes.new("NodeGroupInput")
    gout = tree.nodes.new("NodeGroupOutput")
    sp = tree.nodes.new("GeometryNodeSetPosition")
    time_node = tree.nodes.new("GeometryNodeInputSceneTime")
    scale = tree.nodes.new("ShaderNodeMath")
    assert isinstance(scale, bpy.types.ShaderNodeMath)  # (the stubs type a new node as any Node)
    scale.operation = "MULTIPLY"
    factor = scale.inputs[1]
    assert isinstance(factor, bpy.types.NodeSocketFloat)  # (and its sockets as NodeSocket, without a value)
    factor.default_value = 1e-4
    offset = tree.nodes.new("ShaderNodeCombineXYZ")
    tree.links.new(time_node.outputs["Seconds"], scale.inputs[0])
    tree.links.new(scale.outputs[0], offset.inputs["Z"])
    tree.links.new(offset.outputs[0], sp.inputs["Offset"])
    tree.links.new(gin.outputs[0], sp.inputs["Geometry"])
    tree.links.new(sp.outputs[0], gout.inputs[0])
    return tree


def new_scene(name: str, like) -> bpy.types.Scene:
    """An empty scene with ``like``'s frame range and rate, its dependency graph made (``frame_set`` only
    evaluates a scene that has one)."""
    scene = bpy.data.scenes.new(name)
    scene.frame_start, scene.frame_end = like.frame_start, like.frame_end
    scene.render.fps, scene.render.fps_base = like.render.fps, like.render.fps_base
    ensure_depsgraph(scene)
    return scene


def ensure_depsgraph(scene):
    """The dependency graph of ``scene``'s first view layer, made and made *active*, as the graph of the scene a
    window shows is (the scene a user plays). Every scene a benchmark compares must be active alike: Blender does
    more for an active graph (geometry nodes log their values for the node editor, evaluated data is synced
    back to the original), and the file's own scene is made active by the first ``evaluated_depsgraph_get``
    while a scene made here is not. Measured with two identical scenes (a bare Set Position on 1M vertices, frame
    changes, loaded machine): the active one cost 4-7x the other on Blender 4.2 and 1.35-1.9x on 5.0; both
    active, 0.96x and 1.06x."""
    with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
        return bpy.context.evaluated_depsgraph_get()


def objects_scene(like, meshes, name: str, locations=None) -> tuple[bpy.types.Scene, list[bpy.types.Object]]:
    """A scene (``new_scene``) holding one object per mesh of ``meshes`` (the same mesh data as the effect's
    objects, or copies of it), named ``name`` and its number, at ``locations`` when given; and those objects."""
    scene = new_scene(name, like)
    objects = []
    for i, mesh in enumerate(meshes):
        obj = bpy.data.objects.new(f"{name} {i}", mesh)
        if locations is not None:
            obj.location = locations[i]
        scene.collection.objects.link(obj)
        objects.append(obj)
    return scene, objects


def reference_scene(like, meshes, name: str = "Reference", locations=None) -> bpy.types.Scene:
    """``objects_scene`` with the reference modifier (``reference_group``) on each object."""
    scene, objects = objects_scene(like, meshes, name, locations)
    tree = reference_group()
    for obj in objects:
        mod = obj.modifiers.new("Reference", "NODES")
        assert isinstance(mod, bpy.types.NodesModifier)  # (the stubs type a new modifier as any Modifier)
        mod.node_group = tree
    return scene


def frame_change(effect, reference, frames, rounds: int, before_round=None) -> dict:
    """Seconds of ``scene.frame_set(f)`` for every frame ``f`` of ``frames`` but the first (set first, not
    timed), of the scene ``effect`` and of ``reference``, taking turns frame by frame (which goes first
    alternates), for ``rounds`` rounds. ``before_round(r)`` runs before round ``r`` (e.g. to restart a
    simulation so every round computes it afresh). Returns {"effect": [[s per frame] per round], "reference":
    ..., "frames": the timed frames}."""
    ensure_depsgraph(effect)
    ensure_depsgraph(reference)
    frames = list(frames)
    got = {"effect": [], "reference": [], "frames": frames[1:]}
    for r in range(rounds):
        if before_round is not None:
            before_round(r)
        effect.frame_set(frames[0])
        reference.frame_set(frames[0])
        t_eff, t_ref = [], []
        for i, f in enumerate(frames[1:]):
            order = ((effect, t_eff), (reference, t_ref)) if (i + r) % 2 == 0 else ((reference, t_ref),
                                                                                    (effect, t_eff))
            for scene, times in order:
                t0 = time.perf_counter()
                scene.frame_set(f)
                times.append(time.perf_counter() - t0)
        got["effect"].append(t_eff)
        got["reference"].append(t_ref)
    return got


def interleaved(pairs: dict, reference, frames, rounds: int) -> dict:
    """``frame_change`` of each scene of ``pairs`` (key -> scene) against ``reference``, the pairs taking turns
    round by round (a slow spell of a shared machine touches them alike): key -> {"effect", "reference",
    "frames"} with every round's lists, as ``summary`` reads them."""
    runs = {k: {"effect": [], "reference": [], "frames": []} for k in pairs}
    for _ in range(rounds):
        for key, scene in pairs.items():
            one = frame_change(scene, reference, frames, 1)
            for part in ("effect", "reference"):
                runs[key][part] += one[part]
            runs[key]["frames"] = one["frames"]
    return runs


def spread(values) -> dict:
    """median, min, first and third quartile, max of ``values`` (rounded)."""
    v = np.asarray(values, float)
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    return {"median": round(float(med), 3), "min": round(float(v.min()), 3), "q1": round(float(q1), 3),
            "q3": round(float(q3), 3), "max": round(float(v.max()), 3)}


def summary(got, skip: int = 2) -> dict:
    """The ratio effect / reference of ``frame_change``'s result: per round the ratio of the medians of its
    frames (the first ``skip`` frames of a round left out as warm-up), and its spread over the rounds; the
    medians of both scenes' seconds per frame."""
    eff = [statistics.median(t[skip:] or t) for t in got["effect"]]
    ref = [statistics.median(t[skip:] or t) for t in got["reference"]]
    return {"method": "frame_change", "quoted": True, "rounds": len(eff), "frames_per_round": len(got["frames"]),
            "effect_s": round(statistics.median(eff), 5), "reference_s": round(statistics.median(ref), 5),
            "ratio": spread([e / r for e, r in zip(eff, ref)])}


def per_frame(got, bins: int = 10) -> list:
    """The ratio against the frame number: the frames cut into ``bins`` consecutive spans; per span the ratio of
    effect to reference seconds, frame by frame (each frame's two scenes were timed back to back), with its
    median over the rounds and frames of the span and its spread. A list of {"frames": [first, last], ...}."""
    eff = np.asarray(got["effect"], float)
    ref = np.asarray(got["reference"], float)
    ratio = eff / ref
    frames = got["frames"]
    out = []
    for chunk in np.array_split(np.arange(len(frames)), min(bins, len(frames))):
        if chunk.size == 0:
            continue
        # per round, the median ratio over the span; then the spread over rounds
        per_round = np.median(ratio[:, chunk], axis=1)
        row = {"frames": [frames[chunk[0]], frames[chunk[-1]]],
               "effect_ms": round(float(np.median(eff[:, chunk])) * 1e3, 2),
               "reference_ms": round(float(np.median(ref[:, chunk])) * 1e3, 2)}
        row.update({f"ratio_{k}": v for k, v in spread(per_round).items()})
        out.append(row)
    return out
