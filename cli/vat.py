"""`envfx vat`: bake animated meshes of .blend files into vertex animation textures, a JSON file and a proxy mesh."""

from __future__ import annotations

import argparse
import re
import sys

from .. import progress
from ..operators import vat as vat_ops
from . import batch
from .batch import CliError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "vat",
        help="Bake animated meshes into vertex animation textures (positions, normals), a JSON file and a proxy "
        "mesh for game engines",
        description="For each .blend: evaluate the named objects over a frame range and write their vertex "
        "animation textures, <object>_vat.json and the proxy mesh (glTF for Godot, FBX for Unity and Unreal) into "
        "--out (with several files: --out/<file name>/). The arguments are checked before any file is opened; a "
        "file whose scene does not fit them is named and left unchanged, the others are done, and the exit code is "
        "2. Without --save no .blend is changed.",
    )
    p.add_argument("blend", nargs="+", help=".blend file(s) to open")
    p.add_argument("--objects", required=True, help="comma-separated names of the animated meshes to bake")
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument("--frames", metavar="A:B", help="first and last frame (default: the scene's frame range)")
    p.add_argument("--step", type=int, default=1, help="bake every Nth frame")
    p.add_argument("--loop", type=int, default=0, metavar="N",
                   help="a looping animation of N frames: bakes frames A to A+N-1, so it plays seamlessly "
                        "(0: no loop); with --frames A:B, B must be A+N-1")
    p.add_argument("--encoding", default="exr32", choices=("exr16", "exr32", "png16"),
                   help="float EXR (half or full) or 16-bit PNG with a stored remap range")
    p.add_argument("--engine", default="blender", choices=("blender", "godot", "unity", "unreal"),
                   help="the axes, handedness and units of the textures, the JSON and the proxy mesh")
    p.add_argument("--normals", default="texture", choices=("texture", "packed", "none"),
                   help="normals in their own texture, packed into the position texture's alpha, or none")
    p.add_argument("--attributes", help="comma-separated extra point attributes to bake "
                   "(e.g. EnvFX_Wind; default: none)")
    p.add_argument("--save", action="store_true", help="save each .blend with the proxies added")
    p.set_defaults(func=run)


def frame_range(text: str | None) -> tuple | None:
    if text is None:
        return None
    m = re.fullmatch(r"\s*(-?\d+)\s*:\s*(-?\d+)\s*", text)
    if m is None:
        raise CliError(f"--frames {text!r}: give the first and last frame as A:B, like 1:120")
    first, last = int(m.group(1)), int(m.group(2))
    if last <= first:
        raise CliError(f"--frames {text}: the last frame must come after the first (a VAT needs two frames or more)")
    return first, last


def run(args: argparse.Namespace) -> int:
    batch.check_names(args, "objects")
    names = [n.strip() for n in args.objects.split(",") if n.strip()]
    if not names:
        raise CliError("--objects is empty: name the animated meshes to bake, separated by commas")
    frames = frame_range(args.frames)
    if args.step < 1:
        raise CliError(f"--step {args.step}: use 1 or more")
    if args.loop < 0:
        raise CliError(f"--loop {args.loop}: use the loop's length in frames, or 0 for no loop")
    if args.loop and frames and frames[1] != frames[0] + args.loop - 1:
        raise CliError(f"--frames {args.frames} with --loop {args.loop}: a loop of {args.loop} frames bakes frames "
                       f"{frames[0]} to {frames[0] + args.loop - 1}, so the last frame would be ignored: give --frames "
                       f"{frames[0]}:{frames[0] + args.loop - 1}, or the loop's length")
    attributes = tuple(a.strip() for a in (args.attributes or "").split(",") if a.strip())
    folders = batch.output_folders(args.blend, args.out)
    return batch.run_files("vat", args.blend,
                           lambda path: _vat_file(args, path, folders[path], names, frames, attributes),
                           changes=args.save)


def _vat_file(args, path: str, out: str, names: list, frames, attributes) -> int:
    batch.open_blend(path, quiet=True)
    scene = batch.current_scene()
    missing = [n for n in names if scene.collection.all_objects.get(n) is None]
    if missing:
        raise CliError(f"scene {scene.name!r} has no object {', '.join(map(repr, missing))}: check --objects "
                       f"(names are case-sensitive)")
    first, last = frames if frames else (scene.frame_start, scene.frame_end)
    opts = vat_ops.VatOptions(frame_start=first, frame_end=last, step=args.step, loop_frames=args.loop,
                              encoding=args.encoding.upper(), engine=args.engine.upper(),
                              normals=args.normals.upper(), attributes=attributes)
    try:
        job = vat_ops.bake_vat_job(scene, [scene.objects[n] for n in names], out, opts)
        with batch.sigterm_cancels() as cancelled:
            result = progress.run(job, "VAT", should_cancel=cancelled)
    except vat_ops.VatInputError as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:
        print(f"envfx vat: {path}: {exc}", file=sys.stderr)
        return 1
    for warning in result.warnings:
        print(f"envfx vat: {path}: warning: {warning}")
    for name, why in result.skipped.items():
        print(f"envfx vat: {path}: skipped {name}: {why}")
    print(f"envfx vat: {path}: wrote {len(result.files)} file(s) into {out} for {', '.join(result.meta) or 'nothing'}")
    if args.save:
        batch.save_blend(path)
    return 0
