"""The live wind's engine shader code (core.wind_engines) compiles with glslang (Godot's include as GLSL, Unity's
and Unreal's as HLSL) and, run on Mesa's llvmpipe over thousands of vertices of a tree and a grass clump and
several frames (with and without a loop, a rotated and scaled object, a camera looking down at the grass), gives
the offsets of core.wind.live.wind_offsets (the twin of the Blender preview) in each engine's axes and units, to
1e-4 of the asset's size; grass blade by blade (each blade's gust and figure-eight at its root)."""

import importlib.util
import math
import os
from typing import Any

import numpy as np
import pytest

from core import bend_engines
from core import wind_engines as we
from core.wind import live as core_live

_spec = importlib.util.spec_from_file_location("engine_gpu", os.path.join(os.path.dirname(__file__), "engine_gpu.py"))
assert _spec is not None and _spec.loader is not None
engine_gpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_gpu)

GLSL_MAIN = """
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec3 rest_pos;
layout(location = 2) in vec3 normal;
layout(location = 3) in vec4 uv_a;
layout(location = 4) in vec4 uv_b;
layout(location = 5) in vec2 uv_c;
layout(location = 0) out vec4 result;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    mat4 object_to_world = mat4(@MATRIX@);
    vec3 off = envfx_wind_offset_uv(rest_pos, normal, uv_a.xy, uv_a.zw, uv_b.xy, uv_b.zw, uv_c, object_to_world,
                                    @FRAME@, vec4(@WIND@), vec4(@GUSTS@), vec4(@GRASS@), vec3(@CAMERA_POS@),
                                    vec3(@CAMERA_Z@));
    result = vec4(off, 1.0);
}
"""
HLSL_MAIN = """
struct Out { float4 position : SV_Position; float4 result : TEXCOORD0; };
Out main(float2 pixel : TEXCOORD0, float3 rest_pos : TEXCOORD1, float3 normal : TEXCOORD2,
         float4 uv_a : TEXCOORD3, float4 uv_b : TEXCOORD4, float2 uv_c : TEXCOORD5) {
    Out o;
    o.position = float4(pixel, 0.0, 1.0);
    float4x4 object_to_world = float4x4(@MATRIX@);
    float3 off;
    CALL
    o.result = float4(off, 1.0);
    return o;
}
"""
CALLS = {  # the five UV channels (BH, Bcs, Rcs, PivotXY, PivotZ) as the engine imports them
    "UNREAL": "off = envfx_wind_offset_uv(rest_pos, normal, uv_a.xy, uv_a.zw, uv_b.xy, uv_b.zw, uv_c, "
              "object_to_world, @FRAME@, float4(@WIND@), float4(@GUSTS@), float4(@GRASS@), float3(@CAMERA_POS@), "
              "float3(@CAMERA_Z@));",
    "UNITY": "EnvFXWind_float(rest_pos, normal, uv_a.xy, uv_a.zw, uv_b.xy, uv_b.zw, uv_c, object_to_world, "
             "@FRAME@, float4(@WIND@), float4(@GUSTS@), float4(@GRASS@), float3(@CAMERA_POS@), float3(@CAMERA_Z@), "
             "off);",
}


def _vec(values):
    return ", ".join(repr(float(v)) for v in np.asarray(values, np.float64).reshape(-1))


def asset_mesh(category: str, seed: int, n: int = 3000, field: float = 1.0):
    """A plant as the wind bake leaves it: rest positions, normals, EnvFX_Height (0 at the base, 1 at the top) and
    EnvFX_Wind (R leaf, G branch phase, B branch lever, A AO): a trunk, branches with leaves (a tree), or blades
    standing on the ground (grass) with their roots spread over a ``field`` by ``field`` square."""
    rng = np.random.default_rng(seed)
    height = 4.0 if category == "TREE" else 0.6
    if category == "TREE":
        pieces = rng.integers(0, 9, n)  # 0: the trunk, 1..8 branches
        h = rng.uniform(0.0, 1.0, n)
        h[pieces > 0] = 0.35 + 0.6 * rng.uniform(0.0, 1.0, (pieces > 0).sum())
        angle = pieces * 0.8
        lever = np.where(pieces > 0, rng.uniform(0.0, 1.0, n), 0.0)
        p = np.column_stack([lever * 1.5 * np.cos(angle) + rng.normal(0, 0.05, n),
                             lever * 1.5 * np.sin(angle) + rng.normal(0, 0.05, n), h * height])
        leaf = np.where((pieces > 0) & (lever > 0.6), rng.uniform(0.3, 1.0, n), 0.0)
        colour = np.column_stack([leaf, pieces / 9.0, lever, np.ones(n)])
        # a base ring at h = 0 on the trunk
        base = rng.choice(np.flatnonzero(pieces == 0), 20, replace=False)
        h[base] = 0.0
        p[base, 2] = 0.0
    else:
        blades = rng.integers(0, 40, n)
        h = rng.uniform(0.0, 1.0, n)
        roots = rng.uniform(-0.5 * field, 0.5 * field, (40, 2))
        p = np.column_stack([roots[blades] + 0.05 * h[:, None] * rng.normal(size=(n, 2)), h * height])
        colour = np.column_stack([np.zeros(n), blades / 40.0, np.zeros(n), np.ones(n)])
        first = np.unique(blades, return_index=True)[1]
        h[first] = 0.0
        p[first, 2] = 0.0
    normals = rng.normal(size=(n, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return p, normals, h, colour, height


def object_matrix(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 2 * math.pi)
    s = rng.uniform(0.7, 1.6)
    m = np.eye(4)
    m[:3, :3] = s * np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    m[:3, 3] = rng.uniform(-20, 20, 3)
    return m


def camera_matrix(origin) -> np.ndarray:
    """A camera 6 units back and 4 up from ``origin``, looking down at it (its -Z axis)."""
    pos = np.asarray(origin) + np.array([-6.0, 2.0, 4.0])
    back = pos - np.asarray(origin)
    back /= np.linalg.norm(back)
    right = np.cross([0.0, 0.0, 1.0], back)
    right /= np.linalg.norm(right)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = right, np.cross(back, right), back, pos
    return m


def run_shader(gpu, tmp_path, engine, include, uvs_e, points_e, normals_e, matrix_e, frame, uniforms, cam_e):
    subst = {"MATRIX": _vec(matrix_e.T if engine == "GODOT" else matrix_e),  # GLSL: columns; HLSL: rows
             "FRAME": repr(float(frame)), "WIND": _vec(uniforms["wind"]), "GUSTS": _vec(uniforms["gusts"]),
             "GRASS": _vec(uniforms["grass"]), "CAMERA_POS": _vec(cam_e[0]), "CAMERA_Z": _vec(cam_e[1])}
    main = GLSL_MAIN if engine == "GODOT" else HLSL_MAIN.replace("CALL", CALLS[engine])
    for key, value in subst.items():
        main = main.replace(f"@{key}@", value)
    src = ("#version 450\n" + include if engine == "GODOT" else include) + main
    vert = engine_gpu.spirv(src, "vert", engine != "GODOT", tmp_path)
    frag = engine_gpu.spirv(engine_gpu.GLSL_FRAG if engine == "GODOT" else engine_gpu.HLSL_FRAG, "frag",
                            engine != "GODOT", tmp_path)
    uv = [uvs_e[name] for name, _parts in we.CHANNELS]
    return gpu.run(vert, frag, [points_e, normals_e, np.hstack(uv[0:2]), np.hstack(uv[2:4]), uv[4]])[:, :3]


@pytest.fixture(scope="module")
def gpu():
    return engine_gpu.Gpu()


CASES = [  # category, engine, loop frames, unit scale
    ("TREE", "GODOT", 0, 1.0), ("TREE", "UNITY", 96, 1.0), ("TREE", "UNREAL", 0, 0.01),
    ("GRASS", "GODOT", 48, 1.0), ("GRASS", "UNITY", 0, 2.0), ("GRASS", "UNREAL", 72, 1.0),
]


@pytest.mark.parametrize("category,engine,loop,unit_scale", CASES)
def test_the_wind_include_moves_every_vertex_as_the_core_on_a_gpu_driver(gpu, tmp_path, category, engine, loop,
                                                                        unit_scale):
    seed = len(category) * 10 + list(we.ENGINES).index(engine)
    p, normals, h, colour, height = asset_mesh(category, seed)
    preset: dict[str, dict[str, Any]] = {
        "TREE": dict(rigidity=1.0, bend=1.0, sway=1.0, lift=0.5, micro=1.0, ramp=0.0, main_bend=True),
        "GRASS": dict(rigidity=1.0, bend=1.5, sway=0.5, lift=0.2, micro=0.5, ramp=2.0, main_bend=True)}
    asset = core_live.AssetWind(category=category, asset_height=height, **preset[category])
    scene = core_live.SceneWind(direction=(0.6, -0.8, 0.3), strength=1.4, gust_strength=0.7, gust_frequency=0.23,
                                loop_frames=loop, fps=24.0, ambient=1.0, grass_tilt=0.5, fade_start=10.0,
                                fade_end=40.0)
    m = object_matrix(seed)
    cam = camera_matrix(m[:3, 3]) if category == "GRASS" else None
    live = core_live.live_attributes(p, h, colour)
    a, k = we.axes(engine, unit_scale)
    include = we.shader_source(engine, asset, unit_scale)
    uniforms = we.scene_uniforms(scene, engine, unit_scale)
    matrix_e = we.engine_matrix_world(m, engine, unit_scale)
    cam_e = (k * (a @ cam[:3, 3]), a @ cam[:3, 2]) if cam is not None else (np.zeros(3), np.array([0.0, 0.0, 1.0]))
    size = k * height * np.abs(m[:3, :3]).max()
    worst, moved = 0.0, 0.0
    for frame in (1, 7, 30.5, 113, 250):
        want_b = core_live.wind_offsets(p, h, colour, normals, m, frame, scene, asset, camera_matrix=cam, live=live)
        want = k * np.asarray(want_b, np.float64) @ a.T
        got = run_shader(gpu, tmp_path, engine, include, we.engine_uvs(we.channel_uvs(live), engine),
                         k * p @ a.T, normals @ a.T, matrix_e, frame, uniforms, cam_e)
        worst = max(worst, float(np.abs(got - want).max()))
        moved = max(moved, float(np.abs(want).max()))
    assert moved > 0.01 * size, (moved, size)
    assert worst <= 1e-4 * size, (worst, size)


def test_the_gpu_wind_check_can_fail(gpu, tmp_path):
    """An include with the branch sway's sine and cosine swapped is caught."""
    p, normals, h, colour, height = asset_mesh("TREE", 3, 1000)
    asset = core_live.AssetWind(category="TREE", asset_height=height)
    scene = core_live.SceneWind(strength=1.5)
    m = object_matrix(3)
    live = core_live.live_attributes(p, h, colour)
    include = we.shader_source("GODOT", asset)
    wrong = include.replace("vc += (0.3 * bend) * sin(x) * d;", "vc += (0.3 * bend) * cos(x) * d;")
    assert wrong != include
    want = np.asarray(core_live.wind_offsets(p, h, colour, normals, m, 20, scene, asset, live=live)) @ we.axes(
        "GODOT")[0].T
    uvs = we.engine_uvs(we.channel_uvs(live), "GODOT")
    got = run_shader(gpu, tmp_path, "GODOT", wrong, uvs, p @ we.axes("GODOT")[0].T,
                     normals @ we.axes("GODOT")[0].T, we.engine_matrix_world(m, "GODOT"), 20,
                     we.scene_uniforms(scene, "GODOT"), (np.zeros(3), np.array([0.0, 1.0, 0.0])))
    assert np.abs(got - want).max() > 1e-3 * height


def test_grass_blades_across_a_field_each_take_their_own_gust(gpu, tmp_path):
    """A grass object 16 m wide: each blade takes the gust and the figure-eight at its root (waves travelling along
    the wind), so the blades' winds differ; the include follows core.wind.live blade by blade, and an include that
    takes them at the object's origin (per-object grass) is caught."""
    p, normals, h, colour, height = asset_mesh("GRASS", 5, 2000, field=16.0)
    asset = core_live.AssetWind(category="GRASS", asset_height=height, rigidity=1.0, bend=1.5, sway=0.5, lift=0.2,
                                micro=0.5, ramp=2.0)
    scene = core_live.SceneWind(direction=(0.8, 0.6, 0.0), strength=1.2, gust_strength=0.9, gust_frequency=0.3,
                                fps=24.0, ambient=1.0, grass_tilt=0.0, fade_start=0.0, fade_end=0.0)
    m = object_matrix(5)
    live = core_live.live_attributes(p, h, colour)
    include = we.shader_source("GODOT", asset)
    per_object = include.replace("float blade = envfx_wind_effective(t, root, d, wind, gusts);",
                                 "float blade = envfx_wind_effective(t, origin, d, wind, gusts);")
    per_object = per_object.replace("float tau = t - dot(root, d) / ENVFX_WIND_GUST_SPEED;", "float tau = t;")
    assert per_object.count("origin, d, wind") == 1 and "float tau = t;" in per_object
    a, _k = we.axes("GODOT")
    uvs = we.engine_uvs(we.channel_uvs(live), "GODOT")
    args = (p @ a.T, normals @ a.T, we.engine_matrix_world(m, "GODOT"))
    cam = (np.zeros(3), np.array([0.0, 1.0, 0.0]))
    tops = np.flatnonzero(h > 0.9)
    worst, caught, spread, differ = 0.0, 0.0, 0.0, 0.0
    for frame in (3, 40, 77):
        lt = core_live.live_terms(m, frame, scene, asset)
        blades = core_live.blade_wind(p, live, m, frame, scene, asset, lt)
        spread = max(spread, float(np.ptp(blades.eff[tops])))
        want = np.asarray(core_live.wind_offsets(p, h, colour, normals, m, frame, scene, asset, live=live)) @ a.T
        # the blade tops' sideways motion (per unit of height) differs from blade to blade
        differ = max(differ, float(np.ptp(want[tops] / h[tops, None], axis=0).max()))
        got = run_shader(gpu, tmp_path, "GODOT", include, uvs, *args, frame, we.scene_uniforms(scene, "GODOT"), cam)
        worst = max(worst, float(np.abs(got - want).max()))
        got = run_shader(gpu, tmp_path, "GODOT", per_object, uvs, *args, frame, we.scene_uniforms(scene, "GODOT"),
                         cam)
        caught = max(caught, float(np.abs(got - want).max()))
    size = height * np.abs(m[:3, :3]).max()
    assert spread > 0.3, spread  # the effective wind of the blades at one frame
    assert differ > 0.05 * height, differ
    assert worst <= 1e-4 * size, (worst, size)
    assert caught > 1e-2 * size, (caught, size)


def test_export_files_write_each_assets_includes_and_the_scene(tmp_path):
    assets = {"Oak": core_live.AssetWind(category="TREE", asset_height=8.0),
              "Grass/Clump": core_live.AssetWind(category="GRASS", asset_height=0.5)}
    scene = core_live.SceneWind(direction=(1.0, 1.0, 0.0), strength=2.0)
    paths = we.export_files(str(tmp_path), assets, scene, unit_scale=0.01, source="level.blend")
    names = sorted(os.path.basename(p) for p in paths)
    assert "envfx_wind_Oak.gdshaderinc" in names and "EnvFXWind_Grass_Clump.ush" in names and we.JSON_NAME in names
    import json
    meta = json.loads((tmp_path / we.JSON_NAME).read_text())
    assert meta["scene"]["UNREAL"]["grass"][2] == pytest.approx(scene.fade_start * 100 * 0.01)
    assert meta["assets"]["Grass/Clump"]["files"]["UNITY"] == "EnvFXWind_Grass_Clump.hlsl"
    assert bend_engines.ENGINES["GODOT"][0] == ((1, 0, 0), (0, 0, 1), (0, -1, 0))
