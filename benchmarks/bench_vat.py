"""Benchmark: the VAT bake of an animated mesh (a grid of about ``--verts`` vertices under a Wave modifier) over
``--frames`` frames, through operators.vat.bake_vat as the operator runs it, against the same bake with the encoding
skipped, run alternately (which first alternating by round), ``--rounds`` rounds of every encoding.

The bake skipped of its encoding does all the rest: the frame changes, each frame's evaluated mesh read and handed
to the encoder thread, the proxy made and exported (glb), the JSON and the engine files written; only its textures
are neither computed nor written (core.vat's encoder gets the frames and drops them). Both bakes run without Add
Proxy (the proxy's VAT player loading the finished textures into Blender is no part of the bake's encoding).

The bake encodes each frame on a thread while Blender evaluates the next, the uncompressed textures streamed into
their files as the frames come. Each JSON line has:

- ``encode_share`` (the one quoted): the wall time the encoding adds to the bake, ``(total - skipped) / total``
  (``skipped``: the same bake with the encoding skipped, run right before or after it). It holds everything the
  textures cost the user: computing them, writing their bytes, waiting for that, and the evaluation slowed by it
  (the second core, memory bandwidth, Python's lock); the difference of two timed runs, so noisy under load;
- ``encode_cpu_s``: the encoder's own time on a core (its thread's CPU time, whatever the load), and
  ``encode_write_cpu_s`` of it, handing the streamed files' bytes to the system; ``encode_cpu_share``: the
  encoder's CPU time over the bake's total;
- ``encode_share_cpu``: the same in CPU time, ``(cpu - skipped_cpu) / cpu`` (the process's CPU time over all its
  threads, Blender's included): what the encoding costs in work, which a load that stretches wall times inflates
  much less;
- ``encode_share_cpu_no_write``: ``encode_share_cpu`` with the encoder's writing taken out of the bake's CPU time,
  ``(cpu - write - skipped_cpu) / (cpu - write)`` (``write``: ``encode_write_cpu_s``): the share of the encoder's own
  work (numpy: offsets, bounds, conversions, checksums), which the code controls; the system's time to take the
  bytes (``encode_write_cpu_s``, also per megabyte: ``write_ms_per_mb``) depends on the machine: on a virtual
  machine whose host hands back the memory it lends, taking fresh memory for the file cache costs ten times what
  it does on a desktop;
- ``encode_share_exposed``: the main thread's time held up by the encoder thread over ``total``;
- ``encode_share_thread``: the encoder thread's wall time in the encoder over ``total``;
- ``page_faults`` and ``skipped_page_faults``: the process's minor page faults (memory touched for the first time)
  in the bake and in the skipped one.

``--modes thread,inline`` also bakes with the encoder on the main thread (``operators.vat.ENCODE_ON_THREAD``
off: each frame encoded before the next is evaluated), in the same round against the same skipped bake:
``total_over_inline`` is the threaded bake's total time over the inline one's.

One JSON line per bake, then one summary line per encoding and mode (median, min and max over the rounds).

Run (on an idle machine for the numbers quoted; numpy's OPENBLAS_* variables do not matter here):
    /work/main/.venvs/blender-5.0/bin/python benchmarks/bench_vat.py --rounds 7
    /work/main/.venvs/blender-4.2/bin/python benchmarks/bench_vat.py --rounds 7
options: [--verts 100000] [--frames 250] [--encodings EXR32,EXR16,PNG16] [--modes thread,inline] [--compress]
[--pages plain,huge] (the large buffers in plain 4 KB pages, as the bake makes them, or numpy's huge pages)
[--scene wave|wind] (the grid under a Wave modifier, or stood up in EnvFX's wind: what a wind VAT bakes)
[--cold N [--idle 10]] (one-off bakes, each in a fresh process after idle seconds; with --pages plain,huge the
ratios of plain's times over huge's, pair by pair)
"""

import argparse
import json
import math
import os
import resource
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# one bake (``bake``): its wall seconds, result.timings, its object's result.meta, the bytes of its files
Run = tuple[float, dict[str, float], dict[str, Any], int]


def enable_addon() -> Any:
    """The add-on as Blender loads a development extension (a repository folder with a link named envfx); returns
    its operators.vat module (imported under the extension's name at run time, so typed Any: this script sets
    its ENCODE_ON_THREAD)."""
    import addon_utils
    import bpy

    repo = tempfile.mkdtemp(prefix="envfx-bench-repo-")
    os.symlink(ROOT, os.path.join(repo, "envfx"))
    preferences = bpy.context.preferences
    assert preferences is not None  # (optional in the API stubs; Blender as a module has them)
    preferences.extensions.repos.new(name="EnvFX Bench", module="envfx_bench", custom_directory=repo,
                                     source="USER")
    addon_utils.enable("bl_ext.envfx_bench.envfx", default_set=True)
    import importlib

    return importlib.import_module("bl_ext.envfx_bench.envfx.operators.vat")


class skipped_encoding:
    """Within the block the bake's encoder (core.vat.VatEncoder) drops every frame and writes no texture: its add()
    keeps the first frame (the loop check reads it) and zero bounds, its textures take nothing and finish as
    empty files; everything else in the bake runs as always."""

    def __init__(self, ops):
        self.core = ops.core_vat

    def __enter__(self):
        import numpy as np

        class NoTexture:
            def __init__(self, layout, channels, *_args, **_kwargs):
                self.c, self.write_cpu = len(channels), 0.0

            def put(self, f, values):
                pass

            def put_planes(self, f, planes, factors=None):
                pass

            def close(self):
                pass

            def encode(self, *_args, **_kwargs):
                return b""

        def add(encoder, f, positions, normals=None, extras=None):
            if encoder.first is None:
                encoder.first = np.asarray(positions, np.float32).copy()
                for bounds in (encoder.lo, encoder.hi, encoder.moved_lo, encoder.moved_hi):
                    bounds[:] = 0.0

        self.saved = self.core._Texture, self.core.VatEncoder.add
        self.core._Texture, self.core.VatEncoder.add = NoTexture, add
        return self

    def __exit__(self, *exc):
        self.core._Texture, self.core.VatEncoder.add = self.saved
        return False


def bake(ops, scene, obj, encoding, frames, compress) -> Run:
    import bpy

    out = tempfile.mkdtemp(prefix="envfx-bench-vat-")
    opts = ops.VatOptions(frame_start=frames[0], frame_end=frames[-1], encoding=encoding, engine="GODOT",
                          export_mesh=True, compress=compress, add_proxy=False)
    faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = ops.bake_vat(scene, [obj], out, opts)
    wall = time.perf_counter() - t0
    result.timings["process_cpu"] = time.process_time() - cpu0  # every thread of the process: Blender's too
    result.timings["page_faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
    meta = result.meta[obj.name]
    size = sum(os.path.getsize(p) for p in result.files)
    for path in result.files:
        os.remove(path)
    os.rmdir(out)
    assert bpy.data.objects.get(obj.name + ops.PROXY_SUFFIX) is None  # (no Add Proxy: the bake removed it)
    return wall, result.timings, meta, size


def animated_grid(bpy, scene, side: int, kind: str) -> Any:
    """A grid of ``side`` squared vertices, 10 m across: flat under a Wave modifier (``wave``, about the cheapest
    animation there is), or stood up 10 m tall in EnvFX's wind at strength 5 (``wind``: baked and added as the
    sidebar does, the wind's modifier: what a wind VAT bakes)."""
    import importlib

    bpy.ops.mesh.primitive_grid_add(x_subdivisions=side - 1, y_subdivisions=side - 1, size=10.0)
    obj = bpy.context.active_object
    assert obj is not None and isinstance(obj.data, bpy.types.Mesh)  # the grid just added
    if kind == "wave":
        wave = obj.modifiers.new("Wave", "WAVE")
        assert isinstance(wave, bpy.types.WaveModifier)  # (the stubs type a new modifier as any Modifier)
        wave.height, wave.width, wave.speed = 0.3, 1.5, 0.1
        return obj
    obj.rotation_euler = (math.pi / 2, 0.0, 0.0)
    obj.location.z = 5.0
    bpy.ops.object.transform_apply(location=True, rotation=True, scale=True)
    wind = importlib.import_module("bl_ext.envfx_bench.envfx.operators.wind")
    wind.bake(scene, [obj], ao_samples=0)
    scene.envfx.wind.strength = 5.0
    wind.add_wind(scene, [obj])
    return obj


def cold_bakes(args, pages) -> int:
    """``--cold N``: one-off bakes, as a farm job or an artist's single bake pays them. Each bake of each encoding
    runs in a fresh process (this script, one round) after ``--idle`` seconds with nothing running, the kinds of
    ``--pages`` alternating, ``N`` of each; one ``vat_bake_cold`` line per bake (its ``vat_bake`` line), then per
    encoding, with two kinds of pages, the ratios of the first kind's total wall and CPU time over the second's,
    pair by pair (``vat_bake_cold_summary``: median, min, max)."""
    import subprocess

    got: dict[tuple[str, str], list] = {}
    encodings = [e.strip().upper() for e in args.encodings.split(",") if e.strip()]
    for _ in range(args.cold):
        for encoding in encodings:
            for page in pages:
                time.sleep(args.idle)
                run = subprocess.run([sys.executable, os.path.abspath(__file__), "--rounds", "1", "--encodings",
                                      encoding, "--pages", page, "--scene", args.scene, "--verts", str(args.verts),
                                      "--frames", str(args.frames), "--modes", "thread"]
                                     + (["--compress"] if args.compress else []),
                                     capture_output=True, text=True, check=False)
                rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith('{"bench": "vat_bake"')]
                if run.returncode or len(rows) != 1:
                    raise SystemExit(f"a cold bake failed ({run.returncode}): {run.stderr[-2000:]}")
                row = dict(rows[0], bench="vat_bake_cold", idle_s=args.idle)
                print(json.dumps(row), flush=True)
                got.setdefault((encoding, page), []).append(row)
    if len(pages) == 2:
        for encoding in encodings:
            a, b = got[encoding, pages[0]], got[encoding, pages[1]]
            summary: dict[str, Any] = {"bench": "vat_bake_cold_summary", "encoding": encoding, "scene": args.scene,
                                       "pairs": len(a), "over": f"{pages[0]} / {pages[1]}", "idle_s": args.idle}
            for key in ("total_s", "cpu_s"):
                ratios = [x[key] / y[key] for x, y in zip(a, b)]
                summary[f"{key}_ratio"] = {"median": round(median(ratios), 4), "min": round(min(ratios), 4),
                                           "max": round(max(ratios), 4)}
            print(json.dumps(summary), flush=True)
    return 0


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
    parser.add_argument("--pages", default="plain",
                        help="plain, huge or both: the memory pages of the bake's large buffers (core.vat.plain_pages)")
    parser.add_argument("--scene", default="wave", choices=("wave", "wind"),
                        help="wave: a grid under a Wave modifier; wind: the grid stood up in EnvFX wind (strength 5)")
    parser.add_argument("--cold", type=int, default=0,
                        help="N: one-off bakes instead, each in a fresh process after --idle seconds, N per --pages")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle before each --cold bake")
    args = parser.parse_args(argv)
    modes = [m.strip().lower() for m in args.modes.split(",") if m.strip()]
    pages = [p.strip().lower() for p in args.pages.split(",") if p.strip()]
    if not modes or not set(modes) <= {"thread", "inline"} or not pages or not set(pages) <= {"plain", "huge"}:
        parser.error("--modes takes thread and inline, --pages plain and huge (comma-separated)")
    variants = [(m, p) for m in modes for p in pages]
    if args.cold:
        return cold_bakes(args, pages)

    import bpy

    ops = enable_addon()
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = bpy.context.scene
    obj = animated_grid(bpy, scene, max(2, int(math.sqrt(args.verts))), args.scene)
    assert isinstance(obj.data, bpy.types.Mesh)
    n = len(obj.data.vertices)
    frames = list(range(1, args.frames + 1))
    encodings = [e.strip().upper() for e in args.encodings.split(",") if e.strip()]
    rows: dict[tuple[str, str, str], list] = {(e, m, p): [] for e in encodings for m, p in variants}
    bake(ops, scene, obj, encodings[0], frames[:10], args.compress)  # warm up (node groups, exporter, caches)
    for r in range(args.rounds):
        for encoding in encodings[r % len(encodings):] + encodings[:r % len(encodings)]:
            order = [("skipped", "")] + variants if r % 2 == 0 else variants[::-1] + [("skipped", "")]
            runs: dict[tuple[str, str], Run] = {}
            plain_from = ops.core_vat.PLAIN_PAGES_FROM
            for mode, page in order:
                ops.ENCODE_ON_THREAD = mode != "inline"
                ops.core_vat.PLAIN_PAGES_FROM = 1 << 62 if page == "huge" else plain_from  # huge: numpy's np.empty
                try:
                    if mode == "skipped":
                        with skipped_encoding(ops):
                            runs[mode, page] = bake(ops, scene, obj, encoding, frames, args.compress)
                    else:
                        runs[mode, page] = bake(ops, scene, obj, encoding, frames, args.compress)
                finally:
                    ops.ENCODE_ON_THREAD = True
                    ops.core_vat.PLAIN_PAGES_FROM = plain_from
            done = runs["skipped", ""]
            skipped = done[0], done[1]["process_cpu"], done[1]["page_faults"]
            for mode, page in variants:
                rows[encoding, mode, page].append(report(bpy, r, encoding, (mode, page), args, n, *runs[mode, page],
                                                         *skipped))
            for page in pages:
                if ("thread", page) in runs and ("inline", page) in runs:
                    ratio = round(runs["thread", page][0] / runs["inline", page][0], 4)
                    rows[encoding, "thread", page][-1]["total_over_inline"] = ratio
                    print(json.dumps({"bench": "vat_bake_pair", "round": r, "encoding": encoding, "pages": page,
                                      "total_over_inline": ratio}), flush=True)
    for (encoding, mode, page), got in rows.items():
        summary = {"bench": "vat_bake_summary", "blender": bpy.app.version_string, "encoding": encoding,
                   "mode": mode, "pages": page, "scene": args.scene, "rounds": len(got), "vertices": n,
                   "frames": args.frames,
                   "load": "idle" if max(row["load_avg_1min"] for row in got) < 1.5 else "loaded"}
        keys = ["encode_share", "encode_share_cpu", "encode_share_cpu_no_write", "encode_cpu_s", "encode_write_cpu_s",
                "write_ms_per_mb", "encode_cpu_share",
                "encode_share_exposed", "encode_share_thread", "total_s", "skipped_s", "cpu_s", "skipped_cpu_s",
                "page_faults", "skipped_page_faults", "load_avg_1min"] + (
            ["total_over_inline"] if got and "total_over_inline" in got[0] else [])
        for key in keys:
            values = [row[key] for row in got]
            summary[key] = {"median": round(median(values), 4), "min": round(min(values), 4),
                            "max": round(max(values), 4)}
        print(json.dumps(summary), flush=True)
    return 0


def report(bpy, r, encoding, variant, args, n, wall, t, meta, size, skipped, skipped_cpu, skipped_faults):
    row = {
        "bench": "vat_bake", "blender": bpy.app.version_string, "round": r, "encoding": encoding,
        "mode": variant[0], "pages": variant[1], "scene": args.scene, "compress": args.compress, "vertices": n,
        "frames": args.frames,
        "texture": [meta["layout"]["width"], meta["layout"]["height"]],
        "total_s": round(wall, 3), "skipped_s": round(skipped, 3),
        "encode_share": round((wall - skipped) / wall, 4),
        "cpu_s": round(t["process_cpu"], 3), "skipped_cpu_s": round(skipped_cpu, 3),
        "encode_share_cpu": round((t["process_cpu"] - skipped_cpu) / t["process_cpu"], 4),
        "encode_share_cpu_no_write": round((t["process_cpu"] - t["encode_write_cpu"] - skipped_cpu)
                                           / (t["process_cpu"] - t["encode_write_cpu"]), 4),
        "encode_cpu_s": round(t["encode_cpu"], 3), "encode_write_cpu_s": round(t["encode_write_cpu"], 3),
        "write_ms_per_mb": round(1e9 * t["encode_write_cpu"] / max(1, size), 3),
        "encode_cpu_share": round(t["encode_cpu"] / wall, 4),
        "encode_share_exposed": round(t["encode_wait"] / wall, 4), "encode_share_thread": round(t["encode"] / wall, 4),
        "evaluate_s": round(t["evaluate"], 3), "encode_wait_s": round(t["encode_wait"], 3),
        "write_s": round(t["write"], 3), "write_wait_s": round(t["write_wait"], 3),
        "encode_thread_s": round(t["encode"], 3), "write_files_thread_s": round(t["write_files"], 3),
        "page_faults": t["page_faults"], "skipped_page_faults": skipped_faults, "bytes_written": size,
        "load_avg_1min": os.getloadavg()[0], "cpus": os.cpu_count()}
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
