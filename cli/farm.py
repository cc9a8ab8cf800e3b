"""`envfx farm`: write any batch command as an Open Job Description job (docs/farm.md), and run its tasks.

    blender -c envfx farm COMMAND ARGS... --out JOB_DIR [--chunk N] [--blender PATH]

writes ``JOB_DIR/template.yaml`` and ``JOB_DIR/parameters.json`` (``core.farm``). The job's tasks call back into
this module: ``farm task JOB.json N --path NAME=VALUE...`` runs the command on share N, ``farm gather JOB.json
--path ...`` writes the report.
"""

from __future__ import annotations

import argparse
import io
import os
import shlex
import signal
import sys
import traceback
from collections.abc import Callable

from ..core import farm as core_farm
from ..operators import mips as mips_ops
from . import batch
from . import snow as snow_cli
from .batch import CliError

FARM_OPTIONS = ("--out", "--chunk", "--blender")  # the farm's own options, after the command's arguments


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "farm",
        help="Write a batch command as an Open Job Description job (template + parameters) for a render farm",
        usage="blender -c envfx farm COMMAND ARGS... --out JOB_DIR [--chunk N] [--blender PATH]",
        description="Write JOB_DIR/template.yaml (OpenJD jobtemplate-2023-09) and JOB_DIR/parameters.json for "
        f"one of {', '.join(core_farm.COMMANDS)} with its arguments: one task per input file (--chunk N: per N "
        "files), each running `blender -b -c envfx COMMAND` on its share, and a Gather step that reports the "
        "whole job as the one-machine batch does. Every path is a job parameter of type PATH (absolute paths, "
        "or // for the .blend file's folder). Run it here with `openjd run JOB_DIR/template.yaml -p "
        "file://JOB_DIR/parameters.json`, or submit it to a farm. The farm's options come after the command's "
        "(a command's own --out comes before the job's).",
    )
    p.add_argument("rest", nargs=argparse.REMAINDER, metavar="COMMAND ARGS...",
                   help="the command and its arguments, then the farm's options")
    # (also taken before COMMAND; after it they are read from the end, each once: split_farm_options)
    p.add_argument("--out", metavar="JOB_DIR", help="the job's folder: template.yaml, parameters.json, the tasks' "
                   "summaries and the report (created if missing; required, no default)")
    p.add_argument("--chunk", metavar="N", help="input files per task (default: 1)")
    p.add_argument("--blender", metavar="PATH", help="the Blender the workers run: an absolute path or a program on "
                   "their PATH (default: blender)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rest = list(args.rest)
    if rest and rest[0] == "task":
        return run_task(rest[1:], args.cli_main)
    if rest and rest[0] == "gather":
        return run_gather(rest[1:])
    before = {f"--{name}": getattr(args, name) for name in ("out", "chunk", "blender") if getattr(args, name)}
    try:
        job = plan(rest, lambda command: args.subcommand_parser(args.build_parser(), command), before)
        paths = core_farm.write_job(job)
    except SystemExit as exc:  # a command's --help
        return int(exc.code or 0)
    except core_farm.FarmError as exc:
        raise CliError(str(exc)) from None
    files = sum(len(s) for s in job.shares)
    what = f"{files} file(s) in {len(job.shares)} task(s)" if files else "one task"
    if job.parts:
        how = "one after the other" if core_farm.COMMANDS[job.command].frame_parts == "chain" else \
            "each on its own (at once on several workers)"
        what = f"{core_farm.parts_text(job.parts)} in {len(job.parts)} parts, {how}"
    print(f"envfx farm: wrote {paths[0]} and {paths[1]}: {job.command} over {what}, then Gather")
    print(f"envfx farm: run it here: openjd run {shlex.quote(paths[0])} -p file://{shlex.quote(paths[1])}")
    return 0


def split_farm_options(tokens: list, taken: tuple = ()) -> tuple:
    """(command tokens, {option: value}): the farm's options are the last ones, each at most once (so a command's
    own --out stays the command's when the job's --out follows it); those in ``taken`` (given before the command)
    are the command's."""
    tokens = list(tokens)
    found = dict.fromkeys(taken)
    while tokens:
        last2 = tokens[-2] if len(tokens) > 1 else None
        tail = tokens[-1]
        name = tail.split("=", 1)[0] if tail.startswith("--") and "=" in tail else None
        if name in FARM_OPTIONS and name not in found:
            found[name] = tail.split("=", 1)[1]
            tokens.pop()
        elif last2 in FARM_OPTIONS and last2 not in found:
            found[last2] = tail
            del tokens[-2:]
        else:
            break
    return tokens, {k: v for k, v in found.items() if k not in taken}


def _classify(parser: argparse.ArgumentParser, tokens: list) -> tuple:
    """(positional tokens, the other arguments in order: plain tokens, and (option, value) for each option that
    takes one value) as argparse reads ``tokens``; an option's value is the token after it (or after ``=``)."""
    actions = {s: a for a in parser._actions for s in a.option_strings}
    positional, rest = [], []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            positional += tokens[i + 1:]
            break
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        action = actions.get(name)
        if action is None:
            positional.append(token)
        elif action.nargs == 0:
            rest.append(token)
        elif isinstance(action.nargs, int) and action.nargs > 1:  # (gas-giant --cloud-color R G B): no paths
            rest += tokens[i:i + 1 + action.nargs]
            i += action.nargs
        elif eq:
            rest.append((max(action.option_strings, key=len), value))
        else:
            rest.append((max(action.option_strings, key=len), tokens[i + 1] if i + 1 < len(tokens) else ""))
            i += 1
        i += 1
    return positional, rest


def plan(tokens: list, command_parser: Callable[[str], argparse.ArgumentParser],
         before: dict | None = None) -> core_farm.Job:
    """The job for ``blender -c envfx farm`` ``tokens``; CliError / FarmError for bad input (nothing written).
    ``command_parser(name)``: the argument parser of the command ``name``; ``before``: the farm's options given
    before the command."""
    before = before or {}
    tokens, options = split_farm_options(tokens, taken=tuple(before))
    options.update(before)
    if not tokens:
        raise CliError("give the command to run as a farm job and its arguments, then --out JOB_DIR, e.g. "
                       "farm mips /textures --out /jobs/mips-out --out /jobs/mips-job")
    command, command_tokens = tokens[0], tokens[1:]
    spec = core_farm.command_of(command)
    chunk_text = options.get("--chunk", "1")
    try:
        chunk = int(chunk_text)
    except ValueError:
        raise CliError(f"--chunk {chunk_text!r}: give the number of input files per task, 1 or more") from None
    if "--chunk" in options:
        core_farm.check_chunk(chunk, command)
    for option, value in options.items():
        if not value.strip():
            raise CliError(f"{option} is empty: give {'a number' if option == '--chunk' else 'a path'}")
    parser = command_parser(command)
    own_out = any("--out" in a.option_strings and a.required for a in parser._actions)
    if own_out and "--out" not in [a[0] for a in _classify(parser, command_tokens)[1] if isinstance(a, tuple)]:
        options.pop("--out", None)  # the one --out given is the command's own
    if "--out" not in options:
        both = f" ({command} has an --out of its own: give both, the job's last)" if own_out else ""
        raise CliError(f"--out JOB_DIR is missing: give the folder to write the job into, after the command's "
                       f"arguments{both}")
    try:  # the command's own argument checks, as the one-machine run makes them
        namespace = parser.parse_args(command_tokens)
    except SystemExit as exc:  # (argparse printed the error with the command's usage; --help its help)
        if not exc.code:
            raise
        raise CliError(f"the arguments of {command} are not valid (see above): fix them as for "
                       f"blender -c envfx {command}") from None
    batch.check_text_options(parser, namespace)
    positional, rest = _classify(parser, command_tokens)
    valued = [a for a in rest if isinstance(a, tuple)]
    inputs = [core_farm.absolute(p, "INPUT") for p in positional]
    base = None
    if spec.inputs == "blend":
        for path in inputs:
            batch.check_blend(path)
        if len(inputs) == 1:
            base = inputs[0]
        outputs = [v for o, v in valued if o == "--output"]
        if outputs and len(inputs) > 1:
            raise CliError("--output works with one input file; with several, each file is saved in place")
    if spec.inputs == "image":
        try:
            found = mips_ops.inputs_from_paths(inputs)
        except mips_ops.MipsInputError as exc:
            raise CliError(str(exc)) from None
        renamed = [i for i in found if i.stem != mips_ops._stem(os.path.basename(i.path))]
        if renamed:  # one batch names them apart (a, a_2); tasks of one image each would write the same files
            raise CliError(f"{', '.join(repr(i.path) for i in renamed)}: another input has the same name, and in a "
                           f"task of its own each would be written under that one name: rename them apart")
        inputs = [i.path for i in found]
    args = []
    saved = dict(valued).get("--save")
    if command == "gas-giant" and saved is not None:
        base = core_farm.absolute(saved, "--save")
    for arg in rest:
        if isinstance(arg, str):
            args.append(arg)
        elif arg[0] in spec.paths:
            args.append((arg[0], core_farm.absolute(arg[1], arg[0], base=base)))
        else:
            args += list(arg)
    if spec.per_file_out and len(inputs) > 1:  # several files: <folder>/<file name> each, and no two alike
        for option, path in [a for a in args if isinstance(a, tuple) and a[0] in spec.per_file_out]:
            batch.output_folders(inputs, path, option)
    frames = None  # a sequence split into parts of --chunk N frames (without --chunk: one task)
    if spec.frame_parts and "--chunk" in options and command == "snow":
        frames = snow_frames(namespace, chunk)
    elif spec.frame_parts and "--chunk" in options:
        frames = 1 if getattr(namespace, "preview", False) else int(getattr(namespace, "frames", None) or 1)
    return core_farm.plan_job(command, inputs, args, core_farm.absolute(options["--out"], "--out"), chunk=chunk,
                              blender=options.get("--blender", "blender"), frames=frames)


def snow_frames(namespace: argparse.Namespace, chunk: int) -> tuple:
    """(first, last) frames of a snow bake that ``--chunk`` splits into parts; CliError when the command is not a
    bake alone over a --frames range."""
    if not namespace.bake:
        raise CliError(f"--chunk {chunk} with snow splits the bake of the interaction buffer (--bake) into parts of "
                       f"{chunk} frames, and there is no --bake: add it, or drop --chunk (the cover and the trails "
                       f"run as one task)")
    alone = snow_cli._snow_options(namespace, snow_cli.SNOW_NOT_WITH_PART)
    if alone:
        raise CliError(f"--chunk {chunk}: {alone} cannot be split into parts of the bake ({snow_cli.part_reason()}): "
                       f"run {alone} in a job or run of its own (without --chunk), then the bake in parts")
    if not namespace.frames:
        raise CliError(f"--chunk {chunk} with snow splits the bake's frames into parts, which are planned before a "
                       f"worker opens the file: give the frames with --frames START:END (e.g. the scene's frame "
                       f"range, 1:250)")
    return snow_cli.parse_frames(namespace.frames)


# --- the job's tasks -----------------------------------------------------------------------------------------

class _Tee(io.TextIOBase):
    """Writes to ``stream`` and keeps a copy (the task's log shows the command's lines; its summary keeps them)."""

    def __init__(self, stream):
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, text):
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()

    def fileno(self):
        return self.stream.fileno()

    def lines(self) -> list:
        return [line for line in self.copy.getvalue().splitlines() if line.strip()]


def _task_args(tokens: list, name: str) -> tuple:
    """(job description, [numbers], {parameter: path}) from ``JOB.json [N] --path NAME=VALUE...``."""
    p = argparse.ArgumentParser(prog=f"blender -c envfx farm {name}")
    p.add_argument("job")
    if name == "task":
        p.add_argument("task", type=int)
    p.add_argument("--path", action="append", default=[], metavar="NAME=VALUE")
    args = p.parse_args(tokens)
    paths = {}
    for item in args.path:
        key, eq, value = item.partition("=")
        if not eq:
            raise CliError(f"--path {item!r}: give NAME=VALUE")
        paths[key] = value
    if "JobFolder" not in paths:
        raise CliError("--path JobFolder=... is missing: the job folder the summaries go to")
    try:
        desc = core_farm.read_description(args.job)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read the job description {args.job!r} ({exc})") from None
    return desc, getattr(args, "task", None), paths


def run_task(tokens: list, main: Callable[[list], int]) -> int:
    """One task: the command on each file of its share in turn (``main(argv)``: the command line's entry point),
    then the share's summary. SIGTERM or Ctrl-C (a farm cancelling the task) stops it after the file in progress
    (the command cancels a bake in progress)."""
    try:
        desc, task, paths = _task_args(tokens, "task")
        commands = core_farm.share_commands(desc, task, paths)
    except SystemExit as exc:
        return int(exc.code or 0)
    except core_farm.FarmError as exc:
        raise CliError(str(exc)) from None
    stop = []

    def note(signum, _frame):
        stop.append(signum)

    files, code = [], 0
    previous = {s: signal.signal(s, note) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for label, argv in commands:
            if stop:
                files.append({"label": label, "status": "not done", "code": 1, "errors": [], "output": []})
                continue
            print(f"envfx farm: task {task}: blender -c envfx {shlex.join(argv)}", flush=True)
            out, err = _Tee(sys.stdout), _Tee(sys.stderr)
            sys.stdout, sys.stderr = out, err
            try:
                result = main(argv)
            except Exception as exc:  # a bug, not bad input: the file fails (retryable), the others still run
                traceback.print_exc()
                print(f"envfx {argv[0]}: {label}: error: {type(exc).__name__}: {exc} (an EnvFX bug: please report "
                      f"it with the lines above)", file=sys.stderr)
                result = 1
            finally:
                sys.stdout, sys.stderr = out.stream, err.stream
            errors = [line for line in err.lines() if ": error: " in line] or err.lines()
            # a cancel (SIGTERM, Ctrl-C) reached the command's own handler: its bake or batch says "cancelled"
            cancelled = result == 1 and any("cancelled" in line for line in err.lines())
            if cancelled:
                stop.append(signal.SIGTERM)
            status = "done" if result == 0 else "not done" if cancelled else "failed"
            files.append({"label": label, "status": status, "code": result, "errors": errors if result else [],
                          "output": out.lines()})
            code = max(code, result)
        code = max(code, 1) if stop else code
        where = core_farm.write_summary(paths["JobFolder"], task, files, code)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print(f"envfx farm: task {task}: {sum(f['status'] == 'done' for f in files)} of {len(files)} done; "
          f"summary {where}")
    refused = [f["label"] for f in files if f["status"] == "failed" and f["code"] == 2]
    exit_code = core_farm.task_exit_code(files)
    if refused and not exit_code:
        print(f"envfx farm: task {task}: bad input (exit 2), which a retry would refuse again, in "
              f"{', '.join(refused)}: the task ends with 0 so that the farm does not retry it, and Gather fails "
              f"naming it")
    return exit_code


def run_gather(tokens: list) -> int:
    try:
        desc, _task, paths = _task_args(tokens, "gather")
    except SystemExit as exc:
        return int(exc.code or 0)
    lines, code = core_farm.gather(desc, paths)
    report = core_farm.write_report(paths["JobFolder"], lines)
    for line in lines[:-1]:
        print(line, file=sys.stderr)
    print(lines[-1])
    print(f"envfx farm: report {report}")
    return code
