"""Velocity field files (.npz): save the fields a bake builds, load them in a later bake (checked against its
settings)."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np

from .cube import face_directions
from .field import field_from_velocity
from .params import GasGiantError, GasGiantParams, field_times


FIELD_FILE_FORMAT = "envfx-gasgiant-velocity-field"
FIELD_FILE_VERSION = 1
# the settings a velocity field depends on (stored in a saved field file and checked when it is loaded)
FIELD_KEYS = ("seed", "field_size", "velocity_factor", "vertical_bands", "bands", "band_speed", "band_power",
              "pole_attenuation", "noise_scale", "octaves", "falloff", "gain", "noise_speed", "w_offset", "vortices",
              "vortex_size", "vortex_size_variance", "vortex_strength", "vortex_band_threshold")


def field_settings(params: GasGiantParams) -> dict:
    """The settings a velocity field depends on (its file records them)."""
    return {k: (bool(v) if isinstance(v, (bool, np.bool_)) else v)
            for k, v in ((k, getattr(params, k)) for k in FIELD_KEYS)}


def save_fields(path: str, params: GasGiantParams, fields: dict) -> None:
    """Write velocity fields ``{time: Field}`` to ``path`` (.npz): format name, version, the field settings
    (JSON), the noise times, the noise normalisation and the float32 3D velocities (K, 6, n+2, n+2, 3).
    Written to a temporary file next to ``path`` and moved into place, so a failure leaves no partial file."""
    times = sorted(fields)
    vel = np.stack([fields[t].velocity for t in times]) if times else np.zeros((0,), np.float32)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".envfx_field_", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, format=np.array(FIELD_FILE_FORMAT), version=np.array(FIELD_FILE_VERSION),
                     settings=np.array(json.dumps(field_settings(params), sort_keys=True)),
                     field_size=np.array(params.field_size), times=np.array(times, dtype=np.float64),
                     noise_norm=np.array(fields[times[0]].noise_norm if times else 0.0), velocity=vel)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def check_field_save_path(path: str) -> None:
    if not path.lower().endswith(".npz"):
        raise GasGiantError(f"Save velocity field {path!r}: use a file name ending in .npz")
    full = os.path.abspath(path)
    if os.path.isdir(full):
        raise GasGiantError(f"Save velocity field {full!r} is a folder: give a file name ending in .npz")
    folder = os.path.dirname(full)
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise GasGiantError(f"Save velocity field: folder {folder!r} does not exist or cannot be written: "
                            f"choose another place")


def check_field_files(params: GasGiantParams) -> dict:
    """Check the field file to load (returns its fields, ``{}`` without one) and the place to save one; raises
    ``GasGiantError``."""
    loaded = load_fields(params.load_field, params) if params.load_field else {}
    if params.save_field:
        check_field_save_path(params.save_field)
    keys, _ = field_times(params)
    if loaded and not any(k * params.time_step in loaded for k in keys):
        raise GasGiantError(f"Velocity field file {params.load_field!r} holds fields for noise times "
                            f"{sorted(loaded)}, none of which this bake uses: use the Time Step it was saved with, "
                            f"or save a new field")
    return loaded


def load_fields(path: str, params: GasGiantParams) -> dict:
    """The fields ``{time: Field}`` saved by ``save_fields``; raises ``GasGiantError`` (saying what to do) when
    the file is missing, unreadable, of another format or version, or built with other settings or size."""
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise GasGiantError(f"Velocity field file {full!r} does not exist: choose a file saved by an earlier "
                            f"bake (Save Velocity Field), or clear Load Velocity Field")
    try:
        with np.load(full, allow_pickle=False) as z:
            kind = str(z["format"])
            version = int(z["version"])
            if kind != FIELD_FILE_FORMAT:
                raise ValueError(f"format {kind!r}")
            if version != FIELD_FILE_VERSION:
                raise GasGiantError(f"Velocity field file {full!r} has version {version}, this EnvFX reads "
                                    f"version {FIELD_FILE_VERSION}: save the field again")
            settings = json.loads(str(z["settings"]))
            size = int(z["field_size"])
            times = np.asarray(z["times"], dtype=np.float64)
            norm = float(z["noise_norm"])
            want = field_settings(params)
            if size != params.field_size:
                raise GasGiantError(f"Velocity field file {full!r} holds a {size}-per-face field but the settings "
                                    f"ask for {params.field_size}: set Velocity Field to {size}, or save a new "
                                    f"field")
            diff = [f"{k}: {settings.get(k)!r} in the file, {want[k]!r} now" for k in FIELD_KEYS
                    if settings.get(k) != want[k]]
            if diff:
                raise GasGiantError(f"Velocity field file {full!r} was built with other settings ("
                                    f"{'; '.join(diff)}): use the file's settings, or save a new field")
            vel = z["velocity"]
            shape = (len(times), 6, size + 2, size + 2, 3)
            if vel.shape != shape or vel.dtype != np.float32 or not np.all(np.isfinite(vel)):
                raise ValueError(f"velocity array {vel.shape} {vel.dtype}, expected {shape} float32")
    except GasGiantError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise GasGiantError(f"Velocity field file {full!r} cannot be read ({exc}): it is not an intact EnvFX "
                            f"velocity field file; save the field again") from None
    d = face_directions(size, pad=1)
    return {float(t): field_from_velocity(vel[k], norm, d) for k, t in enumerate(times)}
