"""The VAT player's engine shader code (core.vat_engines) compiles with glslang (Godot's include as GLSL, Unity's
and Unreal's as HLSL) and, run on Mesa's llvmpipe over thousands of vertices and several frames, reads the same
offsets and normals as core.vat's decoder (what the Blender player is held to), in each engine's axes and units,
from the textures as each engine uploads them: float (EXR32, EXR16 as half floats) and 16-bit normalised (PNG16).
"""

import importlib.util
import os

import numpy as np
import pytest

from core import vat as core_vat
from core import vat_engines as ve

_spec = importlib.util.spec_from_file_location("engine_gpu", os.path.join(os.path.dirname(__file__), "engine_gpu.py"))
assert _spec is not None and _spec.loader is not None
engine_gpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_gpu)

GODOT_VERT = """#version 450
layout(location = 0) in vec2 pixel;
layout(location = 1) in vec2 vat_uv;
layout(location = 2) in float frame;
layout(location = 0) out vec4 result;
layout(binding = 0) uniform sampler2D positions;
layout(binding = 1) uniform sampler2D normal_texture;
void main() {
    gl_Position = vec4(pixel, 0.0, 1.0);
    vec3 offset;
    vec3 normal;
    envfx_vat(vat_uv, frame, positions, normal_texture, vec4(FRAMES), vec4(LAYOUT), vec4(REMAP_MIN),
              vec4(REMAP_SPAN), vec4(NORMALS), offset, normal);
    result = vec4(WHAT, 1.0);
}
"""
HLSL_VERT = """
Texture2D positions : register(t0);
Texture2D normal_texture : register(t1);
SamplerState point_sampler : register(s0);
struct Out { float4 position : SV_Position; float4 result : TEXCOORD0; };
Out main(float2 pixel : TEXCOORD0, float2 vat_uv : TEXCOORD1, float frame : TEXCOORD2) {
    Out o;
    o.position = float4(pixel, 0.0, 1.0);
    float3 offset;
    float3 normal;
    CALL
    o.result = float4(WHAT, 1.0);
    return o;
}
"""
CALLS = {
    "UNREAL": "envfx_vat(vat_uv, frame, positions, normal_texture, point_sampler, float4(FRAMES), float4(LAYOUT), "
              "float4(REMAP_MIN), float4(REMAP_SPAN), float4(NORMALS), offset, normal);",
    # the Shader Graph Custom Function, the time in seconds
    "UNITY": "EnvFXVAT_float(vat_uv, (frame - FRAME_START) / FPS, positions, normal_texture, point_sampler, "
             "float4(FRAMES), float4(LAYOUT), float4(REMAP_MIN), float4(REMAP_SPAN), float4(NORMALS), FPS, offset, "
             "normal);",
}
# Unity's UnityTexture2D and UnitySamplerState are structs holding the texture (.tex) and the sampler
# (.samplerstate), which glslang cannot pass to functions when it folds samplers into textures: the texture and
# sampler themselves here, through the include's ENVFX_VAT_TEXTURE / ENVFX_VAT_SAMPLER hooks
UNITY_TYPES = """
#define UnityTexture2D Texture2D
#define UnitySamplerState SamplerState
#define ENVFX_VAT_TEXTURE(t) t
#define ENVFX_VAT_SAMPLER(s) s
"""


def _vec(values):
    return ", ".join(repr(float(v)) for v in values)


def program_source(engine: str, params: dict, what: str) -> tuple:
    """(vertex shader source, is HLSL): the include and a main() calling it with a bake's parameters."""
    subst = {"FRAMES": _vec(params["frames"]), "LAYOUT": _vec(params["layout"]),
             "REMAP_MIN": _vec(params["remap_min"]), "REMAP_SPAN": _vec(params["remap_span"]),
             "NORMALS": _vec(params["normals"]), "FPS": repr(params["fps"]),
             "FRAME_START": repr(params["frames"][0])}
    include = ve.shader_source(engine)
    if engine == "GODOT":
        source = GODOT_VERT.replace("WHAT", what)
        for key, value in subst.items():
            source = source.replace(key, value)
        head, rest = source.split("\n", 1)
        return head + "\n" + include + rest, False
    source = HLSL_VERT.replace("CALL", CALLS[engine]).replace("WHAT", what)
    for key, value in subst.items():
        source = source.replace(key, value)
    return (UNITY_TYPES if engine == "UNITY" else "") + include + source, True


def engine_uvs(layout: core_vat.Layout, engine: str) -> np.ndarray:
    """The proxy's VAT UV as the engine imports it: Blender's (V = 0 at the bottom) in Unity (FBX), flipped
    (V = 0 at the top) in Godot (glTF) and Unreal (its FBX import flips V)."""
    uv = layout.uvs().astype(np.float64)
    if engine != "UNITY":
        uv[:, 1] = 1.0 - uv[:, 1]
    return uv


def upload(gpu, data, meta, role: str, engine: str):
    """A bake's texture as the engine has it in memory: floats (EXR) or 16-bit integers read as texel / 65535
    (PNG16); Unity keeps images bottom row first (its V = 0 at the bottom), Godot and Unreal top row first."""
    enc = meta["encoding"]
    if enc == "PNG16":
        from core import png
        img, dtype = png.decode_png(bytes(data)), "nu2"
    else:
        from core import exr
        pixels, names = exr.decode_exr(bytes(data))
        img = pixels[..., [names.index(c) for c in "RGBA"[:len(names)]]]
        dtype = "f2" if enc == "EXR16" else "f4"
    if engine == "UNITY":
        img = img[::-1]
    return gpu.texture(img, dtype)


def bake(engine, encoding, normals, loop, n, frames, seed, size=3.0):
    rng = np.random.default_rng(seed)
    rest = rng.uniform(-size, size, (n, 3))
    t = np.arange(frames)[:, None, None]
    offsets = 0.2 * size * np.sin(0.3 * t + rest[None] * rng.uniform(0.5, 2.0, 3))
    nrm = rng.normal(size=(frames, n, 3))
    nrm /= np.linalg.norm(nrm, axis=2, keepdims=True)
    step = 2
    fr = list(range(5, 5 + step * frames, step))
    st = core_vat.VatSettings(encoding=encoding, normals=normals, engine=engine, max_size=512)
    enc = core_vat.encode_bake("thing", rest, offsets, None if normals == "NONE" else nrm, fr, st, fps=30.0,
                               loop=loop)
    return enc, rest, offsets


def expected(enc, frame_numbers):
    """Per frame number: the numpy decode (engine space) of the baked frame the Blender player plays there."""
    meta = enc.meta
    lay = enc.layout
    tex = meta["textures"]["position"]
    rm = None if tex["remap"] is None else (np.r_[tex["remap"]["min"], 0.0], np.r_[tex["remap"]["max"], 1.0])
    raw = (3,) if "packed_normal" in tex else ()
    pos = core_vat.unpack_frames(core_vat.decode_texture(enc.files[tex["file"]], meta["encoding"], rm, raw), lay)
    if meta["normals"] == "TEXTURE":
        nt = meta["textures"]["normal"]
        nrm_rm = None if nt["remap"] is None else (np.asarray(nt["remap"]["min"]), np.asarray(nt["remap"]["max"]))
        nrm = core_vat.unpack_frames(core_vat.decode_texture(enc.files[nt["file"]], meta["encoding"], nrm_rm), lay)
        nrm = nrm / np.linalg.norm(nrm, axis=2, keepdims=True)
    elif meta["normals"] == "PACKED":
        nrm = core_vat.unpack_normals(pos[..., 3], tex["packed_normal"]["bits"])
    else:
        nrm = np.zeros(pos.shape[:2] + (3,))
    out = []
    for frame in frame_numbers:
        index = np.floor((frame - meta["frame_start"]) / meta["step"] + 1e-4)
        index = index % meta["frames"] if meta["loop"] else min(max(index, 0), meta["frames"] - 1)
        out.append((pos[int(index), :, :3], nrm[int(index)]))
    return out


@pytest.fixture(scope="module")
def gpu():
    return engine_gpu.Gpu()


CASES = [  # engine, encoding, normals, loop
    ("GODOT", "EXR32", "TEXTURE", True), ("GODOT", "EXR16", "TEXTURE", False), ("GODOT", "EXR32", "PACKED", False),
    ("UNITY", "PNG16", "TEXTURE", True), ("UNITY", "EXR32", "PACKED", False), ("UNITY", "EXR16", "NONE", True),
    ("UNREAL", "PNG16", "PACKED", True), ("UNREAL", "EXR32", "TEXTURE", False), ("UNREAL", "PNG16", "TEXTURE", False),
]


@pytest.mark.parametrize("engine,encoding,normals,loop", CASES)
def test_the_engine_player_reads_what_the_decoder_reads_on_a_gpu_driver(gpu, tmp_path, engine, encoding, normals,
                                                                        loop):
    """Thousands of vertices (several rows per frame), frame numbers between, before, after and beyond the baked
    ones (held, or wrapped by the loop): offsets to 1e-4 of the asset's size (float) or the encoding's precision
    (PNG16) of core.vat's decode and so of the baked motion, normals within 1e-3."""
    n, frames = 3000, 7
    enc, rest, offsets = bake(engine, encoding, normals, loop, n, frames, seed=len(engine) * 7 + len(encoding))
    meta = enc.meta
    params = ve.shader_parameters(meta)
    assert meta["layout"]["rows_per_frame"] > 1
    start, step = meta["frame_start"], meta["step"]
    frame_numbers = [start, start + step * 3 + 0.7, start + step * frames - 1e-3, start - 4.5, start + step * 9.2,
                     start + step * frames * 3 + 2.0]
    want = expected(enc, frame_numbers)
    uv = engine_uvs(enc.layout, engine)
    textures = [upload(gpu, enc.files[meta["textures"]["position"]["file"]], meta, "position", engine)]
    if normals == "TEXTURE":
        textures.append(upload(gpu, enc.files[meta["textures"]["normal"]["file"]], meta, "normal", engine))
    else:
        textures.append(textures[0])
    size = float(np.ptp(core_vat.to_engine(rest, engine), axis=0).max())
    tol = max(1e-4 * size, 1.01 * meta["precision"])  # float: 1e-4 of the size; PNG16: the remap step
    frag = engine_gpu.spirv(engine_gpu.HLSL_FRAG if engine != "GODOT" else engine_gpu.GLSL_FRAG, "frag",
                            engine != "GODOT", tmp_path)
    progs = {}
    for what in ("offset", "normal"):
        source, hlsl = program_source(engine, params, what)
        progs[what] = engine_gpu.spirv(source, "vert", hlsl, tmp_path)
    for frame, (w_off, w_nrm) in zip(frame_numbers, want):
        attrs = [uv, np.full((n, 1), frame)]
        got = gpu.run(progs["offset"], frag, attrs, textures)[:, :3]
        np.testing.assert_allclose(got, w_off, rtol=0, atol=1e-5 * size, err_msg=f"{engine} {encoding} {frame}")
        if normals != "NONE":
            got_n = gpu.run(progs["normal"], frag, attrs, textures)[:, :3]
            np.testing.assert_allclose(got_n, w_nrm, rtol=0, atol=1e-3, err_msg=f"{engine} {encoding} {frame}")
    # and that is the baked motion in the engine's axes and units, within the encoding's precision
    for frame, (w_off, _w_nrm) in zip(frame_numbers, want):
        index = np.floor((frame - start) / step + 1e-4)
        index = int(index % frames if loop else min(max(index, 0), frames - 1))
        truth = core_vat.to_engine(offsets[index], engine)
        assert np.abs(w_off - truth).max() <= tol, (frame, np.abs(w_off - truth).max(), tol)
    assert np.abs(want[0][0]).max() > 0.01 * size  # it moves


def test_every_include_compiles_and_the_check_can_fail(gpu, tmp_path):
    enc, _rest, _offsets = bake("UNREAL", "EXR32", "TEXTURE", False, 500, 3, seed=1)
    params = ve.shader_parameters(enc.meta)
    for engine in ve.ENGINES:
        source, hlsl = program_source(engine, params, "offset")
        done = engine_gpu.compile_shader(source, hlsl, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    # a player that reads the frame below (no 1e-4 nudge, frame numbers just under a whole frame) is caught
    meta = enc.meta
    wrong = ve.shader_source("UNREAL").replace("+ 0.0001)", "- 0.5)")
    assert wrong != ve.shader_source("UNREAL")
    source, _ = program_source("UNREAL", params, "offset")
    source = source.replace(ve.shader_source("UNREAL"), wrong)
    frag = engine_gpu.spirv(engine_gpu.HLSL_FRAG, "frag", True, tmp_path)
    n = 500
    tex = upload(gpu, enc.files[meta["textures"]["position"]["file"]], meta, "position", "UNREAL")
    frame = meta["frame_start"] + meta["step"] * 1.0
    got = gpu.run(engine_gpu.spirv(source, "vert", True, tmp_path), frag,
                  [engine_uvs(enc.layout, "UNREAL"), np.full((n, 1), frame)], [tex, tex])[:, :3]
    assert not np.allclose(got, expected(enc, [frame])[0][0], atol=1e-3)
