"""Benchmark: the VAT bake of an animated mesh (a grid of about ``--verts`` vertices under a Wave modifier) over
``--frames`` frames, through operators.vat.bake_vat as the operator runs it: the total time and its split into
scene evaluation (frame changes and reading the evaluated mesh), encoding (core.vat: layout, engine axes, EXR/PNG
bytes) and writing (files, the proxy and its export). Prints one JSON line per encoding.

Run: /work/main/.venvs/blender-5.0/bin/python benchmarks/bench_vat.py [--verts 100000] [--frames 250]
     [--encodings EXR32,EXR16,PNG16] [--compress]
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def enable_addon():
    """The add-on as Blender loads a development extension (a repository folder with a link named envfx)."""
    import addon_utils
    import bpy

    repo = tempfile.mkdtemp(prefix="envfx-bench-repo-")
    os.symlink(ROOT, os.path.join(repo, "envfx"))
    bpy.context.preferences.extensions.repos.new(name="EnvFX Bench", module="envfx_bench", custom_directory=repo,
                                                 source="USER")
    addon_utils.enable("bl_ext.envfx_bench.envfx", default_set=True)
    import importlib

    return importlib.import_module("bl_ext.envfx_bench.envfx.operators.vat")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verts", type=int, default=100_000)
    parser.add_argument("--frames", type=int, default=250)
    parser.add_argument("--encodings", default="EXR32,EXR16,PNG16")
    parser.add_argument("--compress", action="store_true", help="deflate the textures (the Compress setting)")
    args = parser.parse_args(argv)

    import bpy

    ops = enable_addon()
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = bpy.context.scene
    side = max(2, int(math.sqrt(args.verts)))
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=side - 1, y_subdivisions=side - 1, size=10.0)
    obj = bpy.context.active_object
    wave = obj.modifiers.new("Wave", "WAVE")
    wave.height, wave.width, wave.speed = 0.3, 1.5, 0.1
    n = len(obj.data.vertices)
    for encoding in [e.strip().upper() for e in args.encodings.split(",") if e.strip()]:
        out = tempfile.mkdtemp(prefix="envfx-bench-vat-")
        opts = ops.VatOptions(frame_start=1, frame_end=args.frames, encoding=encoding, engine="GODOT",
                              export_mesh=True, compress=args.compress)
        t0 = time.perf_counter()
        result = ops.bake_vat(scene, [obj], out, opts)
        wall = time.perf_counter() - t0
        t = result.timings
        meta = result.meta[obj.name]
        size = sum(os.path.getsize(p) for p in result.files)
        print(json.dumps({
            "bench": "vat_bake", "blender": bpy.app.version_string, "encoding": encoding, "compress": args.compress,
            "vertices": n,
            "frames": args.frames, "texture": [meta["layout"]["width"], meta["layout"]["height"]],
            "total_s": round(wall, 3), "evaluate_s": round(t["evaluate"], 3), "encode_s": round(t["encode"], 3),
            "write_s": round(t["write"], 3), "encode_share": round(t["encode"] / wall, 4),
            "bytes_written": size, "load_avg_1min": os.getloadavg()[0], "cpus": os.cpu_count()}), flush=True)
        for path in result.files:
            os.remove(path)
        os.rmdir(out)
    return 0


if __name__ == "__main__":
    code = main()
    import bpy  # (loaded by main already)

    if bpy.app.version < (5, 0, 0):  # Blender 4.2 as a module crashes at exit after a glTF export (docs/vat.md)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
