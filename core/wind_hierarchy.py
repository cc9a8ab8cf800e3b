"""Vegetation structure from proximity, pure numpy: which island hangs from which, and the asset's own AO.

Real vegetation is built from separate pieces: branches are tubes that start inside or on their parent without
sharing a vertex with it, leaves are cards (quads, triangle pairs, crossed quads, double-sided twins, strips, small
clumps) touching their twig, hovering a little away from it or sitting at its tip. ``attach_islands`` gives every
island a parent: the clearly bigger island it touches or comes closest to within a tolerance relative to the asset,
and, when none is that close, the nearest clearly bigger island anywhere (the caller names those as far). The result
is a tree of islands (trunk -> branch levels -> leaves) along which B, G and R are laid out.

``ambient_occlusion`` is the alpha channel: occlusion by the rest of the asset through a voxel opacity grid (the
faces' area per voxel), so a card's own back face or its coincident twin (in the card's own voxel) does not darken it
and material transparency plays no part; the ground under the asset's base occludes the rays that reach it.

No Python loop runs over vertices: loops run over query chunks (memory bound), hierarchy levels and ray steps.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BIGGER = 1.15            # a parent is at least this much bigger (bounding-box diagonal) than its child
TOLERANCE = 0.03         # attach distance, as a fraction of the asset's largest extent
CELL_CAP = 6            # candidate points kept per island in a search cell ...
MUCH_BIGGER = 1.5        # ... and of those within reach, the finest unless it is less than this much bigger
ISLANDS_PER_CELL = 4     # ... for the biggest islands in it
QUERIES = 6              # vertices per island that look for a parent
FAR_SAMPLES = 4096       # candidate points for the islands with nothing within reach


def bounds(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) coordinate per axis of (N, 3) ``p``, N > 0: a column at a time (numpy reduces the long
    axis of a row-major (N, 3) array many times slower)."""
    return (np.array([p[:, i].min() for i in range(p.shape[1])]),
            np.array([p[:, i].max() for i in range(p.shape[1])]))


def segment_argext(values: np.ndarray, inv: np.ndarray, k: int, largest: bool = False, order: np.ndarray | None = None
                  ) -> npt.NDArray[np.int64]:
    """Per segment (``inv`` in 0..k-1): the index of its smallest (or largest) value, ties to the lowest index;
    -1 for an empty segment. ``order``: ``np.argsort(inv, kind="stable")`` when the caller has it."""
    v = -values if largest else values
    out = np.full(k, -1, np.int64)
    if not len(v):
        return out
    if order is None:
        order = np.argsort(inv, kind="stable")
    vs = v[order]
    seg = inv[order]
    new = np.ones(len(order), bool)
    new[1:] = seg[1:] != seg[:-1]
    starts = np.nonzero(new)[0]
    ext = np.minimum.reduceat(vs, starts)  # per segment, in the segments' order
    # the segments' members sit in index order (a stable sort), so the first member at the extreme is the lowest
    hit = np.nonzero(vs == np.repeat(ext, np.diff(np.append(starts, len(vs)))))[0]
    first = np.ones(len(hit), bool)
    first[1:] = seg[hit[1:]] != seg[hit[:-1]]
    out[seg[hit[first]]] = order[hit[first]]
    return out


def query_vertices(p: np.ndarray, inv: np.ndarray, k: int, per_island: int = QUERIES,
                   order: np.ndarray | None = None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(M,) vertex indices that look for a parent: per island up to ``per_island`` vertices spread through its
    vertex order (first and last included: a tube's two end rings, a card's corners), plus its two extremes along
    its longest bounding-box axis (where a branch starts and ends); and those ends alone."""
    order = stable_argsort(inv) if order is None else order
    counts = np.bincount(inv, minlength=k)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    take = np.minimum(counts, per_island)
    isl = np.repeat(np.arange(k), take)
    rank = np.arange(len(isl)) - np.repeat(np.cumsum(take) - take, take)
    denom = np.maximum(take - 1, 1)
    pos = np.round(rank * (counts[isl] - 1) / denom[isl]).astype(np.int64)
    picked = order[starts[isl] + pos]
    cols = [np.ascontiguousarray(p[:, i])[order] for i in range(3)]
    lo = np.stack([np.minimum.reduceat(c, starts[counts > 0]) for c in cols], 1)
    hi = np.stack([np.maximum.reduceat(c, starts[counts > 0]) for c in cols], 1)
    axis = np.zeros(k, np.int64)
    axis[counts > 0] = np.argmax(hi - lo, axis=1)
    along = p.reshape(-1)[np.arange(len(p)) * 3 + axis[inv]]
    ends = np.concatenate([segment_argext(along, inv, k, order=order),
                           segment_argext(along, inv, k, largest=True, order=order)])
    ends = ends[ends >= 0]
    return np.unique(np.concatenate([picked, ends])), ends


def _edge_points(p, edges, step, limit=4_000_000, keep=None):
    """Points along the edges longer than ``step`` (so a coarse trunk's long faces are near their points too):
    (edge index, t) per point and its coordinates (three columns); of the edges ``keep`` (a mask, after the limit)
    only, when given."""
    if not len(edges):
        return np.zeros(0, np.int64), np.zeros(0), [np.zeros(0)] * 3
    xa = [p[:, i][edges[:, 0]] for i in range(3)]
    d = [p[:, i][edges[:, 1]] - xa[i] for i in range(3)]
    length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])  # (np.linalg.norm's sum, in its order)
    n_in = np.where(length > step, np.ceil(length / step).astype(np.int64) - 1, 0)
    total = int(n_in.sum())
    if total > limit:  # very fine steps on a huge mesh: coarser, not more memory
        n_in = np.floor(n_in * (limit / total)).astype(np.int64)
    if keep is not None:
        n_in = np.where(keep, n_in, 0)
    idx = np.repeat(np.arange(len(edges)), n_in)
    rank = np.arange(len(idx)) - np.repeat(np.cumsum(n_in) - n_in, n_in)
    t = (rank + 1) / np.repeat(n_in + 1, n_in)
    # a + t (b - a), per column: the per-edge values repeated (as gathering them by edge would give)
    return idx, t, [np.repeat(xa[i], n_in) + t * np.repeat(d[i], n_in) for i in range(3)]


def coincident_pairs(p: np.ndarray, rel: float = 1e-6) -> npt.NDArray[np.int64]:
    """(E, 2) pairs of vertices at one position (to within ``rel`` of the asset's extent): sort-based."""
    return position_groups(p, rel)[0]


def position_groups(p: np.ndarray, rel: float = 1e-6) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Vertices at one position (to within ``rel`` of the asset's extent): (E, 2) pairs of them (each with the
    next at its position) and (N,) the rank of each vertex's position among the distinct positions (one number
    per position)."""
    lo, hi = bounds(p) if len(p) else (np.zeros(3), np.zeros(3))
    ext = float((hi - lo).max())
    if ext <= 0:
        return np.zeros((0, 2), np.int64), np.zeros(len(p), np.int64)
    q = np.round((p - lo) / (rel * ext)).astype(np.int64)
    qmax = bounds(q)[1] + 1
    key = (q[:, 0] * qmax[1] + q[:, 1]) * qmax[2] + q[:, 2]  # under 2**63: at most 1e6 steps per axis
    order = stable_argsort(key)  # the order of a lexsort of the three columns
    ks = key[order]
    same = ks[1:] == ks[:-1]
    gid = np.empty(len(p), np.int64)
    gid[order] = np.concatenate(([0], np.cumsum(~same)))
    return np.stack([order[:-1][same], order[1:][same]], 1), gid


def stable_argsort(values: np.ndarray) -> npt.NDArray[np.intp]:
    """``np.argsort(values, kind="stable")`` of non-negative ints, as 16-bit ones when they fit (numpy sorts
    those by radix, several times faster)."""
    if len(values) and values.dtype.kind in "iu" and values.min() >= 0 and values.max() < 65536:
        values = values.astype(np.uint16)
    return np.argsort(values, kind="stable")


def canonical_frame(p: np.ndarray) -> npt.NDArray[np.floating]:
    """``p`` about its centroid, turned about Z onto the principal axes of its horizontal spread (each axis
    pointing to the side with the longer tail): the same for the asset moved or turned about Z."""
    c = p - p.mean(axis=0)
    cov = c[:, :2].T @ c[:, :2]
    _, vecs = np.linalg.eigh(cov)
    xy = c[:, :2] @ vecs
    # the sign of the third moment per axis: x * x * x is many times faster than x ** 3, and the two sums' signs
    # agree unless the moment is about 0 (a symmetric spread; far beyond their rounding), summed as x ** 3 then
    cube = xy * xy * xy
    skew = cube.sum(axis=0)
    if np.any(np.abs(skew) <= 1e-6 * np.abs(cube).sum(axis=0)):
        skew = (xy ** 3).sum(axis=0)
    xy = xy * np.where(skew < 0, -1.0, 1.0)[None, :]
    out = np.empty_like(c)
    out[:, :2] = xy
    out[:, 2] = c[:, 2]
    return out


def attach_islands(p: np.ndarray, edges: np.ndarray, inv: np.ndarray, k: int, rank_size: np.ndarray, tol: float,
                   seed: int = 0, order: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The parent of every island. ``rank_size`` (k,): the island's size for the "bigger" test (the trunk's is
    inf, so it can be anyone's parent); an island only hangs from one at least ``BIGGER`` times its size (crossed
    quads and double-sided twins never hang from each other; ``order``: ``np.argsort(inv, kind="stable")`` when the
    caller has it). Returns a dict of (k,) arrays: ``parent`` (-1: none
    bigger exists), ``vertex`` (the island's own vertex where it attaches), ``pa``/``pb``/``pt`` (the parent point:
    between vertices pa and pb at t), ``gap`` (distance, inf without parent), ``near`` (found within ``tol``).

    In stages: the query vertices, the candidate parent points in a grid of cells, the search within ``tol``,
    the search farther for the islands left without a parent, and the result."""
    p = canonical_frame(p)  # the search grid follows the asset, so the result does not depend on its placement
    qv, ends_v = _unique_queries(p, inv, k, order)
    cand, grid = _candidate_points(p, edges, inv, k, rank_size, tol)
    best = _near_search(p, inv, k, rank_size, tol, qv, cand, grid)
    near = best["p"] >= 0
    _far_search(p, inv, rank_size, seed, qv, ends_v, cand, best)
    return _attachments(inv, k, cand, best, near)


def _unique_queries(p, inv, k, order=None):
    """The query vertices of every island, one per position of an island (a double-sided card's twins look
    once), and the islands' end vertices."""
    qv, ends_v = query_vertices(p, inv, k, order=order)
    lo, hi = bounds(p)
    ext = max(float((hi - lo).max()), 1e-12)
    q = np.round((p[qv] - lo) / (1e-6 * ext)).astype(np.int64)
    qmax = bounds(q)[1] + 1
    pkey = (q[:, 0] * qmax[1] + q[:, 1]) * qmax[2] + q[:, 2]  # under 2**63: at most 1e6 steps per axis
    o = np.lexsort((inv[qv], pkey))
    once = np.ones(len(o), bool)
    once[1:] = (pkey[o[1:]] != pkey[o[:-1]]) | (inv[qv][o[1:]] != inv[qv][o[:-1]])
    return qv[np.sort(o[once])], ends_v


def _candidate_points(p, edges, inv, k, rank_size, tol):
    """Candidate parent points: the vertices and points along long edges, one per (half-tolerance voxel, island),
    of the islands something can hang from, kept per cell of ``2 tol`` for its ``ISLANDS_PER_CELL`` biggest
    islands (up to ``CELL_CAP`` points each). Returns (pa, pb, pt, points, islands) sorted by cell, and the grid
    (low corner, cell size, dims, cell keys, their starts and counts)."""
    # islands nothing can hang from (no island is clearly smaller) are no candidates
    smallest = rank_size.min()
    can_parent = rank_size > BIGGER * smallest
    vk = np.nonzero(can_parent[inv])[0]
    eidx, et, ecols = _edge_points(p, edges, 0.5 * tol, keep=can_parent[inv[edges[:, 0]]] if len(edges) else None)
    nv = len(vk)
    # the points' coordinates a column at a time (a vertex is its own point: p + 0 * (p - p)): the vertices, then
    # the points along the edges
    cols = [np.concatenate([p[:, i][vk], ecols[i]]) for i in range(3)]
    del ecols
    pis = np.concatenate([inv[vk], inv[edges[eidx, 0]]]) if len(edges) else inv[vk]
    lo, hi = bounds(p)
    lo = lo - tol
    # (each coordinate is at least tol above lo: truncation is the floor)
    vox = [((cols[i] - lo[i]) / (0.5 * tol)).astype(np.int64) for i in range(3)]
    vdim = [int(v.max()) + 1 if len(v) else 1 for v in vox]
    key = ((vox[0] * vdim[1] + vox[1]) * vdim[2] + vox[2]) * k + pis
    del vox
    # the first point of each (voxel, island): a point with its predecessor's key is never one (a cheap cut of
    # the runs along tubes), then the first of each key among the rest
    run = np.ones(len(key), bool)
    run[1:] = key[1:] != key[:-1]
    rest = np.nonzero(run)[0]
    _, first = np.unique(key[rest], return_index=True)
    first = rest[first]
    on_edge = first >= nv
    fe = eidx[first[on_edge] - nv]
    pa = np.where(on_edge, 0, vk[np.minimum(first, nv - 1)] if nv else 0)
    pb = pa.copy()
    pt = np.zeros(len(first))
    pa[on_edge], pb[on_edge], pt[on_edge] = edges[fe, 0], edges[fe, 1], et[first[on_edge] - nv]
    pis = pis[first]
    pts = np.stack([c[first] for c in cols], 1)

    cell = 2.0 * tol
    dims = np.floor((hi + 2 * tol - lo) / cell).astype(np.int64) + 2
    cid = np.floor((pts - lo) / cell).astype(np.int64)
    ckey = (cid[:, 0] * dims[1] + cid[:, 1]) * dims[2] + cid[:, 2]
    # per cell: the points of its ISLANDS_PER_CELL biggest islands, up to CELL_CAP points each
    order = np.lexsort((pis, -np.minimum(rank_size[pis], 1e30), ckey))
    ckey_s = ckey[order]
    pis_s = pis[order]
    idx = np.arange(len(order))
    newc = np.ones(len(order), bool)
    newc[1:] = ckey_s[1:] != ckey_s[:-1]
    newg = newc.copy()
    newg[1:] |= pis_s[1:] != pis_s[:-1]
    cstart = np.maximum.accumulate(np.where(newc, idx, 0))
    gstart = np.maximum.accumulate(np.where(newg, idx, 0))
    gnum = np.cumsum(newg)
    grank = gnum - gnum[cstart]
    kept = (grank < ISLANDS_PER_CELL) & ((idx - gstart) < CELL_CAP)
    order = order[kept]
    ckey_s = ckey_s[kept]
    pa, pb, pt, pts, pis = pa[order], pb[order], pt[order], pts[order], pis[order]
    ukeys, ustart, ucount = np.unique(ckey_s, return_index=True, return_counts=True)
    return (pa, pb, pt, pts, pis), (lo, cell, dims, ukeys, ustart, ucount)


def _near_search(p, inv, k, rank_size, tol, qv, cand, grid):
    """Per island, within ``tol`` of its query vertices: the finest clearly bigger island's nearest candidate
    point, or the nearest much bigger one's when the finest is about the island's own size (a sibling). Returns a
    dict of (k,) arrays: ``d`` (distance), ``q`` (query vertex), ``p`` (candidate point; -1: none found)."""
    _pa, _pb, _pt, pts, pis = cand
    lo, cell, dims, ukeys, ustart, ucount = grid
    qi = inv[qv]
    best_d = np.full(k, np.inf)
    best_key = np.full(k, np.inf)
    srank = np.unique(rank_size, return_inverse=True)[1].reshape(-1).astype(np.float64)  # equal sizes, equal rank
    alt_d = np.full(k, np.inf)
    alt_q = np.full(k, -1, np.int64)
    alt_p = np.full(k, -1, np.int64)
    best_q = np.full(k, -1, np.int64)
    best_p = np.full(k, -1, np.int64)
    # the 8 cells of the octant around each query cover every point within tol along each axis
    qp = p[qv]
    g = (qp - lo) / cell
    base = np.floor(g).astype(np.int64)
    side = np.where(g - base >= 0.5, 1, -1)
    # per candidate point: its coordinates a column at a time, its island's size and rank
    pcol = [np.ascontiguousarray(pts[:, i]) for i in range(3)]
    qcol = [np.ascontiguousarray(qp[:, i]) for i in range(3)]
    c_size = rank_size[pis]
    c_rank = srank[pis]
    tol2 = tol * tol * (1.0 + 1e-9)  # a cut before the square root; the exact test is on the distance
    # per cell, the box of its points: a query farther than tol from it has nothing within reach there
    box_lo = [np.minimum.reduceat(pc, ustart) if len(ukeys) else pc[:0] for pc in pcol]
    box_hi = [np.maximum.reduceat(pc, ustart) if len(ukeys) else pc[:0] for pc in pcol]
    chunk = 60_000
    for s in range(0, len(qv), chunk):  # chunks of queries (memory bound)
        sl = slice(s, s + chunk)
        for corner in range(8):
            off = np.array([(corner >> 0) & 1, (corner >> 1) & 1, (corner >> 2) & 1])
            c = base[sl] + off[None, :] * side[sl]
            ck = (c[:, 0] * dims[1] + c[:, 1]) * dims[2] + c[:, 2]
            at = np.searchsorted(ukeys, ck)
            at = np.minimum(at, len(ukeys) - 1) if len(ukeys) else at
            found = (len(ukeys) > 0) & (ukeys[at] == ck) if len(ukeys) else np.zeros(len(ck), bool)
            qidx = np.nonzero(found)[0]
            cat = at[qidx]
            gap2 = np.zeros(len(qidx))
            for qc, blo, bhi in zip(qcol, box_lo, box_hi):
                x = qc[qidx + s]
                gap = np.maximum(np.maximum(blo[cat] - x, x - bhi[cat]), 0.0)
                gap2 += gap * gap
            reach = gap2 <= tol2 * (1.0 + 1e-6)
            qidx, cat = qidx[reach], cat[reach]
            cnt = ucount[cat]
            rq = np.repeat(qidx, cnt)
            rp = np.repeat(ustart[cat], cnt) + (np.arange(len(rq)) - np.repeat(np.cumsum(cnt) - cnt, cnt))
            gq = rq + s
            dx, dy, dz = (pc[rp] - qc[gq] for pc, qc in zip(pcol, qcol))
            d2 = dx * dx + dy * dy + dz * dz  # (np.linalg.norm's sum, in its order)
            close = d2 <= tol2
            gq, rp = gq[close], rp[close]
            d = np.sqrt(d2[close])
            own = qi[gq]
            close = (d <= tol) & (c_size[rp] > BIGGER * rank_size[own]) & (pis[rp] != own)
            gq, rp, d, own = gq[close], rp[close], d[close], own[close]
            if not len(d):
                continue
            # of the islands within reach, the finest (a leaf touching its twig and near the branch is the
            # twig's), at its nearest point: one key per pair, the least per island (no sort of the pairs)
            key = c_rank[rp] * 2.0 + d / tol
            np.minimum.at(best_key, own, key)
            win = key == best_key[own]
            best_q[own[win]] = qv[gq[win]]
            best_p[own[win]] = rp[win]
            best_d[own[win]] = d[win]
            # and the nearest of the much bigger ones (used when the finest is about the island's own size: a
            # sibling branch starting beside it, not its parent)
            big = c_size[rp] >= MUCH_BIGGER * rank_size[own]
            if big.any():
                ob, db = own[big], d[big]
                np.minimum.at(alt_d, ob, db)
                win = db == alt_d[ob]
                alt_q[ob[win]] = qv[gq[big][win]]
                alt_p[ob[win]] = rp[big][win]
    sibling = (best_p >= 0) & (alt_p >= 0)
    sibling[sibling] = rank_size[pis[best_p[sibling]]] < MUCH_BIGGER * rank_size[sibling]
    best_p[sibling], best_q[sibling], best_d[sibling] = alt_p[sibling], alt_q[sibling], alt_d[sibling]
    return dict(d=best_d, q=best_q, p=best_p)


def _far_search(p, inv, rank_size, seed, qv, ends_v, cand, best):
    """Far islands (updating ``best`` in place): the nearest clearly bigger island anywhere (a seeded sample of
    the candidate points), then, for islands that have no clearly bigger one, any bigger island (a plain vertex,
    stored as ``-2 - vertex``)."""
    _pa, _pb, _pt, pts, pis = cand
    best_d, best_q, best_p = best["d"], best["q"], best["p"]
    qi = inv[qv]
    qp = p[qv]
    for factor in (BIGGER, 1.0):
        todo = (best_p == -1) & (rank_size < np.inf)
        todo_q = todo[qi]
        if not todo_q.any():
            break
        # at BIGGER the search points serve; at 1.0 the plain vertices (the points hold only possible parents)
        cand_pts, cand_isl = (pts, pis) if factor != 1.0 else (p, inv)
        cidx = np.arange(len(cand_pts))
        if len(cidx) > FAR_SAMPLES:
            cidx = np.sort(np.random.default_rng(seed).choice(cidx, FAR_SAMPLES, replace=False))
        cp = cand_pts[cidx].astype(np.float32)
        cp_sq = (cp * cp).sum(1)
        cs = rank_size[cand_isl[cidx]]
        # per far island, its two end vertices look (not all its query vertices)
        tq = np.nonzero(todo_q & np.isin(qv, ends_v))[0]
        step = max(1, 4_000_000 // max(len(cidx), 1))
        for s in range(0, len(tq), step):
            qq = tq[s:s + step]
            own = qi[qq]
            q32 = qp[qq].astype(np.float32)
            d2 = np.maximum(cp_sq[None, :] - 2.0 * (q32 @ cp.T) + (q32 * q32).sum(1)[:, None], 0.0)
            bad = (cs[None, :] <= factor * rank_size[own][:, None]) | (cand_isl[cidx][None, :] == own[:, None])
            if factor == 1.0:  # equal sizes: the lower island index is the bigger (a strict order, no cycles)
                eq = cs[None, :] == rank_size[own][:, None]
                bad &= ~(eq & (cand_isl[cidx][None, :] < own[:, None]))
            d2[bad] = np.inf
            j = np.argmin(d2, axis=1)
            dj = np.sqrt(d2[np.arange(len(qq)), j])
            o = np.lexsort((dj, own))
            fst = np.ones(len(o), bool)
            fst[1:] = own[o[1:]] != own[o[:-1]]
            o = o[fst & np.isfinite(dj[o])]
            better = dj[o] < best_d[own[o]]
            o = o[better]
            best_d[own[o]] = dj[o]
            best_q[own[o]] = qv[qq[o]]
            # a search point, or (-2 - vertex) for a plain vertex
            best_p[own[o]] = cidx[j[o]] if factor != 1.0 else -2 - cidx[j[o]]


def _attachments(inv, k, cand, best, near):
    """The result of ``attach_islands`` from the best point found per island."""
    pa, pb, pt, _pts, pis = cand
    best_d, best_q, best_p = best["d"], best["q"], best["p"]
    parent = np.full(k, -1, np.int64)
    vtx = np.where(best_q >= 0, best_q, -1)
    ra = np.zeros(k, np.int64)
    rb = np.zeros(k, np.int64)
    rt = np.zeros(k)
    on_pts = best_p >= 0
    parent[on_pts] = pis[best_p[on_pts]]
    ra[on_pts], rb[on_pts], rt[on_pts] = pa[best_p[on_pts]], pb[best_p[on_pts]], pt[best_p[on_pts]]
    on_v = best_p <= -2
    v = -2 - best_p[on_v]
    parent[on_v] = inv[v]
    ra[on_v], rb[on_v] = v, v
    return dict(parent=parent, vertex=vtx, pa=ra, pb=rb, pt=rt, gap=best_d, near=near)


def along_card(p: np.ndarray, lv: np.ndarray, li: np.ndarray, anchor: np.ndarray, cen: np.ndarray, k: int,
               groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distance of each leaf vertex ``lv`` (island ``li``) from the end of its leaf that is nearer ``anchor``
    (k, 3: the point of the parent it hangs from), measured along that of the leaf's two main axes that is closer
    to the way from the anchor to the leaf's centre: a card's whole attached edge is 0, its far end the largest,
    whichever of its vertices happens to be nearest the twig. 0 or more. Also returns per island the axis (k, 3)
    and the attached end's offset along it from the centre (k,): the piece's distance at any point x is
    ``(x - centre) . axis - end``. ``groups``: ``position_groups``' rank of each of ``lv``'s positions (of the
    asset ``p`` with rel 1e-6), when the caller has it."""
    if not len(lv):
        return np.zeros(0), np.zeros((k, 3)), np.zeros(k)
    c = p[lv] - cen[li]
    # each position counts once (a double-sided card's twins, the shared corners of two triangles)
    if groups is None:
        lo, hi = bounds(p)
        ext = max(float((hi - lo).max()), 1e-12)
        q = np.round((p[lv] - lo) / (1e-6 * ext)).astype(np.int64)
        qmax = bounds(q)[1] + 1
        qkey = (q[:, 0] * qmax[1] + q[:, 1]) * qmax[2] + q[:, 2]  # under 2**63: at most 1e6 steps per axis
        _, qinv, qcount = np.unique(qkey, return_inverse=True, return_counts=True)
        wgt = 1.0 / qcount[qinv.reshape(-1)]
    else:
        wgt = 1.0 / np.bincount(groups)[groups]
    cov = np.zeros((k, 3, 3))
    for i in range(3):  # 3x3 segment sums, not a loop over vertices
        for j in range(i, 3):
            cov[:, i, j] = cov[:, j, i] = np.bincount(li, weights=wgt * c[:, i] * c[:, j], minlength=k)
    _, vecs = np.linalg.eigh(cov)
    to_c = cen - anchor
    norm = np.linalg.norm(to_c, axis=1)
    u = to_c / np.maximum(norm, 1e-12)[:, None]
    d1 = (vecs[:, :, 2] * u).sum(1)
    d2 = (vecs[:, :, 1] * u).sum(1)
    pick2 = np.abs(d2) > np.abs(d1)
    axis = np.where(pick2[:, None], vecs[:, :, 1], vecs[:, :, 2])
    dot = np.where(pick2, d2, d1)
    axis = axis * np.where(dot < 0, -1.0, 1.0)[:, None]
    proj = (c * axis[li]).sum(1)
    end = _seg_min(proj, li, k)
    return proj - end[li], axis, end


def _seg_min(values, seg, k):
    out = np.full(k, np.inf)
    np.minimum.at(out, seg, values)
    return np.where(np.isfinite(out), out, 0.0)


def depths(parent: np.ndarray) -> npt.NDArray[np.int_]:
    """Depth of each island in the parent forest (roots 0), one level per pass (a loop over levels)."""
    k = len(parent)
    # a level sweep (levels are few): depth[c] = depth[parent[c]] + 1
    depth = np.where(parent >= 0, -1, 0)
    for _ in range(k + 1):
        todo = depth < 0
        if not todo.any():
            break
        ready = todo & (depth[np.maximum(parent, 0)] >= 0)
        if not ready.any():  # a cycle cannot happen (parents are strictly bigger); guard anyway
            depth[todo] = 1
            break
        depth[ready] = depth[parent[ready]] + 1
    return depth


def fibonacci_sphere(count: int) -> npt.NDArray[np.float64]:
    i = np.arange(count) + 0.5
    z = 1.0 - 2.0 * i / count
    r = np.sqrt(np.maximum(0.0, 1.0 - z * z))
    a = np.pi * (1.0 + 5.0 ** 0.5) * i
    return np.stack([r * np.cos(a), r * np.sin(a), z], 1)


def ambient_occlusion(p: npt.ArrayLike, triangles: npt.ArrayLike, directions: int = 32, resolution: int = 40,
                      seed: int = 0, max_samples: int = 3_000_000, density: float = 0.15) -> npt.NDArray[np.float32]:
    """(N,) float32 AO in 0..1 (1 open) of every vertex, from the asset alone: rays in ``directions`` directions
    (sky ones weigh more, so foliage on top is brighter than under it) march an opacity grid of ``resolution``
    voxels along the asset's largest extent, skipping the point's own voxel (its card's back face, its twin);
    a ray that leaves through the asset's base is stopped by the ground. ``density``: the opacity per unit of face
    area per voxel face (a voxel whose faces' area equals its face's stops that share of a ray, about); low, as
    foliage cards are mostly cut out by their alpha, which is not read: the material does not decide the AO."""
    p = np.asarray(p, np.float64).reshape(-1, 3)
    tri = np.asarray(triangles, np.int64).reshape(-1, 3)
    n = len(p)
    if n == 0 or len(tri) == 0:
        return np.ones(n, np.float32)
    lo, hi = p.min(axis=0), p.max(axis=0)
    ext = float((hi - lo).max())
    if ext <= 0:
        return np.ones(n, np.float32)
    vs = ext / resolution
    lo = lo - vs
    dims = np.floor((hi + vs - lo) / vs).astype(np.int64) + 1
    # area per voxel: each triangle spread over points, about one per voxel it covers
    a, b, c = p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    per = np.clip(np.ceil(area / (vs * vs)).astype(np.int64), 1, 64)
    if per.sum() > max_samples:
        per = np.maximum(1, (per * (max_samples / per.sum())).astype(np.int64))
    idx = np.repeat(np.arange(len(tri)), per)
    rng = np.random.default_rng(seed)
    u, v = rng.random(len(idx)), rng.random(len(idx))
    flip = u + v > 1
    u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
    sp = a[idx] + u[:, None] * (b[idx] - a[idx]) + v[:, None] * (c[idx] - a[idx])
    cell = np.clip(np.floor((sp - lo) / vs).astype(np.int64), 0, dims - 1)
    flat = (cell[:, 0] * dims[1] + cell[:, 1]) * dims[2] + cell[:, 2]
    dens = np.bincount(flat, weights=(area / per)[idx], minlength=int(np.prod(dims)))
    alpha = (1.0 - np.exp(-density * dens / (vs * vs))).astype(np.float32)

    dirs = fibonacci_sphere(directions)
    weight = 1.0 + 0.6 * dirs[:, 2]
    weight = weight / weight.sum()
    # AO at the corners of each vertex's voxel cell (trilinear between them)
    g = (p - lo) / vs - 0.5
    g0 = np.floor(g).astype(np.int64)
    frac = g - g0
    corners = np.array([[(i >> 0) & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)])
    allc = (g0[:, None, :] + corners[None, :, :]).reshape(-1, 3)
    allc = np.clip(allc, 0, dims - 1)
    ckey = (allc[:, 0] * dims[1] + allc[:, 1]) * dims[2] + allc[:, 2]
    uk, cinv = np.unique(ckey, return_inverse=True)
    ci = np.stack([uk // (dims[1] * dims[2]), (uk // dims[2]) % dims[1], uk % dims[2]], 1)
    start = (ci + 0.5) * vs + lo
    steps = int(np.ceil(np.sqrt(3.0) * dims.max())) + 1
    vis = np.zeros(len(uk), np.float64)
    chunk = max(1, 2_000_000 // steps)
    ground = p[:, 2].min()
    for s in range(0, len(uk), chunk):  # chunks of grid points (memory bound)
        st = start[s:s + chunk]
        own = uk[s:s + chunk]
        acc = np.zeros(len(st))
        for d, w in zip(dirs, weight):  # a loop over directions and steps, vectorised over points
            trans = np.ones(len(st), np.float32)
            alive = np.ones(len(st), bool)
            for j in range(1, steps):
                q = st + (j * vs) * d
                cc = np.floor((q - lo) / vs).astype(np.int64)
                inside = np.all((cc >= 0) & (cc < dims), axis=1)
                below = q[:, 2] < ground
                trans[alive & below] = 0.0
                alive &= inside & ~below
                if not alive.any():
                    break
                kk = (cc[:, 0] * dims[1] + cc[:, 1]) * dims[2] + cc[:, 2]
                kk = np.where(alive, kk, 0)
                hit = np.where(alive & (kk != own), alpha[kk], 0.0)
                trans *= 1.0 - hit
            acc += w * trans
        vis[s:s + chunk] = acc
    vc = vis[cinv].reshape(n, 8)
    wx = np.where(corners[None, :, 0] == 1, frac[:, 0:1], 1 - frac[:, 0:1])
    wy = np.where(corners[None, :, 1] == 1, frac[:, 1:2], 1 - frac[:, 1:2])
    wz = np.where(corners[None, :, 2] == 1, frac[:, 2:3], 1 - frac[:, 2:3])
    out = (vc * wx * wy * wz).sum(1)
    return np.clip(out, 0.0, 1.0).astype(np.float32)
