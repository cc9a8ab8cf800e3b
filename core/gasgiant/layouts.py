"""Cube-face layouts of the written faces: Blender's faces, or the standard engine cube-map faces, and the exact
flips and transposes between them."""

from __future__ import annotations

import numpy as np

from .cube import _FACE_A, _FACE_B, _FACE_N, FACES


# Cube-face layouts of the written faces (``CUBE_LAYOUTS``). BLENDER: the six ``FACES`` of cube.py (Blender axes, seen
# from outside, +Z up on the side faces). GLTF / UNITY: the standard D3D/OpenGL cube-map faces (+X, -X, +Y, -Y, +Z,
# -Z; the OpenGL spec's major-axis table, image row 0 = t = 0) in a Y-up engine space reached from Blender by
# ``ENGINE_AXES`` (engine = M @ blender): GLTF is right-handed like glTF, Godot, OpenGL/Vulkan and three.js (x, z, -y);
# UNITY is left-handed as Unity imports glTF and FBX files from Blender (-x, z, -y).
ENGINE_AXES = {"GLTF": np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], dtype=np.float64),
               "UNITY": np.array([[-1, 0, 0], [0, 0, 1], [0, -1, 0]], dtype=np.float64)}
ENGINE_FACES = ("posx", "negx", "posy", "negy", "posz", "negz")
ENGINE_SLOTS = ("+X", "-X", "+Y", "-Y", "+Z", "-Z")
# per slot (engine axes): normal, the axis along image columns (s, sc) and the one along image rows (t, tc)
_ENGINE_TABLE = (((1, 0, 0), (0, 0, -1), (0, -1, 0)), ((-1, 0, 0), (0, 0, 1), (0, -1, 0)),
                 ((0, 1, 0), (1, 0, 0), (0, 0, 1)), ((0, -1, 0), (1, 0, 0), (0, 0, -1)),
                 ((0, 0, 1), (1, 0, 0), (0, -1, 0)), ((0, 0, -1), (-1, 0, 0), (0, -1, 0)))


_ORIENT_NAMES = {"as is": lambda m: m, "mirror left-right": lambda m: m[:, ::-1],
                 "mirror top-bottom": lambda m: m[::-1], "rotate 180": lambda m: np.rot90(m, 2),
                 "rotate 90 clockwise": lambda m: np.rot90(m, -1),
                 "rotate 90 counter-clockwise": lambda m: np.rot90(m, 1),
                 "transpose": lambda m: m.swapaxes(0, 1), "anti-transpose": lambda m: np.rot90(m, 2).swapaxes(0, 1)}


def _orient(face: np.ndarray, t) -> np.ndarray:
    """An engine face image from a Blender face image (rows, cols, ...): engine texel (i, j) at (sc, tc) = (c_j,
    c_i) shows the Blender texel at u = t00 sc + t01 tc, v = t10 sc + t11 tc (entries 0 or +-1; texel centres
    c_k = -c_(n-1-k), so the mapping is exact: a flip and/or a transpose, no resampling)."""
    (t00, t01), (t10, t11) = t
    if t00 != 0:
        out = face
        if t00 < 0:
            out = out[:, ::-1]
        if t11 < 0:
            out = out[::-1]
    else:
        out = face.swapaxes(0, 1)
        if t01 < 0:
            out = out[::-1]
        if t10 < 0:
            out = out[:, ::-1]
    return out


def _orient_name(t) -> str:
    probe = np.arange(9).reshape(3, 3)
    got = _orient(probe, t)
    return next(name for name, fn in _ORIENT_NAMES.items() if np.array_equal(fn(probe), got))


def cube_layout_faces(layout: str) -> list:
    """The six faces a bake writes in ``layout``, in file order: dicts with ``name`` (file name part), ``slot``
    (engine cube-map slot, ``None`` for BLENDER), ``face`` (index into ``FACES``: the Blender face it shows),
    ``t`` (the ``_orient`` matrix from that Blender face), and in Blender axes ``normal``, ``right`` (direction
    of the image's +column) and ``up`` (direction toward the image's top row)."""
    if layout == "BLENDER":
        return [dict(name=f, slot=None, face=i, t=((1, 0), (0, 1)), normal=_FACE_N[i], right=_FACE_A[i],
                     up=-_FACE_B[i]) for i, f in enumerate(FACES)]
    minv = np.linalg.inv(ENGINE_AXES[layout])
    out = []
    for name, slot, (n, sc, tc) in zip(ENGINE_FACES, ENGINE_SLOTS, _ENGINE_TABLE, strict=True):
        nb, scb, tcb = (minv @ np.array(x, dtype=np.float64) for x in (n, sc, tc))
        f = int(np.argmax(_FACE_N @ nb))
        a, b = _FACE_A[f], _FACE_B[f]
        t = ((int(round(scb @ a)), int(round(tcb @ a))), (int(round(scb @ b)), int(round(tcb @ b))))
        out.append(dict(name=name, slot=slot, face=f, t=t, normal=nb, right=scb, up=-tcb))
    return out


def layout_face_image(face: np.ndarray, entry: dict) -> np.ndarray:
    """The image of one ``cube_layout_faces`` entry from its Blender face image (contiguous copy)."""
    return np.ascontiguousarray(_orient(face, entry["t"]))


def blender_face_image(image: np.ndarray, entry: dict) -> np.ndarray:
    """The Blender face image from the image of one ``cube_layout_faces`` entry: the exact inverse of
    ``layout_face_image`` (flips undone, then the transpose), so engine-layout faces read back as they were baked."""
    (t00, t01), (t10, t11) = entry["t"]
    if t00 != 0:
        return np.ascontiguousarray(_orient(image, entry["t"]))  # flips only: each is its own inverse
    out = image
    if t01 < 0:
        out = out[::-1]
    if t10 < 0:
        out = out[:, ::-1]
    return np.ascontiguousarray(out.swapaxes(0, 1))
