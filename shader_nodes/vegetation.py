"""The shader-node groups "EnvFX Vegetation" and "EnvFX Vegetation Surface" (Eevee and Cycles): what the
Horizon Zero Dawn vegetation shader does with the wind bake's vertex colour.

"EnvFX Vegetation" sits in front of the material's BSDF. Inputs Albedo, Mask (the colorize mask), Normal and
Normal Linked (1 when the material had a normal of its own); outputs:

- Base Color: the albedo colorized ("EnvFX Colorize", when the scene's Colorize is on) times the AO the wind bake
  stored in the A channel of ``EnvFX_Wind`` (the talk's pre-computed AO, multiplied into the diffuse);
- Normal: the normal, for grass (objects with Colorize Per Vertex, when the scene's Grass Normals is on) turned
  towards the camera: its camera-space Z made to face the camera (the talk: "the abs on the Z component of our
  view space normal");
- Translucency and Translucency Normal: the light through the leaves, base colour times the amount times the leaf
  mask (the wind data: R above 0 is a leaf; a texture; or everything), and the normal the Translucent BSDF uses,
  turned from the leaf's own towards the viewer by Diffusion.

"EnvFX Vegetation Surface" sits between the material's surface shader and its output: the shader plus a
Translucent BSDF of that colour and normal.
"""

from __future__ import annotations

import bpy

from . import colorize as colorize_nodes
from . import common

GROUP_NAME = "EnvFX Vegetation"
SURFACE_NAME = "EnvFX Vegetation Surface"
VERSION = 2
SURFACE_VERSION = "1"
WIND_ATTR = "EnvFX_Wind"  # written by the wind bake (operators/wind.py WIND_ATTR)
LEAF_GAIN = 20.0  # the wind data's R (0 where a leaf attaches, 1 at its tip) to a leaf mask: a leaf from R 0.05


def stamp_of(scene) -> str:
    s = scene.envfx.vegetation
    leaf = s.leaf_texture.name if s.leaf_texture is not None else ""
    col = colorize_nodes.stamp_of(scene) if s.colorize else "off"
    return (f"{VERSION}|{col}|{round(s.translucency, 6)}|{round(s.diffusion, 6)}|{s.leaf_split}|{leaf}|"
            f"{int(s.grass_normal)}")


def ensure_vegetation(scene) -> bpy.types.NodeTree:
    if scene.envfx.vegetation.colorize:
        colorize_nodes.ensure_colorize(scene)
    return common.ensure_tree(GROUP_NAME, "ShaderNodeTree", stamp_of(scene), lambda tree: _build(tree, scene))


def ensure_surface() -> bpy.types.NodeTree:
    return common.ensure_tree(SURFACE_NAME, "ShaderNodeTree", SURFACE_VERSION, _build_surface)


def _build_surface(tree):
    common.socket(tree, "Shader", "INPUT", "NodeSocketShader")
    common.socket(tree, "Translucency", "INPUT", "NodeSocketColor", default=(0.0, 0.0, 0.0, 1.0))
    common.socket(tree, "Translucency Normal", "INPUT", "NodeSocketVector")
    common.socket(tree, "Shader", "OUTPUT", "NodeSocketShader")
    b = common.Builder(tree)
    gi = b.node("NodeGroupInput", "Group Input", location=(-400, 0))
    go = b.node("NodeGroupOutput", "Group Output", location=(400, 0))
    tr = b.node("ShaderNodeBsdfTranslucent", "Translucent", location=(-100, -200))
    b.link(gi.outputs["Translucency"], tr.inputs["Color"])
    b.link(gi.outputs["Translucency Normal"], tr.inputs["Normal"])
    add = b.node("ShaderNodeAddShader", "Add", location=(150, 0))
    b.link(gi.outputs["Shader"], add.inputs[0])
    b.link(tr.outputs["BSDF"], add.inputs[1])
    b.link(add.outputs["Shader"], go.inputs["Shader"])


def _build(tree, scene):
    s = scene.envfx.vegetation
    by_id = colorize_nodes.by_id
    common.socket(tree, "Albedo", "INPUT", "NodeSocketColor", default=(0.5, 0.5, 0.5, 1.0),
                  description="The material's albedo (neutralised to mid-grey when colorized)")
    common.socket(tree, "Mask", "INPUT", "NodeSocketFloat", default=1.0, min_value=0.0, max_value=1.0,
                  description="Colorize mask: 1 colorize, 0 keep the albedo")
    common.socket(tree, "Normal", "INPUT", "NodeSocketVector", description="The material's own normal, if any")
    common.socket(tree, "Normal Linked", "INPUT", "NodeSocketFloat", default=0.0, min_value=0.0, max_value=1.0,
                  description="1: use Normal; 0: the surface's normal")
    common.socket(tree, "Base Color", "OUTPUT", "NodeSocketColor")
    common.socket(tree, "Normal", "OUTPUT", "NodeSocketVector")
    common.socket(tree, "Translucency", "OUTPUT", "NodeSocketColor")
    common.socket(tree, "Translucency Normal", "OUTPUT", "NodeSocketVector")
    b = common.Builder(tree)
    gi = b.node("NodeGroupInput", "Group Input", location=(-1200, 0))
    go = b.node("NodeGroupOutput", "Group Output", location=(800, 0))

    if s.colorize:
        col = b.node("ShaderNodeGroup", "Colorize", location=(-900, 200))
        col.node_tree = bpy.data.node_groups[colorize_nodes.GROUP_NAME]
        b.link(gi.outputs["Albedo"], col.inputs["Albedo"])
        b.link(gi.outputs["Mask"], col.inputs["Mask"])
        colour = col.outputs["Color"]
    else:
        colour = gi.outputs["Albedo"]
    wind = b.node("ShaderNodeAttribute", "Wind Data", location=(-900, -100), attribute_type="GEOMETRY",
                  attribute_name=WIND_ATTR)
    ao = b.node("ShaderNodeMix", "AO", location=(-600, 200), data_type="RGBA", blend_type="MULTIPLY")
    by_id(ao.inputs, "Factor_Float").default_value = 1.0
    b.link(colour, by_id(ao.inputs, "A_Color"))
    b.link(wind.outputs["Alpha"], by_id(ao.inputs, "B_Color"))  # a float into a colour: grey AO
    base = by_id(ao.outputs, "Result_Color")
    b.link(base, go.inputs["Base Color"])

    # leaf / bark
    if s.leaf_split == "WIND":
        split = b.node("ShaderNodeSeparateColor", "Wind RGB", location=(-700, -300))
        b.link(wind.outputs["Color"], split.inputs["Color"])
        leaf = b.math("MULTIPLY", split.outputs[0], LEAF_GAIN, label="Leaf From R", use_clamp=True)
    elif s.leaf_split == "TEXTURE" and s.leaf_texture is not None:
        tex = b.node("ShaderNodeTexImage", "Leaf Texture", location=(-900, -400))
        tex.image = s.leaf_texture
        split = b.node("ShaderNodeSeparateColor", "Leaf Value", location=(-700, -400))
        b.link(tex.outputs["Color"], split.inputs["Color"])
        leaf = split.outputs[0]
    else:
        leaf = b.value("Leaf", 1.0)
    amount = b.math("MULTIPLY", leaf, float(s.translucency), label="Translucency Amount")
    trans = b.node("ShaderNodeMix", "Translucency", location=(-200, -200), data_type="RGBA", blend_type="MIX")
    b.link(amount, by_id(trans.inputs, "Factor_Float"))
    by_id(trans.inputs, "A_Color").default_value = (0.0, 0.0, 0.0, 1.0)
    b.link(base, by_id(trans.inputs, "B_Color"))
    b.link(by_id(trans.outputs, "Result_Color"), go.inputs["Translucency"])

    # normal: the material's or the surface's; grass turned towards the camera
    geo = b.node("ShaderNodeNewGeometry", "Geometry", location=(-900, -700))
    nmix = b.node("ShaderNodeMix", "Which Normal", location=(-700, -700), data_type="VECTOR")
    b.link(gi.outputs["Normal Linked"], by_id(nmix.inputs, "Factor_Float"))
    b.link(geo.outputs["Normal"], by_id(nmix.inputs, "A_Vector"))
    b.link(gi.outputs["Normal"], by_id(nmix.inputs, "B_Vector"))
    normal = by_id(nmix.outputs, "Result_Vector")
    if s.grass_normal:
        grass = b.node("ShaderNodeAttribute", "Grass", location=(-900, -900), attribute_type="OBJECT",
                       attribute_name=colorize_nodes.PER_VERTEX_ATTR)
        to_cam = b.node("ShaderNodeVectorTransform", "To Camera", location=(-500, -700), vector_type="NORMAL",
                        convert_from="WORLD", convert_to="CAMERA")
        b.link(normal, to_cam.inputs["Vector"])
        xyz = b.node("ShaderNodeSeparateXYZ", "Camera Normal", location=(-300, -700))
        b.link(to_cam.outputs["Vector"], xyz.inputs["Vector"])
        # Blender's camera space looks along +Z: a normal facing the camera has Z < 0, so the talk's abs(Z) in a
        # view space looking along -Z is -abs(Z) here
        z = b.math("MINIMUM", xyz.outputs["Z"], b.math("MULTIPLY", xyz.outputs["Z"], -1.0), label="Facing Z")
        zmix = b.node("ShaderNodeMix", "Grass Z", location=(-100, -800), data_type="FLOAT")
        b.link(grass.outputs["Fac"], by_id(zmix.inputs, "Factor_Float"))
        b.link(xyz.outputs["Z"], by_id(zmix.inputs, "A_Float"))
        b.link(z, by_id(zmix.inputs, "B_Float"))
        cam = b.combine_xyz(xyz.outputs["X"], xyz.outputs["Y"], by_id(zmix.outputs, "Result_Float"))
        back = b.node("ShaderNodeVectorTransform", "To World", location=(100, -700), vector_type="NORMAL",
                      convert_from="CAMERA", convert_to="WORLD")
        b.link(cam, back.inputs["Vector"])
        normal = b.vmath("NORMALIZE", back.outputs["Vector"], label="Grass Normal")
    b.link(normal, go.inputs["Normal"])
    tmix = b.node("ShaderNodeMix", "Diffusion", location=(300, -500), data_type="VECTOR")
    by_id(tmix.inputs, "Factor_Float").default_value = float(s.diffusion)
    b.link(normal, by_id(tmix.inputs, "A_Vector"))
    b.link(geo.outputs["Incoming"], by_id(tmix.inputs, "B_Vector"))
    tn = b.vmath("NORMALIZE", by_id(tmix.outputs, "Result_Vector"), label="Translucency Normal")
    b.link(tn, go.inputs["Translucency Normal"])


def is_vegetation_node(node) -> bool:
    return node.bl_idname == "ShaderNodeGroup" and node.node_tree is not None and \
        node.node_tree.name in (GROUP_NAME, SURFACE_NAME)
