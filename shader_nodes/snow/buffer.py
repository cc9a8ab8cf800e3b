"""Snow driven by a baked buffer: the "EnvFX Snow Buffer" group of each bake image offsets the snow by the baked
trails instead of the live ones."""

from __future__ import annotations

from typing import cast

import bpy

from .. import common
from .base import GROUND_KEEP, SnowBuilder

# --- snow driven by a baked buffer ------------------------------------------------------------------------

BUFFER_GROUP = "EnvFX Snow Buffer"
BUFFER_KIND = "snow_buffer"  # one group per bake image
BUFFER_VERSION = 2  # 2: the baked range's first and last frames (after the range the last one holds)
NO_START = -1.0e9  # "First Frame" of a bake of the final state only: it shows at every frame


def _build_buffer(tree):
    b, group_in, group_out, rgb, started, local_up = _buffer_read(tree)
    thick_node = b.named("snow_thickness")
    no_attr = b.math("SUBTRACT", 1.0, thick_node.outputs["Exists"], label="No Thickness")
    thickness = b.math("MULTIPLY_ADD", no_attr, 1.0e6, thick_node.outputs["Attribute"], label="Thickness")
    disp = b.math("MULTIPLY", b.math("MAXIMUM", rgb.outputs["Red"], b.math("MULTIPLY", thickness, -GROUND_KEEP),
                                     label="Baked Displacement"), started, label="Displacement")
    set_pos = b.node("GeometryNodeSetPosition", "Set Position")
    b.link(group_in.outputs[0], set_pos.inputs["Geometry"])
    b.link(b.vmath("SCALE", local_up.outputs[0], scale=disp, label="Offset Local"), set_pos.inputs["Offset"])
    b.link(set_pos.outputs[0], group_out.inputs[0])


def _buffer_read(tree):
    """The part of a bake's group that reads the buffer at each vertex's world XY: (builder, group input and
    output, the channels (a Separate Color node), whether the baked range has started, world up in object
    space)."""
    b = SnowBuilder(tree)
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    group_in = b.node("NodeGroupInput", "Group Input", location=(-1400, 0))
    group_out = b.node("NodeGroupOutput", "Group Output", location=(1400, 0))
    origin_x, origin_y, size = b.value("Origin X"), b.value("Origin Y"), b.value("Size", 1.0)
    self_info = b.node("GeometryNodeObjectInfo", "Self Info", transform_space="ORIGINAL")
    b.link(b.node("GeometryNodeSelfObject", "Self").outputs[0], self_info.inputs["Object"])
    matrix = self_info.outputs["Transform"]
    to_world = b.node("FunctionNodeTransformPoint", "To World")
    b.link(b.node("GeometryNodeInputPosition", "Position").outputs[0], to_world.inputs["Vector"])
    b.link(matrix, to_world.inputs["Transform"])
    sep = b.node("ShaderNodeSeparateXYZ", "P Sep")
    b.link(to_world.outputs[0], sep.inputs[0])
    u = b.math("DIVIDE", b.math("SUBTRACT", sep.outputs["X"], origin_x), size, label="U")
    v = b.math("DIVIDE", b.math("SUBTRACT", sep.outputs["Y"], origin_y), size, label="V")
    tex = b.node("GeometryNodeImageTexture", "Buffer", interpolation="Linear", extension="EXTEND")
    b.link(b.combine_xyz(u, v, 0.0, label="UV"), tex.inputs["Vector"])
    # the baked frames are first..last: after them the last one holds (the trails stay as the bake left them),
    # before them the snow is untouched (the bake's time starts at its first frame)
    first, last = b.value("First Frame", 1.0), b.value("Last Frame", 1.0)
    frame = b.node("GeometryNodeInputSceneTime", "Time").outputs["Frame"]
    b.link(b.math("MAXIMUM", b.math("MINIMUM", frame, last, label="Not After"), first, label="Baked Frame"),
           tex.inputs["Frame"])
    started = b.math("GREATER_THAN", b.math("ADD", frame, 0.5, label="Frame Rounded"), first, label="Started")
    rgb = b.node("FunctionNodeSeparateColor", "Channels")
    b.link(tex.outputs["Color"], rgb.inputs[0])
    invert = b.node("FunctionNodeInvertMatrix", "Invert")
    b.link(matrix, invert.inputs[0])
    local_up = b.node("FunctionNodeTransformDirection", "Up Local")
    b.link(invert.outputs[0], local_up.inputs["Transform"])
    local_up.inputs["Direction"].default_value = (0.0, 0.0, 1.0)
    return b, group_in, group_out, rgb, started, local_up


def _build_ripples(tree):
    """Water: the surface raised and lowered by the buffer's B (scene units) times "Scale" (the write-up's water,
    "a slight vertical offset"; the shading normals follow the rippled surface)."""
    b, group_in, group_out, rgb, started, local_up = _buffer_read(tree)
    height = b.math("MULTIPLY", b.math("MULTIPLY", rgb.outputs["Blue"], b.value("Scale", 1.0), label="Ripple"),
                    started, label="Ripple Height")
    set_pos = b.node("GeometryNodeSetPosition", "Set Position")
    b.link(group_in.outputs[0], set_pos.inputs["Geometry"])
    b.link(b.vmath("SCALE", local_up.outputs[0], scale=height, label="Offset Local"), set_pos.inputs["Offset"])
    b.link(set_pos.outputs[0], group_out.inputs[0])


def is_buffer_group(tree) -> bool:
    """Whether ``tree`` is a bake's buffer group."""
    return common.is_scene_group(tree, BUFFER_KIND, BUFFER_GROUP)


RIPPLES_GROUP = "EnvFX Water Ripples"
RIPPLES_KIND = "water_ripples"  # one group per bake image
RIPPLES_VERSION = 1


def is_ripples_group(tree) -> bool:
    """Whether ``tree`` is a bake's water-ripples group."""
    return common.is_scene_group(tree, RIPPLES_KIND, RIPPLES_GROUP)


def ensure_ripples_group(image, meta: dict, scale: float = 1.0) -> bpy.types.NodeTree:
    """The water-ripples group of one bake (``ensure_buffer_group``'s twin for the B channel): the surface moved
    along world up by B times ``scale``."""
    return _ensure_bake_group(image, meta, RIPPLES_GROUP, RIPPLES_KIND, RIPPLES_VERSION, _build_ripples,
                              is_ripples_group, {"Scale": scale})


def ensure_buffer_group(image, meta: dict) -> bpy.types.NodeTree:
    """The group of one bake: the snow offset by the R channel of the baked buffer ``image`` (one image or the
    sequence), placed with the bake's metadata (the follow window's origin is keyframed per frame). A sequence
    shows its last frame after the baked range and untouched snow before it. Each bake has its own group (the
    first "EnvFX Snow Buffer", others "EnvFX Snow Buffer (<image>)"), so two snow areas of a file can follow two
    bakes."""
    return _ensure_bake_group(image, meta, BUFFER_GROUP, BUFFER_KIND, BUFFER_VERSION, _build_buffer, is_buffer_group)


def _ensure_bake_group(image, meta, name, kind, version, build, is_kind, values=None):
    tree = next((t for t in bpy.data.node_groups if is_kind(t) and t.library is None
                 and "Buffer" in t.nodes and _image_socket(t).default_value == image), None)
    if tree is None:
        taken = bpy.data.node_groups.get(name) is not None
        tree = bpy.data.node_groups.new(
            f"{name} ({image.name})" if taken else name,
            "GeometryNodeTree")  # pyright: ignore[reportArgumentType] -- the 4.2 stubs list only "DUMMY" for the tree type
    tree[common.KIND_KEY] = kind
    common.rebuild_if_outdated(tree, str(version), build)
    _image_socket(tree).default_value = image
    for label, value in (values or {}).items():
        _value_socket(tree, label).default_value = float(value)
    _value_socket(tree, "Size").default_value = float(meta["world_size"])
    frames = meta["frames"]
    _value_socket(tree, "First Frame").default_value = float(frames[0]["frame"]) if meta["sequence"] else NO_START
    _value_socket(tree, "Last Frame").default_value = float(frames[-1]["frame"])
    if tree.animation_data is not None:
        tree.animation_data_clear()
    origins = {tuple(f["origin"]) for f in frames}
    for k, label in enumerate(("Origin X", "Origin Y")):
        sock = _value_socket(tree, label)
        sock.default_value = float(frames[-1]["origin"][k])
        if len(origins) > 1:
            for f in frames:
                sock.default_value = float(f["origin"][k])
                sock.keyframe_insert("default_value", frame=f["frame"])
            for fc in common.action_fcurves(tree):
                for kp in fc.keyframe_points:
                    kp.interpolation = "CONSTANT"
    return tree


def _image_socket(tree: bpy.types.NodeTree) -> bpy.types.NodeSocketImage:
    """The image socket of a bake group's "Buffer" node."""
    return cast(bpy.types.NodeSocketImage, tree.nodes["Buffer"].inputs["Image"])


def _value_socket(tree: bpy.types.NodeTree, label: str) -> bpy.types.NodeSocketFloat:
    """The output of a bake group's Value node ``label``."""
    return cast(bpy.types.NodeSocketFloat, tree.nodes[label].outputs[0])
