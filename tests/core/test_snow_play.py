"""``core.snow.TrailState.play``: the state of a track's frames up to any frame, reached in any order (playing,
scrubbing back, jumping, a track changed on the way), equals stepping those frames from no trail, and ``changed``
says which points a caller must write again."""

import numpy as np
import pytest

from core import snow


def _track(rng, frames, actors=3):
    steps = rng.normal(0.0, 0.4, (frames, actors, 3)) * [1.0, 1.0, 0.05]
    cur = rng.uniform(-3, 3, (1, actors, 3)) * [1.0, 1.0, 0.0] + np.cumsum(steps, axis=0)
    keys = tuple(range(1, actors + 1))
    radius, depth = np.array([0.5, 0.3, 0.8][:actors]), np.array([0.2, 0.1, 0.25][:actors])
    return {f + 1: (keys, cur[f], radius, depth) for f in range(frames)}


def _expected(pts, track, frames, params):
    if not frames:
        return np.zeros(pts.shape[0]), np.zeros(pts.shape[0])
    tracks = np.stack([track[f][1] for f in frames])
    keys, _, radius, depth = track[frames[0]]
    return snow.simulate_points(pts, tracks, radius, depth, params)


@pytest.mark.parametrize("refill", [0.0, 0.7])
def test_play_reaches_any_frame_as_stepping_the_track_through(refill):
    rng = np.random.default_rng(5)
    params = snow.StampParams(refill_rate=refill)
    pts = rng.uniform(-6, 6, (2500, 3)) * [1.0, 1.0, 0.02]
    track = _track(rng, 30)
    state = snow.TrailState(pts, params, cells=16, checkpoint_every=6)
    shown = np.zeros(pts.shape[0])
    for target in [1, 2, 3, 4, 12, 11, 30, 5, 6, 6, 29, 1, 0]:
        frames = [f for f in track if f <= target]
        before = shown.copy()
        state.play(frames, track)
        if state.changed is None:
            shown = state.rim - state.down
        else:  # only the listed points changed
            shown[state.changed] = (state.rim - state.down)[state.changed]
        d, r = _expected(pts, track, frames, params)
        np.testing.assert_array_equal(state.down, d)
        np.testing.assert_array_equal(state.rim, r)
        np.testing.assert_array_equal(shown, r - d)
        if target == 6 and state.changed is not None and state.changed.size == 0:
            np.testing.assert_array_equal(shown, before)  # the same frame again: nothing to write
    assert state.frame is None  # before the first frame: no trail


def test_play_steps_again_from_a_changed_frame_and_across_gaps():
    rng = np.random.default_rng(8)
    params = snow.StampParams()
    pts = rng.uniform(-6, 6, (2000, 3)) * [1.0, 1.0, 0.02]
    track = _track(rng, 20)
    state = snow.TrailState(pts, params, cells=16, checkpoint_every=4)
    state.play(list(track), track)
    changed = dict(track)
    keys, cur, radius, depth = track[9]
    changed[9] = (keys, cur + [0.7, 0.0, 0.0], radius, depth)  # another object at frame 9: replayed from there
    state.play(list(changed), changed)
    d, r = _expected(pts, changed, list(changed), params)
    np.testing.assert_array_equal(state.down, d)
    assert not np.array_equal(d, _expected(pts, track, list(track), params)[0])
    gap = [f for f in changed if f <= 5 or f == 15]  # a jump ahead: one step across the gap
    state.play(gap, changed)
    d, r = _expected(pts, changed, gap, params)
    np.testing.assert_array_equal(state.down, d)
    np.testing.assert_array_equal(state.rim, r)
