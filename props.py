"""All user-facing settings: ``Scene.envfx`` (global) and ``Object.envfx`` (per object)."""

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

from .core import bend as core_bend
from .core import gasgiant as core_gasgiant
from .core import lightmap2d as core_lightmap
from .core import mips as core_mips
from .core import vat as core_vat
from .core import wind as core_wind
from .operators import bend as bend_ops
from .operators.common import PATH_OPTIONS, restore_good_numbers
from .operators.snow import actors as snow_actors
from .operators.snow import trails as snow_trails
from .shader_nodes import bend as bend_nodes
from .shader_nodes import snow as snow_nodes
from .shader_nodes import wind as wind_nodes

# Per-object settings can be changed on a library override (an asset linked into a level) and are saved with it.
OVERRIDABLE = {"LIBRARY_OVERRIDABLE"}


def _report(context, text: str):
    """Tell the user about a refused value from an update callback (no operator to report through): the console,
    and a pop-up where there is a window."""
    print(text)
    window = getattr(context, "window", None) if context is not None else None
    if window is not None and not bpy.app.background:
        context.window_manager.popup_menu(lambda menu, _ctx: menu.layout.label(text=text), title="EnvFX",
                                          icon="ERROR")


def _numbers_checked(update):
    """``update`` run only when every float setting of the group is usable: NaN, inf and enormous numbers (which
    make every vertex of a live effect NaN) are put back to the last good value and reported instead."""
    def checked(self, context):
        refused = restore_good_numbers(self)  # (its restore runs this callback again, with good values)
        if refused:
            _report(context, refused)
            return
        update(self, context)
    checked.__doc__ = update.__doc__
    return checked


# --- Bend -------------------------------------------------------------------------------------------------

@_numbers_checked
def _bend_value_changed(self, context):
    # The group reads these through drivers; a value set from Python does not tag the scene for the
    # dependency graph by itself, so tag it (the viewport and renders then see the new value at once).
    self.id_data.update_tag()


def _bend_structure_changed(self, context):
    # mode, axis and pivot change the group's nodes; numbers reach it through drivers
    bend_nodes.sync(self.id_data)  # a scene that bends nothing yet has no group to change


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
    view_distance: FloatProperty(
        name="View Distance",
        description="How far from the pivot the game draws anything (Export for Game Engines): the culling bounds "
        "it exports hold every bent point this close to the pivot",
        default=100.0, min=0.0, max=core_bend.MAX_DISTANCE, soft_max=1000.0, subtype="DISTANCE",
    )
    tolerance: FloatProperty(
        name="Tolerance",
        description="How far a straight edge between two bent vertices may be from the curve it should follow "
        "(a vertex-shader bend moves vertices only). Add Bend and this panel name the meshes whose edges along "
        "the bend are too long for it",
        default=core_bend.DEFAULT_TOLERANCE, min=1e-4, max=core_bend.MAX_DISTANCE, soft_min=0.001, soft_max=1.0,
        subtype="DISTANCE",
    )
    subdivide: BoolProperty(
        name="Subdivide Coarse Meshes",
        description="Add Bend puts a Simple Subdivision Surface modifier before the bend of a mesh too coarse for the "
        "tolerance, with the levels its edges need (the mesh itself stays untouched; Remove Bend removes it again)",
        default=False,
    )


def _bend_exclude_changed(self, context):
    obj = self.id_data
    for mod in obj.modifiers:
        if mod.type == "NODES" and bend_nodes.is_bend_group(mod.node_group):
            mod.show_viewport = not self.bend_exclude
            mod.show_render = not self.bend_exclude
    bend_ops.sync_readers()  # what reads this object's geometry (terrain follow, snow coverage) follows


# --- Wind -------------------------------------------------------------------------------------------------

@_numbers_checked
def _wind_scene_changed(self, context):
    wind_nodes.sync(self.id_data)  # a scene with nothing in the wind has no group to change


@_numbers_checked
def _wind_object_changed(self, context):
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
        poll=lambda self, obj: obj.type == "MESH",
        update=_wind_scene_changed,
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


# --- Mips -------------------------------------------------------------------------------------------------


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


# --- Light map --------------------------------------------------------------------------------------------


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
        description="Point, spot and area lights to bake (empty: every light of the scene)",
        type=bpy.types.Collection,
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


# --- Gas Giant ---------------------------------------------------------------------------------------------


def _gasgiant_preset_changed(self, context):
    for key, value in core_gasgiant.preset_values(self.preset).items():
        setattr(self, key, value)


_GG_UPDATES = {"preset": _gasgiant_preset_changed}


def _size_items(sizes, none_label=None):
    return tuple((str(s), none_label if (s == 0 and none_label) else str(s), f"{s}") for s in sizes)


def _gasgiant_property(setting):
    """The Blender property of one entry of ``core.gasgiant.SETTINGS``."""
    kw = dict(name=setting.label, description=setting.description)
    kw.update((k, getattr(setting, k)) for k in ("min", "max", "soft_min", "soft_max", "step", "precision")
              if getattr(setting, k) is not None)
    if setting.subtype:
        kw["subtype"] = setting.subtype
    if setting.name in _GG_UPDATES:
        kw["update"] = _GG_UPDATES[setting.name]
    kind = setting.ui
    if kind == "SIZE":
        return EnumProperty(items=_size_items(setting.items, setting.none_label), default=str(setting.default), **kw)
    if kind == "ENUM":
        return EnumProperty(items=setting.items, default=setting.default, **kw)
    if kind == "COLOR":
        return FloatVectorProperty(size=3, default=setting.default, **kw)
    if kind in ("FILE_PATH", "DIR_PATH"):
        return StringProperty(default=setting.default, subtype=kind, options=PATH_OPTIONS, **kw)
    prop = {"INT": IntProperty, "FLOAT": FloatProperty, "BOOL": BoolProperty, "STRING": StringProperty}[kind]
    return prop(default=setting.default, **kw)


_GG_PROPERTIES = {setting.name: _gasgiant_property(setting) for setting in core_gasgiant.UI_SETTINGS}


class EnvFXGasGiantSettings(PropertyGroup):
    """The gas giant settings: one property per entry of ``core.gasgiant.SETTINGS`` that has a ``ui``, made from
    it (name, tooltip, default, limits)."""

    # Text, as every annotation in this file is (``from __future__ import annotations``): Blender evaluates it here
    # when it registers the class. (Property objects kept in the class made Blender 4.2 crash when Python exits.)
    __annotations__ = {name: f"_GG_PROPERTIES[{name!r}]" for name in _GG_PROPERTIES}


# --- Snow -------------------------------------------------------------------------------------------------

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


# --- Vertex animation textures -----------------------------------------------------------------------------


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


# --- Roots ------------------------------------------------------------------------------------------------

class EnvFXSceneSettings(PropertyGroup):
    bend: PointerProperty(type=EnvFXBendSettings)
    wind: PointerProperty(type=EnvFXWindSettings)
    mips: PointerProperty(type=EnvFXMipsSettings)
    gasgiant: PointerProperty(type=EnvFXGasGiantSettings)
    snow: PointerProperty(type=EnvFXSnowSettings)
    lightmap: PointerProperty(type=EnvFXLightmapSettings)
    vat: PointerProperty(type=EnvFXVatSettings)


class EnvFXObjectSettings(PropertyGroup):
    bend_exclude: BoolProperty(
        name="Exclude from Bend",
        description="Never bend this object (the write-up's BEND_OFF), even when its collection is bent",
        default=False,
        update=_bend_exclude_changed,
        override=OVERRIDABLE,
    )
    wind: PointerProperty(type=EnvFXObjectWindSettings, override=OVERRIDABLE)
    snow: PointerProperty(type=EnvFXSnowObjectSettings, override=OVERRIDABLE)


classes = (
    EnvFXBendSettings,
    EnvFXWindSettings,
    EnvFXObjectWindSettings,
    EnvFXMipsSettings,
    EnvFXGasGiantSettings,
    EnvFXSnowSettings,
    EnvFXSnowObjectSettings,
    EnvFXLightmapSettings,
    EnvFXVatSettings,
    EnvFXSceneSettings,
    EnvFXObjectSettings,
)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Scene.envfx = PointerProperty(type=EnvFXSceneSettings)
    bpy.types.Object.envfx = PointerProperty(type=EnvFXObjectSettings, override=OVERRIDABLE)


def unregister():
    del bpy.types.Object.envfx
    del bpy.types.Scene.envfx
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
