"""core/outputs.py: the output-folder rules every bake shares."""

import json
import os
import subprocess
import sys

import pytest

from core import outputs


class FeatureError(Exception):
    pass


def test_check_folder_refuses_a_file_and_a_file_in_the_path(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(FeatureError, match="is a file, not a folder: choose a folder"):
        outputs.check_folder(str(tmp_path / "notes.txt"), error=FeatureError)
    with pytest.raises(FeatureError, match=r"part of its path, .*notes\.txt'?, is a file"):
        outputs.check_folder(str(tmp_path / "notes.txt" / "out"), error=FeatureError)


def test_check_folder_empty_says_what_to_do():
    with pytest.raises(outputs.OutputError, match="No output folder"):
        outputs.check_folder("")


def test_check_folder_does_not_trust_os_access_on_proc():
    """``os.access`` says /proc is writable for root; a real write does not work there."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc here")
    with pytest.raises(outputs.OutputError, match="cannot be written"):
        outputs.check_folder("/proc/envfx-out/x")


def test_check_folder_accepts_a_folder_to_be_made_and_makes_nothing(tmp_path):
    target = tmp_path / "a" / "b"
    assert outputs.check_folder(str(target)) == str(target)
    assert not (tmp_path / "a").exists()
    assert os.listdir(tmp_path) == []  # the write probe is gone


def test_staging_commit_moves_files_in_and_cleans_up(tmp_path):
    out = tmp_path / "new" / "out"
    with outputs.Staging(str(out), "test") as staged:
        assert os.path.basename(staged.path).startswith(".envfx-staging-test-")
        with open(staged.file("a.txt"), "w") as fh:
            fh.write("a")
        with open(staged.file("sub/b.txt"), "w") as fh:
            fh.write("b")
        final = staged.commit()
    assert sorted(os.path.relpath(p, out) for p in final) == ["a.txt", os.path.join("sub", "b.txt")]
    assert sorted(os.listdir(out)) == ["a.txt", "sub"]


def test_staging_abort_leaves_the_folder_as_it_was(tmp_path):
    (tmp_path / "keep.txt").write_text("old")
    with pytest.raises(RuntimeError):
        with outputs.Staging(str(tmp_path), "test") as staged:
            with open(staged.file("keep.txt"), "w") as fh:
                fh.write("new")
            raise RuntimeError("cancelled")
    assert os.listdir(tmp_path) == ["keep.txt"] and (tmp_path / "keep.txt").read_text() == "old"
    made = tmp_path / "x" / "y"
    with outputs.Staging(str(made), "test"):
        pass
    assert not (tmp_path / "x").exists()  # folders the bake made are removed again


def _fixed_disk(monkeypatch, free: int) -> None:
    """The disk's own free space, fixed: the test host's disk is shared and moves between two calls."""
    monkeypatch.setattr(outputs.shutil, "disk_usage", lambda path: type("Usage", (), {"free": free})())


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_folders_of_dead_processes_are_removed_live_ones_kept(tmp_path, monkeypatch):
    dead = _dead_pid()
    names = {
        f".envfx-staging-mips-{dead}-abc": True,
        f".envfx-staging-snow-{os.getpid()}-abc": False,  # this process: kept
        f".envfx_snow_{dead}_x": True,  # an older EnvFX's name
        f".envfx_gasgiant_{dead}": True,
        "other_folder": False,
    }
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.bin").write_bytes(b"0" * 100)
        pid = outputs._staging_pid(name)
        if pid:  # made on this machine by that process
            outputs.write_owner(str(tmp_path / name), int(pid))
    (tmp_path / f".envfx-staging-mips-{dead}-file").write_text("a file, not a folder")
    monkeypatch.setattr(outputs, "_STARTED", os.path.getmtime(tmp_path) + 10)
    _fixed_disk(monkeypatch, free=5000)
    stale = sum(outputs.folder_bytes(str(tmp_path / n)) for n, gone in names.items() if gone)
    assert stale >= 300 and outputs.free_bytes(str(tmp_path)) == 5000 + stale
    removed = outputs.remove_stale(str(tmp_path))
    assert sorted(removed) == sorted(n for n, gone in names.items() if gone)
    assert outputs.remove_stale(str(tmp_path / "missing")) == []


def test_stale_folders_younger_than_this_process_are_kept(tmp_path):
    dead = _dead_pid()
    (tmp_path / f".envfx-staging-mips-{dead}-abc").mkdir()
    outputs.write_owner(str(tmp_path / f".envfx-staging-mips-{dead}-abc"), dead)
    assert outputs.remove_stale(str(tmp_path)) == []  # made after this process started: maybe a sibling's


def _aged(path, seconds):
    """Set the modification time of ``path`` and of everything in it ``seconds`` into the past."""
    when = outputs._STARTED - seconds
    for root, dirs, names in os.walk(path):
        for name in dirs + names:
            os.utime(os.path.join(root, name), (when, when))
    os.utime(path, (when, when))


def test_a_staging_folder_of_another_machine_is_kept_and_reported_until_it_is_old(tmp_path, monkeypatch):
    """On shared farm storage a process id names a process of the machine that made the folder: a folder made on
    another machine (another host, boot or process-id namespace) or with no owner file is kept and reported, whatever
    this machine's processes, and removed once nothing in it changed for FOREIGN_MAX_AGE; a folder of this machine
    whose process id now names a process started later (the id used again) is stale."""
    dead = _dead_pid()
    here = outputs.owner(dead)
    records = {
        "other-host": {**here, "host": here["host"] + "-render-07", "pid": os.getpid()},  # a live id here, not there
        "other-boot": {**here, "boot": "not-this-boot"},  # (one host name, another machine: or this one rebooted)
        "other-namespace": {**here, "namespace": "pid:[1]"},
        "no-owner": None,
        "other-host-old": {**here, "host": "render-07"},
        "reused-id": {**here, "pid": os.getppid(), "start": "1"},  # a running process, started at another time
        "here-dead": here,
    }
    for name, record in records.items():
        path = tmp_path / f".envfx-staging-mips-{dead}-{name}"
        path.mkdir()
        (path / "f.bin").write_bytes(b"0" * 100)
        if record is not None:
            (path / outputs.OWNER_NAME).write_text(json.dumps(record))
        _aged(str(path), outputs.FOREIGN_MAX_AGE + 3600 if name.endswith("-old") else 3600)
    reports = []
    removed = outputs.remove_stale(str(tmp_path), report=lambda path, why: reports.append((os.path.basename(path),
                                                                                          why)))
    gone = {"other-host-old", "reused-id", "here-dead"}
    assert sorted(removed) == sorted(f".envfx-staging-mips-{dead}-{n}" for n in gone)
    kept = {name.split(f"{dead}-", 1)[1]: why for name, why in reports}
    assert sorted(kept) == ["no-owner", "other-boot", "other-host", "other-namespace"]
    assert "made on another machine" in kept["other-host"] and "removed once unchanged for 7 days" in kept["other-host"]
    assert "no owner file" in kept["no-owner"]
    _fixed_disk(monkeypatch, free=5000)
    assert outputs.free_bytes(str(tmp_path)) == 5000  # kept: not free
    # a file written into it lately (the task is alive there) keeps even an old folder of another machine
    path = tmp_path / f".envfx-staging-mips-{dead}-other-host"
    _aged(str(path), outputs.FOREIGN_MAX_AGE + 3600)
    (path / "new.bin").write_bytes(b"1")
    when = outputs._STARTED - outputs.FOREIGN_MAX_AGE - 3600
    os.utime(path, (when, when))
    assert outputs.remove_stale(str(tmp_path), report=None) == []
    os.remove(path / "new.bin")
    _aged(str(path), outputs.FOREIGN_MAX_AGE + 3600)
    assert outputs.remove_stale(str(tmp_path), report=None) == [path.name]


def test_staging_writes_its_owner_file_and_commits_only_the_bakes_files(tmp_path):
    with outputs.Staging(str(tmp_path), "test") as staged:
        with open(os.path.join(staged.path, outputs.OWNER_NAME)) as fh:
            assert json.load(fh) == outputs.owner()
        with open(staged.file("a.txt"), "w") as fh:
            fh.write("a")
        assert [os.path.basename(p) for p in staged.commit()] == ["a.txt"]
    assert os.listdir(tmp_path) == ["a.txt"]


def test_disk_space_refusal_says_what_to_do(tmp_path):
    with pytest.raises(FeatureError, match=r"would write up to .* \(2 EXRs\) but only .* is free .*: bake less, "
                                           r"or free disk space"):
        outputs.check_disk_space(str(tmp_path), 2**62, "2 EXRs", "bake less", error=FeatureError)
    assert outputs.check_disk_space(str(tmp_path), 10, "1 EXR", "bake less") == 10
