"""Progress and cancelling for long work (bakes), shared by every feature.

Long work is written as a generator that ``yield``s a fraction in [0, 1] between chunks of work and
returns its result. Cleanup lives in the generator's ``try/finally`` (or ``except GeneratorExit``): closing
the generator on cancel runs it, so nothing half-made is left behind.

- ``run(job, label)`` drives it to the end in scripts, the CLI and operators' ``execute``; progress goes to
  the window-manager progress indicator when there is a UI, or to stdout as ``EnvFX <label>: 42%`` lines in
  background mode. Ctrl-C (KeyboardInterrupt) cancels and cleans up.
- ``ModalJobOperator`` runs the same generator one step per timer tick from ``invoke`` so the UI stays
  responsive; Esc cancels. While it runs, the view can be navigated but the scene cannot be edited (see
  ``event_action``).
"""

from __future__ import annotations

import sys
import time
import traceback
from typing import TYPE_CHECKING

import bpy

if TYPE_CHECKING:  # the stubs' names for report kinds and an operator's results (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems, WmReportItems


class Cancelled(Exception):
    """The user cancelled long work; everything it made has been removed."""


class Reporter:
    """Shows progress in the UI (window manager) or on stdout in background mode."""

    def __init__(self, label: str, stream=None, min_interval: float = 0.5):
        self.label = label
        self.stream = stream or sys.stdout
        self.min_interval = min_interval
        self._wm = None
        self._last_print = -1.0
        self._last_percent = -1
        wm = getattr(bpy.context, "window_manager", None)
        if not bpy.app.background and wm is not None and wm.windows:
            self._wm = wm

    def __enter__(self):
        if self._wm is not None:
            self._wm.progress_begin(0, 100)
        else:
            self._print(0)
        return self

    def update(self, fraction: float):
        percent = int(round(max(0.0, min(1.0, float(fraction))) * 100))
        if self._wm is not None:
            self._wm.progress_update(percent)
            return
        now = time.monotonic()
        if percent != self._last_percent and (now - self._last_print >= self.min_interval or percent == 100):
            self._print(percent)

    def _print(self, percent: int):
        self._last_print = time.monotonic()
        self._last_percent = percent
        print(f"EnvFX {self.label}: {percent:3d}%", file=self.stream, flush=True)

    def __exit__(self, exc_type, exc, tb):
        if self._wm is not None:
            self._wm.progress_end()
        elif exc_type is None and self._last_percent != 100:
            self._print(100)
        elif exc_type is not None:
            print(f"EnvFX {self.label}: stopped ({exc_type.__name__})", file=self.stream, flush=True)
        return False


def run(job, label: str, should_cancel=None, stream=None):
    """Drive a job generator to the end and return its result.

    ``should_cancel`` is an optional callable polled between steps; when it returns True (or on Ctrl-C)
    the generator is closed, its cleanup runs and ``Cancelled`` is raised.
    """
    try:  # Ctrl-C (or SIGTERM made one) as soon as the progress line is out cancels too
        with Reporter(label, stream=stream) as reporter:
            try:
                while True:
                    fraction = next(job)
                    reporter.update(fraction)
                    if should_cancel is not None and should_cancel():
                        job.close()
                        raise Cancelled(f"{label} cancelled; nothing was written")
            except StopIteration as stop:
                return stop.value
    except KeyboardInterrupt:
        job.close()
        raise Cancelled(f"{label} cancelled; nothing was written") from None


# While a job runs from the UI, these events go on to Blender: looking around (orbit, pan, zoom, hovering).
# Every other event (clicks, keys: Ctrl-Z, X, Space, Alt+wheel...) is held back until the job ends, because a
# change of the scene under a running bake (an object deleted, an undo step that reloads the file's data, another
# frame) would bake a mix of states or read data that no longer exists.
NAVIGATION_EVENTS = frozenset({
    "MOUSEMOVE", "INBETWEEN_MOUSEMOVE", "MIDDLEMOUSE", "TRACKPADPAN", "TRACKPADZOOM", "MOUSEROTATE",
    "MOUSESMARTZOOM", "NDOF_MOTION", "WINDOW_DEACTIVATE",
    # a 3D mouse's view buttons (not its menu or numbered buttons, which a user can map to anything)
    "NDOF_BUTTON_FIT", "NDOF_BUTTON_TOP", "NDOF_BUTTON_BOTTOM", "NDOF_BUTTON_LEFT", "NDOF_BUTTON_RIGHT",
    "NDOF_BUTTON_FRONT", "NDOF_BUTTON_BACK", "NDOF_BUTTON_ISO1", "NDOF_BUTTON_ISO2", "NDOF_BUTTON_ROLL_CW",
    "NDOF_BUTTON_ROLL_CCW", "NDOF_BUTTON_SPIN_CW", "NDOF_BUTTON_SPIN_CCW", "NDOF_BUTTON_TILT_CW",
    "NDOF_BUTTON_TILT_CCW", "NDOF_BUTTON_ROTATE", "NDOF_BUTTON_PANZOOM", "NDOF_BUTTON_DOMINANT", "NDOF_BUTTON_PLUS",
    "NDOF_BUTTON_MINUS", "NDOF_BUTTON_V1", "NDOF_BUTTON_V2", "NDOF_BUTTON_V3",
})
SYSTEM_TIMERS = frozenset({"TIMER0", "TIMER1", "TIMER2", "TIMER_JOBS", "TIMER_AUTOSAVE", "TIMER_REPORT", "TIMERREGION"})
WHEEL_EVENTS = frozenset({"WHEELUPMOUSE", "WHEELDOWNMOUSE", "WHEELINMOUSE", "WHEELOUTMOUSE"})


def event_action(event) -> str:
    """What a running job does with a UI event: "CANCEL" (Esc pressed), "STEP" (its timer: one more step),
    "PASS" (view navigation, left to Blender) or "HOLD" (anything that could edit the scene: swallowed). The
    wheel navigates only without Ctrl or Alt (with them it changes the hovered value or the frame). Blender's
    other timers (reports fading out, region animation, other jobs' progress) are no one's edit and go on."""
    if event.type == "ESC":
        return "CANCEL" if event.value == "PRESS" else "HOLD"
    if event.type == "TIMER":
        return "STEP"
    if event.type in NAVIGATION_EVENTS or event.type in SYSTEM_TIMERS or (
            event.type in WHEEL_EVENTS and not (event.ctrl or event.alt)):
        return "PASS"
    return "HOLD"


_running: set = set()  # ModalJobOperators whose job runs from the UI (between invoke and its end)


def job_running() -> bool:
    """Whether an EnvFX bake is running from the UI: timers that change data wait for it to end."""
    return bool(_running)


class ModalJobOperator:
    """Mixin for operators whose work is a job generator.

    Subclasses implement ``make_job(context)`` (return a generator, or None after reporting an error)
    and ``finish(context, result)``; ``job_label`` names the work in progress lines.
    """

    job_label = "Working"
    _timer = None
    _job = None

    if TYPE_CHECKING:  # what the operator class it is mixed into has (not declared here: Blender reads annotations)
        def report(self, type: set[WmReportItems] | None, message: str) -> None: ...  # bpy.types.Operator's

    def make_job(self, context):  # pragma: no cover - interface
        raise NotImplementedError

    def finish(self, context, result) -> set[OperatorReturnItems]:  # pragma: no cover - interface
        return {"FINISHED"}

    def execute(self, context) -> set[OperatorReturnItems]:
        job = self.make_job(context)
        if job is None:
            return {"CANCELLED"}
        try:
            result = run(job, self.job_label)
        except Cancelled as exc:
            self.report({"WARNING"}, str(exc))
            return {"CANCELLED"}
        except (ValueError, OSError, RuntimeError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return self.finish(context, result)

    def invoke(self, context, event) -> set[OperatorReturnItems]:
        if bpy.app.background or context.window is None:
            return self.execute(context)
        job = self.make_job(context)
        if job is None:
            return {"CANCELLED"}
        self._job = job
        _running.add(self)
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _end(self, context):
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        if context.area is not None:
            context.area.header_text_set(None)
        self._job = None
        _running.discard(self)

    def modal(self, context, event) -> set[OperatorReturnItems]:
        job = self._job
        if job is None:  # not started by invoke() (or already ended): nothing to drive
            self._end(context)
            return {"CANCELLED"}
        action = event_action(event)
        if action == "CANCEL":
            job.close()
            self._end(context)
            self.report({"WARNING"}, f"{self.job_label} cancelled; nothing was written")
            return {"CANCELLED"}
        if action == "PASS":
            return {"PASS_THROUGH"}
        if action == "HOLD":
            return {"RUNNING_MODAL"}
        try:
            fraction = next(job)
        except StopIteration as stop:
            self._end(context)
            return self.finish(context, stop.value)
        except (ValueError, OSError, RuntimeError) as exc:
            self._end(context)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        except (ReferenceError, LookupError) as exc:
            # data it reads was removed (or renamed) under it: by a script, a timer or another window. A job keeps
            # names and looks them up again (KeyError), or holds the data (ReferenceError)
            self._end(context)
            self.report({"ERROR"}, f"{self.job_label} stopped: data it was working on was removed or renamed while "
                                   f"it ran ({exc}); nothing was written. Run it again")
            return {"CANCELLED"}
        except Exception:
            # anything else must still end the job: an exception out of modal() makes Blender drop the operator
            # without calling cancel(), which would leave the progress bar, the header and the timer behind
            self._end(context)
            traceback.print_exc()
            self.report({"ERROR"}, f"{self.job_label} failed with an internal error (see the system console); "
                                   f"nothing was written")
            return {"CANCELLED"}
        context.window_manager.progress_update(int(max(0.0, min(1.0, fraction)) * 100))
        if context.area is not None:
            context.area.header_text_set(f"{self.job_label}: {int(fraction * 100)}% (Esc to cancel; the scene "
                                         f"can be edited again when it is done)")
        return {"RUNNING_MODAL"}

    def cancel(self, context):
        if self._job is not None:
            self._job.close()
        self._end(context)
