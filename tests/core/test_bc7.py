"""BC7 block compression (core/bc7.py): hand-built blocks of every mode against the spec, Pillow's decoder on
random blocks and on encoder output, round trips, the anchor rule, the choice of mode, the endpoint refinement,
quality against BC3 (alpha on leaf cards too), odd image sizes and bad input."""

import io
import struct

import numpy as np
import pytest

from core import bc, bc7, mips
from tests.core.bc_images import gradient, rmse  # (tests/conftest.py puts the repository root on sys.path)

# the spec's interpolation weights (Khronos Data Format spec, "BPTC interpolation factors")
W2 = [0, 21, 43, 64]
W3 = [0, 9, 18, 27, 37, 46, 55, 64]
W4 = [0, 4, 9, 13, 17, 21, 26, 30, 34, 38, 43, 47, 51, 55, 60, 64]
# two partitions, written out from the spec's tables: 2 subsets #13 (top half, bottom half; anchor of subset 1:
# texel 15) and 3 subsets #8 (rows 0-1, row 2, row 3; anchors of subsets 1 and 2: texels 8 and 15)
HALVES, HALVES_ANCHORS = [0] * 8 + [1] * 8, (0, 15)
ROWS, ROWS_ANCHORS = [0] * 8 + [1] * 4 + [2] * 4, (0, 8, 15)


class Bits:
    """A 128-bit block written field by field from bit 0 (little-endian), as the spec lays it out."""

    def __init__(self):
        self.value, self.pos = 0, 0

    def put(self, value, width):
        assert 0 <= value < (1 << width), (value, width)
        self.value |= value << self.pos
        self.pos += width
        return self

    def mode(self, m):
        return self.put(1 << m, m + 1)

    def block(self):
        assert self.pos == 128, self.pos
        return self.value.to_bytes(16, "little")


def read_bits(block, pos, width):
    return (int.from_bytes(block, "little") >> pos) & ((1 << width) - 1)


def widen(v, bits):
    """``bits``-bit endpoint to 8 bits: the value in the top bits, its top bits repeated below."""
    v <<= 8 - bits
    return v | (v >> bits)


def interp(e0, e1, w):
    return ((64 - w) * e0 + w * e1 + 32) >> 6


def decode_one(block):
    return bc7.decode_bc7(block, 4, 4).reshape(16, 4).tolist()


def natural(h=64, w=64, seed=0, sigma=8.0):
    """Low-frequency colour and alpha fields with texel noise in every channel, like a photo texture."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([120 + 80 * np.sin(x / 9 + y / 13), 110 + 70 * np.cos(x / 7 - y / 11),
                    90 + 60 * np.sin((x + y) / 15), 128 + 100 * np.sin(x / 17) * np.cos(y / 19)], axis=-1)
    return np.clip(img + rng.normal(0, sigma, img.shape), 0, 255).astype(np.uint8)


def opaque(img):
    """``img`` with alpha 255 everywhere: the blocks modes 0 to 3 (no alpha) can take."""
    img = img.copy()
    img[..., 3] = 255
    return img


def black_card(size=96, seed=0):
    """A cut-out card with black under its transparent texels: the leaf card's alpha and shading, colour 0
    wherever alpha is 0 (a painted card without colour bleeding)."""
    img = mips.make_leaf_card(size, seed=seed)
    img[img[..., 3] == 0, :3] = 0
    return img


def block_errors(img, out, weight=(1, 1, 1, 1)):
    """Squared error of every 4x4 block of a (4m, 4n) image, the channels R, G, B, A weighted."""
    e = ((out.astype(np.float64) - img) ** 2 * np.asarray(weight, dtype=np.float64)).sum(axis=-1)
    h, w = e.shape
    return e.reshape(h // 4, 4, w // 4, 4).sum(axis=(1, 3))


def encoder_weight():
    """The weights of the squared errors of R, G, B, A that the encoder minimises."""
    return np.array([1.0, 1.0, 1.0, bc7.ALPHA_WEIGHT])


def flips(out, img):
    """Texels whose alpha test at 128 (alpha >= 128 or not) the codec changes."""
    return int(((out[..., 3] >= 128) != (img[..., 3] >= 128)).sum())


def header(block):
    """(mode, rotation, index selection) of a block: the mode is the number of 0 bits before the first 1."""
    mode = next(m for m in range(8) if block[0] >> m & 1)
    return mode, read_bits(block, mode + 1, 2) if mode in (4, 5) else 0, read_bits(block, 7, 1) if mode == 4 else 0


def headers(data):
    return {header(data[k:k + 16]) for k in range(0, len(data), 16)}


def dds(data, height, width):
    """A minimal DDS file of BC7 data: the legacy header with FourCC 'DX10', then the DX10 header with
    DXGI_FORMAT_BC7_UNORM (98), a 2D texture (3), one array element."""
    header = struct.pack("<7I", 124, 0x1 | 0x2 | 0x4 | 0x1000 | 0x80000, height, width, len(data), 0, 1)
    header += b"\0" * 44 + struct.pack("<2I4s5I", 32, 0x4, b"DX10", 0, 0, 0, 0, 0)
    header += struct.pack("<5I", 0x1000, 0, 0, 0, 0)
    assert len(header) == 124
    return b"DDS " + header + struct.pack("<5I", 98, 3, 0, 1, 0) + data


def pillow_decode(data, height, width):
    image = pytest.importorskip("PIL.Image")
    with image.open(io.BytesIO(dds(data, height, width))) as im:
        assert im.mode == "RGBA" and im.size == (width, height)
        return np.asarray(im)


# --- hand-built blocks decode as the spec says ------------------------------------------------------------------

def test_a_mode_6_block_interpolates_rgba_endpoints_with_p_bits_over_16_weights():
    ends = {"R": (10, 100), "G": (20, 120), "B": (0, 127), "A": (127, 0)}
    b = Bits().mode(6)
    for c in "RGBA":
        b.put(ends[c][0], 7).put(ends[c][1], 7)
    b.put(1, 1).put(0, 1)  # P0 = 1, P1 = 0
    b.put(0, 3)  # texel 0: the anchor, 3 bits
    for k in range(1, 16):
        b.put(k, 4)
    out = decode_one(b.block())
    e0 = [(ends[c][0] << 1) | 1 for c in "RGBA"]
    e1 = [ends[c][1] << 1 for c in "RGBA"]
    assert out[0] == [21, 41, 1, 255] and out[15] == [200, 240, 254, 0]
    assert out == [[interp(e0[c], e1[c], W4[k]) for c in range(4)] for k in range(16)]


@pytest.mark.parametrize("rotation", [0, 1, 2, 3])
def test_a_mode_5_block_has_separate_colour_and_alpha_indices_and_rotates_alpha_into_a_colour(rotation):
    colour = {"R": (5, 120), "G": (64, 63), "B": (127, 0)}
    alpha = (3, 250)
    ci = [k % 4 for k in range(16)]
    ai = [(k // 4 + k) % 4 for k in range(16)]
    b = Bits().mode(5).put(rotation, 2)
    for c in "RGB":
        b.put(colour[c][0], 7).put(colour[c][1], 7)
    b.put(alpha[0], 8).put(alpha[1], 8)
    for indices in (ci, ai):
        b.put(indices[0], 1)  # anchors: 1 bit
        for i in indices[1:]:
            b.put(i, 2)
    out = decode_one(b.block())
    expected = []
    for k in range(16):
        t = [interp(widen(colour[c][0], 7), widen(colour[c][1], 7), W2[ci[k]]) for c in "RGB"]
        t.append(interp(alpha[0], alpha[1], W2[ai[k]]))
        if rotation:
            t[rotation - 1], t[3] = t[3], t[rotation - 1]
        expected.append(t)
    assert out == expected
    assert widen(64, 7) == 129 and widen(63, 7) == 126  # 7-bit levels repeat their top bit below


@pytest.mark.parametrize("selector", [0, 1])
def test_a_mode_4_block_swaps_its_2_and_3_bit_index_sets_by_the_selector_bit(selector):
    colour = {"R": (1, 30), "G": (31, 0), "B": (16, 17)}
    alpha = (5, 60)
    first = [(3 * k) % 4 for k in range(16)]  # 2-bit set
    second = [(5 * k + 1) % 8 for k in range(16)]  # 3-bit set
    second[0] = 3  # texel 0 of each set is its anchor: top bit 0
    b = Bits().mode(4).put(1, 2).put(selector, 1)  # rotation 1: alpha and red swap
    for c in "RGB":
        b.put(colour[c][0], 5).put(colour[c][1], 5)
    b.put(alpha[0], 6).put(alpha[1], 6)
    b.put(first[0], 1)
    for i in first[1:]:
        b.put(i, 2)
    b.put(second[0], 2)
    for i in second[1:]:
        b.put(i, 3)
    out = decode_one(b.block())
    expected = []
    for k in range(16):
        cw, aw = (W2[first[k]], W3[second[k]]) if selector == 0 else (W3[second[k]], W2[first[k]])
        t = [interp(widen(colour[c][0], 5), widen(colour[c][1], 5), cw) for c in "RGB"]
        t.append(interp(widen(alpha[0], 6), widen(alpha[1], 6), aw))
        expected.append([t[3], t[1], t[2], t[0]])
    assert out == expected


def subset_block(mode, partition, subsets, colour_bits, alpha_bits, pbits, index_bits, seed):
    """A block of a multi-subset mode with random endpoints, p-bits and indices; returns the bytes and the
    texels the spec gives, worked out here texel by texel."""
    rng = np.random.default_rng(seed)
    table, anchors = (HALVES, HALVES_ANCHORS) if subsets == 2 else (ROWS, ROWS_ANCHORS)
    ends = rng.integers(0, 1 << colour_bits, (2 * subsets, 3)).tolist()
    alphas = rng.integers(0, 1 << alpha_bits, 2 * subsets).tolist() if alpha_bits else None
    p = rng.integers(0, 2, {"endpoint": 2 * subsets, "subset": subsets, None: 0}[pbits]).tolist()
    idx = rng.integers(0, 1 << index_bits, 16).tolist()
    for k in anchors:
        idx[k] >>= 1  # anchors store one bit less
    b = Bits().mode(mode).put(partition, 6 if mode else 4)
    for c in range(3):
        for e in ends:
            b.put(e[c], colour_bits)
    for a in alphas or []:
        b.put(a, alpha_bits)
    for bit in p:
        b.put(bit, 1)
    for k in range(16):
        b.put(idx[k], index_bits - (k in anchors))

    def endpoint(j, value, bits):  # endpoint j's channel value widened to 8 bits, its p-bit below
        if pbits == "endpoint":
            return widen((value << 1) | p[j], bits + 1)
        if pbits == "subset":
            return widen((value << 1) | p[j // 2], bits + 1)
        return widen(value, bits)

    weights = {2: W2, 3: W3}[index_bits]
    texels = []
    for k in range(16):
        s, w = table[k], weights[idx[k]]
        t = [interp(endpoint(2 * s, ends[2 * s][c], colour_bits), endpoint(2 * s + 1, ends[2 * s + 1][c],
                                                                            colour_bits), w) for c in range(3)]
        t.append(interp(endpoint(2 * s, alphas[2 * s], alpha_bits), endpoint(2 * s + 1, alphas[2 * s + 1],
                                                                              alpha_bits), w) if alphas else 255)
        texels.append(t)
    return b.block(), texels


@pytest.mark.parametrize("mode, partition, subsets, colour_bits, alpha_bits, pbits, index_bits", [
    (0, 8, 3, 4, 0, "endpoint", 3),
    (1, 13, 2, 6, 0, "subset", 3),
    (2, 8, 3, 5, 0, None, 2),
    (3, 13, 2, 7, 0, "endpoint", 2),
    (7, 13, 2, 5, 5, "endpoint", 2),
])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_blocks_of_2_and_3_subsets_decode_by_partition_anchor_and_p_bits(mode, partition, subsets, colour_bits,
                                                                          alpha_bits, pbits, index_bits, seed):
    block, texels = subset_block(mode, partition, subsets, colour_bits, alpha_bits, pbits, index_bits, seed)
    assert decode_one(block) == texels


def test_the_reserved_mode_8_decodes_as_transparent_black():
    """What Direct3D and DirectXTex return for a first byte of 0 (Pillow 13 returns opaque black instead, so the
    Pillow tests below keep a mode bit in every block)."""
    block = bytes([0]) + bytes(range(1, 16))
    assert decode_one(block) == [[0, 0, 0, 0]] * 16


def test_the_partition_and_anchor_tables_are_consistent():
    for subsets in (2, 3):
        table, anchors = bc7.SUBSETS[subsets], bc7.ANCHORS[subsets]
        assert table.shape == (64, 16) and anchors.shape == (64, subsets)
        assert (table[:, 0] == 0).all()  # texel 0 is subset 0's anchor
        for p in range(64):
            assert sorted(set(table[p].tolist())) == list(range(subsets))
            assert [table[p, a] for a in anchors[p]] == list(range(subsets))  # each anchor lies in its subset
    assert bc7.SUBSETS[2][13].tolist() == HALVES and bc7.SUBSETS[3][8].tolist() == ROWS
    assert tuple(bc7.ANCHORS[2][13]) == HALVES_ANCHORS and tuple(bc7.ANCHORS[3][8]) == ROWS_ANCHORS


# --- Pillow's decoder ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", range(8))
def test_random_blocks_of_every_mode_decode_as_pillow_decodes_them(mode):
    """Every 128-bit block with a mode bit in its first byte is a valid BC7 block: 4096 random ones a mode
    reach every partition, anchor, rotation, selector and p-bit."""
    raw = np.random.default_rng(mode).integers(0, 256, (4096, 16), dtype=np.uint8)
    low = (1 << (mode + 1)) - 1
    raw[:, 0] = (raw[:, 0] & ~np.uint8(low)) | np.uint8(1 << mode)
    data = raw.tobytes()
    assert (pillow_decode(data, 256, 256) == bc7.decode_bc7(data, 256, 256)).all()


def test_encoder_output_decodes_as_pillow_decodes_it_odd_sizes_too():
    written = set()
    for img in (natural(), gradient(64, 64), mips.make_leaf_card(64, seed=2), black_card(), natural(7, 9, seed=3),
                natural(1, 1, seed=4), natural(3, 5, seed=5), opaque(natural(seed=6)), opaque(natural(9, 11, seed=7))):
        h, w = img.shape[:2]
        data = bc7.encode_bc7(img)
        assert (pillow_decode(data, h, w) == bc7.decode_bc7(data, h, w)).all()
        written |= headers(data)
    # every mode: mode 5 in every rotation, mode 4 in every rotation with both index selections
    assert {(m, r) for m, r, _ in written} == {(m, 0) for m in (0, 1, 2, 3, 6, 7)} | {(m, r) for m in (4, 5)
                                                                                     for r in range(4)}
    assert {s for m, _, s in written if m == 4} == {0, 1}


# --- round trips ---------------------------------------------------------------------------------------------

def test_blocks_of_one_colour_decode_exactly_for_every_level():
    v = np.arange(256)
    colours = np.stack([v, 255 - v, (v * 7) % 256, (v * 13 + 5) % 256], axis=1).astype(np.uint8)
    img = np.repeat(np.repeat(colours.reshape(16, 16, 1, 1, 4), 4, axis=2), 4, axis=3)
    img = img.transpose(0, 2, 1, 3, 4).reshape(64, 64, 4)
    data = bc7.encode_bc7(img)
    assert (bc7.decode_bc7(data, 64, 64) == img).all()
    assert all(data[16 * k] == 1 << 5 for k in range(256))  # mode 5, rotation 0


def test_two_colour_patterns_round_trip_exactly_at_odd_sizes():
    levels = np.array([widen(v, 7) for v in range(128)])  # what a 7-bit endpoint holds: exact in any rotation
    rng = np.random.default_rng(9)
    for h, w in [(1, 1), (3, 5), (4, 4), (5, 7), (6, 4), (4, 9), (9, 2)]:
        a, b = levels[rng.integers(0, 128, 4)], levels[rng.integers(0, 128, 4)]
        pattern = rng.integers(0, 2, (h, w)).astype(bool)
        img = np.where(pattern[..., None], a, b).astype(np.uint8)
        data = bc7.encode_bc7(img)
        assert len(data) == bc.block_bytes("BC7", h, w) == 16 * (-(-h // 4)) * (-(-w // 4))
        out = bc7.decode_bc7(data, h, w)
        assert out.shape == (h, w, 4) and out.dtype == np.uint8
        assert (out == img).all()


def test_one_texel_and_small_random_images_round_trip_closely():
    rng = np.random.default_rng(4)
    one = rng.integers(0, 256, (1, 1, 4), dtype=np.uint8)
    assert (bc7.decode_bc7(bc7.encode_bc7(one), 1, 1) == one).all()  # a 1x1 image pads to one colour
    for h, w in [(3, 5), (4, 4), (5, 7)]:
        img = gradient(h, w)
        out = bc7.decode_bc7(bc7.encode_bc7(img), h, w)
        assert rmse(out, img) < 1.5 and np.abs(out.astype(int) - img).max() <= 6


def test_a_smooth_gradient_stays_within_1_5_levels_rmse_alpha_within_1():
    img = gradient()  # red along x, green along y: a plane in every block, which one line can only approach
    out = bc7.decode_bc7(bc7.encode_bc7(img), 128, 128)
    assert rmse(out[..., :3], img[..., :3]) < 1.5
    assert rmse(out[..., 3], img[..., 3]) < 1.0  # alpha weighs more in the fits


def test_a_noisy_image_and_cut_out_cards_stay_within_bounds():
    img = natural()
    out = bc7.decode_bc7(bc7.encode_bc7(img), 64, 64)
    assert rmse(out, img) < 6.4
    for card in (mips.make_leaf_card(96, seed=1), black_card()):
        out = bc7.decode_bc7(bc7.encode_bc7(card), 96, 96)
        assert rmse(out, card) < 2.5
        # an alpha test at 0.5 keeps every transparent and every opaque texel
        assert (out[card[..., 3] == 0, 3] <= 32).all() and (out[card[..., 3] == 255, 3] >= 223).all()


@pytest.mark.parametrize("make", [gradient, natural, lambda: mips.make_leaf_card(128, seed=3),
                                  lambda: natural(seed=2, sigma=20.0)])
def test_bc7_is_nearer_the_image_than_bc3(make):
    img = make()
    h, w = img.shape[:2]
    seven = bc7.decode_bc7(bc7.encode_bc7(img), h, w)
    three = bc.decode_bc3(bc.encode_bc3(img), h, w)
    assert rmse(seven, img) < rmse(three, img)
    assert rmse(seven[..., :3], img[..., :3]) < rmse(three[..., :3], img[..., :3])


@pytest.mark.parametrize("size, seed", [(64, 0), (64, 1), (128, 3)])
def test_on_leaf_cards_alpha_is_nearer_than_bc3s_and_the_alpha_test_flips_no_more_texels(size, seed):
    """The alpha of alpha-tested foliage is what the mips preserve: mode 4 (8 levels of alpha of its own) and the
    weight of alpha in the mode choice put BC7's alpha below BC3's on leaf cards, small ones too."""
    img = mips.make_leaf_card(size, seed=seed)
    seven = bc7.decode_bc7(bc7.encode_bc7(img), size, size)
    three = bc.decode_bc3(bc.encode_bc3(img), size, size)
    assert rmse(seven[..., 3], img[..., 3]) <= rmse(three[..., 3], img[..., 3])
    assert rmse(seven, img) < rmse(three, img)
    assert flips(seven, img) <= flips(three, img)


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_on_leaf_cards_black_under_their_transparent_texels_bc7_beats_bc3_but_in_alpha_rms(seed, monkeypatch):
    """Soft alpha edges over a colour jump to black. BC3's 6-value alpha mode (0 and 255 exact, 6 levels between)
    suits such edge blocks better than mode 4's 8 even levels, so BC3's alpha RMS stays lower (the module's
    docstring); but BC7's total and colour are nearer, its alpha test flips fewer texels, and mode 4 with the alpha
    weight cut the alpha error of modes 6 and 5 (weight 1) by more than a third."""
    img = black_card(128, seed)
    seven = bc7.decode_bc7(bc7.encode_bc7(img), 128, 128)
    three = bc.decode_bc3(bc.encode_bc3(img), 128, 128)
    assert rmse(seven, img) < rmse(three, img)
    assert rmse(seven[..., :3], img[..., :3]) < rmse(three[..., :3], img[..., :3])
    assert flips(seven, img) < flips(three, img)
    monkeypatch.setattr(bc7, "ENCODER_MODES", (6, 5))
    monkeypatch.setattr(bc7, "ALPHA_WEIGHT", 1.0)
    before = bc7.decode_bc7(bc7.encode_bc7(img), 128, 128)
    assert rmse(seven[..., 3], img[..., 3]) < 0.65 * rmse(before[..., 3], img[..., 3])


def test_blocks_are_stored_row_by_row_from_the_top_left():
    img = np.zeros((8, 12, 4), np.uint8)
    colours = np.arange(6 * 4, dtype=np.uint8).reshape(6, 4) * 10
    for k, c in enumerate(colours):
        img[4 * (k // 3):4 * (k // 3) + 4, 4 * (k % 3):4 * (k % 3) + 4] = c
    data = bc7.encode_bc7(img)
    for k, c in enumerate(colours):
        assert decode_one(data[16 * k:16 * k + 16]) == [c.tolist()] * 16


def test_chunks_encode_and_decode_the_same_as_one_pass(monkeypatch):
    img = natural(20, 28, seed=6)
    data = bc7.encode_bc7(img)
    out = bc7.decode_bc7(data, 20, 28)
    monkeypatch.setattr(bc7, "CHUNK_BLOCKS", 4)
    assert bc7.encode_bc7(img) == data
    assert (bc7.decode_bc7(data, 20, 28) == out).all()


# --- what the encoder writes ---------------------------------------------------------------------------------

def parse_encoded(block):
    """(mode, rotation, index selection, sets) of a mode 4, 5 or 6 block, read here from the spec's layout: sets
    are (endpoint values (2, c) widened to 8 bits, 16 indices, the image channels they hold, the weights) per index
    set."""
    mode, rotation, selector = header(block)
    if mode == 6:
        ends = [[read_bits(block, 7 + 14 * c + 7 * e, 7) for c in range(4)] for e in (0, 1)]
        p = [read_bits(block, 63, 1), read_bits(block, 64, 1)]
        ends = [[(v << 1) | p[e] for v in ends[e]] for e in (0, 1)]
        idx = [read_bits(block, 65, 3)] + [read_bits(block, 68 + 4 * (k - 1), 4) for k in range(1, 16)]
        return 6, 0, 0, [(ends, idx, [0, 1, 2, 3], W4)]
    slots = [0, 1, 2, 3]
    if rotation:
        slots[rotation - 1], slots[3] = 3, rotation - 1  # the image channel in each slot
    if mode == 5:
        colour = [[widen(read_bits(block, 8 + 14 * c + 7 * e, 7), 7) for c in range(3)] for e in (0, 1)]
        alpha = [[read_bits(block, 50 + 8 * e, 8)] for e in (0, 1)]
        ci = [read_bits(block, 66, 1)] + [read_bits(block, 67 + 2 * (k - 1), 2) for k in range(1, 16)]
        ai = [read_bits(block, 97, 1)] + [read_bits(block, 98 + 2 * (k - 1), 2) for k in range(1, 16)]
        return 5, rotation, 0, [(colour, ci, slots[:3], W2), (alpha, ai, slots[3:], W2)]
    assert mode == 4, mode
    colour = [[widen(read_bits(block, 8 + 10 * c + 5 * e, 5), 5) for c in range(3)] for e in (0, 1)]
    alpha = [[widen(read_bits(block, 38 + 6 * e, 6), 6)] for e in (0, 1)]
    two = [read_bits(block, 50, 1)] + [read_bits(block, 51 + 2 * (k - 1), 2) for k in range(1, 16)]
    three = [read_bits(block, 81, 2)] + [read_bits(block, 83 + 3 * (k - 1), 3) for k in range(1, 16)]
    (ci, cw), (ai, aw) = ((three, W3), (two, W2)) if selector else ((two, W2), (three, W3))
    return 4, rotation, selector, [(colour, ci, slots[:3], cw), (alpha, ai, slots[3:], aw)]


def encoded_for_parsing(make, modes, monkeypatch):
    """The encoder's squared-error weights, the (blocks, 16, 4) texels of ``make()`` and their BC7 bytes written
    with ``ENCODER_MODES`` set to ``modes`` (None: the encoder's own)."""
    if modes is not None:
        monkeypatch.setattr(bc7, "ENCODER_MODES", modes)
    img = make()
    return encoder_weight(), bc._to_blocks(img).astype(np.int64), bc7.encode_bc7(img)


@pytest.mark.parametrize("make, modes", [(gradient, (6, 5, 4)), (natural, (6, 5, 4)), (natural, (4,)),
                                         (lambda: mips.make_leaf_card(64, seed=5), (6, 5, 4)),
                                         (black_card, (6, 5, 4)), (black_card, (4,))])
def test_encoded_anchors_have_top_bit_0_and_every_texel_takes_its_nearest_palette_entry(make, modes, monkeypatch):
    """The anchor's top bit is not stored: had the encoder left it set in any index set (mode 4: the 2-bit and the
    3-bit one), texel 0 would decode to an entry far from its value. Parsed here, every index (anchors included) is
    the nearest entry of its palette by the squared error the encoder weighs (alpha ``ALPHA_WEIGHT`` times a colour
    channel; a set of one channel needs no weight). Mode 4 alone: both index sets of every block."""
    weight, blocks, data = encoded_for_parsing(make, modes, monkeypatch)
    written = set()
    for n, texels in enumerate(blocks):
        mode, rotation, selector, sets = parse_encoded(data[16 * n:16 * n + 16])
        written.add((mode, rotation, selector))
        for ends, idx, channels, weights in sets:
            palette = np.array([[interp(a, b, w) for a, b in zip(*ends)] for w in weights])
            d = ((texels[:, None, channels] - palette[None]) ** 2 * weight[channels]).sum(axis=2)
            assert (d[np.arange(16), idx] == d.min(axis=1)).all(), (n, mode)
    if make is gradient:
        assert {5, 6} <= {m for m, _, _ in written}
    if make is natural:
        assert {(r, s) for m, r, s in written if m == 4} >= {(r, s) for r in range(4) for s in (0, 1)} - {(3, 0)}
    if modes == (4,):
        assert {m for m, _, _ in written} <= {4, 5}  # 5: blocks of one colour


@pytest.mark.parametrize("make, channel, ref", [(black_card, 3, 0.5), (lambda: mips.make_leaf_card(96, seed=4), 3, 0.5),
                                                (natural, 3, 0.3), (lambda: coverage_in_red(black_card()), 0, 0.5)])
def test_partitioned_modes_never_flip_more_texels_of_the_alpha_test_than_modes_6_5_and_4(make, channel, ref,
                                                                                         monkeypatch):
    """Mode 7 trades alpha for colour in the weighted error; where the alpha test (``channel`` / 255 >= ``ref``)
    is what the texture is for, a block keeps the partitioned mode only if its test flips no more texels than the
    best of modes 6, 5 and 4: block by block, then over the image (where that guard turned some blocks back,
    measured with the test off). Coverage in red: modes without alpha (0-3) may move it too."""
    img = make()
    h, w = img.shape[:2]

    def block_flips(data):
        out = bc7.decode_bc7(data, h, w)
        f = ((out[..., channel] >= ref * 255) != (img[..., channel] >= ref * 255)).astype(int)
        return f.reshape(h // 4, 4, w // 4, 4).sum(axis=(1, 3))

    kept = block_flips(bc7.encode_bc7(img, ref, channel))
    unguarded = block_flips(bc7.encode_bc7(img, None, channel))
    monkeypatch.setattr(bc7, "ENCODER_MODES", (6, 5, 4))
    single = block_flips(bc7.encode_bc7(img, ref, channel))
    assert (kept <= single).all()
    assert kept.sum() <= unguarded.sum() and kept.sum() < single.sum() + 1


def coverage_in_red(img):
    """A packed mask: the coverage (alpha) in R, alpha 255."""
    out = img.copy()
    out[..., 0], out[..., 3] = img[..., 3], 255
    return out


# partitioned modes as the spec lays them out: subsets, partition bits, colour bits, alpha bits, p-bits, index bits
PARTITIONED = {0: (3, 4, 4, 0, "endpoint", 3), 1: (2, 6, 6, 0, "subset", 3), 2: (3, 6, 5, 0, None, 2),
               3: (2, 6, 7, 0, "endpoint", 2), 7: (2, 6, 5, 5, "endpoint", 2)}


def parse_partitioned(block):
    """(mode, partition, endpoints (subsets, 2, channels) widened to 8 bits, subset of each texel, 16 indices) of a
    block of mode 0, 1, 2, 3 or 7, read here from the spec's layout (channels: R, G, B, and A in mode 7)."""
    mode = header(block)[0]
    subsets, partition_bits, colour_bits, alpha_bits, pbits, index_bits = PARTITIONED[mode]
    pos = mode + 1
    partition = read_bits(block, pos, partition_bits)
    pos += partition_bits
    ends = np.zeros((2 * subsets, 4 if alpha_bits else 3), dtype=np.int64)
    for c, width in enumerate([colour_bits] * 3 + ([alpha_bits] if alpha_bits else [])):
        for e in range(2 * subsets):
            ends[e, c] = read_bits(block, pos, width)
            pos += width
    bits = colour_bits
    if pbits:
        count = 2 * subsets if pbits == "endpoint" else subsets
        p = [read_bits(block, pos + k, 1) for k in range(count)]
        pos += count
        ends = (ends << 1) | np.repeat(p, 2 * subsets // count)[:, None]
        bits += 1
    ends = np.vectorize(lambda v: widen(int(v), bits))(ends)
    subset = bc7.SUBSETS[subsets][partition]
    anchors = set(bc7.ANCHORS[subsets][partition].tolist())
    idx = []
    for k in range(16):
        idx.append(read_bits(block, pos, index_bits - (k in anchors)))
        pos += index_bits - (k in anchors)
    assert pos == 128
    return mode, partition, ends.reshape(subsets, 2, -1), subset, idx


@pytest.mark.parametrize("make, modes", [(lambda: opaque(natural()), (0,)), (lambda: opaque(natural()), (1,)),
                                         (lambda: opaque(natural()), (2,)), (lambda: opaque(natural()), (3,)),
                                         (natural, (7,)), (black_card, (7,)), (lambda: opaque(natural(seed=3)), None),
                                         (lambda: opaque(black_card(64, seed=5)), None)])
def test_partitioned_blocks_keep_each_anchors_top_bit_0_and_take_the_nearest_entry_of_their_subsets_palette(
        make, modes, monkeypatch):
    """Each subset's anchor stores its index with one bit less: had the encoder left its top bit set, the texel
    would read as another index. Parsed here, every texel's index is the nearest entry of its subset's palette (the
    weighted error; modes without alpha: R, G, B) and every subset holds the texels of the spec's partition. None:
    the encoder's own choice of modes."""
    weight, blocks, data = encoded_for_parsing(make, modes, monkeypatch)
    written = set()
    for n, texels in enumerate(blocks):
        block = data[16 * n:16 * n + 16]
        if header(block)[0] not in PARTITIONED:
            continue
        mode, partition, ends, subset, idx = parse_partitioned(block)
        written.add(mode)
        channels = list(range(ends.shape[2]))
        weights = np.array({2: W2, 3: W3}[PARTITIONED[mode][5]])
        for k in range(16):
            e0, e1 = ends[subset[k]]
            palette = np.array([[interp(a, b, w) for a, b in zip(e0, e1)] for w in weights])
            d = ((texels[k, channels] - palette) ** 2 * weight[channels]).sum(axis=1)
            assert d[idx[k]] == d.min(), (n, mode, partition, k)
    assert written == set(modes) if modes is not None else len(written) >= 2


def test_three_flat_colours_in_a_3_subset_partition_round_trip_exactly_in_a_partitioned_mode():
    """Three colours not on a line: no single-subset mode holds them; 5-bit levels laid out as a 3-subset
    partition decode exactly in mode 2 (or in any partition whose subsets hold at most two of the colours each:
    the scatter estimate is 0 there too, and a 2-subset mode whose levels hold the colours also does)."""
    levels = [widen(v, 5) for v in range(32)]
    rng = np.random.default_rng(11)
    written = set()
    for partition in (0, 8, 21, 47, 63):
        colours = np.array([[levels[v] for v in rng.integers(0, 32, 3)] + [255] for _ in range(3)], np.uint8)
        rgb = colours[:, :3].astype(float)
        assert np.linalg.matrix_rank(rgb[1:] - rgb[0]) == 2  # not on a line
        img = colours[bc7.SUBSETS[3][partition]].reshape(4, 4, 4)
        data = bc7.encode_bc7(img)
        assert (bc7.decode_bc7(data, 4, 4) == img).all()
        mode, found, _, subset, _ = parse_partitioned(data)
        for s in range(PARTITIONED[mode][0]):  # each subset holds at most two of the colours
            assert len({tuple(t) for t in img.reshape(16, 4)[subset == s]}) <= 2
        written.add(mode)
    assert 2 in written


def test_two_subsets_of_two_colours_each_round_trip_exactly_in_mode_3():
    """Four colours, two to a subset of a 2-subset partition, of even values from 128 (mode 3's 7-bit endpoints with
    p-bit 0 hold them; 7-bit levels widened by replication, modes 1 and 5's, are odd from 129)."""
    rng = np.random.default_rng(12)
    for partition in (3, 13, 34, 60):
        colours = rng.integers(64, 128, (2, 2, 3)) * 2
        img = np.full((16, 4), 255, np.uint8)
        for s in (0, 1):
            texels = np.flatnonzero(bc7.SUBSETS[2][partition] == s)
            img[texels, :3] = colours[s, (np.arange(len(texels)) % 2)]
        img = img.reshape(4, 4, 4)
        data = bc7.encode_bc7(img)
        assert (bc7.decode_bc7(data, 4, 4) == img).all()
        mode, _, _, subset, _ = parse_partitioned(data)
        assert mode == 3  # (in this partition or another whose subsets hold two of the colours each)
        assert all(len({tuple(t) for t in img.reshape(16, 4)[subset == s]}) <= 2 for s in (0, 1))


@pytest.mark.parametrize("bits, shared", [(4, False), (5, False), (6, True), (7, False)])
def test_p_bit_endpoints_take_the_p_bit_whose_levels_lie_nearer(bits, shared):
    """Every endpoint (mode 1: both endpoints of a subset) gets the p-bit, and the levels under it, nearest its
    values, against all 2 ** (bits + 1) levels of each channel worked out here."""
    rng = np.random.default_rng(bits)
    ends = rng.uniform(0, 255, (500, 2, 3)).astype(np.float32)
    stored, widened = bc7._pbit_quantiser(bits, shared)(ends)
    p = stored[..., 3]
    assert ((stored[..., :3] >= 0) & (stored[..., :3] < 1 << bits)).all()
    level = np.vectorize(lambda v, q: widen(int(v) << 1 | int(q), bits + 1))
    assert (widened == level(stored[..., :3], p[..., None])).all()
    best = []
    for q in (0, 1):
        options = np.array([widen(v << 1 | q, bits + 1) for v in range(1 << bits)])
        best.append((np.abs(ends[..., None] - options).min(axis=-1) ** 2).sum(axis=-1))  # (500, 2)
    if shared:
        assert (p[:, 0] == p[:, 1]).all()
        best = [b.sum(axis=1, keepdims=True) for b in best]
    got = np.where(p == 1, best[1], best[0])
    assert np.allclose(got, np.minimum(best[0], best[1]))


def test_the_partition_scatter_estimate_is_the_scatter_off_each_subsets_principal_axis():
    """Against numpy's eigenvalues: the estimate is at least the exact residual (the Rayleigh quotient is at most
    the largest eigenvalue) and within 6 % of it summed over the blocks of a noisy image (texel noise scatters
    evenly: one power step's worst case; measured 4.8 %); it is 0 where every subset is on a line."""
    x = bc._to_blocks(natural(32, 32, seed=9)).astype(np.float32)
    for subsets, c in ((2, 4), (3, 3)):
        got = bc7._partition_scatter(x[..., :c], subsets, 64)
        exact = np.zeros_like(got, dtype=np.float64)
        for p in range(64):
            for s in range(subsets):
                t = x[:, bc7.SUBSETS[subsets][p] == s, :c].astype(np.float64)
                d = t - t.mean(axis=1, keepdims=True)
                exact[:, p] += np.trace(d.transpose(0, 2, 1) @ d, axis1=1, axis2=2) - np.linalg.eigvalsh(
                    d.transpose(0, 2, 1) @ d)[:, -1]
        assert (got >= exact - 1e-2 * np.maximum(exact, 1.0)).all()
        assert got.sum() <= 1.06 * exact.sum()
    # four colours not in a plane, two to each subset of partition 17 (alternating): each subset is on a line there,
    # most other partitions mix three or four colours in a subset
    colours = np.array([[10, 200, 30, 255], [250, 5, 99, 255], [40, 40, 220, 255], [200, 230, 10, 255]], np.float32)
    layout = 2 * bc7.SUBSETS[2][17] + np.arange(16) % 2
    scatter = bc7._partition_scatter(colours[layout][None], 2, 64)[0]
    assert abs(scatter[17]) < 0.1 and np.median(scatter) > 1000


def test_partitioned_modes_fit_only_the_blocks_the_other_modes_leave_above_partition_from(monkeypatch):
    """Blocks whose best single-subset error is at most ``PARTITION_FROM`` keep that mode; with the threshold at
    0, every block may take a partitioned mode and none comes out farther; at infinity none does. The image: a
    smooth gradient (left half: single-subset errors within the threshold) beside noise (right half: above it)."""
    img = opaque(natural(seed=4))
    img[:, :32] = opaque(gradient(64, 32))
    weight = encoder_weight()
    chosen = bc7.encode_bc7(img)
    monkeypatch.setattr(bc7, "ENCODER_MODES", (6, 5, 4))
    single = bc7.encode_bc7(img)
    single_errors = block_errors(img, bc7.decode_bc7(single, 64, 64), weight).reshape(-1)
    modes = [header(chosen[k:k + 16])[0] for k in range(0, len(chosen), 16)]
    for n in range(len(modes)):
        if single_errors[n] <= bc7.PARTITION_FROM:
            assert chosen[16 * n:16 * n + 16] == single[16 * n:16 * n + 16]
    assert (single_errors <= bc7.PARTITION_FROM).any() and {0, 1, 2} <= set(modes)
    monkeypatch.setattr(bc7, "ENCODER_MODES", (6, 5, 4, 7, 1, 3, 2, 0))
    monkeypatch.setattr(bc7, "PARTITION_FROM", 0.0)
    everywhere = block_errors(img, bc7.decode_bc7(bc7.encode_bc7(img), 64, 64), weight)
    partly = block_errors(img, bc7.decode_bc7(chosen, 64, 64), weight)
    assert (everywhere <= partly).all()
    monkeypatch.setattr(bc7, "PARTITION_FROM", np.inf)
    assert bc7.encode_bc7(img) == single


@pytest.mark.parametrize("make", [natural, lambda: gradient(64, 64), lambda: mips.make_leaf_card(64, seed=5),
                                  black_card, lambda: natural(seed=2, sigma=20.0), lambda: opaque(natural(seed=8)),
                                  lambda: opaque(black_card(64, seed=2))])
def test_each_block_takes_the_mode_that_decodes_nearest(make, monkeypatch):
    """Encoded in one mode at a time (``ENCODER_MODES``), no block decodes nearer, by the weighted error, than in
    the choice of all eight (partitioned modes fitted to every block: ``PARTITION_FROM`` 0; modes 0-3, which
    decode alpha 255, on opaque images; no alpha test kept: ``alpha_ref`` None); and over the image the choice
    beats every mode alone."""
    img = make()
    h, w = img.shape[:2]
    monkeypatch.setattr(bc7, "PARTITION_FROM", 0.0)

    def errors(modes):
        monkeypatch.setattr(bc7, "ENCODER_MODES", modes)
        return block_errors(img, bc7.decode_bc7(bc7.encode_bc7(img, None), h, w), encoder_weight())

    chosen = errors((6, 5, 4, 7, 1, 3, 2, 0))
    for mode in (6, 5, 4, 7) + ((1, 3, 2, 0) if (img[..., 3] == 255).all() else ()):
        alone = errors((mode,))
        assert (chosen <= alone).all(), mode
        assert chosen.sum() < alone.sum(), mode


def test_blocks_of_one_rgb_colour_get_its_exact_endpoints_and_a_fitted_alpha():
    img = np.empty((4, 4, 4), np.uint8)
    img[..., :3] = (127, 128, 3)  # no 7-bit level and no mode 6 p-bit holds these: index 1 between two levels
    img[..., 3] = np.array([0, 84, 171, 255] * 4).reshape(4, 4)  # mode 5's alpha palette of endpoints 0, 255
    data = bc7.encode_bc7(img)
    assert data[0] == 1 << 5  # mode 5, rotation 0
    assert (bc7.decode_bc7(data, 4, 4) == img).all()


def test_least_squares_refinement_is_never_worse_than_the_range_fit_and_often_better(monkeypatch):
    """Block by block, in every mode (partitioned ones fitted everywhere: ``PARTITION_FROM`` 0, which the other
    modes' errors would move; no alpha test kept, which trades error for the test); opaque images for modes 0-3."""
    images = [np.random.default_rng(7).integers(0, 256, (64, 64, 4), dtype=np.uint8), natural(seed=5),
              gradient(64, 64), opaque(natural(seed=6))]
    monkeypatch.setattr(bc7, "PARTITION_FROM", 0.0)
    for img in images:
        refined = bc7.decode_bc7(bc7.encode_bc7(img, None), 64, 64)
        with monkeypatch.context() as m:
            m.setattr(bc7, "REFINE_STEPS", 0)
            range_fit = bc7.decode_bc7(bc7.encode_bc7(img, None), 64, 64)
        better = block_errors(img, refined, encoder_weight())
        plain = block_errors(img, range_fit, encoder_weight())
        assert (better <= plain).all()
        assert (better < plain).mean() > 0.2
        assert better.sum() < plain.sum()


# --- sizes and bad input -------------------------------------------------------------------------------------

def test_bc7_data_is_16_bytes_a_block_at_least_one_block_each_way():
    assert bc.block_bytes("BC7", 4, 4) == bc.block_bytes("BC7", 1, 1) == bc.block_bytes("BC7", 0, 0) == 16
    assert bc.block_bytes("BC7", 5, 8) == 16 * 2 * 2
    assert bc.block_bytes("BC7", 2048, 1) == bc.block_bytes("BC3", 2048, 1)
    for h, w in [(1, 1), (5, 8), (9, 3)]:
        assert len(bc7.encode_bc7(natural(h, w))) == bc.block_bytes("BC7", h, w)


@pytest.mark.parametrize("img, words", [(np.zeros((4, 4, 4), np.float32), "uint8"),
                                        (np.zeros((4, 4, 3), np.uint8), r"\(height, width, 4\)"),
                                        (np.zeros((4, 4), np.uint8), r"\(height, width, 4\)"),
                                        (np.zeros((0, 4, 4), np.uint8), ">= 1"),
                                        ([[[0, 0, 0, 0]]], "uint8")])
def test_bad_images_are_refused_saying_what_is_expected(img, words):
    with pytest.raises(ValueError, match=words):
        bc7.encode_bc7(img)


@pytest.mark.parametrize("kwargs, words", [({"alpha_ref": 0.0}, r"alpha_ref must be in \(0, 1\]"),
                                           ({"alpha_ref": 1.5}, "alpha_ref must be in"),
                                           ({"alpha_ref": "0.5"}, "got '0.5'"),
                                           ({"channel": 4}, "channel must be 0, 1, 2 or 3"),
                                           ({"channel": -1}, "channel must be")])
def test_a_bad_alpha_test_is_refused_saying_what_is_expected(kwargs, words):
    with pytest.raises(ValueError, match=words):
        bc7.encode_bc7(natural(8, 8), **kwargs)


@pytest.mark.parametrize("data, height, width, words", [
    (bytes(48), 5, 8, "BC7 data of a 5x8 image is 64 bytes, got 48"),
    (np.zeros(16, np.uint8), 4, 4, "must be bytes, got ndarray"),
    (bytes(16), 0, 4, "at least 1"),
    (bytes(16), 4.0, 4, "must be integers")])
def test_the_decoder_refuses_data_of_the_wrong_length_or_type_and_sizes_below_1(data, height, width, words):
    with pytest.raises(ValueError, match=words):
        bc7.decode_bc7(data, height, width)


def test_the_decoder_takes_any_bytes_like_data():
    data = bc7.encode_bc7(natural(4, 4))
    out = bc7.decode_bc7(data, 4, 4)
    assert (bc7.decode_bc7(bytearray(data), 4, 4) == out).all()
    assert (bc7.decode_bc7(memoryview(data), 4, 4) == out).all()
