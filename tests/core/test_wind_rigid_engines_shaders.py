"""Rigid sway's engine shader code (core.wind_rigid_engines) compiles with glslang (Godot's include as GLSL, Unity's
and Unreal's as HLSL) and, run on Mesa's llvmpipe over thousands of points of a prop and several frames (with and
without a loop, a turned, scaled Y-up object, both kinds of Euler order), turns every point about the prop's origin
as core.wind.rigid (the twin of Blender's drivers) does, in each engine's axes and units, to 1e-4 of the prop's
size."""

import importlib.util
import math
import os

import numpy as np
import pytest

from core import wind_engines as we
from core import wind_rigid_engines as wre
from core.wind import live as core_live
from core.wind import rigid

_spec = importlib.util.spec_from_file_location("engine_gpu", os.path.join(os.path.dirname(__file__), "engine_gpu.py"))
assert _spec is not None and _spec.loader is not None
engine_gpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_gpu)

GLSL_MAIN = """
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec3 rest_pos;
layout(location = 0) out vec4 result;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    mat4 object_to_world = mat4(@MATRIX@);
    result = vec4(envfx_wind_rigid_offset(rest_pos, object_to_world, @FRAME@, vec4(@WIND@), vec4(@GUSTS@)), 1.0);
}
"""
HLSL_MAIN = """
struct Out { float4 position : SV_Position; float4 result : TEXCOORD0; };
Out main(float2 pixel : TEXCOORD0, float3 rest_pos : TEXCOORD1) {
    Out o;
    o.position = float4(pixel, 0.0, 1.0);
    float4x4 object_to_world = float4x4(@MATRIX@);
    float3 off;
    CALL
    o.result = float4(off, 1.0);
    return o;
}
"""
CALLS = {
    "UNREAL": "off = envfx_wind_rigid_offset(rest_pos, object_to_world, @FRAME@, float4(@WIND@), float4(@GUSTS@));",
    "UNITY": "EnvFXWindRigid_float(rest_pos, object_to_world, @FRAME@, float4(@WIND@), float4(@GUSTS@), off);",
}


def _vec(values):
    return ", ".join(repr(float(v)) for v in np.asarray(values, np.float64).reshape(-1))


def _euler(x, y, order):
    """Blender's Euler matrix of (x, y, 0) in ``order`` (the Z turn is none)."""
    rx = np.array([[1, 0, 0], [0, math.cos(x), -math.sin(x)], [0, math.sin(x), math.cos(x)]])
    ry = np.array([[math.cos(y), 0, math.sin(y)], [0, 1, 0], [-math.sin(y), 0, math.cos(y)]])
    return rx @ ry if order in wre.Y_FIRST_ORDERS else ry @ rx


def want_offsets(points, m, frame, scene, asset, order):
    """Object-space offsets (Blender axes) of ``points`` of a prop with world matrix ``m``, turned about its origin
    by the twin's world sway."""
    prop = rigid.RigidProp(origin=tuple(m[:2, 3]))
    sx, sy = rigid.world_sway(frame, scene, asset, prop)
    r = points @ m[:3, :3].T
    moved = r @ _euler(sx, sy, order).T - r
    return moved @ np.linalg.inv(m[:3, :3]).T


def run_shader(gpu, tmp_path, engine, include, points_e, matrix_e, frame, uniforms):
    subst = {"MATRIX": _vec(matrix_e.T if engine == "GODOT" else matrix_e), "FRAME": repr(float(frame)),
             "WIND": _vec(uniforms["wind"]), "GUSTS": _vec(uniforms["gusts"])}
    main = GLSL_MAIN if engine == "GODOT" else HLSL_MAIN.replace("CALL", CALLS[engine])
    for key, value in subst.items():
        main = main.replace(f"@{key}@", value)
    src = ("#version 450\n" + include if engine == "GODOT" else include) + main
    vert = engine_gpu.spirv(src, "vert", engine != "GODOT", tmp_path)
    frag = engine_gpu.spirv(engine_gpu.GLSL_FRAG if engine == "GODOT" else engine_gpu.HLSL_FRAG, "frag",
                            engine != "GODOT", tmp_path)
    return gpu.run(vert, frag, [points_e])[:, :3]


@pytest.fixture(scope="module")
def gpu():
    return engine_gpu.Gpu()


def prop_points(seed, n=2000):
    rng = np.random.default_rng(seed)
    p = rng.uniform(-0.4, 0.4, (n, 3))
    p[:, 2] = rng.uniform(0.0, 1.5, n)  # a bush 1.5 tall standing on its origin
    return p


def y_up_matrix(seed):
    """A prop imported Y up with an unapplied centimetre scale, turned about Z and placed away from the origin."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 2 * math.pi)
    turn = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    stand = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])  # +90 degrees about X: the file's Y is up
    m = np.eye(4)
    m[:3, :3] = turn @ stand * 0.01
    m[:3, 3] = rng.uniform(-30, 30, 3)
    return m


CASES = [  # engine, category, Euler order, loop frames, unit scale
    ("GODOT", "TREE", "XYZ", 0, 1.0), ("GODOT", "PLANT", "ZYX", 96, 1.0),
    ("UNITY", "PLANT", "XYZ", 48, 1.0), ("UNITY", "SPECIAL", "YXZ", 0, 2.0),
    ("UNREAL", "GRASS", "XZY", 72, 1.0), ("UNREAL", "TREE", "ZYX", 0, 0.01),
]


@pytest.mark.parametrize("engine,category,order,loop,unit_scale", CASES)
def test_the_rigid_include_turns_every_point_as_the_twin_on_a_gpu_driver(gpu, tmp_path, engine, category, order,
                                                                         loop, unit_scale):
    seed = CASES.index((engine, category, order, loop, unit_scale))
    points = prop_points(seed) / 0.01  # in the file's centimetres
    m = y_up_matrix(seed)
    asset = core_live.AssetWind(category=category, rigidity=1.3, bend=1.2, sway=0.9, ramp=1.0 if seed % 2 else 0.0,
                                main_bend=seed != 3)
    scene = core_live.SceneWind(direction=(0.6, -0.8, 0.3), strength=3.0, gust_strength=0.7, gust_frequency=0.23,
                                loop_frames=loop, fps=24.0)
    a, k = we.axes(engine, unit_scale)
    include = wre.shader_source(engine, asset, order, unit_scale)
    uniforms = we.scene_uniforms(scene, engine, unit_scale)
    matrix_e = we.engine_matrix_world(m, engine, unit_scale)
    size = k * 1.5
    worst, moved = 0.0, 0.0
    for frame in (1, 7, 30.5, 113, 250):
        want = k * want_offsets(points, m, frame, scene, asset, order) @ a.T
        got = run_shader(gpu, tmp_path, engine, include, k * points @ a.T, matrix_e, frame, uniforms)
        # in world units, as a game sees the motion
        m3e = matrix_e[:3, :3]
        worst = max(worst, float(np.abs((got - want) @ m3e.T).max()))
        moved = max(moved, float(np.abs(want @ m3e.T).max()))
    assert moved > 0.02 * size, (moved, size)
    assert worst <= 1e-4 * size, (worst, size)


def test_the_gpu_rigid_check_can_fail(gpu, tmp_path):
    """An include turning the lean the wrong way round the wind is caught."""
    points = prop_points(9, 500)
    m = y_up_matrix(9)
    m[:3, :3] /= 0.01
    asset = core_live.AssetWind(category="PLANT")
    scene = core_live.SceneWind(direction=(1.0, 0.0, 0.0), strength=3.0)
    include = wre.shader_source("GODOT", asset)
    wrong = include.replace("float sx = -d.y * along - d.x * across;", "float sx = d.y * along - d.x * across;")
    wrong = wrong.replace("float sy = d.x * along - d.y * across;", "float sy = -d.x * along - d.y * across;")
    assert wrong.count("along") == include.count("along") and wrong != include
    want = want_offsets(points, m, 20, scene, asset, "XYZ") @ we.axes("GODOT")[0].T
    got = run_shader(gpu, tmp_path, "GODOT", wrong, points @ we.axes("GODOT")[0].T,
                     we.engine_matrix_world(m, "GODOT"), 20, we.scene_uniforms(scene, "GODOT"))
    assert np.abs(got - want).max() > 0.01


def test_the_twin_sway_is_blenders_delta_rotation():
    """The world turn the include applies is the Euler rotation Blender builds from the drivers' X and Y (Z 0)."""
    scene = core_live.SceneWind(direction=(0.3, 0.9, 0.0), strength=2.0)
    asset = core_live.AssetWind(category="TREE")
    prop = rigid.RigidProp(origin=(4.0, -2.0))
    x, y, z = rigid.rigid_euler(33, scene, asset, prop)
    assert (x, y) == pytest.approx(rigid.world_sway(33, scene, asset, prop), abs=1e-15) and z == 0.0
    # XYZ's matrix Rz Ry Rx is Ry Rx with no Z turn; ZYX's Rx Ry Rz is Rx Ry
    assert np.allclose(_euler(x, y, "XYZ"), _euler(0, y, "XYZ") @ _euler(x, 0, "XYZ"))
    assert np.allclose(_euler(x, y, "ZYX"), _euler(x, 0, "XYZ") @ _euler(0, y, "XYZ"))
