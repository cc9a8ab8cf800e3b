"""The batch rules every `envfx` command shares: its arguments are checked before any file is opened, each .blend
of a batch is opened, worked on and saved in turn (``run_files``), a file that does not fit is named and left
unchanged, and Ctrl-C or SIGTERM stops the batch at its next safe point."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import bpy

from ..core import blendfile
from ..operators.common import ObjectsResult, grouped_warnings

IdT = TypeVar("IdT", bound=bpy.types.ID)  # the kind of data-block a collection of bpy.data holds (``named``)


class CliError(Exception):
    """Bad input: the message says what is wrong and what to do (exit code 2)."""


# --- help ------------------------------------------------------------------------------------------------

class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Every option's help shows its default: one written in the help text ("(default: ...)") stays; otherwise
    argparse's own default is added ("off" for a switch). An option whose default is None (it keeps what the file
    has) says so in its help text."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or not action.option_strings or action.required
                or action.default is argparse.SUPPRESS):
            return text
        if action.nargs == 0 and isinstance(action.const, bool):  # store_true / store_false
            return f"{text} (default: {'off' if action.const else 'on'})".lstrip()
        if action.default is None:
            return text
        return f"{text} (default: %(default)s)".lstrip()


# --- arguments and paths, checked before any file is opened -----------------------------------------------


def current_scene() -> bpy.types.Scene:
    """The opened file's current scene (``bpy.context.scene``, which the API types as optional)."""
    scene = bpy.context.scene
    if scene is None:
        raise CliError("the file has no current scene: open it in Blender, pick a scene and save it")
    return scene


def current_view_layer() -> bpy.types.ViewLayer:
    """The current scene's view layer (``bpy.context.view_layer``, which the API types as optional)."""
    view_layer = bpy.context.view_layer
    if view_layer is None:
        raise CliError("the file's scene has no view layer: open it in Blender, add one and save it")
    return view_layer

def check_blend(path: str) -> None:
    if not path.lower().endswith(".blend"):
        raise CliError(f"{path!r} is not a .blend file: pass the .blend to work on")
    if os.path.isdir(path):
        raise CliError(f"{path!r} is a folder, not a .blend file: pass the .blend files in it (folder/*.blend)")
    if not os.path.isfile(path):
        raise CliError(f"No such file {path!r}: check the path")


def check_blends(paths: Sequence[str], output: str | None = None) -> str | None:
    """Before any file is opened: every input is an existing .blend, and --output goes with one input only.
    Returns --output as the path to save to (``//`` is the input file's folder), or None."""
    if output and len(paths) > 1:
        raise CliError("--output works with one input file; with several, each file is saved in place")
    for path in paths:
        check_blend(path)
    if output:
        output = cli_path(output, "--output", blend=paths[0])
        check_output(output)
    return output or None


def cli_path(path: str, option: str, blend: str | None = None, no_blend: str = "") -> str:
    """A path given on the command line as an absolute path. ``//`` at its start means the folder of the .blend
    file ``blend``, as in Blender (``//../buffer`` is the folder next to it); POSIX would read ``//x`` as ``/x``
    at the file-system root, so a ``//`` path where there is no .blend (``blend`` None) is refused, ``no_blend``
    saying what to do instead."""
    if not path.startswith("//"):
        return os.path.abspath(path)
    if blend is None:
        raise CliError(f"{option} {path!r} starts with // (the .blend file's folder), and there is no .blend file "
                       f"here: {no_blend}give an absolute path or one relative to the current folder")
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(blend)), path[2:]))


def named(ids: bpy.types.bpy_prop_collection[IdT], name: str, what: str, option: str = "") -> IdT:
    """``ids[name]`` (scenes, collections), or CliError naming what the file has instead."""
    found = ids.get(name)
    if found is None:
        names = ", ".join(sorted(repr(i.name) for i in ids)) or "none"
        raise CliError(f"No {what} named {name!r}{option} ({what}s: {names})")
    return found


def output_folders(blends: Sequence[str], out: str, option: str = "--out") -> dict[str, str]:
    """{.blend path: the folder its outputs go to}, checked before any file is opened: every input is a .blend
    that exists; ``out`` itself for one file (``//`` is its folder), ``out/<file name>`` for each of several
    (refused when two inputs have the same file name)."""
    for path in blends:
        check_blend(path)
    out = cli_path(out, option, blend=blends[0] if len(blends) == 1 else None, no_blend="with several files ")
    if len(blends) == 1:
        return {blends[0]: out}
    folders = {path: os.path.join(out, os.path.splitext(os.path.basename(path))[0]) for path in blends}
    if len({f.lower() for f in folders.values()}) < len(folders):
        raise CliError(f"two input files have the same name and would write into the same folder: run them "
                       f"separately, each with its own {option}")
    return folders


def check_names(args: argparse.Namespace, *names: str) -> None:
    """An option given as an empty string (an empty pipeline variable) is refused, not read as "not given"."""
    for name in names:
        value = getattr(args, name, None)
        if value is None:
            continue
        option = "--" + name.replace("_", "-")
        if name == "objects" and not _split_names(value):
            raise CliError(f"{option} is empty: give comma-separated object names")
        if not value.strip():
            raise CliError(f"{option} is empty: give a name")


# what an option that takes text needs, for the message when it is given empty; options not named here are names
EMPTY_OPTION_NEEDS = {
    "output": "a .blend path", "save": "a .blend path", "export_engines": "a folder", "out": "a folder",
    "out_dir": "a folder", "cubemap_palette": "the folder of an earlier bake", "palette": "an image path",
    "save_field": "an .npz path", "load_field": "an .npz path", "objects": "comma-separated object names",
    "custom": "four comma-separated channel sources", "frames": "a frame range START:END",
    "format": "comma-separated formats", "push_buffer": "the folder of a baked interaction buffer",
}


def text_options(parser: argparse.ArgumentParser) -> list:
    """The optional arguments of ``parser`` that take one text value (paths, names): none may be given empty."""
    return [action for action in parser._actions
            if action.option_strings and action.nargs is None and action.type in (None, str)
            and action.choices is None and action.const is None and not isinstance(action, argparse._HelpAction)]


def check_text_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Before any file is opened: a text option given as an empty or blank string (an empty pipeline variable) is
    refused, never read as "not given" (``--output ""`` would save over the input, ``--export-engines ""`` would
    bend and save instead of exporting)."""
    for action in text_options(parser):
        value = getattr(args, action.dest, None)
        if value is not None and not value.strip():
            option = max(action.option_strings, key=len)
            raise CliError(f"{option} is empty: give {EMPTY_OPTION_NEEDS.get(action.dest, 'a name')}")


def _split_names(names: str) -> list:
    return [n.strip() for n in names.split(",") if n.strip()]


def check_output(path: str) -> None:
    """--output: a .blend in an existing, writable folder, not a read-only file (checked before any work)."""
    if not path.lower().endswith(".blend"):
        raise CliError(f"--output {path!r} is not a .blend path: give the .blend to write")
    if os.path.isdir(path):
        raise CliError(f"--output {path!r} is a folder: give the path of a .blend file to write")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CliError(f"Output folder {folder!r} does not exist: create it first")
    if not os.access(folder, os.W_OK):
        raise CliError(f"Output folder {folder!r} is read-only: make it writable or choose another --output")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise CliError(f"--output {path!r} is a read-only file: make it writable or choose another --output")


def check_writable_in_place(path: str) -> None:
    """Saving ``path`` over itself will work (checked before any work): the file and its folder are writable
    (Blender writes a temporary file next to it, then renames it)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(path, os.W_OK):
        raise CliError("the file is read-only: make it writable or pass --output")
    if not os.access(folder, os.W_OK):
        raise CliError(f"its folder {folder!r} is read-only: make it writable or pass --output")


# --- opening and saving a .blend file ---------------------------------------------------------------------

@contextlib.contextmanager
def blender_stdout_to_stderr(active: bool = True) -> Iterator[None]:
    """While active, whatever is written to file descriptor 1 (Blender's own "Read blend: ..." lines) goes to
    file descriptor 2, so stdout carries only what the command prints (``info --json | jq`` works)."""
    if not active:
        yield
        return
    sys.stdout.flush()
    _flush_c_stdio()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)


def _flush_c_stdio():
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no C library handle (Windows): Python's flush is all there is
        pass


def open_blend(path: str, quiet: bool = False) -> None:
    """Open ``path``; a file Blender cannot read raises CliError saying why and what to do. With ``quiet``,
    Blender's own output while loading goes to stderr."""
    check_blend(path)
    if not os.access(path, os.R_OK):
        raise CliError("the file cannot be read (no read permission): make it readable")
    try:
        with blender_stdout_to_stderr(quiet):
            bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path), load_ui=False)
    except RuntimeError as exc:
        why = (str(exc).strip().splitlines() or ["unknown error"])[-1].removeprefix("Error: ")
        why = why.replace(os.path.abspath(path), os.path.basename(path))
        raise CliError(
            f"Blender cannot read this file ({why}): it is damaged or truncated, not a .blend file, or saved by a "
            f"newer Blender than this one ({bpy.app.version_string}); open it in the Blender that made it, or "
            f"restore it from a backup") from None
    leave_edit_mode()


def leave_edit_mode() -> None:
    """A file saved in Edit Mode opens in Edit Mode, and the commands that read or write mesh data refuse objects in
    Edit Mode ("switch to Object Mode (Tab) first"): a batch has no Tab, so the file is switched to Object Mode as
    it is opened. The edits are kept: leaving Edit Mode writes the edit mesh into the mesh, as Tab does."""
    view_layer = current_view_layer()
    editing = [obj for obj in view_layer.objects if obj.mode == "EDIT"]
    if not editing:
        return
    active = view_layer.objects.active if view_layer.objects.active in editing else editing[0]
    with bpy.context.temp_override(active_object=active, object=active):
        bpy.ops.object.mode_set(mode="OBJECT")  # no data-API twin; leaves every object's Edit Mode at once


def save_blend(path: str) -> None:
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise CliError(f"Output folder {folder!r} does not exist: create it first")
    if not os.access(folder, os.W_OK):
        raise CliError(f"Output folder {folder!r} is read-only: make it writable or choose another --output")
    if _STOP["batch"] is not None:  # in a batch, for a Ctrl-C that stops it during the save: was the file saved?
        _STOP["saves"].append((path, _file_stamp(path)))
    try:
        bpy.ops.wm.save_as_mainfile(filepath=path, check_existing=False)
    except RuntimeError as exc:
        raise CliError(f"Blender could not save {path!r} ({str(exc).strip()}): check the disk space and the "
                       f"permissions of the file and its folder") from None
    # the same scene saved by any session is the same bytes (a farm task's file equals the batch's): the numbers
    # Blender counts per session are zeroed, whole or not at all (core.blendfile; a compressed file is left alone)
    try:
        blendfile.normalise_file(path)
    except (OSError, blendfile.BlendFileError) as exc:  # the saved file is whole and right: a warning, not a failure
        print(f"envfx: warning: {path!r} is saved, but its session numbers are not zeroed ({exc}), so its bytes "
              f"differ from another session's save of the same scene: check the disk space", file=sys.stderr)


# --- the batch: one file after another; Ctrl-C and SIGTERM ------------------------------------------------

def run_files(command: str, paths: list[str], work: Callable[[str], int | None], changes: bool = True) -> int:
    """The one batch rule of every command that takes .blend files: ``work(path)`` runs for each file in turn;
    a file it refuses (CliError: unreadable, read-only, or its scene does not fit the arguments) is named with the
    reason and left unchanged, the others are done, and the exit code is 2 (with a summary for several files).

    Ctrl-C (or SIGTERM) stops the batch at its next safe point (``ctrl_c_noted``): a bake in progress is cancelled
    (its file is left as it was), other work finishes its file; the files after it are not started, and the last
    line names the files done and those not done (exit 1)."""
    done, failed, left, code = [], [], [], 0
    with ctrl_c_noted(command):
        for i, path in enumerate(paths):
            if batch_stopped():
                left = paths[i:]
                break
            _STOP["saves"] = []
            try:
                result = work(path) or 0  # 1: the work failed (a cancelled bake)
            except CliError as exc:
                print(f"envfx {command}: {path}: error: {exc}", file=sys.stderr)
                failed.append(path)
                continue
            except KeyboardInterrupt:  # Ctrl-C pressed twice: stopped at once; the save is all or nothing
                saved = any(_file_stamp(target) != stamp for target, stamp in _STOP["saves"])
                (done if saved else left).append(path)
                left += paths[i + 1:]
                _STOP["batch"].append(signal.SIGINT)
                break
            if result == 1 and batch_stopped():  # its bake was cancelled: left as it was
                left = paths[i:]
                break
            code = max(code, result)
            done.append(path)
        cancelled = batch_stopped()
    if failed and len(paths) > 1:
        unchanged = " and were left unchanged" if changes else ""  # (a command that changes no file says nothing)
        print(f"envfx {command}: {len(failed)} of {len(paths)} files failed{unchanged}: {', '.join(failed)}",
              file=sys.stderr)
    if cancelled:
        unchanged = " (left as they were)" if changes else ""
        print(f"envfx {command}: cancelled: done {', '.join(done) or 'none'}; not done{unchanged}: "
              f"{', '.join(left) or 'none'}", file=sys.stderr)
        return 2 if failed else 1
    return 2 if failed else code


def _file_stamp(path: str):
    """What changes when Blender saves ``path`` (it writes a new file and renames it over the old one)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


# while run_files runs: "batch", the signals (Ctrl-C, SIGTERM) that stop it at its next safe point; "saves", the
# files the work on the file in progress began to save, each with its _file_stamp before
_STOP = {"batch": None, "saves": []}


def batch_stopped() -> bool:
    return bool(_STOP["batch"])


@contextlib.contextmanager
def ctrl_c_noted(command: str) -> Iterator[None]:
    """While a batch runs, Ctrl-C (SIGINT) only sets a flag, which the batch checks between files and the bakes
    between their steps (``sigterm_cancels``): a KeyboardInterrupt raised at any point lands where Blender calls
    Python while it loads a file (its and EnvFX's load handlers), where it is printed and swallowed, and the batch
    runs on, or half-done work would be saved. A second Ctrl-C raises KeyboardInterrupt: stop at once."""
    def note(signum, _frame):
        if _STOP["batch"]:
            raise KeyboardInterrupt
        _STOP["batch"].append(signum)
        what = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
        print(f"envfx {command}: {what}: stopping after the work in progress ({what} again stops at once)",
              file=sys.stderr, flush=True)

    _STOP["batch"] = []
    try:  # SIGTERM (a farm pre-empting the job, timeout) the same way, between bakes too
        with _signal_handler(signal.SIGINT, note, signal.default_int_handler), \
                _signal_handler(signal.SIGTERM, note, signal.SIG_DFL):
            yield
    finally:
        _STOP["batch"] = None


@contextlib.contextmanager
def sigterm_cancels() -> Iterator[Callable[[], bool]]:
    """While a bake runs, SIGTERM (a farm pre-empting the job, ``timeout``) cancels it like Ctrl-C: the bake's
    cleanup runs (its temporary files are removed) and the command exits with 1, instead of the process dying
    with its half-written files left behind. Yields the ``should_cancel`` for ``progress.run``: the handler only
    sets a flag, which the bake checks between its steps (an exception raised from a signal handler can land in
    a finaliser, where Python swallows it, and the bake would run on)."""
    received = []

    def note(signum, _frame):
        received.append(signum)
        if _STOP["batch"] is not None:  # in a batch: the files after this one are not started either
            _STOP["batch"].append(signum)

    with _signal_handler(signal.SIGTERM, note, signal.SIG_DFL):
        yield lambda: bool(received) or batch_stopped()


@contextlib.contextmanager
def _signal_handler(signum, handler, default):
    """``handler`` for the signal ``signum`` while the block runs, then the one before (``default`` when Python had
    none); not the main thread: nothing is installed."""
    try:
        previous = signal.signal(signum, handler)
    except (ValueError, OSError):  # not the main thread: nothing to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signum, previous if previous is not None else default)


# --- the scene of an opened file --------------------------------------------------------------------------

class SceneContext:
    """What the operator functions need from bpy.context, built without a UI."""

    def __init__(self, scene: bpy.types.Scene, selected: list[bpy.types.Object]) -> None:
        self.scene = scene
        self.selected_objects = selected


def resolve_objects(scene: bpy.types.Scene, names: str) -> list[bpy.types.Object]:
    """The scene's objects named in ``--objects``, in order; a name given twice (a generated list) counts once."""
    found, missing = [], []
    for name in dict.fromkeys(_split_names(names)):
        obj = scene.objects.get(name)
        (found if obj is not None else missing).append(obj if obj is not None else name)
    if missing:
        raise CliError(f"No object(s) named {', '.join(missing)} in scene {scene.name!r}: names are case-sensitive; "
                       f"the scene has {_objects_text(scene)}")
    return found


def _objects_text(scene) -> str:
    """The scene's object names for a message: the first 12, and how many more."""
    present = sorted(o.name for o in scene.objects)
    shown = ", ".join(present[:12]) + (f" and {len(present) - 12} more" if len(present) > 12 else "")
    return shown or "no objects"


def check_pivot(scene: bpy.types.Scene, name: str | None) -> None:
    """--pivot names an object of ``scene``, or CliError listing the scene's objects."""
    if name is not None and scene.objects.get(name) is None:
        raise CliError(f"No pivot object named {name!r} in scene {scene.name!r}: names are case-sensitive; the "
                       f"scene has {_objects_text(scene)}")


def print_warnings(command: str, path: str, result: ObjectsResult) -> None:
    """The warnings and skipped objects of an operators.common.ObjectsResult, one line each, starting with the
    file's path like every message about a file; the same warning about many objects is one line naming them all
    (``operators.common.grouped_warnings``)."""
    for warning in grouped_warnings(result, shown=None):
        print(f"envfx {command}: {path}: warning: {warning}")
    if result.skipped:
        print(f"envfx {command}: {path}: warning: skipped {result.skipped_text()}")
