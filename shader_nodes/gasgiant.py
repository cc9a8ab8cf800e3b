"""The gas giant's planet material: the baked equirectangular texture (a still or an image sequence) on the
planet sphere's UVs, through a Principled BSDF with a soft atmospheric rim. Built by ``ensure_planet_material``."""

from __future__ import annotations

from typing import cast

import bpy

from .. import bridge

MATERIAL_STAMP = "gasgiant-material-2"
STAMP_KEY = "envfx_stamp"


def _build(mat):
    if not bridge.BLENDER_5 or mat.node_tree is None:
        mat.use_nodes = True
    nt = mat.node_tree
    if nt is None:  # (use_nodes made it: the checker still sees the None tested above)
        raise RuntimeError(f"The material {mat.name!r} has no node tree to build the planet's in")
    nt.nodes.clear()
    out = nt.nodes.new("ShaderNodeOutputMaterial")
    out.location = (600, 0)
    bsdf = nt.nodes.new("ShaderNodeBsdfPrincipled")
    bsdf.name = bsdf.label = "Planet BSDF"
    bsdf.location = (300, 0)
    bsdf.inputs["Roughness"].default_value = 0.8
    if "Specular IOR Level" in bsdf.inputs:  # a cloud deck barely reflects the sun
        bsdf.inputs["Specular IOR Level"].default_value = 0.15
    tex = nt.nodes.new("ShaderNodeTexImage")
    tex.name = tex.label = "Gas Giant Texture"
    tex.location = (-300, 0)
    tex.interpolation = "Linear"
    tex.extension = "EXTEND"
    uv = nt.nodes.new("ShaderNodeTexCoord")
    uv.location = (-550, 0)
    # a thin bright rim (atmosphere): the texture's colour, brighter at grazing angles
    weight = nt.nodes.new("ShaderNodeLayerWeight")
    weight.location = (-300, -300)
    weight.inputs["Blend"].default_value = 0.15
    mix = nt.nodes.new("ShaderNodeMix")
    mix.name = mix.label = "Rim"
    mix.data_type = "RGBA"
    mix.blend_type = "SCREEN"
    mix.location = (50, 0)
    links = nt.links
    links.new(uv.outputs["UV"], tex.inputs["Vector"])
    links.new(weight.outputs["Facing"], mix.inputs["Factor"])
    links.new(tex.outputs["Color"], mix.inputs["A"])
    links.new(tex.outputs["Color"], mix.inputs["B"])
    links.new(mix.outputs["Result"], bsdf.inputs["Base Color"])
    links.new(bsdf.outputs["BSDF"], out.inputs["Surface"])
    mat[STAMP_KEY] = MATERIAL_STAMP


def _set_clouds(mat, clouds: bool):
    """Cloud mode: the texture's alpha is the surface's alpha (a transparent cloud layer); else opaque."""
    nt = mat.node_tree
    bsdf = nt.nodes["Planet BSDF"]
    tex = nt.nodes["Gas Giant Texture"]
    for link in list(bsdf.inputs["Alpha"].links):
        nt.links.remove(link)
    bsdf.inputs["Alpha"].default_value = 1.0
    if clouds:
        nt.links.new(tex.outputs["Alpha"], bsdf.inputs["Alpha"])
    mat.surface_render_method = "BLENDED" if clouds else "DITHERED"
    mat["envfx_clouds"] = bool(clouds)


def ensure_planet_material(name: str, image, frames: int = 1, frame_start: int = 1, clouds: bool = False):
    """Material ``name`` showing ``image`` (rebuilt if its stamp is old); an image sequence plays ``frames``
    frames from ``frame_start`` and loops; ``clouds``: the image's alpha makes the surface transparent."""
    mat = bpy.data.materials.get(name)
    if mat is None or mat.library is not None:
        mat = bpy.data.materials.new(name)
    if mat.get(STAMP_KEY) != MATERIAL_STAMP or mat.node_tree is None or \
            mat.node_tree.nodes.get("Gas Giant Texture") is None:
        _build(mat)
    tree = mat.node_tree
    if tree is None:  # (_build made it: the checker still sees the None tested above)
        raise RuntimeError(f"The material {mat.name!r} has no node tree to build the planet's in")
    tex = cast(bpy.types.ShaderNodeTexImage, tree.nodes["Gas Giant Texture"])
    tex.image = image
    _set_clouds(mat, clouds)
    user = tex.image_user
    if frames > 1:
        user.frame_duration = frames
        user.frame_start = frame_start
        user.frame_offset = 0
        user.use_auto_refresh = True
        user.use_cyclic = True
    return mat
