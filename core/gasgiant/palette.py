"""The particles' colours: from a palette image, six cube-face images or the latitude colour ramp."""

from __future__ import annotations

import math

import numpy as np

from .cube import dir_to_face_uv
from .field import to_band_frame
from .params import GasGiantParams


def _ramp_colors(t: np.ndarray, ramp) -> np.ndarray:
    stops = np.array([s for s, _ in ramp], dtype=np.float64)
    cols = np.array([c for _, c in ramp], dtype=np.float64).reshape(len(ramp), -1)[:, :3]
    order = np.argsort(stops, kind="stable")
    stops, cols = stops[order], cols[order]
    out = np.empty((len(t), 3), dtype=np.float32)
    for c in range(3):
        out[:, c] = np.interp(t, stops, cols[:, c])
    return out


def colors_at(p: np.ndarray, params: GasGiantParams) -> np.ndarray:
    """(n, 3) float32 start colours at unit directions p: palette image (sinusoidal/stripes/plain) or latitude
    ramp. Latitudes and longitudes are the bands' (turned with vertical bands); ``PLAIN`` lays the whole image on
    each cube face (gaseous-giganticus -P: seams at the cube edges are expected)."""
    if params.palette_cube is not None:
        cube = np.asarray(params.palette_cube)
        h, w = cube.shape[1:3]
        face, fu, fv = dir_to_face_uv(np.asarray(p, dtype=np.float64))
        row = np.clip(((fv + 1.0) * 0.5 * h).astype(np.int64), 0, h - 1)
        col = np.clip(((fu + 1.0) * 0.5 * w).astype(np.int64), 0, w - 1)
        return np.asarray(cube[face, row, col, :3], dtype=np.float32)
    q = to_band_frame(np.asarray(p), params)
    lat = np.arcsin(np.clip(q[:, 2], -1.0, 1.0))
    t = lat / math.pi + 0.5  # 0 south pole .. 1 north pole
    if params.palette is None:
        return _ramp_colors(t, params.ramp)
    pal = np.asarray(params.palette)
    h, w = pal.shape[:2]
    row = np.clip(((1.0 - t) * h).astype(np.int64), 0, h - 1)  # image row 0 = top = north
    if params.mapping == "PLAIN":
        _, fu, fv = dir_to_face_uv(np.asarray(p, dtype=np.float64))
        row = np.clip(((fv + 1.0) * 0.5 * h).astype(np.int64), 0, h - 1)
        col = np.clip(((fu + 1.0) * 0.5 * w).astype(np.int64), 0, w - 1)
    elif params.mapping == "STRIPES":
        col = np.full(len(p), w // 2, dtype=np.int64)
    else:
        # sinusoidal, mirrored at the back (|longitude|) so the wrap is continuous
        lon = np.arctan2(q[:, 1], q[:, 0])
        x = 0.5 + 0.5 * np.cos(lat) * (np.abs(lon) / math.pi * 2.0 - 1.0)
        col = np.clip((x * w).astype(np.int64), 0, w - 1)
    return np.asarray(pal[row, col, :3], dtype=np.float32)
