"""Farm sub-panel: write the scene's bakes as Open Job Description jobs (operators/farm.py). draw() only reads state."""

import bpy

from .. import bridge
from .main import EnvFXSubPanel


class VIEW3D_PT_envfx_farm(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "Render Farm"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = bridge.panel_layout(self)
        col = layout.column(align=True)
        col.label(text="The light map, snow buffer, VAT of the selected", icon="INFO")
        col.label(text="meshes and mips of a folder, as OpenJD jobs")
        if not bpy.data.filepath or (bpy.data.is_dirty and not bpy.app.background):
            row = layout.row()
            row.alert = True
            row.label(text="Save the file first: the farm opens the saved file", icon="ERROR")
        layout.operator("envfx.farm_write", icon="NETWORK_DRIVE")


classes = (VIEW3D_PT_envfx_farm,)
