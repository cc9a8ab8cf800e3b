"""`envfx wind`: bake vegetation wind data in .blend files, and add or remove the live wind."""

from __future__ import annotations

import argparse
import math
import os
import sys

import bpy

from .. import bridge, progress
from ..core import wind as core_wind
from ..operators import bend as bend_ops
from ..operators import snow as snow_ops
from ..operators import wind as wind_ops
from ..operators import wind_engines as wind_engine_ops
from ..operators.common import ObjectsResult
from ..shader_nodes.snow import buffer as snow_buffer_nodes
from . import batch
from .batch import CliError


F = " (default: as the file has it)"  # what an option left out keeps: the file's setting


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    target.add_argument("--collection", help="bake every mesh of this collection as one asset (default: every mesh "
                        "of the scene as one asset)")
    target.add_argument("--objects", help="comma-separated object names forming one asset (default: every mesh of "
                        "the scene)")
    target.add_argument("--each", action="store_true", help="bake every mesh of the scene as its own asset")
    p.add_argument("--ao-samples", type=int,
                   help=f"ambient-occlusion ray directions per vertex, 0 (no AO) to {core_wind.MAX_AO_SAMPLES}{F}")
    p.add_argument("--leaf-size", type=float, help=f"leaf island size as a fraction of the asset height{F}")
    p.add_argument("--layout", choices=core_wind.LAYOUTS, help=f"export channel layout{F}")
    p.add_argument("--custom", help="four comma-separated channel sources for --layout CUSTOM "
                   f"({', '.join(core_wind.SOURCES)}){F}")
    p.add_argument("--height-uv", action=argparse.BooleanOptionalAction,
                   help="also write the height gradient into the UV map EnvFX_Height_UV (default: the scene's "
                   "setting, on)")
    p.add_argument("--preset", choices=tuple(core_wind.PRESETS),
                   help="per-asset wind preset to set (default: none, the assets keep theirs)")
    p.add_argument("--add", action="store_true", help="also put the baked objects in the live wind")
    p.add_argument("--remove", action="store_true", help="only remove the live wind (no bake)")
    p.add_argument("--rigid", action="store_true",
                   help="put the objects in the wind as rigid props instead (no bake): Rigid Sway on, each sways whole "
                   "by drivers on its delta rotation, any object type (default: every object of the scene that can)")
    p.add_argument("--gpu", action="store_true",
                   help="with --add: the baked objects move in their materials (Wind on GPU on: vertex displacement "
                   "drawn by Eevee and Cycles, no modifier; every object needs a material)")
    p.add_argument("--export-engines", metavar="DIR",
                   help="after the bake: write each asset's live wind as shader code for Godot, Unity and Unreal and "
                   "envfx_wind.json into DIR (with several files: DIR/<file name>/), and the UV maps the shaders "
                   "read onto the meshes (saved with the file); default: no engine files")
    p.add_argument("--push-grass", action=argparse.BooleanOptionalAction,
                   help="actors push the grass in wind (the scene's Grass Push): on, it reads --push-buffer, else the "
                   "baked buffer the file already has (or the Snow bake's Output Folder), else it pushes live from "
                   "the Snow actors' animation (no bake); --no-push-grass turns it off (default: as the file has it)")
    p.add_argument("--push-buffer", metavar="DIR",
                   help="with --push-grass: the folder of a baked interaction buffer (its snow_buffer.json; // is the "
                   ".blend file's folder) the grass reads (default: the file's)")
    p.add_argument("--push-strength", type=float,
                   help=f"lean of a full push-down per unit of blade height, 0 to {PUSH_MAX:g}{F}")
    p.add_argument("--push-sway", type=float,
                   help=f"lean of the wobble after a nudge per unit of blade height, 0 to {PUSH_MAX:g}{F}")
    p.set_defaults(func=run)


PUSH_MAX = 100.0  # the Push Strength and Push Sway settings' maximum (props/wind.py)
PUSH_OPTIONS = ("push_grass", "push_buffer", "push_strength", "push_sway")


def check_push(args: argparse.Namespace) -> None:
    """The push options, before any file is opened: a buffer only with --push-grass, numbers in range, a buffer
    folder (not starting with //: that one is checked per file) that holds a bake."""
    for name in ("push_strength", "push_sway"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and 0.0 <= value <= PUSH_MAX):
            raise CliError(f"--{name.replace('_', '-')} {value}: use a number from 0 to {PUSH_MAX:g}")
    if args.push_buffer is not None and not args.push_grass:
        raise CliError(f"--push-buffer is read by --push-grass: add --push-grass, or drop --push-buffer"
                       f"{' (--no-push-grass turns the push off)' if args.push_grass is False else ''}")
    if args.push_buffer is not None and not args.push_buffer.startswith("//"):
        push_folder(args.push_buffer)


def push_folder(path: str, blend: str | None = None) -> str:
    """The folder of the baked buffer ``--push-buffer`` names (the folder, or its snow_buffer.json), absolute;
    CliError when it holds no bake."""
    folder = batch.cli_path(path, "--push-buffer", blend=blend)
    if os.path.basename(folder) == "snow_buffer.json" and os.path.isfile(folder):
        folder = os.path.dirname(folder)
    if not os.path.isfile(os.path.join(folder, "snow_buffer.json")):
        raise CliError(f"--push-buffer {path!r} holds no baked interaction buffer (no snow_buffer.json in "
                       f"{folder!r}): give the folder a snow bake wrote (envfx snow --bake --out-dir, or the Snow "
                       f"panel's Bake Interaction Buffer)")
    return folder


def apply_push(args: argparse.Namespace, scene: bpy.types.Scene, path: str) -> str | None:
    """The push options on ``scene`` (the file ``path``); returns what was done, or None when none was given.
    Raises CliError (nothing on the scene changed) when push is asked for and there is neither a buffer to read
    nor snow actors to push live."""
    if all(getattr(args, name) is None for name in PUSH_OPTIONS):
        return None
    image = None
    if args.push_grass and args.push_buffer is not None:
        folder = push_folder(args.push_buffer, blend=path)
        try:
            image, meta = snow_ops.load_bake(scene, folder, ObjectsResult())
        except snow_ops.SnowInputError as exc:
            raise CliError(f"--push-buffer: {exc}") from None
        snow_buffer_nodes.ensure_buffer_group(image, meta)
    done = wind_ops.grass_push(scene, True, image) if args.push_grass else (
        wind_ops.grass_push(scene, False) if args.push_grass is False else None)
    s = bridge.envfx_settings(scene).wind
    numbers = []
    for name in ("push_strength", "push_sway"):
        value = getattr(args, name)
        if value is not None:
            setattr(s, name, value)
            numbers.append(f"{name.replace('_', ' ')} {value:g}")
    return "; ".join(([done] if done else []) + numbers)


def run(args: argparse.Namespace) -> int:
    args.output = batch.check_blends(args.blend, args.output)
    batch.check_names(args, "objects", "collection")
    if args.gpu and (args.remove or args.rigid or not args.add):
        raise CliError("--gpu puts the baked objects in the wind on the GPU: use it with --add (and without "
                       "--remove or --rigid)")
    if args.remove or args.rigid:
        given = {name: getattr(args, name) for name in ("add", "ao_samples", "leaf_size", "layout", "custom",
                                                       "height_uv")}
        given["add"] = given["add"] or None  # a store_true flag is False when not given
        given["export_engines"] = args.export_engines
        given.update({name: getattr(args, name) for name in PUSH_OPTIONS})
        if args.remove:
            given["preset"] = args.preset
            given["rigid"] = args.rigid or None
        else:
            given["each"] = args.each or None
        ignored = [(f"--no-{name.replace('_', '-')}" if value is False else f"--{name.replace('_', '-')}")
                   for name, value in given.items() if value is not None]  # (--ao-samples 0 is given too)
        if ignored and args.remove:
            raise CliError(f"--remove only removes the live wind (no bake): drop {', '.join(ignored)}, or run the "
                           f"bake without --remove")
        if ignored:
            raise CliError(f"--rigid puts objects in the wind as rigid props, with no bake: drop "
                           f"{', '.join(ignored)}, or run the bake without --rigid")
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
    check_push(args)
    if args.export_engines is not None and not args.export_engines.strip():
        raise CliError("--export-engines is empty: give the folder the engine files are written to")
    engines = {path: args.export_engines for path in args.blend}
    if args.export_engines and len(args.blend) > 1:
        for path in args.blend:
            engines[path] = os.path.join(args.export_engines, os.path.splitext(os.path.basename(path))[0])
    return batch.run_files("wind", args.blend, lambda path: _wind_file(args, path, custom, engines[path]))


def _wind_file(args, path: str, custom, export_engines=None):
    """``envfx wind`` on one file: every asset is checked before anything changes."""
    if not args.output:
        batch.check_writable_in_place(path)
    batch.open_blend(path)
    scene = batch.current_scene()
    if args.collection is not None:  # a collection of the scene (as the bend's): its objects join its wind
        try:
            assets = [bend_ops.gather_targets(batch.SceneContext(scene, []), args.collection)]
        except bend_ops.BendInputError as exc:
            raise CliError(str(exc)) from None
    elif args.objects is not None:
        assets = [batch.resolve_objects(scene, args.objects)]
    elif args.rigid:  # any object type sways whole; cameras and lights of the shot are not props
        assets = [[o for o in scene.objects if o.type not in ("CAMERA", "LIGHT", "LIGHT_PROBE", "SPEAKER")
                   and not (o.field is not None and o.field.type != "NONE")]]
        if not assets[0]:
            raise CliError(f"Scene {scene.name!r} has no objects to sway")
    else:
        meshes = [o for o in scene.objects if o.type == "MESH"]
        if not meshes:
            raise CliError(f"Scene {scene.name!r} has no mesh objects to bake")
        assets = [[o] for o in meshes] if args.each else [meshes]
    try:
        if args.rigid:
            objects = [o for a in assets for o in a]
            if args.preset:
                wind_ops.apply_preset(objects, args.preset)
            for obj in objects:
                bridge.envfx_settings(obj).wind.rigid = True
            result = wind_ops.add_wind(scene, objects)
            batch.print_warnings("wind", path, result)
            print(f"envfx wind: {path}: {len(result.changed)} object(s) sway whole (rigid), "
                  f"{len(result.unchanged)} already did")
        elif args.remove:
            result = wind_ops.remove_wind([o for a in assets for o in a])
            batch.print_warnings("wind", path, result)
            done = f"envfx wind: {path}: removed the wind from {len(result.changed)} object(s)"
            if not result.changed and not args.output:
                print(f"{done}; nothing changed, {path} not saved")
                return
            print(done)
        else:
            baked = []
            for asset in assets:  # validate every asset before changing anything
                wind_ops.validate(scene, asset, args.layout or bridge.envfx_settings(scene).wind.channel_layout, custom)
            pushed = apply_push(args, scene, path)  # (before the bake: a push without a buffer costs no bake)
            if pushed:
                print(f"envfx wind: {path}: {pushed}")
            for asset in assets:
                if args.preset:
                    wind_ops.apply_preset(asset, args.preset)
                batch.current_view_layer().update()
                job = wind_ops.bake_job(scene, asset, bpy.context.evaluated_depsgraph_get(),
                                        ao_samples=args.ao_samples, leaf_size=args.leaf_size,
                                        layout=args.layout, custom=custom, height_uv=args.height_uv)
                with batch.sigterm_cancels() as cancelled:
                    result = progress.run(job, "Wind bake", should_cancel=cancelled)
                batch.print_warnings("wind", path, result)
                st = result.stats
                print(f"envfx wind: {path}: baked {', '.join(result.changed)}: {st['vertices']} vertices, "
                      f"{st['branches']} branches, {st['leaves']} leaves, height {st['height']:.3g} m; B and G from "
                      f"{st.get('from', 'the geometry')}")
                if args.add:
                    added = [bpy.data.objects[n] for n in result.changed]
                    for obj in added if args.gpu else ():
                        bridge.envfx_settings(obj).wind.gpu = True
                    batch.print_warnings("wind", path, wind_ops.add_wind(scene, added))
                baked += result.changed
            if export_engines:  # every asset of the file at once: one envfx_wind.json
                folder = export_engines if export_engines.startswith("//") else os.path.abspath(export_engines)
                paths, _done = wind_engine_ops.export_engines(scene, [bpy.data.objects[n] for n in baked], folder)
                print(f"envfx wind: {path}: wrote {len(paths)} files for game engines into "
                      f"{os.path.dirname(paths[0])}")
    except (wind_ops.WindInputError, core_wind.WindError, wind_engine_ops.WindEngineError) as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:  # (the assets baked before it are not saved either: the file is as it was)
        print(f"envfx wind: {path}: {exc}; {path} not saved", file=sys.stderr)
        return 1
    out = args.output or path
    batch.save_blend(out)
    print(f"envfx wind: {path}: saved {out}")
