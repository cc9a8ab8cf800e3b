"""Per-frame cost of the world bend on a 1M-vertex mesh against a bare geometry-nodes Set Position.

usage: $(tools/venv.sh 5.0) benchmarks/bench_bend.py [--verts 1000000] [--repeats 15] [--rounds 3]
Prints one JSON line per mode: median seconds per evaluation of the bend and of the bare Set Position
(measured interleaved in the same run, best median of --rounds rounds), and their ratio. Re-evaluation is
forced the way playback does it: the pivot moves (bend) or the object is tagged (bare), then the depsgraph
updates.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import bpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "blender"))


def enable():
    import addon_utils
    import importlib

    repo_dir = tempfile.mkdtemp(prefix="envfx-bench-")
    os.symlink(ROOT, os.path.join(repo_dir, "envfx"))
    bpy.context.preferences.extensions.repos.new(name="EnvFX Bench", module="envfx_bench",
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
    bpy.context.scene.collection.objects.link(obj)
    return obj


def bare_group():
    tree = bpy.data.node_groups.new("Bare Set Position", "GeometryNodeTree")
    tree.interface.new_socket(name="Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    tree.interface.new_socket(name="Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    gin = tree.nodes.new("NodeGroupInput")
    gout = tree.nodes.new("NodeGroupOutput")
    sp = tree.nodes.new("GeometryNodeSetPosition")
    sp.inputs["Offset"].default_value = (0.0, 0.0, 0.001)
    tree.links.new(gin.outputs[0], sp.inputs["Geometry"])
    tree.links.new(sp.outputs[0], gout.inputs[0])
    return tree


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--verts", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    envfx = enable()
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    side = int(round(args.verts ** 0.5))
    scene = bpy.context.scene
    bare = grid("Bare", side)
    mod = bare.modifiers.new("Bare", "NODES")
    mod.node_group = bare_group()
    bent = grid("Bent", side)
    pivot = bpy.data.objects.new("Pivot", None)
    scene.collection.objects.link(pivot)
    s = scene.envfx.bend
    s.pivot = pivot
    envfx.operators.bend.add_bend(scene, [bent])
    dg = bpy.context.evaluated_depsgraph_get()
    for mode in ("RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER"):
        s.mode = mode
        dg.update()
        best_bare, best_bend = float("inf"), float("inf")
        for _round in range(args.rounds):  # best median of several rounds: less skew from other processes
            t_bare, t_bend = [], []
            for i in range(args.repeats + 2):
                bare.update_tag(refresh={"DATA"})
                t0 = time.perf_counter()
                dg.update()
                t1 = time.perf_counter()
                pivot.location.y = 0.01 * i
                t2 = time.perf_counter()
                dg.update()
                t3 = time.perf_counter()
                if i >= 2:  # warm-up
                    t_bare.append(t1 - t0)
                    t_bend.append(t3 - t2)
            best_bare = min(best_bare, statistics.median(t_bare))
            best_bend = min(best_bend, statistics.median(t_bend))
        print(json.dumps({
            "bench": "bend_per_frame", "blender": bpy.app.version_string, "mode": mode,
            "vertices": side * side, "repeats": args.repeats, "rounds": args.rounds, "bend_s": round(best_bend, 5),
            "bare_set_position_s": round(best_bare, 5), "ratio": round(best_bend / best_bare, 3),
            "target_ratio": 1.5, "loadavg_1min": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
