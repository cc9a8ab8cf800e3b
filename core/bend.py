"""World bend ("rolling world") math, pure numpy.

The write-up (Kweetet / Deathspank) displaces every vertex in the vertex shader after moving it to world
space: ``z -= a * max(0, |f - h| - s)^2`` where ``f`` is the world coordinate along the forward axis, ``h``
the horizon (pivot position plus an offset), ``s`` the flat spread around the pivot and ``a`` the strength.

Blender is Z-up, so the drop is along world -Z and the forward axis is a horizontal axis (+/-X, +/-Y).
Modes:

RUNNER        drop = a * max(0, |f - h| - s)^2
RUNNER_2AXIS  drop = a * max(0, |f - h| - s)^2 + a_side * max(0, |g - g0| - s_side)^2
PLANET        drop = a * max(0, r - s)^2, r the horizontal distance from the centre
CYLINDER      drop = a * max(0, |g - g0| - s)^2 (roll-off across the forward axis only)

``g`` is the sideways coordinate (the axis 90 degrees to the left of forward), ``g0`` and the planet's centre
come from the pivot; the horizon offset moves the centre along the forward axis in every mode.

The drop depends on the horizontal position only, so the mapping physical -> visual is one-to-one everywhere
and the inverse is exact: add the drop back. Its Jacobian is the identity with -grad(drop) in the z row, so
normals and tangents bend in closed form (``forward_normals``, ``forward_tangents``), and a point within a view
distance of the pivot moves by at most ``view_margin`` (what an engine's culling bounds must grow by).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MODES = ("RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER")
AXES = ("POS_X", "NEG_X", "POS_Y", "NEG_Y")

# |strength| above this folds a 10 m scene by kilometres: refused as a typing mistake.
MAX_STRENGTH = 100.0
# a flat zone or horizon offset beyond this (1000 km) is a typing mistake too; far beyond it the numbers overflow
# a shader's float (Blender clamps an infinite one to 3.4e38, which Unreal's centimetres turn into infinity)
MAX_DISTANCE = 1e6

_AXIS_VECTORS = {
    "POS_X": (1.0, 0.0, 0.0),
    "NEG_X": (-1.0, 0.0, 0.0),
    "POS_Y": (0.0, 1.0, 0.0),
    "NEG_Y": (0.0, -1.0, 0.0),
}


class BendError(ValueError):
    """Invalid bend parameters; the message says what is wrong and what to do."""


@dataclass(frozen=True)
class BendParams:
    mode: str = "RUNNER"
    axis: str = "POS_Y"
    pivot: tuple = (0.0, 0.0, 0.0)
    horizon_offset: float = 0.0
    strength: float = 0.01
    spread: float = 2.0
    side_strength: float = 0.01
    side_spread: float = 2.0
    enabled: bool = True

    def validate(self) -> "BendParams":
        if self.mode not in MODES:
            raise BendError(f"Unknown bend mode {self.mode!r}: use one of {', '.join(MODES)}")
        if self.axis not in AXES:
            raise BendError(f"Unknown bend axis {self.axis!r}: use one of {', '.join(AXES)}")
        for name in ("horizon_offset", "strength", "spread", "side_strength", "side_spread"):
            value = float(getattr(self, name))
            if not np.isfinite(value):
                raise BendError(f"Bend {name} is {value}: set a finite number")
        for name in ("horizon_offset", "spread", "side_spread"):
            if abs(getattr(self, name)) > MAX_DISTANCE:
                raise BendError(f"Bend {name} {getattr(self, name)} is enormous (limit {MAX_DISTANCE:.0f} m): use a "
                                f"distance in metres, like 2")
        for name in ("spread", "side_spread"):
            if getattr(self, name) < 0.0:
                raise BendError(
                    f"Bend {name} is {getattr(self, name)}: the flat zone cannot be negative, use 0 or more"
                )
        for name in ("strength", "side_strength"):
            if abs(getattr(self, name)) > MAX_STRENGTH:
                raise BendError(
                    f"Bend {name} {getattr(self, name)} is enormous (limit {MAX_STRENGTH}): the world would fold "
                    f"out of sight; use a value like 0.01 per metre"
                )
        pivot = np.asarray(self.pivot, dtype=np.float64)
        if pivot.shape != (3,) or not np.all(np.isfinite(pivot)):
            raise BendError(f"Bend pivot {self.pivot!r} must be three finite numbers")
        return self


def axis_vectors(axis: str) -> tuple[np.ndarray, np.ndarray]:
    """(forward, side) unit vectors in world space; side is forward turned 90 degrees left about +Z."""
    if axis not in _AXIS_VECTORS:
        raise BendError(f"Unknown bend axis {axis!r}: use one of {', '.join(AXES)}")
    f = np.array(_AXIS_VECTORS[axis])
    side = np.array([-f[1], f[0], 0.0])
    return f, side


def centre(params: BendParams) -> np.ndarray:
    """World point the bend is centred on: the pivot moved by the horizon offset along forward."""
    f, _ = axis_vectors(params.axis)
    return np.asarray(params.pivot, dtype=np.float64) + params.horizon_offset * f


def _falloff(coord, spread):
    d = np.maximum(np.abs(coord) - spread, 0.0)
    return d * d


def drop(points: np.ndarray, params: BendParams) -> np.ndarray:
    """How far each world point moves down (negative moves it up). points: (N, 3) or (N, 2)."""
    params.validate()
    p = np.asarray(points, dtype=np.float64)
    if not params.enabled:
        return np.zeros(p.shape[0])
    f, side = axis_vectors(params.axis)
    c = centre(params)
    rel_x = p[:, 0] - c[0]
    rel_y = p[:, 1] - c[1]
    along = rel_x * f[0] + rel_y * f[1]
    across = rel_x * side[0] + rel_y * side[1]
    if params.mode == "RUNNER":
        return params.strength * _falloff(along, params.spread)
    if params.mode == "RUNNER_2AXIS":
        return params.strength * _falloff(along, params.spread) + params.side_strength * _falloff(
            across, params.side_spread
        )
    if params.mode == "PLANET":
        r = np.sqrt(rel_x * rel_x + rel_y * rel_y)
        return params.strength * _falloff(r, params.spread)
    # CYLINDER
    return params.strength * _falloff(across, params.spread)


def forward(points: np.ndarray, params: BendParams) -> np.ndarray:
    """Physical world points -> where they are drawn (visual)."""
    p = np.array(points, dtype=np.float64, copy=True)
    if p.size == 0:
        return p.reshape(-1, 3)
    p[:, 2] -= drop(p, params)
    return p


def gradient(points: np.ndarray, params: BendParams) -> np.ndarray:
    """The drop's slope at each world point: (N, 3) with (d drop / dx, d drop / dy, 0). The drop depends on the
    horizontal position only, so the slope is the same at a point and at where it is drawn. At a flat zone's
    edge (where the drop's second derivative jumps) the slope is still continuous."""
    params.validate()
    p = np.atleast_2d(np.asarray(points, dtype=np.float64))
    out = np.zeros((p.shape[0], 3))
    if not params.enabled or p.shape[0] == 0:
        return out
    f, side = axis_vectors(params.axis)
    c = centre(params)
    rel_x = p[:, 0] - c[0]
    rel_y = p[:, 1] - c[1]

    def along_axis(vec, strength, spread):
        u = rel_x * vec[0] + rel_y * vec[1]
        # d/du of strength * max(|u| - spread, 0)^2
        slope = 2.0 * strength * np.maximum(np.abs(u) - spread, 0.0) * np.sign(u)
        return slope[:, None] * vec[None, :]

    if params.mode == "RUNNER":
        out += along_axis(f, params.strength, params.spread)
    elif params.mode == "RUNNER_2AXIS":
        out += along_axis(f, params.strength, params.spread)
        out += along_axis(side, params.side_strength, params.side_spread)
    elif params.mode == "PLANET":
        r = np.sqrt(rel_x * rel_x + rel_y * rel_y)
        d = np.maximum(r - params.spread, 0.0)
        k = 2.0 * params.strength * d / np.maximum(r, 1e-300)  # d is 0 where r is (spread 0 included: d/r = 1)
        out[:, 0] = k * rel_x
        out[:, 1] = k * rel_y
    else:  # CYLINDER
        out += along_axis(side, params.strength, params.spread)
    out[:, 2] = 0.0
    return out


def jacobian(points: np.ndarray, params: BendParams) -> np.ndarray:
    """d forward / d point at each world point: (N, 3, 3), the identity with the bottom row (-gx, -gy, 1) (the
    bend moves z by -drop(x, y)). Its determinant is 1: the bend keeps volumes and never flips a triangle."""
    g = gradient(points, params)
    jac = np.broadcast_to(np.eye(3), (g.shape[0], 3, 3)).copy()
    jac[:, 2, 0] = -g[:, 0]
    jac[:, 2, 1] = -g[:, 1]
    return jac


def _unit(vectors: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(length > 0.0, length, 1.0)


def forward_normals(points: np.ndarray, normals: np.ndarray, params: BendParams) -> np.ndarray:
    """World normals at physical world points -> the unit normals of the bent surface there: the inverse
    transpose of the Jacobian applied to each normal, ``n + g * n_z`` (g the drop's slope), normalised. A zero
    normal stays zero."""
    n = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    g = gradient(points, params)
    return _unit(n + g * n[:, 2:3])


def forward_tangents(points: np.ndarray, tangents: np.ndarray, params: BendParams) -> np.ndarray:
    """World tangents (or bitangents: any direction in the surface) at physical world points -> the unit
    directions of the bent surface there: the Jacobian applied, ``t - (g . t) z``, normalised. The handedness of a
    tangent frame (the sign a game stores in the tangent's w) stays: the Jacobian's determinant is 1."""
    t = np.asarray(tangents, dtype=np.float64).reshape(-1, 3)
    g = gradient(points, params)
    out = t.copy()
    out[:, 2] -= np.sum(g * t, axis=1)
    return _unit(out)


def view_margin(params: BendParams, view_distance: float) -> tuple[float, float]:
    """(down, up): how far the bend can move a point down and up when the point is within ``view_distance``
    (horizontally) of the pivot, wherever the pivot is. This is what an object's flat bounds must grow by, below
    and above, so that the engine culls it like its bent self while the game draws nothing farther than
    ``view_distance`` from the pivot (the player or camera). The bend moves points vertically only."""
    params.validate()
    view = float(view_distance)
    if not (np.isfinite(view) and view >= 0.0):
        raise BendError(f"View distance {view_distance} must be a finite distance of 0 or more: how far from the "
                        f"pivot the game draws anything")
    if not params.enabled:
        return 0.0, 0.0
    # the farthest a visible point's coordinate (or radius) reaches from the bend's centre: the horizon offset
    # moves the centre along forward, not sideways
    reach = view + abs(params.horizon_offset)
    terms = {
        "RUNNER": [(params.strength, reach, params.spread)],
        "RUNNER_2AXIS": [(params.strength, reach, params.spread), (params.side_strength, view, params.side_spread)],
        "PLANET": [(params.strength, reach, params.spread)],
        "CYLINDER": [(params.strength, view, params.spread)],
    }[params.mode]
    down = up = 0.0
    for strength, coord, spread in terms:
        drop_most = strength * max(coord - spread, 0.0) ** 2
        if drop_most > 0.0:
            down += drop_most
        else:
            up -= drop_most
    return float(down), float(up)


def bent_bounds(bmin: npt.ArrayLike, bmax: npt.ArrayLike, params: BendParams, view_distance: float
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """A world-space box (min, max corners) grown by ``view_margin``: it holds the bent object wherever the pivot
    is, for every point of the object within ``view_distance`` of the pivot."""
    down, up = view_margin(params, view_distance)
    lo = np.asarray(bmin, dtype=np.float64) - np.array([0.0, 0.0, down])
    hi = np.asarray(bmax, dtype=np.float64) + np.array([0.0, 0.0, up])
    return lo, hi


def inverse(points: np.ndarray, params: BendParams) -> np.ndarray:
    """Visual world points -> the physical points that are drawn there. Exact: the drop depends on x, y only."""
    p = np.array(points, dtype=np.float64, copy=True)
    if p.size == 0:
        return p.reshape(-1, 3)
    p[:, 2] += drop(p, params)
    return p


# a matrix whose smallest singular value is below this fraction of its largest flattens the object: its object
# space cannot be recovered from world space (a zero scale on an axis, its own or a parent's)
FLAT_RATIO = 1e-6


def is_flattened(matrix_world: np.ndarray) -> bool:
    """Whether the 4x4 ``matrix_world`` squashes the object flat (or to a line or a point): a scale of zero, or
    nearly, on some axis. Such an object has no object-space "down", so its bend cannot be baked."""
    s = np.linalg.svd(np.asarray(matrix_world, dtype=np.float64)[:3, :3], compute_uv=False)
    return not np.all(np.isfinite(s)) or s[-1] <= FLAT_RATIO * s[0] or s[0] == 0.0


def has_down(matrix_world: np.ndarray) -> bool:
    """Whether the live bend moves an object with ``matrix_world`` (4x4): its object-space "down" ``L^-1 (0, 0, -1)``
    is finite and its length times the length of ``L`` (the root of its squared entries) is below ``1 / FLAT_RATIO``.
    An object scaled to nothing (its own scale or a parent's) has none, and the live bend leaves it as it is."""
    lin = np.asarray(matrix_world, dtype=np.float64)[:3, :3]
    with np.errstate(all="ignore"):
        try:
            down = np.linalg.solve(lin, np.array([0.0, 0.0, -1.0]))
        except np.linalg.LinAlgError:
            return False
        reach = np.linalg.norm(down) * np.linalg.norm(lin)
    return bool(np.isfinite(reach) and reach < 1.0 / FLAT_RATIO)


def live_local(local: np.ndarray, matrix_world: np.ndarray, params: BendParams) -> np.ndarray:
    """What the live bend modifier outputs (the node group's twin): ``forward_local``, or the points unchanged
    for an object without a usable "down" (``has_down``) or a bend switched off."""
    p = np.asarray(local, dtype=np.float64).reshape(-1, 3)
    if not params.enabled or not has_down(matrix_world):
        return p.copy()
    m = np.asarray(matrix_world, dtype=np.float64)
    lin = m[:3, :3]
    d = drop(p @ lin.T + m[:3, 3], params)
    return p + d[:, None] * np.linalg.solve(lin, np.array([0.0, 0.0, -1.0]))[None, :]


def forward_local(local: np.ndarray, matrix_world: np.ndarray, params: BendParams) -> np.ndarray:
    """What the bend modifier outputs: object-space points of an object with ``matrix_world`` (4x4),
    bent in world space and brought back to object space. Works for any invertible matrix (rotation,
    non-uniform or negative scale, parents); a flattened one (``is_flattened``) raises BendError."""
    m = np.asarray(matrix_world, dtype=np.float64)
    if is_flattened(m):
        raise BendError("The object's scale is zero on an axis (its own or a parent's): give it a non-zero scale, "
                        "or apply its scale (Object > Apply > Scale)")
    lin = m[:3, :3]
    p = np.asarray(local, dtype=np.float64).reshape(-1, 3)
    world = p @ lin.T + m[:3, 3]
    d = drop(world, params)
    # moving the world point down by d is moving the local point by d * (L^-1 @ -Z)
    down_local = np.linalg.solve(lin, np.array([0.0, 0.0, -1.0]))
    return p + d[:, None] * down_local[None, :]


def pick(
    origins: np.ndarray,
    directions: np.ndarray,
    params: BendParams,
    ground_z: float = 0.0,
    max_distance: float = 1.0e4,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Where camera rays meet the bent ground, and which physical point that is.

    The ground is the physical plane ``z = ground_z``; it is drawn at ``ground_z - drop(x, y)``.
    Returns ``(hit, visual, physical, t)``: a bool mask of rays that hit within ``max_distance``,
    the visual hit points, the physical points (where the game should act), and the ray parameters.
    Rays that miss have NaN points and t.

    Along a ray the signed height above the drawn ground, h(t) = o_z + t d_z - ground_z + drop(x(t), y(t)),
    is convex for a downward bend (drop is a convex function of the horizontal position) and concave for an
    upward one, so the first hit is found exactly: minimise (convex case) or test the far end (concave case),
    then bisect. A two-axis bend whose strengths have opposite signs is neither; there h is quadratic between
    the points where the ray crosses an edge of a flat zone, so each such piece is convex or concave and the
    first piece that reaches the ground holds the first hit. Only the strengths the mode uses count.
    """
    params.validate()
    o = np.atleast_2d(np.asarray(origins, dtype=np.float64))
    d = np.atleast_2d(np.asarray(directions, dtype=np.float64))
    o, d = np.broadcast_arrays(o, d)
    n = o.shape[0]
    norms = np.linalg.norm(d, axis=1)
    if np.any(norms == 0.0):
        raise BendError("A pick ray has zero direction: pass a non-zero direction vector")
    d = d / norms[:, None]

    def height(t):
        pts = o + t[:, None] * d
        return pts[:, 2] - ground_z + drop(pts, params)

    t_hi = np.full(n, float(max_distance))
    used = (params.strength, params.side_strength) if params.mode == "RUNNER_2AXIS" else (params.strength,)
    if not params.enabled or all(a >= 0.0 for a in used) or all(a <= 0.0 for a in used):
        convex = not params.enabled or all(a >= 0.0 for a in used)
        pieces = [(np.zeros(n), t_hi, np.full(n, convex))]
    else:
        pieces = _quadratic_pieces(o, d, params, t_hi, height)

    h0 = height(np.zeros(n))
    hit = np.zeros(n, dtype=bool)
    bracket_lo = np.zeros(n)
    bracket_hi = np.zeros(n)
    for start, end, convex in pieces:
        # the first piece whose lowest point is on or below the ground holds the first hit (before it, h > 0):
        # a convex piece is lowest at its minimum, a concave one at an end, and h(start) > 0
        low = np.where(convex, _convex_minimum(height, start, end), end) if convex.any() else end
        new = ~hit & (h0 >= 0.0) & (height(low) <= 0.0)
        bracket_lo = np.where(new, start, bracket_lo)
        bracket_hi = np.where(new, low, bracket_hi)
        hit |= new

    lo = bracket_lo
    hi = np.where(hit, bracket_hi, 0.0)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        above = height(mid) > 0.0
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    t = np.where(hit, 0.5 * (lo + hi), np.nan)
    visual = o + t[:, None] * d
    physical = visual.copy()
    physical[:, 2] = np.where(hit, ground_z, np.nan)
    return hit, visual, physical, t


def _convex_minimum(height, lo, hi):
    """Where a convex ``height(t)`` is lowest on [lo, hi] (per ray): golden-section search."""
    lo, hi = lo.copy(), hi.copy()
    g = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(90):
        a = hi - g * (hi - lo)
        b = lo + g * (hi - lo)
        left = height(a) < height(b)
        hi = np.where(left, b, hi)
        lo = np.where(left, lo, a)
    return 0.5 * (lo + hi)


def _quadratic_pieces(o, d, params: BendParams, t_hi, height):
    """[(start, end, convex)] per ray, in order along the ray, for a two-axis bend with strengths of opposite
    signs: between the ray parameters where it crosses an edge of a flat zone, h(t) is one quadratic, convex or
    concave by the sign of its second difference."""
    f, side = axis_vectors(params.axis)
    c = centre(params)
    cuts = [np.zeros(len(o)), t_hi]
    for vec, spread in ((f, params.spread), (side, params.side_spread)):
        u = (o[:, 0] - c[0]) * vec[0] + (o[:, 1] - c[1]) * vec[1]
        du = d[:, 0] * vec[0] + d[:, 1] * vec[1]
        for edge in (-spread, spread):
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(du != 0.0, (edge - u) / du, 0.0)
            cuts.append(np.clip(np.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0), 0.0, t_hi))
    cuts = np.sort(np.stack(cuts, axis=1), axis=1)
    pieces = []
    for k in range(cuts.shape[1] - 1):
        start, end = cuts[:, k], cuts[:, k + 1]
        second = height(start) - 2.0 * height(0.5 * (start + end)) + height(end)
        pieces.append((start, end, second >= 0.0))
    return pieces


def max_drop_over_box(bmin: Sequence[float] | np.ndarray, bmax: Sequence[float] | np.ndarray,
                      params: BendParams) -> float:
    """Largest absolute drop over the corners and mid-edges of a world-space bounding box (warning helper)."""
    xs = np.linspace(bmin[0], bmax[0], 5)
    ys = np.linspace(bmin[1], bmax[1], 5)
    gx, gy = np.meshgrid(xs, ys)
    pts = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1)
    c = centre(params)
    pts = np.concatenate([pts, c[None, :]])
    return float(np.max(np.abs(drop(pts, params))))


# --- Coarse meshes ---------------------------------------------------------------------------------------------
# A vertex-shader bend moves vertices only: between two vertices an edge stays straight, so a mesh needs vertices
# along the bend. Over an edge whose horizontal length along a drop ``a * u^2`` is ``h``, the straight edge is off
# the curve by at most ``|a| * h^2 / 4`` (linear interpolation of a function whose second derivative is ``2a``:
# ``f'' * h^2 / 8``). The flat zone only lowers the second derivative, and a planet's radial drop bends no edge
# more than a runner's of the same strength, so the bound holds in every mode.

# what Add Bend and the Bend panel accept by default: a straight edge 5 cm off the curve it should follow
DEFAULT_TOLERANCE = 0.05
# Subdivision levels the fix may add: each level quadruples the faces (level 6: 4096 faces per face)
MAX_SUBDIVISION_LEVELS = 6


def edge_errors(points: np.ndarray, edges: np.ndarray, params: BendParams) -> np.ndarray:
    """How far each straight edge between two bent vertices can be from the bent surface it should follow:
    ``|a| * h^2 / 4`` per bend term, ``h`` the edge's length along that term's axis (horizontal length for a
    planet), counted only for an edge that reaches the bent region (beyond the flat zone at the current pivot).

    points: (N, 3) world positions; edges: (E, 2) vertex indices. Returns (E,) float64, 0 for edges in the flat
    zone and for a disabled bend."""
    params.validate()
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    out = np.zeros(e.shape[0])
    if not params.enabled or e.shape[0] == 0:
        return out
    f, side = axis_vectors(params.axis)
    c = centre(params)
    rel = p[:, :2] - c[:2]
    a, b = rel[e[:, 0]], rel[e[:, 1]]

    def term(strength, vec, spread):
        ua, ub = a @ vec[:2], b @ vec[:2]
        bent = np.maximum(np.abs(ua), np.abs(ub)) > spread  # |u| is convex: an edge's largest |u| is at an end
        return np.where(bent, abs(strength) * (ub - ua) ** 2 / 4.0, 0.0)

    if params.mode == "RUNNER":
        out += term(params.strength, f, params.spread)
    elif params.mode == "RUNNER_2AXIS":
        out += term(params.strength, f, params.spread) + term(params.side_strength, side, params.side_spread)
    elif params.mode == "CYLINDER":
        out += term(params.strength, side, params.spread)
    else:  # PLANET: the second derivative of (r - s)^2 along any horizontal direction is at most 2
        bent = np.maximum(np.hypot(a[:, 0], a[:, 1]), np.hypot(b[:, 0], b[:, 1])) > params.spread
        out += np.where(bent, abs(params.strength) * np.sum((b - a) ** 2, axis=1) / 4.0, 0.0)
    return out


def subdivision_levels(error: float, tolerance: float) -> int:
    """How many times an edge ``error`` off the curve must be halved to come within ``tolerance``: each halving
    (a Simple subdivision level) divides the error by 4. Not capped (compare with MAX_SUBDIVISION_LEVELS)."""
    tolerance = float(tolerance)
    if not (np.isfinite(tolerance) and tolerance > 0.0):
        raise BendError(f"Tolerance {tolerance} must be a distance above 0: how far a straight edge may be from "
                        f"the bent curve, like 0.05 m")
    if not error > tolerance:
        return 0
    return int(np.ceil(np.log(float(error) / tolerance) / np.log(4.0) - 1e-9))
