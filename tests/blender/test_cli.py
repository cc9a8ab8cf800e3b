"""`blender -c envfx ...`: the registered handler calls cli.main(argv); tested directly, and in a fresh process
where what lands on file descriptor 1 or file permissions matter."""

import argparse
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import bpy
import numpy as np
import pytest

from tests.blender import api

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# `blender -c envfx ARGS` in a fresh process: the add-on loaded as in conftest.py, argv[1] the checkout
RUNNER = """
import atexit, importlib, os, shutil, sys, tempfile
import bpy
import numpy as np
import addon_utils

repo = tempfile.mkdtemp(prefix="envfx-repo-")
atexit.register(shutil.rmtree, repo, True)
os.symlink(sys.argv[1], os.path.join(repo, "envfx"))
bpy.context.preferences.extensions.repos.new(name="EnvFX Dev", module="envfx_dev", custom_directory=repo,
                                             source="USER")
def _raise(exc):
    raise exc
addon_utils.enable("bl_ext.envfx_dev.envfx", default_set=True, handle_error=_raise)
code = importlib.import_module("bl_ext.envfx_dev.envfx.cli").main(sys.argv[2:])
sys.stdout.flush()
sys.exit(code)
"""


def run_cli(args, cwd, as_user=None):
    """The CLI in a fresh Python process (Blender as a module), as user id ``as_user`` when given:
    (exit code, stdout, stderr), each stream as the process wrote it to its file descriptor."""
    home = tempfile.mkdtemp(prefix="envfx-home-")
    cmd = [sys.executable, "-c", RUNNER, ROOT, *args]
    if as_user is not None:
        os.chown(home, as_user, as_user)
        cmd = ["setpriv", f"--reuid={as_user}", f"--regid={as_user}", "--clear-groups", *cmd]
    try:
        run = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, HOME=home), capture_output=True, text=True,
                             timeout=600)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return run.returncode, run.stdout, run.stderr


def digest(path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def truncated_copy(src, dst, size=3000):
    """A damaged .blend: the first ``size`` bytes of a saved one (0: an empty file)."""
    with open(src, "rb") as fh:
        data = fh.read(size)
    with open(dst, "wb") as fh:
        fh.write(data)
    return str(dst)


def snow_file(path):
    """A file with terrain "Ground" and the actor collection "Walkers" (a sphere walking over it)."""
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=6, y_subdivisions=6, size=6)
    api.active().name = "Ground"
    walkers = bpy.data.collections.new("Walkers")
    scene.collection.children.link(walkers)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(-2, 0, 0.5))
    walker = api.active()
    walker.name = "Walker"
    for coll in walker.users_collection:
        coll.objects.unlink(walker)
    walkers.objects.link(walker)
    for frame, x in ((1, -2.0), (4, 2.0)):
        walker.location.x = x
        walker.keyframe_insert("location", frame=frame)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return str(path)


def tree_file(envfx, path):
    """A file whose scene has one plant, "Tree" (trunk, branches, leaves), and nothing else."""
    shapes = importlib.import_module(envfx.__name__ + ".core.wind_shapes")
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    tree = shapes.make_tree(n_branches=2, leaves_per_branch=2)
    mesh = bpy.data.meshes.new("Tree")
    mesh.from_pydata([tuple(map(float, p)) for p in tree["positions"]], [tuple(map(int, e)) for e in tree["edges"]],
                     [tuple(map(int, f)) for f in tree["faces"]])
    api.scene().collection.objects.link(bpy.data.objects.new("Tree", mesh))
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return str(path)


@pytest.fixture
def scene_file(tmp_path):
    bpy.ops.wm.read_homefile(app_template="")
    cube = bpy.data.objects["Cube"]
    cube.location = (0.0, 12.0, 0.0)
    player = bpy.data.objects.new("Player", None)
    api.scene().collection.objects.link(player)
    path = str(tmp_path / "scene.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return path


def test_help_lists_the_commands(envfx, capsys):
    assert envfx.cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "blender -c envfx" in out and "bend" in out and "info" in out
    assert envfx.cli.main(["bend", "--help"]) == 0
    assert "--pivot" in capsys.readouterr().out


def test_no_command_prints_help_and_fails(envfx, capsys):
    assert envfx.cli.main([]) == 2
    assert "usage" in capsys.readouterr().out


def test_info(envfx, capsys):
    assert envfx.cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"EnvFX {envfx.cli.info.manifest()['version']}" in out
    assert "bend" in out and bpy.app.version_string in out


def test_info_describes_each_scene_of_each_file_and_changes_nothing(envfx, scene_file, tmp_path, capsys):
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube", "--pivot", "Player", "--mode", "CYLINDER"]) == 0
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    bpy.data.scenes.new("Level 2")
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    capsys.readouterr()
    with open(scene_file, "rb") as fh:
        before = fh.read()
    assert envfx.cli.main(["info", scene_file, "--json"]) == 0
    reports = {r["scene"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(reports) == {"Scene", "Level 2"}
    bend = reports["Scene"]["bend"]
    assert (bend["mode"], bend["pivot"], bend["objects"]) == ("CYLINDER", "Player", ["Cube"])
    assert reports["Level 2"]["bend"]["objects"] == [] and reports["Scene"]["file"] == scene_file
    assert reports["Scene"]["snow"] == {"meshes": [], "trails": [], "from_bake": [], "actors": None}
    assert envfx.cli.main(["info", scene_file]) == 0
    out = capsys.readouterr().out
    assert "bend: CYLINDER POS_Y, pivot Player" in out and "1 object(s) bent" in out and "'Level 2'" in out
    with open(scene_file, "rb") as fh:
        assert not (d := envfx.core.blendfile.differences(fh.read(), before)), d
    assert envfx.cli.main(["info", str(tmp_path / "nope.blend")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_info_json_is_strict_json_when_a_script_left_a_setting_at_nan(envfx, scene_file, capsys):
    """A file can hold NaN in a setting (saved before the settings refused it, or written straight into the ID
    property by a script); JSON has no NaN (strict parsers reject the line): it is null."""
    api.envfx(api.scene()).bend["horizon_offset"] = float("nan")
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    capsys.readouterr()
    assert envfx.cli.main(["info", scene_file, "--json"]) == 0

    def refuse(name):
        raise AssertionError(f"{name} is not JSON")

    report = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert report["bend"]["horizon_offset"] is None and report["bend"]["strength"] == pytest.approx(0.01)


def test_bend_adds_the_bend_and_saves(envfx, scene_file, tmp_path, capsys):
    out = str(tmp_path / "bent.blend")
    code = envfx.cli.main(["bend", scene_file, "--collection", "Collection", "--pivot", "Player", "--mode",
                           "PLANET", "--strength", "0.05", "--spread", "1", "-o", out])
    assert code == 0, capsys.readouterr()
    assert "skipped" in capsys.readouterr().out  # the light and the camera are named
    bpy.ops.wm.open_mainfile(filepath=out)
    s = api.envfx(api.scene()).bend
    assert (s.mode, s.pivot.name, round(s.strength, 6), s.spread) == ("PLANET", "Player", 0.05, 1.0)
    cube = bpy.data.objects["Cube"]
    assert [api.modifier_group(cube, m.name).name for m in cube.modifiers] == ["EnvFX Bend"]
    dg = bpy.context.evaluated_depsgraph_get()
    got = envfx.bridge.evaluated_positions(cube, dg)
    want = envfx.core.bend.forward_local(envfx.bridge.get_positions(cube.data),
                                         envfx.bridge.matrix_to_numpy(cube.matrix_world),
                                         envfx.shader_nodes.bend.params_from_scene(api.scene()))
    assert abs(got - want).max() < 1e-4


def test_bend_apply_bakes_into_the_mesh_in_place(envfx, scene_file):
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube", "--strength", "0.1", "--apply"]) == 0
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    cube = bpy.data.objects["Cube"]
    assert len(cube.modifiers) == 0
    assert envfx.bridge.get_positions(cube.data)[:, 2].min() < -5.0  # baked: the far end dropped


@pytest.mark.parametrize(
    "args,message",
    [
        (["bend", "/nonexistent/scene.blend"], "No such file"),
        (["bend", "{dir}/notes.txt"], "is not a .blend file"),
        (["bend", "{scene}", "--collection", "Nope"], "No collection named 'Nope'"),
        (["bend", "{scene}", "--objects", "Cube,Ghost"], "No object(s) named Ghost"),
        (["bend", "{scene}", "--pivot", "Ghost"], "No pivot object named 'Ghost'"),
        (["bend", "{scene}", "--spread", "-1"], "cannot be negative"),
        (["bend", "{scene}", "--strength", "1e9"], "enormous"),
        (["bend", "{scene}", "-o", "/nonexistent/dir/out.blend"], "does not exist"),
        (["bend", "{scene}", "--mode", "SPHERE"], "invalid choice"),
        (["bend", "{scene}", "--scene", "Level 9"], "No scene named 'Level 9'"),
        (["bend", "{scene}", "--export-engines", "{dir}/scene.blend/sub"], "choose a writable folder"),
        (["bend", "{scene}", "--export-engines", "{dir}/out", "--spread", "-2"], "cannot be negative"),
        # an empty pipeline variable is not "everything"
        (["bend", "{scene}", "--objects", ""], "--objects is empty: give comma-separated object names"),
        (["bend", "{scene}", "--objects", ",,"], "--objects is empty: give comma-separated object names"),
        (["bend", "{scene}", "--gpu", "--apply"], "--gpu bends objects in their materials: drop it with --apply"),
        (["bend", "{scene}", "--collection", "", "--remove"], "--collection is empty: give a name"),
        (["wind", "{scene}", "--objects", ""], "--objects is empty: give comma-separated object names"),
        (["wind", "{scene}", "--collection", " ", "--remove"], "--collection is empty: give a name"),
        (["snow", "{scene}", "--generate", "--objects", ""], "--objects is empty: give comma-separated object names"),
        # options that would be ignored are refused
        (["wind", "{scene}", "--remove", "--add"], "--remove only removes the live wind (no bake): drop --add"),
        (["wind", "{scene}", "--remove", "--rigid"], "--remove only removes the live wind (no bake): drop --rigid"),
        (["wind", "{scene}", "--rigid", "--ao-samples", "4", "--each"],
         "--rigid puts objects in the wind as rigid props, with no bake: drop --ao-samples, --each"),
        (["wind", "{scene}", "--remove", "--no-height-uv"], "--remove only removes the live wind (no bake): drop "
         "--no-height-uv"),
        (["wind", "{scene}", "--custom", "LEAF,LEAF_PHASE,BRANCH,AO"], "add --layout CUSTOM, or drop --custom"),
        (["bend", "{scene}", "--export-engines", "{dir}/out", "-o", "{dir}/copy.blend"],
         "--export-engines only writes the scene's bend for game engines (no object is changed and no .blend is "
         "saved): drop --output"),
        (["bend", "{scene}", "--export-engines", "{dir}/out", "--objects", "Cube"], "drop --objects"),
        (["bend", "{scene}", "--collection", "Collection", "--export-engines", "{dir}/out"], "drop --collection"),
        # a missing name: what the scene has instead
        (["bend", "{scene}", "--objects", "House"],
         "{scene}: error: No object(s) named House in scene 'Scene': names are case-sensitive; the scene has Camera, "
         "Cube, Light, Player"),
        # snow speaks of its options, not of the Snow panel
        (["snow", "{scene}", "--trails"], "No actor collection: pass --actors COLLECTION"),
        (["snow", "{scene}", "--trails", "--actors", "Collection"], "No snow mesh to add trails to: add --generate"),
        (["snow", "{scene}", "--generate", "--objects", "Player"], "none of --objects is a mesh"),
        (["snow", "{scene}", "--bake", "--out-dir", "{dir}/o", "--actors", "Collection", "--framing", "FOLLOW"],
         "--framing FOLLOW needs a pivot: pass --pivot OBJECT"),
        (["bend", "{scene}", "--horizon-offset", "inf"], "--horizon-offset inf: use a finite number"),
        (["bend", "{scene}", "--spread", "inf", "--export-engines", "{dir}/out"], "--spread inf: use a finite"),
        (["bend", "{scene}", "--strength=-inf"], "--strength -inf: use a finite number"),
        (["bend", "{scene}", "--side-strength", "nan"], "--side-strength nan: use a finite number"),
        (["bend", "{scene}", "--side-spread", "inf"], "--side-spread inf: use a finite number"),
        (["bend", "{scene}", "--horizon-offset", "1e30", "--export-engines", "{dir}/out"], "enormous"),
        (["bend", "{scene}", "--view-distance", "50"], "--view-distance is for the culling bounds of --export"),
        (["bend", "{scene}", "--view-distance=-1", "--export-engines", "{dir}/out"], "use a finite distance of 0"),
        (["bend", "{scene}", "--view-distance", "nan", "--export-engines", "{dir}/out"], "use a finite distance"),
        # every wind number is range-checked before the file is opened (not deep in the AO step after the bake)
        (["wind", "{scene}", "--ao-samples", "3000000000"], "--ao-samples 3000000000: use 0 (no AO) to 4096"),
        (["wind", "{scene}", "--ao-samples", "4097"], "--ao-samples 4097: use 0 (no AO) to 4096"),
        (["wind", "{scene}", "--ao-samples=-1"], "--ao-samples -1: use 0 (no AO) to 4096"),
        (["wind", "{scene}", "--leaf-size", "nan"], "--leaf-size nan: use a fraction between 0 and 1"),
        (["wind", "{scene}", "--leaf-size", "inf"], "--leaf-size inf: use a fraction between 0 and 1"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message_and_leaves_files_alone(envfx, scene_file, tmp_path, capsys,
                                                                     args, message):
    with open(scene_file, "rb") as fh:
        before = fh.read()
    argv = [a.format(scene=scene_file, dir=tmp_path) for a in args]
    assert envfx.cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message.format(scene=scene_file) in err
    assert "panel" not in err.lower() and "select" not in err.lower()
    with open(scene_file, "rb") as fh:
        assert not (d := envfx.core.blendfile.differences(fh.read(), before)), d
    assert sorted(os.listdir(tmp_path)) == ["scene.blend"]


def test_bend_scene_bends_that_scene_only(envfx, scene_file, tmp_path, capsys, scene_depsgraph):
    """--scene picks one scene of a file with several; the others keep their objects and settings."""
    level = bpy.data.scenes.new("Level 2")
    rock = bpy.data.objects.new("Rock", api.mesh(bpy.data.objects["Cube"]).copy())
    level.collection.objects.link(rock)
    rock.location = (4.0, -6.0, 0.0)
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    out = str(tmp_path / "levels.blend")
    code = envfx.cli.main(["bend", scene_file, "--scene", "Level 2", "--mode", "PLANET", "--strength", "0.05",
                           "--spread", "0.5", "-o", out])
    assert code == 0, capsys.readouterr()
    bpy.ops.wm.open_mainfile(filepath=out)
    level, first = bpy.data.scenes["Level 2"], bpy.data.scenes["Scene"]
    rock = bpy.data.objects["Rock"]
    assert api.envfx(level).bend.mode == "PLANET" and api.envfx(first).bend.mode == "RUNNER"
    groups = [api.nodes_modifier(rock, m.name).node_group for m in rock.modifiers]
    assert groups == [envfx.shader_nodes.bend.group_for(level)]
    assert envfx.shader_nodes.bend.group_for(first) is None and not bpy.data.objects["Cube"].modifiers
    dg = scene_depsgraph(level)
    want = envfx.core.bend.forward_local(envfx.bridge.get_positions(rock.data),
                                         envfx.bridge.matrix_to_numpy(rock.matrix_world),
                                         envfx.shader_nodes.bend.params_from_scene(level))
    assert abs(envfx.bridge.evaluated_positions(rock, dg) - want).max() < 1e-4
    assert abs(want - envfx.bridge.get_positions(rock.data)).max() > 0.05


def test_bend_scene_refuses_a_collection_of_another_scene(envfx, scene_file, capsys):
    """--collection names a collection of the --scene: one of another scene would give that scene's objects this
    scene's bend (its group, mode and axis) while its own settings say otherwise."""
    world = bpy.data.collections.new("World")
    api.scene().collection.children.link(world)
    world.objects.link(bpy.data.objects["Cube"])
    bpy.data.scenes.new("Level 2")
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    before = digest(scene_file)
    code = envfx.cli.main(["bend", scene_file, "--scene", "Level 2", "--collection", "World", "--mode", "PLANET"])
    err = capsys.readouterr().err
    assert code == 2
    assert "No collection named 'World' in scene 'Level 2' (it is in another scene, or in none)" in err, err
    assert digest(scene_file) == before
    # in its own scene it bends
    assert envfx.cli.main(["bend", scene_file, "--collection", "World"]) == 0
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    assert envfx.operators.bend.bend_modifiers(bpy.data.objects["Cube"])


def test_bend_apply_leaves_objects_it_cannot_bake_as_they_were(envfx, scene_file, capsys):
    """--apply adds the bend only to bake it: an object the bake skips (a curve, a zero scale, an excluded object)
    is named and keeps the state it had, with no live bend added; one that was bent before keeps its bend."""
    scene = api.scene()
    road = bpy.data.objects.new("Road", bpy.data.curves.new("Road", "CURVE"))
    flat = bpy.data.objects.new("Decal", api.mesh(bpy.data.objects["Cube"]).copy())
    flat.scale = (1.0, 1.0, 0.0)
    kept = bpy.data.objects.new("Kept", api.mesh(bpy.data.objects["Cube"]).copy())
    for obj in (road, flat, kept):
        scene.collection.objects.link(obj)
    envfx.operators.bend.add_bend(scene, [kept])
    api.envfx(kept).bend_exclude = True
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    code = envfx.cli.main(["bend", scene_file, "--objects", "Cube,Road,Decal,Kept", "--pivot", "Player", "--apply"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "skipped" in out and all(name in out for name in ("Road", "Decal", "Kept"))
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    bend_modifiers = envfx.operators.bend.bend_modifiers
    assert not bend_modifiers(bpy.data.objects["Road"]) and not bend_modifiers(bpy.data.objects["Decal"])
    assert bend_modifiers(bpy.data.objects["Kept"])  # bent (excluded) before the run: kept as it was
    assert not bend_modifiers(bpy.data.objects["Cube"]) and api.mesh(bpy.data.objects["Cube"]).get("envfx_bend_applied")


def test_bend_several_files_does_the_good_ones_and_names_the_bad_one(envfx, scene_file, tmp_path, capsys):
    """A batch over several levels: a file without the pivot is named and left as it was, the others are bent
    and saved; -o with several files and a missing file are refused before any file is opened."""
    import shutil

    level2, broken = str(tmp_path / "level2.blend"), str(tmp_path / "broken.blend")
    shutil.copy(scene_file, level2)
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    bpy.data.objects.remove(bpy.data.objects["Player"])
    bpy.ops.wm.save_as_mainfile(filepath=broken)
    with open(broken, "rb") as fh:
        broken_before = fh.read()
    files = [scene_file, broken, level2]
    os.mkdir(tmp_path / "dir.blend")
    for extra, message in ((["-o", str(tmp_path / "x.blend")], "--output works with one input file"),
                           ([str(tmp_path / "missing.blend")], "No such file"),
                           # a folder named like a file: said so, not 'No such file'
                           ([str(tmp_path / "dir.blend")], "dir.blend' is a folder, not a .blend file")):
        assert envfx.cli.main(["bend", *files, *extra, "--pivot", "Player"]) == 2
        assert message in capsys.readouterr().err
    assert envfx.cli.main(["bend", *files, "--pivot", "Player", "--objects", "Cube", "--strength", "0.03"]) == 2
    err = capsys.readouterr().err
    assert "1 of 3 files failed" in err
    # like its warnings, a file's error starts with the command and the file: a batch log filters by file
    assert f"envfx bend: {broken}: error: No pivot object named 'Player'" in err
    with open(broken, "rb") as fh:
        assert fh.read() == broken_before
    for path in (scene_file, level2):
        bpy.ops.wm.open_mainfile(filepath=path)
        assert envfx.operators.bend.bend_modifiers(bpy.data.objects["Cube"]), path
        assert api.envfx(api.scene()).bend.strength == pytest.approx(0.03)
    # engine files per input file
    out = tmp_path / "engines"
    assert envfx.cli.main(["bend", scene_file, level2, "--export-engines", str(out)]) == 0
    for stem in ("scene", "level2"):
        assert sorted(os.listdir(out / stem)) == ["EnvFXBend.hlsl", "EnvFXBend.ush", "EnvFXBendPivot.cs",
                                                  "EnvFXBend_ShaderGraph.md", "EnvFXBend_Unreal.md",
                                                  "envfx_bend.gdshaderinc", "envfx_bend.json",
                                                  "envfx_bend_example.gdshader", "envfx_bend_pivot.gd"]


def test_bend_remove(envfx, scene_file):
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube"]) == 0
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube", "--remove"]) == 0
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    assert len(bpy.data.objects["Cube"].modifiers) == 0


def test_bend_export_engines_writes_the_files_and_leaves_the_blend_alone(envfx, scene_file, tmp_path, capsys):
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    api.scene().unit_settings.scale_length = 0.01  # a centimetre scene: Unity and Unreal get it from the FBX
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    with open(scene_file, "rb") as fh:
        before = fh.read()
    out = tmp_path / "engines"
    code = envfx.cli.main(["bend", scene_file, "--mode", "RUNNER_2AXIS", "--strength", "0.03", "--pivot", "Player",
                           "--export-engines", str(out)])
    assert code == 0, capsys.readouterr()
    assert "wrote 9 files" in capsys.readouterr().out
    meta = json.loads((out / "envfx_bend.json").read_text())
    assert meta["blender"]["mode"] == "RUNNER_2AXIS" and meta["blender"]["strength"] == pytest.approx(0.03)
    assert meta["blender"]["unit_scale"] == pytest.approx(0.01)
    assert meta["engines"]["UNREAL"]["strength"] == pytest.approx(0.03)         # per cm: 0.03 per BU, 1 cm per BU
    assert meta["engines"]["GODOT"]["strength"] == pytest.approx(0.03)          # glTF: 1 m per BU
    assert meta["engines"]["UNITY"]["strength"] == pytest.approx(3.0)           # per m: 1 BU is 0.01 m
    assert "scene.blend, scene Scene" in meta["source"]
    assert envfx.cli.main(["bend", scene_file, "--export-engines", str(out), "--view-distance", "25"]) == 0
    culling = json.loads((out / "envfx_bend.json").read_text())["blender"]["culling"]
    assert culling["view_distance"] == pytest.approx(25.0)
    assert "ENVFX_BEND_SIDE_STRENGTH" in (out / "envfx_bend.gdshaderinc").read_text()
    assert (out / "EnvFXBend.hlsl").exists() and (out / "EnvFXBend.ush").exists()
    with open(scene_file, "rb") as fh:
        assert not (d := envfx.core.blendfile.differences(fh.read(), before)), d  # nothing saved


def test_bend_export_engines_relative_folders(envfx, scene_file, tmp_path, monkeypatch, capsys):
    """--export-engines DIR: a relative DIR is relative to the current folder, as any path on a command line; "//DIR"
    is relative to the .blend file (the input file is saved, so it has a folder)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert envfx.cli.main(["bend", scene_file, "--export-engines", "out"]) == 0, capsys.readouterr()
    assert (cwd / "out" / "envfx_bend.json").is_file()
    assert envfx.cli.main(["bend", scene_file, "--export-engines", "//eng"]) == 0, capsys.readouterr()
    assert (tmp_path / "eng" / "envfx_bend.json").is_file()
    assert sorted(p.name for p in cwd.iterdir()) == ["out"]


# --- files that cannot be read or written -----------------------------------------------------------------

@pytest.mark.parametrize("command", [["info"], ["info", "--json"], ["bend"], ["bend", "--apply"], ["wind"],
                                     ["snow", "--trails", "--actors", "Collection"]])
def test_an_unreadable_file_exits_2_naming_it(envfx, scene_file, tmp_path, capsys, command):
    """A truncated file and an empty one: exit 2 with the file named and what to do, no traceback."""
    cut, empty = truncated_copy(scene_file, tmp_path / "cut.blend"), truncated_copy(scene_file, tmp_path / "0.blend", 0)
    for bad in (cut, empty):
        before = digest(bad)
        assert envfx.cli.main([command[0], bad, *command[1:]]) == 2
        err = capsys.readouterr().err
        assert f"{bad}: error: Blender cannot read this file" in err and "damaged or truncated" in err, err
        assert digest(bad) == before


def test_a_batch_with_unreadable_files_names_them_and_does_the_others(envfx, scene_file, tmp_path, capsys):
    level2 = str(tmp_path / "level2.blend")
    shutil.copy(scene_file, level2)
    cut = truncated_copy(scene_file, tmp_path / "cut.blend")
    empty = truncated_copy(scene_file, tmp_path / "empty.blend", 0)
    bad_before = digest(cut), digest(empty)
    assert envfx.cli.main(["bend", scene_file, cut, empty, level2, "--objects", "Cube"]) == 2
    err = capsys.readouterr().err
    assert f"{cut}: error: Blender cannot read" in err and f"{empty}: error: Blender cannot read" in err
    assert f"2 of 4 files failed and were left unchanged: {cut}, {empty}" in err
    assert (digest(cut), digest(empty)) == bad_before
    for path in (scene_file, level2):
        bpy.ops.wm.open_mainfile(filepath=path)
        assert envfx.operators.bend.bend_modifiers(bpy.data.objects["Cube"]), path
    assert envfx.cli.main(["info", cut, scene_file]) == 2  # info too: the good file is described
    out, err = capsys.readouterr()
    assert f"{scene_file}, scene 'Scene'" in out and f"{cut}: error: Blender cannot read" in err
    assert f"envfx info: 1 of 2 files failed: {cut}" in err and "unchanged" not in err  # info changes no file


@pytest.fixture
def permissions_apply():
    """(folder, uid): a folder in which read-only files and folders stop the CLI that run_cli(..., as_user=uid)
    starts. Root writes into read-only files, so as root the CLI runs as user nobody (with setpriv)."""
    uid = None
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root (read-only files are writable for root) and no setpriv to run as nobody")
        uid = 65534
    folder = tempfile.mkdtemp(prefix="envfx-permissions-")
    os.chmod(folder, 0o755)
    yield folder, uid
    for path, dirs, _files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(path, name), 0o755)
    shutil.rmtree(folder, ignore_errors=True)


def _own(folder, uid):
    if uid is None:
        return
    for path, _dirs, files in os.walk(folder):
        os.chown(path, uid, uid)
        for name in files:
            os.chown(os.path.join(path, name), uid, uid)


def test_read_only_files_and_folders_are_refused_before_the_work(envfx, scene_file, permissions_apply):
    folder, uid = permissions_apply
    os.mkdir(os.path.join(folder, "ro"))
    for name in ("locked.blend", "good.blend", "ro/level.blend"):
        shutil.copy(scene_file, os.path.join(folder, name))
    snow_file(os.path.join(folder, "ro", "snow.blend"))
    _own(folder, uid)
    os.chmod(os.path.join(folder, "locked.blend"), 0o444)
    os.chmod(os.path.join(folder, "ro"), 0o555)
    names = ("locked.blend", "good.blend", "ro/level.blend", "ro/snow.blend")
    before = {name: digest(os.path.join(folder, name)) for name in names}

    code, out, err = run_cli(["bend", "locked.blend", "good.blend", "ro/level.blend", "--objects", "Cube"], folder,
                             uid)
    assert code == 2, err
    assert "locked.blend: error: the file is read-only: make it writable or pass --output" in err
    assert f"ro/level.blend: error: its folder {os.path.join(folder, 'ro')!r} is read-only: make it writable or pass " \
           f"--output" in err
    assert "2 of 3 files failed" in err and "Traceback" not in err and "choose another" not in err
    assert "good.blend: bent 1 object(s)" in out
    # an in-place save into a read-only folder is refused before the bake writes anything
    code, out, err = run_cli(["snow", "ro/snow.blend", "--trails", "--actors", "Walkers", "--bake", "--out-dir",
                              "buffer", "--resolution", "16", "--frames", "1:2"], folder, uid)
    assert code == 2 and "ro/snow.blend: error: its folder" in err and "make it writable or pass --output" in err, err
    assert not os.path.exists(os.path.join(folder, "buffer"))
    # --output into a read-only folder: refused before the work too
    code, out, err = run_cli(["snow", "ro/snow.blend", "--trails", "--actors", "Walkers", "--bake", "--out-dir",
                              "buffer", "--resolution", "16", "--frames", "1:2", "-o", "ro/out.blend"], folder, uid)
    assert code == 2 and "is read-only: make it writable or choose another --output" in err, err
    assert not os.path.exists(os.path.join(folder, "buffer"))
    after = {name: digest(os.path.join(folder, name)) for name in names}
    assert after == {**before, "good.blend": after["good.blend"]} and after["good.blend"] != before["good.blend"]
    assert sorted(os.listdir(os.path.join(folder, "ro"))) == ["level.blend", "snow.blend"]


def test_info_json_writes_only_json_lines_to_stdout(envfx, scene_file, tmp_path):
    """Blender's own "Read blend: ..." goes to stderr, so `envfx info --json ... | jq` works (also with a bad
    file in the batch: its error is on stderr)."""
    snow = snow_file(tmp_path / "snow.blend")
    cut = truncated_copy(scene_file, tmp_path / "cut.blend")
    code, out, err = run_cli(["info", scene_file, cut, snow, "--json"], tmp_path)
    assert code == 2, err
    reports = [json.loads(line) for line in out.splitlines()]
    assert [(r["file"], r["scene"]) for r in reports] == [(scene_file, "Scene"), (snow, "Scene")]
    assert f"{cut}: error: Blender cannot read" in err


# --- running twice ----------------------------------------------------------------------------------------

def test_bend_apply_twice_bakes_the_bend_once(envfx, scene_file, capsys):
    args = ["bend", scene_file, "--objects", "Cube", "--pivot", "Player", "--strength", "0.1", "--apply"]
    assert envfx.cli.main(args) == 0
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    once = envfx.bridge.get_positions(bpy.data.objects["Cube"].data)
    before, stamp = digest(scene_file), os.stat(scene_file).st_mtime_ns
    capsys.readouterr()
    assert envfx.cli.main(args) == 0
    out = capsys.readouterr().out
    assert "the bend was already baked into Cube" in out and f"nothing changed, {scene_file} not saved" in out
    assert (digest(scene_file), os.stat(scene_file).st_mtime_ns) == (before, stamp)
    # to bend it again on purpose: add the bend, then apply it
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube"]) == 0
    assert envfx.cli.main(args) == 0
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    twice = envfx.bridge.get_positions(bpy.data.objects["Cube"].data)
    assert twice[:, 2].min() < once[:, 2].min() - 1.0 and not bpy.data.objects["Cube"].modifiers


def test_snow_generate_twice_regenerates_the_cover_in_place(envfx, tmp_path, capsys):
    path = snow_file(tmp_path / "snow.blend")
    args = ["snow", path, "--generate", "--objects", "Ground", "--spacing", "0.25", "--trails", "--actors", "Walkers"]

    def covers():
        bpy.ops.wm.open_mainfile(filepath=path)
        snow = envfx.operators.snow.snow_objects(api.scene())
        return ({o.name: (len(o.data.vertices), bool(envfx.operators.snow.trails_modifiers(o))) for o in snow},
                sorted(m.name for m in bpy.data.meshes))

    assert envfx.cli.main(args) == 0
    first = covers()
    assert first[0] == {"Ground Snow": (first[0]["Ground Snow"][0], True)}
    capsys.readouterr()
    assert envfx.cli.main(args) == 0
    assert "regenerated the snow cover Ground Snow in place" in capsys.readouterr().out
    assert covers() == first                                     # one cover, its trails kept, no orphan mesh
    assert envfx.cli.main(["snow", path, "--generate", "--objects", "Ground", "--spacing", "0.5"]) == 0
    (name, (vertices, trails)), = covers()[0].items()
    assert name == "Ground Snow" and vertices < first[0]["Ground Snow"][0] and trails
    # the terrain renamed (its cover keeps the terrain object, not only its name): still that cover, in place;
    # and an object that takes the old name is another terrain, with a cover of its own
    bpy.data.objects["Ground"].name = "Level Floor"
    bpy.ops.wm.save_mainfile()
    capsys.readouterr()
    assert envfx.cli.main(["snow", path, "--generate", "--objects", "Level Floor", "--spacing", "0.25"]) == 0
    assert "regenerated the snow cover Ground Snow in place" in capsys.readouterr().out
    assert covers()[0] == {"Ground Snow": (first[0]["Ground Snow"][0], True)}
    other = bpy.data.objects.new("Ground", api.mesh(bpy.data.objects["Level Floor"]).copy())
    other.location.x = 40.0
    api.scene().collection.objects.link(other)
    bpy.ops.wm.save_mainfile()
    assert envfx.cli.main(["snow", path, "--generate", "--objects", "Ground", "--spacing", "0.25"]) == 0
    assert sorted(covers()[0]) == ["Ground Snow", "Ground Snow.001"]


def test_snow_trails_already_on_every_snow_mesh_leaves_the_file_unsaved(envfx, tmp_path, capsys):
    """`snow --trails` where every snow mesh has its trails already changes nothing: the file is not saved again
    (as `bend --remove` with nothing bent); with the cover made again it is."""
    path = snow_file(tmp_path / "snow.blend")
    assert envfx.cli.main(["snow", path, "--generate", "--objects", "Ground", "--trails", "--actors", "Walkers"]) == 0
    data = open(path, "rb").read()
    capsys.readouterr()
    assert envfx.cli.main(["snow", path, "--trails"]) == 0
    assert f"nothing changed, {path} not saved" in capsys.readouterr().out
    assert open(path, "rb").read() == data
    assert envfx.cli.main(["snow", path, "--trails", "--actors", "Walkers"]) == 0  # the same collection
    assert open(path, "rb").read() == data
    assert envfx.cli.main(["snow", path, "--generate", "--objects", "Ground", "--trails"]) == 0  # a change: saved
    assert open(path, "rb").read() != data


def test_a_name_given_twice_in_objects_counts_once(envfx, scene_file, tmp_path, capsys):
    """``--objects Tree,Tree`` (a generated list) is the object Tree, once: not a second object sharing its mesh
    (wind), not a second bend to bake that is no longer there (bend --apply)."""
    tree = tree_file(envfx, tmp_path / "tree.blend")
    assert envfx.cli.main(["wind", tree, "--objects", "Tree,Tree", "--add"]) == 0
    out = capsys.readouterr().out
    assert f"envfx wind: {tree}: baked Tree: " in out and "shares its mesh" not in out and "skipped" not in out
    bpy.ops.wm.open_mainfile(filepath=tree)
    assert len(envfx.operators.wind.wind_modifiers(bpy.data.objects["Tree"])) == 1
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube,Cube", "--pivot", "Player"]) == 0
    assert "bent 1 object(s), 0 unchanged" in capsys.readouterr().out
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube, Cube", "--apply"]) == 0
    assert f"envfx bend: {scene_file}: " in capsys.readouterr().out


def test_remove_with_nothing_to_remove_does_not_rewrite_the_file(envfx, scene_file, capsys):
    before, stamp = digest(scene_file), os.stat(scene_file).st_mtime_ns
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube", "--remove"]) == 0
    assert envfx.cli.main(["wind", scene_file, "--objects", "Cube", "--remove"]) == 0
    assert capsys.readouterr().out.count(f"nothing changed, {scene_file} not saved") == 2
    assert (digest(scene_file), os.stat(scene_file).st_mtime_ns) == (before, stamp)


# --- batches ----------------------------------------------------------------------------------------------

def test_bend_gpu_bends_in_the_materials_and_names_what_it_cannot(envfx, scene_file, tmp_path, capsys):
    """--gpu: Bend on GPU on and the objects bent in their materials, saved; info lists them."""
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    if not api.mesh(bpy.data.objects["Cube"]).materials:
        api.mesh(bpy.data.objects["Cube"]).materials.append(bpy.data.materials.new("Cube"))
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    out = str(tmp_path / "gpu.blend")
    assert envfx.cli.main(["bend", scene_file, "--gpu", "--objects", "Cube", "-o", out]) == 0
    assert "bent on the GPU 1 object(s)" in capsys.readouterr().out
    assert envfx.cli.main(["info", out, "--json"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[0])
    assert report["bend"]["gpu"] == ["Cube"] and report["bend"]["objects"] == []
    bpy.ops.wm.open_mainfile(filepath=out)
    cube = bpy.data.objects["Cube"]
    assert envfx.shader_nodes.bend_gpu.is_gpu_bent(cube) and not cube.modifiers
    api.mesh(cube).materials.clear()
    bpy.ops.wm.save_as_mainfile(filepath=out)
    assert envfx.cli.main(["bend", out, "--gpu", "--objects", "Cube"]) == 2
    assert "Cube (it has no material" in capsys.readouterr().err


def test_wind_add_gpu_moves_the_baked_objects_in_their_materials(envfx, scene_file, tmp_path, capsys):
    """--add --gpu: baked, Wind on GPU on and the objects in the wind in their materials, saved; info lists them; an
    object without a material is named and the file left as it was; --gpu without --add is refused."""
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    if not api.mesh(bpy.data.objects["Cube"]).materials:
        api.mesh(bpy.data.objects["Cube"]).materials.append(bpy.data.materials.new("Cube"))
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    out = str(tmp_path / "gpu.blend")
    assert envfx.cli.main(["wind", scene_file, "--objects", "Cube", "--add", "--gpu", "--ao-samples", "0",
                           "-o", out]) == 0
    assert envfx.cli.main(["info", out, "--json"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["wind"]["gpu"] == ["Cube"] and report["wind"]["objects"] == []
    bpy.ops.wm.open_mainfile(filepath=out)
    cube = bpy.data.objects["Cube"]
    assert api.envfx(cube).wind.gpu and envfx.shader_nodes.wind_gpu.is_gpu_wind(cube) and not cube.modifiers
    assert envfx.cli.main(["wind", scene_file, "--objects", "Cube", "--gpu"]) == 2
    assert "use it with --add" in capsys.readouterr().err
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    api.mesh(bpy.data.objects["Cube"]).materials.clear()
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    with open(scene_file, "rb") as fh:
        before = fh.read()
    assert envfx.cli.main(["wind", scene_file, "--objects", "Cube", "--add", "--gpu", "--ao-samples", "0"]) == 2
    assert "Cube (it has no material" in capsys.readouterr().err
    with open(scene_file, "rb") as fh:
        assert not envfx.core.blendfile.differences(fh.read(), before)


def test_wind_rigid_sways_the_objects_whole_and_refuses_what_cannot(envfx, scene_file, tmp_path, capsys):
    """--rigid: Rigid Sway on and the objects in the wind by drivers, saved; an object that cannot (a quaternion
    rotation) is named and the file left as it was."""
    out = str(tmp_path / "rigid.blend")
    assert envfx.cli.main(["wind", scene_file, "--rigid", "--objects", "Cube", "--preset", "BUSH", "-o", out]) == 0
    assert "1 object(s) sway whole (rigid)" in capsys.readouterr().out
    assert envfx.cli.main(["info", out, "--json"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[0])
    assert report["wind"]["rigid"] == ["Cube"] and report["wind"]["objects"] == []
    bpy.ops.wm.open_mainfile(filepath=out)
    cube = bpy.data.objects["Cube"]
    assert api.envfx(cube).wind.rigid and api.envfx(cube).wind.category == "PLANT" and not cube.modifiers
    assert envfx.shader_nodes.wind_rigid.is_rigid(cube)
    api.scene().frame_set(12)
    assert abs(cube.delta_rotation_euler[0]) + abs(cube.delta_rotation_euler[1]) > 1e-4
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    bpy.data.objects["Cube"].rotation_mode = "QUATERNION"
    bpy.ops.wm.save_as_mainfile(filepath=scene_file)
    with open(scene_file, "rb") as fh:
        before = fh.read()
    assert envfx.cli.main(["wind", scene_file, "--rigid", "--objects", "Cube"]) == 2
    assert "Cube (its rotation mode is Quaternion" in capsys.readouterr().err
    with open(scene_file, "rb") as fh:
        assert not envfx.core.blendfile.differences(fh.read(), before)


def test_wind_batch_names_the_bad_file_and_does_the_others(envfx, scene_file, tmp_path, capsys):
    first, last = tree_file(envfx, tmp_path / "a.blend"), tree_file(envfx, tmp_path / "c.blend")
    before = digest(scene_file)
    assert envfx.cli.main(["wind", first, scene_file, last, "--objects", "Tree"]) == 2
    err = capsys.readouterr().err
    assert f"{scene_file}: error: No object(s) named Tree in scene 'Scene'" in err
    assert f"1 of 3 files failed and were left unchanged: {scene_file}" in err
    assert digest(scene_file) == before
    for path in (first, last):
        bpy.ops.wm.open_mainfile(filepath=path)
        assert "EnvFX_Wind" in api.mesh(bpy.data.objects["Tree"]).attributes, path


def test_bend_export_engines_refuses_two_files_of_one_name(envfx, scene_file, tmp_path, capsys):
    a, b = tmp_path / "a" / "level.blend", tmp_path / "b" / "level.blend"
    for path in (a, b):
        path.parent.mkdir()
        shutil.copy(scene_file, path)
    out = tmp_path / "out"
    assert envfx.cli.main(["bend", str(a), str(b), "--export-engines", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{a} and {b} would write their engine files into the same folder {out / 'level'}" in err
    assert "run them separately" in err and not out.exists()


GAS_GIANT_SMALL = ["--particles", "2000", "--iterations", "2", "--cubemap", "16", "--equirect", "32", "--field", "8"]


@pytest.mark.parametrize("command", ["bend", "wind", "snow", "gas-giant", "mips"])
def test_every_text_option_given_empty_is_refused_before_any_file_is_touched(envfx, scene_file, tmp_path, capsys,
                                                                            monkeypatch, command):
    """An empty pipeline variable (`--output "$OUT"`) is not "not given": every option of the command that takes a
    text value (read from the parser, so an option added later is covered) refuses "" and blanks with exit 2,
    naming the option, before any file is opened, written or saved over."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # an empty path is the working folder to os.path: nothing lands there
    image = str(tmp_path / "leaf.png")
    shutil.copyfile(os.path.join(ROOT, "docs", "snow.png"), image)
    base = {"bend": ["bend", scene_file], "wind": ["wind", scene_file], "snow": ["snow", scene_file, "--trails"],
            "gas-giant": ["gas-giant", "--out", str(tmp_path / "gg"), *GAS_GIANT_SMALL],
            "mips": ["mips", image, "--out", str(tmp_path / "mips")]}[command]
    sub = next(a for a in envfx.cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    options = [max(a.option_strings, key=len) for a in sub.choices[command]._actions
               if isinstance(a, argparse._StoreAction) and a.option_strings and a.type is None and a.choices is None
               and a.nargs is None]
    assert {"bend": "--export-engines", "wind": "--output", "snow": "--out-dir", "gas-giant": "--save",
            "mips": "--out"}[command] in options
    inputs = {path: digest(path) for path in (scene_file, image)}
    listing = sorted(os.listdir(tmp_path))
    for option in options:
        for value in ("", "  "):
            assert envfx.cli.main([*base, option, value]) == 2, (option, value)
            assert f"envfx {command}: error: {option} is empty: give " in capsys.readouterr().err, (option, value)
            assert {path: digest(path) for path in inputs} == inputs, (option, value)
            assert sorted(os.listdir(tmp_path)) == listing and not os.listdir("."), (option, value)


def _mesh_positions(path, name):
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    obj = bpy.data.objects[name]
    assert obj.mode == "OBJECT"
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


@pytest.mark.parametrize("command", [
    ["bend", "--apply", "--objects", "Cube", "--pivot", "Player", "--strength", "0.01"],
    ["wind", "--objects", "Cube", "--ao-samples", "0"]])
def test_a_file_saved_in_edit_mode_is_worked_on_with_its_edits(envfx, scene_file, tmp_path, capsys, command):
    """A .blend saved in Edit Mode opens in Edit Mode; a batch has no Tab to leave it. The command leaves it (the
    edit made in Edit Mode is kept) and works on the edited mesh: the result equals that of the same edit made in
    Object Mode."""
    import bmesh

    in_edit, in_object = str(tmp_path / "in_edit.blend"), str(tmp_path / "in_object.blend")
    bpy.ops.wm.open_mainfile(filepath=scene_file, load_ui=False)
    cube = bpy.data.objects["Cube"]
    api.mesh(cube).vertices[0].co.z += 5.0
    bpy.ops.wm.save_as_mainfile(filepath=in_object)
    bpy.ops.wm.open_mainfile(filepath=scene_file, load_ui=False)
    cube = bpy.data.objects["Cube"]
    api.view_layer().objects.active = cube
    bpy.ops.object.mode_set(mode="EDIT")
    bm = bmesh.from_edit_mesh(api.mesh(cube))
    bm.verts.ensure_lookup_table()
    bm.verts[0].co.z += 5.0
    bmesh.update_edit_mesh(api.mesh(cube))
    bpy.ops.wm.save_as_mainfile(filepath=in_edit)  # saved without leaving Edit Mode
    bpy.ops.wm.open_mainfile(filepath=in_edit, load_ui=False)
    assert bpy.data.objects["Cube"].mode == "EDIT"  # what Blender does: the file opens in Edit Mode

    for path in (in_edit, in_object):
        assert envfx.cli.main([command[0], path, *command[1:]]) == 0, capsys.readouterr().err
    assert "Edit Mode" not in capsys.readouterr().err
    edited, reference = _mesh_positions(in_edit, "Cube"), _mesh_positions(in_object, "Cube")
    np.testing.assert_array_equal(edited, reference)
    assert edited[0, 2] > 3.0  # the edit is there (the cube's top is at 1; the bend drops it by about 1.2)
    if command[0] == "bend":
        assert not np.allclose(edited, _mesh_positions(scene_file, "Cube"))  # and was baked
    else:
        assert "EnvFX_Height_UV" in api.mesh(bpy.data.objects["Cube"]).uv_layers  # the wind data was baked


def test_bend_export_engines_needs_no_mesh(envfx, tmp_path, capsys):
    """The export writes the scene's bend settings as shader code: a file without a mesh (a level's settings
    file) exports, and is left as it was."""
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    api.scene().collection.objects.link(bpy.data.objects.new("Player", None))
    path = str(tmp_path / "settings.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    before = digest(path)
    out = tmp_path / "engines"
    assert envfx.cli.main(["bend", path, "--pivot", "Player", "--strength", "0.02", "--export-engines", str(out)]) == 0
    assert f"envfx bend: {path}: wrote " in capsys.readouterr().out
    meta = json.loads((out / "envfx_bend.json").read_text())
    assert meta["blender"]["strength"] == pytest.approx(0.02) and (out / "EnvFXBend.hlsl").exists()
    assert digest(path) == before


def test_warnings_start_with_the_file_path(envfx, scene_file, capsys):
    """Every message about a file starts with its path, warnings and skipped objects too (a batch's log is
    grepped by file)."""
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube,Player"]) == 0  # no pivot; an empty skipped
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("Info: ")]  # Blender's
    assert all(line.startswith(f"envfx bend: {scene_file}: ") for line in lines), lines
    assert any(": warning: skipped Player" in line for line in lines), lines
    assert any(": warning: No pivot set" in line for line in lines), lines


# --- envfx snow: options that would be ignored, numbers Blender cannot take, negative frames ----------------

@pytest.mark.parametrize("args, message", [
    # generate-only options without --generate
    (["--bake", "--actors", "Walkers", "--out-dir", "{dir}/out", "--objects", "Ground", "--spacing", "0.01",
      "--lods", "3"], "--objects, --spacing, --lods only apply to --generate (the snow cover), which is not given: "
     "add --generate, or drop them"),
    (["--trails", "--actors", "Walkers", "--max-slope", "30"], "--max-slope only applies to --generate"),
    (["--trails", "--actors", "Walkers", "--budget", "1000"], "--budget only applies to --generate"),
    # bake-only options without --bake
    (["--generate", "--objects", "Ground", "--resolution", "64", "--final-only"],
     "--resolution, --final-only only apply to --bake (the interaction buffer), which is not given: add --bake"),
    (["--trails", "--actors", "Walkers", "--out-dir", "{dir}/out"], "--out-dir only applies to --bake"),
    (["--generate", "--objects", "Ground", "--frames", "1:5"], "--frames only applies to --bake"),
    (["--generate", "--objects", "Ground", "--framing", "FOLLOW", "--pivot", "Walker", "--size", "3"],
     "--size, --framing, --pivot only apply to --bake"),
    # occluders hold the trails and the bake down; generating ignores them
    (["--generate", "--objects", "Ground", "--occluders", "Walkers"],
     "--occluders only applies to --trails and --bake"),
    # a follow window's pivot and size with an AREA buffer: asked for on the command line, or the file's framing
    (["--bake", "--actors", "Walkers", "--out-dir", "{dir}/out", "--framing", "AREA", "--pivot", "Walker"],
     "--pivot only applies to --framing FOLLOW (an AREA buffer covers every snow mesh): pass --framing FOLLOW, "
     "or drop it"),
    (["--bake", "--actors", "Walkers", "--out-dir", "{dir}/out", "--pivot", "Walker", "--size", "3"],
     "{path}: error: --pivot, --size only apply to a FOLLOW window, and the scene's buffer framing is AREA (it "
     "covers every snow mesh): add --framing FOLLOW, or drop them"),
])
def test_snow_refuses_options_it_would_ignore(envfx, tmp_path, capsys, args, message):
    path = snow_file(tmp_path / "snow.blend")
    before = digest(path)
    argv = ["snow", path] + [a.format(dir=tmp_path) for a in args]
    assert envfx.cli.main(argv) == 2
    assert message.format(path=path) in capsys.readouterr().err
    assert digest(path) == before
    assert sorted(os.listdir(tmp_path)) == ["snow.blend"]


def test_snow_follow_window_asked_for_is_baked(envfx, tmp_path, capsys):
    """The refused AREA run above, with --framing FOLLOW: the window asked for is baked."""
    path = snow_file(tmp_path / "snow.blend")
    code = envfx.cli.main(["snow", path, "--bake", "--actors", "Walkers", "--out-dir", str(tmp_path / "out"),
                           "--frames", "1:4", "--resolution", "16", "--framing", "FOLLOW", "--pivot", "Walker",
                           "--size", "3"])
    assert code == 0, capsys.readouterr().err
    meta = json.loads((tmp_path / "out" / "snow_buffer.json").read_text())
    assert (meta["framing"], meta["world_size"]) == ("FOLLOW", 3.0)


@pytest.mark.parametrize("args, message", [
    (["--generate", "--objects", "Ground", "--budget", "99999999999"],
     "--budget 99999999999 must be between 1 and 2147483647 vertices"),
    (["--bake", "--actors", "Walkers", "--out-dir", "{dir}/out", "--frames", "1:3000000000"],
     "--frames 1:3000000000: Blender's frames run from -1048574 to 1048574: use a range within them"),
    (["--bake", "--actors", "Walkers", "--out-dir", "{dir}/out", "--frames", "1048570:1048580"],
     "Blender's frames run from -1048574 to 1048574"),                # a 32-bit number, but beyond Blender's frames
    (["--bake", "--actors", "Walkers", "--out-dir", "{dir}/out", "--frames=-3000000000:1"],
     "Blender's frames run from -1048574 to 1048574"),
    (["--generate", "--objects", "Ground", "--spacing", "1e-9"], "--spacing 1e-09 must be between 1e-06 and"),
    (["--generate", "--objects", "Ground", "--thickness", "1e300"], "--thickness 1e+300 must be between 0 and"),
    (["--generate", "--objects", "Ground", "--max-slope", "89.95"], "--max-slope 89.95 must be between 0 and 89.90 "
     "degrees"),
    (["--bake", "--actors", "Walkers", "--out-dir", "{dir}/out", "--framing", "FOLLOW", "--pivot", "Walker",
      "--size", "1e-7"], "--size 1e-07 must be between 1e-06 and"),
])
def test_snow_numbers_blender_cannot_take_are_refused_before_the_file_is_opened(envfx, tmp_path, capsys,
                                                                                 monkeypatch, args, message):
    """Before: a ValueError traceback out of cli.main (beyond a 32-bit integer), or a silently clamped setting."""
    path = snow_file(tmp_path / "snow.blend")
    before = digest(path)
    monkeypatch.setattr(envfx.cli.batch, "open_blend", lambda *a, **k: pytest.fail("the file was opened"))
    assert envfx.cli.main(["snow", path] + [a.format(dir=tmp_path) for a in args]) == 2
    assert message in capsys.readouterr().err
    assert digest(path) == before
    assert sorted(os.listdir(tmp_path)) == ["snow.blend"]


def test_snow_bakes_a_negative_frame_range_as_written(envfx, tmp_path, capsys):
    """`--frames -3:-1` is a range, not an unknown option (before: argparse's "expected one argument")."""
    path = snow_file(tmp_path / "snow.blend")
    out = tmp_path / "out"
    code = envfx.cli.main(["snow", path, "--bake", "--actors", "Walkers", "--out-dir", str(out), "--frames", "-3:-1",
                           "--resolution", "16"])
    assert code == 0, capsys.readouterr().err
    meta = json.loads((out / "snow_buffer.json").read_text())
    assert (meta["frame_start"], meta["frame_end"]) == (-3, -1)
    assert [f["frame"] for f in meta["frames"]] == [-3, -2, -1]
    assert envfx.cli.main(["snow", path, "--bake", "--actors", "Walkers", "--out-dir", str(out), "--frames",
                           "-3"]) == 2
    assert "--frames '-3': use START:END, e.g. 1:250 or -3:-1" in capsys.readouterr().err


def test_bend_names_a_coarse_mesh_and_subdivide_puts_a_subdivision_before_the_bend(envfx, scene_file, capsys):
    """The cube's 2 m edges at strength 0.2 are 0.2 m off the curve: named; --tolerance 1 accepts them;
    --subdivide --tolerance 0.02 gives it two Simple levels before the bend (0.0125 m), its mesh left alone."""
    args = ["bend", scene_file, "--objects", "Cube", "--pivot", "Player", "--strength", "0.2"]
    assert envfx.cli.main([*args, "--tolerance", "1"]) == 0
    assert "Too coarse" not in capsys.readouterr().out
    assert envfx.cli.main([*args, "--tolerance", "0.05"]) == 0  # the file keeps the tolerance it was saved with
    assert "Too coarse for the bend: Cube (0.2 m)" in capsys.readouterr().out
    assert envfx.cli.main([*args, "--tolerance", "0.02", "--subdivide"]) == 0
    assert "Subdivided before the bend (Simple, the mesh untouched): Cube" in capsys.readouterr().out
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    cube = bpy.data.objects["Cube"]
    assert [(m.type, m.name) for m in cube.modifiers] == [("SUBSURF", "EnvFX Bend Subdivision"),
                                                          ("NODES", "EnvFX Bend")]
    subdivision = api.of(bpy.types.SubsurfModifier, cube.modifiers[0])
    assert (subdivision.subdivision_type, subdivision.levels, len(api.mesh(cube).vertices)) == ("SIMPLE", 2, 8)
    assert envfx.cli.main(["bend", scene_file, "--tolerance", "0"]) == 2
    assert "--tolerance 0.0: use a distance above 0" in capsys.readouterr().err
