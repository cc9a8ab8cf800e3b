"""Benchmark: the 2D light map of a top-down level (a 2048x2048 map, 32 point lights, 16 penumbra samples) against a
Cycles CPU bake of the same scene at the same resolution, in the same run. Peak memory of the EnvFX bake (numpy
allocations, by tracemalloc) and of the process. Prints JSON lines.

Which Cycles sample count is "the same answer": Cycles bakes a window of --match-size x --match-size texels of the
map, at the full map's texel size (a plane over that window: Cycles' noise per texel and our rasterising both stay as
at full size), at each of --match-samples; the shadow masks there (where the walls take more than half of the light
that reaches the ground without them: our bake without walls, in Cycles' units (/ pi, as tests/blender checks), so
that only Cycles' own noise counts) are compared with the same window of our full map: the first count whose IoU
reaches 0.9 is the matching count. The full-size Cycles bake runs at
--cycles-samples (a cheap count on a shared machine); its time at the matching count is extrapolated linearly in
samples, and both speed-ups are printed.

Run: $(tools/venv.sh 5.0) benchmarks/bench_lightmap.py [--size 2048] [--lights 32] [--samples 16]
     [--cycles-samples 16] [--match-size 128] [--match-samples 16,64,256,1024] [--no-cycles]
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
sys.path.insert(0, os.path.join(ROOT, "tests", "blender"))

import bpy  # noqa: E402

import conftest  # noqa: E402  (enables the add-on the way the tests do)


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


def cycles_bake(bpy, scene, ground, size, samples, name="CyclesBake"):
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
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


def shadow_iou(cyc, cyc_open, ours, ours_open, occ):
    """IoU of the shadow masks: where the walls take more than half of the light (each against its own bake
    without walls), on the free ground the light reaches."""
    consider = ~occ & (cyc_open > 1e-3 * cyc_open.max()) & (ours_open > 1e-3 * ours_open.max())
    a = (cyc < 0.5 * cyc_open) & consider
    b = (ours < 0.5 * ours_open) & consider
    return float((a & b).sum() / max((a | b).sum(), 1))


def window_plane(bpy, scene, region, z):
    """A UV-mapped plane over ``region`` just above the ground, for Cycles to bake a window of the map into."""
    x0, y0, x1, y1 = region
    mesh = bpy.data.meshes.new("MatchWindow")
    mesh.from_pydata([(x0, y0, z), (x1, y0, z), (x1, y1, z), (x0, y1, z)], [], [(0, 1, 2, 3)])
    uv = mesh.uv_layers.new(name="UVMap")
    for loop, co in zip(uv.data, [(0, 0), (1, 0), (1, 1), (0, 1)]):
        loop.uv = co
    obj = bpy.data.objects.new("MatchWindow", mesh)
    scene.collection.objects.link(obj)
    return obj


def best_window(ours, open_map, occ, n):
    """(row, column) of the n x n window (on a grid of candidates) with the most shadow-edge texels of our map."""
    shadow = (ours < 0.5 * open_map) & ~occ
    edge = np.zeros_like(shadow)
    edge[1:] |= shadow[1:] != shadow[:-1]
    edge[:, 1:] |= shadow[:, 1:] != shadow[:, :-1]
    h, w = edge.shape
    best, where = -1, (0, 0)
    for r in range(0, max(h - n, 0) + 1, max(n // 2, 1)):
        for c in range(0, max(w - n, 0) + 1, max(n // 2, 1)):
            count = int(edge[r:r + n, c:c + n].sum())
            if count > best:
                best, where = count, (r, c)
    return where


def matching_samples(bpy, scene, ground, walls, grid, occ, ours, ours_open, n, counts, common):
    """The first Cycles sample count whose shadow masks agree with ours (IoU >= 0.9) on an n x n window of the map at
    its own texel size; prints a line per count. None when none does."""
    n = min(n, grid.width, grid.height)
    r, c = best_window(ours, ours_open, occ, n)
    x0 = grid.region[0] + c * grid.tx
    y1 = grid.region[3] - r * grid.ty
    window = (x0, y1 - n * grid.ty, x0 + n * grid.tx, y1)
    plane = window_plane(bpy, scene, window, max(v.co.z for v in ground.data.vertices) + 1e-3)
    ground.hide_render = True
    try:
        sl = (slice(r, r + n), slice(c, c + n))
        cyc_open = ours_open[sl] / np.pi
        found = None
        for k in counts:
            seconds, cyc = cycles_bake(bpy, scene, plane, n, k, f"CyclesMatch{k}")
            iou = shadow_iou(cyc.sum(2), cyc_open, ours[sl], ours_open[sl], occ[sl])
            print(json.dumps({**common, "what": "cycles_match", "window": [round(v, 3) for v in window],
                              "match_size": n, "cycles_samples": k, "seconds": round(seconds, 3),
                              "shadow_iou": round(iou, 4)}), flush=True)
            if found is None and iou >= 0.9:
                found = k
    finally:
        ground.hide_render = False
        bpy.data.objects.remove(plane)
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--lights", type=int, default=32)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--cycles-samples", type=int, default=16)
    parser.add_argument("--match-size", type=int, default=128)
    parser.add_argument("--match-samples", default="16,64,256,1024")
    parser.add_argument("--no-cycles", action="store_true")
    args = parser.parse_args(argv)
    envfx = conftest.enable_addon()
    ops = importlib.import_module(envfx.__name__ + ".operators.lightmap")
    core = importlib.import_module(envfx.__name__ + ".core.lightmap2d")
    scene, ground, walls, lights = build_level(bpy, args.lights)
    s = scene.envfx.lightmap
    s.ground, s.obstacles, s.lights = ground, walls, lights
    s.resolution, s.penumbra_samples, s.apply_to_ground = args.size, args.samples, False
    out = tempfile.mkdtemp(prefix="envfx-bench-lightmap-")
    s.output_dir = out
    common = {"bench": "lightmap", "blender": bpy.app.version_string, "size": args.size, "lights": args.lights,
              "penumbra_samples": args.samples, "cpus": os.cpu_count(), "load_avg_1min": os.getloadavg()[0]}
    # the map itself (core), then the whole operator path (gather, bake, write the three files)
    inputs = ops.gather(scene, ())
    tracemalloc.start()
    t0 = time.perf_counter()
    grid = core.make_grid(inputs.region, inputs.settings.resolution)
    occ = core.rasterise(grid, inputs.triangles)
    result = core.bake(grid, occ, inputs.lights, inputs.ground_z, inputs.settings)
    t_core = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    t0 = time.perf_counter()
    ops.bake_lightmap(scene)
    t_all = time.perf_counter() - t0
    row = {**common, "what": "envfx", "seconds_core": round(t_core, 3), "seconds_with_files": round(t_all, 3),
           "peak_numpy_mb": round(peak / 2 ** 20, 1),
           "peak_process_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    print(json.dumps(row), flush=True)
    if args.no_cycles:
        return 0
    counts = sorted(int(c) for c in args.match_samples.split(","))
    open_map = core.bake(grid, np.zeros_like(occ), inputs.lights, inputs.ground_z, inputs.settings).rgb.sum(2)
    match = matching_samples(bpy, scene, ground, walls, grid, occ, result.rgb.sum(2), open_map, args.match_size,
                             counts, common)
    t_cycles, cyc = cycles_bake(bpy, scene, ground, args.size, args.cycles_samples)
    # the full-size masks: Cycles against our open map in its units (a full-size Cycles bake without walls would
    # double the longest part of the run); noisy at a low sample count, which is what the match above measures
    iou = shadow_iou(cyc.sum(2), open_map / np.pi, result.rgb.sum(2), open_map, occ)
    row = {**common, "what": "cycles", "cycles_samples": args.cycles_samples, "seconds": round(t_cycles, 3),
           "speedup_core": round(t_cycles / t_core, 2), "speedup_with_files": round(t_cycles / t_all, 2),
           "shadow_iou": round(iou, 4), "matching_samples": match}
    if match is not None:
        t_match = t_cycles * match / args.cycles_samples
        row.update(seconds_at_matching_samples_extrapolated=round(t_match, 1),
                   speedup_core_at_matching=round(t_match / t_core, 2),
                   speedup_with_files_at_matching=round(t_match / t_all, 2))
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
