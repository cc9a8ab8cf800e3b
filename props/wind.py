"""Wind settings: ``Scene.envfx.wind`` and ``Object.envfx.wind``."""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
)
from bpy.types import PropertyGroup

from ..core import wind as core_wind
from ..shader_nodes import wind as wind_nodes
from ..shader_nodes import wind_gpu, wind_rigid
from .common import OVERRIDABLE, _numbers_checked


@_numbers_checked
def _wind_scene_changed(self, context):
    wind_nodes.sync(self.id_data)  # a scene with nothing in the wind has no group to change
    wind_rigid.keep_in_sync(self.id_data)  # (its wind object)
    wind_gpu.sync_scene(self.id_data)  # (its grass push)


@_numbers_checked
def _wind_object_changed(self, context):
    wind_nodes.sync_object(self.id_data)
    wind_rigid.sync_prop(self.id_data)
    wind_gpu.sync_object(self.id_data)


def _poll_wind_field(self, obj):
    return obj.field is not None and obj.field.type == "WIND"


def _poll_terrain(self, obj):  # a function: the stubs type a lambda's object as an ID, which has no type
    return obj.type == "MESH"


def _poll_push_buffer(self, image):
    return wind_nodes.is_buffer_image(image)


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
        description="Wind strength (1 = a strong breeze; 0 = still air: nothing moves, grass included)",
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
        description="Grass ambient motion (figure-eight sway and wobble along the normal), driven by the wind at "
        "each clump: about 80% of the grass's motion at 1; 0 turns it off",
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
        poll=_poll_terrain,
        update=_wind_scene_changed,
    )
    # grass that actors push (the baked interaction buffer's G and A)
    grass_push: BoolProperty(
        name="Grass Push",
        description="Actors push the grass down and away, and it wobbles back: the grass reads the baked "
        "interaction buffer's grass channels (G sway, A push-down) at each blade's root. Turned on by Push Grass, "
        "which checks there is a buffer",
        default=False, update=_wind_scene_changed,
    )
    push_buffer: PointerProperty(
        name="Push Buffer",
        description="The baked interaction buffer (its image, as Use Baked Buffer loaded it) whose grass channels "
        "push the grass",
        type=bpy.types.Image,
        poll=_poll_push_buffer,
        update=_wind_scene_changed,
    )
    push_strength: FloatProperty(
        name="Push Strength",
        description="How far a full push-down (A = 1) leans a blade away from the actor: its tip's sideways "
        "distance per unit of its height before the turn (2.5: about 68 degrees down)",
        default=2.5, min=0.0, soft_max=6.0, max=100.0, update=_wind_scene_changed,
    )
    push_sway: FloatProperty(
        name="Push Sway",
        description="How far the wobble after a nudge (G, between 1 and -1) leans a blade, per unit of its height",
        default=0.6, min=0.0, soft_max=3.0, max=100.0, update=_wind_scene_changed,
    )
    # bake settings
    ao_samples: IntProperty(
        name="AO Samples",
        description="Ray directions (at least 16) for the ambient occlusion baked into the alpha channel: "
        "occlusion by the asset itself, the ground under its base included (0 = no AO, alpha is 1)",
        default=16, min=0, soft_max=256, max=core_wind.MAX_AO_SAMPLES,
    )
    leaf_size: FloatProperty(
        name="Leaf Size",
        description="Islands standing on the ground at least this fraction of the asset height are stems with "
        "their own roots; smaller ones hang from the plant (leaves are the islands nothing hangs from)",
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
    height_uv: BoolProperty(
        name="Height UV Map",
        description="Also write the height gradient into the U of a UV map EnvFX_Height_UV (V is 0): FBX and glTF "
        "export UV maps, not float attributes, so a game gets the height this way. Off: no such UV map (a bake "
        "removes one it made before)",
        default=True,
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
        default="TREE", update=_wind_object_changed, override=OVERRIDABLE,
    )
    rigidity: FloatProperty(name="Rigidity", description="Divides all wind motion of this asset (2 = half as much)",
                            default=1.0, min=0.01, soft_max=10.0, max=100.0, update=_wind_object_changed,
                            override=OVERRIDABLE)
    bend: FloatProperty(name="Bend", description="Branch motion along the wind", default=1.0, soft_min=0.0,
                        soft_max=3.0, min=-10.0, max=10.0, update=_wind_object_changed, override=OVERRIDABLE)
    sway: FloatProperty(name="Sway", description="Branch motion across the wind", default=1.0, soft_min=0.0,
                        soft_max=3.0, min=-10.0, max=10.0, update=_wind_object_changed, override=OVERRIDABLE)
    lift: FloatProperty(name="Lift", description="Branch motion up and down", default=1.0, soft_min=0.0,
                        soft_max=3.0, min=-10.0, max=10.0, update=_wind_object_changed, override=OVERRIDABLE)
    micro: FloatProperty(name="Micro", description="Leaf flutter (3D noise moving the leaves, driven by R)",
                         default=1.0, min=0.0, soft_max=3.0, max=10.0, update=_wind_object_changed,
                         override=OVERRIDABLE)
    ramp: FloatProperty(name="Ramp", description="Respond earlier at low wind speeds (0 = linear; 3 = four times "
                        "the response at light wind, same at full wind)", default=0.0, min=0.0, soft_max=10.0,
                        max=100.0, update=_wind_object_changed, override=OVERRIDABLE)
    main_bend: BoolProperty(name="Main Bend", description="Bend the whole asset with height (plants can switch "
                            "it off)", default=True, update=_wind_object_changed, override=OVERRIDABLE)
    asset_height: FloatProperty(name="Asset Height", description="Height of the asset, set by the wind-data bake "
                                "(scales every motion)", default=1.0, min=0.0, subtype="DISTANCE",
                                update=_wind_object_changed, override=OVERRIDABLE)
    rigid: BoolProperty(
        name="Rigid Sway",
        description="Sway the whole object about its origin (drivers on its delta rotation X and Y, no modifier): "
        "for many small props, whose wind then costs a level far less per frame. No bend, branch or leaf motion; "
        "any object type; needs no wind-data bake. Add Wind puts the object in the wind this way (and switches an "
        "object already in the wind)",
        default=False, override=OVERRIDABLE)
    gpu: BoolProperty(
        name="Wind on GPU",
        description="Move the object in its materials (vertex displacement that Eevee and Cycles draw, as a game's "
        "vertex shader does) instead of by a modifier: a frame change then costs the CPU almost nothing, however "
        "many vertices. Needs baked wind data and materials; not for grass that follows a terrain object. The Solid "
        "viewport and anything that reads the geometry see the object still. Add Wind puts the object in the wind "
        "this way (and switches an object already in the wind)",
        default=False, override=OVERRIDABLE)
    # (rigid sway's record, set by Add Wind: the world XY the prop stood at, its delta rotation before, and for a
    # prop under a turned parent the matrix that takes a world turn to its delta rotation's axes)
    rigid_origin: FloatVectorProperty(size=2, default=(0.0, 0.0), options={"HIDDEN"}, override=OVERRIDABLE)
    rigid_base: FloatVectorProperty(size=3, default=(0.0, 0.0, 0.0), subtype="EULER", options={"HIDDEN"},
                                    override=OVERRIDABLE)
    rigid_framed: BoolProperty(default=False, options={"HIDDEN"}, override=OVERRIDABLE)
    rigid_frame: FloatVectorProperty(size=9, default=(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0),
                                     options={"HIDDEN"}, override=OVERRIDABLE)
