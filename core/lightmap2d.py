"""2D light map (Tile Rider's top-down lighting): occupancy, per-light falloff with shadows and a jittered penumbra,
smoothing by downsampled copies or a blur, distance-map occlusion near walls, the light-circle buffer for a dirty
lens, and the dynamic shadow quads of moving actors. Pure numpy, float32; no bpy.

Conventions: the map covers ``region`` = (x_min, y_min, x_max, y_max) in world units seen from above; row 0 is
y_max, column 0 is x_min; texel (i, j) has its centre at (x_min + (j + 0.5) * tx, y_max - (i + 0.5) * ty).

Shadows: obstacles are walls in the write-up's 2D sense (taller than the lights): a texel is lit by a light position
when the straight segment between them, seen from above, crosses no occupied texel. Per light position the
occupied texels on the edge of an obstacle are drawn into a 1D polar shadow map (nearest blocking distance per
angle; the angle is the cheap monotone "diamond angle"), and every texel of the light's area of influence is tested
against it in one vectorised pass. The penumbra is the F.E.A.R. trick of Day 2: the same pass for light positions
jittered over the light's size, averaged.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from . import cpus, exr, jobs, outputs, png
from .colour import linear_to_srgb

FALLOFFS = ("PHYSICAL", "SMOOTH")
SMOOTHINGS = ("NONE", "MIPS", "BLUR")
LIGHT_KINDS = ("POINT", "SPOT", "AREA")
MAX_RESOLUTION = 16384
MAX_SAMPLES = 256
MAX_THREADS = 4  # lights rendered at once at most
# A light's area of influence ends where its PHYSICAL irradiance is this share of its peak (at its foot): PHYSICAL
# keeps the faint tails (many far lights add up in a level's dim corners, as Cycles shows); SMOOTH's gradient circle
# ends much sooner, at the write-up's visible circle
CUTOFF_SHARE = 1e-5
SMOOTH_CUTOFF_SHARE = 1e-3
# texels along a tile's side in the shadow test (tiles lit or dark as a whole skip the per-texel test)
TILE = 16
# an obstacle triangle whose corners all lie below this share of the lowest light's height above the ground is the
# floor (a level modelled as one mesh holds its floor), not a wall
FLOOR_SHARE = 0.05
FLOAT32_MAX = float(np.finfo(np.float32).max)


class LightmapError(ValueError):
    """The inputs cannot give a light map; the message says what is wrong and what to do."""


@dataclass
class Light:
    """One light, in world units. ``power`` in watts as Blender gives it; ``radius`` the size the penumbra jitters
    over (point and spot: the light's radius; area: half its size); ``influence``: radius of influence on the ground
    (0: from the falloff). Spot: ``direction`` (unit vector it points along), ``spot_size`` (full cone angle,
    radians), ``spot_blend``. Area: ``direction`` (the side it emits to)."""
    x: float
    y: float
    z: float
    colour: tuple = (1.0, 1.0, 1.0)
    power: float = 1000.0
    radius: float = 0.0
    kind: str = "POINT"
    direction: tuple = (0.0, 0.0, -1.0)
    spot_size: float = math.pi / 4
    spot_blend: float = 0.15
    influence: float = 0.0
    name: str = "Light"


@dataclass
class Settings:
    resolution: int = 512
    penumbra_samples: int = 8
    falloff: str = "PHYSICAL"
    smoothing: str = "NONE"
    smoothing_levels: int = 3
    occlusion_distance: float = 0.0
    occlusion_strength: float = 0.5
    seed: int = 0

    def validate(self) -> "Settings":
        if not 1 <= int(self.resolution) <= MAX_RESOLUTION:
            raise LightmapError(f"Resolution {self.resolution} is out of range: use 1 to {MAX_RESOLUTION} texels "
                                "along the longest side")
        if not 1 <= int(self.penumbra_samples) <= MAX_SAMPLES:
            raise LightmapError(f"Penumbra samples {self.penumbra_samples}: use 1 to {MAX_SAMPLES}")
        if self.falloff not in FALLOFFS:
            raise LightmapError(f"Unknown falloff {self.falloff!r}: use {' or '.join(FALLOFFS)}")
        if self.smoothing not in SMOOTHINGS:
            raise LightmapError(f"Unknown smoothing {self.smoothing!r}: use {', '.join(SMOOTHINGS)}")
        if not 1 <= int(self.smoothing_levels) <= 8:
            raise LightmapError(f"Smoothing levels {self.smoothing_levels}: use 1 to 8")
        if not (self.occlusion_distance >= 0.0 and math.isfinite(self.occlusion_distance)):
            raise LightmapError(f"Occlusion distance {self.occlusion_distance}: use 0 (off) or a positive distance")
        if not 0.0 <= self.occlusion_strength <= 1.0:
            raise LightmapError(f"Occlusion strength {self.occlusion_strength}: use 0 to 1")
        return self


@dataclass
class Grid:
    region: tuple  # (x_min, y_min, x_max, y_max)
    width: int
    height: int

    @property
    def tx(self) -> float:
        return (self.region[2] - self.region[0]) / self.width

    @property
    def ty(self) -> float:
        return (self.region[3] - self.region[1]) / self.height

    def xs(self) -> np.ndarray:
        """(W,) x of the texel centres."""
        return (self.region[0] + (np.arange(self.width, dtype=np.float64) + 0.5) * self.tx).astype(np.float32)

    def ys(self) -> np.ndarray:
        """(H,) y of the texel centres (row 0 is y_max)."""
        return (self.region[3] - (np.arange(self.height, dtype=np.float64) + 0.5) * self.ty).astype(np.float32)

    @overload
    def texel_of(self, x: float, y: float) -> tuple[np.int64, np.int64]: ...

    @overload
    def texel_of(self, x: npt.ArrayLike, y: npt.ArrayLike
                ) -> tuple[np.int64 | npt.NDArray[np.int64], np.int64 | npt.NDArray[np.int64]]: ...

    def texel_of(self, x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[Any, Any]:
        """(row, column) of the texels holding world points (clipped to the grid)."""
        j = np.clip(np.floor((np.asarray(x, np.float64) - self.region[0]) / self.tx), 0, self.width - 1)
        i = np.clip(np.floor((self.region[3] - np.asarray(y, np.float64)) / self.ty), 0, self.height - 1)
        return i.astype(np.int64), j.astype(np.int64)


@dataclass
class Result:
    rgb: np.ndarray                  # (H, W, 3) float32 linear light
    occupancy: np.ndarray            # (H, W) bool
    occlusion: np.ndarray | None     # (H, W) float32 factor (1 = untouched) or None
    grid: Grid
    warnings: list = field(default_factory=list)


def make_grid(region: Iterable[float], resolution: int) -> Grid:
    """The grid over ``region`` with ``resolution`` texels along its longest side (near-square texels)."""
    x0, y0, x1, y1 = (float(v) for v in region)
    w, h = x1 - x0, y1 - y0
    if not (math.isfinite(w) and math.isfinite(h)) or w <= 0 or h <= 0:
        raise LightmapError(f"The region {w:g} x {h:g} has no area seen from above: use a ground object that is flat "
                            "on the ground (not edge-on) or a rectangle with width and depth")
    resolution = int(resolution)
    if not 1 <= resolution <= MAX_RESOLUTION:
        raise LightmapError(f"Resolution {resolution} is out of range: use 1 to {MAX_RESOLUTION} texels along the "
                            "longest side")
    texel = max(w, h) / resolution
    return Grid((x0, y0, x1, y1), max(1, int(round(w / texel))), max(1, int(round(h / texel))))


# --- occupancy ---------------------------------------------------------------------------------------------

def rasterise(grid: Grid, triangles: npt.ArrayLike, chunk: int = 4_000_000) -> np.ndarray:
    """(H, W) bool: texels whose centre lies in a triangle seen from above, plus texels that a triangle's edges
    pass through (so walls made of vertical faces only, edge-on from above, still block). ``triangles`` is
    (T, 3, 2 or 3) world coordinates. Vectorised over (triangle, texel-of-its-box) pairs, ``chunk`` at a time."""
    occ = np.zeros((grid.height, grid.width), dtype=bool)
    tri = np.asarray(triangles, dtype=np.float64)
    if tri.size == 0:
        return occ
    tri = tri[..., :2]
    # to texel space: u = column + 0.5 at the centre, v = row + 0.5
    u = (tri[..., 0] - grid.region[0]) / grid.tx
    v = (grid.region[3] - tri[..., 1]) / grid.ty
    border_u: list[np.ndarray] = []
    border_v: list[np.ndarray] = []
    # edges: points every half texel along each edge
    for a, b in ((0, 1), (1, 2), (2, 0)):
        du, dv = u[:, b] - u[:, a], v[:, b] - v[:, a]
        steps = np.ceil(np.maximum(np.abs(du), np.abs(dv)) * 2).astype(np.int64) + 1
        steps = np.minimum(steps, 4 * max(grid.width, grid.height) + 2)
        for start in range(0, len(steps), 200_000):  # bounded memory on huge meshes
            s = steps[start:start + 200_000]
            idx = np.repeat(np.arange(start, start + len(s)), s)
            first = np.repeat(np.cumsum(s) - s, s)
            t = (np.arange(len(idx)) - first) / np.maximum(np.repeat(s, s) - 1, 1)
            pu = u[idx, a] + t * du[idx]
            pv = v[idx, a] + t * dv[idx]
            inside = (pu >= 0) & (pu <= grid.width) & (pv >= 0) & (pv <= grid.height)
            on_line = (np.abs(pu - np.round(pu)) <= 1e-6) | (np.abs(pv - np.round(pv)) <= 1e-6)
            ok = inside & ~on_line & (pu < grid.width) & (pv < grid.height)
            occ[pv[ok].astype(np.int64), pu[ok].astype(np.int64)] = True
            # a point on a texel's border is decided once the interiors are in (below)
            border_u.append(pu[inside & on_line])
            border_v.append(pv[inside & on_line])
    # interiors: texel centres inside the triangle
    umin = np.clip(np.floor(u.min(1) - 0.5), 0, grid.width).astype(np.int64)
    umax = np.clip(np.ceil(u.max(1) - 0.5), -1, grid.width - 1).astype(np.int64)
    vmin = np.clip(np.floor(v.min(1) - 0.5), 0, grid.height).astype(np.int64)
    vmax = np.clip(np.ceil(v.max(1) - 0.5), -1, grid.height - 1).astype(np.int64)
    bw, bh = umax - umin + 1, vmax - vmin + 1
    area2 = (u[:, 1] - u[:, 0]) * (v[:, 2] - v[:, 0]) - (u[:, 2] - u[:, 0]) * (v[:, 1] - v[:, 0])
    keep = np.nonzero((bw > 0) & (bh > 0) & (np.abs(area2) > 1e-12))[0]
    counts = (bw * bh)[keep]
    ends = np.cumsum(counts)
    start_t = 0
    while start_t < len(keep):
        stop_t = int(np.searchsorted(ends, (ends[start_t - 1] if start_t else 0) + chunk, side="right"))
        stop_t = max(stop_t, start_t + 1)
        ks, cs = keep[start_t:stop_t], counts[start_t:stop_t]
        idx = np.repeat(ks, cs)
        local = np.arange(len(idx)) - np.repeat(np.cumsum(cs) - cs, cs)
        col = umin[idx] + local % bw[idx]
        row = vmin[idx] + local // bw[idx]
        pu, pv = col + 0.5, row + 0.5
        sign = np.sign(area2[idx])
        inside = np.ones(len(idx), dtype=bool)
        for a, b in ((0, 1), (1, 2), (2, 0)):
            e = (u[idx, b] - u[idx, a]) * (pv - v[idx, a]) - (v[idx, b] - v[idx, a]) * (pu - u[idx, a])
            inside &= e * sign >= 0
        occ[row[inside], col[inside]] = True
        start_t = stop_t
    _mark_borders(occ, np.concatenate(border_u), np.concatenate(border_v))
    return occ


def _mark_borders(occ: np.ndarray, pu: np.ndarray, pv: np.ndarray) -> None:
    """Edge points lying on texel borders (texel space, ``pu`` or ``pv`` on an integer): a box's side face on a
    texel line is already blocked by the box's top on one side, and marking the other side would grow the box by a
    texel, so such a point marks nothing when a texel it touches is occupied; a lone edge-on wall on a texel line
    touches none, and marks the texel on its higher-index side (on the grid's last line, the lower), so it blocks
    as a wall off the lines does."""
    if len(pu) == 0:
        return
    h, w = occ.shape
    ru, rv = np.round(pu), np.round(pv)
    on_u = np.abs(pu - ru) <= 1e-6
    on_v = np.abs(pv - rv) <= 1e-6
    # the columns and rows each point touches: both sides of a line it lies on, else the one it is in
    c_hi = np.where(on_u, ru, np.floor(pu)).astype(np.int64)
    c_lo = np.where(on_u, ru - 1, c_hi).astype(np.int64)
    r_hi = np.where(on_v, rv, np.floor(pv)).astype(np.int64)
    r_lo = np.where(on_v, rv - 1, r_hi).astype(np.int64)
    c_hi, c_lo = np.clip(c_hi, 0, w - 1), np.clip(c_lo, 0, w - 1)
    r_hi, r_lo = np.clip(r_hi, 0, h - 1), np.clip(r_lo, 0, h - 1)
    # points on one line first, then points on texel corners (a wall's ends): a corner next to a texel its wall
    # marked marks nothing more
    for part in (on_u != on_v, on_u & on_v):
        a, b, c, d = r_lo[part], r_hi[part], c_lo[part], c_hi[part]
        free = ~(occ[a, c] | occ[a, d] | occ[b, c] | occ[b, d])
        occ[b[free], d[free]] = True


def wall_triangles(triangles: npt.ArrayLike, ground_z: float, light_z: Iterable[float]) -> np.ndarray:
    """The obstacle triangles (T, 3, 3) that can stand between a light and the ground: without the floor (every
    corner below ``FLOOR_SHARE`` of the lowest light's height above ``ground_z``) and without the ceilings (turned
    down and above every light: they are seen from below only). A level modelled as one closed room keeps its
    walls; blocks standing on the ground keep their tops."""
    tri = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    heights = np.asarray(list(light_z), dtype=np.float64)
    if len(tri) == 0 or len(heights) == 0:
        return tri
    floor = ground_z + FLOOR_SHARE * max(float(heights.min()) - ground_z, 0.0)
    on_floor = tri[:, :, 2].max(axis=1) <= floor
    normal_z = ((tri[:, 1, 0] - tri[:, 0, 0]) * (tri[:, 2, 1] - tri[:, 0, 1])
                - (tri[:, 1, 1] - tri[:, 0, 1]) * (tri[:, 2, 0] - tri[:, 0, 0]))
    ceiling = (tri[:, :, 2].min(axis=1) >= heights.max()) & (normal_z < 0)
    return tri[~(on_floor | ceiling)]


def boundary(occ: np.ndarray) -> np.ndarray:
    """Occupied texels with a free 4-neighbour (the only ones a ray from a free texel can meet first)."""
    free = ~occ
    edge = np.zeros_like(occ)
    edge[1:] |= free[:-1]
    edge[:-1] |= free[1:]
    edge[:, 1:] |= free[:, :-1]
    edge[:, :-1] |= free[:, 1:]
    return occ & edge


# --- lights ------------------------------------------------------------------------------------------------

def intensity(light: Light) -> float:
    """Radiant intensity (W/sr) straight down the light's axis, as Cycles computes it from Blender's watts: a point
    or spot light P / (4 pi), an area light P / pi (one-sided Lambertian emitter)."""
    if light.kind == "AREA":
        return float(light.power) / math.pi
    return float(light.power) / (4.0 * math.pi)


def influence_radius(light: Light, height: float, falloff: str) -> float:
    """Radius (world units, on the ground) of the light's area of influence: ``light.influence`` when set, else
    where PHYSICAL irradiance falls to CUTOFF_SHARE (SMOOTH: SMOOTH_CUTOFF_SHARE) of its peak."""
    if light.influence > 0:
        return float(light.influence)
    share = SMOOTH_CUTOFF_SHARE if falloff == "SMOOTH" else CUTOFF_SHARE
    d = height * share ** (-1.0 / 3.0)
    return float(math.sqrt(max(d * d - height * height, 0.0)))


def falloff_values(light: Light, dx: npt.NDArray[np.float32], dy: npt.NDArray[np.float32], height: float, falloff: str,
                   radius: float, gain: float = 1.0) -> np.ndarray:
    """Irradiance on the ground (before colour and shadows) at ground offsets (dx, dy) from the light's foot.
    PHYSICAL: I cos(theta) / d^2, with the spot cone or the area light's own cosine as Cycles has them; SMOOTH: the
    write-up's gradient circle, its peak the physical value at the light's foot, falling as (1 - r/R)^2 to 0 at R.
    Times ``gain``."""
    h = np.float32(height)
    inten = np.float32(intensity(light) * gain)
    if falloff == "PHYSICAL" and light.kind == "POINT" and np.ndim(dx) == 2 and np.ndim(dy) == 2:
        # the common case on a grid, in four passes over it: I h / (d2 sqrt(d2))
        d2 = (dx * dx) + (dy * dy + h * h)
        value = np.sqrt(d2)
        value *= d2
        return np.divide(inten * h, value, out=value)
    r2 = dx * dx + dy * dy
    if falloff == "SMOOTH":
        r = np.sqrt(r2)
        t = np.clip(1.0 - r / np.float32(max(radius, 1e-9)), 0.0, 1.0)
        value = (inten / (h * h)) * t * t
    else:
        d2 = r2 + h * h
        value = inten * h / (d2 * np.sqrt(d2))
    if light.kind == "SPOT":
        d = np.sqrt(r2 + h * h)
        ax, ay, az = (np.float32(c) for c in light.direction)
        cos_axis = (dx * ax + dy * ay - h * az) / d
        cos_half = np.float32(math.cos(light.spot_size / 2))
        smooth = np.float32(max((1.0 - cos_half) * light.spot_blend, 1e-6))
        t = np.clip((cos_axis - cos_half) / smooth, 0.0, 1.0)
        value = value * (t * t * (3 - 2 * t))
    elif light.kind == "AREA":
        d = np.sqrt(r2 + h * h)
        ax, ay, az = (np.float32(c) for c in light.direction)
        value = value * np.maximum((dx * ax + dy * ay - h * az) / d, 0.0)
    return value.astype(np.float32, copy=False)


def jitter_offsets(radius: float, samples: int, seed: int = 0) -> np.ndarray:
    """(N, 2) offsets over a disc of ``radius`` (a Vogel spiral, turned by ``seed``): where the light is moved for
    each penumbra pass. One sample, or a light of no size: the centre only."""
    if samples <= 1 or radius <= 0:
        return np.zeros((1, 2), dtype=np.float64)
    k = np.arange(samples, dtype=np.float64)
    turn = np.random.default_rng(seed).uniform(0, 2 * math.pi)
    r = radius * np.sqrt((k + 0.5) / samples)
    a = k * math.pi * (3 - math.sqrt(5)) + turn
    return np.stack([r * np.cos(a), r * np.sin(a)], axis=1)


def _diamond(dx, dy):
    """Monotone stand-in for the angle of (dx, dy), in [0, 4) (cheaper than arctan2)."""
    s = np.abs(dx) + np.abs(dy)
    t = dy / np.where(s > 0, s, 1)
    return np.where(dx >= 0, t, 2 - t) + 1


def _polar_map(bx, by, half, lx, ly, nbins):
    """Nearest blocking distance per diamond-angle bin, from the light at (lx, ly), of the occupied squares centred at
    (bx, by) with half-size ``half``."""
    smap = np.full(nbins, np.inf, dtype=np.float32)
    if len(bx) == 0:
        return smap
    dx, dy = bx - lx, by - ly
    centre = _diamond(dx, dy)
    lo = np.full(len(bx), np.inf)
    hi = np.full(len(bx), -np.inf)
    for sx, sy in ((-1, -1), (-1, 1), (1, -1), (1, 1)):
        delta = (_diamond(dx + sx * half, dy + sy * half) - centre + 2) % 4 - 2
        lo = np.minimum(lo, delta)
        hi = np.maximum(hi, delta)
    scale = nbins / 4.0
    b0 = np.floor((centre + lo) * scale).astype(np.int64)
    b1 = np.floor((centre + hi) * scale).astype(np.int64)
    dist = (np.sqrt(dx * dx + dy * dy) - half).astype(np.float32)
    counts = np.minimum(b1 - b0 + 1, nbins)
    idx = np.repeat(b0, counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    np.minimum.at(smap, idx % nbins, np.repeat(dist, counts))
    return smap


def _pass(dx, dy, smap2, scale, nbins):
    """Whether each offset (dx, dy) from the light is nearer than the polar map's blocker in its direction
    (``smap2``: the map's squared distances). ``_diamond`` written out with in-place steps (this is the hot loop)."""
    s = np.abs(dx) + np.abs(dy)
    s += np.float32(1e-30)
    t = np.divide(dy, s, out=s)
    t -= np.float32(1)
    t *= np.copysign(np.float32(1), dx)
    t += np.float32(2)
    t *= scale
    b = t.astype(np.int32)
    np.minimum(b, nbins - 1, out=b)
    d2 = dx * dx + dy * dy
    return d2 <= smap2[b]


def _range_tables(values: np.ndarray, longest: int):
    """Sparse tables of running minima and maxima of ``values`` (1D): row k holds the min (max) of
    values[i:i + 2**k], for ranges up to ``longest`` long (rows past a row's end: +inf / -inf, never read)."""
    n = len(values)
    levels = max(1, int(longest - 1).bit_length() + 1)
    lo = np.full((levels, n), np.inf, dtype=np.float32)
    hi = np.full((levels, n), -np.inf, dtype=np.float32)
    lo[0] = values
    hi[0] = values
    for k in range(1, levels):
        step = 1 << (k - 1)
        np.minimum(lo[k - 1, :n - step], lo[k - 1, step:], out=lo[k, :n - step])
        np.maximum(hi[k - 1, :n - step], hi[k - 1, step:], out=hi[k, :n - step])
    return lo, hi


def _tile_bounds(gx, gy, px, py, scale, nbins):
    """Per tile seen from (px, py): tile (i, j) is the box [gx[j], gx[j + 1]] x [gy[i + 1], gy[i]] (float32 lines,
    x rising, y falling) holding its texel centres. Returns (th * tw,) arrays: the least and the greatest squared
    distance of the box from the light as ``_pass`` computes squared distances in float32 (squares and sums round
    monotonically: bounds of every texel's), and the range of polar-map bins its texels can read: first bin (may
    be negative: wrapped) and count, widened by two bins against rounding. Tiles touching the light or seeing it
    under a wide angle get count 0 (undecided)."""
    dxl = gx - np.float32(px)
    dyl = gy - np.float32(py)
    ax = np.maximum(np.abs(dxl[:-1]), np.abs(dxl[1:]))
    ay = np.maximum(np.abs(dyl[:-1]), np.abs(dyl[1:]))
    far2 = ((ay * ay)[:, None] + (ax * ax)[None, :]).ravel()
    nx = np.where((dxl[:-1] <= 0) & (dxl[1:] >= 0), np.float32(0), np.minimum(np.abs(dxl[:-1]), np.abs(dxl[1:])))
    ny = np.where((dyl[:-1] >= 0) & (dyl[1:] <= 0), np.float32(0), np.minimum(np.abs(dyl[:-1]), np.abs(dyl[1:])))
    near2 = ((ny * ny)[:, None] + (nx * nx)[None, :]).ravel()
    holds = ((ny == 0)[:, None] & (nx == 0)[None, :]).ravel()
    # the angular span: a box without the light sees it within the angles of its corners (diamond angles of the
    # lattice of tile corners, relative to each tile's top-left corner)
    t = _diamond(dxl[None, :], dyl[:, None])
    ref = t[:-1, :-1]
    lo = np.zeros(ref.shape, dtype=np.float32)
    hi = np.zeros(ref.shape, dtype=np.float32)
    for corner in (t[:-1, 1:], t[1:, :-1], t[1:, 1:]):
        delta = corner - ref
        delta += np.float32(2)
        delta %= np.float32(4)
        delta -= np.float32(2)
        np.minimum(lo, delta, out=lo)
        np.maximum(hi, delta, out=hi)
    first = np.floor((ref + lo) * scale).astype(np.int64).ravel() - 2
    count = np.floor((ref + hi) * scale).astype(np.int64).ravel() + 3 - first
    count[holds | ((hi - lo) > 1.0).ravel() | (count >= nbins)] = 0
    return near2, far2, first, count


def visibility(xs: npt.ArrayLike, ys: npt.ArrayLike, occ_boundary_xy: tuple[npt.ArrayLike, npt.ArrayLike], half: float,
               lx: float, ly: float, offsets: npt.ArrayLike, nbins: int, tile: int | None = None) -> np.ndarray:
    """(len(ys), len(xs)) float32: the share of the light positions (lx, ly) + ``offsets`` that each texel centre
    sees. ``occ_boundary_xy`` = (bx, by) centres of the blocking texels (``boundary``) of half-size ``half``.

    Equal to ``visibility_reference`` (every position tested on every texel), but per position the map is cut into
    ``tile`` x ``tile`` texel tiles, and a tile whose farthest texel is nearer than the nearest blocker over all the
    polar-map bins it can read is lit as a whole, one whose nearest texel is beyond the farthest of those blockers
    is dark as a whole (range minima and maxima of the polar map from sparse tables); only the other tiles (along
    the shadow edges of that position) are tested texel by texel."""
    n = len(np.asarray(offsets).reshape(-1, 2))
    return _visibility_counts(xs, ys, occ_boundary_xy, half, lx, ly, offsets, nbins, tile) * np.float32(1.0 / n)


def _visibility_counts(xs, ys, occ_boundary_xy, half: float, lx: float, ly: float, offsets, nbins: int,
                       tile: int | None = None) -> np.ndarray:
    """``visibility`` before the division: how many of the positions see each texel (float32)."""
    bx, by = occ_boundary_xy
    tile = TILE if tile is None else int(tile)
    offsets = np.asarray(offsets, dtype=np.float64).reshape(-1, 2)
    xs = np.asarray(xs, dtype=np.float32)
    ys = np.asarray(ys, dtype=np.float32)
    h, w = len(ys), len(xs)
    th, tw = -(-h // tile), -(-w // tile)
    # padded with copies of the last texel (its tests are cropped away; bounds stay tight)
    xt = np.pad(xs, (0, tw * tile - w), mode="edge").reshape(tw, tile)
    yt = np.pad(ys, (0, th * tile - h), mode="edge").reshape(th, tile)
    # tile corners: tile j spans texel centres xt[j, 0] .. xt[j, -1] within [gx[j], gx[j + 1]] (likewise y, falling)
    gx = np.append(xt[:, 0], xt[-1, -1])
    gy = np.append(yt[:, 0], yt[-1, -1])
    scale = np.float32(nbins / 4.0)
    longest = min(nbins, 1024)  # wider tiles (near the light) are tested texel by texel
    count = np.zeros(th * tw, dtype=np.float32)    # positions that light a tile as a whole
    mixed_tiles = []
    for ox, oy in offsets:
        px, py = lx + ox, ly + oy
        smap2 = _polar_map(bx, by, half, px, py, nbins) ** 2
        near2, far2, first, span = _tile_bounds(gx, gy, px, py, scale, nbins)
        valid = (span > 0) & (span <= longest)
        n = np.clip(span, 1, longest)
        start = first % nbins
        k = (np.frexp(n.astype(np.float32))[1] - 1).astype(np.int64)  # floor(log2(n)), exactly
        tmin, tmax = _range_tables(np.concatenate([smap2, smap2]), longest)
        end = start + n - (np.int64(1) << k)
        lit = far2 <= np.minimum(tmin[k, start], tmin[k, end])
        lit &= valid
        dark = near2 > np.maximum(tmax[k, start], tmax[k, end])
        dark &= valid
        count += lit
        mixed = ~(lit | dark)
        mixed_tiles.append((px, py, smap2, np.nonzero(mixed)[0]))
    # the whole tiles' counts, then the positions tested texel by texel added on their tiles (tile-major), then
    # laid out as the image
    acc = np.repeat(count, tile * tile).reshape(th * tw, tile, tile)
    for px, py, smap2, todo in mixed_tiles:
        for part in np.array_split(todo, max(1, len(todo) // 4096)):  # bounded temporaries
            dx = (xt[part % tw] - np.float32(px))[:, None, :]
            dy = (yt[part // tw] - np.float32(py))[:, :, None]
            acc[part] += _pass(dx, dy, smap2, scale, nbins)
    out = acc.reshape(th, tw, tile, tile).transpose(0, 2, 1, 3).reshape(th * tile, tw * tile)
    return out[:h, :w]


def visibility_reference(xs: npt.ArrayLike, ys: npt.ArrayLike, occ_boundary_xy: tuple[npt.ArrayLike, npt.ArrayLike],
                         half: float, lx: float, ly: float, offsets: npt.ArrayLike, nbins: int
                        ) -> npt.NDArray[np.float32]:
    """``visibility`` the plain way: every light position tested on every texel (what the tests pin it to)."""
    bx, by = occ_boundary_xy
    offsets = np.asarray(offsets, dtype=np.float64).reshape(-1, 2)
    xs = np.asarray(xs, dtype=np.float32)
    ys = np.asarray(ys, dtype=np.float32)
    scale = np.float32(nbins / 4.0)
    acc = np.zeros((len(ys), len(xs)), dtype=np.float32)
    for ox, oy in offsets:
        px, py = lx + ox, ly + oy
        smap2 = _polar_map(bx, by, half, px, py, nbins) ** 2
        acc += _pass((xs - np.float32(px))[None, :], (ys - np.float32(py))[:, None], smap2, scale, nbins)
    return acc * np.float32(1.0 / len(offsets))


# a Light's numbers, by the name Blender's light panel gives them
_LIGHT_FIELDS = (("position", ("x", "y", "z")), ("power", ("power",)), ("colour", ("colour",)),
                 ("radius", ("radius",)), ("direction", ("direction",)), ("spot size", ("spot_size",)),
                 ("spot blend", ("spot_blend",)), ("custom distance", ("influence",)))


def not_finite(light: Light) -> list[str]:
    """The names of ``light``'s values that are NaN or infinite ([] when every one is a number)."""
    return [label for label, names in _LIGHT_FIELDS
            if not np.isfinite(np.asarray([getattr(light, n) for n in names], dtype=np.float64)).all()]


def check_lights(grid: Grid, occ: np.ndarray, lights: Sequence[Light], ground_z: float) -> None:
    """Refuse lights the map cannot use: none, with a value that is NaN or infinite, below the ground, outside the
    region, inside an obstacle."""
    if not lights:
        raise LightmapError("No lights: add point, spot or area lights to the scene (or to the Lights collection)")
    broken = [f"{lt.name} ({', '.join(bad)})" for lt in lights if (bad := not_finite(lt))]
    if broken:
        raise LightmapError(f"Light(s) {'; '.join(broken)} have a value that is not a number (NaN or infinite), "
                            "which would fill the map with it: set a finite value (a script or a driver may have "
                            "set it), or leave the light out of the Lights collection")
    x0, y0, x1, y1 = grid.region
    below = [lt.name for lt in lights if lt.z <= ground_z]
    if below:
        raise LightmapError(f"Light(s) {', '.join(below)} are not above the ground (z {ground_z:g}): raise them")
    outside = [lt.name for lt in lights if not (x0 <= lt.x <= x1 and y0 <= lt.y <= y1)]
    if outside:
        raise LightmapError(f"Light(s) {', '.join(outside)} are outside the region ({x0:g}, {y0:g}) to ({x1:g}, "
                            f"{y1:g}) seen from above: move them over the ground, make the ground larger, or leave "
                            "them out of the Lights collection")
    if occ.all():
        raise LightmapError("The obstacles cover the whole region: nothing on the ground can be lit; check the "
                            "Obstacles collection (is the ground itself in it?)")
    i, j = grid.texel_of([lt.x for lt in lights], [lt.y for lt in lights])
    inside = [lt.name for lt, k in zip(lights, occ[i, j]) if k]
    if inside:
        raise LightmapError(f"Light(s) {', '.join(inside)} are inside an obstacle seen from above: move them out of "
                            "the walls")


# below this resolution a refusal of the lights is checked again at it: walls fill whole texels of a coarse map
FINE_RESOLUTION = 256


def check_lights_at_resolution(grid: Grid, occ: np.ndarray, triangles: npt.ArrayLike, lights: Sequence[Light],
                               ground_z: float) -> None:
    """``check_lights``, and when it refuses a coarse map (obstacles covering the region, a light inside one), the
    same lights and ``triangles`` (the obstacles) at FINE_RESOLUTION: clear there, the walls only fill the coarse
    map's texels, and the refusal says to raise the Resolution instead of moving lights or walls."""
    try:
        check_lights(grid, occ, lights, ground_z)
    except LightmapError as exc:
        resolution = max(grid.width, grid.height)
        if resolution >= FINE_RESOLUTION or not np.asarray(triangles).size:
            raise
        fine = make_grid(grid.region, FINE_RESOLUTION)
        try:
            check_lights(fine, rasterise(fine, triangles), lights, ground_z)
        except LightmapError:
            raise exc from None
        if occ.all():
            covered = "cover the whole region"
        else:
            i, j = grid.texel_of([lt.x for lt in lights], [lt.y for lt in lights])
            names = [lt.name for lt, k in zip(lights, occ[i, j]) if k]
            covered = f"cover the light(s) {', '.join(names)}"
        raise LightmapError(f"At Resolution {resolution} a texel is {max(grid.tx, grid.ty):.3g} m across and a wall "
                            f"fills every texel it touches, so the walls {covered}: raise the Resolution (at "
                            f"{FINE_RESOLUTION} the lights and the ground between the walls are clear)") from None


# --- smoothing and occlusion -------------------------------------------------------------------------------

def _resize_bilinear(img: np.ndarray, h: int, w: int, rows: int | None = None,
                     cols: int | None = None) -> np.ndarray:
    """Bilinear resize of (H, W, ...) to (h, w, ...), texel centres aligned (as a GPU samples a stretched texture).
    ``rows``, ``cols``: only the first ones of the result are computed (the top-left corner of it, no larger)."""
    sh, sw = img.shape[:2]
    y = np.clip((np.arange(min(h, rows or h), dtype=np.float32) + 0.5) * (sh / h) - 0.5, 0, sh - 1)
    x = np.clip((np.arange(min(w, cols or w), dtype=np.float32) + 0.5) * (sw / w) - 0.5, 0, sw - 1)
    h, w = len(y), len(x)
    y0 = np.floor(y).astype(np.int64)
    x0 = np.floor(x).astype(np.int64)
    y1, x1 = np.minimum(y0 + 1, sh - 1), np.minimum(x0 + 1, sw - 1)
    fy = (y - y0).reshape((h, 1) + (1,) * (img.ndim - 2)).astype(np.float32)
    fx = (x - x0).reshape((1, w) + (1,) * (img.ndim - 2)).astype(np.float32)
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bottom = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    return (top * (1 - fy) + bottom * fy).astype(np.float32)


def _downsample2(img: np.ndarray) -> np.ndarray:
    h, w = img.shape[:2]
    h2, w2 = max(1, h // 2), max(1, w // 2)
    if h < 2 or w < 2:
        return img.copy()
    a = img[:h2 * 2, :w2 * 2]
    return (0.25 * (a[0::2, 0::2] + a[1::2, 0::2] + a[0::2, 1::2] + a[1::2, 1::2])).astype(np.float32)


def smooth_mips(img: np.ndarray, levels: int) -> np.ndarray:
    """Day 3: the map and ``levels`` copies at 1/2, 1/4, ... scale, each stretched back bilinearly, blended with
    alpha 1/N."""
    h, w = img.shape[:2]
    out = img.astype(np.float32).copy()
    level = img.astype(np.float32)
    for _ in range(levels):
        level = _downsample2(level)
        out += _resize_bilinear(level, h, w)
    out /= np.float32(levels + 1)
    return out


def _box(img: np.ndarray, r: int, axis: int) -> np.ndarray:
    n = img.shape[axis]
    pad = [(0, 0)] * img.ndim
    pad[axis] = (r + 1, r)
    c = np.cumsum(np.pad(img, pad, mode="edge"), axis=axis, dtype=np.float64)
    hi = np.take(c, np.arange(2 * r + 1, 2 * r + 1 + n), axis=axis)
    lo = np.take(c, np.arange(0, n), axis=axis)
    return ((hi - lo) / (2 * r + 1)).astype(np.float32)


def blur(img: np.ndarray, radius: int) -> np.ndarray:
    """A plain blur: three box passes of ``radius`` texels per axis (close to a Gaussian)."""
    out = img.astype(np.float32)
    if radius < 1:
        return out
    for _ in range(3):
        out = _box(_box(out, radius, 0), radius, 1)
    return out


def smooth(img: np.ndarray, mode: str, levels: int) -> np.ndarray:
    if mode == "MIPS":
        return smooth_mips(img, levels)
    if mode == "BLUR":
        return blur(img, max(1, 2 ** (levels - 1) // 2))
    return img


def distance_map(occ: np.ndarray, cell: float = 1.0, chunk: int = 64) -> np.ndarray:
    """(H, W) float32 Euclidean distance from each texel centre to the nearest occupied texel centre (``cell`` world
    units per texel; inf when nothing is occupied). Rows by cumulative passes, then columns by brute force over
    rows (meant for the low-resolution occlusion grid)."""
    h, w = occ.shape
    if not occ.any():
        return np.full((h, w), np.inf, dtype=np.float32)
    big = float(h + w + 1)
    cols = np.arange(w, dtype=np.float64)
    last = np.where(occ, cols[None, :], -np.inf)
    left = cols[None, :] - np.maximum.accumulate(last, axis=1)
    nxt = np.where(occ, cols[None, :], np.inf)
    right = np.minimum.accumulate(nxt[:, ::-1], axis=1)[:, ::-1] - cols[None, :]
    g = np.minimum(np.minimum(left, right), big) ** 2  # (H, W) squared distance along the row
    rows = np.arange(h, dtype=np.float64)
    out = np.empty((h, w), dtype=np.float64)
    for start in range(0, h, chunk):  # rows in chunks: (chunk, H, W) candidates
        r = rows[start:start + chunk]
        out[start:start + chunk] = (g[None, :, :] + ((r[:, None] - rows[None, :]) ** 2)[:, :, None]).min(axis=1)
    return (np.sqrt(out) * cell).astype(np.float32)


def occlusion(grid: Grid, occ: np.ndarray, distance: float, strength: float) -> np.ndarray:
    """Day 4: (H, W) float32 factor darkening the ground near walls: 1 - strength at a wall, easing to 1 at
    ``distance`` and beyond. The distance map is computed on a low-resolution grid (cells of about a quarter of
    ``distance``) and stretched back bilinearly (the write-up's hardware interpolation); the darkening eases out over
    ``distance`` less the cells' reach, so stretched back it never reaches beyond ``distance``."""
    h, w = occ.shape
    if distance <= 0 or strength <= 0 or not occ.any():
        return np.ones((h, w), dtype=np.float32)
    texel = max(grid.tx, grid.ty)
    # cells of an eighth of ``distance``; past the map's size a cell holds the whole map, and the factor is the same
    # at any size beyond (d is 0 on the one cell: 1 - strength everywhere)
    factor = min(max(1, int(distance / 8.0 / texel)), max(h, w))
    lh, lw = -(-h // factor), -(-w // factor)
    # a low cell is occupied when any of its texels is; the last row and column of cells reach past the map (empty
    # there). Reduced in place: no grid of lh * factor x lw * factor texels, which a long distance makes far larger
    # than the map (1e5 m on a 10 m level: a 6 GiB padding)
    low = np.logical_or.reduceat(np.logical_or.reduceat(occ, np.arange(0, h, factor), axis=0),
                                 np.arange(0, w, factor), axis=1)
    cell = factor * texel
    d = distance_map(low, cell)
    # (cells of an eighth of ``distance``: the reach is about a quarter of it)
    # a low cell marks a wall anywhere in it (up to half a cell's diagonal off its centre), and a texel reads
    # low samples up to a cell's diagonal away: shift by both, so no darkening leaks beyond ``distance``
    reach = (1.5 * math.sqrt(2.0) * cell + texel) if factor > 1 else 0.0
    t = np.clip(d / np.float32(min(distance - reach, FLOAT32_MAX)), 0.0, 1.0)  # (1e300: as far as float32 goes)
    low_factor = 1.0 - np.float32(strength) * (1.0 - t) ** 2
    if factor == 1:
        return low_factor.astype(np.float32)
    full = _resize_bilinear(low_factor, lh * factor, lw * factor, rows=h, cols=w)
    return full.astype(np.float32)


# --- the bake ----------------------------------------------------------------------------------------------

def _render_light(grid: Grid, occ: np.ndarray, blockers, light: Light, index: int, ground_z: float,
                  settings: Settings):
    """One light's light on its area of influence: ((r0, r1, c0, c1) crop, (r1 - r0, c1 - c0) float32 irradiance
    with shadows, before colour; None when the crop is empty) and a warning or None."""
    bi, bj, bx_all, by_all = blockers
    h, w = occ.shape
    height = light.z - ground_z
    radius = influence_radius(light, height, settings.falloff)
    if radius <= 0:
        radius = max(grid.region[2] - grid.region[0], grid.region[3] - grid.region[1])
    # the crop: texels within ``radius`` of the light's foot (the box holds every segment to it)
    c0 = int(np.clip(np.floor((light.x - radius - grid.region[0]) / grid.tx), 0, w))
    c1 = int(np.clip(np.ceil((light.x + radius - grid.region[0]) / grid.tx), 0, w))
    r0 = int(np.clip(np.floor((grid.region[3] - (light.y + radius)) / grid.ty), 0, h))
    r1 = int(np.clip(np.ceil((grid.region[3] - (light.y - radius)) / grid.ty), 0, h))
    if c1 <= c0 or r1 <= r0:
        return None, None
    cx, cy = grid.xs()[c0:c1], grid.ys()[r0:r1]
    dx = (cx - np.float32(light.x))[None, :]
    dy = (cy - np.float32(light.y))[:, None]
    sel = (bj >= c0) & (bj < c1) & (bi >= r0) & (bi < r1)
    offsets = jitter_offsets(light.radius, int(settings.penumbra_samples), settings.seed + index)
    # jittered positions inside an obstacle see nothing: leave them out
    oi, oj = grid.texel_of(light.x + offsets[:, 0], light.y + offsets[:, 1])
    free = ~occ[oi, oj]
    warning = None
    if not free.all():
        warning = (f"{light.name}: {int((~free).sum())} of {len(offsets)} penumbra positions fall inside an "
                   "obstacle (the light's size reaches into a wall) and were left out")
        offsets = offsets[free]
    span = max(c1 - c0, r1 - r0)
    nbins = int(min(max(16 * span, 1024), 1 << 18))
    half = 0.5 * max(grid.tx, grid.ty)
    vis = _visibility_counts(cx, cy, (bx_all[sel], by_all[sel]), half, light.x, light.y, offsets, nbins)
    # the share of the positions: 1 / N folded into the falloff's constant
    value = falloff_values(light, dx, dy, height, settings.falloff, radius, gain=1.0 / len(offsets))
    far2 = max(float(np.abs(dx).max()), 0.0) ** 2 + float(np.abs(dy).max()) ** 2
    if settings.falloff == "PHYSICAL" and light.influence <= 0 and far2 > radius * radius:
        value *= (dx * dx + dy * dy) <= np.float32(radius * radius)
    vis *= value
    return ((r0, r1, c0, c1), vis), warning


def bake_threads() -> int:
    """Lights rendered at once (numpy lets go of the GIL in its loops): the CPUs this process may use, at most
    ``MAX_THREADS`` (each light in flight holds a few copies of its crop)."""
    return cpus.usable_cpus(MAX_THREADS)


def bake_job(grid: Grid, occ: np.ndarray, lights: Sequence[Light], ground_z: float, settings: Settings,
             threads: int | None = None) -> Generator[float, None, Result]:
    """Job generator (see progress.py): yields fractions, returns a Result. Lights are blended additively, each
    rendered over its area of influence only, ``threads`` of them at once (None: ``bake_threads()``); the sum is the
    same whatever the number of threads (lights are added in their order)."""
    settings.validate()
    check_lights(grid, occ, lights, ground_z)
    h, w = occ.shape
    # accumulated per channel (contiguous writes), RGB at the end
    planes: np.ndarray | None = np.zeros((3, h, w), dtype=np.float32)
    xs, ys = grid.xs(), grid.ys()
    bi, bj = np.nonzero(boundary(occ))
    blockers = (bi, bj, xs[bj].astype(np.float64), ys[bi].astype(np.float64))
    warnings = []
    threads = bake_threads() if threads is None else max(1, int(threads))

    def add(n, rendered):
        done, warning = rendered
        if warning:
            warnings.append(warning)
        if done is None:
            return
        (r0, r1, c0, c1), vis = done
        light = lights[n]
        tmp = np.empty_like(vis)
        for k in range(3):
            if light.colour[k]:
                assert planes is not None  # freed only after the last light
                view = planes[k, r0:r1, c0:c1]
                with np.errstate(over="ignore"):  # (too strong a light: refused with its name once all are in)
                    np.add(view, np.multiply(vis, np.float32(light.colour[k]), out=tmp), out=view)

    if threads == 1:
        for n, light in enumerate(lights):
            add(n, _render_light(grid, occ, blockers, light, n, ground_z, settings))
            yield (n + 1) / (len(lights) + 1)
    else:
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="envfx-lightmap")
        try:
            # as many lights at once as threads (bounded memory), added in order; all done before the job yields:
            # no thread runs while it hands control back to Blender (Blender's Python API is not thread-safe, and
            # a modal bake runs Blender's event loop between steps)
            for n in range(0, len(lights), threads):
                batch = [pool.submit(_render_light, grid, occ, blockers, lights[m], m, ground_z, settings)
                         for m in range(n, min(n + threads, len(lights)))]
                for k, future in enumerate(batch):
                    add(n + k, future.result())
                yield (n + len(batch)) / (len(lights) + 1)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    planes[:, occ] = 0.0  # under the walls
    if not np.isfinite(planes).all():  # (a power or colour as large as float32 goes: Blender clamps inf to it)
        def strength(lt: Light) -> float:
            return abs(lt.power) * max(abs(c) for c in lt.colour)
        top = max(strength(lt) for lt in lights)
        strongest = sorted((lt for lt in lights if strength(lt) >= 0.01 * top), key=strength, reverse=True)[:3]
        raise LightmapError("The light is too strong to store in the map (beyond float32's 3.4e38): lower the Power "
                            "or the colour of " + ", ".join(f"{lt.name} (power {lt.power:g}, colour "
                                                         f"{', '.join(f'{c:g}' for c in lt.colour)})"
                                                         for lt in strongest))
    if not (planes > 0).any():
        warnings.append("The map is black: no light reaches the ground (every light has power 0 or a black colour, "
                        "or faces away from it): raise a light's Power, or check its colour and direction")
    rgb = np.ascontiguousarray(planes.transpose(1, 2, 0))
    planes = None  # freed before smoothing
    rgb = smooth(rgb, settings.smoothing, int(settings.smoothing_levels))
    occl = None
    if settings.occlusion_distance > 0 and settings.occlusion_strength > 0:
        occl = occlusion(grid, occ, settings.occlusion_distance, settings.occlusion_strength)
        rgb *= occl[:, :, None]
    yield 1.0
    return Result(rgb=rgb, occupancy=occ, occlusion=occl, grid=grid, warnings=warnings)


def bake(grid: Grid, occ: np.ndarray, lights: Sequence[Light], ground_z: float, settings: Settings,
         threads: int | None = None) -> Result:
    """``bake_job`` run to its end."""
    job = bake_job(grid, occ, lights, ground_z, settings, threads)
    return jobs.finish(job)


def distance_image(grid: Grid, occ: np.ndarray, longest: int = 256) -> tuple:
    """(image (h, w) float32, cell size): the distance from each cell to the nearest wall on a grid of at most
    ``longest`` cells along its longest side, made safe for sampling anywhere in the cell with bilinear
    interpolation (a cell marks a wall anywhere in it, and the value is lowered by a cell's diagonal). What the
    actors' shadows read to keep out of walls. Large (the region's diagonal) where there are no walls."""
    h, w = occ.shape
    factor = max(1, -(-max(h, w) // longest))
    lh, lw = -(-h // factor), -(-w // factor)
    pad = np.zeros((lh * factor, lw * factor), dtype=bool)
    pad[:h, :w] = occ
    low = np.asarray(pad.reshape(lh, factor, lw, factor).any(axis=(1, 3)))  # (numpy's stubs: bool | array)
    cell = factor * max(grid.tx, grid.ty)
    diag = math.hypot(grid.region[2] - grid.region[0], grid.region[3] - grid.region[1])
    d = np.minimum(distance_map(low, cell), diag)
    return np.maximum(d - np.float32(cell * math.sqrt(2.0)), 0.0).astype(np.float32), cell


def light_circles(grid: Grid, lights: Iterable[Light], ground_z: float, scale: float = 0.5) -> npt.NDArray[np.float32]:
    """Day 6, Solution 3: the pre-rendered buffer of every light's circle, smaller than its reach and without
    shadows ((H, W, 3) float32, peak 1 per light times its colour), which a game lays over its lens-dirt texture."""
    h, w = grid.height, grid.width
    out = np.zeros((h, w, 3), dtype=np.float32)
    xs, ys = grid.xs(), grid.ys()
    for light in lights:
        r = max(influence_radius(light, light.z - ground_z, "SMOOTH") * scale, 1e-6)
        d = np.sqrt((xs[None, :] - np.float32(light.x)) ** 2 + (ys[:, None] - np.float32(light.y)) ** 2)
        t = np.clip(1.0 - d / np.float32(r), 0.0, 1.0)
        out += (t * t)[:, :, None] * np.asarray(light.colour, dtype=np.float32)
    return out


def vertex_light(points: npt.ArrayLike, normals: npt.ArrayLike, lights: Iterable[Light], grid: Grid, occ: np.ndarray
                ) -> npt.NDArray[np.float32]:
    """Day 1: (N, 3) float32 light at the vertices of static 3D geometry (the walls themselves): each light's
    intensity times the cosine at the vertex normal over the squared distance, where the light sees the vertex from
    above (the shadow test of the map, with a texel and a half of slack so a wall's own face does not shadow it)."""
    p = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    nrm = np.asarray(normals, dtype=np.float32).reshape(-1, 3)
    out = np.zeros((len(p), 3), dtype=np.float32)
    if len(p) == 0:
        return out
    bi, bj = np.nonzero(boundary(occ))
    bx, by = grid.xs()[bj].astype(np.float64), grid.ys()[bi].astype(np.float64)
    half = 0.5 * max(grid.tx, grid.ty)
    nbins = int(min(max(16 * max(grid.width, grid.height), 1024), 1 << 18))
    scale = np.float32(nbins / 4.0)
    slack = np.float32(3.0 * half)
    for light in lights:
        smap = _polar_map(bx, by, half, light.x, light.y, nbins)
        dx, dy = p[:, 0] - np.float32(light.x), p[:, 1] - np.float32(light.y)
        b = np.minimum((_diamond(dx, dy) * scale).astype(np.int32), nbins - 1)
        seen = np.sqrt(dx * dx + dy * dy) - slack <= smap[b]
        v = np.stack([-dx, -dy, np.float32(light.z) - p[:, 2]], axis=1)
        d2 = np.maximum((v * v).sum(1), 1e-8)
        cos = np.maximum((v * nrm).sum(1) / np.sqrt(d2), 0.0)
        e = np.float32(intensity(light)) * cos / d2 * seen
        out += e[:, None] * np.asarray(light.colour, dtype=np.float32)[None, :]
    return out


# --- dynamic shadows (Day 5) -------------------------------------------------------------------------------

@dataclass
class ShadowQuad:
    """One actor's shadow: ``direction`` (unit, on the ground, away from the light), ``width`` (the actor's footprint
    projected across the beam), ``length`` (clamped by the distance map), ``spread`` (half-angle between the two
    sprites of the cone, radians), ``alpha`` per sprite (0 when faded out)."""
    direction: tuple
    width: float
    length: float
    spread: float
    alpha: float


def shadow_quad(actor_xy: Iterable[float], half_size: Iterable[float], light_xy: Iterable[float], wall_distance: float,
                wall_size: float, length: float = 2.0, max_angle: float = 0.6, fade: float = 0.2) -> ShadowQuad:
    """The write-up's 1-2 sprite shadow for a rectangular actor (``half_size`` = (hx, hy), axis-aligned) lit by a
    light at ``light_xy``: cast away from the light, as wide as the actor seen across the beam, so short that no
    corner of it is farther from the actor's centre than the nearest wall + the wall size (so it does not show
    through a wall), and fading to nothing as the actor's angular size seen from the light grows from
    ``max_angle - fade`` to ``max_angle`` (too close). The geometry-nodes twin: shader_nodes/lightmap.py."""
    ax, ay = (float(v) for v in actor_xy)
    lx, ly = (float(v) for v in light_xy)
    vx, vy = ax - lx, ay - ly
    d = math.hypot(vx, vy)
    if d < 1e-9:
        return ShadowQuad((1.0, 0.0), 0.0, 0.0, 0.0, 0.0)
    ux, uy = vx / d, vy / d
    hx, hy = (float(v) for v in half_size)
    width = 2.0 * (hx * abs(uy) + hy * abs(ux))  # footprint projected on the axis across the beam
    spread = math.atan2(0.5 * width, d)
    angular = 2.0 * spread
    alpha = float(np.clip((max_angle - angular) / max(fade, 1e-9), 0.0, 1.0))
    reach = max(wall_distance + wall_size, 0.0)
    return ShadowQuad((ux, uy), width, float(min(length, math.sqrt(max(reach * reach - 0.25 * width * width, 0.0)))),
                      spread, alpha)


def nearest_light(points_xy: npt.ArrayLike, lights_xy: npt.ArrayLike) -> npt.NDArray[np.intp]:
    """(N,) index of the nearest light of each point (the cache the write-up prepares once per level)."""
    p = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    q = np.asarray(lights_xy, dtype=np.float64).reshape(-1, 2)
    return np.argmin(((p[:, None, :] - q[None, :, :]) ** 2).sum(-1), axis=1)


# --- files -------------------------------------------------------------------------------------------------

FILES = ("lightmap.exr", "lightmap.png", "lightmap.json")
CIRCLES_FILE = "lightmap_circles.exr"
DISTANCE_FILE = "lightmap_distance.exr"
ORIENTATION = "row 0 is y_max, column 0 is x_min"


class Written(list):
    """The paths ``write_outputs`` wrote (a list), with the earlier bake's files it removed: ``removed`` (paths) and
    ``not_removed`` ((path, why) of those it could not remove)."""

    def __init__(self, paths: Iterable[str] = ()):
        super().__init__(paths)
        self.removed: list[str] = []
        self.not_removed: list[tuple[str, str]] = []
        self.stale_removed: list[str] = []  # the staging folders of killed bakes removed first (their names)


def previous_outputs(folder: str) -> list[str]:
    """The names of the files the light-map bake whose ``lightmap.json`` is in ``folder`` wrote there and that are
    still there: the names its ``files`` lists, of those a bake writes (never a path, never another file). None
    without such a ``lightmap.json`` (no file, not JSON, not a light map's)."""
    try:
        with open(os.path.join(folder, "lightmap.json"), encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return []
    if not isinstance(meta, dict) or meta.get("orientation") != ORIENTATION or not isinstance(meta.get("files"), list):
        return []
    ours = (*FILES, CIRCLES_FILE, DISTANCE_FILE)
    names = [n for n in meta["files"] if isinstance(n, str) and n in ours]
    return [n for n in dict.fromkeys(names) if os.path.isfile(os.path.join(folder, n))]


def check_output_folder(folder: str) -> str:
    """Make ``folder`` (and its parents) and prove it can be written by writing and removing a file there (the
    permission bits lie: root passes os.access everywhere, a read-only mount passes it too). Returns its absolute
    path."""
    if not folder or not folder.strip():
        raise LightmapError("No output folder: set the Output Folder of the light map")
    folder = os.path.abspath(folder)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise LightmapError(f"Output {folder!r} is a file, not a folder: choose a folder")
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".envfx_lightmap_probe_", dir=folder)
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise LightmapError(f"Output folder {folder!r} cannot be written ({exc.strerror or exc}): choose a folder you "
                            "can write to") from None
    return folder


def white_point(rgb: np.ndarray, occ: np.ndarray) -> float:
    """The light that the 8-bit PNG shows as white: the 99.5th percentile of the brightest channel on the free
    ground (a few hot spots under the lights clip; 1 when the map is dark)."""
    peak = rgb.max(axis=2)[~occ] if occ is not None and (~occ).any() else rgb.max(axis=2).ravel()
    peak = peak[peak > 0]
    if peak.size == 0:
        return 1.0
    return float(max(np.percentile(peak, 99.5), 1e-12))


def write_outputs(folder: str, result: Result, meta: dict, circles: np.ndarray | None = None,
                  distance: np.ndarray | None = None) -> Written:
    """Write lightmap.exr (linear float RGB), lightmap.png (8-bit sRGB, ``meta['png_white']`` as white) and
    lightmap.json (``meta`` plus region, resolution and orientation), and the light circles and the distance image
    (``distance_image``: the same region, its own resolution, grey RGB) when given. All files
    are written into the bakes' staging folder (``outputs.Staging``) first and moved in together: a failure leaves
    no half-written file, and the staging folders killed bakes left in ``folder`` are removed first. Then the files
    an earlier bake into ``folder`` wrote (``previous_outputs``) and this one does not are removed. Returns the
    paths, with what was removed (``Written``)."""
    folder = check_output_folder(folder)
    white = float(meta.get("png_white") or white_point(result.rgb, result.occupancy))
    doc = dict(meta)
    doc.update(region=[float(v) for v in result.grid.region], resolution=[result.grid.width, result.grid.height],
               orientation=ORIENTATION, png_white=white,
               texel_size=[result.grid.tx, result.grid.ty],
               files=list(FILES) + ([CIRCLES_FILE] if circles is not None else [])
               + ([DISTANCE_FILE] if distance is not None else []))
    # the shared staging folder of every bake (core.outputs): a bake killed here leaves it behind, and the next bake
    # into this folder removes it once its process is gone
    with outputs.Staging(folder, "lightmap", error=LightmapError) as staging:
        tmp = staging.path
        exr.write_exr(os.path.join(tmp, "lightmap.exr"), result.rgb, "RGB")
        png.write_png(os.path.join(tmp, "lightmap.png"), linear_to_srgb(result.rgb / np.float32(white)))
        if circles is not None:
            exr.write_exr(os.path.join(tmp, CIRCLES_FILE), circles, "RGB")
        if distance is not None:
            exr.write_exr(os.path.join(tmp, DISTANCE_FILE), np.repeat(distance[:, :, None], 3, axis=2), "RGB")
        with open(os.path.join(tmp, "lightmap.json"), "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
        stale = [n for n in previous_outputs(folder) if n not in doc["files"]]  # (read before the JSON is replaced)
        paths = Written(staging.commit(doc["files"]))
        paths.stale_removed = list(staging.removed_stale)
        for name in stale:
            path = os.path.join(folder, name)
            try:
                os.remove(path)
                paths.removed.append(path)
            except OSError as exc:
                paths.not_removed.append((path, exc.strerror or str(exc)))
        return paths


def lens_dirt(height: int, width: int, seed: int = 0, spots: int = 60) -> np.ndarray:
    """(H, W) float32 in 0..1: a procedural lens-dirt texture (soft smudges of varied size and strength), for the
    dirty-lens effect when no dirt image is given."""
    rng = np.random.default_rng(seed)
    y = np.arange(height, dtype=np.float32)[:, None] / max(height, width)
    x = np.arange(width, dtype=np.float32)[None, :] / max(height, width)
    out = np.zeros((height, width), dtype=np.float32)
    for cx, cy, r, a in zip(rng.uniform(0, width / max(height, width), spots),
                            rng.uniform(0, height / max(height, width), spots),
                            rng.uniform(0.01, 0.08, spots), rng.uniform(0.2, 1.0, spots)):
        d2 = ((x - np.float32(cx)) ** 2 + (y - np.float32(cy)) ** 2) / np.float32(r * r)
        out += np.float32(a) * np.exp(-d2 * 2.0)
    return np.clip(out, 0.0, 1.0)
