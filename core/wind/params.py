"""The wind's constants shared with shader_nodes/wind.py, the per-asset presets, the bake's labels and its
error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# --- constants shared with shader_nodes/wind.py ----------------------------------------------------------

CATEGORIES = ("TREE", "PLANT", "GRASS", "SPECIAL")
# spring natural frequency (Hz) and branch oscillation frequency (Hz) per category
SPRING_HZ = {"TREE": 0.35, "PLANT": 0.8, "GRASS": 1.5, "SPECIAL": 0.6}
BRANCH_HZ = {"TREE": 0.45, "PLANT": 0.9, "GRASS": 1.3, "SPECIAL": 1.1}

GUST_AMPS = (0.6, 0.3, 0.1)
GUST_MULTS = (1.0, 2.13, 3.71)
GUST_PHASES = (0.0, 1.7, 4.1)
GUST_WAVES = ((0.11, 0.07), (-0.05, 0.13), (0.17, -0.09))  # rad per metre of the asset's origin (x, y)

MAIN_SCALE = 0.08      # whole-asset bend at the top per unit of wind, in asset heights
BRANCH_SCALE = 0.06    # branch motion at B = 1 per unit of wind, in asset heights
MICRO_SCALE = 0.006    # leaf flutter at R = 1 per unit of wind, in asset heights
MICRO_HZ = (2.5, 3.25, 1.925)  # leaf flutter frequency per object axis
MICRO_PHASES = (0.0, 2.1, 4.2)  # and its phase per object axis (rad)
MICRO_WAVES = ((3.1, 1.3, 0.7), (-1.1, 2.9, 1.7), (0.9, -2.3, 3.3))  # rad per metre, object space
# Hidden per-vertex attributes the live wind reads (written from EnvFX_Wind, EnvFX_Height and the rest positions
# by ``live_attributes`` when wind is added or re-baked). Geometry nodes pay for every attribute read and every
# square root per vertex about as much as for a dozen additions, so the static factors of the swing go three to a
# vector: Branch = (B, B cos phi, B sin phi) of the branch's lever, Leaf = (R cos psi, R sin psi, H^2); H alone
# (the grass terms read it), Pivot (a vector: from the vertex's attach point to it), Carry.
LIVE_ATTRS = (".EnvFX_Wind_Branch", ".EnvFX_Wind_Leaf", ".EnvFX_Wind_H", ".EnvFX_Wind_Pivot", ".EnvFX_Wind_Carry")
LIVE_VECTORS = (".EnvFX_Wind_Branch", ".EnvFX_Wind_Leaf", ".EnvFX_Wind_Pivot")
# and per face: the root of the face's blade (``blade_roots``, object space), where grass computes the blade's wind
# and push. Read on the faces, it costs nothing per vertex (mean positions and Pivots of the faces cost the push half
# its time)
LIVE_ROOT = ".EnvFX_Wind_Root"
# and per vertex: a face of the vertex's blade (-1: in no face), where grass reads back what it
# computes once per blade (a Sample Index of the faces: a gather, where reading a face value on the points averages)
LIVE_FACE = ".EnvFX_Wind_Face"
# the hidden attributes of EnvFX before 0.15 of the group (five floats in place of Branch and Leaf): removed when
# the live attributes are rewritten
LIVE_ATTRS_OLD = (".EnvFX_Wind_B", ".EnvFX_Wind_Bc", ".EnvFX_Wind_Bs", ".EnvFX_Wind_Rc", ".EnvFX_Wind_Rs")
PIVOT_B = 1e-4         # a piece's attach point: its vertices within this of its lowest B; when those span more
PIVOT_H = 0.05         # than this of the asset's height (a trunk: B is 0 all along it), the lowest of them
PIVOT_BASE = 0.01      # (within this); a piece whose attach point is within PIVOT_H of the base stands on the ground
BRANCH_MULTS = (1.0, 1.37, 0.83)
BRANCH_PHASES = (0.0, 1.0, 2.0)
AMBIENT_HZ = 0.3       # grass figure-eight
# grass ambient motion per unit of effective wind, in asset heights: the write-up's ambient motion "accounts for
# about 80% of the total animation" (80% of the animated motion of a GRASS-preset clump in the default wind)
AMBIENT_SCALE = 0.125
WOBBLE_HZ = 1.7
WOBBLE_SCALE = 0.0375
WOBBLE_WAVE = (2.0, 2.0, 0.0)
# grass only: gusts and the ambient motion travel across a field along the wind at this speed (m/s), each blade
# taking them at its own place (``core.wind.live.blade_wind``): a gust wave of the gust frequency (0.2 Hz) is then
# 10 m long, the figure-eight's 6.7 m (per-object grass before #29 took a phase from OBJECT_PHASE = (0.37, 0.59)
# rad per metre of the object's origin)
GUST_SPEED = 2.0
TILT_SCALE = 0.15      # grass tilt at the top, in asset heights, for a camera looking straight down
TERRAIN_RAY = 100.0    # terrain rays start this far above each vertex (object units)

MAX_AO_SAMPLES = 4096  # Cycles AO samples of a bake (scene.envfx.wind.ao_samples, the CLI's --ao-samples): 0 = no AO


# per-asset presets for common asset types (object.envfx.wind values; AssetWind's keywords but asset_height)
PRESETS: dict[str, dict[str, Any]] = {
    "TREE": dict(category="TREE", rigidity=1.0, bend=1.0, sway=1.0, lift=0.5, micro=1.0, ramp=0.0, main_bend=True),
    "BUSH": dict(category="PLANT", rigidity=1.5, bend=1.2, sway=1.0, lift=0.6, micro=1.2, ramp=1.0, main_bend=False),
    "GRASS": dict(category="GRASS", rigidity=1.0, bend=1.5, sway=0.5, lift=0.2, micro=0.5, ramp=2.0, main_bend=True),
    "BANNER": dict(category="SPECIAL", rigidity=0.5, bend=2.0, sway=2.0, lift=1.5, micro=2.0, ramp=1.0,
                   main_bend=False),
}

LABEL_AUTO, LABEL_TRUNK, LABEL_BRANCH, LABEL_LEAF = 0, 1, 2, 3
GOLDEN = 0.6180339887498949


class WindError(ValueError):
    """Invalid input for the wind bake or the live wind; the message says what is wrong and what to do."""


FLAT_HEIGHT = 1e-9  # an asset whose vertices with faces span no more than this along world Z is flat
TRUNK_STANDOUT = 1.5  # the largest island on the ground is the trunk only when at least this much bigger (bounding-
                      # box diagonal) than the next stem-sized one; else they are all stems (a multi-stem bush)


def flat_error(names: Sequence[str] = ()) -> WindError:
    """The refusal of a flat asset; ``names``: its objects, so that the one to fix is found in a batch."""
    what = f"The asset {', '.join(names)}" if names else "The asset"
    return WindError(f"{what} is flat (no height along world Z): wind data needs an upright asset; if it was "
                     f"imported lying down, rotate it upright first")


VERTEX_GROUP_NAMES = ("EnvFX_Trunk", "EnvFX_Branch", "EnvFX_Leaf")
