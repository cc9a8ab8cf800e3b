"""Vertex animation texture panel: a sub-panel of the 3D viewport's EnvFX tab. draw() only reads state."""

import bpy

from .. import bridge
from ..operators import common as ops_common
from .main import EnvFXSubPanel


class VIEW3D_PT_envfx_vat(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "Vertex Animation Textures"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = bridge.panel_layout(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        s = bridge.envfx_settings(bridge.context_scene(context)).vat
        col = layout.column(align=True)
        col.prop(s, "frame_start")
        sub = col.column(align=True)
        sub.active = not s.loop
        sub.prop(s, "frame_end")
        col.prop(s, "step")
        col = layout.column()
        col.prop(s, "loop")
        sub = col.column()
        sub.active = s.loop
        sub.prop(s, "loop_frames")
        col = layout.column()
        col.prop(s, "encoding")
        col.prop(s, "normals")
        col.prop(s, "engine")
        if s.encoding == "PNG16" and s.engine == "GODOT":  # (core.vat.settings_warning: the bake says it in full)
            col.label(text="Godot reads 16-bit PNGs as 8 bits: bake EXR", icon="ERROR")
        col.prop(s, "attributes")
        col.prop(s, "max_size")
        col.prop(s, "compress")
        sub = col.column()
        sub.active = s.engine != "BLENDER"
        sub.prop(s, "export_mesh")
        col.prop(s, "output_dir")
        selected = [o for o in (getattr(context, "selected_objects", None) or ()) if o.type == "MESH"]
        if not selected:
            layout.label(text="Select the animated meshes to bake", icon="INFO")
        for obj in selected:  # (turned off as the file opened, still off: the console names the file and why)
            if ops_common.turned_off_still(obj):
                layout.label(text=f"{obj.name}: a texture is damaged, its player is off: bake again", icon="ERROR")
            elif ops_common.missing_images(obj):  # (the console names the files, as the file opens)
                layout.label(text=f"{obj.name}: its textures are not on disk: bake again", icon="ERROR")
        layout.operator("envfx.vat_bake", icon="RENDER_ANIMATION")


classes = (VIEW3D_PT_envfx_vat,)
