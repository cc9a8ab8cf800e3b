"""Vertex animation texture settings: ``Scene.envfx.vat``."""

from __future__ import annotations

from bpy.props import (
    BoolProperty,
    EnumProperty,
    IntProperty,
    StringProperty,
)
from bpy.types import PropertyGroup

from ..core import vat as core_vat
from ..operators.common import PATH_OPTIONS


class EnvFXVatSettings(PropertyGroup):
    frame_start: IntProperty(
        name="Start Frame",
        description="First frame baked",
        default=1,
    )
    frame_end: IntProperty(
        name="End Frame",
        description="Last frame baked (included; without a loop)",
        default=250,
    )
    step: IntProperty(
        name="Frame Step",
        description="Bake every n-th frame: fewer texture rows, the game plays the frames at fps / step",
        default=1,
        min=1,
        soft_max=10,
    )
    loop: BoolProperty(
        name="Loop",
        description="Bake a seamless loop: the frames from Start Frame for Loop Frames frames, leaving out the last "
        "one, which is the first again (the End Frame is not used)",
        default=False,
    )
    loop_frames: IntProperty(
        name="Loop Frames",
        description="Length of the loop in frames (for EnvFX wind: its Loop Frames setting); a multiple of the "
        "Frame Step",
        default=48,
        min=2,
    )
    encoding: EnumProperty(
        name="Encoding",
        description="How the textures store the numbers",
        items=(
            ("EXR16", "EXR Half", "16-bit float EXR: half the size of EXR Float, about 3 significant digits"),
            ("EXR32", "EXR Float", "32-bit float EXR: exact"),
            ("PNG16", "PNG 16-bit", "16-bit PNG through a stored remap range (min, max per channel in the JSON)"),
        ),
        default="EXR32",
    )
    normals: EnumProperty(
        name="Normals",
        description="Whether and how the normals of every frame are baked",
        items=(
            ("TEXTURE", "Texture", "A separate normal texture of the same layout"),
            ("PACKED", "Packed", "Octahedral normals packed into the position texture's alpha (EXR Float, PNG)"),
            ("NONE", "None", "No normals (the game recomputes or keeps the rest normals)"),
        ),
        default="TEXTURE",
    )
    engine: EnumProperty(
        name="Engine",
        description="Axes and units of the textures, and the proxy mesh's export format",
        items=(
            ("BLENDER", "Blender", "Blender's object space (Z up) and units; no mesh export"),
            ("GODOT", "Godot", "glTF axes (x, z, -y), metres; the proxy is written as .glb"),
            ("UNITY", "Unity", "FBX axes (-x, z, -y), metres; the proxy is written as .fbx"),
            ("UNREAL", "Unreal", "FBX axes (x, -y, z), centimetres; the proxy is written as .fbx"),
        ),
        default="BLENDER",
    )
    attributes: StringProperty(
        name="Extra Attributes",
        description="Point or corner attributes to bake per frame too, comma-separated (e.g. EnvFX_Wind, the wind "
        "colour); each gets its own texture",
        default="",
    )
    max_size: IntProperty(
        name="Maximum Texture Size",
        description="Largest texture side the engine takes: long vertex counts wrap into rows within it, and a bake "
        "that does not fit is refused",
        default=core_vat.MAX_TEXTURE_SIZE,
        min=16,
        max=16384,
    )
    export_mesh: BoolProperty(
        name="Export Mesh",
        description="Write the proxy mesh with its EnvFX_VAT UV map for the engine (.glb for Godot, .fbx for Unity "
        "and Unreal)",
        default=True,
    )
    compress: BoolProperty(
        name="Compress",
        description="Deflate the textures (EXR ZIP, PNG level 1): about a third smaller, but encoding a large bake "
        "then takes several times as long as evaluating its frames",
        default=False,
    )
    output_dir: StringProperty(
        name="Output Folder",
        description="Where the textures, the JSON file and the proxy mesh are written",
        subtype="DIR_PATH",
        options=PATH_OPTIONS,
        default="//vat",
    )
