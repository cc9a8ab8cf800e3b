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
