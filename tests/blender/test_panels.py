"""Every EnvFX panel draws without error and only shows properties and operators that exist.

There is no UI in background mode, so draw() runs against conftest's RecordingLayout: each ``prop(data, name)``
must name a real property of ``data`` and each ``operator(idname)`` a registered operator.
"""

import types
from typing import Any

import bpy
import pytest

from tests.blender import api


class FakeContext:
    def __init__(self, active_object):
        self.scene = api.scene()
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
    context: Any = FakeContext(active)  # stands in for a bpy.types.Context
    drawn = 0
    for cls in envfx_panels():
        # Panels cannot be instantiated outside a UI; draw() is a plain function of (self, context)
        panel: Any = types.SimpleNamespace(layout=recording_layout(), bl_label=cls.bl_label)  # a Panel's stand-in
        if hasattr(cls, "poll") and not cls.poll(context):
            continue
        if hasattr(cls, "draw_header"):
            cls.draw_header(panel, context)
        cls.draw(panel, context)
        drawn += 1
    assert drawn >= len(envfx.FEATURES)


# feature -> the texts its panel's status shows: nothing yet, one object, an object with another scene's
STATUS = {
    "bend": ("Nothing bent in this scene yet", "Bends 1 object(s) of this scene (group 'EnvFX Bend')",
             "Cube has the bend of scene 'Scene': Add Bend"),
    "wind": ("Nothing in the wind in this scene yet", "Moves 1 object(s) of this scene (group 'EnvFX Wind')",
             "Cube has the wind of scene 'Scene': Add Wind"),
}


@pytest.mark.parametrize("feature", sorted(STATUS))
def test_status_says_what_the_scene_does_and_whose_effect_an_object_has(envfx, feature):
    """The bend and wind panels' status: nothing yet, how many objects of the scene the effect moves, and a
    warning when the active object has another scene's (it is linked into both)."""
    empty, counted, other = STATUS[feature]
    status = getattr(envfx.panels, feature).status
    add = getattr(getattr(envfx.operators, feature), f"add_{feature}")  # operators.bend.add_bend, ...
    scene = api.scene()
    cube = bpy.data.objects["Cube"]
    assert status(scene, cube) == [(empty, False)]
    add(scene, [cube])
    assert status(scene, cube) == [(counted, False)]
    level = bpy.data.scenes.new("Level 2")
    level.collection.objects.link(cube)
    rock = bpy.data.objects.new("Rock", cube.data)
    level.collection.objects.link(rock)
    add(level, [rock])
    text, alert = status(level, cube)[-1]
    assert alert and other in text


@pytest.mark.parametrize("feature", sorted(STATUS))
def test_status_of_a_linked_object_with_its_library_effect_says_to_override_it(envfx, feature, tmp_path):
    """A linked object keeps its library's effect and Add cannot change it: the status says to make a library
    override (which joins the scene's effect by itself)."""
    add = getattr(getattr(envfx.operators, feature), f"add_{feature}")
    cube = bpy.data.objects["Cube"]
    add(api.scene(), [cube])
    lib = str(tmp_path / "lib.blend")
    bpy.data.libraries.write(lib, {cube})
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    with bpy.data.libraries.load(lib, link=True) as (_src, dst):  # pyright: ignore[reportGeneralTypeIssues] -- a context manager, typed None
        dst.objects = ["Cube"]
    scene = api.scene()
    linked = api.of(bpy.types.Object, dst.objects[0])  # the names listed become the linked objects
    scene.collection.objects.link(linked)
    text, alert = getattr(envfx.panels, feature).status(scene, linked)[-1]
    assert alert and text.startswith(f"Cube has the {feature} of ")
    assert text.endswith("it is linked; make a library override of it (Object > Library Override > Make) to give "
                         "it this scene's")


def test_a_context_without_a_scene_or_a_panel_without_a_layout_is_named(envfx):
    """The API types ``context.scene`` and ``panel.layout`` as optional; the helpers the panels and operators read
    them through refuse None with a message rather than "'NoneType' object has no attribute"."""
    scene = api.scene()
    assert envfx.bridge.context_scene(types.SimpleNamespace(scene=scene)) == scene
    with pytest.raises(RuntimeError, match="needs a scene here and the context has none"):
        envfx.bridge.context_scene(types.SimpleNamespace(scene=None))
    with pytest.raises(RuntimeError, match="drew outside draw"):
        envfx.bridge.panel_layout(types.SimpleNamespace(layout=None))
    with pytest.raises(RuntimeError, match="needs a scene here"):  # a panel's draw() reads the scene through it
        envfx.panels.vat.VIEW3D_PT_envfx_vat.draw(types.SimpleNamespace(layout=types.SimpleNamespace()),
                                                  types.SimpleNamespace(scene=None))
