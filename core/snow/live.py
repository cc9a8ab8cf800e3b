"""The live interaction buffer: the bake's fields (``baking.BufferStepper``) brought to any frame on demand, for a
frame handler that shows the buffer while the timeline plays (the grass push reads it).

``LiveBuffer.at(frame)`` gives the buffer of that frame as the bake would have written it (the same stepping, so
equal to the bake's image of that frame). The next frame costs one step; a frame behind the one shown (scrubbing
back) restarts from the last checkpoint at or before it and replays from there, as ``TrailState`` does for the
live trails. Checkpoints are taken every ``checkpoint_every`` frames while stepping (their number stays under
``MAX_CHECKPOINTS``: each holds seven float32 fields of the buffer's size). Before the first frame the buffer is
empty (``started`` False); after the last frame the last one holds (as a baked sequence shows it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .baking import BufferStepper, _checked_tracks
from .buffer import BufferParams, HeightField
from .stamp import StampParams

MAX_CHECKPOINTS = 16


class LiveBuffer:
    """The interaction buffer at any frame of ``tracks`` (F, A, 3 actors' bottom points, one row per frame from
    ``frame_start``), ``radius`` and ``depth`` (A,) or (F, A): the arguments of ``baking.bake_job``, checked the same
    way (``SnowError`` saying what to do)."""

    def __init__(self, tracks: npt.ArrayLike, radius: npt.ArrayLike, depth: npt.ArrayLike, stamp: StampParams,
                 buf: BufferParams, frame_start: int = 1,
                 pivot_track: np.ndarray | Sequence[npt.ArrayLike] | None = None, surface: HeightField | None = None,
                 occluder_tris: np.ndarray | Sequence[npt.ArrayLike] | None = None, checkpoint_every: int = 0):
        stamp.validate()
        buf.validate()
        tracks_, radius_, depth_, _ = _checked_tracks(tracks, radius, depth, buf, pivot_track, 1.0)
        self.frame_start = int(frame_start)
        self.n_frames = int(tracks_.shape[0])
        self.buf = buf
        self.stepper = BufferStepper(tracks_, radius_, depth_, stamp, buf, pivot_track, surface, occluder_tris)
        self.every = int(checkpoint_every) if checkpoint_every > 0 else max(
            8, -(-self.n_frames // MAX_CHECKPOINTS))
        self.checkpoints: dict[int, tuple] = {}  # frame index -> BufferStepper.snapshot() after stepping it
        self.steps = 0  # frames stepped so far (what a caller can measure replays by)

    @property
    def frame_end(self) -> int:
        return self.frame_start + self.n_frames - 1

    def index(self, frame: int) -> int:
        """The frame index the buffer of ``frame`` is (clamped to the last; -1 before the first)."""
        i = int(frame) - self.frame_start
        return -1 if i < 0 else min(i, self.n_frames - 1)

    def _go(self, i: int) -> None:
        st = self.stepper
        if st.index > i:
            back = [k for k in self.checkpoints if k <= i]
            if back:
                st.restore(self.checkpoints[max(back)])
            else:
                st.reset()
        while st.index < i:
            st.step()
            self.steps += 1
            if st.index % self.every == self.every - 1 and st.index not in self.checkpoints:
                self.checkpoints[st.index] = st.snapshot()

    def at(self, frame: int) -> np.ndarray | None:
        """(res, res, 4) float32 RGBA of ``frame`` (row 0 = min world y), or None before the first frame."""
        i = self.index(frame)
        if i < 0:
            return None
        self._go(i)
        return self.stepper.image()

    def origin(self, frame: int) -> tuple[float, float]:
        """The window's lower-left world XY at ``frame`` (the first frame's before it)."""
        self._go(max(self.index(frame), 0))
        origin = self.stepper.origin
        assert origin is not None  # stepped at least once
        return float(origin[0]), float(origin[1])
