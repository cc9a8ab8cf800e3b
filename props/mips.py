"""Coverage-preserving mips settings: ``Scene.envfx.mips``."""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)
from bpy.types import PropertyGroup

from ..core import mips as core_mips
from ..operators.common import PATH_OPTIONS


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
        options=PATH_OPTIONS,
        default="",
    )
    output_dir: StringProperty(
        name="Output Folder",
        description="Where the DDS files, PNG levels, JSON reports and comparison pictures are written",
        subtype="DIR_PATH",
        options=PATH_OPTIONS,
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
            ("DDS", "DDS", "One DDS with the full chain (RGBA8, BC1, BC3, BC4 or BC7: DDS Texels)"),
            ("PNG", "PNG", "One PNG per mip level"),
        ),
        options={"ENUM_FLAG"},
        default={"DDS", "PNG"},
    )
    dds: EnumProperty(
        name="DDS Texels",
        description="How the DDS file stores its texels",
        items=(
            ("RGBA8", "RGBA8", "Uncompressed: 4 bytes a texel, exactly the chain's levels"),
            ("BC1", "BC1 (DXT1)", "Block-compressed, half a byte a texel: colour in 5:6:5 bits per 4 x 4 block, alpha "
             "0 or 1, cut at the Alpha Reference (alpha-tested foliage); width and height multiples of 4"),
            ("BC3", "BC3 (DXT5)", "Block-compressed, 1 byte a texel: colour as BC1, alpha in 8 steps per 4 x 4 block; "
             "width and height multiples of 4"),
            ("BC4", "BC4", "Block-compressed, half a byte a texel: the coverage channel alone (a mask), 8 steps per "
             "4 x 4 block, read as red; width and height multiples of 4"),
            ("BC7", "BC7", "Block-compressed, 1 byte a texel: finer colour and alpha than BC3 (per 4 x 4 block the "
             "best of three BC7 modes), the coverage in any channel; width and height multiples of 4"),
        ),
        default="RGBA8",
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
