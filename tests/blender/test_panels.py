"""Every EnvFX panel draws without error and only shows properties and operators that exist.

There is no UI in background mode, so draw() runs against conftest's RecordingLayout: each ``prop(data, name)``
must name a real property of ``data`` and each ``operator(idname)`` a registered operator.
"""

import types

import bpy
import pytest


class FakeContext:
    def __init__(self, active_object):
        self.scene = bpy.context.scene
        self.active_object = active_object
        self.object = active_object
        self.selected_objects = [active_object] if active_object else []
        self.space_data = None
        self.window_manager = bpy.context.window_manager


def envfx_panels():
    return [cls for cls in bpy.types.Panel.__subclasses__() if "envfx" in cls.__name__.lower()]


def test_there_is_a_panel_per_feature(envfx):
    names = {cls.__name__ for cls in envfx_panels()}
    assert "VIEW3D_PT_envfx" in names
    for feature in envfx.FEATURES:
        assert any(feature in name.lower() for name in names), feature
    for cls in envfx_panels():
        if cls.bl_space_type == "VIEW_3D":
            assert cls.bl_category == "EnvFX"


@pytest.mark.parametrize("with_active", [False, True])
def test_every_panel_draws_real_properties_and_operators(envfx, recording_layout, with_active):
    active = bpy.data.objects["Cube"] if with_active else None
    context = FakeContext(active)
    drawn = 0
    for cls in envfx_panels():
        # Panels cannot be instantiated outside a UI; draw() is a plain function of (self, context)
        panel = types.SimpleNamespace(layout=recording_layout(), bl_label=cls.bl_label)
        if hasattr(cls, "poll") and not cls.poll(context):
            continue
        if hasattr(cls, "draw_header"):
            cls.draw_header(panel, context)
        cls.draw(panel, context)
        drawn += 1
    assert drawn >= len(envfx.FEATURES)
