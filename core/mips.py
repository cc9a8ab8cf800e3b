"""Alpha-coverage preserving mip chains, pure numpy (the Horizon Zero Dawn offline mip tool).

Ordinary mip-mapping averages alpha, so the share of an alpha-tested texture that passes the test
(``alpha >= ref``) shrinks level by level and foliage dissolves with distance. The write-up's tool measures the
coverage of the full-size image, builds a normal chain and scales each level's alpha so that its coverage after
the test matches the full-size image again. Colour is never scaled.

Pipeline, for an (H, W, C) array (rows top to bottom, C = 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA; uint8, uint16 or
float in [0, 1]):

1. decode to float32 RGBA; colour channels of an sRGB image to linear light (the coverage channel and alpha are
   always linear data);
2. box-filter level after level down to 1x1; a level of size n halves to ``n // 2`` (the DDS / Direct3D rule).
   Even sizes average pairs; odd sizes use the exact 3-tap polyphase box filter (each output texel covers
   ``n / (n // 2)`` input texels: weights ``(n2 - i) / n, n2 / n, (i + 1) / n``);
3. every level is quantised to 8 bits (colour back to sRGB); coverage is the share of ``supersample**2``
   bilinear sub-samples per texel (clamped at the edges) whose alpha passes ``alpha >= ref``;
4. each level's alpha is multiplied by the scale ``k`` whose *quantised* result has coverage closest to the
   coverage of the stored level 0 (bisection over ``k``; coverage is monotone in ``k``). ``k = 1`` is kept when
   it already matches, so fully opaque and fully transparent images are unchanged.

Speed: a texel whose 3x3 neighbourhood is all above or all below the threshold passes or fails for every
sub-sample (bilinear samples are convex combinations of that neighbourhood), so only texels near the alpha
edge are supersampled, and the bisection narrows that set as the bracket on ``k`` shrinks.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Container, Generator, Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import numpy.typing as npt

from . import dds, jobs, outputs
from .colour import linear_to_srgb, srgb_to_linear
from .png import encode_png

CHANNELS = ("R", "G", "B", "A")
FORMATS = ("dds", "png")
DDS_COMPRESSIONS = tuple(dds.COMPRESSIONS)  # RGBA8, BC1, BC3, BC4, BC7
# estimated times, for progress only: over the chain's build (a 2048 x 2048 leaf card on 2 cores), the DDS's per
# compression (encoding and coverage check), the PNG levels' and the comparison picture's; of the DDS's, the encoding's
# share (then the check)
DDS_COST = {"RGBA8": 0.05, "BC1": 1.7, "BC3": 3.5, "BC4": 2.4, "BC7": 7.5}
PNG_COST = 0.55
COMPARE_COST = 0.35
DDS_ENCODE_SHARE = 0.7
# bytes of working memory per source pixel (float32 RGBA level 0 + the chain + outputs + temporaries)
BYTES_PER_PIXEL = 48
DEFAULT_MAX_MEMORY_GB = 8.0
MAX_SUPERSAMPLE = 8
# the scale search stops when a level's coverage is this close to level 0's (far inside the 1% acceptance)
SEARCH_TOLERANCE = 1e-4


class MipsError(ValueError):
    """Bad input or settings; the message says what is wrong and what to do."""


@dataclass(frozen=True)
class MipSettings:
    ref: float = 0.5                 # alpha-test reference (pass: alpha >= ref)
    srgb: bool = True                # colour channels are sRGB-encoded: filter them in linear light
    alpha_channel: str = "A"         # channel holding the coverage (alpha-tested) value
    preserve: bool = True            # scale alpha per level to keep mip-0 coverage (False: naive chain)
    supersample: int = 4             # sub-samples per texel and axis when measuring coverage
    max_memory_gb: float = DEFAULT_MAX_MEMORY_GB
    dds: str = "RGBA8"               # the DDS file's texels: RGBA8, or block-compressed BC1, BC3, BC4 or BC7

    def validate(self) -> "MipSettings":
        if not (0.0 < float(self.ref) < 1.0):
            raise MipsError(f"Alpha reference {self.ref} is outside (0, 1): use the engine's alpha-test value, "
                            "e.g. 0.5")
        if self.alpha_channel not in CHANNELS:
            raise MipsError(f"Unknown alpha channel {self.alpha_channel!r}: use one of {', '.join(CHANNELS)}")
        if not (1 <= int(self.supersample) <= MAX_SUPERSAMPLE):
            raise MipsError(f"Supersample {self.supersample} must be 1 to {MAX_SUPERSAMPLE}")
        if not self.max_memory_gb > 0:
            raise MipsError("The memory limit must be positive")
        if self.dds not in DDS_COMPRESSIONS:
            raise MipsError(f"Unknown DDS compression {self.dds!r}: use one of {', '.join(DDS_COMPRESSIONS)}")
        if self.dds in ("BC1", "BC3") and self.alpha_channel != "A":
            raise MipsError(f"{self.dds} keeps alpha only in A (R, G and B get 5 or 6 bits), so the coverage in "
                            f"{self.alpha_channel} would not be kept: write the DDS as BC7, BC4 (the coverage "
                            "alone) or RGBA8, or put the coverage in A")
        return self


@dataclass
class LevelReport:
    level: int
    width: int
    height: int
    coverage_naive: float
    coverage: float
    alpha_scale: float
    step: float  # coverage gap between the two closest scales tried (the level's quantisation step when the
                 # search had to stop there; 0 when the target was hit within the search tolerance)


@dataclass
class MipChain:
    levels: list                     # uint8 (h, w, 4) arrays, level 0 first: the output chain
    naive_alpha: list                # uint8 (h, w) alpha of the naive chain, same sizes
    reports: list                    # LevelReport per level
    target: float                    # coverage of level 0
    settings: MipSettings
    has_alpha: bool = True
    warnings: list = field(default_factory=list)

    def naive_level(self, i: int) -> np.ndarray:
        out = self.levels[i].copy()
        out[..., CHANNELS.index(self.settings.alpha_channel)] = self.naive_alpha[i]
        return out


# --- colour -----------------------------------------------------------------------------------------------

_SRGB_LUT = srgb_to_linear(np.arange(256, dtype=np.float32) / 255.0)


def to_u8(x: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Float in [0, 1] to uint8 (round half up, clamped)."""
    return np.floor(np.clip(x, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


# --- sizes and memory -------------------------------------------------------------------------------------

def level_sizes(height: int, width: int) -> list:
    """(h, w) of every level down to 1x1, each dimension halving with floor (never below 1)."""
    sizes = [(int(height), int(width))]
    while sizes[-1] != (1, 1):
        h, w = sizes[-1]
        sizes.append((max(1, h // 2), max(1, w // 2)))
    return sizes


def memory_estimate(height: int, width: int) -> int:
    """Bytes of working memory the chain of an image this size needs (checked before any work)."""
    return int(height) * int(width) * BYTES_PER_PIXEL


def check_size(height: int, width: int, settings: MipSettings = MipSettings()) -> None:
    """Refuse an image the settings cannot bake: no pixels, over the memory limit, or a block-compressed DDS
    (``settings.dds``) of a size that is not a multiple of 4."""
    if height < 1 or width < 1:
        raise MipsError(f"Image is {width}x{height}: it has no pixels")
    if settings.dds != "RGBA8" and (height % 4 or width % 4):
        raise MipsError(f"The image is {width}x{height}: a {settings.dds} DDS needs a width and height that are "
                        "multiples of 4 (engines refuse other block-compressed textures): resize it, or write the "
                        "DDS as RGBA8")
    need = memory_estimate(height, width)
    limit = settings.max_memory_gb * 1024 ** 3
    if need > limit:
        raise MipsError(
            f"A {width}x{height} image needs about {need / 1024 ** 3:.1f} GB of memory for its mip chain, over the "
            f"limit of {settings.max_memory_gb:g} GB: raise the memory limit if this machine has the memory, or "
            f"scale the image down first"
        )


# --- input ------------------------------------------------------------------------------------------------

def normalize(pixels: npt.ArrayLike) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.uint8] | None, bool, list[str]]:
    """(H, W, C) or (H, W) array -> (float32 RGBA in [0, 1], uint8 RGBA or None, has_alpha, warnings).

    The uint8 copy is kept for 8-bit input so level 0 is written back bit-exactly."""
    arr = np.asarray(pixels)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[2] not in (1, 2, 3, 4):
        raise MipsError(f"Expected an (H, W, C) image with 1 to 4 channels, got shape {tuple(np.shape(pixels))}")
    h, w, c = arr.shape
    if h < 1 or w < 1:
        raise MipsError(f"Image is {w}x{h}: it has no pixels")
    warnings: list[str] = []
    u8: npt.NDArray[np.uint8] | None = None
    if arr.dtype == np.uint8:
        u8 = arr
    elif arr.dtype == np.uint16:
        warnings.append("16-bit image: the mip chain is written with 8 bits per channel")
        arr = arr.astype(np.float32) / 65535.0
    elif np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float32, copy=False)
        if not np.all(np.isfinite(arr)):
            raise MipsError("Image has NaN or infinite pixels: fix the source image")
        if arr.min() < 0.0 or arr.max() > 1.0:
            warnings.append("Float image has values outside 0..1 (HDR?): they are clamped to 0..1")
            arr = np.clip(arr, 0.0, 1.0)
    else:
        raise MipsError(f"Unsupported pixel type {arr.dtype}: use uint8, uint16 or float")
    if c in (1, 2):
        idx = [0, 0, 0] + ([1] if c == 2 else [])
        arr = arr[:, :, idx]
        u8 = u8[:, :, idx] if u8 is not None else None
    has_alpha = c in (2, 4)
    if not has_alpha:
        fill = np.full((h, w, 1), 255 if u8 is not None else 1.0, dtype=arr.dtype)
        arr = np.concatenate([arr, fill], axis=2)
        u8 = np.concatenate([u8, fill], axis=2, dtype=np.uint8) if u8 is not None else None  # fill is uint8 then
    if u8 is not None:
        u8 = np.ascontiguousarray(u8)
        rgba = u8.astype(np.float32) * np.float32(1.0 / 255.0)
    else:
        rgba = np.ascontiguousarray(arr, dtype=np.float32)
    return rgba, u8, has_alpha, warnings


# --- filtering --------------------------------------------------------------------------------------------

def _half_axis(x: np.ndarray, axis: int) -> np.ndarray:
    n = x.shape[axis]
    if n == 1:
        return x
    x = np.moveaxis(x, axis, 0)
    n2 = n // 2
    if n % 2 == 0:
        out = (x[0::2] + x[1::2]) * np.float32(0.5)
    else:
        i = np.arange(n2, dtype=np.float32)
        shape = (n2,) + (1,) * (x.ndim - 1)
        w0 = ((n2 - i) / n).reshape(shape)
        w1 = np.float32(n2 / n)
        w2 = ((i + 1) / n).reshape(shape)
        out = x[0:2 * n2:2] * w0 + x[1::2] * w1 + x[2::2] * w2
    return np.moveaxis(out.astype(np.float32, copy=False), 0, axis)


def downsample(level: np.ndarray) -> np.ndarray:
    """One box-filtered level down (floor halving; exact polyphase box for odd sizes)."""
    h, w = level.shape[:2]
    if h % 2 == 0 and w % 2 == 0 and h > 1 and w > 1:
        out = level[0::2, 0::2] + level[1::2, 0::2]
        out += level[0::2, 1::2]
        out += level[1::2, 1::2]
        out *= np.float32(0.25)
        return out
    return _half_axis(_half_axis(level, 0), 1)


# --- coverage ---------------------------------------------------------------------------------------------

def _minmax3(a: np.ndarray):
    """Min and max over each texel's clamped 3x3 neighbourhood (separable, no padding copies)."""
    def run(op, x):
        out = x.copy()
        if x.shape[0] > 1:
            op(out[1:], x[:-1], out=out[1:])
            op(out[:-1], x[1:], out=out[:-1])
        y = out.copy()
        if x.shape[1] > 1:
            op(y[:, 1:], out[:, :-1], out=y[:, 1:])
            op(y[:, :-1], out[:, 1:], out=y[:, :-1])
        return y

    return run(np.minimum, a), run(np.maximum, a)


def _phases(s: int):
    """Sub-sample offsets from the texel centre, as (neighbour index 0/2, weight) pairs."""
    out = []
    for j in range(s):
        d = (j + 0.5) / s - 0.5
        out.append((0 if d < 0 else 2, abs(d)))
    return out


_CHUNK = 1 << 18  # texels supersampled at once (~20 MB of float64 neighbourhoods)


class _Field:
    """Coverage of one level's alpha under a monotone transform, counted in sub-samples."""

    def __init__(self, a: np.ndarray, s: int):
        self.a = a
        self.h, self.w = a.shape
        self.s = s
        mn, mx = _minmax3(a)
        self.total = self.h * self.w * s * s
        # the working subset: flat texel indices with their neighbourhood min / max; `base` sub-samples outside
        # it pass for every scale in the current bracket
        self.idx = None
        self.mn = mn.ravel()
        self.mx = mx.ravel()
        self.base = 0
        self.phases = _phases(s)

    def _neighbours(self, idx):
        iy, ix = np.divmod(idx, self.w)
        ys = [np.clip(iy + d, 0, self.h - 1) for d in (-1, 0, 1)]
        xs = [np.clip(ix + d, 0, self.w - 1) for d in (-1, 0, 1)]
        return np.stack([np.stack([self.a[y, x] for x in xs]) for y in ys])  # (3, 3, n), the level's dtype

    def _sample_count(self, nb, thr):
        nb = nb.astype(np.float64)  # transform in the level's precision (as stored), interpolate in float64
        s2 = 0
        for ky, wy in self.phases:
            rows = nb[1] + wy * (nb[ky] - nb[1])  # (3, n) over x
            for kx, wx in self.phases:
                v = rows[1] + wx * (rows[kx] - rows[1])
                s2 += int(np.count_nonzero(v >= thr))
        return s2

    def count(self, f, thr):
        """Sub-samples of f(alpha) that pass ``>= thr`` (f monotone non-decreasing)."""
        fmn, fmx = f(self.mn), f(self.mx)
        sure = fmn >= thr
        unsure = (~sure) & (fmx >= thr)
        n = self.base + int(np.count_nonzero(sure)) * self.s * self.s
        if unsure.any():
            pos = np.flatnonzero(unsure)
            idx = pos if self.idx is None else self.idx[pos]
            for start in range(0, idx.size, _CHUNK):  # bounded memory when most texels sit on an edge
                n += self._sample_count(f(self._neighbours(idx[start:start + _CHUNK])), thr - 1e-7)
        return n

    def restrict(self, f_lo, f_hi, thr):
        """Drop texels whose result is the same for every transform between f_lo and f_hi."""
        always = f_lo(self.mn) >= thr
        never = f_hi(self.mx) < thr
        keep = ~(always | never)
        self.base += int(np.count_nonzero(always)) * self.s * self.s
        pos = np.flatnonzero(keep)
        self.idx = pos if self.idx is None else self.idx[pos]
        self.mn = self.mn[pos]
        self.mx = self.mx[pos]


def coverage(alpha: npt.ArrayLike, ref: float = 0.5, supersample: int = 4) -> float:
    """Share of bilinear sub-samples (``supersample``^2 per texel, clamped edges) with alpha >= ref.

    ``alpha``: (h, w) array, uint8 (read as /255) or float in [0, 1]."""
    a = np.asarray(alpha)
    if a.ndim != 2:
        raise MipsError(f"Expected an (h, w) alpha array, got shape {a.shape}")
    thr = float(ref)
    if a.dtype == np.uint8:  # stay in bytes: 4x less memory traffic for the big level 0
        thr *= 255.0
    else:
        a = np.asarray(a, dtype=np.float32)
    fld = _Field(a, int(supersample))
    return fld.count(lambda x: x, thr) / fld.total


def _quantiser(k: float):
    k = float(k)

    def f(x):
        return np.floor(np.clip(x * k, 0.0, 1.0) * 255.0 + 0.5)

    return f


def solve_scale(a: np.ndarray, target: float, ref: float, supersample: int) -> tuple[float, float, float, float]:
    """Scale k for float alpha ``a`` whose 8-bit quantised result has coverage closest to ``target``.

    Returns (k, coverage at k, naive coverage at k = 1, step: coverage gap of the final bracket). The search
    stops once the coverage is within SEARCH_TOLERANCE of the target or the bracket cannot shrink further."""
    fld = _Field(a, supersample)
    thr = 255.0 * ref
    total = fld.total
    want = target * total

    def cov(k):
        return fld.count(_quantiser(k), thr)

    c1 = cov(1.0)
    naive = c1 / total
    if abs(c1 - want) < 0.5 or a.max() <= 0.0:
        return 1.0, naive, naive, 0.0
    kmax = ((math.ceil(255.0 * ref) - 0.5) / 255.0) / max(float(a[a > 0].min()), 1e-12) * 1.001
    if c1 < want:
        klo, clo, khi, chi = 1.0, c1, None, None
        k, grow = 1.0, 1.05  # big levels need scales near 1: start close, widen geometrically
        while k < kmax:
            k = min(k * grow, kmax)
            grow *= grow
            c = cov(k)
            if c >= want:
                khi, chi = k, c
                break
            klo, clo = k, c
        if khi is None:  # the target is out of reach: everything that can pass passes
            return klo, clo / total, naive, 0.0
    else:
        khi, chi, klo, clo = 1.0, c1, None, None
        k, grow = 1.0, 1.05
        for _ in range(64):
            k /= grow
            grow = min(grow * grow, 2.0)
            c = cov(k)
            if c <= want:
                klo, clo = k, c
                break
            khi, chi = k, c
        if klo is None:
            return khi, chi / total, naive, 0.0
    # both ends of the bracket are found here (the branches above return when one is not)
    assert klo is not None and clo is not None and khi is not None and chi is not None
    tol = max(0.5, SEARCH_TOLERANCE * total)
    for it in range(64):
        fld.restrict(_quantiser(klo), _quantiser(khi), thr)
        # stop: no sample between, the target hit closely enough, or k pinned to 1e-4 (a jump in coverage)
        if chi - clo <= 1 or khi / klo - 1.0 < 1e-4 or min(want - clo, chi - want) <= tol:
            break
        lo, hi = math.log(klo), math.log(khi)
        # safeguarded regula falsi in log k: interpolate on even steps, bisect on odd ones
        frac = 0.5 if it % 2 else min(0.9, max(0.1, (want - clo) / (chi - clo)))
        km = math.exp(lo + frac * (hi - lo))
        c = cov(km)
        if c < want:
            klo, clo = km, c
        elif c > want:
            khi, chi = km, c
        else:
            return km, c / total, naive, 0.0
    step = (chi - clo) / total
    lo_err, hi_err = abs(want - clo), abs(chi - want)
    if min(lo_err, hi_err) >= abs(c1 - want):  # scaling gains nothing: keep the naive alpha
        return 1.0, naive, naive, step
    if lo_err < hi_err or (lo_err == hi_err and abs(math.log(klo)) < abs(math.log(khi))):
        return klo, clo / total, naive, step
    return khi, chi / total, naive, step


# --- the chain --------------------------------------------------------------------------------------------

def build_chain_job(pixels: npt.ArrayLike, settings: MipSettings = MipSettings()) -> Generator[float, None, MipChain]:
    """Job generator (yields progress fractions, returns a MipChain); see ``build_chain``."""
    settings = settings.validate()
    arr = np.asarray(pixels)
    if arr.ndim >= 2:
        check_size(arr.shape[0], arr.shape[1], settings)
    rgba, u8, has_alpha, warnings = normalize(arr)
    h, w = rgba.shape[:2]
    ach = CHANNELS.index(settings.alpha_channel)
    colour = [c for c in range(3) if c != ach]
    if settings.alpha_channel == "A" and not has_alpha:
        warnings.append("Image has no alpha channel: nothing to preserve, the chain is a plain mip chain")
    if settings.srgb and colour:
        if u8 is not None:
            for c in colour:
                rgba[..., c] = _SRGB_LUT[u8[..., c]]
        else:
            rgba[..., colour] = srgb_to_linear(rgba[..., colour])
    sizes = level_sizes(h, w)
    weights = np.array([sh * sw for sh, sw in sizes], dtype=np.float64)
    done_at = np.cumsum(weights) / weights.sum()
    preserve = settings.preserve and (has_alpha or settings.alpha_channel != "A")

    levels, naive_alpha, reports = [], [], []
    current = rgba
    target = 0.0  # level 0's coverage: every chain has a level 0
    for i, (lh, lw) in enumerate(sizes):
        if i > 0:
            current = downsample(current)
        assert current.shape[:2] == (lh, lw)
        if i == 0 and u8 is not None:
            out = u8.copy()
        else:
            out = np.empty((lh, lw, 4), dtype=np.uint8)
            for c in range(4):
                ch = current[..., c]
                out[..., c] = to_u8(linear_to_srgb(ch) if (settings.srgb and c in colour) else ch)
        alpha_f = current[..., ach]
        naive_u8 = out[..., ach].copy()
        if i == 0:
            target = coverage(naive_u8, settings.ref, settings.supersample)
            reports.append(LevelReport(0, lw, lh, target, target, 1.0, 0.0))
        elif preserve:
            k, cov_k, cov_naive, step = solve_scale(alpha_f, target, settings.ref, settings.supersample)
            if k != 1.0:
                out[..., ach] = to_u8(alpha_f * np.float32(k))
            reports.append(LevelReport(i, lw, lh, cov_naive, cov_k, float(k), step))
        else:
            c = coverage(naive_u8, settings.ref, settings.supersample)
            reports.append(LevelReport(i, lw, lh, c, c, 1.0, 0.0))
        levels.append(out)
        naive_alpha.append(naive_u8)
        yield float(done_at[i])
    return MipChain(levels, naive_alpha, reports, float(target), settings, has_alpha, warnings)


def build_chain(pixels: npt.ArrayLike, settings: MipSettings = MipSettings()) -> MipChain:
    """The numpy entry point: (H, W, C) pixels (top row first) -> MipChain (uint8 RGBA levels + report)."""
    job = build_chain_job(pixels, settings)
    return jobs.finish(job)


# --- encoders ---------------------------------------------------------------------------------------------

DDS_ALPHA_MODE_STRAIGHT = dds.DDS_ALPHA_MODE_STRAIGHT
dds_format = dds.dds_format


def encode_dds(levels: Sequence[npt.NDArray[np.uint8]], *, srgb: bool, compression: str = "RGBA8",
               alpha_ref: float | None = None, channel: int = 3) -> bytes:
    """``core.dds.encode_dds`` (a DDS of every level given: RGBA8, BC1, BC3, BC4 of ``channel`` or BC7), refusing
    with ``MipsError``."""
    return jobs.finish(encode_dds_job(levels, srgb=srgb, compression=compression, alpha_ref=alpha_ref,
                                      channel=channel))


def encode_dds_job(levels: Sequence[npt.NDArray[np.uint8]], *, srgb: bool, compression: str = "RGBA8",
                   alpha_ref: float | None = None, channel: int = 3) -> Generator[float, None, bytes]:
    """``encode_dds`` as a job generator (``core.dds.encode_dds_job``: progress between bands of block rows)."""
    try:
        return (yield from dds.encode_dds_job(levels, srgb=srgb, compression=compression, alpha_ref=alpha_ref,
                                              channel=channel))
    except ValueError as exc:
        raise MipsError(str(exc)) from None


def write_cost(compression: str, formats: Iterable[str], compare: bool) -> float:
    """The estimated time of writing a chain's files (the DDS of ``compression``, the PNG levels, the comparison
    picture, as ``formats`` and ``compare`` ask) over the chain's build: how a bake's progress bar splits its
    time."""
    formats = parse_formats(formats)
    return ((DDS_COST[compression] if "dds" in formats else 0.0) + (PNG_COST if "png" in formats else 0.0)
            + (COMPARE_COST if compare else 0.0))


def chain_dds(chain: MipChain) -> tuple[bytes, list[float] | None]:
    """The chain's DDS file, and for a block-compressed one the coverage of each level as the engine samples it
    (decoded from the file: BC1's alpha is 0 or 1, cut at the reference; BC3's, BC4's and BC7's are quantised per
    block of 4 x 4 texels), measured in the coverage channel as the chain measures its levels; None for RGBA8,
    whose levels are the chain's. BC4 holds the coverage channel alone (read back in R, as GPUs sample it)."""
    return jobs.finish(chain_dds_job(chain))


def chain_dds_job(chain: MipChain) -> Generator[float, None, tuple[bytes, list[float] | None]]:
    """``chain_dds`` as a job generator: progress while the levels are encoded (``DDS_ENCODE_SHARE`` of it), then
    the coverage check."""
    s = chain.settings
    ach = CHANNELS.index(s.alpha_channel)
    data = yield from jobs.within(encode_dds_job(chain.levels, srgb=s.srgb, compression=s.dds, alpha_ref=s.ref,
                                                 channel=ach), 0.0, DDS_ENCODE_SHARE)
    if s.dds == "RGBA8":
        return data, None
    levels, _ = dds.decode_dds(data, channel=0 if s.dds == "BC4" else ach)
    return data, [coverage(lv, s.ref, s.supersample) for lv in levels]


def _resize_bilinear(img: np.ndarray, oh: int, ow: int) -> np.ndarray:
    """Bilinear (texel-centre aligned, clamped) resample of an (h, w, c) float array."""
    h, w = img.shape[:2]
    ys = np.clip((np.arange(oh) + 0.5) * h / oh - 0.5, 0, h - 1)
    xs = np.clip((np.arange(ow) + 0.5) * w / ow - 0.5, 0, w - 1)
    y0 = np.floor(ys).astype(int)
    x0 = np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy = (ys - y0).astype(np.float32)[:, None, None]
    fx = (xs - x0).astype(np.float32)[None, :, None]
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bot = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    return top * (1 - fy) + bot * fy


def compare_picture(chain: MipChain, tile: int = 128, max_levels: int = 10) -> np.ndarray:
    """uint8 RGBA picture: every level magnified to ``tile`` px (bilinear, as a GPU samples it) and alpha-tested;
    top row the naive chain, bottom row the coverage-preserving chain, each tile with a coverage bar under it
    (red naive / green preserved: this level's coverage; white tick: level 0's, at 80% of the tile width)."""
    n = min(len(chain.levels), max_levels)
    pad, bar = 6, 8
    h0, w0 = chain.levels[0].shape[:2]
    th = max(1, int(round(tile * min(1.0, h0 / w0))))
    tw = max(1, int(round(tile * min(1.0, w0 / h0))))
    cell_h = th + bar + 2 * pad
    out = np.full((2 * cell_h + pad, n * (tw + pad) + pad, 4), (40, 40, 48, 255), dtype=np.uint8)
    ach = CHANNELS.index(chain.settings.alpha_channel)
    ref = chain.settings.ref
    yy, xx = np.mgrid[0:th, 0:tw]
    background = np.where(((yy // 8 + xx // 8) % 2)[..., None] == 0, 200, 160).astype(np.float32)
    for row, use_naive in enumerate((True, False)):
        for i in range(n):
            lv = chain.naive_level(i) if use_naive else chain.levels[i]
            img = _resize_bilinear(lv.astype(np.float32) / 255.0, th, tw)
            passed = img[..., ach] >= ref - 1e-6
            rgb = np.where(passed[..., None], img[..., :3] * 255.0, background)
            y = pad + row * cell_h
            x = pad + i * (tw + pad)
            out[y:y + th, x:x + tw, :3] = np.clip(rgb + 0.5, 0, 255).astype(np.uint8)
            rep = chain.reports[i]
            cov = rep.coverage_naive if use_naive else rep.coverage
            by = y + th + pad // 2
            out[by:by + bar, x:x + tw, :3] = (70, 70, 70)
            scale = 0.8 * tw / max(chain.target, 1e-9)
            fill = int(round(min(cov * scale, tw)))
            out[by:by + bar, x:x + fill, :3] = (200, 80, 60) if use_naive else (90, 200, 90)
            tick = min(tw - 1, int(round(chain.target * scale)))
            out[by - 2:by + bar + 2, x + tick, :3] = 255
    return out


# --- report and files -------------------------------------------------------------------------------------

def report_dict(chain: MipChain, source: str = "", dds: bool = True, files: Iterable[str] | None = None,
                dds_coverage: Sequence[float] | None = None) -> dict:
    """The ``<name>_mips.json`` report; ``dds``: a DDS file is written (its format is then named in the report);
    ``files``: the names of the files written for this image (``output_names``), which the next run into the same
    folder removes if it does not write them again; ``dds_coverage``: each level's coverage in a block-compressed
    DDS (``chain_dds``), reported per level as ``coverage_dds``."""
    h, w = chain.levels[0].shape[:2]
    per_level = [asdict(r) for r in chain.reports]
    if dds_coverage is not None:
        for row, cov in zip(per_level, dds_coverage):
            row["coverage_dds"] = cov
    return {
        "source": source,
        "width": w,
        "height": h,
        "levels": len(chain.levels),
        "ref": chain.settings.ref,
        "srgb": chain.settings.srgb,
        "alpha_channel": chain.settings.alpha_channel,
        "preserve": chain.settings.preserve,
        "supersample": chain.settings.supersample,
        "has_alpha": chain.has_alpha,
        "target_coverage": chain.target,
        "per_level": per_level,
        "dds_format": dds_format(chain.settings.srgb, chain.settings.dds) if dds else None,
        "files": None if files is None else list(files),
        "warnings": list(chain.warnings),
    }


def parse_formats(text: str | Iterable[str]) -> tuple[str, ...]:
    items = [t.strip().lower() for t in (text.split(",") if isinstance(text, str) else text) if t.strip()]
    bad = [t for t in items if t not in FORMATS]
    if bad or not items:
        raise MipsError(f"Unknown output format(s) {', '.join(bad) or '(none)'}: use dds, png or dds,png")
    return tuple(dict.fromkeys(items))


def check_output_dir(out_dir: str) -> None:
    outputs.check_folder(out_dir, error=MipsError,
                         empty="No output folder: choose the folder the mip chains are written to")


def output_names(stem: str, n_levels: int, formats: Container[str], compare: bool = True) -> list:
    names = []
    if "dds" in formats:
        names.append(f"{stem}.dds")
    if "png" in formats:
        names.extend(f"{stem}_mip{i:02d}.png" for i in range(n_levels))
    names.append(f"{stem}_mips.json")
    if compare:
        names.append(f"{stem}_compare.png")
    return names


def is_output_name(stem: str, name: str) -> bool:
    """``name`` is one of the names a run writes for ``stem``: ``<stem>.dds``, ``<stem>_mipNN.png`` (NN as
    ``output_names`` writes it: two digits or more, no extra leading zero), ``<stem>_mips.json``,
    ``<stem>_compare.png``; exactly, case included."""
    if name in (f"{stem}.dds", f"{stem}_mips.json", f"{stem}_compare.png"):
        return True
    m = re.fullmatch(re.escape(stem) + r"_mip(\d{2,})\.png", name)
    return bool(m) and f"{int(m.group(1)):02d}" == m.group(1)


def _is_report(path: str):
    """The mips report at ``path`` (a dict), or None: no such file, or not a mips report."""
    try:
        with open(path, encoding="utf-8") as fh:
            report = json.load(fh)
    except (OSError, ValueError):
        return None
    if isinstance(report, dict) and isinstance(report.get("levels"), int) and isinstance(report.get("per_level"),
                                                                                        list):
        return report
    return None


def previous_outputs(out_dir: str, stem: str) -> list:
    """The names of the files an earlier run wrote into ``out_dir`` for ``stem`` and that are still there, as its
    report ``<stem>_mips.json`` records them: the names its ``files`` lists. A report written before reports listed
    their files stands for the names of ``stem``'s outputs present in the folder (``is_output_name``). No report,
    or a file of that name that is not a mips report: none. Listed names are kept only if they are ``stem``'s
    output names (never a path, never another file)."""
    report = _is_report(os.path.join(out_dir, f"{stem}_mips.json"))
    if report is None:
        return []
    if "files" in report:
        listed = report["files"] if isinstance(report["files"], list) else []
    else:
        listed = sorted(os.listdir(out_dir))
    names = [n for n in listed if isinstance(n, str) and is_output_name(stem, n) and n != f"{stem}_mips.json"]
    return [n for n in dict.fromkeys(names) if os.path.isfile(os.path.join(out_dir, n))]


def foreign_outputs(out_dir: str, stem: str) -> list:
    """The files in ``out_dir`` that a run for ``stem`` would write over but no EnvFX mips run wrote (no report of
    ``stem`` there lists them): a user's own ``rock.dds`` or ``rock_compare.png`` beside ``rock.png``, or a
    ``rock_mips.json`` that is not a mips report. A bake refuses to replace them."""
    try:
        present = sorted(os.listdir(out_dir))
    except OSError:
        return []  # a folder to be made: nothing in it yet
    ours = set(previous_outputs(out_dir, stem))
    report = f"{stem}_mips.json"
    if ours or _is_report(os.path.join(out_dir, report)):
        ours.add(report)
    return [n for n in present if is_output_name(stem, n) and n not in ours
            and os.path.isfile(os.path.join(out_dir, n))]


class StagedOutput:
    """Files written into a temporary folder inside ``out_dir`` and moved into place only by ``commit()``;
    ``abort()`` (or leaving the ``with`` block by an exception) removes everything, so a failure or a cancel
    leaves ``out_dir`` as it was.

    A second run into the same folder replaces its outputs: ``commit()`` also removes the files that an earlier
    run wrote for the same stems (``previous_outputs``) and this run does not write (the levels beyond a smaller
    image's chain, a DDS or comparison picture no longer asked for), except the paths in ``keep`` (the inputs).
    ``removed`` lists the paths removed, ``not_removed`` the ones that could not be, with the reason."""

    def __init__(self, out_dir: str, formats: str | Iterable[str] = FORMATS, compare: bool = True,
                 keep: Iterable[str] = ()):
        self.formats = parse_formats(formats)
        self.compare = compare
        check_output_dir(out_dir)
        self.out_dir = out_dir
        self.staging = outputs.Staging(out_dir, "mips", error=MipsError)
        self.tmp = self.staging.path
        self.names = []
        self.stems = []
        self.keep = {os.path.realpath(p) for p in keep}
        self.removed = []
        self.not_removed = []
        self.reports: dict[str, dict] = {}  # stem -> the report written (add)
        self.done = False

    def add(self, stem: str, source: str, chain: MipChain) -> list:
        """Encode and stage one chain's files; returns their names."""
        return jobs.finish(self.add_job(stem, source, chain))

    def add_job(self, stem: str, source: str, chain: MipChain) -> Generator[float, None, list]:
        """``add`` as a job generator: progress through the DDS's bands and the PNG levels, in proportion to their
        estimated time (``write_cost``)."""
        names = output_names(stem, len(chain.levels), self.formats, self.compare)
        clash = [n for n in names if n in self.names]
        if clash:
            raise MipsError(f"Two inputs are both named {stem!r}: rename one")
        total = write_cost(chain.settings.dds, self.formats, self.compare)
        try:
            files = {}
            dds_coverage = None
            done = 0.0
            if "dds" in self.formats:
                part = DDS_COST[chain.settings.dds] / total
                files[f"{stem}.dds"], dds_coverage = yield from jobs.within(chain_dds_job(chain), 0.0, part)
                done = part
            if "png" in self.formats:
                pixels = sum(lv.shape[0] * lv.shape[1] for lv in chain.levels)
                for i, lv in enumerate(chain.levels):
                    files[f"{stem}_mip{i:02d}.png"] = encode_png(lv)
                    done += PNG_COST / total * lv.shape[0] * lv.shape[1] / pixels
                    yield done
            report = self.reports[stem] = report_dict(chain, source, "dds" in self.formats, names, dds_coverage)
            files[f"{stem}_mips.json"] = json.dumps(report, indent=2).encode()
            if self.compare:
                files[f"{stem}_compare.png"] = encode_png(compare_picture(chain))
            for name, data in files.items():
                with open(os.path.join(self.tmp, name), "wb") as fh:
                    fh.write(data)
        except OSError as exc:
            raise MipsError(f"Writing into {self.out_dir!r} failed ({exc.strerror or exc}): "
                            f"nothing was written") from None
        self.names.extend(names)
        self.stems.append(stem)
        return names

    def _stale(self) -> list:
        """Paths of the earlier runs' files of this run's stems that this run does not write."""
        new = set(self.names)
        paths = []
        for stem in self.stems:
            for name in previous_outputs(self.out_dir, stem):
                path = os.path.join(self.out_dir, name)
                if name not in new and os.path.realpath(path) not in self.keep:
                    paths.append(path)
        return paths

    def commit(self) -> list:
        """Move the staged files in, then remove the earlier runs' files this run replaces; returns the paths
        written. Removal comes last: if a file cannot be moved in, everything is as it was before the run."""
        stale = self._stale()  # read before the new reports replace the old ones
        moved = []
        try:
            for name in self.names:
                dst = os.path.join(self.out_dir, name)
                os.replace(os.path.join(self.tmp, name), dst)
                moved.append(dst)
        except OSError as exc:
            for path in moved:
                try:
                    os.remove(path)
                except OSError:
                    pass
            self.abort()
            raise MipsError(f"Writing into {self.out_dir!r} failed ({exc.strerror or exc}): "
                            f"nothing was written") from None
        self.staging.commit([])
        self.done = True
        for path in stale:
            try:
                os.remove(path)
                self.removed.append(path)
            except OSError as exc:
                self.not_removed.append(f"{path} ({exc.strerror or exc})")
        return moved

    def abort(self) -> None:
        if self.done:
            return
        self.staging.abort()
        self.done = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or not self.done:
            self.abort()
        return False


def write_outputs_job(items: Sequence[tuple[str, str, MipChain]], out_dir: str, formats: str | Iterable[str] = FORMATS,
                      compare: bool = True) -> Generator[float, None, list]:
    """Write every (stem, source, MipChain) of ``items`` into ``out_dir``; job generator returning the paths.
    Nothing appears in ``out_dir`` unless every file was written (see StagedOutput)."""
    with StagedOutput(out_dir, formats, compare) as staged:
        for n, (stem, source, chain) in enumerate(items):
            yield from jobs.within(staged.add_job(stem, source, chain), n / len(items), 1.0 / len(items))
        return staged.commit()


def write_outputs(items: Sequence[tuple[str, str, MipChain]], out_dir: str, formats: str | Iterable[str] = FORMATS,
                  compare: bool = True) -> list:
    job = write_outputs_job(items, out_dir, formats, compare)
    return jobs.finish(job)


# --- a test card ------------------------------------------------------------------------------------------

def make_leaf_card(height: int = 256, width: int | None = None, leaves: int = 24, seed: int = 0,
                   slender: float = 1.0) -> np.ndarray:
    """A procedural leaf-card texture (uint8 RGBA, sRGB colour): a twig with leaves, anti-aliased alpha edges.

    Deterministic for a seed. Leaves are ellipses along a stem with a vein; alpha falls off over ~1.5 texels at
    the edge, like a painted or baked leaf card. ``slender`` < 1 narrows the leaves (needles, grass-like)."""
    width = height if width is None else width
    rng = np.random.default_rng(seed)
    s = float(max(height, width))
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    y = (y + 0.5) / s
    x = (x + 0.5) / s
    cx_mid = width / s * 0.5
    alpha = np.zeros((height, width), np.float32)
    # the transparent background keeps a leaf colour (no dark halo where an engine filters colour)
    shade = np.full((height, width), 0.7, np.float32)
    # stem: a thin slightly curved line down the middle
    stem_x = cx_mid + 0.03 * np.sin(y * 5.0)
    stem_d = np.abs(x - stem_x) * s
    stem_a = np.clip(1.5 - stem_d / 1.2, 0.0, 1.0) * (y > 0.04) * (y < height / s - 0.02)
    t = rng.uniform(0.08, height / s - 0.08, leaves).astype(np.float32)
    side = np.where(np.arange(leaves) % 2 == 0, 1.0, -1.0).astype(np.float32)
    length = rng.uniform(0.10, 0.2, leaves).astype(np.float32)
    breadth = length * rng.uniform(0.22, 0.35, leaves).astype(np.float32) * np.float32(slender)
    angle = (np.pi / 2 - side * rng.uniform(0.5, 1.1, leaves)).astype(np.float32)  # from +y (down)
    for i in range(leaves):  # a handful of leaves; each is a vectorised image operation
        bx = cx_mid + 0.03 * np.sin(t[i] * 5.0)
        ca, sa = np.cos(angle[i]), np.sin(angle[i])
        u = (x - bx) * ca + (y - t[i]) * sa       # along the leaf
        v = -(x - bx) * sa + (y - t[i]) * ca      # across
        along = u / length[i]
        width_here = breadth[i] * np.sqrt(np.clip(1.0 - (2.0 * along - 1.0) ** 2, 0.0, 1.0))
        inside = (np.abs(v) - width_here) * s          # signed distance in texels (approx.)
        a = np.where((along >= 0.0) & (along <= 1.0), np.clip(0.5 - inside / 1.5, 0.0, 1.0), 0.0)
        vein = np.clip(1.0 - np.abs(v) * s / 1.0, 0.0, 1.0)
        light = 0.6 + 0.4 * (1.0 - along) - 0.25 * vein
        shade = np.where(a > alpha, light, shade)
        alpha = np.maximum(alpha, a)
    alpha = np.maximum(alpha, stem_a)
    shade = np.where((stem_a >= alpha) & (stem_a > 0), 0.5, shade)
    img = np.empty((height, width, 4), np.uint8)
    img[..., 0] = to_u8(0.22 * shade + 0.05)
    img[..., 1] = to_u8(0.55 * shade + 0.1)
    img[..., 2] = to_u8(0.12 * shade)
    img[..., 3] = to_u8(alpha)
    return img
