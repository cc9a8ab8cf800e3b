"""Viewport view of the baked wind data: one material per channel (R, G, B, A of EnvFX_Wind, or EnvFX_Height),
showing the value as a colour (dark blue 0, green 0.5, yellow 1), unlit, so an artist checks the data by eye in
Material Preview or Rendered shading."""

import json
from typing import cast

import bpy

from .. import bridge

CHANNELS = ("R", "G", "B", "A", "HEIGHT")
# on an object that shows the view: JSON of its slots before it (their links, "links"; the materials linked to the
# object in them, "objects", by name) and whether the view added the only slot ("added")
STATE_KEY = "envfx_wind_view"
PREFIX = "EnvFX Wind View "
VERSION = 1
RAMP = ((0.0, (0.05, 0.03, 0.35, 1.0)), (0.5, (0.1, 0.7, 0.35, 1.0)), (1.0, (1.0, 0.95, 0.1, 1.0)))


def material_name(channel: str) -> str:
    return PREFIX + channel


def is_view_material(mat: bpy.types.Material | None) -> bool:
    return mat is not None and mat.name.startswith(PREFIX) and mat.get("envfx_wind_view") is not None


def own_materials(obj: bpy.types.Object) -> list:
    """The materials of ``obj``'s slots as they are without the view (which puts its material in every slot, linked
    to the object), in slot order, None for an empty slot: what Wind on GPU, Bend on GPU and the material overrides
    of the wind bake work with while the view shows."""
    text = obj.get(STATE_KEY)
    if text is None:
        return [slot.material for slot in obj.material_slots]
    state = json.loads(str(text))
    if state["added"]:
        return []
    data = obj.data.materials if isinstance(obj.data, bpy.types.Mesh) else ()
    names = state.get("objects") or [None] * len(state["links"])
    return [(bpy.data.materials.get(name) if name else None) if link == "OBJECT"
            else (data[i] if i < len(data) else None) for i, (link, name) in enumerate(zip(state["links"], names))]


def ensure_view_material(channel: str, wind_attr: str, height_attr: str) -> bpy.types.Material:
    """The view material of ``channel`` (built, or rebuilt when its version stamp is older)."""
    if channel not in CHANNELS:
        raise ValueError(f"Unknown wind channel {channel!r}: use one of {', '.join(CHANNELS)}")
    name = material_name(channel)
    mat = bpy.data.materials.get(name)
    if mat is not None and mat.get("envfx_wind_view") == VERSION:
        return mat
    if mat is None:
        mat = bpy.data.materials.new(name)
    if not bridge.BLENDER_5 or mat.node_tree is None:  # Blender 5 materials always have nodes
        mat.use_nodes = True
    tree = mat.node_tree
    if tree is None:  # (use_nodes made it; the API types it optional)
        raise RuntimeError(f"The material {mat.name!r} has no node tree to build the wind view in")
    tree.nodes.clear()
    attr = cast(bpy.types.ShaderNodeAttribute, tree.nodes.new("ShaderNodeAttribute"))
    attr.attribute_type = "GEOMETRY"
    attr.attribute_name = height_attr if channel == "HEIGHT" else wind_attr
    ramp = cast(bpy.types.ShaderNodeValToRGB, tree.nodes.new("ShaderNodeValToRGB"))
    elements = cast(bpy.types.ColorRamp, ramp.color_ramp).elements  # a Color Ramp node has its ramp
    while len(elements) < len(RAMP):
        elements.new(0.5)
    for element, (pos, color) in zip(elements, RAMP):
        element.position = pos
        element.color = color
    if channel in ("R", "G", "B"):
        sep = tree.nodes.new("ShaderNodeSeparateColor")
        tree.links.new(attr.outputs["Color"], sep.inputs["Color"])
        tree.links.new(sep.outputs[{"R": "Red", "G": "Green", "B": "Blue"}[channel]], ramp.inputs["Fac"])
    elif channel == "A":
        tree.links.new(attr.outputs["Alpha"], ramp.inputs["Fac"])
    else:
        tree.links.new(attr.outputs["Fac"], ramp.inputs["Fac"])
    emit = tree.nodes.new("ShaderNodeEmission")
    out = tree.nodes.new("ShaderNodeOutputMaterial")
    tree.links.new(ramp.outputs["Color"], emit.inputs["Color"])
    tree.links.new(emit.outputs["Emission"], out.inputs["Surface"])
    mat["envfx_wind_view"] = VERSION
    return mat
