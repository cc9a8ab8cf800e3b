"""Export for Game Engines (snow): the operator, the panel's button and `snow --export-engines` write every engine's
include and envfx_snow.json for the scene's bake; run on Mesa's llvmpipe over the snow's own vertices, the Godot
include displaces them as the Blender preview of the bake (Snow from Bake) does. Running shaders needs glslang,
moderngl and PyOpenGL: tools/venv.sh installs them in both test venvs (Blender 5.0 and 4.2)."""

import importlib.util
import json
import os

import bpy
import numpy as np
import pytest

from tests.blender import api

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("envfx_test_snow_helpers", os.path.join(HERE, "test_snow.py"))
assert _spec is not None and _spec.loader is not None
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)

GODOT_MAIN = """
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec3 position;
layout(location = 2) in float thickness;
layout(location = 0) out vec4 result;
layout(binding = 0) uniform sampler2D snow_tex;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    result = vec4(envfx_snow_offset(position, thickness, vec2(UV_OFFSET), snow_tex), 1.0);
}
"""


def test_the_godot_include_displaces_the_snow_as_the_blender_preview_of_the_bake(envfx, tmp_path):
    scene, snow, rest, _live = _helpers.play_and_bake(envfx, tmp_path / "bake", linear=True, sequence=True)
    envfx.operators.snow.drive_from_bake(scene, [snow], str(tmp_path / "bake"))
    engines = tmp_path / "engines"
    paths = envfx.operators.snow.engines.export_engines(scene, str(engines))
    assert sorted(os.path.basename(p) for p in paths) == sorted(
        ["envfx_snow.gdshaderinc", "EnvFXSnow.hlsl", "EnvFXSnow.ush", "envfx_snow.json"])
    meta = json.loads((tmp_path / "bake" / "snow_buffer.json").read_text())
    numbers = json.loads((engines / "envfx_snow.json").read_text())
    assert numbers["resolution"] == meta["resolution"][0] and numbers["world_size"] == meta["world_size"]
    worst, moved = godot_against_preview(envfx, scene, snow, tmp_path / "bake", engines, meta["frames"][2::3],
                                         tmp_path)
    size = meta["world_size"]
    assert moved > 0.1
    assert worst <= 1e-4 * size, worst


def godot_against_preview(envfx, scene: bpy.types.Scene, snow: bpy.types.Object, bake, engines, frames: list,
                          tmp_path) -> tuple[float, float]:
    """The exported Godot include compiled with glslang and run on llvmpipe over the snow's own vertices at each
    of the bake's ``frames`` (entries of its JSON), against the Blender preview of the bake at that frame: (the
    largest difference, the largest preview displacement), in metres."""
    spec = importlib.util.spec_from_file_location("engine_gpu", os.path.join(HERE, "..", "core", "engine_gpu.py"))
    assert spec is not None and spec.loader is not None
    gpu_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_mod)
    gpu = gpu_mod.Gpu()
    core = envfx.core.snow
    se = importlib.import_module(envfx.__name__ + ".core.snow_engines")
    be = envfx.core.bend_engines
    include = (engines / "envfx_snow.gdshaderinc").read_text()
    frag = gpu_mod.spirv(gpu_mod.GLSL_FRAG, "frag", False, tmp_path)
    rest, _offset = _helpers.evaluated_offset(envfx, snow)
    world = rest @ np.asarray(snow.matrix_world)[:3, :3].T + np.asarray(snow.matrix_world)[:3, 3]
    thick = _helpers.thickness_of(snow)
    worst, moved = 0.0, 0.0
    for entry in frames:
        scene.frame_set(entry["frame"])
        _rest, preview = _helpers.evaluated_offset(envfx, snow)
        image = core.read_exr(str(bake / entry["file"]))
        tex = gpu.texture(se.engine_rows(image, "GODOT"), "f4")
        offset = ", ".join(repr(float(v)) for v in entry["uv_offset"]["GODOT"])
        vert = gpu_mod.spirv("#version 450\n" + include + GODOT_MAIN.replace("UV_OFFSET", offset), "vert", False,
                             tmp_path)
        got = gpu.run(vert, frag, [be.to_engine(world, "GODOT"), thick], [tex])[:, :3]
        tex.release()
        want = np.zeros_like(got)
        want[:, 1] = preview  # Godot's up is Blender's Z
        worst = max(worst, float(np.abs(got - want).max()))
        moved = max(moved, float(np.abs(preview).max()))
    return worst, moved


def test_the_operator_and_the_command_export_the_snow_for_engines(envfx, tmp_path, capsys):
    scene, snow, _actors = _helpers.snow_scene(envfx, spacing=0.25)
    s = scene.envfx.snow
    s.framing = "AREA"
    s.output_dir = str(tmp_path / "nothing baked")
    with pytest.raises(envfx.operators.snow.SnowInputError, match="bake the interaction buffer first"):
        envfx.operators.snow.engines.export_engines(scene, str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()
    s.framing = "FOLLOW"
    s.buffer_size, s.buffer_resolution = 12.0, 96
    assert api.ops.snow_export_engines(directory=str(tmp_path / "b")) == {"FINISHED"}
    numbers = json.loads((tmp_path / "b" / "envfx_snow.json").read_text())
    assert numbers["framing"] == "FOLLOW" and numbers["resolution"] == 96 and numbers["world_size"] == 12.0
    with pytest.raises(RuntimeError, match="No folder: choose the folder"):  # the operator's error report
        api.ops.snow_export_engines(directory="")
    path = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    before = os.path.getmtime(path)
    assert envfx.cli.main(["snow", path, "--export-engines", str(tmp_path / "c")]) == 0, capsys.readouterr()
    assert "wrote 4 files for game engines" in capsys.readouterr().out
    assert (tmp_path / "c" / "EnvFXSnow.ush").is_file() and os.path.getmtime(path) == before
