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
