"""Block compression (core/bc.py): hand-built blocks against the spec, round trips, quality bounds, the endpoint
refinement, BC1 alpha cut-outs, odd image sizes and bad input."""

import struct

import numpy as np
import pytest

from core import bc, cpus, lightmap2d
from tests.core.bc_images import gradient, rmse  # (tests/conftest.py puts the repository root on sys.path)

RED, BLUE, GREEN = 0xF800, 0x001F, 0x07E0


def bc1_block(c0, c1, indices):
    """8 bytes of a BC1 block from two 565 endpoints and 16 indices (texel 0 first)."""
    bits = sum(int(i) << (2 * k) for k, i in enumerate(indices))
    return struct.pack("<HHI", c0, c1, bits)


def alpha_block(a0, a1, indices):
    """8 bytes of a BC3 alpha block from two endpoints and 16 3-bit indices (texel 0 first)."""
    bits = sum(int(i) << (3 * k) for k, i in enumerate(indices))
    return struct.pack("<BB", a0, a1) + bits.to_bytes(6, "little")


def expand565(c):
    r, g, b = c >> 11, (c >> 5) & 63, c & 31
    return (r << 3 | r >> 2, g << 2 | g >> 4, b << 3 | b >> 2)


def natural(h=64, w=64, seed=0):
    """Low-frequency colour fields with texel noise (sigma 8 levels), like a photo texture."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([120 + 80 * np.sin(x / 9 + y / 13), 110 + 70 * np.cos(x / 7 - y / 11),
                    90 + 60 * np.sin((x + y) / 15), 128 + 100 * np.sin(x / 17) * np.cos(y / 19)], axis=-1)
    return np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)


def block_errors(img, out):
    """Squared RGB error of every 4x4 block of a (4m, 4n) image."""
    e = ((out[..., :3].astype(np.float64) - img[..., :3]) ** 2).sum(axis=-1)
    h, w = e.shape
    return e.reshape(h // 4, 4, w // 4, 4).sum(axis=(1, 3))


# --- hand-built blocks decode as the spec says ----------------------------------------------------------------

def test_a_four_colour_bc1_block_decodes_to_its_endpoints_and_the_thirds_between():
    out = bc.decode_bc1(bc1_block(RED, BLUE, [0, 1, 2, 3] * 4), 4, 4)
    assert out.shape == (4, 4, 4) and out.dtype == np.uint8
    expected = [(255, 0, 0, 255), (0, 0, 255, 255), (170, 0, 85, 255), (85, 0, 170, 255)]
    for row in range(4):
        assert out[row].tolist() == [list(c) for c in expected]


def test_a_three_colour_bc1_block_has_a_midpoint_and_transparent_black_at_index_3():
    out = bc.decode_bc1(bc1_block(BLUE, RED, [0, 1, 2, 3] * 4), 4, 4)  # c0 < c1: 3-colour mode
    assert out[0].tolist() == [[0, 0, 255, 255], [255, 0, 0, 255], [128, 0, 128, 255], [0, 0, 0, 0]]
    equal = bc.decode_bc1(bc1_block(GREEN, GREEN, [3] + [0] * 15), 4, 4)  # c0 == c1 is 3-colour mode too
    assert equal[0, 0].tolist() == [0, 0, 0, 0] and equal[0, 1].tolist() == [0, 255, 0, 255]


def test_bc1_indices_run_from_the_lowest_bits_row_by_row():
    indices = [0] * 16
    indices[6] = 1  # row 1, column 2
    out = bc.decode_bc1(bc1_block(RED, BLUE, indices), 4, 4)
    blue = np.all(out == [0, 0, 255, 255], axis=-1)
    assert blue.sum() == 1 and blue[1, 2]


def test_bc3_alpha_blocks_decode_in_both_modes_and_the_colour_block_always_has_four_colours():
    colour = bc1_block(BLUE, RED, [0, 1, 2, 3] * 4)  # c0 < c1 would be 3-colour in BC1, not in BC3
    eight = bc.decode_bc3(alpha_block(200, 60, [0, 1, 2, 3, 4, 5, 6, 7] * 2) + colour, 4, 4)
    # (m * 200 + (7 - m) * 60) / 7 for m = 6..1, rounded to nearest
    assert eight[:2, :, 3].ravel().tolist() == [200, 60, 180, 160, 140, 120, 100, 80]
    six = bc.decode_bc3(alpha_block(60, 200, [0, 1, 2, 3, 4, 5, 6, 7] * 2) + colour, 4, 4)
    # (m * 60 + (5 - m) * 200) / 5 for m = 4..1, then 0 and 255
    assert six[:2, :, 3].ravel().tolist() == [60, 200, 88, 116, 144, 172, 0, 255]
    assert eight[0, :, :3].tolist() == [[0, 0, 255], [255, 0, 0], [85, 0, 170], [170, 0, 85]]
    # blends whose exact value lies above a half round up: 6 * 255 / 7 = 218.57 -> 219, (4 + 254) / 5 = 51.6 -> 52
    up8 = bc.decode_bc3(alpha_block(255, 0, [0, 1, 2, 3, 4, 5, 6, 7] * 2) + colour, 4, 4)
    assert up8[:2, :, 3].ravel().tolist() == [255, 0, 219, 182, 146, 109, 73, 36]
    up6 = bc.decode_bc3(alpha_block(1, 254, [0, 1, 2, 3, 4, 5, 6, 7] * 2) + colour, 4, 4)
    assert up6[:2, :, 3].ravel().tolist() == [1, 254, 52, 102, 153, 203, 0, 255]


def test_colour_blends_round_to_nearest():
    white, dark = 0xFFFF, 0x0821  # dark: 5/6/5 levels 1, 1, 1 -> (8, 4, 8)
    out = bc.decode_bc1(bc1_block(white, dark, [0, 1, 2, 3] * 4), 4, 4)
    # (2 * 255 + 8) / 3 = 172.67 -> 173, (2 * 255 + 4) / 3 = 171.33 -> 171, (255 + 2 * 4) / 3 = 87.67 -> 88
    assert out[0].tolist() == [[255, 255, 255, 255], [8, 4, 8, 255], [173, 171, 173, 255], [90, 88, 90, 255]]


# --- round trips ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("encode, decode", [(bc.encode_bc1, bc.decode_bc1), (bc.encode_bc3, bc.decode_bc3)])
def test_a_solid_block_comes_back_as_its_565_colour(encode, decode):
    img = np.empty((4, 4, 4), np.uint8)
    img[:] = (201, 77, 14, 255)
    out = decode(encode(img), 4, 4)
    r5, g6, b5 = round(201 * 31 / 255), round(77 * 63 / 255), round(14 * 31 / 255)
    assert (out == [*expand565(r5 << 11 | g6 << 5 | b5), 255]).all()
    assert np.abs(out[..., :3].astype(int) - img[..., :3]).max() <= 4


@pytest.mark.parametrize("encode, decode", [(bc.encode_bc1, bc.decode_bc1), (bc.encode_bc3, bc.decode_bc3)])
def test_a_block_of_two_exact_565_colours_round_trips_exactly(encode, decode):
    a, b = expand565(0x5A6B), expand565(0xC3E7)
    pattern = np.random.default_rng(3).integers(0, 2, (4, 4)).astype(bool)
    pattern[0, 0], pattern[3, 3] = True, False
    img = np.where(pattern[..., None], [*a, 255], [*b, 255]).astype(np.uint8)
    assert (decode(encode(img), 4, 4) == img).all()


def test_a_smooth_gradient_stays_within_3_levels_rmse_and_its_alpha_within_2_in_bc3():
    img = gradient()
    bc1 = bc.decode_bc1(bc.encode_bc1(img), 128, 128)
    bc3 = bc.decode_bc3(bc.encode_bc3(img), 128, 128)
    assert rmse(bc1[..., :3], img[..., :3]) < 3.0
    assert rmse(bc3[..., :3], img[..., :3]) < 3.0
    assert (bc1[..., 3] == 255).all()
    assert rmse(bc3[..., 3], img[..., 3]) < 2.0


def test_a_noisy_natural_image_stays_within_8_levels_rmse_and_alpha_within_2():
    img = natural()
    bc1 = bc.decode_bc1(bc.encode_bc1(img), 64, 64)
    bc3 = bc.decode_bc3(bc.encode_bc3(img), 64, 64)
    assert rmse(bc1[..., :3], img[..., :3]) < 8.0
    assert rmse(bc3[..., :3], img[..., :3]) < 8.0
    assert rmse(bc3[..., 3], img[..., 3]) < 2.0


def test_bc3_takes_the_six_value_alpha_mode_for_cutout_blocks_with_0_255_and_mid_values():
    alpha = np.array([0, 255, 0, 255, 100, 110, 120, 130, 0, 255, 140, 150, 0, 255, 0, 255], np.uint8).reshape(4, 4)
    img = np.dstack([np.full((4, 4, 3), 90, np.uint8), alpha])
    data = bc.encode_bc3(img)
    assert data[0] <= data[1]  # a0 <= a1: the 6-value mode
    out = bc.decode_bc3(data, 4, 4)[..., 3].astype(int)
    assert (out[alpha == 0] == 0).all() and (out[alpha == 255] == 255).all()
    assert np.abs(out - alpha).max() <= 5


def test_least_squares_refinement_is_never_worse_than_the_range_fit_and_often_better(monkeypatch):
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, (64, 64, 4), dtype=np.uint8), natural(seed=5)]
    for img in images:
        refined = bc.decode_bc1(bc.encode_bc1(img), 64, 64)
        with monkeypatch.context() as m:
            m.setattr(bc, "REFINE_STEPS", 0)
            range_fit = bc.decode_bc1(bc.encode_bc1(img), 64, 64)
        better, plain = block_errors(img, refined), block_errors(img, range_fit)
        assert (better <= plain).all()
        assert (better < plain).mean() > 0.3  # the refinement changes the endpoints of many blocks
        assert better.sum() < plain.sum()


# --- BC1 alpha cut-outs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("ref", [0.5, 128 / 255, 1.0, 0.01])
def test_bc1_alpha_ref_makes_texels_below_the_reference_transparent_black_and_the_rest_opaque(ref):
    img = np.random.default_rng(11).integers(0, 256, (32, 32, 4), dtype=np.uint8)
    img[0, :4, 3] = [127, 128, 254, 255]
    out = bc.decode_bc1(bc.encode_bc1(img, alpha_ref=ref), 32, 32)
    transparent = img[..., 3] / 255 < ref
    assert (out[..., 3] == np.where(transparent, 0, 255)).all()
    assert (out[transparent] == 0).all()


def test_bc1_alpha_ref_fits_the_colours_of_the_opaque_texels_only():
    a, b = expand565(0x5A6B), expand565(0xC3E7)
    img = np.zeros((8, 8, 4), np.uint8)
    img[..., :3] = (255, 255, 255)  # the colour under transparent texels must not pull the endpoints
    img[::2, :] = [*a, 255]
    img[1::2, ::3] = [*b, 200]
    out = bc.decode_bc1(bc.encode_bc1(img, alpha_ref=0.5), 8, 8)
    opaque = img[..., 3] >= 128
    assert (out[opaque] == np.where(img[opaque, 3:] == 200, [*b, 255], [*a, 255])).all()
    assert (out[~opaque] == 0).all()


def test_bc1_alpha_ref_handles_a_fully_transparent_block_and_a_block_with_one_opaque_texel():
    img = np.zeros((4, 8, 4), np.uint8)
    img[..., :3] = (10, 200, 30)
    one = expand565(0x8410)
    img[2, 5] = [*one, 255]
    data = bc.encode_bc1(img, alpha_ref=0.5)
    out = bc.decode_bc1(data, 4, 8)
    assert (out[:, :4] == 0).all()
    assert out[2, 5].tolist() == [*one, 255]
    mask = np.ones((4, 8), bool)
    mask[2, 5] = False
    assert (out[mask] == 0).all()
    c0, c1 = struct.unpack_from("<HH", data, 0)
    assert c0 <= c1  # the transparent block is a 3-colour block


def test_opaque_bc1_never_writes_a_three_colour_block_even_when_the_endpoints_quantise_alike():
    img = np.empty((4, 4, 4), np.uint8)
    img[..., :3] = (100, 100, 100)
    img[::2, ::2, :3] = (101, 101, 101)  # both round to the same 565 colour
    img[..., 3] = 0  # alpha is ignored without alpha_ref
    data = bc.encode_bc1(img)
    out = bc.decode_bc1(data, 4, 4)
    assert (out[..., 3] == 255).all()
    c0, c1, bits = struct.unpack("<HHI", data)
    assert c0 > c1 or bits == 0


def test_every_opaque_bc1_block_is_a_four_colour_block_or_uses_index_0_only():
    img = natural(seed=2)
    img[:8, :8, :3] = 77  # solid blocks: equal endpoints
    data = bc.encode_bc1(img)
    for c0, c1, bits in struct.iter_unpack("<HHI", data):
        assert c0 > c1 or bits == 0


# --- sizes ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("h, w", [(1, 1), (2, 3), (5, 7), (6, 4), (4, 9)])
@pytest.mark.parametrize("fmt", ["BC1", "BC3"])
def test_odd_sizes_give_whole_blocks_and_decode_cropped_with_the_right_colours(h, w, fmt):
    encode, decode = (bc.encode_bc1, bc.decode_bc1) if fmt == "BC1" else (bc.encode_bc3, bc.decode_bc3)
    a, b = expand565(0x5A6B), expand565(0xC3E7)
    pattern = np.random.default_rng(h * 10 + w).integers(0, 2, (h, w)).astype(bool)
    img = np.where(pattern[..., None], [*a, 255], [*b, 255]).astype(np.uint8)
    data = encode(img)
    assert len(data) == bc.block_bytes(fmt, h, w) == (8 if fmt == "BC1" else 16) * (-(-h // 4)) * (-(-w // 4))
    out = decode(data, h, w)
    assert out.shape == (h, w, 4)
    assert (out == img).all()  # padding repeats edge texels, so no block gains a third colour


def test_block_bytes_counts_at_least_one_block_each_way():
    assert bc.block_bytes("BC1", 1, 1) == 8
    assert bc.block_bytes("BC3", 4, 4) == 16
    assert bc.block_bytes("BC1", 5, 8) == 8 * 2 * 2
    assert bc.block_bytes("BC3", 2048, 1) == 16 * 512
    assert bc.block_bytes("BC1", 0, 0) == 8


def test_blocks_are_stored_row_by_row_from_the_top_left():
    img = np.zeros((8, 8, 4), np.uint8)
    img[..., 3] = 255
    img[:4, 4:, :3] = expand565(RED)  # block 1: top right
    img[4:, :4, :3] = expand565(BLUE)  # block 2: bottom left
    data = bc.encode_bc1(img)
    c0s = [struct.unpack_from("<H", data, 8 * k)[0] for k in range(4)]
    assert c0s == [0, RED, BLUE, 0]


# --- bad input -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("img, words", [(np.zeros((4, 4, 4), np.float32), "uint8"),
                                        (np.zeros((4, 4, 3), np.uint8), r"\(height, width, 4\)"),
                                        (np.zeros((4, 4), np.uint8), r"\(height, width, 4\)"),
                                        (np.zeros((0, 4, 4), np.uint8), "at least 1|>= 1"),
                                        ([[[0, 0, 0, 0]]], "uint8")])
def test_bad_images_are_refused_saying_what_is_expected(img, words):
    with pytest.raises(ValueError, match=words):
        bc.encode_bc1(img)
    with pytest.raises(ValueError, match=words):
        bc.encode_bc3(img)


@pytest.mark.parametrize("ref", [0.0, -0.5, 1.5, float("nan")])
def test_an_alpha_reference_outside_0_1_is_refused(ref):
    with pytest.raises(ValueError, match=r"alpha_ref must be in \(0, 1\]"):
        bc.encode_bc1(np.zeros((4, 4, 4), np.uint8), alpha_ref=ref)


def test_decoders_refuse_data_of_the_wrong_length_saying_how_many_bytes_they_expected():
    with pytest.raises(ValueError, match="is 32 bytes, got 24"):
        bc.decode_bc1(bytes(24), 5, 8)
    with pytest.raises(ValueError, match="is 16 bytes, got 8"):
        bc.decode_bc3(bytes(8), 4, 4)
    with pytest.raises(ValueError, match="at least 1"):
        bc.decode_bc1(bytes(8), 0, 4)
    with pytest.raises(ValueError, match="unknown block format"):
        bc.block_bytes("BC5", 4, 4)


def test_the_shortcuts_for_one_colour_and_fully_transparent_blocks_write_what_the_fit_writes(monkeypatch):
    """Blocks of one colour (4-colour mode) and BC1 blocks with nothing drawn skip the fit (most blocks of a
    cut-out card); their bytes are the fit's, with any colour under the transparent texels."""
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, (16, 16, 4), dtype=np.uint8)
    img[:8, :8, :3] = (37, 201, 99)  # four blocks of one colour
    img[8:, 8:, 3] = 0  # four blocks with nothing drawn, random colour underneath
    fast = bc.encode_bc1(img), bc.encode_bc1(img, alpha_ref=0.5), bc.encode_bc3(img)
    colours = rng.uniform(0, 255, (5, 16, 3)).astype(np.float32)
    assert (bc._fitted_words(colours, np.zeros((5, 16), np.float32), False) == bc.TRANSPARENT_BC1).all()
    monkeypatch.setattr(bc, "_colour_words", bc._fitted_words)  # every block through the fit
    assert (bc.encode_bc1(img), bc.encode_bc1(img, alpha_ref=0.5), bc.encode_bc3(img)) == fast
    cut, opaque = (np.frombuffer(data, "<u8").reshape(4, 4) for data in (fast[1], fast[0]))
    assert (cut[2:, 2:] == bc.TRANSPARENT_BC1).all() and (opaque[:2, :2] >> np.uint64(32) == 0).all()  # indices 0


@pytest.mark.parametrize("channel", [0, 1, 2, 3])
def test_bc4_stores_one_channel_as_bc3_stores_alpha(channel):
    """A BC4 block is BC3's alpha block of the chosen channel: the same 8 bytes, decoded as GPUs sample BC4 (the
    channel in R, G and B 0, A 255); odd sizes crop as the other formats; wrong lengths are refused."""
    rng = np.random.default_rng(channel)
    img = rng.integers(0, 256, (10, 7, 4), dtype=np.uint8)
    data = bc.encode_bc4(img, channel)
    assert len(data) == bc.block_bytes("BC4", 10, 7) == 8 * 3 * 2
    moved = img.copy()
    moved[..., 3] = img[..., channel]
    bc3 = np.frombuffer(bc.encode_bc3(moved), "<u8").reshape(-1, 2)[:, 0]
    np.testing.assert_array_equal(np.frombuffer(data, "<u8"), bc3)
    out = bc.decode_bc4(data, 10, 7)
    np.testing.assert_array_equal(out[..., 0], bc.decode_bc3(bc.encode_bc3(moved), 10, 7)[..., 3])
    assert out.shape == (10, 7, 4) and not out[..., 1:3].any() and (out[..., 3] == 255).all()
    with pytest.raises(ValueError, match="is 48 bytes, got 40"):
        bc.decode_bc4(data[:40], 10, 7)


def test_chunks_on_several_threads_write_the_same_bytes_as_one_chunk_on_one(monkeypatch):
    """The encoders split the blocks into spans, several threads at once (``encode_threads``, at most
    ``MAX_THREADS``); each span writes its own rows, so the bytes are those of one chunk on one thread, for every
    format, whatever the split (spans of one block up to all of them); BC7's decoder too."""
    from core import bc7

    rng = np.random.default_rng(11)
    img = rng.integers(0, 256, (36, 44, 4), dtype=np.uint8)  # 99 blocks
    img[:12, :, 3] = 255
    encoders = (bc.encode_bc1, lambda i: bc.encode_bc1(i, alpha_ref=0.5), bc.encode_bc3,
                lambda i: bc.encode_bc4(i, 1), bc7.encode_bc7)
    monkeypatch.setattr(bc, "encode_threads", lambda: 1)
    one = [encode(img) for encode in encoders]
    decoded = bc7.decode_bc7(one[-1], 36, 44)
    spans = []
    real_in_chunks = bc.in_chunks

    def counted(count, chunk, work):
        def span(a: int, b: int) -> None:
            spans.append((a, b))
            work(a, b)

        real_in_chunks(count, chunk, span)

    monkeypatch.setattr(bc, "in_chunks", counted)
    monkeypatch.setattr(bc, "SPLIT_FROM", 1)
    for threads, chunk in ((4, 32768), (3, 7), (2, 1)):
        monkeypatch.setattr(bc, "encode_threads", lambda threads=threads: threads)
        monkeypatch.setattr(bc, "CHUNK_BLOCKS", chunk)
        monkeypatch.setattr(bc7, "CHUNK_BLOCKS", chunk)
        spans.clear()
        assert [encode(img) for encode in encoders] == one, (threads, chunk)
        assert (bc7.decode_bc7(one[-1], 36, 44) == decoded).all()
        runs = len(encoders) + 1  # (and the decoder's)
        for fmt in range(runs):  # every run's spans cover the 99 blocks once, in at least `threads`
            mine = sorted(spans[fmt * len(spans) // runs:(fmt + 1) * len(spans) // runs])
            assert mine[0][0] == 0 and mine[-1][1] == 99 and len(mine) >= threads
            assert all(a[1] == b[0] for a, b in zip(mine, mine[1:]))


def test_an_error_in_one_span_is_raised_after_the_others_stop(monkeypatch):
    monkeypatch.setattr(bc, "encode_threads", lambda: 2)
    monkeypatch.setattr(bc, "SPLIT_FROM", 1)
    finished = []

    def work(start, stop):
        if start == 0:
            raise ValueError("span 0 failed")
        finished.append(start)

    with pytest.raises(ValueError, match="span 0 failed"):
        bc.in_chunks(10, 3, work)
    assert sorted(finished) == [3, 6, 9]


def test_encode_threads_are_the_cpus_this_process_may_use_at_most_max_threads(monkeypatch):
    """The process's affinity (a farm worker pinned to one core encodes on one thread), capped; without affinity
    (macOS, Windows) the machine's CPU count. The light map's bake counts its threads the same way."""
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert bc.encode_threads() == bc.MAX_THREADS
    assert lightmap2d.bake_threads() == lightmap2d.MAX_THREADS
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert bc.encode_threads() == 1 == lightmap2d.bake_threads()
    monkeypatch.delattr(cpus.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(cpus.os, "cpu_count", lambda: 3)
    assert bc.encode_threads() == 3
    monkeypatch.setattr(cpus.os, "cpu_count", lambda: None)
    assert bc.encode_threads() == 1


@pytest.mark.parametrize("dtype, tail", [(np.uint8, ()), (np.uint8, (4,)), (np.int32, ()), (np.int32, (4,)),
                                         (np.uint64, ()), (np.uint16, (3,)), (np.float32, (2, 2))])
def test_take_rows_is_take_along_axis_one(dtype, tail):
    """The decoders' gather: rows of 1, 2, 4 and 8 bytes read as one integer, others (12, 16 bytes) row by row."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 200, (37, 9, *tail)).astype(dtype)
    idx = rng.integers(0, 9, (37, 16)).astype(np.int32)
    want = np.take_along_axis(a, idx.astype(np.intp).reshape(37, 16, *(1,) * len(tail)), axis=1)
    got = bc.take_rows(a, idx)
    assert got.dtype == a.dtype and got.shape == (37, 16, *tail) and (got == want).all()
    assert (bc.take_rows(a[:, ::2], idx // 2) == np.take_along_axis(
        a[:, ::2], (idx // 2).astype(np.intp).reshape(37, 16, *(1,) * len(tail)), axis=1)).all()  # (a view)


@pytest.mark.parametrize("fmt", ["BC1", "BC3", "BC4"])
def test_decode_alpha_reads_the_channel_the_full_decode_gives(fmt):
    """The coverage check's shortcut: BC1's alpha (0 where a 3-colour block's index is 3), BC3's alpha and BC4's
    channel read without the colour, equal to the full decoders' on random blocks (both BC1 modes, every index) and
    on an encoded card with cut-out texels, at sizes that are no multiple of 4."""
    rng = np.random.default_rng(5)
    for h, w in ((36, 44), (6, 10), (3, 2)):
        data = rng.integers(0, 256, bc.block_bytes(fmt, h, w), dtype=np.uint8).tobytes()
        full = {"BC1": bc.decode_bc1, "BC3": bc.decode_bc3, "BC4": bc.decode_bc4}[fmt](data, h, w)
        assert (bc.decode_alpha(data, fmt, h, w) == full[..., 0 if fmt == "BC4" else 3]).all()
    img = gradient(40, 48)
    img[..., 3] = np.where(rng.random((40, 48)) < 0.3, 0, 200)
    data = {"BC1": lambda: bc.encode_bc1(img, 0.5), "BC3": lambda: bc.encode_bc3(img),
            "BC4": lambda: bc.encode_bc4(img, 3)}[fmt]()
    full = {"BC1": bc.decode_bc1, "BC3": bc.decode_bc3, "BC4": bc.decode_bc4}[fmt](data, 40, 48)
    got = bc.decode_alpha(data, fmt, 40, 48)
    assert got.shape == (40, 48) and (got == full[..., 0 if fmt == "BC4" else 3]).all()
    with pytest.raises(ValueError, match="BC1, BC3 or BC4"):
        bc.decode_alpha(data, "BC7", 40, 48)
