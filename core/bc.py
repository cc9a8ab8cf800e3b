"""Block compression BC1 (DXT1), BC3 (DXT5) and BC4 (one channel), pure numpy: the encoder and decoder behind DDS
textures (BC7: ``core.bc7``).

Layout (the Direct3D block-compression spec): the image is cut into 4x4-texel blocks, stored row by row over the
blocks (top-left block first, as DDS files hold them). A block that runs past the right or bottom edge is padded by
repeating the last column or row, so padding never brings in a colour the image does not have; the decoders crop
back to the image's size. Every block is one little-endian 64-bit word per 8 bytes:

- BC1 colour block (8 bytes): endpoint ``c0`` (RGB565, bits 0-15), endpoint ``c1`` (bits 16-31), then sixteen 2-bit
  indices (texel 0, the block's top-left, in bits 32-33, row by row). ``c0 > c1`` (as integers): four colours
  ``c0, c1, (2 c0 + c1) / 3, (c0 + 2 c1) / 3``. ``c0 <= c1``: three colours ``c0, c1, (c0 + c1) / 2`` and index 3 is
  transparent black (RGBA 0, 0, 0, 0).
- BC4 block (8 bytes): one channel, stored as BC3's alpha block; GPUs sample it as red (R, 0, 0, 1), and so does
  ``decode_bc4``.
- BC3 block (16 bytes): an alpha block then a BC1-style colour block, which BC3 always decodes with four colours
  (whatever the endpoint order). Alpha block: ``a0`` (bits 0-7), ``a1`` (bits 8-15), sixteen 3-bit indices (texel 0
  in bits 16-18). ``a0 > a1``: eight values ``a0, a1`` and ``((7 - k) a0 + k a1) / 7`` for k = 1..6; ``a0 <= a1``:
  six values ``a0, a1``, ``((5 - k) a0 + k a1) / 5`` for k = 1..4, then 0 and 255.

Decoder rounding (what this module's decoders and the encoder's error measure both use): a 565 endpoint is widened
to 8 bits by bit replication (``r8 = r5 << 3 | r5 >> 2``, ``g8 = g6 << 2 | g6 >> 4``); the in-between colours are
integer blends rounded to nearest: ``(2 a + b + 1) // 3``, ``(a + b + 1) // 2`` (halves round up), and for alpha
``(m a0 + (7 - m) a1 + 3) // 7`` and ``(m a0 + (5 - m) a1 + 2) // 5``. GPUs round these blends their own way and
can differ by one level.

Encoder: vectorised over all blocks (in chunks, to bound memory; several chunks at once on threads, ``in_chunks``).
Colour: the principal axis of each block's colours (covariance matrix, power iterations), the extreme projections on
it as endpoints (range fit), then least-squares refinement of the two endpoints for the chosen indices; endpoints
are rounded to 565 and every texel takes the nearest colour (squared RGB distance) of the decoded, quantised
palette. Of the range-fit and refined endpoints each block keeps the one with the lower error. Alpha (BC3): both
modes are tried, the 8-value mode on the block's min/max and the 6-value mode on the min/max of the texels that are
neither 0 nor 255, and the block keeps the mode with the lower squared error. BC1 with ``alpha_ref``: a texel whose
``alpha / 255 < alpha_ref`` is transparent; a block holding one uses the 3-colour mode with those texels at index 3
and endpoints fitted to its other texels.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from . import cpus

FORMATS = {"BC1": 8, "BC3": 16, "BC4": 8, "BC7": 16}  # bytes per 4x4 block (BC7: core.bc7)
# least-squares refinements of the colour endpoints after the range fit (0: range fit only; tests compare the two)
REFINE_STEPS = 2
POWER_ITERATIONS = 8
CHUNK_BLOCKS = 32768  # blocks encoded at once: bounds the temporaries to some tens of MB
MAX_THREADS = 4  # chunks encoded at once at most (each holds its temporaries)
SPLIT_FROM = 2048  # blocks: an image of fewer than twice this is encoded in one chunk
TRANSPARENT_BC1 = np.uint64(0xFFFFFFFF_00000000)  # a BC1 block of 16 transparent texels: c0 = c1 = 0, indices 3
_SHIFT2 = (2 * np.arange(16)).astype(np.uint64)
_SHIFT3 = (3 * np.arange(16)).astype(np.uint64)
# weight of endpoint 0 for each index in the least-squares fit: 4-colour and 3-colour palettes
_WEIGHT4 = np.array([1.0, 0.0, 2.0 / 3.0, 1.0 / 3.0], dtype=np.float32)
_WEIGHT3 = np.array([1.0, 0.0, 0.5, 0.0], dtype=np.float32)


# --- threads ----------------------------------------------------------------------------------------------------

def encode_threads() -> int:
    """Chunks of blocks encoded at once (numpy lets go of Python's lock in its loops): the CPUs this process may
    use, at most ``MAX_THREADS``."""
    return cpus.usable_cpus(MAX_THREADS)


def in_chunks(count: int, chunk: int, work: Callable[[int, int], None]) -> None:
    """``work(start, stop)`` over the blocks ``[0, count)`` in spans of at most ``chunk`` blocks, split further
    (down to ``SPLIT_FROM`` blocks) so that every thread of ``encode_threads()`` gets one, that many at once. Each
    span writes its own rows of the output, so the bytes are the same whatever the threads; the first error is
    raised after every span has stopped."""
    threads = encode_threads()
    size = max(1, min(chunk, max(SPLIT_FROM, -(-count // threads))))
    spans = [(start, min(start + size, count)) for start in range(0, count, size)]
    if threads == 1 or len(spans) == 1:
        for start, stop in spans:
            work(start, stop)
        return
    with ThreadPoolExecutor(max_workers=min(threads, len(spans)), thread_name_prefix="envfx-bc") as pool:
        for done in [pool.submit(work, start, stop) for start, stop in spans]:
            done.result()


# --- sizes and validation ------------------------------------------------------------------------------------

def block_bytes(fmt: str, height: int, width: int) -> int:
    """Bytes of a ``height`` x ``width`` image in ``fmt`` ("BC1" and "BC4": 8 bytes a block, "BC3" and "BC7": 16):
    ``ceil(height / 4)`` by ``ceil(width / 4)`` blocks, at least one each way (the DDS rule, so a size of 0 still
    counts one block)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown block format {fmt!r}: use one of {', '.join(FORMATS)}")
    if height < 0 or width < 0:
        raise ValueError(f"image size {height}x{width} is negative")
    return FORMATS[fmt] * max(1, math.ceil(height / 4)) * max(1, math.ceil(width / 4))


def _check_image(rgba: npt.NDArray[np.uint8]) -> None:
    if not isinstance(rgba, np.ndarray) or rgba.dtype != np.uint8:
        dtype = getattr(rgba, "dtype", type(rgba).__name__)
        raise ValueError(f"the image must be a uint8 numpy array, got {dtype}: convert it with to_uint8 first")
    if rgba.ndim != 3 or rgba.shape[2] != 4 or rgba.shape[0] < 1 or rgba.shape[1] < 1:
        raise ValueError(f"the image must be (height, width, 4) RGBA with height and width >= 1, "
                         f"got shape {rgba.shape}")


def _check_data(data: bytes | bytearray | memoryview, fmt: str, height: int, width: int) -> None:
    if height < 1 or width < 1:
        raise ValueError(f"image size {height}x{width}: height and width must be at least 1")
    expected = block_bytes(fmt, height, width)
    if len(data) != expected:
        raise ValueError(f"{fmt} data of a {height}x{width} image is {expected} bytes, got {len(data)}")


# --- blocks --------------------------------------------------------------------------------------------------

def _to_blocks(rgba: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """(H, W, 4) -> (blocks, 16, 4), blocks row by row, texels row by row; edges padded by repetition."""
    h, w = rgba.shape[:2]
    bh, bw = -(-h // 4), -(-w // 4)
    padded = np.pad(rgba, ((0, 4 * bh - h), (0, 4 * bw - w), (0, 0)), mode="edge")
    return np.ascontiguousarray(padded.reshape(bh, 4, bw, 4, 4).transpose(0, 2, 1, 3, 4)).reshape(bh * bw, 16, 4)


def take_rows(a: npt.NDArray, idx: npt.NDArray) -> npt.NDArray:
    """``out[b, j] = a[b, idx[b, j]]`` for (n, k, ...) ``a`` and (n, m) integer ``idx`` in 0..k-1: (n, m, ...), as
    ``np.take_along_axis`` along axis 1 but through one flat ``np.take`` (a row of up to 8 bytes read as one
    unsigned integer): numpy's ``take_along_axis`` builds an index grid per axis, several times slower."""
    n, k = a.shape[:2]
    tail = a.shape[2:]
    rows = np.ascontiguousarray(a).reshape(n * k, -1)
    flat = idx.astype(np.intp) + (np.arange(n, dtype=np.intp) * k)[:, None]
    size = rows.shape[1] * rows.dtype.itemsize
    if size in (1, 2, 4, 8):
        got = np.take(rows.view(f"u{size}").reshape(-1), flat).view(a.dtype)
    else:
        got = rows[flat]
    return got.reshape(n, idx.shape[1], *tail)


def _from_blocks(blocks: npt.NDArray[np.uint8], height: int, width: int) -> npt.NDArray[np.uint8]:
    """(blocks, 16, c) -> (height, width, c), the padding cropped off."""
    bh, bw = -(-height // 4), -(-width // 4)
    c = blocks.shape[2]
    image = blocks.reshape(bh, bw, 4, 4, c).transpose(0, 2, 1, 3, 4).reshape(4 * bh, 4 * bw, c)
    return np.ascontiguousarray(image[:height, :width])


# --- palettes (shared by the decoders and the encoder's error measure) ----------------------------------------

def _expand565(c: npt.NDArray[np.uint64]) -> npt.NDArray[np.int32]:
    """RGB565 integers -> (..., 3) 8-bit RGB by bit replication."""
    v = c.astype(np.int32)
    r, g, b = (v >> 11) & 31, (v >> 5) & 63, v & 31
    return np.stack([(r << 3) | (r >> 2), (g << 2) | (g >> 4), (b << 3) | (b >> 2)], axis=-1)


def _colour_palette(c0: npt.NDArray[np.uint64], c1: npt.NDArray[np.uint64],
                    four: npt.NDArray[np.bool_] | bool) -> npt.NDArray[np.int32]:
    """(n, 4, 3) RGB palette of colour blocks; ``four`` per block: 4-colour mode, else 3 colours and black."""
    p0, p1 = _expand565(c0), _expand565(c1)
    four = np.broadcast_to(np.asarray(four)[..., None], p0.shape)
    p2 = np.where(four, (2 * p0 + p1 + 1) // 3, (p0 + p1 + 1) // 2)
    p3 = np.where(four, (p0 + 2 * p1 + 1) // 3, 0)
    return np.stack([p0, p1, p2, p3], axis=-2)


def _alpha_palette(a0: npt.NDArray[np.int32], a1: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    """(n, 8) alpha palette of BC3 alpha blocks (the mode follows from ``a0 > a1``)."""
    a0, a1 = a0.astype(np.int32)[:, None], a1.astype(np.int32)[:, None]
    m = np.arange(6, 0, -1, dtype=np.int32)[None, :]  # weight of a0 for indices 2..7 (8-value mode)
    eight = (m * a0 + (7 - m) * a1 + 3) // 7
    m = np.arange(4, 0, -1, dtype=np.int32)[None, :]  # weight of a0 for indices 2..5 (6-value mode)
    six = np.concatenate([(m * a0 + (5 - m) * a1 + 2) // 5, np.zeros_like(a0), np.full_like(a0, 255)], axis=1)
    return np.concatenate([a0, a1, np.where(a0 > a1, eight, six)], axis=1)


# --- colour encoder ------------------------------------------------------------------------------------------

def _quantise565(e: npt.NDArray[np.float32]) -> npt.NDArray[np.uint64]:
    """(n, 3) float RGB 0..255 -> RGB565 integers, each channel rounded to its nearest level."""
    e = np.clip(e, 0.0, 255.0)
    r = np.rint(e[:, 0] * (31.0 / 255.0)).astype(np.uint64)
    g = np.rint(e[:, 1] * (63.0 / 255.0)).astype(np.uint64)
    b = np.rint(e[:, 2] * (31.0 / 255.0)).astype(np.uint64)
    return (r << np.uint64(11)) | (g << np.uint64(5)) | b


def _nearest(x: npt.NDArray[np.float32], w: npt.NDArray[np.float32], c0: npt.NDArray[np.uint64],
             c1: npt.NDArray[np.uint64], four: bool
             ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """Indices of the nearest palette colour for every texel, and each block's weighted squared error."""
    palette = _colour_palette(c0, c1, four).astype(np.float32)
    best = np.full(x.shape[:2], np.inf, dtype=np.float32)
    idx = np.zeros(x.shape[:2], dtype=np.uint8)
    for k in range(4 if four else 3):
        p = palette[:, None, k, :]
        d = (x[..., 0] - p[..., 0]) ** 2 + (x[..., 1] - p[..., 1]) ** 2 + (x[..., 2] - p[..., 2]) ** 2
        closer = d < best
        idx[closer] = k
        np.minimum(best, d, out=best)
    return idx, (best * w).sum(axis=1)


def _principal_axis(cov: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """(n, 3) unit principal axis of (n, 3, 3) covariance matrices by power iteration ((1, 1, 1) for none)."""
    n = cov.shape[0]
    diag = np.einsum("nii->ni", cov)
    v = cov[np.arange(n), np.argmax(diag, axis=1)]  # the largest-variance column: one step from its axis
    for _ in range(POWER_ITERATIONS):
        v = np.einsum("nij,nj->ni", cov, v)
        v /= np.maximum(np.abs(v).max(axis=1, keepdims=True), 1e-30)
    length = np.sqrt((v * v).sum(axis=1, keepdims=True))
    return np.where(length > 1e-12, v / np.maximum(length, 1e-30), np.float32(1.0 / math.sqrt(3.0))
                    ).astype(np.float32)


def _fit_colours(x: npt.NDArray[np.float32], w: npt.NDArray[np.float32], four: bool
                 ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint8]]:
    """Endpoints (565) and indices of colour blocks: range fit on the principal axis, then least-squares
    refinements; each block keeps its best. ``x`` (n, 16, 3) RGB, ``w`` (n, 16) 1 for texels that count, 0 not."""
    count = w.sum(axis=1)
    mean = (x * w[..., None]).sum(axis=1) / np.maximum(count, 1.0)[:, None]
    d = x - mean[:, None, :]
    dw = d * w[..., None]
    axis = _principal_axis(np.einsum("nki,nkj->nij", dw, d))
    t = (d * axis[:, None, :]).sum(axis=2)
    used = w > 0
    t_hi = np.where(used, t, -np.inf).max(axis=1)
    t_lo = np.where(used, t, np.inf).min(axis=1)
    empty = count == 0
    t_hi[empty], t_lo[empty] = 0.0, 0.0
    c0, c1 = _quantise565(mean + t_hi[:, None] * axis), _quantise565(mean + t_lo[:, None] * axis)
    idx, err = _nearest(x, w, c0, c1, four)

    weights = _WEIGHT4 if four else _WEIGHT3
    for _ in range(REFINE_STEPS):
        a = weights[idx] * w
        b = (1.0 - weights[idx]) * w
        aa, ab, bb = (a * a).sum(axis=1), (a * b).sum(axis=1), (b * b).sum(axis=1)
        ax = np.einsum("nk,nkc->nc", a, x)
        bx = np.einsum("nk,nkc->nc", b, x)
        det = aa * bb - ab * ab
        ok = det > 1e-6 * np.maximum(aa * bb, 1e-30)  # the indices use both endpoints
        safe = np.where(ok, det, 1.0)[:, None]
        r0 = _quantise565((bb[:, None] * ax - ab[:, None] * bx) / safe)
        r1 = _quantise565((aa[:, None] * bx - ab[:, None] * ax) / safe)
        r_idx, r_err = _nearest(x, w, r0, r1, four)
        better = ok & (r_err < err)
        c0, c1 = np.where(better, r0, c0), np.where(better, r1, c1)
        idx = np.where(better[:, None], r_idx, idx)
        err = np.where(better, r_err, err)
    return c0, c1, idx


def _colour_words(x: npt.NDArray[np.float32], w: npt.NDArray[np.float32], four: bool) -> npt.NDArray[np.uint64]:
    """64-bit colour blocks in the asked mode: 4 colours (``c0 > c1``) or 3 colours and transparent black
    (``c0 <= c1``; texels of weight 0 get index 3). 4-colour blocks of one colour (a card's filled background)
    are written straight away: both endpoints its 565 colour, every index 0, as the fit would write them."""
    if not four:
        return _fitted_words(x, w, four)
    same = (x == x[:, :1]).all(axis=(1, 2))
    if not same.any():
        return _fitted_words(x, w, four)
    out = np.empty(len(x), dtype=np.uint64)
    c = _quantise565(x[same, 0])
    out[same] = c | (c << np.uint64(16))
    out[~same] = _fitted_words(x[~same], w[~same], four)
    return out


def _fitted_words(x: npt.NDArray[np.float32], w: npt.NDArray[np.float32], four: bool) -> npt.NDArray[np.uint64]:
    """``_colour_words`` by the fit (range fit on the main axis, least-squares refinements)."""
    c0, c1, idx = _fit_colours(x, w, four)
    if four:
        swap = c0 < c1  # 4-colour mode needs c0 > c1: swap the endpoints, and indices 0<->1, 2<->3
        idx = np.where(swap[:, None], np.array([1, 0, 3, 2], dtype=np.uint8)[idx], idx)
        idx[c0 == c1] = 0  # equal endpoints read as 3-colour mode: index 3 would be black, 0..2 are all c0
    else:
        swap = c0 > c1  # 3-colour mode needs c0 <= c1: swap the endpoints and indices 0<->1
        idx = np.where(swap[:, None], np.array([1, 0, 2, 3], dtype=np.uint8)[idx], idx)
        idx[w == 0] = 3
    c0, c1 = np.where(swap, c1, c0), np.where(swap, c0, c1)
    bits = (idx.astype(np.uint64) << _SHIFT2).sum(axis=1, dtype=np.uint64)
    return c0 | (c1 << np.uint64(16)) | (bits << np.uint64(32))


# --- alpha encoder -------------------------------------------------------------------------------------------

def _alpha_try(a: npt.NDArray[np.int32], a0: npt.NDArray[np.int32], a1: npt.NDArray[np.int32]
               ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Nearest alpha indices for the given endpoints and each block's squared error."""
    palette = _alpha_palette(a0, a1)
    d = (a[:, :, None] - palette[:, None, :]) ** 2
    idx = d.argmin(axis=2)
    return idx, np.take_along_axis(d, idx[..., None], axis=2)[..., 0].sum(axis=1, dtype=np.int64)


def _alpha_words(a: npt.NDArray[np.int32]) -> npt.NDArray[np.uint64]:
    """64-bit BC3 alpha blocks of (n, 16) alpha values: the better of the 8-value and 6-value modes."""
    idx8, err8 = _alpha_try(a, a.max(axis=1), a.min(axis=1))
    mid = (a > 0) & (a < 255)
    lo = np.where(mid, a, 255).min(axis=1)
    hi = np.where(mid, a, 0).max(axis=1)
    none = ~mid.any(axis=1)
    lo[none], hi[none] = 0, 0
    idx6, err6 = _alpha_try(a, lo, hi)
    six = err6 < err8
    a0 = np.where(six, lo, a.max(axis=1)).astype(np.uint64)
    a1 = np.where(six, hi, a.min(axis=1)).astype(np.uint64)
    idx = np.where(six[:, None], idx6, idx8).astype(np.uint64)
    bits = (idx << _SHIFT3).sum(axis=1, dtype=np.uint64)
    return a0 | (a1 << np.uint64(8)) | (bits << np.uint64(16))


# --- public API ----------------------------------------------------------------------------------------------

def encode_bc1(rgba: npt.NDArray[np.uint8], alpha_ref: float | None = None) -> bytes:
    """BC1 (DXT1) blocks of an (H, W, 4) uint8 straight-alpha RGBA image.

    ``alpha_ref`` None: every block is opaque (4-colour mode; alpha is ignored and decodes as 255). ``alpha_ref`` in
    (0, 1]: texels with ``alpha / 255 < alpha_ref`` become transparent black (3-colour mode, index 3), every other
    texel decodes with alpha 255."""
    _check_image(rgba)
    if alpha_ref is not None and not (isinstance(alpha_ref, numbers.Real) and 0.0 < alpha_ref <= 1.0):
        raise ValueError(f"alpha_ref must be in (0, 1] (or None for an opaque texture), got {alpha_ref!r}")
    blocks = _to_blocks(rgba)
    words = np.empty(len(blocks), dtype=np.uint64)

    def encode(start, stop):
        chunk = blocks[start:stop]
        x = chunk[..., :3].astype(np.float32)
        if alpha_ref is None:
            words[start:stop] = _colour_words(x, np.ones(chunk.shape[:2], np.float32), True)
            return
        opaque = chunk[..., 3].astype(np.float64) / 255.0 >= alpha_ref
        w = opaque.astype(np.float32)
        cut = ~opaque.all(axis=1)
        gone = ~opaque.any(axis=1)  # nothing drawn: endpoints 0, every index 3 (most of a cut-out card's blocks)
        part = cut & ~gone
        out = np.empty(len(chunk), dtype=np.uint64)
        out[~cut] = _colour_words(x[~cut], w[~cut], True)
        out[part] = _colour_words(x[part], w[part], False)
        out[gone] = TRANSPARENT_BC1
        words[start:stop] = out

    in_chunks(len(blocks), CHUNK_BLOCKS, encode)
    return words.astype("<u8").tobytes()


def encode_bc3(rgba: npt.NDArray[np.uint8]) -> bytes:
    """BC3 (DXT5) blocks of an (H, W, 4) uint8 straight-alpha RGBA image: interpolated 8-bit alpha plus a
    4-colour BC1 colour block."""
    _check_image(rgba)
    blocks = _to_blocks(rgba)
    words = np.empty((len(blocks), 2), dtype=np.uint64)

    def encode(start, stop):
        chunk = blocks[start:stop]
        words[start:stop, 0] = _alpha_words(chunk[..., 3].astype(np.int32))
        words[start:stop, 1] = _colour_words(chunk[..., :3].astype(np.float32), np.ones(chunk.shape[:2], np.float32),
                                             True)

    in_chunks(len(blocks), CHUNK_BLOCKS, encode)
    return words.astype("<u8").tobytes()


def encode_bc4(rgba: npt.NDArray[np.uint8], channel: int = 3) -> bytes:
    """BC4 (BC4_UNORM) blocks of channel ``channel`` (0..3: R, G, B, A) of an (H, W, 4) uint8 image: BC3's alpha
    block (the better of its 8-value and 6-value modes) for that channel alone; the others are not stored."""
    _check_image(rgba)
    if channel not in (0, 1, 2, 3):
        raise ValueError(f"channel must be 0, 1, 2 or 3 (R, G, B or A), got {channel!r}")
    blocks = _to_blocks(rgba)
    words = np.empty(len(blocks), dtype=np.uint64)

    def encode(start, stop):
        words[start:stop] = _alpha_words(blocks[start:stop, :, channel].astype(np.int32))

    in_chunks(len(blocks), CHUNK_BLOCKS, encode)
    return words.astype("<u8").tobytes()


def _decode_alpha(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """(n, 16) values of 64-bit alpha (BC3) or BC4 blocks."""
    palette = _alpha_palette((words & np.uint64(0xFF)).astype(np.int32),
                             ((words >> np.uint64(8)) & np.uint64(0xFF)).astype(np.int32))
    idx = ((words >> np.uint64(16))[:, None] >> _SHIFT3) & np.uint64(7)
    return take_rows(palette, idx).astype(np.uint8)


def _decode_colour(words: npt.NDArray[np.uint64], always_four: bool) -> npt.NDArray[np.uint8]:
    """(n, 16, 4) RGBA texels of 64-bit colour blocks."""
    c0 = words & np.uint64(0xFFFF)
    c1 = (words >> np.uint64(16)) & np.uint64(0xFFFF)
    four = np.ones(len(words), dtype=bool) if always_four else c0 > c1
    rgb = _colour_palette(c0, c1, four)
    alpha = np.full(rgb.shape[:2] + (1,), 255, dtype=np.int32)
    alpha[~four, 3] = 0
    palette = np.concatenate([rgb, alpha], axis=2).astype(np.uint8)
    idx = ((words >> np.uint64(32))[:, None] >> _SHIFT2) & np.uint64(3)
    return take_rows(palette, idx)


def decode_bc1(data: bytes, height: int, width: int) -> npt.NDArray[np.uint8]:
    """(height, width, 4) uint8 RGBA of BC1 data (transparent texels of 3-colour blocks are 0, 0, 0, 0)."""
    _check_data(data, "BC1", height, width)
    words = np.frombuffer(data, dtype="<u8").astype(np.uint64)
    return _from_blocks(_decode_colour(words, False), height, width)


def decode_bc3(data: bytes, height: int, width: int) -> npt.NDArray[np.uint8]:
    """(height, width, 4) uint8 RGBA of BC3 data (the colour blocks always read as 4-colour blocks)."""
    _check_data(data, "BC3", height, width)
    words = np.frombuffer(data, dtype="<u8").astype(np.uint64).reshape(-1, 2)
    texels = _decode_colour(words[:, 1], True)
    texels[..., 3] = _decode_alpha(words[:, 0])
    return _from_blocks(texels, height, width)


def decode_alpha(data: bytes, fmt: str, height: int, width: int) -> npt.NDArray[np.uint8]:
    """(height, width) uint8: the alpha of BC1 data (255, or 0 where a 3-colour block's index is 3) or BC3 data, or
    BC4's one channel, as ``decode_bc1``, ``decode_bc3`` and ``decode_bc4`` give it, without decoding the colour
    (the coverage check reads this channel alone)."""
    if fmt not in ("BC1", "BC3", "BC4"):
        raise ValueError(f"decode_alpha reads BC1, BC3 or BC4, not {fmt!r}")
    _check_data(data, fmt, height, width)
    words = np.frombuffer(data, dtype="<u8").astype(np.uint64)
    if fmt == "BC1":
        three = (words & np.uint64(0xFFFF)) <= ((words >> np.uint64(16)) & np.uint64(0xFFFF))
        idx = ((words >> np.uint64(32))[:, None] >> _SHIFT2) & np.uint64(3)
        alpha = np.where(three[:, None] & (idx == 3), 0, 255).astype(np.uint8)
    else:
        alpha = _decode_alpha(words[::2] if fmt == "BC3" else words)
    return _from_blocks(alpha[..., None], height, width)[..., 0]


def decode_bc4(data: bytes, height: int, width: int) -> npt.NDArray[np.uint8]:
    """(height, width, 4) uint8 of BC4 data as GPUs sample it: the channel in R, G and B 0, A 255."""
    _check_data(data, "BC4", height, width)
    words = np.frombuffer(data, dtype="<u8").astype(np.uint64)
    texels = np.zeros((len(words), 16, 4), dtype=np.uint8)
    texels[..., 0] = _decode_alpha(words)
    texels[..., 3] = 255
    return _from_blocks(texels, height, width)
