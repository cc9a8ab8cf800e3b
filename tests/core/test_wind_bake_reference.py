"""The wind bake's vectorised steps against straightforward references (Python loops over vertices, points,
islands and pairs) on small random assets: the per-island extremes, the position groups, the island join, the
candidate parent points (first point per voxel and island, capped per cell), the search for each island's parent
within the tolerance, the coincident-corner weights of the card axes and the sign of the canonical frame's axes.
The fast paths must give exactly the references' result, so the bake stays what it was when they are tuned."""

import numpy as np
import pytest

from core import wind, wind_hierarchy as wh, wind_shapes


def _asset(seed, card="double"):
    """A small tree of separate pieces (random cards) with a few twins and loose triangles: many islands of a few
    sizes, coincident vertices, long tube edges."""
    t = wind_shapes.make_vegetation(card, "hover", height=4.0, n_branches=3, twigs=2, leaves_per_twig=4,
                                    seed=seed)
    rng = np.random.default_rng(seed)
    p = t["positions"]
    extra = rng.random((30, 3)) * [2.0, 2.0, 4.0] - [1.0, 1.0, 0.0]
    faces = np.concatenate([np.asarray(t["faces"])[:, :3], np.arange(30).reshape(10, 3) + len(p)])
    p = np.concatenate([p, extra])
    edges = np.unique(np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1),
                      axis=0)
    return p, edges


def _islands(p, edges):
    comp = wind.connected_components(len(p), np.concatenate([edges, wh.coincident_pairs(p)]))
    return np.unique(comp, return_inverse=True)[1].reshape(-1)


def _rank_size(p, inv, k):
    cen = np.array([p[inv == i].mean(axis=0) for i in range(k)])
    size = np.array([2.0 * np.linalg.norm(p[inv == i] - cen[i], axis=1).max() for i in range(k)])
    size[np.argmax(size)] = np.inf  # the trunk
    return size


@pytest.mark.parametrize("largest", [False, True])
def test_segment_argext_is_the_first_extreme_of_each_segment(largest):
    rng = np.random.default_rng(1)
    inv = rng.integers(0, 40, 500)
    inv[inv == 7] = 8  # an empty segment
    values = rng.integers(0, 6, 500).astype(float)  # many ties
    got = wh.segment_argext(values, inv, 40, largest)
    for s in range(40):
        members = [i for i in range(500) if inv[i] == s]
        if not members:
            assert got[s] == -1
            continue
        best = members[0]
        for i in members:
            if (values[i] > values[best]) if largest else (values[i] < values[best]):
                best = i
        assert got[s] == best
    order = np.argsort(inv, kind="stable")
    assert np.array_equal(wh.segment_argext(values, inv, 40, largest, order=order), got)


def test_position_groups_pair_and_rank_the_vertices_at_one_position():
    rng = np.random.default_rng(2)
    p = rng.integers(0, 4, (300, 3)).astype(float)  # many vertices share positions
    pairs, gid = wh.position_groups(p)
    keys = [tuple(row) for row in p]
    distinct = sorted(set(keys))
    assert [distinct.index(key) for key in keys] == gid.tolist()
    want = []
    for key in distinct:  # each vertex with the next at its position, in index order
        members = [i for i in range(300) if keys[i] == key]
        want += list(zip(members[:-1], members[1:]))
    assert sorted(map(tuple, pairs.tolist())) == sorted(want)
    assert np.array_equal(wh.coincident_pairs(p), pairs)


def test_connected_components_label_each_vertex_with_its_components_lowest_vertex():
    rng = np.random.default_rng(3)
    n = 400
    edges = rng.integers(0, n, (300, 2))
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b in edges:
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)
    want = [min(j for j in range(n) if find(j) == find(i)) for i in range(n)]
    assert wind.connected_components(n, edges).tolist() == want


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_candidate_points_are_the_first_per_voxel_and_island_capped_per_cell(seed):
    p, edges = _asset(seed)
    p = wh.canonical_frame(p)
    inv = _islands(p, edges)
    k = inv.max() + 1
    rank_size = _rank_size(p, inv, k)
    tol = wh.TOLERANCE * float(np.ptp(p, axis=0).max())
    (pa, pb, pt, pts, pis), (lo, cell, dims, ukeys, ustart, ucount) = wh._candidate_points(p, edges, inv, k,
                                                                                         rank_size, tol)
    # reference: every vertex, then the points along every edge, in that order; the first per (voxel, island)
    step = 0.5 * tol
    points = [(v, v, 0.0) for v in range(len(p))]
    for a, b in edges:
        length = np.linalg.norm(p[b] - p[a])
        if length > step:
            m = int(np.ceil(length / step)) - 1
            points += [(a, b, (r + 1) / (m + 1)) for r in range(m)]
    can_parent = rank_size > wh.BIGGER * rank_size.min()
    low = p.min(axis=0) - tol
    first = {}
    for a, b, t in points:
        if not can_parent[inv[a]]:
            continue
        x = p[a] + t * (p[b] - p[a])
        key = (tuple(np.floor((x - low) / step).astype(int)), inv[a])
        first.setdefault(key, (a, b, t, x))
    # per cell of 2 tol: its ISLANDS_PER_CELL biggest islands (ties: the lower index), CELL_CAP points each, in
    # voxel order
    cells = {}
    for (vox, isl), point in first.items():
        cid = tuple(np.floor((point[3] - low) / (2.0 * tol)).astype(int))
        cells.setdefault(cid, {}).setdefault(isl, []).append((vox, point))
    want = []
    for cid in sorted(cells):
        islands = sorted(cells[cid], key=lambda i: (-min(rank_size[i], 1e30), i))[:wh.ISLANDS_PER_CELL]
        for isl in islands:
            for _vox, (a, b, t, _x) in sorted(cells[cid][isl], key=lambda e: e[0])[:wh.CELL_CAP]:
                want.append((a, b, t, isl))
    got = list(zip(pa.tolist(), pb.tolist(), pt.tolist(), pis.tolist()))
    assert got == [(int(a), int(b), float(t), int(i)) for a, b, t, i in want]
    assert np.array_equal(pts, p[pa] + pt[:, None] * (p[pb] - p[pa]))
    assert ucount.sum() == len(pa) and np.all(np.diff(ukeys) > 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_near_search_is_the_brute_force_one(seed):
    p, edges = _asset(seed)
    p = wh.canonical_frame(p)
    inv = _islands(p, edges)
    k = inv.max() + 1
    rank_size = _rank_size(p, inv, k)
    tol = wh.TOLERANCE * float(np.ptp(p, axis=0).max())
    qv, _ends = wh._unique_queries(p, inv, k)
    cand, grid = wh._candidate_points(p, edges, inv, k, rank_size, tol)
    got = wh._near_search(p, inv, k, rank_size, tol, qv, cand, grid)
    pts, pis = cand[3], cand[4]
    srank = np.unique(rank_size, return_inverse=True)[1].reshape(-1)
    for isl in range(k):
        best, alt = None, None
        for q in qv[inv[qv] == isl]:
            for c in range(len(pts)):
                o = pis[c]
                if o == isl or not rank_size[o] > wh.BIGGER * rank_size[isl]:
                    continue
                d = np.linalg.norm(pts[c] - p[q])
                if d > tol:
                    continue
                if best is None or srank[o] * 2.0 + d / tol < best[0]:
                    best = (srank[o] * 2.0 + d / tol, q, c, d)
                if rank_size[o] >= wh.MUCH_BIGGER * rank_size[isl] and (alt is None or d < alt[2]):
                    alt = (q, c, d)
        if best is not None and alt is not None and rank_size[pis[best[2]]] < wh.MUCH_BIGGER * rank_size[isl]:
            best = (None,) + alt  # a sibling about its own size: the nearest much bigger island instead
        if best is None:
            assert got["p"][isl] == -1
        else:
            assert (got["q"][isl], got["p"][isl]) == (best[1], best[2])
            assert got["d"][isl] == pytest.approx(best[3], rel=1e-12)


@pytest.mark.parametrize("card", ["double", "tris"])
def test_card_axes_count_each_position_once_with_or_without_the_groups(card):
    p, edges = _asset(4, card)
    inv = _islands(p, edges)
    k = inv.max() + 1
    cen = np.array([p[inv == i].mean(axis=0) for i in range(k)])
    anchor = cen + np.random.default_rng(4).normal(size=(k, 3))
    lv = np.nonzero(inv > 0)[0]
    _pairs, groups = wh.position_groups(p)
    slow = wh.along_card(p, lv, inv[lv], anchor, cen, k)
    fast = wh.along_card(p, lv, inv[lv], anchor, cen, k, groups=groups[lv])
    for a, b in zip(slow, fast):
        assert np.array_equal(a, b)


def test_canonical_frame_axes_point_to_the_longer_tail_even_when_about_symmetric():
    rng = np.random.default_rng(5)
    p = rng.normal(size=(2000, 3)) * [3.0, 1.0, 1.0]
    p[:100, 0] += 12.0  # a long tail along +x
    for q in (p, p * [-1.0, 1.0, 1.0]):  # (and mirrored)
        c = q - q.mean(axis=0)
        _, vecs = np.linalg.eigh(c[:, :2].T @ c[:, :2])
        xy = c[:, :2] @ vecs
        want = xy * np.where((xy ** 3).sum(axis=0) < 0, -1.0, 1.0)[None, :]
        assert np.array_equal(wh.canonical_frame(q)[:, :2], want)
    sym = np.concatenate([p, -p])  # third moments about 0: the rounding decides, as x ** 3 summed decides it
    c = sym - sym.mean(axis=0)
    _, vecs = np.linalg.eigh(c[:, :2].T @ c[:, :2])
    xy = c[:, :2] @ vecs
    want = xy * np.where((xy ** 3).sum(axis=0) < 0, -1.0, 1.0)[None, :]
    assert np.array_equal(wh.canonical_frame(sym)[:, :2], want)
