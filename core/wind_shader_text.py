"""Shader source text shared by the wind's engine includes (``core.wind_engines``, ``core.wind_rigid_engines``):
numbers as literals, the engine's axes, and the matrix helpers of each shading language."""

from __future__ import annotations

import numpy as np

from . import bend_engines


def num(value: float) -> str:
    """A float literal of ``value`` for GLSL and HLSL (9 significant digits, always with a point or exponent)."""
    text = f"{float(value):.9g}"
    return text if any(c in text for c in ".eEn") else text + ".0"


def axes(engine: str, unit_scale: float = 1.0) -> tuple:
    """(3x3 matrix Blender -> engine, engine units per Blender unit)."""
    return np.asarray(bend_engines.ENGINES[engine][0], np.float64), bend_engines.engine_scale(engine, unit_scale)


def axes_source(engine: str, a: np.ndarray) -> tuple:
    """Shader source helpers for the engine's language: ``vec(values)`` (a vector literal), ``A^T`` and ``A`` (the
    axes matrix ``a``, Blender -> engine) as matrix literals, and ``mul(m, v)`` (``m v``). GLSL matrices are
    column-major, ``mat3(c0, c1, c2)``; HLSL's ``float3x3(r0, r1, r2)`` row-major."""
    glsl = engine == "GODOT"
    v3 = "vec3" if glsl else "float3"

    def vec(values):
        return f"{v3}({', '.join(num(v) for v in values)})"

    if glsl:
        a_t = f"mat3({', '.join(vec(a[i]) for i in range(3))})"   # columns = rows of A -> A^T
        a_m = f"mat3({', '.join(vec(a[:, j]) for j in range(3))})"  # columns of A -> A

        def mul(m, v):
            return f"({m} * {v})"
    else:
        a_t = f"float3x3({', '.join(vec(a[:, j]) for j in range(3))})"  # rows = columns of A -> A^T
        a_m = f"float3x3({', '.join(vec(a[i]) for i in range(3))})"

        def mul(m, v):
            return f"mul({m}, {v})"
    return vec, a_t, a_m, mul


def quantize_source(name: str, v4: str) -> list[str]:
    """Lines of the shader function ``name(f, gusts)``: a frequency rounded to whole cycles per loop (at least one)
    when a loop is set (``gusts.z`` loop frames, ``gusts.w`` fps; ``core.wind.live.quantize``); ``v4`` the
    language's 4-vector type."""
    return [
        "// a frequency rounded to whole cycles per loop (at least one), when a loop is set",
        f"float {name}(float f, {v4} gusts) {{",
        "    if (gusts.z <= 0.0) {",
        "        return f;",
        "    }",
        "    float period = gusts.z / gusts.w;",
        "    return max(floor(f * period + 0.5), 1.0) / period;",
        "}",
    ]
