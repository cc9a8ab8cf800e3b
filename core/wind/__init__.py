"""Vegetation wind (Horizon Zero Dawn talk), pure numpy: the wind-data bake and the live-wind reference.

Bake (``bake_wind_data``), per vertex of an asset made of one or more objects, in world space (Z up):

- height  0 at the asset's base, 1 at its top (whole-asset bend);
- B       distance from the trunk along the branch structure, normalised over the asset (branch motion);
- R       distance from the point where a leaf island attaches to its branch, normalised per leaf (flutter);
- G       a stable per-branch index in 0..1 (phase offset, so branches do not move in unison);
- A       ambient occlusion by the asset itself (``wind_hierarchy.ambient_occlusion``, called by the bridge).

Structure, from the vertices that belong to a face only (a vertex without one, such as a stray point or a
loose-edge strand, takes the data of its nearest vertex with a face): islands (connected components of the edge
graph, vertices at one position joined); the trunk is the largest island standing on the ground (or the islands
marked trunk; with all islands of about one size, none is found and the lowest is used) when it is at least
``TRUNK_STANDOUT`` times the next stem-sized island on the ground; else (a multi-stem bush) there is no trunk and all
of those are stems with their own roots (``BakeResult.multi_stem``); the trunk's axis and radius per
height slice split off branches welded to it. Every other island hangs from the finest clearly bigger island within
a tolerance relative to the asset (``wind_hierarchy.attach_islands``), giving trunk -> branch levels -> leaves
(islands nothing hangs from); other islands standing on the ground and not small are stems with their own roots.
B grows along that hierarchy from the trunk, G is one phase per first-level branch, R runs over each leaf from the
end that hangs from its parent. Overrides (vertex groups / material slots, resolved by the bridge) label vertices
trunk / branch / leaf.

Live wind (``wind_offsets``): the reference the geometry-nodes group "EnvFX Wind" must match to 1e-4. The
talk's motions are summed as a swing (``wind_swing``) that ``keep_lengths`` turns into motion along arcs about
each vertex's attach point, so plants bend and never stretch at any strength (GPU Gems 3 ch. 16). All
periodic terms are sines of ``2 pi f t + phase`` (the grass wobble a parabolic sine); per-vertex phases are
static, so each per-vertex sine is split into per-vertex factors baked once (``live_attributes``) times
per-asset sines and cosines (``live_terms``). With a loop length every frequency is rounded to a whole
number of cycles per loop, so frame ``s`` and ``s + loop`` are identical. Gusts are a sum of three sines in time
and space (sampled at the asset's origin); the spring response per category is the exact steady-state response
of a critically damped spring (natural frequency ``f0``) to each gust sine: gain ``f0^2 / (f0^2 + f^2)`` and
phase lag ``2 atan(f / f0)``. That is a closed form in time, so any frame can be evaluated on its own (scrub,
render farm, loop) and a gust rises and settles instead of snapping.
"""

from __future__ import annotations

from .params import (CATEGORIES, SPRING_HZ, BRANCH_HZ, GUST_AMPS, GUST_MULTS, GUST_PHASES, GUST_WAVES, MAIN_SCALE,
    BRANCH_SCALE, MICRO_SCALE, MICRO_HZ, MICRO_PHASES, MICRO_WAVES, LIVE_ATTRS, LIVE_VECTORS, LIVE_ATTRS_OLD,
    LIVE_ROOT,
    LIVE_FACE,
    PIVOT_B, PIVOT_H, PIVOT_BASE, BRANCH_MULTS, BRANCH_PHASES, AMBIENT_HZ, AMBIENT_SCALE, WOBBLE_HZ, WOBBLE_SCALE,
    WOBBLE_WAVE, GUST_SPEED, TILT_SCALE, TERRAIN_RAY, MAX_AO_SAMPLES, PRESETS, LABEL_AUTO, LABEL_TRUNK,
    LABEL_BRANCH, LABEL_LEAF, GOLDEN, WindError, FLAT_HEIGHT, TRUNK_STANDOUT, flat_error, VERTEX_GROUP_NAMES)
from .bake import (BakeResult, bake_wind_data, bake_steps, connected_components, levels_text)
from .channels import (LAYOUTS, SOURCES, HZD_LAYOUT, CRYENGINE_LAYOUT, pack_channels)
from .push import PUSH_EPS, GrassPush, field_uv, push_field, push_lean, sample_uv
from .live import (SceneWind, AssetWind, quantize, loop_time, wave, horizontal_dir, gust, effective_wind, grass_fade,
    live_attributes, blade_roots, vertex_faces, LiveTerms, live_terms, BladeWind, blade_wind, wind_offsets, wind_swing,
    keep_lengths)

__all__ = [
    "CATEGORIES", "SPRING_HZ", "BRANCH_HZ", "GUST_AMPS", "GUST_MULTS", "GUST_PHASES", "GUST_WAVES", "MAIN_SCALE",
    "BRANCH_SCALE", "MICRO_SCALE", "MICRO_HZ", "MICRO_PHASES", "MICRO_WAVES", "LIVE_ATTRS", "LIVE_VECTORS",
    "LIVE_ATTRS_OLD", "LIVE_ROOT", "LIVE_FACE", "PIVOT_B", "PIVOT_H", "PIVOT_BASE", "BRANCH_MULTS", "BRANCH_PHASES",
    "AMBIENT_HZ",
    "AMBIENT_SCALE", "WOBBLE_HZ", "WOBBLE_SCALE", "WOBBLE_WAVE", "GUST_SPEED", "TILT_SCALE",
    "TERRAIN_RAY", "MAX_AO_SAMPLES", "PRESETS",
    "LABEL_AUTO", "LABEL_TRUNK", "LABEL_BRANCH", "LABEL_LEAF", "GOLDEN", "WindError", "FLAT_HEIGHT", "TRUNK_STANDOUT",
    "flat_error", "VERTEX_GROUP_NAMES", "BakeResult", "bake_wind_data", "bake_steps", "connected_components",
    "levels_text", "LAYOUTS", "SOURCES", "HZD_LAYOUT", "CRYENGINE_LAYOUT", "pack_channels", "SceneWind", "AssetWind",
    "quantize", "loop_time", "wave", "horizontal_dir", "gust", "effective_wind", "grass_fade", "live_attributes",
    "blade_roots", "vertex_faces",
    "LiveTerms", "live_terms", "BladeWind", "blade_wind", "wind_offsets", "wind_swing", "keep_lengths",
    "PUSH_EPS", "GrassPush", "sample_uv", "push_lean", "push_field", "field_uv",
]
