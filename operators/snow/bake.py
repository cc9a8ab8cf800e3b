"""The interaction buffer: Bake Interaction Buffer steps the actors over the frame range and bakes their trails
into EXR images and a JSON file (``core.snow``); Snow from Bake offsets the snow meshes by such a bake instead of
the live trails."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING, cast

import bpy
import numpy as np
from bpy.props import BoolProperty

from ... import bridge, progress
from ...core import bend as core_bend
from ...core import exr as core_exr
from ...core import outputs
from ...core import snow as core_snow
from ...shader_nodes import bend as bend_nodes
from ...shader_nodes import snow as snow_nodes
from .. import bend as bend_ops
from ..common import (ObjectsResult, changeable, edit_mode_text, in_edit_mode, kept_by_override_reason, nodes_modifiers,
                      output_folder, path_in_file, refuse_edit_mode, report_result)
from . import render
from .actors import ACTOR_TYPES, actor_specs, measure_actor
from .collection import SNOW_TAG, SnowInputError, is_snow_object, snow_objects
from .terrain import collection_triangles
from .trails import SWITCH_OFF_INSTEAD, trails_modifiers

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems


def stamp_params(scene: bpy.types.Scene) -> core_snow.StampParams:
    s = bridge.envfx_settings(scene).snow
    fps = scene.render.fps / scene.render.fps_base
    return core_snow.StampParams(rim_height=s.rim_height, rim_width=s.rim_width, fade_height=s.fade_height,
                                 refill_rate=s.refill_rate, fps=fps)


def _output_folder(path: str) -> str:
    """The Snow bake's Output Folder, refused when blank or relative to a .blend file never saved."""
    return output_folder(path, "The output folder",
                         "No output folder: set the Snow bake's Output Folder (scene.envfx.snow.output_dir)",
                         SnowInputError)


def _check_output_dir(path: str) -> str:
    path = _output_folder(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise SnowInputError(f"The output folder {path!r} is a file, not a folder: choose a folder",
                             cli=f"The output folder {path!r} is a file, not a folder: pass a folder as --out-dir")
    try:  # a file made and removed in it, or in its nearest existing parent (os.access says yes to root on /proc)
        outputs.check_folder(path)
    except outputs.OutputError:
        raise SnowInputError(f"The output folder {path!r} cannot be written: choose a writable folder",
                             cli=f"The output folder {path!r} cannot be written: pass a writable --out-dir") from None
    return path


def bake_inputs(scene: bpy.types.Scene, part: tuple[int, int] | None = None) -> tuple[str, list, dict]:
    """Validate the bake settings (raises SnowInputError / core_snow.SnowError; nothing changes). The snow meshes'
    data is read, so none may be in Edit Mode. ``part``: (first, last) frames of a share of the bake (a farm
    task's), within the bake's frames."""
    refuse_edit_mode(snow_objects(scene), SnowInputError)
    s = bridge.envfx_settings(scene).snow
    if s.frame_end < s.frame_start:
        raise SnowInputError(f"The frame range {s.frame_start}-{s.frame_end} is reversed: set End >= Start",
                             cli=f"The file's frame range {s.frame_start}-{s.frame_end} is reversed: pass --frames "
                             "START:END")
    frame = cast(bpy.types.IntProperty, bpy.types.Scene.bl_rna.properties["frame_current"])
    if s.frame_start < frame.hard_min or s.frame_end > frame.hard_max:  # a frame change would stop at the limit
        raise SnowInputError(f"The frame range {s.frame_start}-{s.frame_end} goes beyond Blender's frames "
                             f"({frame.hard_min} to {frame.hard_max}): set Start and End within them",
                             cli=f"The file's frame range {s.frame_start}-{s.frame_end} goes beyond Blender's frames "
                             f"({frame.hard_min} to {frame.hard_max}): pass --frames START:END within them")
    core_snow.BufferParams(resolution=int(s.buffer_resolution), size=float(s.buffer_size)).validate()
    if part is not None:
        try:
            core_snow.check_part(part, s.frame_start, s.frame_end - s.frame_start + 1, s.sequence)
        except core_snow.SnowError as exc:
            raise SnowInputError(f"{exc} (the Snow bake's Start and End)",
                                 cli=f"{exc} (the bake's frames: --frames, else the file's Snow bake Start and "
                                 f"End)") from None
    if s.framing == "FOLLOW" and s.pivot is None:
        raise SnowInputError("Follow-pivot framing needs a pivot: choose the player or camera to follow",
                             cli="--framing FOLLOW needs a pivot: pass --pivot OBJECT (the player or camera to "
                             "follow)")
    out = _check_output_dir(s.output_dir)
    # before the frames are stepped through: a bake that cannot fit on the disk is refused at once
    core_snow.check_disk_space(out, int(s.buffer_resolution), *bake_counts(scene, part))
    specs, skipped = actor_specs(scene, sizeless=True)  # sizes are measured at each baked frame
    return out, specs, skipped


def range_warning(scene: bpy.types.Scene, first: int, last: int, sequence: bool = True) -> str | None:
    """What a bake of frames ``first``..``last`` misses of ``scene``'s frame range, or None. Snow driven by a
    sequence holds the last baked frame after them and is untouched before them; by the final state only, it
    shows that state at every frame."""
    missed = []
    if last < scene.frame_end:
        missed.append(f"after frame {last} the snow holds frame {last}'s trails (what the actors do up to the "
                      f"scene's end, {scene.frame_end}, is not in it)")
    if first > scene.frame_start and sequence:
        missed.append(f"before frame {first} the snow is untouched (the scene starts at {scene.frame_start})")
    if not missed:
        return None
    return (f"The bake covers frames {first}-{last}, not the scene's {scene.frame_start}-{scene.frame_end}: "
            + "; ".join(missed) + ". To follow the actors all through, bake the scene's frames (the Snow bake's "
            "Start and End)")


def bake_counts(scene: bpy.types.Scene, part: tuple[int, int] | None = None) -> tuple[int, int]:
    """(the images the buffer bake writes, the frames it steps through): every frame, or the last only; of a
    ``part`` (first, last frames): its frames."""
    s = bridge.envfx_settings(scene).snow
    frames = s.frame_end - s.frame_start + 1
    if part is not None and s.sequence:
        return part[1] - part[0] + 1, frames
    return (frames if s.sequence else 1), frames


TRACK_PROBE = "EnvFX Snow Bake Probe"


def _add_track_probe(scene: bpy.types.Scene, names: list[str]) -> str:
    """A temporary empty in the scene that depends on the objects ``names`` (a Copy Transforms constraint each),
    so stepping the frames evaluates them wherever they are: an actor in a collection disabled in viewports,
    excluded from the view layer or hidden itself is not in the scene's evaluation, and its ``matrix_world``
    would keep the frame it was last evaluated at; as a dependency of a visible object it is evaluated. Returns
    the probe's name (``_remove_track_probe`` removes it)."""
    probe = bpy.data.objects.new(TRACK_PROBE, None)
    probe.hide_render = True
    for n in dict.fromkeys(names):
        con = cast(bpy.types.CopyTransformsConstraint, probe.constraints.new("COPY_TRANSFORMS"))
        con.target = bpy.data.objects[n]
    scene.collection.objects.link(probe)
    return probe.name


def _remove_track_probe(name: str) -> None:
    probe = bpy.data.objects.get(name)
    if probe is not None:
        bpy.data.objects.remove(probe)


def gather_tracks(scene: bpy.types.Scene, frames: list[int]
                  ) -> Generator[float, None, tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]:
    """Generator: step ``scene`` through ``frames`` and read the snow actors' bottom points, radii and depths (and
    the follow window's pivot) at each, as the bake reads them; yields progress, returns (the actors' names,
    tracks (F, A, 3), radii and depths (F, A), pivot track (F, 3) or None) of the actors with a size at some
    frame. The scene's frame and
    modifiers are restored. Raises SnowInputError when no actor has a size at any frame."""
    s = bridge.envfx_settings(scene).snow
    # every actor is measured at each frame (its size may be animated, and one without a size at the current
    # frame may have one at another), so the bake does not depend on the frame it was started at
    names = sorted(o.name for o in s.actors.all_objects if o.type in ACTOR_TYPES)
    tracks = np.zeros((len(frames), len(names), 3))
    radii, depths = np.zeros((len(frames), len(names))), np.zeros((len(frames), len(names)))
    pivot_track = np.zeros((len(frames), 3)) if s.framing == "FOLLOW" else None
    old_frame = scene.frame_current
    # the snow meshes' own trails are not needed to find the actors: switch them off while stepping
    muted = [(o.name, m.name) for o in snow_objects(scene) for m in trails_modifiers(o) if m.show_viewport]
    # these frame changes simulate nothing; switched on again afterwards, the trails start over
    with render.not_simulating(scene):
        for on, mn in muted:
            bpy.data.objects[on].modifiers[mn].show_viewport = False
        probe = _add_track_probe(scene, names + ([s.pivot.name] if pivot_track is not None else []))
        try:
            for i, f in enumerate(frames):
                scene.frame_set(f)
                depsgraph = bpy.context.evaluated_depsgraph_get()
                for j, n in enumerate(names):
                    obj = bpy.data.objects[n]
                    measured = measure_actor(obj, scene, depsgraph)
                    radius, depth, offset = (0.0, 0.0, 0.0) if isinstance(measured, str) else measured
                    radii[i, j], depths[i, j] = radius, depth
                    tracks[i, j] = np.array(obj.evaluated_get(depsgraph).matrix_world.translation) - (0.0, 0.0, offset)
                if pivot_track is not None:
                    pivot_track[i] = tuple(s.pivot.evaluated_get(depsgraph).matrix_world.translation)
                yield (i + 1) / len(frames)
        finally:
            _remove_track_probe(probe)
            scene.frame_set(old_frame)
            for on, mn in muted:
                bpy.data.objects[on].modifiers[mn].show_viewport = True
    sized = radii.max(axis=0) > 0  # an actor without a size at any baked frame is left out
    if not sized.any():
        raise SnowInputError(f"No actor of {s.actors.name!r} has a size at any frame of the bake "
                             f"({frames[0]}-{frames[-1]}): set their Snow Radius, or scale them up within "
                             f"the frames")
    kept = [n for n, keep in zip(names, sized) if keep]
    return kept, tracks[:, sized], radii[:, sized], depths[:, sized], pivot_track


def buffer_window(scene: bpy.types.Scene, specs: list, tracks: np.ndarray, radii: np.ndarray
                  ) -> tuple[core_snow.BufferParams, core_snow.HeightField | None, np.ndarray | None]:
    """(buffer parameters, the snow's rest surface, the occluders' triangles) of a bake of ``tracks`` (the
    actors' ``specs``; ``radii`` per frame and actor): the window over the snow (or the tracks) with Whole Area
    framing, the follow window's size otherwise."""
    s = bridge.envfx_settings(scene).snow
    snow = snow_objects(scene)
    # the snow at rest (its mesh data, no trails or bend), as the live trails' vertical fade sees it
    snow_tris = [bridge.rest_triangles(o) for o in snow if o.get(SNOW_TAG) == 0 and o.type == "MESH"]
    snow_tris = np.concatenate(snow_tris) if snow_tris else np.zeros((0, 3, 3))
    occ_tris = None
    # as the live trails read them (an actor among them only as an actor); None without an Occluders setting
    occluders = snow_nodes.occluders_read(scene, {n for n, *_ in specs})
    if occluders is not None:
        occ_tris = collection_triangles(scene, occluders)
        if not occ_tris.shape[0]:
            occ_tris = None
    if s.framing == "AREA":
        if snow_tris.shape[0]:
            pts = snow_tris.reshape(-1, 3)
        else:
            pts = tracks.reshape(-1, 3)
            pts = pts[np.isfinite(pts).all(axis=1)]  # (an actor is not there at a frame its place is not a number)
        lo, hi = pts[:, :2].min(0), pts[:, :2].max(0)
        margin = float(radii.max()) * 2.0
        size = float(max(hi - lo)) + 2.0 * margin
        origin = (float(lo[0] - margin), float(lo[1] - margin))
    else:
        size, origin = float(s.buffer_size), (0.0, 0.0)
    buf = core_snow.BufferParams(resolution=int(s.buffer_resolution), size=size, framing=s.framing, origin=origin,
                                 occluder_depth=float(s.thickness))
    surface = None
    if snow_tris.shape[0]:
        # rest surface of the snow on the buffer's grid (whole area), for the vertical fade
        lo_all = snow_tris.reshape(-1, 3)[:, :2].min(0)
        hi_all = snow_tris.reshape(-1, 3)[:, :2].max(0)
        texel = min(buf.texel, float(max(hi_all - lo_all)) / 64 or buf.texel)
        shape = (int(np.ceil((hi_all[1] - lo_all[1]) / texel)) + 1, int(np.ceil((hi_all[0] - lo_all[0]) / texel)) + 1)
        if shape[0] * shape[1] <= 64_000_000:
            z, _, _ = core_snow.rasterize_top(snow_tris, lo_all, texel, shape)
            surface = core_snow.HeightField(lo_all, texel, z)
    return buf, surface, occ_tris


def bake_job(scene: bpy.types.Scene, part: tuple[int, int] | None = None
             ) -> Generator[float, None, core_snow.BakeResult]:
    """Generator: gather the actors' paths over the frame range, bake the buffer into the output folder.
    Yields progress; returns a ``core.snow.BakeResult``. The scene's frame and modifiers are restored. ``part``
    (first, last frames): write only those frames' images (a farm task's share; ``core.snow.bake_job``): the
    actors' paths are gathered over every frame all the same (the window covers them all)."""
    out, specs, _ = bake_inputs(scene, part)
    s = bridge.envfx_settings(scene).snow
    gather = gather_tracks(scene, list(range(s.frame_start, s.frame_end + 1)))
    try:
        while True:
            try:
                done = next(gather)
            except StopIteration as stop:
                _names, tracks, radii, depths, pivot_track = stop.value
                break
            yield 0.3 * done
    finally:
        gather.close()  # (cancelled while stepping: the frame, modifiers and probe restored now)
    buf, surface, occ_tris = buffer_window(scene, specs, tracks, radii)
    job = core_snow.bake_job(tracks, radii, depths, stamp_params(scene), buf, frame_start=s.frame_start,
                             pivot_track=pivot_track, surface=surface, occluder_tris=occ_tris, out_dir=out,
                             sequence=s.sequence, unit_scale=bend_ops.unit_scale(scene), part=part)
    try:
        while True:
            yield 0.3 + 0.7 * next(job)
    except StopIteration as stop:
        refresh_buffer_groups(out)  # snow driven by this folder's bake shows it as it is now (its frame range)
        return stop.value
    finally:
        job.close()


def refresh_buffer_groups(folder: str | None = None) -> list[bpy.types.NodeTree]:
    """Bring the Snow from Bake (and Water Ripples from Bake) groups up to date with the bakes they show: a group
    saved by an older EnvFX is rebuilt in place, and every group takes its bake's frame range and window from the
    ``snow_buffer.json`` beside its images as it is now (a bake again into the same folder, over another range, is
    the bake the snow shows). ``folder``: only the groups showing that folder's bake. A group whose bake cannot be
    read, or now is a single image where it was a sequence (or the other way round), is left alone (Snow from Bake
    again sets it up). Returns the groups updated."""
    done = []
    for tree in list(bpy.data.node_groups):
        ripples = snow_nodes.is_ripples_group(tree)
        if not (ripples or snow_nodes.is_buffer_group(tree)) or tree.library is not None or "Buffer" not in tree.nodes:
            continue
        image = tree.nodes["Buffer"].inputs["Image"].default_value
        if image is None or image.library is not None:
            continue
        where = os.path.dirname(os.path.normpath(bpy.path.abspath(image.filepath)))
        if folder is not None and where != os.path.normpath(folder):
            continue
        try:
            meta = core_snow.read_buffer_metadata(os.path.join(where, "snow_buffer.json"))
        except (OSError, core_snow.SnowError):
            continue
        if bool(meta["sequence"]) != (image.source == "SEQUENCE"):
            continue
        if ripples:
            snow_nodes.ensure_ripples_group(image, meta, tree.nodes["Scale"].outputs[0].default_value)
        else:
            snow_nodes.ensure_buffer_group(image, meta)
        image.reload()
        done.append(tree)
    return done


# --- snow driven by the bake -----------------------------------------------------------------------------

BUFFER_MODIFIER = "EnvFX Snow Buffer"


def load_bake(scene: bpy.types.Scene, out_dir: str, result: ObjectsResult) -> tuple[bpy.types.Image, dict]:
    """(image, metadata) of the baked buffer in ``out_dir`` (default: the scene's output folder), checked and loaded
    (the image or the sequence, read as data); a warning about its frame range goes to ``result``. Raises
    SnowInputError saying what is wrong and what to do."""
    out_dir = _output_folder(out_dir or bridge.envfx_settings(scene).snow.output_dir)
    meta_path = os.path.join(out_dir, "snow_buffer.json")
    if not os.path.isfile(meta_path):
        raise SnowInputError(f"No baked buffer in {out_dir!r}: bake the interaction buffer first")
    try:
        meta = core_snow.read_buffer_metadata(meta_path)
    except core_snow.SnowError as exc:
        raise SnowInputError(f"{meta_path} is damaged or not an EnvFX bake: {exc}. Bake the interaction buffer "
                             f"again into {out_dir!r}, or choose the folder of an EnvFX bake") from None
    files = [f["file"] for f in meta["frames"] if "file" in f]
    if not files or not all(os.path.isfile(os.path.join(out_dir, f)) for f in files):
        raise SnowInputError(f"The bake in {out_dir!r} is incomplete (images missing): bake it again")
    for name in files:  # before Blender reads them: Blender 4.2 loops for ever on an EXR cut short in its header
        why = core_exr.file_damage(os.path.join(out_dir, name))
        if why is not None:
            raise SnowInputError(f"The bake in {out_dir!r} is damaged: {name}: {why}. Bake it again")
    if meta["sequence"] and meta["frames"][0]["frame"] < 0:
        raise SnowInputError(f"The bake in {out_dir!r} numbers its images from frame {meta['frames'][0]['frame']} "
                             f"({files[0]}), and Blender's image sequences cannot read frames below 0: bake from "
                             f"frame 0 or later, or only the final frame (Image Sequence off)")
    warning = range_warning(scene, meta["frames"][0]["frame"], meta["frames"][-1]["frame"], meta["sequence"])
    if warning is not None:
        result.warnings.append(warning)
    image = bpy.data.images.load(os.path.join(out_dir, files[0]), check_existing=True)
    image.filepath = path_in_file(os.path.join(out_dir, files[0]))
    image.reload()
    image.source = "SEQUENCE" if meta["sequence"] else "FILE"
    colorspace = cast(bpy.types.ColorManagedInputColorspaceSettings, image.colorspace_settings)  # an image has one
    colorspace.name = "Non-Color"  # pyright: ignore[reportAttributeAccessIssue] -- the stubs know only "NONE" (names come from the OCIO config)
    image.alpha_mode = "CHANNEL_PACKED"
    return image, meta


def drive_from_bake(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object], out_dir: str = "") -> ObjectsResult:
    """Offset ``objects`` (snow meshes) by the baked buffer in ``out_dir`` (default: the scene's output
    folder) instead of the live trails, which are switched off (linked objects are skipped). An empty folder
    setting, or one relative to a .blend file never saved, is refused as Bake Interaction Buffer refuses it."""

    result = ObjectsResult()
    targets = [o for o in changeable(objects, result) if o.type == "MESH" and is_snow_object(o)]
    if not targets:
        why = f" ({result.skipped_text()})" if result.skipped else ""
        raise SnowInputError(f"No snow mesh to drive{why}: generate snow first or select snow meshes")
    image, meta = load_bake(scene, out_dir, result)
    tree = snow_nodes.ensure_buffer_group(image, meta)
    for obj in targets:
        for mod in trails_modifiers(obj):
            mod.show_viewport = mod.show_render = False
        _use_group(obj, buffer_modifiers(obj), BUFFER_MODIFIER, tree)
        result.changed.append(obj.name)
    return result


RIPPLES_MODIFIER = "EnvFX Water Ripples"


def _use_group(obj: bpy.types.Object, mods: list[bpy.types.NodesModifier], name: str,
               tree: bpy.types.NodeTree) -> None:
    """Drive ``obj`` by ``tree`` through one modifier: the first of ``mods`` (its modifiers from another bake
    before) takes the new group and the others go (never two buffers on one mesh); without one, a modifier
    ``name`` is added before the bend."""
    if mods:
        mods[0].node_group = tree
        for extra in mods[1:]:
            obj.modifiers.remove(extra)
    else:
        bend_nodes.add_modifier_before_bend(obj, name, tree)


def water_ripples(scene: bpy.types.Scene, objects: Iterable[bpy.types.Object], out_dir: str = "",
                  scale: float = 1.0) -> ObjectsResult:
    """The buffer's fourth channel: raise and lower ``objects`` (water surfaces: any mesh) by the baked buffer's B
    (the water ripples, in scene units) times ``scale`` along world up, in the viewport and in renders; the
    normals follow the rippled surface. Each bake has its own group ("EnvFX Water Ripples"); a mesh rippled by
    another bake before is moved to this one. Linked objects and non-meshes are skipped."""
    result = ObjectsResult()
    targets = [o for o in changeable(objects, result) if o.type == "MESH"]
    if not targets:
        why = f" ({result.skipped_text()})" if result.skipped else ""
        raise SnowInputError(f"No mesh to ripple{why}: select the water surface (a mesh)")
    if not (np.isfinite(scale) and scale >= 0):
        raise SnowInputError(f"Ripple scale {scale} must be 0 or more")
    image, meta = load_bake(scene, out_dir, result)
    tree = snow_nodes.ensure_ripples_group(image, meta, scale)
    for obj in targets:
        _use_group(obj, ripples_modifiers(obj), RIPPLES_MODIFIER, tree)
        result.changed.append(obj.name)
    return result


def ripples_modifiers(obj: bpy.types.Object) -> list[bpy.types.NodesModifier]:
    """The object's modifiers that ripple it by a baked buffer's B (of any bake)."""
    return [m for m in nodes_modifiers(obj) if snow_nodes.is_ripples_group(m.node_group)]


def buffer_modifiers(obj: bpy.types.Object) -> list[bpy.types.NodesModifier]:
    """The object's modifiers that offset it by a baked buffer (of any bake)."""
    return [m for m in nodes_modifiers(obj) if snow_nodes.is_buffer_group(m.node_group)]


def drive_from_trails(objects: Iterable[bpy.types.Object]) -> ObjectsResult:
    """Back to the live trails: remove the buffer modifiers, switch the trails on again."""
    result = ObjectsResult()
    for obj in changeable(objects, result):
        mods = buffer_modifiers(obj)
        reason = kept_by_override_reason(obj, mods, "baked buffer", SWITCH_OFF_INSTEAD)
        if reason is not None:
            result.skipped[obj.name] = reason
            continue
        for mod in mods:
            obj.modifiers.remove(mod)
        for mod in trails_modifiers(obj):
            mod.show_viewport = mod.show_render = True
        (result.changed if mods else result.unchanged).append(obj.name)
    return result


# --- operators --------------------------------------------------------------------------------------------

class ENVFX_OT_snow_bake_buffer(progress.ModalJobOperator, bpy.types.Operator):
    """Bake the top-down interaction buffer (R snow, G grass sway, B ripples, A grass push-down) over the frame
    range into EXR images and a JSON file for the game"""

    bl_idname = "envfx.snow_bake_buffer"
    bl_label = "Bake Interaction Buffer"
    bl_options = {"REGISTER"}
    job_label = "Snow buffer bake"

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.scene is None:  # (a context without one: temp_override(scene=None), a script's own context)
            cls.poll_message_set("Needs a scene")
            return False
        names = in_edit_mode(snow_objects(context.scene))  # the bake reads the snow meshes' data
        if names:
            cls.poll_message_set(edit_mode_text(names))
        return not names

    def make_job(self, context: bpy.types.Context) -> Generator[float, None, core_snow.BakeResult] | None:
        scene = bridge.context_scene(context)
        try:
            bake_inputs(scene)
        except (SnowInputError, core_snow.SnowError, core_bend.BendError) as exc:  # (a bent actor is measured)
            self.report({"ERROR"}, str(exc))
            return None
        return bake_job(scene)

    def finish(self, context: bpy.types.Context, result: core_snow.BakeResult) -> set[OperatorReturnItems]:
        scene = bridge.context_scene(context)
        s = bridge.envfx_settings(scene).snow
        warning = range_warning(scene, s.frame_start, s.frame_end, s.sequence)
        if warning is not None:
            self.report({"WARNING"}, warning)
        assert result.metadata_path is not None  # a whole bake (not a part) into the Output Folder writes its JSON
        self.report({"INFO"}, f"Wrote {len(result.files)} image(s) and {os.path.basename(result.metadata_path)}")
        return {"FINISHED"}


class ENVFX_OT_snow_water_ripples(bpy.types.Operator):
    """Ripple the selected water surfaces by the baked interaction buffer's water channel (B), in the viewport and
    in renders"""

    bl_idname = "envfx.snow_water_ripples"
    bl_label = "Water Ripples from Bake"
    bl_options = {"REGISTER", "UNDO"}

    scale: bpy.props.FloatProperty(name="Scale", description="Height of the ripples: the baked B (scene units) "
                                   "times this", default=1.0, min=0.0, soft_max=10.0)

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.scene is None:  # (a context without one: temp_override(scene=None), a script's own context)
            cls.poll_message_set("Needs a scene")
            return False
        if not any(o.type == "MESH" for o in getattr(context, "selected_objects", []) or []):
            cls.poll_message_set("Select the water surface (a mesh)")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            result = water_ripples(bridge.context_scene(context), list(context.selected_objects), scale=self.scale)
        except (SnowInputError, OSError, RuntimeError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        report_result(self, result, "The bake ripples")
        return {"FINISHED"}


class ENVFX_OT_snow_drive_from_bake(bpy.types.Operator):
    """Offset the snow meshes by the baked interaction buffer (in the Output Folder) instead of the live trails,
    or back to the live trails"""

    bl_idname = "envfx.snow_drive_from_bake"
    bl_label = "Snow from Bake"
    bl_options = {"REGISTER", "UNDO"}

    use_bake: BoolProperty(name="Use Bake", description="On: the bake drives the snow; off: the live trails",
                           default=True)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = bridge.context_scene(context)
        selected = [o for o in getattr(context, "selected_objects", []) or [] if is_snow_object(o)]
        objects = selected or snow_objects(scene)
        if not self.use_bake:
            report_result(self, drive_from_trails(objects), "The live trails drive")
            return {"FINISHED"}
        try:
            result = drive_from_bake(scene, objects)
        except (SnowInputError, OSError, RuntimeError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        report_result(self, result, "The bake drives")
        return {"FINISHED"}
