"""Wind on the GPU: the live wind of ``core.wind.wind_offsets`` as vertex displacement in an object's materials.

A game moves its vegetation in the vertex shader; Eevee and Cycles can too (``gpu_displace``). An object with Wind
on GPU (``object.envfx.wind.gpu``) has no wind modifier: its materials get the shader group "EnvFX Wind GPU", which
computes the wind's object-space offset of each vertex from the hidden per-vertex data the wind writes on the mesh
(``core.wind.LIVE_ATTRS``) and hands it to the Material Output as an object-space vector displacement. A frame
change computes nothing for it on the CPU beyond the group's few drivers, however many vertices it has.

One group serves the file. Its scene numbers come from the scene being drawn (context-property drivers): the loop
time, the quantised gust frequencies, the wind's direction and strength from the scene's wind clock
(``wind_rigid``: the clock follows the scene's settings or its wind object), the gust strength, loop and grass
settings from the scene's settings, its camera and the window of its grass push through scene properties that
``sync_scene`` keeps. Per object it reads the asset's settings from object properties (``GATE`` and ``PARAMS``,
kept by ``sync_object``), its origin and matrix from the object being drawn, so it computes the gust at the asset's
origin, the effective wind and every oscillator as the modifier's group does, then per vertex the swing and the
motion that keeps lengths (``core.wind.keep_lengths``). Grass computes each blade's wind at its root from every
vertex of the blade (``core.wind.blade_wind``: the same numbers on each), the camera's tilt and fade, the wobble
along the rest normal (``NORMAL_ATTR``) and the actors' push from the buffer's texels (``core.wind.push_lean``).
Objects without ``GATE`` do not move, so a material may be shared with objects that are not in the wind this way.
"""

from __future__ import annotations

import math
import re
from typing import cast

import bpy
import numpy as np

from .. import bridge
from ..core import wind as core_wind
from . import bend_gpu, common, gpu_displace
from . import wind as wind_nodes
from . import wind_rigid

GROUP_NAME = "EnvFX Wind GPU"
KIND = "wind_gpu"
VERSION = "2"  # 2: grass
GATE = "envfx_wind_gpu"  # object property (asset height, grass 1 or 0, 0); present: the object moves in its materials
PARAMS = ("envfx_wind_gpu_a", "envfx_wind_gpu_b", "envfx_wind_gpu_c")  # (rigidity, bend, sway), (lift, micro,
# ramp), (main bend, spring Hz, branch Hz)
NORMAL_ATTR = ".EnvFX_Wind_Normal"  # grass: each vertex's rest normal (object space), the wobble's direction
MATERIAL_KEY = gpu_displace.KEYS[1]  # material property: its state before (JSON)
NODE_NAME = "EnvFX Wind GPU"
ADD_NAME = "EnvFX Wind GPU Add"
# scene properties the group reads, kept by ``sync_scene``: the scene's camera (or ``CAMERA_NAME``, a hidden empty,
# without one) and whether it has one; the group of the baked buffer its grass push reads, and whether it pushes
CAMERA_KEY = "envfx_wind_gpu_camera"
HAS_CAMERA_KEY = "envfx_wind_gpu_has_camera"
PUSH_KEY = "envfx_wind_gpu_push"
PUSH_ON_KEY = "envfx_wind_gpu_push_on"
CAMERA_NAME = ".EnvFX Wind GPU Camera"
NO_PUSH_NAME = ".EnvFX Wind GPU No Push"  # the group PUSH_KEY points at without a push (``no_push_group``)
NO_PUSH_KIND = "wind_gpu_no_push"
# the group's Image Texture nodes of the push buffer: the texels around a blade's root
PUSH_IMAGES = tuple(f"Push Texel {i} {j}" for i, j in ((0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2), (1, 2)))

_CLOCK = common.scene_key(wind_rigid.KIND)
_BUFFER = f'["{PUSH_KEY}"].nodes'
# the context-property variables of the group's drivers: name -> path on the scene being drawn
_VARIABLES = {
    "t": f'["{_CLOCK}"]["{wind_rigid.TIME_PROP}"][0]',
    **{f"q{i + 1}": f'["{_CLOCK}"]["{wind_rigid.TIME_PROP}"][{i + 1}]' for i in range(3)},
    "dx": f'["{_CLOCK}"]["{wind_rigid.CLOCK_PROP}"][0]', "dy": f'["{_CLOCK}"]["{wind_rigid.CLOCK_PROP}"][1]',
    "s": f'["{_CLOCK}"]["{wind_rigid.CLOCK_PROP}"][2]',
    "g": "envfx.wind.gust_strength", "L": "envfx.wind.loop_frames", "fps": "render.fps", "fpsb": "render.fps_base",
    "amb": "envfx.wind.ambient", "tilt": "envfx.wind.grass_tilt", "fs": "envfx.wind.grass_fade_start",
    "fe": "envfx.wind.grass_fade_end",
    **{f"c{i}": f'["{CAMERA_KEY}"].matrix_world[3][{i}]' for i in range(3)},
    **{f"z{i}": f'["{CAMERA_KEY}"].matrix_world[2][{i}]' for i in range(3)},
    "cam": f'["{HAS_CAMERA_KEY}"]', "pon": f'["{PUSH_ON_KEY}"]',
    "pst": "envfx.wind.push_strength", "psw": "envfx.wind.push_sway",
    **{f"p{k}": f'{_BUFFER}["{name}"].outputs[0].default_value' for k, name in
       (("x", "Origin X"), ("y", "Origin Y"), ("s", "Size"), ("f", "First Frame"))},
}
_PERIOD = "L*fpsb/fps"


def _quantized(freq: float) -> str:
    return f"max(floor({freq!r}*{_PERIOD}+0.5),1)/({_PERIOD}) if L>0.5 else {freq!r}"


# the group's Value nodes: label -> the expression their driver computes once a frame
DRIVEN = {
    "T": "t", "Q1": "q1", "Q2": "q2", "Q3": "q3", "Dx": "dx", "Dy": "dy", "S": "s", "G": "g",
    "Period": f"{_PERIOD} if L>0.5 else 1", "Looped": "1 if L>0.5 else 0",
    **{f"M{j + 1}": _quantized(f) for j, f in enumerate(core_wind.MICRO_HZ)},
    "Ambient": "amb", "Tilt": "tilt", "Fade Start": "fs", "Fade End": "fe",
    "A1": _quantized(core_wind.AMBIENT_HZ), "A2": _quantized(2.0 * core_wind.AMBIENT_HZ),
    "Wobble Hz": _quantized(core_wind.WOBBLE_HZ),
    "Cam X": "c0", "Cam Y": "c1", "Cam Z": "c2", "Has Camera": "cam",
    "Cam Down": "max(z2/sqrt(z0*z0+z1*z1+z2*z2),0) if z0*z0+z1*z1+z2*z2>0 else 0",
    "Push On": "pon", "Push Strength": "pst", "Push Sway": "psw",
    "Push Origin X": "px", "Push Origin Y": "py", "Push Size": "ps", "Push Started": "1 if frame+0.5>pf else 0",
}
# Value nodes set by ``sync_scene`` from the push buffer's image: its size and whether it is a push field
SET_VALUES = ("Push W", "Push H", "Push Field")


def group() -> bpy.types.ShaderNodeTree | None:
    """The file's group, or None."""
    return gpu_displace.file_group(KIND)


def ensure_group() -> bpy.types.ShaderNodeTree:
    """The file's group, built when missing or outdated."""
    return gpu_displace.ensure_file_group(KIND, GROUP_NAME, VERSION, _build)


def _drive(tree, label: str, expression: str) -> None:
    fcurve = tree.driver_add(common.value_path(label))
    common.straighten(fcurve)
    driver = fcurve.driver
    driver.type = "SCRIPTED"
    words = set(re.findall(r"[A-Za-z_]\w*", expression))
    for name, path in _VARIABLES.items():
        if name in words:
            var = driver.variables.new()
            var.name = name
            var.type = "CONTEXT_PROP"
            var.targets[0].context_property = "ACTIVE_SCENE"
            var.targets[0].data_path = path
    driver.expression = expression


def _build(tree) -> None:
    """The graph: per object (the same on every vertex, which the GPU computes per vertex) the gust at the origin,
    the effective wind and the oscillators; per vertex the tree's offset and the grass's, one of them chosen by the
    object's grass flag."""
    b = common.Builder(tree)
    common.socket(tree, "Displacement", "OUTPUT", "NodeSocketVector")
    out = b.node("NodeGroupOutput", "Group Output", location=(4000, 0))
    val = {label: b.value(label, 0.0) for label in (*DRIVEN, *SET_VALUES)}
    for i, label in enumerate((*DRIVEN, *SET_VALUES)):
        tree.nodes[label].location = (-1400, -120 * i)
        if label in DRIVEN:
            _drive(tree, label, DRIVEN[label])
    g = _Graph(b, val)
    tree_offset = g.tree_offset()
    grass_offset = g.grass_offset()
    offset = b.vmath("ADD", tree_offset, b.vmath("SCALE", b.vmath("SUBTRACT", grass_offset, tree_offset),
                                                 scale=g.grass), label="Offset")
    vector = b.node("ShaderNodeVectorDisplacement", "Object Displacement", space="OBJECT")
    b.link(offset, vector.inputs["Vector"])
    vector.inputs["Midlevel"].default_value = 0.0
    vector.inputs["Scale"].default_value = 1.0  # (Blender 5.0's default is 0.01)
    b.link(vector.outputs[0], out.inputs[0])


class _Graph:
    """The shared per-object part of the graph (made by ``__init__``) and the two motions built on it."""

    def __init__(self, b, val):
        self.b, self.val = b, val
        m = self.m = b.math
        self.height, self.grass, _ = self.sep(self.attr(GATE, "OBJECT", "Height Grass").outputs["Vector"], "Gate")
        self.rig, bend_s, sway_s = self.sep(self.attr(PARAMS[0], "OBJECT", "Rigidity Bend Sway").outputs["Vector"],
                                            "Asset A")
        lift_s, micro_s, self.ramp = self.sep(self.attr(PARAMS[1], "OBJECT", "Lift Micro Ramp").outputs["Vector"],
                                              "Asset B")
        main_on, self.spring, branch_hz = self.sep(self.attr(PARAMS[2], "OBJECT", "Main Spring Branch")
                                                   .outputs["Vector"], "Asset C")
        self.info = b.node("ShaderNodeObjectInfo", "Object Info")
        ox, oy, _oz = self.sep(self.info.outputs["Location"], "Origin")
        # the gust at the origin (core.wind.gust), the effective wind; grass: every term per unit of wind
        spatial = [m("MULTIPLY_ADD", ox, w[0], m("MULTIPLY", oy, w[1])) for w in core_wind.GUST_WAVES]
        self.eff = self.effective(self.gust(spatial, "Gust"), "Effective")
        asset_wind = m("ADD", self.eff, m("MULTIPLY", self.grass, m("SUBTRACT", 1.0, self.eff)), label="Asset Wind")
        k = m("DIVIDE", m("MULTIPLY", asset_wind, self.height), self.rig, label="K")
        self.main = m("MULTIPLY", m("MULTIPLY", k, main_on), core_wind.MAIN_SCALE, label="Main")
        bend = m("MULTIPLY", m("MULTIPLY", k, bend_s), core_wind.BRANCH_SCALE, label="Bend")
        # branch oscillations along the wind, across it and up (core.wind.live_terms)
        self.d = b.combine_xyz(val["Dx"], val["Dy"], 0.0, label="Wind Dir")
        self.across = b.combine_xyz(m("MULTIPLY", val["Dy"], -1.0), val["Dx"], 0.0, label="Across")
        amps = (m("MULTIPLY", bend, 0.3), m("MULTIPLY", m("MULTIPLY", k, sway_s), 0.5 * core_wind.BRANCH_SCALE),
                m("MULTIPLY", m("MULTIPLY", k, lift_s), 0.4 * core_wind.BRANCH_SCALE))
        vc = vs = None
        for j, (mult, ph, amp, axis) in enumerate(zip(core_wind.BRANCH_MULTS, core_wind.BRANCH_PHASES, amps,
                                                      (self.d, self.across, (0.0, 0.0, 1.0)))):
            f = self.quantize(m("MULTIPLY", branch_hz, mult), f"Branch {j + 1} Hz")
            arg = m("MULTIPLY_ADD", m("MULTIPLY", f, 2.0 * math.pi), val["T"], ph, label=f"Branch {j + 1} Angle")
            sin_part = b.vmath("SCALE", axis, scale=m("MULTIPLY", amp, m("SINE", arg)))
            cos_part = b.vmath("SCALE", axis, scale=m("MULTIPLY", amp, m("COSINE", arg)))
            vc = sin_part if vc is None else b.vmath("ADD", vc, sin_part)
            vs = cos_part if vs is None else b.vmath("ADD", vs, cos_part)
        self.d_l = self.to_object(self.d, "Dir Local")
        vc_l, vs_l = self.to_object(vc, "Vc Local"), self.to_object(vs, "Vs Local")
        self.up_l = self.to_object((0.0, 0.0, 1.0), "Up Local")
        # leaf flutter per object axis
        mamp = m("MULTIPLY", m("MULTIPLY", k, micro_s), core_wind.MICRO_SCALE, label="Micro Amp")
        margs = [m("MULTIPLY_ADD", m("MULTIPLY", val[f"M{j + 1}"], 2.0 * math.pi), val["T"], ph)
                 for j, ph in enumerate(core_wind.MICRO_PHASES)]
        mc = b.vmath("SCALE", b.combine_xyz(*(m("SINE", a) for a in margs)), scale=mamp, label="Mc")
        ms = b.vmath("SCALE", b.combine_xyz(*(m("COSINE", a) for a in margs)), scale=mamp, label="Ms")
        # per vertex: the swing (core.wind.wind_swing; per unit of wind for grass)
        names = core_wind.LIVE_ATTRS
        ba, bac, bas = self.sep(self.attr(names[0], "GEOMETRY", "Branch").outputs["Vector"], "Branch XYZ")
        rc, rs, h2 = self.sep(self.attr(names[1], "GEOMETRY", "Leaf").outputs["Vector"], "Leaf XYZ")
        self.hh = self.attr(names[2], "GEOMETRY", "H").outputs["Fac"]
        self.rel = self.attr(names[3], "GEOMETRY", "Pivot").outputs["Vector"]
        self.ha = self.attr(names[4], "GEOMETRY", "Carry").outputs["Fac"]
        along = m("MULTIPLY_ADD", h2, self.main, m("MULTIPLY", ba, bend), label="Along")
        swing = b.vmath("SCALE", self.d_l, scale=along)
        for weight, vec in ((bac, vc_l), (bas, vs_l), (rc, mc), (rs, ms)):
            swing = b.vmath("ADD", swing, b.vmath("SCALE", vec, scale=weight))
        self.swing = swing

    # --- helpers ---
    def sep(self, vec, label):
        node = self.b.node("ShaderNodeSeparateXYZ", label)
        self.b.feed(node.inputs[0], vec)
        return node.outputs["X"], node.outputs["Y"], node.outputs["Z"]

    def attr(self, name, kind, label):
        return self.b.node("ShaderNodeAttribute", label, attribute_type=kind, attribute_name=name)

    def to_object(self, vec, label, kind="VECTOR", to="OBJECT"):
        """A world direction (or point) in object space (or the reverse, ``to="WORLD"``)."""
        node = self.b.node("ShaderNodeVectorTransform", label, vector_type=kind,
                           convert_from="WORLD" if to == "OBJECT" else "OBJECT", convert_to=to)
        self.b.feed(node.inputs[0], vec)
        return node.outputs[0]

    def quantize(self, freq, label):
        """core.wind.quantize with the loop's period (Period 1 without a loop)."""
        m, val = self.m, self.val
        rounded = m("MAXIMUM", m("FLOOR", m("MULTIPLY_ADD", freq, val["Period"], 0.5)), 1.0)
        looped = m("DIVIDE", rounded, val["Period"])
        return m("ADD", freq, m("MULTIPLY", m("SUBTRACT", looped, freq), val["Looped"]), label=label)

    def gust(self, spatial, label):
        """The spring-filtered gust with a spatial phase per wave (core.wind.gust)."""
        m, val = self.m, self.val
        terms = []
        for i, (amp, ph, sp) in enumerate(zip(core_wind.GUST_AMPS, core_wind.GUST_PHASES, spatial)):
            q = val[f"Q{i + 1}"]
            ratio = m("DIVIDE", q, self.spring)
            gain = m("DIVIDE", amp, m("MULTIPLY_ADD", ratio, ratio, 1.0))
            angle = m("ADD", m("MULTIPLY_ADD", m("MULTIPLY", q, 2.0 * math.pi), val["T"], sp),
                      m("SUBTRACT", ph, m("MULTIPLY", m("ARCTANGENT", ratio), 2.0)))
            terms.append(m("MULTIPLY", gain, m("SINE", angle)))
        return m("ADD", m("ADD", terms[0], terms[1]), terms[2], label=label)

    def effective(self, gust, label):
        """ramp(max(0, strength (1 + gust strength gust)))."""
        m, val = self.m, self.val
        raw = m("MAXIMUM", m("MULTIPLY", val["S"], m("MULTIPLY_ADD", val["G"], gust, 1.0)), 0.0)
        return m("DIVIDE", m("MULTIPLY", raw, m("ADD", self.ramp, 1.0)), m("MULTIPLY_ADD", self.ramp, raw, 1.0),
                 label=label)

    def keep(self, swing, lean, label):
        """core.wind.keep_lengths: the turn about the attach point and the carry along the axis ``lean``."""
        b, m = self.b, self.m
        q = b.vmath("ADD", self.rel, swing)
        ratio = m("DIVIDE", b.vmath("LENGTH", self.rel), b.vmath("LENGTH", q))  # (0 / 0 is 0)
        turned = b.vmath("SUBTRACT", b.vmath("SCALE", q, scale=ratio), self.rel, label=f"{label} Turned")
        chord = b.vmath("SUBTRACT", b.vmath("NORMALIZE", lean), b.vmath("NORMALIZE", self.up_l))
        carry = b.vmath("SCALE", chord, scale=m("MULTIPLY", m("MULTIPLY", self.ha, self.height),
                                                b.vmath("LENGTH", self.up_l)), label=f"{label} Carry")
        return b.vmath("ADD", turned, carry, label=f"{label} Offset")

    # --- the motions ---
    def tree_offset(self):
        """Trees, plants and specials: the swing kept in lengths, branches carried (up + hA main dir / H)."""
        b, m = self.b, self.m
        lean = b.vmath("ADD", self.up_l, b.vmath("SCALE", self.d_l, scale=m("DIVIDE", m("MULTIPLY", self.ha,
                                                                                          self.main), self.height)))
        return self.keep(self.swing, lean, "Tree")

    def grass_offset(self):
        """Grass (core.wind.blade_wind, wind_swing, keep_lengths, the fade): each blade's wind and figure-eight at
        its root ``X = M (p - Pivot)`` (every vertex of a blade computes the same), the camera's tilt, the actors'
        push from the buffer at the root, the wobble along the rest normal; kept in lengths, carried, faded."""
        b, m, val = self.b, self.m, self.val
        position = b.node("ShaderNodeNewGeometry", "Geometry").outputs["Position"]  # world, undisplaced
        root = b.vmath("SUBTRACT", position, self.to_object(self.rel, "Pivot World", to="WORLD"), label="Root")
        along = b.vmath("DOT_PRODUCT", root, self.d, label="Root Along Wind")
        travel = 2.0 * math.pi / core_wind.GUST_SPEED
        spatial = [m("MULTIPLY", m("MULTIPLY", val[f"Q{i + 1}"], -travel), along) for i in range(3)]
        eff = self.effective(self.gust(spatial, "Blade Gust"), "Blade Wind")
        eights = [m("SINE", m("MULTIPLY_ADD", m("MULTIPLY", val[a], 2.0 * math.pi), val["T"],
                              m("MULTIPLY", m("MULTIPLY", val[a], -travel), along))) for a in ("A1", "A2")]
        ambient = m("MULTIPLY", val["Ambient"], self.height)
        aamp = m("MULTIPLY", m("MULTIPLY", ambient, core_wind.AMBIENT_SCALE), eff, label="Eight Amp")
        eight = b.vmath("ADD", b.vmath("SCALE", self.d, scale=m("MULTIPLY", aamp, eights[0])),
                        b.vmath("SCALE", self.across, scale=m("MULTIPLY", m("MULTIPLY", aamp, 0.5), eights[1])),
                        label="Figure Eight")
        # the camera: its tilt (away from a camera that looks down) and the distance fade
        cam = b.combine_xyz(val["Cam X"], val["Cam Y"], val["Cam Z"], label="Camera")
        to_asset = b.vmath("SUBTRACT", self.info.outputs["Location"], cam)
        away = b.vmath("NORMALIZE", b.vmath("MULTIPLY", to_asset, (1.0, 1.0, 0.0)), label="Away")
        tilt = b.vmath("SCALE", away, scale=m("MULTIPLY", m("MULTIPLY", val["Tilt"], val["Cam Down"]),
                                              m("MULTIPLY", m("MULTIPLY", self.height, core_wind.TILT_SCALE),
                                                val["Has Camera"])), label="Tilt")
        fade_raw = m("DIVIDE", m("SUBTRACT", val["Fade End"], b.vmath("LENGTH", to_asset)),
                     m("SUBTRACT", val["Fade End"], val["Fade Start"]), use_clamp=True)
        fade_on = m("MULTIPLY", m("GREATER_THAN", val["Fade End"], val["Fade Start"]), val["Has Camera"])
        fade = m("SUBTRACT", 1.0, m("MULTIPLY", fade_on, m("SUBTRACT", 1.0, fade_raw)), label="Fade")
        extra = b.vmath("ADD", eight, tilt, label="Extra")
        lean_world = b.vmath("ADD", extra, self.push(root), label="Lean Pushed")
        # the wobble along the rest normal: eff ambient WOBBLE_SCALE H wave(p . WOBBLE_WAVE / 2 pi + fw t)
        p_obj = self.to_object(position, "Position Local", kind="POINT")
        wdot = b.vmath("DOT_PRODUCT", p_obj, tuple(v / (2.0 * math.pi) for v in core_wind.WOBBLE_WAVE))
        ww = m("WRAP", m("MULTIPLY_ADD", val["Wobble Hz"], val["T"], wdot), 0.5, -0.5)
        wave = m("MULTIPLY", m("MULTIPLY", ww, m("MULTIPLY_ADD", m("ABSOLUTE", ww), -2.0, 1.0)), 8.0)
        wamp = m("MULTIPLY", m("MULTIPLY", m("MULTIPLY", eff, ambient), core_wind.WOBBLE_SCALE),
                 m("MULTIPLY", self.hh, wave), label="Wobble")
        normal = self.attr(NORMAL_ATTR, "GEOMETRY", "Rest Normal").outputs["Vector"]
        swing = b.vmath("ADD", b.vmath("ADD", b.vmath("SCALE", self.swing, scale=eff),
                                       b.vmath("SCALE", self.to_object(lean_world, "Lean Local"), scale=self.hh)),
                        b.vmath("SCALE", normal, scale=wamp), label="Grass Swing")
        inv_h = m("DIVIDE", 1.0, self.height)
        lean = b.vmath("ADD", b.vmath("ADD", self.up_l, b.vmath("SCALE", self.to_object(extra, "Extra Local"),
                                                                 scale=inv_h)),
                       b.vmath("SCALE", self.d_l, scale=m("MULTIPLY", m("MULTIPLY", self.ha, eff),
                                                         m("MULTIPLY", self.main, inv_h))), label="Grass Axis")
        kept = self.keep(swing, lean, "Grass")
        return b.vmath("ADD", b.vmath("SCALE", kept, scale=fade),
                       b.vmath("SCALE", p_obj, scale=m("SUBTRACT", fade, 1.0)), label="Grass Faded")

    def push(self, root):
        """The world lean per unit of height actors give the blade whose root is ``root`` (core.wind.push_lean):
        the buffer's A and G at the root and A's slope (three samples, or one of a push field)."""
        b, m, val = self.b, self.m, self.val
        rx, ry, _rz = self.sep(root, "Root XYZ")
        inv_s = m("DIVIDE", 1.0, val["Push Size"])
        u = m("MULTIPLY", m("SUBTRACT", rx, val["Push Origin X"]), inv_s)
        v = m("MULTIPLY", m("SUBTRACT", ry, val["Push Origin Y"]), inv_s)
        # a push field is read one texel on, in an image one texel wider and taller: (u W + 1) / (W + 1), where W
        # is the field's (the buffer's plus one)
        w_buf, h_buf = m("SUBTRACT", val["Push W"], val["Push Field"]), m("SUBTRACT", val["Push H"], val["Push Field"])
        u = m("ADD", u, m("MULTIPLY", val["Push Field"], m("SUBTRACT", m("DIVIDE", m("MULTIPLY_ADD", u, w_buf, 1.0),
                                                                          val["Push W"]), u)))
        v = m("ADD", v, m("MULTIPLY", val["Push Field"], m("SUBTRACT", m("DIVIDE", m("MULTIPLY_ADD", v, h_buf, 1.0),
                                                                          val["Push H"]), v)))

        # bilinear samples made here from the texels (Closest), in full float: a GPU's own filtering weighs texels
        # in steps of 1/256, and the push's direction divides small slopes by PUSH_EPS, which shows those steps
        fx = m("SUBTRACT", m("MULTIPLY", u, val["Push W"]), 0.5)
        fy = m("SUBTRACT", m("MULTIPLY", v, val["Push H"]), 0.5)
        x0, y0 = m("FLOOR", fx), m("FLOOR", fy)
        tx, ty = m("SUBTRACT", fx, x0), m("SUBTRACT", fy, y0)
        texels = {}
        for i, j in ((0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2), (1, 2)):
            tex = b.node("ShaderNodeTexImage", f"Push Texel {i} {j}", interpolation="Closest",
                         extension="EXTEND")
            b.link(b.combine_xyz(m("DIVIDE", m("ADD", x0, i + 0.5), val["Push W"]),
                                 m("DIVIDE", m("ADD", y0, j + 0.5), val["Push H"]), 0.0), tex.inputs["Vector"])
            texels[i, j] = tex

        def bilinear(i, j, output):
            """The sample whose lower-left texel is (x0 + i, y0 + j): ``output`` "Color" or "Alpha"."""
            mix = "MIX" if output == "Color" else None

            def lerp(a, c, t):
                if mix:
                    return b.vmath("ADD", a, b.vmath("SCALE", b.vmath("SUBTRACT", c, a), scale=t))
                return m("MULTIPLY_ADD", m("SUBTRACT", c, a), t, a)

            low = lerp(texels[i, j].outputs[output], texels[i + 1, j].outputs[output], tx)
            high = lerp(texels[i, j + 1].outputs[output], texels[i + 1, j + 1].outputs[output], tx)
            return lerp(low, high, ty)

        a0 = bilinear(0, 0, "Alpha")
        field_gx, g0, field_gy = self.sep(bilinear(0, 0, "Color"), "Push Here RGB")
        buffer_gx = m("SUBTRACT", bilinear(1, 0, "Alpha"), a0)
        buffer_gy = m("SUBTRACT", bilinear(0, 1, "Alpha"), a0)
        gx = m("ADD", buffer_gx, m("MULTIPLY", val["Push Field"], m("SUBTRACT", field_gx, buffer_gx)))
        gy = m("ADD", buffer_gy, m("MULTIPLY", val["Push Field"], m("SUBTRACT", field_gy, buffer_gy)))
        gain = m("MULTIPLY", m("MULTIPLY", val["Push On"], val["Push Started"]), -1.0)
        amp = m("MULTIPLY", m("MULTIPLY_ADD", a0, val["Push Strength"], m("MULTIPLY", g0, val["Push Sway"])), gain)
        den = m("SQRT", m("MULTIPLY_ADD", gx, gx, m("MULTIPLY_ADD", gy, gy, core_wind.PUSH_EPS ** 2)))
        k = m("DIVIDE", amp, den)
        return b.combine_xyz(m("MULTIPLY", gx, k), m("MULTIPLY", gy, k), 0.0, label="Push")


# --- objects and materials ------------------------------------------------------------------------------------

def is_gpu_wind(obj: bpy.types.Object) -> bool:
    return GATE in obj


def object_values(obj: bpy.types.Object) -> dict[str, tuple[float, float, float]]:
    """The object properties the group reads for ``obj`` (``GATE``, ``PARAMS``) from ``object.envfx.wind``."""
    w = bridge.envfx_settings(obj).wind
    return {GATE: (float(w.asset_height), 1.0 if w.category == "GRASS" else 0.0, 0.0),
            PARAMS[0]: (float(w.rigidity), float(w.bend), float(w.sway)),
            PARAMS[1]: (float(w.lift), float(w.micro), float(w.ramp)),
            PARAMS[2]: (1.0 if w.main_bend else 0.0, core_wind.SPRING_HZ[w.category],
                        core_wind.BRANCH_HZ[w.category])}


def sync_object(obj: bpy.types.Object) -> None:
    """After ``object.envfx.wind`` changed: the properties the group reads follow (an object on the GPU only)."""
    if not is_gpu_wind(obj) or obj.library is not None:
        return
    changed = False
    for key, value in object_values(obj).items():
        now = obj.get(key)
        now = tuple(now) if hasattr(now, "__len__") else now
        if now != value:
            obj[key] = value
            changed = True
    if changed:
        write_normals(obj)
        obj.update_tag()


def material_reason(mat: bpy.types.Material | None) -> str | None:
    """Why ``mat`` cannot take the wind on the GPU, with what to do; None when it can (or already does)."""
    return gpu_displace.material_reason(mat, MATERIAL_KEY, "the wind", "Wind on GPU")


materials_of = gpu_displace.materials_of  # (the slots' materials, its own in the wind view)


def reach_of(obj: bpy.types.Object) -> float:
    """How far (metres) the wind may move a vertex of ``obj``: about its size (a vertex keeps its distance from its
    attach point, and a branch is carried by at most the asset's height), with room to spare."""
    size = max(obj.dimensions[i] for i in range(3))
    height = bridge.envfx_settings(obj).wind.asset_height * max(abs(obj.scale[i]) for i in range(3))
    return 2.0 * max(size, height) + 0.1


def add(obj: bpy.types.Object, tree: bpy.types.ShaderNodeTree) -> None:
    """Move ``obj`` in its materials (check ``material_reason`` for each first; its mesh holds the live data):
    the group in every material, its settings as the properties the group reads."""
    reach = reach_of(obj)
    for mat in materials_of(obj):
        gpu_displace.apply(mat, tree, reach, MATERIAL_KEY, NODE_NAME, ADD_NAME)
        bend_gpu.couple(mat)
    for key, value in object_values(obj).items():
        obj[key] = value
    write_normals(obj)
    obj.update_tag()


def write_normals(obj: bpy.types.Object) -> None:
    """Grass: the rest normal of each vertex (object space) as ``NORMAL_ATTR``, the wobble's direction (a vertex
    normal, as the modifier reads it, whatever the faces' shading); other assets have none."""
    mesh = obj.data
    if not isinstance(mesh, bpy.types.Mesh) or mesh.library is not None:
        return
    if bridge.envfx_settings(obj).wind.category != "GRASS":
        remove_normals(mesh)
        return
    normals = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.vertex_normals.foreach_get("vector", normals)
    bridge.write_point_attribute(mesh, NORMAL_ATTR, "FLOAT_VECTOR", normals.reshape(-1, 3))


def remove_normals(mesh: bpy.types.Mesh) -> None:
    attr = mesh.attributes.get(NORMAL_ATTR)
    if attr is not None:
        mesh.attributes.remove(attr)


def remove(obj: bpy.types.Object) -> None:
    """Take ``obj`` out of the wind on the GPU (its materials let go in ``release``; its mesh's rest normals go
    unless another object on the GPU shares it)."""
    for key in (GATE, *PARAMS):
        if key in obj:
            del obj[key]
    mesh = obj.data
    if (isinstance(mesh, bpy.types.Mesh) and mesh.library is None
            and not any(o.data == mesh and is_gpu_wind(o) for o in bpy.data.objects if o.type == "MESH")):
        remove_normals(mesh)
    obj.update_tag()


def release() -> None:
    """Give back every material no object in the wind on the GPU uses any more (and remove the group when nothing
    is)."""
    used = {m for o in bpy.data.objects if is_gpu_wind(o) for m in materials_of(o)}
    for mat in bpy.data.materials:
        if MATERIAL_KEY in mat and mat not in used and mat.library is None:
            gpu_displace.restore(mat, MATERIAL_KEY, NODE_NAME, ADD_NAME)
    if not any(is_gpu_wind(o) for o in bpy.data.objects):
        tree = group()
        if tree is not None and not tree.use_fake_user:
            bpy.data.node_groups.remove(tree)
        for scene in bpy.data.scenes:
            for key in (CAMERA_KEY, HAS_CAMERA_KEY, PUSH_KEY, PUSH_ON_KEY):
                if key in scene:
                    del scene[key]
        camera = bpy.data.objects.get(CAMERA_NAME)
        if camera is not None and camera.users == 0:
            bpy.data.objects.remove(camera)
        for other in [t for t in bpy.data.node_groups if t.get(common.KIND_KEY) == NO_PUSH_KIND]:
            if other.library is None and not other.use_fake_user:
                bpy.data.node_groups.remove(other)


def camera_object() -> bpy.types.Object:
    """The hidden empty a scene without a camera points at (made once, in no scene)."""
    obj = bpy.data.objects.get(CAMERA_NAME)
    if obj is None or obj.type != "EMPTY" or obj.library is not None:
        obj = bpy.data.objects.new(CAMERA_NAME, None)
    return obj


def no_push_group() -> bpy.types.NodeTree:
    """The hidden group a scene without a grass push points at: the window values a buffer's group has (so the
    group's drivers read numbers; its push is off)."""
    tree = next((t for t in bpy.data.node_groups if t.get(common.KIND_KEY) == NO_PUSH_KIND and t.library is None),
                None)
    if tree is None:
        tree = bpy.data.node_groups.new(NO_PUSH_NAME, "GeometryNodeTree")  # pyright: ignore[reportArgumentType]
        tree[common.KIND_KEY] = NO_PUSH_KIND
        b = common.Builder(tree)
        for label in ("Origin X", "Origin Y", "First Frame", "Last Frame"):
            b.value(label, 0.0)
        b.value("Size", 1.0)
    return tree


def sync_scene(scene: bpy.types.Scene) -> bool:
    """(depsgraph_update_post, frame_change_pre, Add Wind) Point the scene's ``CAMERA_KEY`` at its camera (the
    hidden empty without one) and its ``PUSH_KEY`` at the group of the buffer its grass push reads, and give the
    group that buffer's image (a baked sequence played over its frames, or the live buffer's image) with its size:
    a file's grass on the GPU reads one push buffer, the last scene's to set it. Only for a file with the group;
    returns whether anything changed (the group's drivers then get a fresh chance)."""
    tree = group()
    if tree is None or scene.library is not None:
        return False
    changed = False
    camera = scene.camera
    has = camera is not None and scene.objects.get(camera.name) is camera
    if not has:
        camera = camera_object()
    if scene.get(CAMERA_KEY) != camera or scene.get(HAS_CAMERA_KEY) != (1.0 if has else 0.0):
        scene[CAMERA_KEY] = camera
        scene[HAS_CAMERA_KEY] = 1.0 if has else 0.0
        changed = True
    image, buffer_tree = wind_nodes.push_source(scene)
    on = 1.0 if image is not None else 0.0
    window = buffer_tree if buffer_tree is not None else no_push_group()
    if scene.get(PUSH_ON_KEY) != on or scene.get(PUSH_KEY) != window:
        scene[PUSH_ON_KEY] = on
        scene[PUSH_KEY] = window
        changed = True
    if image is not None and buffer_tree is not None:
        changed |= _wire_push(tree, image, buffer_tree)
    if changed:
        revive()
    return changed


def _wire_push(tree, image: bpy.types.Image, buffer_tree: bpy.types.NodeTree) -> bool:
    """The group's push samples read ``image``: a sequence over its bake's frames (the last one held after them, as
    the modifier's); its size and whether it is a push field in the group's values."""
    changed = False
    first, last = (int(round(cast(bpy.types.NodeSocketFloat, buffer_tree.nodes[k].outputs[0]).default_value))
                   for k in ("First Frame", "Last Frame"))
    for name in PUSH_IMAGES:
        node = tree.nodes[name]
        if node.image != image:
            node.image = image
            changed = True
        user = node.image_user
        if image.source == "SEQUENCE":
            wanted = (first, max(last - first + 1, 1), first - 1, False, True)
            if (user.frame_start, user.frame_duration, user.frame_offset, user.use_cyclic,
                    user.use_auto_refresh) != wanted:
                (user.frame_start, user.frame_duration, user.frame_offset, user.use_cyclic,
                 user.use_auto_refresh) = wanted
                changed = True
    field = 1.0 if image.get(wind_nodes.FIELD_KEY) else 0.0
    for label, value in (("Push W", float(image.size[0])), ("Push H", float(image.size[1])), ("Push Field", field)):
        socket = tree.nodes[label].outputs[0]
        if socket.default_value != value:  # pyright: ignore[reportAttributeAccessIssue] -- a Value node's float
            socket.default_value = value  # pyright: ignore[reportAttributeAccessIssue]
            changed = True
    return changed


def keep_clock(scene: bpy.types.Scene) -> bool:
    """(depsgraph_update_post) Give ``scene`` a clock when it shows objects in the wind on the GPU and has none of
    its own (an object appended from another file, a full copy of a scene, a deleted clock): the group reads the
    clock of the scene being drawn. Cheap when nothing is to do; returns whether a clock was made."""
    if scene.library is not None or wind_rigid.clock_of(scene) is not None or group() is None:
        return False
    if not any(is_gpu_wind(o) for o in scene.objects):
        return False
    wind_rigid.ensure_clock(scene)
    revive()
    return True


def revive() -> None:
    """Evaluate the group's drivers again (Blender stops evaluating a driver that failed: one that read a scene
    with no clock)."""
    for tree in [t for t in bpy.data.node_groups if t.get(common.KIND_KEY) == KIND and t.library is None]:
        for fcurve in tree.animation_data.drivers if tree.animation_data is not None else ():
            common.revive(fcurve)
        tree.update_tag()


def reason(obj: bpy.types.Object, scene: bpy.types.Scene) -> str | None:
    """Why ``obj`` cannot take ``scene``'s wind on the GPU (besides what any wind needs), with what to do; None when
    it can."""
    terrain = bridge.envfx_settings(scene).wind.terrain_object
    if bridge.envfx_settings(obj).wind.category == "GRASS" and terrain is not None:
        return (f"it is grass and the scene's wind follows the terrain object {terrain.name!r}, which only the "
                f"wind's modifier casts rays onto; clear the Terrain Object, or switch Wind on GPU off for it")
    if not materials_of(obj):
        return ("it has no material: Wind on GPU moves an object in its materials; give it one, or switch Wind on "
                "GPU off to move it with the modifier")
    for mat in materials_of(obj):
        why = material_reason(mat)
        if why is not None:
            return why
    return None

