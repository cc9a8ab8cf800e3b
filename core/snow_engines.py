"""Deep snow in game engines: the snow's vertex displacement from the baked interaction buffer as shader code for
Godot, Unity and Unreal.

The interaction buffer (``core.snow``: R the snow's height offset, rim minus push-down after refill; G the grass
wobble; B the water ripples; A the grass push-down) is a top-down RGBA float image over a window of ``world_size``
scene units, ``resolution`` texels a side. Blender's preview of a bake (the "EnvFX Snow Buffer" group) moves each
snow vertex up by ``max(R, -GROUND_KEEP * thickness)``, R sampled bilinearly at the vertex's world XY (texel
centres at the window's origin + (i + 0.5) texels, clamped at the edges), ``thickness`` the vertex's
``snow_thickness`` (none: no floor). The engine shader does the same with the engine's own world positions:

- ``envfx_snow_uv(world_pos, uv_offset)``: the buffer's texture coordinate (``core.snow.engine_sampling``),
  ``uv_offset`` the frame's (the bake's JSON: ``frames[i].uv_offset[engine]``);
- ``envfx_snow_follow_offset(pivot)``: the follow window's ``uv_offset`` for a pivot (the player), snapped to
  whole texels as the bake snaps it (``core.snow.snap_origin``), so a game that draws its own buffer around its
  player places it where the bake would have;
- ``envfx_snow_sample(buffer, uv)``: the four channels, bilinear from four exact texel reads (the GPU's own
  filtering keeps only 8 bits of the weights on many GPUs);
- ``envfx_snow_offset(world_pos, thickness, uv_offset, buffer)``: the world displacement, along the engine's up,
  in its units (``thickness`` in engine units, 0 where the cover has no snow; negative: no floor, for a mesh
  without ``snow_thickness``, as the preview reads a missing attribute).

Texels are read by integer index from the engine's texture-coordinate origin: the top-left in Godot and Unreal
(row 0 = the image's top row, max Blender y, as ``core.snow.write_exr`` stores it), the bottom-left in Unity.
``displacement`` is the shader's math in numpy; the tests hold it and the compiled shaders to the Blender
preview's twin (``preview_displacement``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from . import bend_engines
from .outputs import write_text_files
from .snow.buffer import engine_sampling, engine_uv_offset, sample_buffer
from .snow.trails import GROUND_KEEP

ENGINES = tuple(bend_engines.ENGINES)
INCLUDE = {"GODOT": "envfx_snow.gdshaderinc", "UNITY": "EnvFXSnow.hlsl", "UNREAL": "EnvFXSnow.ush"}
JSON_NAME = "envfx_snow.json"


def _num(value) -> str:
    text = f"{float(value):.9g}"
    return text if any(c in text for c in ".eEn") else text + ".0"


def engine_constants(resolution: int, world_size: float, engine: str, unit_scale: float = 1.0) -> dict:
    """The numbers an engine's snow shader needs (its axes and units): ``engine_sampling`` plus the resolution
    and the ground floor's fraction."""
    s = engine_sampling(float(world_size), unit_scale)[engine]
    return {"resolution": int(resolution), "world_size": float(world_size) * s["units_per_blender_unit"],
            "units_per_blender_unit": s["units_per_blender_unit"], "up": s["up"],
            "u_from_world": s["u_from_world"], "v_from_world": s["v_from_world"],
            "top_left": s["uv_origin"] == "top-left", "ground_keep": GROUND_KEEP, "uv_origin": s["uv_origin"],
            "axes": bend_engines.ENGINES[engine][4], "units": bend_engines.units_note(engine, unit_scale)}


def follow_uv_offset(pivot: npt.ArrayLike, c: dict) -> npt.NDArray[np.float64]:
    """(N, 2) the follow window's ``uv_offset`` for engine-space pivots (N, 3), snapped to whole texels: what the
    shader's ``envfx_snow_follow_offset`` computes, and ``engine_uv_offset(snap_origin(...))`` in Blender terms."""
    p = np.asarray(pivot, np.float64).reshape(-1, 3)
    res = float(c["resolution"])
    u = p @ np.asarray(c["u_from_world"])
    v = p @ np.asarray(c["v_from_world"])
    ou = -np.floor(u * res - 0.5 * res) / res
    if c["top_left"]:  # v runs down from the window's top: v = (origin y + size - y) / size
        ov = np.floor(-v * res - 0.5 * res) / res + 1.0
    else:
        ov = -np.floor(v * res - 0.5 * res) / res
    return np.stack([ou, ov], axis=1)


def sample(buffer_rows: npt.ArrayLike, uv: npt.ArrayLike, resolution: int) -> npt.NDArray[np.float64]:
    """(N, 4) bilinear samples of the buffer as the engine holds it (``buffer_rows``: (res, res, 4), row 0 at the
    engine's texture-coordinate origin) at (N, 2) texture coordinates, as the shader reads it."""
    b = np.asarray(buffer_rows, np.float64)
    res = int(resolution)
    f = np.clip(np.asarray(uv, np.float64) * res - 0.5, 0.0, res - 1)
    i0 = np.minimum(np.floor(f).astype(int), max(res - 2, 0))
    i1 = np.minimum(i0 + 1, res - 1)
    t = f - i0
    tx, ty = t[:, :1], t[:, 1:]
    top = b[i0[:, 1], i0[:, 0]] * (1 - tx) + b[i0[:, 1], i1[:, 0]] * tx
    bottom = b[i1[:, 1], i0[:, 0]] * (1 - tx) + b[i1[:, 1], i1[:, 0]] * tx
    return top * (1 - ty) + bottom * ty


def engine_rows(buffer: npt.ArrayLike, engine: str) -> np.ndarray:
    """A buffer as ``core.snow`` holds it (row 0 = min world y) in the engine's texel order (Godot and Unreal: the
    EXR's own, top row first; Unity: bottom row first)."""
    arr = np.asarray(buffer)
    return arr if engine == "UNITY" else arr[::-1]


def displacement(points: npt.ArrayLike, thickness: npt.ArrayLike, buffer_rows: npt.ArrayLike, uv_offset: npt.ArrayLike,
                 c: dict) -> np.ndarray:
    """(N, 3) world displacement of engine-space snow vertices (N, 3) with ``thickness`` (N,) in engine units
    (0: floored at the ground, no snow there; negative: no floor): the shader's ``envfx_snow_offset`` in numpy."""
    p = np.asarray(points, np.float64).reshape(-1, 3)
    uv = np.stack([p @ np.asarray(c["u_from_world"]), p @ np.asarray(c["v_from_world"])], 1) + np.asarray(uv_offset)
    r = sample(buffer_rows, uv, c["resolution"])[:, 0] * c["units_per_blender_unit"]
    th = np.asarray(thickness, np.float64).reshape(-1)
    d = np.where(th >= 0.0, np.maximum(r, -c["ground_keep"] * th), r)
    return d[:, None] * np.asarray(c["up"])[None, :]


def preview_displacement(points_blender: npt.ArrayLike, thickness_blender: npt.ArrayLike | None, buffer: npt.ArrayLike,
                         origin: Sequence[float] | np.ndarray, texel: float) -> np.ndarray:
    """(N,) the Blender preview's world-Z displacement of snow vertices at Blender world points (the "EnvFX Snow
    Buffer" group: R sampled bilinearly, floored at ``-GROUND_KEEP * thickness``; thickness None: no floor)."""
    p = np.asarray(points_blender, np.float64).reshape(-1, 3)
    r = sample_buffer(buffer, origin, texel, p[:, :2], 0)
    if thickness_blender is None:
        return r
    return np.maximum(r, -GROUND_KEEP * np.asarray(thickness_blender, np.float64).reshape(-1))


# --- shader code --------------------------------------------------------------------------------------------

def shader_source(engine: str, resolution: int, world_size: float, unit_scale: float = 1.0, source: str = "") -> str:
    """The engine's snow include for a buffer of ``resolution`` texels over ``world_size`` Blender units."""
    c = engine_constants(resolution, world_size, engine, unit_scale)
    glsl = engine == "GODOT"
    v2, v3, v4, i2 = ("vec2", "vec3", "vec4", "ivec2") if glsl else ("float2", "float3", "float4", "int2")
    const = "const" if glsl else "static const"
    tex = "sampler2D" if glsl else "Texture2D"
    fetch = "texelFetch(snow_buffer, {}, 0)" if glsl else "snow_buffer.Load(int3({}, 0))"
    source = " ".join(str(source).split())

    def vec(values):
        return f"{v3}({', '.join(_num(v) for v in values)})"

    res = c["resolution"]
    lines = [
        "// EnvFX Snow: the snow's displacement from the baked interaction buffer"
        + (f" ({source})." if source else "."),
        f"// Axes and units: {c['axes']}; {c['units']}. Generated by EnvFX: export again after changing the buffer's",
        f"// size or resolution. Buffer: {res} x {res} texels over {_num(c['world_size'])} engine units; channels R",
        "// snow height offset (rim minus push-down, after refill; Blender units: times ENVFX_SNOW_UNITS), G grass",
        f"// wobble, B water height, A grass push-down. Texel row 0 at the {c['uv_origin']} of the texture.",
        "#ifndef ENVFX_SNOW_INCLUDED",
        "#define ENVFX_SNOW_INCLUDED",
        f"{const} {v3} ENVFX_SNOW_UP = {vec(c['up'])};",
        f"{const} {v3} ENVFX_SNOW_U_FROM_WORLD = {vec(c['u_from_world'])};",
        f"{const} {v3} ENVFX_SNOW_V_FROM_WORLD = {vec(c['v_from_world'])};",
        f"{const} float ENVFX_SNOW_UNITS = {_num(c['units_per_blender_unit'])};",
        f"{const} float ENVFX_SNOW_RESOLUTION = {_num(res)};",
        f"{const} float ENVFX_SNOW_GROUND_KEEP = {_num(c['ground_keep'])};",
        "",
        "// the buffer's texture coordinate of a world position; uv_offset: the frame's (the bake's JSON, frames[i].",
        "// uv_offset.<engine>), or envfx_snow_follow_offset(pivot) for a window that follows the player",
        f"{v2} envfx_snow_uv({v3} world_pos, {v2} uv_offset) {{",
        f"    return {v2}(dot(world_pos, ENVFX_SNOW_U_FROM_WORLD), dot(world_pos, ENVFX_SNOW_V_FROM_WORLD))"
        " + uv_offset;",
        "}",
        "",
        "// the follow window around a pivot, snapped to whole texels as the bake snaps it",
        f"{v2} envfx_snow_follow_offset({v3} pivot) {{",
        "    float res = ENVFX_SNOW_RESOLUTION;",
        "    float ou = -floor(dot(pivot, ENVFX_SNOW_U_FROM_WORLD) * res - 0.5 * res) / res;",
    ]
    if c["top_left"]:
        lines.append("    float ov = floor(-dot(pivot, ENVFX_SNOW_V_FROM_WORLD) * res - 0.5 * res) / res + 1.0;")
    else:
        lines.append("    float ov = -floor(dot(pivot, ENVFX_SNOW_V_FROM_WORLD) * res - 0.5 * res) / res;")
    lines += [
        f"    return {v2}(ou, ov);",
        "}",
        "",
        "// the four channels at a texture coordinate: bilinear between texel centres, clamped at the edges",
        f"{v4} envfx_snow_sample({tex} snow_buffer, {v2} uv) {{",
        "    float last = ENVFX_SNOW_RESOLUTION - 1.0;",
        f"    {v2} f = clamp(uv * ENVFX_SNOW_RESOLUTION - 0.5, 0.0, last);",
        f"    {v2} i0 = min(floor(f), {v2}(max(last - 1.0, 0.0), max(last - 1.0, 0.0)));",
        f"    {v2} t = f - i0;",
        f"    {i2} a = {i2}(i0);",
        f"    {i2} b = {i2}(min(i0 + 1.0, {v2}(last, last)));",
        f"    {v4} p00 = {fetch.format(f'{i2}(a.x, a.y)')};",
        f"    {v4} p10 = {fetch.format(f'{i2}(b.x, a.y)')};",
        f"    {v4} p01 = {fetch.format(f'{i2}(a.x, b.y)')};",
        f"    {v4} p11 = {fetch.format(f'{i2}(b.x, b.y)')};",
        "    return (p00 * (1.0 - t.x) + p10 * t.x) * (1.0 - t.y) + (p01 * (1.0 - t.x) + p11 * t.x) * t.y;",
        "}",
        "",
        "// the snow vertex's world displacement (engine units, along up): the height offset R, floored a sliver",
        "// above the ground (thickness: the snow's, engine units, 0 where there is none; negative: no floor)",
        f"{v3} envfx_snow_offset({v3} world_pos, float thickness, {v2} uv_offset, {tex} snow_buffer) {{",
        "    float r = envfx_snow_sample(snow_buffer, envfx_snow_uv(world_pos, uv_offset)).r * ENVFX_SNOW_UNITS;",
        "    float d = thickness >= 0.0 ? max(r, -ENVFX_SNOW_GROUND_KEEP * thickness) : r;",
        "    return d * ENVFX_SNOW_UP;",
        "}",
    ]
    if engine == "UNITY":
        lines += [
            "",
            "#ifndef ENVFX_SNOW_TEXTURE",
            "#define ENVFX_SNOW_TEXTURE(t) (t).tex",
            "#endif",
            "// Shader Graph Custom Function \"EnvFXSnow\" (Absolute World position; SnowBuffer: the baked EXR,",
            "// imported linear, no compression, no mipmaps; UvOffset: the frame's, or EnvFXSnowFollow's)",
            "void EnvFXSnow_float(float3 WorldPos, float Thickness, float2 UvOffset, UnityTexture2D SnowBuffer,",
            "                     out float3 Offset) {",
            "    Offset = envfx_snow_offset(WorldPos, Thickness, UvOffset, ENVFX_SNOW_TEXTURE(SnowBuffer));",
            "}",
            "",
            "void EnvFXSnowFollow_float(float3 Pivot, out float2 UvOffset) {",
            "    UvOffset = envfx_snow_follow_offset(Pivot);",
            "}",
        ]
    lines.append("#endif")
    return "\n".join(lines) + "\n"


def export_files(folder: str, resolution: int, world_size: float, framing: str = "AREA",
                 origin: Sequence[float] | np.ndarray = (0.0, 0.0),
                 unit_scale: float = 1.0, source: str = "") -> list:
    """Write every engine's snow include and ``envfx_snow.json`` (the numbers in each engine's axes and units;
    for a fixed window its ``uv_offset``) into ``folder`` (made if missing); a failure leaves the folder as it was.
    Returns the paths written."""
    texts = {INCLUDE[e]: shader_source(e, resolution, world_size, unit_scale, source) for e in ENGINES}
    engines = {}
    for e in ENGINES:
        c = engine_constants(resolution, world_size, e, unit_scale)
        c["file"] = INCLUDE[e]
        if framing == "AREA":
            c["uv_offset"] = engine_uv_offset(e, origin, float(world_size))
        engines[e] = c
    meta = {"format": "envfx-snow-engines", "version": 1, "source": source, "resolution": int(resolution),
            "world_size": float(world_size), "framing": framing, "unit_scale": float(unit_scale),
            "origin": [float(v) for v in origin] if framing == "AREA" else None,
            "displacement": "max(R * units, -ground_keep * thickness) along up (R * units for a negative "
                            "thickness: no floor), R bilinear at uv = "
                            "(dot(P, u_from_world), dot(P, v_from_world)) + uv_offset",
            "follow": "uv_offset from envfx_snow_follow_offset(pivot): the window's origin = floor((pivot - size / 2) "
                      "/ texel) * texel in Blender's x and y",
            "engines": engines}
    texts[JSON_NAME] = json.dumps(meta, indent=2) + "\n"
    return write_text_files(folder, texts)
