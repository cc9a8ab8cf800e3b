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

With ``--peer PATH`` (the gaseous-giganticus program, built by you outside EnvFX): paired whole-process runs of this
bake and the C original at equal settings (particles, 100 iterations, 512 field, six 1024 faces, two threads) with
the Blender baseline (bpy imported, nothing baked), several rounds, one JSON line per particle count with the
median, minimum and maximum of each and of the paired wall-time ratio (see docs/gasgiant.md).

Reference (the issue): gaseous-giganticus moves and paints 1M particles for 100 iterations with a 512 field in
about 9 s (about 11M particle-steps/s on both cores) and holds 8M particles in about 0.65 GB.
"""

import argparse
import json
import os
import resource
import statistics
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


def bake_process(spec):
    """One whole bake as a user's Blender process runs it: ``bpy`` imported (Blender's own memory), then the bake
    of a still (six cube faces written as PNGs, no equirectangular image: what gaseous-giganticus writes).
    ``spec["bake"]`` False: bpy imported, nothing baked (the baseline)."""
    import bpy  # noqa: F401  (Blender's own baseline: what importing it takes)

    if not spec.get("bake", True):
        return {}
    sys.path.insert(0, ROOT)
    from core import gasgiant as gg  # the numpy core the add-on runs (the add-on's UI is not what is measured)

    params = gg.GasGiantParams(particles=spec["particles"], iterations=spec["iterations"],
                               field_size=spec["field_size"], cubemap_size=spec["cubemap"], equirect_width=0,
                               threads=spec["threads"], seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        result = gg.run_bake(params, tmp, check_memory=False)
        return {"files": len(result.files)}


_SPAWN = """
import json, os, subprocess, sys, time
argv, cwd = json.loads(sys.argv[1]), sys.argv[2] or None
t0 = time.perf_counter()
proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read().decode(errors="replace")
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mib": usage.ru_maxrss / 1024, "code": os.waitstatus_to_exitcode(status),
                  "err": err[-2000:]}))
"""


def _measure(argv, cwd=None):
    """Run a whole process; its wall time, CPU time (user + system, all threads) and peak RSS (its own, from
    wait4). Started from a small Python process: Linux counts the memory a process had before exec (the copy of
    the process that forked it) in its peak, so the measuring process must be smaller than the measured ones."""
    out = subprocess.run([sys.executable, "-S", "-c", _SPAWN, json.dumps(argv), cwd or ""], capture_output=True,
                         text=True, check=True)
    row = json.loads(out.stdout)
    if row.pop("code") != 0:
        raise RuntimeError(f"{argv[0]} failed: {row['err']}")
    del row["err"]
    return row


def _spread(values, digits=3):
    return {"median": round(statistics.median(values), digits), "min": round(min(values), digits),
            "max": round(max(values), digits)}


def peer_rounds(peer, sizes, rounds, iterations, field_size=512, threads=2):
    """Paired whole-process runs of this bake and gaseous-giganticus at equal settings, interleaved: every round
    runs, per particle count, the Blender baseline (bpy imported, nothing baked), this bake and the peer, the order
    of the two bakes alternating between rounds. gaseous-giganticus: ``-p`` particles, ``-c`` iterations, ``-F``
    velocity field size, ``-t`` threads, its fixed 1024 cube faces; ``-I`` = iterations, so it writes its six faces
    only at the start (which it always does) and at the end; its other settings are its defaults. Yields one JSON
    object per particle count."""
    cube = 1024  # gaseous-giganticus's DIM (fixed when it is compiled)
    rows = {n: {"ours": [], "peer": [], "baseline": [], "load": []} for n in sizes}
    me = [sys.executable, os.path.abspath(__file__), "--bake-process"]
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, ROOT)
        from core.png import write_png  # a palette for the peer (it needs an input image): latitude stripes

        lat = numpy.linspace(0.0, 1.0, 512, dtype=numpy.float32)[:, None, None]
        write_png(os.path.join(tmp, "palette.png"),
                  numpy.broadcast_to(0.5 + 0.4 * numpy.sin(lat * 37.0), (512, 1024, 3)))
        for rnd in range(rounds):
            for n in sizes:
                spec = {"particles": n, "iterations": iterations, "field_size": field_size, "cubemap": cube,
                        "threads": threads}
                out = os.path.join(tmp, f"peer_{n}")
                os.makedirs(out, exist_ok=True)
                runs = {
                    "ours": me + [json.dumps(spec)],
                    "peer": [peer, "-i", os.path.join(tmp, "palette.png"), "-o", os.path.join(out, "gg-"),
                             "-p", str(n), "-c", str(iterations), "-F", str(field_size), "-t", str(threads),
                             "-I", str(iterations)],
                    "baseline": me + [json.dumps({"bake": False})],
                }
                order = ["baseline", "ours", "peer"] if rnd % 2 == 0 else ["baseline", "peer", "ours"]
                load0 = os.getloadavg()[0]
                for name in order:
                    rows[n][name].append(_measure(runs[name], cwd=out if name == "peer" else None))
                rows[n]["load"].append((load0, os.getloadavg()[0]))
    for n in sizes:
        r = rows[n]
        ours, peer_, base = r["ours"], r["peer"], r["baseline"]
        speed = [p["wall_s"] / o["wall_s"] for o, p in zip(ours, peer_, strict=True)]
        cpu = [p["cpu_s"] / o["cpu_s"] for o, p in zip(ours, peer_, strict=True)]
        budget = [2 * p["peak_rss_mib"] + b["peak_rss_mib"] for p, b in zip(peer_, base, strict=True)]
        mem = [o["peak_rss_mib"] / m for o, m in zip(ours, budget, strict=True)]
        yield {
            "measure": "gasgiant_vs_gaseous_giganticus", "particles": n, "iterations": iterations,
            "field_size": field_size, "cubemap": f"6x{cube}", "threads": threads, "rounds": rounds,
            "peer_command": os.path.basename(peer) + f" -p {n} -c {iterations} -F {field_size} -t {threads} "
                            f"-I {iterations} -i palette.png",
            "ours_wall_s": _spread([o["wall_s"] for o in ours]), "peer_wall_s": _spread([p["wall_s"] for p in peer_]),
            "speedup_wall": _spread(speed), "target_speedup_wall": 2.0,
            "ours_cpu_s": _spread([o["cpu_s"] for o in ours]), "peer_cpu_s": _spread([p["cpu_s"] for p in peer_]),
            "cpu_ratio_peer_to_ours": _spread(cpu),
            "ours_peak_rss_mib": _spread([o["peak_rss_mib"] for o in ours], 1),
            "peer_peak_rss_mib": _spread([p["peak_rss_mib"] for p in peer_], 1),
            "bpy_baseline_peak_rss_mib": _spread([b["peak_rss_mib"] for b in base], 1),
            "memory_budget_mib": _spread(budget, 1), "memory_to_budget": _spread(mem),
            "ours_peak_above_baseline_mib": _spread([o["peak_rss_mib"] - b["peak_rss_mib"]
                                                     for o, b in zip(ours, base, strict=True)], 1),
            "load_before_after": [[round(a, 2), round(b, 2)] for a, b in r["load"]],
            "cpus": os.cpu_count(),
        }


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
    parser.add_argument("--only", choices=["throughput", "animated", "field", "peer"], help="run one group only")
    parser.add_argument("--peer", metavar="PATH", help="the gaseous-giganticus program to measure against (paired "
                        "whole-process runs at equal settings; not part of EnvFX, build it yourself)")
    parser.add_argument("--peer-particles", default="1000000,2000000,8000000",
                        help="particle counts of the paired runs, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds per particle count")
    parser.add_argument("--bake-process", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bake_process:
        print(json.dumps(bake_process(json.loads(args.bake_process))), flush=True)
        return 0
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
    if args.only == "peer" and not args.peer:
        parser.error("--only peer needs --peer PATH (the gaseous-giganticus program)")
    if args.peer and args.only in (None, "peer"):
        if not (os.path.isfile(args.peer) and os.access(args.peer, os.X_OK)):
            parser.error(f"--peer {args.peer}: not an executable file (build gaseous-giganticus with make and give "
                         f"the path of the program)")
        sizes = [int(x) for x in args.peer_particles.split(",") if x.strip()]
        for row in peer_rounds(args.peer, sizes, max(1, args.rounds), 30 if args.quick else 100):
            row.update(env)
            print(json.dumps(row), flush=True)
        if args.only == "peer":
            return 0
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
