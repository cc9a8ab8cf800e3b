"""Snow benchmarks (JSON lines): live trails per frame vs a bare Set Position, buffer bake, cover generation, the
actors' snow coverage per frame on flat and on bent snow (``--only coverage``).

Run with a venv python that has bpy: ``python benchmarks/bench_snow.py [--quick] [--only shot,trails]``.

The quoted measure of the trails is ``--only shot`` (lines "method": "frame_change", "quoted": true): a shot of
``--shot-frames`` frames (250) in which 32 actors walk across the whole 1M-vertex snow field, the snow's scene
against a reference scene holding the same mesh with a bare time-dependent Set Position (``framebench``), their
frames stepped alternately, each round from a fresh simulation; one line per span of frames (the cost against the
frame number: it grows as the trails spread) and one for the whole shot.

``--only shot_parts`` splits the shot's frame changes into the simulation's step and the display (a frame shown
again from the simulation's cache); ``--only handler_shot`` runs the shot with the trail state held in numpy
(``core.snow.TrailState`` advanced by a frame handler, one float attribute written per frame): the cost of that
design, not of the add-on's trails.

``--only numpy_shot`` runs the same shot with the add-on's Numpy trails engine (Trails Engine: Numpy, then Add
Trails), by the same frame changes: the quoted measure of that engine (lines "engine": "numpy").

``--only numpy_floor`` measures the floor of moving the snow from a numpy frame handler instead (writing every
vertex's position with ``foreach_set``, nothing computed) by the same frame changes.

The older measure (``--only trails``, "method": "frame_change_sequential", "quoted": false) follows.

The trails are timed against the bare Set Position in interleaved rounds (the machine is shared): ``ratio`` is the
median of the rounds' ratios of median frame times, ``ratio_min`` the best trails frame over the best bare frame;
``load`` is the 1-minute load average when the line is printed. The trails run on two vertex layouts of the same
grid: ``cells`` (vertices cell after cell of the trails' table, as EnvFX's generated snow has them) and ``rows``
(grid rows, as any other mesh may have them). ``--camera`` places the active camera: ``none`` (the default, an
empty scene has none: nothing fades), ``near`` (the whole snow within Camera Fade Start: only the trails move) or
``across`` (2 m above the snow's centre, fading from 20 to 40 m: the far part of the 100 m snow lies flat, every
vertex moves).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "blender"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def emit(**kw):
    import bpy

    kw.setdefault("blender", bpy.app.version_string)
    kw["load"] = os.getloadavg()[0]
    print(json.dumps(kw), flush=True)


def grid_mesh(bpy, name, n, size, layout="cells"):
    """An n x n vertex grid mesh built through foreach_set: with layout "cells" its vertices come cell after cell
    of the trails' table, as EnvFX's generated snow has them; "rows" keeps grid rows (any other mesh)."""
    from core import snow as core_snow

    xs = np.linspace(-size / 2, size / 2, n, dtype=np.float32)
    X, Y = np.meshgrid(xs, xs)
    verts = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size, np.float32)], 1)
    ids = np.arange(n * n).reshape(n, n)
    faces = np.stack([ids[:-1, :-1], ids[:-1, 1:], ids[1:, 1:], ids[1:, :-1]], -1).reshape(-1, 4)
    lod = core_snow.CoverMesh(vertices=verts, faces=faces.astype(np.int32),
                              thickness=np.full(n * n, 0.3, np.float32), ground=np.zeros(n * n, np.float32))
    if layout == "cells":
        lod = core_snow.by_trail_cells(lod)
    from importlib import import_module

    ops = import_module("bl_ext.envfx_dev.envfx.operators.snow")
    return ops.mesh_from_cover(name, lod)


def _time_frames(scene, frames):
    """Per-frame seconds of frames 2 .. frames + 1, after a reset to frame 1."""
    scene.frame_set(1)
    t = []
    for f in range(2, frames + 2):
        t0 = time.perf_counter()
        scene.frame_set(f)
        t.append(time.perf_counter() - t0)
    return float(np.median(t)), float(np.min(t))


def _bare_tree(bpy, name):
    tree = bpy.data.node_groups.new(name, "GeometryNodeTree")
    tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    return tree, tree.nodes.new("NodeGroupInput"), tree.nodes.new("NodeGroupOutput")


def _use(obj, tree):
    for m in list(obj.modifiers):
        obj.modifiers.remove(m)
    mod = obj.modifiers.new(tree.name, "NODES")
    mod.node_group = tree


def walk_across(bpy, collection, n_actors, frames, size, seed=0):
    """``n_actors`` Empties keyed to walk across the whole snow field (``size`` metres square, centred) from frame 1
    to ``frames`` + 1: half from the west edge to the east one, half from the south to the north, each at its own
    random offset and with a random sideways drift, so the trails end up over all of it."""
    rng = np.random.default_rng(seed)
    half = 0.48 * size
    for i in range(n_actors):
        a = bpy.data.objects.new(f"Walker{i:02d}", None)
        a.empty_display_size = 0.5
        collection.objects.link(a)
        across = rng.uniform(-half, half)
        drift = rng.uniform(-0.1, 0.1) * size
        start, end = np.array([-half, across]), np.array([half, np.clip(across + drift, -half, half)])
        if i % 2:
            start, end = start[::-1], end[::-1]
        a.location = (*start, 0.3)
        a.keyframe_insert("location", frame=1)
        a.location = (*end, 0.3)
        a.keyframe_insert("location", frame=frames + 1)


def shot_scene(bpy, n_side, n_actors, frames):
    """The shot's scene, made the file's only scene: a 100 m snow grid of ``n_side`` x ``n_side`` vertices,
    ``n_actors`` walking across it over ``frames`` frames (the scene's actors), at frame 1; and its reference scene
    (``framebench``). Returns (scene, snow mesh, snow object, reference scene)."""
    import framebench
    from tests.blender import api  # (imports bpy: not at the top of this module)

    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    size = 100.0
    mesh = grid_mesh(bpy, "Snow", n_side, size)
    snow = bpy.data.objects.new("Snow", mesh)
    scene.collection.objects.link(snow)
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    walk_across(bpy, actors, n_actors, frames, size)
    api.envfx(scene).snow.actors = actors
    scene.frame_start, scene.frame_end = 1, frames + 1
    scene.frame_set(1)
    return scene, mesh, snow, framebench.reference_scene(scene, [mesh])


def bench_shot(n_side, n_actors, frames, rounds, bins):
    """The trails over a shot of ``frames`` frames (32 actors walking across the whole snow) by frame changes,
    against the reference scene (``framebench``); every round restarts the simulation (the trails removed and
    given again, untimed), so each computes the shot afresh."""
    import bpy
    from tests.blender import api, conftest  # (import bpy: not at the top of this module)
    import framebench

    envfx = conftest.enable_addon()
    scene, mesh, snow, ref = shot_scene(bpy, n_side, n_actors, frames)
    snow["envfx_snow"] = 0

    def restart(_round):
        scene.frame_set(1)
        envfx.operators.snow.remove_trails([snow], scene)
        envfx.operators.snow.add_trails(scene, [snow])
        api.view_layer().update()

    got = framebench.frame_change(scene, ref, range(1, frames + 2), rounds, before_round=restart)
    spans = framebench.per_frame(got, bins)
    for span in spans:
        emit(bench="trails_shot_per_frame", method="frame_change", quoted=True, vertices=n_side * n_side,
             actors=n_actors, shot_frames=frames, rounds=rounds, **span, target_ratio=3.0)
    emit(bench="trails_shot", vertices=n_side * n_side, actors=n_actors, shot_frames=frames,
         **framebench.summary(got), worst_span_ratio=max(sp["ratio_median"] for sp in spans), target_ratio=3.0)
    bpy.data.scenes.remove(ref)


def bench_numpy_floor(n_side, frames, rounds):
    """The floor of moving the snow from Python instead of geometry nodes (a numpy trail state updated by a frame
    handler): a frame_change_pre handler that only writes every vertex's position (rest + a frame-dependent lift,
    one numpy add) with ``foreach_set`` and tags the mesh, nothing computed, against the reference scene."""
    import bpy
    import framebench
    from tests.blender import api  # (imports bpy: not at the top of this module)

    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    scene.frame_start, scene.frame_end = 1, frames + 1
    mesh = framebench.grid_mesh("Snow", n_side)
    ref = framebench.reference_scene(scene, [mesh.copy()])
    obj = bpy.data.objects.new("Written", mesh)
    scene.collection.objects.link(obj)
    rest = np.empty(3 * len(mesh.vertices), np.float32)
    positions = api.of(bpy.types.FloatVectorAttribute, mesh.attributes["position"]).data
    positions.foreach_get("vector", rest)
    lift = np.zeros_like(rest)
    lift[2::3] = 1.0

    def write(sc, *_args):
        if sc != scene:
            return
        positions.foreach_set("vector", rest + np.float32(1e-4 * sc.frame_current) * lift)
        mesh.update_tag()

    bpy.app.handlers.frame_change_pre.append(write)
    try:
        got = framebench.frame_change(scene, ref, range(1, frames + 2), rounds)
    finally:
        bpy.app.handlers.frame_change_pre.remove(write)
    emit(bench="trails_numpy_handler_floor", vertices=n_side * n_side, **framebench.summary(got))
    bpy.data.scenes.remove(ref)


def bench_shot_parts(n_side, n_actors, frames, rounds, bins):
    """What grows in the shot of ``bench_shot``: per span of frames, a frame change that steps the simulation
    (``step_ms``: the state grown and stamped, then shown) against a change to the same, already simulated frame
    shown from the simulation's cache (``cached_ms``: the display part alone, the held vertices gathering their
    state), each beside the reference scene's frame change (``reference_ms``). Each round plays the shot afresh,
    then goes back over its frames."""
    import bpy
    from tests.blender import api, conftest  # (import bpy: not at the top of this module)
    import framebench

    envfx = conftest.enable_addon()
    scene, mesh, snow, ref = shot_scene(bpy, n_side, n_actors, frames)
    framebench.ensure_depsgraph(scene)
    framebench.ensure_depsgraph(ref)
    timed = list(range(2, frames + 2))
    step, cached, ref_step, ref_cached = [], [], [], []

    def timed_set(sc, f):
        t0 = time.perf_counter()
        sc.frame_set(f)
        return time.perf_counter() - t0

    for _round in range(rounds):
        scene.frame_set(1)
        envfx.operators.snow.remove_trails([snow], scene)
        envfx.operators.snow.add_trails(scene, [snow])
        api.view_layer().update()
        scene.frame_set(1)
        ref.frame_set(1)
        s_row, r_row = [], []
        for f in timed:
            s_row.append(timed_set(scene, f))
            r_row.append(timed_set(ref, f))
        c_row, rc_row = [0.0] * len(timed), [0.0] * len(timed)
        for i in reversed(range(len(timed))):  # back over the simulated frames: shown from the cache
            c_row[i] = timed_set(scene, timed[i])
            rc_row[i] = timed_set(ref, timed[i])
        step.append(s_row)
        ref_step.append(r_row)
        cached.append(c_row)
        ref_cached.append(rc_row)
    eff, ref_a = np.asarray(step), np.asarray(ref_step)
    cac, ref_c = np.asarray(cached), np.asarray(ref_cached)
    for chunk in np.array_split(np.arange(len(timed)), min(bins, len(timed))):
        emit(bench="trails_shot_parts", vertices=n_side * n_side, actors=n_actors, rounds=rounds,
             frames=[timed[chunk[0]], timed[chunk[-1]]],
             step_ms=round(float(np.median(eff[:, chunk])) * 1e3, 2),
             cached_ms=round(float(np.median(cac[:, chunk])) * 1e3, 2),
             reference_ms=round(float(np.median(np.concatenate([ref_a[:, chunk], ref_c[:, chunk]]))) * 1e3, 2),
             step_ratio=round(float(np.median(eff[:, chunk] / ref_a[:, chunk])), 3),
             cached_ratio=round(float(np.median(cac[:, chunk] / ref_c[:, chunk])), 3))
    bpy.data.scenes.remove(ref)


def bench_handler_shot(n_side, n_actors, frames, rounds, bins):
    """The shot of ``bench_shot`` with the trail state held in numpy instead of a simulation zone (the lead for a
    per-frame cost flat in the frame number): a frame_change_post handler advances ``core.snow.TrailState`` by
    one frame (only the vertices near this frame's paths are stamped; scrubbing back would seek to a checkpoint)
    and writes the shown trail (rim - down, never below the ground) into a float attribute of the snow mesh,
    which a group of one Set Position reads. Not the add-on's trails (no camera fade, puffs or occluders); the
    handler's numpy and write milliseconds are split out, and the state at the shot's end is compared with
    ``core.snow.simulate_points`` of the same tracks (``max_error_m``)."""
    import bpy
    from tests.blender import api, conftest  # (import bpy: not at the top of this module)
    import framebench
    from core import snow as core_snow

    envfx = conftest.enable_addon()
    scene, mesh, snow, ref = shot_scene(bpy, n_side, n_actors, frames)
    specs, _ = envfx.operators.snow.actor_specs(scene)
    names = [n for n, *_ in specs]
    radius = np.array([r for _, r, _, _ in specs])
    depth = np.array([d for _, _, d, _ in specs])
    lift = np.array([[0.0, 0.0, o] for *_, o in specs])
    n = len(mesh.vertices)
    rest = np.empty(3 * n, np.float32)
    api.of(bpy.types.FloatVectorAttribute, mesh.attributes["position"]).data.foreach_get("vector", rest)
    thick = np.empty(n, np.float32)
    api.of(bpy.types.FloatAttribute, mesh.attributes["snow_thickness"]).data.foreach_get("value", thick)
    floor = -core_snow.GROUND_KEEP * thick
    s = api.envfx(scene).snow
    params = core_snow.StampParams(rim_height=s.rim_height, rim_width=s.rim_width, fade_height=s.fade_height,
                                   refill_rate=s.refill_rate, fps=scene.render.fps / scene.render.fps_base)
    t0 = time.perf_counter()
    state = core_snow.TrailState(rest.reshape(-1, 3), params)
    setup_s = time.perf_counter() - t0
    attr = api.of(bpy.types.FloatAttribute, mesh.attributes.new("snow_trail", "FLOAT", "POINT"))
    tree, gin, gout = _bare_tree(bpy, "Trail From Attribute")
    read = api.of(bpy.types.GeometryNodeInputNamedAttribute, tree.nodes.new("GeometryNodeInputNamedAttribute"))
    read.data_type = "FLOAT"
    api.socket(read.inputs["Name"]).default_value = "snow_trail"
    offset = tree.nodes.new("ShaderNodeCombineXYZ")
    tree.links.new(read.outputs["Attribute"], offset.inputs["Z"])
    sp = tree.nodes.new("GeometryNodeSetPosition")
    tree.links.new(gin.outputs[0], sp.inputs["Geometry"])
    tree.links.new(offset.outputs[0], sp.inputs["Offset"])
    tree.links.new(sp.outputs[0], gout.inputs[0])
    _use(snow, tree)
    objects = [bpy.data.objects[name] for name in names]
    split, tracks = [], {}
    shown = np.zeros(n, np.float32)

    def on_frame(sc, *_args):
        if sc != scene:
            return
        t0 = time.perf_counter()
        f = sc.frame_current
        changed = None
        if not state.seek(f):
            if state.frame is not None and f < state.frame:
                state.reset()
            cur = np.array([o.matrix_world.translation for o in objects]) - lift
            state.step(f, names, cur, radius, depth)
            tracks[f] = cur
            changed = state.changed
        if changed is None:  # sought, or refilling: every vertex
            shown[:] = np.maximum(state.rim - state.down, floor)
        else:  # only the vertices near this frame's paths changed
            shown[changed] = np.maximum(state.rim[changed] - state.down[changed], floor[changed])
        t1 = time.perf_counter()
        attr.data.foreach_set("value", shown)
        mesh.update_tag()
        split.append((t1 - t0, time.perf_counter() - t1))

    def restart(_round):
        state.reset()
        tracks.clear()
        split.clear()
        shown[:] = 0.0

    bpy.app.handlers.frame_change_post.append(on_frame)
    try:
        got = framebench.frame_change(scene, ref, range(1, frames + 2), rounds, before_round=restart)
        last = max(tracks)
        seek_ms = []
        for back in (last // 2, 1, last):  # scrubbing back and forth: checkpoint + replay
            t0 = time.perf_counter()
            scene.frame_set(back)
            seek_ms.append(round((time.perf_counter() - t0) * 1e3, 1))
    finally:
        bpy.app.handlers.frame_change_post.remove(on_frame)
    track = np.stack([tracks[f] for f in sorted(tracks)])
    d, r = core_snow.simulate_points(rest.reshape(-1, 3), track, radius, depth, params)
    state.seek(last)
    err = float(max(np.abs(state.down - d).max(), np.abs(state.rim - r).max()))
    spans = framebench.per_frame(got, bins)
    for span in spans:
        emit(bench="trails_handler_shot_per_frame", method="frame_change", quoted=False, vertices=n,
             actors=n_actors, shot_frames=frames, rounds=rounds, **span, target_ratio=3.0)
    summary = dict(framebench.summary(got), quoted=False)  # a measurement of a design, not of the add-on
    emit(bench="trails_handler_shot", vertices=n, actors=n_actors, shot_frames=frames, **summary,
         worst_span_ratio=max(sp["ratio_median"] for sp in spans), target_ratio=3.0,
         handler_numpy_ms=round(float(np.median([a for a, _ in split])) * 1e3, 2),
         handler_write_ms=round(float(np.median([b for _, b in split])) * 1e3, 2),
         setup_s=round(setup_s, 3), seek_back_ms=seek_ms, max_error_m=float(f"{err:.2e}"))
    bpy.data.scenes.remove(ref)


def bench_trails(n_side, n_actors, frames, rounds=3, layout="cells", puffs=False, camera="none"):
    import bpy
    from tests.blender import api, conftest  # (import bpy: not at the top of this module)

    envfx = conftest.enable_addon()
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    size = 100.0
    mesh = grid_mesh(bpy, "Snow", n_side, size, layout)
    snow = bpy.data.objects.new("Snow", mesh)
    snow["envfx_snow"] = 0
    scene.collection.objects.link(snow)
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    rng = np.random.default_rng(0)
    for i in range(n_actors):
        a = bpy.data.objects.new(f"Actor{i:02d}", None)
        a.empty_display_size = 0.5
        actors.objects.link(a)
        start = rng.uniform(-40, 40, 2)
        end = start + rng.uniform(-10, 10, 2)
        a.location = (*start, 0.3)
        a.keyframe_insert("location", frame=1)
        a.location = (*end, 0.3)
        a.keyframe_insert("location", frame=frames + 1)
    api.envfx(scene).snow.actors = actors
    api.envfx(scene).snow.puffs = puffs
    if camera != "none":
        cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
        scene.collection.objects.link(cam)
        scene.camera = cam
        cam.location = (0.0, 0.0, 2.0)
        s = api.envfx(scene).snow
        s.camera_fade_start, s.camera_fade_end = (200.0, 400.0) if camera == "near" else (20.0, 40.0)
    scene.frame_start, scene.frame_end = 1, frames + 1
    scene.frame_set(1)
    envfx.operators.snow.add_trails(scene, [snow])
    # first playback (round 1 below): the simulation cache grows by one state per frame (fresh memory)
    trails, trails_min = _time_frames(scene, frames)
    # the vertices the trails moved: the share a per-vertex state must update
    dg = bpy.context.evaluated_depsgraph_get()
    ev = snow.evaluated_get(dg)
    me = ev.to_mesh()
    moved = np.empty(3 * len(me.vertices), np.float32)
    me.vertices.foreach_get("co", moved)
    rest = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.vertices.foreach_get("co", rest)
    touched = float(np.mean(np.any(moved.reshape(-1, 3) != rest.reshape(-1, 3), axis=1)))
    ev.to_mesh_clear()

    # the same mesh with a bare Set Position (constant offset)
    tree, gi, go = _bare_tree(bpy, "Bare")
    sp = tree.nodes.new("GeometryNodeSetPosition")
    st = tree.nodes.new("GeometryNodeInputSceneTime")
    comb = tree.nodes.new("ShaderNodeCombineXYZ")
    tree.links.new(st.outputs["Seconds"], comb.inputs["Z"])
    tree.links.new(comb.outputs[0], sp.inputs["Offset"])
    tree.links.new(gi.outputs[0], sp.inputs["Geometry"])
    tree.links.new(sp.outputs[0], go.inputs[0])
    # interleaved rounds (the machine is shared: both see the same load), on the same object: the bare Set
    # Position, then the trails from scratch (a new simulation cache, reusing the memory the last one freed)
    round_ratios, trails_runs, bare_runs = [], [(trails, trails_min)], []
    for r in range(rounds):
        envfx.operators.snow.remove_trails([snow])
        _use(snow, tree)
        bare_runs.append(_time_frames(scene, frames))
        if r:
            snow.modifiers.clear()
            envfx.operators.snow.add_trails(scene, [snow])
            trails_runs.append(_time_frames(scene, frames))
        round_ratios.append(trails_runs[-1][0] / bare_runs[-1][0])
    trails = float(np.median([t for t, _ in trails_runs]))
    bare = float(np.median([t for t, _ in bare_runs]))
    trails_min = min(m for _, m in trails_runs)
    bare_min = min(m for _, m in bare_runs)
    envfx.operators.snow.remove_trails([snow])
    _use(snow, tree)
    # a Set Position whose offset is a per-vertex field (what any real deformation pays)
    pos = tree.nodes.new("GeometryNodeInputPosition")
    mul = api.of(bpy.types.ShaderNodeVectorMath, tree.nodes.new("ShaderNodeVectorMath"))
    mul.operation = "SCALE"
    tree.links.new(pos.outputs[0], mul.inputs[0])
    tree.links.new(st.outputs["Seconds"], mul.inputs["Scale"])
    tree.links.new(mul.outputs[0], sp.inputs["Offset"])
    field, _ = _time_frames(scene, frames)

    # a bare simulation zone passing the mesh through (the zone's own bookkeeping)
    tree, gi, go = _bare_tree(bpy, "Bare Simulation")
    si = api.of(bpy.types.GeometryNodeSimulationInput, tree.nodes.new("GeometryNodeSimulationInput"))
    so = api.of(bpy.types.GeometryNodeSimulationOutput, tree.nodes.new("GeometryNodeSimulationOutput"))
    si.pair_with_output(so)
    tree.links.new(gi.outputs[0], si.inputs["Geometry"])
    tree.links.new(si.outputs["Geometry"], so.inputs["Geometry"])
    tree.links.new(so.outputs["Geometry"], go.inputs[0])
    _use(snow, tree)
    bare_sim, _ = _time_frames(scene, frames)
    # the floor of any per-vertex trail state: the zone stores one float per vertex on the share of vertices the
    # trails touched (spread over the frames; the store copies the cached array), then a Set Position offsets
    # the mesh by it
    store = api.of(bpy.types.GeometryNodeStoreNamedAttribute, tree.nodes.new("GeometryNodeStoreNamedAttribute"))
    store.data_type = "FLOAT"
    api.socket(store.inputs["Name"]).default_value = "state"
    every = max(1, round(frames / max(touched, 1e-6)))
    frame = tree.nodes.new("GeometryNodeInputSceneTime").outputs["Frame"]
    shifted = tree.nodes.new("ShaderNodeMath")
    tree.links.new(tree.nodes.new("GeometryNodeInputIndex").outputs[0], shifted.inputs[0])
    tree.links.new(frame, shifted.inputs[1])
    mod_n = api.of(bpy.types.ShaderNodeMath, tree.nodes.new("ShaderNodeMath"))
    mod_n.operation = "FLOORED_MODULO"
    tree.links.new(shifted.outputs[0], mod_n.inputs[0])
    api.socket(mod_n.inputs[1]).default_value = float(every)
    pick = api.of(bpy.types.ShaderNodeMath, tree.nodes.new("ShaderNodeMath"))
    pick.operation = "LESS_THAN"
    tree.links.new(mod_n.outputs[0], pick.inputs[0])
    api.socket(pick.inputs[1]).default_value = 1.0
    tree.links.new(pick.outputs[0], store.inputs["Selection"])
    api.socket(store.inputs["Value"]).default_value = 0.01
    tree.links.new(si.outputs["Geometry"], store.inputs["Geometry"])
    tree.links.new(store.outputs[0], so.inputs["Geometry"])
    sp = tree.nodes.new("GeometryNodeSetPosition")
    read = api.of(bpy.types.GeometryNodeInputNamedAttribute, tree.nodes.new("GeometryNodeInputNamedAttribute"))
    read.data_type = "FLOAT"
    api.socket(read.inputs["Name"]).default_value = "state"
    offset = tree.nodes.new("ShaderNodeCombineXYZ")
    tree.links.new(read.outputs["Attribute"], offset.inputs["Z"])
    tree.links.new(offset.outputs[0], sp.inputs["Offset"])
    tree.links.new(so.outputs["Geometry"], sp.inputs["Geometry"])
    tree.links.new(sp.outputs[0], go.inputs[0])
    scene.frame_set(1)
    state_floor, _ = _time_frames(scene, frames)
    emit(bench="trails_per_frame", method="frame_change_sequential", quoted=False,
         layout=layout, puffs=puffs, camera=camera, vertices=n_side * n_side,
         actors=n_actors, frames=frames,
         rounds=rounds,
         trails_s=round(trails, 4), bare_set_position_s=round(bare, 4),
         ratio=round(float(np.median(round_ratios)), 2), round_ratios=[round(x, 2) for x in round_ratios],
         trails_min_s=round(trails_min, 4), bare_min_s=round(bare_min, 4), ratio_min=round(trails_min / bare_min, 2),
         field_set_position_s=round(field, 4), ratio_to_field=round(trails / field, 2),
         bare_simulation_zone_s=round(bare_sim, 4), touched_share=round(touched, 4),
         state_floor_s=round(state_floor, 4), ratio_state_floor=round(state_floor / bare, 2), target_ratio=4.0)


def bench_bake(res, frames, n_actors):
    from core import snow as core_snow

    rng = np.random.default_rng(1)
    start = rng.uniform(-40, 40, (n_actors, 2))
    vel = rng.uniform(-0.3, 0.3, (n_actors, 2))
    f = np.arange(frames)[:, None, None]
    xy = start[None] + vel[None] * f
    tracks = np.concatenate([xy, np.zeros((frames, n_actors, 1))], -1)
    buf = core_snow.BufferParams(resolution=res, size=100.0, origin=(-50.0, -50.0))
    t0 = time.perf_counter()
    core_snow.bake(tracks, np.full(n_actors, 0.6), np.full(n_actors, 0.2), core_snow.StampParams(), buf)
    dt = time.perf_counter() - t0
    emit(bench="buffer_bake", resolution=res, frames=frames, actors=n_actors, seconds=round(dt, 2),
         target_s=60.0, ratio_to_target=round(dt / 60.0, 3))


def bench_cover(n_faces_target):
    from core import snow as core_snow

    n = int(np.sqrt(n_faces_target / 2)) + 1
    xs = np.linspace(-50, 50, n + 1)
    X, Y = np.meshgrid(xs, xs)
    Z = 2.0 * np.sin(X / 7.0) * np.cos(Y / 9.0)
    P = np.stack([X, Y, Z], -1)
    a, b, c, d = P[:-1, :-1], P[:-1, 1:], P[1:, 1:], P[1:, :-1]
    tris = np.concatenate([np.stack([a, b, c], -2).reshape(-1, 3, 3), np.stack([a, c, d], -2).reshape(-1, 3, 3)])
    t0 = time.perf_counter()
    cover = core_snow.generate_cover(tris, core_snow.CoverParams(spacing=0.1, thickness=0.2, noise=0.2, drift=0.3,
                                                                 lods=3))
    dt = time.perf_counter() - t0
    emit(bench="cover_generation", faces=int(tris.shape[0]), spacing=0.1,
         snow_vertices=int(cover.lods[0].vertices.shape[0]), seconds=round(dt, 2), target_s=10.0,
         ratio_to_target=round(dt / 10.0, 3))


def bench_coverage(n_side, n_actors, frames, rounds=3):
    """The actors' snow coverage per frame (each actor a small UV sphere walking over a trailed snow grid): the
    frame with the coverage modifiers on against off, on flat snow and on bent snow (Runner; the coverage then
    reads the snow's bend back at each actor vertex: ``common.build_bend_drop``). The snow's own bend is on in
    both halves of the bent case, so the difference is the coverage's cost."""
    import bpy
    from tests.blender import api, conftest  # (import bpy: not at the top of this module)

    envfx = conftest.enable_addon()
    import bmesh  # (bpy as a module imports bmesh with it)

    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    snow = bpy.data.objects.new("Snow", grid_mesh(bpy, "Snow", n_side, 100.0))
    snow["envfx_snow"] = 0
    scene.collection.objects.link(snow)
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    rng = np.random.default_rng(0)
    me = bpy.data.meshes.new("Walker")
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=16, v_segments=8, radius=0.5)
    bm.to_mesh(me)
    bm.free()
    for i in range(n_actors):
        a = bpy.data.objects.new(f"Walker{i:02d}", me)
        actors.objects.link(a)
        start = rng.uniform(-40, 40, 2)
        a.location = (*start, 0.3)
        a.keyframe_insert("location", frame=1)
        a.location = (*(start + rng.uniform(-10, 10, 2)), 0.3)
        a.keyframe_insert("location", frame=frames + 1)
    api.envfx(scene).snow.actors = actors
    scene.frame_start, scene.frame_end = 1, frames + 1
    scene.frame_set(1)
    envfx.operators.snow.add_trails(scene, [snow])
    b = api.envfx(scene).bend
    b.mode, b.axis, b.strength, b.spread = "RUNNER", "POS_Y", 0.002, 2.0
    envfx.operators.bend.add_bend(scene, [snow])
    bend_mod = envfx.operators.bend.bend_modifiers(snow)[0]
    coverage = [m for a in actors.objects for m in a.modifiers if m.type == "NODES"]
    got = {(bent, on): [] for bent in (False, True) for on in (False, True)}
    for _round in range(rounds):
        for bent, on in got:
            bend_mod.show_viewport = bent
            for m in coverage:
                m.show_viewport = on
            envfx.operators.bend.sync_readers(scene)
            api.view_layer().update()
            got[(bent, on)].append(_time_frames(scene, frames)[0])
    ms = {k: float(np.median(v)) * 1e3 for k, v in got.items()}
    for bent in (False, True):
        emit(bench="coverage_per_frame", snow="bent" if bent else "flat", snow_vertices=n_side * n_side,
             actors=n_actors, vertices_each=len(me.vertices), coverage_on_ms=round(ms[(bent, True)], 2),
             coverage_off_ms=round(ms[(bent, False)], 2),
             coverage_ms=round(ms[(bent, True)] - ms[(bent, False)], 2), frames=frames, rounds=rounds)


def bench_numpy_shot(n_side, n_actors, frames, rounds, bins):
    """The shot of ``bench_shot`` with the add-on's Numpy trails engine (``scene.envfx.snow.trails_engine``), set up
    as a user does (Trails Engine Numpy, then Add Trails: ``operators.snow.add_trails``): the frame handler of
    ``operators.snow.numpy_trails`` steps the numpy state and writes ``snow_trail``, the trails group shows it. By
    frame changes against the reference scene, the cost against the frame number (the quoted measure of the
    add-on's numpy path); each round starts from no trail (the state and track forgotten, untimed). Also: going
    back over the shot (``seek_back_ms``: checkpoints and replays), the handler's own milliseconds, and the
    shown trail at the shot's end against ``core.snow.simulate_points`` of the same tracks (``max_error_m``)."""
    import bpy
    from tests.blender import api, conftest  # (import bpy: not at the top of this module)
    import framebench
    from core import snow as core_snow

    envfx = conftest.enable_addon()
    numpy_trails = envfx.operators.snow.numpy_trails
    scene, mesh, snow, ref = shot_scene(bpy, n_side, n_actors, frames)
    snow["envfx_snow"] = 0
    api.envfx(scene).snow.trails_engine = "NUMPY"
    envfx.operators.snow.add_trails(scene, [snow])
    handler_ms = []
    show = numpy_trails.show

    def timed_show(sc, depsgraph=None):
        t0 = time.perf_counter()
        written = show(sc, depsgraph)
        if written:
            handler_ms.append((time.perf_counter() - t0) * 1e3)
        return written

    numpy_trails.show = timed_show  # (the handler looks the function up in its module at each call)

    def restart(_round):
        numpy_trails.forget()
        scene.frame_set(1)
        handler_ms.clear()

    try:
        got = framebench.frame_change(scene, ref, range(1, frames + 2), rounds, before_round=restart)
        seek_ms = []
        for back in ((frames + 1) // 2, 1, frames + 1):  # scrubbing back and forth
            t0 = time.perf_counter()
            scene.frame_set(back)
            seek_ms.append(round((time.perf_counter() - t0) * 1e3, 1))
    finally:
        numpy_trails.show = show
    specs, _ = envfx.operators.snow.actor_specs(scene)
    track = numpy_trails.track(scene)
    tracks = np.stack([track[f][1] for f in sorted(track)])
    rest = envfx.bridge.get_positions(mesh).astype(np.float64)
    d, r = core_snow.simulate_points(rest, tracks, [x for _, x, _, _ in specs], [x for _, _, x, _ in specs],
                                     envfx.operators.snow.stamp_params(scene))
    thick = np.empty(len(mesh.vertices), np.float32)
    api.of(bpy.types.FloatAttribute, mesh.attributes["snow_thickness"]).data.foreach_get("value", thick)
    shown = np.empty(len(mesh.vertices), np.float32)
    api.of(bpy.types.FloatAttribute, mesh.attributes["snow_trail"]).data.foreach_get("value", shown)
    err = float(np.abs(shown - np.maximum(r - d, -core_snow.GROUND_KEEP * thick)).max())
    spans = framebench.per_frame(got, bins)
    for span in spans:
        emit(bench="trails_numpy_shot_per_frame", method="frame_change", quoted=True, engine="numpy",
             vertices=n_side * n_side, actors=n_actors, shot_frames=frames, rounds=rounds, **span, target_ratio=3.0)
    emit(bench="trails_numpy_shot", engine="numpy", vertices=n_side * n_side, actors=n_actors, shot_frames=frames,
         **framebench.summary(got), worst_span_ratio=max(sp["ratio_median"] for sp in spans), target_ratio=3.0,
         handler_ms=round(float(np.median(handler_ms)), 2) if handler_ms else None, seek_back_ms=seek_ms,
         max_error_m=float(f"{err:.2e}"))
    bpy.data.scenes.remove(ref)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    p.add_argument("--only", default="shot,trails,bake,cover,coverage")
    p.add_argument("--shot-frames", type=int, default=250, help="frames of the shot (--only shot)")
    p.add_argument("--shot-rounds", type=int, default=5, help="rounds of the shot, each from a fresh simulation")
    p.add_argument("--shot-bins", type=int, default=10, help="spans of frames the shot's cost is reported in")
    p.add_argument("--rounds", type=int, default=5, help="interleaved bare/trails rounds of the trails bench")
    p.add_argument("--frames", type=int, default=20, help="frames per round of the trails bench")
    p.add_argument("--puffs", action="store_true", help="trails with snow puffs on (default: off, as in a new scene)")
    p.add_argument("--camera", default="none", help="active camera of the trails bench: none, near (all the snow "
                   "within Camera Fade Start) or across (the fade crosses the snow; its far part lies flat)")
    p.add_argument("--layout", default="cells,rows",
                   help="snow vertex layouts of the trails bench: cells (as generated), rows (any other mesh)")
    args = p.parse_args()
    only = args.only.split(",")
    if "cover" in only:
        bench_cover(20_000 if args.quick else 1_000_000)
    if "bake" in only:
        bench_bake(256 if args.quick else 2048, 20 if args.quick else 250, 64)
    if "coverage" in only:
        bench_coverage(100 if args.quick else 1000, 4 if args.quick else 32, 5 if args.quick else args.frames,
                       2 if args.quick else 3)
    if "shot" in only:
        bench_shot(100 if args.quick else 1000, 32, 10 if args.quick else args.shot_frames,
                   2 if args.quick else args.shot_rounds, args.shot_bins)
    if "shot_parts" in only:
        bench_shot_parts(100 if args.quick else 1000, 32, 10 if args.quick else args.shot_frames,
                         1 if args.quick else args.shot_rounds, args.shot_bins)
    if "handler_shot" in only:
        bench_handler_shot(100 if args.quick else 1000, 32, 10 if args.quick else args.shot_frames,
                           2 if args.quick else args.shot_rounds, args.shot_bins)
    if "numpy_shot" in only:
        bench_numpy_shot(100 if args.quick else 1000, 32, 10 if args.quick else args.shot_frames,
                         2 if args.quick else args.shot_rounds, args.shot_bins)
    if "numpy_floor" in only:
        bench_numpy_floor(100 if args.quick else 1000, 5 if args.quick else args.frames, 2 if args.quick else 5)
    if "trails" in only:
        for layout in args.layout.split(","):
            for camera in args.camera.split(","):
                bench_trails(100 if args.quick else 1000, 32, 5 if args.quick else args.frames, args.rounds, layout,
                             args.puffs, camera)


if __name__ == "__main__":
    main()
