"""`envfx snow`: generate snow cover, add live trails and bake the interaction buffer in one .blend."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from typing import cast

import bpy

from .. import bridge, progress
from ..core import outputs
from ..core import snow as core_snow
from ..operators import snow as snow_ops
from . import batch
from .batch import CliError


F = " (default: as the file has it)"  # what an option left out keeps: the file's setting


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p.add_argument("--objects", help="comma-separated terrain object names (needed by --generate: no default)")
    p.add_argument("--spacing", type=float, help=f"snow vertex spacing (scene units){F}")
    p.add_argument("--thickness", type=float, help=f"snow thickness (scene units){F}")
    p.add_argument("--max-slope", type=float, help=f"max slope in degrees{F}")
    p.add_argument("--lods", type=int, help=f"levels of detail (1-8){F}")
    p.add_argument("--budget", type=int, help=f"vertex budget{F}")
    p.add_argument("--trails", action="store_true", help="add live trails to every snow mesh of the scene")
    p.add_argument("--actors", help=f"name of the actor collection{F}")
    p.add_argument("--occluders", help=f"name of the occluder collection{F}")
    p.add_argument("--bake", action="store_true",
                   help="bake the interaction buffer into --out-dir (its size is estimated first and a bake that "
                   "does not fit on the disk is refused; SIGTERM or Ctrl-C cancels it and removes its temporary "
                   "files, exit 1)")
    p.add_argument("--out-dir", help=f"folder for the EXR images and JSON (for --bake){F}")
    p.add_argument("--resolution", type=int, help=f"buffer resolution in texels{F}")
    p.add_argument("--size", type=float, help=f"world size of the follow window{F}")
    p.add_argument("--frames", help="frame range START:END (default: the scene's frame range)")
    p.add_argument("--framing", choices=("AREA", "FOLLOW"),
                   help=f"the buffer's window: the snow's area, or one that follows --pivot{F}")
    p.add_argument("--pivot", help=f"object the FOLLOW window follows{F}")
    p.add_argument("--final-only", action="store_true", help="write only the final frame's image")
    p.add_argument("--part", metavar="FIRST-LAST",
                   help="write only the images of frames FIRST to LAST of the bake (a farm task's share: "
                   "blender -c envfx farm snow ... --chunk N): the buffer is still stepped from the bake's first "
                   "frame, so the parts write the files of one bake of every frame, in any order or at once; the "
                   "part with the last frame writes snow_buffer.json (default: every frame)")
    p.add_argument("--export-engines", metavar="DIR",
                   help="write the snow's displacement from the buffer as shader code for Godot, Unity and Unreal "
                   "and envfx_snow.json into DIR (after --bake when given: that bake's window; else the scene's "
                   "bake in its output folder, or its follow window; default: no engine files)")
    p.set_defaults(func=run)
    # a frame range that starts below 0 (--frames -3:-1, --part -3--1) is a value, not an unknown option (argparse
    # takes only plain negative numbers for values)
    p._negative_number_matcher = re.compile(r"^-\d+$|^-\d*\.\d+$|^-\d+:-?\d+$|^-\d+--?\d+$")


# options used only by one part of `envfx snow`: given without that part they would be ignored, so they are refused
SNOW_GENERATE_ONLY = ("objects", "spacing", "max_slope", "lods", "budget")
SNOW_BAKE_ONLY = ("out_dir", "resolution", "size", "frames", "framing", "pivot", "final_only", "part")
# what a part of the bake (--part) leaves to a run of its own: the parts share the file and do not save it
SNOW_NOT_WITH_PART = ("generate", "trails", "output", "final_only", "export_engines")
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
    # (the stubs type RNA properties by their base class: cast to the kinds these are)
    envfx = cast(bpy.types.PointerProperty, bpy.types.Scene.bl_rna.properties["envfx"]).fixed_type
    assert envfx is not None  # a pointer to the PropertyGroup props.register() made
    snow = cast(bpy.types.PointerProperty, envfx.properties["snow"]).fixed_type
    assert snow is not None
    rna = cast("bpy.types.FloatProperty | bpy.types.IntProperty", snow.properties[prop])
    return rna.hard_min, rna.hard_max


def _snow_frame_limits() -> tuple:
    """Blender's frame range (scene.frame_set clamps to it): a bake steps through every frame."""
    rna = cast(bpy.types.IntProperty, bpy.types.Scene.bl_rna.properties["frame_current"])
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


def run(args: argparse.Namespace) -> int:
    batch.check_names(args, "objects", "actors", "occluders", "pivot")
    if not (args.generate or args.trails or args.bake or args.export_engines is not None):
        raise CliError("Nothing to do: pass --generate, --trails, --bake and/or --export-engines")
    if args.export_engines is not None and not args.export_engines.strip():
        raise CliError("--export-engines is empty: give the folder the engine files are written to")
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
    frames = parse_frames(args.frames) if args.frames else None
    part = parse_part(args.part) if args.part is not None else None
    if part is not None and _snow_options(args, SNOW_NOT_WITH_PART):
        raise CliError(f"{_snow_options(args, SNOW_NOT_WITH_PART)} with --part: a part bakes its share of the "
                       f"buffer's frames and leaves the file as it is ({part_reason()}): run "
                       f"{_snow_options(args, SNOW_NOT_WITH_PART)} without --part, or drop it")
    saves = bool(args.generate or args.trails or args.output)
    args.output = batch.check_blends([args.blend], args.output)
    return batch.run_files("snow", [args.blend], lambda path: _snow_file(args, path, frames, saves, part))


def parse_frames(text: str) -> tuple:
    """(start, end) of ``--frames START:END``; CliError when it is not that, reversed, or beyond Blender's frames."""
    try:
        start, end = (int(x) for x in text.split(":"))
    except ValueError:
        raise CliError(f"--frames {text!r}: use START:END, e.g. 1:250 or -3:-1") from None
    if end < start:
        raise CliError(f"--frames {text}: the range is reversed, use START <= END")
    lo, hi = _snow_frame_limits()
    if not (lo <= start and end <= hi):
        raise CliError(f"--frames {text}: Blender's frames run from {lo} to {hi}: use a range within them")
    return start, end


def parse_part(text: str) -> tuple:
    """(first, last) of ``--part FIRST-LAST`` (or one frame N; negative frames as -5--3); CliError if not that."""
    m = re.fullmatch(r"\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?", text)
    if m is None:
        raise CliError(f"--part {text!r}: give the frames to bake as FIRST-LAST (e.g. 17-32), or one frame")
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) is not None else first
    if last < first:
        raise CliError(f"--part {text}: the range is reversed, use FIRST <= LAST")
    return first, last


def part_reason() -> str:
    """Why a part of a snow bake does only the bake (the farm's message says it too)."""
    return ("the parts share one .blend file and none saves it; --final-only writes only the last frame, which the "
            "last part would bake alone; the engine files follow the whole bake")


def _snow_file(args, path: str, frames, saves: bool, part=None) -> int:
    batch.check_blend(path)
    if saves and not args.output:
        batch.check_writable_in_place(path)
    batch.open_blend(path)
    scene = batch.current_scene()
    s = bridge.envfx_settings(scene).snow
    objects = batch.resolve_objects(scene, args.objects) if args.objects is not None else []
    for name in ("actors", "occluders"):
        value = getattr(args, name)
        if value is not None:
            batch.named(bpy.data.collections, value, "collection", f" for --{name}")
    batch.check_pivot(scene, args.pivot)
    if args.framing is None and s.framing != "FOLLOW" and _snow_options(args, SNOW_FOLLOW_ONLY):
        raise CliError(_snow_only(_snow_options(args, SNOW_FOLLOW_ONLY), f"a FOLLOW window, and the scene's buffer "
                                  f"framing is {s.framing} (it covers every snow mesh)", "add --framing FOLLOW"))
    # all arguments checked: now change the settings
    before = _snow_settings(s)
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
        if args.bake and (args.generate or args.trails or part is not None):
            # the bake's own checks (folder, disk space, pivot, actors, the part's frames) before the cover
            snow_ops.bake_inputs(scene, part)
        if args.generate:
            batch.current_view_layer().update()
            old = [o.name for o in snow_ops.covers_of(scene, objects)]
            made = snow_ops.generate_snow(scene, objects, bpy.context.evaluated_depsgraph_get(), s.density_mask,
                                          s.density_texture, replace=True)  # the file's density mask, as the panel
            what = f"regenerated the snow cover {', '.join(old)} in place as" if old else "made"
            print(f"envfx snow: {path}: {what} {len(made)} snow mesh(es), {len(made[0].data.vertices):,} vertices")
            for warning in made.warnings:
                print(f"envfx snow: {path}: warning: {warning}")
        changed = []
        if args.trails:
            changed, skipped = snow_ops.add_trails(scene, snow_ops.snow_objects(scene))
            for name, why in skipped.items():
                print(f"envfx snow: {path}: warning: skipped {name} ({why})")
            print(f"envfx snow: {path}: trails on {len(changed)} snow mesh(es)")
        if args.bake:
            out_dir = snow_ops.bake_inputs(scene, part)[0]
            images, frame_count = snow_ops.bake_counts(scene, part)
            size = core_snow.bake_output_bytes(s.buffer_resolution, images, frame_count)
            what = f" (frames {part[0]}-{part[1]} of {s.frame_start}-{s.frame_end})" if part is not None else ""
            print(f"envfx snow: {path}: baking {images} image(s){what} of {s.buffer_resolution}x"
                  f"{s.buffer_resolution} into {out_dir} (up to {outputs.size_text(size)})")
            with batch.sigterm_cancels() as cancelled:
                result = progress.run(snow_ops.bake_job(scene, part), "Snow buffer bake", should_cancel=cancelled)
            for name in result.stale_removed:
                print(f"envfx snow: {path}: removed {name}, the temporary folder of an earlier bake that was killed")
            json_text = result.metadata_path or f"no JSON (the part with frame {s.frame_end} writes it)"
            print(f"envfx snow: {path}: wrote {len(result.files)} image(s) and {json_text}")
            warning = snow_ops.range_warning(scene, s.frame_start, s.frame_end, s.sequence)
            if warning is not None:
                print(f"envfx snow: {path}: warning: {warning}")
        if args.export_engines is not None:
            folder = args.export_engines if args.export_engines.startswith("//") else \
                os.path.abspath(args.export_engines)
            written = snow_ops.engines.export_engines(scene, folder)
            print(f"envfx snow: {path}: wrote {len(written)} files for game engines into "
                  f"{os.path.dirname(written[0])}")
    except snow_ops.SnowInputError as exc:
        raise CliError(exc.cli or str(exc)) from None
    except core_snow.SnowError as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:
        print(f"envfx snow: {path}: {exc}", file=sys.stderr)
        return 1
    if saves and not (args.generate or changed or args.bake or args.output) and _snow_settings(s) == before:
        print(f"envfx snow: {path}: nothing changed, {path} not saved")  # (trails on every snow mesh already)
        return 0
    if saves:
        out = args.output or path
        if out != path and s.output_dir.startswith("//"):  # saved elsewhere: still the folder it names now
            s.output_dir = _relative_to(bpy.path.abspath(s.output_dir), out)
        batch.save_blend(out)
        print(f"envfx snow: {path}: saved {out}")
    return 0


def _snow_settings(settings) -> dict:
    """The values of the scene's snow settings (``scene.envfx.snow``), to tell whether a run changed them."""
    return {p.identifier: getattr(settings, p.identifier) for p in settings.bl_rna.properties
            if p.identifier != "rna_type" and p.type != "COLLECTION"}


def _relative_to(folder: str, blend: str) -> str:
    """``folder`` as a ``//`` path for the .blend file ``blend`` (absolute where none exists: another drive)."""
    try:
        return "//" + os.path.relpath(os.path.normpath(folder), os.path.dirname(os.path.abspath(blend)))
    except ValueError:
        return os.path.normpath(folder)
