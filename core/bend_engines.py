"""The world bend for game engines: the scene's bend as shader code and JSON for Godot, Unity and Unreal.

A game draws the rolling world in its vertex shader, so what it needs from Blender is the bend's formula with
the artist's numbers, in the engine's axes and units. ``export_files`` writes, for every engine, a shader
include with ``envfx_bend(world_pos, pivot)`` (the bent world position of a physical one; the game passes its
player's or camera's world position as ``pivot`` every frame), ``envfx_bend_normal(world_pos, world_normal, pivot)``
and ``envfx_bend_tangent(world_pos, world_tangent, pivot)`` (the bend's Jacobian on normals, inverse transpose, and
on tangents and bitangents, as ``core.bend.forward_normals`` and ``forward_tangents``), with an example hook-up
in comments, and ``envfx_bend.json`` with every number in Blender's and each engine's space and, given the scene's
objects and a view distance, what each engine's culling needs (``culling``).

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
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from . import bend as core_bend
from .outputs import write_text_files

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


def to_engine(points: npt.ArrayLike, engine: str, unit_scale: float = 1.0) -> npt.NDArray[np.float64]:
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
    lines += body + ["    return world_pos - drop * ENVFX_BEND_UP;", "}", ""]
    lines += [
        "// the drop's slope (along the engine's level directions): the same at a physical position and where it",
        "// is drawn, so the pixel shader's bent world position serves as well as the vertex shader's flat one",
        f"{v3} envfx_bend_slope({v3} world_pos, {v3} pivot) {{",
        f"    {v3} rel = world_pos - (pivot + ENVFX_BEND_HORIZON_OFFSET * ENVFX_BEND_FORWARD);",
    ] + _SLOPE[params.mode](v3) + [
        "}",
        "",
        "// envfx_bend_normal: a world normal at a physical world position -> the unit normal of the bent surface",
        "// (the bend's Jacobian, inverse transpose); envfx_bend_tangent: a world tangent or bitangent -> the unit",
        "// direction of the bent surface (the Jacobian; a tangent's w, its handedness, stays)",
        f"{v3} envfx_bend_normal({v3} world_pos, {v3} world_normal, {v3} pivot) {{",
        f"    {v3} slope = envfx_bend_slope(world_pos, pivot);",
        "    return normalize(world_normal + slope * dot(world_normal, ENVFX_BEND_UP));",
        "}",
        "",
        f"{v3} envfx_bend_tangent({v3} world_pos, {v3} world_tangent, {v3} pivot) {{",
        f"    {v3} slope = envfx_bend_slope(world_pos, pivot);",
        "    return normalize(world_tangent - dot(slope, world_tangent) * ENVFX_BEND_UP);",
        "}",
    ]
    if engine == "UNITY":  # Shader Graph Custom Function nodes (File mode, names EnvFXBend, EnvFXBendNormal, ...)
        lines += [
            "",
            "void EnvFXBend_float(float3 WorldPos, float3 Pivot, out float3 Out) {",
            "    Out = envfx_bend(WorldPos, Pivot);",
            "}",
            "",
            "void EnvFXBendNormal_float(float3 WorldPos, float3 WorldNormal, float3 Pivot, out float3 Out) {",
            "    Out = envfx_bend_normal(WorldPos, WorldNormal, Pivot);",
            "}",
            "",
            "void EnvFXBendTangent_float(float3 WorldPos, float3 WorldTangent, float3 Pivot, out float3 Out) {",
            "    Out = envfx_bend_tangent(WorldPos, WorldTangent, Pivot);",
            "}",
            "",
            "// for a graph (or node) set to half precision: the bend itself is still computed in float",
            "void EnvFXBend_half(half3 WorldPos, half3 Pivot, out half3 Out) {",
            "    Out = (half3)envfx_bend((float3)WorldPos, (float3)Pivot);",
            "}",
            "",
            "void EnvFXBendNormal_half(half3 WorldPos, half3 WorldNormal, half3 Pivot, out half3 Out) {",
            "    Out = (half3)envfx_bend_normal((float3)WorldPos, (float3)WorldNormal, (float3)Pivot);",
            "}",
            "",
            "void EnvFXBendTangent_half(half3 WorldPos, half3 WorldTangent, half3 Pivot, out half3 Out) {",
            "    Out = (half3)envfx_bend_tangent((float3)WorldPos, (float3)WorldTangent, (float3)Pivot);",
            "}",
        ]
    lines.append("#endif")
    lines += [""] + ["// " + line if line else "//" for line in _EXAMPLES[engine].strip("\n").splitlines()]
    return "\n".join(lines) + "\n"


def _axis_slope(coord, vec, strength, spread):
    """GLSL/HLSL lines: the slope of ``strength * max(|dot(rel, vec)| - spread, 0)^2``, into ``coord``_slope."""
    return [
        f"    float {coord} = dot(rel, {vec});",
        f"    float {coord}_out = max(abs({coord}) - {spread}, 0.0);",
        f"    float {coord}_slope = 2.0 * {strength} * {coord}_out * sign({coord});",
    ]


_SLOPE = {
    "RUNNER": lambda v3: _axis_slope("u", "ENVFX_BEND_FORWARD", "ENVFX_BEND_STRENGTH", "ENVFX_BEND_SPREAD") + [
        "    return u_slope * ENVFX_BEND_FORWARD;"],
    "RUNNER_2AXIS": lambda v3: (
        _axis_slope("u", "ENVFX_BEND_FORWARD", "ENVFX_BEND_STRENGTH", "ENVFX_BEND_SPREAD")
        + _axis_slope("v", "ENVFX_BEND_SIDE", "ENVFX_BEND_SIDE_STRENGTH", "ENVFX_BEND_SIDE_SPREAD")
        + ["    return u_slope * ENVFX_BEND_FORWARD + v_slope * ENVFX_BEND_SIDE;"]),
    "PLANET": lambda v3: [
        f"    {v3} level = rel - dot(rel, ENVFX_BEND_UP) * ENVFX_BEND_UP;",
        "    float r = length(level);",
        "    float r_out = max(r - ENVFX_BEND_SPREAD, 0.0);",
        "    return (2.0 * ENVFX_BEND_STRENGTH * r_out / max(r, 1e-30)) * level;",  # r_out is 0 where r is
    ],
    "CYLINDER": lambda v3: _axis_slope("v", "ENVFX_BEND_SIDE", "ENVFX_BEND_STRENGTH", "ENVFX_BEND_SPREAD") + [
        "    return v_slope * ENVFX_BEND_SIDE;"],
}

# How a material hooks the include up, written as comments at the end of each engine's file (docs/bend-engines.md
# says the same at more length). The normal and tangent take the flat position: bend it last.
_EXAMPLES = {
    "GODOT": """
Example hook-up (Godot 4 spatial shader):
  shader_type spatial;
  render_mode world_vertex_coords; // VERTEX, NORMAL, TANGENT, BINORMAL in world space
  #include "res://envfx_bend.gdshaderinc"
  global uniform vec3 envfx_pivot; // Project Settings > Shader Globals; the game sets the player's position
  void vertex() {
      vec3 flat_pos = VERTEX;
      NORMAL = envfx_bend_normal(flat_pos, NORMAL, envfx_pivot);
      TANGENT = envfx_bend_tangent(flat_pos, TANGENT, envfx_pivot);
      BINORMAL = envfx_bend_tangent(flat_pos, BINORMAL, envfx_pivot);
      VERTEX = envfx_bend(flat_pos, envfx_pivot);
  }
Culling: set each MeshInstance3D's extra_cull_margin to "extra_cull_margin" of envfx_bend.json
(engines.GODOT.culling; the same for every object), or its custom_aabb to the object's "bent_min"/"bent_max".
""",
    "UNITY": """
Example hook-up (Unity URP, a hand-written vertex function; in Shader Graph use the Custom Function nodes
EnvFXBend, EnvFXBendNormal and EnvFXBendTangent on Absolute World values, then Transform to Object space):
  #include "EnvFXBend.hlsl"
  float3 _EnvFXPivot; // Shader.SetGlobalVector("_EnvFXPivot", player.position) every frame
  float3 flatWS = TransformObjectToWorld(input.positionOS.xyz);
  float3 normalWS = envfx_bend_normal(flatWS, TransformObjectToWorldNormal(input.normalOS), _EnvFXPivot);
  float3 tangentWS = envfx_bend_tangent(flatWS, TransformObjectToWorldDir(input.tangentOS.xyz), _EnvFXPivot);
  float3 bitangentWS = cross(normalWS, tangentWS) * input.tangentOS.w; // the bend keeps the handedness
  output.positionCS = TransformWorldToHClip(envfx_bend(flatWS, _EnvFXPivot));
Culling: renderer.bounds = new Bounds(center, size) with each object's "bounds_center" and "bounds_size"
in envfx_bend.json (engines.UNITY.culling.objects), or widen the camera's cullingMatrix (see docs).
""",
    "UNREAL": """
Example hook-up (Unreal material, Custom nodes with Include File Paths /Plugin/<Name>/EnvFXBend.ush):
  World Position Offset: Custom node (WorldPos = Absolute World Position, Excluding Material Offsets;
      Pivot = a Material Parameter Collection vector the game sets every frame), Code:
      return envfx_bend(WorldPos, Pivot) - WorldPos;
  Normal (untick the material's Tangent Space Normal): Custom node (WorldPos = Absolute World Position,
      WorldNormal = the normal map through Transform Vector Tangent to World, or Vertex Normal WS), Code:
      return envfx_bend_normal(WorldPos, WorldNormal, Pivot);
  Tangents (a custom tangent frame): return envfx_bend_tangent(WorldPos, WorldTangent, Pivot);
Culling: the material's Max World Position Offset Displacement = "max_displacement" of envfx_bend.json
(engines.UNREAL.culling, centimetres; it pads the bounds of every primitive using the material), or each
component's Bounds Scale = the object's "bounds_scale".
""",
}


# Ready-to-use examples written next to each include by ``export_files``: a material that uses the include and the
# few lines of game code that feed it the player's position every frame (docs/bend-engines.md walks through them).
EXAMPLE_FILES = {
    "GODOT": {
        "envfx_bend_example.gdshader": """\
// EnvFX World Bend: a Godot 4 spatial shader that bends its mesh as the Blender viewport does.
// Keep it next to envfx_bend.gdshaderinc, add the shader global envfx_pivot (Project Settings > Globals >
// Shader Globals, type vec3) and put envfx_bend_pivot.gd on the player: it sets envfx_pivot every frame.
shader_type spatial;
render_mode world_vertex_coords; // VERTEX, NORMAL, TANGENT, BINORMAL in world space

#include "envfx_bend.gdshaderinc"

global uniform vec3 envfx_pivot;
uniform vec4 albedo : source_color = vec4(1.0);
uniform sampler2D albedo_texture : source_color, hint_default_white;

void vertex() {
	vec3 flat_pos = VERTEX; // the normal and tangents take the flat position: bend the position last
	NORMAL = envfx_bend_normal(flat_pos, NORMAL, envfx_pivot);
	TANGENT = envfx_bend_tangent(flat_pos, TANGENT, envfx_pivot);
	BINORMAL = envfx_bend_tangent(flat_pos, BINORMAL, envfx_pivot);
	VERTEX = envfx_bend(flat_pos, envfx_pivot);
}

void fragment() {
	ALBEDO = albedo.rgb * texture(albedo_texture, UV).rgb;
}
""",
        "envfx_bend_pivot.gd": """\
# EnvFX World Bend: sets the shader global envfx_pivot to the player's world position every frame, so every
# material using envfx_bend.gdshaderinc (envfx_bend_example.gdshader) bends around the player.
# Put it on the player (or the camera), or on any node and set target. The global must exist:
# Project Settings > Globals > Shader Globals, envfx_pivot, vec3.
extends Node3D

## The node the world bends around (empty: this node).
@export var target: Node3D


func _process(_delta: float) -> void:
	var pivot: Node3D = target if target != null else self
	RenderingServer.global_shader_parameter_set(&"envfx_pivot", pivot.global_position)
""",
    },
    "UNITY": {
        "EnvFXBendPivot.cs": """\
// EnvFX World Bend: sets the global shader vector _EnvFXPivot to this object's position every frame, so every
// material using EnvFXBend.hlsl bends around it. Add it to the player (or the camera).
using UnityEngine;

public class EnvFXBendPivot : MonoBehaviour
{
    static readonly int PivotId = Shader.PropertyToID("_EnvFXPivot");

    void LateUpdate()
    {
        Shader.SetGlobalVector(PivotId, transform.position);
    }
}
""",
        "EnvFXBend_ShaderGraph.md": """\
# EnvFX World Bend in Unity Shader Graph

1. Copy `EnvFXBend.hlsl` and `EnvFXBendPivot.cs` into the project's `Assets` folder.
2. In the Shader Graph's Blackboard add a **Vector3** property, Reference `_EnvFXPivot`, Scope **Global**
   (older versions: untick Exposed). `EnvFXBendPivot` sets it for every material at once.
3. Vertex stage, position: a **Position** node (Space: Absolute World) into a **Custom Function** node (Type: File,
   Source: `EnvFXBend.hlsl`, Name: `EnvFXBend`; inputs `WorldPos` Vector3, `Pivot` Vector3 (the property);
   output `Out` Vector3), then a **Transform** node (Absolute World to Object, Type: Position) into
   **Vertex Position**.
4. Vertex stage, normal: a **Normal Vector** node (Space: World) and the same Position into a Custom Function
   `EnvFXBendNormal` (inputs `WorldPos`, `WorldNormal`, `Pivot`; output `Out`), then a Transform (World to Object,
   Type: Normal) into **Vertex Normal**. The tangent the same way with `EnvFXBendTangent` into **Vertex Tangent**.
5. Add the `EnvFXBendPivot` component to the player (or the camera).
6. Culling: give each renderer the bounds in `envfx_bend.json` (`engines.UNITY.culling.objects`: `bounds_center`,
   `bounds_size`), or it may vanish at the screen's edge while its bent self is still in view.

A graph set to half precision uses the `_half` functions of the same file by itself.
""",
    },
    "UNREAL": {
        "EnvFXBend_Unreal.md": """\
# EnvFX World Bend in Unreal Engine 5

1. Put `EnvFXBend.ush` in a plugin's `Shaders` folder (it is then `/Plugin/<Name>/EnvFXBend.ush`), or in a folder
   mapped with `AddShaderSourceDirectoryMapping` in a project module.
2. **Material Parameter Collection** `MPC_EnvFXBend` with one Vector Parameter `Pivot`: the player's position,
   in centimetres, set every frame (step 5).
3. **Material Function** `MF_EnvFXBend` (Expose to Library):
   - a **Collection Parameter** node (`MPC_EnvFXBend`, `Pivot`) through a **Component Mask** (R G B);
   - an **Absolute World Position** node (Excluding Material Offsets);
   - a **Custom** node: Output Type `CMOT Float 3`, Include File Paths `/Plugin/<Name>/EnvFXBend.ush`, inputs
     `WorldPos` and `Pivot`, Code `return envfx_bend(WorldPos, Pivot) - WorldPos;`, into a Function Output
     `World Position Offset`;
   - a second Custom node with an input `WorldNormal` (the Vertex Normal WS, or the normal map through Transform
     Vector Tangent to World), Code `return envfx_bend_normal(WorldPos, WorldNormal, Pivot);`, into a Function
     Output `Normal` (untick the material's Tangent Space Normal to use it).
4. In each bent material: `MF_EnvFXBend`'s World Position Offset into the material's **World Position Offset**,
   and set the material's Max World Position Offset Displacement to `max_displacement` of `envfx_bend.json`
   (`engines.UNREAL.culling`), so bent objects are not culled too early.
5. Feed the pivot every frame, in the player's Blueprint: **Event Tick** -> **Set Vector Parameter Value**
   (Collection `MPC_EnvFXBend`, Parameter Name `Pivot`, Parameter Value: **Get Actor Location**). In C++, the
   same in the pawn's `Tick` (module dependency `Engine`):

```cpp
#include "Kismet/KismetMaterialLibrary.h"
#include "Materials/MaterialParameterCollection.h"

// in the pawn's header: UPROPERTY(EditAnywhere) UMaterialParameterCollection* EnvFXBendCollection;
void AMyPawn::Tick(float DeltaSeconds)
{
    Super::Tick(DeltaSeconds);
    UKismetMaterialLibrary::SetVectorParameterValue(this, EnvFXBendCollection, TEXT("Pivot"),
                                                    FLinearColor(GetActorLocation()));
}
```
""",
    },
}


# how far from the pivot a game draws, when the caller does not say (Blender units)
DEFAULT_VIEW_DISTANCE = 100.0

_CULL_FORMULA = ("margin(V) for a view distance V (the farthest a drawn point is from the pivot, horizontally): "
                 "each term strength * max(reach - spread, 0)^2 of the mode, reach = V + |horizon_offset| along "
                 "forward and for the planet's radius, V sideways; positive terms add up to margin_down, negative "
                 "ones to margin_up. The bend moves points along the engine's up only: an object's bounds grow by "
                 "margin_down below and margin_up above, wherever the pivot is")
_CULL_RECIPES = {
    "GODOT": "GeometryInstance3D.extra_cull_margin = extra_cull_margin (grows the AABB on every side), or "
             "custom_aabb = the object's bent box in its local space",
    "UNITY": "Renderer.bounds = new Bounds(bounds_center, bounds_size) per object (a world-space override; "
             "ResetBounds() undoes it), or a camera cullingMatrix widened as in the write-up",
    "UNREAL": "the material's Max World Position Offset Displacement = max_displacement (pads the bounds of "
              "every primitive using it and clamps the offset to it), or the component's Bounds Scale = "
              "bounds_scale (null for a flat object: a zero extent does not scale)",
}


def _box(points) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    return p.min(axis=0), p.max(axis=0)


def _corners(bmin, bmax) -> np.ndarray:
    lo, hi = np.asarray(bmin, dtype=np.float64), np.asarray(bmax, dtype=np.float64)
    return np.array([[(lo, hi)[i >> k & 1][k] for k in range(3)] for i in range(8)])


def culling(params: core_bend.BendParams, objects: Iterable[tuple[str, npt.ArrayLike, npt.ArrayLike]] = (),
            view_distance: float = DEFAULT_VIEW_DISTANCE, engine: str | None = None, unit_scale: float = 1.0) -> dict:
    """What culling needs so that no bent object pops: the view margin (``core.bend.view_margin``) for
    ``view_distance`` (Blender units) and, per object of ``objects`` (``(name, flat_min, flat_max)``, world-space
    bounds of the physical, unbent object in Blender), its flat and bent bounds. In Blender's space and units
    for ``engine`` None, else in the engine's, with the engine's own numbers (Godot ``extra_cull_margin``, Unity
    ``bounds_center``/``bounds_size``, Unreal ``max_displacement`` and ``bounds_scale``)."""
    down, up = core_bend.view_margin(params, view_distance)
    k = 1.0 if engine is None else engine_scale(engine, unit_scale)
    out: dict = {"view_distance": float(view_distance) * k, "margin_down": down * k, "margin_up": up * k,
           "max_displacement": max(down, up) * k}
    if engine == "GODOT":
        out["extra_cull_margin"] = out["max_displacement"]
    out["formula"] = _CULL_FORMULA
    if engine is not None:
        out["recipe"] = _CULL_RECIPES[engine]
    rows = []
    for name, bmin, bmax in objects:
        lo, hi = core_bend.bent_bounds(bmin, bmax, params, view_distance)
        flat, bent = (np.asarray(bmin, dtype=np.float64), np.asarray(bmax, dtype=np.float64)), (lo, hi)
        if engine is not None:
            flat = _box(to_engine(_corners(*flat), engine, unit_scale))
            bent = _box(to_engine(_corners(*bent), engine, unit_scale))
        row = {"name": str(name), "flat_min": flat[0].tolist(), "flat_max": flat[1].tolist(),
               "bent_min": bent[0].tolist(), "bent_max": bent[1].tolist(),
               "margin_down": out["margin_down"], "margin_up": out["margin_up"]}
        if engine == "GODOT":
            row["extra_cull_margin"] = out["extra_cull_margin"]
        if engine == "UNITY":
            row["bounds_center"] = ((bent[0] + bent[1]) / 2).tolist()
            row["bounds_size"] = (bent[1] - bent[0]).tolist()
        if engine == "UNREAL":
            centre, extent = (flat[0] + flat[1]) / 2, (flat[1] - flat[0]) / 2
            need = np.maximum(centre - bent[0], bent[1] - centre)
            grows = need > extent * (1 + 1e-12)
            scale = None
            if not np.any(grows & (extent <= 0.0)):
                scale = float(np.max(np.where(extent > 0.0, need / np.where(extent > 0.0, extent, 1.0), 1.0)))
            row["bounds_scale"] = scale
        _check_float32({key: v for key, v in row.items() if key != "name" and v is not None}, engine or "Blender")
        rows.append(row)
    _check_float32({key: v for key, v in out.items() if key not in ("formula", "recipe")}, engine or "Blender")
    out["objects"] = rows
    return out


def export_files(params: core_bend.BendParams, folder: str, source: str = "", unit_scale: float = 1.0,
                 objects: Iterable[tuple[str, npt.ArrayLike, npt.ArrayLike]] = (),
                 view_distance: float = DEFAULT_VIEW_DISTANCE) -> list[str]:
    """Write every engine's shader include, its examples (``EXAMPLE_FILES``: a material using the include and the
    game code that sets the pivot every frame) and ``envfx_bend.json`` into ``folder`` (created if missing), for a
    scene whose ``scale_length`` is ``unit_scale``; returns the paths written. ``objects`` (``(name, flat_min,
    flat_max)``: the bent objects' world bounds, unbent, in Blender) and ``view_distance`` (how far from the
    pivot the game draws, Blender units) give the JSON's ``culling`` (see ``culling``). Raises BendError for bad
    settings and OSError when the folder cannot be written."""
    params.validate()
    texts = {spec[3]: shader_source(params, engine, source, unit_scale) for engine, spec in ENGINES.items()}
    objects = list(objects)
    cull = {engine: culling(params, objects, view_distance, engine, unit_scale) for engine in ENGINES}
    meta = {
        "format": "envfx-bend", "version": 1, "source": source,
        "formula": "drop = strength * max(0, |coord| - spread)^2 along the engine's down (see the shader files)",
        "blender": {
            "mode": params.mode, "axis": params.axis, "enabled": bool(params.enabled),
            "pivot": [float(v) for v in params.pivot], "horizon_offset": params.horizon_offset,
            "strength": params.strength, "spread": params.spread,
            "side_strength": params.side_strength, "side_spread": params.side_spread,
            "unit_scale": float(unit_scale),
            "culling": culling(params, objects, view_distance),
        },
        "engines": {
            engine: {"file": spec[3], "axes": spec[4], "export_format": spec[5],
                     "metres_per_blender_unit": metres_per_unit(engine, unit_scale),
                     "units": units_note(engine, unit_scale),
                     **_check_float32({"pivot": to_engine([params.pivot], engine, unit_scale)[0].tolist()}, engine),
                     **engine_constants(params, engine, unit_scale),
                     "culling": cull[engine]}
            for engine, spec in ENGINES.items()
        },
    }
    for examples in EXAMPLE_FILES.values():  # each engine's ready-to-use material and game code, beside its include
        texts.update(examples)
    texts[JSON_NAME] = json.dumps(meta, indent=2) + "\n"
    return write_text_files(folder, texts)
