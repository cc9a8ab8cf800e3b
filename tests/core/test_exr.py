"""core.exr.to_half: float32 to half floats as numpy converts them (the VAT bake's EXR16 textures); file_damage:
whether an OpenEXR file is whole."""

import struct

import numpy as np
import pytest

from core import exr

SMALLEST_NORMAL = 2.0 ** -14  # a half float's smallest normal number


def numpy_half(values, scale=1.0):
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.asarray(values, np.float32) * np.float32(scale)).astype(np.float16).view(np.uint16)


def fast_half(values, scale=1.0, limit=None):
    values = np.asarray(values, np.float32)
    out = np.full(values.shape, 0xABCD, np.uint16)
    assert exr.to_half(values, out, scale, limit=limit) is out
    return out


def float32_sample(step=256, seed=0):
    """Every ``step``-th float32 bit pattern (a random one of each run): every exponent, both signs."""
    rng = np.random.default_rng(seed)
    bits = np.arange(0, 2 ** 32, step, dtype=np.uint64) + rng.integers(0, step, 2 ** 32 // step)
    return bits.astype(np.uint32).view(np.float32)


def test_every_normal_half_is_numpys_and_subnormals_are_within_one_step():
    v = float32_sample()
    v = v[np.isfinite(v) & (np.abs(v) < 65520.0)]  # (the rest: numpy's own path, below)
    got, want = fast_half(v), numpy_half(v)
    normal = np.abs(v) >= SMALLEST_NORMAL
    assert normal.sum() > 1_000_000 and (~normal).sum() > 1_000_000
    assert np.array_equal(got[normal], want[normal])
    step = np.abs(got[~normal].astype(np.int64) - want[~normal])
    assert step.max() <= 1 and np.count_nonzero(step) < 1e-4 * step.size


def test_ties_round_to_even_and_zeros_keep_their_sign():
    halves = np.arange(0, 0x7BFF, dtype=np.uint16).view(np.float16).astype(np.float32)  # every finite half >= 0
    ties = (halves[:-1].astype(np.float64) + halves[1:]) / 2  # exactly halfway: float32 holds them
    values = np.concatenate([halves, ties, [65504.0, 65519.0, 65520.0, -0.0, 0.0]]).astype(np.float32)
    values = np.concatenate([values, -values])
    assert np.array_equal(fast_half(values), numpy_half(values))
    assert fast_half([-0.0])[0] == 0x8000 and fast_half([65520.0])[0] == 0x7C00  # the first value rounded to inf


@pytest.mark.parametrize("scale", [1.0, -1.0, 100.0, 0.3048])
def test_a_scale_is_applied_as_numpy_multiplies_then_converts(scale):
    rng = np.random.default_rng(1)
    v = (rng.standard_normal(20000) * 10.0 ** rng.uniform(-3, 2, 20000)).astype(np.float32)
    got, want = fast_half(v, scale), numpy_half(v, scale)
    big = np.abs(v.astype(np.float64) * scale) >= SMALLEST_NORMAL * 1.01
    assert np.array_equal(got[big], want[big])


def test_infinite_nan_and_out_of_range_values_are_numpys():
    v = np.array([np.inf, -np.inf, np.nan, 70000.0, -1e30, 1.5, -2.25, 3e-6], np.float32)
    assert np.array_equal(fast_half(v), numpy_half(v))  # inf, -inf, NaN, inf, -inf, then the same values
    assert np.array_equal(fast_half(v[-3:], 1e6), numpy_half(v[-3:], 1e6))  # out of range once scaled


def test_a_known_limit_skips_the_check_and_gives_the_same_bits():
    rng = np.random.default_rng(2)
    v = rng.uniform(-3.0, 3.0, 5000).astype(np.float32)
    assert np.array_equal(fast_half(v, -1.0, limit=float(np.abs(v).max())), numpy_half(v, -1.0))
    big = np.array([1.0, 70000.0], np.float32)  # a limit beyond the half range: checked, so numpy's inf
    assert np.array_equal(fast_half(big, limit=70000.0), numpy_half(big))


def test_strided_destination_and_reused_work_buffer():
    """As the VAT bake writes a frame: a block of rows into one channel plane of an EXR's scanlines."""
    rng = np.random.default_rng(3)
    rows = np.zeros((40, 3, 64), np.float16)  # (scanlines, channel planes, width)
    work = np.empty((2, 40, 60), np.uint32)
    for k in range(3):
        src = rng.standard_normal((40, 60)).astype(np.float32)
        exr.to_half(src, rows[:, k, :60], 1.0, work)
        assert np.array_equal(rows[:, k, :60].view(np.uint16), numpy_half(src))
    assert not rows[:, :, 60:].any()  # nothing written beyond the block


def test_a_thread_flushing_subnormals_gets_numpys_conversion(monkeypatch):
    v = np.array([1e-6, -3e-7, 0.5, 2.0 ** -20], np.float32)
    monkeypatch.setattr(exr, "_keeps_subnormals", lambda: False)
    assert np.array_equal(fast_half(v), numpy_half(v))


@pytest.mark.parametrize("compression, half", [(exr.NO_COMPRESSION, False), (exr.ZIP_COMPRESSION, True),
                                               (exr.ZIP_COMPRESSION, False)])
def test_a_file_cut_short_anywhere_is_named_damaged_and_a_whole_one_is_not(tmp_path, compression, half):
    """``file_damage`` reads a file's header, its table of chunk offsets and its last chunk's size: every prefix of
    a scanline file (cut in the header, in the table, in a chunk) is damaged, the whole file is not, nor is one
    with bytes after its end."""
    rng = np.random.default_rng(3)
    path = tmp_path / "whole.exr"
    exr.write_exr(str(path), rng.uniform(0, 1, (37, 21, 3)).astype(np.float32), compression=compression, half=half)
    data = path.read_bytes()
    assert exr.file_damage(str(path)) is None
    cut = tmp_path / "cut.exr"
    for end in range(len(data)):
        cut.write_bytes(data[:end])
        why = exr.file_damage(str(cut))
        assert why is not None, end
    header_end = data.index(b"\0\0", 8)  # (an attribute's end and the header's)
    cut.write_bytes(data[:header_end // 2])
    assert "header is cut short" in str(exr.file_damage(str(cut)))
    cut.write_bytes(data + b"\0" * 7)
    assert exr.file_damage(str(cut)) is None
    cut.write_bytes(b"\x89PNG\r\n\x1a\n" + data[8:])
    assert "not an OpenEXR file" in str(exr.file_damage(str(cut)))


def test_tiled_and_mip_mapped_files_count_their_tiles():
    """A tiled file's chunk count from its tile description: one level, mip levels rounded down or up, rip levels
    (OpenEXR's level arithmetic), checked on sizes whose levels end odd."""
    desc = struct.pack("<IIB", 16, 16, 0)
    assert exr._tile_count(40, 33, desc) == 3 * 3
    down = struct.pack("<IIB", 16, 16, 1)  # mip levels, rounding down: 40x33, 20x16, 10x8, 5x4, 2x2, 1x1
    assert exr._tile_count(40, 33, down) == 9 + 2 + 1 + 1 + 1 + 1
    up = struct.pack("<IIB", 16, 16, 1 | 0x10)  # rounding up: 40x33, 20x17, 10x9, 5x5, 3x3, 2x2, 1x1
    assert exr._tile_count(40, 33, up) == 9 + 4 + 1 + 1 + 1 + 1 + 1
    rip = struct.pack("<IIB", 16, 16, 2)  # every level of x (40, 20, 10, 5, 2, 1) with every one of y (33 .. 1)
    assert exr._tile_count(40, 33, rip) == sum(-(-max(1, 40 >> i) // 16) * -(-max(1, 33 >> j) // 16)
                                               for i in range(6) for j in range(6))


def _header_only(path, channel_names):
    """An OpenEXR file holding only a header whose channel list names ``channel_names`` (what layer_names reads)."""
    chlist = b"".join(n.encode() + b"\0" + struct.pack("<iB3xii", 1, 0, 1, 1) for n in channel_names) + b"\0"
    attr = b"channels\0chlist\0" + struct.pack("<i", len(chlist)) + chlist
    path.write_bytes(struct.pack("<ii", exr.MAGIC, 2) + attr + b"\0")
    return str(path)


def test_a_multi_layer_file_is_told_apart_from_a_plain_image(tmp_path):
    """Blender reads a multi-layer OpenEXR (a render's passes, its own matcaps) as an image of no pixels: the bakes
    name its layers instead of calling it damaged."""
    layered = _header_only(tmp_path / "passes.exr", ["diffuse.A", "diffuse.B", "diffuse.G", "diffuse.R", "spec.R"])
    assert exr.layer_names(layered) == ["diffuse", "spec"]
    text = exr.layers_text(layered)
    assert text is not None and "multi-layer OpenEXR (layers diffuse, spec)" in text
    plain = tmp_path / "plain.exr"
    exr.write_exr(str(plain), np.zeros((2, 3, 4), np.float32), "RGBA")
    assert exr.layer_names(str(plain)) == [] and exr.layers_text(str(plain)) is None
    assert exr.layer_names(_header_only(tmp_path / "mixed.exr", ["R", "G", "B", "depth.Z"])) == []  # a plain layer
    (tmp_path / "not.exr").write_bytes(b"not an image")
    assert exr.layer_names(str(tmp_path / "not.exr")) == [] and exr.layer_names(str(tmp_path / "gone.exr")) == []
    cut = tmp_path / "cut.exr"
    cut.write_bytes((tmp_path / "passes.exr").read_bytes()[:30])
    assert exr.layer_names(str(cut)) == []
