"""Rendering the live snow trails: Simulate Trails, and the warning of a background render that would show none.

The live trails (and the actors' snow coverage) are Blender simulation zones. Blender steps a simulation only while
the scene's own frames advance one by one (playback, ``frame_set``), keeps each simulated frame in memory, and a
render reads those frames: it never simulates by itself. So a render of a frame that was not simulated in this
session shows the snow as it was last simulated (untouched snow in a fresh process: ``blender -b file.blend -a``).
``simulate_job`` does what playing the timeline from its start does, so a render made after it shows the trails.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

import bpy

from ... import bridge, progress
from .trails import trails_modifiers

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

# scene (its pointer: renaming keeps it) -> the last frame Blender simulated the scene's trails to, one frame at a
# time from its start frame, in this session (as far as EnvFX can tell: frame changes seen one by one from the start
# frame while the trails are on in the viewport; a change of the scene on its start frame makes Blender restart the
# simulation there). Forgotten when a file is opened (``forget``): a new file has simulated nothing.
_simulated: dict = {}
_paused: list = []  # while not empty, frame changes are not simulations (the buffer bake steps with the trails off)


class SimulateInputError(ValueError):
    """Bad input for Simulate Trails (nothing changed)."""


def live_trailed(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """The scene's objects whose live trails a render shows (a trails modifier on for renders)."""
    return [obj for obj in scene.objects if any(m.show_render for m in trails_modifiers(obj))]


def hidden_in_viewport(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """The scene's objects with live trails on for renders but off in the viewport: Blender simulates only what the
    viewport evaluates, so frames stepped there simulate nothing of them."""
    return [obj for obj in scene.objects
            if any(m.show_render and not m.show_viewport for m in trails_modifiers(obj))]


def simulate_job(scene: bpy.types.Scene, end: int | None = None) -> Generator[float, None, int]:
    """A job generator that steps ``scene`` from its start frame to ``end`` (default: its end frame) one frame at
    a time, as playback does, so Blender simulates and keeps every frame of the trails; the playhead stays on the
    last frame (on the start frame, any change of the scene, an output path, makes Blender restart the simulation,
    so going back there would lose the trails at the next change). Its result is the number of frames simulated.
    Bad input raises ``SimulateInputError`` here, before anything changes."""
    start = scene.frame_start
    end = scene.frame_end if end is None else int(end)
    if not live_trailed(scene):
        raise SimulateInputError(f"Scene {scene.name!r} has no snow with live trails to simulate: Add Trails to a "
                                 f"snow mesh first (snow driven by a bake needs no simulation)")
    if end < start:
        raise SimulateInputError(f"The end frame {end} is before the scene's start frame {start}: simulate up to a "
                                 f"frame at or after {start}")
    off = hidden_in_viewport(scene)
    if off:
        raise SimulateInputError(f"The trails of {', '.join(o.name for o in off)} are off in the viewport (on for "
                                 f"renders): Blender simulates only what the viewport evaluates; switch their trails "
                                 f"modifier on in the viewport (its monitor icon), then Simulate Trails")
    return _steps(scene, start, end)


def _steps(scene: bpy.types.Scene, start: int, end: int) -> Generator[float, None, int]:
    for frame in range(start, end + 1):
        scene.frame_set(frame)
        yield (frame - start + 1) / (end - start + 1)
    return end - start + 1


def note_frame(scene: bpy.types.Scene) -> None:
    """frame_change_post: a frame reached one by one from the scene's start frame extends what Blender simulated
    (a jump ahead does not: Blender steps once across the gap; going back is reading what was simulated)."""
    if _paused:
        return
    frame, last = scene.frame_current, _simulated.get(scene.as_pointer())
    if last is None:
        if frame == scene.frame_start:
            _simulated[scene.as_pointer()] = frame
    elif frame == last + 1:
        _simulated[scene.as_pointer()] = frame


def note_update(scene: bpy.types.Scene) -> None:
    """depsgraph_update_post: a change of the scene on its start frame makes Blender restart the simulation
    there (the trails read the scene: its camera, its settings), dropping what was simulated."""
    if scene.as_pointer() in _simulated and scene.frame_current == scene.frame_start:
        _simulated[scene.as_pointer()] = scene.frame_start


def forget(scene: bpy.types.Scene | None = None) -> None:
    """Nothing is simulated any more: in ``scene`` (its trails switched off and on: Blender starts them again), or
    in every scene (another file opened)."""
    if scene is None:
        _simulated.clear()
    else:
        _simulated.pop(scene.as_pointer(), None)


@contextlib.contextmanager
def not_simulating(scene: bpy.types.Scene) -> Iterator[None]:
    """While the block runs, frame changes are not taken for simulation (the buffer bake steps the frames with the
    trails switched off); afterwards ``scene``'s trails count as not simulated (switched on again, Blender starts
    them from scratch)."""
    _paused.append(scene)
    try:
        yield
    finally:
        _paused.pop()
        forget(scene)


def simulated_up_to(scene: bpy.types.Scene) -> int | None:
    """The last frame Blender simulated ``scene`` to from its start frame in this session, or None."""
    return _simulated.get(scene.as_pointer())


def warn_unsimulated_render(scene: bpy.types.Scene) -> None:
    """At render_init: a render in background mode (``blender -b file.blend -a`` / ``-f N``) of a scene with live
    trails that were not simulated in this process warns on stderr, with what to do: the render shows the snow as
    last simulated, in a fresh process untouched."""
    if not bpy.app.background:
        return  # in the UI the timeline is played before rendering; the README says what a render shows
    try:
        trailed = live_trailed(scene)
        reached = None if hidden_in_viewport(scene) else simulated_up_to(scene)
        if not trailed or (reached is not None and reached >= scene.frame_end):
            return
        names = ", ".join(obj.name for obj in trailed[:5]) + (" ..." if len(trailed) > 5 else "")
        got = f"simulated up to frame {reached}" if reached is not None else "not simulated in this process"
        print(f"EnvFX warning: the live snow trails of {names} in scene {scene.name!r} are {got}: this render "
              f"shows the snow as Blender last simulated it (untouched in a fresh process), unless the trails were "
              f"baked with Blender's Bake (the trails modifier's Bake panel). Run "
              f"bpy.ops.envfx.snow_trails_simulate() before rendering, or bake them, or drive the snow from Bake "
              f"Interaction Buffer (Snow from Bake)", file=sys.stderr, flush=True)
    except Exception as exc:  # a render must never fail because of this check
        print(f"EnvFX: the trails check before rendering failed: {exc}", file=sys.stderr)


class ENVFX_OT_snow_trails_simulate(progress.ModalJobOperator, bpy.types.Operator):
    """Simulate the live snow trails from the scene's start frame to its end frame, as playing the timeline does,
    so that renders (F12, Render Animation, a background render in this session) show them"""

    bl_idname = "envfx.snow_trails_simulate"
    bl_label = "Simulate Trails"
    bl_options = {"REGISTER"}
    job_label = "Simulate trails"

    def make_job(self, context: bpy.types.Context) -> Generator[float, None, int] | None:
        try:
            return simulate_job(bridge.context_scene(context))
        except SimulateInputError as exc:
            self.report({"ERROR"}, str(exc))
            return None

    def finish(self, context: bpy.types.Context, result: int) -> set[OperatorReturnItems]:
        self.report({"INFO"}, f"Simulated {result} frame(s) of the snow trails: renders of them show the trails (the "
                              f"playhead stays on the last one: on the start frame, a change of the scene restarts "
                              f"the simulation)")
        return {"FINISHED"}
