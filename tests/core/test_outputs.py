"""core/outputs.py: the output-folder rules every bake shares."""

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
    (tmp_path / f".envfx-staging-mips-{dead}-file").write_text("a file, not a folder")
    monkeypatch.setattr(outputs, "_STARTED", os.path.getmtime(tmp_path) + 10)
    assert outputs.free_bytes(str(tmp_path)) >= 300
    removed = outputs.remove_stale(str(tmp_path))
    assert sorted(removed) == sorted(n for n, gone in names.items() if gone)
    assert outputs.remove_stale(str(tmp_path / "missing")) == []


def test_stale_folders_younger_than_this_process_are_kept(tmp_path):
    dead = _dead_pid()
    (tmp_path / f".envfx-staging-mips-{dead}-abc").mkdir()
    assert outputs.remove_stale(str(tmp_path)) == []  # made after this process started: maybe a sibling's


def test_disk_space_refusal_says_what_to_do(tmp_path):
    with pytest.raises(FeatureError, match=r"would write up to .* \(2 EXRs\) but only .* is free .*: bake less, "
                                           r"or free disk space"):
        outputs.check_disk_space(str(tmp_path), 2**62, "2 EXRs", "bake less", error=FeatureError)
    assert outputs.check_disk_space(str(tmp_path), 10, "1 EXR", "bake less") == 10
