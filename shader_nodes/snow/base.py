"""What the snow's node groups share: the names of the trails group's state and driven values, and the node
builder with the few nodes they add to ``common.Builder``."""

from __future__ import annotations

from ...core import snow as core_snow
from .. import common

# What the state cloud's points carry in their position (``SnowBuilder.set_state``): (down, rim) of core.snow's
# trail state, and how much deeper the vertex was pushed this frame (the puffs; only meaningful on the points near
# a path this frame). The position, not a named attribute: a point has one anyway, and the state cloud is copied
# (grown) and cached every frame, so a separate vector would cost 12 more bytes a held vertex a frame.
STATE = "position"
ACTORS_NODE = "Actors"  # the Join Geometry node of the actor points
ACTORS_KEY = "envfx_snow_actors"  # the group's custom property: stamp of the actors it was built for
CELLS = core_snow.TRAIL_CELLS  # the lookup table that limits the nearest-path search to vertices near a path
COARSE = 4  # cells per side of a block of the coarse table that limits the cells' nearest-path search

# the displayed snow never goes below this fraction of its thickness (a thin layer stays on the ground, so the
# snow and the terrain under it never fight for the same depth): core.snow's, which its twin shown_offset uses
GROUND_KEEP = core_snow.GROUND_KEEP
TRAIL_ATTRIBUTE = "snow_trail"  # the Numpy engine's shown trail per vertex (a float mesh attribute)
GRAVITY = "Gravity Z"  # Value node driven by the scene's gravity (z), for the puffs

DRIVEN = {
    "Puffs": "puffs",
    "Puff Rate": "puff_rate",
    "Puff Speed": "puff_speed",
    "Puff Lifetime": "puff_lifetime",
    "Puff Size": "puff_size",
    "Rim Height": "rim_height",
    "Rim Width": "rim_width",
    "Fade Height": "fade_height",
    "Refill Rate": "refill_rate",
    "Camera Fade Start": "camera_fade_start",
    "Camera Fade End": "camera_fade_end",
}


class SnowBuilder(common.Builder):
    def sample_index(self, geometry, value, index, data_type="FLOAT", domain="POINT", label=""):
        node = self.node("GeometryNodeSampleIndex", label, data_type=data_type, domain=domain)
        self.link(geometry, node.inputs["Geometry"])
        self.feed(node.inputs["Value"], value)
        self.feed(node.inputs["Index"], index)
        return node.outputs["Value"]

    def named(self, name, data_type="FLOAT", label=""):
        node = self.node("GeometryNodeInputNamedAttribute", label or f"Read {name}", data_type=data_type)
        node.inputs["Name"].default_value = name
        return node

    def store(self, geometry, name, value, data_type="FLOAT", domain="POINT", label="", selection=None):
        node = self.node("GeometryNodeStoreNamedAttribute", label or f"Store {name}", data_type=data_type,
                         domain=domain)
        self.link(geometry, node.inputs["Geometry"])
        if selection is not None:
            self.feed(node.inputs["Selection"], selection)
        node.inputs["Name"].default_value = name
        self.feed(node.inputs["Value"], value)
        return node.outputs["Geometry"]

    def set_state(self, geometry, value, selection, label):
        """The state cloud's points with their trail state (``STATE``, their position) set to ``value``."""
        node = self.node("GeometryNodeSetPosition", label)
        self.link(geometry, node.inputs["Geometry"])
        if selection is not None:
            self.feed(node.inputs["Selection"], selection)
        self.feed(node.inputs["Position"], value)
        return node.outputs["Geometry"]

    def boolean(self, operation, a, b=None, label=""):
        node = self.node("FunctionNodeBooleanMath", label, operation=operation)
        self.feed(node.inputs[0], a)
        if b is not None:
            self.feed(node.inputs[1], b)
        return node.outputs[0]

    def clamp01(self, value, label=""):
        return self.math("ADD", value, 0.0, label=label, use_clamp=True)

    def flat(self, vec, label=""):
        return self.vmath("MULTIPLY", vec, self.vector(label + " Flatten", (1.0, 1.0, 0.0)), label=label)
