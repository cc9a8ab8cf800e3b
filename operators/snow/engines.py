"""Export for Game Engines (snow): the snow's displacement from the interaction buffer as shader includes for
Godot, Unity and Unreal and ``envfx_snow.json`` (``core.snow_engines``), for the scene's buffer: the bake in the
Output Folder when there is one (its window exactly), else the Follow window of the settings."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import bpy
from bpy.props import StringProperty

from ... import bridge
from ...core import snow as core_snow
from ...core import snow_engines
from .. import bend as bend_ops
from ..common import PATH_OPTIONS, NeedsScene, PicksFolder, output_folder
from .collection import SnowInputError

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems


def _baked(scene):
    """The bake's JSON in the scene's Output Folder, or None (no folder set, no bake there, or not readable)."""
    folder = scene.envfx.snow.output_dir
    if not folder.strip() or (folder.startswith("//") and not bpy.data.filepath):
        return None
    path = os.path.join(bpy.path.abspath(folder), "snow_buffer.json")
    if not os.path.isfile(path):
        return None
    try:
        return core_snow.read_buffer_metadata(path)
    except (core_snow.SnowError, OSError):
        return None


def export_engines(scene: bpy.types.Scene, folder: str) -> list[str]:
    """Write the snow's engine includes and ``envfx_snow.json`` into ``folder``; returns the paths. The buffer's
    window is the bake's in the Output Folder when there is one, else the Follow window of the settings; an Area
    window is the snow's extent, known once baked: refused (SnowInputError, saying what to do) without a bake,
    as are a blank or unwritable folder; nothing is written then."""
    path = output_folder(folder, "The folder", "No folder: choose the folder the engine files are written to",
                         SnowInputError)
    s = bridge.envfx_settings(scene).snow
    meta = _baked(scene)
    source = f"{bpy.path.basename(bpy.data.filepath) or 'unsaved file'}, scene {scene.name}"
    if meta is not None:
        resolution, size, framing = int(meta["resolution"][0]), float(meta["world_size"]), meta["framing"]
        origin, unit_scale = meta["frames"][-1]["origin"], float(meta["unit_scale"])
        source += ", the bake in " + bpy.path.abspath(s.output_dir)
    elif s.framing == "FOLLOW":
        resolution, size, framing = int(s.buffer_resolution), float(s.buffer_size), "FOLLOW"
        origin, unit_scale = (0.0, 0.0), bend_ops.unit_scale(scene)
    else:
        raise SnowInputError("The buffer's Framing is Area, whose window is the snow's extent, known when it is "
                             "baked: bake the interaction buffer first (Bake Interaction Buffer, into the Output "
                             "Folder), or set Framing to Follow")
    try:
        return snow_engines.export_files(path, resolution, size, framing, origin, unit_scale, source)
    except OSError as exc:
        raise SnowInputError(f"Cannot write the engine files into {path!r} ({exc.strerror or exc}): choose a "
                             f"writable folder") from None


class ENVFX_OT_snow_export_engines(NeedsScene, PicksFolder, bpy.types.Operator):
    """Write the snow's displacement from the interaction buffer for game engines: shader includes for Godot,
    Unity (Shader Graph Custom Function) and Unreal, and envfx_snow.json with the numbers in each engine's axes
    and units"""

    bl_idname = "envfx.snow_export_engines"
    bl_label = "Export for Game Engines"

    directory: StringProperty(name="Folder", description="Folder the engine files are written to (// is the .blend "
                              "file's folder)", default="", subtype="DIR_PATH", options=PATH_OPTIONS)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            paths = export_engines(bridge.context_scene(context), self.directory)
        except SnowInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote {len(paths)} files for game engines into {os.path.dirname(paths[0])}")
        return {"FINISHED"}
