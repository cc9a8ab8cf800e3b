"""Colour encodings shared by the bakes: sRGB <-> linear light (the IEC 61966-2-1 curve), float32."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def srgb_to_linear(x: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """sRGB-encoded 0..1 values to linear light."""
    x = np.asarray(x, dtype=np.float32)
    return np.where(x <= 0.04045, x / np.float32(12.92),
                    ((x + np.float32(0.055)) / np.float32(1.055)) ** np.float32(2.4)).astype(np.float32)


def linear_to_srgb(x: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Linear light (clipped to 0..1) to sRGB-encoded values."""
    x = np.clip(np.asarray(x, dtype=np.float32), 0.0, 1.0)
    return np.where(x <= 0.0031308, x * np.float32(12.92),
                    np.float32(1.055) * np.power(x, np.float32(1.0 / 2.4)) - np.float32(0.055)).astype(np.float32)


def fill_transparent(rgb: npt.ArrayLike, alpha: npt.ArrayLike, threshold: float = 0.5) -> npt.NDArray[np.float32]:
    """(h, w, c) ``rgb`` with every pixel less than ``threshold`` opaque replaced by the colour of the opaque pixels
    around it (pull-push: the opaque pixels averaged down a pyramid of halved sizes, each hole taking the average
    of the smallest block around it that holds any), so a picture on a transparent card (a planet's disc, a leaf)
    lends no colour to what is not in the picture. Opaque pixels keep their colour exactly. Raises ValueError when
    no pixel is opaque enough."""
    rgb = np.asarray(rgb, np.float32)
    keep = np.asarray(alpha, np.float32) >= threshold
    if keep.all():
        return rgb.copy()
    if not keep.any():
        raise ValueError("no pixel is opaque")
    # pull: sums of colour and count of the opaque pixels over blocks of 1, 2, 4, ... pixels
    sums = [np.where(keep[..., None], rgb, 0.0).astype(np.float64)]
    counts = [keep.astype(np.float64)]
    while sums[-1].shape[0] > 1 or sums[-1].shape[1] > 1:
        s, n = sums[-1], counts[-1]
        h, w = s.shape[:2]
        ph, pw = h % 2, w % 2  # odd sizes: padded with empty pixels
        s = np.pad(s, ((0, ph), (0, pw), (0, 0)))
        n = np.pad(n, ((0, ph), (0, pw)))
        sums.append(s[0::2, 0::2] + s[1::2, 0::2] + s[0::2, 1::2] + s[1::2, 1::2])
        counts.append(n[0::2, 0::2] + n[1::2, 0::2] + n[0::2, 1::2] + n[1::2, 1::2])
    # push: from the whole picture's average down, a block without opaque pixels takes its parent's colour
    colour = sums[-1] / counts[-1][..., None]
    for s, n in zip(sums[-2::-1], counts[-2::-1]):
        h, w = n.shape
        parent = np.repeat(np.repeat(colour, 2, axis=0), 2, axis=1)[:h, :w]
        colour = np.where(n[..., None] > 0, s / np.maximum(n, 1.0)[..., None], parent)
    return np.where(keep[..., None], rgb, colour.astype(np.float32))
