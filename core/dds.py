"""DDS files with a mip chain, in pure numpy + struct (what the mips bake writes for engines): uncompressed RGBA8,
or block-compressed BC1 (DXT1, one bit of alpha), BC3 (DXT5, 8-bit alpha) and BC4 (one channel) through ``core.bc``,
and BC7 (8 bits a texel, finer colour) through ``core.bc7``; and the reader of what it writes."""

from __future__ import annotations

import struct
from collections.abc import Generator, Sequence

import numpy as np
import numpy.typing as npt

from . import bc, bc7, jobs

DDSD_CAPS, DDSD_HEIGHT, DDSD_WIDTH, DDSD_PITCH = 0x1, 0x2, 0x4, 0x8
DDSD_PIXELFORMAT, DDSD_MIPMAPCOUNT, DDSD_LINEARSIZE = 0x1000, 0x20000, 0x80000
DDPF_ALPHAPIXELS, DDPF_FOURCC, DDPF_RGB = 0x1, 0x4, 0x40
DDSCAPS_COMPLEX, DDSCAPS_TEXTURE, DDSCAPS_MIPMAP = 0x8, 0x1000, 0x400000
# per compression: (DXGI name stem, legacy FourCC, DXGI format of <stem>_UNORM); <stem>_UNORM_SRGB is the next
# format (but for NO_SRGB); RGBA8's legacy header has no FourCC (bit masks instead); BC7 has no legacy header
# (always DX10)
COMPRESSIONS = {"RGBA8": ("R8G8B8A8", b"", 28), "BC1": ("BC1", b"DXT1", 71), "BC3": ("BC3", b"DXT5", 77),
                "BC4": ("BC4", b"BC4U", 80), "BC7": ("BC7", b"", 98)}
NO_SRGB = ("BC4",)  # one channel of data (the format after BC4_UNORM is BC4_SNORM): always written as _UNORM
DDS_DIMENSION_TEXTURE2D = 3
DDS_ALPHA_MODE_STRAIGHT = 1  # not premultiplied (what the chain holds)


def dds_format(srgb: bool, compression: str = "RGBA8") -> dict:
    """How ``encode_dds`` describes a chain: sRGB colour needs the DX10 header (no legacy pixel format means
    ``_SRGB``); data stays in the legacy header, which every DDS reader takes as the plain format: RGBA8 as
    R8G8B8A8_UNORM, BC1 and BC3 by their FourCC DXT1 and DXT5 (DirectXTex writes these formats the same way by
    default). BC7 has no legacy pixel format: always the DX10 header, BC7_UNORM or BC7_UNORM_SRGB. BC4 holds one
    channel of data (the coverage), never sRGB: always BC4_UNORM, by its FourCC BC4U."""
    stem, _, unorm = _compression(compression)
    srgb = srgb and compression not in NO_SRGB
    return {"dxgi_format": unorm + 1 if srgb else unorm, "name": f"{stem}_UNORM_SRGB" if srgb else f"{stem}_UNORM",
            "header": "DX10" if srgb or not _has_legacy(compression) else "legacy", "alpha_mode": "straight",
            "compression": compression}


def _has_legacy(compression: str) -> bool:
    """A legacy DDS header can name the format: RGBA8 (bit masks) or a FourCC."""
    return compression == "RGBA8" or bool(COMPRESSIONS[compression][1])


def _compression(compression: str) -> tuple:
    if compression not in COMPRESSIONS:
        raise ValueError(f"Unknown DDS compression {compression!r}: use one of {', '.join(COMPRESSIONS)}")
    return COMPRESSIONS[compression]


def encode_dds(levels: Sequence[npt.NDArray[np.uint8]], *, srgb: bool, compression: str = "RGBA8",
               alpha_ref: float | None = None, channel: int = 3) -> bytes:
    """``encode_dds_job`` run to its end."""
    return jobs.finish(encode_dds_job(levels, srgb=srgb, compression=compression, alpha_ref=alpha_ref,
                                      channel=channel))


def band_rows(width: int) -> int:
    """Texel rows (a multiple of 4) block-compressed in one step of ``encode_dds_job``: about ``CHUNK_BLOCKS`` blocks
    for each thread of ``core.bc.encode_threads``, so every thread has a chunk and a step takes under a second."""
    blocks = bc.CHUNK_BLOCKS * bc.encode_threads()
    return 4 * max(1, blocks // max(1, -(-width // 4)))


def encode_dds_job(levels: Sequence[npt.NDArray[np.uint8]], *, srgb: bool, compression: str = "RGBA8",
                   alpha_ref: float | None = None, channel: int = 3) -> Generator[float, None, bytes]:
    """A DDS (straight alpha) holding every level given: RGBA8 levels, level 0 first, each half the one before
    (floor, at least 1).

    ``compression``: ``RGBA8`` (32 bits a texel, byte order R, G, B, A), ``BC1`` (4 bits a texel: colour, and
    alpha 0 or 255: texels whose alpha is below ``alpha_ref``, 0..1, are transparent; ``alpha_ref`` None: opaque),
    ``BC3`` (8 bits a texel: colour and 8-bit alpha), ``BC4`` (4 bits a texel: channel ``channel``, 0..3, alone, as
    BC3's alpha; never sRGB) or ``BC7`` (8 bits a texel: finer colour and alpha, per block the best of the modes
    ``core.bc7`` writes, keeping the alpha test at ``alpha_ref``, 0.5 when None, on channel ``channel``); the
    block-compressed ones need a level 0 whose width and height are multiples of 4.
    ``srgb``: the colour channels are sRGB-encoded (the mips' ``MipSettings.srgb``). Then the file has the DX10
    header with the ``_SRGB`` format, so engines decode the colour to linear when they sample; otherwise the legacy
    header (BC7: the DX10 header with ``BC7_UNORM``). See ``dds_format``.

    Job generator (progress.py): yields the fraction of the texels encoded, after each band of ``band_rows`` rows
    of a level; returns the file's bytes."""
    _, legacy, unorm = _compression(compression)
    srgb = srgb and compression not in NO_SRGB
    if not levels:
        raise ValueError("No levels to write")
    h, w = levels[0].shape[:2]
    expect = [(max(1, h >> i), max(1, w >> i)) for i in range(len(levels))]
    for lv, (eh, ew) in zip(levels, expect):
        if lv.shape != (eh, ew, 4) or lv.dtype != np.uint8:
            raise ValueError(f"Level of shape {lv.shape} {lv.dtype} does not fit a {w}x{h} RGBA8 chain")
    if compression != "RGBA8" and (w % 4 or h % 4):
        raise ValueError(f"{compression} needs a width and height that are multiples of 4 (engines refuse other "
                         f"block-compressed textures); this image is {w}x{h}: resize it, or write RGBA8")
    flags = DDSD_CAPS | DDSD_HEIGHT | DDSD_WIDTH | DDSD_PIXELFORMAT
    caps = DDSCAPS_TEXTURE
    if len(levels) > 1:
        flags |= DDSD_MIPMAPCOUNT
        caps |= DDSCAPS_COMPLEX | DDSCAPS_MIPMAP
    if compression == "RGBA8":
        flags |= DDSD_PITCH
        pitch = w * 4
        body = [np.ascontiguousarray(lv).tobytes() for lv in levels]
        yield 1.0
    else:
        flags |= DDSD_LINEARSIZE
        pitch = bc.block_bytes(compression, h, w)  # the top level's size
        test = 0.5 if alpha_ref is None else alpha_ref  # (BC7 keeps the alpha test there)
        encode = {"BC1": lambda lv: bc.encode_bc1(lv, alpha_ref), "BC3": bc.encode_bc3,
                  "BC4": lambda lv: bc.encode_bc4(lv, channel), "BC7": lambda lv: bc7.encode_bc7(lv, test, channel)}
        # each level in bands of whole block rows (blocks are encoded on their own and stored row by row, so the
        # bands' bytes put together are the level's), a step each: progress, and a cancel, between bands
        body = []
        total = sum(lv.shape[0] * lv.shape[1] for lv in levels)
        done = 0
        for lv in levels:
            step = band_rows(lv.shape[1])
            for top in range(0, lv.shape[0], step):
                band = lv[top:top + step]
                body.append(encode[compression](band))
                done += band.shape[0] * band.shape[1]
                yield done / total
    if srgb or not _has_legacy(compression):
        pixel_format = struct.pack("<2I4s5I", 32, DDPF_FOURCC, b"DX10", 0, 0, 0, 0, 0)
        # DDS_HEADER_DXT10: dxgiFormat, resourceDimension, miscFlag, arraySize, miscFlags2 (alpha mode)
        extra = struct.pack("<5I", unorm + 1 if srgb else unorm, DDS_DIMENSION_TEXTURE2D, 0, 1,
                            DDS_ALPHA_MODE_STRAIGHT)
    elif compression == "RGBA8":
        pixel_format = struct.pack("<2I4s5I", 32, DDPF_RGB | DDPF_ALPHAPIXELS, b"\0\0\0\0", 32,
                                   0x000000FF, 0x0000FF00, 0x00FF0000, 0xFF000000)
        extra = b""
    else:
        pixel_format = struct.pack("<2I4s5I", 32, DDPF_FOURCC, legacy, 0, 0, 0, 0, 0)
        extra = b""
    header = struct.pack("<7I", 124, flags, h, w, pitch, 0, len(levels)) + b"\0" * 44 + pixel_format
    header += struct.pack("<5I", caps, 0, 0, 0, 0)
    assert len(header) == 124
    return b"DDS " + header + extra + b"".join(body)


def decode_dds(data: bytes, channel: int | None = None) -> tuple[list[npt.NDArray[np.uint8]], dict]:
    """The levels ((h, w, 4) uint8 RGBA, level 0 first) and format (``dds_format``'s dict) of a DDS that
    ``encode_dds`` wrote (RGBA8, BC1, BC3, BC4 or BC7, legacy or DX10 header; BC4 as GPUs sample it: the channel in
    R, G and B 0, A 255); other DDS files are refused. ``channel`` (0..3): each level's (h, w) values of that
    channel alone (BC1's and BC3's alpha and BC4's channel read without decoding the rest)."""
    if channel not in (None, 0, 1, 2, 3):
        raise ValueError(f"channel must be None or 0, 1, 2 or 3 (R, G, B or A), got {channel!r}")
    if len(data) < 128 or data[:4] != b"DDS ":
        raise ValueError("Not a DDS file (no 'DDS ' magic)")
    h, w = struct.unpack_from("<2I", data, 12)
    count = struct.unpack_from("<I", data, 28)[0]
    pf_flags, fourcc, bits = struct.unpack_from("<I4sI", data, 4 + 72 + 4)
    offset = 128
    srgb = False
    if pf_flags & DDPF_FOURCC and fourcc == b"DX10":
        dxgi = struct.unpack_from("<I", data, 128)[0]
        offset += 20
        matches = [name for name, (_, _, unorm) in COMPRESSIONS.items()
                   if dxgi == unorm or (dxgi == unorm + 1 and name not in NO_SRGB)]
        if not matches:
            raise ValueError(f"DXGI format {dxgi} is not one EnvFX writes")
        compression = matches[0]
        srgb = dxgi == COMPRESSIONS[compression][2] + 1
    elif pf_flags & DDPF_FOURCC:
        names = [name for name, (_, cc, _) in COMPRESSIONS.items() if cc and cc == fourcc]
        if not names:
            raise ValueError(f"FourCC {fourcc!r} is not one EnvFX writes")
        compression = names[0]
    elif pf_flags & DDPF_RGB and bits == 32:
        compression = "RGBA8"
    else:
        raise ValueError("Pixel format is not one EnvFX writes")
    levels = []
    for i in range(max(1, count)):
        lh, lw = max(1, h >> i), max(1, w >> i)
        n = lh * lw * 4 if compression == "RGBA8" else bc.block_bytes(compression, lh, lw)
        chunk = data[offset:offset + n]
        if len(chunk) != n:
            raise ValueError(f"The DDS ends inside level {i} ({len(chunk)} of its {n} bytes)")
        if (compression, channel) in (("BC1", 3), ("BC3", 3), ("BC4", 0)):
            levels.append(bc.decode_alpha(chunk, compression, lh, lw))
        else:
            if compression == "RGBA8":
                level = np.frombuffer(chunk, np.uint8).reshape(lh, lw, 4).copy()
            else:
                decode = {"BC1": bc.decode_bc1, "BC3": bc.decode_bc3, "BC4": bc.decode_bc4,
                          "BC7": bc7.decode_bc7}[compression]
                level = decode(chunk, lh, lw)
            levels.append(level if channel is None else np.ascontiguousarray(level[..., channel]))
        offset += n
    return levels, dds_format(srgb, compression)
