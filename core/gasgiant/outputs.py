"""The files a bake writes: their names, the previous bake's files, and writing images and JSON."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

import numpy as np

from .. import colour, exr
from ..png import write_png
from .cube import FACES
from .layouts import ENGINE_FACES, cube_layout_faces
from .params import GasGiantParams
from .settings import CUBE_LAYOUTS


@dataclass
class BakeResult:
    folder: str
    files: list
    frames: int
    equirect: list  # equirect files in frame order (the planet's texture)
    seconds: float = 0.0
    metadata: str | None = ""  # gasgiant.json: what every image holds and how to decode it (``bake_metadata``);
    # None for a part of a sequence before the last, which does not write it
    removed: list = field(default_factory=list)  # names of the previous bake's files this bake removed
    not_removed: list = field(default_factory=list)  # (name, why) of those it could not remove

    def removed_note(self) -> str:
        """What happened to the previous bake's files that this one does not write (empty if there were none)."""
        notes = []
        if self.removed:
            notes.append(f"removed {len(self.removed)} file(s) of the previous bake in this folder that this bake "
                         f"does not write: {_name_list(self.removed)}")
        if self.not_removed:
            notes.append(f"could not remove {len(self.not_removed)} file(s) of the previous bake: "
                         f"{_name_list([f'{n} ({why})' for n, why in self.not_removed])}")
        return "; ".join(notes)


def _name_list(names: list, limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"


def output_names(params: GasGiantParams, frame: int | None) -> dict[str, str]:
    """{output key: file name} of one frame; with ``PNG_EXR`` the EXR keys end in ``_exr``."""
    sfx = "" if frame is None else f"_{frame:04d}"
    exts = {"PNG": ("png",), "EXR": ("exr",), "PNG_EXR": ("png", "exr")}[params.file_format]
    names = {}
    for ext in exts:
        key = "" if ext == exts[0] else "_exr"
        names.update({f"cube_{e['name']}{key}": f"gasgiant_{e['name']}{sfx}.{ext}"
                      for e in cube_layout_faces(params.cube_layout)})
        if params.equirect_width:
            names[f"equirect{key}"] = f"gasgiant_equirect{sfx}.{ext}"
            names[f"flow{key}"] = f"gasgiant_flow{sfx}.{ext}"
    return names


METADATA_NAME = "gasgiant.json"
METADATA_FORMAT = "envfx-gasgiant-bake"
METADATA_VERSION = 1
# every name a bake can write, of any layout, file format and frame: only such files are ever removed
OUTPUT_NAME = re.compile(rf"gasgiant_({'|'.join(FACES + ENGINE_FACES)}|equirect|flow)(?:_(\d{{4,}}))?\.(png|exr)")


def all_output_names(params: GasGiantParams) -> list:
    """Every file name a bake with ``params`` writes (besides gasgiant.json), frame by frame."""
    frames = [None] if params.frames == 1 else range(1, params.frames + 1)
    return [name for f in frames for name in output_names(params, f).values()]


def previous_outputs(folder: str) -> set:
    """The files in ``folder`` that the bake whose gasgiant.json is there wrote: the names its ``outputs`` lists,
    or, for a gasgiant.json without that list (written before it existed), the names that bake wrote as its own
    settings give them (frames, cube layout, file formats, with or without the equirect image). Only plain file
    names a bake can write (``OUTPUT_NAME``) that are files in ``folder``; none when there is no gasgiant.json of
    a gas-giant bake or it cannot be read."""
    try:
        with open(os.path.join(folder, METADATA_NAME), encoding="utf-8") as fh:
            meta = json.load(fh)
        present = {n for n in os.listdir(folder) if OUTPUT_NAME.fullmatch(n)
                   and not os.path.isdir(os.path.join(folder, n))}
    except (OSError, ValueError):
        return set()
    if not isinstance(meta, dict) or meta.get("format") != METADATA_FORMAT:
        return set()
    outputs = meta.get("outputs")
    if outputs is None:
        return _outputs_from_settings(meta, present)
    if not isinstance(outputs, list):
        return set()
    return {n for n in outputs if isinstance(n, str)} & present


def _outputs_from_settings(meta: dict, present: set) -> set:
    """Of the names ``present``, those the bake of an older gasgiant.json (without ``outputs``) wrote, from its
    ``frames``, ``cube_layout`` and the file types and images its ``images`` name."""
    try:
        frames = int(meta["frames"])
        layout = str(meta["cube_layout"]).upper()
        files = [str(item["file"]) for item in meta["images"]]
    except (KeyError, TypeError, ValueError):
        return set()
    formats = {"png": "PNG", "exr": "EXR", "exr png": "PNG_EXR"}
    file_format = formats.get(" ".join(sorted({f.rsplit(".", 1)[-1] for f in files})))
    if frames < 1 or layout not in CUBE_LAYOUTS or file_format is None:
        return set()
    equirect = any(f.startswith("gasgiant_equirect") for f in files)
    params = GasGiantParams(frames=frames, cube_layout=layout, file_format=file_format,
                            equirect_width=2048 if equirect else 0)
    if frames == 1:
        return set(output_names(params, None).values()) & present
    patterns = set(output_names(params, 0).values())  # gasgiant_px_0000.png ...: the names of every frame
    found = set()
    for name in present:
        m = OUTPUT_NAME.fullmatch(name)
        assert m is not None  # present holds OUTPUT_NAME names only
        number = int(m.group(2)) if m.group(2) else 0
        if 1 <= number <= frames and name == f"gasgiant_{m.group(1)}_{number:04d}.{m.group(3)}" and \
                f"gasgiant_{m.group(1)}_0000.{m.group(3)}" in patterns:
            found.add(name)
    return found


def _write_json(path: str, data: dict):
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")


def _write_image(path: str, pixels: np.ndarray, is_colour: bool = True):
    """PNG (8-bit, straight alpha) or EXR (32-bit float) by the file's extension. In the EXR, colour outputs are
    converted from sRGB-encoded to linear and multiplied by their alpha (OpenEXR colour is premultiplied); data
    (the flow map) is written as it is."""
    if path.endswith(".exr"):
        px = np.array(pixels, dtype=np.float32)
        if is_colour:
            px[..., :3] = colour.srgb_to_linear(px[..., :3])
            if px.shape[-1] == 4:
                px[..., :3] *= px[..., 3:]
        exr.write_exr(path, px)
    else:
        write_png(path, pixels)
