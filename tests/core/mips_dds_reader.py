"""An independent DDS reader for the tests: walks the mip levels of an uncompressed DDS from its header alone
(written from the DDS specification, shares no code with core/mips.py).

Legacy headers: uncompressed 32-bit RGB(A) pixel formats, channels found by their bit masks. DX10 headers (FourCC
'DX10' + DDS_HEADER_DXT10): only the 8-bit RGBA formats, read strictly; anything else (another DXGI format, a
texture array, a cube map, a volume, an unknown alpha mode, another FourCC) is refused with ValueError."""

import struct

import numpy as np

DDPF_ALPHAPIXELS, DDPF_FOURCC, DDPF_RGB = 0x1, 0x4, 0x40
# the DXGI formats this reader takes: R, G, B, A bytes in that order
DXGI_RGBA8 = {27: "R8G8B8A8_TYPELESS", 28: "R8G8B8A8_UNORM", 29: "R8G8B8A8_UNORM_SRGB"}
ALPHA_MODES = {0: "unknown", 1: "straight", 2: "premultiplied", 3: "opaque", 4: "custom"}
TEXTURE2D = 3


def _fail(msg):
    raise ValueError(f"DDS: {msg}")


def read_dds(data: bytes) -> dict:
    if data[:4] != b"DDS ":
        _fail("not a DDS file")
    (size, flags, height, width, pitch, depth, mip_count) = struct.unpack_from("<7I", data, 4)
    if size != 124:
        _fail(f"header size {size}, not 124")
    pf_size, pf_flags, fourcc, bits, rmask, gmask, bmask, amask = struct.unpack_from("<2I4s5I", data, 4 + 72)
    caps, caps2 = struct.unpack_from("<2I", data, 4 + 104)
    if pf_size != 32:
        _fail(f"pixel format size {pf_size}, not 32")
    if caps2:
        _fail(f"caps2 {caps2:#x}: a cube map or volume texture")
    out = {"flags": flags, "width": width, "height": height, "pitch": pitch, "mip_count": mip_count,
           "pf_flags": pf_flags, "fourcc": fourcc, "bits": bits, "caps": caps, "header": "legacy",
           "dxgi_format": None, "format": None, "alpha_mode": None, "srgb": False}
    offset = 128
    if pf_flags & DDPF_FOURCC:
        if fourcc != b"DX10":
            _fail(f"FourCC {fourcc!r}: only uncompressed data is read")
        if len(data) < 148:
            _fail("DX10 header cut short")
        dxgi, dim, misc, array_size, misc2 = struct.unpack_from("<5I", data, 128)
        if dxgi not in DXGI_RGBA8:
            _fail(f"DXGI format {dxgi} is not one of {sorted(DXGI_RGBA8)}")
        if dim != TEXTURE2D:
            _fail(f"resource dimension {dim}, not TEXTURE2D (3)")
        if misc != 0:
            _fail(f"miscFlag {misc:#x} (4 = cube map)")
        if array_size != 1:
            _fail(f"array size {array_size}, not 1")
        if misc2 & ~0x7 or (misc2 & 0x7) not in ALPHA_MODES:
            _fail(f"miscFlags2 {misc2:#x}: unknown alpha mode")
        out.update(header="DX10", dxgi_format=dxgi, format=DXGI_RGBA8[dxgi], alpha_mode=ALPHA_MODES[misc2 & 0x7],
                   srgb=dxgi == 29, misc_flag=misc, array_size=array_size, resource_dimension=dim)
        offset = 148
        bpp = 4
        masks = [0x000000FF, 0x0000FF00, 0x00FF0000, 0xFF000000]
    else:
        if not pf_flags & DDPF_RGB or bits != 32:
            _fail(f"pixel format flags {pf_flags:#x}, {bits} bits: not uncompressed 32-bit RGB(A)")
        bpp = 4
        masks = [rmask, gmask, bmask, amask if pf_flags & DDPF_ALPHAPIXELS else 0]
    shifts = [(m & -m).bit_length() - 1 for m in masks]
    count = mip_count if flags & 0x20000 else 1
    levels = []
    w, h = width, height
    for _ in range(max(1, count)):
        n = w * h * bpp
        if offset + n > len(data):
            _fail("pixel data cut short")
        raw = np.frombuffer(data, dtype="<u4", count=w * h, offset=offset)
        offset += n
        px = np.stack([((raw & m) >> s).astype(np.uint8) if m else np.full(raw.shape, 255, np.uint8)
                       for m, s in zip(masks, shifts)], axis=-1)
        levels.append(px.reshape(h, w, 4))
        w, h = max(1, w // 2), max(1, h // 2)
    out.update(levels=levels, data_offset=148 if out["header"] == "DX10" else 128, trailing=len(data) - offset)
    return out
