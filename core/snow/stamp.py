"""The trail stamp of one actor over one frame, and the trail state it updates (the module docstring of
``core.snow`` has the formulas)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .base import SnowError


# --- stamp ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StampParams:
    rim_height: float = 0.35   # rim peak, as a fraction of the actor's depth
    rim_width: float = 0.5     # rim half-width, as a fraction of the actor's radius
    fade_height: float = 0.5   # vertical fade distance (scene units)
    refill_rate: float = 0.0   # per second: ~e^-rate of a trail is left after a second (0 = stay)
    fps: float = 24.0

    def validate(self) -> "StampParams":
        for name in ("rim_height", "rim_width", "fade_height", "refill_rate", "fps"):
            v = float(getattr(self, name))
            if not math.isfinite(v) or v < 0:
                raise SnowError(f"Snow {name} is {v}: use a finite number of 0 or more")
        if self.rim_width <= 0 or self.fade_height <= 0 or self.fps <= 0:
            raise SnowError("Snow rim_width, fade_height and fps must be greater than 0")
        return self

    @property
    def keep(self) -> float:
        return float(np.clip(1.0 - self.refill_rate / self.fps, 0.0, 1.0))


Floats = NDArray[np.float64]
Actors = tuple[Sequence[Hashable], ArrayLike, ArrayLike, ArrayLike]  # (keys, bottom points (A, 3), radii, depths)


def stamp_profile(u: ArrayLike, depth: float | np.ndarray = 1.0, rim_height: float = 0.35,
                  rim_width: float = 0.5) -> tuple[Floats, Floats, Floats]:
    """(down, rim, cover) of a stamp at normalised distance ``u = d / radius`` (no vertical fade)."""
    u = np.asarray(u, dtype=np.float64)
    cover = np.maximum(0.0, 1.0 - u * u)
    q = np.maximum(0.0, 1.0 - ((u - 1.0) / rim_width) ** 2)
    rim = rim_height * depth * q * q
    return depth * cover, rim, cover


def reach(radius: ArrayLike, rim_width: float) -> Floats:
    """Distance from the path beyond which a stamp does nothing."""
    return np.asarray(radius, dtype=np.float64) * (1.0 + rim_width)


def _segment_closest(pxy, a, b):
    """t in [0, 1] and XY distance from points (..., 2) to the segment a -> b (each (2,) or (3,))."""
    ab = np.asarray(b[:2], dtype=np.float64) - np.asarray(a[:2], dtype=np.float64)
    ap0 = pxy[..., 0] - a[0]
    ap1 = pxy[..., 1] - a[1]
    den = ab[0] * ab[0] + ab[1] * ab[1]
    if den > 1e-20:
        t = np.clip((ap0 * ab[0] + ap1 * ab[1]) / den, 0.0, 1.0)
    else:
        t = np.zeros_like(ap0)
    dx = ap0 - t * ab[0]
    dy = ap1 - t * ab[1]
    return t, np.sqrt(dx * dx + dy * dy)


def vertical_fade(h: ArrayLike, radius: ArrayLike, fade_height: float) -> Floats:
    """Weight of a stamp whose actor bottom is ``h`` above the snow surface (negative: inside the snow)."""
    h = np.asarray(h, dtype=np.float64)
    beyond = np.maximum(np.maximum(h, -h - 2.0 * np.asarray(radius, dtype=np.float64)), 0.0)
    return np.clip(1.0 - beyond / fade_height, 0.0, 1.0)


def stamp_points(points: ArrayLike, prev: ArrayLike, cur: ArrayLike, radius: ArrayLike, depth: ArrayLike,
                 params: StampParams) -> tuple[Floats, Floats, Floats, Floats]:
    """One frame's stamp at arbitrary points (N, 3) (their z = the snow surface at rest).

    prev, cur: (A, 3) actor bottom points at the previous and this frame; radius, depth: (A,).
    Returns (down_s, rim_s, coverw, dep) arrays (N,): coverw = cover * vertical fade, dep = the stamping
    actor's depth (0 where none).
    """
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    prev = np.asarray(prev, dtype=np.float64).reshape(-1, 3)
    cur = np.asarray(cur, dtype=np.float64).reshape(-1, 3)
    n = p.shape[0]
    best_d = np.full(n, np.inf)
    best_i = np.full(n, -1, dtype=np.int64)
    best_t = np.zeros(n)
    pxy = p[:, :2]
    for i in range(prev.shape[0]):  # loop over actors (few), vectorised over points
        t, d = _segment_closest(pxy, prev[i], cur[i])
        better = d < best_d
        best_d = np.where(better, d, best_d)
        best_i = np.where(better, i, best_i)
        best_t = np.where(better, t, best_t)
    return _stamp_from_nearest(p[:, 2], best_i, best_t, best_d, prev, cur, radius, depth, params)


def _stamp_from_nearest(surface_z, idx, t, d, prev, cur, radius, depth, params):
    radius = np.asarray(radius, dtype=np.float64).reshape(-1)
    depth = np.asarray(depth, dtype=np.float64).reshape(-1)
    valid = idx >= 0
    i = np.where(valid, idx, 0)
    if radius.size == 0:
        z = np.zeros_like(d)
        return z, z.copy(), z.copy(), z.copy()
    r = radius[i]
    dep = depth[i]
    u = np.where(valid, d / np.maximum(r, 1e-12), np.inf)
    down, rim, cover = stamp_profile(np.where(np.isfinite(u), u, 1e9), dep, params.rim_height, params.rim_width)
    zc = prev[i, 2] + t * (cur[i, 2] - prev[i, 2])
    w = vertical_fade(zc - surface_z, r, params.fade_height)
    w = np.where(valid & np.isfinite(surface_z), w, 0.0)
    return down * w, rim * w, cover * w, np.where(valid, dep, 0.0)


def trail_update(down: ArrayLike, rim: ArrayLike, down_s: ArrayLike, rim_s: ArrayLike, coverw: ArrayLike,
                 dep: ArrayLike, keep: float, occluded: ArrayLike | None = None,
                 occluder_depth: ArrayLike = 0.0) -> tuple[Floats, Floats]:
    """Persistence: one frame of the trail state. Returns (down', rim')."""
    down, rim, rim_s, coverw = (np.asarray(v, dtype=np.float64) for v in (down, rim, rim_s, coverw))
    kept_down = keep * down
    new_down = np.maximum(kept_down, down_s)
    inside = np.clip(1.0 - kept_down / np.maximum(dep, 1e-12), 0.0, 1.0)
    new_rim = np.maximum(keep * rim * (1.0 - coverw), rim_s * inside)
    if occluded is not None:
        new_down = np.where(occluded, np.maximum(new_down, occluder_depth), new_down)
        new_rim = np.where(occluded, 0.0, new_rim)
    return new_down, new_rim


def simulate_points(points: ArrayLike, tracks: ArrayLike, radius: ArrayLike, depth: ArrayLike, params: StampParams,
                    occluded: ArrayLike | None = None, occluder_depth: ArrayLike = 0.0) -> tuple[Floats, Floats]:
    """Trail state at points after every frame of ``tracks`` (F, A, 3): what the live trails show at the last
    frame. The first frame stamps with prev = cur (the simulation's first step). Returns (down, rim)."""
    params.validate()
    tracks = np.asarray(tracks, dtype=np.float64)
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    down = np.zeros(p.shape[0])
    rim = np.zeros(p.shape[0])
    for f in range(tracks.shape[0]):
        prev = tracks[max(f - 1, 0)]
        ds, rs, cw, dep = stamp_points(p, prev, tracks[f], radius, depth, params)
        down, rim = trail_update(down, rim, ds, rs, cw, dep, params.keep, occluded, occluder_depth)
    return down, rim


# --- incremental trail state ----------------------------------------------------------------------------

class TrailState:
    """``simulate_points`` advanced one frame at a time at fixed points, touching only the points a path can reach
    this frame (the others only refill), with checkpoints so that an earlier frame is recomputed exactly.

    The points are bucketed once into a ``cells`` x ``cells`` table over their XY bounds; a frame's stamp runs on
    the points of the cells within the largest actor reach of a path, each point taking the nearest of the paths
    whose cells it is in (``stamp_near``), which gives the same numbers as ``stamp_points`` at every point: beyond
    the reach a stamp is 0 and ``trail_update`` only refills. A frame's cost is the points near this frame's paths
    (plus one multiply of the whole state when trails refill), not the trail history; ``changed`` lists the points
    the last step changed (None: every point, when trails refill or after a seek).

    ``step(frame, keys, cur, radius, depth)`` takes the actors' bottom points at ``frame``; an actor's previous
    point is its point (by key) at the frame stepped before, and a new actor starts where it is (as the live
    trails' simulation matches actors by key). The first step stamps with prev = cur. ``seek(frame)`` goes back
    to a frame stepped before: the state of the nearest checkpoint at or before it, and the recorded actors of
    the frames after it replayed. Stepping a frame that is not the next one drops what was recorded after it.
    """

    def __init__(self, points: ArrayLike, params: StampParams, cells: int = 128, checkpoint_every: int = 25) -> None:
        params.validate()
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if checkpoint_every < 1 or cells < 1:
            raise SnowError("TrailState needs cells and checkpoint_every of 1 or more")
        self.points, self.params, self.cells, self.every = p, params, int(cells), int(checkpoint_every)
        self._best, self._best_seg = np.zeros(0), np.zeros(0, dtype=np.int64)  # stamp_near's scratch, per point
        self.lo = p[:, :2].min(0) if p.shape[0] else np.zeros(2)
        ext = (p[:, :2].max(0) - self.lo) if p.shape[0] else np.zeros(2)
        self.size = max(float(ext.max()) / self.cells, 1e-9)
        cell = self._cell_xy(p[:, 0], p[:, 1])
        cell = cell[1] * self.cells + cell[0]
        self.order = np.argsort(cell, kind="stable")
        self.starts = np.searchsorted(cell[self.order], np.arange(self.cells * self.cells + 1))
        self.reset()

    def _cell_xy(self, x, y):
        cx = np.clip(np.floor((np.asarray(x) - self.lo[0]) / self.size), 0, self.cells - 1).astype(np.int64)
        cy = np.clip(np.floor((np.asarray(y) - self.lo[1]) / self.size), 0, self.cells - 1).astype(np.int64)
        return cx, cy

    def reset(self) -> None:
        """Back to no trail (before the first step)."""
        n = self.points.shape[0]
        self.down, self.rim = np.zeros(n), np.zeros(n)
        self.frame = None
        self.changed = None  # the points whose state the last step changed (None: all of them)
        self.last: dict = {}      # key -> bottom point at self.frame
        self.record: dict = {}    # frame -> (keys, cur, radius, depth) of every frame stepped since the start
        self.saved: dict = {}     # frame -> (down, rim, last) checkpoints
        self.source: dict = {}    # frame -> the actors ``play`` stepped it with (the very object)

    def near(self, a: Floats, b: Floats, reach: float) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(point indices, segment of each) of the points of the cells that the XY box of each segment
        a[i] -> b[i] (arrays (S, 3)), grown by ``reach``, overlaps: a superset of the points within ``reach`` of
        each segment, a point listed once per segment."""
        x0, y0 = self._cell_xy(np.minimum(a[:, 0], b[:, 0]) - reach, np.minimum(a[:, 1], b[:, 1]) - reach)
        x1, y1 = self._cell_xy(np.maximum(a[:, 0], b[:, 0]) + reach, np.maximum(a[:, 1], b[:, 1]) + reach)
        rows = y1 - y0 + 1
        seg = np.repeat(np.arange(a.shape[0]), rows)                    # one entry per (segment, row of cells)
        row = y0[seg] + np.arange(seg.size) - np.repeat(np.cumsum(rows) - rows, rows)
        lo, hi = self.starts[row * self.cells + x0[seg]], self.starts[row * self.cells + x1[seg] + 1]
        n = hi - lo
        first = np.repeat(lo - (np.cumsum(n) - n), n)
        return self.order[first + np.arange(int(n.sum()))], np.repeat(seg, n)

    def stamp_near(self, prev: Floats, cur: Floats, radius: Floats, depth: Floats
                   ) -> tuple[NDArray[np.int64], Floats, Floats, Floats, Floats]:
        """``stamp_points`` at the points near a path: (indices, down_s, rim_s, coverw, dep). Each actor's
        distance is measured only at the points within the largest reach of its path; a point farther than that
        from every path is stamped by none, so the nearest path, and the stamp, are those of ``stamp_points``."""
        if radius.size == 0:
            idx = np.zeros(0, dtype=np.int64)
            return idx, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)
        j, seg = self.near(prev, cur, float(reach(radius, self.params.rim_width).max()))
        # the distances of every (point, segment) pair, as _segment_closest measures them
        a, b = prev[seg, :2], cur[seg, :2]
        ab0, ab1 = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1]
        ap0, ap1 = self.points[j, 0] - a[:, 0], self.points[j, 1] - a[:, 1]
        den = ab0 * ab0 + ab1 * ab1
        moved = den > 1e-20
        t = np.where(moved, np.clip((ap0 * ab0 + ap1 * ab1) / np.where(moved, den, 1.0), 0.0, 1.0), 0.0)
        dx, dy = ap0 - t * ab0, ap1 - t * ab1
        d = np.sqrt(dx * dx + dy * dy)
        # per point its nearest segment, the first of equal distances in actor order (as stamp_points): the
        # pairs come segment after segment, each point once per segment, so the segments are taken in turn
        # (no sort), each replacing the nearest so far where it is strictly nearer
        n = self.points.shape[0]
        if self._best.shape[0] != n:
            self._best, self._best_seg = np.full(n, np.inf), np.full(n, -1, dtype=np.int64)
        best, best_seg = self._best, self._best_seg
        bounds = np.searchsorted(seg, np.arange(prev.shape[0] + 1))
        for i in range(prev.shape[0]):
            js, ds = j[bounds[i]:bounds[i + 1]], d[bounds[i]:bounds[i + 1]]
            nearer = ds < best[js]
            best[js[nearer]] = ds[nearer]
            best_seg[js[nearer]] = i
        pick = np.flatnonzero(best_seg[j] == seg)  # one pair a point: (point, segment) pairs are unique
        idx = j[pick]
        best[idx] = np.inf  # ready for the next frame
        best_seg[idx] = -1
        down_s, rim_s, coverw, dep = _stamp_from_nearest(self.points[idx, 2], seg[pick], t[pick], d[pick], prev, cur,
                                                         radius, depth, self.params)
        return idx, down_s, rim_s, coverw, dep

    def step(self, frame: int, keys: Iterable[Hashable], cur: ArrayLike, radius: ArrayLike,
             depth: ArrayLike) -> None:
        """Advance to ``frame`` with the actors ``keys`` at bottom points ``cur`` (A, 3), radii and depths (A,)."""
        if self.frame is not None and frame <= self.frame:
            raise SnowError(f"TrailState is at frame {self.frame}: seek back before stepping frame {frame}")
        for book in (self.record, self.saved):  # what was recorded after the current frame is another history
            for f in [f for f in book if self.frame is None or f > self.frame]:
                del book[f]
        cur = np.asarray(cur, dtype=np.float64).reshape(-1, 3)
        radius = np.asarray(radius, dtype=np.float64).reshape(-1)
        depth = np.asarray(depth, dtype=np.float64).reshape(-1)
        keys = list(keys)
        self._advance(frame, keys, cur, radius, depth)
        self.record[frame] = (keys, cur, radius, depth)
        if len(self.record) % self.every == 1 or self.every == 1:
            self.saved[frame] = (self.down.copy(), self.rim.copy(), dict(self.last))

    def _advance(self, frame, keys, cur, radius, depth):
        # an actor whose place or size is not a number (a NaN or infinite transform) is not there at this frame:
        # it stamps nothing, and its path starts again where it next is
        there = np.isfinite(cur).all(axis=1) & np.isfinite(radius) & np.isfinite(depth)
        if not there.all():
            keys, cur, radius, depth = [k for k, t in zip(keys, there) if t], cur[there], radius[there], depth[there]
        prev = np.array([self.last.get(k, c) for k, c in zip(keys, cur)], dtype=np.float64).reshape(-1, 3)
        idx, ds, rs, cw, dep = self.stamp_near(prev, cur, radius, depth)
        keep = self.params.keep
        update = trail_update(self.down[idx], self.rim[idx], ds, rs, cw, dep, keep) if idx.size else None
        if keep < 1.0:
            self.down *= keep
            self.rim *= keep
        if update is not None:
            self.down[idx], self.rim[idx] = update
        self.changed = idx if keep == 1.0 else None  # the points whose state changed (None: all of them)
        self.frame = frame
        self.last = dict(zip(keys, cur))

    def seek(self, frame: int) -> bool:
        """Go back to ``frame`` (a frame stepped since the start): the latest checkpoint at or before it, then the
        recorded frames up to it replayed. Returns False (nothing changed) when ``frame`` was never stepped."""
        if frame not in self.record:
            return False
        if frame == self.frame:
            return True
        base = max(f for f in self.saved if f <= frame)
        down, rim, last = self.saved[base]
        self.down, self.rim, self.last, self.frame = down.copy(), rim.copy(), dict(last), base
        for f in sorted(f for f in self.record if base < f <= frame):
            self._advance(f, *self.record[f])
        self.changed = None
        return True

    def play(self, frames: Sequence[int], actors: Mapping[int, Actors]) -> None:
        """Bring the state to the last of ``frames`` (increasing) as stepping each of them in turn, from no trail,
        with ``actors[frame]`` = (keys, bottom points, radii, depths) would: the longest run of ``frames`` that an
        earlier ``play`` stepped with the very same ``actors`` objects is sought to (``seek``: a checkpoint and a
        replay), only the rest is stepped. Frames stepped after the last of ``frames`` stay recorded (scrubbing
        back and forth seeks) unless one of them must be stepped again. ``frames`` empty: no trail.

        ``changed`` then lists the points that changed since before the call: none (an empty array) when the
        state was at that frame already, the step's when one frame was stepped from where it was, else None (all
        of them)."""
        rec = sorted(self.record)
        k = 0
        while (k < len(rec) and k < len(frames) and rec[k] == frames[k]
               and self.source.get(rec[k]) is actors[frames[k]]):
            k += 1
        if k == 0:
            moved = self.frame is not None
            self.reset()
        elif frames[k - 1] == self.frame:
            moved = False
        else:
            moved = True
            if not self.seek(frames[k - 1]):  # (recorded: cannot fail)
                raise SnowError(f"TrailState could not go back to frame {frames[k - 1]}")
        for f in frames[k:]:
            self.step(f, *actors[f])
            self.source = {g: a for g, a in self.source.items() if g in self.record}
            self.source[f] = actors[f]
        stepped = len(frames) - k
        if moved or stepped > 1:
            self.changed = None
        elif stepped == 0:
            self.changed = np.zeros(0, dtype=np.int64)
