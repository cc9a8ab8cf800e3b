"""Every EnvFX panel draws without error and only shows properties and operators that exist.

There is no UI in background mode, so draw() runs against a recording stand-in for the layout: each
``prop(data, name)`` must name a real property of ``data`` and each ``operator(idname)`` a registered operator.
"""

import types

import bpy
import pytest


class RecordingLayout:
    def __init__(self, log):
        self.log = log
        self.use_property_split = False
        self.use_property_decorate = False
        self.active = True
        self.enabled = True
        self.alert = False
        self.scale_y = 1.0

    def _child(self, *args, **kwargs):
        return RecordingLayout(self.log)

    row = column = box = split = column_flow = grid_flow = _child

    def label(self, text="", **kwargs):
        self.log.append(("label", text))

    def separator(self, **kwargs):
        pass

    def prop(self, data, name, **kwargs):
        assert data is not None, f"prop {name!r} drawn for None"
        assert name in data.bl_rna.properties, f"{type(data).__name__} has no property {name!r}"
        self.log.append(("prop", name))

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        self.prop(data, name)
        assert search_name in search_data.bl_rna.properties

    def template_ID(self, data, name, **kwargs):
        self.prop(data, name)

    def operator(self, idname, **kwargs):
        module, op = idname.split(".")
        assert hasattr(getattr(bpy.ops, module), op), f"no operator {idname}"
        self.log.append(("operator", idname))
        return _OperatorProps()

    def operator_menu_enum(self, idname, prop, **kwargs):
        self.operator(idname)


class _OperatorProps:
    def __setattr__(self, key, value):
        object.__setattr__(self, key, value)


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
def test_every_panel_draws_real_properties_and_operators(envfx, with_active):
    active = bpy.data.objects["Cube"] if with_active else None
    context = FakeContext(active)
    drawn = 0
    for cls in envfx_panels():
        # Panels cannot be instantiated outside a UI; draw() is a plain function of (self, context)
        panel = types.SimpleNamespace(layout=RecordingLayout([]), bl_label=cls.bl_label)
        if hasattr(cls, "poll") and not cls.poll(context):
            continue
        if hasattr(cls, "draw_header"):
            cls.draw_header(panel, context)
        cls.draw(panel, context)
        drawn += 1
    assert drawn >= len(envfx.FEATURES)
