"""World Bend sub-panel: scene settings, actions, the active object's opt-out. draw() only reads state."""

import bpy

from ..shader_nodes import bend as bend_nodes
from ..shader_nodes import common
from .main import EnvFXSubPanel


def status(scene, obj) -> list:
    """(text, is_alert) lines: what the scene's bend does now, and whose bend the active object has."""
    tree = bend_nodes.group_for(scene)
    lines = []
    if tree is None:
        lines.append(("Nothing bent in this scene yet", False))
    else:
        n = sum(1 for o in scene.objects for m in o.modifiers if m.type == "NODES" and m.node_group == tree)
        lines.append((f"Bends {n} object(s) of this scene (group {tree.name!r})", False))
    if obj is not None:
        other = next((m.node_group for m in obj.modifiers if m.type == "NODES"
                      and bend_nodes.is_bend_group(m.node_group) and m.node_group != tree), None)
        if other is not None:
            lines.append((f"{obj.name} has the bend of {common.owner_text(other)}: Add Bend to give it this "
                          f"scene's", True))
    return lines


class VIEW3D_PT_envfx_bend(EnvFXSubPanel, bpy.types.Panel):
    bl_label = "World Bend"

    def draw_header(self, context):
        self.layout.prop(context.scene.envfx.bend, "enabled", text="")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = True
        s = context.scene.envfx.bend
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

        for text, alert in status(context.scene, context.active_object):
            row = layout.row()
            row.alert = alert
            row.label(text=text, icon="ERROR" if alert else "INFO")

        row = layout.row(align=True)
        row.operator("envfx.bend_add", icon="ADD")
        row.operator("envfx.bend_remove", icon="REMOVE", text="Remove")
        layout.operator("envfx.bend_apply", icon="CHECKMARK")
        layout.operator("envfx.bend_export_engines", icon="EXPORT")

        obj = context.active_object
        if obj is not None and hasattr(obj, "envfx"):
            box = layout.box()
            box.label(text=obj.name, icon="OBJECT_DATA")
            box.prop(obj.envfx, "bend_exclude")


classes = (VIEW3D_PT_envfx_bend,)
