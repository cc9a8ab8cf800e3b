"""Grass that actors push (#23 part 4): the wind's grass reads a baked interaction buffer's G (sway) and A
(push-down) at each blade's root; the geometry-nodes group equals its numpy twin, blades near the actor's path lean
away from it and down and wobble back after it passes, lengths are kept, push off costs nothing and changes nothing,
and asking for push without a buffer changes nothing and says what to do."""

import importlib
import json
import math
import os
import shutil

import bpy
import numpy as np
import pytest
from mathutils import Matrix

from tests.blender import api

WALK = ((1, (-4.0, -0.3, 0.0)), (25, (4.0, 0.3, 0.0)))  # the walker's bottom point, frames 1 to 25


def _field(blades=300, seed=3, quads=1, loose=0):
    """One mesh of ``blades`` thin vertical quads (0.4-0.6 m tall) over 6 x 6 m, baked as Grass and in the wind;
    ``quads`` > 1: each blade a strip of that many quads (sharing their edges) instead; ``loose``: that many loose
    vertices, and as many loose vertical edges, among the blades (last in the mesh)."""
    rng = np.random.default_rng(seed)
    verts, faces = [], []
    for i in range(blades):
        x, y = rng.uniform(-3, 3, 2)
        h, w, a = rng.uniform(0.4, 0.6), 0.02, rng.uniform(0, math.pi)
        dx, dy = w * math.cos(a), w * math.sin(a)
        if quads == 1:
            verts += [(x - dx, y - dy, 0.0), (x + dx, y + dy, 0.0), (x + dx, y + dy, h), (x - dx, y - dy, h)]
            faces.append(tuple(range(4 * i, 4 * i + 4)))
            continue
        first = len(verts)
        for k in range(quads + 1):
            verts += [(x - dx, y - dy, h * k / quads), (x + dx, y + dy, h * k / quads)]
        faces += [(first + 2 * k, first + 2 * k + 1, first + 2 * k + 3, first + 2 * k + 2) for k in range(quads)]
    edges = []
    for _ in range(loose):
        x, y = rng.uniform(-3, 3, 2)
        verts.append((x, y, rng.uniform(0.0, 0.5)))
    for _ in range(loose):
        x, y = rng.uniform(-3, 3, 2)
        edges.append((len(verts), len(verts) + 1))
        verts += [(x, y, 0.0), (x, y, 0.5)]
    mesh = bpy.data.meshes.new("Field")
    mesh.from_pydata(verts, edges, faces)
    obj = bpy.data.objects.new("Field", mesh)
    api.scene().collection.objects.link(obj)
    obj.matrix_world = Matrix.Translation((0.5, -0.2, 0.1)) @ Matrix.Rotation(0.3, 4, "Z")
    for o in api.view_layer().objects:
        o.select_set(o == obj)
    api.view_layer().objects.active = obj
    assert api.ops.wind_bake_data() == {"FINISHED"}
    api.envfx(obj).wind.category = "GRASS"
    return obj


def _baked_buffer(envfx, folder, sequence=True):
    """A walker's interaction buffer baked over frames 1-100 (the walk ends at 25) into ``folder`` and loaded as Use
    Baked Buffer loads it (its image and its bake's group)."""
    snow = importlib.import_module(envfx.__name__ + ".core.snow")
    nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.snow")
    (f0, p0), (f1, p1) = WALK
    frames = np.arange(1, 101)
    s = np.clip((frames - f0) / (f1 - f0), 0.0, 1.0)[:, None]
    tracks = (np.array(p0) + s * (np.array(p1) - np.array(p0)))[:, None, :]
    buf = snow.BufferParams(resolution=96, size=10.0, origin=(-5.0, -5.0))
    result = snow.bake(tracks, [0.6], [0.2], snow.StampParams(fps=24.0), buf, frame_start=1, out_dir=str(folder),
                       sequence=sequence)
    meta = snow.read_buffer_metadata(result.metadata_path)
    image = bpy.data.images.load(result.files[0], check_existing=True)
    image.reload()
    image.source = "SEQUENCE" if sequence else "FILE"
    api.set_colorspace(image, "Non-Color")
    image.alpha_mode = "CHANNEL_PACKED"
    nodes.ensure_buffer_group(image, meta)
    return image


def _rest(mods, obj):
    return mods.bridge.get_positions(obj.data).astype(np.float64)


def _read(mesh, name, width):
    attr = mesh.attributes[name]
    buf = np.empty(len(mesh.vertices) * width, np.float32)
    attr.data.foreach_get({4: "color", 3: "vector"}.get(width, "value"), buf)
    return buf.reshape(-1, width) if width > 1 else buf


def _twin(mods, obj, frame, push=True):
    """The numpy twin of ``obj`` in the wind at ``frame``; ``push``: the scene's baked push (True), none (False),
    or a function ``(scene, frame) -> GrassPush`` (the live push's)."""
    scene = api.scene()
    push_of = mods.nodes.push_params if push is True else push or None
    mesh = api.mesh(obj)
    normals = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertex_normals.foreach_get("vector", normals)
    rest = _rest(mods, obj)
    cam = mods.bridge.matrix_to_numpy(scene.camera.matrix_world) if scene.camera else None
    return rest + mods.core.wind_offsets(
        rest, _read(mesh, "EnvFX_Height", 1), _read(mesh, "EnvFX_Wind", 4), normals.reshape(-1, 3),
        mods.bridge.matrix_to_numpy(obj.matrix_world), frame, mods.nodes.params_from_scene(scene),
        mods.nodes.asset_params(obj), camera_matrix=cam,
        push=push_of(scene, frame) if push_of is not None else None,
        faces=mods.core.vertex_faces(len(mesh.vertices), mods.bridge.corner_vertices(mesh),
                                     mods.bridge.face_starts(mesh)))


def _evaluated(mods, obj, frame):
    api.scene().frame_set(frame)
    return mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())


@pytest.mark.parametrize("sequence", [True, False])
def test_pushed_grass_equals_its_twin(mods, envfx, tmp_path, sequence):
    scene = api.scene()
    api.envfx(scene).wind.strength = 0.7
    # a strip of 3 quads a blade with the sequence: the push is computed per face and read back per vertex
    obj = _field(quads=3 if sequence else 1)
    mods.ops.add_wind(scene, [obj])
    _baked_buffer(envfx, tmp_path, sequence)
    assert "pushed by the baked buffer" in mods.ops.grass_push(scene)
    worst = 0.0
    for frame in (1, 9, 13, 30, 55):
        got = _evaluated(mods, obj, frame)
        worst = max(worst, float(np.abs(got - _twin(mods, obj, frame)).max()))
    assert worst < 1e-4, worst
    # the push does move the grass (against the same wind without it; the final frame only: the walk's end has
    # had 3 s to recover by then)
    assert np.abs(_evaluated(mods, obj, 13) - _twin(mods, obj, 13, push=False)).max() > (0.1 if sequence else 0.03)


def test_vertices_in_no_face_take_neither_the_blades_wind_nor_the_push(mods, envfx, tmp_path):
    # grass computes a blade's wind and push once per face and reads them back per vertex from one of its faces:
    # loose vertices and edges (real assets have them; no engine draws them) have none, and the twin says so
    scene = api.scene()
    api.envfx(scene).wind.strength = 0.7
    obj = _field(blades=200, loose=12)
    mods.ops.add_wind(scene, [obj])
    _baked_buffer(envfx, tmp_path)
    assert "pushed by the baked buffer" in mods.ops.grass_push(scene)
    mesh = api.mesh(obj)
    faces = mods.core.vertex_faces(len(mesh.vertices), mods.bridge.corner_vertices(mesh),
                                   mods.bridge.face_starts(mesh))
    loose = faces < 0
    assert loose.sum() == 36 and not loose[:800].any()
    rest = _rest(mods, obj)
    cam = mods.bridge.matrix_to_numpy(scene.camera.matrix_world) if scene.camera else None
    for frame in (9, 13, 30):
        got = _evaluated(mods, obj, frame)
        assert np.abs(got - _twin(mods, obj, frame)).max() < 1e-4, frame
        # nor the push: the loose vertices move as without it (the camera's tilt alone)
        assert np.abs(got[loose] - _twin(mods, obj, frame, push=False)[loose]).max() < 1e-6, frame
        # a twin that took them for blades moves them otherwise, and the blades as the group does
        normals = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertex_normals.foreach_get("vector", normals)
        as_blades = rest + mods.core.wind_offsets(
            rest, _read(mesh, "EnvFX_Height", 1), _read(mesh, "EnvFX_Wind", 4), normals.reshape(-1, 3),
            mods.bridge.matrix_to_numpy(obj.matrix_world), frame, mods.nodes.params_from_scene(scene),
            mods.nodes.asset_params(obj), camera_matrix=cam, push=mods.nodes.push_params(scene, frame))
        assert np.abs(as_blades[loose] - got[loose]).max() > 1e-3, frame
        assert np.abs(as_blades[~loose] - got[~loose]).max() < 1e-4, frame


def test_blades_near_the_walker_are_pushed_down_and_away_and_sway_back(mods, envfx, tmp_path):
    """Still air, no camera tilt: the grass moves only by the push. At frame 13 (the walker at its middle, about
    (0, 0)), blades within its radius and off its path lean away from the path and their tips are lower (each
    keeps its length); far blades do not move; after the walker has passed they stand up again as A recovers (at
    frame 100 their tips are higher than at 13). The wobble alone (push strength 0: only G leans them) leans them
    away at 13 and then back past upright, towards the path (the buffer's +G / -G wave)."""
    scene = api.scene()
    api.envfx(scene).wind.strength = api.envfx(scene).wind.grass_tilt = 0.0
    obj = _field(blades=900)
    mods.ops.add_wind(scene, [obj])
    _baked_buffer(envfx, tmp_path)
    mods.ops.grass_push(scene)
    rest = _rest(mods, obj)
    m = np.array(obj.matrix_world)
    world = lambda p: p @ m[:3, :3].T + m[:3, 3]  # noqa: E731
    rest_w = world(rest).reshape(-1, 4, 3)
    roots = rest_w[:, :2].mean(1)
    tips_rest = rest_w[:, 2:].mean(1)
    # the walker's path: (-4, -0.3) -> (4, 0.3); at frame 13 it is at (0, 0)
    path_dir = np.array([8.0, 0.6]) / np.hypot(8.0, 0.6)
    normal = np.array([-path_dir[1], path_dir[0]])
    side = roots[:, :2] @ normal  # signed distance from the path's line
    to_walker = np.linalg.norm(roots[:, :2], axis=1)

    def tips(frame):
        return world(_evaluated(mods, obj, frame)).reshape(-1, 4, 3)[:, 2:].mean(1)

    now = tips(13)
    along = roots[:, :2] @ path_dir
    near = (to_walker < 0.55) & (np.abs(side) > 0.15) & (along < 0.1)  # beside it or behind it, off the path
    far = np.linalg.norm(roots[:, :2] - np.array([0.0, 2.5]), axis=1) < 0.3  # 2.5 m off the path
    assert near.sum() >= 5 and far.sum() >= 1, (near.sum(), far.sum())
    moved = now - tips_rest
    away = np.sign(side[near]) * (moved[near, :2] @ normal)
    assert (away > 0.05).all(), away
    assert (moved[near, 2] < -0.05).all(), moved[near, 2]
    assert np.abs(moved[far]).max() < 1e-6
    # lengths kept: every vertex keeps its distance from its blade's root (the middle of its two base vertices)
    got = world(_evaluated(mods, obj, 13)).reshape(-1, 4, 3)
    np.testing.assert_allclose(np.linalg.norm(got - got[:, :2].mean(1, keepdims=True), axis=2),
                               np.linalg.norm(rest_w - rest_w[:, :2].mean(1, keepdims=True), axis=2), atol=1e-5)
    late = tips(100) - tips_rest
    assert (late[near, 2] > moved[near, 2] + 0.02).all()
    # the wobble alone: away from the path at 13, then back past upright at some frame after
    api.envfx(scene).wind.push_strength = 0.0
    lean = [np.median(np.sign(side[near]) * ((tips(f) - tips_rest)[near, :2] @ normal)) for f in range(13, 40)]
    assert lean[0] > 0.01 and min(lean[1:]) < -0.005, lean


def _state(obj):
    s = api.envfx().wind
    return (s.grass_push, s.push_buffer, len(bpy.data.images), tuple(m.name for m in obj.modifiers))


def test_push_without_a_buffer_changes_nothing_and_says_what_to_do(mods, envfx, tmp_path):
    scene = api.scene()
    obj = _field(blades=20)
    mods.ops.add_wind(scene, [obj])
    before = _state(obj)
    rest = _evaluated(mods, obj, 7)
    with pytest.raises(RuntimeError, match="No baked buffer in scene 'Scene' to push the grass, and it cannot be "
                                           "pushed live: No actor collection.*Bake Interaction Buffer"):
        api.ops.wind_grass_push()
    assert _state(obj) == before
    np.testing.assert_array_equal(_evaluated(mods, obj, 7), rest)
    # push turned on by hand without a buffer: the group's push stays off (the panel says why)
    api.envfx(scene).wind.grass_push = True
    np.testing.assert_array_equal(_evaluated(mods, obj, 7), rest)
    assert api.socket(bpy.data.node_groups["EnvFX Wind"].nodes["Push On"].outputs[0]).default_value == 0.0


def test_push_on_and_off_and_the_group_skips_it_when_off(mods, envfx, tmp_path):
    scene = api.scene()
    obj = _field(blades=50)
    mods.ops.add_wind(scene, [obj])
    plain = _evaluated(mods, obj, 13)
    image = _baked_buffer(envfx, tmp_path)
    assert api.ops.wind_grass_push() == {"FINISHED"}
    tree = bpy.data.node_groups["EnvFX Wind"]
    push_image = api.of(bpy.types.GeometryNodeInputImage, tree.nodes["Push Image"])
    assert api.envfx(scene).wind.push_buffer == image and push_image.image == image
    assert np.abs(_evaluated(mods, obj, 13) - plain).max() > 0.05
    assert api.ops.wind_grass_push(on=False) == {"FINISHED"}
    assert api.socket(tree.nodes["Push On"].outputs[0]).default_value == 0.0 and push_image.image is None
    np.testing.assert_array_equal(_evaluated(mods, obj, 13), plain)
    # the image of another bake: refused, nothing changed
    other = bpy.data.images.new("Not A Buffer", 4, 4)
    with pytest.raises(Exception, match="no baked interaction buffer"):
        mods.ops.grass_push(scene, image=other)
    assert not api.envfx(scene).wind.grass_push
    assert os.path.isfile(bpy.path.abspath(image.filepath))



def test_push_grass_loads_the_bake_of_the_snow_panel_s_walkers(mods, envfx, tmp_path):
    """The user's path with no snow and no water: a walker in the Snow panel's Actors, Bake Interaction Buffer into
    the Output Folder, Push Grass (which loads that bake): the grass around the walker is pushed, equal to the
    twin."""
    scene = api.scene()
    obj = _field(blades=300)
    mods.ops.add_wind(scene, [obj])
    walkers = bpy.data.collections.new("Walkers")
    scene.collection.children.link(walkers)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(-4.0, 0.0, 0.45))
    walker = api.active()
    for coll in list(walker.users_collection):
        coll.objects.unlink(walker)
    walkers.objects.link(walker)
    walker.keyframe_insert("location", frame=1)
    walker.location = (4.0, 0.0, 0.45)
    walker.keyframe_insert("location", frame=25)
    s = api.envfx(scene).snow
    s.actors, s.frame_start, s.frame_end, s.buffer_resolution = walkers, 1, 30, 96
    s.output_dir, s.sequence = str(tmp_path), True
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    assert api.ops.wind_grass_push() == {"FINISHED"}
    assert api.envfx(scene).wind.push_buffer is not None
    got = _evaluated(mods, obj, 13)
    assert np.abs(got - _twin(mods, obj, 13)).max() < 1e-4
    assert np.abs(got - _twin(mods, obj, 13, push=False)).max() > 0.1


def real_grass_in_wind(mods, corpus_asset):
    """The corpus grass clump (a third-party OBJ: imported Y up with an unapplied centimetre scale, away from the
    origin) alone in the scene, baked as Grass and in the wind. Returns (its objects, the start and end bottom
    points of a walk across it along +x, its height)."""
    for o in list(bpy.data.objects):
        if o.type == "MESH":
            bpy.data.objects.remove(o)
    scene = api.scene()
    objects = corpus_asset("grass")
    mods.ops.bake(scene, objects, ao_samples=0)
    for o in objects:
        api.envfx(o).wind.category = "GRASS"
    mods.ops.add_wind(scene, objects)
    corners = np.array([o.matrix_world @ v.co for o in objects for v in api.mesh(o).vertices])
    lo, hi = corners.min(0), corners.max(0)
    centre = 0.5 * (lo + hi)
    start, end = centre + np.array([-2.0, -0.1, 0.0]), centre + np.array([2.0, 0.1, 0.0])
    start[2] = end[2] = lo[2]
    return objects, start, end, float(hi[2] - lo[2])


def assert_pushed_as_twin(mods, objects, height, push=True):
    """At frames 9, 13 and 30 each object equals its twin with the push (``push``, as ``_twin`` takes it) to 1e-4 m,
    and the walker moves the blades (against the same wind without push) by more than 2% of the clump's height."""
    moved = 0.0
    for frame in (9, 13, 30):
        for o in objects:
            got = _evaluated(mods, o, frame)
            scale = np.array(o.matrix_world.to_3x3())  # object space is in centimetres: compared in metres
            assert np.abs((got - _twin(mods, o, frame, push)) @ scale.T).max() < 1e-4, (o.name, frame)
            moved = max(moved, float(np.abs((got - _twin(mods, o, frame, push=False)) @ scale.T).max()))
    assert moved > 0.02 * height, (moved, height)


def test_a_real_grass_clump_is_pushed_and_equals_its_twin(mods, envfx, corpus_asset, tmp_path):
    """The corpus grass clump baked as Grass, in the wind, and pushed by a walker crossing it through a baked
    buffer: each of its objects equals its twin to 1e-4 with push on, and the walker moves the blades."""
    objects, start, end, height = real_grass_in_wind(mods, corpus_asset)
    centre = 0.5 * (start + end)
    snow = importlib.import_module(envfx.__name__ + ".core.snow")
    nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.snow")
    frames = np.arange(1, 61)
    s = np.clip((frames - 1) / 24.0, 0.0, 1.0)[:, None]
    tracks = (start + s * (end - start))[:, None, :]
    buf = snow.BufferParams(resolution=96, size=10.0, origin=(float(centre[0]) - 5.0, float(centre[1]) - 5.0))
    result = snow.bake(tracks, [0.6], [0.2], snow.StampParams(fps=24.0), buf, frame_start=1, out_dir=str(tmp_path),
                       sequence=True)
    image = bpy.data.images.load(result.files[0], check_existing=True)
    image.source = "SEQUENCE"
    api.set_colorspace(image, "Non-Color")
    image.alpha_mode = "CHANNEL_PACKED"
    nodes.ensure_buffer_group(image, snow.read_buffer_metadata(result.metadata_path))
    assert "pushed by the baked buffer" in mods.ops.grass_push(api.scene())
    assert_pushed_as_twin(mods, objects, height)


def test_a_push_from_a_bake_no_snow_reads_survives_save_and_reload(mods, envfx, tmp_path, save_and_reopen):
    """Push Grass loading the Snow bake's Output Folder (no snow in the file reads that bake): saved and opened
    again, the grass is still pushed, as its twin says (the bake's group, whose only reader is the push, is kept)."""
    scene = api.scene()
    obj = _field(blades=120)
    mods.ops.add_wind(scene, [obj])
    api.envfx(scene).snow.output_dir = _bake_on_disk(envfx, tmp_path / "bake")
    assert "pushed by the baked buffer" in mods.ops.grass_push(scene)
    save_and_reopen("meadow.blend")
    scene, obj = api.scene(), bpy.data.objects["Field"]
    assert mods.nodes.push_source(scene)[1] is not None
    got = _evaluated(mods, obj, 13)
    assert np.abs(got - _twin(mods, obj, 13)).max() < 1e-4
    assert np.abs(got - _twin(mods, obj, 13, push=False)).max() > 0.1


# --- `blender -c envfx wind FILE --push-grass` --------------------------------------------------------------------

def _bake_on_disk(envfx, folder):
    """The walker's buffer (WALK, frames 1-100) baked into ``folder`` as `envfx snow --bake` writes it."""
    snow = importlib.import_module(envfx.__name__ + ".core.snow")
    (f0, p0), (f1, p1) = WALK
    s = np.clip((np.arange(1, 101) - f0) / (f1 - f0), 0.0, 1.0)[:, None]
    tracks = (np.array(p0) + s * (np.array(p1) - np.array(p0)))[:, None, :]
    snow.bake(tracks, [0.6], [0.2], snow.StampParams(fps=24.0),
              snow.BufferParams(resolution=96, size=10.0, origin=(-5.0, -5.0)), frame_start=1, out_dir=str(folder))
    return str(folder)


def _field_file(path, blades=120):
    """A file whose scene has the grass field "Field" (baked as Grass, in the wind) and no bake."""
    bpy.ops.wm.read_homefile(app_template="")
    obj = _field(blades=blades)
    api.envfx().wind.strength = 0.7
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return str(path), obj.name


def _digest(path):
    with open(path, "rb") as fh:
        return hash(fh.read())


def test_cli_push_grass_reads_the_buffer_given_and_saves_it_with_the_file(mods, envfx, tmp_path, capsys):
    """`wind FILE --push-grass --push-buffer DIR --push-strength X --push-sway Y --add`: the file is saved with
    the push on that bake (its strength and sway), and its grass, opened again, is pushed as the twin says;
    `--export-engines` writes the push's frames into envfx_wind.json; `--no-push-grass` turns it off again, and
    `//` is the file's folder."""
    path, name = _field_file(tmp_path / "meadow.blend")
    bake = _bake_on_disk(envfx, tmp_path / "bake")
    code = envfx.cli.main(["wind", path, "--objects", name, "--ao-samples", "0", "--add", "--push-grass",
                           "--push-buffer", "//bake", "--push-strength", "3.5", "--push-sway", "0.4",
                           "--export-engines", str(tmp_path / "engines")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert f"envfx wind: {path}: Grass pushed by the baked buffer" in out.out
    assert "push strength 3.5; push sway 0.4" in out.out
    meta = json.loads((tmp_path / "engines" / "envfx_wind.json").read_text())
    assert meta["push"]["on"] and meta["push"]["strength"] == 3.5 and meta["push"]["folder"] == bake
    assert len(meta["push"]["frames"]) == 100
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = api.scene()
    s = api.envfx(scene).wind
    assert s.grass_push and s.push_buffer is not None and (s.push_strength, s.push_sway) == (3.5, pytest.approx(0.4))
    assert os.path.dirname(bpy.path.abspath(s.push_buffer.filepath)) == bake
    obj = bpy.data.objects[name]
    got = _evaluated(mods, obj, 13)
    assert np.abs(got - _twin(mods, obj, 13)).max() < 1e-4
    assert np.abs(got - _twin(mods, obj, 13, push=False)).max() > 0.1
    assert envfx.cli.main(["wind", path, "--objects", name, "--ao-samples", "0", "--no-push-grass"]) == 0
    assert "Grass push off" in capsys.readouterr().out
    bpy.ops.wm.open_mainfile(filepath=path)
    assert not api.envfx().wind.grass_push


def test_cli_push_grass_without_a_buffer_exits_2_and_leaves_the_file(mods, envfx, tmp_path, capsys):
    """No bake in the file, none given: a clear message, exit 2, the file as it was; in a batch the other file
    (given its buffer) is done."""
    path, name = _field_file(tmp_path / "meadow.blend", blades=20)
    before = _digest(path)
    assert envfx.cli.main(["wind", path, "--objects", name, "--ao-samples", "0", "--push-grass"]) == 2
    err = capsys.readouterr().err
    assert (f"envfx wind: {path}: error: No baked buffer in scene 'Scene' to push the grass, and it cannot be "
            f"pushed live: No actor collection") in err
    assert "Bake Interaction Buffer), then Push Grass" in err
    assert _digest(path) == before
    # a batch: the file with its bake beside it is done, the one without is named and left alone
    other = tmp_path / "b"
    other.mkdir()
    shutil.copy(path, other / "meadow2.blend")
    _bake_on_disk(envfx, other / "bake")
    code = envfx.cli.main(["wind", path, str(other / "meadow2.blend"), "--objects", name, "--ao-samples", "0",
                           "--push-grass", "--push-buffer", "//bake"])
    err = capsys.readouterr().err
    assert code == 2 and f"1 of 2 files failed and were left unchanged: {path}" in err
    assert "--push-buffer '//bake' holds no baked interaction buffer" in err
    assert _digest(path) == before
    bpy.ops.wm.open_mainfile(filepath=str(other / "meadow2.blend"))
    assert api.envfx().wind.grass_push


@pytest.mark.parametrize("args,message", [
    (["--push-buffer", "BAKE"], "--push-buffer is read by --push-grass: add --push-grass, or drop --push-buffer"),
    (["--no-push-grass", "--push-buffer", "BAKE"], "(--no-push-grass turns the push off)"),
    (["--push-grass", "--push-strength", "-1"], "--push-strength -1.0: use a number from 0 to 100"),
    (["--push-grass", "--push-sway", "nan"], "--push-sway nan: use a number from 0 to 100"),
    (["--push-grass", "--push-buffer", "EMPTY"], "holds no baked interaction buffer (no snow_buffer.json in"),
    (["--remove", "--push-grass", "--push-strength", "2"], "--remove only removes the live wind (no bake): drop "
                                                           "--push-grass, --push-strength"),
    (["--remove", "--no-push-grass"], "drop --no-push-grass"),
    (["--push-grass", "--push-buffer", ""], "--push-buffer is empty: give the folder of a baked interaction buffer"),
])
def test_cli_push_options_it_cannot_use_are_refused_before_the_file_is_opened(mods, envfx, tmp_path, capsys, args,
                                                                              message):
    path, name = _field_file(tmp_path / "meadow.blend", blades=10)
    (tmp_path / "empty").mkdir()
    before, stamp = _digest(path), os.stat(path).st_mtime_ns
    folders = {"BAKE": str(tmp_path / "bake"), "EMPTY": str(tmp_path / "empty")}
    args = [folders.get(a, a) for a in args]
    assert envfx.cli.main(["wind", path, "--objects", name, *args]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert (_digest(path), os.stat(path).st_mtime_ns) == (before, stamp)
