"""The Numpy trails engine (``operators.snow.numpy_trails``) against the simulation zone's trails: the same snow
top (to 1e-4 m) over a walk, scrubbing back, a reopened file, two scenes and the camera fade; the settings it
cannot run refused with a message."""

import importlib.util
import os

import bpy
import numpy as np
import pytest

from tests.blender import api

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("envfx_test_snow_helpers_numpy", os.path.join(HERE, "test_snow.py"))
assert _spec is not None and _spec.loader is not None
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)

FRAMES = range(1, 11)


def _walk(envfx, refill=0.0):
    """Two walkers of different sizes crossing the snow (one's depth set by hand) over frames 1 .. 10, the trails
    added at frame 1: (scene, snow)."""
    scene, snow, actors = _helpers.snow_scene(envfx)
    a = _helpers.sphere_object("A", 0.5, actors)
    b = _helpers.sphere_object("B", 0.35, actors)
    api.envfx(b).snow.depth = 0.12
    _helpers.animate(a, [(1, (-3, -1, 0.5)), (10, (2.5, 0.5, 0.45))])
    _helpers.animate(b, [(1, (0, 3, 0.38)), (10, (0.3, -3, 0.3))])
    api.linear(a)
    api.linear(b)
    api.envfx(scene).snow.refill_rate = refill
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    return scene, snow


def _offset(envfx, snow, depsgraph=None):
    return _helpers.evaluated_offset(envfx, snow, depsgraph)[1]


def _simulated(envfx, scene, snow, frames=FRAMES, depsgraph=None):
    """The simulation zone's shown offsets at each of ``frames``, played in order."""
    assert api.envfx(scene).snow.trails_engine == "SIMULATION"
    got = {}
    for f in frames:
        scene.frame_set(f)
        got[f] = _offset(envfx, snow, depsgraph() if depsgraph else None)
    return got


def _trail_attribute(envfx, snow):
    buf = np.empty(len(snow.data.vertices), np.float32)
    snow.data.attributes[envfx.shader_nodes.snow.TRAIL_ATTRIBUTE].data.foreach_get("value", buf)
    return buf


@pytest.mark.parametrize("refill", [0.0, 0.3])
def test_numpy_trails_equal_the_simulation_over_a_walk_and_scrubbing_back(envfx, refill):
    scene, snow = _walk(envfx, refill)
    expected = _simulated(envfx, scene, snow)
    assert expected[10].min() < -0.2 and expected[10].max() > 0.03  # trails and rims
    scene.frame_set(1)
    api.envfx(scene).snow.trails_engine = "NUMPY"
    for f in FRAMES:
        scene.frame_set(f)
        got = _offset(envfx, snow)
        np.testing.assert_allclose(got, expected[f], atol=1e-4, err_msg=f"frame {f}")
        np.testing.assert_allclose(got, _trail_attribute(envfx, snow), atol=1e-6)  # what the handler wrote
    for f in (4, 9, 2, 10, 6, 7, 8):  # scrubbing back and forth: checkpoints and replays
        scene.frame_set(f)
        np.testing.assert_allclose(_offset(envfx, snow), expected[f], atol=1e-4, err_msg=f"back to frame {f}")
    api.envfx(scene).snow.trails_engine = "SIMULATION"  # the simulation's display again (its zone not stepped since)
    scene.frame_set(1)
    np.testing.assert_allclose(_offset(envfx, snow), expected[1], atol=1e-4)


def test_numpy_trails_are_recomputed_in_a_reopened_file_and_out_of_order(envfx, tmp_path):
    scene, snow = _walk(envfx)
    expected = _simulated(envfx, scene, snow)
    api.envfx(scene).snow.trails_engine = "NUMPY"
    for f in FRAMES:
        scene.frame_set(f)
    scene.frame_set(3)
    path, name = str(tmp_path / "numpy_trails.blend"), snow.name
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    scene, snow = api.scene(), bpy.data.objects[name]
    assert api.envfx(scene).snow.trails_engine == "NUMPY"
    np.testing.assert_allclose(_offset(envfx, snow), expected[3], atol=1e-4)  # as saved
    for f in (8, 5, 10):  # never played in this session: from the saved track, as playing through gave
        scene.frame_set(f)
        np.testing.assert_allclose(_offset(envfx, snow), expected[f], atol=1e-4, err_msg=f"frame {f}")
    # a change of the actors' path: the frames after it are another history (played again, not the saved ones)
    actor = bpy.data.objects["A"]
    scene.frame_set(5)
    actor.animation_data_clear()
    actor.location = (3.0, 3.0, 0.5)
    scene.frame_set(6)
    scene.frame_set(7)
    got = _offset(envfx, snow)
    rest = envfx.bridge.get_positions(snow.data)
    near_new = np.hypot(rest[:, 0] - 3.0, rest[:, 1] - 3.0) < 0.15
    assert got[near_new].min() < -0.1 and expected[7][near_new].min() > -1e-6


def _second_level(snow: bpy.types.Object, walker: str) -> tuple[bpy.types.Scene, bpy.types.Object]:
    """A scene "Level 2" with a copy of ``snow`` ("Snow B") and its own actor collection holding one walker named
    ``walker``, 1.5 m to the side: (the scene, its snow)."""
    level = bpy.data.scenes.new("Level 2")
    snow_b = bpy.data.objects.new("Snow B", api.mesh(snow).copy())
    snow_b["envfx_snow"] = snow["envfx_snow"]
    level.collection.objects.link(snow_b)
    actors_b = bpy.data.collections.new("Actors B")
    level.collection.children.link(actors_b)
    _helpers._walker(walker, 1.5, actors_b)
    api.envfx(level).snow.actors = actors_b
    return level, snow_b

def test_numpy_trails_of_two_scenes_each_their_own(envfx, scene_depsgraph):
    scene, snow, actors = _helpers.snow_scene(envfx)
    _helpers._walker("A", -1.5, actors)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    level, snow_b = _second_level(snow, "B")
    api.envfx(level).snow.thickness = api.envfx(scene).snow.thickness
    level.frame_set(1)
    envfx.operators.snow.add_trails(level, [snow_b])
    scene_depsgraph(level)
    expected, expected_b = {}, {}
    for f in range(1, 9):
        scene.frame_set(f)
        level.frame_set(f)
        expected[f] = _offset(envfx, snow, scene_depsgraph(scene))
        expected_b[f] = _offset(envfx, snow_b, scene_depsgraph(level))
    for each in (scene, level):
        each.frame_set(1)
        api.envfx(each).snow.trails_engine = "NUMPY"
    for f in range(1, 9):  # stepped alternately, each its own state
        scene.frame_set(f)
        level.frame_set(f)
        np.testing.assert_allclose(_offset(envfx, snow, scene_depsgraph(scene)), expected[f], atol=1e-4)
        np.testing.assert_allclose(_offset(envfx, snow_b, scene_depsgraph(level)), expected_b[f], atol=1e-4)
    level.frame_set(3)  # one scene scrubbed back: the other's trails stay
    np.testing.assert_allclose(_offset(envfx, snow_b, scene_depsgraph(level)), expected_b[3], atol=1e-4)
    np.testing.assert_allclose(_offset(envfx, snow, scene_depsgraph(scene)), expected[8], atol=1e-4)
    assert expected[8].min() < -0.1 and expected_b[8].min() < -0.1
    assert not np.allclose(expected[8], expected_b[8], atol=1e-3)


def test_numpy_trails_fade_with_the_camera_as_the_simulation(envfx):
    scene, snow = _walk(envfx)
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    cam.location = (-3.0, 0.0, 2.0)
    scene.camera = cam
    s = api.envfx(scene).snow
    s.camera_fade_start, s.camera_fade_end = 3.0, 5.0
    expected = _simulated(envfx, scene, snow, range(1, 7))
    rest = envfx.bridge.get_positions(snow.data).astype(np.float64)
    assert (np.linalg.norm(rest - cam.location, axis=1) > 5.0).sum() > 300  # part of the snow lies flat
    scene.frame_set(1)
    s.trails_engine = "NUMPY"
    for f in range(1, 7):
        scene.frame_set(f)
        np.testing.assert_allclose(_offset(envfx, snow), expected[f], atol=1e-4, err_msg=f"frame {f}")


@pytest.mark.parametrize("setting", ["puffs", "occluders", "both"])
def test_numpy_trails_refuse_puffs_and_occluders(envfx, setting):
    scene, snow, actors = _helpers.snow_scene(envfx)
    _helpers._walker("A", -1.5, actors)
    s = api.envfx(scene).snow
    s.trails_engine = "NUMPY"
    if setting in ("puffs", "both"):
        s.puffs = True
    if setting in ("occluders", "both"):
        s.occluders = bpy.data.collections.new("Occ")
    scene.frame_set(1)
    with pytest.raises(envfx.operators.snow.SnowInputError, match="Numpy trails engine has no") as info:
        envfx.operators.snow.add_trails(scene, [snow])
    assert "Trails Engine to Simulation Zone" in str(info.value)
    assert not envfx.operators.snow.trails_modifiers(snow)
    with pytest.raises(RuntimeError, match="Numpy trails engine has no"):  # the operator's error report
        api.ops.snow_trails_add()
    assert not envfx.operators.snow.trails_modifiers(snow)
    s.trails_engine = "SIMULATION"
    assert api.ops.snow_trails_add() == {"FINISHED"}


def test_a_render_of_a_reopened_file_shows_the_numpy_trails_of_playing_through(envfx, tmp_path, load_helper, capfd):
    """A render of one frame of a freshly opened file (as ``blender -b file -f 8``: no frame played in the
    session) shows the trails playing through gave: the render's frame handler recomputes them from the saved
    track, and no warning is printed; a range the track does not cover warns with what to do."""
    render = load_helper("snow_render_helpers", "tests", "blender", "test_snow_render.py")
    scene, snow = _walk(envfx)
    # the probe's camera (50 m above) fades nothing
    api.envfx(scene).snow.camera_fade_start, api.envfx(scene).snow.camera_fade_end = 500.0, 600.0
    expected = _simulated(envfx, scene, snow)
    api.envfx(scene).snow.trails_engine = "NUMPY"
    for f in FRAMES:
        scene.frame_set(f)
    scene.frame_set(2)
    path, name = str(tmp_path / "numpy_render.blend"), snow.name
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = api.scene()
    scene.frame_current = 8  # no frame change in the session: the render evaluates frame 8 itself
    scene.frame_start, scene.frame_end = 1, 10
    capfd.readouterr()
    bpy.utils.register_class(render.ProbeEngine)
    try:
        seen = render.render_probe(scene, name)
    finally:
        render.api.set_engine(scene, "CYCLES")
        bpy.utils.unregister_class(render.ProbeEngine)
    obj = bpy.data.objects[name]
    rest = envfx.bridge.get_positions(obj.data).astype(np.float64) @ np.array(obj.matrix_world)[:3, :3].T
    got = seen[:, 2] - rest[:, 2] - np.array(obj.matrix_world)[2, 3]
    np.testing.assert_allclose(got, expected[8], atol=1e-4)
    assert np.abs(got - expected[2]).max() > 0.1  # not the frame the file was saved on
    assert "EnvFX warning" not in capfd.readouterr().err
    scene.frame_end = 12  # frames 11, 12 never played
    assert envfx.operators.snow.numpy_trails.untracked_frames(scene) == [11, 12]
    envfx.handlers.on_render_init_trails(scene)
    err = capfd.readouterr().err
    assert "no actors' track for 2 frame(s)" in err and "snow_trails_simulate" in err


def test_after_an_undo_the_numpy_trails_are_written_again(envfx):
    """An undo brings the snow mesh back with another step's snow_trail (here: zeros written by hand, as an undo
    step restores); the undo handler writes the state of the scene's frame again."""
    scene, snow = _walk(envfx)
    api.envfx(scene).snow.trails_engine = "NUMPY"
    for f in range(1, 7):
        scene.frame_set(f)
    shown = _trail_attribute(envfx, snow)
    assert shown.min() < -0.1
    snow.data.attributes[envfx.shader_nodes.snow.TRAIL_ATTRIBUTE].data.foreach_set(
        "value", np.zeros(len(snow.data.vertices), np.float32))
    envfx.operators.snow.numpy_trails.show(scene)
    assert _trail_attribute(envfx, snow).min() == 0.0  # nothing changed as far as the handler knows
    envfx.handlers.on_snow_numpy_undo(scene)
    np.testing.assert_array_equal(_trail_attribute(envfx, snow), shown)


def _modifier_drivers(snow):
    anim = snow.animation_data
    return [fc for fc in anim.drivers if fc.data_path.startswith("modifiers[")] if anim is not None else []


def _frame_nodes(tree):
    """The nodes of ``tree`` that make a group depend on the frame (Blender evaluates its modifiers at every frame
    change then)."""
    return [n for n in tree.nodes if n.bl_idname in ("GeometryNodeSimulationOutput", "GeometryNodeInputSceneTime")]


def test_the_numpy_engine_group_follows_no_frame_and_switching_back_restores_the_simulation(envfx):
    """With the Numpy engine the scene's trails group is that engine's display only: no simulation zone or scene
    time, its modifiers' actor inputs not driven (the handler reads the actors). Switching back gives the
    simulation zone and the drivers again, and its trails are those of a fresh simulation."""
    scene, snow = _walk(envfx)
    snow_nodes = envfx.shader_nodes.snow
    tree = snow_nodes.group_for(scene)
    assert _frame_nodes(tree) and len(_modifier_drivers(snow)) == 6 and not snow_nodes.is_numpy_build(tree)
    expected = _simulated(envfx, scene, snow)
    for _ in range(2):  # back and forth twice
        scene.frame_set(1)
        api.envfx(scene).snow.trails_engine = "NUMPY"
        assert snow_nodes.group_for(scene) == tree and snow_nodes.is_numpy_build(tree)
        assert not _frame_nodes(tree) and not _modifier_drivers(snow)
        assert [m.node_group for m in envfx.operators.snow.trails_modifiers(snow)] == [tree]
        for f in range(1, 7):  # (in order: a frame the track skips is one step, as a simulation steps)
            scene.frame_set(f)
            np.testing.assert_allclose(_offset(envfx, snow), expected[f], atol=1e-4, err_msg=f"numpy frame {f}")
        scene.frame_set(1)
        api.envfx(scene).snow.trails_engine = "SIMULATION"
        assert snow_nodes.group_for(scene) == tree and not snow_nodes.is_numpy_build(tree)
        assert _frame_nodes(tree) and len(_modifier_drivers(snow)) == 6
        assert _simulated(envfx, scene, snow, range(1, 7))[6] == pytest.approx(expected[6], abs=1e-4)
    # an actor added while the Numpy engine runs: still nothing driven
    scene.frame_set(1)
    api.envfx(scene).snow.trails_engine = "NUMPY"
    _helpers._walker("C", 1.0, api.envfx(scene).snow.actors)
    scene.frame_set(2)
    assert len(tree[snow_nodes.SPECS_KEY]["names"]) == 3 and not _modifier_drivers(snow)


# Run in a process of its own: a dependency graph takes Blender's debug flags when it is made, so the flag that
# prints each evaluation must be on before the scene is evaluated (this test process's scenes were). Blender's C
# code prints to the process's standard output (file descriptor 1), read back here.
_COUNT_SCRIPT = """
import ctypes, json, os, sys, tempfile
root, engine, out_path = sys.argv[1:4]
sys.path[:0] = [root, os.path.join(root, "benchmarks")]
import bpy
import bench_snow
from tests.blender import conftest
envfx = conftest.enable_addon()
bpy.app.debug_depsgraph_eval = True
scene, mesh, snow, ref = bench_snow.shot_scene(bpy, 40, 3, 10)  # (a fresh file: graphs made from now on)
snow["envfx_snow"] = 0
scene.envfx.snow.trails_engine = engine
envfx.operators.snow.add_trails(scene, [snow])
libc = ctypes.CDLL(None)
counts = []
for f in range(1, 7):
    with tempfile.TemporaryFile(mode="w+") as out:
        libc.fflush(None)
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            scene.frame_set(f)
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        counts.append(out.read().count("BKE_object_handle_data_update on OB" + snow.name + " "))
trail = [v.value for v in mesh.attributes["snow_trail"].data] if "snow_trail" in mesh.attributes else []
with open(out_path, "w") as fh:
    json.dump({"counts": counts, "deepest": min(trail, default=0.0)}, fh)
"""


@pytest.mark.parametrize("engine", ["SIMULATION", "NUMPY"])
def test_a_frame_change_evaluates_the_snow_once(engine, tmp_path):
    """A frame change evaluates the snow once with either engine: the Numpy engine's after its frame handler
    wrote the trail (its group follows no frame, its inputs are not driven), the simulation zone's by the frame
    change itself."""
    import json
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(HERE))
    script, out = tmp_path / "count.py", tmp_path / "count.json"
    script.write_text(_COUNT_SCRIPT)
    run = subprocess.run([sys.executable, str(script), root, engine, str(out)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": ""})
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["counts"][1:] == [1] * 5, got
    if engine == "NUMPY":
        assert got["deepest"] < -0.05  # the walkers' trails were written


def test_the_numpy_states_of_deleted_scenes_and_snow_go(envfx):
    """The states of a deleted scene, and of deleted snow, are dropped at the next update."""
    scene, snow = _walk(envfx)
    numpy_trails = envfx.operators.snow.numpy_trails
    level, snow_b = _second_level(snow, "W")
    for each in (scene, level):
        each.frame_set(1)
        api.envfx(each).snow.trails_engine = "NUMPY"
    envfx.operators.snow.add_trails(level, [snow_b])
    for f in (1, 2, 3):
        scene.frame_set(f)
        level.frame_set(f)
    assert numpy_trails.held() == sorted([(scene.name, snow.name), ("Level 2", "Snow B")])
    bpy.data.scenes.remove(level)
    scene.frame_set(4)
    assert numpy_trails.held() == [(scene.name, snow.name)] and "Level 2" not in numpy_trails._tracks
    bpy.data.objects.remove(snow)
    scene.frame_set(5)
    assert numpy_trails.held() == []
