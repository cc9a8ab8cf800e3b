"""Wind in production-style scenes: many plant objects, objects Blender does not evaluate, scaled linked duplicates,
large frame numbers, a wind object deleted by a script."""

import math

import bpy
import numpy as np
import pytest

from tests.blender import api


@pytest.fixture
def helpers(load_helper):
    """tests/blender/test_wind.py's helpers (``_tree``, ``_read``, ``_gn_vs_core``)."""
    return load_helper("test_wind_helpers", "tests", "blender", "test_wind.py")


def _clump(mods, name, mesh=None):
    """A small two-card plant (its own mesh, or ``mesh``)."""
    if mesh is None:
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata([(-0.1, 0, 0), (0.1, 0, 0), (0.1, 0, 0.5), (-0.1, 0, 0.5),
                          (0, -0.1, 0), (0, 0.1, 0), (0, 0.1, 0.5), (0, -0.1, 0.5)], [],
                         [(0, 1, 2, 3), (4, 5, 6, 7)])
        mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    api.scene().collection.objects.link(obj)
    return obj


def test_remove_wind_is_linear_in_the_number_of_objects(mods, monkeypatch):
    """Remove Wind looked for other users of each removed object's mesh among all of the file's objects, asking
    the sharers already taken out again and again: N^2 calls of ``wind_modifiers`` for N linked duplicates. Now
    one pass after the loop."""
    scene = api.scene()
    plants = [_clump(mods, "Plant 0")]
    mods.ops.bake(scene, plants, ao_samples=0)
    plants += [_clump(mods, f"Plant {i}", plants[0].data) for i in range(1, 60)]  # linked duplicates
    own = [_clump(mods, f"Own {i}", api.mesh(plants[0]).copy()) for i in range(20)]  # each its own baked mesh
    keep = _clump(mods, "Keeps Wind", own[0].data)  # stays in the wind: that mesh keeps its live data
    mods.ops.add_wind(scene, plants + own + [keep])
    calls = []
    real = mods.ops.wind_modifiers
    monkeypatch.setattr(mods.ops, "wind_modifiers", lambda obj: calls.append(obj.name) or real(obj))
    result = mods.ops.remove_wind(plants + own)
    n = len(plants) + len(own)
    assert len(result.changed) == n
    assert len(calls) <= 4 * n, len(calls)
    live = mods.core.LIVE_ATTRS[0]
    assert api.mesh(own[0]).attributes.get(live) is not None
    assert all(api.mesh(o).attributes.get(live) is None for o in plants + own[1:])
    assert mods.ops.wind_modifiers(keep)


def _y_up_tree(name, collection):
    """A Y-up asset as an importer gives it before its X rotation: a 3 m trunk along local +Y and four leaves."""
    import bmesh
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=(0.2, 3.0, 0.2), verts=list(bm.verts))
    bmesh.ops.translate(bm, vec=(0, 1.5, 0), verts=list(bm.verts))
    for k in range(4):
        c = (0.15, 2.0 + 0.2 * k, 0.0)
        bm.faces.new([bm.verts.new((c[0] + dx, c[1] + dy, 0.0)) for dx, dy in ((0, 0), (0.3, 0), (0.3, 0.3), (0, 0.3))])
    bm.to_mesh(mesh)
    bm.free()
    obj = bpy.data.objects.new(name, mesh)
    collection.objects.link(obj)
    return obj


def test_bake_skips_objects_blender_does_not_evaluate_instead_of_baking_their_stale_transform(mods):
    """An object disabled in viewports, in a collection disabled in viewports or excluded from the view layer keeps
    the matrix_world of its last evaluation: the bake read a Y-up tree stood up since then as lying down (asset
    height 0.20, the trunk's thickness) and said nothing. It is skipped and named now, its mesh untouched; an
    object only hidden (the eye) is evaluated and bakes right."""
    scene = api.scene()
    view_layer = api.view_layer()
    disabled, excluded = bpy.data.collections.new("Disabled"), bpy.data.collections.new("Excluded")
    scene.collection.children.link(disabled)
    scene.collection.children.link(excluded)
    trees = {name: _y_up_tree(name, coll) for name, coll in (
        ("Visible", scene.collection), ("Hidden", scene.collection), ("Monitor", scene.collection),
        ("InDisabled", disabled), ("InExcluded", excluded))}
    view_layer.update()
    trees["Hidden"].hide_set(True)
    trees["Monitor"].hide_viewport = True
    disabled.hide_viewport = True
    view_layer.layer_collection.children["Excluded"].exclude = True
    for obj in trees.values():
        obj.rotation_euler = (math.pi / 2, 0.0, 0.0)  # stand the Y-up trees up
    view_layer.update()
    for name in ("Visible", "Hidden"):
        mods.ops.bake(scene, [trees[name]], ao_samples=0)
        assert api.envfx(trees[name]).wind.asset_height == pytest.approx(3.0, abs=1e-3)
    expect = {"Monitor": "disabled in viewports", "InDisabled": "collection 'Disabled' is disabled in viewports",
              "InExcluded": "not in view layer"}
    for name, why in expect.items():
        with pytest.raises(mods.ops.WindInputError, match=why):
            mods.ops.bake(scene, [trees[name]], ao_samples=0)
        assert api.mesh(trees[name]).attributes.get("EnvFX_Height") is None
        assert api.envfx(trees[name]).wind.asset_height == 1.0
    result = mods.ops.bake(scene, list(trees.values()), ao_samples=0)  # one asset: the stale ones left out, named
    assert set(result.skipped) == set(expect)
    assert all("enable it in the viewport and bake again" in r for r in result.skipped.values())
    assert sorted(result.changed) == ["Hidden", "Visible"]
    assert all(api.mesh(trees[name]).attributes.get("EnvFX_Height") is None for name in expect)


def _world_sway(mods, obj, frame):
    api.scene().frame_set(frame)
    got = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
    rest = mods.bridge.get_positions(obj.data).astype(np.float64)
    m = mods.bridge.matrix_to_numpy(obj.matrix_world)
    return float(np.abs((got - rest) @ m[:3, :3].T).max())


def test_scaled_linked_duplicates_sway_like_scaled_copies(mods, helpers):
    """Linked duplicates of a plant at different scales all got the baked object's Asset Height, so a 2x clump
    swayed as far as a 1x one (and which size was right depended on which duplicate was baked). Each object now
    gets the baked height times its world Z scale over the baked object's, from the bake and from Add Wind."""
    scene = api.scene()
    w = api.envfx(scene).wind
    w.gust_strength = 0.0
    s1 = _clump(mods, "ClumpS1")
    s2 = _clump(mods, "ClumpS2", s1.data)
    s2.scale = (2.0, 2.0, 2.0)
    api.view_layer().update()
    mods.ops.bake(scene, [s1], ao_samples=0)
    assert api.envfx(s1).wind.asset_height == pytest.approx(0.5, rel=1e-5)
    assert api.envfx(s2).wind.asset_height == pytest.approx(1.0, rel=1e-5)
    mods.ops.apply_preset([s1, s2], "BUSH")
    mods.ops.add_wind(scene, [s1, s2])
    sway1, sway2 = _world_sway(mods, s1, 17), _world_sway(mods, s2, 17)
    assert sway1 > 0.01
    assert sway2 == pytest.approx(2.0 * sway1, rel=1e-3)
    assert helpers._gn_vs_core(mods, s2, (17, 40)) < 1e-4  # the live wind and its twin read the same height
    # baking the 2x duplicate instead gives the same sizes
    mods.ops.bake(scene, [s2], ao_samples=0)
    assert (api.envfx(s1).wind.asset_height, api.envfx(s2).wind.asset_height) == (pytest.approx(0.5, rel=1e-5),
                                                                         pytest.approx(1.0, rel=1e-5))
    # a duplicate made after the bake (Add Wind sets its height), and one rescaled while in the wind (Add Wind
    # again brings its height to its new size, and counts it as changed)
    s3 = _clump(mods, "ClumpS3", s1.data)
    s3.scale = (3.0, 3.0, 3.0)
    s2.scale = (4.0, 4.0, 4.0)
    api.view_layer().update()
    result = mods.ops.add_wind(scene, [s1, s2, s3])
    assert api.envfx(s3).wind.asset_height == pytest.approx(1.5, rel=1e-5)
    assert api.envfx(s2).wind.asset_height == pytest.approx(2.0, rel=1e-5)
    assert sorted(result.changed) == ["ClumpS2", "ClumpS3"] and result.unchanged == ["ClumpS1"]
    mods.ops.apply_preset([s3], "BUSH")
    assert _world_sway(mods, s3, 17) == pytest.approx(3.0 * _world_sway(mods, s1, 17), rel=1e-3)
    assert helpers._gn_vs_core(mods, s3, (17,)) < 1e-4


def test_duplicates_in_another_scene_or_scaled_to_nothing(mods):
    """A duplicate in another level of the file is evaluated by its own scene, so the bake gives it its height at
    its size (before: kept its old height, named as disabled in viewports); one scaled to nothing now (a keyed
    grow-in at its first frame) keeps its height and is named with what to do (before: got 0 and never swayed)."""
    scene = api.scene()
    s1 = _clump(mods, "PlantA")
    level2 = bpy.data.scenes.new("Level2")
    far = bpy.data.objects.new("PlantB", s1.data)
    level2.collection.objects.link(far)
    far.scale = (3.0, 3.0, 3.0)
    grow = _clump(mods, "PlantC", s1.data)
    grow.scale = (0.0, 0.0, 0.0)
    api.view_layer().update()
    level2.view_layers[0].update()  # Level 2 shown once (as in a saved file): its world matrices are its own
    result = mods.ops.bake(scene, [s1], ao_samples=0)
    assert api.envfx(far).wind.asset_height == pytest.approx(1.5, rel=1e-4)
    assert api.envfx(grow).wind.asset_height == 1.0
    (warning,) = [w for w in result.warnings if "PlantC" in w]
    assert "scaled to nothing" in warning and "Add Wind again" in warning
    assert not any("PlantB" in w for w in result.warnings)


def test_a_stood_up_y_up_duplicate_takes_its_height_from_its_up_scale(mods):
    """World Z scale is the Z row of the world matrix: a Y-up asset stood up by a 90 degree X rotation grows with
    its Y scale, not its Z scale; a duplicate Blender does not evaluate keeps its height, named."""
    scene = api.scene()
    a = _y_up_tree("TreeA", scene.collection)
    b = bpy.data.objects.new("TreeB", a.data)
    c = bpy.data.objects.new("TreeC", a.data)
    scene.collection.objects.link(b)
    scene.collection.objects.link(c)
    for obj in (a, b, c):
        obj.rotation_euler = (math.pi / 2, 0.0, 0.0)
    b.scale = (1.0, 1.5, 5.0)
    api.view_layer().update()
    c.hide_viewport = True
    c.scale = (2.0, 2.0, 2.0)
    result = mods.ops.bake(scene, [a], ao_samples=0)
    assert api.envfx(a).wind.asset_height == pytest.approx(3.0, rel=1e-4)
    assert api.envfx(b).wind.asset_height == pytest.approx(4.5, rel=1e-4)
    assert api.envfx(c).wind.asset_height == 1.0
    assert any(w_.startswith("TreeC shares a baked mesh but Blender does not evaluate it") for w_ in result.warnings)


def test_a_plant_scaled_by_a_script_takes_its_new_size_from_the_bake_and_add_wind(mods):
    """Blender updates an object's world matrix only when it evaluates the scene, so a script that scaled a plant
    and baked it or added wind at once gave it the height of its old size (and a later Add Wind, after a redraw, the
    height of its new one: the modifiers and the GPU then swayed it differently). Both bring the scene up to date
    first."""
    scene = api.scene()
    clump = _clump(mods, "Clump")  # 0.5 m tall
    api.view_layer().update()  # (evaluated at its first size)
    clump.scale = (2.0, 2.0, 2.0)
    mods.ops.bake(scene, [clump], ao_samples=0)
    assert api.envfx(clump).wind.asset_height == pytest.approx(1.0, rel=1e-5)
    clump.scale = (0.5, 2.0, 3.0)
    mods.ops.add_wind(scene, [clump])
    assert api.envfx(clump).wind.asset_height == pytest.approx(1.5, rel=1e-5)


def _windy_tree(mods, helpers):
    scene = api.scene()
    _tree, (obj,) = helpers._tree(mods, n_branches=3, leaves_per_branch=2)
    mods.ops.bake(scene, [obj], ao_samples=0)
    mods.ops.add_wind(scene, [obj])
    w = api.envfx(scene).wind
    w.strength, w.gust_strength = 1.5, 0.5
    return obj


def _at(mods, obj, frame):
    api.scene().frame_set(frame)
    return mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())


def test_a_loop_closes_and_matches_the_twin_at_large_frame_numbers(mods, helpers):
    """The group's float32 time was absolute: at frame 100001 a 96-frame loop missed by 4.8e-4 m and the twin by
    6.8e-4 (3.6e-3 at 1000001). The frame is wrapped into the loop first now."""
    obj = _windy_tree(mods, helpers)
    api.envfx(api.scene()).wind.loop_frames = 96
    for start in (100001, 1000001, -50001):
        assert np.abs(_at(mods, obj, start) - _at(mods, obj, start + 96)).max() < 1e-5
        assert np.abs(_at(mods, obj, start) - _at(mods, obj, start % 96)).max() < 1e-5
        assert helpers._gn_vs_core(mods, obj, (start,)) < 1e-4
    rest = mods.bridge.get_positions(obj.data)
    assert np.abs(_at(mods, obj, 100001) - rest).max() > 0.05


@pytest.mark.parametrize("how", ["deleted", "unlinked"])
def test_a_wind_object_deleted_by_a_script_hands_over_at_the_next_frame(mods, helpers, how):
    """A script that deletes (or unlinks) the wind object and steps frames fires no depsgraph update in background
    mode: the group kept "Use Source" with an empty Source node, 1.6 m off the scene's wind, until some other
    change. The frame handler hands over to the scene's direction and strength at the next frame_set."""
    scene = api.scene()
    obj = _windy_tree(mods, helpers)
    bpy.ops.object.effector_add(type="WIND", rotation=(math.pi / 2, 0.0, 1.2))
    field = api.active()
    assert field.field is not None
    field.field.strength = 3.0
    api.envfx(scene).wind.source_object = field
    scene.frame_set(20)
    with_source = _at(mods, obj, 20)
    tree = mods.nodes.group_for(scene)
    assert tree.nodes["Use Source"].outputs[0].default_value == 1.0
    if how == "deleted":
        bpy.data.objects.remove(field)
    else:
        field.users_collection[0].objects.unlink(field)
    scene.frame_set(21)
    assert tree.nodes["Use Source"].outputs[0].default_value == 0.0
    assert tree.nodes["Source"].inputs["Object"].default_value is None
    assert helpers._gn_vs_core(mods, obj, (20, 21)) < 1e-4
    assert np.abs(_at(mods, obj, 20) - with_source).max() > 0.1


def test_the_same_warning_for_many_objects_is_one_report(envfx, capfd):
    """Add Wind on a level's props that were never baked: one warning line naming a few and counting the rest, not
    one per object (a thousand props printed a thousand lines); a warning about fewer objects stays one per
    object, and other warnings are kept as they are."""
    scene = api.scene()
    props = []
    for i in range(6):
        mesh = bpy.data.meshes.new(f"Prop{i}")
        mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 0, 1)], [], [(0, 1, 2)])
        obj = bpy.data.objects.new(f"Prop{i}", mesh)
        scene.collection.objects.link(obj)
        props.append(obj)
    for obj in scene.objects:
        obj.select_set(obj in props)
    capfd.readouterr()
    assert api.ops.wind_add() == {"FINISHED"}
    out = capfd.readouterr().out
    assert out.count("no baked wind data") == 1
    assert "Prop0, Prop1, Prop2 and 3 more: no baked wind data, so it will not move" in out
    common = envfx.operators.common
    result = common.ObjectsResult(changed=["A", "B", "C"], warnings=["A: x", "B: x", "C: x", "Note: y", "B: z"])
    assert common.grouped_warnings(result) == ["A: x", "B: x", "C: x", "Note: y", "B: z"]
    result.changed.append("D")
    result.warnings.append("D: x")
    assert common.grouped_warnings(result) == ["A, B, C and 1 more: x", "Note: y", "B: z"]
    assert common.grouped_warnings(result, shown=None) == ["A, B, C, D: x", "Note: y", "B: z"]  # the CLI's
