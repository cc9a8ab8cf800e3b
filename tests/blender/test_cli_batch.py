"""`blender -c envfx ...` in pipelines: `//` paths on the command line, blank inputs, every check before the work,
messages that name what to fix, and Ctrl-C in a batch."""

import importlib
import importlib.util
import os
import shutil
import signal
import uuid

import bpy
import pytest

from tests.blender import api

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("cli_tests", os.path.join(ROOT, "tests", "blender", "test_cli.py"))
assert _spec is not None and _spec.loader is not None
cli_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli_tests)
digest, snow_file, tree_file, run_cli = cli_tests.digest, cli_tests.snow_file, cli_tests.tree_file, cli_tests.run_cli
GAS_GIANT_SMALL = ["--particles", "2000", "--iterations", "2", "--cubemap", "64", "--equirect", "128", "--field", "16"]
permissions_apply, _own = cli_tests.permissions_apply, cli_tests._own


@pytest.fixture
def scene_file(tmp_path):
    """levels/scene.blend: the startup scene (Cube, Camera, Light) and an empty "Player"."""
    bpy.ops.wm.read_homefile(app_template="")
    bpy.data.objects["Cube"].location = (0.0, 12.0, 0.0)
    api.scene().collection.objects.link(bpy.data.objects.new("Player", None))
    (tmp_path / "levels").mkdir()
    path = str(tmp_path / "levels" / "scene.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return path


@pytest.fixture
def at_root():
    """A fresh name NAME: a test that could write /NAME (POSIX reads //NAME so) checks it and removes it."""
    name = "envfx_test_" + uuid.uuid4().hex[:8]
    yield name
    for path in (f"/{name}", f"/{name}.blend", f"/{name}.npz"):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.remove(path)


def _image(folder, name="leaf.png"):
    path = os.path.join(str(folder), name)
    shutil.copyfile(os.path.join(ROOT, "docs", "snow.png"), path)
    return path


# --- `//` on the command line: the .blend file's folder, or refused where there is none ----------------------

def test_output_starting_with_slash_slash_is_next_to_the_input(envfx, scene_file, tmp_path, monkeypatch, capsys,
                                                                at_root):
    monkeypatch.chdir(tmp_path)
    assert envfx.cli.main(["bend", "levels/scene.blend", "-o", f"//{at_root}.blend"]) == 0, capsys.readouterr().err
    assert os.path.isfile(tmp_path / "levels" / f"{at_root}.blend") and not os.path.exists(f"/{at_root}.blend")
    assert envfx.cli.main(["wind", "levels/scene.blend", "--objects", "Cube", "--ao-samples", "0",
                           "-o", "//../up.blend"]) == 0, capsys.readouterr().err
    assert os.path.isfile(tmp_path / "up.blend")
    assert "saved " + str(tmp_path / "up.blend") in capsys.readouterr().out


def test_snow_out_dir_slash_slash_dot_dot_is_the_folder_above_the_file(envfx, tmp_path, monkeypatch, capsys):
    (tmp_path / "levels").mkdir()
    snow_file(tmp_path / "levels" / "s.blend")
    monkeypatch.chdir(tmp_path)
    assert envfx.cli.main(["snow", "levels/s.blend", "--generate", "--objects", "Ground", "--spacing", "0.5",
                           "--trails", "--actors", "Walkers", "--bake", "--out-dir", "//../buffer", "--resolution",
                           "16", "--frames", "1:2"]) == 0, capsys.readouterr().err
    assert os.listdir(tmp_path / "buffer") and not os.path.exists(tmp_path / "levels" / "buffer")
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "levels" / "s.blend"))
    assert api.envfx(api.scene()).snow.output_dir == "//../buffer"  # kept relative to the file, as Blender does


def test_snow_out_dir_slash_slash_with_output_elsewhere_still_names_the_bake(envfx, tmp_path, monkeypatch, capsys):
    """-o saves the file in another folder: its // Output Folder is made relative to the saved file, so it still
    names the folder the bake went to (before: //buffer, read next to the copy, where there is no bake)."""
    (tmp_path / "levels").mkdir()
    (tmp_path / "renders").mkdir()
    snow_file(tmp_path / "levels" / "s.blend")
    monkeypatch.chdir(tmp_path)
    assert envfx.cli.main(["snow", "levels/s.blend", "--generate", "--objects", "Ground", "--spacing", "0.5",
                           "--trails", "--actors", "Walkers", "--bake", "--out-dir", "//buffer", "--resolution", "16",
                           "--frames", "1:2", "-o", "renders/shot.blend"]) == 0, capsys.readouterr().err
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "renders" / "shot.blend"))
    assert api.envfx(api.scene()).snow.output_dir == "//../levels/buffer"
    assert api.ops.snow_drive_from_bake() == {"FINISHED"}


def test_gas_giant_slash_slash_is_the_folder_of_the_saved_blend(envfx, tmp_path, monkeypatch, capsys, at_root):
    (tmp_path / "levels").mkdir()
    monkeypatch.chdir(tmp_path)
    code = envfx.cli.main(["gas-giant", "--out", f"//{at_root}", *GAS_GIANT_SMALL, "--save", "levels/planet.blend"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err and not os.path.exists(f"/{at_root}")
    folder = tmp_path / "levels" / at_root
    assert os.path.isfile(folder / "gasgiant_equirect.png") and os.path.isfile(folder / "gasgiant.json")
    assert "added planet 'Gas Giant'" in out
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "levels" / "planet.blend"))
    assert "Gas Giant" in bpy.data.objects


@pytest.mark.parametrize("args", [
    ["gas-giant", "--out", "//{name}", *GAS_GIANT_SMALL],
    ["gas-giant", "--out", "{tmp}/gg", "--save", "//{name}.blend", *GAS_GIANT_SMALL],
    ["gas-giant", "--out", "{tmp}/gg", "--save-field", "//{name}.npz", *GAS_GIANT_SMALL],
    ["mips", "leaf.png", "--out", "//{name}"],
    ["mips", "//leaf.png", "--out", "{tmp}/mips"],
])
def test_slash_slash_without_a_blend_is_refused(envfx, tmp_path, monkeypatch, capsys, at_root, args):
    _image(tmp_path)
    monkeypatch.chdir(tmp_path)
    listing = sorted(os.listdir(tmp_path))
    assert envfx.cli.main([a.format(name=at_root, tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err
    assert "starts with // (the .blend file's folder), and there is no .blend file here" in err
    assert "give an absolute path or one relative to the current folder" in err
    if args[0] == "gas-giant" and "--save" not in args:
        assert "pass --save FILE.blend (// is then its folder)" in err
    assert sorted(os.listdir(tmp_path)) == listing
    assert not any(os.path.exists(f"/{at_root}{ext}") for ext in ("", ".blend", ".npz"))


def test_gas_giant_save_reports_a_planet_it_cannot_make_without_a_traceback(envfx, tmp_path, monkeypatch, capsys):
    def cannot_read(*_args, **_kw):
        raise RuntimeError("Error: Cannot read 'gasgiant_equirect.png': No such file or directory")
    monkeypatch.setattr(importlib.import_module(envfx.__name__ + ".operators.gasgiant"), "make_planet", cannot_read)
    code = envfx.cli.main(["gas-giant", "--out", str(tmp_path / "gg"), *GAS_GIANT_SMALL, "--save",
                           str(tmp_path / "planet.blend")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "the planet could not be made (Cannot read 'gasgiant_equirect.png'" in err
    assert f"{tmp_path / 'planet.blend'} was not saved" in err and not os.path.exists(tmp_path / "planet.blend")


# --- blank and ignored inputs -----------------------------------------------------------------------------

@pytest.mark.parametrize("blank", ["", " "])
def test_mips_blank_input_is_refused_not_read_as_the_current_folder(envfx, tmp_path, monkeypatch, capsys, blank):
    for name in ("unrelated1.png", "screenshot.png"):
        _image(tmp_path, name)
    monkeypatch.chdir(tmp_path)
    assert envfx.cli.main(["mips", blank, "--out", "out"]) == 2
    assert "envfx mips: error: An input path is empty: pass image files or folders" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["screenshot.png", "unrelated1.png"]


def test_gas_giant_planet_without_save_is_refused(envfx, tmp_path, capsys):
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "gg"), *GAS_GIANT_SMALL, "--planet", "Jupiter"]) == 2
    assert "--planet names the planet that --save adds to a .blend, and --save is not given: add --save " \
           "FILE.blend, or drop --planet" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "gg")


# --- wind: every asset checked before any bake ------------------------------------------------------------

def test_wind_each_names_the_flat_asset_before_any_bake(envfx, tmp_path, capsys):
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    for i in range(3):
        bpy.ops.mesh.primitive_cone_add(location=(3 * i, 0, 1))
        api.active().name = f"Clump{i}"
    bpy.ops.mesh.primitive_plane_add(size=4, location=(0, 5, 0))
    api.active().name = "GroundDecal"
    path = str(tmp_path / "grass.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    before = digest(path)
    assert envfx.cli.main(["wind", path, "--each", "--ao-samples", "0"]) == 2
    out, err = capsys.readouterr()
    assert f"envfx wind: {path}: error: The asset GroundDecal is flat (no height along world Z): wind data needs " \
           f"an upright asset; if it was imported lying down, rotate it upright first" in err
    assert "baked" not in out and "EnvFX Wind bake" not in out  # found by the check, not after the other bakes
    assert digest(path) == before


def test_wind_collection_of_another_scene_is_refused(envfx, tmp_path, capsys):
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    level1 = api.scene()
    level1.name = "Level 1"
    bpy.ops.mesh.primitive_cone_add()
    api.active().name = "Rock1"
    level2 = bpy.data.scenes.new("Level 2")
    plants = bpy.data.collections.new("Plants2")
    level2.collection.children.link(plants)
    plants.objects.link(bpy.data.objects.new("Tree2", api.mesh(bpy.data.objects["Rock1"]).copy()))
    path = str(tmp_path / "levels.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    before = digest(path)
    assert envfx.cli.main(["wind", path, "--collection", "Plants2", "--add", "--ao-samples", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: error: No collection named 'Plants2' in scene 'Level 1' (it is in another scene, or in none): " \
           f"pick one of the scene's collections (none), or link it into the scene first" in err
    assert digest(path) == before


# --- refused before the work ------------------------------------------------------------------------------

def test_gas_giant_save_into_a_read_only_file_is_refused_before_the_bake(envfx, scene_file, permissions_apply):
    folder, uid = permissions_apply
    shutil.copy(scene_file, os.path.join(folder, "planet.blend"))
    _own(folder, uid)
    os.chmod(os.path.join(folder, "planet.blend"), 0o444)
    code, out, err = run_cli(["gas-giant", "--out", "gg", *GAS_GIANT_SMALL, "--save", "planet.blend"], folder, uid)
    assert code == 2, err
    assert f"--save {os.path.join(folder, 'planet.blend')!r} is a read-only file: make it writable or choose " \
           f"another --save" in err
    assert "Gas giant bake" not in out and not os.path.exists(os.path.join(folder, "gg"))


def test_output_that_is_a_folder_is_refused_before_the_work(envfx, scene_file, tmp_path, capsys):
    os.mkdir(tmp_path / "dir.blend")
    before = digest(scene_file)
    assert envfx.cli.main(["bend", scene_file, "-o", str(tmp_path / "dir.blend")]) == 2
    out, err = capsys.readouterr()
    assert f"--output {str(tmp_path / 'dir.blend')!r} is a folder: give the path of a .blend file to write" in err
    assert "bent" not in out and digest(scene_file) == before and not os.listdir(tmp_path / "dir.blend")


def test_bend_that_changes_nothing_does_not_rewrite_the_file(envfx, scene_file, capsys):
    assert envfx.cli.main(["bend", scene_file, "--pivot", "Player"]) == 0
    capsys.readouterr()
    stamp = os.stat(scene_file).st_mtime_ns, digest(scene_file)
    assert envfx.cli.main(["bend", scene_file, "--pivot", "Player"]) == 0
    assert f"bent 0 object(s), 1 unchanged; nothing changed, {scene_file} not saved" in capsys.readouterr().out
    assert (os.stat(scene_file).st_mtime_ns, digest(scene_file)) == stamp
    assert envfx.cli.main(["bend", scene_file, "--strength", "0.02"]) == 0  # a new setting is a change: saved
    assert "saved" in capsys.readouterr().out and digest(scene_file) != stamp[1]


@pytest.mark.parametrize("command", [["bend"], ["snow", "--trails", "--actors", "Walkers", "--bake", "--out-dir",
                                                "buffer", "--framing", "FOLLOW"]])
def test_a_missing_pivot_lists_the_scene_objects(envfx, tmp_path, capsys, command):
    path = snow_file(tmp_path / "s.blend")
    assert envfx.cli.main([command[0], path, *command[1:], "--pivot", "player"]) == 2
    assert f"{path}: error: No pivot object named 'player' in scene 'Scene': names are case-sensitive; the scene " \
           f"has Ground, Walker" in capsys.readouterr().err


def test_snow_bake_checks_run_before_the_cover_is_generated(envfx, tmp_path, capsys):
    path = snow_file(tmp_path / "s.blend")
    (tmp_path / "notafolder").write_text("a file")
    before = digest(path)
    assert envfx.cli.main(["snow", path, "--generate", "--objects", "Ground", "--spacing", "0.5", "--trails",
                           "--actors", "Walkers", "--bake", "--out-dir", str(tmp_path / "notafolder")]) == 2
    out, err = capsys.readouterr()
    assert "is a file, not a folder: pass a folder as --out-dir" in err
    assert "snow mesh" not in out and digest(path) == before
    assert envfx.cli.main(["snow", path, "--generate", "--objects", "Ground", "--spacing", "0.5", "--bake",
                           "--out-dir", str(tmp_path / "b"), "--actors", "Walkers", "--framing", "FOLLOW"]) == 2
    out, err = capsys.readouterr()
    assert "--framing FOLLOW needs a pivot: pass --pivot OBJECT" in err and "snow mesh" not in out


# --- argument errors told by the sub-command --------------------------------------------------------------

def test_snow_with_two_files_says_it_takes_one(envfx, scene_file, tmp_path, capsys):
    other = shutil.copy(scene_file, tmp_path / "b.blend")
    assert envfx.cli.main(["snow", scene_file, str(other), "--trails", "--actors", "Walkers"]) == 2
    err = capsys.readouterr().err
    assert "usage: blender -c envfx snow" in err
    assert f"snow takes one .blend file ({other} given besides {scene_file}): run it once per file" in err
    assert envfx.cli.main(["bend", scene_file, "--pivto", "Player"]) == 2
    err = capsys.readouterr().err
    assert "usage: blender -c envfx bend" in err and "unrecognized arguments: --pivto Player" in err


# --- Ctrl-C in a batch ------------------------------------------------------------------------------------

@pytest.mark.parametrize("signum, what", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_ctrl_c_in_a_batch_stops_after_the_file_in_progress_and_names_the_files(envfx, scene_file, tmp_path,
                                                                              capsys, signum, what):
    """The Ctrl-C (or a farm's SIGTERM, which killed the batch at once outside a bake) arrives while Blender loads
    the second file, in a load handler (where a KeyboardInterrupt was printed and swallowed, and the batch ran on):
    the file in progress is finished, the others are not started, and the last line says which are which."""
    paths = [shutil.copy(scene_file, tmp_path / f"f{i}.blend") for i in range(4)]
    before = {p: digest(p) for p in paths}

    @bpy.app.handlers.persistent
    def ctrl_c(*_args):
        if bpy.data.filepath.endswith("f1.blend"):
            os.kill(os.getpid(), signum)

    bpy.app.handlers.load_post.append(ctrl_c)
    try:
        code = envfx.cli.main(["bend", *map(str, paths)])
    finally:
        bpy.app.handlers.load_post.remove(ctrl_c)
    out, err = capsys.readouterr()
    assert code == 1, err
    assert f"{what}: stopping after the work in progress ({what} again stops at once)" in err
    assert err.strip().splitlines()[-1] == (f"envfx bend: cancelled: done {paths[0]}, {paths[1]}; not done (left as "
                                            f"they were): {paths[2]}, {paths[3]}")
    assert [digest(p) != before[p] for p in paths] == [True, True, False, False]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers are put back
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.parametrize("saved", [True, False])
def test_a_second_ctrl_c_stops_at_once_and_counts_the_file_by_whether_it_was_saved(envfx, scene_file, tmp_path,
                                                                                 capsys, saved):
    cli = envfx.cli.batch
    paths = [shutil.copy(scene_file, tmp_path / f"f{i}.blend") for i in range(3)]

    def ctrl_c_twice():
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # raises KeyboardInterrupt here

    def work(path):
        cli.open_blend(path)
        api.scene().frame_current = 7
        if path == str(paths[1]) and not saved:
            ctrl_c_twice()
        cli.save_blend(path)
        if path == str(paths[1]):
            ctrl_c_twice()

    assert cli.run_files("bend", [str(p) for p in paths], work) == 1
    err = capsys.readouterr().err
    done = [paths[0], paths[1]] if saved else [paths[0]]
    left = [p for p in paths if p not in done]
    assert err.strip().splitlines()[-1] == (f"envfx bend: cancelled: done {', '.join(map(str, done))}; not done "
                                            f"(left as they were): {', '.join(map(str, left))}")
