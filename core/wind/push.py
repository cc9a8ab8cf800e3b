"""Grass that actors push (Slime Rancher 2 write-up): the interaction buffer's G (grass sway, a wobble between +1 and
-1 after a nudge) and A (grass push-down, 0..1) read at each blade's root turn the blade down and away from the
actor's path, and it wobbles back.

The buffer holds no direction, so the write-up's "offset sampling to derive rough directional vectors based on the
slope of these height maps" gives one: A is a ridge along an actor's path (1 - (d / r)^2 across it, decaying
behind the actor), so down its slope is away from the path. Per blade, at its root ``X`` (world XY; ``uv = (X -
origin) / size``), with ``C`` the bilinear sample of the buffer (EXTEND at its edges) and ``e`` one texel:

    gx = A(uv + (e, 0)) - A(uv),  gy = A(uv + (0, e)) - A(uv)
    lean = (strength A + sway G) (-gx, -gy, 0) / sqrt(gx^2 + gy^2 + PUSH_EPS^2)

a world lean per unit of height, added to the grass's swing times H like the figure-eight (``live.wind_swing``), so
``keep_lengths`` turns it into a rotation about the blade's root: the blade keeps its length. On the ridge's crest
(no slope) the direction fades out (blades right under the path stand, as grass parted by a foot). Before the
bake's first frame nothing pushes (``started`` False)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

PUSH_EPS = 0.02  # A change per texel under which the push direction fades (a soft normalisation)


@dataclass(frozen=True)
class GrassPush:
    """A baked interaction buffer as the grass reads it. ``buffer`` (H, W, 4) RGBA, row 0 at the window's min world
    y (``core.snow.read_exr``); ``origin`` the window's lower-left world XY, ``size`` its world size (square);
    ``strength`` the lean per unit of A (push-down), ``sway`` per unit of G (wobble); ``started``: whether the
    frame is at or after the bake's first frame."""
    buffer: np.ndarray
    origin: tuple = (0.0, 0.0)
    size: float = 1.0
    strength: float = 2.5
    sway: float = 0.6
    started: bool = True


def sample_uv(buffer: npt.ArrayLike, u: npt.ArrayLike, v: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """(N, C) bilinear samples of ``buffer`` (H, W, C; row 0 at v = 0) at texture coordinates ``u``, ``v`` (N,),
    texel centres at (i + 0.5) / W, the edge texels extended beyond the image (the Image Texture node's Linear
    interpolation with EXTEND)."""
    img = np.asarray(buffer, np.float64)
    h, w = img.shape[:2]
    fx = np.asarray(u, np.float64) * w - 0.5
    fy = np.asarray(v, np.float64) * h - 0.5
    x0 = np.floor(fx)
    y0 = np.floor(fy)
    tx = (fx - x0)[:, None]
    ty = (fy - y0)[:, None]
    x0 = x0.astype(np.int64)
    y0 = y0.astype(np.int64)
    xa, xb = np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1)
    ya, yb = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
    return ((img[ya, xa] * (1 - tx) + img[ya, xb] * tx) * (1 - ty)
            + (img[yb, xa] * (1 - tx) + img[yb, xb] * tx) * ty)


def push_field(buffer: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """(H + 1, W + 1, 4) float32: the push's one-sample field of an interaction buffer (H, W, 4): R the A one texel
    to +x minus A, G the sway G, B the A one texel to +y minus A, A the push-down A, each moved by one texel (row
    and column 0 repeat the buffer's first, where a difference across the edge is 0). One bilinear sample of it
    (EXTEND) at ``field_uv(u, v, W, H)`` gives exactly the (gx, G, gy, A) that ``push_lean``'s three samples of the
    buffer at (u, v) give: a bilinear sample is linear in the texels, so the difference of two samples one texel
    apart is the sample of the texels' differences, and the edge texels extended beyond the buffer make every
    difference beyond it 0, as this field's extended edges are."""
    buf = np.asarray(buffer, np.float32)
    h, w = buf.shape[:2]
    rows = np.clip(np.arange(h + 1) - 1, 0, h - 1)  # field row r: the buffer's row r - 1 (clamped)
    cols = np.clip(np.arange(w + 1) - 1, 0, w - 1)
    a = buf[..., 3]
    here = a[rows][:, cols]
    out = np.empty((h + 1, w + 1, 4), np.float32)
    out[..., 0] = a[rows][:, np.minimum(np.arange(w + 1), w - 1)] - here
    out[..., 1] = buf[..., 1][rows][:, cols]
    out[..., 2] = a[np.minimum(np.arange(h + 1), h - 1)][:, cols] - here
    out[..., 3] = here
    return out


def field_uv(u: npt.ArrayLike, v: npt.ArrayLike, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Where ``push_field``'s image of a ``width`` x ``height`` buffer is sampled for the buffer's (u, v): one
    texel on, in a texture one texel wider and taller, ``(u W + 1) / (W + 1)``."""
    return ((np.asarray(u, np.float64) * width + 1.0) / (width + 1.0),
            (np.asarray(v, np.float64) * height + 1.0) / (height + 1.0))


def push_lean(roots: npt.ArrayLike, push: GrassPush) -> npt.NDArray[np.float64]:
    """(N, 3) world lean per unit of height of the blades whose roots are at world ``roots`` (N, 3): see the
    module's docstring."""
    x = np.asarray(roots, np.float64).reshape(-1, 3)
    out = np.zeros_like(x)
    if not push.started or len(x) == 0:
        return out
    buf = np.asarray(push.buffer)
    h, w = buf.shape[:2]
    u = (x[:, 0] - push.origin[0]) / push.size
    v = (x[:, 1] - push.origin[1]) / push.size
    here = sample_uv(buf, u, v)
    a0, g0 = here[:, 3], here[:, 1]
    gx = sample_uv(buf[..., 3:], u + 1.0 / w, v)[:, 0] - a0
    gy = sample_uv(buf[..., 3:], u, v + 1.0 / h)[:, 0] - a0
    k = (push.strength * a0 + push.sway * g0) / np.sqrt(gx * gx + gy * gy + PUSH_EPS * PUSH_EPS)
    out[:, 0] = -gx * k
    out[:, 1] = -gy * k
    return out
