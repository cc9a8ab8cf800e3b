"""Hostile input and combined effects: effects combined the documented way evaluate without a dependency cycle
(the bend reads its pivot's transform only, through a stand-in Empty), and degenerate input never reaches the
meshes as NaN."""

import json

import bpy
import numpy as np
import pytest

from tests.blender import api


def _plane(name, size=10.0, cuts=8):
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=cuts, y_subdivisions=cuts, size=size)
    obj = api.active()
    obj.name = name
    return obj


def _run(op, objects, **kwargs):
    with bpy.context.temp_override(selected_objects=objects, active_object=objects[0], object=objects[0]):
        return getattr(api.ops, op)(**kwargs)


@pytest.fixture
def player_on_bent_snow(envfx):
    """A plane, a cube in an "Actors" collection, the cube the bend's pivot and a snow actor: Add Bend on the
    plane and the cube, Generate Snow, Add Trails (the issue's everyday scene)."""
    scene = api.scene()
    plane = _plane("Ground")
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0, 0, 0.25))
    cube = api.active()
    cube.name = "Player"
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    for coll in list(cube.users_collection):
        coll.objects.unlink(cube)
    actors.objects.link(cube)
    api.envfx(scene).bend.pivot = cube
    api.envfx(scene).snow.actors = actors
    api.envfx(scene).snow.spacing = 0.5
    assert _run("bend_add", [plane, cube]) == {"FINISHED"}
    assert _run("snow_generate", [plane]) == {"FINISHED"}
    assert _run("snow_trails_add", list(scene.objects)) == {"FINISHED"}
    return scene, plane, cube


def _cycles(text: str) -> int:
    return text.count("Dependency cycle detected")


def test_player_as_pivot_and_actor_on_bent_snow_has_no_cycle(capfd, player_on_bent_snow):
    """Blender prints a cycle when it builds the scene's relations (the set-up's calls, a frame step)."""
    scene, plane, cube = player_on_bent_snow
    for frame in (2, 3, 10):
        scene.frame_set(frame)
    bpy.context.evaluated_depsgraph_get().update()
    printed = capfd.readouterr()
    assert _cycles(printed.out + printed.err) == 0, printed.out + printed.err


def test_the_bend_reads_a_stand_in_that_follows_the_pivot(player_on_bent_snow, envfx):
    scene, plane, cube = player_on_bent_snow
    tree = envfx.shader_nodes.bend.group_for(scene)
    read = tree.nodes["Pivot"].inputs["Object"].default_value
    assert read is not cube and read.type == "EMPTY" and read.name not in scene.objects
    cube.location = (3.0, 1.0, 0.25)
    cube.keyframe_insert("location", frame=5)
    cube.location = (0.0, 0.0, 0.25)
    cube.keyframe_insert("location", frame=1)
    bridge = envfx.bridge
    for frame, pivot in ((1, (0.0, 0.0, 0.25)), (5, (3.0, 1.0, 0.25))):
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        got = bridge.evaluated_positions(plane, depsgraph)
        params = envfx.shader_nodes.bend.params_from_scene(scene)
        assert np.allclose(params.pivot, pivot)
        want = envfx.core.bend.forward_local(bridge.get_positions(plane.data), bridge.matrix_to_numpy(
            plane.matrix_world), params)
        assert np.abs(got - want).max() < 1e-4, frame
    # a new pivot retargets the stand-in; none gives the origin, as an Object Info node of nothing does
    scene.envfx.bend.pivot = None
    assert envfx.shader_nodes.common.proxy_target(tree.nodes["Pivot"].inputs["Object"].default_value) is None


def test_a_group_saved_reading_the_pivot_itself_gets_a_stand_in(player_on_bent_snow, envfx):
    scene, plane, cube = player_on_bent_snow
    tree = envfx.shader_nodes.bend.group_for(scene)
    tree.nodes["Pivot"].inputs["Object"].default_value = cube  # as an older EnvFX saved it
    envfx.shader_nodes.bend.follow_own_pivot(scene)
    read = tree.nodes["Pivot"].inputs["Object"].default_value
    assert envfx.shader_nodes.common.is_transform_proxy(read)
    assert envfx.shader_nodes.common.proxy_target(read) == cube


def test_a_full_copy_scene_gets_its_own_stand_in(player_on_bent_snow, envfx):
    scene, plane, cube = player_on_bent_snow
    common = envfx.shader_nodes.common
    bpy.ops.scene.new(type="FULL_COPY")
    copy = api.scene()
    copy.frame_set(2)
    envfx.shader_nodes.bend.follow_own_pivot(copy)
    mine = envfx.shader_nodes.bend.group_for(scene).nodes["Pivot"].inputs["Object"].default_value
    theirs = envfx.shader_nodes.bend.group_for(copy).nodes["Pivot"].inputs["Object"].default_value
    assert common.proxy_target(mine) == cube
    assert common.proxy_target(theirs) == api.envfx(copy).bend.pivot and api.envfx(copy).bend.pivot != cube


def test_a_nearly_singular_world_matrix_is_left_unbent_not_nan(envfx):
    """Parent scale (1, 0, 1), child scale 1e-6, both turned 90 degrees: the determinant is about 1e-40 and the
    group's inverted matrix was NaN (every vertex NaN). Such an object has no object-space "down": it stays as it
    is, as core.bend.live_local says; a healthy object of the same scene still bends."""
    scene = api.scene()
    parent = bpy.data.objects.new("Parent", None)
    scene.collection.objects.link(parent)
    parent.scale = (1.0, 0.0, 1.0)
    parent.rotation_euler = (1.5707963, 0.0, 0.0)
    child = _plane("Child", size=4.0, cuts=4)
    child.parent = parent
    child.scale = (1e-6, 1e-6, 1e-6)
    child.rotation_euler = (0.0, 1.5707963, 0.0)
    child.location = (0.0, 30.0, 0.0)
    healthy = _plane("Healthy", size=4.0, cuts=4)
    healthy.location = (0.0, 30.0, 0.0)
    api.envfx(scene).bend.strength = 0.05
    assert _run("bend_add", [child, healthy]) == {"FINISHED"}
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    bridge, core_bend = envfx.bridge, envfx.core.bend
    params = envfx.shader_nodes.bend.params_from_scene(scene)
    for obj, moves in ((child, False), (healthy, True)):
        got = bridge.evaluated_positions(obj, depsgraph)
        assert np.isfinite(got).all(), obj.name
        matrix = bridge.matrix_to_numpy(obj.matrix_world)
        assert core_bend.has_down(matrix) == moves
        want = core_bend.live_local(bridge.get_positions(obj.data), matrix, params)
        assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max()), obj.name
        assert (np.abs(got - bridge.get_positions(obj.data)).max() > 0.1) == moves, obj.name


@pytest.mark.parametrize("owner, name", [
    ("scene.wind", "strength"), ("scene.wind", "direction"), ("scene.wind", "gust_strength"),
    ("scene.wind", "gust_frequency"), ("scene.wind", "ambient"), ("scene.wind", "grass_tilt"),
    ("scene.wind", "grass_fade_start"), ("scene.wind", "grass_fade_end"),
    ("object.wind", "lift"), ("object.wind", "sway"), ("object.wind", "bend"), ("object.wind", "micro"),
    ("object.wind", "ramp"), ("object.wind", "rigidity"), ("object.wind", "asset_height"),
    ("scene.bend", "spread"), ("scene.bend", "side_spread"), ("scene.bend", "strength"),
    ("scene.bend", "horizon_offset"), ("scene.snow", "fade_height"), ("scene.snow", "refill_rate"),
    ("object.snow", "radius"),
])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_number_that_cannot_be_used_never_reaches_the_settings(envfx, owner, name, bad, capsys):
    """Blender stores NaN whatever a property's limits, and inf as its limit (3.4e38 without one): the update
    callback puts the last good value back and says so. An inf clamped to a limit the setting has (wind strength
    100) is that limit, a value the setting takes."""
    obj = _plane("Thing", size=2.0, cuts=2)
    group = {"scene": api.envfx(api.scene()), "object": api.envfx(obj)}[owner.split(".")[0]]
    group = getattr(group, owner.split(".")[1])
    prop = group.bl_rna.properties[name]
    good = min(max(0.5, prop.hard_min), prop.hard_max)
    setattr(group, name, good)
    setattr(group, name, bad)
    limit = prop.hard_max if bad > 0 else prop.hard_min
    if bad == bad and abs(limit) <= envfx.operators.common.NUMBER_LIMIT:
        assert getattr(group, name) == pytest.approx(limit), (owner, name)
        return
    assert getattr(group, name) == pytest.approx(good), (owner, name)
    assert f"EnvFX refused {prop.name}" in capsys.readouterr().out


def test_unusable_numbers_set_before_add_wind_never_make_nan_vertices(envfx):
    scene = api.scene()
    card = _plane("Card", size=2.0, cuts=4)
    card.rotation_euler = (1.5707963, 0.0, 0.0)
    assert _run("wind_bake_data", [card]) == {"FINISHED"}
    for name in ("strength", "gust_strength", "ambient", "direction"):
        setattr(api.envfx(scene).wind, name, float("nan"))
    api.envfx(card).wind.lift = float("nan")
    api.envfx(card).wind.asset_height = float("inf")
    assert _run("wind_add", [card]) == {"FINISHED"}
    for frame in (1, 7, 30):
        scene.frame_set(frame)
        got = envfx.bridge.evaluated_positions(card, bpy.context.evaluated_depsgraph_get())
        assert np.isfinite(got).all(), frame


def test_a_hair_actor_that_is_also_an_occluder_bakes_without_a_crash_or_a_cycle(tmp_path):
    """The scene that aborted Blender ("pure virtual method called") in Bake Interaction Buffer, three times over in
    a process of its own: it finishes, with no dependency cycle (an actor in the occluders is read as an actor
    only: its snow coverage reads the snow it would otherwise hold down)."""
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(__file__), "hair_actor_bake.py")
    run = subprocess.run([sys.executable, script, str(tmp_path / "out"), "3"], capture_output=True, text=True,
                         timeout=900, env=dict(os.environ, HOME=str(tmp_path)))
    printed = run.stdout + run.stderr
    assert run.returncode == 0 and "ok" in run.stdout.splitlines(), printed[-3000:]
    assert _cycles(printed) == 0, printed[-3000:]
    assert (tmp_path / "out" / "2" / "snow_buffer.json").is_file()


def test_actors_in_the_occluders_make_no_cycle_and_the_rest_still_hold_the_snow(capfd, envfx):
    """Occluders = the actors' collection plus a crate: the player (an actor) is left out of what the trails read
    as occluders, the crate is read."""
    scene = api.scene()
    plane = _plane("Ground")
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0, 0, 0.25))
    player = api.active()
    player.name = "Player"
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(2, 2, 0.25))
    crate = api.active()
    crate.name = "Crate"
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    for obj in (player, crate):
        for coll in list(obj.users_collection):
            coll.objects.unlink(obj)
    actors.objects.link(player)
    occluders = bpy.data.collections.new("Occluders")
    scene.collection.children.link(occluders)
    occluders.children.link(actors)
    occluders.objects.link(crate)
    api.envfx(scene).bend.pivot = player
    api.envfx(scene).snow.actors = actors
    api.envfx(scene).snow.occluders = occluders
    api.envfx(scene).snow.spacing = 0.5
    assert _run("bend_add", [plane, player]) == {"FINISHED"}
    assert _run("snow_generate", [plane]) == {"FINISHED"}
    assert _run("snow_trails_add", list(scene.objects)) == {"FINISHED"}
    for frame in (2, 3):
        scene.frame_set(frame)
    tree = envfx.shader_nodes.snow.group_for(scene)
    read = tree.nodes["Occluders"].inputs["Collection"].default_value
    assert read is not occluders and sorted(o.name for o in read.all_objects) == ["Crate"]
    printed = capfd.readouterr()
    assert _cycles(printed.out + printed.err) == 0, printed.out + printed.err
    # a new object in the occluders is read too; the actor stays left out
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(-2, 2, 0.25))
    barrel = api.active()
    for coll in list(barrel.users_collection):
        coll.objects.unlink(barrel)
    occluders.objects.link(barrel)
    envfx.operators.snow.trails.follow_actors(scene)
    read = tree.nodes["Occluders"].inputs["Collection"].default_value
    assert sorted(o.name for o in read.all_objects) == sorted(["Crate", barrel.name])


@pytest.mark.parametrize("op", ["snow_trails_add", "snow_bake_buffer"])
def test_an_unusable_bend_saved_in_a_file_is_refused_with_a_sentence_by_the_snow(envfx, tmp_path, op):
    """A bend number an older EnvFX let through (stored straight into the file, past the settings' checks) made
    Add Trails and Bake Interaction Buffer raise BendError as a traceback: they refuse, saying what is wrong."""
    scene = api.scene()
    plane = _plane("Ground")
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0, 0, 0.25))
    cube = api.active()
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    for coll in list(cube.users_collection):
        coll.objects.unlink(cube)
    actors.objects.link(cube)
    api.envfx(scene).snow.actors = actors
    api.envfx(scene).snow.spacing = 0.5
    assert _run("bend_add", [plane, cube]) == {"FINISHED"}
    assert _run("snow_generate", [plane]) == {"FINISHED"}
    if op == "snow_bake_buffer":
        assert _run("snow_trails_add", list(scene.objects)) == {"FINISHED"}
        s = api.envfx(scene).snow
        s.frame_start, s.frame_end, s.buffer_resolution, s.output_dir = 1, 2, 8, str(tmp_path / "out")
    api.envfx(scene).bend["horizon_offset"] = 1e30  # as a file saved before the checks holds it
    with pytest.raises(RuntimeError) as err:
        _run(op, list(scene.objects))
    message = str(err.value)
    assert "orizon" in message and "Traceback" not in message and "Python:" not in message, message
    assert not (tmp_path / "out").exists()


def test_export_for_game_engines_leaves_out_a_bent_curve_with_nothing_to_draw(envfx, tmp_path):
    """A bent curve (or text) that evaluates to no mesh made Export for Game Engines raise an AttributeError
    traceback (the fuzzer found it): it is left out of the culling bounds, the rest is exported."""
    scene = api.scene()
    plane = _plane("Ground")
    curve = bpy.data.objects.new("EmptyCurve", bpy.data.curves.new("EmptyCurve", "CURVE"))
    scene.collection.objects.link(curve)
    assert _run("bend_add", [plane, curve]) == {"FINISHED"}
    assert envfx.bridge.evaluated_positions(curve, bpy.context.evaluated_depsgraph_get()).shape == (0, 3)
    assert api.ops.bend_export_engines(directory=str(tmp_path / "eng")) == {"FINISHED"}
    meta = json.loads((tmp_path / "eng" / "envfx_bend.json").read_text())
    assert [o["name"] for o in meta["blender"]["culling"]["objects"]] == ["Ground"]


def test_every_operator_is_greyed_out_without_a_scene_and_its_poll_never_fails(envfx):
    """A context without a scene (``temp_override(scene=None)``, a script's own context; the API types
    ``context.scene`` as optional): every EnvFX operator's poll answers False, with the selection given, rather than
    raise ("'NoneType' object has no attribute 'objects'": the buffer bake's) or let the operator run into it (Export
    for Game Engines of the wind only looked at the selection)."""
    bpy.ops.mesh.primitive_cube_add()
    cube = api.active()
    polled, enabled = [], []
    with bpy.context.temp_override(scene=None, selected_objects=[cube], active_object=cube, object=cube):
        assert bpy.context.scene is None
        for cls in envfx.operators.classes:
            if not hasattr(cls, "poll"):
                continue  # no poll: nothing to check here
            if cls.poll(bpy.context) is not False:  # an exception fails the test here, naming the operator
                enabled.append(cls.bl_idname)
            polled.append(cls.bl_idname)
    assert not enabled, f"runnable without a scene: {enabled}"
    assert {"envfx.snow_bake_buffer", "envfx.wind_export_engines", "envfx.wind_view"} <= set(polled)
