"""All user-facing settings: ``Scene.envfx`` (global) and ``Object.envfx`` (per object)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, PointerProperty
from bpy.types import PropertyGroup

from .core import bend as core_bend
from .core import wind as core_wind


# --- Bend -------------------------------------------------------------------------------------------------

def _bend_structure_changed(self, context):
    # mode, axis and pivot change the group's nodes; numbers reach it through drivers
    from .shader_nodes import bend as bend_nodes

    scene = self.id_data
    if bpy.data.node_groups.get(bend_nodes.GROUP_NAME) is not None:
        bend_nodes.sync(scene)


class EnvFXBendSettings(PropertyGroup):
    enabled: BoolProperty(
        name="Enabled",
        description="Bend every bent object of the scene (off shows the flat, physical world)",
        default=True,
    )
    mode: EnumProperty(
        name="Mode",
        description="Shape of the bend",
        items=(
            ("RUNNER", "Runner", "The world drops away ahead of and behind the pivot along the forward axis"),
            ("RUNNER_2AXIS", "Runner, Two Axes", "Drops along the forward and the sideways axis, each with its own "
             "strength and spread"),
            ("PLANET", "Little Planet", "Drops with horizontal distance from the pivot in every direction"),
            ("CYLINDER", "Cylinder", "Rolls off sideways only, like walking along a log or around a tower"),
        ),
        default="RUNNER",
        update=_bend_structure_changed,
    )
    axis: EnumProperty(
        name="Forward Axis",
        description="World axis the world bends along (the write-up's Z is Blender's Y)",
        items=tuple((a, a.replace("POS_", "+").replace("NEG_", "-"), f"Bend along world {a}") for a in core_bend.AXES),
        default="POS_Y",
        update=_bend_structure_changed,
    )
    pivot: PointerProperty(
        name="Pivot",
        description="Object the bend is centred on (player or camera); moving it moves the horizon live. "
        "Without one the world origin is used",
        type=bpy.types.Object,
        update=_bend_structure_changed,
    )
    horizon_offset: FloatProperty(
        name="Horizon Offset",
        description="Moves the top of the bend ahead of the pivot along the forward axis",
        default=0.0,
        soft_min=-100.0,
        soft_max=100.0,
        subtype="DISTANCE",
    )
    strength: FloatProperty(
        name="Strength",
        description="How fast the world drops beyond the flat zone (drop = strength * distance^2); "
        "negative bends up",
        default=0.01,
        min=-core_bend.MAX_STRENGTH,
        max=core_bend.MAX_STRENGTH,
        soft_min=-0.2,
        soft_max=0.2,
        step=0.1,
        precision=4,
    )
    spread: FloatProperty(
        name="Spread",
        description="Half-width of the flat zone around the horizon where the world is not bent "
        "(clicks and physics match the picture there)",
        default=2.0,
        min=0.0,
        soft_max=50.0,
        subtype="DISTANCE",
    )
    side_strength: FloatProperty(
        name="Side Strength",
        description="Strength across the forward axis (Runner, Two Axes)",
        default=0.01,
        min=-core_bend.MAX_STRENGTH,
        max=core_bend.MAX_STRENGTH,
        soft_min=-0.2,
        soft_max=0.2,
        step=0.1,
        precision=4,
    )
    side_spread: FloatProperty(
        name="Side Spread",
        description="Half-width of the flat zone across the forward axis (Runner, Two Axes)",
        default=2.0,
        min=0.0,
        soft_max=50.0,
        subtype="DISTANCE",
    )


def _bend_exclude_changed(self, context):
    from .shader_nodes import bend as bend_nodes

    obj = self.id_data
    tree = bpy.data.node_groups.get(bend_nodes.GROUP_NAME)
    if tree is None:
        return
    for mod in obj.modifiers:
        if mod.type == "NODES" and mod.node_group == tree:
            mod.show_viewport = not self.bend_exclude
            mod.show_render = not self.bend_exclude


# --- Wind -------------------------------------------------------------------------------------------------

def _wind_scene_changed(self, context):
    from .shader_nodes import wind as wind_nodes

    if bpy.data.node_groups.get(wind_nodes.GROUP_NAME) is not None:
        wind_nodes.sync(self.id_data)


def _wind_object_changed(self, context):
    from .shader_nodes import wind as wind_nodes

    wind_nodes.sync_object(self.id_data)


def _poll_wind_field(self, obj):
    return obj.field is not None and obj.field.type == "WIND"


_WIND_SOURCES = tuple((s, s.replace("_", " ").title(), f"Channel gets {s.lower().replace('_', ' ')}")
                      for s in core_wind.SOURCES)


class EnvFXWindSettings(PropertyGroup):
    source_object: PointerProperty(
        name="Wind Object",
        description="Wind force-field object that sets the direction (its Z axis, live) and strength (its field "
        "strength); without one the direction and strength below are used",
        type=bpy.types.Object,
        poll=_poll_wind_field,
        update=_wind_scene_changed,
    )
    direction: FloatProperty(
        name="Direction",
        description="Direction the wind blows towards, as an angle from world +X around Z",
        default=0.0, subtype="ANGLE", update=_wind_scene_changed,
    )
    strength: FloatProperty(
        name="Strength",
        description="Wind strength (1 = a strong breeze; 0 = still, only grass ambient motion remains)",
        default=1.0, min=0.0, soft_max=3.0, max=100.0, update=_wind_scene_changed,
    )
    gust_strength: FloatProperty(
        name="Gust Strength",
        description="How much gusts add to and take from the wind (fraction of the strength)",
        default=0.5, min=0.0, soft_max=2.0, max=10.0, update=_wind_scene_changed,
    )
    gust_frequency: FloatProperty(
        name="Gust Frequency",
        description="How often gusts come (cycles per second of the slowest gust wave)",
        default=0.2, min=0.0, soft_max=2.0, max=20.0, update=_wind_scene_changed,
    )
    loop_frames: IntProperty(
        name="Loop Frames",
        description="Length of a seamless loop in frames: every periodic motion repeats exactly after this many "
        "frames (0 = no loop)",
        default=0, min=0, soft_max=1000, update=_wind_scene_changed,
    )
    ambient: FloatProperty(
        name="Ambient",
        description="Grass ambient motion (figure-eight sway and wobble along the normal), even without wind; "
        "0 turns it off",
        default=1.0, min=0.0, soft_max=2.0, max=10.0, update=_wind_scene_changed,
    )
    grass_tilt: FloatProperty(
        name="Grass Tilt",
        description="Grass leans away from a camera that looks down on it, so blades do not read as flat cards",
        default=0.5, min=0.0, soft_max=2.0, max=10.0, update=_wind_scene_changed,
    )
    grass_fade_start: FloatProperty(
        name="Fade Start",
        description="Distance from the active camera where grass starts to shrink and calm down",
        default=40.0, min=0.0, soft_max=500.0, subtype="DISTANCE", update=_wind_scene_changed,
    )
    grass_fade_end: FloatProperty(
        name="Fade End",
        description="Distance from the active camera where grass is gone and still (at or below Fade Start: no fade)",
        default=80.0, min=0.0, soft_max=1000.0, subtype="DISTANCE", update=_wind_scene_changed,
    )
    terrain_object: PointerProperty(
        name="Terrain",
        description="Grass follows this mesh's surface (vertical rays from above each grass vertex)",
        type=bpy.types.Object,
        poll=lambda self, obj: obj.type == "MESH",
        update=_wind_scene_changed,
    )
    # bake settings
    ao_samples: IntProperty(
        name="AO Samples",
        description="Cycles samples for the ambient occlusion baked into the alpha channel (0 = no AO bake, "
        "alpha is 1)",
        default=16, min=0, soft_max=256, max=4096,
    )
    leaf_size: FloatProperty(
        name="Leaf Size",
        description="Islands smaller than this fraction of the asset height are leaves (cards, needles, blades)",
        default=0.2, min=0.01, max=0.99, subtype="FACTOR",
    )
    channel_layout: EnumProperty(
        name="Export Layout",
        description="Channel layout of the exported colour attribute",
        items=(
            ("HZD", "Horizon Zero Dawn", "R leaf distance, G branch phase, B branch distance, A AO"),
            ("CRYENGINE", "CryEngine / GPU Gems 3", "R edge stiffness, G per-leaf phase, B overall stiffness, A AO"),
            ("CUSTOM", "Custom", "Choose what each channel holds"),
        ),
        default="HZD",
    )
    custom_r: EnumProperty(name="R", items=_WIND_SOURCES, default="LEAF", description="Red channel content")
    custom_g: EnumProperty(name="G", items=_WIND_SOURCES, default="BRANCH_PHASE", description="Green channel content")
    custom_b: EnumProperty(name="B", items=_WIND_SOURCES, default="BRANCH", description="Blue channel content")
    custom_a: EnumProperty(name="A", items=_WIND_SOURCES, default="AO", description="Alpha channel content")


class EnvFXObjectWindSettings(PropertyGroup):
    category: EnumProperty(
        name="Category",
        description="Spring response to gusts (the talk's four spring categories)",
        items=(
            ("TREE", "Tree", "Slow, heavy spring: gusts rise and settle slowly"),
            ("PLANT", "Plant", "Bushes and plants: a quicker spring"),
            ("GRASS", "Grass", "Fast spring plus grass ambient motion (figure-eight, wobble)"),
            ("SPECIAL", "Special", "Banners, tarps, cloth-like assets"),
        ),
        default="TREE", update=_wind_object_changed,
    )
    rigidity: FloatProperty(name="Rigidity", description="Divides all wind motion of this asset (2 = half as much)",
                            default=1.0, min=0.01, soft_max=10.0, max=100.0, update=_wind_object_changed)
    bend: FloatProperty(name="Bend", description="Branch motion along the wind", default=1.0, soft_min=0.0,
                        soft_max=3.0, min=-10.0, max=10.0, update=_wind_object_changed)
    sway: FloatProperty(name="Sway", description="Branch motion across the wind", default=1.0, soft_min=0.0,
                        soft_max=3.0, min=-10.0, max=10.0, update=_wind_object_changed)
    lift: FloatProperty(name="Lift", description="Branch motion up and down", default=1.0, soft_min=0.0,
                        soft_max=3.0, min=-10.0, max=10.0, update=_wind_object_changed)
    micro: FloatProperty(name="Micro", description="Leaf flutter (3D noise moving the leaves, driven by R)",
                         default=1.0, min=0.0, soft_max=3.0, max=10.0, update=_wind_object_changed)
    ramp: FloatProperty(name="Ramp", description="Respond earlier at low wind speeds (0 = linear; 3 = four times "
                        "the response at light wind, same at full wind)", default=0.0, min=0.0, soft_max=10.0,
                        max=100.0, update=_wind_object_changed)
    main_bend: BoolProperty(name="Main Bend", description="Bend the whole asset with height (plants can switch "
                            "it off)", default=True, update=_wind_object_changed)
    asset_height: FloatProperty(name="Asset Height", description="Height of the asset, set by the wind-data bake "
                                "(scales every motion)", default=1.0, min=0.0, subtype="DISTANCE",
                                update=_wind_object_changed)


# --- Roots ------------------------------------------------------------------------------------------------

class EnvFXSceneSettings(PropertyGroup):
    bend: PointerProperty(type=EnvFXBendSettings)
    wind: PointerProperty(type=EnvFXWindSettings)


class EnvFXObjectSettings(PropertyGroup):
    bend_exclude: BoolProperty(
        name="Exclude from Bend",
        description="Never bend this object (the write-up's BEND_OFF), even when its collection is bent",
        default=False,
        update=_bend_exclude_changed,
    )
    wind: PointerProperty(type=EnvFXObjectWindSettings)


classes = (
    EnvFXBendSettings,
    EnvFXWindSettings,
    EnvFXObjectWindSettings,
    EnvFXSceneSettings,
    EnvFXObjectSettings,
)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Scene.envfx = PointerProperty(type=EnvFXSceneSettings)
    bpy.types.Object.envfx = PointerProperty(type=EnvFXObjectSettings)


def unregister():
    del bpy.types.Object.envfx
    del bpy.types.Scene.envfx
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
