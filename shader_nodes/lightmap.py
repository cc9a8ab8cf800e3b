"""The light map on the ground: a shader node group that multiplies a colour by the baked light map, read at the
shading point's world x, y over the map's region (so any ground mesh shows it, whatever its UVs), and the step that
puts the group in front of the ground material's base colour. Built by ``ensure_lightmap_group``."""

from __future__ import annotations

import bpy

from . import common

GROUP_STAMP = "lightmap-group-1"
GROUP_PREFIX = "EnvFX Light Map"
NODE_NAME = "EnvFX Light Map"
GROUND_MATERIAL = "EnvFX Light Map Ground"


def group_name(ground_name: str) -> str:
    return f"{GROUP_PREFIX} ({ground_name})"


def _build(tree):
    common.socket(tree, "Color", "INPUT", "NodeSocketColor", default=(1.0, 1.0, 1.0, 1.0),
                  description="The colour the light map multiplies (the ground's base colour)")
    common.socket(tree, "Color", "OUTPUT", "NodeSocketColor", description="The colour times the light")
    common.socket(tree, "Light", "OUTPUT", "NodeSocketColor", description="The light map's light, scaled so 1 is the "
                  "PNG's white")
    nodes, links = tree.nodes, tree.links
    gin = nodes.new("NodeGroupInput")
    gin.location = (-900, 0)
    gout = nodes.new("NodeGroupOutput")
    gout.location = (600, 0)
    geo = nodes.new("ShaderNodeNewGeometry")
    geo.location = (-900, -250)
    sep = nodes.new("ShaderNodeSeparateXYZ")
    sep.location = (-700, -250)
    links.new(geo.outputs["Position"], sep.inputs["Vector"])
    comb = nodes.new("ShaderNodeCombineXYZ")
    comb.location = (-250, -250)
    for k, axis in enumerate(("X", "Y")):
        rng = nodes.new("ShaderNodeMapRange")
        rng.name = rng.label = f"Region {axis}"
        rng.location = (-500, -150 - 250 * k)
        rng.clamp = False
        links.new(sep.outputs[axis], rng.inputs["Value"])
        rng.inputs["To Min"].default_value = 0.0
        rng.inputs["To Max"].default_value = 1.0
        links.new(rng.outputs["Result"], comb.inputs[axis])
    tex = nodes.new("ShaderNodeTexImage")
    tex.name = tex.label = "Light Map"
    tex.location = (-50, -250)
    tex.interpolation = "Linear"
    tex.extension = "EXTEND"
    links.new(comb.outputs["Vector"], tex.inputs["Vector"])
    scale = nodes.new("ShaderNodeMix")
    scale.name = scale.label = "Scale"
    scale.data_type = "RGBA"
    scale.blend_type = "MULTIPLY"
    scale.location = (200, -200)
    scale.inputs["Factor"].default_value = 1.0
    links.new(tex.outputs["Color"], scale.inputs["A"])
    mul = nodes.new("ShaderNodeMix")
    mul.name = mul.label = "Multiply"
    mul.data_type = "RGBA"
    mul.blend_type = "MULTIPLY"
    mul.location = (400, 0)
    mul.inputs["Factor"].default_value = 1.0
    links.new(gin.outputs["Color"], mul.inputs["A"])
    links.new(scale.outputs["Result"], mul.inputs["B"])
    links.new(mul.outputs["Result"], gout.inputs["Color"])
    links.new(scale.outputs["Result"], gout.inputs["Light"])


def ensure_lightmap_group(ground_name: str, image, region, scale: float):
    """The group for ground ``ground_name`` showing ``image`` over ``region`` (x_min, y_min, x_max, y_max), its light
    multiplied by ``scale`` (1 / the PNG's white)."""
    tree = common.ensure_tree(group_name(ground_name), "ShaderNodeTree", GROUP_STAMP, _build)
    tree.nodes["Light Map"].image = image
    x0, y0, x1, y1 = region
    for axis, lo, hi in (("X", x0, x1), ("Y", y0, y1)):
        rng = tree.nodes[f"Region {axis}"]
        rng.inputs["From Min"].default_value = lo
        rng.inputs["From Max"].default_value = hi
    tree.nodes["Scale"].inputs["B"].default_value = (scale, scale, scale, 1.0)
    return tree


def _colour_input(node):
    for name in ("Base Color", "Color"):
        sock = node.inputs.get(name)
        if sock is not None:
            return sock
    return None


def apply_to_material(mat, tree) -> bool:
    """Put a node of group ``tree`` in front of the base colour of ``mat``'s BSDFs (once); True when it is there."""
    if bpy.app.version < (5, 0, 0) and not mat.use_nodes:
        mat.use_nodes = True
    nt = mat.node_tree
    if nt is None:
        return False
    for node in nt.nodes:
        if node.type == "GROUP" and node.node_tree is not None and node.node_tree.name.startswith(GROUP_PREFIX):
            node.node_tree = tree
            return True
    targets = [n for n in nt.nodes if n.type in {"BSDF_PRINCIPLED", "BSDF_DIFFUSE"} and _colour_input(n)]
    if not targets:
        return False
    for bsdf in targets:
        sock = _colour_input(bsdf)
        group = nt.nodes.new("ShaderNodeGroup")
        group.node_tree = tree
        group.name = group.label = NODE_NAME
        group.location = (bsdf.location.x - 250, bsdf.location.y)
        if sock.links:
            nt.links.new(sock.links[0].from_socket, group.inputs["Color"])
        else:
            group.inputs["Color"].default_value = tuple(sock.default_value)
        nt.links.new(group.outputs["Color"], sock)
    return True


def apply_to_ground(ground, tree) -> list:
    """Show the light map on ``ground``: every material of its slots gets the group; a ground with none gets a
    plain material. Returns the names of the materials that show it."""
    mats = [slot.material for slot in ground.material_slots if slot.material is not None]
    if not mats and getattr(ground.data, "materials", None) is not None:
        mat = bpy.data.materials.get(GROUND_MATERIAL) or bpy.data.materials.new(GROUND_MATERIAL)
        if bpy.app.version < (5, 0, 0):
            mat.use_nodes = True
        ground.data.materials.append(mat)
        mats = [mat]
    return [m.name for m in mats if m.library is None and apply_to_material(m, tree)]
