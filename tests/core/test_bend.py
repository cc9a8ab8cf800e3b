"""World bend math (core.bend), no Blender."""

from typing import Any

import numpy as np
import pytest

from core import bend as cb

MODES = cb.MODES


def params(**kw):
    base: dict[str, Any] = dict(mode="RUNNER", axis="POS_Y", pivot=(1.0, -2.0, 0.5), horizon_offset=1.5, strength=0.05,
                spread=2.0, side_strength=0.03, side_spread=1.0)
    base.update(kw)
    return cb.BendParams(**base)


def test_runner_matches_the_write_up_formula():
    p = params(mode="RUNNER", axis="POS_Y")
    pts = np.array([[0.0, y, 0.0] for y in np.linspace(-20, 20, 81)])
    h = -2.0 + 1.5
    expected = 0.05 * np.maximum(0.0, np.abs(pts[:, 1] - h) - 2.0) ** 2
    out = cb.forward(pts, p)
    np.testing.assert_allclose(out[:, 2], -expected, atol=1e-12)
    np.testing.assert_array_equal(out[:, :2], pts[:, :2])


@pytest.mark.parametrize("axis,coord", [("POS_X", 0), ("NEG_X", 0), ("POS_Y", 1), ("NEG_Y", 1)])
def test_axis_and_sign_of_horizon_offset(axis, coord):
    p = params(axis=axis, pivot=(0.0, 0.0, 0.0), horizon_offset=3.0, spread=0.0)
    sign = -1.0 if axis.startswith("NEG") else 1.0
    top = np.zeros((1, 3))
    top[0, coord] = 3.0 * sign
    assert cb.drop(top, p)[0] == pytest.approx(0.0, abs=1e-12)  # the top of the parabola is ahead of the pivot
    behind = np.zeros((1, 3))
    assert cb.drop(behind, p)[0] == pytest.approx(0.05 * 9.0)


def test_flat_zone_is_flat_and_edges_are_continuous():
    p = params(mode="RUNNER_2AXIS", pivot=(0.0, 0.0, 0.0), horizon_offset=0.0)
    inside = np.array([[0.9, 1.9, 3.0], [-0.99, -1.99, 0.0]])
    assert np.all(cb.drop(inside, p) == 0.0)
    eps = 1e-7
    edge = np.array([[0.0, 2.0 + eps, 0.0], [1.0 + eps, 0.0, 0.0]])
    assert np.all(cb.drop(edge, p) < 1e-12)  # C1 at the flat-zone edge: no step
    # both sides of the horizon are symmetric
    a = cb.drop(np.array([[0.0, 7.0, 0.0]]), p)
    b = cb.drop(np.array([[0.0, -7.0, 0.0]]), p)
    assert a[0] == pytest.approx(b[0]) and a[0] > 0


def test_planet_is_radial_and_cylinder_is_sideways_only():
    planet = params(mode="PLANET", pivot=(0.0, 0.0, 0.0), horizon_offset=0.0, spread=1.0)
    ang = np.linspace(0, 2 * np.pi, 17)
    ring = np.stack([5 * np.cos(ang), 5 * np.sin(ang), np.zeros_like(ang)], axis=1)
    d = cb.drop(ring, planet)
    np.testing.assert_allclose(d, 0.05 * 16.0)
    cyl = params(mode="CYLINDER", axis="POS_Y", pivot=(0.0, 0.0, 0.0), horizon_offset=0.0, spread=1.0)
    along = np.array([[0.0, y, 0.0] for y in (-50.0, 0.0, 50.0)])
    assert np.all(cb.drop(along, cyl) == 0.0)
    across = np.array([[4.0, 10.0, 0.0]])
    assert cb.drop(across, cyl)[0] == pytest.approx(0.05 * 9.0)


def test_negative_strength_bends_up():
    p = params(strength=-0.05)
    assert cb.forward(np.array([[0.0, 30.0, 0.0]]), p)[0, 2] > 0.0


def test_disabled_is_identity():
    p = params(enabled=False)
    pts = np.random.default_rng(1).normal(size=(50, 3)) * 30
    np.testing.assert_array_equal(cb.forward(pts, p), pts)


@pytest.mark.parametrize("mode", MODES)
def test_inverse_of_forward_is_identity(mode):
    rng = np.random.default_rng(3)
    pts = rng.uniform(-40, 40, size=(2000, 3))
    p = params(mode=mode)
    np.testing.assert_allclose(cb.inverse(cb.forward(pts, p), p), pts, atol=1e-9)
    np.testing.assert_allclose(cb.forward(cb.inverse(pts, p), p), pts, atol=1e-9)


def test_forward_local_matches_world_space_for_any_matrix():
    rng = np.random.default_rng(5)
    p = params(mode="PLANET")
    for _ in range(10):
        m = np.eye(4)
        m[:3, :3] = rng.normal(size=(3, 3))  # shear, non-uniform and negative scale
        m[:3, 3] = rng.normal(size=3) * 10
        local = rng.normal(size=(100, 3)) * 3
        world = local @ m[:3, :3].T + m[:3, 3]
        bent_local = cb.forward_local(local, m, p)
        bent_world = bent_local @ m[:3, :3].T + m[:3, 3]
        np.testing.assert_allclose(bent_world, cb.forward(world, p), atol=1e-8)


@pytest.mark.parametrize("scale", [(1, 1, 0), (0, 1, 1), (1, 1, 1e-9), (0, 0, 0)])
def test_forward_local_names_a_flattened_object_instead_of_failing_in_numpy(scale):
    m = np.diag([*scale, 1.0]).astype(float)
    m[:3, :3] = m[:3, :3] @ np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # rotated too
    assert cb.is_flattened(m)
    with pytest.raises(cb.BendError, match="scale is zero on an axis"):
        cb.forward_local(np.ones((4, 3)), m, params())
    assert not cb.is_flattened(np.diag([1e-3, 2.0, -1.0, 1.0]))  # thin, mirrored: still bakes


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strength", [0.05, -0.02])
def test_pick_hits_the_bent_ground_and_returns_the_physical_point(mode, strength):
    rng = np.random.default_rng(11)
    p = params(mode=mode, strength=strength, side_strength=strength * 0.5)
    n = 400
    # camera above the ground near the pivot, looking down and forward in all directions
    origins = np.tile(np.array([1.0, -8.0, 6.0]), (n, 1))
    dirs = np.stack([rng.uniform(-1, 1, n), rng.uniform(-0.2, 1.0, n), rng.uniform(-1.0, -0.05, n)], axis=1)
    hit, visual, physical, t = cb.pick(origins, dirs, p, ground_z=0.5)
    assert hit.sum() > n // 3
    # hits lie on the drawn ground ...
    np.testing.assert_allclose(visual[hit, 2], 0.5 - cb.drop(visual[hit], p), atol=1e-6)
    # ... and the physical point is the same place on the flat ground
    np.testing.assert_allclose(cb.forward(physical[hit], p), visual[hit], atol=1e-6)
    # it is the FIRST hit: no sample of the ray before t is under the ground
    for i in np.flatnonzero(hit)[:50]:
        ts = np.linspace(0.0, t[i], 200)[:-1]
        pts = origins[i] + ts[:, None] * dirs[i] / np.linalg.norm(dirs[i])
        assert np.all(pts[:, 2] - (0.5 - cb.drop(pts, p)) > -1e-9)
    assert np.all(np.isnan(visual[~hit]))


def _first_hit_by_marching(origin, direction, p, ground_z, max_distance, steps=200_001):
    """The first sample of a dense march along the ray that is on or under the drawn ground, or None."""
    ts = np.linspace(0.0, max_distance, steps)
    pts = origin + ts[:, None] * direction / np.linalg.norm(direction)
    under = pts[:, 2] - (ground_z - cb.drop(pts, p)) <= 0.0
    return ts[np.argmax(under)] if under.any() else None


@pytest.mark.parametrize("mode,strength,side_strength", [
    ("RUNNER_2AXIS", -0.01, 0.05), ("RUNNER_2AXIS", 0.04, -0.02), ("RUNNER_2AXIS", -0.03, 0.0),
    # side_strength is not used by these modes: its sign must not change how they are picked
    ("RUNNER", 0.02, -0.03), ("PLANET", 0.02, -0.03), ("CYLINDER", 0.03, -0.01), ("CYLINDER", -0.01, 0.02),
])
def test_pick_finds_the_first_hit_whatever_the_signs_of_the_strengths(mode, strength, side_strength):
    """With strengths of opposite signs the height along a ray can dip under the ground and come back up: the
    first hit must still be found (a dense march along each ray is the reference)."""
    rng = np.random.default_rng(5)
    p = params(mode=mode, strength=strength, side_strength=side_strength)
    n, reach = 120, 60.0
    origins = np.column_stack([rng.uniform(-6, 6, n), rng.uniform(-6, 6, n), rng.uniform(0.5, 6.0, n)])
    dirs = np.column_stack([rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-0.8, 0.2, n)])
    hit, visual, _, t = cb.pick(origins, dirs, p, ground_z=0.0, max_distance=reach)
    step = reach / 200_000
    checked = 0
    for i in range(n):
        first = _first_hit_by_marching(origins[i], dirs[i], p, 0.0, reach)
        if first is None:
            assert not hit[i], f"ray {i}: picked at t={t[i]} but never goes under the ground"
            continue
        if first < 2 * step:
            continue  # starts on or under the ground: not a pick from above
        assert hit[i], f"ray {i}: missed, but it is under the ground at t={first}"
        assert t[i] == pytest.approx(first, abs=2 * step)
        assert visual[i, 2] == pytest.approx(-cb.drop(visual[i:i + 1], p)[0], abs=1e-6)
        checked += 1
    assert checked > n // 4


def test_pick_in_the_flat_zone_is_the_plain_plane_hit():
    p = params(mode="RUNNER", pivot=(0.0, 0.0, 0.0), horizon_offset=0.0, spread=5.0)
    hit, visual, physical, t = cb.pick(np.array([[0.0, -1.0, 2.0]]), np.array([[0.0, 1.0, -1.0]]), p)
    assert hit[0]
    np.testing.assert_allclose(visual[0], [0.0, 1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(physical[0], [0.0, 1.0, 0.0], atol=1e-9)


def test_pick_ray_above_the_horizon_misses_when_bent_down():
    p = params(mode="RUNNER", pivot=(0.0, 0.0, 0.0), horizon_offset=0.0, spread=1.0, strength=0.1)
    hit, visual, _, _ = cb.pick(np.array([[0.0, 0.0, 2.0]]), np.array([[0.0, 1.0, 0.0]]), p)
    assert not hit[0]
    # a flat world would be missed too, but a slightly downward ray hits the flat world only far away;
    # the bent world curves away from it: a miss within reach.
    hit2, _, _, _ = cb.pick(np.array([[0.0, 0.0, 2.0]]), np.array([[0.0, 1.0, -0.01]]), p, max_distance=1e4)
    assert not hit2[0]


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(spread=-1.0), "cannot be negative"),
        (dict(side_spread=-0.1), "cannot be negative"),
        (dict(strength=1e6), "enormous"),
        (dict(strength=float("nan")), "finite"),
        (dict(horizon_offset=float("inf")), "finite"),
        (dict(spread=float("inf")), "finite"),
        (dict(side_strength=float("-inf")), "finite"),
        (dict(side_spread=float("nan")), "finite"),
        (dict(horizon_offset=3.4e38), "enormous"),  # what Blender stores for inf
        (dict(spread=3.4e38), "enormous"),
        (dict(side_spread=2e6), "enormous"),
        (dict(mode="SPHERE"), "Unknown bend mode"),
        (dict(axis="POS_Z"), "Unknown bend axis"),
        (dict(pivot=(0.0, float("inf"), 0.0)), "pivot"),
    ],
)
def test_bad_parameters_are_refused_with_a_clear_message(kw, match):
    with pytest.raises(cb.BendError, match=match):
        cb.forward(np.zeros((1, 3)), params(**kw))


def test_zero_spread_is_the_pure_parabola():
    p = params(spread=0.0, pivot=(0.0, 0.0, 0.0), horizon_offset=0.0)
    assert cb.drop(np.array([[0.0, 2.0, 0.0]]), p)[0] == pytest.approx(0.05 * 4.0)


def test_empty_input():
    assert cb.forward(np.zeros((0, 3)), params()).shape == (0, 3)
    assert cb.inverse(np.zeros((0, 3)), params()).shape == (0, 3)


def test_zero_direction_ray_is_refused():
    with pytest.raises(cb.BendError, match="zero direction"):
        cb.pick(np.zeros((1, 3)), np.zeros((1, 3)), params())


# --- normals, tangents, culling margins ---------------------------------------------------------------------

def random_params(rng, mode, trial):
    return cb.BendParams(
        mode=mode, axis=cb.AXES[trial % 4], pivot=tuple(float(v) for v in rng.uniform(-20, 20, 3)),
        horizon_offset=float(rng.uniform(-5, 5)), strength=float(rng.choice([-1, 1]) * rng.uniform(0.001, 0.2)),
        spread=float(rng.choice([0.0, rng.uniform(0, 6)])), side_strength=float(rng.uniform(-0.1, 0.1)),
        side_spread=float(rng.uniform(0, 4)), enabled=trial != 3)


def central_jacobian(points, p, eps=1e-5):
    """d forward / d point by central differences of core.bend.forward: (N, 3, 3), column j = d/d x_j."""
    cols = []
    for j in range(3):
        step = np.zeros(3)
        step[j] = eps
        cols.append((cb.forward(points + step, p) - cb.forward(points - step, p)) / (2 * eps))
    return np.stack(cols, axis=2)


def angle(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=1), np.sum(a * b, axis=1))


def away_from_kinks(points, p, margin=1e-3):
    """Points whose distance to every flat-zone edge (where the drop's curvature jumps) exceeds ``margin``: there
    central differences straddle the edge."""
    f, side = cb.axis_vectors(p.axis)
    c = cb.centre(p)
    rel = points[:, :2] - c[:2]
    ok = np.ones(len(points), bool)
    for coord, spread in ((rel @ f[:2], p.spread), (rel @ side[:2], p.side_spread),
                          (np.linalg.norm(rel, axis=1), p.spread)):
        ok &= np.abs(np.abs(coord) - spread) > margin
    return points[ok]


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_equals_finite_differences_of_forward(mode):
    rng = np.random.default_rng(MODES.index(mode))
    for trial in range(4):
        p = random_params(rng, mode, trial)
        pts = away_from_kinks(rng.uniform(-40, 40, (400, 3)), p)
        np.testing.assert_allclose(cb.jacobian(pts, p), central_jacobian(pts, p), atol=1e-6)
        np.testing.assert_allclose(np.linalg.det(cb.jacobian(pts, p)), 1.0)
        # the slope is the same where a point is drawn: the drop depends on x and y only
        np.testing.assert_allclose(cb.gradient(cb.forward(pts, p), p), cb.gradient(pts, p))


@pytest.mark.parametrize("mode", MODES)
def test_bent_normals_are_perpendicular_to_bent_tangents_and_equal_the_bent_surface(mode):
    """For random surface frames: the bent tangents (by the Jacobian) are finite differences of forward along the
    tangent, and the bent normal is perpendicular to both bent tangents and on the normal's side."""
    rng = np.random.default_rng([7, MODES.index(mode)])
    for trial in range(4):
        p = random_params(rng, mode, trial)
        pts = away_from_kinks(rng.uniform(-40, 40, (400, 3)), p)
        n = rng.normal(size=(len(pts), 3))
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        t1 = np.cross(n, rng.normal(size=(len(pts), 3)))
        t2 = np.cross(n, t1)
        jac = central_jacobian(pts, p)
        for t in (t1, t2):
            want = np.einsum("nij,nj->ni", jac, t)
            got = cb.forward_tangents(pts, t, p)
            assert angle(got, want).max() < 1e-6
            np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0)
        bent_n = cb.forward_normals(pts, n, p)
        # t1 x t2 is along +n (t2 = n x t1): the cross product of the bent tangents is the bent normal
        fd_normal = np.cross(np.einsum("nij,nj->ni", jac, t1), np.einsum("nij,nj->ni", jac, t2))
        assert angle(bent_n, fd_normal).max() < 1e-6
        np.testing.assert_allclose(np.linalg.norm(bent_n, axis=1), 1.0)
        if p.enabled:
            assert angle(bent_n, n).max() > 0.1  # it bends


def test_normal_of_a_road_dropping_at_30_degrees():
    """The issue's road: where the ground slopes down at 30 degrees ahead, its up normal tilts 30 degrees forward."""
    p = cb.BendParams(mode="RUNNER", axis="POS_Y", pivot=(0.0, 0.0, 0.0), strength=0.01, spread=2.0)
    y = 2.0 + np.tan(np.radians(30.0)) / (2 * 0.01)  # slope 2 a (y - s) = tan 30
    n = cb.forward_normals(np.array([[0.0, y, 0.0]]), np.array([[0.0, 0.0, 1.0]]), p)[0]
    np.testing.assert_allclose(n, [0.0, np.sin(np.radians(30.0)), np.cos(np.radians(30.0))], atol=1e-12)
    t = cb.forward_tangents(np.array([[0.0, y, 0.0]]), np.array([[0.0, 1.0, 0.0]]), p)[0]
    np.testing.assert_allclose(t, [0.0, np.cos(np.radians(30.0)), -np.sin(np.radians(30.0))], atol=1e-12)
    flat = cb.forward_normals(np.array([[0.0, 1.0, 0.0]]), np.array([[0.0, 0.0, 1.0]]), p)
    np.testing.assert_allclose(flat, [[0, 0, 1]])  # flat


def test_disabled_bend_keeps_normals_and_empty_input():
    p = params(enabled=False)
    n = np.random.default_rng(1).normal(size=(10, 3))
    np.testing.assert_allclose(cb.forward_normals(n * 10, n, p), n / np.linalg.norm(n, axis=1, keepdims=True))
    assert cb.forward_normals(np.zeros((0, 3)), np.zeros((0, 3)), params()).shape == (0, 3)
    assert cb.jacobian(np.zeros((0, 3)), params()).shape == (0, 3, 3)


@pytest.mark.parametrize("mode", MODES)
def test_view_margin_holds_every_point_within_the_view_distance_of_any_pivot(mode):
    rng = np.random.default_rng([11, MODES.index(mode)])
    for trial in range(6):
        p = random_params(rng, mode, trial)
        view = float(rng.uniform(5, 60))
        down, up = cb.view_margin(p, view)
        worst_down = worst_up = 0.0
        for _ in range(20):
            pivot = rng.uniform(-30, 30, 3)
            q = cb.BendParams(**{**p.__dict__, "pivot": tuple(pivot)})
            pts = rng.uniform(-view, view, (2000, 3)) + pivot
            pts = pts[np.linalg.norm(pts[:, :2] - pivot[:2], axis=1) <= view]
            d = cb.drop(pts, q)
            worst_down, worst_up = max(worst_down, d.max()), max(worst_up, -d.min())
        assert worst_down <= down + 1e-9 and worst_up <= up + 1e-9
        if p.enabled and mode != "RUNNER_2AXIS":  # one term: reached by a point at the view distance, ahead
            assert max(down, up) == pytest.approx(max(worst_down, worst_up), rel=0.3)


def test_view_margin_numbers_and_refusals():
    p = cb.BendParams(mode="RUNNER", strength=0.01, spread=2.0, horizon_offset=3.0)
    assert cb.view_margin(p, 100.0) == pytest.approx((0.01 * 101.0 ** 2, 0.0))
    assert cb.view_margin(cb.BendParams(strength=-0.02, spread=0.0), 10.0) == pytest.approx((0.0, 2.0))
    two = cb.BendParams(mode="RUNNER_2AXIS", strength=0.01, spread=0.0, side_strength=-0.01, side_spread=0.0)
    assert cb.view_margin(two, 10.0) == pytest.approx((1.0, 1.0))
    assert cb.view_margin(cb.BendParams(enabled=False), 100.0) == (0.0, 0.0)
    lo, hi = cb.bent_bounds([0, 0, 0], [1, 1, 1], p, 100.0)
    np.testing.assert_allclose(lo, [0, 0, -0.01 * 101.0 ** 2])
    np.testing.assert_allclose(hi, [1, 1, 1])
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(cb.BendError, match="View distance"):
            cb.view_margin(p, bad)


def test_has_down_and_live_local_leave_a_squashed_object_as_it_is():
    params = cb.BendParams(mode="RUNNER", strength=0.05, spread=0.0)
    pts = np.array([[30.0, 0.0, 0.0], [40.0, 5.0, 1.0]])
    healthy = np.diag([2.0, 0.5, 3.0, 1.0])
    assert cb.has_down(healthy)
    assert np.allclose(cb.live_local(pts, healthy, params), cb.forward_local(pts, healthy, params))
    for m in (np.diag([1.0, 1.0, 0.0, 1.0]),                      # scaled to nothing along "down"
              np.diag([1e-6, 1e-6, 1e-40, 1.0]),                   # determinant ~1e-52
              np.full((4, 4), np.nan)):
        assert not cb.has_down(m)
        assert np.array_equal(cb.live_local(pts, m, params), pts)
    # squashed along X only: "down" still exists in the object's space, and the live bend moves the points
    squashed_x = np.diag([1e-9, 1.0, 1.0, 1.0])
    assert cb.has_down(squashed_x)
    assert np.abs(cb.live_local(pts, squashed_x, params) - pts).max() > 1.0
    assert np.array_equal(cb.live_local(pts, healthy, cb.BendParams(mode="RUNNER", enabled=False)), pts)


def _worst_chord_error(a, b, p, samples=257):
    """The largest vertical distance between the straight edge from bent a to bent b and the bent edge, sampled."""
    t = np.linspace(0.0, 1.0, samples)
    line = a[None, :] + t[:, None] * (b - a)[None, :]
    curve = cb.forward(line, p)[:, 2]
    ends = cb.forward(np.stack([a, b]), p)[:, 2]
    return float(np.max(np.abs(ends[0] + t * (ends[1] - ends[0]) - curve)))


@pytest.mark.parametrize("mode", MODES)
def test_edge_error_bounds_the_straight_edge_off_the_curve_and_is_reached(mode):
    """The issue's coarse road: a straight edge between two bent vertices is off the curve by at most
    |a| h^2 / 4 (h along the bend), never more, and about that much for an edge wholly in the bent region."""
    rng = np.random.default_rng(3)
    p = params(mode=mode, side_strength=-0.04)
    a = rng.uniform(-30, 30, (300, 3))
    b = a + rng.uniform(-8, 8, (300, 3))
    pts = np.concatenate([a, b])
    edges = np.stack([np.arange(300), np.arange(300) + 300], axis=1)
    bound = cb.edge_errors(pts, edges, p)
    actual = np.array([_worst_chord_error(a[i], b[i], p) for i in range(300)])
    assert np.all(actual <= bound * (1 + 1e-9) + 1e-12)
    assert np.max(actual / np.maximum(bound, 1e-12)) > 0.95  # the bound is tight, not a loose guess


def test_edge_error_of_a_one_quad_road_and_of_a_fine_grid():
    """One 120 m edge along a runner bend of 0.012 is 43.2 m off at worst; 0.2 m edges are not; edges in the flat
    zone count 0 (they stay straight), and a disabled bend bends nothing."""
    p = params(mode="RUNNER", axis="POS_Y", pivot=(0.0, 0.0, 0.0), horizon_offset=4.0, strength=0.012, spread=3.0)
    road = np.array([[-1.5, -20.0, 0.0], [1.5, -20.0, 0.0], [1.5, 100.0, 0.0], [-1.5, 100.0, 0.0]])
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    err = cb.edge_errors(road, edges, p)
    np.testing.assert_allclose(err, [0.0, 0.012 * 120.0 ** 2 / 4, 0.0, 0.012 * 120.0 ** 2 / 4])
    ys = np.arange(-20.0, 100.0001, 0.2)
    fine = np.stack([np.zeros_like(ys), ys, np.zeros_like(ys)], axis=1)
    chain = np.stack([np.arange(len(ys) - 1), np.arange(1, len(ys))], axis=1)
    assert cb.edge_errors(fine, chain, p).max() < 1e-3
    flat = np.array([[0.0, 2.0, 0.0], [0.0, 6.0, 0.0]])  # within the flat zone 4 +- 3
    assert cb.edge_errors(flat, np.array([[0, 1]]), p)[0] == 0.0
    assert not cb.edge_errors(road, edges, params(enabled=False)).any()
    assert cb.edge_errors(road, np.zeros((0, 2), int), p).shape == (0,)


def test_subdivision_levels_bring_the_error_within_the_tolerance():
    for error in (0.01, 0.05, 0.0500001, 0.2, 43.2, 1e4):
        levels = cb.subdivision_levels(error, 0.05)
        assert error / 4.0 ** levels <= 0.05 + 1e-12
        assert levels == 0 or error / 4.0 ** (levels - 1) > 0.05
    assert cb.subdivision_levels(43.2, 0.05) == 5
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(cb.BendError, match="Tolerance"):
            cb.subdivision_levels(1.0, bad)
