"""Snow-cover generation: snow meshes (levels of detail) over the up-facing terrain, kept from under
occluders, with tapered borders, drift and noise."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .base import DEFAULT_VERTEX_BUDGET, SnowError
from .buffer import rasterize_top


# --- snow cover generation --------------------------------------------------------------------------------

@dataclass(frozen=True)
class CoverParams:
    spacing: float = 0.1
    thickness: float = 0.2
    max_slope: float = math.radians(45.0)    # radians
    border_width: float = 0.3               # distance over which the border tapers to zero thickness
    drift_direction: tuple = (1.0, 0.0)     # wind direction (XY) the snow drifts with
    drift: float = 0.0                      # leeward slopes get (1 + drift * ...) more snow
    noise: float = 0.0                      # relative thickness variation
    noise_scale: float = 2.0                # size of the noise features (scene units)
    seed: int = 0
    lods: int = 1
    vertex_budget: int = DEFAULT_VERTEX_BUDGET

    def validate(self) -> "CoverParams":
        for name in ("spacing", "thickness", "border_width", "drift", "noise", "noise_scale", "max_slope"):
            v = float(getattr(self, name))
            if not math.isfinite(v):
                raise SnowError(f"Snow {name} is {v}: set a finite number")
        if self.spacing <= 0:
            raise SnowError(f"Snow spacing {self.spacing} must be greater than 0")
        if self.thickness < 0 or self.border_width < 0 or self.noise < 0 or self.noise_scale <= 0:
            raise SnowError("Snow thickness, border width and noise must be 0 or more (noise scale above 0)")
        if not 0.0 <= self.max_slope <= math.radians(89.9):
            raise SnowError(f"Max slope {math.degrees(self.max_slope):.1f} deg must be between 0 and 89.9 deg")
        if not 1 <= int(self.lods) <= 8:
            raise SnowError(f"Levels of detail {self.lods} must be between 1 and 8")
        if self.vertex_budget < 1:
            raise SnowError("The vertex budget must be at least 1")
        return self


@dataclass
class CoverMesh:
    vertices: np.ndarray     # (V, 3) float32 world positions (snow top)
    faces: np.ndarray        # (F, 4) int32 quads (corner order counter-clockwise seen from above)
    thickness: np.ndarray    # (V,) float32 snow thickness at each vertex
    ground: np.ndarray       # (V,) float32 terrain z under each vertex
    step: int = 1            # grid step (LOD k has step 2^k)


@dataclass
class SnowCover:
    lods: list = field(default_factory=list)   # CoverMesh per level of detail, finest first
    origin: tuple = (0.0, 0.0)
    spacing: float = 0.0
    shape: tuple = (0, 0)
    covered: np.ndarray | None = None          # (H, W) bool grid
    surface_spacing: tuple = (0.0, 0.0)        # shortest and longest grid edge along the surface (flat, steepest)
    not_finite: int = 0                        # faces left out: a corner that is not a number (NaN or infinite)


def triangle_normals(tris: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    t = np.asarray(tris, dtype=np.float64)
    n = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    length = np.linalg.norm(n, axis=1)
    return n / np.maximum(length, 1e-300)[:, None], length


def up_facing(tris: npt.ArrayLike, max_slope: float) -> npt.NDArray[np.bool_]:
    """Bool mask of triangles whose normal is within ``max_slope`` (radians) of +Z."""
    n, area2 = triangle_normals(tris)
    return (n[:, 2] >= math.cos(max_slope) - 1e-9) & (area2 > 0)


def grid_factor(kept_tris: npt.ArrayLike) -> tuple[float, float]:
    """(factor, stretch): the top-down grid step is ``spacing * factor``. A grid edge running down a slope of
    angle a is ``1 / cos(a)`` longer on the surface than seen from above, one running across it is not, so the
    step is shrunk to centre the surface spacing on the requested one: with the steepest kept face at a*,
    ``factor = 2 cos(a*) / (1 + cos(a*))`` puts flat ground at ``factor`` and the steepest slope at
    ``stretch = factor / cos(a*)`` times the spacing (both within 20 % up to a* = 48 deg). Steeper than that,
    flat ground is kept at 0.8 and the steepest slopes stretch further."""
    n, area2 = triangle_normals(kept_tris)
    nz = n[:, 2][area2 > 0]
    cos_a = float(np.clip(nz.min(), 1e-3, 1.0)) if nz.size else 1.0
    factor = max(2.0 * cos_a / (1.0 + cos_a), 0.8)
    return factor, factor / cos_a


def estimate_vertices(tris: npt.ArrayLike, keep: np.ndarray, spacing: float) -> int:
    """Vertices a spacing would make: the kept faces' top-down area divided by the spacing squared."""
    t = np.asarray(tris, dtype=np.float64)[keep]
    if t.shape[0] == 0:
        return 0
    e1 = t[:, 1, :2] - t[:, 0, :2]
    e2 = t[:, 2, :2] - t[:, 0, :2]
    area = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]).sum()
    return int(math.ceil(area / (spacing * spacing)))


def value_noise(x: npt.ArrayLike, y: npt.ArrayLike, scale: float, seed: int) -> npt.NDArray[np.float64]:
    """Smooth value noise in [-1, 1] at world points, two octaves, deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    table = rng.uniform(-1.0, 1.0, 4096).astype(np.float64)
    total = np.zeros(np.broadcast(x, y).shape)
    amp, norm = 1.0, 0.0
    for octave in range(2):
        fx = np.asarray(x) / (scale / 2 ** octave)
        fy = np.asarray(y) / (scale / 2 ** octave)
        ix, iy = np.floor(fx), np.floor(fy)
        tx, ty = fx - ix, fy - iy
        tx = tx * tx * (3 - 2 * tx)
        ty = ty * ty * (3 - 2 * ty)
        ix = ix.astype(np.int64) + 1013 * octave
        iy = iy.astype(np.int64)

        def h(a, b):
            return table[((a * 73856093) ^ (b * 19349663)) & 4095]

        v = (h(ix, iy) * (1 - tx) + h(ix + 1, iy) * tx) * (1 - ty) + (h(ix, iy + 1) * (1 - tx) + h(ix + 1, iy + 1)
                                                                     * tx) * ty
        total += amp * v
        norm += amp
        amp *= 0.5
    return total / norm


def sample_image(pixels: npt.ArrayLike, uv: npt.ArrayLike) -> np.ndarray:
    """Bilinear sample of an image's brightness (mean of R, G, B) at UVs (N, 2), clamped at the edges.

    ``pixels`` is (H, W, C) with row 0 at the bottom (as Blender stores images); texel centres sit at
    (i + 0.5) / W."""
    img = np.asarray(pixels, dtype=np.float32)
    lum = img[..., :3].mean(-1) if img.shape[-1] >= 3 else img[..., 0]
    h, w = lum.shape
    uv = np.asarray(uv, dtype=np.float64).reshape(-1, 2)
    fx = uv[:, 0] * w - 0.5
    fy = uv[:, 1] * h - 0.5
    x0 = np.floor(fx).astype(np.int64)
    y0 = np.floor(fy).astype(np.int64)
    tx = fx - x0
    ty = fy - y0
    x0m, x1m = np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1)
    y0m, y1m = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
    return ((lum[y0m, x0m] * (1 - tx) + lum[y0m, x1m] * tx) * (1 - ty)
            + (lum[y1m, x0m] * (1 - tx) + lum[y1m, x1m] * tx) * ty)


def _border_distance(covered, spacing, limit):
    """Distance from each covered cell to the nearest uncovered cell (chamfer, up to ``limit``)."""
    h, w = covered.shape
    big = np.float32(limit + 2 * spacing)
    pad = np.zeros((h + 2, w + 2), dtype=np.float32)
    pad[1:-1, 1:-1] = np.where(covered, big, 0.0)
    steps = int(min(256, math.ceil(limit / spacing) + 2))
    diag = np.float32(spacing * math.sqrt(2.0))
    s = np.float32(spacing)
    for _ in range(steps):  # each pass is vectorised over the whole grid
        c = pad[1:-1, 1:-1]
        m = np.minimum.reduce([
            c, pad[:-2, 1:-1] + s, pad[2:, 1:-1] + s, pad[1:-1, :-2] + s, pad[1:-1, 2:] + s,
            pad[:-2, :-2] + diag, pad[:-2, 2:] + diag, pad[2:, :-2] + diag, pad[2:, 2:] + diag,
        ])
        if np.array_equal(m, c):
            break
        pad[1:-1, 1:-1] = m
    return pad[1:-1, 1:-1]


def generate_cover(tris: npt.ArrayLike, params: CoverParams,
                   occluder_tris: np.ndarray | Sequence[npt.ArrayLike] | None = None,
                   mask_weights: npt.ArrayLike | None = None, mask_uvs: npt.ArrayLike | None = None,
                   mask_pixels: npt.ArrayLike | None = None) -> SnowCover:
    """Snow cover over terrain triangles (T, 3, 3, world space).

    - only faces within ``max_slope`` of up get snow;
    - a vertex grid whose edges are ``spacing`` long along the surface (within 20 % on slopes up to 48 deg: see
      ``grid_factor``), the snow top at ground + thickness;
    - no snow where any geometry (``occluder_tris``, and the terrain itself, e.g. overhangs) is above;
    - thickness tapers to zero over ``border_width`` towards the edge of the covered area;
    - drift along ``drift_direction`` and noise vary the thickness; ``mask_weights`` (T, 3) per-corner weights
      (a vertex group) scale it and drop the snow where they are 0, and so does the brightness of the image
      ``mask_pixels`` (H, W, C) at the UVs ``mask_uvs`` (T, 3, 2) interpolated to each grid point;
    - ``lods`` meshes, each with twice the spacing of the previous.
    Raises ``SnowError`` (before building anything big) when there are no up-facing faces or the spacing
    would make more than ``vertex_budget`` vertices.
    """
    params.validate()
    tris = np.asarray(tris, dtype=np.float64).reshape(-1, 3, 3)
    if tris.shape[0] == 0:
        raise SnowError("The selected objects have no faces: select terrain meshes with faces")
    finite = np.isfinite(tris).all(axis=(1, 2))  # a face with a corner that is not a number gets no snow
    not_finite = int(tris.shape[0] - finite.sum())
    if not_finite:
        if not finite.any():
            raise SnowError("Every face of the selection has a corner that is not a number (NaN or infinite): fix "
                            "the terrain's vertices or its transform")
        tris = tris[finite]
        mask_weights = None if mask_weights is None else np.asarray(mask_weights).reshape(-1, 3)[finite]
        mask_uvs = None if mask_uvs is None else np.asarray(mask_uvs).reshape(-1, 3, 2)[finite]
    if not (triangle_normals(tris)[1] > 0).any():
        raise SnowError("Every face of the selection has no area (scaled to 0, or its corners in one line): give "
                        "the terrain a size (its scale) or select terrain with faces")
    keep = up_facing(tris, params.max_slope)
    if not keep.any():
        raise SnowError(
            f"No face of the selection looks up within the max slope of {math.degrees(params.max_slope):.0f} deg: "
            f"raise the max slope or select terrain whose faces point up"
        )
    kept = tris[keep]
    factor, stretch = grid_factor(kept)
    s = float(params.spacing) * factor  # the top-down grid step that gives ``spacing`` along the surface
    estimate = estimate_vertices(tris, keep, s)
    if estimate > params.vertex_budget:
        suggestion = params.spacing * math.sqrt(estimate / params.vertex_budget) * 1.05
        raise SnowError(
            f"A spacing of {params.spacing:g} would make about {estimate:,} vertices, over the budget of "
            f"{params.vertex_budget:,}: use a spacing of at least {suggestion:.3g} or raise the budget"
        )
    lo = kept[:, :, :2].reshape(-1, 2).min(0)
    hi = kept[:, :, :2].reshape(-1, 2).max(0)
    w = int(math.floor((hi[0] - lo[0]) / s + 1e-6)) + 1   # a size of exactly n spacings gets n + 1 points
    h = int(math.floor((hi[1] - lo[1]) / s + 1e-6)) + 1
    if w * h > 4 * max(params.vertex_budget, 1024) + 1_000_000:
        raise SnowError(
            f"The snow area spans {w} x {h} grid points at a spacing of {s:g}: use a larger spacing"
        )
    # grid points at lo + i*s sit on texel centres of a raster whose origin is lo - s/2
    origin = lo - 0.5 * s
    z_snow, tri_idx, bary = rasterize_top(kept, origin, s, (h, w))
    occ = np.zeros((0, 3, 3)) if occluder_tris is None else np.asarray(occluder_tris, dtype=np.float64)
    occ = occ.reshape(-1, 3, 3)
    occ = occ[np.isfinite(occ).all(axis=(1, 2))]  # (a face with a corner that is not a number hides nothing)
    all_tris = np.concatenate([tris, occ]) if occ.shape[0] else tris
    z_top, _, _ = rasterize_top(all_tris, origin, s, (h, w))
    extent = float(max(hi[0] - lo[0], hi[1] - lo[1], 1e-12))
    eps = 1e-4 * s + 1e-9 * extent
    covered = np.isfinite(z_snow) & ~(z_top > z_snow + eps)
    if mask_weights is not None:
        mw = np.asarray(mask_weights, dtype=np.float64).reshape(-1, 3)[keep]
        ti = np.where(tri_idx >= 0, tri_idx, 0)
        mask = np.einsum("hwk,hwk->hw", mw[ti], bary)
        mask = np.where(tri_idx >= 0, mask, 0.0)
        covered &= mask > 1e-6
    else:
        mask = np.ones((h, w))
    if mask_uvs is not None and mask_pixels is not None:
        uvs = np.asarray(mask_uvs, dtype=np.float64).reshape(-1, 3, 2)[keep]
        ti = np.where(tri_idx >= 0, tri_idx, 0)
        cell_uv = np.einsum("hwkc,hwk->hwc", uvs[ti], bary)
        tex = sample_image(mask_pixels, cell_uv.reshape(-1, 2)).reshape(h, w)
        mask = mask * np.where(tri_idx >= 0, tex, 0.0)
        covered &= mask > 1e-6
    if not covered.any():
        raise SnowError("Nothing is left to cover: every up-facing face is under other geometry or masked out")
    gx = lo[0] + np.arange(w) * s
    gy = lo[1] + np.arange(h) * s
    X, Y = np.meshgrid(gx, gy)
    thick = np.full((h, w), float(params.thickness))
    if params.border_width > 0:
        dist = _border_distance(covered, s, params.border_width + s)
        tt = np.clip((dist - s) / params.border_width, 0.0, 1.0)
        thick *= tt * tt * (3 - 2 * tt)
    else:
        # the outermost ring still goes to zero so the cover meets the ground
        dist = _border_distance(covered, s, s)
        thick *= dist > s * 1.01
    if params.drift > 0:
        n, _ = triangle_normals(kept)
        ti = np.where(tri_idx >= 0, tri_idx, 0)
        wd = np.asarray(params.drift_direction, dtype=np.float64)[:2]
        wd = wd / max(np.linalg.norm(wd), 1e-12)
        lee = n[ti, 0] * wd[0] + n[ti, 1] * wd[1]  # slopes facing downwind collect snow
        thick *= np.maximum(0.0, 1.0 + params.drift * lee / max(math.sin(max(params.max_slope, 1e-3)), 1e-3))
    if params.noise > 0:
        thick *= np.maximum(0.0, 1.0 + params.noise * value_noise(X, Y, params.noise_scale, params.seed))
    thick *= np.clip(mask, 0.0, 1.0)
    thick = np.where(covered, thick, 0.0)
    ground = np.where(covered, z_snow, 0.0)
    cover = SnowCover(origin=(float(lo[0]), float(lo[1])), spacing=s, shape=(h, w), covered=covered,
                      surface_spacing=(float(params.spacing) * factor, float(params.spacing) * stretch),
                      not_finite=not_finite)
    for level in range(int(params.lods)):
        step = 2 ** level
        cover.lods.append(_grid_mesh(covered, X, Y, ground, thick, step))
        if cover.lods[-1].vertices.shape[0] == 0:
            cover.lods.pop()
            break
    return cover


# The live trails' lookup table ("EnvFX Snow Trails"): TRAIL_CELLS x TRAIL_CELLS cells over the snow's bounding
# box (x, y of its object space), cell size = the larger side / TRAIL_CELLS.
TRAIL_CELLS = 128


def trail_cells(vertices: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The trails' table cell (row * TRAIL_CELLS + column) of each vertex, as the node group computes it."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    if v.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    lo = v.min(0)
    ext = v.max(0) - lo
    size = max(max(ext[0], ext[1]) / TRAIL_CELLS, 1e-9)
    cx = np.clip(np.floor((v[:, 0] - lo[0]) / size), 0, TRAIL_CELLS - 1)
    cy = np.clip(np.floor((v[:, 1] - lo[1]) / size), 0, TRAIL_CELLS - 1)
    return (cy * TRAIL_CELLS + cx).astype(np.int64)


def by_trail_cells(mesh: CoverMesh) -> CoverMesh:
    """The same mesh with its vertices laid out cell after cell of the trails' table (each cell's vertices
    together, in their order). The live trails move whole cells of vertices, so laid out this way the vertices
    they move form long runs instead of short pieces of grid rows: measured ~6% off a trails frame (1M
    vertices, 32 actors) on Blender 5.0. The shape, faces and values are unchanged."""
    order = np.argsort(trail_cells(mesh.vertices), kind="stable")
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return CoverMesh(vertices=mesh.vertices[order], faces=inverse[mesh.faces].astype(np.int32),
                     thickness=mesh.thickness[order], ground=mesh.ground[order], step=mesh.step)


def _grid_mesh(covered, X, Y, ground, thick, step) -> CoverMesh:
    c = covered[::step, ::step]
    h, w = c.shape
    ids = np.full((h, w), -1, dtype=np.int64)
    ids[c] = np.arange(int(c.sum()))
    quad = c[:-1, :-1] & c[:-1, 1:] & c[1:, 1:] & c[1:, :-1]
    jy, jx = np.nonzero(quad)
    faces = np.stack([ids[jy, jx], ids[jy, jx + 1], ids[jy + 1, jx + 1], ids[jy + 1, jx]], axis=1)
    g = ground[::step, ::step][c]
    t = thick[::step, ::step][c]
    verts = np.stack([X[::step, ::step][c], Y[::step, ::step][c], g + t], axis=1)
    return by_trail_cells(CoverMesh(vertices=verts.astype(np.float32), faces=faces.astype(np.int32),
                                    thickness=t.astype(np.float32), ground=g.astype(np.float32), step=step))
