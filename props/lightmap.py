"""Light map settings: ``Scene.envfx.lightmap``."""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)
from bpy.types import PropertyGroup

from ..core import lightmap2d as core_lightmap
from ..operators.common import PATH_OPTIONS


def _lights_changed(self, context):
    from ..operators import lightmap as lightmap_ops  # (the operators import the settings' module)

    lightmap_ops.follow_lights_setting(self.id_data)


class EnvFXLightmapSettings(PropertyGroup):
    ground: PointerProperty(
        name="Ground",
        description="The ground the light map lies on: its world-space bounds seen from above are the map's region, "
        "and its material shows the map",
        type=bpy.types.Object,
    )
    obstacles: PointerProperty(
        name="Obstacles",
        description="Walls and props that cast shadows, seen from above (empty: the selected objects)",
        type=bpy.types.Collection,
    )
    lights: PointerProperty(
        name="Lights",
        description="Point, spot and area lights to bake (empty: every light of the scene), and whose actor shadows "
        "are cast",
        type=bpy.types.Collection,
        update=_lights_changed,
    )
    resolution: IntProperty(
        name="Resolution",
        description="Texels along the longest side of the region",
        default=512, min=1, max=core_lightmap.MAX_RESOLUTION, soft_max=4096,
    )
    penumbra_samples: IntProperty(
        name="Penumbra Samples",
        description="Shadow passes per light, the light moved over its size (its Radius, an area light's Size): "
        "more give smoother soft shadows. 1: hard shadows",
        default=8, min=1, max=core_lightmap.MAX_SAMPLES,
    )
    falloff: EnumProperty(
        name="Falloff",
        description="How light fades with distance",
        items=(
            ("PHYSICAL", "Physical", "Inverse square with the light's height and the ground's cosine, as Cycles "
             "computes it"),
            ("SMOOTH", "Smooth", "The write-up's gradient circle: (1 - r/R)^2 out to the light's radius (its Custom "
             "Distance, else where the physical light fades to 1/1000)"),
        ),
        default="PHYSICAL",
    )
    smoothing: EnumProperty(
        name="Smoothing",
        description="Softening of the finished map",
        items=(
            ("NONE", "None", "The map as baked"),
            ("MIPS", "Mips", "Day 3: the map blended with copies at 1/2, 1/4, ... size stretched back"),
            ("BLUR", "Blur", "A plain blur"),
        ),
        default="NONE",
    )
    smoothing_levels: IntProperty(
        name="Levels",
        description="Smaller copies blended in (Mips); the blur's radius grows with it too (Blur)",
        default=3, min=1, max=8,
    )
    occlusion_distance: FloatProperty(
        name="Occlusion Distance",
        description="Day 4: the ground darkens within this distance of a wall (0: off)",
        default=0.0, min=0.0, soft_max=5.0, subtype="DISTANCE",
    )
    occlusion_strength: FloatProperty(
        name="Occlusion Strength",
        description="How dark the ground gets right at a wall (1: black)",
        default=0.5, min=0.0, max=1.0, subtype="FACTOR",
    )
    light_circles: BoolProperty(
        name="Light Circles",
        description="Also write lightmap_circles.exr: every light's circle without shadows, the buffer a game lays "
        "over its lens-dirt texture (Day 6)",
        default=False,
    )
    vertex_colours: BoolProperty(
        name="Vertex Colours",
        description="Day 1: merge the light into a vertex colour attribute (EnvFX Light) of the obstacle meshes",
        default=False,
    )
    apply_to_ground: BoolProperty(
        name="Show on Ground",
        description="Multiply the ground material's base colour by the baked map (visible in Eevee at once)",
        default=True,
    )
    lens_dirt: PointerProperty(
        name="Lens Dirt",
        description="Dirty lens: the dirt texture laid over bright parts of the picture (empty: a generated one)",
        type=bpy.types.Image,
    )
    lens_strength: FloatProperty(
        name="Lens Strength", description="Dirty lens: how strongly the dirt lights up over the brightest parts",
        default=0.8, min=0.0, soft_max=4.0,
    )
    lens_threshold: FloatProperty(
        name="Lens Threshold", description="Dirty lens: brightness (of a blurred copy of the picture) where the dirt "
        "starts to show", default=0.6, min=0.0, soft_max=4.0,
    )
    baked_region: FloatVectorProperty(
        name="Baked Region",
        description="x_min, y_min, x_max, y_max of the last bake (read by the actors' shadows)",
        size=4, default=(0.0, 0.0, 0.0, 0.0), options={"HIDDEN"},
    )
    baked_ground_z: FloatProperty(
        name="Baked Ground Height", description="z of the ground at the last bake", default=0.0,
        options={"HIDDEN"},
    )
    output_dir: StringProperty(
        name="Output Folder",
        description="Where lightmap.exr, lightmap.png and lightmap.json are written",
        subtype="DIR_PATH",
        options=PATH_OPTIONS,
        default="//lightmap",
    )
