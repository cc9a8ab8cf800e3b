"""The engines' shader code is checked by running it: each generated function is turned into numpy line by
line and must bend the engine's points exactly where ``core.bend`` bends Blender's."""

import importlib.util
import json
import os
from typing import Any

import numpy as np
import pytest

from core import bend as core_bend
from core import bend_engines as be

_spec = importlib.util.spec_from_file_location("bend_shader_numpy", os.path.join(os.path.dirname(__file__),
                                                                                  "bend_shader_numpy.py"))
assert _spec is not None and _spec.loader is not None
_helper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helper)
_run_shader = _helper.run_shader
_shader_functions = _helper.shader_functions


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
    examples = [name for files in be.EXAMPLE_FILES.values() for name in files]
    assert names == sorted([spec[3] for spec in be.ENGINES.values()] + [be.JSON_NAME] + examples)
    assert set(examples) == {"envfx_bend_example.gdshader", "envfx_bend_pivot.gd", "EnvFXBendPivot.cs",
                             "EnvFXBend_ShaderGraph.md", "EnvFXBend_Unreal.md"}
    for name in examples:
        assert (tmp_path / "out" / name).read_text() == next(f[name] for f in be.EXAMPLE_FILES.values() if name in f)
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
    kws: tuple[dict[str, Any], ...] = (dict(spread=3.4e38), dict(horizon_offset=-3.4e38), dict(side_spread=3.4e38))
    for kw in kws:
        with pytest.raises(core_bend.BendError, match="in UNREAL's units, more than a shader's float holds"):
            be.export_files(core_bend.BendParams(**kw), str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()
    be.export_files(core_bend.BendParams(spread=1e6, horizon_offset=-1e6), str(tmp_path / "b"))
    for path in (tmp_path / "b").iterdir():
        assert "inf" not in path.read_text().lower()


# --- normals, tangents and culling ----------------------------------------------------------------------------

def engine_direction(vectors, engine):
    """Blender world directions in the engine's axes (no unit scale: directions have none)."""
    return np.asarray(vectors, dtype=np.float64) @ np.asarray(be.ENGINES[engine][0], dtype=np.float64).T


def unit_vectors(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("unit_scale", [0.01, 1.0])
@pytest.mark.parametrize("engine", list(be.ENGINES))
@pytest.mark.parametrize("mode", core_bend.MODES)
def test_shader_normals_and_tangents_equal_core(engine, mode, unit_scale):
    """envfx_bend_normal and envfx_bend_tangent, read line by line as numpy, turn the engine's image of a Blender
    normal (tangent) into the engine's image of core.bend.forward_normals (forward_tangents) of it."""
    rng = np.random.default_rng([core_bend.MODES.index(mode), list(be.ENGINES).index(engine), int(unit_scale * 100)])
    for trial in range(4):
        params = core_bend.BendParams(
            mode=mode, axis=core_bend.AXES[trial], pivot=tuple(rng.uniform(-20, 20, 3)),
            horizon_offset=float(rng.uniform(-5, 5)), strength=float(rng.choice([-1, 1]) * rng.uniform(0.001, 0.2)),
            spread=float(rng.choice([0.0, rng.uniform(0, 6)])), side_strength=float(rng.uniform(-0.1, 0.1)),
            side_spread=float(rng.uniform(0, 4)))
        fns = _shader_functions(be.shader_source(params, engine, unit_scale=unit_scale))
        points, vectors = rng.uniform(-40, 40, (500, 3)), unit_vectors(rng, 500)
        pos, pivot = be.to_engine(points, engine, unit_scale), be.to_engine([params.pivot], engine, unit_scale)[0]
        got = fns["envfx_bend_normal"](pos, engine_direction(vectors, engine), pivot)
        np.testing.assert_allclose(got, engine_direction(core_bend.forward_normals(points, vectors, params), engine),
                                   atol=1e-6)
        got = fns["envfx_bend_tangent"](pos, engine_direction(vectors, engine), pivot)
        np.testing.assert_allclose(got, engine_direction(core_bend.forward_tangents(points, vectors, params),
                                                         engine), atol=1e-6)
        # the slope is the same at the drawn (bent) position: a pixel shader's world position serves
        drawn = fns["envfx_bend"](pos, pivot)
        np.testing.assert_allclose(fns["envfx_bend_normal"](drawn, engine_direction(vectors, engine), pivot),
                                   fns["envfx_bend_normal"](pos, engine_direction(vectors, engine), pivot), atol=1e-9)
        assert np.abs(got - engine_direction(vectors, engine)).max() > 0.1  # it bends


def scene_objects(rng, n=6):
    """(name, flat points) of a few random objects spread over a level, a flat ground among them."""
    objects = [("Ground", np.column_stack([rng.uniform(-60, 60, (400, 2)), np.zeros(400)]))]
    for i in range(n):
        centre = rng.uniform(-50, 50, 3)
        objects.append((f"Rock {i}", centre + rng.normal(scale=rng.uniform(0.5, 4), size=(200, 3))))
    return objects


@pytest.mark.parametrize("mode", core_bend.MODES)
def test_exported_culling_bounds_hold_every_bent_vertex_within_the_view_distance(tmp_path, mode):
    """The issue's acceptance: for the exported view distance, each object's bent box in envfx_bend.json (per
    engine, in its axes and units) holds every vertex of the object bent around any pivot, the exported one and
    others over the level, that lies within the view distance of that pivot."""
    rng = np.random.default_rng([3, core_bend.MODES.index(mode)])
    for trial in range(3):
        params = core_bend.BendParams(
            mode=mode, axis=core_bend.AXES[trial], pivot=tuple(rng.uniform(-20, 20, 3)),
            horizon_offset=float(rng.uniform(-5, 5)), strength=float(rng.choice([-1, 1]) * rng.uniform(0.001, 0.05)),
            spread=float(rng.uniform(0, 6)), side_strength=float(rng.uniform(-0.05, 0.05)),
            side_spread=float(rng.uniform(0, 4)))
        view = float(rng.uniform(20, 90))
        unit_scale = float(rng.choice([0.01, 1.0]))
        objects = scene_objects(rng)
        be.export_files(params, str(tmp_path), unit_scale=unit_scale, view_distance=view,
                        objects=[(name, pts.min(axis=0), pts.max(axis=0)) for name, pts in objects])
        meta = json.loads((tmp_path / be.JSON_NAME).read_text())
        pivots = [np.asarray(params.pivot)] + list(rng.uniform(-60, 60, (15, 3)))
        for engine in be.ENGINES:
            cull = meta["engines"][engine]["culling"]
            assert cull["view_distance"] == pytest.approx(view * be.engine_scale(engine, unit_scale))
            rows = {row["name"]: row for row in cull["objects"]}
            assert sorted(rows) == sorted(name for name, _ in objects)
            for name, pts in objects:
                lo, hi = np.array(rows[name]["bent_min"]), np.array(rows[name]["bent_max"])
                tol = 1e-9 * max(1.0, np.abs(hi).max(), np.abs(lo).max())
                for pivot in pivots:
                    moved = core_bend.BendParams(**{**params.__dict__, "pivot": tuple(pivot)})
                    near = pts[np.linalg.norm(pts[:, :2] - pivot[:2], axis=1) <= view]
                    bent = be.to_engine(core_bend.forward(near, moved), engine, unit_scale)
                    assert np.all(bent >= lo - tol) and np.all(bent <= hi + tol), (engine, name, pivot)
                if engine == "UNITY":
                    np.testing.assert_allclose(rows[name]["bounds_center"], (lo + hi) / 2)
                    np.testing.assert_allclose(rows[name]["bounds_size"], hi - lo)
        # the margins are needed, not just big: the exported pivot's bend leaves some flat box
        flat = {name: (pts.min(axis=0), pts.max(axis=0)) for name, pts in objects}
        bent = {name: core_bend.forward(pts, params) for name, pts in objects}
        assert any(np.any(bent[n][:, 2] < flat[n][0][2] - 1e-6) or np.any(bent[n][:, 2] > flat[n][1][2] + 1e-6)
                   for n in flat)


def test_culling_numbers_per_engine(tmp_path):
    """A runner bend, strength 0.01, spread 2, offset 3, view distance 100 m: margin 0.01 * 101^2 = 102.01 m
    below, nothing above; Godot's extra_cull_margin and Unreal's Max WPO Displacement (cm) carry it; a flat ground
    has no Unreal Bounds Scale (its zero height does not scale), a box 2 m high needs 1 + 102.01 / 1."""
    params = core_bend.BendParams(mode="RUNNER", strength=0.01, spread=2.0, horizon_offset=3.0)
    be.export_files(params, str(tmp_path), view_distance=100.0,
                    objects=[("Ground", (-50, -50, 0), (50, 50, 0)), ("Box", (0, 0, 0), (2, 2, 2))])
    meta = json.loads((tmp_path / be.JSON_NAME).read_text())
    assert meta["blender"]["culling"]["margin_down"] == pytest.approx(102.01)
    assert meta["blender"]["culling"]["margin_up"] == 0.0
    godot, unity, unreal = (meta["engines"][e]["culling"] for e in ("GODOT", "UNITY", "UNREAL"))
    assert godot["extra_cull_margin"] == pytest.approx(102.01)
    assert unreal["max_displacement"] == pytest.approx(10201.0)
    rows = {row["name"]: row for row in unreal["objects"]}
    assert rows["Ground"]["bounds_scale"] is None and rows["Box"]["bounds_scale"] == pytest.approx(103.01)
    box = {row["name"]: row for row in unity["objects"]}["Box"]
    assert box["bent_min"][1] == pytest.approx(-102.01) and box["bent_max"][1] == pytest.approx(2.0)  # Unity's up: Y
    for engine, text in ((e, (tmp_path / spec[3]).read_text()) for e, spec in be.ENGINES.items()):
        assert "envfx_bend_normal(" in text and "Culling:" in text, engine
    with pytest.raises(core_bend.BendError, match="View distance"):
        be.export_files(params, str(tmp_path / "no"), view_distance=-1.0)
    assert not (tmp_path / "no").exists()
