"""All user-facing settings: ``Scene.envfx`` (global) and ``Object.envfx`` (per object)."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, PointerProperty
from bpy.types import PropertyGroup

from .core import bend as core_bend


# --- Bend -------------------------------------------------------------------------------------------------

def _bend_value_changed(self, context):
    # The group reads these through drivers; a value set from Python does not tag the scene for the
    # dependency graph by itself, so tag it (the viewport and renders then see the new value at once).
    self.id_data.update_tag()


def _bend_structure_changed(self, context):
    # mode, axis and pivot change the group's nodes; numbers reach it through drivers
    from .shader_nodes import bend as bend_nodes

    scene = self.id_data
    if bpy.data.node_groups.get(bend_nodes.GROUP_NAME) is not None:
        bend_nodes.sync(scene)


def _strength(name, description):
    return FloatProperty(
        name=name,
        description=description,
        default=0.01,
        min=-core_bend.MAX_STRENGTH,
        max=core_bend.MAX_STRENGTH,
        soft_min=-0.2,
        soft_max=0.2,
        step=0.1,
        precision=4,
        update=_bend_value_changed,
    )


def _spread(name, description):
    return FloatProperty(
        name=name, description=description, default=2.0, min=0.0, soft_max=50.0, subtype="DISTANCE",
        update=_bend_value_changed,
    )


class EnvFXBendSettings(PropertyGroup):
    enabled: BoolProperty(
        name="Enabled",
        description="Bend every bent object of the scene (off shows the flat, physical world)",
        default=True,
        update=_bend_value_changed,
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
        update=_bend_value_changed,
    )
    strength: _strength(
        "Strength",
        "How fast the world drops beyond the flat zone (drop = strength * distance^2); negative bends up",
    )
    spread: _spread(
        "Spread",
        "Half-width of the flat zone around the horizon where the world is not bent "
        "(clicks and physics match the picture there)",
    )
    side_strength: _strength("Side Strength", "Strength across the forward axis (Runner, Two Axes)")
    side_spread: _spread("Side Spread", "Half-width of the flat zone across the forward axis (Runner, Two Axes)")


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


# --- Mips -------------------------------------------------------------------------------------------------

from bpy.props import IntProperty, StringProperty  # noqa: E402  (mips)

from .core import mips as core_mips  # noqa: E402

# Blender 5.0 warns about "//" paths unless a path property says it supports them (4.2 has no such option;
# gated on 5.0, the version this was checked on: at worst an in-between version prints that warning)
_MIPS_PATH_OPTIONS = {"PATH_SUPPORTS_BLEND_RELATIVE"} if bpy.app.version >= (5, 0, 0) else set()


class EnvFXMipsSettings(PropertyGroup):
    source: EnumProperty(
        name="Source",
        description="Which images get a coverage-preserving mip chain",
        items=(
            ("ACTIVE", "Active Image", "The image shown in the Image Editor (or the Image below)"),
            ("SELECTED", "Selected Objects", "Every image used by the materials of the selected objects"),
            ("FOLDER", "Folder", "Every image file in a folder"),
        ),
        default="ACTIVE",
    )
    image: PointerProperty(
        name="Image",
        description="Image to bake when no Image Editor shows one (scripts, the 3D viewport panel)",
        type=bpy.types.Image,
    )
    folder: StringProperty(
        name="Input Folder",
        description="Folder whose image files (PNG, TGA, TIFF, JPEG, EXR, ...) are baked",
        subtype="DIR_PATH",
        options=_MIPS_PATH_OPTIONS,
        default="",
    )
    output_dir: StringProperty(
        name="Output Folder",
        description="Where the DDS files, PNG levels, JSON reports and comparison pictures are written",
        subtype="DIR_PATH",
        options=_MIPS_PATH_OPTIONS,
        default="//mips",
    )
    ref: FloatProperty(
        name="Alpha Reference",
        description="The engine's alpha-test value: texels with alpha at or above it are drawn. Each mip's alpha "
        "is scaled so the share passing this test matches the full-size image",
        default=0.5,
        min=0.01,
        max=0.99,
        precision=3,
    )
    alpha_channel: EnumProperty(
        name="Alpha Channel",
        description="Channel holding the alpha-tested value (the others are colour)",
        items=tuple((c, c, f"Coverage is in the {c} channel") for c in core_mips.CHANNELS),
        default="A",
    )
    colour: EnumProperty(
        name="Colour",
        description="How colour channels are filtered",
        items=(
            ("AUTO", "From Image", "sRGB images are filtered in linear light, Non-Color images as plain numbers"),
            ("SRGB", "sRGB", "Filter colour in linear light and write it sRGB-encoded"),
            ("LINEAR", "Linear / Data", "Filter the stored numbers as they are (masks, normal maps)"),
        ),
        default="AUTO",
    )
    preserve: BoolProperty(
        name="Preserve Coverage",
        description="Scale each mip's alpha so alpha-tested foliage keeps its coverage (off: a plain mip chain)",
        default=True,
    )
    formats: EnumProperty(
        name="Formats",
        description="Files to write per image (a JSON coverage report is always written)",
        items=(
            ("DDS", "DDS", "One uncompressed RGBA8 DDS with the full chain"),
            ("PNG", "PNG", "One PNG per mip level"),
        ),
        options={"ENUM_FLAG"},
        default={"DDS", "PNG"},
    )
    compare: BoolProperty(
        name="Comparison Picture",
        description="Also write a picture of every level alpha-tested, naive chain above the preserved one",
        default=True,
    )
    supersample: IntProperty(
        name="Supersample",
        description="Sub-samples per texel and axis when measuring coverage (bilinear, like the GPU)",
        default=4,
        min=1,
        max=core_mips.MAX_SUPERSAMPLE,
    )
    max_memory_gb: FloatProperty(
        name="Memory Limit",
        description="Refuse images whose chain would need more working memory than this (GB)",
        default=core_mips.DEFAULT_MAX_MEMORY_GB,
        min=0.1,
        soft_max=64.0,
    )


# --- Roots ------------------------------------------------------------------------------------------------

class EnvFXSceneSettings(PropertyGroup):
    bend: PointerProperty(type=EnvFXBendSettings)
    mips: PointerProperty(type=EnvFXMipsSettings)


class EnvFXObjectSettings(PropertyGroup):
    bend_exclude: BoolProperty(
        name="Exclude from Bend",
        description="Never bend this object (the write-up's BEND_OFF), even when its collection is bent",
        default=False,
        update=_bend_exclude_changed,
    )


classes = (
    EnvFXBendSettings,
    EnvFXMipsSettings,
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
