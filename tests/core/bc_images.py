"""Test images and error measure shared by the block-compression tests (test_bc.py, test_bc7.py)."""

import numpy as np


def rmse(a, b):
    return float(np.sqrt(((a.astype(np.float64) - b.astype(np.float64)) ** 2).mean()))


def gradient(h=128, w=128):
    """A smooth RGBA image: red and green ramps of 2 levels a texel, blue 1; alpha a smooth wave (up to 18 a texel)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([x * 2, y * 2, x + y, 128 + 127 * np.sin(x / 7) * np.cos(y / 11)], axis=-1)
    return np.clip(img, 0, 255).astype(np.uint8)
