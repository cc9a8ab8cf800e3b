"""The trail stamp of one actor over one frame, and the trail state it updates (the module docstring of
``core.snow`` has the formulas)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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


def stamp_profile(u, depth: float | np.ndarray = 1.0, rim_height=0.35, rim_width=0.5):
    """(down, rim, cover) of a stamp at normalised distance ``u = d / radius`` (no vertical fade)."""
    u = np.asarray(u, dtype=np.float64)
    cover = np.maximum(0.0, 1.0 - u * u)
    q = np.maximum(0.0, 1.0 - ((u - 1.0) / rim_width) ** 2)
    rim = rim_height * depth * q * q
    return depth * cover, rim, cover


def reach(radius, rim_width) -> np.ndarray:
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


def vertical_fade(h, radius, fade_height):
    """Weight of a stamp whose actor bottom is ``h`` above the snow surface (negative: inside the snow)."""
    h = np.asarray(h, dtype=np.float64)
    beyond = np.maximum(np.maximum(h, -h - 2.0 * radius), 0.0)
    return np.clip(1.0 - beyond / fade_height, 0.0, 1.0)


def stamp_points(points, prev, cur, radius, depth, params: StampParams):
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


def trail_update(down, rim, down_s, rim_s, coverw, dep, keep, occluded=None, occluder_depth=0.0):
    """Persistence: one frame of the trail state. Returns (down', rim')."""
    kept_down = keep * down
    new_down = np.maximum(kept_down, down_s)
    inside = np.clip(1.0 - kept_down / np.maximum(dep, 1e-12), 0.0, 1.0)
    new_rim = np.maximum(keep * rim * (1.0 - coverw), rim_s * inside)
    if occluded is not None:
        new_down = np.where(occluded, np.maximum(new_down, occluder_depth), new_down)
        new_rim = np.where(occluded, 0.0, new_rim)
    return new_down, new_rim


def simulate_points(points, tracks, radius, depth, params: StampParams, occluded=None, occluder_depth=0.0):
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
