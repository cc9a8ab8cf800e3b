"""`envfx wind`: bake vegetation wind data in .blend files, and add or remove the live wind."""

from __future__ import annotations

import argparse
import os
import sys

import bpy

from .. import bridge, progress
from ..core import wind as core_wind
from ..operators import bend as bend_ops
from ..operators import wind as wind_ops
from ..operators import wind_engines as wind_engine_ops
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
    p.add_argument("--export-engines", metavar="DIR",
                   help="after the bake: write each asset's live wind as shader code for Godot, Unity and Unreal and "
                   "envfx_wind.json into DIR (with several files: DIR/<file name>/), and the UV maps the shaders "
                   "read onto the meshes (saved with the file); default: no engine files")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    args.output = batch.check_blends(args.blend, args.output)
    batch.check_names(args, "objects", "collection")
    if args.remove:
        given = {name: getattr(args, name) for name in ("add", "preset", "ao_samples", "leaf_size", "layout",
                                                       "custom", "height_uv")}
        given["add"] = given["add"] or None  # a store_true flag is False when not given
        given["export_engines"] = args.export_engines
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
    else:
        meshes = [o for o in scene.objects if o.type == "MESH"]
        if not meshes:
            raise CliError(f"Scene {scene.name!r} has no mesh objects to bake")
        assets = [[o] for o in meshes] if args.each else [meshes]
    try:
        if args.remove:
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
                    wind_ops.add_wind(scene, [bpy.data.objects[n] for n in result.changed])
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
