"""PNG encoding in pure numpy + zlib (Blender ships no Pillow), shared by every bake that writes PNGs."""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import zlib
from collections.abc import Callable
from typing import BinaryIO

import numpy as np
import numpy.typing as npt


# (value, address, length) -> the checksum (Adler-32 or CRC-32) of ``length`` bytes at ``address`` continued from
# ``value``
Checksum = Callable[[int, int, int], int]
_ADLER32: list = []  # [the function found by fast_adler32(), or None]: looked up once per process
_CRC32: list = []  # [the function found by fast_crc32(), or None]
# the system's libdeflate (Linux: libtiff's dependency on the common distributions)
_SYSTEM_LIBDEFLATE = "libdeflate.so.0"


def fast_adler32() -> Checksum | None:
    """libdeflate's Adler-32 (vectorised: about 3.5 times zlib 1.2's here, which a stored PNG16 spends a tenth of
    its encoding on), when a library this process has loaded exports it: Blender's OpenEXR library does, on
    Linux, in 4.2 and 5.0 (libOpenEXRCore links libdeflate in and exports its functions); else the system's
    libdeflate (``_libraries``). None elsewhere: callers use zlib's. The function found is checked against zlib's
    on lengths around its block sizes before it is trusted. Looked up once; ``ENVFX_ZLIB_ADLER32=1`` in the
    environment turns it off (a check of the fallback)."""
    if not _ADLER32:
        _ADLER32.append(None if os.environ.get("ENVFX_ZLIB_ADLER32") == "1" else _find("adler32"))
    return _ADLER32[0]


def fast_crc32() -> Checksum | None:
    """libdeflate's CRC-32 (carry-less multiplication: about twice zlib 1.2's here), found as ``fast_adler32``
    finds its Adler-32 (Blender's OpenEXR library does not export this one: the system's libdeflate, on Linux),
    checked against zlib's before it is trusted. None elsewhere; ``ENVFX_ZLIB_CRC32=1`` turns it off."""
    if not _CRC32:
        _CRC32.append(None if os.environ.get("ENVFX_ZLIB_CRC32") == "1" else _find("crc32"))
    return _CRC32[0]


def _libraries() -> list[str]:
    """The libraries to look for libdeflate's functions in, on Linux (an empty list elsewhere): the ones mapped into
    this process whose name starts with libOpenEXRCore or libdeflate (read from /proc/self/maps), then the
    system's libdeflate by name (the loader's own search)."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = {line.split(None, 5)[-1].strip() for line in fh if "OpenEXRCore" in line or "libdeflate" in line}
    except OSError:
        paths = set()
    return sorted(p for p in paths if p.startswith("/") and os.path.basename(p).startswith(
        ("libOpenEXRCore", "libdeflate"))) + [_SYSTEM_LIBDEFLATE]


def _find(kind: str) -> Checksum | None:
    """libdeflate's ``libdeflate_<kind>`` (adler32, crc32) from the first of ``_libraries`` that exports one that
    agrees with zlib's."""
    for path in _libraries():
        try:
            function = getattr(ctypes.CDLL(path), f"libdeflate_{kind}")  # (a loaded library: the same, no new copy)
        except (OSError, AttributeError):
            continue
        function.restype = ctypes.c_uint32
        function.argtypes = (ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t)
        if _agrees_with_zlib(function, kind):
            return function
    return None


def _agrees_with_zlib(function, kind: str = "adler32") -> bool:
    """Whether ``function`` gives zlib's checksum (``kind``: adler32 or crc32) of pseudo-random bytes of lengths
    around its block sizes, at an aligned and an odd address, from the start value and from a running one."""
    reference, first = (zlib.adler32, 1) if kind == "adler32" else (zlib.crc32, 0)
    data = np.random.default_rng(7).integers(0, 256, 70004, dtype=np.uint8)
    data[:6000] = 255  # (the largest bytes: the Adler sums' overflow)
    for skew in (0, 3):
        address = data.ctypes.data + skew
        for length in (0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 5552, 5553, 6000,
                       8191, 8192, 8193, 65536, 70000):
            for start in (first, 0x5A3C_0F71):
                if function(start, address, length) != reference(data[skew:skew + length].data, start):
                    return False
    return True


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(data, zlib.crc32(kind)) & 0xFFFFFFFF  # without a copy of kind + data
    return b"".join((struct.pack(">I", len(data)), kind, data, struct.pack(">I", crc)))


def encode_png(pixels: npt.ArrayLike, level: int = 6) -> bytes:
    """PNG of an (H, W, C) uint8 or uint16 array, C = 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA (filter 'up'; none
    at level 0, which stores the rows without deflating them). Row 0 is the top of the picture."""
    arr = np.asarray(pixels)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[2] not in (1, 2, 3, 4) or arr.dtype not in (np.uint8, np.uint16, np.dtype(">u2")):
        raise ValueError(f"Cannot write a PNG of shape {arr.shape} {arr.dtype}: use (H, W, 1-4) uint8 or uint16")
    h, w, c = arr.shape
    depth = 8 if arr.dtype == np.uint8 else 16
    colour_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    raw = np.ascontiguousarray(arr.astype(">u2", copy=False) if depth == 16 else arr).view(np.uint8).reshape(h, -1)
    rows = np.empty((h, raw.shape[1] + 1), dtype=np.uint8)
    rows[:, 1:] = raw
    if level > 0:
        rows[:, 0] = 2
        rows[1:, 1:] -= raw[:-1]  # uint8 arithmetic wraps mod 256, as the 'up' filter wants
    else:
        rows[:, 0] = 0  # stored, not deflated: filtering would gain nothing
    ihdr = struct.pack(">2I5B", w, h, depth, colour_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), level)) + _chunk(b"IEND", b""))


def decode_png(data: bytes) -> np.ndarray:
    """(H, W, C) uint8 or uint16 pixels of a PNG that ``encode_png`` wrote (non-interlaced grey, grey+alpha, RGB or
    RGBA of 8 or 16 bits; filters none, sub, up; the others are refused). For checks and tests."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, ihdr, idat = 8, None, []
    while pos < len(data):
        size = struct.unpack_from(">I", data, pos)[0]
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            ihdr = struct.unpack(">2I5B", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + size
    if ihdr is None:
        raise ValueError("PNG file without an IHDR chunk (its size and format): the file is damaged or cut short")
    w, h, depth, colour_type, _comp, _filt, interlace = ihdr
    c = {0: 1, 4: 2, 2: 3, 6: 4}.get(colour_type)
    if c is None or depth not in (8, 16) or interlace:
        raise ValueError(f"PNG colour type {colour_type}, depth {depth}, interlace {interlace} is not read here")
    bpp = c * depth // 8
    rows = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(h, 1 + w * bpp)
    out = rows[:, 1:].copy()
    for y in range(h):  # a loop over rows (each row's filter depends on the one above), vectorised within
        f = rows[y, 0]
        if f == 2 and y > 0:
            out[y] += out[y - 1]
        elif f == 1:
            line = out[y].reshape(w, bpp)
            out[y] = np.cumsum(line, axis=0, dtype=np.uint8).reshape(-1)
        elif f not in (0, 2):
            raise ValueError(f"PNG filter {f} is not read here")
    if depth == 16:
        return out.view(">u2").astype(np.uint16).reshape(h, w, c)
    return out.reshape(h, w, c)


# 2^23: the float32 numbers from it to 2^24 are the integers, so ``v + 2^23`` for v in 0..65535.5 is ``2^23 +
# round(v)`` (to the nearest, ties to even) and its low 16 bits are that integer
_ROUNDER = np.float32(8388608.0)
_LOW_HALF = 0 if sys.byteorder == "little" else 1  # of a float32's two uint16 halves, the low one


def quantise16(values: npt.NDArray[np.float32], lo: npt.ArrayLike, scale: npt.ArrayLike, clamp: bool = True,
               source: npt.NDArray[np.float32] | None = None) -> npt.NDArray[np.float32]:
    """``round((values - lo) * scale)`` clamped to 0..65535 (16-bit texels), in place in ``values``, as
    float32 numbers ``2^23 + texel`` (``texels16`` reads the texels out of them; no conversion pass); ``source``
    (any strides): the values to quantise into ``values`` instead (no copy first). ``clamp``
    False: the caller knows every value lies within the range (``lo`` at most the smallest, ``lo + 65535 / scale``
    at least the largest, as float32 numbers), which keeps the scaled values in 0..65535.02 (the roundings of the
    subtraction and the product are monotonic, each off by under 2^-24), so the clamp's pass (the slowest of these
    in numpy 1.26) is saved. Unclamped, a scaled value must lie in -0.25..65535.5 (excluded): one below would give
    65535 (2^23 - 0.5's low bits), 65535.5 and above 0."""
    np.subtract(values if source is None else source, lo, out=values)
    np.multiply(values, scale, out=values)
    if clamp:
        np.clip(values, np.float32(0.0), np.float32(65535.0), out=values)  # (one pass: minimum and maximum)
    np.add(values, _ROUNDER, out=values)
    return values


def texels16(quantised: npt.NDArray[np.float32]) -> npt.NDArray[np.uint16]:
    """The uint16 texels of ``quantised`` (``quantise16``'s float32 ``2^23 + texel``): a view of their low halves,
    the same shape, for a copy into the file's rows (into their big-endian view: the byte swap is the copy's)."""
    return quantised.view(np.uint16)[..., _LOW_HALF::2]


def encode_png16_from_float(image: npt.NDArray[np.float32], lo: npt.ArrayLike, scale: npt.ArrayLike, level: int = 0,
                            chunk_rows: int = 256) -> bytes:
    """16-bit PNG of an (H, W, C) float32 ``image`` quantised on the way in (``quantise16``: ``texel = round((value
    - lo) * scale)`` clamped to 0..65535 per channel), a block of rows at a time straight into the file's row buffer (no
    full-size temporary copies: a 300 MB bake is quantised in one pass). Filter none; ``level`` 0 stores the rows
    without deflating them."""
    h, w, c = image.shape
    rows = np.zeros((h, 1 + w * c * 2), dtype=np.uint8)  # filter byte 0 (none) per row
    texels = rows[:, 1:].view(">u2").reshape(h, w, c)
    lo = np.asarray(lo, dtype=np.float32)
    scale = np.asarray(scale, dtype=np.float32)
    for a in range(0, h, chunk_rows):  # blocks of rows bound the temporary, each vectorised
        texels[a:a + chunk_rows] = texels16(quantise16(np.array(image[a:a + chunk_rows], np.float32), lo, scale))
    ihdr = struct.pack(">2I5B", w, h, 16, {1: 0, 2: 4, 3: 2, 4: 6}[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(rows.data, level))
            + _chunk(b"IEND", b""))


def to_uint8(img: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Float 0..1 (clipped) or uint8 pixels as uint8."""
    arr = np.asarray(img)
    if arr.dtype == np.uint8:
        return arr
    return (np.clip(arr, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def write_png(path: str, img: npt.ArrayLike, level: int = 4) -> None:
    """Write an (H, W, C) float image in 0..1 (or uint8) as an 8-bit PNG."""
    data = encode_png(to_uint8(img), level)
    with open(path, "wb") as fh:
        fh.write(data)


STORED_BLOCK = 65535  # the most bytes one stored (not deflated) deflate block holds


def stored_row_fits(width: int, channels: int) -> bool:
    """Whether a 16-bit row of ``width`` pixels of ``channels`` (1-4) fits one stored deflate block (what
    ``StoredPng16Writer`` writes; ``encode_png16_from_float`` writes the others)."""
    return channels in (1, 2, 3, 4) and 1 + width * channels * 2 <= STORED_BLOCK


class StoredPng16Writer:
    """An uncompressed 16-bit PNG of ``height`` x ``width`` pixels of ``channels`` (1-4) streamed into the binary
    file ``fh`` a few rows at a time, top row first, so a bake never holds the whole file: the IDAT holds a zlib
    stream of stored blocks, one per row (filter byte 0, none, and the row), whose sizes are known up front, and
    the zlib checksum and the chunk's CRC are kept as the rows go.

    ``rows(count)``: the (count, W, C) big-endian uint16 texels of the next ``count`` rows (a buffer reused from
    one call to the next); ``write()`` appends them; ``close()`` (after the last row) writes the checksums and
    the end of the file. ``slot`` (0 or 1) picks one of two buffers, so the next rows can be filled (on another
    thread) while the last ones are written: ``write(slot)`` appends that buffer's rows."""

    def __init__(self, fh: BinaryIO, height: int, width: int, channels: int):
        if not stored_row_fits(width, channels):
            raise ValueError(f"A row of {width} pixels of {channels} 16-bit channels does not fit one stored block")
        self.fh, self.height, self.width, self.c = fh, height, width, channels
        self.row = 1 + width * channels * 2
        ihdr = _chunk(b"IHDR", struct.pack(">2I5B", width, height, 16, {1: 0, 2: 4, 3: 2, 4: 6}[channels], 0, 0, 0))
        stream = 2 + height * (5 + self.row) + 4  # zlib header, blocks, Adler-32
        idat = b"IDAT" + bytes((0x78, 0x01))  # deflate, 32K window, no dictionary, fastest
        fh.write(b"\x89PNG\r\n\x1a\n" + ihdr + struct.pack(">I", stream) + idat)
        self.crc = zlib.crc32(idat)  # the chunk's CRC covers its type and data
        self.adler = 1
        self.y = 0
        # per slot, (count, 5 + row) uint8: each row's stored block header and row
        self._blocks: list[np.ndarray | None] = [None, None]

    def rows(self, count: int, slot: int = 0) -> np.ndarray:
        blocks = self._blocks[slot]
        if blocks is None or len(blocks) != count:
            blocks = self._blocks[slot] = np.zeros((count, 5 + self.row), dtype=np.uint8)
            blocks[:, 1:5] = np.frombuffer(struct.pack("<2H", self.row, self.row ^ 0xFFFF), np.uint8)  # LEN, NLEN
        return blocks[:, 6:].view(">u2").reshape(count, self.width, self.c)  # after each row's filter byte

    def write(self, slot: int = 0) -> None:
        blocks = self._blocks[slot]
        if blocks is None:
            raise ValueError("StoredPng16Writer.write() before rows(): there are no rows to write")
        count = len(blocks)
        if self.y + count > self.height:
            raise ValueError(f"{self.y + count} rows written into a PNG of {self.height}")
        blocks[:, 0] = 0
        if self.y + count == self.height:
            blocks[-1, 0] = 1  # BFINAL on the last block
        fast = fast_adler32()
        if fast is not None:  # (the rows' addresses: each row's filter byte and texels after its block header)
            base, stride = blocks.ctypes.data + 5, blocks.shape[1]
            for r in range(count):
                self.adler = fast(self.adler, base + r * stride, self.row)
        else:
            for r in range(count):  # the checksum of the stream's data: each row's filter byte and texels
                self.adler = zlib.adler32(blocks[r, 5:].data, self.adler)  # memoryviews: numpy is not typed a buffer
        crc = fast_crc32()
        if crc is not None:
            self.crc = crc(self.crc, blocks.ctypes.data, blocks.nbytes)
        else:
            self.crc = zlib.crc32(blocks.data, self.crc)
        self.fh.write(blocks.data)
        self.y += count

    def close(self) -> None:
        if self.y != self.height:
            raise ValueError(f"{self.y} of the PNG's {self.height} rows were written")
        tail = struct.pack(">I", self.adler)
        self.fh.write(tail + struct.pack(">I", zlib.crc32(tail, self.crc) & 0xFFFFFFFF) + _chunk(b"IEND", b""))
