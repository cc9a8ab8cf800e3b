"""`blender -c envfx ...` sub-commands for headless batch work.

``main(argv)`` is the entry point (the registered command calls it); it returns a process exit code:
0 done, 1 the work failed, 2 bad arguments or input.
"""

from __future__ import annotations

import argparse
import os
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

def open_blend(path: str):
    if not path.lower().endswith(".blend"):
        raise CliError(f"{path!r} is not a .blend file: pass the .blend to work on")
    if not os.path.isfile(path):
        raise CliError(f"No such file {path!r}: check the path")
    bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path), load_ui=False)


def save_blend(path: str):
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise CliError(f"Output folder {folder!r} does not exist: create it first")
    if not os.access(folder, os.W_OK):
        raise CliError(f"Output folder {folder!r} is not writable: choose another --output")
    bpy.ops.wm.save_as_mainfile(filepath=path, check_existing=False)


class _Context:
    """What the operator functions need from bpy.context, built without a UI."""

    def __init__(self, scene, selected):
        self.scene = scene
        self.selected_objects = selected


def _resolve_objects(scene, names: str):
    found, missing = [], []
    for name in [n.strip() for n in names.split(",") if n.strip()]:
        obj = scene.objects.get(name)
        (found if obj is not None else missing).append(obj if obj is not None else name)
    if missing:
        raise CliError(f"No object(s) named {', '.join(missing)} in scene {scene.name!r}")
    return found


# --- envfx info -------------------------------------------------------------------------------------------

def _add_info(sub):
    p = sub.add_parser("info", help="Print the EnvFX version and the features it has")
    p.set_defaults(func=run_info)


def run_info(args) -> int:
    from . import FEATURES

    m = manifest()
    print(f"EnvFX {m['version']} (extension id {m['id']}) on Blender {bpy.app.version_string}")
    print("features: " + ", ".join(FEATURES))
    return 0


# --- envfx bend -------------------------------------------------------------------------------------------

def _add_bend(sub):
    from .core import bend as core_bend

    p = sub.add_parser(
        "bend",
        help="Open a .blend, add (or remove, or bake) the world bend, save",
        description="Open a .blend, set the scene's bend, bend the named objects or a collection, save. "
        "Without --objects/--collection every mesh of the scene is bent.",
    )
    p.add_argument("blend", help=".blend file to open")
    p.add_argument("--output", "-o", help="where to save (default: overwrite the input)")
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
    p.set_defaults(func=run_bend)


def run_bend(args) -> int:
    from .core import bend as core_bend
    from .operators import bend as bend_ops

    open_blend(args.blend)
    scene = bpy.context.scene
    settings = scene.envfx.bend
    if args.pivot is not None:
        pivot = scene.objects.get(args.pivot)
        if pivot is None:
            raise CliError(f"No pivot object named {args.pivot!r} in scene {scene.name!r}")
    for attr in ("strength", "spread", "side_strength", "side_spread", "horizon_offset"):
        value = getattr(args, attr)
        if value is None:
            continue
        if attr.endswith("spread") and value < 0:
            raise CliError(f"--{attr.replace('_', '-')} {value}: the flat zone cannot be negative, use 0 or more")
        if attr.endswith("strength") and abs(value) > core_bend.MAX_STRENGTH:
            raise CliError(f"--{attr.replace('_', '-')} {value} is enormous (limit {core_bend.MAX_STRENGTH})")
    # all arguments checked: now change the scene
    for attr in ("mode", "axis"):
        if getattr(args, attr) is not None:
            setattr(settings, attr, getattr(args, attr))
    if args.pivot is not None:
        settings.pivot = scene.objects[args.pivot]
    for attr in ("strength", "spread", "side_strength", "side_spread", "horizon_offset"):
        if getattr(args, attr) is not None:
            setattr(settings, attr, getattr(args, attr))

    if args.collection:
        objects = bend_ops.gather_targets(_Context(scene, []), args.collection)
    elif args.objects:
        objects = _resolve_objects(scene, args.objects)
    else:
        objects = [o for o in scene.objects if o.type == "MESH" and o is not settings.pivot]
    try:
        if args.remove:
            result = bend_ops.remove_bend(objects)
            verb = "removed the bend from"
        else:
            result = bend_ops.add_bend(scene, objects)
            verb = "bent"
            if args.apply:
                bpy.context.view_layer.update()
                result = bend_ops.apply_bend(scene, objects, bpy.context.evaluated_depsgraph_get())
                verb = "baked the bend into"
    except (bend_ops.BendInputError, core_bend.BendError) as exc:
        raise CliError(str(exc)) from None
    for warning in result.warnings:
        print(f"warning: {warning}")
    if result.skipped:
        print(f"warning: skipped {result.skipped_text()}")
    out = args.output or args.blend
    save_blend(out)
    print(f"envfx bend: {verb} {len(result.changed)} object(s), {len(result.unchanged)} unchanged; saved {out}")
    return 0


# --- envfx wind -------------------------------------------------------------------------------------------

def _add_wind(sub):
    from .core import wind as core_wind

    p = sub.add_parser(
        "wind",
        help="Open .blend files, bake vegetation wind data (and add the live wind), save",
        description="For each .blend: bake the wind data of the named objects / collection as one asset (default: "
        "every mesh of the scene as one asset, or each mesh on its own with --each), optionally add the live "
        "wind, save. Bad input is reported before any file is changed.",
    )
    p.add_argument("blend", nargs="+", help=".blend file(s) to open")
    p.add_argument("--output", "-o", help="where to save (only with one input; default: overwrite the input)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--collection", help="bake every mesh of this collection as one asset")
    target.add_argument("--objects", help="comma-separated object names forming one asset")
    target.add_argument("--each", action="store_true", help="bake every mesh of the scene as its own asset")
    p.add_argument("--ao-samples", type=int, help="Cycles AO samples (0 = no AO)")
    p.add_argument("--leaf-size", type=float, help="leaf island size as a fraction of the asset height")
    p.add_argument("--layout", choices=core_wind.LAYOUTS, help="export channel layout")
    p.add_argument("--custom", help="four comma-separated channel sources for --layout CUSTOM "
                   f"({', '.join(core_wind.SOURCES)})")
    p.add_argument("--preset", choices=tuple(core_wind.PRESETS), help="per-asset wind preset to set")
    p.add_argument("--add", action="store_true", help="also put the baked objects in the live wind")
    p.add_argument("--remove", action="store_true", help="only remove the live wind (no bake)")
    p.set_defaults(func=run_wind)


def run_wind(args) -> int:
    from .core import wind as core_wind
    from .operators import wind as wind_ops

    if args.output and len(args.blend) > 1:
        raise CliError("--output works with one input file; with several, each file is saved in place")
    for path in args.blend:
        if not path.lower().endswith(".blend") or not os.path.isfile(path):
            raise CliError(f"{path!r} is not an existing .blend file: check the path")
    if args.ao_samples is not None and args.ao_samples < 0:
        raise CliError(f"--ao-samples {args.ao_samples}: use 0 (no AO) or more")
    if args.leaf_size is not None and not 0.0 < args.leaf_size < 1.0:
        raise CliError(f"--leaf-size {args.leaf_size}: use a fraction between 0 and 1")
    custom = None
    if args.custom is not None:
        custom = tuple(c.strip().upper() for c in args.custom.split(","))
        if len(custom) != 4 or any(c not in core_wind.SOURCES for c in custom):
            raise CliError(f"--custom {args.custom!r}: give four of {', '.join(core_wind.SOURCES)}")
    if args.layout == "CUSTOM" and custom is None:
        raise CliError("--layout CUSTOM needs --custom R,G,B,A")
    for path in args.blend:
        open_blend(path)
        scene = bpy.context.scene
        if args.collection:
            coll = bpy.data.collections.get(args.collection)
            if coll is None:
                raise CliError(f"No collection named {args.collection!r} in {path}")
            assets = [list(coll.all_objects)]
        elif args.objects:
            assets = [_resolve_objects(scene, args.objects)]
        else:
            meshes = [o for o in scene.objects if o.type == "MESH"]
            if not meshes:
                raise CliError(f"{path} has no mesh objects to bake")
            assets = [[o] for o in meshes] if args.each else [meshes]
        try:
            if args.remove:
                result = wind_ops.remove_wind([o for a in assets for o in a])
                print(f"envfx wind: removed the wind from {len(result.changed)} object(s)")
            else:
                for asset in assets:  # validate every asset before changing anything
                    wind_ops.validate(scene, asset, args.layout or scene.envfx.wind.channel_layout, custom)
                for asset in assets:
                    if args.preset:
                        wind_ops.apply_preset(asset, args.preset)
                    bpy.context.view_layer.update()
                    result = wind_ops.bake(scene, asset, bpy.context.evaluated_depsgraph_get(),
                                           ao_samples=args.ao_samples, leaf_size=args.leaf_size,
                                           layout=args.layout, custom=custom)
                    for warning in result.warnings:
                        print(f"warning: {warning}")
                    if result.skipped:
                        print(f"warning: skipped {result.skipped_text()}")
                    st = result.stats
                    print(f"envfx wind: baked {', '.join(result.changed)}: {st['vertices']} vertices, "
                          f"{st['branches']} branches, {st['leaves']} leaves, height {st['height']:.3g} m")
                    if args.add:
                        wind_ops.add_wind(scene, [bpy.data.objects[n] for n in result.changed])
        except (wind_ops.WindInputError, core_wind.WindError) as exc:
            raise CliError(f"{path}: {exc}") from None
        out = args.output or path
        save_blend(out)
        print(f"envfx wind: saved {out}")
    return 0


# --- entry points -----------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="EnvFX headless commands")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_info(sub)
    _add_bend(sub)
    _add_wind(sub)
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # --help or an argparse error (already printed)
        return int(exc.code or 0)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except CliError as exc:
        print(f"envfx {args.command}: error: {exc}", file=sys.stderr)
        return 2


def cli_command(argv):
    """Handler registered with bpy.utils.register_cli_command."""
    return main(argv)
