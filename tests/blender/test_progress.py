"""The shared long-work helper: progress lines in background mode, cancel runs the job's cleanup."""

import importlib
import io
import os
from types import SimpleNamespace

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


class _WindowManager:
    def __init__(self):
        self.calls = []

    def progress_update(self, value):
        self.calls.append(("update", value))

    def progress_end(self):
        self.calls.append(("end",))

    def event_timer_remove(self, timer):
        self.calls.append(("timer_remove", timer))


def _event(kind, value="PRESS", ctrl=False, alt=False):
    return SimpleNamespace(type=kind, value=value, ctrl=ctrl, alt=alt)


@pytest.fixture
def modal_op(progress):
    """(operator, context) as ``ModalJobOperator.invoke`` leaves them: a job running one step per timer tick."""
    class Op(progress.ModalJobOperator):
        job_label = "Test bake"

        def __init__(self, job):
            self._job, self._timer, self.reports, self.result = job, "timer", [], None

        def report(self, kind, message):
            self.reports.append((set(kind), message))

        def finish(self, context, result):
            self.result = result
            return {"FINISHED"}

    return Op, SimpleNamespace(window_manager=_WindowManager(), area=None)


EDITING = [_event("Z", ctrl=True), _event("X"), _event("DEL"), _event("LEFTMOUSE"), _event("SPACE"),
           _event("RIGHTMOUSE"), _event("WHEELUPMOUSE", alt=True), _event("WHEELDOWNMOUSE", ctrl=True),
           _event("ESC", value="RELEASE"), _event("NDOF_BUTTON_MENU"), _event("NDOF_BUTTON_1")]
NAVIGATION = [_event("MIDDLEMOUSE"), _event("MOUSEMOVE", value="NOTHING"), _event("WHEELUPMOUSE"),
              _event("TRACKPADPAN", value="NOTHING"), _event("NDOF_MOTION", value="NOTHING"),
              _event("NDOF_BUTTON_FIT"), _event("NDOF_BUTTON_TOP"), _event("NDOF_BUTTON_ROLL_CW"),
              _event("NDOF_BUTTON_V1"),  # a 3D mouse's view buttons are navigation too
              _event("TIMER_REPORT", value="NOTHING"), _event("TIMER_JOBS", value="NOTHING"),
              _event("TIMER0", value="NOTHING")]  # Blender's other timers are not edits


def test_a_running_job_holds_back_every_event_that_could_edit_the_scene(modal_op, tmp_path):
    """Ctrl-Z, deleting, clicking, playing, Alt+wheel (frame) or Ctrl+wheel (a hovered value) while a bake runs
    would change the scene under it: they are swallowed until it ends; navigating the view goes on to Blender;
    its timer steps it; Esc cancels it and its cleanup runs."""
    op_class, context = modal_op
    op = op_class(job(str(tmp_path), steps=5))
    assert op.modal(context, _event("TIMER")) == {"RUNNING_MODAL"}
    partial = tmp_path / "partial.tmp"
    for event in EDITING:
        assert op.modal(context, event) == {"RUNNING_MODAL"}, event
    for event in NAVIGATION:
        assert op.modal(context, event) == {"PASS_THROUGH"}, event
    assert context.window_manager.calls == [("update", 20)]  # none of them stepped the job
    assert op.modal(context, _event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(context, _event("ESC")) == {"CANCELLED"}
    assert not partial.exists() and os.listdir(tmp_path) == []
    assert context.window_manager.calls[-2:] == [("timer_remove", "timer"), ("end",)]
    assert op.reports == [({"WARNING"}, "Test bake cancelled; nothing was written")]


def test_the_passed_events_are_blender_event_types(progress):
    """A misspelt name would never match, and that event would be held back."""
    import bpy

    prop = bpy.types.Event.bl_rna.properties["type"]
    assert isinstance(prop, bpy.types.EnumProperty)
    types = {item.identifier for item in prop.enum_items}
    assert progress.NAVIGATION_EVENTS | progress.WHEEL_EVENTS | progress.SYSTEM_TIMERS <= types
    assert {t for t in types if t.startswith("TIMER")} == progress.SYSTEM_TIMERS | {"TIMER"}  # none left out
    assert {e.type for e in EDITING + NAVIGATION} <= types


def test_a_job_run_by_timer_ticks_finishes_with_its_result(modal_op, tmp_path):
    op_class, context = modal_op
    op = op_class(job(str(tmp_path), steps=3))
    results = [op.modal(context, _event("TIMER")) for _ in range(4)]
    assert results == [{"RUNNING_MODAL"}] * 3 + [{"FINISHED"}]
    assert op.result == "ok" and os.listdir(tmp_path) == ["result.txt"]
    assert context.window_manager.calls[-1] == ("end",)


def test_data_removed_under_a_running_job_stops_it_with_a_clear_message(modal_op, tmp_path):
    """A script or timer that removes what the bake reads (bpy raises ReferenceError then) ends the job: its
    cleanup runs, the progress bar goes, and the message says what happened and what to do."""
    def reads_a_removed_object():
        with open(tmp_path / "partial.tmp", "w"):
            pass
        try:
            yield 0.5
            raise ReferenceError("StructRNA of type Object has been removed")
        finally:
            os.remove(tmp_path / "partial.tmp")

    op_class, context = modal_op
    op = op_class(reads_a_removed_object())
    assert op.modal(context, _event("TIMER")) == {"RUNNING_MODAL"}
    assert op.modal(context, _event("TIMER")) == {"CANCELLED"}
    assert os.listdir(tmp_path) == [] and context.window_manager.calls[-1] == ("end",)
    [(kind, message)] = op.reports
    assert kind == {"ERROR"} and "removed or renamed while it ran" in message and "Run it again" in message


@pytest.mark.parametrize("failure", ["renamed", "deleted", "internal"])
def test_a_job_that_fails_any_other_way_still_ends(modal_op, tmp_path, failure):
    """Jobs keep names and look the data up again, so an object deleted or renamed under a running bake (by a script,
    a timer or in another window) raises KeyError, not ReferenceError; and a bug raises anything. Each ends the job
    as Esc does: an exception out of modal() makes Blender drop the operator without calling cancel(), which left
    the progress bar, the header text and the 1 ms timer running for the rest of the session."""
    import bpy

    obj = bpy.data.objects.new("Walker", None)
    name = obj.name

    def reads_by_name():
        with open(tmp_path / "partial.tmp", "w"):
            pass
        try:
            yield 0.5
            if failure == "internal":
                raise TypeError("unsupported operand type(s)")
            yield bpy.data.objects[name].location.x
        finally:
            os.remove(tmp_path / "partial.tmp")

    op_class, context = modal_op
    op = op_class(reads_by_name())
    assert op.modal(context, _event("TIMER")) == {"RUNNING_MODAL"}
    if failure == "renamed":
        obj.name = "Walker (renamed)"
    elif failure == "deleted":
        bpy.data.objects.remove(obj)
    assert op.modal(context, _event("TIMER")) == {"CANCELLED"}
    assert os.listdir(tmp_path) == [] and context.window_manager.calls[-2:] == [("timer_remove", "timer"), ("end",)]
    [(kind, message)] = op.reports
    assert kind == {"ERROR"} and "nothing was written" in message
    if failure != "internal":
        assert "removed or renamed while it ran" in message and "Run it again" in message


@pytest.mark.parametrize("kind", ["ESC", "TIMER"])
def test_an_event_after_the_job_ended_ends_it_quietly(modal_op, kind):
    """modal() without a job (ended, or never started by invoke): Esc raised an AttributeError out of modal() and a
    tick reported an internal error; now both end it (timer and progress bar) without a report."""
    op_class, context = modal_op
    op = op_class(None)
    assert op.modal(context, _event(kind)) == {"CANCELLED"}
    assert context.window_manager.calls == [("timer_remove", "timer"), ("end",)]
    assert op.reports == []
