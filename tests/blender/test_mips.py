"""Mip chains in real Blender: image loading (8/16-bit, grey+alpha, palette, packed, generated), the operator,
the CLI, and every bad input of the issue (message + nothing written + file unchanged)."""

import glob
import importlib.util
import io
import json
import os
import re
import unicodedata

import bpy
import numpy as np
import pytest
from PIL import Image

from tests.blender import api

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("mips_dds_reader", os.path.join(ROOT, "tests", "core",
                                                                                "mips_dds_reader.py"))
assert _spec is not None and _spec.loader is not None
dds_reader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dds_reader)


@pytest.fixture
def core(envfx):
    return envfx.core.mips


@pytest.fixture
def ops(envfx):
    return envfx.operators.mips


def leaf(core, size=96, seed=2):
    return core.make_leaf_card(size, seed=seed)


def write_png(core, path, arr):
    with open(path, "wb") as fh:
        fh.write(core.encode_png(arr))
    return str(path)


def tol(entry):
    return max(0.01, 1.0 / (entry["width"] * entry["height"])) + 1e-9


def check_report(rep):
    for entry in rep["per_level"]:
        assert abs(entry["coverage"] - rep["target_coverage"]) <= tol(entry), entry


def blender_texels(path, width, height):
    """The (height, width, 4) 8-bit texels of level 0 of an image file as Blender's own loader reads it, top row
    first; the image is removed again."""
    loaded = bpy.data.images.load(str(path))
    try:
        assert tuple(loaded.size) == (width, height)
        px = np.empty(width * height * 4, np.float32)
        api.pixels(loaded).foreach_get(px)
    finally:
        bpy.data.images.remove(loaded)
    return np.round(px.reshape(height, width, 4)[::-1] * 255.0).astype(int)


def state():
    return sorted(im.name for im in bpy.data.images), sorted(o.name for o in bpy.data.objects)


def bake_scene_image(image, out):
    s = api.envfx(api.scene()).mips
    s.source = "ACTIVE"
    s.image = image
    s.output_dir = str(out)
    return api.ops.mips_bake()


def test_operator_bakes_the_active_image(core, tmp_path, capsys):
    src = leaf(core)
    path = write_png(core, tmp_path / "Leaf Card.png", src)
    image = bpy.data.images.load(path)
    out = tmp_path / "out"
    assert bake_scene_image(image, out) == {"FINISHED"}
    names = sorted(os.listdir(out))
    assert "Leaf_Card.dds" in names and "Leaf_Card_mips.json" in names and "Leaf_Card_compare.png" in names
    data = (out / "Leaf_Card.dds").read_bytes()
    with Image.open(io.BytesIO(data)) as im:
        np.testing.assert_array_equal(np.asarray(im), src)  # level 0 = the file's pixels, top row first
    levels = dds_reader.read_dds(data)["levels"]
    assert [lv.shape[:2] for lv in levels] == core.level_sizes(96, 96)
    for i, lv in enumerate(levels):
        with Image.open(out / f"Leaf_Card_mip{i:02d}.png") as im:
            np.testing.assert_array_equal(np.asarray(im), lv)
    rep = json.loads((out / "Leaf_Card_mips.json").read_text())
    check_report(rep)
    assert min(e["coverage_naive"] for e in rep["per_level"]) < 0.5 * rep["target_coverage"]
    # the report says how close the levels are (not the 1 x 1 level's all-or-nothing 0, which reads as a failure)
    said = re.search(r"Leaf_Card: coverage ([\d.]+), levels off by up to ([\d.]+) \(a plain chain: ([\d.]+)\)",
                     capsys.readouterr().out)
    assert said is not None
    assert float(said[1]) == pytest.approx(rep["target_coverage"], abs=1e-3)
    assert float(said[2]) <= 0.02 and float(said[3]) > 0.5 * rep["target_coverage"]
    # the same chain as the numpy entry point
    chain = core.build_chain(src)
    for a, b in zip(levels, chain.levels):
        np.testing.assert_array_equal(a, b)


def test_16bit_png_reads_straight_colour(core, ops, tmp_path):
    src = leaf(core, 64)
    src[..., 0] = np.arange(64, dtype=np.uint8)[None, :] * 4  # colour under partly transparent texels too
    path = write_png(core, tmp_path / "deep.png", src.astype(np.uint16) * 257)
    arr, srgb, warnings = ops.read_input(ops.inputs_from_paths([path])[0], "AUTO", core.MipSettings())
    assert srgb and any("16-bit" in w for w in warnings)
    back = core.to_u8(arr)
    assert np.abs(back.astype(int) - src).max() <= 1  # not premultiplied, not linear
    image = bpy.data.images.load(path)  # an image of the file, default alpha mode (premultiplied float)
    arr2, _, _ = ops.read_input(ops.input_from_image(image), "AUTO", core.MipSettings())
    assert np.abs(core.to_u8(arr2).astype(int) - src).max() <= 1


@pytest.mark.parametrize("kind", ["LA", "P"])
def test_grey_alpha_and_palette_pngs(core, ops, tmp_path, kind):
    src = leaf(core, 64)
    if kind == "LA":
        pil = Image.fromarray(np.stack([src[..., 1], src[..., 3]], axis=-1), "LA")
        want_alpha = src[..., 3]
    else:
        a = np.where(src[..., 3] >= 128, 255, 0).astype(np.uint8)
        rgb = np.where(a[..., None] > 0, src[..., :3], 0).astype(np.uint8)
        pil = Image.fromarray(rgb).quantize(colors=16)
        idx = np.asarray(pil)
        trans = int(idx[a == 0][0])
        pil.info["transparency"] = trans
        want_alpha = np.where(idx == trans, 0, 255)
    path = str(tmp_path / f"img_{kind}.png")
    pil.save(path, transparency=pil.info.get("transparency")) if kind == "P" else pil.save(path)
    with Image.open(path) as check:
        assert check.mode == kind
    arr, _, _ = ops.read_input(ops.inputs_from_paths([path])[0], "AUTO", core.MipSettings())
    assert arr.shape[2] == 4
    np.testing.assert_array_equal(arr[..., 3], want_alpha)
    out = tmp_path / "out"
    result = ops.bake_mips(ops.inputs_from_paths([path]), str(out))
    check_report(result.reports[f"img_{kind}"])


def test_image_without_alpha_says_so_and_still_bakes(core, ops, tmp_path):
    path = write_png(core, tmp_path / "rgb.png", leaf(core, 32)[..., :3])
    result = ops.bake_mips(ops.inputs_from_paths([path]), str(tmp_path / "out"))
    assert any("no alpha" in w for w in result.warnings)
    levels = dds_reader.read_dds((tmp_path / "out" / "rgb.dds").read_bytes())["levels"]
    assert len(levels) == 6 and all(np.all(lv[..., 3] == 255) for lv in levels)


def test_packed_and_generated_images(core, ops, tmp_path):
    src = leaf(core, 48)
    path = write_png(core, tmp_path / "packme.png", src)
    packed = bpy.data.images.load(path)
    packed.pack()
    os.remove(path)  # only the packed copy is left
    gen = bpy.data.images.new("Generated Leaf", 48, 48, alpha=True)
    api.pixels(gen).foreach_set((src[::-1].astype(np.float32) / 255.0).ravel())
    before = state()
    result = ops.bake_mips([ops.input_from_image(packed), ops.input_from_image(gen)], str(tmp_path / "out"))
    assert state() == before
    for stem in ("packme", "Generated_Leaf"):
        data = (tmp_path / "out" / f"{stem}.dds").read_bytes()
        with Image.open(io.BytesIO(data)) as im:
            assert np.abs(np.asarray(im).astype(int) - src).max() <= 1
        check_report(result.reports[stem])


def write_exr(core, path, src):
    """Save ``src`` (8-bit straight sRGB RGBA) as a 32-bit float OpenEXR the way Blender writes one: linear
    colour, premultiplied by alpha, bottom row first."""
    lin = core.srgb_to_linear(src[..., :3].astype(np.float32) / 255.0)
    a = src[..., 3:4].astype(np.float32) / 255.0
    px = np.concatenate([lin * a, a], axis=-1)[::-1]
    h, w = src.shape[:2]
    image = bpy.data.images.new("exr out", w, h, alpha=True, float_buffer=True)
    api.pixels(image).foreach_set(np.ascontiguousarray(px, np.float32).ravel())
    settings = api.scene().render.image_settings
    settings.file_format, settings.color_depth, settings.color_mode = "OPEN_EXR", "32", "RGBA"
    image.save_render(str(path))
    bpy.data.images.remove(image)
    with open(path, "rb") as fh:
        assert fh.read(4) == b"\x76\x2f\x31\x01"  # the OpenEXR magic number: a real EXR was written
    return str(path)


def test_exr_input_reads_straight_srgb_and_bakes(core, ops, tmp_path):
    src = leaf(core, 64)
    src[..., 0] = np.arange(64, dtype=np.uint8)[None, :] * 4  # colour under partly transparent texels too
    path = write_exr(core, tmp_path / "leaf.exr", src)
    arr, srgb, warnings = ops.read_input(ops.inputs_from_paths([path])[0], "AUTO", core.MipSettings())
    assert srgb and arr.shape == (64, 64, 4) and any("float" in w for w in warnings)
    back = core.to_u8(arr).astype(int)
    assert np.abs(back[..., 3] - src[..., 3]).max() <= 1
    seen = src[..., 3] >= 32  # unpremultiplying a faint texel cannot give back its colour exactly
    assert np.abs(back[..., :3] - src[..., :3].astype(int))[seen].max() <= 1  # straight sRGB, top row first
    before = state()
    result = ops.bake_mips(ops.inputs_from_paths([path]), str(tmp_path / "out"))
    assert state() == before  # the temporary datablock is gone again
    check_report(result.reports["leaf"])
    levels = dds_reader.read_dds((tmp_path / "out" / "leaf.dds").read_bytes())["levels"]
    assert [lv.shape[:2] for lv in levels] == core.level_sizes(64, 64)


def test_srgb_checker_in_blender_mips_to_the_linear_average(core, ops, tmp_path):
    img = np.full((8, 8, 4), 255, np.uint8)
    yy, xx = np.mgrid[0:8, 0:8]
    img[..., :3] = np.where(((yy + xx) % 2 == 0)[..., None], 0, 255)
    path = write_png(core, tmp_path / "checker.png", img)
    ops.bake_mips(ops.inputs_from_paths([path]), str(tmp_path / "out"), formats="dds", compare=False)
    levels = dds_reader.read_dds((tmp_path / "out" / "checker.dds").read_bytes())["levels"]
    assert np.all(np.abs(levels[1][..., :3].astype(int) - 188) <= 1)
    image = bpy.data.images.load(path)
    api.set_colorspace(image, "Non-Color")  # data: filtered as plain numbers
    ops.bake_mips([ops.input_from_image(image)], str(tmp_path / "out2"), formats="dds", compare=False)
    levels = dds_reader.read_dds((tmp_path / "out2" / "checker.dds").read_bytes())["levels"]
    assert np.all(np.abs(levels[1][..., :3].astype(int) - 128) <= 1)


def test_selected_objects_material_images_and_folder_source(core, tmp_path):
    paths = [write_png(core, tmp_path / f"leaf{i}.png", leaf(core, 32, seed=i)) for i in range(3)]
    mat = bpy.data.materials.new("Leaves")
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = True
    tex = api.of(bpy.types.ShaderNodeTexImage, api.node_tree(mat).nodes.new("ShaderNodeTexImage"))
    tex.image = bpy.data.images.load(paths[0])
    group = api.new_tree("Inner", bpy.types.ShaderNodeTree)
    gtex = api.of(bpy.types.ShaderNodeTexImage, group.nodes.new("ShaderNodeTexImage"))
    gtex.image = bpy.data.images.load(paths[1])
    gnode = api.of(bpy.types.ShaderNodeGroup, api.node_tree(mat).nodes.new("ShaderNodeGroup"))
    gnode.node_tree = group
    cube = bpy.data.objects["Cube"]
    api.mesh(cube).materials.append(mat)
    bpy.ops.object.select_all(action="DESELECT")
    cube.select_set(True)
    s = api.envfx(api.scene()).mips
    s.source = "SELECTED"
    s.output_dir = str(tmp_path / "sel")
    assert api.ops.mips_bake() == {"FINISHED"}
    assert sorted(f for f in os.listdir(tmp_path / "sel") if f.endswith(".dds")) == ["leaf0.dds", "leaf1.dds"]
    s.source = "FOLDER"
    s.folder = str(tmp_path)
    s.output_dir = str(tmp_path / "fold")
    assert api.ops.mips_bake() == {"FINISHED"}
    assert sorted(f for f in os.listdir(tmp_path / "fold") if f.endswith(".dds")) == [
        "leaf0.dds", "leaf1.dds", "leaf2.dds"]


# --- bad input: clear message, nothing written, file unchanged ---------------------------------------------

def _expect_error(capsys_or_none, fn, pattern, out_dir, before):
    with pytest.raises((RuntimeError, ValueError), match=pattern):
        fn()
    assert not os.path.exists(out_dir) or os.listdir(out_dir) == []
    assert state() == before


def test_missing_file(core, ops, tmp_path):
    path = write_png(core, tmp_path / "gone.png", leaf(core, 16))
    image = bpy.data.images.load(path)
    os.remove(path)
    before = state()
    out = str(tmp_path / "out")
    _expect_error(None, lambda: bake_scene_image(image, out), "file .* is missing; relink or pack it", out, before)
    _expect_error(None, lambda: ops.inputs_from_paths([path]), "No such file or folder", out, before)


def test_unreadable_file(core, ops, tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\nthis is not an image")
    good = write_png(core, tmp_path / "good.png", leaf(core, 16))
    before = state()
    out = str(tmp_path / "out")
    _expect_error(None, lambda: ops.bake_mips(ops.inputs_from_paths([good, str(bad)]), out),
                  "cannot be read", out, before)


def blender_exr(path, codec, w=64, h=40):
    """An RGBA float image written by Blender's own OpenEXR writer with ``codec``; returns the file's bytes."""
    image = bpy.data.images.new("exr-src", w, h, alpha=True, float_buffer=True)
    image.pixels.foreach_set(np.random.default_rng(1).uniform(0, 1, w * h * 4).astype(np.float32))  # pyright: ignore[reportAttributeAccessIssue] -- stubs: one float
    settings = api.scene().render.image_settings
    settings.file_format, settings.color_depth, settings.exr_codec = "OPEN_EXR", "32", codec
    image.save_render(str(path), scene=api.scene())
    bpy.data.images.remove(image)
    return path.read_bytes()


@pytest.mark.parametrize("codec", ["NONE", "ZIP", "PIZ", "DWAA", "DWAB", "RLE", "ZIPS", "PXR24"])
def test_an_exr_cut_short_is_refused_before_blender_reads_it(envfx, ops, tmp_path, codec):
    """Blender 4.2's OpenEXR reader loops for ever on a file cut short in its header (5.0 says it is damaged): the
    mips bake checks an EXR's header, chunk table and last chunk before Blender loads it, as a path or an image's
    file. Whole files of Blender's own writer, in every codec, pass; cut ones are refused, naming the file."""
    exr = envfx.core.exr
    whole = tmp_path / "whole.exr"
    data = blender_exr(whole, codec)
    assert exr.is_exr(str(whole)) and exr.file_damage(str(whole)) is None
    cut = tmp_path / "cut.exr"
    for end in sorted({8, 40, len(data) // 3, len(data) // 2, len(data) - 1}):
        cut.write_bytes(data[:end])
        assert exr.file_damage(str(cut)) is not None, (codec, end, len(data))
    cut.write_bytes(data[:len(data) // 3 if len(data) // 3 < 300 else 200])  # (in the header, for every codec)
    before = state()
    out = str(tmp_path / "out")
    _expect_error(None, lambda: ops.bake_mips(ops.inputs_from_paths([str(cut)]), out),
                  r"cut.exr' is damaged: .*cut short.* Replace it", out, before)
    image = bpy.data.images.load(str(whole))  # (4.2 reads the header as it loads: the file is cut after)
    whole.write_bytes(cut.read_bytes())
    before = state()
    _expect_error(None, lambda: bake_scene_image(image, out), r"its file .*whole.exr' is damaged", out, before)


def test_a_multi_layer_exr_is_named_as_such_not_damaged(envfx, ops, tmp_path):
    """A multi-layer OpenEXR (a render's passes; on 5.0 Blender's own matcaps), which Blender reads as an image of no
    pixels: as a path and as an image of the file, the bake names its layers and says what to do (before: "not an
    image, or damaged")."""
    path = api.multi_layer_exr(str(tmp_path / "passes.exr"))
    assert envfx.core.exr.layer_names(path) == ["ViewLayer.Combined"]
    out = str(tmp_path / "out")
    before = state()
    _expect_error(None, lambda: ops.bake_mips(ops.inputs_from_paths([path]), out),
                  r"passes.exr' cannot be read \(it is a multi-layer OpenEXR \(layers .*\), which Blender reads as no "
                  r"image: save the layer you want as an image of its own", out, before)
    image = bpy.data.images.load(path)
    before = state()
    _expect_error(None, lambda: bake_scene_image(image, out), r"'passes.exr' cannot be read \(it is a multi-layer",
                  out, before)


def test_real_exr_files_are_whole_and_every_cut_is_found(envfx, tmp_path):
    """The EXR files other tools wrote that ship with Blender (its studio lights and world HDRIs, 31 to 35 files):
    none is named damaged, and each cut short (in its header, its chunk table, a chunk, by one byte) is."""
    exr = envfx.core.exr
    files = sorted(glob.glob(os.path.join(bpy.utils.resource_path("LOCAL"), "datafiles", "**", "*.exr"),
                             recursive=True))
    assert len(files) >= 20
    cut = tmp_path / "cut.exr"
    for path in files:
        assert exr.is_exr(path) and exr.file_damage(path) is None, path
        data = open(path, "rb").read()
        for end in (8, 100, len(data) // 10, len(data) // 2, len(data) - 1):
            cut.write_bytes(data[:end])
            assert exr.file_damage(str(cut)) is not None, (path, end)


def test_output_folder_that_cannot_be_written(core, ops, tmp_path):
    good = write_png(core, tmp_path / "good.png", leaf(core, 16))
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the folder should be")
    before = state()
    for out in (str(blocker), str(blocker / "sub"), "/proc/envfx-mips-out"):
        with pytest.raises(ValueError, match="is a file|cannot be written"):
            ops.bake_mips(ops.inputs_from_paths([good]), out)
    assert blocker.read_text().startswith("a file") and state() == before
    image = bpy.data.images.load(good)
    before = state()
    with pytest.raises(RuntimeError, match="cannot be written|is a file"):
        bake_scene_image(image, str(blocker / "sub"))
    assert state() == before


def test_memory_estimate_refuses_before_reading(core, ops, tmp_path):
    image = bpy.data.images.new("Big", 2048, 2048, alpha=True)
    api.envfx(api.scene()).mips.max_memory_gb = 0.1
    before = state()
    out = str(tmp_path / "out")
    _expect_error(None, lambda: bake_scene_image(image, out), r"2048x2048 image needs about .* GB", out, before)


def test_nothing_to_bake_messages(core, tmp_path):
    s = api.envfx(api.scene()).mips
    s.output_dir = str(tmp_path / "out")
    s.source = "ACTIVE"
    with pytest.raises(RuntimeError, match="No active image"):
        api.ops.mips_bake()
    s.source = "SELECTED"
    bpy.ops.object.select_all(action="DESELECT")
    with pytest.raises(RuntimeError, match="Nothing selected"):
        api.ops.mips_bake()
    bpy.data.objects["Cube"].select_set(True)
    with pytest.raises(RuntimeError, match="use no image textures"):
        api.ops.mips_bake()
    s.source = "FOLDER"
    s.folder = str(tmp_path / "nope")
    with pytest.raises(RuntimeError, match="No such file or folder|does not exist"):
        api.ops.mips_bake()
    s.source = "ACTIVE"
    s.image = bpy.data.images.new("G", 8, 8)
    s.formats = set()
    with pytest.raises(RuntimeError, match="No output format"):
        api.ops.mips_bake()
    assert not os.path.exists(tmp_path / "out")


def test_unsaved_blend_relative_output(core):
    s = api.envfx(api.scene()).mips
    s.image = bpy.data.images.new("G", 8, 8)
    s.output_dir = "//mips"
    with pytest.raises(RuntimeError, match="not saved yet"):
        api.ops.mips_bake()


# --- CLI ---------------------------------------------------------------------------------------------------

def test_cli_mips(envfx, core, tmp_path, capsys):
    paths = [write_png(core, tmp_path / f"c{i}.png", leaf(core, 32, seed=i)) for i in range(2)]
    out = tmp_path / "cli"
    assert envfx.cli.main(["mips", *paths, "--out", str(out), "--ref", "0.4", "--format", "dds"]) == 0
    assert sorted(os.listdir(out)) == ["c0.dds", "c0_compare.png", "c0_mips.json", "c1.dds", "c1_compare.png",
                                       "c1_mips.json"]
    rep = json.loads((out / "c0_mips.json").read_text())
    assert rep["ref"] == 0.4
    check_report(rep)
    assert "wrote 6 file(s)" in capsys.readouterr().out


def test_cli_output_folder_that_is_the_input_folder_skips_its_own_outputs(envfx, core, tmp_path, capsys):
    """mips tex --out tex twice: the second run takes the same two images, not their level PNGs and comparison
    pictures (before: 17 files, then 79 with oak_mip00_mip00.png); a user's own *_compare.png without a report
    beside it is still an input."""
    tex = tmp_path / "tex"
    tex.mkdir()
    for name, seed in (("oak", 1), ("pine", 2), ("rock_compare", 3)):
        write_png(core, tex / f"{name}.png", leaf(core, 16, seed=seed))
    runs = []
    for _ in range(2):
        assert envfx.cli.main(["mips", str(tex), "--out", str(tex), "--format", "png"]) == 0
        runs.append(sorted(os.listdir(tex)))
        assert "for 3 image(s)" in capsys.readouterr().out
    assert runs[0] == runs[1]
    assert "oak_mip00_mip00.png" not in runs[1] and "rock_compare_compare.png" in runs[1]
    assert len(runs[1]) == 3 + 3 * (5 + 2)  # the images; per image 5 levels (16 to 1), a report and a picture
    only_outputs = tmp_path / "only"
    only_outputs.mkdir()
    for name in runs[1]:
        if name.startswith("oak_"):
            (only_outputs / name).write_bytes((tex / name).read_bytes())
    assert envfx.cli.main(["mips", str(only_outputs), "--out", str(tmp_path / "o")]) == 2
    assert "no image files (only 6 EnvFX mip output(s))" in capsys.readouterr().err


def test_cli_second_run_of_a_smaller_image_removes_the_old_levels_and_says_so(envfx, core, ops, tmp_path, capsys):
    """leaf.png at 64x64 (7 levels), then at 16x16 into the same --out (the report's repro): leaf_mip05.png and
    leaf_mip06.png of the old image go, and the run names them (before: they stayed beside the 5-level report).
    A level of the earlier run given as an input is kept."""
    src = tmp_path / "leaf.png"
    out = tmp_path / "out"
    write_png(core, src, leaf(core, 64))
    assert envfx.cli.main(["mips", str(src), "--out", str(out), "--no-compare"]) == 0
    assert "removed" not in capsys.readouterr().out
    write_png(core, src, leaf(core, 16))
    assert envfx.cli.main(["mips", str(src), "--out", str(out), "--no-compare"]) == 0
    printed = capsys.readouterr().out
    assert "removed 2 file(s) an earlier run wrote and this one does not: leaf_mip05.png, leaf_mip06.png" in printed
    assert sorted(os.listdir(out)) == sorted(core.output_names("leaf", 5, ("dds", "png"), compare=False))
    assert json.loads((out / "leaf_mips.json").read_text())["levels"] == 5
    write_png(core, src, leaf(core, 64))
    ops.bake_mips(ops.inputs_from_paths([str(src)]), str(out), compare=False)
    write_png(core, src, leaf(core, 16))
    result = ops.bake_mips(ops.inputs_from_paths([str(src), str(out / "leaf_mip06.png")]), str(out), compare=False)
    assert [os.path.basename(p) for p in result.removed] == ["leaf_mip05.png"]
    assert (out / "leaf_mip06.png").is_file() and (out / "leaf_mip06.dds").is_file()


@pytest.mark.parametrize("foreign", ["rock_compare.png", "rock.dds", "rock_mip03.png", "rock_mips.json"])
def test_a_file_no_mips_run_wrote_is_not_written_over(envfx, core, tmp_path, capsys, foreign):
    """--out the input folder, with the user's own rock_compare.png (or a DDS exported by another tool) beside
    rock.png: the bake would replace it; refused before any work, naming it, and nothing in the folder changes.
    Once a run's report lists a file, the next run may replace it."""
    src = write_png(core, tmp_path / "rock.png", leaf(core, 16))
    (tmp_path / foreign).write_bytes(b"the user's own file")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert envfx.cli.main(["mips", str(src), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"would write over 1 file(s) in {str(tmp_path)!r} that no EnvFX mips run wrote ({foreign};" in err, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    (tmp_path / foreign).unlink()
    assert envfx.cli.main(["mips", str(src), "--out", str(tmp_path)]) == 0
    assert envfx.cli.main(["mips", str(src), "--out", str(tmp_path)]) == 0  # its own files: replaced


@pytest.mark.parametrize("given", ["folder", "files"])
def test_an_input_named_like_another_inputs_output_is_not_written_over(envfx, core, tmp_path, capsys, given):
    """A folder holding rock.png and the user's own rock_compare.png (no rock_mips.json), baked into itself: both
    are inputs, and rock's comparison picture would replace rock_compare.png. Refused before any work, naming it;
    nothing in the folder changes."""
    src = write_png(core, tmp_path / "rock.png", leaf(core, 16))
    own = write_png(core, tmp_path / "rock_compare.png", leaf(core, 8))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    inputs = [str(tmp_path)] if given == "folder" else [src, own]
    assert envfx.cli.main(["mips", *inputs, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"in {str(tmp_path)!r} that no EnvFX mips run wrote (rock_compare.png;" in err, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_cli_block_compressed_dds_prints_its_coverage(envfx, core, tmp_path, capsys):
    """--dds BC1: the DDS is BC1 (FourCC DXT1 for a data chain), the report names it and gives each level's
    coverage in the file, which the command prints after the chain's."""
    path = write_png(core, tmp_path / "card.png", leaf(core, 64))
    out = tmp_path / "cli"
    assert envfx.cli.main(["mips", path, "--out", str(out), "--dds", "bc1", "--colour", "LINEAR", "--no-compare"]) == 0
    printed = capsys.readouterr().out
    assert (out / "card.dds").read_bytes()[84:88] == b"DXT1"
    rep = json.loads((out / "card_mips.json").read_text())
    assert rep["dds_format"] == {"dxgi_format": 71, "name": "BC1_UNORM", "header": "legacy", "alpha_mode": "straight",
                                 "compression": "BC1"}
    check_report(rep)
    first = rep["per_level"][0]
    assert f"{first['coverage_naive']:.3f}->{first['coverage']:.3f} (BC1 {first['coverage_dds']:.3f})" in printed
    assert abs(first["coverage_dds"] - rep["target_coverage"]) < 0.02


def test_cli_bc7_keeps_coverage_held_in_a_colour_channel(envfx, core, tmp_path, capsys):
    """A mask texture with the alpha-tested value in R (--alpha-channel R), which BC1 and BC3 refuse: --dds BC7
    writes it (DX10 header, BC7_UNORM for data), the report's coverage as decoded from the file is read in R and
    stays within 2% of level 0's on every level of 16 x 16 or more."""
    card = leaf(core, 64)
    mask = card.copy()
    mask[..., 0], mask[..., 3] = card[..., 3], 255
    path = write_png(core, tmp_path / "mask.png", mask)
    out = tmp_path / "cli"
    assert envfx.cli.main(["mips", path, "--out", str(out), "--dds", "BC7", "--alpha-channel", "R", "--colour",
                           "LINEAR", "--no-compare"]) == 0
    printed = capsys.readouterr().out
    data = (out / "mask.dds").read_bytes()
    assert data[84:88] == b"DX10" and int.from_bytes(data[128:132], "little") == 98
    rep = json.loads((out / "mask_mips.json").read_text())
    assert rep["dds_format"]["name"] == "BC7_UNORM" and rep["alpha_channel"] == "R"
    check_report(rep)
    levels, _ = envfx.core.dds.decode_dds(data)
    for entry, lv in zip(rep["per_level"], levels):
        assert entry["coverage_dds"] == pytest.approx(core.coverage(lv[..., 0], 0.5, 4))
        if entry["width"] >= 16:
            assert abs(entry["coverage_dds"] - rep["target_coverage"]) < 0.02, entry
    assert f"(BC7 {rep['per_level'][0]['coverage_dds']:.3f})" in printed


def test_cli_bc4_writes_the_coverage_channel_alone_and_blender_reads_it(envfx, core, tmp_path, capsys):
    """--dds BC4 --alpha-channel R: the DDS holds R alone (FourCC BC4U, BC4_UNORM even for an sRGB image), the report
    says so and gives each level's coverage as decoded; Blender's own loader (OpenImageIO) reads it as a grey image
    within a level of core.dds's decode."""
    card = leaf(core, 64)
    mask = card.copy()
    mask[..., 0], mask[..., 3] = card[..., 3], 255
    path = write_png(core, tmp_path / "mask.png", mask)
    out = tmp_path / "cli"
    assert envfx.cli.main(["mips", path, "--out", str(out), "--dds", "BC4", "--alpha-channel", "R",
                           "--no-compare"]) == 0
    printed = capsys.readouterr().out
    rep = json.loads((out / "mask_mips.json").read_text())
    assert rep["dds_format"]["name"] == "BC4_UNORM" and rep["dds_format"]["header"] == "legacy"
    check_report(rep)
    levels, _ = envfx.core.dds.decode_dds((out / "mask.dds").read_bytes())
    assert all(abs(e["coverage_dds"] - rep["target_coverage"]) < 0.02 for e in rep["per_level"] if e["width"] >= 16)
    assert f"(BC4 {rep['per_level'][0]['coverage_dds']:.3f})" in printed
    blender = blender_texels(out / "mask.dds", 64, 64)
    assert np.abs(blender[..., 0] - levels[0][..., 0]).max() <= 1


def test_block_compression_of_an_odd_size_is_refused_only_when_a_dds_is_written(envfx, core, ops, tmp_path, capsys):
    """A 30 x 20 image: --dds BC3 is refused before any work (nothing written, the message says what to do); with
    PNG levels only the DDS setting does not matter and the bake runs; the sidebar's setting likewise."""
    path = write_png(core, tmp_path / "odd.png", leaf(core, 20)[:, :20].repeat(2, axis=1)[:, :30])
    out = tmp_path / "cli"
    assert envfx.cli.main(["mips", path, "--out", str(out), "--dds", "BC3"]) == 2
    err = capsys.readouterr().err
    assert "The image is 30x20: a BC3 DDS needs a width and height that are multiples of 4" in err, err
    assert "write the DDS as RGBA8" in err and not out.exists()
    assert envfx.cli.main(["mips", path, "--out", str(out), "--dds", "BC3", "--format", "png"]) == 0
    assert not (out / "odd.dds").exists() and (out / "odd_mip00.png").is_file()
    s = api.envfx(api.scene()).mips
    s.dds, s.formats = "BC1", {"PNG"}
    settings, formats, *_ = ops.settings_from_scene(api.scene())
    assert formats == ("png",) and settings.dds == "RGBA8"
    s.formats = {"DDS", "PNG"}
    assert ops.settings_from_scene(api.scene())[0].dds == "BC1"
    s.dds, s.formats = "RGBA8", {"DDS", "PNG"}


@pytest.mark.parametrize("compression", ["BC1", "BC3", "BC7"])
@pytest.mark.parametrize("colour", ["SRGB", "LINEAR"])
def test_blender_loads_block_compressed_dds_as_envfx_decodes_it(envfx, core, ops, tmp_path, colour, compression):
    """The sidebar's DDS Texels: Blender's own loader (OpenImageIO's BC decoder, independent of EnvFX's) reads
    the BC1, BC3 or BC7 file of a chain as core.dds decodes it, within a level of rounding; BC1's alpha is 0 or 1,
    cut at the reference."""
    src = core.make_leaf_card(48, 80, seed=5)
    path = write_png(core, tmp_path / "card.png", src)
    image = bpy.data.images.load(path)
    s = api.envfx(api.scene()).mips
    s.dds, s.colour = compression, colour
    try:
        assert bake_scene_image(image, tmp_path / "out") == {"FINISHED"}
    finally:
        s.dds, s.colour = "RGBA8", "AUTO"
        bpy.data.images.remove(image)
    data = (tmp_path / "out" / "card.dds").read_bytes()
    levels, fmt = envfx.core.dds.decode_dds(data)
    assert fmt["compression"] == compression
    assert (fmt["header"] == "DX10") == (colour == "SRGB" or compression == "BC7")
    blender = blender_texels(tmp_path / "out" / "card.dds", 80, 48)
    assert np.abs(blender - levels[0]).max() <= 1
    if compression == "BC1":
        assert set(np.unique(blender[..., 3])) <= {0, 255}
    drawn = src[..., 3] >= 128 if compression == "BC1" else np.ones(src.shape[:2], bool)  # (cut texels: black)
    assert np.sqrt(np.mean((levels[0][..., :3].astype(float) - src[..., :3])[drawn] ** 2)) < 8.0


@pytest.mark.parametrize("args,msg", [
    (["--format", "dds,bmp"], "Unknown output format"),
    (["--ref", "1.2"], "outside"),
    (["--supersample", "0"], "Supersample"),
    (["--dds", "BC3", "--alpha-channel", "G"], "BC3 keeps alpha only in A"),
    (["--dds", "BC5"], "invalid choice: 'BC5'"),
    (["--dds", "BC1", "--alpha-channel", "R"], "write the DDS as BC7, BC4 (the coverage alone) or RGBA8"),
])
def test_cli_bad_arguments(envfx, core, tmp_path, capsys, args, msg):
    path = write_png(core, tmp_path / "x.png", leaf(core, 16))
    out = tmp_path / "cli"
    assert envfx.cli.main(["mips", path, "--out", str(out), *args]) == 2
    assert msg in capsys.readouterr().err
    assert not out.exists()


def test_cli_missing_input(envfx, tmp_path, capsys):
    assert envfx.cli.main(["mips", str(tmp_path / "nothing.png"), "--out", str(tmp_path / "o")]) == 2
    assert "No such file or folder" in capsys.readouterr().err


def test_panels_and_operator_registered(envfx):
    assert hasattr(bpy.types, "IMAGE_PT_envfx_mips") and hasattr(bpy.types, "VIEW3D_PT_envfx_mips")
    assert bpy.types.IMAGE_PT_envfx_mips.bl_space_type == "IMAGE_EDITOR"  # pyright: ignore[reportAttributeAccessIssue] -- registered by the add-on
    assert "mips" in envfx.FEATURES


def test_grey_16bit_without_alpha(core, ops, tmp_path):
    g = (np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000)
    path = write_png(core, tmp_path / "grey16.png", g)
    arr, srgb, warnings = ops.read_input(ops.inputs_from_paths([path])[0], "AUTO", core.MipSettings())
    assert arr.shape[2] == 3 and srgb
    assert np.abs(arr[..., 0] - g / 65535.0).max() < 2e-3


@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (9, 1)])
def test_1x1_and_1xn_images(core, ops, tmp_path, shape):
    img = np.zeros(shape + (4,), np.uint8)
    img[..., 1] = 200
    img[..., 3] = np.where(np.arange(img[..., 3].size).reshape(shape) % 2 == 0, 255, 0)
    path = write_png(core, tmp_path / "line.png", img)
    image = bpy.data.images.load(path)
    out = tmp_path / "out"
    assert bake_scene_image(image, out) == {"FINISHED"}
    levels = dds_reader.read_dds((out / "line.dds").read_bytes())["levels"]
    assert [lv.shape[:2] for lv in levels] == core.level_sizes(*shape)
    np.testing.assert_array_equal(levels[0], img)


def test_image_editor_active_image_and_cancel(core, ops, tmp_path):
    src = leaf(core, 64)
    image = bpy.data.images.load(write_png(core, tmp_path / "shown.png", src))
    s = api.envfx(api.scene()).mips
    s.source = "ACTIVE"
    s.image = None
    s.output_dir = str(tmp_path / "out")
    with bpy.context.temp_override(edit_image=image):  # what the Image Editor gives the operator
        assert api.ops.mips_bake() == {"FINISHED"}
    assert (tmp_path / "out" / "shown.dds").is_file()
    # cancelling half-way (Esc in the UI, Ctrl-C in the CLI) leaves no file and no temporary image behind
    before = state()
    job = ops.bake_mips_job(ops.inputs_from_paths([str(tmp_path / "shown.png")] * 2), str(tmp_path / "cancel"))
    next(job)
    next(job)
    job.close()
    assert not (tmp_path / "cancel").exists() and state() == before


@pytest.mark.parametrize("source", ["ACTIVE", "SELECTED", "FOLDER"])
def test_panel_draws_every_setting(envfx, recording_layout, source):
    api.envfx(api.scene()).mips.source = source
    log = []
    envfx.panels.mips.draw_mips(recording_layout(log), bpy.context, in_image_editor=False)
    assert "envfx.mips_bake" in log and "ref" in log and "output_dir" in log and "dds" in log
    assert ("folder" in log) == (source == "FOLDER") and ("image" in log) == (source == "ACTIVE")


def test_16k_png_in_a_batch_is_refused_from_its_header(core, ops, tmp_path):
    good = write_png(core, tmp_path / "a_good.png", leaf(core, 16))
    huge = tmp_path / "huge.png"
    # a real PNG header for 16384 x 16384 RGBA; the data would be 1 GB, the header alone is enough to refuse it
    header = core.encode_png(np.zeros((1, 1, 4), np.uint8))
    ihdr = (16384).to_bytes(4, "big") * 2
    huge.write_bytes(header[:16] + ihdr + header[24:])
    assert ops.png_size(str(huge)) == (16384, 16384)
    before = state()
    out = str(tmp_path / "out")
    _expect_error(None, lambda: ops.bake_mips_job(ops.inputs_from_paths([good, str(huge)]), out),
                  r"huge.png: A 16384x16384 image needs about 12.0 GB .* limit of 8 GB", out, before)


def test_operator_image_argument_and_name_clashes(core, ops, tmp_path):
    src = leaf(core, 32)
    a = write_png(core, tmp_path / "twig.png", src)
    Image.fromarray(src).save(tmp_path / "twig.tga")
    s = api.envfx(api.scene()).mips
    s.output_dir = str(tmp_path / "out")
    with pytest.raises(RuntimeError, match="No image named 'Nope'"):
        api.ops.mips_bake(image="Nope")
    bpy.data.images.load(a)
    assert api.ops.mips_bake(image="twig.png") == {"FINISHED"}
    assert (tmp_path / "out" / "twig.dds").is_file()
    inputs = ops.inputs_from_paths([str(tmp_path)])
    assert [i.stem for i in inputs] == ["twig", "twig_2"]
    result = ops.bake_mips(inputs, str(tmp_path / "both"), formats="dds", compare=False)
    levels = [dds_reader.read_dds((tmp_path / "both" / f"{stem}.dds").read_bytes())["levels"][0]
              for stem in ("twig", "twig_2")]
    for lv in levels:  # the TGA reads the same as the PNG (Blender's loader, straight alpha)
        np.testing.assert_array_equal(lv, src)
    assert set(result.reports) == {"twig", "twig_2"}
    # a second image of the same file, which Blender names twig.png.001: written as twig_001, not twig.png.001.dds
    again = bpy.data.images.load(a, check_existing=False)
    assert again.name == "twig.png.001"
    assert api.ops.mips_bake(image=again.name) == {"FINISHED"}
    assert (tmp_path / "out" / "twig_001.dds").is_file()
    assert not any(".png." in n for n in os.listdir(tmp_path / "out"))


def test_renamed_inputs_take_names_no_other_input_has(envfx, core, ops, tmp_path, capsys):
    """a.png a.tga a_2.png a_2.tga: a.tga is renamed past a_2 (a_2.png's own name) and a_2.tga to a_2_2 (before:
    a.tga became a_2, a_2.png a_2_2 as well, and the run failed after baking with "Two inputs are both named
    'a_2_2'"). Every input gets its own chain, of its own pixels."""
    folder = tmp_path / "in"
    folder.mkdir()
    sources = {}
    for seed, name in enumerate(("a.png", "a.tga", "a_2.png", "a_2.tga")):
        sources[name] = leaf(core, 24, seed=seed)
        Image.fromarray(sources[name]).save(folder / name)
    inputs = ops.inputs_from_paths([str(folder)])
    assert [(os.path.basename(i.path), i.stem) for i in inputs] == [
        ("a.png", "a"), ("a.tga", "a_3"), ("a_2.png", "a_2"), ("a_2.tga", "a_2_2")]
    upper = write_png(core, tmp_path / "A.png", sources["a.png"])
    assert [i.stem for i in ops.inputs_from_paths([str(folder / "a_2.tga"), upper, str(folder / "a.tga")])] \
        == ["a_2", "A", "a_3"]  # in the order given; case is ignored (A.dds and a.dds are one file on Windows)
    out = tmp_path / "out"
    assert envfx.cli.main(["mips", str(folder), "--out", str(out), "--format", "dds", "--no-compare"]) == 0
    assert "for 4 image(s)" in capsys.readouterr().out
    for name, stem in (("a.png", "a"), ("a.tga", "a_3"), ("a_2.png", "a_2"), ("a_2.tga", "a_2_2")):
        level0 = dds_reader.read_dds((out / f"{stem}.dds").read_bytes())["levels"][0]
        np.testing.assert_array_equal(level0, sources[name])
        assert json.loads((out / f"{stem}_mips.json").read_text())["source"] == str(folder / name)


def test_an_input_keeps_its_own_name_and_letters_of_any_script(core, ops, tmp_path):
    """"my leaf.png" sorts before my_leaf.png, but my_leaf.png keeps its own name (before: my_leaf_2, while the
    name made from "my leaf" took my_leaf); letters of any script stay, with their marks (léaf, 葉, नमस्ते: before,
    l_af, image and नमस_त), and a name handed over decomposed is composed."""
    folder = tmp_path / "in"
    folder.mkdir()
    names = ("my leaf.png", "my_leaf.png", "léaf.png", "葉.png", "नमस्ते.png", unicodedata.normalize("NFD", "été.png"))
    for seed, name in enumerate(names):
        Image.fromarray(leaf(core, 16, seed=seed)).save(folder / name)
    stems = {unicodedata.normalize("NFC", os.path.basename(i.path)): i.stem
             for i in ops.inputs_from_paths([str(folder)])}
    assert stems == {"my leaf.png": "my_leaf_2", "my_leaf.png": "my_leaf", "léaf.png": "léaf", "葉.png": "葉",
                     "नमस्ते.png": "नमस्ते", "été.png": "été"}  # marks kept, a decomposed name composed


def test_inputs_that_would_share_a_name_are_refused_before_any_work(core, ops, tmp_path):
    """Inputs whose names still clash (a script that bypasses the renaming) are refused by validate(), naming the
    input files, before anything is read or written."""
    paths = [write_png(core, tmp_path / n, leaf(core, 16)) for n in ("leaf.png", "Leaf.png")]
    inputs = [ops.MipsInput(stem="leaf", label=p, path=p) for p in paths]
    before = state()
    out = str(tmp_path / "out")
    pattern = f"Inputs {paths[0]!r} and {paths[1]!r} would be written under the same name 'leaf': rename one"
    _expect_error(None, lambda: ops.validate(inputs, out, core.MipSettings(), "dds"), re.escape(pattern), out, before)


@pytest.mark.parametrize("colour", ["SRGB", "LINEAR"])
def test_blender_loads_the_dds_and_reads_level_0_as_the_png(core, ops, tmp_path, colour):
    """Blender's own loader (OpenImageIO) reads the DX10 R8G8B8A8_UNORM_SRGB file of an sRGB chain and the legacy
    RGBA8 file of a data chain; its level 0 is the PNG level 0, pixel for pixel."""
    src = core.make_leaf_card(48, 80, seed=5)  # not square: width and height cannot swap unnoticed
    path = write_png(core, tmp_path / "card.png", src)
    out = tmp_path / "out"
    result = ops.bake_mips(ops.inputs_from_paths([path]), str(out), colour=colour, compare=False)
    srgb = colour == "SRGB"
    assert result.reports["card"]["dds_format"]["name"] == ("R8G8B8A8_UNORM_SRGB" if srgb else "R8G8B8A8_UNORM")
    back = dds_reader.read_dds((out / "card.dds").read_bytes())
    assert back["srgb"] == srgb and back["header"] == ("DX10" if srgb else "legacy")
    pictures = []
    for name in ("card.dds", "card_mip00.png"):
        image = bpy.data.images.load(str(out / name))
        assert tuple(image.size) == (80, 48) and image.channels == 4
        px = np.empty(80 * 48 * 4, np.float32)
        api.pixels(image).foreach_get(px)
        pictures.append(np.round(px.reshape(48, 80, 4)[::-1] * 255.0).astype(np.uint8))  # Blender: bottom row first
    np.testing.assert_array_equal(pictures[0], pictures[1])
    np.testing.assert_array_equal(pictures[0], back["levels"][0])
    np.testing.assert_array_equal(pictures[0], src)
