"""Colorize core: the colorize sets, the neutralised albedo and the reference blend the shader group matches."""

import numpy as np
import pytest

from core import colorize as cz


def test_overlay_over_mid_grey_is_the_colour_and_follows_the_base_elsewhere():
    colour = np.array([0.2, 0.6, 0.9])
    assert np.allclose(cz.overlay(np.full(3, 0.5), colour), colour)
    # darker base -> darker result, brighter base -> brighter, black and white stay
    assert np.all(cz.overlay(np.full(3, 0.25), colour) < colour)
    assert np.all(cz.overlay(np.full(3, 0.75), colour) > colour)
    assert np.allclose(cz.overlay(np.zeros(3), colour), 0.0)
    assert np.allclose(cz.overlay(np.ones(3), colour), 1.0)


def test_blend_mask_keeps_the_albedo_where_zero():
    albedo = np.array([[0.5, 0.5, 0.5], [0.3, 0.4, 0.6]])
    colour = np.array([[0.1, 0.8, 0.2], [0.1, 0.8, 0.2]])
    out = cz.blend(albedo, colour, np.array([0.0, 1.0]))
    assert np.allclose(out[0], albedo[0])
    assert np.allclose(out[1], cz.overlay(albedo[1], colour[1]))
    half = cz.blend(albedo, colour, 0.5)
    assert np.allclose(half, 0.5 * albedo + 0.5 * cz.overlay(albedo, colour))


def test_set_from_colours_lays_the_gradient_along_the_row_and_bands_in_brightness():
    cols = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    s = cz.set_from_colours(cols, count=3, band_spread=0.25)
    assert s.shape == (3 * cz.BANDS, cz.TEX_W, 4) and s.dtype == np.float32
    row = s[3]  # ecotope 0, band 3
    assert row[0, 0] > 0.95 * row[0, :3].max() and row[-1, 2] > row[-1, 0]
    assert np.all(np.diff(row[:, 0]) <= 1e-7) and np.all(np.diff(row[:, 2]) >= -1e-7)
    # band 0 darker than band 7, same hue
    assert s[0, 0, 0] < s[7, 0, 0]
    assert s[0, 0, 0] == pytest.approx(0.75 * (1 - 0.5 / cz.TEX_W), rel=1e-5)
    assert np.allclose(s[:, :, 3], 1.0)
    with pytest.raises(cz.ColorizeError):
        cz.set_from_colours(cols, count=0)
    with pytest.raises(cz.ColorizeError):
        cz.set_from_colours(np.zeros((2, 2)))


def test_set_from_image_keeps_a_painted_strip_texel_for_texel_and_averages_bigger_ones():
    rng = np.random.default_rng(1)
    strip = rng.random((16, 128, 4)).astype(np.float32)
    assert np.allclose(cz.set_from_image(strip, count=2)[:, :, :3], strip[:, :, :3])
    big = np.repeat(np.repeat(strip, 2, axis=0), 4, axis=1)  # each texel a 2 x 4 block
    assert np.allclose(cz.set_from_image(big, count=2)[:, :, :3], strip[:, :, :3], atol=1e-5)
    small = cz.set_from_image(strip[:1, :2], count=1)
    assert small.shape == (8, 128, 4)
    assert np.allclose(small[:, 0, :3], strip[0, 0, :3]) and np.allclose(small[:, -1, :3], strip[0, 1, :3])


def test_neutralise_gives_mid_grey_mean_over_opaque_texels_and_leaves_the_input_alone():
    rng = np.random.default_rng(2)
    px = np.empty((32, 32, 4), np.float32)
    px[..., :3] = rng.random((32, 32, 3)) * np.array([0.2, 0.5, 0.1])  # a dark green leaf
    px[..., 3] = 1.0
    px[:8, :, 3] = 0.0  # cut out
    px[:8, :, :3] = 1.0  # white in the cut-out must not count
    before = px.copy()
    out = cz.neutralise(px)
    assert np.array_equal(px, before)
    assert np.allclose(out[8:, :, :3].reshape(-1, 3).mean(0), 0.5, atol=1e-3)
    # detail kept: ratios between texels stay
    ratio = px[8:, :, 0] / px[8:, :, 0].mean()
    assert np.allclose(out[8:, :, 0] / out[8:, :, 0].mean(), ratio, atol=1e-4)
    assert np.array_equal(out[..., 3], px[..., 3])
    srgb = cz.neutralise(before, srgb=True)
    assert np.allclose(srgb[8:, :, :3].reshape(-1, 3).mean(0), 0.5, atol=1e-3)


def test_sample_linear_is_blender_linear_extend():
    img = np.arange(16, dtype=np.float64).reshape(4, 4)
    # at a texel centre: the texel
    assert cz.sample_linear(img, [[(1 + 0.5) / 4, (2 + 0.5) / 4]])[0] == pytest.approx(img[2, 1])
    # half way between two centres: their mean
    assert cz.sample_linear(img, [[2 / 4, 0.5 / 4]])[0] == pytest.approx(0.5 * (img[0, 1] + img[0, 2]))
    # outside: clamped
    assert cz.sample_linear(img, [[-3.0, -3.0]])[0] == img[0, 0]
    assert cz.sample_closest(img, [[0.99, 0.3]])[0] == img[1, 3]


def test_colorize_picks_band_ecotope_and_world_value():
    s = cz.set_from_colours(np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]), count=2, ecotope_shift=0.0)
    s[8:, :, :3] *= np.array([1.0, 0.0, 0.0])  # ecotope 1 is red
    world = np.full((4, 4), 0.25)
    region = cz.Region(-10.0, -10.0, 20.0)
    out = cz.colorize(np.array([[0.0, 0.0, 3.0]]), np.full((1, 3), 0.5), s, world, region, band=4)
    expect = 0.25 * (1 + 0.35 * (2 * 4 / 7 - 1))
    assert np.allclose(out, expect, atol=1e-3)
    eco = np.full((4, 4), 1.0)
    red = cz.colorize(np.array([[0.0, 0.0, 0.0]]), np.full((1, 3), 0.5), s, world, region, band=4, ecotope_map=eco)
    assert red[0, 0] == pytest.approx(out[0, 0]) and red[0, 1] == 0.0
    assert list(cz.ecotope_index([0.0, 0.49, 0.51, 1.0], 2)) == [0, 0, 1, 1]
    with pytest.raises(cz.ColorizeError):
        cz.Region(0, 0, 0).uv(np.zeros((1, 3)))


def test_world_data_must_be_square_and_present():
    cz.check_world_data(64, 64)
    with pytest.raises(cz.ColorizeError, match="square"):
        cz.check_world_data(64, 32)
    with pytest.raises(cz.ColorizeError, match="no pixels"):
        cz.check_world_data(0, 0)
