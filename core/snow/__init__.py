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

The modules, each importing only those before it: ``base`` (SnowError, the limits), ``files`` (the bake's disk
space, temporary folders and EXR images), ``stamp``, ``trails`` (what the live trails show, puffs, actor size),
``buffer`` (the buffer's window, fields and JSON), ``baking`` (the bake), ``live`` (the bake's buffer at any
frame, for a frame handler) and ``cover``. This package re-exports
their public names: ``core.snow.bake(...)`` as before the split.
"""

from . import base, baking, buffer, cover, files, live, stamp, trails
from .base import CHANNELS, FRAMINGS, MAX_RESOLUTION, DEFAULT_VERTEX_BUDGET, SnowError
from .files import (TEMP_PREFIX, bake_output_bytes, check_disk_space, remove_stale_temp, stale_temp_folders, write_exr,
                    read_exr)
from .stamp import (StampParams, stamp_profile, reach, vertical_fade, stamp_points, trail_update, simulate_points,
                    TrailState)
from .trails import (GROUND_KEEP, camera_fade, shown_offset, PUFF_MIN_PUSH, PUFF_SIDEWAYS, PuffParams,
                     puff_launch_bounds, puff_step, puff_radius, actor_size)
from .buffer import (BufferParams, snap_origin, edge_fade_mask, wobble_peak, HeightField, rasterize_top, sample_buffer,
                     engine_sampling, engine_uv_offset, BUFFER_FORMAT, BUFFER_VERSION, read_buffer_metadata,
                     buffer_metadata)
from .baking import BakeResult, BufferStepper, bake_job, bake, check_part
from .live import LiveBuffer
from .cover import (CoverParams, CoverMesh, SnowCover, triangle_normals, up_facing, grid_factor, estimate_vertices,
                    value_noise, sample_image, generate_cover, TRAIL_CELLS, trail_cells, by_trail_cells)

__all__ = (
    "base", "files", "stamp", "trails", "buffer", "baking", "cover", "CHANNELS", "FRAMINGS", "MAX_RESOLUTION",
    "DEFAULT_VERTEX_BUDGET", "SnowError", "TEMP_PREFIX", "bake_output_bytes", "check_disk_space", "remove_stale_temp",
    "stale_temp_folders", "write_exr", "read_exr", "StampParams", "stamp_profile", "reach", "vertical_fade",
    "stamp_points", "trail_update", "simulate_points", "TrailState", "GROUND_KEEP", "camera_fade", "shown_offset",
    "PUFF_MIN_PUSH",
    "PUFF_SIDEWAYS", "PuffParams", "puff_launch_bounds", "puff_step", "puff_radius", "actor_size", "BufferParams",
    "snap_origin", "edge_fade_mask", "wobble_peak", "HeightField", "rasterize_top", "sample_buffer", "engine_sampling",
    "engine_uv_offset", "BUFFER_FORMAT", "BUFFER_VERSION", "read_buffer_metadata", "buffer_metadata", "BakeResult",
    "bake_job", "bake", "check_part", "BufferStepper", "live", "LiveBuffer", "CoverParams", "CoverMesh", "SnowCover",
    "triangle_normals", "up_facing", "grid_factor",
    "estimate_vertices", "value_noise", "sample_image", "generate_cover", "TRAIL_CELLS", "trail_cells",
    "by_trail_cells",
)
