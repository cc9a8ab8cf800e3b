"""What the live trails show (the camera fade), their puffs, and the size of an actor."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .base import SnowError


# --- what the live trails show ----------------------------------------------------------------------------------
# The shown snow top (the interaction buffer is the physical state and has none of this): the trail offset,
# floored a sliver above the ground, and the write-up's camera fade, "The vertex offset fades out with the
# distance from the camera, lowering the snow flat with the ground surface further away from the player ... and
# preventing the deep snow from visually covering up and hiding smaller objects": far from the camera the snow
# lies flat on the ground (a sliver of 1 - GROUND_KEEP of its thickness stays, so the snow and the terrain never
# fight for the same depth), in between the shown top blends from the trail-deformed top to the flat one.

GROUND_KEEP = 0.98  # the shown snow top never goes lower than this fraction of its thickness below its rest top


def camera_fade(points: ArrayLike, camera: ArrayLike | None, start: float, end: float) -> NDArray[np.float64]:
    """Weight (N,) of the snow's own height at world points (N, 3): 1 up to ``start`` from the ``camera`` (its
    world location), falling linearly to 0 at ``end`` (``end`` at or below ``start``: a step at ``start``).
    ``camera`` None (the scene has no active camera): 1 everywhere, no fade."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if camera is None:
        return np.ones(p.shape[0])
    d = np.linalg.norm(p - np.asarray(camera, dtype=np.float64).reshape(1, 3), axis=1)
    span = max(float(end) - float(start), 1e-6)
    return np.clip(1.0 - (d - float(start)) / span, 0.0, 1.0)


def shown_offset(down: ArrayLike, rim: ArrayLike, thickness: ArrayLike | None = None, fade: ArrayLike = 1.0,
                 keep: float = GROUND_KEEP) -> NDArray[np.float64]:
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


def puff_launch_bounds(speed: float) -> tuple[float, float, float]:
    """(largest horizontal launch speed, smallest and largest upward launch speed) of a new puff."""
    return PUFF_SIDEWAYS * speed, 0.5 * speed, speed


def puff_step(position: ArrayLike, velocity: ArrayLike, age: ArrayLike, dt: float, params: PuffParams
              ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """One frame of the puffs (semi-implicit Euler, Z up): the velocity gains gravity, the position moves by the
    new velocity, the age grows; returns (position, velocity, age, alive) with alive = age < lifetime. Puffs
    launched this frame take their first step the next frame."""
    v = np.array(velocity, dtype=np.float64, copy=True)
    v[:, 2] -= params.gravity * dt
    p = np.asarray(position, dtype=np.float64) + v * dt
    a = np.asarray(age, dtype=np.float64) + dt
    return p, v, a, a < params.lifetime


def puff_radius(age: ArrayLike, params: PuffParams) -> NDArray[np.float64]:
    """A puff's radius: params.size at launch, shrinking linearly to 0 at the end of its life."""
    return params.size * np.clip(1.0 - np.asarray(age, dtype=np.float64) / params.lifetime, 0.0, 1.0)


# --- actors -----------------------------------------------------------------------------------------------

def actor_size(dimensions: ArrayLike, radius_setting: float = 0.0, depth_setting: float = 0.0,
               snow_thickness: float | None = None) -> tuple[float, float]:
    """(radius, depth) of an actor: the settings when > 0, else from its world size (dimensions x, y, z):
    radius = half the larger horizontal size, depth = half the radius (at most the snow thickness)."""
    dims = np.asarray(dimensions, dtype=np.float64)
    radius = float(radius_setting) if radius_setting > 0 else 0.5 * float(max(dims[0], dims[1]))
    depth = float(depth_setting) if depth_setting > 0 else 0.5 * radius
    if depth_setting <= 0 and snow_thickness is not None and snow_thickness > 0:
        depth = min(depth, float(snow_thickness))
    return radius, depth
