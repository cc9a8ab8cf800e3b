"""Gas giant textures from particles advected over a sphere by curl noise, pure numpy.

After Stephen Cameron's "gaseous-giganticus" and the GPU write-up in ``gas-giant-curl-noise-particles.txt``:

Velocity field (``build_field``)
    v(p) = band(lat) * east(p) + p x grad(psi)(p), on the unit sphere (Z is the planet's axis).
    ``band(lat) = B * ((1 - a) + a cos(lat)) * spow(cos(K lat), e) * taper(lat)`` are the counter-rotating bands
    (K bands, speed factor B, odd power e, pole attenuation a; ``taper`` brings the speed to zero in the last
    ``POLE_TAPER_DEG`` degrees so the field is continuous at the poles). ``psi`` is fractal 4D simplex noise of
    (noise_scale * p, w) plus Gaussian vortices placed between bands; ``w`` moves with time. ``p x grad psi``
    is the surface curl of a stream function: tangent to the sphere and divergence-free. The field is
    evaluated analytically on a cube map (``field_size`` texels per face plus a one-texel border taken from the
    neighbouring faces' directions, so bilinear lookups never cross a face and there is no seam) and stored as
    velocities in each face's chart coordinates.

Particles
    Stored as (face, u, v) in cube-face charts ([-1, 1]^2), moved by bilinear lookups of the chart velocity
    (Euler steps, a handful of float32 array passes per step), re-projected to the neighbouring face when they
    leave their chart. Colours come from a palette image (sinusoidal mapping mirrored at the back so the
    longitude wrap has no seam, or stripes: the centre column, latitude only) or from a latitude colour ramp.
    With a lifetime, particles live in ``respawn_batches`` contiguous batches with staggered ages: one batch at
    a time respawns at random places with fresh colours, and every particle's opacity fades in and out over its
    life.

Painting
    Every step each particle blends its colour into the output cube map texel under it with its opacity
    (``texel += (colour - texel) * alpha``). Steps run in chunks (optionally on several threads: numpy releases
    the GIL); all chunks read the texture as it was at the start of the step and write back in chunk order, so
    the result does not depend on the thread count. Every ``blur_interval`` steps the texture is blurred (3x3
    binomial across face edges) and faded toward the centre colour (the palette's mean, or each texel's palette
    colour).

Outputs: six cube faces (``FACES`` order, seen from outside, top of the side faces is +Z; or the standard
engine cube-map faces, ``CUBE_LAYOUTS``), an equirectangular image (bilinear from the cube, seamless at the wrap,
no pinching at the poles), the flow map (east and north velocity in radians per frame: 8-bit with one fixed
``flow_scale``, 0.5 = still; the float EXR holds the velocities) and ``gasgiant.json`` (``bake_metadata``: what
each file holds and how to decode it). ``bake()`` is the whole job as a generator: it writes the files through a
temporary folder and moves them into place at the end, so a cancelled bake leaves nothing behind, and then
removes the files of the previous bake in that folder that it does not write (``previous_outputs``).

The package, one module per part (each imports only the ones above it):

``settings``
    Every setting written once (``SETTINGS``): the dataclass, the Blender properties and the command line's options
    are made from it.
``params``
    ``GasGiantParams``, its checks, presets, the random look, the memory estimate, the key frames of an animation.
``cube``, ``noise``
    Cube-map geometry (faces, texel directions, padded borders, lookups, the equirectangular grid); 4D simplex noise.
``field``, ``field_files``
    The velocity field and its .npz files.
``palette``, ``flow``, ``simulation``
    The particles' colours; the flow map's scale and encoding; the particles painting the cube map.
``layouts``, ``outputs``, ``metadata``, ``state``, ``job``
    Cube-face layouts; the files a bake writes; gasgiant.json; the simulation's state between the parts of a
    sequence baked in parts (a farm's tasks); the bake job (``bake``, ``run_bake``).

Everything a caller uses is re-exported here: ``from core import gasgiant`` then ``gasgiant.run_bake(...)``.
"""

from __future__ import annotations

from ..png import write_png
from .cube import (FACES, dir_to_face_uv, equirect_directions, equirect_from_cube, face_directions, face_uv_to_dir,
                   pad_cube, sample_cube)
from .field import (POLE_TAPER_DEG, Field, band_latitude, band_profile, build_field, build_field_steps,
                    field_from_velocity, from_band_frame, lerp_field, sample_field, surface_divergence, to_band_frame,
                    velocity_at, vortex_set)
from .field_files import (FIELD_FILE_FORMAT, FIELD_FILE_VERSION, FIELD_KEYS, check_field_files, check_field_save_path,
                          field_settings, load_fields, save_fields)
from .flow import FLOW_NOISE_PEAK, FLOW_VORTEX_PEAK, decode_flow, encode_flow, flow_scale
from .job import bake, check_output_folder, check_part, run_bake
from .layouts import (ENGINE_AXES, ENGINE_FACES, ENGINE_SLOTS, blender_face_image, cube_layout_faces,
                      layout_face_image)
from .metadata import bake_metadata
from .noise import simplex4_grad
from .outputs import (METADATA_FORMAT, METADATA_NAME, METADATA_VERSION, OUTPUT_NAME, BakeResult, all_output_names,
                      output_names, previous_outputs)
from .palette import colors_at
from .params import (BYTES_PER_PARTICLE, CHUNK, PREVIEW_CAPS, PRESETS, RANDOM_KEYS, STEPS_PER_SECOND_PER_THREAD, WAVE,
                     GasGiantError, GasGiantParams, available_memory, estimate_memory, estimate_seconds, field_times,
                     key_frame_count, particle_steps, preset, preset_values, preview, preview_text, random_look)
from .settings import (ABOVE_LOWEST, CUBE_LAYOUTS, CUBEMAP_SIZES, DEFAULT_RAMP, DEFAULT_RAMP_COLORS, EQUIRECT_WIDTHS,
                       FIELD_SIZES, FILE_FORMATS, FLOAT_RANGES, MAPPINGS, MAX_FRAMES, MAX_MAGNITUDE, MAX_PARTICLES,
                       PARAM_SETTINGS, SETTINGS, UI_SETTINGS, CliOption, Setting, cli_changes, cli_flag, cli_options,
                       symmetric_ramp)
from .state import load_state, save_state, state_path
from .simulation import BLUR_ROWS, HOT_PINK, SORT_CELLS, SORT_INTERVAL, TEXEL_MAX, Simulation

# the names callers use (the first line: the core API the README names)
__all__ = [
    "FACES", "GasGiantParams", "GasGiantError", "PRESETS", "preset", "Simulation", "build_field", "band_profile",
    "velocity_at", "surface_divergence", "sample_field", "bake", "run_bake", "write_png", "estimate_memory",
    "estimate_seconds", "particle_steps", "preview", "preview_text", "PREVIEW_CAPS", "STEPS_PER_SECOND_PER_THREAD",
    "ABOVE_LOWEST", "BYTES_PER_PARTICLE", "CHUNK", "CUBE_LAYOUTS", "CUBEMAP_SIZES", "DEFAULT_RAMP",
    "DEFAULT_RAMP_COLORS", "ENGINE_AXES", "ENGINE_FACES", "ENGINE_SLOTS", "EQUIRECT_WIDTHS", "FIELD_FILE_FORMAT",
    "FIELD_FILE_VERSION", "FIELD_KEYS", "FIELD_SIZES", "FILE_FORMATS", "FLOAT_RANGES", "FLOW_NOISE_PEAK",
    "FLOW_VORTEX_PEAK", "HOT_PINK", "MAPPINGS", "MAX_FRAMES", "MAX_MAGNITUDE", "MAX_PARTICLES", "METADATA_FORMAT",
    "METADATA_NAME", "METADATA_VERSION", "OUTPUT_NAME", "POLE_TAPER_DEG", "RANDOM_KEYS", "SORT_CELLS", "SORT_INTERVAL",
    "WAVE", "TEXEL_MAX", "BLUR_ROWS", "all_output_names", "available_memory", "bake_metadata", "BakeResult",
    "band_latitude",
    "blender_face_image", "build_field_steps", "check_field_files", "check_field_save_path", "check_output_folder",
    "colors_at", "cube_layout_faces", "decode_flow", "dir_to_face_uv", "encode_flow", "equirect_directions",
    "equirect_from_cube", "face_directions", "face_uv_to_dir", "Field", "field_from_velocity", "field_settings",
    "field_times", "flow_scale", "from_band_frame", "key_frame_count", "layout_face_image", "lerp_field",
    "load_fields", "output_names", "pad_cube", "previous_outputs", "random_look", "sample_cube", "save_fields",
    "simplex4_grad", "symmetric_ramp", "to_band_frame", "vortex_set", "preset_values", "PARAM_SETTINGS", "SETTINGS",
    "UI_SETTINGS", "CliOption", "Setting", "cli_changes", "cli_flag", "cli_options", "check_part", "load_state",
    "save_state", "state_path",
]
