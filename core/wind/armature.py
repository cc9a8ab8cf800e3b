"""Wind data from an armature, pure numpy: the talk's own pipeline ("we export a LOD chain from SpeedTree with
bones and AO to an FBX and a custom Houdini process takes that skeletal and skinning data and converts it to the
vertex colours"). A tree skinned to a skeleton already says what is trunk, what is a branch and what hangs from
what, so the bake reads it instead of guessing it from the geometry.

From bone heads, tails and parents (armature space or world space, all alike) and per-vertex bone weights:

- trunk: every root bone, continued up through the child that carries the most bone length above it and does not
  turn away from its parent (within about 37 degrees, ``TRUNK_TURN``; a root lying flat, as a game rig's "root"
  bone, is continued by a child pointing up). Trunk bones give B = 0 and G = 0.
- B grows along every bone chain from where it leaves the trunk: a bone's head starts at its parent's B at the
  point of the parent nearest to it (0 on the trunk), and B grows with the distance along the bone (up to its
  tail, or to the farthest vertex it mostly holds when that is beyond: tails of end bones are guesses after an
  import). A vertex takes the weighted mean, over its bones, of B at its projection onto each bone; the result is
  normalised over the asset (1 at the farthest tip), as the geometric bake's is.
- G: one phase per first-level branch bone (a bone whose parent is the trunk and that is not the trunk), the
  geometric bake's golden-ratio sequence in bone order, inherited by everything below it. A vertex takes the phase
  of its heaviest non-trunk bone (0 when only trunk bones hold it).
- leaves by weight: a leaf card skinned to a twig bone takes the twig's B and phase through its weights; a vertex
  weighted to no bone (leaves left unskinned) takes the bone nearest to it.

Height, R (distance over each leaf) and AO stay the geometric bake's (``bake_wind_data``): this replaces B and G.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from .bake import BakeResult
from .params import GOLDEN, LABEL_LEAF, LABEL_TRUNK, WindError

TRUNK_TURN = 0.8  # cosine: a child turning more than ~37 degrees away from its trunk bone is a branch
MIN_WEIGHT = 1e-4  # below this a weight counts as none
MAX_INFLUENCES = 8  # bones kept per vertex (game skinning keeps 4; the rest of a vertex's weight is tiny)


@dataclass
class BoneTree:
    """The structure read from the bones (all arrays per bone)."""
    trunk: np.ndarray       # bool
    depth: np.ndarray       # int: 0 trunk, 1 first-level branch, 2 ...
    first: np.ndarray       # int: the first-level branch each bone belongs to (its index among them), -1 trunk
    phase: np.ndarray       # float: G
    b_head: np.ndarray      # float: raw B (metres along the chain) at the head
    length: np.ndarray      # float


@dataclass
class ArmatureWind:
    branch: np.ndarray      # (N,) float32 B, normalised over the asset
    phase: np.ndarray       # (N,) float32 G
    weighted: np.ndarray    # (N,) bool: held by a bone's weight (else the nearest bone was used)
    bones: BoneTree
    levels: list            # bones per branch level (level 1: first-level branches)
    n_trunk: int


def _check(heads, tails, parents):
    h = np.asarray(heads, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(tails, dtype=np.float64).reshape(-1, 3)
    par = np.asarray(parents, dtype=np.int64).reshape(-1)
    nb = len(h)
    if nb == 0:
        raise WindError("The armature has no bones: add bones, or remove the Armature modifier to bake from the "
                        "geometry")
    if len(t) != nb or len(par) != nb:
        raise WindError(f"Bone arrays disagree: {nb} heads, {len(t)} tails, {len(par)} parents")
    if not (np.isfinite(h).all() and np.isfinite(t).all()):
        raise WindError("The armature has non-finite bone positions (NaN or inf): fix the armature first")
    if ((par < -1) | (par >= nb) | (par == np.arange(nb))).any():
        raise WindError("Bone parent indices out of range (each is -1 or another bone's index)")
    return h, t, par


def _order(par) -> tuple[np.ndarray, np.ndarray]:
    """Bones parents first (breadth-first from the roots); raises on a parent cycle."""
    nb = len(par)
    depth = np.full(nb, -1, np.int64)
    depth[par < 0] = 0
    for d in range(nb):
        nxt = (depth < 0) & (par >= 0)
        nxt[nxt] = depth[par[nxt]] == d
        if not nxt.any():
            break
        depth[nxt] = d + 1
    if (depth < 0).any():
        raise WindError("The bone parents form a loop: fix the armature's hierarchy")
    return np.argsort(depth, kind="stable"), depth


def bone_tree(heads: npt.ArrayLike, tails: npt.ArrayLike, parents: npt.ArrayLike) -> BoneTree:
    """The trunk, the branch levels, the phases and B along the chains, from the bones alone."""
    h, t, par = _check(heads, tails, parents)
    nb = len(h)
    order, _ = _order(par)
    vec = t - h
    length = np.linalg.norm(vec, axis=1)
    unit = vec / np.maximum(length, 1e-12)[:, None]
    # bone length carried above each bone (itself and everything below it), children before parents
    carried = length.copy()
    for j in order[::-1]:
        if par[j] >= 0:
            carried[par[j]] += carried[j]
    trunk = par < 0
    up = np.array([0.0, 0.0, 1.0])
    for j in order:  # parents first: a trunk bone hands the trunk on to one child
        if not trunk[j]:
            continue
        kids = np.nonzero(par == j)[0]
        if not len(kids):
            continue
        ref = unit[j] if (par[j] >= 0 or unit[j] @ up >= TRUNK_TURN) else up
        straight = kids[unit[kids] @ ref >= TRUNK_TURN]
        if len(straight):
            trunk[straight[np.argmax(carried[straight])]] = True
    # first-level branches: a non-trunk bone whose parent is the trunk; everything below belongs to it
    firsts = np.nonzero(~trunk & (par >= 0) & trunk[np.maximum(par, 0)])[0]
    first = np.full(nb, -1, np.int64)
    first[firsts] = np.arange(len(firsts))
    depth = np.zeros(nb, np.int64)
    b_head = np.zeros(nb)
    for j in order:
        p = par[j]
        if trunk[j] or p < 0:
            continue
        if trunk[p]:
            depth[j] = 1
            continue
        first[j] = first[p]
        depth[j] = depth[p] + 1
        s = np.clip((h[j] - h[p]) @ unit[p], 0.0, length[p])  # where it leaves its parent
        b_head[j] = b_head[p] + s
    phase = np.where(first >= 0, np.mod((first + 1) * GOLDEN, 1.0), 0.0)
    return BoneTree(trunk=trunk, depth=depth, first=first, phase=phase, b_head=b_head, length=length)


def _nearest_bone(positions, h, t, chunk=4096) -> np.ndarray:
    """The bone whose segment is nearest to each position."""
    seg = t - h
    ll = np.maximum((seg * seg).sum(1), 1e-24)
    out = np.empty(len(positions), np.int64)
    for s in range(0, len(positions), chunk):
        p = positions[s:s + chunk]
        u = np.clip(np.einsum("nbc,bc->nb", p[:, None] - h[None], seg) / ll, 0.0, 1.0)
        closest = h[None] + u[..., None] * seg[None]
        out[s:s + chunk] = np.argmin(((p[:, None] - closest) ** 2).sum(-1), axis=1)
    return out


def top_influences(weights: npt.ArrayLike, k: int = MAX_INFLUENCES
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The ``k`` largest weights of each vertex of a dense (N, bones) weight array: (bone indices (N, k) int64,
    weights (N, k) float32), the unused slots weight 0."""
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 2:
        raise WindError(f"Weights must be (vertices, bones), got shape {w.shape}")
    k = min(k, w.shape[1])
    idx = np.argpartition(-w, k - 1, axis=1)[:, :k] if k < w.shape[1] else np.tile(np.arange(w.shape[1]),
                                                                                    (len(w), 1))
    return idx.astype(np.int64), np.take_along_axis(w, idx, axis=1)


def merge_influences(idx: npt.ArrayLike, w: npt.ArrayLike, more_idx: npt.ArrayLike, more_w: npt.ArrayLike,
                     k: int = MAX_INFLUENCES) -> tuple[np.ndarray, npt.NDArray[np.float32]]:
    """Keep the ``k`` largest of two sets of influences per vertex (reading the weights in batches of bones)."""
    all_idx = np.concatenate([idx, more_idx], axis=1)
    all_w = np.concatenate([w, more_w], axis=1).astype(np.float32)
    if all_w.shape[1] <= k:
        return all_idx, all_w
    keep = np.argpartition(-all_w, k - 1, axis=1)[:, :k]
    return np.take_along_axis(all_idx, keep, axis=1), np.take_along_axis(all_w, keep, axis=1)


def armature_wind(positions: npt.ArrayLike, heads: npt.ArrayLike, tails: npt.ArrayLike, parents: npt.ArrayLike,
                  weights: npt.ArrayLike | None = None, influences: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
                  chunk: int = 65536) -> ArmatureWind:
    """B and G per vertex from the bones. ``positions`` (N, 3) and the bones in one space; the skinning as
    ``weights`` (N, bones) dense (columns in bone order; a bone without a vertex group is a column of zeros) or as
    ``influences`` = (bone indices (N, k), weights (N, k)), a vertex's few bones (what the bridge reads: memory
    N x k, not N x bones)."""
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    h, t, par = _check(heads, tails, parents)
    n, nb = len(p), len(h)
    if influences is None:
        if weights is None or np.shape(weights) != (n, nb):
            got = "none" if weights is None else np.shape(weights)
            raise WindError(f"Weights must be (vertices, bones) = ({n}, {nb}), got {got}")
        influences = top_influences(weights)
    idx = np.asarray(influences[0], dtype=np.int64)
    w = np.asarray(influences[1], dtype=np.float32)
    if idx.shape != w.shape or idx.ndim != 2 or len(idx) != n:
        raise WindError(f"Influences must be two (vertices, k) arrays for {n} vertices, got {idx.shape} and {w.shape}")
    if idx.size and (idx.min() < 0 or idx.max() >= nb):
        raise WindError("Influence bone indices out of range")
    w = np.where(np.isfinite(w) & (w >= MIN_WEIGHT), w, 0.0).astype(np.float32)
    total = w.sum(1)
    weighted = total > 0
    if not weighted.any():
        raise WindError("No vertex is weighted to a bone of the armature: weight the mesh to its bones (Ctrl+P > "
                        "With Automatic Weights, or Weight Paint), or remove the Armature modifier to bake the wind "
                        "data from the geometry")
    tree = bone_tree(h, t, par)
    vec = t - h
    unit = vec / np.maximum(tree.length, 1e-12)[:, None]
    rows = np.arange(n)
    heavy = np.argmax(w, axis=1)
    top = idx[rows, heavy]
    # a bone reaches as far as the vertices it mostly holds: an end bone's tail is often only a guess (importers
    # make one up from its parent, FBX and glTF store no tails), and leaves hang beyond it
    reach = tree.length.copy()
    mostly = weighted & (w[rows, heavy] >= 0.5)
    if mostly.any():
        proj = ((p[mostly] - h[top[mostly]]) * unit[top[mostly]]).sum(1)
        np.maximum.at(reach, top[mostly], proj)
    branch_raw = np.zeros(n)
    phase = np.zeros(n)
    for s in range(0, n, chunk):
        sl = slice(s, s + chunk)
        bi, ws = idx[sl], w[sl].astype(np.float64)
        along = np.clip(np.einsum("nkc,nkc->nk", p[sl, None, :] - h[bi], unit[bi]), 0.0, reach[bi])
        b = np.where(tree.trunk[bi], 0.0, tree.b_head[bi] + along)  # trunk bones add B 0
        branch_raw[sl] = (ws * b).sum(1) / np.maximum(ws.sum(1), 1e-12)
        wn = np.where(tree.trunk[bi], 0.0, ws)  # the phase of the heaviest non-trunk bone
        hv = np.argmax(wn, axis=1)
        r = np.arange(len(wn))
        phase[sl] = np.where(wn[r, hv] > 0, tree.phase[bi[r, hv]], 0.0)
    loose = np.nonzero(~weighted)[0]
    if len(loose):
        nearest = _nearest_bone(p[loose], h, t)
        b = tree.b_head[nearest] + np.clip(((p[loose] - h[nearest]) * unit[nearest]).sum(1), 0.0, reach[nearest])
        branch_raw[loose] = np.where(tree.trunk[nearest], 0.0, b)
        phase[loose] = tree.phase[nearest]
    bmax = float(branch_raw.max())
    branch = branch_raw / bmax if bmax > 0 else branch_raw
    levels = [int(((tree.depth == d) & ~tree.trunk).sum()) for d in range(1, int(tree.depth.max()) + 1)]
    return ArmatureWind(branch=branch.astype(np.float32), phase=phase.astype(np.float32), weighted=weighted,
                        bones=tree, levels=levels, n_trunk=int(tree.trunk.sum()))


def with_armature(result: BakeResult, arm: ArmatureWind) -> BakeResult:
    """The geometric bake ``result`` with B and G from the bones (height, R, leaf phase and AO stay); vertices the
    bones put on the trunk (B 0, held by trunk bones only) are marked trunk; the structure counts are the bones'."""
    n = len(result.height)
    if len(arm.branch) != n:
        raise WindError(f"The armature data covers {len(arm.branch)} vertices, the bake {n}")
    src = result.source if result.source is not None else np.arange(n)
    branch = arm.branch[src]
    phase = arm.phase[src]
    kind = result.kind.copy()
    kind[(branch <= 0.0) & (kind != LABEL_LEAF)] = LABEL_TRUNK
    return replace(result, branch=branch, phase=phase, kind=kind, levels=list(arm.levels),
                   n_branches=int((~arm.bones.trunk).sum()), trunk_found=True, multi_stem=False, n_stems=0)


def bones_text(arm: ArmatureWind) -> str:
    parts = [f"{arm.n_trunk} trunk bone{'s' if arm.n_trunk != 1 else ''}"]
    for i, count in enumerate(arm.levels):
        parts.append(f"{count} level-{i + 1} branch bone{'s' if count != 1 else ''}")
    return ", ".join(parts)
