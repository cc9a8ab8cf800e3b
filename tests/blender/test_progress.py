"""The shared long-work helper: progress lines in background mode, cancel runs the job's cleanup."""

import importlib
import io
import os

import pytest


@pytest.fixture
def progress(envfx):
    return importlib.import_module(envfx.__name__ + ".progress")


def job(folder, steps=5):
    """A job that writes a partial file and removes it unless it finishes (like a bake)."""
    partial = os.path.join(folder, "partial.tmp")
    done = False
    try:
        with open(partial, "w") as fh:
            for i in range(steps):
                fh.write(f"{i}\n")
                yield (i + 1) / steps
        os.replace(partial, os.path.join(folder, "result.txt"))
        done = True
        return "ok"
    finally:
        if not done and os.path.exists(partial):
            os.remove(partial)


def test_run_reports_progress_lines_and_returns_the_result(progress, tmp_path):
    out = io.StringIO()
    assert progress.run(job(str(tmp_path)), "Test bake", stream=out) == "ok"
    lines = out.getvalue().splitlines()
    assert lines[0] == "EnvFX Test bake:   0%"
    assert lines[-1] == "EnvFX Test bake: 100%"
    assert os.listdir(tmp_path) == ["result.txt"]


def test_cancel_cleans_up_and_raises(progress, tmp_path):
    calls = []

    def should_cancel():
        calls.append(1)
        return len(calls) >= 2

    out = io.StringIO()
    with pytest.raises(progress.Cancelled, match="cancelled; nothing was written"):
        progress.run(job(str(tmp_path)), "Test bake", should_cancel=should_cancel, stream=out)
    assert os.listdir(tmp_path) == []
    assert "stopped (Cancelled)" in out.getvalue()


def test_ctrl_c_between_steps_cancels_and_cleans_up(progress, tmp_path):
    def ctrl_c():
        raise KeyboardInterrupt

    with pytest.raises(progress.Cancelled):
        progress.run(job(str(tmp_path)), "Test bake", should_cancel=ctrl_c, stream=io.StringIO())
    assert os.listdir(tmp_path) == []
