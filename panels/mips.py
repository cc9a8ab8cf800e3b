"""Mip chain panels: the Image Editor sidebar (tab "EnvFX") and a sub-panel of the 3D viewport's EnvFX tab.
draw() only reads state."""

import bpy

from .main import CATEGORY, EnvFXSubPanel


def draw_mips(layout, context, in_image_editor: bool):
    layout.use_property_split = True
    layout.use_property_decorate = False
    s = context.scene.envfx.mips
    col = layout.column()
    col.prop(s, "source")
    if s.source == "ACTIVE":
        image = getattr(context, "edit_image", None) if in_image_editor else None
        if image is not None:
            col.label(text=image.name, icon="IMAGE_DATA")
        else:
            col.prop(s, "image")
    elif s.source == "FOLDER":
        col.prop(s, "folder")
    col.prop(s, "output_dir")

    col = layout.column()
    col.prop(s, "preserve")
    sub = col.column()
    sub.active = s.preserve
    sub.prop(s, "ref")
    col.prop(s, "alpha_channel")
    col.prop(s, "colour")
    row = col.row(heading="Formats", align=True)
    row.prop(s, "formats")
    sub = col.column()
    sub.active = "DDS" in s.formats
    sub.prop(s, "dds")
    col.prop(s, "compare")
    col.prop(s, "supersample")
    col.prop(s, "max_memory_gb")
    layout.operator("envfx.mips_bake", icon="RENDER_RESULT")


class IMAGE_PT_envfx_mips(bpy.types.Panel):
    bl_space_type = "IMAGE_EDITOR"
    bl_region_type = "UI"
    bl_category = CATEGORY
    bl_label = "Mip Chains (Alpha Coverage)"

    def draw(self, context):
        draw_mips(self.layout, context, in_image_editor=True)


class VIEW3D_PT_envfx_mips(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "Mip Chains (Alpha Coverage)"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        draw_mips(self.layout, context, in_image_editor=False)


classes = (IMAGE_PT_envfx_mips, VIEW3D_PT_envfx_mips)
