"""Per-frame cost of the world bend on a 1M-vertex mesh against a bare geometry-nodes Set Position.

usage: $(tools/venv.sh 5.0) benchmarks/bench_bend.py [--verts 1000000] [--repeats 15] [--rounds 7]
       [--objects 1000] [--frames 40] [--frame-rounds 9] [--props 5000] [--props-frames 10]
       [--props-rounds 3] [--only frame,grid,props,forced]

The quoted measure is by frame changes (``framebench``, the lines with "method": "frame_change", "quoted": true):
the bent grid's scene, its pivot keyed to walk along the forward axis, against a reference scene holding the same
grid with a bare time-dependent Set Position, their frames stepped alternately (``scene.frame_set``: animation,
drivers, frame handlers, the dependency graph, as playback pays them), the modes taking turns round after round;
then a level of --props small bent props (4 vertices each) against the same props with the reference modifier, and
its floors (``bend_props_floor``): the props with a minimal modifier following the pivot (one offset per object),
with one per-vertex operation, with the Runner's per-vertex operations on constant per-object values (and with 15
more single-value nodes: what a node costs a prop), and with the cheapest Runner bend that follows a moving pivot
(``pivot_runner_group``: exact for props neither rotated nor scaled). In the same rounds, the grid and the props
bent on the GPU (Bend on GPU, set up as a user does: in their material, no modifier; ``bend_gpu_per_frame`` per mode,
``bend_props_gpu_per_frame``): what a frame change costs the CPU then (the drawing's vertex displacement runs on the
GPU and is not in it).

The forced-update lines ("method": "forced_update", "quoted": false) are the older measure, kept beside it:
one JSON line per mode (PLANET with and without a flat spread): median seconds per evaluation of the
bend and of the bare Set Position (interleaved frame by frame in the same run), and their ratio: the median
over --rounds rounds, in which the modes take turns, of each round's ratio (with its min and max).
Re-evaluation is forced the way playback does it: the pivot moves (bend) or the object is tagged (bare), then
the depsgraph updates. A first line measures what one per-vertex square root costs against the bare Set
Position (PLANET with a flat spread needs one per vertex; the other modes none), and the floor of any bend: a Set
Position whose offset is computed per vertex from a single projection of the position (what every mode needs at
least once), against the bare one. A last line per mode measures a level of many small props (--objects, 4
vertices each): the bend's cost per frame against a minimal modifier that also follows the pivot, and the extra
time per object (the bend's per-object work: the object's matrix, the axes and the centre in its space).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import TYPE_CHECKING

import bpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # tests/blender/conftest.py imports tests.blender.api
sys.path.insert(0, os.path.join(ROOT, "tests", "blender"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import framebench  # noqa: E402  (benchmarks/ is on the path from here)
from tests.blender import api  # noqa: E402  (typed handles on the API that check at run time; ROOT is on the path)

if TYPE_CHECKING:  # the stubs' names for a Math node's operations (no such module at run time)
    from bpy.stub_internal.rna_enums import NodeMathItems

# (mode, spread, enabled): PLANET twice, with the default flat spread (a square root per vertex) and without one;
# last the bend switched off (scene.envfx.bend.enabled): the geometry should pass through
CASES = (("RUNNER", 2.0, True), ("RUNNER_2AXIS", 2.0, True), ("PLANET", 2.0, True), ("PLANET", 0.0, True),
         ("CYLINDER", 2.0, True), ("RUNNER", 2.0, False))
TARGETS = {"RUNNER": 1.25, "CYLINDER": 1.25, "RUNNER_2AXIS": 1.35, "PLANET": 1.35}
GPU_MODES = ("RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER")  # (Bend on GPU: a scene each, linked copies of one grid)


def enable():
    import addon_utils
    import importlib

    repo_dir = tempfile.mkdtemp(prefix="envfx-bench-")
    os.symlink(ROOT, os.path.join(repo_dir, "envfx"))
    api.preferences().extensions.repos.new(name="EnvFX Bench", module="envfx_bench",
                                           custom_directory=repo_dir, source="USER")
    addon_utils.enable("bl_ext.envfx_bench.envfx", default_set=True)
    return importlib.import_module("bl_ext.envfx_bench.envfx")


def grid(name, side):
    """A side x side vertex grid of quads (a real surface: faces, corners, normals to keep up to date)."""
    import numpy as np

    xs = np.linspace(-50, 50, side, dtype=np.float32)
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
    obj = bpy.data.objects.new(name, mesh)
    api.scene().collection.objects.link(obj)
    return obj


def bare_group():
    tree = api.new_tree("Bare Set Position", bpy.types.GeometryNodeTree)
    interface = api.of(bpy.types.NodeTreeInterface, tree.interface)
    interface.new_socket(name="Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    interface.new_socket(name="Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    gin = tree.nodes.new("NodeGroupInput")
    gout = tree.nodes.new("NodeGroupOutput")
    sp = tree.nodes.new("GeometryNodeSetPosition")
    api.socket(sp.inputs["Offset"]).default_value = (0.0, 0.0, 0.001)
    tree.links.new(gin.outputs[0], sp.inputs["Geometry"])
    tree.links.new(sp.outputs[0], gout.inputs[0])
    return tree


def root_group(name, operation):
    """Set Position by (0, 0, 1e-3 * op(|dot(p, (1, 1, 0))|)): with op = SQRT against op = ABSOLUTE it isolates
    what one per-vertex square root costs (the PLANET mode needs one: its drop depends on a horizontal
    distance)."""
    tree = bare_group()
    tree.name = name
    sp = next(n for n in tree.nodes if n.bl_idname == "GeometryNodeSetPosition")
    pos = tree.nodes.new("GeometryNodeInputPosition")
    dot = api.of(bpy.types.ShaderNodeVectorMath, tree.nodes.new("ShaderNodeVectorMath"))
    dot.operation = "DOT_PRODUCT"
    api.socket(dot.inputs[1]).default_value = (1.0, 1.0, 0.0)
    absolute = api.of(bpy.types.ShaderNodeMath, tree.nodes.new("ShaderNodeMath"))
    absolute.operation = "ABSOLUTE"
    op = api.of(bpy.types.ShaderNodeMath, tree.nodes.new("ShaderNodeMath"))
    op.operation = operation
    scale = api.of(bpy.types.ShaderNodeVectorMath, tree.nodes.new("ShaderNodeVectorMath"))
    scale.operation = "SCALE"
    api.socket(scale.inputs[0]).default_value = (0.0, 0.0, 1e-3)
    tree.links.new(pos.outputs[0], dot.inputs[0])
    tree.links.new(dot.outputs["Value"], absolute.inputs[0])
    tree.links.new(absolute.outputs[0], op.inputs[0])
    tree.links.new(op.outputs[0], scale.inputs["Scale"])
    tree.links.new(scale.outputs["Vector"], sp.inputs["Offset"])
    return tree


def time_objects(objects, repeats, rounds):
    """Best (over rounds) median seconds of one re-evaluation of each object, measured interleaved."""
    dg = bpy.context.evaluated_depsgraph_get()
    best = [float("inf")] * len(objects)
    for _round in range(rounds):
        times = [[] for _ in objects]
        for i in range(repeats + 2):
            for k, obj in enumerate(objects):
                obj.update_tag(refresh={"DATA"})
                t0 = time.perf_counter()
                dg.update()
                if i >= 2:
                    times[k].append(time.perf_counter() - t0)
        best = [min(b, statistics.median(t)) for b, t in zip(best, times)]
    return best


def root_cost(side, repeats, rounds):
    """One JSON line: the per-vertex cost of a square root, as a fraction of a bare Set Position, and the ratio of
    the cheapest computed offset (a dot product with the position, scaled: no bend can do with less) to it."""
    objs = []
    for name, operation in (("Root Bare", None), ("Root Abs", "ABSOLUTE"), ("Root Sqrt", "SQRT")):
        obj = grid(name, side)
        api.of(bpy.types.NodesModifier, obj.modifiers.new(name, "NODES")).node_group = (
            bare_group() if operation is None else root_group(name, operation))
        objs.append(obj)
    bare, with_abs, with_sqrt = time_objects(objs, repeats, rounds)
    for obj in objs:
        bpy.data.objects.remove(obj)
    print(json.dumps({
        "bench": "per_vertex_sqrt_cost", "blender": bpy.app.version_string, "vertices": side * side,
        "bare_set_position_s": round(bare, 5), "dot_abs_s": round(with_abs, 5), "dot_sqrt_s": round(with_sqrt, 5),
        "method": "forced_update", "quoted": False, "sqrt_cost_of_bare": round((with_sqrt - with_abs) / bare, 3),
        "offset_floor_ratio": round(with_abs / bare, 3),
        "loadavg_1min": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
    }), flush=True)


def pivot_group(pivot):
    """A minimal modifier that follows the pivot: every vertex moves by 1e-3 times the pivot's location."""
    tree = bare_group()
    tree.name = "Pivot Set Position"
    sp = next(n for n in tree.nodes if n.bl_idname == "GeometryNodeSetPosition")
    info = tree.nodes.new("GeometryNodeObjectInfo")
    api.socket(info.inputs["Object"]).default_value = pivot
    scale = api.of(bpy.types.ShaderNodeVectorMath, tree.nodes.new("ShaderNodeVectorMath"))
    scale.operation = "SCALE"
    api.socket(scale.inputs["Scale"]).default_value = 1e-3
    tree.links.new(info.outputs["Location"], scale.inputs[0])
    tree.links.new(scale.outputs["Vector"], sp.inputs["Offset"])
    return tree


def many_objects(envfx, count, repeats, rounds):
    """One JSON line per mode: ``count`` 4-vertex objects bent, against the same objects with a minimal modifier
    that follows the pivot; the two sets take turns (the other set hidden), the pivot moves every frame."""
    scene = api.scene()
    pivot = api.envfx(scene).bend.pivot
    follow = pivot_group(pivot)
    plain, bent = [], []
    for i in range(count):
        for group, name in ((plain, "Prop"), (bent, "Bent Prop")):
            obj = grid(f"{name} {i}", 2)
            obj.location = (i % 40, i // 40, 0.0)
            group.append(obj)
        api.of(bpy.types.NodesModifier, plain[-1].modifiers.new("Follow", "NODES")).node_group = follow
    envfx.operators.bend.add_bend(scene, bent)
    dg = bpy.context.evaluated_depsgraph_get()

    def frame_time(show, hide):
        for obj in hide:
            obj.hide_viewport = True
        for obj in show:
            obj.hide_viewport = False
        dg.update()
        times = []
        for i in range(repeats + 2):
            pivot.location.y = 0.01 * (i + 1)
            t0 = time.perf_counter()
            dg.update()
            times.append(time.perf_counter() - t0)
        return statistics.median(times[2:])

    for mode in ("RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER"):
        api.envfx(scene).bend.mode = mode
        got = {"plain": [], "bend": []}
        for _round in range(rounds):
            got["plain"].append(frame_time(plain, bent))
            got["bend"].append(frame_time(bent, plain))
        plain_s, bend_s = statistics.median(got["plain"]), statistics.median(got["bend"])
        print(json.dumps({
            "bench": "bend_many_objects", "method": "forced_update", "quoted": False,
            "blender": bpy.app.version_string, "mode": mode, "objects": count,
            "vertices_each": 4, "bend_frame_s": round(bend_s, 5), "follow_pivot_frame_s": round(plain_s, 5),
            "ratio": round(bend_s / plain_s, 3), "extra_per_object_us": round((bend_s - plain_s) / count * 1e6, 2),
            "loadavg_1min": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        }), flush=True)
    for obj in plain + bent:
        bpy.data.objects.remove(obj)


def keyed_empty(scene, frames: int, name: str = "Pivot"):
    """An Empty keyed to walk 0.05 m a frame diagonally (along either horizontal axis) from frame 1."""
    empty = bpy.data.objects.new(name, None)
    scene.collection.objects.link(empty)
    empty.location = (0.0, 0.0, 0.0)
    empty.keyframe_insert("location", frame=1)
    empty.location = (0.05 * frames, 0.05 * frames, 0.0)
    empty.keyframe_insert("location", frame=frames + 1)
    return empty


def keyed_pivot(scene, frames: int):
    """The bend's pivot, a keyed Empty (``keyed_empty``)."""
    scene.envfx.bend.pivot = keyed_empty(scene, frames)
    return scene.envfx.bend.pivot


def _floor_group(kind):
    """A time-dependent Set Position doing the least per vertex: ``one_op``, one vector operation on the position
    (the offset is the position scaled by the scene time); ``runner_ops``, the Runner's per-vertex operations
    with constant per-object values (dot, add, absolute, subtract, maximum, square, scale); ``runner_ops_15``, the
    same with 15 more single-value nodes before them (what a node costs each object, whatever it computes)."""
    tree = framebench.reference_group().copy()
    tree.name = f"Floor {kind}"
    nodes, links = tree.nodes, tree.links
    sp = next(n for n in nodes if n.bl_idname == "GeometryNodeSetPosition")
    seconds = next(n for n in nodes if n.bl_idname == "GeometryNodeInputSceneTime").outputs["Seconds"]
    pos = nodes.new("GeometryNodeInputPosition").outputs[0]
    if kind == "one_op":
        v = api.of(bpy.types.ShaderNodeVectorMath, nodes.new("ShaderNodeVectorMath"))
        v.operation = "SCALE"
        links.new(pos, v.inputs[0])
        links.new(seconds, v.inputs["Scale"])
        links.new(v.outputs["Vector"], sp.inputs["Offset"])
        return tree
    d = api.of(bpy.types.ShaderNodeVectorMath, nodes.new("ShaderNodeVectorMath"))
    d.operation = "DOT_PRODUCT"
    api.socket(d.inputs[1]).default_value = (0.0, 1.0, 0.0)
    links.new(pos, d.inputs[0])
    _runner_drop(tree, sp, d.outputs["Value"], "ADD", seconds)
    if kind == "runner_ops_15":  # 15 more single-value nodes (the scene time plus zero, 15 times) into the shift
        first = next(link.to_socket for link in links if link.from_socket == seconds and
                     getattr(link.to_node, "operation", "") == "ADD")  # (the drop's first step)
        assert first is not None  # (optional in the stubs: a link has both ends)
        shift = seconds
        for _ in range(15):
            m = api.of(bpy.types.ShaderNodeMath, nodes.new("ShaderNodeMath"))
            m.operation = "ADD"
            links.new(shift, m.inputs[0])
            api.socket(m.inputs[1]).default_value = 0.0
            shift = m.outputs[0]
        links.new(shift, first)
    return tree


def _runner_drop(tree, sp, along, first: "NodeMathItems", shift) -> None:
    """The Runner's per-vertex drop from the distance ``along`` the bend axis, into ``sp``'s offset: ``along``
    ``first`` (ADD or SUBTRACT) ``shift``, absolute, less 2, at least 0, squared, times (0, 0, -1e-3)."""
    nodes, links = tree.nodes, tree.links
    prev = along
    steps: "tuple[tuple[NodeMathItems, float | None], ...]" = (
        (first, None), ("ABSOLUTE", None), ("SUBTRACT", 2.0), ("MAXIMUM", 0.0))
    for op, value in steps:
        m = api.of(bpy.types.ShaderNodeMath, nodes.new("ShaderNodeMath"))
        m.operation = op
        links.new(prev, m.inputs[0])
        if value is None:
            links.new(shift, m.inputs[1])
        else:
            api.socket(m.inputs[1]).default_value = value
        prev = m.outputs[0]
    sq = api.of(bpy.types.ShaderNodeMath, nodes.new("ShaderNodeMath"))
    sq.operation = "MULTIPLY"
    links.new(prev, sq.inputs[0])
    links.new(prev, sq.inputs[1])
    v = api.of(bpy.types.ShaderNodeVectorMath, nodes.new("ShaderNodeVectorMath"))
    v.operation = "SCALE"
    api.socket(v.inputs[0]).default_value = (0.0, 0.0, -1e-3)
    links.new(sq.outputs[0], v.inputs["Scale"])
    links.new(v.outputs["Vector"], sp.inputs["Offset"])


def pivot_runner_group(pivot):
    """The cheapest modifier that bends a prop the Runner's way and follows a moving pivot: for a prop neither
    rotated nor scaled (object axes = world axes), the pivot's location in the prop's space read by one Object
    Info node (Relative) and projected once per object, then the Runner's per-vertex operations (dot, subtract,
    absolute, subtract, maximum, square, scale). What a bend of many props costs at the least in geometry nodes."""
    tree = bare_group()
    tree.name = "Pivot Runner"
    nodes, links = tree.nodes, tree.links
    sp = next(n for n in nodes if n.bl_idname == "GeometryNodeSetPosition")
    info = api.of(bpy.types.GeometryNodeObjectInfo, nodes.new("GeometryNodeObjectInfo"))
    info.transform_space = "RELATIVE"
    api.socket(info.inputs["Object"]).default_value = pivot
    c = api.of(bpy.types.ShaderNodeVectorMath, nodes.new("ShaderNodeVectorMath"))
    c.operation = "DOT_PRODUCT"
    api.socket(c.inputs[1]).default_value = (0.0, 1.0, 0.0)
    links.new(info.outputs["Location"], c.inputs[0])
    d = api.of(bpy.types.ShaderNodeVectorMath, nodes.new("ShaderNodeVectorMath"))
    d.operation = "DOT_PRODUCT"
    api.socket(d.inputs[1]).default_value = (0.0, 1.0, 0.0)
    links.new(nodes.new("GeometryNodeInputPosition").outputs[0], d.inputs[0])
    _runner_drop(tree, sp, d.outputs["Value"], "SUBTRACT", c.outputs["Value"])
    return tree


def _displace_scene(like, mesh, frames):
    """Another way Blender moves vertices per frame: a Displace modifier sampling a static 1D float image of the
    Runner's drop (a max(0, |u| - s)^2) at the vertex seen from a keyed Empty (texture coordinates Object), so
    nothing is updated per frame but the Empty's transform."""
    import numpy as np

    scene = framebench.new_scene("Displace", like)
    img = bpy.data.images.new("Drop", 4096, 1, float_buffer=True)
    u = np.linspace(-100.0, 100.0, 4096, dtype=np.float32)
    drop = 0.002 * np.maximum(np.abs(u) - 2.0, 0.0) ** 2
    api.pixels(img).foreach_set(np.repeat(drop, 4).astype(np.float32))
    tex = api.of(bpy.types.ImageTexture, bpy.data.textures.new("Drop", "IMAGE"))
    tex.image = img
    tex.extension = "EXTEND"
    empty = bpy.data.objects.new("Displace Pivot", None)
    scene.collection.objects.link(empty)
    empty.scale = (100.0, 100.0, 100.0)
    empty.location = (0.0, 0.0, 0.0)
    empty.keyframe_insert("location", frame=1)
    empty.location = (0.05 * frames, 0.05 * frames, 0.0)
    empty.keyframe_insert("location", frame=frames + 1)
    obj = bpy.data.objects.new("Displaced", mesh)
    mod = api.of(bpy.types.DisplaceModifier, obj.modifiers.new("Displace", "DISPLACE"))
    mod.texture, mod.texture_coords, mod.texture_coords_object = tex, "OBJECT", empty
    mod.direction, mod.space, mod.strength, mod.mid_level = "Z", "GLOBAL", -1.0, 0.0
    scene.collection.objects.link(obj)
    return scene


def floor_scenes(like, mesh, frames):
    """{name: scene} of the floors measured beside the bend: the least a Set Position computing its offset per
    vertex costs, the Runner's per-vertex operations alone, and a Displace modifier with a static image."""
    out = {}
    for kind in ("one_op", "runner_ops"):
        scene = framebench.new_scene(f"Floor {kind}", like)
        obj = bpy.data.objects.new(f"Floor {kind}", mesh)
        api.of(bpy.types.NodesModifier, obj.modifiers.new(kind, "NODES")).node_group = _floor_group(kind)
        scene.collection.objects.link(obj)
        out[f"floor_{kind}"] = scene
    out["displace_image"] = _displace_scene(like, mesh, frames)
    return out


def _node_material(name):
    """A material with nodes (Blender 4.2 makes one without; Bend on GPU works in the node tree)."""
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = True
    return mat


def frame_change_grid(envfx, side, frames, rounds):
    """One JSON line per case of CASES: the bent grid's frame changes against the reference scene's
    (``framebench``); the cases take turns round after round."""
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    scene.frame_start, scene.frame_end = 1, frames + 1
    mesh = framebench.grid_mesh("Grid", side)
    bent = bpy.data.objects.new("Bent", mesh)
    scene.collection.objects.link(bent)
    keyed_pivot(scene, frames)
    envfx.operators.bend.add_bend(scene, [bent])
    ref = framebench.reference_scene(scene, [mesh])
    floors = floor_scenes(scene, mesh, frames)
    # what the per-frame evaluation of the group's scene-setting drivers costs: a second scene bent the same way
    # (Runner; its own group) whose drivers are muted (the values stay as they are)
    muted = framebench.new_scene("Runner Drivers Muted", scene)
    obj = bpy.data.objects.new("Bent Muted", mesh)
    muted.collection.objects.link(obj)
    keyed_pivot(muted, frames)
    envfx.operators.bend.add_bend(muted, [obj])
    for fc in envfx.shader_nodes.bend.group_for(muted).animation_data.drivers:
        fc.mute = True
    floors["runner_drivers_muted"] = muted
    # the same grid bent on the GPU (Bend on GPU: in its material, no modifier), as a user sets it up, in each mode
    gpu_mesh = mesh.copy()
    for mode in GPU_MODES:
        gpu = framebench.new_scene(f"Grid on GPU {mode}", scene)
        gpu_grid = bpy.data.objects.new(f"Bent on GPU {mode}", gpu_mesh)
        if not gpu_mesh.materials:
            gpu_mesh.materials.append(_node_material("Grid"))
        gpu.collection.objects.link(gpu_grid)
        keyed_pivot(gpu, frames)
        api.envfx(gpu).bend.mode = mode
        api.envfx(gpu_grid).bend_gpu = True
        envfx.operators.bend.add_bend(gpu, [gpu_grid])
        floors[f"gpu {mode}"] = gpu
    s = api.envfx(scene).bend
    got = {case: {"effect": [], "reference": []} for case in (*CASES, *floors)}
    for _round in range(rounds):
        for case in (*CASES, *floors):
            if case in floors:
                effect = floors[case]
            else:
                effect = scene
                s.mode, s.spread, s.enabled = case
            res = framebench.frame_change(effect, ref, range(1, frames + 2), 1)
            for key in ("effect", "reference"):
                got[case][key] += res[key]
            got[case]["frames"] = res["frames"]
    for mode in GPU_MODES:
        framebench.emit(bench="bend_gpu_per_frame", mode=mode, vertices=side * side,
                        **framebench.summary(got.pop(f"gpu {mode}")), target_ratio=TARGETS[mode])
    for name in floors:
        if not name.startswith("gpu "):
            framebench.emit(bench="bend_floor_per_frame", floor=name, vertices=side * side,
                            **framebench.summary(got.pop(name)))
    for (mode, spread, enabled), res in got.items():
        framebench.emit(bench="bend_per_frame", mode=mode, spread=spread, enabled=enabled, vertices=side * side,
                        **framebench.summary(res), target_ratio=TARGETS[mode] if enabled else None)
    for other in (ref, *floors.values()):
        bpy.data.scenes.remove(other)


def frame_change_props(envfx, count, frames, rounds):
    """One JSON line per mode: a level of ``count`` small props (4 vertices, one shared mesh, the common case of
    a game level) bent, against the same props with the reference modifier, by frame changes; and one per floor
    (``bend_props_floor``: follow_pivot, pivot_runner, one_op, runner_ops, runner_ops_15)."""
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    scene.frame_start, scene.frame_end = 1, frames + 1
    mesh = framebench.grid_mesh("Prop", 2, size=1.0)
    cols = int(count ** 0.5) + 1
    locations = [(2.0 * (i % cols), 2.0 * (i // cols), 0.0) for i in range(count)]
    props = []
    for i, loc in enumerate(locations):
        obj = bpy.data.objects.new(f"Prop {i}", mesh)
        obj.location = loc
        scene.collection.objects.link(obj)
        props.append(obj)
    keyed_pivot(scene, frames)
    envfx.operators.bend.add_bend(scene, props)
    ref = framebench.reference_scene(scene, [mesh] * count, locations=locations)
    # the floors of any bend of many props, each in a scene of its own: the props with a minimal modifier that
    # reads the (keyed) pivot's location (every offset one value per object); with one per-vertex operation (the
    # offset is the position scaled by the scene time: a field, what any deformation computes per vertex); with
    # the Runner's per-vertex operations and constant per-object values (what the bend computes per vertex)
    floors = {"follow_pivot": framebench.new_scene("Follow Pivot", scene)}
    floor_pivot = keyed_empty(floors["follow_pivot"], frames, "Floor Pivot")
    groups: dict[str, bpy.types.NodeTree] = {"follow_pivot": pivot_group(floor_pivot)}
    floors["pivot_runner"] = framebench.new_scene("Pivot Runner", scene)
    groups["pivot_runner"] = pivot_runner_group(keyed_empty(floors["pivot_runner"], frames, "Runner Floor Pivot"))
    for kind in ("one_op", "runner_ops", "runner_ops_15"):
        floors[kind] = framebench.new_scene(f"Props Floor {kind}", scene)
        groups[kind] = _floor_group(kind)
    for kind, floor in floors.items():
        for i, loc in enumerate(locations):
            obj = bpy.data.objects.new(f"{kind} {i}", mesh)
            obj.location = loc
            api.of(bpy.types.NodesModifier, obj.modifiers.new(kind, "NODES")).node_group = groups[kind]
            floor.collection.objects.link(obj)
    # the same props bent on the GPU (Bend on GPU: in their material, no modifier), as a user sets it up
    mesh.materials.append(_node_material("Prop"))
    floors["gpu"] = framebench.new_scene("Props on GPU", scene)
    keyed_pivot(floors["gpu"], frames)
    gpu_props = []
    for i, loc in enumerate(locations):
        obj = bpy.data.objects.new(f"gpu {i}", mesh)
        obj.location = loc
        floors["gpu"].collection.objects.link(obj)
        api.envfx(obj).bend_gpu = True
        gpu_props.append(obj)
    added = envfx.operators.bend.add_bend(floors["gpu"], gpu_props)
    assert len(added.changed) == count, added.skipped
    s = api.envfx(scene).bend
    modes = ("RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER", *floors)
    got = {mode: {"effect": [], "reference": []} for mode in modes}
    for _round in range(rounds):
        for mode in modes:
            if mode not in floors:
                s.mode = mode
            effect = floors.get(mode, scene)
            res = framebench.frame_change(effect, ref, range(1, frames + 2), 1)
            for key in ("effect", "reference"):
                got[mode][key] += res[key]
            got[mode]["frames"] = res["frames"]
    for mode, res in got.items():
        out = framebench.summary(res)
        bench = ("bend_props_gpu_per_frame" if mode == "gpu" else
                 "bend_props_floor" if mode in floors else "bend_props_per_frame")
        framebench.emit(bench=bench, mode=mode, objects=count, vertices_each=4, **out,
                        extra_per_object_us=round((out["effect_s"] - out["reference_s"]) / count * 1e6, 2),
                        target_ratio=1.5)
    for other in (ref, *floors.values()):
        bpy.data.scenes.remove(other)


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--verts", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--objects", type=int, default=1000, help="props in the many-objects line (0: skip it)")
    parser.add_argument("--frames", type=int, default=40, help="frames per round of the frame-change measure")
    parser.add_argument("--frame-rounds", type=int, default=9, help="rounds of the frame-change measure")
    parser.add_argument("--props", type=int, default=5000, help="props of the frame-change level (0: skip it)")
    parser.add_argument("--props-frames", type=int, default=10, help="frames per round of the props level")
    parser.add_argument("--props-rounds", type=int, default=3, help="rounds of the props level")
    parser.add_argument("--only", default="frame,forced",
                        help="frame (frame changes: grid and props), grid or props (one of them), forced (forced "
                             "updates)")
    args = parser.parse_args(argv)
    envfx = enable()
    side = int(round(args.verts ** 0.5))
    only = args.only.split(",")
    if "frame" in only or "grid" in only:
        frame_change_grid(envfx, side, args.frames, args.frame_rounds)
    if ("frame" in only or "props" in only) and args.props > 0:
        frame_change_props(envfx, args.props, args.props_frames, args.props_rounds)
    if "forced" not in only:
        return 0
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    root_cost(side, args.repeats, args.rounds)
    scene = api.scene()
    bare = grid("Bare", side)
    mod = api.of(bpy.types.NodesModifier, bare.modifiers.new("Bare", "NODES"))
    mod.node_group = bare_group()
    bent = grid("Bent", side)
    pivot = bpy.data.objects.new("Pivot", None)
    scene.collection.objects.link(pivot)
    s = api.envfx(scene).bend
    s.pivot = pivot
    envfx.operators.bend.add_bend(scene, [bent])
    dg = bpy.context.evaluated_depsgraph_get()
    cases = CASES
    samples = {case: {"bare": [], "bend": [], "ratio": []} for case in cases}
    # the cases take turns round after round, so a slow spell of the machine touches every case alike; within a
    # round the bare and the bent mesh alternate frame by frame and the round's ratio is of their medians
    for _round in range(args.rounds):
        for mode, spread, enabled in cases:
            s.mode, s.spread, s.enabled = mode, spread, enabled
            dg.update()
            t_bare, t_bend = [], []
            for i in range(args.repeats + 2):
                bare.update_tag(refresh={"DATA"})
                t0 = time.perf_counter()
                dg.update()
                t1 = time.perf_counter()
                pivot.location.y = 0.01 * (i + 1)
                t2 = time.perf_counter()
                dg.update()
                t3 = time.perf_counter()
                if i >= 2:  # warm-up
                    t_bare.append(t1 - t0)
                    t_bend.append(t3 - t2)
            got = samples[(mode, spread, enabled)]
            got["bare"].append(statistics.median(t_bare))
            got["bend"].append(statistics.median(t_bend))
            got["ratio"].append(got["bend"][-1] / got["bare"][-1])
    for (mode, spread, enabled), got in samples.items():
        s.mode, s.spread = mode, spread
        print(json.dumps({
            "bench": "bend_per_frame", "method": "forced_update", "quoted": False,
            "blender": bpy.app.version_string, "mode": mode, "spread": spread,
            "enabled": enabled,
            "strength": round(s.strength, 4), "side_strength": round(s.side_strength, 4), "vertices": side * side,
            "repeats": args.repeats, "rounds": args.rounds, "bend_s": round(statistics.median(got["bend"]), 5),
            "bare_set_position_s": round(statistics.median(got["bare"]), 5),
            "ratio": round(statistics.median(got["ratio"]), 3),
            "ratio_min": round(min(got["ratio"]), 3), "ratio_max": round(max(got["ratio"]), 3),
            "target_ratio": 1.5, "loadavg_1min": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        }), flush=True)
    if args.objects > 0:
        s.enabled, s.spread = True, 2.0
        for obj in (bare, bent):
            bpy.data.objects.remove(obj)
        many_objects(envfx, args.objects, args.repeats, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
