"""All user-facing settings: ``Scene.envfx`` (global) and ``Object.envfx`` (per object)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, PointerProperty
from bpy.types import PropertyGroup

from .core import bend as core_bend


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


# --- Snow -------------------------------------------------------------------------------------------------

from bpy.props import IntProperty, StringProperty  # noqa: E402  (kept in this section for easy merges)

def _snow_value_changed(self, context):
    # the trails group reads these through drivers; a value set from Python does not tag the scene for the
    # dependency graph by itself, so tag it
    self.id_data.update_tag()


def _snow_trails_changed(self, context):
    # the actors/occluders collections change the trails group's nodes
    from .shader_nodes import snow as snow_nodes

    scene = self.id_data
    if bpy.data.node_groups.get(snow_nodes.GROUP_NAME) is not None:
        try:
            snow_nodes.ensure_trails(scene)
        except ValueError:
            pass


class EnvFXSnowSettings(PropertyGroup):
    actors: PointerProperty(
        name="Actors",
        description="Collection whose objects carve trails into the snow (characters, slimes, vehicles)",
        type=bpy.types.Collection,
        update=_snow_trails_changed,
    )
    occluders: PointerProperty(
        name="Occluders",
        description="Collection whose objects hold the snow down where they are, seen from above "
        "(the write-up's snow-occlusion quads around nests, patches, teleporters)",
        type=bpy.types.Collection,
        update=_snow_trails_changed,
    )
    spacing: FloatProperty(
        name="Spacing", description="Distance between snow vertices (the detail the trails need)",
        default=0.1, min=1e-6, soft_min=0.01, soft_max=2.0, subtype="DISTANCE", precision=3,
    )
    thickness: FloatProperty(
        name="Thickness", description="Depth of the snow cover away from its borders",
        default=0.2, min=0.0, soft_max=2.0, subtype="DISTANCE",
    )
    max_slope: FloatProperty(
        name="Max Slope", description="Faces steeper than this get no snow",
        default=0.7853981, min=0.0, max=1.5690, subtype="ANGLE",
    )
    border_width: FloatProperty(
        name="Border Width", description="Distance over which the snow tapers to nothing at its edges",
        default=0.3, min=0.0, soft_max=5.0, subtype="DISTANCE",
    )
    drift: FloatProperty(
        name="Drift", description="Extra snow on slopes facing away from the wind (0 = none)",
        default=0.0, min=0.0, soft_max=2.0,
    )
    drift_direction: FloatProperty(
        name="Wind Direction", description="Direction the wind blows towards, measured from +X",
        default=0.0, subtype="ANGLE",
    )
    noise: FloatProperty(
        name="Noise", description="Relative random variation of the thickness", default=0.0, min=0.0, soft_max=1.0,
    )
    noise_scale: FloatProperty(
        name="Noise Scale", description="Size of the thickness variations", default=2.0, min=1e-6,
        subtype="DISTANCE",
    )
    seed: IntProperty(name="Seed", description="Random seed of the noise", default=0, min=0)
    density_mask: StringProperty(
        name="Density Mask", description="Vertex group of the terrain that scales the snow (0 = no snow); "
        "empty for none", default="",
    )
    density_texture: PointerProperty(
        name="Density Texture", description="Image whose brightness at the terrain's UVs scales the snow "
        "(black = no snow); none for no texture mask",
        type=bpy.types.Image,
    )
    lods: IntProperty(
        name="Levels of Detail", description="How many meshes to make, each with twice the spacing of the last",
        default=1, min=1, max=8,
    )
    vertex_budget: IntProperty(
        name="Vertex Budget", description="Refuse to make more snow vertices than this (estimate shown)",
        default=2_000_000, min=1,
    )
    rim_height: FloatProperty(
        name="Rim Height", description="Height of the rim pushed up around a trail, as a fraction of its depth",
        default=0.35, min=0.0, soft_max=2.0,
        update=_snow_value_changed,
    )
    rim_width: FloatProperty(
        name="Rim Width", description="Half-width of the rim, as a fraction of the actor's radius",
        default=0.5, min=0.01, soft_max=2.0,
        update=_snow_value_changed,
    )
    fade_height: FloatProperty(
        name="Vertical Fade", description="Actors higher than this above the snow (beyond their depth) do not "
        "stamp", default=0.5, min=1e-6, soft_max=5.0, subtype="DISTANCE",
        update=_snow_value_changed,
    )
    refill_rate: FloatProperty(
        name="Refill Rate", description="Fraction of a trail that fills up again per second (0 = trails stay)",
        default=0.0, min=0.0, soft_max=2.0,
        update=_snow_value_changed,
    )
    camera_fade_start: FloatProperty(
        name="Camera Fade Start", description="Deformation is full up to this distance from the active camera",
        default=50.0, min=0.0, subtype="DISTANCE",
        update=_snow_value_changed,
    )
    camera_fade_end: FloatProperty(
        name="Camera Fade End", description="Beyond this distance from the active camera the snow lies flat",
        default=100.0, min=0.0, subtype="DISTANCE",
        update=_snow_value_changed,
    )
    framing: EnumProperty(
        name="Framing", description="What the interaction buffer covers",
        items=(("AREA", "Whole Area", "One fixed window over every snow object"),
               ("FOLLOW", "Follow Pivot", "A window of Buffer Size that follows the pivot, snapped to whole "
                "texels, fading towards its edge")),
        default="AREA",
    )
    pivot: PointerProperty(
        name="Pivot", description="Object the follow window is centred on (player or camera)",
        type=bpy.types.Object,
    )
    buffer_resolution: IntProperty(
        name="Resolution", description="Texels along each side of the interaction buffer",
        default=512, min=1, max=8192, soft_max=4096,
    )
    buffer_size: FloatProperty(
        name="Buffer Size", description="World size of the follow window (Whole Area uses the snow's extent)",
        default=32.0, min=1e-6, subtype="DISTANCE",
    )
    frame_start: IntProperty(name="Start", description="First frame of the bake", default=1)
    frame_end: IntProperty(name="End", description="Last frame of the bake", default=100)
    sequence: BoolProperty(
        name="Image Sequence", description="Write every frame (off: only the final state)", default=True,
    )
    output_dir: StringProperty(
        name="Output Folder", description="Folder the EXR images and the JSON metadata are written to",
        default="", subtype="DIR_PATH",
    )


class EnvFXSnowObjectSettings(PropertyGroup):
    radius: FloatProperty(
        name="Snow Radius", description="Radius of the trail this actor carves (0 = from its size)",
        default=0.0, min=0.0, subtype="DISTANCE",
    )
    depth: FloatProperty(
        name="Snow Depth", description="How deep this actor pushes the snow (0 = half its radius)",
        default=0.0, min=0.0, subtype="DISTANCE",
    )


# --- Roots ------------------------------------------------------------------------------------------------

class EnvFXSceneSettings(PropertyGroup):
    bend: PointerProperty(type=EnvFXBendSettings)
    snow: PointerProperty(type=EnvFXSnowSettings)


class EnvFXObjectSettings(PropertyGroup):
    bend_exclude: BoolProperty(
        name="Exclude from Bend",
        description="Never bend this object (the write-up's BEND_OFF), even when its collection is bent",
        default=False,
        update=_bend_exclude_changed,
    )
    snow: PointerProperty(type=EnvFXSnowObjectSettings)


classes = (
    EnvFXBendSettings,
    EnvFXSnowSettings,
    EnvFXSnowObjectSettings,
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
