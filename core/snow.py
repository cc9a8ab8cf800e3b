"""Deep snow, pure numpy: the trail stamp, the top-down interaction buffer bake and snow-cover generation.

The write-up (Slime Rancher 2, Powderfall Bluffs) draws interaction particles additively into a top-down RGBA
float buffer: R ground/snow (negative down, positive rim), G grass sway (a nudge starts a wobble between +G and
-G), B water ripples, A grass push-down. Snow "topper" meshes generated offline from the terrain are offset
by R, pushed down under an actor and up into a rim around the trail.

Stamp (one actor, one frame). Between two frames an actor moves from ``a`` to ``b`` (its bottom point). A
snow point ``p`` is stamped by the segment ``a -> b`` (a capsule, so fast actors leave continuous trails):
``t`` = the clamped projection of ``p`` on the segment in XY, ``d`` = the XY distance to ``a + t (b - a)``,
``u = d / radius``::

    cover(u) = max(0, 1 - u^2)                                 (1 at the centre, 0 at the edge)
    down(u)  = depth * cover(u) * w
    rim(u)   = rim_height * depth * max(0, 1 - ((u - 1) / rim_width)^2)^2 * w

``w`` is the vertical fade: with ``h`` the height of the actor's bottom (at ``t``) above the snow point,
``w = clamp(1 - max(0, h, -h - 2 radius) / fade_height, 0, 1)``: an actor far above (or far below, under a
land bridge) does not stamp.

Which actor stamps a point: the actor whose path segment is nearest to the point in XY (what the geometry
nodes' Sample Nearest on edges finds); several actors' trails still add up over time through the state.

State (persistence, per point, both >= 0)::

    keep  = clamp(1 - refill_rate / fps, 0, 1)                 (refill_rate: per second; ~e^-rate left after 1 s)
    down' = max(keep * down, down_s)
    rim'  = max(keep * rim * (1 - cover_s * w),                (pushing down flattens an older rim)
                rim_s * clamp(1 - keep * down / depth, 0, 1))  (no new rim inside an existing trail)
    R     = rim' - down'                                       (world Z offset of the snow surface)

Occluders hold the snow down: ``down' = max(down', occluder_depth)`` where an occluder covers the point from
above (top-down footprint).

Water ripples (B, bake only) are the water surface's signed height in scene units. The grass nudge (the rise of
an actor's cover at a texel this frame, 0..1) pushes the water there down by ``0.5 * depth * nudge``, a
displacement of the surface (no velocity), which then spreads as damped rings by the wave equation at
``ripple_speed`` scene units per second. A displacement is what the wave equation carries unchanged as the grid
is refined, so the same actor gives about the same ripple heights at any resolution, and heights scale with the
scene (a scene ten times larger, ripple speed included, has ten times taller ripples).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

from . import exr

CHANNELS = ("R", "G", "B", "A")
FRAMINGS = ("AREA", "FOLLOW")
MAX_RESOLUTION = 8192
DEFAULT_VERTEX_BUDGET = 2_000_000


class SnowError(ValueError):
    """Invalid snow input; the message says what is wrong and what to do."""


# a bake writes into "<out_dir>/.envfx_snow_<pid>_<random>" and moves the files into place at the end
TEMP_PREFIX = ".envfx_snow_"
_STARTED = time.time()  # no temporary folder of this process is older than this


# the longest a float can print in the JSON (repr of -2.2250738585072014e-308) and the lowest frame Blender has
_LONGEST_FLOAT = -1.2345678901234567e-100
_LOWEST_FRAME = -1048574


def _json_frame_bytes(basename: str) -> int:
    """At most how many bytes one frame's entry adds to the bake's JSON (``buffer_metadata``'s "frames", written
    with indent=1): its number, origin, image name and the engines' uv offsets, every float at its longest."""
    from . import bend_engines

    entry = {"frame": _LOWEST_FRAME, "origin": [_LONGEST_FLOAT] * 2,
             "file": f"{basename}_{_LOWEST_FRAME:04d}.exr",
             "uv_offset": {e: [_LONGEST_FLOAT] * 2 for e in bend_engines.ENGINES}}
    return len(json.dumps({"frames": [entry, entry]}, indent=1)) - len(json.dumps({"frames": [entry]}, indent=1))


def bake_output_bytes(resolution: int, images: int, frames: int | None = None, basename: str = "snow_buffer") -> int:
    """At most how many bytes a bake writes: ``images`` uncompressed float RGBA EXRs of ``resolution``^2 texels
    (16 bytes a texel, 16 a scanline for its offset and block header, a header of about 350 bytes) and the JSON,
    which lists every one of the ``frames`` stepped through (default ``images``; more with only the final frame
    written): at most ``_json_frame_bytes`` a frame, and 4 KiB for the rest."""
    res = int(resolution)
    frames = int(images) if frames is None else int(frames)
    per_image = res * res * 16 + 16 * res + 512
    return int(images) * per_image + max(frames, int(images)) * _json_frame_bytes(basename) + 4096


def _size_text(n: int) -> str:
    """A byte count for messages: GB from 1 GiB up, MB below (a small bake is not "0.00 GB")."""
    return f"{n / 2**30:,.2f} GB" if n >= 2**30 else f"{n / 2**20:,.1f} MB"


def check_disk_space(out_dir: str, resolution: int, images: int, frames: int | None = None,
                     basename: str = "snow_buffer") -> int:
    """Refuse a bake whose files would not fit on the disk of ``out_dir`` (or of its nearest existing parent);
    returns the estimate in bytes (``bake_output_bytes``). The temporary folders a killed bake left there
    (``stale_temp_folders``) count as free: the bake removes them before it writes."""
    need = bake_output_bytes(resolution, images, frames, basename)
    probe = os.path.abspath(out_dir)
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    free = shutil.disk_usage(probe).free
    if need > free and os.path.isdir(out_dir):
        free += sum(_folder_bytes(path) for path in stale_temp_folders(out_dir))
    if need > free:
        res = int(resolution)
        raise SnowError(f"The bake would write up to {_size_text(need)} ({images} frame(s) of {res}x{res} float "
                        f"EXR) but only {_size_text(free)} is free in {out_dir!r}: bake fewer frames, a lower "
                        f"resolution or only the final frame, or free disk space")
    return need


_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_ERROR_ACCESS_DENIED = 5
_STILL_ACTIVE = 259


def _windows_api():
    """(kernel32, get_last_error) through ctypes, Windows only (tests pass a fake on any system)."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
    kernel32.GetExitCodeProcess.restype = wintypes.BOOL
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    return kernel32, ctypes.get_last_error


def _pid_running_windows(pid: int) -> bool:
    """Windows: open the process to ask for its exit code. (``os.kill(pid, 0)`` is no probe there: signal 0 is
    CTRL_C_EVENT, sent to the console process group, and would interrupt console programs.)"""
    import ctypes

    if not 0 < pid <= 0xFFFFFFFF:
        return False  # not a Windows process id
    kernel32, last_error = _windows_api()
    handle = kernel32.OpenProcess(_PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return last_error() == _ERROR_ACCESS_DENIED  # it exists but is not ours to open: keep its folder
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True  # no way to tell: keep its folder
        return code.value == _STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def _folder_bytes(path: str) -> int:
    total = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _pid_running(pid: int) -> bool:
    if os.name == "nt":
        return _pid_running_windows(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # someone else's process, or no way to tell: keep its folder
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # Linux: a killed process not yet reaped is a zombie
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def remove_stale_temp(out_dir: str) -> list:
    """Remove the temporary folders a killed bake left in ``out_dir`` (returns their names): only folders EnvFX
    named ``.envfx_snow_*``, older than this process and not of a process still running."""
    removed = []
    for path in stale_temp_folders(out_dir):
        try:
            shutil.rmtree(path)
        except OSError:
            continue
        removed.append(os.path.basename(path))
    return removed


def stale_temp_folders(out_dir: str) -> list:
    """The paths of the temporary folders a killed bake left in ``out_dir`` (what ``remove_stale_temp``
    removes)."""
    stale = []
    try:
        entries = list(os.scandir(out_dir))
    except OSError:
        return stale
    for entry in entries:
        if not entry.name.startswith(TEMP_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        pid = entry.name[len(TEMP_PREFIX):].split("_", 1)[0]
        if pid.isdigit() and (int(pid) == os.getpid() or _pid_running(int(pid))):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime >= _STARTED:
                continue
        except OSError:
            continue
        stale.append(entry.path)
    return stale


# --- stamp ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StampParams:
    rim_height: float = 0.35   # rim peak, as a fraction of the actor's depth
    rim_width: float = 0.5     # rim half-width, as a fraction of the actor's radius
    fade_height: float = 0.5   # vertical fade distance (scene units)
    refill_rate: float = 0.0   # per second: ~e^-rate of a trail is left after a second (0 = stay)
    fps: float = 24.0

    def validate(self) -> "StampParams":
        for name in ("rim_height", "rim_width", "fade_height", "refill_rate", "fps"):
            v = float(getattr(self, name))
            if not math.isfinite(v) or v < 0:
                raise SnowError(f"Snow {name} is {v}: use a finite number of 0 or more")
        if self.rim_width <= 0 or self.fade_height <= 0 or self.fps <= 0:
            raise SnowError("Snow rim_width, fade_height and fps must be greater than 0")
        return self

    @property
    def keep(self) -> float:
        return float(np.clip(1.0 - self.refill_rate / self.fps, 0.0, 1.0))


def stamp_profile(u, depth=1.0, rim_height=0.35, rim_width=0.5):
    """(down, rim, cover) of a stamp at normalised distance ``u = d / radius`` (no vertical fade)."""
    u = np.asarray(u, dtype=np.float64)
    cover = np.maximum(0.0, 1.0 - u * u)
    q = np.maximum(0.0, 1.0 - ((u - 1.0) / rim_width) ** 2)
    rim = rim_height * depth * q * q
    return depth * cover, rim, cover


def reach(radius, rim_width) -> np.ndarray:
    """Distance from the path beyond which a stamp does nothing."""
    return np.asarray(radius, dtype=np.float64) * (1.0 + rim_width)


def _segment_closest(pxy, a, b):
    """t in [0, 1] and XY distance from points (..., 2) to the segment a -> b (each (2,) or (3,))."""
    ab = np.asarray(b[:2], dtype=np.float64) - np.asarray(a[:2], dtype=np.float64)
    ap0 = pxy[..., 0] - a[0]
    ap1 = pxy[..., 1] - a[1]
    den = ab[0] * ab[0] + ab[1] * ab[1]
    if den > 1e-20:
        t = np.clip((ap0 * ab[0] + ap1 * ab[1]) / den, 0.0, 1.0)
    else:
        t = np.zeros_like(ap0)
    dx = ap0 - t * ab[0]
    dy = ap1 - t * ab[1]
    return t, np.sqrt(dx * dx + dy * dy)


def vertical_fade(h, radius, fade_height):
    """Weight of a stamp whose actor bottom is ``h`` above the snow surface (negative: inside the snow)."""
    h = np.asarray(h, dtype=np.float64)
    beyond = np.maximum(np.maximum(h, -h - 2.0 * radius), 0.0)
    return np.clip(1.0 - beyond / fade_height, 0.0, 1.0)


def stamp_points(points, prev, cur, radius, depth, params: StampParams):
    """One frame's stamp at arbitrary points (N, 3) (their z = the snow surface at rest).

    prev, cur: (A, 3) actor bottom points at the previous and this frame; radius, depth: (A,).
    Returns (down_s, rim_s, coverw, dep) arrays (N,): coverw = cover * vertical fade, dep = the stamping
    actor's depth (0 where none).
    """
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    prev = np.asarray(prev, dtype=np.float64).reshape(-1, 3)
    cur = np.asarray(cur, dtype=np.float64).reshape(-1, 3)
    n = p.shape[0]
    best_d = np.full(n, np.inf)
    best_i = np.full(n, -1, dtype=np.int64)
    best_t = np.zeros(n)
    pxy = p[:, :2]
    for i in range(prev.shape[0]):  # loop over actors (few), vectorised over points
        t, d = _segment_closest(pxy, prev[i], cur[i])
        better = d < best_d
        best_d = np.where(better, d, best_d)
        best_i = np.where(better, i, best_i)
        best_t = np.where(better, t, best_t)
    return _stamp_from_nearest(p[:, 2], best_i, best_t, best_d, prev, cur, radius, depth, params)


def _stamp_from_nearest(surface_z, idx, t, d, prev, cur, radius, depth, params):
    radius = np.asarray(radius, dtype=np.float64).reshape(-1)
    depth = np.asarray(depth, dtype=np.float64).reshape(-1)
    valid = idx >= 0
    i = np.where(valid, idx, 0)
    if radius.size == 0:
        z = np.zeros_like(d)
        return z, z.copy(), z.copy(), z.copy()
    r = radius[i]
    dep = depth[i]
    u = np.where(valid, d / np.maximum(r, 1e-12), np.inf)
    down, rim, cover = stamp_profile(np.where(np.isfinite(u), u, 1e9), dep, params.rim_height, params.rim_width)
    zc = prev[i, 2] + t * (cur[i, 2] - prev[i, 2])
    w = vertical_fade(zc - surface_z, r, params.fade_height)
    w = np.where(valid & np.isfinite(surface_z), w, 0.0)
    return down * w, rim * w, cover * w, np.where(valid, dep, 0.0)


def trail_update(down, rim, down_s, rim_s, coverw, dep, keep, occluded=None, occluder_depth=0.0):
    """Persistence: one frame of the trail state. Returns (down', rim')."""
    kept_down = keep * down
    new_down = np.maximum(kept_down, down_s)
    inside = np.clip(1.0 - kept_down / np.maximum(dep, 1e-12), 0.0, 1.0)
    new_rim = np.maximum(keep * rim * (1.0 - coverw), rim_s * inside)
    if occluded is not None:
        new_down = np.where(occluded, np.maximum(new_down, occluder_depth), new_down)
        new_rim = np.where(occluded, 0.0, new_rim)
    return new_down, new_rim


def simulate_points(points, tracks, radius, depth, params: StampParams, occluded=None, occluder_depth=0.0):
    """Trail state at points after every frame of ``tracks`` (F, A, 3): what the live trails show at the last
    frame. The first frame stamps with prev = cur (the simulation's first step). Returns (down, rim)."""
    params.validate()
    tracks = np.asarray(tracks, dtype=np.float64)
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    down = np.zeros(p.shape[0])
    rim = np.zeros(p.shape[0])
    for f in range(tracks.shape[0]):
        prev = tracks[max(f - 1, 0)]
        ds, rs, cw, dep = stamp_points(p, prev, tracks[f], radius, depth, params)
        down, rim = trail_update(down, rim, ds, rs, cw, dep, params.keep, occluded, occluder_depth)
    return down, rim


# --- what the live trails show ----------------------------------------------------------------------------------
# The shown snow top (the interaction buffer is the physical state and has none of this): the trail offset,
# floored a sliver above the ground, and the write-up's camera fade, "The vertex offset fades out with the
# distance from the camera, lowering the snow flat with the ground surface further away from the player ... and
# preventing the deep snow from visually covering up and hiding smaller objects": far from the camera the snow
# lies flat on the ground (a sliver of 1 - GROUND_KEEP of its thickness stays, so the snow and the terrain never
# fight for the same depth), in between the shown top blends from the trail-deformed top to the flat one.

GROUND_KEEP = 0.98  # the shown snow top never goes lower than this fraction of its thickness below its rest top


def camera_fade(points, camera, start, end):
    """Weight (N,) of the snow's own height at world points (N, 3): 1 up to ``start`` from the ``camera`` (its
    world location), falling linearly to 0 at ``end`` (``end`` at or below ``start``: a step at ``start``).
    ``camera`` None (the scene has no active camera): 1 everywhere, no fade."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if camera is None:
        return np.ones(p.shape[0])
    d = np.linalg.norm(p - np.asarray(camera, dtype=np.float64).reshape(1, 3), axis=1)
    span = max(float(end) - float(start), 1e-6)
    return np.clip(1.0 - (d - float(start)) / span, 0.0, 1.0)


def shown_offset(down, rim, thickness=None, fade=1.0, keep=GROUND_KEEP):
    """World-Z offset of the shown snow top from its rest top: ``fade`` (``camera_fade``) blends the trail
    (rim - down, never lower than ``keep`` x thickness) into the snow lying flat on the ground (-``keep`` x
    thickness). ``thickness`` None (trails on a mesh that is no generated snow, without ``snow_thickness``): no
    ground to clamp to or lie on, only the trail fades."""
    trail = np.asarray(rim, dtype=np.float64) - np.asarray(down, dtype=np.float64)
    fade = np.asarray(fade, dtype=np.float64)
    if thickness is None:
        return fade * trail
    flat = -keep * np.asarray(thickness, dtype=np.float64)
    return fade * np.maximum(trail, flat) + (1.0 - fade) * flat


# --- puffs --------------------------------------------------------------------------------------------------
# The write-up's snow particles "on impact": where an actor pushes the snow down, some of the pushed vertices
# throw a puff of snow up; puffs fly under gravity, shrink and vanish at the end of their life. The live trails
# group runs them in its simulation zone, with these rules.

PUFF_MIN_PUSH = 1e-3   # a vertex pushed down by less than this in a frame (scene units) throws no puff
PUFF_SIDEWAYS = 0.35   # horizontal share of a puff's launch velocity (random direction)


@dataclass(frozen=True)
class PuffParams:
    rate: float = 0.3       # chance that a vertex pushed down this frame throws a puff
    speed: float = 1.5      # launch speed, scene units per second (random 50-100 %)
    lifetime: float = 0.8   # seconds
    size: float = 0.04      # radius at launch, shrinking to 0 over the lifetime
    gravity: float = 9.81   # scene units per second squared, down

    def validate(self) -> "PuffParams":
        for name in ("rate", "speed", "lifetime", "size", "gravity"):
            value = float(getattr(self, name))
            if not np.isfinite(value) or value < 0:
                raise SnowError(f"Puff {name} is {value}: use a finite number, 0 or more")
        if self.rate > 1:
            raise SnowError(f"Puff rate {self.rate} is a chance per vertex: use 0..1")
        if self.lifetime <= 0:
            raise SnowError("Puff lifetime must be more than 0 seconds")
        return self


def puff_launch_bounds(speed):
    """(largest horizontal launch speed, smallest and largest upward launch speed) of a new puff."""
    return PUFF_SIDEWAYS * speed, 0.5 * speed, speed


def puff_step(position, velocity, age, dt, params: PuffParams):
    """One frame of the puffs (semi-implicit Euler, Z up): the velocity gains gravity, the position moves by the
    new velocity, the age grows; returns (position, velocity, age, alive) with alive = age < lifetime. Puffs
    launched this frame take their first step the next frame."""
    v = np.array(velocity, dtype=np.float64, copy=True)
    v[:, 2] -= params.gravity * dt
    p = np.asarray(position, dtype=np.float64) + v * dt
    a = np.asarray(age, dtype=np.float64) + dt
    return p, v, a, a < params.lifetime


def puff_radius(age, params: PuffParams):
    """A puff's radius: params.size at launch, shrinking linearly to 0 at the end of its life."""
    return params.size * np.clip(1.0 - np.asarray(age, dtype=np.float64) / params.lifetime, 0.0, 1.0)


# --- actors -----------------------------------------------------------------------------------------------

def actor_size(dimensions, radius_setting=0.0, depth_setting=0.0, snow_thickness=None):
    """(radius, depth) of an actor: the settings when > 0, else from its world size (dimensions x, y, z):
    radius = half the larger horizontal size, depth = half the radius (at most the snow thickness)."""
    dims = np.asarray(dimensions, dtype=np.float64)
    radius = float(radius_setting) if radius_setting > 0 else 0.5 * float(max(dims[0], dims[1]))
    depth = float(depth_setting) if depth_setting > 0 else 0.5 * radius
    if depth_setting <= 0 and snow_thickness is not None and snow_thickness > 0:
        depth = min(depth, float(snow_thickness))
    return radius, depth


# --- interaction buffer -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class BufferParams:
    resolution: int = 256
    size: float = 20.0                 # world size of the (square) buffer window
    framing: str = "AREA"              # AREA: fixed window; FOLLOW: follows a pivot, snapped to whole texels
    origin: tuple = (0.0, 0.0)         # AREA: world XY of the window's lower-left corner
    edge_fade: float = 0.1             # FOLLOW: fraction of the window over which content fades at the edge
    grass_frequency: float = 1.5       # Hz of the grass wobble
    grass_damping: float = 0.25        # damping ratio of the wobble (0..1)
    grass_recover: float = 1.0         # fraction of the grass push-down recovering per second
    ripple_speed: float = 1.0          # scene units per second
    ripple_damping: float = 1.0        # amplitude decay per second (exponential rate)
    occluder_depth: float = 0.0        # how far occluders hold the snow down (R = -occluder_depth)

    def validate(self) -> "BufferParams":
        if not isinstance(self.resolution, (int, np.integer)) or self.resolution < 1:
            raise SnowError(f"Buffer resolution {self.resolution!r} must be at least 1 texel: use e.g. 512")
        if self.resolution > MAX_RESOLUTION:
            raise SnowError(f"Buffer resolution {self.resolution} is enormous (limit {MAX_RESOLUTION}): "
                            f"use {MAX_RESOLUTION} or less")
        if not (math.isfinite(self.size) and self.size > 0):
            raise SnowError(f"Buffer size {self.size} must be a positive world size")
        if self.framing not in FRAMINGS:
            raise SnowError(f"Unknown framing {self.framing!r}: use one of {', '.join(FRAMINGS)}")
        if not 0.0 <= self.edge_fade <= 0.5:
            raise SnowError(f"Edge fade {self.edge_fade} must be between 0 and 0.5 of the window")
        for name in ("grass_frequency", "grass_damping", "grass_recover", "ripple_speed", "ripple_damping"):
            v = float(getattr(self, name))
            if not math.isfinite(v) or v < 0:
                raise SnowError(f"Buffer {name} {v} must be a finite number of 0 or more")
        return self

    @property
    def texel(self) -> float:
        return self.size / self.resolution


def snap_origin(pivot_xy, size, texel):
    """Lower-left corner of a window centred on the pivot, snapped to whole texels (no jitter)."""
    p = np.asarray(pivot_xy, dtype=np.float64)[:2]
    return np.floor((p - 0.5 * size) / texel) * texel


def edge_fade_mask(resolution, edge_fade):
    """(res, res) weights falling to 0 at the window edge over ``edge_fade`` of its size."""
    if edge_fade <= 0:
        return np.ones((resolution, resolution), dtype=np.float32)
    c = np.arange(resolution) / max(resolution - 1, 1)   # the outermost texels are 0
    e = np.minimum(c, 1.0 - c) / edge_fade
    e = np.clip(e, 0.0, 1.0)
    e = e * e * (3.0 - 2.0 * e)
    return np.outer(e, e).astype(np.float32)


def _shift(arr, dx, dy):
    """Content moved by (-dx, -dy) texels (window moved by +dx, +dy); new texels are 0."""
    if dx == 0 and dy == 0:
        return arr
    out = np.zeros_like(arr)
    h, w = arr.shape[-2:]
    if abs(dx) >= w or abs(dy) >= h:
        return out
    src_y = slice(max(dy, 0), h + min(dy, 0))
    dst_y = slice(max(-dy, 0), h + min(-dy, 0))
    src_x = slice(max(dx, 0), w + min(dx, 0))
    dst_x = slice(max(-dx, 0), w + min(-dx, 0))
    out[..., dst_y, dst_x] = arr[..., src_y, src_x]
    return out


def wobble_peak(zeta: float) -> float:
    """The first swing of x'' + 2 zeta w x' + w^2 x = 0 started at rest with the velocity w: the kick an actor's
    nudge gives the grass is divided by it, so a full nudge swings the wobble (G) out to 1, the write-up's range
    (it then decays the other way, to about -0.45 at the default damping of 0.25)."""
    z = float(zeta)
    if z < 1.0 - 1e-9:
        r = math.sqrt(1.0 - z * z)
        return math.exp(-z * math.atan2(r, z) / r)
    if z <= 1.0 + 1e-9:
        return math.exp(-1.0)
    s = math.sqrt(z * z - 1.0)
    r1, r2 = -z + s, -z - s
    t = math.log(r2 / r1) / (r1 - r2)
    return (math.exp(r1 * t) - math.exp(r2 * t)) / (2.0 * s)


def _oscillator_matrix(freq, zeta, dt):
    """Exact one-step transition of x'' + 2 zeta w x' + w^2 x = 0 for state (x, v): exp(A dt) of the 2x2 system
    matrix A in closed form, exp(M) = e^mu (cosh(d) I + sinh(d)/d (M - mu I)) with mu = tr(M)/2 and
    d^2 = mu^2 - det(M) (cos and sin for d^2 < 0). Unlike an eigen-decomposition it holds at critical damping
    (zeta = 1), where A has a single eigenvector and the decomposition gave whatever rounding made of it."""
    w = 2.0 * math.pi * freq
    m = np.array([[0.0, 1.0], [-w * w, -2.0 * zeta * w]]) * dt
    mu = 0.5 * (m[0, 0] + m[1, 1])
    d2 = mu * mu - (m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0])
    if abs(d2) < 1e-12:
        c, sd = 1.0 + d2 / 2.0, 1.0 + d2 / 6.0
    elif d2 > 0:
        d = math.sqrt(d2)
        c, sd = math.cosh(d), math.sinh(d) / d
    else:
        d = math.sqrt(-d2)
        c, sd = math.cos(d), math.sin(d) / d
    return math.exp(mu) * (c * np.eye(2) + sd * (m - mu * np.eye(2)))


class HeightField:
    """A top-down height map (e.g. the snow surface at rest) sampled at any XY (nearest texel, NaN outside)."""

    def __init__(self, origin, texel, heights):
        self.origin = np.asarray(origin, dtype=np.float64)[:2]
        self.texel = float(texel)
        self.heights = np.asarray(heights, dtype=np.float64)

    def sample(self, x, y):
        h, w = self.heights.shape
        ix = np.floor((np.asarray(x) - self.origin[0]) / self.texel).astype(np.int64)
        iy = np.floor((np.asarray(y) - self.origin[1]) / self.texel).astype(np.int64)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        out = np.full(np.broadcast(ix, iy).shape, np.nan)
        out[inside] = self.heights[iy[inside], ix[inside]]
        return out


def rasterize_top(tris, origin, texel, shape, values=None):
    """Top-down rasterisation of triangles (T, 3, 3) on a grid of texel centres.

    Returns (z, index, bary): the highest z of any triangle over each texel centre (NaN where none), the
    triangle index there (-1) and the barycentric weights (H, W, 3). Vectorised over (triangle, texel) pairs.
    """
    tris = np.asarray(tris, dtype=np.float64).reshape(-1, 3, 3)
    h, w = shape
    zbuf = np.full(h * w, -np.inf)
    ibuf = np.full(h * w, -1, dtype=np.int64)
    bary_out = np.zeros((h * w, 3))
    if tris.shape[0] == 0:
        return np.full((h, w), np.nan), ibuf.reshape(h, w), bary_out.reshape(h, w, 3)
    ox, oy = float(origin[0]), float(origin[1])
    xs = tris[:, :, 0]
    ys = tris[:, :, 1]
    # texel centre j sits at ox + (j + 0.5) texel
    ix0 = np.maximum(np.ceil((xs.min(1) - ox) / texel - 0.5 - 1e-6), 0).astype(np.int64)
    ix1 = np.minimum(np.floor((xs.max(1) - ox) / texel - 0.5 + 1e-6), w - 1).astype(np.int64)
    iy0 = np.maximum(np.ceil((ys.min(1) - oy) / texel - 0.5 - 1e-6), 0).astype(np.int64)
    iy1 = np.minimum(np.floor((ys.max(1) - oy) / texel - 0.5 + 1e-6), h - 1).astype(np.int64)
    nx = np.maximum(ix1 - ix0 + 1, 0)
    ny = np.maximum(iy1 - iy0 + 1, 0)
    counts = nx * ny
    total = int(counts.sum())
    if total == 0:
        return np.full((h, w), np.nan), ibuf.reshape(h, w), bary_out.reshape(h, w, 3)
    chunk = 4_000_000
    starts = np.concatenate([[0], np.cumsum(counts)])
    # split triangles into groups of about `chunk` pairs
    bounds = np.searchsorted(starts, np.arange(0, total, chunk), side="right") - 1
    bounds = np.unique(np.concatenate([bounds, [tris.shape[0]]]))
    for g0, g1 in zip(bounds[:-1], bounds[1:]):
        c = counts[g0:g1]
        tsel = np.repeat(np.arange(g0, g1), c)
        if tsel.size == 0:
            continue
        k = np.arange(tsel.size) - np.repeat(starts[g0:g1] - starts[g0], c)
        px = ix0[tsel] + k % nx[tsel]
        py = iy0[tsel] + k // nx[tsel]
        cx = ox + (px + 0.5) * texel
        cy = oy + (py + 0.5) * texel
        t = tris[tsel]
        x0, y0 = t[:, 0, 0], t[:, 0, 1]
        x1, y1 = t[:, 1, 0], t[:, 1, 1]
        x2, y2 = t[:, 2, 0], t[:, 2, 1]
        den = (y1 - y2) * (x0 - x2) + (x2 - x1) * (y0 - y2)
        ok = np.abs(den) > 1e-18
        den = np.where(ok, den, 1.0)
        l0 = ((y1 - y2) * (cx - x2) + (x2 - x1) * (cy - y2)) / den
        l1 = ((y2 - y0) * (cx - x2) + (x0 - x2) * (cy - y2)) / den
        l2 = 1.0 - l0 - l1
        eps = -1e-6
        inside = ok & (l0 >= eps) & (l1 >= eps) & (l2 >= eps)
        if not inside.any():
            continue
        z = l0 * t[:, 0, 2] + l1 * t[:, 1, 2] + l2 * t[:, 2, 2]
        cell = (py * w + px)[inside]
        z = z[inside]
        ti = tsel[inside]
        bary = np.stack([l0, l1, l2], axis=1)[inside]
        # highest z per cell: sort by (cell, z) and keep the last of each cell
        order = np.lexsort((z, cell))
        cell, z, ti, bary = cell[order], z[order], ti[order], bary[order]
        last = np.r_[cell[1:] != cell[:-1], True]
        cell, z, ti, bary = cell[last], z[last], ti[last], bary[last]
        better = z > zbuf[cell]
        cell, z, ti, bary = cell[better], z[better], ti[better], bary[better]
        zbuf[cell] = z
        ibuf[cell] = ti
        bary_out[cell] = bary
    zout = np.where(np.isfinite(zbuf), zbuf, np.nan).reshape(h, w)
    return zout, ibuf.reshape(h, w), bary_out.reshape(h, w, 3)


@dataclass
class BakeResult:
    frames: list                     # frame numbers written (or the final one)
    files: list                      # image paths written
    metadata_path: str
    origins: np.ndarray              # (F, 2) window origin per frame
    final: np.ndarray                # (res, res, 4) float32 buffer of the last frame (row 0 = min world y)
    stale_removed: list = field(default_factory=list)  # temporary folders of a killed bake that were removed


def bake_job(tracks, radius, depth, stamp: StampParams, buf: BufferParams, frame_start=1, pivot_track=None,
             surface: HeightField | None = None, occluder_tris=None, out_dir=None, sequence=True,
             basename="snow_buffer", unit_scale=1.0):
    """Generator: bake the interaction buffer over ``tracks`` (F, A, 3 actor bottom points, one row per frame).
    ``radius`` and ``depth``: one value per actor (A,), or one row per frame (F, A) for actors measured at each
    frame (a radius of 0 stamps nothing at that frame).

    Yields progress fractions; returns a ``BakeResult``. With ``out_dir`` the frames (or only the final frame
    when ``sequence`` is False) are written as float RGBA OpenEXR files plus ``<basename>.json``; they are
    written to a temporary folder inside ``out_dir`` and moved into place at the end, so cancelling (closing
    the generator) leaves nothing behind. ``unit_scale``: the scene's metres per Blender unit as its FBX export
    reads it (the JSON's engine sampling, ``engine_sampling``).
    """
    stamp.validate()
    buf.validate()
    try:
        unit_scale = float(unit_scale)
    except (TypeError, ValueError):
        unit_scale = math.nan
    if not (math.isfinite(unit_scale) and unit_scale > 0):
        raise SnowError(f"Unit scale {unit_scale!r} is not a length: pass the scene's unit_settings.scale_length "
                        f"(metres per Blender unit, above 0; 1.0 for metres)")
    tracks = np.asarray(tracks, dtype=np.float64)
    if tracks.ndim != 3 or tracks.shape[2] != 3:
        raise SnowError("Actor tracks must be (frames, actors, 3)")
    n_frames, n_actors = tracks.shape[:2]
    if n_frames < 1:
        raise SnowError("The frame range is empty: set frame_end >= frame_start")
    radius = np.asarray(radius, dtype=np.float64)
    depth = np.asarray(depth, dtype=np.float64)
    if radius.ndim == 2 or depth.ndim == 2:  # measured at each frame (an actor that grows)
        if radius.shape != (n_frames, n_actors) or depth.shape != (n_frames, n_actors):
            raise SnowError("radius and depth measured per frame need one row per frame, one value per actor")
        if not (np.all(radius >= 0) and np.all(depth >= 0)):  # 0: an actor scaled to nothing stamps nothing
            raise SnowError("Every actor needs a radius >= 0 and a depth >= 0 at every frame")
    else:
        radius, depth = radius.reshape(-1), depth.reshape(-1)
        if radius.shape != (n_actors,) or depth.shape != (n_actors,):
            raise SnowError("radius and depth need one value per actor")
        if not (np.all(radius > 0) and np.all(depth >= 0)):
            raise SnowError("Every actor needs a radius > 0 and a depth >= 0")
        radius = np.broadcast_to(radius, (n_frames, n_actors))
        depth = np.broadcast_to(depth, (n_frames, n_actors))
    if buf.framing == "FOLLOW" and pivot_track is None:
        raise SnowError("Follow-pivot framing needs a pivot: choose the player or camera to follow")
    res = int(buf.resolution)
    texel = buf.texel
    if out_dir is not None:
        if not os.path.isdir(out_dir):
            try:
                os.makedirs(out_dir, exist_ok=True)
            except OSError as exc:
                raise SnowError(f"Cannot create the output folder {out_dir!r} ({exc.strerror}): "
                                f"choose a writable folder") from None
        if not os.access(out_dir, os.W_OK):
            raise SnowError(f"The output folder {out_dir!r} is not writable: choose another folder")
    # a killed bake's temporary folder may hold the space this bake needs: removed before the space is checked
    stale = remove_stale_temp(out_dir) if out_dir is not None else []
    if out_dir is not None:
        check_disk_space(out_dir, res, n_frames if sequence else 1, n_frames, basename)
    tmp = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}_", dir=out_dir) if out_dir is not None else None
    try:
        n = res * res
        down = np.zeros(n, dtype=np.float32)
        rim = np.zeros(n, dtype=np.float32)
        push = np.zeros(n, dtype=np.float32)         # A: grass push-down (coverage)
        sway_x = np.zeros((res, res), dtype=np.float32)  # G: damped oscillator (position, velocity)
        sway_v = np.zeros((res, res), dtype=np.float32)
        wave = np.zeros((res, res), dtype=np.float32)    # B: wave field now and one step before
        wave_old = np.zeros((res, res), dtype=np.float32)
        lap = np.empty((res, res), dtype=np.float32)
        tmp_a = np.empty((res, res), dtype=np.float32)
        dt = 1.0 / stamp.fps
        osc = _oscillator_matrix(buf.grass_frequency, buf.grass_damping, dt)
        omega = 2.0 * math.pi * buf.grass_frequency
        grass_keep = np.float32(np.clip(1.0 - buf.grass_recover * dt, 0.0, 1.0))
        keep = np.float32(stamp.keep)
        # ripple substeps keep the wave equation stable (Courant number <= 0.6; the limit is 0.707)
        substeps = max(1, int(math.ceil(buf.ripple_speed * dt / (0.6 * texel)))) if buf.ripple_speed > 0 else 1
        c2 = np.float32((buf.ripple_speed * dt / substeps / texel) ** 2)
        wave_keep = np.float32(math.exp(-buf.ripple_damping * dt / substeps))
        fade = edge_fade_mask(res, buf.edge_fade) if buf.framing == "FOLLOW" else None
        reach_max = reach(radius, stamp.rim_width).max(axis=1) if n_actors else np.zeros(n_frames)  # per frame
        origins = np.zeros((n_frames, 2))
        files, frames = [], []
        origin = None
        final = None
        occ_tris = None if occluder_tris is None or len(occluder_tris) == 0 else np.asarray(occluder_tris)
        occ_idx, occ_origin = None, None
        for f in range(n_frames):
            if buf.framing == "FOLLOW":
                new_origin = snap_origin(pivot_track[f], buf.size, texel)
            else:
                new_origin = np.asarray(buf.origin, dtype=np.float64)[:2]
            if origin is not None and buf.framing == "FOLLOW":
                dx, dy = np.rint((new_origin - origin) / texel).astype(int)
                if dx or dy:
                    down = _shift(down.reshape(res, res), dx, dy).ravel()
                    rim = _shift(rim.reshape(res, res), dx, dy).ravel()
                    push = _shift(push.reshape(res, res), dx, dy).ravel()
                    sway_x, sway_v = _shift(sway_x, dx, dy), _shift(sway_v, dx, dy)
                    wave, wave_old = _shift(wave, dx, dy), _shift(wave_old, dx, dy)
            origin = new_origin
            origins[f] = origin
            prev = tracks[max(f - 1, 0)]
            cur = tracks[f]
            idx, ds, rs, cw, dep = _stamp_sparse(origin, texel, res, prev, cur, radius[f], depth[f], stamp, surface,
                                                 float(reach_max[f]))
            # trails (R): decay everywhere, stamp where an actor is (see trail_update)
            if keep != 1.0:
                down *= keep
                rim *= keep
            kd = down[idx]
            inside = np.clip(1.0 - kd / np.maximum(dep, 1e-12), 0.0, 1.0)
            down[idx] = np.maximum(kd, ds)
            rim[idx] = np.maximum(rim[idx] * (1.0 - cw), rs * inside)
            if occ_tris is not None:
                if occ_idx is None or not np.array_equal(origin, occ_origin):
                    zocc, _, _ = rasterize_top(occ_tris, origin, texel, (res, res))
                    occ_idx, occ_origin = np.flatnonzero(np.isfinite(zocc)), origin.copy()
                down[occ_idx] = np.maximum(down[occ_idx], np.float32(buf.occluder_depth))
                rim[occ_idx] = 0.0
            # grass (G, A): a rise in coverage nudges the oscillator; push-down follows coverage and recovers
            nudge = np.maximum(cw - push[idx], 0.0).astype(np.float32)
            push *= grass_keep
            push[idx] = np.maximum(push[idx], cw)
            sv = sway_v.reshape(-1)
            sv[idx] += nudge * np.float32(omega / wobble_peak(buf.grass_damping))
            np.multiply(sway_x, np.float32(osc[0, 0]), out=tmp_a)
            tmp_a += np.float32(osc[0, 1]) * sway_v
            sway_v *= np.float32(osc[1, 1])
            sway_v += np.float32(osc[1, 0]) * sway_x
            sway_x, tmp_a = tmp_a, sway_x
            # water (B): the same nudges push the water surface down by half the actor's depth (a displacement in
            # scene units: set in both time levels, so no velocity is injected, which would grow with the substeps)
            drop = nudge * dep * np.float32(0.5)
            wave.reshape(-1)[idx] -= drop
            wave_old.reshape(-1)[idx] -= drop
            for _ in range(substeps):
                np.multiply(wave, np.float32(-4.0), out=lap)
                lap[1:, :] += wave[:-1, :]
                lap[:-1, :] += wave[1:, :]
                lap[:, 1:] += wave[:, :-1]
                lap[:, :-1] += wave[:, 1:]
                lap *= c2
                lap += wave
                lap += wave
                lap -= wave_old
                lap *= wave_keep
                wave_old, wave, lap = wave, lap, wave_old
            write = tmp is not None and (sequence or f == n_frames - 1)
            if write or f == n_frames - 1:
                out = np.empty((res, res, 4), dtype=np.float32)
                out[..., 0] = (rim - down).reshape(res, res)
                np.clip(sway_x, -1.0, 1.0, out=out[..., 1])  # an actor standing on grass keeps nudging it
                out[..., 2] = wave
                out[..., 3] = push.reshape(res, res)
                if fade is not None:
                    out *= fade[..., None]
                final = out
                if write:
                    frame = frame_start + f
                    name = f"{basename}_{frame:04d}.exr" if sequence else f"{basename}.exr"
                    write_exr(os.path.join(tmp, name), out)
                    files.append(name)
                    frames.append(frame)
            yield (f + 1) / (n_frames + 1)
        meta_path = None
        paths = []
        if tmp is not None:
            meta = buffer_metadata(buf, stamp, frame_start, origins, frames, files, sequence, unit_scale)
            with open(os.path.join(tmp, basename + ".json"), "w") as fh:
                json.dump(meta, fh, indent=1)
            for name in files + [basename + ".json"]:
                os.replace(os.path.join(tmp, name), os.path.join(out_dir, name))
            paths = [os.path.join(out_dir, n) for n in files]
            meta_path = os.path.join(out_dir, basename + ".json")
        yield 1.0
        return BakeResult(frames=frames, files=paths, metadata_path=meta_path, origins=origins, final=final,
                          stale_removed=stale)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def bake(*args, **kwargs) -> BakeResult:
    """Run ``bake_job`` to the end (no progress)."""
    job = bake_job(*args, **kwargs)
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value


def _stamp_sparse(origin, texel, res, prev, cur, radius, depth, stamp, surface, reach_max):
    """The stamp on the buffer's texel centres, only where some actor's path is within the largest reach.

    Each actor lists the texels of its path's box grown by the largest reach; per texel the nearest path wins
    (exact there: beyond the largest reach nothing stamps). Returns (flat texel indices, down_s, rim_s,
    coverw, dep) with float32 values.
    """
    x0, y0 = float(origin[0]), float(origin[1])
    cand_idx, cand_d, cand_t, cand_a = [], [], [], []
    for i in range(prev.shape[0]):  # loop over actors (few), vectorised over texels
        if radius[i] <= 0:  # scaled to nothing at this frame
            continue
        a, b = prev[i], cur[i]
        lo = np.minimum(a[:2], b[:2]) - reach_max
        hi = np.maximum(a[:2], b[:2]) + reach_max
        jx0 = max(int(np.floor((lo[0] - x0) / texel - 0.5)), 0)
        jx1 = min(int(np.ceil((hi[0] - x0) / texel - 0.5)), res - 1)
        jy0 = max(int(np.floor((lo[1] - y0) / texel - 0.5)), 0)
        jy1 = min(int(np.ceil((hi[1] - y0) / texel - 0.5)), res - 1)
        if jx1 < jx0 or jy1 < jy0:
            continue
        jx = np.arange(jx0, jx1 + 1)
        jy = np.arange(jy0, jy1 + 1)
        cx = x0 + (jx + 0.5) * texel
        cy = y0 + (jy + 0.5) * texel
        pxy = np.stack(np.broadcast_arrays(cx[None, :], cy[:, None]), axis=-1)
        t, d = _segment_closest(pxy, a, b)
        near = d <= reach_max
        cand_idx.append((jy[:, None] * res + jx[None, :])[near])
        cand_d.append(d[near])
        cand_t.append(t[near])
        cand_a.append(np.full(int(near.sum()), i, dtype=np.int64))
    empty = np.zeros(0, dtype=np.float32)
    if not cand_idx or sum(c.size for c in cand_idx) == 0:
        return np.zeros(0, dtype=np.int64), empty, empty, empty, empty
    idx = np.concatenate(cand_idx)
    d = np.concatenate(cand_d)
    t = np.concatenate(cand_t)
    act = np.concatenate(cand_a)
    # nearest path per texel; ties go to the lower actor index, as in the point version
    order = np.lexsort((act, d, idx))
    idx, d, t, act = idx[order], d[order], t[order], act[order]
    first = np.r_[True, idx[1:] != idx[:-1]]
    idx, d, t, act = idx[first], d[first], t[first], act[first]
    ys, xs = np.divmod(idx, res)
    if surface is not None:
        sz = surface.sample(x0 + (xs + 0.5) * texel, y0 + (ys + 0.5) * texel)
    else:
        # no surface given: the snow is where the actor is (no vertical fade)
        sz = prev[act, 2] + t * (cur[act, 2] - prev[act, 2])
    stamped = _stamp_from_nearest(sz, act, t, d, prev, cur, radius, depth, stamp)
    return (idx,) + tuple(v.astype(np.float32) for v in stamped)


def sample_buffer(buffer, origin, texel, xy, channel=0):
    """Bilinear sample of a buffer (res, res, 4) at world points (N, 2); texel centres at origin + (i+0.5)t."""
    b = np.asarray(buffer)[..., channel]
    h, w = b.shape
    fx = (np.asarray(xy)[:, 0] - origin[0]) / texel - 0.5
    fy = (np.asarray(xy)[:, 1] - origin[1]) / texel - 0.5
    fx = np.clip(fx, 0, w - 1)
    fy = np.clip(fy, 0, h - 1)
    x0 = np.minimum(np.floor(fx).astype(int), w - 2 if w > 1 else 0)
    y0 = np.minimum(np.floor(fy).astype(int), h - 2 if h > 1 else 0)
    x1 = np.minimum(x0 + 1, w - 1)
    y1 = np.minimum(y0 + 1, h - 1)
    tx = fx - x0
    ty = fy - y0
    return ((b[y0, x0] * (1 - tx) + b[y0, x1] * tx) * (1 - ty) + (b[y1, x0] * (1 - tx) + b[y1, x1] * tx) * ty)


def engine_sampling(world_size: float, unit_scale: float = 1.0) -> dict:
    """How each game engine samples the buffer with its own world positions: {engine: the engine's up, the
    engine units per Blender unit (the heights R and B times it), its texture-coordinate origin, and the vectors
    ``u_from_world`` / ``v_from_world`` such that ``uv = (dot(P, u_from_world), dot(P, v_from_world)) +
    uv_offset`` for an engine world position P, ``uv_offset`` per frame from ``engine_uv_offset``}.

    The image's top row is max Blender y (``write_exr``); Godot and Unreal put uv (0, 0) at an image's top-left
    corner, Unity at its bottom-left. Axes and units are those of ``bend_engines`` (the scene's
    ``unit_scale`` applies to FBX, not glTF)."""
    from . import bend_engines

    out = {}
    for engine, (matrix, *_rest) in bend_engines.ENGINES.items():
        m = np.asarray(matrix, dtype=np.float64)
        k = bend_engines.engine_scale(engine, unit_scale)
        bottom_up = engine == "UNITY"
        # Blender x = dot(m[:, 0], P) / k and y = dot(m[:, 1], P) / k for an engine position P
        out[engine] = {
            "export_format": bend_engines.ENGINES[engine][5],
            "units_per_blender_unit": k,
            "up": m[:, 2].tolist(),
            "uv_origin": "bottom-left" if bottom_up else "top-left",
            "u_from_world": (m[:, 0] / (k * world_size)).tolist(),
            "v_from_world": ((1.0 if bottom_up else -1.0) * m[:, 1] / (k * world_size)).tolist(),
        }
    return out


def engine_uv_offset(engine: str, origin, world_size: float) -> list:
    """The frame's ``uv_offset`` for ``engine_sampling``: u = (x - origin x) / size, and v = (y - origin y) /
    size from the bottom row (Unity) or (origin y + size - y) / size from the top row (Godot, Unreal)."""
    u0 = -float(origin[0]) / world_size
    if engine == "UNITY":
        return [u0, -float(origin[1]) / world_size]
    return [u0, float(origin[1]) / world_size + 1.0]


BUFFER_FORMAT = "envfx.snow.interaction_buffer"
BUFFER_VERSION = 1


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def read_buffer_metadata(path: str) -> dict:
    """The metadata a bake wrote (``buffer_metadata``), read back from ``path`` with the fields that drive the snow
    checked: format and version, ``world_size``, ``sequence``, and per frame ``frame``, ``origin`` and ``file``
    (a plain file name in the same folder). Raises SnowError saying what is wrong (a truncated or hand-edited
    file, another tool's file of that name); OSError when the file cannot be read."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnowError(f"it is not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != BUFFER_FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise SnowError(f"it is not an EnvFX interaction buffer (format {found!r}, not {BUFFER_FORMAT!r})")
    if meta.get("version") != BUFFER_VERSION:
        raise SnowError(f"its version {meta.get('version')!r} is not {BUFFER_VERSION} (written by another EnvFX)")
    if not (_is_number(meta.get("world_size")) and meta["world_size"] > 0):
        raise SnowError(f"its world_size {meta.get('world_size')!r} is not a positive number")
    if not isinstance(meta.get("sequence"), bool):
        raise SnowError(f"its sequence {meta.get('sequence')!r} is not true or false")
    frames = meta.get("frames")
    if not isinstance(frames, list) or not frames:
        raise SnowError("it lists no frames")
    for i, f in enumerate(frames):
        ok = (isinstance(f, dict) and isinstance(f.get("frame"), int) and not isinstance(f["frame"], bool)
              and isinstance(f.get("origin"), list) and len(f["origin"]) == 2
              and all(_is_number(v) for v in f["origin"]))
        name = f.get("file") if isinstance(f, dict) else None
        if ok and "file" in f:
            ok = isinstance(name, str) and name not in ("", ".", "..") and os.path.basename(name) == name
        if not ok:
            raise SnowError(f"its frame entry {i} ({json.dumps(f)[:80]}) needs a whole frame number, an origin "
                            f"[x, y] and, if any, a file name in the same folder")
    return meta


def buffer_metadata(buf: BufferParams, stamp: StampParams, frame_start, origins, frames, files, sequence,
                    unit_scale: float = 1.0) -> dict:
    """What a game needs to sample the buffer: world size, texel size, origin per frame, channel meaning, and
    for Godot, Unity and Unreal how to sample it with their own world positions (``engine_sampling``)."""
    origins = np.asarray(origins)
    engines = engine_sampling(float(buf.size), unit_scale)
    return {
        "format": BUFFER_FORMAT,
        "version": BUFFER_VERSION,
        "resolution": [int(buf.resolution), int(buf.resolution)],
        "world_size": float(buf.size),
        "texel_size": float(buf.texel),
        "framing": buf.framing,
        "edge_fade": float(buf.edge_fade) if buf.framing == "FOLLOW" else 0.0,
        "fps": float(stamp.fps),
        "frame_start": int(frame_start),
        "frame_end": int(frame_start + len(origins) - 1),
        "sequence": bool(sequence),
        "frames": [{"frame": int(frame_start + i), "origin": [float(o[0]), float(o[1])],
                    **({"file": files[frames.index(frame_start + i)]} if (frame_start + i) in frames else {}),
                    "uv_offset": {e: engine_uv_offset(e, o, float(buf.size)) for e in engines}}
                   for i, o in enumerate(origins)],
        "image_layout": "EXR rows run from max world y (top) to min world y (bottom); "
                        "column i covers world x origin + i * texel_size",
        "channels": {
            "R": "ground/snow height offset in scene units (negative pushed down, positive rim)",
            "G": "grass sway wobble (-1..1: a full nudge swings it to 1, then it decays)",
            "B": "water ripples: signed water-surface height in scene units (an actor pushes it down by half "
                 "its depth where it enters; damped rings spread from there)",
            "A": "grass push-down (0..1)",
        },
        "unit_scale": float(unit_scale),
        "engines": engines,
        "engine_uv": "uv = (dot(P, u_from_world), dot(P, v_from_world)) + frames[i].uv_offset[engine] for P the "
                     "engine's world position in its units (uv origin as uv_origin says); the heights R and B "
                     "times units_per_blender_unit along up",
    }


# --- OpenEXR ------------------------------------------------------------------------------------------------

def write_exr(path: str, rgba) -> None:
    """Write a (H, W, 4) float32 array (row 0 = min world y) as an uncompressed 32-bit float RGBA OpenEXR
    (top row of the image = max world y, as seen from above)."""
    data = np.asarray(rgba, dtype=np.float32)
    if data.ndim != 3 or data.shape[2] != 4:
        raise SnowError("write_exr needs an (H, W, 4) array")
    exr.write_exr(path, data[::-1], "RGBA", exr.NO_COMPRESSION)


def read_exr(path: str) -> np.ndarray:
    """Read back what ``write_exr`` writes; returns (H, W, 4) RGBA, row 0 = min world y."""
    try:
        px, names = exr.read_exr(path)
    except (ValueError, KeyError, IndexError, struct.error) as err:
        raise SnowError(f"{path!r} is not an EXR file EnvFX can read ({err})") from None
    if sorted(names) != ["A", "B", "G", "R"]:
        raise SnowError(f"{path!r} has channels {names}, not R, G, B, A")
    return np.ascontiguousarray(px[..., [names.index(c) for c in "RGBA"]][::-1])


# --- snow cover generation --------------------------------------------------------------------------------

@dataclass(frozen=True)
class CoverParams:
    spacing: float = 0.1
    thickness: float = 0.2
    max_slope: float = math.radians(45.0)    # radians
    border_width: float = 0.3               # distance over which the border tapers to zero thickness
    drift_direction: tuple = (1.0, 0.0)     # wind direction (XY) the snow drifts with
    drift: float = 0.0                      # leeward slopes get (1 + drift * ...) more snow
    noise: float = 0.0                      # relative thickness variation
    noise_scale: float = 2.0                # size of the noise features (scene units)
    seed: int = 0
    lods: int = 1
    vertex_budget: int = DEFAULT_VERTEX_BUDGET

    def validate(self) -> "CoverParams":
        for name in ("spacing", "thickness", "border_width", "drift", "noise", "noise_scale", "max_slope"):
            v = float(getattr(self, name))
            if not math.isfinite(v):
                raise SnowError(f"Snow {name} is {v}: set a finite number")
        if self.spacing <= 0:
            raise SnowError(f"Snow spacing {self.spacing} must be greater than 0")
        if self.thickness < 0 or self.border_width < 0 or self.noise < 0 or self.noise_scale <= 0:
            raise SnowError("Snow thickness, border width and noise must be 0 or more (noise scale above 0)")
        if not 0.0 <= self.max_slope <= math.radians(89.9):
            raise SnowError(f"Max slope {math.degrees(self.max_slope):.1f} deg must be between 0 and 89.9 deg")
        if not 1 <= int(self.lods) <= 8:
            raise SnowError(f"Levels of detail {self.lods} must be between 1 and 8")
        if self.vertex_budget < 1:
            raise SnowError("The vertex budget must be at least 1")
        return self


@dataclass
class CoverMesh:
    vertices: np.ndarray     # (V, 3) float32 world positions (snow top)
    faces: np.ndarray        # (F, 4) int32 quads (corner order counter-clockwise seen from above)
    thickness: np.ndarray    # (V,) float32 snow thickness at each vertex
    ground: np.ndarray       # (V,) float32 terrain z under each vertex
    step: int = 1            # grid step (LOD k has step 2^k)


@dataclass
class SnowCover:
    lods: list = field(default_factory=list)   # CoverMesh per level of detail, finest first
    origin: tuple = (0.0, 0.0)
    spacing: float = 0.0
    shape: tuple = (0, 0)
    covered: np.ndarray | None = None          # (H, W) bool grid
    surface_spacing: tuple = (0.0, 0.0)        # shortest and longest grid edge along the surface (flat, steepest)


def triangle_normals(tris):
    t = np.asarray(tris, dtype=np.float64)
    n = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    length = np.linalg.norm(n, axis=1)
    return n / np.maximum(length, 1e-300)[:, None], length


def up_facing(tris, max_slope) -> np.ndarray:
    """Bool mask of triangles whose normal is within ``max_slope`` (radians) of +Z."""
    n, area2 = triangle_normals(tris)
    return (n[:, 2] >= math.cos(max_slope) - 1e-9) & (area2 > 0)


def grid_factor(kept_tris) -> tuple[float, float]:
    """(factor, stretch): the top-down grid step is ``spacing * factor``. A grid edge running down a slope of
    angle a is ``1 / cos(a)`` longer on the surface than seen from above, one running across it is not, so the
    step is shrunk to centre the surface spacing on the requested one: with the steepest kept face at a*,
    ``factor = 2 cos(a*) / (1 + cos(a*))`` puts flat ground at ``factor`` and the steepest slope at
    ``stretch = factor / cos(a*)`` times the spacing (both within 20 % up to a* = 48 deg). Steeper than that,
    flat ground is kept at 0.8 and the steepest slopes stretch further."""
    n, area2 = triangle_normals(kept_tris)
    nz = n[:, 2][area2 > 0]
    cos_a = float(np.clip(nz.min(), 1e-3, 1.0)) if nz.size else 1.0
    factor = max(2.0 * cos_a / (1.0 + cos_a), 0.8)
    return factor, factor / cos_a


def estimate_vertices(tris, keep, spacing) -> int:
    """Vertices a spacing would make: the kept faces' top-down area divided by the spacing squared."""
    t = np.asarray(tris, dtype=np.float64)[keep]
    if t.shape[0] == 0:
        return 0
    e1 = t[:, 1, :2] - t[:, 0, :2]
    e2 = t[:, 2, :2] - t[:, 0, :2]
    area = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]).sum()
    return int(math.ceil(area / (spacing * spacing)))


def value_noise(x, y, scale, seed):
    """Smooth value noise in [-1, 1] at world points, two octaves, deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    table = rng.uniform(-1.0, 1.0, 4096).astype(np.float64)
    total = np.zeros(np.broadcast(x, y).shape)
    amp, norm = 1.0, 0.0
    for octave in range(2):
        fx = np.asarray(x) / (scale / 2 ** octave)
        fy = np.asarray(y) / (scale / 2 ** octave)
        ix, iy = np.floor(fx), np.floor(fy)
        tx, ty = fx - ix, fy - iy
        tx = tx * tx * (3 - 2 * tx)
        ty = ty * ty * (3 - 2 * ty)
        ix = ix.astype(np.int64) + 1013 * octave
        iy = iy.astype(np.int64)

        def h(a, b):
            return table[((a * 73856093) ^ (b * 19349663)) & 4095]

        v = (h(ix, iy) * (1 - tx) + h(ix + 1, iy) * tx) * (1 - ty) + (h(ix, iy + 1) * (1 - tx) + h(ix + 1, iy + 1)
                                                                     * tx) * ty
        total += amp * v
        norm += amp
        amp *= 0.5
    return total / norm


def sample_image(pixels, uv) -> np.ndarray:
    """Bilinear sample of an image's brightness (mean of R, G, B) at UVs (N, 2), clamped at the edges.

    ``pixels`` is (H, W, C) with row 0 at the bottom (as Blender stores images); texel centres sit at
    (i + 0.5) / W."""
    img = np.asarray(pixels, dtype=np.float32)
    lum = img[..., :3].mean(-1) if img.shape[-1] >= 3 else img[..., 0]
    h, w = lum.shape
    uv = np.asarray(uv, dtype=np.float64).reshape(-1, 2)
    fx = uv[:, 0] * w - 0.5
    fy = uv[:, 1] * h - 0.5
    x0 = np.floor(fx).astype(np.int64)
    y0 = np.floor(fy).astype(np.int64)
    tx = fx - x0
    ty = fy - y0
    x0m, x1m = np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1)
    y0m, y1m = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
    return ((lum[y0m, x0m] * (1 - tx) + lum[y0m, x1m] * tx) * (1 - ty)
            + (lum[y1m, x0m] * (1 - tx) + lum[y1m, x1m] * tx) * ty)


def _border_distance(covered, spacing, limit):
    """Distance from each covered cell to the nearest uncovered cell (chamfer, up to ``limit``)."""
    h, w = covered.shape
    big = np.float32(limit + 2 * spacing)
    pad = np.zeros((h + 2, w + 2), dtype=np.float32)
    pad[1:-1, 1:-1] = np.where(covered, big, 0.0)
    steps = int(min(256, math.ceil(limit / spacing) + 2))
    diag = np.float32(spacing * math.sqrt(2.0))
    s = np.float32(spacing)
    for _ in range(steps):  # each pass is vectorised over the whole grid
        c = pad[1:-1, 1:-1]
        m = np.minimum.reduce([
            c, pad[:-2, 1:-1] + s, pad[2:, 1:-1] + s, pad[1:-1, :-2] + s, pad[1:-1, 2:] + s,
            pad[:-2, :-2] + diag, pad[:-2, 2:] + diag, pad[2:, :-2] + diag, pad[2:, 2:] + diag,
        ])
        if np.array_equal(m, c):
            break
        pad[1:-1, 1:-1] = m
    return pad[1:-1, 1:-1]


def generate_cover(tris, params: CoverParams, occluder_tris=None, mask_weights=None, mask_uvs=None,
                   mask_pixels=None) -> SnowCover:
    """Snow cover over terrain triangles (T, 3, 3, world space).

    - only faces within ``max_slope`` of up get snow;
    - a vertex grid whose edges are ``spacing`` long along the surface (within 20 % on slopes up to 48 deg: see
      ``grid_factor``), the snow top at ground + thickness;
    - no snow where any geometry (``occluder_tris``, and the terrain itself, e.g. overhangs) is above;
    - thickness tapers to zero over ``border_width`` towards the edge of the covered area;
    - drift along ``drift_direction`` and noise vary the thickness; ``mask_weights`` (T, 3) per-corner weights
      (a vertex group) scale it and drop the snow where they are 0, and so does the brightness of the image
      ``mask_pixels`` (H, W, C) at the UVs ``mask_uvs`` (T, 3, 2) interpolated to each grid point;
    - ``lods`` meshes, each with twice the spacing of the previous.
    Raises ``SnowError`` (before building anything big) when there are no up-facing faces or the spacing
    would make more than ``vertex_budget`` vertices.
    """
    params.validate()
    tris = np.asarray(tris, dtype=np.float64).reshape(-1, 3, 3)
    if tris.shape[0] == 0:
        raise SnowError("The selected objects have no faces: select terrain meshes with faces")
    keep = up_facing(tris, params.max_slope)
    if not keep.any():
        raise SnowError(
            f"No face of the selection looks up within the max slope of {math.degrees(params.max_slope):.0f} deg: "
            f"raise the max slope or select terrain whose faces point up"
        )
    kept = tris[keep]
    factor, stretch = grid_factor(kept)
    s = float(params.spacing) * factor  # the top-down grid step that gives ``spacing`` along the surface
    estimate = estimate_vertices(tris, keep, s)
    if estimate > params.vertex_budget:
        suggestion = params.spacing * math.sqrt(estimate / params.vertex_budget) * 1.05
        raise SnowError(
            f"A spacing of {params.spacing:g} would make about {estimate:,} vertices, over the budget of "
            f"{params.vertex_budget:,}: use a spacing of at least {suggestion:.3g} or raise the budget"
        )
    lo = kept[:, :, :2].reshape(-1, 2).min(0)
    hi = kept[:, :, :2].reshape(-1, 2).max(0)
    w = int(math.floor((hi[0] - lo[0]) / s + 1e-6)) + 1   # a size of exactly n spacings gets n + 1 points
    h = int(math.floor((hi[1] - lo[1]) / s + 1e-6)) + 1
    if w * h > 4 * max(params.vertex_budget, 1024) + 1_000_000:
        raise SnowError(
            f"The snow area spans {w} x {h} grid points at a spacing of {s:g}: use a larger spacing"
        )
    # grid points at lo + i*s sit on texel centres of a raster whose origin is lo - s/2
    origin = lo - 0.5 * s
    z_snow, tri_idx, bary = rasterize_top(kept, origin, s, (h, w))
    all_tris = tris if occluder_tris is None or len(occluder_tris) == 0 else np.concatenate(
        [tris, np.asarray(occluder_tris, dtype=np.float64).reshape(-1, 3, 3)])
    z_top, _, _ = rasterize_top(all_tris, origin, s, (h, w))
    extent = float(max(hi[0] - lo[0], hi[1] - lo[1], 1e-12))
    eps = 1e-4 * s + 1e-9 * extent
    covered = np.isfinite(z_snow) & ~(z_top > z_snow + eps)
    if mask_weights is not None:
        mw = np.asarray(mask_weights, dtype=np.float64).reshape(-1, 3)[keep]
        ti = np.where(tri_idx >= 0, tri_idx, 0)
        mask = np.einsum("hwk,hwk->hw", mw[ti], bary)
        mask = np.where(tri_idx >= 0, mask, 0.0)
        covered &= mask > 1e-6
    else:
        mask = np.ones((h, w))
    if mask_uvs is not None and mask_pixels is not None:
        uvs = np.asarray(mask_uvs, dtype=np.float64).reshape(-1, 3, 2)[keep]
        ti = np.where(tri_idx >= 0, tri_idx, 0)
        cell_uv = np.einsum("hwkc,hwk->hwc", uvs[ti], bary)
        tex = sample_image(mask_pixels, cell_uv.reshape(-1, 2)).reshape(h, w)
        mask = mask * np.where(tri_idx >= 0, tex, 0.0)
        covered &= mask > 1e-6
    if not covered.any():
        raise SnowError("Nothing is left to cover: every up-facing face is under other geometry or masked out")
    gx = lo[0] + np.arange(w) * s
    gy = lo[1] + np.arange(h) * s
    X, Y = np.meshgrid(gx, gy)
    thick = np.full((h, w), float(params.thickness))
    if params.border_width > 0:
        dist = _border_distance(covered, s, params.border_width + s)
        tt = np.clip((dist - s) / params.border_width, 0.0, 1.0)
        thick *= tt * tt * (3 - 2 * tt)
    else:
        # the outermost ring still goes to zero so the cover meets the ground
        dist = _border_distance(covered, s, s)
        thick *= dist > s * 1.01
    if params.drift > 0:
        n, _ = triangle_normals(kept)
        ti = np.where(tri_idx >= 0, tri_idx, 0)
        wd = np.asarray(params.drift_direction, dtype=np.float64)[:2]
        wd = wd / max(np.linalg.norm(wd), 1e-12)
        lee = n[ti, 0] * wd[0] + n[ti, 1] * wd[1]  # slopes facing downwind collect snow
        thick *= np.maximum(0.0, 1.0 + params.drift * lee / max(math.sin(max(params.max_slope, 1e-3)), 1e-3))
    if params.noise > 0:
        thick *= np.maximum(0.0, 1.0 + params.noise * value_noise(X, Y, params.noise_scale, params.seed))
    thick *= np.clip(mask, 0.0, 1.0)
    thick = np.where(covered, thick, 0.0)
    ground = np.where(covered, z_snow, 0.0)
    cover = SnowCover(origin=(float(lo[0]), float(lo[1])), spacing=s, shape=(h, w), covered=covered,
                      surface_spacing=(float(params.spacing) * factor, float(params.spacing) * stretch))
    for level in range(int(params.lods)):
        step = 2 ** level
        cover.lods.append(_grid_mesh(covered, X, Y, ground, thick, step))
        if cover.lods[-1].vertices.shape[0] == 0:
            cover.lods.pop()
            break
    return cover


# The live trails' lookup table ("EnvFX Snow Trails"): TRAIL_CELLS x TRAIL_CELLS cells over the snow's bounding
# box (x, y of its object space), cell size = the larger side / TRAIL_CELLS.
TRAIL_CELLS = 128


def trail_cells(vertices) -> np.ndarray:
    """The trails' table cell (row * TRAIL_CELLS + column) of each vertex, as the node group computes it."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    if v.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    lo = v.min(0)
    ext = v.max(0) - lo
    size = max(max(ext[0], ext[1]) / TRAIL_CELLS, 1e-9)
    cx = np.clip(np.floor((v[:, 0] - lo[0]) / size), 0, TRAIL_CELLS - 1)
    cy = np.clip(np.floor((v[:, 1] - lo[1]) / size), 0, TRAIL_CELLS - 1)
    return (cy * TRAIL_CELLS + cx).astype(np.int64)


def by_trail_cells(mesh: CoverMesh) -> CoverMesh:
    """The same mesh with its vertices laid out cell after cell of the trails' table (each cell's vertices
    together, in their order). The live trails move whole cells of vertices, so laid out this way the vertices
    they move form long runs instead of short pieces of grid rows: measured ~6% off a trails frame (1M
    vertices, 32 actors) on Blender 5.0. The shape, faces and values are unchanged."""
    order = np.argsort(trail_cells(mesh.vertices), kind="stable")
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return CoverMesh(vertices=mesh.vertices[order], faces=inverse[mesh.faces].astype(np.int32),
                     thickness=mesh.thickness[order], ground=mesh.ground[order], step=mesh.step)


def _grid_mesh(covered, X, Y, ground, thick, step) -> CoverMesh:
    c = covered[::step, ::step]
    h, w = c.shape
    ids = np.full((h, w), -1, dtype=np.int64)
    ids[c] = np.arange(int(c.sum()))
    quad = c[:-1, :-1] & c[:-1, 1:] & c[1:, 1:] & c[1:, :-1]
    jy, jx = np.nonzero(quad)
    faces = np.stack([ids[jy, jx], ids[jy, jx + 1], ids[jy + 1, jx + 1], ids[jy + 1, jx]], axis=1)
    g = ground[::step, ::step][c]
    t = thick[::step, ::step][c]
    verts = np.stack([X[::step, ::step][c], Y[::step, ::step][c], g + t], axis=1)
    return by_trail_cells(CoverMesh(vertices=verts.astype(np.float32), faces=faces.astype(np.int32),
                                    thickness=t.astype(np.float32), ground=g.astype(np.float32), step=step))
