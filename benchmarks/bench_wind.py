"""Wind benchmarks (JSON lines). Run with a venv python: ``python benchmarks/bench_wind.py [--vertices-scale 1]``.

1. Wind-data bake (AO excluded) of a ~1.09M-vertex tree with 5000 leaf cards: the numpy core alone, and the full
   script path (``operators.wind.bake``: read meshes, bake, write attributes). Target: at most 5 s.
2. Per-frame evaluation of the live wind on the same mesh against a bare Set Position (a constant offset set by
   the frame, so it re-evaluates every frame) in the same run, in alternating rounds (best median of each).
   Target: at most 3x on Blender 5.0. Also reported: against a Set Position with a per-vertex offset field.
3. Many plants (``--plants``, linked copies of a small grass clump, then of a small tree): the frame with the live
   wind on every plant against the same bare Set Position on every plant, and the wind's extra time per plant
   object (its per-object work: the gusts at the plant's origin and every oscillator).
4. The grass's terrain follow on those grass clumps: no terrain object, a flat terrain, a bent terrain (the
   follow then reads the terrain's bend back at each grass vertex).
6. Vegetation as real assets build it (``--veg-*``): the wind-data bake (AO excluded; target at most 5 s at ~1M
   vertices) of an asset of 2k separate branch pieces and ~50k separate leaf cards, as the numpy core and as Bake
   Wind Data end to end (read the mesh, bake, write the attributes) in ``--bake-rounds`` alternating rounds (wall
   and CPU seconds: median, min, max), the AO separately, and the core's peak numpy memory; and the same for every
   asset of the real-vegetation corpus already fetched into the cache (tools/fetch_assets.py; ``--no-corpus``
   leaves them out). ``--bake-only``: lines 1 and 6 alone.
7. Frame changes (``wind_frame_change``, the quoted per-frame number, #30): a 1M-vertex grid stood up in the wind
   (strength 5) in one scene, an identical grid under a bare time-dependent Set Position in a second scene, both
   stepped by ``scene.frame_set`` in turn for many interleaved rounds (median ratio over rounds, min and max).
   Target: at most 2x on Blender 5.0. In the same rounds ``gpu_*``: a copy of the grid in the wind on the GPU (Wind on
   GPU: what a frame change costs the CPU; the vertex displacement is paid by the GPU when drawing, not measured
   here). ``--before REV`` times that revision's wind group beside it, in the same
   run. Two more scenes give the floor: ``reads`` only reads the three static vectors the wind reads per vertex
   (Pivot, Branch, Leaf) into a time-scaled offset; ``floor`` reads two of them and keeps the length with one
   square root per vertex (the least a length-keeping motion computes). Line 2 (a forced update of the modifiers
   in one scene) is kept beside it. ``--alternatives``: a second line (``wind_frame_change_alternatives``) times
   the other ways Blender moves vertices per frame on copies of the same grid in the same rounds (``_Alternatives``:
   a numpy frame handler doing the wind's length-keeping motion, 18 shape keys set per frame, a Simple Deform bend
   and a one-bone Armature, both keyframed), each as [min, q1, median, q3, max] of its per-round ratio to the same
   bare Set Position.
8. Grass that actors push (``wind_push_frame_change``, #23): a field of ``--push-blades`` blades (4 vertices each:
   250000 blades, 1M vertices) in the wind, pushed by ``--push-actors`` walkers through a baked interaction buffer
   (an image sequence), against a bare Set Position on a copy of the field, by frame changes (framebench.py,
   interleaved rounds: median ratio and its spread); beside it the same field in the wind with push off against the
   same reference, so the push's own share shows, and a copy of the field pushed in the wind on the GPU
   (``push_on_gpu``: what a frame change costs the CPU; the displacement is paid by the GPU when drawing). Target: at
   most 3.5x. ``--push-only``: that line alone. With
   ``--before REV`` that revision's group moves two more copies of the field in the same rounds, pushed and with
   push off (``push_before``, ``push_off_before``; ``after_over_before``, ``off_after_over_before``: this group's
   seconds per frame over that one's, per round).
9. ``--parts``: the lines 7 and 8 also time this checkout's group with one part taken out (``PARTS``: the swing's
   dot products, the carry's second Set Position; two of the push's three buffer samples, the whole push, each
   blade's own wind, the grass's carry), each on its own copy of the grid or field in the same rounds (``no_*``
   keys: what the group costs without that part, so the difference is the part's cost).
10. Props (``wind_props_per_frame``, #30): a level of ``--props`` (5,000) small swaying props, linked copies of one
   baked mesh (a small bush with the TREE preset, a small grass clump with GRASS; and, when the corpus is in the
   cache and not ``--no-corpus``, ez-tree's flower with BUSH and its grass tuft with GRASS), against the same props
   with the reference modifier of ``framebench`` (a bare time-dependent Set Position), by frame changes: median ratio
   over ``--props-rounds`` and its spread, the wind's extra time per object and the nodes of its group
   (``group_nodes``, nested groups counted by their nodes; a part switched off is not evaluated). Target: at most
   1.5x. In the same rounds, ``wind_props_rigid_per_frame``: the same props in rigid sway (Rigid Sway on, Add Wind:
   drivers on each prop's delta rotation, a clock of the scene's wind; ``add_wind_s`` what Add Wind took).
   ``--props-only``: those lines alone. ``--props-alternatives``: a second line (``wind_props_alternatives``) times,
   on the same bush props in the same rounds against the same reference, what else could move a level of props
   per frame (``_PropsAlternatives``): the wind; a lean group that leaves each prop's per-object part to one numpy
   frame handler for all props (their rows written into one shared state mesh, each prop reading its six rows by
   its index) and keeps the wind's per-vertex part (three static vectors read, six dot products, the
   length-keeping rescale); the same state read alone into an offset (no per-vertex work: the least a group that
   reads a per-object state costs); a frame handler rotating every prop (a rigid sway, Python per frame); and two
   simple-expression drivers per prop on its delta rotation (a rigid sway with no Python).
5. Remove Wind (``--remove-plants N``, off by default): N plant objects, each with its own baked mesh, taken out
   of the wind at once, and N / 2 of them, so the time per object shows whether it stays flat (it is linear:
   the meshes still in the wind are found in one pass over the file's objects after the loop).
"""

import argparse
import contextlib
import importlib
import io
import json
import math
import os
import statistics
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # tests.blender.conftest and tests.blender.api (which the conftest imports too)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def emit(**kw):
    print(json.dumps(kw), flush=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--branches", type=int, default=200)
    parser.add_argument("--leaves-per-branch", type=int, default=25)
    parser.add_argument("--leaf-grid", type=int, default=14)
    parser.add_argument("--plants", type=int, default=500, help="plant objects in the many-plants lines (0: skip)")
    parser.add_argument("--remove-plants", type=int, default=0,
                        help="plant objects, each with its own mesh, for the Remove Wind line (0: skip)")
    parser.add_argument("--veg-branches", type=int, default=100, help="first-level branches of the vegetation line")
    parser.add_argument("--veg-twigs", type=int, default=19, help="twigs per branch (pieces: branches x (1 + twigs))")
    parser.add_argument("--veg-leaves", type=int, default=26, help="leaf cards (double-sided, 8 vertices) per twig")
    parser.add_argument("--veg-sides", type=int, default=56, help="sides of every branch tube")
    parser.add_argument("--no-corpus", action="store_true", help="leave out the corpus assets")
    parser.add_argument("--grid-side", type=int, default=1000,
                        help="vertices per side of the frame-change grid (1000: 1M vertices; 0: skip that line)")
    parser.add_argument("--fc-rounds", type=int, default=15, help="interleaved rounds of the frame-change line")
    parser.add_argument("--fc-frames", type=int, default=8, help="frame changes per scene and round")
    parser.add_argument("--fc-strength", type=float, default=5.0, help="wind strength of the frame-change line")
    parser.add_argument("--before", default="",
                        help="a git revision: its wind group is timed in a third scene of the frame-change line")
    parser.add_argument("--alternatives", action="store_true",
                        help="the frame-change line also times the other ways Blender moves vertices per frame (a "
                             "numpy frame handler, shape keys, Simple Deform, Armature) on the same grid")
    parser.add_argument("--live-only", action="store_true",
                        help="only the frame-change line (no bakes, no forced updates, no plants, no grass push)")
    parser.add_argument("--bake-rounds", type=int, default=3,
                        help="rounds of the vegetation and corpus bakes (numpy core and Bake Wind Data, alternating)")
    parser.add_argument("--bake-only", action="store_true", help="only the bake lines (1 and 6), no per-frame ones")
    parser.add_argument("--no-ao", action="store_true", help="leave the AO out of the bake lines of 6")
    parser.add_argument("--push-blades", type=int, default=250000,
                        help="grass blades (4 vertices each) of the grass-push line (0: skip it)")
    parser.add_argument("--push-actors", type=int, default=32, help="walkers of the grass-push line")
    parser.add_argument("--push-rounds", type=int, default=9, help="interleaved rounds of the grass-push line")
    parser.add_argument("--push-frames", type=int, default=8, help="frame changes per scene and round (push line)")
    parser.add_argument("--push-only", action="store_true", help="only the grass-push line")
    parser.add_argument("--props", type=int, default=5000,
                        help="swaying props of the props line (a small bush, a small grass clump; 0: skip it)")
    parser.add_argument("--props-frames", type=int, default=6, help="frame changes per round of the props line")
    parser.add_argument("--props-rounds", type=int, default=3, help="rounds of the props line")
    parser.add_argument("--props-only", action="store_true", help="only the props line")
    parser.add_argument("--props-alternatives", action="store_true",
                        help="the props line also times other ways to move a level of props per frame (a lean "
                             "group reading a per-object state, a rotating handler, drivers on delta rotations)")
    parser.add_argument("--gpu-draw", type=int, default=0, metavar="ROUNDS",
                        help="the frame-change line's grid also rendered by Eevee (one sample, 320 x 240) in the "
                             "wind's modifier, on the GPU and under the bare Set Position, ROUNDS alternating rounds "
                             "(wind_render_gpu; 0: not)")
    parser.add_argument("--parts", action="store_true",
                        help="the frame-change and grass-push lines also time the wind group with parts of it taken "
                             "out (PARTS), each in a scene of its own in the same rounds: what each part costs")
    args = parser.parse_args(argv)

    import bpy
    import numpy as np

    from tests.blender import api  # (imports bpy, so not at the top of this bpy-free module)
    from tests.blender import conftest  # enables the add-on from this checkout the way the tests do

    envfx = conftest.enable_addon()
    core = importlib.import_module(envfx.__name__ + ".core.wind")
    shapes = importlib.import_module(envfx.__name__ + ".core.wind_shapes")
    ops = importlib.import_module(envfx.__name__ + ".operators.wind")
    common = importlib.import_module(envfx.__name__ + ".shader_nodes.common")
    version = bpy.app.version_string
    load = os.getloadavg()[0]
    if args.props > 0 and not (args.bake_only or args.live_only or args.push_only):
        _props_frame_changes(bpy, np, ops, core, shapes, args)
    if args.props_only:
        return 0
    if args.push_blades > 0 and not (args.bake_only or args.live_only):
        _push_frame_changes(bpy, envfx, ops, args)
    if args.push_only:
        return 0
    if args.grid_side > 0 and not args.bake_only:
        _frame_changes(bpy, envfx, ops, common, args, version)
    if args.live_only:
        return 0

    tree = shapes.make_tree(height=12.0, n_branches=args.branches, leaves_per_branch=args.leaves_per_branch,
                            leaf_grid=args.leaf_grid, trunk_sides=64, trunk_rings=400, branch_sides=16)
    n = len(tree["positions"])
    t0 = time.perf_counter()
    res = core.bake_wind_data(tree["positions"], tree["edges"])
    t_core = time.perf_counter() - t0
    emit(bench="wind_bake_core", blender=version, vertices=n, leaves=res.n_leaves, branches=res.n_branches,
         seconds=round(t_core, 3), target_seconds=5.0, load_avg=load)

    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    mesh = bpy.data.meshes.new("Bench Tree")
    faces = tree["faces"]
    mesh.vertices.add(n)
    mesh.vertices.foreach_set("co", tree["positions"].ravel())
    mesh.loops.add(len(faces) * 3)
    mesh.loops.foreach_set("vertex_index", faces.astype(np.int32).ravel())
    mesh.polygons.add(len(faces))
    mesh.polygons.foreach_set("loop_start", (np.arange(len(faces)) * 3).astype(np.int32))
    mesh.polygons.foreach_set("loop_total", np.full(len(faces), 3, np.int32))
    mesh.update(calc_edges=True)
    obj = bpy.data.objects.new("Bench Tree", mesh)
    scene.collection.objects.link(obj)
    api.view_layer().update()
    t0 = time.perf_counter()
    ops.bake(scene, [obj], ao_samples=0)
    t_full = time.perf_counter() - t0
    emit(bench="wind_bake_blender", blender=version, vertices=n, seconds=round(t_full, 3), target_seconds=5.0,
         load_avg=load)
    if args.bake_only:
        _vegetation(envfx, args, version)
        return 0

    # per-frame: the live wind against a bare Set Position on the same mesh. Both modifiers stay on the object
    # and only one is enabled at a time; the two are timed in alternating rounds and each keeps its best round's
    # median, so load from other processes on a shared machine skews the ratio less.
    def time_frames():
        scene.frame_set(1)
        bpy.context.evaluated_depsgraph_get()
        times = []
        for f in range(2, 2 + args.frames):
            t0 = time.perf_counter()
            scene.frame_set(f)
            bpy.context.evaluated_depsgraph_get()
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    def build_bare(field):
        def build(tree_):
            b = common.Builder(tree_)
            common.socket(tree_, "Geometry", "INPUT", "NodeSocketGeometry")
            common.socket(tree_, "Geometry", "OUTPUT", "NodeSocketGeometry")
            gi = b.node("NodeGroupInput", "In")
            go = b.node("NodeGroupOutput", "Out")
            st = b.node("GeometryNodeInputSceneTime", "Time")
            k = b.math("MULTIPLY", st.outputs["Frame"], 1e-3)
            if field:  # a per-vertex offset field: one vector scale of the position
                pos = b.node("GeometryNodeInputPosition", "Position")
                off = b.vmath("SCALE", pos.outputs[0], scale=k)
            else:
                off = b.combine_xyz(0.0, 0.0, k)
            sp = b.node("GeometryNodeSetPosition", "Set Position")
            b.link(gi.outputs[0], sp.inputs["Geometry"])
            b.link(off, sp.inputs["Offset"])
            b.link(sp.outputs[0], go.inputs[0])
        return build

    ops.add_wind(scene, [obj])
    mods = {"wind": ops.wind_modifiers(obj)[0]}
    for name, field in (("bare", False), ("bare_field", True)):
        mods[name] = obj.modifiers.new(name, "NODES")
        mods[name].node_group = common.ensure_tree(f"Bench {name}", "GeometryNodeTree", "1", build_bare(field))
    best = {}
    rounds = {name: [] for name in mods}
    for _round in range(args.rounds):
        for name in mods:
            for other, mod in mods.items():
                mod.show_viewport = other == name
            rounds[name].append(time_frames())
            best[name] = min(best.get(name, float("inf")), rounds[name][-1])
    load_end = os.getloadavg()[0]
    # each round's own ratio (wind against the bare Set Position timed right after it): their spread shows how
    # much the load of other processes moved the best-of ratio
    round_ratios = [round(w / b_, 2) for w, b_ in zip(rounds["wind"], rounds["bare"])]
    emit(bench="wind_frame", blender=version, vertices=n, wind_ms=round(best["wind"] * 1e3, 2),
         bare_set_position_ms=round(best["bare"] * 1e3, 2), ratio=round(best["wind"] / best["bare"], 2),
         target_ratio=3.0, bare_field_set_position_ms=round(best["bare_field"] * 1e3, 2),
         ratio_to_field=round(best["wind"] / best["bare_field"], 2), frames=args.frames, rounds=args.rounds,
         round_ratios=round_ratios, load_avg=load, load_avg_end=load_end)
    if args.plants > 0:
        bare_group = mods["bare"].node_group  # (before the object and so its modifiers are gone)
        bpy.data.objects.remove(obj)
        for kind, shape in (("GRASS", shapes.make_grass(blades=14, height=0.7, seed=1)),
                            ("TREE", shapes.make_tree(n_branches=2, leaves_per_branch=2))):
            plants = _plants(bpy, scene, ops, kind, shape, args.plants)
            for plant in plants:
                plant.modifiers.new("Bare", "NODES").node_group = bare_group
            pairs = [(ops.wind_modifiers(p)[0], p.modifiers["Bare"]) for p in plants]
            got = {"wind": [], "bare": []}
            for _round in range(args.rounds):
                for name in got:
                    for wind_mod, bare_mod in pairs:
                        wind_mod.show_viewport, bare_mod.show_viewport = name == "wind", name == "bare"
                    got[name].append(time_frames())
            wind_s, bare_s = (float(np.median(got[name])) for name in ("wind", "bare"))
            emit(bench="wind_many_plants", blender=version, kind=kind, plants=len(plants),
                 vertices_each=len(plants[0].data.vertices), wind_frame_ms=round(wind_s * 1e3, 2),
                 bare_frame_ms=round(bare_s * 1e3, 2), ratio=round(wind_s / bare_s, 2),
                 extra_per_plant_us=round((wind_s - bare_s) / len(plants) * 1e6, 1), frames=args.frames,
                 rounds=args.rounds, load_avg=os.getloadavg()[0])
            if kind == "GRASS":
                for wind_mod, bare_mod in pairs:
                    wind_mod.show_viewport, bare_mod.show_viewport = True, False
                _terrain_follow(bpy, envfx, scene, plants, time_frames, args, version)
            for plant in plants:
                bpy.data.objects.remove(plant)
    _vegetation(envfx, args, version)
    if args.remove_plants > 0:
        shape = shapes.make_grass(blades=4, height=0.5, seed=2)
        for count in (args.remove_plants // 2, args.remove_plants):
            _remove_wind(bpy, scene, ops, shape, count, version)
    return 0


def _bare_frame_group(common, name):
    """A bare time-dependent Set Position: a constant offset (0, 0, frame / 1000), re-evaluated at every frame."""
    def build(tree_):
        b = common.Builder(tree_)
        common.socket(tree_, "Geometry", "INPUT", "NodeSocketGeometry")
        common.socket(tree_, "Geometry", "OUTPUT", "NodeSocketGeometry")
        gi = b.node("NodeGroupInput", "In")
        go = b.node("NodeGroupOutput", "Out")
        st = b.node("GeometryNodeInputSceneTime", "Time")
        sp = b.node("GeometryNodeSetPosition", "Set Position")
        b.link(gi.outputs[0], sp.inputs["Geometry"])
        b.link(b.combine_xyz(0.0, 0.0, b.math("MULTIPLY", st.outputs["Frame"], 1e-3)), sp.inputs["Offset"])
        b.link(sp.outputs[0], go.inputs[0])
    return common.ensure_tree(name, "GeometryNodeTree", "1", build)


def _floor_group(common, core, name, turn):
    """The least a length-keeping live wind reads and computes per vertex, as the floor the wind is measured
    against: the three static vectors it reads (Pivot, Branch, Leaf) summed into a time-scaled offset
    (``turn`` False), or the vector from the attach point and one static vector swung by a time-dependent factor
    and turned back to the rest length with one square root (``turn`` True: two reads and the rescale)."""
    def build(tree_):
        b = common.Builder(tree_)
        common.socket(tree_, "Geometry", "INPUT", "NodeSocketGeometry")
        common.socket(tree_, "Geometry", "OUTPUT", "NodeSocketGeometry")
        gi = b.node("NodeGroupInput", "In")
        go = b.node("NodeGroupOutput", "Out")
        st = b.node("GeometryNodeInputSceneTime", "Time")
        k = b.math("MULTIPLY", st.outputs["Frame"], 1e-3)

        def attr(name_):
            node = b.node("GeometryNodeInputNamedAttribute", name_, data_type="FLOAT_VECTOR")
            node.inputs["Name"].default_value = name_
            return node.outputs["Attribute"]

        rel, leaf = attr(core.LIVE_ATTRS[3]), attr(core.LIVE_ATTRS[1])
        if turn:
            q = b.vmath("ADD", rel, b.vmath("SCALE", leaf, scale=k))
            ratio = b.math("DIVIDE", b.vmath("DOT_PRODUCT", rel, rel), b.vmath("DOT_PRODUCT", q, q))
            off = b.vmath("SUBTRACT", b.vmath("SCALE", q, scale=b.math("SQRT", ratio)), rel)
        else:
            off = b.vmath("SCALE", b.vmath("ADD", b.vmath("ADD", rel, leaf), attr(core.LIVE_ATTRS[0])), scale=k)
        sp = b.node("GeometryNodeSetPosition", "Set Position")
        b.link(gi.outputs[0], sp.inputs["Geometry"])
        b.link(off, sp.inputs["Offset"])
        b.link(sp.outputs[0], go.inputs[0])
    return common.ensure_tree(name, "GeometryNodeTree", "1", build)


def _group_of_revision(bpy, envfx, common, rev):
    """The live-wind group as ``shader_nodes/wind.py`` of git revision ``rev`` built it (its module loaded from
    ``git show`` into this add-on's package, so its relative imports resolve here), for a before/after ratio in one
    run. Returns (module, group)."""
    import subprocess
    import types

    source = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:shader_nodes/wind.py"], check=True,
                            capture_output=True, text=True).stdout
    # (modules made here from a revision's source: what names they hold is known at run time only)
    module: Any = types.ModuleType(envfx.__name__ + ".shader_nodes._wind_before")
    module.__package__ = envfx.__name__ + ".shader_nodes"
    exec(compile(source, f"{rev}:shader_nodes/wind.py", "exec"), module.__dict__)
    if module.VERSION < 15:  # its attribute names: five floats where Branch and Leaf are now, then H, Pivot, Carry
        core = module.core_wind
        shim: Any = types.ModuleType(core.__name__ + "_before")
        shim.__dict__.update(core.__dict__)
        shim.LIVE_ATTRS = core.LIVE_ATTRS_OLD + core.LIVE_ATTRS[2:]
        shim.OBJECT_PHASE = (0.37, 0.59)  # (its grass figure-eight's phase per metre of the origin)
        module.core_wind = shim
    group = bpy.data.node_groups.new(f"Wind {rev}", "GeometryNodeTree")
    module._build(group)
    return module, group


# --parts: the wind group with one part taken out, name -> (the line it belongs to, the nodes whose outputs are
# replaced by a constant, the constant). What the group then costs less is what that part costs (the motion is no
# longer the wind's; only its time is of interest).
PARTS = {
    "no_swing": ("tree", ("Tree Swing",), 0.0),  # the six dot products (and the Branch read) of the swing
    "no_carry_pass": ("tree", ("Set Position Carry",), None),  # the second Set Position (the carry)
    "no_push_slope": ("push", ("Push +X", "Push +Y"), 0.0),  # two of the push's three samples of the buffer
    "no_push": ("push", ("Grass Push",), 0.0),  # the push's samples and math (its gather per vertex stays)
    "no_blade_wind": ("push", ("Blade Wind", "Figure Eight X", "Figure Eight Y"), 0.5),  # each blade's own wind
    "no_grass_carry_pass": ("push", ("Set Position Grass Carry",), None),  # the grass's carry (its Set Position)
}


def _part_group(bpy, wind_nodes, name):
    """A new wind group (this checkout's) with the part ``name`` of ``PARTS`` taken out: every link from an output
    of the part's nodes comes from a constant instead (a Set Position is bypassed: its geometry passes through)."""
    group = bpy.data.node_groups.new(f"Wind Part {name}", "GeometryNodeTree")
    wind_nodes._build(group)
    _line, nodes, value = PARTS[name]
    for node_name in nodes:
        node = group.nodes[node_name]
        for out in node.outputs:
            for link in list(out.links):
                to = link.to_socket
                if value is None:
                    src = node.inputs["Geometry"].links[0].from_socket
                elif to.type == "VECTOR":
                    const = group.nodes.new("FunctionNodeInputVector")
                    const.vector = (value, value, value)
                    src = const.outputs[0]
                else:
                    const = group.nodes.new("ShaderNodeValue")
                    const.outputs[0].default_value = value
                    src = const.outputs[0]
                group.links.remove(link)
                group.links.new(src, to)
    return group


def _frame_changes(bpy, envfx, ops, common, args, version):
    """The live wind as playback pays it (#30): a grid of ``--grid-side`` squared vertices stood up (baked, wind at
    ``--fc-strength``) in one scene, an identical grid (a copy of the baked mesh) under a bare time-dependent Set
    Position in a second scene of the same process (and with ``--before REV`` a third copy under that revision's
    wind group in a third scene). Each scene is stepped by ``scene.frame_set`` (frame handlers, drivers, the
    depsgraph: what the timeline does), the scenes in turn frame by frame, their order turned every round; each
    round gives the ratio of the medians of its frame changes, and the line quotes the median over rounds with
    their min and max."""
    import numpy as np

    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    wind_scene = bpy.context.scene
    wind_scene.name = "Wind"
    side = args.grid_side
    xs = np.linspace(-1.0, 1.0, side, dtype=np.float32)
    zs = np.linspace(0.0, 2.0, side, dtype=np.float32)
    gx, gz = np.meshgrid(xs, zs)
    co = np.stack([gx.ravel(), np.zeros(gx.size, np.float32), gz.ravel()], axis=1)
    idx = np.arange(side * side, dtype=np.int32).reshape(side, side)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], axis=-1).reshape(-1)
    n_faces = (side - 1) ** 2
    mesh = bpy.data.meshes.new("Grid")
    mesh.vertices.add(len(co))
    mesh.vertices.foreach_set("co", co.ravel())
    mesh.loops.add(len(quads))
    mesh.loops.foreach_set("vertex_index", quads)
    mesh.polygons.add(n_faces)
    mesh.polygons.foreach_set("loop_start", np.arange(0, 4 * n_faces, 4, dtype=np.int32))
    mesh.update(calc_edges=True)
    obj = bpy.data.objects.new("Grid Wind", mesh)
    wind_scene.collection.objects.link(obj)
    bpy.context.view_layer.update()
    ops.bake(wind_scene, [obj], ao_samples=0)
    wind_scene.envfx.wind.strength = args.fc_strength
    ops.add_wind(wind_scene, [obj])
    scenes = {"wind": wind_scene}

    def copy_scene(name, group, inputs=None):
        scene = bpy.data.scenes.new(name)
        twin = bpy.data.objects.new(f"Grid {name}", mesh.copy())
        twin.envfx.wind.asset_height = obj.envfx.wind.asset_height
        scene.collection.objects.link(twin)
        mod = twin.modifiers.new(name, "NODES")
        mod.node_group = group
        for key, value in (inputs or {}).items():
            mod[common.input_identifier(group, key)] = float(value)
        return scene

    scenes["bare"] = copy_scene("Bare", _bare_frame_group(common, "Bench Bare Frame"))
    core = importlib.import_module(envfx.__name__ + ".core.wind")
    for name, turn in (("reads", False), ("floor", True)):
        scenes[name] = copy_scene(name.title(), _floor_group(common, core, f"Bench Wind {name.title()}", turn))
    scenes["gpu"] = _gpu_scene(bpy, ops, mesh, args)
    if args.before:
        module, group = _group_of_revision(bpy, envfx, common, args.before)
        scene = copy_scene("Before", group, module.asset_input_values(obj))
        if module.VERSION < 15:  # it reads the five floats that Branch and Leaf replaced
            twin = scene.collection.objects[0].data
            n = len(twin.vertices)
            vec = {}
            for name in core.LIVE_ATTRS[:2]:
                vec[name] = np.empty(n * 3, np.float32)
                twin.attributes[name].data.foreach_get("vector", vec[name])
            floats = list(vec[core.LIVE_ATTRS[0]].reshape(n, 3).T) + list(vec[core.LIVE_ATTRS[1]].reshape(n, 3).T[:2])
            for name, values in zip(core.LIVE_ATTRS_OLD, floats):
                twin.attributes.new(name, "FLOAT", "POINT").data.foreach_set("value", np.ascontiguousarray(values))
        scene.envfx.wind.strength = args.fc_strength
        module._wire(scene, group)
        scenes["before"] = scene
    wind_nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.wind")
    for part in (p for p, (line_, _n, _v) in PARTS.items() if args.parts and line_ == "tree"):
        group = _part_group(bpy, wind_nodes, part)
        scene = copy_scene(part, group, wind_nodes.asset_input_values(obj))
        scene.envfx.wind.strength = args.fc_strength
        wind_nodes._wire(scene, group)
        scenes[part] = scene
    alt = _Alternatives(bpy, envfx, obj, wind_scene, copy_scene) if args.alternatives else None
    if alt is not None:
        scenes.update(alt.scenes)
    import framebench  # (benchmarks/ is on the path; it imports bpy, so not at the top of this bpy-free module)

    for scene in scenes.values():
        scene.frame_start, scene.frame_end = 1, 250
        # every scene's graph made *active*, as the graph of the scene a window plays is: only the file's own scene
        # (the wind's) had one, and an active graph costs more (framebench.ensure_depsgraph), which inflated the ratio
        framebench.ensure_depsgraph(scene)
        scene.frame_set(1)
    names = list(scenes)
    per_round = {name: [] for name in names}
    load = os.getloadavg()[0]
    for rnd in range(args.fc_rounds):
        order = names if rnd % 2 == 0 else names[::-1]
        times = {name: [] for name in names}
        start = 2 + (rnd * args.fc_frames) % 200
        for scene in scenes.values():
            scene.frame_set(start - 1)
        for frame in range(start, start + args.fc_frames):
            for name in order:
                t0 = time.perf_counter()
                scenes[name].frame_set(frame)
                times[name].append(time.perf_counter() - t0)
        for name in names:
            per_round[name].append(float(np.median(times[name])))
    ms = {name: round(float(np.median(v)) * 1e3, 2) for name, v in per_round.items()}

    def quartiles(name):
        r = [w / b_ for w, b_ in zip(per_round[name], per_round["bare"])]
        return [round(float(q), 2) for q in np.percentile(r, [0, 25, 50, 75, 100])]

    def ratios(name):
        lo, _q1, med, _q3, hi = quartiles(name)
        return med, lo, hi

    ratio, lo, hi = ratios("wind")
    _lo, q1, _med, q3, _hi = quartiles("wind")
    line = dict(bench="wind_frame_change", blender=version, vertices=side * side, strength=args.fc_strength,
                wind_ms=ms["wind"], bare_set_position_ms=ms["bare"], ratio=ratio, ratio_min=lo, ratio_q1=q1,
                ratio_q3=q3, ratio_max=hi, target_ratio=2.0,
                quoted="ratio (median over rounds of the per-round ratio of frame-change medians)",
                frames=args.fc_frames, rounds=args.fc_rounds, load_avg=load, load_avg_end=os.getloadavg()[0])
    for name in ("reads", "floor", "gpu"):
        f_ratio, f_lo, f_hi = ratios(name)
        line.update({f"{name}_ms": ms[name], f"{name}_ratio": f_ratio, f"{name}_ratio_min": f_lo,
                     f"{name}_ratio_max": f_hi})
    for part in (p for p in PARTS if p in scenes):
        p_ratio, p_lo, p_hi = ratios(part)
        line.update({f"{part}_ms": ms[part], f"{part}_ratio": p_ratio, f"{part}_ratio_min": p_lo,
                     f"{part}_ratio_max": p_hi})
    if args.before:
        b_ratio, b_lo, b_hi = ratios("before")
        line.update(before=args.before, before_ms=ms["before"], before_ratio=b_ratio, before_ratio_min=b_lo,
                    before_ratio_max=b_hi)
    # the evaluated grid moved (the wind really ran; a silent no-op would flatter the ratio)
    dg = wind_scene.view_layers[0].depsgraph
    moved = obj.evaluated_get(dg).data.vertices[side * side - 1].co[0] - obj.data.vertices[side * side - 1].co[0]
    line["top_corner_dx"] = round(float(moved), 4)
    # and the GPU's group really had its numbers set by its drivers at the last frame (the loop time)
    gpu_group = next(t for t in bpy.data.node_groups if t.get("envfx_kind") == "wind_gpu")
    line["gpu_group_time_s"] = round(float(gpu_group.nodes["T"].outputs[0].default_value), 4)
    emit(**line)
    if alt is not None:
        alt.close()
        out = dict(bench="wind_frame_change_alternatives", blender=version, vertices=side * side,
                   strength=args.fc_strength, reference="the bare time-dependent Set Position of wind_frame_change",
                   quoted="per way: [min, q1, median, q3, max] over rounds of the per-round ratio to the reference",
                   wind=quartiles("wind"), wind_ms=ms["wind"], bare_set_position_ms=ms["bare"],
                   rounds=args.fc_rounds, frames=args.fc_frames, load_avg=load, load_avg_end=os.getloadavg()[0])
        for name in alt.scenes:
            out[name] = quartiles(name)
            out[f"{name}_ms"] = ms[name]
        out.update(alt.facts)
        emit(**out)
    if args.gpu_draw:
        _render_rounds(bpy, np, {k: scenes[k] for k in ("wind", "gpu", "bare")}, args, version)
    for scene in list(scenes.values())[1:]:
        for o in list(scene.collection.objects):
            bpy.data.objects.remove(o)
        bpy.data.scenes.remove(scene)


def _render_rounds(bpy, np, scenes, args, version):
    """``wind_render_gpu``: each scene's grid rendered by Eevee (one sample, 320 x 240, a camera looking at it) at
    the same frames, the scenes in turn, ``--gpu-draw`` rounds: what a render pays for the wind by its modifier
    (evaluated for the render, then drawn) and on the GPU (displaced while drawn). Eevee draws here on the CPU
    (Mesa's llvmpipe), so the GPU's share is a software rasteriser's, not a graphics card's."""
    engine = "BLENDER_EEVEE_NEXT" if bpy.app.version < (5, 0, 0) else "BLENDER_EEVEE"
    for name, scene in scenes.items():
        cam = bpy.data.objects.new(f"Camera {name}", bpy.data.cameras.new(f"Camera {name}"))
        scene.collection.objects.link(cam)
        scene.camera = cam
        cam.location, cam.rotation_euler = (0.0, -5.0, 1.0), (math.radians(90), 0.0, 0.0)
        scene.render.engine = engine
        scene.eevee.taa_render_samples = 1
        scene.render.resolution_x, scene.render.resolution_y = 320, 240
    window = bpy.context.window
    times = {name: [] for name in scenes}
    for rnd in range(args.gpu_draw):
        order = list(scenes) if rnd % 2 == 0 else list(scenes)[::-1]
        for name in order:
            scene = scenes[name]
            scene.frame_set(10 + rnd)
            t0 = time.perf_counter()
            with bpy.context.temp_override(window=window, scene=scene):
                bpy.ops.render.render(scene=scene.name)
            times[name].append(time.perf_counter() - t0)
    ratio = {name: [t / b for t, b in zip(times[name], times["bare"])] for name in scenes}
    emit(bench="wind_render_gpu", blender=version, vertices=len(scenes["wind"].objects[0].data.vertices),
         reference="an Eevee render of the same grid under the bare time-dependent Set Position",
         quoted="per mode: median ratio over rounds [min, max]",
         modifier=[round(float(np.median(ratio["wind"])), 2), round(min(ratio["wind"]), 2),
                   round(max(ratio["wind"]), 2)],
         gpu=[round(float(np.median(ratio["gpu"])), 2), round(min(ratio["gpu"]), 2), round(max(ratio["gpu"]), 2)],
         bare_s=round(float(np.median(times["bare"])), 3), rounds=args.gpu_draw, load_avg=os.getloadavg()[0])


def _node_material(bpy, name):
    """A material with nodes (Blender 4.2 makes one without; Wind on GPU works in the node tree)."""
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):
        mat.use_nodes = True
    return mat


def _gpu_scene(bpy, ops, mesh, args):
    """A scene with a copy of the baked grid in the wind on the GPU (Wind on GPU: its material's displacement moves
    it when drawn; a frame change computes the group's drivers and the scene's clock on the CPU, nothing per
    vertex)."""
    scene = bpy.data.scenes.new("GPU")
    twin = bpy.data.objects.new("Grid GPU", mesh.copy())
    scene.collection.objects.link(twin)
    twin.data.materials.append(_node_material(bpy, "Grid GPU"))
    twin.envfx.wind.gpu = True
    scene.envfx.wind.strength = args.fc_strength
    ops.add_wind(scene, [twin])
    return scene


class _Alternatives:
    """The other ways Blender moves vertices per frame (#30: try them before calling the geometry-nodes cost a
    floor), each on a copy of the baked grid in a scene of its own, stepped with the others by frame changes:

    - ``handler``: a numpy frame handler (``frame_change_pre``) that computes the live wind's length-keeping motion
      of the frame in float32 (the per-asset terms of ``core.wind.live_terms``, the swing as two 3x3 products of
      the static vectors, the rescale about the attach point, the carry of carried vertices) and writes the
      positions into the mesh (``foreach_set`` on the position attribute). Its largest difference from the twin
      (``core.wind.wind_offsets``) at the last frame is in ``handler_max_error_m``; ``handler_numpy_ms`` and
      ``handler_write_ms`` split its Python time (the rest of its frame is Blender's update of the changed mesh).
    - ``shape_keys``: the swing as shape keys, one per static number and object axis (Branch and Leaf: 6 x 3 = 18,
      relative to the rest), their values set per frame from the per-asset terms (what drivers would set; a
      handler sets them here, cheaper than 18 Python drivers). A linear basis cannot keep lengths: the facts
      ``shape_keys_max_length_ratio`` (largest distance from the attach point over its rest value) and
      ``shape_keys_max_error_m`` (largest distance from the length-keeping motion) say how far it is, over the
      frames of a 200-frame span (the ratio over vertices farther than 5% of the asset's height from their attach
      point).
    - ``simple_deform``: a Simple Deform modifier bending the grid (one arc, lengths kept along its axis), its
      angle keyframed.
    - ``armature``: an Armature modifier with one bone (every vertex fully weighted), its rotation keyframed:
      rigid, so lengths are kept per bone (a tree would need a bone per branch and up to four weights a vertex).
    """

    def __init__(self, bpy, envfx, obj, wind_scene, copy_scene):
        import numpy as np

        self.bpy, self.np = bpy, np
        self.core = importlib.import_module(envfx.__name__ + ".core.wind")
        self.nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.wind")
        self.wind_obj, self.wind_scene = obj, wind_scene
        self.scenes, self.facts = {}, {}
        mesh = obj.data
        n = len(mesh.vertices)
        self.rest = np.empty(n * 3, np.float32)
        mesh.attributes["position"].data.foreach_get("vector", self.rest)
        self.rest = self.rest.reshape(n, 3)
        self.live = {}
        for name in self.core.LIVE_ATTRS:
            kind = "vector" if name in self.core.LIVE_VECTORS else "value"
            buf = np.empty(n * (3 if kind == "vector" else 1), np.float32)
            mesh.attributes[name].data.foreach_get(kind, buf)
            self.live[name] = buf.reshape(n, 3) if kind == "vector" else buf
        self.rel = self.live[self.core.LIVE_ATTRS[3]]
        self.rr = np.einsum("ij,ij->i", self.rel, self.rel)
        self.carried = np.flatnonzero(self.live[self.core.LIVE_ATTRS[4]] > 0.0)
        self.base = self.rest - self.rel
        self.buf = np.empty((n, 3), np.float32)
        # the same data one axis (or one static number) to a contiguous row, for the handler
        self.rel_t = np.ascontiguousarray(self.rel.T)
        self.base_t = np.ascontiguousarray(self.base.T)
        self.static_t = np.ascontiguousarray(np.concatenate([self.live[self.core.LIVE_ATTRS[0]],
                                                             self.live[self.core.LIVE_ATTRS[1]]], 1).T)
        self.q = np.empty((3, n), np.float32)
        self.row = np.empty(n, np.float32)
        self.handler_times = []  # (numpy seconds, write seconds) of every frame the handler moved

        def plain_scene(name):
            scene = copy_scene(name, None)
            target = scene.collection.objects[0]
            target.modifiers.clear()
            return scene, target

        self.scenes["handler"], self.handler_obj = plain_scene("Handler")
        self.scenes["shape_keys"], keyed = plain_scene("Shape Keys")
        self._make_shape_keys(keyed)
        self.scenes["simple_deform"], bent = plain_scene("Simple Deform")
        mod = bent.modifiers.new("Bend", "SIMPLE_DEFORM")
        mod.deform_method, mod.deform_axis = "BEND", "X"
        for frame, angle in ((1, 0.0), (250, 1.0)):
            mod.angle = angle
            bent.keyframe_insert(f'modifiers["{mod.name}"].angle', frame=frame)
        self.scenes["armature"], skinned = plain_scene("Armature")
        self._make_armature(skinned)
        self._handler = self._on_frame
        bpy.app.handlers.frame_change_pre.append(self._handler)

    def _make_shape_keys(self, obj):
        np = self.np
        obj.shape_key_add(name="Basis", from_mix=False)
        self.keys = []
        coeffs = np.concatenate([self.live[self.core.LIVE_ATTRS[0]], self.live[self.core.LIVE_ATTRS[1]]], 1)
        for k in range(6):
            for axis in range(3):
                block = obj.shape_key_add(name=f"Swing {k} {axis}", from_mix=False)
                block.slider_min, block.slider_max = -10.0, 10.0
                co = self.rest.copy()
                co[:, axis] += coeffs[:, k] * self.KEY_SCALE
                block.data.foreach_set("co", co.ravel())
                self.keys.append(block)
        self.keyed = obj

    KEY_SCALE = 10.0  # a key moves its vertices by 10 times the static number: the values stay within +-10

    def _make_armature(self, obj):
        bpy = self.bpy
        arm = bpy.data.armatures.new("Bench Armature")
        rig = bpy.data.objects.new("Bench Rig", arm)
        obj.users_scene[0].collection.objects.link(rig)
        rig_scene = obj.users_scene[0]
        layer = rig_scene.view_layers[0]
        layer.objects.active = rig
        with bpy.context.temp_override(scene=rig_scene, view_layer=layer, active_object=rig, object=rig):
            bpy.ops.object.mode_set(mode="EDIT")
            bone = arm.edit_bones.new("Stem")
            bone.head, bone.tail = (0.0, 0.0, 0.0), (0.0, 0.0, 2.0)
            bpy.ops.object.mode_set(mode="OBJECT")
        group = obj.vertex_groups.new(name="Stem")
        group.add(list(range(len(obj.data.vertices))), 1.0, "REPLACE")
        mod = obj.modifiers.new("Armature", "ARMATURE")
        mod.object = rig
        pose_bone = rig.pose.bones["Stem"]
        pose_bone.rotation_mode = "XYZ"
        for frame, angle in ((1, 0.0), (250, 1.0)):
            pose_bone.rotation_euler = (0.0, angle, 0.0)
            pose_bone.keyframe_insert("rotation_euler", frame=frame)

    def _terms(self, frame):
        """The per-asset terms of ``frame`` and the swing's two 3x3 matrices (columns: the vectors the static
        numbers scale)."""
        np = self.np
        core = self.core
        lt = core.live_terms(np.array(self.wind_obj.matrix_world), frame, self.nodes.params_from_scene(self.wind_scene),
                             self.nodes.asset_params(self.wind_obj))
        ub = np.stack([lt.bend * lt.dir, lt.vc, lt.vs], 1)
        ul = np.stack([lt.mc, lt.ms, lt.main * lt.dir], 1)
        return lt, ub, ul

    def positions(self, frame):
        """The live wind's positions of ``frame`` in float32 numpy (what the handler writes), computed one axis at
        a time on contiguous rows (numpy's broadcasts over (N, 3) columns and its BLAS product of (N, 3) by
        (3, 3) were several times slower here)."""
        np = self.np
        lt, ub, ul = self._terms(frame)
        u = np.concatenate([ub, ul], 1)  # (3, 6): row = axis, column = static number
        q = self.q
        for axis in range(3):
            np.copyto(q[axis], self.rel_t[axis])
            for k in range(6):
                np.multiply(self.static_t[k], np.float32(u[axis, k]), out=self.row)
                q[axis] += self.row
        qq = q[0] * q[0]
        qq += q[1] * q[1]
        qq += q[2] * q[2]
        scale = np.sqrt(np.divide(self.rr, qq, out=np.zeros_like(qq), where=qq > 0.0))
        out = self.buf
        for axis in range(3):
            np.multiply(q[axis], scale, out=self.row)
            self.row += self.base_t[axis]
            out[:, axis] = self.row
        if self.carried.size:  # the branches' carry (core.wind.keep_lengths step 2), on the carried vertices only
            m = np.array(self.wind_obj.matrix_world)
            up = np.linalg.inv(m[:3, :3])[:, 2]
            asset = self.nodes.asset_params(self.wind_obj)
            h = asset.asset_height
            ha = self.live[self.core.LIVE_ATTRS[4]][self.carried].astype(np.float64)
            lean = up[None, :] + (ha * lt.main / h)[:, None] * lt.dir[None, :]
            lean /= np.linalg.norm(lean, axis=1, keepdims=True)
            out[self.carried] += ((ha * h * np.linalg.norm(up))[:, None] * (lean - up / np.linalg.norm(up)))
        return out

    def _on_frame(self, scene, *_args):
        if scene == self.scenes["handler"]:
            t0 = time.perf_counter()
            positions = self.positions(scene.frame_current)
            t1 = time.perf_counter()
            mesh = self.handler_obj.data
            mesh.attributes["position"].data.foreach_set("vector", positions.ravel())
            mesh.update()
            self.handler_times.append((t1 - t0, time.perf_counter() - t1))
        elif scene == self.scenes["shape_keys"]:
            _lt, ub, ul = self._terms(scene.frame_current)
            values = self.np.concatenate([ub.T, ul.T]).ravel() / self.KEY_SCALE  # key (k, axis): row k, column axis
            for block, value in zip(self.keys, values):
                block.value = float(value)

    def close(self):
        """Unregister the handler and note how far the handler and the shape keys are from the twin."""
        np = self.np
        self.bpy.app.handlers.frame_change_pre.remove(self._handler)
        frame = self.wind_scene.frame_current
        mats = (np.array(self.wind_obj.matrix_world), self.nodes.params_from_scene(self.wind_scene),
                self.nodes.asset_params(self.wind_obj))
        twin = self.base.astype(np.float64) + self.rel
        twin = twin + self.core.keep_lengths(
            self.core.wind_swing(self.rest, None, mats[0], frame, mats[1], mats[2], self.live), self.live, mats[0],
            mats[2], self.core.live_terms(mats[0], frame, mats[1], mats[2]))
        self.facts["handler_numpy_ms"], self.facts["handler_write_ms"] = (
            round(float(np.median([t[i] for t in self.handler_times])) * 1e3, 2) for i in (0, 1))
        self.facts["handler_max_error_m"] = float(f"{np.abs(self.positions(frame) - twin).max():.2e}")
        worst_ratio, worst_err = 1.0, 0.0
        # (vertices within 5% of the asset's height of their attach point are left out of the ratio: a linear
        # swing of a vertex right at its attach point multiplies a length of almost nothing)
        moving = self.rr > (0.05 * self.wind_obj.envfx.wind.asset_height) ** 2
        for f in range(2, 2 + 200, 7):  # over the loop's frames: the linear swing against the kept lengths
            swing = self.core.wind_swing(self.rest, None, mats[0], f, mats[1], mats[2], self.live)
            kept = self.core.keep_lengths(swing, self.live, mats[0], mats[2],
                                          self.core.live_terms(mats[0], f, mats[1], mats[2]))
            q = self.rel[moving] + swing[moving]
            worst_ratio = max(worst_ratio, float(np.max(np.sqrt((q * q).sum(1) / self.rr[moving]))))
            worst_err = max(worst_err, float(np.abs(swing - kept).max()))
        self.facts.update(shape_keys_max_length_ratio=round(worst_ratio, 3),
                          shape_keys_max_error_m=round(worst_err, 4),
                          shape_keys_count=len(self.keys),
                          asset_height_m=round(self.wind_obj.envfx.wind.asset_height, 3))


def _push_frame_changes(bpy, envfx, ops, args):
    """Line 8: grass in the wind pushed by walkers (a baked buffer), against a bare Set Position; and with push off."""
    import shutil
    import tempfile

    import numpy as np

    import framebench
    from tests.blender import api  # (imports bpy, so not at the top of this bpy-free module)

    snow = importlib.import_module(envfx.__name__ + ".core.snow")
    snow_nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.snow")
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    pushed = bpy.context.scene
    pushed.name = "Pushed"
    n = args.push_blades
    rng = np.random.default_rng(7)
    mesh, side = framebench.grass_mesh("Field", n, rng)
    field = bpy.data.objects.new("Field", mesh)
    pushed.collection.objects.link(field)
    bpy.context.view_layer.update()
    t0 = time.perf_counter()
    field.envfx.wind.category = "GRASS"
    ops.bake(pushed, [field], ao_samples=0)
    bake_s = time.perf_counter() - t0
    ops.add_wind(pushed, [field])
    # walkers across the field, frames 1-60, baked into an image sequence (256 texels over the field)
    frames = np.arange(1, 61)
    start = rng.uniform(-side / 2, side / 2, (args.push_actors, 2))
    heading = rng.uniform(0, 2 * math.pi, args.push_actors)
    step = 1.4 / 24.0 * np.stack([np.cos(heading), np.sin(heading)], 1)
    xy = start[None] + (frames - 1)[:, None, None] * step[None]
    tracks = np.concatenate([xy, np.zeros((len(frames), args.push_actors, 1))], 2)
    folder = tempfile.mkdtemp(prefix="envfx-bench-push-")
    try:
        buf = snow.BufferParams(resolution=256, size=side, origin=(-side / 2, -side / 2))
        result = snow.bake(tracks, np.full(args.push_actors, 0.4), np.full(args.push_actors, 0.2),
                           snow.StampParams(fps=24.0), buf, frame_start=1, out_dir=folder, sequence=True)
        meta = snow.read_buffer_metadata(result.metadata_path)
        image = bpy.data.images.load(result.files[0])
        image.source = "SEQUENCE"
        image.colorspace_settings.name = "Non-Color"
        image.alpha_mode = "CHANNEL_PACKED"
        snow_nodes.ensure_buffer_group(image, meta)
        ops.grass_push(pushed, image=image)
        # the same field in the wind, push off, in its own scene (its own wind group), and the bare reference
        still = framebench.new_scene("Push Off", pushed)
        twin = bpy.data.objects.new("Field Push Off", mesh)
        still.collection.objects.link(twin)
        twin.envfx.wind.category = "GRASS"
        ops.add_wind(still, [twin])
        reference = framebench.reference_scene(pushed, [mesh.copy()])
        # and a copy of the field pushed in the wind on the GPU (Wind on GPU, its material displaces it when drawn)
        on_gpu = framebench.new_scene("Push On GPU", pushed)
        gpu_field = bpy.data.objects.new("Field On GPU", mesh.copy())
        on_gpu.collection.objects.link(gpu_field)
        gpu_field.data.materials.append(_node_material(bpy, "Field On GPU"))
        gpu_field.envfx.wind.category = "GRASS"
        gpu_field.envfx.wind.gpu = True
        ops.add_wind(on_gpu, [gpu_field])
        ops.grass_push(on_gpu, image=image)
        pairs = {"on": pushed, "off": still, "on_gpu": on_gpu}
        if args.before:  # that revision's group on the same field, pushed by the same buffer and with push off, in
            # scenes of their own (one group each: the wiring sets the group's push values)
            common = importlib.import_module(envfx.__name__ + ".shader_nodes.common")
            for key, push in (("before", True), ("off_before", False)):
                module, group = _group_of_revision(bpy, envfx, common, args.before)
                before = framebench.new_scene(f"Push {key}", pushed)
                before_wind = api.envfx(before).wind
                before_wind.grass_push, before_wind.push_buffer = push, image
                old = bpy.data.objects.new(f"Field Push {key}", mesh)
                before.collection.objects.link(old)
                mod = old.modifiers.new("Before", "NODES")
                mod.node_group = group
                for name, value in module.asset_input_values(field).items():
                    mod[common.input_identifier(group, name)] = float(value)
                module._wire(before, group)
                pairs[key] = before
        wind_nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.wind")
        common = importlib.import_module(envfx.__name__ + ".shader_nodes.common")
        for part in (p for p, (line_, _n, _v) in PARTS.items() if args.parts and line_ == "push"):
            group = _part_group(bpy, wind_nodes, part)
            scene = framebench.new_scene(part, pushed)
            part_wind = api.envfx(scene).wind
            part_wind.grass_push, part_wind.push_buffer = True, image
            part_obj = bpy.data.objects.new(f"Field {part}", mesh)
            scene.collection.objects.link(part_obj)
            mod = part_obj.modifiers.new(part, "NODES")
            mod.node_group = group
            for key, value in wind_nodes.asset_input_values(field).items():
                mod[common.input_identifier(group, key)] = float(value)
            wind_nodes._wire(scene, group)
            pairs[part] = scene
        for scene in (*pairs.values(), reference):
            scene.frame_start, scene.frame_end = 1, 60
        runs = framebench.interleaved(pairs, reference, range(10, 11 + args.push_frames), args.push_rounds)
        got, off = runs["on"], runs["off"]
        # the push really ran: the pushed field differs from the one with push off
        dg_on, dg_off = pushed.view_layers[0].depsgraph, still.view_layers[0].depsgraph
        pushed.frame_set(30)
        still.frame_set(30)
        on_co = np.empty(12 * n, np.float32)
        off_co = np.empty(12 * n, np.float32)
        field.evaluated_get(dg_on).data.vertices.foreach_get("co", on_co)
        twin.evaluated_get(dg_off).data.vertices.foreach_get("co", off_co)
        framebench.emit(bench="wind_push_frame_change", vertices=4 * n, blades=n, actors=args.push_actors,
                        buffer_resolution=256, target_ratio=3.5, wind_bake_s=round(bake_s, 2),
                        push_on=framebench.summary(got), push_off=framebench.summary(off),
                        push_on_gpu=framebench.summary(runs["on_gpu"]),
                        pushed_vertices=int((np.abs(on_co - off_co).reshape(-1, 3).max(1) > 1e-3).sum()),
                        **{part: framebench.summary(runs[part]) for part in PARTS if part in runs},
                        **({"before": args.before, "push_before": framebench.summary(runs["before"]),
                            "push_off_before": framebench.summary(runs["off_before"]),
                            "after_over_before": _over(got, runs["before"]),
                            "off_after_over_before": _over(off, runs["off_before"])}
                           if args.before else {}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _over(after, before):
    """The spread over rounds of one scene's seconds per frame over another's (medians of each round's frames after
    its first two)."""
    import framebench  # (imports bpy: not at the top of this bpy-free module)
    return framebench.spread([statistics.median(a[2:] or a) / statistics.median(b[2:] or b)
                              for a, b in zip(after["effect"], before["effect"])])


def _remove_wind(bpy, scene, ops, shape, count, version):
    """Remove Wind on ``count`` plants with a baked mesh each (a copy of one baked mesh, so only one bake)."""
    plants = _plants(bpy, scene, ops, "GRASS", shape, 1)
    base = plants[0].data
    for i in range(1, count):
        plant = bpy.data.objects.new(f"Bench Grass {i}", base.copy())
        plant.location = (i % 40, i // 40, 0.0)
        scene.collection.objects.link(plant)
        plants.append(plant)
    ops.add_wind(scene, plants)
    t0 = time.perf_counter()
    ops.remove_wind(plants)
    seconds = time.perf_counter() - t0
    emit(bench="wind_remove", blender=version, plants=count, seconds=round(seconds, 3),
         per_plant_us=round(seconds / count * 1e6, 1), load_avg=os.getloadavg()[0])
    for plant in plants:
        mesh = plant.data
        bpy.data.objects.remove(plant)
        bpy.data.meshes.remove(mesh)


def _terrain_follow(bpy, envfx, scene, plants, time_frames, args, version):
    """The grass's terrain follow (``terrain_object``): the frame with no terrain object, with a flat terrain and
    with a bent terrain (Runner, its bend read back per grass vertex: ``common.build_bend_drop``), in alternating
    rounds; the grass itself is not bent, so the difference is the follow's own cost."""
    import numpy as np

    n = 121
    xs = np.linspace(-10.0, 50.0, n)
    gx, gy = np.meshgrid(xs, xs)
    ids = np.arange(n * n).reshape(n, n)
    quads = np.stack([ids[:-1, :-1], ids[:-1, 1:], ids[1:, 1:], ids[1:, :-1]], -1).reshape(-1, 4)
    mesh = bpy.data.meshes.new("Bench Terrain")
    mesh.from_pydata(np.column_stack([gx.ravel(), gy.ravel(), np.zeros(n * n)]).tolist(), [], quads.tolist())
    terrain = bpy.data.objects.new("Bench Terrain", mesh)
    scene.collection.objects.link(terrain)
    b = scene.envfx.bend
    b.mode, b.axis, b.strength, b.spread = "RUNNER", "POS_Y", 0.002, 2.0
    envfx.operators.bend.add_bend(scene, [terrain])
    bend_mod = envfx.operators.bend.bend_modifiers(terrain)[0]
    states = {"none": (None, False), "flat": (terrain, False), "bent": (terrain, True)}
    got = {name: [] for name in states}
    for _round in range(args.rounds):
        for name, (target, bent) in states.items():
            scene.envfx.wind.terrain_object = target
            bend_mod.show_viewport = bent
            envfx.operators.bend.sync_readers(scene)
            bpy.context.view_layer.update()
            got[name].append(time_frames())
    ms = {name: float(np.median(t)) * 1e3 for name, t in got.items()}
    emit(bench="wind_terrain_follow", blender=version, plants=len(plants),
         vertices_each=len(plants[0].data.vertices), terrain_vertices=n * n,
         no_terrain_frame_ms=round(ms["none"], 2), flat_terrain_frame_ms=round(ms["flat"], 2),
         bent_terrain_frame_ms=round(ms["bent"], 2),
         follow_per_plant_us=round((ms["flat"] - ms["none"]) / len(plants) * 1e3, 1),
         bent_extra_per_plant_us=round((ms["bent"] - ms["flat"]) / len(plants) * 1e3, 1),
         frames=args.frames, rounds=args.rounds, load_avg=os.getloadavg()[0])
    scene.envfx.wind.terrain_object = None
    envfx.operators.bend.remove_bend([terrain])
    bpy.data.objects.remove(terrain)


def _props_frame_changes(bpy, np, ops, core, shapes, args):
    """Line 10 (#30): a level of ``--props`` small swaying props, linked copies of one baked mesh on a grid (a small
    bush with the TREE preset, a small grass clump with GRASS), against the same props with the reference modifier
    (``framebench.reference_group``: a bare time-dependent Set Position), by frame changes (``framebench``): the
    wind's cost per frame in a level, where each object's part counts, not its vertices."""
    import framebench

    kinds = [("TREE", "bush", shapes.make_tree(height=1.5, n_branches=2, leaves_per_branch=2, trunk_sides=6,
                                               trunk_rings=4, branch_sides=4, leaf_grid=1)),
             ("GRASS", "grass clump", shapes.make_grass(blades=6, height=0.5, seed=1))]
    for asset in _corpus(args, "wind_props_per_frame"):  # real small plants: the corpus's flower and grass tuft
        if asset["name"] in ("flower_blue", "grass"):
            positions, faces = _read_obj(asset["obj"])
            kinds.append(("GRASS" if asset["name"] == "grass" else "BUSH", asset["name"],
                          {"positions": positions, "faces": faces}))
    for kind, name, shape in kinds:
        bpy.ops.wm.read_homefile(app_template="", use_empty=True)
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, args.props_frames + 1
        plants = _plants(bpy, scene, ops, kind, shape, args.props)
        ref = framebench.reference_scene(scene, [plants[0].data] * len(plants),
                                         locations=[tuple(p.location) for p in plants])
        rigid, setup_s = _rigid_props(bpy, ops, scene, plants)
        runs = framebench.interleaved({"wind": scene, "rigid": rigid}, ref, range(1, args.props_frames + 2),
                                      args.props_rounds)
        out = framebench.summary(runs["wind"])
        framebench.emit(bench="wind_props_per_frame", kind=kind, asset=name, objects=len(plants),
                        vertices_each=len(plants[0].data.vertices),
                        group_nodes=_node_count(ops.wind_modifiers(plants[0])[0].node_group), **out,
                        extra_per_object_us=round((out["effect_s"] - out["reference_s"]) / len(plants) * 1e6, 2),
                        target_ratio=1.5)
        out = framebench.summary(runs["rigid"])
        framebench.emit(bench="wind_props_rigid_per_frame", kind=kind, asset=name, objects=len(plants),
                        vertices_each=len(plants[0].data.vertices), **out, add_wind_s=round(setup_s, 3),
                        extra_per_object_us=round((out["effect_s"] - out["reference_s"]) / len(plants) * 1e6, 2),
                        target_ratio=1.5)
        bpy.data.scenes.remove(rigid)
        if args.props_alternatives and kind == "TREE":
            _props_alternatives(bpy, np, core, plants, ref, args)
        bpy.data.scenes.remove(ref)


def _rigid_props(bpy, ops, like, plants):
    """A scene of the same props (linked copies of the same mesh at the same places, the same wind settings) in
    rigid sway, set up as a user does (Rigid Sway on, then Add Wind on all of them); and the seconds Add Wind
    took."""
    import framebench

    scene, props = framebench.objects_scene(like, [plants[0].data] * len(plants), "Rigid",
                                            [tuple(p.location) for p in plants])
    scene_wind, settings = ops.bridge.envfx_settings(scene).wind, ops.bridge.envfx_settings(plants[0]).wind
    for key in ("direction", "strength", "gust_strength", "gust_frequency", "loop_frames"):
        setattr(scene_wind, key, getattr(ops.bridge.envfx_settings(like).wind, key))
    for obj in props:
        wind = ops.bridge.envfx_settings(obj).wind
        for key in ("category", "rigidity", "bend", "sway", "ramp", "main_bend"):
            setattr(wind, key, getattr(settings, key))
        wind.rigid = True
    t0 = time.perf_counter()
    result = ops.add_wind(scene, props)
    setup_s = time.perf_counter() - t0
    assert len(result.changed) == len(props), result.skipped
    return scene, setup_s


class _PropsAlternatives:
    """Scenes of the props-alternatives line (``--props-alternatives``): each holds ``count`` linked copies of
    ``mesh`` (a plant mesh in the wind: it has the wind's static vectors) at ``locations``, moved per frame another
    way than by the wind group (see the module's line 10). One shared state mesh holds the per-object rows the
    lean groups read; a ``frame_change_pre`` handler rewrites it (and one rotates the handler scene's props),
    each acting only on its own scene's frame changes."""

    ROWS = 6

    def __init__(self, bpy, np, mesh, locations, vectors):
        self.bpy, self.np = bpy, np
        self.mesh, self.locations, self.vectors = mesh, locations, vectors
        n = len(locations)
        rng = np.random.default_rng(7)
        self.phase = rng.uniform(0.0, 2 * math.pi, (n, self.ROWS, 3)).astype(np.float32)
        self.freq = rng.uniform(0.5, 2.0, (n, self.ROWS, 3)).astype(np.float32)
        self.handler_s: dict = {}  # key -> seconds of each of its handler's calls
        self.handlers: list = []
        self.scenes: dict = {}
        self.driver_simple = False  # (build: whether the drivers are simple expressions, evaluated without Python)

    def _scene(self, name, like):
        import framebench

        return framebench.objects_scene(like, [self.mesh] * len(self.locations), name, self.locations)

    def _state_group(self, name, swing):
        """Object Info of the state, six Sample Index of its rows at the prop's index; ``swing``: the wind's
        per-vertex part on them (three vectors read, six dot products, the length-keeping rescale about the
        pivot vector), else the first row as the offset."""
        bpy = self.bpy
        tree = bpy.data.node_groups.new(name, "GeometryNodeTree")
        for sock, io_, kind in (("Geometry", "INPUT", "Geometry"), ("Index", "INPUT", "Int"),
                                ("State", "INPUT", "Object"), ("Geometry", "OUTPUT", "Geometry")):
            tree.interface.new_socket(name=sock, in_out=io_, socket_type=f"NodeSocket{kind}")
        new, link = tree.nodes.new, tree.links.new
        gin, gout = new("NodeGroupInput"), new("NodeGroupOutput")
        info = new("GeometryNodeObjectInfo")
        link(gin.outputs["State"], info.inputs["Object"])

        def named(attr):
            node = new("GeometryNodeInputNamedAttribute")
            node.data_type = "FLOAT_VECTOR"
            node.inputs["Name"].default_value = attr
            return node.outputs["Attribute"]

        def vmath(op, a, b, out: int | str = 0):
            node = new("ShaderNodeVectorMath")
            node.operation = op
            link(a, node.inputs[0])
            link(b, node.inputs[1 if op != "SCALE" else "Scale"])
            return node.outputs[out]

        rows = []
        for k in range(self.ROWS if swing else 1):
            sample = new("GeometryNodeSampleIndex")
            sample.data_type, sample.domain = "FLOAT_VECTOR", "POINT"
            link(info.outputs["Geometry"], sample.inputs["Geometry"])
            link(named(f"row{k}"), sample.inputs["Value"])
            link(gin.outputs["Index"], sample.inputs["Index"])
            rows.append(sample.outputs[0])
        offset = rows[0]
        if swing:
            branch, leaf, pivot = (named(v) for v in self.vectors)
            combine = new("ShaderNodeCombineXYZ")
            for axis in range(3):
                add = new("ShaderNodeMath")
                add.operation = "ADD"
                link(vmath("DOT_PRODUCT", branch, rows[axis], "Value"), add.inputs[0])
                link(vmath("DOT_PRODUCT", leaf, rows[3 + axis], "Value"), add.inputs[1])
                link(add.outputs[0], combine.inputs[axis])
            moved = vmath("ADD", pivot, combine.outputs[0])
            ratio = new("ShaderNodeMath")
            ratio.operation = "DIVIDE"
            link(vmath("DOT_PRODUCT", pivot, pivot, "Value"), ratio.inputs[0])
            link(vmath("DOT_PRODUCT", moved, moved, "Value"), ratio.inputs[1])
            root = new("ShaderNodeMath")
            root.operation = "SQRT"
            link(ratio.outputs[0], root.inputs[0])
            offset = vmath("SUBTRACT", vmath("SCALE", moved, root.outputs[0]), pivot)
        setpos = new("GeometryNodeSetPosition")
        link(gin.outputs["Geometry"], setpos.inputs["Geometry"])
        link(offset, setpos.inputs["Offset"])
        link(setpos.outputs[0], gout.inputs[0])
        return tree

    def build(self, like) -> dict:
        """key -> scene: ``state_swing``, ``state_offset``, ``handler_rotation``, ``driver_rotation``."""
        import bpy  # (typed: the checker follows the API here)
        state_mesh = bpy.data.meshes.new("Props State")
        state_mesh.vertices.add(len(self.locations))
        for k in range(self.ROWS):
            state_mesh.attributes.new(f"row{k}", "FLOAT_VECTOR", "POINT")
        for key, swing in (("state_swing", True), ("state_offset", False)):
            scene, props = self._scene(key, like)
            state = bpy.data.objects.new(f"{key} state", state_mesh)
            scene.collection.objects.link(state)
            tree = self._state_group(f"Bench {key}", swing)
            ident = {i.name: i.identifier for i in tree.interface.items_tree if i.in_out == "INPUT"}
            for i, obj in enumerate(props):
                mod = obj.modifiers.new(key, "NODES")
                assert isinstance(mod, bpy.types.NodesModifier)  # (the stubs type a new modifier as any Modifier)
                mod.node_group = tree
                mod[ident["Index"]], mod[ident["State"]] = i, state
            self._handler(key, scene, lambda sc, mesh=state_mesh: self._write_rows(sc, mesh))
            self.scenes[key] = scene
        scene, props = self._scene("handler_rotation", like)
        self._handler("handler_rotation", scene, lambda sc, props=props: self._rotate(sc, props))
        self.scenes["handler_rotation"] = scene
        scene, props = self._scene("driver_rotation", like)
        for i, obj in enumerate(props):
            for axis in (0, 1):
                driver = self._driver(obj.driver_add("delta_rotation_euler", axis))
                driver.type = "SCRIPTED"
                driver.expression = f"0.1*sin(frame*{self.freq[i, 0, axis] / 24:.5f}+{self.phase[i, 0, axis]:.4f})"
        animation = props[0].animation_data
        assert animation is not None  # (driver_add made it)
        self.driver_simple = all(self._driver(c).is_simple_expression for c in animation.drivers)
        self.scenes["driver_rotation"] = scene
        return self.scenes

    def _driver(self, curve):
        """The driver of an F-curve of ``driver_add`` (one property index: one curve, typed as a list too)."""
        assert isinstance(curve, self.bpy.types.FCurve) and curve.driver is not None
        return curve.driver

    def _handler(self, key, scene, fn):
        times = self.handler_s.setdefault(key, [])

        def handler(sc, *_args):
            if sc == scene:
                t0 = time.perf_counter()
                fn(sc)
                times.append(time.perf_counter() - t0)

        self.bpy.app.handlers.frame_change_pre.append(handler)
        self.handlers.append(handler)

    def _write_rows(self, scene, mesh):
        """Every prop's six rows at this frame, computed at once (the per-object part of all props together)."""
        np = self.np
        t = np.float32(scene.frame_current / 24.0)
        rows = np.sin(self.freq * t + self.phase) * np.float32(0.05)
        for k in range(self.ROWS):
            mesh.attributes[f"row{k}"].data.foreach_set("vector", np.ascontiguousarray(rows[:, k]).ravel())
        mesh.update()

    def _rotate(self, scene, props):
        np = self.np
        t = scene.frame_current / 24.0
        rx, ry = (0.1 * np.sin(self.freq[:, 0, k] * t + self.phase[:, 0, k]) for k in (0, 1))
        for obj, a, b in zip(props, rx.tolist(), ry.tolist(), strict=True):
            obj.rotation_euler = (a, b, 0.0)

    def close(self):
        for handler in self.handlers:
            self.bpy.app.handlers.frame_change_pre.remove(handler)
        for scene in self.scenes.values():
            self.bpy.data.scenes.remove(scene)


def _props_alternatives(bpy, np, core, plants, ref, args):
    """The ``wind_props_alternatives`` line: the wind props ``plants`` and each ``_PropsAlternatives`` scene against
    the reference scene ``ref``, in interleaved rounds (framebench.interleaved)."""
    import framebench

    alt = _PropsAlternatives(bpy, np, plants[0].data, [tuple(p.location) for p in plants], core.LIVE_VECTORS)
    try:
        pairs = {"wind": plants[0].users_scene[0], **alt.build(plants[0].users_scene[0])}
        runs = framebench.interleaved(pairs, ref, range(1, args.props_frames + 2), args.props_rounds)
        out = {key: framebench.summary(run) for key, run in runs.items()}
        moved = {}
        for key, scene in pairs.items():  # each way moves its props (a frame apart: not where they were)
            obj = next(o for o in scene.objects if o.type == "MESH" and not o.name.endswith("state"))
            got = []
            for f in (2, 3):
                scene.frame_set(f)
                dg = framebench.ensure_depsgraph(scene)
                ev = obj.evaluated_get(dg)
                co = np.array([ev.matrix_world @ v.co for v in ev.to_mesh().vertices])
                ev.to_mesh_clear()
                got.append(co)
            moved[key] = round(float(np.abs(got[1] - got[0]).max()), 6)
        framebench.emit(bench="wind_props_alternatives", objects=len(plants),
                        vertices_each=len(plants[0].data.vertices),
                        ratio={key: o["ratio"] for key, o in out.items()},
                        seconds={key: o["effect_s"] for key, o in out.items()},
                        reference_s=out["wind"]["reference_s"], rounds=args.props_rounds,
                        handler_ms={key: round(float(np.median(t)) * 1e3, 3) for key, t in alt.handler_s.items()},
                        moved_m=moved, drivers_simple=alt.driver_simple, target_ratio=1.5)
    finally:
        alt.close()


def _node_count(tree) -> int:
    """The nodes of a group: its own and those of the groups nested in it (frames and reroutes left out)."""
    count = 0
    for node in tree.nodes:
        if node.bl_idname in ("NodeFrame", "NodeReroute"):
            continue
        group = getattr(node, "node_group", None)
        count += _node_count(group) if group is not None else 1
    return count


def _plants(bpy, scene, ops, kind, shape, count):
    """``count`` linked copies (one mesh) of a baked plant on a grid, in the wind with the preset of ``kind``."""
    mesh = bpy.data.meshes.new(f"Bench {kind.title()}")
    mesh.from_pydata(shape["positions"].tolist(), [], shape["faces"].tolist())
    plants = []
    for i in range(count):
        plant = bpy.data.objects.new(f"Bench {kind.title()} {i}", mesh)
        plant.location = (i % 40, i // 40, 0.0)
        scene.collection.objects.link(plant)
        plants.append(plant)
    ops.bake(scene, plants[:1], ao_samples=0)
    ops.apply_preset(plants, kind)
    ops.add_wind(scene, plants)
    return plants


def _spread(values):
    import numpy as np

    return dict(median=round(float(np.median(values)), 3), min=round(min(values), 3), max=round(max(values), 3))


def _blender_asset(positions, faces, name):
    """A mesh object of ``positions`` and triangles ``faces`` in the scene (for Bake Wind Data end to end)."""
    import bpy
    import numpy as np

    from tests.blender import api  # (imports bpy, so not at the top of this bpy-free module)

    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(positions))
    mesh.vertices.foreach_set("co", np.asarray(positions, np.float32).ravel())
    mesh.loops.add(len(faces) * 3)
    mesh.loops.foreach_set("vertex_index", faces.astype(np.int32).ravel())
    mesh.polygons.add(len(faces))
    mesh.polygons.foreach_set("loop_start", (np.arange(len(faces)) * 3).astype(np.int32))
    mesh.polygons.foreach_set("loop_total", np.full(len(faces), 3, np.int32))
    mesh.update(calc_edges=True)
    obj = bpy.data.objects.new(name, mesh)
    api.scene().collection.objects.link(obj)
    api.view_layer().update()
    return obj


def _bake_times(envfx, positions, faces, rounds, name, ao=True):
    """The wind-data bake of one asset (AO excluded), in ``rounds`` alternating rounds of the numpy core (edges
    in, result out) and of Bake Wind Data end to end (``operators.wind.bake``: read the mesh, bake, write the
    attributes), wall and CPU seconds of each; then the AO once (unless not ``ao``), and the core bake's peak of
    numpy memory (tracemalloc, an untimed run). Returns (result, dict of numbers)."""
    import tracemalloc

    import bpy
    import numpy as np

    from tests.blender import api  # (imports bpy, so not at the top of this bpy-free module)

    core = importlib.import_module(envfx.__name__ + ".core.wind")
    hier = importlib.import_module(envfx.__name__ + ".core.wind_hierarchy")
    ops = importlib.import_module(envfx.__name__ + ".operators.wind")
    edges = np.unique(np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1),
                      axis=0)
    obj = _blender_asset(positions, faces, name)
    got = {key: [] for key in ("core", "core_cpu", "operator", "operator_cpu")}
    res = None
    for _round in range(max(1, rounds)):
        t0, c0 = time.perf_counter(), time.process_time()
        res = core.bake_wind_data(positions, edges)
        got["core"].append(time.perf_counter() - t0)
        got["core_cpu"].append(time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):  # (its progress lines are no JSON)
            ops.bake(bpy.context.scene, [obj], ao_samples=0)
        got["operator"].append(time.perf_counter() - t0)
        got["operator_cpu"].append(time.process_time() - c0)
    mesh = api.mesh(obj)
    bpy.data.objects.remove(obj)
    bpy.data.meshes.remove(mesh)
    t_ao = None
    if ao:
        t0 = time.perf_counter()
        hier.ambient_occlusion(positions, faces, directions=32)
        t_ao = round(time.perf_counter() - t0, 3)
    tracemalloc.start()
    core.bake_wind_data(positions, edges)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert res is not None  # (rounds: at least one)
    out: dict[str, Any] = {f"{key}_seconds": _spread(values) for key, values in got.items()}
    out.update(ao_seconds=t_ao, core_peak_mb=round(peak / 2 ** 20, 1), rounds=max(1, rounds))
    return res, out


def _corpus(args, bench: str) -> list:
    """The real-vegetation corpus's assets already in the cache (tools/fetch_assets.py: each a dict with "name" and
    "obj"); none with ``--no-corpus``, or (saying so in a line of ``bench``) when the cache holds no corpus."""
    if args.no_corpus:
        return []
    index = os.path.join(os.environ.get("ENVFX_ASSET_CACHE") or os.path.join(ROOT, ".cache", "assets"),
                         "index.json")
    if not os.path.exists(index):
        emit(bench=bench, skipped="no corpus in the cache: run tools/fetch_assets.py")
        return []
    with open(index) as fh:
        return json.load(fh)["assets"]


def _read_obj(path):
    """Positions (Z up, metres: the corpus is Y-up centimetres) and triangles of an OBJ the fetch script wrote."""
    import numpy as np

    v, f = [], []
    with open(path) as fh:
        for line in fh:
            if line.startswith("v "):
                v.append(line.split()[1:4])
            elif line.startswith("f "):
                f.append([int(x.split("/")[0]) - 1 for x in line.split()[1:4]])
    v = np.array(v, np.float64) * 0.01
    return np.stack([v[:, 0], -v[:, 2], v[:, 1]], 1), np.array(f, np.int64)


def _vegetation(envfx, args, version):
    core = importlib.import_module(envfx.__name__ + ".core.wind")
    shapes = importlib.import_module(envfx.__name__ + ".core.wind_shapes")
    import resource

    # whether this run has the OpenBLAS settings the tests keep (a benchmark may unset both: say so)
    blas = {name: os.environ.get(name) for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    tree = shapes.make_vegetation("double", "touch", height=12.0, n_branches=args.veg_branches, twigs=args.veg_twigs,
                                  leaves_per_twig=args.veg_leaves, sides=args.veg_sides)
    load = os.getloadavg()[0]
    res, got = _bake_times(envfx, tree["positions"], tree["faces"], args.bake_rounds, "Bench Vegetation",
                           not args.no_ao)
    emit(bench="wind_bake_vegetation", blender=version, vertices=len(tree["positions"]),
         cards=int(tree["leaf_id"].max() + 1), branch_pieces=args.veg_branches * (1 + args.veg_twigs),
         islands=res.n_islands, structure=core.levels_text(res), seconds=got["core_seconds"]["median"],
         target_seconds=5.0, **got, max_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
         openblas=blas, load_avg=load, load_avg_end=os.getloadavg()[0])
    assets = _corpus(args, "wind_bake_corpus")
    for asset in assets:
        positions, faces = _read_obj(asset["obj"])
        load = os.getloadavg()[0]
        res, got = _bake_times(envfx, positions, faces, args.bake_rounds, f"Bench {asset['name']}",
                               not args.no_ao)
        emit(bench="wind_bake_corpus", blender=version, asset=asset["name"], vertices=len(positions),
             islands=res.n_islands, structure=core.levels_text(res), seconds=got["core_seconds"]["median"], **got,
             openblas=blas, load_avg=load, load_avg_end=os.getloadavg()[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
