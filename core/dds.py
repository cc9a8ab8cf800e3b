"""Uncompressed RGBA8 DDS with a mip chain, in pure numpy + struct (what the mips bake writes for engines)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DDSD_CAPS, DDSD_HEIGHT, DDSD_WIDTH, DDSD_PITCH = 0x1, 0x2, 0x4, 0x8
DDSD_PIXELFORMAT, DDSD_MIPMAPCOUNT = 0x1000, 0x20000
DDPF_ALPHAPIXELS, DDPF_FOURCC, DDPF_RGB = 0x1, 0x4, 0x40
DDSCAPS_COMPLEX, DDSCAPS_TEXTURE, DDSCAPS_MIPMAP = 0x8, 0x1000, 0x400000
DXGI_FORMAT_R8G8B8A8_UNORM, DXGI_FORMAT_R8G8B8A8_UNORM_SRGB = 28, 29
DDS_DIMENSION_TEXTURE2D = 3
DDS_ALPHA_MODE_STRAIGHT = 1  # not premultiplied (what the chain holds)


def dds_format(srgb: bool) -> dict:
    """How ``encode_dds`` describes a chain: sRGB colour needs the DX10 header (no legacy pixel format means
    R8G8B8A8_UNORM_SRGB); data stays in the legacy RGBA8 header, which every DDS reader takes as R8G8B8A8_UNORM
    (DirectXTex writes both formats the same way by default)."""
    if srgb:
        return {"dxgi_format": DXGI_FORMAT_R8G8B8A8_UNORM_SRGB, "name": "R8G8B8A8_UNORM_SRGB", "header": "DX10",
                "alpha_mode": "straight"}
    return {"dxgi_format": DXGI_FORMAT_R8G8B8A8_UNORM, "name": "R8G8B8A8_UNORM", "header": "legacy",
            "alpha_mode": "straight"}


def encode_dds(levels: Sequence[npt.NDArray[np.uint8]], *, srgb: bool) -> bytes:
    """Uncompressed 32-bit RGBA DDS (byte order R, G, B, A, straight alpha) holding every level given.

    ``srgb``: the colour channels are sRGB-encoded (the mips' ``MipSettings.srgb``). Then the file has the DX10
    header with DXGI_FORMAT_R8G8B8A8_UNORM_SRGB, so engines decode the colour to linear when they sample; otherwise the
    legacy header (R8G8B8A8_UNORM). See ``dds_format``."""
    if not levels:
        raise ValueError("No levels to write")
    h, w = levels[0].shape[:2]
    expect = [(max(1, h >> i), max(1, w >> i)) for i in range(len(levels))]
    for lv, (eh, ew) in zip(levels, expect):
        if lv.shape != (eh, ew, 4) or lv.dtype != np.uint8:
            raise ValueError(f"Level of shape {lv.shape} {lv.dtype} does not fit a {w}x{h} RGBA8 chain")
    flags = DDSD_CAPS | DDSD_HEIGHT | DDSD_WIDTH | DDSD_PITCH | DDSD_PIXELFORMAT
    caps = DDSCAPS_TEXTURE
    if len(levels) > 1:
        flags |= DDSD_MIPMAPCOUNT
        caps |= DDSCAPS_COMPLEX | DDSCAPS_MIPMAP
    if srgb:
        pixel_format = struct.pack("<2I4s5I", 32, DDPF_FOURCC, b"DX10", 0, 0, 0, 0, 0)
        # DDS_HEADER_DXT10: dxgiFormat, resourceDimension, miscFlag, arraySize, miscFlags2 (alpha mode)
        extra = struct.pack("<5I", DXGI_FORMAT_R8G8B8A8_UNORM_SRGB, DDS_DIMENSION_TEXTURE2D, 0, 1,
                            DDS_ALPHA_MODE_STRAIGHT)
    else:
        pixel_format = struct.pack("<2I4s5I", 32, DDPF_RGB | DDPF_ALPHAPIXELS, b"\0\0\0\0", 32,
                                   0x000000FF, 0x0000FF00, 0x00FF0000, 0xFF000000)
        extra = b""
    header = struct.pack("<7I", 124, flags, h, w, w * 4, 0, len(levels)) + b"\0" * 44 + pixel_format
    header += struct.pack("<5I", caps, 0, 0, 0, 0)
    assert len(header) == 124
    return b"DDS " + header + extra + b"".join(np.ascontiguousarray(lv).tobytes() for lv in levels)
