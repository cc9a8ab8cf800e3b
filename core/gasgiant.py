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
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields

import numpy as np

from . import colour, exr
from .png import write_png

FACES = ("px", "nx", "py", "ny", "pz", "nz")
# per face: normal n, right axis a (image columns), down axis b (image rows); a x b = -n (seen from outside)
_FACE_N = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=np.float64)
_FACE_A = np.array([[0, 1, 0], [0, -1, 0], [-1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0]], dtype=np.float64)
_FACE_B = np.array([[0, 0, -1], [0, 0, -1], [0, 0, -1], [0, 0, -1], [1, 0, 0], [-1, 0, 0]], dtype=np.float64)

# Cube-face layouts of the written faces. BLENDER: the six ``FACES`` above (Blender axes, seen from outside, +Z up on
# the side faces). GLTF / UNITY: the standard D3D/OpenGL cube-map faces (+X, -X, +Y, -Y, +Z, -Z; the OpenGL spec's
# major-axis table, image row 0 = t = 0) in a Y-up engine space reached from Blender by ``ENGINE_AXES`` (engine =
# M @ blender): GLTF is right-handed like glTF, Godot, OpenGL/Vulkan and three.js (x, z, -y); UNITY is left-handed
# as Unity imports glTF and FBX files from Blender (-x, z, -y).
CUBE_LAYOUTS = ("BLENDER", "GLTF", "UNITY")
ENGINE_AXES = {"GLTF": np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], dtype=np.float64),
               "UNITY": np.array([[-1, 0, 0], [0, 0, 1], [0, -1, 0]], dtype=np.float64)}
ENGINE_FACES = ("posx", "negx", "posy", "negy", "posz", "negz")
ENGINE_SLOTS = ("+X", "-X", "+Y", "-Y", "+Z", "-Z")
# per slot (engine axes): normal, the axis along image columns (s, sc) and the one along image rows (t, tc)
_ENGINE_TABLE = (((1, 0, 0), (0, 0, -1), (0, -1, 0)), ((-1, 0, 0), (0, 0, 1), (0, -1, 0)),
                 ((0, 1, 0), (1, 0, 0), (0, 0, 1)), ((0, -1, 0), (1, 0, 0), (0, 0, -1)),
                 ((0, 0, 1), (1, 0, 0), (0, -1, 0)), ((0, 0, -1), (-1, 0, 0), (0, -1, 0)))

MAPPINGS = ("SINUSOIDAL", "STRIPES", "PLAIN")
FILE_FORMATS = ("PNG", "EXR", "PNG_EXR")
HOT_PINK = (1.0, 0.07843, 0.57647)  # gaseous-giganticus -h: unpainted texels fade to this, showing divergences
FIELD_FILE_FORMAT = "envfx-gasgiant-velocity-field"
FIELD_FILE_VERSION = 1
# the settings a velocity field depends on (stored in a saved field file and checked when it is loaded)
FIELD_KEYS = ("seed", "field_size", "velocity_factor", "vertical_bands", "bands", "band_speed", "band_power",
              "pole_attenuation", "noise_scale", "octaves", "falloff", "gain", "noise_speed", "w_offset", "vortices",
              "vortex_size", "vortex_size_variance", "vortex_strength", "vortex_band_threshold")
FIELD_SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048)
CUBEMAP_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)
EQUIRECT_WIDTHS = (0, 128, 256, 512, 1024, 2048, 4096, 8192)
MAX_PARTICLES = 200_000_000
# Frames of an animated bake: at most Blender's last frame (MAXFRAME). The planet plays the sequence as an image
# sequence, whose length (ImageUser.frame_duration) stops there, and a scene cannot show more frames: a longer bake
# would be cut without a word (and at 1 ms a frame would still take 12 days).
MAX_FRAMES = 1_048_574
POLE_TAPER_DEG = 3.0
CHUNK = 1 << 17  # particles per work item (fixed: results do not depend on the thread count)
SORT_INTERVAL = 32  # steps between sorting particles by cube cell (fixed: part of the result); 0 = never
SORT_CELLS = 64  # cells per cube face side for that sort (6 * 64 * 64 < 2**16)
WAVE = 8  # chunks that read the texture before it is written back (fixed, like CHUNK)

# bytes per particle: uv 8 + face 1 + colour 16
BYTES_PER_PARTICLE = 25


class GasGiantError(ValueError):
    """Invalid gas giant settings or input; the message says what is wrong and what to do. A bad number names its
    ``field`` (the GasGiantParams field), its ``value`` as text and the ``advice`` (what to use instead), so a
    front end can name its own option (the command line says ``--turbulence`` for ``noise_speed``)."""

    def __init__(self, message: str, field: str | None = None, value: str = "", advice: str = ""):
        super().__init__(message)
        self.field, self.value, self.advice = field, value, advice


# no setting needs a number this large; far above it the velocities overflow float32 and the particles get lost
MAX_MAGNITUDE = 1e6
# every float setting: (label as the UI names it, lowest, highest, extra advice); each must be a finite number in
# its range (nan and inf pass most comparisons unnoticed and end the bake with lost particles); the settings in
# ABOVE_LOWEST must be more than their lowest value
ABOVE_LOWEST = ("noise_scale", "vortex_size", "opacity")
FLOAT_RANGES = {
    "velocity_factor": ("Velocity factor", 0.0, MAX_MAGNITUDE, ""),
    "bands": ("Bands", 0.0, MAX_MAGNITUDE, ""),
    "band_speed": ("Band speed", -MAX_MAGNITUDE, MAX_MAGNITUDE, " (negative turns the bands the other way)"),
    "pole_attenuation": ("Pole attenuation", 0.0, 1.0, ""),
    "noise_scale": ("Noise scale", 0.0, MAX_MAGNITUDE, ""),
    "falloff": ("Falloff", 0.0, 1.0, ""),
    "gain": ("Gain", 0.0, MAX_MAGNITUDE, ""),
    "noise_speed": ("Turbulence", 0.0, MAX_MAGNITUDE, ""),
    "w_offset": ("W offset", -MAX_MAGNITUDE, MAX_MAGNITUDE, ""),
    "time_step": ("Time step", 0.0, MAX_MAGNITUDE, ""),
    "vortex_size": ("Vortex size", 0.0, MAX_MAGNITUDE, ""),
    "vortex_size_variance": ("Vortex size variance", 0.0, MAX_MAGNITUDE, ""),
    "vortex_strength": ("Vortex strength", 0.0, MAX_MAGNITUDE, ""),
    "vortex_band_threshold": ("Vortex band threshold", 0.05, 1.0, " (1 = anywhere)"),
    "opacity": ("Opacity", 0.0, 1.0, ""),
    "opacity_start": ("Start opacity", 0.0, 1.0, " (0 = off)"),
    "fade_in": ("Fade in", 0.0, 1.0, ""),
    "fade_out": ("Fade out", 0.0, 1.0, ""),
    "blur": ("Blur", 0.0, 1.0, ""),
    "fade_rate": ("Fade rate", 0.0, 1.0, ""),
    "cloud_noise": ("Cloud noise", 0.0, 1.0, ""),
    "flow_scale": ("Flow scale", 0.0, MAX_MAGNITUDE, " radians per frame (0 = automatic)"),
}


def _range_advice(lo: float, hi: float, above: bool) -> str:
    def text(x):
        return f"{x:,.0f}" if abs(x) == MAX_MAGNITUDE else f"{x:g}"

    return f"use more than {text(lo)}, at most {text(hi)}" if above else f"use {text(lo)} to {text(hi)}"


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _check_numbers(params) -> None:
    """Every whole-number setting an int (inf iterations would never end), every float setting a finite number
    in its range, every colour three finite components in 0..1."""
    for f in dataclass_fields(params):
        value = getattr(params, f.name)
        if f.type == "int" and not (isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
            label = f.name.replace("_", " ").capitalize()
            raise GasGiantError(f"{label} {value}: use a whole number", f.name, str(value), "use a whole number")
    for name, (label, lo, hi, extra) in FLOAT_RANGES.items():
        value, above = getattr(params, name), name in ABOVE_LOWEST
        if not (_is_number(value) and math.isfinite(value) and lo <= value <= hi and not (above and value == lo)):
            advice = _range_advice(lo, hi, above) + extra
            raise GasGiantError(f"{label} {value}: {advice}", name, str(value), advice)
    colour_advice = "use three numbers from 0 to 1 (red, green, blue)"
    cloud = params.cloud_color
    try:
        ok = len(cloud) == 3 and all(_is_number(c) and 0.0 <= c <= 1.0 for c in cloud)  # False for nan
    except TypeError:
        ok = False
    if not ok:
        text = " ".join(str(c) for c in cloud) if isinstance(cloud, (tuple, list)) else str(cloud)
        raise GasGiantError(f"Cloud colour {text}: {colour_advice}", "cloud_color", text, colour_advice)
    try:
        stops = [(float(t), tuple(float(c) for c in col)) for t, col in params.ramp]
    except (TypeError, ValueError):
        stops = None
    if not stops or not all(0.0 <= t <= 1.0 and len(col) >= 3 and all(0.0 <= c <= 1.0 for c in col[:3])
                            for t, col in stops):
        raise GasGiantError(f"Colour ramp {params.ramp!r}: each stop needs a position from 0 to 1 and a colour of "
                            f"three numbers from 0 to 1", "ramp", str(params.ramp), "")


def symmetric_ramp(colors) -> tuple:
    """A latitude colour ramp from five colours (pole, high, middle, tropic, equator), mirrored at the equator."""
    pole, high, mid, tropic, equator = (tuple(float(x) for x in c[:3]) for c in colors)
    return ((0.0, pole), (0.12, high), (0.28, mid), (0.4, tropic), (0.5, equator), (0.6, tropic), (0.72, mid),
            (0.88, high), (1.0, pole))


DEFAULT_RAMP_COLORS = ((0.55, 0.50, 0.45), (0.80, 0.68, 0.52), (0.93, 0.88, 0.78), (0.72, 0.50, 0.34),
                       (0.96, 0.92, 0.84))
DEFAULT_RAMP = symmetric_ramp(DEFAULT_RAMP_COLORS)


@dataclass(frozen=True)
class GasGiantParams:
    # simulation
    particles: int = 8_000_000
    iterations: int = 1000
    seed: int = 0
    field_size: int = 512
    cubemap_size: int = 1024
    equirect_width: int = 2048  # 0: no equirectangular image
    threads: int = 2
    velocity_factor: float = 1.0  # degrees of arc per 20 iterations at relative speed 1
    # bands
    vertical_bands: bool = False  # bands around the X axis (a sideways planet) instead of the pole axis Z
    bands: float = 6.0
    band_speed: float = 1.0
    band_power: int = 1
    pole_attenuation: float = 0.5
    # noise
    noise_scale: float = 2.6
    octaves: int = 4
    falloff: float = 0.5
    gain: float = 1.0
    noise_speed: float = 1.0
    w_offset: float = 0.0
    time_step: float = 0.05  # w advance per animation frame
    # vortices
    vortices: int = 0
    vortex_size: float = 0.04
    vortex_size_variance: float = 0.02
    vortex_strength: float = 1.0
    vortex_band_threshold: float = 0.2  # vortices only where the relative band speed is at most this (0.05..1)
    # colour
    palette: np.ndarray | None = field(default=None, repr=False, compare=False)
    # six cube-face images (FACES order, (6, h, w, 3)) colour the particles (gaseous-giganticus -k), e.g. an
    # earlier bake's faces to carry on from; takes precedence over ``palette``
    palette_cube: np.ndarray | None = field(default=None, repr=False, compare=False)
    mapping: str = "SINUSOIDAL"
    ramp: tuple = DEFAULT_RAMP
    opacity: float = 0.2
    opacity_start: float = 0.0  # > opacity: start there and shrink by 5% per iteration to ``opacity`` (-O)
    lifetime: int = 0  # iterations; 0 = particles live for ever
    respawn_batches: int = 8
    fade_in: float = 0.2  # fraction of the lifetime
    fade_out: float = 0.2
    blur_interval: int = 20  # iterations between blur + fade passes; 0 = never
    blur: float = 0.5  # 0..1 mix of the 3x3 binomial blur
    fade_rate: float = 0.01  # 0..1 toward the centre colour per blur pass
    fade_to_palette: bool = False  # fade toward each texel's palette colour instead of the mean colour
    hot_pink: bool = False  # fade toward hot pink instead (texels no particle reaches show up: divergences)
    # cloud mode (gaseous-giganticus -C): particles paint their brightness as the alpha of a white cloud layer
    cloud_mode: bool = False
    cloud_color: tuple = (1.0, 1.0, 1.0)
    cloud_noise: float = 1.0  # 0..1: how much a fixed fractal noise breaks the cloud alpha into patches
    # files
    file_format: str = "PNG"  # "PNG", "EXR" (32-bit float, linear colour) or "PNG_EXR" (both)
    cube_layout: str = "BLENDER"  # CUBE_LAYOUTS: Blender faces, or engine cube-map faces (GLTF / UNITY axes)
    # radians per frame (``frame_iterations`` iterations) that the 8-bit flow map's 0 and 1 stand for; 0 = automatic
    # from the settings (``flow_scale``): one fixed scale for every frame, written to gasgiant.json
    flow_scale: float = 0.0
    save_field: str = ""  # .npz path: save the velocity field(s) this bake builds or loads
    load_field: str = ""  # .npz path: use the velocity field(s) saved by an earlier bake instead of building them
    # animation
    frames: int = 1
    frame_iterations: int = 20
    field_interval: int = 4  # frames between full velocity-field builds; the frames between interpolate in time

    def validate(self, available_bytes: int | None = None) -> "GasGiantParams":
        def need(ok, msg):
            if not ok:
                raise GasGiantError(msg)

        _check_numbers(self)
        need(self.particles > 0,
             f"Particles {self.particles}: use a positive number of particles (8000000 is the classic)")
        need(self.particles <= MAX_PARTICLES, f"Particles {self.particles}: at most {MAX_PARTICLES}")
        need(self.iterations > 0, f"Iterations {self.iterations}: use a positive number of iterations")
        need(self.field_size in FIELD_SIZES,
             f"Velocity field size {self.field_size} is not supported: use one of {FIELD_SIZES}")
        need(self.cubemap_size in CUBEMAP_SIZES,
             f"Cube map size {self.cubemap_size} is not supported: use one of {CUBEMAP_SIZES}")
        need(self.equirect_width in EQUIRECT_WIDTHS,
             f"Equirectangular width {self.equirect_width} is not supported: use one of {EQUIRECT_WIDTHS} "
             f"(0 = none; the height is half the width)")
        need(self.threads >= 1, f"Threads {self.threads}: use 1 or more")
        need(self.frames >= 1, f"Frames {self.frames}: use 1 or more")
        need(self.frames <= MAX_FRAMES, f"Frames {self.frames}: at most {MAX_FRAMES} (Blender's last frame; the "
             f"planet plays the frames as an image sequence, which cannot be longer)")
        need(self.frame_iterations >= 1, f"Iterations per frame {self.frame_iterations}: use 1 or more")
        need(self.octaves >= 1 and self.octaves <= 12, f"Octaves {self.octaves}: use 1 to 12")
        need(self.band_power >= 1 and self.band_power % 2 == 1,
             f"Band speed power {self.band_power}: use an odd whole number (1, 3, 5, ...)")
        need(self.lifetime >= 0, f"Lifetime {self.lifetime}: use 0 (for ever) or more iterations")
        need(self.respawn_batches >= 1, f"Respawn batches {self.respawn_batches}: use 1 or more")
        need(0.0 <= self.fade_in <= 1.0 and 0.0 <= self.fade_out <= 1.0 and self.fade_in + self.fade_out <= 1.0,
             "Fade in + fade out are fractions of the lifetime: each 0..1 and together at most 1")
        need(self.blur_interval >= 0, f"Blur interval {self.blur_interval}: use 0 (never) or more")
        need(self.vortices >= 0, f"Vortices {self.vortices}: use 0 or more")
        need(self.mapping in MAPPINGS, f"Mapping {self.mapping!r}: use one of {MAPPINGS}")
        need(self.file_format in FILE_FORMATS, f"File format {self.file_format!r}: use one of {FILE_FORMATS}")
        need(self.cube_layout in CUBE_LAYOUTS, f"Cube layout {self.cube_layout!r}: use one of {CUBE_LAYOUTS}")
        need(self.field_interval >= 1, f"Field interval {self.field_interval}: use 1 (build the field every frame) "
             f"or more")
        if self.palette is not None:
            pal = np.asarray(self.palette)
            need(pal.ndim == 3 and pal.shape[2] in (3, 4) and pal.shape[0] >= 1 and pal.shape[1] >= 1,
                 f"Palette image of shape {pal.shape}: need an RGB or RGBA image")
        else:
            need(len(self.ramp) >= 1, "Colour ramp needs at least one colour")
        if self.palette_cube is not None:
            cube = np.asarray(self.palette_cube)
            need(cube.ndim == 4 and cube.shape[0] == 6 and cube.shape[3] in (3, 4) and min(cube.shape[1:3]) >= 1,
                 f"Cube-map palette of shape {cube.shape}: need six RGB or RGBA faces of one size")
        if available_bytes is not None:
            est = estimate_memory(self)
            need(est <= available_bytes,
                 f"{self.particles} particles need about {est / 2**30:.2f} GB but only "
                 f"{available_bytes / 2**30:.2f} GB is available: use fewer particles or smaller images")
        return self


PRESETS = {
    "JUPITER": dict(bands=12.0, band_speed=2.0, band_power=1, pole_attenuation=1.0, noise_scale=2.2, octaves=4,
                    falloff=0.42, noise_speed=0.6, vortices=6, vortex_size=0.08, vortex_size_variance=0.04,
                    vortex_strength=2.0, opacity=0.2,
                    ramp_colors=((0.45, 0.40, 0.36), (0.78, 0.62, 0.46), (0.95, 0.90, 0.80), (0.70, 0.42, 0.26),
                                 (0.97, 0.93, 0.86))),
    "NEPTUNE": dict(bands=4.0, band_speed=2.2, band_power=3, pole_attenuation=0.8, noise_scale=1.6, octaves=3,
                    falloff=0.45, noise_speed=0.5, vortices=2, vortex_size=0.1, vortex_size_variance=0.03,
                    vortex_strength=2.5, opacity=0.25,
                    ramp_colors=((0.30, 0.48, 0.80), (0.22, 0.38, 0.78), (0.45, 0.66, 0.95), (0.20, 0.36, 0.76),
                                 (0.38, 0.58, 0.90))),
    "STORMY": dict(bands=8.0, band_speed=0.8, band_power=1, pole_attenuation=0.6, noise_scale=3.5, octaves=5,
                   falloff=0.55, noise_speed=1.5, vortices=30, vortex_size=0.05, vortex_size_variance=0.03,
                   vortex_strength=3.0, opacity=0.3,
                   ramp_colors=((0.30, 0.25, 0.35), (0.65, 0.45, 0.40), (0.90, 0.80, 0.65), (0.55, 0.30, 0.25),
                                (0.85, 0.70, 0.55))),
}


def preset(name: str, **overrides) -> GasGiantParams:
    key = name.upper()
    if key not in PRESETS:
        raise GasGiantError(f"Unknown preset {name!r}: use one of {', '.join(PRESETS)}")
    values = dict(PRESETS[key])
    values["ramp"] = symmetric_ramp(values.pop("ramp_colors"))
    return GasGiantParams(**{**values, **overrides})


RANDOM_KEYS = ("bands", "band_speed", "velocity_factor", "noise_scale", "w_offset", "vertical_bands", "mapping")


def random_look(seed: int) -> dict:
    """gaseous-giganticus -R: random bands, band speed, velocity factor, noise scale and W offset from ``seed``,
    with vertical bands and the sinusoidal mapping."""
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x52414E44])
    return dict(bands=float(np.round(rng.uniform(4.0, 20.0), 1)), band_speed=float(np.round(rng.uniform(0.5, 3.0), 2)),
                velocity_factor=float(np.round(rng.uniform(0.6, 2.0), 2)),
                noise_scale=float(np.round(rng.uniform(1.0, 4.0), 2)), w_offset=float(np.round(rng.uniform(0, 100), 2)),
                vertical_bands=True, mapping="SINUSOIDAL")


def estimate_memory(params: GasGiantParams) -> int:
    """Peak bytes of a bake (measured: 8M particles, 512 field, 6x1024 cube, 4096 equirect peak at ~0.63 GB):
    particles, the stored field, the texture, the largest transient (blur / equirect / palette copy), the
    per-step scratch and a fixed baseline (Python, numpy, field building)."""
    n, f, r = params.particles, params.field_size, params.cubemap_size
    particles = n * BYTES_PER_PARTICLE
    fld = 6 * (f + 2) ** 2 * (16 + 12)
    keys = key_frame_count(params)
    if keys > 1:
        fld *= 3  # two key fields and the mix between them
    if params.save_field:
        fld += (keys - 1) * 6 * (f + 2) ** 2 * (16 + 12)  # every key field is kept until it is saved
    tex = 6 * r * r * 16 + (6 * r * r * 12 if params.fade_to_palette else 0)
    transient = max(6 * (r + 2) ** 2 * 12 + r * r * 36, 6 * (f + 2) ** 2 * 40)
    scratch = min(n, CHUNK * WAVE) * 24 + min(n, CHUNK) * params.threads * 100
    return int(particles + fld + tex + transient + scratch + 150 * 2**20)


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else None (no check)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# --- cube map geometry ------------------------------------------------------------------------------------

def face_directions(size: int, pad: int = 0, faces=slice(None)) -> np.ndarray:
    """(6, size+2pad, size+2pad, 3) unit directions of texel centres (rows along the face's down axis);
    ``faces`` selects some faces only."""
    j = np.arange(-pad, size + pad, dtype=np.float64)
    c = (2.0 * j + 1.0) / size - 1.0
    v, u = np.meshgrid(c, c, indexing="ij")
    d = (_FACE_N[faces, None, None, :] + u[None, :, :, None] * _FACE_A[faces, None, None, :]
         + v[None, :, :, None] * _FACE_B[faces, None, None, :])
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def dir_to_face_uv(d: np.ndarray):
    """Directions (..., 3) -> (face int, u, v) with |u|, |v| <= 1 on the face of the largest component."""
    a = np.abs(d)
    ax = np.argmax(a, axis=-1)
    comp = np.take_along_axis(d, ax[..., None], axis=-1)[..., 0]
    face = 2 * ax + (comp < 0)
    m = np.abs(comp)
    u = np.einsum("...k,...k->...", d, _FACE_A[face]) / m
    v = np.einsum("...k,...k->...", d, _FACE_B[face]) / m
    return face.astype(np.int32), u, v


def face_uv_to_dir(face, u, v) -> np.ndarray:
    d = _FACE_N[face] + u[..., None] * _FACE_A[face] + v[..., None] * _FACE_B[face]
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def _ring(size: int):
    """Boolean (size+2, size+2) mask of the one-texel border around a face."""
    edge = np.ones((size + 2, size + 2), dtype=bool)
    edge[1:-1, 1:-1] = False
    return edge


def _border_index(size: int) -> np.ndarray:
    """(6, 4 * size + 4) flat indices into a (6 * size * size) cube: for each texel of the border around each
    face (row-major order of ``_ring``), the texel of the neighbouring face under its direction."""
    rows, cols = np.nonzero(_ring(size))
    u = (2.0 * (cols - 1) + 1.0) / size - 1.0
    v = (2.0 * (rows - 1) + 1.0) / size - 1.0
    d = _FACE_N[:, None, :] + u[None, :, None] * _FACE_A[:, None, :] + v[None, :, None] * _FACE_B[:, None, :]
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    face, fu, fv = dir_to_face_uv(d)
    col = np.clip(np.floor((fu + 1.0) * 0.5 * size), 0, size - 1).astype(np.int64)
    row = np.clip(np.floor((fv + 1.0) * 0.5 * size), 0, size - 1).astype(np.int64)
    return (face.astype(np.int64) * size + row) * size + col


def pad_cube(cube: np.ndarray, border_index: np.ndarray | None = None) -> np.ndarray:
    """(6, n, n, C) -> (6, n+2, n+2, C): each face with a one-texel border from its neighbours."""
    n = cube.shape[1]
    if border_index is None:
        border_index = _border_index(n)
    flat = cube.reshape(6 * n * n, -1)
    out = np.empty((6, n + 2, n + 2, flat.shape[1]), dtype=cube.dtype)
    out[:, 1:-1, 1:-1] = cube
    out[:, _ring(n)] = flat[border_index]
    return out


def sample_cube(padded: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Bilinear lookup of a padded cube (6, n+2, n+2, C) at directions (..., 3) -> (..., C)."""
    n = padded.shape[1] - 2
    face, u, v = dir_to_face_uv(d)
    x = (u + 1.0) * 0.5 * n + 0.5
    y = (v + 1.0) * 0.5 * n + 0.5
    ix = np.clip(np.floor(x).astype(np.int64), 0, n)
    iy = np.clip(np.floor(y).astype(np.int64), 0, n)
    fx = (x - ix)[..., None]
    fy = (y - iy)[..., None]
    flat = padded.reshape(-1, padded.shape[-1])
    w = n + 2
    b = (face.astype(np.int64) * w + iy) * w + ix
    top = flat[b] * (1 - fx) + flat[b + 1] * fx
    bot = flat[b + w] * (1 - fx) + flat[b + w + 1] * fx
    return top * (1 - fy) + bot * fy


def equirect_directions(width: int, rows=slice(None)) -> np.ndarray:
    """(width/2, width, 3) directions of an equirectangular image: row 0 = north, column 0 = longitude -180;
    ``rows`` selects some rows only."""
    h = width // 2
    lon = (np.arange(width) + 0.5) / width * 2.0 * np.pi - np.pi
    lat = np.pi / 2 - (np.arange(h)[rows] + 0.5) / h * np.pi
    cl = np.cos(lat)[:, None]
    return np.stack(np.broadcast_arrays(cl * np.cos(lon)[None, :], cl * np.sin(lon)[None, :],
                                        np.sin(lat)[:, None]), axis=-1)


# --- 4D simplex noise with its spatial gradient -----------------------------------------------------------

_F4 = (math.sqrt(5.0) - 1.0) / 4.0
_G4 = (5.0 - math.sqrt(5.0)) / 20.0
_GRAD4 = np.array([[a, b, c, 0] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]
                  + [[a, b, 0, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]
                  + [[a, 0, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]
                  + [[0, a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)], dtype=np.float64)


def _perm(seed: int) -> np.ndarray:
    p = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x6A5]).permutation(256).astype(np.int64)
    return np.concatenate([p, p])


_GX, _GY, _GZ, _GW = (np.ascontiguousarray(_GRAD4[:, k]) for k in range(4))


def simplex4_grad(x, y, z, w, perm):
    """4D simplex noise value and its (x, y, z) gradient, vectorised (float64 arrays of one shape)."""
    s = (x + y + z + w) * _F4
    i = np.floor(x + s)
    j = np.floor(y + s)
    k = np.floor(z + s)
    l_ = np.floor(w + s)
    t = (i + j + k + l_) * _G4
    x0 = x - i + t
    y0 = y - j + t
    z0 = z - k + t
    w0 = w - l_ + t
    # rank of each coordinate among the four (ties broken consistently)
    rx = (x0 > y0).astype(np.int8)
    rx += x0 > z0
    rx += x0 > w0
    ry = (y0 >= x0).astype(np.int8)
    ry += y0 > z0
    ry += y0 > w0
    rz = (z0 >= x0).astype(np.int8)
    rz += z0 >= y0
    rz += z0 > w0
    rw = (w0 >= x0).astype(np.int8)
    rw += w0 >= y0
    rw += w0 >= z0
    ii = i.astype(np.int64) & 255
    jj = j.astype(np.int64) & 255
    kk = k.astype(np.int64) & 255
    ll = l_.astype(np.int64) & 255
    val = np.zeros_like(x)
    gx = np.zeros_like(x)
    gy = np.zeros_like(x)
    gz = np.zeros_like(x)
    for c in range(5):  # the five corners of the simplex (a loop over corners, not points)
        if c == 0:
            oi = oj = ok = ol = False
        elif c == 4:
            oi = oj = ok = ol = True
        else:
            oi, oj, ok, ol = rx >= 4 - c, ry >= 4 - c, rz >= 4 - c, rw >= 4 - c
        off = c * _G4
        dx = x0 - oi
        dx += off
        dy = y0 - oj
        dy += off
        dz = z0 - ok
        dz += off
        dw = w0 - ol
        dw += off
        h = perm.take(ll + ol)
        h += kk
        h += ok
        h = perm.take(h)
        h += jj
        h += oj
        h = perm.take(h)
        h += ii
        h += oi
        h = perm.take(h)
        h &= 31
        ga, gb, gc, gd = _GX.take(h), _GY.take(h), _GZ.take(h), _GW.take(h)
        tt = dx * dx
        tt += dy * dy
        tt += dz * dz
        tt += dw * dw
        np.subtract(0.6, tt, out=tt)
        np.maximum(tt, 0.0, out=tt)
        t2 = tt * tt
        t4 = t2 * t2
        gd_ = ga * dx
        gd_ += gb * dy
        gd_ += gc * dz
        gd_ += gd * dw
        val += t4 * gd_
        f = t2 * tt
        f *= gd_
        f *= 8.0
        ga *= t4
        gx += ga
        gx -= f * dx
        gb *= t4
        gy += gb
        gy -= f * dy
        gc *= t4
        gz += gc
        gz -= f * dz
    return 27.0 * val, 27.0 * gx, 27.0 * gy, 27.0 * gz


# --- the velocity field -----------------------------------------------------------------------------------

def to_band_frame(p: np.ndarray, params: GasGiantParams) -> np.ndarray:
    """Directions in the bands' frame, whose Z is the band axis: the planet's Z, or X with vertical bands
    (a cyclic permutation of the axes: a rotation, so lengths, angles and divergence are kept)."""
    return p[..., [1, 2, 0]] if params.vertical_bands else p


def from_band_frame(q: np.ndarray, params: GasGiantParams) -> np.ndarray:
    return q[..., [2, 0, 1]] if params.vertical_bands else q


def band_latitude(p: np.ndarray, params: GasGiantParams) -> np.ndarray:
    """Latitude (radians) of unit directions measured from the bands' equator."""
    return np.arcsin(np.clip(to_band_frame(np.asarray(p, dtype=np.float64), params)[..., 2], -1.0, 1.0))


def band_profile(lat, params: GasGiantParams) -> np.ndarray:
    """Eastward band speed (relative units) at latitude ``lat`` (radians)."""
    lat = np.asarray(lat, dtype=np.float64)
    c = np.cos(lat * params.bands)
    speed = params.band_speed * ((1.0 - params.pole_attenuation) + params.pole_attenuation * np.cos(lat))
    speed = speed * np.sign(c) * np.abs(c) ** params.band_power
    taper = np.clip((math.pi / 2 - np.abs(lat)) / math.radians(POLE_TAPER_DEG), 0.0, 1.0)
    return speed * (3 * taper ** 2 - 2 * taper ** 3)


def vortex_set(params: GasGiantParams):
    """(centres (V, 3), radii (V,), signed strengths (V,)) of the vortices: at random places (uniform over the
    sphere up to 75 degrees of band latitude) where the relative band speed |band(lat)| / max |band| is at most
    ``vortex_band_threshold`` (gaseous-giganticus --vortex-band-threshold: between the bands, not in their
    fast middles; 1 = anywhere). Should too few places qualify, the slowest of the candidates are used."""
    nv = params.vortices
    if nv == 0:
        return np.zeros((0, 3)), np.zeros(0), np.zeros(0)
    rng = np.random.default_rng([params.seed & 0xFFFFFFFF, 0x7057])
    zmax = math.sin(math.radians(75))
    cand = np.arcsin(rng.uniform(-zmax, zmax, max(256, 64 * nv)))
    speed = np.abs(band_profile(cand, params))
    top = float(np.abs(band_profile(np.linspace(-1.4, 1.4, 2001), params)).max())
    rel = speed / top if top > 0 else np.zeros_like(speed)
    key = np.where(rel <= params.vortex_band_threshold, 0.0, rel)  # qualifying places first, in random order
    lat = cand[np.argsort(key, kind="stable")[:nv]]
    lon = rng.uniform(-math.pi, math.pi, nv)
    centres = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)
    centres = from_band_frame(centres, params)  # placed between the bands, wherever their axis points
    radii = params.vortex_size + rng.random(nv) * rng.random(nv) * params.vortex_size_variance
    # turn with the local shear of the bands (d band / d lat) so the vortices sit naturally between them
    h = 1e-4
    shear = (band_profile(lat + h, params) - band_profile(lat - h, params)) / (2 * h)
    sign = np.where(shear >= 0, 1.0, -1.0)
    return centres, radii, sign * params.vortex_strength


def _psi_grad(p: np.ndarray, params: GasGiantParams, time: float, perm: np.ndarray, vort) -> np.ndarray:
    """3D gradient of the stream function's noise part and vortex part at unit directions p (n, 3)."""
    gnoise = np.zeros_like(p)
    w = params.w_offset + time
    for o in range(params.octaves):
        freq = params.noise_scale * 2.0 ** o
        amp = 1.0 if o == 0 else params.falloff ** ((o) * params.gain)
        q = p * freq
        _, gx, gy, gz = simplex4_grad(q[:, 0], q[:, 1], q[:, 2], np.full(len(p), w + 17.0 * o), perm)
        gnoise += (amp * freq) * np.stack([gx, gy, gz], axis=-1)
    gvort = np.zeros_like(p)
    centres, radii, strengths = vort
    for c, r, s in zip(centres, radii, strengths, strict=True):  # a few vortices, each vectorised over all points
        dvec = p - c
        e = np.exp(-np.einsum("ij,ij->i", dvec, dvec) / (r * r))
        # psi_v = s * r * exp(-d^2/r^2)  ->  peak speed ~ s, independent of the radius
        gvort += (-2.0 * s / r * e)[:, None] * dvec
    return gnoise, gvort


def _velocity_raw(p, params, time, perm, vort):
    """Band part and curl parts (unscaled) of the 3D velocity at unit directions p (n, 3)."""
    gnoise, gvort = _psi_grad(p, params, time, perm, vort)
    q = to_band_frame(p, params)
    lat = np.arcsin(np.clip(q[:, 2], -1.0, 1.0))
    east = np.stack([-q[:, 1], q[:, 0], np.zeros(len(q))], axis=-1)
    norm = np.linalg.norm(east, axis=-1, keepdims=True)
    east = np.divide(east, norm, out=np.zeros_like(east), where=norm > 1e-12)
    band = from_band_frame(band_profile(lat, params)[:, None] * east, params)
    return band, np.cross(p, gnoise), np.cross(p, gvort)


@dataclass
class Field:
    """A velocity field on a padded cube map."""

    size: int
    velocity: np.ndarray  # (6, size+2, size+2, 3) float32, radians per iteration, tangent
    chart: np.ndarray  # (6 * (size+2)^2,) complex128: each item packs two complex64 du + i dv (per iteration,
    #                    face-chart units): the texel and its right neighbour, so one gather reads both
    noise_norm: float  # scale that brought the noise part to unit RMS (kept across frames)


def _noise_norm(params, perm, vort):
    """1 / RMS of the noise curl over a fixed set of sphere points at time 0 (keeps frames consistent)."""
    rng = np.random.default_rng([params.seed & 0xFFFFFFFF, 0x4E4F])
    p = rng.normal(size=(4096, 3))
    p /= np.linalg.norm(p, axis=-1, keepdims=True)
    _, curl, _ = _velocity_raw(p, params, 0.0, perm, vort)
    rms = float(np.sqrt(np.mean(np.sum(curl ** 2, axis=-1))))
    return 1.0 / rms if rms > 0 else 0.0


def velocity_at(p: np.ndarray, params: GasGiantParams, time: float = 0.0) -> np.ndarray:
    """Analytic 3D velocity (radians per iteration) at unit directions p (n, 3): the field's exact twin."""
    perm = _perm(params.seed)
    vort = vortex_set(params)
    norm = _noise_norm(params, perm, vort)
    return _scaled_velocity(np.asarray(p, dtype=np.float64), params, time, perm, vort, norm)


def _scaled_velocity(p, params, time, perm, vort, norm):
    band, curl, cvort = _velocity_raw(p, params, time, perm, vort)
    k = math.radians(params.velocity_factor) / 20.0
    return k * (band + params.noise_speed * norm * curl + cvort)


def build_field(params: GasGiantParams, time: float = 0.0, noise_norm: float | None = None) -> Field:
    """The velocity field at noise time ``time`` on a padded cube map of ``params.field_size``."""
    return _drive_to_end(build_field_steps(params, time, noise_norm))


def _drive_to_end(job):
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value


def _scaled_progress(job, lo: float, hi: float):
    """Run a sub-job, re-yielding its progress mapped into [lo, hi]; returns its result."""
    while True:
        try:
            f = next(job)
        except StopIteration as stop:
            return stop.value
        yield lo + (hi - lo) * f


def build_field_steps(params: GasGiantParams, time: float = 0.0, noise_norm: float | None = None):
    """``build_field`` as a job: yields its progress (0..1) between blocks, returns the ``Field``."""
    n = params.field_size
    perm = _perm(params.seed)
    vort = vortex_set(params)
    if noise_norm is None:
        noise_norm = _noise_norm(params, perm, vort)
    d = face_directions(n, pad=1)
    flat = d.reshape(-1, 3)
    vel = np.empty_like(flat)
    step = 1 << 15
    starts = range(0, len(flat), step)

    def block(s):  # bounded memory; each block vectorised (numpy releases the GIL: blocks run on threads)
        vel[s:s + step] = _scaled_velocity(flat[s:s + step], params, time, perm, vort, noise_norm)

    if params.threads > 1 and len(starts) > 1:
        with ThreadPoolExecutor(params.threads) as pool:
            for k, _ in enumerate(pool.map(block, starts)):
                yield (k + 1) / len(starts)
    else:
        for k, s in enumerate(starts):
            block(s)
            yield (k + 1) / len(starts)
    return field_from_velocity(vel.reshape(d.shape).astype(np.float32), noise_norm, d)


def field_from_velocity(vel: np.ndarray, noise_norm: float, d: np.ndarray | None = None) -> Field:
    """A ``Field`` from its stored float32 3D velocities (6, n+2, n+2, 3): the chart velocities the particles
    read are derived from them (so a field loaded from a file is exactly the one that was built)."""
    n = vel.shape[1] - 2
    if d is None:
        d = face_directions(n, pad=1)

    # chart velocity: u = p.a / p.n  ->  du = (V.a (p.n) - (p.a)(V.n)) / (p.n)^2
    def dot(arr, axes):
        return np.einsum("fijk,fk->fij", arr, axes)

    v64 = vel.astype(np.float64)
    pn = dot(d, _FACE_N)
    vn = dot(v64, _FACE_N)
    du = (dot(v64, _FACE_A) * pn - dot(d, _FACE_A) * vn) / (pn * pn)
    dv = (dot(v64, _FACE_B) * pn - dot(d, _FACE_B) * vn) / (pn * pn)
    del v64, vn
    c = np.zeros(6 * (n + 2) ** 2 + 1, dtype=np.complex64)
    c[:-1] = (du + 1j * dv).reshape(-1)
    pairs = np.empty((len(c) - 1, 2), dtype=np.complex64)
    pairs[:, 0] = c[:-1]
    pairs[:, 1] = c[1:]
    return Field(n, np.ascontiguousarray(vel, dtype=np.float32), pairs.view(np.complex128).reshape(-1),
                 noise_norm)


def lerp_field(a: Field, b: Field, t: float, out: Field | None = None) -> Field:
    """The field a + (b - a) t between two fields of one size (animated bakes between two built fields).
    Both are tangent and divergence-free, so every mix of them is too; ``out`` is reused when given."""
    if t <= 0.0:
        return a
    if t >= 1.0:
        return b
    if out is None or out is a or out is b:
        out = Field(a.size, np.empty_like(a.velocity), np.empty_like(a.chart), a.noise_norm)
    w = np.float32(t)
    for name in ("velocity", "chart"):
        x = getattr(a, name).view(np.float32)
        y = getattr(b, name).view(np.float32)
        o = getattr(out, name).view(np.float32)
        np.subtract(y, x, out=o)
        o *= w
        o += x
    return out


def field_settings(params: GasGiantParams) -> dict:
    """The settings a velocity field depends on (its file records them)."""
    return {k: (bool(v) if isinstance(v, (bool, np.bool_)) else v)
            for k, v in ((k, getattr(params, k)) for k in FIELD_KEYS)}


def save_fields(path: str, params: GasGiantParams, fields: dict):
    """Write velocity fields ``{time: Field}`` to ``path`` (.npz): format name, version, the field settings
    (JSON), the noise times, the noise normalisation and the float32 3D velocities (K, 6, n+2, n+2, 3).
    Written to a temporary file next to ``path`` and moved into place, so a failure leaves no partial file."""
    import json

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


def check_field_save_path(path: str):
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
    import json
    import zipfile

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


def surface_divergence(fn, p: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """Numerical surface divergence of a tangent field ``fn(points) -> vectors`` at unit points p (n, 3):
    the outward flux through a small circle of angular radius h, over its area (16-point rule)."""
    p = np.asarray(p, dtype=np.float64)
    t1 = np.cross(p, np.where(np.abs(p[:, 2:3]) < 0.9, [[0, 0, 1.0]], [[1.0, 0, 0]]))
    t1 /= np.linalg.norm(t1, axis=-1, keepdims=True)
    t2 = np.cross(p, t1)
    total = np.zeros(len(p))
    m = 16
    for k in range(m):  # quadrature points on the circle
        a = 2 * math.pi * k / m
        out = math.cos(a) * t1 + math.sin(a) * t2
        q = math.cos(h) * p + math.sin(h) * out
        # outward conormal at q: tangent at q, pointing away from p
        nrm = out * math.cos(h) - p * math.sin(h)
        total += np.einsum("ij,ij->i", fn(q), nrm)
    length = 2 * math.pi * math.sin(h)
    area = 2 * math.pi * (1 - math.cos(h))
    return total / m * length / area


def sample_field(fld: Field, p: np.ndarray) -> np.ndarray:
    """Bilinear lookup of the stored 3D velocity at unit directions (what the particles see)."""
    return sample_cube(fld.velocity, p)


# --- colours ----------------------------------------------------------------------------------------------

def _ramp_colors(t: np.ndarray, ramp) -> np.ndarray:
    stops = np.array([s for s, _ in ramp], dtype=np.float64)
    cols = np.array([c for _, c in ramp], dtype=np.float64).reshape(len(ramp), -1)[:, :3]
    order = np.argsort(stops, kind="stable")
    stops, cols = stops[order], cols[order]
    return np.stack([np.interp(t, stops, cols[:, c]) for c in range(3)], axis=-1)


def colors_at(p: np.ndarray, params: GasGiantParams) -> np.ndarray:
    """(n, 3) float32 start colours at unit directions p: palette image (sinusoidal/stripes/plain) or latitude
    ramp. Latitudes and longitudes are the bands' (turned with vertical bands); ``PLAIN`` lays the whole image on
    each cube face (gaseous-giganticus -P: seams at the cube edges are expected)."""
    if params.palette_cube is not None:
        cube = np.asarray(params.palette_cube)
        h, w = cube.shape[1:3]
        face, fu, fv = dir_to_face_uv(np.asarray(p, dtype=np.float64))
        row = np.clip(((fv + 1.0) * 0.5 * h).astype(np.int64), 0, h - 1)
        col = np.clip(((fu + 1.0) * 0.5 * w).astype(np.int64), 0, w - 1)
        return np.asarray(cube[face, row, col, :3], dtype=np.float32)
    q = to_band_frame(np.asarray(p), params)
    lat = np.arcsin(np.clip(q[:, 2], -1.0, 1.0))
    t = lat / math.pi + 0.5  # 0 south pole .. 1 north pole
    if params.palette is None:
        return _ramp_colors(t, params.ramp).astype(np.float32)
    pal = np.asarray(params.palette)
    h, w = pal.shape[:2]
    row = np.clip(((1.0 - t) * h).astype(np.int64), 0, h - 1)  # image row 0 = top = north
    if params.mapping == "PLAIN":
        _, fu, fv = dir_to_face_uv(np.asarray(p, dtype=np.float64))
        row = np.clip(((fv + 1.0) * 0.5 * h).astype(np.int64), 0, h - 1)
        col = np.clip(((fu + 1.0) * 0.5 * w).astype(np.int64), 0, w - 1)
    elif params.mapping == "STRIPES":
        col = np.full(len(p), w // 2, dtype=np.int64)
    else:
        # sinusoidal, mirrored at the back (|longitude|) so the wrap is continuous
        lon = np.arctan2(q[:, 1], q[:, 0])
        x = 0.5 + 0.5 * np.cos(lat) * (np.abs(lon) / math.pi * 2.0 - 1.0)
        col = np.clip((x * w).astype(np.int64), 0, w - 1)
    return np.asarray(pal[row, col, :3], dtype=np.float32)


# --- the simulation ---------------------------------------------------------------------------------------

class Simulation:
    """Particles on the sphere painting a cube map. ``step(k)`` runs k iterations.

    Per particle: ``uv`` complex64 (u + i v in its face's chart), ``face`` int8 and ``col`` float32 RGBA,
    25 bytes in all. Every ``SORT_INTERVAL`` steps each chunk is sorted by texel so that the gathers from the
    field and the texture walk memory in order (several times faster than random order).
    """

    def __init__(self, params: GasGiantParams, time: float = 0.0, field: Field | None = None):
        self.params = params.validate()
        p = params
        self.n = p.particles
        self.iteration = 0
        self.time = time
        self.field = field if field is not None else build_field(p, time)
        self.fsize = p.field_size
        self.res = p.cubemap_size
        self.uv = np.empty(self.n, dtype=np.complex64)
        self.face = np.empty(self.n, dtype=np.int8)
        self.col = np.empty((self.n, 4), dtype=np.float32)
        self.batches = self._batch_ranges()
        self._coarse = None  # cloud mode: the noise mask on a coarse padded cube
        for b, (s, e) in enumerate(self.batches):
            self._spawn(b, s, e, generation=0)
        self.chunks = self._chunk_ranges()
        # waves: fixed groups of chunks that read the texture, then write it back in order
        self.waves = [self.chunks[i:i + WAVE] for i in range(0, len(self.chunks), WAVE)]
        wave_n = max(e - s for w in self.waves for _, s, e in [(0, w[0][1], w[-1][2])])
        self._pidx = np.empty(wave_n, dtype=np.int64)
        self._vals = np.empty((wave_n, 4), dtype=np.float32)
        # texture: start from the palette colours of every texel (full coverage from the first step)
        r = self.res
        self._border = _border_index(r)
        self.image = np.empty((6 * r * r, 4), dtype=np.float32)
        if p.cloud_mode:
            # clouds: the texture holds the painted brightness, starting (and fading back to) empty = transparent
            self.image[:] = 0.0
        else:
            for f in range(6):  # a loop over the six faces, each vectorised
                d = face_directions(r, faces=slice(f, f + 1)).reshape(-1, 3)
                self.image[f * r * r:(f + 1) * r * r, :3] = colors_at(d, p)
            self.image[:, 3] = 1.0
        base = self.image[:, :3].copy() if p.fade_to_palette and not (p.cloud_mode or p.hot_pink) else None
        self._image_c = self.image.view(np.complex128).reshape(-1)
        self.base = base
        if p.cloud_mode:
            self.centre = np.zeros(3, dtype=np.float32)
        elif p.hot_pink:
            self.centre = np.array(HOT_PINK, dtype=np.float32)
        else:
            self.centre = self.image[:, :3].mean(axis=0, dtype=np.float64).astype(np.float32)
        self._pool = ThreadPoolExecutor(p.threads) if p.threads > 1 else None

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- particle bookkeeping
    def _batch_ranges(self):
        nb = min(self.params.respawn_batches, self.n) if self.params.lifetime > 0 else 1
        edges = np.linspace(0, self.n, nb + 1).astype(np.int64)
        return [(int(edges[i]), int(edges[i + 1])) for i in range(nb)]

    def _chunk_ranges(self):
        out = []
        for b, (s, e) in enumerate(self.batches):
            for c in range(s, e, CHUNK):
                out.append((b, c, min(e, c + CHUNK)))
        return out

    def _spawn(self, batch, s, e, generation):
        rng = np.random.default_rng([self.params.seed & 0xFFFFFFFF, batch, generation])
        for s0 in range(s, e, CHUNK):  # bounded memory; each block vectorised
            e0 = min(e, s0 + CHUNK)
            d = rng.standard_normal((e0 - s0, 3))
            d /= np.linalg.norm(d, axis=-1, keepdims=True)
            face, u, v = dir_to_face_uv(d)
            self.uv[s0:e0] = (u + 1j * v).astype(np.complex64)
            self.face[s0:e0] = face
            self.col[s0:e0, :3] = colors_at(d, self.params)
            if self.params.cloud_mode:  # each particle carries its cloud density, so the clouds swirl with the flow
                self.col[s0:e0, :3] *= self.cloud_mask_at(d)[:, None]
            self.col[s0:e0, 3] = 1.0

    def batch_age(self, batch: int, iteration: int | None = None) -> int:
        L = self.params.lifetime
        it = self.iteration if iteration is None else iteration
        return (it + batch * L // len(self.batches)) % L

    def opacity_now(self) -> float:
        """The particles' opacity at this iteration: ``opacity``, or with ``opacity_start`` above it, that start
        shrinking by 5% per iteration down to ``opacity`` (gaseous-giganticus -O: a strong first coat)."""
        p = self.params
        return max(p.opacity, p.opacity_start * 0.95 ** self.iteration)

    def batch_alpha(self, batch: int) -> float:
        p = self.params
        if p.lifetime <= 0:
            return self.opacity_now()
        x = (self.batch_age(batch) + 0.5) / p.lifetime
        a = 1.0
        if p.fade_in > 0:
            a = min(a, x / p.fade_in)
        if p.fade_out > 0:
            a = min(a, (1.0 - x) / p.fade_out)
        return self.opacity_now() * max(0.0, min(1.0, a))

    def set_time(self, time: float, field: Field | None = None):
        """Move the noise's 4th dimension and rebuild the field (keeps the noise normalisation); ``field``:
        one already built with ``build_field_steps(params, time, sim.field.noise_norm)``."""
        self.time = time
        self.field = field if field is not None else build_field(self.params, time, self.field.noise_norm)

    # -- one step of one chunk: move, then read the texel under the particle and blend (no texture writes)
    def _move_chunk(self, s, e, o, alpha):
        uv = self.uv[s:e]
        face = self.face[s:e]
        n = self.fsize
        w = n + 2
        half = np.float32(0.5 * n)
        x = uv.real * half
        x += half + np.float32(0.5)
        y = uv.imag * half
        y += half + np.float32(0.5)
        fx = np.floor(x)
        fy = np.floor(y)
        b = face.astype(np.int64)
        b *= w
        b += fy.astype(np.int64)
        b *= w
        b += fx.astype(np.int64)
        x -= fx
        y -= fy
        top = self.field.chart.take(b).view(np.complex64)  # (c00, c01) interleaved
        b += w
        bot = self.field.chart.take(b).view(np.complex64)  # (c10, c11)
        c00, c01 = top[0::2], top[1::2]
        c10, c11 = bot[0::2], bot[1::2]
        d = c01 - c00
        d *= x
        d += c00  # top row
        g = c11 - c10
        g *= x
        g += c10  # bottom row
        g -= d
        g *= y
        d += g
        uv += d
        # particles that left their face: re-project onto the face they are over now
        u = uv.real
        v = uv.imag
        m = np.abs(u) > 1.0
        m |= np.abs(v) > 1.0
        out = np.flatnonzero(m)
        if out.size:
            dirs = face_uv_to_dir(face[out], u[out].astype(np.float64), v[out].astype(np.float64))
            f2, u2, v2 = dir_to_face_uv(dirs)
            uv[out] = (np.clip(u2, -1.0, 1.0) + 1j * np.clip(v2, -1.0, 1.0)).astype(np.complex64)
            face[out] = f2
        # paint: the texel under each particle, blended toward the particle colour
        idx = self._pidx[s - o:e - o]
        self._texel_index(uv, face, out=idx)
        vals = self._vals[s - o:e - o]
        self._image_c.take(idx, out=vals.view(np.complex128).reshape(-1))
        tmp = self.col[s:e] - vals
        tmp *= np.float32(alpha)
        vals += tmp

    def _texel_index(self, uv, face, out=None):
        """Flat texel index in the output cube of particles at ``uv`` on ``face``."""
        r = self.res
        hr = np.float32(0.5 * r)
        idx = np.multiply(face, r * r, out=out, dtype=np.int64) if out is not None else face.astype(np.int64) * (r * r)
        p = uv.imag * hr
        p += hr
        q = p.astype(np.int64)
        np.minimum(q, r - 1, out=q)
        q *= r
        idx += q
        p = uv.real * hr
        p += hr
        q = p.astype(np.int64)
        np.minimum(q, r - 1, out=q)
        idx += q
        return idx

    def _sort_batch(self, s, e):
        """Order a batch's particles by coarse cube cell (16-bit keys: a linear-time radix sort), so each chunk
        covers a compact patch of the sphere and its gathers from the field and the texture stay in cache."""
        cells = SORT_CELLS
        key = np.empty(e - s, dtype=np.uint16)
        for s0 in range(s, e, CHUNK):
            e0 = min(e, s0 + CHUNK)
            uv = self.uv[s0:e0]
            k = self.face[s0:e0].astype(np.int32)
            k *= cells
            q = ((uv.imag + np.float32(1.0)) * np.float32(0.5 * cells)).astype(np.int32)
            np.clip(q, 0, cells - 1, out=q)
            k += q
            k *= cells
            q = ((uv.real + np.float32(1.0)) * np.float32(0.5 * cells)).astype(np.int32)
            np.clip(q, 0, cells - 1, out=q)
            k += q
            key[s0 - s:e0 - s] = k
        order = np.argsort(key, kind="stable")
        del key
        self.uv[s:e] = self.uv[s:e][order]
        self.face[s:e] = self.face[s:e][order]
        for c in range(3):  # one channel at a time (bounded memory); alpha is always 1
            self.col[s:e, c] = self.col[s:e, c][order]

    def _map(self, fn, items):
        if self._pool is not None and len(items) > 1:
            list(self._pool.map(fn, items))
        else:
            for item in items:
                fn(item)

    def step(self, count: int = 1):
        p = self.params
        for _ in range(count):
            if p.lifetime > 0 and self.iteration > 0:
                for b, (s, e) in enumerate(self.batches):
                    if self.batch_age(b) == 0:
                        self._spawn(b, s, e, generation=self.iteration)
            if SORT_INTERVAL and self.iteration % SORT_INTERVAL == 0:
                self._map(lambda b: self._sort_batch(*b), self.batches)
            alphas = [self.batch_alpha(b) for b in range(len(self.batches))]
            for wave in self.waves:
                o, end = wave[0][1], wave[-1][2]
                self._map(lambda c, o=o, alphas=alphas: self._move_chunk(c[1], c[2], o, alphas[c[0]]), wave)
                # write back in particle order: the last particle on a texel wins (deterministic)
                np.put(self._image_c, self._pidx[:end - o], self._vals[:end - o].view(np.complex128).reshape(-1))
            self.iteration += 1
            if p.blur_interval and self.iteration % p.blur_interval == 0:
                self.blur_and_fade()

    def blur_and_fade(self):
        """Blend toward a 3x3 binomial blur (across face edges) by ``blur``, then fade toward the centre colour
        (or each texel's start colour) by ``fade_rate``: one pass per face, in place."""
        p = self.params
        r = self.res
        k = np.float32(p.blur)
        fr = np.float32(p.fade_rate)
        if k == 0 and fr == 0:
            return
        img = self.image.reshape(6, r, r, 4)
        target = np.append(self.centre, np.float32(0.0 if p.cloud_mode else 1.0)).astype(np.float32)
        if k > 0:
            ring = _ring(r)
            border = self.image[self._border]  # every face's border, read before any face changes
            q = np.empty((r + 2, r + 2, 4), dtype=np.float32)
        for f in range(6):  # per face (bounded memory), each vectorised
            face = img[f]
            if k > 0:
                q[1:-1, 1:-1] = face
                q[ring] = border[f]
                h = q[:, :-2] + q[:, 2:]
                h += q[:, 1:-1]
                h += q[:, 1:-1]
                bl = h[:-2] + h[2:]
                bl += h[1:-1]
                bl += h[1:-1]  # 16 x the blur
                bl *= k / np.float32(16.0) * (np.float32(1.0) - fr)
                face *= (np.float32(1.0) - k) * (np.float32(1.0) - fr)
                face += bl
                del h, bl
            else:
                face *= np.float32(1.0) - fr
            if fr > 0:
                if self.base is not None:
                    face[..., :3] += fr * self.base[f * r * r:(f + 1) * r * r].reshape(r, r, 3)
                    face[..., 3] += fr
                else:
                    face += fr * target

    # -- outputs
    @property
    def channels(self) -> int:
        """Channels of the output images: 3 (RGB), or 4 (RGBA) in cloud mode."""
        return 4 if self.params.cloud_mode else 3

    def cloud_mask_at(self, d: np.ndarray) -> np.ndarray:
        """Cloud mode's density mask in (0, 1] at unit directions d (n, 3): a fixed fractal noise (after
        gaseous-giganticus -C: noise at 3.6 x the noise scale, shaped and clamped), blended with 1 by
        ``1 - cloud_noise``. Built once on a padded cube of 128 per face and sampled bilinearly (seamless)."""
        if self._coarse is None:
            p = self.params
            m = 128
            g = face_directions(m, pad=1).reshape(-1, 3)
            perm = _perm(p.seed ^ 0xC10D)
            n = np.zeros(len(g))
            total = 0.0
            for o in range(p.octaves):
                amp = 1.0 if o == 0 else p.falloff ** (o * p.gain)
                q = g * (3.6 * p.noise_scale * 2.0 ** o)
                val, _, _, _ = simplex4_grad(q[:, 0], q[:, 1], q[:, 2], np.full(len(g), p.w_offset + 10.0 + 7.0 * o),
                                             perm)
                n += amp * val
                total += amp
            n /= max(total, 1e-9)
            n = np.where(n > 0.5, n * (0.5 + n), n)
            n = np.where(n < 0.0, n * (1.25 + n), n)
            n = np.clip(n, -0.333, 0.666) + 0.334
            n = 1.0 - p.cloud_noise + p.cloud_noise * n
            self._coarse = n.reshape(6, m + 2, m + 2, 1).astype(np.float32)
        return sample_cube(self._coarse, d)[:, 0].astype(np.float32)

    def _out_pixels(self, sl=slice(None)) -> np.ndarray:
        """Output pixels of texels ``sl``: RGB, or in cloud mode the cloud colour with alpha = the painted
        brightness (the particles' palette brightness x the cloud mask where they started)."""
        if not self.params.cloud_mode:
            return self.image[sl, :3]
        rgb = self.image[sl, :3]
        out = np.empty((len(rgb), 4), dtype=np.float32)
        out[:, :3] = np.asarray(self.params.cloud_color[:3], dtype=np.float32)
        a = rgb.sum(axis=1)
        a *= np.float32(1.0 / 3.0)
        np.clip(a, 0.0, 1.0, out=out[:, 3])
        return out

    def _padded_out(self) -> np.ndarray:
        """(6, res+2, res+2, C) float32 output pixels with each face's border from its neighbours."""
        r = self.res
        c = self.channels
        pad = np.empty((6, r + 2, r + 2, c), dtype=np.float32)
        for f in range(6):
            pad[f, 1:-1, 1:-1] = self.face_rgb(f)
        border = self._border.reshape(-1)
        pad[:, _ring(r)] = self._out_pixels(border).reshape(6, -1, c)
        return pad

    def face_rgb(self, f: int) -> np.ndarray:
        """(res, res, C) float32 output pixels of face ``f`` (``FACES`` order), row 0 at the top; C = 3 (RGB), or
        4 (RGBA) in cloud mode."""
        r = self.res
        return self._out_pixels(slice(f * r * r, (f + 1) * r * r)).reshape(r, r, self.channels)

    def cube_faces(self) -> np.ndarray:
        """(6, res, res, C) float32 in 0..1, faces in ``FACES`` order, row 0 at the top (C as ``face_rgb``)."""
        return np.stack([np.array(self.face_rgb(f)) for f in range(6)])

    def equirect(self, width: int | None = None) -> np.ndarray:
        width = width or self.params.equirect_width
        return equirect_from_cube(self._padded_out(), width)

    def flow_velocity(self, width: int) -> np.ndarray:
        """(width/2, width, 3) float32 flow in real units: east and north velocity and the speed, in radians of arc
        per frame (``frame_iterations`` iterations), on the equirectangular grid (what the float EXR flow map
        holds)."""
        d = equirect_directions(width)
        vel = sample_cube(self.field.velocity, d.reshape(-1, 3)).reshape(d.shape)
        east = np.stack([-d[..., 1], d[..., 0], np.zeros(d.shape[:2])], axis=-1)
        en = np.linalg.norm(east, axis=-1, keepdims=True)
        east = np.divide(east, en, out=np.zeros_like(east), where=en > 1e-9)
        north = np.cross(d, east)
        per_frame = float(self.params.frame_iterations)
        ve = np.sum(vel * east, axis=-1) * per_frame
        vn = np.sum(vel * north, axis=-1) * per_frame
        return np.stack([ve, vn, np.sqrt(ve * ve + vn * vn)], axis=-1).astype(np.float32)

    def flow_equirect(self, width: int, velocity: np.ndarray | None = None) -> np.ndarray:
        """(width/2, width, 3) flow map for 8-bit images: ``encode_flow`` of ``flow_velocity`` with the bake's fixed
        ``flow_scale`` (R east, G north: 0.5 = still, 0 / 1 = -scale / +scale; B speed / scale; clamped)."""
        if velocity is None:
            velocity = self.flow_velocity(width)
        return encode_flow(velocity, flow_scale(self.params))

    def directions(self) -> np.ndarray:
        """(n, 3) float64 unit directions of all particles."""
        return face_uv_to_dir(self.face, self.uv.real.astype(np.float64),
                              self.uv.imag.astype(np.float64))

    def density_by_latitude(self, bands: int) -> np.ndarray:
        """Particle counts in ``bands`` equal-area latitude bands (south to north)."""
        z = self.directions()[:, 2]
        k = np.clip(((z + 1.0) * 0.5 * bands).astype(np.int64), 0, bands - 1)
        return np.bincount(k, minlength=bands)


FLOW_NOISE_PEAK = 3.5  # the turbulence is normalised to RMS 1; measured peaks are about 3 to 4.5
FLOW_VORTEX_PEAK = math.sqrt(2.0) * math.exp(-0.5)  # peak speed of one vortex per unit strength (~0.86)


def flow_scale(params: GasGiantParams) -> float:
    """The fixed speed (radians per frame) that the 8-bit flow map's 0 and 1 stand for: ``params.flow_scale``, or
    when that is 0 a bound from the settings alone (the same for every frame of a sequence): velocity factor x
    iterations per frame x (the fastest band speed + ``FLOW_NOISE_PEAK`` x turbulence + up to two overlapping
    vortices' peak speed). Real fields stay below it almost everywhere; faster texels clamp in the PNG."""
    if params.flow_scale > 0:
        return float(params.flow_scale)
    rel = (abs(params.band_speed) + FLOW_NOISE_PEAK * abs(params.noise_speed)
           + min(params.vortices, 2) * FLOW_VORTEX_PEAK * abs(params.vortex_strength))
    scale = rel * math.radians(params.velocity_factor) / 20.0 * params.frame_iterations
    return scale if scale > 0 else 1.0


def encode_flow(velocity: np.ndarray, scale: float) -> np.ndarray:
    """Real flow (east, north, speed in radians per frame) -> 0..1 pixels: R, G = 0.5 + 0.5 v / scale, B = speed /
    scale, all clamped to 0..1 (what the 8-bit PNG stores)."""
    v = np.asarray(velocity, dtype=np.float32)
    k = np.float32(1.0 / scale)
    out = np.empty_like(v)
    out[..., :2] = np.float32(0.5) + np.float32(0.5) * k * v[..., :2]
    out[..., 2] = k * v[..., 2]
    return np.clip(out, 0.0, 1.0, out=out)


def decode_flow(pixels: np.ndarray, scale: float) -> np.ndarray:
    """0..1 flow pixels -> (east, north, speed) in radians per frame: the formula gasgiant.json states."""
    px = np.asarray(pixels, dtype=np.float64)
    out = np.empty(px.shape[:-1] + (3,))
    out[..., :2] = (2.0 * px[..., :2] - 1.0) * scale
    out[..., 2] = px[..., 2] * scale
    return out


# --- cube-face layouts --------------------------------------------------------------------------------------

_ORIENT_NAMES = {"as is": lambda m: m, "mirror left-right": lambda m: m[:, ::-1],
                 "mirror top-bottom": lambda m: m[::-1], "rotate 180": lambda m: np.rot90(m, 2),
                 "rotate 90 clockwise": lambda m: np.rot90(m, -1),
                 "rotate 90 counter-clockwise": lambda m: np.rot90(m, 1),
                 "transpose": lambda m: m.swapaxes(0, 1), "anti-transpose": lambda m: np.rot90(m, 2).swapaxes(0, 1)}


def _orient(face: np.ndarray, t) -> np.ndarray:
    """An engine face image from a Blender face image (rows, cols, ...): engine texel (i, j) at (sc, tc) = (c_j,
    c_i) shows the Blender texel at u = t00 sc + t01 tc, v = t10 sc + t11 tc (entries 0 or +-1; texel centres
    c_k = -c_(n-1-k), so the mapping is exact: a flip and/or a transpose, no resampling)."""
    (t00, t01), (t10, t11) = t
    if t00 != 0:
        out = face
        if t00 < 0:
            out = out[:, ::-1]
        if t11 < 0:
            out = out[::-1]
    else:
        out = face.swapaxes(0, 1)
        if t01 < 0:
            out = out[::-1]
        if t10 < 0:
            out = out[:, ::-1]
    return out


def _orient_name(t) -> str:
    probe = np.arange(9).reshape(3, 3)
    got = _orient(probe, t)
    return next(name for name, fn in _ORIENT_NAMES.items() if np.array_equal(fn(probe), got))


def cube_layout_faces(layout: str) -> list:
    """The six faces a bake writes in ``layout``, in file order: dicts with ``name`` (file name part), ``slot``
    (engine cube-map slot, ``None`` for BLENDER), ``face`` (index into ``FACES``: the Blender face it shows),
    ``t`` (the ``_orient`` matrix from that Blender face), and in Blender axes ``normal``, ``right`` (direction
    of the image's +column) and ``up`` (direction toward the image's top row)."""
    if layout == "BLENDER":
        return [dict(name=f, slot=None, face=i, t=((1, 0), (0, 1)), normal=_FACE_N[i], right=_FACE_A[i],
                     up=-_FACE_B[i]) for i, f in enumerate(FACES)]
    minv = np.linalg.inv(ENGINE_AXES[layout])
    out = []
    for name, slot, (n, sc, tc) in zip(ENGINE_FACES, ENGINE_SLOTS, _ENGINE_TABLE, strict=True):
        nb, scb, tcb = (minv @ np.array(x, dtype=np.float64) for x in (n, sc, tc))
        f = int(np.argmax(_FACE_N @ nb))
        a, b = _FACE_A[f], _FACE_B[f]
        t = ((int(round(scb @ a)), int(round(tcb @ a))), (int(round(scb @ b)), int(round(tcb @ b))))
        out.append(dict(name=name, slot=slot, face=f, t=t, normal=nb, right=scb, up=-tcb))
    return out


def layout_face_image(face: np.ndarray, entry: dict) -> np.ndarray:
    """The image of one ``cube_layout_faces`` entry from its Blender face image (contiguous copy)."""
    return np.ascontiguousarray(_orient(face, entry["t"]))


def blender_face_image(image: np.ndarray, entry: dict) -> np.ndarray:
    """The Blender face image from the image of one ``cube_layout_faces`` entry: the exact inverse of
    ``layout_face_image`` (flips undone, then the transpose), so engine-layout faces read back as they were baked."""
    (t00, t01), (t10, t11) = entry["t"]
    if t00 != 0:
        return np.ascontiguousarray(_orient(image, entry["t"]))  # flips only: each is its own inverse
    out = image
    if t01 < 0:
        out = out[::-1]
    if t10 < 0:
        out = out[:, ::-1]
    return np.ascontiguousarray(out.swapaxes(0, 1))


def equirect_from_cube(padded: np.ndarray, width: int) -> np.ndarray:
    h = width // 2
    out = np.empty((h, width, padded.shape[-1]), dtype=np.float32)
    rows = max(1, (1 << 18) // width)
    for r0 in range(0, h, rows):  # bounded memory, each block vectorised
        blk = equirect_directions(width, slice(r0, r0 + rows))
        out[r0:r0 + rows] = sample_cube(padded, blk.reshape(-1, 3)).reshape(blk.shape[:2] + (-1,))
    return out


# --- the bake job -------------------------------------------------------------------------------------------

@dataclass
class BakeResult:
    folder: str
    files: list
    frames: int
    equirect: list  # equirect files in frame order (the planet's texture)
    seconds: float = 0.0
    metadata: str = ""  # gasgiant.json: what every image holds and how to decode it (``bake_metadata``)
    removed: list = field(default_factory=list)  # names of the previous bake's files this bake removed
    not_removed: list = field(default_factory=list)  # (name, why) of those it could not remove

    def removed_note(self) -> str:
        """What happened to the previous bake's files that this one does not write (empty if there were none)."""
        notes = []
        if self.removed:
            notes.append(f"removed {len(self.removed)} file(s) of the previous bake in this folder that this bake "
                         f"does not write: {_name_list(self.removed)}")
        if self.not_removed:
            notes.append(f"could not remove {len(self.not_removed)} file(s) of the previous bake: "
                         f"{_name_list([f'{n} ({why})' for n, why in self.not_removed])}")
        return "; ".join(notes)


def _name_list(names: list, limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"


def output_names(params: GasGiantParams, frame: int | None):
    """{output key: file name} of one frame; with ``PNG_EXR`` the EXR keys end in ``_exr``."""
    sfx = "" if frame is None else f"_{frame:04d}"
    exts = {"PNG": ("png",), "EXR": ("exr",), "PNG_EXR": ("png", "exr")}[params.file_format]
    names = {}
    for ext in exts:
        key = "" if ext == exts[0] else "_exr"
        names.update({f"cube_{e['name']}{key}": f"gasgiant_{e['name']}{sfx}.{ext}"
                      for e in cube_layout_faces(params.cube_layout)})
        if params.equirect_width:
            names[f"equirect{key}"] = f"gasgiant_equirect{sfx}.{ext}"
            names[f"flow{key}"] = f"gasgiant_flow{sfx}.{ext}"
    return names


METADATA_NAME = "gasgiant.json"
METADATA_FORMAT = "envfx-gasgiant-bake"
METADATA_VERSION = 1
# every name a bake can write, of any layout, file format and frame: only such files are ever removed
OUTPUT_NAME = re.compile(rf"gasgiant_({'|'.join(FACES + ENGINE_FACES)}|equirect|flow)(?:_(\d{{4,}}))?\.(png|exr)")


def all_output_names(params: GasGiantParams) -> list:
    """Every file name a bake with ``params`` writes (besides gasgiant.json), frame by frame."""
    frames = [None] if params.frames == 1 else range(1, params.frames + 1)
    return [name for f in frames for name in output_names(params, f).values()]


def previous_outputs(folder: str) -> set:
    """The files in ``folder`` that the bake whose gasgiant.json is there wrote: the names its ``outputs`` lists,
    or, for a gasgiant.json without that list (written before it existed), the names that bake wrote as its own
    settings give them (frames, cube layout, file formats, with or without the equirect image). Only plain file
    names a bake can write (``OUTPUT_NAME``) that are files in ``folder``; none when there is no gasgiant.json of
    a gas-giant bake or it cannot be read."""
    try:
        with open(os.path.join(folder, METADATA_NAME), encoding="utf-8") as fh:
            meta = json.load(fh)
        present = {n for n in os.listdir(folder) if OUTPUT_NAME.fullmatch(n)
                   and not os.path.isdir(os.path.join(folder, n))}
    except (OSError, ValueError):
        return set()
    if not isinstance(meta, dict) or meta.get("format") != METADATA_FORMAT:
        return set()
    outputs = meta.get("outputs")
    if outputs is None:
        return _outputs_from_settings(meta, present)
    if not isinstance(outputs, list):
        return set()
    return {n for n in outputs if isinstance(n, str)} & present


def _outputs_from_settings(meta: dict, present: set) -> set:
    """Of the names ``present``, those the bake of an older gasgiant.json (without ``outputs``) wrote, from its
    ``frames``, ``cube_layout`` and the file types and images its ``images`` name."""
    try:
        frames = int(meta["frames"])
        layout = str(meta["cube_layout"]).upper()
        files = [str(item["file"]) for item in meta["images"]]
    except (KeyError, TypeError, ValueError):
        return set()
    formats = {"png": "PNG", "exr": "EXR", "exr png": "PNG_EXR"}
    file_format = formats.get(" ".join(sorted({f.rsplit(".", 1)[-1] for f in files})))
    if frames < 1 or layout not in CUBE_LAYOUTS or file_format is None:
        return set()
    equirect = any(f.startswith("gasgiant_equirect") for f in files)
    params = GasGiantParams(frames=frames, cube_layout=layout, file_format=file_format,
                            equirect_width=2048 if equirect else 0)
    if frames == 1:
        return set(output_names(params, None).values()) & present
    patterns = set(output_names(params, 0).values())  # gasgiant_px_0000.png ...: the names of every frame
    found = set()
    for name in present:
        m = OUTPUT_NAME.fullmatch(name)
        number = int(m.group(2)) if m.group(2) else 0
        if 1 <= number <= frames and name == f"gasgiant_{m.group(1)}_{number:04d}.{m.group(3)}" and \
                f"gasgiant_{m.group(1)}_0000.{m.group(3)}" in patterns:
            found.add(name)
    return found


class _FlowStats:
    """The fastest flow speed over all frames and how many texels the 8-bit flow map clamped."""

    def __init__(self):
        self.max_speed = 0.0
        self.clamped = 0
        self.texels = 0

    def add(self, speed: np.ndarray, scale: float):
        self.max_speed = max(self.max_speed, float(speed.max()))
        self.clamped += int(np.count_nonzero(speed > scale))
        self.texels += speed.size


def _vec(v) -> list:
    return [float(x) + 0.0 for x in np.round(np.asarray(v, dtype=np.float64), 6)]


def _file_entry(params: GasGiantParams, key: str) -> dict:
    """{"file": name} for a still, {"file": pattern with {frame:04d}, "frames": [1, N]} for a sequence."""
    if params.frames == 1:
        return {"file": output_names(params, None)[key]}
    return {"file": output_names(params, 0)[key].replace("_0000.", "_{frame:04d}."), "frames": [1, params.frames]}


def bake_metadata(params: GasGiantParams, stats: _FlowStats | None = None) -> dict:
    """What gasgiant.json says: per image file its content, layout, orientation and colour space, and the flow
    map's unit and fixed scale (one for all frames) with the formula that decodes it."""
    exts = {"PNG": ("png",), "EXR": ("exr",), "PNG_EXR": ("png", "exr")}[params.file_format]
    keys = {ext: ("" if ext == exts[0] else "_exr") for ext in exts}
    content = {"png": "RGB", "exr": "RGB"}
    alpha = {}  # cloud mode: how each file stores its colour against its alpha
    if params.cloud_mode:
        content = {"png": "RGBA: cloud colour, alpha = cloud cover (straight: colour not multiplied by alpha)",
                   "exr": "RGBA: cloud colour x alpha, alpha = cloud cover (premultiplied, as OpenEXR defines colour)"}
        alpha = {"png": "straight", "exr": "premultiplied"}
    colour_space = {"png": "sRGB", "exr": "linear Rec.709 (scene linear, sRGB primaries)"}
    images = []
    engine = params.cube_layout != "BLENDER"
    for entry in cube_layout_faces(params.cube_layout):
        for ext, key in keys.items():
            item = _file_entry(params, f"cube_{entry['name']}{key}")
            item.update(content=f"planet colour, {content[ext]}", **_alpha_entry(alpha, ext),
                        colour_space=colour_space[ext], layout="cube face",
                        width=params.cubemap_size, height=params.cubemap_size, blender_face=FACES[entry["face"]],
                        normal=_vec(entry["normal"]), right=_vec(entry["right"]), up=_vec(entry["up"]))
            if engine:
                m = ENGINE_AXES[params.cube_layout]
                item.update(slot=entry["slot"], slot_index=ENGINE_SLOTS.index(entry["slot"]),
                            engine_normal=_vec(m @ entry["normal"]), engine_right=_vec(m @ entry["right"]),
                            engine_up=_vec(m @ entry["up"]))
            else:
                item["engine_slots"] = {}
                for lay in ("GLTF", "UNITY"):
                    e = next(e for e in cube_layout_faces(lay) if e["face"] == entry["face"])
                    item["engine_slots"][lay.lower()] = {"slot": e["slot"], "transform": _orient_name(e["t"])}
            images.append(item)
    flow = None
    if params.equirect_width:
        w = params.equirect_width
        fw = min(w, 1024)
        for ext, key in keys.items():
            item = _file_entry(params, f"equirect{key}")
            item.update(content=f"planet colour, {content[ext]}", **_alpha_entry(alpha, ext),
                        colour_space=colour_space[ext], layout="equirectangular", width=w, height=w // 2)
            images.append(item)
        scale = flow_scale(params)
        for ext, key in keys.items():
            item = _file_entry(params, f"flow{key}")
            item.update(layout="equirectangular", width=fw, height=fw // 2, colour_space="non-colour data (linear)")
            if ext == "png":
                item.update(content="flow map, 8-bit encoded: R east, G north velocity, B speed",
                            decode="east = (2 R - 1) * scale, north = (2 G - 1) * scale, speed = B * scale "
                            "(radians per frame; R, G, B in 0..1)",
                            still=0.5, clamped=f"clamped to the scale ({scale:.6g} radians per frame): an east or "
                            f"north velocity beyond +-scale is stored as 0 or 1 and a speed above it as B = 1 "
                            f"(the float EXR is not clamped; flow.clamped_texels counts them)",
                            quantisation="8 bits: steps of 2 x scale / 255 for east and north; the still value 0.5 "
                            "is stored as 128 / 255 and decodes to scale / 255 (below one step)")
            else:
                item.update(content="flow map, real velocities: R east, G north velocity, B speed, in radians per "
                            "frame (32-bit float, not clamped)", decode="east = R, north = G, speed = B", still=0.0)
            images.append(item)
        flow = {
            "unit": "radians of arc on the unit sphere per frame (one frame = iterations_per_frame simulation "
                    "iterations, the step between the images of a sequence); per second = per frame x the rate "
                    "the sequence is played at (frames per second)",
            "iterations_per_frame": params.frame_iterations,
            "scale": scale,
            "scale_source": "flow_scale setting" if params.flow_scale > 0 else
            "automatic from the settings: radians(velocity_factor) / 20 x iterations_per_frame x (|band_speed| + "
            f"{FLOW_NOISE_PEAK} x turbulence + min(vortices, 2) x {FLOW_VORTEX_PEAK:.4f} x |vortex_strength|)",
            "same_for_all_frames": True,
            "still_png": 0.5,
            "still_exr": 0.0,
            "directions": "east = toward increasing longitude (Blender +Y at longitude 0), north = toward Blender +Z "
                          "(the pole); both tangent to the sphere",
            "to_equirect_uv": "per frame the image column advances by east / (2 pi cos(latitude)) x width and "
                              "the row (counted from the top) by -north / pi x height",
        }
        if stats is not None and stats.texels:
            flow["max_speed_baked"] = stats.max_speed
            flow["clamped_texels"] = stats.clamped
            flow["clamped_fraction"] = stats.clamped / stats.texels
    return {
        "format": METADATA_FORMAT,
        "version": METADATA_VERSION,
        "frames": params.frames,
        "frame_numbering": "none (a still)" if params.frames == 1 else "{frame:04d} from 0001",
        "axes": "directions are Blender world axes (Z up, the planet's pole) unless named engine_*",
        "cube_layout": params.cube_layout.lower(),
        "cube_layout_info": _layout_info(params.cube_layout),
        "equirect": "row 0 = north pole (+Z), rows uniform in latitude; column 0 starts at longitude -180 (the -X "
                    "side), longitude 0 (the +X side) is the middle, longitude +90 = +Y; direction of pixel centre "
                    "(lon, lat) = (cos lat cos lon, cos lat sin lon, sin lat)",
        "flow": flow,
        "images": images,
        "outputs": all_output_names(params),
    }


def _alpha_entry(alpha: dict, ext: str) -> dict:
    return {"alpha": alpha[ext]} if ext in alpha else {}


def _layout_info(layout: str) -> str:
    if layout == "BLENDER":
        return ("faces px, nx, py, ny, pz, nz are Blender's +X, -X, +Y, -Y, +Z, -Z seen from outside the planet, "
                "the side faces with +Z up; right / up: the world direction of the image's +column / top. "
                "engine_slots: where each file goes in a D3D/OpenGL cube map (+X, -X, +Y, -Y, +Z, -Z) and how to "
                "turn it first, for gltf (right-handed Y-up: engine = (x, z, -y), as glTF, Godot, OpenGL) and unity "
                "(left-handed Y-up: engine = (-x, z, -y), as Unity imports glTF and FBX); or bake with cube_layout "
                "gltf / unity")
    m = ENGINE_AXES[layout].astype(int).tolist()
    hand = "right-handed (glTF, Godot, OpenGL, Vulkan, three.js)" if layout == "GLTF" else \
        "left-handed (Unity, as its glTF and FBX importers turn Blender files)"
    return (f"standard D3D/OpenGL cube-map faces posx, negx, posy, negy, posz, negz = slots +X, -X, +Y, -Y, +Z, -Z "
            f"(slot_index 0..5) of a Y-up {hand} engine space, engine = {m} @ blender; image column = s, row 0 = "
            f"t = 0 (the OpenGL major-axis table): a cube sampler given an engine direction returns the texel the "
            f"equirect image shows for that direction; use the files as they are")


def _write_json(path: str, data: dict):
    import json

    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")


def _write_image(path: str, pixels: np.ndarray, is_colour: bool = True):
    """PNG (8-bit, straight alpha) or EXR (32-bit float) by the file's extension. In the EXR, colour outputs are
    converted from sRGB-encoded to linear and multiplied by their alpha (OpenEXR colour is premultiplied); data
    (the flow map) is written as it is."""
    if path.endswith(".exr"):
        px = np.array(pixels, dtype=np.float32)
        if is_colour:
            px[..., :3] = colour.srgb_to_linear(px[..., :3])
            if px.shape[-1] == 4:
                px[..., :3] *= px[..., 3:]
        exr.write_exr(path, px)
    else:
        write_png(path, pixels)


def key_frame_count(params: GasGiantParams) -> int:
    """``len(field_times(params)[0])`` without listing the key frames (the panel's estimate runs on each redraw,
    whatever the number of frames): the multiples of ``field_interval`` up to the last frame, plus the last frame
    when it is not one of them."""
    last = params.frames - 1
    if params.frames == 1 or params.time_step == 0 or params.noise_speed == 0:
        return 1
    k = params.field_interval
    return last // k + 1 + (1 if last % k else 0)


def field_times(params: GasGiantParams):
    """(key frames whose fields are built, in order) and a function frame -> (key a, key b, mix) for an animated
    bake: fields are built every ``field_interval`` frames and at the last frame and interpolated in between;
    all frames share frame 0's field when the field does not change with time (no time step or turbulence)."""
    last = params.frames - 1
    if params.frames == 1 or params.time_step == 0 or params.noise_speed == 0:
        return [0], lambda f: (0, 0, 0.0)
    k = params.field_interval
    keys = sorted(set(range(0, last + 1, k)) | {last})

    def at(f):
        a = (f // k) * k
        b = min(a + k, last)
        return a, b, (0.0 if b == a else (f - a) / (b - a))

    return keys, at


def check_output_folder(folder: str):
    if not folder:
        raise GasGiantError("No output folder: choose where the textures go")
    folder = os.path.abspath(folder)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise GasGiantError(f"Output {folder!r} is a file, not a folder: choose a folder")
    probe = folder  # the nearest part of the path that exists: the bake makes the folders below it
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise GasGiantError(f"Output folder {folder!r} cannot be made: part of its path, {probe!r}, is a file, not a "
                            f"folder: choose another folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise GasGiantError(f"Output folder {folder!r} cannot be written (no permission on {probe!r}): choose a "
                            f"folder you can write to")


def bake(params: GasGiantParams, folder: str, check_memory: bool = True, fields: dict | None = None):
    """The whole bake as a job generator (yields progress 0..1, returns a ``BakeResult``).

    Validates everything first (settings, memory, output folder, the velocity field file to load or the place to
    save one); writes every file into a temporary folder next to ``folder`` and moves them in only at the end, so
    closing the generator (cancel) leaves nothing behind. Then it removes the files the previous bake in
    ``folder`` wrote (``previous_outputs``: what its gasgiant.json lists) that this bake does not write, and says
    so in the result (``removed``); other files are left alone. Animated bakes build the velocity field every
    ``field_interval`` frames and interpolate between (see ``field_times``). ``fields``: what
    ``check_field_files(params)`` returned when the caller has already run it (the field file is not read again).
    """
    import time as _time

    params.validate(available_memory() if check_memory else None)
    check_output_folder(folder)
    loaded = check_field_files(params) if fields is None else fields
    keys, at = field_times(params)
    folder = os.path.abspath(folder)
    t0 = _time.perf_counter()
    created = []  # folders this bake makes (removed again unless it finishes)
    probe = folder
    while not os.path.isdir(probe):
        created.append(probe)
        probe = os.path.dirname(probe)
    os.makedirs(folder, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".envfx_gasgiant_", dir=folder)
    sim = None
    done = False
    try:
        yield 0.0
        built = {}  # key frame -> Field (the two in use; all of them when saving)
        norm = None
        if loaded:
            norm = next(iter(loaded.values())).noise_norm

        def key_field(k, lo, hi):
            nonlocal norm
            t = k * params.time_step
            if k not in built:
                if t in loaded:
                    built[k] = loaded[t]
                else:
                    built[k] = yield from _scaled_progress(build_field_steps(params, t, norm), lo, hi)
                norm = built[k].noise_norm
            return built[k]

        f0 = yield from key_field(0, 0.0, 0.05)
        sim = Simulation(params, time=0.0, field=f0)
        total = params.iterations + (params.frames - 1) * params.frame_iterations
        chunk = max(1, min(10, 2_000_000 // max(1, params.particles)))
        written, equis = [], []
        animated = params.frames > 1
        layout = cube_layout_faces(params.cube_layout)
        scale = flow_scale(params)
        flow_stats = _FlowStats()
        mixed = None
        for f in range(params.frames):
            todo = params.iterations if f == 0 else params.frame_iterations
            if f > 0:
                frac = 0.05 + 0.9 * sim.iteration / total
                a, b, w = at(f)
                fa = yield from key_field(a, frac, frac)
                fb = fa
                if w > 0:
                    fb = yield from key_field(b, frac, frac)
                if not params.save_field:  # drop key fields no longer needed
                    for k in [k for k in built if k < a]:
                        del built[k]
                mixed = lerp_field(fa, fb, w, out=mixed)
                sim.set_time(f * params.time_step, mixed)
            while todo > 0:
                k = min(chunk, todo)
                sim.step(k)
                todo -= k
                yield 0.05 + 0.9 * sim.iteration / total
            names = output_names(params, f + 1 if animated else None)
            for entry in layout:
                for key in (f"cube_{entry['name']}", f"cube_{entry['name']}_exr"):
                    if key in names:
                        _write_image(os.path.join(tmp, names[key]),
                                     layout_face_image(sim.face_rgb(entry["face"]), entry))
            if params.equirect_width:
                eq = sim.equirect()
                vel = sim.flow_velocity(min(params.equirect_width, 1024))
                flow = encode_flow(vel, scale)
                flow_stats.add(vel[..., 2], scale)
                # the PNG holds the fixed 8-bit encoding, the float EXR the real velocities (radians per frame)
                for key, img, is_colour in (("equirect", eq, True), ("equirect_exr", eq, True),
                                            ("flow", flow, False), ("flow_exr", vel, False)):
                    if key in names:
                        _write_image(os.path.join(tmp, names[key]), img, is_colour)
                equis.append(os.path.join(folder, names["equirect"]))
                del eq, flow, vel
            written.extend(os.path.join(folder, n) for n in names.values())
            yield 0.05 + 0.9 * sim.iteration / total
        if params.save_field:
            save_fields(params.save_field, params, {k * params.time_step: fld for k, fld in built.items()})
        _write_json(os.path.join(tmp, METADATA_NAME), bake_metadata(params, flow_stats))
        new = sorted(os.listdir(tmp))
        stale = sorted(previous_outputs(folder) - set(new))  # read before this bake's gasgiant.json replaces it
        for name in [n for n in new if n != METADATA_NAME] + [METADATA_NAME]:  # the list of the files comes last
            os.replace(os.path.join(tmp, name), os.path.join(folder, name))
        done = True
        result = BakeResult(folder, written, params.frames, equis, _time.perf_counter() - t0,
                            os.path.join(folder, METADATA_NAME))
        for name in stale:  # the previous bake's files that this bake does not write
            try:
                os.remove(os.path.join(folder, name))
                result.removed.append(name)
            except OSError as exc:
                result.not_removed.append((name, exc.strerror or str(exc)))
        return result
    finally:
        if sim is not None:
            sim.close()
        shutil.rmtree(tmp, ignore_errors=True)
        if not done:
            for path in created:  # leaf first
                try:
                    os.rmdir(path)
                except OSError:
                    break


def run_bake(params: GasGiantParams, folder: str, check_memory: bool = True) -> BakeResult:
    """Drive ``bake`` to the end without progress output (scripts and tests)."""
    job = bake(params, folder, check_memory=check_memory)
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value


__all__ = [
    "FACES", "GasGiantParams", "GasGiantError", "PRESETS", "preset", "Simulation", "build_field", "band_profile",
    "velocity_at", "surface_divergence", "sample_field", "bake", "run_bake", "write_png", "estimate_memory",
]
