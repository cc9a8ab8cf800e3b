"""PNG encoding in pure numpy + zlib (Blender ships no Pillow), shared by every bake that writes PNGs."""

from __future__ import annotations

import struct
import zlib

import numpy as np


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(pixels, level: int = 6) -> bytes:
    """PNG of an (H, W, C) uint8 or uint16 array, C = 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA (filter 'up').
    Row 0 is the top of the picture."""
    arr = np.asarray(pixels)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[2] not in (1, 2, 3, 4) or arr.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"Cannot write a PNG of shape {arr.shape} {arr.dtype}: use (H, W, 1-4) uint8 or uint16")
    h, w, c = arr.shape
    depth = 8 if arr.dtype == np.uint8 else 16
    colour_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = np.ascontiguousarray(arr.astype(">u2") if depth == 16 else arr).view(np.uint8).reshape(h, -1)
    up = raw.copy()
    up[1:] -= raw[:-1]  # uint8 arithmetic wraps mod 256, as the 'up' filter wants
    rows = np.concatenate([np.full((h, 1), 2, dtype=np.uint8), up], axis=1)
    ihdr = struct.pack(">2I5B", w, h, depth, colour_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), level)) + _chunk(b"IEND", b""))


def to_uint8(img) -> np.ndarray:
    """Float 0..1 (clipped) or uint8 pixels as uint8."""
    arr = np.asarray(img)
    if arr.dtype == np.uint8:
        return arr
    return (np.clip(arr, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def write_png(path: str, img, level: int = 4):
    """Write an (H, W, C) float image in 0..1 (or uint8) as an 8-bit PNG."""
    data = encode_png(to_uint8(img), level)
    with open(path, "wb") as fh:
        fh.write(data)
