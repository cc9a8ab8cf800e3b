"""Rigid sway in real Blender: Add Wind on props with Rigid Sway on gives them drivers (simple expressions, no
Python per frame) whose delta rotation equals the numpy twin at every frame, with the scene's settings and with a
wind object; the prop leans the way the wind blows whatever its parent; Remove Wind and switching back restore
the object; bad input is refused, saying why, with nothing changed; real imported vegetation sways."""

import importlib
import math

import bpy
import numpy as np
import pytest
from mathutils import Euler, Matrix, Quaternion, Vector

from tests.blender import api


@pytest.fixture
def rigid(envfx):
    class R:
        core = importlib.import_module(envfx.__name__ + ".core.wind.rigid")
        nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.wind_rigid")
        wind_nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.wind")
        ops = importlib.import_module(envfx.__name__ + ".operators.wind")
    return R


def _prop(name, location=(0.0, 0.0, 0.0), parent=None):
    mesh = bpy.data.meshes.get("Prop") or bpy.data.meshes.new("Prop")
    if not mesh.vertices:
        mesh.from_pydata([(-0.2, 0, 0), (0.2, 0, 0), (0, 0, 1.0), (0, 0.2, 0.5)], [], [(0, 1, 2), (0, 2, 3)])
    obj = bpy.data.objects.new(name, mesh)
    api.scene().collection.objects.link(obj)
    obj.location = location
    if parent is not None:
        obj.parent = parent
    api.envfx(obj).wind.rigid = True
    return obj


def _rot(obj):
    """The object's delta rotation as a tuple."""
    return tuple(obj.delta_rotation_euler[i] for i in range(3))


def _drivers(obj) -> list:
    anim = obj.animation_data
    assert anim is not None, f"{obj.name} has no drivers"
    return list(anim.drivers)


def _check_twin(rigid, objects, frames, tol=2e-6):
    scene = api.scene()
    for frame in frames:
        scene.frame_set(int(frame), subframe=frame - int(frame))
        sw = rigid.wind_nodes.params_from_scene(scene)
        for obj in objects:
            want = rigid.core.rigid_euler(frame, sw, rigid.wind_nodes.asset_params(obj), rigid.nodes.prop_params(obj))
            assert _rot(obj) == pytest.approx(want, abs=tol), (obj.name, frame)


def test_rigid_props_sway_as_the_twin_and_come_back_whole(rigid):
    scene = api.scene()
    w = api.envfx(scene).wind
    w.direction, w.strength, w.gust_strength, w.loop_frames = 0.6, 3.0, 0.8, 48
    scene.render.fps, scene.render.fps_base = 30, 1.001
    props = [_prop(f"Prop {i}", (i * 3.3 - 4, -i * 1.7, 0.2)) for i in range(4)]
    props[1].delta_rotation_euler = (0.05, -0.02, 0.3)  # the user's delta rotation is kept
    props[2].rotation_mode = "ZXY"
    for obj, category in zip(props, ("TREE", "PLANT", "GRASS", "SPECIAL")):
        api.envfx(obj).wind.category = category
    api.envfx(props[3]).wind.ramp = 2.0
    empty = bpy.data.objects.new("Lamp", None)  # any object type sways
    scene.collection.objects.link(empty)
    api.envfx(empty).wind.rigid = True
    before = {o.name: (_rot(o), o.matrix_world.copy()) for o in props + [empty]}
    result = rigid.ops.add_wind(scene, props + [empty])
    assert sorted(result.changed) == sorted(o.name for o in props + [empty]) and not result.skipped
    assert not any(o.modifiers for o in props)
    for obj in props + [empty]:
        curves = _drivers(obj)
        assert len(curves) == 3 and all(c.driver.is_simple_expression and c.driver.is_valid for c in curves)
    _check_twin(rigid, props + [empty], (1, 9, 23.5, 47, 200))
    # the prop turns about its origin, by the wind: frames differ, the origin stays
    scene.frame_set(5)
    a = props[0].matrix_world.copy()
    scene.frame_set(19)
    b = props[0].matrix_world.copy()
    assert (a.translation - b.translation).length < 1e-6
    assert np.abs(np.array(a) - np.array(b)).max() > 1e-3
    # a loop plays seamlessly
    scene.frame_set(7)
    at7 = _rot(props[1])
    scene.frame_set(55)
    assert _rot(props[1]) == pytest.approx(at7, abs=1e-5)
    # a setting of the prop reaches its drivers
    api.envfx(props[0]).wind.rigidity = 0.5
    _check_twin(rigid, props[:1], (11,))
    clock = rigid.nodes.clock_of(scene)
    assert clock is not None and clock.name.startswith(".")
    result = rigid.ops.remove_wind(props + [empty])
    assert sorted(result.changed) == sorted(before)
    scene.frame_set(3)
    for obj in props + [empty]:
        assert obj.animation_data is None or not _drivers(obj)
        assert _rot(obj) == pytest.approx(before[obj.name][0], abs=1e-7)
        assert rigid.core.PROP_WIND not in obj
    assert rigid.nodes.clock_of(scene) is None and not [t for t in bpy.data.node_groups if rigid.nodes.is_clock(t)]


def test_a_wind_object_steers_them_and_its_loss_falls_back_to_the_scene(rigid):
    scene = api.scene()
    api.envfx(scene).wind.direction = 1.0
    bpy.ops.object.effector_add(type="WIND", rotation=(1.2, 0.3, -0.9))
    field = api.active()
    api.field(field).strength = 5.0
    props = [_prop(f"P{i}", (i * 2.0, 1.0, 0.0)) for i in range(2)]
    api.envfx(scene).wind.source_object = field
    rigid.ops.add_wind(scene, props)
    _check_twin(rigid, props, (2, 30))
    field.rotation_euler = (0.4, -0.2, 2.5)  # turned live
    _check_twin(rigid, props, (31, 40))
    bpy.data.objects.remove(field)  # deleted: the scene's own direction and strength again
    _check_twin(rigid, props, (41, 60))
    assert rigid.wind_nodes.params_from_scene(scene).strength == api.envfx(scene).wind.strength


def test_a_turned_parent_does_not_turn_the_lean(rigid):
    """A prop under a root turned as a Y-up file's is: its delta rotation turns about the parent's axes, so the
    sway goes through the parent's inverse and the prop leans the way the wind blows."""
    scene = api.scene()
    w = api.envfx(scene).wind
    w.direction, w.strength, w.gust_strength = 0.0, 4.0, 0.0  # towards +X, no gusts
    root = bpy.data.objects.new("Root", None)
    scene.collection.objects.link(root)
    root.rotation_euler = (math.pi / 2, 0.0, 0.7)
    root.location = (10.0, 5.0, 0.0)
    api.view_layer().update()
    free = _prop("Free", (10.0, 5.0, 0.0))
    child = _prop("Child", (0.0, 0.0, 0.0), parent=root)
    child.matrix_world = free.matrix_world.copy()  # the same place and look, under the turned root
    for obj in (free, child):
        api.envfx(obj).wind.bend = api.envfx(obj).wind.sway = 0.0  # the main lean alone
    rigid.ops.add_wind(scene, [free, child])
    assert api.envfx(child).wind.rigid_framed and not api.envfx(free).wind.rigid_framed
    _check_twin(rigid, [free, child], (4, 12))
    top = Vector((0.0, 0.0, 1.0))
    for frame in (4, 12):
        scene.frame_set(frame)
        tips = [(o.matrix_world @ top) - o.matrix_world.translation for o in (free, child)]
        assert tips[0].x > 0.05 and abs(tips[0].y) < 1e-6  # leans towards +X, not sideways
        # under the turned root the same lean, to first order in the angle (0.3 rad here: 1% of it)
        assert tips[1].x > 0.05 and abs(tips[1].y) < 0.02 * tips[1].x
        assert (tips[0] - tips[1]).length < 0.02 * tips[0].x
    rigid.ops.remove_wind([child])
    assert _rot(child) == pytest.approx((0.0, 0.0, 0.0), abs=1e-7)


def test_switching_between_the_modifier_and_rigid_sway(rigid, mods):
    scene = api.scene()
    shape = mods.shapes.make_tree(height=1.5, n_branches=2, leaves_per_branch=2, trunk_sides=6, trunk_rings=4,
                                  branch_sides=4, leaf_grid=1)
    mesh = bpy.data.meshes.new("Bush")
    mesh.from_pydata(shape["positions"].tolist(), [], shape["faces"].tolist())
    bush = bpy.data.objects.new("Bush", mesh)
    scene.collection.objects.link(bush)
    mods.ops.bake(scene, [bush])
    mods.ops.add_wind(scene, [bush])
    assert mods.ops.wind_modifiers(bush)
    api.envfx(bush).wind.rigid = True
    result = mods.ops.add_wind(scene, [bush])
    assert result.changed == ["Bush"] and not mods.ops.wind_modifiers(bush) and rigid.nodes.is_rigid(bush)
    _check_twin(rigid, [bush], (6,))
    api.envfx(bush).wind.rigid = False
    result = mods.ops.add_wind(scene, [bush])
    assert mods.ops.wind_modifiers(bush) and not rigid.nodes.is_rigid(bush)
    assert _rot(bush) == (0.0, 0.0, 0.0)
    assert rigid.nodes.clock_of(scene) is None


def test_bad_props_are_refused_saying_why_and_left_alone(rigid):
    scene = api.scene()
    quat = _prop("Quat")
    quat.rotation_mode = "QUATERNION"
    keyed = _prop("Keyed")
    keyed.delta_rotation_euler = (0.1, 0.0, 0.0)
    keyed.keyframe_insert("delta_rotation_euler", index=0, frame=1)
    driven = _prop("Driven")
    curve = api.of(bpy.types.FCurve, driven.driver_add("delta_rotation_euler", 1))
    api.of(bpy.types.Driver, curve.driver).expression = "0.25"
    good = _prop("Good", (3.0, 0.0, 0.0))
    result = rigid.ops.add_wind(scene, [quat, keyed, driven, good])
    assert result.changed == ["Good"]
    assert "Quaternion" in result.skipped["Quat"] and "XYZ Euler" in result.skipped["Quat"]
    assert "keyframed" in result.skipped["Keyed"]
    assert "already has a driver" in result.skipped["Driven"]
    assert quat.animation_data is None and len(_drivers(driven)) == 1
    with pytest.raises(rigid.ops.WindInputError, match="Nothing to put in wind.*Quaternion"):
        rigid.ops.add_wind(scene, [quat])


def test_a_deleted_clock_is_made_again_by_add_wind(rigid):
    scene = api.scene()
    props = [_prop(f"P{i}", (i * 1.5, 0.0, 0.0)) for i in range(2)]
    props[0].delta_rotation_euler = (0.1, 0.2, 0.3)
    rigid.ops.add_wind(scene, props)
    bpy.data.node_groups.remove(rigid.nodes.clock_of(scene))  # a script or a purge-happy user
    assert rigid.nodes.clock_of(scene) is None and all(rigid.nodes.is_rigid(o) for o in props)
    result = rigid.ops.add_wind(scene, props)
    assert sorted(result.changed) == ["P0", "P1"]
    _check_twin(rigid, props, (4, 9))
    bpy.data.node_groups.remove(rigid.nodes.clock_of(scene))
    assert sorted(rigid.ops.remove_wind(props).changed) == ["P0", "P1"]
    assert _rot(props[0]) == pytest.approx((0.1, 0.2, 0.3), abs=1e-7) and not _drivers(props[0])


def test_an_appended_prop_brings_its_scene_and_takes_its_new_scenes_wind_once_that_scene_is_deleted(rigid, tmp_path):
    """As docs/wind.md says under Limits: a prop in rigid sway appended into another file brings the scene its wind
    was added in (its clock reads that scene) and sways in its wind; that scene deleted, the prop sways in the wind
    of the scene it is in."""
    source = api.scene()
    source.name = "Source"
    api.envfx(source).wind.strength = 3.0
    rigid.ops.add_wind(source, [_prop("P", (1.0, 2.0, 0.0))])
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "source.blend"))
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    level = api.scene()
    level.name = "Level"
    prop = api.load_objects(str(tmp_path / "source.blend"), ["P"], link=False)[0]
    level.collection.objects.link(prop)
    assert sorted(s.name for s in bpy.data.scenes) == ["Level", "Source"]
    assert rigid.nodes.prop_clock(prop) == rigid.nodes.clock_of(bpy.data.scenes["Source"])
    bpy.data.scenes.remove(bpy.data.scenes["Source"])
    api.view_layer().update()
    assert rigid.nodes.prop_clock(prop) == rigid.nodes.clock_of(level) is not None
    _check_twin(rigid, [prop], (5, 12))


def test_a_full_copy_of_the_scene_sways_with_its_own_wind(rigid):
    """A scene copied with its objects: Add Wind in the copy gives the copy its own clock, and each scene's props
    follow their own scene's wind."""
    scene = api.scene()
    api.envfx(scene).wind.direction = 0.3
    rigid.ops.add_wind(scene, [_prop("P", (2.0, 1.0, 0.0))])
    bpy.ops.scene.new(type="FULL_COPY")
    copy = api.scene()
    assert copy != scene
    api.envfx(copy).wind.direction = 2.5
    copied = [o for o in copy.objects if o.name.startswith("P")]
    rigid.ops.add_wind(copy, copied)
    assert rigid.nodes.clock_of(copy) not in (None, rigid.nodes.clock_of(scene))
    for sc, props in ((scene, [bpy.data.objects["P"]]), (copy, copied)):
        api.window().scene = sc
        _check_twin(rigid, props, (6, 21))


def test_a_full_copy_sways_with_its_own_wind_once_the_scene_it_was_copied_from_is_deleted(rigid):
    """A scene copied with its objects, then the scene it was copied from deleted: the copy's props do not stand
    still (their clock read the deleted scene) but sway with the copy's wind, whether the copy had no clock of its
    own (the clock becomes its) or had one (Wind on GPU gives it one: the props move to it, the old clock goes)."""
    scene = api.scene()
    api.envfx(scene).wind.strength = 2.0
    rigid.ops.add_wind(scene, [_prop("P", (2.0, 1.0, 0.0))])
    for own_clock in (False, True):
        bpy.ops.scene.new(type="FULL_COPY")
        copy = api.scene()
        copied = [o for o in copy.objects if o.name.startswith("P")]
        if own_clock:
            rigid.nodes.ensure_clock(copy)
        bpy.data.scenes.remove(scene)
        api.envfx(copy).wind.direction = 1.0 + own_clock  # its own settings
        _check_twin(rigid, copied, (6, 21))
        assert [rigid.nodes.prop_clock(o) for o in copied] == [rigid.nodes.clock_of(copy)]
        assert len([t for t in bpy.data.node_groups if rigid.nodes.is_clock(t)]) == 1
        scene = copy


def test_a_rigid_level_survives_save_and_reload(rigid, save_and_reopen):
    scene = api.scene()
    api.envfx(scene).wind.strength = 2.5
    rigid.ops.add_wind(scene, [_prop(f"P{i}", (i * 1.5, 0.0, 0.0)) for i in range(3)])
    save_and_reopen()
    props = [bpy.data.objects[f"P{i}"] for i in range(3)]
    assert all(rigid.nodes.is_rigid(o) for o in props)
    _check_twin(rigid, props, (3, 17))


def test_real_vegetation_sways_whole(rigid, corpus_asset):
    """A corpus flower imported as OBJ (Y up, an unapplied centimetre scale, away from the origin): its objects
    lean with the wind about their origins, as the twin."""
    objects = corpus_asset("flower_blue")
    scene = api.scene()
    api.envfx(scene).wind.strength = 3.0
    for obj in objects:
        api.envfx(obj).wind.rigid = True
    result = rigid.ops.add_wind(scene, objects)
    assert sorted(result.changed) == sorted(o.name for o in objects)
    _check_twin(rigid, objects, (5, 40))
    obj = objects[0]
    co = np.array([v.co for v in obj.data.vertices])
    top = Vector(co[np.argmax(np.array([(obj.matrix_world @ Vector(c)).z for c in co]))])
    scene.frame_set(20)
    turn = obj.rotation_euler.to_matrix().to_4x4() @ Matrix.Diagonal(obj.scale.to_4d())
    at = Matrix.Translation(obj.matrix_world.translation)
    moved = obj.matrix_world @ top - at @ turn @ top
    sway = Euler(obj.delta_rotation_euler, obj.rotation_mode).to_matrix().to_4x4()
    assert moved.length > 1e-4
    # Blender turns the delta rotation about the world axes, after the object's own: the object leans about its origin
    assert np.array(at @ sway @ turn) == pytest.approx(np.array(obj.matrix_world), abs=1e-5)


GODOT_RIGID_MAIN = """
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec3 rest_pos;
layout(location = 0) out vec4 result;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    result = vec4(envfx_wind_rigid_offset(rest_pos, mat4(@MATRIX@), @FRAME@, vec4(@WIND@), vec4(@GUSTS@)), 1.0);
}
"""


def test_exported_rigid_props_play_the_preview_in_godot(envfx, rigid, corpus_asset, load_helper, tmp_path):
    """Real props (the corpus flower: OBJ, Y up, an unapplied centimetre scale, away from the origin) in rigid sway,
    exported for game engines and with Blender's glTF exporter at rest (the scene's wind strength 0: no sway in the
    transforms the glb takes): every vertex of the glb, through its node's transform and the Godot include on
    llvmpipe, lands where the Blender preview draws it, to 1e-4 of the prop's size, at several frames."""
    scene = api.scene()
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    w = api.envfx(scene).wind
    w.direction, w.strength, w.gust_strength, w.loop_frames = 0.8, 3.0, 0.6, 96
    objects = corpus_asset("flower_blue")
    for i, obj in enumerate(objects):
        api.envfx(obj).wind.rigid = True
        api.envfx(obj).wind.category = ("PLANT", "TREE")[i % 2]
    rigid.ops.add_wind(scene, objects)
    engines = importlib.import_module(envfx.__name__ + ".operators.wind_engines")
    paths, result = engines.export_engines(scene, objects, str(tmp_path / "engines"))
    assert sorted(result.changed) == sorted(o.name for o in objects)
    meta = __import__("json").loads((tmp_path / "engines" / "envfx_wind.json").read_text())
    assert all(meta["assets"][o.name]["rigid"] for o in objects)
    w.strength = 0.0  # the rest pose for the glb
    scene.frame_set(1)
    assert all(_rot(o) == pytest.approx((0.0, 0.0, 0.0), abs=1e-9) for o in objects)
    bpy.ops.object.select_all(action="DESELECT")
    for o in objects:
        o.select_set(True)
    glb = str(tmp_path / "props.glb")
    assert bpy.ops.export_scene.gltf(filepath=glb, export_format="GLB", use_selection=True, export_apply=False,
                                     export_animations=False) == {"FINISHED"}
    w.strength = 3.0
    vat = load_helper("envfx_test_vat_helpers", "tests", "blender", "test_vat.py")
    doc, accessor = vat.read_glb(glb)
    gpu_mod = load_helper("engine_gpu", "tests", "core", "engine_gpu.py")
    gpu = gpu_mod.Gpu()
    core_engines = importlib.import_module(envfx.__name__ + ".core.wind_engines")
    a, k = core_engines.axes("GODOT")
    a = np.asarray(a, np.float64)
    uniforms = core_engines.scene_uniforms(rigid.wind_nodes.params_from_scene(scene), "GODOT")
    nodes = {node["name"]: node for node in doc["nodes"] if "mesh" in node}
    worst, moved, checked, size = 0.0, 0.0, 0, 0.0
    for obj in objects:
        node = nodes[obj.name]
        t = np.eye(4)  # the node's TRS (glTF, Godot's axes)
        qx, qy, qz, qw = node.get("rotation", (0.0, 0.0, 0.0, 1.0))
        t[:3, :3] = np.array(Quaternion((qw, qx, qy, qz)).to_matrix()) * np.asarray(node.get("scale", (1, 1, 1)))
        t[:3, 3] = node.get("translation", (0.0, 0.0, 0.0))
        include = (tmp_path / "engines" / meta["assets"][obj.name]["files"]["GODOT"]).read_text()
        for prim in doc["meshes"][node["mesh"]]["primitives"]:
            pos = accessor(prim["attributes"]["POSITION"]).astype(np.float64)
            world_rest = pos @ t[:3, :3].T + t[:3, 3]
            size = max(size, float(np.ptp(world_rest, axis=0).max()))
            for frame in (5, 30, 71):
                scene.frame_set(frame)
                m = np.array(obj.matrix_world)
                # the preview: the glb's vertex (the mesh's, in glTF's axes) where Blender draws it now
                local = pos @ a / k
                want = k * ((local @ m[:3, :3].T + m[:3, 3]) @ a.T)
                main = GODOT_RIGID_MAIN
                for key, value in {"MATRIX": t.T, "FRAME": np.array([frame]), "WIND": uniforms["wind"],
                                   "GUSTS": uniforms["gusts"]}.items():
                    main = main.replace(f"@{key}@", ", ".join(repr(float(v)) for v in np.ravel(value)))
                vert = gpu_mod.spirv("#version 450\n" + include + main, "vert", False, tmp_path)
                frag = gpu_mod.spirv(gpu_mod.GLSL_FRAG, "frag", False, tmp_path)
                off = gpu.run(vert, frag, [pos])[:, :3]
                got = (pos + off) @ t[:3, :3].T + t[:3, 3]
                worst = max(worst, float(np.abs(got - want).max()))
                moved = max(moved, float(np.abs(want - world_rest).max()))
            checked += len(pos)
    assert checked > 500
    assert moved > 0.01 * size, (moved, size)
    assert worst <= 1e-4 * size, (worst, size)
