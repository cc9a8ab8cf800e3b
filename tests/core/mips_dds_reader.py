"""An independent DDS reader for the tests: walks the mip levels of an uncompressed DDS from its header alone
(written from the DDS specification, shares no code with core/mips.py)."""

import struct

import numpy as np


def read_dds(data: bytes) -> dict:
    assert data[:4] == b"DDS ", "not a DDS file"
    (size, flags, height, width, pitch, depth, mip_count) = struct.unpack_from("<7I", data, 4)
    assert size == 124
    pf_size, pf_flags, fourcc, bits, rmask, gmask, bmask, amask = struct.unpack_from("<2I4s5I", data, 4 + 72)
    caps = struct.unpack_from("<I", data, 4 + 104)[0]
    assert pf_size == 32
    assert bits % 8 == 0
    bpp = bits // 8
    masks = [rmask, gmask, bmask, amask]
    shifts = [(m & -m).bit_length() - 1 for m in masks]
    count = mip_count if flags & 0x20000 else 1
    offset = 128
    levels = []
    w, h = width, height
    for _ in range(max(1, count)):
        n = w * h * bpp
        raw = np.frombuffer(data, dtype="<u4" if bpp == 4 else np.uint8, count=w * h, offset=offset)
        offset += n
        px = np.stack([((raw & m) >> s).astype(np.uint8) for m, s in zip(masks, shifts)], axis=-1)
        levels.append(px.reshape(h, w, 4))
        w, h = max(1, w // 2), max(1, h // 2)
    return {
        "flags": flags, "width": width, "height": height, "pitch": pitch, "mip_count": mip_count,
        "pf_flags": pf_flags, "fourcc": fourcc, "bits": bits, "caps": caps, "levels": levels,
        "trailing": len(data) - offset,
    }
