"""2D light map (core/lightmap2d.py): occupancy, hard and soft shadows, falloff, smoothing, distance-map occlusion,
shadow quads, and the refusals of bad input."""

import math
from typing import Any

import numpy as np
import pytest

from core import lightmap2d as lm
from tests.job_steps import Slowed, step


def box(x0, y0, x1, y1, z=3.0):
    """The top-down triangles of a closed box (its top face and its four side faces)."""
    top = [[(x0, y0, z), (x1, y0, z), (x1, y1, z)], [(x0, y0, z), (x1, y1, z), (x0, y1, z)]]
    sides = []
    for (ax, ay), (bx, by) in (((x0, y0), (x1, y0)), ((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)), ((x0, y1), (x0, y0))):
        sides += [[(ax, ay, 0), (bx, by, 0), (bx, by, z)], [(ax, ay, 0), (bx, by, z), (ax, ay, z)]]
    return np.array(top + sides, dtype=np.float64)


def bake(region, res, boxes, lights, **kw):
    grid = lm.make_grid(region, res)
    tris = np.concatenate([box(*b) for b in boxes]) if boxes else np.zeros((0, 3, 3))
    occ = lm.rasterise(grid, tris)
    settings = lm.Settings(resolution=res, **kw)
    return lm.bake(grid, occ, lights, 0.0, settings), grid, occ


def visibility_of(region, res, boxes, light, samples, tile=None, reference=False, nbins=None):
    grid = lm.make_grid(region, res)
    occ = lm.rasterise(grid, np.concatenate([box(*b) for b in boxes]) if boxes else np.zeros((0, 3, 3)))
    bi, bj = np.nonzero(lm.boundary(occ))
    offsets = lm.jitter_offsets(light.radius, samples, 0)
    args = (grid.xs(), grid.ys(), (grid.xs()[bj], grid.ys()[bi]), 0.5 * max(grid.tx, grid.ty), light.x, light.y,
            offsets, nbins or 16 * res)
    vis = lm.visibility_reference(*args) if reference else lm.visibility(*args, tile=tile)
    vis[occ] = np.nan
    return vis, grid, occ


# --- grid and occupancy ------------------------------------------------------------------------------------

def test_grid_keeps_the_longest_side_and_row_zero_is_y_max():
    grid = lm.make_grid((-10, 0, 30, 20), 400)
    assert (grid.width, grid.height) == (400, 200)
    assert grid.xs()[0] == pytest.approx(-10 + 0.05) and grid.ys()[0] == pytest.approx(20 - 0.05)
    assert grid.texel_of(-9.99, 19.99) == (0, 0)


def test_a_box_fills_exactly_its_texels():
    grid = lm.make_grid((0, 0, 20, 10), 200)
    occ = lm.rasterise(grid, box(9, 3, 10, 7))
    assert occ.sum() == 10 * 40
    rows, cols = np.nonzero(occ)
    assert (cols.min(), cols.max(), rows.min(), rows.max()) == (90, 99, 30, 69)


def test_a_wall_made_of_one_vertical_face_still_blocks():
    grid = lm.make_grid((0, 0, 20, 10), 200)
    plane = np.array([[(9.03, 2, 0), (9.03, 8, 0), (9.03, 8, 3)], [(9.03, 2, 0), (9.03, 8, 3), (9.03, 2, 3)]])
    occ = lm.rasterise(grid, plane)
    assert occ[:, 90].sum() == 60 and occ.sum() == 60


def test_a_wall_of_one_vertical_face_on_a_texel_line_blocks_and_a_box_on_the_lines_does_not_grow():
    """An edge-on wall lying exactly on a texel line touches two columns and has no top to fill either: it marks
    one of them (and its light does not leak between); a box's sides on the lines leave the box its own texels."""
    grid = lm.make_grid((0, 0, 20, 10), 200)
    for x in (9.0, 0.0, 20.0):  # inside, and on the region's two borders
        plane = np.array([[(x, 2, 0), (x, 8, 0), (x, 8, 3)], [(x, 2, 0), (x, 8, 3), (x, 2, 3)]])
        occ = lm.rasterise(grid, plane)
        column = min(int(round(x * 10)), 199)
        assert occ[20:80, column].all() and occ.sum() == 60, x
    # a horizontal one along y = 5 (row 50 from the top), and one diagonal through texel corners
    plane = np.array([[(4, 5, 0), (12, 5, 0), (12, 5, 3)], [(4, 5, 0), (12, 5, 3), (4, 5, 3)]])
    occ = lm.rasterise(grid, plane)
    assert occ[50, 40:120].all() and occ.sum() == 80
    diagonal = np.array([[(2, 2, 0), (6, 6, 0), (6, 6, 3)], [(2, 2, 0), (6, 6, 3), (2, 2, 3)]])
    occ = lm.rasterise(grid, diagonal)
    light = lm.Light(2.0, 5.0, 1.0, radius=0.0, power=100.0)
    result = lm.bake(grid, occ, [light], 0.0, lm.Settings(resolution=200, smoothing="NONE"))
    assert result.rgb[grid.texel_of(5.0, 3.0)].sum() == 0          # behind the diagonal wall: dark
    assert result.rgb[grid.texel_of(3.0, 5.0)].sum() > 0
    # the lone wall on a line shadows the ground behind it
    plane = np.array([[(9.0, 2, 0), (9.0, 8, 0), (9.0, 8, 3)], [(9.0, 2, 0), (9.0, 8, 3), (9.0, 2, 3)]])
    occ = lm.rasterise(grid, plane)
    result = lm.bake(grid, occ, [lm.Light(7.0, 5.0, 1.0, radius=0.0, power=100.0)], 0.0,
                     lm.Settings(resolution=200, smoothing="NONE"))
    assert result.rgb[grid.texel_of(11.0, 5.0)].sum() == 0 and result.rgb[grid.texel_of(8.0, 5.0)].sum() > 0
    # boxes with every side on a texel line keep exactly their texels (the top decides)
    occ = lm.rasterise(grid, np.concatenate([box(9, 3, 10, 7), box(0, 0, 1, 1), box(19, 9, 20, 10)]))
    assert occ.sum() == 400 + 100 + 100


# --- shadows -----------------------------------------------------------------------------------------------

def test_a_light_of_no_size_gives_hard_shadows_one_texel_step():
    vis, grid, occ = visibility_of((0, 0, 30, 20), 300, [(9, 3, 10, 20)], lm.Light(5, 2, 1.5, radius=0.0), 16)
    free = vis[~occ]
    assert set(np.unique(free)) == {0.0, 1.0}
    # along a column behind the wall the shadow edge is one step: lit, then dark, never in between
    col = vis[:, 200]
    assert np.all(np.diff(col[~np.isnan(col)]) != 0.5)
    # the edge lies on the line from the light through the wall's corner (10, 3): at x = 20.05, y = 3 + 15.05 / 5
    y_edge = 2 + (20.05 - 5) * (3 - 2) / (10 - 5)
    ys = grid.ys()
    assert np.all(col[ys < y_edge - grid.ty] == 1) and np.all(col[(ys > y_edge + grid.ty) & (ys < 20)] == 0)


def penumbra_width(vis, grid, x):
    col = vis[:, grid.texel_of(x, 0)[1]]
    return np.sum((col > 0.02) & (col < 0.98)) * grid.ty


def test_penumbra_grows_with_light_size_and_distance_from_the_occluder():
    region, walls = (0, 0, 40, 20), [(9, 3, 10, 20)]
    widths = {}
    for radius in (0.25, 0.5, 1.0):
        vis, grid, _ = visibility_of(region, 400, walls, lm.Light(5, 2, 1.5, radius=radius), 32)
        widths[radius] = [penumbra_width(vis, grid, x) for x in (15, 25, 35)]
    for radius, (near, mid, far) in widths.items():
        assert near < mid < far, (radius, widths)
    for k in range(3):
        assert widths[0.25][k] < widths[0.5][k] < widths[1.0][k], widths
    # about what the geometry says: an occluder edge 5.1 from the light, a disc of radius r, receiver at distance D
    # behind the light: width ~ 2 r (D - d_o) / d_o along the beam, more across it here (the beam is slanted)
    assert widths[1.0][2] > 2 * 1.0 * (35 - 10) / 5.1 * 0.6


@pytest.mark.parametrize("tile", [1, 3, 8, 16, 64])
def test_the_tiled_shadow_test_equals_every_position_on_every_texel(tile):
    """Tiles lit or dark as a whole skip the per-texel test: the map is still exactly the one of testing every
    jittered position on every texel (the reference), whatever the tile size (64: larger than parts of the map)."""
    region, walls = (0, 0, 40, 20), [(9, 3, 10, 20), (20, 0, 21, 6), (14, 9, 16, 11), (30, 12, 30.1, 12.1)]
    light = lm.Light(5, 2, 1.5, radius=0.7)
    fast, _, occ = visibility_of(region, 301, walls, light, 16, tile=tile)
    full, _, _ = visibility_of(region, 301, walls, light, 16, reference=True)
    assert np.array_equal(np.isnan(fast), np.isnan(full))
    assert np.array_equal(fast[~occ], full[~occ])
    assert ((full > 0) & (full < 1)).sum() > 500  # there is a penumbra to get right


def test_the_tiled_shadow_test_equals_the_reference_on_random_levels():
    """Random small levels (thin and thick walls, lights on texel centres and lines, hard and soft, coarse and fine
    polar maps): the tiled test and the reference agree on every texel."""
    rng = np.random.default_rng(7)
    for trial in range(24):
        res = int(rng.integers(20, 200))
        region = (0.0, 0.0, float(rng.uniform(5, 40)), float(rng.uniform(5, 40)))
        walls = []
        for _ in range(int(rng.integers(0, 8))):
            x0, y0 = rng.uniform(0, region[2]), rng.uniform(0, region[3])
            walls.append((x0, y0, x0 + rng.uniform(0.05, 4), y0 + rng.uniform(0.05, 4)))
        grid = lm.make_grid(region, res)
        lx, ly = rng.uniform(0, region[2]), rng.uniform(0, region[3])
        if trial % 4 == 0:  # on a texel centre and a tile line
            lx, ly = float(grid.xs()[grid.width // 3]), float(grid.ys()[16 % grid.height])
        light = lm.Light(lx, ly, 2.0, radius=float(rng.choice([0.0, 0.1, 0.5, 2.0])))
        samples, nbins = int(rng.choice([1, 4, 16])), int(rng.choice([1024, 16 * res]))
        for tile in (2, 8, 16):
            fast, _, occ = visibility_of(region, res, walls, light, samples, tile=tile, nbins=nbins)
            full, _, _ = visibility_of(region, res, walls, light, samples, reference=True, nbins=nbins)
            assert np.array_equal(fast[~occ], full[~occ]), (trial, tile)


def test_lights_rendered_on_several_threads_add_up_to_the_same_map():
    walls = [(9, 3, 10, 20), (20, 0, 21, 6), (14, 9, 16, 11)]
    spots = [(5, 2), (12, 4), (18, 8), (25, 3), (33, 15), (6, 14)]
    lights = [lm.Light(x, y, 1.5, colour=(1.0, 0.5 + 0.1 * k, 0.2), radius=0.3) for k, (x, y) in enumerate(spots)]
    one, _, _ = bake((0, 0, 40, 20), 200, walls, lights, penumbra_samples=8)
    grid = lm.make_grid((0, 0, 40, 20), 200)
    occ = lm.rasterise(grid, np.concatenate([box(*b) for b in walls]))
    for threads in (1, 2, 3):
        many = lm.bake(grid, occ, lights, 0.0, lm.Settings(resolution=200, penumbra_samples=8), threads=threads)
        assert np.array_equal(many.rgb, one.rgb)


def test_no_light_is_rendered_while_the_job_hands_control_back(monkeypatch):
    """Blender's Python API is not thread-safe and a modal bake runs Blender's event loop between the job's steps:
    at every step the job yields, no light is being rendered on a thread (a slowed render makes one left running
    show); every light is still rendered, the map the same as on one thread."""
    walls = [(9, 3, 10, 20), (20, 0, 21, 6)]
    lights = [lm.Light(x, 5, 1.5, radius=0.3) for x in (5, 12, 18, 25, 33)]
    grid = lm.make_grid((0, 0, 40, 20), 100)
    occ = lm.rasterise(grid, np.concatenate([box(*b) for b in walls]))
    settings = lm.Settings(resolution=100, penumbra_samples=4)
    one = lm.bake(grid, occ, lights, 0.0, settings, threads=1)
    render = Slowed(monkeypatch, lm, "_render_light", 0.02)
    busy, result = step(lm.bake_job(grid, occ, lights, 0.0, settings, 2), lambda: render.running > 0)
    assert busy == [False] * len(busy) and len(busy) >= 3
    assert sorted(args[4] for args in render.calls) == list(range(len(lights)))
    assert np.array_equal(result.rgb, one.rgb)


def test_no_obstacles_gives_the_plain_physical_falloff():
    light = lm.Light(10, 5, 2.0, power=800, radius=0.3, colour=(1.0, 0.5, 0.25))
    result, grid, _ = bake((0, 0, 20, 10), 100, [], [light], penumbra_samples=8)
    dx = grid.xs()[None, :] - 10
    dy = grid.ys()[:, None] - 5
    d2 = dx * dx + dy * dy + 4.0
    expected = 800 / (4 * math.pi) * 2.0 / d2 ** 1.5  # I cos / d^2, I = P / (4 pi), cos = h / d
    assert np.allclose(result.rgb[..., 0], expected, rtol=1e-4)
    assert np.allclose(result.rgb[..., 2], 0.25 * expected, rtol=1e-4)
    # inverse square: 4x the height under the light, 1/16 the light
    high, _, _ = bake((0, 0, 20, 10), 100, [], [lm.Light(10, 5, 8.0, power=800)], penumbra_samples=1)
    i, j = grid.texel_of(10.05, 5.05)
    assert high.rgb[i, j, 0] == pytest.approx(result.rgb[i, j, 0] / 16, rel=0.01)


def test_smooth_falloff_is_a_gradient_circle_to_its_radius():
    light = lm.Light(10, 5, 2.0, power=800, influence=4.0)
    result, grid, _ = bake((0, 0, 20, 10), 200, [], [light], falloff="SMOOTH", penumbra_samples=1)
    r = np.hypot(grid.xs()[None, :] - 10, grid.ys()[:, None] - 5)
    v = result.rgb[..., 0]
    assert np.all(v[r > 4.0] == 0) and np.all(v[r < 3.9] > 0)
    assert v.max() == pytest.approx(800 / (4 * math.pi) / 4.0 * (1 - 0.05 * math.sqrt(2) / 4) ** 2, rel=1e-3)
    assert np.all(np.diff(v[50, 100:150]) <= 1e-6)  # falls off monotonically


def test_lights_blend_additively():
    a, b = lm.Light(5, 5, 2, power=300), lm.Light(14, 4, 3, power=500, colour=(0.2, 1, 1))
    walls = [(9, 2, 10, 8)]
    both, _, _ = bake((0, 0, 20, 10), 100, walls, [a, b], penumbra_samples=1)
    one, _, _ = bake((0, 0, 20, 10), 100, walls, [a], penumbra_samples=1)
    two, _, _ = bake((0, 0, 20, 10), 100, walls, [b], penumbra_samples=1)
    assert np.allclose(both.rgb, one.rgb + two.rgb, rtol=1e-5, atol=1e-7)


# --- smoothing and occlusion -------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["MIPS", "BLUR"])
def test_smoothing_softens_the_shadow_edge_and_keeps_the_light(mode):
    light = lm.Light(5, 5, 2.0, power=500)
    sharp, grid, occ = bake((0, 0, 20, 10), 200, [(9, 0, 10, 4.5)], [light], penumbra_samples=1)
    soft, _, _ = bake((0, 0, 20, 10), 200, [(9, 0, 10, 4.5)], [light], penumbra_samples=1, smoothing=mode)
    col = grid.texel_of(15, 0)[1]
    step = np.abs(np.diff(sharp.rgb[:, col, 0])).max()
    assert np.abs(np.diff(soft.rgb[:, col, 0])).max() < 0.6 * step
    assert soft.rgb.mean() == pytest.approx(sharp.rgb.mean(), rel=0.05)


def test_distance_map_is_euclidean():
    occ = np.zeros((40, 50), dtype=bool)
    occ[10, 20] = True
    occ[30, 5] = True
    d = lm.distance_map(occ, 0.5)
    i, j = np.mgrid[0:40, 0:50]
    expected = np.minimum(np.hypot(i - 10, j - 20), np.hypot(i - 30, j - 5)) * 0.5
    assert np.allclose(d, expected, atol=1e-5)


def test_occlusion_darkens_only_within_its_distance_of_walls():
    grid = lm.make_grid((0, 0, 40, 20), 400)
    occ = lm.rasterise(grid, np.concatenate([box(10, 5, 12, 15), box(25, 0, 26, 8)]))
    factor = lm.occlusion(grid, occ, 2.0, 0.6)
    i, j = np.mgrid[0:occ.shape[0], 0:occ.shape[1]]
    ti, tj = np.nonzero(occ)
    # exact distance of each texel to the nearest wall texel (brute force on a subsample)
    sample = (i % 7 == 0) & (j % 7 == 0) & ~occ
    si, sj = i[sample], j[sample]
    d = np.sqrt(((si[:, None] - ti[None, :]) ** 2 + (sj[:, None] - tj[None, :]) ** 2).min(1)) * grid.tx
    f = factor[si, sj]
    assert np.all(f[d >= 2.0] == 1.0)
    assert np.all(f[d < 0.4] < 0.85) and f.min() >= 0.4 - 1e-6
    assert np.all(f[d < 2.0] <= 1.0)
    # and the bake applies it
    light = lm.Light(20, 18, 3.0, power=2000)
    plain = lm.bake(grid, occ, [light], 0.0, lm.Settings(resolution=400, penumbra_samples=1))
    dark = lm.bake(grid, occ, [light], 0.0, lm.Settings(resolution=400, penumbra_samples=1, occlusion_distance=2.0,
                                                        occlusion_strength=0.6))
    assert np.allclose(dark.rgb, plain.rgb * factor[:, :, None])


@pytest.mark.parametrize("distance", [1e5, 1e30, 1e300])
def test_an_occlusion_distance_far_beyond_the_map_darkens_it_evenly_within_the_maps_memory(distance):
    """On a 10 m map every texel is at most its diagonal (14.2 m) from a wall, so at a distance of 200 m or more the
    darkening is nearly the full strength everywhere (1 - s (1 - d / D)^2 for d <= 14.2), and the same at any longer
    distance; working memory stays that of the map (1e5 m once asked for a 6 GiB padding, 1e30 a numpy error)."""
    import tracemalloc

    grid = lm.make_grid((0, 0, 10, 10), 64)
    occ = lm.rasterise(grid, box(4, 4, 5, 6))
    near = lm.occlusion(grid, occ, 200.0, 0.6)
    assert np.all(near >= 0.4 - 1e-6) and np.all(near <= 1 - 0.6 * (1 - math.hypot(10, 10) / 200.0) ** 2)
    tracemalloc.start()
    try:
        far = lm.occlusion(grid, occ, distance, 0.6)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(far, near)
    assert peak < 100 * occ.size, peak  # (a few float32 and float64 arrays of the map's size)
    light = lm.Light(2, 2, 2.0, power=100)
    result = lm.bake(grid, occ, [light], 0.0, lm.Settings(resolution=64, penumbra_samples=1,
                                                          occlusion_distance=distance, occlusion_strength=0.6))
    assert np.isfinite(result.rgb).all()


# --- light circles and shadow quads ------------------------------------------------------------------------

def test_light_circles_peak_at_each_light_without_shadows():
    grid = lm.make_grid((0, 0, 20, 10), 200)
    lights = [lm.Light(5.05, 5.05, 2, colour=(1, 0, 0)), lm.Light(15.05, 5.05, 2, colour=(0, 0, 1))]
    buf = lm.light_circles(grid, lights, 0.0)
    i, j = grid.texel_of(5.05, 5.05)
    assert buf[i, j, 0] > 0.9 and buf[i, j, 2] == 0
    assert buf[..., 0].argmax() == np.ravel_multi_index((i, j), buf.shape[:2])


def test_shadow_quad_points_away_from_the_light_and_fades_when_close():
    q = lm.shadow_quad((10, 5), (0.5, 0.25), (4, 5), wall_distance=5.0, wall_size=0.5)
    assert q.direction == pytest.approx((1.0, 0.0))
    assert q.width == pytest.approx(0.5) and q.alpha == 1.0
    diag = lm.shadow_quad((10, 10), (0.5, 0.5), (7, 7), wall_distance=5.0, wall_size=0.5)
    assert diag.direction == pytest.approx((math.sqrt(0.5), math.sqrt(0.5)))
    assert diag.width == pytest.approx(math.sqrt(2))  # a square seen along its diagonal
    # the length never passes the nearest wall (plus the wall's size)
    # (no corner of it farther from the actor's centre than that: the quad is 0.5 wide here)
    near_wall = lm.shadow_quad((10, 5), (0.5, 0.25), (4, 5), wall_distance=0.3, wall_size=0.2)
    assert near_wall.length == pytest.approx(math.sqrt(0.5 ** 2 - 0.25 ** 2))
    # too close to the light: the cone is too wide for two sprites, it fades to nothing
    alphas = [lm.shadow_quad((10, 5), (0.5, 0.5), (10 - d, 5), 5.0, 0.5).alpha for d in (3.0, 1.7, 1.4, 0.5)]
    assert alphas[0] == 1.0 and alphas[-1] == 0.0 and alphas == sorted(alphas, reverse=True)


def test_distance_image_never_says_farther_than_the_walls_are():
    grid = lm.make_grid((0, 0, 40, 20), 400)
    occ = lm.rasterise(grid, np.concatenate([box(10, 5, 12, 15), box(25, 0, 26, 8)]))
    img, cell = lm.distance_image(grid, occ, longest=64)
    assert img.shape == (-(-200 // 7), -(-400 // 7)) and cell == pytest.approx(0.7)
    # bilinear samples anywhere: never more than the true distance to the nearest wall texel
    rng = np.random.default_rng(0)
    pts = rng.uniform((0, 0), (40, 20), (400, 2))
    h, w = img.shape
    fx = np.clip((pts[:, 0] - 0) / cell - 0.5, 0, w - 1)
    fy = np.clip((20 - pts[:, 1]) / cell - 0.5, 0, h - 1)
    x0, y0 = np.floor(fx).astype(int), np.floor(fy).astype(int)
    x1, y1 = np.minimum(x0 + 1, w - 1), np.minimum(y0 + 1, h - 1)
    ax, ay = fx - x0, fy - y0
    val = (img[y0, x0] * (1 - ax) * (1 - ay) + img[y0, x1] * ax * (1 - ay) + img[y1, x0] * (1 - ax) * ay
           + img[y1, x1] * ax * ay)
    ti, tj = np.nonzero(occ)
    wx, wy = grid.xs()[tj], grid.ys()[ti]
    true = np.sqrt((pts[:, 0, None] - wx[None]) ** 2 + (pts[:, 1, None] - wy[None]) ** 2).min(1) - 0.5 * grid.tx
    assert np.all(val <= np.maximum(true, 0) + 1e-4)
    assert np.mean(val) > 0.5 * np.mean(np.maximum(true, 0))  # and not uselessly small


def test_nearest_light_cache():
    idx = lm.nearest_light([(0, 0), (9, 1), (5.6, 0)], [(1, 0), (10, 0)])
    assert idx.tolist() == [0, 1, 1]


# --- bad input ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("region, res, message", [
    ((0, 0, 0, 10), 100, "no area"),
    ((0, 0, 10, 10), 0, "out of range"),
    ((0, 0, 10, 10), 10 ** 6, "out of range"),
])
def test_bad_grids_are_refused(region, res, message):
    with pytest.raises(lm.LightmapError, match=message):
        lm.make_grid(region, res)


@pytest.mark.parametrize("lights, boxes, message", [
    ([], [], "No lights"),
    ([lm.Light(25, 5, 2, name="Far")], [], "Far are outside the region"),
    ([lm.Light(5, 5, -1, name="Low")], [], "not above the ground"),
    ([lm.Light(5, 5, 2, name="Buried")], [(4, 4, 6, 6)], "Buried are inside an obstacle"),
    ([lm.Light(5, 5, 2)], [(-1, -1, 21, 11)], "cover the whole region"),
    ([lm.Light(5, 5, 2, power=math.nan, name="Lamp")], [], r"Lamp \(power\) have a value that is not a number"),
    ([lm.Light(5, 5, 2, power=math.inf, name="Lamp")], [], r"Lamp \(power\) have a value that is not a number"),
    ([lm.Light(5, 5, 2, name="Ok"), lm.Light(5, 5, 2, colour=(1, math.nan, 1), radius=-math.inf, name="Lamp")], [],
     r"Light\(s\) Lamp \(colour, radius\) have a value .*set a finite value"),
    ([lm.Light(5, 5, 2, kind="SPOT", spot_size=math.nan, name="Spot")], [], r"Spot \(spot size\)"),
])
def test_bad_lights_and_obstacles_are_refused(lights, boxes, message):
    with pytest.raises(lm.LightmapError, match=message):
        bake((0, 0, 20, 10), 50, boxes, lights)


def test_a_map_no_light_reaches_says_so():
    """Lights of power 0 or a black colour: the map is black, and the bake warns, naming what to raise."""
    result, _, _ = bake((0, 0, 20, 10), 50, [], [lm.Light(5, 5, 2, power=0.0), lm.Light(9, 5, 2, colour=(0, 0, 0))])
    assert not result.rgb.any()
    assert [w for w in result.warnings if "The map is black" in w and "raise a light's Power" in w]
    lit, _, _ = bake((0, 0, 20, 10), 50, [], [lm.Light(5, 5, 2, power=0.0), lm.Light(9, 5, 2)])
    assert not [w for w in lit.warnings if "black" in w]


def test_bad_settings_are_refused():
    cases: list[tuple[dict[str, Any], str]] = [(dict(penumbra_samples=0), "Penumbra samples"),
                                               (dict(falloff="LINEAR"), "falloff"), (dict(smoothing="X"), "smoothing"),
                                               (dict(occlusion_strength=2), "strength")]
    for kw, message in cases:
        with pytest.raises(lm.LightmapError, match=message):
            lm.Settings(**kw).validate()


def test_previous_outputs_are_only_the_light_map_files_its_json_lists(tmp_path):
    """What a later bake may remove: the light-map files the folder's lightmap.json lists and that are there; never
    a path, another file, or anything when the JSON is not a light map's."""
    import json

    for name in ("lightmap.exr", "lightmap_circles.exr", "notes.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path.parent / "outside.exr").write_text("x")
    meta = {"orientation": lm.ORIENTATION, "files": ["lightmap.exr", "lightmap_circles.exr", "lightmap_distance.exr",
                                                      "notes.txt", "../outside.exr", 3]}
    (tmp_path / "lightmap.json").write_text(json.dumps(meta))
    assert lm.previous_outputs(str(tmp_path)) == ["lightmap.exr", "lightmap_circles.exr"]
    (tmp_path / "lightmap.json").write_text(json.dumps(dict(meta, orientation="other")))
    assert lm.previous_outputs(str(tmp_path)) == []
    (tmp_path / "lightmap.json").write_text("{not json")
    assert lm.previous_outputs(str(tmp_path)) == []


@pytest.mark.parametrize("res, light, message", [
    (2, (4.0, 4.0), r"At Resolution 2 a texel is 5 m across .* the walls cover the whole region: raise the Resolution"),
    (4, (4.0, 4.0), r"At Resolution 4 a texel is 2.5 m across .* the walls cover the light\(s\) Lamp: raise the "),
    (4, (5.0, 5.0), r"Lamp are inside an obstacle seen from above: move them"),   # inside at any resolution
    (300, (5.0, 5.0), r"Lamp are inside an obstacle seen from above: move them"),
])
def test_walls_that_fill_a_coarse_maps_texels_ask_for_a_higher_resolution(res, light, message):
    """A 10 m map with a 1 m wall in its middle: at Resolution 2 or 4 it fills whole texels, covering the map or
    the light beside it; the refusal says to raise the Resolution, not to move the light (which at 256 is clear).
    A light really inside the wall is refused as that."""
    grid = lm.make_grid((0, 0, 10, 10), res)
    tris = box(4.5, 4.5, 5.5, 5.5)
    lights = [lm.Light(light[0], light[1], 1.5, name="Lamp")]
    with pytest.raises(lm.LightmapError, match=message):
        lm.check_lights_at_resolution(grid, lm.rasterise(grid, tris), tris, lights, 0.0)
    fine = lm.make_grid((0, 0, 10, 10), lm.FINE_RESOLUTION)
    if light == (4.0, 4.0):
        lm.check_lights_at_resolution(fine, lm.rasterise(fine, tris), tris, lights, 0.0)


def test_a_room_modelled_with_its_floor_and_ceiling_keeps_only_its_walls():
    """A level modelled as one closed room (floor, walls, a ceiling seen from inside): the floor and the ceiling
    would cover the whole map from above; only the walls are obstacles, and the lights inside the room light it."""
    x0, y0, x1, y1, h = -3.93, -2.97, 3.93, 2.97, 2.5   # (walls off the texel lines)
    floor = [[(x0, y0, 0.01), (x1, y0, 0.0), (x1, y1, 0.02)], [(x0, y0, 0.01), (x1, y1, 0.02), (x0, y1, 0.0)]]
    # the ceiling turned down (into the room), above the lights
    ceiling = [[(x0, y0, h), (x1, y1, h), (x1, y0, h)], [(x0, y0, h), (x0, y1, h), (x1, y1, h)]]
    walls = box(x0, y0, x1, y1, z=h)[2:]
    crate = box(1.0, 1.0, 2.0, 2.0, z=3.0)  # a block standing in the room, taller than the room: its top stays
    tris = np.concatenate([np.array(floor + ceiling), walls, crate])
    kept = lm.wall_triangles(tris, 0.0, [1.5, 2.0])
    assert len(kept) == len(walls) + len(crate)
    grid = lm.make_grid((-5.0, -4.0, 5.0, 4.0), 50)
    occ = lm.rasterise(grid, kept)
    i, j = grid.texel_of(-2.0, 0.0)
    assert not occ[i, j] and lm.rasterise(grid, tris)[i, j]        # the floor and ceiling no longer cover it
    assert occ[grid.texel_of(1.5, 1.5)]                             # the crate is solid from above
    lm.check_lights(grid, occ, [lm.Light(-2.0, 0.0, 1.5)], 0.0)    # not inside an obstacle any more
    result = lm.bake(grid, occ, [lm.Light(-2.0, 0.0, 1.5, power=500.0)], 0.0, lm.Settings(resolution=50))
    inside = result.rgb[grid.texel_of(-1.0, -1.0)].sum()
    outside = result.rgb[grid.texel_of(-4.6, 0.0)].sum()
    assert inside > 0 and outside == 0


def test_wall_triangles_keeps_everything_without_lights_or_triangles():
    tris = box(0, 0, 1, 1)
    assert len(lm.wall_triangles(tris, 0.0, [])) == len(tris)
    assert lm.wall_triangles(np.zeros((0, 3, 3)), 0.0, [1.0]).shape == (0, 3, 3)


_KILLED_BAKE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from core import lightmap2d as lm

def stalled(path, *args, **kwargs):  # the first file half-written, then the process is killed
    with open(path, "wb") as fh:
        fh.write(b"half an EXR")
    print("writing", flush=True)
    time.sleep(120)

lm.exr.write_exr = stalled
grid = lm.make_grid((0.0, 0.0, 4.0, 4.0), 8)
occ = lm.rasterise(grid, lm.np.zeros((0, 3, 3)))
result = lm.bake(grid, occ, [lm.Light(2.0, 2.0, 1.0, power=100.0)], 0.0, lm.Settings(resolution=8))
lm.write_outputs(sys.argv[2], result, {})
"""


def test_a_bake_killed_while_writing_leaves_a_staging_folder_the_next_bake_removes(tmp_path, monkeypatch):
    """A bake killed (SIGKILL) while it writes leaves its staging folder in the output folder, named and owned as
    every bake's (``core.outputs``); the next bake into that folder removes it, says so, and leaves only its files.
    A staging folder of an older EnvFX's light map (no owner file) goes once unchanged for FOREIGN_MAX_AGE."""
    import os
    import subprocess
    import sys
    import time

    from core import outputs

    out = tmp_path / "out"
    root = os.path.dirname(os.path.dirname(os.path.abspath(lm.__file__)))  # (the folder holding core/)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_BAKE, root, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    finally:
        proc.kill()
        proc.wait()
    left = os.listdir(out)
    assert len(left) == 1 and left[0].startswith(f"{outputs.STAGING_PREFIX}lightmap-{proc.pid}-"), left
    assert os.path.isfile(out / left[0] / "lightmap.exr")
    legacy = out / ".envfx_lightmap_q8x2k"  # an older EnvFX's staging folder, unchanged for over a week
    legacy.mkdir()
    (legacy / "lightmap.png").write_bytes(b"old")
    old = time.time() - outputs.FOREIGN_MAX_AGE - 3600.0
    os.utime(legacy / "lightmap.png", (old, old))
    os.utime(legacy, (old, old))
    monkeypatch.setattr(outputs, "_STARTED", time.time() + 1.0)  # this is a later session than the killed one
    result, _, _ = bake((0.0, 0.0, 4.0, 4.0), 8, [], [lm.Light(2.0, 2.0, 1.0, power=100.0)])
    written = lm.write_outputs(str(out), result, {})
    assert sorted(written.stale_removed) == sorted([left[0], legacy.name])
    assert sorted(os.listdir(out)) == sorted(lm.FILES)
