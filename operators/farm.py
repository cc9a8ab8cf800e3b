"""Write Farm Job: the current scene's bakes as Open Job Description jobs (docs/farm.md), one job folder each.

The bakes a saved file can hand to a farm as they are set up in its scene: the light map (a Ground is set), the snow
interaction buffer (the scene has snow), the vertex animation textures (of the selected animated meshes) and the mip
chains of an input folder (Mips Source: Folder). Each becomes the job `blender -c envfx farm` writes for the same
command line (``farm_jobs``), in ``<job folder>/<command>``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

import bpy
from bpy.props import IntProperty, StringProperty

from .. import bridge
from ..core import farm as core_farm
from . import mips as mips_ops
from .common import NeedsScene, PicksFolder
from .snow import snow_objects

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems


class FarmInputError(ValueError):
    """Why no job can be written (the message says what to do)."""


def _folder(path: str, what: str) -> str:
    if not path:
        raise FarmInputError(f"The {what} has no output folder: set it in its panel")
    return os.path.normpath(bpy.path.abspath(path))


def farm_jobs(scene: bpy.types.Scene, selected: Iterable[bpy.types.Object], job_folder: str, chunk: int = 1,
              blender: str = "") -> list[core_farm.Job]:
    """The farm jobs (``core.farm.Job``) of ``scene``'s bakes, one per bake it is set up for, in
    ``job_folder/<command>``. Raises FarmInputError or core.farm.FarmError; nothing is written."""
    blend = bpy.data.filepath
    if not blend:
        raise FarmInputError("The file is not saved: save it first (the farm's tasks open the saved file)")
    if bpy.data.is_dirty and not bpy.app.background:  # (in background mode a saved file still counts as changed)
        raise FarmInputError("The file has unsaved changes: save it first (the farm's tasks open the saved file)")
    blender = blender or bpy.app.binary_path or "blender"
    job_folder = os.path.normpath(bpy.path.abspath(job_folder))
    plans = []
    settings = bridge.envfx_settings(scene)
    if settings.lightmap.ground is not None:
        plans.append(("lightmap", [blend], ["--scene", scene.name,
                                            ("--out", _folder(settings.lightmap.output_dir, "light map"))]))
    if snow_objects(scene):
        plans.append(("snow", [blend], ["--bake", ("--out-dir", _folder(settings.snow.output_dir, "snow"))]))
    animated = [o.name for o in selected if o.type == "MESH" and (o.animation_data is not None or any(
        m.type in {"ARMATURE", "MESH_CACHE", "NODES", "CLOTH", "SOFT_BODY"} for m in o.modifiers))]
    if animated:
        plans.append(("vat", [blend], ["--objects", ",".join(animated), "--frames",
                                       f"{scene.frame_start}:{scene.frame_end}",
                                       ("--out", _folder(settings.vat.output_dir, "VAT bake"))]))
    mips = settings.mips
    if mips.source == "FOLDER" and mips.folder:
        try:
            images = mips_ops.folder_files(mips.folder)
        except mips_ops.MipsInputError as exc:
            raise FarmInputError(str(exc)) from None
        plans.append(("mips", images, [("--out", _folder(mips.output_dir, "mips bake"))]))
    if not plans:
        raise FarmInputError("The scene has no bake set up for a farm: set the Light Map's Ground, add snow, select "
                             "animated meshes for VAT, or set Mips Source to Folder")
    return [core_farm.plan_job(command, inputs, args, os.path.join(job_folder, command),
                               chunk=chunk if command == "mips" else 1, blender=blender)
            for command, inputs, args in plans]


def write_farm_jobs(jobs: Iterable[core_farm.Job]) -> list[str]:
    """Write every job (their folders made); returns the templates' paths."""
    return [core_farm.write_job(job)[0] for job in jobs]


class ENVFX_OT_farm_write(NeedsScene, PicksFolder, bpy.types.Operator):
    """Write the scene's bakes (light map, snow buffer, VAT of the selected meshes, mips of a folder) as Open Job
    Description jobs for a render farm, one folder each; the file must be saved"""

    bl_idname = "envfx.farm_write"
    bl_label = "Write Farm Job"
    bl_options = {"REGISTER"}

    directory: StringProperty(name="Job Folder", description="Where the jobs are written, one folder per bake",
                              subtype="DIR_PATH", default="//farm")
    chunk: IntProperty(name="Images per Task", description="Mips: input images per farm task", default=1, min=1)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            jobs = farm_jobs(bridge.context_scene(context), list(getattr(context, "selected_objects", None) or ()),
                             self.directory, self.chunk)
            paths = write_farm_jobs(jobs)
        except (FarmInputError, core_farm.FarmError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote {len(paths)} farm job(s): " + "; ".join(
            f"{job.command} ({len(job.shares)} task(s)) in {job.folder}" for job in jobs)
            + ". Run one here with: openjd run template.yaml -p file://parameters.json")
        return {"FINISHED"}


classes = (ENVFX_OT_farm_write,)
