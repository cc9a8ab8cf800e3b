"""Cube-map geometry: the six faces, directions of their texels, the one-texel border taken from the neighbouring
faces (so bilinear lookups never cross a face and there is no seam), lookups, and the equirectangular grid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


FACES = ("px", "nx", "py", "ny", "pz", "nz")
# per face: normal n, right axis a (image columns), down axis b (image rows); a x b = -n (seen from outside)
_FACE_N = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=np.float64)
_FACE_A = np.array([[0, 1, 0], [0, -1, 0], [-1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0]], dtype=np.float64)
_FACE_B = np.array([[0, 0, -1], [0, 0, -1], [0, 0, -1], [0, 0, -1], [1, 0, 0], [-1, 0, 0]], dtype=np.float64)


def face_directions(size: int, pad: int = 0, faces: slice | Sequence[int] | np.ndarray = slice(None),
                    rows: slice | Sequence[int] | np.ndarray = slice(None)) -> npt.NDArray[np.float64]:
    """(6, size+2pad, size+2pad, 3) unit directions of texel centres (rows along the face's down axis);
    ``faces`` selects some faces only, ``rows`` some rows (of the padded face) only."""
    j = np.arange(-pad, size + pad, dtype=np.float64)
    c = (2.0 * j + 1.0) / size - 1.0
    u = c[None, :]
    v = c[rows][:, None]
    # n + u a + v b has length sqrt(1 + u^2 + v^2) (n, a, b orthonormal): each component is one of the three terms
    inv = u * u + v * v
    inv += 1.0
    np.sqrt(inv, out=inv)
    np.divide(1.0, inv, out=inv)
    terms = (inv, u * inv, v * inv)
    ids = np.arange(6)[faces]
    out = np.empty((len(ids),) + inv.shape + (3,))
    for k, f in enumerate(ids):
        for axis in range(3):
            for term, axes in zip(terms, (_FACE_N, _FACE_A, _FACE_B), strict=True):
                if axes[f, axis]:
                    np.multiply(term, axes[f, axis], out=out[k, :, :, axis])
    return out


def dir_to_face_uv(d: np.ndarray) -> tuple[npt.NDArray[np.int32], np.ndarray, np.ndarray]:
    """Directions (..., 3) -> (face int, u, v) with |u|, |v| <= 1 on the face of the largest component."""
    a = np.abs(d)
    ax = np.argmax(a, axis=-1)
    comp = np.take_along_axis(d, ax[..., None], axis=-1)[..., 0]
    face = 2 * ax + (comp < 0)
    m = np.abs(comp)
    u = np.einsum("...k,...k->...", d, _FACE_A[face]) / m
    v = np.einsum("...k,...k->...", d, _FACE_B[face]) / m
    return face.astype(np.int32), u, v


def face_uv_to_dir(face: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    d = _FACE_N[face] + u[..., None] * _FACE_A[face] + v[..., None] * _FACE_B[face]
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def _ring(size: int):
    """Boolean (size+2, size+2) mask of the one-texel border around a face."""
    edge = np.ones((size + 2, size + 2), dtype=bool)
    edge[1:-1, 1:-1] = False
    return edge


def _border_index(size: int) -> np.ndarray:
    """(6, 4 * size + 4) flat indices into a (6 * size * size) cube: for each texel of the border around each
    face (row-major order of ``_ring``), the texel of the neighbouring face under its direction."""
    rows, cols = np.nonzero(_ring(size))
    u = (2.0 * (cols - 1) + 1.0) / size - 1.0
    v = (2.0 * (rows - 1) + 1.0) / size - 1.0
    d = _FACE_N[:, None, :] + u[None, :, None] * _FACE_A[:, None, :] + v[None, :, None] * _FACE_B[:, None, :]
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    face, fu, fv = dir_to_face_uv(d)
    col = np.clip(np.floor((fu + 1.0) * 0.5 * size), 0, size - 1).astype(np.int64)
    row = np.clip(np.floor((fv + 1.0) * 0.5 * size), 0, size - 1).astype(np.int64)
    return (face.astype(np.int64) * size + row) * size + col


def pad_cube(cube: np.ndarray, border_index: np.ndarray | None = None) -> np.ndarray:
    """(6, n, n, C) -> (6, n+2, n+2, C): each face with a one-texel border from its neighbours."""
    n = cube.shape[1]
    if border_index is None:
        border_index = _border_index(n)
    flat = cube.reshape(6 * n * n, -1)
    out = np.empty((6, n + 2, n + 2, flat.shape[1]), dtype=cube.dtype)
    out[:, 1:-1, 1:-1] = cube
    out[:, _ring(n)] = flat[border_index]
    return out


def sample_cube(padded: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Bilinear lookup of a padded cube (6, n+2, n+2, C) at directions (..., 3) -> (..., C)."""
    n = padded.shape[1] - 2
    face, u, v = dir_to_face_uv(d)
    x = (u + 1.0) * 0.5 * n + 0.5
    y = (v + 1.0) * 0.5 * n + 0.5
    ix = np.clip(np.floor(x).astype(np.int64), 0, n)
    iy = np.clip(np.floor(y).astype(np.int64), 0, n)
    fx = (x - ix)[..., None]
    fy = (y - iy)[..., None]
    flat = padded.reshape(-1, padded.shape[-1])
    w = n + 2
    b = (face.astype(np.int64) * w + iy) * w + ix
    top = flat[b] * (1 - fx) + flat[b + 1] * fx
    bot = flat[b + w] * (1 - fx) + flat[b + w + 1] * fx
    return top * (1 - fy) + bot * fy


def equirect_directions(width: int, rows: slice | Sequence[int] | np.ndarray = slice(None)) -> np.ndarray:
    """(width/2, width, 3) directions of an equirectangular image: row 0 = north, column 0 = longitude -180;
    ``rows`` selects some rows only."""
    h = width // 2
    lon = (np.arange(width) + 0.5) / width * 2.0 * np.pi - np.pi
    lat = np.pi / 2 - (np.arange(h)[rows] + 0.5) / h * np.pi
    cl = np.cos(lat)[:, None]
    return np.stack(np.broadcast_arrays(cl * np.cos(lon)[None, :], cl * np.sin(lon)[None, :],
                                        np.sin(lat)[:, None]), axis=-1)


def equirect_from_cube(padded: np.ndarray, width: int) -> np.ndarray:
    h = width // 2
    out = np.empty((h, width, padded.shape[-1]), dtype=np.float32)
    rows = max(1, (1 << 18) // width)
    for r0 in range(0, h, rows):  # bounded memory, each block vectorised
        blk = equirect_directions(width, slice(r0, r0 + rows))
        out[r0:r0 + rows] = sample_cube(padded, blk.reshape(-1, 3)).reshape(blk.shape[:2] + (-1,))
    return out
