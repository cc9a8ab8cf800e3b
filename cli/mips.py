"""`envfx mips`: alpha-coverage preserving mip chains for image files (no .blend)."""

from __future__ import annotations

import argparse
import sys

from .. import progress
from ..core import mips as core_mips
from ..operators import mips as mips_ops
from . import batch
from .batch import CliError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    p.add_argument("--dds", default="RGBA8", type=str.upper, choices=core_mips.DDS_COMPRESSIONS,
                   help="the DDS file's texels: RGBA8 (uncompressed), BC1 (DXT1: alpha 0 or 1, cut at --ref), BC3 "
                   "(DXT5: 8-bit alpha), BC4 (the --alpha-channel alone, a mask) or BC7 (finer colour and alpha); "
                   "the block-compressed ones need sizes that are multiples of 4 (default RGBA8)")
    p.add_argument("--alpha-channel", default="A", choices=("R", "G", "B", "A"),
                   help="channel holding the alpha-tested value (default A)")
    p.add_argument("--colour", default="AUTO", choices=("AUTO", "SRGB", "LINEAR"),
                   help="colour filtering: from the image's colour space, sRGB (linear light) or linear data")
    p.add_argument("--supersample", type=int, default=4, help="coverage sub-samples per texel and axis (1-8)")
    p.add_argument("--max-memory-gb", type=float, default=8.0, help="refuse images needing more memory than this")
    p.add_argument("--no-preserve", action="store_true", help="write a plain (naive) mip chain")
    p.add_argument("--no-compare", action="store_true", help="skip the comparison picture")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = core_mips.MipSettings(ref=args.ref, alpha_channel=args.alpha_channel,
                                     preserve=not args.no_preserve, supersample=args.supersample,
                                     max_memory_gb=args.max_memory_gb, dds=args.dds)
    out = batch.cli_path(args.out, "--out")  # (no .blend: a // folder is refused)
    for path in args.inputs:
        if path.startswith("//"):
            batch.cli_path(path, "INPUT")
    try:
        inputs = mips_ops.inputs_from_paths(args.inputs)
        job = mips_ops.bake_mips_job(inputs, out, settings, args.format,
                                     not args.no_compare, args.colour)
        with batch.sigterm_cancels() as cancelled:
            result = progress.run(job, "Mips", should_cancel=cancelled)
    except (mips_ops.MipsInputError, core_mips.MipsError) as exc:
        raise CliError(str(exc)) from None
    except progress.Cancelled as exc:
        print(f"envfx mips: {exc}", file=sys.stderr)
        return 1
    for warning in result.warnings:
        print(f"warning: {warning}")
    for stem, rep in result.reports.items():
        cov = " ".join(f"{lv['coverage_naive']:.3f}->{lv['coverage']:.3f}"
                       + (f" ({rep['dds_format']['compression']} {lv['coverage_dds']:.3f})" if "coverage_dds" in lv
                          else "") for lv in rep["per_level"])
        print(f"{stem}: {rep['width']}x{rep['height']}, {rep['levels']} levels, coverage {rep['target_coverage']:.3f}; "
              f"per level naive->kept: {cov}")
    print(f"envfx mips: wrote {len(result.files)} file(s) for {len(result.reports)} image(s) into {args.out}")
    if result.removed:
        print(f"envfx mips: {mips_ops.removed_text(result)}")
    return 0
