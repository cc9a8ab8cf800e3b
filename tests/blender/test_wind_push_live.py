"""Grass that actors push with no bake (#23 part 4, live): Push Grass without a baked buffer steps the
interaction buffer from the snow actors' animation frame by frame (``operators.snow.live_push``) into the image
"EnvFX Live Buffer", which the push group reads as it reads a baked frame. The live buffer equals the bake's frame,
the grass equals its numpy twin, blades are pushed as the walker passes and sway back, scrubbing back and forth,
a reopened file, a render in a fresh process and undo give the same, bad input changes nothing and says what to do,
and switching push off leaves the scene as it was."""

import importlib
import json
import os
import subprocess
import sys

import bpy
import numpy as np
import pytest

from tests.blender import api
from tests.blender.test_wind_push import _field, _read, _rest

WALK = ((1, (-4.0, -0.3, 0.0)), (25, (4.0, 0.3, 0.0)))  # the walker's bottom point, frames 1 to 25
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def live(envfx):
    return importlib.import_module(envfx.__name__ + ".operators.snow.live_push")


def _walker_scene(resolution=96):
    """Frames 1-40, an empty (display size 0.6: its snow radius) walking WALK in the collection "Walkers", which
    is the scene's snow actors; the buffer's resolution ``resolution``."""
    scene = api.scene()
    scene.frame_start, scene.frame_end = 1, 40
    walkers = bpy.data.collections.new("Walkers")
    scene.collection.children.link(walkers)
    walker = bpy.data.objects.new("Walker", None)
    walker.empty_display_size = 0.6
    walkers.objects.link(walker)
    for frame, loc in WALK:
        walker.location = loc
        walker.keyframe_insert("location", frame=frame)
    for fc in _fcurves(walker):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    s = api.envfx(scene).snow
    s.actors = walkers
    s.buffer_resolution = resolution
    s.frame_start, s.frame_end = 1, 40
    scene.frame_set(1)
    return scene, walker


def _fcurves(obj):
    action = obj.animation_data.action
    if not api.BLENDER_5:
        return list(action.fcurves)
    return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
            for fc in bag.fcurves]


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


def _twin(mods, live, obj, frame):
    scene = api.scene()
    mesh = api.mesh(obj)
    normals = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertex_normals.foreach_get("vector", normals)
    rest = _rest(mods, obj)
    cam = mods.bridge.matrix_to_numpy(scene.camera.matrix_world) if scene.camera else None
    return rest + mods.core.wind_offsets(
        rest, _read(mesh, "EnvFX_Height", 1), _read(mesh, "EnvFX_Wind", 4), normals.reshape(-1, 3),
        mods.bridge.matrix_to_numpy(obj.matrix_world), frame, mods.nodes.params_from_scene(scene),
        mods.nodes.asset_params(obj), camera_matrix=cam, push=live.push_params(scene, frame))


def _evaluated(mods, obj, frame):
    api.scene().frame_set(frame)
    return mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())


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
        worst_buf = max(worst_buf, float(np.abs(_image_pixels(image) - want_img).max()))
        assert live.push_params(scene, frame).origin == pytest.approx(origin)
        worst_grass = max(worst_grass, float(np.abs(got - _twin(mods, live, obj, frame)).max()))
    assert worst_buf <= 1e-5, worst_buf
    assert worst_grass < 1e-4, worst_grass
    assert np.abs(baked[13][0][..., 3]).max() > 0.5  # the walker does push the grass down at frame 13
