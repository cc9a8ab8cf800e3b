"""Export for Game Engines (wind): each selected wind asset's live wind as shader includes for Godot, Unity and
Unreal and ``envfx_wind.json`` (``core.wind_engines``; with Grass Push on, its baked buffer's frames and numbers),
and the five UV maps the shaders read (the live wind's per-vertex attributes, ``core.wind_engines.CHANNELS``),
written onto the meshes so that Blender's glTF and FBX exporters (Apply Modifiers off) carry them to the game."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import bpy
import numpy as np
import numpy.typing as npt
from bpy.props import StringProperty

from .. import bridge
from ..core import snow as core_snow
from ..core import wind as core_wind
from ..core import wind_engines
from ..shader_nodes import wind as wind_nodes
from ..shader_nodes import wind_rigid
from . import bend as bend_ops
from .common import (PATH_OPTIONS, ObjectsResult, PicksFolder, edit_mode_text, in_edit_mode, mesh_of, output_folder,
                     report_result)
from .snow import live_push

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

MAX_UV_MAPS = 8  # Blender's limit per mesh


class WindEngineError(ValueError):
    """Nothing was exported; the message says what to do."""


def _skip_reason(obj) -> str | None:
    if obj.type != "MESH":
        return "not a mesh"
    mesh = obj.data
    attrs = mesh.attributes
    col, height = attrs.get("EnvFX_Wind"), attrs.get("EnvFX_Height")
    if col is None or height is None or col.domain != "POINT" or height.domain != "POINT":
        return "no wind data: bake it first (Bake Wind Data)"
    if mesh.library is not None:
        return f"its mesh is linked from {mesh.library.filepath!r}: export it from that file"
    names = {n for n, _parts in wind_engines.CHANNELS}
    have = {uv.name for uv in mesh.uv_layers}
    if len(have | names) > MAX_UV_MAPS:
        return (f"it has {len(have - names)} UV maps and the wind needs {len(names)} more, beyond Blender's "
                f"{MAX_UV_MAPS}: remove {len(have | names) - MAX_UV_MAPS} UV map(s) first")
    return None


def write_channels(obj: bpy.types.Object) -> dict[str, npt.NDArray[np.float32]]:
    """Write the wind's UV maps onto ``obj``'s mesh (replacing earlier ones; the active and render UV maps stay);
    returns {UV map name: (N, 2)} as written."""
    mesh = mesh_of(obj)
    n = len(mesh.vertices)
    rgba = bridge.point_attribute(mesh, "EnvFX_Wind").reshape(n, 4)
    h = bridge.point_attribute(mesh, "EnvFX_Height").reshape(n)
    live = core_wind.live_attributes(bridge.get_positions(mesh), h, rgba)
    uvs = wind_engines.channel_uvs(live)
    active = mesh.uv_layers.active.name if mesh.uv_layers.active is not None else None
    render = next((uv.name for uv in mesh.uv_layers if uv.active_render), None)
    for name, values in uvs.items():
        bridge.set_vertex_uv(mesh, name, values)
    if active is not None:
        mesh.uv_layers.active = mesh.uv_layers[active]
    if render is not None:
        mesh.uv_layers[render].active_render = True
    mesh.update()
    return uvs


def push_bake(scene: bpy.types.Scene) -> wind_engines.PushBake | None:
    """The baked buffer the scene's grass push reads, as ``envfx_wind.json`` describes it (its frames and their
    windows from the bake's snow_buffer.json; a single image: the window of its bake's group), or None when push is
    off. Raises WindEngineError when a sequence's snow_buffer.json cannot be read."""
    image, tree = wind_nodes.push_source(scene)
    if image is None or tree is None:
        return None
    if live_push.is_live_image(image):
        raise WindEngineError("The grass push is live (no bake): a game reads baked frames. Bake the interaction "
                              "buffer (Snow > Bake Interaction Buffer) and Push Grass again, or turn Grass Push off")
    s = bridge.envfx_settings(scene).wind

    def value(label: str) -> float:
        return cast(bpy.types.NodeSocketFloat, tree.nodes[label].outputs[0]).default_value

    path = bpy.path.abspath(image.filepath)
    folder = os.path.dirname(path)
    first, last = round(value("First Frame")), round(value("Last Frame"))
    if image.source == "SEQUENCE":
        meta_path = os.path.join(folder, "snow_buffer.json")
        try:
            meta = core_snow.read_buffer_metadata(meta_path)
        except (OSError, core_snow.SnowError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise WindEngineError(f"Cannot read the grass push's bake {meta_path!r} ({why}): bake the interaction "
                                  f"buffer again, or turn Grass Push off") from None
        frames = tuple((int(f["frame"]), (float(f["origin"][0]), float(f["origin"][1])), str(f["file"]))
                       for f in meta["frames"] if "file" in f)
        res = meta.get("resolution")
        width, height = (int(res[0]), int(res[1])) if isinstance(res, list) and len(res) == 2 else image.size
    else:  # one image for every frame
        frames = ((last, (value("Origin X"), value("Origin Y")), os.path.basename(path)),)
        width, height = image.size
    return wind_engines.PushBake(size=value("Size"), strength=s.push_strength, sway=s.push_sway, first=first,
                                 last=last, resolution=(int(width), int(height)), frames=frames,
                                 sequence=image.source == "SEQUENCE", folder=folder)


def export_engines(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object], folder: str
                   ) -> tuple[list[str], ObjectsResult]:
    """Export the wind assets among ``objects`` for game engines into ``folder``: their UV channels onto their
    meshes, one include per asset and engine, ``envfx_wind.json``; props in rigid sway get their rigid-sway
    include (no channels). Returns (paths written, ObjectsResult: the
    assets changed and the objects skipped with why). Raises WindEngineError, with nothing changed, for a blank or
    unwritable folder, no wind asset among ``objects``, or a mesh in Edit Mode."""
    path = output_folder(folder, "The folder", "No folder: choose the folder the engine files are written to",
                         WindEngineError)
    result = ObjectsResult()
    assets, rigid = [], []
    for obj in objects:
        if wind_rigid.is_rigid(obj):  # a prop in rigid sway: its include needs no channels
            rigid.append(obj)
            continue
        why = _skip_reason(obj)
        if why:
            result.skipped[obj.name] = why
        else:
            assets.append(obj)
    if not assets and not rigid:
        why = f" ({result.skipped_text()})" if result.skipped else ""
        raise WindEngineError(f"No wind asset to export{why}: bake wind data on the selected meshes first, or put "
                              f"props in the wind with Rigid Sway")
    names = in_edit_mode(assets)
    if names:
        raise WindEngineError(edit_mode_text(names))
    source = f"{bpy.path.basename(bpy.data.filepath) or 'unsaved file'}, scene {scene.name}"
    params = {obj.name: wind_nodes.asset_params(obj) for obj in assets}
    push = push_bake(scene)
    try:
        paths = wind_engines.export_files(path, params, wind_nodes.params_from_scene(scene),
                                          bend_ops.unit_scale(scene), source,
                                          {obj.name: [uv.name for uv in mesh_of(obj).uv_layers] for obj in assets},
                                          push, {obj.name: (wind_nodes.asset_params(obj), obj.rotation_mode)
                                                 for obj in rigid})
    except OSError as exc:
        raise WindEngineError(f"Cannot write the engine files into {path!r} ({exc.strerror or exc}): choose a "
                              f"writable folder") from None
    for obj in assets:
        write_channels(obj)
        result.changed.append(obj.name)
    result.changed += [obj.name for obj in rigid]
    return paths, result


class ENVFX_OT_wind_export_engines(PicksFolder, bpy.types.Operator):
    """Write the selected wind assets' live wind for game engines: shader includes for Godot, Unity (Shader Graph
    Custom Function) and Unreal, envfx_wind.json with the scene's wind in each engine's axes and units, and the
    UV maps the shaders read onto the meshes (export them with glTF or FBX, Apply Modifiers off)"""

    bl_idname = "envfx.wind_export_engines"
    bl_label = "Export for Game Engines"
    bl_options = {"REGISTER", "UNDO"}

    directory: StringProperty(name="Folder", description="Folder the engine files are written to (// is the .blend "
                              "file's folder)", default="", subtype="DIR_PATH", options=PATH_OPTIONS)

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.scene is None:  # (a context without one: temp_override(scene=None), a script's own context)
            cls.poll_message_set("Needs a scene")
            return False
        if not getattr(context, "selected_objects", None):
            cls.poll_message_set("Select the wind assets to export")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            paths, result = export_engines(bridge.context_scene(context), list(context.selected_objects),
                                           self.directory)
        except WindEngineError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        report_result(self, result, "Wrote the wind's UV channels on")
        self.report({"INFO"}, f"Wrote {len(paths)} files for game engines into {os.path.dirname(paths[0])}")
        return {"FINISHED"}


classes = (ENVFX_OT_wind_export_engines,)
