"""core.snow.bake_job with the actors' radius and depth measured at each frame (an actor that grows)."""

import numpy as np
import pytest

from core import snow


def _bake(radius, depth, tracks):
    buf = snow.BufferParams(resolution=32, size=8.0, origin=(-4.0, -4.0))
    return snow.bake(tracks, radius, depth, snow.StampParams(), buf)


def _tracks(frames=6):
    """Two actors: one walking along x, one standing."""
    t = np.zeros((frames, 2, 3))
    t[:, 0, 0] = np.linspace(-2.0, 2.0, frames)
    t[:, 1, :2] = (0.0, 2.0)
    return t


def test_per_frame_sizes_that_do_not_change_bake_as_one_size_per_actor():
    tracks = _tracks()
    one = _bake([0.5, 0.3], [0.2, 0.1], tracks)
    rows = _bake(np.tile([0.5, 0.3], (6, 1)), np.tile([0.2, 0.1], (6, 1)), tracks)
    np.testing.assert_array_equal(rows.final, one.final)


def test_an_actor_grows_from_the_frame_its_size_changes():
    tracks = _tracks()
    tracks[:, 0, 0] = 0.0  # both standing
    radius = np.tile([0.4, 0.3], (6, 1))
    radius[4:, 0] = 1.2  # actor 0 three times as wide from the fifth frame
    depth = np.tile([0.2, 0.1], (6, 1))
    small = _bake(radius[:4], depth[:4], tracks[:4])
    grown = _bake(radius, depth, tracks)
    assert (grown.final[..., 0] < -0.01).sum() > 3 * (small.final[..., 0] < -0.01).sum()


def test_a_radius_of_0_stamps_nothing_at_that_frame():
    tracks = _tracks()
    radius = np.tile([0.5, 0.3], (6, 1))
    radius[:, 1] = 0.0  # actor 1 scaled to nothing at every frame
    depth = np.tile([0.2, 0.1], (6, 1))
    without = _bake(radius, depth, tracks)
    alone = _bake(radius[:, :1], depth[:, :1], tracks[:, :1])
    np.testing.assert_array_equal(without.final, alone.final)


@pytest.mark.parametrize("radius, depth, msg", [
    (np.full((5, 2), 0.5), np.full((6, 2), 0.2), "one row per frame"),
    (np.full((6, 2), -0.5), np.full((6, 2), 0.2), "radius >= 0 and a depth >= 0 at every frame"),
    ([0.0, 0.5], [0.2, 0.2], "radius > 0"),
])
def test_bad_sizes_are_refused(radius, depth, msg):
    with pytest.raises(snow.SnowError, match=msg):
        _bake(radius, depth, _tracks())
