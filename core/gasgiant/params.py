"""The gas giant's parameters (``GasGiantParams``, made from the settings table), their checks, presets, the
random look, the memory estimate and the key frames of an animated bake."""

from __future__ import annotations

import math
from collections.abc import Callable
import os
from dataclasses import dataclass, field, make_dataclass, replace
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .settings import (ABOVE_LOWEST, CUBE_LAYOUTS, CUBEMAP_SIZES, EQUIRECT_WIDTHS, FIELD_SIZES, FILE_FORMATS,
                       FLOAT_RANGES, MAPPINGS, MAX_FRAMES, MAX_MAGNITUDE, MAX_PARTICLES, PARAM_SETTINGS, PREVIEW_CAPS,
                       symmetric_ramp)


CHUNK = 1 << 15  # particles per work item (fixed: results do not depend on the thread count)
WAVE = 16  # chunks that read the texture before it is written back (fixed, like CHUNK)
# chunks a thread moves in one call (a work item): few and large items, as each numpy call of a thread waits for
# Python's lock while another thread holds it between its calls; two items per thread and wave keep the threads
# evenly busy, and at most four chunks bound the scratch (about 72 bytes a particle of an item)
ITEMS_PER_THREAD = 2
ITEM_CHUNKS = 4


def item_chunks(threads: int) -> int:
    """Chunks in a work item of the move on ``threads`` threads."""
    return max(1, min(ITEM_CHUNKS, WAVE // (ITEMS_PER_THREAD * threads)))


# bytes per particle: uv 8 + face 1 + colour 8 (uint16 RGBA)
BYTES_PER_PARTICLE = 17


class GasGiantError(ValueError):
    """Invalid gas giant settings or input; the message says what is wrong and what to do. A bad number names its
    ``field`` (the GasGiantParams field), its ``value`` as text and the ``advice`` (what to use instead), so a
    front end can name its own option (the command line says ``--turbulence`` for ``noise_speed``)."""

    def __init__(self, message: str, field: str | None = None, value: str = "", advice: str = ""):
        super().__init__(message)
        self.field, self.value, self.advice = field, value, advice


def _range_advice(lo: float, hi: float, above: bool) -> str:
    def text(x):
        return f"{x:,.0f}" if abs(x) == MAX_MAGNITUDE else f"{x:g}"

    return f"use more than {text(lo)}, at most {text(hi)}" if above else f"use {text(lo)} to {text(hi)}"


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _check_numbers(params) -> None:
    """Every whole-number setting an int (inf iterations would never end), every float setting a finite number
    in its range (``FLOAT_RANGES``: nan and inf pass most comparisons unnoticed and end the bake with lost
    particles; the settings in ``ABOVE_LOWEST`` must be more than their lowest value), every colour three finite
    components in 0..1."""
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


class _GasGiantParamsMethods:
    """The methods of ``GasGiantParams`` (its fields come from the settings table)."""

    if TYPE_CHECKING:  # the fields as the type checker sees them: the settings table's (a test keeps them equal)
        particles: int
        iterations: int
        seed: int
        field_size: int
        cubemap_size: int
        equirect_width: int
        threads: int
        velocity_factor: float
        vertical_bands: bool
        bands: float
        band_speed: float
        band_power: int
        pole_attenuation: float
        noise_scale: float
        octaves: int
        falloff: float
        gain: float
        noise_speed: float
        w_offset: float
        time_step: float
        vortices: int
        vortex_size: float
        vortex_size_variance: float
        vortex_strength: float
        vortex_band_threshold: float
        palette: np.ndarray | None
        palette_cube: np.ndarray | None
        mapping: str
        ramp: tuple
        opacity: float
        opacity_start: float
        lifetime: int
        respawn_batches: int
        fade_in: float
        fade_out: float
        blur_interval: int
        blur: float
        fade_rate: float
        fade_to_palette: bool
        hot_pink: bool
        cloud_mode: bool
        cloud_color: tuple
        cloud_noise: float
        file_format: str
        cube_layout: str
        flow_scale: float
        save_field: str
        load_field: str
        frames: int
        frame_iterations: int
        field_interval: int

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
            est = estimate_memory(cast("GasGiantParams", self))  # (self is one: the methods' class is its base)
            need(est <= available_bytes,
                 f"{self.particles} particles need about {est / 2**30:.2f} GB but only "
                 f"{available_bytes / 2**30:.2f} GB is available: use fewer particles or smaller images")
        return cast("GasGiantParams", self)


if TYPE_CHECKING:
    @dataclass(frozen=True)
    class GasGiantParams(_GasGiantParamsMethods):
        """(for the type checker: the frozen dataclass made below from the settings table)"""

        def __init__(self, **fields: Any) -> None: ...
else:
    GasGiantParams = make_dataclass(
        "GasGiantParams",
        [(s.name, s.type, field(default=s.default, repr=s.compare, compare=s.compare)) for s in PARAM_SETTINGS],
        bases=(_GasGiantParamsMethods,), frozen=True,
        namespace={"__module__": __name__, "__doc__": "Everything a bake depends on: one field per setting of "
                   "``settings.SETTINGS`` that has ``param`` (its type and default from there)."})


PRESETS: dict[str, dict[str, Any]] = {
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


def preset(name: str, **overrides: Any) -> GasGiantParams:
    key = name.upper()
    if key not in PRESETS:
        raise GasGiantError(f"Unknown preset {name!r}: use one of {', '.join(PRESETS)}")
    values = dict(PRESETS[key])
    values["ramp"] = symmetric_ramp(values.pop("ramp_colors"))
    return GasGiantParams(**{**values, **overrides})


def preset_values(name: str) -> dict:
    """{Blender property of ``settings.SETTINGS``: value} that the UI preset ``name`` sets (the look settings and
    ramp_color_1 ... 5); none for CUSTOM."""
    if name == "CUSTOM":
        return {}
    values = dict(PRESETS[name])
    colours = values.pop("ramp_colors")
    values.update((f"ramp_color_{i + 1}", color) for i, color in enumerate(colours))
    return values


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
    """Peak bytes of a bake (the resident memory of the bake process, less what Python, numpy and Blender take
    before it, is about this less the fixed 150 MiB):
    particles, the stored field, the texture, the largest transient (blur / equirect / palette copy), the
    per-step scratch and a fixed baseline (Python, numpy, field building)."""
    n, f, r = params.particles, params.field_size, params.cubemap_size
    particles = n * BYTES_PER_PARTICLE
    fld = 6 * (f + 2) ** 2 * (8 + 12)
    keys = key_frame_count(params)
    if keys > 1:
        fld *= 3  # two key fields and the mix between them
    if params.save_field:
        fld += (keys - 1) * 6 * (f + 2) ** 2 * (8 + 12)  # every key field is kept until it is saved
    tex = 6 * r * r * 8 + (6 * r * r * 6 if params.fade_to_palette else 0)  # uint16 RGBA (+ RGB start colours)
    transient = 6 * (r + 2) ** 2 * 12 + r * r * 36 if params.equirect_width else r * r * 36
    scratch = min(n, CHUNK * WAVE) * 16 + min(n, CHUNK * item_chunks(params.threads)) * params.threads * 80
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


def field_times(params: GasGiantParams) -> tuple[list[int], Callable[[int], tuple[int, int, float]]]:
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


# --- time estimate and preview -----------------------------------------------------------------------------
# Particle-steps per second per thread (painting included), measured here: a whole bake of 8M particles x 300
# iterations with the default settings took 46.7 s on 2 threads of a 2-core machine. A busy machine is slower; the
# estimate says so.
STEPS_PER_SECOND_PER_THREAD = 25.7e6


def particle_steps(params: GasGiantParams) -> int:
    """How many particle moves a bake makes: particles x (iterations + (frames - 1) x iterations per frame)."""
    return params.particles * (params.iterations + (params.frames - 1) * params.frame_iterations)


def estimate_seconds(params: GasGiantParams, cpus: int | None = None) -> float:
    """A rough bake time in seconds: ``particle_steps`` at the measured throughput per thread
    (``STEPS_PER_SECOND_PER_THREAD``), for the threads the bake uses and the ``cpus`` there are (default: this
    machine's). An estimate: building the velocity field and writing the images add a few seconds."""
    cpus = cpus or os.cpu_count() or 1
    return particle_steps(params) / (STEPS_PER_SECOND_PER_THREAD * max(1, min(params.threads, cpus)))


def preview(params: GasGiantParams) -> GasGiantParams:
    """``params`` reduced for a quick look (``PREVIEW_CAPS``: each capped, none raised; no equirectangular image
    stays none). Its texture is coarser and less swirled than the full bake's (fewer iterations)."""
    changes = {name: min(getattr(params, name), cap) for name, cap in PREVIEW_CAPS.items()}
    if params.equirect_width == 0:
        changes["equirect_width"] = 0
    return replace(params, **changes)


def preview_text(params: GasGiantParams) -> str:
    """What a preview bake reduced, for the output: "preview: 200,000 particles, 150 iterations, ..."."""
    return (f"preview: {params.particles:,} particles, {params.iterations} iterations, field {params.field_size}, "
            f"cube faces {params.cubemap_size}, equirect {params.equirect_width or 'none'}, {params.frames} frame(s); "
            f"the full bake is finer and more swirled")
