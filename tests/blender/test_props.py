"""The settings (``props/``): one module per feature, and one name per setting everywhere.

A number the command line sets is the scene setting of the same name (``--side-strength`` is
``scene.envfx.bend.side_strength``), so a user who knows one knows the other; the few options named differently
are listed below with the reason. (The gas giant's options are made from its settings table and have their own
test in test_gasgiant.py.)
"""

import bpy
import pytest

from tests.blender import api

# option (without the dashes) -> the scene setting it sets, where the two names differ. Every entry says why.
RENAMED = {
    "snow": {
        "budget": "vertex_budget",  # the option is short; the panel says "Vertex Budget"
        "resolution": "buffer_resolution",  # the interaction buffer's: the snow mesh has its own spacing
        "size": "buffer_size",  # the follow window's world size (the buffer's), not the snow's
    },
}
NUMERIC_TYPES = {int: "INT", float: "FLOAT"}


def numeric_options(envfx, command: str) -> dict:
    """``{option name with underscores: (flag, argparse type)}`` of the numbers ``envfx <command>`` takes."""
    parser = envfx.cli.subcommand_parser(envfx.cli.build_parser(), command)
    out = {}
    for action in parser._actions:
        if action.type in NUMERIC_TYPES and action.option_strings:
            flag = max(action.option_strings, key=len)
            out[flag.removeprefix("--").replace("-", "_")] = (flag, action.type)
    return out


@pytest.mark.parametrize("feature", ["bend", "wind", "snow"])
def test_every_numeric_option_names_a_scene_setting(envfx, feature):
    options = numeric_options(envfx, feature)
    assert options, f"envfx {feature} has no numeric options: the parser was not read"
    settings = getattr(api.envfx(api.scene()), feature).bl_rna.properties
    renamed = RENAMED.get(feature, {})
    for name, (flag, kind) in options.items():
        prop = renamed.get(name, name)
        assert prop in settings, (f"envfx {feature} {flag} names no setting of scene.envfx.{feature}: rename one, or "
                                  f"list it in RENAMED with the reason")
        assert settings[prop].type == NUMERIC_TYPES[kind], (
            f"envfx {feature} {flag} takes {kind.__name__}, scene.envfx.{feature}.{prop} is {settings[prop].type}")
    stale = set(renamed) - set(options)
    assert not stale, f"RENAMED lists options envfx {feature} does not have: {sorted(stale)}"
    for name, prop in renamed.items():
        assert name not in settings, f"{name} is a setting now: drop it from RENAMED (it maps to {prop})"


def test_the_check_reads_numbers_only(envfx):
    """Flags and names (--subdivide, --pivot, --frames START:END) are not numbers; --strength is."""
    bend = numeric_options(envfx, "bend")
    assert {"strength", "side_spread", "tolerance"} <= set(bend)
    assert not {"subdivide", "pivot", "mode", "output"} & set(bend)
    assert "frames" not in numeric_options(envfx, "snow")


def test_each_feature_keeps_its_settings_in_its_own_module(envfx):
    """``scene.envfx.<feature>`` is defined in ``props/<feature>.py`` (and ``object.envfx.<feature>`` too), the name
    the feature has in every other layer."""
    scene, obj = api.envfx(api.scene()), api.envfx(bpy.data.objects.new("P", None))
    groups = [p.identifier for p in scene.bl_rna.properties if p.type == "POINTER" and p.identifier != "rna_type"]
    assert {"bend", "wind", "snow", "gasgiant", "mips", "lightmap", "vat"} <= set(groups)
    for owner, names in ((scene, groups), (obj, ["wind", "snow"])):
        for name in names:
            module = type(getattr(owner, name)).__module__
            assert module == f"{envfx.__name__}.props.{name}", f"{name}: {module}"
    assert type(scene).__module__ == f"{envfx.__name__}.props"


# the numpy core's settings dataclass -> (settings group, {field: setting of another name or None: why})
CORE_TWINS = {
    "bend": ("core.bend.BendParams", "scene.bend", {}),
    "scene wind": ("core.wind.SceneWind", "scene.wind", {
        "fps": None,  # the scene's frame rate (render settings), not a wind setting
        "fade_start": "grass_fade_start", "fade_end": "grass_fade_end",  # the grass's camera fade
    }),
    "asset wind": ("core.wind.AssetWind", "object.wind", {}),
    "snow cover": ("core.snow.CoverParams", "scene.snow", {}),
    "snow stamp": ("core.snow.StampParams", "scene.snow", {"fps": None}),  # the scene's frame rate
    "snow buffer": ("core.snow.BufferParams", "scene.snow", {
        "resolution": "buffer_resolution", "size": "buffer_size",  # the interaction buffer's, not the snow mesh's
        "origin": None,  # where the window is: from the snow's bounds or the pivot at each frame, not a setting
        "occluder_depth": "thickness",  # occluders hold the snow down by its thickness
        # the buffer's grass and ripple simulation and the follow window's edge fade keep the write-up's numbers:
        # scripts set them on the core (core.snow.bake); no panel setting
        "edge_fade": None, "grass_frequency": None, "grass_damping": None, "grass_recover": None,
        "ripple_speed": None, "ripple_damping": None,
    }),
}


@pytest.mark.parametrize("twin", list(CORE_TWINS))
def test_every_field_of_the_core_settings_is_the_setting_of_the_same_name(envfx, twin):
    """The numpy core's settings dataclasses and the Blender settings name a setting the same way (the few
    exceptions are listed above with the reason), so the panel, scripts and the core speak of one thing."""
    import dataclasses
    import importlib

    path, owner, renamed = CORE_TWINS[twin]
    module, cls = path.rsplit(".", 1)
    fields = [f.name for f in dataclasses.fields(getattr(importlib.import_module(f"{envfx.__name__}.{module}"), cls))]
    holder, group = owner.split(".")
    obj = bpy.data.objects.new("Twin", None)
    settings = getattr(api.envfx((api.scene() if holder == "scene" else obj)), group).bl_rna.properties
    for name in fields:
        if name in renamed:
            assert renamed[name] is None or renamed[name] in settings, (twin, name)
            assert name not in settings or renamed[name] is None, f"{twin}: {name} is a setting now: drop its entry"
            continue
        assert name in settings, f"{path}.{name} has no setting {owner}.{name}: name them alike or list it"
    bpy.data.objects.remove(obj)
