"""Snow in real Blender: cover generation, live trails (geometry nodes) against core.snow, buffer bake."""

import json
import math
import os
from pathlib import Path
from typing import Any, Callable

import bmesh
import bpy
import numpy as np
import pytest

from tests.blender import api


def clear_scene() -> None:
    for o in list(api.scene().objects):
        bpy.data.objects.remove(o)


def grid_object(name: str, size: float = 10.0, segments: int = 10,
                location: tuple[float, float, float] = (0, 0, 0), tilt: float = 0.0) -> bpy.types.Object:
    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=segments, y_segments=segments, size=size / 2)
    if tilt:
        for v in bm.verts:
            v.co.z += tilt * v.co.x
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new(name, me)
    obj.location = location
    api.scene().collection.objects.link(obj)
    return obj


def sphere_object(name: str, radius: float = 0.5, coll: bpy.types.Collection | None = None) -> bpy.types.Object:
    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=8, v_segments=6, radius=radius)
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new(name, me)
    (coll or api.scene().collection).objects.link(obj)
    return obj


def select_only(*objs: bpy.types.Object) -> None:
    for o in api.scene().objects:
        o.select_set(False)
    for o in objs:
        o.select_set(True)
    api.view_layer().objects.active = objs[0] if objs else None


def snow_scene(envfx, spacing: float = 0.1, size: float = 8.0, thickness: float = 0.3, border: float = 0.3,
               segments: int = 8, before_snow: Callable[[bpy.types.Object], None] | None = None,
               ) -> tuple[bpy.types.Scene, bpy.types.Object, bpy.types.Collection]:
    """A ground grid covered with snow and an empty actor collection: (scene, snow, actors). ``before_snow(ground)``
    runs before the snow is made (to bend the ground, for example)."""
    scene = api.scene()
    clear_scene()
    ground = grid_object("Ground", size=size, segments=segments)
    if before_snow is not None:
        before_snow(ground)
    s = api.envfx(scene).snow
    s.spacing, s.thickness, s.border_width = spacing, thickness, border
    select_only(ground)
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in scene.objects if o.get("envfx_snow") == 0][0]
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    s.actors = actors
    return scene, snow, actors


def animate(obj: bpy.types.Object, keys: list[tuple[int, tuple[float, float, float]]]) -> None:
    for frame, loc in keys:
        obj.location = loc
        obj.keyframe_insert("location", frame=frame)


def run_frames(scene: bpy.types.Scene, start: int, end: int, actor_names: list[str],
               offsets: list[float]) -> np.ndarray:
    """Step the scene frame by frame (the simulation needs every frame) and record the actors' bottoms."""
    tracks = []
    for f in range(start, end + 1):
        scene.frame_set(f)
        tracks.append([np.array(bpy.data.objects[n].matrix_world.translation) - (0, 0, off)
                       for n, off in zip(actor_names, offsets)])
    return np.array(tracks)


def evaluated_offset(envfx, obj: bpy.types.Object,
                     depsgraph: bpy.types.Depsgraph | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rest positions, evaluated z offset) of ``obj`` in ``depsgraph`` (default: the current scene's)."""
    dg = depsgraph or bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    mesh = ev.to_mesh()
    try:
        p = envfx.bridge.get_positions(mesh).astype(np.float64)
    finally:
        ev.to_mesh_clear()
    rest = envfx.bridge.get_positions(api.mesh(obj)).astype(np.float64)
    return rest, p[:, 2] - rest[:, 2]


def thickness_of(obj: bpy.types.Object) -> np.ndarray:
    """The snow thickness the generation stored per vertex of the snow mesh ``obj``."""
    mesh = api.mesh(obj)
    buf = np.empty(len(mesh.vertices), dtype=np.float32)
    api.of(bpy.types.FloatAttribute, mesh.attributes["snow_thickness"]).data.foreach_get("value", buf)
    return buf.astype(np.float64)


def core_expected(envfx, scene: bpy.types.Scene, snow: bpy.types.Object, tracks: np.ndarray, specs: list,
                  occluded: np.ndarray | None = None) -> np.ndarray:
    core = envfx.core.snow
    rest = envfx.bridge.get_positions(api.mesh(snow)).astype(np.float64)
    params = envfx.operators.snow.stamp_params(scene)
    thick = thickness_of(snow)
    down, rim = core.simulate_points(rest, tracks, [r for _, r, _, _ in specs], [d for _, _, d, _ in specs],
                                     params, occluded=occluded, occluder_depth=thick)
    return np.maximum(rim - down, -envfx.shader_nodes.snow.GROUND_KEEP * thick)


# --- live trails vs core ----------------------------------------------------------------------------------

def test_trails_match_core_stamp_and_persistence(envfx):
    scene, snow, actors = snow_scene(envfx)
    a = sphere_object("A", 0.5, actors)
    b = sphere_object("B", 0.35, actors)
    api.envfx(b).snow.depth = 0.12
    animate(a, [(1, (-3, -1, 0.5)), (8, (2.5, 0.5, 0.45))])
    animate(b, [(1, (0, 3, 0.38)), (8, (0.3, -3, 0.3))])
    api.linear(a)
    api.linear(b)
    scene.frame_set(1)
    api.envfx(scene).snow.refill_rate = 0.3
    assert api.ops.snow_trails_add() == {"FINISHED"}
    specs, _ = envfx.operators.snow.actor_specs(scene)
    tracks = run_frames(scene, 1, 8, [n for n, *_ in specs], [o for *_, o in specs])
    rest, got = evaluated_offset(envfx, snow)
    expected = core_expected(envfx, scene, snow, tracks, specs)
    assert np.abs(got - expected).max() < 1e-4
    assert got.min() < -0.2 and got.max() > 0.04       # trails and rims are there


def test_single_stamp_profile_matches_core(envfx):
    scene, snow, actors = snow_scene(envfx, spacing=0.05, size=4.0)
    a = sphere_object("A", 0.6, actors)
    a.location = (0.13, -0.07, 0.6)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    specs, _ = envfx.operators.snow.actor_specs(scene)
    run_frames(scene, 1, 1, ["A"], [specs[0][3]])
    rest, got = evaluated_offset(envfx, snow)
    core = envfx.core.snow
    r, dep = specs[0][1], specs[0][2]
    u = np.hypot(rest[:, 0] - 0.13, rest[:, 1] + 0.07) / r
    down, rim, _ = core.stamp_profile(u, dep, 0.35, 0.5)
    expected = np.maximum(rim - down, -envfx.shader_nodes.snow.GROUND_KEEP * thickness_of(snow))
    assert np.abs(got - expected).max() < 1e-4
    assert got.min() == pytest.approx(expected.min(), abs=1e-4) and expected.min() < -0.95 * dep


def test_fast_straight_trail_is_continuous(envfx):
    scene, snow, actors = snow_scene(envfx, spacing=0.05, size=8.0, thickness=0.5)
    a = sphere_object("A", 0.3, actors)
    animate(a, [(1, (-3.5, 0.0, 0.3)), (6, (3.5, 0.0, 0.3))])  # 1.4 per frame = 4.7 radii
    api.linear(a)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, 7):
        scene.frame_set(f)
    rest, got = evaluated_offset(envfx, snow)
    line = (np.abs(rest[:, 1]) < 1e-6) & (np.abs(rest[:, 0]) < 3.0)
    assert line.sum() > 50
    depth = -got[line]
    assert depth.min() > 0.95 * depth.max()
    assert depth.max() == pytest.approx(0.15, rel=1e-3)


def test_occluders_hold_snow_down_and_vertical_fade(envfx):
    scene, snow, actors = snow_scene(envfx)
    high = sphere_object("High", 0.5, actors)
    high.location = (2, 2, 3.0)                       # far above the snow: no stamp
    occ_coll = bpy.data.collections.new("Occluders")
    scene.collection.children.link(occ_coll)
    quad = grid_object("Quad", size=1.0, segments=1, location=(-2, -2, 0.1))
    scene.collection.objects.unlink(quad)
    occ_coll.objects.link(quad)
    api.envfx(scene).snow.occluders = occ_coll
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, 3):
        scene.frame_set(f)
    rest, got = evaluated_offset(envfx, snow)
    thick = thickness_of(snow)
    under = (np.abs(rest[:, 0] + 2) < 0.45) & (np.abs(rest[:, 1] + 2) < 0.45)
    keep = envfx.shader_nodes.snow.GROUND_KEEP
    np.testing.assert_allclose(got[under], -keep * thick[under], atol=1e-5)   # down to the ground
    near_high = np.hypot(rest[:, 0] - 2, rest[:, 1] - 2) < 0.7
    assert np.abs(got[near_high]).max() == 0.0


def play_and_bake(envfx, tmp_path: Path, lift: float = 0.0, linear: bool = False, sequence: bool = False,
                  ) -> tuple[bpy.types.Scene, bpy.types.Object, np.ndarray, np.ndarray]:
    """One sphere actor crossing an 8 m snow patch over frames 1..10 (``lift`` higher; linear keys or the
    default ease): the live trails are played, then the buffer is baked into ``tmp_path``.
    Returns (scene, snow, rest positions, live offsets at frame 10)."""
    scene, snow, actors = snow_scene(envfx, spacing=0.1, size=8.0)
    a = sphere_object("A", 0.6, actors)
    animate(a, [(1, (-2.5, -1.0, 0.55 + lift)), (10, (2.0, 1.5, 0.5 + lift))])
    if linear:
        api.linear(a)
    s = api.envfx(scene).snow
    s.frame_start, s.frame_end = 1, 10
    s.buffer_resolution = 128
    s.output_dir = str(tmp_path)
    s.sequence = sequence
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, 11):
        scene.frame_set(f)
    rest, live = evaluated_offset(envfx, snow)
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    return scene, snow, rest, live


@pytest.mark.parametrize("system, scale_length, metres", [("METRIC", 0.01, 0.01), ("NONE", 0.01, 1.0)])
def test_buffer_json_gives_engines_the_scene_unit_scale(envfx, tmp_path, system, scale_length, metres):
    """The buffer JSON's engine sampling uses the metres per Blender unit of the scene's FBX export (its unit
    scale; 1 m with the unit system None, as the bend's engine export)."""
    units = api.scene().unit_settings
    units.system, units.scale_length = system, scale_length
    play_and_bake(envfx, tmp_path, linear=True)
    meta = json.loads((tmp_path / "snow_buffer.json").read_text())
    assert meta["unit_scale"] == pytest.approx(metres)
    assert meta["engines"]["UNREAL"]["units_per_blender_unit"] == pytest.approx(100.0 * metres)
    assert meta["engines"]["GODOT"]["units_per_blender_unit"] == 1.0


@pytest.mark.parametrize("lift", [0.0, 0.7])
def test_live_trails_equal_bake_within_a_texel(envfx, tmp_path, lift):
    """lift 0.7: the actor's bottom is 0.35 to 0.3 above the snow, in the vertical fade (weights 0.3 to 0.4)."""
    scene, snow, rest, got = play_and_bake(envfx, tmp_path, lift=lift, linear=True)
    core = envfx.core.snow
    meta = json.loads((tmp_path / "snow_buffer.json").read_text())
    buf = core.read_exr(str(tmp_path / "snow_buffer.exr"))
    texel = meta["texel_size"]
    origin = meta["frames"][-1]["origin"]
    sampled = core.sample_buffer(buf, origin, texel, rest[:, :2], 0)
    sampled = np.maximum(sampled, -envfx.shader_nodes.snow.GROUND_KEEP * thickness_of(snow))
    # the profile's steepest slope times one texel bounds the sampling error
    specs, _ = envfx.operators.snow.actor_specs(scene)
    r, dep = specs[0][1], specs[0][2]
    slope = 2.0 * dep / r
    assert np.abs(got - sampled).max() <= slope * texel
    assert got.min() < (-0.2 if lift == 0 else -0.05)
    if lift:
        assert got.min() > -0.15                      # faded, not a full-depth trail


# --- buffer bake ------------------------------------------------------------------------------------------

def test_bake_writes_exr_blender_reads_back(envfx, tmp_path):
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    a = sphere_object("A", 0.5, actors)
    animate(a, [(1, (-2, 0, 0.5)), (5, (2, 0, 0.5))])
    s = api.envfx(scene).snow
    s.frame_start, s.frame_end = 1, 5
    s.buffer_resolution = 64
    s.output_dir = str(tmp_path / "out")
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    names = sorted(os.listdir(tmp_path / "out"))
    assert names == ["snow_buffer.json"] + [f"snow_buffer_{f:04d}.exr" for f in range(1, 6)]
    img = bpy.data.images.load(str(tmp_path / "out" / "snow_buffer_0005.exr"))
    assert tuple(img.size) == (64, 64) and img.is_float
    px = np.empty(64 * 64 * 4, dtype=np.float32)
    api.pixels(img).foreach_get(px)
    px = px.reshape(64, 64, 4)                       # Blender rows start at the bottom (min world y)
    ours = envfx.core.snow.read_exr(str(tmp_path / "out" / "snow_buffer_0005.exr"))
    np.testing.assert_allclose(px, ours, atol=1e-6)
    assert px[..., 0].min() < -0.2 and px[..., 3].max() > 0.9
    assert scene.frame_current == 1


def test_follow_pivot_bake(envfx, tmp_path):
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    a = sphere_object("A", 0.5, actors)
    animate(a, [(1, (-2, 0, 0.5)), (6, (2, 0, 0.5))])
    s = api.envfx(scene).snow
    s.framing = "FOLLOW"
    s.pivot = a
    s.buffer_size = 6.0
    s.buffer_resolution = 48
    s.frame_start, s.frame_end = 1, 6
    s.output_dir = str(tmp_path)
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    meta = json.loads((tmp_path / "snow_buffer.json").read_text())
    t = meta["texel_size"]
    for fr in meta["frames"]:
        k = np.array(fr["origin"]) / t
        np.testing.assert_allclose(k, np.round(k), atol=1e-6)
    assert len({tuple(f["origin"]) for f in meta["frames"]}) > 1


@pytest.mark.parametrize("change,msg", [
    (lambda s, tmp: setattr(s, "frame_end", 0), "reversed"),
    (lambda s, tmp: setattr(s, "output_dir", ""), "No output folder"),
    (lambda s, tmp: setattr(s, "output_dir", str(tmp / "file.txt" / "sub")), "cannot be written"),
    (lambda s, tmp: setattr(s, "output_dir", "//snow_buffer"), "relative to the .blend file, which is not saved yet"),
    (lambda s, tmp: setattr(s, "actors", None), "No actor collection"),
    # a frame change stops at Blender's last frame: the bake would repeat it
    (lambda s, tmp: setattr(s, "frame_end", 2_000_000), "goes beyond Blender's frames"),
    # a follow window of a micrometre: its ripples would take millions of steps a frame
    (lambda s, tmp: (setattr(s, "framing", "FOLLOW"), setattr(s, "pivot", bpy.data.objects["A"]),
                     setattr(s, "buffer_size", 1e-6)), r"steps a frame \(at most 256\)\. Make the window larger"),
])
def test_bake_bad_input(envfx, tmp_path, change, msg, capsys):
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    sphere_object("A", 0.5, actors)
    (tmp_path / "file.txt").write_text("x")
    s = api.envfx(scene).snow
    s.frame_start, s.frame_end, s.output_dir = 1, 3, str(tmp_path)
    change(s, tmp_path)
    with pytest.raises(RuntimeError, match=msg):
        api.ops.snow_bake_buffer()
    assert sorted(os.listdir(tmp_path)) == ["file.txt"]


def test_a_tiny_still_actor_without_snow_is_refused_not_baked_for_ever(envfx, tmp_path, capsys):
    """Whole Area framing with no snow spans the actors' paths and twice their radius around them: one actor standing
    still with a Snow Radius of 1e-30 makes a window of 4e-30, whose ripples would take 2.8e29 steps a frame. The
    bake says so and writes nothing; the live grass push says so once and stops, with no traceback."""
    from importlib import import_module

    scene = api.scene()
    clear_scene()
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    actor = sphere_object("A", 0.5, actors)
    api.envfx(actor).snow.radius = 1e-30
    s = api.envfx(scene).snow
    s.actors, s.framing, s.buffer_resolution = actors, "AREA", 16
    s.frame_start, s.frame_end, s.output_dir = 1, 3, str(tmp_path)
    with pytest.raises(RuntimeError, match=r"a window of 4e-30 over 16 texels\): its ripples would take 2\.78e\+29 "
                                           r"steps a frame \(at most 256\)\. Make the window larger \(Whole Area: "
                                           r"snow over more ground or actors with a larger Snow Radius"):
        api.ops.snow_bake_buffer()
    assert os.listdir(tmp_path) == []
    live_push = import_module(envfx.__name__ + ".operators.snow.live_push")
    with pytest.raises(live_push.SnowInputError, match=r"Make the window larger .*\(live grass push steps this "
                                                      r"buffer\)"):
        live_push._build(scene)
    assert scene.frame_current == 1 and "Traceback" not in capsys.readouterr().err


# --- cover generation -------------------------------------------------------------------------------------

def test_generate_slope_occlusion_taper_spacing(envfx):
    scene = api.scene()
    clear_scene()
    flat = grid_object("Flat", size=6.0, segments=6, tilt=0.3)      # ~17 deg
    steep = grid_object("Steep", size=3.0, segments=3, location=(10, 0, 0), tilt=3.0)  # ~72 deg
    box = bpy.data.objects.new("Rock", bpy.data.meshes.new("Rock"))
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bm.to_mesh(api.mesh(box))
    bm.free()
    box.location = (0.5, 0.5, 1.5)                  # floats above the slope
    scene.collection.objects.link(box)
    s = api.envfx(scene).snow
    s.spacing, s.thickness, s.border_width = 0.1, 0.25, 0.4
    select_only(flat, steep)
    api.view_layer().update()
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in scene.objects if o.get("envfx_snow") == 0]
    assert len(snow) == 1
    v = envfx.bridge.get_positions(snow[0].data)
    assert v[:, 0].max() <= 3.0 + 1e-5                      # nothing on the steep patch
    assert not ((np.abs(v[:, 0] - 0.5) < 0.45) & (np.abs(v[:, 1] - 0.5) < 0.45)).any()
    thick = thickness_of(snow[0])
    on_edge = (np.abs(np.abs(v[:, 0]) - 3.0) < 1e-4) | (np.abs(np.abs(v[:, 1]) - 3.0) < 1e-4)
    assert on_edge.any() and np.abs(thick[on_edge]).max() == 0.0
    assert thick.max() == pytest.approx(0.25, rel=1e-5)
    me = api.mesh(snow[0])
    e = np.empty(len(me.edges) * 2, dtype=np.int32)
    me.edges.foreach_get("vertices", e)
    e = e.reshape(-1, 2)
    length = np.linalg.norm(v[e[:, 0]] - v[e[:, 1]], axis=1)
    assert abs(np.median(length) / 0.1 - 1.0) < 0.2
    assert api.of(bpy.types.Material, me.materials[0]).name == "EnvFX Snow"


def _generated_over_a_grid(lods: int, spacing: float) -> bpy.types.Object:
    """A fresh 4 m grid "Ground" covered by Generate Snow with ``lods`` levels ``spacing`` apart; the grid."""
    clear_scene()
    ground = grid_object("Ground", size=4.0, segments=4)
    api.envfx().snow.lods = lods
    api.envfx().snow.spacing = spacing
    select_only(ground)
    assert api.ops.snow_generate() == {"FINISHED"}
    return ground


def test_generate_lods(envfx):
    _generated_over_a_grid(3, 0.1)
    levels = sorted((o["envfx_snow"], len(api.mesh(o).vertices)) for o in api.scene().objects
                    if o.get("envfx_snow") is not None)
    assert [lv for lv, _ in levels] == [0, 1, 2]
    assert levels[0][1] > levels[1][1] > levels[2][1]


def test_generate_snow_pressed_again_regenerates_the_cover_in_place(envfx):
    """Generate Snow pressed again over the same terrain (a spacing tweaked, or the terrain renamed meanwhile) makes
    no second cover: the one there gets the new meshes and keeps its objects' names and levels."""
    ground = _generated_over_a_grid(2, 0.2)
    first = {o.name: len(api.mesh(o).vertices) for o in envfx.operators.snow.snow_objects(api.scene())}
    assert sorted(first) == ["Ground Snow LOD0", "Ground Snow LOD1"]
    api.envfx().snow.spacing = 0.1
    ground.name = "Level Floor"
    select_only(ground)
    meshes = sorted(m.name for m in bpy.data.meshes)
    assert api.ops.snow_generate() == {"FINISHED"}
    again = {o.name: len(api.mesh(o).vertices) for o in envfx.operators.snow.snow_objects(api.scene())}
    assert sorted(again) == sorted(first) and again["Ground Snow LOD0"] > first["Ground Snow LOD0"]
    assert sorted(m.name for m in bpy.data.meshes) == meshes  # the old meshes gone, the new ones in their names


@pytest.mark.parametrize("scale_length", [0.01, 1000.0])
def test_generate_any_unit_scale(envfx, scale_length):
    scene = api.scene()
    scene.unit_settings.scale_length = scale_length
    clear_scene()
    ground = grid_object("Ground", size=4.0, segments=4)
    api.envfx(scene).snow.spacing = 0.1
    select_only(ground)
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in scene.objects if o.get("envfx_snow") == 0][0]
    assert len(api.mesh(snow).vertices) == 41 * 41


def _state() -> tuple[list[str], list[str], list[str]]:
    return (sorted(o.name for o in bpy.data.objects), sorted(m.name for m in bpy.data.meshes),
            sorted(c.name for c in bpy.data.collections))


def test_generate_bad_input_leaves_scene(envfx):
    scene = api.scene()
    wall = grid_object("Wall", size=2.0, segments=2, tilt=20.0)
    select_only(wall)
    before = _state()
    with pytest.raises(RuntimeError, match="No face of the selection looks up"):
        api.ops.snow_generate()
    assert _state() == before
    big = grid_object("Big", size=1000.0, segments=2)
    select_only(big)
    api.envfx(scene).snow.spacing = 0.001
    before = _state()
    with pytest.raises(RuntimeError, match=r"about [0-9,]+ vertices, over the budget"):
        api.ops.snow_generate()
    assert _state() == before
    select_only()
    with pytest.raises(RuntimeError, match="select the terrain"):
        api.ops.snow_generate()
    assert _state() == before
    # a transform that is not a number (a broken import): named, not 'no face looks up'
    lost = grid_object("Lost", size=2.0, segments=2)
    lost.location.x = float("nan")
    select_only(lost)
    before = _state()
    with pytest.raises(RuntimeError, match=r"The location, rotation or scale of Lost \(or of a parent\) is not a "
                       r"number \(NaN or infinite\): fix the transform"):
        api.ops.snow_generate()
    lost.location.x, lost.scale = 0.0, (0.0, 0.0, 0.0)
    with pytest.raises(RuntimeError, match=r"Every face of the selection has no area \(scaled to 0"):
        api.ops.snow_generate()
    assert _state() == before


# --- actors -----------------------------------------------------------------------------------------------

def test_trails_bad_actors(envfx):
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    before = [m.name for m in snow.modifiers]
    with pytest.raises(RuntimeError, match="has no usable actors"):  # empty collection
        api.ops.snow_trails_add()
    lamp = bpy.data.objects.new("Lamp", bpy.data.lights.new("Lamp", "POINT"))
    actors.objects.link(lamp)
    with pytest.raises(RuntimeError, match=r"Lamp \(light objects do not touch snow\)"):
        api.ops.snow_trails_add()
    api.envfx(scene).snow.actors = None
    with pytest.raises(RuntimeError, match="No actor collection"):
        api.ops.snow_trails_add()
    assert [m.name for m in snow.modifiers] == before
    assert bpy.data.node_groups.get("EnvFX Snow Trails") is None


def test_an_actor_whose_place_is_not_a_number_is_named_and_carves_nothing(envfx, tmp_path, capsys):
    """An actor with a NaN location (a broken import or driver): Add Trails names it, and the buffer bake is the bake
    without it (it stopped with 'cannot convert float NaN to integer')."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    animate(sphere_object("A", 0.5, actors), [(1, (-2, 0, 0.5)), (4, (2, 0, 0.5))])
    bad = sphere_object("Bad", 0.5, actors)
    bad.location = (float("nan"), 0.0, 0.5)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    assert "Skipped: Bad (its location, rotation or scale (or its parent's) is not a number" in capsys.readouterr().out
    s = api.envfx(scene).snow
    s.frame_start, s.frame_end, s.buffer_resolution = 1, 4, 32
    s.output_dir = str(tmp_path / "with")
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    bpy.data.objects.remove(bad)
    s.output_dir = str(tmp_path / "without")
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    got = envfx.core.snow.read_exr(str(tmp_path / "with" / "snow_buffer_0004.exr"))
    np.testing.assert_array_equal(got, envfx.core.snow.read_exr(str(tmp_path / "without" / "snow_buffer_0004.exr")))
    assert got[..., 0].min() < -0.1


def test_empty_actor_uses_its_radius_setting_and_lights_skipped(envfx):
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    empty = bpy.data.objects.new("Marker", None)
    actors.objects.link(empty)
    api.envfx(empty).snow.radius = 0.8
    api.envfx(empty).snow.depth = 0.1
    actors.objects.link(bpy.data.objects.new("Lamp", bpy.data.lights.new("Lamp", "POINT")))
    specs, skipped = envfx.operators.snow.actor_specs(scene)
    assert [(n, round(r, 5), round(d, 5), o) for n, r, d, o in specs] == [("Marker", 0.8, 0.1, 0.0)]
    assert "Lamp" in skipped
    assert api.ops.snow_trails_add() == {"FINISHED"}
    assert envfx.operators.snow.trails_modifiers(snow)
    assert api.ops.snow_trails_remove() == {"FINISHED"}
    assert not envfx.operators.snow.trails_modifiers(snow)



def test_new_actor_after_add_trails_stamps_and_remove_leaves_no_drivers(envfx):
    """The actors' locations reach the trails through drivers on the modifier: Add Trails again after adding
    an actor drives the existing modifier for it too, and removing the trails leaves no driver behind."""
    scene, snow, actors = snow_scene(envfx)
    a = sphere_object("A", 0.5, actors)
    a.location = (-2.0, 0.0, 0.5)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    b = sphere_object("B", 0.5, actors)
    animate(b, [(1, (2.0, -1.0, 0.5)), (3, (2.0, 1.0, 0.5))])
    api.linear(b)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    specs, _ = envfx.operators.snow.actor_specs(scene)
    tracks = run_frames(scene, 1, 3, [n for n, *_ in specs], [o for *_, o in specs])
    rest, got = evaluated_offset(envfx, snow)
    np.testing.assert_allclose(got, core_expected(envfx, scene, snow, tracks, specs), atol=1e-4)
    assert got[np.hypot(rest[:, 0] - 2.0, rest[:, 1]) < 0.2].max() < -0.1      # B's trail is there
    targets = _driver_targets(snow)
    assert targets == {"A", "B"}
    assert api.ops.snow_trails_remove() == {"FINISHED"}
    assert snow.animation_data is None or len(_drivers(snow)) == 0


def _drivers(data: bpy.types.Object | bpy.types.NodeTree) -> list[bpy.types.FCurve]:
    """The drivers on ``data`` (a snow mesh, a trails group), which must have animation data."""
    anim = data.animation_data
    assert anim is not None, f"{data.name} has no animation data"
    return list(anim.drivers)


def _driver_variables(data: bpy.types.Object | bpy.types.NodeTree) -> list[bpy.types.DriverVariable]:
    """The variables of the drivers on ``data``."""
    return [var for fc in _drivers(data) for var in api.of(bpy.types.Driver, fc.driver).variables]


def _driver_targets(obj: bpy.types.Object) -> set[str]:
    """The names of the IDs that the variables of the drivers on ``obj`` read (the actors, for the trails)."""
    return {api.of(bpy.types.ID, var.targets[0].id).name for var in _driver_variables(obj)}


def _walker(name: str, x: float, actors: bpy.types.Collection, radius: float = 0.5) -> bpy.types.Object:
    """A sphere walking along y = -2 .. 2 at x over frames 1 .. 9 (0.5 per frame), its bottom in the snow."""
    obj = sphere_object(name, radius, actors)
    animate(obj, [(1, (x, -2.0, radius)), (9, (x, 2.0, radius))])
    api.linear(obj)
    return obj


def _walker_y(frame: int) -> float:
    return -2.0 + 0.5 * (frame - 1)


def _depth_near(envfx, snow: bpy.types.Object, x: float, y: float, r: float = 0.15,
                depsgraph: bpy.types.Depsgraph | None = None) -> float:
    """The lowest evaluated offset of the snow within ``r`` of (x, y)."""
    rest, got = evaluated_offset(envfx, snow, depsgraph)
    near = np.hypot(rest[:, 0] - x, rest[:, 1] - y) < r
    assert near.any()
    return float(got[near].min())


def _start_trails(envfx, scene: bpy.types.Scene, snow: bpy.types.Object,
                  ) -> tuple[bpy.types.NodeTree, Callable[[], bool]]:
    """Add the live trails at frame 1: (their group, a check that its simulation zone, and so the trail state,
    is still the one built now)."""
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    tree = api.modifier_group(snow, snow_nodes_name(envfx))
    zone = tree.nodes["Sim Out"].as_pointer()
    return tree, lambda: tree.nodes["Sim Out"].as_pointer() == zone


def test_trails_follow_actors_added_removed_and_resized_without_add_trails(envfx):
    """Actors linked to or unlinked from the actor collection, and a new Snow Radius, change the live trails
    while they run (frame handler, headless): the trails carved before stay, a new actor stamps from the frame
    it joined (no line from anywhere), a removed one stops."""
    scene, snow, actors = snow_scene(envfx)
    a = _walker("B", -2.0, actors)
    tree, same_zone = _start_trails(envfx, scene, snow)
    for f in range(1, 5):
        scene.frame_set(f)
    assert _depth_near(envfx, snow, -2.0, _walker_y(2)) < -0.1           # B's trail
    # "A" sorts before "B": the actors' order changes while the simulation runs
    c = _walker("A", 2.0, actors)
    for f in range(5, 8):
        scene.frame_set(f)
    assert same_zone()                                                    # the zone (and its state) stayed
    assert _depth_near(envfx, snow, -2.0, _walker_y(2)) < -0.1           # B's old trail is still there
    assert _depth_near(envfx, snow, 2.0, _walker_y(6)) < -0.1            # A stamps since it joined
    assert _depth_near(envfx, snow, 2.0, _walker_y(2)) > -1e-6           # ... and not where it was before
    rest, got = evaluated_offset(envfx, snow)
    assert got[np.abs(rest[:, 0]) < 1.0].min() > -1e-6                    # no path jumped between the actors
    targets = _driver_targets(snow)
    assert targets == {"A", "B"}
    assert envfx.shader_nodes.common.modifier_for(c, envfx.shader_nodes.snow.ensure_coverage(scene)) is not None
    # B leaves the collection: it stops stamping, its trail stays
    actors.objects.unlink(a)
    api.envfx(c).snow.radius = 1.0                                        # A gets wider
    for f in range(8, 10):
        scene.frame_set(f)
    assert _depth_near(envfx, snow, -2.0, _walker_y(9)) > -1e-6          # B (no actor any more) left no trail
    assert _depth_near(envfx, snow, -2.0, _walker_y(3)) < -0.1
    assert _depth_near(envfx, snow, 2.8, _walker_y(9), r=0.08) < -0.02   # A's new radius (0.8 off its path)
    assert _depth_near(envfx, snow, 2.8, _walker_y(6), r=0.08) > -1e-6   # (not with its old radius 0.5)
    targets = _driver_targets(snow)
    assert targets == {"A"}
    items = api.of(bpy.types.NodeTreeInterface, tree.interface).items_tree
    assert [i.name for i in items if isinstance(i, bpy.types.NodeTreeInterfaceSocket)
            and i.name.startswith("Actor ")] == ["Actor 0"]
    assert envfx.operators.snow.follow_actors(scene) is False             # nothing changed: nothing done


def snow_nodes_name(envfx) -> str:
    """The name of the live trails' modifier on a snow mesh."""
    return envfx.operators.snow.MODIFIER_NAME


def test_trails_follow_actors_after_save_and_load(envfx, tmp_path):
    scene, snow, actors = snow_scene(envfx)
    _walker("B", -2.0, actors)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    path, name = str(tmp_path / "trails.blend"), snow.name
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = api.scene()
    snow = bpy.data.objects[name]
    actors = api.envfx(scene).snow.actors
    _walker("C", 2.0, actors)
    for f in range(1, 5):
        scene.frame_set(f)
    assert _depth_near(envfx, snow, -2.0, _walker_y(3)) < -0.1
    assert _depth_near(envfx, snow, 2.0, _walker_y(3)) < -0.1            # the actor added after loading
    # no usable actor left: nothing stamps any more, the trails stay
    for obj in list(actors.objects):
        actors.objects.unlink(obj)
    for f in range(5, 7):
        scene.frame_set(f)
    assert _depth_near(envfx, snow, 2.0, _walker_y(6)) > -1e-6
    assert _depth_near(envfx, snow, 2.0, _walker_y(3)) < -0.1


def test_snow_saved_by_blender_42_takes_trails_in_50(envfx, open_saved_by_blender_42):
    open_saved_by_blender_42("snow")
    scene = api.scene()
    snow = next(o for o in scene.objects if o.get("envfx_snow") == 0)
    actors = api.envfx(scene).snow.actors
    assert [o.name for o in actors.objects] == ["Walker"]
    _walker("Second", 2.0, actors)  # one added in 5.0: the saved trails follow the actors as they are now
    for f in range(1, 6):
        scene.frame_set(f)
    assert _depth_near(envfx, snow, -2.0, _walker_y(3)) < -0.1
    assert _depth_near(envfx, snow, 2.0, _walker_y(3)) < -0.1
    assert _depth_near(envfx, snow, 0.0, _walker_y(3)) > -1e-6  # between the two walkers the snow is untouched


def test_panel_tells_the_trails_follow_the_actors(envfx, recording_layout):
    scene, snow, actors = snow_scene(envfx)
    _walker("B", -2.0, actors)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    log = []
    panel = type("P", (), {"layout": recording_layout(log)})()
    envfx.panels.snow.VIEW3D_PT_envfx_snow.draw(panel, bpy.context)
    assert "label:Trails follow 1 actor(s) of Actors" in log
    assert "envfx.snow_trails_add" in log
    actors.objects.unlink(bpy.data.objects["B"])
    scene.frame_set(2)
    log.clear()
    envfx.panels.snow.VIEW3D_PT_envfx_snow.draw(panel, bpy.context)
    assert any("No usable actor" in entry for entry in log)


# --- CLI --------------------------------------------------------------------------------------------------

def _cli_file(envfx, tmp_path: Path) -> str:
    scene = api.scene()
    clear_scene()
    grid_object("Ground", size=6.0, segments=6)
    actors = bpy.data.collections.new("Walkers")
    scene.collection.children.link(actors)
    a = sphere_object("Walker", 0.5, actors)
    animate(a, [(1, (-2, 0, 0.5)), (6, (2, 0, 0.5))])
    path = str(tmp_path / "scene.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return path


def test_cli_generate_uses_the_file_density_mask(envfx, tmp_path, capsys):
    """The command line generates snow as the panel does: with the density mask (vertex group) the file's scene
    has set, so the unweighted half of the ground gets none."""
    clear_scene()
    ground = grid_object("Ground", size=4.0, segments=8)
    ground.vertex_groups.new(name="Snowy").add([v.index for v in api.mesh(ground).vertices if v.co.x > 0.01], 1.0,
                                               "REPLACE")
    s = api.envfx().snow
    s.border_width, s.density_mask = 0.0, "Snowy"
    path = str(tmp_path / "masked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert envfx.cli.main(["snow", path, "--generate", "--objects", "Ground", "--spacing", "0.1"]) == 0, \
        capsys.readouterr()
    bpy.ops.wm.open_mainfile(filepath=path)
    snow = [o for o in api.scene().objects if o.get("envfx_snow") == 0][0]
    assert envfx.bridge.get_positions(snow.data)[:, 0].min() > -1e-6


def test_cli_generate_trails_bake(envfx, tmp_path, capsys):
    path = _cli_file(envfx, tmp_path)
    out = tmp_path / "buffer"
    code = envfx.cli.main(["snow", path, "--generate", "--objects", "Ground", "--spacing", "0.2", "--trails",
                           "--actors", "Walkers", "--bake", "--out-dir", str(out), "--resolution", "32",
                           "--frames", "1:6", "--final-only"])
    assert code == 0, capsys.readouterr()
    assert sorted(os.listdir(out)) == ["snow_buffer.exr", "snow_buffer.json"]
    bpy.ops.wm.open_mainfile(filepath=path)
    snow = [o for o in api.scene().objects if o.get("envfx_snow") == 0]
    assert snow and envfx.operators.snow.trails_modifiers(snow[0])
    assert envfx.core.snow.read_exr(str(out / "snow_buffer.exr"))[..., 0].min() < -0.1


@pytest.mark.parametrize("args,msg", [
    (["--bake", "--out-dir", "X", "--frames", "10:1"], "reversed"),
    (["--bake", "--out-dir", "X", "--resolution", "0"], "between 1 and"),
    (["--bake", "--out-dir", "X", "--resolution", "100000"], "--resolution 100000 must be between 1 and 8192 texels"),
    (["--generate", "--objects", "Ground", "--lods", "0"], "--lods 0 must be between 1 and 8"),
    (["--generate", "--objects", "Ground", "--lods", "9"], "--lods 9 must be between 1 and 8"),
    (["--generate", "--objects", "Ground", "--spacing", "0.0001", "--budget", "1000"], "over the budget"),
    (["--trails", "--actors", "Nope"], "No collection named 'Nope'"),
    (["--bake", "--actors", "Walkers", "--out-dir", "F/sub"], "cannot be written"),
    # a folder the permissions allow to root but the system refuses (before: "only 0.0 MB is free" there)
    pytest.param(["--bake", "--actors", "Walkers", "--out-dir", "/proc/envfx_buffer"],
                 "The output folder '/proc/envfx_buffer' cannot be written: pass a writable --out-dir",
                 marks=pytest.mark.skipif(not os.path.isdir("/proc"), reason="a Linux /proc")),
    # a petabyte: refused with the estimate before a frame is stepped through (before: no check at all)
    (["--bake", "--actors", "Walkers", "--out-dir", "X", "--frames", "1:1000000", "--resolution", "8192"],
     "The bake would write up to 1,000,122.94 GB (1000000 frame(s) of 8192x8192"),
])
def test_cli_bad_input(envfx, tmp_path, capsys, args, msg):
    path = _cli_file(envfx, tmp_path)
    stamp = os.path.getmtime(path), os.path.getsize(path)
    (tmp_path / "F").write_text("a file, not a folder")
    args = [str(tmp_path / "out") if a == "X" else str(tmp_path / "F" / "sub") if a == "F/sub" else a
            for a in args]
    code = envfx.cli.main(["snow", path] + args)
    assert code == 2
    assert msg in capsys.readouterr().err
    assert (os.path.getmtime(path), os.path.getsize(path)) == stamp
    assert not os.path.exists(tmp_path / "out")


def test_cli_bake_killed_with_sigterm_removes_its_temporary_files(envfx, tmp_path):
    """A farm pre-empting the job (SIGTERM) mid-bake: the bake is cancelled like Ctrl-C, its temporary folder is
    removed and the command exits with 1 (before: the process died and left hundreds of MB in .envfx_snow_*)."""
    import signal
    import subprocess
    import sys
    import time

    path = _cli_file(envfx, tmp_path)
    out = tmp_path / "buffer"
    script = os.path.join(os.path.dirname(__file__), "cli_in_subprocess.py")
    proc = subprocess.Popen([sys.executable, script, "snow", path, "--bake", "--actors", "Walkers", "--out-dir",
                             str(out), "--frames", "1:20000", "--resolution", "128"],
                            env=dict(os.environ, HOME=str(tmp_path)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        while not [p for p in out.glob(".envfx-staging-snow-*") if any(p.iterdir())]:  # frames being written
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0][-2000:]
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        log = proc.communicate(timeout=120)[0]
    finally:
        proc.kill()
    assert proc.returncode == 1, log[-2000:]
    assert "Snow buffer bake cancelled; nothing was written" in log
    assert "(up to 4.94 GB)" in log  # the estimate (20000 frames of 128x128) was printed before the bake
    assert os.listdir(out) == []


def test_cli_bake_removes_the_temporary_folders_a_killed_bake_left(envfx, tmp_path, capsys):
    """The next bake into the folder removes what a killed one left (SIGKILL, power loss): only folders named
    .envfx_snow_*, older than this process and not of a process still running (pid 1, this one) on this machine
    (their owner file says so), or with no owner file and unchanged for core.outputs.FOREIGN_MAX_AGE."""
    path = _cli_file(envfx, tmp_path)
    out = tmp_path / "buffer"
    out.mkdir()
    dead = subprocess_pid_that_ended()
    old = envfx.core.outputs._STARTED - 60.0  # before this process (its add-on) started
    for name in (f".envfx_snow_{dead}_k1ll3d", ".envfx_snow_x7qz9a0b", f".envfx_snow_{os.getpid()}_mine",
                 ".envfx_snow_1_init", "keep_me", f".envfx_snow_{dead}_new"):
        (out / name).mkdir()
        (out / name / "snow_buffer_0001.exr").write_bytes(b"x" * 1000)
        pid = envfx.core.outputs._staging_pid(name)
        if pid and pid.isdigit():  # made on this machine by that process
            envfx.core.outputs.write_owner(str(out / name), int(pid))
        if "x7qz" in name:  # no owner file: removed once unchanged for the age limit
            gone = envfx.core.outputs._STARTED - envfx.core.outputs.FOREIGN_MAX_AGE - 60.0
            os.utime(out / name / "snow_buffer_0001.exr", (gone, gone))
            os.utime(out / name, (gone, gone))
        elif not name.endswith("_new"):
            os.utime(out / name, (old, old))
    assert envfx.cli.main(["snow", path, "--bake", "--actors", "Walkers", "--out-dir", str(out), "--resolution",
                           "16", "--frames", "1:2"]) == 0
    log = capsys.readouterr().out
    gone = {f".envfx_snow_{dead}_k1ll3d", ".envfx_snow_x7qz9a0b"}  # a dead process's, and one from before pids
    for name in gone:
        assert f"removed {name}, the temporary folder of an earlier bake that was killed" in log
    assert sorted(os.listdir(out)) == sorted({f".envfx_snow_{os.getpid()}_mine", ".envfx_snow_1_init", "keep_me",
                                              f".envfx_snow_{dead}_new", "snow_buffer_0001.exr",
                                              "snow_buffer_0002.exr", "snow_buffer.json"})


def subprocess_pid_that_ended() -> int:
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_bake_cancel_leaves_nothing_and_restores_scene(envfx, tmp_path):
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    a = sphere_object("A", 0.5, actors)
    animate(a, [(1, (-2, 0, 0.5)), (20, (2, 0, 0.5))])
    s = api.envfx(scene).snow
    s.frame_start, s.frame_end, s.buffer_resolution, s.output_dir = 1, 20, 32, str(tmp_path)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    scene.frame_set(3)
    job = envfx.operators.snow.bake_job(scene)
    for _ in range(25):  # past the path gathering, into the bake
        next(job)
    job.close()
    assert os.listdir(tmp_path) == []
    assert scene.frame_current == 3
    assert all(m.show_viewport for m in envfx.operators.snow.trails_modifiers(snow))


def coverage_and_z(envfx, obj: bpy.types.Object) -> tuple[np.ndarray, np.ndarray]:
    """The evaluated actor's ``snow_coverage`` per vertex and its vertices' world z."""
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    mesh = ev.to_mesh()
    try:
        cov = np.empty(len(mesh.vertices), dtype=np.float32)
        api.of(bpy.types.FloatAttribute, mesh.attributes["snow_coverage"]).data.foreach_get("value", cov)
        z = envfx.bridge.get_positions(mesh)[:, 2] + obj.location.z
    finally:
        ev.to_mesh_clear()
    return cov, z


def test_actor_gets_snow_coverage_where_immersed(envfx):
    scene, snow, actors = snow_scene(envfx, spacing=0.1, thickness=0.3)
    a = sphere_object("A", 0.5, actors)
    a.location = (0.0, 0.0, 0.45)            # bottom at -0.05, snow top at 0.3, trail pushes it to ~0.05
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    scene.frame_set(1)
    cov, z = coverage_and_z(envfx, a)
    rest, off = evaluated_offset(envfx, snow)
    highest_snow = float((rest[:, 2] + off).max())
    assert np.all(cov[z <= z.min() + 0.1] == 1.0)          # the part down in the trail
    assert np.all(cov[z > highest_snow + 0.1 + 1e-4] == 0.0)  # above the snow + band
    assert 0 < cov.mean() < 1
    envfx.operators.snow.remove_trails([snow], scene)
    assert "EnvFX Snow Surfaces" not in bpy.data.collections  # no snow of the scene has trails: it went


def test_actor_far_from_the_camera_is_covered_by_the_snow_as_shown(envfx):
    """Coverage reads the snow as shown: far from the camera the snow lies flat on the ground, so an actor there
    gets no snow layer above the flat snow drawn around it (only its part below the ground sliver is covered)."""
    scene, snow, actors = snow_scene(envfx, spacing=0.1, thickness=0.3)
    a = sphere_object("A", 0.5, actors)
    a.location = (0.0, 0.0, 0.45)            # bottom at -0.05; the full snow's top at 0.3
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    cam.location = (0.0, -1000.0, 2.0)
    scene.camera = cam
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    scene.frame_set(1)
    cov, z = coverage_and_z(envfx, a)
    rest, off = evaluated_offset(envfx, snow)
    flat_top = 0.3 * (1.0 - envfx.shader_nodes.snow.GROUND_KEEP)
    assert float((rest[:, 2] + off).max()) == pytest.approx(flat_top, abs=1e-5)
    assert np.all(cov[z <= z.min() + 0.02] == 1.0)                 # below the ground sliver
    assert (z > 0.15).sum() > 10 and np.all(cov[z > flat_top + 0.1 + 1e-4] == 0.0)


def test_actor_snow_layer_melts_over_the_melt_time_after_leaving_the_snow(envfx):
    scene, snow, actors = snow_scene(envfx, spacing=0.1, thickness=0.3)
    a = sphere_object("A", 0.5, actors)
    scene.render.fps, scene.render.fps_base = 24, 1.0
    api.envfx(scene).snow.coverage_melt_time = 1.0  # seconds: 1/24 per frame
    a.location = (0.0, 0.0, 0.45)
    a.keyframe_insert("location", frame=1)
    a.keyframe_insert("location", frame=3)
    a.location = (0.0, 0.0, 5.0)  # far above the snow from frame 4 on
    a.keyframe_insert("location", frame=4)
    for fc in api.fcurves(a):
        for kp in fc.keyframe_points:
            kp.interpolation = "CONSTANT"
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, 4):
        scene.frame_set(f)
    covered = coverage_and_z(envfx, a)[0] == 1.0
    assert covered.any() and not covered.all()
    scene.frame_set(4)  # out of the snow: the layer stays, one frame melted
    np.testing.assert_allclose(coverage_and_z(envfx, a)[0][covered], 1.0 - 1.0 / 24.0, atol=1e-5)
    for f in range(5, 11):
        scene.frame_set(f)
    np.testing.assert_allclose(coverage_and_z(envfx, a)[0][covered], 1.0 - 7.0 / 24.0, atol=1e-5)
    for f in range(11, 30):
        scene.frame_set(f)
    assert np.all(coverage_and_z(envfx, a)[0] == 0.0)  # melted away after a second
    # melt time 0: the layer is there only while in the snow
    api.envfx(scene).snow.coverage_melt_time = 0.0
    for f in range(1, 5):
        scene.frame_set(f)
    assert np.all(coverage_and_z(envfx, a)[0] == 0.0)


def test_density_mask_vertex_group(envfx):
    clear_scene()
    ground = grid_object("Ground", size=4.0, segments=8)
    group = ground.vertex_groups.new(name="Snowy")
    right = [v.index for v in api.mesh(ground).vertices if v.co.x > 0.01]
    group.add(right, 1.0, "REPLACE")
    s = api.envfx().snow
    s.spacing, s.border_width = 0.1, 0.0
    s.density_mask = "Snowy"
    select_only(ground)
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in api.scene().objects if o.get("envfx_snow") == 0][0]
    v = envfx.bridge.get_positions(snow.data)
    assert v[:, 0].min() > -1e-6                            # the unweighted half has no snow
    assert [m.name for m in ground.modifiers] == []          # the temporary reader is gone
    assert bpy.data.node_groups.get("EnvFX Snow Mask Reader") is None
    s.density_mask = "Nope"
    before = _state()
    with pytest.raises(RuntimeError, match="No vertex group named 'Nope'"):
        api.ops.snow_generate()
    assert _state() == before


@pytest.mark.parametrize("sequence", [False, True])
def test_bake_drives_the_snow_like_the_live_trails(envfx, tmp_path, sequence):
    scene, snow, rest, live = play_and_bake(envfx, tmp_path, sequence=sequence)
    assert api.ops.snow_drive_from_bake() == {"FINISHED"}
    scene.frame_set(10)
    _, baked = evaluated_offset(envfx, snow)
    specs, _ = envfx.operators.snow.actor_specs(scene)
    slope = 2.0 * specs[0][2] / specs[0][1]
    texel = json.loads((tmp_path / "snow_buffer.json").read_text())["texel_size"]
    assert np.abs(baked - live).max() <= slope * texel
    assert baked.min() < -0.2
    if sequence:  # an earlier frame shows the earlier buffer
        scene.frame_set(4)
        _, early = evaluated_offset(envfx, snow)
        assert early.min() < -0.2 and np.abs(early - baked).max() > 0.1
    assert api.ops.snow_drive_from_bake(use_bake=False) == {"FINISHED"}
    assert all(m.show_viewport for m in envfx.operators.snow.trails_modifiers(snow))
    assert "EnvFX Snow Buffer" not in [m.name for m in snow.modifiers]


@pytest.mark.parametrize("folder, msg", [
    ("{tmp}", "No baked buffer in '.*': bake the interaction buffer first"),
    # the default: named as Bake Interaction Buffer names it
    ("", r"No output folder: set the Snow bake's Output Folder \(scene\.envfx\.snow\.output_dir\)"),
    ("  ", "No output folder: set the Snow bake's Output Folder"),
    ("//snow_buffer", "relative to the .blend file, which is not saved yet: save the file first"),
])
def test_drive_from_bake_without_bake(envfx, tmp_path, folder, msg):
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    api.envfx(scene).snow.output_dir = folder.format(tmp=tmp_path)
    with pytest.raises(RuntimeError, match=msg):
        api.ops.snow_drive_from_bake()
    assert [m.name for m in snow.modifiers] == []


@pytest.mark.parametrize("content", [
    '{"format": "envfx.snow.interaction_buffer", "frames": [{"fra',      # truncated by a killed copy
    '{"format": "something else"}',                                       # another tool's file of that name
    '{"format": "envfx.snow.interaction_buffer", "version": 1}',          # no frames
])
def test_drive_from_bake_refuses_a_damaged_or_foreign_json(envfx, tmp_path, content):
    """A damaged or foreign snow_buffer.json is named with what to do; the scene is left as it was."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    (tmp_path / "snow_buffer.json").write_text(content)
    (tmp_path / "snow_buffer_0001.exr").write_bytes(b"")
    api.envfx(scene).snow.output_dir = str(tmp_path)
    refused_leaving_the_scene(snow, r"snow_buffer\.json is damaged or not an EnvFX bake: .*Bake the interaction "
                                    r"buffer again")


def refused_leaving_the_scene(snow, pattern):
    """Snow from Bake refused with a message matching ``pattern``; the snow, the images and the groups as they
    were."""
    images, groups = sorted(bpy.data.images.keys()), sorted(bpy.data.node_groups.keys())
    with pytest.raises(RuntimeError, match=pattern):
        api.ops.snow_drive_from_bake()
    assert [m.name for m in snow.modifiers] == []
    assert sorted(bpy.data.images.keys()) == images and sorted(bpy.data.node_groups.keys()) == groups


def test_drive_from_bake_refuses_a_buffer_image_cut_short(envfx, tmp_path):
    """A buffer frame cut short (a copy that ran out of space) is named before Blender reads it: Blender 4.2's
    OpenEXR reader loops for ever on a file cut short in its header. Nothing changes in the scene."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    core = envfx.core.snow
    buf = core.BufferParams(resolution=8, size=8.0, origin=(-4.0, -4.0))
    core.bake(np.zeros((3, 1, 3)), [0.5], [0.2], core.StampParams(), buf, frame_start=1, out_dir=str(tmp_path))
    frame = sorted(tmp_path.glob("snow_buffer_*.exr"))[1]
    frame.write_bytes(frame.read_bytes()[:60])
    api.envfx(scene).snow.output_dir = str(tmp_path)
    refused_leaving_the_scene(snow, rf"The bake in .* is damaged: {frame.name}: its header is cut short .* Bake it "
                                    r"again")


@pytest.mark.parametrize("sequence", [False, True])
def test_a_file_whose_buffer_frame_was_cut_short_opens_with_the_snow_from_bake_off(envfx, tmp_path, sequence):
    """A file whose snow reads a bake one of whose frames was cut short afterwards (Blender 4.2 never finished
    opening it): the snow's modifier that reads the bake is turned off as the file opens, naming the frame's file;
    the snow's other modifiers and the files on disk stay as they were."""
    from tests.blender import fresh_open

    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    core = envfx.core.snow
    buf = core.BufferParams(resolution=8, size=8.0, origin=(-4.0, -4.0))
    core.bake(np.zeros((3, 1, 3)), [0.5], [0.2], core.StampParams(), buf, frame_start=1, out_dir=str(tmp_path / "b"),
              sequence=sequence)
    api.envfx(scene).snow.output_dir = str(tmp_path / "b")
    assert api.ops.snow_drive_from_bake() == {"FINISHED"}
    before = [[m.name, m.show_viewport, m.show_render] for m in snow.modifiers]
    blend = tmp_path / "snow.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    frames = sorted((tmp_path / "b").glob("snow_buffer*.exr"))
    frame = frames[-1]
    frame.write_bytes(frame.read_bytes()[:60])
    code, state, output = fresh_open.open_in_fresh_process(blend, 2)
    assert code == 0 and state is not None, output[-3000:]
    got = state["modifiers"][snow.name]
    assert [m for m in got if m[0] != "EnvFX Snow Buffer"] == [m for m in before if m[0] != "EnvFX Snow Buffer"]
    assert ["EnvFX Snow Buffer", False, False] in got and ["EnvFX Snow Buffer", True, True] in before
    [message] = state["damaged"][snow.name]
    assert str(frame) in message and "header is cut short" in message and "Bake again" in message
    assert frame.stat().st_size == 60


def test_drive_from_bake_refuses_an_image_sequence_below_frame_0(envfx, tmp_path):
    """A bake of frames -3..-1 writes snow_buffer_-003.exr...: the game reads them through the JSON, but Blender's
    image sequences cannot number frames below 0 (the snow would silently stay flat): refused, nothing changes."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    core = envfx.core.snow
    buf = core.BufferParams(resolution=8, size=8.0, origin=(-4.0, -4.0))
    tracks = np.zeros((3, 1, 3))
    core.bake(tracks, [0.5], [0.2], core.StampParams(), buf, frame_start=-3, out_dir=str(tmp_path))
    api.envfx(scene).snow.output_dir = str(tmp_path)
    images = sorted(bpy.data.images.keys())
    with pytest.raises(RuntimeError, match=r"snow_buffer_-003\.exr\), and Blender's image sequences cannot read "
                                           r"frames below 0: bake from frame 0 or later"):
        api.ops.snow_drive_from_bake()
    assert [m.name for m in snow.modifiers] == [] and sorted(bpy.data.images.keys()) == images


def test_snow_lies_flat_far_from_the_camera(envfx):
    """The write-up: "The vertex offset fades out with the distance from the camera, lowering the snow flat with
    the ground surface further away from the player ... preventing the deep snow from visually covering up and
    hiding smaller objects." Within Camera Fade Start the trails as they are; beyond Camera Fade End the snow
    top on the ground (a sliver of 1 - GROUND_KEEP of its thickness above it), trails or not; in between the
    linear blend, as core.snow.shown_offset. Without an active camera nothing fades."""
    scene, snow, actors = snow_scene(envfx, spacing=0.1, size=8.0)
    sphere_object("Near", 0.5, actors).location = (-3.0, 0.0, 0.5)
    sphere_object("Far", 0.5, actors).location = (3.0, 0.0, 0.5)
    sphere_object("Mid", 0.5, actors).location = (0.5, 0.0, 0.5)       # ~4 from the camera: half faded
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    cam.location = (-3.0, 0.0, 2.0)
    scene.camera = cam
    s = api.envfx(scene).snow
    s.camera_fade_start, s.camera_fade_end = 3.0, 5.0
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    specs, _ = envfx.operators.snow.actor_specs(scene)
    tracks = run_frames(scene, 1, 1, [n for n, *_ in specs], [o for *_, o in specs])
    rest, got = evaluated_offset(envfx, snow)
    core = envfx.core.snow
    thick = thickness_of(snow)
    down, rim = core.simulate_points(rest, tracks, [r for _, r, _, _ in specs], [d for _, _, d, _ in specs],
                                     envfx.operators.snow.stamp_params(scene))
    fade = core.camera_fade(rest, (-3.0, 0.0, 2.0), 3.0, 5.0)
    np.testing.assert_allclose(got, core.shown_offset(down, rim, thick, fade), atol=1e-5)
    keep = envfx.shader_nodes.snow.GROUND_KEEP
    trails = np.maximum(rim - down, -keep * thick)
    dist = np.linalg.norm(rest - np.array([-3.0, 0.0, 2.0]), axis=1)
    far = dist > 5.0
    assert (far & (thick > 0.29)).sum() > 300 and (far & (trails < -0.2)).any()
    np.testing.assert_allclose(got[far], -keep * thick[far], atol=1e-5)              # flat on the ground
    assert np.all(rest[far, 2] + got[far] <= 0.3 * (1 - keep) + 1e-5)               # the top at the ground
    near = dist < 3.0
    np.testing.assert_allclose(got[near], trails[near], atol=1e-5)                   # as the trails alone
    assert got[near].min() < -0.2 and got[near].max() > 0.0 and (got[near] == 0.0).sum() > 100
    mid = (dist > 3.2) & (dist < 4.8) & (thick > 0.29) & (np.abs(trails) < 1e-6)     # untouched snow, half way
    assert mid.sum() > 100
    assert np.all(got[mid] < -0.01) and np.all(got[mid] > -keep * thick[mid] + 0.01)
    np.testing.assert_allclose(got[mid], -(1.0 - fade[mid]) * keep * thick[mid], atol=1e-5)
    # the fade pushed out of the way: the trails alone, everywhere
    s.camera_fade_start, s.camera_fade_end = 100.0, 200.0
    scene.frame_set(1)
    np.testing.assert_allclose(evaluated_offset(envfx, snow)[1], trails, atol=1e-5)
    # no active camera: nothing fades (not measured from the world origin)
    s.camera_fade_start, s.camera_fade_end = 0.5, 1.0
    scene.camera = None
    scene.frame_set(1)
    np.testing.assert_allclose(evaluated_offset(envfx, snow)[1], trails, atol=1e-5)


def test_snow_material_renders_trails_in_eevee(envfx, tmp_path):
    scene, snow, actors = snow_scene(envfx, spacing=0.05, size=4.0)
    a = sphere_object("A", 0.5, actors)
    animate(a, [(1, (-1.5, 0.0, 0.5)), (4, (1.5, 0.0, 0.5))])
    a.hide_render = True
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, 5):
        scene.frame_set(f)
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    api.of(bpy.types.SunLight, sun.data).energy = 4.0
    sun.rotation_euler = (math.radians(60), 0.0, 0.0)   # light across the trail: its walls shade differently
    scene.collection.objects.link(sun)
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    lens = api.of(bpy.types.Camera, cam.data)
    lens.type, lens.ortho_scale = "ORTHO", 4.0
    cam.location = (0.0, 0.0, 5.0)
    scene.collection.objects.link(cam)
    scene.camera = cam
    api.set_engine(scene, api.eevee_engine())
    api.of(bpy.types.SceneEEVEE, scene.eevee).taa_render_samples = 1
    scene.render.resolution_x = scene.render.resolution_y = 80
    scene.render.filepath = str(tmp_path / "snow.png")
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(str(tmp_path / "snow.png"))
    px = np.empty(80 * 80 * 4, dtype=np.float32)
    api.pixels(img).foreach_get(px)
    lum = px.reshape(80, 80, 4)[..., :3].mean(-1)
    rows = slice(36, 44)                       # the trail runs along the middle row (world y = 0)
    trail = lum[rows, 20:60]
    flat = lum[8:16, 20:60]
    assert flat.mean() > 0.5                    # bright snow
    assert trail.std() > 5 * flat.std()          # the trail's walls: one side lit, one in shade
    assert trail.min() < flat.mean() - 0.2


def test_trails_on_a_moved_rotated_scaled_snow_object(envfx):
    scene, snow, actors = snow_scene(envfx, spacing=0.1, size=6.0)
    snow.location = (1.0, -0.5, 0.2)
    snow.rotation_euler = (0.0, 0.0, math.radians(30))
    snow.scale = (1.5, 1.5, 1.5)
    a = sphere_object("A", 0.5, actors)
    animate(a, [(1, (-3, -1, 0.9)), (6, (3.5, 1.0, 0.85))])
    api.linear(a)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    specs, _ = envfx.operators.snow.actor_specs(scene)
    tracks = run_frames(scene, 1, 6, ["A"], [specs[0][3]])
    m = np.array(snow.matrix_world)
    dg = bpy.context.evaluated_depsgraph_get()
    ev = snow.evaluated_get(dg)
    mesh = ev.to_mesh()
    try:
        got_local = envfx.bridge.get_positions(mesh).astype(np.float64)
    finally:
        ev.to_mesh_clear()
    rest_local = envfx.bridge.get_positions(snow.data).astype(np.float64)
    to_world = lambda p: p @ m[:3, :3].T + m[:3, 3]  # noqa: E731
    rest = to_world(rest_local)
    got = to_world(got_local)[:, 2] - rest[:, 2]
    params = envfx.operators.snow.stamp_params(scene)
    down, rim = envfx.core.snow.simulate_points(rest, tracks, [specs[0][1]], [specs[0][2]], params)
    thick = thickness_of(snow)  # world units at generation; the clamp is applied in world Z
    expected = np.maximum(rim - down, -envfx.shader_nodes.snow.GROUND_KEEP * thick)
    assert np.abs(got - expected).max() < 1e-4
    assert got.min() < -0.2


def _planar_uvs_and_mask(envfx, ground: bpy.types.Object, white_columns: int) -> bpy.types.Image:
    """Planar UVs from x, y on the 4 m ``ground`` (a new UV map), and a 16 x 16 mask image whose first
    ``white_columns`` columns are white (snow)."""
    mesh = api.mesh(ground)
    mesh.uv_layers.new(name="UVMap")
    uv = api.of(bpy.types.MeshUVLoopLayer, mesh.uv_layers.active).uv
    vidx = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", vidx)
    co = envfx.bridge.get_positions(mesh)[vidx]
    uv.foreach_set("vector", ((co[:, :2] + 2.0) / 4.0).astype(np.float32).ravel())
    img = bpy.data.images.new("Mask", 16, 16, float_buffer=True)
    px = np.zeros((16, 16, 4), dtype=np.float32)
    px[:, :white_columns, :] = 1.0
    api.pixels(img).foreach_set(px.ravel())
    return img


def test_density_mask_texture(envfx):
    clear_scene()
    ground = grid_object("Ground", size=4.0, segments=8)
    img = _planar_uvs_and_mask(envfx, ground, white_columns=8)  # left half white = snow
    s = api.envfx().snow
    s.spacing, s.border_width, s.density_texture = 0.1, 0.0, img
    select_only(ground)
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in api.scene().objects if o.get("envfx_snow") == 0][0]
    v = envfx.bridge.get_positions(snow.data)
    assert v[:, 0].max() < 0.125 and v[:, 0].min() < -1.8    # bilinear: black from the texel centre u = 0.53
    ground_mesh = api.mesh(ground)
    ground_mesh.uv_layers.remove(ground_mesh.uv_layers[0])
    ground_mesh.update()
    before = _state()
    with pytest.raises(RuntimeError, match="no UV map"):
        api.ops.snow_generate()
    assert _state() == before


def test_generated_snow_keeps_its_spacing_along_slopes(envfx):
    clear_scene()
    ground = grid_object("Hill", size=6.0, segments=6)
    ground.rotation_euler = (0.0, math.radians(40.0), 0.0)  # a 40 deg slope
    api.view_layer().update()
    s = api.envfx().snow
    s.spacing, s.thickness, s.border_width, s.max_slope = 0.2, 0.1, 0.0, math.radians(50.0)
    select_only(ground)
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in api.scene().objects if o.get("envfx_snow") == 0][0]
    mesh = api.mesh(snow)
    co = envfx.bridge.get_positions(mesh).copy()
    thickness = np.empty(len(mesh.vertices), dtype=np.float32)
    api.of(bpy.types.FloatAttribute, mesh.attributes["snow_thickness"]).data.foreach_get("value", thickness)
    co[:, 2] -= thickness  # the surface under the snow (the top also follows the border taper)
    edges = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", edges)
    edges = edges.reshape(-1, 2)
    lengths = np.linalg.norm(co[edges[:, 1]] - co[edges[:, 0]], axis=1)
    # every grid edge of the surface is within 20 % of the spacing asked for (without the factor the edges
    # down the slope would be 1 / cos(40 deg) = 1.31 times longer)
    assert lengths.min() > 0.8 * 0.2 and lengths.max() < 1.2 * 0.2, (lengths.min(), lengths.max())
    lo, hi = snow["envfx_surface_spacing"]
    assert 0.8 * 0.2 <= lo <= hi <= 1.2 * 0.2


def test_actor_size_does_not_change_when_it_turns(envfx):
    """An auto-sized actor's radius is measured along its heading: turned 45 degrees about Z (or upside down
    along its length) a 2 x 1 box keeps radius 1 and its bottom offset, where the world bounding box would give
    ~1.06; scale still counts."""
    scene, snow, actors = snow_scene(envfx)
    box = bpy.data.objects.new("Box", bpy.data.meshes.new("Box"))
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=(2.0, 1.0, 0.5), verts=list(bm.verts))
    bm.to_mesh(api.mesh(box))
    bm.free()
    actors.objects.link(box)
    box.location = (0.0, 0.0, 1.0)

    def spec() -> tuple[float, float, float]:
        api.view_layer().update()
        (name, radius, depth, offset), = envfx.operators.snow.actor_specs(scene)[0]
        return radius, depth, offset

    upright = spec()
    assert upright == pytest.approx((1.0, 0.3, 0.25))  # depth: half the radius, at most the snow thickness
    for rot in ((0.0, 0.0, math.radians(45)), (0.0, 0.0, math.radians(-120)), (math.pi, 0.0, math.radians(30))):
        box.rotation_euler = rot
        assert spec() == pytest.approx(upright, abs=1e-6), rot
    box.rotation_euler = (0.0, 0.0, math.radians(45))
    box.scale = (2.0, 2.0, 2.0)
    assert spec() == pytest.approx((2.0, 0.3, 0.5))


def test_trails_follow_an_actor_that_grows(envfx):
    """An auto-sized actor whose scale is animated stamps with its new size soon after (its trail so far stays),
    with no Add Trails and no change to the actor collection."""
    scene, snow, actors = snow_scene(envfx)
    a = _walker("A", 0.0, actors)
    a.keyframe_insert("scale", frame=4)
    a.scale = (2.0, 2.0, 2.0)
    a.keyframe_insert("scale", frame=5)
    api.linear(a)
    _tree, same_zone = _start_trails(envfx, scene, snow)
    for f in range(1, 10):
        scene.frame_set(f)
    assert same_zone()                                                    # the zone (and its state) stayed
    assert _depth_near(envfx, snow, 0.0, _walker_y(2)) < -0.1            # the trail from before it grew
    assert _depth_near(envfx, snow, 0.8, _walker_y(2), r=0.08) > -1e-6   # radius 0.5 then
    assert _depth_near(envfx, snow, 0.8, _walker_y(8), r=0.08) < -0.02   # radius 1 now
    (_name, radius, _depth, _offset), = envfx.operators.snow.actor_specs(scene)[0]
    assert radius == pytest.approx(1.0)
    assert envfx.operators.snow.follow_actors(scene) is False             # nothing changed: nothing done


def test_another_occluder_collection_keeps_the_trails(envfx):
    """Choosing another occluder collection while the trails run changes where the snow is held down; the
    trails carved so far stay (the simulation goes on)."""
    scene, snow, actors = snow_scene(envfx)
    _walker("A", 2.0, actors)
    colls = []
    for name, y in (("Occluders A", -2.0), ("Occluders B", 2.0)):
        coll = bpy.data.collections.new(name)
        scene.collection.children.link(coll)
        quad = grid_object(f"Quad {name}", size=1.0, segments=1, location=(-2, y, 0.1))
        scene.collection.objects.unlink(quad)
        coll.objects.link(quad)
        colls.append(coll)
    api.envfx(scene).snow.occluders = colls[0]
    _tree, same_zone = _start_trails(envfx, scene, snow)
    for f in range(1, 5):
        scene.frame_set(f)
    rest, got = evaluated_offset(envfx, snow)
    thick = thickness_of(snow)
    keep = envfx.shader_nodes.snow.GROUND_KEEP

    def under(y: float) -> np.ndarray:
        return (np.abs(rest[:, 0] + 2) < 0.45) & (np.abs(rest[:, 1] - y) < 0.45)

    np.testing.assert_allclose(got[under(-2.0)], -keep * thick[under(-2.0)], atol=1e-5)
    assert np.abs(got[under(2.0)]).max() == 0.0
    api.envfx(scene).snow.occluders = colls[1]
    for f in range(5, 8):
        scene.frame_set(f)
    assert same_zone()                                                    # the zone (and its state) stayed
    assert _depth_near(envfx, snow, 2.0, _walker_y(2)) < -0.1            # the trail from before the change
    rest, got = evaluated_offset(envfx, snow)
    np.testing.assert_allclose(got[under(2.0)], -keep * thick[under(2.0)], atol=1e-5)   # B holds it down now
    np.testing.assert_allclose(got[under(-2.0)], -keep * thick[under(-2.0)], atol=1e-5)  # A's stays (no refill)


def test_generated_snow_is_laid_out_in_the_cells_of_the_trails(envfx):
    """The generated snow's vertices come cell after cell of the trails' table, with the cells the node group
    computes (the trails then move long runs of vertices)."""
    scene, snow, actors = snow_scene(envfx)
    sphere_object("A", 0.5, actors).location = (0.0, 0.0, 0.5)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    scene.frame_set(2)
    ev = api.mesh(snow.evaluated_get(bpy.context.evaluated_depsgraph_get()))
    group_cells = np.empty(len(ev.vertices), np.int32)
    api.of(bpy.types.IntAttribute, ev.attributes["snow_cell"]).data.foreach_get("value", group_cells)
    core_cells = envfx.core.snow.trail_cells(envfx.bridge.get_positions(snow.data))
    assert np.mean(group_cells == core_cells) > 0.999                  # float32 vs float64 at cell borders
    assert np.all(np.diff(core_cells) >= 0)


def _puffs(snow: bpy.types.Object) -> tuple[np.ndarray, np.ndarray]:
    """(positions, radii) of the snow object's puff instances, in point order."""
    dg = bpy.context.evaluated_depsgraph_get()
    found = []
    for inst in dg.object_instances:
        if inst.is_instance and inst.parent is not None and inst.parent.original == snow:
            m = inst.matrix_world
            found.append((tuple(inst.persistent_id), m.translation.to_tuple(), m.to_scale()[0]))
    found.sort()
    return (np.array([f[1] for f in found]).reshape(-1, 3), np.array([f[2] for f in found]))


def test_snow_puffs_fly_from_pushed_snow_and_vanish(envfx):
    """With Snow Puffs on, the snow an actor pushes down throws puffs: they start on the trail, fly as
    core.snow.puff_step says (followed over three frames), shrink with age, and are gone a lifetime after the
    actor stopped; off, there are none."""
    scene, snow, actors = snow_scene(envfx)
    _walker("A", 0.0, actors)                                   # y = -2 .. 2 over frames 1 .. 9, radius 0.5
    s = api.envfx(scene).snow
    s.puffs, s.puff_rate, s.puff_lifetime, s.puff_speed, s.puff_size = True, 0.5, 0.5, 2.0, 0.05
    params = envfx.core.snow.PuffParams(rate=0.5, speed=2.0, lifetime=0.5, size=0.05, gravity=9.81)
    dt = 1.0 / (scene.render.fps / scene.render.fps_base)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    scene.frame_set(1)
    assert len(_puffs(snow)[0]) == 0
    frames = {}
    for f in range(2, 7):
        scene.frame_set(f)
        frames[f] = _puffs(snow)
    pos, radius = frames[6]
    assert len(pos) > 20
    top = 0.3                                                   # the snow's top (thickness 0.3 on flat ground)
    side, up_min, up_max = envfx.core.snow.puff_launch_bounds(2.0)
    flight = params.lifetime
    assert np.abs(pos[:, 0]).max() < 0.5 + 0.1 + side * flight             # on the trail, a little aside
    assert pos[:, 1].min() > -2.0 - 0.6 and pos[:, 1].max() < _walker_y(6) + 0.6
    assert pos[:, 2].max() < top + up_max ** 2 / (2 * 9.81) + 0.05          # no higher than a throw goes
    assert np.all(radius <= 0.05 + 1e-6) and np.all(radius > 0)
    # follow the puffs through frames 4, 5, 6: the survivors keep their order, the oldest die first
    ages = {f: params.lifetime * (1.0 - frames[f][1] / params.size) for f in (4, 5, 6)}
    dead4 = int(np.sum(ages[4] + dt >= params.lifetime - 1e-4))
    dead5 = int(np.sum(ages[5] + dt >= params.lifetime - 1e-4))
    n = min(len(ages[4]) - dead4 - dead5, len(ages[5]) - dead5)
    assert n > 5
    p4 = frames[4][0][dead4 + dead5:dead4 + dead5 + n]
    p5 = frames[5][0][dead5:dead5 + n]
    p6 = frames[6][0][:n]
    np.testing.assert_allclose(ages[6][:n], ages[4][dead4 + dead5:dead4 + dead5 + n] + 2 * dt, atol=1e-4)
    v5 = (p5 - p4) / dt                                          # the velocity after frame 5's gravity step
    want6, _v, _a, _alive = envfx.core.snow.puff_step(p5, v5, ages[5][dead5:dead5 + n], dt, params)
    np.testing.assert_allclose(p6, want6, atol=1e-4)
    # the actor stops at frame 9: a lifetime later every puff is gone
    for f in range(7, 9 + int(np.ceil(params.lifetime / dt)) + 2):
        scene.frame_set(f)
    assert len(_puffs(snow)[0]) == 0
    # off: none (the trails themselves are unchanged)
    scene.frame_set(1)
    s.puffs = False
    for f in range(2, 5):
        scene.frame_set(f)
    assert len(_puffs(snow)[0]) == 0


def test_puffs_start_on_the_snow_laid_flat_far_from_the_camera(envfx):
    """Far from the camera the snow lies flat on the ground: the puffs an actor throws there start on that flat
    snow, not at the full snow's top hanging in the air."""
    scene, snow, actors = snow_scene(envfx)
    _walker("A", 0.0, actors)
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    cam.location = (0.0, -1000.0, 2.0)
    scene.camera = cam
    s = api.envfx(scene).snow
    s.puffs, s.puff_rate, s.puff_lifetime, s.puff_speed, s.puff_size = True, 0.5, 0.5, 2.0, 0.05
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, 5):
        scene.frame_set(f)
    pos, _radius = _puffs(snow)
    assert len(pos) > 20
    _side, _up_min, up_max = envfx.core.snow.puff_launch_bounds(2.0)
    flat_top = 0.3 * (1.0 - envfx.shader_nodes.snow.GROUND_KEEP)
    assert pos[:, 2].max() < flat_top + up_max ** 2 / (2 * 9.81) + 0.02 < 0.3      # thrown from the flat snow


def test_another_scene_without_trails_leaves_the_trails_alone(envfx):
    """A second scene of the file, with its own actor collection and no snow trails, neither rebuilds the trails
    for its actors when its frames change nor gets a trails group."""
    scene, snow, actors = snow_scene(envfx)
    _walker("A", 0.0, actors)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    tree = api.modifier_group(snow, snow_nodes_name(envfx))
    stamp = tree[envfx.shader_nodes.snow.ACTORS_KEY]
    other = bpy.data.scenes.new("Other")
    others = bpy.data.collections.new("Other Actors")
    other.collection.children.link(others)
    sphere_object("B", 0.5, others)
    api.envfx(other).snow.actors = others                   # its update must not rebuild the trails for B
    api.envfx(other).snow.rim_height = 1.5
    for f in range(1, 4):
        other.frame_set(f)                                  # the frame handler runs for "Other"
    assert tree[envfx.shader_nodes.snow.ACTORS_KEY] == stamp
    # its drivers read the scene being evaluated (no scene pointer for "Other" to take over)
    assert {var.type for var in _driver_variables(tree)} == {"CONTEXT_PROP"}
    assert envfx.shader_nodes.snow.group_for(other) is None
    for f in range(1, 5):
        scene.frame_set(f)
    assert _depth_near(envfx, snow, 0.0, _walker_y(2)) < -0.1           # A still carves its trail


def test_two_scenes_with_trails_carve_each_with_its_own_actors(envfx, scene_depsgraph):
    """Two scenes of a file (levels), each with its own snow, actors and trails: each scene's snow is carved by
    its own actors only, and stepping one scene leaves the other's trails as they were."""
    scene, snow, actors = snow_scene(envfx)
    _walker("A", -1.5, actors)
    tree_a, same_zone = _start_trails(envfx, scene, snow)
    level = bpy.data.scenes.new("Level 2")
    snow_b = bpy.data.objects.new("Snow B", api.mesh(snow).copy())
    snow_b["envfx_snow"] = snow["envfx_snow"]
    level.collection.objects.link(snow_b)
    actors_b = bpy.data.collections.new("Actors B")
    level.collection.children.link(actors_b)
    _walker("B", 1.5, actors_b)
    api.envfx(level).snow.actors = actors_b
    api.envfx(level).snow.thickness = api.envfx(scene).snow.thickness
    level.frame_set(1)
    envfx.operators.snow.add_trails(level, [snow_b])
    tree_b = envfx.shader_nodes.snow.group_for(level)
    assert tree_b not in (None, tree_a) and tree_b.name == "EnvFX Snow Trails (Level 2)"
    assert api.nodes_modifier(snow, snow_nodes_name(envfx)).node_group == tree_a
    scene_depsgraph(level)  # the level's own graph (as a window showing it has): frame_set steps existing graphs

    def depth(scn: bpy.types.Scene, obj: bpy.types.Object, x: float, y: float) -> float:
        return _depth_near(envfx, obj, x, y, depsgraph=scene_depsgraph(scn))

    for f in range(1, 6):
        scene.frame_set(f)
        level.frame_set(f)
    y = _walker_y(2)
    assert depth(scene, snow, -1.5, y) < -0.1 and depth(scene, snow, 1.5, y) > -0.01      # A's snow: A's actor
    assert depth(level, snow_b, 1.5, y) < -0.1 and depth(level, snow_b, -1.5, y) > -0.01  # B's snow: B's actor
    assert same_zone()  # B's trails did not rebuild A's
    before = depth(scene, snow, -1.5, y)
    for f in range(6, 9):
        level.frame_set(f)
    assert depth(scene, snow, -1.5, y) == before


def test_two_snow_meshes_follow_two_bakes(envfx, tmp_path):
    """Each bake has its own buffer group: two snow areas driven by two bakes each show their own, and driving
    a mesh by another bake replaces its buffer (never two buffers on one mesh)."""
    scene, snow, _rest, _live = play_and_bake(envfx, tmp_path / "a", linear=True)
    actor = bpy.data.objects["A"]
    actor.animation_data_clear()
    animate(actor, [(1, (-2.0, 2.0, 0.55)), (10, (2.0, -2.0, 0.5))])  # another path for the second bake
    api.envfx(scene).snow.output_dir = str(tmp_path / "b")
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    snow_b = snow.copy()
    scene.collection.objects.link(snow_b)
    ops = envfx.operators.snow
    ops.drive_from_bake(scene, [snow], str(tmp_path / "a"))
    ops.drive_from_bake(scene, [snow_b], str(tmp_path / "b"))
    group_a, group_b = (ops.buffer_modifiers(o)[0].node_group for o in (snow, snow_b))
    assert group_a != group_b
    scene.frame_set(10)
    core = envfx.core.snow
    specs, _ = ops.actor_specs(scene)
    slope = 2.0 * specs[0][2] / specs[0][1]
    offsets = {}
    for obj, folder in ((snow, "a"), (snow_b, "b")):
        rest, got = evaluated_offset(envfx, obj)
        meta = json.loads((tmp_path / folder / "snow_buffer.json").read_text())
        buf = core.read_exr(str(tmp_path / folder / "snow_buffer.exr"))
        want = core.sample_buffer(buf, meta["frames"][-1]["origin"], meta["texel_size"], rest[:, :2], 0)
        want = np.maximum(want, -envfx.shader_nodes.snow.GROUND_KEEP * thickness_of(obj))
        assert np.abs(got - want).max() <= slope * meta["texel_size"], folder
        offsets[folder] = got
    assert np.abs(offsets["a"] - offsets["b"]).max() > 0.2                  # two different trails
    ops.drive_from_bake(scene, [snow], str(tmp_path / "b"))
    assert [m.node_group for m in ops.buffer_modifiers(snow)] == [group_b]
    _, again = evaluated_offset(envfx, snow)
    np.testing.assert_allclose(again, offsets["b"], atol=1e-5)


def _snowfield_in_a_new_file(envfx, tmp_path: Path, link: bool, actors_later: bool = False,
                             ) -> tuple[bpy.types.Scene, bpy.types.Object]:
    """A snow field with live trails carved by "Old Walker", saved; then a new file whose scene has its own
    actor "Walker" and the snow field appended (or linked, with ``link``): (scene, the snow object). With
    ``actors_later`` the scene's actor collection is not chosen yet (the caller sets ``My Actors``)."""
    scene, snow, actors = snow_scene(envfx)
    _walker("Old Walker", -1.5, actors)
    _start_trails(envfx, scene, snow)
    snow_name = snow.name
    path = str(tmp_path / "snowfield.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    mine = bpy.data.collections.new("My Actors")
    scene.collection.children.link(mine)
    _walker("Walker", 1.5, mine)
    if not actors_later:
        api.envfx(scene).snow.actors = mine
    snow, = api.load_objects(path, [snow_name], link)
    scene.collection.objects.link(snow)
    return scene, snow


def test_appended_snow_joins_the_scene_trails_and_actors(envfx, tmp_path):
    """Snow with live trails appended from another file brings no scene along and, at the next update, takes
    the trails and actors of the scene it lands in."""
    scene, snow = _snowfield_in_a_new_file(envfx, tmp_path, link=False)
    scene.frame_set(1)
    api.view_layer().update()  # what the UI does after an append
    assert [s.name for s in bpy.data.scenes] == [scene.name]
    tree = envfx.shader_nodes.snow.group_for(scene)
    assert tree is not None and api.nodes_modifier(snow, snow_nodes_name(envfx)).node_group == tree
    assert _driver_targets(snow) == {"Walker"}
    for f in range(1, 6):
        scene.frame_set(f)
    y = _walker_y(2)
    assert _depth_near(envfx, snow, 1.5, y) < -0.1 and _depth_near(envfx, snow, -1.5, y) > -0.01


def test_an_override_of_snow_with_trails_joins_the_scene_trails_and_actors(envfx, tmp_path):
    """Snow with live trails linked from a library cannot be changed: Remove Trails and Snow from Bake skip it
    and say what to do. Made a library override, it takes, at the next update, the trails and actors of the
    scene it lands in (not its library's), and keeps them through save and reload; Remove Trails cannot remove
    its library's trails (they would be back at the next load) and says what to do instead."""
    scene, linked = _snowfield_in_a_new_file(envfx, tmp_path, link=True)
    snow_name = linked.name
    ops = envfx.operators.snow
    for result in (ops.remove_trails([linked]), ops.drive_from_trails([linked])):
        assert result.changed == [] and "make it local first" in result.skipped[snow_name]
    with pytest.raises(ops.SnowInputError, match="No snow mesh to drive .*linked from library"):
        ops.drive_from_bake(scene, [linked], str(tmp_path))
    assert len(ops.trails_modifiers(linked)) == 1
    snow = linked.override_create(remap_local_usages=True)
    scene.frame_set(1)
    api.view_layer().update()  # what the UI does after making the override
    tree = envfx.shader_nodes.snow.group_for(scene)
    assert tree is not None and api.nodes_modifier(snow, snow_nodes_name(envfx)).node_group == tree
    result = ops.remove_trails([snow])
    assert result.changed == [] and len(ops.trails_modifiers(snow)) == 1
    assert "its live trails came from library" in result.skipped[snow_name]
    assert "a library override cannot remove it; switch it off instead" in result.skipped[snow_name]
    level = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=level)
    bpy.ops.wm.open_mainfile(filepath=level)
    scene = api.scene()
    snow = next(o for o in bpy.data.objects if o.override_library is not None)
    assert api.nodes_modifier(snow, snow_nodes_name(envfx)).node_group == envfx.shader_nodes.snow.group_for(scene)
    for f in range(1, 6):
        scene.frame_set(f)
    y = _walker_y(2)
    assert _depth_near(envfx, snow, 1.5, y) < -0.1 and _depth_near(envfx, snow, -1.5, y) > -0.01


def test_an_override_made_before_the_scene_has_actors_joins_them_once_they_are_chosen(envfx, tmp_path):
    """The order of the steps does not matter: snow overridden while the scene has no actors yet keeps its
    library's trails until the scene's actor collection is chosen, then takes the scene's trails and actors."""
    scene, linked = _snowfield_in_a_new_file(envfx, tmp_path, link=True, actors_later=True)
    snow = linked.override_create(remap_local_usages=True)
    scene.frame_set(1)
    api.view_layer().update()
    api.envfx(scene).snow.actors = bpy.data.collections["My Actors"]
    api.view_layer().update()
    tree = envfx.shader_nodes.snow.group_for(scene)
    assert tree is not None and api.nodes_modifier(snow, snow_nodes_name(envfx)).node_group == tree
    for f in range(1, 6):
        scene.frame_set(f)
    y = _walker_y(2)
    assert _depth_near(envfx, snow, 1.5, y) < -0.1 and _depth_near(envfx, snow, -1.5, y) > -0.01


# --- copies of snow, snow on bent terrain, removing the trails ------------------------------------------------

_FULL_COPY_SCRIPT = r'''
import importlib, json, os, sys, tempfile
import bpy, addon_utils
import numpy as np
root, out = sys.argv[1], sys.argv[2]
repo = tempfile.mkdtemp(prefix="envfx-copy-")
os.symlink(root, os.path.join(repo, "envfx"))
bpy.context.preferences.extensions.repos.new(name="EnvFX Copy", module="envfx_copy", custom_directory=repo,
                                             source="USER")
addon_utils.enable("bl_ext.envfx_copy.envfx", default_set=True)
envfx = importlib.import_module("bl_ext.envfx_copy.envfx")
bpy.ops.wm.read_homefile(app_template="", use_empty=False)
scene = bpy.context.scene
for o in list(scene.objects):
    bpy.data.objects.remove(o)
bpy.ops.mesh.primitive_grid_add(size=6, x_subdivisions=6, y_subdivisions=6)
s = scene.envfx.snow
s.spacing, s.thickness, s.border_width = 0.2, 0.5, 0.0
assert bpy.ops.envfx.snow_generate() == {"FINISHED"}
actors = bpy.data.collections.new("Actors")
scene.collection.children.link(actors)
bpy.ops.mesh.primitive_uv_sphere_add(radius=0.3, location=(0.0, -1.0, 0.2))
walker = bpy.context.active_object
walker.name = "Walker"
for c in walker.users_collection:
    c.objects.unlink(walker)
actors.objects.link(walker)
s.actors = actors
scene.frame_set(1)
assert bpy.ops.envfx.snow_trails_add() == {"FINISHED"}
bpy.ops.scene.new(type="FULL_COPY")             # Blender 4.2 crashed here
copy = bpy.context.scene
for o in copy.objects:                          # level 2: its ground, snow and walker 20 m along x
    o.location.x += 20.0
copy_walker = next(o for o in copy.objects if o.name.startswith("Walker"))
copy_snow = next(o for o in copy.objects if o.get("envfx_snow") == 0)
for f in range(1, 6):
    copy.frame_set(f)
    copy_walker.location.y = -1.0 + 0.4 * f      # walks through its snow
    copy.frame_set(f)
dg = bpy.context.evaluated_depsgraph_get()
ev = copy_snow.evaluated_get(dg)
mesh = ev.to_mesh()
got = envfx.bridge.get_positions(mesh).astype(float)
ev.to_mesh_clear()
rest = envfx.bridge.get_positions(copy_snow.data).astype(float)
near = np.hypot(rest[:, 0] + copy_snow.location.x - 20.0, rest[:, 1] - 0.6) < 0.25
ev = copy_walker.evaluated_get(dg)
mesh = ev.to_mesh()
at = mesh.attributes.get("snow_coverage")
cov = np.zeros(len(mesh.vertices), dtype=np.float32)
if at is not None:
    at.data.foreach_get("value", cov)
ev.to_mesh_clear()
nodes = envfx.shader_nodes.snow
surfaces = nodes.surfaces_for(copy)
result = {
    "trails": [m.node_group.name for m in envfx.operators.snow.trails_modifiers(copy_snow)],
    "own_trails": nodes.group_for(copy).name,
    "first_trails": nodes.group_for(bpy.data.scenes["Scene"]).name,
    "depth": float((got[near, 2] - rest[near, 2]).min()),
    "coverage": float(cov.max()),
    "surfaces": sorted(surfaces.objects.keys()) if surfaces is not None else None,
    "first_surfaces": sorted(nodes.surfaces_for(bpy.data.scenes["Scene"]).objects.keys()),
}
with open(out, "w") as fh:
    json.dump(result, fh)
os._exit(0)
'''


def _full_copy_in_subprocess(tmp_path: Path) -> tuple[int, str, dict[str, Any] | None]:
    """Scene > New > Full Copy of a scene whose snow has live trails, in a separate Blender process (Blender
    4.2 crashed in the copy, which would take the test run down); the copy's objects moved 20 m along x and
    its walker stepped through its snow. Returns (exit code, stderr, the copy's results)."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = str(tmp_path / "copy.json")
    done = subprocess.run([sys.executable, "-c", _FULL_COPY_SCRIPT, root, out], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, HOME=str(tmp_path)))
    result: dict[str, Any] | None = None
    if os.path.exists(out):
        with open(out) as fh:
            result = json.load(fh)
    return done.returncode, done.stderr[-3000:], result


def test_full_copy_of_a_scene_with_snow_trails_gets_its_own_trails(tmp_path):
    """A full copy of a level with snow trails (Scene > New > Full Copy) does not crash (Blender 4.2 did: the
    copy's own trails group was made inside the frame change of the new scene) and the copy's snow is carved by
    the copy's walker, through its own trails group."""
    code, err, result = _full_copy_in_subprocess(tmp_path)
    assert code == 0 and result is not None, err
    assert result["trails"] == [result["own_trails"]] and result["own_trails"] != result["first_trails"]
    assert result["depth"] < -0.1


def test_full_copy_actors_get_snow_coverage_from_the_copy_snow(tmp_path):
    """The copy's actors read the copy's snow for their snow coverage (not the first level's, 20 m away)."""
    code, err, result = _full_copy_in_subprocess(tmp_path)
    assert code == 0 and result is not None, err
    assert result["surfaces"] == ["Grid Snow.001"] and result["first_surfaces"] == ["Grid Snow"]
    assert result["coverage"] == 1.0


def _shift_d_copy_with_actor(snow: bpy.types.Object, actors: bpy.types.Collection,
                             ) -> tuple[bpy.types.Object, bpy.types.Object]:
    """(copy, actor): a Shift-D copy of ``snow`` 20 units along X, and an actor "InCopy" standing on it."""
    select_only(snow)
    bpy.ops.object.duplicate_move(TRANSFORM_OT_translate={"value": (20.0, 0.0, 0.0)})
    copy = bpy.data.objects[snow.name + ".001"]
    b = sphere_object("InCopy", 0.3, actors)
    b.location = (20.0, 0.0, 0.2)
    return copy, b


def test_shift_d_copy_of_snow_gives_its_actors_snow_coverage(envfx):
    """A Shift-D copy of a snow mesh with trails carves trails and its actors get snow coverage like the
    original's; deleting it takes it out of the snow the actors sink into."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2, size=6.0, thickness=0.5)
    a = sphere_object("InOriginal", 0.3, actors)
    a.location = (0.0, 0.0, 0.2)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    copy, b = _shift_d_copy_with_actor(snow, actors)
    for f in range(1, 4):
        scene.frame_set(f)
    assert coverage_and_z(envfx, a)[0].max() == 1.0
    assert coverage_and_z(envfx, b)[0].max() == 1.0
    surfaces = envfx.shader_nodes.snow.surfaces_for(scene)
    assert set(surfaces.objects.keys()) == {snow.name, copy.name}
    bpy.data.objects.remove(copy)
    scene.frame_set(4)
    assert set(surfaces.objects.keys()) == {snow.name}


def test_generate_on_bent_terrain_lies_on_the_physical_ground_and_takes_the_bend(envfx):
    """Snow generated over terrain that the world bend already bends lies on the physical (unbent) ground and
    takes the scene's bend like its terrain: it is drawn on the bent terrain, not bent twice."""
    scene = api.scene()
    clear_scene()
    b = api.envfx(scene).bend
    b.mode, b.strength, b.spread = "PLANET", 0.05, 0.0
    ground = grid_object("Ground", size=10.0, segments=10)
    select_only(ground)
    assert api.ops.bend_add() == {"FINISHED"}
    bend_mod = envfx.operators.bend.bend_modifiers(ground)[0]
    s = api.envfx(scene).snow
    s.spacing, s.thickness, s.border_width, s.noise, s.drift = 0.25, 0.1, 0.0, 0.0, 0.0
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = next(o for o in scene.objects if o.get("envfx_snow") == 0)
    rest = envfx.bridge.get_positions(snow.data).astype(np.float64)
    assert rest[:, 2].min() > -1e-4 and rest[:, 2].max() < 0.1 + 1e-4     # on the ground (z = 0), not below it
    assert bend_mod.show_viewport                                           # the terrain's bend is back on
    assert [m.node_group for m in envfx.operators.bend.bend_modifiers(snow)] == [bend_mod.node_group]
    _, off = evaluated_offset(envfx, snow)
    r2 = rest[:, 0] ** 2 + rest[:, 1] ** 2
    np.testing.assert_allclose(off, -0.05 * r2, atol=1e-3)                  # bent once, like the terrain


def _bent_level_with_walkers(envfx, bend_walkers: bool = True) -> tuple[
        bpy.types.Scene, bpy.types.Object, bpy.types.Object, bpy.types.Object, bpy.types.Object]:
    """Bent terrain (Runner along +Y from a pivot at the origin, strength 0.01, spread 2), snow generated over it
    (so bent like it) with live trails, and two walkers (spheres, their bottoms 0.5 m down in the 0.4 m snow):
    "Near" at the pivot, "Far" 10 m ahead, where the bend drops the snow by 0.64 m. Returns (scene, terrain,
    snow, near, far)."""
    scene = api.scene()
    clear_scene()
    pivot = bpy.data.objects.new("Player", None)
    scene.collection.objects.link(pivot)
    b = api.envfx(scene).bend
    b.mode, b.axis, b.pivot, b.strength, b.spread = "RUNNER", "POS_Y", pivot, 0.01, 2.0
    terrain = grid_object("Ground", size=24.0, segments=24)
    select_only(terrain)
    assert api.ops.bend_add() == {"FINISHED"}
    s = api.envfx(scene).snow
    s.spacing, s.thickness, s.border_width, s.noise, s.drift, s.lods = 0.25, 0.4, 0.3, 0.0, 0.0, 0
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = next(o for o in scene.objects if o.get("envfx_snow") == 0)
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    s.actors = actors
    near, far = sphere_object("Near", 0.5, actors), sphere_object("Far", 0.5, actors)
    near.location, far.location = (0.0, 0.0, 0.4), (0.0, 10.0, 0.4)
    for a in (near, far):
        settings = api.envfx(a).snow
        settings.radius, settings.depth = 0.5, 0.05  # a light step: the snow stays around the legs
    select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    if bend_walkers:
        envfx.operators.bend.add_bend(scene, [near, far])
    envfx.operators.bend.sync_readers(scene)  # what operators.bend will call itself
    for f in range(1, 4):
        scene.frame_set(f)
    return scene, terrain, snow, near, far


def _coverage_by_height(envfx, actor: bpy.types.Object) -> tuple[np.ndarray, np.ndarray]:
    """(coverage of the actor's vertices 0.25 m or more below the snow top, of those above the snow + band)."""
    cov = coverage_and_z(envfx, actor)[0]
    z = envfx.bridge.get_positions(actor.data)[:, 2] + actor.location.z  # physical (unbent) world z
    return cov[z < 0.15], cov[z > 0.4 + 0.1 + 1e-4]


@pytest.mark.parametrize("bend_walkers", [True, False])
def test_actors_on_a_bent_level_get_snow_coverage_everywhere(envfx, bend_walkers):
    """The coverage reads the snow's physical surface (the snow's hit as drawn plus the drop its bend gives the
    actor's x, y), as the actor's vertices are physical (before the actor's own bend): an actor 10 m from the
    pivot is covered like one at the pivot (it got 0: the bent snow was below it), bent itself or not."""
    scene, terrain, snow, near, far = _bent_level_with_walkers(envfx, bend_walkers)
    coverage = envfx.shader_nodes.common.scene_group(scene, envfx.shader_nodes.snow.COVERAGE_KIND,
                                                     envfx.shader_nodes.snow.COVERAGE_GROUP)
    assert coverage.nodes[envfx.shader_nodes.common.BEND_READER].node_tree == envfx.shader_nodes.bend.group_for(scene)
    for actor in (near, far):
        low, high = _coverage_by_height(envfx, actor)
        assert low.size and high.size
        assert np.all(low == 1.0) and np.all(high == 0.0), (actor.name, low, high)


def test_the_bend_group_goes_with_its_last_object_though_the_coverage_read_it(envfx):
    """The snow coverage nests the bend group of the bent snow, but that does not keep the group: when the last
    object leaves the bend it goes and nothing points at it; the coverage then reads the flat snow."""
    scene, terrain, snow, near, far = _bent_level_with_walkers(envfx)
    nodes, common = envfx.shader_nodes, envfx.shader_nodes.common
    coverage = common.scene_group(scene, nodes.snow.COVERAGE_KIND, nodes.snow.COVERAGE_GROUP)
    envfx.operators.bend.remove_bend([terrain, near, far])
    assert nodes.bend.group_for(scene) is not None  # the snow still has it
    envfx.operators.bend.remove_bend([snow])
    assert nodes.bend.group_for(scene) is None and "envfx_group_bend" not in scene
    assert not [g.name for g in bpy.data.node_groups if "Bend" in g.name]
    assert coverage.nodes[common.BEND_READER].node_tree is None
    for f in range(4, 6):
        scene.frame_set(f)
    for actor in (near, far):
        low, high = _coverage_by_height(envfx, actor)
        assert np.all(low == 1.0) and np.all(high == 0.0), (actor.name, low, high)


def test_remove_trails_from_all_snow_removes_coverage_groups_and_surfaces(envfx):
    """Remove Trails on every snow mesh of the scene leaves nothing behind: the actors lose their coverage
    modifier, the scene's trails and coverage groups and its snow surfaces collection go. Removing the trails
    from one of two snow meshes keeps them."""
    scene, snow, actors = snow_scene(envfx)
    a = _walker("A", 0.0, actors)
    other = bpy.data.objects.new("Other Snow", api.mesh(snow).copy())
    other["envfx_snow"] = 0
    scene.collection.objects.link(other)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    nodes = envfx.shader_nodes.snow
    surfaces = nodes.surfaces_for(scene)
    assert set(surfaces.objects.keys()) == {snow.name, other.name}
    envfx.operators.snow.remove_trails([other], scene)
    assert set(surfaces.objects.keys()) == {snow.name}
    assert nodes.group_for(scene) is not None and [m.name for m in a.modifiers] == ["EnvFX Snow Coverage"]
    select_only()
    assert api.ops.snow_trails_remove() == {"FINISHED"}
    assert [m.name for m in a.modifiers] == []
    assert nodes.group_for(scene) is None
    assert [g.name for g in bpy.data.node_groups if "EnvFX Snow" in g.name] == []
    assert [c.name for c in bpy.data.collections if c.name.startswith(nodes.SURFACES_COLLECTION)] == []
    assert api.ops.snow_trails_add() == {"FINISHED"}                       # and they come back
    for f in range(1, 4):
        scene.frame_set(f)
    assert _depth_near(envfx, snow, 0.0, _walker_y(2)) < -0.1


@pytest.mark.parametrize("how", ["modifier_remove", "modifier_apply"])
def test_remove_trails_after_the_modifier_was_removed_by_hand_removes_its_drivers(envfx, how):
    """A trails modifier removed by hand (the X, or Apply) leaves its actor drivers, invalid, on the snow:
    Remove Trails removes them."""
    scene, snow, actors = snow_scene(envfx)
    _walker("A", 0.0, actors)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    assert len(_drivers(snow)) == 3
    select_only(snow)
    getattr(bpy.ops.object, how)(modifier=snow_nodes_name(envfx))
    assert envfx.operators.snow.trails_modifiers(snow) == []
    scene.frame_set(2)
    if len(_drivers(snow)) == 0:  # Blender 5.0 removes them itself when the modifier is removed
        assert how == "modifier_remove" and bpy.app.version >= (5, 0, 0)
    assert api.ops.snow_trails_remove() == {"FINISHED"}
    assert len(_drivers(snow)) == 0


def _bent_ground(envfx) -> tuple[bpy.types.Scene, bpy.types.Object]:
    scene = api.scene()
    clear_scene()
    b = api.envfx(scene).bend
    b.mode, b.strength, b.spread = "PLANET", 0.05, 0.0
    ground = grid_object("Ground", size=6.0, segments=6)
    envfx.operators.bend.add_bend(scene, [ground])
    s = api.envfx(scene).snow
    s.spacing, s.thickness, s.border_width, s.noise, s.drift = 0.25, 0.3, 0.0, 0.0, 0.0
    return scene, ground


def test_regenerated_snow_follows_its_terrain_in_and_out_of_the_bend(envfx):
    """Regenerating a cover in place (what `envfx snow --generate` runs) over terrain that is no longer bent
    removes the snow's bend and says so (the snow lies on the ground, not below it); over bent terrain it takes
    the bend again. The trails stay throughout."""
    ops, bend = envfx.operators.snow, envfx.operators.bend
    scene, ground = _bent_ground(envfx)
    snow = ops.generate_snow(scene, [ground], bpy.context.evaluated_depsgraph_get(), replace=True)[0]
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    api.envfx(scene).snow.actors = actors
    sphere_object("A", 0.3, actors).location = (0.0, 0.0, 0.2)
    scene.frame_set(1)
    ops.add_trails(scene, [snow])
    bend.remove_bend([ground])
    made = ops.generate_snow(scene, [ground], bpy.context.evaluated_depsgraph_get(), replace=True)
    assert list(made) == [snow] and bend.bend_modifiers(snow) == [] and ops.trails_modifiers(snow)
    assert made.warnings == ["removed the bend from Ground Snow: the terrain is no longer bent"]
    rest, off = evaluated_offset(envfx, snow)
    away = np.hypot(rest[:, 0], rest[:, 1]) > 0.8                       # away from the actor's trail
    assert np.abs(off[away]).max() < 1e-4                                # on the ground, not bent below it
    bend.add_bend(scene, [ground])
    made = ops.generate_snow(scene, [ground], bpy.context.evaluated_depsgraph_get(), replace=True)
    assert list(made) == [snow] and len(bend.bend_modifiers(snow)) == 1 and made.warnings == []
    _, off = evaluated_offset(envfx, snow)
    np.testing.assert_allclose(off[away], -0.05 * (rest[away, 0] ** 2 + rest[away, 1] ** 2), atol=1e-3)


def test_generate_on_bent_terrain_with_refused_bend_settings_changes_nothing(envfx):
    """Bent terrain with bend settings the bend refuses (a Spread of 2e6 m): Generate Snow reports why and
    builds nothing (it raised the bend's error after making the snow); the terrain's bend is shown again."""
    scene, ground = _bent_ground(envfx)
    api.envfx(scene).bend["spread"] = 2e6  # as a file saved before the settings refused it holds it
    select_only(ground)
    before = _state()
    with pytest.raises(RuntimeError, match=r"bend settings are refused: Bend spread .* is enormous"):
        api.ops.snow_generate()
    assert _state() == before
    assert [m.show_viewport for m in envfx.operators.bend.bend_modifiers(ground)] == [True]
    with pytest.raises(envfx.operators.snow.SnowInputError, match="enormous"):
        envfx.operators.snow.generate_snow(scene, [ground], bpy.context.evaluated_depsgraph_get(), replace=True)
    assert _state() == before


def test_covers_of_looks_up_the_terrain_generate_snow_covers(envfx):
    """Objects snow cannot cover (an empty) among the terrain do not hide the cover made over the rest, so
    `envfx snow --generate --objects Terrain,Marker` run twice says it regenerated the cover."""
    scene = api.scene()
    clear_scene()
    ground = grid_object("Ground", size=4.0, segments=4)
    marker = bpy.data.objects.new("Marker", None)
    scene.collection.objects.link(marker)
    api.envfx(scene).snow.spacing = 0.5
    ops = envfx.operators.snow
    made = ops.generate_snow(scene, [ground, marker], bpy.context.evaluated_depsgraph_get(), replace=True)
    assert ops.covers_of(scene, [ground, marker]) == list(made) == ops.covers_of(scene, [ground])
    assert ops.covers_of(scene, [marker]) == []


def _old_two_level_file(envfx, path: Path) -> tuple[bpy.types.Scene, bpy.types.Scene]:
    """Save a file as EnvFX saved it before each scene had its own snow surfaces collection: two levels with
    snow trails and actors ("Scene": Ground Snow and Other Snow, actor A; "Level 2": Snow B, actor B), both
    coverage groups reading one "EnvFX Snow Surfaces" that holds every snow mesh, no scene pointing at it."""
    nodes = envfx.shader_nodes.snow
    scene, snow, actors = snow_scene(envfx, spacing=0.2, size=6.0, thickness=0.5)
    sphere_object("A", 0.3, actors).location = (0.0, 0.0, 0.2)
    other = bpy.data.objects.new("Other Snow", api.mesh(snow).copy())
    other["envfx_snow"] = 0
    other.location.x = 10.0
    scene.collection.objects.link(other)
    scene.frame_set(1)
    envfx.operators.snow.add_trails(scene, [snow, other])
    level = bpy.data.scenes.new("Level 2")
    snow_b = bpy.data.objects.new("Snow B", api.mesh(snow).copy())
    snow_b["envfx_snow"] = 0
    level.collection.objects.link(snow_b)
    actors_b = bpy.data.collections.new("Actors B")
    level.collection.children.link(actors_b)
    sphere_object("B", 0.3, actors_b).location = (0.0, 0.0, 0.2)
    api.envfx(level).snow.actors = actors_b
    api.envfx(level).snow.thickness = 0.5
    level.frame_set(1)
    envfx.operators.snow.add_trails(level, [snow_b])
    legacy = bpy.data.collections.new("Legacy")
    for scn in (scene, level):
        own = nodes.surfaces_for(scn)
        del scn[nodes.SURFACES_KEY]
        bpy.data.collections.remove(own)
    legacy.name = nodes.SURFACES_COLLECTION
    for obj in (snow, other, snow_b):
        legacy.objects.link(obj)
    for scn in (scene, level):
        coverage = bpy.data.node_groups[nodes.COVERAGE_GROUP + (" (Level 2)" if scn == level else "")]
        coverage.nodes[nodes.SURFACES_NODE].inputs["Collection"].default_value = legacy
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    return bpy.data.scenes["Scene"], bpy.data.scenes["Level 2"]


def _surfaces_read(envfx, scene: bpy.types.Scene) -> list[str]:
    nodes = envfx.shader_nodes.snow
    coverage = envfx.shader_nodes.common.scene_group(scene, nodes.COVERAGE_KIND, nodes.COVERAGE_GROUP)
    coll = coverage.nodes[nodes.SURFACES_NODE].inputs["Collection"].default_value
    assert coll == nodes.surfaces_for(scene)
    return sorted(coll.objects.keys())


def test_old_file_with_two_levels_gives_each_level_its_own_snow_surfaces(envfx, tmp_path):
    """A file saved when every scene's coverage read one "EnvFX Snow Surfaces": at load each level gets its own
    surfaces (the first takes the old one over), so level 1's updates no longer take level 2's snow out of what
    level 2's actors sink into (its actors lost their coverage)."""
    scene, level = _old_two_level_file(envfx, tmp_path / "old.blend")
    assert _surfaces_read(envfx, scene) == ["Ground Snow", "Other Snow"]
    assert _surfaces_read(envfx, level) == ["Snow B"]
    sphere_object("A2", 0.3, bpy.data.collections["Actors"]).location = (10.0, 0.0, 0.2)
    for f in range(1, 4):                                   # level 1's trails and coverage follow A2
        scene.frame_set(f)
    assert _surfaces_read(envfx, level) == ["Snow B"]
    assert _surfaces_read(envfx, scene) == ["Ground Snow", "Other Snow"]


def test_old_file_remove_trails_from_one_snow_takes_it_out_of_the_surfaces(envfx, tmp_path):
    """In a file saved before scenes had their own surfaces, Remove Trails on one of two snow meshes takes it
    out of the snow the actors sink into, also when the scene never synced since the load."""
    scene, _level = _old_two_level_file(envfx, tmp_path / "old.blend")
    envfx.operators.snow.remove_trails([bpy.data.objects["Other Snow"]], scene)
    assert _surfaces_read(envfx, scene) == ["Ground Snow"]


@pytest.mark.parametrize("copy", ["EMPTY", "LINK_COPY"])
def test_scene_copy_settings_does_not_keep_the_snow_groups(envfx, copy):
    """Scene > New > Copy Settings (and Linked Copy) copy the scene's pointers to its snow groups and surfaces:
    Remove Trails on all snow of the first scene still removes the actors' coverage, the groups and the surfaces
    (they stayed, held by the copy); with Copy Settings a Shift-D copy of its snow joins its surfaces too."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2, size=6.0, thickness=0.5)
    a = sphere_object("A", 0.3, actors)
    a.location = (0.0, 0.0, 0.2)
    scene.frame_set(1)
    select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    nodes = envfx.shader_nodes.snow
    bpy.ops.scene.new(type=copy)
    api.window().scene = scene
    scene.frame_set(2)
    if copy == "EMPTY":
        select_only(snow)
        bpy.ops.object.duplicate_move(TRANSFORM_OT_translate={"value": (20.0, 0.0, 0.0)})
        for f in range(2, 5):
            scene.frame_set(f)
        assert sorted(nodes.surfaces_for(scene).objects.keys()) == [snow.name, snow.name + ".001"]
    envfx.operators.snow.remove_trails(envfx.operators.snow.snow_objects(scene), scene)
    assert [m.name for m in a.modifiers] == []
    assert [g.name for g in bpy.data.node_groups if "EnvFX Snow" in g.name] == []
    assert [c.name for c in bpy.data.collections if c.name.startswith(nodes.SURFACES_COLLECTION)] == []


def test_linked_copy_shares_the_snow_trails_coverage_and_surfaces(envfx):
    """Scene > New > Linked Copy links the same snow and actors into two scenes: they keep one trails group, one
    coverage group and one snow surfaces collection. An actor added while the copy exists carves from the frame
    it joined (not a frame later, nor into empty groups of its own), and a Shift-D copy of the snow gives its
    actors coverage at once in both scenes."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2, size=6.0, thickness=0.5)
    a = sphere_object("A", 0.3, actors)
    a.location = (-1.5, 0.0, 0.2)
    scene.frame_set(1)
    select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    nodes = envfx.shader_nodes.snow
    bpy.ops.scene.new(type="LINK_COPY")
    linked = api.scene()
    assert linked != scene and snow.name in linked.objects and a.name in linked.objects
    api.window().scene = scene
    for f in range(1, 3):
        scene.frame_set(f)
    seen: dict[int, float] = {}

    # runs before EnvFX's own frame_change_post: the frame as Blender drew it (Blender passes the depsgraph; the
    # API stubs type the handlers as taking the scene alone, hence its default)
    def evaluated(scn: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
        if scn == scene:
            seen[scn.frame_current] = _depth_near(envfx, snow, 1.5, 0.0, r=0.25, depsgraph=depsgraph)

    c = sphere_object("C", 0.3, actors)                       # joins the shared actor collection
    c.location = (1.5, 0.0, 0.2)
    bpy.app.handlers.frame_change_post.insert(0, evaluated)
    try:
        scene.frame_set(3)
    finally:
        bpy.app.handlers.frame_change_post.remove(evaluated)
    assert seen[3] < -0.1                                     # C carves in the frame it joined
    tree = nodes.group_for(scene)
    assert tree == nodes.group_for(linked) == api.nodes_modifier(snow, snow_nodes_name(envfx)).node_group
    copy, b = _shift_d_copy_with_actor(snow, actors)
    for f in range(4, 6):
        scene.frame_set(f)
    assert coverage_and_z(envfx, b)[0].max() == 1.0
    assert coverage_and_z(envfx, c)[0].max() == 1.0
    for scn in (scene, linked):
        assert nodes.group_for(scn) == tree
        assert sorted(nodes.surfaces_for(scn).objects.keys()) == sorted([snow.name, copy.name])
    assert sorted(g.name for g in bpy.data.node_groups if "EnvFX Snow" in g.name) == [
        "EnvFX Snow Coverage", "EnvFX Snow Trails"]


def _trails_with_walker(envfx, melt: float = 3.0) -> tuple[bpy.types.Scene, bpy.types.Object, bpy.types.Object]:
    scene, snow, actors = snow_scene(envfx, spacing=0.2, size=6.0, thickness=0.5)
    api.envfx(scene).snow.coverage_melt_time = melt
    a = sphere_object("A", 0.3, actors)
    a.location = (0.0, 0.0, 0.2)
    scene.frame_set(1)
    select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    scene.frame_set(2)
    assert coverage_and_z(envfx, a)[0].max() == 1.0
    return scene, snow, a


def _snow_left_overs(envfx, snow: bpy.types.Object, actor: bpy.types.Object,
                     ) -> tuple[int, list[str], list[str], list[str]]:
    drivers = len(_drivers(snow)) if snow.animation_data is not None else 0
    return (drivers, [m.name for m in actor.modifiers], sorted(g.name for g in bpy.data.node_groups
                                                                if "EnvFX Snow" in g.name),
            sorted(c.name for c in bpy.data.collections if c.name.startswith("EnvFX Snow Surfaces")))


@pytest.mark.parametrize("how", ["modifier_remove", "modifier_apply"])
def test_trails_removed_by_hand_leave_nothing_behind(envfx, how, monkeypatch):
    """The only trails modifier of the scene removed by hand (its X, or Apply): the next update books a clean-up,
    which the one-shot timer runs at a safe point (never in the frame or dependency-graph handlers): the snow
    loses the modifier's drivers, the actor its coverage modifier, the file the groups and surfaces collection;
    Add Trails brings them back."""
    scene, snow, a = _trails_with_walker(envfx)
    monkeypatch.setattr(envfx.handlers, "timers_run", lambda: True)  # as in the UI (background runs no timers)
    select_only(snow)
    getattr(bpy.ops.object, how)(modifier=snow_nodes_name(envfx))
    api.view_layer().update()                                 # what the UI does after the click
    registered = bpy.app.timers.is_registered(envfx.handlers.snow_clean_up)
    if registered:  # never run here: Blender 4.2 crashes at exit with a timer still registered
        bpy.app.timers.unregister(envfx.handlers.snow_clean_up)
    assert registered and envfx.operators.snow.pending_clean_up()
    before = _snow_left_overs(envfx, snow, a)
    monkeypatch.setattr(envfx.progress, "_running", {"an EnvFX bake run from the UI"})
    assert envfx.handlers.snow_clean_up() == 1.0              # it waits for the bake to end: nothing goes yet
    assert _snow_left_overs(envfx, snow, a) == before and envfx.operators.snow.pending_clean_up()
    monkeypatch.setattr(envfx.progress, "_running", set())
    assert envfx.handlers.snow_clean_up() is None             # what the timer runs, once the bake has ended
    assert _snow_left_overs(envfx, snow, a) == (0, [], [], [])
    assert api.ops.snow_trails_add() == {"FINISHED"}
    assert [m.name for m in a.modifiers] == ["EnvFX Snow Coverage"]


def test_trails_removed_by_hand_from_one_snow_mesh_lose_their_drivers_and_are_not_saved(envfx, tmp_path):
    """One of two snow meshes loses its trails modifier by hand (Apply: Blender keeps the drivers in 4.2 and
    5.0): the clean-up removes that mesh's drivers and keeps the other's trails and the actor's coverage. A
    background script that saves runs no timer: the save itself cleans up first, so the file gets no left-overs."""
    scene, snow, a = _trails_with_walker(envfx)
    other = bpy.data.objects.new("Other Snow", api.mesh(snow).copy())
    other["envfx_snow"] = 0
    scene.collection.objects.link(other)
    envfx.operators.snow.add_trails(scene, [other])
    select_only(other)
    bpy.ops.object.modifier_apply(modifier=snow_nodes_name(envfx))
    scene.frame_set(3)
    assert len(_drivers(other)) == 3
    envfx.handlers.snow_clean_up()
    assert len(_drivers(other)) == 0 and len(_drivers(snow)) == 3
    assert [m.name for m in a.modifiers] == ["EnvFX Snow Coverage"]
    assert sorted(envfx.shader_nodes.snow.surfaces_for(scene).objects.keys()) == [snow.name]
    select_only(snow)
    bpy.ops.object.modifier_remove(modifier=snow_nodes_name(envfx))
    path, names = str(tmp_path / "saved.blend"), (snow.name, a.name)
    bpy.ops.wm.save_as_mainfile(filepath=path)                # no update, no timer: the save cleans up
    assert _snow_left_overs(envfx, snow, a) == (0, [], [], [])
    bpy.ops.wm.open_mainfile(filepath=path)
    snow, a = (bpy.data.objects[n] for n in names)
    assert _snow_left_overs(envfx, snow, a) == (0, [], [], [])


@pytest.mark.parametrize("how", ["unlink", "move"])
def test_snow_unlinked_from_the_scene_leaves_the_actors_coverage_at_once(envfx, how):
    """Snow unlinked from its scene, or moved to a collection outside it (it keeps its number of users then), is
    out of what the actors sink into at the next update, not at the next change of the scene's snow or actors;
    with no snow left carrying the trails, the actor's coverage goes at the clean-up, and the group stays with
    the snow that still carries it."""
    scene, snow, a = _trails_with_walker(envfx, melt=0.0)
    other = bpy.data.objects.new("Other Snow", api.mesh(snow).copy())
    other["envfx_snow"] = 0
    other.location.x = 10.0
    scene.collection.objects.link(other)
    envfx.operators.snow.add_trails(scene, [other])
    scene.frame_set(3)                                        # the handler is up to date with both snow meshes
    surfaces = envfx.shader_nodes.snow.surfaces_for(scene)
    assert sorted(surfaces.objects.keys()) == sorted([snow.name, other.name])
    assert not envfx.operators.snow.surfaces_left_scene(scene)  # as after an earlier edit of the collections
    kept = {surfaces}
    if how == "move":
        kept.add(bpy.data.collections.new("Elsewhere"))
        next(iter(kept - {surfaces})).objects.link(snow)
    for coll in snow.users_collection:
        if coll not in kept:
            coll.objects.unlink(snow)
    api.view_layer().update()                                 # what the UI does after the unlink
    assert sorted(surfaces.objects.keys()) == [other.name]
    assert coverage_and_z(envfx, a)[0].max() == 0.0           # A stands where the unlinked snow was
    assert [m.name for m in a.modifiers] == ["EnvFX Snow Coverage"]
    scene.collection.objects.unlink(other)
    api.view_layer().update()
    assert list(surfaces.objects.keys()) == []
    envfx.handlers.snow_clean_up()
    assert [m.name for m in a.modifiers] == []
    assert envfx.shader_nodes.snow.group_for(scene) is None
    assert [m.name for m in snow.modifiers] == [snow_nodes_name(envfx)]


@pytest.mark.parametrize("keep", ["fake_user", "nested"])
def test_the_save_clean_up_keeps_a_trails_group_the_user_keeps(envfx, tmp_path, keep):
    """The clean-up of trails removed by hand runs at every save (and from a timer): a trails group the user gave
    a fake user, or nested in a node group of their own, is not deleted under them (the nesting node would lose
    it); it stays the scene's, so Add Trails uses it again. The actor's coverage still goes."""
    scene, snow, a = _trails_with_walker(envfx)
    tree = envfx.shader_nodes.snow.group_for(scene)
    mine = api.new_tree("My Snow Tools", bpy.types.GeometryNodeTree)
    if keep == "fake_user":
        tree.use_fake_user = True
    else:
        api.of(bpy.types.GeometryNodeGroup, mine.nodes.new("GeometryNodeGroup")).node_tree = tree
        mine.use_fake_user = True
    select_only(snow)
    bpy.ops.object.modifier_remove(modifier=snow_nodes_name(envfx))
    path, name = str(tmp_path / "saved.blend"), snow.name
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert [m.name for m in a.modifiers] == []
    bpy.ops.wm.open_mainfile(filepath=path)
    tree = bpy.data.node_groups.get("EnvFX Snow Trails")
    assert tree is not None and envfx.shader_nodes.snow.group_for(api.scene()) == tree
    if keep == "nested":
        nesting = bpy.data.node_groups["My Snow Tools"].nodes
        assert [api.of(bpy.types.GeometryNodeGroup, n).node_tree for n in nesting] == [tree]
    select_only(bpy.data.objects[name])
    assert api.ops.snow_trails_add() == {"FINISHED"}
    assert api.nodes_modifier(bpy.data.objects[name], snow_nodes_name(envfx)).node_group == tree


# --- mirrored terrain, empty actors' world size ------------------------------------------------------------

def _snow_x_range(scene: bpy.types.Scene) -> tuple[float, float]:
    snow = [o for o in scene.objects if o.get("envfx_snow") == 0]
    xs = np.concatenate([envfx_positions(o)[:, 0] for o in snow])
    return xs.min(), xs.max()


def envfx_positions(obj: bpy.types.Object) -> np.ndarray:
    """The world positions of the vertices of the mesh object ``obj``."""
    mesh = api.mesh(obj)
    buf = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", buf)
    m = np.array(obj.matrix_world)
    return buf.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


@pytest.mark.parametrize("mirror, by_parent", [((1, -1, 1), False), ((-1, 1, 1), False), ((1, -1, 1), True)])
def test_generate_covers_a_mirrored_terrain_tile(envfx, mirror, by_parent):
    """A tile mirrored by a negative scale (its own or its parent's; det < 0, its faces still look up as Blender
    draws them) gets snow alone and next to an unmirrored tile."""
    scene = api.scene()
    clear_scene()
    s = api.envfx(scene).snow
    s.spacing, s.border_width = 0.2, 0.0
    tile = grid_object("Tile", size=4.0, segments=4)
    flipped = grid_object("TileMirrored", size=4.0, segments=4, location=(4, 0, 0))
    if by_parent:
        rig = bpy.data.objects.new("Mirror", None)
        scene.collection.objects.link(rig)
        rig.scale = mirror
        flipped.parent = rig
        flipped.location = (4 * mirror[0], 0, 0)
    else:
        flipped.scale = mirror
    api.view_layer().update()
    assert flipped.matrix_world.determinant() < 0
    select_only(flipped)
    assert api.ops.snow_generate() == {"FINISHED"}
    lo, hi = _snow_x_range(scene)
    assert lo == pytest.approx(2.0, abs=0.25) and hi == pytest.approx(6.0, abs=0.25)
    for o in [o for o in scene.objects if o.get("envfx_snow") is not None]:
        bpy.data.objects.remove(o)
    select_only(tile, flipped)
    assert api.ops.snow_generate() == {"FINISHED"}
    lo, hi = _snow_x_range(scene)
    assert lo == pytest.approx(-2.0, abs=0.25) and hi == pytest.approx(6.0, abs=0.25)


def test_density_texture_on_a_mirrored_tile_follows_its_uvs(envfx):
    """The density texture's UVs go corner for corner with the mirrored tile's triangles: the white half of the
    image is where Blender shows it on the mirrored tile (x mirrored: the image's left half is world +x)."""
    clear_scene()
    ground = grid_object("Ground", size=4.0, segments=1)      # two big triangles: swapped UVs would show
    ground.scale = (-1, 1, 1)
    img = _planar_uvs_and_mask(envfx, ground, white_columns=4)  # the image's left quarter white = snow
    s = api.envfx().snow
    s.spacing, s.border_width, s.density_texture = 0.1, 0.0, img
    select_only(ground)
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in api.scene().objects if o.get("envfx_snow") == 0][0]
    v = envfx_positions(snow)
    # local x < -1 (u < 0.25) is world x > 1, over the whole height of the tile
    assert v[:, 0].min() > 0.85 and v[:, 0].max() > 1.8
    for y0, y1 in ((-2.0, -1.0), (-1.0, 1.0), (1.0, 2.0)):
        rows = v[(v[:, 1] > y0) & (v[:, 1] < y1)]
        assert len(rows) and rows[:, 0].min() < 1.2


def test_empty_actor_radius_is_its_display_size_in_world_units(envfx):
    """An Empty's trail radius is its display size times its world scale (a scaled parent, as an imported
    character's armature at 0.1, and a negative scale included), like a mesh of the same world size."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    rig = bpy.data.objects.new("Rig", None)
    rig.scale = (0.1, 0.1, 0.1)
    scene.collection.objects.link(rig)
    foot = bpy.data.objects.new("FootEmpty", None)
    foot.empty_display_size = 1.0
    foot.parent = rig
    actors.objects.link(foot)
    cube = bpy.data.objects.new("FootCube", bpy.data.meshes.new("FootCube"))
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=2.0)
    bm.to_mesh(api.mesh(cube))
    bm.free()
    cube.parent = rig
    actors.objects.link(cube)
    mirrored = bpy.data.objects.new("MirroredEmpty", None)
    mirrored.empty_display_size = 0.5
    mirrored.scale = (-1, -1, -1)
    actors.objects.link(mirrored)
    flat = bpy.data.objects.new("FlatEmpty", None)       # mirrored on one axis, stretched on another
    flat.empty_display_size = 0.5
    flat.scale = (-2.0, 1.0, 1.0)
    actors.objects.link(flat)
    api.view_layer().update()
    specs, skipped = envfx.operators.snow.actor_specs(scene)
    radius = {n: r for n, r, _, _ in specs}
    assert skipped == {}
    assert radius["FootEmpty"] == pytest.approx(0.1) and radius["FootCube"] == pytest.approx(0.1)
    assert radius["MirroredEmpty"] == pytest.approx(0.5)
    assert radius["FlatEmpty"] == pytest.approx(1.0)


def _layer_collection(name: str) -> bpy.types.LayerCollection:
    """The view layer's layer collection of the collection ``name``."""
    def find(lc: bpy.types.LayerCollection) -> bpy.types.LayerCollection | None:
        if lc.name == name:
            return lc
        return next((r for c in lc.children if (r := find(c)) is not None), None)
    found = find(api.view_layer().layer_collection)
    assert found is not None, f"no layer collection {name!r} in the view layer"
    return found


@pytest.mark.parametrize("hide", ["collection", "parent_collection", "object", "exclude"])
def test_bake_follows_actors_hidden_from_the_viewport(envfx, tmp_path, hide):
    """Actors disabled in viewports (their collection's, a parent collection's or their own monitor icon) or
    excluded from the view layer are not evaluated by a frame change: the bake still follows their animation
    (the same buffer as with the actors shown), and leaves the visibility and the scene's objects as they were."""
    scene, snow, actors = snow_scene(envfx, spacing=0.2)
    group = bpy.data.collections.new("Proxies")          # the actor collection inside another one
    scene.collection.children.unlink(actors)
    scene.collection.children.link(group)
    group.children.link(actors)
    a = sphere_object("A", 0.4, actors)
    animate(a, [(1, (-2.5, 0.0, 0.4)), (8, (2.5, 0.5, 0.4))])
    s = api.envfx(scene).snow
    s.frame_start, s.frame_end, s.buffer_resolution, s.sequence = 1, 8, 64, False
    s.output_dir = str(tmp_path / "shown")
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    shown = envfx.core.snow.read_exr(str(tmp_path / "shown" / "snow_buffer.exr"))
    assert shown[..., 0].min() < -0.1
    if hide == "collection":
        actors.hide_viewport = True
    elif hide == "parent_collection":
        group.hide_viewport = True
    elif hide == "object":
        a.hide_viewport = True
    else:
        _layer_collection("Actors").exclude = True
    api.view_layer().update()
    scene.frame_set(3)
    scene.frame_set(1)
    objects = sorted(bpy.data.objects.keys())
    s.output_dir = str(tmp_path / "hidden")
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    hidden = envfx.core.snow.read_exr(str(tmp_path / "hidden" / "snow_buffer.exr"))
    np.testing.assert_allclose(hidden, shown, atol=1e-5)
    assert sorted(bpy.data.objects.keys()) == objects
    assert (actors.hide_viewport, group.hide_viewport, a.hide_viewport, _layer_collection("Actors").exclude) == (
        hide == "collection", hide == "parent_collection", hide == "object", hide == "exclude")
    assert scene.frame_current == 1


def test_a_bent_actor_away_from_the_player_carves_and_bakes_as_an_unbent_one(envfx, tmp_path):
    """In a bent level the actors are bent too. Object.bound_box includes the bend, so an actor 12 m ahead of the
    player (where the bend drops it ~1 m) was measured with its feet ~1 m low: it sank below the snow and carved
    nothing, live or in the buffer bake. It is measured as before its bend: the same bottom, trail and buffer as an
    unbent actor there."""
    def bend_ground(ground: bpy.types.Object) -> None:
        scene = api.scene()
        player = bpy.data.objects.new("Player", None)
        scene.collection.objects.link(player)
        b = api.envfx(scene).bend
        b.mode, b.axis, b.pivot, b.strength, b.spread = "RUNNER", "POS_Y", player, 0.01, 2.0
        select_only(ground)
        assert api.ops.bend_add() == {"FINISHED"}
        api.envfx(scene).snow.lods = 0

    scene, snow, actors = snow_scene(envfx, spacing=0.25, size=40.0, thickness=0.4, segments=40,
                                     before_snow=bend_ground)
    s = api.envfx(scene).snow
    walker = sphere_object("Walker", 0.5, actors)
    settings = api.envfx(walker).snow
    settings.radius, settings.depth = 0.5, 0.2
    animate(walker, [(1, (0.0, 12.0, 0.3)), (10, (3.0, 12.0, 0.3))])
    api.linear(walker)
    scene.frame_set(1)
    unbent = envfx.operators.snow.actor_specs(scene)[0]
    select_only(walker)
    assert api.ops.bend_add() == {"FINISHED"}
    api.view_layer().update()
    assert min(c[2] for c in walker.bound_box) < -1.0  # Blender's box of the walker includes the bend
    bent = envfx.operators.snow.actor_specs(scene)[0]
    assert bent[0][0] == "Walker" and np.allclose(bent[0][1:], unbent[0][1:], atol=1e-5), (bent, unbent)
    select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, 11):
        scene.frame_set(f)
    params = envfx.shader_nodes.bend.params_from_scene(scene)
    shown = envfx.bridge.evaluated_positions(snow, bpy.context.evaluated_depsgraph_get())
    flat = envfx.core.bend.forward_local(envfx.bridge.get_positions(snow.data).astype(np.float64),
                                         np.array(snow.matrix_world), params)
    assert (shown - flat)[:, 2].min() == pytest.approx(-0.2, abs=0.02)  # the walker carved its full depth
    s.output_dir, s.frame_start, s.frame_end, s.sequence, s.framing = str(tmp_path), 1, 10, False, "AREA"
    s.buffer_resolution = 128
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    assert envfx.core.snow.read_exr(str(tmp_path / "snow_buffer.exr"))[..., 0].min() == pytest.approx(-0.2, abs=0.02)


def test_a_bent_actor_that_grows_during_playback_is_measured_after_the_frame_change(envfx):
    """Measuring a bent actor evaluates it, which Blender's frame_change_pre must not: the trails follow a bent
    actor's new size at frame_change_post of the same frame change (its measure is that of the unbent actor)."""
    scene, snow, actors = snow_scene(envfx, spacing=0.25)
    player = bpy.data.objects.new("Player", None)
    scene.collection.objects.link(player)
    b = api.envfx(scene).bend
    b.mode, b.axis, b.pivot, b.strength, b.spread = "RUNNER", "POS_Y", player, 0.01, 0.5
    walker = sphere_object("Walker", 0.5, actors)
    walker.location = (0.0, 3.0, 0.3)
    for frame, size in ((1, 1.0), (5, 1.6)):
        walker.scale = (size, size, size)
        walker.keyframe_insert("scale", frame=frame)
    select_only(snow, walker)
    assert api.ops.bend_add() == {"FINISHED"}
    select_only(snow)
    scene.frame_set(1)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    tree = envfx.shader_nodes.snow.group_for(scene)
    for f in range(1, 6):
        scene.frame_set(f)
    bent = envfx.operators.snow.actor_specs(scene)[0]
    assert tree[envfx.shader_nodes.snow.ACTORS_KEY] == envfx.shader_nodes.snow._actor_stamp(bent)
    assert bent[0][1] == pytest.approx(0.8, abs=0.01) and bent[0][3] == pytest.approx(0.8, abs=0.01)
