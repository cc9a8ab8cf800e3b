"""The engines' shader code is checked by running it: each generated function is turned into numpy line by
line and must bend the engine's points exactly where ``core.bend`` bends Blender's."""

import json
import re

import numpy as np
import pytest

from core import bend as core_bend
from core import bend_engines as be


def _run_shader(text):
    """The generated GLSL/HLSL as a Python function (the few constructs it uses, on (N, 3) arrays)."""
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
        head = re.match(r"(?:float3|vec3) envfx_bend\((?:float3|vec3) (\w+), (?:float3|vec3) (\w+)\) \{$", code)
        if head:
            py.append(f"def envfx_bend({head.group(1)}, {head.group(2)}):")
            continue
        body = re.match(r"    (?:(?:float3|vec3|float) )?(.*);$", code)
        assert body, f"unexpected shader line: {line!r}"
        py.append("    " + body.group(1))
    scope = {
        "np": np, "abs": np.abs, "max": np.maximum,
        "dot": lambda a, b: np.sum(np.asarray(a) * np.asarray(b), axis=-1, keepdims=True),
        "length": lambda v: np.linalg.norm(v, axis=-1, keepdims=True),
    }
    exec("\n".join(py), scope)
    return scope["envfx_bend"]


@pytest.mark.parametrize("engine", list(be.ENGINES))
@pytest.mark.parametrize("mode", core_bend.MODES)
def test_shader_bends_like_core(engine, mode):
    rng = np.random.default_rng(hash((engine, mode)) % 2**32)
    for trial in range(6):
        params = core_bend.BendParams(
            mode=mode, axis=core_bend.AXES[trial % 4], pivot=tuple(rng.uniform(-20, 20, 3)),
            horizon_offset=float(rng.uniform(-5, 5)), strength=float(rng.choice([-1, 1]) * rng.uniform(0.001, 0.2)),
            spread=float(rng.uniform(0, 6)), side_strength=float(rng.uniform(-0.1, 0.1)),
            side_spread=float(rng.uniform(0, 4)), enabled=trial != 5)
        bend = _run_shader(be.shader_source(params, engine))
        points = rng.uniform(-40, 40, (500, 3))
        expected = be.to_engine(core_bend.forward(points, params), engine)
        got = bend(be.to_engine(points, engine), be.to_engine([params.pivot], engine)[0])
        scale = be.ENGINES[engine][1]
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-6 * scale * 40)
        if params.enabled and params.strength != 0:
            assert np.abs(got - be.to_engine(points, engine)).max() > 1e-3  # it bends


def test_axes_keep_lengths_and_up():
    for engine, (matrix, scale, *_rest) in be.ENGINES.items():
        m = np.asarray(matrix, dtype=float)
        np.testing.assert_allclose(m @ m.T, np.eye(3))
        up = be.to_engine([[0.0, 0.0, 1.0]], engine)[0] / scale
        assert up.tolist() == ([0.0, 0.0, 1.0] if engine == "UNREAL" else [0.0, 1.0, 0.0])


def test_literals_are_floats_and_unity_has_a_custom_function():
    params = core_bend.BendParams(strength=1e-5, spread=2.0, horizon_offset=0.0)
    text = be.shader_source(params, "UNITY", source="demo.blend\nscene")
    assert "ENVFX_BEND_SPREAD = 2.0;" in text and "ENVFX_BEND_STRENGTH = 1e-05;" in text
    wrapper = ("void EnvFXBend_float(float3 WorldPos, float3 Pivot, out float3 Out) {\n"
               "    Out = envfx_bend(WorldPos, Pivot);")
    assert wrapper in text
    assert "demo.blend scene" in text.splitlines()[0]                 # a source name cannot break the comment
    assert "vec3" in be.shader_source(params, "GODOT") and "vec3" not in be.shader_source(params, "UNREAL")


def test_export_files_and_json(tmp_path):
    params = core_bend.BendParams(mode="PLANET", pivot=(1.0, 2.0, 0.5), strength=0.02, spread=3.0)
    paths = be.export_files(params, str(tmp_path / "out"), source="level.blend")
    names = sorted(p.split("/")[-1] for p in paths)
    assert names == sorted([spec[3] for spec in be.ENGINES.values()] + [be.JSON_NAME])
    meta = json.loads((tmp_path / "out" / be.JSON_NAME).read_text())
    assert meta["blender"]["mode"] == "PLANET" and meta["source"] == "level.blend"
    assert meta["engines"]["UNREAL"]["pivot"] == pytest.approx([100.0, -200.0, 50.0])
    assert meta["engines"]["UNREAL"]["strength"] == pytest.approx(0.0002)
    assert meta["engines"]["GODOT"]["pivot"] == pytest.approx([1.0, 0.5, -2.0])
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_export_bad_input_writes_nothing(tmp_path):
    with pytest.raises(core_bend.BendError, match="cannot be negative"):
        be.export_files(core_bend.BendParams(spread=-1.0), str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()
    with pytest.raises(core_bend.BendError, match="Unknown engine"):
        be.engine_constants(core_bend.BendParams(), "CRYENGINE")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError):
        be.export_files(core_bend.BendParams(), str(blocker / "sub"))


def test_export_never_writes_a_number_a_shader_float_cannot_hold(tmp_path, monkeypatch):
    """Blender clamps an infinite spread to 3.4e38; in Unreal's centimetres that is 3.4e40, past float32. The
    settings check refuses it, and the export checks its own numbers too (here with that check lifted)."""
    with pytest.raises(core_bend.BendError, match="enormous"):
        be.export_files(core_bend.BendParams(spread=3.4e38), str(tmp_path / "a"))
    with pytest.raises(core_bend.BendError, match="pivot .* more than a shader's float holds"):
        be.export_files(core_bend.BendParams(pivot=(0.0, 1e37, 0.0)), str(tmp_path / "a"))
    monkeypatch.setattr(core_bend, "MAX_DISTANCE", float("inf"))
    for kw in (dict(spread=3.4e38), dict(horizon_offset=-3.4e38), dict(side_spread=3.4e38)):
        with pytest.raises(core_bend.BendError, match="in UNREAL's units, more than a shader's float holds"):
            be.export_files(core_bend.BendParams(**kw), str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()
    be.export_files(core_bend.BendParams(spread=1e6, horizon_offset=-1e6), str(tmp_path / "b"))
    for path in (tmp_path / "b").iterdir():
        assert "inf" not in path.read_text().lower()
