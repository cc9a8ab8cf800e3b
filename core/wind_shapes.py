"""Constructed vegetation with known structure (numpy): test trees, benchmark assets, demo meshes.

``make_tree`` returns a dict of arrays: ``positions`` (N, 3), ``faces`` (F, 3) triangles, ``edges`` (E, 2), and
the ground truth per vertex: ``kind`` (1 trunk, 2 branch, 3 leaf), ``branch_id`` (-1 on the trunk), ``leaf_id``
(-1 off leaves), ``along`` (distance from the trunk along the branch), ``attach`` (True at each leaf's
attachment vertex).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def _tube(p0, p1, radius, sides, rings):
    """Vertices and triangles of an open tube from p0 to p1 (rings x sides vertices)."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    axis = p1 - p0
    length = np.linalg.norm(axis)
    a = axis / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(a, helper)
    u /= np.linalg.norm(u)
    v = np.cross(a, u)
    t = np.linspace(0.0, 1.0, rings)
    ang = np.linspace(0.0, 2 * np.pi, sides, endpoint=False)
    ring = radius * (np.cos(ang)[:, None] * u + np.sin(ang)[:, None] * v)
    verts = (p0 + t[:, None, None] * axis + ring[None, :, :]).reshape(-1, 3)
    r, s = np.meshgrid(np.arange(rings - 1), np.arange(sides), indexing="ij")
    i00 = r * sides + s
    i01 = r * sides + (s + 1) % sides
    i10 = i00 + sides
    i11 = i01 + sides
    tris = np.concatenate([np.stack([i00, i01, i11], -1).reshape(-1, 3), np.stack([i00, i11, i10], -1).reshape(-1, 3)])
    return verts, tris, np.repeat(t * length, sides)


def faces_to_edges(faces: np.ndarray) -> np.ndarray:
    f = np.asarray(faces, np.int64)
    e = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    e.sort(axis=1)
    return np.unique(e, axis=0)


def make_tree(height: float = 8.0, n_branches: int = 6, leaves_per_branch: int = 5, lean: Sequence[float] = (0.0, 0.0),
              origin: npt.ArrayLike = (0.0, 0.0, 0.0), welded: bool = False, seed: int = 0, trunk_sides: int = 12,
              trunk_rings: int = 24, branch_sides: int = 5, leaf_size: float | None = None, leaf_grid: int = 2
             ) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    origin = np.asarray(origin, float)
    top = origin + np.array([lean[0], lean[1], height])
    trunk_r = 0.04 * height
    leaf_size = 0.08 * height if leaf_size is None else leaf_size
    branch_rings = leaves_per_branch + 1
    parts_v, parts_f, kind, bid, lid, along, attach = [], [], [], [], [], [], []
    count = 0

    def add(v, f, k, b, leaf, al, at):
        nonlocal count
        parts_v.append(v)
        parts_f.append(f + count)
        kind.append(np.full(len(v), k, np.int8))
        bid.append(np.full(len(v), b, np.int64))
        lid.append(np.full(len(v), leaf, np.int64))
        along.append(al)
        attach.append(at)
        count += len(v)
        return count - len(v)

    tv, tf, _ = _tube(origin, top, trunk_r, trunk_sides, trunk_rings)
    add(tv, tf, 1, -1, -1, np.zeros(len(tv)), np.zeros(len(tv), bool))
    weld_edges = []
    leaf_no = 0
    for b in range(n_branches):
        frac = 0.35 + 0.55 * b / max(n_branches - 1, 1)
        base = origin + frac * (top - origin)
        ang = 2 * np.pi * (b * 0.382 + rng.uniform(-0.05, 0.05))
        out = np.array([np.cos(ang), np.sin(ang), 0.45])
        out /= np.linalg.norm(out)
        blen = height * (0.45 - 0.25 * frac)
        start = base + out * trunk_r * 0.5
        bv, bf, bal = _tube(start, start + out * blen, trunk_r * 0.35, branch_sides, branch_rings)
        first = add(bv, bf, 2, b, -1, bal, np.zeros(len(bv), bool))
        if welded:
            # weld: connect the branch's first ring to the nearest trunk vertices with edges
            d = np.linalg.norm(tv[None, :, :] - bv[:branch_sides, None, :], axis=2)
            weld_edges.append(np.stack([first + np.arange(branch_sides), np.argmin(d, axis=1)], 1))
        for j in range(leaves_per_branch):
            s = bal[(j + 1) * branch_sides]  # leaves sit at the branch's rings, stuck into its axis
            point = start + out * s
            side = np.cross(out, [0.0, 0.0, 1.0])
            side /= np.linalg.norm(side)
            side *= (-1) ** j
            tip_dir = side * 0.8 + np.array([0.0, 0.0, -0.6])
            tip_dir /= np.linalg.norm(tip_dir)
            w = np.cross(tip_dir, out)
            w /= np.linalg.norm(w)
            lv = np.array([point, point + tip_dir * leaf_size * 0.5 + w * leaf_size * 0.25,
                           point + tip_dir * leaf_size, point + tip_dir * leaf_size * 0.5 - w * leaf_size * 0.25])
            lf = np.array([[0, 1, 2], [0, 2, 3]])
            at = np.array([True, False, False, False])
            if leaf_grid > 2:  # a denser card: a bilinear grid over the same four corners (attachment first)
                g = leaf_grid
                uu, vv = np.meshgrid(np.linspace(0, 1, g), np.linspace(0, 1, g), indexing="ij")
                uu, vv = uu.ravel()[:, None], vv.ravel()[:, None]
                lv = (1 - uu) * (1 - vv) * lv[0] + uu * (1 - vv) * lv[1] + uu * vv * lv[2] + (1 - uu) * vv * lv[3]
                r, c = np.meshgrid(np.arange(g - 1), np.arange(g - 1), indexing="ij")
                a = (r * g + c).ravel()
                lf = np.concatenate([np.stack([a, a + g, a + g + 1], 1), np.stack([a, a + g + 1, a + 1], 1)])
                at = np.zeros(len(lv), bool)
                at[0] = True
            add(lv, lf, 3, b, leaf_no, np.full(len(lv), s), at)
            leaf_no += 1
    positions = np.concatenate(parts_v).astype(np.float32)
    faces = np.concatenate(parts_f)
    edges = faces_to_edges(faces)
    if weld_edges:
        edges = np.concatenate([edges] + weld_edges)
    return {
        "positions": positions, "faces": faces, "edges": edges, "kind": np.concatenate(kind),
        "branch_id": np.concatenate(bid), "leaf_id": np.concatenate(lid), "along": np.concatenate(along),
        "attach": np.concatenate(attach),
    }


def make_grass(blades: int = 12, height: float = 0.6, seed: int = 0, origin: npt.ArrayLike = (0.0, 0.0, 0.0)
              ) -> dict[str, np.ndarray]:
    """A grass clump: ``blades`` thin triangle strips (3 segments each) standing on the ground."""
    rng = np.random.default_rng(seed)
    verts, faces = [], []
    for _ in range(blades):
        base = np.asarray(origin, float) + np.array([*rng.uniform(-0.2, 0.2, 2), 0.0])
        ang = rng.uniform(0, np.pi)
        w = 0.02 * np.array([np.cos(ang), np.sin(ang), 0.0])
        lean = rng.uniform(-0.1, 0.1, 2)
        h = height * rng.uniform(0.7, 1.0)
        start = sum(len(v) for v in verts)
        pts = []
        for s in range(4):
            f = s / 3
            c = base + np.array([lean[0] * f, lean[1] * f, h * f])
            pts += [c - w * (1 - f), c + w * (1 - f)]
        verts.append(np.array(pts))
        for s in range(3):
            a = start + 2 * s
            faces += [[a, a + 1, a + 3], [a, a + 3, a + 2]]
    positions = np.concatenate(verts).astype(np.float32)
    faces = np.array(faces, np.int64)
    return {"positions": positions, "faces": faces, "edges": faces_to_edges(faces)}


def make_bush(stems: int = 4, height: float = 1.5, leaves_per_stem: int = 6, seed: int = 0,
              origin: npt.ArrayLike = (0.0, 0.0, 0.0)) -> dict[str, np.ndarray]:
    """A multi-stem bush: ``stems`` separate tubes rising from the ground, leaning out, each with leaf cards.
    Ground truth like ``make_tree`` (``branch_id`` = stem index, ``along`` = distance from the stem's root)."""
    rng = np.random.default_rng(seed)
    origin = np.asarray(origin, float)
    parts_v, parts_f, kind, bid, lid, along, attach = [], [], [], [], [], [], []
    count = 0
    leaf_no = 0
    for s in range(stems):
        ang = 2 * np.pi * s / stems + rng.uniform(-0.2, 0.2)
        base = origin + 0.15 * np.array([np.cos(ang), np.sin(ang), 0.0])
        top = base + np.array([0.4 * np.cos(ang), 0.4 * np.sin(ang), height * rng.uniform(0.8, 1.0)])
        v, f, al = _tube(base, top, 0.02, 5, leaves_per_stem + 1)
        parts_v.append(v)
        parts_f.append(f + count)
        kind.append(np.full(len(v), 2, np.int8))
        bid.append(np.full(len(v), s))
        lid.append(np.full(len(v), -1))
        along.append(al)
        attach.append(np.zeros(len(v), bool))
        count += len(v)
        axis = (top - base) / np.linalg.norm(top - base)
        side = np.cross(axis, [0.0, 0.0, 1.0])
        side /= np.linalg.norm(side)
        for j in range(leaves_per_stem):
            a = al[(j + 1) * 5]
            point = base + axis * a
            tip = side * (-1) ** j * 0.8 + np.array([0.0, 0.0, -0.3])
            tip /= np.linalg.norm(tip)
            w = np.cross(tip, axis)
            w /= np.linalg.norm(w)
            size = 0.12 * height
            lv = np.array([point, point + tip * size * 0.5 + w * size * 0.25, point + tip * size,
                           point + tip * size * 0.5 - w * size * 0.25])
            parts_v.append(lv)
            parts_f.append(np.array([[0, 1, 2], [0, 2, 3]]) + count)
            kind.append(np.full(4, 3, np.int8))
            bid.append(np.full(4, s))
            lid.append(np.full(4, leaf_no))
            along.append(np.full(4, a))
            attach.append(np.array([True, False, False, False]))
            count += 4
            leaf_no += 1
    faces = np.concatenate(parts_f)
    return {
        "positions": np.concatenate(parts_v).astype(np.float32), "faces": faces, "edges": faces_to_edges(faces),
        "kind": np.concatenate(kind), "branch_id": np.concatenate(bid), "leaf_id": np.concatenate(lid),
        "along": np.concatenate(along), "attach": np.concatenate(attach),
    }


# --- vegetation as real assets build it: separate pieces ---------------------------------------------------

LEAF_CARDS = ("quad", "tris", "crossed", "double", "strip", "clump")
LEAF_PLACES = ("touch", "hover", "tip")


def _card(kind, base, direction, side, size):
    """Vertices and triangles of one leaf card of construction ``kind`` growing from ``base`` along ``direction``
    (unit), ``side`` (unit, across it). Returns (verts, tris, base_flags, tip_flags)."""
    d, s = np.asarray(direction, float), np.asarray(side, float)
    w = 0.35 * size
    up = np.cross(d, s)
    if kind in ("quad", "double", "tris"):
        quad = np.array([base - w * s, base + w * s, base + w * s + size * d, base - w * s + size * d])
        if kind == "quad":
            return quad, np.array([[0, 1, 2], [0, 2, 3]]), np.array([1, 1, 0, 0], bool), np.array([0, 0, 1, 1], bool)
        if kind == "tris":  # two unwelded triangles (6 vertices)
            v = np.concatenate([quad[[0, 1, 2]], quad[[0, 2, 3]]])
            return (v, np.array([[0, 1, 2], [3, 4, 5]]), np.array([1, 1, 0, 1, 0, 0], bool),
                    np.array([0, 0, 1, 0, 1, 1], bool))
        # two coincident faces of opposite normals, not welded (8 vertices)
        v = np.concatenate([quad, quad])
        return (v, np.array([[0, 1, 2], [0, 2, 3], [4, 6, 5], [4, 7, 6]]), np.array([1, 1, 0, 0] * 2, bool),
                np.array([0, 0, 1, 1] * 2, bool))
    if kind == "crossed":  # two quads crossing along the card's axis, welded nowhere
        a = np.array([base - w * s, base + w * s, base + w * s + size * d, base - w * s + size * d])
        b = np.array([base - w * up, base + w * up, base + w * up + size * d, base - w * up + size * d])
        v = np.concatenate([a, b])
        t = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]])
        return v, t, np.array([1, 1, 0, 0] * 2, bool), np.array([0, 0, 1, 1] * 2, bool)
    if kind == "strip":  # a bending strip of three segments (8 vertices)
        t = np.linspace(0.0, 1.0, 4)
        centre = base + size * t[:, None] * d + 0.15 * size * (t ** 2)[:, None] * up
        v = np.concatenate([centre - w * s, centre + w * s])  # 0..3 left, 4..7 right
        tris = []
        for i in range(3):
            tris += [[i, i + 4, i + 5], [i, i + 5, i + 1]]
        return (v, np.array(tris), np.array([1, 0, 0, 0, 1, 0, 0, 0], bool),
                np.array([0, 0, 0, 1, 0, 0, 0, 1], bool))
    # clump: a small closed octahedron of leaves
    c = base + 0.5 * size * d
    r = 0.5 * size
    v = np.array([c - r * d, c + r * d, c + r * s, c - r * s, c + r * up, c - r * up])
    tris = np.array([[0, 2, 4], [0, 4, 3], [0, 3, 5], [0, 5, 2], [1, 4, 2], [1, 3, 4], [1, 5, 3], [1, 2, 5]])
    return v, tris, np.array([1, 0, 0, 0, 0, 0], bool), np.array([0, 1, 0, 0, 0, 0], bool)


def make_vegetation(card: str = "quad", place: str = "touch", height: float = 6.0, n_branches: int = 5, twigs: int = 3,
                    leaves_per_twig: int = 4, seed: int = 0, origin: npt.ArrayLike = (0.0, 0.0, 0.0), sides: int = 8
                   ) -> dict[str, np.ndarray]:
    """A tree of separate, unwelded pieces, as tree generators and asset libraries build them: a closed trunk
    tube; first-level branch tubes starting inside the trunk; twig tubes starting on their branch's surface; leaf
    cards of construction ``card`` (``LEAF_CARDS``) along each twig, ``place`` (``LEAF_PLACES``): touching it,
    hovering a little away or all at its tip. Ground truth per vertex: ``kind`` (1 trunk, 2 branch or twig, 3 leaf),
    ``branch_id`` (the first-level branch it belongs to, -1 on the trunk), ``level`` (0 trunk, 1, 2, 3 leaf),
    ``leaf_id``, ``leaf_base`` / ``leaf_tip`` (a card's attach end and far end), ``along`` (distance from the
    piece's start)."""
    rng = np.random.default_rng(seed)
    origin = np.asarray(origin, float)
    parts = []

    def add(v, f, kind, bid, level, leaf=-1, base=None, tip=None, along=None):
        n = len(v)
        parts.append(dict(v=np.asarray(v, float), f=np.asarray(f, np.int64), kind=np.full(n, kind, np.int8),
                          bid=np.full(n, bid), level=np.full(n, level), leaf=np.full(n, leaf),
                          base=np.zeros(n, bool) if base is None else base,
                          tip=np.zeros(n, bool) if tip is None else tip,
                          along=np.zeros(n) if along is None else along))

    def tube(p0, p1, r, rings, closed=True):
        v, t, al = _tube(p0, p1, r, sides, rings)
        if closed:  # caps: a centre vertex at each end
            n = len(v)
            v = np.concatenate([v, [p0, p1]])
            s = np.arange(sides)
            cap0 = np.stack([np.full(sides, n), (s + 1) % sides, s], 1)
            top = (rings - 1) * sides
            cap1 = np.stack([np.full(sides, n + 1), top + s, top + (s + 1) % sides], 1)
            t = np.concatenate([t, cap0, cap1])
            al = np.concatenate([al, [0.0, np.linalg.norm(np.asarray(p1) - p0)]])
        return v, t, al

    trunk_r = 0.035 * height
    v, t, al = tube(origin, origin + [0, 0, height], trunk_r, 16)
    add(v, t, 1, -1, 0, along=al)
    leaf_count = 0
    for b in range(n_branches):
        ang = 2 * np.pi * b / n_branches + rng.uniform(-0.2, 0.2)
        h = height * (0.35 + 0.5 * b / max(n_branches - 1, 1))
        out = np.array([np.cos(ang), np.sin(ang), 0.0])
        bdir = out * 0.85 + np.array([0, 0, 0.5])
        bdir /= np.linalg.norm(bdir)
        blen = height * 0.4
        p0 = origin + [0, 0, h] + out * 0.3 * trunk_r  # starts inside the trunk
        p1 = p0 + blen * bdir
        br = 0.4 * trunk_r
        v, t, al = tube(p0, p1, br, 8)
        add(v, t, 2, b, 1, along=al)
        for w in range(twigs):
            f = 0.35 + 0.6 * w / max(twigs - 1, 1)
            side = np.cross(bdir, [0, 0, 1.0])
            side /= np.linalg.norm(side)
            sgn = 1 if w % 2 == 0 else -1
            tdir = bdir * 0.5 + sgn * side * 0.8 + np.array([0, 0, 0.2])
            tdir /= np.linalg.norm(tdir)
            q0 = p0 + f * blen * bdir + sgn * side * br  # on the branch's surface
            tlen = height * 0.15
            q1 = q0 + tlen * tdir
            tr = 0.3 * br
            v, t, al = tube(q0, q1, tr, 5, closed=False)
            add(v, t, 2, b, 2, along=al)
            across = np.cross(tdir, [0, 0, 1.0])
            across /= np.linalg.norm(across)
            size = 0.06 * height
            for i in range(leaves_per_twig):
                if place == "tip":
                    base = q1 + 0.3 * tr * tdir + 0.05 * size * (i - (leaves_per_twig - 1) / 2) * across
                    ldir = tdir + 0.6 * (i - (leaves_per_twig - 1) / 2) * across
                else:
                    fa = 0.4 + 0.55 * i / max(leaves_per_twig - 1, 1)
                    s2 = 1 if i % 2 == 0 else -1
                    gap = tr if place == "touch" else tr + 0.15 * size
                    base = q0 + fa * tlen * tdir + s2 * across * gap
                    ldir = s2 * across + np.array([0, 0, 0.2])
                ldir /= np.linalg.norm(ldir)
                lside = np.cross(ldir, [0, 0, 1.0])
                if np.linalg.norm(lside) < 1e-6:
                    lside = np.array([1.0, 0, 0])
                lside /= np.linalg.norm(lside)
                lv, lt, lb, ltip = _card(card, base, ldir, lside, size)
                add(lv, lt, 3, b, 3, leaf=leaf_count, base=lb, tip=ltip)
                leaf_count += 1
    offs = np.cumsum([0] + [len(q["v"]) for q in parts[:-1]])
    out = {k2: np.concatenate([q[k1] for q in parts]) for k1, k2 in (
        ("v", "positions"), ("kind", "kind"), ("bid", "branch_id"), ("level", "level"), ("leaf", "leaf_id"),
        ("base", "leaf_base"), ("tip", "leaf_tip"), ("along", "along"))}
    out["faces"] = np.concatenate([q["f"] + o for q, o in zip(parts, offs)])
    out["edges"] = faces_to_edges(out["faces"])
    out["piece"] = np.concatenate([np.full(len(q["v"]), i) for i, q in enumerate(parts)])
    return out
