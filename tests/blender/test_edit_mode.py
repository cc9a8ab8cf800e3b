"""Edit Mode: the operators that read or write objects' mesh data (Apply Bend, Bake Wind Data, Add Wind, Remove
Wind, Bake Interaction Buffer) are greyed out with why, and their functions refuse with a clear error and change
nothing, for one object or several in Edit Mode, and for an object whose mesh another object is editing. The
others (Add and Remove Bend, Exclude, Wind Preset) only change modifiers and settings, which Blender allows in Edit
Mode, and still work."""

import importlib
from typing import Any

import bpy
import numpy as np
import pytest

from tests.blender import api

WHY = r"in Edit Mode: switch to Object Mode \(Tab\) first"


@pytest.fixture
def ops(envfx):
    class Ops:
        bend = importlib.import_module(envfx.__name__ + ".operators.bend")
        wind = importlib.import_module(envfx.__name__ + ".operators.wind")
    return Ops


def _select(objects):
    for obj in api.view_layer().objects:
        obj.select_set(obj in objects)
    api.view_layer().objects.active = objects[0]


@pytest.fixture
def plant(ops):
    """(trunk, leaf): both baked; the trunk bent and not in the wind, the leaf in the wind and not bent; both
    selected, so each operator under test would change something in Object Mode."""
    scene = api.scene()
    api.envfx(scene).wind.ao_samples = 0
    bpy.ops.mesh.primitive_cylinder_add(radius=0.2, depth=4, location=(0, 0, 2))
    trunk = api.active()
    trunk.name = "Trunk"
    bpy.ops.mesh.primitive_plane_add(size=0.5, location=(0.5, 0, 3.5))
    leaf = api.active()
    leaf.name = "Leaf"
    ops.wind.bake(scene, [trunk, leaf])
    ops.bend.add_bend(scene, [trunk])
    ops.wind.add_wind(scene, [leaf])
    _select([trunk, leaf])
    return trunk, leaf


def _state():
    """Everything the operators under test could change: modifiers, attributes, positions, groups."""
    state: dict[str, Any] = {"groups": sorted(g.name for g in bpy.data.node_groups)}
    for obj in bpy.data.objects:
        if obj.type != "MESH":
            continue
        mesh = api.mesh(obj)
        co = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", co)
        groups = [api.of(bpy.types.NodesModifier, m).node_group for m in obj.modifiers]
        state[obj.name] = ([(m.name, g and g.name) for m, g in zip(obj.modifiers, groups)],
                           sorted(a.name for a in mesh.attributes), co.round(6).tobytes(), mesh.name)
    return state


def _edit(objects):
    _select(objects)
    bpy.ops.object.mode_set(mode="EDIT")
    assert all(obj.mode == "EDIT" for obj in objects)


# operator: the plant's objects it would read or write (Apply Bend: the bent trunk; Remove Wind: the leaf in wind)
OPERATORS = {"bend_apply": "Trunk", "wind_bake_data": "Trunk, Leaf", "wind_add": "Trunk, Leaf",
             "wind_remove": "Leaf"}


@pytest.mark.parametrize("opname", OPERATORS)
def test_mesh_data_operators_are_greyed_out_in_multi_object_edit_mode(envfx, plant, opname):
    trunk, leaf = plant
    before = _state()
    _edit([trunk, leaf])
    assert not getattr(api.ops, opname).poll()  # the button is greyed out, the poll message says why
    with pytest.raises(RuntimeError, match=r"poll\(\) .*" + WHY) as exc:
        getattr(api.ops, opname)()
    names = OPERATORS[opname]
    assert f"{names} {'are' if ',' in names else 'is'} in Edit Mode" in str(exc.value)
    assert "Traceback" not in str(exc.value)
    bpy.ops.object.mode_set(mode="OBJECT")
    assert _state() == before
    assert getattr(api.ops, opname).poll()  # back in Object Mode it is available again


def _call(ops, name, scene, objects):
    return {"apply_bend": lambda: ops.bend.apply_bend(scene, objects),
            "bake": lambda: ops.wind.bake(scene, objects),
            "add_wind": lambda: ops.wind.add_wind(scene, objects),
            "remove_wind": lambda: ops.wind.remove_wind(objects)}[name]()


FUNCTIONS = ("apply_bend", "bake", "add_wind", "remove_wind")


FUNCTION_NAMES = {"apply_bend": "Trunk is ", "bake": "Trunk, Leaf are ", "add_wind": "Trunk, Leaf are ",
                  "remove_wind": "Leaf is "}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_script_functions_refuse_objects_in_edit_mode_and_change_nothing(ops, plant, name):
    trunk, leaf = plant
    error = ops.bend.BendInputError if name == "apply_bend" else ops.wind.WindInputError
    before = _state()
    _edit([trunk, leaf])
    with pytest.raises(error, match="^" + FUNCTION_NAMES[name] + WHY):
        _call(ops, name, api.scene(), [trunk, leaf])
    bpy.ops.object.mode_set(mode="OBJECT")
    assert _state() == before


@pytest.mark.parametrize("name", FUNCTIONS)
def test_an_object_whose_mesh_is_being_edited_is_refused_too(ops, plant, name):
    """Twin shares the trunk's mesh and stays in Object Mode while the trunk is edited: its mesh is not in sync
    either."""
    trunk, leaf = plant
    twin = trunk.copy()
    twin.name = "Twin"
    api.scene().collection.objects.link(twin)
    error = ops.bend.BendInputError if name == "apply_bend" else ops.wind.WindInputError
    if name == "remove_wind":
        ops.wind.add_wind(api.scene(), [twin])
    before = _state()
    _edit([trunk])
    assert twin.mode == "OBJECT"
    with pytest.raises(error, match="^Twin is " + WHY):
        _call(ops, name, api.scene(), [twin])
    bpy.ops.object.mode_set(mode="OBJECT")
    assert _state() == before


def _edit_only(edited, also_selected):
    """``edited`` in Edit Mode, ``also_selected`` selected too but left in Object Mode (as when objects are
    selected after entering Edit Mode, or are of another type than the edited one)."""
    _edit(edited)
    for obj in also_selected:
        obj.select_set(True)
    assert all(obj.mode == "OBJECT" for obj in also_selected)


def test_an_object_in_edit_mode_that_the_operation_skips_does_not_block_it(ops, plant):
    """Only the objects an operation reads or writes must be out of Edit Mode: a curve being edited does not stop
    Add Wind (which skips curves) on a mesh, an unbent mesh being edited does not stop Apply Bend on a bent one,
    and a mesh outside the wind being edited does not stop Remove Wind."""
    trunk, leaf = plant
    bpy.ops.curve.primitive_bezier_curve_add(location=(3, 0, 0))
    curve = api.active()
    bpy.ops.object.select_all(action="DESELECT")
    _edit_only([curve], [trunk])
    api.view_layer().objects.active = curve
    assert api.ops.wind_add.poll()
    assert api.ops.wind_add() == {"FINISHED"}
    assert [m.name for m in trunk.modifiers][-2:] == ["EnvFX Wind", "EnvFX Bend"]
    assert not curve.modifiers
    bpy.ops.object.mode_set(mode="OBJECT")

    ops.wind.remove_wind([trunk])
    bpy.ops.object.select_all(action="DESELECT")
    _edit_only([trunk], [leaf])  # the trunk is bent but not in the wind
    assert api.ops.wind_remove.poll()
    result = ops.wind.remove_wind([trunk, leaf])
    assert result.changed == ["Leaf"] and not ops.wind.wind_modifiers(leaf)
    bpy.ops.object.mode_set(mode="OBJECT")

    bpy.ops.object.select_all(action="DESELECT")
    _edit_only([leaf], [trunk])  # the leaf is not bent
    api.view_layer().objects.active = leaf
    assert api.ops.bend_apply.poll()
    assert api.ops.bend_apply() == {"FINISHED"}
    assert not ops.bend.bend_modifiers(trunk) and trunk.data.get(ops.bend.APPLIED_MARK)
    bpy.ops.object.mode_set(mode="OBJECT")


def test_add_and_remove_bend_exclude_and_preset_work_in_edit_mode(envfx, plant):
    """They change modifiers and object settings only, as Blender's own modifier buttons do in Edit Mode."""
    trunk, leaf = plant
    _edit([trunk, leaf])
    assert api.ops.bend_add() == {"FINISHED"}
    assert [m.name for m in leaf.modifiers] == ["EnvFX Wind", "EnvFX Bend"]
    assert api.ops.wind_preset(preset="GRASS") == {"FINISHED"}
    assert trunk.envfx.wind.category == leaf.envfx.wind.category == "GRASS"
    assert api.ops.bend_exclude(exclude=True) == {"FINISHED"}
    assert api.ops.bend_remove() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    assert trunk.envfx.bend_exclude and [m.name for m in trunk.modifiers] == []
    assert [m.name for m in leaf.modifiers] == ["EnvFX Wind"]


def test_snow_buffer_bake_is_greyed_out_while_a_snow_mesh_is_in_edit_mode(envfx, tmp_path):
    """The buffer bake reads the snow meshes' data: with one in Edit Mode the button is greyed out with why and
    the script function refuses before writing anything; editing the terrain instead does not stop it."""
    scene = api.scene()
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    bpy.ops.mesh.primitive_grid_add(size=8, x_subdivisions=8, y_subdivisions=8)
    ground = api.active()
    snow_ops = importlib.import_module(envfx.__name__ + ".operators.snow")
    (snow, *_lods) = snow_ops.generate_snow(scene, [ground], bpy.context.evaluated_depsgraph_get())
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(0, 0, 0.4))
    actor = api.active()
    for coll in actor.users_collection:
        coll.objects.unlink(actor)
    actors.objects.link(actor)
    s = api.envfx(scene).snow
    s.actors, s.output_dir, s.frame_start, s.frame_end, s.buffer_resolution = actors, str(tmp_path), 1, 2, 16
    _edit([snow])
    assert not api.ops.snow_bake_buffer.poll()
    with pytest.raises(snow_ops.SnowInputError, match=snow.name + " is " + WHY):
        list(snow_ops.bake_job(scene))
    assert list(tmp_path.iterdir()) == []
    bpy.ops.object.mode_set(mode="OBJECT")
    _edit([ground])
    assert api.ops.snow_bake_buffer.poll()
    bpy.ops.object.mode_set(mode="OBJECT")
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    assert (tmp_path / "snow_buffer.json").exists()
