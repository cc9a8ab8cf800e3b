"""Benchmark: the VAT bake of an animated mesh (a grid of about ``--verts`` vertices under a Wave modifier) over
``--frames`` frames, through operators.vat.bake_vat as the operator runs it, against the same frames evaluated and
read alone (the bake's own frame loop with nothing encoded), run alternately: each bake right after its own
evaluation-only run, ``--rounds`` rounds of every encoding.

The bake encodes each frame on a thread while Blender evaluates the next, and finishes and writes the textures
while the proxy is exported, so its encoding has three measures; each JSON line has them all:

- ``encode_share_added`` (the one quoted): the wall time the encoding adds to the bake beyond evaluating the
  frames alone, ``total - write - write_wait - evaluate_only`` (``write``: the main thread's proxy, export and
  JSON; ``write_wait``: its wait for the textures' writing), over ``total``. It holds everything the encoder
  costs the user: waiting for it, and the evaluation slowed by it (memory bandwidth, the second core, Python's
  lock), and it is the difference of two timed runs, so noisy;
- ``encode_share_thread``: the encoder thread's time in the encoder over ``total`` (what the encoding would
  cost if it ran on the main thread; under load it includes the thread's waits for a core);
- ``encode_share_exposed``: the main thread's time held up by the encoder thread over ``total``;
- ``encode_cpu_s``: the encoder's time on a core (its thread's CPU time: the work, whatever the load).

``--modes thread,inline`` also bakes with the encoder on the main thread (``operators.vat.ENCODE_ON_THREAD``
off: each frame encoded before the next is evaluated, as before the thread), right after the threaded bake or
before it (alternating by round), against the same evaluation-only run: ``total_over_inline`` is the threaded
bake's total time over the inline one's.

One JSON line per bake, then one summary line per encoding and mode (median, min and max over the rounds).

Run: /work/main/.venvs/blender-5.0/bin/python benchmarks/bench_vat.py [--verts 100000] [--frames 250]
     [--encodings EXR32,EXR16,PNG16] [--rounds 5] [--modes thread,inline] [--compress]
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


def evaluate_only(ops, scene, obj, frames):
    """Wall seconds of the bake's own frame loop (operators.vat._evaluate_frames: frame changes, the evaluated
    mesh read, the topology check, the proxy's mesh at the first frame, each frame's arrays handed to the encoder
    thread) with nothing encoded: the thread gets a task that does nothing with them."""
    import bpy

    def nothing(*_arrays):
        pass

    class ReadOnly(ops._Sampler):
        def encode(self, thread, i, obj, positions, normals, extras):
            thread.submit("encode", nothing, positions, normals, extras)

    settings = ops.core_vat.VatSettings(encoding="EXR32").validate()
    sampler = ReadOnly(obj, "bench", frames, settings, (), 24.0, False)
    thread = ops._EncoderThread()
    timings = {"evaluate": 0.0}
    old = scene.frame_current
    t0 = time.perf_counter()
    try:
        for _ in ops._evaluate_frames(scene, frames, ops.VatOptions(), {obj.name: sampler}, timings, thread):
            pass
        scene.frame_set(old)
        return time.perf_counter() - t0
    finally:
        thread.close()
        if sampler.proxy_mesh is not None:
            bpy.data.meshes.remove(sampler.proxy_mesh)


def bake(ops, scene, obj, encoding, frames, compress):
    import bpy

    out = tempfile.mkdtemp(prefix="envfx-bench-vat-")
    opts = ops.VatOptions(frame_start=frames[0], frame_end=frames[-1], encoding=encoding, engine="GODOT",
                          export_mesh=True, compress=compress)
    t0 = time.perf_counter()
    result = ops.bake_vat(scene, [obj], out, opts)
    wall = time.perf_counter() - t0
    meta = result.meta[obj.name]
    size = sum(os.path.getsize(p) for p in result.files)
    for path in result.files:
        os.remove(path)
    os.rmdir(out)
    proxy = bpy.data.objects.get(obj.name + ops.PROXY_SUFFIX)
    if proxy is not None:  # the next bake makes it again; an old one renamed aside would cost it a rename
        mesh = proxy.data
        bpy.data.objects.remove(proxy)
        bpy.data.meshes.remove(mesh)
    return wall, result.timings, meta, size


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verts", type=int, default=100_000)
    parser.add_argument("--frames", type=int, default=250)
    parser.add_argument("--encodings", default="EXR32,EXR16,PNG16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--modes", default="thread", help="thread, inline or both (comma-separated)")
    parser.add_argument("--compress", action="store_true", help="deflate the textures (the Compress setting)")
    args = parser.parse_args(argv)
    modes = [m.strip().lower() for m in args.modes.split(",") if m.strip()]

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
    frames = list(range(1, args.frames + 1))
    encodings = [e.strip().upper() for e in args.encodings.split(",") if e.strip()]
    rows = {(e, m): [] for e in encodings for m in modes}
    evaluate_only(ops, scene, obj, frames[:10])  # warm up (node groups, caches)
    for r in range(args.rounds):
        for encoding in encodings[r % len(encodings):] + encodings[:r % len(encodings)]:
            reference = evaluate_only(ops, scene, obj, frames)
            totals = {}
            for mode in (modes if r % 2 == 0 else modes[::-1]):
                ops.ENCODE_ON_THREAD = mode == "thread"
                try:
                    wall, t, meta, size = bake(ops, scene, obj, encoding, frames, args.compress)
                finally:
                    ops.ENCODE_ON_THREAD = True
                totals[mode] = wall
                rows[encoding, mode].append(report(bpy, r, encoding, mode, args, n, meta, wall, reference, t,
                                                   size))
            if "thread" in totals and "inline" in totals:
                rows[encoding, "thread"][-1]["total_over_inline"] = round(totals["thread"] / totals["inline"], 4)
                print(json.dumps({"bench": "vat_bake_pair", "round": r, "encoding": encoding,
                                  "total_over_inline": round(totals["thread"] / totals["inline"], 4)}), flush=True)
    for (encoding, mode), got in rows.items():
        summary = {"bench": "vat_bake_summary", "blender": bpy.app.version_string, "encoding": encoding,
                   "mode": mode, "rounds": len(got), "vertices": n, "frames": args.frames}
        keys = ["encode_share_added", "encode_share_thread", "encode_share_exposed", "total_s", "evaluate_only_s",
                "load_avg_1min"] + (["total_over_inline"] if got and "total_over_inline" in got[0] else [])
        for key in keys:
            values = [row[key] for row in got]
            summary[key] = {"median": round(median(values), 4), "min": round(min(values), 4),
                            "max": round(max(values), 4)}
        ratios = [row["total_s"] / row["evaluate_only_s"] for row in got]
        summary["total_over_evaluate_only"] = {"median": round(median(ratios), 3), "min": round(min(ratios), 3),
                                               "max": round(max(ratios), 3)}
        print(json.dumps(summary), flush=True)
    return 0


def report(bpy, r, encoding, mode, args, n, meta, wall, reference, t, size):
    added = wall - t["write"] - t["write_wait"] - reference
    row = {
        "bench": "vat_bake", "blender": bpy.app.version_string, "round": r, "encoding": encoding,
        "mode": mode, "compress": args.compress, "vertices": n, "frames": args.frames,
        "texture": [meta["layout"]["width"], meta["layout"]["height"]],
        "total_s": round(wall, 3), "evaluate_only_s": round(reference, 3),
        "evaluate_s": round(t["evaluate"], 3), "encode_wait_s": round(t["encode_wait"], 3),
        "write_s": round(t["write"], 3), "write_wait_s": round(t["write_wait"], 3),
        "encode_thread_s": round(t["encode"], 3), "encode_cpu_s": round(t["encode_cpu"], 3),
        "write_files_thread_s": round(t["write_files"], 3), "encode_added_s": round(added, 3),
        "encode_share_added": round(added / wall, 4), "encode_share_thread": round(t["encode"] / wall, 4),
        "encode_share_exposed": round(t["encode_wait"] / wall, 4),
        "bytes_written": size, "load_avg_1min": os.getloadavg()[0], "cpus": os.cpu_count()}
    print(json.dumps(row), flush=True)
    return row


if __name__ == "__main__":
    code = main()
    import bpy  # (loaded by main already)

    if bpy.app.version < (5, 0, 0):  # Blender 4.2 as a module crashes at exit after a glTF export (docs/vat.md)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
