"""core.snow.bake_job with the actors' radius and depth measured at each frame (an actor that grows)."""

import re
from typing import Any

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


# --- a sequence in parts (farm tasks) ------------------------------------------------------------------------

def _parts_inputs(frames=9):
    """Two actors walking under a window that follows the first (the fields shift with it), over a sloped snow
    surface, with an occluder: every field and the window carry state from frame to frame."""
    t = np.zeros((frames, 2, 3))
    t[:, 0, 0] = np.linspace(-2.0, 2.5, frames)
    t[:, 0, 1] = np.linspace(0.5, -1.0, frames)
    t[:, 1, :2] = np.c_[np.linspace(1.0, -1.0, frames), np.full(frames, 1.5)]
    z = np.fromfunction(lambda r, c: 0.02 * c, (40, 40))
    surface = snow.HeightField(np.array([-5.0, -5.0]), 0.25, z)
    occ = np.array([[[0.5, -0.5, 1.0], [1.5, -0.5, 1.0], [0.5, 0.5, 1.0]]])
    buf = snow.BufferParams(resolution=32, size=6.0, framing="FOLLOW", edge_fade=0.1)
    kw: dict[str, Any] = dict(frame_start=11, pivot_track=t[:, 0] + (0.3, 0.0, 0.0), surface=surface,
                              occluder_tris=occ)
    return t, buf, kw


def _files(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_sequence_baked_in_parts_writes_the_files_of_one_bake_byte_for_byte(tmp_path):
    """Parts (in any order) each step the fields from the first frame and write only their own frames; the part
    with the last frame writes the JSON naming every frame: together the files of one bake, byte for byte."""
    tracks, buf, kw = _parts_inputs()
    one = snow.bake(tracks, [0.6, 0.4], [0.2, 0.1], snow.StampParams(), buf, out_dir=str(tmp_path / "one"), **kw)
    assert len(one.files) == 9
    parts = tmp_path / "parts"
    for part in [(19, 19), (11, 14), (15, 18)]:  # (the last first: a farm runs them in any order)
        result = snow.bake(tracks, [0.6, 0.4], [0.2, 0.1], snow.StampParams(), buf, out_dir=str(parts), part=part,
                           **kw)
        assert result.frames == list(range(part[0], part[1] + 1))
        assert (result.metadata_path is not None) == (part[1] == 19)
        if part == (15, 18):  # the fields after the part: those of the whole bake at its last frame
            alone = snow.bake(tracks[:8], [0.6, 0.4], [0.2, 0.1], snow.StampParams(), buf,
                              **dict(kw, pivot_track=kw["pivot_track"][:8]))
            np.testing.assert_array_equal(result.final, alone.final)
    assert _files(parts) == _files(tmp_path / "one")
    again = snow.bake(tracks, [0.6, 0.4], [0.2, 0.1], snow.StampParams(), buf, out_dir=str(parts), part=(15, 18),
                      **kw)  # run twice (a retry): the same files
    assert len(again.files) == 4 and _files(parts) == _files(tmp_path / "one")


@pytest.mark.parametrize("part, sequence, message", [
    ((5, 12), True, "Frames 5-12 are not a part of the bake's frames 11-19: give FIRST-LAST with 11 <= FIRST <= "
                    "LAST <= 19"),
    ((18, 20), True, "Frames 18-20 are not a part of the bake's frames 11-19"),
    ((14, 12), True, "Frames 14-12 are not a part"),
    ((11, 14), False, "Frames 11-14: this bake writes only its final frame (Image Sequence off), which a part of "
                      "the frames does not reach: bake every frame in one run"),
])
def test_a_part_outside_the_bakes_frames_is_refused_and_nothing_is_written(tmp_path, part, sequence, message):
    tracks, buf, kw = _parts_inputs()
    with pytest.raises(snow.SnowError, match=re.escape(message)):
        snow.bake(tracks, [0.6, 0.4], [0.2, 0.1], snow.StampParams(), buf, out_dir=str(tmp_path / "o"), part=part,
                  sequence=sequence, **kw)
    assert not (tmp_path / "o").exists()


def test_an_actor_whose_place_is_not_a_number_at_a_frame_is_not_there_then():
    """A NaN or infinite place or size (a broken transform at one frame) stamps nothing at that frame, and the
    actor's path starts again where it next is: as a bake whose actor is scaled to nothing there and stands at its
    next place (the bake stopped with 'cannot convert float NaN to integer')."""
    depth = np.tile([0.2, 0.1], (6, 1))
    for bad in (np.nan, np.inf):
        tracks, radius = _tracks(), np.tile([0.5, 0.3], (6, 1))
        tracks[2, 0, 0] = bad
        got = _bake(radius, depth, tracks)
        tracks[2, 0] = tracks[3, 0]
        radius[2, 0] = 0.0
        np.testing.assert_array_equal(got.final, _bake(radius, depth, tracks).final)
        assert np.isfinite(got.final).all()
    radius = np.tile([0.5, 0.3], (6, 1))
    radius[2, 1] = np.nan  # a size that is not a number
    got = _bake(radius, depth, _tracks())
    radius[2, 1] = 0.0
    np.testing.assert_array_equal(got.final, _bake(radius, depth, _tracks()).final)
