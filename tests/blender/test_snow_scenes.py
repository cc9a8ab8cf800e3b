"""Snow in files with several scenes (each scene's snow stays in it) and in time (the bake over its frame range:
what shows outside it, actors measured at each baked frame)."""

import os

import bpy
import numpy as np
import pytest

from tests.blender import api


@pytest.fixture
def snow_helpers(load_helper):
    return load_helper("snow_helpers", "tests", "blender", "test_snow.py")


def _plane(name, scene, x=0.0):
    me = bpy.data.meshes.new(name)
    me.from_pydata([(-5, -5, 0), (5, -5, 0), (5, 5, 0), (-5, 5, 0)], [], [(0, 1, 2, 3)])
    obj = bpy.data.objects.new(name, me)
    obj.location = (x, 0, 0)
    scene.collection.objects.link(obj)
    return obj


def _generate(scene, terrain):
    """Generate Snow in ``scene`` over ``terrain``, as the button does there."""
    scene.envfx.snow.spacing = 0.5
    with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0], selected_objects=[terrain]):
        assert api.ops.snow_generate() == {"FINISHED"}


def _two_levels():
    """Scene "Level 1" with Ground1, scene "Level 2" with Ground2 at x = 100, snow generated in each."""
    s1 = api.scene()
    s1.name = "Level 1"
    for o in list(s1.objects):
        bpy.data.objects.remove(o)
    g1 = _plane("Ground1", s1)
    _generate(s1, g1)
    s2 = bpy.data.scenes.new("Level 2")
    g2 = _plane("Ground2", s2, x=100.0)
    _generate(s2, g2)
    return s1, s2


def _names(objs):
    return sorted(o.name for o in objs)


def _as_shared_layout(snow_ops, s1, s2):
    """Make the two levels' snow the old layout: Level 2's snow in Level 1's collection, which both scenes link; no
    scene points at it. Returns Level 2's snow."""
    shared, own2 = bpy.data.collections["EnvFX Snow"], bpy.data.collections["EnvFX Snow (Level 2)"]
    snow2 = bpy.data.objects["Ground2 Snow"]
    shared.objects.link(snow2)
    s2.collection.children.link(shared)
    bpy.data.collections.remove(own2)
    for sc in (s1, s2):
        del sc[snow_ops.COLLECTION_KEY]
    return snow2


def _walkers(s1, s2):
    """An actor collection with one walker standing on its snow for each of the two levels."""
    for sc, x in ((s1, 0.0), (s2, 100.0)):
        actors = bpy.data.collections.new(f"Actors {sc.name}")
        sc.collection.children.link(actors)
        walker = bpy.data.objects.new(f"Walker {sc.name}", None)
        walker.location = (x, 0.0, 0.3)
        actors.objects.link(walker)
        sc.envfx.snow.actors = actors


def test_snow_generated_in_one_scene_stays_in_it(envfx):
    """Each scene gets its own snow collection ("EnvFX Snow", then "EnvFX Snow (Level 2)"); snow_objects, Add
    Trails with nothing selected and regenerating in place see only the scene's own snow."""
    snow_ops = envfx.operators.snow
    s1, s2 = _two_levels()
    assert _names(s1.objects) == ["Ground1", "Ground1 Snow"]
    assert _names(s2.objects) == ["Ground2", "Ground2 Snow"]
    assert "EnvFX Snow" in s1.collection.children and "EnvFX Snow (Level 2)" not in s1.collection.children
    assert [c.name for c in s2.collection.children] == ["EnvFX Snow (Level 2)"]
    assert _names(snow_ops.snow_objects(s1)) == ["Ground1 Snow"]
    # Add Trails in Level 1 with nothing selected: Level 2's snow keeps no trails of Level 1
    for sc in (s1, s2):
        actors = bpy.data.collections.new(f"Actors {sc.name}")
        sc.collection.children.link(actors)
        walker = bpy.data.objects.new(f"Walker {sc.name}", None)
        actors.objects.link(walker)
        api.envfx(sc).snow.actors = actors
    with bpy.context.temp_override(scene=s1, view_layer=s1.view_layers[0], selected_objects=[]):
        assert api.ops.snow_trails_add() == {"FINISHED"}
    assert snow_ops.trails_modifiers(bpy.data.objects["Ground1 Snow"])
    assert not bpy.data.objects["Ground2 Snow"].modifiers
    # generating again in Level 2 regenerates Level 2's cover in place, in its own collection
    snow_ops.generate_snow(s2, [bpy.data.objects["Ground2"]], bpy.context.evaluated_depsgraph_get(), replace=True)
    assert _names(snow_ops.snow_objects(s2)) == ["Ground2 Snow"]
    assert _names(bpy.data.collections["EnvFX Snow (Level 2)"].objects) == ["Ground2 Snow"]
    assert _names(s1.objects) == ["Ground1", "Ground1 Snow", f"Walker {s1.name}"]


def test_copy_settings_scene_gets_its_own_snow_collection(envfx):
    """A scene made with Copy Settings copies the pointer at the first scene's collection, which is not in it: its
    snow goes into a collection of its own."""
    s1 = api.scene()
    for o in list(s1.objects):
        bpy.data.objects.remove(o)
    _generate(s1, _plane("Ground1", s1))
    s2 = bpy.data.scenes.new("Level 2")
    s2[envfx.operators.snow.COLLECTION_KEY] = s1[envfx.operators.snow.COLLECTION_KEY]
    _generate(s2, _plane("Ground2", s2, x=100.0))
    assert _names(s1.objects) == ["Ground1", "Ground1 Snow"]
    assert _names(s2.objects) == ["Ground2", "Ground2 Snow"]


def test_file_with_one_shared_snow_collection_splits_on_load(envfx, save_and_reopen):
    """A file saved before each scene had its own snow collection: one "EnvFX Snow", linked into both levels,
    holding both levels' snow. After loading, each level shows only its own snow; generating again in Level 2
    regenerates its cover in place; a third scene's new snow goes into a collection of its own."""
    snow_ops = envfx.operators.snow
    s1, s2 = _two_levels()
    _as_shared_layout(snow_ops, s1, s2)
    assert _names(snow_ops.snow_objects(s1)) == ["Ground1 Snow", "Ground2 Snow"]  # the defect, as saved
    save_and_reopen("shared.blend")
    s1, s2 = bpy.data.scenes["Level 1"], bpy.data.scenes["Level 2"]
    assert _names(s1.objects) == ["Ground1", "Ground1 Snow"]
    assert _names(s2.objects) == ["Ground2", "Ground2 Snow"]
    assert _names(snow_ops.snow_objects(s2)) == ["Ground2 Snow"]
    snow_ops.generate_snow(s2, [bpy.data.objects["Ground2"]], bpy.context.evaluated_depsgraph_get(), replace=True)
    assert _names(s2.objects) == ["Ground2", "Ground2 Snow"] and _names(s1.objects) == ["Ground1", "Ground1 Snow"]
    s3 = bpy.data.scenes.new("Level 3")
    _generate(s3, _plane("Ground3", s3, x=200.0))
    assert _names(s3.objects) == ["Ground3", "Ground3 Snow"]
    assert _names(s1.objects) == ["Ground1", "Ground1 Snow"] and _names(s2.objects) == ["Ground2", "Ground2 Snow"]


def test_linked_copy_shares_its_snow(envfx, save_and_reopen):
    """A Linked Copy of a scene shares its collections, the snow's too: snow whose terrain is in both scenes stays
    in both, also when the file is opened as one saved with the shared collection (no scene points at it)."""
    snow_ops = envfx.operators.snow
    s1 = api.scene()
    for o in list(s1.objects):
        bpy.data.objects.remove(o)
    _generate(s1, _plane("Ground1", s1))
    with bpy.context.temp_override(scene=s1):
        bpy.ops.scene.new(type="LINK_COPY")
    s2 = next(s for s in bpy.data.scenes if s != s1)
    assert _names(snow_ops.snow_objects(s2)) == ["Ground1 Snow"]
    del s1[snow_ops.COLLECTION_KEY]
    if snow_ops.COLLECTION_KEY in s2:
        del s2[snow_ops.COLLECTION_KEY]
    save_and_reopen("linked.blend")
    for sc in bpy.data.scenes:
        assert _names(snow_ops.snow_objects(sc)) == ["Ground1 Snow"]


# --- the bake's frame range -------------------------------------------------------------------------------

def _walk_and_bake(h, envfx, tmp_path, first=5, last=15, sequence=True):
    """One sphere actor crossing the snow over frames 5..10, then standing; the scene runs 1..30; the live trails
    are played, then frames ``first``..``last`` are baked into ``tmp_path``. Returns (scene, snow)."""
    scene, snow, actors = h.snow_scene(envfx, spacing=0.2, size=8.0)
    a = h.sphere_object("A", 0.5, actors)
    h.animate(a, [(5, (-2.5, 0.0, 0.45)), (10, (2.5, 0.0, 0.45))])
    scene.frame_start, scene.frame_end = 1, 30
    s = scene.envfx.snow
    s.frame_start, s.frame_end = first, last
    s.buffer_resolution, s.output_dir, s.sequence, s.framing = 64, str(tmp_path), sequence, "AREA"
    scene.frame_set(1)
    h.select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    return scene, snow


def test_snow_driven_by_the_bake_holds_its_last_frame_after_the_range(envfx, tmp_path, snow_helpers, capsys):
    """A bake of frames 5..15 in a scene of frames 1..30: after frame 15 the snow holds frame 15's trails (it went
    flat: the image sequence has no file there), before frame 5 it is untouched; the bake and Snow from Bake say
    which frames the bake misses."""
    h = snow_helpers
    scene, snow = _walk_and_bake(h, envfx, tmp_path)
    warning = "The bake covers frames 5-15, not the scene's 1-30: after frame 15 the snow holds frame 15's trails"
    assert warning in capsys.readouterr().out
    assert api.ops.snow_drive_from_bake() == {"FINISHED"}
    assert warning in capsys.readouterr().out
    offsets = {}
    for f in (3, 4, 5, 7, 15, 16, 25, 30):
        scene.frame_set(f)
        offsets[f] = h.evaluated_offset(envfx, snow)[1]
    assert offsets[15].min() < -0.2  # the trail
    for f in (16, 25, 30):
        np.testing.assert_array_equal(offsets[f], offsets[15])
    assert np.abs(offsets[7] - offsets[15]).max() > 0.05  # inside the range each frame shows its own
    for f in (3, 4):
        assert np.abs(offsets[f]).max() == 0.0
    assert offsets[5].min() < -0.1  # the first baked frame shows from frame 5 on


def test_final_state_bake_shows_at_every_frame(envfx, tmp_path, snow_helpers, capsys):
    """A bake of the final state only (Image Sequence off) shows it at every frame, before its range too; its
    warning names only the frames after it."""
    h = snow_helpers
    scene, snow = _walk_and_bake(h, envfx, tmp_path, sequence=False)
    out = capsys.readouterr().out
    assert "after frame 15 the snow holds" in out and "untouched" not in out
    assert api.ops.snow_drive_from_bake() == {"FINISHED"}
    scene.frame_set(2)
    early = h.evaluated_offset(envfx, snow)[1]
    scene.frame_set(30)
    np.testing.assert_array_equal(h.evaluated_offset(envfx, snow)[1], early)
    assert early.min() < -0.2


def test_bake_of_the_scene_range_warns_nothing(envfx, tmp_path, snow_helpers, capsys):
    h = snow_helpers
    _walk_and_bake(h, envfx, tmp_path, first=1, last=30)
    assert "The bake covers" not in capsys.readouterr().out


def test_cli_bake_warns_of_a_short_range(envfx, tmp_path, snow_helpers, capsys):
    h = snow_helpers
    scene, snow = _walk_and_bake(h, envfx, tmp_path)
    path = str(tmp_path / "short.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    capsys.readouterr()
    assert envfx.cli.main(["snow", path, "--bake", "--out-dir", str(tmp_path / "cli"), "--frames", "5:15"]) == 0
    assert (f"envfx snow: {path}: warning: The bake covers frames 5-15, not the scene's 1-30"
            in capsys.readouterr().out)


# --- actors measured at each baked frame ------------------------------------------------------------------

def _growing_actor(h, envfx, tmp_path):
    """A standing sphere actor (r 0.5) at the snow's centre, twice its size from frame 10 on (constant keys);
    the bake covers frames 1..12 (AREA, 128 texels). Returns (scene, snow)."""
    scene, snow, actors = h.snow_scene(envfx, spacing=0.1, size=8.0)
    a = h.sphere_object("A", 0.5, actors)
    a.location = (0, 0, 0.45)
    a.keyframe_insert("scale", frame=1)
    a.scale = (2, 2, 2)
    a.keyframe_insert("scale", frame=10)
    for fc in api.fcurves(a):
        for kp in fc.keyframe_points:
            kp.interpolation = "CONSTANT"
    scene.frame_start, scene.frame_end = 1, 12
    s = scene.envfx.snow
    s.frame_start, s.frame_end = 1, 12
    s.buffer_resolution, s.output_dir, s.framing = 128, str(tmp_path), "AREA"
    scene.frame_set(1)
    h.select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    return scene, snow


def _carved_radius(h, envfx, snow):
    rest, off = h.evaluated_offset(envfx, snow)
    carved = off < -0.01
    return float(np.hypot(rest[carved, 0], rest[carved, 1]).max()) if carved.any() else 0.0


def test_bake_measures_each_actor_at_each_frame(envfx, tmp_path, snow_helpers):
    """An actor that doubles its size at frame 10: the bake of frames 1..12 is the same whichever frame the
    playhead was on when it started (it measured every actor once, at that frame: started at frame 1 the trail
    kept the small size), and its last frame carves with the big size."""
    h = snow_helpers
    scene, snow = _growing_actor(h, envfx, tmp_path)
    radii = {}
    for start_at in (1, 12):
        scene.frame_set(start_at)
        assert api.ops.snow_bake_buffer() == {"FINISHED"}
        assert api.ops.snow_drive_from_bake() == {"FINISHED"}
        scene.frame_set(12)
        radii[start_at] = _carved_radius(h, envfx, snow)
        scene.frame_set(9)
        radii[start_at, 9] = _carved_radius(h, envfx, snow)
        assert api.ops.snow_drive_from_bake(use_bake=False) == {"FINISHED"}
    assert radii[1] == radii[12] and radii[1, 9] == radii[12, 9]
    assert radii[12] > 0.75 and radii[12, 9] < 0.5  # frame 12 carved by the big actor, frame 9 by the small one


def test_live_trails_take_a_keyed_size_on_its_frame(envfx, tmp_path, snow_helpers):
    """The live trails carve with the size the actor has at the frame shown: at frame 10, where its scale key
    doubles it (they took it one frame late: frame_change_pre still saw frame 9's world matrix)."""
    h = snow_helpers
    scene, snow = _growing_actor(h, envfx, tmp_path)
    radii = {}
    for f in range(1, 12):
        scene.frame_set(f)
        radii[f] = _carved_radius(h, envfx, snow)
    assert radii[9] < 0.5 and radii[10] > 0.75


def test_a_bake_again_is_what_the_driven_snow_shows(envfx, tmp_path, snow_helpers, save_and_reopen):
    """Baking again into the folder the snow is driven from, over a shorter range, is what the snow shows (before:
    the range of the bake Snow from Bake was pressed for, until it was pressed again); a file saved with a Snow
    from Bake group of an older EnvFX (without the frame range) is brought up to date when it is opened."""
    h = snow_helpers
    scene, snow = _walk_and_bake(h, envfx, tmp_path, first=5, last=15)
    assert api.ops.snow_drive_from_bake() == {"FINISHED"}
    (tree,) = [t for t in bpy.data.node_groups if envfx.shader_nodes.snow.is_buffer_group(t)]
    assert api.socket(tree.nodes["Last Frame"].outputs[0]).default_value == 15
    scene.envfx.snow.frame_end = 7
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    assert api.socket(tree.nodes["Last Frame"].outputs[0]).default_value == 7
    scene.frame_set(7)
    at7 = h.evaluated_offset(envfx, snow)[1]
    scene.frame_set(12)
    np.testing.assert_array_equal(h.evaluated_offset(envfx, snow)[1], at7)  # holds the new last frame
    tree["envfx_stamp"] = "1"  # as an older EnvFX saved it
    api.socket(tree.nodes["Last Frame"].outputs[0]).default_value = 1.0
    save_and_reopen("driven.blend")
    (tree,) = [t for t in bpy.data.node_groups if envfx.shader_nodes.snow.is_buffer_group(t)]
    assert tree["envfx_stamp"] == str(envfx.shader_nodes.snow.BUFFER_VERSION)
    assert api.socket(tree.nodes["Last Frame"].outputs[0]).default_value == 7


def test_split_gives_moved_snow_its_own_scenes_trails(envfx, save_and_reopen):
    """In the shared layout, Add Trails in Level 1 also took Level 2's snow (the shared collection put it there):
    after the split on load, that snow is trailed by Level 2's own group and actors (before: it stayed on Level
    1's group, and Level 2's walker carved nothing)."""
    snow_ops = envfx.operators.snow
    s1, s2 = _two_levels()
    _walkers(s1, s2)
    snow2 = _as_shared_layout(snow_ops, s1, s2)
    snow_ops.add_trails(s1, [bpy.data.objects["Ground1 Snow"], snow2])  # what Add Trails did then
    assert snow_ops.trails_modifiers(snow2)[0].node_group == envfx.shader_nodes.snow.group_for(s1)
    save_and_reopen("shared_trails.blend")
    s1, s2 = bpy.data.scenes["Level 1"], bpy.data.scenes["Level 2"]
    snow2 = bpy.data.objects["Ground2 Snow"]
    (mod,) = snow_ops.trails_modifiers(snow2)
    assert mod.node_group == envfx.shader_nodes.snow.group_for(s2) != envfx.shader_nodes.snow.group_for(s1)


def test_stale_snow_surfaces_are_synced_on_load_and_switching_scenes_is_safe(envfx, save_and_reopen):
    """A file whose Level 2 snow surfaces also held Level 1's snow (as the split of an old shared file left them):
    opening it brings each scene's surfaces up to date at once, and switching to Level 2 works (Blender 4.2
    crashed when the first frame change there unlinked the stale member during the switch)."""
    snow_ops = envfx.operators.snow
    s1, s2 = _two_levels()
    _walkers(s1, s2)
    for sc in (s1, s2):
        snow_ops.add_trails(sc, snow_ops.snow_objects(sc))
    surfaces2 = envfx.shader_nodes.snow.surfaces_for(s2)
    surfaces2.objects.link(bpy.data.objects["Ground1 Snow"])  # a stale member
    save_and_reopen("stale_surfaces.blend")
    s2 = bpy.data.scenes["Level 2"]
    assert _names(envfx.shader_nodes.snow.surfaces_for(s2).objects) == ["Ground2 Snow"]
    api.window().scene = s2
    s2.frame_set(2)
    assert api.scene() == s2


def test_bake_takes_an_actor_that_has_no_size_at_the_playheads_frame(envfx, tmp_path, snow_helpers):
    """The only actor scales in from 0 (frames 1..3): with the playhead on frame 1 the bake was refused ("has no
    size: set its Snow Radius"), though it measures each actor at each frame; it bakes now, as from frame 5. An
    actor of size 0 at every baked frame is refused, saying so, and nothing is written."""
    h = snow_helpers
    scene, snow, actors = h.snow_scene(envfx, spacing=0.2, size=8.0)
    a = h.sphere_object("Spawned", 0.6, actors)
    a.location = (0.0, 0.0, 0.55)
    a.scale = (0.0, 0.0, 0.0)
    a.keyframe_insert("scale", frame=1)
    a.scale = (1.0, 1.0, 1.0)
    a.keyframe_insert("scale", frame=3)
    s = scene.envfx.snow
    s.frame_start, s.frame_end = 1, 10
    s.buffer_resolution, s.output_dir, s.framing = 32, str(tmp_path / "a"), "AREA"
    scene.frame_set(1)
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    s.frame_end, s.output_dir = 1, str(tmp_path / "b")
    with pytest.raises(RuntimeError, match="No actor of 'Actors' has a size at any frame of the bake .1-1."):
        api.ops.snow_bake_buffer()
    assert not (tmp_path / "b").exists() or not os.listdir(tmp_path / "b")


def test_regenerating_a_full_copys_snow_renews_its_cover(envfx):
    """Scene > New > Full Copy copies Ground as Ground.001 and its snow keeps the tag "Ground": regenerating the
    copy's snow over Ground.001 in place renews that cover (before: it made a second one over it) and leaves the
    original scene's alone."""
    snow_ops = envfx.operators.snow
    s1, _s2 = _two_levels()
    api.window().scene = s1
    bpy.ops.scene.new(type="FULL_COPY")
    copy = api.scene()
    assert copy != s1
    ground = next(o for o in copy.objects if o.name.startswith("Ground1."))
    before = _names(snow_ops.snow_objects(copy))
    assert len(before) == 1
    made = snow_ops.generate_snow(copy, [ground], bpy.context.evaluated_depsgraph_get(), replace=True)
    assert _names(snow_ops.snow_objects(copy)) == before == _names(made)
    assert _names(snow_ops.snow_objects(s1)) == ["Ground1 Snow"]
