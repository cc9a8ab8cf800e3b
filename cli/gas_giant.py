"""`envfx gas-giant`: bake a gas giant texture into a folder, and with --save add a planet wearing it to a .blend."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

import bpy

from .. import progress
from ..core import gasgiant as core_gasgiant
from ..operators import gasgiant as gasgiant_ops
from . import batch
from .batch import CliError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p.add_argument("--preset", choices=[k.lower() for k in core_gasgiant.PRESETS],
                   help="look preset: sets the look options it names (options given explicitly win; default: none)")
    p.add_argument("--palette", help="palette image (RGB/RGBA); default: a latitude colour ramp")
    for option in core_gasgiant.cli_options():  # every setting's option, from the one settings table
        p.add_argument(option.flag, **option.kwargs)
    p.add_argument("--cubemap-palette", metavar="DIR",
                   help="colour the particles from the cube faces of an earlier bake in DIR: gasgiant_{px,...,nz}.png, "
                   "or gasgiant_{posx,...,negz}.png of a gltf/unity bake (its gasgiant.json says which; default: none)")
    caps = core_gasgiant.PREVIEW_CAPS
    p.add_argument("--preview", action="store_true",
                   help=f"a quick look in seconds: the bake with at most {caps['particles']:,} particles, "
                   f"{caps['iterations']} iterations, a {caps['field_size']} velocity field, {caps['cubemap_size']} "
                   f"cube faces, a {caps['equirect_width']} equirectangular image and {caps['frames']} frame (coarser "
                   f"and less swirled than the full bake)")
    p.add_argument("--random", action="store_true",
                   help="random bands, band speed, velocity factor, noise scale, W offset from the seed, with "
                   "vertical bands (options given explicitly win)")
    p.add_argument("--save", metavar="FILE.blend",
                   help="also add a planet wearing the texture to this .blend and save it: an existing file is "
                   "opened and keeps everything it has (a planet of the same name is updated); a new path gets "
                   "Blender's startup scene with the planet (default: none, only the texture files)")
    p.add_argument("--planet", help="name of the planet object (with --save; default \"Gas Giant\")")
    p.add_argument("--part", metavar="FIRST-LAST",
                   help="bake only frames FIRST to LAST of the --frames sequence (a farm task's share): a part after "
                   "the first starts from the state the part before saved in --state-dir, a part before the last "
                   "saves its own there; the parts write the files of one bake of every frame (gasgiant.json and "
                   "--save: the last part) (default: every frame)")
    p.add_argument("--state-dir", metavar="DIR", help="the folder of the simulation states between parts (with "
                   "--part; default: none)")
    p.set_defaults(func=run)


PLANET_NAME = "Gas Giant"  # the planet --save adds when --planet is not given


def gasgiant_params(args: argparse.Namespace) -> core_gasgiant.GasGiantParams:
    """The core parameters from the command line (raises CliError for bad input)."""
    if args.planet is not None and args.save is None:
        raise CliError("--planet names the planet that --save adds to a .blend, and --save is not given: add --save "
                       "FILE.blend, or drop --planet")
    # every path as an absolute one before anything is read or opened; // is the folder of the --save .blend
    if args.save is not None:
        args.save = batch.cli_path(args.save, "--save")
    for name in ("out", "save_field", "load_field", "palette", "cubemap_palette", "state_dir"):
        if getattr(args, name) is not None:
            setattr(args, name, batch.cli_path(getattr(args, name), "--" + name.replace("_", "-"), blend=args.save,
                                               no_blend="pass --save FILE.blend (// is then its folder), or "))
    params = core_gasgiant.preset(args.preset) if args.preset else core_gasgiant.GasGiantParams()
    if args.random:
        params = replace(params, **core_gasgiant.random_look(args.seed if args.seed is not None else params.seed))
    changes = core_gasgiant.cli_changes(args)
    if args.cubemap_palette:
        try:
            changes["palette_cube"] = gasgiant_ops.load_palette_cube(args.cubemap_palette)
        except gasgiant_ops.GasGiantInputError as exc:
            raise CliError(str(exc)) from None
    if args.palette:
        try:
            changes["palette"] = gasgiant_ops.load_palette(args.palette)
        except gasgiant_ops.GasGiantInputError as exc:
            raise CliError(str(exc)) from None
    params = replace(params, **changes)
    if args.preview:
        params = core_gasgiant.preview(params)
    try:
        params.validate(core_gasgiant.available_memory())
        core_gasgiant.check_output_folder(args.out)
        args.part = core_gasgiant.check_part(params, parse_part(args.part), args.state_dir)
    except core_gasgiant.GasGiantError as exc:
        flag = core_gasgiant.cli_flag(exc.field)
        if flag and exc.advice:  # a bad number: name the option it came from
            raise CliError(f"{flag} {exc.value}: {exc.advice}") from None
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


def parse_part(text: str | None) -> tuple | None:
    """(first, last) of ``--part FIRST-LAST`` (or one frame N); CliError if it is not that."""
    if text is None:
        return None
    first, dash, last = text.partition("-")
    try:
        return int(first), int(last if dash else first)
    except ValueError:
        raise CliError(f"--part {text!r}: give the frames to bake as FIRST-LAST (e.g. 7-12), or one frame") from None


def estimate_text(params: core_gasgiant.GasGiantParams) -> str:
    """The bake's size and estimated time, printed before it starts."""
    seconds = core_gasgiant.estimate_seconds(params)
    when = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
    rate = core_gasgiant.STEPS_PER_SECOND_PER_THREAD * min(params.threads, os.cpu_count() or 1) / 1e6
    return (f"{params.particles:,} particles x {params.iterations} iterations x {params.frames} frame(s): "
            f"{core_gasgiant.particle_steps(params) / 1e9:.3g} billion particle-steps, about {when} (an estimate at "
            f"{rate:.0f}M particle-steps/s, as measured on 2 threads; a busy machine is slower; --preview gives a "
            f"look in seconds)")


def run(args: argparse.Namespace) -> int:
    params = gasgiant_params(args)
    try:
        fields = core_gasgiant.check_field_files(params)  # read once, handed to the bake
    except core_gasgiant.GasGiantError as exc:
        raise CliError(str(exc)) from None
    if args.preview:
        print(f"envfx gas-giant: {core_gasgiant.preview_text(params)}")
    print(f"envfx gas-giant: {estimate_text(params)}")
    first, last = args.part
    if args.save and os.path.isfile(args.save) and last == params.frames:
        batch.open_blend(args.save)  # the planet joins the file's current scene: nothing of the file is lost
    try:
        with batch.sigterm_cancels() as cancelled:
            job = core_gasgiant.bake(params, args.out, fields=fields, part=(first, last), state_dir=args.state_dir)
            result = progress.run(job, "Gas giant bake", should_cancel=cancelled)
    except progress.Cancelled as exc:
        print(f"envfx gas-giant: {exc}", file=sys.stderr)
        return 1
    steps = core_gasgiant.particle_steps(params)
    last_part = last == params.frames
    if (first, last) == (1, params.frames):
        print(f"envfx gas-giant: wrote {len(result.files)} image(s) and gasgiant.json to {result.folder} in "
              f"{result.seconds:.1f} s ({steps / max(result.seconds, 1e-9) / 1e6:.1f}M particle-steps/s overall)")
    else:
        what = "and gasgiant.json " if last_part else ""
        then = "" if last_part else f"; the state of frame {last} to {args.state_dir}"
        print(f"envfx gas-giant: wrote {len(result.files)} image(s) of frames {first}-{last} of {params.frames} "
              f"{what}to {result.folder}{then} in {result.seconds:.1f} s")
    if result.removed_note():
        print(f"envfx gas-giant: {result.removed_note()}")
    if args.save and not last_part:
        print(f"envfx gas-giant: the planet of --save is made by the part with the last frame ({params.frames})")
    elif args.save:
        scene = batch.current_scene()
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
        batch.save_blend(args.save)
        print(f"envfx gas-giant: {'updated' if updated else 'added'} planet {args.planet!r}; saved {args.save}")
    return 0
