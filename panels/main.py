"""The parent panel of the EnvFX sidebar tab."""

import bpy

from .. import bridge
from ..shader_nodes import common

CATEGORY = "EnvFX"
PARENT_ID = "VIEW3D_PT_envfx"


class VIEW3D_PT_envfx(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY
    bl_label = "EnvFX"

    def draw(self, context):
        layout = bridge.panel_layout(self)
        layout.label(text="Game effects for the viewport and bakes", icon="WORLD")


class EnvFXSubPanel:
    """Base for feature sub-panels: sits under the EnvFX parent panel."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY
    bl_parent_id = PARENT_ID


def group_status(scene, obj, own, is_group, empty: str, count: str, noun: str, action: str) -> list:
    """(text, is_alert) lines for a live effect's panel: how many objects of ``scene`` use its group ``own``
    (``count`` formats ``n`` and ``group``; ``empty`` when it has none), and a warning when the active ``obj``
    has the effect (``is_group``) of another scene or file (``noun``; ``action`` says what to do)."""
    if own is None:
        lines = [(empty, False)]
    else:
        n = sum(1 for o in scene.objects for m in o.modifiers if m.type == "NODES" and m.node_group == own)
        lines = [(count.format(n=n, group=repr(own.name)), False)]
    if obj is not None:
        other = next((m.node_group for m in obj.modifiers
                      if m.type == "NODES" and is_group(m.node_group) and m.node_group != own), None)
        if other is not None:
            if obj.library is not None:  # it cannot be changed; an override of it joins this scene's by itself
                action = ("it is linked; make a library override of it (Object > Library Override > Make) to "
                          "give it this scene's")
            lines.append((f"{obj.name} has the {noun} of {common.owner_text(other)}: {action}", True))
    return lines


def draw_status(layout, lines):
    for text, alert in lines:
        row = layout.row()
        row.alert = alert
        row.label(text=text, icon="ERROR" if alert else "INFO")


classes = (VIEW3D_PT_envfx,)
