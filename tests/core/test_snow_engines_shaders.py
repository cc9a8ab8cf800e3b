"""The snow's engine shader code (core.snow_engines) compiles with glslang (Godot's include as GLSL, Unity's and
Unreal's as HLSL) and, run on Mesa's llvmpipe over thousands of snow vertices and several frames of a real bake
(two actors, a window that follows a pivot), displaces every vertex as Blender's preview of the bake does (R
bilinear at the vertex, floored above the ground), in each engine's axes and units, and snaps the follow window
to the texels the bake used."""

import importlib.util
import json
import os

import numpy as np
import pytest

from core import bend_engines
from core import snow as core_snow
from core import snow_engines as se

_spec = importlib.util.spec_from_file_location("engine_gpu", os.path.join(os.path.dirname(__file__), "engine_gpu.py"))
assert _spec is not None and _spec.loader is not None
engine_gpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_gpu)

GLSL_MAIN = """
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec3 position;
layout(location = 2) in float thickness;
layout(location = 3) in vec3 pivot;
layout(location = 0) out vec4 result;
layout(binding = 0) uniform sampler2D snow_tex;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    vec2 uv_offset = vec2(UV_OFFSET);
    result = vec4(WHAT, 1.0);
}
"""
HLSL_MAIN = """
Texture2D snow_tex : register(t0);
struct Out { float4 position : SV_Position; float4 result : TEXCOORD0; };
Out main(float2 pixel : TEXCOORD0, float3 position : TEXCOORD1, float thickness : TEXCOORD2,
         float3 pivot : TEXCOORD3) {
    Out o;
    o.position = float4(pixel, 0.0, 1.0);
    float2 uv_offset = float2(UV_OFFSET);
    float3 offset = float3(0.0, 0.0, 0.0);
    float2 follow = float2(0.0, 0.0);
    CALL
    o.result = float4(WHAT, 1.0);
    return o;
}
"""
WHAT = {  # (GLSL / Unreal expression, Unity Custom Function call and expression)
    "offset": ("envfx_snow_offset(position, thickness, uv_offset, snow_tex)",
               "EnvFXSnow_float(position, thickness, uv_offset, snow_tex, offset);", "offset"),
    "follow": ("vec3(envfx_snow_follow_offset(pivot), 0.0)", "EnvFXSnowFollow_float(pivot, follow);",
               "float3(follow, 0.0)"),
}
UNITY_TYPES = "#define UnityTexture2D Texture2D\n#define ENVFX_SNOW_TEXTURE(t) t\n"


def program(engine, include, what, uv_offset, tmp_path):
    expr, unity_call, unity_expr = WHAT[what]
    offset = ", ".join(repr(float(v)) for v in uv_offset)
    if engine == "GODOT":
        src = "#version 450\n" + include + GLSL_MAIN.replace("WHAT", expr).replace("UV_OFFSET", offset)
        return engine_gpu.spirv(src, "vert", False, tmp_path)
    if engine == "UNITY":
        body = HLSL_MAIN.replace("CALL", unity_call).replace("WHAT", unity_expr)
        src = UNITY_TYPES + include + body
    else:
        src = include + HLSL_MAIN.replace("CALL", "").replace("WHAT", expr.replace("vec3(", "float3("))
    return engine_gpu.spirv(src.replace("UV_OFFSET", offset), "vert", True, tmp_path)


@pytest.fixture(scope="module")
def gpu():
    return engine_gpu.Gpu()


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    """A real bake: two actors crossing a window of 8 x 8 units (64 texels) that follows a pivot, 6 frames, with
    refill, as a sequence of EXRs and its JSON."""
    out = tmp_path_factory.mktemp("snow_bake")
    frames = 6
    t = np.linspace(0.0, 1.0, frames)[:, None]
    tracks = np.stack([np.hstack([-3 + 6 * t, -1 + 0 * t, 0.05 + 0 * t]),
                       np.hstack([1 + 0 * t, 3 - 5 * t, 0.1 + 0 * t])], axis=1)
    pivot = np.hstack([-0.37 + 1.13 * t, 0.21 + 0.71 * t, 0 * t])
    buf = core_snow.BufferParams(resolution=64, size=8.0, framing="FOLLOW", edge_fade=0.1)
    stamp = core_snow.StampParams(refill_rate=0.5, fps=24.0)
    core_snow.bake(tracks, np.array([0.8, 0.6]), np.array([0.3, 0.25]), stamp, buf, frame_start=3,
                   pivot_track=pivot, out_dir=str(out), sequence=True, unit_scale=0.5)
    meta = json.loads((out / "snow_buffer.json").read_text())
    images = [core_snow.read_exr(str(out / f["file"])) for f in meta["frames"]]
    return meta, images, pivot, buf


@pytest.mark.parametrize("engine", se.ENGINES)
def test_the_snow_include_displaces_like_the_blender_preview_on_a_gpu_driver(gpu, tmp_path, baked, engine):
    """4,000 snow vertices (inside the window, on its faded edge and outside it), every baked frame: the GPU's
    displacement equals the preview's (core.snow.sample_buffer floored at -GROUND_KEEP x thickness) in the
    engine's axes and units to 1e-4 of the window's size; the numpy twin of the shader too; and it is not 0."""
    meta, images, pivot, buf = baked
    unit_scale = meta["unit_scale"]
    rng = np.random.default_rng(list(se.ENGINES).index(engine))
    n = 4000
    k = bend_engines.engine_scale(engine, unit_scale)
    include = se.shader_source(engine, buf.resolution, buf.size, unit_scale)
    c = se.engine_constants(buf.resolution, buf.size, engine, unit_scale)
    frag = engine_gpu.spirv(engine_gpu.GLSL_FRAG if engine == "GODOT" else engine_gpu.HLSL_FRAG, "frag",
                            engine != "GODOT", tmp_path)
    up = np.asarray(bend_engines.ENGINES[engine][0], np.float64)[:, 2]  # Blender's up in the engine's axes
    moved = 0.0
    for i, (entry, image) in enumerate(zip(meta["frames"], images)):
        origin = np.asarray(entry["origin"])
        pts = np.column_stack([origin + rng.uniform(-1.0, buf.size + 1.0, (n, 2)), rng.uniform(-0.5, 0.5, n)])
        # 0: no snow at the vertex (floored at the ground); -1: a mesh without snow_thickness (no floor)
        thick = rng.choice([-1.0, 0.0, 0.1, 0.5], n)
        want_b = se.preview_displacement(pts, np.where(thick >= 0, thick, 1e6), image, origin, meta["texel_size"])
        want = want_b[:, None] * k * up[None, :]
        pts_e = bend_engines.to_engine(pts, engine, unit_scale)
        uv_offset = entry["uv_offset"][engine]
        twin = se.displacement(pts_e, thick * k, se.engine_rows(image, engine), uv_offset, c)
        size = buf.size * k
        np.testing.assert_allclose(twin, want, rtol=0, atol=1e-9 * size)
        tex = gpu.texture(se.engine_rows(image, engine), "f4")
        got = gpu.run(program(engine, include, "offset", uv_offset, tmp_path), frag,
                      [pts_e, thick * k, np.zeros((n, 3))], [tex])[:, :3]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * size, err_msg=f"{engine} frame {i}")
        moved = max(moved, float(np.abs(want).max()))
        tex.release()
    assert moved > 0.1 * k  # the actors' trails are in it


@pytest.mark.parametrize("engine", se.ENGINES)
def test_the_follow_window_snaps_to_the_bakes_texels_on_a_gpu_driver(gpu, tmp_path, baked, engine):
    """envfx_snow_follow_offset(pivot) on the GPU gives each frame's uv_offset of the bake's JSON (the window
    snapped to whole texels around the pivot), for the bake's pivots and 1,000 others (against core.snow's
    snap_origin)."""
    meta, _images, pivot, buf = baked
    unit_scale = meta["unit_scale"]
    include = se.shader_source(engine, buf.resolution, buf.size, unit_scale)
    frag = engine_gpu.spirv(engine_gpu.GLSL_FRAG if engine == "GODOT" else engine_gpu.HLSL_FRAG, "frag",
                            engine != "GODOT", tmp_path)
    rng = np.random.default_rng(5)
    pivots = np.vstack([pivot, np.column_stack([rng.uniform(-50, 50, (1000, 2)), rng.uniform(-3, 3, 1000)])])
    want = np.array([core_snow.engine_uv_offset(engine, core_snow.snap_origin(p, buf.size, buf.texel), buf.size)
                     for p in pivots])
    want[:len(pivot)] = [f["uv_offset"][engine] for f in meta["frames"]]
    pivots_e = bend_engines.to_engine(pivots, engine, unit_scale)
    c = se.engine_constants(buf.resolution, buf.size, engine, unit_scale)
    np.testing.assert_allclose(se.follow_uv_offset(pivots_e, c), want, rtol=0, atol=1e-9)
    got = gpu.run(program(engine, include, "follow", (0.0, 0.0), tmp_path), frag,
                  [pivots_e, np.zeros(len(pivots)), pivots_e])[:, :2]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_the_gpu_snow_check_can_fail(gpu, tmp_path, baked):
    """The buffer uploaded in Unity's row order for Godot (V the wrong way up), or an include whose up is
    reversed, is caught."""
    meta, images, _pivot, buf = baked
    entry, image = meta["frames"][-1], images[-1]
    rng = np.random.default_rng(9)
    origin = np.asarray(entry["origin"])
    pts = np.column_stack([origin + rng.uniform(0, buf.size, (2000, 2)), np.zeros(2000)])
    want = se.preview_displacement(pts, None, image, origin, meta["texel_size"])
    up = np.asarray(bend_engines.ENGINES["GODOT"][0], np.float64)[:, 2]
    frag = engine_gpu.spirv(engine_gpu.GLSL_FRAG, "frag", False, tmp_path)
    include = se.shader_source("GODOT", buf.resolution, buf.size, meta["unit_scale"])
    pts_e = bend_engines.to_engine(pts, "GODOT", meta["unit_scale"])
    for wrong_rows, wrong_include in ((se.engine_rows(image, "UNITY"), include),
                                      (se.engine_rows(image, "GODOT"), include.replace(
                                          "ENVFX_SNOW_UP = vec3(0.0, 1.0", "ENVFX_SNOW_UP = vec3(0.0, -1.0"))):
        assert wrong_include.count("ENVFX_SNOW_UP = ") == 1
        tex = gpu.texture(wrong_rows, "f4")
        got = gpu.run(program("GODOT", wrong_include, "offset", entry["uv_offset"]["GODOT"], tmp_path), frag,
                      [pts_e, np.zeros(2000), np.zeros((2000, 3))], [tex])[:, :3]
        assert np.abs(got - want[:, None] * up[None, :]).max() > 0.01
        tex.release()


def test_export_files_write_every_include_and_the_numbers(tmp_path):
    paths = se.export_files(str(tmp_path / "engines"), 128, 16.0, "AREA", (-8.0, -8.0), unit_scale=0.01,
                            source="level.blend")
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted(list(se.INCLUDE.values()) + [se.JSON_NAME])
    meta = json.loads((tmp_path / "engines" / se.JSON_NAME).read_text())
    assert meta["engines"]["UNREAL"]["units_per_blender_unit"] == pytest.approx(1.0)  # 100 cm x 0.01 m
    assert meta["engines"]["GODOT"]["units_per_blender_unit"] == 1.0  # glTF ignores the unit scale
    assert meta["engines"]["UNITY"]["uv_offset"] == core_snow.engine_uv_offset("UNITY", (-8.0, -8.0), 16.0)
    assert not [n for n in os.listdir(tmp_path / "engines") if n.endswith(".tmp")]
