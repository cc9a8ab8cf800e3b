"""Alpha-coverage mip chains (core/mips.py): coverage, filtering, sRGB, files read back by real readers."""

import importlib.util
import io
import json
import os
import re
import struct

import numpy as np
import pytest
from PIL import Image

from core import mips

_spec = importlib.util.spec_from_file_location("mips_dds_reader", os.path.join(os.path.dirname(__file__),
                                                                                "mips_dds_reader.py"))
assert _spec is not None and _spec.loader is not None
dds_reader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dds_reader)


def tolerance(rep):
    """The acceptance bound: 1% absolute, or one texel's share where the level is too small for 1%."""
    return max(0.01, 1.0 / (rep.width * rep.height)) + 1e-9


def blobs(h, w, seed=0, n=12):
    """Soft-edged blobs of varied size: an asymmetric alpha-tested texture."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    a = np.zeros((h, w), np.float32)
    for _ in range(n):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r = rng.uniform(0.03, 0.12) * max(h, w)
        d = np.hypot((y - cy) / r, (x - cx) / (0.5 * r))
        a = np.maximum(a, np.clip(2.0 - 2.0 * d, 0.0, 1.0))
    img = np.zeros((h, w, 4), np.uint8)
    img[..., 0] = rng.integers(0, 256, (h, w))
    img[..., 1] = 120
    img[..., 2] = (x * 255 / max(w - 1, 1)).astype(np.uint8)
    img[..., 3] = mips.to_u8(a)
    return img


# --- sizes and filtering -----------------------------------------------------------------------------------

@pytest.mark.parametrize("h,w,n", [(256, 256, 9), (255, 173, 8), (1, 37, 6), (37, 1, 6), (1, 1, 1), (3, 5, 3),
                                   (1000, 600, 10)])
def test_level_sizes_reach_1x1_with_floor_halving(h, w, n):
    sizes = mips.level_sizes(h, w)
    assert len(sizes) == n and sizes[-1] == (1, 1)
    assert all(b == (max(1, a[0] // 2), max(1, a[1] // 2)) for a, b in zip(sizes, sizes[1:]))
    chain = mips.build_chain(blobs(h, w) if min(h, w) > 1 else np.full((h, w, 4), 200, np.uint8))
    assert [lv.shape[:2] for lv in chain.levels] == sizes


@pytest.mark.parametrize("h,w", [(37, 23), (9, 16), (1, 15), (64, 64)])
def test_box_filter_keeps_the_mean_for_odd_and_npot_sizes(h, w):
    rng = np.random.default_rng(3)
    img = rng.random((h, w, 4)).astype(np.float32)
    level = img
    while level.shape[:2] != (1, 1):
        nxt = mips.downsample(level)
        np.testing.assert_allclose(nxt.mean(axis=(0, 1)), level.mean(axis=(0, 1)), rtol=0, atol=1e-5)
        level = nxt
    const = np.full((h, w, 4), 0.3, np.float32)
    np.testing.assert_allclose(mips.downsample(const), 0.3, atol=1e-6)


def test_odd_filter_weights_are_the_exact_box():
    # 5 texels -> 2: each output covers 2.5 inputs: weights (2, 2, 1)/5 and (1, 2, 2)/5
    x = np.array([1, 2, 3, 4, 5], np.float32).reshape(1, 5, 1)
    out = mips.downsample(x)
    np.testing.assert_allclose(out.ravel(), [(2 * 1 + 2 * 2 + 1 * 3) / 5, (1 * 3 + 2 * 4 + 2 * 5) / 5], atol=1e-6)


# --- coverage ----------------------------------------------------------------------------------------------

def test_coverage_measure_counts_bilinear_subsamples():
    assert mips.coverage(np.full((4, 4), 255, np.uint8)) == 1.0
    assert mips.coverage(np.zeros((4, 4), np.uint8)) == 0.0
    # a hard edge between columns: the sub-samples left of the midpoint between texel centres pass
    a = np.zeros((2, 4), np.float32)
    a[:, :2] = 1.0
    assert mips.coverage(a, 0.5, 4) == pytest.approx(0.5)
    # a single texel of alpha 1 among 0: the samples within 0.5 texel of its centre pass (bilinear)
    a = np.zeros((5, 5), np.float32)
    a[2, 2] = 1.0
    s = 8
    offs = (np.arange(-s, 2 * s) + 0.5) / s - 1.0  # sub-sample positions over 3 texels, relative to the centre
    tent = np.clip(1 - np.abs(offs), 0, None)
    expect = np.count_nonzero(np.outer(tent, tent) >= 0.5) / (25 * s * s)
    assert mips.coverage(a, 0.5, s) == pytest.approx(expect)


@pytest.mark.parametrize("h,w,seed", [(256, 256, 0), (255, 173, 1), (200, 120, 2), (64, 512, 3)])
def test_coverage_of_every_level_matches_level0(h, w, seed):
    chain = mips.build_chain(blobs(h, w, seed))
    worst_naive = 0.0
    for rep, lv in zip(chain.reports, chain.levels):
        measured = mips.coverage(lv[..., 3], 0.5, 4)  # re-measured on the stored 8-bit level
        assert measured == pytest.approx(rep.coverage, abs=1e-12)
        assert abs(measured - chain.target) <= tolerance(rep), (rep, chain.target)
        worst_naive = max(worst_naive, abs(rep.coverage_naive - chain.target))
        print(f"level {rep.level} {rep.width}x{rep.height}: target {chain.target:.4f} naive "
              f"{rep.coverage_naive:.4f} preserved {rep.coverage:.4f} scale {rep.alpha_scale:.3f}")
    assert worst_naive > 0.05  # the naive chain loses coverage: the test image does exercise the fix


def test_leaf_card_keeps_coverage_and_the_naive_chain_thins_out():
    chain = mips.build_chain(mips.make_leaf_card(256, seed=0))
    naive_loss = [chain.target - r.coverage_naive for r in chain.reports]
    assert max(naive_loss) > 0.5 * chain.target
    for rep in chain.reports:
        assert abs(rep.coverage - chain.target) <= tolerance(rep)
    assert chain.reports[-2].alpha_scale > 2.0  # the small levels need their alpha scaled up a lot


def test_other_references_are_honoured():
    img = blobs(128, 96, 5)
    for ref in (0.25, 0.75):
        chain = mips.build_chain(img, mips.MipSettings(ref=ref))
        assert chain.target == pytest.approx(mips.coverage(img[..., 3], ref))
        for rep, lv in zip(chain.reports, chain.levels):
            assert abs(mips.coverage(lv[..., 3], ref) - chain.target) <= tolerance(rep)


@pytest.mark.parametrize("value", [0, 255])
def test_opaque_and_transparent_images_come_out_unchanged_in_alpha(value):
    img = blobs(97, 64, 4)
    img[..., 3] = value
    chain = mips.build_chain(img)
    for rep, lv in zip(chain.reports, chain.levels):
        assert np.all(lv[..., 3] == value)
        assert rep.alpha_scale == 1.0


def test_colour_is_never_scaled():
    img = blobs(130, 77, 6)
    kept = mips.build_chain(img)
    naive = mips.build_chain(img, mips.MipSettings(preserve=False))
    assert any(r.alpha_scale > 1.2 for r in kept.reports)
    for a, b, na in zip(kept.levels, naive.levels, kept.naive_alpha):
        np.testing.assert_array_equal(a[..., :3], b[..., :3])
        np.testing.assert_array_equal(b[..., 3], na)  # the stored naive alpha is the naive chain's


def test_level0_is_written_back_bit_exact():
    img = blobs(64, 48, 7)
    np.testing.assert_array_equal(mips.build_chain(img).levels[0], img)


def test_alpha_channel_choice():
    img = blobs(128, 128, 8)
    packed = img.copy()
    packed[..., 0] = img[..., 3]  # coverage in red, alpha holds something else
    packed[..., 3] = 77
    chain = mips.build_chain(packed, mips.MipSettings(alpha_channel="R"))
    ref_chain = mips.build_chain(img, mips.MipSettings(srgb=True))
    for a, b in zip(chain.levels, ref_chain.levels):
        np.testing.assert_array_equal(a[..., 0], b[..., 3])  # red handled like alpha (linear, scaled)
        assert np.all(a[..., 3] == 77)                       # real alpha just filtered


def test_deterministic():
    img = mips.make_leaf_card(96, seed=3)
    a, b = mips.build_chain(img), mips.build_chain(img)
    for x, y in zip(a.levels, b.levels):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(mips.make_leaf_card(96, seed=3), img)
    assert not np.array_equal(mips.make_leaf_card(96, seed=4), img)


# --- sRGB --------------------------------------------------------------------------------------------------

def test_black_white_checker_mips_to_the_linear_average():
    img = np.zeros((8, 8, 4), np.uint8)
    img[..., 3] = 255
    yy, xx = np.mgrid[0:8, 0:8]
    img[(yy + xx) % 2 == 0, :3] = 255
    chain = mips.build_chain(img)
    expect = round(float(mips.linear_to_srgb(0.5)) * 255)  # 188, not the gamma-space 128
    for lv in chain.levels[1:]:
        assert np.all(np.abs(lv[..., :3].astype(int) - expect) <= 1)
    linear = mips.build_chain(img, mips.MipSettings(srgb=False))
    assert np.all(np.abs(linear.levels[-1][..., :3].astype(int) - 128) <= 1)


def test_mid_grey_checker_averages_in_linear_light():
    # a checker of two greys around mid grey (sRGB 64 and 192): the mips show the linear average
    img = np.full((16, 16, 4), 255, np.uint8)
    yy, xx = np.mgrid[0:16, 0:16]
    img[..., :3] = np.where(((yy + xx) % 2 == 0)[..., None], 64, 192)
    lin = (mips.srgb_to_linear(64 / 255) + mips.srgb_to_linear(192 / 255)) / 2
    expect = float(mips.linear_to_srgb(lin)) * 255
    top = mips.build_chain(img).levels[-1][0, 0, :3].astype(float)
    assert np.all(np.abs(top - expect) <= 1.0)
    assert np.all(np.abs(top - 128) > 10)


# --- inputs ------------------------------------------------------------------------------------------------

def test_image_without_alpha_says_so_and_still_makes_the_chain():
    rgb = blobs(64, 64)[..., :3]
    chain = mips.build_chain(rgb)
    assert not chain.has_alpha
    assert any("no alpha" in w for w in chain.warnings)
    assert len(chain.levels) == 7 and all(np.all(lv[..., 3] == 255) for lv in chain.levels)


def test_grey_alpha_and_16bit_inputs():
    g = blobs(64, 64)
    la = np.stack([g[..., 0], g[..., 3]], axis=-1)
    chain = mips.build_chain(la)
    assert chain.has_alpha and np.array_equal(chain.levels[0][..., 0], chain.levels[0][..., 2])
    for rep in chain.reports:
        assert abs(rep.coverage - chain.target) <= tolerance(rep)
    img16 = g.astype(np.uint16) * 257
    chain16 = mips.build_chain(img16)
    assert any("16-bit" in w for w in chain16.warnings)
    np.testing.assert_array_equal(chain16.levels[0], g)


@pytest.mark.parametrize("shape", [(1, 1, 4), (1, 40, 4), (40, 1, 4), (1, 1, 3)])
def test_tiny_and_line_images(shape):
    img = np.zeros(shape, np.uint8)
    img[..., :3] = 90
    if shape[2] == 4:
        img[..., 3] = np.where(np.arange(shape[0] * shape[1]).reshape(shape[:2]) % 3 == 0, 255, 0)
    chain = mips.build_chain(img)
    assert chain.levels[-1].shape == (1, 1, 4)
    data = mips.encode_dds(chain.levels, srgb=chain.settings.srgb)
    back = dds_reader.read_dds(data)
    assert len(back["levels"]) == len(chain.levels) and back["trailing"] == 0
    for got, want in zip(back["levels"], chain.levels):
        np.testing.assert_array_equal(got, want)


def test_huge_image_is_refused_before_any_work():
    huge = np.broadcast_to(np.zeros((1, 1, 4), np.uint8), (16384, 16384, 4))  # no memory behind it
    assert mips.memory_estimate(16384, 16384) > 8 * 1024 ** 3
    with pytest.raises(mips.MipsError, match=r"16384x16384 image needs about .* GB.*limit"):
        mips.build_chain(huge)


@pytest.mark.parametrize("settings,msg", [
    (mips.MipSettings(ref=0.0), "outside"), (mips.MipSettings(ref=1.5), "outside"),
    (mips.MipSettings(alpha_channel="X"), "alpha channel"), (mips.MipSettings(supersample=0), "Supersample"),
])
def test_bad_settings(settings, msg):
    with pytest.raises(mips.MipsError, match=msg):
        mips.build_chain(blobs(8, 8), settings)


@pytest.mark.parametrize("arr,msg", [
    (np.zeros((4, 4, 5), np.uint8), "1 to 4 channels"), (np.zeros((0, 4, 4), np.uint8), "no pixels"),
    (np.full((4, 4, 4), np.nan, np.float32), "NaN"), (np.zeros((4, 4, 4), np.int64), "Unsupported"),
])
def test_bad_arrays(arr, msg):
    with pytest.raises(mips.MipsError, match=msg):
        mips.build_chain(arr)


# --- files -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("srgb", [True, False])
def test_dds_read_back_by_pillow_and_an_independent_level_walker(srgb):
    chain = mips.build_chain(blobs(200, 120, 9), mips.MipSettings(srgb=srgb))
    data = mips.encode_dds(chain.levels, srgb=srgb)
    with Image.open(io.BytesIO(data)) as im:
        assert im.size == (120, 200) and im.mode == "RGBA"
        np.testing.assert_array_equal(np.asarray(im), chain.levels[0])
    back = dds_reader.read_dds(data)
    assert back["mip_count"] == len(chain.levels) == 8
    assert back["pitch"] == 120 * 4
    assert back["flags"] & 0x20000 and back["flags"] & 0x8 and back["flags"] & 0x1007 == 0x1007
    assert back["caps"] == 0x401008
    assert back["trailing"] == 0
    for got, want in zip(back["levels"], chain.levels):
        np.testing.assert_array_equal(got, want)


def test_srgb_chain_dds_declares_r8g8b8a8_unorm_srgb_with_straight_alpha():
    """Engines (Unity, Unreal, DirectXTex, Godot) take the colour space from the DDS format: an sRGB chain must
    say R8G8B8A8_UNORM_SRGB (only the DX10 header can), or its colour is sampled as linear data."""
    chain = mips.build_chain(mips.make_leaf_card(60, 100), mips.MipSettings(srgb=True))
    back = dds_reader.read_dds(mips.encode_dds(chain.levels, srgb=True))
    assert back["fourcc"] == b"DX10" and back["pf_flags"] == 0x4  # DDPF_FOURCC only, no legacy RGB masks
    assert back["header"] == "DX10" and back["data_offset"] == 148
    assert back["dxgi_format"] == 29 and back["format"] == "R8G8B8A8_UNORM_SRGB" and back["srgb"]
    assert back["resource_dimension"] == 3 and back["array_size"] == 1 and back["misc_flag"] == 0
    assert back["alpha_mode"] == "straight"
    assert back["mip_count"] == len(chain.levels) and back["caps"] == 0x401008 and back["pitch"] == 100 * 4


def test_data_chain_dds_keeps_the_legacy_rgba8_header():
    """Non-colour data: the legacy RGBA8 pixel format, which every reader maps to R8G8B8A8_UNORM."""
    chain = mips.build_chain(mips.make_leaf_card(60, 100), mips.MipSettings(srgb=False))
    back = dds_reader.read_dds(mips.encode_dds(chain.levels, srgb=False))
    assert back["header"] == "legacy" and back["fourcc"] == b"\0\0\0\0" and back["data_offset"] == 128
    assert back["pf_flags"] == 0x41 and back["bits"] == 32  # DDPF_RGB | DDPF_ALPHAPIXELS, masks R, G, B, A
    assert not back["srgb"] and back["dxgi_format"] is None


@pytest.mark.parametrize("srgb", [True, False])
def test_dds_levels_equal_the_png_levels_and_the_report_names_the_format(tmp_path, srgb):
    chain = mips.build_chain(mips.make_leaf_card(60, 100), mips.MipSettings(srgb=srgb))
    mips.write_outputs([("leaf", "leaf.png", chain)], str(tmp_path), compare=False)
    back = dds_reader.read_dds((tmp_path / "leaf.dds").read_bytes())
    assert back["srgb"] == srgb and len(back["levels"]) == len(chain.levels) and back["trailing"] == 0
    for i, lv in enumerate(back["levels"]):
        with Image.open(tmp_path / f"leaf_mip{i:02d}.png") as im:
            np.testing.assert_array_equal(lv, np.asarray(im))
    report = json.loads((tmp_path / "leaf_mips.json").read_text())
    assert report["srgb"] == srgb
    want = ({"dxgi_format": 29, "name": "R8G8B8A8_UNORM_SRGB", "header": "DX10", "alpha_mode": "straight",
             "compression": "RGBA8"} if srgb
            else {"dxgi_format": 28, "name": "R8G8B8A8_UNORM", "header": "legacy", "alpha_mode": "straight",
                  "compression": "RGBA8"})
    assert report["dds_format"] == want
    mips.write_outputs([("png_only", "", chain)], str(tmp_path / "png"), formats="png", compare=False)
    assert json.loads((tmp_path / "png" / "png_only_mips.json").read_text())["dds_format"] is None


# --- block-compressed DDS (BC1, BC3, BC7) -------------------------------------------------------------------

@pytest.mark.parametrize("srgb", [True, False])
@pytest.mark.parametrize("compression", ["BC1", "BC3", "BC7"])
def test_block_compressed_dds_headers_sizes_and_pillows_reading(srgb, compression):
    """BC1 and BC3 chains: the legacy FourCC (DXT1, DXT5) for data, the DX10 header with the _SRGB format for
    sRGB colour; BC7 (no FourCC) always the DX10 header, BC7_UNORM or BC7_UNORM_SRGB; the top level's size in bytes
    as the linear size; every level's blocks, down to 1x1 (one block); Pillow (an independent decoder) reads level
    0 as core.dds decodes it."""
    from core import bc, dds

    chain = mips.build_chain(mips.make_leaf_card(64, 96, seed=3), mips.MipSettings(srgb=srgb, dds=compression))
    data = mips.encode_dds(chain.levels, srgb=srgb, compression=compression, alpha_ref=0.5)
    flags, h, w, linear = struct.unpack_from("<4I", data, 8)
    assert (h, w) == (64, 96) and flags & 0x80000 and not flags & 0x8  # DDSD_LINEARSIZE, not DDSD_PITCH
    assert linear == bc.block_bytes(compression, 64, 96) == (16 * 24) * (8 if compression == "BC1" else 16)
    fourcc = data[84:88]
    dx10 = srgb or compression == "BC7"
    header = 148 if dx10 else 128
    if dx10:
        dxgi = {"BC1": 71, "BC3": 77, "BC7": 98}[compression] + srgb
        assert fourcc == b"DX10" and struct.unpack_from("<5I", data, 128) == (dxgi, 3, 0, 1, 1)
    else:
        assert fourcc == (b"DXT1" if compression == "BC1" else b"DXT5")
    sizes = mips.level_sizes(64, 96)
    assert len(data) == header + sum(bc.block_bytes(compression, lh, lw) for lh, lw in sizes)
    levels, fmt = dds.decode_dds(data)
    assert fmt == mips.dds_format(srgb, compression) and fmt["compression"] == compression
    assert fmt["name"] == {("BC1", True): "BC1_UNORM_SRGB", ("BC1", False): "BC1_UNORM",
                           ("BC3", True): "BC3_UNORM_SRGB", ("BC3", False): "BC3_UNORM",
                           ("BC7", True): "BC7_UNORM_SRGB", ("BC7", False): "BC7_UNORM"}[compression, srgb]
    assert fmt["header"] == ("DX10" if dx10 else "legacy")
    assert [lv.shape[:2] for lv in levels] == sizes
    readable = data  # Pillow 13 reads BC1/BC3 DX10 headers but not their _SRGB formats: the same blocks, as UNORM
    if srgb and compression != "BC7":  # (it reads BC7_UNORM_SRGB)
        readable = data[:128] + struct.pack("<I", struct.unpack_from("<I", data, 128)[0] - 1) + data[132:]
    with Image.open(io.BytesIO(readable)) as im:
        assert im.size == (96, 64)
        pillow = np.asarray(im.convert("RGBA")).astype(int)
    assert np.abs(pillow - levels[0]).max() <= 1  # (decoders may round the interpolated colours either way)
    drawn = chain.levels[0][..., 3] / 255.0 >= 0.5 if compression == "BC1" else np.ones((64, 96), bool)
    diff = levels[0][..., :3].astype(float) - chain.levels[0][..., :3]  # (BC1's cut texels are black: not drawn)
    colour_error = np.sqrt(np.mean(diff[drawn] ** 2))
    assert colour_error < (4.0 if compression == "BC7" else 8.0), colour_error
    alpha = levels[0][..., 3]
    if compression == "BC1":  # alpha cut at the reference: 0 below it, 255 at or above it
        np.testing.assert_array_equal(alpha, np.where(chain.levels[0][..., 3] / 255.0 < 0.5, 0, 255))
    else:
        assert np.abs(alpha.astype(int) - chain.levels[0][..., 3]).max() <= 20


@pytest.mark.parametrize("srgb", [True, False])
@pytest.mark.parametrize("channel", ["A", "R"])
def test_bc4_holds_the_coverage_channel_alone_as_data(srgb, channel):
    """BC4: the coverage channel alone (A, or R of a mask texture), half a byte a texel, always BC4_UNORM by its
    FourCC BC4U (one channel of data: no sRGB format, whatever the colour); decoded as GPUs sample it (the channel
    in R, G and B 0, A 255) within BC3-alpha's error of the chain's channel; Pillow (an independent decoder) reads
    it as a grey image within a level; coverage_dds is read from it and stays within 2% of level 0's."""
    from core import bc, dds

    card = mips.make_leaf_card(64, 96, seed=3)
    if channel == "R":
        card[..., 0], card[..., 3] = card[..., 3], 255
    settings = mips.MipSettings(srgb=srgb, dds="BC4", alpha_channel=channel)
    chain = mips.build_chain(card, settings)
    data, cov = mips.chain_dds(chain)
    assert data[84:88] == b"BC4U" and len(data) == 128 + sum(bc.block_bytes("BC4", lh, lw)
                                                            for lh, lw in mips.level_sizes(64, 96))
    levels, fmt = dds.decode_dds(data)
    assert fmt == mips.dds_format(srgb, "BC4") == {"dxgi_format": 80, "name": "BC4_UNORM", "header": "legacy",
                                                   "alpha_mode": "straight", "compression": "BC4"}
    k = mips.CHANNELS.index(channel)
    for lv, want in zip(levels, chain.levels):
        assert np.abs(lv[..., 0].astype(int) - want[..., k]).max() <= 26  # (half the step of a 6-value block)
        assert not lv[..., 1:3].any() and (lv[..., 3] == 255).all()
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode == "L" and im.size == (96, 64)
        assert np.abs(np.asarray(im).astype(int) - levels[0][..., 0]).max() <= 1
    assert cov is not None and cov == [pytest.approx(mips.coverage(lv[..., 0], 0.5, 4)) for lv in levels]
    assert all(abs(c - chain.target) < 0.02 for c, r in zip(cov, chain.reports) if r.width >= 16)
    with pytest.raises(ValueError, match="channel must be 0, 1, 2 or 3"):
        bc.encode_bc4(card, 4)


@pytest.mark.parametrize("compression", ["BC1", "BC3", "BC4", "BC7"])
def test_block_compressed_chain_reports_the_coverage_an_engine_samples(tmp_path, compression):
    """The report gives each level's coverage as decoded from the BC file (coverage_dds), measured as the chain
    measures its own; a leaf card keeps its coverage through the compression within a few percent."""
    settings = mips.MipSettings(dds=compression)
    chain = mips.build_chain(mips.make_leaf_card(128, seed=4), settings)
    mips.write_outputs([("leaf", "leaf.png", chain)], str(tmp_path), compare=False)
    report = json.loads((tmp_path / "leaf_mips.json").read_text())
    assert report["dds_format"]["compression"] == compression
    from core import dds

    levels, _ = dds.decode_dds((tmp_path / "leaf.dds").read_bytes())
    for row, lv in zip(report["per_level"], levels):
        assert row["coverage_dds"] == pytest.approx(mips.coverage(lv[..., 0 if compression == "BC4" else 3], 0.5, 4))
        if lv.shape[0] >= 16:
            assert abs(row["coverage_dds"] - report["target_coverage"]) < 0.05, row
    rgba = json.loads((tmp_path / "leaf_mips.json").read_text())
    mips.write_outputs([("plain", "plain.png", mips.build_chain(mips.make_leaf_card(128, seed=4)))], str(tmp_path),
                       compare=False)
    plain = json.loads((tmp_path / "plain_mips.json").read_text())
    assert "coverage_dds" not in plain["per_level"][0] and "coverage_dds" in rgba["per_level"][0]


@pytest.mark.parametrize("settings,msg", [
    (mips.MipSettings(dds="BC5"), "Unknown DDS compression 'BC5': use one of RGBA8, BC1, BC3, BC4, BC7"),
    (mips.MipSettings(dds="BC1", alpha_channel="R"), r"BC1 keeps alpha only in A .* write the DDS as BC7, BC4 \(the "
                                                      r"coverage alone\) or RGBA8, or put the coverage in A"),
    (mips.MipSettings(dds="BC3", alpha_channel="B"), "BC3 keeps alpha only in A"),
])
def test_bad_dds_settings_say_what_to_do(settings, msg):
    with pytest.raises(mips.MipsError, match=msg):
        settings.validate()


def test_block_compression_of_a_size_not_a_multiple_of_4_is_refused_before_any_work(tmp_path):
    settings = mips.MipSettings(dds="BC3")
    with pytest.raises(mips.MipsError, match=r"The image is 30x20: a BC3 DDS needs a width and height that are "
                                             r"multiples of 4 .* resize it, or write the DDS as RGBA8"):
        mips.build_chain(blobs(20, 30), settings)
    with pytest.raises(mips.MipsError, match="multiples of 4"):
        mips.encode_dds(mips.build_chain(blobs(20, 30)).levels, srgb=True, compression="BC1")
    mips.check_size(20, 30, mips.MipSettings())  # RGBA8: any size


@pytest.mark.parametrize("field,value,msg", [(0, 87, "DXGI format 87"), (1, 4, "dimension"), (2, 4, "miscFlag"),
                                             (3, 6, "array size"), (4, 9, "alpha mode")])
def test_dds_reader_refuses_dx10_headers_it_does_not_know(field, value, msg):
    """The test reader is strict, so a wrong DX10 header cannot pass as a right one."""
    chain = mips.build_chain(blobs(8, 8))
    data = bytearray(mips.encode_dds(chain.levels, srgb=True))
    data[128 + 4 * field:132 + 4 * field] = value.to_bytes(4, "little")
    with pytest.raises(ValueError, match=msg):
        dds_reader.read_dds(bytes(data))
    data[84:88] = b"DXT5"
    with pytest.raises(ValueError, match="FourCC"):
        dds_reader.read_dds(bytes(data))


@pytest.mark.parametrize("arr", [np.zeros((5, 7, 4), np.uint8) + 9, np.arange(5 * 7 * 2, dtype=np.uint16)
                                 .reshape(5, 7, 2) * 300, np.arange(35, dtype=np.uint8).reshape(5, 7),
                                 np.arange(105, dtype=np.uint8).reshape(5, 7, 3)])
def test_png_writer_read_back_by_pillow(arr):
    with Image.open(io.BytesIO(mips.encode_png(arr))) as im:
        got = np.asarray(im)
    if arr.dtype == np.uint16 and arr.shape[2] == 2:
        got16 = np.asarray(Image.open(io.BytesIO(mips.encode_png(arr[..., 0]))))
        np.testing.assert_array_equal(got16.astype(np.uint16), arr[..., 0])
        return
    np.testing.assert_array_equal(got.reshape(arr.shape), arr)


def test_write_outputs_files_report_and_comparison(tmp_path):
    img = mips.make_leaf_card(128, seed=1)
    chain = mips.build_chain(img)
    out = tmp_path / "out"
    files = mips.write_outputs([("leaf", "leaf.png", chain)], str(out))
    names = sorted(os.listdir(out))
    assert names == sorted(os.path.basename(f) for f in files)
    assert "leaf.dds" in names and "leaf_mips.json" in names and "leaf_compare.png" in names
    for i, lv in enumerate(chain.levels):
        with Image.open(out / f"leaf_mip{i:02d}.png") as im:
            np.testing.assert_array_equal(np.asarray(im), lv)
    report = json.loads((out / "leaf_mips.json").read_text())
    assert report["levels"] == len(chain.levels) and report["ref"] == 0.5
    for entry, rep in zip(report["per_level"], chain.reports):
        assert entry["coverage"] == pytest.approx(rep.coverage) and "coverage_naive" in entry
    with Image.open(out / "leaf_compare.png") as im:
        pic = np.asarray(im)
    # the two rows of the picture: the preserved (bottom) row shows more leaf than the naive one (top)
    green = (pic[..., 1].astype(int) - pic[..., 0] > 40) & (pic[..., 1] > 60)
    half = pic.shape[0] // 2
    assert green[half:].sum() > 1.2 * green[:half].sum()


def test_formats_option_and_bad_formats(tmp_path):
    chain = mips.build_chain(blobs(16, 16))
    mips.write_outputs([("a", "", chain)], str(tmp_path), formats="dds", compare=False)
    assert sorted(os.listdir(tmp_path)) == ["a.dds", "a_mips.json"]
    with pytest.raises(mips.MipsError, match="Unknown output format"):
        mips.write_outputs([("b", "", chain)], str(tmp_path), formats="dds,tga")
    assert sorted(os.listdir(tmp_path)) == ["a.dds", "a_mips.json"]


def test_unwritable_output_folder_leaves_nothing(tmp_path):
    chain = mips.build_chain(blobs(16, 16))
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for bad in (str(a_file), str(a_file / "sub"), "/proc/envfx-mips-test"):
        with pytest.raises(mips.MipsError, match="cannot be written|is a file"):
            mips.write_outputs([("a", "", chain)], bad)
    assert sorted(os.listdir(tmp_path)) == ["file.txt"]


def test_failure_midway_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    chain = mips.build_chain(blobs(16, 16))
    (tmp_path / "keep.txt").write_text("old")
    calls = {"n": 0}
    real = mips.encode_png

    def flaky(arr, level=6):
        calls["n"] += 1
        if calls["n"] > 3:
            raise OSError(28, "No space left on device")
        return real(arr, level)

    monkeypatch.setattr(mips, "encode_png", flaky)
    with pytest.raises(mips.MipsError, match="nothing was written"):
        mips.write_outputs([("a", "", chain), ("b", "", chain)], str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]


def test_cancelled_write_leaves_nothing(tmp_path):
    chain = mips.build_chain(blobs(16, 16))
    job = mips.write_outputs_job([("a", "", chain), ("b", "", chain)], str(tmp_path / "new"))
    next(job)
    job.close()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("compression", mips.DDS_COMPRESSIONS)
def test_dds_is_encoded_in_bands_of_block_rows_with_the_bytes_of_whole_levels(compression, monkeypatch):
    """The DDS job encodes each level in bands of whole block rows, a progress step each (a cancel can come
    between them): the bytes are those of each level encoded whole, also for levels whose height is no multiple
    of 4 (padded as a whole level is); the fractions rise to 1."""
    from core import dds

    chain = mips.build_chain(mips.make_leaf_card(52, 40, seed=4), mips.MipSettings(dds=compression))  # 52, 26, 13
    whole = mips.encode_dds(chain.levels, srgb=True, compression=compression, alpha_ref=0.5)
    monkeypatch.setattr(dds, "band_rows", lambda width: 8)
    job = mips.encode_dds_job(chain.levels, srgb=True, compression=compression, alpha_ref=0.5)
    fractions = []
    while True:
        try:
            fractions.append(next(job))
        except StopIteration as stop:
            banded = stop.value
            break
    assert banded == whole
    if compression != "RGBA8":
        assert len(fractions) == sum(-(-lv.shape[0] // 8) for lv in chain.levels)  # 7 + 4 + 2 + 1 + ... bands
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


@pytest.mark.parametrize("compression", mips.DDS_COMPRESSIONS)
def test_dds_decoded_one_channel_is_that_channel_of_the_full_decode(compression):
    """decode_dds(channel=k): the coverage check's levels, each (h, w), equal channel k of the full decode for
    every compression and channel (the BC1, BC3 and BC4 shortcuts and the plain path); a bad channel is refused."""
    from core import dds

    chain = mips.build_chain(mips.make_leaf_card(52, 40, seed=4), mips.MipSettings(dds=compression))
    data = mips.encode_dds(chain.levels, srgb=True, compression=compression, alpha_ref=0.5)
    full, fmt = dds.decode_dds(data)
    for k in range(4):
        levels, fmt_k = dds.decode_dds(data, channel=k)
        assert fmt_k == fmt and len(levels) == len(full)
        for one, lv in zip(levels, full):
            assert one.shape == lv.shape[:2] and (one == lv[..., k]).all()
    with pytest.raises(ValueError, match="channel must be"):
        dds.decode_dds(data, channel=4)


def test_dds_bands_give_each_thread_a_chunk_of_blocks(monkeypatch):
    from core import bc, dds

    monkeypatch.setattr(bc, "encode_threads", lambda: 2)
    rows = dds.band_rows(4096)  # 1024 blocks a row
    assert rows % 4 == 0 and rows // 4 * 1024 == 2 * bc.CHUNK_BLOCKS
    assert dds.band_rows(1 << 20) == 4  # at least a row of blocks


def test_a_bake_cancelled_while_its_dds_is_encoded_leaves_nothing(tmp_path, monkeypatch):
    """The progress reaches into the DDS's encoding (a 2048 BC7 level takes seconds): the job can be closed
    there, and nothing is written."""
    from core import dds

    monkeypatch.setattr(dds, "band_rows", lambda width: 4)
    chain = mips.build_chain(mips.make_leaf_card(32, 32, seed=1), mips.MipSettings(dds="BC7"))
    job = mips.write_outputs_job([("a", "", chain)], str(tmp_path / "new"))
    steps = [next(job) for _ in range(3)]
    assert 0.0 < steps[0] < steps[1] < steps[2] < mips.DDS_COST["BC7"] / mips.write_cost("BC7", "dds,png", True)
    job.close()
    assert os.listdir(tmp_path) == []


def test_write_cost_splits_the_progress_by_the_files_asked_for():
    assert mips.write_cost("BC7", "dds,png", True) == pytest.approx(
        mips.DDS_COST["BC7"] + mips.PNG_COST + mips.COMPARE_COST)
    assert mips.write_cost("BC7", "png", False) == mips.PNG_COST
    assert mips.write_cost("RGBA8", "dds", False) < mips.write_cost("BC1", "dds", False) < mips.write_cost(
        "BC7", "dds", False)


# --- a second run into the same folder --------------------------------------------------------------------

def bake_into(out, size, formats="dds,png", compare=True, keep=(), stem="leaf"):
    """One run of ``stem`` (a leaf card of ``size``) into ``out``; returns the names it removed."""
    with mips.StagedOutput(str(out), formats, compare, keep=keep) as staged:
        staged.add(stem, f"{stem}.png", mips.build_chain(mips.make_leaf_card(size, seed=size)))
        staged.commit()
    assert staged.not_removed == []
    return sorted(os.path.relpath(p, out) for p in staged.removed)


def listing(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


USER_FILES = ("leaf_notes.txt", "leafy_mip06.png", "leaf_mip6.png", "leaf_mip006.png", "Leaf_mip06.png",
              "leaf_mip06.png.bak", "leaf_compare.PNG", "oak_mip06.png", "oak.dds")


def test_second_run_removes_what_the_first_wrote_and_it_does_not(tmp_path):
    """64x64 (7 levels, DDS, PNG, comparison), then 16x16 (5 levels) as PNG only without a comparison: the first
    run's leaf.dds, leaf_compare.png, leaf_mip05.png and leaf_mip06.png go (before: they stayed, and a glob of
    leaf_mip*.png mixed two images); files the first run did not write stay, whatever their names."""
    for name in USER_FILES:
        (tmp_path / name).write_bytes(b"mine")
    assert bake_into(tmp_path, 64) == []
    first = json.loads((tmp_path / "leaf_mips.json").read_text())["files"]
    assert first == mips.output_names("leaf", 7, ("dds", "png"), compare=True)
    assert bake_into(tmp_path, 16, formats="png", compare=False) == ["leaf.dds", "leaf_compare.png",
                                                                     "leaf_mip05.png", "leaf_mip06.png"]
    new = mips.output_names("leaf", 5, ("png",), compare=False)
    assert sorted(os.listdir(tmp_path)) == sorted(new + list(USER_FILES))
    assert json.loads((tmp_path / "leaf_mips.json").read_text())["files"] == new
    assert all((tmp_path / n).read_bytes() == b"mine" for n in USER_FILES)
    assert bake_into(tmp_path, 16, formats="dds") == [f"leaf_mip{i:02d}.png" for i in range(5)]


def test_report_without_a_file_list_stands_for_the_exact_output_names(tmp_path):
    """A report written before reports listed their files: only <stem>.dds, <stem>_compare.png and
    <stem>_mipNN.png go (here also leaf_mip07.png, left by an older, bigger run)."""
    bake_into(tmp_path, 64)
    report = json.loads((tmp_path / "leaf_mips.json").read_text())
    del report["files"]
    (tmp_path / "leaf_mips.json").write_text(json.dumps(report))
    for name in USER_FILES + ("leaf_mip07.png",):
        (tmp_path / name).write_bytes(b"mine")
    assert bake_into(tmp_path, 16, formats="png", compare=False) == [
        "leaf.dds", "leaf_compare.png", "leaf_mip05.png", "leaf_mip06.png", "leaf_mip07.png"]
    assert sorted(os.listdir(tmp_path)) == sorted(mips.output_names("leaf", 5, ("png",), False) + list(USER_FILES))


@pytest.mark.parametrize("report", [None, b"not json", b'{"levels": 7}', b'{"hello": 1}',
                                    b'{"levels": 7, "per_level": [], "files": null}',
                                    b'{"levels": 7, "per_level": [], "files": ["../outside.png", "notes.txt", '
                                    b'"sub/leaf_mip06.png", "oak_mip00.png", "leaf_mip6.png", 7]}'])
def test_nothing_is_removed_without_an_envfx_report_that_lists_it(tmp_path, report):
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    names = ["leaf.dds", "leaf_compare.png", "leaf_mip06.png", "notes.txt", "oak_mip00.png", "leaf_mip6.png",
             "sub/leaf_mip06.png"]
    for name in names:
        (out / name).write_bytes(b"mine")
    (tmp_path / "outside.png").write_bytes(b"mine")
    if report is not None:
        (out / "leaf_mips.json").write_bytes(report)
    assert bake_into(out, 16, formats="png", compare=False) == []
    assert all((out / n).read_bytes() == b"mine" for n in names) and (tmp_path / "outside.png").exists()


def test_failed_or_cancelled_second_run_removes_nothing(tmp_path, monkeypatch):
    bake_into(tmp_path, 64)
    before = listing(tmp_path)
    job = mips.write_outputs_job([("leaf", "", mips.build_chain(blobs(16, 16)))], str(tmp_path), "png", False)
    next(job)
    job.close()
    assert listing(tmp_path) == before

    def full(arr, level=6):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mips, "encode_png", full)
    with pytest.raises(mips.MipsError, match="nothing was written"):
        mips.write_outputs([("leaf", "", mips.build_chain(blobs(16, 16)))], str(tmp_path), "png", False)
    assert listing(tmp_path) == before


def test_inputs_are_kept_and_a_file_that_cannot_be_removed_is_named(tmp_path, monkeypatch):
    bake_into(tmp_path, 64)
    assert bake_into(tmp_path, 16, keep=[str(tmp_path / "leaf_mip06.png")]) == ["leaf_mip05.png"]
    assert (tmp_path / "leaf_mip06.png").exists()
    bake_into(tmp_path, 64)
    real = os.remove

    def refuse(path, *args, **kwargs):
        if path.endswith("leaf_mip06.png"):
            raise PermissionError(13, "Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "remove", refuse)
    with mips.StagedOutput(str(tmp_path)) as staged:
        staged.add("leaf", "", mips.build_chain(mips.make_leaf_card(16)))
        staged.commit()
    assert [os.path.basename(p) for p in staged.removed] == ["leaf_mip05.png"]
    assert staged.not_removed == [f"{tmp_path / 'leaf_mip06.png'} (Permission denied)"]


@pytest.mark.parametrize("h,w,s,seed", [(17, 23, 4, 0), (8, 5, 3, 1), (1, 12, 4, 2), (30, 30, 2, 3)])
def test_coverage_matches_a_brute_force_bilinear_upsample(h, w, s, seed):
    """Independent check of the adaptive measure: upsample every texel densely, count."""
    rng = np.random.default_rng(seed)
    a = np.clip(rng.random((h, w)) * 1.4 - 0.2, 0, 1).astype(np.float32)

    def positions(n):
        p = (np.arange(n * s) + 0.5) / s - 0.5  # sub-sample centres in texel coordinates
        p = np.clip(p, 0, n - 1)
        i0 = np.floor(p).astype(int)
        i1 = np.minimum(i0 + 1, n - 1)
        return i0, i1, p - i0

    y0, y1, fy = positions(h)
    x0, x1, fx = positions(w)
    fy, fx = fy[:, None], fx[None, :]
    up = (a[y0][:, x0] * (1 - fy) * (1 - fx) + a[y0][:, x1] * (1 - fy) * fx
          + a[y1][:, x0] * fy * (1 - fx) + a[y1][:, x1] * fy * fx)
    for ref in (0.3, 0.5, 0.8):
        expect = np.count_nonzero(up >= ref - 1e-7) / up.size
        assert mips.coverage(a, ref, s) == pytest.approx(expect, abs=1e-12)


@pytest.mark.parametrize("h,w,seed,slender", [(300, 200, 0, 1.0), (127, 255, 1, 0.3), (512, 512, 2, 0.3),
                                              (99, 101, 3, 0.5)])
def test_leaf_cards_of_odd_sizes_keep_coverage(h, w, seed, slender):
    chain = mips.build_chain(mips.make_leaf_card(h, w, leaves=32, seed=seed, slender=slender))
    for rep, lv in zip(chain.reports, chain.levels):
        assert abs(mips.coverage(lv[..., 3]) - chain.target) <= tolerance(rep), rep
    assert max(chain.target - r.coverage_naive for r in chain.reports) > 0.02


@pytest.mark.parametrize("dxgi,fourcc", [(81, b"DX10"), (99, b"DX10"), (97, b"DX10"), (None, b"BC4S"),
                                         (None, b"DXT3")])
def test_the_dds_reader_refuses_formats_envfx_does_not_write(dxgi, fourcc):
    """core.dds.decode_dds reads what EnvFX writes and refuses the rest by name: BC4_SNORM (81, after BC4_UNORM,
    which has no sRGB twin), BC7_UNORM_SRGB's neighbour BC7_TYPELESS (97), other FourCCs; BC7_UNORM_SRGB (99)
    is read."""
    from core import dds

    chain = mips.build_chain(mips.make_leaf_card(8, seed=1))
    data = bytearray(mips.encode_dds(chain.levels, srgb=True, compression="BC7"))
    if dxgi is not None:
        data[128:132] = dxgi.to_bytes(4, "little")
    else:
        data = data[:128] + data[148:]  # a legacy header: no DX10 block
        data[84:88] = fourcc
    if dxgi == 99:
        assert dds.decode_dds(bytes(data))[1]["name"] == "BC7_UNORM_SRGB"
        return
    what = f"DXGI format {dxgi}" if dxgi is not None else f"FourCC {bytes(fourcc)!r}"
    with pytest.raises(ValueError, match=re.escape(f"{what} is not one EnvFX writes")):
        dds.decode_dds(bytes(data))
