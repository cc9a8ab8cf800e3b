"""The features without vegetation on real third-party content (the manifest's ``content``, fetched by
tools/fetch_assets.py): mip chains of ez-tree's alpha-tested leaf textures, snow cover over a Terragen terrain with
Irrlicht's Sydney walking through it (live trails and the interaction buffer bake), and the 2D light map of
Irrlicht's cellar level. The meshes come in as OBJ with Y up and an unapplied centimetre scale, away from the
origin, as the vegetation corpus does. Each test skips, saying why, only when its file could not be fetched."""

import io
import json

import bmesh
import bpy
import numpy as np
import pytest
from mathutils import Vector
from mathutils.bvhtree import BVHTree
from PIL import Image

from tests.blender import api

LEAVES = ["leaves_oak", "leaves_ash", "leaves_aspen", "leaves_pine"]


@pytest.fixture(scope="module")
def helpers(load_helper):
    """The wind corpus's OBJ import and the snow tests' helpers, loaded from their files."""
    class H:
        assets = load_helper("envfx_test_wind_assets_rc", "tests", "blender", "test_wind_assets.py")
        snow = load_helper("envfx_test_snow_rc", "tests", "blender", "test_snow.py")
    return H


def _clear() -> None:
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)


def _world_vertices(obj: bpy.types.Object) -> np.ndarray:
    mesh = api.mesh(obj)
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


# --- mips: coverage of real alpha-tested leaf textures ------------------------------------------------------

@pytest.mark.parametrize("name", LEAVES)
def test_mips_keep_the_coverage_of_real_leaf_textures(envfx, corpus_content, tmp_path, name):
    """ez-tree's leaf cards (1024 x 1024 palette PNGs with transparency): level 0 is the file's pixels, every level
    keeps level 0's alpha-test coverage within the stated tolerance (1%, or one texel on the smallest levels), where
    the plain chain loses much of it at 4 x 4."""
    path = corpus_content(name)
    ops = envfx.operators.mips
    result = ops.bake_mips(ops.inputs_from_paths([path]), str(tmp_path), formats=("PNG",))
    rep = result.reports[name]
    with Image.open(path) as im:
        src = np.asarray(im.convert("RGBA"))
    with Image.open(tmp_path / f"{name}_mip00.png") as im:
        np.testing.assert_array_equal(np.asarray(im.convert("RGBA")), src)      # the palette and tRNS read right
    assert 0.05 < rep["target_coverage"] < 0.95                                  # a real cut-out card
    assert rep["target_coverage"] == pytest.approx(envfx.core.mips.coverage(src[..., 3] / 255.0), abs=1e-6)
    assert rep["levels"] == 11
    for entry in rep["per_level"]:
        tol = max(0.01, 1.0 / (entry["width"] * entry["height"])) + 1e-9
        assert abs(entry["coverage"] - rep["target_coverage"]) <= tol, entry
    # what the plain chain loses: the leaves thin out by 4 x 4 (measured: 0.63 of the coverage or less)
    (four,) = [e for e in rep["per_level"] if e["width"] == 4]
    assert four["coverage_naive"] < 0.7 * rep["target_coverage"] <= four["coverage"]


@pytest.mark.parametrize("compression", ["BC1", "BC3", "BC4", "BC7"])
@pytest.mark.parametrize("name", ["leaves_oak", "leaves_pine"])
def test_block_compressed_mips_of_real_leaf_textures_keep_their_coverage(envfx, corpus_content, tmp_path, name,
                                                                          compression):
    """ez-tree's oak and pine cards written as BC1, BC3, BC4 and BC7 DDS chains: every level of 16 x 16 or more
    keeps level 0's coverage within 2% as decoded from the file (measured: 1.1% at most with BC1, whose one bit of
    alpha is cut at the reference; 0.3% with BC3, BC4 and BC7), and the drawn texels' colour stays within 8 levels
    RMS (measured 3 to 6; BC7 2.4 and 3.5; BC4 holds the alpha alone)."""
    path = corpus_content(name)
    ops = envfx.operators.mips
    settings = envfx.core.mips.MipSettings(dds=compression)
    result = ops.bake_mips(ops.inputs_from_paths([path]), str(tmp_path), settings, formats=("DDS",), compare=False)
    rep = result.reports[name]
    assert rep["dds_format"]["compression"] == compression  # (sRGB colour: DX10; BC4, one channel of data: legacy)
    assert rep["dds_format"]["header"] == ("legacy" if compression == "BC4" else "DX10")
    for entry in rep["per_level"]:
        if entry["width"] >= 16:
            assert abs(entry["coverage_dds"] - rep["target_coverage"]) < 0.02, entry
    levels, _ = envfx.core.dds.decode_dds((tmp_path / f"{name}.dds").read_bytes())
    with Image.open(path) as im:
        src = np.asarray(im.convert("RGBA"))
    if compression == "BC4":  # the alpha alone, in R
        assert np.sqrt(np.mean((levels[0][..., 0].astype(float) - src[..., 3]) ** 2)) < 4.0
        return
    drawn = src[..., 3] >= 128 if compression == "BC1" else np.ones(src.shape[:2], bool)
    assert np.sqrt(np.mean((levels[0][..., :3].astype(float) - src[..., :3])[drawn] ** 2)) < 8.0


@pytest.mark.parametrize("name", LEAVES)
def test_bc7_keeps_real_leaf_cards_closer_than_bc3(envfx, corpus_content, name):
    """ez-tree's leaf cards: BC7's level 0 has a lower colour error than BC3's (measured RMS 2.2 to 3.4 against
    3.2 to 4.3 levels), an alpha error within a level of BC3's (1.3 to 2.5), and flips the alpha test at 0.5 on
    fewer texels (39 to 1399 against 256 to 1880 of the million: BC7's modes with regions are kept only where they
    flip no more texels than its one-region modes)."""
    mips, dds = envfx.core.mips, envfx.core.dds
    with Image.open(corpus_content(name)) as im:
        src = np.asarray(im.convert("RGBA"))
    chain = mips.build_chain(src)
    errors = {}
    for compression in ("BC3", "BC7"):
        levels, _ = dds.decode_dds(dds.encode_dds(chain.levels[:1], srgb=True, compression=compression))
        diff = levels[0].astype(float) - chain.levels[0]
        flips = int(((levels[0][..., 3] >= 128) != (chain.levels[0][..., 3] >= 128)).sum())
        errors[compression] = (np.sqrt(np.mean(diff[..., :3] ** 2)), np.sqrt(np.mean(diff[..., 3] ** 2)), flips)
    (rgb7, a7, flips7), (rgb3, a3, flips3) = errors["BC7"], errors["BC3"]
    assert rgb7 < 0.9 * rgb3 and a7 < a3 + 1.0 and flips7 < flips3, errors


def test_bc7_writes_a_real_normal_map_in_its_modes_with_regions_nearer_than_with_one(envfx, corpus_content,
                                                                                      monkeypatch):
    """ez-tree's oak bark normal map (opaque, sharp turns of colour within blocks): BC7 writes most blocks in its
    modes with two or three regions (measured: 0, 1, 2 and 3 on 52k of the 65k blocks), Pillow decodes the file as
    EnvFX does, and the colour RMS comes out more than 15% below BC7's one-region modes alone (measured 2.13 against
    2.71) and less than half of BC3's (5.07)."""
    mips, dds, bc7 = envfx.core.mips, envfx.core.dds, envfx.core.bc7
    with Image.open(corpus_content("bark_oak_normal")) as im:
        src = np.asarray(im.convert("RGBA"))
    level = mips.build_chain(src).levels[0]

    def rms(data):
        return float(np.sqrt(np.mean((dds.decode_dds(data)[0][0][..., :3].astype(float) - level[..., :3]) ** 2)))

    data = dds.encode_dds([level], srgb=False, compression="BC7")
    with Image.open(io.BytesIO(data)) as im:
        assert (np.asarray(im.convert("RGBA")) == dds.decode_dds(data)[0][0]).all()
    blocks = np.frombuffer(data[-level.size // 4:], np.uint8).reshape(-1, 16)  # (one level: its blocks end the file)
    modes = np.array([next(m for m in range(8) if b[0] >> m & 1) for b in blocks])  # the first byte's lowest 1 bit
    assert np.isin(modes, (0, 1, 2, 3)).mean() > 0.5
    three = rms(dds.encode_dds([level], srgb=False, compression="BC3"))
    monkeypatch.setattr(bc7, "ENCODER_MODES", (6, 5, 4))
    one_region = rms(dds.encode_dds([level], srgb=False, compression="BC7"))
    assert rms(data) < 0.85 * one_region and rms(data) < 0.5 * three, (rms(data), one_region, three)


# --- snow: cover over a real terrain, a real actor's trails, the buffer bake --------------------------------

PATCH = 60.0        # metres of terrain cut out around the terrain's middle (two of its 30 m cells)
SPACING = 0.25
THICKNESS = 0.3


def _terrain_patch(helpers, path: str) -> bpy.types.Object:
    """The Terragen terrain imported as an asset library gives it, cut to PATCH around its middle (its
    world-space vertices on the grid's lines are kept, so the patch is whole cells of the real height field)."""
    (terrain,) = helpers.assets._import(path)
    world = _world_vertices(terrain)
    centre = 0.5 * (world.min(0) + world.max(0))
    keep = np.all(np.abs(world[:, :2] - centre[:2]) <= PATCH / 2 + 1e-3, axis=1)
    mesh = api.mesh(terrain)
    bm = bmesh.new()
    bm.from_mesh(mesh)
    bm.verts.ensure_lookup_table()
    bmesh.ops.delete(bm, geom=[v for v in bm.verts if not keep[v.index]], context="VERTS")
    bm.to_mesh(mesh)
    bm.free()
    api.view_layer().update()
    return terrain


def _ground_height(terrain: bpy.types.Object):
    """A function (N, 2) world xy -> the terrain's world z there (a ray straight down)."""
    mesh = api.mesh(terrain)
    world = _world_vertices(terrain)
    polys = [tuple(p.vertices) for p in mesh.polygons]
    tree = BVHTree.FromPolygons([tuple(p) for p in world.tolist()], polys)
    assert tree is not None
    top = float(world[:, 2].max()) + 10.0

    def height(xy):
        out = np.full(len(xy), np.nan)
        for k, (x, y) in enumerate(np.asarray(xy, np.float64)):
            hit = tree.ray_cast(Vector((x, y, top)), Vector((0.0, 0.0, -1.0)))
            if hit[0] is not None:
                out[k] = hit[0].z
        return out
    return height


def _snow_on_real_terrain(envfx, helpers, corpus_content):
    terrain = _terrain_patch(helpers, corpus_content("terragen_terrain"))
    scene = api.scene()
    s = api.envfx(scene).snow
    s.spacing, s.thickness, s.border_width = SPACING, THICKNESS, 1.0
    helpers.snow.select_only(terrain)
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in scene.objects if o.get("envfx_snow") == 0][0]
    return scene, terrain, snow


def test_snow_cover_lies_on_the_real_terrain(envfx, helpers, corpus_content):
    """Over a 60 m patch of a real Terragen height field (more than 5 m of relief; an unapplied centimetre scale and
    a Y-up rotation on the object): the snow's underside follows the terrain's height to 1 cm, the snow is the set
    thickness away from the border, and it covers the patch."""
    _clear()
    scene, terrain, snow = _snow_on_real_terrain(envfx, helpers, corpus_content)
    height = _ground_height(terrain)
    v = _world_vertices(snow)
    thick = helpers.snow.thickness_of(snow)
    ground = height(v[:, :2])
    assert np.isfinite(ground).all()                                       # every snow vertex is over the terrain
    relief = np.ptp(_world_vertices(terrain)[:, 2])
    assert relief > 5.0                                                    # a real relief, not a flat patch
    np.testing.assert_allclose(v[:, 2] - thick, ground, atol=0.01)         # the snow's underside is the ground
    full = thick > 0.99 * THICKNESS
    assert full.mean() > 0.8                                               # full depth away from the border
    world = _world_vertices(terrain)
    lo, hi = world[:, :2].min(0), world[:, :2].max(0)
    assert np.all(v[:, :2].min(0) <= lo + SPACING) and np.all(v[:, :2].max(0) >= hi - SPACING)


def _actor(helpers, corpus_content, actors: bpy.types.Collection) -> tuple[bpy.types.Object, float]:
    """Sydney (a Quake II model, Y-up OBJ with an unapplied centimetre scale) in the actor collection: (object,
    height of her origin above her feet)."""
    (actor,) = helpers.assets._import(corpus_content("sydney"))
    for c in list(actor.users_collection):
        c.objects.unlink(actor)
    actors.objects.link(actor)
    api.view_layer().update()
    feet = _world_vertices(actor)[:, 2].min()
    return actor, float(actor.matrix_world.translation.z - feet)


def _walk(actor: bpy.types.Object, lift: float, height, start, end, frames: int) -> np.ndarray:
    """Key ``actor`` walking from ``start`` to ``end`` (world xy) over frames 1..frames, her feet on the terrain at
    every frame; returns the (frames, 2) path of her origin."""
    path = np.linspace(start, end, frames)
    z = height(path)
    for f, ((x, y), gz) in enumerate(zip(path, z), start=1):
        actor.location = (x, y, gz + lift)
        actor.keyframe_insert("location", frame=f)
    return path


def _sydney_walks(envfx, helpers, corpus_content, frames: int):
    """Snow on the real terrain and Sydney keyed to walk 8 m across it over ``frames`` frames: (scene, terrain,
    snow, Sydney, her (frames, 2) path)."""
    _clear()
    scene, terrain, snow = _snow_on_real_terrain(envfx, helpers, corpus_content)
    height = _ground_height(terrain)
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    api.envfx(scene).snow.actors = actors
    actor, lift = _actor(helpers, corpus_content, actors)
    centre = _world_vertices(terrain)[:, :2].mean(0)
    path = _walk(actor, lift, height, centre + (-4.0, 1.0), centre + (4.0, -1.0), frames)
    return scene, terrain, snow, actor, path


def test_a_real_actor_carves_trails_in_snow_on_a_real_terrain_and_the_bake_holds_them(envfx, helpers,
                                                                                         corpus_content, tmp_path):
    """Sydney walks 8 m across the snow on the real terrain, her feet on the slope at every frame: she is measured
    from her own mesh (a person's radius; the trail's depth half of it), the live trails sink the snow along her
    path by that depth (never below the ground) and leave it untouched 2 m away, and the interaction buffer baked
    over the same frames holds the trail where she walked."""
    frames = 9
    scene, terrain, snow, actor, path = _sydney_walks(envfx, helpers, corpus_content, frames)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, frames + 1):
        scene.frame_set(f)
    measured = envfx.operators.snow.actors.measure_actor(actor, scene)
    assert not isinstance(measured, str), measured
    radius, depth, _bottom = measured
    assert 0.15 < radius < 0.5 and depth == pytest.approx(0.5 * radius)   # a person's size, from her own mesh
    rest, offset = helpers.snow.evaluated_offset(envfx, snow)
    thick = helpers.snow.thickness_of(snow)
    seg = path[-1] - path[0]
    t = np.clip((rest[:, :2] - path[0]) @ seg / (seg @ seg), 0, 1)
    dist = np.linalg.norm(rest[:, :2] - (path[0] + t[:, None] * seg), axis=1)
    under = (dist < 0.3 * radius) & (t > 0.1) & (t < 0.9)
    away = dist > 2.0
    assert under.sum() > 20 and away.sum() > 1000
    assert np.median(offset[under]) < -0.7 * depth                         # trodden down under her feet
    assert offset.min() >= -thick.max() - 1e-4                             # never below the real ground
    assert np.abs(offset[away]).max() < 1e-4                               # untouched away from her path

    s = api.envfx(scene).snow
    s.frame_start, s.frame_end = 1, frames
    s.buffer_resolution = 256
    s.output_dir = str(tmp_path / "buffer")
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    core = envfx.core.snow
    meta = core.read_buffer_metadata(str(tmp_path / "buffer" / "snow_buffer.json"))
    last = meta["frames"][-1]
    buf = core.read_exr(str(tmp_path / "buffer" / last["file"]))
    texel = meta["world_size"] / buf.shape[0]
    on_path = path[1:-1]
    off_path = on_path + np.array([-seg[1], seg[0]]) / np.linalg.norm(seg) * 2.5
    depth_on = core.sample_buffer(buf, last["origin"], texel, on_path)
    depth_off = core.sample_buffer(buf, last["origin"], texel, off_path)
    assert np.all(depth_on < -0.7 * depth), depth_on
    assert np.abs(depth_off).max() < 1e-4, depth_off


def test_the_engine_include_displaces_real_snow_as_the_blender_preview_of_its_bake(envfx, helpers, corpus_content,
                                                                                   tmp_path, load_helper):
    """The snow on the real terrain, Sydney's walk baked into the interaction buffer and played back from the bake
    (Snow from Bake), exported for game engines: the Godot include, compiled with glslang and run on llvmpipe over
    the snow's own vertices (their thickness following the terrain's relief), displaces them as Blender's preview
    does, to 1e-4 of the buffer's world size, at frames along the walk."""
    frames = 9
    scene, _terrain, snow, _actor, _path = _sydney_walks(envfx, helpers, corpus_content, frames)
    s = api.envfx(scene).snow
    s.frame_start, s.frame_end = 1, frames
    s.buffer_resolution = 256
    bake = tmp_path / "buffer"
    s.output_dir = str(bake)
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    envfx.operators.snow.drive_from_bake(scene, [snow], str(bake))
    engines = tmp_path / "engines"
    envfx.operators.snow.engines.export_engines(scene, str(engines))
    meta = json.loads((bake / "snow_buffer.json").read_text())
    rest, _offset = helpers.snow.evaluated_offset(envfx, snow)
    assert np.ptp(rest[:, 2]) > 5.0                                        # the real relief
    engine_test = load_helper("envfx_test_snow_engines_rc", "tests", "blender", "test_snow_engines.py")
    worst, moved = engine_test.godot_against_preview(envfx, scene, snow, bake, engines, meta["frames"][3::2],
                                                     tmp_path)
    assert moved > 0.05                                                    # her trail is in the preview
    assert worst <= 1e-4 * meta["world_size"], worst



# --- world bend: a real terrain, a real tree and a real actor ---------------------------------------------------

@pytest.mark.parametrize("mode", ["RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER"])
def test_the_bend_of_a_real_scene_equals_its_formula_and_names_the_coarse_terrain(envfx, helpers, corpus_content,
                                                                                   corpus_asset, load_helper,
                                                                                   tmp_path, mode):
    """A patch of the real terrain (Y-up, an unapplied centimetre scale, kilometres from the origin), ez-tree's oak
    (trunk and leaves in two objects) standing on it and Sydney beside it, the player (the pivot) at the tree, bent
    with the scene's default settings in each mode: every object's evaluated vertices are core.bend's formula for
    its own transform, to 1 mm within 100 m of the player, and exported with Blender's FBX exporter the bend's
    Unreal and Unity includes bend each object's file vertices as the viewport does; what is too coarse to follow
    the curve is named by Add Bend (the terrain's 30 m cells; the oak, 52 m tall at this import's scale, with its 6 m
    leaf cards; not Sydney), and with Subdivide Coarse Meshes nothing is, and the subdivided terrain bends by the
    formula. Remove Bend gives every mesh back as it was."""
    _clear()
    terrain = _terrain_patch(helpers, corpus_content("terragen_terrain"))
    height = _ground_height(terrain)
    centre = _world_vertices(terrain).mean(0)
    tree = corpus_asset("ez_oak_medium")
    ground = float(height(centre[None, :2])[0])
    ax, ay, az = helpers.assets.AWAY
    for o in tree:  # the imported tree (Y-up, centimetres, away from the origin) moved onto the terrain's middle
        o.location = (o.location.x - ax + centre[0], o.location.y - ay + centre[1], o.location.z - az + ground)
    actors = bpy.data.collections.new("Actors")
    api.scene().collection.children.link(actors)
    sydney, _lift = _actor(helpers, corpus_content, actors)
    sydney.location = (centre[0] + 3.0, centre[1], ground + _lift)
    api.view_layer().update()
    objects = [terrain, *tree, sydney]
    before = {o.name: envfx.bridge.get_positions(api.mesh(o)).copy() for o in objects}
    s = api.envfx().bend
    s.mode = mode
    player = bpy.data.objects.new("Player", None)
    api.scene().collection.objects.link(player)
    player.location = (centre[0], centre[1], ground)
    s.pivot = player
    api.view_layer().update()
    result = envfx.operators.bend.add_bend(api.scene(), objects)
    assert sorted(result.changed) == sorted(o.name for o in objects)
    coarse = [w for w in result.warnings if "Too coarse for the bend" in w]
    # the terrain's 30 m cells, and at this import's scale (a 52 m oak) its 6 m leaf cards and 7 m branch segments
    assert len(coarse) == 1 and all(f"{o.name} (" in coarse[0] for o in (terrain, *tree)), result.warnings
    assert f"{sydney.name} (" not in coarse[0]
    params = envfx.shader_nodes.bend.params_from_scene(api.scene())
    moved = 0.0
    for o in objects:
        got = envfx.bridge.evaluated_positions(o, bpy.context.evaluated_depsgraph_get())
        want = envfx.core.bend.forward_local(before[o.name], envfx.bridge.matrix_to_numpy(o.matrix_world), params)
        m = np.asarray(o.matrix_world)
        near = np.linalg.norm(before[o.name] @ m[:3, :3].T + m[:3, 3] - np.asarray(player.location), axis=1) < 100
        assert near.any(), o.name
        scale = np.linalg.norm(m[:3, :3], axis=0)  # local offsets in metres: times the object's scale
        err = np.abs(got - want)[near] * scale
        assert err.max() < 1e-3, (o.name, float(err.max()))
        moved = max(moved, float((np.abs(got - before[o.name]) * scale).max()))
    assert moved > 0.05  # the scene really bends
    # a game bends the exported meshes in its vertex shader as the viewport does (FBX, Unreal and Unity)
    assert api.ops.bend_export_engines(directory=str(tmp_path / "eng")) == {"FINISHED"}
    meta = json.loads((tmp_path / "eng" / "envfx_bend.json").read_text())
    for o in api.scene().objects:
        o.select_set(o in objects or o == player)
    bend_test = load_helper("envfx_test_bend_rc", "tests", "blender", "test_bend.py")
    checked = bend_test.engines_bend_fbx_like_viewport(envfx, load_helper, tmp_path, objects, player, meta, 1.0)
    assert checked == {"UNREAL": len(objects), "UNITY": len(objects)}
    # Subdivide Coarse Meshes: nothing is named any more, and the subdivided terrain's vertices (many more, each
    # on the formula's curve) bend as the formula says
    s.subdivide = True
    result = envfx.operators.bend.add_bend(api.scene(), objects)
    assert not any("Too coarse" in w for w in result.warnings), result.warnings
    assert envfx.panels.bend.coarse_status(api.scene()) == []
    bend = terrain.modifiers["EnvFX Bend"]
    bend.show_viewport = False
    rest = envfx.bridge.evaluated_positions(terrain, bpy.context.evaluated_depsgraph_get()).copy()
    bend.show_viewport = True
    got = envfx.bridge.evaluated_positions(terrain, bpy.context.evaluated_depsgraph_get())
    assert len(got) > 4 * len(before[terrain.name])
    want = envfx.core.bend.forward_local(rest, envfx.bridge.matrix_to_numpy(terrain.matrix_world), params)
    assert (np.abs(got - want).max(1) * 0.01 < 1e-3).all()
    # Remove Bend: every mesh as it was
    envfx.operators.bend.remove_bend(objects)
    for o in objects:
        assert not any(m.name.startswith("EnvFX Bend") for m in o.modifiers), o.name
        np.testing.assert_array_equal(envfx.bridge.evaluated_positions(o, bpy.context.evaluated_depsgraph_get()),
                                      before[o.name])

# --- 2D light map: a real level -----------------------------------------------------------------------------

def test_light_map_of_a_real_level_shadows_where_its_walls_are(envfx, helpers, corpus_content, tmp_path):
    """Irrlicht's cellar, a level modelled as one closed mesh (floor, ceiling, walls, arches): with a ground plane
    under it and two lamps inside, the map lights the room, keeps the walls' footprint thin (the floor and the
    ceiling are not obstacles: seen from above they would cover the whole room), no light gets out through the
    outer walls, and the ground under each lamp is lit."""
    _clear()
    (level,) = helpers.assets._import(corpus_content("irrlicht_cellar"))
    world = _world_vertices(level)
    lo, hi = world.min(0), world.max(0)
    floor = float(lo[2])
    scene = api.scene()
    margin = 1.0
    mesh = bpy.data.meshes.new("Ground")
    mesh.from_pydata([(lo[0] - margin, lo[1] - margin, floor), (hi[0] + margin, lo[1] - margin, floor),
                      (hi[0] + margin, hi[1] + margin, floor), (lo[0] - margin, hi[1] + margin, floor)], [],
                     [(0, 1, 2, 3)])
    ground = bpy.data.objects.new("Ground", mesh)
    scene.collection.objects.link(ground)
    walls = bpy.data.collections.new("Walls")
    scene.collection.children.link(walls)
    for c in list(level.users_collection):
        c.objects.unlink(level)
    walls.objects.link(level)
    lamps = bpy.data.collections.new("Lights")
    scene.collection.children.link(lamps)
    mid = 0.5 * (lo + hi)
    for k, (dx, dy, dz) in enumerate(((0.5, 0.8, 1.6), (2.0, -0.6, 1.3))):
        data = api.of(bpy.types.PointLight, bpy.data.lights.new(f"Lamp{k}", "POINT"))
        data.energy, data.shadow_soft_size = 300.0, 0.05
        lamp = bpy.data.objects.new(f"Lamp{k}", data)
        lamp.location = (mid[0] + dx, mid[1] + dy, floor + dz)
        lamps.objects.link(lamp)
    s = api.envfx(scene).lightmap
    s.ground, s.obstacles, s.lights = ground, walls, lamps
    s.resolution = 128
    s.output_dir = str(tmp_path)
    api.view_layer().update()
    lm = envfx.operators.lightmap
    result = lm.bake_lightmap(scene)
    core = envfx.core.lightmap2d
    doc = json.loads((tmp_path / "lightmap.json").read_text())
    assert doc["obstacles"] == [level.name] and doc["orientation"] == core.ORIENTATION
    px, names = envfx.core.exr.read_exr(str(tmp_path / "lightmap.exr"))
    light = px[..., [names.index(c) for c in "RGB"]].sum(axis=2)           # row 0 is y_max
    grid = core.make_grid(doc["region"], s.resolution)
    assert light.shape == (grid.height, grid.width) and result.resolution == (grid.width, grid.height)
    occ = core.rasterise(grid, lm.gather(scene).triangles)
    everything = core.rasterise(grid, envfx.bridge.triangle_corners(level, bpy.context.evaluated_depsgraph_get()))
    X, Y = np.meshgrid(grid.xs(), grid.ys())
    outside = (X < lo[0] - 0.3) | (X > hi[0] + 0.3) | (Y < lo[1] - 0.3) | (Y > hi[1] + 0.3)
    assert everything[~outside].mean() > 0.8                               # the whole level from above: a lid
    assert occ.mean() < 0.3, occ.mean()                                    # its walls: not the floor nor the ceiling
    assert outside.sum() > 100 and light[outside].max() == 0.0             # nothing gets out through the walls
    inside = ~occ & ~outside
    assert (light[inside] > 0).mean() > 0.5                                # the room is lit
    for k in range(2):
        lamp = bpy.data.objects[f"Lamp{k}"].matrix_world.translation
        assert light[grid.texel_of(lamp.x, lamp.y)] > 0                   # under each lamp


# --- gas giant: a real planet's picture as the palette --------------------------------------------------------

def _luma(rgb: np.ndarray) -> np.ndarray:
    return rgb[..., :3] @ np.array([0.2126, 0.7152, 0.0722])


def test_a_gas_giant_painted_from_a_real_picture_of_jupiter_wears_its_colours(envfx, corpus_content, tmp_path):
    """KStars' Jupiter is a disc on a transparent card (23% of the picture transparent black). Read as the palette
    image, the card takes the colours of the disc around it (none darker than the disc's darkest pixel); a
    planet painted with the Plain mapping (the whole picture laid over the sphere, card included) has no more
    near-black texels than the disc itself and the disc's mean colour (before: 13% black, twice the disc's 6%)."""
    path = corpus_content("jupiter")
    picture = np.asarray(Image.open(path)).astype(np.float64) / 255.0
    opaque = picture[..., 3] >= 0.5
    assert 0.15 < (picture[..., 3] == 0).mean() < 0.4                     # a real card around the disc
    disc = picture[opaque][:, :3]
    palette = envfx.operators.gasgiant.load_palette(path)
    np.testing.assert_allclose(palette[opaque], picture[opaque][:, :3], atol=1e-6)  # the disc as it is
    card = _luma(palette[~opaque])
    assert card.min() >= _luma(disc).min() - 1e-6 and card.mean() > 0.25 * _luma(disc).mean()  # the disc's colours
    s = api.envfx(api.scene()).gasgiant
    values = dict(color_source="PALETTE", palette_path=path, mapping="PLAIN", particles=60_000, iterations=30,
                  field_size="64", cubemap_size="128", equirect_width="256", threads=1, output_dir=str(tmp_path),
                  seed=3, make_planet=False, file_format="PNG")
    for k, v in values.items():
        setattr(s, k, v)
    assert api.ops.gasgiant_bake() == {"FINISHED"}
    planet = np.asarray(Image.open(tmp_path / "gasgiant_equirect.png")).astype(np.float64) / 255.0
    dark = float((_luma(planet) < 0.1).mean())
    assert dark <= (_luma(disc) < 0.1).mean() + 0.02, dark                 # no black painted from the card
    np.testing.assert_allclose(planet[..., :3].reshape(-1, 3).mean(0), disc.mean(0), atol=0.08)
