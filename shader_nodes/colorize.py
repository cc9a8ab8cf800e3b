"""The shader-node group "EnvFX Colorize" (Eevee and Cycles): the Horizon Zero Dawn colorization, matching
``core.colorize.colorize``.

Inputs Albedo (the neutralised albedo) and Mask (1: colorize, 0: keep the albedo); output Color. Inside:

- where: the object's origin (Object Info > Location), or the shading point (Geometry > Position) for an object
  whose ``object.envfx.colorize_per_vertex`` is on (grass: per-vertex variation; the talk samples grass per
  vertex, here each point of a blade reads the world data where it is, which is the same colour wherever the
  world data is smoother than a blade);
- the world-data value: the red channel of the grey-scale world-data image laid over the scene's region,
  filtered linearly and clamped at the edges (built from four Closest lookups: no mipmaps, the same in Eevee and
  Cycles);
- the ecotope: the scene's ecotope map sampled at the same place (Closest), or the scene's ecotope index;
- the band: ``object.envfx.colorize_band`` (an Object attribute, so each object sharing a material has its own);
- the colorize set's texel (row of ecotope and band, the value along it), laid over the albedo with Mix > Overlay
  through the mask.

The images and the region are the scene's (``scene.envfx.vegetation``); ``ensure_colorize(scene)`` rebuilds the
group in place when they change (materials keep their links to it). One group per file: materials are shared
between scenes.
"""

from __future__ import annotations

import bpy

from ..core import colorize as core_colorize
from . import common

GROUP_NAME = "EnvFX Colorize"
VERSION = 2
BAND_ATTR = "envfx.colorize_band"          # Object attribute paths (RNA paths on the object)
PER_VERTEX_ATTR = "envfx.colorize_per_vertex"


def _name(image):
    return image.name if image is not None else ""


def stamp_of(scene) -> str:
    s = scene.envfx.vegetation
    region = (round(s.region_min[0], 6), round(s.region_min[1], 6), round(s.region_size, 6))
    count = set_count(s.colorize_set)
    return (f"{VERSION}|{_name(s.colorize_set)}|{count}|{_size(s.colorize_set)}|{_name(s.world_data)}|"
            f"{_size(s.world_data)}|{_name(s.ecotope_map)}|{s.ecotope}|{region}")


def set_count(image) -> int:
    """How many ecotope textures a colorize set image holds (its height in bands), at least 1."""
    if image is None or image.size[1] < core_colorize.BANDS:
        return 1
    return max(1, image.size[1] // core_colorize.BANDS)


def ensure_colorize(scene) -> bpy.types.NodeTree:
    """The "EnvFX Colorize" group with ``scene``'s colorize set, world data, ecotope and region."""
    return common.ensure_tree(GROUP_NAME, "ShaderNodeTree", stamp_of(scene), lambda tree: _build(tree, scene))


def by_id(sockets, identifier: str):
    """The socket of that identifier (the Mix node has an A, B and Result per data type, one name for all)."""
    return next(s for s in sockets if s.identifier == identifier)


def _image_node(b, label, image, location):
    node = b.node("ShaderNodeTexImage", label, location=location)
    node.image = image
    node.interpolation = "Closest"
    node.extension = "EXTEND"
    return node


def _size(image):
    return (max(int(image.size[0]), 1), max(int(image.size[1]), 1)) if image is not None else (1, 1)


def _lerp(b, label, a, c, t):
    mix = b.node("ShaderNodeMix", label, data_type="RGBA", blend_type="MIX")
    mix.clamp_factor = False
    b.feed(by_id(mix.inputs, "Factor_Float"), t)
    b.link(a, by_id(mix.inputs, "A_Color"))
    b.link(c, by_id(mix.inputs, "B_Color"))
    return by_id(mix.outputs, "Result_Color")


def _texel_pair(b, label, coord, count):
    """Along one axis of ``count`` texels: (the first texel's centre, the next one's, the weight of the next):
    ``x = coord * count - 0.5``, texels floor(x) and floor(x) + 1 (Extend clamps them at the edges)."""
    x = b.math("MULTIPLY_ADD", coord, float(count), -0.5, label=f"{label} Texel")
    x0 = b.math("FLOOR", x)
    t = b.math("SUBTRACT", x, x0, label=f"{label} Weight")
    c0 = b.math("MULTIPLY_ADD", x0, 1.0 / count, 0.5 / count)
    c1 = b.math("MULTIPLY_ADD", x0, 1.0 / count, 1.5 / count)
    return c0, c1, t


def _linear(b, label, image, u, v, rows_only=False):
    """Linear filtering (as ``core.colorize.sample_linear``) made of Closest lookups: the same in Eevee and Cycles,
    with no mipmaps and no derivatives (Eevee's Linear picks a coarser mip level along triangle edges where the
    texture coordinate is the same for the whole object, which is exactly the per-object case)."""
    w, h = _size(image)
    u0, u1, tu = _texel_pair(b, label + " U", u, w)
    if rows_only:  # v is a row's centre already: two lookups along the row
        vs = [(v, None)]
    else:
        v0, v1, tv = _texel_pair(b, label + " V", v, h)
        vs = [(v0, None), (v1, tv)]
    rows = []
    for vv, _ in vs:
        pair = []
        for uu in (u0, u1):
            node = _image_node(b, label, image, None)
            b.link(b.combine_xyz(uu, vv, 0.0), node.inputs["Vector"])
            pair.append(node.outputs["Color"])
        rows.append(_lerp(b, label + " Along U", pair[0], pair[1], tu))
    if len(rows) == 1:
        return rows[0]
    return _lerp(b, label + " Along V", rows[0], rows[1], vs[1][1])


def _build(tree, scene):
    s = scene.envfx.vegetation
    common.socket(tree, "Albedo", "INPUT", "NodeSocketColor", default=(0.5, 0.5, 0.5, 1.0),
                  description="The albedo, neutralised to mid-grey (Neutralise Albedo)")
    common.socket(tree, "Mask", "INPUT", "NodeSocketFloat", default=1.0, min_value=0.0, max_value=1.0,
                  description="1: colorize, 0: keep the albedo (a mask texture keeps parts as they are)")
    common.socket(tree, "Color", "OUTPUT", "NodeSocketColor")
    b = common.Builder(tree)
    gi = b.node("NodeGroupInput", "Group Input", location=(-1400, 0))
    go = b.node("NodeGroupOutput", "Group Output", location=(600, 0))

    # where: the origin, or each shading point for per-vertex objects
    info = b.node("ShaderNodeObjectInfo", "Object Info", location=(-1400, -300))
    geo = b.node("ShaderNodeNewGeometry", "Geometry", location=(-1400, -500))
    per_vertex = b.node("ShaderNodeAttribute", "Per Vertex", location=(-1400, -700), attribute_type="OBJECT",
                        attribute_name=PER_VERTEX_ATTR)
    where = b.node("ShaderNodeMix", "Where", location=(-1200, -400), data_type="VECTOR")
    b.link(per_vertex.outputs["Fac"], by_id(where.inputs, "Factor_Float"))
    b.link(info.outputs["Location"], by_id(where.inputs, "A_Vector"))
    b.link(geo.outputs["Position"], by_id(where.inputs, "B_Vector"))

    # world-space XY -> the world-data texture's UV over the region
    size = max(float(s.region_size), 1e-6)
    corner = (s.region_min[0], s.region_min[1], 0.0)
    shifted = b.vmath("SUBTRACT", by_id(where.outputs, "Result_Vector"), corner, label="Region")
    uv = b.vmath("SCALE", shifted, scale=1.0 / size, label="Region UV")
    uv_xyz = b.node("ShaderNodeSeparateXYZ", "Region UV XY", location=(-900, -300))
    b.link(uv, uv_xyz.inputs["Vector"])
    world = _linear(b, "World Data", s.world_data, uv_xyz.outputs["X"], uv_xyz.outputs["Y"])
    split = b.node("ShaderNodeSeparateColor", "World Value", location=(-600, -300))
    b.link(world, split.inputs["Color"])
    value = b.math("MINIMUM", b.math("MAXIMUM", split.outputs[0], 0.0), 1.0, label="Value")

    # the ecotope: from the map, or the scene's index
    count = set_count(s.colorize_set)
    if s.ecotope_map is not None:
        emap = _image_node(b, "Ecotope Map", s.ecotope_map, (-800, -600))
        b.link(uv, emap.inputs["Vector"])
        esplit = b.node("ShaderNodeSeparateColor", "Ecotope Value", location=(-600, -600))
        b.link(emap.outputs["Color"], esplit.inputs["Color"])
        e = b.math("MULTIPLY_ADD", b.math("MINIMUM", b.math("MAXIMUM", esplit.outputs[0], 0.0), 1.0),
                   float(count - 1), 0.5)
        ecotope = b.math("FLOOR", e, label="Ecotope")
    else:
        ecotope = b.value("Ecotope", float(min(max(s.ecotope, 0), count - 1)))

    # the band: per object
    band_attr = b.node("ShaderNodeAttribute", "Band", location=(-800, -900), attribute_type="OBJECT",
                       attribute_name=BAND_ATTR)
    band = b.math("MINIMUM", b.math("MAXIMUM", b.math("ROUND", band_attr.outputs["Fac"]), 0.0),
                  float(core_colorize.BANDS - 1), label="Band 0-7")
    row = b.math("MULTIPLY_ADD", ecotope, float(core_colorize.BANDS), band, label="Row")
    rows = float(count * core_colorize.BANDS)
    # Blender's v runs from the bottom row up; a row's centre, so no blending across rows
    v = b.math("MULTIPLY_ADD", row, -1.0 / rows, 1.0 - 0.5 / rows, label="Row V")
    colour = _linear(b, "Colorize Set", s.colorize_set, value, v, rows_only=True)

    mix = b.node("ShaderNodeMix", "Overlay", location=(300, 0), data_type="RGBA", blend_type="OVERLAY")
    mix.clamp_factor = True
    b.link(gi.outputs["Mask"], by_id(mix.inputs, "Factor_Float"))
    b.link(gi.outputs["Albedo"], by_id(mix.inputs, "A_Color"))
    b.link(colour, by_id(mix.inputs, "B_Color"))
    b.link(by_id(mix.outputs, "Result_Color"), go.inputs["Color"])
