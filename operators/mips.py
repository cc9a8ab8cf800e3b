"""Alpha-coverage mip chain operators: gather images, read their pixels through bpy, call core.mips, write files.

Scripts call ``gather_inputs`` / ``inputs_from_paths`` and ``bake_mips`` (or ``bake_mips_job`` for progress);
the operator and the CLI do exactly that.
"""

from __future__ import annotations

import dataclasses
import os
import re
import unicodedata
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import bpy
import numpy as np
import numpy.typing as npt
from bpy.props import StringProperty

from .. import bridge, progress
from ..core import jobs
from ..core import exr as core_exr
from ..core import mips as core_mips
from .common import NeedsScene, colour_space, colour_space_name, exr_damage, output_folder, set_colour_space

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

IMAGE_EXTENSIONS = (".png", ".tga", ".tif", ".tiff", ".jpg", ".jpeg", ".bmp", ".exr", ".webp", ".hdr")
COLOUR_MODES = ("AUTO", "SRGB", "LINEAR")
DEFAULT_SETTINGS = core_mips.MipSettings()
NO_INPUT_FOLDER = "No input folder: set the Input Folder in the EnvFX mips panel"


class MipsInputError(ValueError):
    """Nothing could be baked; nothing was written and the file is unchanged."""


@dataclass
class MipsInput:
    """One image to bake: an image datablock (by name, never the object) or a file loaded only while reading."""
    stem: str
    label: str
    image_name: str = ""
    path: str = ""


@dataclass
class MipsResult:
    files: list[str] = field(default_factory=list)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)   # stem -> core_mips.report_dict(...)
    warnings: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)   # paths of an earlier run's files this run replaced


# pixels as core.mips takes them: (H, W, C) bytes of an 8-bit image, or float32 0..1 of a float one
Pixels = npt.NDArray[np.uint8] | npt.NDArray[np.float32]
# the job generator of a bake: yields progress fractions, returns the MipsResult
MipsJob = Generator[float, None, MipsResult]


# --- settings ---------------------------------------------------------------------------------------------

def settings_from_scene(scene: bpy.types.Scene) -> tuple[core_mips.MipSettings, tuple[str, ...], bool, str, str]:
    """(MipSettings, formats, compare, colour mode, output folder) from ``scene.envfx.mips``."""
    s = bridge.envfx_settings(scene).mips
    formats = tuple(sorted(f.lower() for f in s.formats))
    settings = core_mips.MipSettings(ref=round(float(s.ref), 6), alpha_channel=s.alpha_channel,
                                     preserve=s.preserve, supersample=int(s.supersample),
                                     max_memory_gb=float(s.max_memory_gb),
                                     dds=s.dds if "dds" in formats else "RGBA8")
    return settings, formats, s.compare, s.colour, s.output_dir


def resolve_output_dir(path: str) -> str:
    return output_folder(path, "Output folder", "No output folder: set the Output Folder in the EnvFX mips panel",
                         MipsInputError)


# --- gathering inputs -------------------------------------------------------------------------------------

def _stem(name: str) -> str:
    copy = re.fullmatch(r"(.+)\.(\d{3,})", name)  # Blender's name for a second image of one file: leaf.png.001
    if copy is not None and os.path.splitext(copy.group(1))[1].lower() in IMAGE_EXTENSIONS:
        root, ext = os.path.splitext(copy.group(1))
        name = f"{root}_{copy.group(2)}{ext}"
    root, ext = os.path.splitext(name)
    base = name
    if ext.lower() in IMAGE_EXTENSIONS:
        base = root
    # letters, digits and their marks of any script are kept (leaf, léaf, 葉, नमस्ते), composed (NFC: a name handed
    # over decomposed, as macOS file systems do, gives the same output name); spaces and punctuation become _
    base = unicodedata.normalize("NFC", base)
    base = "".join(c if c in "._-" or unicodedata.category(c)[0] in "LNM" else " " for c in base)
    base = re.sub(r" +", "_", base).strip("._") or "image"
    return base


def _own_name(inp: MipsInput) -> bool:
    """Whether ``inp``'s output name is its file's (or image's) own name, not one made from it (``my leaf.png``
    becomes ``my_leaf``)."""
    name = os.path.basename(inp.path) if inp.path else inp.image_name
    root, ext = os.path.splitext(name)
    return unicodedata.normalize("NFC", root if ext.lower() in IMAGE_EXTENSIONS else name) == inp.stem


def _unique(inputs: list[MipsInput]) -> list[MipsInput]:
    """Give every input its own output name (case ignored, as on Windows and macOS), deterministically: inputs in
    their order, the inputs whose name is their own (``my_leaf.png``) before those whose name was made from theirs
    (``my leaf.png``); the first with a name keeps it, each later one becomes ``<name>_N`` with the lowest N >= 2
    that is no input's own name and not yet given. So a.png a.tga a_2.png a_2.tga are named a, a_3, a_2, a_2_2,
    and "my leaf.png" my_leaf.png my_leaf_2 and my_leaf."""
    own = {inp.stem.lower() for inp in inputs}
    given = set()
    for inp in sorted(inputs, key=lambda i: not _own_name(i)):  # stable: input order within each kind
        if inp.stem.lower() in given:
            n = 2
            while f"{inp.stem}_{n}".lower() in own or f"{inp.stem}_{n}".lower() in given:
                n += 1
            inp.stem = f"{inp.stem}_{n}"
        given.add(inp.stem.lower())
    return inputs


def check_names(inputs: Iterable[MipsInput]) -> None:
    """Refuse two inputs that would write the same files (names that differ only in case count as the same)."""
    by_name: dict[str, list[MipsInput]] = {}
    for inp in inputs:
        by_name.setdefault(inp.stem.lower(), []).append(inp)
    for same in by_name.values():
        if len(same) > 1:
            raise MipsInputError(f"Inputs {' and '.join(repr(i.label) for i in same)} would be written under the "
                                 f"same name {same[0].stem!r}: rename one of them")


def input_from_image(image: bpy.types.Image) -> MipsInput:
    return MipsInput(stem=_stem(image.name), label=image.filepath or f"<{image.name}>", image_name=image.name)


def material_images(objects: Iterable[bpy.types.Object]) -> list[bpy.types.Image]:
    """Images of the image-texture nodes in the materials of ``objects`` (nested groups included), in order."""
    found: list[bpy.types.Image] = []

    def walk(tree: bpy.types.NodeTree | None, seen_trees: set[str]) -> None:
        if tree is None or tree.name in seen_trees:
            return
        seen_trees.add(tree.name)
        for node in tree.nodes:
            if isinstance(node, bpy.types.ShaderNodeTexImage):
                if node.image is not None and node.image not in found:
                    found.append(node.image)
            elif isinstance(node, bpy.types.ShaderNodeGroup):
                walk(node.node_tree, seen_trees)

    for obj in objects:
        for slot in getattr(obj, "material_slots", []):
            mat = slot.material
            if mat is not None and mat.node_tree is not None:
                walk(mat.node_tree, set())
    return found


# what a bake writes next to its <stem>_mips.json: level PNGs and the comparison picture
_OUTPUT_PNG = re.compile(r"^(.*)_(?:mip\d{2,}|compare)\.png$", re.IGNORECASE)


def is_own_output(folder: str, name: str) -> bool:
    """``name`` in ``folder`` is a file EnvFX wrote: ``<stem>_mipNN.png`` or ``<stem>_compare.png`` beside that
    stem's ``<stem>_mips.json`` report (a user's own ``rock_compare.png`` without one is an input like any other)."""
    m = _OUTPUT_PNG.match(name)
    return bool(m) and os.path.isfile(os.path.join(folder, f"{m.group(1)}_mips.json"))


def folder_files(folder: str) -> list[str]:
    """The image files of ``folder``, without the mip chains and comparison pictures EnvFX wrote there (an
    output folder that is also the input folder does not feed a run its own outputs)."""
    if not folder:
        raise MipsInputError(NO_INPUT_FOLDER)
    path = bpy.path.abspath(folder)
    if not os.path.isdir(path):
        raise MipsInputError(f"Input folder {path!r} does not exist: choose an existing folder")
    images = sorted(f for f in os.listdir(path)
                    if f.lower().endswith(IMAGE_EXTENSIONS) and os.path.isfile(os.path.join(path, f)))
    files = [os.path.join(path, f) for f in images if not is_own_output(path, f)]
    if not files:
        own = f" (only {len(images)} EnvFX mip output(s))" if images else ""
        raise MipsInputError(f"Input folder {path!r} has no image files{own} ({', '.join(IMAGE_EXTENSIONS)})")
    return files


def inputs_from_paths(paths: Iterable[str]) -> list[MipsInput]:
    """Image files, or folders of image files, as inputs (CLI, scripts)."""
    inputs = []
    for p in paths:
        if not p.strip():  # (an empty variable) not the current folder, whose every image would be baked
            raise MipsInputError("An input path is empty: pass image files or folders")
        p = os.path.abspath(bpy.path.abspath(p))
        if os.path.isdir(p):
            inputs.extend(MipsInput(stem=_stem(os.path.basename(f)), label=f, path=f) for f in folder_files(p))
        elif os.path.isfile(p):
            inputs.append(MipsInput(stem=_stem(os.path.basename(p)), label=p, path=p))
        else:
            raise MipsInputError(f"No such file or folder {p!r}: check the path")
    if not inputs:
        raise MipsInputError("No images given: pass image files or folders")
    return _unique(inputs)


def gather_inputs(context: bpy.types.Context, source: str = "", image_name: str = "") -> list[MipsInput]:
    """The images the operator acts on: an image by name, else the scene setting's source."""
    s = bridge.envfx_settings(bridge.context_scene(context)).mips
    if image_name:
        image = bpy.data.images.get(image_name)
        if image is None:
            raise MipsInputError(f"No image named {image_name!r} in this file")
        return [input_from_image(image)]
    source = source or s.source
    if source == "ACTIVE":
        image = getattr(context, "edit_image", None) or s.image
        if image is None:
            raise MipsInputError("No active image: open one in the Image Editor or pick an Image in the EnvFX mips "
                                 "panel")
        return [input_from_image(image)]
    if source == "SELECTED":
        objects = list(getattr(context, "selected_objects", None) or [])
        if not objects:
            raise MipsInputError("Nothing selected: select the objects whose material images should get mip chains")
        images = material_images(objects)
        if not images:
            raise MipsInputError("The selected objects' materials use no image textures: add an Image Texture node "
                                 "or choose another source")
        return _unique([input_from_image(im) for im in images])
    if source == "FOLDER":
        if not s.folder:
            raise MipsInputError(NO_INPUT_FOLDER)
        return inputs_from_paths([s.folder])
    raise MipsInputError(f"Unknown source {source!r}: use ACTIVE, SELECTED or FOLDER")


def png_size(path: str) -> tuple[int, int] | None:
    """(width, height) from a PNG file's header without loading it, or None for other files."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(24)
    except OSError:
        return None
    if len(head) == 24 and head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return None


def check_input(inp: MipsInput, settings: core_mips.MipSettings) -> None:
    """Everything that can be checked without reading pixels: the image exists, is a still image, its file is
    there, and its chain fits the memory limit."""
    if inp.path:
        if not os.path.isfile(inp.path):
            raise MipsInputError(f"Image file {inp.path!r} is missing: check the path")
        if not os.access(inp.path, os.R_OK):
            raise MipsInputError(f"Image file {inp.path!r} cannot be read (permissions)")
        _check_exr(inp.path, f"Image file {inp.path!r}")
        size = png_size(inp.path)
        if size is not None:  # other formats are checked once loaded, before their pixels are read
            try:
                core_mips.check_size(size[1], size[0], settings)
            except core_mips.MipsError as exc:
                raise MipsInputError(f"{os.path.basename(inp.path)}: {exc}") from None
        return
    image = bpy.data.images.get(inp.image_name)
    if image is None:
        raise MipsInputError(f"Image {inp.image_name!r} no longer exists")
    if image.source not in {"FILE", "GENERATED"}:
        raise MipsInputError(f"Image {image.name!r} is a {image.source.lower()} image: only still images (files, "
                             "packed or generated) get mip chains")
    if image.source == "FILE" and image.packed_file is None:
        path = bpy.path.abspath(image.filepath, library=image.library)
        if not os.path.isfile(path):
            raise MipsInputError(f"Image {image.name!r}: its file {path!r} is missing; relink or pack it")
        _check_exr(path, f"Image {image.name!r}: its file {path!r}")
    _check_image_size(image, settings)


def _check_exr(path: str, what: str) -> None:
    """An OpenEXR file that is not whole is refused before Blender reads it (Blender 4.2's reader loops for ever on
    one cut short in its header)."""
    why = exr_damage(path)
    if why is not None:
        raise MipsInputError(f"{what} is damaged: {why}. Replace it with a whole copy")


def _check_image_size(image: bpy.types.Image, settings: core_mips.MipSettings) -> None:
    """An image Blender could not read has size 0 x 0; a size the settings refuse says why."""
    w, h = image.size
    if w == 0 or h == 0:
        layers = core_exr.layers_text(bpy.path.abspath(image.filepath, library=image.library)) \
            if image.source == "FILE" and image.packed_file is None else None
        why = layers or "not an image, or damaged: fix or replace it"
        raise MipsInputError(f"Image {image.name!r} cannot be read ({why})")
    try:
        core_mips.check_size(h, w, settings)
    except core_mips.MipsError as exc:
        raise MipsInputError(f"Image {image.name!r}: {exc}") from None


# --- reading pixels ---------------------------------------------------------------------------------------

def _foreach_pixels(image: bpy.types.Image) -> npt.NDArray[np.float32]:
    """(H, W, 4) top row first (Blender stores the bottom row first); fewer stored channels are widened (grey to
    RGB, alpha 1)."""
    px = bridge.image_pixels(image)[::-1]
    if px.shape[2] < 4:
        rgb = px[..., :3] if px.shape[2] >= 3 else np.repeat(px[..., :1], 3, axis=2)
        px = np.concatenate([rgb, np.ones(px.shape[:2] + (1,), np.float32)], axis=2)
    return px


def read_image(image: bpy.types.Image, colour: str = "AUTO", settings: core_mips.MipSettings = DEFAULT_SETTINGS,
               premultiplied: bool | None = None) -> tuple[Pixels, bool, list[str]]:
    """Pixels of a Blender image for core.mips: (array (H, W, C) top row first, srgb flag, warnings).

    8-bit images give their bytes (``image.pixels`` of a byte image is the stored value / 255, straight alpha).
    Float images (16-bit PNG, EXR, float generated) hold scene-linear colour, premultiplied unless the alpha mode
    is Channel Packed or None; ``premultiplied`` overrides that guess (EXR files hold premultiplied colour even
    when read Channel Packed). Colour is re-encoded to sRGB so core.mips filters it in linear light and writes
    8-bit sRGB. Alpha: 8-bit images with 4 stored channels (RGBA, grey+alpha, palette with transparency),
    float images with 4."""
    _check_image_size(image, settings)
    warnings = []
    px = _foreach_pixels(image)
    has_alpha = image.depth in ((64, 128) if image.is_float else (32,)) and image.alpha_mode != "NONE"
    is_data = colour_space(image).is_data
    if not image.is_float:
        arr = np.floor(px * 255.0 + 0.5).astype(np.uint8)
        srgb = {"AUTO": colour_space_name(image) == "sRGB", "SRGB": True, "LINEAR": False}[colour]
    else:
        warnings.append(f"{image.name}: float or 16-bit image, its chain is written with 8 bits per channel")
        arr = np.ascontiguousarray(px)
        if premultiplied is None:
            premultiplied = image.alpha_mode not in {"CHANNEL_PACKED", "NONE"}
        if premultiplied and has_alpha:
            a = arr[..., 3:4]
            arr[..., :3] = np.where(a > 0, arr[..., :3] / np.maximum(a, 1e-8), 0.0)
        srgb = (colour == "SRGB") or (colour == "AUTO" and not is_data)
        if srgb:
            arr[..., :3] = core_mips.linear_to_srgb(arr[..., :3])
        arr = np.clip(arr, 0.0, 1.0)
    if not has_alpha:
        arr = arr[..., :3]
    return arr, srgb, warnings


def _premultiplied_file(path: str) -> bool:
    """OpenEXR stores premultiplied colour; PNG, TIFF and TGA store straight colour."""
    return os.path.splitext(path)[1].lower() == ".exr"


def read_input(inp: MipsInput, colour: str, settings: core_mips.MipSettings) -> tuple[Pixels, bool, list[str]]:
    """Read one input; files and unpacked float images are loaded into a temporary datablock (alpha mode
    Channel Packed, so colour is not premultiplied) that is removed again."""
    if inp.path:
        try:
            temp = bpy.data.images.load(inp.path, check_existing=False)
        except RuntimeError:
            raise MipsInputError(f"Image file {inp.path!r} cannot be read (not an image, or damaged)") from None
        try:
            temp.alpha_mode = "CHANNEL_PACKED"
            return read_image(temp, colour, settings, premultiplied=_premultiplied_file(inp.path))
        finally:
            bpy.data.images.remove(temp)
    image = bpy.data.images.get(inp.image_name)
    if image is None:
        raise MipsInputError(f"Image {inp.image_name!r} no longer exists")
    if image.is_float and image.source == "FILE" and image.packed_file is None and not image.is_dirty \
            and image.alpha_mode not in {"CHANNEL_PACKED", "NONE"}:  # unsaved paint is read from memory
        path = bpy.path.abspath(image.filepath, library=image.library)
        temp = bpy.data.images.load(path, check_existing=False)
        try:
            temp.alpha_mode = "CHANNEL_PACKED"
            set_colour_space(temp, colour_space_name(image))
            arr, srgb, warnings = read_image(temp, colour, settings, premultiplied=_premultiplied_file(path))
            return arr, srgb, [w.replace(temp.name, image.name) for w in warnings]
        finally:
            bpy.data.images.remove(temp)
    return read_image(image, colour, settings)


# --- baking -----------------------------------------------------------------------------------------------

def validate(inputs: Sequence[MipsInput], out_dir: str, settings: core_mips.MipSettings, formats: str | Iterable[str],
             colour: str = "AUTO") -> tuple[core_mips.MipSettings, tuple[str, ...]]:
    """Check everything before any work; returns (settings, formats)."""
    try:
        formats = core_mips.parse_formats(formats)
        if "dds" not in formats:  # (no DDS: its compression does not matter, nor the sizes it needs)
            settings = dataclasses.replace(settings, dds="RGBA8")
        settings = settings.validate()
        core_mips.check_output_dir(out_dir)
    except core_mips.MipsError as exc:
        raise MipsInputError(str(exc)) from None
    if colour not in COLOUR_MODES:
        raise MipsInputError(f"Unknown colour mode {colour!r}: use one of {', '.join(COLOUR_MODES)}")
    if not inputs:
        raise MipsInputError("No images to bake")
    check_names(inputs)
    for inp in inputs:
        check_input(inp, settings)
    check_foreign_outputs(inputs, out_dir)
    return settings, formats


def check_foreign_outputs(inputs: Iterable[MipsInput], out_dir: str) -> None:
    """Refuse a bake that would write over files no EnvFX mips run wrote (``core_mips.foreign_outputs``), such as
    the user's own ``rock_compare.png`` in an output folder that is also the input folder. Being an input of the
    same run does not make such a file ours: ``rock_compare.png`` is baked as its own image and also named like
    ``rock``'s comparison picture, and a bake would replace it with that picture."""
    foreign = [os.path.join(out_dir, n) for inp in inputs for n in core_mips.foreign_outputs(out_dir, inp.stem)]
    if foreign:
        shown = ", ".join(os.path.basename(p) for p in foreign[:6]) + (" ..." if len(foreign) > 6 else "")
        raise MipsInputError(f"The bake would write over {len(foreign)} file(s) in {out_dir!r} that no EnvFX mips run "
                             f"wrote ({shown}; no report of theirs lists them): move them, or choose another output "
                             f"folder")


def bake_mips_job(inputs: Iterable[MipsInput], out_dir: str, settings: core_mips.MipSettings = DEFAULT_SETTINGS,
                  formats: str | Iterable[str] = core_mips.FORMATS, compare: bool = True,
                  colour: str = "AUTO") -> MipsJob:
    """Validate (raises MipsInputError at once), then return a job generator that bakes every input into
    ``out_dir`` and returns a MipsResult. Nothing appears in ``out_dir`` unless every image succeeded."""
    inputs = _unique([dataclasses.replace(i) for i in inputs])
    settings, formats = validate(inputs, out_dir, settings, formats, colour)
    return _bake(inputs, out_dir, settings, formats, compare, colour)


def _input_file(inp: MipsInput) -> str:
    """The file an input is read from ('' for a packed or generated image)."""
    if inp.path:
        return inp.path
    image = bpy.data.images.get(inp.image_name)
    if image is None or image.source != "FILE" or image.packed_file is not None:
        return ""
    return bpy.path.abspath(image.filepath, library=image.library)


def _bake(inputs: list[MipsInput], out_dir: str, settings: core_mips.MipSettings, formats: tuple[str, ...],
          compare: bool, colour: str) -> MipsJob:
    result = MipsResult()
    n = len(inputs)
    keep = [f for f in map(_input_file, inputs) if f]  # an earlier run's level given as an input stays
    with core_mips.StagedOutput(out_dir, formats, compare, keep=keep) as staged:
        for i, inp in enumerate(inputs):
            arr, srgb, warnings = read_input(inp, colour, settings)
            job = core_mips.build_chain_job(arr, dataclasses.replace(settings, srgb=srgb))
            del arr
            # the bar split between the chain's build and its files' writing by their estimated times
            build = 1.0 / (1.0 + core_mips.write_cost(settings.dds, formats, compare))
            chain = yield from jobs.within(job, i / n, build / n)
            chain.warnings = warnings + [f"{inp.stem}: {w}" for w in chain.warnings]
            yield from jobs.within(staged.add_job(inp.stem, inp.label, chain), (i + build) / n, (1.0 - build) / n)
            result.reports[inp.stem] = staged.reports[inp.stem]
            result.warnings.extend(chain.warnings)
            del chain
            yield (i + 1.0) / n
        result.files = staged.commit()
    result.removed = staged.removed
    result.warnings.extend(f"could not remove {p}, which an earlier run wrote: remove it by hand"
                           for p in staged.not_removed)
    return result


def removed_text(result: MipsResult) -> str:
    """'' or what a run removed, for its report line."""
    if not result.removed:
        return ""
    return (f"removed {len(result.removed)} file(s) an earlier run wrote and this one does not: "
            + ", ".join(os.path.basename(p) for p in result.removed))


def bake_mips(inputs: Iterable[MipsInput], out_dir: str, settings: core_mips.MipSettings = DEFAULT_SETTINGS,
              formats: str | Iterable[str] = core_mips.FORMATS, compare: bool = True,
              colour: str = "AUTO") -> MipsResult:
    """Bake and return the MipsResult (progress lines in background mode)."""
    return progress.run(bake_mips_job(inputs, out_dir, settings, formats, compare, colour), "Mips")


# --- operator ---------------------------------------------------------------------------------------------

class ENVFX_OT_mips_bake(NeedsScene, progress.ModalJobOperator, bpy.types.Operator):
    """Write alpha-coverage preserving mip chains (DDS, PNG levels, report, comparison) for the chosen images"""

    bl_idname = "envfx.mips_bake"
    bl_label = "Bake Mip Chains"
    bl_options = {"REGISTER", "UNDO"}

    job_label = "Mips"

    image: StringProperty(
        name="Image",
        description="Bake this image (by name) instead of the panel's source",
        default="",
    )


    def make_job(self, context: bpy.types.Context) -> MipsJob | None:
        try:
            settings, formats, compare, colour, out = settings_from_scene(bridge.context_scene(context))
            if not formats:
                raise MipsInputError("No output format chosen: tick DDS and/or PNG")
            inputs = gather_inputs(context, image_name=self.image)
            return bake_mips_job(inputs, resolve_output_dir(out), settings, formats, compare, colour)
        except (MipsInputError, core_mips.MipsError) as exc:
            self.report({"ERROR"}, str(exc))
            return None

    def finish(self, context: bpy.types.Context, result: MipsResult) -> set[OperatorReturnItems]:
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        worst = [coverage_summary(stem, rep) for stem, rep in result.reports.items()]
        self.report({"INFO"}, f"Wrote {len(result.files)} file(s) for {len(result.reports)} image(s); "
                    + "; ".join(worst + ([removed_text(result)] if result.removed else [])))
        return {"FINISHED"}


def coverage_summary(stem: str, rep: dict[str, Any]) -> str:
    """How far the chain's levels are from the full-size coverage, and how far a plain chain's would be: over the
    levels of more than one texel (a 1 x 1 level is covered all or nothing, whatever the chain)."""
    target = rep["target_coverage"]
    levels = [lv for lv in rep["per_level"] if lv["width"] * lv["height"] > 1] or rep["per_level"]
    kept = max(abs(lv["coverage"] - target) for lv in levels)
    naive = max(abs(lv["coverage_naive"] - target) for lv in levels)
    return f"{stem}: coverage {target:.3f}, levels off by up to {kept:.3f} (a plain chain: {naive:.3f})"


classes = (ENVFX_OT_mips_bake,)
