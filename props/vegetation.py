"""Vegetation look settings: ``Scene.envfx.vegetation`` (the colorize set, world data and region, the vegetation
shading) and the two per-object colorize settings that live on ``Object.envfx`` itself (``colorize_band``,
``colorize_per_vertex``): the shader reads them as Object attributes by their path, which must be one level
deep."""

from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty, IntProperty, PointerProperty
from bpy.types import PropertyGroup

from ..core import colorize as core_colorize
from ..shader_nodes import colorize as colorize_nodes
from ..shader_nodes import vegetation as vegetation_nodes
from .common import OVERRIDABLE, _numbers_checked


@_numbers_checked
def _scene_changed(self, context):
    """Rebuild the groups materials use (in place: their links stay) when there are any."""
    scene = self.id_data
    if bpy.data.node_groups.get(colorize_nodes.GROUP_NAME) is not None:
        colorize_nodes.ensure_colorize(scene)
    if bpy.data.node_groups.get(vegetation_nodes.GROUP_NAME) is not None:
        vegetation_nodes.ensure_vegetation(scene)


def _object_changed(self, context):
    self.id_data.update_tag()  # the shader reads it as an Object attribute: redraw


def _poll_image(self, image):
    return image.type in {"IMAGE", "UV_TEST"}


def colorize_band_property():
    return IntProperty(
        name="Colorize Band", min=0, max=core_colorize.BANDS - 1, default=0, update=_object_changed,
        override=OVERRIDABLE,
        description="Which of the eight rows of the colorize texture colours this object (the artist's choice per "
                    "asset type: grass, bushes, trees...)")


def colorize_per_vertex_property():
    return BoolProperty(
        name="Colorize Per Vertex", default=False, update=_object_changed, override=OVERRIDABLE,
        description="Sample the world data where each part of the object stands (grass: variation across a "
                    "field) instead of once at its origin (one colour per object)")


class EnvFXVegetationSettings(PropertyGroup):
    colorize_set: PointerProperty(
        name="Colorize Set", type=bpy.types.Image, poll=_poll_image, update=_scene_changed,
        description="The colorize textures: 128 x 8 texels per ecotope, ecotopes stacked from the top (New Set "
                    "makes one from the colours below or from an image)")
    world_data: PointerProperty(
        name="World Data", type=bpy.types.Image, poll=_poll_image, update=_scene_changed,
        description="Square grey-scale image laid over the region: its value picks the colour along the colorize "
                    "texture (read as data, its red channel)")
    ecotope_map: PointerProperty(
        name="Ecotope Map", type=bpy.types.Image, poll=_poll_image, update=_scene_changed,
        description="Optional image over the same region whose value picks the ecotope (0 the first, 1 the last); "
                    "without it every asset uses Ecotope")
    ecotope: IntProperty(
        name="Ecotope", min=0, max=core_colorize.MAX_ECOTOPES - 1, default=0, update=_scene_changed,
        description="The ecotope (colorize texture of the set) used where there is no ecotope map")
    region_min: FloatVectorProperty(
        name="Region Corner", size=2, subtype="XYZ", unit="LENGTH", default=(-50.0, -50.0), update=_scene_changed,
        description="The world X and Y of the world-data texture's lower-left corner")
    region_size: FloatProperty(
        name="Region Size", min=0.001, soft_max=10000.0, default=100.0, subtype="DISTANCE", update=_scene_changed,
        description="The width (and depth) of the square region of the world the world-data texture covers")
    set_count: IntProperty(
        name="Ecotopes", min=1, max=core_colorize.MAX_ECOTOPES, default=1,
        description="How many ecotope textures New Set makes")
    colour_1: FloatVectorProperty(name="Colour 1", subtype="COLOR", size=3, min=0.0, max=1.0,
                                  default=(0.18, 0.25, 0.05), description="Colour at world-data value 0")
    colour_2: FloatVectorProperty(name="Colour 2", subtype="COLOR", size=3, min=0.0, max=1.0,
                                  default=(0.25, 0.35, 0.06), description="Colour a third of the way")
    colour_3: FloatVectorProperty(name="Colour 3", subtype="COLOR", size=3, min=0.0, max=1.0,
                                  default=(0.40, 0.38, 0.10), description="Colour two thirds of the way")
    colour_4: FloatVectorProperty(name="Colour 4", subtype="COLOR", size=3, min=0.0, max=1.0,
                                  default=(0.45, 0.30, 0.12), description="Colour at world-data value 1")
    band_spread: FloatProperty(
        name="Band Spread", min=0.0, max=0.9, default=0.35,
        description="How much darker band 0 and lighter band 7 are than the picked colours (New Set)")
    # the vegetation group
    colorize: BoolProperty(
        name="Colorize", default=True, update=_scene_changed,
        description="Colour the vegetation with the colorize set (off: the albedo as it is, times the AO)")
    translucency: FloatProperty(
        name="Translucency", min=0.0, max=1.0, default=0.3, update=_scene_changed,
        description="How much light passes through the leaves (the talk's translucency amount)")
    diffusion: FloatProperty(
        name="Diffusion", min=0.0, max=1.0, default=0.5, update=_scene_changed,
        description="How evenly the light through a leaf spreads: 0 follows the leaf's facing, 1 glows whenever "
                    "the light is behind it (the talk's translucency diffusion)")
    leaf_split: EnumProperty(
        name="Leaf / Bark", default="WIND", update=_scene_changed,
        items=(("WIND", "Wind Data", "Leaves are what the wind bake made leaves (R above 0): bark is not "
                "translucent"),
               ("TEXTURE", "Texture", "A grey-scale texture says where the leaves are (white) and the bark (black)"),
               ("ALL", "All", "Everything is translucent")),
        description="Which parts are translucent (the talk omits translucency on bark)")
    leaf_texture: PointerProperty(
        name="Leaf Texture", type=bpy.types.Image, poll=_poll_image, update=_scene_changed,
        description="Grey-scale leaf mask in the material's UVs (Leaf / Bark: Texture)")
    grass_normal: BoolProperty(
        name="Grass Normals", default=False, update=_scene_changed,
        description="Turn the normals of grass towards the camera (the talk: the view-space normal's Z made "
                    "positive), so cards never look dark from above; applied to objects whose wind category is "
                    "Grass")
