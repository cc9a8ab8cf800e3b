"""`blender -c envfx ...` sub-commands for headless batch work, one module per command (info, bend, wind, snow,
gas_giant, mips, lightmap, vat, farm) and the batch rules they share (batch).

``main(argv)`` is the entry point (the registered command calls it); it returns a process exit code:
0 done, 1 the work failed, 2 bad arguments or input.
"""

from __future__ import annotations

import argparse
import sys

from . import batch, bend, farm, gas_giant, info, lightmap, mips, snow, vat, wind
from .batch import CliError

PROG = "blender -c envfx"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="EnvFX headless commands")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (info, bend, wind, snow, gas_giant, mips, lightmap, vat, farm):  # in the order `--help` lists them
        command.add_parser(sub)
    for command_parser in sub.choices.values():
        command_parser.formatter_class = batch.DefaultsHelpFormatter
    # farm checks the other commands' arguments with their parsers, and its tasks run them (as main does)
    sub.choices["farm"].set_defaults(build_parser=build_parser, subcommand_parser=subcommand_parser, cli_main=main)
    return parser


def subcommand_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of one sub-command (``bend``, ``gas-giant``...) of ``build_parser()``."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(list(argv))
        if extra:  # told by the sub-command, with its usage (the top-level usage does not show its options)
            command = getattr(args, "command", None)
            sub = subcommand_parser(parser, command) if command else parser
            blends = [e for e in extra if e.lower().endswith(".blend") and not e.startswith("-")]
            if command == "snow" and blends:
                sub.error(f"snow takes one .blend file ({', '.join(blends)} given besides {args.blend}): run it once "
                          f"per file, e.g. for f in levels/*.blend; do {PROG} snow \"$f\" ...; done")
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help or an argparse error (already printed)
        return int(exc.code or 0)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        batch.check_text_options(subcommand_parser(parser, args.command), args)
        return int(args.func(args))
    except CliError as exc:
        print(f"envfx {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM during a bake, outside the bake itself
        print(f"envfx {args.command}: cancelled", file=sys.stderr)
        return 1


def cli_command(argv: list[str]) -> int:
    """Handler registered with bpy.utils.register_cli_command."""
    return main(argv)
