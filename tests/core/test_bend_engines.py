"""The engines' shader code is checked by running it: each generated function is turned into numpy line by
line and must bend the engine's points exactly where ``core.bend`` bends Blender's."""

import importlib.util
import json
import os

import numpy as np
import pytest

from core import bend as core_bend
from core import bend_engines as be

_spec = importlib.util.spec_from_file_location("bend_shader_numpy", os.path.join(os.path.dirname(__file__),
                                                                                  "bend_shader_numpy.py"))
_helper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helper)
_run_shader = _helper.run_shader


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


# Where a Blender world point lands in each engine, written out here (not through be.to_engine): the FBX exporter
# scales by the unit scale s (metres per Blender unit), glTF does not; then the engine's axes and unit.
def engine_point(points, engine, s):
    x, y, z = np.asarray(points, dtype=np.float64).T
    return {"GODOT": np.stack([x, z, -y], axis=1),
            "UNITY": s * np.stack([-x, z, -y], axis=1),
            "UNREAL": 100.0 * s * np.stack([x, -y, z], axis=1)}[engine]


@pytest.mark.parametrize("unit_scale", [0.01, 0.3048, 1.0, 1000.0])
@pytest.mark.parametrize("engine", list(be.ENGINES))
@pytest.mark.parametrize("mode", core_bend.MODES)
def test_shader_bends_like_core_at_any_unit_scale(engine, mode, unit_scale):
    """At unit scale s the include bends the engine-space image of a Blender point to the engine-space image of
    core.bend.forward of it: FBX engines (Unity, Unreal) with s applied, Godot (glTF) without."""
    rng = np.random.default_rng([core_bend.MODES.index(mode), list(be.ENGINES).index(engine), int(unit_scale * 1e4)])
    for trial in range(4):
        params = core_bend.BendParams(
            mode=mode, axis=core_bend.AXES[trial], pivot=tuple(rng.uniform(-20, 20, 3)),
            horizon_offset=float(rng.uniform(-5, 5)), strength=float(rng.choice([-1, 1]) * rng.uniform(0.001, 0.2)),
            spread=float(rng.uniform(0, 6)), side_strength=float(rng.uniform(-0.1, 0.1)),
            side_spread=float(rng.uniform(0, 4)))
        bend = _run_shader(be.shader_source(params, engine, unit_scale=unit_scale))
        points = rng.uniform(-40, 40, (500, 3))
        want = engine_point(core_bend.forward(points, params), engine, unit_scale)
        got = bend(engine_point(points, engine, unit_scale), engine_point([params.pivot], engine, unit_scale)[0])
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-7 * np.abs(want).max())  # 8-digit constants
        assert np.abs(got - engine_point(points, engine, unit_scale)).max() > 1e-3 * np.abs(want).max() / 40
        np.testing.assert_allclose(be.to_engine(points, engine, unit_scale), engine_point(points, engine, unit_scale),
                                   rtol=1e-12)


def test_centimetre_scene_numbers_json_and_headers(tmp_path):
    """The review's case: scale_length 0.01, strength 0.01 and spread 2 per Blender unit. The FBX holds 1 cm per
    Blender unit, so Unreal's spread is 2 cm and Unity's 0.02 m; Godot's glTF keeps 1 m per Blender unit."""
    params = core_bend.BendParams(mode="RUNNER", strength=0.01, spread=2.0, horizon_offset=3.0)
    be.export_files(params, str(tmp_path), source="cm.blend", unit_scale=0.01)
    meta = json.loads((tmp_path / be.JSON_NAME).read_text())
    assert meta["blender"]["unit_scale"] == 0.01
    expect = {"GODOT": ("glTF", 1.0, 2.0, 0.01, 3.0), "UNITY": ("FBX", 0.01, 0.02, 1.0, 0.03),
              "UNREAL": ("FBX", 0.01, 2.0, 0.01, 3.0)}
    for engine, (export, metres, spread, strength, offset) in expect.items():
        got = meta["engines"][engine]
        assert (got["export_format"], got["metres_per_blender_unit"]) == (export, metres)
        assert (got["spread"], got["strength"], got["horizon_offset"]) == pytest.approx((spread, strength, offset))
        header = (tmp_path / got["file"]).read_text().split("#ifndef")[0]
        assert f"{export} export" in header and got["units"] in header
        assert f"ENVFX_BEND_SPREAD = {be._num(spread)};" in (tmp_path / got["file"]).read_text()
    assert "1 Blender unit = 1.0 cm" in meta["engines"]["UNREAL"]["units"]
    assert "ignores the scene's unit scale 0.01" in meta["engines"]["GODOT"]["units"]
    assert "a glTF export would not apply it" in meta["engines"]["UNITY"]["units"]
    assert "glTF" not in be.units_note("UNITY", 1.0)  # at unit scale 1 FBX and glTF agree: no warning


@pytest.mark.parametrize("bad", [0.0, -0.01, float("nan"), float("inf"), None, "cm"])
def test_bad_unit_scale_is_refused_and_writes_nothing(tmp_path, bad):
    with pytest.raises(core_bend.BendError, match="pass the scene's unit_settings.scale_length"):
        be.export_files(core_bend.BendParams(), str(tmp_path / "out"), unit_scale=bad)
    assert not (tmp_path / "out").exists()
    for call in (lambda: be.to_engine([[1.0, 2.0, 3.0]], "GODOT", bad),
                 lambda: be.engine_constants(core_bend.BendParams(), "UNREAL", bad)):
        with pytest.raises(core_bend.BendError, match="above 0"):
            call()


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
