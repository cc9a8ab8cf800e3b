"""Farm jobs (core.farm): the Open Job Description template of every batch command, `openjd check` on each, the
task command lines (path mapping, per-file output folders, chunks), the gathered report and bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from core import farm

OPENJD = shutil.which("openjd", path=os.path.dirname(sys.executable)) or shutil.which("openjd")


def _files(tmp_path, names, folder="in"):
    base = tmp_path / folder
    base.mkdir(exist_ok=True)
    for n in names:
        (base / n).write_bytes(b"x")
    return [str(base / n) for n in names]


def _jobs(tmp_path):
    """One job of every command, as the command line plans them."""
    blends = _files(tmp_path, ["a.blend", "b.blend", "c.blend"])
    images = _files(tmp_path, ["leaf.png", "bark.png"], "tex")
    out = str(tmp_path / "out")
    return {
        "wind": farm.plan_job("wind", blends, ["--ao-samples", "0"], str(tmp_path / "job-wind"), chunk=2),
        "bend": farm.plan_job("bend", blends, [("--export-engines", out)], str(tmp_path / "job-bend")),
        "lightmap": farm.plan_job("lightmap", blends, [("--out", out), "--resolution", "64"],
                                  str(tmp_path / "job-lightmap")),
        "vat": farm.plan_job("vat", blends[:1], [("--out", out), "--objects", "Flag"], str(tmp_path / "job-vat")),
        "mips": farm.plan_job("mips", images, [("--out", out)], str(tmp_path / "job-mips"), chunk=1),
        "snow": farm.plan_job("snow", blends[:1], ["--bake", ("--out-dir", out)], str(tmp_path / "job-snow")),
        "gas-giant": farm.plan_job("gas-giant", [], [("--out", out), ("--palette", images[0]), "--frames", "24"],
                                   str(tmp_path / "job-gas"), blender="/opt/blender/blender"),
    }


def _write_checked(job, what):
    """``farm.write_job(job)``; where openjd-cli is installed, ``openjd check`` accepts the template written."""
    template, _params = farm.write_job(job)
    if OPENJD:
        run = subprocess.run([OPENJD, "check", template], capture_output=True, text=True)
        assert run.returncode == 0 and "passes validation" in run.stdout, (what, run.stdout, run.stderr)


@pytest.mark.skipif(OPENJD is None, reason="openjd-cli is not installed (tools/venv.sh installs it in the 5.0 venv)")
def test_openjd_check_accepts_the_template_of_every_command(tmp_path):
    assert OPENJD is not None  # (the skipif)
    for command, job in _jobs(tmp_path).items():
        _write_checked(job, command)


def test_the_yaml_is_the_template():
    yaml = pytest.importorskip("yaml")
    doc = {"a": "x: y # z", "b": [{"c": "{{Param.X}}", "d": 3}, "-b"], "e": "line\nnext \"quoted\" é", "f": []}
    assert yaml.safe_load(farm.to_yaml(doc)) == doc


def test_every_path_is_a_path_parameter_and_the_files_are_named_by_them(tmp_path):
    jobs = _jobs(tmp_path)
    doc = farm.template(jobs["lightmap"])
    params = {p["name"]: p for p in doc["parameterDefinitions"]}
    assert params["Input1"] == {"name": "Input1", "type": "PATH", "objectType": "DIRECTORY", "dataFlow": "IN",
                                "default": str(tmp_path / "in"), "description": "a folder of input files"}
    assert params["Out"]["dataFlow"] == "OUT" and params["JobFolder"]["dataFlow"] == "INOUT"
    assert params["Blender"]["type"] == "STRING"
    desc = json.loads(doc["steps"][0]["script"]["embeddedFiles"][0]["data"])
    assert str(tmp_path) not in json.dumps(desc)  # every path by its parameter
    assert desc["shares"] == [[["Input1", "a.blend"]], [["Input1", "b.blend"]], [["Input1", "c.blend"]]]
    assert farm.template(jobs["wind"])["parameterDefinitions"][2]["dataFlow"] == "INOUT"  # saved in place
    gas = {p["name"]: p for p in farm.template(jobs["gas-giant"])["parameterDefinitions"]}
    assert gas["Palette"]["objectType"] == "FILE" and gas["Palette"]["dataFlow"] == "IN"
    assert gas["Blender"]["default"] == "/opt/blender/blender"


def test_tasks_split_by_file_and_chunk_and_run_with_the_mapped_paths(tmp_path):
    jobs = _jobs(tmp_path)
    wind = jobs["wind"].description()
    assert [len(s) for s in wind["shares"]] == [2, 1]
    mapped = {"JobFolder": "/farm/job", "Input1": "/farm/in"}
    assert farm.share_commands(wind, 1, mapped) == [
        ("/farm/in/a.blend", ["wind", "/farm/in/a.blend", "--ao-samples", "0"]),
        ("/farm/in/b.blend", ["wind", "/farm/in/b.blend", "--ao-samples", "0"])]
    # several files: each writes into <out>/<file name>, as the one-machine batch does
    light = jobs["lightmap"].description()
    assert len(light["shares"]) == 3
    cmd = farm.share_commands(light, 2, {"JobFolder": "/j", "Input1": "/i", "Out": "/o"})
    assert cmd == [("/i/b.blend", ["lightmap", "/i/b.blend", "--out", "/o/b", "--resolution", "64"])]
    vat = jobs["vat"].description()  # one file: the folder itself
    assert farm.share_commands(vat, 1, {"JobFolder": "/j", "Input1": "/i/a.blend", "Out": "/o"})[0][1][:4] == \
        ["vat", "/i/a.blend", "--out", "/o"]
    vat_params = farm.template(jobs["vat"])["parameterDefinitions"]  # a file alone in its folder: a FILE
    assert (vat_params[2]["name"], vat_params[2]["objectType"]) == ("Input1", "FILE")
    gas = jobs["gas-giant"].description()
    assert len(gas["shares"]) == 1
    assert farm.share_commands(gas, 1, {"JobFolder": "/j", "Out": "/o", "Palette": "/p/leaf.png"}) == [
        ("gas-giant", ["gas-giant", "--out", "/o", "--palette", "/p/leaf.png", "--frames", "24"])]
    with pytest.raises(farm.FarmError, match="tasks 1 to 2"):
        farm.share_commands(wind, 3, mapped)


def _summary(folder, task, *entries, code=0):
    files = [{"label": label, "status": status, "code": c, "errors": errors, "output": []}
             for label, status, c, errors in entries]
    farm.write_summary(folder, task, files, code)


def test_gather_words_the_report_as_the_one_machine_batch(tmp_path):
    blends = _files(tmp_path, ["a.blend", "b.blend", "c.blend", "d.blend"])
    job = farm.plan_job("wind", blends, [], str(tmp_path / "job"))
    desc, folder, paths = job.description(), job.folder, farm.parameter_values(job)
    lines, code = farm.gather(desc, paths)
    assert code == 1 and lines[-1] == "envfx farm: wind: 0 of 4 file(s) done by 4 task(s)"
    assert "not done (left as they were): " + ", ".join(blends) in lines[0]
    _summary(folder, 1, (blends[0], "done", 0, []))
    _summary(folder, 2, (blends[1], "failed", 2, [f"envfx wind: {blends[1]}: error: the file is read-only"]), code=2)
    _summary(folder, 3, (blends[2], "done", 0, []))
    lines, code = farm.gather(desc, paths)
    assert code == 2
    assert lines[0] == f"envfx wind: {blends[1]}: error: the file is read-only"
    assert lines[1] == f"envfx wind: 1 of 4 files failed and were left unchanged: {blends[1]}"
    assert lines[2] == (f"envfx wind: done {blends[0]}, {blends[2]}; not done (left as they were): {blends[3]}; "
                        f"task(s) 4 left no summary: not run yet, or stopped before the end: run them again")
    _summary(folder, 4, (blends[3], "done", 0, []))
    _summary(folder, 2, (blends[1], "done", 0, []))  # the task run again replaces its summary
    assert farm.gather(desc, paths) == (["envfx farm: wind: 4 of 4 file(s) done by 4 task(s)"], 0)
    mapped = dict(paths, Input1="/farm/in")  # on a worker: the files by their paths there
    _summary(folder, 4, (blends[3], "failed", 1, []), code=1)
    assert farm.gather(desc, mapped)[0][0] == "envfx wind: /farm/in/d.blend: error: failed with exit code 1"


def test_a_job_written_into_the_folder_of_another_job_does_not_gather_its_summaries(tmp_path):
    """Job folders get reused (`--out /jobs/wind` every night): the earlier job's summaries are this job's tasks'
    numbers, so a task of the new job that left no summary (a crash) was reported done (Gather read the old one)."""
    old = _files(tmp_path, ["a.blend", "b.blend"], "monday")
    job = farm.plan_job("wind", old, [], str(tmp_path / "job"))
    farm.write_job(job)
    _summary(job.folder, 1, (old[0], "done", 0, []))
    _summary(job.folder, 2, (old[1], "done", 0, []))
    farm.write_report(job.folder, ["envfx farm: wind: 2 of 2 file(s) done by 2 task(s)"])
    farm.write_job(job)  # the same job written again keeps what its tasks did
    assert farm.gather(job.description(), farm.parameter_values(job))[1] == 0
    new = _files(tmp_path, ["a.blend", "b.blend"], "tuesday")
    job = farm.plan_job("wind", new, [], str(tmp_path / "job"))
    farm.write_job(job)
    assert not (tmp_path / "job" / "report.txt").exists()
    _summary(job.folder, 1, (new[0], "done", 0, []))  # task 2 crashed before its summary
    lines, code = farm.gather(job.description(), farm.parameter_values(job))
    assert code == 1 and lines[0].startswith(f"envfx wind: done {new[0]}; not done (left as they were): {new[1]}; "
                                             f"task(s) 2 left no summary")


def test_gather_names_the_file_of_an_error_that_did_not(tmp_path):
    images = _files(tmp_path, ["a.png", "b.png"], "tex")
    job = farm.plan_job("mips", images, [("--out", str(tmp_path / "out"))], str(tmp_path / "job"))
    _summary(job.folder, 1, (images[0], "failed", 2, ["envfx mips: error: Image file cannot be read"]), code=2)
    _summary(job.folder, 2, (images[1], "done", 0, []))
    lines, code = farm.gather(job.description(), farm.parameter_values(job))
    assert lines[:2] == [f"envfx mips: {images[0]}: error: Image file cannot be read",
                         f"envfx mips: 1 of 2 files failed: {images[0]}"]  # (mips changes no input: no "unchanged")


@pytest.mark.parametrize("command, inputs, args, chunk, message", [
    ("info", ["in/a.blend"], [], 1, "info cannot be split into farm tasks: info only prints"),
    ("mips", ["tex/a.png", "tex/b.png"], [("--out", "tex/mips")], 1, "The output --out .* is inside the input folder"),
    ("lightmap", ["in/a.blend", "in/b.blend"], [("--out", "in/maps")], 1, "inside the input folder"),
    ("mips", ["tex/a.png"], [("--out", "out")], 0, "--chunk 0: give the number of input files per task, 1 or more"),
    ("snow", ["in/a.blend"], [("--out-dir", "o")], (4, (1, 4)), "--chunk 4: the bake has 4 frames .1-4., which "
     "would be one part: give fewer frames per part .at most 3., or drop --chunk"),
    ("snow", ["in/a.blend"], [("--out-dir", "o")], (2, (7, 7)), "--chunk 2: snow bakes one frame here, which "
     "cannot be split: drop --chunk, or bake a sequence .--frames START:END."),
    ("snow", ["in/a.blend"], [("--out-dir", "o")], (0, (1, 8)), "--chunk 0: give the number of frames per task"),
])
def test_bad_input_is_refused_and_nothing_is_written(tmp_path, command, inputs, args, chunk, message):
    inputs = [str(tmp_path / p) for p in inputs]
    args = [(o, str(tmp_path / p)) for o, p in args]
    chunk, frames = chunk if isinstance(chunk, tuple) else (chunk, None)
    with pytest.raises(farm.FarmError, match=message):
        job = farm.plan_job(command, inputs, args, str(tmp_path / "job"), chunk=chunk, frames=frames)
        farm.write_job(job)
    assert not os.path.exists(tmp_path / "job")


def test_a_file_given_twice_is_refused(tmp_path):
    """``farm bend a.blend a.blend`` (overlapping patterns), or one file under two names: two tasks would open and
    save it at once on two workers, and Gather would count it twice."""
    blends = _files(tmp_path, ["a.blend", "b.blend"])
    with pytest.raises(farm.FarmError, match=r"'.*a\.blend' is given twice: .* give each file once"):
        farm.plan_job("bend", [blends[0], blends[1], blends[0]], [], str(tmp_path / "job"))
    os.symlink(blends[0], tmp_path / "link.blend")
    with pytest.raises(farm.FarmError, match=r"link\.blend' \(the file '.*a\.blend'\) is given twice"):
        farm.plan_job("wind", [blends[0], str(tmp_path / "link.blend")], [], str(tmp_path / "job"))
    assert not os.path.exists(tmp_path / "job")
    farm.plan_job("bend", blends, [], str(tmp_path / "job"))  # each once


def test_the_job_folder_inside_an_input_folder_is_refused(tmp_path):
    blends = _files(tmp_path, ["a.blend", "b.blend"])
    with pytest.raises(farm.FarmError, match="The job folder .* is inside the input folder"):
        farm.plan_job("wind", blends, [], str(tmp_path / "in" / "job"))
    farm.plan_job("lightmap", blends[:1], [("--out", str(tmp_path / "in" / "maps"))], str(tmp_path / "job"))  # one
    # file is no folder of inputs: its light map may go next to it


def test_a_path_relative_to_the_current_folder_is_refused_and_slash_slash_is_the_blend_folder(tmp_path):
    with pytest.raises(farm.FarmError, match=r"--out 'maps' is relative to the current folder, which a farm cannot "
                       r"map .*: give an absolute path \(or one starting with // for the .blend file's folder\)"):
        farm.absolute("maps", "--out", base=str(tmp_path / "a.blend"))
    assert farm.absolute("//../maps", "--out", base=str(tmp_path / "lv" / "a.blend")) == str(tmp_path / "maps")
    with pytest.raises(farm.FarmError, match="there is no one .blend file"):
        farm.absolute("//maps", "--out")
    with pytest.raises(farm.FarmError, match="--blender 'bin/blender' is relative"):
        farm.plan_job("wind", _files(tmp_path, ["a.blend"]), [], str(tmp_path / "job"), blender="bin/blender")


def test_a_task_fails_for_a_retry_and_succeeds_over_bad_input():
    def f(status, code):
        return {"label": "x", "status": status, "code": code, "errors": [], "output": []}
    assert farm.task_exit_code([f("done", 0), f("done", 0)]) == 0
    assert farm.task_exit_code([f("done", 0), f("failed", 2)]) == 0  # bad input: a retry fails the same; Gather says
    assert farm.task_exit_code([f("failed", 2), f("failed", 1)]) == 1  # a crash, a full disk: worth a retry
    assert farm.task_exit_code([f("done", 0), f("not done", 1)]) == 1  # stopped: run it again
    assert farm.task_exit_code([]) == 0


def test_a_sequence_in_parts_is_one_step_per_part_each_after_the_one_before(tmp_path):
    out, job_dir = str(tmp_path / "out"), str(tmp_path / "job")
    job = farm.plan_job("gas-giant", [], [("--out", out), "--frames", "20"], job_dir, chunk=8, frames=20)
    assert job.parts == [(1, 8), (9, 16), (17, 20)] and len(job.shares) == 3
    doc = farm.template(job)
    steps = doc["steps"]
    assert [s["name"] for s in steps] == ["GasGiant1", "GasGiant2", "GasGiant3", "Gather"]
    assert [s.get("dependencies") for s in steps] == [None, [{"dependsOn": "GasGiant1"}],
                                                       [{"dependsOn": "GasGiant2"}], [{"dependsOn": "GasGiant3"}]]
    assert doc["name"] == "EnvFX gas-giant (20 frames in 3 parts)"
    desc = job.description()
    paths = {"JobFolder": "/farm/job", "Out": "/farm/out"}
    assert farm.share_commands(desc, 2, paths) == [
        ("frames 9-16", ["gas-giant", "--out", "/farm/out", "--frames", "20", "--part", "9-16", "--state-dir",
                         os.path.join("/farm/job", "states")])]
    _write_checked(job, doc["name"])
    entry = {"label": "frames 1-8", "status": "done", "code": 0, "errors": [], "output": []}
    farm.write_summary(job_dir, 1, [entry], 0)
    failed = {**entry, "label": "frames 9-16", "status": "failed", "code": 1,
              "errors": ["envfx gas-giant: error: No saved state"]}
    farm.write_summary(job_dir, 2, [failed], 1)
    lines, code = farm.gather(desc, {"JobFolder": job_dir, "Out": out})
    assert code == 1
    assert lines[0] == "envfx gas-giant: frames 9-16: error: No saved state"
    assert lines[1].startswith("envfx gas-giant: done frames 1-8; not done (left as they were): frames 17-20; "
                               "task(s) 3 left no summary")
    assert lines[-1] == "envfx farm: gas-giant: 1 of 3 part(s) of the 20 frames done"
    with pytest.raises(farm.FarmError, match="--part and --state-dir are the farm's to give"):
        farm.plan_job("gas-giant", [], [("--out", out), "--part", "1-2"], job_dir, chunk=2, frames=4)
    with pytest.raises(farm.FarmError, match="bakes one frame here, which cannot be split"):
        farm.plan_job("gas-giant", [], [("--out", out)], job_dir, chunk=2, frames=1)


def test_a_snow_bake_in_parts_is_one_step_whose_parts_run_at_once(tmp_path):
    """The snow buffer's parts step the buffer from the first frame themselves (no state between them): one step,
    a task per part (a farm runs them at once), each baking the one .blend file, which it only reads."""
    blend, out, job_dir = str(tmp_path / "in" / "a.blend"), str(tmp_path / "out"), str(tmp_path / "job")
    job = farm.plan_job("snow", [blend], ["--bake", ("--out-dir", out), "--frames", "101:148"], job_dir, chunk=20,
                        frames=(101, 148))
    assert job.parts == [(101, 120), (121, 140), (141, 148)]
    doc = farm.template(job)
    assert [s["name"] for s in doc["steps"]] == ["Snow", "Gather"]
    assert doc["steps"][0]["parameterSpace"]["taskParameterDefinitions"][0]["range"] == "1-3"
    assert doc["name"] == "EnvFX snow (frames 101-148 in 3 parts)"
    assert [(p["name"], p["dataFlow"]) for p in doc["parameterDefinitions"][1:]] == [
        ("JobFolder", "INOUT"), ("Input1", "IN"), ("OutDir", "OUT")]
    paths = {"JobFolder": "/farm/job", "Input1": "/farm/a.blend", "OutDir": "/farm/out"}
    assert farm.share_commands(job.description(), 3, paths) == [
        ("frames 141-148", ["snow", "/farm/a.blend", "--bake", "--out-dir", "/farm/out", "--frames", "101:148",
                            "--part", "141-148"])]
    _write_checked(job, doc["name"])
    entry = {"label": "frames 101-120", "status": "done", "code": 0, "errors": [], "output": []}
    farm.write_summary(job_dir, 1, [entry], 0)
    farm.write_summary(job_dir, 3, [{**entry, "label": "frames 141-148"}], 0)
    lines, code = farm.gather(job.description(), paths | {"JobFolder": job_dir})
    assert code == 1 and lines[0].startswith("envfx snow: done frames 101-120, frames 141-148; not done (left as "
                                             "they were): frames 121-140; task(s) 2 left no summary")
    assert lines[-1] == "envfx farm: snow: 2 of 3 part(s) of frames 101-148 done"
