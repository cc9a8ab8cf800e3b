"""register -> unregister -> register leaves nothing behind and works again."""

import bpy


HANDLER_LISTS = ("load_post", "load_pre", "save_pre", "frame_change_pre", "frame_change_post",
                 "depsgraph_update_post", "render_pre", "render_post")


def _envfx_state():
    return {
        "scene_prop": hasattr(bpy.types.Scene, "envfx"),
        "object_prop": hasattr(bpy.types.Object, "envfx"),
        "operators": sorted(name for name in dir(bpy.ops.envfx)),
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
    assert bpy.ops.envfx.bend_add() == {"FINISHED"}


def test_a_group_whose_last_object_was_deleted_by_hand_is_not_saved(envfx, tmp_path):
    """Remove Bend and Remove Wind let go of a scene's group with its last object; an object deleted by hand does
    not pass through them, so the save lets go of the group: the file keeps no group that moves nothing. A group
    that still moves an object stays, and Add builds a released group again."""
    scene = bpy.context.scene
    scene.envfx.wind.ao_samples = 0
    cube = bpy.data.objects["Cube"]
    bpy.ops.mesh.primitive_cube_add(size=1, location=(3, 0, 0))
    plane = bpy.context.active_object
    envfx.operators.wind.bake(scene, [cube])
    envfx.operators.wind.bake(scene, [plane])
    for obj in (cube, plane):
        envfx.operators.bend.add_bend(scene, [obj])
        envfx.operators.wind.add_wind(scene, [obj])
    groups = {m.node_group.name for m in cube.modifiers}
    assert len(groups) == 2
    path = str(tmp_path / "kept.blend")
    bpy.data.objects.remove(cube)
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert groups <= set(bpy.data.node_groups.keys())  # the plane still uses them

    bpy.data.objects.remove(plane)
    path = str(tmp_path / "released.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert not groups & set(bpy.data.node_groups.keys())
    assert not [key for key in scene.keys() if key.startswith("envfx_group_")]
    bpy.ops.wm.open_mainfile(filepath=path)
    assert not groups & set(bpy.data.node_groups.keys())

    bpy.ops.mesh.primitive_cube_add(size=1)
    plane = bpy.context.active_object
    envfx.operators.wind.bake(bpy.context.scene, [plane])
    envfx.operators.bend.add_bend(bpy.context.scene, [plane])
    envfx.operators.wind.add_wind(bpy.context.scene, [plane])
    assert {m.node_group.name for m in plane.modifiers} == groups
