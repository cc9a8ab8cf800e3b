"""`envfx bend`: add, remove or bake the world bend in .blend files, or export it for game engines."""

from __future__ import annotations

import argparse
import math
import os

import bpy

from .. import bridge
from ..core import bend as core_bend
from ..operators import bend as bend_ops
from . import batch
from .batch import CliError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    target.add_argument("--collection", help="bend every object of this collection (default: every mesh of the scene "
                        "but the pivot)")
    target.add_argument("--objects", help="comma-separated object names to bend (default: every mesh of the scene "
                        "but the pivot)")
    kept = "(default: the scene's, as the file has it; a new scene's is {})"
    p.add_argument("--mode", choices=core_bend.MODES, help="shape of the bend " + kept.format("RUNNER"))
    p.add_argument("--axis", choices=core_bend.AXES, help="world axis the world bends along " + kept.format("POS_Y"))
    p.add_argument("--pivot", help="name of the pivot object (player or camera) " + kept.format("none: the origin"))
    for name, what, new in (("strength", "drop = strength * distance^2 beyond the flat zone", "0.01"),
                            ("spread", "half-width of the flat zone, metres", "2"),
                            ("side-strength", "strength across the forward axis (RUNNER_2AXIS)", "0.01"),
                            ("side-spread", "flat zone across the forward axis (RUNNER_2AXIS)", "2"),
                            ("horizon-offset", "moves the top of the bend ahead of the pivot, metres", "0")):
        p.add_argument(f"--{name}", type=float, help=f"{what} {kept.format(new)}")
    p.add_argument("--subdivide", action="store_true",
                   help="put a Simple subdivision before the bend of each mesh too coarse for it (the scene's "
                   "Subdivide Coarse Meshes; the meshes stay untouched); without it such meshes are only named")
    p.add_argument("--tolerance", type=float, metavar="M",
                   help="how far a straight edge may be from the bent curve before a mesh counts as too coarse "
                   f"(default: the scene's Tolerance, {core_bend.DEFAULT_TOLERANCE:g} m unless set)")
    p.add_argument("--gpu", action="store_true",
                   help="bend the objects on the GPU, in their materials (Bend on GPU: no modifier, no work per frame "
                   "on the CPU; drawn by Eevee and Cycles), instead of by the modifier (default: as each object has "
                   "it set)")
    action = p.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="bake the bend into the meshes")
    action.add_argument("--remove", action="store_true", help="remove the bend instead of adding it")
    action.add_argument("--export-engines", metavar="DIR",
                        help="only write the bend (with the settings given) as shader includes for Godot, Unity "
                        "and Unreal (each with a ready-to-use example material and pivot script) and envfx_bend.json "
                        "into DIR (with several files: DIR/<file name>/); no "
                        "object is changed and nothing is saved, so --output, --objects and --collection are refused "
                        "with it; a scene without meshes exports too (default: none, bend the objects)")
    p.add_argument("--view-distance", type=float, metavar="M",
                   help="with --export-engines: how far from the pivot the game draws (metres), for the culling "
                   "bounds written into envfx_bend.json (default: the scene's View Distance, 100 m unless set)")
    p.set_defaults(func=run)


BEND_NUMBERS = ("strength", "spread", "side_strength", "side_spread", "horizon_offset")


def run(args: argparse.Namespace) -> int:
    if args.export_engines is not None:
        ignored = [option for option, value in (("--output", args.output), ("--objects", args.objects),
                                                ("--collection", args.collection)) if value is not None]
        if ignored:
            raise CliError(f"--export-engines only writes the scene's bend for game engines (no object is changed "
                           f"and no .blend is saved): drop {', '.join(ignored)}, or run the bend without "
                           f"--export-engines")
    if args.gpu and (args.apply or args.remove or args.export_engines is not None):
        what = "--apply" if args.apply else ("--remove" if args.remove else "--export-engines")
        raise CliError(f"--gpu bends objects in their materials: drop it with {what} (Apply Bend bakes the "
                       f"modifier's bend; Remove Bend and the engine export need no choice)")
    if args.view_distance is not None:
        if args.export_engines is None:
            raise CliError("--view-distance is for the culling bounds of --export-engines: add --export-engines DIR "
                           "or drop --view-distance")
        if not math.isfinite(args.view_distance) or args.view_distance < 0:
            raise CliError(f"--view-distance {args.view_distance}: use a finite distance of 0 or more, in metres "
                           f"(how far from the player the game draws)")
    if args.tolerance is not None and not (math.isfinite(args.tolerance) and args.tolerance > 0):
        raise CliError(f"--tolerance {args.tolerance}: use a distance above 0 in metres, like 0.05")
    args.output = batch.check_blends(args.blend, args.output)
    batch.check_names(args, "objects", "collection", "pivot", "scene")
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
            folder = os.path.join(args.export_engines, os.path.splitext(os.path.basename(path))[0])
            engines[path] = folder
            by_folder.setdefault(folder.lower(), []).append(path)
        for paths in by_folder.values():
            if len(paths) > 1:
                raise CliError(f"{' and '.join(paths)} would write their engine files into the same folder "
                               f"{engines[paths[0]]}: run them separately, each with its own --export-engines folder")
    return batch.run_files("bend", args.blend, lambda path: _bend_file(args, path, engines[path]))


def _bend_settings(settings) -> tuple:
    return (settings.mode, settings.axis, settings.pivot, *(getattr(settings, a) for a in BEND_NUMBERS),
            settings.subdivide, settings.tolerance)


def _bend_file(args, path: str, export_engines):
    """``envfx bend`` on one file: the scene is checked against the arguments before anything changes."""
    if not export_engines and not args.output:
        batch.check_writable_in_place(path)
    batch.open_blend(path)
    scene = batch.current_scene()
    if args.scene is not None:
        scene = batch.named(bpy.data.scenes, args.scene, "scene")
    settings = bridge.envfx_settings(scene).bend
    batch.check_pivot(scene, args.pivot)
    if args.collection is not None:
        try:
            objects = bend_ops.gather_targets(batch.SceneContext(scene, []), args.collection)
        except bend_ops.BendInputError as exc:
            raise CliError(str(exc)) from None
    elif args.objects is not None:
        objects = batch.resolve_objects(scene, args.objects)
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
    if args.subdivide:
        settings.subdivide = True
    if args.tolerance is not None:
        settings.tolerance = args.tolerance

    if export_engines:
        try:
            paths = bend_ops.export_engines(scene, export_engines, view_distance=args.view_distance)
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
            if args.gpu:
                for obj in objects:
                    bridge.envfx_settings(obj).bend_gpu = True
            result = bend_ops.add_bend(scene, objects)
            verb = "bent on the GPU" if args.gpu else "bent"
    except (bend_ops.BendInputError, core_bend.BendError) as exc:
        raise CliError(str(exc)) from None
    batch.print_warnings("bend", path, result)
    done = f"envfx bend: {path}: {verb} {len(result.changed)} object(s), {len(result.unchanged)} unchanged"
    if baked:
        done += (f" (the bend was already baked into {', '.join(baked)}: to bend them again, add the bend "
                 f"without --apply, then run --apply)")
    if not result.changed and _bend_settings(settings) == before and not args.output:
        print(f"{done}; nothing changed, {path} not saved")
        return
    out = args.output or path
    batch.save_blend(out)
    print(f"{done}; saved {out}")
