"""World Bend sub-panel: scene settings, actions, the active object's opt-out. draw() only reads state."""

import bpy

from .. import bridge
from ..operators import bend as bend_ops
from ..shader_nodes import bend as bend_nodes
from ..shader_nodes import bend_gpu
from .main import EnvFXSubPanel, draw_status, group_status


def status(scene, obj) -> list:
    """(text, is_alert) lines: what the scene's bend does now, and whose bend the active object has."""
    return group_status(scene, obj, bend_nodes.group_for(scene), bend_nodes.is_bend_group,
                        "Nothing bent in this scene yet", "Bends {n} object(s) of this scene (group {group})",
                        "bend", "Add Bend to give it this scene's")


def coarse_status(scene) -> list:
    """(text, is_alert) lines naming the bent meshes too coarse for the bend now (``coarse_in_scene``, cached)."""
    rows = bend_ops.coarse_in_scene(scene)
    if not rows:
        return []
    names = ", ".join(f"{name} ({error:.2g} m off)" for name, error, _levels in rows[:3])
    more = f" and {len(rows) - 3} more" if len(rows) > 3 else ""
    fix = ("Add Bend again to subdivide them" if scene.envfx.bend.subdivide
           else "Switch on Subdivide Coarse and Add Bend again, or add vertices along the bend")
    return [(f"Too coarse for the bend: {names}{more}", True), (fix, True)]


def gpu_status(obj) -> list:
    """(text, is_alert) lines: whether the object is bent on the GPU, and when Add Bend would switch it."""
    on_gpu, wanted = bend_gpu.is_gpu_bent(obj), bridge.envfx_settings(obj).bend_gpu
    if on_gpu and wanted:
        return [("Bent in its materials: Material Preview or Rendered shows it", False)]
    if wanted and bend_ops.bend_modifiers(obj):
        return [("Bent by its modifier: Add Bend switches it to the GPU", True)]
    if on_gpu:
        return [("Bent on the GPU: Add Bend switches it to the modifier", True)]
    return []


class VIEW3D_PT_envfx_bend(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "World Bend"

    def draw_header(self, context):
        bridge.panel_layout(self).prop(bridge.envfx_settings(bridge.context_scene(context)).bend, "enabled", text="")

    def draw(self, context):
        layout = bridge.panel_layout(self)
        layout.use_property_split = True
        layout.use_property_decorate = True
        scene = bridge.context_scene(context)
        s = bridge.envfx_settings(scene).bend
        col = layout.column()
        col.active = s.enabled
        col.prop(s, "mode")
        col.prop(s, "axis")
        col.prop(s, "pivot")
        col.prop(s, "horizon_offset")
        col.prop(s, "strength")
        col.prop(s, "spread")
        if s.mode == "RUNNER_2AXIS":
            col.prop(s, "side_strength")
            col.prop(s, "side_spread")

        draw_status(layout, status(scene, context.active_object) + coarse_status(scene))
        row = layout.row(align=True)
        row.prop(s, "subdivide", text="Subdivide Coarse")
        row.prop(s, "tolerance", text="Tolerance")

        row = layout.row(align=True)
        row.operator("envfx.bend_add", icon="ADD")
        row.operator("envfx.bend_remove", icon="REMOVE", text="Remove")
        layout.operator("envfx.bend_apply", icon="CHECKMARK")
        row = layout.row(align=True)
        row.operator("envfx.bend_export_engines", icon="EXPORT")
        row.prop(s, "view_distance", text="View")

        obj = context.active_object
        if obj is not None and hasattr(obj, "envfx"):
            box = layout.box()
            box.label(text=obj.name, icon="OBJECT_DATA")
            box.prop(bridge.envfx_settings(obj), "bend_exclude")
            box.prop(bridge.envfx_settings(obj), "bend_gpu")
            for text, alert in gpu_status(obj):
                row = box.row()
                row.alert = alert
                row.label(text=text, icon="ERROR" if alert else "INFO")


classes = (VIEW3D_PT_envfx_bend,)
