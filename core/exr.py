"""OpenEXR writing in pure numpy + zlib (Blender ships no OpenEXR Python module): single-part scanline files,
32-bit float (FLOAT) or 16-bit half (HALF) channels, ZIP compression (16 scanlines per block) or none.

Layout (OpenEXR file format, version 2): magic, version, header attributes (channels, compression, dataWindow,
displayWindow, lineOrder, pixelAspectRatio, screenWindowCenter, screenWindowWidth), the chunk offset table, then
per block: y, byte count, data. A block's data is, scanline by scanline, each channel's row (channels sorted by
name). ZIP blocks are the raw block bytes split into even and odd bytes, delta-coded, then deflated; a block
that would not get smaller is stored raw (readers tell by its size).

``read_exr`` reads back what ``write_exr`` writes (tests and checks); real readers (Blender's
``bpy.data.images.load``) read the files too. Shared by the bakes that write float images (gas giant, snow).
"""

from __future__ import annotations

import math
import os
import struct
import threading
from typing import BinaryIO
import zlib

import numpy as np
import numpy.typing as npt

MAGIC = 20000630
NO_COMPRESSION, ZIP_COMPRESSION = 0, 3
_LINES = {NO_COMPRESSION: 1, ZIP_COMPRESSION: 16}
HALF, FLOAT = 1, 2
_DTYPES = {HALF: "<f2", FLOAT: "<f4"}


_HALF_SHIFT = 2.0 ** -112  # a float32 times this has, shifted right 13 bits, a half float's exponent and mantissa
HALF_LIMIT = 65504.0  # the largest half float
_THREAD = threading.local()


def to_half(values: npt.NDArray[np.float32], out: np.ndarray, scale: float = 1.0, work: np.ndarray | None = None,
            limit: float | None = None) -> np.ndarray:
    """``out[...] = values * scale`` as half floats (``out``: float16 or uint16, the shape of ``values``, any
    strides), rounded to nearest even as numpy's cast, in about half its time (numpy converts one value at a time).

    ``values * scale * 2**-112`` in float32 is the half float's bits shifted left by 13, with its sign at bit 31
    (the scale moves the half range onto float32's normal numbers and the half's subnormals onto float32's): the
    13 low bits are rounded off (to even) in integers, then the sign moved down. The same bits as numpy for every
    value a half holds as a normal number (magnitude 6.1e-5 and more); below, where the multiply itself rounds,
    a value within 2**-37 of a rounding tie (one in a few thousand of those between 3e-8 and 6.1e-5) can land one
    subnormal step (6e-8) off. Infinite, NaN and out-of-range values (beyond 65504) are converted by numpy, as is
    all of it on a thread that flushes subnormal floats to zero. ``limit``: the largest magnitude of
    ``values * scale`` when the caller knows it (finite), which saves the check; ``work``: a (2, *values.shape)
    uint32 buffer to reuse."""
    shape = values.shape
    if work is None or work.shape[1:] != shape:
        work = np.empty((2, *shape), np.uint32)
    y, t = work[0], work[1]
    known = limit is not None and float(limit) <= HALF_LIMIT
    if not math.isfinite(scale) or not _keeps_subnormals():
        return _numpy_half(values, out, scale)
    np.multiply(values, np.float32(np.float32(scale) * np.float32(_HALF_SHIFT)), out=y.view(np.float32))
    np.right_shift(y, 13, out=t)
    np.bitwise_and(t, 1, out=t)  # round to even: add 0xfff, and one more when the kept bits are odd
    t += y
    t += 0xFFF
    t >>= 13  # the sign at bit 18, then the half's 15 bits of exponent and mantissa
    if not known and t.size and np.bitwise_and(t, 0x3FFFF, out=y).max() > 0x7C00:  # inf, NaN or beyond 65504
        return _numpy_half(values, out, scale)
    np.right_shift(t, 3, out=y)
    np.bitwise_and(y, 0x8000, out=y)
    np.bitwise_or(t, y, out=out.view(np.uint16), casting="unsafe")
    return out


def _numpy_half(values, out, scale):
    half = out.view(np.float16)
    with np.errstate(over="ignore", invalid="ignore"):  # beyond 65504: infinite, as the callers know
        if scale == 1.0:
            np.copyto(half, values, casting="unsafe")
        else:
            np.multiply(values, np.float32(scale), out=half, casting="unsafe")
    return out


def _keeps_subnormals() -> bool:
    """False on a thread that flushes subnormal floats to zero (to_half's multiply needs them); asked once a
    thread."""
    keeps = getattr(_THREAD, "keeps_subnormals", None)
    if keeps is None:
        keeps = _THREAD.keeps_subnormals = bool(np.float32(2.0 ** -130) * np.float32(1.0) != 0)
    return keeps


def _attr(name: str, kind: str, data: bytes) -> bytes:
    return name.encode() + b"\0" + kind.encode() + b"\0" + struct.pack("<i", len(data)) + data


def _zip_pack(raw: bytes, level: int) -> bytes:
    b = np.frombuffer(raw, dtype=np.uint8)
    t = np.concatenate([b[0::2], b[1::2]])  # even bytes, then odd bytes
    d = t.copy()
    d[1:] = t[1:] - t[:-1] + np.uint8(128)  # uint8 arithmetic wraps mod 256
    return zlib.compress(d.tobytes(), level)


def _zip_unpack(data: bytes, size: int) -> bytes:
    d = np.frombuffer(zlib.decompress(data), dtype=np.uint8)
    if d.size != size:
        raise ValueError(f"EXR block inflates to {d.size} bytes, expected {size}")
    t = np.cumsum(d.astype(np.int64) - np.r_[0, np.full(d.size - 1, 128)]) & 255
    t = t.astype(np.uint8)
    half = (size + 1) // 2
    out = np.empty(size, dtype=np.uint8)
    out[0::2] = t[:half]
    out[1::2] = t[half:]
    return out.tobytes()


def _header(h: int, w: int, channels: str, compression: int, half: bool) -> tuple:
    """(channel order sorted by name, header bytes) of a file of ``h`` x ``w`` pixels."""
    c = len(channels)
    order = sorted(range(c), key=lambda k: channels[k])  # channels are stored sorted by name
    kind = HALF if half else FLOAT
    chlist = b"".join(channels[k].encode() + b"\0" + struct.pack("<iB3xii", kind, 0, 1, 1) for k in order) + b"\0"
    box = struct.pack("<4i", 0, 0, w - 1, h - 1)
    header = (struct.pack("<ii", MAGIC, 2) + _attr("channels", "chlist", chlist)
              + _attr("compression", "compression", bytes([compression]))
              + _attr("dataWindow", "box2i", box) + _attr("displayWindow", "box2i", box)
              + _attr("lineOrder", "lineOrder", b"\0") + _attr("pixelAspectRatio", "float", struct.pack("<f", 1.0))
              + _attr("screenWindowCenter", "v2f", struct.pack("<ff", 0.0, 0.0))
              + _attr("screenWindowWidth", "float", struct.pack("<f", 1.0)) + b"\0")
    return order, header


def _prepare(pixels, channels, compression, half):
    """(float32 (H, W, C) array, channel order sorted by name, header bytes) for a file of ``pixels``."""
    arr = np.asarray(pixels, dtype=np.float32)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"Cannot write an EXR of shape {arr.shape}: use (H, W, C)")
    h, w, c = arr.shape
    if channels is None:
        channels = {1: "Y", 2: "YA", 3: "RGB", 4: "RGBA"}.get(c)
    if channels is None or len(channels) != c:
        raise ValueError(f"EXR channels {channels!r} do not match {c} image channels")
    if compression not in _LINES:
        raise ValueError(f"EXR compression {compression}: use {NO_COMPRESSION} (none) or {ZIP_COMPRESSION} (ZIP)")
    order, header = _header(h, w, channels, compression, half)
    return arr, order, header


def uncompressed_file(height: int, width: int, channels: str, half: bool = False) -> tuple:
    """An uncompressed EXR file of ``height`` x ``width`` pixels to be filled in place: (uint8 array of the whole
    file, header and offset table written; the (H, C, W) view of its pixel data, the channel planes in name order;
    the plane of each of ``channels``). A bake writes its rows as they come, then ``fh.write``s the array."""
    c = len(channels)
    order, header = _header(height, width, channels, NO_COMPRESSION, half)
    block = np.dtype([("y", "<i4"), ("size", "<i4"), ("data", _DTYPES[HALF if half else FLOAT], (c, width))])
    start = len(header) + 8 * height
    buf = np.zeros(start + height * block.itemsize, dtype=np.uint8)
    buf[:len(header)] = np.frombuffer(header, dtype=np.uint8)
    buf[len(header):start] = (start + np.arange(height, dtype="<u8") * block.itemsize).view(np.uint8)
    blocks = buf[start:].view(block)
    blocks["y"] = np.arange(height)
    blocks["size"] = block.itemsize - 8
    return buf, blocks["data"], [order.index(k) for k in range(c)]


class RowWriter:
    """An uncompressed EXR of ``height`` x ``width`` pixels streamed into the binary file ``fh`` a few scanlines at
    a time, in order, so a bake never holds the whole image: every scanline block has the same size, so the
    header and the offset table are written first. ``rows(count)``: the (count, C, W) pixel data of the next
    ``count`` scanlines (the channel planes in name order, ``planes[k]`` the plane of ``channels[k]``; a buffer
    reused from one call to the next, zero at first); ``write()`` appends them; ``close()`` checks that every
    scanline came."""

    def __init__(self, fh: BinaryIO, height: int, width: int, channels: str, half: bool = False):
        c = len(channels)
        order, header = _header(height, width, channels, NO_COMPRESSION, half)
        self.block = np.dtype([("y", "<i4"), ("size", "<i4"), ("data", _DTYPES[HALF if half else FLOAT], (c, width))])
        start = len(header) + 8 * height
        fh.write(header + (start + np.arange(height, dtype="<u8") * self.block.itemsize).tobytes())
        self.fh, self.height, self.y = fh, height, 0
        self.planes = [order.index(k) for k in range(c)]
        self._raw: np.ndarray | None = None  # the scanline blocks' bytes, and them as structured blocks
        self._blocks: np.ndarray | None = None

    def rows(self, count: int) -> np.ndarray:
        if self._blocks is None or len(self._blocks) != count:
            self._raw = np.zeros(count * self.block.itemsize, dtype=np.uint8)
            self._blocks = self._raw.view(self.block)
            self._blocks["size"] = self.block.itemsize - 8
        self._blocks["y"] = self.y + np.arange(count)
        return self._blocks["data"]

    def write(self) -> None:
        if self._blocks is None or self._raw is None:  # set together by rows()
            raise ValueError("RowWriter.write() before rows(): there are no scanlines to write")
        count = len(self._blocks)
        if self.y + count > self.height:
            raise ValueError(f"{self.y + count} scanlines written into an EXR of {self.height}")
        self.fh.write(self._raw.data)  # a memoryview: numpy is not typed a buffer
        self.y += count

    def close(self) -> None:
        if self.y != self.height:
            raise ValueError(f"{self.y} of the EXR's {self.height} scanlines were written")


def encode_exr_array(pixels: npt.ArrayLike, channels: str | None = None, half: bool = False) -> np.ndarray:
    """``encode_exr`` without compression, as a uint8 array (``uncompressed_file`` filled from ``pixels``)."""
    arr, _order, _header = _prepare(pixels, channels, NO_COMPRESSION, half)
    h, w, c = arr.shape
    channels = channels or {1: "Y", 2: "YA", 3: "RGB", 4: "RGBA"}[c]
    buf, data, planes = uncompressed_file(h, w, channels, half)
    for k in range(c):
        data[:, planes[k], :] = arr[:, :, k]
    return buf


def encode_exr(pixels: npt.ArrayLike, channels: str | None = None, compression: int = ZIP_COMPRESSION, level: int = 6,
               half: bool = False) -> bytes:
    """EXR bytes of an (H, W, C) float image, row 0 at the top; ``channels`` names C channels (default "Y",
    "RGB" or "RGBA" by C); pixels are stored as 32-bit floats, or as 16-bit halves with ``half`` (values beyond
    the half range, 65504, become infinite: callers check first)."""
    arr, order, header = _prepare(pixels, channels, compression, half)
    h, w, c = arr.shape
    kind = HALF if half else FLOAT
    lines = _LINES[compression]
    nblocks = (h + lines - 1) // lines
    # (H, C, W): each scanline holds each channel's row in turn
    planar = np.ascontiguousarray(arr[:, :, order].transpose(0, 2, 1)).astype(_DTYPES[kind])
    blocks = []
    for b in range(nblocks):  # a loop over blocks of scanlines, each vectorised
        raw = planar[b * lines:(b + 1) * lines].tobytes()
        data = raw
        if compression == ZIP_COMPRESSION:
            packed = _zip_pack(raw, level)
            if len(packed) < len(raw):
                data = packed
        blocks.append(struct.pack("<ii", b * lines, len(data)) + data)
    offsets = []
    pos = len(header) + 8 * nblocks
    for blk in blocks:
        offsets.append(pos)
        pos += len(blk)
    return header + struct.pack(f"<{nblocks}Q", *offsets) + b"".join(blocks)


def write_exr(path: str, pixels: npt.ArrayLike, channels: str | None = None, compression: int = ZIP_COMPRESSION,
              half: bool = False) -> None:
    data = encode_exr(pixels, channels, compression, half=half)
    with open(path, "wb") as fh:
        fh.write(data)


def read_exr(path: str) -> tuple[npt.NDArray[np.float32], list[str]]:
    """(pixels (H, W, C) float32 in the file's channel order sorted by name, channel names) of an EXR written by
    ``write_exr`` (scanline, FLOAT or HALF channels, all of one type, no or ZIP compression)."""
    with open(path, "rb") as fh:
        return decode_exr(fh.read())


def decode_exr(data: bytes) -> tuple[npt.NDArray[np.float32], list[str]]:
    """``read_exr`` of the file's bytes."""
    magic, version = struct.unpack_from("<ii", data, 0)
    if magic != MAGIC:
        raise ValueError("not an OpenEXR file")
    pos = 8
    attrs = {}
    while data[pos] != 0:
        end = data.index(b"\0", pos)
        name = data[pos:end].decode()
        tend = data.index(b"\0", end + 1)
        size = struct.unpack_from("<i", data, tend + 1)[0]
        attrs[name] = data[tend + 5:tend + 5 + size]
        pos = tend + 5 + size
    pos += 1
    names, kinds = [], set()
    cl = attrs["channels"]
    p = 0
    while cl[p] != 0:
        end = cl.index(b"\0", p)
        names.append(cl[p:end].decode())
        kinds.add(struct.unpack_from("<i", cl, end + 1)[0])
        p = end + 1 + 16
    if len(kinds) != 1 or not kinds <= set(_DTYPES):
        raise ValueError("only files whose channels are all FLOAT or all HALF are read")
    dtype = np.dtype(_DTYPES[kinds.pop()])
    x0, y0, x1, y1 = struct.unpack("<4i", attrs["dataWindow"])
    w, h = x1 - x0 + 1, y1 - y0 + 1
    comp = attrs["compression"][0]
    lines = _LINES[comp]
    nblocks = (h + lines - 1) // lines
    offsets = struct.unpack_from(f"<{nblocks}Q", data, pos)
    c = len(names)
    out = np.empty((h, c, w), dtype=np.float32)
    for off in offsets:
        y, size = struct.unpack_from("<ii", data, off)
        n = min(lines, h - (y - y0))
        raw_size = n * c * w * dtype.itemsize
        blk = data[off + 8:off + 8 + size]
        if size < raw_size:
            blk = _zip_unpack(blk, raw_size)
        out[y - y0:y - y0 + n] = np.frombuffer(blk, dtype=dtype).reshape(n, c, w)
    return out.transpose(0, 2, 1).copy(), names


# --- any OpenEXR file's completeness ----------------------------------------------------------------------

# scanlines per chunk of each OpenEXR compression: NONE, RLE, ZIPS, ZIP, PIZ, PXR24, B44, B44A, DWAA, DWAB
_CHUNK_LINES = {0: 1, 1: 1, 2: 1, 3: 16, 4: 32, 5: 16, 6: 32, 7: 32, 8: 32, 9: 256}


def _levels(size: int, mode: int, rounding: int) -> int:
    """Mip levels of a side of ``size`` texels (OpenEXR tiled files: level mode 1, or one axis of mode 2)."""
    if mode == 0:
        return 1
    n = max(size, 1).bit_length() - 1 if rounding == 0 else (max(size, 1) - 1).bit_length()
    return n + 1


def _tile_count(w: int, h: int, tiledesc: bytes) -> int | None:
    """Chunks of a single-part tiled file (None: a level mode this check does not count)."""
    tw, th, mode = struct.unpack("<IIB", tiledesc[:9])
    level_mode, rounding = mode & 0x0F, mode >> 4
    if level_mode > 2 or tw == 0 or th == 0:
        return None

    def side(size: int, level: int) -> int:
        return max(1, (size >> level) if rounding == 0 else -(-size // (1 << level)))

    def tiles(lw: int, lh: int) -> int:
        return -(-side(w, lw) // tw) * -(-side(h, lh) // th)

    if level_mode == 0:
        return tiles(0, 0)
    if level_mode == 1:
        n = _levels(max(w, h), 1, rounding)
        return sum(tiles(level, level) for level in range(n))
    nx, ny = _levels(w, 1, rounding), _levels(h, 1, rounding)
    return sum(tiles(lx, ly) for lx in range(nx) for ly in range(ny))


def is_exr(path: str) -> bool:
    """Whether the file ``path`` starts as an OpenEXR file does (whatever its name's ending)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return False
    return len(head) == 4 and struct.unpack("<i", head)[0] == MAGIC


def layer_names(path: str) -> list[str]:
    """The layers of a multi-layer OpenEXR file ``path`` (``diffuse`` of ``diffuse.R``...), when every channel of its
    (first) header belongs to one: Blender reads such a file (a render's passes, Blender's own matcaps) as an image of
    no pixels. An empty list for a plain image (R, G, B, A, Y, ...), and for a file that is no OpenEXR or whose
    header cannot be read."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
        if len(head) < 8 or struct.unpack_from("<i", head, 0)[0] != MAGIC:
            return []
        pos = 8
        while head[pos] != 0:
            name_end = head.index(b"\0", pos)
            type_end = head.index(b"\0", name_end + 1)
            length = struct.unpack_from("<i", head, type_end + 1)[0]
            data = head[type_end + 5:type_end + 5 + length]
            if head[pos:name_end] == b"channels":
                names, at = [], 0
                while at < len(data) and data[at] != 0:  # name, then 16 bytes: type, linear, reserved, sampling
                    end = data.index(b"\0", at)
                    names.append(data[at:end].decode("utf-8", "replace"))
                    at = end + 17
                if names and all("." in n for n in names):
                    return list(dict.fromkeys(n.rsplit(".", 1)[0] for n in names))
                return []
            pos = type_end + 5 + length
    except (OSError, IndexError, ValueError, struct.error):
        pass
    return []


def layers_text(path: str) -> str | None:
    """Why Blender reads the OpenEXR file ``path`` as no image when it is a multi-layer one, with what to do; else
    None (``layer_names``)."""
    layers = layer_names(path)
    if not layers:
        return None
    shown = ", ".join(layers[:4]) + (", ..." if len(layers) > 4 else "")
    return (f"it is a multi-layer OpenEXR (layers {shown}), which Blender reads as no image: save the layer you "
            f"want as an image of its own (channels R, G, B, A)")


def file_damage(path: str) -> str | None:
    """Why the OpenEXR file ``path`` cannot be whole, or None: a header cut short, a table of chunk offsets that
    ends past the file's end, a chunk that starts or ends past it (what a copy or a disk that ran out of space leaves
    behind). Single-part scanline and tiled files are checked to their last chunk, multi-part and deep files to the
    end of their headers. For the files Blender is about to load: Blender 4.2's OpenEXR loops for ever on a file
    cut short in its header."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        head = fh.read(min(size, 1 << 22))
        if size < 8 or struct.unpack_from("<i", head, 0)[0] != MAGIC:
            return "it is not an OpenEXR file, or is cut short before its first bytes"
        flags = struct.unpack_from("<I", head, 4)[0]
        tiled, deep, multipart = bool(flags & 0x200), bool(flags & 0x800), bool(flags & 0x1000)
        pos, headers = 8, []
        while True:  # one header, or a multi-part file's headers up to an empty one
            attrs: dict[str, bytes] = {}
            try:
                while head[pos] != 0:
                    name_end = head.index(b"\0", pos)
                    type_end = head.index(b"\0", name_end + 1)
                    length = struct.unpack_from("<i", head, type_end + 1)[0]
                    if length < 0 or type_end + 5 + length > len(head):
                        raise IndexError
                    attrs[head[pos:name_end].decode("latin-1")] = head[type_end + 5:type_end + 5 + length]
                    pos = type_end + 5 + length
            except (IndexError, ValueError, struct.error):
                return f"its header is cut short (the file has {size} bytes)"
            pos += 1
            if attrs:
                headers.append(attrs)
            if not multipart or not attrs:
                break
            if pos >= len(head):
                return f"its header is cut short (the file has {size} bytes)"
        if not headers or "dataWindow" not in headers[0] or "compression" not in headers[0]:
            return "its header lacks the data window or the compression"
        if multipart or deep or len(headers) != 1:
            return None  # (the headers are whole; these chunk tables are not counted here)
        attrs = headers[0]
        x0, y0, x1, y1 = struct.unpack("<4i", attrs["dataWindow"][:16])
        w, h = x1 - x0 + 1, y1 - y0 + 1
        if w <= 0 or h <= 0:
            return None
        if "chunkCount" in attrs:
            count: int | None = struct.unpack("<i", attrs["chunkCount"][:4])[0]
        elif tiled and "tiles" in attrs:
            count = _tile_count(w, h, attrs["tiles"])
        else:
            count = -(-h // _CHUNK_LINES.get(attrs["compression"][0], 256))
        if count is None or count <= 0:
            return None
        table_end = pos + 8 * count
        if table_end > size:
            return f"its table of {count} chunks ends past the end of the file ({size} bytes)"
        fh.seek(pos)
        offsets = np.frombuffer(fh.read(8 * count), dtype="<u8")
        chunk_head = 20 if tiled else 8  # (tile x, y, level x, y; or the scanline's y) and the data's size
        last = int(offsets.max())
        if int(offsets.min()) < table_end or last + chunk_head > size:
            return f"a chunk starts past the end of the file ({size} bytes): it is cut short"
        fh.seek(last + chunk_head - 4)
        length = struct.unpack("<i", fh.read(4))[0]
        if length < 0 or last + chunk_head + length > size:
            return f"its last chunk ends past the end of the file ({size} bytes): it is cut short"
    return None
