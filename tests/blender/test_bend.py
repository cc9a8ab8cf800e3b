"""World bend in real Blender: the "EnvFX Bend" node group against core.bend, operators, bad input."""

import math
import os
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Vector

from tests.blender import api

MODES = ("RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER")
AXES = ("POS_X", "NEG_X", "POS_Y", "NEG_Y")
SEED = int(os.environ.get("ENVFX_TEST_SEED", "0"))


def random_mesh(name: str, rng: np.random.Generator, n: int = 60) -> bpy.types.Object:
    mesh = bpy.data.meshes.new(name)
    verts = rng.uniform(-2.0, 2.0, size=(n, 3))
    faces = [(i, i + 1, i + 2) for i in range(0, n - 2, 3)]
    mesh.from_pydata(verts.tolist(), [], faces)
    obj = bpy.data.objects.new(name, mesh)
    api.scene().collection.objects.link(obj)
    return obj


def evaluated_local(envfx, obj: bpy.types.Object) -> np.ndarray:
    dg = bpy.context.evaluated_depsgraph_get()
    dg.update()
    return envfx.bridge.evaluated_positions(obj, dg)


def expected_local(envfx, obj: bpy.types.Object) -> np.ndarray:
    params = envfx.shader_nodes.bend.params_from_scene(api.scene())
    base = envfx.bridge.get_positions(obj.data)
    return envfx.core.bend.forward_local(base, envfx.bridge.matrix_to_numpy(obj.matrix_world), params)


def select_only(objects: list[bpy.types.Object]) -> None:
    for obj in api.scene().objects:
        obj.select_set(False)
    for obj in objects:
        obj.select_set(True)
    if objects:
        api.view_layer().objects.active = objects[0]


def pivot_empty(name: str, location: tuple[float, float, float] = (0.0, 0.0, 0.0),
                scene: bpy.types.Scene | None = None) -> bpy.types.Object:
    """An empty (a player or camera stand-in) at ``location`` in ``scene`` (default: the current one)."""
    pivot = bpy.data.objects.new(name, None)
    (scene or api.scene()).collection.objects.link(pivot)
    pivot.location = location
    return pivot


def scene_setup(mode: str, axis: str, pivot: bpy.types.Object | None = None) -> Any:
    s = api.envfx().bend
    s.mode, s.axis = mode, axis
    s.pivot = pivot
    s.horizon_offset = 1.25
    s.strength = 0.04
    s.spread = 1.5
    s.side_strength = -0.03
    s.side_spread = 0.5
    return s


def last_group(obj: bpy.types.Object) -> bpy.types.NodeTree:
    """The node group of ``obj``'s last modifier (where the bend stays), asserted to be a Geometry Nodes modifier
    with a group."""
    return api.of(bpy.types.NodeTree, api.of(bpy.types.NodesModifier, obj.modifiers[-1]).node_group)


@pytest.mark.parametrize("mode", MODES)
def test_node_group_equals_core_under_random_transforms_and_parents(envfx, mode):
    rng = np.random.default_rng([MODES.index(mode), SEED])
    pivot = pivot_empty("Pivot", (2.0, -3.0, 1.0))
    objs = []
    parent = None
    for i in range(4):
        obj = random_mesh(f"M{i}", rng)
        obj.location = rng.uniform(-15, 15, 3).tolist()
        obj.rotation_euler = rng.uniform(-math.pi, math.pi, 3).tolist()
        obj.scale = (rng.uniform(0.3, 2.0, 3) * rng.choice([-1.0, 1.0], 3)).tolist()  # non-uniform and negative
        if parent is not None:
            obj.parent = parent
        parent = obj
        objs.append(obj)
    select_only(objs)
    api.view_layer().update()
    # the objects' reach from the origin (their transforms stay as they are): the tolerance scales with it
    extent = max(np.abs(envfx.bridge.matrix_to_numpy(o.matrix_world)[:3, 3]).max() for o in objs) + 2.0
    moved = 0.0
    for axis in AXES:
        scene_setup(mode, axis, pivot)
        if axis == AXES[0]:
            assert api.ops.bend_add() == {"FINISHED"}
        api.view_layer().update()
        for obj in objs:
            got = evaluated_local(envfx, obj)
            want = expected_local(envfx, obj)
            assert np.abs(got - want).max() <= 1e-4 * extent, (mode, axis, obj.name)
            moved = max(moved, np.abs(got - envfx.bridge.get_positions(obj.data)).max())
    assert moved > 0.1  # it really bends
    # strengths of the same sign, opposite signs, negative, and zero take different paths through the group
    s = api.envfx().bend
    for strength, side_strength in ((0.04, 0.03), (-0.02, -0.05), (0.0, 0.03), (0.0, 0.0), (0.04, -0.03)):
        s.strength, s.side_strength = strength, side_strength
        for obj in objs:
            got = evaluated_local(envfx, obj)
            assert np.abs(got - expected_local(envfx, obj)).max() <= 1e-4 * extent, (mode, strength, side_strength)
    # no flat zone (PLANET then skips the square root)
    s.spread = s.side_spread = 0.0
    for obj in objs:
        got = evaluated_local(envfx, obj)
        assert np.abs(got - expected_local(envfx, obj)).max() <= 1e-4 * extent, (mode, "no spread")


def test_planet_upright_objects_take_the_fast_radius_and_still_equal_core(envfx):
    """PLANET computes the radius of objects whose horizontal matrix columns are orthogonal (upright, any Z
    rotation and scale; or turned by right angles) in a cheaper form: it must agree with core.bend like the
    general form does for tilted objects."""
    rng = np.random.default_rng([7, SEED])
    pivot = pivot_empty("Pivot", (1.0, 2.0, -0.5))
    objs = []
    for i in range(6):
        obj = random_mesh(f"U{i}", rng)
        obj.location = rng.uniform(-12, 12, 3).tolist()
        obj.rotation_euler = (0.0, 0.0, rng.uniform(-math.pi, math.pi))
        obj.scale = (rng.uniform(0.3, 2.0, 3) * rng.choice([-1.0, 1.0], 3)).tolist()
        objs.append(obj)
    objs[1].parent = objs[0]  # upright under an upright parent stays upright
    objs[2].rotation_euler = (math.pi / 2, 0.0, 0.4)  # local Y points up: columns still orthogonal
    objs[3].rotation_euler = (0.3, 0.0, 0.0)  # tilted: the general form
    select_only(objs)
    scene_setup("PLANET", "POS_Y", pivot)
    assert api.ops.bend_add() == {"FINISHED"}
    api.view_layer().update()
    extent = max(np.abs(envfx.bridge.matrix_to_numpy(o.matrix_world)[:3, 3]).max() for o in objs) + 2.0
    for frame_pivot, spread in (((1.0, 2.0, -0.5), 1.5), ((-6.0, 4.0, 3.0), 1.5), ((3.0, -1.0, 0.0), 0.0)):
        pivot.location = frame_pivot
        api.envfx().bend.spread = spread
        api.view_layer().update()
        for obj in objs:
            got = evaluated_local(envfx, obj)
            assert np.abs(got - expected_local(envfx, obj)).max() <= 1e-4 * extent, obj.name
            assert np.abs(got - envfx.bridge.get_positions(obj.data)).max() > 0.05, obj.name  # it bends


def test_changing_scene_settings_changes_every_bent_object_and_keyframes_play(envfx):
    rng = np.random.default_rng(2)
    a, b = random_mesh("A", rng), random_mesh("B", rng)
    a.location, b.location = (0, 12, 0), (3, -14, 0)
    select_only([a, b])
    scene_setup("RUNNER", "POS_Y")
    api.ops.bend_add()
    s = api.envfx().bend
    before = [evaluated_local(envfx, o) for o in (a, b)]
    s.strength = 0.2
    for obj, old in zip((a, b), before):
        now = evaluated_local(envfx, obj)
        assert np.abs(now - old).max() > 0.1
        np.testing.assert_allclose(now, expected_local(envfx, obj), atol=1e-4)
    # keyframed strength follows playback (the group reads the scene through drivers)
    scene = api.scene()
    s.strength = 0.0
    s.keyframe_insert("strength", frame=1)
    s.strength = 0.1
    s.keyframe_insert("strength", frame=10)
    scene.frame_set(1)
    np.testing.assert_allclose(evaluated_local(envfx, a), envfx.bridge.get_positions(a.data), atol=1e-6)
    scene.frame_set(10)
    assert s.strength == pytest.approx(0.1)
    np.testing.assert_allclose(evaluated_local(envfx, a), expected_local(envfx, a), atol=1e-4)
    # the global switch
    s.enabled = False
    np.testing.assert_allclose(evaluated_local(envfx, a), envfx.bridge.get_positions(a.data), atol=1e-6)


def test_moving_the_pivot_between_frames_moves_the_bend(envfx):
    rng = np.random.default_rng(4)
    ground = random_mesh("Ground", rng, 300)
    ground.scale = (10, 10, 0.1)
    pivot = pivot_empty("Player")
    select_only([ground])
    scene_setup("PLANET", "POS_Y", pivot)
    api.ops.bend_add()
    scene = api.scene()
    pivot.location = (0, 0, 0)
    pivot.keyframe_insert("location", frame=1)
    pivot.location = (8, 5, 0)
    pivot.keyframe_insert("location", frame=20)
    results = []
    for frame in (1, 20):
        scene.frame_set(frame)
        got = evaluated_local(envfx, ground)
        np.testing.assert_allclose(got, expected_local(envfx, ground), atol=1e-4 * 20)
        results.append(got)
    assert np.abs(results[0] - results[1]).max() > 0.5


def test_adding_twice_does_not_stack_and_remove_undoes_it(envfx):
    cube = bpy.data.objects["Cube"]
    select_only([cube])
    api.ops.bend_add()
    api.ops.bend_add()
    api.ops.bend_add(collection="Collection")
    assert sum(m.type == "NODES" for m in cube.modifiers) == 1
    api.ops.bend_remove()
    assert len(cube.modifiers) == 0


@pytest.mark.parametrize("leave", ["remove", "apply"])
def test_the_last_object_out_of_the_bend_takes_the_group_with_it_and_add_bend_builds_it_again(envfx, leave,
                                                                                              save_and_reopen):
    """The scene's pointer alone does not keep the group (with its drivers) in the file; the scene's settings
    stay, and a group something else still uses stays."""
    scene, nodes = api.scene(), envfx.shader_nodes.bend
    ops = envfx.operators.bend
    api.envfx(scene).bend.strength = 0.07
    cube = bpy.data.objects["Cube"]
    rock = bpy.data.objects.new("Rock", bpy.data.meshes.new("Rock"))
    scene.collection.objects.link(rock)
    ops.add_bend(scene, [cube, rock])
    group = nodes.group_for(scene)
    out = ops.remove_bend if leave == "remove" else lambda objects: ops.apply_bend(scene, objects)
    out([cube])
    assert nodes.group_for(scene) == group  # the rock still uses it
    ops.remove_bend([rock])
    assert nodes.group_for(scene) is None and "envfx_group_bend" not in scene
    assert not [g for g in bpy.data.node_groups if nodes.is_bend_group(g)]
    save_and_reopen("out.blend")
    scene, cube = api.scene(), bpy.data.objects["Cube"]
    assert not [g.name for g in bpy.data.node_groups if "Bend" in g.name]
    assert api.envfx(scene).bend.strength == pytest.approx(0.07)
    ops.add_bend(scene, [cube])
    group = nodes.group_for(scene)
    assert group.name == "EnvFX Bend" and ops.bend_modifiers(cube)[0].node_group == group
    np.testing.assert_allclose(evaluated_local(envfx, cube), expected_local(envfx, cube), atol=1e-4)


def test_a_group_with_a_fake_user_stays(envfx):
    scene, nodes = api.scene(), envfx.shader_nodes.bend
    cube = bpy.data.objects["Cube"]
    envfx.operators.bend.add_bend(scene, [cube])
    nodes.group_for(scene).use_fake_user = True
    envfx.operators.bend.remove_bend([cube])
    assert nodes.group_for(scene) is not None


def test_bend_stays_the_last_modifier(envfx):
    cube = bpy.data.objects["Cube"]
    select_only([cube])
    api.ops.bend_add()
    group = api.new_tree("Other", bpy.types.GeometryNodeTree)
    envfx.shader_nodes.bend.add_modifier_before_bend(cube, "Other", group)
    assert last_group(cube).name == "EnvFX Bend"


def test_add_bend_again_moves_the_bend_back_after_a_modifier_added_by_hand(envfx):
    cube = bpy.data.objects["Cube"]
    select_only([cube])
    api.ops.bend_add()
    cube.modifiers.new("Subdivision", "SUBSURF")  # the user adds it after the bend
    group = api.new_tree("Other", bpy.types.GeometryNodeTree)
    envfx.shader_nodes.bend.add_modifier_before_bend(cube, "Wind", group)
    result = envfx.operators.bend.add_bend(api.scene(), [cube])
    assert [m.name for m in cube.modifiers] == ["Wind", "Subdivision", "EnvFX Bend"]
    assert result.changed == ["Cube"] and not result.unchanged
    assert any("Cube: moved the bend back to the last modifier, after Subdivision" in w for w in result.warnings)
    result = envfx.operators.bend.add_bend(api.scene(), [cube])  # already last: nothing to do
    assert result.unchanged == ["Cube"] and not any("moved" in w for w in result.warnings)
    assert [m.name for m in cube.modifiers] == ["Wind", "Subdivision", "EnvFX Bend"]


def test_collection_bend_and_per_object_opt_out(envfx):
    rng = np.random.default_rng(6)
    coll = bpy.data.collections.new("World")
    api.scene().collection.children.link(coll)
    objs = []
    for i in range(3):
        obj = random_mesh(f"W{i}", rng)
        api.scene().collection.objects.unlink(obj)
        coll.objects.link(obj)
        obj.location = (0, 10 + i, 0)
        objs.append(obj)
    api.envfx(objs[1]).bend_exclude = True
    scene_setup("RUNNER", "POS_Y")
    assert api.ops.bend_add(collection="World") == {"FINISHED"}
    assert envfx.operators.bend.bend_modifiers(objs[0])
    assert not envfx.operators.bend.bend_modifiers(objs[1])
    np.testing.assert_allclose(evaluated_local(envfx, objs[1]), envfx.bridge.get_positions(objs[1].data))
    # excluding an object that is already bent switches its bend off, including it again switches it on
    select_only([objs[0]])
    api.ops.bend_exclude(exclude=True)
    np.testing.assert_allclose(evaluated_local(envfx, objs[0]), envfx.bridge.get_positions(objs[0].data))
    api.ops.bend_exclude(exclude=False)
    np.testing.assert_allclose(evaluated_local(envfx, objs[0]), expected_local(envfx, objs[0]), atol=1e-4)


def test_apply_bakes_the_bend_into_mesh_shape_keys_and_shared_meshes(envfx):
    rng = np.random.default_rng(8)
    a = random_mesh("A", rng)
    a.location = (0, 9, 1)
    a.rotation_euler = (0.3, 0.2, 0.1)
    a.shape_key_add(name="Basis")
    key = a.shape_key_add(name="Up")
    co = envfx.bridge.get_shape_key_positions(key)
    envfx.bridge.set_shape_key_positions(key, co + np.array([0, 0, 0.5], dtype=np.float32))
    b = bpy.data.objects.new("B", a.data)  # shares A's mesh, placed elsewhere
    api.scene().collection.objects.link(b)
    b.location = (0, -20, 0)
    select_only([a])
    scene_setup("RUNNER", "POS_Y")
    api.ops.bend_add()
    evaluated = evaluated_local(envfx, a)
    b_before = envfx.bridge.get_positions(b.data).copy()
    assert api.ops.bend_apply() == {"FINISHED"}
    assert not envfx.operators.bend.bend_modifiers(a)
    # what the user sees is unchanged: every shape key was bent, and the mix of bent keys is the bent mix
    np.testing.assert_allclose(evaluated_local(envfx, a), evaluated, atol=1e-4)
    np.testing.assert_allclose(envfx.bridge.get_positions(b.data), b_before)  # B not bent with A's transform
    assert a.data != b.data
    params = envfx.shader_nodes.bend.params_from_scene(api.scene())
    matrix = envfx.bridge.matrix_to_numpy(a.matrix_world)
    basis = envfx.bridge.get_shape_key_positions(api.of(bpy.types.Key, api.mesh(a).shape_keys).key_blocks["Basis"])
    np.testing.assert_allclose(basis, envfx.core.bend.forward_local(b_before, matrix, params), atol=1e-4)
    np.testing.assert_allclose(envfx.bridge.get_positions(a.data), basis, atol=1e-6)


@pytest.mark.parametrize("move,value,warned", [((0.0, 0.0, 0.5), 0.5, False), ((0.0, 8.0, 0.0), 0.5, True),
                                               ((0.0, 8.0, 0.0), 1.0, False)])
def test_apply_names_a_shape_key_whose_current_mix_the_bake_cannot_keep(envfx, move, value, warned):
    """Each key is baked bent as its own shape (as Blender applies a deform modifier): a key at 0 or 1, or one that
    only moves vertices up and down, mixes to what the viewport showed; a key half-way that slides vertices along
    the bend does not (the drop is quadratic), and Apply says so, with how far off."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=8, y_subdivisions=8, size=20, location=(0, 10, 0))
    grid = api.active()
    grid.shape_key_add(name="Basis")
    key = grid.shape_key_add(name="Slide")
    co = envfx.bridge.get_shape_key_positions(key)
    envfx.bridge.set_shape_key_positions(key, co + np.array(move, dtype=np.float32))
    key.value = value
    select_only([grid])
    scene_setup("RUNNER", "POS_Y")
    api.ops.bend_add()
    shown = evaluated_local(envfx, grid)
    result = envfx.operators.bend.apply_bend(api.scene(), [grid])
    assert result.changed == [grid.name]
    off = np.abs(evaluated_local(envfx, grid) - shown).max()
    found = [w for w in result.warnings if "shape key 'Slide' is at 0.5" in w]
    if warned:
        assert off > 1e-3 and len(found) == 1 and "it matches at 0 and 1" in found[0]
        assert f"{float(found[0].split('up to ')[1].split(' m')[0]):.2g}" == f"{off:.2g}"
    else:
        assert off < 1e-4 and not found, result.warnings


def test_an_object_passed_twice_by_a_script_counts_once(envfx):
    cube = bpy.data.objects["Cube"]
    cube.location = (0.0, 12.0, 0.0)
    scene = api.scene()
    ops = envfx.operators.bend
    assert ops.add_bend(scene, [cube, cube]).changed == ["Cube"]
    assert len(ops.bend_modifiers(cube)) == 1
    result = ops.apply_bend(scene, [cube, cube])
    assert result.changed == ["Cube"] and not result.unchanged and not ops.bend_modifiers(cube)
    assert ops.remove_bend([cube, cube]).unchanged == ["Cube"]


def test_apply_bakes_what_is_shown_and_skips_objects_that_show_no_bend(envfx):
    """An excluded object, and one whose bend modifier is switched off by hand, show unbent: Apply names them and
    leaves them as they are (their bend kept, still off), and bakes the others."""
    rng = np.random.default_rng(12)
    bent, excluded, hidden = (random_mesh(name, rng) for name in ("Bent", "Excluded", "Hidden"))
    for i, obj in enumerate((bent, excluded, hidden)):
        obj.location = (0, 12 + 5 * i, 0)
    scene_setup("RUNNER", "POS_Y")
    select_only([bent, excluded, hidden])
    api.ops.bend_add()
    select_only([excluded])
    api.ops.bend_exclude(exclude=True)
    envfx.operators.bend.bend_modifiers(hidden)[0].show_viewport = False
    shown = {obj.name: evaluated_local(envfx, obj) for obj in (bent, excluded, hidden)}
    for obj in (excluded, hidden):
        np.testing.assert_allclose(shown[obj.name], envfx.bridge.get_positions(obj.data))  # flat
    assert np.abs(shown["Bent"] - envfx.bridge.get_positions(bent.data)).max() > 0.5
    result = envfx.operators.bend.apply_bend(api.scene(), [bent, excluded, hidden])
    assert result.changed == ["Bent"]
    assert "excluded from the bend" in result.skipped["Excluded"]
    assert "switched off" in result.skipped["Hidden"]
    for obj in (bent, excluded, hidden):
        np.testing.assert_allclose(envfx.bridge.get_positions(obj.data), shown[obj.name], atol=1e-4)
        np.testing.assert_allclose(evaluated_local(envfx, obj), shown[obj.name], atol=1e-4)
    assert envfx.operators.bend.bend_modifiers(excluded) and api.envfx(excluded).bend_exclude
    assert envfx.operators.bend.bend_modifiers(hidden)
    select_only([excluded])
    with pytest.raises(RuntimeError, match="Nothing to apply.*Excluded .excluded from the bend"):
        api.ops.bend_apply()


def test_removing_the_last_bend_takes_its_pivot_stand_in_too(envfx):
    """The bend's group follows its pivot through a hidden stand-in object; when the last object leaves the bend
    and the group goes, so does the stand-in: add and remove cycles leave no objects behind."""
    cube = bpy.data.objects["Cube"]
    scene_setup("RUNNER", "POS_Y", pivot_empty("Player", (0.0, 3.0, 0.0)))
    names = sorted(o.name for o in bpy.data.objects)
    for _ in range(3):
        select_only([cube])
        assert api.ops.bend_add() == {"FINISHED"}
        assert any(o.get("envfx_transform_of") is not None for o in bpy.data.objects)
        assert api.ops.bend_remove() == {"FINISHED"}
        assert sorted(o.name for o in bpy.data.objects) == names


def test_apply_names_an_object_scaled_flat_and_bakes_the_others(envfx):
    """A scale of zero on an axis (its own or a parent's) leaves no object-space down to bake along: Apply names
    such objects with what to do and keeps their bend; Add and Remove take them without fuss."""
    rng = np.random.default_rng(13)
    ok, flat, child = (random_mesh(name, rng) for name in ("Ok", "Flat", "Child"))
    ok.location, flat.location, child.location = (0, 12, 0), (0, 18, 0), (0, 24, 0)
    flat.scale = (1, 1, 0)
    parent = pivot_empty("Parent")
    parent.scale = (0, 1, 1)
    child.parent = parent
    scene_setup("RUNNER", "POS_Y")
    select_only([ok, flat, child])
    assert api.ops.bend_add() == {"FINISHED"}
    assert api.ops.bend_remove() == {"FINISHED"}
    assert api.ops.bend_add() == {"FINISHED"}
    shown = evaluated_local(envfx, ok)
    before = {obj.name: envfx.bridge.get_positions(obj.data).copy() for obj in (flat, child)}
    assert api.ops.bend_apply() == {"FINISHED"}  # no traceback
    np.testing.assert_allclose(envfx.bridge.get_positions(ok.data), shown, atol=1e-4)
    assert not envfx.operators.bend.bend_modifiers(ok)
    for obj in (flat, child):
        np.testing.assert_array_equal(envfx.bridge.get_positions(obj.data), before[obj.name])
        assert envfx.operators.bend.bend_modifiers(obj)
    select_only([flat, child])
    with pytest.raises(RuntimeError, match=r"Nothing to apply.*Flat \(its scale or a parent's is zero on an axis.*"
                                           r"apply the scale.*Child \(its scale or a parent's is zero on an axis"):
        api.ops.bend_apply()


def test_apply_changes_nothing_when_one_object_fails_mid_way(envfx, monkeypatch):
    """Every bent mesh is computed before any is written: a failure on the second object leaves the first as it
    was (mesh and bend)."""
    rng = np.random.default_rng(14)
    first, second = random_mesh("First", rng), random_mesh("Second", rng)
    first.location, second.location = (0, 12, 0), (0, 18, 0)
    scene_setup("RUNNER", "POS_Y")
    select_only([first, second])
    api.ops.bend_add()
    before = {obj.name: envfx.bridge.get_positions(obj.data).copy() for obj in (first, second)}
    core_bend = envfx.operators.bend.core_bend
    real = core_bend.forward_local
    calls = []

    def failing_on_second_object(local, matrix, params):
        calls.append(1)
        if len(calls) > 1:
            raise core_bend.BendError("fails on the second object")
        return real(local, matrix, params)

    monkeypatch.setattr(core_bend, "forward_local", failing_on_second_object)
    with pytest.raises(RuntimeError, match="fails on the second object"):
        api.ops.bend_apply()
    for obj in (first, second):
        np.testing.assert_array_equal(envfx.bridge.get_positions(obj.data), before[obj.name])
        assert envfx.operators.bend.bend_modifiers(obj)


@pytest.mark.parametrize("mode", ["PLANET", "RUNNER_2AXIS"])
def test_a_file_saved_by_blender_42_bends_the_same_in_50_and_follows_the_pivot(envfx, open_saved_by_blender_42, mode):
    open_saved_by_blender_42(f"bend-{mode}")
    scene = api.scene()
    ground, pivot = bpy.data.objects["Bent"], bpy.data.objects["Pivot"]
    bend = api.envfx(scene).bend
    assert bend.mode == mode and bend.pivot == pivot
    before = evaluated_local(envfx, ground)
    np.testing.assert_allclose(before, expected_local(envfx, ground), atol=1e-4 * 40)
    pivot.location = (-6.0, 4.0, 0.0)
    bend.strength = 0.03
    after = evaluated_local(envfx, ground)
    np.testing.assert_allclose(after, expected_local(envfx, ground), atol=1e-4 * 40)
    assert np.abs(after - before).max() > 1.0


def test_pick_hit_lies_on_the_evaluated_bent_ground(envfx):
    bpy.data.objects.remove(bpy.data.objects["Cube"])
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=200, y_subdivisions=200, size=60.0, location=(0, 0, 0.5))
    ground = api.active()
    pivot = pivot_empty("Player", (1.0, -2.0, 0.5))
    select_only([ground])
    for mode in MODES:
        s = scene_setup(mode, "POS_Y", pivot)
        s.side_strength = 0.02
        api.ops.bend_add()
        dg = bpy.context.evaluated_depsgraph_get()
        dg.update()
        params = envfx.shader_nodes.bend.params_from_scene(api.scene())
        rng = np.random.default_rng(1)
        origin = np.array([0.5, -10.0, 6.0])
        dirs = np.stack([rng.uniform(-0.6, 0.6, 40), np.ones(40), rng.uniform(-1.2, -0.35, 40)], axis=1)
        hit, visual, physical, t = envfx.core.bend.pick(np.tile(origin, (40, 1)), dirs, params, ground_z=0.5)
        inside = hit & np.all(np.abs(np.nan_to_num(visual[:, :2], nan=1e9)) < 29.0, axis=1)
        assert inside.sum() >= 30, mode
        for i in np.flatnonzero(inside):
            ok, loc, *_ = api.ray_cast(api.scene(), dg, Vector(origin.tolist()), Vector(dirs[i].tolist()).normalized())
            assert ok
            # within the faceting error of a 0.3 m grid
            assert (Vector(visual[i]) - loc).length < 0.05, (mode, i)
        np.testing.assert_allclose(physical[hit, 2], 0.5)


# --- bad input: clear message, scene unchanged --------------------------------------------------------------

def test_nothing_selected_is_refused_and_changes_nothing(envfx):
    select_only([])
    with pytest.raises(RuntimeError, match="Nothing selected"):
        api.ops.bend_add()
    assert "EnvFX Bend" not in bpy.data.node_groups
    with pytest.raises(RuntimeError, match="No collection named 'Nope'"):
        api.ops.bend_add(collection="Nope")
    assert "EnvFX Bend" not in bpy.data.node_groups


def test_objects_without_geometry_are_skipped_and_named(envfx):
    cube = bpy.data.objects["Cube"]
    text = bpy.data.objects.new("Label", bpy.data.curves.new("Label", "FONT"))
    empty = bpy.data.objects.new("Marker", None)
    for obj in (text, empty):
        api.scene().collection.objects.link(obj)
    light, camera = bpy.data.objects["Light"], bpy.data.objects["Camera"]
    select_only([cube, text, empty, light, camera])
    result = envfx.operators.bend.add_bend(api.scene(), list(bpy.context.selected_objects))
    assert sorted(result.changed) == ["Cube", "Label"]  # text takes a geometry modifier (test_text_bends_too)
    assert set(result.skipped) == {"Marker", "Light", "Camera"}
    assert "empty objects cannot take a geometry modifier" in result.skipped_text()
    for obj in (empty, light, camera):
        assert len(obj.modifiers) == 0
    # only non-geometry objects: an error, nothing created
    select_only([cube, text])
    api.ops.bend_remove(collection="")
    select_only([light, camera])
    assert "EnvFX Bend" not in bpy.data.node_groups  # the last object out of the bend took its group
    with pytest.raises(RuntimeError, match="Nothing to bend: Light .*cannot take a geometry modifier"):
        api.ops.bend_add()
    assert "EnvFX Bend" not in bpy.data.node_groups


def _library_with_triangle(envfx, path, bent_in_library, subdivision_after=False):
    """Write a library file ``path`` holding the object "LibTri" in the collection "Assets" (bent there,
    Cylinder along +X, when ``bent_in_library``), then start a new file."""
    mesh = bpy.data.meshes.new("LibMesh")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 9, 1)], [], [(0, 1, 2)])
    asset = bpy.data.objects.new("LibTri", mesh)
    assets = bpy.data.collections.new("Assets")
    api.scene().collection.children.link(assets)
    assets.objects.link(asset)
    if bent_in_library:
        scene_setup("CYLINDER", "POS_X")
        envfx.operators.bend.add_bend(api.scene(), [asset])
    if subdivision_after:
        asset.modifiers.new("Subdivision", "SUBSURF")
    bpy.data.libraries.write(path, {assets})
    bpy.ops.wm.read_homefile(app_template="")


def _link_triangle(path: str) -> bpy.types.Object:
    (linked,) = api.load_objects(path, ["LibTri"], link=True)
    api.scene().collection.objects.link(linked)
    return linked


def test_linked_library_objects_are_skipped(envfx, tmp_path):
    lib = str(tmp_path / "lib.blend")
    _library_with_triangle(envfx, lib, bent_in_library=False)
    linked = _link_triangle(lib)
    cube = bpy.data.objects["Cube"]
    result = envfx.operators.bend.add_bend(api.scene(), [cube, linked])
    assert result.changed == ["Cube"]
    assert "linked from library" in result.skipped["LibTri"] and "library override" in result.skipped["LibTri"]
    assert len(linked.modifiers) == 0
    bend_ops = envfx.operators.bend
    for result in (bend_ops.remove_bend([linked]), bend_ops.set_exclude([linked], True)):
        assert result.changed == [] and "linked from library" in result.skipped["LibTri"]
        assert "make it local first" in result.skipped["LibTri"]
    assert not api.envfx(linked).bend_exclude


def _override_bend_after_save_and_reload(envfx, tmp_path):
    """Save the file and open it again: (the scene's bend group, the override's evaluated local positions),
    checked to be on that group and equal to ``core.bend``."""
    path = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    override = next(o for o in bpy.data.objects if o.override_library is not None)
    group = envfx.shader_nodes.bend.group_for(api.scene())
    assert [m.node_group for m in envfx.operators.bend.bend_modifiers(override)] == [group]
    got = evaluated_local(envfx, override)
    np.testing.assert_allclose(got, expected_local(envfx, override), atol=1e-4 * 10)
    return group, got


@pytest.mark.parametrize("bent_in_library", [False, True])
def test_a_library_override_bends_and_keeps_its_bend_through_save_and_reload(envfx, tmp_path, bent_in_library):
    """What the skip message advises works: a library override of a linked object takes the bend (its mesh
    stays the library's), and the bend is still there after save and reload. An asset already bent in its
    library file takes this scene's bend (mode, values) instead of the library's."""
    lib = str(tmp_path / "lib.blend")
    _library_with_triangle(envfx, lib, bent_in_library)
    override = _link_triangle(lib).override_create(remap_local_usages=True)
    override.location = (0.5, 6.0, 0.0)
    scene_setup("RUNNER", "POS_Y")
    result = envfx.operators.bend.add_bend(api.scene(), [override])
    assert result.changed == [override.name] and api.mesh(override).library is not None
    assert ("it follows this scene's bend now" in " ".join(result.warnings)) == bent_in_library
    group, got = _override_bend_after_save_and_reload(envfx, tmp_path)
    assert group.library is None and group["envfx_stamp"].endswith(":RUNNER:POS_Y")
    assert got[3, 2] < 1.0 - 0.01  # the far vertex dropped


def test_an_override_of_a_bent_asset_joins_the_scene_bend_by_itself(envfx, tmp_path):
    """Like an appended one, a library override of an asset bent in its library file joins the bend of the scene
    it lands in at the next update, without Add Bend: the scene's mode, axis and values. The linked original
    beside it keeps its library's group (it cannot be changed)."""
    lib = str(tmp_path / "lib.blend")
    _library_with_triangle(envfx, lib, bent_in_library=True)
    scene_setup("PLANET", "POS_Y")
    envfx.operators.bend.add_bend(api.scene(), [bpy.data.objects["Cube"]])
    group = envfx.shader_nodes.bend.group_for(api.scene())
    linked = _link_triangle(lib)
    api.view_layer().update()
    library_group = last_group(linked)
    assert library_group.library is not None and library_group["envfx_stamp"].endswith(":CYLINDER:POS_X")
    override = linked.override_create(remap_local_usages=False)
    api.scene().collection.objects.link(override)
    override.location = (0.5, 6.0, 0.0)
    got = evaluated_local(envfx, override)
    assert [m.node_group for m in envfx.operators.bend.bend_modifiers(override)] == [group]
    assert last_group(linked) == library_group
    np.testing.assert_allclose(got, expected_local(envfx, override), atol=1e-4 * 10)
    assert got[3, 2] < 1.0 - 0.01  # the far vertex dropped
    _override_bend_after_save_and_reload(envfx, tmp_path)


def test_a_library_override_of_a_bent_collection_joins_the_scene_bend(envfx, tmp_path):
    """The usual way to bring assets in: link their collection, instance it and make a library override of the
    instance (Object > Library Override > Make). Every object of it (system overrides, not editable in the UI)
    joins the scene's bend at the next update, and stays on it after save and reload."""
    lib = str(tmp_path / "lib.blend")
    _library_with_triangle(envfx, lib, bent_in_library=True)
    scene_setup("PLANET", "POS_Y")
    (assets,) = api.load_collections(lib, ["Assets"], link=True)
    inst = bpy.data.objects.new("Assets Instance", None)
    inst.instance_type, inst.instance_collection = "COLLECTION", assets
    api.scene().collection.objects.link(inst)
    # the hint takes any ID (an Object here): the stubs type it as the same type as the collection
    assets.override_hierarchy_create(api.scene(), api.view_layer(),
                                     reference=inst)  # pyright: ignore[reportArgumentType]
    override = next(o for o in bpy.data.objects if o.override_library is not None)
    assert api.of(bpy.types.IDOverrideLibrary, override.override_library).is_system_override
    api.view_layer().update()
    group = envfx.shader_nodes.bend.group_for(api.scene())
    assert [m.node_group for m in envfx.operators.bend.bend_modifiers(override)] == [group]
    _override_bend_after_save_and_reload(envfx, tmp_path)


@pytest.mark.parametrize("bent_in_library", [False, True])
def test_an_override_excludes_its_bend_and_removes_only_a_bend_of_its_own(envfx, tmp_path, bent_in_library):
    """On a library override, Exclude from Bend is kept through save and reload. A bend added to the override
    can be removed; the bend of the library's asset cannot (Blender would bring it back at the next load), so
    Remove names it and says what to do instead, and changes nothing."""
    lib = str(tmp_path / "lib.blend")
    _library_with_triangle(envfx, lib, bent_in_library)
    override = _link_triangle(lib).override_create(remap_local_usages=True)
    override.location = (0.5, 6.0, 0.0)
    scene_setup("RUNNER", "POS_Y")
    envfx.operators.bend.add_bend(api.scene(), [override])
    result = envfx.operators.bend.remove_bend([override])
    if bent_in_library:
        assert result.changed == [] and len(envfx.operators.bend.bend_modifiers(override)) == 1
        assert "its bend came from library" in result.skipped["LibTri"]
        assert "a library override cannot remove it; exclude it from the bend instead" in result.skipped["LibTri"]
    else:
        assert result.changed == ["LibTri"] and not override.modifiers
        envfx.operators.bend.add_bend(api.scene(), [override])
    assert envfx.operators.bend.set_exclude([override], True).changed == ["LibTri"]
    path = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    override = next(o for o in bpy.data.objects if o.override_library is not None)
    mods = envfx.operators.bend.bend_modifiers(override)
    assert api.envfx(override).bend_exclude and len(mods) == 1 and not mods[0].show_viewport and not mods[0].show_render
    np.testing.assert_allclose(evaluated_local(envfx, override), envfx.bridge.get_positions(override.data), atol=1e-6)
    if not bent_in_library:
        assert envfx.operators.bend.remove_bend([override]).changed == ["LibTri"]
        bpy.ops.wm.save_as_mainfile(filepath=path)
        bpy.ops.wm.open_mainfile(filepath=path)
        assert not next(o for o in bpy.data.objects if o.override_library is not None).modifiers


def test_an_override_keeps_its_library_modifier_order_and_apply_skips_the_library_bend(envfx, tmp_path,
                                                                                        save_and_reopen):
    """An asset bent in its library with a Subdivision after the bend: Add Bend on its library override does not
    move the library's bend after the library's Subdivision (Blender would add them back in the library's order
    at the next load: subdivided twice) and says why; Apply Bend does not bake the library's bend into a mesh
    made local (the library would bring the modifier back onto the baked mesh: bent twice) and says what to do.
    Both leave the object as it was, through save and reload."""
    lib = str(tmp_path / "lib.blend")
    _library_with_triangle(envfx, lib, bent_in_library=True, subdivision_after=True)
    override = _link_triangle(lib).override_create(remap_local_usages=True)
    override.data = api.mesh(override).copy()  # its mesh made local (to edit it)
    bend_ops = envfx.operators.bend
    order = [m.name for m in override.modifiers]
    assert order == [bend_ops.MODIFIER_NAME, "Subdivision"]
    result = bend_ops.add_bend(api.scene(), [override])
    assert [m.name for m in override.modifiers] == order
    assert any("the bend stays before Subdivision" in w and "cannot reorder them" in w for w in result.warnings)
    positions = envfx.bridge.get_positions(override.data).copy()
    with pytest.raises(bend_ops.BendInputError, match="its bend came from library .*apply the bend in the library"):
        bend_ops.apply_bend(api.scene(), [override])
    np.testing.assert_array_equal(envfx.bridge.get_positions(override.data), positions)
    save_and_reopen("level.blend")
    override = next(o for o in bpy.data.objects if o.override_library is not None)
    assert [m.name for m in override.modifiers] == order


def test_collection_instances_are_named_and_bending_an_instanced_original_warns(envfx):
    """A collection instance cannot take a modifier: it is skipped with what to do. Bending an object that an
    instance also shows warns that the instance shows the bend of the original's place."""
    cube = bpy.data.objects["Cube"]
    props = bpy.data.collections.new("Props")
    api.scene().collection.children.link(props)
    rock = random_mesh("Rock", np.random.default_rng(5))
    api.scene().collection.objects.unlink(rock)
    props.objects.link(rock)
    inst = bpy.data.objects.new("Rocks Far", None)
    inst.instance_type, inst.instance_collection = "COLLECTION", props
    inst.location = (0.0, 30.0, 0.0)
    api.scene().collection.objects.link(inst)
    scene_setup("RUNNER", "POS_Y")
    result = envfx.operators.bend.add_bend(api.scene(), [cube, inst])
    assert result.changed == ["Cube"]
    assert "instances collection 'Props'" in result.skipped["Rocks Far"]
    assert "Make Instances Real" in result.skipped["Rocks Far"]
    assert not any("instance" in w for w in result.warnings)
    result = envfx.operators.bend.add_bend(api.scene(), [rock])
    assert result.changed == ["Rock"]
    warning = " ".join(result.warnings)
    assert "Rock is also shown by collection instance(s) Rocks Far" in warning


def test_deleted_pivot_falls_back_to_the_origin_with_a_warning(envfx):
    cube = bpy.data.objects["Cube"]
    pivot = pivot_empty("Player", (0, 30, 0))
    scene_setup("RUNNER", "POS_Y", pivot)
    cube.location = (0, 10, 0)
    select_only([cube])
    api.ops.bend_add()
    bpy.data.objects.remove(pivot)
    s = api.envfx().bend
    assert s.pivot is None
    np.testing.assert_allclose(evaluated_local(envfx, cube), expected_local(envfx, cube), atol=1e-4)
    result = envfx.operators.bend.add_bend(api.scene(), [cube])
    assert any("No pivot set" in w for w in result.warnings)


def test_pivot_outside_the_scene_is_named(envfx):
    pivot = bpy.data.objects.new("Ghost", None)  # never linked to the scene
    scene_setup("RUNNER", "POS_Y", pivot)
    result = envfx.operators.bend.add_bend(api.scene(), [bpy.data.objects["Cube"]])
    assert any("'Ghost' is not in this scene" in w for w in result.warnings)


def test_enormous_strength_is_clamped_and_warned(envfx):
    s = api.envfx().bend
    s.strength = 1e9
    assert s.strength == pytest.approx(envfx.core.bend.MAX_STRENGTH)
    s.spread = -5.0
    assert s.spread == 0.0
    cube = bpy.data.objects["Cube"]
    cube.location = (0, 40, 0)
    result = envfx.operators.bend.add_bend(api.scene(), [cube])
    assert any("fold out of sight" in w for w in result.warnings)


def test_mesh_without_vertices(envfx):
    empty_mesh = bpy.data.objects.new("Nothing", bpy.data.meshes.new("Nothing"))
    api.scene().collection.objects.link(empty_mesh)
    select_only([empty_mesh])
    assert api.ops.bend_add() == {"FINISHED"}
    assert evaluated_local(envfx, empty_mesh).shape == (0, 3)
    assert api.ops.bend_apply() == {"FINISHED"}


def test_apply_without_bent_objects_is_refused(envfx):
    select_only([bpy.data.objects["Cube"]])
    before = envfx.bridge.get_positions(bpy.data.objects["Cube"].data).copy()
    with pytest.raises(RuntimeError, match="Nothing to apply"):
        api.ops.bend_apply()
    np.testing.assert_array_equal(envfx.bridge.get_positions(bpy.data.objects["Cube"].data), before)


def test_node_group_is_rebuilt_when_outdated_and_survives_save_and_reload(envfx, save_and_reopen):
    cube = bpy.data.objects["Cube"]
    select_only([cube])
    scene_setup("RUNNER", "POS_Y")
    api.ops.bend_add()
    tree = bpy.data.node_groups["EnvFX Bend"]
    tree["envfx_stamp"] = "old"
    envfx.shader_nodes.bend.ensure_bend(api.scene())
    # rebuilt in place: the modifier still points at it
    assert api.of(bpy.types.NodesModifier, cube.modifiers[0]).node_group == tree
    # a file saved by an older EnvFX is brought up to date when it is opened
    tree["envfx_stamp"] = "old"
    tree.nodes.remove(tree.nodes["Set Position"])
    save_and_reopen("bent.blend")
    tree = bpy.data.node_groups["EnvFX Bend"]
    assert tree["envfx_stamp"] != "old" and "Set Position" in tree.nodes
    cube = bpy.data.objects["Cube"]
    api.envfx().bend.strength = 0.3
    np.testing.assert_allclose(evaluated_local(envfx, cube), expected_local(envfx, cube), atol=1e-4)


def test_curve_and_point_cloud_objects_bend_too(envfx):
    curve_data = bpy.data.curves.new("Fence", "CURVE")
    spline = curve_data.splines.new("POLY")
    spline.points.add(3)
    for i, p in enumerate(spline.points):
        p.co = (0.0, 10.0 * i, 0.0, 1.0)
    curve_data.bevel_depth = 0.1
    fence = bpy.data.objects.new("Fence", curve_data)
    api.scene().collection.objects.link(fence)
    scene_setup("RUNNER", "POS_Y")
    result = envfx.operators.bend.add_bend(api.scene(), [fence])
    assert result.changed == ["Fence"]
    dg = bpy.context.evaluated_depsgraph_get()
    mesh = fence.evaluated_get(dg).to_mesh()
    zs = envfx.bridge.get_positions(mesh)[:, 2]
    fence.evaluated_get(dg).to_mesh_clear()
    assert zs.min() < -10.0  # the far end of the fence (30 m ahead) dropped
    # a curve cannot be baked: named, nothing changed
    with pytest.raises(envfx.operators.bend.BendInputError, match="Fence .curve objects cannot be baked"):
        envfx.operators.bend.apply_bend(api.scene(), [fence])
    assert envfx.operators.bend.bend_modifiers(fence)


def test_export_for_game_engines_operator(envfx, tmp_path):
    """The panel's Export for Game Engines writes the scene's bend for Godot, Unity and Unreal; a missing or
    unwritable folder is refused with what to do, and nothing is written."""
    import json

    scene = api.scene()
    api.envfx(scene).bend.mode = "CYLINDER"
    api.envfx(scene).bend.strength = 0.07
    assert api.ops.bend_export_engines(directory=str(tmp_path / "eng")) == {"FINISHED"}
    meta = json.loads((tmp_path / "eng" / "envfx_bend.json").read_text())
    assert meta["blender"]["mode"] == "CYLINDER"
    assert meta["engines"]["UNREAL"]["strength"] == pytest.approx(0.0007)
    with pytest.raises(RuntimeError, match="No folder"):
        api.ops.bend_export_engines(directory="")
    (tmp_path / "file").write_text("x")
    with pytest.raises(RuntimeError, match="choose a writable folder"):
        api.ops.bend_export_engines(directory=str(tmp_path / "file" / "sub"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eng", "file"]
    # invoked as a button is (a script or a background job: no file browser to show), it writes into the folder set
    assert api.ops.bend_export_engines("INVOKE_DEFAULT", directory=str(tmp_path / "invoked")) == {"FINISHED"}
    assert (tmp_path / "invoked" / "envfx_bend.json").is_file()


def test_export_for_game_engines_blend_relative_and_blank_folders(envfx, tmp_path, monkeypatch, capfd):
    """A "//" folder means the .blend file's folder: in a file never saved it is refused with what to do (as the
    other output folders are), instead of writing into the folder Blender was started from; a blank folder is
    refused. Once the file is saved, "//" is its folder. On Blender 5.0 the Folder property takes "//" without a
    warning."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with pytest.raises(RuntimeError, match=r"'//engines' is relative to the \.blend file, which is not saved yet: "
                                           r"save the file first or choose an absolute folder"):
        api.ops.bend_export_engines(directory="//engines")
    with pytest.raises(RuntimeError, match="No folder: choose the folder"):
        api.ops.bend_export_engines(directory="  ")
    assert list(cwd.iterdir()) == []
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "level.blend"))
    capfd.readouterr()
    assert api.ops.bend_export_engines(directory="//engines") == {"FINISHED"}
    assert (tmp_path / "engines" / "envfx_bend.json").is_file()
    assert list(cwd.iterdir()) == []
    prop = api.ops.bend_export_engines.get_rna_type().properties["directory"]
    if bpy.app.version >= (5, 0, 0):
        assert prop.is_path_supports_blend_relative
        assert "does not support blend relative" not in capfd.readouterr().err


# Blender's FBX exporter writes 1 Blender unit as scale_length metres, except with the unit system None (1 m)
@pytest.mark.parametrize("system, scale_length, fbx_metres",
                         [("METRIC", 0.01, 0.01), ("IMPERIAL", 0.3048, 0.3048), ("NONE", 0.01, 1.0)])
def test_engine_includes_bend_the_exported_fbx_mesh_like_the_viewport(envfx, tmp_path, load_helper, system,
                                                                       scale_length, fbx_metres):
    """In a scene with a unit scale, the bend's Unreal and Unity includes take the mesh the FBX exporter writes
    (read back from the file, through its model transform and UnitScaleFactor, into the engine's axes and unit)
    to where the viewport draws it (its evaluated bent vertices, taken the same way); the pivot in
    envfx_bend.json is the pivot object's place in the same file."""
    import json

    scene = api.scene()
    scene.unit_settings.system = system
    scene.unit_settings.scale_length = scale_length
    rng = np.random.default_rng([SEED, int(scale_length * 1e4)])
    ground = random_mesh("Ground", rng, 600)
    api.mesh(ground).transform(np.diag([150.0, 150.0, 5.0, 1.0]).tolist())  # +-300 Blender units
    ground.location = (20.0, -40.0, 5.0)
    ground.rotation_euler = (0.2, -0.1, 1.1)
    ground.scale = (1.5, 0.8, 1.2)
    pivot = pivot_empty("Player", (12.0, -30.0, 2.0))
    s = scene_setup("RUNNER_2AXIS", "POS_X", pivot)
    s.strength, s.spread, s.side_strength, s.side_spread, s.horizon_offset = 0.001, 20.0, -0.0005, 10.0, 15.0
    assert envfx.operators.bend.add_bend(scene, [ground]).changed == ["Ground"]
    assert api.ops.bend_export_engines(directory=str(tmp_path / "eng")) == {"FINISHED"}
    meta = json.loads((tmp_path / "eng" / "envfx_bend.json").read_text())
    assert meta["blender"]["unit_scale"] == pytest.approx(fbx_metres)
    select_only([ground, pivot])
    checked = engines_bend_fbx_like_viewport(envfx, load_helper, tmp_path, [ground], pivot, meta, fbx_metres,
                                             bends=0.05)  # (a lot)
    assert checked == {"UNREAL": 1, "UNITY": 1}


# from right-handed Z up (front -Y) to the engine: Unreal mirrors Y, Unity is Y up mirrored and in metres
FBX_ENGINES = {"UNREAL": (np.diag([1.0, -1.0, 1.0]), 1.0),
               "UNITY": (np.array([[-1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]]), 0.01)}  # "Convert Units": cm -> m


def engines_bend_fbx_like_viewport(envfx, load_helper, tmp_path, objects: list[bpy.types.Object],
                                   pivot: bpy.types.Object, meta: dict, fbx_metres: float,
                                   atol: float = 2e-5, bends: float = 1e-3) -> dict:
    """Export ``objects`` and ``pivot`` (selected) with Blender's FBX exporter, Apply Modifiers off (the physical
    mesh: a game bends it in its vertex shader), read the file back and, for Unreal and Unity, take each object's
    vertices through its model transform and the file's unit into the engine's axes and unit: the bend's include
    (run in numpy, ``bend_shader_numpy``) takes them to where the viewport draws them (the evaluated bent
    vertices, taken the same way), to ``atol`` of the largest coordinate, and some vertex moves by ``bends`` of it;
    the file holds ``fbx_metres`` metres a Blender unit and envfx_bend.json's pivot is the pivot's place in it.
    Returns engine -> objects checked."""
    fbx = load_helper("fbx_reader", "tests", "blender", "fbx_reader.py")
    run_shader = load_helper("bend_shader_numpy", "tests", "core", "bend_shader_numpy.py").run_shader
    path = str(tmp_path / "level.fbx")
    assert bpy.ops.export_scene.fbx(filepath=path, use_selection=True, use_mesh_modifiers=False) == {"FINISHED"}
    root = fbx.read(path)
    cm_per_file_unit = fbx.global_settings(root)["UnitScaleFactor"]
    models, geometry = fbx.objects(root, "Model"), fbx.objects(root, "Geometry")
    to_z_up = fbx.to_z_up(root)

    def in_engine(points, model, axes, unit_per_cm):
        matrix = fbx.model_matrix(models[model])
        in_file = np.asarray(points, dtype=np.float64) @ matrix[:3, :3].T + matrix[:3, 3]
        return cm_per_file_unit * unit_per_cm * in_file @ to_z_up.T @ axes.T

    checked, most = {}, 0.0
    for engine, how in FBX_ENGINES.items():
        pivot_at = in_engine([[0.0, 0.0, 0.0]], pivot.name, *how)[0]
        np.testing.assert_allclose(meta["engines"][engine]["pivot"], pivot_at, rtol=1e-6, atol=1e-6)
        include = (tmp_path / "eng" / meta["engines"][engine]["file"]).read_text()
        for obj in objects:
            local = fbx.vertices(geometry[api.mesh(obj).name])
            np.testing.assert_allclose(local, envfx.bridge.get_positions(obj.data), atol=1e-4)  # unbent, in order
            physical = in_engine(local, obj.name, *how)
            viewport = in_engine(evaluated_local(envfx, obj), obj.name, *how)
            world = envfx.bridge.get_positions(obj.data) @ np.asarray(obj.matrix_world)[:3, :3].T
            per_metre = 100.0 * how[1]
            np.testing.assert_allclose(np.linalg.norm(physical[1:] - physical[0], axis=1),
                                       per_metre * fbx_metres * np.linalg.norm(world[1:] - world[0], axis=1),
                                       rtol=1e-5)
            bent = run_shader(include)(physical, pivot_at)
            size = np.abs(viewport).max()
            np.testing.assert_allclose(bent, viewport, rtol=0, atol=atol * size, err_msg=f"{engine} {obj.name}")
            most = max(most, float(np.abs(viewport - physical).max() / size))
            checked[engine] = checked.get(engine, 0) + 1
    assert most > bends  # the viewport bends them
    return checked


def _expected_in(envfx, scene, obj):
    params = envfx.shader_nodes.bend.params_from_scene(scene)
    return envfx.core.bend.forward_local(envfx.bridge.get_positions(obj.data),
                                         envfx.bridge.matrix_to_numpy(obj.matrix_world), params)


def _assert_bends_like_core(envfx, scene_depsgraph, pairs, atol):
    """Each (scene, object)'s evaluated positions equal core.bend with that scene's settings."""
    for scene, obj in pairs:
        got = envfx.bridge.evaluated_positions(obj, scene_depsgraph(scene))
        np.testing.assert_allclose(got, _expected_in(envfx, scene, obj), atol=atol, err_msg=scene.name)


def test_each_scene_of_a_file_bends_with_its_own_settings(envfx, scene_depsgraph, save_and_reopen):
    """Two scenes with different bends (a game's levels in one file): each bends its objects with its own mode
    and settings, changing one leaves the other alone, and both survive save and reload."""
    rng = np.random.default_rng(11)
    scene_a = api.scene()
    a = random_mesh("A", rng)
    a.location = (1.0, 9.0, 0.0)
    scene_setup("RUNNER", "POS_Y")
    select_only([a])
    assert api.ops.bend_add() == {"FINISHED"}
    scene_b = bpy.data.scenes.new("Level 2")
    b = bpy.data.objects.new("B", api.mesh(a).copy())
    scene_b.collection.objects.link(b)
    b.location = (-7.0, 3.0, 0.0)
    pivot_b = pivot_empty("Pivot B", (-2.0, 1.0, 0.0), scene=scene_b)
    sb = api.envfx(scene_b).bend
    sb.mode, sb.pivot, sb.strength, sb.spread = "PLANET", pivot_b, 0.05, 0.5
    envfx.operators.bend.add_bend(scene_b, [b])
    bend = envfx.shader_nodes.bend
    tree_a, tree_b = bend.group_for(scene_a), bend.group_for(scene_b)
    assert tree_a.name == "EnvFX Bend" and tree_b.name == "EnvFX Bend (Level 2)"
    assert last_group(a) == tree_a and last_group(b) == tree_b

    def check():
        for scene, obj in ((scene_a, a), (scene_b, b)):
            got = envfx.bridge.evaluated_positions(obj, scene_depsgraph(scene))
            np.testing.assert_allclose(got, _expected_in(envfx, scene, obj), atol=1e-4 * 20, err_msg=scene.name)
            assert np.abs(got - envfx.bridge.get_positions(obj.data)).max() > 0.05, scene.name

    check()
    before_a = envfx.bridge.evaluated_positions(a, scene_depsgraph(scene_a))
    sb.strength, sb.spread = 0.08, 0.0
    scene_a_mode_stamp = tree_a["envfx_stamp"]
    check()
    # B's settings are B's alone
    np.testing.assert_array_equal(envfx.bridge.evaluated_positions(a, scene_depsgraph(scene_a)), before_a)
    api.envfx(scene_a).bend.mode = "CYLINDER"
    assert tree_a["envfx_stamp"] != scene_a_mode_stamp and tree_b["envfx_stamp"].endswith(":PLANET:POS_Y")
    check()
    # baking an object of B from A's context uses B's settings
    b2 = bpy.data.objects.new("B2", api.mesh(a).copy())
    scene_b.collection.objects.link(b2)
    envfx.operators.bend.add_bend(scene_b, [b2])
    want = _expected_in(envfx, scene_b, b2)
    envfx.operators.bend.apply_bend(scene_a, [b2])
    np.testing.assert_allclose(envfx.bridge.get_positions(b2.data), want, atol=1e-5)

    save_and_reopen("levels.blend")
    scene_a, scene_b = bpy.data.scenes["Scene"], bpy.data.scenes["Level 2"]
    a, b = bpy.data.objects["A"], bpy.data.objects["B"]
    check()
    # an object linked into both scenes follows the scene that bent it last, and says so
    scene_b.collection.objects.link(a)
    result = envfx.operators.bend.add_bend(scene_b, [a])
    assert result.changed == ["A"] and "was bent by scene 'Scene'" in " ".join(result.warnings)
    assert [m.node_group for m in envfx.operators.bend.bend_modifiers(a)] == [bend.group_for(scene_b)]


def test_a_bend_group_saved_before_scenes_had_groups_is_adopted_by_its_drivers_scene(envfx, as_saved_by_old_envfx,
                                                                                     save_and_reopen):
    cube = bpy.data.objects["Cube"]
    bpy.data.scenes.new("Other")  # made before the bend: it is not the scene the group belongs to
    select_only([cube])
    scene_setup("RUNNER", "POS_Y")
    api.ops.bend_add()
    as_saved_by_old_envfx(bpy.data.node_groups["EnvFX Bend"], api.scene())
    save_and_reopen("old.blend")
    tree = bpy.data.node_groups["EnvFX Bend"]
    bend = envfx.shader_nodes.bend
    assert bend.group_for(bpy.data.scenes["Scene"]) == tree and bend.group_for(bpy.data.scenes["Other"]) is None
    # its drivers now read the scene being evaluated, not the scene by pointer
    drivers = api.of(bpy.types.AnimData, tree.animation_data).drivers
    assert {v.type for fc in drivers for v in api.of(bpy.types.Driver, fc.driver).variables} == {"CONTEXT_PROP"}
    api.envfx().bend.strength = 0.2
    cube = bpy.data.objects["Cube"]
    np.testing.assert_allclose(evaluated_local(envfx, cube), expected_local(envfx, cube), atol=1e-4)


def test_appending_a_bent_object_brings_no_scene_and_it_follows_the_scene_it_lands_in(envfx, tmp_path):
    """An asset appended from a level file keeps its bend but does not bring the level's scene along, and at
    the next update it joins the bend of the scene it lands in: that scene's mode, pivot and values."""
    rng = np.random.default_rng(12)
    cube = bpy.data.objects["Cube"]
    cube.location = (0.0, 9.0, 0.0)
    level_pivot = pivot_empty("Level Player")
    select_only([cube])
    scene_setup("RUNNER", "POS_Y", level_pivot)
    api.ops.bend_add()
    path = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    pivot = pivot_empty("Player", (3.0, 5.0, 0.0))
    s = api.envfx(scene).bend
    s.mode, s.pivot, s.strength, s.spread = "PLANET", pivot, 0.1, 0.5
    (cube,) = api.load_objects(path, ["Cube"], link=False)
    scene.collection.objects.link(cube)
    assert [sc.name for sc in bpy.data.scenes] == [scene.name]
    np.testing.assert_allclose(evaluated_local(envfx, cube), expected_local(envfx, cube), atol=1e-4 * 20)
    assert np.abs(evaluated_local(envfx, cube) - envfx.bridge.get_positions(cube.data)).max() > 0.05
    group = envfx.shader_nodes.bend.group_for(scene)
    assert last_group(cube) == group and group["envfx_stamp"].endswith(":PLANET:POS_Y")
    other = random_mesh("Rock", rng)
    select_only([other])
    api.ops.bend_add()
    assert last_group(other) == group
    assert [g for g in bpy.data.node_groups if envfx.shader_nodes.bend.is_bend_group(g)] == [group]


def _bent_cube_and_scene_copy(copy_type):
    """The default cube 9 m ahead, bent (Runner along +Y) in the current scene, then Scene > New > ``copy_type``:
    (cube, original scene, copy)."""
    cube = bpy.data.objects["Cube"]
    cube.location = (0.0, 9.0, 0.0)
    select_only([cube])
    scene_setup("RUNNER", "POS_Y")
    api.ops.bend_add()
    original = api.scene()
    assert bpy.ops.scene.new(type=copy_type) == {"FINISHED"}
    return cube, original, next(s for s in bpy.data.scenes if s != original)


def test_a_copied_scene_shares_the_bend_until_its_structure_changes(envfx, scene_depsgraph, save_and_reopen):
    """Scene > New > Full Copy: the copy bends with its own settings at once (also after save and reload, which
    leaves the shared group alone), and gets its own group (its objects move to it) when it changes mode; the
    original keeps its own."""
    cube, original, copy = _bent_cube_and_scene_copy("FULL_COPY")
    cube_copy = next(o for o in copy.objects if o.type == "MESH")
    bend = envfx.shader_nodes.bend
    assert bend.group_for(copy) == bend.group_for(original)
    api.envfx(copy).bend.strength = 0.08
    _assert_bends_like_core(envfx, scene_depsgraph, ((original, cube), (copy, cube_copy)), atol=2e-3)
    names = original.name, copy.name, cube_copy.name
    save_and_reopen("copied.blend")
    original, copy = bpy.data.scenes[names[0]], bpy.data.scenes[names[1]]
    cube, cube_copy = bpy.data.objects["Cube"], bpy.data.objects[names[2]]
    assert bend.group_for(copy) == bend.group_for(original)  # loading did not split it
    _assert_bends_like_core(envfx, scene_depsgraph, ((original, cube), (copy, cube_copy)), atol=2e-3)
    api.envfx(copy).bend.mode = "PLANET"
    assert bend.group_for(copy) != bend.group_for(original)
    assert last_group(cube_copy) == bend.group_for(copy)
    assert last_group(cube) == bend.group_for(original)
    assert bend.group_for(original)["envfx_stamp"].endswith(":RUNNER:POS_Y")
    _assert_bends_like_core(envfx, scene_depsgraph, ((original, cube), (copy, cube_copy)), atol=2e-3)


def test_a_full_copy_follows_its_own_player(envfx, scene_depsgraph):
    """Scene > New > Full Copy copies the player too and points the copy's settings at it (Player.001), but the
    copy's objects share the original's group, whose pivot is the original's player: the copy gets its own group
    at the next update and follows its own player; the original's player no longer moves the copy's horizon."""
    cube = bpy.data.objects["Cube"]
    cube.location = (0.0, 9.0, 0.0)
    select_only([cube])
    scene_setup("RUNNER", "POS_Y", pivot_empty("Player", (0.0, 1.0, 0.0)))
    api.ops.bend_add()
    original = api.scene()
    assert bpy.ops.scene.new(type="FULL_COPY") == {"FINISHED"}
    copy = next(s for s in bpy.data.scenes if s != original)
    cube_copy = next(o for o in copy.objects if o.type == "MESH")
    player_copy = api.envfx(copy).bend.pivot
    assert player_copy.name != "Player" and player_copy.name in copy.objects
    scene_depsgraph(copy)
    bend = envfx.shader_nodes.bend
    assert bend.group_for(copy) != bend.group_for(original)
    assert last_group(cube_copy) == bend.group_for(copy)
    player_copy.location.y = 7.0
    _assert_bends_like_core(envfx, scene_depsgraph, ((original, cube), (copy, cube_copy)), atol=1e-4)
    bpy.data.objects["Player"].location.y = -4.0
    _assert_bends_like_core(envfx, scene_depsgraph, ((original, cube), (copy, cube_copy)), atol=1e-4)


def test_deleting_the_scene_a_linked_copy_was_made_from_hands_its_objects_to_the_copy(envfx, scene_depsgraph):
    """A Linked Copy with its own bend (its own mode and pivot); the original deleted: the shared objects, now only
    in the copy, take the copy's bend at the next update (they kept the deleted scene's mode and pivot)."""
    cube, original, copy = _bent_cube_and_scene_copy("LINK_COPY")
    api.envfx(copy).bend.mode = "PLANET"
    api.envfx(copy).bend.pivot = pivot_empty("P2", (5.0, 5.0, 0.0), scene=copy)
    scene_depsgraph(copy)
    bpy.data.scenes.remove(original)
    scene_depsgraph(copy)
    assert last_group(cube) == envfx.shader_nodes.bend.group_for(copy)
    _assert_bends_like_core(envfx, scene_depsgraph, ((copy, cube),), atol=1e-4)


def test_a_linked_copy_keeps_the_objects_it_shares_with_its_original(envfx):
    """Scene > New > Linked Copy shares the objects: when the copy changes mode and gets its own group, the
    shared objects stay with the original's bend; an object only in the copy takes the copy's."""
    cube, original, copy = _bent_cube_and_scene_copy("LINK_COPY")
    rock = random_mesh("Rock", np.random.default_rng(3))  # linked into the copy (the current scene) only
    envfx.operators.bend.add_bend(copy, [rock])
    api.envfx(copy).bend.mode = "PLANET"
    bend = envfx.shader_nodes.bend
    assert bend.group_for(copy) != bend.group_for(original)
    assert last_group(cube) == bend.group_for(original)
    assert last_group(rock) == bend.group_for(copy)


def test_applying_in_a_linked_copy_bakes_what_that_scene_shows(envfx, scene_depsgraph):
    """An object shared by a scene and its Linked Copy keeps the original's bend structure (mode, axis, pivot)
    but shows the numbers of the scene it is seen in: baking it from the copy writes what the copy showed, not
    what the original shows."""
    cube, original, copy = _bent_cube_and_scene_copy("LINK_COPY")
    copy_bend = api.envfx(copy).bend
    copy_bend.strength, copy_bend.spread = 0.09, 0.25
    copy_bend.mode = "PLANET"  # the copy gets its own group; the shared cube stays on the original's
    shown_in_copy = envfx.bridge.evaluated_positions(cube, scene_depsgraph(copy))
    shown_in_original = envfx.bridge.evaluated_positions(cube, scene_depsgraph(original))
    assert np.abs(shown_in_copy - shown_in_original).max() > 0.05
    result = envfx.operators.bend.apply_bend(copy, [cube])
    assert result.changed == ["Cube"]
    np.testing.assert_allclose(envfx.bridge.get_positions(cube.data), shown_in_copy, atol=1e-4 * 10)


def test_geometry_nodes_instances_move_with_the_bend_at_their_origin(envfx):
    """A scatter (geometry-nodes instances) before the bend: each instance drops where its origin is, like
    core.bend moves that point (the instance itself is not deformed; the README says how to curve it)."""
    scene = api.scene()
    bpy.ops.mesh.primitive_plane_add(size=20, location=(1.0, 2.0, 0.0))
    plane = api.active()
    plane.rotation_euler.z = 0.4
    tree = api.new_tree("Scatter", bpy.types.GeometryNodeTree)
    interface = api.of(bpy.types.NodeTreeInterface, tree.interface)
    interface.new_socket(name="Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    interface.new_socket(name="Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    group_in, group_out = tree.nodes.new("NodeGroupInput"), tree.nodes.new("NodeGroupOutput")
    points = tree.nodes.new("GeometryNodeMeshToPoints")
    on_points = tree.nodes.new("GeometryNodeInstanceOnPoints")
    tree.links.new(group_in.outputs[0], points.inputs[0])
    tree.links.new(points.outputs[0], on_points.inputs[0])
    tree.links.new(tree.nodes.new("GeometryNodeMeshCube").outputs[0], on_points.inputs["Instance"])
    tree.links.new(on_points.outputs[0], group_out.inputs[0])
    api.of(bpy.types.NodesModifier, plane.modifiers.new("Scatter", "NODES")).node_group = tree
    pivot = pivot_empty("Player", (0.5, -1.0, 0.0))
    scene_setup("PLANET", "POS_Y", pivot)
    envfx.operators.bend.add_bend(scene, [plane])
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    got = np.array(sorted(i.matrix_world.translation.to_tuple() for i in depsgraph.object_instances
                          if i.is_instance and i.parent is not None and i.parent.name == plane.name))
    corners = envfx.bridge.get_positions(plane.data)
    m = envfx.bridge.matrix_to_numpy(plane.matrix_world)
    world = corners @ m[:3, :3].T + m[:3, 3]
    want = envfx.core.bend.forward(world, envfx.shader_nodes.bend.params_from_scene(scene))
    want = np.array(sorted(map(tuple, want)))
    assert len(got) == 4
    np.testing.assert_allclose(got, want, atol=1e-3)
    assert got[:, 2].min() < -1.0


@pytest.mark.parametrize("strength", [1e-4, 5e-5, 1e-6])
def test_a_tiny_strength_bends_a_centimetre_level(envfx, strength):
    """A level in centimetres (unit scale 0.01) takes the default look as a strength of 1e-4 per unit: the bend
    equals core.bend. Before, Blender 5.0's new drivers (keyframes (0, 0) and (1, 1)) read any value in
    (0, 1e-4] as 0 and the level showed no bend at all (4.2's identity Generator was right)."""
    scene = api.scene()
    scene.unit_settings.scale_length = 0.01
    ground = random_mesh("Ground", np.random.default_rng(7), 300)
    ground.scale = (2500.0, 2500.0, 1.0)  # +-50 m in centimetres
    s = scene_setup("RUNNER", "POS_Y", pivot_empty("Player"))
    s.strength, s.spread, s.horizon_offset = strength, 200.0, 0.0
    assert envfx.operators.bend.add_bend(scene, [ground]).changed == ["Ground"]
    got, want = evaluated_local(envfx, ground), expected_local(envfx, ground)
    drop = np.abs(want - envfx.bridge.get_positions(ground.data)).max()
    assert drop > 10.0  # tens of centimetres at least
    np.testing.assert_allclose(got, want, atol=1e-4 * drop)


@pytest.mark.parametrize("mode", MODES)
def test_the_groups_drivers_need_no_python_and_follow_keyframed_settings(envfx, mode):
    """The settings reach the group through drivers only: a bare setting by a plain driver, and what depends on
    the settings alone (the two-axes bend's folded strengths and signs, a planet without a flat spread, the on/off
    limit) by a simple expression, which Blender evaluates without Python (so it works with auto-run scripts
    disabled). Keyframed settings are followed frame by frame (signs that flip, zero strengths and spreads,
    switched off) and the group equals core.bend."""
    scene = api.scene()
    ground = random_mesh("Ground", np.random.default_rng(11), 90)
    ground.scale = (8.0, 8.0, 1.0)
    ground.rotation_euler = (0.0, 0.0, 0.4)
    s = scene_setup(mode, "NEG_X", pivot_empty("Player", (1.0, 2.0, 0.0)))
    keys = [  # strength, side strength, spread, side spread, horizon offset, enabled
        (0.04, 0.03, 1.5, 1.0, 1.25, True),
        (-0.02, 0.05, 0.0, 0.5, -2.0, True),
        (0.0, -0.04, 2.0, 0.0, 0.0, True),
        (0.03, -0.01, 0.5, 1.0, 0.5, True),
        (0.03, 0.01, 0.5, 1.0, 0.5, False),
    ]
    names = ("strength", "side_strength", "spread", "side_spread", "horizon_offset", "enabled")
    for frame, values in enumerate(keys, start=1):
        for name, value in zip(names, values):
            setattr(s, name, value)
            scene.keyframe_insert(f"envfx.bend.{name}", frame=frame)
    scene.frame_set(1)
    assert envfx.operators.bend.add_bend(scene, [ground]).changed == ["Ground"]
    tree = envfx.shader_nodes.bend.group_for(scene)
    drivers = list(api.of(bpy.types.AnimData, tree.animation_data).drivers)
    assert drivers
    for fcurve in drivers:
        driver = api.of(bpy.types.Driver, fcurve.driver)
        assert driver.is_valid, fcurve.data_path
        assert driver.type == "AVERAGE" or (driver.type == "SCRIPTED" and driver.is_simple_expression), (
            fcurve.data_path, driver.expression)
    base = envfx.bridge.get_positions(api.of(bpy.types.Mesh, ground.data))
    for frame, values in enumerate(keys, start=1):
        scene.frame_set(frame)
        params = envfx.shader_nodes.bend.params_from_scene(scene)
        assert (params.strength, params.enabled) == (pytest.approx(values[0]), values[5])
        want = envfx.core.bend.live_local(base, envfx.bridge.matrix_to_numpy(ground.matrix_world), params)
        got = evaluated_local(envfx, ground)
        np.testing.assert_allclose(got, want, atol=1e-4 * max(1.0, np.abs(want).max()), err_msg=f"frame {frame}")
        if frame in (1, len(keys)):  # bent at the first frame, switched off at the last
            assert (np.abs(got - base).max() > 0.01) == values[5], frame


def test_drivers_saved_with_blender_50_default_keyframes_pass_values_through_after_opening(envfx, save_and_reopen):
    """Files saved before the drivers were straightened (Blender 5.0 gave each new driver the keyframes (0, 0) and
    (1, 1)) are straightened when opened: the bend's strength of 5e-5 is no longer read as 0."""
    scene = api.scene()
    ground = random_mesh("Ground", np.random.default_rng(8), 120)
    ground.scale = (2500.0, 2500.0, 1.0)
    s = scene_setup("RUNNER", "POS_Y", pivot_empty("Player"))
    s.strength, s.spread = 5e-5, 200.0
    envfx.operators.bend.add_bend(scene, [ground])
    tree = bpy.data.node_groups["EnvFX Bend"]
    drivers = api.of(bpy.types.AnimData, tree.animation_data).drivers
    for fcurve in drivers:  # as Blender 5.0's driver_add made them (4.2: a Generator)
        while fcurve.modifiers:
            fcurve.modifiers.remove(fcurve.modifiers[0])
        fcurve.keyframe_points.insert(0.0, 0.0)
        fcurve.keyframe_points.insert(1.0, 1.0)
    save_and_reopen("old_drivers.blend")
    tree = bpy.data.node_groups["EnvFX Bend"]
    drivers = api.of(bpy.types.AnimData, tree.animation_data).drivers
    assert all(len(fc.keyframe_points) == 0 for fc in drivers)
    ground = bpy.data.objects["Ground"]
    np.testing.assert_allclose(evaluated_local(envfx, ground), expected_local(envfx, ground), atol=1e-2)
    assert np.abs(expected_local(envfx, ground) - envfx.bridge.get_positions(ground.data)).max() > 10.0


@pytest.mark.parametrize("how", ["object disabled", "collection disabled", "collection excluded"])
def test_apply_skips_and_names_objects_blender_does_not_evaluate(envfx, how):
    """An object disabled in viewports (its own or its collection's monitor icon) or in an excluded collection
    keeps the matrix_world of its last evaluation: moved since, it would be baked at the old place (no drop
    instead of 8 m) and its bend dropped. It is skipped and named, keeps its bend, and the others are baked."""
    scene = api.scene()
    world = bpy.data.collections.new("World")
    props = bpy.data.collections.new("Props")
    scene.collection.children.link(world)
    world.children.link(props)
    rng = np.random.default_rng(1)
    shown, hidden = random_mesh("Shown", rng, 30), random_mesh("Hidden", rng, 30)
    for obj, coll in ((shown, world), (hidden, props)):
        scene.collection.objects.unlink(obj)
        coll.objects.link(obj)
    s = scene_setup("RUNNER", "POS_Y", pivot_empty("Player"))
    s.strength, s.spread = 0.02, 1.0
    envfx.operators.bend.add_bend(scene, [shown, hidden])
    api.view_layer().update()
    if how == "object disabled":
        hidden.hide_viewport = True
    elif how == "collection disabled":
        props.hide_viewport = True
    else:
        api.view_layer().layer_collection.children["World"].children["Props"].exclude = True
    api.view_layer().update()
    for obj in (shown, hidden):
        obj.location.y = 20.0
    api.view_layer().update()
    before = envfx.bridge.get_positions(hidden.data).copy()
    result = envfx.operators.bend.apply_bend(scene, [shown, hidden])
    assert "Shown" in result.changed and "Hidden" in result.skipped
    assert {"object disabled": "is disabled in viewports", "collection disabled": "collection 'Props' is disabled",
            "collection excluded": "its collection is excluded"}[how] in result.skipped["Hidden"]
    assert "enable it in the viewport and apply the bend again" in result.skipped["Hidden"]
    assert envfx.operators.bend.bend_modifiers(hidden)
    np.testing.assert_array_equal(envfx.bridge.get_positions(hidden.data), before)
    assert not envfx.operators.bend.bend_modifiers(shown)


def test_text_bends_too(envfx):
    """A text object (a sign on the road) takes the bend like a curve: its evaluated mesh is where core.bend puts
    the unbent one. (The bend issue listed text among the objects that cannot take a geometry modifier; Blender 4.2
    and 5.0 take one on text.) It cannot be baked: named, as a curve is."""
    text = bpy.data.objects.new("Sign", bpy.data.curves.new("Sign", "FONT"))
    sign = api.of(bpy.types.TextCurve, text.data)
    sign.body = "ROAD CLOSED"
    sign.extrude = 0.05
    text.location = (0.0, 30.0, 0.0)
    text.scale = (3.0, 3.0, 3.0)
    api.scene().collection.objects.link(text)
    scene_setup("RUNNER", "POS_Y")
    assert envfx.operators.bend.add_bend(api.scene(), [text]).changed == ["Sign"]
    mod = envfx.operators.bend.bend_modifiers(text)[0]
    mod.show_viewport = False
    flat = evaluated_local(envfx, text)
    mod.show_viewport = True
    params = envfx.shader_nodes.bend.params_from_scene(api.scene())
    want = envfx.core.bend.forward_local(flat, envfx.bridge.matrix_to_numpy(text.matrix_world), params)
    got = evaluated_local(envfx, text)
    assert np.abs(want - flat).max() > 1.0  # 30 m ahead: it drops
    np.testing.assert_allclose(got, want, atol=1e-4 * np.abs(want).max())
    with pytest.raises(envfx.operators.bend.BendInputError, match="Sign .font objects cannot be baked"):
        envfx.operators.bend.apply_bend(api.scene(), [text])


def test_particle_hair_is_named_as_not_following_the_bend(envfx):
    """Hair and particle instances are drawn from the particle data, which the bend's modifier does not move: Add
    Bend names the particle systems and says what to do, and bends the mesh."""
    meadow = random_mesh("Meadow", np.random.default_rng(3), 90)
    meadow.modifiers.new("Grass", "PARTICLE_SYSTEM")
    meadow.particle_systems[0].settings.type = "HAIR"
    scene_setup("RUNNER", "POS_Y")
    result = envfx.operators.bend.add_bend(api.scene(), [meadow])
    assert result.changed == ["Meadow"]
    (warning,) = [w for w in result.warnings if "particle system" in w]
    assert meadow.particle_systems[0].name in warning and "Convert > Curves" in warning


# --- bent normals and culling for game engines ------------------------------------------------------------------

def demo_like_scene(envfx, mode: str) -> list[bpy.types.Object]:
    """The demo's bent world, finer: a ground 30 x 120 m and a road 3 x 120 m (grids scaled, like the demo's, with
    quads 0.2 m across: at a flat zone's edge a face's normal is its chord's, about a * h / 4 off the curve's), a
    tilted rock, a player pivot, bent live."""
    def grid(name: str, x_sub: int, y_sub: int, scale: tuple[float, float, float],
             location: tuple[float, float, float]) -> bpy.types.Object:
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=x_sub, y_subdivisions=y_sub, size=1.0, location=location)
        obj = api.active()
        obj.name, obj.scale = name, scale
        return obj

    ground = grid("Ground", 150, 600, (30.0, 120.0, 1.0), (0.0, 40.0, 0.0))
    road = grid("Road", 15, 600, (3.0, 120.0, 1.0), (0.0, 40.0, 0.02))
    road.rotation_euler = (0.0, 0.0, 0.02)  # not quite along the axis
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=1.5, location=(5.0, 30.0, 1.0))
    rock = api.active()
    rock.name, rock.scale, rock.rotation_euler = "Rock", (1.0, 2.0, 0.7), (0.3, 0.2, 0.5)
    pivot = pivot_empty("Player", (0.0, 0.0, 0.6))
    s = api.envfx().bend
    s.mode, s.axis, s.pivot = mode, "POS_Y", pivot
    s.horizon_offset, s.strength, s.spread, s.side_strength, s.side_spread = 4.0, 0.012, 3.0, 0.01, 4.0
    objects = [ground, road, rock]
    assert envfx.operators.bend.add_bend(api.scene(), objects).changed == ["Ground", "Road", "Rock"]
    return objects


def world_face_normals(mesh: bpy.types.Mesh, matrix: np.ndarray) -> np.ndarray:
    """(N, 3) unit face normals of ``mesh`` in world space (``matrix`` its object's 4x4 world matrix)."""
    n = np.empty(len(mesh.polygons) * 3, dtype=np.float32)
    mesh.polygons.foreach_get("normal", n)
    world = n.reshape(-1, 3).astype(np.float64) @ np.linalg.inv(matrix[:3, :3])  # inverse transpose, row vectors
    return world / np.linalg.norm(world, axis=1, keepdims=True)


@pytest.mark.parametrize("mode", MODES)
def test_bent_face_normals_are_the_engine_normals_in_a_demo_like_scene(envfx, load_helper, mode):
    """The issue's acceptance: Blender's evaluated bent faces (flat-shaded) have the normals the engines' include
    gives, within 1e-3 rad: core.bend.forward_normals of the flat face normals at the flat face centres (which the
    includes equal on a GPU driver, tests/core/test_bend_engines_shaders.py), and Godot's include read as numpy."""
    objects = demo_like_scene(envfx, mode)
    scene = api.scene()
    params = envfx.shader_nodes.bend.params_from_scene(scene)
    functions = load_helper("bend_shader_numpy", "tests", "core", "bend_shader_numpy.py").shader_functions(
        envfx.core.bend_engines.shader_source(params, "GODOT"))
    godot = np.array(envfx.core.bend_engines.ENGINES["GODOT"][0], dtype=np.float64)
    dg = bpy.context.evaluated_depsgraph_get()
    dg.update()
    for obj in objects:
        m = envfx.bridge.matrix_to_numpy(obj.matrix_world)
        data = api.mesh(obj)
        centres = np.empty(len(data.polygons) * 3, dtype=np.float32)
        data.polygons.foreach_get("center", centres)
        centres = centres.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
        flat = world_face_normals(data, m)
        ev = obj.evaluated_get(dg)
        mesh = ev.to_mesh()
        try:
            assert len(mesh.polygons) == len(data.polygons)
            bent = world_face_normals(mesh, m)
        finally:
            ev.to_mesh_clear()
        want = envfx.core.bend.forward_normals(centres, flat, params)
        worst = np.arccos(np.clip(np.sum(bent * want, axis=1), -1.0, 1.0)).max()
        # the quads of the road and ground are level and along the axes: a face's normal is the curve's at its
        # centre but at a flat zone's edge. The rock's triangles are not: a bent triangle is the plane through
        # three points of a curved surface, off its centre's tangent plane by up to the drop's curvature (2 a)
        # times the triangle's size
        edges = np.array([[data.vertices[i].co for i in e.vertices] for e in data.edges]) @ m[:3, :3].T
        size = np.linalg.norm(edges[:, 1] - edges[:, 0], axis=1).max()
        tol = 1e-3 if obj.name != "Rock" else 2.0 * max(abs(params.strength), abs(params.side_strength)) * size
        assert worst < tol, f"{mode} {obj.name}: a bent face normal is {worst} rad from the engine's"
        engine = functions["envfx_bend_normal"](centres @ godot.T, flat @ godot.T, np.asarray(params.pivot) @ godot.T)
        np.testing.assert_allclose(engine, want @ godot.T, atol=1e-6)  # its constants: 8 digits
        if obj.name == "Ground":  # the lighting changes: far ahead (or aside) the ground tilts by degrees
            tilt = np.degrees(np.arccos(np.clip(np.sum(bent * flat, axis=1), -1, 1))).max()
            assert tilt > 10.0, tilt


def test_exported_culling_bounds_hold_the_bent_scene(envfx, tmp_path):
    """Export for Game Engines writes, per bent object of the scene (an excluded one and a non-bent one left out),
    its flat bounds (the physical mesh's, whatever the bend shows) and bent bounds for the scene's view distance;
    every evaluated bent vertex within that distance of the pivot lies inside, in Blender's and each engine's
    space, also with the pivot moved elsewhere."""
    import json

    objects = demo_like_scene(envfx, "RUNNER_2AXIS")
    scene = api.scene()
    api.envfx(scene).bend.view_distance = 60.0
    scene.unit_settings.scale_length = 0.01
    loose = random_mesh("Loose", np.random.default_rng(SEED))  # not bent: not listed
    loose.location = (0.0, 200.0, 0.0)
    select_only([objects[2]])
    assert api.ops.bend_exclude(exclude=True) == {"FINISHED"}  # the rock: not bent, not listed
    be = envfx.core.bend_engines
    for pivot_at in ((0.0, 0.0, 0.6), (5.0, 70.0, 0.0)):
        api.envfx(scene).bend.pivot.location = pivot_at
        out = tmp_path / f"eng{pivot_at[1]:g}"
        assert api.ops.bend_export_engines(directory=str(out)) == {"FINISHED"}
        meta = json.loads((out / be.JSON_NAME).read_text())
        params = envfx.shader_nodes.bend.params_from_scene(scene)
        assert meta["blender"]["culling"]["view_distance"] == 60.0
        for where, cull in [("BLENDER", meta["blender"]["culling"])] + list(
                (engine, meta["engines"][engine]["culling"]) for engine in be.ENGINES):
            rows = {row["name"]: row for row in cull["objects"]}
            assert sorted(rows) == ["Ground", "Road"], where
            for obj in objects[:2]:
                m = envfx.bridge.matrix_to_numpy(obj.matrix_world)
                flat = envfx.bridge.get_positions(obj.data).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
                bent = evaluated_local(envfx, obj).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
                near = np.linalg.norm(flat[:, :2] - np.asarray(params.pivot)[:2], axis=1) <= 60.0
                assert near.sum() > 100 and (~near).sum() > 100  # the view distance matters here
                if where != "BLENDER":
                    flat, bent = be.to_engine(flat, where, 0.01), be.to_engine(bent, where, 0.01)
                row = rows[obj.name]
                np.testing.assert_allclose(row["flat_min"], flat.min(axis=0), rtol=1e-5, atol=1e-4)
                np.testing.assert_allclose(row["flat_max"], flat.max(axis=0), rtol=1e-5, atol=1e-4)
                lo, hi = np.array(row["bent_min"]), np.array(row["bent_max"])
                tol = 1e-5 * np.abs(np.concatenate([lo, hi])).max()
                inside = np.all((bent[near] >= lo - tol) & (bent[near] <= hi + tol), axis=1)
                assert inside.all(), f"{where} {obj.name}: {bent[near][~inside][:3]} outside {lo} {hi}"
                assert np.any(bent[near] < flat.min(axis=0) - tol) or np.any(bent[near] > flat.max(axis=0) + tol)


def test_exported_culling_of_a_scene_that_is_not_the_current_one(envfx, tmp_path):
    """The CLI's --scene exports a scene other than the window's: its bent objects are evaluated in its own view
    layer for their bounds."""
    import json

    other = bpy.data.scenes.new("Level 2")
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=40.0)
    ground = api.active()
    for coll in list(ground.users_collection):
        coll.objects.unlink(ground)
    other.collection.objects.link(ground)
    api.envfx(other).bend.strength = 0.05
    assert envfx.operators.bend.add_bend(other, [ground]).changed == [ground.name]
    envfx.operators.bend.export_engines(other, str(tmp_path), view_distance=30.0)
    cull = json.loads((tmp_path / "envfx_bend.json").read_text())["blender"]["culling"]
    assert cull["margin_down"] == pytest.approx(0.05 * (30.0 - 2.0) ** 2)
    (row,) = cull["objects"]
    assert row["name"] == ground.name
    np.testing.assert_allclose(row["flat_min"], [-20.0, -20.0, 0.0], atol=1e-5)
    np.testing.assert_allclose(row["bent_min"], [-20.0, -20.0, -cull["margin_down"]], atol=1e-5)


def _one_quad_road(envfx, subdivide):
    """The issue's road: one plane of 4 vertices scaled to 3 x 120 m, a runner bend of 0.012 ahead of a player."""
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.0, 40.0, 0.0))
    road = api.active()
    road.name, road.scale = "Road", (3.0, 120.0, 1.0)
    s = api.envfx().bend
    s.mode, s.axis, s.pivot = "RUNNER", "POS_Y", pivot_empty("Player", (0.0, 0.0, 0.6))
    s.horizon_offset, s.strength, s.spread = 4.0, 0.012, 3.0
    s.subdivide = subdivide
    api.view_layer().update()
    select_only([road])
    return road


def _centre_line_z(envfx, obj, ys):
    """World z of the evaluated (bent) surface of ``obj`` along its edge x = 1.5 at ``ys``, between vertices."""
    world = evaluated_local(envfx, obj) @ np.array(obj.matrix_world)[:3, :3].T + np.array(obj.matrix_world)[:3, 3]
    line = world[np.abs(world[:, 0] - 1.5) < 1e-4]
    order = np.argsort(line[:, 1])
    return np.interp(ys, line[order, 1], line[order, 2])


def test_a_coarse_road_is_named_and_subdivide_bends_it_within_one_percent_of_the_formula(envfx):
    """Issue #29 part 3: one scaled quad only tilts; Add Bend names it, and with Subdivide Coarse Meshes a Simple
    subdivision before the bend (the mesh untouched) makes it follow core.bend.forward at mid-road; Remove Bend
    takes the subdivision away too."""
    road = _one_quad_road(envfx, subdivide=False)
    result = envfx.operators.bend.add_bend(api.scene(), [road])
    assert result.changed == ["Road"]
    assert any("Too coarse for the bend: Road (43.2 m)" in w and "scene.envfx.bend.subdivide" in w
               for w in result.warnings), result.warnings
    params = envfx.shader_nodes.bend.params_from_scene(api.scene())
    mid = np.array([[1.5, 40.0, 0.0], [1.5, 41.9, 0.0]])
    formula = envfx.core.bend.forward(mid, params)[:, 2]
    assert abs(_centre_line_z(envfx, road, mid[:, 1])[0] - formula[0]) > 30.0  # the straight slope of the issue
    assert [r[0] for r in envfx.panels.bend.coarse_status(api.scene())[:1]] == [
        "Too coarse for the bend: Road (43 m off)"]

    api.envfx().bend.subdivide = True
    assert api.ops.bend_add() == {"FINISHED"}
    mods = [m.name for m in road.modifiers]
    assert mods == ["EnvFX Bend Subdivision", "EnvFX Bend"]
    sub = api.of(bpy.types.SubsurfModifier, road.modifiers["EnvFX Bend Subdivision"])
    assert (sub.subdivision_type, sub.levels, sub.render_levels) == ("SIMPLE", 5, 5)
    assert len(api.mesh(road).vertices) == 4  # the mesh itself is untouched
    z = _centre_line_z(envfx, road, mid[:, 1])
    np.testing.assert_allclose(z, formula, rtol=0.01)
    assert np.all(np.abs(z - formula) <= api.envfx().bend.tolerance)
    assert envfx.panels.bend.coarse_status(api.scene()) == []

    assert envfx.operators.bend.remove_bend([road]).changed == ["Road"]
    assert list(road.modifiers) == []


def test_a_fine_mesh_is_not_named_and_a_subdivision_of_its_own_counts(envfx):
    """The demo-like scene (quads 0.2 m across) is fine for its bend; a coarse cage with a Subdivision Surface of
    its own before the bend is judged by what the bend sees."""
    objects = demo_like_scene(envfx, "RUNNER_2AXIS")
    result = envfx.operators.bend.add_bend(api.scene(), objects)
    assert not any("coarse" in w for w in result.warnings), result.warnings
    assert envfx.panels.bend.coarse_status(api.scene()) == []
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.0, 40.0, 0.0))
    cage = api.active()
    cage.name, cage.scale = "Cage", (3.0, 3.0, 1.0)  # 3 m edges at 0.012: 2.7 cm off, within 5 cm
    api.view_layer().update()
    assert not any("coarse" in w for w in envfx.operators.bend.add_bend(api.scene(), [cage]).warnings)
    cage.scale = (3.0, 12.0, 1.0)  # 12 m: 0.43 m off; two levels of its own: 2.7 cm
    api.view_layer().update()
    assert envfx.operators.bend.coarse_meshes([cage], envfx.shader_nodes.bend.params_from_scene(api.scene()),
                                              0.05)[0][0] == "Cage"
    sub = api.of(bpy.types.SubsurfModifier, cage.modifiers.new("Subdivision", "SUBSURF"))
    sub.levels = 2
    api.envfx().bend.subdivide = True
    result = envfx.operators.bend.add_bend(api.scene(), [cage])
    assert not any("coarse" in w.lower() or "Subdivided" in w for w in result.warnings), result.warnings
    assert [m.name for m in cage.modifiers] == ["Subdivision", "EnvFX Bend"]
