"""Vegetation sub-panel: the colorize set, world data and region; the vegetation shading; the active object's band.
draw() only reads state."""

import bpy

from .. import bridge
from .main import EnvFXSubPanel


class VIEW3D_PT_envfx_vegetation(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "Vegetation"

    def draw(self, context):
        layout = bridge.panel_layout(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        s = bridge.envfx_settings(bridge.context_scene(context)).vegetation

        box = layout.box()
        box.label(text="Colorize", icon="COLOR")
        box.template_ID(s, "colorize_set", open="image.open")
        row = box.row(align=True)
        for name in ("colour_1", "colour_2", "colour_3", "colour_4"):
            row.prop(s, name, text="")
        box.prop(s, "set_count")
        box.prop(s, "band_spread")
        box.operator("envfx.vegetation_new_set", icon="ADD").source = "COLOURS"
        box.template_ID(s, "world_data", open="image.open")
        world = s.world_data
        if world is not None and world.size[0] != world.size[1]:
            box.label(text=f"{world.name} is {world.size[0]} x {world.size[1]}: must be square", icon="ERROR")
        box.prop(s, "region_min")
        box.prop(s, "region_size")
        box.prop(s, "ecotope_map")
        sub = box.column()
        sub.active = s.ecotope_map is None
        sub.prop(s, "ecotope")
        row = box.row(align=True)
        row.operator("envfx.vegetation_colorize_add", icon="ADD")
        row.operator("envfx.vegetation_colorize_remove", icon="REMOVE", text="Remove")
        box.operator("envfx.vegetation_neutralise", icon="IMAGE_ALPHA")

        box = layout.box()
        box.label(text="Vegetation Shading", icon="OUTLINER_OB_FORCE_FIELD")
        box.prop(s, "colorize")
        box.prop(s, "translucency")
        box.prop(s, "diffusion")
        box.prop(s, "leaf_split")
        if s.leaf_split == "TEXTURE":
            box.prop(s, "leaf_texture")
        box.prop(s, "grass_normal")
        row = box.row(align=True)
        row.operator("envfx.vegetation_apply", icon="ADD", text="Apply")
        row.operator("envfx.vegetation_remove", icon="REMOVE", text="Remove")

        obj = context.active_object
        if obj is not None and hasattr(obj, "envfx"):
            box = layout.box()
            box.label(text=obj.name, icon="OBJECT_DATA")
            box.prop(bridge.envfx_settings(obj), "colorize_band")
            box.prop(bridge.envfx_settings(obj), "colorize_per_vertex")


classes = (VIEW3D_PT_envfx_vegetation,)
