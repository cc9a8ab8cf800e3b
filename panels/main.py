"""The parent panel of the EnvFX sidebar tab."""

import bpy

CATEGORY = "EnvFX"
PARENT_ID = "VIEW3D_PT_envfx"


class VIEW3D_PT_envfx(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY
    bl_label = "EnvFX"

    def draw(self, context):
        layout = self.layout
        layout.label(text="Game effects for the viewport and bakes", icon="WORLD")


class EnvFXSubPanel:
    """Base for feature sub-panels: sits under the EnvFX parent panel."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY
    bl_parent_id = PARENT_ID


classes = (VIEW3D_PT_envfx,)
