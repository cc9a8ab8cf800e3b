"""The live wind's numpy twin of the "EnvFX Wind" node group (see ``core.wind``): scene and asset settings,
gusts, the per-vertex attributes and the offsets of a frame."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import numpy.typing as npt

from .params import (SPRING_HZ, BRANCH_HZ, GUST_AMPS, GUST_MULTS, GUST_PHASES, GUST_WAVES, MAIN_SCALE, BRANCH_SCALE,
    MICRO_SCALE, MICRO_HZ, MICRO_PHASES, MICRO_WAVES, LIVE_ATTRS, PIVOT_B, PIVOT_H, PIVOT_BASE,
    BRANCH_MULTS, BRANCH_PHASES, AMBIENT_HZ, AMBIENT_SCALE, WOBBLE_HZ, WOBBLE_SCALE, WOBBLE_WAVE, TILT_SCALE,
    GUST_SPEED)
from .push import GrassPush, push_lean


# --- live wind --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SceneWind:
    direction: tuple = (1.0, 0.0, 0.0)   # world wind direction (made horizontal and unit here)
    strength: float = 1.0
    gust_strength: float = 0.5
    gust_frequency: float = 0.2         # Hz
    loop_frames: int = 0                # 0: no loop
    fps: float = 24.0
    ambient: float = 1.0                # grass ambient motion, times the wind at the clump (0 = off)
    grass_tilt: float = 0.5             # grass leans away from a camera that looks down
    fade_start: float = 40.0            # grass animation and size fade from here (m from the camera) ...
    fade_end: float = 80.0              # ... to nothing here; fade_end <= fade_start: no fade


@dataclass(frozen=True)
class AssetWind:
    category: str = "TREE"
    rigidity: float = 1.0
    bend: float = 1.0
    sway: float = 1.0
    lift: float = 1.0
    micro: float = 1.0
    ramp: float = 0.0
    main_bend: bool = True
    asset_height: float = 1.0


@overload
def quantize(freq: float, loop_frames: int, fps: float) -> float: ...


@overload
def quantize(freq: npt.NDArray[np.floating], loop_frames: int, fps: float) -> npt.NDArray[np.floating]: ...


def quantize(freq: float | npt.NDArray[np.floating], loop_frames: int, fps: float) -> float | npt.NDArray[np.floating]:
    """Frequency (Hz) rounded to a whole number (at least 1) of cycles per loop, when a loop is set."""
    if loop_frames <= 0:
        return freq
    period = loop_frames / fps
    # floor(x + 0.5): rounds halves up like the Math node's Round (np.round rounds halves to even)
    return np.maximum(np.floor(np.asarray(freq, np.float64) * period + 0.5), 1.0) / period


def loop_time(frame: float, scene: SceneWind) -> float:
    """Time (s) of ``frame``; with a loop, of the frame wrapped into the loop first (``frame mod loop_frames``,
    floored, as the node group does: every quantised frequency makes whole cycles per loop, so the angles are the
    same, and the group's float32 keeps them exact at any frame number)."""
    if scene.loop_frames > 0:
        frame = frame - scene.loop_frames * math.floor(frame / scene.loop_frames)
    return frame / scene.fps


@overload
def wave(turns: float) -> float: ...


@overload
def wave(turns: np.ndarray) -> npt.NDArray[np.float64]: ...


def wave(turns: float | np.ndarray) -> float | npt.NDArray[np.float64]:
    """A parabolic sine (period 1, peaks +-1 at 1/4 and 3/4, C1-continuous), ``8 w (1 - 2|w|)`` with
    ``w = turns - floor(turns + 0.5)``: the grass wobble's per-vertex wave (cheaper than a true sine per vertex)."""
    x = np.asarray(turns, np.float64)
    w = x - np.floor(x + 0.5)
    return 8.0 * w * (1.0 - 2.0 * np.abs(w))


def horizontal_dir(direction: Sequence[float] | np.ndarray) -> npt.NDArray[np.float64]:
    d = np.array([direction[0], direction[1], 0.0], np.float64)
    length = np.linalg.norm(d)
    return d / length if length > 1e-12 else np.zeros(3)


def gust(t: float, origin: npt.ArrayLike, scene: SceneWind, category: str, travel: bool = False
        ) -> float | npt.NDArray[np.float64]:
    """Spring-filtered gust signal at time ``t`` (s) at world ``origin`` (a point, or (N, 3) points: one value
    each): ``sum_i amp_i gain_i sin(2 pi f_i t + W_i . origin_xy + ph_i - lag_i)`` over the three waves, with
    ``f_i`` the quantised ``gust_frequency * GUST_MULTS[i]``, ``gain_i = f0^2 / (f0^2 + f_i^2)`` and
    ``lag_i = 2 atan(f_i / f0)`` (``f0`` the category's spring frequency, ``W_i`` = ``GUST_WAVES[i]``).

    ``travel`` (grass, per blade): the waves travel across the field along the wind direction ``d`` at
    ``GUST_SPEED`` ``U`` instead: ``W_i . origin_xy`` becomes ``- 2 pi f_i (origin . d) / U``, so the gust at a
    point is the gust at the world origin ``(origin . d) / U`` seconds earlier. A phase fixed in time: the gust
    stays periodic in the loop."""
    pts = np.asarray(origin, np.float64)
    f0 = SPRING_HZ[category]
    d = horizontal_dir(scene.direction)
    total = 0.0
    for amp, mult, ph, wave_ in zip(GUST_AMPS, GUST_MULTS, GUST_PHASES, GUST_WAVES):
        f = float(quantize(scene.gust_frequency * mult, scene.loop_frames, scene.fps))
        gain = f0 * f0 / (f0 * f0 + f * f)
        lag = 2.0 * math.atan(f / f0)
        if travel:
            spatial = -2.0 * math.pi * f / GUST_SPEED * (pts[..., :3] @ d)
        else:
            spatial = wave_[0] * pts[..., 0] + wave_[1] * pts[..., 1]
        total = total + amp * gain * np.sin(2 * math.pi * f * t + spatial + ph - lag)
    return float(total) if pts.ndim == 1 else total


@overload
def ramp_wind(w: float, ramp: float) -> float: ...


@overload
def ramp_wind(w: np.ndarray, ramp: float) -> np.ndarray: ...


def ramp_wind(w: float | np.ndarray, ramp: float) -> float | np.ndarray:
    """The asset's ramp of the wind ``w`` (>= 0): ``w (1 + k) / (1 + k w)``."""
    return w * (1.0 + ramp) / (1.0 + ramp * w)


def effective_wind(t: float, origin: npt.ArrayLike, scene: SceneWind, asset: AssetWind, travel: bool = False
                   ) -> float | np.ndarray:
    """``ramp(max(0, strength (1 + gust_strength gust)))`` at ``origin`` (a point or (N, 3) points)."""
    w = np.maximum(0.0, scene.strength * (1.0 + scene.gust_strength * gust(t, origin, scene, asset.category,
                                                                          travel)))
    out = ramp_wind(w, asset.ramp)
    return float(out) if np.ndim(out) == 0 else out


def grass_fade(camera_matrix: npt.ArrayLike | None, origin: npt.ArrayLike, scene: SceneWind) -> float:
    """1 near the camera, falling to 0 between ``fade_start`` and ``fade_end`` (always 1 without a camera or
    with ``fade_end <= fade_start``)."""
    if camera_matrix is None or scene.fade_end <= scene.fade_start:
        return 1.0
    dist = float(np.linalg.norm(np.asarray(camera_matrix, np.float64)[:3, 3] - np.asarray(origin)))
    return float(np.clip((scene.fade_end - dist) / (scene.fade_end - scene.fade_start), 0.0, 1.0))


def live_attributes(positions: npt.ArrayLike, height: npt.ArrayLike, wind_color: npt.ArrayLike
                   ) -> dict[str, npt.NDArray[np.float32]]:
    """The static per-vertex part of the live wind, float32 arrays keyed by ``LIVE_ATTRS`` ((N, 3) for
    ``LIVE_VECTORS``, (N,) for the others), from the object space rest ``positions``, ``EnvFX_Height`` and
    ``EnvFX_Wind`` RGBA.

    Every periodic per-vertex term of the live wind is ``amplitude * sin(a(t) + phase)`` with a per-vertex static
    phase, split as ``sin a(t) * amplitude cos phase + cos a(t) * amplitude sin phase``: the per-vertex factors
    are baked here once, so a frame costs a few multiply-adds per vertex against per-asset single values.

    The pivots keep lengths (``keep_lengths``). The vertices sharing a G (a branch with its leaves, a stem, the
    trunk with the leaves on it) hang from one attach point ``A``: a piece that reaches the ground with more than
    leaves (within ``PIVOT_BASE`` of the asset's base: the trunk, a stem, a grass blade) stands on the mean of its
    lowest vertices (within ``PIVOT_BASE``); another hangs from the mean of its vertices with the lowest B (within
    ``PIVOT_B``; when they span more than ``PIVOT_H`` of the height, the lowest of them): where a branch leaves the
    trunk. ``Ba`` = B - the lowest B of the piece is the branch's lever. A piece on the ground (or attached within
    ``PIVOT_H`` of it) bends with the whole asset about ``A``; one attached
    higher (a branch) is carried whole by the asset's bend at ``A``'s height ``hA`` and moves about ``A`` only by
    its branch motion and flutter (a bend that grows with height inside a branch would shear it near ``A``).
    Computed per mesh: a branch whose leaves are in another object swings those leaves about their own lowest
    point.

    - Branch, a vector: ``(Ba, Ba cos phi, Ba sin phi)`` with the branch phase ``phi = 2 pi G`` (per branch);
    - Leaf, a vector: ``(R cos psi, R sin psi, H^2)`` with the leaf flutter phase
      ``psi = 2 pi G + p.W0 + sin(p.W1) + sin(p.W2)`` (a smooth 3D field through object space, ``W`` =
      ``MICRO_WAVES``), and the square of
    - H: the height the whole-asset bend reads, ``h - hA`` on the ground pieces, 0 on branches (stored alone too:
      the grass terms read it); Pivot ``p - A``; Carry: ``hA`` of a branch, 0 on the ground pieces."""
    p = np.asarray(positions, np.float64).reshape(-1, 3)
    h = np.asarray(height, np.float64).reshape(-1)
    col = np.asarray(wind_color, np.float64).reshape(-1, 4)
    r_leaf, g_phase, b_branch = col[:, 0], col[:, 1], col[:, 2]
    waves = np.asarray(MICRO_WAVES, np.float64)
    phi = 2.0 * math.pi * g_phase
    psi = phi + p @ waves[0] + np.sin(p @ waves[1]) + np.sin(p @ waves[2])
    n = len(p)
    if n:
        _keys, inv = np.unique(col[:, 1].astype(np.float32), return_inverse=True)
        inv = inv.reshape(-1)
        k = int(inv.max()) + 1
        b_low = np.full(k, np.inf)
        np.minimum.at(b_low, inv, b_branch)
        low = b_branch <= b_low[inv] + PIVOT_B
        h_low = np.full(k, np.inf)
        np.minimum.at(h_low, inv[low], h[low])
        h_high = np.full(k, -np.inf)
        np.maximum.at(h_high, inv[low], h[low])
        solid = r_leaf <= 0.0  # (not on a leaf: a leaf hanging down to the ground does not stand on it)
        h_min = np.full(k, np.inf)
        np.minimum.at(h_min, inv[solid], h[solid])
        # a piece reaching the ground (the trunk, a stem, a blade, also one whose lowest B is higher up) stands on
        # its lowest part; another hangs from its lowest B: all of those points when they are compact (a ring where
        # a branch leaves the trunk), else their lowest
        ground = h_min <= PIVOT_BASE
        compact = h_high - h_low <= PIVOT_H
        at = np.where(ground[inv], h <= h_min[inv] + PIVOT_BASE,
                      low & (compact[inv] | (h <= h_low[inv] + PIVOT_BASE)))
        count = np.bincount(inv[at], minlength=k)
        pivot = np.stack([np.bincount(inv[at], weights=p[at, i], minlength=k) for i in range(3)], 1) / count[:, None]
        # the height of A: a hanging ring's mean (it turns about its middle); on the ground the lowest (hA = 0 at
        # a trunk's base ring exactly, so the base never moves)
        h_pivot = np.where(ground, h_min, np.where(compact, np.bincount(inv[at], weights=h[at], minlength=k) / count,
                                                   h_low))
        lever = b_branch - b_low[inv]
        ha = h_pivot[inv]
        rel = p - pivot[inv]
        grounded = (ground | (h_pivot <= PIVOT_H))[inv]  # they bend with the asset; branches are carried
    else:
        lever = ha = np.zeros(0)
        rel = np.zeros((0, 3))
        grounded = np.zeros(0, bool)
    hh = np.where(grounded, h - ha, 0.0).astype(np.float32).astype(np.float64)
    values = (np.stack([lever, lever * np.cos(phi), lever * np.sin(phi)], 1),
              np.stack([r_leaf * np.cos(psi), r_leaf * np.sin(psi), hh * hh], 1),
              hh, rel, np.where(grounded, 0.0, ha))
    return {name: v.astype(np.float32) for name, v in zip(LIVE_ATTRS, values)}


def blade_roots(positions: npt.ArrayLike, live: Mapping[str, npt.ArrayLike], corner_vertices: npt.ArrayLike,
                face_starts: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """(F, 3) float32 object-space root of each face's blade (the hidden face attribute ``LIVE_ROOT``): the mean
    over the face's corners of the vertex's attach point ``p - Pivot`` (``live``: ``live_attributes``), the same
    point for every vertex of a blade. ``corner_vertices`` (C,) the vertex of every face corner, ``face_starts``
    (F,) each face's first corner, in order."""
    p = np.asarray(positions, np.float64).reshape(-1, 3)
    root = p - np.asarray(live[LIVE_ATTRS[3]], np.float64).reshape(-1, 3)
    corners = np.asarray(corner_vertices, np.int64).reshape(-1)
    starts = np.asarray(face_starts, np.int64).reshape(-1)
    if len(starts) == 0:
        return np.zeros((0, 3), np.float32)
    count = np.diff(np.append(starts, len(corners)))
    return (np.add.reduceat(root[corners], starts, axis=0) / count[:, None]).astype(np.float32)


def vertex_faces(vertices: int, corner_vertices: npt.ArrayLike, face_starts: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """(vertices,) int32 a face of each vertex (the hidden point attribute ``LIVE_FACE``; -1 for a vertex in no
    face): grass computes what is the same on a whole blade once per face, at the face's ``blade_roots`` (all the
    faces of a blade have the same), and reads it back per vertex from this face. ``corner_vertices`` (C,) the
    vertex of every face corner, ``face_starts`` (F,) each face's first corner, in order."""
    corners = np.asarray(corner_vertices, np.int64).reshape(-1)
    starts = np.asarray(face_starts, np.int64).reshape(-1)
    out = np.full(int(vertices), -1, np.int32)
    if len(starts) == 0:
        return out
    count = np.diff(np.append(starts, len(corners)))
    face = np.repeat(np.arange(len(starts), dtype=np.int32), count)
    out[corners] = face
    return out


@dataclass(frozen=True)
class LiveTerms:
    """The per-asset single values of one frame of the live wind (what the node group computes once per object).
    Object space swing per vertex (``wind_swing``): ``(Ba bend + H^2 main) dir + Bac vc + Bas vs + Rc mc + Rs ms``
    with the per-vertex ``LIVE_ATTRS``. ``ambient``: the amplitude factor of the grass ambient motion,
    ``scene.ambient * wind * asset_height``.

    Every motion term is proportional to the effective wind: ``wind`` is the effective wind at the asset's origin
    (``effective_wind``), except for GRASS, whose terms are per unit of wind (``wind`` = 1): each blade scales
    them by the effective wind at its own place (``blade_wind``). ``world_extra`` (grass): the camera tilt, a
    world lean per unit height (the figure-eight is the blade's own, ``BladeWind.extra``)."""
    main: float
    bend: float
    dir: np.ndarray
    vc: np.ndarray
    vs: np.ndarray
    mc: np.ndarray
    ms: np.ndarray
    world_extra: np.ndarray
    fade: float
    ambient: float


def live_terms(matrix_world: npt.ArrayLike, frame: float, scene: SceneWind, asset: AssetWind,
               camera_matrix: npt.ArrayLike | None = None) -> LiveTerms:
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    origin = m[:3, 3]
    t = loop_time(frame, scene)
    d = horizontal_dir(scene.direction)
    across = np.array([-d[1], d[0], 0.0])
    up = np.array([0.0, 0.0, 1.0])
    grass = asset.category == "GRASS"
    eff = 1.0 if grass else float(effective_wind(t, origin, scene, asset))  # one point: one value
    k = eff * asset.asset_height / asset.rigidity
    two_pi = 2 * math.pi
    inv3 = np.linalg.inv(m[:3, :3])

    main = (1.0 if asset.main_bend else 0.0) * k * MAIN_SCALE
    bend = asset.bend * k * BRANCH_SCALE
    # branch oscillations sin(2 pi f_i t + ph_i + phi): along the wind (bend), across it (sway), up (lift)
    fb = [float(quantize(BRANCH_HZ[asset.category] * mult, scene.loop_frames, scene.fps)) for mult in BRANCH_MULTS]
    arg = [two_pi * f * t + ph for f, ph in zip(fb, BRANCH_PHASES)]
    amps = [0.3 * bend, 0.5 * asset.sway * k * BRANCH_SCALE, 0.4 * asset.lift * k * BRANCH_SCALE]
    dirs = [d, across, up]
    vc = sum(a * math.sin(x) * v for a, x, v in zip(amps, arg, dirs))
    vs = sum(a * math.cos(x) * v for a, x, v in zip(amps, arg, dirs))
    # leaf flutter per object axis: sin(2 pi f_j t + ph_j + psi)
    mamp = asset.micro * k * MICRO_SCALE
    fm = [float(quantize(f, scene.loop_frames, scene.fps)) for f in MICRO_HZ]
    marg = [two_pi * f * t + ph for f, ph in zip(fm, MICRO_PHASES)]
    mc = mamp * np.sin(marg)
    ms = mamp * np.cos(marg)

    extra = np.zeros(3)  # grass: the camera tilt, times h (world)
    # grass ambient motion (figure-eight and wobble), driven by the wind the grass samples (the write-up: "driven by
    # the length of the force field"): after the asset's ramp, like the base motion, so the two keep their ratio
    # at every strength and the ramp shapes the whole grass motion; still air leaves the grass still
    ambient = scene.ambient * eff * asset.asset_height
    fade = 1.0
    if grass and camera_matrix is not None:
        cam = np.asarray(camera_matrix, np.float64)
        look = -cam[:3, 2] / max(np.linalg.norm(cam[:3, 2]), 1e-12)
        down = max(0.0, -look[2])
        away = horizontal_dir(origin - cam[:3, 3])
        extra += scene.grass_tilt * down * TILT_SCALE * asset.asset_height * away
        fade = grass_fade(cam, origin, scene)
    return LiveTerms(main=main, bend=bend, dir=inv3 @ d, vc=inv3 @ vc, vs=inv3 @ vs, mc=mc, ms=ms,
                     world_extra=extra, fade=fade, ambient=ambient)


@dataclass(frozen=True)
class BladeWind:
    """Grass, per vertex: the wind each blade takes at its own place (#29: a field in one object does not sway as
    one). ``eff`` (N,): the effective wind at the vertex's blade, which scales every ``LiveTerms`` term (per unit
    of wind for grass); ``extra`` (N, 3): the world lean per unit height, the blade's figure-eight plus the camera
    tilt (``LiveTerms.world_extra``); ``in_face`` (N,) bool: the vertices in a face of their blade (None: all), the
    only ones the blade's wind and the actors' push move (a vertex in no face is drawn by no engine)."""
    eff: np.ndarray
    extra: np.ndarray
    in_face: np.ndarray | None = None


def blade_wind(positions: npt.ArrayLike, live: Mapping[str, npt.ArrayLike], matrix_world: npt.ArrayLike, frame: float,
               scene: SceneWind, asset: AssetWind, lt: LiveTerms, faces: npt.ArrayLike | None = None) -> BladeWind:
    """The wind of each grass blade. A blade is the piece a vertex hangs from: its place ``X`` is its attach point
    in world space, ``X = M (p - Pivot)`` (the same for all its vertices: the blade's root). With ``d`` the wind
    direction, ``U`` = ``GUST_SPEED`` and ``t`` the loop time:

    the gust and the figure-eight at ``X`` are those of the world origin at the time ``tau = t - X.d / U``: waves
    that run across the field along the wind.

    - the gust is ``gust(t, X, travel=True)``: ``sum_i amp_i gain_i sin(2 pi f_i tau + ph_i - lag_i)``;
      ``eff = ramp(max(0, strength (1 + gust_strength gust)))``;
    - the figure-eight leans the blade by ``ambient * eff * AMBIENT_SCALE * (sin(2 pi fa tau) d
      + 0.5 sin(2 pi fa2 tau) across)`` (world, per unit height; ``across = (-d_y, d_x, 0)``; ``fa``, ``fa2`` the
      quantised ``AMBIENT_HZ``, ``2 AMBIENT_HZ``; ``ambient`` = ``scene.ambient * asset_height``).

    Per-object grass before (#29) took both at the object's origin ``o``, with the phases ``W_i . o`` and
    ``OBJECT_PHASE . o`` and the figure-eight along world X and Y. ``X.d / U`` is a phase fixed in time, so a loop
    stays seamless.

    ``faces`` (N,): a face of each vertex (``vertex_faces``: -1 for a vertex in no face), or None (every vertex in
    a face). The node group computes a blade's wind once per face and reads it back per vertex from its face: a
    vertex in no face takes no wind (``eff`` 0, so no figure-eight either; the camera tilt stays)."""
    p = np.asarray(positions, np.float64).reshape(-1, 3)
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    rel = np.asarray(live[LIVE_ATTRS[3]], np.float64).reshape(-1, 3)
    x = (p - rel) @ m[:3, :3].T + m[:3, 3]
    t = loop_time(frame, scene)
    eff = np.asarray(effective_wind(t, x, scene, asset, travel=True))  # (N,): one value per vertex
    d = horizontal_dir(scene.direction)
    delay = (x @ d) / GUST_SPEED
    fa = float(quantize(AMBIENT_HZ, scene.loop_frames, scene.fps))
    fa2 = float(quantize(2 * AMBIENT_HZ, scene.loop_frames, scene.fps))
    two_pi = 2 * math.pi
    aamp = lt.ambient * eff * AMBIENT_SCALE
    across = np.array([-d[1], d[0], 0.0])
    extra = ((aamp * np.sin(two_pi * fa * (t - delay)))[:, None] * d[None, :]
             + (aamp * 0.5 * np.sin(two_pi * fa2 * (t - delay)))[:, None] * across[None, :])
    in_face = None
    if faces is not None:
        in_face = np.asarray(faces).reshape(-1) >= 0
        eff, extra = np.where(in_face, eff, 0.0), np.where(in_face[:, None], extra, 0.0)
    return BladeWind(eff=eff, extra=extra + lt.world_extra[None, :], in_face=in_face)


def wind_offsets(positions: npt.ArrayLike, height: npt.ArrayLike, wind_color: npt.ArrayLike,
                 normals: npt.ArrayLike | None, matrix_world: npt.ArrayLike, frame: float, scene: SceneWind,
                 asset: AssetWind, camera_matrix: npt.ArrayLike | None = None, terrain_z: npt.ArrayLike | None = None,
                 live: Mapping[str, npt.ArrayLike] | None = None, push: GrassPush | None = None,
                 faces: npt.ArrayLike | None = None) -> npt.NDArray[np.float32]:
    """(N, 3) object-space offsets of the live wind at ``frame`` (the twin of the "EnvFX Wind" node group).

    The swing (``wind_swing``: the talk's bend, sway, lift, flutter, whole-asset bend and grass motion as offsets)
    is turned into motion that keeps lengths (``keep_lengths``): each vertex turns about its branch's attach point
    towards its swung place, keeping its distance from it, then the branch is carried rigidly by the whole-asset
    bend at its attach point (a rotation about the point below it at the asset's base), so a plant bends and never
    stretches at any strength.

    Grass only: every blade takes the wind at its own place (``blade_wind``: gusts and the figure-eight travel
    across a field as waves); ``camera_matrix`` (4x4 world matrix of the active camera, or None) drives the tilt
    away from a camera looking down and the distance fade; ``terrain_z`` (N,) is the world Z of the terrain under
    each rest vertex (NaN where there is none), or None: its physical (unbent) height, as on a bent level the wind
    works before the bend (the live wind reads the terrain as drawn plus the drop its bend gives the vertex's x, y).
    ``live``: ``live_attributes(positions, height, wind_color)`` when already computed. ``push`` (grass only, or
    None): the interaction buffer the blades read (``push.GrassPush``: actors push them down and away). ``faces``
    (grass only): a face of each vertex (``vertex_faces``), or None when every vertex is in a face: a vertex in
    none takes neither the blade's wind nor the push (``blade_wind``)."""
    p = np.asarray(positions, np.float64).reshape(-1, 3)
    h = np.asarray(height, np.float64).reshape(-1)
    live = live_attributes(p, h, wind_color) if live is None else live
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    origin = m[:3, 3]
    lt = live_terms(m, frame, scene, asset, camera_matrix)
    blades = blade_wind(p, live, m, frame, scene, asset, lt, faces) if asset.category == "GRASS" else None
    swing = wind_swing(p, normals, m, frame, scene, asset, live, lt, blades, push)
    local = keep_lengths(swing, live, m, asset, lt, blades)
    if asset.category != "GRASS":
        return local.astype(np.float32)
    # scale down and stop animating with distance; follow the terrain (placement, not faded)
    fade = lt.fade
    local = fade * local + (fade - 1.0) * p
    if terrain_z is not None:
        inv3 = np.linalg.inv(m[:3, :3])
        tz = np.asarray(terrain_z, np.float64).reshape(-1)
        dz = np.where(np.isfinite(tz), tz - origin[2], 0.0)
        local = local + dz[:, None] * inv3[:, 2][None, :]
    return local.astype(np.float32)


def wind_swing(positions: npt.ArrayLike, normals: npt.ArrayLike | None, matrix_world: npt.ArrayLike, frame: float,
               scene: SceneWind, asset: AssetWind, live: Mapping[str, npt.ArrayLike], lt: LiveTerms | None = None,
               blades: BladeWind | None = None, push: GrassPush | None = None) -> np.ndarray:
    """(N, 3) object-space swing: where the wind pushes each vertex, as an offset, before ``keep_lengths`` turns it
    into motion along arcs. ``(Ba bend + H^2 main) dir + Bac vc + Bas vs + Rc mc + Rs ms`` (``LiveTerms``,
    ``live_attributes``: Branch = (Ba, Bac, Bas), Leaf = (Rc, Rs, H^2)). Grass: that sum times the blade's wind
    ``eff`` (``blade_wind``), plus its lean (figure-eight and camera tilt, ``BladeWind.extra``) times ``H`` and its
    wobble along the normal, ``eff ambient WOBBLE_SCALE H wave(p . WOBBLE_WAVE / 2 pi + fw t)`` (inside the swing,
    so they keep lengths too); with ``push``, the lean actors give the blade (``push.push_lean`` at its root) times
    ``H`` too, so it turns about its root (not a vertex in no face: ``BladeWind.in_face``)."""
    p = np.asarray(positions, np.float64).reshape(-1, 3)
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    lt = live_terms(m, frame, scene, asset) if lt is None else lt
    branch, leaf = (np.asarray(live[name], np.float64).reshape(-1, 3) for name in LIVE_ATTRS[:2])
    b_branch, bc, bs = branch.T
    rc, rs, h2 = leaf.T
    swing = ((h2 * lt.main + b_branch * lt.bend)[:, None] * lt.dir + bc[:, None] * lt.vc
             + bs[:, None] * lt.vs + rc[:, None] * lt.mc + rs[:, None] * lt.ms)
    if asset.category != "GRASS":
        return swing
    blades = blade_wind(p, live, m, frame, scene, asset, lt) if blades is None else blades
    hh = np.asarray(live[LIVE_ATTRS[2]], np.float64).reshape(-1)
    inv3 = np.linalg.inv(m[:3, :3])
    nrm = np.asarray(normals, np.float64).reshape(-1, 3)
    t = loop_time(frame, scene)
    fw = float(quantize(WOBBLE_HZ, scene.loop_frames, scene.fps))
    wamp = blades.eff * lt.ambient * WOBBLE_SCALE * hh * wave(p @ (np.asarray(WOBBLE_WAVE) / (2 * math.pi)) + fw * t)
    # the figure-eight and tilt lean the clump (h times a vector) like the whole-asset bend, and the wobble grows
    # with the height: both read H (h on the ground pieces; a branch is carried)
    lean = blades.extra
    if push is not None:
        rel = np.asarray(live[LIVE_ATTRS[3]], np.float64).reshape(-1, 3)
        pushed = push_lean((p - rel) @ m[:3, :3].T + m[:3, 3], push)
        lean = lean + (pushed if blades.in_face is None else np.where(blades.in_face[:, None], pushed, 0.0))
    return blades.eff[:, None] * swing + hh[:, None] * (lean @ inv3.T) + wamp[:, None] * nrm


def keep_lengths(swing: np.ndarray, live: Mapping[str, npt.ArrayLike], matrix_world: npt.ArrayLike, asset: AssetWind,
                 lt: LiveTerms, blades: BladeWind | None = None) -> np.ndarray:
    """(N, 3) object-space offsets that move each vertex along arcs towards its ``swing``:

    1. about its attach point ``A`` (``p - A`` = Pivot): ``q = p - A + swing`` rescaled to ``|p - A|``, so the
       vertex keeps its distance from ``A`` (the trunk's attach point is its base: its whole-asset bend is the
       GPU Gems 3 rescale; a stem's is its root);
    2. a branch is carried with its ``A``: moved as the whole-asset bend moves the asset's axis at ``A``'s height
       ``hA`` (Carry), the same rescale about the base of the point ``hA H up`` swung by ``hA^2 main dir``
       (+ ``hA`` times the grass's lean): ``T = hA H |up| (normalize(H up + hA main dir + lean) - normalize(up))``,
       0 for the trunk and stems (Carry 0). Grass: ``main`` and the lean are the blade's (``blades``).

    Step 2 moves a branch with its leaves as one piece, so both distances survive it. Assumes a uniform object
    scale (lengths are kept in object space)."""
    m = np.asarray(matrix_world, np.float64).reshape(4, 4)
    inv3 = np.linalg.inv(m[:3, :3])
    rel = np.asarray(live[LIVE_ATTRS[3]], np.float64).reshape(-1, 3)
    ha = np.asarray(live[LIVE_ATTRS[4]], np.float64).reshape(-1)
    q = rel + swing
    rest = np.linalg.norm(rel, axis=1)
    now = np.linalg.norm(q, axis=1)
    # 0 / 0 is 0, as the Math node's Divide: a vertex at its own attach point stays there
    turned = q * np.divide(rest, now, out=np.zeros_like(rest), where=now > 0.0)[:, None]
    up = inv3[:, 2]  # world up in object space (its length the object's 1 / scale)
    height = asset.asset_height
    inv_h = 1.0 / height if height > 0.0 else 0.0  # (the Math node's Divide: 0 for 0)
    # the axis's direction at hA, over H: up + (hA main dir + the grass's lean) / H; without wind exactly up,
    # so a branch's carry is then exactly 0
    if blades is not None:
        lean = up[None, :] + blades.extra @ inv3.T * inv_h
        main = blades.eff * lt.main
    else:
        lean = up[None, :] + (inv3 @ lt.world_extra * inv_h if asset.category == "GRASS" else 0.0)
        main = np.full(len(rel), lt.main)
    lean = lean + (ha * main * inv_h)[:, None] * lt.dir[None, :]

    def unit(v):
        length = np.sqrt((v * v).sum(-1, keepdims=True))
        return np.divide(v, length, out=np.zeros_like(v), where=length > 0.0)

    carry = (ha * height * np.sqrt(up @ up))[:, None] * (unit(lean) - unit(up[None, :]))
    return (turned - rel) + carry
