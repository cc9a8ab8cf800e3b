"""`blender -c envfx ...` sub-commands for headless batch work.

``main(argv)`` is the entry point (the registered command calls it); it returns a process exit code:
0 done, 1 the work failed, 2 bad arguments or input.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
import os
import re
import signal
import sys
import tomllib

import bpy

PROG = "blender -c envfx"


class CliError(Exception):
    """Bad input: the message says what is wrong and what to do (exit code 2)."""


def manifest() -> dict:
    path = os.path.join(os.path.dirname(__file__), "blender_manifest.toml")
    with open(path, "rb") as fh:
        return tomllib.load(fh)


# --- helpers ----------------------------------------------------------------------------------------------

def check_blend(path: str):
    if not path.lower().endswith(".blend"):
        raise CliError(f"{path!r} is not a .blend file: pass the .blend to work on")
    if not os.path.isfile(path):
        raise CliError(f"No such file {path!r}: check the path")


def check_blends(paths, output=None):
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


def named(ids, name: str, what: str, option: str = ""):
    """``ids[name]`` (scenes, collections), or CliError naming what the file has instead."""
    found = ids.get(name)
    if found is None:
        names = ", ".join(sorted(repr(i.name) for i in ids)) or "none"
        raise CliError(f"No {what} named {name!r}{option} ({what}s: {names})")
    return found


def check_names(args, *names):
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
    "format": "comma-separated formats",
}


def text_options(parser: argparse.ArgumentParser) -> list:
    """The optional arguments of ``parser`` that take one text value (paths, names): none may be given empty."""
    return [action for action in parser._actions
            if action.option_strings and action.nargs is None and action.type in (None, str)
            and action.choices is None and action.const is None and not isinstance(action, argparse._HelpAction)]


def check_text_options(parser: argparse.ArgumentParser, args):
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


def check_output(path: str):
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


def check_writable_in_place(path: str):
    """Saving ``path`` over itself will work (checked before any work): the file and its folder are writable
    (Blender writes a temporary file next to it, then renames it)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(path, os.W_OK):
        raise CliError("the file is read-only: make it writable or pass --output")
    if not os.access(folder, os.W_OK):
        raise CliError(f"its folder {folder!r} is read-only: make it writable or pass --output")


@contextlib.contextmanager
def blender_stdout_to_stderr(active: bool = True):
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


def open_blend(path: str, quiet: bool = False):
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


def leave_edit_mode():
    """A file saved in Edit Mode opens in Edit Mode, and the commands that read or write mesh data refuse objects in
    Edit Mode ("switch to Object Mode (Tab) first"): a batch has no Tab, so the file is switched to Object Mode as
    it is opened. The edits are kept: leaving Edit Mode writes the edit mesh into the mesh, as Tab does."""
    view_layer = bpy.context.view_layer
    editing = [obj for obj in view_layer.objects if obj.mode == "EDIT"]
    if not editing:
        return
    active = view_layer.objects.active if view_layer.objects.active in editing else editing[0]
    with bpy.context.temp_override(active_object=active, object=active):
        bpy.ops.object.mode_set(mode="OBJECT")  # no data-API twin; leaves every object's Edit Mode at once


def save_blend(path: str):
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


def run_files(command: str, paths, work, changes: bool = True) -> int:
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
def ctrl_c_noted(command: str):
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
def sigterm_cancels():
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


class _Context:
    """What the operator functions need from bpy.context, built without a UI."""

    def __init__(self, scene, selected):
        self.scene = scene
        self.selected_objects = selected


def _resolve_objects(scene, names: str):
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


def _check_pivot(scene, name):
    """--pivot names an object of ``scene``, or CliError listing the scene's objects."""
    if name is not None and scene.objects.get(name) is None:
        raise CliError(f"No pivot object named {name!r} in scene {scene.name!r}: names are case-sensitive; the "
                       f"scene has {_objects_text(scene)}")


def print_warnings(command: str, path: str, result):
    """The warnings and skipped objects of an operators.common.ObjectsResult, one line each, starting with the
    file's path like every message about a file; the same warning about many objects is one line naming them all
    (``operators.common.grouped_warnings``)."""
    from .operators.common import grouped_warnings

    for warning in grouped_warnings(result, shown=None):
        print(f"envfx {command}: {path}: warning: {warning}")
    if result.skipped:
        print(f"envfx {command}: {path}: warning: skipped {result.skipped_text()}")


# --- envfx info -------------------------------------------------------------------------------------------

def _add_info(sub):
    p = sub.add_parser(
        "info", help="Print the EnvFX version and the features it has; with .blend files, what EnvFX does in each",
        description="Without files: the EnvFX version and its features. With .blend files: per scene, the world "
        "bend (mode, axis, pivot, numbers, bent objects), the live wind and the snow (meshes, trails, actors). "
        "Nothing is changed or saved.")
    p.add_argument("blend", nargs="*", help=".blend file(s) to describe")
    p.add_argument("--json", action="store_true", help="one JSON object per scene and file, for scripts")
    p.set_defaults(func=run_info)


def scene_report(scene) -> dict:
    """What EnvFX does in ``scene``: plain data (names and numbers) for ``envfx info``."""
    from .operators import bend as bend_ops
    from .operators import snow as snow_ops
    from .operators import wind as wind_ops

    b, w, sn = scene.envfx.bend, scene.envfx.wind, scene.envfx.snow
    objects = list(scene.objects)
    snow = snow_ops.snow_objects(scene)
    return {
        "scene": scene.name,
        "bend": {
            "enabled": b.enabled, "mode": b.mode, "axis": b.axis, "pivot": b.pivot.name if b.pivot else None,
            "strength": round(b.strength, 6), "spread": round(b.spread, 6), "side_strength": round(b.side_strength, 6),
            "side_spread": round(b.side_spread, 6), "horizon_offset": round(b.horizon_offset, 6),
            "objects": sorted(o.name for o in objects if bend_ops.bend_modifiers(o)),
        },
        "wind": {
            "strength": round(w.strength, 6), "source_object": w.source_object.name if w.source_object else None,
            "objects": sorted(o.name for o in objects if wind_ops.wind_modifiers(o)),
        },
        "snow": {
            "meshes": sorted(o.name for o in snow),
            "trails": sorted(o.name for o in snow if snow_ops.trails_modifiers(o)),
            "from_bake": sorted(o.name for o in snow if snow_ops.buffer_modifiers(o)),
            "actors": sn.actors.name if sn.actors else None,
        },
    }


def run_info(args) -> int:
    from .core.features import FEATURES

    m = manifest()
    if not args.blend:
        print(f"EnvFX {m['version']} (extension id {m['id']}) on Blender {bpy.app.version_string}")
        print("features: " + ", ".join(FEATURES))
        return 0
    check_blends(args.blend)
    return run_files("info", args.blend, lambda path: _info_file(args, path), changes=False)


def _finite_or_null(value):
    """``value`` (nested dicts and lists) with every NaN or infinite number as None: JSON has no NaN (a script can
    store one in a setting), and strict parsers reject the line."""
    if isinstance(value, dict):
        return {k: _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_or_null(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _info_file(args, path: str):
    open_blend(path, quiet=args.json)
    for scene in bpy.data.scenes:
        report = {"file": path, **scene_report(scene)}
        if args.json:
            print(json.dumps(_finite_or_null(report), allow_nan=False), flush=True)
            continue
        b, w, sn = report["bend"], report["wind"], report["snow"]
        print(f"{path}, scene {scene.name!r}:")
        print(f"  bend: {b['mode']} {b['axis']}{'' if b['enabled'] else ' (off)'}, pivot {b['pivot']}, "
              f"strength {b['strength']:g}, spread {b['spread']:g}; {len(b['objects'])} object(s) bent")
        print(f"  wind: strength {w['strength']:g}, source {w['source_object']}; {len(w['objects'])} object(s) "
              f"in the wind")
        print(f"  snow: {len(sn['meshes'])} mesh(es), {len(sn['trails'])} with trails, {len(sn['from_bake'])} "
              f"from a bake; actors {sn['actors']}")


# --- envfx bend -------------------------------------------------------------------------------------------

def _add_bend(sub):
    from .core import bend as core_bend

    p = sub.add_parser(
        "bend",
        help="Open .blend files, add (or remove, or bake) the world bend, save; or export it for game engines",
        description="For each .blend: set the scene's bend, bend the named objects or a collection, save. "
        "Without --objects/--collection every mesh of the scene is bent. The arguments are checked before any "
        "file is opened; a file that cannot be read or saved, or whose scene does not fit them (a missing object, "
        "pivot or scene), is named and left unchanged, the others are done, and the exit code is 2. --apply does "
        "not bend a mesh a second time: one whose bend was baked (and that has no bend now) is left as it is.",
    )
    p.add_argument("blend", nargs="+", help=".blend file(s) to open")
    p.add_argument("--output", "-o", help="where to save (only with one input; default: overwrite the input)")
    p.add_argument("--scene", help="the scene to bend (each scene has its own bend; default: the file's current "
                   "scene)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--collection", help="bend every object of this collection")
    target.add_argument("--objects", help="comma-separated object names to bend")
    p.add_argument("--mode", choices=core_bend.MODES)
    p.add_argument("--axis", choices=core_bend.AXES)
    p.add_argument("--pivot", help="name of the pivot object (player or camera)")
    for name in ("strength", "spread", "side-strength", "side-spread", "horizon-offset"):
        p.add_argument(f"--{name}", type=float)
    action = p.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="bake the bend into the meshes")
    action.add_argument("--remove", action="store_true", help="remove the bend instead of adding it")
    action.add_argument("--export-engines", metavar="DIR",
                        help="only write the bend (with the settings given) as shader includes for Godot, Unity "
                        "and Unreal and envfx_bend.json into DIR (with several files: DIR/<file name>/); no "
                        "object is changed and nothing is saved, so --output, --objects and --collection are refused "
                        "with it; a scene without meshes exports too")
    p.set_defaults(func=run_bend)


BEND_NUMBERS = ("strength", "spread", "side_strength", "side_spread", "horizon_offset")


def run_bend(args) -> int:
    from .core import bend as core_bend

    if args.export_engines is not None:
        ignored = [option for option, value in (("--output", args.output), ("--objects", args.objects),
                                                ("--collection", args.collection)) if value is not None]
        if ignored:
            raise CliError(f"--export-engines only writes the scene's bend for game engines (no object is changed "
                           f"and no .blend is saved): drop {', '.join(ignored)}, or run the bend without "
                           f"--export-engines")
    args.output = check_blends(args.blend, args.output)
    check_names(args, "objects", "collection", "pivot", "scene")
    for attr in BEND_NUMBERS:
        value = getattr(args, attr)
        if value is None:
            continue
        if not math.isfinite(value):  # Blender would store inf as 3.4e38
            raise CliError(f"--{attr.replace('_', '-')} {value}: use a finite number")
        if attr in ("horizon_offset", "spread", "side_spread") and abs(value) > core_bend.MAX_DISTANCE:
            raise CliError(f"--{attr.replace('_', '-')} {value} is enormous (limit {core_bend.MAX_DISTANCE:.0f} m): "
                           f"use a distance in metres, like 2")
        if attr.endswith("spread") and value < 0:
            raise CliError(f"--{attr.replace('_', '-')} {value}: the flat zone cannot be negative, use 0 or more")
        if attr.endswith("strength") and abs(value) > core_bend.MAX_STRENGTH:
            raise CliError(f"--{attr.replace('_', '-')} {value} is enormous (limit {core_bend.MAX_STRENGTH})")
    engines = {path: args.export_engines for path in args.blend}
    if args.export_engines and len(args.blend) > 1:
        by_folder = {}
        for path in args.blend:
            engines[path] = os.path.join(args.export_engines, os.path.splitext(os.path.basename(path))[0])
            by_folder.setdefault(engines[path].lower(), []).append(path)
        for paths in by_folder.values():
            if len(paths) > 1:
                raise CliError(f"{' and '.join(paths)} would write their engine files into the same folder "
                               f"{engines[paths[0]]}: run them separately, each with its own --export-engines folder")
    return run_files("bend", args.blend, lambda path: _bend_file(args, path, engines[path]))


def _bend_settings(settings) -> tuple:
    return (settings.mode, settings.axis, settings.pivot, *(getattr(settings, a) for a in BEND_NUMBERS))


def _bend_file(args, path: str, export_engines):
    """``envfx bend`` on one file: the scene is checked against the arguments before anything changes."""
    from .core import bend as core_bend
    from .operators import bend as bend_ops

    if not export_engines and not args.output:
        check_writable_in_place(path)
    open_blend(path)
    scene = bpy.context.scene
    if args.scene is not None:
        scene = named(bpy.data.scenes, args.scene, "scene")
    settings = scene.envfx.bend
    _check_pivot(scene, args.pivot)
    if args.collection is not None:
        try:
            objects = bend_ops.gather_targets(_Context(scene, []), args.collection)
        except bend_ops.BendInputError as exc:
            raise CliError(str(exc)) from None
    elif args.objects is not None:
        objects = _resolve_objects(scene, args.objects)
    elif export_engines:
        objects = []  # the export writes the scene's bend settings only: a scene without meshes exports too
    else:
        pivot_name = args.pivot or (settings.pivot.name if settings.pivot else None)
        objects = [o for o in scene.objects if o.type == "MESH" and o.name != pivot_name]
        if not objects:
            raise CliError(f"Scene {scene.name!r} has no mesh objects to bend: pass --objects or --collection")
    before = _bend_settings(settings)
    # all arguments checked: now change the scene
    for attr in ("mode", "axis"):
        if getattr(args, attr) is not None:
            setattr(settings, attr, getattr(args, attr))
    if args.pivot is not None:
        settings.pivot = scene.objects[args.pivot]
    for attr in BEND_NUMBERS:
        if getattr(args, attr) is not None:
            setattr(settings, attr, getattr(args, attr))

    if export_engines:
        try:
            paths = bend_ops.export_engines(scene, export_engines)
        except (bend_ops.BendInputError, core_bend.BendError) as exc:
            raise CliError(str(exc)) from None
        print(f"envfx bend: {path}: wrote {len(paths)} files for game engines into {export_engines} (unit scale "
              f"{bend_ops.unit_scale(scene):g} m per Blender unit)")
        return
    baked = []
    try:
        if args.remove:
            result = bend_ops.remove_bend(objects)
            verb = "removed the bend from"
        elif args.apply:
            result, baked = bend_ops.bend_and_apply(scene, objects)
            verb = "baked the bend into"
        else:
            result = bend_ops.add_bend(scene, objects)
            verb = "bent"
    except (bend_ops.BendInputError, core_bend.BendError) as exc:
        raise CliError(str(exc)) from None
    print_warnings("bend", path, result)
    done = f"envfx bend: {path}: {verb} {len(result.changed)} object(s), {len(result.unchanged)} unchanged"
    if baked:
        done += (f" (the bend was already baked into {', '.join(baked)}: to bend them again, add the bend "
                 f"without --apply, then run --apply)")
    if not result.changed and _bend_settings(settings) == before and not args.output:
        print(f"{done}; nothing changed, {path} not saved")
        return
    out = args.output or path
    save_blend(out)
    print(f"{done}; saved {out}")


# --- envfx wind -------------------------------------------------------------------------------------------

def _add_wind(sub):
    from .core import wind as core_wind

    p = sub.add_parser(
        "wind",
        help="Open .blend files, bake vegetation wind data (and add the live wind), save",
        description="For each .blend: bake the wind data of the named objects / collection as one asset (default: "
        "every mesh of the scene as one asset, or each mesh on its own with --each), optionally add the live "
        "wind, save. The arguments are checked before any file is opened; a file that cannot be read or saved, or "
        "whose scene does not fit them, is named and left unchanged, the others are done, and the exit code is 2.",
    )
    p.add_argument("blend", nargs="+", help=".blend file(s) to open")
    p.add_argument("--output", "-o", help="where to save (only with one input; default: overwrite the input)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--collection", help="bake every mesh of this collection as one asset")
    target.add_argument("--objects", help="comma-separated object names forming one asset")
    target.add_argument("--each", action="store_true", help="bake every mesh of the scene as its own asset")
    p.add_argument("--ao-samples", type=int, help=f"Cycles AO samples, 0 (no AO) to {core_wind.MAX_AO_SAMPLES}")
    p.add_argument("--leaf-size", type=float, help="leaf island size as a fraction of the asset height")
    p.add_argument("--layout", choices=core_wind.LAYOUTS, help="export channel layout")
    p.add_argument("--custom", help="four comma-separated channel sources for --layout CUSTOM "
                   f"({', '.join(core_wind.SOURCES)})")
    p.add_argument("--height-uv", action=argparse.BooleanOptionalAction,
                   help="also write the height gradient into the UV map EnvFX_Height_UV (default: the scene's "
                   "setting, on)")
    p.add_argument("--preset", choices=tuple(core_wind.PRESETS), help="per-asset wind preset to set")
    p.add_argument("--add", action="store_true", help="also put the baked objects in the live wind")
    p.add_argument("--remove", action="store_true", help="only remove the live wind (no bake)")
    p.set_defaults(func=run_wind)


def run_wind(args) -> int:
    from .core import wind as core_wind

    args.output = check_blends(args.blend, args.output)
    check_names(args, "objects", "collection")
    if args.remove:
        given = {name: getattr(args, name) for name in ("add", "preset", "ao_samples", "leaf_size", "layout",
                                                       "custom", "height_uv")}
        given["add"] = given["add"] or None  # a store_true flag is False when not given
        ignored = [("--no-height-uv" if value is False else f"--{name.replace('_', '-')}")
                   for name, value in given.items() if value is not None]  # (--ao-samples 0 is given too)
        if ignored:
            raise CliError(f"--remove only removes the live wind (no bake): drop {', '.join(ignored)}, or run the "
                           f"bake without --remove")
    if args.ao_samples is not None and not 0 <= args.ao_samples <= core_wind.MAX_AO_SAMPLES:
        raise CliError(f"--ao-samples {args.ao_samples}: use 0 (no AO) to {core_wind.MAX_AO_SAMPLES}")
    if args.leaf_size is not None and not 0.0 < args.leaf_size < 1.0:
        raise CliError(f"--leaf-size {args.leaf_size}: use a fraction between 0 and 1")
    custom = None
    if args.custom is not None:
        custom = tuple(c.strip().upper() for c in args.custom.split(","))
        if len(custom) != 4 or any(c not in core_wind.SOURCES for c in custom):
            raise CliError(f"--custom {args.custom!r}: give four of {', '.join(core_wind.SOURCES)}")
        if args.layout != "CUSTOM":
            raise CliError("--custom sets the channels of --layout CUSTOM: add --layout CUSTOM, or drop --custom")
    if args.layout == "CUSTOM" and custom is None:
        raise CliError("--layout CUSTOM needs --custom R,G,B,A")
    return run_files("wind", args.blend, lambda path: _wind_file(args, path, custom))


def _wind_file(args, path: str, custom):
    """``envfx wind`` on one file: every asset is checked before anything changes."""
    from . import progress
    from .core import wind as core_wind
    from .operators import bend as bend_ops
    from .operators import wind as wind_ops

    if not args.output:
        check_writable_in_place(path)
    open_blend(path)
    scene = bpy.context.scene
    if args.collection is not None:  # a collection of the scene (as the bend's): its objects join its wind
        try:
            assets = [bend_ops.gather_targets(_Context(scene, []), args.collection)]
        except bend_ops.BendInputError as exc:
            raise CliError(str(exc)) from None
    elif args.objects is not None:
        assets = [_resolve_objects(scene, args.objects)]
    else:
        meshes = [o for o in scene.objects if o.type == "MESH"]
        if not meshes:
            raise CliError(f"Scene {scene.name!r} has no mesh objects to bake")
        assets = [[o] for o in meshes] if args.each else [meshes]
    try:
        if args.remove:
            result = wind_ops.remove_wind([o for a in assets for o in a])
            print_warnings("wind", path, result)
            done = f"envfx wind: {path}: removed the wind from {len(result.changed)} object(s)"
            if not result.changed and not args.output:
                print(f"{done}; nothing changed, {path} not saved")
                return
            print(done)
        else:
            for asset in assets:  # validate every asset before changing anything
                wind_ops.validate(scene, asset, args.layout or scene.envfx.wind.channel_layout, custom)
            for asset in assets:
                if args.preset:
                    wind_ops.apply_preset(asset, args.preset)
                bpy.context.view_layer.update()
                job = wind_ops.bake_job(scene, asset, bpy.context.evaluated_depsgraph_get(),
                                        ao_samples=args.ao_samples, leaf_size=args.leaf_size,
                                        layout=args.layout, custom=custom, height_uv=args.height_uv)
                with sigterm_cancels() as cancelled:
                    result = progress.run(job, "Wind bake", should_cancel=cancelled)
                print_warnings("wind", path, result)
                st = result.stats
                print(f"envfx wind: {path}: baked {', '.join(result.changed)}: {st['vertices']} vertices, "
                      f"{st['branches']} branches, {st['leaves']} leaves, height {st['height']:.3g} m")
                if args.add:
                    wind_ops.add_wind(scene, [bpy.data.objects[n] for n in result.changed])
    except (wind_ops.WindInputError, core_wind.WindError) as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:  # (the assets baked before it are not saved either: the file is as it was)
        print(f"envfx wind: {path}: {exc}; {path} not saved", file=sys.stderr)
        return 1
    out = args.output or path
    save_blend(out)
    print(f"envfx wind: {path}: saved {out}")


# --- envfx mips -------------------------------------------------------------------------------------------

def _add_mips(sub):
    p = sub.add_parser(
        "mips",
        help="Write alpha-coverage preserving mip chains (DDS, PNG levels, JSON report, comparison picture)",
        description="For every image file (or every image in a folder): build the full mip chain with each "
        "level's alpha scaled so its alpha-test coverage matches the full-size image.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="image files or folders of images")
    p.add_argument("--out", "-o", required=True, help="output folder (created if missing)")
    p.add_argument("--ref", type=float, default=0.5, help="alpha-test reference of the engine (default 0.5)")
    p.add_argument("--format", default="dds,png", help="comma-separated: dds, png (default dds,png)")
    p.add_argument("--alpha-channel", default="A", choices=("R", "G", "B", "A"),
                   help="channel holding the alpha-tested value (default A)")
    p.add_argument("--colour", default="AUTO", choices=("AUTO", "SRGB", "LINEAR"),
                   help="colour filtering: from the image's colour space, sRGB (linear light) or linear data")
    p.add_argument("--supersample", type=int, default=4, help="coverage sub-samples per texel and axis (1-8)")
    p.add_argument("--max-memory-gb", type=float, default=8.0, help="refuse images needing more memory than this")
    p.add_argument("--no-preserve", action="store_true", help="write a plain (naive) mip chain")
    p.add_argument("--no-compare", action="store_true", help="skip the comparison picture")
    p.set_defaults(func=run_mips)


def run_mips(args) -> int:
    from . import progress
    from .core import mips as core_mips
    from .operators import mips as mips_ops

    settings = core_mips.MipSettings(ref=args.ref, alpha_channel=args.alpha_channel,
                                     preserve=not args.no_preserve, supersample=args.supersample,
                                     max_memory_gb=args.max_memory_gb)
    out = cli_path(args.out, "--out")  # (no .blend: a // folder is refused)
    for path in args.inputs:
        if path.startswith("//"):
            cli_path(path, "INPUT")
    try:
        inputs = mips_ops.inputs_from_paths(args.inputs)
        job = mips_ops.bake_mips_job(inputs, out, settings, args.format,
                                     not args.no_compare, args.colour)
        with sigterm_cancels() as cancelled:
            result = progress.run(job, "Mips", should_cancel=cancelled)
    except (mips_ops.MipsInputError, core_mips.MipsError) as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:
        print(f"envfx mips: {exc}", file=sys.stderr)
        return 1
    for warning in result.warnings:
        print(f"warning: {warning}")
    for stem, rep in result.reports.items():
        cov = " ".join(f"{lv['coverage_naive']:.3f}->{lv['coverage']:.3f}" for lv in rep["per_level"])
        print(f"{stem}: {rep['width']}x{rep['height']}, {rep['levels']} levels, coverage {rep['target_coverage']:.3f}; "
              f"per level naive->kept: {cov}")
    print(f"envfx mips: wrote {len(result.files)} file(s) for {len(result.reports)} image(s) into {args.out}")
    if result.removed:
        print(f"envfx mips: {mips_ops.removed_text(result)}")
    return 0


# --- envfx gas-giant -------------------------------------------------------------------------------------

def _add_gasgiant(sub):
    from .core import gasgiant as core_gasgiant

    p = sub.add_parser(
        "gas-giant",
        help="Bake a gas giant texture (6 cube faces, equirectangular image, flow map) into a folder",
        description="Bake a gas giant texture: particles advected over a sphere by curl noise. Writes "
        "gasgiant_{px,nx,py,ny,pz,nz}.png (or _{posx,...,negz} with --cube-layout gltf/unity), "
        "gasgiant_equirect.png and gasgiant_flow.png (with _0001... per frame when --frames > 1), and gasgiant.json "
        "(what each image holds, face axes, the flow map's scale). With --save, also adds a planet wearing the "
        "texture and saves that .blend.",
    )
    p.add_argument("--out", required=True, help="output folder (created if missing; the files of the previous bake "
                   "there that this one does not write are removed, and named)")
    p.add_argument("--preset", choices=[k.lower() for k in core_gasgiant.PRESETS], help="look preset")
    p.add_argument("--particles", type=int)
    p.add_argument("--iterations", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--equirect", type=int, help="equirectangular width (height is half; 0 = none)")
    p.add_argument("--cubemap", type=int, help="pixels per cube face side")
    p.add_argument("--field", type=int, help="velocity field texels per cube face side")
    p.add_argument("--threads", type=int)
    p.add_argument("--frames", type=int, help="images in the sequence (1 = a still)")
    p.add_argument("--frame-iterations", type=int, help="iterations between frames")
    p.add_argument("--time-step", type=float, help="noise time per frame")
    p.add_argument("--palette", help="palette image (RGB/RGBA); default: a latitude colour ramp")
    p.add_argument("--mapping", choices=[m.lower() for m in core_gasgiant.MAPPINGS])
    p.add_argument("--vertical-bands", action="store_true", default=None,
                   help="bands around the X axis instead of the pole axis (a planet on its side)")
    p.add_argument("--cloud-mode", action="store_true", default=None,
                   help="paint a cloud layer: white (--cloud-color) with alpha, over transparency")
    p.add_argument("--cloud-color", type=float, nargs=3, metavar=("R", "G", "B"),
                   help="cloud colour, sRGB 0..1 (as the colour picker shows it and the PNG stores it)")
    p.add_argument("--cloud-noise", type=float, help="0..1: how much noise breaks the cloud alpha into patches")
    p.add_argument("--hot-pink", action="store_true", default=None,
                   help="fade to hot pink: texels no particle reaches show up (divergences)")
    p.add_argument("--format", choices=["png", "exr", "png_exr"], help="image files (EXR: 32-bit float, linear)")
    p.add_argument("--cube-layout", choices=[c.lower() for c in core_gasgiant.CUBE_LAYOUTS],
                   help="cube faces: blender (gasgiant_px..nz, Blender axes, seen from outside; default), gltf "
                   "(gasgiant_posx..negz: standard cube-map faces, right-handed Y-up: Godot, OpenGL, glTF) or unity "
                   "(the same in Unity's left-handed Y-up space)")
    p.add_argument("--flow-scale", type=float,
                   help="radians per frame that the 8-bit flow map's 0 and 1 stand for (default 0: automatic)")
    p.add_argument("--save-field", help="also save the velocity field(s) to this .npz file")
    p.add_argument("--load-field", help="load the velocity field(s) from a .npz file saved by --save-field")
    p.add_argument("--field-interval", type=int, help="frames between velocity-field builds (animations)")
    p.add_argument("--vortex-band-threshold", type=float,
                   help="vortices only where the relative band speed is at most this (0.05..1)")
    p.add_argument("--cubemap-palette", metavar="DIR",
                   help="colour the particles from the cube faces of an earlier bake in DIR: gasgiant_{px,...,nz}.png, "
                   "or gasgiant_{posx,...,negz}.png of a gltf/unity bake (its gasgiant.json says which)")
    p.add_argument("--random", action="store_true",
                   help="random bands, band speed, velocity factor, noise scale, W offset from the seed, with "
                   "vertical bands (options given explicitly win)")
    for name in ("bands", "band-speed", "pole-attenuation", "noise-scale", "falloff", "gain", "turbulence",
                 "velocity-factor", "vortex-size", "vortex-size-variance", "vortex-strength", "opacity", "blur",
                 "fade-rate", "w-offset", "opacity-start"):
        p.add_argument(f"--{name}", type=float)
    for name in ("band-power", "octaves", "vortices", "lifetime", "respawn-batches", "blur-interval"):
        p.add_argument(f"--{name}", type=int)
    p.add_argument("--save", metavar="FILE.blend",
                   help="also add a planet wearing the texture to this .blend and save it: an existing file is "
                   "opened and keeps everything it has (a planet of the same name is updated); a new path gets "
                   "Blender's startup scene with the planet")
    p.add_argument("--planet", help="name of the planet object (with --save; default \"Gas Giant\")")
    p.set_defaults(func=run_gasgiant)


PLANET_NAME = "Gas Giant"  # the planet --save adds when --planet is not given


def gasgiant_params(args):
    """The core parameters from the command line (raises CliError for bad input)."""
    from dataclasses import replace

    from .core import gasgiant as core_gasgiant
    from .operators import gasgiant as gasgiant_ops

    if args.planet is not None and args.save is None:
        raise CliError("--planet names the planet that --save adds to a .blend, and --save is not given: add --save "
                       "FILE.blend, or drop --planet")
    # every path as an absolute one before anything is read or opened; // is the folder of the --save .blend
    if args.save is not None:
        args.save = cli_path(args.save, "--save")
    for name in ("out", "save_field", "load_field", "palette", "cubemap_palette"):
        if getattr(args, name) is not None:
            setattr(args, name, cli_path(getattr(args, name), "--" + name.replace("_", "-"), blend=args.save,
                                         no_blend="pass --save FILE.blend (// is then its folder), or "))
    params = core_gasgiant.preset(args.preset) if args.preset else core_gasgiant.GasGiantParams()
    mapping = {"particles": "particles", "iterations": "iterations", "seed": "seed", "equirect": "equirect_width",
               "cubemap": "cubemap_size", "field": "field_size", "threads": "threads", "frames": "frames",
               "frame_iterations": "frame_iterations", "time_step": "time_step", "bands": "bands",
               "band_speed": "band_speed", "pole_attenuation": "pole_attenuation", "noise_scale": "noise_scale",
               "falloff": "falloff", "gain": "gain", "turbulence": "noise_speed",
               "velocity_factor": "velocity_factor", "vortex_size": "vortex_size",
               "vortex_size_variance": "vortex_size_variance", "vortex_strength": "vortex_strength",
               "opacity": "opacity", "blur": "blur", "fade_rate": "fade_rate", "w_offset": "w_offset",
               "band_power": "band_power", "octaves": "octaves", "vortices": "vortices", "lifetime": "lifetime",
               "respawn_batches": "respawn_batches", "blur_interval": "blur_interval",
               "opacity_start": "opacity_start", "flow_scale": "flow_scale"}
    if args.random:
        params = replace(params, **core_gasgiant.random_look(args.seed if args.seed is not None else params.seed))
    changes = {field: getattr(args, arg) for arg, field in mapping.items() if getattr(args, arg) is not None}
    if args.mapping:
        changes["mapping"] = args.mapping.upper()
    if args.cubemap_palette:
        try:
            changes["palette_cube"] = gasgiant_ops.load_palette_cube(args.cubemap_palette)
        except gasgiant_ops.GasGiantInputError as exc:
            raise CliError(str(exc)) from None
    for arg in ("vertical_bands", "cloud_mode", "hot_pink", "cloud_noise", "field_interval", "vortex_band_threshold"):
        if getattr(args, arg) is not None:
            changes[arg] = getattr(args, arg)
    if args.cloud_color is not None:
        changes["cloud_color"] = tuple(args.cloud_color)
    if args.format:
        changes["file_format"] = args.format.upper()
    if args.cube_layout:
        changes["cube_layout"] = args.cube_layout.upper()
    if args.save_field:
        changes["save_field"] = os.path.abspath(args.save_field)
    if args.load_field:
        changes["load_field"] = os.path.abspath(args.load_field)
    if args.palette:
        try:
            changes["palette"] = gasgiant_ops.load_palette(args.palette)
        except gasgiant_ops.GasGiantInputError as exc:
            raise CliError(str(exc)) from None
    params = replace(params, **changes)
    try:
        params.validate(core_gasgiant.available_memory())
        core_gasgiant.check_output_folder(args.out)
    except core_gasgiant.GasGiantError as exc:
        options = {field: arg for arg, field in mapping.items()}
        options.update((arg, arg) for arg in ("cloud_color", "cloud_noise", "vortex_band_threshold", "field_interval"))
        if exc.field in options and exc.advice:  # a bad number: name the option it came from
            raise CliError(f"--{options[exc.field].replace('_', '-')} {exc.value}: {exc.advice}") from None
        raise CliError(str(exc)) from None
    if args.save:
        if not args.save.lower().endswith(".blend"):
            raise CliError(f"--save {args.save!r}: give a .blend path")
        folder = os.path.dirname(os.path.abspath(args.save))
        if os.path.exists(args.save) and not os.path.isfile(args.save):
            raise CliError(f"--save {args.save!r} is not a file: give the path of a .blend file")
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise CliError(f"--save folder {folder!r} does not exist or is not writable: choose another")
        if os.path.isfile(args.save) and not os.access(args.save, os.W_OK):
            raise CliError(f"--save {args.save!r} is a read-only file: make it writable or choose another --save")
        if not params.equirect_width:
            raise CliError("--save needs the equirectangular image for the planet: do not pass --equirect 0")
    return params


def run_gasgiant(args) -> int:
    from . import progress
    from .core import gasgiant as core_gasgiant
    from .operators import gasgiant as gasgiant_ops

    params = gasgiant_params(args)
    try:
        fields = core_gasgiant.check_field_files(params)  # read once, handed to the bake
    except core_gasgiant.GasGiantError as exc:
        raise CliError(str(exc)) from None
    if args.save and os.path.isfile(args.save):
        open_blend(args.save)  # the planet joins the file's current scene: nothing of the file is lost
    try:
        with sigterm_cancels() as cancelled:
            result = progress.run(core_gasgiant.bake(params, args.out, fields=fields), "Gas giant bake",
                                  should_cancel=cancelled)
    except progress.Cancelled as exc:
        print(f"envfx gas-giant: {exc}", file=sys.stderr)
        return 1
    steps = params.particles * (params.iterations + (params.frames - 1) * params.frame_iterations)
    print(f"envfx gas-giant: wrote {len(result.files)} image(s) and gasgiant.json to {result.folder} in "
          f"{result.seconds:.1f} s ({steps / max(result.seconds, 1e-9) / 1e6:.1f}M particle-steps/s overall)")
    if result.removed_note():
        print(f"envfx gas-giant: {result.removed_note()}")
    if args.save:
        scene = bpy.context.scene
        args.planet = args.planet or PLANET_NAME
        before = bpy.data.objects.get(args.planet)
        updated = before is not None and before.type == "MESH" and before.library is None
        try:
            gasgiant_ops.make_planet(scene, args.planet, result.equirect, frames=params.frames,
                                     clouds=params.cloud_mode)
        except (gasgiant_ops.GasGiantInputError, RuntimeError) as exc:  # (Blender cannot read the image it wrote)
            why = (str(exc).strip().splitlines() or ["unknown error"])[-1].removeprefix("Error: ")
            raise CliError(f"the textures were written to {result.folder}, but the planet could not be made ({why}): "
                           f"{args.save} was not saved; check that the folder can be read, then run again") from None
        save_blend(args.save)
        print(f"envfx gas-giant: {'updated' if updated else 'added'} planet {args.planet!r}; saved {args.save}")
    return 0


# --- envfx snow -------------------------------------------------------------------------------------------

def _add_snow(sub):
    p = sub.add_parser(
        "snow",
        help="Open a .blend, generate snow cover, add live trails and/or bake the interaction buffer, save",
        description="Open a .blend and do any of: --generate a snow cover over --objects, --trails (live trails "
        "from the --actors collection), --bake the interaction buffer into --out-dir. Saves the .blend when it "
        "changed it (to --output, default the input).",
    )
    p.add_argument("blend", help="the .blend file to open (one: for several, run snow once per file)")
    p.add_argument("--output", "-o", help="where to save (default: overwrite the input)")
    p.add_argument("--generate", action="store_true", help="generate snow cover over --objects")
    p.add_argument("--objects", help="comma-separated terrain object names (for --generate)")
    p.add_argument("--spacing", type=float, help="snow vertex spacing (scene units)")
    p.add_argument("--thickness", type=float, help="snow thickness (scene units)")
    p.add_argument("--max-slope", type=float, help="max slope in degrees")
    p.add_argument("--lods", type=int, help="levels of detail (1-8)")
    p.add_argument("--budget", type=int, help="vertex budget")
    p.add_argument("--trails", action="store_true", help="add live trails to every snow mesh of the scene")
    p.add_argument("--actors", help="name of the actor collection")
    p.add_argument("--occluders", help="name of the occluder collection")
    p.add_argument("--bake", action="store_true",
                   help="bake the interaction buffer into --out-dir (its size is estimated first and a bake that "
                   "does not fit on the disk is refused; SIGTERM or Ctrl-C cancels it and removes its temporary "
                   "files, exit 1)")
    p.add_argument("--out-dir", help="folder for the EXR images and JSON (for --bake)")
    p.add_argument("--resolution", type=int, help="buffer resolution in texels")
    p.add_argument("--size", type=float, help="world size of the follow window")
    p.add_argument("--frames", help="frame range START:END")
    p.add_argument("--framing", choices=("AREA", "FOLLOW"))
    p.add_argument("--pivot", help="object the FOLLOW window follows")
    p.add_argument("--final-only", action="store_true", help="write only the final frame's image")
    p.set_defaults(func=run_snow)
    # a frame range that starts below 0 (--frames -3:-1) is a value, not an unknown option (argparse takes only
    # plain negative numbers for values)
    p._negative_number_matcher = re.compile(r"^-\d+$|^-\d*\.\d+$|^-\d+:-?\d+$")


# options used only by one part of `envfx snow`: given without that part they would be ignored, so they are refused
SNOW_GENERATE_ONLY = ("objects", "spacing", "max_slope", "lods", "budget")
SNOW_BAKE_ONLY = ("out_dir", "resolution", "size", "frames", "framing", "pivot", "final_only")
SNOW_FOLLOW_ONLY = ("pivot", "size")


def _snow_options(args, names) -> str:
    """The options of ``names`` given on the command line, as the user wrote them (--max-slope, --final-only)."""
    return ", ".join("--" + n.replace("_", "-") for n in names if getattr(args, n) not in (None, False))


def _snow_only(options: str, where: str, what_to_do: str) -> str:
    """"--a, --b only apply to WHERE: WHAT_TO_DO, or drop them" (one option: "applies", "drop it")."""
    one = "," not in options
    return (f"{options} only {'applies' if one else 'apply'} to {where}: {what_to_do}, or drop "
            f"{'it' if one else 'them'}")


def _number(v) -> str:
    return f"{v:g}" if isinstance(v, float) else f"{v}"


def _snow_limits(prop: str) -> tuple:
    """(lowest, highest) value Blender takes for the scene's snow setting ``prop`` (it clamps or refuses
    others), read from the setting itself."""
    snow = bpy.types.Scene.bl_rna.properties["envfx"].fixed_type.properties["snow"].fixed_type
    rna = snow.properties[prop]
    return rna.hard_min, rna.hard_max


def _snow_frame_limits() -> tuple:
    """Blender's frame range (scene.frame_set clamps to it): a bake steps through every frame."""
    rna = bpy.types.Scene.bl_rna.properties["frame_current"]
    return rna.hard_min, rna.hard_max


def _check_snow_ignored(args):
    """Options that this run would ignore are refused (the README's rule for every command)."""
    if not args.generate and _snow_options(args, SNOW_GENERATE_ONLY):
        raise CliError(_snow_only(_snow_options(args, SNOW_GENERATE_ONLY), "--generate (the snow cover), which is "
                                  "not given", "add --generate"))
    if not args.bake and _snow_options(args, SNOW_BAKE_ONLY):
        raise CliError(_snow_only(_snow_options(args, SNOW_BAKE_ONLY), "--bake (the interaction buffer), which is "
                                  "not given", "add --bake"))
    if args.occluders is not None and not (args.trails or args.bake):
        raise CliError(_snow_only("--occluders", "--trails and --bake (the snow is held down under its objects; "
                                  "--generate keeps snow from under every rendered object by itself)",
                                  "add --trails or --bake"))
    if args.framing == "AREA" and _snow_options(args, SNOW_FOLLOW_ONLY):
        raise CliError(_snow_only(_snow_options(args, SNOW_FOLLOW_ONLY), "--framing FOLLOW (an AREA buffer covers "
                                  "every snow mesh)", "pass --framing FOLLOW"))


def _check_snow_ranges(args):
    """Every number within what the setting it goes to takes (Blender would clamp it, or fail with a traceback
    beyond a 32-bit integer)."""
    for name, prop, what in (("spacing", "spacing", " scene units"), ("thickness", "thickness", " scene units"),
                             ("size", "buffer_size", " scene units"), ("budget", "vertex_budget", " vertices"),
                             ("resolution", "buffer_resolution", " texels"), ("lods", "lods", "")):
        value = getattr(args, name)
        if value is None:
            continue
        lo, hi = _snow_limits(prop)
        if not (math.isfinite(value) and lo <= value <= hi):
            raise CliError(f"--{name} {_number(value)} must be between {_number(lo)} and {_number(hi)}{what}")
    if args.max_slope is not None:
        hi = math.degrees(_snow_limits("max_slope")[1])
        if not (math.isfinite(args.max_slope) and 0 <= args.max_slope <= hi):
            raise CliError(f"--max-slope {args.max_slope} must be between 0 and {hi:.2f} degrees")


def run_snow(args) -> int:
    check_names(args, "objects", "actors", "occluders", "pivot")
    if not (args.generate or args.trails or args.bake):
        raise CliError("Nothing to do: pass --generate, --trails and/or --bake")
    if args.generate and not args.objects:
        raise CliError("--generate needs --objects: the terrain objects to cover")
    if args.bake and not args.out_dir:
        raise CliError("--bake needs --out-dir: the folder to write the buffer to")
    _check_snow_ignored(args)
    for name in ("spacing", "thickness", "size"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0 or (name == "thickness" and value == 0)):
            raise CliError(f"--{name} {value} must be a positive number")
    _check_snow_ranges(args)
    frames = None
    if args.frames:
        try:
            start, end = (int(x) for x in args.frames.split(":"))
        except ValueError:
            raise CliError(f"--frames {args.frames!r}: use START:END, e.g. 1:250 or -3:-1") from None
        if end < start:
            raise CliError(f"--frames {args.frames}: the range is reversed, use START <= END")
        lo, hi = _snow_frame_limits()
        if not (lo <= start and end <= hi):
            raise CliError(f"--frames {args.frames}: Blender's frames run from {lo} to {hi}: use a range within "
                           f"them")
        frames = (start, end)
    saves = bool(args.generate or args.trails or args.output)
    args.output = check_blends([args.blend], args.output)
    return run_files("snow", [args.blend], lambda path: _snow_file(args, path, frames, saves))


def _snow_file(args, path: str, frames, saves: bool) -> int:
    import math

    from . import progress
    from .core import snow as core_snow
    from .operators import snow as snow_ops

    check_blend(path)
    if saves and not args.output:
        check_writable_in_place(path)
    open_blend(path)
    scene = bpy.context.scene
    s = scene.envfx.snow
    objects = _resolve_objects(scene, args.objects) if args.objects is not None else []
    for name in ("actors", "occluders"):
        value = getattr(args, name)
        if value is not None:
            named(bpy.data.collections, value, "collection", f" for --{name}")
    _check_pivot(scene, args.pivot)
    if args.framing is None and s.framing != "FOLLOW" and _snow_options(args, SNOW_FOLLOW_ONLY):
        raise CliError(_snow_only(_snow_options(args, SNOW_FOLLOW_ONLY), f"a FOLLOW window, and the scene's buffer "
                                  f"framing is {s.framing} (it covers every snow mesh)", "add --framing FOLLOW"))
    # all arguments checked: now change the settings
    for name, prop in (("spacing", "spacing"), ("thickness", "thickness"), ("lods", "lods"),
                       ("budget", "vertex_budget"), ("resolution", "buffer_resolution"), ("size", "buffer_size"),
                       ("framing", "framing")):
        if getattr(args, name) is not None:
            setattr(s, prop, getattr(args, name))
    if args.max_slope is not None:
        s.max_slope = math.radians(args.max_slope)
    if args.actors:
        s.actors = bpy.data.collections[args.actors]
    if args.occluders:
        s.occluders = bpy.data.collections[args.occluders]
    if args.pivot:
        s.pivot = scene.objects[args.pivot]
    if frames:
        s.frame_start, s.frame_end = frames
    if args.out_dir:  # a // folder is the opened file's (Blender reads it so), anything else is made absolute
        s.output_dir = args.out_dir if args.out_dir.startswith("//") else os.path.abspath(args.out_dir)
    if args.final_only:
        s.sequence = False
    try:
        if args.bake and (args.generate or args.trails):
            snow_ops.bake_inputs(scene)  # the bake's own checks (folder, disk space, pivot, actors) before the cover
        if args.generate:
            bpy.context.view_layer.update()
            old = [o.name for o in snow_ops.covers_of(scene, objects)]
            made = snow_ops.generate_snow(scene, objects, bpy.context.evaluated_depsgraph_get(), s.density_mask,
                                          s.density_texture, replace=True)  # the file's density mask, as the panel
            what = f"regenerated the snow cover {', '.join(old)} in place as" if old else "made"
            print(f"envfx snow: {path}: {what} {len(made)} snow mesh(es), {len(made[0].data.vertices):,} vertices")
            for warning in made.warnings:
                print(f"envfx snow: {path}: warning: {warning}")
        if args.trails:
            changed, skipped = snow_ops.add_trails(scene, snow_ops.snow_objects(scene))
            for name, why in skipped.items():
                print(f"envfx snow: {path}: warning: skipped {name} ({why})")
            print(f"envfx snow: {path}: trails on {len(changed)} snow mesh(es)")
        if args.bake:
            out_dir = snow_ops.bake_inputs(scene)[0]
            images, frame_count = snow_ops.bake_counts(scene)
            size = core_snow.bake_output_bytes(s.buffer_resolution, images, frame_count)
            print(f"envfx snow: {path}: baking {images} image(s) of {s.buffer_resolution}x{s.buffer_resolution} "
                  f"into {out_dir} (up to {size / 2**20:,.1f} MB)")
            with sigterm_cancels() as cancelled:
                result = progress.run(snow_ops.bake_job(scene), "Snow buffer bake", should_cancel=cancelled)
            for name in result.stale_removed:
                print(f"envfx snow: {path}: removed {name}, the temporary folder of an earlier bake that was killed")
            print(f"envfx snow: {path}: wrote {len(result.files)} image(s) and {result.metadata_path}")
            warning = snow_ops.range_warning(scene, s.frame_start, s.frame_end, s.sequence)
            if warning is not None:
                print(f"envfx snow: {path}: warning: {warning}")
    except snow_ops.SnowInputError as exc:
        raise CliError(exc.cli or str(exc)) from None
    except core_snow.SnowError as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:
        print(f"envfx snow: {path}: {exc}", file=sys.stderr)
        return 1
    if saves:
        out = args.output or path
        if out != path and s.output_dir.startswith("//"):  # saved elsewhere: still the folder it names now
            s.output_dir = _relative_to(bpy.path.abspath(s.output_dir), out)
        save_blend(out)
        print(f"envfx snow: {path}: saved {out}")
    return 0


def _relative_to(folder: str, blend: str) -> str:
    """``folder`` as a ``//`` path for the .blend file ``blend`` (absolute where none exists: another drive)."""
    try:
        return "//" + os.path.relpath(os.path.normpath(folder), os.path.dirname(os.path.abspath(blend)))
    except ValueError:
        return os.path.normpath(folder)


# --- entry points -----------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="EnvFX headless commands")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_info(sub)
    _add_bend(sub)
    _add_wind(sub)
    _add_snow(sub)
    _add_gasgiant(sub)
    _add_mips(sub)
    return parser


def subcommand_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of one sub-command (``bend``, ``gas-giant``...) of ``build_parser()``."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(list(argv))
        if extra:  # told by the sub-command, with its usage (the top-level usage does not show its options)
            command = getattr(args, "command", None)
            sub = subcommand_parser(parser, command) if command else parser
            blends = [e for e in extra if e.lower().endswith(".blend") and not e.startswith("-")]
            if command == "snow" and blends:
                sub.error(f"snow takes one .blend file ({', '.join(blends)} given besides {args.blend}): run it once "
                          f"per file, e.g. for f in levels/*.blend; do {PROG} snow \"$f\" ...; done")
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help or an argparse error (already printed)
        return int(exc.code or 0)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        check_text_options(subcommand_parser(parser, args.command), args)
        return int(args.func(args))
    except CliError as exc:
        print(f"envfx {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM during a bake, outside the bake itself
        print(f"envfx {args.command}: cancelled", file=sys.stderr)
        return 1


def cli_command(argv):
    """Handler registered with bpy.utils.register_cli_command."""
    return main(argv)
