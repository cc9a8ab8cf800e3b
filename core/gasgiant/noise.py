"""4D simplex noise with its spatial gradient, vectorised (the stream function's turbulence)."""

from __future__ import annotations

import math

import numpy as np


_F4 = (math.sqrt(5.0) - 1.0) / 4.0
_G4 = (5.0 - math.sqrt(5.0)) / 20.0
_GRAD4 = np.array([[a, b, c, 0] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]
                  + [[a, b, 0, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]
                  + [[a, 0, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]
                  + [[0, a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], dtype=np.float64)


def _perm(seed: int) -> np.ndarray:
    p = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x6A5]).permutation(256).astype(np.int64)
    return np.concatenate([p, p])


_GX, _GY, _GZ, _GW = (np.ascontiguousarray(_GRAD4[:, k]) for k in range(4))


def simplex4_grad(x: np.ndarray, y: np.ndarray, z: np.ndarray, w: np.ndarray, perm: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """4D simplex noise value and its (x, y, z) gradient, vectorised (float64 arrays of one shape)."""
    s = (x + y + z + w) * _F4
    i = np.floor(x + s)
    j = np.floor(y + s)
    k = np.floor(z + s)
    l_ = np.floor(w + s)
    t = (i + j + k + l_) * _G4
    x0 = x - i + t
    y0 = y - j + t
    z0 = z - k + t
    w0 = w - l_ + t
    # rank of each coordinate among the four (ties broken consistently)
    rx = (x0 > y0).astype(np.int8)
    rx += x0 > z0
    rx += x0 > w0
    ry = (y0 >= x0).astype(np.int8)
    ry += y0 > z0
    ry += y0 > w0
    rz = (z0 >= x0).astype(np.int8)
    rz += z0 >= y0
    rz += z0 > w0
    rw = (w0 >= x0).astype(np.int8)
    rw += w0 >= y0
    rw += w0 >= z0
    ii = i.astype(np.int64) & 255
    jj = j.astype(np.int64) & 255
    kk = k.astype(np.int64) & 255
    ll = l_.astype(np.int64) & 255
    val = np.zeros_like(x)
    gx = np.zeros_like(x)
    gy = np.zeros_like(x)
    gz = np.zeros_like(x)
    for c in range(5):  # the five corners of the simplex (a loop over corners, not points)
        if c == 0:
            oi = oj = ok = ol = False
        elif c == 4:
            oi = oj = ok = ol = True
        else:
            oi, oj, ok, ol = rx >= 4 - c, ry >= 4 - c, rz >= 4 - c, rw >= 4 - c
        off = c * _G4
        dx = x0 - oi
        dx += off
        dy = y0 - oj
        dy += off
        dz = z0 - ok
        dz += off
        dw = w0 - ol
        dw += off
        h = perm.take(ll + ol, mode="clip")  # "clip": every index is in range (no check needed)
        h += kk
        h += ok
        h = perm.take(h, mode="clip")
        h += jj
        h += oj
        h = perm.take(h, mode="clip")
        h += ii
        h += oi
        h = perm.take(h, mode="clip")
        h &= 31
        ga, gb, gc, gd = (g.take(h, mode="clip") for g in (_GX, _GY, _GZ, _GW))
        tt = dx * dx
        tt += dy * dy
        tt += dz * dz
        tt += dw * dw
        np.subtract(0.6, tt, out=tt)
        np.maximum(tt, 0.0, out=tt)
        t2 = tt * tt
        t4 = t2 * t2
        gd_ = ga * dx
        gd_ += gb * dy
        gd_ += gc * dz
        gd_ += gd * dw
        val += t4 * gd_
        f = t2 * tt
        f *= gd_
        f *= 8.0
        ga *= t4
        gx += ga
        gx -= f * dx
        gb *= t4
        gy += gb
        gy -= f * dy
        gc *= t4
        gz += gc
        gz -= f * dz
    return 27.0 * val, 27.0 * gx, 27.0 * gy, 27.0 * gz
