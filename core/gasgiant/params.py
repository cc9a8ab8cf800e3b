"""The gas giant's parameters (``GasGiantParams``, made from the settings table), their checks, presets, the
random look, the memory estimate and the key frames of an animated bake."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields

import numpy as np


MAPPINGS = ("SINUSOIDAL", "STRIPES", "PLAIN")
FILE_FORMATS = ("PNG", "EXR", "PNG_EXR")
CUBE_LAYOUTS = ("BLENDER", "GLTF", "UNITY")  # see layouts.py
FIELD_SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048)
CUBEMAP_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)
EQUIRECT_WIDTHS = (0, 128, 256, 512, 1024, 2048, 4096, 8192)
MAX_PARTICLES = 200_000_000
# Frames of an animated bake: at most Blender's last frame (MAXFRAME). The planet plays the sequence as an image
# sequence, whose length (ImageUser.frame_duration) stops there, and a scene cannot show more frames: a longer bake
# would be cut without a word (and at 1 ms a frame would still take 12 days).
MAX_FRAMES = 1_048_574
CHUNK = 1 << 17  # particles per work item (fixed: results do not depend on the thread count)
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
