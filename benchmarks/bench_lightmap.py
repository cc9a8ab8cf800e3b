"""Benchmark: the 2D light map of a top-down level (a 2048x2048 map, 32 point lights, 16 penumbra samples) against a
Cycles CPU bake of the same scene at the same resolution, in the same run. Peak memory of the EnvFX bake (numpy
allocations, by tracemalloc, all threads) and of the process. Prints JSON lines.

Which Cycles sample count gives "the same answer" (the acceptance of issue #21): Cycles bakes a sample of the map,
--windows x --windows windows of --match-size texels spread evenly over it, at the full map's texel size (one mesh,
one bake: Cycles' noise per texel and our rasterising both stay as at full size), at each of --match-samples in
turn; per count the shadow masks there (where the walls take more than half of the light that reaches the ground
without them: our bake without walls, in Cycles' units (/ pi, as tests/blender checks), so that only Cycles' own
noise counts) are compared with the same windows of our full map (intersection over union), and the lit ground's
brightness is correlated after one global scale. The lowest count with IoU >= 0.9 and correlation >= 0.95 is the
matching count.

Timing: --rounds rounds, each our bake (the core: occupancy and map) then a full-size Cycles bake at the matching
count (at --max-full-samples when the match needs more: then its time at the matching count is extrapolated
linearly in samples from full-size bakes at 1 sample and at --max-full-samples, and says so). Ratios per round and
their median, min and max.

Run: $(tools/venv.sh 5.0) benchmarks/bench_lightmap.py [--size 2048] [--lights 32] [--samples 16] [--rounds 2]
     [--match-size 128] [--windows 4] [--match-samples 1,2,4,8,16,32,64,128,256] [--max-full-samples 16]
     [--threads N] [--no-cycles]
"""

import argparse
import importlib
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # tests.blender.conftest and tests.blender.api (which the conftest imports too)

import bpy  # noqa: E402

from tests.blender import api  # noqa: E402  (typed handles on the API that check at run time)
from tests.blender import conftest  # noqa: E402  (enables the add-on the way the tests do)


def build_level(bpy, n_lights: int, seed: int = 3):
    """A 64 x 64 m level: a ground plane, 40 wall blocks 6 m tall, ``n_lights`` point lights 2.5 m up, none inside
    a wall."""
    rng = np.random.default_rng(seed)
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = bpy.context.scene
    mesh = bpy.data.meshes.new("Ground")
    mesh.from_pydata([(-32, -32, 0), (32, -32, 0), (32, 32, 0), (-32, 32, 0)], [], [(0, 1, 2, 3)])
    uv = mesh.uv_layers.new(name="UVMap")
    for loop, co in zip(uv.data, [(0, 0), (1, 0), (1, 1), (0, 1)]):
        loop.uv = co
    ground = bpy.data.objects.new("Ground", mesh)
    scene.collection.objects.link(ground)
    walls = bpy.data.collections.new("Walls")
    scene.collection.children.link(walls)
    boxes = []
    for k in range(40):
        x, y = rng.uniform(-29, 29, 2)
        sx, sy = (rng.uniform(0.5, 8), 0.6) if k % 2 else (0.6, rng.uniform(0.5, 8))
        boxes.append((x, y, sx, sy))
        verts = [(x + dx * sx / 2, y + dy * sy / 2, z) for z in (0, 6) for dx, dy in ((-1, -1), (1, -1), (1, 1),
                                                                                         (-1, 1))]
        faces = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
        wm = bpy.data.meshes.new(f"Wall{k}")
        wm.from_pydata(verts, [], faces)
        walls.objects.link(bpy.data.objects.new(f"Wall{k}", wm))
    lights = bpy.data.collections.new("Lights")
    scene.collection.children.link(lights)
    placed = 0
    while placed < n_lights:
        x, y = rng.uniform(-30, 30, 2)
        if any(abs(x - bx) < bsx / 2 + 0.5 and abs(y - by) < bsy / 2 + 0.5 for bx, by, bsx, bsy in boxes):
            continue
        data = bpy.data.lights.new(f"Lamp{placed}", "POINT")
        data.energy = float(rng.uniform(300, 900))
        data.shadow_soft_size = 0.25
        data.color = tuple(rng.uniform(0.6, 1.0, 3))
        obj = bpy.data.objects.new(f"Lamp{placed}", data)
        obj.location = (x, y, 2.5)
        lights.objects.link(obj)
        placed += 1
    bpy.context.view_layer.update()
    return scene, ground, walls, lights


def cycles_bake(bpy, scene, ground, size, samples, name="CyclesBake", threads=0):
    """Cycles CPU bake of the direct diffuse light on ``ground`` into a size x size image: (seconds, (size, size, 3)
    array, row 0 at the top)."""
    scene.render.engine = "CYCLES"
    if threads:
        scene.render.threads_mode = "FIXED"
        scene.render.threads = threads
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    if hasattr(scene.cycles, "use_adaptive_sampling"):
        scene.cycles.use_adaptive_sampling = False
    img = bpy.data.images.new(name, size, size, float_buffer=True)
    mat = bpy.data.materials.get("BakeGround") or bpy.data.materials.new("BakeGround")
    if bpy.app.version < (5, 0, 0):
        mat.use_nodes = True
    node = mat.node_tree.nodes.get("BakeTarget") or mat.node_tree.nodes.new("ShaderNodeTexImage")
    node.name = "BakeTarget"
    node.image = img
    mat.node_tree.nodes.active = node
    if not ground.data.materials:
        ground.data.materials.append(mat)
    for obj in scene.objects:
        obj.select_set(obj == ground)
    bpy.context.view_layer.objects.active = ground
    scene.render.bake.margin = 0
    t0 = time.perf_counter()
    bpy.ops.object.bake(type="DIFFUSE", pass_filter={"DIRECT"}, use_clear=True)
    seconds = time.perf_counter() - t0
    px = np.empty(size * size * 4, dtype=np.float32)
    img.pixels.foreach_get(px)
    bpy.data.images.remove(img)
    return seconds, px.reshape(size, size, 4)[::-1, :, :3].copy()


def compare(cyc, cyc_open, ours, ours_open, occ):
    """(shadow IoU, brightness correlation after one global scale, that scale): the shadow masks are where the walls
    take more than half of the light (each against its own map without walls), on the free ground the light reaches;
    the brightness is compared on the ground both call lit."""
    consider = ~occ & (cyc_open > 1e-3 * cyc_open.max()) & (ours_open > 1e-3 * ours_open.max())
    a = (cyc < 0.5 * cyc_open) & consider
    b = (ours < 0.5 * ours_open) & consider
    iou = float((a & b).sum() / max((a | b).sum(), 1))
    lit = consider & ~a & ~b
    scale = float((ours[lit] * cyc[lit]).sum() / max((ours[lit] ** 2).sum(), 1e-30))
    corr = float(np.corrcoef(ours[lit] * scale, cyc[lit])[0, 1]) if lit.sum() > 2 else float("nan")
    return iou, corr, scale


def windows_mesh(bpy, scene, grid, n, k, z):
    """One mesh of k x k quads, each over an n x n texel window of the map (spread evenly over it, on texel lines),
    UV-mapped to its own n x n tile of a (k n) x (k n) image. Returns the object and the windows' (row, column)."""
    h, w = grid.height, grid.width
    rows = [int(round((i + 0.5) * h / k - n / 2)) for i in range(k)]
    cols = [int(round((j + 0.5) * w / k - n / 2)) for j in range(k)]
    verts, faces, uvs, where = [], [], [], []
    for a, r in enumerate(rows):
        for b, c in enumerate(cols):
            x0, x1 = grid.region[0] + c * grid.tx, grid.region[0] + (c + n) * grid.tx
            y1, y0 = grid.region[3] - r * grid.ty, grid.region[3] - (r + n) * grid.ty
            base = len(verts)
            verts += [(x0, y0, z), (x1, y0, z), (x1, y1, z), (x0, y1, z)]
            faces.append((base, base + 1, base + 2, base + 3))
            # image row 0 is the bottom: window (a, b) goes to image rows (k - 1 - a) n .. , columns b n ..
            u0, u1 = b / k, (b + 1) / k
            v0, v1 = (k - 1 - a) / k, (k - a) / k
            uvs += [(u0, v0), (u1, v0), (u1, v1), (u0, v1)]
            where.append((r, c))
    mesh = bpy.data.meshes.new("MatchWindows")
    mesh.from_pydata(verts, [], faces)
    uv = mesh.uv_layers.new(name="UVMap")
    for loop, co in zip(uv.data, uvs):
        loop.uv = co
    obj = bpy.data.objects.new("MatchWindows", mesh)
    scene.collection.objects.link(obj)
    return obj, where


def matching_samples(bpy, scene, ground, grid, occ, ours, ours_open, n, k, counts, common, threads):
    """The lowest Cycles sample count whose shadow masks agree with ours (IoU >= 0.9) and whose lit-ground
    brightness correlates >= 0.95 after one global scale, on k x k windows of n x n texels spread over the map; a
    line per count tried (stops at the first that agrees). None when none does."""
    n = min(n, grid.width // k, grid.height // k)
    obj, where = windows_mesh(bpy, scene, grid, n, k, max(v.co.z for v in ground.data.vertices) + 1e-3)
    ground.hide_render = True
    found = None
    try:
        def tiles(img):  # (k n, k n) image, row 0 at the top -> the windows side by side as (k k, n, n)
            return np.stack([img[a * n:(a + 1) * n, b * n:(b + 1) * n] for a in range(k) for b in range(k)])
        mine = np.stack([ours[r:r + n, c:c + n] for r, c in where])
        mine_open = np.stack([ours_open[r:r + n, c:c + n] for r, c in where])
        walls = np.stack([occ[r:r + n, c:c + n] for r, c in where])
        for count in counts:
            seconds, cyc = cycles_bake(bpy, scene, obj, k * n, count, f"CyclesMatch{count}", threads)
            iou, corr, scale = compare(tiles(cyc.sum(2)), mine_open / np.pi, mine, mine_open, walls)
            ok = iou >= 0.9 and corr >= 0.95
            print(json.dumps({**common, "what": "cycles_match", "windows": k * k, "match_size": n,
                              "texels": k * k * n * n, "cycles_samples": count, "seconds": round(seconds, 3),
                              "shadow_iou": round(iou, 4), "brightness_corr": round(corr, 4),
                              "scale": round(scale, 4), "agrees": ok}), flush=True)
            if ok:
                found = count
                break
    finally:
        ground.hide_render = False
        bpy.data.objects.remove(obj)
    return found


def spread(values):
    values = sorted(values)
    return {"median": round(float(np.median(values)), 3), "min": round(values[0], 3), "max": round(values[-1], 3),
            "n": len(values)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--lights", type=int, default=32)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--match-size", type=int, default=128)
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--match-samples", default="1,2,4,8,16,32,64,128,256")
    parser.add_argument("--max-full-samples", type=int, default=16)
    parser.add_argument("--threads", type=int, default=0, help="ours and Cycles' (0: every CPU)")
    parser.add_argument("--no-cycles", action="store_true")
    args = parser.parse_args(argv)
    envfx = conftest.enable_addon()
    ops = importlib.import_module(envfx.__name__ + ".operators.lightmap")
    core = importlib.import_module(envfx.__name__ + ".core.lightmap2d")
    scene, ground, walls, lights = build_level(bpy, args.lights)
    s = api.envfx(scene).lightmap
    s.ground, s.obstacles, s.lights = ground, walls, lights
    s.resolution, s.penumbra_samples, s.apply_to_ground = args.size, args.samples, False
    s.output_dir = tempfile.mkdtemp(prefix="envfx-bench-lightmap-")
    threads = args.threads or core.bake_threads()
    common = {"bench": "lightmap", "blender": bpy.app.version_string, "size": args.size, "lights": args.lights,
              "penumbra_samples": args.samples, "cpus": os.cpu_count(), "threads": threads}
    inputs = ops.gather(scene, ())

    def ours():
        """The map (core: occupancy and bake) with its numpy peak; seconds, peak bytes, grid, occupancy, result."""
        tracemalloc.start()
        t0 = time.perf_counter()
        grid = core.make_grid(inputs.region, inputs.settings.resolution)
        occ = core.rasterise(grid, inputs.triangles)
        result = core.bake(grid, occ, inputs.lights, inputs.ground_z, inputs.settings, threads=threads)
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return seconds, peak, grid, occ, result

    t_core, peak, grid, occ, result = ours()
    # the whole operator path once (gather, bake, write the three files)
    t0 = time.perf_counter()
    ops.bake_lightmap(scene)
    t_all = time.perf_counter() - t0
    print(json.dumps({**common, "what": "envfx", "seconds_core": round(t_core, 3),
                      "seconds_with_files": round(t_all, 3), "peak_numpy_mb": round(peak / 2 ** 20, 1),
                      "peak_process_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "load_avg_1min": round(os.getloadavg()[0], 2)}), flush=True)
    if args.no_cycles:
        return 0
    counts = sorted(int(c) for c in args.match_samples.split(","))
    ours_map = result.rgb.sum(2)
    open_map = core.bake(grid, np.zeros_like(occ), inputs.lights, inputs.ground_z, inputs.settings,
                         threads=threads).rgb.sum(2)
    match = matching_samples(bpy, scene, ground, grid, occ, ours_map, open_map, args.match_size, args.windows,
                             counts, common, threads)
    full = match if match is not None and match <= args.max_full_samples else args.max_full_samples
    ratios, ours_times, cyc_times, one_times = [], [], [], []
    for k in range(args.rounds):
        t_ours, peak_k, *_ = ours()
        ours_times.append(t_ours)
        peak = max(peak, peak_k)
        t_cyc, cyc = cycles_bake(bpy, scene, ground, args.size, full, threads=threads)
        cyc_times.append(t_cyc)
        t_one = None
        if full != match:  # the time per sample: a 1-sample bake too
            t_one, _ = cycles_bake(bpy, scene, ground, args.size, 1, "CyclesOne", threads)
            one_times.append(t_one)
        # (t_one is None when full == match)
        t_match = t_cyc if t_one is None or match is None else t_one + (t_cyc - t_one) * (match - 1) / (full - 1)
        ratios.append(t_match / t_ours)
        iou, corr, _ = compare(cyc.sum(2), open_map / np.pi, ours_map, open_map, occ)
        print(json.dumps({**common, "what": "round", "round": k, "seconds_ours": round(t_ours, 3),
                          "cycles_samples": full, "seconds_cycles": round(t_cyc, 3),
                          "seconds_cycles_1_sample": None if t_one is None else round(t_one, 3),
                          "matching_samples": match, "seconds_cycles_at_matching": round(t_match, 3),
                          "extrapolated": full != match, "speedup": round(ratios[-1], 2),
                          "full_size_shadow_iou": round(iou, 4), "full_size_brightness_corr": round(corr, 4),
                          "load_avg_1min": round(os.getloadavg()[0], 2)}), flush=True)
    print(json.dumps({**common, "what": "summary", "matching_samples": match, "cycles_samples_timed": full,
                      "extrapolated": full != match, "seconds_ours": spread(ours_times),
                      "seconds_cycles": spread(cyc_times),
                      "seconds_cycles_1_sample": spread(one_times) if one_times else None,
                      "speedup": spread(ratios), "peak_numpy_mb": round(peak / 2 ** 20, 1),
                      "peak_process_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "load_avg_1min": round(os.getloadavg()[0], 2)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
