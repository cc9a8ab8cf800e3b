"""Export for Game Engines (wind): the operator and `wind --export-engines` write each asset's includes, the
scene's wind in envfx_wind.json and the five UV maps the shaders read; a wind asset exported with Blender's glTF
and FBX exporters (Apply Modifiers off) carries those channels, and the engine include run on llvmpipe over the
exported data (the glb as Godot reads it; the FBX read back through Blender's FBX importer, in Unity's axes)
moves every vertex where the Blender preview (the live wind) draws it; a grass field blade by blade too (each
blade's gust and figure-eight at its root, the scene's camera tilting and fading it). Running shaders needs
glslang, moderngl and PyOpenGL: tools/venv.sh installs them in both test venvs, so this runs on 4.2 as on 5.0."""

import importlib
import importlib.util
import json
import math
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

# Godot's vertex() built-ins as its glTF import fills them (VERTEX, NORMAL, UV, UV2, CUSTOM0..2), into the call the
# include's comment gives
GODOT_MAIN = """
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec3 rest_pos;
layout(location = 2) in vec3 normal;
layout(location = 3) in vec2 uv_in;
layout(location = 4) in vec2 uv2_in;
layout(location = 5) in vec4 custom0_in;
layout(location = 6) in vec4 custom1_in;
layout(location = 7) in vec4 custom2_in;
layout(location = 0) out vec4 result;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    vec3 off = envfx_wind_offset_godot(rest_pos, normal, uv_in, uv2_in, custom0_in, custom1_in, custom2_in,
                                       mat4(@MATRIX@), @FRAME@, vec4(@WIND@), vec4(@GUSTS@), vec4(@GRASS@),
                                       vec3(@CAMERA_POS@), vec3(@CAMERA_Z@));
    result = vec4(off, 1.0);
}
"""
UNITY_MAIN = """
struct Out { float4 position : SV_Position; float4 result : TEXCOORD0; };
Out main(float2 pixel : TEXCOORD0, float3 rest_pos : TEXCOORD1, float3 normal : TEXCOORD2,
         float4 uv_a : TEXCOORD3, float4 uv_b : TEXCOORD4, float2 uv_c : TEXCOORD5) {
    Out o;
    o.position = float4(pixel, 0.0, 1.0);
    float3 off;
    EnvFXWind_float(rest_pos, normal, uv_a.xy, uv_a.zw, uv_b.xy, uv_b.zw, uv_c, float4x4(@MATRIX@), @FRAME@,
                    float4(@WIND@), float4(@GUSTS@), float4(@GRASS@), float3(@CAMERA_POS@), float3(@CAMERA_Z@),
                    off);
    o.result = float4(off, 1.0);
    return o;
}
"""


@pytest.fixture
def mods(envfx):
    class M:
        ops = importlib.import_module(envfx.__name__ + ".operators.wind_engines")
        core = importlib.import_module(envfx.__name__ + ".core.wind_engines")
        wind = envfx.operators.wind
        bridge = envfx.bridge
    return M


def plant(envfx, name="Plant", uv_maps=("UVMap",)):
    """A wind asset: an upright subdivided sheet with the UV maps ``uv_maps``, baked, in the live wind, rotated,
    scaled and moved."""
    scene = api.scene()
    api.envfx(scene).wind.ao_samples = 0
    api.envfx(scene).wind.strength = 2.0
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=12, y_subdivisions=12, size=2.0)
    obj = api.active()
    obj.name = name
    obj.rotation_euler = (1.4, 0, 0)
    bpy.ops.object.transform_apply(rotation=True)
    for layer in list(api.mesh(obj).uv_layers):
        api.mesh(obj).uv_layers.remove(layer)
    for uv_name in uv_maps:
        api.mesh(obj).uv_layers.new(name=uv_name)
    envfx.operators.wind.bake(scene, [obj])
    envfx.operators.wind.add_wind(scene, [obj])
    obj.location = (3.0, -2.0, 0.5)
    obj.rotation_euler = (0.0, 0.0, 0.7)
    obj.scale = (1.3, 1.3, 1.3)
    api.view_layer().update()
    return obj


def preview_offsets(mods, obj, frames):
    """{frame: (N, 3) object-space offsets of the live wind (the Blender preview)}."""
    scene = api.scene()
    rest = mods.bridge.get_positions(obj.data).astype(np.float64)
    out = {}
    for frame in frames:
        scene.frame_set(frame)
        dg = bpy.context.evaluated_depsgraph_get()
        ev = obj.evaluated_get(dg)
        mesh = ev.to_mesh()
        try:
            out[frame] = mods.bridge.get_positions(mesh).astype(np.float64) - rest
        finally:
            ev.to_mesh_clear()
    return rest, out


def gpu_helpers():
    spec = importlib.util.spec_from_file_location("engine_gpu", os.path.join(HERE, "..", "core", "engine_gpu.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def godot_import(prim, accessor, n):
    """The vertex inputs Godot 4's glTF import fills from a primitive's TEXCOORD_n (modules/gltf/gltf_document.cpp,
    GLTFDocument::_parse_meshes): TEXCOORD_0 -> UV, TEXCOORD_1 -> UV2, TEXCOORD_2k+2 and 2k+3 -> CUSTOMk.xy and .zw
    (k = 0..2, stopping at the first k with neither); a missing input reads zeros."""
    a = prim["attributes"]

    def get(i) -> np.ndarray | None:
        key = f"TEXCOORD_{i}"
        return accessor(a[key]).astype(np.float64) if key in a else None

    zero = np.zeros((n, 2))
    uv, uv2 = get(0), get(1)
    out: dict[str, np.ndarray] = {"UV": uv if uv is not None else zero, "UV2": uv2 if uv2 is not None else zero}
    for k in range(3):
        first, second = get(2 + 2 * k), get(3 + 2 * k)
        if first is None and second is None:
            break
        out[f"CUSTOM{k}"] = np.hstack([first if first is not None else zero, second if second is not None else zero])
    for k in range(3):
        out.setdefault(f"CUSTOM{k}", np.zeros((n, 4)))
    return out


def godot_input(inputs, where):
    """The (N, 2) values of a Godot input named as in the JSON ("UV", "UV2", "CUSTOM1.zw")."""
    name, _, part = where.partition(".")
    return inputs[name] if not part else inputs[name][:, {"xy": slice(0, 2), "zw": slice(2, 4)}[part]]


def run(gpu_mod, gpu, tmp_path, engine, include, main, attributes, matrix, frame, uniforms,
        camera=((0.0, 0.0, 0.0), (0.0, 1.0, 0.0))):
    """The include's offsets on llvmpipe; ``camera``: its world position and +Z axis in the engine's axes (the
    default: none a grass asset would see, only trees run without one)."""
    subst = {"MATRIX": ", ".join(repr(float(v)) for v in (matrix.T if engine == "GODOT" else matrix).reshape(-1)),
             "FRAME": repr(float(frame)), "CAMERA_POS": ", ".join(repr(float(v)) for v in camera[0]),
             "CAMERA_Z": ", ".join(repr(float(v)) for v in camera[1])}
    for key in ("wind", "gusts", "grass"):
        subst[key.upper()] = ", ".join(repr(float(v)) for v in uniforms[key])
    for key, value in subst.items():
        main = main.replace(f"@{key}@", value)
    hlsl = engine != "GODOT"
    vert = gpu_mod.spirv(("#version 450\n" if not hlsl else "") + include + main, "vert", hlsl, tmp_path)
    frag = gpu_mod.spirv(gpu_mod.HLSL_FRAG if hlsl else gpu_mod.GLSL_FRAG, "frag", hlsl, tmp_path)
    return gpu.run(vert, frag, attributes)[:, :3]


# the asset's own UV maps before the wind's (the bake's EnvFX_Height_UV, then the five of Export for Game Engines)
# decide where Godot's import puts the channels: none: UV2, CUSTOM0 and CUSTOM1; one: CUSTOM0.xy to CUSTOM2.xy;
# two: CUSTOM0.zw to CUSTOM2.zw
@pytest.mark.parametrize("uv_maps", [("UVMap",), (), ("UVMap", "Lightmap")])
def test_export_writes_the_channels_and_the_exported_gltf_and_fbx_play_the_preview(envfx, mods, tmp_path, uv_maps):
    obj = plant(envfx, uv_maps=uv_maps)
    scene = api.scene()
    active = api.of(bpy.types.MeshUVLoopLayer, api.mesh(obj).uv_layers.active).name
    paths, result = mods.ops.export_engines(scene, [obj], str(tmp_path / "engines"))
    assert result.changed == ["Plant"]
    names = sorted(os.path.basename(p) for p in paths)
    assert names == sorted(["envfx_wind_Plant.gdshaderinc", "EnvFXWind_Plant.hlsl", "EnvFXWind_Plant.ush",
                            "envfx_wind.json"])
    meta = json.loads((tmp_path / "engines" / "envfx_wind.json").read_text())
    assert meta["assets"]["Plant"]["category"] == api.envfx(obj).wind.category
    channels = [name for name, _ in mods.core.CHANNELS]
    uv_names = [uv.name for uv in api.mesh(obj).uv_layers]
    assert uv_names[:len(uv_maps)] == list(uv_maps) and uv_names[-5:] == channels  # appended after the others
    assert api.of(bpy.types.MeshUVLoopLayer, api.mesh(obj).uv_layers.active).name == active
    # the exporters, Apply Modifiers off
    for o in scene.objects:
        o.select_set(o == obj)
    api.view_layer().objects.active = obj
    glb, fbx = str(tmp_path / "plant.glb"), str(tmp_path / "plant.fbx")
    assert bpy.ops.export_scene.gltf(filepath=glb, export_format="GLB", use_selection=True, export_apply=False,
                                     export_animations=False, export_texcoords=True, export_normals=True) == \
        {"FINISHED"}
    assert bpy.ops.export_scene.fbx(filepath=fbx, use_selection=True, use_mesh_modifiers=False,
                                    bake_space_transform=True, axis_forward="-Z", axis_up="Y",
                                    object_types={"MESH"}, bake_anim=False) == {"FINISHED"}
    frames = (1, 9, 30)
    rest, preview = preview_offsets(mods, obj, frames)
    size = float(np.ptp(rest, axis=0).max())
    live_uvs = {name: np.asarray(uv, np.float64) for name, uv in mods.core.channel_uvs(
        envfx.core.wind.live_attributes(rest, mods.bridge.point_attribute(obj.data, "EnvFX_Height").reshape(-1),
                                        mods.bridge.point_attribute(obj.data, "EnvFX_Wind").reshape(-1, 4))).items()}

    # glTF as Godot reads it: POSITION and NORMAL in Godot's axes, TEXCOORD_n in the mesh's UV map order, V flipped
    doc, accessor = _helpers.read_glb(glb)
    prim = doc["meshes"][0]["primitives"][0]
    pos_g = accessor(prim["attributes"]["POSITION"]).astype(np.float64)
    a_g = np.asarray(envfx.core.bend_engines.ENGINES["GODOT"][0], np.float64)
    index = {tuple(np.round(p, 4)): i for i, p in enumerate(rest @ a_g.T)}
    vert = np.array([index[tuple(np.round(p, 4))] for p in pos_g])  # the glb's vertices are the mesh's, split
    # the accessor layout: every UV map as TEXCOORD_n in the mesh's order, with no gap (Godot's import stops at the
    # first missing pair); the JSON names the TEXCOORD and the Godot input of each channel, and the include reads
    # that input
    names = list(prim["attributes"])
    assert [k for k in names if k.startswith("TEXCOORD_")] == [f"TEXCOORD_{i}" for i in range(len(uv_names))], names
    godot = godot_import(prim, accessor, len(pos_g))
    include_g = (tmp_path / "engines" / meta["assets"]["Plant"]["files"]["GODOT"]).read_text()
    call = include_g[include_g.index("return envfx_wind_offset_uv(rest_pos, normal, ", include_g.index(
        "vec3 envfx_wind_offset_godot(")):].split("normal, ", 1)[1].split(",\n")[0].split(", ")
    for name, read in zip(channels, call):
        where = meta["assets"]["Plant"]["channels"][name]
        i = uv_names.index(name)
        assert where["gltf"] == f"TEXCOORD_{i}" and where["godot"] == mods.core.GODOT_INPUTS[i]
        assert read == where["godot"].lower(), (name, read, where)
        uv = accessor(prim["attributes"][where["gltf"]]).astype(np.float64)
        np.testing.assert_allclose(uv[:, 0], live_uvs[name][vert, 0], atol=1e-6)
        np.testing.assert_allclose(1.0 - uv[:, 1], live_uvs[name][vert, 1], atol=1e-6)  # glTF's V
        np.testing.assert_array_equal(godot_input(godot, where["godot"]), uv)

    # FBX read back by Blender's importer: the channels by name, per vertex (matched by world position)
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.fbx(filepath=fbx) == {"FINISHED"}
    imported = next(o for o in bpy.data.objects if o not in before and o.type == "MESH")
    imp_mesh = api.mesh(imported)
    world_imp = mods.bridge.get_positions(imp_mesh).astype(np.float64) @ np.asarray(imported.matrix_world)[:3, :3].T \
        + np.asarray(imported.matrix_world)[:3, 3]
    m = np.asarray(obj.matrix_world)
    world = rest @ m[:3, :3].T + m[:3, 3]
    index = {tuple(np.round(p, 3)): i for i, p in enumerate(world)}
    vert_f = np.array([index[tuple(np.round(p, 3))] for p in world_imp])
    loops = mods.bridge.corner_vertices(imp_mesh)
    uvs_f = []
    for name in channels:
        layer = imp_mesh.uv_layers.get(name)
        assert layer is not None, f"the FBX lost the UV map {name}"
        corner = np.empty(len(imp_mesh.loops) * 2, np.float32)
        layer.uv.foreach_get("vector", corner)
        per_vertex = np.zeros((len(imp_mesh.vertices), 2))
        per_vertex[loops] = corner.reshape(-1, 2)
        np.testing.assert_allclose(per_vertex, live_uvs[name][vert_f], atol=1e-6)
        uvs_f.append(per_vertex)
    scene.frame_set(1)

    gpu_mod = gpu_helpers()
    gpu = gpu_mod.Gpu()
    params = envfx.shader_nodes.wind.params_from_scene(scene)
    worst, want = 0.0, None
    for engine, main, attributes, verts in (
            ("GODOT", GODOT_MAIN, [pos_g, accessor(prim["attributes"]["NORMAL"])]
             + [godot[k] for k in ("UV", "UV2", "CUSTOM0", "CUSTOM1", "CUSTOM2")], vert),
            ("UNITY", UNITY_MAIN, [envfx.core.bend_engines.to_engine(rest[vert_f], "UNITY"),
                                   mods.bridge.vertex_normals(obj.data)[vert_f] @ np.asarray(
                                       envfx.core.bend_engines.ENGINES["UNITY"][0], np.float64).T,
                                   np.hstack(uvs_f[0:2]), np.hstack(uvs_f[2:4]), uvs_f[4]], vert_f)):
        include = (tmp_path / "engines" / meta["assets"]["Plant"]["files"][engine]).read_text()
        a, k = mods.core.axes(engine)
        matrix = mods.core.engine_matrix_world(m, engine)
        uniforms = mods.core.scene_uniforms(params, engine)
        for frame in frames:
            got = run(gpu_mod, gpu, tmp_path, engine, include, main, attributes, matrix, frame, uniforms)
            want = k * preview[frame][verts] @ a.T
            worst = max(worst, float(np.abs(got - want).max()))
        assert want is not None and np.abs(want).max() > 0.01 * size
    assert worst <= 1e-4 * size, (worst, size)


def test_export_refuses_what_it_cannot_export(envfx, mods, tmp_path):
    bpy.ops.mesh.primitive_cube_add()
    cube = api.active()
    with pytest.raises(mods.ops.WindEngineError, match="No wind asset to export .*no wind data: bake it first"):
        mods.ops.export_engines(api.scene(), [cube], str(tmp_path / "x"))
    with pytest.raises(mods.ops.WindEngineError, match="No folder"):
        mods.ops.export_engines(api.scene(), [cube], "")
    assert not (tmp_path / "x").exists()
    obj = plant(envfx)
    for i in range(8 - len(api.mesh(obj).uv_layers)):
        api.mesh(obj).uv_layers.new(name=f"extra{i}")
    with pytest.raises(mods.ops.WindEngineError, match="beyond Blender's 8"):
        mods.ops.export_engines(api.scene(), [obj], str(tmp_path / "y"))
    assert not (tmp_path / "y").exists()


def test_the_command_exports_the_baked_assets(envfx, tmp_path, capsys):
    plant(envfx)
    path = str(tmp_path / "plant.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    code = envfx.cli.main(["wind", path, "--objects", "Plant", "--ao-samples", "0",
                           "--export-engines", str(tmp_path / "out")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "wrote 4 files for game engines" in out.out
    assert (tmp_path / "out" / "EnvFXWind_Plant.ush").is_file()
    bpy.ops.wm.open_mainfile(filepath=path)
    assert api.mesh(bpy.data.objects["Plant"]).uv_layers.get("EnvFX_Wind_PivotZ") is not None  # saved with the file


def grass_field(envfx, name="Grass", blades=12, width=8.0):
    """A grass object: ``blades`` upright blades (subdivided strips) across a ``width`` m field, baked as Grass, in
    the live wind, rotated, scaled and moved."""
    scene = api.scene()
    api.envfx(scene).wind.ao_samples = 0
    api.envfx(scene).wind.strength = 1.5
    api.envfx(scene).wind.gust_strength = 0.9
    rng = np.random.default_rng(4)
    parts = []
    for _blade in range(blades):
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=2, y_subdivisions=8, size=1.0)
        blade = api.active()
        blade.scale = (0.06, 0.5, 1.0)
        blade.rotation_euler = (math.pi / 2, 0.0, rng.uniform(0.0, math.pi))
        x, y = rng.uniform(-width / 2, width / 2, 2)
        blade.location = (x, y, 0.25)
        parts.append(blade)
    bpy.ops.object.select_all(action="DESELECT")
    for blade in parts:
        blade.select_set(True)
    api.view_layer().objects.active = parts[0]
    bpy.ops.object.transform_apply(location=True, rotation=True, scale=True)
    bpy.ops.object.join()
    obj = api.active()
    obj.name = name
    for layer in list(api.mesh(obj).uv_layers):
        api.mesh(obj).uv_layers.remove(layer)
    api.envfx(obj).wind.category = "GRASS"
    envfx.operators.wind.bake(scene, [obj])
    envfx.operators.wind.add_wind(scene, [obj])
    obj.location = (2.0, -1.0, 0.3)
    obj.rotation_euler = (0.0, 0.0, 0.4)
    obj.scale = (1.2, 1.2, 1.2)
    api.view_layer().update()
    return obj


def _godot_glb(envfx, glb: str, rest: np.ndarray) -> tuple[np.ndarray, list]:
    """A glb's first primitive as Godot imports it: (the Blender vertex of each glTF vertex, found by its rest
    position in Godot's axes; the vertex inputs the Godot shader reads: positions, normals, UV, UV2, CUSTOM0-2)."""
    doc, accessor = _helpers.read_glb(glb)
    prim = doc["meshes"][0]["primitives"][0]
    pos_g = accessor(prim["attributes"]["POSITION"]).astype(np.float64)
    a_g = np.asarray(envfx.core.bend_engines.ENGINES["GODOT"][0], np.float64)
    index = {tuple(np.round(p, 4)): i for i, p in enumerate(rest @ a_g.T)}
    vert = np.array([index[tuple(np.round(p, 4))] for p in pos_g])
    godot = godot_import(prim, accessor, len(pos_g))
    return vert, [pos_g, accessor(prim["attributes"]["NORMAL"])] + [godot[key] for key in
                                                                    ("UV", "UV2", "CUSTOM0", "CUSTOM1", "CUSTOM2")]


def test_exported_grass_plays_the_preview_blade_by_blade(envfx, mods, tmp_path):
    """A grass field's blades each take the gust and the figure-eight at their own root (travelling waves): the
    Godot include run on the exported glb as Godot imports it, with the scene's camera looking down (tilt and fade),
    moves every vertex where the preview draws it; the blades' winds differ, and an include that takes them at the
    object's origin is caught."""
    obj = grass_field(envfx)
    scene = api.scene()
    cam_data = bpy.data.cameras.new("Cam")
    cam = bpy.data.objects.new("Cam", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (-6.0, -5.0, 5.0)
    cam.rotation_euler = (0.9, 0.0, -0.8)
    scene.camera = cam
    api.view_layer().update()
    paths, result = mods.ops.export_engines(scene, [obj], str(tmp_path / "engines"))
    assert result.changed == ["Grass"]
    meta = json.loads((tmp_path / "engines" / "envfx_wind.json").read_text())
    assert meta["assets"]["Grass"]["category"] == "GRASS"
    for o in scene.objects:
        o.select_set(o == obj)
    api.view_layer().objects.active = obj
    glb = str(tmp_path / "grass.glb")
    assert bpy.ops.export_scene.gltf(filepath=glb, export_format="GLB", use_selection=True, export_apply=False,
                                     export_animations=False, export_texcoords=True, export_normals=True) == \
        {"FINISHED"}
    frames = (1, 20, 47)
    rest, preview = preview_offsets(mods, obj, frames)
    m = np.asarray(obj.matrix_world)
    params = envfx.shader_nodes.wind.params_from_scene(scene)
    asset = envfx.shader_nodes.wind.asset_params(obj)
    assert asset.category == "GRASS"
    h = mods.bridge.point_attribute(obj.data, "EnvFX_Height").reshape(-1)
    live = envfx.core.wind.live_attributes(rest, h, mods.bridge.point_attribute(obj.data, "EnvFX_Wind").reshape(-1, 4))
    # the blades' effective winds at one frame differ (roots metres apart along the wind)
    roots = (rest - live[envfx.core.wind.LIVE_ATTRS[3]]) @ m[:3, :3].T + m[:3, 3]
    winds = [envfx.core.wind.effective_wind(envfx.core.wind.loop_time(f, params), roots, params, asset, travel=True)
             for f in frames]
    assert max(float(np.ptp(w)) for w in winds) > 0.2, [float(np.ptp(w)) for w in winds]

    vert, attributes = _godot_glb(envfx, glb, rest)
    gpu_mod = gpu_helpers()
    gpu = gpu_mod.Gpu()
    include = (tmp_path / "engines" / meta["assets"]["Grass"]["files"]["GODOT"]).read_text()
    per_object = include.replace("float blade = envfx_wind_effective(t, root, d, wind, gusts);",
                                 "float blade = envfx_wind_effective(t, origin, d, wind, gusts);").replace(
        "float tau = t - dot(root, d) / ENVFX_WIND_GUST_SPEED;", "float tau = t;")
    assert per_object != include
    a, k = mods.core.axes("GODOT")
    matrix = mods.core.engine_matrix_world(m, "GODOT")
    uniforms = mods.core.scene_uniforms(params, "GODOT")
    cm = np.asarray(cam.matrix_world)
    camera = (k * (a @ cm[:3, 3]), a @ cm[:3, 2])
    worst, caught, moved = 0.0, 0.0, 0.0
    for frame in frames:
        want = k * preview[frame][vert] @ a.T
        got = run(gpu_mod, gpu, tmp_path, "GODOT", include, GODOT_MAIN, attributes, matrix, frame, uniforms, camera)
        worst = max(worst, float(np.abs(got - want).max()))
        got = run(gpu_mod, gpu, tmp_path, "GODOT", per_object, GODOT_MAIN, attributes, matrix, frame, uniforms,
                  camera)
        caught = max(caught, float(np.abs(got - want).max()))
        moved = max(moved, float(np.abs(want).max()))
    blade_h = asset.asset_height * 1.2  # the grass asset's size in the world
    assert moved > 0.05 * blade_h, moved
    assert worst <= 1e-4 * blade_h, (worst, blade_h)
    assert caught > 1e-2 * blade_h, caught


CORPUS_TREE = "ez_aspen_small_single"  # the corpus's smallest tree: a trunk of unwelded tubes and quad leaf cards


def test_a_corpus_tree_exported_with_gltf_plays_the_preview_in_godot(envfx, mods, tmp_path, corpus_asset):
    """A real tree (OBJ, Y up, an unapplied centimetre scale, away from the origin; several objects) baked and in
    the live wind, exported for Godot and with Blender's glTF exporter (Apply Modifiers off): read back as Godot's
    import reads the glb, every mesh's vertices run through its Godot include on llvmpipe move where the Blender
    preview draws them, to 1e-4 of the tree's size, at several frames."""
    scene = api.scene()
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    api.envfx(scene).wind.ao_samples = 0
    api.envfx(scene).wind.strength = 2.0
    api.envfx(scene).wind.gust_strength = 0.7
    objects = corpus_asset(CORPUS_TREE)
    assert len(objects) >= 2 and all(abs(o.scale.x - 0.01) < 1e-9 for o in objects)
    envfx.operators.wind.bake(scene, objects)
    envfx.operators.wind.add_wind(scene, objects)
    api.view_layer().update()
    paths, result = mods.ops.export_engines(scene, objects, str(tmp_path / "engines"))
    assert sorted(result.changed) == sorted(o.name for o in objects)
    meta = json.loads((tmp_path / "engines" / "envfx_wind.json").read_text())
    bpy.ops.object.select_all(action="DESELECT")
    for o in objects:
        o.select_set(True)
    api.view_layer().objects.active = objects[0]
    glb = str(tmp_path / "tree.glb")
    assert bpy.ops.export_scene.gltf(filepath=glb, export_format="GLB", use_selection=True, export_apply=False,
                                     export_animations=False, export_texcoords=True, export_normals=True) == \
        {"FINISHED"}
    doc, accessor = _helpers.read_glb(glb)
    frames = (1, 14, 37)
    preview, rests = {}, {}
    for o in objects:
        rests[o.name], preview[o.name] = preview_offsets(mods, o, frames)
    # the tree's size in its objects' own units (centimetres: the scale is unapplied), which the offsets are in
    size = float(np.ptp(np.concatenate(list(rests.values())), axis=0).max())
    scene.frame_set(1)

    gpu_mod = gpu_helpers()
    gpu = gpu_mod.Gpu()
    params = envfx.shader_nodes.wind.params_from_scene(scene)
    uniforms = mods.core.scene_uniforms(params, "GODOT")
    a_g, k_g = mods.core.axes("GODOT")
    a_g = np.asarray(a_g, np.float64)
    channels = [name for name, _ in mods.core.CHANNELS]
    nodes = {node["name"]: node for node in doc["nodes"] if "mesh" in node}
    assert sorted(nodes) == sorted(o.name for o in objects), sorted(nodes)
    worst, moved, checked = 0.0, 0.0, 0
    for o in objects:
        rest = rests[o.name]
        live = mods.core.channel_uvs(envfx.core.wind.live_attributes(
            rest, mods.bridge.point_attribute(o.data, "EnvFX_Height").reshape(-1),
            mods.bridge.point_attribute(o.data, "EnvFX_Wind").reshape(-1, 4)))
        uv_names = [uv.name for uv in o.data.uv_layers]
        # a glb vertex is one of the mesh's (split at UV seams and sharp edges): found by its position and its wind
        # channels (the unwelded pieces of a tree put vertices of different branches at one place)
        keyed = np.hstack([rest @ a_g.T] + [np.asarray(live[name], np.float64) for name in channels])
        index = {tuple(np.round(row, 4)): i for i, row in enumerate(keyed)}
        include = (tmp_path / "engines" / meta["assets"][o.name]["files"]["GODOT"]).read_text()
        matrix = mods.core.engine_matrix_world(np.asarray(o.matrix_world), "GODOT")
        for prim in doc["meshes"][nodes[o.name]["mesh"]]["primitives"]:
            pos_g = accessor(prim["attributes"]["POSITION"]).astype(np.float64)
            uvs = [accessor(prim["attributes"][f"TEXCOORD_{uv_names.index(name)}"]).astype(np.float64)
                   for name in channels]
            keys = np.hstack([pos_g] + [np.stack([uv[:, 0], 1.0 - uv[:, 1]], axis=1) for uv in uvs])  # glTF's V
            vert = np.array([index[tuple(np.round(row, 4))] for row in keys])
            godot = godot_import(prim, accessor, len(pos_g))
            attributes = [pos_g, accessor(prim["attributes"]["NORMAL"])] + [
                godot[key] for key in ("UV", "UV2", "CUSTOM0", "CUSTOM1", "CUSTOM2")]
            for frame in frames:
                got = run(gpu_mod, gpu, tmp_path, "GODOT", include, GODOT_MAIN, attributes, matrix, frame, uniforms)
                want = k_g * preview[o.name][frame][vert] @ a_g.T
                worst = max(worst, float(np.abs(got - want).max()))
                moved = max(moved, float(np.abs(want).max()))
            checked += len(pos_g)
    assert checked > 1000
    assert moved > 0.01 * size, (moved, size)
    assert worst <= 1e-4 * size, (worst, size)


# --- grass that actors push (#23 part 4) -------------------------------------------------------------------------

_spec_push = importlib.util.spec_from_file_location("envfx_test_wind_push_helpers", os.path.join(HERE,
                                                                                                  "test_wind_push.py"))
assert _spec_push is not None and _spec_push.loader is not None
_push = importlib.util.module_from_spec(_spec_push)
_spec_push.loader.exec_module(_push)

GODOT_PUSH_MAIN = GODOT_MAIN.replace(
    "layout(location = 0) out vec4 result;",
    "layout(location = 0) out vec4 result;\nlayout(binding = 0) uniform sampler2D push_buffer;").replace(
    "envfx_wind_offset_godot(", "envfx_wind_offset_godot_push(").replace(
    "vec3(@CAMERA_Z@));", "vec3(@CAMERA_Z@), vec4(@PUSH_WINDOW@), vec4(@PUSH@), push_buffer);")


def test_exported_pushed_grass_plays_the_preview_with_the_bakes_frames(envfx, mods, tmp_path):
    """Grass in wind that a walker pushes (Push Grass on a baked sequence): Export for Game Engines writes the
    push's frames (each file of the bake, its window) and numbers into envfx_wind.json; the Godot include's push
    variant, run on the exported glb as Godot imports it with each frame's EXR (as the JSON names it) and uniforms,
    moves every vertex where the preview draws it (before the walker comes, while it crosses, after it has passed,
    after the bake's last frame), to 1e-4 of the blades' height; the push moves the blades by much more."""
    scene = api.scene()
    api.envfx(scene).wind.strength = 0.7
    obj = _push._field(blades=120, quads=3)
    mods.wind.add_wind(scene, [obj])
    _push._baked_buffer(envfx, tmp_path / "bake")
    assert "pushed by the baked buffer" in mods.wind.grass_push(scene)
    api.envfx(scene).wind.push_strength = 3.0
    _paths, result = mods.ops.export_engines(scene, [obj], str(tmp_path / "engines"))
    assert result.changed == ["Field"]
    meta = json.loads((tmp_path / "engines" / "envfx_wind.json").read_text())
    push = meta["push"]
    assert push["on"] and push["sequence"] and (push["first_frame"], push["last_frame"]) == (1, 100)
    assert push["strength"] == pytest.approx(3.0) and push["resolution"] == [96, 96] and len(push["frames"]) == 100
    assert meta["assets"]["Field"]["push_functions"]["GODOT"] == "envfx_wind_offset_godot_push"
    snow = importlib.import_module(envfx.__name__ + ".core.snow")
    snow_engines = importlib.import_module(envfx.__name__ + ".core.snow_engines")
    for o in scene.objects:
        o.select_set(o == obj)
    api.view_layer().objects.active = obj
    glb = str(tmp_path / "grass.glb")
    assert bpy.ops.export_scene.gltf(filepath=glb, export_format="GLB", use_selection=True, export_apply=False,
                                     export_animations=False, export_texcoords=True, export_normals=True) == \
        {"FINISHED"}
    frames = (0, 9, 13, 30, 120)
    rest, preview = preview_offsets(mods, obj, frames)
    vert, attributes = _godot_glb(envfx, glb, rest)
    gpu_mod = gpu_helpers()
    gpu = gpu_mod.Gpu()
    include = (tmp_path / "engines" / meta["assets"]["Field"]["files"]["GODOT"]).read_text()
    a, k = mods.core.axes("GODOT")
    matrix = mods.core.engine_matrix_world(np.asarray(obj.matrix_world), "GODOT")
    uniforms = meta["scene"]["GODOT"]
    assert scene.camera is not None  # (the start-up file's: it tilts and fades the grass)
    cm = np.asarray(scene.camera.matrix_world)
    camera = (k * (a @ cm[:3, 3]), a @ cm[:3, 2])
    by_frame = {f["frame"]: f for f in push["frames"]}
    worst, pushed = 0.0, 0.0
    for frame in frames:
        entry = by_frame[round(min(max(frame, push["first_frame"]), push["last_frame"]))]
        texture = gpu.texture(snow_engines.engine_rows(snow.read_exr(os.path.join(push["folder"], entry["file"])),
                                                       "GODOT"))
        main = GODOT_PUSH_MAIN
        for key, value in entry["uniforms"]["GODOT"].items():
            main = main.replace(f"@{key.upper()}@", ", ".join(repr(float(v)) for v in value))
        vert_src = gpu_mod.spirv("#version 450\n" + include + _subst(main, matrix, frame, uniforms, camera), "vert",
                                 False, tmp_path)
        frag = gpu_mod.spirv(gpu_mod.GLSL_FRAG, "frag", False, tmp_path)
        got = gpu.run(vert_src, frag, attributes, [texture])[:, :3]
        texture.release()
        want = k * preview[frame][vert] @ a.T
        worst = max(worst, float(np.abs(got - want).max()))
        plain = run(gpu_mod, gpu, tmp_path, "GODOT", include, GODOT_MAIN, attributes, matrix, frame, uniforms, camera)
        pushed = max(pushed, float(np.abs(want - plain).max()))
    height = float(np.ptp(rest[:, 2]))  # the blades' height (the field is neither scaled nor tilted)
    assert pushed > 0.1 * height, (pushed, height)
    assert worst <= 1e-4 * height, (worst, height)


def _subst(main, matrix, frame, uniforms, camera):
    subst = {"MATRIX": ", ".join(repr(float(v)) for v in matrix.T.reshape(-1)), "FRAME": repr(float(frame)),
             "CAMERA_POS": ", ".join(repr(float(v)) for v in camera[0]),
             "CAMERA_Z": ", ".join(repr(float(v)) for v in camera[1])}
    for key in ("wind", "gusts", "grass"):
        subst[key.upper()] = ", ".join(repr(float(v)) for v in uniforms[key])
    for key, value in subst.items():
        main = main.replace(f"@{key}@", value)
    return main


def test_export_with_push_on_refuses_a_bake_it_cannot_read(envfx, mods, tmp_path):
    """Push on, its sequence's snow_buffer.json gone: Export for Game Engines says so and what to do, and writes
    nothing (no engine files, no UV maps)."""
    scene = api.scene()
    obj = _push._field(blades=20)
    mods.wind.add_wind(scene, [obj])
    _push._baked_buffer(envfx, tmp_path / "bake")
    mods.wind.grass_push(scene)
    os.remove(tmp_path / "bake" / "snow_buffer.json")
    with pytest.raises(mods.ops.WindEngineError, match="Cannot read the grass push's bake .*snow_buffer.json.*bake "
                                                       "the interaction buffer again, or turn Grass Push off"):
        mods.ops.export_engines(scene, [obj], str(tmp_path / "engines"))
    assert not (tmp_path / "engines").exists()
    assert api.mesh(obj).uv_layers.get("EnvFX_Wind_BH") is None
