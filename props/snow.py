"""Snow settings: ``Scene.envfx.snow`` and ``Object.envfx.snow``."""

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

from ..operators.common import PATH_OPTIONS
from ..operators.snow import actors as snow_actors
from ..operators.snow import trails as snow_trails
from ..shader_nodes import snow as snow_nodes
from .common import OVERRIDABLE, _numbers_checked


@_numbers_checked
def _snow_value_changed(self, context):
    # the trails group reads these through drivers; a value set from Python does not tag the scene for the
    # dependency graph by itself, so tag it
    self.id_data.update_tag()


def _snow_trails_changed(self, context):
    # the actors/occluders collections change the trails group's nodes
    scene = self.id_data
    if snow_trails.scene_has_trails(scene):  # another scene's trails keep their actors and settings
        try:
            snow_nodes.ensure_trails(scene, snow_actors.actor_specs(scene)[0])
        except ValueError:
            pass


def _snow_engine_changed(self, context):
    # the trails group shows the chosen engine's display (a value set, not driven: see snow_nodes.set_engine)
    scene = self.id_data
    if snow_nodes.set_engine(scene):
        scene.update_tag()


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
    trails_engine: EnumProperty(
        name="Trails Engine",
        description="What keeps the live trails' state from frame to frame",
        items=(("SIMULATION", "Simulation Zone", "A geometry-nodes simulation zone (every feature: puffs and "
                "occluders too); its per-frame cost grows as the trails spread over the shot"),
               ("NUMPY", "Numpy", "A frame handler holds the trails in numpy and writes them into the snow mesh "
                "(attribute snow_trail): a frame costs about the same all through the shot; scrubbing back, a "
                "reopened file or a render of any frame give what playing through gave. No puffs or occluders")),
        default="SIMULATION",
        update=_snow_engine_changed,
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
        name="Refill Rate", description="How fast trails fill up again, per second: a trail keeps about e^-rate "
        "of its depth each second (1: 37% left after a second, 63% filled; 0 = trails stay)",
        default=0.0, min=0.0, soft_max=2.0,
        update=_snow_value_changed,
    )
    coverage_melt_time: FloatProperty(
        name="Coverage Melt Time",
        description="Seconds the snow layer on an actor (attribute snow_coverage) takes to melt away after the "
        "actor leaves the snow (0 = only while in the snow)",
        default=3.0, min=0.0, soft_max=30.0, subtype="TIME_ABSOLUTE", unit="TIME_ABSOLUTE",
        update=_snow_value_changed,
    )
    puffs: BoolProperty(
        name="Snow Puffs", description="Where an actor pushes the snow down, throw up puffs of snow that fall back "
        "and vanish (the live trails; off by default: they cost a little per frame)",
        default=False, update=_snow_value_changed,
    )
    puff_rate: FloatProperty(
        name="Puff Rate", description="Chance that a snow vertex pushed down in a frame throws a puff",
        default=0.3, min=0.0, max=1.0, subtype="FACTOR", update=_snow_value_changed,
    )
    puff_speed: FloatProperty(
        name="Puff Speed", description="Launch speed of a puff (random 50-100 %, mostly upwards)",
        default=1.5, min=0.0, soft_max=10.0, unit="VELOCITY", update=_snow_value_changed,
    )
    puff_lifetime: FloatProperty(
        name="Puff Lifetime", description="Seconds a puff lives, shrinking to nothing",
        default=0.8, min=0.01, soft_max=5.0, subtype="TIME_ABSOLUTE", unit="TIME_ABSOLUTE",
        update=_snow_value_changed,
    )
    puff_size: FloatProperty(
        name="Puff Size", description="Radius of a puff when it is thrown up",
        default=0.04, min=0.0, soft_max=1.0, subtype="DISTANCE", update=_snow_value_changed,
    )
    camera_fade_start: FloatProperty(
        name="Camera Fade Start",
        description="Up to this distance from the active camera the snow is shown in full, trails and all; "
                    "farther it sinks towards the ground (display only: the trails and the bake are unchanged)",
        default=50.0, min=0.0, subtype="DISTANCE",
        update=_snow_value_changed,
    )
    camera_fade_end: FloatProperty(
        name="Camera Fade End",
        description="Beyond this distance from the active camera the snow lies flat on the ground (2% of its "
                    "thickness stays), so deep snow far away hides no small objects. No active camera: no fade",
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
        name="Output Folder", description="Folder the EXR images and the JSON metadata are written to; '//' is the "
        ".blend file's folder",
        default="", subtype="DIR_PATH", options=PATH_OPTIONS,
    )


@_numbers_checked
def _snow_actor_changed(self, context):
    # the live trails follow the actors' sizes (handlers.py: measured again at the next update)
    snow_trails.forget_followed()


class EnvFXSnowObjectSettings(PropertyGroup):
    radius: FloatProperty(
        name="Snow Radius", description="Radius of the trail this actor carves (0 = from its size)",
        default=0.0, min=0.0, subtype="DISTANCE", update=_snow_actor_changed, override=OVERRIDABLE,
    )
    depth: FloatProperty(
        name="Snow Depth", description="How deep this actor pushes the snow (0 = half its radius)",
        default=0.0, min=0.0, subtype="DISTANCE", update=_snow_actor_changed, override=OVERRIDABLE,
    )
