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


# --- envfx snow -------------------------------------------------------------------------------------------

def _add_snow(sub):
    p = sub.add_parser(
        "snow",
        help="Open a .blend, generate snow cover, add live trails and/or bake the interaction buffer, save",
        description="Open a .blend and do any of: --generate a snow cover over --objects, --trails (live trails "
        "from the --actors collection), --bake the interaction buffer into --out-dir. Saves the .blend when it "
        "changed it (to --output, default the input).",
    )
    p.add_argument("blend", help=".blend file to open")
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
    p.add_argument("--bake", action="store_true", help="bake the interaction buffer into --out-dir")
    p.add_argument("--out-dir", help="folder for the EXR images and JSON (for --bake)")
    p.add_argument("--resolution", type=int, help="buffer resolution in texels")
    p.add_argument("--size", type=float, help="world size of the follow window")
    p.add_argument("--frames", help="frame range START:END")
    p.add_argument("--framing", choices=("AREA", "FOLLOW"))
    p.add_argument("--pivot", help="object the FOLLOW window follows")
    p.add_argument("--final-only", action="store_true", help="write only the final frame's image")
    p.set_defaults(func=run_snow)


def run_snow(args) -> int:
    import math

    from . import progress
    from .core import snow as core_snow
    from .operators import snow as snow_ops

    if not (args.generate or args.trails or args.bake):
        raise CliError("Nothing to do: pass --generate, --trails and/or --bake")
    if args.generate and not args.objects:
        raise CliError("--generate needs --objects: the terrain objects to cover")
    if args.bake and not args.out_dir:
        raise CliError("--bake needs --out-dir: the folder to write the buffer to")
    for name in ("spacing", "thickness", "size"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0 or (name == "thickness" and value == 0)):
            raise CliError(f"--{name} {value} must be a positive number")
    if args.resolution is not None and not 1 <= args.resolution <= core_snow.MAX_RESOLUTION:
        raise CliError(f"--resolution {args.resolution} must be between 1 and {core_snow.MAX_RESOLUTION} texels")
    if args.max_slope is not None and not 0 <= args.max_slope < 90:
        raise CliError(f"--max-slope {args.max_slope} must be between 0 and 90 degrees")
    if args.lods is not None and not 1 <= args.lods <= 8:
        raise CliError(f"--lods {args.lods} must be between 1 and 8")
    if args.budget is not None and args.budget < 1:
        raise CliError("--budget must be at least 1")
    frames = None
    if args.frames:
        try:
            start, end = (int(x) for x in args.frames.split(":"))
        except ValueError:
            raise CliError(f"--frames {args.frames!r}: use START:END, e.g. 1:250") from None
        if end < start:
            raise CliError(f"--frames {args.frames}: the range is reversed, use START <= END")
        frames = (start, end)
    open_blend(args.blend)
    scene = bpy.context.scene
    s = scene.envfx.snow
    objects = _resolve_objects(scene, args.objects) if args.objects else []
    for name in ("actors", "occluders"):
        value = getattr(args, name)
        if value and bpy.data.collections.get(value) is None:
            raise CliError(f"No collection named {value!r}")
    if args.pivot and scene.objects.get(args.pivot) is None:
        raise CliError(f"No pivot object named {args.pivot!r} in scene {scene.name!r}")
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
    if args.out_dir:
        s.output_dir = os.path.abspath(args.out_dir)
    if args.final_only:
        s.sequence = False
    try:
        if args.generate:
            bpy.context.view_layer.update()
            made = snow_ops.generate_snow(scene, objects, bpy.context.evaluated_depsgraph_get())
            print(f"envfx snow: made {len(made)} snow mesh(es), {len(made[0].data.vertices):,} vertices")
        if args.trails:
            changed, skipped = snow_ops.add_trails(scene, snow_ops.snow_objects(scene))
            for name, why in skipped.items():
                print(f"warning: skipped {name} ({why})")
            print(f"envfx snow: trails on {len(changed)} snow mesh(es)")
        if args.bake:
            snow_ops.bake_inputs(scene)
            result = progress.run(snow_ops.bake_job(scene), "Snow buffer bake")
            print(f"envfx snow: wrote {len(result.files)} image(s) and {result.metadata_path}")
    except (snow_ops.SnowInputError, core_snow.SnowError) as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:
        print(f"envfx snow: {exc}", file=sys.stderr)
        return 1
    if args.generate or args.trails or args.output:
        out = args.output or args.blend
        save_blend(out)
        print(f"envfx snow: saved {out}")
    return 0


# --- entry points -----------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="EnvFX headless commands")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_info(sub)
    _add_bend(sub)
    _add_snow(sub)
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
