"""Wind data from an armature: trunk, branch depth and phases from the bones, leaves by weight."""

import numpy as np
import pytest

from core import wind
from core.wind import armature as arm


def skeleton():
    """A trunk of two bones, two first-level branches (one with a child twig) and a root lying flat."""
    heads = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 2], [0, 0, 2], [0, 0, 3], [1, 0, 3]], float)
    tails = np.array([[0, 1, 0], [0, 0, 2], [0, 0, 4], [1, 0, 3], [-1, 0, 4], [2, 0, 3.5]], float)
    # bone 3 and 4 leave the trunk at 45 degrees: branches, not the trunk going on
    parents = np.array([-1, 0, 1, 2, 2, 3])
    return heads, tails, parents


def test_bone_tree_trunk_levels_and_phases():
    tree = arm.bone_tree(*skeleton())
    assert list(tree.trunk) == [True, True, True, False, False, False]
    assert list(tree.depth[~tree.trunk]) == [1, 1, 2]
    assert tree.first[3] != tree.first[4] and tree.first[5] == tree.first[3]
    assert tree.phase[3] != tree.phase[4] and tree.phase[5] == tree.phase[3]
    assert tree.phase[3] == pytest.approx(wind.GOLDEN % 1.0)
    # the twig starts where it leaves its branch (the branch's tail, sqrt 2 m along)
    assert tree.b_head[5] == pytest.approx(np.sqrt(2.0))


def _points_along(h, t, k=5):
    s = np.linspace(0.0, 1.0, k)[:, None]
    return h + s * (t - h)


def test_b_grows_along_every_chain_and_one_g_per_first_level_branch():
    heads, tails, parents = skeleton()
    pts, owner = [], []
    for j in range(len(heads)):
        pts.append(_points_along(heads[j], tails[j]))
        owner += [j] * 5
    pts = np.concatenate(pts)
    owner = np.array(owner)
    w = np.zeros((len(pts), len(heads)), np.float32)
    w[np.arange(len(pts)), owner] = 1.0
    out = arm.armature_wind(pts, heads, tails, parents, w)
    trunk = np.isin(owner, [0, 1, 2])
    assert np.all(out.branch[trunk] == 0.0) and np.all(out.phase[trunk] == 0.0)
    assert out.branch.max() == pytest.approx(1.0)
    for j in (3, 4, 5):
        assert np.all(np.diff(out.branch[owner == j]) > 0)
    # the twig continues its branch
    assert out.branch[owner == 5].min() >= out.branch[owner == 3].max() - 1e-6
    assert len({float(out.phase[owner == 3][0]), float(out.phase[owner == 4][0])}) == 2
    assert np.all(out.phase[owner == 5] == out.phase[owner == 3][0])
    assert out.levels == [2, 1] and out.n_trunk == 3


def test_unweighted_vertices_take_the_nearest_bone_and_weights_blend():
    heads, tails, parents = skeleton()
    pts = np.array([[1.9, 0.05, 3.45], [0.5, 0, 3.0]])
    w = np.zeros((2, 6), np.float32)
    w[1, 3] = 0.5
    w[1, 2] = 0.5
    out = arm.armature_wind(pts, heads, tails, parents, w)
    assert not out.weighted[0] and out.weighted[1]
    assert out.phase[0] == out.phase[1]  # the leaf near the twig: the twig's branch's phase
    # half on the trunk (B 0), half on the branch at 1.5 / sqrt 2 m along it; the farthest point is the loose one,
    # on the twig (which starts sqrt 2 m out) 1.125 / sqrt 1.25 m along it
    far = np.sqrt(2.0) + 1.125 / np.sqrt(1.25)
    assert out.branch[0] == pytest.approx(1.0)
    assert out.branch[1] == pytest.approx(0.5 * 1.5 / np.sqrt(2.0) / far, rel=1e-5)


def test_bad_input():
    heads, tails, parents = skeleton()
    with pytest.raises(wind.WindError, match="No vertex is weighted"):
        arm.armature_wind(np.zeros((3, 3)), heads, tails, parents, np.zeros((3, 6)))
    with pytest.raises(wind.WindError, match="loop"):
        arm.bone_tree(heads[:2], tails[:2], [1, 0])
    with pytest.raises(wind.WindError, match="no bones"):
        arm.bone_tree(np.zeros((0, 3)), np.zeros((0, 3)), [])


def test_with_armature_replaces_b_and_g_only():
    from core import wind_shapes
    tree = wind_shapes.make_tree()
    res = wind.bake_wind_data(tree["positions"], tree["edges"])
    n = len(res.height)
    fake = arm.ArmatureWind(branch=np.linspace(0, 1, n, dtype=np.float32), phase=np.full(n, 0.3, np.float32),
                            weighted=np.ones(n, bool), bones=arm.bone_tree(*skeleton()), levels=[2, 1], n_trunk=3)
    out = arm.with_armature(res, fake)
    assert np.array_equal(out.height, res.height) and np.array_equal(out.leaf, res.leaf)
    assert np.array_equal(out.branch, fake.branch) and np.all(out.phase == np.float32(0.3))
    assert out.levels == [2, 1]


def test_influences_read_in_batches_give_what_dense_weights_give():
    heads, tails, parents = skeleton()
    rng = np.random.default_rng(5)
    pts = rng.uniform(-1, 2, (300, 3)) + np.array([0, 0, 2.0])
    w = rng.random((300, 6)).astype(np.float32) * (rng.random((300, 6)) < 0.5)
    dense = arm.armature_wind(pts, heads, tails, parents, w)
    idx, ww = arm.top_influences(w[:, :3], k=4)
    idx2, ww2 = arm.top_influences(w[:, 3:], k=4)
    merged = arm.merge_influences(idx, ww, idx2 + 3, ww2, k=6)
    sparse = arm.armature_wind(pts, heads, tails, parents, influences=merged)
    assert np.allclose(dense.branch, sparse.branch, atol=1e-6) and np.array_equal(dense.phase, sparse.phase)
    # keeping the top 2 of each vertex keeps its two heaviest weights
    i2, w2 = arm.merge_influences(idx, ww, idx2 + 3, ww2, k=2)
    assert np.allclose(np.sort(w2, 1), np.sort(w, 1)[:, -2:])
