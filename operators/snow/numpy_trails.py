"""The Numpy trails engine: the live trails' state held in numpy (``core.snow.TrailState``) by a frame handler
instead of a simulation zone, so a frame costs what this frame's paths touch, not the trails' history.

At each frame change (and dependency-graph update) of a scene whose Trails Engine is Numpy, ``show`` reads the
actors as the trails group stamps them (its ``SPECS_KEY``: the same names, keys, radii, depths and bottom offsets;
their evaluated world locations, as the modifier's driven "Actor i" inputs read them), books them in the scene's
track (frame -> actors), brings each trailed snow mesh's ``TrailState`` to the frame as playing the track from the
scene's start frame would (``TrailState.play``: the next frame is one step; a frame played before, scrubbing back,
seeks to a checkpoint and replays), and writes the shown trail (``max(rim - down, -GROUND_KEEP x thickness)``)
into the mesh's ``snow_trail`` attribute, which the trails group's numpy display reads (with the camera fade).

A frame not played in order (a jump ahead, a render of one frame) is stepped from the last frame before it that
the track holds, as a simulation steps across a gap. The track is saved in the file (the scene's ``TRACK_KEY``,
at every save): a reopened file, or a background render of any frame of it, recomputes the trails from the start
frame and gives what playing through gave. Each scene has its own track and states. Puffs and occluders are the
simulation zone's only (``trails.numpy_unsupported`` says so)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, cast

import bpy
import numpy as np

from ... import bridge
from ...core import snow as core_snow
from ...shader_nodes import snow as snow_nodes
from .bake import stamp_params
from .trails import trails_modifiers, trails_users

TRACK_KEY = "envfx_trail_track"  # a scene's custom property: its track, {frame: {keys, cur, radius, depth}}
NO_GROUND = 1.0e6  # the thickness the group gives a mesh without snow_thickness (never clamped to a ground)

Actors = tuple[tuple[int, ...], np.ndarray, np.ndarray, np.ndarray]  # (keys, bottom points (A, 3), radii, depths)


@dataclass
class _Snow:
    """One trailed snow mesh's numpy state."""
    state: core_snow.TrailState
    signature: tuple  # what the state was built for: the mesh, its vertex count, world matrix and the stamp's params
    floor: np.ndarray  # -GROUND_KEEP x thickness per vertex
    shown: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    written: tuple | None = None  # (last frame, frames, track version) last written into the mesh


_tracks: dict[str, dict[int, Actors]] = {}  # scene name -> frame -> the actors at that frame
_snow: dict[tuple[str, str], _Snow] = {}    # (scene name, object name) -> its state
_versions: dict[str, int] = {}  # scene name -> how often its track changed (what a state was last written for)


def forget() -> None:
    """After loading a file: the states and tracks were the other file's (the new file's tracks are read from its
    scenes when first needed)."""
    _tracks.clear()
    _snow.clear()
    _versions.clear()


def write_again() -> None:
    """After an undo or redo: the meshes hold the attribute of that step; every state is written again at the
    next update (the states and tracks stay)."""
    for held in _snow.values():
        held.written = None


def held() -> list[tuple[str, str]]:
    """(scene name, object name) of every snow mesh whose state the engine holds."""
    return sorted(_snow)


def drop_stale() -> list[tuple[str, str]]:
    """The states and tracks of scenes deleted since, and the states of snow objects deleted since, go (a 1M-vertex
    state holds tens of MB); returns the (scene, object) names of the states dropped. Cheap (a name lookup per
    state): ``show`` calls it at every update."""
    scenes, objects = bpy.data.scenes, bpy.data.objects
    gone = [key for key in _snow if scenes.get(key[0]) is None or objects.get(key[1]) is None]
    for key in gone:
        del _snow[key]
    for name in [n for n in set(_tracks) | set(_versions) if scenes.get(n) is None]:
        _tracks.pop(name, None)
        _versions.pop(name, None)
    return gone


def uses_numpy(scene: bpy.types.Scene) -> bool:
    """Whether ``scene``'s Trails Engine is Numpy."""
    return bridge.envfx_settings(scene).snow.trails_engine == "NUMPY"


def track(scene: bpy.types.Scene) -> dict[int, Actors]:
    """The scene's track (frame -> actors), read from the file the first time."""
    got = _tracks.get(scene.name)
    if got is None:
        got = {}
        saved: Any = scene.get(TRACK_KEY)  # (an IDPropertyGroup: the stubs do not know its items)
        for frame, entry in (saved.items() if saved is not None else ()):
            cur = np.asarray(entry["cur"], dtype=np.float64).reshape(-1, 3)
            got[int(frame)] = (tuple(int(k) for k in entry["keys"]), cur,
                               np.asarray(entry["radius"], dtype=np.float64).reshape(-1),
                               np.asarray(entry["depth"], dtype=np.float64).reshape(-1))
        _tracks[scene.name] = got = dict(sorted(got.items()))
    return got


def save_tracks() -> None:
    """Before a save: each Numpy-engine scene's track goes into the file (a reopened file plays it again)."""
    for scene in bpy.data.scenes:
        if scene.library is not None or scene.name not in _tracks:
            continue
        scene[TRACK_KEY] = {str(f): {"keys": list(keys), "cur": [float(v) for v in cur.ravel()],
                                     "radius": [float(v) for v in radius], "depth": [float(v) for v in depth]}
                            for f, (keys, cur, radius, depth) in _tracks[scene.name].items()}


def read_actors(scene: bpy.types.Scene, tree: bpy.types.NodeTree,
                depsgraph: bpy.types.Depsgraph | None = None) -> Actors:
    """The actors as the trails group ``tree`` stamps them now: their keys, bottom points (world location, from
    ``depsgraph`` when given, minus the bottom offset), radii and depths. An actor deleted since the group was
    built is left out (the group drops it at the next frame)."""
    specs = tree.get(snow_nodes.SPECS_KEY)
    keys, cur, radius, depth = [], [], [], []
    if specs is not None:
        for name, key, r, d, off in zip(specs["names"], specs["keys"], specs["radius"], specs["depth"],
                                        specs["offset"]):
            obj = bpy.data.objects.get(name)
            if obj is None:
                continue
            ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
            x, y, z = ev.matrix_world.translation
            keys.append(int(key))
            cur.append((x, y, z - off))
            radius.append(r)
            depth.append(d)
    return (tuple(keys), np.asarray(cur, dtype=np.float64).reshape(-1, 3), np.asarray(radius, dtype=np.float64),
            np.asarray(depth, dtype=np.float64))


def _same(a: Actors, b: Actors) -> bool:
    return (a[0] == b[0] and a[1].shape == b[1].shape and bool(np.all(np.abs(a[1] - b[1]) <= 1e-7))
            and np.array_equal(a[2], b[2]) and np.array_equal(a[3], b[3]))


def note_frame(scene: bpy.types.Scene, frame: int, actors: Actors) -> dict[int, Actors]:
    """Book the actors of ``frame`` in the scene's track. A frame booked before with other actors (an actor moved
    or resized by hand), or a frame new to the track, makes the frames after it another history: they go."""
    got = track(scene)
    old = got.get(frame)
    if old is not None and _same(old, actors):
        return got
    for f in [f for f in got if f > frame]:
        del got[f]
    got[frame] = actors
    _tracks[scene.name] = dict(sorted(got.items()))
    _versions[scene.name] = _versions.get(scene.name, 0) + 1
    return _tracks[scene.name]


def _mesh(obj: bpy.types.Object) -> bpy.types.Mesh:
    return cast(bpy.types.Mesh, obj.data)  # (numpy_snow lists meshes only)


def _world_points(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None) -> np.ndarray:
    ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    m = np.asarray(ev.matrix_world, dtype=np.float64)
    rest = bridge.get_positions(_mesh(obj)).astype(np.float64)
    return rest @ m[:3, :3].T + m[:3, 3]


def _snow_state(scene: bpy.types.Scene, obj: bpy.types.Object, params: core_snow.StampParams,
                depsgraph: bpy.types.Depsgraph | None) -> _Snow:
    mesh = _mesh(obj)
    ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    signature = (mesh.name, len(mesh.vertices), tuple(np.round(np.asarray(ev.matrix_world).ravel(), 7)), params)
    held = _snow.get((scene.name, obj.name))
    if held is not None and held.signature == signature:
        return held
    points = _world_points(obj, depsgraph)
    n = points.shape[0]
    thick = mesh.attributes.get("snow_thickness")
    buf = np.full(n, NO_GROUND, np.float32)
    if thick is not None and thick.data_type == "FLOAT" and thick.domain == "POINT":
        cast(bpy.types.FloatAttribute, thick).data.foreach_get("value", buf)
    held = _Snow(core_snow.TrailState(points, params), signature,
                 -core_snow.GROUND_KEEP * buf.astype(np.float64), np.zeros(n, np.float32))
    _snow[(scene.name, obj.name)] = held
    return held


def _write(obj: bpy.types.Object, values: np.ndarray) -> None:
    mesh = _mesh(obj)
    attr = mesh.attributes.get(snow_nodes.TRAIL_ATTRIBUTE)
    if attr is not None and (attr.data_type != "FLOAT" or attr.domain != "POINT"):
        mesh.attributes.remove(attr)
        attr = None
    if attr is None:
        attr = mesh.attributes.new(snow_nodes.TRAIL_ATTRIBUTE, "FLOAT", "POINT")
    cast(bpy.types.FloatAttribute, attr).data.foreach_set("value", values)
    mesh.update_tag()


def numpy_snow(scene: bpy.types.Scene, tree: bpy.types.NodeTree | None = None) -> list[bpy.types.Object]:
    """The scene's meshes whose trails the Numpy engine keeps: those carrying the scene's trails (a modifier on in
    the viewport or for renders), local, each with mesh data of its own."""
    tree = tree or snow_nodes.group_for(scene)
    if tree is None:
        return []
    return [obj for obj in trails_users(scene, tree)
            if obj.type == "MESH" and obj.library is None and obj.data.library is None
            and any(m.show_viewport or m.show_render for m in trails_modifiers(obj))]


def show(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> list[str]:
    """Bring the Numpy engine's trails of ``scene`` to its current frame (see the module docstring); returns the
    names of the snow meshes whose ``snow_trail`` was written (none when nothing changed, or the scene runs the
    simulation zone). Before the scene's start frame there is no trail. The states of deleted scenes and snow
    go (``drop_stale``)."""
    if _snow or _tracks:
        drop_stale()
    if not uses_numpy(scene):
        return []
    tree = snow_nodes.group_for(scene)
    if tree is None or tree.library is not None:
        return []
    objects = numpy_snow(scene, tree)
    if not objects:
        return []
    frame = scene.frame_current
    got = note_frame(scene, frame, read_actors(scene, tree, depsgraph))
    frames = [f for f in got if scene.frame_start <= f <= frame]
    params = stamp_params(scene)
    token = (frames[-1] if frames else None, len(frames), _versions.get(scene.name, 0))
    written = []
    for obj in objects:
        held = _snow_state(scene, obj, params, depsgraph)
        if held.written == token:
            continue
        state = held.state
        state.play(frames, got)
        changed = state.changed if held.written is not None else None
        if changed is None:
            held.shown[:] = np.maximum(state.rim - state.down, held.floor)
        elif changed.size:
            held.shown[changed] = np.maximum(state.rim[changed] - state.down[changed], held.floor[changed])
        _write(obj, held.shown)
        held.written = token
        written.append(obj.name)
    return written


def untracked_frames(scene: bpy.types.Scene) -> list[int]:
    """The frames of ``scene``'s range that its Numpy trails' track lacks (never played with the Numpy engine in
    this file, or played before a change of the actors' path): a render of a later frame steps across them."""
    got = track(scene)
    return [f for f in range(scene.frame_start, scene.frame_end + 1) if f not in got]


def warn_untracked_render(scene: bpy.types.Scene) -> None:
    """At render_init, for a Numpy-engine scene: a background render whose frame range the track does not cover
    warns on stderr, with what to do (a render recomputes the trails from the track, so a covered range renders
    as playing through showed, in any process)."""
    if not bpy.app.background or not numpy_snow(scene):
        return
    missing = untracked_frames(scene)
    if missing:
        print(f"EnvFX warning: the numpy snow trails of scene {scene.name!r} have no actors' track for {len(missing)} "
              f"frame(s) of its range (the first: {missing[0]}): a render steps across them from the last frame "
              f"played. Run bpy.ops.envfx.snow_trails_simulate() and save the file before rendering",
              file=sys.stderr, flush=True)
