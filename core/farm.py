"""Farm jobs: any batch command as an Open Job Description job (``jobtemplate-2023-09``), pure Python (no bpy).

A job is planned from what the command line (or the panel) gives: the command, its input files, its other
arguments with their paths marked, the files per task (``chunk``), the job folder and the Blender to run. Every
path becomes a job parameter of type PATH (the input files' folders, the output folders, a palette...), so a
farm's path mapping carries the job to workers with other mounts or operating systems. Paths relative to the
current folder are refused: a worker has no current folder in common with the machine that wrote the job.

The template has two steps:

* the command's step: one task per share of input files (``chunk`` files each; one task for a command without
  input files). Each task runs ``blender -b -c envfx farm task JOB.json N ...``, which runs
  ``blender -c envfx COMMAND FILE ARGS...`` for each file of share N in turn (``share_commands``) and writes the
  share's summary into ``JobFolder/summaries``;
* ``Gather``: reads the summaries and prints one report worded as the one-machine batch (``gather``).

The job description (``job_description``: the shares, the arguments, which path parameter each path sits in) is
embedded in the template, so the template and its parameter file are the whole job.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field

SPEC = "jobtemplate-2023-09"
TEMPLATE_NAME = "template.yaml"
PARAMETERS_NAME = "parameters.json"
SUMMARIES = "summaries"
REPORT_NAME = "report.txt"
STATES = "states"  # in the job folder: the states between the parts of a sequence
JOB_VERSION = 1
# a task told to stop (a farm cancelling it) gets this long to finish the file in progress, then it is killed
NOTIFY_SECONDS = 120


class FarmError(ValueError):
    """Bad input for a farm job: the message says what is wrong and what to do."""


@dataclass(frozen=True)
class Command:
    """What the farm needs to know of a batch command: its input files, its path options and how it splits."""
    inputs: str = ""             # "blend", "image" (files or folders of images), "" (no input files)
    in_place: bool = False       # saves its input files (their folders are read and written)
    per_file_out: tuple = ()     # options whose folder is <folder>/<file name> when the batch has several files
    paths: dict = field(default_factory=dict)  # option -> (objectType FILE/DIRECTORY, dataFlow IN/OUT/INOUT)
    split: str = ""              # why the command is one task ('' when its input files split)
    # a sequence that --chunk N splits into parts of N frames: "chain" (each part starts from the state the part
    # before saved: one step each, in turn) or "apart" (each part steps the simulation from the first frame itself
    # and writes only its frames: one step, its parts at once)
    frame_parts: str = ""
    changes: bool = True         # a failed file is "left unchanged" (the batch's wording)


# every batch command `envfx farm` can describe; `info` writes nothing and is refused (UNSPLITTABLE)
COMMANDS = {
    "bend": Command("blend", in_place=True, per_file_out=("--export-engines",),
                    paths={"--output": ("FILE", "OUT"), "--export-engines": ("DIRECTORY", "OUT")}),
    "wind": Command("blend", in_place=True, paths={"--output": ("FILE", "OUT")}),
    "lightmap": Command("blend", per_file_out=("--out",), paths={"--out": ("DIRECTORY", "OUT")}, changes=False),
    "vat": Command("blend", per_file_out=("--out",), paths={"--out": ("DIRECTORY", "OUT")}, changes=False),
    "mips": Command("image", paths={"--out": ("DIRECTORY", "OUT")}, changes=False),
    "snow": Command("blend", in_place=True, paths={"--output": ("FILE", "OUT"), "--out-dir": ("DIRECTORY", "OUT")},
                    frame_parts="apart"),
    "gas-giant": Command("", paths={"--out": ("DIRECTORY", "OUT"), "--palette": ("FILE", "IN"),
                                    "--cubemap-palette": ("DIRECTORY", "IN"), "--save": ("FILE", "INOUT"),
                                    "--save-field": ("FILE", "OUT"), "--load-field": ("FILE", "IN")},
                         frame_parts="chain"),
}
UNSPLITTABLE = {
    "info": "info only prints what .blend files hold and writes nothing: there is nothing for a farm to bake; "
            "run it directly",
    "farm": "farm writes a job: run it directly, not as a job",
}


@dataclass
class PathArg:
    """A path in the command's arguments: ``param``'s folder or file, joined with ``name`` ('' = the path itself)."""
    param: str
    name: str = ""

    def to_json(self) -> dict:
        return {"param": self.param, "name": self.name}


@dataclass
class Param:
    name: str
    path: str
    kind: str          # FILE or DIRECTORY
    flow: str          # IN, OUT or INOUT
    what: str


@dataclass
class Job:
    command: str
    folder: str                        # the job folder (template, parameters, summaries, report)
    params: list                       # [Param], in template order
    shares: list                       # [[PathArg]] (one share with no files: a command without inputs)
    args: list                         # tokens: str, or PathArg
    per_file_out: list                 # [(option, PathArg)] given once per file (<folder>/<file name> with several)
    blender: str
    several: bool = False
    parts: list = field(default_factory=list)  # [(first, last)] frames of a sequence in parts: one step each, in turn

    def description(self) -> dict:
        """The job description embedded in the template, read by ``farm task`` and ``farm gather``."""
        return {"version": JOB_VERSION, "command": self.command, "several": self.several,
                "changes": COMMANDS[self.command].changes,
                "args": [a.to_json() if isinstance(a, PathArg) else a for a in self.args],
                "per_file_out": [[option, arg.to_json()] for option, arg in self.per_file_out],
                "shares": [[[arg.param, arg.name] for arg in share] for share in self.shares],
                "parts": [list(part) for part in self.parts]}


# --- checks ------------------------------------------------------------------------------------------------

def command_of(name: str) -> Command:
    if name in UNSPLITTABLE:
        raise FarmError(f"{name} cannot be split into farm tasks: {UNSPLITTABLE[name]}")
    if name not in COMMANDS:
        raise FarmError(f"Unknown command {name!r}: the farm writes jobs for {', '.join(COMMANDS)}")
    return COMMANDS[name]


def check_chunk(chunk: int, command: str) -> None:
    if chunk < 1:
        what = "frames" if COMMANDS[command].frame_parts else "input files"
        raise FarmError(f"--chunk {chunk}: give the number of {what} per task, 1 or more")
    if chunk > 1 and COMMANDS[command].split:
        raise FarmError(f"--chunk {chunk}: {command} runs as one task ({COMMANDS[command].split}): drop --chunk")


def absolute(path: str, option: str, base: str | None = None) -> str:
    """``path`` as the absolute path a farm can map: absolute already, or ``//...`` (``base``'s folder: the .blend
    file's, as in Blender). A path relative to the current folder is refused: a farm worker does not share the
    current folder of the machine that wrote the job."""
    if path.startswith("//"):
        if base is None:
            raise FarmError(f"{option} {path!r} starts with // (the .blend file's folder), and there is no one .blend "
                            f"file it is relative to here: give an absolute path")
        return os.path.normpath(os.path.join(os.path.dirname(base), path[2:]))
    if not os.path.isabs(path):
        blend = " (or one starting with // for the .blend file's folder)" if base is not None else ""
        raise FarmError(f"{option} {path!r} is relative to the current folder, which a farm cannot map (its workers "
                        f"do not share this machine's current folder): give an absolute path{blend}")
    if "{{" in path:
        raise FarmError(f"{option} {path!r} holds '{{{{', which a job template reads as a parameter: rename the "
                        f"folder")
    return os.path.normpath(path)


def inside(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or lies inside it (case-insensitive where the file system is)."""
    path, folder = os.path.normcase(os.path.abspath(path)), os.path.normcase(os.path.abspath(folder))
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive
        return False


def _param_name(option: str) -> str:
    return "".join(part.capitalize() for part in option.lstrip("-").split("-"))


# --- planning --------------------------------------------------------------------------------------------

def plan_job(command: str, inputs: list, args: list, job_folder: str, chunk: int = 1, blender: str = "blender",
             frames: int | tuple | None = None) -> Job:
    """The job for ``command`` over ``inputs`` (absolute file paths, in order), with ``args`` the command's other
    arguments: plain tokens, and ``(option, path)`` pairs for its path options (absolute paths). ``frames``: the
    sequence that ``chunk`` splits into parts of ``chunk`` frames, as its length (frames 1 to N) or its (first,
    last) frames (None: one task). Raises FarmError for bad input; nothing is written."""
    spec = command_of(command)
    check_chunk(chunk, command)
    if spec.inputs and not inputs:
        raise FarmError(f"{command} needs input files: none given")
    seen: dict = {}
    for path in inputs:  # (two names of one file too: a link, a folder given with and without a link)
        key = os.path.normcase(os.path.realpath(path))
        if key in seen:
            first = seen[key]
            again = f"{path!r}" if path == first else f"{path!r} (the file {first!r})"
            raise FarmError(f"{again} is given twice: a farm would run it in two tasks at once, each saving or "
                            f"writing it over the other's; give each file once (check overlapping patterns)")
        seen[key] = path
    if blender != os.path.basename(blender) and not os.path.isabs(blender):
        raise FarmError(f"--blender {blender!r} is relative to the current folder, which a farm cannot map: give an "
                        f"absolute path, or the name of a program the workers find on their PATH (blender)")
    job_folder = absolute(job_folder, "--out")
    several = len(inputs) > 1
    params = []
    by_path = {}

    def param_for(path, kind, flow, name, what):
        key = (os.path.normcase(path), kind)
        if key in by_path:
            found = by_path[key]
            if found.flow != flow:
                found.flow = "INOUT"
            return found
        p = Param(name, path, kind, flow, what)
        by_path[key] = p
        params.append(p)
        return p

    param_for(job_folder, "DIRECTORY", "INOUT", "JobFolder", "the job's folder: its template, the tasks' summaries "
              "and the gathered report")
    # the input files' folders as PATH parameters (a file alone in its folder is a parameter of its own: the job
    # does not reach into the rest of its folder)
    counts = {}
    for path in inputs:
        counts[os.path.dirname(path)] = counts.get(os.path.dirname(path), 0) + 1
    folders = {}
    shares_files = []
    in_place = spec.in_place and not (spec.frame_parts == "apart" and frames is not None)  # (parts only read it)
    flow = "INOUT" if in_place else "IN"
    saved = " (saved in place)" if in_place else ""
    for path in inputs:
        folder = os.path.dirname(path)
        if counts[folder] == 1:
            p = param_for(path, "FILE", flow, f"Input{len(params)}", "an input file" + saved)
            shares_files.append(PathArg(p.name))
            continue
        if folder not in folders:
            folders[folder] = param_for(folder, "DIRECTORY", flow, f"Input{len(params)}",
                                        "a folder of input files" + saved)
        shares_files.append(PathArg(folders[folder].name, os.path.basename(path)))
    tokens, per_file = [], []
    for arg in args:
        if isinstance(arg, str):
            tokens.append(arg)
            continue
        option, path = arg
        kind, flow = spec.paths[option]
        name = _param_name(option)
        p = param_for(path, kind, flow, name if name not in {q.name for q in params} else name + str(len(params)),
                      f"{option} of {command}")
        if option in spec.per_file_out:
            per_file.append((option, PathArg(p.name)))
        else:
            tokens += [option, PathArg(p.name)]
    outputs = [(f"The output {option}", path) for option, path in (a for a in args if not isinstance(a, str))
               if spec.paths[option][1] != "IN"]
    for what, path in [*outputs, ("The job folder", job_folder)]:
        for folder in folders:
            if inside(path, folder):
                raise FarmError(f"{what} {path!r} is inside the input folder {folder!r}: a farm sends input "
                                f"folders to its workers and brings output folders back, and would send the "
                                f"outputs along as inputs; choose a folder outside {folder!r}")
    if shares_files:
        shares = [shares_files[i:i + chunk] for i in range(0, len(shares_files), chunk)]
    else:
        shares = [[]]
    parts = []
    if spec.frame_parts and ("--part" in tokens or "--state-dir" in tokens):
        raise FarmError("--part and --state-dir are the farm's to give: drop them, and give the frames per task "
                        "with --chunk N")
    if spec.frame_parts and frames is not None:
        first, last = (1, frames) if isinstance(frames, int) else frames
        if last <= first:
            raise FarmError(f"--chunk {chunk}: {command} bakes one frame here, which cannot be split: drop --chunk, "
                            f"or bake a sequence (--frames {'START:END' if spec.frame_parts == 'apart' else 'N'})")
        if spec.frame_parts == "apart" and chunk > last - first:
            raise FarmError(f"--chunk {chunk}: the bake has {last - first + 1} frames ({first}-{last}), which would "
                            f"be one part: give fewer frames per part (at most {last - first}), or drop --chunk")
        parts = [(a, min(a + chunk - 1, last)) for a in range(first, last + 1, chunk)]
        shares = [[] for _ in parts]
        tokens = [*shares_files, *tokens]  # (snow: every part bakes from the one .blend file)
    return Job(command, job_folder, params, shares, tokens, per_file, blender, several, parts)


# --- the template --------------------------------------------------------------------------------------------

def step_name(command: str) -> str:
    return "".join(part.capitalize() for part in command.split("-"))


def template(job: Job) -> dict:
    """The OpenJD job template (a dict; ``to_yaml`` writes it)."""
    data = json.dumps(job.description(), ensure_ascii=False, separators=(",", ":"))
    if "{{" in data:
        raise FarmError("An argument holds '{{', which a job template reads as a parameter: rename or drop it")
    params = [{"name": "Blender", "type": "STRING", "default": job.blender,
               "description": "the Blender program the workers run (a name on their PATH or a full path)"}]
    for p in job.params:
        params.append({"name": p.name, "type": "PATH", "objectType": p.kind, "dataFlow": p.flow, "default": p.path,
                       "description": p.what})
    path_args = []
    for p in job.params:
        path_args += ["--path", f"{p.name}={{{{Param.{p.name}}}}}"]
    embedded = [{"name": "Job", "type": "TEXT", "filename": "envfx-job.json", "data": data}]
    cancel = {"mode": "NOTIFY_THEN_TERMINATE", "notifyPeriodInSeconds": NOTIFY_SECONDS}
    run = step_name(job.command)
    files = sum(len(s) for s in job.shares)
    what = f"{files} file(s) in {len(job.shares)} task(s)" if files else "one task"
    chained = COMMANDS[job.command].frame_parts == "chain"
    if job.parts:
        what = f"{parts_text(job.parts)} in {len(job.parts)} parts"

    def task_script(number):
        return {"embeddedFiles": embedded, "actions": {"onRun": {
            "command": "{{Param.Blender}}",
            "args": ["-b", "-c", "envfx", "farm", "task", "{{Task.File.Job}}", number, *path_args],
            "cancelation": cancel}}}

    if job.parts and chained:  # one step per part, each after the one before: it starts from the state that one saved
        steps = []
        for i, (first, last) in enumerate(job.parts, 1):
            step = {"name": part_step_name(job.command, i),
                    "description": f"frames {first}-{last} of the sequence: blender -c envfx {job.command} --part "
                                   f"{first}-{last}, from the state the part before saved in JobFolder/states (a "
                                   f"retry bakes these frames again, no others)",
                    "script": task_script(str(i))}
            if i > 1:
                step["dependencies"] = [{"dependsOn": part_step_name(job.command, i - 1)}]
            steps.append(step)
        last_step = steps[-1]["name"]
    else:
        per = "share of input files" if files else "bake"
        if job.parts:
            per = ("part of the frames (--part FIRST-LAST: each steps the simulation from the first frame and "
                   "writes only its own frames, so the parts run at once or in any order)")
        steps = [{"name": run,
                  "description": f"one task per {per}: blender -c envfx {job.command} on it, staged and moved into "
                                 f"place (a task can run again)",
                  "parameterSpace": {"taskParameterDefinitions": [
                      {"name": "Task", "type": "INT", "range": f"1-{len(job.shares)}"}]},
                  "script": task_script("{{Task.Param.Task}}")}]
        last_step = run
    return {
        "specificationVersion": SPEC,
        "name": f"EnvFX {job.command} ({what})",
        "description": (
            f"blender -c envfx {job.command} as a farm job, written by `blender -c envfx farm`. Each task runs "
            f"the command on its share of the input files: it fails (exit 1, worth a retry: set the farm's "
            f"retries per task) when a file failed (a crash, a cancel, a full disk) or was not done; a file "
            f"refused as bad input (the command's exit 2: a retry fails the same way) is kept in the task's "
            f"summary and the task succeeds, since OpenJD 2023-09 has no per-exit-code retry rule. Gather writes "
            f"the report and fails (exit 2) naming the refused files."),
        "parameterDefinitions": params,
        "steps": [
            *steps,
            {"name": "Gather",
             "description": "the tasks' summaries as one report (files done, failed with the reason, not done), "
                            "also written to JobFolder/report.txt",
             "dependencies": [{"dependsOn": last_step}],
             "script": {"embeddedFiles": embedded, "actions": {"onRun": {
                 "command": "{{Param.Blender}}",
                 "args": ["-b", "-c", "envfx", "farm", "gather", "{{Task.File.Job}}", *path_args]}}}},
        ],
    }


def part_step_name(command: str, part: int) -> str:
    return f"{step_name(command)}{part}"


def parts_text(parts: list) -> str:
    """The frames of a sequence in parts: "24 frames" (from frame 1), else "frames 101-148"."""
    return f"{parts[-1][1]} frames" if parts[0][0] == 1 else f"frames {parts[0][0]}-{parts[-1][1]}"


def parameter_values(job: Job) -> dict:
    """The parameter file: every job parameter's value on this machine (``openjd run -p file://...``)."""
    return {"Blender": job.blender, **{p.name: p.path for p in job.params}}


_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def to_yaml(value: object, indent: int = 0) -> str:
    """``value`` (dicts, lists, strings, numbers) as block-style YAML; every string is double-quoted the JSON way
    (a valid YAML double-quoted scalar), keys are plain."""
    pad = "  " * indent
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:\n{to_yaml(item, indent + 1)}")
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
        return "\n".join(lines)
    if isinstance(value, list):
        lines = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                text = to_yaml(item, indent + 1)
                lines.append(f"{pad}- {text.lstrip()}")
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return "\n".join(lines)
    return pad + _scalar(value)


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (dict, list)):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(str(value), ensure_ascii=False)


def write_text(path: str, text: str) -> None:
    """Write ``path`` whole or not at all (a temporary file next to it, renamed over it)."""
    fd, tmp = tempfile.mkstemp(prefix=".envfx-", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_job(job: Job) -> list:
    """Write the template and its parameter file into the job folder (made if missing); returns their paths.
    A folder that holds another job (its template differs) loses that job's task summaries and report: Gather
    would read them as this job's (a task of this job that left no summary would count as done)."""
    doc = template(job)
    try:
        os.makedirs(job.folder, exist_ok=True)
    except OSError as exc:
        raise FarmError(f"Cannot create the job folder {job.folder!r} ({exc.strerror or exc}): choose a writable "
                        f"folder") from None
    paths = [os.path.join(job.folder, TEMPLATE_NAME), os.path.join(job.folder, PARAMETERS_NAME)]
    text = f"# EnvFX farm job: openjd run {TEMPLATE_NAME} -p file://{PARAMETERS_NAME}\n" + to_yaml(doc) + "\n"
    try:
        with open(paths[0], encoding="utf-8") as fh:
            other_job = fh.read() != text
    except (OSError, ValueError):
        other_job = os.path.exists(os.path.join(job.folder, SUMMARIES))
    if other_job:
        _forget_results(job.folder)
    write_text(paths[0], text)
    write_text(paths[1], json.dumps(parameter_values(job), indent=1, ensure_ascii=False) + "\n")
    return paths


def _forget_results(folder: str) -> None:
    """Remove the task summaries and the report of the job that the folder held before (FarmError if it cannot)."""
    summaries = os.path.join(folder, SUMMARIES)
    old = [os.path.join(summaries, n) for n in (os.listdir(summaries) if os.path.isdir(summaries) else ())
           if re.fullmatch(r"task-\d+\.json", n)]
    for path in old + [p for p in (os.path.join(folder, REPORT_NAME),) if os.path.isfile(p)]:
        try:
            os.remove(path)
        except OSError as exc:
            raise FarmError(f"The job folder {folder!r} holds another job, whose {os.path.basename(path)} cannot be "
                            f"removed ({exc.strerror or exc}): choose an empty job folder") from None


# --- tasks ---------------------------------------------------------------------------------------------------

def read_description(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        desc = json.load(fh)
    if desc.get("version") != JOB_VERSION:
        raise FarmError(f"{path!r} is a job of another EnvFX version ({desc.get('version')}): write the job again "
                        f"with this one")
    return desc


def resolve(arg: dict, paths: dict) -> str:
    """A path of the job description on this worker: its parameter's (mapped) value joined with its name."""
    try:
        root = paths[arg["param"]]
    except KeyError:
        raise FarmError(f"No value for the path parameter {arg['param']} (--path {arg['param']}=...)") from None
    return os.path.join(root, *arg["name"].split("/")) if arg["name"] else root


def share_commands(desc: dict, task: int, paths: dict) -> list:
    """[(file, argv)] of task ``task`` (1-based): the command line of each of its files (one with no files: the
    command's name in place of the file)."""
    shares = desc["shares"]
    if not 1 <= task <= len(shares):
        raise FarmError(f"Task {task}: the job has tasks 1 to {len(shares)}")
    args = [resolve(a, paths) if isinstance(a, dict) else a for a in desc["args"]]
    parts = desc.get("parts") or []
    if parts:  # a part of a sequence: its frames (chained: and the folder of the states between parts)
        first, last = parts[task - 1]
        argv = [desc["command"], *args, "--part", f"{first}-{last}"]
        if COMMANDS[desc["command"]].frame_parts == "chain":
            argv += ["--state-dir", os.path.join(resolve({"param": "JobFolder", "name": ""}, paths), STATES)]
        return [(part_label(first, last), argv)]
    out = []
    for item in shares[task - 1] or [None]:
        argv = [desc["command"]]
        path = desc["command"]
        if item is not None:
            path = resolve({"param": item[0], "name": item[1]}, paths)
            argv.append(path)
        for option, arg in desc["per_file_out"]:
            folder = resolve(arg, paths)
            if item is not None and desc["several"]:
                folder = os.path.join(folder, os.path.splitext(os.path.basename(path))[0])
            argv += [option, folder]
        out.append((path, argv + args))
    return out


def part_label(first: int, last: int) -> str:
    return f"frames {first}-{last}"


def summary_path(job_folder: str, task: int) -> str:
    return os.path.join(job_folder, SUMMARIES, f"task-{task:05d}.json")


def write_summary(job_folder: str, task: int, files: list, code: int) -> str:
    """The summary of one task (``files``: [{label, status, code, errors, output}]), written whole or not at all;
    a task run again replaces it."""
    path = summary_path(job_folder, task)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_text(path, json.dumps({"task": task, "code": code, "files": files}, indent=1, ensure_ascii=False) + "\n")
    return path


def _error_line(command: str, label: str, line: str) -> str:
    """A task's error line naming the file: the command's own line for a file of a batch, else with the file put
    in (``envfx mips: error: ...`` -> ``envfx mips: /x/a.png: error: ...``)."""
    head = f"envfx {command}: error: "
    if line.startswith(head) and label != command:
        return f"envfx {command}: {label}: error: {line[len(head):]}"
    return line


def gather(desc: dict, paths: dict) -> tuple:
    """(report lines, exit code) from the tasks' summaries in ``paths["JobFolder"]``, worded as the one-machine
    batch: each failed file with its reason, "N of M files failed", the files not done (a task that left no summary:
    not run yet, or stopped). Files are named by their paths here (``paths``: the path parameters' values)."""
    command = desc["command"]
    job_folder = paths["JobFolder"]
    done, failed, left, lines, missing, code = [], [], [], [], [], 0
    parts = desc.get("parts") or []
    for task, share in enumerate(desc["shares"], 1):
        labels = [resolve({"param": p, "name": n}, paths) for p, n in share] or [command]
        if parts:
            labels = [part_label(*parts[task - 1])]
        try:
            with open(summary_path(job_folder, task), encoding="utf-8") as fh:
                summary = json.load(fh)
        except (OSError, ValueError):
            missing.append(task)
            left += labels
            continue
        for label, entry in zip(labels, summary["files"]):
            if entry["status"] == "done":
                done.append(label)
                continue
            if entry["status"] == "not done":
                left.append(label)
                code = max(code, 1)
                continue
            failed.append(label)
            code = max(code, entry["code"])
            reasons = [_error_line(command, label, e) for e in entry["errors"]]
            lines += reasons or [f"envfx {command}: {label}: error: failed with exit code {entry['code']}"]
    total = sum(len(s) for s in desc["shares"])
    if failed and total > 1:
        unchanged = " and were left unchanged" if desc["changes"] else ""
        lines.append(f"envfx {command}: {len(failed)} of {total} files failed{unchanged}: {', '.join(failed)}")
    if left:
        unchanged = " (left as they were)" if desc["changes"] else ""
        tasks = ", ".join(map(str, missing))
        why = (f"; task(s) {tasks} left no summary: not run yet, or stopped before the end: run them again"
               if missing else "")
        lines.append(f"envfx {command}: done {', '.join(done) or 'none'}; not done{unchanged}: {', '.join(left)}"
                     f"{why}")
        code = max(code, 1)
    what = f"{total} file(s)" if total else "the bake"
    if parts:
        of = parts_text(parts)
        lines.append(f"envfx farm: {command}: {len(done)} of {len(parts)} part(s) of {'the ' * (of[0] != 'f')}{of} "
                     f"done")
        return lines, code
    lines.append(f"envfx farm: {command}: {len(done)} of {total} file(s) done by {len(desc['shares'])} task(s)"
                 if total else f"envfx farm: {command}: {what} {'done' if done else 'not done'}")
    return lines, code


def write_report(job_folder: str, lines: list) -> str:
    path = os.path.join(job_folder, REPORT_NAME)
    write_text(path, "\n".join(lines) + "\n")
    return path


def task_count(files: int, chunk: int) -> int:
    return max(1, math.ceil(files / chunk))


def task_exit_code(files: list) -> int:
    """A task's exit code from its files' results (``files``: the summary's entries): 1 when a file failed in a way
    a retry may mend (exit 1: a crash, a cancel, a full disk) or was not done, else 0, also when files were refused
    as bad input (exit 2). OpenJD 2023-09 retries a failed task whatever its exit code, and a retry of bad input fails
    the same way: so such a task succeeds, its summary keeps the refusal, and Gather fails naming the file."""
    return 1 if any(f["status"] == "not done" or (f["status"] == "failed" and f["code"] != 2) for f in files) else 0
