"""Vegetation wind (Horizon Zero Dawn talk), pure numpy: the wind-data bake and the live-wind reference.

Bake (``bake_wind_data``), per vertex of an asset made of one or more objects, in world space (Z up):

- height  0 at the asset's base, 1 at its top (whole-asset bend);
- B       distance from the trunk along the branch structure, normalised over the asset (branch motion);
- R       distance from the point where a leaf island attaches to its branch, normalised per leaf (flutter);
- G       a stable per-branch index in 0..1 (phase offset, so branches do not move in unison);
- A       ambient occlusion by the asset itself (``wind_hierarchy.ambient_occlusion``, called by the bridge).

Structure, from the vertices that belong to a face only (a vertex without one, such as a stray point or a
loose-edge strand, takes the data of its nearest vertex with a face): islands (connected components of the edge
graph, vertices at one position joined); the trunk is the largest island standing on the ground (or the islands
marked trunk; with all islands of about one size, none is found and the lowest is used) when it is at least
``TRUNK_STANDOUT`` times the next stem-sized island on the ground; else (a multi-stem bush) there is no trunk and all
of those are stems with their own roots (``BakeResult.multi_stem``); the trunk's axis and radius per
height slice split off branches welded to it. Every other island hangs from the finest clearly bigger island within
a tolerance relative to the asset (``wind_hierarchy.attach_islands``), giving trunk -> branch levels -> leaves
(islands nothing hangs from); other islands standing on the ground and not small are stems with their own roots.
B grows along that hierarchy from the trunk, G is one phase per first-level branch, R runs over each leaf from the
end that hangs from its parent. Overrides (vertex groups / material slots, resolved by the bridge) label vertices
trunk / branch / leaf.

Live wind (``wind_offsets``): the reference the geometry-nodes group "EnvFX Wind" must match to 1e-4. The
talk's motions are summed as a swing (``wind_swing``) that ``keep_lengths`` turns into motion along arcs about
each vertex's attach point, so plants bend and never stretch at any strength (GPU Gems 3 ch. 16). All
periodic terms are sines of ``2 pi f t + phase`` (the grass wobble a parabolic sine); per-vertex phases are
static, so each per-vertex sine is split into per-vertex factors baked once (``live_attributes``) times
per-asset sines and cosines (``live_terms``). With a loop length every frequency is rounded to a whole
number of cycles per loop, so frame ``s`` and ``s + loop`` are identical. Gusts are a sum of three sines in time
and space (sampled at the asset's origin); the spring response per category is the exact steady-state response
of a critically damped spring (natural frequency ``f0``) to each gust sine: gain ``f0^2 / (f0^2 + f^2)`` and
phase lag ``2 atan(f / f0)``. That is a closed form in time, so any frame can be evaluated on its own (scrub,
render farm, loop) and a gust rises and settles instead of snapping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import wind_hierarchy

# --- constants shared with shader_nodes/wind.py ----------------------------------------------------------

CATEGORIES = ("TREE", "PLANT", "GRASS", "SPECIAL")
# spring natural frequency (Hz) and branch oscillation frequency (Hz) per category
SPRING_HZ = {"TREE": 0.35, "PLANT": 0.8, "GRASS": 1.5, "SPECIAL": 0.6}
BRANCH_HZ = {"TREE": 0.45, "PLANT": 0.9, "GRASS": 1.3, "SPECIAL": 1.1}

GUST_AMPS = (0.6, 0.3, 0.1)
GUST_MULTS = (1.0, 2.13, 3.71)
GUST_PHASES = (0.0, 1.7, 4.1)
GUST_WAVES = ((0.11, 0.07), (-0.05, 0.13), (0.17, -0.09))  # rad per metre of the asset's origin (x, y)

MAIN_SCALE = 0.08      # whole-asset bend at the top per unit of wind, in asset heights
BRANCH_SCALE = 0.06    # branch motion at B = 1 per unit of wind, in asset heights
MICRO_SCALE = 0.006    # leaf flutter at R = 1 per unit of wind, in asset heights
MICRO_HZ = (2.5, 3.25, 1.925)  # leaf flutter frequency per object axis
MICRO_PHASES = (0.0, 2.1, 4.2)  # and its phase per object axis (rad)
MICRO_WAVES = ((3.1, 1.3, 0.7), (-1.1, 2.9, 1.7), (0.9, -2.3, 3.3))  # rad per metre, object space
# Hidden per-vertex attributes the live wind reads (written from EnvFX_Wind, EnvFX_Height and the rest positions
# by ``live_attributes`` when wind is added or re-baked): reading plain floats is nearly free in geometry
# nodes, while separating a colour attribute or evaluating per-vertex waves costs more than the whole wind.
# Pivot is a vector (from the vertex's attach point to it), the others floats.
LIVE_ATTRS = (".EnvFX_Wind_B", ".EnvFX_Wind_Bc", ".EnvFX_Wind_Bs", ".EnvFX_Wind_Rc", ".EnvFX_Wind_Rs",
              ".EnvFX_Wind_H", ".EnvFX_Wind_Pivot", ".EnvFX_Wind_Carry")
LIVE_VECTORS = (".EnvFX_Wind_Pivot",)
PIVOT_B = 1e-4         # a piece's attach point: its vertices within this of its lowest B; when those span more
PIVOT_H = 0.05         # than this of the asset's height (a trunk: B is 0 all along it), the lowest of them
PIVOT_BASE = 0.01      # (within this); a piece whose attach point is within PIVOT_H of the base stands on the ground
BRANCH_MULTS = (1.0, 1.37, 0.83)
BRANCH_PHASES = (0.0, 1.0, 2.0)
AMBIENT_HZ = 0.3       # grass figure-eight
# grass ambient motion per unit of effective wind, in asset heights: the write-up's ambient motion "accounts for
# about 80% of the total animation" (80% of the animated motion of a GRASS-preset clump in the default wind)
AMBIENT_SCALE = 0.125
WOBBLE_HZ = 1.7
WOBBLE_SCALE = 0.0375
WOBBLE_WAVE = (2.0, 2.0, 0.0)
OBJECT_PHASE = (0.37, 0.59)
TILT_SCALE = 0.15      # grass tilt at the top, in asset heights, for a camera looking straight down
TERRAIN_RAY = 100.0    # terrain rays start this far above each vertex (object units)

MAX_AO_SAMPLES = 4096  # Cycles AO samples of a bake (scene.envfx.wind.ao_samples, the CLI's --ao-samples): 0 = no AO
LAYOUTS = ("HZD", "CRYENGINE", "CUSTOM")
SOURCES = ("LEAF", "BRANCH_PHASE", "BRANCH", "AO", "HEIGHT", "LEAF_PHASE", "ZERO", "ONE")
HZD_LAYOUT = ("LEAF", "BRANCH_PHASE", "BRANCH", "AO")
CRYENGINE_LAYOUT = ("LEAF", "LEAF_PHASE", "BRANCH", "AO")

# per-asset presets for common asset types (object.envfx.wind values)
PRESETS = {
    "TREE": dict(category="TREE", rigidity=1.0, bend=1.0, sway=1.0, lift=0.5, micro=1.0, ramp=0.0, main_bend=True),
    "BUSH": dict(category="PLANT", rigidity=1.5, bend=1.2, sway=1.0, lift=0.6, micro=1.2, ramp=1.0, main_bend=False),
    "GRASS": dict(category="GRASS", rigidity=1.0, bend=1.5, sway=0.5, lift=0.2, micro=0.5, ramp=2.0, main_bend=True),
    "BANNER": dict(category="SPECIAL", rigidity=0.5, bend=2.0, sway=2.0, lift=1.5, micro=2.0, ramp=1.0,
                   main_bend=False),
}

LABEL_AUTO, LABEL_TRUNK, LABEL_BRANCH, LABEL_LEAF = 0, 1, 2, 3
GOLDEN = 0.6180339887498949


class WindError(ValueError):
    """Invalid input for the wind bake or the live wind; the message says what is wrong and what to do."""


FLAT_HEIGHT = 1e-9  # an asset whose vertices with faces span no more than this along world Z is flat
TRUNK_STANDOUT = 1.5  # the largest island on the ground is the trunk only when at least this much bigger (bounding-
                      # box diagonal) than the next stem-sized one; else they are all stems (a multi-stem bush)


def flat_error(names=()) -> WindError:
    """The refusal of a flat asset; ``names``: its objects, so that the one to fix is found in a batch."""
    what = f"The asset {', '.join(names)}" if names else "The asset"
    return WindError(f"{what} is flat (no height along world Z): wind data needs an upright asset; if it was "
                     f"imported lying down, rotate it upright first")


# --- graph helpers ----------------------------------------------------------------------------------------

def connected_components(n: int, edges: np.ndarray) -> np.ndarray:
    """Label of every vertex's component: the smallest vertex index in it (vectorised hook + pointer jump)."""
    labels = np.arange(n, dtype=np.int64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if n == 0 or len(edges) == 0:
        return labels
    a, b = edges[:, 0], edges[:, 1]
    while True:
        la, lb = labels[a], labels[b]
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


def _segments(inv: np.ndarray, k: int):
    order = np.argsort(inv, kind="stable")
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
    faceless: np.ndarray = None  # (N,) bool: vertices without a face, left out of the structure
    source: np.ndarray = None    # (N,) int64: whose data each vertex carries (itself, or a faceless one's nearest)
    levels: list = field(default_factory=list)  # branches per hierarchy level (level 1 hangs from the trunk)
    n_stems: int = 0             # other islands standing on the ground with their own roots
    n_far: int = 0               # leaves attached from farther than the tolerance
    trunk_found: bool = True     # False: no trunk (all islands about one size, or several comparable stems)
    multi_stem: bool = False     # several comparable stems on the ground, none the trunk: every one has its root
    island: np.ndarray = None    # (N,) island of each vertex (of the vertices with faces)
    parent: np.ndarray = None    # (islands,) the island each hangs from (-1: trunk or stem)


def bake_wind_data(positions, edges, labels=None, leaf_fraction: float = 0.2, slices: int = 24,
                   max_samples: int = 8192, seed: int = 0, faced=None) -> BakeResult:
    """Wind data of one asset. ``positions`` (N, 3) world space, ``edges`` (E, 2) vertex indices (the mesh's
    edges), ``labels`` optional (N,) overrides (0 auto, 1 trunk, 2 branch, 3 leaf), ``faced`` optional (N,) bool:
    the vertices that belong to a face (None: every vertex on an edge). Vertices without a face (loose points,
    loose-edge strands) do not take part in the structure: see ``bake_steps``."""
    job = bake_steps(positions, edges, labels, leaf_fraction, slices, max_samples, seed, faced)
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value


def bake_steps(positions, edges, labels=None, leaf_fraction: float = 0.2, slices: int = 24,
               max_samples: int = 8192, seed: int = 0, faced=None):
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
    while True:
        try:
            f = next(job)
        except StopIteration as stop:
            sub = stop.value
            break
        yield 0.95 * f
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
    0..1 over each leaf from where it attaches."""
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
    comp = connected_components(n, np.concatenate([edges, wind_hierarchy.coincident_pairs(p)]))
    roots, inv = np.unique(comp, return_inverse=True)
    k = len(roots)
    order, starts, counts = _segments(inv, k)
    yield 0.15
    lo = np.stack([_seg_reduce(np.minimum, p[:, i], order, starts, counts) for i in range(3)], 1)
    hi = np.stack([_seg_reduce(np.maximum, p[:, i], order, starts, counts) for i in range(3)], 1)
    size = np.linalg.norm(hi - lo, axis=1)
    isl_label = np.zeros(k, np.int8)
    np.maximum.at(isl_label, inv, np.where(labels == LABEL_TRUNK, 0, labels).astype(np.int8))
    has_trunk = np.zeros(k, bool)
    has_trunk[inv[labels == LABEL_TRUNK]] = True
    on_ground = lo[:, 2] <= zmin + 0.03 * hgt

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
        if k >= 3 and big < 1.5 * float(np.median(size)):
            # no island stands out: all leaves (a clump of cards, a bed of blades); the lowest one is the trunk
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

    # stems: other islands standing on the ground, not small (multi-stem bushes, grass blades): their own roots,
    # B grows from their lowest vertex so their bases stay put like the trunk's
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

    # the hierarchy: every other island hangs from a clearly bigger one nearby (the trunk is bigger than all)
    # the size that ranks islands: twice the farthest distance from the centroid (turning a card changes its
    # bounding box, not this)
    cen = np.stack([np.bincount(inv, weights=p[:, i], minlength=k) for i in range(3)], 1) / counts[:, None]
    rank_size = np.zeros(k)
    np.maximum.at(rank_size, inv, 2.0 * np.linalg.norm(p - cen[inv], axis=1))
    rank_size[trunk_isl] = np.inf
    if multi_stem:  # no trunk: the stems stand in for it (bigger than any piece, and equal among themselves)
        rank_size[stem_isl] = np.inf
    is_root = trunk_isl | stem_isl
    ext = float((p.max(axis=0) - p.min(axis=0)).max())
    tol = wind_hierarchy.TOLERANCE * ext
    if k > 1 and not is_root.all():  # (every island a stem: nothing hangs)
        att = wind_hierarchy.attach_islands(p, edges, inv, k, rank_size, tol, seed)
    else:
        att = dict(parent=np.full(k, -1), vertex=np.zeros(k, np.int64), pa=np.zeros(k, np.int64),
                   pb=np.zeros(k, np.int64), pt=np.zeros(k), gap=np.full(k, np.inf), near=np.zeros(k, bool))
    parent = np.where(is_root, -1, att["parent"])
    yield 0.6
    children = np.bincount(parent[parent >= 0], minlength=k)
    hangs = parent >= 0
    leaf_isl = hangs & (((children == 0) & (isl_label != LABEL_BRANCH)) | (isl_label == LABEL_LEAF))
    branch_isl = hangs & ~leaf_isl
    depth = wind_hierarchy.depths(parent)
    vleaf = leaf_isl[inv]

    # B along the hierarchy, level by level: a piece starts at its parent's B where it attaches
    av, pa, pb, pt = att["vertex"], att["pa"], att["pb"], att["pt"]
    vdepth = depth[inv]
    anchor = p[pa] + pt[:, None] * (p[pb] - p[pa])
    hv = np.nonzero(hangs[inv])[0]
    along = np.zeros(n)  # each hanging piece's distance from its attached end, along the piece
    along[hv], ax_i, end_i = wind_hierarchy.along_card(p, hv, inv[hv], anchor, cen, k)
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

    # G: one phase per first-level branch (a piece welded to the trunk, an island hanging from the trunk or a stem)
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
    yield 0.7

    # R: 0 where a leaf attaches, 1 at its farthest point
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
    fit_c = np.vander((centres_z - tz0) / max(tz1 - tz0, 1e-12), 4) @ coef
    for s in range(slices):  # a loop over slices, not vertices
        m = (sl == s) & w
        if m.any():
            cx[s], cy[s] = fit_c[s]
            rad[s] = np.percentile(d[m], 70)
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


VERTEX_GROUP_NAMES = ("EnvFX_Trunk", "EnvFX_Branch", "EnvFX_Leaf")


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


def pack_channels(result: BakeResult, ao=None, layout: str = "HZD", custom=None) -> np.ndarray:
    """(N, 4) float32 RGBA in an export layout: HZD (R leaf, G branch phase, B branch, A AO), CRYENGINE
    (R edge stiffness = leaf, G per-leaf phase, B overall stiffness = branch, A AO) or CUSTOM (four names
    from ``SOURCES``)."""
    n = len(result.height)
    ao = np.ones(n, np.float32) if ao is None else np.asarray(ao, np.float32).reshape(n)
    if layout == "HZD":
        names = HZD_LAYOUT
    elif layout == "CRYENGINE":
        names = CRYENGINE_LAYOUT
    elif layout == "CUSTOM":
        names = tuple(custom or ())
        if len(names) != 4 or any(s not in SOURCES for s in names):
            raise WindError(f"Custom channel mapping {names!r} needs four of {', '.join(SOURCES)}")
    else:
        raise WindError(f"Unknown channel layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    src = {
        "LEAF": result.leaf, "BRANCH_PHASE": result.phase, "BRANCH": result.branch, "AO": ao,
        "HEIGHT": result.height, "LEAF_PHASE": result.leaf_phase,
        "ZERO": np.zeros(n, np.float32), "ONE": np.ones(n, np.float32),
    }
    return np.stack([src[s] for s in names], axis=1).astype(np.float32)


# --- live wind --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SceneWind:
    direction: tuple = (1.0, 0.0, 0.0)   # world wind direction (made horizontal and unit here)
    strength: float = 1.0
    gust_strength: float = 0.5
    gust_frequency: float = 0.2         # Hz
    loop_frames: int = 0                # 0: no loop
    fps: float = 24.0
    ambient: float = 1.0                # grass ambient motion, times the wind at the clump (0 = off)
    grass_tilt: float = 0.5             # grass leans away from a camera that looks down
    fade_start: float = 40.0            # grass animation and size fade from here (m from the camera) ...
    fade_end: float = 80.0              # ... to nothing here; fade_end <= fade_start: no fade


@dataclass(frozen=True)
class AssetWind:
    category: str = "TREE"
    rigidity: float = 1.0
    bend: float = 1.0
    sway: float = 1.0
    lift: float = 1.0
    micro: float = 1.0
    ramp: float = 0.0
    main_bend: bool = True
    asset_height: float = 1.0


def quantize(freq, loop_frames: int, fps: float):
    """Frequency (Hz) rounded to a whole number (at least 1) of cycles per loop, when a loop is set."""
    if loop_frames <= 0:
        return freq
    period = loop_frames / fps
    # floor(x + 0.5): rounds halves up like the Math node's Round (np.round rounds halves to even)
    return np.maximum(np.floor(np.asarray(freq, np.float64) * period + 0.5), 1.0) / period


def loop_time(frame: float, scene: SceneWind) -> float:
    """Time (s) of ``frame``; with a loop, of the frame wrapped into the loop first (``frame mod loop_frames``,
    floored, as the node group does: every quantised frequency makes whole cycles per loop, so the angles are the
    same, and the group's float32 keeps them exact at any frame number)."""
    if scene.loop_frames > 0:
        frame = frame - scene.loop_frames * math.floor(frame / scene.loop_frames)
    return frame / scene.fps


def wave(turns):
    """A parabolic sine (period 1, peaks +-1 at 1/4 and 3/4, C1-continuous), ``8 w (1 - 2|w|)`` with
    ``w = turns - floor(turns + 0.5)``: the grass wobble's per-vertex wave (cheaper than a true sine per vertex)."""
    x = np.asarray(turns, np.float64)
    w = x - np.floor(x + 0.5)
    return 8.0 * w * (1.0 - 2.0 * np.abs(w))


def horizontal_dir(direction) -> np.ndarray:
    d = np.array([direction[0], direction[1], 0.0], np.float64)
    length = np.linalg.norm(d)
    return d / length if length > 1e-12 else np.zeros(3)


def gust(t: float, origin, scene: SceneWind, category: str) -> float:
    """Spring-filtered gust signal at time ``t`` (s) for an asset at world ``origin``."""
    f0 = SPRING_HZ[category]
    total = 0.0
    for amp, mult, ph, wave in zip(GUST_AMPS, GUST_MULTS, GUST_PHASES, GUST_WAVES):
        f = float(quantize(scene.gust_frequency * mult, scene.loop_frames, scene.fps))
        gain = f0 * f0 / (f0 * f0 + f * f)
        lag = 2.0 * math.atan(f / f0)
        arg = 2 * math.pi * f * t + wave[0] * origin[0] + wave[1] * origin[1] + ph - lag
        total += amp * gain * math.sin(arg)
    return total


def effective_wind(t: float, origin, scene: SceneWind, asset: AssetWind) -> float:
    w = max(0.0, scene.strength * (1.0 + scene.gust_strength * gust(t, origin, scene, asset.category)))
    k = asset.ramp
    return w * (1.0 + k) / (1.0 + k * w)


def grass_fade(camera_matrix, origin, scene: SceneWind) -> float:
    """1 near the camera, falling to 0 between ``fade_start`` and ``fade_end`` (always 1 without a camera or
    with ``fade_end <= fade_start``)."""
    if camera_matrix is None or scene.fade_end <= scene.fade_start:
        return 1.0
    dist = float(np.linalg.norm(np.asarray(camera_matrix, np.float64)[:3, 3] - np.asarray(origin)))
    return float(np.clip((scene.fade_end - dist) / (scene.fade_end - scene.fade_start), 0.0, 1.0))


def live_attributes(positions, height, wind_color) -> dict:
    """The static per-vertex part of the live wind, float32 arrays keyed by ``LIVE_ATTRS`` ((N, 3) for
    ``LIVE_VECTORS``, (N,) for the others), from the object space rest ``positions``, ``EnvFX_Height`` and
    ``EnvFX_Wind`` RGBA.

    Every periodic per-vertex term of the live wind is ``amplitude * sin(a(t) + phase)`` with a per-vertex static
    phase, split as ``sin a(t) * amplitude cos phase + cos a(t) * amplitude sin phase``: the per-vertex factors
    are baked here once, so a frame costs a few multiply-adds per vertex against per-asset single values.

    The pivots keep lengths (``keep_lengths``). The vertices sharing a G (a branch with its leaves, a stem, the
    trunk with the leaves on it) hang from one attach point ``A``: a piece that reaches the ground with more than
    leaves (within ``PIVOT_BASE`` of the asset's base: the trunk, a stem, a grass blade) stands on the mean of its
    lowest vertices (within ``PIVOT_BASE``); another hangs from the mean of its vertices with the lowest B (within
    ``PIVOT_B``; when they span more than ``PIVOT_H`` of the height, the lowest of them): where a branch leaves the
    trunk. ``Ba`` = B - the lowest B of the piece is the branch's lever. A piece on the ground (or attached within
    ``PIVOT_H`` of it) bends with the whole asset about ``A``; one attached
    higher (a branch) is carried whole by the asset's bend at ``A``'s height ``hA`` and moves about ``A`` only by
    its branch motion and flutter (a bend that grows with height inside a branch would shear it near ``A``).
    Computed per mesh: a branch whose leaves are in another object swings those leaves about their own lowest
    point.

    - branch phase ``phi = 2 pi G`` (per branch): ``Ba``, ``Ba cos phi``, ``Ba sin phi``;
    - leaf flutter phase ``psi = 2 pi G + p.W0 + sin(p.W1) + sin(p.W2)`` (a smooth 3D field through object space,
      ``W`` = ``MICRO_WAVES``): ``R cos psi``, ``R sin psi``;
    - H: the height the whole-asset bend reads, ``h - hA`` on the ground pieces, 0 on branches; Pivot ``p - A``;
      Carry: ``hA`` of a branch, 0 on the ground pieces."""
    p = np.asarray(positions, np.float64).reshape(-1, 3)
    h = np.asarray(height, np.float64).reshape(-1)
    col = np.asarray(wind_color, np.float64).reshape(-1, 4)
    r_leaf, g_phase, b_branch = col[:, 0], col[:, 1], col[:, 2]
    waves = np.asarray(MICRO_WAVES, np.float64)
    phi = 2.0 * math.pi * g_phase
    psi = phi + p @ waves[0] + np.sin(p @ waves[1]) + np.sin(p @ waves[2])
    n = len(p)
    if n:
        _keys, inv = np.unique(col[:, 1].astype(np.float32), return_inverse=True)
        inv = inv.reshape(-1)
        k = int(inv.max()) + 1
        b_low = np.full(k, np.inf)
        np.minimum.at(b_low, inv, b_branch)
        low = b_branch <= b_low[inv] + PIVOT_B
        h_low = np.full(k, np.inf)
        np.minimum.at(h_low, inv[low], h[low])
        h_high = np.full(k, -np.inf)
        np.maximum.at(h_high, inv[low], h[low])
        solid = r_leaf <= 0.0  # (not on a leaf: a leaf hanging down to the ground does not stand on it)
        h_min = np.full(k, np.inf)
        np.minimum.at(h_min, inv[solid], h[solid])
        # a piece reaching the ground (the trunk, a stem, a blade, also one whose lowest B is higher up) stands on
        # its lowest part; another hangs from its lowest B: all of those points when they are compact (a ring where
        # a branch leaves the trunk), else their lowest
        ground = h_min <= PIVOT_BASE
        compact = h_high - h_low <= PIVOT_H
        at = np.where(ground[inv], h <= h_min[inv] + PIVOT_BASE,
                      low & (compact[inv] | (h <= h_low[inv] + PIVOT_BASE)))
        count = np.bincount(inv[at], minlength=k)
        pivot = np.stack([np.bincount(inv[at], weights=p[at, i], minlength=k) for i in range(3)], 1) / count[:, None]
        # the height of A: a hanging ring's mean (it turns about its middle); on the ground the lowest (hA = 0 at
        # a trunk's base ring exactly, so the base never moves)
        h_pivot = np.where(ground, h_min, np.where(compact, np.bincount(inv[at], weights=h[at], minlength=k) / count,
                                                   h_low))
        lever = b_branch - b_low[inv]
        ha = h_pivot[inv]
        rel = p - pivot[inv]
        grounded = (ground | (h_pivot <= PIVOT_H))[inv]  # they bend with the asset; branches are carried
    else:
        lever = ha = np.zeros(0)
        rel = np.zeros((0, 3))
        grounded = np.zeros(0, bool)
    values = (lever, lever * np.cos(phi), lever * np.sin(phi), r_leaf * np.cos(psi), r_leaf * np.sin(psi),
              np.where(grounded, h - ha, 0.0), rel, np.where(grounded, 0.0, ha))
    return {name: v.astype(np.float32) for name, v in zip(LIVE_ATTRS, values)}


@dataclass(frozen=True)
class LiveTerms:
    """The per-asset single values of one frame of the live wind (what the node group computes once per object).
    Object space swing per vertex (``wind_swing``): ``(Ba bend + H^2 main) dir + Bac vc + Bas vs + Rc mc + Rs ms``
    with the per-vertex ``LIVE_ATTRS``; ``world_extra`` (grass) is added times ``H`` in world space. ``ambient``
    (grass): the amplitude factor of the ambient motion,
    ``scene.ambient * wind * asset_height`` with ``wind`` the effective wind at the asset's origin
    (``effective_wind``)."""
    main: float
    bend: float
    dir: np.ndarray
    vc: np.ndarray
    vs: np.ndarray
    mc: np.ndarray
    ms: np.ndarray
    world_extra: np.ndarray
    fade: float
    ambient: float


def live_terms(matrix_world, frame: float, scene: SceneWind, asset: AssetWind, camera_matrix=None) -> LiveTerms:
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    origin = m[:3, 3]
    t = loop_time(frame, scene)
    d = horizontal_dir(scene.direction)
    across = np.array([-d[1], d[0], 0.0])
    up = np.array([0.0, 0.0, 1.0])
    eff = effective_wind(t, origin, scene, asset)
    k = eff * asset.asset_height / asset.rigidity
    two_pi = 2 * math.pi
    inv3 = np.linalg.inv(m[:3, :3])

    main = (1.0 if asset.main_bend else 0.0) * k * MAIN_SCALE
    bend = asset.bend * k * BRANCH_SCALE
    # branch oscillations sin(2 pi f_i t + ph_i + phi): along the wind (bend), across it (sway), up (lift)
    fb = [float(quantize(BRANCH_HZ[asset.category] * mult, scene.loop_frames, scene.fps)) for mult in BRANCH_MULTS]
    arg = [two_pi * f * t + ph for f, ph in zip(fb, BRANCH_PHASES)]
    amps = [0.3 * bend, 0.5 * asset.sway * k * BRANCH_SCALE, 0.4 * asset.lift * k * BRANCH_SCALE]
    dirs = [d, across, up]
    vc = sum(a * math.sin(x) * v for a, x, v in zip(amps, arg, dirs))
    vs = sum(a * math.cos(x) * v for a, x, v in zip(amps, arg, dirs))
    # leaf flutter per object axis: sin(2 pi f_j t + ph_j + psi)
    mamp = asset.micro * k * MICRO_SCALE
    fm = [float(quantize(f, scene.loop_frames, scene.fps)) for f in MICRO_HZ]
    marg = [two_pi * f * t + ph for f, ph in zip(fm, MICRO_PHASES)]
    mc = mamp * np.sin(marg)
    ms = mamp * np.cos(marg)

    extra = np.zeros(3)  # grass: per-asset figure-eight and camera tilt, times h (world)
    # grass ambient motion (figure-eight and wobble), driven by the wind the grass samples (the write-up: "driven by
    # the length of the force field"): after the asset's ramp, like the base motion, so the two keep their ratio
    # at every strength and the ramp shapes the whole grass motion; still air leaves the grass still
    ambient = scene.ambient * eff * asset.asset_height
    if asset.category == "GRASS":
        fa = float(quantize(AMBIENT_HZ, scene.loop_frames, scene.fps))
        fa2 = float(quantize(2 * AMBIENT_HZ, scene.loop_frames, scene.fps))
        po = OBJECT_PHASE[0] * origin[0] + OBJECT_PHASE[1] * origin[1]
        aamp = ambient * AMBIENT_SCALE
        extra += np.array([aamp * math.sin(two_pi * fa * t + po),
                           aamp * 0.5 * math.sin(two_pi * fa2 * t + 2 * po), 0.0])
    fade = 1.0
    if asset.category == "GRASS" and camera_matrix is not None:
        cam = np.asarray(camera_matrix, np.float64)
        look = -cam[:3, 2] / max(np.linalg.norm(cam[:3, 2]), 1e-12)
        down = max(0.0, -look[2])
        away = horizontal_dir(origin - cam[:3, 3])
        extra += scene.grass_tilt * down * TILT_SCALE * asset.asset_height * away
        fade = grass_fade(cam, origin, scene)
    return LiveTerms(main=main, bend=bend, dir=inv3 @ d, vc=inv3 @ vc, vs=inv3 @ vs, mc=mc, ms=ms,
                     world_extra=extra, fade=fade, ambient=ambient)


def wind_offsets(positions, height, wind_color, normals, matrix_world, frame: float, scene: SceneWind,
                 asset: AssetWind, camera_matrix=None, terrain_z=None, live=None) -> np.ndarray:
    """(N, 3) object-space offsets of the live wind at ``frame`` (the twin of the "EnvFX Wind" node group).

    The swing (``wind_swing``: the talk's bend, sway, lift, flutter, whole-asset bend and grass motion as offsets)
    is turned into motion that keeps lengths (``keep_lengths``): each vertex turns about its branch's attach point
    towards its swung place, keeping its distance from it, then the branch is carried rigidly by the whole-asset
    bend at its attach point (a rotation about the point below it at the asset's base), so a plant bends and never
    stretches at any strength.

    Grass only: ``camera_matrix`` (4x4 world matrix of the active camera, or None) drives the tilt away from a
    camera looking down and the distance fade; ``terrain_z`` (N,) is the world Z of the terrain under each rest
    vertex (NaN where there is none), or None: its physical (unbent) height, as on a bent level the wind works
    before the bend (the live wind reads the terrain as drawn plus the drop its bend gives the vertex's x, y).
    ``live``: ``live_attributes(positions, height, wind_color)`` when already computed."""
    p = np.asarray(positions, np.float64).reshape(-1, 3)
    h = np.asarray(height, np.float64).reshape(-1)
    live = live_attributes(p, h, wind_color) if live is None else live
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    origin = m[:3, 3]
    lt = live_terms(m, frame, scene, asset, camera_matrix)
    swing = wind_swing(p, normals, m, frame, scene, asset, live, lt)
    local = keep_lengths(swing, live, m, asset, lt)
    if asset.category != "GRASS":
        return local.astype(np.float32)
    # scale down and stop animating with distance; follow the terrain (placement, not faded)
    fade = lt.fade
    local = fade * local + (fade - 1.0) * p
    if terrain_z is not None:
        inv3 = np.linalg.inv(m[:3, :3])
        tz = np.asarray(terrain_z, np.float64).reshape(-1)
        dz = np.where(np.isfinite(tz), tz - origin[2], 0.0)
        local = local + dz[:, None] * inv3[:, 2][None, :]
    return local.astype(np.float32)


def wind_swing(positions, normals, matrix_world, frame: float, scene: SceneWind, asset: AssetWind, live,
               lt: LiveTerms = None) -> np.ndarray:
    """(N, 3) object-space swing: where the wind pushes each vertex, as an offset, before ``keep_lengths`` turns it
    into motion along arcs. ``(Ba bend + H^2 main) dir + Bac vc + Bas vs + Rc mc + Rs ms`` (``LiveTerms``,
    ``live_attributes``); grass adds its figure-eight and camera tilt times ``H`` and its wobble along the normal
    (times ``H`` too; inside the swing, so they keep lengths too)."""
    p = np.asarray(positions, np.float64).reshape(-1, 3)
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    lt = live_terms(m, frame, scene, asset) if lt is None else lt
    b_branch, bc, bs, rc, rs, hh = (np.asarray(live[name], np.float64).reshape(-1) for name in LIVE_ATTRS[:6])
    swing = ((hh * hh * lt.main + b_branch * lt.bend)[:, None] * lt.dir + bc[:, None] * lt.vc
             + bs[:, None] * lt.vs + rc[:, None] * lt.mc + rs[:, None] * lt.ms)
    if asset.category != "GRASS":
        return swing
    inv3 = np.linalg.inv(m[:3, :3])
    nrm = np.asarray(normals, np.float64).reshape(-1, 3)
    t = loop_time(frame, scene)
    fw = float(quantize(WOBBLE_HZ, scene.loop_frames, scene.fps))
    wamp = lt.ambient * WOBBLE_SCALE * hh * wave(p @ (np.asarray(WOBBLE_WAVE) / (2 * math.pi)) + fw * t)
    # the figure-eight and tilt lean the clump (h times a vector) like the whole-asset bend, and the wobble grows
    # with the height: both read H (h on the ground pieces; a branch is carried)
    return swing + hh[:, None] * (inv3 @ lt.world_extra) + wamp[:, None] * nrm


def keep_lengths(swing, live, matrix_world, asset: AssetWind, lt: LiveTerms) -> np.ndarray:
    """(N, 3) object-space offsets that move each vertex along arcs towards its ``swing``:

    1. about its attach point ``A`` (``p - A`` = Pivot): ``q = p - A + swing`` rescaled to ``|p - A|``, so the
       vertex keeps its distance from ``A`` (the trunk's attach point is its base: its whole-asset bend is the
       GPU Gems 3 rescale; a stem's is its root);
    2. a branch is carried with its ``A``: moved as the whole-asset bend moves the asset's axis at ``A``'s height
       ``hA`` (Carry), the same rescale about the base of the point ``hA H up`` swung by ``hA^2 main dir``
       (+ ``hA`` times the grass's figure-eight and tilt): ``T = hA H |up| (normalize(H up + hA main dir + lean)
       - normalize(up))``, 0 for the trunk and stems (Carry 0).

    Step 2 moves a branch with its leaves as one piece, so both distances survive it. Assumes a uniform object
    scale (lengths are kept in object space)."""
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    inv3 = np.linalg.inv(m[:3, :3])
    rel = np.asarray(live[LIVE_ATTRS[6]], np.float64).reshape(-1, 3)
    ha = np.asarray(live[LIVE_ATTRS[7]], np.float64).reshape(-1)
    q = rel + swing
    rest = np.linalg.norm(rel, axis=1)
    now = np.linalg.norm(q, axis=1)
    # 0 / 0 is 0, as the Math node's Divide: a vertex at its own attach point stays there
    turned = q * np.divide(rest, now, out=np.zeros_like(rest), where=now > 0.0)[:, None]
    up = inv3[:, 2]  # world up in object space (its length the object's 1 / scale)
    height = asset.asset_height
    inv_h = 1.0 / height if height > 0.0 else 0.0  # (the Math node's Divide: 0 for 0)
    # the axis's direction at hA, over H: up + (hA main dir + the grass's lean) / H; without wind exactly up,
    # so a branch's carry is then exactly 0
    lean = up + (inv3 @ lt.world_extra * inv_h if asset.category == "GRASS" else 0.0)
    lean = lean[None, :] + ha[:, None] * (lt.dir * (lt.main * inv_h))[None, :]

    def unit(v):
        length = np.sqrt((v * v).sum(-1, keepdims=True))
        return np.divide(v, length, out=np.zeros_like(v), where=length > 0.0)

    carry = (ha * height * np.sqrt(up @ up))[:, None] * (unit(lean) - unit(up[None, :]))
    return (turned - rel) + carry
