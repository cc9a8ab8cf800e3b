"""Vegetation look operators: colorize sets, the neutralised albedo, the "EnvFX Colorize" group and the "EnvFX
Vegetation" groups put into (and taken out of) the selected assets' materials. Thin wrappers around plain
functions (``new_colorize_set``, ``neutralise_albedo``, ``add_colorize``, ``remove_colorize``, ``apply_vegetation``,
``remove_vegetation``) that scripts call too.

Inserting never rebuilds a material: a group node goes between the surface shader's Base Color (and Normal) and
what fed them, another between the surface and the Material Output, named ``EnvFX ...``. Removing reconnects what
fed them and deletes the nodes, so the material is as it was (nodes, links and values); a neutralised albedo
image is swapped back for the original."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, StringProperty

from .. import bridge
from ..core import colorize as core_colorize
from ..shader_nodes import colorize as colorize_nodes
from ..shader_nodes import vegetation as vegetation_nodes
from .common import ObjectsResult, changeable, colour_space_name, mesh_of, report_result, set_colour_space

if TYPE_CHECKING:  # the stubs' names for an operator's result and report literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems, WmReportItems

COLORIZE_NODE = "EnvFX Colorize"
VEGETATION_NODE = "EnvFX Vegetation"
SURFACE_NODE = "EnvFX Vegetation Surface"
NEUTRAL_KEY = "envfx_neutralised"  # material ID property: {image node name: the original image}
SET_NAME = "EnvFX Colorize Set"
WIND_ATTR = vegetation_nodes.WIND_ATTR


class VegetationInputError(ValueError):
    """Nothing could be done; the scene is unchanged."""


@dataclass
class VegetationResult(ObjectsResult):
    pass


# --- reading a material -----------------------------------------------------------------------------------

def _has_nodes(mat) -> bool:
    if mat.node_tree is None:
        return False
    if not bridge.BLENDER_5 and not mat.use_nodes:  # always on (and deprecated) from 5.0
        return False
    return True


@dataclass
class Target:
    """Where a material's look is made: its output node, the surface shader socket feeding it, and the BSDF
    whose base colour (and normal) the groups go in front of."""
    output: bpy.types.Node
    surface: bpy.types.NodeSocket         # the socket linked into the output's Surface
    bsdf: bpy.types.Node
    base: bpy.types.NodeSocket            # the BSDF's Base Color (or Color) input
    normal: bpy.types.NodeSocket | None   # the BSDF's Normal input, or None


def _source(socket: bpy.types.NodeSocket) -> bpy.types.NodeSocket | None:
    """The output socket that feeds the input ``socket``, or None (the 5.0 API types a socket's links as
    optional)."""
    links = socket.links
    return links[0].from_socket if socket.is_linked and links else None


def _feeder(socket: bpy.types.NodeSocket) -> bpy.types.Node | None:
    """The node that feeds the input ``socket``, or None."""
    links = socket.links
    return links[0].from_node if socket.is_linked and links else None


def find_target(mat: bpy.types.Material) -> Target:
    """The output, surface and BSDF of ``mat``; ``VegetationInputError`` saying what is missing."""
    nt = mat.node_tree
    if nt is None or not _has_nodes(mat):
        raise VegetationInputError(f"Material {mat.name!r} has no shader nodes: switch on Use Nodes (or give it a "
                                   f"Principled BSDF) first")
    out = nt.get_output_node("ALL") or nt.get_output_node("EEVEE") or nt.get_output_node("CYCLES")
    surface = _source(out.inputs["Surface"]) if out is not None else None
    if out is None or surface is None:
        raise VegetationInputError(f"Material {mat.name!r} has no shader linked to a Material Output's Surface: "
                                   f"connect its BSDF to the output first")
    seen: set[str] = set()
    queue = [surface.node]
    while queue:  # upstream from the surface: the first node with a base colour (a Principled inside a Mix)
        node = queue.pop(0)
        if node is None or node.name in seen:  # (the API types a socket's and a link's node as optional)
            continue
        seen.add(node.name)
        base = node.inputs.get("Base Color") if node.type != "GROUP" else None
        if base is None and node.bl_idname == "ShaderNodeBsdfDiffuse":
            base = node.inputs.get("Color")
        if base is not None:
            return Target(out, surface, node, base, node.inputs.get("Normal"))
        queue += [link.from_node for sock in node.inputs for link in sock.links or ()]
    raise VegetationInputError(f"Material {mat.name!r} has no Principled or Diffuse BSDF feeding its output: the "
                               f"vegetation groups colour a BSDF's Base Color")


def _our_nodes(mat) -> list:
    if mat.node_tree is None:
        return []
    return [n for n in mat.node_tree.nodes if n.bl_idname == "ShaderNodeGroup" and n.name.startswith("EnvFX ")
            and n.node_tree is not None and n.node_tree.name in (colorize_nodes.GROUP_NAME,
                                                                 vegetation_nodes.GROUP_NAME,
                                                                 vegetation_nodes.SURFACE_NAME)]


def has_colorize(mat: bpy.types.Material) -> bool:
    """Whether ``mat`` has the "EnvFX Colorize" group in it."""
    return any(n.node_tree.name == colorize_nodes.GROUP_NAME for n in _our_nodes(mat))


def has_vegetation(mat: bpy.types.Material) -> bool:
    """Whether ``mat`` has the "EnvFX Vegetation" group in it."""
    return any(n.node_tree.name == vegetation_nodes.GROUP_NAME for n in _our_nodes(mat))


def _materials(objects, result) -> dict:
    """{material: [objects of ``objects`` using it]} of the meshes among ``objects`` (others skipped)."""
    mats = {}
    for obj in changeable(objects, result):
        if obj.type != "MESH":
            result.skipped[obj.name] = f"{obj.type.lower()} object: only meshes have vegetation materials"
            continue
        used = [slot.material for slot in obj.material_slots if slot.material is not None]
        if not used:
            result.skipped[obj.name] = "has no material: give it one first"
            continue
        for mat in used:
            mats.setdefault(mat, [])
            if obj not in mats[mat]:
                mats[mat].append(obj)
    return mats


def _is_vegetation(obj) -> bool:
    """An object the vegetation look belongs on: its mesh carries baked wind data."""
    return obj.type == "MESH" and obj.data is not None and mesh_of(obj).attributes.get(WIND_ATTR) is not None


def shared_with(mats: Collection[bpy.types.Material], asset: Iterable[bpy.types.Object]) -> dict[str, list[str]]:
    """{material name: [names of other objects using it that are not vegetation]}."""
    ours = set(asset)
    users: dict[str, list[str]] = {}
    for obj in bpy.data.objects:
        if obj in ours or _is_vegetation(obj):
            continue
        for slot in getattr(obj, "material_slots", ()):
            if slot.material is not None and slot.material in mats:
                users.setdefault(slot.material.name, []).append(obj.name)
    return users


def make_single_user(mats: Mapping[bpy.types.Material, Sequence[bpy.types.Object]]
                     ) -> dict[bpy.types.Material, Sequence[bpy.types.Object]]:
    """Give the asset objects their own copy of each shared material (in the slots that held it). Returns the new
    {material: objects}."""
    out = {}
    for mat, objects in mats.items():
        copy = mat.copy()
        copy.name = mat.name + " (vegetation)"
        for obj in objects:
            for slot in obj.material_slots:
                if slot.material == mat:
                    slot.material = copy
        out[copy] = objects
    return out


def _check_shared(mats, objects, single_user):
    shared = shared_with(mats, objects)
    if not shared:
        return mats
    if not single_user:
        text = "; ".join(f"{m} (also on {', '.join(sorted(users)[:5])}{' ...' if len(users) > 5 else ''})"
                         for m, users in shared.items())
        raise VegetationInputError(f"Materials shared with objects that are not vegetation: {text}. Turn on Single-"
                                   f"User Copies to give the asset its own copies, or select those objects too")
    return {**{m: o for m, o in mats.items() if m.name not in shared},
            **make_single_user({m: o for m, o in mats.items() if m.name in shared})}


def check_colorize_inputs(scene: bpy.types.Scene) -> None:
    """The scene's colorize set and world data exist and the world data is square."""
    s = bridge.envfx_settings(scene).vegetation
    if s.colorize_set is None:
        raise VegetationInputError("No colorize set: make one (New Set, from colours or an image) or pick an image "
                                   "as Colorize Set")
    w, h = s.colorize_set.size
    if w <= 0 or h < core_colorize.BANDS:
        raise VegetationInputError(f"Colorize set {s.colorize_set.name!r} is {w} x {h}: it needs {core_colorize.BANDS} "
                                   f"rows per ecotope (New Set makes one)")
    if s.world_data is None:
        raise VegetationInputError("No world-data texture: pick a square grey-scale image as World Data")
    try:
        core_colorize.check_world_data(*s.world_data.size, name=f"World data {s.world_data.name!r}")
    except core_colorize.ColorizeError as exc:
        raise VegetationInputError(str(exc)) from None


# --- inserting and removing ------------------------------------------------------------------------------

def _group_node(nt, name, tree, location):
    node = nt.nodes.new("ShaderNodeGroup")
    node.node_tree = tree
    node.name = node.label = name
    node.location = location
    return node


def _insert_before(nt, socket, node_in, node_out):
    """Put ``node_in`` -> ``node_out`` (sockets of a new node) in front of ``socket``: what fed it feeds
    ``node_in`` (else its value is copied there), and ``node_out`` feeds it."""
    if socket.is_linked:
        nt.links.new(socket.links[0].from_socket, node_in)
    elif hasattr(node_in, "default_value") and hasattr(socket, "default_value"):
        try:
            node_in.default_value = socket.default_value
        except (TypeError, ValueError):
            pass
    nt.links.new(node_out, socket)


def _insert_colorize(mat, scene, target: Target):
    nt = mat.node_tree
    tree = colorize_nodes.ensure_colorize(scene)
    loc = target.bsdf.location
    node = _group_node(nt, COLORIZE_NODE, tree, (loc.x - 250, loc.y))
    _insert_before(nt, target.base, node.inputs["Albedo"], node.outputs["Color"])


def _insert_vegetation(mat, scene, target: Target):
    nt = mat.node_tree
    tree = vegetation_nodes.ensure_vegetation(scene)
    surf_tree = vegetation_nodes.ensure_surface()
    loc = target.bsdf.location
    veg = _group_node(nt, VEGETATION_NODE, tree, (loc.x - 300, loc.y))
    _insert_before(nt, target.base, veg.inputs["Albedo"], veg.outputs["Base Color"])
    if target.normal is not None:
        if target.normal.is_linked:
            veg.inputs["Normal Linked"].default_value = 1.0
        _insert_before(nt, target.normal, veg.inputs["Normal"], veg.outputs["Normal"])
    out_loc = target.output.location
    surf = _group_node(nt, SURFACE_NODE, surf_tree, (out_loc.x, out_loc.y - 250))
    nt.links.new(target.surface, surf.inputs["Shader"])
    nt.links.new(surf.outputs["Shader"], target.output.inputs["Surface"])
    nt.links.new(veg.outputs["Translucency"], surf.inputs["Translucency"])
    nt.links.new(veg.outputs["Translucency Normal"], surf.inputs["Translucency Normal"])


# which input of each node carries what fed each output, when the node goes
_PASS = {
    colorize_nodes.GROUP_NAME: (("Color", "Albedo"),),
    vegetation_nodes.GROUP_NAME: (("Base Color", "Albedo"), ("Normal", "Normal")),
    vegetation_nodes.SURFACE_NAME: (("Shader", "Shader"),),
}


def _take_out(mat, node):
    nt = mat.node_tree
    for out_name, in_name in _PASS[node.node_tree.name]:
        sock_in = node.inputs[in_name]
        source = sock_in.links[0].from_socket if sock_in.is_linked else None
        if out_name == "Normal" and node.inputs["Normal Linked"].default_value < 0.5:
            source = None  # the material had no normal of its own
        targets = [link.to_socket for link in node.outputs[out_name].links]
        for target in targets:
            if source is not None:
                nt.links.new(source, target)
    nt.nodes.remove(node)


def _restore_images(mat):
    saved = mat.get(NEUTRAL_KEY)
    if not saved:
        return
    for node_name, image in dict(saved).items():
        node = mat.node_tree.nodes.get(node_name) if mat.node_tree is not None else None
        if node is not None and isinstance(image, bpy.types.Image) and node.bl_idname == "ShaderNodeTexImage":
            node.image = image
    del mat[NEUTRAL_KEY]


def strip(mat: bpy.types.Material, names: Collection[str]) -> bool:
    """Take the nodes of groups ``names`` out of ``mat`` (and swap a neutralised albedo back once none is left).
    Returns whether anything changed."""
    nodes = [n for n in _our_nodes(mat) if n.node_tree.name in names]
    for node in nodes:
        _take_out(mat, node)
    if not _our_nodes(mat) and NEUTRAL_KEY in mat:
        _restore_images(mat)
        return True
    return bool(nodes)


# --- the plain functions ---------------------------------------------------------------------------------

def add_colorize(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object],
                 single_user: bool = False) -> VegetationResult:
    """Put "EnvFX Colorize" in front of the base colour of every material of ``objects``."""
    result = VegetationResult()
    check_colorize_inputs(scene)
    mats = _materials(objects, result)
    if not mats:
        raise VegetationInputError(f"Nothing to colorize: {result.skipped_text() or 'select the assets'}")
    for mat in mats:  # every material checked before anything changes
        find_target(mat)
    mats = _check_shared(mats, objects, single_user)
    targets = {m: find_target(m) for m in mats}
    done = set()
    for mat, users in mats.items():
        if has_colorize(mat) or has_vegetation(mat):
            result.unchanged += [o.name for o in users if o.name not in result.unchanged]
            continue
        _insert_colorize(mat, scene, targets[mat])
        done.update(o.name for o in users)
    result.changed = sorted(done)
    result.unchanged = [n for n in result.unchanged if n not in done]
    return result


def remove_colorize(objects: Iterable[bpy.types.Object]) -> VegetationResult:
    """Take "EnvFX Colorize" out of the materials of ``objects`` (they are as they were)."""
    result = VegetationResult()
    mats = _materials(objects, result)
    for mat, users in mats.items():
        if strip(mat, (colorize_nodes.GROUP_NAME,)):
            result.changed += [o.name for o in users if o.name not in result.changed]
    result.unchanged = [o.name for users in mats.values() for o in users if o.name not in result.changed]
    return result


def apply_vegetation(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object],
                     single_user: bool = False) -> VegetationResult:
    """Put the vegetation groups into the materials of ``objects`` (an asset whose wind data is baked). Objects
    of the Grass wind category are colorized per vertex and get the grass normals (when on)."""
    result = VegetationResult()
    settings = bridge.envfx_settings(scene).vegetation
    if settings.colorize:
        check_colorize_inputs(scene)
    if settings.leaf_split == "TEXTURE" and settings.leaf_texture is None:
        raise VegetationInputError("Leaf / Bark is Texture but no Leaf Texture is picked: pick one, or use Wind Data")
    meshes = [o for o in objects if o.type == "MESH"]
    unbaked = [o.name for o in meshes if not _is_vegetation(o)]
    if unbaked:
        raise VegetationInputError(f"No wind data on {', '.join(unbaked)}: the vegetation shading reads the wind "
                                   f"bake's AO and leaves; Bake Wind Data first")
    mats = _materials(objects, result)
    if not mats:
        raise VegetationInputError(f"Nothing to shade: {result.skipped_text() or 'select the asset'}")
    for mat in mats:  # every material checked before anything changes
        find_target(mat)
    mats = _check_shared(mats, objects, single_user)
    done = set()
    for mat, users in mats.items():
        if has_vegetation(mat):
            continue
        strip(mat, (colorize_nodes.GROUP_NAME,))  # the vegetation group colorizes itself
        _insert_vegetation(mat, scene, find_target(mat))
        done.update(o.name for o in users)
    for users in mats.values():
        for obj in users:
            own = bridge.envfx_settings(obj)
            grass = own.wind.category == "GRASS"
            if own.colorize_per_vertex != grass:
                own.colorize_per_vertex = grass
    result.changed = sorted(done)
    result.unchanged = sorted({o.name for users in mats.values() for o in users} - done)
    return result


def remove_vegetation(objects: Iterable[bpy.types.Object]) -> VegetationResult:
    """Take the vegetation groups (and the colorize) out of the materials of ``objects`` (they are as they were)."""
    result = VegetationResult()
    mats = _materials(objects, result)
    names = (vegetation_nodes.GROUP_NAME, vegetation_nodes.SURFACE_NAME, colorize_nodes.GROUP_NAME)
    for mat, users in mats.items():
        if strip(mat, names):
            result.changed += [o.name for o in users if o.name not in result.changed]
    result.unchanged = [o.name for users in mats.values() for o in users if o.name not in result.changed]
    return result


def new_colorize_set(scene: bpy.types.Scene, image: bpy.types.Image | None = None) -> bpy.types.Image:
    """A colorize set image from the scene's picked colours (or from ``image``), packed into the file, made the
    scene's Colorize Set. An existing set of that name is replaced in place (materials keep it)."""
    s = bridge.envfx_settings(scene).vegetation
    try:
        if image is not None:
            if image.size[0] <= 0 or image.size[1] <= 0:
                raise VegetationInputError(f"Image {image.name!r} has no pixels (missing file?): load it first")
            srgb = not image.is_float and colour_space_name(image).lower().startswith("srgb")
            pixels = core_colorize.set_from_image(bridge.image_pixels(image)[::-1], s.set_count, srgb=srgb)
        else:
            colours = np.array([s.colour_1, s.colour_2, s.colour_3, s.colour_4], np.float64)
            pixels = core_colorize.set_from_colours(colours, s.set_count, s.band_spread)
    except core_colorize.ColorizeError as exc:
        raise VegetationInputError(str(exc)) from None
    h, w = pixels.shape[:2]
    img = bpy.data.images.get(SET_NAME)
    if img is not None and (tuple(img.size) != (w, h) or not img.is_float or img.library is not None):
        img.name = SET_NAME + ".old"
        img = None
    if img is None:
        img = bpy.data.images.new(SET_NAME, w, h, alpha=True, float_buffer=True)
    set_colour_space(img, "Non-Color")  # the colours are linear values, used as they are
    bridge.set_image_pixels(img, pixels)
    img.file_format = "OPEN_EXR"  # packed as a float image, not 8 bits
    img.pack()
    s.colorize_set = img
    return img


def neutralise_albedo(mat: bpy.types.Material) -> bpy.types.Image:
    """A mid-grey copy of the albedo image feeding ``mat``'s base colour (through the colorize or vegetation
    group when present), swapped into its image node; the original image is untouched, and Remove swaps it back."""
    target = find_target(mat)
    sock = target.base
    group = _feeder(sock)
    if group is not None and group.bl_idname == "ShaderNodeGroup" and group in _our_nodes(mat):
        sock = group.inputs["Albedo"]
    node = _feeder(sock)
    if not isinstance(node, bpy.types.ShaderNodeTexImage) or node.image is None:
        raise VegetationInputError(f"Material {mat.name!r}: its base colour does not come from an Image Texture: "
                                   f"nothing to neutralise (an albedo colour can be set to mid-grey by hand)")
    image = node.image
    if image.size[0] <= 0 or image.size[1] <= 0:
        raise VegetationInputError(f"Image {image.name!r} has no pixels (missing file?): load it first")
    srgb = not image.is_float and colour_space_name(image).lower().startswith("srgb")
    px = bridge.image_pixels(image)
    if px.shape[2] == 3:
        px = np.concatenate([px, np.ones(px.shape[:2] + (1,), np.float32)], axis=2)
    neutral = core_colorize.neutralise(px[::-1], srgb=srgb)
    name = image.name + " (EnvFX neutral)"
    new = bpy.data.images.new(name, image.size[0], image.size[1], alpha=True, float_buffer=True)
    bridge.set_image_pixels(new, neutral)
    new.file_format = "OPEN_EXR"
    new.pack()
    # the original, by pointer: the material's ID property is a user of it, so it is saved with the file while no
    # node shows it
    saved = dict(mat.get(NEUTRAL_KEY) or {})
    saved.setdefault(node.name, image)
    mat[NEUTRAL_KEY] = saved
    node.image = new
    return new


# --- operators -------------------------------------------------------------------------------------------

def _selected(context):
    objects = list(getattr(context, "selected_objects", []) or [])
    if not objects:
        raise VegetationInputError("Nothing selected: select the asset's objects first")
    return objects


def _poll_selection(cls, context):
    if context.scene is None or not hasattr(context.scene, "envfx"):
        cls.poll_message_set("Needs a scene")
        return False
    if not getattr(context, "selected_objects", None):
        cls.poll_message_set("Select the asset's objects first")
        return False
    return True


_SINGLE_USER = BoolProperty(
    name="Single-User Copies", default=False,
    description="When a material is shared with objects that are not vegetation, give the selected objects their "
                "own copy instead of refusing")


class _Selection:
    """Shared shape of the operators that act on the selected assets' materials."""

    verb = ""

    if TYPE_CHECKING:  # what the operator class it is mixed into has (not declared here: Blender reads annotations)
        def report(self, type: set[WmReportItems] | None, message: str) -> None: ...  # noqa: A002 - bpy's name

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return _poll_selection(cls, context)

    def run(self, context: bpy.types.Context) -> VegetationResult:  # pragma: no cover - interface
        raise NotImplementedError

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            result = self.run(context)
        except VegetationInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        report_result(self, result, self.verb)
        return {"FINISHED"}


class ENVFX_OT_vegetation_colorize_add(_Selection, bpy.types.Operator):
    """Colorize the selected assets: put the "EnvFX Colorize" group in front of their materials' base colour"""

    bl_idname = "envfx.vegetation_colorize_add"
    bl_label = "Add Colorize"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Colorized"
    single_user: _SINGLE_USER

    def run(self, context: bpy.types.Context) -> VegetationResult:
        return add_colorize(bridge.context_scene(context), _selected(context), self.single_user)


class ENVFX_OT_vegetation_colorize_remove(_Selection, bpy.types.Operator):
    """Take the colorize out of the selected assets' materials (they are as they were)"""

    bl_idname = "envfx.vegetation_colorize_remove"
    bl_label = "Remove Colorize"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Removed the colorize from"

    def run(self, context: bpy.types.Context) -> VegetationResult:
        return remove_colorize(_selected(context))


class ENVFX_OT_vegetation_apply(_Selection, bpy.types.Operator):
    """Shade the selected asset in wind as vegetation: AO from the wind data, translucent leaves, colorize, grass
    normals"""

    bl_idname = "envfx.vegetation_apply"
    bl_label = "Apply Vegetation Shading"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Vegetation shading on"
    single_user: _SINGLE_USER

    def run(self, context: bpy.types.Context) -> VegetationResult:
        return apply_vegetation(bridge.context_scene(context), _selected(context), self.single_user)


class ENVFX_OT_vegetation_remove(_Selection, bpy.types.Operator):
    """Take the vegetation shading out of the selected assets' materials (they are as they were)"""

    bl_idname = "envfx.vegetation_remove"
    bl_label = "Remove Vegetation Shading"
    bl_options = {"REGISTER", "UNDO"}
    verb = "Removed the vegetation shading from"

    def run(self, context: bpy.types.Context) -> VegetationResult:
        return remove_vegetation(_selected(context))


class ENVFX_OT_vegetation_new_set(bpy.types.Operator):
    """Make a colorize set (128 x 8 texels per ecotope) from the picked colours, or from an image"""

    bl_idname = "envfx.vegetation_new_set"
    bl_label = "New Colorize Set"
    bl_options = {"REGISTER", "UNDO"}

    source: EnumProperty(name="From", items=(("COLOURS", "Colours", "The four picked colours"),
                                             ("IMAGE", "Image", "An image, resampled to the set's size")),
                         default="COLOURS")
    image: StringProperty(name="Image", description="The image to make the set from (From: Image)")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.scene is None or not hasattr(context.scene, "envfx"):
            cls.poll_message_set("Needs a scene")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            image = None
            if self.source == "IMAGE":
                image = bpy.data.images.get(self.image)
                if image is None:
                    raise VegetationInputError(f"No image {self.image!r}: open one first")
            img = new_colorize_set(bridge.context_scene(context), image)
        except VegetationInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Colorize set {img.name!r}: {img.size[1] // core_colorize.BANDS} ecotope(s)")
        return {"FINISHED"}


class ENVFX_OT_vegetation_neutralise(bpy.types.Operator):
    """Average the active object's albedo textures to mid-grey (new images; the originals are untouched and come
    back with Remove)"""

    bl_idname = "envfx.vegetation_neutralise"
    bl_label = "Neutralise Albedo"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        obj = context.active_object
        if obj is None or not any(s.material for s in getattr(obj, "material_slots", ())):
            cls.poll_message_set("Needs an active object with a material")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        obj = context.active_object
        if obj is None:  # (poll: never from the UI)
            self.report({"ERROR"}, "No active object: make an object with a material active")
            return {"CANCELLED"}
        mats = [s.material for s in obj.material_slots if s.material is not None]
        done, errors = [], []
        for mat in dict.fromkeys(mats):
            try:
                done.append(neutralise_albedo(mat).name)
            except VegetationInputError as exc:
                errors.append(str(exc))
        if not done:
            self.report({"ERROR"}, "; ".join(errors))
            return {"CANCELLED"}
        for e in errors:
            self.report({"WARNING"}, e)
        self.report({"INFO"}, f"Neutralised: {', '.join(done)}")
        return {"FINISHED"}


classes = (
    ENVFX_OT_vegetation_colorize_add,
    ENVFX_OT_vegetation_colorize_remove,
    ENVFX_OT_vegetation_apply,
    ENVFX_OT_vegetation_remove,
    ENVFX_OT_vegetation_new_set,
    ENVFX_OT_vegetation_neutralise,
)
