"""The wind-data bake (see ``core.wind``): islands, trunk, hierarchy, and B, R, G per vertex."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .. import jobs, wind_hierarchy
from .params import (FLAT_HEIGHT, GOLDEN, LABEL_BRANCH, LABEL_LEAF, LABEL_TRUNK, TRUNK_STANDOUT, VERTEX_GROUP_NAMES,
                     WindError, flat_error)


# --- graph helpers ----------------------------------------------------------------------------------------

def connected_components(n: int, edges: np.ndarray) -> np.ndarray:
    """Label of every vertex's component: the smallest vertex index in it (vectorised hook + pointer jump)."""
    labels = np.arange(n, dtype=np.int64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if n == 0 or len(edges) == 0:
        return labels
    a, b = edges[:, 0], edges[:, 1]
    la, lb = a, b  # (every vertex its own label at first)
    while True:
        diff = la != lb
        if not diff.any():
            return labels
        la, lb = la[diff], lb[diff]
        a, b = a[diff], b[diff]
        np.minimum.at(labels, np.maximum(la, lb), np.minimum(la, lb))
        while True:
            nxt = labels[labels]
            if np.array_equal(nxt, labels):
                break
            labels = nxt
        la, lb = labels[a], labels[b]


def _segments(inv: np.ndarray, k: int):
    order = wind_hierarchy.stable_argsort(inv)
    counts = np.bincount(inv, minlength=k)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return order, starts, counts


def _seg_reduce(ufunc, values, order, starts, counts, empty=0.0):
    out = np.full(len(starts), empty, dtype=np.float64)
    nz = counts > 0
    if nz.any():
        out[nz] = ufunc.reduceat(values[order], starts[nz])
    return out


# --- bake -------------------------------------------------------------------------------------------------

@dataclass
class BakeResult:
    height: np.ndarray          # (N,) float32
    branch: np.ndarray          # B (N,) float32
    leaf: np.ndarray            # R (N,) float32
    phase: np.ndarray           # G (N,) float32
    leaf_phase: np.ndarray      # per-leaf phase (CryEngine G) (N,) float32
    kind: np.ndarray            # per vertex 1 trunk, 2 branch, 3 leaf (int8)
    asset_height: float         # metres
    base_z: float
    n_islands: int
    n_leaves: int
    n_branches: int
    warnings: list = field(default_factory=list)
    faceless: np.ndarray | None = None  # (N,) bool: vertices without a face, left out of the structure
    source: np.ndarray | None = None # (N,) int64: whose data each vertex carries (itself, or a faceless one's nearest)
    levels: list = field(default_factory=list)  # branches per hierarchy level (level 1 hangs from the trunk)
    n_stems: int = 0             # other islands standing on the ground with their own roots
    n_far: int = 0               # leaves attached from farther than the tolerance
    trunk_found: bool = True     # False: no trunk (all islands about one size, or several comparable stems)
    multi_stem: bool = False     # several comparable stems on the ground, none the trunk: every one has its root
    island: np.ndarray | None = None # (N,) island of each vertex (of the vertices with faces)
    parent: np.ndarray | None = None # (islands,) the island each hangs from (-1: trunk or stem)


def bake_wind_data(positions: npt.ArrayLike, edges: npt.ArrayLike, labels: npt.ArrayLike | None = None,
                   leaf_fraction: float = 0.2, slices: int = 24, max_samples: int = 8192, seed: int = 0,
                   faced: npt.ArrayLike | None = None) -> BakeResult:
    """Wind data of one asset. ``positions`` (N, 3) world space, ``edges`` (E, 2) vertex indices (the mesh's
    edges), ``labels`` optional (N,) overrides (0 auto, 1 trunk, 2 branch, 3 leaf), ``faced`` optional (N,) bool:
    the vertices that belong to a face (None: every vertex on an edge). Vertices without a face (loose points,
    loose-edge strands) do not take part in the structure: see ``bake_steps``."""
    job = bake_steps(positions, edges, labels, leaf_fraction, slices, max_samples, seed, faced)
    return jobs.finish(job)


def bake_steps(positions: npt.ArrayLike, edges: npt.ArrayLike, labels: npt.ArrayLike | None = None,
               leaf_fraction: float = 0.2, slices: int = 24, max_samples: int = 8192, seed: int = 0,
               faced: npt.ArrayLike | None = None) -> Generator[float, None, BakeResult]:
    """``bake_wind_data`` as a job generator: yields progress fractions, returns the ``BakeResult``.

    Only the vertices with a face (``faced``) make the structure: the base, the height, the islands (through the
    edges between them), the trunk, the branches and the leaves. A vertex without a face (a stray point left by a
    merge, a loose edge, a strand of edges) carries no shape, so it neither becomes the trunk nor moves the base;
    it takes every value (height, B, R, G, leaf phase, kind; the bridge gives it the AO too) of its nearest vertex
    with a face, so it moves with the geometry around it. ``BakeResult.faceless`` marks them (the bridge names
    them in a warning) and ``BakeResult.source`` says whose data each vertex carries."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    n = len(p)
    if n == 0:
        raise WindError("The asset has no vertices: select meshes with geometry")
    if not np.all(np.isfinite(p)):
        raise WindError("The asset has non-finite vertex positions (NaN or inf): fix the mesh first")
    if not 0.0 < leaf_fraction < 1.0:
        raise WindError(f"Leaf size {leaf_fraction} must be between 0 and 1 (fraction of the asset height)")
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise WindError("Edge indices out of range for the given positions")
    labels = np.zeros(n, np.int8) if labels is None else np.asarray(labels, dtype=np.int8).reshape(n)
    if faced is None:
        faced = np.zeros(n, bool)
        faced[edges.reshape(-1)] = True
    else:
        faced = np.asarray(faced, dtype=bool).reshape(n)
    if not faced.any():
        raise WindError("The asset has no faces (points or loose edges only): wind data needs a mesh with faces")
    if faced.all():
        result = yield from _structure_steps(p, edges, labels, leaf_fraction, slices, max_samples, seed)
        result.faceless = np.zeros(n, bool)
        result.source = np.arange(n, dtype=np.int64)
        return result
    idx = np.nonzero(faced)[0]
    remap = np.full(n, -1, np.int64)
    remap[idx] = np.arange(len(idx))
    keep = faced[edges[:, 0]] & faced[edges[:, 1]]
    job = _structure_steps(p[idx], remap[edges[keep]], labels[idx], leaf_fraction, slices, max_samples, seed)
    sub = yield from jobs.within(job, 0.0, 0.95)
    loose = np.nonzero(~faced)[0]
    source = np.arange(n, dtype=np.int64)
    source[loose] = idx[_nearest(p[idx], p[loose], max_samples, seed)]
    at = remap[source]
    for name in ("height", "branch", "leaf", "phase", "leaf_phase", "kind"):
        setattr(sub, name, getattr(sub, name)[at])
    sub.faceless = ~faced
    sub.source = source
    yield 1.0
    return sub


def _nearest(points, queries, max_samples: int, seed: int) -> np.ndarray:
    """Index into ``points`` of the point nearest each of ``queries``: exact (chunked, float64 about the points'
    centre), or among a seeded sample of the points when there are so many queries that the exact search would
    cost more than about 2**29 distances (a mesh full of loose strands)."""
    cand = np.arange(len(points))
    most = max(max_samples, (1 << 29) // max(len(queries), 1))
    if len(cand) > most:
        cand = np.sort(np.random.default_rng(seed).choice(cand, most, replace=False))
    centre = points[cand].mean(axis=0)
    cp = points[cand] - centre
    qp = queries - centre
    cp_sq = (cp * cp).sum(1)
    out = np.empty(len(qp), np.int64)
    chunk = max(1, 4_000_000 // len(cp))
    for i in range(0, len(qp), chunk):  # chunks of queries (memory bound), not a loop over vertices
        d2 = cp_sq[None, :] - 2.0 * (qp[i:i + chunk] @ cp.T)
        out[i:i + chunk] = np.argmin(d2, axis=1)
    return cand[out]


def _structure_steps(p, edges, labels, leaf_fraction, slices, max_samples, seed):
    """The structure of the vertices with faces (see ``bake_steps``): yields progress, returns the ``BakeResult``.

    Islands (connected pieces) make a tree by proximity (``wind_hierarchy.attach_islands``): the trunk is the root
    (without a trunk, each stem is the root of its own tree), every other island hangs from the clearly bigger
    island it touches or comes closest to. Islands nothing hangs from are leaves (whatever their construction); the
    others are branches, by level. B grows along that tree from the trunk (continuous where a piece attaches: it
    starts at its parent's B there), G is one phase per first-level branch with everything hanging from it, R runs
    0..1 over each leaf from where it attaches. The stages below run in this order; each yields nothing itself."""
    n = len(p)
    warnings = []

    z = p[:, 2]
    zmin, zmax = float(z.min()), float(z.max())
    hgt = zmax - zmin
    if hgt <= FLAT_HEIGHT:
        raise flat_error()
    height = ((z - zmin) / hgt).astype(np.float32)
    yield 0.05

    # islands; vertices at one position are one (a card of two unwelded triangles, a double-sided card's twins)
    pairs, groups = wind_hierarchy.position_groups(p)
    comp = connected_components(n, np.concatenate([edges, pairs]))
    # each island numbered by its label (its lowest vertex) in order, as np.unique's inverse would (without a sort)
    is_root = comp == np.arange(n)
    k = int(is_root.sum())
    inv = (np.cumsum(is_root) - 1)[comp]
    order, starts, counts = _segments(inv, k)
    yield 0.15
    lo, size, isl_label, has_trunk, on_ground = _island_boxes(p, labels, inv, k, order, starts, counts, zmin, hgt)
    trunk_isl, trunk_found, multi_stem = _pick_trunk(z, k, inv, lo, size, isl_label, has_trunk, on_ground, zmin,
                                                     hgt, leaf_fraction, warnings)
    if k == 1:
        warnings.append("The asset is a single island: height gradient and B come from the geometry alone "
                        "(no separate leaves); mark leaves with an EnvFX_Leaf vertex group or material if needed")

    # trunk axis and radius per height slice; without a trunk (several comparable stems) every B comes from a
    # stem's root or the hierarchy
    vtrunk = trunk_isl[inv]
    if vtrunk.any():
        centres_z, cx, cy, rad, b_raw, core, outside, sub = _trunk_axis(p, edges, vtrunk, labels, hgt, slices)
    else:
        centres_z, cx, cy, rad = np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1)
        b_raw, core, outside, sub = np.zeros(n), np.zeros(n, bool), np.zeros(n, bool), None
    yield 0.3

    stem_isl, root, ring = _stem_roots(p, z, k, inv, trunk_isl, on_ground, size, isl_label, leaf_fraction, hgt,
                                       b_raw)
    cen, tol, att, parent = _hang_islands(p, edges, inv, k, order, starts, counts, trunk_isl, stem_isl, multi_stem,
                                          seed)
    yield 0.6
    children = np.bincount(parent[parent >= 0], minlength=k)
    hangs = parent >= 0
    leaf_isl = hangs & (((children == 0) & (isl_label != LABEL_BRANCH)) | (isl_label == LABEL_LEAF))
    branch_isl = hangs & ~leaf_isl
    depth = wind_hierarchy.depths(parent)
    vleaf = leaf_isl[inv]

    along = _b_along_hierarchy(p, k, inv, parent, depth, hangs, att, cen, trunk_isl, stem_isl, root, ring,
                               (centres_z, cx, cy, rad), outside, b_raw, groups)
    phase, n_welded = _branch_phases(p, k, inv, parent, depth, hangs, att, trunk_isl, stem_isl, leaf_isl, vtrunk,
                                     outside, sub, b_raw, tol, max_samples, seed)
    yield 0.7

    leaf, leaf_phase, n_leaves, n_far = _leaf_gradients(n, k, inv, leaf_isl, vleaf, along, att, size, tol, warnings)

    bmax = float(b_raw.max())
    branch = b_raw / bmax if bmax > 0 else b_raw
    kind = np.where(vleaf, LABEL_LEAF, np.where(core, LABEL_TRUNK, LABEL_BRANCH)).astype(np.int8)
    levels = []
    for d in range(1, int(depth.max()) + 1 if k else 1):
        levels.append(int((branch_isl & (depth == d)).sum()) + (n_welded if d == 1 else 0))
    if not levels and n_welded:
        levels = [n_welded]
    while levels and levels[-1] == 0:
        levels.pop()
    n_branches = n_welded + int(branch_isl.sum()) + int(stem_isl.sum())
    warnings += _degenerate_warnings(k, n_leaves, n_branches, phase[vleaf], branch[~core], leaf_isl, parent,
                                     trunk_isl)
    yield 1.0
    return BakeResult(
        height=height, branch=branch.astype(np.float32), leaf=leaf.astype(np.float32),
        phase=phase.astype(np.float32), leaf_phase=leaf_phase.astype(np.float32), kind=kind,
        asset_height=hgt, base_z=zmin, n_islands=k, n_leaves=n_leaves, n_branches=n_branches, warnings=warnings,
        levels=levels, n_stems=int(stem_isl.sum()), n_far=n_far, trunk_found=trunk_found, multi_stem=multi_stem,
        island=inv, parent=parent)


def _island_boxes(p, labels, inv, k, order, starts, counts, zmin, hgt):
    """Per island: its bounding box's low corner and diagonal, its strongest override label (trunk aside), whether
    a vertex of it is marked trunk, and whether it stands on the ground."""
    lo = np.stack([_seg_reduce(np.minimum, p[:, i], order, starts, counts) for i in range(3)], 1)
    hi = np.stack([_seg_reduce(np.maximum, p[:, i], order, starts, counts) for i in range(3)], 1)
    size = np.linalg.norm(hi - lo, axis=1)
    isl_label = np.zeros(k, np.int8)
    np.maximum.at(isl_label, inv, np.where(labels == LABEL_TRUNK, 0, labels).astype(np.int8))
    has_trunk = np.zeros(k, bool)
    has_trunk[inv[labels == LABEL_TRUNK]] = True
    on_ground = lo[:, 2] <= zmin + 0.03 * hgt
    return lo, size, isl_label, has_trunk, on_ground


def _pick_trunk(z, k, inv, lo, size, isl_label, has_trunk, on_ground, zmin, hgt, leaf_fraction, warnings):
    """The trunk island (a marked one, the one that stands out, the lowest when none does, or none for a multi-stem
    bush). Returns (trunk islands mask, trunk found, multi stem); raises marked branches' labels in ``isl_label``
    and adds to ``warnings``."""
    trunk_found = True
    multi_stem = False
    if has_trunk.any():
        # one bark material is usually on the trunk and every branch: of the islands marked trunk, the largest
        # standing on the ground (else the largest) is the trunk, the others are branches
        marked = np.where(has_trunk, size, -1.0)
        grounded = np.where(on_ground, marked, -1.0)
        t = int(np.argmax(grounded)) if grounded.max() > 0 else int(np.argmax(marked))
        trunk_isl = np.zeros(k, bool)
        trunk_isl[t] = True
        isl_label[has_trunk & ~trunk_isl] = np.maximum(isl_label[has_trunk & ~trunk_isl], LABEL_BRANCH)
    else:
        trunk_isl = np.zeros(k, bool)
        big = float(size.max())
        blades = on_ground & (size >= leaf_fraction * hgt) & (isl_label != LABEL_LEAF)
        if k >= 3 and big < 1.5 * float(np.median(size)) and blades.sum() >= 2:
            # no island stands out and they stand on the ground at a stem's size: grass (a bed of blades, a clump of
            # reeds); no trunk, every blade a stem with its own root
            multi_stem = True
            trunk_found = False
        elif k >= 3 and big < 1.5 * float(np.median(size)):
            # no island stands out: all leaves (a clump of cards floating, leaves); the lowest one is the trunk
            trunk_found = False
            trunk_isl[inv[int(np.argmin(z))]] = True
            warnings.append(f"No trunk found: the asset's {k} islands are all of about one size (leaves, cards or "
                            f"blades, none at least 1.5x the typical one), so the lowest island is taken as the "
                            f"trunk and everything hangs from it; mark the trunk with an {VERTEX_GROUP_NAMES[0]} "
                            f"vertex group or a material named trunk or bark if it is there")
        else:
            cand = on_ground & (size >= 0.5 * big)
            t = int(np.argmax(np.where(cand, size, -1.0))) if cand.any() else int(np.argmax(size))
            # the trunk stands out from the other stem-sized islands on the ground; when the next one is
            # comparable (a multi-stem bush, a clump of reeds, a flower patch), there is no trunk: all are stems
            stems = on_ground & (size >= leaf_fraction * hgt) & (isl_label != LABEL_LEAF)
            stems[t] = False
            if cand[t] and stems.any() and size[t] < TRUNK_STANDOUT * float(size[stems].max()):
                multi_stem = True
                trunk_found = False
            else:
                trunk_isl[t] = True
            if not on_ground[t]:
                warnings.append(f"The trunk (the largest island) does not reach the ground: it starts "
                                f"{float(lo[t, 2]) - zmin:.3g} m above the asset's lowest point, which is the base "
                                f"of the height gradient; B is 0 on the trunk all the same. Mark the trunk with an "
                                f"{VERTEX_GROUP_NAMES[0]} vertex group if another island is the trunk")
    return trunk_isl, trunk_found, multi_stem


def _stem_roots(p, z, k, inv, trunk_isl, on_ground, size, isl_label, leaf_fraction, hgt, b_raw):
    """Stems: other islands standing on the ground, not small (multi-stem bushes, grass blades): their own roots,
    B (written into ``b_raw``) grows from their lowest vertex so their bases stay put like the trunk's. Returns
    (stem islands mask, each island's root vertex, its root ring's radius)."""
    n = len(p)
    stem_isl = ~trunk_isl & on_ground & (size >= leaf_fraction * hgt) & (isl_label != LABEL_LEAF)
    vstem = stem_isl[inv]
    root = np.full(k, n, np.int64)
    ring = np.zeros(k)
    if vstem.any():
        sv = np.nonzero(vstem)[0]
        si = inv[sv]
        low = np.full(k, np.inf)
        np.minimum.at(low, si, z[sv])
        at_low = z[sv] <= low[si]
        np.minimum.at(root, si[at_low], sv[at_low])
        dist = np.linalg.norm(p[sv] - p[root[si]], axis=1)
        near_root = z[sv] <= low[si] + 0.01 * hgt  # the root's own ring stays put
        np.maximum.at(ring, si[near_root], dist[near_root])
        b_raw[sv] = np.maximum(dist - ring[si], 0.0)
    return stem_isl, root, ring


def _hang_islands(p, edges, inv, k, order, starts, counts, trunk_isl, stem_isl, multi_stem, seed):
    """The hierarchy: every other island hangs from a clearly bigger one nearby (the trunk is bigger than all).
    Returns (island centroids, the attach tolerance, ``wind_hierarchy.attach_islands``' result, parents)."""
    # the size that ranks islands: twice the farthest distance from the centroid (turning a card changes its
    # bounding box, not this)
    cen = np.stack([np.bincount(inv, weights=p[:, i], minlength=k) for i in range(3)], 1) / counts[:, None]
    d = [p[:, i] - cen[:, i][inv] for i in range(3)]  # (a column at a time; np.linalg.norm's sum, in its order)
    rank_size = _seg_reduce(np.maximum, 2.0 * np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]), order, starts, counts)
    rank_size[trunk_isl] = np.inf
    if multi_stem:  # no trunk: the stems stand in for it (bigger than any piece, and equal among themselves)
        rank_size[stem_isl] = np.inf
    is_root = trunk_isl | stem_isl
    lo, hi = wind_hierarchy.bounds(p)
    ext = float((hi - lo).max())
    tol = wind_hierarchy.TOLERANCE * ext
    if k > 1 and not is_root.all():  # (every island a stem: nothing hangs)
        att = wind_hierarchy.attach_islands(p, edges, inv, k, rank_size, tol, seed, order)
    else:
        att = dict(parent=np.full(k, -1), vertex=np.zeros(k, np.int64), pa=np.zeros(k, np.int64),
                   pb=np.zeros(k, np.int64), pt=np.zeros(k), gap=np.full(k, np.inf), near=np.zeros(k, bool))
    parent = np.where(is_root, -1, att["parent"])
    return cen, tol, att, parent


def _b_along_hierarchy(p, k, inv, parent, depth, hangs, att, cen, trunk_isl, stem_isl, root, ring, axis, outside,
                       b_raw, groups=None):
    """B along the hierarchy, level by level: a piece starts at its parent's B where it attaches (written into
    ``b_raw``; ``axis``: the trunk's slice centres, axis x, y and radius; ``groups``: each vertex's position rank,
    ``wind_hierarchy.position_groups``). Returns each vertex's distance from its piece's attached end."""
    n = len(p)
    centres_z, cx, cy, rad = axis
    pa, pb, pt = att["pa"], att["pb"], att["pt"]
    vdepth = depth[inv]
    anchor = p[pa] + pt[:, None] * (p[pb] - p[pa])
    hv = np.nonzero(hangs[inv])[0]
    along = np.zeros(n)  # each hanging piece's distance from its attached end, along the piece
    along[hv], ax_i, end_i = wind_hierarchy.along_card(p, hv, inv[hv], anchor, cen, k,
                                                       None if groups is None else groups[hv])
    length_i = np.zeros(k)
    np.maximum.at(length_i, inv[hv], along[hv])
    # a piece's B is affine along its axis (start + distance from its attached end), so its parent's B at the
    # child's attached end is exact wherever the search met the parent
    x_end = cen + ax_i * end_i[:, None]
    start_b = np.zeros(k)
    for d in range(1, int(depth.max()) + 1 if k else 1):  # a loop over hierarchy levels
        isl = np.nonzero((depth == d) & hangs)[0]
        if not len(isl):
            continue
        par = parent[isl]
        x = x_end[isl]
        on_trunk = trunk_isl[par]
        # on the trunk: 0 on its core; met on a welded branch, that branch's B (the distance out of the trunk's
        # radius) at the child's attached end
        a_, b_ = pa[isl], pb[isl]
        xr = np.hypot(x[:, 0] - np.interp(x[:, 2], centres_z, cx), x[:, 1] - np.interp(x[:, 2], centres_z, cy))
        b_trunk = np.where(outside[a_] | outside[b_], np.maximum(xr - np.interp(x[:, 2], centres_z, rad), 0.0), 0.0)
        b_stem = np.maximum(np.linalg.norm(x - p[np.minimum(root[par], n - 1)], axis=1) - ring[par], 0.0)
        span = np.clip(((x - cen[par]) * ax_i[par]).sum(1) - end_i[par], 0.0, length_i[par])
        b_piece = start_b[par] + span
        start_b[isl] = np.where(on_trunk, b_trunk, np.where(stem_isl[par], b_stem, b_piece))
        v = np.nonzero((vdepth == d) & hangs[inv])[0]
        b_raw[v] = start_b[inv[v]] + along[v]
    return along


def _branch_phases(p, k, inv, parent, depth, hangs, att, trunk_isl, stem_isl, leaf_isl, vtrunk, outside, sub, b_raw,
                   tol, max_samples, seed):
    """G: one phase per first-level branch (a piece welded to the trunk, an island hanging from the trunk or a
    stem), inherited down the hierarchy; a leaf stuck on the trunk's core gets B 0 (in ``b_raw``). Returns (G per
    vertex, the number of branches welded to the trunk)."""
    n = len(p)
    av, pa, pb, pt = att["vertex"], att["pa"], att["pb"], att["pt"]
    phase = np.zeros(n, np.float64)
    n_welded = 0
    if outside.any():
        keys, kinv = np.unique(sub[outside], return_inverse=True)
        n_welded = len(keys)
        phase[outside] = np.mod((kinv + 1) * GOLDEN, 1.0)
    iphase = np.zeros(k)
    first = hangs & (depth == 1) & trunk_isl[np.maximum(parent, 0)]
    inherit = np.zeros(k)
    inherit[first] = np.where(pt[first] < 0.5, phase[pa[first]], phase[pb[first]])
    inherit[first] = np.where(inherit[first] == 0.0, np.maximum(phase[pa[first]], phase[pb[first]]), inherit[first])
    lone = np.nonzero(first & (inherit == 0.0))[0]
    if n_welded and len(lone):
        # attached to the trunk's core beside a welded branch's base: that branch's, when it is within reach
        ov = np.nonzero(outside)[0]
        near_v = ov[_nearest(p[ov], p[av[lone]], max_samples, seed)]
        close = np.linalg.norm(p[near_v] - p[av[lone]], axis=1) <= tol
        inherit[lone[close]] = phase[near_v[close]]
    # a leaf stuck on the trunk's core belongs to the trunk: B 0 and the trunk's phase (it only flutters)
    on_core = first & leaf_isl & (inherit == 0.0)
    b_raw[on_core[inv]] = 0.0
    fresh = (first & (inherit == 0.0) & ~on_core) | stem_isl
    ids = np.nonzero(fresh)[0]
    iphase[ids] = np.mod((n_welded + np.arange(len(ids)) + 1) * GOLDEN, 1.0)
    iphase[first & ~fresh & ~on_core] = inherit[first & ~fresh & ~on_core]
    for d in range(1, int(depth.max()) + 1 if k else 1):  # deeper levels take their parent's phase
        isl = hangs & (depth == d) & ~first
        iphase[isl] = iphase[parent[isl]]
    not_trunk = ~vtrunk
    phase[not_trunk] = iphase[inv[not_trunk]]
    return phase, n_welded


def _leaf_gradients(n, k, inv, leaf_isl, vleaf, along, att, size, tol, warnings):
    """R: 0 where a leaf attaches, 1 at its farthest point, and one phase per leaf (CryEngine G); adds a warning
    for leaves far from everything. Returns (R, leaf phase, number of leaves, number of far leaves)."""
    leaf = np.zeros(n, np.float64)
    leaf_phase = np.zeros(n, np.float64)
    leaf_ids = np.nonzero(leaf_isl)[0]
    n_leaves = len(leaf_ids)
    n_far = 0
    if n_leaves:
        lv = np.nonzero(vleaf)[0]
        li = inv[lv]
        d_att = along[lv]
        dmax = np.zeros(k)
        np.maximum.at(dmax, li, d_att)
        leaf[lv] = np.clip(np.where(dmax[li] > 0, d_att / np.maximum(dmax[li], 1e-12), 0.0), 0.0, 1.0)
        leaf_row = np.zeros(k, np.int64)
        leaf_row[leaf_ids] = np.arange(n_leaves)
        leaf_phase[lv] = np.mod((leaf_row[li] + 1) * GOLDEN, 1.0)
        far = leaf_isl & ~att["near"] & (att["gap"] > np.maximum(2.0 * size, tol))
        n_far = int(far.sum())
        if n_far:
            warnings.append(f"{n_far} leaf island(s) are far from any branch or trunk (up to "
                            f"{float(att['gap'][far].max()):.3g} m, more than {tol:.3g} m): each was attached to "
                            f"its nearest bigger island; mark them with vertex groups or move them onto a branch")
    return leaf, leaf_phase, n_leaves, n_far


def _trunk_axis(p, edges, vtrunk, labels, hgt, slices):
    """The trunk (vertices ``vtrunk``) per height slice: its axis and radius, B as the distance out of that radius,
    its core and the branches welded to it. Returns (slice centres, axis x, axis y, radius, B, core, welded,
    their components)."""
    n = len(p)
    z = p[:, 2]
    tp = p[vtrunk]
    tz0, tz1 = float(tp[:, 2].min()), float(tp[:, 2].max())
    edges_z = np.linspace(tz0, tz1, slices + 1)
    centres_z = 0.5 * (edges_z[:-1] + edges_z[1:])
    sl = np.clip(((tp[:, 2] - tz0) / max(tz1 - tz0, 1e-12) * slices).astype(np.int64), 0, slices - 1)
    # robust axis: a cubic x(z), y(z) fitted to the trunk island's vertices, re-fitted without the vertices
    # far from it (welded branches), its radius per slice from the kept vertices
    zn = (tp[:, 2] - tz0) / max(tz1 - tz0, 1e-12)
    vand = np.vander(zn, 4)
    w = np.ones(len(tp), bool)
    for _ in range(6):
        coef, *_ = np.linalg.lstsq(vand[w], tp[w, :2], rcond=None)
        fit = vand @ coef
        d = np.hypot(tp[:, 0] - fit[:, 0], tp[:, 1] - fit[:, 1])
        r_est = np.median(d[w])
        w_new = d <= 1.5 * r_est + 1e-9 * hgt
        if np.array_equal(w_new, w) or w_new.sum() < 4:
            break
        w = w_new
    cx = np.full(slices, np.nan)
    cy = np.full(slices, np.nan)
    rad = np.full(slices, np.nan)
    fit_c = np.vander((centres_z - tz0) / max(tz1 - tz0, 1e-12), 4) @ coef  # pyright: ignore[reportPossiblyUnboundVariable] -- the loop above runs (6 rounds)
    for s in range(slices):  # a loop over slices, not vertices
        m = (sl == s) & w
        if m.any():
            cx[s], cy[s] = fit_c[s]
            rad[s] = np.percentile(d[m], 70)  # pyright: ignore[reportPossiblyUnboundVariable] -- set by the loop above
    ok = ~np.isnan(cx)
    cx = np.interp(centres_z, centres_z[ok], cx[ok])
    cy = np.interp(centres_z, centres_z[ok], cy[ok])
    rad = np.interp(centres_z, centres_z[ok], rad[ok])
    ax = np.interp(z, centres_z, cx)
    ay = np.interp(z, centres_z, cy)
    ar = np.interp(z, centres_z, rad)
    radial = np.hypot(p[:, 0] - ax, p[:, 1] - ay)
    b_raw = np.maximum(radial - ar, 0.0)
    core = vtrunk & ((radial <= 1.5 * ar + 1e-3 * hgt) | (labels == LABEL_TRUNK))
    b_raw[core] = 0.0
    # pieces of the trunk island outside its core are welded branches only when they reach well out of it (a
    # tapering trunk's top is not a branch)
    outside = vtrunk & ~core
    sub = None
    if outside.any():
        e_out = edges[outside[edges[:, 0]] & outside[edges[:, 1]]] if edges.size else edges
        sub = connected_components(n, e_out)
        reach = np.zeros(n)
        np.maximum.at(reach, sub[outside], b_raw[outside])
        stub = outside & (reach[sub] <= 0.05 * hgt)
        core |= stub
        b_raw[stub] = 0.0
        outside &= ~stub
    return centres_z, cx, cy, rad, b_raw, core, outside, sub




def _degenerate_warnings(k, n_leaves, n_branches, leaf_g, nontrunk_b, leaf_isl, parent, trunk_isl) -> list:
    """Warnings for a result a game cannot use, each saying what was found and which override fixes it."""
    out = []
    if k < 3:
        return out
    if n_leaves >= 2 and n_branches == 0:
        out.append(f"No branch found under the foliage: all {n_leaves} leaves hang from the trunk, so they sway "
                   f"with it, not with branches; mark branches with an EnvFX_Branch vertex group or a material "
                   f"named branch")
    if n_leaves >= 2 and len(leaf_g) and float(np.ptp(leaf_g)) == 0.0:
        out.append(f"All {n_leaves} leaves got the same branch phase (G), so they sway in unison; mark branches "
                   f"with an EnvFX_Branch vertex group or a material named branch")
    if len(nontrunk_b) and float(nontrunk_b.max()) == 0.0:
        out.append("B is 0 on everything outside the trunk, so no branch moves; mark the trunk with an "
                   "EnvFX_Trunk vertex group (or a material named trunk or bark) and branches with EnvFX_Branch")
    return out


def levels_text(result: "BakeResult") -> str:
    """The structure found, for the Info line: trunk, branches per level, leaves."""
    parts = ["trunk" if result.trunk_found else "no trunk" if result.multi_stem else "no trunk (lowest island used)"]
    if result.n_stems:
        parts.append(f"{result.n_stems} stem{'s' if result.n_stems != 1 else ''}")
    for i, count in enumerate(result.levels or []):
        parts.append(f"{count} level-{i + 1} branch{'es' if count != 1 else ''}")
    if not result.levels and not result.n_stems:
        parts.append("0 branches")
    parts.append(f"{result.n_leaves} lea{'ves' if result.n_leaves != 1 else 'f'}")
    return ", ".join(parts)

