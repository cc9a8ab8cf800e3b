"""A gas-giant sequence baked in parts: the simulation's state at the end of a frame, saved by one part and read by
the next, so a part (a farm task) bakes only its frames and its outputs are those of one bake of every frame.

The state is everything a frame carries to the next: the particles (``uv``, ``face``, ``col``, in their current
order: the bake sorts them), the texture (``image``), the iteration count (it times the respawns, sorts and blurs)
and the noise time, plus the flow map's statistics over the frames so far (``gasgiant.json`` reports them for the
whole sequence). Everything else is made again from the settings: the start colours, the centre colour, the velocity
fields (built from the settings and the time; a field file is read again), and every random draw, which is seeded
by (seed, batch, generation, block) and keeps no stream between frames. The settings are stored with the state, and
a state of other settings is refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from typing import TYPE_CHECKING

import numpy as np

from .params import GasGiantError, GasGiantParams

if TYPE_CHECKING:  # annotations only (simulation and metadata do not need this module)
    from .metadata import _FlowStats
    from .simulation import Simulation

STATE_VERSION = 1
# settings that do not change what a bake computes: the threads (the bake is the same on any number), and the paths
# of the field files (a farm maps them per worker; the fields are the same)
_NEUTRAL = ("threads", "save_field", "load_field")


def state_path(folder: str, frame: int) -> str:
    """The state at the end of ``frame`` (1-based) in ``folder``."""
    return os.path.join(folder, f"gasgiant_state_{frame:04d}.npz")


def _settings(params: GasGiantParams) -> str:
    """The settings as text to compare (arrays, such as a palette image, by their shape and a hash of their bytes)."""
    values = {}
    for f in dataclasses.fields(params):
        if f.name in _NEUTRAL:
            continue
        value = getattr(params, f.name)
        if isinstance(value, np.ndarray):
            value = [list(value.shape), str(value.dtype), hashlib.sha256(np.ascontiguousarray(value).data).hexdigest()]
        values[f.name] = value
    return json.dumps(values, sort_keys=True, default=repr)


def save_state(path: str, params: GasGiantParams, frame: int, sim: Simulation, stats: _FlowStats) -> None:
    """Write the state of ``sim`` after ``frame`` whole or not at all (a temporary file beside ``path``, renamed)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".envfx-", suffix=".npz.tmp", dir=folder)
    except OSError as exc:
        raise GasGiantError(f"Cannot write the bake's state into {folder!r} ({exc.strerror or exc}): choose a "
                            f"writable folder") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, version=STATE_VERSION, settings=_settings(params), frame=frame, uv=sim.uv, face=sim.face,
                     col=sim.col, image=sim.image, iteration=sim.iteration, time=sim.time,
                     noise_norm=sim.field.noise_norm, max_speed=stats.max_speed, clamped=stats.clamped,
                     texels=stats.texels)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def check_state(path: str, params: GasGiantParams, frame: int) -> None:
    """Refuse (GasGiantError, what to do) a state that is missing, damaged, of another frame or of other settings;
    reads only its small entries."""
    _read(path, params, frame, ("version", "frame", "settings"))


def load_state(path: str, params: GasGiantParams, frame: int) -> dict:
    """The state saved after ``frame`` by a bake of ``params`` (checked as ``check_state``)."""
    state = _read(path, params, frame, None)
    n, texels = params.particles, 6 * params.cubemap_size ** 2
    if state["uv"].shape != (n,) or state["image"].shape != (texels, 4):
        raise GasGiantError(f"The saved state {path!r} does not fit these settings: bake the part that writes it "
                            f"again")
    return state


def _read(path: str, params: GasGiantParams, frame: int, keys) -> dict:
    if not os.path.isfile(path):
        raise GasGiantError(f"No saved state {path!r} of frame {frame}: bake the frames up to {frame} first (the "
                            f"part before this one)")
    try:
        with np.load(path, allow_pickle=False) as data:
            state = {k: data[k] for k in (keys or data.files)}
    except (OSError, ValueError, EOFError, KeyError) as exc:
        raise GasGiantError(f"The saved state {path!r} cannot be read ({exc}): bake the part that writes it "
                            f"again") from None
    if int(state["version"]) != STATE_VERSION:
        raise GasGiantError(f"The saved state {path!r} was written by another EnvFX version: bake the part that "
                            f"writes it again")
    if int(state["frame"]) != frame:
        raise GasGiantError(f"The saved state {path!r} is of frame {int(state['frame'])}, not {frame}: bake the "
                            f"part that writes it again")
    if str(state["settings"]) != _settings(params):
        raise GasGiantError(f"The saved state {path!r} was baked with other settings: bake the frames before "
                            f"this part again with these settings")
    return state


def restore(sim: Simulation, stats: _FlowStats, state: dict) -> None:
    """Put a loaded ``state`` into a new ``Simulation`` and flow statistics (in place)."""
    sim.uv[:] = state["uv"]
    sim.face[:] = state["face"]
    sim.col[:] = state["col"]
    sim.image[:] = state["image"]  # (in place: the 64-bit view the particles write through stays valid)
    sim.iteration = int(state["iteration"])
    sim.time = float(state["time"])
    stats.max_speed = float(state["max_speed"])
    stats.clamped = int(state["clamped"])
    stats.texels = int(state["texels"])
