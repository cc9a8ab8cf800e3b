"""register -> unregister -> register leaves nothing behind and works again."""

import importlib
from typing import Any

import bpy

from tests.blender import api


HANDLER_LISTS = ("load_post", "load_pre", "save_pre", "frame_change_pre", "frame_change_post",
                 "depsgraph_update_post", "render_pre", "render_post")


def _envfx_state():
    return {
        "scene_prop": hasattr(bpy.types.Scene, "envfx"),
        "object_prop": hasattr(bpy.types.Object, "envfx"),
        "operators": sorted(name for name in dir(api.ops)),
        "panels": sorted(name for name in dir(bpy.types) if name.startswith("VIEW3D_PT_envfx")),
        "types": sorted(name for name in dir(bpy.types) if name.startswith(("ENVFX_", "EnvFX"))),
        "handlers": sorted(f"{name}:{h.__module__}" for name in HANDLER_LISTS
                           for h in getattr(bpy.app.handlers, name) if ".envfx" in h.__module__),
    }


def test_unregister_removes_everything_and_register_restores_it(envfx, addon_switch):
    enable_addon, disable_addon = addon_switch
    before = _envfx_state()
    assert before["scene_prop"] and before["object_prop"]
    assert "bend_add" in before["operators"]
    assert any(h.startswith("load_post:") for h in before["handlers"])
    assert "VIEW3D_PT_envfx" in before["panels"] and "VIEW3D_PT_envfx_bend" in before["panels"]
    assert envfx._cli_handle is not None

    disable_addon()
    try:
        gone = _envfx_state()
        assert not gone["scene_prop"] and not gone["object_prop"]
        assert gone["operators"] == []
        assert gone["panels"] == [] and gone["types"] == [] and gone["handlers"] == []
        assert envfx._cli_handle is None
    finally:
        module = enable_addon()
    assert _envfx_state() == before
    assert module._cli_handle is not None
    # and it still works
    bpy.ops.wm.read_homefile(app_template="")
    assert api.ops.bend_add() == {"FINISHED"}


def test_a_group_whose_last_object_was_deleted_by_hand_is_not_saved(envfx, tmp_path):
    """Remove Bend and Remove Wind let go of a scene's group with its last object; an object deleted by hand does
    not pass through them, so the save lets go of the group: the file keeps no group that moves nothing. A group
    that still moves an object stays, and Add builds a released group again."""
    scene = api.scene()
    api.envfx(scene).wind.ao_samples = 0
    cube = bpy.data.objects["Cube"]
    bpy.ops.mesh.primitive_cube_add(size=1, location=(3, 0, 0))
    plane = api.active()
    envfx.operators.wind.bake(scene, [cube])
    envfx.operators.wind.bake(scene, [plane])
    for obj in (cube, plane):
        envfx.operators.bend.add_bend(scene, [obj])
        envfx.operators.wind.add_wind(scene, [obj])
    groups = {api.modifier_group(cube, m.name).name for m in cube.modifiers}
    assert len(groups) == 2
    path = str(tmp_path / "kept.blend")
    bpy.data.objects.remove(cube)
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert groups <= set(bpy.data.node_groups.keys())  # the plane still uses them

    bpy.data.objects.remove(plane)
    path = str(tmp_path / "released.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert not groups & set(bpy.data.node_groups.keys())
    assert not [key for key in api.id_keys(scene) if key.startswith("envfx_group_")]
    bpy.ops.wm.open_mainfile(filepath=path)
    assert not groups & set(bpy.data.node_groups.keys())

    bpy.ops.mesh.primitive_cube_add(size=1)
    plane = api.active()
    envfx.operators.wind.bake(api.scene(), [plane])
    envfx.operators.bend.add_bend(api.scene(), [plane])
    envfx.operators.wind.add_wind(api.scene(), [plane])
    assert {api.modifier_group(plane, m.name).name for m in plane.modifiers} == groups


# --- EnvFX enabled while a file with its effects is open ---

def _effects_file(envfx, path):
    """Save a file with every live effect: a bent and windy cube, snow with live trails and an actor (which gets
    the snow coverage) at frame 1."""
    import bmesh

    scene = api.scene()
    scene.frame_set(1)
    cube = bpy.data.objects["Cube"]
    cube.location = (0.0, 12.0, 0.0)
    api.envfx(scene).bend.strength = 0.05
    api.envfx(scene).wind.ao_samples = 0
    api.envfx(scene).wind.strength = 1.0
    envfx.operators.wind.bake(scene, [cube])
    envfx.operators.wind.add_wind(scene, [cube])
    envfx.operators.bend.add_bend(scene, [cube])
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=8, y_segments=8, size=2.0)
    ground = bpy.data.objects.new("Ground", bpy.data.meshes.new("Ground"))
    bm.to_mesh(api.mesh(ground))
    bm.free()
    scene.collection.objects.link(ground)
    api.envfx(scene).snow.spacing = 0.2
    snow = envfx.operators.snow.generate_snow(scene, [ground], bpy.context.evaluated_depsgraph_get())[0]
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    api.envfx(scene).snow.actors = actors
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=8, v_segments=6, radius=0.5)
    actor = bpy.data.objects.new("Actor", bpy.data.meshes.new("Actor"))
    bm.to_mesh(api.mesh(actor))
    bm.free()
    actor.location = (0.0, 0.0, 0.45)
    actors.objects.link(actor)
    envfx.operators.snow.add_trails(scene, [snow])
    bpy.ops.wm.save_as_mainfile(filepath=path)


def _evaluated():
    """Every mesh object's evaluated world positions, by name."""
    import numpy as np

    dg = bpy.context.evaluated_depsgraph_get()
    out = {}
    for obj in bpy.data.objects:
        if obj.type == "MESH":
            ev = obj.evaluated_get(dg)
            out[obj.name] = np.array([(ev.matrix_world @ v.co).to_tuple() for v in api.mesh(ev).vertices])
    return out


def _dead_drivers():
    """(id name, data path) of the drivers of EnvFX's node groups that Blender gave up on."""
    return sorted((tree.name, fc.data_path) for tree in bpy.data.node_groups
                  if tree.get("envfx_kind") and tree.animation_data
                  for fc in tree.animation_data.drivers if not (fc.driver and fc.driver.is_valid and fc.is_valid))


def _open_while_disabled(path, disable_addon):
    """Disable EnvFX, open ``path`` and evaluate it (Blender gives up on the drivers that read EnvFX settings)."""
    disable_addon()
    bpy.ops.wm.open_mainfile(filepath=path)
    api.scene().frame_set(1)
    bpy.context.evaluated_depsgraph_get()
    dead = _dead_drivers()
    assert {name for name, _ in dead} >= {"EnvFX Bend", "EnvFX Wind", "EnvFX Snow Trails", "EnvFX Snow Coverage"}


def _assert_effects_like(reference):
    import numpy as np

    got = _evaluated()
    assert got.keys() == reference.keys()
    for name in reference:
        np.testing.assert_allclose(got[name], reference[name], atol=1e-5, err_msg=name)


def _assert_bend_follows_settings(envfx):
    scene = api.scene()
    before = _evaluated()["Cube"][:, 2].min()
    api.envfx(scene).bend.strength = 0.06
    scene.frame_set(1)
    assert _evaluated()["Cube"][:, 2].min() < before - 0.5   # a bigger drop (-7.05 -> -8.26 without the wind)


def _effects_file_opened(envfx, tmp_path):
    """The file with every effect (``_effects_file``) saved and opened with EnvFX enabled: (its path, what its
    objects show at frame 1)."""
    path = str(tmp_path / "effects.blend")
    _effects_file(envfx, path)
    bpy.ops.wm.open_mainfile(filepath=path)
    api.scene().frame_set(1)
    return path, _evaluated()


def test_enabling_envfx_with_a_file_open_brings_its_effects_back(envfx, addon_switch, tmp_path):
    """A file with a bend, wind and snow trails, opened while EnvFX is disabled (a colleague's file, EnvFX not
    enabled yet): enabling EnvFX gives what opening the file with EnvFX enabled gives, and the effects follow
    their settings again."""
    enable_addon, disable_addon = addon_switch
    path, reference = _effects_file_opened(envfx, tmp_path)
    assert reference["Cube"][:, 2].min() < -5.0            # bent
    try:
        _open_while_disabled(path, disable_addon)
    finally:
        module = enable_addon()
    assert _dead_drivers() == []
    _assert_effects_like(reference)
    _assert_bend_follows_settings(module)


def test_add_bend_wind_and_trails_repair_drivers_blender_gave_up_on(envfx, addon_switch, tmp_path, monkeypatch):
    """Add Bend, Add Wind and Add Trails revive their group's drivers when Blender has given up on them (here:
    EnvFX re-enabled without reviving the open file)."""
    enable_addon, disable_addon = addon_switch
    path, reference = _effects_file_opened(envfx, tmp_path)
    monkeypatch.setattr(envfx.handlers, "revive_open_file", lambda: None)
    try:
        _open_while_disabled(path, disable_addon)
    finally:
        module = enable_addon()
    assert _dead_drivers()
    scene = api.scene()
    cube, snow = bpy.data.objects["Cube"], next(o for o in scene.objects if module.operators.snow.is_snow_object(o))
    module.operators.bend.add_bend(scene, [cube])
    module.operators.wind.add_wind(scene, [cube])
    module.operators.snow.add_trails(scene, [snow])
    assert _dead_drivers() == []
    scene.frame_set(1)
    _assert_effects_like(reference)
    _assert_bend_follows_settings(module)


def test_enabling_while_blender_hides_its_data_waits_and_leaves_no_timer(envfx, addon_switch, capsys, monkeypatch):
    """Blender registers add-ons at start-up and on Reload Scripts with ``bpy.data`` hidden: enabling then does
    not touch the file (a file load follows at start-up), and in background mode, which runs no timers (and
    where Blender 4.2 crashes at exit with one still registered), it leaves no timer behind."""
    # Blender's own module (typed Any: the stubs know one name of it per version, and not as a context manager)
    try:
        restrict: Any = importlib.import_module("_bpy_restrict_state")
    except ImportError:  # Blender 4.2
        restrict = importlib.import_module("bpy_restrict_state")
    enable_addon, disable_addon = addon_switch
    disable_addon()
    try:
        with restrict.RestrictBlend(), monkeypatch.context() as patch:
            # Blender as a Python module: the add-on's ``bpy`` is not the one RestrictBlend hides the data of
            patch.setattr(bpy, "data", restrict._data_restrict)
            module = enable_addon()
    finally:
        if not hasattr(bpy.types.Scene, "envfx"):
            module = enable_addon()
    assert "EnvFX:" not in capsys.readouterr().out
    assert not bpy.app.timers.is_registered(module.handlers._revive_later)
    assert api.ops.bend_add() == {"FINISHED"}
