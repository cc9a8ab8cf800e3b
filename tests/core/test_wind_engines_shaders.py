"""The live wind's engine shader code (core.wind_engines) compiles with glslang (Godot's include as GLSL, Unity's
and Unreal's as HLSL) and, run on Mesa's llvmpipe over thousands of vertices of a tree and a grass clump and
several frames (with and without a loop, a rotated and scaled object, a camera looking down at the grass), gives
the offsets of core.wind.live.wind_offsets (the twin of the Blender preview) in each engine's axes and units, to
1e-4 of the asset's size; grass blade by blade (each blade's gust and figure-eight at its root)."""

import importlib.util
import math
import os
from typing import Any

import numpy as np
import pytest

from core import bend_engines
from core import wind_engines as we
from core.wind import live as core_live

_spec = importlib.util.spec_from_file_location("engine_gpu", os.path.join(os.path.dirname(__file__), "engine_gpu.py"))
assert _spec is not None and _spec.loader is not None
engine_gpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_gpu)

GLSL_MAIN = """
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec3 rest_pos;
layout(location = 2) in vec3 normal;
layout(location = 3) in vec4 uv_a;
layout(location = 4) in vec4 uv_b;
layout(location = 5) in vec2 uv_c;
layout(location = 0) out vec4 result;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    mat4 object_to_world = mat4(@MATRIX@);
    vec3 off = envfx_wind_offset_uv(rest_pos, normal, uv_a.xy, uv_a.zw, uv_b.xy, uv_b.zw, uv_c, object_to_world,
                                    @FRAME@, vec4(@WIND@), vec4(@GUSTS@), vec4(@GRASS@), vec3(@CAMERA_POS@),
                                    vec3(@CAMERA_Z@));
    result = vec4(off, 1.0);
}
"""
HLSL_MAIN = """
struct Out { float4 position : SV_Position; float4 result : TEXCOORD0; };
Out main(float2 pixel : TEXCOORD0, float3 rest_pos : TEXCOORD1, float3 normal : TEXCOORD2,
         float4 uv_a : TEXCOORD3, float4 uv_b : TEXCOORD4, float2 uv_c : TEXCOORD5) {
    Out o;
    o.position = float4(pixel, 0.0, 1.0);
    float4x4 object_to_world = float4x4(@MATRIX@);
    float3 off;
    CALL
    o.result = float4(off, 1.0);
    return o;
}
"""
CALLS = {  # the five UV channels (BH, Bcs, Rcs, PivotXY, PivotZ) as the engine imports them
    "UNREAL": "off = envfx_wind_offset_uv(rest_pos, normal, uv_a.xy, uv_a.zw, uv_b.xy, uv_b.zw, uv_c, "
              "object_to_world, @FRAME@, float4(@WIND@), float4(@GUSTS@), float4(@GRASS@), float3(@CAMERA_POS@), "
              "float3(@CAMERA_Z@));",
    "UNITY": "EnvFXWind_float(rest_pos, normal, uv_a.xy, uv_a.zw, uv_b.xy, uv_b.zw, uv_c, object_to_world, "
             "@FRAME@, float4(@WIND@), float4(@GUSTS@), float4(@GRASS@), float3(@CAMERA_POS@), float3(@CAMERA_Z@), "
             "off);",
}

UNITY_TYPES = "#define UnityTexture2D Texture2D\n#define ENVFX_WIND_TEXTURE(t) t\n"  # (Shader Graph's own types)


def _vec(values):
    return ", ".join(repr(float(v)) for v in np.asarray(values, np.float64).reshape(-1))


def asset_mesh(category: str, seed: int, n: int = 3000, field: float = 1.0, blades: int = 40):
    """A plant as the wind bake leaves it: rest positions, normals, EnvFX_Height (0 at the base, 1 at the top) and
    EnvFX_Wind (R leaf, G branch phase, B branch lever, A AO): a trunk, branches with leaves (a tree), or blades
    standing on the ground (grass) with their roots spread over a ``field`` by ``field`` square."""
    rng = np.random.default_rng(seed)
    height = 4.0 if category == "TREE" else 0.6
    if category == "TREE":
        pieces = rng.integers(0, 9, n)  # 0: the trunk, 1..8 branches
        h = rng.uniform(0.0, 1.0, n)
        h[pieces > 0] = 0.35 + 0.6 * rng.uniform(0.0, 1.0, (pieces > 0).sum())
        angle = pieces * 0.8
        lever = np.where(pieces > 0, rng.uniform(0.0, 1.0, n), 0.0)
        p = np.column_stack([lever * 1.5 * np.cos(angle) + rng.normal(0, 0.05, n),
                             lever * 1.5 * np.sin(angle) + rng.normal(0, 0.05, n), h * height])
        leaf = np.where((pieces > 0) & (lever > 0.6), rng.uniform(0.3, 1.0, n), 0.0)
        colour = np.column_stack([leaf, pieces / 9.0, lever, np.ones(n)])
        # a base ring at h = 0 on the trunk
        base = rng.choice(np.flatnonzero(pieces == 0), 20, replace=False)
        h[base] = 0.0
        p[base, 2] = 0.0
    else:
        blade = rng.integers(0, blades, n)
        h = rng.uniform(0.0, 1.0, n)
        roots = rng.uniform(-0.5 * field, 0.5 * field, (blades, 2))
        p = np.column_stack([roots[blade] + 0.05 * h[:, None] * rng.normal(size=(n, 2)), h * height])
        colour = np.column_stack([np.zeros(n), blade / blades, np.zeros(n), np.ones(n)])
        first = np.unique(blade, return_index=True)[1]
        h[first] = 0.0
        p[first, 2] = 0.0
    normals = rng.normal(size=(n, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return p, normals, h, colour, height


def object_matrix(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 2 * math.pi)
    s = rng.uniform(0.7, 1.6)
    m = np.eye(4)
    m[:3, :3] = s * np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    m[:3, 3] = rng.uniform(-20, 20, 3)
    return m


def camera_matrix(origin) -> np.ndarray:
    """A camera 6 units back and 4 up from ``origin``, looking down at it (its -Z axis)."""
    pos = np.asarray(origin) + np.array([-6.0, 2.0, 4.0])
    back = pos - np.asarray(origin)
    back /= np.linalg.norm(back)
    right = np.cross([0.0, 0.0, 1.0], back)
    right /= np.linalg.norm(right)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = right, np.cross(back, right), back, pos
    return m


def run_shader(gpu, tmp_path, engine, include, uvs_e, points_e, normals_e, matrix_e, frame, uniforms, cam_e):
    subst = {"MATRIX": _vec(matrix_e.T if engine == "GODOT" else matrix_e),  # GLSL: columns; HLSL: rows
             "FRAME": repr(float(frame)), "WIND": _vec(uniforms["wind"]), "GUSTS": _vec(uniforms["gusts"]),
             "GRASS": _vec(uniforms["grass"]), "CAMERA_POS": _vec(cam_e[0]), "CAMERA_Z": _vec(cam_e[1])}
    main = GLSL_MAIN if engine == "GODOT" else HLSL_MAIN.replace("CALL", CALLS[engine])
    for key, value in subst.items():
        main = main.replace(f"@{key}@", value)
    src = ("#version 450\n" + include if engine == "GODOT" else
           (UNITY_TYPES if engine == "UNITY" else "") + include) + main
    vert = engine_gpu.spirv(src, "vert", engine != "GODOT", tmp_path)
    frag = engine_gpu.spirv(engine_gpu.GLSL_FRAG if engine == "GODOT" else engine_gpu.HLSL_FRAG, "frag",
                            engine != "GODOT", tmp_path)
    uv = [uvs_e[name] for name, _parts in we.CHANNELS]
    return gpu.run(vert, frag, [points_e, normals_e, np.hstack(uv[0:2]), np.hstack(uv[2:4]), uv[4]])[:, :3]


@pytest.fixture(scope="module")
def gpu():
    return engine_gpu.Gpu()


CASES = [  # category, engine, loop frames, unit scale
    ("TREE", "GODOT", 0, 1.0), ("TREE", "UNITY", 96, 1.0), ("TREE", "UNREAL", 0, 0.01),
    ("GRASS", "GODOT", 48, 1.0), ("GRASS", "UNITY", 0, 2.0), ("GRASS", "UNREAL", 72, 1.0),
]


@pytest.mark.parametrize("category,engine,loop,unit_scale", CASES)
def test_the_wind_include_moves_every_vertex_as_the_core_on_a_gpu_driver(gpu, tmp_path, category, engine, loop,
                                                                        unit_scale):
    seed = len(category) * 10 + list(we.ENGINES).index(engine)
    p, normals, h, colour, height = asset_mesh(category, seed)
    preset: dict[str, dict[str, Any]] = {
        "TREE": dict(rigidity=1.0, bend=1.0, sway=1.0, lift=0.5, micro=1.0, ramp=0.0, main_bend=True),
        "GRASS": dict(rigidity=1.0, bend=1.5, sway=0.5, lift=0.2, micro=0.5, ramp=2.0, main_bend=True)}
    asset = core_live.AssetWind(category=category, asset_height=height, **preset[category])
    scene = core_live.SceneWind(direction=(0.6, -0.8, 0.3), strength=1.4, gust_strength=0.7, gust_frequency=0.23,
                                loop_frames=loop, fps=24.0, ambient=1.0, grass_tilt=0.5, fade_start=10.0,
                                fade_end=40.0)
    m = object_matrix(seed)
    cam = camera_matrix(m[:3, 3]) if category == "GRASS" else None
    live = core_live.live_attributes(p, h, colour)
    a, k = we.axes(engine, unit_scale)
    include = we.shader_source(engine, asset, unit_scale)
    uniforms = we.scene_uniforms(scene, engine, unit_scale)
    matrix_e = we.engine_matrix_world(m, engine, unit_scale)
    cam_e = (k * (a @ cam[:3, 3]), a @ cam[:3, 2]) if cam is not None else (np.zeros(3), np.array([0.0, 0.0, 1.0]))
    size = k * height * np.abs(m[:3, :3]).max()
    worst, moved = 0.0, 0.0
    for frame in (1, 7, 30.5, 113, 250):
        want_b = core_live.wind_offsets(p, h, colour, normals, m, frame, scene, asset, camera_matrix=cam, live=live)
        want = k * np.asarray(want_b, np.float64) @ a.T
        got = run_shader(gpu, tmp_path, engine, include, we.engine_uvs(we.channel_uvs(live), engine),
                         k * p @ a.T, normals @ a.T, matrix_e, frame, uniforms, cam_e)
        worst = max(worst, float(np.abs(got - want).max()))
        moved = max(moved, float(np.abs(want).max()))
    assert moved > 0.01 * size, (moved, size)
    assert worst <= 1e-4 * size, (worst, size)


def test_the_gpu_wind_check_can_fail(gpu, tmp_path):
    """An include with the branch sway's sine and cosine swapped is caught."""
    p, normals, h, colour, height = asset_mesh("TREE", 3, 1000)
    asset = core_live.AssetWind(category="TREE", asset_height=height)
    scene = core_live.SceneWind(strength=1.5)
    m = object_matrix(3)
    live = core_live.live_attributes(p, h, colour)
    include = we.shader_source("GODOT", asset)
    wrong = include.replace("vc += (0.3 * bend) * sin(x) * d;", "vc += (0.3 * bend) * cos(x) * d;")
    assert wrong != include
    want = np.asarray(core_live.wind_offsets(p, h, colour, normals, m, 20, scene, asset, live=live)) @ we.axes(
        "GODOT")[0].T
    uvs = we.engine_uvs(we.channel_uvs(live), "GODOT")
    got = run_shader(gpu, tmp_path, "GODOT", wrong, uvs, p @ we.axes("GODOT")[0].T,
                     normals @ we.axes("GODOT")[0].T, we.engine_matrix_world(m, "GODOT"), 20,
                     we.scene_uniforms(scene, "GODOT"), (np.zeros(3), np.array([0.0, 1.0, 0.0])))
    assert np.abs(got - want).max() > 1e-3 * height


def test_grass_blades_across_a_field_each_take_their_own_gust(gpu, tmp_path):
    """A grass object 16 m wide: each blade takes the gust and the figure-eight at its root (waves travelling along
    the wind), so the blades' winds differ; the include follows core.wind.live blade by blade, and an include that
    takes them at the object's origin (per-object grass) is caught."""
    p, normals, h, colour, height = asset_mesh("GRASS", 5, 2000, field=16.0)
    asset = core_live.AssetWind(category="GRASS", asset_height=height, rigidity=1.0, bend=1.5, sway=0.5, lift=0.2,
                                micro=0.5, ramp=2.0)
    scene = core_live.SceneWind(direction=(0.8, 0.6, 0.0), strength=1.2, gust_strength=0.9, gust_frequency=0.3,
                                fps=24.0, ambient=1.0, grass_tilt=0.0, fade_start=0.0, fade_end=0.0)
    m = object_matrix(5)
    live = core_live.live_attributes(p, h, colour)
    include = we.shader_source("GODOT", asset)
    per_object = include.replace("float blade = envfx_wind_effective(t, root, d, wind, gusts);",
                                 "float blade = envfx_wind_effective(t, origin, d, wind, gusts);")
    per_object = per_object.replace("float tau = t - dot(root, d) / ENVFX_WIND_GUST_SPEED;", "float tau = t;")
    # (in envfx_wind_offset and its push variant envfx_wind_offset_push)
    assert per_object.count("origin, d, wind") == 2 and "float tau = t;" in per_object
    a, _k = we.axes("GODOT")
    uvs = we.engine_uvs(we.channel_uvs(live), "GODOT")
    args = (p @ a.T, normals @ a.T, we.engine_matrix_world(m, "GODOT"))
    cam = (np.zeros(3), np.array([0.0, 1.0, 0.0]))
    tops = np.flatnonzero(h > 0.9)
    worst, caught, spread, differ = 0.0, 0.0, 0.0, 0.0
    for frame in (3, 40, 77):
        lt = core_live.live_terms(m, frame, scene, asset)
        blades = core_live.blade_wind(p, live, m, frame, scene, asset, lt)
        spread = max(spread, float(np.ptp(blades.eff[tops])))
        want = np.asarray(core_live.wind_offsets(p, h, colour, normals, m, frame, scene, asset, live=live)) @ a.T
        # the blade tops' sideways motion (per unit of height) differs from blade to blade
        differ = max(differ, float(np.ptp(want[tops] / h[tops, None], axis=0).max()))
        got = run_shader(gpu, tmp_path, "GODOT", include, uvs, *args, frame, we.scene_uniforms(scene, "GODOT"), cam)
        worst = max(worst, float(np.abs(got - want).max()))
        got = run_shader(gpu, tmp_path, "GODOT", per_object, uvs, *args, frame, we.scene_uniforms(scene, "GODOT"),
                         cam)
        caught = max(caught, float(np.abs(got - want).max()))
    size = height * np.abs(m[:3, :3]).max()
    assert spread > 0.3, spread  # the effective wind of the blades at one frame
    assert differ > 0.05 * height, differ
    assert worst <= 1e-4 * size, (worst, size)
    assert caught > 1e-2 * size, (caught, size)


def test_export_files_write_each_assets_includes_and_the_scene(tmp_path):
    assets = {"Oak": core_live.AssetWind(category="TREE", asset_height=8.0),
              "Grass/Clump": core_live.AssetWind(category="GRASS", asset_height=0.5)}
    scene = core_live.SceneWind(direction=(1.0, 1.0, 0.0), strength=2.0)
    paths = we.export_files(str(tmp_path), assets, scene, unit_scale=0.01, source="level.blend")
    names = sorted(os.path.basename(p) for p in paths)
    assert "envfx_wind_Oak.gdshaderinc" in names and "EnvFXWind_Grass_Clump.ush" in names and we.JSON_NAME in names
    import json
    meta = json.loads((tmp_path / we.JSON_NAME).read_text())
    assert meta["scene"]["UNREAL"]["grass"][2] == pytest.approx(scene.fade_start * 100 * 0.01)
    assert meta["assets"]["Grass/Clump"]["files"]["UNITY"] == "EnvFXWind_Grass_Clump.hlsl"
    assert bend_engines.ENGINES["GODOT"][0] == ((1, 0, 0), (0, 0, 1), (0, -1, 0))


# --- grass that actors push (#23 part 4): the include reads the baked interaction buffer as the preview does -------

GLSL_PUSH_MAIN = GLSL_MAIN.replace(
    "layout(location = 0) out vec4 result;",
    "layout(location = 0) out vec4 result;\nlayout(binding = 0) uniform sampler2D push_tex;").replace(
    "envfx_wind_offset_uv(", "envfx_wind_offset_uv_push(").replace(
    "vec3(@CAMERA_Z@));", "vec3(@CAMERA_Z@), vec4(@PUSH_WINDOW@), vec4(@PUSH@), push_tex);")
HLSL_PUSH_MAIN = "Texture2D push_tex : register(t0);\n" + HLSL_MAIN
PUSH_CALLS = {
    "UNREAL": CALLS["UNREAL"].replace("envfx_wind_offset_uv(", "envfx_wind_offset_uv_push(").replace(
        "float3(@CAMERA_Z@));", "float3(@CAMERA_Z@), float4(@PUSH_WINDOW@), float4(@PUSH@), push_tex);"),
    "UNITY": CALLS["UNITY"].replace("EnvFXWind_float(", "EnvFXWindPush_float(").replace(
        "float3(@CAMERA_Z@), off);", "float3(@CAMERA_Z@), float4(@PUSH_WINDOW@), float4(@PUSH@), push_tex, off);"),
}


def run_push_shader(gpu, tmp_path, engine, include, uvs_e, points_e, normals_e, matrix_e, frame, uniforms, cam_e,
                    push_u, texture):
    """``run_shader`` for the include's push variant: ``push_u`` the frame's ``push_uniforms``, ``texture`` the
    frame's buffer as the engine holds it (a moderngl texture)."""
    subst = {"MATRIX": _vec(matrix_e.T if engine == "GODOT" else matrix_e),
             "FRAME": repr(float(frame)), "WIND": _vec(uniforms["wind"]), "GUSTS": _vec(uniforms["gusts"]),
             "GRASS": _vec(uniforms["grass"]), "CAMERA_POS": _vec(cam_e[0]), "CAMERA_Z": _vec(cam_e[1]),
             "PUSH_WINDOW": _vec(push_u["push_window"]), "PUSH": _vec(push_u["push"])}
    main = GLSL_PUSH_MAIN if engine == "GODOT" else HLSL_PUSH_MAIN.replace("CALL", PUSH_CALLS[engine])
    for key, value in subst.items():
        main = main.replace(f"@{key}@", value)
    src = ("#version 450\n" + include if engine == "GODOT" else
           (UNITY_TYPES if engine == "UNITY" else "") + include) + main
    vert = engine_gpu.spirv(src, "vert", engine != "GODOT", tmp_path)
    frag = engine_gpu.spirv(engine_gpu.GLSL_FRAG if engine == "GODOT" else engine_gpu.HLSL_FRAG, "frag",
                            engine != "GODOT", tmp_path)
    uv = [uvs_e[name] for name, _parts in we.CHANNELS]
    return gpu.run(vert, frag, [points_e, normals_e, np.hstack(uv[0:2]), np.hstack(uv[2:4]), uv[4]],
                   [texture])[:, :3]


WALK_FRAMES = 30  # a walker across the field over frames 1-20, baked over 1-30


@pytest.fixture(scope="module")
def walker_bakes(tmp_path_factory):
    """{framing: (BakeResult, the frames' buffers (row 0 at min y), BufferParams)} of a walker along +x through the
    grass field (frames 1-20 from x = -3 to 3), baked over frames 1-30 as a fixed window (AREA) and as one that
    follows the walker (FOLLOW, its origin moving with it in whole texels)."""
    from core import snow as core_snow
    f = np.arange(1, WALK_FRAMES + 1)
    x = -3.0 + 6.0 * np.clip((f - 1) / 19.0, 0.0, 1.0)
    tracks = np.stack([x, 0.15 * x, np.zeros_like(x)], 1)[:, None, :]
    out = {}
    for framing, buf in (("AREA", core_snow.BufferParams(resolution=96, size=9.0, origin=(-4.3, -4.6))),
                         ("FOLLOW", core_snow.BufferParams(resolution=80, size=8.0, framing="FOLLOW", edge_fade=0.1))):
        folder = tmp_path_factory.mktemp(framing.lower())
        result = core_snow.bake(tracks, [0.6], [0.2], core_snow.StampParams(fps=24.0), buf, frame_start=1,
                                out_dir=str(folder), sequence=True,
                                pivot_track=tracks[:, 0] if framing == "FOLLOW" else None)
        out[framing] = (result, [core_snow.read_exr(path) for path in result.files], buf)
    return out


PUSH_CASES = [  # engine, framing, unit scale
    ("GODOT", "AREA", 1.0), ("UNITY", "FOLLOW", 2.0), ("UNREAL", "AREA", 0.01), ("GODOT", "FOLLOW", 1.0),
]


def _pushed_field(seed: int):
    """A grass field of 400 blades over 6 x 6 m where the walker crosses it, rotated and scaled, in a wind."""
    p, normals, h, colour, height = asset_mesh("GRASS", seed, 6000, field=6.0, blades=400)
    asset = core_live.AssetWind(category="GRASS", asset_height=height, rigidity=1.0, bend=1.5, sway=0.5, lift=0.2,
                                micro=0.5, ramp=2.0)
    scene = core_live.SceneWind(direction=(0.6, -0.8, 0.0), strength=0.8, gust_strength=0.5, gust_frequency=0.23,
                                fps=24.0, ambient=1.0, grass_tilt=0.5, fade_start=10.0, fade_end=40.0)
    a = 0.4 + seed
    m = np.eye(4)
    m[:3, :3] = 1.2 * np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    m[:3, 3] = (0.3, -0.2, 0.1)
    return p, normals, h, colour, height, asset, scene, m


@pytest.mark.parametrize("engine,framing,unit_scale", PUSH_CASES)
def test_the_push_include_pushes_the_grass_as_the_core_on_a_gpu_driver(gpu, tmp_path, walker_bakes, engine, framing,
                                                                      unit_scale):
    """Grass in wind with push on: the include's push variant, given each frame's baked buffer (as the engine
    imports the EXR), its window and the push's numbers (``push_uniforms``), moves 6000 vertices of 400 blades as
    ``core.wind.live.wind_offsets`` with the frame's ``GrassPush`` (before the bake's first frame, while the walker
    crosses, after it has passed and beyond the bake's last frame), to 1e-4 of the asset size; with push off
    (``push.w`` 0) as the core without push. The push moves the blades by much more than that."""
    from core import snow_engines
    from core import wind as core_wind
    result, images, buf = walker_bakes[framing]
    seed = PUSH_CASES.index((engine, framing, unit_scale))
    p, normals, h, colour, height, asset, scene, m = _pushed_field(seed)
    cam = camera_matrix(m[:3, 3])
    live = core_live.live_attributes(p, h, colour)
    a, k = we.axes(engine, unit_scale)
    include = we.shader_source(engine, asset, unit_scale)
    uniforms = we.scene_uniforms(scene, engine, unit_scale)
    matrix_e = we.engine_matrix_world(m, engine, unit_scale)
    cam_e = (k * (a @ cam[:3, 3]), a @ cam[:3, 2])
    args = (we.engine_uvs(we.channel_uvs(live), engine), k * p @ a.T, normals @ a.T, matrix_e)
    size = k * height * np.abs(m[:3, :3]).max()
    strength, sway = 2.5, 0.8
    worst, worst_off, pushed = 0.0, 0.0, 0.0
    for frame in (0, 6, 11, 17, 26, 41):
        i = int(np.clip(frame, 1, WALK_FRAMES)) - 1  # the baked frame the game binds: clamp(frame, first, last)
        push = core_wind.GrassPush(buffer=images[i], origin=tuple(result.origins[i]), size=buf.size,
                                   strength=strength, sway=sway, started=frame + 0.5 > 1)
        texture = gpu.texture(snow_engines.engine_rows(images[i], engine))
        want_off = core_live.wind_offsets(p, h, colour, normals, m, frame, scene, asset, camera_matrix=cam, live=live)
        want_b = core_live.wind_offsets(p, h, colour, normals, m, frame, scene, asset, camera_matrix=cam, live=live,
                                        push=push)
        want = k * np.asarray(want_b, np.float64) @ a.T
        for on in (True, False):
            push_u = we.push_uniforms(result.origins[i], buf.size, strength, sway, 1, engine, unit_scale, on=on)
            got = run_push_shader(gpu, tmp_path, engine, include, *args, frame, uniforms, cam_e, push_u, texture)
            if on:
                worst = max(worst, float(np.abs(got - want).max()))
            else:
                worst_off = max(worst_off, float(np.abs(got - k * np.asarray(want_off, np.float64) @ a.T).max()))
        texture.release()
        pushed = max(pushed, float(np.abs(want - k * np.asarray(want_off, np.float64) @ a.T).max()))
    assert pushed > 0.1 * size, (pushed, size)
    assert worst <= 1e-4 * size, (worst, size)
    assert worst_off <= 1e-4 * size, (worst_off, size)


def test_the_gpu_push_check_can_fail(gpu, tmp_path, walker_bakes):
    """An include whose buffer rows run the wrong way (Unity's bottom-first order read as Godot's top-first) is
    caught, and so is one that reads the push at the vertex instead of the blade's root."""
    from core import snow_engines
    from core import wind as core_wind
    result, images, buf = walker_bakes["AREA"]
    p, normals, h, colour, height, asset, scene, m = _pushed_field(7)
    live = core_live.live_attributes(p, h, colour)
    include = we.shader_source("GODOT", asset)
    flipped = include.replace("texelFetch(buf, ivec2(i, size.y - 1 - j), 0)", "texelFetch(buf, ivec2(i, j), 0)")
    at_vertex = include.replace("envfx_wind_push_lean(root, frame,", "envfx_wind_push_lean(m3 * p + origin, frame,")
    assert flipped != include and at_vertex != include
    a, _k = we.axes("GODOT")
    camera = camera_matrix(m[:3, 3])
    cam = (a @ camera[:3, 3], a @ camera[:3, 2])
    frame = 12
    push = core_wind.GrassPush(buffer=images[frame - 1], origin=tuple(result.origins[frame - 1]), size=buf.size)
    want = np.asarray(core_live.wind_offsets(p, h, colour, normals, m, frame, scene, asset, camera_matrix=camera,
                                             live=live, push=push)) @ a.T
    push_u = we.push_uniforms(result.origins[frame - 1], buf.size, push.strength, push.sway, 1, "GODOT")
    texture = gpu.texture(snow_engines.engine_rows(images[frame - 1], "GODOT"))
    args = (we.engine_uvs(we.channel_uvs(live), "GODOT"), p @ a.T, normals @ a.T, we.engine_matrix_world(m, "GODOT"),
            frame, we.scene_uniforms(scene, "GODOT"), cam, push_u, texture)
    good = run_push_shader(gpu, tmp_path, "GODOT", include, *args)
    assert np.abs(good - want).max() <= 1e-4 * height
    for wrong in (flipped, at_vertex):
        got = run_push_shader(gpu, tmp_path, "GODOT", wrong, *args)
        assert np.abs(got - want).max() > 1e-2 * height
    texture.release()


def test_export_files_describe_the_grass_push_in_each_engines_axes_and_units(tmp_path, walker_bakes):
    """envfx_wind.json's push: per baked frame (a follow window moves) each engine's uniforms, whose window corner
    is the frame's origin in the engine's axes and units and whose size is the window's; with push off, uniforms
    that switch it off. A grass asset names its push functions; each of them is in its include."""
    import json
    result, _images, buf = walker_bakes["FOLLOW"]
    frames = tuple((int(f), (float(o[0]), float(o[1])), os.path.basename(path))
                   for f, o, path in zip(result.frames, result.origins, result.files))
    push = we.PushBake(size=buf.size, strength=3.0, sway=0.7, first=1, last=WALK_FRAMES,
                       resolution=(buf.resolution, buf.resolution), frames=frames, folder=str(tmp_path))
    assets = {"Meadow": core_live.AssetWind(category="GRASS", asset_height=0.5),
              "Oak": core_live.AssetWind(category="TREE", asset_height=8.0)}
    we.export_files(str(tmp_path), assets, core_live.SceneWind(), unit_scale=0.5, push=push)
    meta = json.loads((tmp_path / we.JSON_NAME).read_text())
    p = meta["push"]
    assert p["on"] and (p["first_frame"], p["last_frame"]) == (1, WALK_FRAMES) and len(p["frames"]) == WALK_FRAMES
    assert len({tuple(f["uniforms"]["GODOT"]["push_window"]) for f in p["frames"]}) > 3  # (the window follows)
    for entry, (_frame, origin, name) in zip(p["frames"], frames):
        assert entry["file"] == name
        for engine in we.ENGINES:
            a, k = we.axes(engine, 0.5)
            window = np.asarray(entry["uniforms"][engine]["push_window"])
            np.testing.assert_allclose(a.T @ window[:3] / k, [*origin, 0.0], atol=1e-9)
            assert window[3] == pytest.approx(buf.size * k)
            assert entry["uniforms"][engine]["push"] == [3.0, 0.7, 1.0, 1.0]
    assert p["texel_rows"]["UNITY"].startswith("bottom") and p["texel_rows"]["GODOT"].startswith("top")
    assert meta["assets"]["Meadow"]["push_functions"] == we.PUSH_FUNCTIONS and "push_functions" not in \
        meta["assets"]["Oak"]
    for engine in we.ENGINES:
        include = (tmp_path / meta["assets"]["Meadow"]["files"][engine]).read_text()
        assert f" {we.PUSH_FUNCTIONS[engine]}" in include
        assert "push" not in (tmp_path / meta["assets"]["Oak"]["files"][engine]).read_text()
    we.export_files(str(tmp_path), assets, core_live.SceneWind())
    off = json.loads((tmp_path / we.JSON_NAME).read_text())["push"]
    assert not off["on"] and all(off["uniforms"][e]["push"][3] == 0.0 for e in we.ENGINES)
