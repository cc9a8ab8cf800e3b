"""The generated GLSL/HLSL of core.bend_engines as a Python function, line by line (used by tests/core and
tests/blender)."""

import re

import numpy as np


def run_shader(text):
    """The generated GLSL/HLSL's ``envfx_bend`` as a Python function (the few constructs it uses, on (N, 3)
    arrays)."""
    return shader_functions(text)["envfx_bend"]


def shader_functions(text):
    """Every function of the generated GLSL/HLSL include (``envfx_bend``, ``envfx_bend_slope``,
    ``envfx_bend_normal``, ``envfx_bend_tangent``) as Python functions by name."""
    py = []
    for line in text.splitlines():
        code = line.split("//")[0].rstrip()
        if code.startswith("void EnvFXBend_float"):  # Unity's Custom Function wrapper: checked on its own
            break
        if not code or code == "}" or code.startswith("#"):  # the include guard
            continue
        const = re.match(r"(?:static )?const (?:float3|vec3|float) (\w+) = (.*);$", code)
        if const:
            value = re.sub(r"(?:float3|vec3)\((.*)\)", r"np.array([\1])", const.group(2))
            py.append(f"{const.group(1)} = {value}")
            continue
        head = re.match(r"(?:float3|vec3) (envfx_\w+)\(((?:(?:float3|vec3) \w+(?:, )?)+)\) \{$", code)
        if head:
            names = [arg.split()[-1] for arg in head.group(2).split(", ")]
            py.append(f"def {head.group(1)}({', '.join(names)}):")
            continue
        body = re.match(r"    (?:(?:float3|vec3|float) )?(.*);$", code)
        assert body, f"unexpected shader line: {line!r}"
        py.append("    " + body.group(1))
    scope = {
        "np": np, "abs": np.abs, "max": np.maximum,
        "dot": lambda a, b: np.sum(np.asarray(a) * np.asarray(b), axis=-1, keepdims=True),
        "length": lambda v: np.linalg.norm(v, axis=-1, keepdims=True),
        "normalize": lambda v: v / np.linalg.norm(v, axis=-1, keepdims=True),
        "sign": np.sign,
    }
    exec("\n".join(py), scope)
    return {name: fn for name, fn in scope.items() if name.startswith("envfx_")}
