"""Vegetation look: the "EnvFX Colorize" group renders what the numpy reference says (Eevee and Cycles), per
object or per vertex; the "EnvFX Vegetation" group halves the diffuse where the wind data's A is 0.5; putting
either into a material and taking it out again leaves the material exactly as it was; bad input is refused with
nothing changed."""

import importlib
import math
from typing import Any

import bpy
import numpy as np
import pytest

from tests.blender import api


@pytest.fixture
def veg(envfx):
    class M:
        core = importlib.import_module(envfx.__name__ + ".core.colorize")
        ops = importlib.import_module(envfx.__name__ + ".operators.vegetation")
        nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.colorize")
        bridge = importlib.import_module(envfx.__name__ + ".bridge")
    return M


def eevee_engine():
    return "BLENDER_EEVEE_NEXT" if bpy.app.version < (5, 0, 0) else "BLENDER_EEVEE"


def _empty_scene():
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    scene = api.scene()
    world = scene.world
    assert world is not None, "the factory scene has a world"
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        world.use_nodes = True
    api.socket(api.node_tree(world).nodes["Background"].inputs["Strength"]).default_value = 0.0
    view: Any = scene.view_settings  # its transforms and looks are the colour config's, the stubs list another's
    view.view_transform = "Standard"
    view.look = "None"
    return scene


def _material(name, base=(0.5, 0.5, 0.5, 1.0)):
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = True
    bsdf = api.node_tree(mat).nodes["Principled BSDF"]
    api.socket(bsdf.inputs["Base Color"]).default_value = base
    return mat


def _plane(name, location, size, mat, cuts=0):
    bpy.ops.mesh.primitive_plane_add(size=size, location=location)
    obj = api.active()
    obj.name = name
    if cuts:
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.ops.mesh.subdivide(number_cuts=cuts)
        bpy.ops.object.mode_set(mode="OBJECT")
    api.mesh(obj).materials.append(mat)
    return obj


def _float_image(name, pixels_bottom_first):
    h, w = pixels_bottom_first.shape[:2]
    img = bpy.data.images.new(name, w, h, alpha=True, float_buffer=True)
    api.set_colorspace(img, "Non-Color")
    px = np.ones((h, w, 4), np.float32)
    px[..., :3] = pixels_bottom_first[..., None] if pixels_bottom_first.ndim == 2 else pixels_bottom_first
    api.pixels(img).foreach_set(px.reshape(-1))
    img.pack()
    return img


def _world_data():
    """16 x 16 grey ramp in X with a gentle wave in Y (bottom row first, as Blender stores it)."""
    y, x = np.mgrid[0:16, 0:16].astype(np.float64)
    return (0.05 + 0.9 * x / 15.0 * (0.8 + 0.2 * np.cos(y / 15.0 * math.pi))).astype(np.float32)


def _setup_colorize(veg, scene):
    s = scene.envfx.vegetation
    atlas = veg.core.set_from_colours(np.array([[0.05, 0.3, 0.02], [0.5, 0.45, 0.05], [0.7, 0.2, 0.1]]), count=2,
                                      band_spread=0.3, ecotope_shift=0.3)
    s.set_count = 2
    world = _world_data()
    s.world_data = _float_image("World", world)
    s.region_min = (-10.0, -10.0)
    s.region_size = 20.0
    s.ecotope = 1
    # the set as the scene would make it, with these exact texels
    s.colorize_set = _float_image("Set", atlas[::-1, :, :3])
    return atlas, world


def _render(scene, path, engine, res=64):
    api.set_engine(scene, engine)
    if engine == "CYCLES":
        scene.cycles.samples = 1
        scene.cycles.use_denoising = False
        scene.cycles.device = "CPU"
        scene.render.filter_size = 0.01
    else:
        scene.eevee.taa_render_samples = 1
    scene.render.resolution_x = scene.render.resolution_y = res
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "OPEN_EXR"
    scene.render.image_settings.color_depth = "32"
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(path)
    px = np.empty(res * res * 4, np.float32)
    api.pixels(img).foreach_get(px)
    bpy.data.images.remove(img)
    return px.reshape(res, res, 4)  # bottom row first


def _top_camera(scene, size):
    cam_data = bpy.data.cameras.new("Top")
    cam_data.type = "ORTHO"
    cam_data.ortho_scale = size
    cam = bpy.data.objects.new("Top", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (0.0, 0.0, 10.0)
    scene.camera = cam


def _emit_colorize(mat):
    """Show the colorize group's colour as it is (an emission of strength 1), so the render reads it."""
    nt = api.node_tree(mat)
    group = next(n for n in nt.nodes if n.name == "EnvFX Colorize")
    em = nt.nodes.new("ShaderNodeEmission")
    nt.links.new(group.outputs["Color"], em.inputs["Color"])
    out = api.of(bpy.types.ShaderNodeOutputMaterial, api.of(bpy.types.ShaderNodeTree, nt).get_output_node("ALL"))
    nt.links.new(em.outputs["Emission"], out.inputs["Surface"])


def _pixel_world(res, size, i, j):
    """World X, Y of the centre of pixel (row i from the bottom, column j) of the top camera."""
    return (-size / 2 + (j + 0.5) / res * size, -size / 2 + (i + 0.5) / res * size)


@pytest.mark.parametrize("engine", ["EEVEE", "CYCLES"])
def test_colorize_render_matches_the_numpy_reference(veg, tmp_path, engine):
    scene = _empty_scene()
    atlas, world = _setup_colorize(veg, scene)
    albedo = (0.42, 0.55, 0.5, 1.0)
    mat = _material("Leaves", albedo)
    mat_half = _material("Masked", (0.3, 0.6, 0.7, 1.0))
    size, res = 20.0, 64
    objs = []
    # four bushes (one colour each, at their origin) in different places and bands; one with a half mask
    for k, (x, y, band) in enumerate([(-6, -6, 0), (6, -6, 3), (-6, 6, 7), (6, 6, 5)]):
        obj = _plane(f"Bush{k}", (x, y, 0), 4.0, mat_half if k == 3 else mat)
        api.envfx(obj).colorize_band = band
        objs.append(obj)
    grass = _plane("Grass", (0, 0, 0), 6.0, mat, cuts=8)
    api.envfx(grass).colorize_band = 2
    api.envfx(grass).colorize_per_vertex = True
    for obj in bpy.data.objects:
        obj.select_set(obj.type == "MESH")
    result = veg.ops.add_colorize(scene, [o for o in bpy.data.objects if o.type == "MESH"])
    assert sorted(result.changed) == sorted(o.name for o in objs + [grass])
    group = next(n for n in api.node_tree(mat_half).nodes if n.name == "EnvFX Colorize")
    api.socket(group.inputs["Mask"]).default_value = 0.5
    _emit_colorize(mat)
    _emit_colorize(mat_half)
    _top_camera(scene, size)
    px = _render(scene, str(tmp_path / "colorize.exr"), eevee_engine() if engine == "EEVEE" else "CYCLES", res)
    region = veg.core.Region(-10.0, -10.0, 20.0)
    # per object: every pixel of a bush is one colour, the reference at its origin
    for k, obj in enumerate(objs):
        x, y = obj.location.x, obj.location.y
        j0, i0 = int((x + size / 2 - 1.5) / size * res), int((y + size / 2 - 1.5) / size * res)
        j1, i1 = int((x + size / 2 + 1.5) / size * res), int((y + size / 2 + 1.5) / size * res)
        patch = px[i0:i1, j0:j1, :3].reshape(-1, 3)
        base = mat_half if k == 3 else mat
        a = np.array(api.socket(api.node_tree(base).nodes["Principled BSDF"].inputs["Base Color"]).default_value[:3])
        expect = veg.core.colorize(np.array([[x, y, 0.0]]), a[None], atlas, world, region,
                                   band=obj.envfx.colorize_band, mask=0.5 if k == 3 else 1.0, ecotope=1)[0]
        assert np.abs(patch - expect).max() <= 2 / 255, (obj.name, patch.min(0), patch.max(0), expect)
    # bands differ: the four bushes are four colours
    centres = [px[int((o.location.y + 10) / 20 * res), int((o.location.x + 10) / 20 * res), :3] for o in objs]
    assert min(np.abs(a - b).max() for i, a in enumerate(centres) for b in centres[i + 1:]) > 0.02
    if engine != "EEVEE":
        return
    # grass: each point where it stands, so its pixels vary across it and match the reference there
    a = np.array(albedo[:3])
    rows, cols = np.mgrid[int(res * 7.5 / 20):int(res * 12.5 / 20), int(res * 7.5 / 20):int(res * 12.5 / 20)]
    rows, cols = rows.reshape(-1), cols.reshape(-1)
    xy = np.array([_pixel_world(res, size, i, j) for i, j in zip(rows, cols)])
    pos = np.concatenate([xy, np.zeros((len(xy), 1))], axis=1)
    expect = veg.core.colorize(pos, np.repeat(a[None], len(pos), 0), atlas, world, region, band=2, ecotope=1)
    got = px[rows, cols, :3]
    assert np.abs(got - expect).max() <= 2 / 255
    assert np.ptp(got[:, 0]) > 0.05, "grass must vary across the field"


def _material_state(mat):
    """Everything a user sees of a material's nodes: nodes with their values, and the links."""
    nt = api.node_tree(mat)
    nodes = {}
    for n in nt.nodes:
        values = []
        for s in n.inputs:
            v = getattr(s, "default_value", None)
            values.append((s.identifier, tuple(v) if v is not None and hasattr(v, "__len__") else v, s.is_linked))
        nodes[n.name] = (n.bl_idname, n.label, (n.location.x, n.location.y), tuple(values),
                         getattr(getattr(n, "image", None), "name", None))
    links = sorted((api.of(bpy.types.Node, lk.from_node).name, api.of(bpy.types.NodeSocket, lk.from_socket).identifier,
                    api.of(bpy.types.Node, lk.to_node).name, api.of(bpy.types.NodeSocket, lk.to_socket).identifier)
                   for lk in nt.links)
    return nodes, links


def _textured_material(name):
    """A leaf material as packs make them: an albedo image, a normal map, an alpha-clip mix."""
    mat = _material(name)
    nt = api.node_tree(mat)
    bsdf = nt.nodes["Principled BSDF"]
    img = bpy.data.images.new(name + " albedo", 8, 8)
    px = np.random.default_rng(3).random((8, 8, 4)).astype(np.float32)
    px[..., 3] = 1.0
    api.pixels(img).foreach_set(px.reshape(-1))
    tex = api.of(bpy.types.ShaderNodeTexImage, nt.nodes.new("ShaderNodeTexImage"))
    tex.image = img
    nt.links.new(tex.outputs["Color"], bsdf.inputs["Base Color"])
    nmap = nt.nodes.new("ShaderNodeNormalMap")
    nt.links.new(nmap.outputs["Normal"], bsdf.inputs["Normal"])
    mix = nt.nodes.new("ShaderNodeMixShader")
    tr = nt.nodes.new("ShaderNodeBsdfTransparent")
    out = api.of(bpy.types.ShaderNodeOutputMaterial, api.of(bpy.types.ShaderNodeTree, nt).get_output_node("ALL"))
    nt.links.new(tex.outputs["Alpha"], mix.inputs["Fac"])
    nt.links.new(tr.outputs[0], mix.inputs[1])
    nt.links.new(bsdf.outputs[0], mix.inputs[2])
    nt.links.new(mix.outputs[0], out.inputs["Surface"])
    return mat


def image_node(mat):
    """The material's image node "Image Texture"."""
    return api.of(bpy.types.ShaderNodeTexImage, api.node_tree(mat).nodes["Image Texture"])


def _wind_plane(veg, name, location, mat, a=1.0, r=0.5, category="TREE"):
    obj = _plane(name, location, 2.0, mat)
    n = len(api.mesh(obj).vertices)
    rgba = np.tile(np.array([r, 0.3, 0.5, a], np.float32), (n, 1))
    veg.bridge.write_point_attribute(obj.data, "EnvFX_Wind", "FLOAT_COLOR", rgba)
    api.envfx(obj).wind.category = category
    return obj


def test_adding_and_removing_restores_the_material_exactly(veg):
    scene = _empty_scene()
    _setup_colorize(veg, scene)
    mat = _textured_material("Leaf")
    before = _material_state(mat)
    obj = _wind_plane(veg, "Tree", (0, 0, 0), mat)
    original_image = image_node(mat).image
    assert original_image is not None
    original_pixels = np.array(api.pixels(original_image)[:])

    r = veg.ops.add_colorize(scene, [obj])
    assert r.changed == ["Tree"]
    assert _material_state(mat) != before
    neutral = veg.ops.neutralise_albedo(mat)
    assert image_node(mat).image == neutral
    assert np.array_equal(np.array(api.pixels(original_image)[:]), original_pixels), "the original image changed"
    got = np.array(neutral.pixels[:]).reshape(-1, 4)[:, :3].mean(0)
    assert np.allclose(got, 0.5, atol=2e-3)
    veg.ops.remove_colorize([obj])
    assert _material_state(mat) == before
    assert image_node(mat).image == original_image

    r = veg.ops.apply_vegetation(scene, [obj])
    assert r.changed == ["Tree"]
    names = {n.name for n in api.node_tree(mat).nodes}
    assert {"EnvFX Vegetation", "EnvFX Vegetation Surface"} <= names
    # the normal map still reaches the BSDF, through the group
    veg_node = api.node_tree(mat).nodes["EnvFX Vegetation"]
    links = veg_node.inputs["Normal"].links
    assert links is not None and api.of(bpy.types.Node, links[0].from_node).bl_idname == "ShaderNodeNormalMap"
    assert veg.ops.apply_vegetation(scene, [obj]).changed == []  # again: nothing more
    veg.ops.remove_vegetation([obj])
    assert _material_state(mat) == before


def test_vegetation_ao_halves_the_diffuse_in_a_render(veg, tmp_path):
    scene = _empty_scene()
    s = api.envfx(scene).vegetation
    s.colorize = False
    s.translucency = 0.0
    mat = _material("Bark", (0.8, 0.8, 0.8, 1.0))
    bsdf = api.node_tree(mat).nodes["Principled BSDF"]
    api.socket(bsdf.inputs["Specular IOR Level"]).default_value = 0.0
    api.socket(bsdf.inputs["Roughness"]).default_value = 1.0
    lit = _wind_plane(veg, "Lit", (-3, 0, 0), mat, a=1.0)
    half = _wind_plane(veg, "Half", (3, 0, 0), mat, a=0.5)
    sun_data = api.of(bpy.types.SunLight, bpy.data.lights.new("Sun", "SUN"))
    sun_data.energy = 2.0
    sun = bpy.data.objects.new("Sun", sun_data)
    scene.collection.objects.link(sun)
    _top_camera(scene, 10.0)
    res = 40
    before = _render(scene, str(tmp_path / "before.exr"), eevee_engine(), res)
    veg.ops.apply_vegetation(scene, [lit, half])
    after = _render(scene, str(tmp_path / "after.exr"), eevee_engine(), res)
    c = res // 2

    def at(img, x):
        j = int((x + 5.0) / 10.0 * res)
        return img[c - 2:c + 2, j - 2:j + 2, :3].mean(axis=(0, 1))

    assert at(before, -3).min() > 0.1
    assert np.allclose(at(after, -3), at(before, -3), rtol=0.02)  # A = 1: as before
    assert np.allclose(at(after, 3) / at(after, -3), 0.5, atol=0.01), (at(after, 3), at(after, -3))
    veg.ops.remove_vegetation([lit, half])
    restored = _render(scene, str(tmp_path / "restored.exr"), eevee_engine(), res)
    assert np.allclose(restored, before, atol=1e-4)


def test_grass_normals_face_the_camera(veg, tmp_path):
    """A blade whose normals point away from the camera (custom normals, as the talk's transferred isosurface
    normals can) goes dark; with Grass Normals its view-space Z is turned to face the camera and it is lit."""
    scene = _empty_scene()
    s = api.envfx(scene).vegetation
    s.colorize = False
    s.translucency = 0.0
    s.grass_normal = True
    mat = _material("Grass", (0.8, 0.8, 0.8, 1.0))
    api.socket(api.node_tree(mat).nodes["Principled BSDF"].inputs["Specular IOR Level"]).default_value = 0.0
    front = _wind_plane(veg, "Front", (-3, 0, 0), mat, category="GRASS")
    away = _wind_plane(veg, "Away", (3, 0, 0), mat, category="GRASS")
    tilt = np.array([0.3, 0.0, -0.954])
    api.mesh(away).normals_split_custom_set_from_vertices([tilt.tolist()] * len(api.mesh(away).vertices))
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    scene.collection.objects.link(sun)
    _top_camera(scene, 10.0)
    res = 40
    c = res // 2
    plain = _render(scene, str(tmp_path / "plain.exr"), eevee_engine(), res)
    f0, b0 = plain[c, int(2 / 10 * res), :3], plain[c, int(8 / 10 * res), :3]
    assert f0.min() > 0.1 and b0.max() < 0.2 * f0.min(), (f0, b0)
    veg.ops.apply_vegetation(scene, [front, away])
    assert api.envfx(front).colorize_per_vertex and api.envfx(away).colorize_per_vertex
    img = _render(scene, str(tmp_path / "grass.exr"), eevee_engine(), res)
    f, b = img[c, int(2 / 10 * res), :3], img[c, int(8 / 10 * res), :3]
    assert np.allclose(f, f0, rtol=0.02)
    assert b.min() > 0.8 * f.min(), (f, b)  # lit as a normal of Z 0.954 facing the sun and the camera
    s.grass_normal = False  # the group is rebuilt in place: dark again
    img = _render(scene, str(tmp_path / "off.exr"), eevee_engine(), res)
    assert np.allclose(img[c, int(8 / 10 * res), :3], b0, atol=1e-3)


# --- bad input --------------------------------------------------------------------------------------------

def test_a_material_without_nodes_is_refused(veg):
    scene = _empty_scene()
    _setup_colorize(veg, scene)
    mat = _material("Plain")
    obj = _wind_plane(veg, "Tree", (0, 0, 0), mat)
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = False
    else:
        api.node_tree(mat).nodes.clear()
    with pytest.raises(veg.ops.VegetationInputError, match="Plain"):
        veg.ops.apply_vegetation(scene, [obj])
    with pytest.raises(veg.ops.VegetationInputError, match="Plain"):
        veg.ops.add_colorize(scene, [obj])
    assert not any(n.name.startswith("EnvFX") for n in api.node_tree(mat).nodes)


def test_a_material_shared_with_other_objects_is_refused_or_copied(veg):
    scene = _empty_scene()
    _setup_colorize(veg, scene)
    mat = _material("Shared")
    tree = _wind_plane(veg, "Tree", (0, 0, 0), mat)
    _plane("Rock", (5, 0, 0), 1.0, mat)
    before = _material_state(mat)
    with pytest.raises(veg.ops.VegetationInputError, match="Rock"):
        veg.ops.apply_vegetation(scene, [tree])
    assert _material_state(mat) == before and tree.material_slots[0].material == mat
    for obj in bpy.data.objects:
        obj.select_set(obj.name == "Tree")
    api.view_layer().objects.active = tree
    with pytest.raises(RuntimeError, match="Rock"):  # the operator's error report, in background mode
        api.ops.vegetation_apply()
    assert api.ops.vegetation_apply(single_user=True) == {"FINISHED"}
    assert tree.material_slots[0].material != mat
    assert bpy.data.objects["Rock"].material_slots[0].material == mat
    assert _material_state(mat) == before


@pytest.mark.parametrize("problem", ["missing", "file missing", "not square", "no set"])
def test_bad_world_data_is_refused(veg, problem):
    scene = _empty_scene()
    _setup_colorize(veg, scene)
    s = api.envfx(scene).vegetation
    if problem == "missing":
        s.world_data = None
        match = "world-data"
    elif problem == "file missing":
        img = bpy.data.images.new("Gone", 4, 4)
        img.source = "FILE"
        img.filepath = "//no_such_world_data.png"
        img.reload()
        assert tuple(img.size) == (0, 0)
        s.world_data = img
        match = "no pixels"
    elif problem == "not square":
        s.world_data = _float_image("Wide", np.zeros((8, 16), np.float32))
        match = "square"
    else:
        s.colorize_set = None
        match = "colorize set"
    mat = _material("Leaf")
    obj = _wind_plane(veg, "Tree", (0, 0, 0), mat)
    before = _material_state(mat)
    with pytest.raises(veg.ops.VegetationInputError, match=match):
        veg.ops.add_colorize(scene, [obj])
    assert _material_state(mat) == before


def test_unbaked_assets_are_refused(veg):
    scene = _empty_scene()
    api.envfx(scene).vegetation.colorize = False
    mat = _material("Leaf")
    obj = _plane("Bare", (0, 0, 0), 1.0, mat)
    with pytest.raises(veg.ops.VegetationInputError, match="Bake Wind Data"):
        veg.ops.apply_vegetation(scene, [obj])
    assert _material_state(mat) == _material_state(mat) and not any(n.name.startswith("EnvFX")
                                                                    for n in api.node_tree(mat).nodes)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_an_unusable_region_corner_is_put_back_to_its_default(veg, envfx, monkeypatch, capsys, bad):
    """The region corner is a pair of numbers: an unusable one set before any good value was seen is put back to
    the pair's default (it stayed NaN, with an error in the console, when the scalar default 0.0 was assigned)."""
    monkeypatch.setattr(importlib.import_module(envfx.__name__ + ".operators.common"), "_last_good", {})
    s = api.envfx(_empty_scene()).vegetation
    s.region_min = (bad, 3.0)
    default = tuple(s.bl_rna.properties["region_min"].default_array)
    assert tuple(s.region_min) == pytest.approx(default) and default == pytest.approx((-50.0, -50.0))
    assert "EnvFX refused Region Corner" in capsys.readouterr().out


def test_new_colorize_set_from_colours_and_from_an_image(veg):
    scene = _empty_scene()
    s = api.envfx(scene).vegetation
    s.set_count = 3
    assert api.ops.vegetation_new_set() == {"FINISHED"}
    img = s.colorize_set
    assert tuple(img.size) == (128, 24) and img.packed_file is not None
    px = veg.bridge.image_pixels(img)[::-1]
    expect = veg.core.set_from_colours(np.array([s.colour_1, s.colour_2, s.colour_3, s.colour_4]), 3, s.band_spread)
    assert np.allclose(px, expect, atol=1e-6)
    src = bpy.data.images.new("Painted", 256, 16, float_buffer=True)
    api.pixels(src).foreach_set(np.random.default_rng(0).random(256 * 16 * 4).astype(np.float32))
    s.set_count = 1
    assert api.ops.vegetation_new_set(source="IMAGE", image="Painted") == {"FINISHED"}
    assert tuple(s.colorize_set.size) == (128, 8)
    with pytest.raises(RuntimeError, match="Nope"):
        api.ops.vegetation_new_set(source="IMAGE", image="Nope")


def test_the_colorize_set_and_materials_survive_save_and_reopen(veg, save_and_reopen):
    scene = _empty_scene()
    _setup_colorize(veg, scene)
    assert api.ops.vegetation_new_set() == {"FINISHED"}
    want = veg.bridge.image_pixels(api.envfx(scene).vegetation.colorize_set).copy()
    mat = _textured_material("Leaf")
    before = _material_state(mat)
    obj = _wind_plane(veg, "Tree", (0, 0, 0), mat)
    for o in bpy.data.objects:
        o.select_set(o == obj)
    api.view_layer().objects.active = obj
    assert api.ops.vegetation_apply() == {"FINISHED"}
    assert api.ops.vegetation_neutralise() == {"FINISHED"}
    save_and_reopen()
    scene = api.scene()
    img = api.envfx(scene).vegetation.colorize_set
    assert img is not None and img.is_float and tuple(img.size) == (128, 16)
    assert np.allclose(veg.bridge.image_pixels(img), want, atol=1e-6)
    obj = bpy.data.objects["Tree"]
    for o in bpy.data.objects:
        o.select_set(o == obj)
    api.view_layer().objects.active = obj
    assert api.ops.vegetation_remove() == {"FINISHED"}
    assert _material_state(bpy.data.materials["Leaf"]) == before  # the original albedo was kept in the file


@pytest.fixture(scope="session")
def corpus(load_helper):
    """name -> OBJ path of the real-asset corpus (tools/fetch_assets.py); skips, saying why, when none was fetched."""
    fetch = load_helper("fetch_assets", "tools", "fetch_assets.py")
    index = fetch.fetch(fetch.cache_dir(), quiet=True)
    if not index["assets"]:
        pytest.skip(f"no corpus asset could be fetched: {index['skipped']}")
    return {a["name"]: a["obj"] for a in index["assets"]}


@pytest.mark.parametrize("name, category", [("ez_aspen_small_single", "TREE"), ("grass", "GRASS")])
def test_real_assets_take_the_vegetation_look_and_give_it_back(veg, mods, corpus, name, category, tmp_path):
    """A generated aspen and a grass tuft with an alpha-blended card material (imported from their OBJ and MTL
    files): baked, shaded as vegetation and colorized, rendered, and given back their materials exactly."""
    if name not in corpus:
        pytest.skip(f"{name} was not fetched")
    scene = _empty_scene()
    _setup_colorize(veg, scene)
    objects = [o for o in bpy.data.objects if o.type == "MESH"]
    assert bpy.ops.wm.obj_import(filepath=corpus[name], up_axis="Y", forward_axis="NEGATIVE_Z",
                                 global_scale=0.01) == {"FINISHED"}
    objects = [o for o in bpy.data.objects if o.type == "MESH" and o not in objects]
    mats = {s.material for o in objects for s in o.material_slots if s.material is not None}
    assert mats
    before = {m.name: _material_state(m) for m in mats}
    mods.ops.apply_preset(objects, category)
    mods.ops.bake(scene, objects, ao_samples=0)
    lo = np.min([np.array(o.matrix_world) @ np.append(np.array(o.bound_box).min(0), 1) for o in objects], 0)[:3]
    hi = np.max([np.array(o.matrix_world) @ np.append(np.array(o.bound_box).max(0), 1) for o in objects], 0)[:3]
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.rotation_euler = (0.8, 0.0, 0.0)  # from behind the camera, above
    scene.collection.objects.link(sun)
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    centre = (lo + hi) / 2
    cam.location = (centre[0], centre[1] - 3 * max(hi - lo), centre[2])
    cam.rotation_euler = (math.pi / 2, 0.0, 0.0)
    scene.camera = cam
    plain = _render(scene, str(tmp_path / "plain.exr"), eevee_engine(), 48)
    result = veg.ops.apply_vegetation(scene, objects)
    assert sorted(result.changed) == sorted(o.name for o in objects)
    assert all(api.envfx(o).colorize_per_vertex == (category == "GRASS") for o in objects)
    for m in mats:
        assert {"EnvFX Vegetation", "EnvFX Vegetation Surface"} <= {n.name for n in api.node_tree(m).nodes}, m.name
    px = _render(scene, str(tmp_path / "asset.exr"), eevee_engine(), 48)
    # the asset shows and is lit (colorized: another colour, about as bright)
    assert plain[..., :3].sum() > 0 and np.isfinite(px).all()
    assert px[..., :3].sum() > 0.2 * plain[..., :3].sum(), (px[..., :3].sum(), plain[..., :3].sum())
    veg.ops.remove_vegetation(objects)
    assert {m.name: _material_state(m) for m in mats} == before
