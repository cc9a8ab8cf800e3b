"""Every gas giant setting, written once: ``SETTINGS``.

Each ``Setting`` names a ``GasGiantParams`` field (``param``) and/or a property of the Blender settings group
``Scene.envfx.gasgiant`` (``ui``: the kind of property), with its default, its limits in the UI (``min`` ...
``soft_max``, ``step``, ``precision``, ``subtype``, enum ``items``), its tooltip, the range the core checks a float
against (``check``: the name its error message gives it, lowest, highest, extra advice) and its command-line option
(``cli``, ``cli_help``).

Made from it: the fields and defaults of ``GasGiantParams`` (params.py), ``FLOAT_RANGES``, the properties of
``EnvFXGasGiantSettings`` (props/gasgiant.py), ``params_from_settings`` (operators/gasgiant.py) and the command
line's options (``cli_options``, ``cli_changes``, ``cli_flag``). A new setting is one more entry here (and a line in
the panel).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FIELD_SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048)
CUBEMAP_SIZES = (64, 128, 256, 512, 1024, 2048, 4096)
EQUIRECT_WIDTHS = (0, 128, 256, 512, 1024, 2048, 4096, 8192)
MAX_PARTICLES = 200_000_000
# Frames of an animated bake: at most Blender's last frame (MAXFRAME). The planet plays the sequence as an image
# sequence, whose length (ImageUser.frame_duration) stops there, and a scene cannot show more frames: a longer bake
# would be cut without a word (and at 1 ms a frame would still take 12 days).
MAX_FRAMES = 1_048_574
# no setting needs a number this large; far above it the velocities overflow float32 and the particles get lost
MAX_MAGNITUDE = 1e6
# What a preview bake caps (a look in seconds: about 5 s on two busy cores): fewer particles and iterations, a
# coarser field, smaller images, one frame. Settings already below a cap stay.
PREVIEW_CAPS = {"particles": 100_000, "iterations": 100, "field_size": 64, "cubemap_size": 256,
                "equirect_width": 512, "frames": 1}


def symmetric_ramp(colors: Sequence[Sequence[float]]) -> tuple:
    """A latitude colour ramp from five colours (pole, high, middle, tropic, equator), mirrored at the equator."""
    pole, high, mid, tropic, equator = (tuple(float(x) for x in c[:3]) for c in colors)
    return ((0.0, pole), (0.12, high), (0.28, mid), (0.4, tropic), (0.5, equator), (0.6, tropic), (0.72, mid),
            (0.88, high), (1.0, pole))


DEFAULT_RAMP_COLORS = ((0.55, 0.50, 0.45), (0.80, 0.68, 0.52), (0.93, 0.88, 0.78), (0.72, 0.50, 0.34),
                       (0.96, 0.92, 0.84))
DEFAULT_RAMP = symmetric_ramp(DEFAULT_RAMP_COLORS)


@dataclass(frozen=True)
class Setting:
    name: str  # the GasGiantParams field and the Blender property of that name
    type: str  # the GasGiantParams annotation: "int", "float", "bool", "str", "tuple", ...
    default: Any  # its kind follows ``type`` (and ``ui``): a number, a flag, a name, a colour
    label: str = ""  # the property's name in the UI
    description: str = ""  # its tooltip
    param: bool = True  # a GasGiantParams field
    # the Blender property: "INT", "FLOAT", "BOOL", "ENUM", "SIZE" (an enum of the numbers in ``items``; "0" is
    # named ``none_label``), "COLOR" (three sRGB numbers), "STRING", "FILE_PATH", "DIR_PATH"; "" = none
    ui: str = ""
    min: float | None = None
    max: float | None = None
    soft_min: float | None = None
    soft_max: float | None = None
    step: int | None = None
    precision: int | None = None
    subtype: str = ""  # FACTOR, COLOR_GAMMA (DIR_PATH / FILE_PATH come from ``ui``)
    items: tuple = ()  # ENUM: (identifier, label, description); SIZE: the numbers
    none_label: str = ""
    check: tuple | None = None  # a float's range the core checks: (label, lowest, highest, extra advice)
    above: bool = False  # ... and it must be more than its lowest
    compare: bool = True  # False: left out of the dataclass's repr and ==  (arrays)
    cli: str | None = None  # the command-line option, without "--" (None: none)
    cli_help: str | None = None

    def from_ui(self, value: Any) -> Any:
        """The GasGiantParams value of this setting's Blender property value."""
        if self.ui == "SIZE":
            return int(value)
        if self.ui == "COLOR":
            return tuple(value)
        return value


_M = MAX_MAGNITUDE
SETTINGS = (
    Setting("preset", "str", "CUSTOM", "Preset", "Fill the look settings from a preset (they stay editable)",
            param=False, ui="ENUM",
            items=(("CUSTOM", "Custom", "Keep the current settings"),
                   ("JUPITER", "Jupiter-like", "Many narrow cream and rust bands, a few vortices"),
                   ("NEPTUNE", "Neptune-like", "Few broad blue bands, calm, one or two dark spots"),
                   ("STORMY", "Stormy", "Strong turbulence and many vortices"))),
    Setting("output_dir", "str", "//gasgiant/", "Output Folder", "Folder the textures are written to (cube faces, "
            "equirectangular image, flow map); '//' is the .blend file's folder", param=False, ui="DIR_PATH"),
    # simulation
    Setting("particles", "int", 8_000_000, "Particles", "How many particles paint the texture (more = smoother)",
            ui="INT", min=1, soft_max=20_000_000, cli="particles"),
    Setting("iterations", "int", 1000, "Iterations", "Simulation steps before the (first) image is saved", ui="INT",
            min=1, soft_max=5000, cli="iterations"),
    Setting("seed", "int", 0, "Seed", "Random seed of the noise, vortices and particles", ui="INT", min=0,
            cli="seed"),
    Setting("field_size", "int", 512, "Velocity Field", "Texels per cube face of the velocity field", ui="SIZE",
            items=FIELD_SIZES, cli="field", cli_help="velocity field texels per cube face side"),
    Setting("cubemap_size", "int", 1024, "Cube Face Size", "Pixels per side of each output cube face", ui="SIZE",
            items=CUBEMAP_SIZES, cli="cubemap", cli_help="pixels per cube face side"),
    Setting("equirect_width", "int", 2048, "Equirect Width", "Width of the equirectangular image (height is half); "
            "the planet object uses it. None writes only the cube faces", ui="SIZE", items=EQUIRECT_WIDTHS,
            none_label="None", cli="equirect", cli_help="equirectangular width (height is half; 0 = none)"),
    Setting("threads", "int", 2, "Threads", "CPU threads moving particles", ui="INT", min=1, max=64, cli="threads"),
    Setting("velocity_factor", "float", 1.0, "Velocity Factor", "How far particles travel: degrees of arc per 20 "
            "iterations at relative speed 1", ui="FLOAT", min=0.0, soft_max=10.0,
            check=("Velocity factor", 0.0, _M, ""), cli="velocity-factor"),
    # bands
    Setting("vertical_bands", "bool", False, "Vertical Bands", "Bands turn around the X axis instead of the pole "
            "axis Z (a planet lying on its side; the palette follows the bands)", ui="BOOL", cli="vertical-bands",
            cli_help="bands around the X axis instead of the pole axis (a planet on its side)"),
    Setting("bands", "float", 6.0, "Bands", "Number of counter-rotating bands", ui="FLOAT", min=0.0, soft_max=30.0,
            check=("Bands", 0.0, _M, ""), cli="bands"),
    Setting("band_speed", "float", 1.0, "Band Speed", "Speed of the bands relative to the turbulence", ui="FLOAT",
            soft_min=-10.0, soft_max=10.0,
            check=("Band speed", -_M, _M, " (negative turns the bands the other way)"), cli="band-speed"),
    Setting("band_power", "int", 1, "Band Speed Power", "Odd power of cos(bands * latitude): higher makes the fast "
            "parts narrow", ui="INT", min=1, max=9, step=2, cli="band-power"),
    Setting("pole_attenuation", "float", 0.5, "Pole Attenuation", "How much the bands slow toward the poles",
            ui="FLOAT", min=0.0, max=1.0, subtype="FACTOR", check=("Pole attenuation", 0.0, 1.0, ""),
            cli="pole-attenuation"),
    # noise
    Setting("noise_scale", "float", 2.6, "Noise Scale", "Size of the turbulence (higher = smaller swirls)",
            ui="FLOAT", min=0.01, soft_max=10.0, check=("Noise scale", 0.0, _M, ""), above=True, cli="noise-scale"),
    Setting("octaves", "int", 4, "Octaves", "Levels of fractal noise", ui="INT", min=1, max=12, cli="octaves"),
    Setting("falloff", "float", 0.5, "Falloff", "Weight of each further octave (fBm falloff)", ui="FLOAT", min=0.0,
            max=1.0, subtype="FACTOR", check=("Falloff", 0.0, 1.0, ""), cli="falloff"),
    Setting("gain", "float", 1.0, "Gain", "Octave k is weighted falloff^(k * gain)", ui="FLOAT", min=0.0,
            soft_max=4.0, check=("Gain", 0.0, _M, ""), cli="gain"),
    # the one setting the command line names otherwise: --turbulence, as the UI labels it
    Setting("noise_speed", "float", 1.0, "Turbulence", "Strength of the curl-noise turbulence", ui="FLOAT", min=0.0,
            soft_max=5.0, check=("Turbulence", 0.0, _M, ""), cli="turbulence"),
    Setting("w_offset", "float", 0.0, "W Offset", "Offset in the noise's 4th dimension (another pattern)", ui="FLOAT",
            check=("W offset", -_M, _M, ""), cli="w-offset"),
    Setting("time_step", "float", 0.05, "Time Step", "How far the noise moves per animation frame", ui="FLOAT",
            min=0.0, soft_max=1.0, check=("Time step", 0.0, _M, ""), cli="time-step", cli_help="noise time per frame"),
    # vortices
    Setting("vortices", "int", 0, "Vortices", "Artificial vortices placed between bands", ui="INT", min=0,
            soft_max=200, cli="vortices"),
    Setting("vortex_size", "float", 0.04, "Vortex Size", "Vortex radius as a fraction of the planet radius",
            ui="FLOAT", min=0.001, soft_max=0.5, check=("Vortex size", 0.0, _M, ""), above=True, cli="vortex-size"),
    Setting("vortex_size_variance", "float", 0.02, "Size Variance", "Random extra vortex radius", ui="FLOAT",
            min=0.0, soft_max=0.5, check=("Vortex size variance", 0.0, _M, ""), cli="vortex-size-variance"),
    Setting("vortex_strength", "float", 1.0, "Vortex Strength", "Peak vortex speed (relative)", ui="FLOAT", min=0.0,
            soft_max=10.0, check=("Vortex strength", 0.0, _M, ""), cli="vortex-strength"),
    Setting("vortex_band_threshold", "float", 0.2, "Band Threshold", "Vortices only where the band speed is at most "
            "this fraction of the fastest band speed (between the bands; 1 = anywhere)", ui="FLOAT", min=0.05,
            max=1.0, subtype="FACTOR", check=("Vortex band threshold", 0.05, 1.0, " (1 = anywhere)"),
            cli="vortex-band-threshold",
            cli_help="vortices only where the relative band speed is at most this (0.05..1)"),
    # colour
    Setting("color_source", "str", "RAMP", "Colours", "Where particle colours come from", param=False, ui="ENUM",
            items=(("RAMP", "Latitude Ramp", "Five colours from pole to equator, mirrored"),
                   ("PALETTE", "Palette Image", "Colours from an input image"),
                   ("CUBEMAP", "Cube Map", "Six cube-face images gasgiant_px.png ... gasgiant_nz.png in a folder "
                    "(e.g. an earlier bake, to carry on from it)"))),
    Setting("palette_cube_dir", "str", "", "Cube Map Folder", "Folder with the six cube-face images gasgiant_px.png, "
            "_nx, _py, _ny, _pz, _nz.png (one size, RGB or RGBA), or an earlier bake in an engine cube layout "
            "(gasgiant_posx.png ... with its gasgiant.json)", param=False, ui="DIR_PATH"),
    Setting("palette_path", "str", "", "Palette Image", "RGB or RGBA image the colours come from", param=False,
            ui="FILE_PATH"),
    # the palette image's colours, (h, w, 3 or 4) (read from ``palette_path``)
    Setting("palette", "np.ndarray | None", None, compare=False),
    # six cube-face images (FACES order, (6, h, w, 3)) colour the particles (gaseous-giganticus -k), e.g. an earlier
    # bake's faces to carry on from; takes precedence over ``palette`` (read from ``palette_cube_dir``)
    Setting("palette_cube", "np.ndarray | None", None, compare=False),
    Setting("mapping", "str", "SINUSOIDAL", "Mapping", "How the palette image is laid over the sphere", ui="ENUM",
            items=(("SINUSOIDAL", "Sinusoidal", "Sinusoidal projection, mirrored at the back"),
                   ("STRIPES", "Stripes", "The image's centre column: colour by latitude only"),
                   ("PLAIN", "Plain", "The whole image on each of the six cube faces (seams at the cube edges)")),
            cli="mapping"),
    *(Setting(f"ramp_color_{i + 1}", "tuple", DEFAULT_RAMP_COLORS[i], label, param=False, ui="COLOR", min=0.0,
              max=1.0, subtype="COLOR_GAMMA")
      for i, label in enumerate(("Pole", "High Latitude", "Mid Latitude", "Tropics", "Equator"))),
    # the latitude colour ramp: ((position, colour), ...) (``symmetric_ramp`` of ramp_color_1 ... 5)
    Setting("ramp", "tuple", DEFAULT_RAMP),
    Setting("opacity", "float", 0.2, "Opacity", "How strongly a particle paints its colour each step", ui="FLOAT",
            min=0.001, max=1.0, subtype="FACTOR", check=("Opacity", 0.0, 1.0, ""), above=True, cli="opacity"),
    # > opacity: start there and shrink by 5% per iteration to ``opacity`` (gaseous-giganticus -O)
    Setting("opacity_start", "float", 0.0, "Start Opacity", "Start the particles' opacity this high and shrink it by "
            "5% per iteration down to Opacity (a strong first coat; 0 = off)", ui="FLOAT", min=0.0, max=1.0,
            subtype="FACTOR", check=("Start opacity", 0.0, 1.0, " (0 = off)"), cli="opacity-start"),
    Setting("lifetime", "int", 0, "Lifetime", "Iterations a particle lives before it respawns (0 = for ever)",
            ui="INT", min=0, soft_max=2000, cli="lifetime"),
    Setting("respawn_batches", "int", 8, "Respawn Batches", "Particles respawn in this many staggered batches, not "
            "all at once", ui="INT", min=1, max=256, cli="respawn-batches"),
    Setting("fade_in", "float", 0.2, "Fade In", "Part of the lifetime over which a particle fades in", ui="FLOAT",
            min=0.0, max=1.0, subtype="FACTOR", check=("Fade in", 0.0, 1.0, "")),
    Setting("fade_out", "float", 0.2, "Fade Out", "Part of the lifetime over which a particle fades out", ui="FLOAT",
            min=0.0, max=1.0, subtype="FACTOR", check=("Fade out", 0.0, 1.0, "")),
    Setting("blur_interval", "int", 20, "Blur Interval", "Iterations between blur and fade passes (0 = never)",
            ui="INT", min=0, soft_max=200, cli="blur-interval"),
    Setting("blur", "float", 0.5, "Blur", "Strength of each blur pass", ui="FLOAT", min=0.0, max=1.0,
            subtype="FACTOR", check=("Blur", 0.0, 1.0, ""), cli="blur"),
    Setting("fade_rate", "float", 0.01, "Fade", "How far each pass fades the texture back to the centre colour",
            ui="FLOAT", min=0.0, max=1.0, subtype="FACTOR", check=("Fade rate", 0.0, 1.0, ""), cli="fade-rate"),
    Setting("fade_to_palette", "bool", False, "Fade to Start Colours", "Fade each texel toward its starting colour "
            "instead of the mean colour", ui="BOOL"),
    Setting("hot_pink", "bool", False, "Hot Pink", "Fade toward hot pink instead: texels no particle reaches turn "
            "pink, which shows divergences in the flow (a diagnostic)", ui="BOOL", cli="hot-pink",
            cli_help="fade to hot pink: texels no particle reaches show up (divergences)"),
    # cloud mode (gaseous-giganticus -C): particles paint their brightness as the alpha of a white cloud layer
    Setting("cloud_mode", "bool", False, "Cloud Mode", "Paint a cloud layer instead: the cloud colour with the "
            "particles' brightness (broken up by noise) as alpha over transparency; the images get an alpha channel",
            ui="BOOL", cli="cloud-mode", cli_help="paint a cloud layer: white (--cloud-color) with alpha, over "
            "transparency"),
    Setting("cloud_color", "tuple", (1.0, 1.0, 1.0), "Cloud Colour", "Colour of the clouds in cloud mode", ui="COLOR",
            min=0.0, max=1.0, subtype="COLOR_GAMMA", cli="cloud-color",
            cli_help="cloud colour, sRGB 0..1 (as the colour picker shows it and the PNG stores it)"),
    Setting("cloud_noise", "float", 1.0, "Cloud Noise", "How much a fixed fractal noise breaks the cloud alpha into "
            "patches", ui="FLOAT", min=0.0, max=1.0, subtype="FACTOR", check=("Cloud noise", 0.0, 1.0, ""),
            cli="cloud-noise", cli_help="0..1: how much noise breaks the cloud alpha into patches"),
    # files
    Setting("file_format", "str", "PNG", "File Format", "Image files to write", ui="ENUM",
            items=(("PNG", "PNG", "8-bit PNG"),
                   ("EXR", "OpenEXR", "32-bit float EXR, linear colour (the flow map as real velocities in radians "
                    "per frame)"),
                   ("PNG_EXR", "PNG + OpenEXR", "Both")),
            cli="format", cli_help="image files (EXR: 32-bit float, linear)"),
    Setting("cube_layout", "str", "BLENDER", "Cube Layout", "How the six cube faces are written (gasgiant.json "
            "records each face's axes)", ui="ENUM",
            items=(("BLENDER", "Blender", "gasgiant_px ... _nz: Blender's +X ... -Z seen from outside, +Z up on the "
                    "side faces"),
                   ("GLTF", "Engine (glTF, Godot, OpenGL)", "gasgiant_posx ... _negz: standard cube-map faces +X, -X, "
                    "+Y, -Y, +Z, -Z in a right-handed Y-up engine (engine = (x, z, -y)), ready for a cube sampler"),
                   ("UNITY", "Engine (Unity)", "gasgiant_posx ... _negz: standard cube-map faces in Unity's "
                    "left-handed Y-up space (engine = (-x, z, -y), as Unity imports Blender files)")),
            cli="cube-layout", cli_help="cube faces: blender (gasgiant_px..nz, Blender axes, seen from outside; "
            "default), gltf (gasgiant_posx..negz: standard cube-map faces, right-handed Y-up: Godot, OpenGL, glTF) "
            "or unity (the same in Unity's left-handed Y-up space)"),
    # radians per frame (``frame_iterations`` iterations) that the 8-bit flow map's 0 and 1 stand for; 0 = automatic
    # from the settings (``flow_scale``): one fixed scale for every frame, written to gasgiant.json
    Setting("flow_scale", "float", 0.0, "Flow Scale", "Speed in radians per frame that the 8-bit flow map's 0 and 1 "
            "stand for (0.5 = still; faster texels clamp), the same for every frame and written to gasgiant.json. "
            "0 = automatic from the flow settings", ui="FLOAT", min=0.0, soft_max=0.5, precision=5,
            check=("Flow scale", 0.0, _M, " radians per frame (0 = automatic)"), cli="flow-scale",
            cli_help="radians per frame that the 8-bit flow map's 0 and 1 stand for (default 0: automatic)"),
    # .npz paths: save the velocity field(s) this bake builds or loads / use the ones saved by an earlier bake
    # instead of building them (from ``save_field_path`` / ``load_field_path``)
    Setting("save_field", "str", "", cli="save-field", cli_help="also save the velocity field(s) to this .npz file"),
    Setting("load_field", "str", "", cli="load-field",
            cli_help="load the velocity field(s) from a .npz file saved by --save-field"),
    Setting("save_field_path", "str", "", "Save Velocity Field", "Also save the velocity field(s) to this .npz file, "
            "so later bakes can load them instead of building them (empty: do not save)", param=False,
            ui="FILE_PATH"),
    Setting("load_field_path", "str", "", "Load Velocity Field", "Use the velocity field(s) saved by an earlier bake "
            "with the same flow settings instead of building them (empty: build)", param=False, ui="FILE_PATH"),
    # animation
    Setting("frames", "int", 1, "Frames", f"Images in the sequence (1 = a still). At most {MAX_FRAMES:,}, Blender's "
            "last frame: the planet plays the frames as an image sequence, which cannot be longer", ui="INT", min=1,
            max=MAX_FRAMES, soft_max=500, cli="frames", cli_help="images in the sequence (1 = a still)"),
    Setting("frame_iterations", "int", 20, "Iterations per Frame", "Simulation steps between frames", ui="INT",
            min=1, soft_max=500, cli="frame-iterations", cli_help="iterations between frames"),
    # frames between full velocity-field builds; the frames between interpolate in time
    Setting("field_interval", "int", 4, "Field Interval", "Frames between full velocity-field builds; the frames "
            "between mix the two nearest fields (1 = build every frame)", ui="INT", min=1, soft_max=50,
            cli="field-interval", cli_help="frames between velocity-field builds (animations)"),
    # a quick look: the bake with the settings capped (params.PREVIEW_CAPS: particles, iterations, sizes, one frame)
    Setting("preview", "bool", False, "Preview", f"Bake a quick look in seconds: at most "
            f"{PREVIEW_CAPS['particles']:,} particles, {PREVIEW_CAPS['iterations']} iterations, a "
            f"{PREVIEW_CAPS['field_size']} velocity field, {PREVIEW_CAPS['cubemap_size']} cube faces, a "
            f"{PREVIEW_CAPS['equirect_width']} equirectangular image and one frame (coarser and less swirled than the "
            f"full bake)", param=False, ui="BOOL"),
    # the planet
    Setting("make_planet", "bool", True, "Make Planet", "Add (or update) a planet sphere wearing the result",
            param=False, ui="BOOL"),
    Setting("planet_name", "str", "Gas Giant", "Planet Object", "Name of the planet object to add or update",
            param=False, ui="STRING"),
)
BY_NAME = {s.name: s for s in SETTINGS}
PARAM_SETTINGS = tuple(s for s in SETTINGS if s.param)
UI_SETTINGS = tuple(s for s in SETTINGS if s.ui)


def _identifiers(name: str) -> tuple:
    return tuple(item[0] for item in BY_NAME[name].items)


MAPPINGS = _identifiers("mapping")
FILE_FORMATS = _identifiers("file_format")
CUBE_LAYOUTS = _identifiers("cube_layout")  # see layouts.py
FLOAT_RANGES = {s.name: s.check for s in SETTINGS if s.check}
ABOVE_LOWEST = tuple(s.name for s in SETTINGS if s.above)


# --- the command line ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CliOption:
    """One command-line option of a setting: ``parser.add_argument(option.flag, **option.kwargs)``."""

    flag: str  # "--turbulence"
    dest: str  # the argparse attribute: "turbulence"
    field: str  # the GasGiantParams field: "noise_speed"
    kwargs: dict

    def param_value(self, value: Any) -> Any:
        """The GasGiantParams value of the parsed ``value``; None when the option was not given."""
        setting = BY_NAME[self.field]
        if value is None or (setting.type == "str" and not value):
            return None
        if setting.ui == "ENUM":
            return value.upper()
        if setting.ui == "COLOR":
            return tuple(value)
        if setting.name in ("save_field", "load_field"):
            return os.path.abspath(value)
        return value


def _cli_kwargs(s: Setting) -> dict:
    kwargs: dict[str, Any]
    if s.type == "bool":
        kwargs = dict(action="store_true", default=None)
    elif s.ui == "ENUM":
        kwargs = dict(choices=[item[0].lower() for item in s.items])
    elif s.ui == "COLOR":
        kwargs = dict(type=float, nargs=3, metavar=("R", "G", "B"))
    elif s.type in ("int", "float"):
        kwargs = dict(type=int if s.type == "int" else float)
    else:
        kwargs = {}
    text = s.cli_help if s.cli_help is not None else s.description[:1].lower() + s.description[1:]
    if "default" not in text:
        text += f" (default: {default_text(s)})"
    kwargs["help"] = text.replace("%", "%%")  # argparse formats help with %
    return kwargs


def default_text(s: Setting) -> str:
    """A setting's default as the command line is given it: "8000000", "off", "sinusoidal", "1 1 1", "none"."""
    if s.type == "bool":
        return "on" if s.default else "off"
    if s.ui == "ENUM":
        return s.default.lower()
    if s.ui == "COLOR":
        return " ".join(f"{x:g}" for x in s.default)
    if s.type == "float":
        return f"{s.default:g}"
    return str(s.default) if s.default not in ("", None) else "none"


def cli_options() -> list:
    """The ``CliOption`` of every setting the command line sets, in the table's order."""
    return [CliOption(f"--{s.cli}", s.cli.replace("-", "_"), s.name, _cli_kwargs(s)) for s in SETTINGS if s.cli]


def cli_changes(args: argparse.Namespace) -> dict:
    """{GasGiantParams field: value} of the options given on the command line (``args``: argparse's namespace)."""
    changes = {}
    for option in cli_options():
        value = option.param_value(getattr(args, option.dest))
        if value is not None:
            changes[option.field] = value
    return changes


def cli_flag(field: str | None) -> str | None:
    """The option that sets GasGiantParams field ``field`` ("--turbulence" for noise_speed), None if none does."""
    s = BY_NAME.get(field) if field is not None else None
    return f"--{s.cli}" if s is not None and s.cli else None
