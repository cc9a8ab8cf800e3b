"""Gas giant in Blender: operator, planet and material, Eevee look, CLI, bad input leaves everything as it was."""

import json
import math
import os
import signal
import subprocess
import sys
import tracemalloc
from typing import Any

import bpy
import numpy as np
import pytest
from PIL import Image

from tests.blender import api


def _small(s, out, **kw):
    values = dict(particles=30_000, iterations=20, field_size="64", cubemap_size="128", equirect_width="256",
                  threads=1, output_dir=str(out), seed=3)
    values.update(kw)
    for k, v in values.items():
        setattr(s, k, v)
    return s


def _state(folder=None):
    files = sorted(os.listdir(folder)) if folder is not None and os.path.isdir(folder) else None
    return (sorted(bpy.data.objects.keys()), sorted(bpy.data.images.keys()), sorted(bpy.data.materials.keys()),
            sorted(bpy.data.meshes.keys()), files)


def _planet_material() -> bpy.types.Material:
    """The material of the planet the bake made (the first slot of the object "Gas Giant")."""
    return api.of(bpy.types.Material, api.mesh(bpy.data.objects["Gas Giant"]).materials[0])


def _planet_texture(mat: bpy.types.Material | None = None) -> bpy.types.ShaderNodeTexImage:
    """The image texture node of the planet's material (``mat``, or the planet's when None)."""
    nodes = api.node_tree(_planet_material() if mat is None else mat).nodes
    return api.of(bpy.types.ShaderNodeTexImage, nodes["Gas Giant Texture"])


def _image(tex: bpy.types.ShaderNodeTexImage) -> bpy.types.Image:
    """The image of an image texture node (optional in the API; the planet's always has one)."""
    return api.of(bpy.types.Image, tex.image)


def _colorspace(image: bpy.types.Image) -> str:
    """The name of the colour space ``image`` is read in."""
    settings = image.colorspace_settings
    assert settings is not None
    return settings.name


def test_registered_with_settings_and_presets(envfx):
    s = api.envfx().gasgiant
    assert s.particles == 8_000_000 and s.iterations == 1000 and s.field_size == "512"
    assert "gasgiant" in envfx.FEATURES
    assert api.ops.gasgiant_preset(preset="STORMY") == {"FINISHED"}
    assert s.vortices == envfx.core.gasgiant.PRESETS["STORMY"]["vortices"]
    s.preset = "NEPTUNE"
    assert s.bands == envfx.core.gasgiant.PRESETS["NEPTUNE"]["bands"]
    assert tuple(s.ramp_color_5) == pytest.approx(envfx.core.gasgiant.PRESETS["NEPTUNE"]["ramp_colors"][4])


def test_bake_operator_writes_files_matching_the_core_and_makes_a_planet(envfx, tmp_path):
    gg = envfx.core.gasgiant
    ops = envfx.operators.gasgiant
    s = _small(api.envfx().gasgiant, tmp_path / "tex", vortices=3)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    names = sorted(os.listdir(tmp_path / "tex"))
    assert names == sorted([gg.METADATA_NAME, *gg.output_names(ops.params_from_settings(s), None).values()])
    # the numpy entry point with the same settings gives the same pixels (and the same gasgiant.json)
    twin = gg.run_bake(ops.params_from_settings(s), str(tmp_path / "twin"))
    assert (tmp_path / "tex" / "gasgiant.json").read_text() == (tmp_path / "twin" / "gasgiant.json").read_text()
    for name in names[1:]:
        a = np.asarray(Image.open(tmp_path / "tex" / name))
        b = np.asarray(Image.open(os.path.join(twin.folder, name)))
        np.testing.assert_array_equal(a, b)
    image = _image(_planet_texture())
    assert os.path.normpath(bpy.path.abspath(image.filepath)) == str(tmp_path / "tex" / "gasgiant_equirect.png")
    assert image.size[:] == (256, 128)
    # baking again updates the same planet, material and image
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    assert [o.name for o in bpy.data.objects if o.name.startswith("Gas Giant")] == ["Gas Giant"]
    assert len([m for m in bpy.data.materials if m.name.startswith("EnvFX Gas Giant")]) == 1


def test_planet_uvs_are_the_equirect_mapping(envfx):
    mesh = envfx.operators.gasgiant.sphere_mesh("probe", segments=32, rings=16)
    n = len(mesh.loops)
    vi = np.empty(n, np.int32)
    mesh.loops.foreach_get("vertex_index", vi)
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)[vi]
    uv = np.empty(n * 2, np.float32)
    mesh.uv_layers["UVMap"].data.foreach_get("uv", uv)
    uv = uv.reshape(-1, 2)
    np.testing.assert_allclose(uv[:, 1], np.arcsin(np.clip(co[:, 2], -1, 1)) / math.pi + 0.5, atol=1e-5)
    inner = np.abs(co[:, 2]) < 0.999
    lon = np.arctan2(co[inner, 1], co[inner, 0])
    u_expected = (lon + math.pi) / (2 * math.pi)
    diff = np.abs(uv[inner, 0] - u_expected)
    assert np.all((diff < 1e-5) | (np.abs(diff - 1) < 1e-5))  # the seam column may carry u = 0 or 1
    # outward faces, sphere normals
    mesh.polygons.foreach_get("normal", nrm := np.empty(len(mesh.polygons) * 3, np.float32))
    ctr = np.empty(len(mesh.polygons) * 3, np.float32)
    mesh.polygons.foreach_get("center", ctr)
    assert np.all(np.sum(nrm.reshape(-1, 3) * ctr.reshape(-1, 3), axis=1) > 0)
    bpy.data.meshes.remove(mesh)


def test_animated_bake_makes_an_image_sequence(envfx, tmp_path):
    s = _small(api.envfx().gasgiant, tmp_path / "seq", frames=3, frame_iterations=4)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    assert "gasgiant_equirect_0003.png" in os.listdir(tmp_path / "seq")
    tex = _planet_texture()
    assert _image(tex).source == "SEQUENCE"
    assert tex.image_user.frame_duration == 3 and tex.image_user.use_auto_refresh
    assert s.frames == 3


FILE_LOOKS = {"png": ("gasgiant_equirect.png", False, "sRGB"), "exr": ("gasgiant_equirect.exr", True, "Linear Rec.709")}


def test_rebake_in_another_format_gives_the_planet_the_colour_space_of_its_file(envfx, tmp_path, capsys):
    """A re-bake that switches between 8-bit PNG and float EXR leaves the planet's image in the colour space of the
    file it now shows (before: it kept the first file's, so the planet looked washed out or too dark), from the
    operator and from --save into a .blend that already holds the planet."""
    s = _small(api.envfx().gasgiant, tmp_path / "op", particles=5000, iterations=2, field_size="16",
               cubemap_size="64", equirect_width="128")
    for fmt in ("png", "exr", "png"):
        s.file_format = fmt.upper()
        assert api.ops.gasgiant_bake() == {"FINISHED"}
        image = _image(_planet_texture())
        assert (os.path.basename(image.filepath), image.is_float, _colorspace(image)) == FILE_LOOKS[fmt]
    level = str(tmp_path / "level.blend")
    args = ["gas-giant", "--out", str(tmp_path / "cli"), "--particles", "5000", "--iterations", "2", "--equirect",
            "128", "--cubemap", "64", "--field", "16", "--threads", "1", "--save", level]
    for fmt in ("exr", "png", "exr"):
        bpy.ops.wm.read_homefile(app_template="")
        assert envfx.cli.main(args + ["--format", fmt]) == 0, capsys.readouterr().err
        bpy.ops.wm.open_mainfile(filepath=level)
        image = bpy.data.images["Gas Giant Texture"]
        assert (os.path.basename(image.filepath), image.is_float, _colorspace(image)) == FILE_LOOKS[fmt]
    assert not [i.name for i in bpy.data.images if i.name.startswith("gasgiant_")]  # the probe image is not kept


def _planet_shot(scene, size: int):
    """The startup scene made a shot of the planet: lit by a sun from the camera's side, over black space."""
    for name in ("Cube", "Light"):
        if name in bpy.data.objects:
            bpy.data.objects.remove(bpy.data.objects[name])
    light = api.of(bpy.types.SunLight, bpy.data.lights.new("Sun", "SUN"))
    light.energy = 4.0
    sun = bpy.data.objects.new("Sun", light)
    sun.rotation_euler = (0.0, math.radians(60), 0.0)  # from +X side, like the camera
    scene.collection.objects.link(sun)
    cam = api.camera(scene)
    cam.location = (4.0, 0.0, 0.0)
    cam.rotation_euler = (math.radians(90), 0.0, math.radians(90))
    api.of(bpy.types.Camera, cam.data).lens = 50
    scene.render.resolution_x = scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.world = world = scene.world or bpy.data.worlds.new("W")
    if bpy.app.version < (5, 0, 0):
        world.use_nodes = True
    api.socket(api.node_tree(world).nodes["Background"].inputs["Color"]).default_value = (0, 0, 0, 1)


def test_planet_looks_right_in_eevee(envfx, tmp_path):
    scene = api.scene()
    _small(api.envfx(scene).gasgiant, tmp_path / "look", particles=50_000, iterations=30)
    api.envfx(scene).gasgiant.preset = "JUPITER"
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    _planet_shot(scene, 96)
    api.set_engine(scene, api.eevee_engine())
    api.of(bpy.types.SceneEEVEE, scene.eevee).taa_render_samples = 1
    scene.render.filepath = str(tmp_path / "planet.png")
    bpy.ops.render.render(write_still=True)
    img = np.asarray(Image.open(tmp_path / "planet.png").convert("RGB")).astype(float)
    centre = img[38:58, 38:58]
    corner = img[:8, :8]
    assert corner.mean() < 10  # space is black
    assert centre.mean() > 60  # the lit planet fills the middle
    # warm, Jupiter-like colours (red > blue) and visible bands (variation from row to row)
    assert centre[..., 0].mean() > centre[..., 2].mean() + 10
    assert centre.mean(axis=(1, 2)).std() > 0.5


def test_cancel_halfway_leaves_no_files_and_no_planet(envfx, tmp_path):
    out = tmp_path / "cancel"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    _small(api.envfx().gasgiant, out, iterations=400)
    before = _state(out)
    job = envfx.operators.gasgiant.bake_job(api.scene())
    for _ in range(4):
        next(job)
    assert len(os.listdir(out)) == 2  # the temporary folder exists while baking
    job.close()
    assert _state(out) == before


def test_cancel_through_progress_run(envfx, tmp_path):
    _small(api.envfx().gasgiant, tmp_path / "c2", iterations=400)
    before = _state(tmp_path / "c2")
    calls = iter(range(100))
    with pytest.raises(envfx.progress.Cancelled, match="nothing was written"):
        envfx.progress.run(envfx.operators.gasgiant.bake_job(api.scene()), "Gas giant bake",
                           should_cancel=lambda: next(calls) >= 3)
    assert _state(tmp_path / "c2") == before and not (tmp_path / "c2").exists()


def _expect_error(tmp_path, folder, match):
    before = _state(folder)
    with pytest.raises(RuntimeError, match=match):
        api.ops.gasgiant_bake()
    assert _state(folder) == before


def test_bad_input_missing_or_unreadable_palette(envfx, tmp_path):
    s = _small(api.envfx().gasgiant, tmp_path / "p", color_source="PALETTE",
               palette_path=str(tmp_path / "nope.png"))
    _expect_error(tmp_path, tmp_path / "p", "Palette image .* does not exist")
    bad = tmp_path / "bad.png"
    bad.write_text("not an image")
    s.palette_path = str(bad)
    _expect_error(tmp_path, tmp_path / "p", "Palette image .* cannot be read")
    s.palette_path = ""
    _expect_error(tmp_path, tmp_path / "p", "No palette image")
    clear = tmp_path / "clear.png"  # a picture on a card with nothing on it
    clear.write_bytes(envfx.core.png.encode_png(np.full((8, 8, 4), (255, 0, 0, 100), np.uint8)))
    s.palette_path = str(clear)
    _expect_error(tmp_path, tmp_path / "p", "Palette image .* is transparent everywhere .*visible colours")
    broken = np.full((8, 16, 4), 0.5, np.float32)  # an EXR with NaN and infinite pixels (a broken render)
    broken[2, :5] = np.nan
    broken[5, 3] = np.inf
    envfx.core.exr.write_exr(str(tmp_path / "broken.exr"), broken)
    s.palette_path = str(tmp_path / "broken.exr")
    _expect_error(tmp_path, tmp_path / "p", "Palette image .* has 6 pixel.s. that are NaN or infinite: fix the image")
    # a multi-layer OpenEXR (a render's passes), which Blender reads as no image: its layers are named
    s.palette_path = api.multi_layer_exr(str(tmp_path / "passes.exr"))
    _expect_error(tmp_path, tmp_path / "p", "Palette image .*passes.exr' cannot be read .it is a multi-layer OpenEXR "
                  ".layers ViewLayer.Combined.")


def test_palette_image_colours_the_planet(envfx, tmp_path):
    pal = np.zeros((16, 32, 3), np.uint8)
    pal[:8] = (200, 30, 30)  # north red
    pal[8:] = (30, 30, 200)  # south blue
    Image.fromarray(pal).save(tmp_path / "pal.png")
    _small(api.envfx().gasgiant, tmp_path / "pp", color_source="PALETTE",
           palette_path=str(tmp_path / "pal.png"), mapping="STRIPES", noise_speed=0.0, vortices=0)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    eq = np.asarray(Image.open(tmp_path / "pp" / "gasgiant_equirect.png")).astype(int)
    assert eq[:40, :, 0].mean() > 150 and eq[-40:, :, 2].mean() > 150
    assert not [i for i in bpy.data.images if i.name.startswith("pal")]  # the palette was not kept


def _save_tiff16(source: str, path: str):
    """A 16-bit RGB TIFF of the image file ``source``, written by Blender (Standard view: the colours unchanged)."""
    image = bpy.data.images.load(source, check_existing=False)
    scene = api.scene()
    view: Any = scene.view_settings  # its view transforms are the colour config's, the stubs list another config's
    view.view_transform = "Standard"
    settings = scene.render.image_settings
    settings.file_format, settings.color_depth, settings.color_mode = "TIFF", "16", "RGB"
    image.save_render(path, scene=scene)
    bpy.data.images.remove(image)


def test_float_palettes_give_the_colours_of_the_8_bit_palette(envfx, tmp_path):
    """The same colours as a 16-bit PNG, a 16-bit TIFF or an EXR palette (float images: Blender gives their pixels
    in scene linear, premultiplied unless told otherwise) read as the 8-bit PNG does, for --palette and for the
    faces of --cubemap-palette (before: they were painted as if they were sRGB, a much darker planet)."""
    png, exr, colour = envfx.core.png, envfx.core.exr, envfx.core.colour
    ops = envfx.operators.gasgiant
    pal8 = np.random.default_rng(0).integers(0, 256, (8, 32, 4)).astype(np.uint8)
    pal8[..., 3] = np.maximum(pal8[..., 3], 1)
    (tmp_path / "p8.png").write_bytes(png.encode_png(pal8))
    (tmp_path / "p16.png").write_bytes(png.encode_png(pal8.astype(np.uint16) * 257))
    straight = pal8.astype(np.float32) / 255
    alpha = straight[..., 3:]
    exr.write_exr(str(tmp_path / "p.exr"), np.concatenate([colour.srgb_to_linear(straight[..., :3]) * alpha, alpha],
                                                          -1))  # OpenEXR: premultiplied, linear
    (tmp_path / "rgb16.png").write_bytes(png.encode_png(pal8[..., :3].astype(np.uint16) * 257))
    _save_tiff16(str(tmp_path / "rgb16.png"), str(tmp_path / "p16.tif"))
    # (fill=False: the random alphas' colour itself, not the transparent pixels filled from the opaque ones)
    ref = ops.load_palette(str(tmp_path / "p8.png"), fill=False)
    np.testing.assert_allclose(ref, straight[..., :3], atol=1e-6)  # the stored values, straight colour
    for name in ("p16.png", "p.exr", "p16.tif"):
        np.testing.assert_allclose(ops.load_palette(str(tmp_path / name), fill=False), ref, atol=0.05 / 255,
                                   err_msg=name)
    # the cube-map palette: 16-bit copies of a bake's faces read as the faces themselves
    gg = envfx.core.gasgiant
    gg.run_bake(gg.GasGiantParams(particles=3000, iterations=3, field_size=16, cubemap_size=64, equirect_width=0,
                                  threads=1), str(tmp_path / "faces8"))
    (tmp_path / "faces16").mkdir()
    for face in gg.FACES:
        img = np.asarray(Image.open(tmp_path / "faces8" / f"gasgiant_{face}.png"))
        (tmp_path / "faces16" / f"gasgiant_{face}.png").write_bytes(png.encode_png(img.astype(np.uint16) * 257))
    cube8 = ops.load_palette_cube(str(tmp_path / "faces8"))
    assert cube8.std() > 0.01
    np.testing.assert_allclose(ops.load_palette_cube(str(tmp_path / "faces16")), cube8, atol=0.05 / 255)
    # a planet baked from a flat 16-bit palette wears the palette's colour
    flat = np.tile(np.array([200, 120, 60], np.uint16) * 257, (16, 64, 1))
    (tmp_path / "flat16.png").write_bytes(png.encode_png(flat))
    _small(api.envfx().gasgiant, tmp_path / "planet", color_source="PALETTE", make_planet=False,
           palette_path=str(tmp_path / "flat16.png"), particles=50_000, iterations=40, field_size="16",
           cubemap_size="64", equirect_width="128", fade_rate=0.0, opacity=1.0)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    eq = np.asarray(Image.open(tmp_path / "planet" / "gasgiant_equirect.png"))
    np.testing.assert_array_equal(np.median(eq.reshape(-1, 3), axis=0), [200, 120, 60])


def test_bad_input_memory_output_folder_and_unsaved_file(envfx, tmp_path, monkeypatch):
    s = _small(api.envfx().gasgiant, tmp_path / "m", particles=50_000_000)
    monkeypatch.setattr(envfx.core.gasgiant, "available_memory", lambda: 512 * 2**20)
    _expect_error(tmp_path, tmp_path / "m", r"50000000 particles need about \d+\.\d\d GB but only 0\.50 GB")
    monkeypatch.undo()
    s.particles = 10_000
    afile = tmp_path / "afile"
    afile.write_text("x")
    s.output_dir = str(afile)
    _expect_error(tmp_path, afile, "is a file")
    s.output_dir = str(afile / "below")
    _expect_error(tmp_path, tmp_path, "part of its path, .*afile', is a file")
    s.output_dir = "//textures/"
    _expect_error(tmp_path, tmp_path, "not saved yet")
    s.output_dir = ""
    _expect_error(tmp_path, tmp_path, "No output folder")
    s.output_dir = str(tmp_path / "ok")
    s.equirect_width = "0"
    _expect_error(tmp_path, tmp_path / "ok", "needs the equirectangular image")
    s.particles = -4  # clamped by the property: the UI cannot ask for zero or negative particles
    assert s.particles == 1


def test_cli_gas_giant(envfx, tmp_path, capsys):
    out = tmp_path / "cli"
    code = envfx.cli.main(["gas-giant", "--out", str(out), "--particles", "20000", "--iterations", "10", "--seed",
                           "2", "--equirect", "256", "--cubemap", "128", "--field", "64", "--preset", "neptune",
                           "--threads", "1", "--save", str(tmp_path / "planet.blend")])
    assert code == 0, capsys.readouterr().err
    assert len(os.listdir(out)) == 8 + 1  # the images and gasgiant.json
    eq = np.asarray(Image.open(out / "gasgiant_equirect.png")).astype(int)
    assert eq.shape == (128, 256, 3) and eq[..., 2].mean() > eq[..., 0].mean()  # Neptune is blue
    assert (tmp_path / "planet.blend").exists() and "Gas Giant" in bpy.data.objects


def test_cli_save_into_an_existing_file_adds_the_planet_and_keeps_the_rest(envfx, tmp_path, capsys):
    """--save level.blend: the level is opened and gets the planet (before: the file was replaced by the startup
    scene with the planet); a second run updates that planet instead of adding another."""
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    rock = bpy.data.objects.new("Rock", bpy.data.meshes.new("Rock"))
    api.scene().collection.objects.link(rock)
    api.scene().frame_end = 77
    level = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=level)
    args = ["gas-giant", "--out", str(tmp_path / "tex"), "--particles", "5000", "--iterations", "2", "--equirect",
            "128", "--cubemap", "64", "--field", "16", "--threads", "1", "--save", level]
    for run, verb in enumerate(("added", "updated")):
        bpy.ops.wm.read_homefile(app_template="")  # whatever was open before does not matter
        out = str(tmp_path / f"tex{run}")  # the second bake goes into another folder: the planet shows it
        assert envfx.cli.main(args[:2] + [out] + args[3:]) == 0, capsys.readouterr().err
        assert f"envfx gas-giant: {verb} planet 'Gas Giant'; saved {level}" in capsys.readouterr().out
        bpy.ops.wm.open_mainfile(filepath=level)
        assert sorted(o.name for o in bpy.data.objects) == ["Gas Giant", "Rock"]
        assert api.scene().frame_end == 77
        images = [i for i in bpy.data.images if i.users]
        assert [i.name for i in images] == ["Gas Giant Texture"]  # replaced, not "Gas Giant Texture.001"
        assert os.path.samefile(bpy.path.abspath(images[0].filepath), os.path.join(out, "gasgiant_equirect.png"))
    (tmp_path / "folder.blend").mkdir()
    assert envfx.cli.main(args[:-1] + [str(tmp_path / "folder.blend")]) == 2
    assert "is not a file" in capsys.readouterr().err


def test_rebake_says_which_files_of_the_previous_bake_it_removed(envfx, tmp_path, capfd):
    """The CLI and the operator name the previous bake's files they removed (its frames and faces that the new
    bake does not write); the planet then shows the new bake, and the user's own files stay."""
    gg = envfx.core.gasgiant
    out = tmp_path / "out"
    args = ["gas-giant", "--out", str(out), "--particles", "2000", "--iterations", "2", "--equirect", "128",
            "--cubemap", "64", "--field", "16", "--threads", "1", "--frame-iterations", "1"]
    assert envfx.cli.main(args + ["--frames", "3"]) == 0
    (out / "notes.txt").write_text("mine")
    capfd.readouterr()
    assert envfx.cli.main(args + ["--cube-layout", "gltf"]) == 0
    text = capfd.readouterr().out
    assert "envfx gas-giant: removed 24 file(s) of the previous bake in this folder that this bake does not " \
           "write: gasgiant_equirect_0001.png, gasgiant_equirect_0002.png, gasgiant_equirect_0003.png," in text
    still = gg.GasGiantParams(cube_layout="GLTF")
    assert sorted(os.listdir(out)) == sorted(["gasgiant.json", "notes.txt", *gg.output_names(still, None).values()])
    s = _small(api.envfx().gasgiant, out, particles=2000, iterations=2, field_size="16",
               cubemap_size="64", equirect_width="128", frames=2, frame_iterations=1)
    capfd.readouterr()
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    assert "removed 8 file(s) of the previous bake in this folder that this bake does not write: " \
           "gasgiant_equirect.png, gasgiant_flow.png, gasgiant_negx.png," in capfd.readouterr().out
    names = gg.all_output_names(envfx.operators.gasgiant.params_from_settings(s))
    assert sorted(os.listdir(out)) == sorted(["gasgiant.json", "notes.txt", *names])
    image = _image(_planet_texture())
    assert image.source == "SEQUENCE" and os.path.basename(image.filepath) == "gasgiant_equirect_0001.png"


@pytest.mark.parametrize("args, msg", [
    (["--particles", "0"], "positive number of particles"),
    (["--particles", "-3"], "positive number of particles"),
    (["--iterations", "0"], "positive number of iterations"),
    (["--cubemap", "1000"], "Cube map size 1000 is not supported"),
    (["--equirect", "3000"], "Equirectangular width 3000 is not supported"),
    (["--field", "100"], "Velocity field size 100 is not supported"),
    (["--palette", "/nonexistent/pal.png"], "does not exist"),
    (["--particles", "150000000"], "particles need about"),
    # (with a bad option checked later, so that a run without the limit ends at once instead of baking)
    (["--frames", "1048575", "--octaves", "13"], "Frames 1048575: at most 1048574 (Blender's last frame"),
])
def test_cli_bad_input(envfx, tmp_path, capsys, args, msg, monkeypatch):
    monkeypatch.setattr(envfx.core.gasgiant, "available_memory", lambda: 2 * 2**30)
    out = tmp_path / "never"
    assert envfx.cli.main(["gas-giant", "--out", str(out)] + args) == 2
    assert msg in capsys.readouterr().err
    assert not out.exists()


def _float_options(envfx):
    sub = next(a for a in envfx.cli.build_parser()._actions if a.dest == "command").choices["gas-giant"]
    return sorted(a.option_strings[0] for a in sub._actions if a.type is float and a.nargs is None)


def test_cli_every_float_option_is_one_the_check_knows(envfx):
    assert len(_float_options(envfx)) == 20


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_cli_non_finite_numbers_exit_2_naming_the_option(envfx, tmp_path, capsys, value):
    """Every float option given nan or inf: exit 2 naming that option and what to use (before: a traceback from
    lost particles, or exit 0 with black images)."""
    out = tmp_path / "never"
    for option in _float_options(envfx):
        argv = ["gas-giant", "--out", str(out), "--particles", "10", "--vortices", "2", f"{option}={value}"]
        assert envfx.cli.main(argv) == 2, option
        err = capsys.readouterr().err
        assert f"error: {option} {value}: use " in err, err
    for colour in (["nan", "1", "1"], ["5", "-3", "1"]):
        argv = ["gas-giant", "--out", str(out), "--particles", "10", "--cloud-mode", "--cloud-color", *colour]
        assert envfx.cli.main(argv) == 2
        assert "--cloud-color " in capsys.readouterr().err
    assert not out.exists()


def test_cli_out_below_a_file_and_exr_cube_palette_name_the_real_problem(envfx, tmp_path, capsys):
    """--out notes.txt/planet names the file in the way (before: "cannot be written", which reads like a permission
    problem); --cubemap-palette of a bake that wrote only EXR faces says the palette reads PNG faces and how to bake
    them (before: "Palette image .../gasgiant_px.png does not exist", for a folder given as the palette)."""
    (tmp_path / "notes.txt").write_text("x")
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "notes.txt" / "planet"), "--particles", "10"]) == 2
    assert f"part of its path, {str(tmp_path / 'notes.txt')!r}, is a file, not a folder" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["notes.txt"]
    small = ["--particles", "2000", "--iterations", "2", "--cubemap", "64", "--equirect", "0", "--field", "16",
             "--threads", "1"]
    for fmt in ("exr", "png_exr"):
        assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / fmt), "--format", fmt, *small]) == 0
    capsys.readouterr()
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "never"), "--cubemap-palette", str(tmp_path / "exr"),
                           *small]) == 2
    err = capsys.readouterr().err
    assert "holds gasgiant_px.exr but not gasgiant_px.png: the cube-map palette reads PNG faces" in err
    assert "bake that folder again with --format png or png_exr" in err
    assert not (tmp_path / "never").exists()
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "ok"), "--cubemap-palette",
                           str(tmp_path / "png_exr"), *small]) == 0  # the PNG faces of a png_exr bake are read


def test_panel_draws(envfx):
    """The panel's draw() runs on the scene's settings (with a stand-in layout: no UI in background mode)."""
    shown = []

    class Layout:
        def __getattr__(self, name):
            return lambda *a, **k: self

        def __setattr__(self, name, value):
            pass

        def prop(self, data, name, **kw):
            assert name in data.bl_rna.properties, name  # every drawn setting exists
            shown.append(name)
            return self

    panel_cls = envfx.panels.gasgiant.VIEW3D_PT_envfx_gasgiant
    stand_in = type("P", (), {"layout": Layout()})()
    for source in ("RAMP", "PALETTE", "CUBEMAP"):
        api.envfx().gasgiant.color_source = source
        panel_cls.draw(stand_in, bpy.context)
    assert {"palette_path", "ramp_color_1", "particles", "output_dir", "frames", "vortices", "vertical_bands",
            "cloud_mode", "cloud_color", "cloud_noise", "hot_pink", "file_format", "field_interval",
            "save_field_path", "load_field_path", "vortex_band_threshold", "palette_cube_dir",
            "opacity_start"} <= set(shown)


def _pixels(image):
    w, h = image.size
    buf = np.empty(w * h * image.channels, np.float32)
    image.pixels.foreach_get(buf)
    return buf.reshape(h, w, image.channels)[::-1]  # row 0 at the top


def test_exr_output_read_back_by_blender(envfx, tmp_path):
    gg = envfx.core.gasgiant
    colour = envfx.core.colour
    s = _small(api.envfx().gasgiant, tmp_path / "x", file_format="PNG_EXR", make_planet=False)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    params = envfx.operators.gasgiant.params_from_settings(s)
    with gg.Simulation(params) as sim:
        sim.step(params.iterations)
        face = np.array(sim.face_rgb(4))
        eq = sim.equirect()
        flow = sim.flow_velocity(256)  # the float EXR holds the real velocities (radians per frame)
    for name, expected in (("gasgiant_pz.exr", colour.srgb_to_linear(face)), ("gasgiant_equirect.exr",
                                                                           colour.srgb_to_linear(eq)),
                           ("gasgiant_flow.exr", flow)):
        image = bpy.data.images.load(str(tmp_path / "x" / name))
        try:
            assert image.file_format == "OPEN_EXR" and image.is_float
            assert tuple(image.size) == (expected.shape[1], expected.shape[0])
            np.testing.assert_allclose(_pixels(image)[..., :3], expected, rtol=1e-5, atol=1e-6)
        finally:
            bpy.data.images.remove(image)


def test_cloud_mode_vertical_bands_planet_is_transparent_where_clear(envfx, tmp_path):
    _small(api.envfx().gasgiant, tmp_path / "c", cloud_mode=True, vertical_bands=True, iterations=40,
           file_format="EXR")
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    names = sorted(os.listdir(tmp_path / "c"))
    assert "gasgiant_equirect.exr" in names and not [n for n in names if n.endswith(".png")]
    mat = _planet_material()
    tex = _planet_texture(mat)
    bsdf = api.node_tree(mat).nodes["Planet BSDF"]
    links = bsdf.inputs["Alpha"].links
    assert links is not None and links[0].from_node == tex and mat.surface_render_method == "BLENDED"
    assert not bpy.data.objects["Gas Giant"].visible_shadow
    px = _pixels(_image(tex))
    assert _image(tex).channels == 4 and px[..., 3].min() < 0.2 and px[..., 3].max() > 0.5
    # baking again without clouds makes the planet opaque again
    api.envfx().gasgiant.cloud_mode = False
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    assert not bsdf.inputs["Alpha"].links and mat.surface_render_method == "DITHERED"
    assert bpy.data.objects["Gas Giant"].visible_shadow


def test_cloud_planet_from_the_exr_looks_like_the_one_from_the_png(envfx, tmp_path):
    """The cloud EXR holds premultiplied colour and the planet's image reads it so (alpha mode Premultiplied):
    Blender's pixels of it (what the viewport and Eevee show) are the PNG's colour x alpha in linear light, and a
    Cycles render of the EXR cloud planet is the PNG one (before: Cycles read the EXR's straight colour as
    premultiplied, over-bright clouds)."""
    colour = envfx.core.colour
    scene = api.scene()
    s = _small(api.envfx(scene).gasgiant, tmp_path, particles=30_000, iterations=30, field_size="16", cubemap_size="64",
               equirect_width="128", cloud_mode=True, cloud_color=(0.2, 0.4, 0.8))
    _planet_shot(scene, 48)
    api.set_engine(scene, "CYCLES")
    cycles: Any = scene.cycles  # Cycles' own settings (an add-on's PropertyGroup, unknown to the stubs)
    cycles.device, cycles.samples, cycles.seed = "CPU", 4, 0
    pixels, shots = {}, {}
    for fmt in ("PNG", "EXR"):
        s.file_format, s.output_dir = fmt, str(tmp_path / fmt)
        assert api.ops.gasgiant_bake() == {"FINISHED"}
        image = bpy.data.images["Gas Giant Texture"]
        assert image.alpha_mode == {"PNG": "STRAIGHT", "EXR": "PREMUL"}[fmt]
        pixels[fmt] = _pixels(image)
        scene.render.filepath = str(tmp_path / f"{fmt}.png")
        bpy.ops.render.render(write_still=True)
        shots[fmt] = np.asarray(Image.open(tmp_path / f"{fmt}.png").convert("RGB")).astype(float)
    straight = pixels["PNG"]  # an 8-bit image's pixels: its stored sRGB values, straight alpha
    cover = straight[..., 3:]
    assert ((cover > 0.1) & (cover < 0.9)).mean() > 0.1  # partly covered texels, where the alpha mode matters
    np.testing.assert_allclose(pixels["EXR"], np.concatenate([colour.srgb_to_linear(straight[..., :3]) * cover,
                                                              cover], -1), atol=1 / 255)
    assert shots["PNG"][..., 2].mean() > 20  # blue clouds in the picture
    assert np.abs(shots["EXR"] - shots["PNG"]).mean() < 1.5


def count_field_reads(envfx, monkeypatch):
    """A list that gets one entry per velocity field file read."""
    gg, reads = envfx.core.gasgiant, []
    real = gg.load_fields

    def counting(path, params):
        reads.append(path)
        return real(path, params)

    monkeypatch.setattr(gg.field_files, "load_fields", counting)
    return reads


def test_velocity_field_save_load_and_bad_files(envfx, tmp_path, monkeypatch):
    field = tmp_path / "fields" / "flow.npz"
    field.parent.mkdir()
    s = _small(api.envfx().gasgiant, tmp_path / "a", save_field_path=str(field), make_planet=False)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    assert os.listdir(field.parent) == ["flow.npz"]
    s.save_field_path = ""
    s.load_field_path = str(field)
    s.output_dir = str(tmp_path / "b")
    reads = count_field_reads(envfx, monkeypatch)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    assert reads == [str(field)]  # checked before the bake starts, and not read again by the bake
    monkeypatch.undo()
    a = np.asarray(Image.open(tmp_path / "a" / "gasgiant_equirect.png"))
    np.testing.assert_array_equal(a, np.asarray(Image.open(tmp_path / "b" / "gasgiant_equirect.png")))
    s.output_dir = str(tmp_path / "c")
    s.bands = 9.0
    _expect_error(tmp_path, tmp_path, r"other settings \(bands: 6.0 in the file, 9.0 now\)")
    s.bands = 6.0
    s.field_size = "128"
    _expect_error(tmp_path, tmp_path, "holds a 64-per-face field but the settings ask for 128")
    s.field_size = "64"
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"garbage" * 50)
    s.load_field_path = str(bad)
    _expect_error(tmp_path, tmp_path, "cannot be read")
    s.load_field_path = str(tmp_path / "missing.npz")
    _expect_error(tmp_path, tmp_path, "does not exist")
    s.load_field_path = "//rel.npz"
    _expect_error(tmp_path, tmp_path, "not saved yet")
    s.load_field_path = ""
    s.save_field_path = str(tmp_path / "field.txt")
    _expect_error(tmp_path, tmp_path, "ending in .npz")
    assert bad.read_bytes() == b"garbage" * 50 and not (tmp_path / "c").exists()


def test_cli_gas_giant_new_options(envfx, tmp_path, capsys, monkeypatch):
    out = tmp_path / "cli"
    field = tmp_path / "f.npz"
    args = ["gas-giant", "--out", str(out), "--particles", "20000", "--iterations", "8", "--equirect", "256",
            "--cubemap", "128", "--field", "64", "--threads", "1", "--vertical-bands", "--cloud-mode",
            "--cloud-color", "1", "0.5", "0.5", "--format", "png_exr", "--frames", "3", "--frame-iterations", "2",
            "--field-interval", "2"]
    assert envfx.cli.main(args + ["--save-field", str(field)]) == 0, capsys.readouterr().err
    eq = np.asarray(Image.open(out / "gasgiant_equirect_0003.png"))
    assert eq.shape == (128, 256, 4) and np.all(eq[..., 1] == 128)
    assert (out / "gasgiant_flow_0002.exr").exists()
    with np.load(field) as z:
        assert z["times"].tolist() == pytest.approx([0.0, 0.1])  # key frames 1 and 3
    reads = count_field_reads(envfx, monkeypatch)
    assert envfx.cli.main(args[:2] + [str(tmp_path / "cli2")] + args[3:] + ["--load-field", str(field)]) == 0
    assert len(reads) == 1  # the field file is read once
    monkeypatch.undo()
    np.testing.assert_array_equal(eq, np.asarray(Image.open(tmp_path / "cli2" / "gasgiant_equirect_0003.png")))
    capsys.readouterr()
    for extra, msg in ((["--load-field", str(tmp_path / "nope.npz")], "does not exist"),
                       (["--field-interval", "0"], "Field interval 0"),
                       (["--cloud-noise", "2"], "--cloud-noise 2.0: use 0 to 1"),
                       (["--save-field", str(tmp_path / "x.bin")], "ending in .npz")):
        assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "never"), "--particles", "10"] + extra) == 2
        assert msg in capsys.readouterr().err
        assert not (tmp_path / "never").exists()


def test_cube_map_palette_from_an_earlier_bake_and_random_look(envfx, tmp_path):
    s = _small(api.envfx().gasgiant, tmp_path / "first", make_planet=False, iterations=10)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    s.color_source = "CUBEMAP"
    s.palette_cube_dir = str(tmp_path / "first")
    s.output_dir = str(tmp_path / "second")
    params = envfx.operators.gasgiant.prepare(api.scene())[0]
    first = np.stack([np.asarray(Image.open(tmp_path / "first" / f"gasgiant_{f}.png")) for f in
                      envfx.core.gasgiant.FACES]).astype(np.float32) / 255
    np.testing.assert_allclose(params.palette_cube, first, atol=1e-6)  # the faces, in the bake's own order
    assert not [i for i in bpy.data.images if i.name.startswith("gasgiant_")]  # no image data-blocks kept
    (tmp_path / "first" / "gasgiant_nz.png").unlink()
    _expect_error(tmp_path, tmp_path / "second", "gasgiant_nz.png' does not exist")
    s.palette_cube_dir = ""
    _expect_error(tmp_path, tmp_path / "second", "No cube map folder")
    s.color_source = "RAMP"
    s.seed = 7
    assert api.ops.gasgiant_randomize() == {"FINISHED"}
    look = envfx.core.gasgiant.random_look(7)
    assert s.vertical_bands and s.bands == pytest.approx(look["bands"]) and s.w_offset == pytest.approx(
        look["w_offset"])


def test_cli_random_cubemap_palette_and_vortex_threshold(envfx, tmp_path, capsys):
    args = ["gas-giant", "--out", str(tmp_path / "r"), "--particles", "10000", "--iterations", "5", "--equirect",
            "256", "--cubemap", "128", "--field", "64", "--threads", "1", "--seed", "5"]
    params = envfx.cli.gas_giant.gasgiant_params(
        envfx.cli.build_parser().parse_args(args + ["--random", "--bands", "3"]))
    look = envfx.core.gasgiant.random_look(5)
    assert params.vertical_bands and params.bands == 3.0 and params.noise_scale == look["noise_scale"]
    assert envfx.cli.main(args + ["--vortices", "4", "--vortex-band-threshold", "0.5", "--opacity-start", "1"]) == 0
    assert envfx.cli.main(args[:2] + [str(tmp_path / "r2")] + args[3:] + ["--cubemap-palette",
                                                                          str(tmp_path / "r")]) == 0
    capsys.readouterr()
    for extra, msg in ((["--cubemap-palette", str(tmp_path / "none")], "does not exist"),
                       (["--vortex-band-threshold", "0"], "--vortex-band-threshold 0.0: use 0.05 to 1"),
                       (["--opacity-start", "2"], "--opacity-start 2.0: use 0 to 1")):
        assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "never"), "--particles", "10"] + extra) == 2
        assert msg in capsys.readouterr().err
        assert not (tmp_path / "never").exists()


def test_engine_cube_layout_flow_scale_and_json_from_operator_and_cli(envfx, tmp_path, capsys):
    """The operator and the CLI write engine cube faces and gasgiant.json; Blender reads the flow PNG back as
    non-colour data and the JSON's formula turns it into the velocities of the float EXR."""
    gg = envfx.core.gasgiant
    s = _small(api.envfx().gasgiant, tmp_path / "e", make_planet=False, file_format="PNG_EXR",
               cube_layout="GLTF", flow_scale=0.02)
    scale = s.flow_scale  # a float property: 0.02 in single precision
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    names = sorted(os.listdir(tmp_path / "e"))
    assert "gasgiant.json" in names and "gasgiant_posy.png" in names and "gasgiant_px.png" not in names
    meta = json.loads((tmp_path / "e" / "gasgiant.json").read_text())
    assert meta["cube_layout"] == "gltf" and meta["flow"]["scale"] == scale
    faces = [i for i in meta["images"] if i["layout"] == "cube face" and i["file"].endswith(".png")]
    assert [(i["file"], i["slot"], i["blender_face"]) for i in faces][2:4] == [
        ("gasgiant_posy.png", "+Y", "pz"), ("gasgiant_negy.png", "-Y", "nz")]  # Blender up -> engine +Y
    png = next(i for i in meta["images"] if i["file"] == "gasgiant_flow.png")
    image = bpy.data.images.load(str(tmp_path / "e" / png["file"]))
    api.set_colorspace(image, "Non-Color")
    exr = bpy.data.images.load(str(tmp_path / "e" / "gasgiant_flow.exr"))
    try:
        decoded = gg.decode_flow(_pixels(image)[..., :3], meta["flow"]["scale"])
        real = _pixels(exr)[..., :3]
    finally:
        bpy.data.images.remove(image)
        bpy.data.images.remove(exr)
    inside = real[..., 2] < scale * 0.98
    assert inside.mean() > 0.2 and (~inside).any()  # this scale clamps the fastest texels
    np.testing.assert_allclose(decoded[inside], real[inside], atol=scale / 255 * 1.01 + 1e-7)
    assert meta["flow"]["clamped_texels"] == int(np.count_nonzero(real[..., 2] > scale))
    # the CLI flags do the same
    args = ["gas-giant", "--out", str(tmp_path / "cli"), "--particles", "20000", "--iterations", "4", "--equirect",
            "256", "--cubemap", "64", "--field", "64", "--threads", "1", "--cube-layout", "unity",
            "--flow-scale", "0.01"]
    assert envfx.cli.main(args) == 0, capsys.readouterr().err
    meta = json.loads((tmp_path / "cli" / "gasgiant.json").read_text())
    assert meta["cube_layout"] == "unity" and meta["flow"]["scale"] == 0.01
    assert (tmp_path / "cli" / "gasgiant_negz.png").exists()
    capsys.readouterr()
    assert envfx.cli.main(args[:3] + ["--flow-scale", "-1"]) == 2
    assert "--flow-scale -1.0: use 0 to" in capsys.readouterr().err


def test_cli_bake_killed_with_sigterm_writes_nothing(tmp_path):
    """SIGTERM (a farm pre-empting the job) mid-bake cancels the gas giant like Ctrl-C: exit 1, its temporary
    folder removed, no images (before: the process died with its staging folder left in the output folder)."""
    out = tmp_path / "planet"
    script = os.path.join(os.path.dirname(__file__), "cli_in_subprocess.py")
    proc = subprocess.Popen([sys.executable, script, "gas-giant", "--out", str(out), "--particles", "20000",
                             "--iterations", "1000000", "--threads", "1"],
                            env=dict(os.environ, HOME=str(tmp_path)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        seen = []
        assert proc.stdout is not None
        for line in proc.stdout:  # the bake has started once its progress line is out
            seen.append(line)
            if "Gas giant bake:" in line:
                break
        assert proc.poll() is None, "".join(seen)[-2000:]
        proc.send_signal(signal.SIGTERM)
        log = "".join(seen) + proc.communicate(timeout=120)[0]
    finally:
        proc.kill()
    assert proc.returncode == 1, log[-2000:]
    assert "Gas giant bake cancelled; nothing was written" in log
    assert not out.exists() or list(out.iterdir()) == []


def test_cube_map_palette_from_an_engine_layout_bake(envfx, tmp_path, capsys):
    """--cubemap-palette reads the faces whichever layout the folder holds (gasgiant.json says which): a palette
    read from a GLTF or Unity bake is the one read from the Blender bake of the same settings, texel for texel."""
    small = ["--particles", "3000", "--iterations", "3", "--cubemap", "64", "--equirect", "0", "--field", "32",
             "--threads", "1", "--seed", "4"]
    palettes = {}
    for layout in ("blender", "gltf", "unity"):
        assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / layout), "--cube-layout", layout, *small]) == 0
        palettes[layout] = envfx.operators.gasgiant.load_palette_cube(str(tmp_path / layout))
    assert (tmp_path / "gltf" / "gasgiant_posx.png").exists() and not (tmp_path / "gltf" / "gasgiant_px.png").exists()
    assert palettes["blender"].std() > 0.01  # a real picture, not a flat colour that any orientation matches
    np.testing.assert_array_equal(palettes["gltf"], palettes["blender"])
    np.testing.assert_array_equal(palettes["unity"], palettes["blender"])
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "again"), "--cubemap-palette",
                           str(tmp_path / "gltf"), *small]) == 0
    (tmp_path / "gltf" / "gasgiant.json").unlink()  # without it, GLTF and Unity faces cannot be told apart
    capsys.readouterr()
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "never"), "--cubemap-palette",
                           str(tmp_path / "gltf"), *small]) == 2
    assert "holds engine-layout cube faces (gasgiant_posx.png" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_panel_estimate_at_the_largest_frames_lists_no_key_frames(envfx, recording_layout, monkeypatch):
    """Frames stops at Blender's last frame, and the panel's memory estimate, drawn on every redraw, counts the
    key frames without listing them (a set of every key frame froze the sidebar for large Frames)."""
    s = api.envfx().gasgiant
    s.frames = 10**9
    assert s.frames == envfx.core.gasgiant.MAX_FRAMES
    s.field_interval = 1
    s.save_field_path = "/tmp/field.npz"

    def listing(*_args):
        raise AssertionError("the panel listed the key frames")

    monkeypatch.setattr(envfx.core.gasgiant.params, "field_times", listing)
    log = []
    panel = type("P", (), {"layout": recording_layout(log)})()
    tracemalloc.start()
    try:
        envfx.panels.gasgiant.VIEW3D_PT_envfx_gasgiant.draw(panel, bpy.context)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
    assert any(entry.startswith("label:Needs about") for entry in log), log


def test_ramp_and_cloud_swatches_are_the_colours_baked(envfx, tmp_path):
    """The ramp and cloud colours are sRGB values (COLOR_GAMMA), as the bake reads them: a swatch the colour
    picker shows as mid grey (hex 808080) is 128 in the PNG. Before, they were scene-linear swatches baked as
    sRGB numbers: that grey (linear 0.214) came out as 55, every colour darker than its swatch."""
    s = _small(api.envfx().gasgiant, tmp_path, make_planet=False)
    props = type(s).bl_rna.properties
    for name in [f"ramp_color_{i}" for i in range(1, 6)] + ["cloud_color"]:
        assert props[name].subtype == "COLOR_GAMMA", name
    for i in range(1, 6):
        setattr(s, f"ramp_color_{i}", (128 / 255,) * 3)
    s.blur_interval = 0
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    px = np.asarray(Image.open(tmp_path / "gasgiant_equirect.png").convert("RGB"))
    assert abs(float(np.median(px)) - 128) <= 1


def test_the_planet_reads_its_texture_relative_to_the_saved_file(envfx, tmp_path):
    """In a saved file the planet's image is stored relative to it (``//``), as Blender's file browser stores
    paths by default, so the project folder can move; before, it kept the bake's absolute path."""
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "planet.blend"))
    _small(api.envfx().gasgiant, str(tmp_path / "gg"))
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    image = bpy.data.images["Gas Giant Texture"]
    assert image.filepath.startswith("//gg") and image.size[0] > 0


def test_the_settings_group_is_the_settings_table(envfx):
    """Scene.envfx.gasgiant has one property per UI entry of core.gasgiant.SETTINGS (and no other), with its name,
    tooltip, default and limits; params_from_settings hands every parameter on, so a new setting is written once."""
    gg = envfx.core.gasgiant
    s = api.envfx().gasgiant
    props = type(s).bl_rna.properties
    assert [p.identifier for p in props if p.identifier not in ("rna_type", "name")] == \
        [setting.name for setting in gg.UI_SETTINGS]
    kinds = {"INT": "INT", "FLOAT": "FLOAT", "BOOL": "BOOLEAN", "ENUM": "ENUM", "SIZE": "ENUM", "COLOR": "FLOAT",
             "STRING": "STRING", "FILE_PATH": "STRING", "DIR_PATH": "STRING"}
    for setting in gg.UI_SETTINGS:
        prop = props[setting.name]
        assert (prop.type, prop.name, prop.description) == \
            (kinds[setting.ui], setting.label, setting.description), setting.name
        if setting.ui == "COLOR":
            assert tuple(prop.default_array) == pytest.approx(setting.default) and prop.subtype == setting.subtype
        elif setting.ui == "SIZE":
            assert prop.default == str(setting.default)
            assert [int(item.identifier) for item in prop.enum_items] == list(setting.items)
        elif setting.ui == "ENUM":
            assert prop.default == setting.default
            assert [(i.identifier, i.name, i.description) for i in prop.enum_items] == list(setting.items)
        else:
            assert prop.default == pytest.approx(setting.default), setting.name
        for name, attr in (("min", "hard_min"), ("max", "hard_max"), ("soft_min", "soft_min"),
                           ("soft_max", "soft_max")):
            if getattr(setting, name) is not None:
                assert getattr(prop, attr) == pytest.approx(getattr(setting, name)), (setting.name, name)
        if setting.ui in ("FILE_PATH", "DIR_PATH"):
            assert prop.subtype == setting.ui
        elif setting.subtype:
            assert prop.subtype == setting.subtype, setting.name
    ops = envfx.operators.gasgiant
    defaults, params = gg.GasGiantParams(), ops.params_from_settings(s)
    for setting in gg.PARAM_SETTINGS:  # the same defaults (Blender keeps floats as float32)
        if setting.compare:
            got, want = getattr(params, setting.name), getattr(defaults, setting.name)
            if setting.name == "ramp":  # ((position, colour), ...)
                got, want = [(t, *c) for t, c in got], [(t, *c) for t, c in want]
            assert np.asarray(got) == pytest.approx(np.asarray(want)) if setting.type != "str" else got == want, \
                setting.name
    changed = {}
    for setting in gg.PARAM_SETTINGS:  # every parameter with a property reaches the bake
        if setting.ui in ("INT", "FLOAT"):
            value = setting.default + 1 if setting.max is None or setting.default + 1 <= setting.max else setting.min
        elif setting.ui == "BOOL":
            value = not setting.default
        elif setting.ui in ("ENUM", "SIZE"):
            value = str(setting.items[-1][0] if setting.ui == "ENUM" else setting.items[-1])
        elif setting.ui == "COLOR":
            value = (0.25, 0.5, 0.75)
        else:
            continue
        setattr(s, setting.name, value)
        changed[setting.name] = setting.from_ui(getattr(s, setting.name))
    assert len(changed) == len([setting for setting in gg.PARAM_SETTINGS if setting.ui])
    params = ops.params_from_settings(s)
    for name, value in changed.items():
        assert getattr(params, name) == pytest.approx(value) and getattr(params, name) != getattr(
            gg.GasGiantParams(), name), name


def test_the_command_line_options_are_the_tables(envfx):
    """Every option core.gasgiant.cli_options() gives is one the gas-giant command has, taking the same values."""
    sub = next(a for a in envfx.cli.build_parser()._actions if a.dest == "command").choices["gas-giant"]
    actions = {a.option_strings[0]: a for a in sub._actions if a.option_strings}
    for option in envfx.core.gasgiant.cli_options():
        action = actions[option.flag]
        assert action.dest == option.dest, option.flag
        kw = option.kwargs
        flag = kw.get("action") == "store_true"
        assert (action.type, action.nargs, action.choices, action.help, action.default, action.const) == \
            (kw.get("type"), 0 if flag else kw.get("nargs"), kw.get("choices"), kw.get("help"), kw.get("default"),
             True if flag else None), option.flag


def test_gas_giant_help_shows_every_default(envfx, capsys):
    """Issue #29 part 5: `envfx gas-giant --help` shows the default of every option, the settings table's among
    them (8,000,000 particles and 1000 iterations are not a surprise any more)."""
    assert envfx.cli.main(["gas-giant", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    defaults = envfx.core.gasgiant.GasGiantParams()
    for needle in (f"(default: {defaults.particles})", f"(default: {defaults.iterations})", "(default: 512)",
                   "(default: 1024)", "(default: 2048)", "(default: sinusoidal)", "(default: 1 1 1)",
                   "--preview", "(default: off)"):
        assert needle in text, needle
    sub = next(a for a in envfx.cli.build_parser()._actions if a.dest == "command").choices["gas-giant"]
    formatter = sub._get_formatter()
    for action in sub._actions:
        if action.option_strings and action.dest != "help" and not action.required:
            assert "default" in formatter._get_help_string(action), action.option_strings


def test_every_option_of_every_command_shows_its_default(envfx):
    """Every command's --help says, for each option, what happens without it."""
    commands = next(a for a in envfx.cli.build_parser()._actions if a.dest == "command").choices
    for name, sub in commands.items():
        formatter = sub._get_formatter()
        for action in sub._actions:
            if action.option_strings and action.dest != "help" and not action.required:
                assert "default" in formatter._get_help_string(action), (name, action.option_strings)


def test_cli_preview_bakes_reduced_settings_and_says_so_with_an_estimate(envfx, tmp_path, capsys):
    """--preview caps particles, iterations, field and face sizes and frames (never raises one), and the bake runs;
    every bake prints its estimated time first."""
    caps = envfx.core.gasgiant.PREVIEW_CAPS
    args = envfx.cli.build_parser().parse_args(["gas-giant", "--out", str(tmp_path / "p"), "--preview",
                                                "--frames", "3", "--cubemap", "128"])
    params = envfx.cli.gas_giant.gasgiant_params(args)
    assert (params.particles, params.iterations, params.field_size, params.cubemap_size, params.equirect_width,
            params.frames) == (caps["particles"], caps["iterations"], caps["field_size"], 128,
                               caps["equirect_width"], 1)
    full = envfx.core.gasgiant.GasGiantParams()
    assert envfx.core.gasgiant.estimate_seconds(full, cpus=2) == pytest.approx(155.6, rel=0.01)  # 8M x 1000 iterations
    assert envfx.core.gasgiant.estimate_seconds(params, cpus=2) < 1.0
    code = envfx.cli.main(["gas-giant", "--out", str(tmp_path / "p"), "--preview", "--particles", "20000"])
    out = capsys.readouterr().out
    assert code == 0
    assert "preview: 20,000 particles, 100 iterations, field 64, cube faces 256, equirect 512" in out
    assert "about 0 s (an estimate at" in out
    assert (tmp_path / "p" / "gasgiant_equirect.png").exists()


def test_panel_preview_bakes_the_reduced_settings(envfx):
    s = api.envfx().gasgiant
    s.preview = True
    params = envfx.operators.gasgiant.params_from_settings(s)
    caps = envfx.core.gasgiant.PREVIEW_CAPS
    assert (params.particles, params.iterations, params.field_size) == (caps["particles"], caps["iterations"], 64)
    s.preview = False
    assert envfx.operators.gasgiant.params_from_settings(s).particles == 8_000_000
