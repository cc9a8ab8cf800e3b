"""A VAT bake for an engine writes the engine's player (core.vat_engines) beside its textures, and the Godot files
run on the exported glTF proxy (Mesa's llvmpipe) play what the Blender preview (the proxy's VAT player) shows, in
Godot's axes, at every baked frame. Needs glslang, moderngl and PyOpenGL: tools/venv.sh installs them in both test
venvs, so this runs on 4.2 as on 5.0."""

import importlib
import importlib.util
import json
import os

import bpy
import numpy as np
import pytest

from tests.blender import api

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("envfx_test_vat_helpers", os.path.join(HERE, "test_vat.py"))
assert _spec is not None and _spec.loader is not None
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
armature_mesh, evaluated, read_glb = _helpers.armature_mesh, _helpers.evaluated, _helpers.read_glb


@pytest.fixture
def vat(envfx):
    class M:
        ops = importlib.import_module(envfx.__name__ + ".operators.vat")
        core = importlib.import_module(envfx.__name__ + ".core.vat")
        engines = importlib.import_module(envfx.__name__ + ".core.vat_engines")
        nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.vat")
        bridge = importlib.import_module(envfx.__name__ + ".bridge")
    return M


def gpu_helpers():
    spec = importlib.util.spec_from_file_location("engine_gpu", os.path.join(HERE, "..", "core", "engine_gpu.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("engine", ["GODOT", "UNITY", "UNREAL"])
def test_an_engine_bake_writes_its_player_and_its_numbers(vat, tmp_path, engine):
    obj = armature_mesh()
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path),
                              vat.ops.VatOptions(frame_start=1, frame_end=10, step=3, engine=engine,
                                                 encoding="PNG16", normals="PACKED"))
    meta = json.loads((tmp_path / "Arm_vat.json").read_text())
    shader = meta["engine_shader"]
    assert shader["include"] == vat.engines.INCLUDE[engine]
    assert (tmp_path / shader["include"]).read_text() == vat.engines.shader_source(engine)
    assert shader["parameters"] == vat.engines.shader_parameters(result.meta["Arm"])
    assert shader["parameters"]["layout"][3] == 65535.0 and shader["parameters"]["normals"][0] == 2.0
    assert set(meta["files"]) <= set(os.listdir(tmp_path))
    assert all(f in meta["files"] for f in shader["files"])
    if engine == "GODOT":
        material = (tmp_path / "Arm_vat.gdshader").read_text()
        assert '#include "envfx_vat.gdshaderinc"' in material
        assert "vec4(" + ", ".join(f"{v:.9g}" if "." in f"{v:.9g}" else f"{v:.9g}.0"
                                   for v in shader["parameters"]["frames"]) + ")" in material


@pytest.mark.parametrize("extra_uv_maps, godot_input", [((), "UV2"), (("Lightmap", "Detail"), "CUSTOM0.zw")])
def test_the_godot_material_reads_the_vat_uv_where_godots_import_puts_it(vat, tmp_path, extra_uv_maps,
                                                                         godot_input):
    """The proxy keeps the source's UV maps before EnvFX_VAT: Godot's glTF import puts TEXCOORD_0 and _1 in UV and
    UV2 and the others in pairs in CUSTOM0..2, and the material reads the VAT UV from there."""
    obj = armature_mesh()
    for name in extra_uv_maps:
        obj.data.uv_layers.new(name=name)
    vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), vat.ops.VatOptions(1, 4, engine="GODOT"))
    meta = json.loads((tmp_path / "Arm_vat.json").read_text())
    index = meta["uv"]["index"]
    assert index == 1 + len(extra_uv_maps)
    doc, accessor = read_glb(tmp_path / meta["mesh"])
    names = list(doc["meshes"][0]["primitives"][0]["attributes"])
    assert [k for k in names if k.startswith("TEXCOORD_")] == [f"TEXCOORD_{i}" for i in range(index + 1)], names
    material = (tmp_path / "Arm_vat.gdshader").read_text()
    assert f"vec2 vat_uv = {godot_input};" in material


def test_the_blender_bake_writes_no_engine_files(vat, tmp_path):
    obj = armature_mesh()
    vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), vat.ops.VatOptions(frame_start=1, frame_end=4))
    assert "engine_shader" not in json.loads((tmp_path / "Arm_vat.json").read_text())
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".gdshaderinc", ".hlsl", ".ush", ".gdshader"))]


GODOT_MAIN = """
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec3 position;
layout(location = 2) in vec2 vat_uv;
layout(location = 3) in float frame;
layout(location = 0) out vec4 result;
layout(binding = 0) uniform sampler2D positions;
layout(binding = 1) uniform sampler2D normal_texture;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    vec3 offset;
    vec3 normal;
    envfx_vat(vat_uv, frame, positions, normal_texture, vec4(FRAMES), vec4(LAYOUT), vec4(REMAP_MIN),
              vec4(REMAP_SPAN), vec4(NORMALS), offset, normal);
    result = vec4(position + offset, 1.0);
}
"""


def test_the_godot_player_on_the_exported_gltf_plays_the_blender_preview(vat, tmp_path):
    """The issue's acceptance for VAT: the generated include, compiled with glslang and run on llvmpipe over the
    glTF proxy's own vertices (POSITION and the VAT UV as Godot imports them) with the bake's textures and the
    JSON's numbers, puts every vertex where the Blender preview (the proxy's VAT player) draws it, in Godot's
    axes, at every baked frame and between them."""
    gpu_mod = gpu_helpers()
    obj = armature_mesh()
    scene = api.scene()
    out = tmp_path / "out"
    result = vat.ops.bake_vat(scene, [obj], str(out), vat.ops.VatOptions(frame_start=1, frame_end=10, step=3,
                                                                          engine="GODOT", encoding="EXR32"))
    meta = json.loads((out / "Arm_vat.json").read_text())
    params = meta["engine_shader"]["parameters"]
    include = (out / meta["engine_shader"]["include"]).read_text()
    doc, accessor = read_glb(out / meta["mesh"])
    prim = doc["meshes"][0]["primitives"][0]
    pos = accessor(prim["attributes"]["POSITION"]).astype(np.float64)
    uv = accessor(prim["attributes"][f"TEXCOORD_{meta['uv']['index']}"]).astype(np.float64)
    lay = meta["layout"]
    index = (np.floor(uv[:, 1] * lay["height"]) * lay["width"] + np.floor(uv[:, 0] * lay["width"])).astype(int)

    from core import exr  # the EXR as Godot loads it: float texels, the image's top row first

    pixels, names = exr.decode_exr((out / meta["textures"]["position"]["file"]).read_bytes())
    gpu = gpu_mod.Gpu()
    tex = gpu.texture(pixels[..., [names.index(c) for c in "RGB"]], "f4")
    source = GODOT_MAIN
    for key, name in (("FRAMES", "frames"), ("LAYOUT", "layout"), ("REMAP_MIN", "remap_min"),
                      ("REMAP_SPAN", "remap_span"), ("NORMALS", "normals")):
        source = source.replace(key, ", ".join(repr(float(v)) for v in params[name]))
    vert = gpu_mod.spirv("#version 450\n" + include + source, "vert", False, tmp_path)
    frag = gpu_mod.spirv(gpu_mod.GLSL_FRAG, "frag", False, tmp_path)
    proxy = bpy.data.objects["Arm_VAT"]
    size = float(np.ptp(pos, axis=0).max())
    worst = 0.0
    for frame in (1, 4, 5, 7, 10, 12):
        scene.frame_set(frame)
        preview = vat.core.to_engine(evaluated(vat, proxy)[0], "GODOT")[index]
        got = gpu.run(vert, frag, [pos, uv, np.full((len(pos), 1), float(frame))], [tex, tex])[:, :3]
        worst = max(worst, float(np.abs(got - preview).max()))
    assert worst <= 1e-4 * size, (worst, size)
    assert len(result.meta) == 1
