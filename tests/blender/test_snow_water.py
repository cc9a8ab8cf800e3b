"""Water Ripples from Bake (#23 part 4, the buffer's fourth channel): a water surface rises and falls by the baked
interaction buffer's B, equal to the buffer's bilinear read (``core.snow.sample_buffer``) at every vertex and frame;
bad input changes nothing and says what to do."""

import importlib
import os

import bpy
import numpy as np
import pytest

from tests.blender import api


def _water(size=6.0, cuts=40):
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=cuts, y_subdivisions=cuts, size=size, location=(0.3, -0.2, 1.0))
    water = api.active()
    water.name = "Water"
    water.rotation_euler = (0.0, 0.0, 0.4)
    api.view_layer().update()
    return water


def _bake(envfx, folder):
    """A wader crossing the pond (frames 1-20), baked for frames 1-40 into ``folder``."""
    snow = importlib.import_module(envfx.__name__ + ".core.snow")
    f = np.arange(1, 41)
    x = -2.5 + 5.0 * np.clip((f - 1) / 19.0, 0.0, 1.0)
    tracks = np.stack([x, 0.2 * x, np.full_like(x, 1.0)], 1)[:, None, :]
    buf = snow.BufferParams(resolution=64, size=8.0, origin=(-4.0, -4.0), ripple_speed=2.0)
    return snow.bake(tracks, [0.5], [0.3], snow.StampParams(fps=24.0), buf, frame_start=1, out_dir=str(folder))


def _z(envfx, obj):
    dg = bpy.context.evaluated_depsgraph_get()
    return envfx.bridge.evaluated_positions(obj, dg)


def test_water_ripples_follow_the_bake_s_b_channel(envfx, tmp_path):
    snow = importlib.import_module(envfx.__name__ + ".core.snow")
    scene = api.scene()
    water = _water()
    result = _bake(envfx, tmp_path)
    api.envfx(scene).snow.output_dir = str(tmp_path)
    for o in scene.objects:
        o.select_set(o == water)
    assert api.ops.snow_water_ripples(scale=2.0) == {"FINISHED"}
    assert [m.name for m in water.modifiers] == ["EnvFX Water Ripples"]
    rest = envfx.bridge.get_positions(water.data).astype(np.float64)
    m = np.array(water.matrix_world)
    world = rest @ m[:3, :3].T + m[:3, 3]
    inv3 = np.linalg.inv(m[:3, :3])
    moved = 0.0
    for frame in (1, 8, 15, 30, 60):
        scene.frame_set(frame)
        got = _z(envfx, water)
        name = os.path.join(str(tmp_path), f"snow_buffer_{min(frame, 40):04d}.exr")
        b = snow.sample_buffer(snow.read_exr(name), (-4.0, -4.0), 8.0 / 64, world[:, :2], 2)
        expect = rest + (2.0 * b)[:, None] * inv3[:, 2][None, :]
        np.testing.assert_allclose(got, expect, atol=1e-4)
        moved = max(moved, float(np.abs(got - rest).max()))
    assert moved > 0.02
    assert result.final[..., 2].min() < -0.01
    # a second call with another scale replaces the scale, never stacks a second modifier
    assert api.ops.snow_water_ripples(scale=0.0) == {"FINISHED"}
    assert [m.name for m in water.modifiers] == ["EnvFX Water Ripples"]
    scene.frame_set(15)
    np.testing.assert_allclose(_z(envfx, water), rest, atol=1e-6)


def test_water_ripples_without_a_bake_change_nothing(envfx, tmp_path):
    scene = api.scene()
    water = _water(cuts=4)
    api.envfx(scene).snow.output_dir = str(tmp_path)
    for o in scene.objects:
        o.select_set(o == water)
    groups, images = len(bpy.data.node_groups), len(bpy.data.images)
    with pytest.raises(RuntimeError, match="No baked buffer in .*: bake the interaction buffer first"):
        api.ops.snow_water_ripples()
    assert water.modifiers[:] == [] and len(bpy.data.node_groups) == groups and len(bpy.data.images) == images
    for o in scene.objects:
        o.select_set(False)
    assert not api.ops.snow_water_ripples.poll()
