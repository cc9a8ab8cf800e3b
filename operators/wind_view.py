"""View the baked wind channels in the viewport: every baked object shows one channel as colour through an
object-linked material in each of its slots (the mesh's own materials are not touched); switching the view off
puts each slot back as it was. ``show_channel`` / ``hide_channels`` are the plain functions."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import bpy
from bpy.props import EnumProperty

from .. import bridge
from ..shader_nodes import wind_view as view_nodes
from .common import mesh_of
from .wind import HEIGHT_ATTR, WIND_ATTR, WindInputError

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

STATE_KEY = view_nodes.STATE_KEY


def _viewable(obj) -> bool:
    return obj.type == "MESH" and obj.data is not None and obj.data.attributes.get(WIND_ATTR) is not None \
        and obj.library is None


def show_channel(scene: bpy.types.Scene, channel: str) -> list[str]:
    """Show ``channel`` (R, G, B, A, HEIGHT) on every baked object of ``scene``; returns their names."""
    if channel not in view_nodes.CHANNELS:
        raise WindInputError(f"Unknown channel {channel!r}: use one of {', '.join(view_nodes.CHANNELS)}")
    objects = [o for o in scene.objects if _viewable(o)]
    if not objects:
        raise WindInputError("No object in this scene has baked wind data: Bake Wind Data first")
    mat = view_nodes.ensure_view_material(channel, WIND_ATTR, HEIGHT_ATTR)
    for obj in objects:
        if STATE_KEY not in obj:
            added = len(obj.material_slots) == 0
            if added:
                mesh_of(obj).materials.append(None)
            links, own = [], []
            for slot in obj.material_slots:  # (a slot linked to the data may hold an object's material too)
                links.append(slot.link)
                slot.link = "OBJECT"
                own.append(slot.material.name if slot.material is not None else None)
            obj[STATE_KEY] = json.dumps(dict(links=links, objects=own, added=added))
        for slot in obj.material_slots:
            slot.link = "OBJECT"
            slot.material = mat
    return [o.name for o in objects]


def hide_channels(scene: bpy.types.Scene) -> list[str]:
    """Put back every viewed object's material slots; the view materials go when nothing uses them."""
    names = []
    for obj in scene.objects:
        state = obj.get(STATE_KEY)
        if state is None:
            continue
        state = json.loads(state)
        own = state.get("objects") or [None] * len(state["links"])
        for slot, link, name in zip(obj.material_slots, state["links"], own):
            slot.link = "OBJECT"
            slot.material = bpy.data.materials.get(name) if name else None
            slot.link = link
        if state["added"] and len(mesh_of(obj).materials):  # (a viewed object is a mesh: _viewable)
            mesh_of(obj).materials.pop()
        del obj[STATE_KEY]
        names.append(obj.name)
    for channel in view_nodes.CHANNELS:
        mat = bpy.data.materials.get(view_nodes.material_name(channel))
        if mat is not None and mat.users == 0:
            bpy.data.materials.remove(mat)
    return names


def _show_in_viewports(context):
    """Material Preview in the 3D views that show flat colours (no effect in background mode)."""
    screen = getattr(context, "screen", None)
    for area in (screen.areas if screen else ()):
        if area.type == "VIEW_3D":
            for space in area.spaces:
                if space.type == "VIEW_3D" and space.shading.type in ("SOLID", "WIREFRAME"):
                    space.shading.type = "MATERIAL"


class ENVFX_OT_wind_view(bpy.types.Operator):
    """Show a baked wind channel as colour on every baked object of the scene (Off puts the materials back)"""

    bl_idname = "envfx.wind_view"
    bl_label = "View Wind Data"
    bl_options = {"REGISTER", "UNDO"}

    channel: EnumProperty(
        name="Channel",
        items=(("OFF", "Off", "Put the objects' materials back"),
               ("R", "R: Leaf", "Leaf flutter: 0 where a leaf attaches, 1 at its far end"),
               ("G", "G: Branch Phase", "One phase per first-level branch"),
               ("B", "B: Branch", "Distance from the trunk along the branches"),
               ("A", "A: AO", "Ambient occlusion by the asset itself"),
               ("HEIGHT", "Height", "Whole-asset bend gradient")),
        default="B",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.scene is None:
            cls.poll_message_set("Needs a scene")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            if self.channel == "OFF":
                names = hide_channels(bridge.context_scene(context))
                self.report({"INFO"}, f"Wind data view off: materials of {len(names)} object(s) put back")
            else:
                names = show_channel(bridge.context_scene(context), self.channel)
                _show_in_viewports(context)
                self.report({"INFO"}, f"Showing {self.channel} of the wind data on {len(names)} object(s)")
        except WindInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return {"FINISHED"}


classes = (ENVFX_OT_wind_view,)
