"""Wind bake on vegetation built like real assets: separate unwelded pieces (branches starting inside or on their
parent), every kind of leaf card touching, hovering by or at the tip of its twig; the AO of the asset alone; bad
input. Each asserts what a game needs from the HZD channels (R per card, G per first-level branch, B along the
hierarchy, A not black)."""

import numpy as np
import pytest

from core import wind, wind_hierarchy, wind_shapes


def _rot(ax, a):
    c, s = np.cos(a), np.sin(a)
    m = np.eye(3)
    i, j = [(1, 2), (0, 2), (0, 1)][ax]
    m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
    return m


def check_channels(t, res, n_branches=5):
    kind, bid, lid = t["kind"], t["branch_id"], t["leaf_id"]
    # hierarchy: trunk -> branches -> twigs -> leaves, as built
    assert res.levels == [n_branches, n_branches * 3]
    cards = lid.max() + 1
    assert res.n_leaves == (2 * cards if t.get("card") == "crossed" else cards)  # crossed quads: two islands
    # R per card: 0 where it attaches, 1 at its far end, whatever the construction
    for leaf in range(lid.max() + 1):
        m = lid == leaf
        r = res.leaf[m]
        assert r.min() == pytest.approx(0.0, abs=1e-6) and r.max() == pytest.approx(1.0)
        if t.get("card") != "clump":  # an octahedron has no long axis: only its range is asserted
            assert res.leaf[m & t["leaf_base"]].max() < 0.2, (leaf, r)
            assert res.leaf[m & t["leaf_tip"]].max() > 0.95, (leaf, r)
        # G: one value per card
        assert np.ptp(res.phase[m]) == 0.0
    assert np.all(res.leaf[kind != 3] == 0.0)
    # G per first-level branch (with its twigs and leaves), distinct between them
    g = []
    for b in range(n_branches):
        vals = np.unique(res.phase[(bid == b) & (kind > 1)])
        assert len(vals) == 1, (b, vals)
        g.append(vals[0])
    assert len(set(np.round(g, 6))) == n_branches
    # B: 0 on the trunk, growing outwards along every piece, continuous at attach points, 1 at the farthest tip
    assert np.all(res.branch[kind == 1] == 0.0)
    assert res.branch.max() == pytest.approx(1.0)
    for level in (1, 2):
        for piece in np.unique(t["piece"][t["level"] == level]):
            m = t["piece"] == piece
            along, b = t["along"][m], res.branch[m]
            assert np.corrcoef(along, b)[0, 1] > 0.9
            assert b[along == along.max()].min() > b[along == 0].max()
    for b in range(n_branches):
        first = (bid == b) & (t["level"] == 1)
        twig = (bid == b) & (t["level"] == 2)
        leaf = (bid == b) & (kind == 3)
        assert res.branch[twig].min() >= res.branch[first].min()
        assert res.branch[leaf].mean() > res.branch[twig].mean() - 0.05
    assert not [w for w in res.warnings if "far" in w or "same branch phase" in w or "No branch" in w]


@pytest.mark.parametrize("place", wind_shapes.LEAF_PLACES)
@pytest.mark.parametrize("card", wind_shapes.LEAF_CARDS)
def test_separate_pieces_and_every_leaf_card(card, place):
    t = wind_shapes.make_vegetation(card, place)
    t["card"] = card
    check_channels(t, wind.bake_wind_data(t["positions"], t["edges"]))


def test_imported_placement_does_not_change_the_data():
    """An OBJ imported Y-up with an unapplied centimetre scale, away from the origin: in world space the same
    tree (the bridge applies the object matrices), so the same data."""
    t = wind_shapes.make_vegetation("crossed", "hover")
    ref = wind.bake_wind_data(t["positions"], t["edges"])
    p = t["positions"] @ _rot(2, 1.1).T * 0.01 * 100.0 + np.array([120.0, -40.0, 3.0])
    res = wind.bake_wind_data(p, t["edges"])
    np.testing.assert_allclose(res.branch, ref.branch, atol=2e-3)
    np.testing.assert_allclose(res.leaf, ref.leaf, atol=2e-3)
    np.testing.assert_array_equal(res.phase, ref.phase)
    small = wind.bake_wind_data(t["positions"] * 0.01, t["edges"])  # a tolerance relative to the asset
    assert small.levels == ref.levels and small.n_leaves == ref.n_leaves


def test_mixed_constructions_in_one_asset():
    a = wind_shapes.make_vegetation("quad", "touch", n_branches=3)
    b = wind_shapes.make_vegetation("strip", "tip", n_branches=3, seed=1)
    # b's branches and leaves (not its trunk) join a's trunk, turned half way round
    keep = b["kind"] > 1
    remap = np.full(len(keep), -1)
    remap[keep] = np.arange(keep.sum()) + len(a["positions"])
    faces = b["faces"][keep[b["faces"]].all(1)]
    p = np.concatenate([a["positions"], b["positions"][keep] @ _rot(2, np.pi / 3).T])
    f = np.concatenate([a["faces"], remap[faces]])
    res = wind.bake_wind_data(p, wind_shapes.faces_to_edges(f))
    assert res.levels == [6, 18]
    assert res.n_leaves == a["leaf_id"].max() + 1 + b["leaf_id"].max() + 1
    assert len(np.unique(res.phase[res.kind == 3])) == 6


def test_leaf_clusters_are_leaves_not_branches():
    """Clusters bigger than the Leaf Size (the old rule made them branches, so R was 0 everywhere)."""
    t = wind_shapes.make_vegetation("clump", "touch", height=1.0)
    res = wind.bake_wind_data(t["positions"], t["edges"], leaf_fraction=0.02)
    assert res.n_leaves == t["leaf_id"].max() + 1
    assert res.leaf[t["kind"] == 3].max() == pytest.approx(1.0)


def test_ao_of_the_asset_alone():
    """A: 0..1, never black on leaves; a double-sided card's twin does not occlude it; outer foliage brighter."""
    t = wind_shapes.make_vegetation("double", "touch")
    p, leaf = t["positions"], t["kind"] == 3
    ao = wind_hierarchy.ambient_occlusion(p, t["faces"], directions=32)
    assert ao.min() >= 0.0 and ao.max() <= 1.0
    assert ao[leaf].min() > 0.2
    single = wind_shapes.make_vegetation("quad", "touch")
    ao1 = wind_hierarchy.ambient_occlusion(single["positions"], single["faces"], directions=32)
    assert abs(ao[leaf].mean() - ao1[single["kind"] == 3].mean()) < 0.08
    rad = np.hypot(p[:, 0], p[:, 1])[leaf]
    assert ao[leaf][rad > np.percentile(rad, 75)].mean() > ao[leaf][rad < np.percentile(rad, 25)].mean() + 0.05


def test_all_leaves_says_no_trunk_and_uses_the_lowest():
    t = wind_shapes.make_vegetation("quad", "hover")
    keep = t["kind"] == 3
    remap = np.full(len(keep), -1)
    remap[keep] = np.arange(keep.sum())
    faces = remap[t["faces"][keep[t["faces"]].all(1)]]
    p = t["positions"][keep]
    res = wind.bake_wind_data(p, wind_shapes.faces_to_edges(faces))
    assert any(w.startswith("No trunk found") for w in res.warnings)
    assert not res.trunk_found
    lowest = np.argmin(p[:, 2])
    assert res.kind[lowest] == wind.LABEL_TRUNK
    assert "no trunk" in wind.levels_text(res)


def test_multi_stem_bush_has_no_trunk():
    """Several comparable stems on the ground (the largest less than 1.5x the next): no trunk, every stem is a stem
    with its B growing from its own root and its own G, leaves with their stem's G; said in the Info line, not
    warned about. Relative to the asset: the same at 100x the size."""
    bush = wind_shapes.make_bush()
    for scale in (1.0, 100.0):
        res = wind.bake_wind_data(bush["positions"] * scale, bush["edges"])
        assert res.multi_stem and not res.trunk_found and res.n_stems == 4
        assert res.warnings == []
        assert wind.levels_text(res).startswith("no trunk, 4 stems") and "lowest island" not in wind.levels_text(res)
        assert not np.any(res.kind == wind.LABEL_TRUNK)
        stem_g = []
        for s in range(4):
            stem = (bush["kind"] == 2) & (bush["branch_id"] == s)
            root = stem & (bush["along"] == 0.0)
            assert np.all(res.branch[root] == 0.0) and res.branch[stem].max() > 0.5  # none is rigid
            (g,) = np.unique(res.phase[bush["branch_id"] == s])  # the stem and its leaves
            stem_g.append(round(float(g), 5))
        assert len(set(stem_g)) == 4
    # two comparable blades and nothing else: two stems, nothing hangs
    z = np.linspace(0.0, 1.0, 4)
    blade = np.array([[x, 0.0, zz] for zz in z for x in (-0.05, 0.05)])
    faces = np.array([[a, a + 1, a + 3] for a in range(0, 6, 2)] + [[a, a + 3, a + 2] for a in range(0, 6, 2)])
    two = np.concatenate([blade, blade * (1.0, 1.0, 0.9) + (0.5, 0.0, 0.0)])
    res = wind.bake_wind_data(two, wind_shapes.faces_to_edges(np.concatenate([faces, faces + 8])))
    assert res.multi_stem and res.n_stems == 2 and res.branch.max() == 1.0 and len(np.unique(res.phase)) == 2


def test_a_trunk_that_stands_out_stays_the_trunk():
    """One stem 2x the others (at least 1.5x the next): the trunk, the others stems, as a tree with a bush beside it;
    the tree stays a tree."""
    bush = wind_shapes.make_bush()
    p = bush["positions"].astype(np.float64).copy()
    big = bush["branch_id"] == 0
    root = p[big & (bush["kind"] == 2) & (bush["along"] == 0.0)].mean(0)
    p[big] = root + 2.0 * (p[big] - root)
    res = wind.bake_wind_data(p, bush["edges"])
    assert res.trunk_found and not res.multi_stem and res.n_stems == 3
    assert wind.levels_text(res).startswith("trunk, 3 stems")
    assert np.all(res.branch[big & (bush["kind"] == 2)] == 0.0)
    tree = wind_shapes.make_tree()
    res = wind.bake_wind_data(tree["positions"], tree["edges"])
    assert res.trunk_found and not res.multi_stem and res.n_stems == 0


def test_trunk_off_the_ground_and_far_leaves_are_named():
    t = wind_shapes.make_vegetation("quad", "touch")
    p = t["positions"].copy()
    grass = np.array([[3.0, 3.0, -2.0], [3.2, 3.0, -2.0], [3.2, 3.0, -1.9], [3.0, 3.0, -1.9]])
    far = (t["leaf_id"] >= 0) & (t["leaf_id"] < 4)
    p[far] += np.array([8.0, 0.0, 0.0])
    f = np.concatenate([t["faces"], np.array([[0, 1, 2], [0, 2, 3]]) + len(p)])
    res = wind.bake_wind_data(np.concatenate([p, grass]), wind_shapes.faces_to_edges(f))
    assert any("does not reach the ground" in w for w in res.warnings)
    msg = [w for w in res.warnings if "far from any branch" in w]
    assert msg and msg[0].startswith("5 leaf island(s)")  # the 4 lifted cards and the card on the ground
    assert res.levels == [5, 14]  # the twig that lost its 4 cards is a bare twig end: a leaf


def test_degenerate_results_are_warned_about():
    """Cards straight on a trunk and nothing else: no branch under the foliage, B 0 outside the trunk; the
    warnings name the override that fixes it."""
    v, f, _ = wind_shapes._tube((0, 0, 0), (0, 0, 6), 0.2, 8, 12)
    parts_v, parts_f = [v], [f]
    count = len(v)
    for i in range(24):
        a = 2.4 * i
        out = np.array([np.cos(a), np.sin(a), 0.0])
        base = np.array([0, 0, 1.0 + 0.2 * i]) + 0.2 * out
        cv, cf, _, _ = wind_shapes._card("quad", base, out, np.array([-out[1], out[0], 0.0]), 0.4)
        parts_v.append(cv)
        parts_f.append(cf + count)
        count += len(cv)
    p, faces = np.concatenate(parts_v), np.concatenate(parts_f)
    res = wind.bake_wind_data(p, wind_shapes.faces_to_edges(faces))
    text = " ".join(res.warnings)
    assert "No branch found under the foliage" in text and "EnvFX_Branch" in text
    assert "B is 0 on everything outside the trunk" in text
    assert res.n_leaves == 24 and res.leaf.max() == 1.0


def test_one_island_of_many_vertices_is_quick():
    t = wind_shapes._tube((0, 0, 0), (0, 0, 10), 0.3, 200, 600)
    tri = t[1]
    res = wind.bake_wind_data(t[0], wind_shapes.faces_to_edges(tri))
    assert res.n_islands == 1 and np.all(res.branch == 0.0)
