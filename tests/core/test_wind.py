"""Wind core: the bake on constructed trees with known structure, and the live-wind reference's guarantees."""

import math
from typing import Any

import numpy as np
import pytest

from core import wind
from core import wind_shapes

# the presets as AssetWind's keywords (core types their values as the union of floats, strings and bools)
PRESETS: dict[str, dict[str, Any]] = wind.PRESETS


def _bake(tree, **kw):
    return wind.bake_wind_data(tree["positions"], tree["edges"], **kw)


def _rotz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


@pytest.mark.parametrize("welded", [False, True])
@pytest.mark.parametrize("lean,origin", [((0.0, 0.0), (0.0, 0.0, 0.0)), ((1.5, -0.8), (30.0, -12.0, 4.0))])
def test_bake_structure(welded, lean, origin):
    tree = wind_shapes.make_tree(lean=lean, origin=origin, welded=welded)
    res = _bake(tree)
    kind, bid, lid = tree["kind"], tree["branch_id"], tree["leaf_id"]
    # height gradient 0 at the base, 1 at the top
    z = tree["positions"][:, 2]
    assert res.height[np.argmin(z)] == pytest.approx(0.0)
    assert res.height[np.argmax(z)] == pytest.approx(1.0)
    assert res.asset_height == pytest.approx(float(z.max() - z.min()), rel=1e-5)
    # B is 0 on the trunk, grows monotonically along each branch and stays in 0..1
    assert np.all(res.branch[kind == 1] == 0.0)
    assert res.branch.min() >= 0.0 and res.branch.max() == pytest.approx(1.0)
    for b in range(bid.max() + 1):
        m = (kind == 2) & (bid == b)
        along = tree["along"][m]
        order = np.argsort(along, kind="stable")
        ring_mean = np.array([res.branch[m][along == a].mean() for a in np.unique(along)])
        # rings still inside the trunk's core (welded base) are 0, then B grows strictly
        assert np.all(np.diff(ring_mean) >= 0), (b, ring_mean)
        assert np.all(np.diff(ring_mean[ring_mean > 0]) > 0), (b, ring_mean)
        assert res.branch[m][order][-1] > 0.2
    # R is 0 at each leaf's attachment and maximal (1) at its tip
    assert res.n_leaves == lid.max() + 1
    assert np.all(res.leaf[kind != 3] == 0.0)
    assert np.all(res.leaf[tree["attach"]] == 0.0)
    for leaf in range(lid.max() + 1):
        m = lid == leaf
        assert res.leaf[m].max() == pytest.approx(1.0)
        tip = np.nonzero(m)[0][2]
        assert res.leaf[tip] == pytest.approx(1.0)
    # G constant per branch (with its leaves), different between branches
    g_per_branch = []
    for b in range(bid.max() + 1):
        # a welded base inside the trunk (and a leaf stuck there) belongs to the trunk: B = 0, G = 0
        g = res.phase[(bid == b) & (res.branch > 0)]
        assert len(g) >= 0.7 * (bid == b).sum()
        assert np.ptp(g) == 0.0
        g_per_branch.append(g[0])
    assert len(set(np.round(g_per_branch, 6))) == len(g_per_branch)
    assert np.all((res.phase >= 0) & (res.phase < 1))
    assert res.n_branches == bid.max() + 1
    # leaves inherit their branch's B at the attachment
    assert np.mean(res.branch[kind == 3] > 0) > 0.95
    assert not any("far" in w for w in res.warnings)


def test_bake_is_rotation_and_translation_invariant_about_z():
    tree = wind_shapes.make_tree()
    a = _bake(tree)
    p = tree["positions"] @ _rotz(0.7).T + np.array([5.0, 3.0, 1.0])
    b = wind.bake_wind_data(p, tree["edges"])
    for name in ("height", "branch", "leaf"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=2e-3)
    np.testing.assert_array_equal(a.phase, b.phase)


def test_bake_overrides():
    tree = wind_shapes.make_tree()
    labels = np.zeros(len(tree["positions"]), np.int8)
    first_leaf = tree["leaf_id"] == 0
    labels[first_leaf] = wind.LABEL_BRANCH  # a leaf marked as branch is no longer a leaf
    branch0 = (tree["branch_id"] == 0) & (tree["kind"] == 2)
    labels[branch0] = wind.LABEL_LEAF
    res = _bake(tree, labels=labels)
    assert np.all(res.leaf[first_leaf] == 0.0)
    assert res.leaf[branch0].max() == pytest.approx(1.0)
    assert np.all(res.kind[branch0] == wind.LABEL_LEAF)


def test_single_island_warns_and_far_leaf_warns():
    tree = wind_shapes.make_tree(n_branches=0, leaves_per_branch=0)
    res = _bake(tree)
    assert any("single island" in w for w in res.warnings)
    assert np.all(res.branch == 0.0)
    tree = wind_shapes.make_tree()
    p = tree["positions"].copy()
    p[tree["leaf_id"] == 0] += np.array([0.0, 0.0, 2.0]) + np.array([6.0, 6.0, 0.0])
    res = wind.bake_wind_data(p, tree["edges"])
    assert any("far from any branch" in w for w in res.warnings)


def test_vertices_without_faces_do_not_make_the_structure():
    """A stray point below the base (a merge left it) would be the asset's lowest vertex, so its one-vertex island
    the trunk, and the real trunk a stem bending like a branch. Vertices without faces (that point, a strand of loose
    edges hanging from a leaf) take no part: the faced vertices get exactly the clean tree's data, and each face-less
    vertex carries all the data of its nearest faced vertex."""
    tree = wind_shapes.make_tree()
    clean = _bake(tree)
    p, n = tree["positions"], len(tree["positions"])
    base = p[np.argmin(p[:, 2])]
    tip = int(np.nonzero(tree["leaf_id"] == 0)[0][2])
    strand = p[tip] + np.outer(np.arange(1, 4), [0.0, 0.0, -0.05])
    extra = np.concatenate([[base + (0.01, 0.01, -0.5)], strand])
    # the stray point first (every faced index moves by one), the strand after, its first edge on the leaf's tip
    positions = np.concatenate([extra[:1], p, extra[1:]])
    edges = np.concatenate([tree["edges"] + 1, [(tip + 1, n + 1), (n + 1, n + 2), (n + 2, n + 3)]])
    faced = np.r_[False, np.ones(n, bool), np.zeros(3, bool)]
    res = wind.bake_wind_data(positions, edges, faced=faced)
    assert res.faceless is not None and res.source is not None  # a bake with stray vertices says where they went
    for name in ("height", "branch", "leaf", "phase", "leaf_phase", "kind"):
        np.testing.assert_array_equal(getattr(res, name)[1:n + 1], getattr(clean, name), err_msg=name)
    assert (res.asset_height, res.base_z, res.n_islands, res.n_branches, res.n_leaves) == (
        clean.asset_height, clean.base_z, clean.n_islands, clean.n_branches, clean.n_leaves)
    np.testing.assert_array_equal(res.faceless, ~faced)
    nearest = 1 + np.argmin(np.linalg.norm(extra[:, None, :] - p[None, :, :], axis=2), axis=1)
    loose = np.nonzero(~faced)[0]
    np.testing.assert_array_equal(res.source[loose], nearest)
    np.testing.assert_array_equal(res.source[faced], np.nonzero(faced)[0])
    for name in ("height", "branch", "leaf", "phase", "leaf_phase", "kind"):
        np.testing.assert_array_equal(getattr(res, name)[loose], getattr(res, name)[nearest], err_msg=name)
    # without ``faced``, a vertex on no edge is a lone point, face-less too
    res = wind.bake_wind_data(positions[:n + 1], tree["edges"] + 1)
    assert res.faceless is not None and res.source is not None
    assert res.faceless[0] and res.source[0] == nearest[0] and res.branch[0] == 0.0
    np.testing.assert_array_equal(res.branch[1:], clean.branch)
    # points and loose edges only: nothing to bake
    with pytest.raises(wind.WindError, match="no faces"):
        wind.bake_wind_data(positions, edges, faced=np.zeros(len(positions), bool))
    with pytest.raises(wind.WindError, match="no faces"):
        wind.bake_wind_data(np.array([[0, 0, 0], [0, 0, 1.0]]), np.zeros((0, 2)))


def test_bad_bake_inputs():
    with pytest.raises(wind.WindError, match="no vertices"):
        wind.bake_wind_data(np.zeros((0, 3)), np.zeros((0, 2)))
    with pytest.raises(wind.WindError, match="flat"):
        wind.bake_wind_data(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]]), np.array([[0, 1], [1, 2]]))
    with pytest.raises(wind.WindError, match="non-finite"):
        wind.bake_wind_data(np.array([[0, 0, 0], [1, 0, np.nan]]), np.zeros((0, 2)))
    with pytest.raises(wind.WindError, match="out of range"):
        wind.bake_wind_data(np.array([[0, 0, 0], [1, 0, 1.0]]), np.array([[0, 5]]))


def test_connected_components():
    lab = wind.connected_components(7, np.array([[6, 5], [5, 4], [0, 1], [3, 2], [2, 1]]))
    assert list(lab) == [0, 0, 0, 0, 4, 4, 4]


def test_pack_channels_layouts():
    tree = wind_shapes.make_tree()
    res = _bake(tree)
    ao = np.linspace(0, 1, len(res.height))
    hzd = wind.pack_channels(res, ao)
    np.testing.assert_array_equal(hzd[:, 0], res.leaf)
    np.testing.assert_array_equal(hzd[:, 1], res.phase)
    np.testing.assert_array_equal(hzd[:, 2], res.branch)
    np.testing.assert_allclose(hzd[:, 3], ao, atol=1e-7)
    cry = wind.pack_channels(res, ao, "CRYENGINE")
    np.testing.assert_array_equal(cry[:, 1], res.leaf_phase)
    custom = wind.pack_channels(res, ao, "CUSTOM", ("HEIGHT", "ZERO", "ONE", "BRANCH"))
    np.testing.assert_array_equal(custom[:, 0], res.height)
    assert np.all(custom[:, 2] == 1.0)
    with pytest.raises(wind.WindError, match="four of"):
        wind.pack_channels(res, ao, "CUSTOM", ("HEIGHT",))
    with pytest.raises(wind.WindError, match="Unknown channel layout"):
        wind.pack_channels(res, ao, "UNREAL")


def _live(tree, frame, scene, asset, matrix=None):
    res = _bake(tree)
    col = wind.pack_channels(res)
    m = np.eye(4) if matrix is None else matrix
    normals = np.zeros_like(tree["positions"])
    normals[:, 2] = 1.0
    return res, wind.wind_offsets(tree["positions"], res.height, col, normals, m, frame, scene, asset)


def test_zero_wind_is_rest_pose():
    tree = wind_shapes.make_tree()
    scene = wind.SceneWind(strength=0.0, gust_strength=1.0, ambient=0.0)
    for cat in wind.CATEGORIES:
        for frame in (1, 17, 123):
            _, off = _live(tree, frame, scene, wind.AssetWind(category=cat, asset_height=8.0))
            assert np.all(off == 0.0)


def _leaf_vs_trunk(tree, res, off):
    mag = np.linalg.norm(off, axis=1)
    trunk = tree["kind"] == 1
    leaves = np.nonzero(tree["kind"] == 3)[0]
    tz, tm = res.height[trunk], mag[trunk]
    o = np.argsort(tz)
    # the trunk's motion where each leaf's branch leaves it (the branch is carried from there)
    carry = wind.live_attributes(tree["positions"], res.height, wind.pack_channels(res))[wind.LIVE_ATTRS[4]]
    return mag[leaves], np.interp(carry[leaves], tz[o], tm[o])


@pytest.mark.parametrize("micro", [0.0, 1.0])
def test_trunk_base_never_moves_and_leaves_move_more(micro):
    tree = wind_shapes.make_tree()
    scene = wind.SceneWind(direction=(0.3, 0.8, 0.0), strength=1.5, gust_strength=0.8)
    asset = wind.AssetWind(asset_height=8.0, micro=micro)
    z = tree["positions"][:, 2]
    base = z <= z.min() + 1e-6
    leaf_sum = trunk_sum = 0.0
    behind = samples = 0
    for frame in range(1, 200, 13):
        res, off = _live(tree, frame, scene, asset)
        assert np.all(off[base] == 0.0)
        leaf, trunk = _leaf_vs_trunk(tree, res, off)
        leaf_sum, trunk_sum = leaf_sum + leaf, trunk_sum + trunk
        behind, samples = behind + int((leaf <= trunk).sum()), samples + len(leaf)
    # a leaf can be behind the trunk at its height for a moment: with flutter when it swings against the wind,
    # without when its branch points down the wind (a push along a branch cannot lengthen it), but rarely, and
    # over time every leaf moves more
    assert behind <= (0.5 if micro else 0.03) * samples, behind / samples
    assert np.all(leaf_sum > trunk_sum)


@pytest.mark.parametrize("loop", [0, 72])
def test_live_wind_swing_is_the_documented_sum_of_sines(loop):
    """The split form the node group evaluates (static per-vertex factors x per-asset sines/cosines) equals the
    swing written out directly: bend along the wind, sway across it, lift up, each Ba * sin(2 pi f t + ph + 2 pi G)
    with Ba the branch's lever (B less B at its attach point), whole-asset bend h^2 on the pieces standing on the
    ground, and per object axis a leaf flutter R * sin(2 pi f t + ph + psi(p, G))."""
    rng = np.random.default_rng(3)
    n = 500
    p = rng.normal(0, 3, (n, 3))
    h = rng.random(n)
    col = rng.random((n, 4))
    col[:, 1] = rng.integers(0, 7, n) / 7.0  # seven branches
    m = np.eye(4)
    m[:3, :3] = _rotz(0.7) * 1.3
    m[:3, 3] = (4.0, -2.0, 1.0)
    scene = wind.SceneWind(direction=(0.4, -0.9, 0.3), strength=1.2, gust_strength=0.6, loop_frames=loop)
    asset = wind.AssetWind(category="PLANT", rigidity=1.7, bend=1.3, sway=-0.8, lift=0.6, micro=2.0, ramp=1.5,
                           asset_height=5.0)
    live = wind.live_attributes(p, h, col)
    # the attach point of each branch: its vertices of the lowest B (a random B: one vertex each)
    lever = np.empty(n)
    ha = np.empty(n)
    for g in np.unique(col[:, 1]):
        sel = col[:, 1] == g
        first = np.argmin(np.where(sel, col[:, 2], np.inf))
        lever[sel] = col[sel, 2] - col[first, 2]
        ha[sel] = h[first]
        np.testing.assert_allclose(live[wind.LIVE_ATTRS[3]][sel], p[sel] - p[first], atol=1e-5)
    np.testing.assert_allclose(live[wind.LIVE_ATTRS[4]], np.where(ha <= wind.PIVOT_H, 0.0, ha), atol=1e-6)
    two_pi = 2 * math.pi
    for frame in (3, 41, 250):
        t = frame / scene.fps
        k = wind.effective_wind(t, m[:3, 3], scene, asset) * asset.asset_height / asset.rigidity
        d = wind.horizontal_dir(scene.direction)
        across, up = np.array([-d[1], d[0], 0.0]), np.array([0.0, 0.0, 1.0])
        phi = two_pi * col[:, 1]
        osc = [np.sin(two_pi * float(wind.quantize(wind.BRANCH_HZ["PLANT"] * mult, loop, scene.fps)) * t + ph + phi)
               for mult, ph in zip(wind.BRANCH_MULTS, wind.BRANCH_PHASES)]
        bb = k * wind.BRANCH_SCALE * lever
        grounded = np.where(ha <= wind.PIVOT_H, h - ha, 0.0)  # the whole-asset bend: on pieces on the ground
        along = k * wind.MAIN_SCALE * grounded ** 2 + asset.bend * bb * (1 + 0.3 * osc[0])
        world = (along[:, None] * d + (asset.sway * bb * 0.5 * osc[1])[:, None] * across
                 + (asset.lift * bb * 0.4 * osc[2])[:, None] * up)
        w = np.asarray(wind.MICRO_WAVES)
        psi = phi + p @ w[0] + np.sin(p @ w[1]) + np.sin(p @ w[2])
        micro = np.stack([asset.micro * k * wind.MICRO_SCALE * col[:, 0]
                          * np.sin(two_pi * float(wind.quantize(f, loop, scene.fps)) * t + ph + psi)
                          for f, ph in zip(wind.MICRO_HZ, wind.MICRO_PHASES)], 1)
        expect = world @ np.linalg.inv(m[:3, :3]).T + micro
        got = wind.wind_swing(p, None, m, frame, scene, asset, live)
        assert np.abs(expect).max() > 0.05
        np.testing.assert_allclose(got, expect, atol=2e-5)


def test_loop_first_and_last_frame_match():
    tree = wind_shapes.make_tree()
    scene = wind.SceneWind(strength=1.0, gust_strength=0.9, gust_frequency=0.23, loop_frames=96, fps=24.0)
    for cat in wind.CATEGORIES:
        asset = wind.AssetWind(category=cat, asset_height=8.0)
        _, a = _live(tree, 1, scene, asset)
        _, b = _live(tree, 97, scene, asset)
        _, mid = _live(tree, 49, scene, asset)
        np.testing.assert_allclose(a, b, atol=1e-5)
        assert np.abs(a - mid).max() > 1e-3


def test_spring_response_smooths_gusts():
    # a stiffer spring category follows the gust more closely than the soft tree spring
    o = (0.0, 0.0, 0.0)
    scene = wind.SceneWind(gust_frequency=1.0)
    ts = np.linspace(0, 10, 400)
    tree = np.array([wind.gust(t, o, scene, "TREE") for t in ts])
    grass = np.array([wind.gust(t, o, scene, "GRASS") for t in ts])
    assert np.ptp(tree) < np.ptp(grass)


def test_ramp_responds_earlier_at_low_wind():
    o = (0.0, 0.0, 0.0)
    low = wind.SceneWind(strength=0.2, gust_strength=0.0)
    assert wind.effective_wind(0.0, o, low, wind.AssetWind(ramp=3.0)) > \
        2 * wind.effective_wind(0.0, o, low, wind.AssetWind(ramp=0.0))
    full = wind.SceneWind(strength=1.0, gust_strength=0.0)
    assert wind.effective_wind(0.0, o, full, wind.AssetWind(ramp=3.0)) == pytest.approx(1.0)


def test_rotated_object_moves_along_world_wind():
    tree = wind_shapes.make_tree()
    scene = wind.SceneWind(direction=(1.0, 0.0, 0.0), strength=1.0, gust_strength=0.0)
    asset = wind.AssetWind(asset_height=8.0, sway=0.0, lift=0.0, micro=0.0)
    m = np.eye(4)
    m[:3, :3] = _rotz(math.pi / 2)
    _, off = _live(tree, 10, scene, asset, m)
    world = off @ m[:3, :3].T
    trunk = tree["kind"] == 1  # bends along the wind (along arcs about its base: down a little as it goes along)
    assert world[trunk, 0].max() > 0.1 and np.abs(world[trunk, 1]).max() < 0.02 * world[trunk, 0].max()
    assert world[trunk, 2].min() < -1e-3
    assert world[:, 0].max() > 0.1 and world[:, 0].sum() > 10 * np.abs(world[:, 1]).sum()


def _cam(location, pitch_deg):
    """Camera world matrix: looks along -Z rotated by pitch around X (0 = straight down, 90 = horizontal, +Y)."""
    a = math.radians(pitch_deg)
    m = np.eye(4)
    m[:3, :3] = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
    m[:3, 3] = location
    return m


def test_grass_tilts_away_from_a_camera_looking_down_and_fades_with_distance():
    g = wind_shapes.make_grass()
    res = wind.bake_wind_data(g["positions"], g["edges"])
    col = wind.pack_channels(res)
    normals = np.zeros_like(g["positions"])
    still = wind.SceneWind(strength=0.0, ambient=0.0, grass_tilt=1.0, fade_start=10.0, fade_end=20.0)
    asset = wind.AssetWind(category="GRASS", asset_height=res.asset_height)
    top = res.height > 0.99

    def offsets(cam):
        return wind.wind_offsets(g["positions"], res.height, col, normals, np.eye(4), 1, still, asset,
                                 camera_matrix=cam)

    # camera south of the clump looking down at 40 degrees: the tops lean north (+Y), away from it
    off = offsets(_cam((0.0, -3.0, 3.0), 40.0))
    assert np.all(off[top, 1] > 0) and np.abs(off[top, 0]).max() < 0.05 * off[top, 1].min()
    # a horizontal camera does not tilt; no camera: nothing at all
    assert np.abs(offsets(_cam((0.0, -3.0, 0.5), 90.0))).max() < 1e-7
    assert np.all(offsets(None) == 0.0)
    # beyond fade_end the clump is scaled to nothing (offset = -position), before fade_start untouched
    far = offsets(_cam((0.0, -30.0, 0.5), 90.0))
    np.testing.assert_allclose(far, -g["positions"], atol=1e-6)
    halfway = offsets(_cam((0.0, -15.0, 0.0), 90.0))
    np.testing.assert_allclose(halfway, -0.5 * g["positions"], atol=1e-5)


def test_grass_ambient_motion_is_driven_by_the_wind_and_is_most_of_it():
    """The write-up's grass: the ambient motion (figure-eight and wobble) is "driven by the length of the force
    field", and "the ambient animation large and small together accounts for about 80% of the total animation the
    rest comes from the wind sample". Still air leaves the grass still; the ambient part scales with the wind the
    clump samples (after its ramp, like the rest of its motion); with the default wind it is about 80% of the
    animated motion (RMS over vertices and frames of the offsets minus their mean over the loop)."""
    g = wind_shapes.make_grass(blades=12, height=0.6, seed=4)
    res = wind.bake_wind_data(g["positions"], g["edges"])
    col = wind.pack_channels(res)
    normals = np.random.default_rng(5).normal(size=g["positions"].shape)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    asset = wind.AssetWind(**PRESETS["GRASS"], asset_height=res.asset_height)
    m = np.eye(4)
    m[:3, 3] = (3.0, -2.0, 0.5)

    def offsets(**kw):
        scene = wind.SceneWind(loop_frames=96, **kw)
        return np.stack([wind.wind_offsets(g["positions"], res.height, col, normals, m, f, scene, asset)
                         for f in range(0, 96, 3)]).astype(np.float64)

    for gusts in (0.0, 1.0):  # gusts scale the strength: still air stays still
        assert np.all(offsets(strength=0.0, gust_strength=gusts) == 0.0)

    def ambient_part(strength, **kw):
        return offsets(strength=strength, **kw) - offsets(strength=strength, ambient=0.0, **kw)

    def motion(o):
        a = o - o.mean(axis=0, keepdims=True)
        return float(np.sqrt((a ** 2).sum(-1).mean()))

    steady = ambient_part(1.0, gust_strength=0.0)
    assert np.abs(steady).max() > 0.01
    k = asset.ramp
    for strength in (0.25, 3.0):  # steady wind: the ambient part grows with the ramped wind (along arcs: nearly
        ramped = strength * (1 + k) / (1 + k * strength)  # in proportion)
        assert motion(ambient_part(strength, gust_strength=0.0)) == pytest.approx(ramped * motion(steady), rel=0.1)

    without = offsets(ambient=0.0)
    share = motion(offsets() - without) / (motion(offsets() - without) + motion(without))
    assert 0.75 < share < 0.85, share


def test_multi_stem_bush_stems_root_at_the_ground():
    bush = wind_shapes.make_bush()
    res = wind.bake_wind_data(bush["positions"], bush["edges"])
    ground = (bush["kind"] == 2) & (bush["along"] == 0.0)  # every stem's root ring
    assert ground.sum() == 4 * 5
    assert np.all(res.branch[ground] == 0.0)  # no stem base moves with the branch motion
    for s in range(bush["branch_id"].max() + 1):
        m = (bush["kind"] == 2) & (bush["branch_id"] == s)
        ring = np.array([res.branch[m][bush["along"][m] == a].mean() for a in np.unique(bush["along"][m])])
        assert np.all(np.diff(ring) >= 0)
    assert res.n_leaves == bush["leaf_id"].max() + 1
    assert np.all(res.leaf[bush["attach"]] == 0.0)
    # the live wind keeps every stem's base in place
    col = wind.pack_channels(res)
    off = wind.wind_offsets(bush["positions"], res.height, col, np.zeros_like(bush["positions"]), np.eye(4), 30,
                            wind.SceneWind(strength=2.0), wind.AssetWind(asset_height=res.asset_height,
                                                                         main_bend=False))
    assert np.all(off[ground] == 0.0) and np.abs(off).max() > 0.01


# --- wind bends, it does not stretch (#26) ---------------------------------------------------------------

def _grass_card(height=2.0):
    """A tall grass card of 12 vertices (2 across, 6 up), standing on the origin."""
    z = np.linspace(0.0, height, 6)
    pos = np.array([[x, 0.0, zz] for zz in z for x in (-0.05, 0.05)], np.float32)
    faces = np.array([[a, a + 1, a + 3] for a in range(0, 10, 2)] + [[a, a + 3, a + 2] for a in range(0, 10, 2)])
    return {"positions": pos, "faces": faces, "edges": wind_shapes.faces_to_edges(faces)}


def _pivots(name, shape):
    """Per vertex, the point whose distance it must keep, as indices into ``positions``: the card keeps its
    distance from the middle of its bottom edge; the tree's trunk from the trunk's base, a branch and its leaves
    from the branch's first ring (where it leaves the trunk); a bush stem and its leaves from the stem's root
    ring. Returns (vertex indices, pivot vertex indices, carried) triples: the pivot point is the mean of its
    vertices at rest, and as they move when ``carried`` (a branch's, which the trunk's bend moves; a root is in
    the ground)."""
    p = shape["positions"]
    if name == "card":
        return [(np.arange(len(p)), np.nonzero(p[:, 2] == 0.0)[0], False)]
    kind, branch, along = shape["kind"], shape["branch_id"], shape["along"]
    pairs = []
    if name == "tree":
        trunk = np.nonzero(kind == 1)[0]
        pairs.append((trunk, trunk[p[trunk, 2] <= p[trunk, 2].min() + 1e-6], False))
    for b in np.unique(branch[branch >= 0]):
        ring = np.nonzero((branch == b) & (kind == 2) & (along == 0.0))[0]
        pairs.append((np.nonzero(branch == b)[0], ring, name == "tree"))
    return pairs


LENGTH_SHAPES = {"card": _grass_card, "tree": lambda: wind_shapes.make_tree(),
                 "bush": lambda: wind_shapes.make_bush()}
LENGTH_ASSETS = [("preset", name) for name in wind.PRESETS] + [("category", name) for name in wind.CATEGORIES]
# (a card is all trunk: with a preset without the whole-asset bend it stands still, before #26 too)
LENGTH_CASES = [(shape, what, which) for shape in LENGTH_SHAPES for what, which in LENGTH_ASSETS
                if not (shape == "card" and what == "preset" and not wind.PRESETS[which]["main_bend"])]


@pytest.mark.parametrize("shape_name, what, which", LENGTH_CASES)
def test_wind_bends_without_stretching_at_any_strength(shape_name, what, which):
    """#26: over a loop, at strengths 0.5, 1, 3 and 10 (beyond the slider), every vertex keeps its distance from
    the point it swings about to within 2%: the card's and the trunk's base (the whole-asset bend), a branch's or
    stem's attach point (the branch motion, leaves with it). Grass ambient motion, lean and wobble included."""
    shape = LENGTH_SHAPES[shape_name]()
    res = _bake(shape)
    col = wind.pack_channels(res)
    p = shape["positions"].astype(np.float64)
    normals = np.zeros_like(p)
    normals[:, 1] = 1.0  # the card's normal; on the others a wobble sideways
    kw = PRESETS[which] if what == "preset" else dict(category=which)
    asset = wind.AssetWind(asset_height=res.asset_height, **kw)
    live = wind.live_attributes(p, res.height, col)
    pairs = _pivots(shape_name, shape)
    worst, moved = 0.0, 0.0
    for strength in (0.5, 1.0, 3.0, 10.0):
        scene = wind.SceneWind(direction=(0.6, 0.8, 0.0), strength=strength, loop_frames=120, ambient=1.0)
        for frame in range(1, 121, 7):
            x = p + wind.wind_offsets(p, res.height, col, normals, np.eye(4), frame, scene, asset, live=live)
            moved = max(moved, float(np.abs(x - p).max()))
            for verts, pivot, carried in pairs:
                rest = np.linalg.norm(p[verts] - p[pivot].mean(0), axis=1)
                now = np.linalg.norm(x[verts] - (x if carried else p)[pivot].mean(0), axis=1)
                far = rest > 0.1 * res.asset_height  # (near its pivot a vertex's own ring makes the numbers)
                worst = max(worst, float(np.abs(now[far] / rest[far] - 1.0).max(initial=0.0)))
    assert moved > 0.01 * res.asset_height
    assert worst < 0.02, worst


# the displacement of the top (the card's top, the tree's trunk top, the bush's highest vertex) at strength 1 with
# the default gusts, wind (0.6, 0.8), 120-frame loop, normals +Y, at frames 1, 8, ..., 120, by the live wind before #26
# (the motion was offsets that stretched): keeping lengths must not make the motion look smaller or larger. The bush
# rows are that same pre-#26 wind_offsets (ff775e0) on the channels of today's bake (#20 continues B along each leaf,
# so B is normalised over the leaf tips, and numbers the stems' G afresh); the card and tree rows come out unchanged
TODAY_TOP = {
    ("card", "TREE"): (0.132, 0.1463, 0.1601, 0.172, 0.1791, 0.1812, 0.1825, 0.1868, 0.1916, 0.1915, 0.1846, 0.1725,
                       0.1564, 0.1374, 0.1204, 0.113, 0.1177, 0.13),
    ("card", "GRASS"): (0.221, 0.3626, 0.463, 0.3016, 0.1476, 0.05517, 0.3129, 0.2311, 0.279, 0.2064, 0.331, 0.3157,
                        0.309, 0.1567, 0.1733, 0.1353, 0.0792, 0.1553),
    ("tree", "TREE"): (0.5216, 0.5779, 0.6324, 0.6795, 0.7076, 0.7156, 0.7208, 0.7378, 0.7568, 0.7565, 0.7292, 0.6815,
                       0.6179, 0.5427, 0.4758, 0.4464, 0.465, 0.5137),
    ("tree", "GRASS"): (1.006, 1.372, 1.906, 1.195, 0.6022, 0.23, 1.23, 0.9653, 1.027, 0.8172, 1.295, 1.277, 1.105,
                        0.7903, 0.534, 0.5763, 0.2973, 0.81),
    ("bush", "TREE"): (0.1501, 0.1836, 0.2147, 0.239, 0.2493, 0.2341, 0.2161, 0.2109, 0.2117, 0.2267, 0.2398, 0.2353,
                       0.2192, 0.1868, 0.1492, 0.1308, 0.1309, 0.1463),
    ("bush", "BUSH"): (0.05391, 0.08563, 0.07722, 0.05286, 0.07794, 0.08857, 0.05796, 0.063, 0.09448, 0.0731, 0.04867,
                       0.07481, 0.07034, 0.03974, 0.04488, 0.06838, 0.05462, 0.04893),
    ("bush", "GRASS"): (0.2169, 0.4709, 0.3849, 0.387, 0.1796, 0.1235, 0.299, 0.2364, 0.3376, 0.2422, 0.3331, 0.3436,
                        0.3096, 0.2213, 0.1942, 0.06367, 0.1699, 0.1735),
    ("bush", "BANNER"): (0.2784, 0.4219, 0.2908, 0.3196, 0.4511, 0.286, 0.3634, 0.4643, 0.2997, 0.427, 0.4309, 0.2728,
                         0.3798, 0.3046, 0.2033, 0.3177, 0.2816, 0.244),
}


@pytest.mark.parametrize("shape_name, preset", list(TODAY_TOP))
def test_motion_at_strength_one_looks_as_large_as_before(shape_name, preset):
    """#26: existing scenes keep their look: at strength 1 the top moves as far as it did before the wind kept
    lengths (within 10% at every sampled frame), now along an arc: it keeps its distance from its base."""
    shape = LENGTH_SHAPES[shape_name]()
    res = _bake(shape)
    col = wind.pack_channels(res)
    p = shape["positions"]
    if shape_name == "tree":
        top = int(np.argmax(np.where(shape["kind"] == 1, p[:, 2], -np.inf)))
    else:
        top = int(np.argmax(p[:, 2]))
    normals = np.zeros_like(p)
    normals[:, 1] = 1.0  # the card's
    asset = wind.AssetWind(asset_height=res.asset_height, **PRESETS[preset])
    scene = wind.SceneWind(direction=(0.6, 0.8, 0.0), loop_frames=120)
    base = p[_pivots(shape_name, shape)[0][1]].mean(0) if shape_name != "bush" else None
    if base is None:  # the bush's highest vertex is on a stem: its root
        base = next(p[pivot].mean(0) for verts, pivot, _ in _pivots(shape_name, shape) if top in verts)
    got, stretch = [], 0.0
    for f in range(1, 121, 7):
        off = wind.wind_offsets(p, res.height, col, normals, np.eye(4), f, scene, asset)[top]
        got.append(float(np.linalg.norm(off)))
        rest = np.linalg.norm(p[top] - base)
        stretch = max(stretch, abs(float(np.linalg.norm(p[top] + off - base)) / rest - 1.0))
    if preset == "GRASS":
        # #29: grass takes its gusts and figure-eight at each blade's place, the figure-eight along and across the
        # wind (it was along world X and Y): the frames' curve moved by design, its size over the loop stays
        today = np.asarray(TODAY_TOP[shape_name, preset])
        np.testing.assert_allclose([np.mean(got), np.max(got)], [today.mean(), today.max()], rtol=0.1)
    else:
        np.testing.assert_allclose(got, TODAY_TOP[shape_name, preset], rtol=0.1)
    assert stretch < 1e-3, stretch


def _field(blades=300, seed=3):
    """A field of thin vertical quads (0.4-0.6 m) over 6 x 6 m in one object, baked: (positions, bake, channels)."""
    rng = np.random.default_rng(seed)
    verts, faces = [], []
    for i in range(blades):
        x, y = rng.uniform(-3, 3, 2)
        h, a = rng.uniform(0.4, 0.6), rng.uniform(0, math.pi)
        dx, dy = 0.02 * math.cos(a), 0.02 * math.sin(a)
        verts += [(x - dx, y - dy, 0.0), (x + dx, y + dy, 0.0), (x + dx, y + dy, h), (x - dx, y - dy, h)]
        faces += [(4 * i, 4 * i + 1, 4 * i + 2), (4 * i, 4 * i + 2, 4 * i + 3)]
    p = np.array(verts)
    f = np.array(faces)
    edges = np.unique(np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1), axis=0)
    res = wind.bake_wind_data(p, edges)
    return p, res, wind.pack_channels(res)


def test_a_grass_field_sways_blade_by_blade_in_waves_along_the_wind():
    """#29 part 2: grass takes the gusts and the ambient motion at each blade's place (a wave travelling along the
    wind), so the tips of a field in one object lean differently (spread at least a third of the mean at every
    frame; per-object gusts gave a fifth); any other category keeps one gust per object; the loop stays seamless."""
    p, res, col = _field()
    m = np.eye(4)
    m[:3, :3] = [[0.8, -0.6, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]]
    m[:3, 3] = (12.0, -5.0, 0.0)
    base = (p[0::4] + p[1::4]) / 2  # the middle of each blade's lower edge
    for cat, spread in (("GRASS", 1 / 3), ("TREE", None)):
        preset = {k: v for k, v in PRESETS["GRASS" if cat == "GRASS" else "TREE"].items() if k != "category"}
        asset = wind.AssetWind(category=cat, asset_height=res.asset_height, **preset)
        for scene in (wind.SceneWind(), wind.SceneWind(direction=(0.2, 1.0, 0.0), loop_frames=48)):
            live = wind.live_attributes(p, res.height, col)
            lt = wind.live_terms(m, 20, scene, asset)
            for frame in (1, 20, 47, 90):
                off = wind.wind_offsets(p, res.height, col, np.zeros_like(p), m, frame, scene, asset, live=live)
                tips = off.reshape(-1, 4, 3)[:, 2:, :] @ m[:3, :3].T
                lean = np.linalg.norm(tips.mean(1)[:, :2], axis=1)
                if spread is not None:
                    assert lean.std() >= spread * lean.mean(), (frame, lean.std(), lean.mean())
                else:
                    assert lean.std() < 0.25 * lean.mean()
            if cat != "GRASS":
                continue
            # each blade's gust is the documented travelling wave at its root (the blade's attach point)
            blades = wind.blade_wind(p, live, m, 20, scene, asset, lt)
            roots = (p - live[wind.LIVE_ATTRS[3]]) @ m[:3, :3].T + m[:3, 3]
            np.testing.assert_allclose(roots[2::4], base @ m[:3, :3].T + m[:3, 3], atol=1e-5)  # a blade's root
            d = wind.horizontal_dir(scene.direction)
            t = wind.loop_time(20, scene)
            g = 0.0
            tau = t - roots @ d / wind.GUST_SPEED  # the gust of the world origin, reaching the blade later
            for amp, mult, ph in zip(wind.GUST_AMPS, wind.GUST_MULTS, wind.GUST_PHASES):
                f = float(wind.quantize(scene.gust_frequency * mult, scene.loop_frames, scene.fps))
                f0 = wind.SPRING_HZ["GRASS"]
                g = g + amp * f0 ** 2 / (f0 ** 2 + f ** 2) * np.sin(2 * math.pi * f * tau + ph - 2 * math.atan(f / f0))
            w = scene.strength * (1 + scene.gust_strength * g)
            np.testing.assert_allclose(blades.eff, w * (1 + asset.ramp) / (1 + asset.ramp * w), atol=1e-6)
            assert blades.eff.std() > 0.05 * blades.eff.mean()
            if scene.loop_frames:
                a, b = (wind.wind_offsets(p, res.height, col, np.zeros_like(p), m, f, scene, asset, live=live)
                        for f in (3, 3 + scene.loop_frames))
                np.testing.assert_allclose(a, b, atol=1e-5)
