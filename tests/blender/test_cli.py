"""`blender -c envfx ...`: the registered handler calls cli.main(argv); tested directly."""

import json
import os

import bpy
import pytest


@pytest.fixture
def scene_file(tmp_path):
    bpy.ops.wm.read_homefile(app_template="")
    cube = bpy.data.objects["Cube"]
    cube.location = (0.0, 12.0, 0.0)
    player = bpy.data.objects.new("Player", None)
    bpy.context.scene.collection.objects.link(player)
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
    assert f"EnvFX {envfx.cli.manifest()['version']}" in out
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
        assert fh.read() == before
    assert envfx.cli.main(["info", str(tmp_path / "nope.blend")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_bend_adds_the_bend_and_saves(envfx, scene_file, tmp_path, capsys):
    out = str(tmp_path / "bent.blend")
    code = envfx.cli.main(["bend", scene_file, "--collection", "Collection", "--pivot", "Player", "--mode",
                           "PLANET", "--strength", "0.05", "--spread", "1", "-o", out])
    assert code == 0, capsys.readouterr()
    assert "skipped" in capsys.readouterr().out  # the light and the camera are named
    bpy.ops.wm.open_mainfile(filepath=out)
    s = bpy.context.scene.envfx.bend
    assert (s.mode, s.pivot.name, round(s.strength, 6), s.spread) == ("PLANET", "Player", 0.05, 1.0)
    cube = bpy.data.objects["Cube"]
    assert [m.node_group.name for m in cube.modifiers] == ["EnvFX Bend"]
    dg = bpy.context.evaluated_depsgraph_get()
    got = envfx.bridge.evaluated_positions(cube, dg)
    want = envfx.core.bend.forward_local(envfx.bridge.get_positions(cube.data),
                                         envfx.bridge.matrix_to_numpy(cube.matrix_world),
                                         envfx.shader_nodes.bend.params_from_scene(bpy.context.scene))
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
        (["bend", "{scene}", "--horizon-offset", "inf"], "--horizon-offset inf: use a finite number"),
        (["bend", "{scene}", "--spread", "inf", "--export-engines", "{dir}/out"], "--spread inf: use a finite"),
        (["bend", "{scene}", "--strength=-inf"], "--strength -inf: use a finite number"),
        (["bend", "{scene}", "--side-strength", "nan"], "--side-strength nan: use a finite number"),
        (["bend", "{scene}", "--side-spread", "inf"], "--side-spread inf: use a finite number"),
        (["bend", "{scene}", "--horizon-offset", "1e30", "--export-engines", "{dir}/out"], "enormous"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message_and_leaves_files_alone(envfx, scene_file, tmp_path, capsys,
                                                                     args, message):
    with open(scene_file, "rb") as fh:
        before = fh.read()
    argv = [a.format(scene=scene_file, dir=tmp_path) for a in args]
    assert envfx.cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    with open(scene_file, "rb") as fh:
        assert fh.read() == before
    assert sorted(os.listdir(tmp_path)) == ["scene.blend"]


def test_bend_scene_bends_that_scene_only(envfx, scene_file, tmp_path, capsys, scene_depsgraph):
    """--scene picks one scene of a file with several; the others keep their objects and settings."""
    level = bpy.data.scenes.new("Level 2")
    rock = bpy.data.objects.new("Rock", bpy.data.objects["Cube"].data.copy())
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
    assert level.envfx.bend.mode == "PLANET" and first.envfx.bend.mode == "RUNNER"
    assert [m.node_group for m in rock.modifiers] == [envfx.shader_nodes.bend.group_for(level)]
    assert envfx.shader_nodes.bend.group_for(first) is None and not bpy.data.objects["Cube"].modifiers
    dg = scene_depsgraph(level)
    want = envfx.core.bend.forward_local(envfx.bridge.get_positions(rock.data),
                                         envfx.bridge.matrix_to_numpy(rock.matrix_world),
                                         envfx.shader_nodes.bend.params_from_scene(level))
    assert abs(envfx.bridge.evaluated_positions(rock, dg) - want).max() < 1e-4
    assert abs(want - envfx.bridge.get_positions(rock.data)).max() > 0.05


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
    for extra, message in ((["-o", str(tmp_path / "x.blend")], "--output works with one input file"),
                           ([str(tmp_path / "missing.blend")], "No such file")):
        assert envfx.cli.main(["bend", *files, *extra, "--pivot", "Player"]) == 2
        assert message in capsys.readouterr().err
    assert envfx.cli.main(["bend", *files, "--pivot", "Player", "--objects", "Cube", "--strength", "0.03"]) == 2
    err = capsys.readouterr().err
    assert f"{broken}: No pivot object named 'Player'" in err and "1 of 3 files failed" in err
    with open(broken, "rb") as fh:
        assert fh.read() == broken_before
    for path in (scene_file, level2):
        bpy.ops.wm.open_mainfile(filepath=path)
        assert envfx.operators.bend.bend_modifiers(bpy.data.objects["Cube"]), path
        assert bpy.context.scene.envfx.bend.strength == pytest.approx(0.03)
    # engine files per input file
    out = tmp_path / "engines"
    assert envfx.cli.main(["bend", scene_file, level2, "--export-engines", str(out)]) == 0
    for stem in ("scene", "level2"):
        assert sorted(os.listdir(out / stem)) == ["EnvFXBend.hlsl", "EnvFXBend.ush", "envfx_bend.gdshaderinc",
                                                  "envfx_bend.json"]


def test_bend_remove(envfx, scene_file):
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube"]) == 0
    assert envfx.cli.main(["bend", scene_file, "--objects", "Cube", "--remove"]) == 0
    bpy.ops.wm.open_mainfile(filepath=scene_file)
    assert len(bpy.data.objects["Cube"].modifiers) == 0


def test_bend_export_engines_writes_the_files_and_leaves_the_blend_alone(envfx, scene_file, tmp_path, capsys):
    with open(scene_file, "rb") as fh:
        before = fh.read()
    out = tmp_path / "engines"
    code = envfx.cli.main(["bend", scene_file, "--mode", "RUNNER_2AXIS", "--strength", "0.03", "--pivot", "Player",
                           "--export-engines", str(out)])
    assert code == 0, capsys.readouterr()
    assert "wrote 4 files" in capsys.readouterr().out
    meta = json.loads((out / "envfx_bend.json").read_text())
    assert meta["blender"]["mode"] == "RUNNER_2AXIS" and meta["blender"]["strength"] == pytest.approx(0.03)
    assert "scene.blend, scene Scene" in meta["source"]
    assert "ENVFX_BEND_SIDE_STRENGTH" in (out / "envfx_bend.gdshaderinc").read_text()
    assert (out / "EnvFXBend.hlsl").exists() and (out / "EnvFXBend.ush").exists()
    with open(scene_file, "rb") as fh:
        assert fh.read() == before                                         # nothing saved
