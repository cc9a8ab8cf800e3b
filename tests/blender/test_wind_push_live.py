"""Grass that actors push with no bake (#23 part 4, live): Push Grass without a baked buffer steps the
interaction buffer from the snow actors' animation frame by frame (``operators.snow.live_push``) into the image
"EnvFX Live Buffer", which the push group reads as it reads a baked frame. The live buffer equals the bake's frame,
the grass equals its numpy twin, blades are pushed as the walker passes and sway back, scrubbing back and forth,
a reopened file, a render in a fresh process and undo give the same, bad input changes nothing and says what to do,
and switching push off leaves the scene as it was."""

import importlib
import os
import subprocess
import sys

import bpy
import numpy as np
import pytest

from tests.blender import api
from tests.blender.test_wind_push import (_evaluated, _field, _rest, _twin, assert_pushed_as_twin,
                                          real_grass_in_wind)

WALK = ((1, (-4.0, -0.3, 0.0)), (25, (4.0, 0.3, 0.0)))  # the walker's bottom point, frames 1 to 25
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def live(envfx):
    return importlib.import_module(envfx.__name__ + ".operators.snow.live_push")


def _walker_scene(resolution=96, walk=WALK):
    """Frames 1-40, an empty (display size 0.6: its snow radius) walking ``walk`` ((frame, bottom point) keys) in
    the collection "Walkers", which is the scene's snow actors; the buffer's resolution ``resolution``."""
    scene = api.scene()
    scene.frame_start, scene.frame_end = 1, 40
    walkers = bpy.data.collections.new("Walkers")
    scene.collection.children.link(walkers)
    walker = bpy.data.objects.new("Walker", None)
    walker.empty_display_size = 0.6
    walkers.objects.link(walker)
    for frame, loc in walk:
        walker.location = loc
        walker.keyframe_insert("location", frame=frame)
    for fc in api.fcurves(walker):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    s = api.envfx(scene).snow
    s.actors = walkers
    s.buffer_resolution = resolution
    s.frame_start, s.frame_end = 1, 40
    scene.frame_set(1)
    return scene, walker


def _pushed_field(mods, scene, blades=300, quads=1):
    api.envfx(scene).wind.strength = 0.7
    obj = _field(blades=blades, quads=quads)
    mods.ops.add_wind(scene, [obj])
    return obj


def _image_pixels(image):
    w, h = image.size
    buf = np.empty(w * h * 4, np.float32)
    image.pixels.foreach_get(buf)
    return buf.reshape(h, w, 4)


def _shown(mods, buffer):
    """What the live image shows of a buffer: its push field (core.wind.push_field), one texel wider and taller."""
    return mods.core.push_field(buffer)


def _baked_frames(envfx, scene, folder):
    """The buffer bake of the same scene (Snow > Bake Interaction Buffer's function): frame -> (image, origin)."""
    snow_ops = importlib.import_module(envfx.__name__ + ".operators.snow")
    core_snow = importlib.import_module(envfx.__name__ + ".core.snow")
    api.envfx(scene).snow.output_dir = str(folder)
    job = snow_ops.bake_job(scene)
    while True:
        try:
            next(job)
        except StopIteration as stop:
            result = stop.value
            break
    meta = core_snow.read_buffer_metadata(result.metadata_path)
    return {f["frame"]: (core_snow.read_exr(os.path.join(str(folder), f["file"])), tuple(f["origin"]))
            for f in meta["frames"]}


def test_live_buffer_equals_the_bake_and_the_grass_its_twin(mods, envfx, live, tmp_path):
    scene, _walker = _walker_scene()
    obj = _pushed_field(mods, scene, quads=3)
    text = mods.ops.grass_push(scene)
    assert "pushed live" in text and "Walkers" in text
    image = api.envfx(scene).wind.push_buffer
    assert image is not None and image.name == live.LIVE_IMAGE
    baked = _baked_frames(envfx, scene, tmp_path / "bake")
    worst_buf = worst_grass = 0.0
    for frame in (1, 9, 13, 14, 30, 12, 40):
        got = _evaluated(mods, obj, frame)
        want_img, origin = baked[frame]
        worst_buf = max(worst_buf, float(np.abs(_image_pixels(image) - _shown(mods, want_img)).max()))
        assert live.push_params(scene, frame).origin == pytest.approx(origin)
        worst_grass = max(worst_grass, float(np.abs(got - _twin(mods, obj, frame, live.push_params)).max()))
    assert worst_buf <= 1e-5, worst_buf
    assert worst_grass < 1e-4, worst_grass
    assert np.abs(baked[13][0][..., 3]).max() > 0.5  # the walker does push the grass down at frame 13


def test_the_live_image_holds_the_push_field_and_one_of_an_earlier_envfx_becomes_one(mods, live):
    """The grass reads the live image as a push field (one sample); a live image an EnvFX before it left in a file
    (the buffer itself: as many texels as the buffer, not marked) is written as the field at the next frame, and
    the grass reads it so, equal to its twin."""
    scene, _walker = _walker_scene(resolution=32)
    obj = _pushed_field(mods, scene, quads=3)
    mods.ops.grass_push(scene)
    image = api.envfx(scene).wind.push_buffer
    tree = mods.nodes.group_for(scene)
    field = api.socket(tree.nodes["Push Field"].outputs[0])
    assert image.get(mods.nodes.FIELD_KEY) and field.default_value == 1.0 and tuple(image.size) == (33, 33)
    del image[mods.nodes.FIELD_KEY]  # as an earlier EnvFX left it
    image.scale(32, 32)
    field.default_value = 0.0
    got = _evaluated(mods, obj, 13)
    assert image.get(mods.nodes.FIELD_KEY) and field.default_value == 1.0 and tuple(image.size) == (33, 33)
    assert np.abs(got - _twin(mods, obj, 13, live.push_params)).max() < 1e-4
    assert np.abs(got - _rest(mods, obj)).max() > 1e-3


def test_a_real_grass_clump_is_pushed_live_and_equals_its_twin(mods, live, corpus_asset):
    """The corpus grass clump (a third-party OBJ: imported Y up with an unapplied centimetre scale, away from the
    origin) baked as Grass, in the wind, pushed live (no bake) by a walker crossing it: the grass reads the live
    push field, each of its objects equals its twin to 1e-4, and the walker moves the blades."""
    objects, start, end, height = real_grass_in_wind(mods, corpus_asset)
    scene, _walker = _walker_scene(resolution=64, walk=((1, tuple(start)), (25, tuple(end))))
    assert "pushed live" in mods.ops.grass_push(scene)
    assert api.socket(mods.nodes.group_for(scene).nodes["Push Field"].outputs[0]).default_value == 1.0
    assert_pushed_as_twin(mods, objects, height, live.push_params)


def test_blades_near_the_walker_are_pushed_live_and_sway_back(mods, live):
    """Still air: the grass moves only by the push. At frame 13 the walker is at about (0, 0): blades within its
    radius and off its path lean away from the path with lower tips, far blades do not move; by frame 40 the near
    ones have stood up again (A recovers)."""
    scene, _walker = _walker_scene()
    api.envfx(scene).wind.grass_tilt = 0.0
    obj = _pushed_field(mods, scene, blades=900)
    api.envfx(scene).wind.strength = 0.0
    mods.ops.grass_push(scene)
    m = np.array(obj.matrix_world)
    world = lambda p: p @ m[:3, :3].T + m[:3, 3]  # noqa: E731
    rest_w = world(_rest(mods, obj)).reshape(-1, 4, 3)
    roots, tips_rest = rest_w[:, :2].mean(1), rest_w[:, 2:].mean(1)
    path_dir = np.array([8.0, 0.6]) / np.hypot(8.0, 0.6)
    normal = np.array([-path_dir[1], path_dir[0]])
    side = roots[:, :2] @ normal
    along = roots[:, :2] @ path_dir
    near = (np.linalg.norm(roots[:, :2], axis=1) < 0.55) & (np.abs(side) > 0.15) & (along < 0.1)
    far = np.linalg.norm(roots[:, :2] - np.array([0.0, 2.5]), axis=1) < 0.3

    def tips(frame):
        return world(_evaluated(mods, obj, frame)).reshape(-1, 4, 3)[:, 2:].mean(1)

    assert near.sum() >= 5 and far.sum() >= 1, (near.sum(), far.sum())
    before = tips(3) - tips_rest  # the walker is still far away
    assert np.abs(before[near]).max() < 1e-6
    moved = tips(13) - tips_rest
    away = np.sign(side[near]) * (moved[near, :2] @ normal)
    assert (away > 0.05).all(), away
    assert (moved[near, 2] < -0.05).all(), moved[near, 2]
    assert np.abs(moved[far]).max() < 1e-6
    late = tips(40) - tips_rest
    assert (late[near, 2] > moved[near, 2] + 0.02).all()
    # the wobble alone (push strength 0: only G leans them): away at 13, then back past upright
    api.envfx(scene).wind.push_strength = 0.0
    lean = [np.median(np.sign(side[near]) * ((tips(f) - tips_rest)[near, :2] @ normal)) for f in range(13, 40)]
    assert lean[0] > 0.01 and min(lean[1:]) < -0.005, lean


def test_scrubbing_back_and_forth_shows_each_frame_as_the_bake(mods, envfx, live, tmp_path):
    scene, _walker = _walker_scene(resolution=64)
    obj = _pushed_field(mods, scene, blades=60)
    mods.ops.grass_push(scene)
    image = api.envfx(scene).wind.push_buffer
    baked = _baked_frames(envfx, scene, tmp_path / "bake")
    held = live._live[scene.name]
    for frame in list(range(1, 21)) + [8, 9, 2, 33, 17, 16, 40, 41, 0, 13]:
        got = _evaluated(mods, obj, frame)
        want = baked[min(max(frame, 1), 40)][0] if frame >= 1 else np.zeros_like(baked[1][0])
        assert np.abs(_image_pixels(image) - _shown(mods, want)).max() <= 1e-5, frame
        assert np.abs(got - _twin(mods, obj, frame, live.push_params)).max() < 1e-4, frame
    assert live._live[scene.name] is held  # scrubbing replays from checkpoints: the paths were not read again
    assert held.buffer.steps < 40 * 4


def test_a_reopened_file_shows_the_push_of_its_frame(mods, envfx, live, tmp_path, save_and_reopen):
    scene, _walker = _walker_scene(resolution=64)
    obj = _pushed_field(mods, scene, blades=60)
    mods.ops.grass_push(scene)
    baked = _baked_frames(envfx, scene, tmp_path / "bake")
    api.scene().frame_set(14)
    save_and_reopen()
    scene = api.scene()
    obj = bpy.data.objects["Field"]
    image = api.envfx(scene).wind.push_buffer
    assert image is not None and live.is_live_image(image)
    # the frame the file was saved at, shown at once (load_post), then any other
    assert np.abs(_image_pixels(image) - _shown(mods, baked[14][0])).max() <= 1e-5
    for frame in (14, 6, 20):
        got = _evaluated(mods, obj, frame)
        assert np.abs(_image_pixels(image) - _shown(mods, baked[frame][0])).max() <= 1e-5, frame
        assert np.abs(got - _twin(mods, obj, frame, live.push_params)).max() < 1e-4, frame


RENDER_SCRIPT = """
import sys, importlib, os, tempfile
import bpy, addon_utils, numpy as np
sys.path.insert(0, {tests!r})
import api
repo = tempfile.mkdtemp(prefix="envfx-live-")
os.symlink({root!r}, os.path.join(repo, "envfx"))
api.preferences().extensions.repos.new(name="EnvFX Live", module="envfx_live", custom_directory=repo, source="USER")
addon_utils.enable("bl_ext.envfx_live.envfx", default_set=True)
bpy.ops.wm.open_mainfile(filepath={blend!r})
out = {{}}

def grab(scene, *_args):
    image = bpy.data.images["EnvFX Live Buffer"]
    w, h = image.size
    px = np.empty(w * h * 4, np.float32)
    image.pixels.foreach_get(px)
    out["pixels"] = px.reshape(h, w, 4)
    out["frame"] = scene.frame_current

bpy.app.handlers.render_post.append(grab)
scene = bpy.context.scene
scene.render.engine = "BLENDER_WORKBENCH"
scene.render.resolution_x = scene.render.resolution_y = 16
scene.render.filepath = {frames!r}
scene.frame_start = scene.frame_end = {frame}
bpy.ops.render.render(animation=True)
np.save({npy!r}, out["pixels"])
print("RENDERED", out["frame"])
"""


def test_a_render_of_any_frame_in_a_fresh_process_shows_that_frame(mods, envfx, live, tmp_path):
    """The file saved at frame 1; a fresh process renders frame 13 (render animation of that one frame): the buffer
    it renders with is the bake's frame 13, recomputed from the walker's animation."""
    scene, _walker = _walker_scene(resolution=48)
    _pushed_field(mods, scene, blades=20)
    mods.ops.grass_push(scene)
    baked = _baked_frames(envfx, scene, tmp_path / "bake")
    scene.frame_set(1)
    blend = str(tmp_path / "walk.blend")
    bpy.ops.wm.save_as_mainfile(filepath=blend)
    script = tmp_path / "render.py"
    npy = str(tmp_path / "pixels.npy")
    script.write_text(RENDER_SCRIPT.format(tests=os.path.join(ROOT, "tests", "blender"), root=ROOT, blend=blend,
                                           frames=str(tmp_path / "frame_"), frame=13, npy=npy))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert "RENDERED 13" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    got = np.load(npy)
    assert np.abs(got - _shown(mods, baked[13][0])).max() <= 1e-5
    assert np.abs(baked[13][0][..., 3]).max() > 0.5


def test_an_edited_walk_is_read_again_and_undo_brings_the_old_one_back(mods, live):
    scene, walker = _walker_scene(resolution=48)
    _pushed_field(mods, scene, blades=20)
    mods.ops.grass_push(scene)
    image = api.envfx(scene).wind.push_buffer
    scene.frame_set(13)
    first = _image_pixels(image).copy()
    bpy.ops.ed.undo_push(message="pushed")
    for fc in api.fcurves(walker):  # the walk's end moved 1.5 m along y
        if fc.data_path == "location" and fc.array_index == 1:
            for kp in fc.keyframe_points:
                if kp.co.x > 20:
                    kp.co.y += 1.5
                    kp.handle_left.y += 1.5
                    kp.handle_right.y += 1.5
        fc.update()
    api.of(bpy.types.Action, api.of(bpy.types.AnimData, walker.animation_data).action).update_tag()
    bpy.ops.ed.undo_push(message="walk moved")
    scene.frame_set(12)
    scene.frame_set(13)
    moved = _image_pixels(api.envfx(scene).wind.push_buffer)
    assert np.abs(moved - first).max() > 0.5  # read again: the push is where the walker is now
    assert np.allclose(live._live[scene.name].tracks[12, 0, :2], (0.0, 0.75), atol=1e-6)
    bpy.ops.ed.undo()
    scene = api.scene()
    image = api.envfx(scene).wind.push_buffer
    assert image is not None and live.is_live_image(image)
    scene.frame_set(13)
    assert np.abs(_image_pixels(image) - first).max() <= 1e-6


def test_a_changed_snow_setting_is_read_again_at_the_next_frame(mods, envfx, live, tmp_path):
    scene, _walker = _walker_scene(resolution=32)
    _pushed_field(mods, scene, blades=20)
    mods.ops.grass_push(scene)
    scene.frame_set(13)
    image = api.envfx(scene).wind.push_buffer
    assert tuple(image.size) == (33, 33)  # (the push field: one texel more)
    api.envfx(scene).snow.buffer_resolution = 40
    scene.frame_set(14)
    assert tuple(image.size) == (41, 41)
    baked = _baked_frames(envfx, scene, tmp_path / "bake")
    scene.frame_set(14)
    assert np.abs(_image_pixels(image) - _shown(mods, baked[14][0])).max() <= 1e-5


def _snapshot(obj):
    s = api.envfx().wind
    return (s.grass_push, s.push_buffer, sorted(i.name for i in bpy.data.images),
            sorted(t.name for t in bpy.data.node_groups), tuple(m.name for m in obj.modifiers),
            api.scene().frame_current)


@pytest.mark.parametrize("damage, says", [
    ("no collection", "No actor collection"),
    ("empty collection", "has no usable actors"),
    ("nan size", "Buffer Size is nan"),
    ("nan thickness", "Thickness is nan"),
    ("follow without pivot", "needs a pivot"),
])
def test_bad_input_changes_nothing_and_says_what_to_do(mods, live, damage, says):
    scene, walker = _walker_scene(resolution=32)
    obj = _pushed_field(mods, scene, blades=20)
    s = api.envfx(scene)
    if damage == "no collection":
        s.snow.actors = None
    elif damage == "empty collection":
        bpy.data.collections["Walkers"].objects.unlink(walker)
    elif damage == "nan size":
        s.snow.buffer_size = float("nan")
    elif damage == "nan thickness":
        s.snow.thickness = float("nan")
    else:
        s.snow.framing = "FOLLOW"
    scene.frame_set(7)
    before = _snapshot(obj)
    rest = _evaluated(mods, obj, 7)
    with pytest.raises(mods.ops.WindInputError, match=says) as err:
        mods.ops.grass_push(scene)
    assert "No baked buffer" in str(err.value)
    assert _snapshot(obj) == before
    assert np.array_equal(_evaluated(mods, obj, 7), rest)
    with pytest.raises(RuntimeError, match=says):
        api.ops.wind_grass_push()
    assert _snapshot(obj) == before


def test_switching_push_off_leaves_the_scene_as_before(mods, live):
    scene, _walker = _walker_scene(resolution=32)
    obj = _pushed_field(mods, scene, blades=40)
    scene.frame_set(13)
    before = _snapshot(obj)
    rest = _evaluated(mods, obj, 13)
    assert api.ops.wind_grass_push() == {"FINISHED"}
    assert not np.array_equal(_evaluated(mods, obj, 13), rest)  # pushed
    assert api.ops.wind_grass_push(on=False) == {"FINISHED"}
    assert _snapshot(obj) == before
    assert live.live_image(scene) is None and scene.name not in live._live
    assert np.array_equal(_evaluated(mods, obj, 13), rest)
    for frame in (14, 13):  # and the handler writes nothing any more
        assert not live.show(scene)
        scene.frame_set(frame)
    assert _snapshot(obj) == before


def test_the_command_line_pushes_live_without_a_buffer(mods, live, tmp_path):
    scene, _walker = _walker_scene(resolution=32)
    _pushed_field(mods, scene, blades=20)
    path = str(tmp_path / "walk.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert mods.cli.main(["wind", path, "--push-grass"]) == 0
    bpy.ops.wm.open_mainfile(filepath=path)
    s = api.envfx().wind
    assert s.grass_push and live.is_live_image(s.push_buffer)
