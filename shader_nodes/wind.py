"""Geometry-nodes group "EnvFX Wind": the live vegetation wind of ``core.wind.wind_offsets``, per frame.

One group is shared by every asset in wind. Scene settings reach it through Value nodes driven by
``scene.envfx.wind`` and the render frame rate (plain drivers: they follow keyframes during playback); the wind
source object is an Object Info node (its rotation gives the direction live) and its field strength a driver.
Per-asset settings (rigidity, bend, sway, lift, micro, ramp, main bend, the category's spring and branch
frequencies, the asset's height, grass mode) are inputs of each object's modifier, kept in sync with
``object.envfx.wind`` by ``sync_object``.

Per asset (single values) the group computes the spring-filtered gust at the asset's origin, the effective
wind and every time-dependent factor (``core.wind.live_terms``: wind directions in object space, the sines and
cosines of the branch and flutter oscillations). Geometry nodes pay about the same per asset for every node they
evaluate, whatever it computes, so the three gust waves, branch oscillations and leaf flutters go three to a
vector node, and the branch motion is one transform of the wind's frame. Per vertex it reads the hidden attributes
``core.wind.LIVE_ATTRS`` (written by ``write_live_attributes`` from ``EnvFX_Wind``, ``EnvFX_Height`` and the rest
positions when wind is added or re-baked; the static factors three to a vector, as a read costs a 1M-vertex object
as much as a dozen additions), forms the swing as six dot products with per-asset rows and turns it into motion
that keeps lengths (``core.wind.keep_lengths``: a rescale about the vertex's attach point with one square root, and
a branch's carry in a second Set Position of only the carried vertices). Grass is built apart behind a switch (a
tree never evaluates it): each blade takes its own gust and figure-eight (``core.wind.blade_wind``). Every number
mirrors ``core.wind``; the per-asset gust's phase lag takes an equivalent form without an arctangent (see the gust
below).
"""

from __future__ import annotations

import math
from typing import cast

import bpy

from .. import bridge
import os

from ..core import snow as core_snow
from ..core import wind as core_wind
from . import bend as bend_nodes
from . import common
from .snow import buffer as snow_buffer

GROUP_NAME = "EnvFX Wind"
KIND = "wind"  # one group per scene (common.ensure_scene_group)
VERSION = 21  # 16: grass that actors push (the interaction buffer's G and A at each blade's root); 17: once per face;
# 18: the push at the blade roots stored per face, two sines for the figure-eight; 19: the blade's wind and push
# computed per face and gathered per vertex (Sample Index at .EnvFX_Wind_Face); 20: the blade's lean gathered
# whole, the grass's carry only where there is one, its fade only below 1; 21: a push field read in one sample

# Value nodes driven from the scene: label -> data path on the scene
DRIVEN = {
    "Direction": "envfx.wind.direction",
    "Strength": "envfx.wind.strength",
    "Gust Strength": "envfx.wind.gust_strength",
    "Gust Frequency": "envfx.wind.gust_frequency",
    "Loop Frames": "envfx.wind.loop_frames",
    "Ambient": "envfx.wind.ambient",
    "Grass Tilt": "envfx.wind.grass_tilt",
    "Fade Start": "envfx.wind.grass_fade_start",
    "Fade End": "envfx.wind.grass_fade_end",
    "FPS": "render.fps",
    "FPS Base": "render.fps_base",
    "Push Strength": "envfx.wind.push_strength",
    "Push Sway": "envfx.wind.push_sway",
}
# Value nodes of the grass push set by ``_wire`` (On) or driven from the baked buffer's group (the window and frames)
PUSH_VALUES = ("Push On", "Push Origin X", "Push Origin Y", "Push Size", "Push First", "Push Last", "Push Field")
FIELD_KEY = "envfx_push_field"  # on an image: it holds core.wind.push_field of its buffer (the live buffer's does)
PUSH_FROM_BUFFER = {"Push Origin X": "Origin X", "Push Origin Y": "Origin Y", "Push Size": "Size",
                    "Push First": "First Frame", "Push Last": "Last Frame"}

# modifier inputs: name -> (default, min, max)
ASSET_INPUTS = {
    "Rigidity": (1.0, 0.01, 100.0),
    "Bend": (1.0, -10.0, 10.0),
    "Sway": (1.0, -10.0, 10.0),
    "Lift": (1.0, -10.0, 10.0),
    "Micro": (1.0, 0.0, 10.0),
    "Ramp": (0.0, 0.0, 100.0),
    "Main Bend": (1.0, 0.0, 1.0),
    "Spring Hz": (core_wind.SPRING_HZ["TREE"], 0.01, 100.0),
    "Branch Hz": (core_wind.BRANCH_HZ["TREE"], 0.0, 100.0),
    "Asset Height": (1.0, 0.0, 1e6),
    "Grass": (0.0, 0.0, 1.0),
}

TWO_PI = 2.0 * math.pi
ONES = (1.0, 1.0, 1.0)
HALVES = (0.5, 0.5, 0.5)


class _Builder(common.Builder):
    """``common.Builder`` with the wind graph's shorthands: chains of scalar math, the loop quantisation and
    angles of three frequencies at once (after ``_time`` set the loop's sockets), direction transforms,
    separations and attribute reads."""

    # the loop's sockets, set by ``_time`` (a plain class: not Blender properties)
    looped: bpy.types.NodeSocket
    period: bpy.types.NodeSocket
    period3: bpy.types.NodeSocket
    t2pi: bpy.types.NodeSocket
    t: bpy.types.NodeSocket
    face_index: bpy.types.NodeSocket | None = None  # (``per_blade``'s read of core.wind.LIVE_FACE, made once)

    def m(self, op, x, y=None, z=None):
        return self.math(op, x, y, z)

    def mul(self, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = self.m("MULTIPLY", out, x)
        return out

    def add(self, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = self.m("ADD", out, x)
        return out

    def quant3(self, f3, label):
        """quant(f) = f + looped (max(round(f period), 1) / period - f) of three frequencies at once: per asset
        every node costs about the same whatever it computes, so the oscillators go three to a vector node."""
        rounded = self.vmath("FLOOR", self.vmath("ADD", self.vmath("SCALE", f3, scale=self.period), HALVES))  # Round
        fq = self.vmath("DIVIDE", self.vmath("MAXIMUM", rounded, ONES), self.period3)
        return self.vmath("ADD", f3, self.vmath("SCALE", self.vmath("SUBTRACT", fq, f3), scale=self.looped),
                          label=label)

    def angles3(self, f3, phase3, label):
        """2 pi f t + phase of three quantised frequencies."""
        return self.vmath("ADD", self.vmath("SCALE", f3, scale=self.t2pi), phase3, label=label)

    def transform_dir(self, matrix, vec, label):
        node = self.node("FunctionNodeTransformDirection", label)
        self.link(vec, node.inputs["Direction"])
        self.link(matrix, node.inputs["Transform"])
        return node.outputs[0]

    def sep3(self, vec, label):
        node = self.node("ShaderNodeSeparateXYZ", label)
        self.link(vec, node.inputs[0])
        return node.outputs["X"], node.outputs["Y"], node.outputs["Z"]

    def attr(self, name, data_type="FLOAT"):
        node = self.node("GeometryNodeInputNamedAttribute", name, data_type=data_type)
        node.inputs["Name"].default_value = name
        return node.outputs["Attribute"]

    def per_blade(self, geometry, value, label, data_type="FLOAT_VECTOR"):
        """``value``, a field read on the faces of ``geometry`` (at each blade's root), gathered per vertex from the
        face ``core.wind.LIVE_FACE`` names (zero for a vertex in no face): one Named Attribute node of it serves
        every gather."""
        node = self.node("GeometryNodeSampleIndex", label, data_type=data_type, domain="FACE")
        self.link(geometry, node.inputs["Geometry"])
        self.link(value, node.inputs["Value"])
        if self.face_index is None:
            self.face_index = self.attr(core_wind.LIVE_FACE, "INT")
        self.link(self.face_index, node.inputs["Index"])
        return node.outputs[0]


def _build(tree):
    """The group's graph, stage by stage in the order the nodes are made (their names and links follow it)."""
    b = _Builder(tree)
    gi, go, inp, val, use_source, use_terrain, source_strength = _interface(tree, b)
    _time(b, val)  # (the loop time: b.t)
    self_info, ox, oy, invert, d, sep_d, strength = _origin_and_direction(b, val, use_source, source_strength)
    eff, hs, ceh, gust_parts = _gust(b, inp, val, ox, oy, strength)
    inv_m, d_loc, main_k, bend_k, vc, vs, mc, ms = _asset_motion(b, inp, invert, d, sep_d, ceh)
    swing_unit, rel, position = _tree_swing(b, main_k, bend_k, d_loc, vc, vs, mc, ms)
    is_grass = b.compare("GREATER_THAN", inp["Grass"], 0.5, data_type="FLOAT", label="Is Grass")
    tree_geo = _tree_motion(b, gi, inp, rel, swing_unit, inv_m, hs, d_loc, main_k)
    grass = _blade_wind(b, inp, val, d, self_info, strength, gust_parts)
    grass_geo = _grass_motion(b, gi, inp, val, hs, self_info, invert, inv_m, d, d_loc, main_k, rel, position,
                              swing_unit, grass, use_terrain)
    # a switch on a single value evaluates only the side it chooses: a tree never computes the grass terms
    geo = b.switch("Grass Switch", is_grass, grass_geo, tree_geo, "GEOMETRY")
    b.link(geo, go.inputs["Geometry"])


def _interface(tree, b):
    """The group's inputs and output, and the Value nodes driven from the scene (placed in a column)."""
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    for name, (default, lo, hi) in ASSET_INPUTS.items():
        common.socket(tree, name, "INPUT", "NodeSocketFloat", default, lo, hi)
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    gi = b.node("NodeGroupInput", "Group Input", location=(-2400, 0))
    go = b.node("NodeGroupOutput", "Group Output", location=(3000, 0))
    inp = {name: gi.outputs[name] for name in ASSET_INPUTS}

    val = {label: b.value(label, 0.0) for label in DRIVEN}
    use_source = b.value("Use Source", 0.0)
    use_terrain = b.value("Use Terrain", 0.0)  # 1 when the scene has a terrain object (set by _wire)
    source_strength = b.value("Source Strength", 0.0)
    for label in PUSH_VALUES:
        val[label] = b.value(label, 1.0 if label == "Push Size" else 0.0)
    for i, label in enumerate(list(DRIVEN) + ["Use Source", "Source Strength", "Use Terrain"] + list(PUSH_VALUES)):
        tree.nodes[label].location = (-2400, -600 - 90 * i)
    return gi, go, inp, val, use_source, use_terrain, source_strength


def _time(b, val):
    """The scene time in seconds and the loop's sockets the quantisation reads (kept on ``b``)."""
    # time and loop quantisation. With a loop, the frame is wrapped into it first (floored modulo, exact in float32):
    # every frequency makes whole cycles per loop, so the angles are the same, but float32 keeps them exact at any
    # frame number (the absolute time lost a loop's closure and the twin's 1e-4 past about frame 15000)
    scene_time = b.node("GeometryNodeInputSceneTime", "Scene Time")
    looped = b.m("GREATER_THAN", val["Loop Frames"], 0.5)
    frame = scene_time.outputs["Frame"]
    wrapped = b.m("FLOORED_MODULO", frame, val["Loop Frames"])  # 0 without a loop, and then not used
    frame = b.math("MULTIPLY_ADD", b.m("SUBTRACT", wrapped, frame), looped, frame, label="Loop Frame")
    t = b.m("DIVIDE", b.mul(frame, val["FPS Base"]), val["FPS"])
    period = b.m("DIVIDE", b.mul(val["Loop Frames"], val["FPS Base"]), val["FPS"])

    t2pi = b.mul(t, TWO_PI)
    period3 = b.vmath("SCALE", ONES, scale=period, label="Period3")
    b.looped, b.period, b.period3, b.t2pi, b.t = looped, period, period3, t2pi, t
    return t


def _origin_and_direction(b, val, use_source, source_strength):
    """The asset's origin and matrix, and the wind's direction (horizontal, unit) and strength."""
    # asset origin and matrix
    self_obj = b.node("GeometryNodeSelfObject", "Self")
    self_info = b.node("GeometryNodeObjectInfo", "Self Info", transform_space="ORIGINAL")
    b.link(self_obj.outputs[0], self_info.inputs["Object"])
    sep_o = b.node("ShaderNodeSeparateXYZ", "Origin XYZ")
    b.link(self_info.outputs["Location"], sep_o.inputs[0])
    ox, oy = sep_o.outputs["X"], sep_o.outputs["Y"]
    invert = b.node("FunctionNodeInvertMatrix", "Invert")
    b.link(self_info.outputs["Transform"], invert.inputs[0])

    # wind direction (horizontal, unit) and strength: scene settings or the source object
    a = val["Direction"]
    d_scene = b.combine_xyz(b.m("COSINE", a), b.m("SINE", a), 0.0, label="Scene Dir")
    src_info = b.node("GeometryNodeObjectInfo", "Source", transform_space="ORIGINAL")
    d_field = b.node("FunctionNodeTransformDirection", "Source Z")
    d_field.inputs["Direction"].default_value = (0.0, 0.0, 1.0)
    b.link(src_info.outputs["Transform"], d_field.inputs["Transform"])
    mix = b.vmath("ADD", d_scene, b.vmath("SCALE", b.vmath("SUBTRACT", d_field.outputs[0], d_scene), scale=use_source))
    flat = b.vmath("MULTIPLY", mix, b.vector("Flatten", (1.0, 1.0, 0.0)))
    d = b.vmath("NORMALIZE", flat, label="Wind Dir")
    sep_d = b.node("ShaderNodeSeparateXYZ", "Dir XYZ")
    b.link(d, sep_d.inputs[0])
    strength = b.add(val["Strength"], b.mul(use_source, b.m("SUBTRACT", source_strength, val["Strength"])))
    return self_info, ox, oy, invert, d, sep_d, strength


def _gust(b, inp, val, ox, oy, strength):
    """The spring-filtered gust at the origin, the effective wind and its scale per asset height (per unit of wind
    for grass), and the gust's frequencies, gains and lags for the blades of grass."""
    # spring-filtered gust at the origin and the effective wind: sum of amp gain sin(a - lag) over three waves,
    # with r = f / f0, gain = 1 / (1 + r^2) and lag = 2 atan r, that is
    # amp (sin a (1 - r^2) - 2 r cos a) / (1 + r^2)^2 (the same values, with no arctangent per wave)
    f3 = b.quant3(b.vmath("SCALE", core_wind.GUST_MULTS, scale=val["Gust Frequency"]), "Gust Hz")
    r3 = b.vmath("SCALE", f3, scale=b.m("DIVIDE", 1.0, inp["Spring Hz"]), label="Gust Ratio")
    r3sq = b.vmath("MULTIPLY", r3, r3)
    wx, wy = (tuple(float(w_[i]) for w_ in core_wind.GUST_WAVES) for i in (0, 1))
    origin_phase = b.vmath("ADD", b.vmath("SCALE", wx, scale=ox), b.vmath("SCALE", wy, scale=oy))
    a3 = b.angles3(f3, b.vmath("ADD", origin_phase, core_wind.GUST_PHASES), "Gust Angles")
    num = b.vmath("SUBTRACT", b.vmath("MULTIPLY", b.vmath("SINE", a3), b.vmath("SUBTRACT", ONES, r3sq)),
                  b.vmath("MULTIPLY", b.vmath("SCALE", r3, scale=2.0), b.vmath("COSINE", a3)))
    den = b.vmath("ADD", ONES, r3sq)
    gust_terms = b.vmath("DIVIDE", num, b.vmath("MULTIPLY", den, den), label="Gust Terms")
    gust = b.vmath("DOT_PRODUCT", gust_terms, core_wind.GUST_AMPS, label="Gust")
    w = b.m("MAXIMUM", b.mul(strength, b.add(b.mul(val["Gust Strength"], gust), 1.0)), 0.0)
    k = inp["Ramp"]
    eff = b.math("DIVIDE", b.mul(w, b.add(k, 1.0)), b.add(b.mul(k, w), 1.0), label="Effective Wind")
    c = b.m("DIVIDE", 1.0, inp["Rigidity"])
    hs = inp["Asset Height"]
    # grass: every term per unit of wind, each blade scales them by its own (``_blade_wind``)
    per_asset = b.math("ADD", eff, b.mul(inp["Grass"], b.m("SUBTRACT", 1.0, eff)), label="Asset Wind")
    ceh = b.mul(c, per_asset, hs)
    # the blades' gust: amp_i gain_i = amp_i / (1 + r_i^2) and lag_i = 2 atan r_i (single values)
    gains = b.vmath("DIVIDE", core_wind.GUST_AMPS, den, label="Gust Gains")
    rx, ry, rz = b.sep3(r3, "Gust Ratio XYZ")
    lag3 = b.vmath("SCALE", b.combine_xyz(b.m("ARCTANGENT", rx), b.m("ARCTANGENT", ry), b.m("ARCTANGENT", rz)),
                   scale=2.0, label="Gust Lags")
    return eff, hs, ceh, (f3, gains, lag3)


def _asset_motion(b, inp, invert, d, sep_d, ceh):
    """Per-asset single values: the wind in object space, the bend scales, the branch oscillations and the
    leaf flutter."""
    # Per-asset single values: per vertex (``_tree_swing``) only attribute reads and dot products with rows made
    # of these (see ``core.wind.live_attributes``): no colour separation, no per-vertex wave, noise or matrix
    # transform.
    inv_m = invert.outputs[0]
    d_loc = b.transform_dir(inv_m, d, "Dir Local")
    # the wind's frame in object space, as matrix columns: along it, across it, up
    wind_frame = b.node("FunctionNodeCombineMatrix", "Wind Frame")
    columns = ((sep_d.outputs["X"], sep_d.outputs["Y"], 0.0, 0.0), (b.m("MULTIPLY", sep_d.outputs["Y"], -1.0),
               sep_d.outputs["X"], 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    for sock, value in zip(wind_frame.inputs, (v for col in columns for v in col)):
        b.feed(sock, value)
    frame_loc = b.node("FunctionNodeMatrixMultiply", "Wind Frame Local")
    b.link(inv_m, frame_loc.inputs[0])
    b.link(wind_frame.outputs[0], frame_loc.inputs[1])
    main_k = b.mul(inp["Main Bend"], ceh, core_wind.MAIN_SCALE)
    bend_k = b.mul(inp["Bend"], ceh, core_wind.BRANCH_SCALE)
    # branch oscillations along, across and up the wind: amplitudes times sines in the wind's frame, taken to
    # object space by one transform
    amps3 = b.vmath("SCALE", b.vmath("MULTIPLY", b.combine_xyz(inp["Bend"], inp["Sway"], inp["Lift"]),
                                     tuple(k_ * core_wind.BRANCH_SCALE for k_ in (0.3, 0.5, 0.4))),
                    scale=ceh, label="Branch Amps")
    branch_angles = b.angles3(b.quant3(b.vmath("SCALE", core_wind.BRANCH_MULTS, scale=inp["Branch Hz"]), "Branch Hz"),
                            core_wind.BRANCH_PHASES, "Branch Angles")
    vc = b.transform_dir(frame_loc.outputs[0], b.vmath("MULTIPLY", amps3, b.vmath("SINE", branch_angles)),
                       "Branch Sin")
    vs = b.transform_dir(frame_loc.outputs[0], b.vmath("MULTIPLY", amps3, b.vmath("COSINE", branch_angles)),
                       "Branch Cos")
    # leaf flutter per object axis
    mamp = b.mul(inp["Micro"], ceh, core_wind.MICRO_SCALE)
    micro_angles = b.angles3(b.quant3(core_wind.MICRO_HZ, "Micro Hz"), core_wind.MICRO_PHASES, "Micro Angles")
    mc = b.vmath("SCALE", b.vmath("SINE", micro_angles), scale=mamp, label="Micro Sin")
    ms = b.vmath("SCALE", b.vmath("COSINE", micro_angles), scale=mamp, label="Micro Cos")
    return inv_m, d_loc, main_k, bend_k, vc, vs, mc, ms


def _tree_swing(b, main_k, bend_k, d_loc, vc, vs, mc, ms):
    """Per vertex: the swing ``(Ba bend + H^2 main) dir + Bac vc + Bas vs + Rc mc + Rs ms`` as six dot products of
    the two static vectors Branch = (Ba, Bac, Bas) and Leaf = (Rc, Rs, H^2) with per-asset rows, three per axis:
    an attribute read costs a 1M-vertex object as much as a dozen additions, a dot product about one."""
    branch = b.attr(core_wind.LIVE_ATTRS[0], "FLOAT_VECTOR")
    leaf = b.attr(core_wind.LIVE_ATTRS[1], "FLOAT_VECTOR")
    rel = b.attr(core_wind.LIVE_ATTRS[3], "FLOAT_VECTOR")
    position = b.node("GeometryNodeInputPosition", "Position").outputs[0]
    sd, svc, svs, smc, sms = (b.sep3(v, f"{name} XYZ") for v, name in ((d_loc, "Dir Local"), (vc, "Branch Sin"),
                                                                      (vs, "Branch Cos"), (mc, "Micro Sin"),
                                                                      (ms, "Micro Cos")))
    axes = []
    for i, axis in enumerate("XYZ"):
        row_b = b.combine_xyz(b.mul(bend_k, sd[i]), svc[i], svs[i], label=f"Branch Row {axis}")
        row_l = b.combine_xyz(smc[i], sms[i], b.mul(main_k, sd[i]), label=f"Leaf Row {axis}")
        axes.append(b.add(b.vmath("DOT_PRODUCT", branch, row_b), b.vmath("DOT_PRODUCT", leaf, row_l)))
    return b.combine_xyz(*axes, label="Tree Swing"), rel, position


def _turn(b, rel, swing, label):
    """The offset that turns the vertex about its attach point towards its swung place, keeping its distance
    (``core.wind.keep_lengths`` step 1): ``q |rel| / |q| - rel`` with ``q = rel + swing``, as
    ``q sqrt(rel.rel / q.q)``: one square root per vertex (0 / 0 is 0: a vertex at its attach point stays)."""
    q = b.vmath("ADD", rel, swing, label=f"Swung {label}")
    ratio = b.m("DIVIDE", b.vmath("DOT_PRODUCT", rel, rel), b.vmath("DOT_PRODUCT", q, q))
    turned = b.vmath("SCALE", q, scale=b.m("SQRT", ratio), label=f"Turned {label}")
    return b.vmath("SUBTRACT", turned, rel)


def _carry(b, carry_h, lean, up_l, hs, label):
    """A branch's carry (``core.wind.keep_lengths`` step 2): ``hA H |up| (normalize(lean) - normalize(up))``."""
    return b.vmath("SCALE", b.vmath("SUBTRACT", b.vmath("NORMALIZE", lean), b.vmath("NORMALIZE", up_l)),
                   scale=b.mul(carry_h, b.mul(hs, b.vmath("LENGTH", up_l))), label=label)


def _tree_motion(b, gi, inp, rel, swing, inv_m, hs, d_loc, main_k):
    """Trees, plants and specials: the swing turned about the attach points (a Set Position of every vertex), then
    the branches carried (a second Set Position of only the vertices with a Carry: the trunk and stems skip the
    carry's square root)."""
    set_turn = b.node("GeometryNodeSetPosition", "Set Position", location=(2600, 0))
    b.link(gi.outputs["Geometry"], set_turn.inputs["Geometry"])
    b.link(_turn(b, rel, swing, "Tree"), set_turn.inputs["Offset"])
    carry_h = b.attr(core_wind.LIVE_ATTRS[4])
    up_l = b.transform_dir(inv_m, b.vector("World Up", (0.0, 0.0, 1.0)), "World Up Local")
    # the axis's direction at hA, over H: up + hA main dir / H
    lean = b.vmath("ADD", up_l, b.vmath("SCALE", b.vmath("SCALE", d_loc, scale=b.m("DIVIDE", main_k, hs)),
                                        scale=carry_h), label="Lean")
    set_carry = b.node("GeometryNodeSetPosition", "Set Position Carry", location=(2800, 0))
    b.link(set_turn.outputs[0], set_carry.inputs["Geometry"])
    b.link(b.compare("GREATER_THAN", carry_h, 0.0, data_type="FLOAT", label="Carried"), set_carry.inputs["Selection"])
    b.link(_carry(b, carry_h, lean, up_l, hs, "Carry"), set_carry.inputs["Offset"])
    return set_carry.outputs[0]


def _blade_wind(b, inp, val, d, self_info, strength, gust_parts):
    """Grass, per blade: the wind of a blade at its attach point ``X = M A`` (``A = p - Pivot``;
    ``core.wind.blade_wind``): the gust and the figure-eight of the world origin at ``tau = t - X.d / U``. Their
    angles ``2 pi f tau`` are the per-asset ``2 pi f t`` less ``2 pi f / U`` times ``X.d = A.(M^T d) + o.d``: one
    dot product (no matrix). Fields read on the faces, at the blade's root ``A`` (``core.wind.LIVE_ROOT``): the
    caller gathers what it makes of them per vertex (``_grass_motion``). Returns (effective wind, the sines of the
    figure-eight's two angles, the grass frequencies)."""
    f3, gains, lag3 = gust_parts
    a = b.attr(core_wind.LIVE_ROOT, "FLOAT_VECTOR")  # (read on the faces: the blade's root)
    mt = b.node("FunctionNodeTransposeMatrix", "Transpose")
    b.link(self_info.outputs["Transform"], mt.inputs[0])
    d_obj = b.transform_dir(mt.outputs[0], d, "Wind Dir Transposed")
    along = b.math("ADD", b.vmath("DOT_PRODUCT", a, d_obj), b.vmath("DOT_PRODUCT", self_info.outputs["Location"], d),
                   label="Blade Along Wind")  # X.d
    travel = TWO_PI / core_wind.GUST_SPEED
    base = b.vmath("SUBTRACT", b.angles3(f3, core_wind.GUST_PHASES, "Blade Gust Base"), lag3)
    arg = b.vmath("SUBTRACT", base, b.vmath("SCALE", b.vmath("SCALE", f3, scale=travel), scale=along))
    gust = b.vmath("DOT_PRODUCT", b.vmath("SINE", arg), gains, label="Blade Gust")
    s = strength
    w = b.m("MAXIMUM", b.math("MULTIPLY_ADD", gust, b.mul(s, val["Gust Strength"]), s), 0.0)
    k = inp["Ramp"]
    eff = b.math("DIVIDE", b.mul(w, b.add(k, 1.0)), b.math("MULTIPLY_ADD", k, w, 1.0), label="Blade Wind")
    # the figure-eight's angles 2 pi fa tau, 2 pi fa2 tau (the third, the wobble's frequency, is not used here)
    grass_hz = b.quant3((core_wind.AMBIENT_HZ, 2.0 * core_wind.AMBIENT_HZ, core_wind.WOBBLE_HZ), "Grass Hz")
    # per vertex two multiply-adds and two sines (a vector's three would compute the unused third)
    g1, g2, _g3 = b.sep3(b.angles3(grass_hz, (0.0, 0.0, 0.0), "Grass Angles"), "Grass Angles XYZ")
    k1, k2, _k3 = b.sep3(b.vmath("SCALE", grass_hz, scale=-travel), "Grass Travel XYZ")
    eight = (b.math("SINE", b.math("MULTIPLY_ADD", along, k1, g1), label="Figure Eight X"),
             b.math("SINE", b.math("MULTIPLY_ADD", along, k2, g2), label="Figure Eight Y"))
    return eff, eight, grass_hz


def _grass_motion(b, gi, inp, val, hs, self_info, invert, inv_m, d, d_loc, main_k, rel, position, swing_unit, grass,
                  use_terrain):
    """Grass: the swing per unit of wind times the blade's wind, the blade's figure-eight and the camera tilt
    (times H), the wobble; kept lengths, carried, faded and on the terrain. Returns the moved geometry.

    What is the same on all the vertices of a blade is computed once per face, at the blade's root: its wind
    (``_blade_wind``) and its lean (the figure-eight and the push, ``_push``), all in one Capture Attribute on the
    faces, and gathered per vertex from one of its faces by a Sample Index (``core.wind.LIVE_FACE``): the wind and
    the lean, two gathers, each costing about one math node per vertex. (Reading a face value on the points instead
    averages over each vertex's faces and cost more than the math it saved, measured with
    ``benchmarks/bench_wind.py --push-only``.) The camera's tilt is added per vertex. The carry (pieces hanging above
    the ground; a blade has none) is a second Set Position of only the vertices with a Carry, as the trees'
    (``_tree_motion``), and the distance fade is computed only when it is below 1."""
    eff_face, eight, grass_hz = grass
    geometry = gi.outputs["Geometry"]
    hg = b.attr(core_wind.LIVE_ATTRS[2])
    t = b.t
    ambient = b.mul(val["Ambient"], hs)  # per unit of wind
    grass_amp = b.mul(ambient, core_wind.AMBIENT_SCALE)
    # the figure-eight in object space: inv3 aamp (sin a1 d + 0.5 sin a2 across) = sin a1 c0 + sin a2 c1
    across = b.vmath("CROSS_PRODUCT", (0.0, 0.0, 1.0), d, label="Across Wind")
    c0 = b.transform_dir(inv_m, b.vmath("SCALE", d, scale=grass_amp), "Eight Along Local")
    c1 = b.transform_dir(inv_m, b.vmath("SCALE", across, scale=b.mul(grass_amp, 0.5)), "Eight Across Local")
    e1, e2 = eight
    e8 = b.vmath("ADD", b.vmath("SCALE", c0, scale=e1), b.vmath("SCALE", c1, scale=e2))
    # tilt away from a camera that looks down, distance fade (the active camera; none: no tilt, no fade)
    cam = b.node("GeometryNodeInputActiveCamera", "Active Camera")
    cam_info = b.node("GeometryNodeObjectInfo", "Camera Info", transform_space="ORIGINAL")
    b.link(cam.outputs[0], cam_info.inputs["Object"])
    has_cam = b.m("GREATER_THAN", b.vmath("LENGTH", cam_info.outputs["Scale"]), 0.0)
    cam_z = b.node("FunctionNodeTransformDirection", "Camera Z")
    cam_z.inputs["Direction"].default_value = (0.0, 0.0, 1.0)
    b.link(cam_info.outputs["Transform"], cam_z.inputs["Transform"])
    _cx, _cy, cam_zz = b.sep3(b.vmath("NORMALIZE", cam_z.outputs[0]), "Camera Z XYZ")
    down = b.m("MAXIMUM", cam_zz, 0.0)
    to_asset = b.vmath("SUBTRACT", self_info.outputs["Location"], cam_info.outputs["Location"])
    away = b.vmath("NORMALIZE", b.vmath("MULTIPLY", to_asset, b.vector("Flatten Away", (1.0, 1.0, 0.0))))
    tilt = b.vmath("SCALE", away, scale=b.mul(val["Grass Tilt"], down, core_wind.TILT_SCALE, hs, has_cam))
    dist = b.vmath("LENGTH", to_asset)
    fade_raw = b.math("DIVIDE", b.m("SUBTRACT", val["Fade End"], dist), b.m("SUBTRACT", val["Fade End"],
                                                                        val["Fade Start"]), use_clamp=True)
    fade_on = b.mul(b.m("GREATER_THAN", val["Fade End"], val["Fade Start"]), has_cam)
    fade = b.m("SUBTRACT", 1.0, b.mul(fade_on, b.m("SUBTRACT", 1.0, fade_raw)))
    # the blade's lean, per face: its figure-eight times its wind; per vertex the camera's tilt (which a vertex in
    # no face takes too)
    lean_face = b.vmath("SCALE", e8, scale=eff_face, label="Grass Lean")
    tilt_local = b.transform_dir(inv_m, tilt, "Tilt Local")
    # actors push the blades (a switch on a single value: without a baked buffer nothing of it is evaluated). The
    # push is the blade's (read at its root), and its three samples of the buffer cost most: once per face
    push_on = b.compare("GREATER_THAN", val["Push On"], 0.5, data_type="FLOAT", label="Push Is On")
    pushed = b.vmath("ADD", lean_face, _push(b, val, self_info, inv_m), label="Grass Lean Pushed")
    # the blade's wind and leans evaluated once on the faces (one Capture Attribute), gathered per vertex
    capture = b.node("GeometryNodeCaptureAttribute", "Per Face", domain="FACE")
    b.link(geometry, capture.inputs["Geometry"])
    for name, kind, value in (("Wind", "FLOAT", eff_face), ("Lean", "VECTOR", lean_face),
                              ("Lean Pushed", "VECTOR", b.switch("Push Switch", push_on, pushed, lean_face, "VECTOR"))):
        capture.capture_items.new(kind, name)
        b.link(value, capture.inputs[name])
    faces = capture.outputs["Geometry"]
    lean_swing = b.vmath("ADD", b.per_blade(faces, capture.outputs["Lean Pushed"], "Per Blade"), tilt_local,
                         label="Grass Lean Tilted")
    eff = b.per_blade(faces, capture.outputs["Wind"], "Blade Wind Per Face", "FLOAT")
    # per vertex: the wobble along the normal, eff ambient WOBBLE_SCALE H wave(p . WOBBLE_WAVE / 2 pi + fw t)
    normal = b.node("GeometryNodeInputNormal", "Normal").outputs[0]
    wdot = b.vmath("DOT_PRODUCT", position, b.vector("Wobble Wave", tuple(v / TWO_PI for v in core_wind.WOBBLE_WAVE)))
    ww = b.m("WRAP", b.add(wdot, b.mul(b.sep3(grass_hz, "Wobble Hz XYZ")[2], t)), 0.5, -0.5)
    wamp = b.mul(b.mul(hg, eff), b.mul(ambient, core_wind.WOBBLE_SCALE * 8.0),
                 b.mul(ww, b.m("MULTIPLY_ADD", b.m("ABSOLUTE", ww), -2.0, 1.0)))
    swing = b.vmath("ADD", b.vmath("ADD", b.vmath("SCALE", swing_unit, scale=eff),
                                   b.vmath("SCALE", lean_swing, scale=hg)),
                    b.vmath("SCALE", normal, scale=wamp), label="Grass Swing")
    turned = _turn(b, rel, swing, "Grass")
    # scaled down with the distance (a switch on a single value: at 1 no vertex computes it)
    faded = b.switch("Fade Switch", b.compare("LESS_THAN", fade, 1.0, data_type="FLOAT", label="Fading"),
                     b.vmath("ADD", b.vmath("SCALE", turned, scale=fade),
                             b.vmath("SCALE", position, scale=b.m("SUBTRACT", fade, 1.0)), label="Grass Faded"),
                     turned, "VECTOR")
    set_grass = b.node("GeometryNodeSetPosition", "Set Position Grass", location=(2800, -300))
    b.link(geometry, set_grass.inputs["Geometry"])
    b.link(_terrain(b, gi, self_info, invert, position, use_terrain, faded), set_grass.inputs["Offset"])
    # the carry, faded too, of the vertices with a Carry only: the axis's direction at hA over H is up + (the
    # blade's lean without the push + hA eff main dir) / H
    carry_h = b.attr(core_wind.LIVE_ATTRS[4])
    up_l = b.transform_dir(inv_m, b.vector("Grass Up", (0.0, 0.0, 1.0)), "Grass Up Local")
    inv_hs = b.m("DIVIDE", 1.0, hs)
    lean_local = b.vmath("ADD", b.per_blade(faces, capture.outputs["Lean"], "Per Blade Lean"), tilt_local)
    lean = b.vmath("ADD", b.vmath("ADD", up_l, b.vmath("SCALE", lean_local, scale=inv_hs)),
                   b.vmath("SCALE", d_loc, scale=b.mul(carry_h, eff, main_k, inv_hs)), label="Grass Axis")
    set_carry = b.node("GeometryNodeSetPosition", "Set Position Grass Carry", location=(3000, -300))
    b.link(set_grass.outputs[0], set_carry.inputs["Geometry"])
    b.link(b.compare("GREATER_THAN", carry_h, 0.0, data_type="FLOAT", label="Grass Carried"),
           set_carry.inputs["Selection"])
    b.link(b.vmath("SCALE", _carry(b, carry_h, lean, up_l, hs, "Grass Carry"), scale=fade, label="Grass Carry Faded"),
           set_carry.inputs["Offset"])
    return set_carry.outputs[0]


def _push(b, val, self_info, inv_m):
    """The lean actors give a blade through the baked interaction buffer (``core.wind.push_lean``), in object space
    per unit of H (the swing takes it times H, so the turn about the root keeps the blade's length). The buffer's
    window maps a world point to ``uv = (X - origin) / size``: one matrix per asset (the window's times the
    object's) takes each blade's root there; three samples of the buffer give G and A at the root and A one texel to
    +x and +y (the slope of A points away from the actor's path), or one sample of a push field (the live buffer's
    image: ``core.wind.push_field``) gives them all. Every vertex of a blade has the same root, so the lean is
    computed once per face (a field the caller reads on the faces) at the root the mesh stores per face
    (``core.wind.LIVE_ROOT``: mean positions and Pivots of the faces cost the push half its time); the caller gathers
    it per vertex from one of the vertex's faces: a vertex in no face is not pushed."""

    def plane_map(label, scale_x, scale_y, move_x, move_y):
        """A matrix taking (x, y, z) to (scale_x x + move_x, scale_y y + move_y, z)."""
        node = b.node("FunctionNodeCombineMatrix", label)
        columns = ((scale_x, 0.0, 0.0, 0.0), (0.0, scale_y, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0),
                   (move_x, move_y, 0.0, 1.0))
        for sock, value in zip(node.inputs, (v for col in columns for v in col)):
            b.feed(sock, value)
        return node.outputs[0]

    def product(label, left, right):
        node = b.node("FunctionNodeMatrixMultiply", label)
        b.link(left, node.inputs[0])
        b.link(right, node.inputs[1])
        return node.outputs[0]

    inv_s = b.m("DIVIDE", 1.0, val["Push Size"])
    minus_inv_s = b.m("MULTIPLY", inv_s, -1.0)
    window = plane_map("Push Window", inv_s, inv_s, b.mul(val["Push Origin X"], minus_inv_s),
                       b.mul(val["Push Origin Y"], minus_inv_s))
    to_uv = product("Push Object To UV", window, self_info.outputs["Transform"])
    image = b.node("GeometryNodeInputImage", "Push Image")
    info = b.node("GeometryNodeImageInfo", "Push Image Info")
    b.link(image.outputs[0], info.inputs["Image"])
    # a push field (``core.wind.push_field``: the live buffer's image) is read one texel on, in an image one texel
    # wider and taller: uv' = (u W + 1) / (W + 1) = u (1 - 1 / W') + 1 / W', folded into the asset's matrix
    field_on = b.compare("GREATER_THAN", val["Push Field"], 0.5, data_type="FLOAT", label="Push Is Field")
    inv_w, inv_h = b.m("DIVIDE", 1.0, info.outputs["Width"]), b.m("DIVIDE", 1.0, info.outputs["Height"])
    shift = plane_map("Push Field Shift", b.m("SUBTRACT", 1.0, inv_w), b.m("SUBTRACT", 1.0, inv_h), inv_w, inv_h)
    to_field = product("Push Object To Field", shift, to_uv)
    uv = b.node("FunctionNodeTransformPoint", "Push Root UV")
    b.link(b.attr(core_wind.LIVE_ROOT, "FLOAT_VECTOR"), uv.inputs["Vector"])  # (read on the faces)
    b.link(b.switch("Push Read", field_on, to_field, to_uv, "MATRIX"), uv.inputs["Transform"])
    # the baked frames are first..last: after them the last one holds, before them nothing pushes
    frame = b.node("GeometryNodeInputSceneTime", "Push Time").outputs["Frame"]
    baked = b.m("MAXIMUM", b.m("MINIMUM", frame, val["Push Last"]), val["Push First"])
    started = b.m("GREATER_THAN", b.add(frame, 0.5), val["Push First"])
    b.link(baked, info.inputs["Frame"])  # (a sequence has no size at frame 0 unless it has that file)

    def sample(vector, label):
        tex = b.node("GeometryNodeImageTexture", label, interpolation="Linear", extension="EXTEND")
        b.link(image.outputs[0], tex.inputs["Image"])
        b.link(vector, tex.inputs["Vector"])
        b.link(baked, tex.inputs["Frame"])
        return tex

    here = sample(uv.outputs[0], "Push Here")
    step_x = b.combine_xyz(inv_w, 0.0, 0.0, label="Push Texel X")
    step_y = b.combine_xyz(0.0, inv_h, 0.0, label="Push Texel Y")
    a0 = here.outputs["Alpha"]
    field_gx, g0, field_gy = b.sep3(here.outputs["Color"], "Push Here RGB")
    # a field holds the slopes (R, B); a buffer's are read from two more samples, which a field leaves unevaluated
    gx = b.switch("Push Gx", field_on, field_gx,
                  b.m("SUBTRACT", sample(b.vmath("ADD", uv.outputs[0], step_x), "Push +X").outputs["Alpha"], a0))
    gy = b.switch("Push Gy", field_on, field_gy,
                  b.m("SUBTRACT", sample(b.vmath("ADD", uv.outputs[0], step_y), "Push +Y").outputs["Alpha"], a0))
    # (strength A + sway G) / sqrt(gx^2 + gy^2 + eps^2), with the sign and the start folded into the two gains
    neg = b.m("MULTIPLY", started, -1.0)
    amp = b.math("MULTIPLY_ADD", a0, b.mul(val["Push Strength"], neg), b.mul(g0, b.mul(val["Push Sway"], neg)))
    den = b.m("SQRT", b.math("MULTIPLY_ADD", gx, gx, b.math("MULTIPLY_ADD", gy, gy, core_wind.PUSH_EPS ** 2)))
    slope = b.transform_dir(inv_m, b.combine_xyz(gx, gy, 0.0, label="Push Slope"), "Push Slope Local")
    return b.vmath("SCALE", slope, scale=b.m("DIVIDE", amp, den), label="Grass Push")


def _terrain(b, gi, self_info, invert, position, use_terrain, faded):
    """Grass follows the terrain object (a ray per vertex, only with a terrain)."""
    # follow the terrain: a vertical ray (world down) from above each vertex onto the terrain object. The rays are
    # cast in the terrain's own space onto its evaluated mesh as it is (ORIGINAL): every clump then hits the same
    # mesh, whose BVH tree Blender builds once and keeps (5.0). A RELATIVE Object Info would transform the
    # terrain into each clump's space: a new mesh, and a new BVH tree, per clump and frame (~7 ms per clump on a
    # 14.6k-vertex terrain, benchmarks/bench_wind.py). The ray is the same world segment either way.
    terrain = b.node("GeometryNodeObjectInfo", "Terrain", transform_space="ORIGINAL")
    to_terrain = b.node("FunctionNodeMatrixMultiply", "Self To Terrain")
    terrain_inv = b.node("FunctionNodeInvertMatrix", "Terrain Invert")
    b.link(terrain.outputs["Transform"], terrain_inv.inputs[0])
    b.link(terrain_inv.outputs[0], to_terrain.inputs[0])
    b.link(self_info.outputs["Transform"], to_terrain.inputs[1])
    up_local = b.vmath("NORMALIZE", b.transform_dir(invert.outputs[0], b.vector("Up", (0.0, 0.0, 1.0)), "Up Local"))
    ray = b.node("GeometryNodeRaycast", "Terrain Ray")
    b.link(terrain.outputs["Geometry"], ray.inputs["Target Geometry"])
    start = b.node("FunctionNodeTransformPoint", "Ray Start Terrain")
    b.link(b.vmath("ADD", position, b.vmath("SCALE", up_local, scale=core_wind.TERRAIN_RAY)), start.inputs["Vector"])
    b.link(to_terrain.outputs[0], start.inputs["Transform"])
    b.link(start.outputs[0], ray.inputs["Source Position"])
    # down by 2 TERRAIN_RAY object units of the clump, in the terrain's space (the node normalises the direction)
    down_t = b.transform_dir(to_terrain.outputs[0], b.vmath("SCALE", up_local, scale=-2.0 * core_wind.TERRAIN_RAY),
                           "Ray Down Terrain")
    b.link(down_t, ray.inputs["Ray Direction"])
    b.link(b.vmath("LENGTH", down_t), ray.inputs["Ray Length"])
    hit_world = b.node("FunctionNodeTransformPoint", "Hit World")
    b.link(ray.outputs["Hit Position"], hit_world.inputs["Vector"])
    b.link(terrain.outputs["Transform"], hit_world.inputs["Transform"])
    _hx, _hy, hz = b.sep3(hit_world.outputs[0], "Hit XYZ")
    _ox, _oy, oz = b.sep3(self_info.outputs["Location"], "Origin Z")
    # the ray hits the terrain as its bend draws it: its physical height here is the hit's plus the drop the
    # terrain's bend gives this vertex's world x, y (common.build_bend_drop; 0 when the terrain shows no bend)
    drop = common.build_bend_drop(b, gi.outputs["Geometry"], position, self_info.outputs["Transform"],
                                  "Terrain Drop")
    dz = b.mul(b.m("SUBTRACT", b.add(hz, drop), oz), ray.outputs["Is Hit"])
    terrain_local = b.transform_dir(invert.outputs[0], b.combine_xyz(0.0, 0.0, dz, label="Terrain Lift"),
                                    "Terrain Local")
    # without a terrain object no vertex casts a ray (a switch on a single value evaluates only what it chooses)
    has_terrain = b.compare("GREATER_THAN", use_terrain, 0.5, data_type="FLOAT", label="Has Terrain")
    local_grass = b.switch("Terrain Switch", has_terrain, b.vmath("ADD", faded, terrain_local, label="On Terrain"),
                           faded, "VECTOR")
    local_grass.node.label = local_grass.node.name = "Grass Local Offset"
    return local_grass


def is_wind_group(tree: bpy.types.NodeTree | None) -> bool:
    """Whether ``tree`` is a scene's live-wind group."""
    return common.is_scene_group(tree, KIND, GROUP_NAME)


def group_for(scene: bpy.types.Scene) -> bpy.types.NodeTree | None:
    """The live-wind group of ``scene``, or None when nothing of the scene is in the wind yet."""
    return common.scene_group(scene, KIND, GROUP_NAME)


def claim_appended(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Plants in the wind appended into ``scene`` from another file join the scene's wind (its source and
    terrain objects; the values already came from the scene). Returns the objects that joined."""
    moved = common.claim_orphans(scene, KIND, ensure_wind)
    for obj in moved:
        sync_object(obj)
    return moved


def ensure_wind(scene: bpy.types.Scene) -> bpy.types.NodeTree:
    """The scene's live-wind group, wired to its wind settings and source object (each scene of a file has its
    own: the first one made is "EnvFX Wind", others are named after their scene)."""
    tree, rebuilt = common.ensure_scene_group(scene, KIND, GROUP_NAME, str(VERSION), _build)
    sync(scene, tree)
    if rebuilt:
        _restore_inputs(tree)
    return tree


def _restore_inputs(tree):
    """A rebuilt interface forgets the modifiers' input values: restore them from the objects."""
    for obj in bpy.data.objects:
        if obj.library is None and common.modifier_for(obj, tree) is not None:
            sync_object(obj)
            write_live_attributes(obj.data)


def write_live_attributes(mesh: bpy.types.ID | None) -> bool:
    """(Re)write the hidden per-vertex attributes the live wind reads (``core.wind.live_attributes``) from the
    mesh's ``EnvFX_Wind``, ``EnvFX_Height`` and rest positions; without baked wind data they are removed (the
    wind then reads zeros: no motion). Returns True when written. A mesh in Edit Mode is left as it is (its
    attributes are then Edit Mode's own, which carry the live data along with the vertices)."""
    if not isinstance(mesh, bpy.types.Mesh) or mesh.library is not None or mesh.is_editmode:
        return False
    attrs = mesh.attributes
    col = attrs.get("EnvFX_Wind")
    height = attrs.get("EnvFX_Height")
    n = len(mesh.vertices)
    ok = (col is not None and col.domain == "POINT" and col.data_type == "FLOAT_COLOR" and height is not None
          and height.domain == "POINT" and height.data_type == "FLOAT")
    if not ok:
        for name in core_wind.LIVE_ATTRS + core_wind.LIVE_ATTRS_OLD + (core_wind.LIVE_ROOT, core_wind.LIVE_FACE):
            if attrs.get(name) is not None:
                attrs.remove(attrs[name])
        return False
    for name in core_wind.LIVE_ATTRS_OLD:  # (EnvFX before group version 15 wrote five floats instead of two vectors)
        if attrs.get(name) is not None:
            attrs.remove(attrs[name])
    rgba = bridge.point_attribute(mesh, "EnvFX_Wind").reshape(n, 4)
    h = bridge.point_attribute(mesh, "EnvFX_Height").reshape(n)
    positions = bridge.get_positions(mesh)
    live = core_wind.live_attributes(positions, h, rgba)
    for name, values in live.items():
        kind = "FLOAT_VECTOR" if name in core_wind.LIVE_VECTORS else "FLOAT"
        bridge.write_point_attribute(mesh, name, kind, values)
    roots = core_wind.blade_roots(positions, live, bridge.corner_vertices(mesh), bridge.face_starts(mesh))
    bridge.write_point_attribute(mesh, core_wind.LIVE_ROOT, "FLOAT_VECTOR", roots, domain="FACE")
    faces = core_wind.vertex_faces(n, bridge.corner_vertices(mesh), bridge.face_starts(mesh))
    bridge.write_point_attribute(mesh, core_wind.LIVE_FACE, "INT", faces)
    mesh.update()
    return True


def remove_live_attributes(mesh: bpy.types.Mesh) -> None:
    """Remove the live wind's per-vertex attributes from ``mesh`` (not from a mesh linked from a library, which
    cannot be changed here)."""
    if mesh.library is not None:
        return
    for name in core_wind.LIVE_ATTRS + core_wind.LIVE_ATTRS_OLD + (core_wind.LIVE_ROOT, core_wind.LIVE_FACE):
        attr = mesh.attributes.get(name)
        if attr is not None:
            mesh.attributes.remove(attr)


def refresh_after_load() -> None:
    """For a load_post handler: live-wind groups saved with an older EnvFX are rebuilt in place (modifiers keep
    pointing at them) and rewired for their scenes (a group that a scene shares with its copy stays shared)."""
    for scene, tree in common.adopt_after_load(KIND, GROUP_NAME):
        if common.rebuild_if_outdated(tree, str(VERSION), _build):
            _restore_inputs(tree)
        _wire(scene, tree)


def sync(scene: bpy.types.Scene, tree: bpy.types.NodeTree | None = None) -> bpy.types.NodeTree | None:
    """Point the scene's group's drivers at ``scene`` and its Source node at the scene's wind object (a scene
    without a wind group is left alone)."""
    tree = tree or group_for(scene)
    if tree is None:
        return None
    if tree.get(common.STAMP_KEY) != str(VERSION) or not common.is_own_group(scene, tree, KIND):
        return ensure_wind(scene)
    return _wire(scene, tree)


def _wire(scene, tree):
    common.drive_values(tree, scene, DRIVEN)
    source = source_object(scene)
    node = tree.nodes["Source"]
    if node.inputs["Object"].default_value != source:
        node.inputs["Object"].default_value = source
    tree.nodes["Use Source"].outputs[0].default_value = 1.0 if source is not None else 0.0
    terrain = scene.envfx.wind.terrain_object
    if terrain is not None and scene.objects.get(terrain.name) is not terrain:
        terrain = None
    if tree.nodes["Terrain"].inputs["Object"].default_value != terrain:
        tree.nodes["Terrain"].inputs["Object"].default_value = terrain
    tree.nodes["Use Terrain"].outputs[0].default_value = 1.0 if terrain is not None else 0.0
    common.point_bend_reader(tree, bend_nodes.shown_group(terrain))
    if source is not None:
        common.drive_values(tree, source, {"Source Strength": "field.strength"}, id_type="OBJECT")
    elif tree.animation_data and tree.animation_data.drivers.find(common.value_path("Source Strength")):
        tree.driver_remove(common.value_path("Source Strength"))
    _wire_push(scene, tree)
    return tree


def _wire_push(scene, tree):
    """Point the grass push at the scene's baked buffer (its image, and drivers that read the window and frames
    from the buffer's own group: a re-bake or a follow window's keyframed origin reach the grass), or switch it
    off."""
    image, buffer_tree = push_source(scene)
    node = tree.nodes["Push Image"]
    if node.image != image:
        node.image = image
    on = tree.nodes["Push On"].outputs[0]
    if on.default_value != (1.0 if image is not None else 0.0):
        on.default_value = 1.0 if image is not None else 0.0
    is_field = 1.0 if image is not None and image.get(FIELD_KEY) else 0.0
    field = tree.nodes["Push Field"].outputs[0]
    if field.default_value != is_field:
        field.default_value = is_field
    if buffer_tree is not None:
        # the bake's group may have no user but these drivers (a bake loaded for the push alone, no snow reading
        # it): a fake user keeps it in the saved file, else the push lost its window and frames on reload
        if not buffer_tree.use_fake_user:
            buffer_tree.use_fake_user = True
        driven = {label: common.value_path(src) for label, src in PUSH_FROM_BUFFER.items()}
        common.drive_values(tree, buffer_tree, driven, id_type="NODETREE")
    elif tree.animation_data is not None:
        for label in PUSH_FROM_BUFFER:
            if tree.animation_data.drivers.find(common.value_path(label)):
                tree.driver_remove(common.value_path(label))


def is_buffer_image(image: bpy.types.Image | None) -> bool:
    """Whether ``image`` is a baked interaction buffer that a bake's group in this file reads."""
    return buffer_group_of(image) is not None


def _bake_group(tree) -> bool:
    return snow_buffer.is_buffer_group(tree) or snow_buffer.is_ripples_group(tree)


def buffer_group_of(image: bpy.types.Image | None) -> bpy.types.NodeTree | None:
    """The bake's group ("EnvFX Snow Buffer", or "EnvFX Water Ripples") that reads ``image``, or None."""
    if image is None:
        return None
    return next((t for t in bpy.data.node_groups if _bake_group(t) and "Buffer" in t.nodes
                 and cast(bpy.types.NodeSocketImage, t.nodes["Buffer"].inputs["Image"]).default_value == image), None)


def push_source(scene) -> tuple[bpy.types.Image, bpy.types.NodeTree] | tuple[None, None]:
    """(image, its bake's group) the scene's grass push reads, or (None, None) when push is off or has no buffer."""
    s = scene.envfx.wind
    if not s.grass_push:
        return None, None
    tree = buffer_group_of(s.push_buffer)
    return (s.push_buffer, tree) if tree is not None else (None, None)


def push_params(scene, frame: int) -> core_wind.GrassPush | None:
    """The scene's grass push at ``frame`` as the numpy twin reads it (``core.wind.GrassPush``: the bake's frame
    read from its EXR file, the window of the bake's group), or None when push is off. Call after
    ``scene.frame_set(frame)`` (a follow window's origin is keyframed)."""
    image, tree = push_source(scene)
    if image is None or tree is None:  # (both None, or neither)
        return None
    s = scene.envfx.wind
    first, last = (cast(bpy.types.NodeSocketFloat, tree.nodes[k].outputs[0]).default_value
                   for k in ("First Frame", "Last Frame"))
    path = bpy.path.abspath(image.filepath)
    if image.source == "SEQUENCE":
        meta = core_snow.read_buffer_metadata(os.path.join(os.path.dirname(path), "snow_buffer.json"))
        baked = max(min(frame, last), first)
        entry = next(f for f in meta["frames"] if f["frame"] == round(baked))
        path = os.path.join(os.path.dirname(path), entry["file"])
    return core_wind.GrassPush(
        buffer=core_snow.read_exr(path), origin=tuple(cast(bpy.types.NodeSocketFloat, tree.nodes[k].outputs[0])
                                                      .default_value for k in ("Origin X", "Origin Y")),
        size=cast(bpy.types.NodeSocketFloat, tree.nodes["Size"].outputs[0]).default_value, strength=s.push_strength,
        sway=s.push_sway,
        started=frame + 0.5 > first)


def _out_of_sync(scene, tree) -> bool:
    """Whether ``tree`` still points at a wind object or terrain object that was deleted or unlinked (or misses one
    that is set)."""
    source = source_object(scene)
    terrain = scene.envfx.wind.terrain_object
    if terrain is not None and scene.objects.get(terrain.name) is not terrain:
        terrain = None
    return (tree.nodes["Source"].inputs["Object"].default_value != source
            or tree.nodes["Use Source"].outputs[0].default_value != (1.0 if source is not None else 0.0)
            or tree.nodes["Terrain"].inputs["Object"].default_value != terrain
            or tree.nodes.get("Push Image") is None or tree.nodes["Push Image"].image != push_source(scene)[0])


def keep_in_sync(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
    """(depsgraph_update_post, handlers.py) When the wind object was deleted or unlinked (or a terrain object), point
    the scene's group back at its own settings, so the live wind and ``params_from_scene`` agree."""
    tree = group_for(scene)
    if tree is None or tree.library is not None or tree.nodes.get("Source") is None:
        return
    if _out_of_sync(scene, tree):
        sync(scene, tree)


def keep_in_sync_on_frame(scene: bpy.types.Scene, *_args) -> None:
    """(frame_change_pre, handlers.py) The same, before the frame is evaluated. A script that deletes the wind object
    and steps frames (``frame_set``) fires no depsgraph update in background mode, so the dead source moved the
    plants until some unrelated change. Only re-wires the scene's own, current group here (a group to rebuild or
    split is left to the depsgraph handler: re-pointing modifiers inside a frame change crashed Blender 4.2)."""
    tree = group_for(scene)
    if tree is None or tree.library is not None or tree.nodes.get("Source") is None:
        return
    if (_out_of_sync(scene, tree) and tree.get(common.STAMP_KEY) == str(VERSION)
            and common.is_own_group(scene, tree, KIND)):
        _wire(scene, tree)


def sync_terrain_bend(scene: bpy.types.Scene) -> bool:
    """Point the terrain follow of ``scene``'s wind group at the bend its terrain object shows (or at none):
    the grass stands on the terrain's physical surface, and its own bend draws it on the bent one. Returns
    whether anything changed."""
    tree = group_for(scene)
    if tree is None or tree.library is not None or tree.nodes.get(common.BEND_READER) is None:
        return False
    terrain = tree.nodes["Terrain"].inputs["Object"].default_value
    return common.point_bend_reader(tree, bend_nodes.shown_group(terrain))


def source_object(scene) -> bpy.types.Object | None:
    """The scene's wind object when it is set, still in the scene and a Wind force field; else None."""
    obj = scene.envfx.wind.source_object
    if obj is None or scene.objects.get(obj.name) is not obj:
        return None
    if obj.field is None or obj.field.type != "WIND":
        return None
    return obj


def params_from_scene(scene) -> core_wind.SceneWind:
    """The scene's wind as ``core.wind.SceneWind`` (direction and strength from the source object if any)."""
    s = scene.envfx.wind
    source = source_object(scene)
    if source is not None:
        z_axis = source.matrix_world.to_3x3().col[2]
        field = cast(bpy.types.FieldSettings, source.field)  # a Wind force field (source_object)
        direction, strength = (z_axis[0], z_axis[1], 0.0), field.strength
    else:
        direction, strength = (math.cos(s.direction), math.sin(s.direction), 0.0), s.strength
    return core_wind.SceneWind(
        direction=direction, strength=strength, gust_strength=s.gust_strength, gust_frequency=s.gust_frequency,
        loop_frames=s.loop_frames, fps=scene.render.fps / scene.render.fps_base, ambient=s.ambient,
        grass_tilt=s.grass_tilt, fade_start=s.grass_fade_start, fade_end=s.grass_fade_end)


def asset_params(obj) -> core_wind.AssetWind:
    w = obj.envfx.wind
    return core_wind.AssetWind(
        category=w.category, rigidity=w.rigidity, bend=w.bend, sway=w.sway, lift=w.lift, micro=w.micro,
        ramp=w.ramp, main_bend=w.main_bend, asset_height=w.asset_height)


def asset_input_values(obj) -> dict[str, float]:
    """Modifier input values for ``obj`` from ``object.envfx.wind``."""
    w = obj.envfx.wind
    return {
        "Rigidity": w.rigidity, "Bend": w.bend, "Sway": w.sway, "Lift": w.lift, "Micro": w.micro, "Ramp": w.ramp,
        "Main Bend": 1.0 if w.main_bend else 0.0,
        "Spring Hz": core_wind.SPRING_HZ[w.category], "Branch Hz": core_wind.BRANCH_HZ[w.category],
        "Asset Height": w.asset_height, "Grass": 1.0 if w.category == "GRASS" else 0.0,
    }


def sync_object(obj) -> None:
    """Copy ``object.envfx.wind`` into the object's wind modifier inputs."""
    mods = [m for m in obj.modifiers if m.type == "NODES" and is_wind_group(m.node_group)]
    for mod in mods:
        for name, value in asset_input_values(obj).items():
            ident = common.input_identifier(mod.node_group, name)
            if mod[ident] != value:
                mod[ident] = float(value)
    if mods:
        obj.update_tag()
