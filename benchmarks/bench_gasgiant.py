"""Gas giant throughput and memory: particle-steps per second including painting (6 faces of 1024, the
default blur + fade passes), at 1M and 8M particles with a 512-per-face velocity field, and peak memory for 8M.

Wall-clock throughput depends on how busy the shared cores are; ``particle_steps_per_cpu_s`` (steps per
CPU-second of this process, all threads) is the load-independent efficiency: on two free cores the wall-clock
rate with two threads approaches twice it when the threads scale.

Also: an animated bake (12 frames of 20 iterations, 1M particles, 6x512 + 1024 PNGs written per frame) with
the velocity field built every frame against every 4th frame with interpolation in between
(``speedup_vs_field_every_frame``), and building a 512 field against loading it from a saved file.

Run with a venv python: ``python benchmarks/bench_gasgiant.py [--quick] [--only throughput|animated|field]``.
Prints one JSON object per measurement. Each measurement runs in its own process so its peak RSS is its own.
The machine is shared: the load average before and after is recorded with every measurement.

Reference (the issue): gaseous-giganticus moves and paints 1M particles for 100 iterations with a 512 field in
about 9 s (about 11M particle-steps/s on both cores) and holds 8M particles in about 0.65 GB.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 11e6
GG_REFERENCE = {"steps_per_s_512_field": 11e6, "steps_per_s_2048_field": 6e6, "bytes_8M": 0.65 * 2**30}


def one(spec):
    sys.path.insert(0, ROOT)
    from core import gasgiant as gg  # only in the measuring process: its peak memory is its own

    load0 = os.getloadavg()
    params = gg.GasGiantParams(particles=spec["particles"], iterations=spec["iterations"], field_size=512,
                               cubemap_size=1024, equirect_width=4096, threads=spec["threads"], seed=1)
    t0 = time.perf_counter()
    sim = gg.Simulation(params)
    t_init = time.perf_counter() - t0
    sim.step(2)  # warm up (first touches of the buffers)
    t0, c0 = time.perf_counter(), time.process_time()
    sim.step(spec["iterations"])
    t_steps, c_steps = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    eq = sim.equirect(4096)
    t_eq = time.perf_counter() - t0
    sim.close()
    steps = spec["particles"] * spec["iterations"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "measure": "gasgiant_throughput",
        "particles": spec["particles"],
        "iterations": spec["iterations"],
        "threads": spec["threads"],
        "field_size": 512,
        "cubemap": "6x1024",
        "equirect": list(eq.shape[:2][::-1]),
        "blur_interval": params.blur_interval,
        "seconds_steps": round(t_steps, 3),
        "particle_steps_per_s": round(steps / t_steps),
        "ratio_to_target_11M": round(steps / t_steps / TARGET, 3),
        "ratio_to_gaseous_giganticus_512": round(steps / t_steps / GG_REFERENCE["steps_per_s_512_field"], 3),
        "cpu_seconds_steps": round(c_steps, 3),
        "particle_steps_per_cpu_s": round(steps / c_steps),
        "seconds_init_field_and_particles": round(t_init, 3),
        "seconds_equirect_4096": round(t_eq, 3),
        "particle_steps_per_s_with_init": round(steps / (t_steps + t_init)),
        "peak_rss_bytes": rss,
        "peak_rss_gb": round(rss / 2**30, 3),
        "estimate_bytes": gg.estimate_memory(params),
        "load_before": [round(x, 2) for x in load0],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def animated(spec):
    """An animated bake, files and all: the field built every frame (``field_interval`` 1) or every few frames
    with the frames between interpolated; one process per run."""
    sys.path.insert(0, ROOT)
    from core import gasgiant as gg  # only in the measuring process: its peak memory is its own

    load0 = os.getloadavg()
    params = gg.GasGiantParams(particles=spec["particles"], iterations=spec["frame_iterations"], field_size=512,
                               cubemap_size=spec["cubemap"], equirect_width=spec["equirect"], threads=2, seed=1,
                               frames=spec["frames"], frame_iterations=spec["frame_iterations"],
                               field_interval=spec["field_interval"])
    builds = []
    real = gg.build_field_steps

    def counting(*a, **k):
        builds.append(1)
        return real(*a, **k)

    gg.build_field_steps = counting
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        result = gg.run_bake(params, tmp)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        files = len(result.files)
    return {
        "measure": "gasgiant_animated_bake", **spec, "field_size": 512, "field_builds": len(builds),
        "images_written": files, "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
        "seconds_per_frame": round(seconds / spec["frames"], 3),
        "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def field_file(spec):
    """Build a 512 velocity field vs load it from a saved file (gaseous-giganticus -d / -r)."""
    sys.path.insert(0, ROOT)
    from core import gasgiant as gg  # only in the measuring process: its peak memory is its own

    params = gg.GasGiantParams(field_size=spec["field_size"], threads=2, seed=1, vortices=8)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    fld = gg.build_field(params)
    t_build = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "field.npz")
        t0 = time.perf_counter()
        gg.save_fields(path, params, {0.0: fld})
        t_save = time.perf_counter() - t0
        size = os.path.getsize(path)
        t0 = time.perf_counter()
        gg.load_fields(path, params)
        t_load = time.perf_counter() - t0
    return {"measure": "gasgiant_field_file", **spec, "seconds_build": round(t_build, 3),
            "seconds_save": round(t_save, 3), "seconds_load": round(t_load, 3), "file_bytes": size,
            "ratio_build_to_load": round(t_build / t_load, 2),
            "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in os.getloadavg()]}


def _run(kind, spec):
    out = subprocess.run([sys.executable, __file__, "--one", json.dumps({"kind": kind, **spec})],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"measure": kind, "error": out.stderr[-2000:], **spec}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--only", choices=["throughput", "animated", "field"], help="run one group only")
    args = parser.parse_args()
    if args.one:
        spec = json.loads(args.one)
        kind = spec.pop("kind", "throughput")
        print(json.dumps({"throughput": one, "animated": animated, "field": field_file}[kind](spec)), flush=True)
        return 0
    try:  # the Blender version when Blender's Python runs this
        import bpy

        blender = bpy.app.version_string
    except ImportError:
        blender = None
    runs = [
        {"particles": 1_000_000, "iterations": 30 if args.quick else 100, "threads": 1},
        {"particles": 1_000_000, "iterations": 30 if args.quick else 100, "threads": 2},
        {"particles": 8_000_000, "iterations": 5 if args.quick else 20, "threads": 2},
    ]
    env = dict(blender=blender, numpy=numpy.__version__, python=sys.version.split()[0])
    if args.only in (None, "animated"):
        base = {"particles": 200_000 if args.quick else 1_000_000, "frames": 6 if args.quick else 12,
                "frame_iterations": 20, "cubemap": 512, "equirect": 1024}
        every = _run("animated", {**base, "field_interval": 1})
        every.update(env)
        print(json.dumps(every), flush=True)
        for interval in (4,):
            row = _run("animated", {**base, "field_interval": interval})
            row.update(env)
            if "seconds" in row and "seconds" in every:
                row["speedup_vs_field_every_frame"] = round(every["seconds"] / row["seconds"], 3)
                row["cpu_speedup_vs_field_every_frame"] = round(every["cpu_seconds"] / row["cpu_seconds"], 3)
            print(json.dumps(row), flush=True)
    if args.only in (None, "field"):
        row = _run("field", {"field_size": 512})
        row.update(env)
        print(json.dumps(row), flush=True)
    if args.only not in (None, "throughput"):
        return 0
    for spec in runs:
        row = _run("throughput", spec)
        if "error" in row:
            print(json.dumps(row))
            continue
        row.update(env)
        if row["particles"] == 8_000_000:
            row["memory_ratio_to_1GB"] = round(row["peak_rss_bytes"] / 2**30, 3)
            row["memory_ratio_to_gaseous_giganticus"] = round(row["peak_rss_bytes"] / GG_REFERENCE["bytes_8M"], 3)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
