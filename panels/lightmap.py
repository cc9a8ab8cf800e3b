"""2D light map panel: a sub-panel of the 3D viewport's EnvFX tab. draw() only reads state."""

import bpy

from .. import bridge
from .main import EnvFXSubPanel


class VIEW3D_PT_envfx_lightmap(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "2D Light Map"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = bridge.panel_layout(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        s = bridge.envfx_settings(bridge.context_scene(context)).lightmap
        col = layout.column()
        col.prop(s, "ground")
        col.prop(s, "obstacles")
        if s.obstacles is None:
            col.label(text="Obstacles: the selected objects", icon="INFO")
        col.prop(s, "lights")
        col.prop(s, "output_dir")
        col = layout.column()
        col.prop(s, "resolution")
        col.prop(s, "penumbra_samples")
        col.prop(s, "falloff")
        col.prop(s, "smoothing")
        sub = col.column()
        sub.active = s.smoothing != "NONE"
        sub.prop(s, "smoothing_levels")
        col.prop(s, "occlusion_distance")
        sub = col.column()
        sub.active = s.occlusion_distance > 0
        sub.prop(s, "occlusion_strength")
        col.prop(s, "apply_to_ground")
        col.prop(s, "vertex_colours")
        col.prop(s, "light_circles")
        layout.operator("envfx.lightmap_bake", icon="LIGHT_SUN")
        layout.operator("envfx.lightmap_actor_shadows", icon="MOD_OPACITY")
        col = layout.column()
        col.prop(s, "lens_dirt")
        col.prop(s, "lens_strength")
        col.prop(s, "lens_threshold")
        layout.operator("envfx.lightmap_dirty_lens", icon="NODE_COMPOSITING")


classes = (VIEW3D_PT_envfx_lightmap,)
