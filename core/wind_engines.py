"""The live wind in game engines: ``core.wind.live`` (the twin of the "EnvFX Wind" node group) as vertex shader code
for Godot, Unity and Unreal.

Per vertex the shader reads what the live wind reads in Blender: the rest position, the normal and the live
attributes of ``core.wind.live.live_attributes`` (``LIVE_ATTRS``: Branch = (B, Bc, Bs), Leaf = (Rc, Rs, H^2), H,
Pivot (a vector), Carry, baked from the vertex colour EnvFX_Wind, EnvFX_Height and the rest positions; the UV
channels carry B, Bc, Bs, Rc, Rs, H, Pivot and Carry, the shader squares H); per asset, its wind settings
(constants of the generated include: category, rigidity, bend, sway, lift, micro, ramp, main bend, height); per
frame, the scene's wind as uniforms (direction, strength, gusts, loop, fps, grass ambient, tilt and fade, the
camera) and the object's world matrix. It returns the object-space offset of ``core.wind.live.wind_offsets``
(every motion term: whole-asset bend, branch bend, sway and lift, leaf flutter, gusts through the category's
spring response, grass figure-eight, wobble, camera tilt and distance fade, the length-keeping arcs; the terrain
following of grass is Blender's: a game places its grass on its own terrain). Grass goes blade by blade as in
``core.wind.live.blade_wind``: each vertex's blade root ``X = M (p - Pivot)`` (the object matrix and the Pivot
channel) takes the gust and the figure-eight of the world origin at ``t - X.d / GUST_SPEED``.

Axes: the shader takes everything in the engine's axes and units (``core.bend_engines``: Godot glTF ``(x, z, -y)``,
Unity FBX ``(-x, z, -y)``, Unreal FBX ``100 * (x, -y, z)``, times the FBX unit scale) and turns it into Blender's
(``A^T v / k``) first, runs the Blender formulas as they are, and turns the offset back (``k A off``); the
Pivot attribute is a length (engine units), the other attributes are plain numbers. Matches ``core/wind/live.py``
as of this module's ``LIVE_VERSION``.

Grass that actors push (``core.wind.push``): a grass include also has ``*_push`` variants of its functions, which
read the baked interaction buffer's frame as a texture (G sway and A push-down at the blade's root, the slope of A
one texel to +x and +y, texel by texel as the preview's bilinear read with the edge texels extended) and add
``push_lean`` times H to the swing. The blade's root is the one the gusts already take, ``M (p - Pivot)``: the
Pivot channels carry it, so the push needs no channel of its own (Blender keeps the same point per face,
``.EnvFX_Wind_Root``, only to save the geometry nodes the per-vertex reads). The buffer's window, frames, strength
and sway come as two uniforms (``push_uniforms``; ``envfx_wind.json``'s ``push``, per baked frame).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import bend_engines, wind_rigid_engines
from .outputs import write_text_files
from .vat import unique_stems
from .wind import live as core_live
from .wind.params import (AMBIENT_HZ, AMBIENT_SCALE, BRANCH_HZ, BRANCH_MULTS, BRANCH_PHASES, BRANCH_SCALE, GUST_AMPS,
                          GUST_MULTS, GUST_PHASES, GUST_SPEED, GUST_WAVES, LIVE_ATTRS, MAIN_SCALE, MICRO_HZ,
                          MICRO_PHASES, MICRO_SCALE, SPRING_HZ, TILT_SCALE, WOBBLE_HZ, WOBBLE_SCALE, WOBBLE_WAVE)
from .wind.push import PUSH_EPS
from .wind_shader_text import axes, axes_source, quantize_source
from .wind_shader_text import num as _num

ENGINES = tuple(bend_engines.ENGINES)
INCLUDE = {"GODOT": "envfx_wind.gdshaderinc", "UNITY": "EnvFXWind.hlsl", "UNREAL": "EnvFXWind.ush"}
JSON_NAME = "envfx_wind.json"
# a grass include's functions with the grass push, per engine (Unity: the Shader Graph Custom Function's name)
PUSH_FUNCTIONS = {"GODOT": "envfx_wind_offset_godot_push", "UNITY": "EnvFXWindPush",
                  "UNREAL": "envfx_wind_offset_uv_push"}
# the UV maps Export for Game Engines writes: (name, the two live attributes (index in LIVE_ATTRS, component)):
# B, Bc, Bs = Branch, Rc, Rs = Leaf.xy, H, Pivot, Carry (the Leaf's third, H^2, is H * H in the shader)
CHANNELS = (("EnvFX_Wind_BH", ((0, 0), (2, None))), ("EnvFX_Wind_Bcs", ((0, 1), (0, 2))),
            ("EnvFX_Wind_Rcs", ((1, 0), (1, 1))), ("EnvFX_Wind_PivotXY", ((3, 0), (3, 1))),
            ("EnvFX_Wind_PivotZ", ((3, 2), (4, None))))
# whether the engine's import counts V from the top (glTF's V is 1 - Blender's; Unreal's FBX import flips it)
V_FLIP = {"GODOT": True, "UNITY": False, "UNREAL": True}
# where Godot 4's glTF import puts TEXCOORD_n (modules/gltf/gltf_document.cpp): TEXCOORD_0 -> UV, TEXCOORD_1 ->
# UV2, then each pair TEXCOORD_2k+2, 2k+3 -> CUSTOMk.xy, .zw (k = 0..2; RGBA float, or RG float for a lone
# one), up to TEXCOORD_7; Blender's glTF exporter writes every UV map as TEXCOORD_n in the mesh's UV map order
GODOT_INPUTS = ("UV", "UV2", "CUSTOM0.xy", "CUSTOM0.zw", "CUSTOM1.xy", "CUSTOM1.zw", "CUSTOM2.xy", "CUSTOM2.zw")
LIVE_VERSION = ("core/wind/live.py of main at 470e54b (the live attributes as Branch, Leaf, H, Pivot, Carry; grass "
                "blade by blade: gusts and the figure-eight travel along the wind at GUST_SPEED)")


def scene_uniforms(scene: core_live.SceneWind, engine: str, unit_scale: float = 1.0) -> dict:
    """The scene's wind as the shader's uniforms, in the engine's axes and units: ``wind`` = (direction xyz (the
    engine's world; its horizontal part is used), strength), ``gusts`` = (gust strength, gust frequency Hz, loop
    frames, fps), ``grass`` = (ambient, tilt, fade start, fade end) (fade distances in engine units)."""
    a, k = axes(engine, unit_scale)
    d = a @ np.asarray(scene.direction, np.float64)
    return {"wind": [*d.tolist(), float(scene.strength)],
            "gusts": [float(scene.gust_strength), float(scene.gust_frequency), float(scene.loop_frames),
                      float(scene.fps)],
            "grass": [float(scene.ambient), float(scene.grass_tilt), float(scene.fade_start) * k,
                      float(scene.fade_end) * k]}


def push_uniforms(origin: Sequence[float] | np.ndarray, size: float, strength: float, sway: float,
                  first_frame: float, engine: str, unit_scale: float = 1.0, on: bool = True) -> dict:
    """The grass push's uniforms of one baked frame in the engine's axes and units: ``push_window`` = (the window's
    lower-left corner, Blender world ``(origin x, origin y, 0)``, as an engine world point; its size in engine
    units), ``push`` = (strength, sway, the bake's first frame, 1 on / 0 off) (``core.wind.push.GrassPush``)."""
    a, k = axes(engine, unit_scale)
    corner = k * (a @ np.array([float(origin[0]), float(origin[1]), 0.0]))
    return {"push_window": [*corner.tolist(), float(size) * k],
            "push": [float(strength), float(sway), float(first_frame), 1.0 if on else 0.0]}


@dataclass(frozen=True)
class PushBake:
    """The baked interaction buffer the scene's grass push reads (``core.wind.push.GrassPush`` per frame), as
    ``envfx_wind.json`` describes it: the window's ``size`` (Blender units), the push's ``strength`` and ``sway``,
    the bake's ``first`` and ``last`` frames, its ``resolution`` (width, height texels), ``frames``: one (frame,
    (window origin x, y: its min-x, min-y corner, Blender world), file name) per baked image (one, for every frame,
    when ``sequence`` is False), and the ``folder`` they are in."""
    size: float
    strength: float
    sway: float
    first: int
    last: int
    resolution: tuple[int, int]
    frames: tuple[tuple[int, tuple[float, float], str], ...]
    sequence: bool = True
    folder: str = ""


def push_meta(push: PushBake | None, unit_scale: float = 1.0) -> dict:
    """``envfx_wind.json``'s ``push``: the grass push's numbers in each engine's axes and units (``push_uniforms``
    per baked frame), or, with push off (None), the uniforms that switch the include's push variant off."""
    if push is None:
        return {"on": False, "uniforms": {e: push_uniforms((0.0, 0.0), 1.0, 0.0, 0.0, 0.0, e, unit_scale, on=False)
                                          for e in ENGINES}}
    first_origin = push.frames[0][1] if push.frames else (0.0, 0.0)
    return {
        "on": True, "folder": push.folder, "sequence": bool(push.sequence),
        "resolution": [int(push.resolution[0]), int(push.resolution[1])],
        "first_frame": int(push.first), "last_frame": int(push.last),
        "strength": float(push.strength), "sway": float(push.sway), "world_size": float(push.size),
        "texel_rows": {e: "bottom row first (min y)" if e == "UNITY" else "top row first (max y, the EXR's order)"
                       for e in ENGINES},
        "bind": "the frames entry of round(clamp(frame, first_frame, last_frame)) (one entry: every frame), its file "
                "as push_buffer (linear, no compression, no mipmaps) and its uniforms",
        "uniforms": {e: push_uniforms(first_origin, push.size, push.strength, push.sway, push.first, e, unit_scale)
                     for e in ENGINES},
        "frames": [{"frame": int(frame), "file": name,
                    "uniforms": {e: push_uniforms(origin, push.size, push.strength, push.sway, push.first, e,
                                                  unit_scale) for e in ENGINES}}
                   for frame, origin, name in push.frames],
        "blade_root": "object_to_world applied to the rest position minus the Pivot channel (EnvFX_Wind_PivotXY, "
                      "EnvFX_Wind_PivotZ): the point every vertex of a blade shares (Blender's per-face "
                      ".EnvFX_Wind_Root)",
    }


def engine_matrix_world(matrix_world: npt.ArrayLike, engine: str, unit_scale: float = 1.0) -> npt.NDArray[np.float64]:
    """A Blender 4x4 world matrix as the engine has the object's (``A M A^T``, translation times ``k``)."""
    a, k = axes(engine, unit_scale)
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    out = np.eye(4)
    out[:3, :3] = a @ m[:3, :3] @ a.T
    out[:3, 3] = k * (a @ m[:3, 3])
    return out


def attribute_sources() -> dict:
    """{the shader's per-vertex input: the Blender live attribute (``LIVE_ATTRS``) it is, with its component}."""
    names = ("B", "H", "Bc", "Bs", "Rc", "Rs", "Pivot", None, None, "Carry")  # the CHANNELS' order
    parts = [part for _name, pair in CHANNELS for part in pair]
    return {label: LIVE_ATTRS[index] + (f"[{comp}]" if comp is not None and label != "Pivot" else "")
            for label, (index, comp) in zip(names, parts) if label is not None}


def channel_uvs(live: dict) -> dict:
    """{UV map name: (N, 2) float32} of the live attributes (``CHANNELS``), as Blender holds them."""
    out = {}
    for name, parts in CHANNELS:
        cols = []
        for index, comp in parts:
            v = np.asarray(live[LIVE_ATTRS[index]], np.float32)
            cols.append(v[:, comp] if comp is not None else v.reshape(-1))
        out[name] = np.stack(cols, axis=1)
    return out


def uv_order(existing: Iterable[str]) -> list[str]:
    """The mesh's UV map names once the channels are written: ``existing`` in order, then the channels it lacks
    (Blender appends a new UV map)."""
    existing = list(existing)
    return existing + [name for name, _parts in CHANNELS if name not in existing]


def godot_inputs(order: Iterable[str]) -> dict:
    """{channel: the Godot vertex input that holds it (``GODOT_INPUTS``)} for a mesh whose UV maps are ``order``
    when it is exported to glTF (TEXCOORD_n = the n-th UV map); ValueError when one is beyond TEXCOORD_7."""
    order = list(order)
    out = {}
    for name, _parts in CHANNELS:
        i = order.index(name)
        if i >= len(GODOT_INPUTS):
            raise ValueError(f"the UV map {name} is number {i + 1}: Godot imports at most 8 UV maps")
        out[name] = GODOT_INPUTS[i]
    return out


def engine_uvs(uvs: dict, engine: str) -> dict:
    """The channels as the engine's import has them (V flipped where its import flips it)."""
    out = {}
    for name, uv in uvs.items():
        uv = np.asarray(uv, np.float64).copy()
        if V_FLIP[engine]:
            uv[:, 1] = 1.0 - uv[:, 1]
        out[name] = uv
    return out


def _quantized(freq: float) -> str:
    """GLSL/HLSL expression: ``freq`` rounded to whole cycles per loop (``core.wind.live.quantize``)."""
    return f"envfx_wind_quantize({_num(freq)}, gusts)"


def _push_lean_source(engine: str) -> list:
    """Lines of ``envfx_wind_push_lean``: ``core.wind.push.push_lean`` of one blade root (Blender world) from the
    baked buffer's frame, read texel by texel (bilinear between texel centres, the edge texels extended: the GPU's
    own filtering keeps only 8 bits of the weights on many GPUs), the slope of A by the same differences one texel
    to +x and +y, with the same weights."""
    glsl = engine == "GODOT"
    v2, v3, v4, i2 = ("vec2", "vec3", "vec4", "ivec2") if glsl else ("float2", "float3", "float4", "int2")
    tex = "sampler2D" if glsl else "Texture2D"
    row = "j" if engine == "UNITY" else "size.y - 1 - j"  # Godot and Unreal: the EXR's top row (max y) first
    fetch = (f"texelFetch(buf, ivec2(i, {row}), 0)" if glsl else f"buf.Load(int3(i, {row}, 0))")
    lines = [
        "",
        "// a texel of the grass push's buffer by Blender's column i and row j (0 at the window's min y), the edge",
        f"// texels extended beyond it (texel rows as the engine imports the EXR: {'bottom' if row == 'j' else 'top'}"
        " row first)",
        f"{v4} envfx_wind_push_texel({tex} buf, {i2} size, int i, int j) {{",
        "    i = clamp(i, 0, size.x - 1);",
        "    j = clamp(j, 0, size.y - 1);",
        f"    return {fetch};",
        "}",
        "",
        "// the lean (Blender world, per unit of height) actors give the blade whose root is `root` (Blender world):",
        "// core.wind.push.push_lean. push_window = (the window's min-x, min-y corner as an engine world point, its",
        "// size in engine units); push = (strength, sway, the bake's first frame, on (1) or off (0)); push_buffer:",
        "// the bake's frame clamp(frame, first, last) (envfx_wind.json's push.frames)",
        f"{v3} envfx_wind_push_lean({v3} root, float frame, {v4} push_window, {v4} push, {tex} buf) {{",
        "    if (push.w < 0.5 || frame + 0.5 <= push.z) {",
        f"        return {v3}(0.0, 0.0, 0.0);",
        "    }",
    ]
    if glsl:
        lines.append("    ivec2 size = textureSize(buf, 0);")
    else:
        lines += ["    uint width, height;", "    buf.GetDimensions(width, height);",
                  "    int2 size = int2(width, height);"]
    lines += [
        f"    {v3} corner = envfx_wind_to_blender(push_window.xyz) / ENVFX_WIND_K;",
        "    float window = push_window.w / ENVFX_WIND_K;",
        f"    {v2} f = (root.xy - corner.xy) / window * {v2}(size) - 0.5;",
        f"    {v2} c = floor(f);",
        f"    {v2} t = f - c;",
        "    int i = int(c.x);",
        "    int j = int(c.y);",
        f"    {v4} p00 = envfx_wind_push_texel(buf, size, i, j);",
        f"    {v4} p10 = envfx_wind_push_texel(buf, size, i + 1, j);",
        f"    {v4} p01 = envfx_wind_push_texel(buf, size, i, j + 1);",
        f"    {v4} p11 = envfx_wind_push_texel(buf, size, i + 1, j + 1);",
        "    float a20 = envfx_wind_push_texel(buf, size, i + 2, j).a;",
        "    float a21 = envfx_wind_push_texel(buf, size, i + 2, j + 1).a;",
        "    float a02 = envfx_wind_push_texel(buf, size, i, j + 2).a;",
        "    float a12 = envfx_wind_push_texel(buf, size, i + 1, j + 2).a;",
        f"    {v4} here = (p00 * (1.0 - t.x) + p10 * t.x) * (1.0 - t.y) + (p01 * (1.0 - t.x) + p11 * t.x) * t.y;",
        "    float gx = (p10.a * (1.0 - t.x) + a20 * t.x) * (1.0 - t.y) + (p11.a * (1.0 - t.x) + a21 * t.x) * t.y"
        " - here.a;",
        "    float gy = (p01.a * (1.0 - t.x) + p11.a * t.x) * (1.0 - t.y) + (a02 * (1.0 - t.x) + a12 * t.x) * t.y"
        " - here.a;",
        f"    float k = (push.x * here.a + push.y * here.g) / sqrt(gx * gx + gy * gy + {_num(PUSH_EPS * PUSH_EPS)});",
        f"    return {v3}(-gx * k, -gy * k, 0.0);",
        "}",
    ]
    return lines


def shader_source(engine: str, asset: core_live.AssetWind, unit_scale: float = 1.0, source: str = "",
                  uv_maps: Iterable[str] | None = None) -> str:
    """The engine's wind include for one asset (its settings are constants; the scene's wind are parameters).
    ``uv_maps``: the asset mesh's UV map names in order (default: the channels alone), from which the Godot
    include's ``envfx_wind_offset_godot`` reads each channel where Godot's glTF import puts it."""
    a, k = axes(engine, unit_scale)
    glsl = engine == "GODOT"
    v2, v3, v4 = ("vec2", "vec3", "vec4") if glsl else ("float2", "float3", "float4")
    m3, m4 = ("mat3", "mat4") if glsl else ("float3x3", "float4x4")
    const = "const" if glsl else "static const"
    cat = asset.category
    grass = cat == "GRASS"
    source = " ".join(str(source).split())

    vec, a_t, a_m, mul = axes_source(engine, a)

    gust_terms = []
    for amp, mult, ph, wave in zip(GUST_AMPS, GUST_MULTS, GUST_PHASES, GUST_WAVES):
        gust_terms.append((amp, mult, ph, wave))
    lines = [
        f"// EnvFX Wind: the live wind of one asset ({cat}){' (' + source + ')' if source else ''}.",
        f"// Axes and units: {bend_engines.ENGINES[engine][4]}; {bend_engines.units_note(engine, unit_scale)}.",
        "// Generated by EnvFX from the asset's wind settings: export again after changing them. The scene's wind",
        "// comes as parameters (envfx_wind.json has the scene's values): wind = (direction xyz, strength), gusts =",
        "// (gust strength, gust frequency Hz, loop frames (0: none), fps), grass = (ambient, tilt, fade start, fade",
        "// end). Per vertex: the rest position and the normal (engine axes and units) and the live attributes (B, Bc,",
        "// Bs, Rc, Rs, H, Pivot, Carry; Pivot in Blender's object axes and units) from the five UV channels Export",
        "// for Game Engines writes (envfx_wind_offset_uv). Returns the object-space offset (engine axes and units).",
        "#ifndef ENVFX_WIND_INCLUDED",
        "#define ENVFX_WIND_INCLUDED",
        f"{const} float ENVFX_WIND_PI2 = {_num(2.0 * math.pi)};",
        f"{const} float ENVFX_WIND_K = {_num(k)}; // engine units per Blender unit",
        f"{const} float ENVFX_WIND_SPRING = {_num(SPRING_HZ[cat])};",
        f"{const} float ENVFX_WIND_BRANCH_HZ = {_num(BRANCH_HZ[cat])};",
        f"{const} float ENVFX_WIND_RIGIDITY = {_num(asset.rigidity)};",
        f"{const} float ENVFX_WIND_BEND = {_num(asset.bend)};",
        f"{const} float ENVFX_WIND_SWAY = {_num(asset.sway)};",
        f"{const} float ENVFX_WIND_LIFT = {_num(asset.lift)};",
        f"{const} float ENVFX_WIND_MICRO = {_num(asset.micro)};",
        f"{const} float ENVFX_WIND_RAMP = {_num(asset.ramp)};",
        f"{const} float ENVFX_WIND_MAIN_BEND = {_num(1.0 if asset.main_bend else 0.0)};",
        f"{const} float ENVFX_WIND_HEIGHT = {_num(asset.asset_height)}; // Blender units",
        f"{const} float ENVFX_WIND_GUST_SPEED = {_num(GUST_SPEED)}; // grass: gusts travel at this (Blender units / s)",
        "",
        f"{v3} envfx_wind_to_blender({v3} v) {{ return {mul(a_t, 'v')}; }}",
        f"{v3} envfx_wind_to_engine({v3} v) {{ return {mul(a_m, 'v')}; }}",
        "",
        *quantize_source("envfx_wind_quantize", v4),
        "",
        "// seconds of a frame (wrapped into the loop first)",
        f"float envfx_wind_time(float frame, {v4} gusts) {{",
        "    if (gusts.z > 0.0) {",
        "        frame = frame - gusts.z * floor(frame / gusts.z);",
        "    }",
        "    return frame / gusts.w;",
        "}",
        "",
        "// the grass wobble's parabolic sine",
        "float envfx_wind_wave(float turns) {",
        "    float w = turns - floor(turns + 0.5);",
        "    return 8.0 * w * (1.0 - 2.0 * abs(w));",
        "}",
        "",
        f"{v3} envfx_wind_unit({v3} v) {{",
        "    float l = length(v);",
        f"    return l > 0.0 ? v / l : {v3}(0.0, 0.0, 0.0);",
        "}",
        "",
        "// the effective wind at a place (Blender world): strength with the spring-filtered gusts, then the asset's",
        "// ramp; trees take it at the object's origin, each grass blade at its root, the gust waves travelling",
        "// along the wind direction d at ENVFX_WIND_GUST_SPEED (the gust of the world origin dot(x, d) / U earlier)",
        f"float envfx_wind_effective(float t, {v3} x, {v3} d, {v4} wind, {v4} gusts) {{",
        "    float f0 = ENVFX_WIND_SPRING;",
        "    float total = 0.0;",
    ]
    for amp, mult, ph, wave in gust_terms:
        spatial = ("- ENVFX_WIND_PI2 * f / ENVFX_WIND_GUST_SPEED * dot(x, d)" if grass else
                   f"+ {_num(wave[0])} * x.x + {_num(wave[1])} * x.y")
        lines += [
            "    {",
            f"        float f = envfx_wind_quantize(gusts.y * {_num(mult)}, gusts);",
            "        float gain = f0 * f0 / (f0 * f0 + f * f);",
            "        float lag = 2.0 * atan(f / f0);",
            f"        total += {_num(amp)} * gain * sin(ENVFX_WIND_PI2 * f * t {spatial} + {_num(ph)} - lag);",
            "    }",
        ]
    lines += [
        "    float w = max(0.0, wind.w * (1.0 + gusts.x * total));",
        "    return w * (1.0 + ENVFX_WIND_RAMP) / (1.0 + ENVFX_WIND_RAMP * w);",
        "}",
    ]
    if grass:
        lines += _push_lean_source(engine)
    lines += [
        "",
        "// the object-space offset (engine axes and units) of a vertex at frame `frame` (the scene's frame number;",
        "// a game: seconds * fps). object_to_world: the object's world matrix; camera_pos / camera_z: the camera's",
        "// world position and its +Z (backwards) axis (grass only; any values elsewhere)",
        f"{v3} envfx_wind_offset({v3} rest_pos, {v3} normal, float b, float bc, float bs, float rc, float rs,",
        f"                       float h, {v3} pivot, float carry, {m4} object_to_world, float frame,",
        f"                       {v4} wind, {v4} gusts, {v4} grass, {v3} camera_pos, {v3} camera_z@PUSH_ARGS@) {{",
    ]
    body_start = len(lines) - 3  # the push variant (grass) repeats the function from its signature on
    if glsl:
        lines += [
            "    mat3 m3e = mat3(object_to_world);",
            "    vec3 origin_e = object_to_world[3].xyz;",
        ]
    else:
        lines += [
            "    float3x3 m3e = (float3x3)object_to_world;",
            "    float3 origin_e = float3(object_to_world[0][3], object_to_world[1][3], object_to_world[2][3]);",
        ]
    # Blender world <- engine world: A^T / k for points, A^T for directions; object matrix M = A^T Me A
    lines += [
        f"    {m3} inv3;",
    ]
    if glsl:
        lines += [
            f"    mat3 m3 = {a_t} * m3e * {a_m};",
            "    inv3 = inverse(m3);",
        ]
    else:
        lines += [
            f"    float3x3 m3 = mul({a_t}, mul(m3e, {a_m}));",
            "    float det = determinant(m3);",
            "    inv3 = float3x3(cross(m3[1], m3[2]), cross(m3[2], m3[0]), cross(m3[0], m3[1]));",
            "    inv3 = transpose(inv3) / det;",
        ]
    lines += [
        f"    {v3} origin = envfx_wind_to_blender(origin_e) / ENVFX_WIND_K;",
        f"    {v3} p = envfx_wind_to_blender(rest_pos) / ENVFX_WIND_K;",
        f"    {v3} n = envfx_wind_to_blender(normal);",
        f"    {v3} rel = pivot; // Blender object axes and units, as the UV channels carry it",
        "    float t = envfx_wind_time(frame, gusts);",
        f"    {v3} wd = envfx_wind_to_blender(wind.xyz);",
        f"    {v3} d = envfx_wind_unit({v3}(wd.x, wd.y, 0.0));",
        "    if (length(wd.xy) <= 1e-12) {",
        f"        d = {v3}(0.0, 0.0, 0.0);",
        "    }",
        f"    {v3} across = {v3}(-d.y, d.x, 0.0);",
        f"    {v3} up = {v3}(0.0, 0.0, 1.0);",
        # grass: the terms per unit of wind, each blade scaling them by the wind at its root
        "    float eff = envfx_wind_effective(t, origin, d, wind, gusts);" if not grass else "    float eff = 1.0;",
        "    float kk = eff * ENVFX_WIND_HEIGHT / ENVFX_WIND_RIGIDITY;",
        f"    float main_amp = ENVFX_WIND_MAIN_BEND * kk * {_num(MAIN_SCALE)};",
        f"    float bend = ENVFX_WIND_BEND * kk * {_num(BRANCH_SCALE)};",
        f"    {v3} vc = {v3}(0.0, 0.0, 0.0);",
        f"    {v3} vs = {v3}(0.0, 0.0, 0.0);",
    ]
    amps = ["0.3 * bend", f"0.5 * ENVFX_WIND_SWAY * kk * {_num(BRANCH_SCALE)}",
            f"0.4 * ENVFX_WIND_LIFT * kk * {_num(BRANCH_SCALE)}"]
    for mult, ph, amp, dvec in zip(BRANCH_MULTS, BRANCH_PHASES, amps, ("d", "across", "up")):
        lines += [
            "    {",
            f"        float x = ENVFX_WIND_PI2 * envfx_wind_quantize(ENVFX_WIND_BRANCH_HZ * {_num(mult)}, gusts) * t"
            f" + {_num(ph)};",
            f"        vc += ({amp}) * sin(x) * {dvec};",
            f"        vs += ({amp}) * cos(x) * {dvec};",
            "    }",
        ]
    lines += [
        f"    float mamp = ENVFX_WIND_MICRO * kk * {_num(MICRO_SCALE)};",
        f"    {v3} marg = ENVFX_WIND_PI2 * {v3}({', '.join(_quantized(f) for f in MICRO_HZ)}) * t"
        f" + {vec(MICRO_PHASES)};",
        f"    {v3} mc = mamp * sin(marg);",
        f"    {v3} ms = mamp * cos(marg);",
        f"    {v3} extra = {v3}(0.0, 0.0, 0.0);",
        "    float ambient = grass.x * eff * ENVFX_WIND_HEIGHT;",
        "    float fade = 1.0;",
    ]
    if grass:
        lines += [
            f"    float fa = {_quantized(AMBIENT_HZ)};",
            f"    float fa2 = {_quantized(2.0 * AMBIENT_HZ)};",
            "    // the blade's root in the world, X = M (p - Pivot): its wind and figure-eight are the world origin's",
            "    // at tau = t - dot(X, d) / U (waves running across the field along the wind)",
            f"    {v3} root = {mul('m3', '(p - rel)')} + origin;",
            "    float blade = envfx_wind_effective(t, root, d, wind, gusts);",
            "    float tau = t - dot(root, d) / ENVFX_WIND_GUST_SPEED;",
            f"    float aamp = ambient * blade * {_num(AMBIENT_SCALE)};",
            "    extra += aamp * sin(ENVFX_WIND_PI2 * fa * tau) * d + aamp * 0.5 * sin(ENVFX_WIND_PI2 * fa2 * tau)"
            " * across;",
            f"    {v3} cam = envfx_wind_to_blender(camera_pos) / ENVFX_WIND_K;",
            f"    {v3} cz = envfx_wind_to_blender(camera_z);",
            f"    {v3} look = -cz / max(length(cz), 1e-12);",
            "    float down = max(0.0, -look.z);",
            f"    {v3} toward = origin - cam;",
            f"    {v3} away = envfx_wind_unit({v3}(toward.x, toward.y, 0.0));",
            "    if (length(toward.xy) <= 1e-12) {",
            f"        away = {v3}(0.0, 0.0, 0.0);",
            "    }",
            f"    extra += grass.y * down * {_num(TILT_SCALE)} * ENVFX_WIND_HEIGHT * away;",
            "    float fade_start = grass.z / ENVFX_WIND_K;",
            "    float fade_end = grass.w / ENVFX_WIND_K;",
            "    if (fade_end > fade_start) {",
            "        fade = clamp((fade_end - length(cam - origin)) / (fade_end - fade_start), 0.0, 1.0);",
            "    }",
        ]
    lines += [
        f"    {v3} dir_o = {mul('inv3', 'd')};",
        f"    {v3} vc_o = {mul('inv3', 'vc')};",
        f"    {v3} vs_o = {mul('inv3', 'vs')};",
        f"    {v3} swing = (h * h * main_amp + b * bend) * dir_o + bc * vc_o + bs * vs_o + rc * mc + rs * ms;",
        f"    {v3} extra_o = {mul('inv3', 'extra')};",
    ]
    if grass:
        ww = np.asarray(WOBBLE_WAVE, np.float64) / (2.0 * math.pi)
        lines += [
            f"    float fw = {_quantized(WOBBLE_HZ)};",
            f"    float wamp = blade * ambient * {_num(WOBBLE_SCALE)} * h * envfx_wind_wave(dot(p, {vec(ww)})"
            " + fw * t);",
            "    swing = blade * swing + h * extra_o + wamp * n;",
            "@PUSH@",
            "    main_amp = blade * main_amp; // the carry's lean: the blade's",
        ]
    lines += [
        f"    {v3} q = rel + swing;",
        "    float rest_len = length(rel);",
        "    float now_len = length(q);",
        f"    {v3} turned = now_len > 0.0 ? q * (rest_len / now_len) : {v3}(0.0, 0.0, 0.0);",
        f"    {v3} up_o = {mul('inv3', f'{v3}(0.0, 0.0, 1.0)')};",
        "    float inv_h = ENVFX_WIND_HEIGHT > 0.0 ? 1.0 / ENVFX_WIND_HEIGHT : 0.0;",
        f"    {v3} lean = up_o + carry * dir_o * (main_amp * inv_h);",
    ]
    if grass:
        lines.append("    lean += extra_o * inv_h;")
    lines += [
        f"    {v3} carried = (carry * ENVFX_WIND_HEIGHT * length(up_o)) * (envfx_wind_unit(lean) -"
        " envfx_wind_unit(up_o));",
        f"    {v3} local = turned - rel + carried;",
    ]
    if grass:
        lines.append("    local = fade * local + (fade - 1.0) * p;")
    lines += [
        "    return ENVFX_WIND_K * envfx_wind_to_engine(local);",
        "}",
    ]
    tex = "sampler2D" if glsl else "Texture2D"
    body = lines[body_start:]
    lines = lines[:body_start] + [line.replace("@PUSH_ARGS@", "") for line in body if line != "@PUSH@"]
    if grass:  # the same with actors pushing the blades: the lean of the buffer at the blade's root, times H
        lines += ["", "// the same, with the grass push: envfx_wind_push_lean at the blade's root, times h (turned",
                  "// about the root with the rest of the swing, so the blade keeps its length)"]
        extra = f",\n                            {v4} push_window, {v4} push, {tex} push_buffer"
        lean = mul("inv3", "envfx_wind_push_lean(root, frame, push_window, push, push_buffer)")
        lines += [line.replace("envfx_wind_offset(", "envfx_wind_offset_push(").replace("@PUSH_ARGS@", extra)
                  if line != "@PUSH@" else f"    swing += h * {lean};" for line in body]
    flip = "1.0 - " if V_FLIP[engine] else ""
    lines += [
        "",
        "// the same from the UV channels as the engine imports them: EnvFX_Wind_BH (B, H), EnvFX_Wind_Bcs (Bc, Bs),",
        "// EnvFX_Wind_Rcs (Rc, Rs), EnvFX_Wind_PivotXY (Pivot x, y), EnvFX_Wind_PivotZ (Pivot z, Carry)"
        + ("; the import counts V from the top (V = 1 - Blender's)" if V_FLIP[engine] else ""),
        f"{v3} envfx_wind_offset_uv({v3} rest_pos, {v3} normal, {v2} uv_bh, {v2} uv_bcs, {v2} uv_rcs, {v2} uv_pxy,",
        f"                          {v2} uv_pz, {m4} object_to_world, float frame, {v4} wind, {v4} gusts,",
        f"                          {v4} grass, {v3} camera_pos, {v3} camera_z) {{",
        f"    return envfx_wind_offset(rest_pos, normal, uv_bh.x, uv_bcs.x, {flip}uv_bcs.y, uv_rcs.x, {flip}uv_rcs.y,",
        f"                             {flip}uv_bh.y, {v3}(uv_pxy.x, {flip}uv_pxy.y, uv_pz.x), {flip}uv_pz.y,",
        "                             object_to_world, frame, wind, gusts, grass, camera_pos, camera_z);",
        "}",
    ]
    if grass:
        lines += [
            "",
            "// and with the grass push (push_window, push: envfx_wind.json's push; push_buffer: the baked frame)",
            f"{v3} envfx_wind_offset_uv_push({v3} rest_pos, {v3} normal, {v2} uv_bh, {v2} uv_bcs, {v2} uv_rcs,",
            f"                               {v2} uv_pxy, {v2} uv_pz, {m4} object_to_world, float frame, {v4} wind,",
            f"                               {v4} gusts, {v4} grass, {v3} camera_pos, {v3} camera_z,",
            f"                               {v4} push_window, {v4} push, {tex} push_buffer) {{",
            f"    return envfx_wind_offset_push(rest_pos, normal, uv_bh.x, uv_bcs.x, {flip}uv_bcs.y, uv_rcs.x,",
            f"                                  {flip}uv_rcs.y, {flip}uv_bh.y, {v3}(uv_pxy.x, {flip}uv_pxy.y,",
            f"                                  uv_pz.x), {flip}uv_pz.y, object_to_world, frame, wind, gusts, grass,",
            "                                  camera_pos, camera_z, push_window, push, push_buffer);",
            "}",
        ]
    if engine == "GODOT":
        where = godot_inputs(uv_order(uv_maps or ()))
        args = {name: where[name].lower() for name, _parts in CHANNELS}
        lines += [
            "",
            "// the same from the vertex inputs as Godot 4's glTF import fills them from this asset's .glb (exported",
            "// with its UV maps in their order: " + ", ".join(f"{n} -> {where[n]}" for n, _p in CHANNELS) + "):",
            "// VERTEX += envfx_wind_offset_godot(VERTEX, NORMAL, UV, UV2, CUSTOM0, CUSTOM1, CUSTOM2,",
            "//     MODEL_MATRIX, frame, wind, gusts, grass, CAMERA_POSITION_WORLD, INV_VIEW_MATRIX[2].xyz);",
            "vec3 envfx_wind_offset_godot(vec3 rest_pos, vec3 normal, vec2 uv, vec2 uv2, vec4 custom0, vec4 custom1,",
            "                             vec4 custom2, mat4 object_to_world, float frame, vec4 wind, vec4 gusts,",
            "                             vec4 grass, vec3 camera_pos, vec3 camera_z) {",
            "    return envfx_wind_offset_uv(rest_pos, normal, "
            + ", ".join(args[n] for n, _p in CHANNELS) + ",",
            "                                object_to_world, frame, wind, gusts, grass, camera_pos, camera_z);",
            "}",
        ]
        if grass:
            lines += [
                "",
                "// and with the grass push: VERTEX += envfx_wind_offset_godot_push(..., camera_z, push_window, push,",
                "//     push_buffer); (uniform sampler2D push_buffer : filter_nearest, repeat_disable: the baked",
                "//     frame)",
                "vec3 envfx_wind_offset_godot_push(vec3 rest_pos, vec3 normal, vec2 uv, vec2 uv2, vec4 custom0,",
                "                                  vec4 custom1, vec4 custom2, mat4 object_to_world, float frame,",
                "                                  vec4 wind, vec4 gusts, vec4 grass, vec3 camera_pos, vec3 camera_z,",
                "                                  vec4 push_window, vec4 push, sampler2D push_buffer) {",
                "    return envfx_wind_offset_uv_push(rest_pos, normal, "
                + ", ".join(args[n] for n, _p in CHANNELS) + ",",
                "                                     object_to_world, frame, wind, gusts, grass, camera_pos,",
                "                                     camera_z, push_window, push, push_buffer);",
                "}",
            ]
    if engine == "UNITY":
        lines += [
            "",
            "// Shader Graph Custom Function \"EnvFXWind\" (UV nodes on the five channels, Object space position and",
            "// normal, the Object node's matrix, the scene's wind as global properties)",
            "void EnvFXWind_float(float3 RestPos, float3 Normal, float2 UvBH, float2 UvBcs, float2 UvRcs,",
            "                     float2 UvPivotXY, float2 UvPivotZ, float4x4 ObjectToWorld, float Frame, float4 Wind,",
            "                     float4 Gusts, float4 Grass, float3 CameraPos, float3 CameraZ, out float3 Offset) {",
            "    Offset = envfx_wind_offset_uv(RestPos, Normal, UvBH, UvBcs, UvRcs, UvPivotXY, UvPivotZ,",
            "                                  ObjectToWorld, Frame, Wind, Gusts, Grass, CameraPos, CameraZ);",
            "}",
        ]
        if grass:
            lines += [
                "",
                "#ifndef ENVFX_WIND_TEXTURE",
                "#define ENVFX_WIND_TEXTURE(t) (t).tex",
                "#endif",
                "// Shader Graph Custom Function \"EnvFXWindPush\": the same with the grass push (PushWindow, Push:",
                "// envfx_wind.json's push; PushBuffer: the baked frame's EXR, imported linear, no compression, no",
                "// mipmaps)",
                "void EnvFXWindPush_float(float3 RestPos, float3 Normal, float2 UvBH, float2 UvBcs, float2 UvRcs,",
                "                         float2 UvPivotXY, float2 UvPivotZ, float4x4 ObjectToWorld, float Frame,",
                "                         float4 Wind, float4 Gusts, float4 Grass, float3 CameraPos, float3 CameraZ,",
                "                         float4 PushWindow, float4 Push, UnityTexture2D PushBuffer,",
                "                         out float3 Offset) {",
                "    Offset = envfx_wind_offset_uv_push(RestPos, Normal, UvBH, UvBcs, UvRcs, UvPivotXY, UvPivotZ,",
                "                                       ObjectToWorld, Frame, Wind, Gusts, Grass, CameraPos, CameraZ,",
                "                                       PushWindow, Push, ENVFX_WIND_TEXTURE(PushBuffer));",
                "}",
            ]
    lines.append("#endif")
    return "\n".join(lines) + "\n"


def export_files(folder: str, assets: Mapping[str, core_live.AssetWind], scene: core_live.SceneWind,
                 unit_scale: float = 1.0, source: str = "", uv_maps: Mapping[str, Iterable[str]] | None = None,
                 push: PushBake | None = None,
                 rigid: Mapping[str, tuple[core_live.AssetWind, str]] | None = None) -> list:
    """Write, per asset (``{name: AssetWind}``) and engine, the wind include, and ``envfx_wind.json`` (the scene's
    wind as each engine's uniforms, each asset's settings and files, and where its channels arrive: the glTF
    TEXCOORD set and the Godot vertex input; the grass push's buffer, ``push_meta``) into ``folder``; ``uv_maps``:
    {asset name: its mesh's UV map names in order} (default: the channels alone). ``rigid``: {prop name: (its
    AssetWind, its Euler rotation order)} of props in rigid sway, each with its rigid-sway include
    (``core.wind_rigid_engines``) and an entry marked ``"rigid": true``. A failure leaves the folder as it was.
    Returns the paths written."""
    texts, entries = {}, {}
    uv_maps = uv_maps or {}
    rigid = rigid or {}
    stems = dict(zip(list(assets) + list(rigid), unique_stems(list(assets) + list(rigid))))
    for name, asset in assets.items():
        files = {}
        order = uv_order(uv_maps.get(name, ()))
        for engine in ENGINES:
            base, ext = os.path.splitext(INCLUDE[engine])
            file_name = f"{base}_{stems[name]}{ext}"
            texts[file_name] = shader_source(engine, asset, unit_scale, f"{source}, {name}" if source else name,
                                             order)
            files[engine] = file_name
        godot = godot_inputs(order)
        entries[name] = {"files": files, "category": asset.category, "rigidity": asset.rigidity,
                         "bend": asset.bend, "sway": asset.sway, "lift": asset.lift, "micro": asset.micro,
                         "ramp": asset.ramp, "main_bend": asset.main_bend, "asset_height": asset.asset_height,
                         "channels": {n: {"uv_map": order.index(n), "gltf": f"TEXCOORD_{order.index(n)}",
                                          "godot": godot[n]} for n, _parts in CHANNELS}}
        if asset.category == "GRASS":  # the include's variants that read the grass push's buffer
            entries[name]["push_functions"] = dict(PUSH_FUNCTIONS)
    for name, (asset, rotation_order) in rigid.items():
        files = {}
        for engine in ENGINES:
            base, ext = os.path.splitext(wind_rigid_engines.INCLUDE[engine])
            file_name = f"{base}_{stems[name]}{ext}"
            texts[file_name] = wind_rigid_engines.shader_source(
                engine, asset, rotation_order, unit_scale, f"{source}, {name}" if source else name)
            files[engine] = file_name
        entries[name] = {"files": files, "rigid": True, "functions": dict(wind_rigid_engines.FUNCTIONS),
                         "category": asset.category, "rigidity": asset.rigidity, "bend": asset.bend,
                         "sway": asset.sway, "ramp": asset.ramp, "main_bend": asset.main_bend,
                         "rotation_order": rotation_order}
    meta = {"format": "envfx-wind-engines", "version": 1, "source": source, "live": LIVE_VERSION,
            "unit_scale": float(unit_scale),
            "scene": {e: scene_uniforms(scene, e, unit_scale) for e in ENGINES},
            "push": push_meta(push, unit_scale),
            "assets": entries,
            "attributes": attribute_sources()}
    texts[JSON_NAME] = json.dumps(meta, indent=2) + "\n"
    return write_text_files(folder, texts)
