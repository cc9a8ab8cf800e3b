"""`envfx lightmap`: bake the 2D light map of .blend files (Tile Rider's top-down lighting) into a folder."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import bpy

from .. import progress
from ..operators import lightmap as lightmap_ops
from . import batch
from .batch import CliError

# option -> (setting of scene.envfx.lightmap, lowest, highest); None: no limit on that side
NUMBERS = {"resolution": ("resolution", 1, 16384), "samples": ("penumbra_samples", 1, 256),
           "smoothing_levels": ("smoothing_levels", 1, 8), "occlusion_distance": ("occlusion_distance", 0.0, None),
           "occlusion_strength": ("occlusion_strength", 0.0, 1.0)}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "lightmap",
        help="Bake the 2D light map of .blend files (soft-shadowed top-down lighting on the ground)",
        description="For each .blend: bake the scene's 2D light map (its Light Map settings, changed by the options "
        "given) and write lightmap.exr, lightmap.png, lightmap.json and lightmap_distance.exr into --out (with "
        "several files: --out/<file name>/). The arguments are checked before any file is opened; a file whose "
        "scene does not fit them is named and left unchanged, the others are done, and the exit code is 2. "
        "Without --save no .blend is changed.",
    )
    p.add_argument("blend", nargs="+", help=".blend file(s) to open")
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument("--scene", help="the scene to bake (default: the file's current scene)")
    p.add_argument("--ground", help="the ground object: the map covers its bounds seen from above (default: the "
                   "scene's Ground setting)")
    p.add_argument("--obstacles", help="collection of walls and props casting shadows (default: the scene's)")
    p.add_argument("--lights", help="collection of the lights (default: the scene's; none set: every light)")
    p.add_argument("--resolution", type=int, help="texels along the longest side, 1-16384 (default: the scene's)")
    p.add_argument("--samples", type=int, help="penumbra samples per light, 1-256 (default: the scene's)")
    p.add_argument("--falloff", choices=("PHYSICAL", "SMOOTH"),
                   help="PHYSICAL: inverse square as Cycles computes it; SMOOTH: the write-up's gradient circle "
                   "(default: the scene's)")
    p.add_argument("--smoothing", choices=("NONE", "MIPS", "BLUR"), help="smoothing (default: the scene's)")
    p.add_argument("--smoothing-levels", type=int, help="1-8 downsampled copies or blur steps (default: the scene's)")
    p.add_argument("--occlusion-distance", type=float, help="metres from walls the occlusion shadow reaches, 0 = none "
                   "(default: the scene's)")
    p.add_argument("--occlusion-strength", type=float, help="0-1 (default: the scene's)")
    p.add_argument("--light-circles", action="store_true", default=None,
                   help="also write lightmap_circles.exr, the pre-rendered light circles a game's cheap dirty lens "
                   "reads (default: the scene's setting)")
    p.add_argument("--vertex-colours", action="store_true", default=None,
                   help="also merge the light into the obstacles' vertex colours (saved only with --save)")
    p.add_argument("--save", action="store_true",
                   help="save each .blend with the map shown on its ground (default: the files are not changed)")
    p.set_defaults(func=run)


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The scene settings the options change, by setting name (names of objects and collections as strings)."""
    out = {}
    for option, (setting, lo, hi) in NUMBERS.items():
        value = getattr(args, option)
        if value is None:
            continue
        flag = "--" + option.replace("_", "-")
        if isinstance(value, float) and not math.isfinite(value):
            raise CliError(f"{flag} {value}: use a finite number")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            limits = f"{lo} to {hi}" if hi is not None else f"{lo} or more"
            raise CliError(f"{flag} {value}: use {limits}")
        out[setting] = value
    for option in ("ground", "obstacles", "lights", "falloff", "smoothing", "light_circles", "vertex_colours"):
        if getattr(args, option) is not None:
            out[option] = getattr(args, option)
    if args.save:
        out["apply_to_ground"] = True
    return out


def run(args: argparse.Namespace) -> int:
    batch.check_names(args, "scene", "ground", "obstacles", "lights")
    changes = overrides(args)
    folders = batch.output_folders(args.blend, args.out)
    return batch.run_files("lightmap", args.blend, lambda path: _lightmap_file(args, path, folders[path], changes),
                           changes=args.save)


def _lightmap_file(args, path: str, out: str, changes: dict) -> int:
    batch.open_blend(path, quiet=True)
    scene = batch.named(bpy.data.scenes, args.scene, "scene", " (--scene)") if args.scene else batch.current_scene()
    try:
        job = lightmap_ops.bake_lightmap_job(scene, (), dict(changes, output_dir=out))
        with batch.sigterm_cancels() as cancelled:
            result = progress.run(job, "Light map", should_cancel=cancelled)
    except lightmap_ops.LightmapInputError as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:
        print(f"envfx lightmap: {path}: {exc}", file=sys.stderr)
        return 1
    for warning in result.warnings:
        print(f"envfx lightmap: {path}: warning: {warning}")
    w, h = result.resolution
    print(f"envfx lightmap: {path}: wrote {len(result.files)} file(s) into {out} ({w}x{h} texels, "
          f"{len(result.lights)} light(s), {result.seconds:.1f} s)")
    if result.removed or result.stale_removed:
        print(f"envfx lightmap: {path}: {lightmap_ops.removed_text(result)}")
    if args.save:
        batch.save_blend(path)
    return 0
