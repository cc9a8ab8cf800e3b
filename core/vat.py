"""Vertex animation textures (VAT), pure numpy: an animated mesh's per-frame vertex offsets and normals as
textures a game's vertex shader plays back.

A bake evaluates the mesh at every baked frame and keeps, per vertex, its offset from the rest pose (object space)
and its normal. The textures store one texel per vertex and frame:

- Layout: ``width`` texels per row, ``rows_per_frame = ceil(vertices / width)`` rows per frame, frames one under
  the other (frame 0 at the top of the image), ``height = frames * rows_per_frame``; both sides stay within
  ``max_size`` (8192 by default). Vertex ``i`` of baked frame ``f`` is texel ``x = i % width``,
  ``row = f * rows_per_frame + i // width`` (row 0 = the image's top row). The width is the vertex count spread
  evenly over the fewest rows that hold it, so a frame's rows are full but for at most one texel per row.
- Encodings: ``EXR32`` (32-bit float, exact), ``EXR16`` (half float: about 3 significant digits, and values
  up to 65504) and ``PNG16`` (16-bit integers through a stored remap range per channel: ``value = min + t *
  (max - min)``, ``t`` = the texel / 65535; the error is at most half of ``(max - min) / 65535``). Normals are
  stored as they are in float, and remapped from -1..1 in PNG.
- Packed normals: instead of a separate texture, the normal goes into the position texture's alpha channel,
  octahedral-encoded with two integers of ``bits`` bits (``a * 2**bits + b``): 11 bits each in an EXR32 float
  (integers below 2**22, so a shader's float math on them, rounding included, stays exact), 8 bits each in a
  PNG16 texel. Half floats hold too few digits for that.
- Coordinate systems: ``BLENDER`` (object space as Blender has it), or the axes and units a game imports through
  ``core.bend_engines`` (GODOT glTF ``(x, z, -y)``, UNITY FBX ``(-x, z, -y)``, UNREAL FBX ``100 * (x, -y, z)``);
  offsets are scaled to the engine's units, normals only turned.

``vat_json`` gives the metadata a shader needs; ``encode_texture`` / ``decode_texture`` turn per-frame arrays into
file bytes and back (the decoder is what a shader does, and what the tests hold the node-group player to).
"""

from __future__ import annotations

import io
import math
import mmap
import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import BinaryIO, TypeAlias

import numpy as np
import numpy.typing as npt

from . import bend_engines, exr, png

ENCODINGS = ("EXR16", "EXR32", "PNG16")
NORMAL_MODES = ("NONE", "TEXTURE", "PACKED")
ENGINES = ("BLENDER",) + tuple(bend_engines.ENGINES)
MAX_TEXTURE_SIZE = 8192
PLAIN_PAGES_FROM = 64 << 20  # bytes: plain_pages' smallest mapped buffer
# Linux 5.14+ madvise: a range's pages made present and writable in one call (fewer traps than a fault per page)
MADV_POPULATE_WRITE = 23
_POPULATE = [sys.platform.startswith("linux") and hasattr(mmap.mmap, "madvise")]  # [False once refused]
HALF_MAX = 65504.0
PACK_BITS = {"EXR32": 11, "PNG16": 8}
UV_NAME = "EnvFX_VAT"
FORMAT_VERSION = 1
# what the glTF / FBX proxy export is per engine (the axes of core.bend_engines assume that export)
EXPORT_FORMAT = {"BLENDER": None, "GODOT": "GLTF", "UNITY": "FBX", "UNREAL": "FBX"}
# file-name characters Windows, macOS or Linux refuse, and the names Windows reserves
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}


# positions within this of the origin have finite normals (the cross products of their edges stay below float32's
# largest number); beyond it, an EXR32 bake checks the normals too
SANE_COORDINATE = 1e15


class VatError(ValueError):
    """Bad input or settings; the message says what is wrong and what to do."""


# --- frames and layout -------------------------------------------------------------------------------------

def baked_frames(start: int, end: int, step: int = 1, loop_frames: int = 0) -> list:
    """The frames a bake evaluates: ``start, start + step, ...`` up to ``end`` (included), or, with a loop length,
    ``[start, start + loop_frames)`` so that the frame after the last is the first again (a seamless loop)."""
    start, end, step, loop_frames = int(start), int(end), int(step), int(loop_frames)
    if step < 1:
        raise VatError(f"Frame step {step} must be 1 or more")
    if loop_frames > 0:
        if loop_frames % step:
            raise VatError(f"The loop length {loop_frames} is not a multiple of the frame step {step}: the loop would "
                           f"not close; set a step that divides it, or another loop length")
        frames = list(range(start, start + loop_frames, step))
        where = f"a loop of {loop_frames} frame(s) from {start}"
    else:
        if end < start:
            raise VatError(f"The frame range {start} to {end} is empty: set the end frame after the start frame")
        frames = list(range(start, end + 1, step))
        where = f"frames {start} to {end}"
    if len(frames) < 2:
        raise VatError(f"{where[0].upper() + where[1:]} with step {step} is a single frame: a vertex animation needs "
                       f"at least two; widen the frame range (or the loop length) or lower the step")
    return frames


@dataclass(frozen=True)
class Layout:
    vertices: int
    frames: int
    width: int
    rows_per_frame: int

    @property
    def height(self) -> int:
        return self.frames * self.rows_per_frame

    def texels(self) -> tuple:
        """(x, row in frame 0) of every vertex, int arrays."""
        i = np.arange(self.vertices)
        return i % self.width, i // self.width

    def uvs(self) -> np.ndarray:
        """(N, 2) float32 UVs of the texel centres of frame 0, Blender's convention (v = 0 at the image's bottom
        row): u = (x + 0.5) / width, v = 1 - (row + 0.5) / height. Frame f is at v - f * frame_v_step."""
        x, row = self.texels()
        u = (x + 0.5) / self.width
        v = 1.0 - (row + 0.5) / self.height
        return np.stack([u, v], axis=1).astype(np.float32)

    @property
    def frame_v_step(self) -> float:
        return self.rows_per_frame / self.height

    def to_dict(self) -> dict:
        return {"width": self.width, "height": self.height, "rows_per_frame": self.rows_per_frame,
                "vertices": self.vertices, "frames": self.frames, "frame_v_step": self.frame_v_step,
                "texel": "x = i % width; row = frame * rows_per_frame + i // width (row 0 = the image's top row)"}


def plan_layout(vertices: int, frames: int, max_size: int = MAX_TEXTURE_SIZE) -> Layout:
    """The layout of ``vertices`` over ``frames`` within ``max_size`` texels a side, or VatError saying which
    setting to change."""
    vertices, frames, max_size = int(vertices), int(frames), int(max_size)
    if vertices < 1:
        raise VatError("The mesh has no vertices: nothing to bake")
    if max_size < 1:
        raise VatError(f"Maximum texture size {max_size} must be 1 or more")
    rows = -(-vertices // max_size)
    width = -(-vertices // rows)
    height = frames * rows
    if height > max_size:
        most = max_size // rows
        advice = (f"bake at most {most} frames (a larger Frame Step or a shorter range)" if most >= 2 else
                  "the mesh has too many vertices for one texture of this size: use a mesh with fewer vertices")
        raise VatError(f"{vertices} vertices over {frames} frames need {rows} row(s) per frame, {height} rows in all, "
                       f"more than the Maximum Texture Size of {max_size}: {advice}, or raise the Maximum Texture "
                       f"Size if the engine takes larger textures")
    return Layout(vertices, frames, width, rows)


# a PNG16 texture's remap: the (min, max) per channel that the texels 0 and 65535 stand for
Remap: TypeAlias = "tuple[npt.NDArray[np.floating] | Sequence[float], npt.NDArray[np.floating] | Sequence[float]]"


def pack_frames(values: npt.ArrayLike, layout: Layout) -> npt.NDArray[np.float32]:
    """(F, N, C) per-frame values -> (H, W, C) image (row 0 = top); the unused texels at the end of each frame's
    last row are 0."""
    arr = np.asarray(values, dtype=np.float32)
    f, n, c = arr.shape
    assert (f, n) == (layout.frames, layout.vertices), (arr.shape, layout)
    per = layout.rows_per_frame * layout.width
    out = np.zeros((f, per, c), dtype=np.float32)
    out[:, :n] = arr
    return out.reshape(layout.height, layout.width, c)


def unpack_frames(image: npt.ArrayLike, layout: Layout) -> np.ndarray:
    """(H, W, C) image (row 0 = top) -> (F, N, C) per-frame values."""
    arr = np.asarray(image)
    c = arr.shape[2]
    return arr.reshape(layout.frames, layout.rows_per_frame * layout.width, c)[:, :layout.vertices]


# --- coordinate systems ------------------------------------------------------------------------------------

def engine_matrix(engine: str, unit_scale: float = 1.0) -> tuple:
    """(3x3 rotation Blender -> engine, engine units per Blender unit) for object-space vectors."""
    if engine == "BLENDER":
        return np.eye(3), 1.0
    if engine not in bend_engines.ENGINES:
        raise VatError(f"Unknown engine {engine!r}: use one of {', '.join(ENGINES)}")
    try:
        scale = bend_engines.engine_scale(engine, unit_scale)
    except ValueError as exc:
        raise VatError(str(exc)) from None
    return np.asarray(bend_engines.ENGINES[engine][0], dtype=np.float64), float(scale)


def to_engine(vectors: npt.ArrayLike, engine: str, unit_scale: float = 1.0, normal: bool = False
             ) -> npt.NDArray[np.float32]:
    """(..., 3) Blender object-space offsets (scaled to engine units) or normals (only turned) in the engine's
    axes, float32."""
    m, scale = engine_matrix(engine, unit_scale)
    arr = np.asarray(vectors, dtype=np.float32)
    if engine == "BLENDER":
        return arr.copy()
    # every engine's matrix swaps axes and flips signs: one column per row, a gather and a multiply in float32
    # (exact, where a float64 matrix product of a 250-frame bake costs seconds and gigabytes)
    columns = np.argmax(np.abs(m), axis=1)
    factors = m[np.arange(3), columns] * (1.0 if normal else scale)
    return arr[..., columns] * factors.astype(np.float32)


def from_engine_axes(engine: str, unit_scale: float = 1.0) -> np.ndarray:
    """(3, 3) rows: the Blender x, y and z axes of an engine-space offset ``d`` are ``dot(row_i, d)`` (the
    inverse of ``to_engine``: the transpose of the rotation, divided by the scale). The player uses them."""
    m, scale = engine_matrix(engine, unit_scale)
    return (m.T / scale).astype(np.float64)


# --- normals -----------------------------------------------------------------------------------------------

def octahedral_encode(normals: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """(N, 3) unit vectors -> (N, 2) in [-1, 1] (octahedral map)."""
    n = np.asarray(normals, dtype=np.float64)
    n = n / np.maximum(np.abs(n).sum(axis=1, keepdims=True), 1e-30)
    xy = n[:, :2].copy()
    low = n[:, 2] < 0
    sign = np.where(xy[low] >= 0, 1.0, -1.0)
    xy[low] = (1.0 - np.abs(xy[low][:, ::-1])) * sign
    return xy


def octahedral_decode(xy: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """(N, 2) in [-1, 1] -> (N, 3) unit vectors (what a shader does)."""
    xy = np.asarray(xy, dtype=np.float64)
    z = 1.0 - np.abs(xy).sum(axis=1)
    out = np.concatenate([xy, z[:, None]], axis=1)
    low = z < 0
    sign = np.where(xy[low] >= 0, 1.0, -1.0)
    out[low, :2] = (1.0 - np.abs(xy[low][:, ::-1])) * sign
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def pack_normals(normals: npt.ArrayLike, bits: int) -> npt.NDArray[np.float64]:
    """(..., 3) unit normals -> (...) integers ``a * 2**bits + b`` (as float64): the octahedral coordinates
    quantised to ``bits`` bits each."""
    n = np.asarray(normals, dtype=np.float64)
    shape = n.shape[:-1]
    xy = octahedral_encode(n.reshape(-1, 3))
    top = 2 ** bits - 1
    q = np.floor((xy * 0.5 + 0.5) * top + 0.5)
    return (q[:, 0] * 2 ** bits + q[:, 1]).reshape(shape)


def unpack_normals(packed: npt.ArrayLike, bits: int) -> npt.NDArray[np.float64]:
    p = np.floor(np.asarray(packed, dtype=np.float64) + 0.5)
    shape = p.shape
    a = np.floor(p / 2 ** bits)
    b = p - a * 2 ** bits
    xy = np.stack([a, b], axis=-1).reshape(-1, 2) / (2 ** bits - 1) * 2.0 - 1.0
    return octahedral_decode(xy).reshape(shape + (3,))


# --- encodings ---------------------------------------------------------------------------------------------

def file_extension(encoding: str) -> str:
    return ".png" if encoding == "PNG16" else ".exr"


def check_settings(encoding: str, normals: str, engine: str) -> None:
    if encoding not in ENCODINGS:
        raise VatError(f"Unknown encoding {encoding!r}: use one of {', '.join(ENCODINGS)}")
    if normals not in NORMAL_MODES:
        raise VatError(f"Unknown normals mode {normals!r}: use one of {', '.join(NORMAL_MODES)}")
    if engine not in ENGINES:
        raise VatError(f"Unknown engine {engine!r}: use one of {', '.join(ENGINES)}")
    if normals == "PACKED" and encoding not in PACK_BITS:
        raise VatError("Packed normals need EXR32 or PNG16 (a half float holds too few digits for them): choose "
                       "another encoding, or Normals: Texture")


GODOT_PNG16 = ("Godot reads 16-bit PNGs as 8 bits (its PNG import converts them), so a PNG16 VAT plays in steps of "
               "1/255 of its range there: bake EXR32 or EXR16 for Godot")


def settings_warning(encoding: str, engine: str) -> str | None:
    """The warning for settings that bake but do not play right in the engine chosen (None: none)."""
    if encoding == "PNG16" and engine == "GODOT":
        return GODOT_PNG16
    return None


def remap_range(values: npt.ArrayLike, fixed: tuple[float, float] | None = None
               ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(min, max) per channel of (..., C) values for PNG16; a channel that never changes gets a span of 1 (its
    texels are all 0)."""
    if fixed is not None:
        lo, hi = fixed
        c = np.asarray(values).shape[-1]
        return np.full(c, lo, np.float64), np.full(c, hi, np.float64)
    arr = np.asarray(values, dtype=np.float64).reshape(-1, np.asarray(values).shape[-1])
    lo, hi = arr.min(axis=0), arr.max(axis=0)
    hi = np.where(hi > lo, hi, lo + 1.0)
    return lo, hi


def encode_texture(image: npt.ArrayLike, encoding: str, remap: Remap | None = None, raw_channels: Iterable[int] = (),
                   level: int = 0) -> bytes | npt.NDArray[np.uint8]:
    """File bytes of an (H, W, C) float image (row 0 at the top). PNG16: the channels are remapped through
    ``remap`` = (min, max) per channel, except the channels in ``raw_channels``, which hold integers already (packed
    normals) and are stored as they are. EXR: stored as they are (``EXR16`` as half floats; VatError beyond their
    range). ``level``: the zlib level; 0 writes EXR uncompressed and PNG deflate-stored (vertex offsets compress
    by about 40% at best, and compressing them takes several times as long as evaluating the scene). Returns
    bytes, or for an uncompressed EXR a uint8 array of the file (bytes-like: ``fh.write`` takes it)."""
    arr = np.asarray(image, dtype=np.float32)
    c = arr.shape[2]
    if encoding == "PNG16":
        remap = _png16_remap(remap)
        lo = np.asarray(remap[0], dtype=np.float64)[:c].copy()
        span = np.asarray(remap[1], dtype=np.float64)[:c] - lo
        raw = list(raw_channels)
        lo[raw], span[raw] = 0.0, 65535.0  # integers already (packed normals): stored as they are
        return png.encode_png16_from_float(arr, lo, 65535.0 / span, level=level)
    if encoding == "EXR16":
        big = float(np.abs(arr).max()) if arr.size else 0.0
        if big > HALF_MAX:
            raise VatError(f"A value of {big:g} is beyond what a half float holds ({HALF_MAX:g}): choose EXR32")
    channels = {1: "R", 2: "RG", 3: "RGB", 4: "RGBA"}[c]
    if level <= 0:
        return exr.encode_exr_array(arr, channels, half=encoding == "EXR16")
    return exr.encode_exr(arr, channels, exr.ZIP_COMPRESSION, level=level, half=encoding == "EXR16")


def decode_texture(data: bytes, encoding: str, remap: Remap | None = None,
                   raw_channels: Container[int] = ()) -> npt.NDArray[np.float64]:
    """(H, W, C) float64 values of a texture ``encode_texture`` wrote, decoded as a shader does."""
    if encoding == "PNG16":
        lo, hi = _png16_remap(remap)
        q = png.decode_png(bytes(data)).astype(np.float64)
        out = np.empty(q.shape)
        for k in range(q.shape[2]):
            out[..., k] = q[..., k] if k in raw_channels else lo[k] + q[..., k] / 65535.0 * (hi[k] - lo[k])
        return out
    pixels, names = exr.decode_exr(bytes(data))
    order = [names.index(ch) for ch in "RGBA"[:len(names)]]
    return pixels[..., order].astype(np.float64)


def _png16_remap(remap):
    """A PNG16 texture's ``remap``: the (min, max) per channel that 0 and 65535 stand for (ValueError without)."""
    if remap is None:
        raise ValueError("PNG16 needs remap: the (min, max) per channel that 0 and 65535 stand for")
    return remap


def precision(encoding: str, remap: Remap | None = None, bounds_size: float = 1.0, max_abs: float = 1.0) -> float:
    """The largest position error the encoding allows: PNG16 the widest remap span / 65535, EXR16 half a half
    float's step at ``max_abs``, EXR32 1e-5 of the bounds' size."""
    if encoding == "PNG16":
        lo, hi = _png16_remap(remap)
        return float(np.max(np.asarray(hi) - np.asarray(lo))) / 65535.0
    if encoding == "EXR16":
        return max(float(max_abs), 6.1e-5) * 2.0 ** -11
    return 1e-5 * max(float(bounds_size), 1e-6)


# --- the bake's arrays -------------------------------------------------------------------------------------

def topology_change(counts: Sequence[Sequence[int]], frames: Sequence[int]) -> str | None:
    """The message for the first baked frame whose (vertices, edges, faces, corners) differ from the first's, or
    None: a VAT addresses each vertex by its index, so topology must not change."""
    first = tuple(counts[0])
    for frame, c in zip(frames, counts):
        if tuple(c) != first:
            what = ", ".join(f"{name} {a} -> {b}" for name, a, b in zip(("vertices", "edges", "faces", "corners"),
                                                                         first, c) if a != b)
            return (f"the topology changes at frame {frame} ({what} since frame {frames[0]}): a vertex animation "
                    f"texture needs the same vertices in every frame; bake a range before the change, or apply "
                    f"the modifier that adds or removes geometry (remesh, decimate, a particle or boolean "
                    f"modifier) first")
    return None


def not_finite(values: npt.ArrayLike, what: str, frame: int | None = None) -> str:
    """The message for ``values`` ((N, C) per vertex) that hold NaN or infinity: which vertex first, how many, and
    what to do. ``what``: "position", "rest position", "normal" or "attribute 'name'"; ``frame``: the baked frame
    (None: the rest pose)."""
    arr = np.asarray(values)
    bad = ~np.isfinite(arr.reshape(len(arr), -1)).all(axis=1)
    count = int(bad.sum())
    first = int(np.argmax(bad)) if count else 0
    value = arr.reshape(len(arr), -1)[first]
    kind = "not a number (NaN)" if np.isnan(value).any() else "infinite"
    others = f" (and {count - 1} more {'vertex' if count == 2 else 'vertices'})" if count > 1 else ""
    if frame is None:
        return (f"the {what} of vertex {first}{others} is {kind}: a vertex animation texture stores offsets from the "
                f"rest pose; fix the mesh (Mesh > Clean Up, or delete the vertex) and bake again")
    if what == "normal":
        return (f"the normal of vertex {first}{others} is {kind} at frame {frame}: the faces around it have no "
                f"direction (vertices far beyond the scene); fix what moves them, or bake with Normals None")
    if what.startswith("attribute"):
        return (f"the {what} of vertex {first}{others} is {kind} at frame {frame}: fix what writes it, or leave it "
                f"out of Extra Attributes")
    return (f"the {what} of vertex {first}{others} is {kind} at frame {frame}: fix the mesh or what moves it (a "
            f"simulation that blew up, a modifier or driver that divides by zero), or bake a frame range before it")


def is_static(offsets: npt.ArrayLike, normals: npt.ArrayLike | None = None, tolerance: float = 1e-6) -> bool:
    """Whether every frame equals the first (nothing moves over the baked range)."""
    arr = np.asarray(offsets)
    if arr.shape[0] < 2:
        return True
    if float(np.abs(arr[1:] - arr[:1]).max()) > tolerance:
        return False
    if normals is not None:
        n = np.asarray(normals)
        return float(np.abs(n[1:] - n[:1]).max()) <= tolerance
    return True


def loop_gap(first: npt.ArrayLike, after_last: npt.ArrayLike) -> float:
    """How far (largest vertex distance) the frame after a loop's last is from its first: 0 for a seamless loop."""
    return float(np.linalg.norm(np.asarray(after_last, np.float64) - np.asarray(first, np.float64), axis=1).max())


# --- names -------------------------------------------------------------------------------------------------

def file_stem(name: str) -> str:
    """A file-name stem for an object name that every file system takes: letters, digits and marks of any script
    kept (NFC), anything else (``/ \\ : * ? " < > |``, spaces, control characters) becomes ``_``; no leading or
    trailing dot or underscore; Windows' reserved names (CON, NUL, COM1...) get a ``_`` appended; at most 100
    bytes in UTF-8 (whole characters: two stems and the suffixes stay within the 255 bytes file systems take)."""
    base = unicodedata.normalize("NFC", str(name))
    base = "".join(c if c in "-." or unicodedata.category(c)[0] in "LNM" else "_" for c in base)
    base = re.sub(r"_+", "_", base).strip("._")
    base = base.encode("utf-8")[:100].decode("utf-8", "ignore").strip("._") or "mesh"
    if base.split(".")[0].upper() in _RESERVED:
        base += "_"
    return base


def unique_stems(names: Iterable[str], owner: Callable[[str], str | None] | None = None) -> list[str]:
    """``file_stem`` of each name, made unique ignoring case (``Tree`` and ``tree`` -> ``Tree``, ``tree_2``).
    ``owner(stem)``: the object an earlier bake of ``stem`` (in the folder baked into) was of, None for none: a stem
    whose bake is another object's is passed over too (``Tree:1`` baked there, ``Tree_1`` gets ``Tree_1_2``)."""
    out, given = [], set()
    for name in names:
        base = stem = file_stem(name)
        n = 2
        while stem.lower() in given or (owner is not None and owner(stem) not in (None, name)):
            stem, n = f"{base}_{n}", n + 1
        given.add(stem.lower())
        out.append(stem)
    return out


RESERVED_ATTRIBUTES = ("position", "normal")  # the JSON's "textures" keys of the bake's own textures


def check_attribute_names(names: Iterable[str]) -> None:
    """VatError for an extra attribute whose name is a key of the bake's own textures in the JSON ("position",
    "normal"): a game would read it as the offsets or the normals."""
    for name in names:
        if name in RESERVED_ATTRIBUTES:
            raise VatError(f"An extra attribute named {name!r} would take the place of the bake's own {name} "
                           f"texture in the JSON: bake a copy of it under another name (Store Named Attribute, or "
                           f"rename it in the mesh's Attributes)")


def output_names(stem: str, encoding: str, normals: str, extras: Iterable[str] = (), export: str | None = None) -> dict:
    """{role: file name} a bake of ``stem`` writes: position, normal (with Normals: Texture), one per extra
    attribute, the JSON, and the proxy mesh (``export`` GLTF: .glb, FBX: .fbx)."""
    ext = file_extension(encoding)
    names = {"position": f"{stem}_vat_pos{ext}"}
    if normals == "TEXTURE":
        names["normal"] = f"{stem}_vat_nrm{ext}"
    # an attribute's file never takes the bake's own textures' names, nor another attribute's (ignoring case, as
    # Windows and macOS do): "pos" -> _vat_pos_2, "wind a" and "wind_a" -> _vat_wind_a, _vat_wind_a_2
    taken = {"pos", "nrm"}
    for attr in extras:
        base = part = file_stem(attr)
        n = 2
        while part.lower() in taken:
            part, n = f"{base}_{n}", n + 1
        taken.add(part.lower())
        names[f"attr:{attr}"] = f"{stem}_vat_{part}{ext}"
    names["json"] = f"{stem}_vat.json"
    if export == "GLTF":
        names["mesh"] = f"{stem}_vat.glb"
    elif export == "FBX":
        names["mesh"] = f"{stem}_vat.fbx"
    return names


# --- the whole bake: arrays in, files and metadata out -------------------------------------------------------

@dataclass
class VatSettings:
    encoding: str = "EXR32"
    normals: str = "TEXTURE"
    engine: str = "BLENDER"
    unit_scale: float = 1.0
    max_size: int = MAX_TEXTURE_SIZE
    level: int = 0                   # zlib level of the textures: 0 none (fast), 1..9 smaller files

    def validate(self) -> "VatSettings":
        check_settings(self.encoding, self.normals, self.engine)
        engine_matrix(self.engine, self.unit_scale)
        if not 0 <= int(self.level) <= 9:
            raise VatError(f"Compression level {self.level} must be 0 (none) to 9")
        if not 1 <= int(self.max_size) <= 65535:
            raise VatError(f"Maximum texture size {self.max_size} must be 1 to 65535")
        return self


@dataclass
class Encoded:
    files: dict          # file name -> bytes (those not written into the encoder's folder already)
    meta: dict           # the JSON (without the proxy mesh's entries, which the caller adds)
    layout: Layout


def _column_bounds(a) -> tuple:
    """(min, max) per column of an (N, C) array: one strided pass per column (numpy's ``min(axis=0)`` of a narrow
    array is about 20 times slower)."""
    return (np.array([a[:, k].min() for k in range(a.shape[1])]),
            np.array([a[:, k].max() for k in range(a.shape[1])]))


class _Texture:
    """One texture filled frame by frame, channel planes at a time (``put_planes``: (C, N) rows of a frame), frames
    in order:

    - uncompressed EXR: streamed into its file frame by frame (``core.exr.RowWriter``), through a buffer of one
      frame's scanlines;
    - uncompressed PNG16: streamed too (``core.png.StoredPng16Writer``), quantised as the frames come when the
      remap range is known up front (``fixed``: normals, -1..1), else each channel kept as a float32 plane and
      quantised into the file at the end, when the bake's range is known (offsets, attributes);
    - compressed (``level`` > 0), or a PNG row too long for a stored block: a float32 image encoded at the end.

    ``path``: the file streamed into (None: memory, ``encode`` returns the bytes)."""

    def __init__(self, layout: Layout, channels: str, encoding: str, level: int, fixed=None, path=None):
        self.layout, self.encoding, self.level, self.c = layout, encoding, level, len(channels)
        self.path = path
        self.sink: BinaryIO | None = None  # the file streamed into: io.BytesIO when path is None
        self.exr_writer: exr.RowWriter | None = None  # mode "exr"
        self.png_writer: png.StoredPng16Writer | None = None  # mode "png": from the start when fixed, else at encode
        self.mode = "image"
        self.fixed = None
        h, w = layout.height, layout.width
        if encoding != "PNG16" and level <= 0:
            self.mode = "exr"
            self.exr_writer = exr.RowWriter(self._open(), h, w, channels, half=encoding == "EXR16")
        elif encoding == "PNG16" and level <= 0 and png.stored_row_fits(w, self.c):
            self.mode = "png"
            if fixed is not None:  # (lo, hi) per channel: quantised as they come
                lo = np.asarray(fixed[0], np.float64)[:self.c]
                self.fixed = (lo.astype(np.float32)[:, None], (65535.0 / (np.asarray(fixed[1], np.float64)[:self.c]
                                                                          - lo)).astype(np.float32)[:, None])
                self.png_writer = png.StoredPng16Writer(self._open(), h, w, self.c)
            else:
                # every frame's texels are written (encode checks that every frame came) but the unused ones of its
                # last row, zeroed here as pack_frames leaves them
                self.planes_f = plain_pages((self.c, h, w), np.float32)
                used = layout.vertices - (layout.rows_per_frame - 1) * w
                self.planes_f[:, layout.rows_per_frame - 1::layout.rows_per_frame, used:] = 0.0
                self.frames_put = 0
        if self.mode == "image":
            self.image = np.zeros((h, w, self.c), np.float32)
        self._work: np.ndarray | None = None  # the scratch buffer of one frame (_scratch)
        self._half_buffers: dict = {}  # block shape -> exr.to_half's buffer (_half_work)
        self.max_abs = 0.0
        self.write_cpu = 0.0  # seconds of this thread's CPU time spent handing the file's bytes to the system

    def _open(self) -> BinaryIO:
        self.sink = io.BytesIO() if self.path is None else open(self.path, "wb")  # noqa: SIM115 - closed by close()
        return self.sink

    def close(self):
        """Close the file streamed into (a failed bake: its folder is removed next)."""
        if self.sink is not None and self.path is not None:
            self.sink.close()

    def put(self, f: int, values):
        """Write frame ``f``'s (N, C) values into its rows."""
        self.put_planes(f, np.ascontiguousarray(np.asarray(values, np.float32).T))

    def put_planes(self, f: int, planes, factors=None, limits=None):
        """Write frame ``f`` (frames in order): texture channel k is ``planes[k] * factors[k]`` (``planes``: C rows
        of N float32 values, any strides; ``factors``: C floats, default 1), multiplied on the way into the file's
        rows (no other copy of the frame), a frame's full rows in one call and its last, shorter row in another.
        ``limits``: C largest magnitudes of the channels' values when the caller knows them (saves EXR16 a check)."""
        lay = self.layout
        c, n = self.c, len(planes[0])
        first = f * lay.rows_per_frame
        one = np.float32(1.0)
        fac = [one] * c if factors is None else [np.float32(v) for v in factors]
        if self.exr_writer is not None:  # straight into the file's rows (EXR16: converted to half floats there)
            assert self.exr_writer.y == first, (f, self.exr_writer.y)
            rows = self.exr_writer.rows(lay.rows_per_frame)
            half = self.encoding == "EXR16"
            with np.errstate(over="ignore"):  # beyond a half float: refused by encode(), from the bounds
                for k in range(c):
                    dst = rows[:, self.exr_writer.planes[k]]
                    for r, m, src in self._row_blocks(planes[k], n):
                        if half:
                            exr.to_half(src, dst[r:r + m, :src.shape[1]], float(fac[k]), self._half_work(src.shape),
                                        None if limits is None else limits[k])
                        else:
                            _scaled(src, fac[k], dst[r:r + m, :src.shape[1]])
            self._write()
            return
        if self.mode == "image" or (self.mode == "png" and self.fixed is None):  # float32 kept until the end
            if self.mode == "png":
                assert f == self.frames_put, (f, self.frames_put)  # in order, as the streamed textures
                self.frames_put += 1
                for k in range(c):  # the frame's fresh pages at once, before they are written
                    populate(self.planes_f[k, first:first + lay.rows_per_frame])
            for k in range(c):
                for r, m, src in self._row_blocks(planes[k], n):
                    dst = self.image[first + r:first + r + m, :src.shape[1], k] if self.mode == "image" else \
                        self.planes_f[k, first + r:first + r + m, :src.shape[1]]
                    _scaled(src, fac[k], dst)
            return
        # PNG16 normals, range known: the whole frame quantised at once in a scratch buffer, then copied into the rows
        assert self.png_writer is not None and self.fixed is not None  # (mode "png" with fixed)
        assert self.png_writer.y == first, (f, self.png_writer.y)
        work = self._scratch(n)
        lo, scale = self.fixed
        clamp = not self._within_fixed(limits)
        if all(abs(float(v)) == 1.0 for v in fac):
            # the turns folded into the quantiser, straight from the caller's rows: p * t - lo is exactly
            # t * (p - t * lo) for t = +-1 (no rounding in a sign), so the texels are those of the scaled copy
            for k in range(c):
                png.quantise16(work[k], fac[k] * lo[k], fac[k] * scale[k], clamp, source=planes[k])
        else:
            for k in range(c):
                _scaled(planes[k], fac[k], work[k])
            png.quantise16(work, lo, scale, clamp)
        got = png.texels16(work)
        rows = self.png_writer.rows(lay.rows_per_frame)
        for k in range(c):
            for r, m, src in self._row_blocks(got[k], n):
                rows[r:r + m, :src.shape[1], k] = src
        self._write()

    def _within_fixed(self, limits) -> bool:
        """Whether values of the largest magnitudes ``limits`` (per channel, None: unknown) lie within the fixed
        range (an eighth of a texel of slack: unit normals a rounding over 1 still map to 65535, and the scaled
        values stay well within the -0.25..65535.5 that ``png.quantise16`` rounds without wrapping)."""
        if limits is None or self.fixed is None:
            return False
        lo, scale = self.fixed[0][:, 0].astype(np.float64), self.fixed[1][:, 0].astype(np.float64)
        hi, slack = lo + 65535.0 / scale, 0.125 / scale
        big = np.asarray(limits, np.float64)
        return bool(np.all(-big >= lo - slack) and np.all(big <= hi + slack))

    def _row_blocks(self, values, n):
        """(first row in the frame, row count, (rows, texels) view of ``values``) of a frame's full rows and of its
        last, shorter row."""
        w = self.layout.width
        full = n // w
        blocks = [(0, full, values[:full * w].reshape(full, w))] if full else []
        if n > full * w:
            blocks.append((full, 1, values[full * w:n].reshape(1, n - full * w)))
        return blocks

    def _half_work(self, shape):
        """exr.to_half's buffer for a block of ``shape``: made once per shape (a frame's full rows, its last row)."""
        work = self._half_buffers.get(shape)
        if work is None:
            work = self._half_buffers[shape] = np.empty((2, *shape), np.uint32)
        return work

    def _scratch(self, n):
        """The (C, N) float32 buffer a frame is quantised in: made once, reused by every frame."""
        if self._work is None or self._work.shape[1] != n:
            self._work = np.empty((self.c, n), np.float32)
        return self._work

    def _write(self, close=False, slot=0):
        writer = self.exr_writer if self.exr_writer is not None else self.png_writer
        assert writer is not None, "only the streamed textures (EXR, PNG16) write rows"
        t = time.thread_time()
        if close:
            writer.close()
        elif isinstance(writer, png.StoredPng16Writer):
            writer.write(slot)
        else:
            writer.write()
        self.write_cpu += time.thread_time() - t

    def encode(self, remap=None, raw=(), max_abs: float = 0.0, clamp: bool = True):
        """Finish the file: its bytes, or None when it was streamed into ``path`` (then closed); ``max_abs``: the
        largest magnitude written (from the caller's bounds: EXR16 refuses what a half float cannot hold);
        ``clamp`` False: ``remap`` holds every value kept (the float32 bounds of what was written), so a PNG16's
        values are quantised without the clamp (``png.quantise16``)."""
        self.max_abs = max(self.max_abs, float(max_abs))
        if self.encoding == "EXR16" and self.max_abs > HALF_MAX:
            raise VatError(f"A value of {self.max_abs:g} is beyond what a half float holds ({HALF_MAX:g}): choose "
                           f"EXR32")
        if self.mode == "image":
            return encode_texture(self.image, self.encoding, remap, raw, self.level)
        if self.mode == "png" and self.fixed is None:
            if self.frames_put != self.layout.frames:
                raise ValueError(f"{self.frames_put} of the texture's {self.layout.frames} frames were written")
            remap = _png16_remap(remap)
            lo = np.asarray(remap[0], dtype=np.float64)[:self.c].copy()
            span = np.asarray(remap[1], dtype=np.float64)[:self.c] - lo
            lo[list(raw)], span[list(raw)] = 0.0, 65535.0  # integers already (packed normals)
            scale = (65535.0 / span).astype(np.float32)
            lo = lo.astype(np.float32)
            lay = self.layout
            used = lay.vertices - (lay.rows_per_frame - 1) * lay.width
            if not clamp and used < lay.width:
                # the texels no vertex uses hold offset 0, which the remap need not hold: the value the clamp would
                # make of it (so the bytes are the clamped encoding's, and no value leaves the range)
                ends = self.planes_f[:, lay.rows_per_frame - 1::lay.rows_per_frame, used:]
                for k in range(self.c):
                    ends[k] = np.float32(min(max(0.0, float(lo[k])), float(lo[k]) + float(span[k])))
            h = self.layout.height
            self.png_writer = writer = png.StoredPng16Writer(self._open(), h, self.layout.width, self.c)
            step = max(1, (1 << 18) // max(1, self.layout.width))  # blocks of rows that stay in the cache
            lo_c, scale_c = lo[:, None, None], scale[:, None, None]
            blocks = [(a, min(step, h - a)) for a in range(0, h, step)]

            def fill(i):
                """Block ``i`` quantised into the writer's rows of slot ``i % 2`` (numpy: on the helper thread)."""
                a, m = blocks[i]
                rows = writer.rows(m, i % 2)
                block = self.planes_f[:, a:a + m]  # quantised in place: the floats are not needed any more
                got = png.texels16(png.quantise16(block, lo_c, scale_c, clamp))
                for k in range(self.c):
                    rows[:, :, k] = got[k]

            # two stages at once: a helper thread quantises the next block while this one checksums and writes the
            # last (zlib and the file let go of Python's lock too): the end of a bake waits half as long for it
            with ThreadPoolExecutor(1, thread_name_prefix="envfx-vat-png") as helper:
                filled = helper.submit(fill, 0)
                for i in range(len(blocks)):
                    filled.result()
                    if i + 1 < len(blocks):
                        filled = helper.submit(fill, i + 1)
                    self._write(slot=i % 2)
            del self.planes_f
        self._write(close=True)
        if isinstance(self.sink, io.BytesIO):  # path None: the bytes in memory
            return self.sink.getvalue()
        assert self.sink is not None, "the streamed textures opened their file (__init__ or above)"
        self.sink.close()
        return None


def plain_pages(shape: tuple, dtype: npt.DTypeLike) -> np.ndarray:
    """An uninitialised array (as ``np.empty``) whose memory the system hands out in plain 4 KB pages, not huge
    ones: for the large buffers a bake fills once (a PNG16's offsets: 300 MB for 100k vertices over 250 frames).
    numpy asks for huge pages for anything over 4 MB; on a virtual machine whose host takes back the memory its
    guest frees, each fresh 2 MB page costs the host's work too: 300 MB of them took 0.6 s of CPU to touch after a
    few idle seconds here, against 0.13 s in 4 KB pages (0.03 s in huge pages freed just before, which a one-off
    bake does not have). Small arrays, and systems without anonymous memory maps, get ``np.empty``."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    if size < PLAIN_PAGES_FROM:
        return np.empty(shape, dtype)
    try:
        # anonymous and private (a shared map's pages cost half as much again to touch): zero pages as they are
        # first touched, unmapped with the array (Windows: the system's paging file)
        buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE) if hasattr(mmap, "MAP_PRIVATE") else mmap.mmap(-1, size)
    except (OSError, ValueError, OverflowError):
        return np.empty(shape, dtype)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):  # (Linux; when huge pages are on for every map, not only asked-for ones)
        try:
            buf.madvise(mmap.MADV_NOHUGEPAGE)
        except OSError:
            pass
    return np.frombuffer(buf, dtype).reshape(shape)


def populate(region: np.ndarray) -> None:
    """Ask the system for the pages of ``region`` (a contiguous part of a ``plain_pages`` array) in one call, before
    they are first written: about two thirds of the CPU time of a page fault each (0.13 s against 0.19 s for
    300 MB here). Nothing happens for other arrays, on other systems, or on a Linux older than 5.14, which refuses
    the call (then it is not asked again)."""
    if not _POPULATE[0] or not region.flags.c_contiguous or region.nbytes == 0:
        return
    pages = region
    while isinstance(pages.base, np.ndarray):
        pages = pages.base
    view = pages.base
    if not isinstance(view, memoryview) or not isinstance(view.obj, mmap.mmap):
        return
    start = region.__array_interface__["data"][0] - pages.__array_interface__["data"][0]
    first = start - start % mmap.PAGESIZE
    try:
        view.obj.madvise(MADV_POPULATE_WRITE, first, start + region.nbytes - first)
    except (OSError, ValueError):  # (an older kernel: EINVAL)
        _POPULATE[0] = False


def _scaled(values, factor, out):
    """``out[...] = values * factor``; a copy or a negation for the engines' factors of 1 and -1 (numpy's multiply by
    a number into a strided row costs two to three times as much)."""
    if factor == 1.0:
        np.copyto(out, values)
    elif factor == -1.0:
        np.negative(values, out=out)
    else:
        np.multiply(values, factor, out=out)


class VatEncoder:
    """A bake encoded as it is evaluated: ``add(f, positions, normals, extras)`` per baked frame (Blender object
    space: positions, not offsets), ``finish()`` -> Encoded. Each frame's offsets go straight into the texture
    (uncompressed: streamed into the file), so a bake makes one pass over its data instead of one per step
    (offsets, engine axes, layout, file) and holds no whole texture but a PNG16's offsets, whose range is only
    known at the end. ``folder``: the textures are written there, as they come (``finish`` returns only the bytes
    of the compressed ones, encoded at the end), else kept in memory (``finish`` returns them all); ``close()``
    after a failure closes the files (the caller removes them)."""

    def __init__(self, stem: str, rest: npt.ArrayLike, frames: Iterable[int], settings: VatSettings,
                 normals: bool = True, extras: Mapping[str, int] | None = None, fps: float = 24.0, loop: bool = False,
                 source: str = "", folder: str | None = None):
        self.settings = settings.validate()
        self.stem, self.frames, self.fps, self.loop, self.source = stem, list(frames), fps, loop, source
        self.rest = np.asarray(rest, dtype=np.float32)
        if not np.isfinite(self.rest).all():
            raise VatError(not_finite(self.rest, "rest position"))
        n = self.rest.shape[0]
        self.layout = plan_layout(n, len(self.frames), settings.max_size)
        enc = settings.encoding
        self.normals = settings.normals if normals else "NONE"
        self.extras = dict(extras or {})  # name -> channels
        check_attribute_names(self.extras)
        self.names = output_names(stem, enc, self.normals, self.extras, EXPORT_FORMAT[settings.engine])
        self.bits = PACK_BITS.get(enc, 0)  # 0: no packed normals (check_settings refuses them with EXR16)
        packed = self.normals == "PACKED"
        self.folder = folder

        def path(key):
            return None if folder is None else os.path.join(folder, self.names[key])

        self.pos = _Texture(self.layout, "RGBA" if packed else "RGB", enc, settings.level, path=path("position"))
        self.nrm = _Texture(self.layout, "RGB", enc, settings.level, fixed=(np.full(3, -1.0), np.full(3, 1.0)),
                            path=path("normal")) if self.normals == "TEXTURE" else None
        self.attr = {name: _Texture(self.layout, "RGBA"[:c] if c <= 4 else "", enc, settings.level,
                                    path=path(f"attr:{name}")) for name, c in self.extras.items()}
        self.attr_range = {name: (np.full(c, np.inf), np.full(c, -np.inf)) for name, c in self.extras.items()}
        self.rest_e = to_engine(self.rest, settings.engine, settings.unit_scale)
        m, scale = engine_matrix(settings.engine, settings.unit_scale)
        self.columns = np.argmax(np.abs(m), axis=1)
        self.turn = m[np.arange(3), self.columns]
        self.factors = self.turn * scale
        self.factors32, self.turn32 = self.factors.astype(np.float32), self.turn.astype(np.float32)
        self.rest_t = np.ascontiguousarray(self.rest.T[self.columns])  # (3, N) in the engine's axis order
        self._frame: np.ndarray | None = None  # (3, N) float32: a frame's positions, then offsets (add)
        self._square = np.empty(0, np.float32)
        self.lo = np.full(3, np.inf)
        self.hi = np.full(3, -np.inf)
        self.moved_lo = np.full(3, np.inf)
        self.moved_hi = np.full(3, -np.inf)
        self.max_offset = 0.0
        self.first = None
        self.first_normals = None
        self.change = 0.0

    def add(self, f: int, positions: npt.ArrayLike, normals: npt.ArrayLike | None = None,
            extras: Mapping[str, npt.ArrayLike] | None = None) -> None:
        st = self.settings
        positions = np.asarray(positions, dtype=np.float32)
        moving = self.change > 1e-6  # once something moved, frames need not be compared with the first any more
        if self.first is None:
            self.first = positions.copy()
        elif not moving:
            self.change = max(self.change, float(np.abs(positions - self.first).max()))
        # one gather into (3, N) rows in the engine's axis order (still Blender's units and signs), in a buffer made
        # once; then every per-frame pass runs over its contiguous rows: bounds, the offsets, their lengths; the
        # engine's signs and units are applied on the way into the texture's rows
        pos_t = self._frame
        if pos_t is None or pos_t.shape[1] != positions.shape[0]:
            pos_t = self._frame = np.empty((3, positions.shape[0]), np.float32)
            self._square = np.empty(positions.shape[0], np.float32)
        for k in range(3):
            pos_t[k] = positions[:, self.columns[k]]
        lo, hi = pos_t.min(axis=1), pos_t.max(axis=1)
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):  # (NaN and infinity reach the bounds)
            raise VatError(not_finite(positions, "position", self.frames[f]))
        far = max(float(np.abs(lo).max()), float(np.abs(hi).max())) > SANE_COORDINATE
        self.moved_lo[self.columns] = np.minimum(self.moved_lo[self.columns], lo)
        self.moved_hi[self.columns] = np.maximum(self.moved_hi[self.columns], hi)
        off_t = np.subtract(pos_t, self.rest_t, out=pos_t)
        lo, hi = off_t.min(axis=1), off_t.max(axis=1)
        self.lo[self.columns] = np.minimum(self.lo[self.columns], lo)
        self.hi[self.columns] = np.maximum(self.hi[self.columns], hi)
        square = np.einsum("ij,ij->j", off_t, off_t, out=self._square)
        self.max_offset = max(self.max_offset, float(square.max()))
        planes, factors = list(off_t), list(self.factors32)
        limits = None  # EXR16: the largest magnitude of each texture channel, when finite (saves to_half a check)
        if st.encoding == "EXR16" and np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
            limits = list(np.maximum(np.abs(lo), np.abs(hi)) * np.abs(self.factors))
        if self.normals != "NONE" and normals is not None:
            nrm = np.asarray(normals, dtype=np.float32)
            # their largest magnitude: NaN or infinite when one is (refused), else it spares EXR16 its range check
            # and PNG16 its clamp (two quick passes, fewer than either). EXR32 needs neither: it reads them only
            # when the positions are far enough out for the normals' arithmetic to overflow (Blender's normals of
            # finite positions nearer than that are finite: a face of no area gets a zero normal)
            big = None
            if st.encoding != "EXR32" or far:
                big = max(-float(nrm.min()), float(nrm.max())) if nrm.size else 0.0
                if not math.isfinite(big):
                    raise VatError(not_finite(nrm, "normal", self.frames[f]))
            if self.first_normals is None:
                self.first_normals = nrm.copy()
            elif not moving:
                self.change = max(self.change, float(np.abs(nrm - self.first_normals).max()))
            if self.normals == "PACKED":
                packed = pack_normals(to_engine(nrm, st.engine, st.unit_scale, normal=True), self.bits)
                planes.append(packed.astype(np.float32))  # (EXR32 or PNG16: no limits)
                factors.append(np.float32(1.0))
            else:
                assert self.nrm is not None  # made for TEXTURE normals
                # the normals' columns in the engine's order, turned on the way into the rows (turns of +-1: the
                # largest magnitude stays)
                self.nrm.put_planes(f, [nrm[:, col] for col in self.columns], self.turn32,
                                    None if big is None else [big] * 3)
        self.pos.put_planes(f, planes, factors, limits)
        for name, values in (extras or {}).items():
            values = np.asarray(values, dtype=np.float32).reshape(positions.shape[0], -1)
            lo, hi = self.attr_range[name]
            vlo, vhi = _column_bounds(values)
            if not (np.isfinite(vlo).all() and np.isfinite(vhi).all()):
                raise VatError(not_finite(values, f"attribute {name!r}", self.frames[f]))
            self.attr_range[name] = (np.minimum(lo, vlo), np.maximum(hi, vhi))
            self.attr[name].put(f, values)

    def _engine_bounds(self, lo, hi):
        """Blender-axis bounds (lo, hi) in the engine's axes and units, in float32 as ``put_planes`` scales the
        values it writes: a correctly rounded product keeps the order of its factors, so these are the bounds of
        the written values exactly (a PNG16's remap then holds every value, which ``png.quantise16`` needs
        unclamped)."""
        a = lo[self.columns].astype(np.float32) * self.factors32
        b = hi[self.columns].astype(np.float32) * self.factors32
        return np.minimum(a, b).astype(np.float64), np.maximum(a, b).astype(np.float64)

    @property
    def write_cpu(self) -> float:
        """Seconds of CPU time (of the threads that called ``add`` and ``finish``) spent writing the streamed
        files: the system's share of the encoding."""
        return sum(tex.write_cpu for tex in (self.pos, self.nrm, *self.attr.values()) if tex is not None)

    def close(self) -> None:
        for tex in (self.pos, self.nrm, *self.attr.values()):
            if tex is not None:
                tex.close()

    def static(self, tolerance: float = 1e-6) -> bool:
        return self.change <= tolerance

    def finish(self) -> Encoded:
        st, enc, lay, names = self.settings, self.settings.encoding, self.layout, self.names
        files, textures = {}, {}
        remap = None
        self.lo, self.hi = self._engine_bounds(self.lo, self.hi)
        self.moved_lo, self.moved_hi = self._engine_bounds(self.moved_lo, self.moved_hi)
        self.max_offset = float(np.sqrt(self.max_offset)) * float(np.abs(self.factors).max())
        raw = (3,) if self.normals == "PACKED" else ()
        if enc == "PNG16":
            lo = self.lo.astype(np.float64)
            remap = (lo, np.where(self.hi > lo, self.hi, lo + 1.0))
        pos_remap = None if remap is None else ((np.r_[remap[0], 0.0], np.r_[remap[1], 1.0]) if raw else remap)
        files[names["position"]] = self.pos.encode(pos_remap, raw, max(np.abs(self.lo).max(), np.abs(self.hi).max()),
                                                   clamp=False)  # (the remap: the written values' own bounds)
        # (None: written into the folder already; dropped from ``files`` at the end)
        textures["position"] = {"file": names["position"], "channels": "RGBA" if raw else "RGB",
                                "content": "offset from the rest position, object space, engine units",
                                "remap": _remap_dict(remap, 3)}
        if raw:
            textures["position"]["packed_normal"] = {
                "channel": "A", "bits": self.bits,
                "decode": f"a = floor(p / {2 ** self.bits}); b = p - a * {2 ** self.bits}; "
                f"oct = vec2(a, b) / {2 ** self.bits - 1} * 2 - 1; octahedral decode"
                + ("; p = round(the texel * 65535) (PNG16)" if enc == "PNG16" else "")}
        if self.nrm is not None:
            nremap = (np.full(3, -1.0), np.full(3, 1.0)) if enc == "PNG16" else None
            files[names["normal"]] = self.nrm.encode(nremap)
            textures["normal"] = {"file": names["normal"], "channels": "RGB", "content": "unit normal, object space",
                                  "remap": _remap_dict(nremap, 3)}
        for name, tex in self.attr.items():
            key = f"attr:{name}"
            aremap = None
            if enc == "PNG16":
                lo, hi = self.attr_range[name]
                aremap = (lo, np.where(hi > lo, hi, lo + 1.0))
            lo, hi = self.attr_range[name]
            files[names[key]] = tex.encode(aremap, (), max(np.abs(lo).max(), np.abs(hi).max()), clamp=False)
            textures[name] = {"file": names[key], "channels": "RGBA"[:tex.c] if tex.c <= 4 else "",
                              "content": f"attribute {name!r} per frame", "remap": _remap_dict(aremap, tex.c)}
        frames = self.frames
        step = int(frames[1] - frames[0]) if len(frames) > 1 else 1
        matrix, scale = engine_matrix(st.engine, st.unit_scale)
        meta = {
            "format": "envfx-vat",
            "version": FORMAT_VERSION,
            "object": self.source or self.stem,
            "encoding": enc,
            "frames": len(frames),
            "frame_start": int(frames[0]),
            "frame_end": int(frames[-1]),
            "step": step,
            "fps": float(self.fps),
            "playback_fps": float(self.fps) / step,
            "loop": bool(self.loop),
            "vertex_count": lay.vertices,
            "layout": lay.to_dict(),
            "uv": {"name": UV_NAME, "v_origin": "bottom (Blender, FBX, Unity); a glTF has v = 1 - v: top",
                   "frame_v_step": lay.frame_v_step},
            "normals": self.normals,
            "textures": textures,
            "coordinate_system": {
                "engine": st.engine,
                "matrix_from_blender": np.asarray(matrix).tolist(),
                "units_per_blender_unit": scale,
                "axes": "Blender object space (Z up, right-handed)" if st.engine == "BLENDER" else
                bend_engines.ENGINES[st.engine][4],
                "units": "Blender units" if st.engine == "BLENDER" else bend_engines.units_note(st.engine,
                                                                                                 st.unit_scale),
                "export": EXPORT_FORMAT[st.engine],
            },
            "bounds": {"rest_min": self.rest_e.min(axis=0).tolist(), "rest_max": self.rest_e.max(axis=0).tolist(),
                       "animated_min": self.moved_lo.tolist(), "animated_max": self.moved_hi.tolist(),
                       "max_offset": self.max_offset},
            "files": sorted(names.values()),
        }
        meta["precision"] = precision(enc, remap, float((self.moved_hi - self.moved_lo).max()),
                                      float(max(np.abs(self.lo).max(), np.abs(self.hi).max())))
        return Encoded({k: v for k, v in files.items() if v is not None}, meta, lay)


def encode_bake(stem: str, rest: npt.ArrayLike, offsets: npt.ArrayLike,
                normals: np.ndarray | Sequence[npt.ArrayLike] | None, frames: Sequence[int], settings: VatSettings,
                fps: float = 24.0, loop: bool = False, extras: Mapping[str, npt.ArrayLike] | None = None,
                source: str = "") -> Encoded:
    """Encode one object's bake: ``rest`` (N, 3) rest positions, ``offsets`` (F, N, 3) offsets from the rest
    pose, ``normals`` (F, N, 3) or None, in Blender's object space; ``extras`` {attribute name: (F, N, C)}.
    (``VatEncoder`` does the same frame by frame.)"""
    offsets = np.asarray(offsets, dtype=np.float32)
    extras = {name: np.asarray(v, np.float32).reshape(offsets.shape[0], offsets.shape[1], -1)
              for name, v in (extras or {}).items()}
    encoder = VatEncoder(stem, rest, frames, settings, normals=normals is not None,
                         extras={name: v.shape[2] for name, v in extras.items()}, fps=fps, loop=loop, source=source)
    rest = encoder.rest
    for f in range(offsets.shape[0]):
        encoder.add(f, rest + offsets[f], None if normals is None else normals[f],
                    {name: v[f] for name, v in extras.items()})
    return encoder.finish()


def _remap_dict(remap, c: int):
    if remap is None:
        return None
    return {"min": [float(v) for v in remap[0][:c]], "max": [float(v) for v in remap[1][:c]],
            "decode": "value = min + texel * (max - min)"}


def settings_dict(settings: VatSettings) -> dict:
    return asdict(settings)


def decode_positions(files: dict, meta: dict, rest: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """(F, N, 3) Blender object-space positions back from a bake's files and JSON (what a shader computes, then
    turned back to Blender's axes and units): the round trip the tests check."""
    layout = Layout(meta["vertex_count"], meta["frames"], meta["layout"]["width"], meta["layout"]["rows_per_frame"])
    tex = meta["textures"]["position"]
    remap = tex["remap"]
    rm = None if remap is None else (np.r_[remap["min"], 0.0], np.r_[remap["max"], 1.0])
    img = decode_texture(files[tex["file"]], meta["encoding"], rm, (3,) if "packed_normal" in tex else ())
    off = unpack_frames(img, layout)[..., :3]
    back = from_engine_axes(meta["coordinate_system"]["engine"],
                            _unit_scale(meta)) if meta["coordinate_system"]["engine"] != "BLENDER" else np.eye(3)
    return np.asarray(rest, np.float64)[None] + off @ back.T


def decode_normals(files: dict, meta: dict) -> np.ndarray:
    """(F, N, 3) Blender object-space normals back from a bake (texture or packed)."""
    layout = Layout(meta["vertex_count"], meta["frames"], meta["layout"]["width"], meta["layout"]["rows_per_frame"])
    m = np.asarray(meta["coordinate_system"]["matrix_from_blender"], dtype=np.float64)
    if meta["normals"] == "TEXTURE":
        tex = meta["textures"]["normal"]
        rm = None if tex["remap"] is None else (np.asarray(tex["remap"]["min"]), np.asarray(tex["remap"]["max"]))
        n = unpack_frames(decode_texture(files[tex["file"]], meta["encoding"], rm), layout)
    else:
        tex = meta["textures"]["position"]
        remap = tex["remap"]
        rm = None if remap is None else (np.r_[remap["min"], 0.0], np.r_[remap["max"], 1.0])
        img = decode_texture(files[tex["file"]], meta["encoding"], rm, (3,))
        n = unpack_normals(unpack_frames(img, layout)[..., 3], tex["packed_normal"]["bits"])
    return n @ m  # the rotation's inverse is its transpose: n_blender = M^T n_engine, as rows: n @ M


def _unit_scale(meta) -> float:
    """The scene unit scale a bake's JSON implies (FBX engines: units_per_blender_unit / units per metre)."""
    eng = meta["coordinate_system"]["engine"]
    per_metre = bend_engines.ENGINES[eng][1]
    return meta["coordinate_system"]["units_per_blender_unit"] / per_metre if bend_engines.ENGINES[eng][5] == "FBX" \
        else 1.0


def angle_degrees(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Angles (degrees) between (..., 3) vectors."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    cos = (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-30)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def frames_needed(vertices: int, max_size: int = MAX_TEXTURE_SIZE) -> int:
    """The most frames ``vertices`` fit in one texture of ``max_size``."""
    return max_size // max(1, math.ceil(vertices / max_size))
