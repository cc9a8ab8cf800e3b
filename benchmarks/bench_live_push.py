"""Live grass push benchmark (JSON lines). Run with a venv python: ``python benchmarks/bench_live_push.py``.

Grass that actors push with no bake (#23, ``operators.snow.live_push``): a field of ``--blades`` blades (4 vertices
each: 250000 blades, 1M vertices) in the wind, pushed by ``--actors`` keyframed walkers through the live
interaction buffer (``--resolution`` texels a side, stepped by the frame handler at each frame change and written
into the image the grass reads), against a bare time-dependent Set Position on a copy of the field
(``framebench.reference_scene``), by frame changes (``framebench.frame_change``: the scenes take turns frame by
frame, for ``--rounds`` interleaved rounds; median ratio over the rounds and its spread). Beside it, in the same
rounds, the same field in the wind with push off against the same reference, so the push's own share shows, and
the handler's own seconds per frame (stepping the buffer one frame and writing the image: ``handler_s``).

One line, ``live_push_frame_change``: ``live`` and ``off`` (``framebench.summary``), ``handler_ms`` (median and
spread over every timed frame), the time to read the walkers' paths when Push Grass is pressed (``gather_s``:
every frame of the Snow bake's range stepped once), and the machine's load.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # tests.blender.conftest and tests.blender.api (which the conftest imports too)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blades", type=int, default=250000, help="grass blades (4 vertices each)")
    parser.add_argument("--actors", type=int, default=32, help="walkers")
    parser.add_argument("--resolution", type=int, default=256, help="live buffer texels a side")
    parser.add_argument("--frames", type=int, default=24, help="frames timed per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args(argv)

    import bpy
    import numpy as np

    import framebench
    from tests.blender import api
    from tests.blender import conftest  # enables the add-on from this checkout the way the tests do

    envfx = conftest.enable_addon()
    ops = importlib.import_module(envfx.__name__ + ".operators.wind")
    live_push = importlib.import_module(envfx.__name__ + ".operators.snow.live_push")
    load_start = os.getloadavg()[0]

    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    live = api.scene()
    live.name = "Live Push"
    live.frame_start, live.frame_end = 1, 60
    n = args.blades
    rng = np.random.default_rng(7)
    mesh, side = framebench.grass_mesh("Field", n, rng)
    field = bpy.data.objects.new("Field", mesh)
    live.collection.objects.link(field)
    api.view_layer().update()
    api.envfx(field).wind.category = "GRASS"
    ops.bake(live, [field], ao_samples=0)
    ops.add_wind(live, [field])
    # walkers: empties keyed to walk straight at 1.4 m/s over frames 1-60
    walkers = bpy.data.collections.new("Walkers")
    live.collection.children.link(walkers)
    start = rng.uniform(-side / 2, side / 2, (args.actors, 2))
    heading = rng.uniform(0, 2 * math.pi, args.actors)
    for i in range(args.actors):
        walker = bpy.data.objects.new(f"Walker {i}", None)
        walker.empty_display_size = 0.4
        walkers.objects.link(walker)
        for frame in (1, 60):
            xy = start[i] + (frame - 1) * 1.4 / 24.0 * np.array([math.cos(heading[i]), math.sin(heading[i])])
            walker.location = (float(xy[0]), float(xy[1]), 0.0)
            walker.keyframe_insert("location", frame=frame)
        api.linear(walker)
    snow = api.envfx(live).snow
    snow.actors = walkers
    snow.buffer_resolution = args.resolution
    snow.frame_start, snow.frame_end = 1, 60
    t0 = time.perf_counter()
    text = ops.grass_push(live)
    gather_s = time.perf_counter() - t0
    assert "live" in text, text
    still = framebench.new_scene("Push Off", live)
    twin = bpy.data.objects.new("Field Push Off", mesh)
    still.collection.objects.link(twin)
    api.envfx(twin).wind.category = "GRASS"
    ops.add_wind(still, [twin])
    reference = framebench.reference_scene(live, [mesh.copy()])
    # the handler's own time: live_push.show wrapped (the handler calls it through the module)
    shown = live_push.show
    handler_s: list[float] = []

    def timed(scene):
        t = time.perf_counter()
        wrote = shown(scene)
        if wrote:
            handler_s.append(time.perf_counter() - t)
        return wrote

    setattr(live_push, "show", timed)  # noqa: B010 - a module object: pyright refuses an attribute assignment
    pairs = {"live": live, "off": still}
    try:
        runs = framebench.interleaved(pairs, reference, range(10, 11 + args.frames), args.rounds)
    finally:
        setattr(live_push, "show", shown)  # noqa: B010
    # the push really ran: the pushed field differs from the one with push off
    live.frame_set(30)
    still.frame_set(30)
    on_co = np.empty(12 * n, np.float32)
    off_co = np.empty(12 * n, np.float32)
    for obj, scene, out in ((field, live, on_co), (twin, still, off_co)):
        depsgraph = scene.view_layers[0].depsgraph
        assert depsgraph is not None
        api.mesh(obj.evaluated_get(depsgraph)).vertices.foreach_get("co", out)
    ms = [1000.0 * s for s in handler_s]
    framebench.emit(bench="live_push_frame_change", vertices=4 * n, blades=n, actors=args.actors,
                    buffer_resolution=args.resolution, target_ratio=3.5, live=framebench.summary(runs["live"]),
                    off=framebench.summary(runs["off"]),
                    handler_ms=dict(framebench.spread(ms), frames=len(ms), median=round(statistics.median(ms), 2)),
                    gather_s=round(gather_s, 2), gather_frames=60,
                    pushed_vertices=int((np.abs(on_co - off_co).reshape(-1, 3).max(1) > 1e-3).sum()),
                    loadavg_1min_start=round(load_start, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
