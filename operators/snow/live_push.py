"""The live interaction buffer: grass push with no bake. The snow actors' paths over the scene's frame range are
read from their animation over the Snow bake's Start to End frames (``bake.gather_tracks``: the frames stepped
as the buffer bake steps them), the bake's
fields are stepped to the frame shown (``core.snow.LiveBuffer``: the same stepping as the bake, with checkpoints,
so scrubbing back replays from the last one) and written, as the buffer's push field (``core.wind.push_field``:
the slopes the grass reads beside G and A, one sample instead of a baked frame's three), into a float image,
"EnvFX Live Buffer", whose window a Snow-from-Bake group of its own (``shader_nodes.snow.ensure_buffer_group``)
gives the grass as a baked buffer's group does.

A frame handler (``show``, frame_change_pre: before the frame is evaluated, so the grass reads this frame's buffer
in the same evaluation) writes the image; frame_change_post checks the actors' evaluated positions against the
paths read (``verify``): an animation changed since is read again. The paths are read again whenever they are
needed and not held (a file opened, undo, a setting changed), so a reopened file or a render of any frame in a
fresh process shows what playing through shows: the buffer is recomputed from the actors' animation, never kept
from what a handler saw."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import bpy
import numpy as np

from ... import bridge
from ...core import snow as core_snow
from ...core import wind as core_wind
from ...shader_nodes import snow as snow_nodes
from ...shader_nodes import wind as wind_nodes
from ..common import colour_space
from .actors import actor_specs, measure_actor
from .bake import buffer_window, gather_tracks, stamp_params
from .collection import SnowInputError

LIVE_IMAGE = "EnvFX Live Buffer"
SCENE_KEY = "envfx_live_buffer_scene"  # on the image: the name of the scene whose live buffer it is
MOVED = 1e-5  # an actor this far (scene units) from its path read: the animation changed, the paths are read again


@dataclass
class _Live:
    """One scene's live buffer."""
    buffer: core_snow.LiveBuffer
    names: list[str]          # the actors (sized at some frame), in the tracks' order
    tracks: np.ndarray        # (F, A, 3) their bottom points per frame from the scene's start
    signature: tuple          # the settings the buffer was made for
    shown: tuple | None = None  # (frame index, image name) last written
    unverified: set = field(default_factory=set)  # actors whose evaluated position cannot be checked


_live: dict[str, _Live] = {}  # scene name -> its live buffer
_busy: list[bool] = [False]   # reading the paths: the frame changes it makes are not handled
_refused: dict[str, tuple] = {}  # scene name -> the settings its paths could not be read with (said once)


def forget() -> None:
    """After a file load: the held buffers were the other file's (read again when first shown)."""
    _live.clear()
    _refused.clear()


def changed() -> None:
    """After an undo or redo: the actors' animation may be another; the paths are read again when next shown."""
    _live.clear()
    _refused.clear()


def is_live_image(image: bpy.types.Image | None) -> bool:
    """Whether ``image`` is a scene's live interaction buffer."""
    return image is not None and image.get(SCENE_KEY) is not None


def live_image(scene: bpy.types.Scene) -> bpy.types.Image | None:
    """The live buffer image of ``scene``, or None."""
    return next((im for im in bpy.data.images if im.get(SCENE_KEY) == scene.name and im.library is None), None)


def uses_live(scene: bpy.types.Scene) -> bool:
    """Whether ``scene``'s grass push reads its live buffer."""
    s = bridge.envfx_settings(scene).wind
    return bool(s.grass_push) and is_live_image(s.push_buffer) and s.push_buffer.get(SCENE_KEY) == scene.name


def _signature(scene: bpy.types.Scene) -> tuple:
    s = bridge.envfx_settings(scene).snow
    return (s.frame_start, s.frame_end, scene.render.fps, scene.render.fps_base, stamp_params(scene),
            int(s.buffer_resolution), float(s.buffer_size), s.framing, s.pivot.name if s.pivot else None,
            s.actors.name if s.actors else None, float(s.thickness),
            tuple(sorted(o.name for o in s.actors.all_objects)) if s.actors else ())


def check(scene: bpy.types.Scene) -> list:
    """The live buffer's inputs checked (SnowInputError saying what to do; nothing changes): the actors, the
    stamp's and the buffer's settings. Returns the actors' specs (``actor_specs``)."""
    s = bridge.envfx_settings(scene).snow
    specs, _ = actor_specs(scene, sizeless=True)
    fps = scene.render.fps / scene.render.fps_base
    for label, value in (("Rim Height", s.rim_height), ("Rim Width", s.rim_width), ("Fade Height", s.fade_height),
                         ("Refill Rate", s.refill_rate), ("Buffer Size", s.buffer_size), ("Thickness", s.thickness),
                         ("frame rate", fps)):
        if not math.isfinite(float(value)):
            raise SnowInputError(f"The Snow setting {label} is {value}: set it to a number (live grass push "
                                 f"steps the interaction buffer with it)")
    try:
        stamp_params(scene).validate()
        core_snow.BufferParams(resolution=int(s.buffer_resolution), size=float(s.buffer_size)).validate()
    except core_snow.SnowError as exc:
        raise SnowInputError(f"{exc} (the Snow panel's settings, which the live grass push reads)") from None
    if s.framing == "FOLLOW" and s.pivot is None:
        raise SnowInputError("Follow-pivot framing needs a pivot: choose the player or camera to follow (the Snow "
                             "bake's Pivot), or set Framing to Whole Area")
    return specs


def _build(scene: bpy.types.Scene) -> _Live:
    """Read the actors' paths over the scene's frames and make its live buffer (SnowInputError; nothing kept)."""
    specs = check(scene)
    s = bridge.envfx_settings(scene).snow
    if s.frame_end < s.frame_start:
        raise SnowInputError(f"The Snow bake's frame range {s.frame_start}-{s.frame_end} is reversed: set End >= "
                             f"Start (live grass push steps those frames)")
    frames = list(range(s.frame_start, s.frame_end + 1))
    # the wind moves no actor: its modifiers are switched off while the frames are stepped (a 1M-vertex field in the
    # wind would be evaluated at every frame for nothing), and on again afterwards
    actors = {o.name for o in s.actors.all_objects} if s.actors is not None else set()
    muted = [(o.name, m.name) for o in scene.objects if o.name not in actors for m in o.modifiers
             if m.type == "NODES" and m.show_viewport and wind_nodes.is_wind_group(cast(bpy.types.NodesModifier,
                                                                                         m).node_group)]
    _busy[0] = True
    for on, mn in muted:
        bpy.data.objects[on].modifiers[mn].show_viewport = False
    try:
        gather = gather_tracks(scene, frames)
        while True:
            try:
                next(gather)
            except StopIteration as stop:
                names, tracks, radii, depths, pivot_track = stop.value
                break
    finally:
        _busy[0] = False
        for on, mn in muted:
            bpy.data.objects[on].modifiers[mn].show_viewport = True
    buf, surface, occ_tris = buffer_window(scene, specs, tracks, radii)
    try:
        live = core_snow.LiveBuffer(tracks, radii, depths, stamp_params(scene), buf, frame_start=s.frame_start,
                                    pivot_track=pivot_track, surface=surface, occluder_tris=occ_tris)
    except core_snow.SnowError as exc:  # the window the actors' paths and the settings make
        raise SnowInputError(f"{exc} (live grass push steps this buffer)") from None
    return _Live(live, names, tracks, _signature(scene))


def _held(scene: bpy.types.Scene) -> _Live | None:
    """The scene's live buffer, read again when its settings changed or it is not held (None while rendering, while
    the paths are read, or for a scene other than the context's: no frames can be stepped then)."""
    held = _live.get(scene.name)
    if held is not None and held.signature == _signature(scene):
        return held
    if _busy[0] or bpy.app.is_job_running("RENDER") or scene != bpy.context.scene:
        return held  # (the paths are read by stepping the context's scene, as the bake does)
    signature = _signature(scene)
    if _refused.get(scene.name) == signature:  # said once already; the grass is not pushed until it changes
        return None
    try:
        held = _live[scene.name] = _build(scene)
    except SnowInputError as exc:
        _live.pop(scene.name, None)
        _refused[scene.name] = signature
        print(f"EnvFX: the live grass push of scene {scene.name!r} is stopped: {exc}")
        return None
    _refused.pop(scene.name, None)
    return held


def _image_group(image: bpy.types.Image) -> bpy.types.NodeTree | None:
    return next((t for t in bpy.data.node_groups if snow_nodes.is_buffer_group(t) and "Buffer" in t.nodes
                 and cast(bpy.types.NodeSocketImage, t.nodes["Buffer"].inputs["Image"]).default_value == image), None)


def _write(scene: bpy.types.Scene, held: _Live, image: bpy.types.Image) -> bool:
    """The buffer of the scene's frame into ``image`` (and the window into its group); False when already there."""
    frame = scene.frame_current
    live = held.buffer
    i = live.index(frame)
    if held.shown == (i, image.name):
        return False
    res = int(live.buf.resolution)
    if tuple(image.size) != (res + 1, res + 1):
        image.scale(res + 1, res + 1)
    pixels = live.at(frame)
    # the buffer's push field (core.wind.push_field: the grass reads it in one sample instead of three)
    field = core_wind.push_field(pixels) if pixels is not None else np.zeros((res + 1, res + 1, 4), np.float32)
    cast("bpy.types.bpy_prop_array[float]", image.pixels).foreach_set(field.ravel())  # (typed as one float)
    image.update()
    if not image.get(wind_nodes.FIELD_KEY):  # a live image of an EnvFX before the field: the grass reads it so
        image[wind_nodes.FIELD_KEY] = 1
        wind_nodes.sync(scene)
    tree = _image_group(image)
    if tree is not None:
        origin = live.origin(frame)
        for label, value in zip(("Origin X", "Origin Y"), origin):
            sock = cast(bpy.types.NodeSocketFloat, tree.nodes[label].outputs[0])
            if sock.default_value != value:
                sock.default_value = value
    image.update_tag()
    held.shown = (i, image.name)
    return True


def show(scene: bpy.types.Scene) -> bool:
    """(frame_change_pre) Write the live buffer of ``scene``'s current frame into its image when its grass push
    reads it; returns whether the image was written."""
    if _busy[0] or not uses_live(scene):
        return False
    held = _held(scene)
    if held is None:
        return False
    return _write(scene, held, bridge.envfx_settings(scene).wind.push_buffer)


def verify(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> bool:
    """(frame_change_post) The actors as evaluated now against their paths read: when one moved (its animation
    was changed, or it was moved by hand) the paths are read again and the frame written again. Returns whether
    they were."""
    if _busy[0] or not uses_live(scene) or bpy.app.is_job_running("RENDER"):
        return False
    held = _live.get(scene.name)
    if held is None:
        return False
    i = held.buffer.index(scene.frame_current)
    if i < 0:
        return False
    moved = []
    for j, name in enumerate(held.names):
        obj = bpy.data.objects.get(name)
        if obj is None or name in held.unverified:
            continue
        measured = measure_actor(obj, scene, depsgraph)
        if isinstance(measured, str):
            continue
        ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
        bottom = np.array(ev.matrix_world.translation) - (0.0, 0.0, measured[2])
        if np.abs(bottom - held.tracks[i, j]).max() > MOVED:
            moved.append(name)
    if not moved:
        return False
    _live.pop(scene.name, None)
    try:
        fresh = _held(scene)
    except SnowInputError as exc:
        print(f"EnvFX: the live grass push could not read the actors again: {exc}")
        return False
    if fresh is None:
        return False
    # an actor the scene's evaluation does not move (hidden): its position here is not its path's; not checked
    for j, name in enumerate(fresh.names):
        obj = bpy.data.objects.get(name)
        if obj is not None and name in moved:
            ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
            measured = measure_actor(obj, scene, depsgraph)
            off = 0.0 if isinstance(measured, str) else measured[2]
            if np.abs(np.array(ev.matrix_world.translation) - (0.0, 0.0, off) - fresh.tracks[i, j]).max() > MOVED:
                fresh.unverified.add(name)
    _write(scene, fresh, bridge.envfx_settings(scene).wind.push_buffer)
    return True


def start(scene: bpy.types.Scene) -> bpy.types.Image:
    """Make (or bring up to date) ``scene``'s live buffer: read the actors' paths, make the image and its group,
    write the current frame. Returns the image. Raises SnowInputError (nothing changed) on bad input."""
    _live.pop(scene.name, None)
    held = _build(scene)  # (before anything is made: it raises on bad input)
    live = held.buffer
    res = int(live.buf.resolution)
    image = live_image(scene)
    if image is None:  # (the push field of a buffer: one texel wider and taller, core.wind.push_field)
        image = bpy.data.images.new(LIVE_IMAGE, res + 1, res + 1, alpha=True, float_buffer=True, is_data=True)
        image[SCENE_KEY] = scene.name
    image[wind_nodes.FIELD_KEY] = 1
    bridge_colorspace(image)
    image.alpha_mode = "CHANNEL_PACKED"
    origin = live.origin(live.frame_start)
    meta: dict[str, Any] = {"world_size": float(live.buf.size), "sequence": True,
                            "frames": [{"frame": live.frame_start, "origin": list(origin)},
                                       {"frame": live.frame_end, "origin": list(origin)}]}
    snow_nodes.ensure_buffer_group(image, meta)
    _live[scene.name] = held
    _write(scene, held, image)
    return image


def bridge_colorspace(image: bpy.types.Image) -> None:
    """The image holds data, not colour (no view transform between the fields and the grass)."""
    settings = colour_space(image)
    if settings.name != "Non-Color":
        settings.name = "Non-Color"  # pyright: ignore[reportAttributeAccessIssue] -- the stubs know only "NONE" (names come from the OCIO config)


def stop(scene: bpy.types.Scene) -> bool:
    """Remove ``scene``'s live buffer (its image and group); returns whether there was one."""
    _live.pop(scene.name, None)
    image = live_image(scene)
    if image is None:
        return False
    tree = _image_group(image)
    if tree is not None:
        bpy.data.node_groups.remove(tree)
    bpy.data.images.remove(image)
    return True


def push_params(scene: bpy.types.Scene, frame: int) -> core_wind.GrassPush | None:
    """The live push at ``frame`` as the numpy twin reads it, or None when the scene's push does not read its live
    buffer."""
    if not uses_live(scene):
        return None
    held = _held(scene)
    if held is None:
        return None
    live = held.buffer
    pixels = live.at(frame)
    res = int(live.buf.resolution)
    s = bridge.envfx_settings(scene).wind
    return core_wind.GrassPush(buffer=pixels if pixels is not None else np.zeros((res, res, 4), np.float32),
                               origin=live.origin(frame), size=float(live.buf.size), strength=s.push_strength,
                               sway=s.push_sway, started=pixels is not None)
