"""The world bend for game engines: the scene's bend as shader code and JSON for Godot, Unity and Unreal.

A game draws the rolling world in its vertex shader, so what it needs from Blender is the bend's formula with
the artist's numbers, in the engine's axes and units. ``export_files`` writes, for every engine, a shader
include with one function ``envfx_bend(world_pos, pivot)`` (the bent world position of a physical one; the game
passes its player's or camera's world position as ``pivot`` every frame) and ``envfx_bend.json`` with every
number in Blender's and each engine's space.

Axes: a point (x, y, z) of Blender (Z up, right-handed) is, after the usual export,

- GODOT (glTF, +Y up, metres): (x, z, -y);
- UNITY (FBX, +Y up, left-handed, metres): (-x, z, -y);
- UNREAL (FBX, Z up, left-handed, centimetres): 100 * (x, -y, z),

each times the metres per Blender unit of the export format: Blender's glTF exporter writes 1 Blender unit as
1 m whatever the scene's unit scale; its FBX exporter applies the unit scale (``unit_settings.scale_length``, the
metres per Blender unit; 1 m when the unit system is None), which Unity and Unreal honour when they import.

The bend in Blender units is ``drop = a * d^2``; with ``k`` engine units per Blender unit (the metres per Blender
unit times the engine's units per metre) the engine's drop is ``(a / k) * (k d)^2``: the lengths (spreads, the
horizon offset) scale by ``k`` and the strengths divide by it. The drop is along the engine's down.
"""

from __future__ import annotations

import json
import os

import numpy as np

from . import bend as core_bend

ENGINES = {
    # name: (matrix Blender -> engine, engine units per metre, language, file name, what the axes assume,
    #        the export format the units assume)
    "GODOT": (((1, 0, 0), (0, 0, 1), (0, -1, 0)), 1.0, "GLSL", "envfx_bend.gdshaderinc",
              "glTF export (+Y up), metres", "glTF"),
    "UNITY": (((-1, 0, 0), (0, 0, 1), (0, -1, 0)), 1.0, "HLSL", "EnvFXBend.hlsl",
              "FBX export (-Z forward, Y up), Unity's left-handed +Y up, metres", "FBX"),
    "UNREAL": (((1, 0, 0), (0, -1, 0), (0, 0, 1)), 100.0, "HLSL", "EnvFXBend.ush",
               "FBX export, Unreal's left-handed +Z up, centimetres", "FBX"),
}
JSON_NAME = "envfx_bend.json"
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_float32(values: dict, engine: str) -> dict:
    """A shader computes in float32: every number written must be finite and fit one (never inf or 3.4e40)."""
    for name, value in values.items():
        arr = np.asarray(value, dtype=np.float64)
        if not (np.all(np.isfinite(arr)) and np.all(np.abs(arr) <= FLOAT32_MAX)):
            raise core_bend.BendError(f"The bend's {name} is {value} in {engine}'s units, more than a shader's float "
                                      f"holds: use smaller numbers")
    return values


def metres_per_unit(engine: str, unit_scale: float = 1.0) -> float:
    """Metres per Blender unit in the file the engine imports: ``unit_scale`` (the scene's
    ``unit_settings.scale_length``) for FBX, 1.0 for glTF, whose exporter ignores it."""
    if engine not in ENGINES:
        raise core_bend.BendError(f"Unknown engine {engine!r}: use one of {', '.join(ENGINES)}")
    try:
        unit_scale = float(unit_scale)
    except (TypeError, ValueError):
        unit_scale = float("nan")
    if not (np.isfinite(unit_scale) and unit_scale > 0.0):
        raise core_bend.BendError(
            f"Unit scale {unit_scale} is not a length: pass the scene's unit_settings.scale_length (metres per "
            f"Blender unit, a finite number above 0; 1.0 for metres, 0.01 for centimetres)")
    return unit_scale if ENGINES[engine][5] == "FBX" else 1.0


def engine_scale(engine: str, unit_scale: float = 1.0) -> float:
    """Engine units per Blender unit: the export's metres per Blender unit times the engine's units per metre."""
    metres = metres_per_unit(engine, unit_scale)  # checks the engine and the unit scale
    return ENGINES[engine][1] * metres


def to_engine(points, engine: str, unit_scale: float = 1.0) -> np.ndarray:
    """Blender world points (N, 3) -> the engine's world points, for a scene whose ``scale_length`` is
    ``unit_scale``."""
    scale = engine_scale(engine, unit_scale)
    matrix = ENGINES[engine][0]
    return scale * (np.asarray(points, dtype=np.float64) @ np.asarray(matrix, dtype=np.float64).T)


def engine_constants(params: core_bend.BendParams, engine: str, unit_scale: float = 1.0) -> dict:
    """The bend's numbers in the engine's space: unit vectors up/forward/side, lengths in its unit, for a scene
    whose ``scale_length`` is ``unit_scale``."""
    params.validate()
    scale = engine_scale(engine, unit_scale)
    matrix = ENGINES[engine][0]
    m = np.asarray(matrix, dtype=np.float64)
    f, side = core_bend.axis_vectors(params.axis)
    on = 1.0 if params.enabled else 0.0
    return _check_float32({
        "up": (m @ np.array([0.0, 0.0, 1.0])).tolist(),
        "forward": (m @ f).tolist(),
        "side": (m @ side).tolist(),
        "horizon_offset": params.horizon_offset * scale,
        "strength": on * params.strength / scale,
        "spread": params.spread * scale,
        "side_strength": on * params.side_strength / scale,
        "side_spread": params.side_spread * scale,
    }, engine)


def _num(value: float) -> str:
    text = f"{float(value):.8g}"  # float32 precision: what a shader computes with
    return text if any(c in text for c in ".eEn") else text + ".0"


def units_note(engine: str, unit_scale: float = 1.0) -> str:
    """What one Blender unit is in the engine and why: the export format and the scene's unit scale."""
    _matrix, per_metre, _language, _file, _axes, export = ENGINES[engine]
    metres = metres_per_unit(engine, unit_scale)
    unit = {1.0: "m", 100.0: "cm"}[per_metre]
    note = f"1 Blender unit = {_num(metres * per_metre)} {unit} ({export} export"
    if export == "glTF":
        return note + f", which ignores the scene's unit scale {_num(unit_scale)})"
    note += f", which applies the scene's unit scale {_num(unit_scale)} m per Blender unit)"
    if engine == "UNITY" and unit_scale != 1.0:
        note += "; a glTF export would not apply it: import FBX, or set the unit scale to 1"
    return note


def shader_source(params: core_bend.BendParams, engine: str, source: str = "", unit_scale: float = 1.0) -> str:
    """The engine's shader include: constants and ``envfx_bend(world_pos, pivot)`` for the scene's mode, for a
    scene whose ``scale_length`` is ``unit_scale``."""
    c = engine_constants(params, engine, unit_scale)
    source = " ".join(str(source).split())  # one comment line
    _matrix, _scale, language, _file, axes, _export = ENGINES[engine]
    v3 = "vec3" if language == "GLSL" else "float3"
    const = "const" if language == "GLSL" else "static const"

    def vec(values):
        return f"{v3}({', '.join(_num(v) for v in values)})"

    lines = [
        f"// EnvFX World Bend, mode {params.mode}, axis {params.axis}{' (' + source + ')' if source else ''}.",
        f"// Axes and units: {axes}. Generated by EnvFX; export again after changing the bend.",
        f"// Units: {units_note(engine, unit_scale)}.",
        "// envfx_bend(world_pos, pivot): where a physical world position is drawn; pivot = the player's or",
        "// camera's world position, set every frame.",
        "// included twice (two nodes or materials using it), it is defined once",
        "#ifndef ENVFX_BEND_INCLUDED",
        "#define ENVFX_BEND_INCLUDED",
        f"{const} {v3} ENVFX_BEND_UP = {vec(c['up'])};",
        f"{const} {v3} ENVFX_BEND_FORWARD = {vec(c['forward'])};",
        f"{const} {v3} ENVFX_BEND_SIDE = {vec(c['side'])};",
        f"{const} float ENVFX_BEND_HORIZON_OFFSET = {_num(c['horizon_offset'])};",
        f"{const} float ENVFX_BEND_STRENGTH = {_num(c['strength'])};",
        f"{const} float ENVFX_BEND_SPREAD = {_num(c['spread'])};",
        f"{const} float ENVFX_BEND_SIDE_STRENGTH = {_num(c['side_strength'])};",
        f"{const} float ENVFX_BEND_SIDE_SPREAD = {_num(c['side_spread'])};",
        "",
        f"{v3} envfx_bend({v3} world_pos, {v3} pivot) {{",
        f"    {v3} rel = world_pos - (pivot + ENVFX_BEND_HORIZON_OFFSET * ENVFX_BEND_FORWARD);",
    ]
    body = {
        "RUNNER": [
            "    float d = max(abs(dot(rel, ENVFX_BEND_FORWARD)) - ENVFX_BEND_SPREAD, 0.0);",
            "    float drop = ENVFX_BEND_STRENGTH * d * d;",
        ],
        "RUNNER_2AXIS": [
            "    float d = max(abs(dot(rel, ENVFX_BEND_FORWARD)) - ENVFX_BEND_SPREAD, 0.0);",
            "    float e = max(abs(dot(rel, ENVFX_BEND_SIDE)) - ENVFX_BEND_SIDE_SPREAD, 0.0);",
            "    float drop = ENVFX_BEND_STRENGTH * d * d + ENVFX_BEND_SIDE_STRENGTH * e * e;",
        ],
        "PLANET": [
            f"    {v3} level = rel - dot(rel, ENVFX_BEND_UP) * ENVFX_BEND_UP;",  # not "flat": a GLSL/Godot keyword
            "    float d = max(length(level) - ENVFX_BEND_SPREAD, 0.0);",
            "    float drop = ENVFX_BEND_STRENGTH * d * d;",
        ],
        "CYLINDER": [
            "    float d = max(abs(dot(rel, ENVFX_BEND_SIDE)) - ENVFX_BEND_SPREAD, 0.0);",
            "    float drop = ENVFX_BEND_STRENGTH * d * d;",
        ],
    }[params.mode]
    lines += body + ["    return world_pos - drop * ENVFX_BEND_UP;", "}"]
    if engine == "UNITY":  # a Shader Graph Custom Function node (File mode, name "EnvFXBend")
        lines += [
            "",
            "void EnvFXBend_float(float3 WorldPos, float3 Pivot, out float3 Out) {",
            "    Out = envfx_bend(WorldPos, Pivot);",
            "}",
            "",
            "// for a graph (or node) set to half precision: the bend itself is still computed in float",
            "void EnvFXBend_half(half3 WorldPos, half3 Pivot, out half3 Out) {",
            "    Out = (half3)envfx_bend((float3)WorldPos, (float3)Pivot);",
            "}",
        ]
    lines.append("#endif")
    return "\n".join(lines) + "\n"


def export_files(params: core_bend.BendParams, folder: str, source: str = "", unit_scale: float = 1.0) -> list[str]:
    """Write every engine's shader include and ``envfx_bend.json`` into ``folder`` (created if missing), for a
    scene whose ``scale_length`` is ``unit_scale``; returns the paths written. Raises BendError for bad settings
    and OSError when the folder cannot be written."""
    params.validate()
    texts = {spec[3]: shader_source(params, engine, source, unit_scale) for engine, spec in ENGINES.items()}
    meta = {
        "format": "envfx-bend", "version": 1, "source": source,
        "formula": "drop = strength * max(0, |coord| - spread)^2 along the engine's down (see the shader files)",
        "blender": {
            "mode": params.mode, "axis": params.axis, "enabled": bool(params.enabled),
            "pivot": [float(v) for v in params.pivot], "horizon_offset": params.horizon_offset,
            "strength": params.strength, "spread": params.spread,
            "side_strength": params.side_strength, "side_spread": params.side_spread,
            "unit_scale": float(unit_scale),
        },
        "engines": {
            engine: {"file": spec[3], "axes": spec[4], "export_format": spec[5],
                     "metres_per_blender_unit": metres_per_unit(engine, unit_scale),
                     "units": units_note(engine, unit_scale),
                     **_check_float32({"pivot": to_engine([params.pivot], engine, unit_scale)[0].tolist()}, engine),
                     **engine_constants(params, engine, unit_scale)}
            for engine, spec in ENGINES.items()
        },
    }
    texts[JSON_NAME] = json.dumps(meta, indent=2) + "\n"
    os.makedirs(folder, exist_ok=True)
    # every file is written next to its place first: a failure leaves the folder as it was
    done = []
    try:
        for name, text in texts.items():
            tmp = os.path.join(folder, name + ".tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                done.append(tmp)
                fh.write(text)
    except OSError:
        for tmp in done:
            if os.path.exists(tmp):
                os.remove(tmp)
        raise
    written = []
    for tmp in done:
        os.replace(tmp, tmp[:-4])
        written.append(tmp[:-4])
    return written
