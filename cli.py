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
    if args.collection:
        try:
            objects = bend_ops.gather_targets(_Context(scene, []), args.collection)
        except bend_ops.BendInputError as exc:
            raise CliError(str(exc)) from None
    elif args.objects:
        objects = _resolve_objects(scene, args.objects)
    else:
        pivot_name = args.pivot or (settings.pivot.name if settings.pivot else None)
        objects = [o for o in scene.objects if o.type == "MESH" and o.name != pivot_name]
    # all arguments checked: now change the scene
    for attr in ("mode", "axis"):
        if getattr(args, attr) is not None:
            setattr(settings, attr, getattr(args, attr))
    if args.pivot is not None:
        settings.pivot = scene.objects[args.pivot]
    for attr in ("strength", "spread", "side_strength", "side_spread", "horizon_offset"):
        if getattr(args, attr) is not None:
            setattr(settings, attr, getattr(args, attr))

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
    try:
        inputs = mips_ops.inputs_from_paths(args.inputs)
        job = mips_ops.bake_mips_job(inputs, os.path.abspath(args.out), settings, args.format,
                                     not args.no_compare, args.colour)
        result = progress.run(job, "Mips")
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
    return 0


# --- entry points -----------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="EnvFX headless commands")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_info(sub)
    _add_bend(sub)
    _add_mips(sub)
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
