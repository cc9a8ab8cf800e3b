"""The interaction buffer bake: the actors' tracks stamped frame by frame into the R, G, B, A fields, written
as EXR images and their JSON."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .. import jobs, outputs
from .base import SnowError
from .buffer import (BufferParams, HeightField, _oscillator_matrix, _shift, buffer_metadata, edge_fade_mask,
                     rasterize_top, snap_origin, wobble_peak)
from .files import check_disk_space, remove_stale_temp, write_exr
from .stamp import StampParams, _segment_closest, _stamp_from_nearest, reach


MAX_RIPPLE_STEPS = 256  # steps of the ripples' wave equation in one frame, at most


def ripple_steps(buf: BufferParams, fps: float) -> int:
    """Steps of the ripples' wave equation per frame that keep it stable (Courant number <= 0.6; the limit is
    0.707): more the faster the ripples and the finer the texels. SnowError when that is more than
    ``MAX_RIPPLE_STEPS``: a window of a few micrometres (a Whole Area window around one still actor of a tiny
    radius and no snow) would take billions, a frame that never ends."""
    if buf.ripple_speed <= 0:
        return 1
    steps = buf.ripple_speed * (1.0 / fps) / (0.6 * buf.texel)  # (1 / fps: a frame's time step)
    if not steps <= MAX_RIPPLE_STEPS:
        raise SnowError(f"The interaction buffer's texels are {buf.texel:.3g} wide (a window of {buf.size:.3g} over "
                        f"{buf.resolution} texels): its ripples would take {steps:.3g} steps a frame (at most "
                        f"{MAX_RIPPLE_STEPS}). Make the window larger (Whole Area: snow over more ground or actors "
                        f"with a larger Snow Radius; Follow Pivot: Buffer Size) or lower the Resolution")
    return max(1, int(math.ceil(steps)))


@dataclass
class BakeResult:
    frames: list                     # frame numbers written (or the final one)
    files: list                      # image paths written
    metadata_path: str | None       # the JSON written (None when nothing was written: no out_dir)
    origins: np.ndarray              # (F, 2) window origin per frame
    final: np.ndarray                # (res, res, 4) float32 buffer of the last frame (row 0 = min world y)
    stale_removed: list = field(default_factory=list)  # temporary folders of a killed bake that were removed


def _checked_tracks(tracks, radius, depth, buf: BufferParams, pivot_track, unit_scale):
    """(tracks (F, A, 3), radius (F, A), depth (F, A), unit_scale) of ``bake_job``'s input, checked (SnowError)."""
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
        if not (np.all(radius[np.isfinite(radius)] >= 0) and np.all(depth[np.isfinite(depth)] >= 0)):
            raise SnowError("Every actor needs a radius >= 0 and a depth >= 0 at every frame")  # 0: stamps nothing
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
    # an actor whose place or size is not a number at a frame (a NaN or infinite transform) is not there then: it
    # stamps nothing at that frame, and its path starts again where it next is (as TrailState and the live trails)
    lost = ~(np.isfinite(tracks).all(axis=2) & np.isfinite(radius) & np.isfinite(depth))
    if lost.any():
        tracks, radius, depth = tracks.copy(), np.array(radius), np.array(depth)
        tracks[lost], radius[lost], depth[lost] = np.nan, 0.0, 0.0
    return tracks, radius, depth, unit_scale


def _writable_out_dir(out_dir: str):
    """Make the output folder if needed; refuse one that cannot be made or written (SnowError)."""
    if not os.path.isdir(out_dir):
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as exc:
            raise SnowError(f"Cannot create the output folder {out_dir!r} ({exc.strerror}): "
                            f"choose a writable folder") from None
    if not os.access(out_dir, os.W_OK):
        raise SnowError(f"The output folder {out_dir!r} is not writable: choose another folder")


class _Fields:
    """The buffer's fields while it is baked (float32): the trails (R: down and rim, flat), the grass (G: the damped
    oscillator's position and velocity; A: the push-down, flat) and the water (B: the wave now and one step
    before), with two scratch arrays the steps swap in."""

    def __init__(self, res: int):
        n = res * res
        self.res = res
        self.down = np.zeros(n, dtype=np.float32)
        self.rim = np.zeros(n, dtype=np.float32)
        self.push = np.zeros(n, dtype=np.float32)         # A: grass push-down (coverage)
        self.sway_x = np.zeros((res, res), dtype=np.float32)  # G: damped oscillator (position, velocity)
        self.sway_v = np.zeros((res, res), dtype=np.float32)
        self.wave = np.zeros((res, res), dtype=np.float32)    # B: wave field now and one step before
        self.wave_old = np.zeros((res, res), dtype=np.float32)
        self.lap = np.empty((res, res), dtype=np.float32)
        self.tmp_a = np.empty((res, res), dtype=np.float32)

    def shift(self, dx: int, dy: int):
        """The window moved by (dx, dy) texels (follow-pivot framing): every field moves with the world."""
        res = self.res
        self.down = _shift(self.down.reshape(res, res), dx, dy).ravel()
        self.rim = _shift(self.rim.reshape(res, res), dx, dy).ravel()
        self.push = _shift(self.push.reshape(res, res), dx, dy).ravel()
        self.sway_x, self.sway_v = _shift(self.sway_x, dx, dy), _shift(self.sway_v, dx, dy)
        self.wave, self.wave_old = _shift(self.wave, dx, dy), _shift(self.wave_old, dx, dy)

    def trails(self, idx, ds, rs, cw, dep, keep):
        """R: decay everywhere, stamp where an actor is (see trail_update)."""
        if keep != 1.0:
            self.down *= keep
            self.rim *= keep
        kd = self.down[idx]
        inside = np.clip(1.0 - kd / np.maximum(dep, 1e-12), 0.0, 1.0)
        self.down[idx] = np.maximum(kd, ds)
        self.rim[idx] = np.maximum(self.rim[idx] * (1.0 - cw), rs * inside)

    def grass(self, idx, cw, grass_keep, osc, nudge_gain):
        """G, A: a rise in coverage nudges the oscillator; push-down follows coverage and recovers. Returns the
        nudges (per stamped texel)."""
        nudge = np.maximum(cw - self.push[idx], 0.0).astype(np.float32)
        self.push *= grass_keep
        self.push[idx] = np.maximum(self.push[idx], cw)
        sv = self.sway_v.reshape(-1)
        sv[idx] += nudge * nudge_gain
        np.multiply(self.sway_x, np.float32(osc[0, 0]), out=self.tmp_a)
        self.tmp_a += np.float32(osc[0, 1]) * self.sway_v
        self.sway_v *= np.float32(osc[1, 1])
        self.sway_v += np.float32(osc[1, 0]) * self.sway_x
        self.sway_x, self.tmp_a = self.tmp_a, self.sway_x
        return nudge

    def water(self, idx, nudge, dep, substeps, c2, wave_keep):
        """B: the same nudges push the water surface down by half the actor's depth (a displacement in scene
        units: set in both time levels, so no velocity is injected, which would grow with the substeps), then
        the wave equation steps."""
        drop = nudge * dep * np.float32(0.5)
        self.wave.reshape(-1)[idx] -= drop
        self.wave_old.reshape(-1)[idx] -= drop
        wave, wave_old, lap = self.wave, self.wave_old, self.lap
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
        self.wave, self.wave_old, self.lap = wave, wave_old, lap

    def image(self, fade):
        """(res, res, 4) float32 RGBA of the fields now (faded at the window's edge with ``fade``)."""
        res = self.res
        out = np.empty((res, res, 4), dtype=np.float32)
        out[..., 0] = (self.rim - self.down).reshape(res, res)
        np.clip(self.sway_x, -1.0, 1.0, out=out[..., 1])  # an actor standing on grass keeps nudging it
        out[..., 2] = self.wave
        out[..., 3] = self.push.reshape(res, res)
        if fade is not None:
            out *= fade[..., None]
        return out


class BufferStepper:
    """The bake's fields stepped one frame at a time over checked ``tracks`` (F, A, 3), ``radius`` and ``depth``
    (F, A) (``_checked_tracks``): ``step()`` advances to the next frame (``index``: the frame stepped last, -1
    before the first), ``image()`` is the buffer now, ``origin`` the window's lower-left world XY now. The bake and
    the live buffer (``core.snow.live``) step with this one class, so they give the same buffer.
    ``snapshot()`` / ``restore()`` copy the state (a checkpoint to replay from)."""

    def __init__(self, tracks: np.ndarray, radius: np.ndarray, depth: np.ndarray, stamp: StampParams,
                 buf: BufferParams, pivot_track: np.ndarray | Sequence[npt.ArrayLike] | None = None,
                 surface: HeightField | None = None,
                 occluder_tris: np.ndarray | Sequence[npt.ArrayLike] | None = None):
        self.tracks, self.radius, self.depth = tracks, radius, depth
        self.stamp, self.buf, self.pivot_track, self.surface = stamp, buf, pivot_track, surface
        n_frames, n_actors = tracks.shape[:2]
        res = self.res = int(buf.resolution)
        self.texel = buf.texel
        self.fields = _Fields(res)
        dt = 1.0 / stamp.fps
        self.osc = _oscillator_matrix(buf.grass_frequency, buf.grass_damping, dt)
        omega = 2.0 * math.pi * buf.grass_frequency
        self.nudge_gain = np.float32(omega / wobble_peak(buf.grass_damping))
        self.grass_keep = np.float32(np.clip(1.0 - buf.grass_recover * dt, 0.0, 1.0))
        self.keep = np.float32(stamp.keep)
        self.substeps = ripple_steps(buf, stamp.fps)
        self.c2 = np.float32((buf.ripple_speed * dt / self.substeps / self.texel) ** 2)
        self.wave_keep = np.float32(math.exp(-buf.ripple_damping * dt / self.substeps))
        self.fade = edge_fade_mask(res, buf.edge_fade) if buf.framing == "FOLLOW" else None
        self.reach_max = (reach(radius, stamp.rim_width).max(axis=1) if n_actors
                          else np.zeros(n_frames))  # per frame
        self.occ_tris = None if occluder_tris is None or len(occluder_tris) == 0 else np.asarray(occluder_tris)
        self.occ_idx, self.occ_origin = None, None
        self.origin: np.ndarray | None = None
        self.index = -1

    def step(self) -> None:
        """Step the fields to the next frame."""
        f = self.index + 1
        buf, texel, fields = self.buf, self.texel, self.fields
        if buf.framing == "FOLLOW":
            assert self.pivot_track is not None  # _checked_tracks refuses FOLLOW without a pivot
            new_origin = snap_origin(self.pivot_track[f], buf.size, texel)
        else:
            new_origin = np.asarray(buf.origin, dtype=np.float64)[:2]
        if self.origin is not None and buf.framing == "FOLLOW":
            dx, dy = np.rint((new_origin - self.origin) / texel).astype(int)
            if dx or dy:
                fields.shift(dx, dy)
        origin = self.origin = new_origin
        prev = self.tracks[max(f - 1, 0)]
        cur = self.tracks[f]
        idx, ds, rs, cw, dep = _stamp_sparse(origin, texel, self.res, prev, cur, self.radius[f], self.depth[f],
                                             self.stamp, self.surface, float(self.reach_max[f]))
        fields.trails(idx, ds, rs, cw, dep, self.keep)
        if self.occ_tris is not None:
            if self.occ_idx is None or self.occ_origin is None or not np.array_equal(origin, self.occ_origin):
                zocc, _, _ = rasterize_top(self.occ_tris, origin, texel, (self.res, self.res))
                self.occ_idx, self.occ_origin = np.flatnonzero(np.isfinite(zocc)), origin.copy()
            fields.down[self.occ_idx] = np.maximum(fields.down[self.occ_idx], np.float32(buf.occluder_depth))
            fields.rim[self.occ_idx] = 0.0
        nudge = fields.grass(idx, cw, self.grass_keep, self.osc, self.nudge_gain)
        fields.water(idx, nudge, dep, self.substeps, self.c2, self.wave_keep)
        self.index = f

    def image(self) -> np.ndarray:
        """(res, res, 4) float32 RGBA of the buffer now (row 0 = min world y)."""
        return self.fields.image(self.fade)

    def snapshot(self) -> tuple:
        """A copy of the state (the frame stepped last, the window's origin and the fields)."""
        f = self.fields
        return (self.index, None if self.origin is None else self.origin.copy(),
                tuple(a.copy() for a in (f.down, f.rim, f.push, f.sway_x, f.sway_v, f.wave, f.wave_old)))

    def restore(self, snapshot: tuple) -> None:
        """Go back to a ``snapshot()``."""
        index, origin, arrays = snapshot
        self.index, self.origin = index, None if origin is None else origin.copy()
        f = self.fields
        f.down, f.rim, f.push, f.sway_x, f.sway_v, f.wave, f.wave_old = (a.copy() for a in arrays)

    def reset(self) -> None:
        """Back to before the first frame."""
        self.fields = _Fields(self.res)
        self.origin, self.index = None, -1


def check_part(part: Sequence[int] | None, frame_start: int, n_frames: int, sequence: bool = True) -> tuple[int, int]:
    """(first, last) frame numbers of ``part`` (None: every frame) within the bake's ``frame_start`` ..
    ``frame_start + n_frames - 1``; SnowError (what to do) for a part outside them, or a part of a bake that writes
    only its final frame."""
    last_frame = frame_start + n_frames - 1
    if part is None:
        return frame_start, last_frame
    first, last = int(part[0]), int(part[1])
    if not frame_start <= first <= last <= last_frame:
        raise SnowError(f"Frames {first}-{last} are not a part of the bake's frames {frame_start}-{last_frame}: give "
                        f"FIRST-LAST with {frame_start} <= FIRST <= LAST <= {last_frame}")
    if not sequence and (first, last) != (frame_start, last_frame):
        raise SnowError(f"Frames {first}-{last}: this bake writes only its final frame (Image Sequence off), which "
                        f"a part of the frames does not reach: bake every frame in one run")
    return first, last


def bake_job(tracks: npt.ArrayLike, radius: npt.ArrayLike, depth: npt.ArrayLike, stamp: StampParams, buf: BufferParams,
             frame_start: int = 1, pivot_track: np.ndarray | Sequence[npt.ArrayLike] | None = None,
             surface: HeightField | None = None, occluder_tris: np.ndarray | Sequence[npt.ArrayLike] | None = None,
             out_dir: str | None = None, sequence: bool = True, basename: str = "snow_buffer", unit_scale: float = 1.0,
             part: Sequence[int] | None = None) -> Generator[float, None, BakeResult]:
    """Generator: bake the interaction buffer over ``tracks`` (F, A, 3 actor bottom points, one row per frame).
    ``radius`` and ``depth``: one value per actor (A,), or one row per frame (F, A) for actors measured at each
    frame (a radius of 0 stamps nothing at that frame).

    Yields progress fractions; returns a ``BakeResult``. With ``out_dir`` the frames (or only the final frame
    when ``sequence`` is False) are written as float RGBA OpenEXR files plus ``<basename>.json``; they are
    written to a temporary folder inside ``out_dir`` and moved into place at the end, so cancelling (closing
    the generator) leaves nothing behind. ``unit_scale``: the scene's metres per Blender unit as its FBX export
    reads it (the JSON's engine sampling, ``engine_sampling``).

    ``part`` (FIRST, LAST frame numbers; default every frame): a share of a sequence's frames, for a farm task. The
    fields are stepped from the first frame as in the whole bake (each frame carries the one before; stepping
    without writing costs about a tenth of a written frame), and only the images of FIRST..LAST are written; the
    part with the last frame writes the JSON, which names every frame's image. So the parts, in any order or at
    once, write the files of one bake of every frame, byte for byte.
    """
    stamp.validate()
    buf.validate()
    ripple_steps(buf, stamp.fps)  # (before anything is written)
    tracks, radius, depth, unit_scale = _checked_tracks(tracks, radius, depth, buf, pivot_track, unit_scale)
    n_frames, n_actors = tracks.shape[:2]
    first, last = check_part(part, int(frame_start), n_frames, sequence)
    f_first, f_last = first - frame_start, last - frame_start  # (indices into the frames)
    final_part = f_last == n_frames - 1
    res = int(buf.resolution)
    if out_dir is not None:
        _writable_out_dir(out_dir)
    # a killed bake's temporary folder may hold the space this bake needs: removed before the space is checked
    stale = remove_stale_temp(out_dir) if out_dir is not None else []
    if out_dir is not None:
        check_disk_space(out_dir, res, (f_last - f_first + 1) if sequence else 1, n_frames, basename)
    tmp = outputs.make_staging(out_dir, "snow") if out_dir is not None else None  # (files.TEMP_PREFIX)
    try:
        stepper = BufferStepper(tracks, radius, depth, stamp, buf, pivot_track, surface, occluder_tris)
        origins = np.zeros((n_frames, 2))
        files, frames = [], []
        final = None
        for f in range(f_last + 1):
            stepper.step()
            origins[f] = stepper.origin
            write = tmp is not None and (f >= f_first if sequence else f == n_frames - 1)
            if write or f == n_frames - 1:
                final = out = stepper.image()
                if write:
                    assert tmp is not None  # write implies tmp
                    frame = frame_start + f
                    name = f"{basename}_{frame:04d}.exr" if sequence else f"{basename}.exr"
                    write_exr(os.path.join(tmp, name), out)
                    files.append(name)
                    frames.append(frame)
            yield (f + 1) / (f_last + 2)
        meta_path = None
        paths = []
        if tmp is not None:
            assert out_dir is not None  # tmp is made inside out_dir
            moved = list(files)
            if final_part:  # the JSON names every frame's image (the parts before wrote theirs)
                every = list(range(frame_start, frame_start + n_frames)) if sequence else frames
                names = [f"{basename}_{frame:04d}.exr" for frame in every] if sequence else files
                meta = buffer_metadata(buf, stamp, frame_start, origins, every, names, sequence, unit_scale)
                with open(os.path.join(tmp, basename + ".json"), "w") as fh:
                    json.dump(meta, fh, indent=1)
                moved.append(basename + ".json")
                meta_path = os.path.join(out_dir, basename + ".json")
            for name in moved:
                os.replace(os.path.join(tmp, name), os.path.join(out_dir, name))
            paths = [os.path.join(out_dir, n) for n in files]
        yield 1.0
        # the fields after the part's last frame (the final frame's in a whole bake)
        final = final if final is not None else stepper.image()
        return BakeResult(frames=frames, files=paths, metadata_path=meta_path, origins=origins, final=final,
                          stale_removed=stale)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def bake(tracks: npt.ArrayLike, radius: npt.ArrayLike, depth: npt.ArrayLike, stamp: StampParams, buf: BufferParams,
         frame_start: int = 1, pivot_track: np.ndarray | Sequence[npt.ArrayLike] | None = None,
         surface: HeightField | None = None, occluder_tris: np.ndarray | Sequence[npt.ArrayLike] | None = None,
         out_dir: str | None = None, sequence: bool = True, basename: str = "snow_buffer", unit_scale: float = 1.0,
         part: Sequence[int] | None = None) -> BakeResult:
    """Run ``bake_job`` to the end (no progress)."""
    job = bake_job(tracks, radius, depth, stamp, buf, frame_start, pivot_track, surface, occluder_tris, out_dir,
                   sequence, basename, unit_scale, part)
    return jobs.finish(job)


def _stamp_sparse(origin, texel, res, prev, cur, radius, depth, stamp, surface, reach_max):
    """The stamp on the buffer's texel centres, only where some actor's path is within the largest reach.

    Each actor lists the texels of its path's box grown by the largest reach; per texel the nearest path wins
    (exact there: beyond the largest reach nothing stamps). Returns (flat texel indices, down_s, rim_s,
    coverw, dep) with float32 values.
    """
    x0, y0 = float(origin[0]), float(origin[1])
    prev = np.where(np.isfinite(prev).all(axis=1, keepdims=True), prev, cur)  # back from nowhere: starts here
    cand_idx, cand_d, cand_t, cand_a = [], [], [], []
    for i in range(prev.shape[0]):  # loop over actors (few), vectorised over texels
        if radius[i] <= 0:  # scaled to nothing at this frame (or not there: _checked_tracks)
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
