import numpy as np
import pytest

from core import png


def test_decode_png_round_trip():
    img = (np.arange(2 * 3 * 4).reshape(2, 3, 4) * 9).astype(np.uint8)
    assert np.array_equal(png.decode_png(png.encode_png(img)), img)


def test_decode_png_without_header_says_so():
    """A PNG whose IHDR chunk is missing (a damaged file) is refused with a ValueError naming the chunk, like the
    decoder's other refusals; it raised "cannot unpack non-iterable NoneType" (found by the type checker)."""
    data = png.encode_png((np.ones((2, 2, 4)) * 255).astype(np.uint8))
    start = data.index(b"IHDR") - 4
    size = int.from_bytes(data[start:start + 4], "big")
    damaged = data[:start] + data[start + 12 + size:]  # the IHDR chunk cut out
    with pytest.raises(ValueError, match="IHDR"):
        png.decode_png(damaged)


def _reference16(values, lo, scale):
    """round((values - lo) * scale) to the nearest integer, ties to even, clamped to 0..65535: the float32
    arithmetic quantise16 does, then numpy's rounding."""
    scaled = (np.asarray(values, np.float32) - np.float32(lo)) * np.float32(scale)
    return np.clip(np.rint(scaled), 0, 65535).astype(np.uint16)


def test_quantise16_rounds_to_the_nearest_texel_ties_to_even_and_clamps():
    """quantise16 leaves 2^23 + texel in each float32 and texels16 reads the texel from its low half: the nearest
    integer (ties to even: 0.5 -> 0, 1.5 -> 2, 65534.5 -> 65534), values beyond either end at 0 and 65535, and
    every value of the range, in all of a float32's roundings near the texels, as numpy's rint gives it."""
    ties = np.array([0.5, 1.5, 2.5, 32767.5, 65534.5], np.float32)
    got = png.texels16(png.quantise16(ties.copy(), np.float32(0.0), np.float32(1.0)))
    assert got.tolist() == [0, 2, 2, 32768, 65534]
    ends = np.array([-1e9, -0.7, -0.0, 65535.4, 65535.6, 70000.0, 3e38, np.inf, -np.inf], np.float32)
    got = png.texels16(png.quantise16(ends.copy(), np.float32(0.0), np.float32(1.0)))
    assert got.tolist() == [0, 0, 0, 65535, 65535, 65535, 65535, 65535, 0]
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.uniform(-2.0, 3.0, 100000), np.linspace(-1.0, 2.0, 65536 * 4)]).astype(np.float32)
    lo, scale = np.float32(-1.0), np.float32(65535.0 / 3.0)
    got = png.texels16(png.quantise16(values.copy().reshape(2, -1), lo, scale))
    assert got.shape == (2, values.size // 2) and got.dtype == np.uint16
    assert np.array_equal(got.reshape(-1), _reference16(values, lo, scale))


def test_quantise16_unclamped_keeps_values_within_the_range_as_the_clamp_would():
    """Without the clamp (the caller knows the range holds every value), values exactly at either end of the range
    and within a rounding of them give texels 0 and 65535, not a wrapped 65536 (0) or a negative number."""
    rng = np.random.default_rng(9)
    for _ in range(20):
        values = (np.float32(rng.uniform(-1e3, 1e3)) + rng.uniform(0, rng.uniform(1e-4, 10.0), 5000)).astype(
            np.float32)
        lo, hi = values.min(), values.max()
        scale = np.float32(65535.0 / (float(hi) - float(lo)))
        got = png.texels16(png.quantise16(values.copy(), lo, scale, clamp=False))
        assert np.array_equal(got, _reference16(values, lo, scale))
        assert got.min() == 0 and got.max() == 65535


def test_the_in_memory_png16_is_quantised_as_the_streamed_one():
    """encode_png16_from_float (compressed bakes, whole images) quantises with quantise16 too: the same texels,
    ties included, for an interleaved (H, W, C) image whose channels have their own ranges."""
    rng = np.random.default_rng(1)
    image = rng.uniform(-3.0, 5.0, (7, 11, 3)).astype(np.float32)
    image[0, :3, 0] = [0.5, 1.5, 2.5]  # ties (channel 0: lo 0 and scale 1 below)
    lo = np.array([0.0, -3.0, -4.0], np.float32)
    scale = np.array([1.0, 65535.0 / 8.0, 1000.0], np.float32)
    got = png.decode_png(png.encode_png16_from_float(image, lo, scale, level=1))
    want = np.stack([_reference16(image[..., k], lo[k], scale[k]) for k in range(3)], axis=-1)
    assert np.array_equal(got, want) and got[0, :3, 0].tolist() == [0, 2, 2]


def test_quantise16_unclamped_takes_values_within_a_quarter_texel_beyond_either_end():
    """Unclamped, scaled values a little beyond either end (a unit normal a rounding over 1, which the normals'
    check lets through) still give texels 0 and 65535: 2^23 plus a value above -0.25 rounds to 2^23 (texel 0), not
    to 2^23 - 0.5 (whose low bits read 65535)."""
    values = np.array([-0.2499, -0.125, -0.0, 0.49, 65534.51, 65535.0, 65535.125, 65535.49], np.float32)
    got = png.texels16(png.quantise16(values.copy(), np.float32(0.0), np.float32(1.0), clamp=False))
    assert got.tolist() == [0, 0, 0, 0, 65535, 65535, 65535, 65535]
