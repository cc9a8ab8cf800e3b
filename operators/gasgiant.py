"""Gas giant bake: settings -> ``core.gasgiant.bake`` (a job with progress and cancel) -> a planet wearing it.

``bake_job(scene)`` validates everything first (settings, memory, palette image, output folder) and raises
``GasGiantInputError`` before anything is changed; the job it returns writes the textures through a temporary
folder (nothing is left on cancel) and then adds or updates the planet object. ``bake(scene)`` runs it to the
end for scripts; the operator runs it modally with a progress bar (Esc cancels).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

import bpy
import numpy as np
import numpy.typing as npt

from .. import bridge, progress
from ..core import colour
from ..core import exr as core_exr
from ..core import gasgiant as core_gasgiant
from ..shader_nodes import gasgiant as gasgiant_nodes
from . import common as ops_common
from .common import NeedsScene, colour_space, colour_space_name, mesh_of, path_in_file, set_colour_space

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

MATERIAL_PREFIX = "EnvFX Gas Giant"
# the job generator of a bake: yields progress fractions, returns core.gasgiant's BakeResult
GasGiantJob = Generator[float, None, core_gasgiant.BakeResult]


class GasGiantInputError(ValueError):
    """Bad settings or input; nothing was changed."""


def output_folder(path: str) -> str:
    return ops_common.output_folder(path, "Output folder", "No output folder: set Output Folder in the Gas Giant "
                                    "panel", GasGiantInputError)


def load_palette(path: str, fill: bool = True) -> npt.NDArray[np.float32]:
    """(h, w, 3) float32 sRGB-encoded colours of an image file, row 0 at the top, the same for the same colours
    whatever the file's bit depth; the temporary image data-block is removed. With ``fill``, the pixels of an
    image with alpha that are less than half opaque take the colour of the opaque ones around them
    (``core.colour.fill_transparent``: a planet photographed on a transparent card paints no black from the card).

    ``image.pixels`` of an 8-bit image are its stored (sRGB-encoded) values; those of a float image (16-bit PNG,
    TIFF16, EXR) are scene linear, so they are encoded to sRGB again (unless the image is non-colour data). Colour
    is read straight (alpha mode Channel Packed); an EXR's premultiplied colour is divided by its alpha."""
    if not path.strip():
        raise GasGiantInputError("No palette image: choose one, or use the latitude ramp")
    full = bpy.path.abspath(path)
    if not os.path.isfile(full):
        raise GasGiantInputError(f"Palette image {full!r} does not exist: choose an existing image")
    try:
        image = bpy.data.images.load(full, check_existing=False)
    except RuntimeError as exc:
        raise GasGiantInputError(f"Palette image {full!r} cannot be read ({exc}): use a PNG or JPEG") from None
    try:
        image.alpha_mode = "CHANNEL_PACKED"  # float colour not multiplied by alpha on load
        w, h = image.size
        channels = image.channels
        if w == 0 or h == 0 or channels == 0:
            raise GasGiantInputError(f"Palette image {full!r} cannot be read "
                                     f"({core_exr.layers_text(full) or 'no pixels: use a PNG or JPEG'})")
        buf = bridge.image_pixels(image).ravel()
        is_float, is_data = image.is_float, colour_space(image).is_data
    finally:
        bpy.data.images.remove(image)
    bad = int(np.count_nonzero(~np.isfinite(buf.reshape(-1, channels)).all(axis=1)))
    if bad:  # (a broken EXR: NaN would paint black bands, infinity white ones)
        raise GasGiantInputError(f"Palette image {full!r} has {bad} pixel(s) that are NaN or infinite: fix the image "
                                 f"or choose another")
    pix = buf.reshape(h, w, channels)[::-1]
    if channels < 3:
        pix = np.repeat(pix[..., :1], 3, axis=-1)
    rgb = np.ascontiguousarray(pix[..., :3])
    if is_float:
        if channels == 4 and os.path.splitext(full)[1].lower() == ".exr":  # OpenEXR colour is premultiplied
            a = pix[..., 3:4]
            rgb = np.where(a > 0, rgb / np.maximum(a, 1e-8), 0.0).astype(np.float32)
        rgb = np.clip(rgb, 0.0, 1.0) if is_data else colour.linear_to_srgb(rgb)
    if fill and channels == 4:
        try:
            rgb = colour.fill_transparent(rgb, pix[..., 3])
        except ValueError:
            raise GasGiantInputError(f"Palette image {full!r} is transparent everywhere (no pixel is half opaque): "
                                     f"use an image with visible colours") from None
    return rgb


def cube_folder_layout(full: str) -> str:
    """The cube layout of the bake in folder ``full`` (one of ``core.gasgiant.CUBE_LAYOUTS``): what its
    gasgiant.json records, else BLENDER when the folder holds gasgiant_px.png ... (the Blender face names)."""
    meta_path = os.path.join(full, core_gasgiant.METADATA_NAME)
    engine_names = os.path.isfile(os.path.join(full, f"gasgiant_{core_gasgiant.ENGINE_FACES[0]}.png"))
    try:
        with open(meta_path, encoding="utf-8") as fh:
            layout = str(json.load(fh).get("cube_layout", "blender")).upper()
    except FileNotFoundError:
        layout = None
    except (OSError, ValueError, AttributeError) as exc:
        raise GasGiantInputError(f"{meta_path!r} cannot be read ({exc}): bake the cube map again") from None
    if layout is None:
        if engine_names and not os.path.isfile(os.path.join(full, f"gasgiant_{core_gasgiant.FACES[0]}.png")):
            raise GasGiantInputError(
                f"{full!r} holds engine-layout cube faces (gasgiant_posx.png ... gasgiant_negz.png) without the "
                f"{core_gasgiant.METADATA_NAME} that says whether they are GLTF or UNITY faces: put the bake's "
                f"{core_gasgiant.METADATA_NAME} back, or bake the palette with the Blender cube layout")
        return "BLENDER"
    if layout not in core_gasgiant.CUBE_LAYOUTS:
        raise GasGiantInputError(f"{meta_path!r} names an unknown cube layout {layout.lower()!r}: bake the cube "
                                 f"map again")
    return layout


def load_palette_cube(folder: str) -> npt.NDArray[np.float32]:
    """(6, h, w, 3) float32 Blender faces (``core.gasgiant.FACES`` order) from the bake in ``folder``: its
    gasgiant_{px,nx,py,ny,pz,nz}.png, or, for a bake in an engine cube layout (gasgiant.json says which), its
    gasgiant_{posx,...,negz}.png turned back into the Blender faces exactly."""
    if not folder.strip():
        raise GasGiantInputError("No cube map folder: choose the folder with gasgiant_px.png ... gasgiant_nz.png")
    if folder.startswith("//") and not bpy.data.filepath:
        raise GasGiantInputError(f"Cube map folder {folder!r} is relative to the .blend file, which is not saved "
                                 f"yet: save the file first or choose an absolute folder")
    full = os.path.normpath(bpy.path.abspath(folder))
    if not os.path.isdir(full):
        raise GasGiantInputError(f"Cube map folder {full!r} does not exist: choose the folder of an earlier bake")
    entries = core_gasgiant.cube_layout_faces(cube_folder_layout(full))
    missing = [f"gasgiant_{e['name']}" for e in entries
               if not os.path.isfile(os.path.join(full, f"gasgiant_{e['name']}.png"))]
    if missing and all(os.path.isfile(os.path.join(full, f"{name}.exr")) for name in missing):
        raise GasGiantInputError(
            f"Cube map folder {full!r} holds {missing[0]}.exr but not {missing[0]}.png: the cube-map palette reads "
            f"PNG faces; bake that folder again with --format png or png_exr (File Format PNG or PNG + OpenEXR)")
    # (a face's transparent parts are kept as they are: filling each face on its own would break the seams)
    images = [load_palette(os.path.join(full, f"gasgiant_{e['name']}.png"), fill=False) for e in entries]
    sizes = {f.shape[:2] for f in images}
    if len(sizes) != 1:
        raise GasGiantInputError(f"The cube map faces in {full!r} have different sizes {sorted(sizes)}: use six "
                                 f"images of one size")
    faces = {entry["face"]: core_gasgiant.blender_face_image(image, entry)
             for entry, image in zip(entries, images, strict=True)}
    return np.stack([faces[i] for i in range(len(entries))])


def params_from_settings(s: Any, palette: npt.NDArray[np.float32] | None = None,
                         palette_cube: npt.NDArray[np.float32] | None = None) -> core_gasgiant.GasGiantParams:
    """The core parameters of the settings ``s`` (Scene.envfx.gasgiant): every setting of ``core.gasgiant.SETTINGS``
    that is both a property and a parameter, plus the ones made from other properties (the colour ramp from its five
    colours, the field file paths made absolute) and the palette images the caller read."""
    values = {setting.name: setting.from_ui(getattr(s, setting.name))
              for setting in core_gasgiant.PARAM_SETTINGS if setting.ui}
    values.update(
        ramp=core_gasgiant.symmetric_ramp([tuple(getattr(s, f"ramp_color_{i}")) for i in range(1, 6)]),
        save_field=_field_path(s.save_field_path, "Save Velocity Field"),
        load_field=_field_path(s.load_field_path, "Load Velocity Field"),
        palette=palette, palette_cube=palette_cube)
    params = core_gasgiant.GasGiantParams(**values)
    return core_gasgiant.preview(params) if s.preview else params  # Preview: a look in seconds


def _field_path(path: str, label: str) -> str:
    if not path.strip():
        return ""
    if path.startswith("//") and not bpy.data.filepath:
        raise GasGiantInputError(f"{label} {path!r} is relative to the .blend file, which is not saved yet: save "
                                 f"the file first or choose an absolute path")
    return os.path.normpath(bpy.path.abspath(path))


def prepare(scene: bpy.types.Scene, settings: Any = None) -> tuple[core_gasgiant.GasGiantParams, str, dict]:
    """Everything checked, nothing changed: (params, folder, the fields of the velocity field file to load).
    ``settings``: the gas giant settings to read (default: the scene's, ``scene.envfx.gasgiant``)."""
    s = settings or bridge.envfx_settings(scene).gasgiant
    palette = load_palette(s.palette_path) if s.color_source == "PALETTE" else None
    cube = load_palette_cube(s.palette_cube_dir) if s.color_source == "CUBEMAP" else None
    params = params_from_settings(s, palette, cube)
    try:
        params.validate(core_gasgiant.available_memory())
        folder = output_folder(s.output_dir)
        core_gasgiant.check_output_folder(folder)
        fields = core_gasgiant.check_field_files(params)  # handed to the bake, which does not read it again
    except core_gasgiant.GasGiantError as exc:
        raise GasGiantInputError(str(exc)) from None
    if s.make_planet and not params.equirect_width:
        raise GasGiantInputError("The planet needs the equirectangular image: choose an Equirect Width, or turn "
                                 "off Make Planet")
    if s.make_planet and not s.planet_name.strip():
        raise GasGiantInputError("No planet object name: set Planet Object, or turn off Make Planet")
    return params, folder, fields


def bake_job(scene: bpy.types.Scene, settings: Any = None) -> GasGiantJob:
    """Validate now (raises ``GasGiantInputError``), return the job generator (its result: ``BakeResult``)."""
    s = settings or bridge.envfx_settings(scene).gasgiant
    params, folder, fields = prepare(scene, s)
    make, planet_name = s.make_planet, s.planet_name

    def job() -> GasGiantJob:
        result = yield from core_gasgiant.bake(params, folder, fields=fields)
        if make:
            make_planet(scene, planet_name, result.equirect, frames=params.frames, clouds=params.cloud_mode)
        return result

    return job()


def bake(scene: bpy.types.Scene, settings: Any = None, label: str = "Gas giant bake") -> core_gasgiant.BakeResult:
    """Bake with the scene's settings, reporting progress; returns ``core.gasgiant.BakeResult``."""
    return progress.run(bake_job(scene, settings), label)


# --- the planet -------------------------------------------------------------------------------------------

def sphere_mesh(name: str, segments: int = 128, rings: int = 64) -> bpy.types.Mesh:
    """A UV sphere whose UVs are exactly the equirectangular mapping of the bake (u = longitude from -180,
    v = latitude, north up), with a UV seam at the back, triangle fans at the poles and true sphere normals."""
    nlon, nlat = segments, rings
    lon = -math.pi + 2 * math.pi * np.arange(nlon + 1) / nlon
    lat = math.pi / 2 - math.pi * np.arange(1, nlat) / nlat
    cl = np.cos(lat)[:, None]
    ring = np.stack(np.broadcast_arrays(cl * np.cos(lon), cl * np.sin(lon), np.sin(lat)[:, None]), -1)
    ring_uv = np.stack(np.broadcast_arrays(np.arange(nlon + 1)[None, :] / nlon,
                                           (0.5 + lat / math.pi)[:, None]), -1)
    pole_u = (np.arange(nlon) + 0.5) / nlon
    verts = np.concatenate([np.tile([0.0, 0.0, 1.0], (nlon, 1)), ring.reshape(-1, 3),
                            np.tile([0.0, 0.0, -1.0], (nlon, 1))])
    vuv = np.concatenate([np.stack([pole_u, np.ones(nlon)], -1), ring_uv.reshape(-1, 2),
                          np.stack([pole_u, np.zeros(nlon)], -1)])
    w = nlon + 1
    r0 = nlon  # first ring vertex
    j = np.arange(nlon)
    top = np.stack([j, r0 + j, r0 + j + 1], -1)
    i = np.arange(nlat - 2)[:, None]
    a = r0 + i * w + j
    quads = np.stack([a, a + w, a + w + 1, a + 1], -1).reshape(-1, 4)
    last = r0 + (nlat - 2) * w
    south = r0 + (nlat - 1) * w
    bottom = np.stack([last + j, south + j, last + j + 1], -1)

    mesh = bpy.data.meshes.new(name)
    sizes = np.concatenate([np.full(nlon, 3), np.full(len(quads), 4), np.full(nlon, 3)])
    loops = np.concatenate([top.ravel(), quads.ravel(), bottom.ravel()]).astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)
    bridge.fill_mesh(mesh, verts, loops, starts)
    bridge.calc_edges(mesh)
    mesh.validate(clean_customdata=False)
    uv_layer = mesh.uv_layers.new(name="UVMap")
    bridge.set_corner_uvs(uv_layer, vuv[loops])
    bridge.set_smooth(mesh, np.ones(len(sizes), dtype=bool))
    mesh.normals_split_custom_set_from_vertices(verts.tolist())
    mesh.update()
    return mesh


def file_colour_space(path: str) -> str:
    """The colour space Blender gives the image file ``path`` when it loads it anew (from the colour management
    configuration's roles: sRGB for an 8-bit PNG, scene linear for a float EXR)."""
    probe = bpy.data.images.load(path, check_existing=False)
    try:
        return colour_space_name(probe)
    finally:
        bpy.data.images.remove(probe)


def make_planet(scene: bpy.types.Scene, name: str, equirect_files: Sequence[str], frames: int = 1, radius: float = 1.0,
                clouds: bool = False) -> bpy.types.Object:
    """Add the planet object ``name`` (or update it) with a material showing the bake; returns the object."""
    if not equirect_files:
        raise GasGiantInputError("No equirectangular image was baked: choose an Equirect Width")
    first = equirect_files[0]
    image = None
    for img in bpy.data.images:
        if img.library is None and os.path.normpath(bpy.path.abspath(img.filepath)) == os.path.normpath(first):
            image = img
            break
    if image is None:
        image = bpy.data.images.get(f"{name} Texture")  # the planet's image from an earlier bake: shows this one
        if image is None or image.library is not None:
            image = bpy.data.images.load(first, check_existing=False)
            image.name = f"{name} Texture"
    image.filepath = path_in_file(first)
    image.source = "SEQUENCE" if frames > 1 else "FILE"
    # a reused image keeps the colour space of the file it showed before (an 8-bit PNG: sRGB, a float EXR: linear)
    set_colour_space(image, file_colour_space(first))
    # the PNG holds straight alpha, the EXR premultiplied colour (as OpenEXR defines it)
    image.alpha_mode = "PREMUL" if first.lower().endswith(".exr") else "STRAIGHT"
    image.reload()
    mat = gasgiant_nodes.ensure_planet_material(f"{MATERIAL_PREFIX} {name}", image, frames, scene.frame_start,
                                                clouds=clouds)
    obj = bpy.data.objects.get(name)
    if obj is None or obj.type != "MESH" or obj.library is not None:
        mesh = sphere_mesh(name)
        obj = bpy.data.objects.new(name, mesh)
        obj.scale = (radius, radius, radius)
        scene.collection.objects.link(obj)
    elif obj.name not in scene.objects:
        scene.collection.objects.link(obj)
    mesh = mesh_of(obj)  # (a mesh object: the one found, or a new sphere)
    if not mesh.materials:
        mesh.materials.append(mat)
    else:
        mesh.materials[0] = mat
    obj.visible_shadow = not clouds  # a cloud shell's stochastic transparent shadow would speckle the planet
    obj["envfx_gasgiant"] = {"frames": frames, "files": len(equirect_files)}
    return obj


# --- operators --------------------------------------------------------------------------------------------

class ENVFX_OT_gasgiant_bake(NeedsScene, progress.ModalJobOperator, bpy.types.Operator):
    """Bake a gas giant texture (cube faces, equirectangular image, flow map) with the scene's Gas Giant
    settings and put it on a planet sphere. Esc cancels; a cancelled bake leaves no files"""

    bl_idname = "envfx.gasgiant_bake"
    bl_label = "Bake Gas Giant"
    bl_options = {"REGISTER", "UNDO"}
    job_label = "Gas giant bake"


    def make_job(self, context: bpy.types.Context) -> GasGiantJob | None:
        try:
            return bake_job(bridge.context_scene(context))
        except GasGiantInputError as exc:
            self.report({"ERROR"}, str(exc))
            return None

    def finish(self, context: bpy.types.Context, result: core_gasgiant.BakeResult) -> set[OperatorReturnItems]:
        note = result.removed_note()
        self.report({"WARNING"} if result.not_removed else {"INFO"},
                    f"Baked {len(result.files)} image(s) and gasgiant.json into {result.folder} in "
                    f"{result.seconds:.1f} s" + (f"; {note}" if note else ""))
        return {"FINISHED"}


class ENVFX_OT_gasgiant_preset(bpy.types.Operator):
    """Fill the gas giant look settings from a preset"""

    bl_idname = "envfx.gasgiant_preset"
    bl_label = "Gas Giant Preset"
    bl_options = {"REGISTER", "UNDO"}

    preset: bpy.props.EnumProperty(
        name="Preset",
        items=(("JUPITER", "Jupiter-like", ""), ("NEPTUNE", "Neptune-like", ""), ("STORMY", "Stormy", "")),
    )

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        settings = bridge.envfx_settings(bridge.context_scene(context)).gasgiant
        settings.preset = self.preset
        for key, value in core_gasgiant.preset_values(self.preset).items():  # also when it was already chosen
            setattr(settings, key, value)
        return {"FINISHED"}


class ENVFX_OT_gasgiant_randomize(bpy.types.Operator):
    """Random bands, band speed, velocity factor, noise scale and W offset from the seed, with vertical bands and
    the sinusoidal mapping (gaseous-giganticus -R)"""

    bl_idname = "envfx.gasgiant_randomize"
    bl_label = "Random Look"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        s = bridge.envfx_settings(bridge.context_scene(context)).gasgiant
        for key, value in core_gasgiant.random_look(s.seed).items():
            setattr(s, key, value)
        s.preset = "CUSTOM"
        return {"FINISHED"}


classes = (ENVFX_OT_gasgiant_bake, ENVFX_OT_gasgiant_preset, ENVFX_OT_gasgiant_randomize)
