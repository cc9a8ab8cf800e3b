"""Vertex animation textures (core/vat.py): layout, encodings, packed normals, engine axes, names, bad input."""

import io
import json
import sys

import numpy as np
import pytest

from core import bend_engines, png, vat


def animated(n=50, frames=6, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    rest = rng.uniform(-1, 1, (n, 3)) * scale
    t = np.arange(frames)[:, None, None]
    offsets = (0.3 * np.sin(t * 0.7 + rest[None] * 3.0) * scale).astype(np.float32)
    normals = rng.normal(size=(frames, n, 3))
    normals /= np.linalg.norm(normals, axis=2, keepdims=True)
    return rest, offsets, normals


# --- frames and layout -------------------------------------------------------------------------------------

def test_frames_include_the_end_and_a_loop_leaves_out_the_frame_that_repeats_the_first():
    assert vat.baked_frames(1, 10, 3) == [1, 4, 7, 10]
    assert vat.baked_frames(1, 99, 2, loop_frames=8) == [1, 3, 5, 7]  # frame 9 would repeat frame 1


@pytest.mark.parametrize("args, words", [((5, 5, 1), "single frame"), ((1, 10, 20), "single frame"),
                                         ((5, 1, 1), "empty"), ((1, 10, 0), "step"),
                                         ((1, 10, 3, 8), "not a multiple")])
def test_bad_frame_ranges_are_refused_saying_what_to_change(args, words):
    with pytest.raises(vat.VatError, match=words):
        vat.baked_frames(*args)


def test_layout_wraps_long_vertex_counts_and_stays_within_the_size():
    lay = vat.plan_layout(100_000, 250)
    assert lay.width <= 8192 and lay.height <= 8192
    assert lay.rows_per_frame == 13 and lay.width * lay.rows_per_frame >= 100_000
    assert lay.width * (lay.rows_per_frame - 1) < 100_000  # no row is wasted
    small = vat.plan_layout(10, 4)
    assert (small.width, small.rows_per_frame, small.height) == (10, 1, 4)


def test_a_mesh_too_big_for_the_texture_names_the_setting_to_change():
    with pytest.raises(vat.VatError, match="Frame Step or a shorter range.*Maximum Texture Size"):
        vat.plan_layout(100_000, 700)
    with pytest.raises(vat.VatError, match="too many vertices"):
        vat.plan_layout(5000, 2, max_size=64)
    assert vat.frames_needed(100_000) == 630


def test_packing_puts_each_vertex_at_its_texel_and_uvs_hit_texel_centres():
    lay = vat.plan_layout(23, 3, max_size=10)
    values = np.arange(3 * 23, dtype=np.float32).reshape(3, 23, 1)
    img = vat.pack_frames(values, lay)
    assert img.shape == (lay.height, lay.width, 1)
    x, row = lay.texels()
    for f in range(3):
        assert np.array_equal(img[f * lay.rows_per_frame + row, x, 0], values[f, :, 0])
    assert np.array_equal(vat.unpack_frames(img, lay), values)
    uv = lay.uvs()
    # Blender's v counts from the bottom row: row r (from the top) is at v = 1 - (r + 0.5) / height
    assert np.allclose(np.floor(uv[:, 0] * lay.width), x)
    assert np.allclose(np.floor((1 - uv[:, 1]) * lay.height), row)
    assert lay.frame_v_step == pytest.approx(lay.rows_per_frame / lay.height)


# --- encodings round trip ----------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", vat.ENCODINGS)
@pytest.mark.parametrize("engine", vat.ENGINES)
def test_positions_and_normals_round_trip_within_the_encodings_precision(encoding, engine):
    rest, offsets, normals = animated()
    frames = list(range(1, 7))
    enc = vat.encode_bake("tree", rest, offsets, normals, frames, vat.VatSettings(encoding=encoding, engine=engine))
    back = vat.decode_positions(enc.files, enc.meta, rest)
    truth = rest[None] + offsets
    err = np.abs(back - truth).max()
    if encoding == "EXR32":
        bounds = np.ptp(truth.reshape(-1, 3), axis=0).max()
        assert err <= 1e-5 * bounds
    elif encoding == "PNG16":
        rm = enc.meta["textures"]["position"]["remap"]
        span = (np.array(rm["max"]) - np.array(rm["min"])).max()
        scale = vat.engine_matrix(engine)[1]
        assert err <= span / 65535 / scale + 1e-7
    else:
        assert err <= np.abs(offsets).max() * 2 ** -10
    angles = vat.angle_degrees(vat.decode_normals(enc.files, enc.meta), normals)
    assert angles.max() < (1.0 if encoding != "EXR16" else 1.0)
    meta = json.loads(json.dumps(enc.meta))  # JSON-able
    assert meta["frames"] == 6 and meta["vertex_count"] == 50 and meta["coordinate_system"]["engine"] == engine


@pytest.mark.parametrize("encoding", ["EXR32", "PNG16"])
def test_packed_normals_round_trip(encoding):
    rest, offsets, normals = animated(n=400)
    enc = vat.encode_bake("a", rest, offsets, normals, list(range(6)),
                          vat.VatSettings(encoding=encoding, normals="PACKED"))
    assert set(enc.files) == {"a_vat_pos" + vat.file_extension(encoding), "a_vat.json"} - {"a_vat.json"}
    limit = 0.15 if encoding == "EXR32" else 1.0
    assert vat.angle_degrees(vat.decode_normals(enc.files, enc.meta), normals).max() < limit
    back = vat.decode_positions(enc.files, enc.meta, rest)
    assert np.abs(back - (rest[None] + offsets)).max() < 1e-4


def test_octahedral_map_covers_every_direction():
    rng = np.random.default_rng(3)
    n = rng.normal(size=(5000, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    n[:6] = [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]]
    assert np.allclose(vat.octahedral_decode(vat.octahedral_encode(n)), n, atol=1e-12)
    assert vat.angle_degrees(vat.unpack_normals(vat.pack_normals(n, 12), 12), n).max() < 0.1


def test_engine_axes_are_the_bends_and_the_player_can_undo_them():
    v = np.array([[1.0, 2.0, 3.0]])
    for engine in bend_engines.ENGINES:
        assert np.allclose(vat.to_engine(v, engine, 0.5), bend_engines.to_engine(v, engine, 0.5))
        back = vat.to_engine(v, engine, 0.5) @ vat.from_engine_axes(engine, 0.5).T
        assert np.allclose(back, v)
    assert np.allclose(vat.to_engine(v, "UNREAL"), [[100, -200, 300]])
    assert np.allclose(vat.to_engine(v, "UNREAL", normal=True), [[1, -2, 3]])


def test_half_floats_refuse_values_they_cannot_hold():
    with pytest.raises(vat.VatError, match="EXR32"):
        vat.encode_texture(np.full((2, 2, 3), 70000.0), "EXR16")
    rest = np.zeros((4, 3))
    with pytest.raises(vat.VatError, match="choose EXR32"):  # Unreal's centimetres: 800 m is 80,000 cm
        vat.encode_bake("far", rest, np.full((2, 4, 3), 800.0), None, [1, 2],
                        vat.VatSettings(encoding="EXR16", engine="UNREAL", normals="NONE"))
    with pytest.raises(vat.VatError, match="Packed normals need EXR32 or PNG16"):
        vat.VatSettings(encoding="EXR16", normals="PACKED").validate()


def test_extra_attributes_get_their_own_texture():
    rest, offsets, normals = animated(n=20, frames=3)
    colour = np.random.default_rng(1).uniform(0, 1, (3, 20, 4))
    enc = vat.encode_bake("t", rest, offsets, None, [1, 2, 3], vat.VatSettings(encoding="PNG16", normals="NONE"),
                          extras={"EnvFX_Wind": colour})
    tex = enc.meta["textures"]["EnvFX_Wind"]
    assert tex["file"] == "t_vat_EnvFX_Wind.png"
    lay = enc.layout
    rm = (np.array(tex["remap"]["min"]), np.array(tex["remap"]["max"]))
    got = vat.unpack_frames(vat.decode_texture(enc.files[tex["file"]], "PNG16", rm), lay)
    assert np.abs(got - colour).max() <= 1.0 / 65535
    assert enc.meta["normals"] == "NONE" and "normal" not in enc.meta["textures"]


def test_extra_attributes_never_take_another_texture_s_file_or_key():
    names = vat.output_names("A", "EXR32", "TEXTURE", ["pos", "nrm", "wind a", "wind_a", "Wind_A", "EnvFX_Wind"])
    assert names["position"] == "A_vat_pos.exr" and names["normal"] == "A_vat_nrm.exr"
    assert [names[f"attr:{a}"] for a in ("pos", "nrm", "wind a", "wind_a", "Wind_A", "EnvFX_Wind")] == [
        "A_vat_pos_2.exr", "A_vat_nrm_2.exr", "A_vat_wind_a.exr", "A_vat_wind_a_2.exr", "A_vat_Wind_A_3.exr",
        "A_vat_EnvFX_Wind.exr"]
    assert len({n.lower() for n in names.values()}) == len(names)
    # baked: each attribute in its own file, the offsets in theirs
    rest, offsets, normals = animated(n=20, frames=3)
    extras = {"pos": np.full((3, 20, 1), 7.0), "wind a": np.full((3, 20, 1), 1.0), "wind_a": np.full((3, 20, 1), 2.0)}
    enc = vat.encode_bake("A", rest, offsets, normals, [1, 2, 3], vat.VatSettings(), extras=extras)
    tex = enc.meta["textures"]
    assert len({tex[k]["file"] for k in ("position", "normal", "pos", "wind a", "wind_a")}) == 5
    got = vat.unpack_frames(vat.decode_texture(enc.files[tex["position"]["file"]], "EXR32"), enc.layout)
    assert np.abs(got - offsets).max() < 1e-6
    for name in ("pos", "wind a", "wind_a"):
        values = vat.unpack_frames(vat.decode_texture(enc.files[tex[name]["file"]], "EXR32"), enc.layout)
        assert np.array_equal(values[..., :1], extras[name])
    # the JSON keys of the bake's own textures are refused, saying what to do
    for name in ("position", "normal"):
        with pytest.raises(vat.VatError, match=f"named '{name}'.*another name"):
            vat.encode_bake("A", rest, offsets, normals, [1, 2, 3], vat.VatSettings(),
                            extras={name: np.zeros((3, 20, 1))})


# --- checks ------------------------------------------------------------------------------------------------

def test_topology_change_names_the_first_frame():
    counts = [(8, 12, 6, 24)] * 3 + [(10, 15, 7, 28)] * 2
    msg = vat.topology_change(counts, [1, 2, 3, 4, 5])
    assert msg is not None
    assert "frame 4" in msg and "vertices 8 -> 10" in msg and "since frame 1" in msg
    assert vat.topology_change([(8, 12, 6, 24)] * 3, [1, 2, 3]) is None


def test_static_and_loop_checks():
    rest, offsets, normals = animated()
    assert not vat.is_static(offsets)
    assert vat.is_static(np.zeros((4, 5, 3)))
    assert vat.loop_gap(rest, rest) == 0.0


@pytest.mark.parametrize("name, stem", [("Tree", "Tree"), ("my tree/leaf:01", "my_tree_leaf_01"),
                                        ('a*b?c"d<e>f|g\\h', "a_b_c_d_e_f_g_h"), ("CON", "CON_"),
                                        ("..", "mesh"), ("Baum ä", "Baum_ä"), ("木", "木")])
def test_file_names_are_sanitised(name, stem):
    assert vat.file_stem(name) == stem


def test_stems_are_unique_ignoring_case():
    assert vat.unique_stems(["Tree", "tree", "a/b", "a:b"]) == ["Tree", "tree_2", "a_b", "a_b_2"]


def test_stems_fit_file_systems_in_bytes_and_pass_over_another_object_s_bake():
    """Linux and macOS take 255 bytes a file name: a stem is cut at 100 bytes (whole characters), so a file of
    two stems fits; a stem an earlier bake of another object holds (``owner``) is passed over."""
    stem = vat.file_stem("木" * 200)
    assert stem == "木" * 33 and len(stem.encode()) == 99
    names = vat.output_names(stem, "PNG16", "TEXTURE", ["葉" * 200])
    assert max(len(n.encode()) for n in names.values()) <= 255
    owners = {"Tree_1": "Tree:1", "Rock": "Rock"}
    assert vat.unique_stems(["Tree_1", "Rock", "Tree:1"], owners.get) == ["Tree_1_2", "Rock", "Tree_1"]


@pytest.mark.parametrize("half", [False, True])
def test_the_one_pass_exr_writer_writes_the_same_file(half):
    from core import exr

    img = np.random.default_rng(2).normal(size=(37, 11, 4)).astype(np.float32)
    fast = exr.encode_exr_array(img, "RGBA", half=half)
    assert bytes(fast) == exr.encode_exr(img, "RGBA", exr.NO_COMPRESSION, half=half)


@pytest.mark.parametrize("half", [False, True])
def test_the_streamed_exr_is_the_same_file_and_refuses_missing_scanlines(half):
    from core import exr

    img = np.random.default_rng(2).normal(size=(12, 11, 3)).astype(np.float32)
    fh = io.BytesIO()
    writer = exr.RowWriter(fh, 12, 11, "RGB", half=half)
    for a in range(0, 12, 4):  # three blocks of four scanlines through one reused buffer
        rows = writer.rows(4)
        for k in range(3):
            rows[:, writer.planes[k], :] = img[a:a + 4, :, k]
        writer.write()
    writer.close()
    assert fh.getvalue() == exr.encode_exr(img, "RGB", exr.NO_COMPRESSION, half=half)
    short = exr.RowWriter(io.BytesIO(), 12, 11, "RGB", half=half)
    short.rows(4)
    short.write()
    with pytest.raises(ValueError, match="4 of the EXR's 12 scanlines"):
        short.close()


def test_the_streamed_png16_decodes_to_its_texels_with_valid_checksums():
    import zlib

    from core import png

    texels = np.random.default_rng(3).integers(0, 65536, size=(9, 13, 4)).astype(np.uint16)
    fh = io.BytesIO()
    writer = png.StoredPng16Writer(fh, 9, 13, 4)
    for a, b in ((0, 4), (4, 8), (8, 9)):  # the last block shorter
        writer.rows(b - a)[:] = texels[a:b]
        writer.write()
    writer.close()
    data = fh.getvalue()
    np.testing.assert_array_equal(png.decode_png(data), texels)
    pos = 8
    while pos < len(data):  # every chunk's CRC (decode_png does not check them)
        size = int.from_bytes(data[pos:pos + 4], "big")
        assert zlib.crc32(data[pos + 4:pos + 8 + size]) == int.from_bytes(data[pos + 8 + size:pos + 12 + size], "big")
        pos += 12 + size
    with pytest.raises(ValueError, match="does not fit one stored block"):
        png.StoredPng16Writer(io.BytesIO(), 2, 9000, 4)


def _stored_in_three_blocks(texels) -> bytes:
    """The stored PNG of (11, 17, 3) uint16 ``texels`` written in blocks of 4, 6 and 1 rows from both slots."""
    from core import png

    fh = io.BytesIO()
    writer = png.StoredPng16Writer(fh, 11, 17, 3)
    for slot, (a, b) in enumerate(((0, 4), (4, 10), (10, 11))):
        writer.rows(b - a, slot % 2)[:] = texels[a:b]
        writer.write(slot % 2)
    writer.close()
    return fh.getvalue()


def test_the_streamed_png16_checksums_rows_by_address_as_zlib_does_over_them(monkeypatch):
    """With a fast Adler-32 (png.fast_adler32: libdeflate's, from Blender's OpenEXR library) the writer hands it
    each row's address after its stored block's header: the file is byte for byte the one zlib's checksum
    writes. Here the stand-in reads the bytes at the addresses given and sums them with zlib, and blocks of
    different sizes come from both slots."""
    import ctypes
    import zlib

    from core import png

    texels = np.random.default_rng(8).integers(0, 65536, size=(11, 17, 3)).astype(np.uint16)
    calls = []

    def by_address(adler, address, length):
        calls.append(length)
        return zlib.adler32(ctypes.string_at(address, length), adler)

    def written(fast):
        monkeypatch.setattr(png, "_ADLER32", [fast])
        return _stored_in_three_blocks(texels)

    assert written(by_address) == written(None)
    assert calls == [1 + 17 * 3 * 2] * 11  # a call per row: its filter byte and texels
    np.testing.assert_array_equal(png.decode_png(written(None)), texels)


def test_a_fast_adler32_that_disagrees_with_zlib_is_not_used(monkeypatch):
    """png.fast_adler32 trusts a library's function only when it agrees with zlib on lengths around its block
    sizes; ENVFX_ZLIB_ADLER32=1 turns the fast one off."""
    import ctypes
    import zlib

    from core import png

    def right(adler, address, length):
        return zlib.adler32(ctypes.string_at(address, length), adler)

    assert png._agrees_with_zlib(right)
    assert not png._agrees_with_zlib(lambda adler, address, length: right(adler, address, length) ^ 1)
    assert not png._agrees_with_zlib(lambda adler, address, length: right(adler, address, min(length, 5552)))
    assert not png._agrees_with_zlib(right, "crc32")
    monkeypatch.setattr(png, "_ADLER32", [])
    monkeypatch.setenv("ENVFX_ZLIB_ADLER32", "1")
    assert png.fast_adler32() is None


def test_a_fast_crc32_that_disagrees_with_zlib_is_not_used_and_the_file_is_zlibs(monkeypatch):
    """png.fast_crc32 (libdeflate's, the system's on Linux) is trusted only when it agrees with zlib's CRC-32 on
    lengths around its folding sizes, at odd addresses too; the stored PNG writer hands it each block of rows by
    address, and its file is byte for byte the one zlib's CRC writes; ENVFX_ZLIB_CRC32=1 turns it off."""
    import ctypes
    import zlib

    from core import png

    def right(crc, address, length):
        return zlib.crc32(ctypes.string_at(address, length), crc)

    assert png._agrees_with_zlib(right, "crc32")
    assert not png._agrees_with_zlib(lambda crc, address, length: right(crc, address, length) ^ 1, "crc32")
    assert not png._agrees_with_zlib(lambda crc, address, length: right(crc, address, min(length, 8192)), "crc32")
    assert not png._agrees_with_zlib(right, "adler32")
    texels = np.random.default_rng(8).integers(0, 65536, size=(11, 17, 3)).astype(np.uint16)

    def written(crc):
        monkeypatch.setattr(png, "_CRC32", [crc])
        return _stored_in_three_blocks(texels)

    assert written(right) == written(None)
    np.testing.assert_array_equal(png.decode_png(written(right)), texels)
    monkeypatch.setattr(png, "_CRC32", [])
    found = png.fast_crc32()
    if found is not None:  # (the system's libdeflate: on this project's machines)
        assert png._agrees_with_zlib(found, "crc32") and written(found) == written(None)
    monkeypatch.setattr(png, "_CRC32", [])
    monkeypatch.setenv("ENVFX_ZLIB_CRC32", "1")
    assert png.fast_crc32() is None


def test_the_writers_two_slots_write_the_rows_of_the_slot_named():
    """Rows filled into slot 1 while slot 0's are written (the PNG16 offsets' finish fills the next block on a
    helper thread) come out in the order written, whatever the slots' sizes."""
    from core import png

    texels = np.random.default_rng(4).integers(0, 65536, size=(9, 13, 3)).astype(np.uint16)
    fh = io.BytesIO()
    writer = png.StoredPng16Writer(fh, 9, 13, 3)
    writer.rows(4, 0)[:] = texels[0:4]
    writer.rows(4, 1)[:] = texels[4:8]
    writer.write(0)
    writer.rows(1, 0)[:] = texels[8:9]  # (the last block shorter: slot 0 made again)
    writer.write(1)
    writer.write(0)
    writer.close()
    np.testing.assert_array_equal(png.decode_png(fh.getvalue()), texels)


@pytest.mark.parametrize("mapped", [False, True])
def test_png16_offsets_of_many_blocks_round_trip_within_their_precision(tmp_path, monkeypatch, mapped):
    """A PNG16 position texture taller than two blocks of rows (about 2^18 texels a block; the last block
    shorter), finished a block ahead on a helper thread, decodes to the offsets within the remap's step and equals
    the in-memory encoding byte for byte; also with its offsets waiting in a memory map (``mapped``: as a large
    bake's do, vat.plain_pages)."""
    if mapped:
        monkeypatch.setattr(vat, "PLAIN_PAGES_FROM", 0)
    n, frames = 2 * 8192 + 100, 40
    rest, offsets, normals = animated(n=n, frames=frames, seed=5)
    settings = vat.VatSettings(encoding="PNG16", engine="GODOT")
    enc = vat.VatEncoder("a", rest, list(range(frames)), settings, folder=str(tmp_path))
    step = (1 << 18) // enc.layout.width
    assert enc.layout.height > 2 * step and enc.layout.height % step
    for f in range(frames):
        enc.add(f, enc.rest + offsets[f], normals[f])
    assert isinstance(enc.pos.planes_f.base, np.ndarray) == mapped  # (np.frombuffer's array of the map)
    streamed = enc.finish()
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    back = vat.decode_positions(files, streamed.meta, rest)
    assert np.abs(back - (rest + offsets)).max() <= streamed.meta["precision"] + 1e-6
    memory = vat.encode_bake("a", rest, offsets, normals, list(range(frames)), settings)
    assert memory.files[streamed.meta["textures"]["position"]["file"]] == \
        files[streamed.meta["textures"]["position"]["file"]]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_POPULATE_WRITE is Linux's")
def test_populate_makes_a_plain_pages_region_present_before_it_is_written(monkeypatch):
    """vat.populate asks for a region's pages in one call: writing them afterwards takes (almost) no page faults,
    where writing fresh pages takes one each; the values written are kept, and arrays that are not memory maps
    are left alone."""
    import resource

    monkeypatch.setattr(vat, "PLAIN_PAGES_FROM", 1 << 10)
    pages = 2048  # 8 MB of 4 KB pages per half
    big = vat.plain_pages((2, pages * 1024), np.float32)

    def faults_writing(region):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        region[::1024] = 1.0  # a value in every page
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    vat.populate(big[1, 3:])  # (from inside its first page: the page it starts in included)
    assert vat._POPULATE[0], "the kernel refused MADV_POPULATE_WRITE (older than Linux 5.14?)"
    assert faults_writing(big[1]) < pages // 20
    assert faults_writing(big[0]) > pages // 2  # not populated: a fault per page
    assert big[:, ::1024].sum() == 2 * pages and big[1, 1:1024].sum() == 0.0
    plain = np.zeros(10, np.float32)
    vat.populate(plain[2:])  # (not a map: nothing to do)
    assert vat._POPULATE[0] and not plain.any()


def test_plain_pages_are_writable_arrays_of_the_shape_asked_for(monkeypatch):
    """Large buffers come from an anonymous private memory map (4 KB pages), small ones from np.empty; both are
    writable arrays of the shape and type asked for, and the map goes with its array."""
    import gc
    import mmap
    import weakref

    small = vat.plain_pages((3, 4), np.float32)
    assert small.shape == (3, 4) and small.dtype == np.float32 and small.base is None
    monkeypatch.setattr(vat, "PLAIN_PAGES_FROM", 1 << 10)
    big = vat.plain_pages((3, 100, 7), np.float32)
    assert big.shape == (3, 100, 7) and big.dtype == np.float32 and big.flags.writeable and big.flags.c_contiguous
    big[:] = np.arange(2100, dtype=np.float32).reshape(3, 100, 7)
    assert big.sum() == np.arange(2100).sum()
    holder: object = big.base
    while not isinstance(holder, mmap.mmap):  # ndarray -> memoryview -> the map
        assert isinstance(holder, (np.ndarray, memoryview)), type(holder)
        holder = holder.obj if isinstance(holder, memoryview) else holder.base
    gone = weakref.finalize(holder, lambda: None)
    del big, holder
    gc.collect()
    assert not gone.alive


@pytest.mark.parametrize("kind", ["exr", "png"])
def test_a_streamed_write_before_any_rows_says_so_and_writes_nothing(kind):
    """(Before, a TypeError about None's length.)"""
    from core import exr, png

    fh = io.BytesIO()
    writer = exr.RowWriter(fh, 4, 5, "RGB") if kind == "exr" else png.StoredPng16Writer(fh, 4, 5, 3)
    header = fh.getvalue()
    with pytest.raises(ValueError, match=r"write\(\) before rows\(\)"):
        writer.write()
    assert fh.getvalue() == header and writer.y == 0


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("encoding", ["EXR32", "EXR16", "PNG16"])
def test_an_encoder_with_a_folder_streams_the_same_files_as_in_memory(tmp_path, encoding, level):
    """Uncompressed textures are streamed into the folder; compressed ones (encoded at the end) are returned."""
    rest, offsets, normals = animated(n=70, frames=5)
    settings = vat.VatSettings(encoding=encoding, engine="UNREAL", level=level)
    memory = vat.encode_bake("a", rest, offsets, normals, list(range(1, 6)), settings)
    enc = vat.VatEncoder("a", rest, list(range(1, 6)), settings, folder=str(tmp_path))
    for f in range(5):
        enc.add(f, enc.rest + offsets[f], normals[f])  # (as encode_bake adds them: float32)
    streamed = enc.finish()
    assert streamed.meta == memory.meta
    if level:
        assert streamed.files == memory.files and not list(tmp_path.iterdir())
        back = vat.decode_positions(streamed.files, streamed.meta, rest)
        assert np.abs(back - (rest + offsets)).max() <= streamed.meta["precision"] / 100 + 1e-6  # (Unreal's cm)
    else:
        assert streamed.files == {}
        for name, data in memory.files.items():
            assert (tmp_path / name).read_bytes() == bytes(data)


def test_streamed_half_floats_are_numpys_cast_of_the_offsets_in_engine_units(tmp_path):
    """EXR16 rows are converted by exr.to_half (numpy's rounding, faster), the engine's axes and centimetres
    applied on the way: the file holds exactly what numpy's cast of the scaled offsets gives."""
    rest, offsets, normals = animated(n=70, frames=5)
    settings = vat.VatSettings(encoding="EXR16", engine="UNREAL", max_size=32)  # 3 rows a frame, 2 texels unused
    enc = vat.VatEncoder("a", rest, list(range(1, 6)), settings, folder=str(tmp_path))
    for f in range(5):
        enc.add(f, enc.rest + offsets[f], normals[f])
    enc.finish()
    moved = (enc.rest[None] + offsets).astype(np.float32) - enc.rest[None]  # the offsets as the encoder sees them
    engine = np.stack([vat.to_engine(m, "UNREAL") for m in moved]).astype(np.float32)
    want = vat.pack_frames(engine, enc.layout).astype(np.float16)
    got = vat.decode_texture((tmp_path / "a_vat_pos.exr").read_bytes(), "EXR16")
    assert np.array_equal(got.astype(np.float16).view(np.uint16), want.view(np.uint16))
    nrm = vat.decode_texture((tmp_path / "a_vat_nrm.exr").read_bytes(), "EXR16")
    turned = np.stack([vat.to_engine(n, "UNREAL", normal=True) for n in normals.astype(np.float32)])
    assert np.array_equal(nrm.astype(np.float16), vat.pack_frames(turned, enc.layout).astype(np.float16))


def test_png16_unused_texels_are_zero_offsets_whatever_memory_held(tmp_path, monkeypatch):
    """The PNG16 offsets wait in an uninitialised buffer (vat.plain_pages: np.empty when small): the texels no
    vertex uses (the end of each frame's last row) must still be written as offset 0, as pack_frames and the
    compressed files have them, whatever the memory held."""
    real_empty = np.empty

    def dirty_empty(shape, dtype=float, *args, **kwargs):
        out = real_empty(shape, dtype, *args, **kwargs)
        out.fill(7)
        return out

    monkeypatch.setattr(np, "empty", dirty_empty)
    rest, offsets, normals = animated(n=70, frames=5)
    files = {}
    for level in (0, 1):
        settings = vat.VatSettings(encoding="PNG16", max_size=32, level=level)  # 3 rows a frame, 22 texels in the last
        folder = tmp_path / str(level)
        folder.mkdir()
        enc = vat.VatEncoder("a", rest, list(range(1, 6)), settings, folder=str(folder))
        for f in range(5):
            enc.add(f, enc.rest + offsets[f], normals[f])
        done = enc.finish()
        files[level] = done.files.get("a_vat_pos.png") or (folder / "a_vat_pos.png").read_bytes()
    assert enc.layout.rows_per_frame == 3 and enc.layout.width == 24
    assert np.array_equal(png.decode_png(files[0]), png.decode_png(files[1]))  # streamed = compressed texels
    rm = done.meta["textures"]["position"]["remap"]
    image = vat.decode_texture(files[0], "PNG16", (rm["min"], rm["max"]))
    assert np.abs(image[2::3, 22:]).max() <= done.meta["precision"]


def test_png16_without_remap_says_what_is_missing():
    """PNG16 stores values through a (min, max) remap: asked without one, encode_texture, decode_texture and
    precision say so (they raised "'NoneType' object is not subscriptable"; found by the type checker)."""
    image = np.zeros((2, 2, 3), np.float32)
    for call in (lambda: vat.encode_texture(image, "PNG16"), lambda: vat.decode_texture(b"", "PNG16"),
                 lambda: vat.precision("PNG16")):
        with pytest.raises(ValueError, match="PNG16 needs remap"):
            call()


@pytest.mark.parametrize("encoding", ["EXR32", "EXR16", "PNG16"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_numbers_that_are_not_numbers_are_refused_naming_vertex_frame_and_what_to_do(tmp_path, encoding, bad):
    """NaN or infinity in a frame's positions, normals or attributes, or in the rest pose, would reach the remap
    range, the bounds and the JSON (NaN is no JSON: engines' parsers refuse the file) and every texel of a PNG16's
    channel: refused, naming the first vertex, how many more, the frame and what to do; nothing is left in the
    folder but what the caller removes (the encoder closes its files). Normals are read where they are used (a
    range: EXR16, PNG16) or could be wrong (positions far enough out to overflow Blender's normals)."""
    rest, offsets, normals = animated(n=30, frames=4)
    kind = r"not a number \(NaN\)" if bad != bad else "infinite"
    frames = [10, 11, 12, 13]

    def bake(rest=rest, offsets=offsets, normals=normals, extras=None):
        enc = vat.VatEncoder("t", rest, frames, vat.VatSettings(encoding=encoding),
                             extras=None if extras is None else {"w": 2}, folder=str(tmp_path))
        try:
            for f in range(4):
                enc.add(f, rest + offsets[f], normals[f], None if extras is None else {"w": extras[f]})
            return enc.finish()
        finally:
            enc.close()

    moved = offsets.copy()
    moved[2, 7, 1] = moved[2, 9, 0] = bad
    with pytest.raises(vat.VatError, match=rf"position of vertex 7 \(and 1 more vertex\) is {kind} at frame 12: "
                                           r"fix the mesh or what moves it"):
        bake(offsets=moved)
    turned = normals.copy()
    turned[3, 4] = bad
    far = offsets + np.float32(2 * vat.SANE_COORDINATE)  # (only where positions are this far can Blender's overflow)
    for moved in ((far,) if encoding == "EXR32" else (offsets, far)):
        with pytest.raises(vat.VatError, match=rf"normal of vertex 4 is {kind} at frame 13: .*Normals None"):
            bake(offsets=moved, normals=turned)
    if encoding == "EXR32":  # near the origin EXR32 writes a caller's normals as they are (it needs no range)
        bake(normals=turned)
    attr = np.zeros((4, 30, 2), np.float32)
    attr[1, 29, 1] = bad
    with pytest.raises(vat.VatError, match=rf"attribute 'w' of vertex 29 is {kind} at frame 11: .*Extra Attributes"):
        bake(extras=attr)
    broken = rest.copy()
    broken[0, 2] = bad
    with pytest.raises(vat.VatError, match=rf"rest position of vertex 0 is {kind}: .*fix the mesh"):
        bake(rest=broken)
    meta = bake(extras=np.zeros_like(attr)).meta  # the same arrays without the bad number bake, into real JSON
    json.loads(json.dumps(meta, allow_nan=False))


@pytest.mark.parametrize("engine", ["UNREAL", "UNITY", "BLENDER"])
def test_png16_texels_are_quantised_unclamped_only_where_every_value_is_in_range(tmp_path, engine):
    """PNG16 offsets are quantised without a clamp: their remap is the float32 bounds of the values as written
    (scaled to the engine's units in float32), so none falls outside it. Offsets far from the rest pose that move
    little, in Unreal's centimetres (factors 100 and -100), are where a float64 bound would miss the float32
    values by a rounding, which the remap's tiny span turns into thousands of texels: every texel decodes within
    half a step, each channel spans 0 to 65535, and the bytes equal the clamped encoding's. Normals that are not
    unit length (a caller's own) are clamped: their texels stay at the ends instead of wrapping."""
    rng = np.random.default_rng(7)
    n, frames = 500, 5
    rest = np.zeros((n, 3), np.float32)
    offsets = (np.float32(1000.0) + rng.uniform(0.0, 1e-3, (frames, n, 3))).astype(np.float32)
    normals = rng.normal(size=(frames, n, 3)).astype(np.float32) * 3.0  # |n| up to about 10
    settings = vat.VatSettings(encoding="PNG16", engine=engine)
    enc = vat.VatEncoder("far", rest, list(range(frames)), settings, folder=str(tmp_path))
    for f in range(frames):
        enc.add(f, rest + offsets[f], normals[f])
    done = enc.finish()
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    meta = done.meta
    texels = png.decode_png(files[meta["textures"]["position"]["file"]])
    lay = done.layout
    used = vat.unpack_frames(texels.astype(np.float64), lay)  # (frames, n, 3): the texels of the vertices
    assert (used.min(axis=(0, 1)) == 0).all() and (used.max(axis=(0, 1)) == 65535).all()
    back = vat.decode_positions(files, meta, rest)
    ulp = float(np.spacing(np.float32(1000.001)))  # (the offsets are float32 numbers near 1000, and so the decode)
    step = meta["precision"] / meta["coordinate_system"]["units_per_blender_unit"]
    assert np.abs(back - (rest + offsets)).max() <= step * 0.5 + 2 * ulp
    clamped = vat.encode_bake("far", rest, offsets, normals, list(range(frames)), settings)  # (the image path)
    assert clamped.files[meta["textures"]["position"]["file"]] == files[meta["textures"]["position"]["file"]]
    nrm = png.decode_png(files[meta["textures"]["normal"]["file"]])
    turned = vat.to_engine(normals.reshape(-1, 3), engine, normal=True).reshape(frames, n, 3)
    want = np.clip(np.floor((turned + 1.0) * 32767.5 + 0.5), 0, 65535)
    assert np.abs(vat.unpack_frames(nrm.astype(np.float64), lay) - want).max() <= 1


@pytest.mark.parametrize("engine", ["BLENDER", "GODOT", "UNREAL"])
def test_png16_unit_normals_a_rounding_beyond_one_keep_their_end_texels(tmp_path, engine):
    """Normals whose length is a few roundings over 1 (as a mesh's come) are quantised without the clamp (within
    an eighth of a texel of the -1..1 range): their texels are 0 and 65535 at the ends, none wrapped round. The
    engine's turned axes are folded into the quantiser: every texel is the float32 quantisation of the turned
    normal, as numpy computes it."""
    rest, offsets, _ = animated(n=40, frames=3)
    over = np.float32(1.0) + np.float32(4) * np.finfo(np.float32).eps
    normals = np.random.default_rng(5).normal(size=(3, 40, 3)).astype(np.float32)
    normals /= np.linalg.norm(normals, axis=2, keepdims=True)
    normals[:, ::5] = [[0.0, 0.0, over]]
    normals[:, 1::5] = [[0.0, 0.0, -over]]
    normals[:, 2::5] = [[0.0, over, 0.0]]
    normals[:, 3::5] = [[-over, 0.0, 0.0]]
    settings = vat.VatSettings(encoding="PNG16", engine=engine)
    enc = vat.VatEncoder("n", rest, list(range(3)), settings, folder=str(tmp_path))
    assert enc.nrm is not None and enc.nrm._within_fixed([float(over)] * 3)  # (the unclamped path)
    for f in range(3):
        enc.add(f, enc.rest + offsets[f], normals[f])
    done = enc.finish()
    texels = vat.unpack_frames(png.decode_png((tmp_path / done.meta["textures"]["normal"]["file"]).read_bytes()),
                               enc.layout)
    turned = np.stack([vat.to_engine(n, engine, normal=True) for n in normals]).astype(np.float32)
    want = np.clip(np.rint((turned + np.float32(1.0)) * np.float32(32767.5)), 0, 65535)
    assert np.array_equal(texels, want) and {0, 65535} <= set(np.unique(texels).tolist())


@pytest.mark.parametrize("normals", ["TEXTURE", "PACKED"])
@pytest.mark.parametrize("engine", ["GODOT", "UNITY", "UNREAL", "BLENDER"])
def test_a_streamed_png16_equals_the_compressed_bake_in_every_engine(tmp_path, engine, normals):
    """A streamed PNG16 (offsets kept as float planes until the range is known, quantised into the file's rows at
    the end; normals quantised as they come, the engine's turns folded into the quantiser) has the texels and the
    JSON (its remap's bounds to the sign of a zero) of the compressed bake, which fills a whole float image and
    quantises it in one go. An axis that never moves (Blender's Y: Godot's -Z and Unreal's -Y) and a vertex at
    rest in all frames are in it."""
    rest, offsets, nrm = animated(n=70, frames=5, seed=2)
    offsets[..., 1] = 0.0
    offsets[:, 3] = 0.0
    done, texels = {}, {}
    for level in (0, 1):
        folder = tmp_path / str(level)
        folder.mkdir()
        settings = vat.VatSettings(encoding="PNG16", engine=engine, normals=normals, max_size=32, level=level)
        enc = vat.VatEncoder("a", rest, list(range(1, 6)), settings, folder=str(folder))
        assert (enc.pos.mode, enc.pos.fixed) == (("png", None) if level == 0 else ("image", None))
        for f in range(5):
            enc.add(f, enc.rest + offsets[f], nrm[f])
        done[level] = enc.finish()
        name = done[level].meta["textures"]["position"]["file"]
        texels[level] = png.decode_png(done[level].files.get(name) or (folder / name).read_bytes())
    assert json.dumps(done[0].meta, sort_keys=True) == json.dumps(done[1].meta, sort_keys=True)
    assert np.array_equal(texels[0], texels[1])
    rm = done[0].meta["textures"]["position"]["remap"]
    back = vat.decode_positions({p.name: p.read_bytes() for p in (tmp_path / "0").iterdir()}, done[0].meta, rest)
    assert np.abs(back - (rest + offsets)).max() <= done[0].meta["precision"] / (100 if engine == "UNREAL" else 1) \
        + 1e-6 and len(rm["min"]) >= 3


@pytest.mark.parametrize("shift", [0.0, 0.7, -0.7])
def test_png16_unused_texels_stay_in_range_when_no_offset_is_0(tmp_path, shift):
    """The texels no vertex uses hold offset 0; offsets that all lie above 0 (or below) have a remap without 0, so
    those texels are quantised as the clamp would quantise them (texel 0 or 65535), not cast from a value outside
    the range: the streamed file equals the compressed one byte for texel, with no warning of a bad cast."""
    import warnings

    rest, offsets, normals = animated(n=70, frames=5)
    offsets = (offsets + np.float32(shift)).astype(np.float32)
    got = {}
    for level in (0, 1):
        settings = vat.VatSettings(encoding="PNG16", max_size=32, level=level)  # 3 rows a frame, 22 texels in the last
        folder = tmp_path / str(level)
        folder.mkdir()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (numpy warns of a cast from outside uint16's range)
            done = vat.encode_bake("a", rest, offsets, normals, list(range(1, 6)), settings) if level else None
            if not level:
                enc = vat.VatEncoder("a", rest, list(range(1, 6)), settings, folder=str(folder))
                for f in range(5):
                    enc.add(f, enc.rest + offsets[f], normals[f])
                done = enc.finish()
        assert done is not None
        got[level] = done.files.get("a_vat_pos.png") or (folder / "a_vat_pos.png").read_bytes()
    assert np.array_equal(png.decode_png(got[0]), png.decode_png(got[1]))
    texels = png.decode_png(got[0])
    expected = 0 if shift > 0 else (65535 if shift < 0 else None)
    if expected is not None:
        assert (texels[2::3, 22:] == expected).all()
