"""Rigid sway: the live wind for many small props, as the whole object turning about its origin.

A level holds thousands of small props (bushes, flowers, signs, lamps). A geometry-nodes group per object costs
each of them its per-object work at every frame, whatever its size, so a level of 5,000 costs several times its
bare modifiers (docs/wind.md, Performance). A rigid prop has no group: two drivers on its delta rotation (X and
Y) compute the sway from ``frame`` and the scene's wind settings as simple expressions, which Blender evaluates
without Python; the object's own rotation is left alone.

The sway, per prop (origin ``o``, the world XY of the object when the sway was set up, and the prop's phase
``phi`` from it, ``prop_phase``):

- the effective wind ``e`` at ``o``: the live wind's (``core.wind.effective_wind``, gusts with the category's
  spring response, the asset's ramp);
- the lean along the wind: ``theta_a = atan(e / rigidity (MAIN_SCALE main_bend + 0.3 bend BRANCH_SCALE
  sin(2 pi fb_0 t + BRANCH_PHASES[0] + phi)))``: the chord of the bent asset's top (its whole-asset bend and branch
  motion along the wind at a lever of 1), so the top of the prop goes where the bent asset's top would;
- the sway across it: ``theta_c = atan(e / rigidity 0.5 sway BRANCH_SCALE sin(2 pi fb_1 t + BRANCH_PHASES[1] +
  phi))``;
- as a turn about world axes (``world_sway``): the lean about ``z x d`` and the sway about ``z x c`` (``d`` the
  wind's horizontal direction, ``c`` the direction across it), ``s = (-d_y theta_a - d_x theta_c, d_x theta_a -
  d_y theta_c, 0)``;
- added to the delta rotation the object had (``base``; Euler, in the object's rotation mode), which Blender
  applies about the parent's axes: without a turned parent, X and Y are ``base + s``; with one, ``base + M s``, ``M``
  the inverse of the parent's rotation (``RigidProp.frame``; the same to first order in the angles).

Lift, leaf flutter and grass's own motion have no rigid form and are left out. ``driver_expression`` writes the
same numbers as drivers' simple expressions (below); ``rigid_euler`` is the numpy twin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .live import AssetWind, SceneWind, effective_wind, horizontal_dir, loop_time, quantize
from .params import (CATEGORIES, BRANCH_HZ, BRANCH_MULTS, BRANCH_PHASES, BRANCH_SCALE, GUST_AMPS, GUST_MULTS,
                     GUST_PHASES, GUST_WAVES, MAIN_SCALE, SPRING_HZ)

# the prop's phase: a fixed pseudo-random function of its origin (metres), so neighbours do not sway in unison
PHASE_WAVE = (12.9898, 78.233)


def prop_phase(origin: Sequence[float]) -> float:
    """The phase (rad, in [0, 2 pi)) of a prop whose origin is ``origin`` (world X, Y)."""
    return math.fmod(PHASE_WAVE[0] * float(origin[0]) + PHASE_WAVE[1] * float(origin[1]), 2 * math.pi) % (2 * math.pi)


@dataclass(frozen=True)
class RigidProp:
    """One prop in rigid sway: its origin (world X, Y) and delta rotation (X, Y, Z) when the sway was set up; and
    ``frame``, for a prop whose delta rotation does not turn about world axes (a parent turned, as an imported
    file's root often is): the 3x3 matrix, row by row, that takes a turn about world axes to its delta rotation's
    axes (the inverse of the rotation its parent gives), else None."""
    origin: tuple = (0.0, 0.0)
    base: tuple = (0.0, 0.0, 0.0)
    frame: tuple | None = None


def rigid_angles(frame: float, scene: SceneWind, asset: AssetWind, prop: RigidProp) -> tuple[float, float]:
    """``(theta_a, theta_c)``: the lean along the wind and the sway across it (rad) at ``frame``."""
    t = loop_time(frame, scene)
    o = np.array([prop.origin[0], prop.origin[1], 0.0])
    e = float(effective_wind(t, o, scene, asset))
    phi = prop_phase(prop.origin)
    fb = [float(quantize(BRANCH_HZ[asset.category] * m, scene.loop_frames, scene.fps)) for m in BRANCH_MULTS[:2]]
    k = e / asset.rigidity
    along = k * (MAIN_SCALE * (1.0 if asset.main_bend else 0.0)
                 + 0.3 * asset.bend * BRANCH_SCALE * math.sin(2 * math.pi * fb[0] * t + BRANCH_PHASES[0] + phi))
    across = k * 0.5 * asset.sway * BRANCH_SCALE * math.sin(2 * math.pi * fb[1] * t + BRANCH_PHASES[1] + phi)
    return math.atan(along), math.atan(across)


def world_sway(frame: float, scene: SceneWind, asset: AssetWind, prop: RigidProp) -> tuple[float, float]:
    """The sway as a turn about world X and Y (rad) at ``frame``: the lean about ``z x d``, the sway about
    ``z x c``."""
    theta_a, theta_c = rigid_angles(frame, scene, asset, prop)
    d = horizontal_dir(scene.direction)
    return (-d[1] * theta_a - d[0] * theta_c, d[0] * theta_a - d[1] * theta_c)


def rigid_euler(frame: float, scene: SceneWind, asset: AssetWind, prop: RigidProp) -> tuple[float, float, float]:
    """The prop's delta rotation (Euler X, Y, Z) at ``frame``: its base plus the world sway, taken through
    ``prop.frame`` when it has one (Z then turns too)."""
    sx, sy = world_sway(frame, scene, asset, prop)
    b = [float(v) for v in prop.base]
    if prop.frame is None:
        return (b[0] + sx, b[1] + sy, b[2])
    m = np.asarray(prop.frame, np.float64).reshape(3, 3)
    x, y, z = (float(v) for v in np.array(b) + m[:, 0] * sx + m[:, 1] * sy)
    return (x, y, z)


# --- the drivers ---------------------------------------------------------------------------------------------
#
# Blender keeps a driver's expression to 255 characters, so the sway is computed in stages, each a driver of its
# own. What is the same for every prop of a scene is computed once a frame, by the drivers of a "clock" (two float
# arrays on a hidden ID of the scene): ``TIME_NAMES`` (the loop time, the quantised frequencies, the wind's
# unnormalised direction) from the scene's settings, then ``CLOCK_NAMES`` from those. Each prop has three drivers
# holding only its own constants: its effective wind over its rigidity (``PROP_WIND``, a custom property of the
# object, ``wind_expression``) and its delta rotation X and Y (``rotation_expression``).

MAX_EXPRESSION = 255  # characters of a driver's expression that Blender keeps

# what the clock's first stage reads: name -> (``"scene"`` or ``"source"``, a data path, or a world rotation
# channel of the scene's wind object for a Transform Channel variable). With a wind object, its rotation and
# field strength replace the scene's direction and strength
SCENE_VARIABLES = {
    "a": ("scene", "envfx.wind.direction"),
    "f": ("scene", "envfx.wind.gust_frequency"),
    "L": ("scene", "envfx.wind.loop_frames"),
    "fps": ("scene", "render.fps"),
    "fpsb": ("scene", "render.fps_base"),
}
SOURCE_VARIABLES = {
    "rx": ("source", "ROT_X"),
    "ry": ("source", "ROT_Y"),
    "rz": ("source", "ROT_Z"),
}
# and the second, beside the first stage's values
STRENGTH_VARIABLES = {
    "s": ("scene", "envfx.wind.strength"),
    "g": ("scene", "envfx.wind.gust_strength"),
}
SOURCE_STRENGTH = ("source", "field.strength")

# the first stage: the loop time (s), the three gust frequencies and each category's two branch frequencies
# (quantised to the loop), the wind's direction before it is made unit (horizontal)
TIME_NAMES = (("t", "q1", "q2", "q3") + tuple(f"qb{k} {c}" for c in CATEGORIES for k in ("a", "c"))
              + ("zx", "zy"))
# the second: the wind's direction (unit, horizontal; zero when the wind object points straight up) and strength,
# then per category the gust waves' amplitudes (strength, gust strength, gain) and angles (lag applied) and the
# angles of the two branch oscillations (along, across the wind)
_PER_CATEGORY = ("G1", "G2", "G3", "X1", "X2", "X3", "Ba", "Bc")
CLOCK_NAMES = ("dx", "dy", "s") + tuple(f"{n} {c}" for c in CATEGORIES for n in _PER_CATEGORY)
PROP_WIND = "envfx_wind"  # the object's custom property its wind driver writes
PROP_SWAY = "envfx_sway"  # and, with a frame, the two its sway drivers write (the world sway, X and Y)


def _num(x: float) -> str:
    return format(float(x), ".7g")


def _checked(expression: str) -> str:
    if len(expression) > MAX_EXPRESSION:
        raise ValueError(f"A rigid-sway driver expression has {len(expression)} characters, more than Blender keeps "
                         f"({MAX_EXPRESSION}): {expression[:60]}...")
    return expression


def time_variables(source: bool) -> dict[str, tuple[str, str]]:
    """The variables of the clock's first stage (``source``: the scene has a wind object)."""
    out = {k: v for k, v in SCENE_VARIABLES.items() if not (source and k == "a")}
    if source:
        out.update(SOURCE_VARIABLES)
    return out


def time_expressions(source: bool) -> tuple[str, ...]:
    """The simple expression of each ``TIME_NAMES`` value over ``time_variables(source)`` and ``frame``."""
    period = "L*fpsb/fps"

    def q(freq: str) -> str:  # quantize
        return _checked(f"max(floor({freq}*{period}+0.5),1)/({period}) if L>0.5 else {freq}")

    out = [_checked("(frame-L*floor(frame/L) if L>0.5 else frame)*fpsb/fps")]
    out += [q(f"f*{_num(m)}") for m in GUST_MULTS]
    out += [q(_num(BRANCH_HZ[c] * BRANCH_MULTS[k])) for c in CATEGORIES for k in (0, 1)]
    if source:  # the wind object's Z axis (Euler XYZ: Rz Ry Rx (0, 0, 1))
        out += ["cos(rz)*sin(ry)*cos(rx)+sin(rz)*sin(rx)", "sin(rz)*sin(ry)*cos(rx)-cos(rz)*sin(rx)"]
    else:
        out += ["cos(a)", "sin(a)"]
    return tuple(out)


def clock_variables(source: bool) -> dict[str, tuple[str, str]]:
    """The variables of the clock's second stage other than the first stage's values (``TIME_NAMES``, read by
    those names)."""
    out = dict(STRENGTH_VARIABLES)
    if source:
        out["s"] = SOURCE_STRENGTH
    return out


def clock_expressions() -> tuple[str, ...]:
    """The simple expression of each ``CLOCK_NAMES`` value over ``clock_variables`` and ``TIME_NAMES`` (a name
    with a space is read as its first word and the category's index: ``qba0``, ``qbc0``, ... in category order)."""
    n2 = "zx*zx+zy*zy"
    out = [f"zx/sqrt({n2}) if {n2}>1e-24 else 0", f"zy/sqrt({n2}) if {n2}>1e-24 else 0", "s"]
    for ci, category in enumerate(CATEGORIES):
        f0 = _num(SPRING_HZ[category])
        gains = [f"s*g*{_num(amp)}/(1+(q{j + 1}/{f0})**2)" for j, amp in enumerate(GUST_AMPS)]
        gains = [g.replace(f"(q{j + 1}/{f0})**2", f"(q{j + 1}/{f0})*(q{j + 1}/{f0})") for j, g in enumerate(gains)]
        angles = [f"6.283185307179586*q{j + 1}*t+{_num(ph)}-2*atan(q{j + 1}/{f0})" for j, ph in enumerate(GUST_PHASES)]
        branch = [f"6.283185307179586*qb{k}{ci}*t+{_num(BRANCH_PHASES[j])}" for j, k in enumerate(("a", "c"))]
        out += [_checked(e) for e in gains + angles + branch]
    return tuple(out)


def time_values(frame: float, scene: SceneWind) -> np.ndarray:
    """(``len(TIME_NAMES)``,) the clock's first stage at ``frame``."""
    q = [float(quantize(scene.gust_frequency * m, scene.loop_frames, scene.fps)) for m in GUST_MULTS]
    qb = [float(quantize(BRANCH_HZ[c] * BRANCH_MULTS[k], scene.loop_frames, scene.fps)) for c in CATEGORIES
          for k in (0, 1)]
    d = scene.direction
    return np.array([loop_time(frame, scene), *q, *qb, d[0], d[1]], np.float64)


def clock_values(frame: float, scene: SceneWind) -> np.ndarray:
    """(``len(CLOCK_NAMES)``,) the clock's second stage at ``frame``."""
    tv = dict(zip(TIME_NAMES, time_values(frame, scene)))
    t = tv["t"]
    d = horizontal_dir(scene.direction)
    out = [d[0], d[1], scene.strength]
    sg = scene.strength * scene.gust_strength
    for category in CATEGORIES:
        f0 = SPRING_HZ[category]
        q = [tv[f"q{j + 1}"] for j in range(3)]
        out += [sg * amp / (1 + (f / f0) ** 2) for amp, f in zip(GUST_AMPS, q)]
        out += [2 * math.pi * f * t + ph - 2 * math.atan(f / f0) for f, ph in zip(q, GUST_PHASES)]
        out += [2 * math.pi * tv[f"qb{k} {category}"] * t + BRANCH_PHASES[j] for j, k in enumerate(("a", "c"))]
    return np.array(out, np.float64)


def time_variable_name(name: str) -> str:
    """The variable name a clock expression reads a ``TIME_NAMES`` value by."""
    if " " not in name:
        return name
    head, category = name.split(" ")
    return f"{head}{CATEGORIES.index(category)}"


def wind_variables(category: str) -> dict[str, int]:
    """The variables of a prop's wind driver: name -> index into the clock (its category's values)."""
    base = _category_base(category)
    return {"s": 2, **{n: base + i for i, n in enumerate(_PER_CATEGORY[:6])}}


def rotation_variables(category: str) -> dict[str, int]:
    """The clock variables of a prop's rotation drivers (besides ``e``, its wind): name -> index into the clock."""
    base = _category_base(category)
    return {"dx": 0, "dy": 1, "Ba": base + 6, "Bc": base + 7}


def _category_base(category: str) -> int:
    if category not in CATEGORIES:
        raise ValueError(f"Unknown wind category {category!r}: use one of {', '.join(CATEGORIES)}")
    return 3 + len(_PER_CATEGORY) * CATEGORIES.index(category)


def wind_expression(asset: AssetWind, prop: RigidProp) -> str:
    """The prop's effective wind over its rigidity (``e``) over ``wind_variables``."""
    ox, oy = float(prop.origin[0]), float(prop.origin[1])
    gust = "+".join(f"G{j + 1}*sin(X{j + 1}+{_num(math.fmod(w[0] * ox + w[1] * oy, 2 * math.pi))})"
                    for j, w in enumerate(GUST_WAVES))
    w = f"max(0,s+{gust})"
    ramp = float(asset.ramp)
    if ramp:
        return _checked(f"{_num((1 + ramp) / asset.rigidity)}*{w}/(1+{_num(ramp)}*{w})")
    return _checked(f"{_num(1 / asset.rigidity)}*{w}")


def rotation_expression(axis: int, asset: AssetWind, prop: RigidProp) -> str:
    """The prop's delta rotation ``axis`` (0: X, 1: Y) over ``e`` and ``rotation_variables`` (its base and the
    world sway); for a prop with a ``frame``, the world sway alone (``PROP_SWAY``, read by ``frame_expression``)."""
    if axis not in (0, 1):
        raise ValueError(f"A rigid prop's drivers turn X and Y (axis 0 or 1), not axis {axis}")
    phi = _num(prop_phase(prop.origin))
    along = (f"atan(e*({_num(MAIN_SCALE * (1.0 if asset.main_bend else 0.0))}"
             f"+{_num(0.3 * asset.bend * BRANCH_SCALE)}*sin(Ba+{phi})))")
    across = f"atan(e*{_num(0.5 * asset.sway * BRANCH_SCALE)}*sin(Bc+{phi}))"
    base = "0" if prop.frame is not None else _num(prop.base[axis])
    if axis == 0:
        return _checked(f"{base}-dy*{along}-dx*{across}")
    return _checked(f"{base}+dx*{along}-dy*{across}")


def frame_expression(axis: int, prop: RigidProp) -> str:
    """For a prop with a ``frame``: its delta rotation ``axis`` (0, 1, 2) over the world sway ``sx``, ``sy``."""
    if prop.frame is None:
        raise ValueError("Only a prop with a frame (a turned parent) takes its sway through one")
    m = np.asarray(prop.frame, np.float64).reshape(3, 3)
    return _checked(f"{_num(prop.base[axis])}+{_num(m[axis, 0])}*sx+{_num(m[axis, 1])}*sy")
