"""The live interaction buffer (``core.snow.LiveBuffer``) gives at each frame the bake's image of that frame, played
forwards, scrubbed back (from a checkpoint), jumped ahead, before and after the baked frames, with a fixed and a
follow window, and refuses what the bake refuses."""

import math
from typing import Any

import numpy as np
import pytest

from core import snow


def _walk(n=40, actors=2, seed=1):
    rng = np.random.default_rng(seed)
    start = rng.uniform(-3, 3, (actors, 3)) * (1, 1, 0)
    vel = rng.uniform(-0.3, 0.3, (actors, 3)) * (1, 1, 0)
    return start[None] + np.arange(n)[:, None, None] * vel[None]


@pytest.mark.parametrize("framing", ["AREA", "FOLLOW"])
def test_live_buffer_equals_the_bake_at_every_frame_in_any_order(framing):
    tracks = _walk()
    radius, depth = [0.5, 0.7], [0.2, 0.3]
    stamp = snow.StampParams(fps=24.0)
    buf = snow.BufferParams(resolution=48, size=10.0, origin=(-5.0, -5.0), framing=framing)
    pivot = tracks[:, 0] if framing == "FOLLOW" else None
    baked = {}
    job = snow.bake_job(tracks, radius, depth, stamp, buf, frame_start=5, pivot_track=pivot)
    # the bake's frames, one by one, by its own stepping (the bake writes to files; here the stepper's images)
    stepper = snow.BufferStepper(tracks.astype(np.float64), np.broadcast_to(np.asarray(radius, float), (40, 2)),
                                 np.broadcast_to(np.asarray(depth, float), (40, 2)), stamp, buf, pivot)
    for i in range(40):
        stepper.step()
        assert stepper.origin is not None
        baked[5 + i] = (stepper.image(), tuple(stepper.origin))
    result = snow.bake(tracks, radius, depth, stamp, buf, frame_start=5, pivot_track=pivot)
    job.close()
    assert np.array_equal(result.final, baked[44][0])
    live = snow.LiveBuffer(tracks, radius, depth, stamp, buf, frame_start=5, pivot_track=pivot, checkpoint_every=8)
    assert live.at(4) is None and live.at(-100) is None
    order = list(range(5, 30)) + [29, 12, 13, 3, 38, 20, 44, 60, 5]
    for frame in order:
        got = live.at(frame)
        if frame < 5:
            assert got is None
            continue
        assert got is not None
        want, origin = baked[min(frame, 44)]
        assert np.abs(got - want).max() <= 1e-5, frame
        assert live.origin(frame) == pytest.approx(origin)
    assert np.abs(baked[20][0][..., 3]).max() > 0.5  # the actors do push-down the grass (A)


def test_scrubbing_back_replays_from_a_checkpoint_not_from_the_start():
    tracks = _walk(n=100, actors=1)
    live = snow.LiveBuffer(tracks, [0.5], [0.2], snow.StampParams(fps=24.0),
                           snow.BufferParams(resolution=16, size=10.0, origin=(-5.0, -5.0)), checkpoint_every=10)
    live.at(80)
    before = live.steps
    live.at(75)  # the checkpoint after frame index 69 (frame 70): 6 steps
    assert live.steps - before == 75 - 70
    live.at(76)
    assert live.steps - before == 75 - 70 + 1
    assert len(live.checkpoints) <= snow.live.MAX_CHECKPOINTS


@pytest.mark.parametrize("bad, what", [
    (dict(radius=[math.nan]), "radius"),
    (dict(tracks=np.zeros((0, 1, 3))), "frame range"),
    (dict(buf=snow.BufferParams(resolution=16, size=math.nan)), "Buffer size"),
    (dict(buf=snow.BufferParams(resolution=16, framing="FOLLOW")), "pivot"),
])
def test_bad_input_is_refused_as_the_bake_refuses_it(bad, what):
    args: dict[str, Any] = dict(tracks=_walk(n=5, actors=1), radius=[0.5], depth=[0.2],
                                stamp=snow.StampParams(fps=24.0), buf=snow.BufferParams(resolution=16, size=10.0))
    args.update(bad)
    with pytest.raises(snow.SnowError, match=what):
        snow.LiveBuffer(**args)
