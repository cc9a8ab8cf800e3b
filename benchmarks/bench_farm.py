"""Benchmark: farm jobs (`blender -c envfx farm`) run by `openjd run` on this machine vs the one-machine batch over
the same inputs: the 12-texture mips job, a 24-frame gas-giant sequence (small settings), as one task and in
three parts (--chunk 8: one step each, in turn), and a 48-frame snow buffer bake (1024 texels) in three parts
(--chunk 16: one step, its parts at once). Wall time of the batch
(one Blender process), of the job on one worker (one openjd session running every task, then Gather) and on two
workers (two sessions at once, each half of the tasks, then Gather); the job format's overhead per task. Rounds are
interleaved (batch, one worker, two workers, batch, ...); prints JSON lines with the median, min and max of each and
of the per-round ratios.

The Blender the tasks run is Blender as a Python module (this Python, through tests/blender/cli_in_subprocess.py):
each task starts it anew, as a farm worker starts Blender. openjd comes from this Python's folder or the 5.0 venv.

Run: .venvs/blender-5.0/bin/python benchmarks/bench_farm.py [--textures 12] [--size 256] [--frames 24] [--rounds 3]
    [--only mips,gas-giant,snow] [--snow-frames 48] [--snow-resolution 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from core import farm  # noqa: E402


def write_launcher(folder) -> str:
    """A `blender` for the jobs: `blender -b -c envfx ARGS` runs this checkout's command line in this Python (as
    tests/blender/test_farm.py does)."""
    path = os.path.join(folder, "blender")
    with open(path, "w") as fh:
        fh.write(f'#!/bin/sh\n[ "$1" = -b ] && shift\n[ "$1" = -c ] && shift 2\nexec "{sys.executable}" '
                 f'"{os.path.join(ROOT, "tests", "blender", "cli_in_subprocess.py")}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def find_openjd():
    venvs = os.environ.get("ENVFX_VENV_DIR") or os.path.join(ROOT, ".venvs")  # empty = unset, as in tools/venv.sh
    return (shutil.which("openjd", path=os.path.dirname(sys.executable))
            or shutil.which("openjd", path=os.path.join(venvs, "blender-5.0", "bin")) or shutil.which("openjd"))


def write_textures(folder, count, size):
    """``count`` RGBA PNG leaf cards of ``size`` pixels (a noisy alpha), written with numpy and zlib only."""
    import struct
    import zlib

    import numpy as np

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(7)
    for i in range(count):
        px = (rng.random((size, size, 4)) * 255).astype(np.uint8)
        raw = b"".join(b"\0" + px[y].tobytes() for y in range(size))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
               + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
        with open(os.path.join(folder, f"leaf{i:02d}.png"), "wb") as fh:
            fh.write(png)


def run(argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def openjd_run(openjd, job, *args):
    return subprocess.Popen([openjd, "run", os.path.join(job, farm.TEMPLATE_NAME), "-p",
                             "file://" + os.path.join(job, farm.PARAMETERS_NAME), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_job(openjd, job, step, tasks, workers) -> tuple:
    """(seconds of the tasks, seconds of Gather)."""
    shares = [[{"Task": str(t)} for t in range(1 + w, tasks + 1, workers)] for w in range(workers)]
    t0 = time.perf_counter()
    runs = [openjd_run(openjd, job, "--step", step, "--tasks", json.dumps(s)) for s in shares if s]
    codes = [r.wait() for r in runs]
    t1 = time.perf_counter()
    gather = openjd_run(openjd, job, "--step", "Gather", "--no-run-dependencies").wait()
    if any(codes) or gather:
        raise RuntimeError(f"the job {job} failed (openjd exit codes {codes}, Gather {gather})")
    return t1 - t0, time.perf_counter() - t1


def run_parts(openjd, job, parts) -> tuple:
    """A sequence in parts: each part's step in turn (each needs the one before), then Gather: (seconds of the
    parts, seconds of Gather)."""
    t0 = time.perf_counter()
    codes = [openjd_run(openjd, job, "--step", f"GasGiant{i}", "--no-run-dependencies").wait()
             for i in range(1, parts + 1)]
    t1 = time.perf_counter()
    gather = openjd_run(openjd, job, "--step", "Gather", "--no-run-dependencies").wait()
    if any(codes) or gather:
        raise RuntimeError(f"the job {job} failed (openjd exit codes {codes}, Gather {gather})")
    return t1 - t0, time.perf_counter() - t1


SNOW_SCENE = """
import bpy, sys
for o in list(bpy.data.objects):
    bpy.data.objects.remove(o)
bpy.ops.mesh.primitive_grid_add(x_subdivisions=16, y_subdivisions=16, size=12)
bpy.context.active_object.name = "Ground"
walkers = bpy.data.collections.new("Walkers")
bpy.context.scene.collection.children.link(walkers)
frames = int(sys.argv[-1])
for i in range(4):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.4, segments=8, ring_count=6)
    obj = bpy.context.active_object
    obj.name = f"Walker{i}"
    for coll in list(obj.users_collection):
        coll.objects.unlink(obj)
    walkers.objects.link(obj)
    for frame, x in ((1, -5.0), (frames, 5.0)):
        obj.location = (x if i % 2 else -x, -4.5 + 3 * i, 0.4)
        obj.keyframe_insert("location", frame=frame)
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[-2])
"""


def write_snow_scene(blender, folder, frames) -> str:
    """A 12 m ground with a snow cover and live trails, and 4 walkers crossing it over ``frames`` frames."""
    path = os.path.join(folder, "snow.blend")
    subprocess.run([sys.executable, "-c", SNOW_SCENE, path, str(frames)], check=True, stdout=subprocess.DEVNULL)
    run([blender, "-b", "-c", "envfx", "snow", path, "--generate", "--objects", "Ground", "--spacing", "0.1",
         "--trails", "--actors", "Walkers"])
    return path


def spread(values):
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)}


def bench(name, blender, openjd, work, command, tasks, step, rounds, worker_counts, farm_args=()):
    """Interleaved rounds of the batch and the job on each number of workers, into fresh output folders. With
    ``step`` None the job is a sequence in ``tasks`` parts (``farm_args``: its --chunk), run one part after the
    other."""
    times = {"batch": [], **{f"openjd_{w}": [] for w in worker_counts}}
    tasks_only, gathers = {w: [] for w in worker_counts}, []
    for r in range(rounds):
        out = os.path.join(work, f"{name}-batch-{r}")
        t0 = time.perf_counter()
        run([blender, "-b", "-c", "envfx", *command(out)])
        times["batch"].append(time.perf_counter() - t0)
        for w in worker_counts:
            out, job = os.path.join(work, f"{name}-out-{w}-{r}"), os.path.join(work, f"{name}-job-{w}-{r}")
            run([blender, "-b", "-c", "envfx", "farm", *command(out), "--out", job, "--blender", blender, *farm_args])
            if step is None:
                task_s, gather_s = run_parts(openjd, job, tasks)
            else:  # (writing the job is not part of the run)
                task_s, gather_s = run_job(openjd, job, step, tasks, w)
            times[f"openjd_{w}"].append(task_s + gather_s)
            tasks_only[w].append(task_s)
            gathers.append(gather_s)
    rows = []
    for mode, values in times.items():
        rows.append({"bench": "farm", "job": name, "mode": mode, "tasks": tasks if mode != "batch" else None,
                     "seconds": spread(values), "rounds": rounds})
    for w in worker_counts:
        ratios = [j / b for j, b in zip(times[f"openjd_{w}"], times["batch"])]
        row = {"bench": "farm", "job": name, "mode": f"openjd_{w}/batch", "ratio": spread(ratios)}
        if w == 1:  # one worker runs the batch's work task by task: the rest is the job format's cost
            row["overhead_per_task_s"] = spread([(t - b) / tasks for t, b in zip(tasks_only[1], times["batch"])])
            row["gather_s"] = spread(gathers)
        rows.append(row)
    return rows


def main(args=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--textures", type=int, default=12, help="textures of the mips job")
    parser.add_argument("--size", type=int, default=256, help="texture size in pixels")
    parser.add_argument("--frames", type=int, default=24, help="frames of the gas-giant sequence")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--only", default="mips,gas-giant,snow", help="the jobs to run (comma-separated)")
    parser.add_argument("--snow-frames", type=int, default=48, help="frames of the snow buffer bake")
    parser.add_argument("--snow-resolution", type=int, default=1024, help="texels of the snow buffer")
    args = parser.parse_args(args)
    openjd = find_openjd()
    if openjd is None:
        print(json.dumps({"bench": "farm", "error": "openjd-cli is not installed: tools/venv.sh 5.0 installs it"}))
        return 1
    work = tempfile.mkdtemp(prefix="envfx-bench-farm-")
    try:
        blender = write_launcher(work)
        only = set(args.only.split(","))
        rows = []
        if "mips" in only:
            tex = os.path.join(work, "tex")
            write_textures(tex, args.textures, args.size)
            rows += bench("mips", blender, openjd, work, lambda out: ["mips", tex, "--out", out], args.textures,
                          "Mips", args.rounds, (1, 2))
        if "snow" in only:
            # the snow buffer in three parts: each part reads the tracks of every frame and steps the buffer from
            # the first frame, and writes only its own frames' images; the parts run at once
            blend = write_snow_scene(blender, work, args.snow_frames)
            snow = ["--bake", "--resolution", str(args.snow_resolution), "--frames", f"1:{args.snow_frames}"]
            chunk = max(1, -(-args.snow_frames // 3))
            rows += bench("snow-parts", blender, openjd, work,
                          lambda out: ["snow", blend, *snow, "--out-dir", out], -(-args.snow_frames // chunk),
                          "Snow", args.rounds, (1, 2), farm_args=("--chunk", str(chunk)))
        if "gas-giant" in only:
            gas = ["--frames", str(args.frames), "--particles", "20000", "--iterations", "20", "--field", "16",
                   "--cubemap", "64", "--equirect", "128"]
            # a gas giant sequence is one task (each frame moves on the particles of the one before): two workers
            # would run the same one task
            rows += bench("gas-giant", blender, openjd, work, lambda out: ["gas-giant", "--out", out, *gas], 1,
                          "GasGiant", args.rounds, (1,))
            # the same sequence in parts of a third of its frames (--chunk): the parts run one after the other, each
            # from the state the one before saved, so the cost is a Blender start and a state per part
            chunk = max(1, -(-args.frames // 3))
            parts = -(-args.frames // chunk)
            rows += bench("gas-giant-parts", blender, openjd, work, lambda out: ["gas-giant", "--out", out, *gas],
                          parts, None, args.rounds, (1,), farm_args=("--chunk", str(chunk)))
        for row in rows:
            row["machine"] = "2 cores shared with other jobs: ratios within one run, not absolute times"
            print(json.dumps(row))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    code = main()
    sys.stdout.flush()
    os._exit(code)
