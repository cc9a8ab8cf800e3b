"""The puffs of the live trails (the write-up's snow particles on impact): thrown up where an actor pushes the snow
down, they fly under gravity, shrink and vanish (``core.snow.puff_step``), in the trails group's simulation zone."""

from __future__ import annotations

from ...core import snow as core_snow
from .base import GRAVITY
from .material import ensure_material



def puffs_step(b, state, near_pt, P, sim_in, dt, values, puffs_on):
    """The puffs' frame in the zone (``core.snow.puff_step``): last frame's puffs gain gravity, move and age, the
    dead ones go; the held vertices pushed down this frame (z of the state points' position, ``base.STATE``)
    throw new ones with chance "Puff Rate" from the shown snow top at their vertex (``P``: the world position,
    lowered with the snow where the camera fade lays it flat), launched up and a little sideways (not on the
    simulation's first frame, where the actors are put into the snow, not moved). Off ("Puffs" 0): no puffs, no
    work."""
    seed = b.node("GeometryNodeInputSceneTime", "Puff Time").outputs["Frame"]

    def by_id(sockets, identifier):  # the Random Value node's sockets share names across its data types
        return next(sock for sock in sockets if sock.identifier == identifier)

    def rnd(lo, hi, offset, label):
        node = b.node("FunctionNodeRandomValue", label, data_type="FLOAT")
        b.feed(by_id(node.inputs, "Min_001"), lo)
        b.feed(by_id(node.inputs, "Max_001"), hi)
        b.feed(node.inputs["Seed"], b.math("ADD", b.math("MULTIPLY", seed, 7.0), offset))
        return by_id(node.outputs, "Value_001")

    # the flight of last frame's puffs (semi-implicit Euler)
    prev = sim_in.outputs["Puffs"]
    vel = b.vmath("ADD", b.named("velocity", "FLOAT_VECTOR", label="Read Puff Velocity").outputs["Attribute"],
                  b.combine_xyz(0.0, 0.0, b.math("MULTIPLY", values[GRAVITY], dt), label="Gravity Step"),
                  label="Puff Velocity")
    flown = b.store(prev, "velocity", vel, data_type="FLOAT_VECTOR", label="Store Puff Velocity")
    moved = b.node("GeometryNodeSetPosition", "Puff Flight")
    b.link(flown, moved.inputs["Geometry"])
    b.link(b.vmath("SCALE", b.named("velocity", "FLOAT_VECTOR", label="Read New Puff Velocity")
                   .outputs["Attribute"], scale=dt, label="Puff Step"), moved.inputs["Offset"])
    aged = b.store(moved.outputs[0], "age", b.math("ADD", b.named("age", label="Read Puff Age").outputs["Attribute"],
                                                   dt, label="Puff Age"), label="Store Puff Age")
    dead = b.node("GeometryNodeDeleteGeometry", "Dead Puffs", domain="POINT")
    b.link(aged, dead.inputs["Geometry"])
    b.link(b.compare("GREATER_EQUAL", b.named("age", label="Read Aged").outputs["Attribute"],
                     values["Puff Lifetime"], data_type="FLOAT", label="Puff Dead"), dead.inputs["Selection"])

    # new puffs from the vertices pushed down this frame
    pushed = b.node("ShaderNodeSeparateXYZ", "Pushed")
    b.link(b.node("GeometryNodeInputPosition", "Read Pushed").outputs[0], pushed.inputs[0])
    chance = b.node("FunctionNodeRandomValue", "Puff Chance", data_type="BOOLEAN")
    b.feed(chance.inputs["Probability"], values["Puff Rate"])
    b.feed(chance.inputs["Seed"], seed)
    throws = b.boolean("AND", b.boolean("AND", near_pt, b.compare(
        "GREATER_THAN", pushed.outputs["Z"], core_snow.PUFF_MIN_PUSH, data_type="FLOAT", label="Pushed Enough"),
        label="Pushed Here"), b.boolean("AND", by_id(chance.outputs, "Value_003"), b.compare(
            "GREATER_THAN", dt, 0.0, data_type="FLOAT", label="Not First Frame")), label="Throws")
    throwers = b.node("GeometryNodeDeleteGeometry", "Throwers", domain="POINT")
    b.link(state, throwers.inputs["Geometry"])
    b.link(b.boolean("NOT", throws, label="No Throw"), throwers.inputs["Selection"])
    count = b.node("GeometryNodeAttributeDomainSize", "Puff Count", component="POINTCLOUD")
    b.link(throwers.outputs["Geometry"], count.inputs[0])
    born = b.node("GeometryNodePoints", "New Puffs")
    b.link(count.outputs["Point Count"], born.inputs["Count"])
    # a point's world position is P of its vertex, the shown snow top (gathered from the thrower)
    b.link(b.sample_index(throwers.outputs["Geometry"], P, b.node("GeometryNodeInputIndex", "Puff Index").outputs[0],
                          "FLOAT_VECTOR", label="Puff Start"), born.inputs["Position"])
    angle = rnd(0.0, 6.283185307, 1.0, "Puff Direction")
    speed = b.math("MULTIPLY", values["Puff Speed"], rnd(0.5, 1.0, 2.0, "Puff Speed Share"), label="Launch Speed")
    side = b.math("MULTIPLY", speed, core_snow.PUFF_SIDEWAYS, label="Sideways Speed")
    launch = b.combine_xyz(b.math("MULTIPLY", side, b.math("COSINE", angle)),
                           b.math("MULTIPLY", side, b.math("SINE", angle)), speed, label="Launch")
    fresh = b.store(born.outputs[0], "velocity", launch, data_type="FLOAT_VECTOR", label="Store Launch")
    fresh = b.store(fresh, "age", 0.0, label="Store Birth")
    puffs = b.node("GeometryNodeJoinGeometry", "Puffs")
    b.link(fresh, puffs.inputs[0])
    b.link(dead.outputs["Geometry"], puffs.inputs[0])  # join order: the last link comes first
    return b.switch("Puffs On", puffs_on, puffs.outputs[0], input_type="GEOMETRY")  # lazy: off, no work


def puffs_shown(b, puffs, invert, values, puffs_on):
    """The puffs as small snow balls (instances), in the snow object's space, shrinking with age."""
    local = b.node("GeometryNodeSetPosition", "Puffs Local")
    b.link(puffs, local.inputs["Geometry"])
    to_local = b.node("FunctionNodeTransformPoint", "Puff To Local")
    b.link(b.node("GeometryNodeInputPosition", "Puff Pos").outputs[0], to_local.inputs["Vector"])
    b.link(invert.outputs[0], to_local.inputs["Transform"])
    b.link(to_local.outputs[0], local.inputs["Position"])
    ball = b.node("GeometryNodeMeshIcoSphere", "Puff Ball")
    ball.inputs["Radius"].default_value = 1.0
    ball.inputs["Subdivisions"].default_value = 1
    snow_ball = b.node("GeometryNodeSetMaterial", "Puff Material")
    b.link(ball.outputs["Mesh"], snow_ball.inputs["Geometry"])
    snow_ball.inputs["Material"].default_value = ensure_material()
    inst = b.node("GeometryNodeInstanceOnPoints", "Puff Balls")
    b.link(local.outputs[0], inst.inputs["Points"])
    b.link(snow_ball.outputs[0], inst.inputs["Instance"])
    size = b.math("MULTIPLY", values["Puff Size"], b.clamp01(b.math(
        "SUBTRACT", 1.0, b.math("DIVIDE", b.named("age", label="Read Shown Age").outputs["Attribute"],
                                b.math("MAXIMUM", values["Puff Lifetime"], 1e-6)))), label="Puff Radius")
    b.link(size, inst.inputs["Scale"])
    # off: hidden at once (a cached frame of the simulation may still hold puffs)
    return b.switch("Puffs Shown", puffs_on, inst.outputs["Instances"], input_type="GEOMETRY")
