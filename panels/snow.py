"""Snow sub-panel: cover generation, live trails, interaction buffer bake. draw() only reads state."""

import bpy

from .. import bridge
from ..operators.snow import trails as snow_trails
from ..shader_nodes import snow as snow_nodes
from .main import EnvFXSubPanel


class VIEW3D_PT_envfx_snow(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "Snow"

    def draw(self, context):
        layout = bridge.panel_layout(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        s = bridge.envfx_settings(bridge.context_scene(context)).snow

        box = layout.box()
        box.label(text="Snow Cover", icon="FREEZE")
        col = box.column()
        for prop in ("spacing", "thickness", "max_slope", "border_width", "drift", "drift_direction", "noise",
                     "noise_scale", "seed", "lods", "vertex_budget"):
            col.prop(s, prop)
        obj = context.active_object
        if obj is not None and obj.type == "MESH":
            col.prop_search(s, "density_mask", obj, "vertex_groups")
        else:
            col.prop(s, "density_mask")
        col.template_ID(s, "density_texture", open="image.open")
        box.operator("envfx.snow_generate", icon="ADD")

        box = layout.box()
        box.label(text="Live Trails", icon="MOD_DISPLACE")
        col = box.column()
        col.prop(s, "trails_engine")
        col.prop(s, "actors")
        col.prop(s, "occluders")
        for prop in ("rim_height", "rim_width", "fade_height", "refill_rate", "camera_fade_start",
                     "camera_fade_end", "coverage_melt_time"):
            col.prop(s, prop)
        col.prop(s, "puffs")
        sub = col.column()
        sub.active = s.puffs
        for prop in ("puff_rate", "puff_speed", "puff_lifetime", "puff_size"):
            sub.prop(s, prop)
        _trails_status(box, s)
        row = box.row(align=True)
        row.operator("envfx.snow_trails_add", icon="ADD")
        row.operator("envfx.snow_trails_remove", icon="REMOVE", text="Remove")
        box.operator("envfx.snow_trails_simulate", icon="PLAY")  # so renders show the trails

        box = layout.box()
        box.label(text="Interaction Buffer", icon="TEXTURE")
        col = box.column()
        col.prop(s, "framing")
        if s.framing == "FOLLOW":
            col.prop(s, "pivot")
            col.prop(s, "buffer_size")
        col.prop(s, "buffer_resolution")
        row = col.row(align=True)
        row.prop(s, "frame_start")
        row.prop(s, "frame_end")
        col.prop(s, "sequence")
        col.prop(s, "output_dir")
        box.operator("envfx.snow_bake_buffer", icon="RENDER_ANIMATION")
        row = box.row(align=True)
        row.operator("envfx.snow_drive_from_bake", icon="IMAGE_DATA").use_bake = True
        row.operator("envfx.snow_drive_from_bake", text="Live Trails", icon="MOD_DISPLACE").use_bake = False
        box.operator("envfx.snow_water_ripples", icon="MOD_WAVE")
        box.operator("envfx.snow_export_engines", icon="EXPORT")

        obj = context.active_object
        if obj is not None and hasattr(obj, "envfx"):
            box = layout.box()
            box.label(text=f"{obj.name} as an actor", icon="OBJECT_DATA")
            box.prop(bridge.envfx_settings(obj).snow, "radius")
            box.prop(bridge.envfx_settings(obj).snow, "depth")


def _trails_status(layout, s):
    """What the live trails do now: they follow the actor collection by themselves (handlers.py); settings the
    Numpy engine cannot run."""
    unsupported = snow_trails.numpy_unsupported(s.id_data)
    if unsupported is not None:
        layout.label(text=unsupported, icon="ERROR")
    tree = snow_nodes.group_for(s.id_data)
    if tree is None or tree.users == 0:
        return
    n = len(tree.get(snow_nodes.KEYS_KEY) or {})
    col = layout.column(align=True)
    if n:
        col.label(text=f"Trails follow {n} actor(s) of {s.actors.name if s.actors else 'no collection'}",
                  icon="CHECKMARK")
        col.label(text="Actors added, removed or resized apply at the next frame")
    else:
        col.label(text="No usable actor in the collection: nothing stamps", icon="ERROR")


classes = (VIEW3D_PT_envfx_snow,)
