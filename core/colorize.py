"""Vegetation colorization (Horizon Zero Dawn talk), pure numpy: the reference the shader group "EnvFX Colorize"
must match, and the helpers that make its textures.

The talk colours all vegetation from small "ecotope" colorize textures, 128 x 8 texels each (64 of them in a
texture array): the asset's place in the world picks the texture, a grey-scale world-data texture drives the
coordinate along the 128 texels, and the artist picks one of the eight rows ("bands") per asset. One sample is
taken per object (at its origin), except grass, which is sampled where it stands (per vertex). The albedo textures
are averaged to mid-grey and the sampled colour is laid over them through a mask with an overlay blend: "brighter
where the foreground is bright and darker where it is dark"; over mid-grey the result is the colour itself.

Layout used here (and by the group): a colorize *set* is one image, ``TEX_W`` texels wide and ``BANDS * count``
rows tall, row 0 at the top: ecotope ``e`` band ``b`` is row ``e * BANDS + b`` (a texture array stacked into one
image, which both Eevee and Cycles sample). Along a row the world-data value 0..1 is the coordinate, filtered
linearly between texel centres and clamped at the ends (Blender's Linear interpolation, Extend extension); across
rows there is no blending (the group samples each row's centre).

All colours are linear (scene-referred) values, as the shader sees them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .colour import srgb_to_linear

TEX_W = 128       # texels along a colorize texture (the world-data coordinate)
BANDS = 8         # rows of a colorize texture: the artist's choices per asset
MAX_ECOTOPES = 64  # textures in the talk's array
MID_GREY = 0.5


class ColorizeError(ValueError):
    """Bad input: the message says what is wrong and what to do."""


# --- building colorize sets ------------------------------------------------------------------------------

def _check_count(count: int) -> int:
    count = int(count)
    if not 1 <= count <= MAX_ECOTOPES:
        raise ColorizeError(f"A colorize set holds 1 to {MAX_ECOTOPES} ecotope textures, not {count}")
    return count


def set_from_colours(colours: npt.ArrayLike, count: int = 1, band_spread: float = 0.35,
                     ecotope_shift: float = 0.0) -> npt.NDArray[np.float32]:
    """A colorize set (``count * BANDS``, ``TEX_W``, 4) float32 from a few picked colours.

    ``colours``: (k, 3) linear RGB, k >= 1, laid along the 128 texels as a piecewise-linear gradient (world-data
    value 0 at the first colour, 1 at the last); or (BANDS, k, 3) to give every band its own gradient. With one
    gradient for all bands, band ``b`` is it scaled in brightness from ``1 - band_spread`` (band 0) to
    ``1 + band_spread`` (band 7), so the eight choices are lighter and darker versions of the palette. Ecotope
    ``e`` of ``count`` is the gradient rolled by ``e * ecotope_shift`` of its length (0: all ecotopes alike, which
    the artist then edits; clamped at the ends, not wrapped)."""
    count = _check_count(count)
    c = np.asarray(colours, dtype=np.float64)
    if c.ndim == 2:
        if c.shape[0] < 1 or c.shape[1] != 3:
            raise ColorizeError(f"Pick at least one RGB colour (got an array of shape {c.shape})")
        scale = 1.0 + band_spread * np.linspace(-1.0, 1.0, BANDS)
        c = c[None] * scale[:, None, None]
    elif c.ndim != 3 or c.shape[0] != BANDS or c.shape[2] != 3 or c.shape[1] < 1:
        raise ColorizeError(f"Per-band colours need shape ({BANDS}, k, 3), got {c.shape}")
    if not np.isfinite(c).all():
        raise ColorizeError("The picked colours hold NaN or infinite values")
    k = c.shape[1]
    out = np.ones((count * BANDS, TEX_W, 4), np.float32)
    x = (np.arange(TEX_W) + 0.5) / TEX_W
    for e in range(count):
        xe = np.clip(x + e * ecotope_shift, 0.0, 1.0) * (k - 1)
        i0 = np.clip(np.floor(xe).astype(int), 0, max(k - 2, 0))
        t = (xe - i0)[None, :, None] if k > 1 else np.zeros((1, TEX_W, 1))
        i1 = np.minimum(i0 + 1, k - 1)
        out[e * BANDS:(e + 1) * BANDS, :, :3] = c[:, i0] * (1.0 - t) + c[:, i1] * t
    np.clip(out, 0.0, None, out=out)
    return out


def set_from_image(pixels: npt.ArrayLike, count: int = 1, srgb: bool = False) -> npt.NDArray[np.float32]:
    """A colorize set (``count * BANDS``, ``TEX_W``, 4) float32 from an image (H, W, 3 or 4), row 0 at the top:
    the image is resampled (box-averaged where it is bigger, linear where smaller) to ``count * BANDS`` rows of
    ``TEX_W`` texels, so a painted 128 x 8 strip per ecotope, stacked, comes through texel for texel. ``srgb``:
    the values are sRGB-encoded (a PNG read as bytes) and are converted to linear."""
    count = _check_count(count)
    p = np.asarray(pixels, dtype=np.float32)
    if p.ndim != 3 or p.shape[2] < 3 or p.shape[0] < 1 or p.shape[1] < 1:
        raise ColorizeError(f"The colorize image must be an RGB(A) image, got an array of shape {p.shape}")
    rgb = p[:, :, :3]
    if srgb:
        rgb = srgb_to_linear(rgb)
    rows = count * BANDS
    rgb = _resample_axis(_resample_axis(rgb, rows, 0), TEX_W, 1)
    out = np.ones((rows, TEX_W, 4), np.float32)
    out[:, :, :3] = np.clip(rgb, 0.0, None)
    return out


def _resample_axis(a: np.ndarray, n: int, axis: int) -> np.ndarray:
    m = a.shape[axis]
    if m == n:
        return a
    if m > n:  # box average: each output texel averages the source texels it covers (fractional overlap)
        edges = np.linspace(0.0, m, n + 1)
        cum = np.concatenate([np.zeros_like(np.take(a, [0], axis)), np.cumsum(a, axis=axis, dtype=np.float64)], axis)

        def at(x):
            i = np.clip(np.floor(x).astype(int), 0, m - 1)
            f = (x - i).reshape([-1 if d == axis else 1 for d in range(a.ndim)])
            return np.take(cum, i, axis) + f * np.take(a, i, axis)

        return ((at(edges[1:]) - at(edges[:-1])) / (m / n)).astype(np.float32)
    x = np.clip((np.arange(n) + 0.5) * m / n - 0.5, 0.0, m - 1)
    i0 = np.floor(x).astype(int)
    i1 = np.minimum(i0 + 1, m - 1)
    t = (x - i0).reshape([-1 if d == axis else 1 for d in range(a.ndim)])
    return (np.take(a, i0, axis) * (1.0 - t) + np.take(a, i1, axis) * t).astype(np.float32)


# --- albedo ----------------------------------------------------------------------------------------------

def neutralise(pixels: npt.ArrayLike, srgb: bool = False, alpha_cut: float = 0.5) -> npt.NDArray[np.float32]:
    """An albedo texture averaged to mid-grey: each colour channel scaled so its mean over the opaque texels
    (alpha >= ``alpha_cut``; all texels when none is) is ``MID_GREY`` after clipping to 0..1 (a texture with
    bright specks gets a little more gain so that the clipped mean is still mid-grey). The detail (the ratio of
    every unclipped texel to the mean) stays; the hue and overall brightness go, for the colorize to supply. Returns
    (H, W, 4) float32 linear values (alpha kept). ``srgb``: the input is sRGB-encoded (converted first). A channel
    that is black everywhere stays black (nothing to scale), which the caller reports."""
    p = np.asarray(pixels, dtype=np.float32)
    if p.ndim != 3 or p.shape[2] not in (3, 4) or p.size == 0:
        raise ColorizeError(f"The albedo must be an RGB(A) image, got an array of shape {p.shape}")
    rgb = srgb_to_linear(p[:, :, :3]) if srgb else p[:, :, :3].astype(np.float32)
    alpha = p[:, :, 3] if p.shape[2] == 4 else np.ones(p.shape[:2], np.float32)
    opaque = alpha >= alpha_cut
    if not opaque.any():
        opaque = np.ones_like(opaque)
    px = rgb[opaque].astype(np.float64)
    mean = px.mean(axis=0)
    scale = np.where(mean > 1e-8, MID_GREY / np.maximum(mean, 1e-8), 0.0)
    for _ in range(16):  # texels clipped at 1 pull the mean down: raise the scale until the clipped mean is mid-grey
        got = np.clip(px * scale, 0.0, 1.0).mean(axis=0)
        if np.all(np.abs(got - MID_GREY) < 1e-5) or not np.any(got > 0):
            break
        scale = np.where(got > 1e-8, scale * MID_GREY / np.maximum(got, 1e-8), scale)
    out = np.empty(p.shape[:2] + (4,), np.float32)
    out[:, :, :3] = np.clip(rgb * scale.astype(np.float32), 0.0, 1.0)
    out[:, :, 3] = alpha
    return out


# --- the blend -------------------------------------------------------------------------------------------

def overlay(base: npt.ArrayLike, blend: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The overlay blend (Blender's Mix > Overlay at factor 1): ``2ab`` where the base is below 0.5, else
    ``1 - 2(1-a)(1-b)``. Over a mid-grey base the result is the blend colour."""
    a = np.asarray(base, dtype=np.float64)
    b = np.asarray(blend, dtype=np.float64)
    return np.where(a < 0.5, 2.0 * a * b, 1.0 - 2.0 * (1.0 - a) * (1.0 - b))


def blend(albedo: npt.ArrayLike, colour: npt.ArrayLike, mask: npt.ArrayLike = 1.0) -> npt.NDArray[np.float64]:
    """The colour laid over the (neutralised) albedo through the mask: ``albedo + mask * (overlay - albedo)``
    (Blender's Mix > Overlay with the mask as its factor)."""
    a = np.asarray(albedo, dtype=np.float64)
    m = np.asarray(mask, dtype=np.float64)
    if m.ndim and m.shape[-1:] != (1,) and m.shape == a.shape[:-1]:
        m = m[..., None]
    return a + m * (overlay(a, colour) - a)


# --- sampling --------------------------------------------------------------------------------------------

@dataclass
class Region:
    """The world-space rectangle the world-data texture covers (X and Y; Z is ignored): its lower-left corner and
    its size. A point outside takes the texture's edge (Extend)."""
    min_x: float = -50.0
    min_y: float = -50.0
    size: float = 100.0

    def uv(self, positions: npt.ArrayLike) -> npt.NDArray[np.float64]:
        p = np.asarray(positions, dtype=np.float64).reshape(-1, np.shape(positions)[-1])
        if not self.size > 0.0:
            raise ColorizeError(f"The world-data region needs a size above 0, not {self.size}")
        return np.stack([(p[:, 0] - self.min_x) / self.size, (p[:, 1] - self.min_y) / self.size], axis=1)


def sample_linear(image: npt.ArrayLike, uv: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Bilinear lookup of ``image`` (H, W[, C]) stored bottom row first (as Blender stores it) at ``uv`` (N, 2),
    texel centres at (i + 0.5) / W, clamped at the borders: Blender's Image Texture node with Linear
    interpolation and Extend extension."""
    img = np.asarray(image, dtype=np.float64)
    h, w = img.shape[:2]
    uv = np.asarray(uv, dtype=np.float64).reshape(-1, 2)
    x = np.clip(uv[:, 0] * w - 0.5, 0.0, w - 1)
    y = np.clip(uv[:, 1] * h - 0.5, 0.0, h - 1)
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    x1, y1 = np.minimum(x0 + 1, w - 1), np.minimum(y0 + 1, h - 1)
    tx, ty = x - x0, y - y0
    if img.ndim == 3:
        tx, ty = tx[:, None], ty[:, None]
    top = img[y0, x0] * (1 - tx) + img[y0, x1] * tx
    bot = img[y1, x0] * (1 - tx) + img[y1, x1] * tx
    return top * (1 - ty) + bot * ty


def sample_closest(image: npt.ArrayLike, uv: npt.ArrayLike) -> np.ndarray:
    """Nearest-texel lookup (Blender's Closest interpolation, Extend), ``image`` bottom row first."""
    img = np.asarray(image)
    h, w = img.shape[:2]
    uv = np.asarray(uv, dtype=np.float64).reshape(-1, 2)
    x = np.clip(np.floor(uv[:, 0] * w).astype(int), 0, w - 1)
    y = np.clip(np.floor(uv[:, 1] * h).astype(int), 0, h - 1)
    return img[y, x]


def ecotope_index(value: npt.ArrayLike, count: int) -> npt.NDArray[np.int_]:
    """The ecotope an ecotope-map value 0..1 picks: ``round(value * (count - 1))`` clamped (value ``e / (count-1)``
    picks ecotope ``e``)."""
    v = np.clip(np.asarray(value, dtype=np.float64), 0.0, 1.0)
    return np.clip(np.floor(v * (count - 1) + 0.5), 0, count - 1).astype(int)


def sample_set(atlas: npt.ArrayLike, ecotope: npt.ArrayLike, band: npt.ArrayLike, value: npt.ArrayLike
              ) -> npt.NDArray[np.float64]:
    """(N, 3) colours of a colorize set (``count * BANDS``, ``TEX_W``, 4), row 0 at the top, for ecotope, band
    (0..7, clamped) and world-data value (0..1) per sample: the row's centre, linear along the row, clamped."""
    a = np.asarray(atlas, dtype=np.float64)
    rows = a.shape[0]
    count = rows // BANDS
    value = np.atleast_1d(np.asarray(value, dtype=np.float64))
    n = len(value)
    e = np.clip(np.broadcast_to(np.asarray(ecotope, dtype=int), (n,)), 0, count - 1)
    b = np.clip(np.broadcast_to(np.round(np.asarray(band, dtype=np.float64)).astype(int), (n,)), 0, BANDS - 1)
    row = e * BANDS + b
    x = np.clip(np.clip(value, 0.0, 1.0) * TEX_W - 0.5, 0.0, TEX_W - 1)
    x0 = np.floor(x).astype(int)
    x1 = np.minimum(x0 + 1, TEX_W - 1)
    t = (x - x0)[:, None]
    return a[row, x0, :3] * (1 - t) + a[row, x1, :3] * t


def colorize(positions: npt.ArrayLike, albedo: npt.ArrayLike, atlas: npt.ArrayLike, world: npt.ArrayLike,
             region: Region, band: npt.ArrayLike, mask: npt.ArrayLike = 1.0, ecotope: npt.ArrayLike = 0,
             ecotope_map: npt.ArrayLike | None = None) -> npt.NDArray[np.float64]:
    """The whole chain for ``positions`` (N, 3) world space (an object's origin, or each vertex of grass):
    the world-data value at the position (``world`` (H, W) grey-scale, bottom row first, bilinear), the ecotope
    (from ``ecotope_map`` (H, W) sampled closest at the same place when given, else ``ecotope``), the set's colour
    for the band, blended over ``albedo`` (N, 3) through ``mask``. Returns (N, 3) float64 linear colours."""
    uv = region.uv(positions)
    value = sample_linear(world, uv)
    count = np.asarray(atlas).shape[0] // BANDS
    if ecotope_map is not None:
        ecotope = ecotope_index(sample_closest(ecotope_map, uv), count)
    colour = sample_set(atlas, ecotope, band, value)
    return blend(np.asarray(albedo, dtype=np.float64).reshape(-1, 3), colour, mask)


def check_world_data(width: int, height: int, name: str = "the world-data texture") -> None:
    """A world-data texture must exist and be square (it is mapped over a square region of the world)."""
    if width <= 0 or height <= 0:
        raise ColorizeError(f"{name} has no pixels (missing file?): pick or load a grey-scale image")
    if width != height:
        raise ColorizeError(f"{name} is {width} x {height}: the world-data texture must be square (it covers a square "
                            f"region of the world); resize or crop it")
