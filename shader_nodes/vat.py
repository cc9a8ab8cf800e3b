"""Geometry-nodes group "EnvFX VAT Player": plays a baked vertex animation texture on its proxy mesh, as a game's
vertex shader does (``core.vat`` holds the format; the tests hold this group to the original animation).

Per vertex: the point attribute "EnvFX_VAT_texel" (the texel of frame 0, as the UV map "EnvFX_VAT", whose corners
of a vertex share it, holds it for the engines; a proxy without it, made by an older EnvFX: the UV map) moved down by
``frame * Frame V Step`` addresses the vertex's texel in the baked frame the scene's frame falls in
(``(frame - Frame Start) / Step``, floored; wrapped with Loop, else held at the first and last frame). An Image
Texture node with Closest interpolation reads it, the stored remap decodes it (``min + texel * (max - min)``; 0
and 1 for float textures), and the engine-space offset is turned back into Blender's axes and units (the rows
``Blender X/Y/Z``: ``x = dot(Blender X, offset)``...) and added to the rest position. Normals (a normal texture,
or packed into the position texture's alpha) are decoded the same way and stored as the point attribute
"EnvFX_VAT_normal" (Blender computes the shading normals from the positions; the attribute is what the engines
get, and what the round-trip test reads).

One group serves every proxy: the per-bake numbers are modifier inputs.
"""

from __future__ import annotations

import bpy

from ..core import vat as core_vat
from . import common

GROUP_NAME = "EnvFX VAT Player"
VERSION = 2
NORMAL_ATTR = "EnvFX_VAT_normal"
TEXEL_ATTR = "EnvFX_VAT_texel"  # the UV of frame 0 per vertex (a point attribute: vertices in no face have it too)
NORMAL_MODES = {"NONE": 0, "TEXTURE": 1, "PACKED": 2}

# (name, socket type, default): the modifier inputs, set per proxy by ``player_inputs``
INPUTS = (
    ("Positions", "NodeSocketImage", None),
    ("Normals", "NodeSocketImage", None),
    ("Frame Start", "NodeSocketFloat", 1.0),
    ("Step", "NodeSocketFloat", 1.0),
    ("Frames", "NodeSocketFloat", 2.0),
    ("Loop", "NodeSocketBool", False),
    ("Frame V Step", "NodeSocketFloat", 0.5),
    ("Remap Min", "NodeSocketVector", (0.0, 0.0, 0.0)),
    ("Remap Span", "NodeSocketVector", (1.0, 1.0, 1.0)),
    ("Blender X", "NodeSocketVector", (1.0, 0.0, 0.0)),
    ("Blender Y", "NodeSocketVector", (0.0, 1.0, 0.0)),
    ("Blender Z", "NodeSocketVector", (0.0, 0.0, 1.0)),
    ("Normal Mode", "NodeSocketInt", 0),
    ("Normal Min", "NodeSocketFloat", 0.0),
    ("Normal Span", "NodeSocketFloat", 1.0),
    ("Pack Scale", "NodeSocketFloat", 1.0),
    ("Pack Base", "NodeSocketFloat", 2048.0),
)


def _build(tree):
    b = common.Builder(tree)
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    for name, kind, default in INPUTS:
        common.socket(tree, name, "INPUT", kind, default=default)
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    gi = b.node("NodeGroupInput", "Group Input", location=(-1600, 0))
    go = b.node("NodeGroupOutput", "Group Output", location=(1800, 0))
    inp = gi.outputs

    # the baked frame the scene's frame falls in
    time = b.node("GeometryNodeInputSceneTime", "Scene Time", location=(-1400, 400))
    rel = b.math("DIVIDE", b.math("SUBTRACT", time.outputs["Frame"], inp["Frame Start"]), inp["Step"])
    index = b.math("FLOOR", b.math("ADD", rel, 1e-4))
    wrapped = b.math("FLOORED_MODULO", index, inp["Frames"], label="Wrap")
    last = b.math("SUBTRACT", inp["Frames"], 1.0)
    held = b.math("MINIMUM", b.math("MAXIMUM", index, 0.0), last, label="Hold")
    frame = b.switch("Loop?", inp["Loop"], wrapped, held, input_type="FLOAT")

    # the texel: the UV of frame 0 (the point attribute, which a vertex in no face has too; a proxy made before it
    # existed: the UV map), moved down by whole frames
    uv = b.node("GeometryNodeInputNamedAttribute", "VAT UV", data_type="FLOAT_VECTOR")
    uv.inputs["Name"].default_value = core_vat.UV_NAME
    texel = b.node("GeometryNodeInputNamedAttribute", "VAT Texel", data_type="FLOAT_VECTOR")
    texel.inputs["Name"].default_value = TEXEL_ATTR
    start = b.switch("Texel?", texel.outputs["Exists"], texel.outputs["Attribute"], uv.outputs["Attribute"],
                     input_type="VECTOR")
    shift = b.combine_xyz(0.0, b.math("MULTIPLY", frame, inp["Frame V Step"]), 0.0, label="Frame Shift")
    coord = b.vmath("SUBTRACT", start, shift)

    def sample(image, label):
        tex = b.node("GeometryNodeImageTexture", label, interpolation="Closest", extension="EXTEND")
        b.link(image, tex.inputs["Image"])
        b.link(coord, tex.inputs["Vector"])
        return tex

    pos_tex = sample(inp["Positions"], "Position Texture")
    offset = b.vmath("ADD", b.vmath("MULTIPLY", pos_tex.outputs["Color"], inp["Remap Span"]), inp["Remap Min"])

    def to_blender(vector):
        return b.combine_xyz(*(b.vmath("DOT_PRODUCT", inp[f"Blender {a}"], vector) for a in "XYZ"))

    set_pos = b.node("GeometryNodeSetPosition", "Set Position")
    b.link(inp["Geometry"], set_pos.inputs["Geometry"])
    b.link(to_blender(offset), set_pos.inputs["Offset"])

    # normals: a texture, or packed into the position texture's alpha (octahedral, two integers in one value)
    nrm_tex = sample(inp["Normals"], "Normal Texture")
    from_texture = b.vmath("ADD", b.vmath("SCALE", nrm_tex.outputs["Color"], scale=inp["Normal Span"]),
                           b.combine_xyz(inp["Normal Min"], inp["Normal Min"], inp["Normal Min"]))
    packed = b.math("ROUND", b.math("MULTIPLY", pos_tex.outputs["Alpha"], inp["Pack Scale"]))
    hi = b.math("FLOOR", b.math("DIVIDE", packed, inp["Pack Base"]))
    lo = b.math("SUBTRACT", packed, b.math("MULTIPLY", hi, inp["Pack Base"]))
    top = b.math("SUBTRACT", inp["Pack Base"], 1.0)
    ox = b.math("SUBTRACT", b.math("MULTIPLY", b.math("DIVIDE", hi, top), 2.0), 1.0)
    oy = b.math("SUBTRACT", b.math("MULTIPLY", b.math("DIVIDE", lo, top), 2.0), 1.0)
    ax, ay = b.math("ABSOLUTE", ox), b.math("ABSOLUTE", oy)
    oz = b.math("SUBTRACT", b.math("SUBTRACT", 1.0, ax), ay)
    below = b.math("LESS_THAN", oz, 0.0)
    fx = b.math("MULTIPLY", b.math("SUBTRACT", 1.0, ay), b.math("SIGN", ox))
    fy = b.math("MULTIPLY", b.math("SUBTRACT", 1.0, ax), b.math("SIGN", oy))
    nx = b.node("ShaderNodeMix", "Fold X", data_type="FLOAT")
    ny = b.node("ShaderNodeMix", "Fold Y", data_type="FLOAT")
    for mix, keep, fold in ((nx, ox, fx), (ny, oy, fy)):
        b.link(below, mix.inputs["Factor"])
        b.link(keep, mix.inputs["A"])
        b.link(fold, mix.inputs["B"])
    from_packed = b.combine_xyz(nx.outputs["Result"], ny.outputs["Result"], oz)
    is_packed = b.compare("EQUAL", inp["Normal Mode"], NORMAL_MODES["PACKED"], label="Packed?")
    engine_normal = b.switch("Normal Source", is_packed, from_packed, from_texture, input_type="VECTOR")
    normal = b.vmath("NORMALIZE", to_blender(engine_normal))

    store = b.node("GeometryNodeStoreNamedAttribute", "Store Normal", data_type="FLOAT_VECTOR", domain="POINT")
    store.inputs["Name"].default_value = NORMAL_ATTR
    b.link(set_pos.outputs["Geometry"], store.inputs["Geometry"])
    b.link(normal, store.inputs["Value"])
    has_normals = b.compare("GREATER_THAN", inp["Normal Mode"], 0, label="Normals?")
    out = b.switch("With Normals", has_normals, store.outputs["Geometry"], set_pos.outputs["Geometry"],
                   input_type="GEOMETRY")
    b.link(out, go.inputs["Geometry"])


def ensure_vat_player() -> bpy.types.NodeTree:
    """The group "EnvFX VAT Player", built if missing and rebuilt in place when its stamp is older than the code."""
    return common.ensure_tree(GROUP_NAME, "GeometryNodeTree", f"vat-player-{VERSION}", _build)


def is_player(tree) -> bool:
    return tree is not None and tree.bl_idname == "GeometryNodeTree" and \
        str(tree.get(common.STAMP_KEY, "")).startswith("vat-player-")


def player_inputs(meta: dict) -> dict:
    """{input name: value} of the player for a bake's JSON (``core.vat.encode_bake``'s meta); images not
    included."""
    tex = meta["textures"]["position"]
    remap = tex["remap"]
    lo = remap["min"] if remap else [0.0, 0.0, 0.0]
    span = [hi - mn for hi, mn in zip(remap["max"], remap["min"])] if remap else [1.0, 1.0, 1.0]
    engine = meta["coordinate_system"]["engine"]
    rows = core_vat.from_engine_axes(engine, core_vat._unit_scale(meta)) if engine != "BLENDER" else \
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    values = {
        "Frame Start": float(meta["frame_start"]),
        "Step": float(meta["step"]),
        "Frames": float(meta["frames"]),
        "Loop": bool(meta["loop"]),
        "Frame V Step": float(meta["layout"]["frame_v_step"]),
        "Remap Min": tuple(float(v) for v in lo),
        "Remap Span": tuple(float(v) for v in span),
        "Blender X": tuple(float(v) for v in rows[0]),
        "Blender Y": tuple(float(v) for v in rows[1]),
        "Blender Z": tuple(float(v) for v in rows[2]),
        "Normal Mode": NORMAL_MODES[meta["normals"]],
        "Normal Min": 0.0,
        "Normal Span": 1.0,
        "Pack Scale": 1.0,
        "Pack Base": 2048.0,
    }
    if meta["normals"] == "TEXTURE" and meta["textures"]["normal"]["remap"]:
        values["Normal Min"] = -1.0
        values["Normal Span"] = 2.0
    if meta["normals"] == "PACKED":
        bits = tex["packed_normal"]["bits"]
        values["Pack Base"] = float(2 ** bits)
        values["Pack Scale"] = 65535.0 if meta["encoding"] == "PNG16" else 1.0
    return values


def set_player_inputs(mod, meta: dict, positions, normals=None):
    """Point a player modifier at a bake: its images and the numbers of its JSON."""
    tree = mod.node_group
    values = dict(player_inputs(meta), Positions=positions, Normals=normals)
    for name, value in values.items():
        mod[common.input_identifier(tree, name)] = value


def refresh_after_load():
    """A file saved by an older EnvFX: its player group is rebuilt in place, and the proxies keep playing their
    bakes: a rebuilt group's inputs get new identifiers, which the modifiers key their values by, so each player
    modifier's values are read by input name before and written back after."""
    tree = bpy.data.node_groups.get(GROUP_NAME)
    if tree is None or not is_player(tree) or tree.get(common.STAMP_KEY) == f"vat-player-{VERSION}" \
            or tree.library is not None:
        return
    interface = tree.interface
    names = [item.name for item in (interface.items_tree if interface is not None else ())
             if isinstance(item, bpy.types.NodeTreeInterfaceSocket) and item.in_out == "INPUT"
             and item.socket_type != "NodeSocketGeometry"]
    kept = []
    for obj in bpy.data.objects:
        for mod in obj.modifiers:
            if mod.type == "NODES" and getattr(mod, "node_group", None) == tree and obj.library is None:
                values = {n: mod.get(common.input_identifier(tree, n)) for n in names}
                # (plain copies: a vector's value is a view of the modifier's storage, which the rebuild frees)
                kept.append((mod, {n: tuple(v) if v is not None and hasattr(v, "to_list") else v
                                   for n, v in values.items()}))
    ensure_vat_player()
    for mod, values in kept:
        for name, value in values.items():
            if value is not None and name in {n for n, _kind, _default in INPUTS}:
                mod[common.input_identifier(tree, name)] = value
