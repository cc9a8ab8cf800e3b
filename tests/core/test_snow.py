"""core.snow: stamp profile, trails, interaction buffer bake, EXR output and snow-cover generation."""

import json
import os

import math
import re
import warnings

import numpy as np
import pytest

from core import outputs, snow


def plane_tris(size=10.0, n=10, z=0.0, tilt=0.0, offset=(0.0, 0.0)):
    """A grid of n x n quads (2 triangles each) over [-size/2, size/2]^2, z = z + tilt * x."""
    xs = np.linspace(-size / 2, size / 2, n + 1) + offset[0]
    ys = np.linspace(-size / 2, size / 2, n + 1) + offset[1]
    X, Y = np.meshgrid(xs, ys)
    Z = z + tilt * (X - offset[0])
    P = np.stack([X, Y, Z], -1)
    a, b, c, d = P[:-1, :-1], P[:-1, 1:], P[1:, 1:], P[1:, :-1]
    t1 = np.stack([a, b, c], -2).reshape(-1, 3, 3)
    t2 = np.stack([a, c, d], -2).reshape(-1, 3, 3)
    return np.concatenate([t1, t2])


def box_tris(lo, hi):
    x0, y0, z0 = lo
    x1, y1, z1 = hi
    v = np.array([[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0],
                  [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]], dtype=float)
    quads = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    tris = []
    for a, b, c, d in quads:
        tris += [[v[a], v[b], v[c]], [v[a], v[c], v[d]]]
    return np.array(tris)


# --- stamp ------------------------------------------------------------------------------------------------

def test_stamp_profile_down_under_actor_rim_around_edge():
    u = np.linspace(0, 2, 201)
    down, rim, cover = snow.stamp_profile(u, depth=0.3, rim_height=0.35, rim_width=0.5)
    net = rim - down
    assert net[0] == pytest.approx(-0.3)
    assert np.all(np.diff(net[u <= 0.5]) >= 0)          # rises from the centre
    peak = u[np.argmax(net)]
    assert 1.0 <= peak <= 1.2                          # rim just outside the radius
    assert net.max() == pytest.approx(0.35 * 0.3, rel=0.02)
    assert np.all(net[u >= 1.5] == 0)                  # nothing beyond the reach
    assert np.all(cover[u >= 1] == 0) and cover[0] == 1


def test_straight_fast_trail_has_constant_depth_no_beads():
    params = snow.StampParams(rim_height=0.35, rim_width=0.5, fade_height=0.5)
    frames = 12
    # fast actor: moves 3 radii per frame
    xs = np.linspace(-6, 6, frames)
    tracks = np.stack([xs, np.zeros(frames), np.zeros(frames)], -1)[:, None, :]
    pts = np.stack([np.linspace(-4, 4, 401), np.zeros(401), np.zeros(401)], -1)
    down, rim = snow.simulate_points(pts, tracks, [0.35], [0.2], params)
    depth = rim - down
    assert np.all(np.abs(depth + 0.2) <= 0.05 * 0.2)


def test_vertical_fade_actor_far_above_does_not_stamp():
    params = snow.StampParams(fade_height=0.5)
    pts = np.array([[0.0, 0.0, 0.0]])
    for z, expected in ((0.0, 1.0), (0.25, 0.5), (0.6, 0.0), (5.0, 0.0), (-2.0, 1.0), (-2.25, 0.5), (-9, 0.0)):
        ds, rs, cw, dep = snow.stamp_points(pts, [[0, 0, z]], [[0, 0, z]], [1.0], [0.2], params)
        assert cw[0] == pytest.approx(expected)


def test_refill_rate_refills_and_zero_keeps():
    pts = np.array([[0.0, 0.0, 0.0]])
    track = np.array([[[0, 0, 0]]] + [[[50, 0, 0]]] * 24, dtype=float)
    d0, _ = snow.simulate_points(pts, track, [1.0], [0.2], snow.StampParams(refill_rate=0.0))
    d1, _ = snow.simulate_points(pts, track, [1.0], [0.2], snow.StampParams(refill_rate=0.5))
    assert d0[0] == pytest.approx(0.2)
    assert d1[0] == pytest.approx(0.2 * (1 - 0.5 / 24) ** 23, rel=1e-6)  # frame 1 still passes over it


def test_occluder_holds_snow_down_and_flattens_rim():
    pts = np.array([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    track = np.array([[[20, 0, 0]]], dtype=float)
    d, r = snow.simulate_points(pts, track, [1.0], [0.2], snow.StampParams(), occluded=np.array([True, False]),
                                occluder_depth=0.3)
    assert d.tolist() == [0.3, 0.0]


def _wander(rng, frames, actors, size=8.0):
    steps = rng.normal(0.0, 0.4, (frames, actors, 3)) * [1.0, 1.0, 0.05]
    tracks = rng.uniform(-size / 2, size / 2, (1, actors, 3)) * [1.0, 1.0, 0.0] + np.cumsum(steps, axis=0)
    return tracks


@pytest.mark.parametrize("refill", [0.0, 0.7])
def test_trail_state_steps_seeks_back_and_equals_the_full_simulation(refill):
    rng = np.random.default_rng(3)
    params = snow.StampParams(refill_rate=refill)
    pts = rng.uniform(-6, 6, (3000, 3)) * [1.0, 1.0, 0.02]
    tracks = _wander(rng, 40, 3)
    radius, depth = [0.5, 0.3, 0.8], [0.2, 0.1, 0.25]
    state = snow.TrailState(pts, params, cells=16, checkpoint_every=7)
    for f in range(40):
        before = state.down.copy(), state.rim.copy()
        state.step(f + 1, ["a", "b", "c"], tracks[f], radius, depth)
        if refill == 0.0:  # only the points listed in changed changed
            moved = np.flatnonzero((state.down != before[0]) | (state.rim != before[1]))
            changed = state.changed
            assert changed is not None
            assert np.isin(moved, changed).all() and changed.size < pts.shape[0] // 2
        else:
            assert state.changed is None
        if f in (0, 17, 39):
            d, r = snow.simulate_points(pts, tracks[:f + 1], radius, depth, params)
            np.testing.assert_array_equal(state.down, d)
            np.testing.assert_array_equal(state.rim, r)
    assert (state.down > 0).sum() > 100  # the walk carved
    for back in (23, 8, 1, 36):  # scrubbing back (and forth among stepped frames) is exact
        assert state.seek(back) and state.changed is None
        d, r = snow.simulate_points(pts, tracks[:back], radius, depth, params)
        np.testing.assert_array_equal(state.down, d)
        np.testing.assert_array_equal(state.rim, r)
    assert not state.seek(41)  # never stepped: nothing changes
    assert state.frame == 36
    # stepping on from a frame sought back to replaces the frames recorded after it
    state.seek(10)
    other = tracks[10] + [1.0, 0.0, 0.0]
    state.step(11, ["a", "b", "c"], other, radius, depth)
    d, r = snow.simulate_points(pts, np.concatenate([tracks[:10], other[None]]), radius, depth, params)
    np.testing.assert_array_equal(state.down, d)
    assert not state.seek(12)
    with pytest.raises(snow.SnowError, match="seek back"):
        state.step(5, ["a"], tracks[4][:1], radius[:1], depth[:1])


def test_trail_state_matches_actors_by_key():
    params = snow.StampParams()
    pts = np.stack([np.linspace(-4, 4, 81), np.zeros(81), np.zeros(81)], 1)
    state = snow.TrailState(pts, params, cells=8)
    state.step(1, ["a"], [[-3.0, 0.0, 0.0]], [0.3], [0.2])
    # "b" comes in (starts where it is), "a" moves on: a keeps its path whatever the order
    state.step(2, ["b", "a"], [[3.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [0.3, 0.3], [0.2, 0.2])
    tracks = np.array([[[-3.0, 0, 0], [3.0, 0, 0]], [[0.0, 0, 0], [3.0, 0, 0]]])
    d, r = snow.simulate_points(pts, tracks, [0.3, 0.3], [0.2, 0.2], params)
    np.testing.assert_allclose(state.down, d)
    assert state.down[np.argmin(np.abs(pts[:, 0] + 1.5))] == pytest.approx(0.2)  # the path between -3 and 0


def test_trail_state_an_actor_whose_place_is_not_a_number_is_not_there_at_that_frame():
    """A NaN or infinite place (a broken transform at one frame) stamps nothing then, and the path starts again
    where the actor next is, as if it had left and come back; the other actors carve on (every later frame of
    the Numpy trails engine failed with an index out of bounds)."""
    params = snow.StampParams()
    pts = np.stack([np.linspace(-4, 4, 81), np.zeros(81), np.zeros(81)], 1)
    for bad in ([np.nan, 0.0, 0.0], [np.inf, 0.0, 0.0]):
        state, gone = snow.TrailState(pts, params, cells=8), snow.TrailState(pts, params, cells=8)
        state.step(1, ["a", "b"], [[-3.0, 0.0, 0.0], [3.0, 0.0, 0.0]], [0.3, 0.3], [0.2, 0.2])
        gone.step(1, ["a", "b"], [[-3.0, 0.0, 0.0], [3.0, 0.0, 0.0]], [0.3, 0.3], [0.2, 0.2])
        state.step(2, ["a", "b"], [bad, [2.0, 0.0, 0.0]], [0.3, 0.3], [0.2, 0.2])
        gone.step(2, ["b"], [[2.0, 0.0, 0.0]], [0.3], [0.2])
        state.step(3, ["a", "b"], [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [0.3, 0.3], [0.2, 0.2])
        gone.step(3, ["a", "b"], [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [0.3, 0.3], [0.2, 0.2])
        np.testing.assert_array_equal(state.down, gone.down)
        assert state.down[np.argmin(np.abs(pts[:, 0] - 1.5))] == pytest.approx(0.2)  # b's path
        assert state.down[np.argmin(np.abs(pts[:, 0] + 1.5))] == 0.0  # no streak from a's last place
    state.step(4, ["a"], [[0.0, 0.0, 0.0]], [np.nan], [0.2])  # a size that is not a number
    assert np.isfinite(state.down).all()


def test_actor_size_from_dimensions_or_settings():
    assert snow.actor_size((1.0, 2.0, 3.0)) == (1.0, 0.5)
    assert snow.actor_size((1.0, 2.0, 3.0), radius_setting=0.4, depth_setting=0.1) == (0.4, 0.1)
    assert snow.actor_size((4.0, 4.0, 1.0), snow_thickness=0.3) == (2.0, 0.3)


# --- buffer -----------------------------------------------------------------------------------------------

def walk(frames, start=(-4, 0), end=(4, 0), z=0.0):
    t = np.linspace(0, 1, frames)[:, None]
    xy = np.asarray(start) * (1 - t) + np.asarray(end) * t
    return np.concatenate([xy, np.full((frames, 1), z)], 1)[:, None, :]


def test_bake_matches_point_simulation_at_texel_centres():
    stamp = snow.StampParams()
    buf = snow.BufferParams(resolution=64, size=10.0, origin=(-5.0, -5.0))
    tracks = np.concatenate([walk(20), walk(20, (0, -4), (0, 4))], axis=1)
    result = snow.bake(tracks, [0.6, 0.4], [0.2, 0.15], stamp, buf)
    c = -5.0 + (np.arange(64) + 0.5) * buf.texel
    X, Y = np.meshgrid(c, c)
    pts = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], 1)
    d, r = snow.simulate_points(pts, tracks, [0.6, 0.4], [0.2, 0.15], stamp)
    np.testing.assert_allclose(result.final[..., 0].ravel(), (r - d), atol=1e-5)
    assert result.final[..., 0].min() < -0.19


def test_follow_origin_snapped_and_stable_under_subtexel_motion():
    buf = snow.BufferParams(resolution=32, size=8.0, framing="FOLLOW")
    tracks = walk(15, (-1, 0.3), (1, 0.3))
    texel = buf.texel
    pivot_still = np.tile([[0.1, 0.1, 0.0]], (15, 1))
    rng = np.random.default_rng(1)
    pivot_jitter = pivot_still + np.c_[rng.uniform(0, 0.1 * texel, (15, 2)), np.zeros(15)]
    a = snow.bake(tracks, [0.5], [0.2], snow.StampParams(), buf, pivot_track=pivot_still)
    b = snow.bake(tracks, [0.5], [0.2], snow.StampParams(), buf, pivot_track=pivot_jitter)
    np.testing.assert_array_equal(a.final, b.final)
    moving = np.c_[np.linspace(-3.3, 3.7, 15), np.linspace(0.17, -2.9, 15), np.zeros(15)]
    c = snow.bake(tracks, [0.5], [0.2], snow.StampParams(), buf, pivot_track=moving)
    k = c.origins / texel
    np.testing.assert_allclose(k, np.round(k), atol=1e-9)
    # edge fade: nothing at the border texels
    assert np.all(c.final[0, :, :] == 0) and np.all(c.final[:, 0, :] == 0)


def test_follow_window_keeps_world_content_when_moving():
    buf_area = snow.BufferParams(resolution=64, size=16.0, origin=(-8.0, -8.0))
    buf_follow = snow.BufferParams(resolution=64, size=16.0, framing="FOLLOW", edge_fade=0.0)
    tracks = walk(10, (-2, 0), (2, 0))
    pivot = np.c_[np.linspace(0, 2, 10), np.zeros(10), np.zeros(10)]
    a = snow.bake(tracks, [0.5], [0.2], snow.StampParams(), buf_area)
    b = snow.bake(tracks, [0.5], [0.2], snow.StampParams(), buf_follow, pivot_track=pivot)
    ox, oy = b.origins[-1]
    shift = np.rint((b.origins[-1] - np.array([-8.0, -8.0])) / buf_area.texel).astype(int)
    np.testing.assert_allclose(b.final[:, : 64 - shift[0], 0], a.final[:, shift[0]:, 0], atol=1e-6)


def test_grass_wobble_changes_sign_and_decays_and_ripples_grow():
    buf = snow.BufferParams(resolution=64, size=16.0, origin=(-8.0, -8.0), ripple_damping=0.2)
    stamp = snow.StampParams()
    # actor passes quickly then leaves the area
    frames = 60
    xs = np.r_[np.linspace(-1, 1, 5), np.full(frames - 5, 40.0)]
    tracks = np.c_[xs, np.zeros(frames), np.zeros(frames)][:, None, :]
    c = -8.0 + (np.arange(64) + 0.5) * buf.texel
    Y = np.abs(np.meshgrid(c, c)[1])     # the path runs along y = 0: distance from it
    fronts = []                          # how far from the path the ripples reach (10 % of their peak)
    for n in (10, 20, 30, 45, 60):
        out = snow.bake(tracks[:n], [0.5], [0.2], stamp, buf).final
        b = np.abs(out[..., 2])
        fronts.append(float(Y[b > 0.1 * b.max()].max()))
    series = np.array([snow.bake(tracks[:n], [0.5], [0.2], stamp, buf).final[32, 32, 1] for n in range(6, 40)])
    assert series.max() > 0 and series.min() < 0
    early = np.abs(series[:12]).max()
    late = np.abs(series[-12:]).max()
    assert late < 0.5 * early
    assert all(b > a for a, b in zip(fronts, fronts[1:])), fronts
    # the rings spread at about ripple_speed (1 scene unit per second): 50 frames at 24 fps
    assert 0.6 < (fronts[-1] - fronts[0]) / (50 / 24) < 1.4, fronts


@pytest.mark.parametrize("freq,zeta", [(1.5, 0.25), (1.5, 1.0), (1.5, 3.0), (0.0, 0.5), (4.0, 0.0)])
def test_grass_oscillator_step_is_the_exact_solution(freq, zeta):
    """One step of the grass wobble is exp(A dt), also at critical damping (zeta = 1), where an eigen-decomposition
    of A is degenerate and gave numbers that depend on the numpy build: a series with scaling and squaring is the
    reference."""
    w, dt = 2.0 * np.pi * freq, 1.0 / 24.0
    a = np.array([[0.0, 1.0], [-w * w, -2.0 * zeta * w]]) * dt / 2 ** 10
    ref, term = np.eye(2), np.eye(2)
    for k in range(1, 30):
        term = term @ a / k
        ref = ref + term
    for _ in range(10):
        ref = ref @ ref
    np.testing.assert_allclose(snow.buffer._oscillator_matrix(freq, zeta, dt), ref, atol=1e-12)


@pytest.mark.parametrize("damping", [0.25, 0.6, 1.0, 2.0])
def test_grass_wobble_swings_out_to_one_as_the_write_up_says(damping):
    """The write-up's grass particles wobble between G = 1 and -1: an actor stepping onto the grass and off it
    again (one full nudge) swings it out to about 1, whatever the damping; an actor standing on it keeps nudging it
    (the push-down recovers under it), and G still stays within -1..1."""
    buf = snow.BufferParams(resolution=32, size=8.0, origin=(-4.0, -4.0), grass_damping=damping)
    fps, frames = 240.0, 120  # fine steps: the sampled swing comes close to its peak
    stamp = snow.StampParams(fps=fps)
    step = np.zeros((frames, 1, 3))
    step[1:, 0, 0] = 100.0  # on the grass for one frame, then far away
    series = np.array([snow.bake(step[:n], [0.8], [0.2], stamp, buf).final[16, 16, 1] for n in range(2, frames, 3)])
    assert 0.9 < series.max() <= 1.0 + 1e-6 and series.min() >= -1.0
    standing = np.zeros((frames, 1, 3))
    series = np.array([snow.bake(standing[:n], [0.8], [0.2], stamp, buf).final[16, 16, 1]
                       for n in range(2, frames, 7)])
    assert series.max() <= 1.0 and series.min() >= -1.0


def test_exr_roundtrip_and_files_written_atomically(tmp_path):
    out = tmp_path / "bake"
    buf = snow.BufferParams(resolution=16, size=4.0, origin=(-2.0, -2.0))
    result = snow.bake(walk(5, (-1, 0), (1, 0.5)), [0.4], [0.1], snow.StampParams(), buf, frame_start=10,
                       out_dir=str(out))
    names = sorted(os.listdir(out))
    assert names == ["snow_buffer.json"] + [f"snow_buffer_{f:04d}.exr" for f in range(10, 15)]
    back = snow.read_exr(str(out / "snow_buffer_0014.exr"))
    np.testing.assert_array_equal(back, result.final)
    meta = json.loads((out / "snow_buffer.json").read_text())
    assert meta["texel_size"] == pytest.approx(0.25) and meta["world_size"] == 4.0
    first = meta["frames"][0]
    assert {k: first[k] for k in ("frame", "origin", "file")} == {"frame": 10, "origin": [-2.0, -2.0],
                                                                  "file": "snow_buffer_0010.exr"}


def _bilinear_file(image, col, row):
    """Bilinear sample of a file image (H, W, 4), row 0 = the file's top row, at fractional texel indices
    (texel centres at whole numbers; clamped at the border, as a clamp-to-edge sampler does)."""
    h, w = image.shape[:2]
    col, row = np.clip(col, 0, w - 1), np.clip(row, 0, h - 1)
    c0, r0 = np.minimum(np.floor(col).astype(int), w - 2), np.minimum(np.floor(row).astype(int), h - 2)
    tc, tr = (col - c0)[:, None], (row - r0)[:, None]
    top = image[r0, c0] * (1 - tc) + image[r0, c0 + 1] * tc
    bottom = image[r0 + 1, c0] * (1 - tc) + image[r0 + 1, c0 + 1] * tc
    return top * (1 - tr) + bottom * tr


@pytest.mark.parametrize("unit_scale", [1.0, 0.01])
def test_engines_sample_the_buffer_with_their_own_world_positions(tmp_path, unit_scale):
    """snow_buffer.json tells Godot, Unity and Unreal how to turn their world position into the buffer's uv: a
    Blender point, taken into each engine's axes and units (FBX applies the unit scale, glTF not), sampled at
    that uv with the engine's uv origin in the EXR as written, reads what the buffer holds at the point, on
    every frame of a window that follows a pivot; the heights scale to the engine's units."""
    from core import bend_engines

    buf = snow.BufferParams(resolution=32, size=8.0, framing="FOLLOW", edge_fade=0.0)
    pivot = np.c_[np.linspace(-1.3, 2.2, 6), np.linspace(0.4, -1.9, 6), np.zeros(6)]
    result = snow.bake(walk(6, (-2, 0.5), (2, -1)), [0.6], [0.2], snow.StampParams(), buf, pivot_track=pivot,
                       out_dir=str(tmp_path), unit_scale=unit_scale)
    meta = json.loads((tmp_path / "snow_buffer.json").read_text())
    assert meta["unit_scale"] == unit_scale and sorted(meta["engines"]) == ["GODOT", "UNITY", "UNREAL"]
    rng = np.random.default_rng(7)
    for frame, origin in zip(meta["frames"], result.origins):
        held = snow.read_exr(str(tmp_path / frame["file"]))  # row 0 = min world y
        image = held[::-1]  # as the file stores it: top row = max world y
        xy = origin + rng.uniform(0.3, 7.7, (50, 2))
        want = np.stack([snow.sample_buffer(held, origin, buf.texel, xy, c) for c in range(4)], 1)
        points = np.c_[xy, rng.uniform(-2, 2, 50)]
        for engine, e in meta["engines"].items():
            p = bend_engines.to_engine(points, engine, unit_scale)
            uv = np.stack([p @ e["u_from_world"], p @ e["v_from_world"]], 1) + frame["uv_offset"][engine]
            top_row = uv[:, 1] if e["uv_origin"] == "top-left" else 1.0 - uv[:, 1]
            got = _bilinear_file(image, uv[:, 0] * 32 - 0.5, top_row * 32 - 0.5)
            np.testing.assert_allclose(got, want, atol=1e-5, err_msg=f"{engine} frame {frame['frame']}")
            k = bend_engines.engine_scale(engine, unit_scale)
            assert e["units_per_blender_unit"] == pytest.approx(k)
            np.testing.assert_allclose(e["up"], bend_engines.to_engine([[0, 0, 1.0]], engine, 1.0)[0]
                                       / bend_engines.engine_scale(engine, 1.0))
    assert meta["engines"]["UNITY"]["uv_origin"] == "bottom-left"
    assert meta["engines"]["UNREAL"]["units_per_blender_unit"] == pytest.approx(100.0 * unit_scale)
    assert meta["engines"]["GODOT"]["units_per_blender_unit"] == 1.0


@pytest.mark.parametrize("unit_scale", [0.0, -1.0, float("nan"), float("inf"), "cm"])
def test_a_bad_unit_scale_is_refused_before_anything_is_written(tmp_path, unit_scale):
    buf = snow.BufferParams(resolution=8, size=4.0, origin=(-2.0, -2.0))
    with pytest.raises(snow.SnowError, match="pass the scene's unit_settings.scale_length"):
        snow.bake(walk(3), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(tmp_path), unit_scale=unit_scale)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("size, resolution", [(4e-30, 16), (1e-6, 512), (1.0, 8192)])
def test_a_window_too_fine_for_the_ripples_is_refused_before_anything_is_written(tmp_path, size, resolution):
    # a Whole Area window around one still actor of radius 1e-30 and no snow is 4e-30 wide: its ripples would take
    # 2.8e29 steps a frame, a bake (or a live push) that never ends
    buf = snow.BufferParams(resolution=resolution, size=size, origin=(0.0, 0.0))
    steps = buf.ripple_speed / 24.0 / (0.6 * buf.texel)
    with pytest.raises(snow.SnowError, match=re.escape(f"texels are {buf.texel:.3g} wide (a window of {size:.3g} "
                                                       f"over {resolution} texels): its ripples would take "
                                                       f"{steps:.3g} steps a frame (at most 256). Make the window "
                                                       f"larger")):
        snow.bake(walk(3), [0.4], [0.1], snow.StampParams(fps=24.0), buf, out_dir=str(tmp_path))
    assert os.listdir(tmp_path) == []
    with pytest.raises(snow.SnowError, match="Make the window larger"):
        snow.LiveBuffer(walk(3), [0.4], [0.1], snow.StampParams(fps=24.0), buf)


def test_ripple_steps_keep_the_wave_stable_up_to_their_limit():
    from core.snow import baking

    assert baking.ripple_steps(snow.BufferParams(resolution=8192, size=1e-6, ripple_speed=0.0), 24.0) == 1
    fine = snow.BufferParams(resolution=4096, size=2.0)  # 0.49 mm texels: 143 steps
    assert baking.ripple_steps(fine, 24.0) == math.ceil(1.0 / 24.0 / (0.6 * 2.0 / 4096)) == 143
    size = 1.0 / 24.0 / (0.6 * baking.MAX_RIPPLE_STEPS) * 64  # exactly the limit at 64 texels
    assert baking.ripple_steps(snow.BufferParams(resolution=64, size=size * 1.001), 24.0) == baking.MAX_RIPPLE_STEPS
    with pytest.raises(snow.SnowError):
        baking.ripple_steps(snow.BufferParams(resolution=64, size=size * 0.99), 24.0)


def test_cancel_leaves_nothing(tmp_path):
    buf = snow.BufferParams(resolution=16, size=4.0, origin=(-2.0, -2.0))
    job = snow.bake_job(walk(10), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(tmp_path))
    next(job)
    next(job)
    job.close()
    assert os.listdir(tmp_path) == []


def test_output_estimate_bounds_what_a_bake_writes(tmp_path):
    """The estimate is an upper bound of the files a bake writes (uncompressed EXRs and the JSON), and close."""
    for res, frames in ((16, 6), (100, 3)):
        buf = snow.BufferParams(resolution=res, size=4.0, origin=(-2.0, -2.0))
        out = tmp_path / f"{res}"
        snow.bake(walk(frames), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(out))
        written = sum(os.path.getsize(out / n) for n in os.listdir(out))
        assert written <= snow.bake_output_bytes(res, frames) < written + 5000


def test_bake_too_large_for_the_disk_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    free = snow.bake_output_bytes(16, 5)  # room for 5 frames
    monkeypatch.setattr(outputs.shutil, "disk_usage", lambda path: type("Usage", (), {"free": free})())
    buf = snow.BufferParams(resolution=16, size=4.0, origin=(-2.0, -2.0))
    with pytest.raises(snow.SnowError, match=r"would write up to 35\.0 KB \(6 frame\(s\) of 16x16 float EXR\) but "
                       r"only 29\.8 KB is free in .*: bake fewer frames, a lower resolution or only the final frame"):
        snow.bake(walk(6), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(tmp_path / "out"))
    assert os.listdir(tmp_path / "out") == []
    snow.bake(walk(5), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(tmp_path / "out"))
    snow.bake(walk(6), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(tmp_path / "one"), sequence=False)
    assert snow.check_disk_space(str(tmp_path / "not" / "yet"), 16, 5) == free  # a folder still to be made


@pytest.mark.parametrize("sequence", [True, False])
def test_output_estimate_counts_the_json_of_every_frame(tmp_path, sequence):
    """The JSON lists every frame stepped through (origin, uv offsets per engine), also when only the final image
    is written: the estimate stays an upper bound, within 400 bytes a frame."""
    n = 400
    track = np.zeros((n, 1, 3))
    track[:, 0, 0] = np.linspace(-5.0, 5.0, n)  # a moving window: long floats in every frame's entry
    buf = snow.BufferParams(resolution=8, size=20.0, framing="FOLLOW")
    out = tmp_path / "out"
    snow.bake(track, [0.5], [0.2], snow.StampParams(), buf, pivot_track=track[:, 0], out_dir=str(out),
              sequence=sequence, frame_start=1001)
    written = sum(os.path.getsize(out / name) for name in os.listdir(out))
    estimate = snow.bake_output_bytes(8, n if sequence else 1, n)
    assert written <= estimate < written + 400 * n + 4096  # the slack: every float at its longest, EXR headers


def test_a_killed_bakes_folder_does_not_keep_later_bakes_off_the_disk(tmp_path, monkeypatch):
    """The temporary folder a killed bake left holds the space the next bake needs: it is removed before the
    space is checked (the bake was refused for ever), and counts as free space in the check before a bake; the
    message gives small sizes in MB."""
    out = tmp_path / "out"
    stale = out / ".envfx_snow_999999999_abc"  # no such process
    stale.mkdir(parents=True)
    outputs.write_owner(str(stale), 999999999)  # made on this machine
    (stale / "snow_buffer_0001.exr").write_bytes(b"\0" * 2_000_000)
    old = outputs._STARTED - 3600.0
    os.utime(stale, (old, old))
    need = snow.bake_output_bytes(128, 1)
    # the disk has room for half the bake, and for all of it once the killed bake's 2 MB are gone
    monkeypatch.setattr(outputs.shutil, "disk_usage", lambda path: type("Usage", (), {
        "free": need // 2 + (0 if stale.exists() else 2_000_000)})())
    assert snow.check_disk_space(str(out), 128, 1) == need       # the killed bake's files count as free
    with pytest.raises(snow.SnowError, match=r"up to 262\.9 KB .* but only 131\.5 KB is free"):
        snow.check_disk_space(str(tmp_path / "elsewhere"), 128, 1)
    buf = snow.BufferParams(resolution=128, size=4.0, origin=(-2.0, -2.0))
    result = snow.bake(walk(1), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(out), sequence=False)
    assert result.stale_removed == [stale.name] and sorted(os.listdir(out)) == ["snow_buffer.exr", "snow_buffer.json"]


def test_remove_stale_temp_only_removes_dead_runs_folders(tmp_path):
    import subprocess

    ended = subprocess.Popen(["true"])
    ended.wait()
    old = outputs._STARTED - 60.0
    names = {f".envfx_snow_{ended.pid}_a1b2": True, ".envfx_snow_q8x_z2k4": True,  # dead pid; no owner file, old
             f".envfx_snow_{os.getpid()}_c3": False, ".envfx_snow_1_d4": False,  # running processes
             f".envfx_snow_{ended.pid}_new": False,  # newer than this process
             ".envfx_other": False, "envfx_snow_x": False}  # not EnvFX's temporary folders
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.exr").write_bytes(b"x")
        pid = outputs._staging_pid(name)
        if pid and pid.isdigit():  # made on this machine by that process
            outputs.write_owner(str(tmp_path / name), int(pid))
        if "q8x" in name:  # with no owner file, a folder is stale once unchanged for FOREIGN_MAX_AGE
            gone = outputs._STARTED - outputs.FOREIGN_MAX_AGE - 60.0
            os.utime(tmp_path / name / "f.exr", (gone, gone))
            os.utime(tmp_path / name, (gone, gone))
        elif not name.endswith("_new"):
            os.utime(tmp_path / name, (old, old))
    (tmp_path / ".envfx_snow_file").write_bytes(b"a file")
    os.utime(tmp_path / ".envfx_snow_file", (old, old))
    assert sorted(snow.remove_stale_temp(str(tmp_path))) == sorted(n for n, gone in names.items() if gone)
    assert sorted(os.listdir(tmp_path)) == sorted([n for n, gone in names.items() if not gone] + [".envfx_snow_file"])
    assert snow.remove_stale_temp(str(tmp_path / "missing")) == []


class _FakeKernel32:
    """kernel32 as _pid_running_windows calls it: processes maps pid -> exit code (259 = still active); denied
    pids exist but cannot be opened (error 5); other pids are gone (error 87)."""

    def __init__(self, processes, denied=()):
        self.processes, self.denied, self.open, self.error = processes, set(denied), set(), 0

    def OpenProcess(self, access, inherit, pid):  # noqa: N802 (the Win32 name)
        assert access == 0x1000 and not inherit  # PROCESS_QUERY_LIMITED_INFORMATION, not inherited
        if pid in self.denied or pid not in self.processes:
            self.error = 5 if pid in self.denied else 87
            return 0
        self.open.add(10_000 + pid)
        return 10_000 + pid

    def GetExitCodeProcess(self, handle, code):  # noqa: N802
        assert handle in self.open
        code._obj.value = self.processes[handle - 10_000]
        return 1

    def CloseHandle(self, handle):  # noqa: N802
        self.open.remove(handle)
        return 1


def test_pid_probe_on_windows_opens_the_process_and_never_signals(tmp_path, monkeypatch):
    """On Windows os.kill(pid, 0) sends CTRL_C_EVENT: the probe asks OpenProcess / GetExitCodeProcess instead (a
    running process, one that is not ours to open, an ended one, a gone one), and closes every handle it opens."""
    kernel32 = _FakeKernel32({4242: 259, 4343: 0}, denied={4444})

    def no_signal(*args):
        raise AssertionError("os.kill must not be used on Windows")

    monkeypatch.setattr(outputs, "_windows_api", lambda: (kernel32, lambda: kernel32.error))
    monkeypatch.setattr(outputs.os, "kill", no_signal)
    old = outputs._STARTED - 60.0
    for pid in (4242, 4343, 4545):
        (tmp_path / f".envfx_snow_{pid}_x").mkdir()
        outputs.write_owner(str(tmp_path / f".envfx_snow_{pid}_x"), pid)  # made on this machine
        os.utime(tmp_path / f".envfx_snow_{pid}_x", (old, old))
    monkeypatch.setattr(outputs.os, "name", "nt")
    try:  # os.name is back before anything can fail (pytest's own paths depend on it)
        running = {pid: outputs.pid_running(pid) for pid in (4242, 4343, 4444, 4545, 2**40)}
        removed = sorted(snow.remove_stale_temp(str(tmp_path)))
    finally:
        monkeypatch.undo()
    assert running == {4242: True, 4343: False, 4444: True, 4545: False, 2**40: False}
    assert removed == [".envfx_snow_4343_x", ".envfx_snow_4545_x"]
    assert not kernel32.open


def test_final_only_writes_one_image(tmp_path):
    buf = snow.BufferParams(resolution=8, size=4.0, origin=(-2.0, -2.0))
    snow.bake(walk(4), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(tmp_path), sequence=False)
    assert sorted(os.listdir(tmp_path)) == ["snow_buffer.exr", "snow_buffer.json"]


@pytest.mark.parametrize("kwargs,msg", [
    (dict(resolution=0), "at least 1"),
    (dict(resolution=100000), "enormous"),
    (dict(size=0.0), "positive"),
])
def test_bad_buffer_params(kwargs, msg):
    with pytest.raises(snow.SnowError, match=msg):
        snow.bake(walk(3), [0.4], [0.1], snow.StampParams(), snow.BufferParams(**kwargs))


def test_output_under_a_file_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(snow.SnowError, match="output folder"):
        snow.bake(walk(3), [0.4], [0.1], snow.StampParams(), snow.BufferParams(resolution=8),
                  out_dir=str(f / "sub"))
    assert f.read_text() == "x"


# --- cover ------------------------------------------------------------------------------------------------

def test_cover_only_up_facing_and_not_under_occluder():
    flat = plane_tris(10, 10)
    steep = plane_tris(4, 4, tilt=3.0, offset=(20, 0))  # ~72 deg
    occ = box_tris((-1, -1, 0.5), (1, 1, 2.0))           # a box floating above the middle
    cover = snow.generate_cover(np.concatenate([flat, steep]), snow.CoverParams(spacing=0.25, thickness=0.2,
                                border_width=0.5), occluder_tris=occ)
    v = cover.lods[0].vertices
    assert v[:, 0].max() <= 5.0 + 1e-6                     # nothing on the steep patch
    under = (np.abs(v[:, 0]) < 1) & (np.abs(v[:, 1]) < 1)
    assert not under.any()
    assert v[:, 2].max() == pytest.approx(0.2, rel=1e-5)


def test_cover_border_tapers_to_zero_and_spacing():
    tris = plane_tris(10, 5, tilt=0.3)
    cover = snow.generate_cover(tris, snow.CoverParams(spacing=0.2, thickness=0.3, border_width=1.0))
    m = cover.lods[0]
    covered = cover.covered
    assert covered is not None
    # border cells (next to an uncovered cell or the grid edge) have zero thickness
    pad = np.pad(covered, 1)
    edge = covered & ~(pad[:-2, 1:-1] & pad[2:, 1:-1] & pad[1:-1, :-2] & pad[1:-1, 2:])
    th = np.zeros(covered.shape)
    col = np.rint((m.vertices[:, 0] - cover.origin[0]) / cover.spacing).astype(int)
    row = np.rint((m.vertices[:, 1] - cover.origin[1]) / cover.spacing).astype(int)
    th[row, col] = m.thickness
    assert covered[row, col].all() and len(set(zip(row, col))) == covered.sum()
    assert np.all(th[edge] == 0)
    assert th.max() == pytest.approx(0.3)
    # thickness grows with distance from the border
    row = th[covered.shape[0] // 2]
    assert row[1] < row[3] < row[6]
    # spacing of the mesh edges along the surface within 20 %
    f = m.faces
    e = np.linalg.norm(m.vertices[f[:, 1]] - m.vertices[f[:, 0]], axis=1)
    assert abs(np.median(e) / 0.2 - 1) < 0.2
    # snow sits on the ground + thickness
    np.testing.assert_allclose(m.vertices[:, 2] - m.ground, m.thickness, atol=1e-5)


@pytest.mark.parametrize("slope_deg", [0.0, 20.0, 40.0, 45.0])
def test_cover_spacing_along_the_surface_is_within_20_percent_on_slopes(slope_deg):
    tilt = math.tan(math.radians(slope_deg))
    flat = plane_tris(6, 6)
    slope = plane_tris(6, 6, tilt=tilt)
    slope[:, :, 0] += 7.0  # a flat field beside a slope, so both ends of the range are in one cover
    cover = snow.generate_cover(np.concatenate([flat, slope]),
                                snow.CoverParams(spacing=0.2, thickness=0.1, border_width=0.0))
    m = cover.lods[0]
    ground = m.vertices.copy()
    ground[:, 2] = m.ground  # the surface itself (the snow top also varies with the border taper)
    f = m.faces
    edges = np.concatenate([np.linalg.norm(ground[f[:, (i + 1) % 4]] - ground[f[:, i]], axis=1) for i in range(4)])
    # faces straddling the gap between the two fields are not surface edges
    edges = edges[edges < 0.2 * 2]
    ratio = edges / 0.2
    assert ratio.min() > 0.8 - 1e-6 and ratio.max() < 1.2 + 1e-6, (ratio.min(), ratio.max())
    lo, hi = cover.surface_spacing
    assert lo / 0.2 == pytest.approx(ratio.min(), abs=0.02) and hi / 0.2 == pytest.approx(ratio.max(), abs=0.02)


def test_cover_budget_refused_with_estimate_quickly():
    tris = plane_tris(1000, 2)
    with pytest.raises(snow.SnowError, match=r"about 1[0-9,]+ vertices.*budget"):
        snow.generate_cover(tris, snow.CoverParams(spacing=0.001, vertex_budget=1_000_000))


def test_cover_no_up_faces():
    tris = plane_tris(4, 2, tilt=10.0)
    with pytest.raises(snow.SnowError, match="No face"):
        snow.generate_cover(tris, snow.CoverParams(spacing=0.1))


def test_cover_leaves_out_faces_whose_corners_are_not_numbers():
    """A terrain with a NaN or infinite vertex: its faces get no snow, are counted (the operator names them), and the
    rest is covered as without them, with no NumPy warnings; all of them, or faces of no area, say so instead of
    'no face looks up'."""
    p = snow.CoverParams(spacing=0.5, thickness=0.2, border_width=0.0)
    tris = plane_tris(size=4.0, n=4)
    bad = tris.copy()
    bad[0, 1, 2] = np.nan
    bad[5, 0, 0] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = snow.generate_cover(bad, p, occluder_tris=bad[:1] + (0, 0, 1))
    assert got.not_finite == 2
    want = snow.generate_cover(np.delete(tris, [0, 5], axis=0), p)
    np.testing.assert_array_equal(got.lods[0].vertices, want.lods[0].vertices)
    with pytest.raises(snow.SnowError, match="Every face of the selection has a corner that is not a number"):
        snow.generate_cover(np.full_like(tris, np.nan), p)
    with pytest.raises(snow.SnowError, match="Every face of the selection has no area"):
        snow.generate_cover(tris * 0.0, p)


@pytest.mark.parametrize("scale", [0.01, 1.0, 1000.0])
def test_cover_any_unit_scale(scale):
    tris = plane_tris(10 * scale, 4, tilt=0.2)
    cover = snow.generate_cover(tris, snow.CoverParams(spacing=0.5 * scale, thickness=0.2 * scale,
                                                       border_width=1.0 * scale, noise=0.3, noise_scale=3 * scale))
    ref = snow.generate_cover(plane_tris(10, 4, tilt=0.2), snow.CoverParams(spacing=0.5, thickness=0.2,
                                                                           border_width=1.0, noise=0.3,
                                                                           noise_scale=3))
    assert cover.lods[0].vertices.shape == ref.lods[0].vertices.shape
    np.testing.assert_allclose(cover.lods[0].vertices / scale, ref.lods[0].vertices, rtol=1e-4, atol=1e-4)


def test_cover_lods_mask_drift_noise_deterministic():
    tris = plane_tris(10, 4)
    weights = np.ones((tris.shape[0], 3))
    weights[tris[:, :, 0] < 0] = 0.0                      # left half masked out
    p = snow.CoverParams(spacing=0.2, lods=3, noise=0.5, seed=3)
    a = snow.generate_cover(tris, p, mask_weights=weights)
    b = snow.generate_cover(tris, p, mask_weights=weights)
    assert len(a.lods) == 3
    assert a.lods[0].vertices.shape[0] > 3 * a.lods[1].vertices.shape[0] > 9 * a.lods[2].vertices.shape[0] / 2
    np.testing.assert_array_equal(a.lods[0].vertices, b.lods[0].vertices)
    assert a.lods[0].vertices[:, 0].min() > -2.5   # corners at x < 0 have weight 0
    c = snow.generate_cover(tris, snow.CoverParams(spacing=0.2, lods=1, noise=0.5, seed=4))
    assert not np.array_equal(c.lods[0].thickness, snow.generate_cover(tris, snow.CoverParams(
        spacing=0.2, lods=1, noise=0.5, seed=3)).lods[0].thickness)
    # drift: a ridge; the downwind face gets more snow than the upwind face
    ridge = np.concatenate([plane_tris(4, 4, tilt=0.5, offset=(-2, 0)), plane_tris(4, 4, tilt=-0.5, offset=(2, 0))])
    d = snow.generate_cover(ridge, snow.CoverParams(spacing=0.2, drift=0.5, drift_direction=(1, 0),
                                                    border_width=0.2)).lods[0]
    up = d.thickness[(d.vertices[:, 0] < -0.8) & (d.vertices[:, 0] > -3)].mean()
    down = d.thickness[(d.vertices[:, 0] > 0.8) & (d.vertices[:, 0] < 3)].mean()
    assert down > 1.2 * up


def test_sample_image_bilinear_clamped():
    img = np.zeros((2, 4, 4), dtype=np.float32)   # rows bottom-up, like Blender images
    img[:, 2:, :3] = 1.0                           # right half white
    uv = np.array([[0.125, 0.5], [0.875, 0.5], [0.5, 0.25], [1.125, 0.5]])
    v = snow.sample_image(img, uv)
    np.testing.assert_allclose(v, [0.0, 1.0, 0.5, 1.0], atol=1e-6)


def test_cover_vertices_are_laid_out_cell_by_cell_of_the_trails_table():
    tris = plane_tris(10, 5, tilt=0.3)
    cover = snow.generate_cover(tris, snow.CoverParams(spacing=0.05, thickness=0.3, lods=2))
    for m in cover.lods:
        cells = snow.trail_cells(m.vertices)
        assert np.all(np.diff(cells) >= 0)                            # cell after cell
        assert len(np.unique(cells)) > 1000
        # each face still joins four grid neighbours, counter-clockwise seen from above
        quad = m.vertices[m.faces]
        a, b = quad[:, 1, :2] - quad[:, 0, :2], quad[:, 2, :2] - quad[:, 1, :2]
        assert np.all(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0] > 0)  # (the z of their cross product)
    # inside a cell the vertices keep their row-major order
    m = cover.lods[0]
    cells = snow.trail_cells(m.vertices)
    first = m.vertices[cells == cells[len(cells) // 2]]
    key = first[:, 1] * 1e6 + first[:, 0]
    assert np.all(np.diff(key) > 0)


def test_by_trail_cells_keeps_the_mesh():
    rng = np.random.default_rng(1)
    n = 200  # ~1.6 vertices a cell side: rows of cells interleave in row-major order
    xs = np.linspace(0, 9, n)
    X, Y = np.meshgrid(xs, xs)
    v = np.stack([X.ravel(), Y.ravel(), rng.uniform(0, 1, n * n)], 1).astype(np.float32)
    ids = np.arange(n * n).reshape(n, n)
    f = np.stack([ids[:-1, :-1], ids[:-1, 1:], ids[1:, 1:], ids[1:, :-1]], -1).reshape(-1, 4).astype(np.int32)
    m = snow.CoverMesh(vertices=v, faces=f, thickness=v[:, 2] * 2, ground=v[:, 2] * 3, step=2)
    out = snow.by_trail_cells(m)
    assert out.step == 2 and not np.array_equal(out.vertices, m.vertices)
    assert sorted(map(tuple, m.vertices[m.faces].reshape(-1, 12).tolist())) == \
        sorted(map(tuple, out.vertices[out.faces].reshape(-1, 12).tolist()))
    np.testing.assert_array_equal(out.thickness, out.vertices[:, 2] * 2)
    np.testing.assert_array_equal(out.ground, out.vertices[:, 2] * 3)
    empty = snow.CoverMesh(vertices=np.zeros((0, 3), np.float32), faces=np.zeros((0, 4), np.int32),
                           thickness=np.zeros(0, np.float32), ground=np.zeros(0, np.float32))
    assert snow.by_trail_cells(empty).vertices.shape == (0, 3)


# --- the shown snow: camera fade ---------------------------------------------------------------------------

def test_camera_fade_lays_the_snow_flat_far_from_the_camera():
    """The write-up: the vertex offset fades out with the distance from the camera, lowering the snow flat with
    the ground further away. Near (within start): the trails as they are; beyond end: the top a sliver of
    1 - GROUND_KEEP of the thickness above the ground, trails or not; in between: linear blend."""
    pts = np.array([[1.0, 0, 0], [3.0, 0, 0], [4.0, 0, 0], [5.0, 0, 0], [9.0, 0, 0]])
    fade = snow.camera_fade(pts, (0.0, 0.0, 0.0), 2.0, 6.0)
    np.testing.assert_allclose(fade, [1.0, 0.75, 0.5, 0.25, 0.0])
    np.testing.assert_array_equal(snow.camera_fade(pts, None, 2.0, 6.0), 1.0)        # no camera: no fade
    np.testing.assert_array_equal(snow.camera_fade(pts, (0, 0, 0), 4.0, 4.0), [1, 1, 1, 0, 0])  # a step
    down = np.array([0.1, 0.0, 0.5, 0.0, 0.2])
    rim = np.array([0.0, 0.05, 0.0, 0.0, 0.0])
    thick = np.full(5, 0.3)
    keep = snow.GROUND_KEEP
    got = snow.shown_offset(down, rim, thick, fade)  # pyright: ignore[reportArgumentType] -- a per-vertex fade; the unannotated fade=1.0 reads as float
    trail = np.maximum(rim - down, -keep * thick)                         # near: what the trails alone show
    assert got[0] == pytest.approx(trail[0]) and trail[2] == pytest.approx(-keep * 0.3)
    assert got[-1] == pytest.approx(-keep * 0.3)                          # far: flat on the ground
    np.testing.assert_allclose(got, fade * trail - (1 - fade) * keep * thick)
    assert np.all(got >= -keep * thick - 1e-12)                            # never below the sliver
    assert 0.3 + got[-1] == pytest.approx(0.3 * (1 - keep)) and 0 < 1 - keep < 0.05       # a sliver
    # no snow_thickness (trails on any mesh): nothing to lay flat, the trail fades as before
    np.testing.assert_allclose(snow.shown_offset(down, rim, None, fade), fade * (rim - down))  # pyright: ignore[reportArgumentType] -- as above


# --- puffs ------------------------------------------------------------------------------------------------

def test_puff_flight_is_ballistic_and_ends_with_its_life():
    params = snow.PuffParams(speed=2.0, lifetime=0.5, size=0.1, gravity=9.81)
    p = np.array([[0.0, 0.0, 1.0]])
    v = np.array([[0.5, 0.0, 2.0]])
    age = np.zeros(1)
    dt = 1.0 / 24.0
    heights = []
    for k in range(1, 13):
        p, v, age, alive = snow.puff_step(p, v, age, dt, params)
        heights.append(p[0, 2])
        # closed form of semi-implicit Euler: z_k = z0 + k dt v0 - g dt^2 k (k + 1) / 2
        assert p[0, 2] == pytest.approx(1.0 + k * dt * 2.0 - 9.81 * dt * dt * k * (k + 1) / 2)
        assert p[0, 0] == pytest.approx(0.5 * k * dt)
        assert alive[0] == (k * dt < 0.5)
    assert max(heights) > heights[0] and heights[-1] < max(heights)   # up, then down
    np.testing.assert_allclose(snow.puff_radius([0.0, 0.25, 0.5, 0.7], params), [0.1, 0.05, 0.0, 0.0])
    assert snow.puff_launch_bounds(2.0) == (pytest.approx(0.7), 1.0, 2.0)


@pytest.mark.parametrize("change,msg", [({"rate": 1.5}, "chance per vertex"), ({"lifetime": 0.0}, "more than 0"),
                                        ({"speed": -1.0}, "0 or more"), ({"size": float("nan")}, "finite")])
def test_puff_params_bad_input(change, msg):
    with pytest.raises(snow.SnowError, match=msg):
        snow.PuffParams(**change).validate()


def test_ripples_are_a_height_in_scene_units_independent_of_resolution():
    # one 0.3 m actor walks 4 m over the same 8 m window: only the texel count changes
    frames = 30
    tracks = walk(frames, (-2, 0), (2, 0))
    stamp = snow.StampParams(fps=24.0)
    peaks = {}
    for res in (64, 256, 1024):
        buf = snow.BufferParams(resolution=res, size=8.0, origin=(-4.0, -4.0))
        b = snow.bake(tracks, [0.3], [0.15], stamp, buf).final[..., 2]
        assert b.min() < 0 < b.max()          # the water is pushed down and rings rise around it
        peaks[res] = float(np.abs(b).max())
    # about the same heights at every resolution, and heights of the order of the actor's depth (not metres)
    assert max(peaks.values()) < 1.4 * min(peaks.values()), peaks
    assert all(0.02 < p < 0.15 for p in peaks.values()), peaks
    # a height in scene units: the same scene 10x larger (actor, window, ripple speed) has 10x taller ripples
    small = snow.bake(tracks, [0.3], [0.15], stamp,
                      snow.BufferParams(resolution=128, size=8.0, origin=(-4.0, -4.0))).final[..., 2]
    large = snow.bake(tracks * 10, [3.0], [1.5], snow.StampParams(fps=24.0, fade_height=5.0),
                      snow.BufferParams(resolution=128, size=80.0, origin=(-40.0, -40.0), ripple_speed=10.0)
                      ).final[..., 2]
    np.testing.assert_allclose(large, 10 * small, rtol=1e-3, atol=1e-5)


def _written_metadata(tmp_path):
    buf = snow.BufferParams(resolution=8, size=4.0, origin=(-2.0, -2.0))
    result = snow.bake(walk(3, (-1, 0), (1, 0)), [0.4], [0.1], snow.StampParams(), buf, out_dir=str(tmp_path))
    assert result.metadata_path is not None
    return result.metadata_path


def test_read_buffer_metadata_reads_what_the_bake_wrote(tmp_path):
    path = _written_metadata(tmp_path)
    meta = snow.read_buffer_metadata(path)
    assert meta == json.loads(open(path).read())
    assert [f["file"] for f in meta["frames"]] == [f"snow_buffer_{i:04d}.exr" for i in (1, 2, 3)]


@pytest.mark.parametrize("edit, msg", [
    (lambda text, meta: text[: len(text) // 2], "not valid JSON"),
    (lambda text, meta: b"\xff\xfe" + text.encode(), "not valid JSON"),
    (lambda text, meta: "[1, 2]", "not an EnvFX interaction buffer"),
    (lambda text, meta: {"format": "something else", "frames": []}, "not an EnvFX interaction buffer"),
    (lambda text, meta: {**meta, "version": 7}, "version 7"),
    (lambda text, meta: {k: v for k, v in meta.items() if k != "frames"}, "lists no frames"),
    (lambda text, meta: {**meta, "frames": []}, "lists no frames"),
    (lambda text, meta: {**meta, "world_size": "4"}, "world_size '4'"),
    (lambda text, meta: {**meta, "world_size": 0}, "world_size 0"),
    (lambda text, meta: {**meta, "sequence": "yes"}, "sequence"),
    (lambda text, meta: {**meta, "frames": [{"frame": 1}]}, "frame entry 0"),
    (lambda text, meta: {**meta, "frames": meta["frames"][:1] + [{**meta["frames"][1], "origin": [0, None]}]},
     "frame entry 1"),
    (lambda text, meta: {**meta, "frames": [{**meta["frames"][0], "file": "../elsewhere.exr"}]}, "frame entry 0"),
    (lambda text, meta: {**meta, "frames": [{**meta["frames"][0], "frame": 1.5}]}, "frame entry 0"),
])
def test_read_buffer_metadata_refuses_damaged_or_foreign_files(tmp_path, edit, msg):
    path = _written_metadata(tmp_path)
    text = open(path).read()
    changed = edit(text, json.loads(text))          # bytes, text or a JSON value
    if not isinstance(changed, (bytes, str)):
        changed = json.dumps(changed)
    with open(path, "wb") as fh:
        fh.write(changed if isinstance(changed, bytes) else changed.encode())
    with pytest.raises(snow.SnowError, match=msg):
        snow.read_buffer_metadata(path)
