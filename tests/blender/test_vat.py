"""Vertex animation textures in Blender: the proxy with the VAT player plays back what was baked (positions within
the encoding's precision, normals within a degree) for an armature, an EnvFX wind asset and a bent mesh, in every
encoding and engine space; the glTF proxy is what the JSON says; bad input is refused with nothing written and
the scene unchanged."""

import importlib
import json
import os
import shutil
import struct
import sys
import threading
import types

import bpy
import numpy as np
import pytest

from tests.blender import api, fresh_open
from tests.job_steps import Slowed, step


@pytest.fixture
def vat(envfx):
    class M:
        ops = importlib.import_module(envfx.__name__ + ".operators.vat")
        core = importlib.import_module(envfx.__name__ + ".core.vat")
        nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.vat")
        bridge = importlib.import_module(envfx.__name__ + ".bridge")
    return M


def armature_mesh(name="Arm", frames=10):
    """A small cylinder bent by a one-bone armature that rotates from frame 1 to ``frames``."""
    bpy.ops.mesh.primitive_cylinder_add(vertices=8, depth=2.0, location=(0, 0, 1))
    obj = api.active()
    obj.name = name
    bpy.ops.object.transform_apply(location=True)
    arm_data = bpy.data.armatures.new(name + "Rig")
    rig = bpy.data.objects.new(name + "Rig", arm_data)
    api.scene().collection.objects.link(rig)
    api.view_layer().objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    bone = arm_data.edit_bones.new("Bone")
    bone.head, bone.tail = (0, 0, 0), (0, 0, 2)
    bpy.ops.object.mode_set(mode="OBJECT")
    group = obj.vertex_groups.new(name="Bone")
    for v in api.mesh(obj).vertices:
        group.add([v.index], min(1.0, max(0.0, v.co.z / 2.0)), "REPLACE")
    mod = api.of(bpy.types.ArmatureModifier, obj.modifiers.new("Armature", "ARMATURE"))
    mod.object = rig
    assert rig.pose is not None
    pb = rig.pose.bones["Bone"]
    pb.rotation_mode = "XYZ"
    pb.rotation_euler = (0, 0, 0)
    pb.keyframe_insert("rotation_euler", frame=1)
    pb.rotation_euler = (0.9, 0.2, 0.4)
    pb.keyframe_insert("rotation_euler", frame=frames)
    obj.location = (1.0, 2.0, 0.5)
    return obj


def evaluated(vat, obj):
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    mesh = ev.to_mesh()
    try:
        pos = vat.bridge.get_positions(mesh).copy()
        nrm = vat.bridge.vertex_normals(mesh).copy()
        attr = mesh.attributes.get(vat.nodes.NORMAL_ATTR)
        played = None
        if attr is not None:
            buf = np.empty(len(mesh.vertices) * 3, np.float32)
            attr.data.foreach_get("vector", buf)
            played = buf.reshape(-1, 3)
        return pos, nrm, played
    finally:
        ev.to_mesh_clear()


def assert_round_trip(vat, obj, result, frames, normal_limit=1.0, slack=1e-6):
    """At every baked frame the proxy's positions equal the original's within the encoding's precision (and
    ``slack``: float32 arithmetic), and its played normals are within ``normal_limit`` degrees of the
    original's."""
    scene = api.scene()
    meta = result.meta[obj.name]
    proxy = vat.ops.find_proxy(obj.name)
    tol = meta["precision"] / meta["coordinate_system"]["units_per_blender_unit"]
    if meta["encoding"] == "PNG16":
        tol = tol * 0.5 + 1e-6  # rounding: half a step
    worst_pos, worst_angle = 0.0, 0.0
    for frame in frames:
        scene.frame_set(frame)
        want, want_n, _ = evaluated(vat, obj)
        got, _, got_n = evaluated(vat, proxy)
        worst_pos = max(worst_pos, float(np.abs(got - want).max()))
        if meta["normals"] != "NONE":
            worst_angle = max(worst_angle, float(vat.core.angle_degrees(got_n, want_n).max()))
    assert worst_pos <= tol + slack, (worst_pos, tol)
    assert worst_angle < normal_limit
    return worst_pos, worst_angle


# --- round trips --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding, engine, normals", [
    ("EXR32", "BLENDER", "TEXTURE"), ("EXR32", "UNITY", "PACKED"), ("EXR16", "GODOT", "TEXTURE"),
    ("PNG16", "UNREAL", "TEXTURE"), ("PNG16", "BLENDER", "PACKED")])
def test_armature_round_trip(vat, tmp_path, encoding, engine, normals):
    obj = armature_mesh()
    scene = api.scene()
    scene.frame_set(4)
    opts = vat.ops.VatOptions(frame_start=1, frame_end=10, step=3, encoding=encoding, engine=engine, normals=normals)
    result = vat.ops.bake_vat(scene, [obj], str(tmp_path), opts)
    assert scene.frame_current == 4  # the scene's frame is restored
    meta = result.meta["Arm"]
    assert meta["frames"] == 4 and meta["step"] == 3
    limit = {"EXR32": 0.15, "EXR16": 1.0, "PNG16": 1.0}[encoding]
    if normals == "PACKED" and encoding == "PNG16":
        limit = 1.5  # 8 bits per octahedral coordinate
    assert_round_trip(vat, obj, result, [1, 4, 7, 10], normal_limit=limit)
    on_disk = json.loads((tmp_path / "Arm_vat.json").read_text())
    assert on_disk["layout"] == meta["layout"] and set(on_disk["files"]) <= set(os.listdir(tmp_path))
    assert (tmp_path / on_disk["textures"]["position"]["file"]).is_file()
    tree = api.modifier_group(bpy.data.objects["Arm_VAT"], "EnvFX VAT")
    tex = api.of(bpy.types.GeometryNodeImageTexture, tree.nodes["Position Texture"])
    assert tex.interpolation == "Closest"


@pytest.mark.parametrize("encoding", ["EXR32", "PNG16"])
def test_a_compressed_bake_round_trips(vat, tmp_path, encoding):
    """Compress on: the textures are encoded after the last frame and written by the bake (not streamed)."""
    obj = armature_mesh()
    opts = vat.ops.VatOptions(frame_start=1, frame_end=10, step=3, encoding=encoding, compress=True)
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), opts)
    assert_round_trip(vat, obj, result, [1, 4, 7, 10], normal_limit={"EXR32": 0.15, "PNG16": 1.0}[encoding])
    data = (tmp_path / result.meta["Arm"]["textures"]["position"]["file"]).read_bytes()
    if encoding == "EXR32":
        assert b"compression\0compression\0\x01\0\0\0\x03" in data  # ZIP
    else:
        assert (data[data.index(b"IDAT") + 6] >> 1) & 3 != 0  # the first deflate block: not a stored one


def test_wind_asset_loops_seamlessly_and_bakes_its_colour(vat, envfx, tmp_path):
    scene = api.scene()
    wind = api.envfx(scene).wind
    wind.ao_samples = 0
    wind.loop_frames = 24
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0)
    plant = api.active()
    plant.name = "Plant"
    plant.rotation_euler = (1.2, 0, 0)
    bpy.ops.object.transform_apply(rotation=True)
    envfx.operators.wind.bake(scene, [plant])
    envfx.operators.wind.add_wind(scene, [plant])
    opts = vat.ops.VatOptions(frame_start=1, step=2, loop_frames=24, attributes=("EnvFX_Wind",))
    result = vat.ops.bake_vat(scene, [plant], str(tmp_path), opts)
    meta = result.meta["Plant"]
    assert meta["loop"] and meta["frames"] == 12 and meta["frame_end"] == 23
    assert not [w for w in result.warnings if "jumps" in w or "static" in w], result.warnings
    assert "EnvFX_Wind" in meta["textures"]
    assert_round_trip(vat, plant, result, range(1, 24, 2))
    # the proxy wraps: frame 25 plays frame 1 again, as the wind does
    proxy = bpy.data.objects["Plant_VAT"]
    scene.frame_set(1)
    first = evaluated(vat, proxy)[0]
    scene.frame_set(25)
    assert np.allclose(evaluated(vat, proxy)[0], first)
    assert np.allclose(evaluated(vat, plant)[0], first, atol=1e-4)


def test_bent_mesh_round_trip(vat, envfx, tmp_path):
    scene = api.scene()
    s = api.envfx(scene).bend
    pivot = bpy.data.objects.new("Player", None)
    scene.collection.objects.link(pivot)
    s.pivot = pivot
    s.strength = 0.05
    pivot.location = (0, -4, 0)
    pivot.keyframe_insert("location", frame=1)
    pivot.location = (0, 6, 0)
    pivot.keyframe_insert("location", frame=8)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=6.0)
    ground = api.active()
    ground.name = "Ground"
    envfx.operators.bend.add_bend(scene, [ground])
    result = vat.ops.bake_vat(scene, [ground], str(tmp_path), vat.ops.VatOptions(frame_start=1, frame_end=8))
    assert not [w for w in result.warnings if "static" in w]
    assert_round_trip(vat, ground, result, range(1, 9))


@pytest.mark.parametrize("encoding, normals, engine", [("EXR32", "TEXTURE", "GODOT"), ("PNG16", "PACKED", "GODOT"),
                                                       ("EXR16", "TEXTURE", "UNITY"), ("PNG16", "TEXTURE", "UNITY")])
def test_a_corpus_tree_in_the_wind_round_trips(vat, envfx, tmp_path, corpus_asset, load_helper, encoding, normals,
                                               engine):
    """A real tree of the corpus (several objects, unwelded pieces, an unapplied centimetre scale) in the live wind,
    baked over a seamless wind loop for Godot or Unity: every object's proxy plays what the wind draws at every
    baked frame, and its glb or FBX, read back, holds the rest pose (and the FBX the UV map that addresses each
    vertex's texel)."""
    scene = api.scene()
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    wind = api.envfx(scene).wind
    wind.ao_samples = 0
    wind.strength = 1.5
    wind.loop_frames = 24
    objects = corpus_asset("ez_aspen_small_single")
    envfx.operators.wind.bake(scene, objects)
    envfx.operators.wind.add_wind(scene, objects)
    opts = vat.ops.VatOptions(frame_start=1, step=3, loop_frames=24, encoding=encoding, normals=normals,
                              engine=engine)
    result = vat.ops.bake_vat(scene, objects, str(tmp_path), opts)
    assert sorted(result.meta) == sorted(o.name for o in objects) and not result.skipped
    assert not [w for w in result.warnings if "jumps" in w or "static" in w], result.warnings
    for obj in objects:
        meta = result.meta[obj.name]
        assert meta["frames"] == 8 and meta["loop"] and meta["vertex_count"] == len(api.mesh(obj).vertices)
        rest = vat.bridge.get_positions(api.mesh(obj)).astype(np.float64)
        size = float(np.ptp(rest, axis=0).max())
        # the player adds the offset to the rest position in float32: at this tree's 39 m in centimetres a float32
        # step is 0.00024, several of which add to the encoding's own error
        slack = 4 * float(np.spacing(np.float32(np.abs(rest).max())))
        assert_round_trip(vat, obj, result, range(1, 24, 3), normal_limit=1.5 if normals == "PACKED" else 0.15,
                          slack=slack)
        assert meta["bounds"]["max_offset"] > 0.01 * size  # the wind moves it (the object's units: centimetres)
        if engine == "GODOT":
            doc, accessor = read_glb(tmp_path / meta["mesh"])  # the proxy's glb: the rest pose in Godot's axes
            pos = np.concatenate([accessor(p["attributes"]["POSITION"]) for p in doc["meshes"][0]["primitives"]])
            a_g = np.asarray(envfx.core.bend_engines.ENGINES["GODOT"][0], np.float64)
            rest_g = {tuple(p) for p in np.round(rest @ a_g.T, 2)}
            assert len(pos) >= len(api.mesh(obj).vertices)
            assert all(tuple(p) in rest_g for p in np.round(pos.astype(np.float64), 2))
        else:
            assert_fbx_proxy(load_helper, tmp_path / meta["mesh"], rest, meta, atol=1e-6 * size)


def test_operator_bakes_the_selection_with_the_scene_settings(vat, tmp_path):
    obj = armature_mesh()
    s = api.envfx().vat
    s.frame_start, s.frame_end, s.step = 1, 10, 1
    s.encoding = "PNG16"
    s.engine = "GODOT"
    s.output_dir = str(tmp_path)
    for o in api.view_layer().objects:
        o.select_set(o == obj)
    assert api.ops.vat_bake() == {"FINISHED"}
    assert sorted(os.listdir(tmp_path)) == ["Arm_vat.gdshader", "Arm_vat.glb", "Arm_vat.json", "Arm_vat_nrm.png",
                                            "Arm_vat_pos.png", "envfx_vat.gdshaderinc"]
    # a second bake replaces the proxy (one object, not Arm_VAT.001) and the files of the first
    s.encoding = "EXR32"
    assert api.ops.vat_bake() == {"FINISHED"}
    assert sorted(os.listdir(tmp_path)) == ["Arm_vat.gdshader", "Arm_vat.glb", "Arm_vat.json", "Arm_vat_nrm.exr",
                                            "Arm_vat_pos.exr", "envfx_vat.gdshaderinc"]
    assert [o.name for o in bpy.data.objects if o.name.startswith("Arm_VAT")] == ["Arm_VAT"]
    assert [m.name for m in bpy.data.meshes if m.name.startswith("Arm_VAT")] == ["Arm_VAT"]


def read_glb(path):
    data = open(path, "rb").read()
    length = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + length])
    binary = data[20 + length + 8:]

    def accessor(i):
        acc = doc["accessors"][i]
        view = doc["bufferViews"][acc["bufferView"]]
        comps = {"VEC2": 2, "VEC3": 3}[acc["type"]]
        start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
        return np.frombuffer(binary, np.float32, acc["count"] * comps, start).reshape(-1, comps)
    return doc, accessor


def test_gltf_proxy_holds_the_rest_pose_in_godot_axes_and_the_vat_uvs(vat, tmp_path):
    obj = armature_mesh()
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path),
                              vat.ops.VatOptions(frame_start=1, frame_end=10, engine="GODOT"))
    meta = result.meta["Arm"]
    doc, accessor = read_glb(tmp_path / meta["mesh"])
    prim = doc["meshes"][0]["primitives"][0]
    uv_key = f"TEXCOORD_{meta['uv']['index']}"
    assert uv_key in prim["attributes"], prim["attributes"]
    pos = accessor(prim["attributes"]["POSITION"])
    uv = accessor(prim["attributes"][uv_key])
    rest = vat.bridge.get_positions(api.mesh(obj))
    lay = meta["layout"]
    # glTF's v runs from the top: the vertex's texel of frame 0 is (u * width, v * height) from the top-left
    x = np.floor(uv[:, 0] * lay["width"]).astype(int)
    row = np.floor(uv[:, 1] * lay["height"]).astype(int)
    index = row * lay["width"] + x
    assert np.allclose(pos, vat.core.to_engine(rest[index], "GODOT"), atol=1e-5)


# --- bad input ----------------------------------------------------------------------------------------------

def unchanged(tmp_path, names_before, frame=1):
    assert sorted(o.name for o in bpy.data.objects) == names_before
    assert api.scene().frame_current == frame
    assert not tmp_path.exists() or os.listdir(tmp_path) == []


def encoder_threads():
    return [t for t in threading.enumerate() if t.name.startswith("envfx-vat-encoder")]


@pytest.mark.parametrize("on_thread", [True, False])
def test_an_error_in_the_encoder_leaves_nothing_behind(vat, tmp_path, on_thread, monkeypatch):
    """A half-float texture cannot hold offsets beyond 65504: the encoder (on its thread, while the proxy is made;
    or on the main thread) refuses, and the bake is undone: no files, no proxy, no thread left."""
    monkeypatch.setattr(vat.ops, "ENCODE_ON_THREAD", on_thread)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4)
    obj = api.active()
    obj.name = "Far"
    obj.shape_key_add(name="Basis")
    far = obj.shape_key_add(name="Far")
    for point in far.data:
        api.of(bpy.types.ShapeKeyPoint, point).co.z = 1e5
    for frame, value in ((1, 0.0), (6, 1.0)):
        far.value = value
        far.keyframe_insert("value", frame=frame)
    api.scene().frame_set(2)
    before = sorted(o.name for o in bpy.data.objects)
    meshes = len(bpy.data.meshes)
    with pytest.raises(vat.ops.VatInputError, match=r"^Far: A value of .* beyond what a half float holds .* EXR32"):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"),
                         vat.ops.VatOptions(1, 6, encoding="EXR16", engine="GODOT"))
    unchanged(tmp_path / "out", before, frame=2)
    assert len(bpy.data.meshes) == meshes
    assert encoder_threads() == []


@pytest.mark.parametrize("engine", ["GODOT", "UNITY"])  # glTF, FBX
def test_the_encoder_thread_is_idle_whenever_blender_runs_more_than_a_frame_change(vat, tmp_path, monkeypatch,
                                                                                   engine):
    """Blender's Python API is not thread-safe, and Blender lets other Python threads run in the middle of a scene
    switch (the glTF exporter's; 4.2 crashed there now and then while the encoder thread wrote a file): the encoder
    works only beside a frame change. At every step the job hands back to Blender (the modal operator's event loop)
    and while the exporter runs, no encoder task is running or waiting; every frame was still encoded, each during
    the next frame change (a slowed encoder makes a task left running show)."""
    add = Slowed(monkeypatch, vat.core.VatEncoder, "add", 0.005)
    threads = []

    class Recording(vat.ops._EncoderThread):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            threads.append(self)

    monkeypatch.setattr(vat.ops, "_EncoderThread", Recording)

    def busy():
        (thread,) = threads
        # (a frame held back for the next frame change is not on the thread yet)
        return add.running > 0 or not all(f.done() for f in thread.pending)

    exports = []
    export = vat.ops._export_proxy

    def checked_export(*args):
        exports.append(busy())
        return export(*args)

    monkeypatch.setattr(vat.ops, "_export_proxy", checked_export)
    obj = armature_mesh()
    at_yields, result = step(vat.ops.bake_vat_job(api.scene(), [obj], str(tmp_path / "out"),
                                                  vat.ops.VatOptions(1, 10, engine=engine, loop_frames=9)), busy)
    assert at_yields == [False] * (9 + 1 + 1)  # nine frames, the loop's frame after, one object
    assert exports == [False]
    assert len(add.calls) == 9 and threads[0].busy["encode"] > 0.005 * 9
    assert_round_trip(vat, obj, result, range(1, 10))


def test_topology_change_is_refused_naming_the_frame(vat, tmp_path):
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1)
    obj = api.active()
    build = api.of(bpy.types.BuildModifier, obj.modifiers.new("Build", "BUILD"))
    build.frame_start, build.frame_duration = 1, 10
    api.scene().frame_set(2)
    before = sorted(o.name for o in bpy.data.objects)
    with pytest.raises(vat.ops.VatInputError, match=r"topology changes at frame 5 .*faces .* since frame 3"):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(3, 12, step=2))
    unchanged(tmp_path / "out", before, frame=2)
    assert vat.nodes.GROUP_NAME not in bpy.data.node_groups
    assert len(bpy.data.meshes) == len({o.data for o in bpy.data.objects if o.type == "MESH"})


@pytest.mark.parametrize("opts, words", [
    (dict(frame_start=3, frame_end=3), "single frame"),
    (dict(frame_start=1, frame_end=10, max_size=8), "at most 4 frames .* raise the Maximum Texture Size"),
    (dict(frame_start=1, frame_end=10, encoding="EXR16", normals="PACKED"), "Packed normals need"),
])
def test_bad_settings_are_refused_before_any_work(vat, tmp_path, opts, words):
    obj = armature_mesh()
    before = sorted(o.name for o in bpy.data.objects)
    with pytest.raises(vat.ops.VatInputError, match=words):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(**opts))
    unchanged(tmp_path / "out", before)


def test_static_mesh_is_baked_with_a_warning_and_non_meshes_are_skipped(vat, tmp_path):
    cube, camera = bpy.data.objects["Cube"], bpy.data.objects["Camera"]
    result = vat.ops.bake_vat(api.scene(), [cube, camera], str(tmp_path), vat.ops.VatOptions(1, 5))
    assert any("static" in w for w in result.warnings)
    assert "not a mesh" in result.skipped["Camera"]
    with pytest.raises(vat.ops.VatInputError, match="camera object, not a mesh"):
        vat.ops.bake_vat(api.scene(), [camera], str(tmp_path), vat.ops.VatOptions(1, 5))
    empty = bpy.data.objects.new("Marker", None)
    instance = bpy.data.objects.new("Forest", None)
    instance.instance_type = "COLLECTION"
    instance.instance_collection = bpy.data.collections.new("Trees")
    with pytest.raises(vat.ops.VatInputError, match=r"Marker \(an empty object, not a mesh: convert.*Forest \(an "
                                                    r"instance of collection 'Trees', not a mesh: make its objects "
                                                    r"real \(Object > Apply > Make Instances Real\)"):
        vat.ops.bake_vat(api.scene(), [empty, instance], str(tmp_path), vat.ops.VatOptions(1, 5))


def test_a_prop_in_rigid_sway_is_named_as_moving_by_its_transform(vat, envfx, tmp_path):
    """A prop in rigid sway moves by its delta rotation, not its mesh: the VAT of its mesh holds one pose and the
    warning says why and what a game takes instead."""
    cube = bpy.data.objects["Cube"]
    api.envfx(cube).wind.rigid = True
    envfx.operators.wind.add_wind(api.scene(), [cube])
    result = vat.ops.bake_vat(api.scene(), [cube], str(tmp_path), vat.ops.VatOptions(1, 5))
    assert any("Rigid Sway" in w and "Export for Game Engines" in w for w in result.warnings), result.warnings


def test_an_object_in_the_wind_on_the_gpu_is_named_as_moving_in_its_materials(vat, envfx, tmp_path):
    """Wind on GPU moves the object where it is drawn, not its mesh: the VAT of its mesh holds one pose and the
    warning says why and how to bake its wind."""
    cube = bpy.data.objects["Cube"]
    if not api.mesh(cube).materials:
        api.mesh(cube).materials.append(bpy.data.materials.new("Cube"))
    api.envfx(cube).wind.gpu = True
    envfx.operators.wind.bake(api.scene(), [cube])
    envfx.operators.wind.add_wind(api.scene(), [cube])
    result = vat.ops.bake_vat(api.scene(), [cube], str(tmp_path), vat.ops.VatOptions(1, 5))
    assert any("Wind on GPU" in w and "Add Wind again" in w for w in result.warnings), result.warnings


def test_png16_for_godot_bakes_with_a_warning_that_godot_reads_8_bits(vat, tmp_path, recording_layout, envfx):
    """Godot 4's PNG import converts 16-bit PNGs to 8 bits: a PNG16 bake for Godot is written (the files are right)
    and says so, as the panel does under the settings; EXR for Godot, or PNG16 for another engine, says nothing."""
    obj = armature_mesh()
    got = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "a"), vat.ops.VatOptions(1, 5, encoding="PNG16",
                                                                                          engine="GODOT"))
    assert [w for w in got.warnings if "Godot" in w] == [vat.core.GODOT_PNG16]
    assert "8 bits" in vat.core.GODOT_PNG16 and "bake EXR32 or EXR16 for Godot" in vat.core.GODOT_PNG16
    for encoding, engine in (("EXR32", "GODOT"), ("PNG16", "UNITY")):
        other = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / encoding), vat.ops.VatOptions(
            1, 5, encoding=encoding, engine=engine))
        assert not [w for w in other.warnings if "Godot" in w]
    s = api.envfx().vat
    for encoding, shown in (("PNG16", True), ("EXR32", False)):
        s.encoding, s.engine = encoding, "GODOT"
        layout = recording_layout()
        panel = types.SimpleNamespace(layout=layout)
        envfx.panels.vat.VIEW3D_PT_envfx_vat.draw(panel, types.SimpleNamespace(scene=api.scene(),
                                                                              selected_objects=[obj]))
        assert ("label:Godot reads 16-bit PNGs as 8 bits: bake EXR" in layout.log) == shown


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the library is found in Linux's process maps")
def test_png16_checksums_with_blenders_libdeflate_and_writes_the_bytes_zlib_does(vat, envfx, tmp_path, monkeypatch):
    """In Blender on Linux (4.2 and 5.0) a PNG16 bake's Adler-32 is libdeflate's, from Blender's OpenEXR library
    (core.png.fast_adler32), its CRC-32 the system's libdeflate's where there is one (core.png.fast_crc32), and the
    files equal those of a bake that sums with zlib."""
    png = importlib.import_module(envfx.__name__ + ".core.png")
    monkeypatch.setattr(png, "_ADLER32", [])
    fast = png.fast_adler32()
    assert fast is not None, "libdeflate_adler32 was not found in Blender's libOpenEXRCore"
    assert png._agrees_with_zlib(fast)
    crc = png.fast_crc32()
    assert crc is None or png._agrees_with_zlib(crc, "crc32")
    obj = armature_mesh()
    files = {}
    for name, used in (("fast", (fast, crc)), ("zlib", (None, None))):
        monkeypatch.setattr(png, "_ADLER32", [used[0]])
        monkeypatch.setattr(png, "_CRC32", [used[1]])
        result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / name), vat.ops.VatOptions(
            1, 6, encoding="PNG16", engine="UNITY", export_mesh=False))
        files[name] = {os.path.basename(p): open(p, "rb").read() for p in result.files if p.endswith(".png")}
    assert len(files["fast"]) == 2 and files["fast"] == files["zlib"]


@pytest.mark.parametrize("cut", [None, 216, "half"])
def test_a_file_whose_vat_texture_was_cut_short_opens_with_its_player_off(vat, tmp_path, cut):
    """A proxy's position texture cut short (in its header: Blender 4.2 never finished opening the file; in its
    pixels) turns the proxy's player off as the file opens (operators.common.guard_damaged_images), naming the
    proxy, the file, why and what to do; the image keeps its file, the file on disk is left as it is, the armature's
    mesh keeps its modifiers, and baking again brings the player back. Whole textures change nothing."""
    obj = armature_mesh()
    vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 6, export_mesh=False))
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    texture = tmp_path / "out" / "Arm_vat_pos.exr"
    size = texture.stat().st_size
    if cut is not None:
        data = texture.read_bytes()
        texture.write_bytes(data[:cut if cut != "half" else size // 2])
    kept = texture.read_bytes()
    code, state, output = fresh_open.open_in_fresh_process(blend, 6)
    assert code == 0 and state is not None, output[-3000:]
    assert texture.read_bytes() == kept  # (the file is not touched)
    assert state["modifiers"]["Arm"] == [["Armature", True, True]]
    assert state["images"]["Arm_vat_pos.exr"].endswith("Arm_vat_pos.exr")
    if cut is None:
        assert state["damaged"] == state["turned_off"] == {} and state["modifiers"]["Arm_VAT"][0][1:] == [True, True]
        assert state["top"]["Arm_VAT"] > 2.0 + 1e-3  # (the player plays: the bent cylinder, not the rest pose's 2.0)
        return
    assert state["modifiers"]["Arm_VAT"][0][1:] == [False, False]
    assert state["turned_off"] == {"Arm_VAT": [state["modifiers"]["Arm_VAT"][0][0]]}
    [message] = state["damaged"]["Arm_VAT"]
    assert str(texture) in message and "damaged" in message and "Bake again" in message
    assert ("header is cut short" in message) == (cut == 216)
    assert f"EnvFX: {message}" in output
    code, state, output = fresh_open.open_in_fresh_process(blend, 6, "vat", "Arm", str(tmp_path / "out"))
    assert code == 0 and state is not None, output[-3000:]
    assert state["modifiers"]["Arm_VAT"][0][1:] == [True, True] and state["top"]["Arm_VAT"] > 2.0 + 1e-3


def test_a_corpus_tree_whose_one_texture_was_cut_short_opens_with_that_player_off(vat, envfx, tmp_path,
                                                                                  corpus_asset):
    """A real tree of the corpus (several objects, an unapplied centimetre scale) baked in the wind, one object's
    position texture cut short after the file was saved: as the file opens only that object's player is turned
    off, named with its file; the other proxies play and every object keeps its wind."""
    scene = api.scene()
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    api.envfx(scene).wind.ao_samples = 0
    objects = corpus_asset("ez_aspen_small_single")
    assert len(objects) > 1
    envfx.operators.wind.bake(scene, objects)
    envfx.operators.wind.add_wind(scene, objects)
    result = vat.ops.bake_vat(scene, objects, str(tmp_path / "out"), vat.ops.VatOptions(1, 4, export_mesh=False))
    names = sorted(o.name for o in objects)
    blend = tmp_path / "tree.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    damaged = names[0]
    texture = tmp_path / "out" / result.meta[damaged]["textures"]["position"]["file"]
    texture.write_bytes(texture.read_bytes()[:216])
    code, state, output = fresh_open.open_in_fresh_process(blend, 3)
    assert code == 0 and state is not None, output[-3000:]
    assert list(state["damaged"]) == [damaged + "_VAT"] and str(texture) in state["damaged"][damaged + "_VAT"][0]
    for name in names:
        assert all(on for _, on, _ in state["modifiers"][name])  # (their wind)
        assert state["modifiers"][name + "_VAT"][0][1:] == ([False, False] if name == damaged else [True, True])


def test_the_vat_panel_names_a_selected_proxy_whose_player_was_turned_off(vat, envfx, recording_layout,
                                                                          monkeypatch):
    """The panel names a selected object while a modifier the load check turned off is still off; not once it is
    back on (whatever other modifier of the object is off), nor for an object the check did not touch."""
    common = importlib.import_module(envfx.__name__ + ".operators.common")
    obj = armature_mesh()
    extra = obj.modifiers.new("Other", "SUBSURF")
    monkeypatch.setattr(common, "TURNED_OFF", {obj.name: {obj.modifiers[0].name}})
    for turned_off, on, other_on, named in ((True, False, True, True), (True, True, True, False),
                                            (True, True, False, False), (False, False, False, False)):
        if not turned_off:
            monkeypatch.setattr(common, "TURNED_OFF", {})
        obj.modifiers[0].show_viewport, extra.show_viewport = on, other_on
        layout = recording_layout()
        envfx.panels.vat.VIEW3D_PT_envfx_vat.draw(types.SimpleNamespace(layout=layout),
                                                  types.SimpleNamespace(scene=api.scene(), selected_objects=[obj]))
        assert (f"label:{obj.name}: a texture is damaged, its player is off: bake again" in layout.log) == named


def test_a_proxy_whose_textures_are_gone_is_named_on_load_and_in_the_panel(vat, envfx, recording_layout, tmp_path,
                                                                           capfd):
    """Textures deleted or moved after the bake: Blender plays nothing from them and says nothing. As the file
    opens, the console names the proxy and the files; the panel names the selected proxy until it plays again."""
    obj = armature_mesh(name="Flag")
    out = tmp_path / "vat"
    vat.ops.bake_vat(api.scene(), [obj], str(out), vat.ops.VatOptions(1, 10))
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))

    def panel_log():
        layout = recording_layout()
        envfx.panels.vat.VIEW3D_PT_envfx_vat.draw(types.SimpleNamespace(layout=layout), types.SimpleNamespace(
            scene=api.scene(), selected_objects=[bpy.data.objects["Flag_VAT"], bpy.data.objects["Flag"]]))
        return layout.log

    assert not any("not on disk" in line for line in panel_log())
    shutil.move(str(out), str(tmp_path / "elsewhere"))
    capfd.readouterr()
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    printed = capfd.readouterr().out
    assert f"EnvFX: Flag_VAT: 2 of the textures it plays are not on disk ({out / 'Flag_vat_pos.exr'}" in printed
    assert [line for line in panel_log() if "not on disk" in line] == [
        "label:Flag_VAT: its textures are not on disk: bake again"]
    shutil.move(str(tmp_path / "elsewhere"), str(out))
    assert not any("not on disk" in line for line in panel_log())


def test_unwritable_folder_is_refused(vat):
    obj = armature_mesh()
    before = sorted(o.name for o in bpy.data.objects)
    with pytest.raises(vat.ops.VatInputError, match="cannot be written|cannot be made|choose"):
        vat.ops.bake_vat(api.scene(), [obj], "/proc/envfx-vat", vat.ops.VatOptions(1, 10))
    assert sorted(o.name for o in bpy.data.objects) == before


def test_names_file_systems_reject_are_sanitised(vat, tmp_path):
    obj = armature_mesh(name='Tree: "big"/01*')
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), vat.ops.VatOptions(1, 10))
    assert sorted(os.listdir(tmp_path)) == ["Tree_big_01_vat.json", "Tree_big_01_vat_nrm.exr",
                                            "Tree_big_01_vat_pos.exr"]
    assert result.proxies == ['Tree: "big"/01*_VAT']


def test_another_object_s_bake_under_the_same_file_name_is_not_written_over(vat, tmp_path):
    """``Tree:1`` and ``Tree_1`` make the same file names: baked one after the other into one folder, the second
    gets files of its own (and says so), and each proxy plays its own object's bake; baking either again writes
    over its own files only."""
    first = armature_mesh(name="Tree:1")
    vat.ops.bake_vat(api.scene(), [first], str(tmp_path), vat.ops.VatOptions(1, 10))
    second = armature_mesh(name="Tree_1")
    second.rotation_euler.x = 0.5  # (not the same motion in the world: each proxy follows its own)
    api.scene().frame_set(1)
    bone = api.of(bpy.types.Pose, bpy.data.objects["Tree_1Rig"].pose).bones["Bone"]
    bone.rotation_euler = (-0.9, 0.0, 0.0)
    bone.keyframe_insert("rotation_euler", frame=10)
    result = vat.ops.bake_vat(api.scene(), [second], str(tmp_path), vat.ops.VatOptions(1, 10))
    assert result.warnings == ["Tree_1: its files are named Tree_1_2_vat_* (Tree_1_vat_* is another object's)"]
    assert sorted(os.listdir(tmp_path)) == sorted(f"{stem}_vat{end}" for stem in ("Tree_1", "Tree_1_2")
                                                  for end in (".json", "_nrm.exr", "_pos.exr"))
    assert result.removed == []
    for obj, stem in ((first, "Tree_1"), (second, "Tree_1_2")):  # each proxy plays its own object's bake
        meta = json.loads((tmp_path / f"{stem}_vat.json").read_text())
        assert meta["object"] == obj.name
        assert_round_trip(vat, obj, types.SimpleNamespace(meta={obj.name: meta}), [1, 5, 10])
    again = vat.ops.bake_vat(api.scene(), [first], str(tmp_path), vat.ops.VatOptions(1, 10))
    assert again.warnings == [] and len(os.listdir(tmp_path)) == 6
    assert json.loads((tmp_path / "Tree_1_vat.json").read_text())["object"] == "Tree:1"
    assert json.loads((tmp_path / "Tree_1_2_vat.json").read_text())["object"] == "Tree_1"


def test_a_bake_after_the_object_was_renamed_replaces_its_proxy_and_a_copy_gets_its_own(vat, tmp_path):
    """The proxy records its object: baking the object again after renaming it replaces its proxy (one proxy plays
    it, under its new name), where a copy of the object (Shift D keeps its custom properties) baked gets a proxy of
    its own and leaves the original's alone."""
    obj = armature_mesh(name="Circle.015")
    vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), vat.ops.VatOptions(1, 10))
    obj.name = "Flower"
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), vat.ops.VatOptions(1, 10))
    proxies = sorted(o.name for o in bpy.data.objects if o.get(vat.ops.PROXY_TAG) is not None)
    assert proxies == ["Flower_VAT"] and result.proxies == ["Flower_VAT"]
    assert vat.ops.find_proxy("Flower") == bpy.data.objects["Flower_VAT"]
    assert_round_trip(vat, obj, result, [1, 5, 10])
    copy = obj.copy()
    copy.name = "Flower copy"
    api.scene().collection.objects.link(copy)
    vat.ops.bake_vat(api.scene(), [copy], str(tmp_path), vat.ops.VatOptions(1, 10))
    proxies = sorted(o.name for o in bpy.data.objects if o.get(vat.ops.PROXY_TAG) is not None)
    assert proxies == ["Flower copy_VAT", "Flower_VAT"]
    assert vat.ops.find_proxy("Flower") == bpy.data.objects["Flower_VAT"]
    assert vat.ops.find_proxy("Flower copy") == bpy.data.objects["Flower copy_VAT"]
    obj.name = "Rose"  # the original renamed again: its own proxy is replaced, the copy's stays
    vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), vat.ops.VatOptions(1, 10))
    proxies = sorted(o.name for o in bpy.data.objects if o.get(vat.ops.PROXY_TAG) is not None)
    assert proxies == ["Flower copy_VAT", "Rose_VAT"]


def test_a_name_too_long_for_its_proxy_s_gets_a_proxy_that_plays_and_is_replaced(vat, tmp_path):
    """Blender cuts names at 63 bytes (255 from 5.0): an object whose name leaves no room for ``_VAT`` gets a proxy
    named from its name shortened by whole characters, which plays its bake; baking again replaces it, and a
    second long name alike gets a proxy of its own."""
    room = 255 if bpy.app.version >= (5, 0, 0) else 63
    long = "木" * ((room - 2) // 3)  # 3 bytes a character: no room for "_VAT"
    obj = armature_mesh(name=long)
    assert obj.name == long
    for _ in range(2):
        result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), vat.ops.VatOptions(1, 10))
        proxies = [o for o in bpy.data.objects if o.get(vat.ops.PROXY_TAG) == long]
        assert len(proxies) == 1 and result.proxies == [proxies[0].name]
        assert proxies[0].name.endswith("_VAT") and len(proxies[0].name.encode()) <= room
        assert_round_trip(vat, obj, result, [1, 5, 10])
    other = armature_mesh(name=long[:-1] + "a")  # the same proxy name once shortened
    result = vat.ops.bake_vat(api.scene(), [other], str(tmp_path), vat.ops.VatOptions(1, 10))
    assert vat.ops.find_proxy(other.name) not in (None, vat.ops.find_proxy(long))
    assert_round_trip(vat, other, result, [1, 10])
    assert vat.ops.find_proxy(long).get(vat.ops.PROXY_TAG) == long


def test_an_object_blender_does_not_evaluate_is_refused_naming_it(vat, tmp_path):
    """An object disabled in viewports, or in an excluded or disabled collection, is not evaluated: its
    modifiers never run, so its bake would hold a still mesh. It is refused, saying how to turn it on; an object
    only hidden (the eye) is evaluated and bakes."""
    obj = armature_mesh(name="Off")
    obj.hide_viewport = True
    before = sorted(o.name for o in bpy.data.objects)
    with pytest.raises(vat.ops.VatInputError, match=r"Off is not evaluated in view layer .*: enable it in viewports"):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 10))
    unchanged(tmp_path / "out", before)
    obj.hide_viewport = False
    collection = bpy.data.collections.new("Shelf")
    api.scene().collection.children.link(collection)
    for c in obj.users_collection:
        c.objects.unlink(obj)
    collection.objects.link(obj)
    api.view_layer().layer_collection.children["Shelf"].exclude = True
    with pytest.raises(vat.ops.VatInputError, match=r"Off is not evaluated"):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 10))
    api.view_layer().layer_collection.children["Shelf"].exclude = False
    collection.hide_viewport = True
    with pytest.raises(vat.ops.VatInputError, match=r"Off is not evaluated"):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 10))
    unchanged(tmp_path / "out", before)
    collection.hide_viewport = False
    obj.hide_set(True)
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 10))
    assert result.meta["Off"]["bounds"]["max_offset"] > 0.1
    assert_round_trip(vat, obj, result, [1, 10])
    # another scene's object, which no window shows (its view layer not evaluated yet): the same rules
    other = bpy.data.scenes.new("Other")
    mesh = bpy.data.meshes.new("Grid")
    mesh.from_pydata([(x, y, 0.0) for y in range(4) for x in range(4)], [],
                     [(i, i + 1, i + 5, i + 4) for i in range(11) if i % 4 != 3])
    grid = bpy.data.objects.new("Grid", mesh)
    shelf = bpy.data.collections.new("OtherShelf")
    other.collection.children.link(shelf)
    shelf.objects.link(grid)
    grid.modifiers.new("Wave", "WAVE")
    shelf.hide_viewport = True
    with pytest.raises(vat.ops.VatInputError, match=r"Grid is not evaluated in view layer"):
        vat.ops.bake_vat(other, [grid], str(tmp_path / "other"), vat.ops.VatOptions(1, 10))
    shelf.hide_viewport = False
    result = vat.ops.bake_vat(other, [grid], str(tmp_path / "other"), vat.ops.VatOptions(1, 10))
    assert result.meta["Grid"]["bounds"]["max_offset"] > 0.1


@pytest.mark.parametrize("faces", [True, False])
def test_vertices_in_no_face_are_played_too(vat, tmp_path, faces):
    """A loose vertex and a loose edge beside faces, or a mesh of loose vertices and edges only: no face corner
    holds their texel's UV, so the player reads it from the point attribute the proxy holds beside its UV map."""
    verts = [(x * 0.5, y * 0.5, 0.0) for y in range(4) for x in range(4)]
    quads = [(i, i + 1, i + 5, i + 4) for i in range(11) if i % 4 != 3] if faces else []
    mesh = bpy.data.meshes.new("Loose")
    mesh.from_pydata(verts + [(3.0, 0.0, 0.0), (3.0, 1.0, 0.0), (3.0, 2.0, 0.5)], [(17, 18)], quads)
    obj = bpy.data.objects.new("Loose", mesh)
    api.scene().collection.objects.link(obj)
    wave = api.of(bpy.types.WaveModifier, obj.modifiers.new("Wave", "WAVE"))
    wave.height, wave.width, wave.speed = 0.4, 0.8, 0.3
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path), vat.ops.VatOptions(1, 12, normals="NONE"))
    assert result.meta["Loose"]["vertex_count"] == 19
    assert_round_trip(vat, obj, result, [1, 4, 9, 12])
    # a proxy made before the point attribute existed plays through its UV map: its faces' vertices as before
    if faces:
        proxy = vat.ops.find_proxy("Loose")
        api.mesh(proxy).attributes.remove(api.mesh(proxy).attributes[vat.nodes.TEXEL_ATTR])
        api.scene().frame_set(9)
        want, _, _ = evaluated(vat, obj)
        got, _, _ = evaluated(vat, proxy)
        assert np.abs(got[:16] - want[:16]).max() < 1e-5 and np.abs(got[16:] - want[16:]).max() > 1e-3


def test_the_proxy_follows_an_object_that_moves_by_its_transform(vat, tmp_path):
    """An object carried by an animated parent (or its own keys) moves in the world by its transform, which a VAT
    of its mesh does not hold: its proxy follows the object, so the two stay together in the world at every
    frame, and moved aside by hand it keeps the offset; the bake says what a game needs besides."""
    obj = armature_mesh(name="Rider")
    cart = bpy.data.objects.new("Cart", None)
    api.scene().collection.objects.link(cart)
    obj.parent = cart
    for frame, x in ((1, 0.0), (10, 5.0)):
        cart.location.x = x
        cart.keyframe_insert("location", frame=frame)
    still = bpy.data.objects.new("Crate", api.mesh(bpy.data.objects["Cube"]).copy())
    api.scene().collection.objects.link(still)
    for frame, z in ((1, 0.0), (10, 2.0)):
        still.location.z = z
        still.keyframe_insert("location", frame=frame)
    api.scene().frame_set(4)
    result = vat.ops.bake_vat(api.scene(), [obj, still], str(tmp_path), vat.ops.VatOptions(1, 10))
    assert "Rider: the VAT holds its mesh's motion in object space; besides, it moves by its transform" in \
        "\n".join(result.warnings)
    assert "Crate: its mesh does not move over frames 1 to 10: it moves by its transform (its keys, a parent or " \
        "constraints), which a VAT of its mesh does not hold: the proxy follows Crate" in "\n".join(result.warnings)
    proxy = vat.ops.find_proxy("Rider")

    def world(o):
        pos, _, _ = evaluated(vat, o)
        m = np.array(o.evaluated_get(bpy.context.evaluated_depsgraph_get()).matrix_world)
        return pos @ m[:3, :3].T + m[:3, 3]

    for frame in (1, 4, 7, 10):
        api.scene().frame_set(frame)
        assert np.abs(world(proxy) - world(obj)).max() < 1e-5, frame
    proxy.location.y += 3.0  # moved aside: the offset stays as the object moves
    for frame in (1, 10):
        api.scene().frame_set(frame)
        offset = world(proxy) - world(obj)
        assert np.abs(offset - offset[0]).max() < 1e-5 and abs(np.linalg.norm(offset[0]) - 3.0) < 1e-4


def test_a_proxy_saved_by_an_older_envfx_plays_after_its_player_is_rebuilt(vat, tmp_path):
    """A file saved with an older player group (stamp vat-player-1, proxies without the texel attribute): as it
    opens the group is rebuilt in place, which gives its inputs new identifiers; each proxy's values (its images,
    frames, remap...) are carried over by input name, so it plays as before."""
    obj = armature_mesh(name="Old")
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "vat"), vat.ops.VatOptions(1, 10, step=3))
    proxy = vat.ops.find_proxy("Old")
    api.mesh(proxy).attributes.remove(api.mesh(proxy).attributes[vat.nodes.TEXEL_ATTR])
    group = bpy.data.node_groups[vat.nodes.GROUP_NAME]
    group["envfx_stamp"] = "vat-player-1"
    old_ids = [i.identifier for i in group.interface.items_tree]
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "old.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "old.blend"))
    group = bpy.data.node_groups[vat.nodes.GROUP_NAME]
    assert group["envfx_stamp"] == f"vat-player-{vat.nodes.VERSION}"
    assert [i.identifier for i in group.interface.items_tree] != old_ids  # (rebuilt: new identifiers)
    assert_round_trip(vat, bpy.data.objects["Old"], result, [1, 4, 7, 10])


def test_an_extra_attribute_named_as_the_bake_s_own_textures_is_refused(vat, tmp_path):
    obj = armature_mesh(name="A")
    api.mesh(obj).attributes.new("normal", "FLOAT_VECTOR", "POINT")
    with pytest.raises(vat.ops.VatInputError, match=r"named 'normal' would take the place"):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 10, attributes=("normal",)))
    assert not (tmp_path / "out").exists()


def test_textures_beside_a_saved_file_are_found_by_a_relative_path(vat, tmp_path):
    """Baked into ``//vat`` beside a saved .blend, the proxy's images have paths relative to the file (Blender's
    Relative Paths preference, on by default): the project folder moves, and the proxy still plays."""
    obj = armature_mesh(name="Flag")
    project = tmp_path / "project"
    project.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(project / "scene.blend"))
    out = vat.ops.resolve_output_dir("//vat")
    result = vat.ops.bake_vat(api.scene(), [obj], out, vat.ops.VatOptions(1, 10))
    images = {i.name: i.filepath for i in bpy.data.images if i.source == "FILE"}
    assert images == {"Flag_vat_pos.exr": "//vat/Flag_vat_pos.exr", "Flag_vat_nrm.exr": "//vat/Flag_vat_nrm.exr"}
    vat.ops.bake_vat(api.scene(), [obj], out, vat.ops.VatOptions(1, 10))  # again: the same images
    assert {i.name: i.filepath for i in bpy.data.images if i.source == "FILE"} == images
    bpy.ops.wm.save_mainfile()
    moved = tmp_path / "moved"
    shutil.move(str(project), str(moved))
    bpy.ops.wm.open_mainfile(filepath=str(moved / "scene.blend"))
    obj = bpy.data.objects["Flag"]
    assert_round_trip(vat, obj, result, [1, 5, 10])


def test_a_vertex_that_is_not_a_number_is_refused_naming_the_object_vertex_and_frame(vat, tmp_path):
    """A shape key that puts a vertex at NaN from frame 4 (a broken import, a simulation that blew up): the bake
    stops there with a sentence naming the object, the vertex and the frame; a NaN in the mesh itself is named as
    the rest pose's. Nothing is written (a JSON holding NaN is no JSON), the scene is as it was."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4)
    obj = api.active()
    obj.name = "Broken"
    obj.modifiers.new("Wave", "WAVE")
    obj.shape_key_add(name="Basis")
    key = obj.shape_key_add(name="Blown")
    api.of(bpy.types.ShapeKeyPoint, key.data[6]).co.z = float("nan")
    key.value = 0.0
    key.keyframe_insert("value", frame=3)
    key.value = 1.0
    key.keyframe_insert("value", frame=4)
    api.scene().frame_set(1)
    before = sorted(o.name for o in bpy.data.objects)
    with pytest.raises(vat.ops.VatInputError, match=r"Broken: the position of vertex 6 is not a number \(NaN\) at "
                                                    r"frame 4: fix the mesh or what moves it"):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 8))
    unchanged(tmp_path / "out", before)
    obj.shape_key_clear()
    api.mesh(obj).vertices[2].co.x = float("nan")
    with pytest.raises(vat.ops.VatInputError, match=r"Broken: the rest position of vertex 2 is not a number"):
        vat.ops.bake_vat(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 8, encoding="PNG16"))
    unchanged(tmp_path / "out", before)


def test_operator_reports_bad_input_and_cancels(vat, tmp_path):
    s = api.envfx().vat
    s.output_dir = str(tmp_path)
    for o in api.view_layer().objects:
        o.select_set(o.name == "Camera")
    with pytest.raises(RuntimeError, match="not a mesh"):
        api.ops.vat_bake()
    assert os.listdir(tmp_path) == []


def test_bake_file_opens_a_blend_and_bakes_its_objects_by_name(vat, tmp_path):
    """What a command line does per file: open it, find the objects, bake; unknown names are refused first."""
    armature_mesh()
    path = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(app_template="")
    with pytest.raises(vat.ops.VatInputError, match="no object 'Nope'.*--objects"):
        vat.ops.bake_file(path, ["Arm", "Nope"], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    result = vat.ops.bake_file(path, ["Arm"], str(tmp_path / "out"), frames=(1, 10), step=3, encoding="png16",
                               engine="unity")
    assert result.meta["Arm"]["frames"] == 4 and result.meta["Arm"]["encoding"] == "PNG16"
    assert sorted(os.listdir(tmp_path / "out")) == ["Arm_VAT_Unity.md", "Arm_vat.fbx", "Arm_vat.json",
                                                    "Arm_vat_nrm.png", "Arm_vat_pos.png", "EnvFXVAT.hlsl"]


@pytest.mark.parametrize("steps", [3, 11])  # while evaluating frames; after the proxy was made
def test_cancel_leaves_nothing_behind(vat, tmp_path, steps):
    obj = armature_mesh()
    api.scene().frame_set(2)
    before = sorted(o.name for o in bpy.data.objects)
    meshes = len(bpy.data.meshes)
    job = vat.ops.bake_vat_job(api.scene(), [obj], str(tmp_path / "out"), vat.ops.VatOptions(1, 10))
    for _ in range(steps):
        next(job)
    job.close()
    unchanged(tmp_path / "out", before, frame=2)
    assert len(bpy.data.meshes) == meshes
    assert vat.nodes.GROUP_NAME not in bpy.data.node_groups
    assert encoder_threads() == []


def test_fbx_proxy_holds_the_rest_pose_and_the_vat_uvs(vat, tmp_path, load_helper):
    """The Unity/Unreal proxy: Blender's FBX exporter writes the rest pose (not the player's pose at the current
    frame) with Apply Transform, in the axes its GlobalSettings name, and the UV map EnvFX_VAT addresses each
    corner's vertex texel (V from the bottom, as FBX counts it)."""
    obj = armature_mesh()
    api.scene().frame_set(7)
    result = vat.ops.bake_vat(api.scene(), [obj], str(tmp_path),
                              vat.ops.VatOptions(frame_start=1, frame_end=10, engine="UNITY"))
    assert_fbx_proxy(load_helper, tmp_path / result.meta["Arm"]["mesh"],
                     vat.bridge.get_positions(api.mesh(obj)).astype(np.float64), result.meta["Arm"], atol=1e-4)


def assert_fbx_proxy(load_helper, path, rest, meta, atol):
    """The proxy's FBX, read back: its one mesh holds ``rest`` (in the axes its GlobalSettings name, at the
    exporter's unit scale, 1 or 100) within ``atol``, and its UV map EnvFX_VAT, at the index the JSON gives, addresses
    each corner's vertex texel (V from the bottom, as FBX counts it)."""
    fbx = load_helper("fbx_reader", "tests", "blender", "fbx_reader.py")
    root = fbx.read(str(path))
    (geometry,) = fbx.objects(root, "Geometry").values()
    in_file = fbx.vertices(geometry) @ fbx.to_z_up(root).T
    scale = np.abs(in_file).max() / np.abs(rest).max()
    assert min(abs(scale - 1.0), abs(scale - 100.0)) < 1e-3 * scale, scale
    scale = 1.0 if scale < 10 else 100.0
    np.testing.assert_allclose(in_file / scale, rest, rtol=0, atol=atol)
    corners = fbx.corner_vertices(geometry)
    uvs = fbx.layers(geometry, "LayerElementUV", "UV", "UVIndex", 2)
    assert list(uvs)[meta["uv"]["index"]] == "EnvFX_VAT"
    uv = uvs["EnvFX_VAT"]
    lay = meta["layout"]
    index = np.floor((1.0 - uv[:, 1]) * lay["height"]).astype(int) * lay["width"] + \
        np.floor(uv[:, 0] * lay["width"]).astype(int)
    assert np.array_equal(index, corners)


def test_envfx_vat_command_bakes_each_file_and_leaves_it_unchanged(vat, envfx, tmp_path, capsys):
    armature_mesh()
    path = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    before = os.path.getmtime(path)
    code = envfx.cli.main(["vat", path, "--objects", "Arm", "--out", str(tmp_path / "out"), "--frames", "1:10",
                           "--step", "3", "--encoding", "png16", "--engine", "unity"])
    out = capsys.readouterr()
    assert code == 0, out.err
    meta = json.loads((tmp_path / "out" / "Arm_vat.json").read_text())
    assert meta["frames"] == 4 and meta["encoding"] == "PNG16"
    assert os.path.getmtime(path) == before and "wrote 6 file(s)" in out.out


@pytest.mark.parametrize("args, message", [
    (["--objects", "Arm", "--frames", "10:1"], "the last frame must come after the first"),
    (["--objects", "Arm", "--frames", "x"], "give the first and last frame as A:B"),
    (["--objects", "Arm", "--step", "0"], "--step 0: use 1 or more"),
    (["--objects", "Arm", "--frames", "1:100", "--loop", "8"], "so the last frame would be ignored: give --frames 1:8"),
    (["--objects", " , "], "--objects is empty"),
    (["--objects", "Nope"], "no object 'Nope'"),
])
def test_envfx_vat_command_refuses_bad_input(vat, envfx, tmp_path, capsys, args, message):
    armature_mesh()
    path = str(tmp_path / "level.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    assert envfx.cli.main(["vat", path, "--out", str(tmp_path / "out"), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
