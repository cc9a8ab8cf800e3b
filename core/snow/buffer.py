"""The interaction buffer: its window, its grass oscillator, the top-down height field of triangles, sampling
it, the engines' sampling of it, and the JSON that describes a bake."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .. import bend_engines
from .base import FRAMINGS, MAX_RESOLUTION, SnowError
from .stamp import StampParams

# --- interaction buffer -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BufferParams:
    resolution: int = 256
    size: float = 20.0                 # world size of the (square) buffer window
    framing: str = "AREA"              # AREA: fixed window; FOLLOW: follows a pivot, snapped to whole texels
    origin: tuple = (0.0, 0.0)         # AREA: world XY of the window's lower-left corner
    edge_fade: float = 0.1             # FOLLOW: fraction of the window over which content fades at the edge
    grass_frequency: float = 1.5       # Hz of the grass wobble
    grass_damping: float = 0.25        # damping ratio of the wobble (0..1)
    grass_recover: float = 1.0         # fraction of the grass push-down recovering per second
    ripple_speed: float = 1.0          # scene units per second
    ripple_damping: float = 1.0        # amplitude decay per second (exponential rate)
    occluder_depth: float = 0.0        # how far occluders hold the snow down (R = -occluder_depth)

    def validate(self) -> "BufferParams":
        if not isinstance(self.resolution, (int, np.integer)) or self.resolution < 1:
            raise SnowError(f"Buffer resolution {self.resolution!r} must be at least 1 texel: use e.g. 512")
        if self.resolution > MAX_RESOLUTION:
            raise SnowError(f"Buffer resolution {self.resolution} is enormous (limit {MAX_RESOLUTION}): "
                            f"use {MAX_RESOLUTION} or less")
        if not (math.isfinite(self.size) and self.size > 0):
            raise SnowError(f"Buffer size {self.size} must be a positive world size")
        if self.framing not in FRAMINGS:
            raise SnowError(f"Unknown framing {self.framing!r}: use one of {', '.join(FRAMINGS)}")
        if not 0.0 <= self.edge_fade <= 0.5:
            raise SnowError(f"Edge fade {self.edge_fade} must be between 0 and 0.5 of the window")
        for name in ("grass_frequency", "grass_damping", "grass_recover", "ripple_speed", "ripple_damping"):
            v = float(getattr(self, name))
            if not math.isfinite(v) or v < 0:
                raise SnowError(f"Buffer {name} {v} must be a finite number of 0 or more")
        return self

    @property
    def texel(self) -> float:
        return self.size / self.resolution


def snap_origin(pivot_xy: npt.ArrayLike, size: float, texel: float) -> npt.NDArray[np.float64]:
    """Lower-left corner of a window centred on the pivot, snapped to whole texels (no jitter)."""
    p = np.asarray(pivot_xy, dtype=np.float64)[:2]
    return np.floor((p - 0.5 * size) / texel) * texel


def edge_fade_mask(resolution: int, edge_fade: float) -> npt.NDArray[np.float32]:
    """(res, res) weights falling to 0 at the window edge over ``edge_fade`` of its size."""
    if edge_fade <= 0:
        return np.ones((resolution, resolution), dtype=np.float32)
    c = np.arange(resolution) / max(resolution - 1, 1)   # the outermost texels are 0
    e = np.minimum(c, 1.0 - c) / edge_fade
    e = np.clip(e, 0.0, 1.0)
    e = e * e * (3.0 - 2.0 * e)
    return np.outer(e, e).astype(np.float32)


def _shift(arr, dx, dy):
    """Content moved by (-dx, -dy) texels (window moved by +dx, +dy); new texels are 0."""
    if dx == 0 and dy == 0:
        return arr
    out = np.zeros_like(arr)
    h, w = arr.shape[-2:]
    if abs(dx) >= w or abs(dy) >= h:
        return out
    src_y = slice(max(dy, 0), h + min(dy, 0))
    dst_y = slice(max(-dy, 0), h + min(-dy, 0))
    src_x = slice(max(dx, 0), w + min(dx, 0))
    dst_x = slice(max(-dx, 0), w + min(-dx, 0))
    out[..., dst_y, dst_x] = arr[..., src_y, src_x]
    return out


def wobble_peak(zeta: float) -> float:
    """The first swing of x'' + 2 zeta w x' + w^2 x = 0 started at rest with the velocity w: the kick an actor's
    nudge gives the grass is divided by it, so a full nudge swings the wobble (G) out to 1, the write-up's range
    (it then decays the other way, to about -0.45 at the default damping of 0.25)."""
    z = float(zeta)
    if z < 1.0 - 1e-9:
        r = math.sqrt(1.0 - z * z)
        return math.exp(-z * math.atan2(r, z) / r)
    if z <= 1.0 + 1e-9:
        return math.exp(-1.0)
    s = math.sqrt(z * z - 1.0)
    r1, r2 = -z + s, -z - s
    t = math.log(r2 / r1) / (r1 - r2)
    return (math.exp(r1 * t) - math.exp(r2 * t)) / (2.0 * s)


def _oscillator_matrix(freq, zeta, dt):
    """Exact one-step transition of x'' + 2 zeta w x' + w^2 x = 0 for state (x, v): exp(A dt) of the 2x2 system
    matrix A in closed form, exp(M) = e^mu (cosh(d) I + sinh(d)/d (M - mu I)) with mu = tr(M)/2 and
    d^2 = mu^2 - det(M) (cos and sin for d^2 < 0). Unlike an eigen-decomposition it holds at critical damping
    (zeta = 1), where A has a single eigenvector and the decomposition gave whatever rounding made of it."""
    w = 2.0 * math.pi * freq
    m = np.array([[0.0, 1.0], [-w * w, -2.0 * zeta * w]]) * dt
    mu = 0.5 * (m[0, 0] + m[1, 1])
    d2 = mu * mu - (m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0])
    if abs(d2) < 1e-12:
        c, sd = 1.0 + d2 / 2.0, 1.0 + d2 / 6.0
    elif d2 > 0:
        d = math.sqrt(d2)
        c, sd = math.cosh(d), math.sinh(d) / d
    else:
        d = math.sqrt(-d2)
        c, sd = math.cos(d), math.sin(d) / d
    return math.exp(mu) * (c * np.eye(2) + sd * (m - mu * np.eye(2)))


class HeightField:
    """A top-down height map (e.g. the snow surface at rest) sampled at any XY (nearest texel, NaN outside)."""

    def __init__(self, origin: npt.ArrayLike, texel: float, heights: npt.ArrayLike):
        self.origin = np.asarray(origin, dtype=np.float64)[:2]
        self.texel = float(texel)
        self.heights = np.asarray(heights, dtype=np.float64)

    def sample(self, x: npt.ArrayLike, y: npt.ArrayLike) -> npt.NDArray[np.float64]:
        h, w = self.heights.shape
        ix = np.floor((np.asarray(x) - self.origin[0]) / self.texel).astype(np.int64)
        iy = np.floor((np.asarray(y) - self.origin[1]) / self.texel).astype(np.int64)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        out = np.full(np.broadcast(ix, iy).shape, np.nan)
        out[inside] = self.heights[iy[inside], ix[inside]]
        return out


def rasterize_top(tris: npt.ArrayLike, origin: Sequence[float] | np.ndarray, texel: float, shape: tuple[int, int],
                  values: npt.ArrayLike | None = None
                 ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Top-down rasterisation of triangles (T, 3, 3) on a grid of texel centres.

    Returns (z, index, bary): the highest z of any triangle over each texel centre (NaN where none), the
    triangle index there (-1) and the barycentric weights (H, W, 3). Vectorised over (triangle, texel) pairs.
    """
    tris = np.asarray(tris, dtype=np.float64).reshape(-1, 3, 3)
    h, w = shape
    zbuf = np.full(h * w, -np.inf)
    ibuf = np.full(h * w, -1, dtype=np.int64)
    bary_out = np.zeros((h * w, 3))
    if tris.shape[0] == 0:
        return np.full((h, w), np.nan), ibuf.reshape(h, w), bary_out.reshape(h, w, 3)
    ox, oy = float(origin[0]), float(origin[1])
    xs = tris[:, :, 0]
    ys = tris[:, :, 1]
    # texel centre j sits at ox + (j + 0.5) texel
    ix0 = np.maximum(np.ceil((xs.min(1) - ox) / texel - 0.5 - 1e-6), 0).astype(np.int64)
    ix1 = np.minimum(np.floor((xs.max(1) - ox) / texel - 0.5 + 1e-6), w - 1).astype(np.int64)
    iy0 = np.maximum(np.ceil((ys.min(1) - oy) / texel - 0.5 - 1e-6), 0).astype(np.int64)
    iy1 = np.minimum(np.floor((ys.max(1) - oy) / texel - 0.5 + 1e-6), h - 1).astype(np.int64)
    nx = np.maximum(ix1 - ix0 + 1, 0)
    ny = np.maximum(iy1 - iy0 + 1, 0)
    counts = nx * ny
    total = int(counts.sum())
    if total == 0:
        return np.full((h, w), np.nan), ibuf.reshape(h, w), bary_out.reshape(h, w, 3)
    chunk = 4_000_000
    starts = np.concatenate([[0], np.cumsum(counts)])
    # split triangles into groups of about `chunk` pairs
    bounds = np.searchsorted(starts, np.arange(0, total, chunk), side="right") - 1
    bounds = np.unique(np.concatenate([bounds, [tris.shape[0]]]))
    for g0, g1 in zip(bounds[:-1], bounds[1:]):
        c = counts[g0:g1]
        tsel = np.repeat(np.arange(g0, g1), c)
        if tsel.size == 0:
            continue
        k = np.arange(tsel.size) - np.repeat(starts[g0:g1] - starts[g0], c)
        px = ix0[tsel] + k % nx[tsel]
        py = iy0[tsel] + k // nx[tsel]
        cx = ox + (px + 0.5) * texel
        cy = oy + (py + 0.5) * texel
        t = tris[tsel]
        x0, y0 = t[:, 0, 0], t[:, 0, 1]
        x1, y1 = t[:, 1, 0], t[:, 1, 1]
        x2, y2 = t[:, 2, 0], t[:, 2, 1]
        den = (y1 - y2) * (x0 - x2) + (x2 - x1) * (y0 - y2)
        ok = np.abs(den) > 1e-18
        den = np.where(ok, den, 1.0)
        l0 = ((y1 - y2) * (cx - x2) + (x2 - x1) * (cy - y2)) / den
        l1 = ((y2 - y0) * (cx - x2) + (x0 - x2) * (cy - y2)) / den
        l2 = 1.0 - l0 - l1
        eps = -1e-6
        inside = ok & (l0 >= eps) & (l1 >= eps) & (l2 >= eps)
        if not inside.any():
            continue
        z = l0 * t[:, 0, 2] + l1 * t[:, 1, 2] + l2 * t[:, 2, 2]
        cell = (py * w + px)[inside]
        z = z[inside]
        ti = tsel[inside]
        bary = np.stack([l0, l1, l2], axis=1)[inside]
        # highest z per cell: sort by (cell, z) and keep the last of each cell
        order = np.lexsort((z, cell))
        cell, z, ti, bary = cell[order], z[order], ti[order], bary[order]
        last = np.r_[cell[1:] != cell[:-1], True]
        cell, z, ti, bary = cell[last], z[last], ti[last], bary[last]
        better = z > zbuf[cell]
        cell, z, ti, bary = cell[better], z[better], ti[better], bary[better]
        zbuf[cell] = z
        ibuf[cell] = ti
        bary_out[cell] = bary
    zout = np.where(np.isfinite(zbuf), zbuf, np.nan).reshape(h, w)
    return zout, ibuf.reshape(h, w), bary_out.reshape(h, w, 3)


def sample_buffer(buffer: npt.ArrayLike, origin: Sequence[float] | np.ndarray, texel: float, xy: npt.ArrayLike,
                  channel: int = 0) -> np.ndarray:
    """Bilinear sample of a buffer (res, res, 4) at world points (N, 2); texel centres at origin + (i+0.5)t."""
    b = np.asarray(buffer)[..., channel]
    h, w = b.shape
    fx = (np.asarray(xy)[:, 0] - origin[0]) / texel - 0.5
    fy = (np.asarray(xy)[:, 1] - origin[1]) / texel - 0.5
    fx = np.clip(fx, 0, w - 1)
    fy = np.clip(fy, 0, h - 1)
    x0 = np.minimum(np.floor(fx).astype(int), w - 2 if w > 1 else 0)
    y0 = np.minimum(np.floor(fy).astype(int), h - 2 if h > 1 else 0)
    x1 = np.minimum(x0 + 1, w - 1)
    y1 = np.minimum(y0 + 1, h - 1)
    tx = fx - x0
    ty = fy - y0
    return ((b[y0, x0] * (1 - tx) + b[y0, x1] * tx) * (1 - ty) + (b[y1, x0] * (1 - tx) + b[y1, x1] * tx) * ty)


def engine_sampling(world_size: float, unit_scale: float = 1.0) -> dict:
    """How each game engine samples the buffer with its own world positions: {engine: the engine's up, the
    engine units per Blender unit (the heights R and B times it), its texture-coordinate origin, and the vectors
    ``u_from_world`` / ``v_from_world`` such that ``uv = (dot(P, u_from_world), dot(P, v_from_world)) +
    uv_offset`` for an engine world position P, ``uv_offset`` per frame from ``engine_uv_offset``}.

    The image's top row is max Blender y (``write_exr``); Godot and Unreal put uv (0, 0) at an image's top-left
    corner, Unity at its bottom-left. Axes and units are those of ``bend_engines`` (the scene's
    ``unit_scale`` applies to FBX, not glTF)."""
    out = {}
    for engine, (matrix, *_rest) in bend_engines.ENGINES.items():
        m = np.asarray(matrix, dtype=np.float64)
        k = bend_engines.engine_scale(engine, unit_scale)
        bottom_up = engine == "UNITY"
        # Blender x = dot(m[:, 0], P) / k and y = dot(m[:, 1], P) / k for an engine position P
        out[engine] = {
            "export_format": bend_engines.ENGINES[engine][5],
            "units_per_blender_unit": k,
            "up": m[:, 2].tolist(),
            "uv_origin": "bottom-left" if bottom_up else "top-left",
            "u_from_world": (m[:, 0] / (k * world_size)).tolist(),
            "v_from_world": ((1.0 if bottom_up else -1.0) * m[:, 1] / (k * world_size)).tolist(),
        }
    return out


def engine_uv_offset(engine: str, origin: Sequence[float] | np.ndarray, world_size: float) -> list[float]:
    """The frame's ``uv_offset`` for ``engine_sampling``: u = (x - origin x) / size, and v = (y - origin y) /
    size from the bottom row (Unity) or (origin y + size - y) / size from the top row (Godot, Unreal)."""
    u0 = -float(origin[0]) / world_size
    if engine == "UNITY":
        return [u0, -float(origin[1]) / world_size]
    return [u0, float(origin[1]) / world_size + 1.0]


BUFFER_FORMAT = "envfx.snow.interaction_buffer"
BUFFER_VERSION = 1


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def read_buffer_metadata(path: str) -> dict:
    """The metadata a bake wrote (``buffer_metadata``), read back from ``path`` with the fields that drive the snow
    checked: format and version, ``world_size``, ``sequence``, and per frame ``frame``, ``origin`` and ``file``
    (a plain file name in the same folder). Raises SnowError saying what is wrong (a truncated or hand-edited
    file, another tool's file of that name); OSError when the file cannot be read."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnowError(f"it is not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != BUFFER_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise SnowError(f"it is not an EnvFX interaction buffer (format {found!r}, not {BUFFER_FORMAT!r})")
    if meta.get("version") != BUFFER_VERSION:
        raise SnowError(f"its version {meta.get('version')!r} is not {BUFFER_VERSION} (written by another EnvFX)")
    if not (_is_number(meta.get("world_size")) and meta["world_size"] > 0):
        raise SnowError(f"its world_size {meta.get('world_size')!r} is not a positive number")
    if not isinstance(meta.get("sequence"), bool):
        raise SnowError(f"its sequence {meta.get('sequence')!r} is not true or false")
    frames = meta.get("frames")
    if not isinstance(frames, list) or not frames:
        raise SnowError("it lists no frames")
    for i, f in enumerate(frames):
        ok = (isinstance(f, dict) and isinstance(f.get("frame"), int) and not isinstance(f["frame"], bool)
              and isinstance(f.get("origin"), list) and len(f["origin"]) == 2
              and all(_is_number(v) for v in f["origin"]))
        name = f.get("file") if isinstance(f, dict) else None
        if ok and "file" in f:
            ok = isinstance(name, str) and name not in ("", ".", "..") and os.path.basename(name) == name
        if not ok:
            raise SnowError(f"its frame entry {i} ({json.dumps(f)[:80]}) needs a whole frame number, an origin "
                            f"[x, y] and, if any, a file name in the same folder")
    return meta


def buffer_metadata(buf: BufferParams, stamp: StampParams, frame_start: int, origins: npt.ArrayLike,
                    frames: Sequence[int], files: Sequence[str], sequence: bool, unit_scale: float = 1.0) -> dict:
    """What a game needs to sample the buffer: world size, texel size, origin per frame, channel meaning, and
    for Godot, Unity and Unreal how to sample it with their own world positions (``engine_sampling``)."""
    origins = np.asarray(origins)
    engines = engine_sampling(float(buf.size), unit_scale)
    return {
        "format": BUFFER_FORMAT,
        "version": BUFFER_VERSION,
        "resolution": [int(buf.resolution), int(buf.resolution)],
        "world_size": float(buf.size),
        "texel_size": float(buf.texel),
        "framing": buf.framing,
        "edge_fade": float(buf.edge_fade) if buf.framing == "FOLLOW" else 0.0,
        "fps": float(stamp.fps),
        "frame_start": int(frame_start),
        "frame_end": int(frame_start + len(origins) - 1),
        "sequence": bool(sequence),
        "frames": [{"frame": int(frame_start + i), "origin": [float(o[0]), float(o[1])],
                    **({"file": files[frames.index(frame_start + i)]} if (frame_start + i) in frames else {}),
                    "uv_offset": {e: engine_uv_offset(e, o, float(buf.size)) for e in engines}}
                   for i, o in enumerate(origins)],
        "image_layout": "EXR rows run from max world y (top) to min world y (bottom); "
                        "column i covers world x origin + i * texel_size",
        "channels": {
            "R": "ground/snow height offset in scene units (negative pushed down, positive rim)",
            "G": "grass sway wobble (-1..1: a full nudge swings it to 1, then it decays)",
            "B": "water ripples: signed water-surface height in scene units (an actor pushes it down by half "
                 "its depth where it enters; damped rings spread from there)",
            "A": "grass push-down (0..1)",
        },
        "unit_scale": float(unit_scale),
        "engines": engines,
        "engine_uv": "uv = (dot(P, u_from_world), dot(P, v_from_world)) + frames[i].uv_offset[engine] for P the "
                     "engine's world position in its units (uv origin as uv_origin says); the heights R and B "
                     "times units_per_blender_unit along up",
    }
