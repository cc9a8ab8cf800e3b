"""`blender -c envfx farm`: jobs written, checked and run by `openjd` on this machine, two tasks at once, and the
outputs compared with the one-machine batch over the same inputs. Inside the tests the Blender the tasks run is
this Python with Blender as a module (``tests/blender/cli_in_subprocess.py`` behind a small launcher script)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest

import bpy

from tests.blender import api

HERE = os.path.dirname(os.path.abspath(__file__))


def _openjd():
    near = shutil.which("openjd", path=os.path.dirname(sys.executable))
    venvs = os.environ.get("ENVFX_VENV_DIR") or os.path.join(HERE, "..", "..", ".venvs")  # empty = unset (venv.sh)
    return near or shutil.which("openjd", path=os.path.join(venvs, "blender-5.0", "bin"))


OPENJD = _openjd()
needs_openjd = pytest.mark.skipif(OPENJD is None, reason="openjd-cli is not installed (tools/venv.sh 5.0 installs it)")


def openjd() -> str:
    """The openjd command (the tests that run it are skipped without it: needs_openjd)."""
    assert OPENJD is not None, "openjd-cli is not installed"
    return OPENJD


def write_launcher(folder) -> str:
    """A `blender` for the job: `blender -b -c envfx ARGS` runs the EnvFX command line of this checkout in this
    Python (Blender as a module)."""
    path = os.path.join(str(folder), "blender")
    with open(path, "w") as fh:
        fh.write(f'#!/bin/sh\n[ "$1" = -b ] && shift\n[ "$1" = -c ] && shift 2\n'
                 f'exec "{sys.executable}" "{os.path.join(HERE, "cli_in_subprocess.py")}" "$@"\n')
    os.chmod(path, 0o755)
    return path


@pytest.fixture
def launcher(tmp_path):
    return write_launcher(tmp_path)


def openjd_run(job_dir, *args, **kw):
    return subprocess.Popen([openjd(), "run", os.path.join(job_dir, "template.yaml"), "-p",
                             "file://" + os.path.join(job_dir, "parameters.json"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def run_job(job_dir, workers: int = 2) -> tuple:
    """Every task of the job's first step on ``workers`` sessions at once, then Gather: (the tasks' exit codes, the
    Gather log, openjd's exit codes, Gather's exit code)."""
    with open(os.path.join(job_dir, "template.yaml")) as fh:
        text = fh.read()
    step = text.split('steps:\n  - name: "', 1)[1].split('"', 1)[0]
    count = int(text.split('range: "1-', 1)[1].split('"', 1)[0])
    tasks = [[{"Task": str(t)} for t in range(1 + w, count + 1, workers)] for w in range(workers)]
    runs = [openjd_run(job_dir, "--step", step, "--tasks", json.dumps(share)) for share in tasks if share]
    logs = [r.communicate()[0] for r in runs]
    gather = openjd_run(job_dir, "--step", "Gather", "--no-run-dependencies")
    log = gather.communicate()[0]
    codes = [_exit_codes(text) for text in logs]
    return [c for c in codes for c in c], log, [r.returncode for r in runs], int(_exit_codes(log)[0])


def _exit_codes(log: str) -> list:
    """The exit codes of the task processes, as openjd logs them (its own exit code is 1 for any failure)."""
    return [line.split("exited with code: ")[1].split()[0] for line in log.splitlines() if "exited with code: " in line]


def _textures(folder, count, size=16, seed=1):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        img = bpy.data.images.new(f"t{i}", size, size, alpha=True)
        api.pixels(img).foreach_set(rng.random((size, size, 4)).astype(np.float32).ravel())
        img.filepath_raw = os.path.join(folder, f"leaf{i:02d}.png")
        img.file_format = "PNG"
        img.save()
        bpy.data.images.remove(img)
        paths.append(os.path.join(folder, f"leaf{i:02d}.png"))
    return paths


def _tree_files(folder, count):
    """``count`` small plants (a trunk and a crown), saved uncompressed (bytes can be compared)."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(count):
        bpy.ops.wm.read_homefile(app_template="")
        for obj in list(bpy.data.objects):
            bpy.data.objects.remove(obj)
        bpy.ops.mesh.primitive_cylinder_add(radius=0.05 + 0.01 * i, depth=2, location=(0, 0, 1), vertices=8)
        bpy.ops.mesh.primitive_ico_sphere_add(radius=0.5, location=(0, 0, 2.2), subdivisions=1)
        path = os.path.join(folder, f"plant{i}.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path, compress=False)
        paths.append(path)
    bpy.ops.wm.read_homefile(app_template="")
    return paths


def _tree(folder) -> dict:
    out = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as fh:
                out[os.path.relpath(os.path.join(root, name), folder)] = fh.read()
    return out


@needs_openjd
def test_mips_job_of_12_textures_on_two_workers_equals_the_one_machine_batch(envfx, tmp_path, launcher, capsys):
    _textures(str(tmp_path / "tex"), 12)
    assert envfx.cli.main(["farm", "mips", str(tmp_path / "tex"), "--out", str(tmp_path / "farm-out"),
                           "--out", str(tmp_path / "job"), "--blender", launcher]) == 0
    assert "mips over 12 file(s) in 12 task(s)" in capsys.readouterr().out
    check = subprocess.run([openjd(), "check", str(tmp_path / "job" / "template.yaml")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    codes, log, run_codes, gather_code = run_job(str(tmp_path / "job"))
    assert codes == ["0"] * 12 and run_codes == [0, 0], log
    assert gather_code == 0 and "envfx farm: mips: 12 of 12 file(s) done by 12 task(s)" in log
    assert envfx.cli.main(["mips", str(tmp_path / "tex"), "--out", str(tmp_path / "one")]) == 0
    one, farm = _tree(str(tmp_path / "one")), _tree(str(tmp_path / "farm-out"))
    assert len(one) == 12 * 8 and sorted(farm) == sorted(one)  # 5 levels, DDS, report, comparison per image
    assert [name for name in one if farm[name] != one[name]] == []


@needs_openjd
def test_wind_job_of_6_files_on_two_workers_equals_the_one_machine_batch(envfx, tmp_path, launcher, capsys):
    plants = _tree_files(str(tmp_path / "plants"), 6)
    shutil.copytree(tmp_path / "plants", tmp_path / "one")
    before = _tree(str(tmp_path / "plants"))
    assert envfx.cli.main(["farm", "wind", *plants, "--ao-samples", "0", "--out", str(tmp_path / "job"), "--chunk",
                           "2", "--blender", launcher]) == 0
    codes, log, run_codes, gather_code = run_job(str(tmp_path / "job"))
    assert codes == ["0"] * 3 and gather_code == 0, log
    assert "envfx farm: wind: 6 of 6 file(s) done by 3 task(s)" in log
    # the one-machine batch, in a process of its own as the tasks (six files in one session, the job's two per
    # session): the saved files are normalised (core.blendfile: the numbers a session counts are zeroed, and the
    # memory addresses Blender 4.2 writes as block identifiers renumbered in file order), so they are the same
    # bytes on both versions; a task run again is compared by what the files hold: every object, its modifiers and
    # wind settings, every mesh attribute and UV map, bit for bit; and by their size
    files = [str(tmp_path / "one" / os.path.basename(p)) for p in plants]
    subprocess.run([launcher, "-b", "-c", "envfx", "wind", *files, "--ao-samples", "0"], check=True,
                   capture_output=True)
    one, farm = _tree(str(tmp_path / "one")), _tree(str(tmp_path / "plants"))
    assert [name for name in before if farm[name] != one[name]] == []
    # a task run again (a farm's retry after the files were saved) bakes the baked files: the same content
    again = openjd_run(str(tmp_path / "job"), "--step", "Wind", "-tp", "Task=2")
    assert again.wait() == 0, again.communicate()[0]
    again_files = _tree(str(tmp_path / "plants"))
    assert sorted(n for n in one if n.endswith(".blend")) == sorted(before)
    for name in before:
        assert farm[name] != before[name]  # baked
        assert len(farm[name]) == len(one[name])
        # (a file baked twice differs from one baked once in the editors' state saved with it: a node editor opened
        # on a file that has EnvFX's node groups already shows one; the scene data is the same)
        assert len(again_files[name]) == len(one[name])
        content = _blend_content(str(tmp_path / "one" / name))
        assert "EnvFX_Height_UV" in str(content)  # (the wind's data is in what is compared)
        assert _blend_content(str(tmp_path / "plants" / name)) == content, name


def test_a_saved_blend_is_normalised_and_opens_as_the_scene_it_was(envfx, tmp_path):
    """The save of every command zeroes the session numbers (ID.session_uid), which Blender sets anew on load: the
    file opens with the same content and every datablock gets a session number again."""
    plant = _tree_files(str(tmp_path), 1)[0]
    bpy.ops.wm.open_mainfile(filepath=plant, load_ui=False)
    before = _blend_content(plant)
    bpy.ops.wm.open_mainfile(filepath=plant, load_ui=False)
    envfx.cli.batch.save_blend(str(tmp_path / "saved.blend"))
    with open(tmp_path / "saved.blend", "rb") as fh:
        data = fh.read()
    spans = envfx.core.blendfile.runtime_spans(data)
    assert len(spans) > 10 and all(data[a:a + n] == bytes(n) for a, n in spans)
    assert not (d := envfx.core.blendfile.differences(envfx.core.blendfile.normalised(data), data)), d
    assert _blend_content(str(tmp_path / "saved.blend")) == before
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "saved.blend"), load_ui=False)
    uids = [id_.session_uid for id_ in [*bpy.data.objects, *bpy.data.meshes, *bpy.data.scenes, *bpy.data.screens]]
    assert 0 not in uids and len(set(uids)) == len(uids)
    bpy.ops.wm.read_homefile(app_template="")


SAVE_AGAIN = """
import sys
import bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[-2])
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[-1], compress=False)
"""


def _rich_file(path):
    """A scene with what a .blend's pointers name: materials in a mesh's slots (a pointer array), a node tree with
    links and a group with interface panels (an array of pointers to items), a modifier naming that group, parents,
    vertex groups, shape keys, custom properties naming datablocks, an action."""
    bpy.ops.wm.read_homefile(app_template="")
    bpy.ops.mesh.primitive_cylinder_add(vertices=8, location=(0, 0, 1))
    trunk = api.active()
    bpy.ops.mesh.primitive_ico_sphere_add(radius=0.5, location=(0, 0, 2.2), subdivisions=1)
    crown = api.active()
    crown.parent = trunk
    for name, color in (("Bark", (0.3, 0.2, 0.1, 1)), ("Leaf", (0.1, 0.5, 0.1, 1))):
        mat = bpy.data.materials.new(name)
        mat.use_nodes = True
        tree = api.node_tree(mat)
        api.socket(tree.nodes["Principled BSDF"].inputs["Base Color"]).default_value = color
        mix = tree.nodes.new("ShaderNodeMixRGB")
        tree.links.new(mix.outputs[0], tree.nodes["Principled BSDF"].inputs["Emission Color"])
        api.mesh(trunk).materials.append(mat)
    group = api.new_tree("Sway", bpy.types.GeometryNodeTree)
    interface = group.interface
    assert interface is not None
    panel = interface.new_panel("Wind")
    interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    interface.new_socket("Strength", in_out="INPUT", socket_type="NodeSocketFloat", parent=panel)
    interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    inp, out = group.nodes.new("NodeGroupInput"), group.nodes.new("NodeGroupOutput")
    group.links.new(inp.outputs["Geometry"], out.inputs["Geometry"])
    api.of(bpy.types.NodesModifier, crown.modifiers.new("Sway", "NODES")).node_group = group
    crown.vertex_groups.new(name="Tips").add([0, 1, 2], 0.5, "REPLACE")
    crown.shape_key_add(name="Basis")
    api.of(bpy.types.ShapeKeyPoint, crown.shape_key_add(name="Bent").data[0]).co = (0, 0, 3)
    trunk["envfx_note"] = {"material": bpy.data.materials["Leaf"], "weights": [0.5, 0.25]}
    trunk.keyframe_insert("location", frame=1)
    trunk.location.x = 1
    trunk.keyframe_insert("location", frame=10)
    bpy.ops.wm.save_as_mainfile(filepath=path, compress=False)
    bpy.ops.wm.read_homefile(app_template="")


def _node_trees(path) -> dict:
    """Every node tree of the file (materials' too): its nodes, links and interface items, by name."""
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    trees = [*bpy.data.node_groups, *(m.node_tree for m in bpy.data.materials if m.node_tree)]
    out = {}
    for tree in trees:
        out[tree.name] = {
            "nodes": sorted((n.name, n.bl_idname, [s.identifier for s in n.inputs]) for n in tree.nodes),
            "links": sorted((k.from_node.name, k.from_socket.identifier, k.to_node.name, k.to_socket.identifier)
                            for k in tree.links),
            "interface": [(i.item_type, i.name, getattr(getattr(i, "parent", None), "name", None))
                          for i in tree.interface.items_tree]}
    out["slots"] = {o.name: [s.material.name if s.material else None for s in o.material_slots]
                    for o in bpy.data.objects}
    out["parents"] = {o.name: getattr(o.parent, "name", None) for o in bpy.data.objects}
    out["keys"] = {k.user.name: [(b.name, api.of(bpy.types.ShapeKeyPoint, b.data[0]).co.to_tuple())
                                 for b in k.key_blocks] for k in bpy.data.shape_keys}
    out["props"] = {o.name: {k: repr(o[k].to_dict() if hasattr(o[k], "to_dict") else o[k]) for k in api.id_keys(o)}
                    for o in bpy.data.objects}
    out["actions"] = {a.name: sorted(len(getattr(a, "fcurves", None) or []) for _ in [0]) for a in bpy.data.actions}
    bpy.ops.wm.read_homefile(app_template="")
    return out


def test_two_sessions_saves_of_one_scene_are_the_same_bytes_once_normalised(envfx, tmp_path):
    """Two Blender sessions open one file and save it: normalised (core.blendfile), the saves are the same bytes on
    both versions (on 4.2 the memory addresses that identify blocks are renumbered in file order, every pointer
    with them), and the normalised file opens as the scene it was."""
    _rich_file(str(tmp_path / "rich.blend"))
    for name in ("a", "b"):
        subprocess.run([sys.executable, "-c", SAVE_AGAIN, str(tmp_path / "rich.blend"),
                        str(tmp_path / f"{name}.blend")], check=True, capture_output=True)
    saves = [(tmp_path / f"{name}.blend").read_bytes() for name in ("a", "b")]
    assert saves[0] != saves[1]  # (4.2: the addresses; 5.0: the session numbers)
    normal = [envfx.core.blendfile.normalised(data) for data in saves]
    assert not (d := envfx.core.blendfile.differences(normal[0], normal[1])), d
    (tmp_path / "n.blend").write_bytes(normal[0])
    assert not (d := envfx.core.blendfile.differences(envfx.core.blendfile.normalised(normal[0]), normal[0])), d
    trees = _node_trees(str(tmp_path / "a.blend"))
    assert ("SOCKET", "Strength", "Wind") in trees["Sway"]["interface"]  # (what is compared holds the pointers
    assert trees["slots"]["Cylinder"] == ["Bark", "Leaf"]  # named above)
    assert _node_trees(str(tmp_path / "n.blend")) == trees
    assert _blend_content(str(tmp_path / "n.blend")) == _blend_content(str(tmp_path / "a.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "n.blend"))  # (with its screens)
    assert {s.name for s in bpy.data.screens} and bpy.context.window_manager is not None
    bpy.ops.wm.read_homefile(app_template="")


def _rna_values(struct, depth=0) -> dict:
    """A PropertyGroup's settings as plain values (pointers by name; nested groups one level down)."""
    out = {}
    for prop in struct.bl_rna.properties:
        if prop.identifier == "rna_type":
            continue
        value = getattr(struct, prop.identifier)
        if prop.type == "POINTER":
            if isinstance(value, bpy.types.ID) or value is None:
                out[prop.identifier] = getattr(value, "name", None)
            elif depth < 2:
                out[prop.identifier] = _rna_values(value, depth + 1)
        elif prop.type != "COLLECTION":
            out[prop.identifier] = tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) \
                else value
    return out


# data type -> (field, values per element, numpy type) for foreach_get
ATTRIBUTE_DATA = {"FLOAT": ("value", 1, np.float32), "INT": ("value", 1, np.int32), "BOOLEAN": ("value", 1, bool),
                  "INT8": ("value", 1, np.int8), "FLOAT_VECTOR": ("vector", 3, np.float32),
                  "FLOAT_COLOR": ("color", 4, np.float32), "BYTE_COLOR": ("color", 4, np.float32),
                  "FLOAT2": ("vector", 2, np.float32), "INT32_2D": ("value", 2, np.int32),
                  "QUATERNION": ("value", 4, np.float32), "FLOAT4X4": ("value", 16, np.float32)}


def _blend_content(path) -> dict:
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    content = {}
    for obj in bpy.data.objects:
        item = {"type": obj.type, "matrix": [r.to_tuple() for r in obj.matrix_world],
                "modifiers": [(m.type, m.name, getattr(getattr(m, "node_group", None), "name", None))
                              for m in obj.modifiers], "envfx": _rna_values(api.envfx(obj))}
        if obj.type == "MESH":
            mesh = api.mesh(obj)
            for attr in mesh.attributes:
                held: Any = attr  # (each data type's subclass of Attribute has its own .data)
                data = held.data
                field, width, dtype = ATTRIBUTE_DATA[attr.data_type]
                buf = np.zeros(len(data) * width, dtype)
                data.foreach_get(field, buf)
                item[f"attribute {attr.name} {attr.domain} {attr.data_type}"] = buf.tobytes()
            item["uv"] = [uv.name for uv in mesh.uv_layers]
        content[obj.name] = item
    content["scene envfx"] = _rna_values(api.envfx())
    bpy.ops.wm.read_homefile(app_template="")
    return content


@needs_openjd
def test_one_bad_file_fails_only_its_task_and_gather_names_it(envfx, tmp_path, launcher):
    paths = _textures(str(tmp_path / "tex"), 3)
    with open(paths[1], "wb") as fh:
        fh.write(b"not a png")
    assert envfx.cli.main(["farm", "mips", *paths, "--out", str(tmp_path / "out"), "--out", str(tmp_path / "job"),
                           "--blender", launcher]) == 0
    codes, log, run_codes, gather_code = run_job(str(tmp_path / "job"), workers=3)
    # bad input (the command's exit 2) is not worth a retry, and OpenJD retries any failed task: the task ends with 0,
    # its summary keeps the refusal, and Gather fails naming the file in the one-machine batch's words
    assert codes == ["0", "0", "0"] and run_codes == [0, 0, 0], log
    with open(tmp_path / "job" / "summaries" / "task-00002.json") as fh:
        summary = json.load(fh)
    assert [(f["status"], f["code"]) for f in summary["files"]] == [("failed", 2)]
    assert gather_code == 2
    assert f"envfx mips: {paths[1]}: error: " in log
    assert f"envfx mips: 1 of 3 files failed: {paths[1]}" in log
    assert "envfx farm: mips: 2 of 3 file(s) done by 3 task(s)" in log
    with open(tmp_path / "job" / "report.txt") as fh:
        assert f"1 of 3 files failed: {paths[1]}" in fh.read()
    assert sorted(n for n in os.listdir(tmp_path / "out") if n.endswith("_mips.json")) == \
        ["leaf00_mips.json", "leaf02_mips.json"]


@needs_openjd
def test_a_failed_task_exit_1_stays_failed_and_its_retry_runs_it(envfx, tmp_path):
    """A failure worth a retry (here the worker's Blender crashes once, exit 1) fails the task, so the farm retries
    it and Gather waits; the retry does the file and Gather reports it done."""
    paths = _textures(str(tmp_path / "tex"), 2)
    real = write_launcher(tmp_path)
    crashing = tmp_path / "crashing-blender"
    crashing.write_text(f'#!/bin/sh\nif [ ! -e "{tmp_path}/crashed" ]; then touch "{tmp_path}/crashed"; '
                        f'echo "Segmentation fault" >&2; exit 1; fi\nexec "{real}" "$@"\n')
    os.chmod(crashing, 0o755)
    assert envfx.cli.main(["farm", "mips", *paths, "--out", str(tmp_path / "out"), "--out", str(tmp_path / "job"),
                           "--blender", str(crashing)]) == 0
    first = openjd_run(str(tmp_path / "job"), "--step", "Mips", "-tp", "Task=1")
    log = first.communicate()[0]
    assert first.returncode != 0 and _exit_codes(log) == ["1"], log
    gather = openjd_run(str(tmp_path / "job"), "--step", "Gather", "--no-run-dependencies")
    glog = gather.communicate()[0]
    assert _exit_codes(glog) == ["1"] and "task(s) 1, 2 left no summary" in glog, glog
    again = openjd_run(str(tmp_path / "job"))  # the retry (and the other task), then Gather
    log = again.communicate()[0]
    assert again.returncode == 0 and _exit_codes(log) == ["0", "0", "0"], log
    assert "envfx farm: mips: 2 of 2 file(s) done by 2 task(s)" in log


@needs_openjd
def test_a_task_killed_halfway_and_run_again_leaves_the_outputs_of_an_uninterrupted_run(envfx, tmp_path, launcher):
    paths = _textures(str(tmp_path / "tex"), 1, size=1024, seed=3)
    out = tmp_path / "out"
    assert envfx.cli.main(["farm", "mips", *paths, "--out", str(out), "--supersample", "8", "--out",
                           str(tmp_path / "job"), "--blender", launcher]) == 0
    run = openjd_run(str(tmp_path / "job"), "--step", "Mips", "-tp", "Task=1", start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and run.poll() is None:
        if out.is_dir() and any(n.startswith(".envfx-staging") for n in os.listdir(out)):
            break
        time.sleep(0.02)
    assert run.poll() is None, "the task ended before it could be killed halfway: use a bigger image"
    os.killpg(run.pid, signal.SIGKILL)  # the worker dies: no cleanup runs
    run.communicate()
    assert [n for n in os.listdir(out) if not n.startswith(".envfx-staging")] == []  # nothing half-written
    assert not (tmp_path / "job" / "summaries" / "task-00001.json").exists()
    again = openjd_run(str(tmp_path / "job"), "--step", "Mips", "-tp", "Task=1")
    assert again.wait() == 0, again.communicate()[0]
    assert envfx.cli.main(["mips", *paths, "--out", str(tmp_path / "one"), "--supersample", "8"]) == 0
    assert _tree(str(out)) == _tree(str(tmp_path / "one"))  # the killed task's staging folder removed too
    again = openjd_run(str(tmp_path / "job"), "--step", "Mips", "-tp", "Task=1")  # and run twice: the same
    assert again.wait() == 0
    assert _tree(str(out)) == _tree(str(tmp_path / "one"))


@pytest.mark.parametrize("args, message", [
    (["info", "{tmp}/a.blend"], "info cannot be split into farm tasks: info only prints what .blend files hold"),
    (["mips", "{tmp}/tex", "--out", "{tmp}/tex/mips"], "The output --out '{tmp}/tex/mips' is inside the input folder "
     "'{tmp}/tex'"),
    (["mips", "{tmp}/tex", "--out", "{tmp}/o", "--chunk", "0"], "--chunk 0: give the number of input files per task"),
    (["mips", "tex", "--out", "{tmp}/o"], "INPUT 'tex' is relative to the current folder, which a farm cannot map"),
    (["wind", "{tmp}/a.blend", "--output", "out.blend"], "--output 'out.blend' is relative to the current folder"),
    (["snow", "{tmp}/a.blend", "--chunk", "2"], "--chunk 2 with snow splits the bake of the interaction buffer "
     "(--bake) into parts of 2 frames, and there is no --bake: add it, or drop --chunk"),
    (["snow", "{tmp}/a.blend", "--bake", "--out-dir", "{tmp}/o", "--chunk", "4"], "--chunk 4 with snow splits the "
     "bake's frames into parts, which are planned before a worker opens the file: give the frames with --frames "
     "START:END"),
    (["snow", "{tmp}/a.blend", "--bake", "--out-dir", "{tmp}/o", "--frames", "1:4", "--chunk", "4"], "--chunk 4: "
     "the bake has 4 frames (1-4), which would be one part: give fewer frames per part (at most 3), or drop --chunk"),
    (["snow", "{tmp}/a.blend", "--bake", "--out-dir", "{tmp}/o", "--frames", "8:1", "--chunk", "4"], "--frames 8:1: "
     "the range is reversed, use START <= END"),
    (["snow", "{tmp}/a.blend", "--bake", "--out-dir", "{tmp}/o", "--frames", "1:8", "--final-only", "--chunk", "4"],
     "--chunk 4: --final-only cannot be split into parts of the bake (the parts share one .blend file"),
    (["snow", "{tmp}/a.blend", "--bake", "--out-dir", "{tmp}/o", "--frames", "1:8", "--generate", "--objects", "A",
      "--chunk", "4"], "--chunk 4: --generate cannot be split into parts of the bake"),
    (["snow", "{tmp}/a.blend", "--bake", "--out-dir", "{tmp}/o", "--frames", "1:8", "--part", "1-4", "--chunk", "4"],
     "--part and --state-dir are the farm's to give"),
    (["gas-giant", "--out", "{tmp}/o", "--frames", "1", "--chunk", "2"], "--chunk 2: gas-giant bakes one frame "
     "here, which cannot be split: drop --chunk, or bake a sequence (--frames N)"),
    (["gas-giant", "--out", "{tmp}/o", "--frames", "4", "--part", "1-2", "--chunk", "2"], "--part and --state-dir "
     "are the farm's to give: drop them, and give the frames per task with --chunk N"),
    (["wind", "{tmp}/a.blend", "--ao-samples"], "the arguments of wind are not valid"),
    (["mips", "{tmp}/tex", "--out", "{tmp}/o"], "--out JOB_DIR is missing: give the folder to write the job into, "
     "after the command's arguments (mips has an --out of its own: give both, the job's last)"),
])
def test_bad_input_says_what_to_do_and_writes_nothing(envfx, tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    _textures(str(tmp_path / "tex"), 2)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "a.blend"))
    args = [a.format(tmp=tmp_path) for a in args]
    job = [] if message.startswith("--out JOB_DIR") else ["--out", str(tmp_path / "job")]
    assert envfx.cli.main(["farm", *args, *job]) == 2
    assert f"envfx farm: error: {message.format(tmp=tmp_path)}" in capsys.readouterr().err
    assert not (tmp_path / "job").exists() and not (tmp_path / "o").exists()


@needs_openjd
def test_write_farm_job_writes_the_scenes_bakes_and_the_jobs_run(envfx, tmp_path, launcher):
    _textures(str(tmp_path / "tex"), 2)
    bpy.ops.mesh.primitive_plane_add(size=4)
    scene = api.scene()
    settings = api.envfx(scene)
    settings.lightmap.ground = api.active()
    settings.mips.source = "FOLDER"
    settings.mips.folder = str(tmp_path / "tex")
    settings.mips.output_dir = "//mips"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "level.blend"))
    jobs = envfx.operators.farm.farm_jobs(scene, [], str(tmp_path / "jobs"), blender=launcher)
    assert [(job.command, len(job.shares)) for job in jobs] == [("lightmap", 1), ("mips", 2)]
    assert api.ops.farm_write(directory=str(tmp_path / "jobs")) == {"FINISHED"}
    for command in ("lightmap", "mips"):
        template = tmp_path / "jobs" / command / "template.yaml"
        check = subprocess.run([openjd(), "check", str(template)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
    # the running Blender is the one the job names; here (Blender as a module) the launcher stands in for it
    envfx.operators.farm.write_farm_jobs(jobs)
    codes, log, _run_codes, gather_code = run_job(str(tmp_path / "jobs" / "mips"))
    assert codes == ["0", "0"] and gather_code == 0, log
    assert sorted(n for n in os.listdir(tmp_path / "mips") if n.endswith(".json")) == \
        ["leaf00_mips.json", "leaf01_mips.json"]


def test_write_farm_job_of_an_unsaved_file_says_to_save_it_and_writes_nothing(envfx, tmp_path):
    bpy.ops.mesh.primitive_plane_add()
    api.envfx().lightmap.ground = api.active()
    with pytest.raises(RuntimeError, match="The file is not saved: save it first"):
        api.ops.farm_write(directory=str(tmp_path / "jobs"))
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "level.blend"))
    api.envfx().lightmap.ground = None
    bpy.ops.wm.save_mainfile()
    with pytest.raises(RuntimeError, match="The scene has no bake set up for a farm"):
        api.ops.farm_write(directory=str(tmp_path / "jobs"))
    assert not (tmp_path / "jobs").exists()


def test_gas_giant_job_is_one_task_with_every_option_and_its_paths_as_parameters(envfx, tmp_path, capsys):
    palette = _textures(str(tmp_path / "pal"), 1)[0]
    assert envfx.cli.main(["farm", "gas-giant", "--out", str(tmp_path / "gg"), "--frames", "24", "--cloud-mode",
                           "--cloud-color", "1", "0.5", "0.25", "--palette", palette, "--out",
                           str(tmp_path / "job")]) == 0
    assert "gas-giant over one task" in capsys.readouterr().out
    with open(tmp_path / "job" / "parameters.json") as fh:
        params = json.load(fh)
    assert params == {"Blender": "blender", "JobFolder": str(tmp_path / "job"), "Out": str(tmp_path / "gg"),
                      "Palette": palette}
    job = envfx.core.farm
    with open(tmp_path / "job" / "template.yaml") as fh:
        text = fh.read()
    desc = json.loads(json.loads(text.split("data: ", 1)[1].split("\n", 1)[0]))
    assert job.share_commands(desc, 1, {"JobFolder": "/j", "Out": "/farm/gg", "Palette": "/farm/p.png"}) == [
        ("gas-giant", ["gas-giant", "--out", "/farm/gg", "--frames", "24", "--cloud-mode", "--cloud-color", "1",
                       "0.5", "0.25", "--palette", "/farm/p.png"])]  # (in the order given, the paths mapped)


@needs_openjd
def test_gas_giant_sequence_in_parts_on_openjd_equals_the_one_machine_bake(envfx, tmp_path, launcher, capsys):
    """24 frames in parts of 8 (three steps, each after the one before, each starting from the state the one before
    saved): the files are the one-machine bake's, byte for byte; a part run again (a retry) bakes only its frames
    and writes the same files."""
    args = ["--frames", "24", "--particles", "2000", "--iterations", "2", "--field", "16", "--cubemap", "64",
            "--equirect", "128", "--frame-iterations", "1", "--time-step", "0.1", "--field-interval", "3"]
    assert envfx.cli.main(["farm", "gas-giant", "--out", str(tmp_path / "farm-out"), *args, "--out",
                           str(tmp_path / "job"), "--chunk", "8", "--blender", launcher]) == 0
    assert "gas-giant over 24 frames in 3 parts, one after the other" in capsys.readouterr().out
    check = subprocess.run([openjd(), "check", str(tmp_path / "job" / "template.yaml")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    run = openjd_run(str(tmp_path / "job"))  # every step in the order of its dependencies, then Gather
    log = run.communicate()[0]
    assert run.returncode == 0 and _exit_codes(log) == ["0"] * 4, log
    for part in ("--part 1-8 ", "--part 9-16 ", "--part 17-24 "):
        assert part in log
    assert "envfx farm: gas-giant: 3 of 3 part(s) of the 24 frames done" in log
    assert sorted(os.listdir(tmp_path / "job" / "states")) == ["gasgiant_state_0008.npz", "gasgiant_state_0016.npz"]
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "one"), *args]) == 0
    one = _tree(str(tmp_path / "one"))
    assert len(one) == 24 * 8 + 1 and _tree(str(tmp_path / "farm-out")) == one
    for name in [n for n in one if n.endswith("_0012.png") or n.endswith("_0013.png")]:
        os.remove(tmp_path / "farm-out" / name)
    again = openjd_run(str(tmp_path / "job"), "--step", "GasGiant2", "--no-run-dependencies")
    log = again.communicate()[0]
    assert again.returncode == 0 and "--part 9-16 " in log and "--part 1-8" not in log, log
    assert _tree(str(tmp_path / "farm-out")) == one


@needs_openjd
def test_a_gas_giant_part_killed_halfway_and_run_again_leaves_the_one_machine_bakes_files(envfx, tmp_path, launcher):
    """The second of two parts is killed while it bakes (its worker dies: no cleanup): nothing of it is moved in and
    no state is saved; run again, it starts from the first part's state and the files are the one-machine bake's."""
    # (enough work in a part that on an idle machine it is still baking well after its staging folder appears)
    args = ["--frames", "4", "--particles", "300000", "--iterations", "2", "--field", "16", "--cubemap", "128",
            "--equirect", "256", "--frame-iterations", "48", "--threads", "1"]
    out, job = tmp_path / "farm-out", str(tmp_path / "job")
    assert envfx.cli.main(["farm", "gas-giant", "--out", str(out), *args, "--out", job, "--chunk", "2",
                           "--blender", launcher]) == 0
    first = openjd_run(job, "--step", "GasGiant1", "--no-run-dependencies")
    assert first.wait() == 0, first.communicate()[0]
    done = sorted(os.listdir(out))
    run = openjd_run(job, "--step", "GasGiant2", "--no-run-dependencies", start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and run.poll() is None:
        if any(n.startswith(".envfx-staging") for n in os.listdir(out)):
            break
        time.sleep(0.02)
    assert run.poll() is None, "the part ended before it could be killed halfway: use a bigger bake"
    time.sleep(0.2)
    assert run.poll() is None, "the part ended before it could be killed halfway: use a bigger bake"
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate()
    assert [n for n in sorted(os.listdir(out)) if not n.startswith(".envfx-staging")] == done  # nothing moved in
    assert not os.path.exists(os.path.join(job, "summaries", "task-00002.json"))
    again = openjd_run(job, "--step", "GasGiant2", "--no-run-dependencies")
    assert again.wait() == 0, again.communicate()[0]
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "one"), *args]) == 0
    assert _tree(str(out)) == _tree(str(tmp_path / "one"))  # (the killed part's staging folder removed too)


def test_a_task_told_to_stop_cancels_its_bake_and_leaves_its_files_not_done(envfx, tmp_path, launcher):
    """SIGTERM (a farm cancelling the task) during the first file of a share: the bake is cancelled and cleans
    up, the file after it is not started, and the summary says both are not done (exit 1, worth a retry)."""
    paths = _textures(str(tmp_path / "tex"), 2, size=1024, seed=3)
    out = tmp_path / "out"
    assert envfx.cli.main(["farm", "mips", *paths, "--out", str(out), "--supersample", "8", "--chunk", "2",
                           "--out", str(tmp_path / "job"), "--blender", launcher]) == 0
    with open(tmp_path / "job" / "template.yaml") as fh:
        data = json.loads(fh.read().split("data: ", 1)[1].split("\n", 1)[0])
    with open(tmp_path / "job.json", "w") as fh:
        fh.write(data)
    params = json.load(open(tmp_path / "job" / "parameters.json"))
    task = subprocess.Popen([launcher, "-b", "-c", "envfx", "farm", "task", str(tmp_path / "job.json"), "1",
                             *[w for k, v in params.items() if k != "Blender" for w in ("--path", f"{k}={v}")]],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and task.poll() is None:
        if out.is_dir() and any(n.startswith(".envfx-staging") for n in os.listdir(out)):
            break
        time.sleep(0.02)
    assert task.poll() is None, "the task ended before it could be stopped: use a bigger image"
    task.send_signal(signal.SIGTERM)
    log = task.communicate()[0]
    assert task.returncode == 1, log
    assert not out.exists()  # the bake's staging folder and the output folder it made removed: nothing written
    with open(tmp_path / "job" / "summaries" / "task-00001.json") as fh:
        summary = json.load(fh)
    assert [f["status"] for f in summary["files"]] == ["not done", "not done"] and summary["code"] == 1
    lines, code = envfx.core.farm.gather(json.loads(data), params)
    assert code == 1 and f"not done: {paths[0]}, {paths[1]}" in lines[0]


def _snow_walk_file(envfx, folder, generate: bool = True) -> str:
    """A ground with a snow cover and live trails, and two walkers crossing it over 12 frames: the file a snow bake
    in parts opens (``generate`` False: without the snow, the file `snow --generate --trails` opens)."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=8, y_subdivisions=8, size=6)
    api.active().name = "Ground"
    walkers = bpy.data.collections.new("Walkers")
    api.scene().collection.children.link(walkers)
    for name, keys in (("Walker", [(1, (-2.5, -0.5, 0.5)), (12, (2.5, 0.8, 0.5))]),
                       ("Dog", [(1, (1.5, -2.0, 0.3)), (7, (-1.0, 1.0, 0.3)), (12, (0.5, 2.0, 0.3))])):
        bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5 if name == "Walker" else 0.3, segments=8, ring_count=6)
        obj = api.active()
        obj.name = name
        for coll in list(obj.users_collection):
            coll.objects.unlink(obj)
        walkers.objects.link(obj)
        for frame, loc in keys:
            obj.location = loc
            obj.keyframe_insert("location", frame=frame)
    path = os.path.join(str(folder), "snow.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, compress=False)
    if generate:
        assert envfx.cli.main(["snow", path, *SNOW_GENERATE]) == 0
    return path


SNOW_GENERATE = ["--generate", "--objects", "Ground", "--spacing", "0.25", "--trails", "--actors", "Walkers"]


def _level_file(path):
    """A ground, a wall in collection Walls and a lamp in collection Lights: the file `lightmap --save` opens."""
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    bpy.ops.mesh.primitive_plane_add(size=12)
    api.active().name = "Ground"
    for name, make in (("Walls", lambda: bpy.ops.mesh.primitive_cube_add(size=1, location=(1, -1, 2.5))),
                       ("Lights", lambda: bpy.ops.object.light_add(type="POINT", location=(-2, -1.5, 2)))):
        coll = bpy.data.collections.new(name)
        scene.collection.children.link(coll)
        make()
        obj = api.active()
        for other in list(obj.users_collection):
            other.objects.unlink(obj)
        coll.objects.link(obj)
    bpy.ops.wm.save_as_mainfile(filepath=path, compress=False)
    bpy.ops.wm.read_homefile(app_template="")


# the commands that build EnvFX's node groups into the file they save, on the files of _farm_inputs
NODE_COMMANDS = {
    "plant0.blend": ["bend"],
    "snow.blend": ["snow", *SNOW_GENERATE],
    "level.blend": ["lightmap", "--ground", "Ground", "--obstacles", "Walls", "--lights", "Lights", "--resolution",
                    "16", "--samples", "2", "--save", "--out", "{maps}"],  # (one folder: the file names it)
}


def test_bend_snow_and_lightmap_saves_of_two_processes_are_the_same_bytes(envfx, tmp_path, launcher):
    """The commands that add node groups save files whose nodes Blender gave clock-seeded identifiers (and a
    simulation zone's nested references, a modifier's bakes, a mesh's face-set colour seed): normalised
    (core.blendfile renumbers them in file order), two processes' saves of one command are the same bytes."""
    inputs = tmp_path / "in"
    _tree_files(str(inputs), 1)
    _snow_walk_file(envfx, inputs, generate=False)
    _level_file(str(inputs / "level.blend"))
    saves = {}
    for run in ("a", "b"):
        folder = tmp_path / run
        shutil.copytree(inputs, folder)
        for name, command in NODE_COMMANDS.items():
            args = [a.format(maps=tmp_path / "maps") for a in command]
            done = subprocess.run([launcher, "-b", "-c", "envfx", args[0], str(folder / name), *args[1:]],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stdout + done.stderr
        saves[run] = {name: (folder / name).read_bytes() for name in NODE_COMMANDS}
    for name in NODE_COMMANDS:
        assert saves["a"][name] != (inputs / name).read_bytes()  # (saved with the command's node groups)
        assert not (d := envfx.core.blendfile.differences(saves["a"][name], saves["b"][name])), (name, d)


def _working(path) -> dict:
    """What a file's node groups do: each zone's paired output, each nodes modifier's bakes by node, and every
    mesh's float and vector attributes as evaluated at the first frame and after stepping 12 (the simulations run)."""
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    out: dict = {}
    for tree in bpy.data.node_groups:
        for node in tree.nodes:
            if node.bl_idname in ("GeometryNodeSimulationInput", "GeometryNodeRepeatInput"):
                out[(tree.name, node.name)] = getattr(getattr(node, "paired_output", None), "name", None)
    for obj in bpy.data.objects:
        for mod in obj.modifiers:
            if isinstance(mod, bpy.types.NodesModifier):
                out[(obj.name, mod.name)] = [getattr(bake.node, "name", None) for bake in mod.bakes]
    scene = api.scene()
    for frame in range(scene.frame_start, scene.frame_start + 12):
        scene.frame_set(frame)
        if frame in (scene.frame_start, scene.frame_start + 11):
            depsgraph = bpy.context.evaluated_depsgraph_get()
            for obj in [o for o in bpy.data.objects if o.type == "MESH"]:
                mesh = obj.evaluated_get(depsgraph).to_mesh()
                for attr in mesh.attributes:
                    if attr.data_type in ("FLOAT", "FLOAT_VECTOR"):
                        field, width, _dtype = ATTRIBUTE_DATA[attr.data_type]
                        held: Any = attr  # (each data type's subclass of Attribute has its own .data)
                        buf = np.zeros(len(held.data) * width, np.float32)
                        held.data.foreach_get(field, buf)
                        out[(frame, obj.name, attr.name)] = buf.tobytes()
                obj.evaluated_get(depsgraph).to_mesh_clear()
    bpy.ops.wm.read_homefile(app_template="")
    return out


def test_a_file_with_renumbered_node_identifiers_opens_and_its_zones_and_bakes_work(envfx, tmp_path, monkeypatch):
    """The snow file as Blender saved it (clock-seeded node identifiers) and normalised (renumbered, with the zones'
    pairing, the nested references and the modifiers' bakes): both open with every zone paired, every bake naming
    its simulation, and evaluate to the same snow over 12 frames of the walkers."""
    monkeypatch.setattr(envfx.core.blendfile, "normalise_file", lambda path, *args: False)  # (Blender's own save)
    path = _snow_walk_file(envfx, tmp_path)
    monkeypatch.undo()
    saved = (tmp_path / "snow.blend").read_bytes()
    assert envfx.core.blendfile.renumber_nodes(saved) != saved  # (Blender's identifiers are not 1, 2, ...)
    (tmp_path / "normal.blend").write_bytes(envfx.core.blendfile.normalised(saved))
    before, after = _working(path), _working(str(tmp_path / "normal.blend"))
    assert before["EnvFX Snow Trails", "Sim In"] == "Sim Out"
    assert before["Ground Snow", "EnvFX Snow Trails"] == ["Sim Out"]
    start = api.scene().frame_start
    assert before[start + 11, "Ground Snow", "position"] != before[start, "Ground Snow", "position"]  # (trodden)
    assert before[start + 11, "Walker", "snow_coverage"] != before[start, "Walker", "snow_coverage"]
    assert after == before


@needs_openjd
def test_snow_bake_in_parts_on_two_workers_equals_the_one_machine_bake(envfx, tmp_path, launcher, capsys):
    """12 frames of a buffer that follows a walker, in parts of 5 (1-5, 6-10, 11-12), on two workers at once: each
    part steps the buffer from the first frame and writes its own frames, the last part the JSON; the files are
    the one-machine bake's, byte for byte, and a part run again (a retry) writes the same files."""
    path = _snow_walk_file(envfx, tmp_path)
    args = ["--bake", "--resolution", "32", "--frames", "1:12", "--framing", "FOLLOW", "--pivot", "Walker", "--size",
            "4"]
    blend = _tree(str(tmp_path))["snow.blend"]
    assert envfx.cli.main(["farm", "snow", path, *args, "--out-dir", str(tmp_path / "farm-out"), "--out",
                           str(tmp_path / "job"), "--chunk", "5", "--blender", launcher]) == 0
    assert "snow over 12 frames in 3 parts, each on its own (at once on several workers)" in capsys.readouterr().out
    check = subprocess.run([openjd(), "check", str(tmp_path / "job" / "template.yaml")], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    codes, log, run_codes, gather_code = run_job(str(tmp_path / "job"))
    assert codes == ["0"] * 3 and run_codes == [0, 0] and gather_code == 0, log
    assert "envfx farm: snow: 3 of 3 part(s) of the 12 frames done" in log
    assert envfx.cli.main(["snow", path, *args, "--out-dir", str(tmp_path / "one")]) == 0
    one = _tree(str(tmp_path / "one"))
    assert len(one) == 12 + 1 and _tree(str(tmp_path / "farm-out")) == one
    assert _tree(str(tmp_path))["snow.blend"] == blend  # the parts leave the file as it is
    for name in ("snow_buffer_0006.exr", "snow_buffer_0009.exr"):
        os.remove(tmp_path / "farm-out" / name)
    again = openjd_run(str(tmp_path / "job"), "--step", "Snow", "-tp", "Task=2")
    log = again.communicate()[0]
    assert again.returncode == 0 and "--part 6-10" in log and "--part 1-5" not in log, log
    assert _tree(str(tmp_path / "farm-out")) == one


@pytest.mark.parametrize("part, message", [
    ("9-14", "Frames 9-14 are not a part of the bake's frames 1-12: give FIRST-LAST with 1 <= FIRST <= LAST <= 12 "
             "(the bake's frames: --frames, else the file's Snow bake Start and End)"),
    ("6-4", "--part 6-4: the range is reversed, use FIRST <= LAST"),
    ("six", "--part 'six': give the frames to bake as FIRST-LAST (e.g. 17-32), or one frame"),
])
def test_a_snow_part_outside_the_bakes_frames_says_what_to_do_and_writes_nothing(envfx, tmp_path, capsys, part,
                                                                                 message):
    path = _snow_walk_file(envfx, tmp_path)
    bpy.ops.wm.open_mainfile(filepath=path)
    snow = api.envfx().snow
    snow.frame_start, snow.frame_end = 1, 12
    bpy.ops.wm.save_mainfile()
    blend = _tree(str(tmp_path))
    capsys.readouterr()
    assert envfx.cli.main(["snow", path, "--bake", "--out-dir", str(tmp_path / "o"), "--resolution", "16",
                           "--part", part]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists() and _tree(str(tmp_path)) == blend
