"""Bend settings: ``Scene.envfx.bend``, and the callback of ``Object.envfx.bend_exclude``."""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    PointerProperty,
)
from bpy.types import PropertyGroup

from ..core import bend as core_bend
from ..operators import bend as bend_ops
from ..shader_nodes import bend as bend_nodes
from ..shader_nodes import bend_gpu
from .common import _numbers_checked


@_numbers_checked
def _bend_value_changed(self, context):
    # The group reads these through drivers; a value set from Python does not tag the scene for the
    # dependency graph by itself, so tag it (the viewport and renders then see the new value at once).
    self.id_data.update_tag()


def _bend_structure_changed(self, context):
    # mode, axis and pivot change the group's nodes; numbers reach it through drivers
    bend_nodes.sync(self.id_data)  # a scene that bends nothing yet has no group to change
    bend_gpu.sync_scene(self.id_data)  # (the pivot the GPU bend reads)


def _strength(name, description):
    return FloatProperty(
        name=name,
        description=description,
        default=0.01,
        min=-core_bend.MAX_STRENGTH,
        max=core_bend.MAX_STRENGTH,
        soft_min=-0.2,
        soft_max=0.2,
        step=0.1,  # pyright: ignore[reportArgumentType] -- typed int in the stubs; Blender reads a float (0.1)
        precision=4,
        update=_bend_value_changed,
    )


def _spread(name, description):
    return FloatProperty(
        name=name, description=description, default=2.0, min=0.0, soft_max=50.0, subtype="DISTANCE",
        update=_bend_value_changed,
    )


class EnvFXBendSettings(PropertyGroup):
    enabled: BoolProperty(
        name="Enabled",
        description="Bend every bent object of the scene (off shows the flat, physical world)",
        default=True,
        update=_bend_value_changed,
    )
    mode: EnumProperty(
        name="Mode",
        description="Shape of the bend",
        items=(
            ("RUNNER", "Runner", "The world drops away ahead of and behind the pivot along the forward axis"),
            ("RUNNER_2AXIS", "Runner, Two Axes", "Drops along the forward and the sideways axis, each with its own "
             "strength and spread"),
            ("PLANET", "Little Planet", "Drops with horizontal distance from the pivot in every direction"),
            ("CYLINDER", "Cylinder", "Rolls off sideways only, like walking along a log or around a tower"),
        ),
        default="RUNNER",
        update=_bend_structure_changed,
    )
    axis: EnumProperty(
        name="Forward Axis",
        description="World axis the world bends along (the write-up's Z is Blender's Y)",
        items=tuple((a, a.replace("POS_", "+").replace("NEG_", "-"), f"Bend along world {a}") for a in core_bend.AXES),
        default="POS_Y",
        update=_bend_structure_changed,
    )
    pivot: PointerProperty(
        name="Pivot",
        description="Object the bend is centred on (player or camera); moving it moves the horizon live. "
        "Without one the world origin is used",
        type=bpy.types.Object,
        update=_bend_structure_changed,
    )
    horizon_offset: FloatProperty(
        name="Horizon Offset",
        description="Moves the top of the bend ahead of the pivot along the forward axis",
        default=0.0,
        soft_min=-100.0,
        soft_max=100.0,
        subtype="DISTANCE",
        update=_bend_value_changed,
    )
    strength: _strength(
        "Strength",
        "How fast the world drops beyond the flat zone (drop = strength * distance^2); negative bends up",
    )
    spread: _spread(
        "Spread",
        "Half-width of the flat zone around the horizon where the world is not bent "
        "(clicks and physics match the picture there)",
    )
    side_strength: _strength("Side Strength", "Strength across the forward axis (Runner, Two Axes)")
    side_spread: _spread("Side Spread", "Half-width of the flat zone across the forward axis (Runner, Two Axes)")
    view_distance: FloatProperty(
        name="View Distance",
        description="How far from the pivot the game draws anything (Export for Game Engines): the culling bounds "
        "it exports hold every bent point this close to the pivot",
        default=100.0, min=0.0, max=core_bend.MAX_DISTANCE, soft_max=1000.0, subtype="DISTANCE",
    )
    tolerance: FloatProperty(
        name="Tolerance",
        description="How far a straight edge between two bent vertices may be from the curve it should follow "
        "(a vertex-shader bend moves vertices only). Add Bend and this panel name the meshes whose edges along "
        "the bend are too long for it",
        default=core_bend.DEFAULT_TOLERANCE, min=1e-4, max=core_bend.MAX_DISTANCE, soft_min=0.001, soft_max=1.0,
        subtype="DISTANCE",
    )
    subdivide: BoolProperty(
        name="Subdivide Coarse Meshes",
        description="Add Bend puts a Simple Subdivision Surface modifier before the bend of a mesh too coarse for the "
        "tolerance, with the levels its edges need (the mesh itself stays untouched; Remove Bend removes it again)",
        default=False,
    )


def _bend_exclude_changed(self, context):
    obj = self.id_data
    for mod in obj.modifiers:
        if mod.type == "NODES" and bend_nodes.is_bend_group(mod.node_group):
            mod.show_viewport = not self.bend_exclude
            mod.show_render = not self.bend_exclude
    bend_ops.sync_readers()  # what reads this object's geometry (terrain follow, snow coverage) follows
    if bend_gpu.is_gpu_bent(obj):
        obj[bend_gpu.GATE] = 0.0 if self.bend_exclude else 1.0
        obj.update_tag()
