"""The light map on the ground: a shader node group that multiplies a colour by the baked light map, read at the
shading point's world x, y over the map's region (so any ground mesh shows it, whatever its UVs), and the step that
puts the group in front of the ground material's base colour. Built by ``ensure_lightmap_group``."""

from __future__ import annotations

from typing import cast

import bpy

from .. import bridge
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


def ensure_lightmap_group(ground_name: str, image: bpy.types.Image | None,
                          region: tuple[float, float, float, float], scale: float) -> bpy.types.ShaderNodeTree:
    """The group for ground ``ground_name`` showing ``image`` over ``region`` (x_min, y_min, x_max, y_max), its light
    multiplied by ``scale`` (1 / the PNG's white)."""
    tree = cast(bpy.types.ShaderNodeTree, common.ensure_tree(group_name(ground_name), "ShaderNodeTree", GROUP_STAMP,
                                                             _build))
    cast(bpy.types.ShaderNodeTexImage, tree.nodes["Light Map"]).image = image
    x0, y0, x1, y1 = region
    for axis, lo, hi in (("X", x0, x1), ("Y", y0, y1)):
        rng = tree.nodes[f"Region {axis}"]
        cast(bpy.types.NodeSocketFloat, rng.inputs["From Min"]).default_value = lo
        cast(bpy.types.NodeSocketFloat, rng.inputs["From Max"]).default_value = hi
    cast(bpy.types.NodeSocketColor, tree.nodes["Scale"].inputs["B"]).default_value = (scale, scale, scale, 1.0)
    return tree


def _colour_input(node: bpy.types.Node) -> bpy.types.NodeSocketColor | None:
    for name in ("Base Color", "Color"):
        sock = node.inputs.get(name)
        if sock is not None:
            return cast(bpy.types.NodeSocketColor, sock)  # a BSDF's (base) colour
    return None


def apply_to_material(mat: bpy.types.Material, tree: bpy.types.ShaderNodeTree) -> bool:
    """Put a node of group ``tree`` in front of the base colour of ``mat``'s BSDFs (once); True when it is there."""
    if not bridge.BLENDER_5 and not mat.use_nodes:
        mat.use_nodes = True
    nt = mat.node_tree
    if nt is None:
        return False
    for node in nt.nodes:
        group = cast(bpy.types.ShaderNodeGroup, node)  # when its type is GROUP
        if node.type == "GROUP" and group.node_tree is not None and group.node_tree.name.startswith(GROUP_PREFIX):
            group.node_tree = tree
            return True
    inputs = [(n, _colour_input(n)) for n in nt.nodes if n.type in {"BSDF_PRINCIPLED", "BSDF_DIFFUSE"}]
    targets = [(n, sock) for n, sock in inputs if sock]
    if not targets:
        return False
    for bsdf, sock in targets:
        group = cast(bpy.types.ShaderNodeGroup, nt.nodes.new("ShaderNodeGroup"))
        group.node_tree = tree
        group.name = group.label = NODE_NAME
        group.location = (bsdf.location.x - 250, bsdf.location.y)
        if sock.links:
            nt.links.new(cast(bpy.types.NodeSocket, sock.links[0].from_socket), group.inputs["Color"])
        else:
            cast(bpy.types.NodeSocketColor, group.inputs["Color"]).default_value = tuple(sock.default_value)
        nt.links.new(group.outputs["Color"], sock)
    return True


def apply_to_ground(ground: bpy.types.Object, tree: bpy.types.ShaderNodeTree) -> list[str]:
    """Show the light map on ``ground``: every material of its slots gets the group; a ground with none gets a
    plain material of its own (another ground's would show this ground's map). Returns the names of the materials
    that show it."""
    mats = [slot.material for slot in ground.material_slots if slot.material is not None]
    materials = getattr(ground.data, "materials", None)  # (geometry that takes materials)
    if not mats and materials is not None:
        name = f"{GROUND_MATERIAL} ({ground.name})"
        mat = bpy.data.materials.get(name)
        if mat is None or mat.library is not None:
            mat = bpy.data.materials.new(name)
        if not bridge.BLENDER_5:
            mat.use_nodes = True
        materials.append(mat)
        mats = [mat]
    return [m.name for m in mats if m.library is None and apply_to_material(m, tree)]


# --- actors' dynamic shadows (Day 5) -----------------------------------------------------------------------
# One object per actor carries a geometry-nodes modifier of SHADOW_GROUP: it reads the actor's bounds and the lights'
# positions live, so the shadow follows the actor and the lights every frame. Per actor: the nearest light and the
# second nearest, cross-faded by how much nearer the nearest is (so a change of nearest light fades, never jumps);
# per light two sprites turned by half the actor's angular size each way (the cone), cast away from the light, as
# wide as the actor across the beam, short enough that no corner reaches farther than the distance map's nearest
# wall (+ Wall Size), fading out when the actor's angular size passes Max Angle. core.lightmap2d.shadow_quad is
# its numpy twin.

SHADOW_GROUP = "EnvFX Actor Shadow"
SHADOW_STAMP = "actor-shadow-4"
# the lights that light a render now, as points: one Points node per light of the file (of a kind the bake takes),
# its count driven 1 or 0 by the light's visibility in renders, power and colour (``ensure_shadow_lights``); the
# shadow group keeps only the lights of its collection that are among them
SHADOW_LIGHTS_GROUP = "EnvFX Actor Shadow Lights"
SHADOW_LIGHTS_KEY = "envfx_shadow_lights"  # on that group: what it was built for (``ensure_shadow_lights``)
SHADOW_MATERIAL = "EnvFX Actor Shadow"
ALPHA_ATTRIBUTE = "shadow_alpha"
FADE_ATTRIBUTE = "shadow_fade"


class _Builder:
    """Small helpers to wire math in a node tree (inputs of Math nodes have no distinct names, so by index)."""

    def __init__(self, tree):
        self.tree = tree
        self.x = 0

    def node(self, kind, **props):
        n = self.tree.nodes.new(kind)
        for key, value in props.items():
            setattr(n, key, value)
        n.location = (self.x, 0)
        self.x += 30
        return n

    def _feed(self, sock, value):
        if hasattr(value, "is_output"):
            self.tree.links.new(value, sock)
        else:
            sock.default_value = value

    def math(self, op, a, b=None, c=None):
        n = self.node("ShaderNodeMath", operation=op)
        for k, v in enumerate((a, b, c)):
            if v is not None:
                self._feed(n.inputs[k], v)
        return n.outputs[0]

    def vec(self, op, a, b=None, scale=None):
        n = self.node("ShaderNodeVectorMath", operation=op)
        self._feed(n.inputs[0], a)
        if b is not None:
            self._feed(n.inputs[1], b)
        if scale is not None:
            self._feed(n.inputs["Scale"], scale)
        return n.outputs["Value"] if op in {"LENGTH", "DOT_PRODUCT", "DISTANCE"} else n.outputs["Vector"]

    def sep(self, v):
        n = self.node("ShaderNodeSeparateXYZ")
        self._feed(n.inputs[0], v)
        return n.outputs["X"], n.outputs["Y"], n.outputs["Z"]

    def comb(self, x, y, z=0.0):
        n = self.node("ShaderNodeCombineXYZ")
        for k, v in enumerate((x, y, z)):
            self._feed(n.inputs[k], v)
        return n.outputs[0]

    def lerp(self, a, b, t):
        return self.math("MULTIPLY_ADD", self.math("SUBTRACT", b, a), t, a)

    def clamp01(self, v):
        n = self.node("ShaderNodeClamp")
        self._feed(n.inputs["Value"], v)
        return n.outputs[0]


def _build_shadow(tree):
    c = common
    c.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    c.socket(tree, "Actor", "INPUT", "NodeSocketObject", description="The moving object whose shadow this is")
    c.socket(tree, "Lights", "INPUT", "NodeSocketCollection", description="The lights that cast it (nearest wins)")
    c.socket(tree, "Distance Map", "INPUT", "NodeSocketImage",
             description="lightmap_distance.exr of the light-map bake: how far the nearest wall is")
    c.socket(tree, "Region Min", "INPUT", "NodeSocketVector", description="x_min, y_min of the light map")
    c.socket(tree, "Region Max", "INPUT", "NodeSocketVector", default=(1.0, 1.0, 0.0),
             description="x_max, y_max of the light map")
    c.socket(tree, "Ground Height", "INPUT", "NodeSocketFloat", description="z of the ground the shadow lies on")
    c.socket(tree, "Length", "INPUT", "NodeSocketFloat", default=2.0, min_value=0.0, description="Longest shadow")
    c.socket(tree, "Max Angle", "INPUT", "NodeSocketFloat", default=0.6, min_value=0.0,
             description="The actor's angular size seen from the light (radians) at which the shadow is gone")
    c.socket(tree, "Fade", "INPUT", "NodeSocketFloat", default=0.2, min_value=0.001,
             description="Angular range (radians) over which it fades out before Max Angle")
    c.socket(tree, "Wall Size", "INPUT", "NodeSocketFloat", default=0.0, min_value=0.0,
             description="How far past the nearest wall's face a shadow may reach")
    c.socket(tree, "Cross Fade", "INPUT", "NodeSocketFloat", default=1.0, min_value=0.001,
             description="When the second nearest light is less than this much farther, the two shadows cross-fade")
    c.socket(tree, "Opacity", "INPUT", "NodeSocketFloat", default=0.6, min_value=0.0, max_value=1.0)
    c.socket(tree, "Material", "INPUT", "NodeSocketMaterial")
    c.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    b = _Builder(tree)
    gin = b.node("NodeGroupInput")
    gout = b.node("NodeGroupOutput")
    # the actor's centre and half size, world space (this object sits at the origin, unrotated)
    info = b.node("GeometryNodeObjectInfo", transform_space="RELATIVE")
    tree.links.new(gin.outputs["Actor"], info.inputs["Object"])
    bbox = b.node("GeometryNodeBoundBox")
    tree.links.new(info.outputs["Geometry"], bbox.inputs["Geometry"])
    centre = b.vec("SCALE", b.vec("ADD", bbox.outputs["Min"], bbox.outputs["Max"]), scale=0.5)
    half = b.vec("SCALE", b.vec("SUBTRACT", bbox.outputs["Max"], bbox.outputs["Min"]), scale=0.5)
    ax, ay, _ = b.sep(centre)
    hx, hy, _ = b.sep(half)
    actor = b.comb(ax, ay)
    # the lights as points on the ground plane
    coll = b.node("GeometryNodeCollectionInfo", transform_space="RELATIVE")
    coll.inputs["Separate Children"].default_value = True
    tree.links.new(gin.outputs["Lights"], coll.inputs["Collection"])
    pts = b.node("GeometryNodeInstancesToPoints")
    tree.links.new(coll.outputs[0], pts.inputs["Instances"])
    pos = b.node("GeometryNodeInputPosition").outputs["Position"]
    # only those that light a render now (the bake's rule): a light of the collection is kept when a lit light
    # (SHADOW_LIGHTS_GROUP) stands where it stands
    def nearest(geometry, where):
        """The point of ``geometry`` nearest ``where``: its index, its position, and the number of points."""
        near = b.node("GeometryNodeSampleNearest", domain="POINT")
        tree.links.new(geometry, near.inputs["Geometry"])
        tree.links.new(where, near.inputs["Sample Position"])
        at = b.node("GeometryNodeSampleIndex", data_type="FLOAT_VECTOR", domain="POINT")
        tree.links.new(geometry, at.inputs["Geometry"])
        tree.links.new(pos, at.inputs["Value"])
        tree.links.new(near.outputs["Index"], at.inputs["Index"])
        size = b.node("GeometryNodeAttributeDomainSize", component="POINTCLOUD")
        tree.links.new(geometry, size.inputs["Geometry"])
        return near.outputs["Index"], at.outputs["Value"], size.outputs["Point Count"]

    lit = b.node("GeometryNodeGroup")
    lit.node_tree = shadow_lights_tree()
    _, lit_at, lit_count = nearest(lit.outputs["Lights"], pos)
    unlit = b.node("GeometryNodeDeleteGeometry", domain="POINT")
    tree.links.new(pts.outputs["Points"], unlit.inputs["Geometry"])
    tree.links.new(b.math("MAXIMUM", b.math("GREATER_THAN", b.vec("DISTANCE", pos, lit_at), 1e-3),
                          b.math("LESS_THAN", lit_count, 0.5)), unlit.inputs["Selection"])
    px, py, _ = b.sep(pos)
    flat = b.node("GeometryNodeSetPosition")
    tree.links.new(unlit.outputs["Geometry"], flat.inputs["Geometry"])
    tree.links.new(b.comb(px, py), flat.inputs["Position"])

    i1, l1, n1 = nearest(flat.outputs["Geometry"], actor)
    drop = b.node("GeometryNodeDeleteGeometry", domain="POINT")
    tree.links.new(flat.outputs["Geometry"], drop.inputs["Geometry"])
    tree.links.new(b.math("COMPARE", b.node("GeometryNodeInputIndex").outputs["Index"], i1, 0.5),
                   drop.inputs["Selection"])
    _, l2, n2 = nearest(drop.outputs["Geometry"], actor)
    d1 = b.vec("DISTANCE", actor, l1)
    d2 = b.vec("DISTANCE", actor, l2)
    has1 = b.math("GREATER_THAN", n1, 0.5)
    has2 = b.math("GREATER_THAN", n2, 0.5)
    # cross-fade: equal distances share half and half; the nearest alone once the other is Cross Fade farther
    w1 = b.clamp01(b.math("ADD", 0.5, b.math("DIVIDE", b.math("SUBTRACT", d2, d1),
                                                      b.math("MULTIPLY", gin.outputs["Cross Fade"], 2.0))))
    w1 = b.math("MULTIPLY", has1, b.math("MAXIMUM", w1, b.math("SUBTRACT", 1.0, has2)))
    w2 = b.math("MULTIPLY", has2, b.math("SUBTRACT", 1.0, w1))
    # the distance to the nearest wall, from the distance map at the actor's centre
    rmin_x, rmin_y, _ = b.sep(gin.outputs["Region Min"])
    rmax_x, rmax_y, _ = b.sep(gin.outputs["Region Max"])
    u = b.math("DIVIDE", b.math("SUBTRACT", ax, rmin_x), b.math("SUBTRACT", rmax_x, rmin_x))
    v = b.math("DIVIDE", b.math("SUBTRACT", ay, rmin_y), b.math("SUBTRACT", rmax_y, rmin_y))
    tex = b.node("GeometryNodeImageTexture", interpolation="Linear", extension="EXTEND")
    tree.links.new(gin.outputs["Distance Map"], tex.inputs["Image"])
    tree.links.new(b.comb(u, v), tex.inputs["Vector"])
    wall, _, _ = b.sep(tex.outputs["Color"])
    reach = b.math("ADD", wall, gin.outputs["Wall Size"])

    def per_light(light, weight):
        offset = b.vec("SUBTRACT", actor, light)
        dist = b.math("MAXIMUM", b.vec("LENGTH", offset), 1e-6)
        ux = b.math("DIVIDE", b.sep(offset)[0], dist)
        uy = b.math("DIVIDE", b.sep(offset)[1], dist)
        width = b.math("MULTIPLY", 2.0, b.math("ADD", b.math("MULTIPLY", hx, b.math("ABSOLUTE", uy)),
                                                 b.math("MULTIPLY", hy, b.math("ABSOLUTE", ux))))
        spread = b.math("ARCTAN2", b.math("MULTIPLY", width, 0.5), dist)
        fade = b.clamp01(b.math("DIVIDE", b.math("SUBTRACT", gin.outputs["Max Angle"],
                                                 b.math("MULTIPLY", spread, 2.0)), gin.outputs["Fade"]))
        alpha = b.math("MULTIPLY", b.math("MULTIPLY", fade, weight), gin.outputs["Opacity"])
        room = b.math("SQRT", b.math("MAXIMUM", b.math("SUBTRACT", b.math("MULTIPLY", reach, reach),
                                                                 b.math("MULTIPLY", b.math("MULTIPLY", width, width),
                                                                        0.25)), 0.0))
        length = b.math("MINIMUM", gin.outputs["Length"], room)
        return ux, uy, width, spread, alpha, length

    first, second = per_light(l1, w1), per_light(l2, w2)
    # four sprites: copy k lights from light k // 2, turned by -spread / 2 (even k) or +spread / 2 (odd k)
    grid = b.node("GeometryNodeMeshGrid")
    grid.inputs["Size X"].default_value = 1.0
    grid.inputs["Size Y"].default_value = 1.0
    grid.inputs["Vertices X"].default_value = 2
    grid.inputs["Vertices Y"].default_value = 2
    dup = b.node("GeometryNodeDuplicateElements", domain="FACE")
    tree.links.new(grid.outputs["Mesh"], dup.inputs["Geometry"])
    dup.inputs["Amount"].default_value = 4
    store = b.node("GeometryNodeStoreNamedAttribute", data_type="INT", domain="FACE")
    store.inputs["Name"].default_value = "shadow_copy"
    tree.links.new(dup.outputs["Geometry"], store.inputs["Geometry"])
    tree.links.new(dup.outputs["Duplicate Index"], store.inputs["Value"])
    copy = b.node("GeometryNodeInputNamedAttribute", data_type="INT")
    copy.inputs["Name"].default_value = "shadow_copy"
    k = copy.outputs["Attribute"]
    which = b.math("FLOOR", b.math("MULTIPLY", k, 0.5))
    sign = b.math("SUBTRACT", b.math("MULTIPLY", b.math("FLOORED_MODULO", k, 2.0), 2.0), 1.0)
    ux, uy, width, spread, alpha, length = (b.lerp(a, c2, which) for a, c2 in zip(first, second))
    turn = b.math("MULTIPLY", b.math("MULTIPLY", spread, 0.5), sign)
    cos_t, sin_t = b.math("COSINE", turn), b.math("SINE", turn)
    dx = b.math("SUBTRACT", b.math("MULTIPLY", ux, cos_t), b.math("MULTIPLY", uy, sin_t))
    dy = b.math("ADD", b.math("MULTIPLY", ux, sin_t), b.math("MULTIPLY", uy, cos_t))
    lx, ly, _ = b.sep(pos)
    s = b.math("ADD", lx, 0.5)  # 0 at the actor, 1 at the shadow's far end
    along = b.math("MULTIPLY", s, length)
    across = b.math("MULTIPLY", ly, width)
    x = b.math("ADD", ax, b.math("SUBTRACT", b.math("MULTIPLY", along, dx), b.math("MULTIPLY", across, dy)))
    y = b.math("ADD", ay, b.math("ADD", b.math("MULTIPLY", along, dy), b.math("MULTIPLY", across, dx)))
    z = b.math("ADD", gin.outputs["Ground Height"], 0.01)
    geometry = store.outputs["Geometry"]
    for name, value in ((ALPHA_ATTRIBUTE, b.math("MULTIPLY", alpha, 0.5)),
                        (FADE_ATTRIBUTE, b.math("SUBTRACT", 1.0, s))):  # stored before the corners move
        st = b.node("GeometryNodeStoreNamedAttribute", data_type="FLOAT", domain="POINT")
        st.inputs["Name"].default_value = name
        tree.links.new(geometry, st.inputs["Geometry"])
        tree.links.new(value, st.inputs["Value"])
        geometry = st.outputs["Geometry"]
    place = b.node("GeometryNodeSetPosition")
    tree.links.new(geometry, place.inputs["Geometry"])
    tree.links.new(b.comb(x, y, z), place.inputs["Position"])
    geometry = place.outputs["Geometry"]
    # no light in the collection (all removed, or none chosen): no shadow at all, not sprites of no opacity
    gone = b.node("GeometryNodeDeleteGeometry", domain="FACE")
    tree.links.new(geometry, gone.inputs["Geometry"])
    tree.links.new(b.math("LESS_THAN", n1, 0.5), gone.inputs["Selection"])
    geometry = gone.outputs["Geometry"]
    mat = b.node("GeometryNodeSetMaterial")
    tree.links.new(geometry, mat.inputs["Geometry"])
    tree.links.new(gin.outputs["Material"], mat.inputs["Material"])
    tree.links.new(mat.outputs["Geometry"], gout.inputs["Geometry"])


def ensure_shadow_group() -> bpy.types.NodeTree:
    """The actor-shadow group, rebuilt in place when older than the code; the modifiers that use it keep their
    values (a rebuilt group's inputs get new identifiers, which modifiers key their values by: read by input name
    before and written back after)."""
    tree = bpy.data.node_groups.get(SHADOW_GROUP)
    kept = []
    if tree is not None and tree.library is None and tree.get(common.STAMP_KEY) != SHADOW_STAMP:
        names = [item.name for item in (tree.interface.items_tree if tree.interface is not None else ())
                 if isinstance(item, bpy.types.NodeTreeInterfaceSocket) and item.in_out == "INPUT"
                 and item.socket_type != "NodeSocketGeometry"]
        for obj in bpy.data.objects:
            for mod in obj.modifiers:
                if mod.type == "NODES" and cast(bpy.types.NodesModifier, mod).node_group == tree \
                        and obj.library is None:
                    values = {n: mod.get(common.input_identifier(tree, n)) for n in names}
                    # (plain copies: a vector's value is a view of the modifier's storage, which the rebuild frees)
                    kept.append((mod, {n: tuple(v) if v is not None and hasattr(v, "to_list") else v
                                       for n, v in values.items()}))
    tree = common.ensure_tree(SHADOW_GROUP, "GeometryNodeTree", SHADOW_STAMP, _build_shadow)
    for mod, values in kept:
        for name, value in values.items():
            if value is not None:
                try:
                    mod[common.input_identifier(tree, name)] = value
                except KeyError:
                    pass  # (an input the group no longer has)
    return tree


def shadow_lights_tree() -> bpy.types.NodeTree:
    """SHADOW_LIGHTS_GROUP as it is (made, with no light, when missing)."""
    tree = bpy.data.node_groups.get(SHADOW_LIGHTS_GROUP)
    if tree is not None and (tree.bl_idname != "GeometryNodeTree" or tree.library is not None):
        tree.name = SHADOW_LIGHTS_GROUP + ".user"
        tree = None
    if tree is None:
        tree = bpy.data.node_groups.new(SHADOW_LIGHTS_GROUP, "GeometryNodeTree")  # pyright: ignore[reportArgumentType]
        _build_shadow_lights(tree, [])
    return tree


def _light_expression(paths: list, names: dict) -> str:
    """The driver expression of a light: 1 while it lights a render (not hidden from renders, some chain of
    collections holding it with none hidden from renders, power times colour not 0), else 0. ``names``: the
    variable name of each collection."""
    chains = ["not (" + " or ".join(names[c] for c in chain) + ")" if chain else "1" for chain in paths]
    return f"1 if not h and e * (r + g + b) != 0 and ({' or '.join(chains)}) else 0"


def _build_shadow_lights(tree, specs: list) -> None:
    common.socket(tree, "Lights", "OUTPUT", "NodeSocketGeometry",
                  description="A point at each light that lights a render now")
    out = tree.nodes.new("NodeGroupOutput")
    out.location = (600, 0)
    join = tree.nodes.new("GeometryNodeJoinGeometry")
    join.location = (400, 0)
    tree.links.new(join.outputs[0], out.inputs["Lights"])
    for k, (obj, paths) in enumerate(specs):
        info = cast(bpy.types.GeometryNodeObjectInfo, tree.nodes.new("GeometryNodeObjectInfo"))
        info.transform_space = "RELATIVE"
        info.location = (0, -200 * k)
        cast(bpy.types.NodeSocketObject, info.inputs["Object"]).default_value = obj
        points = tree.nodes.new("GeometryNodePoints")
        points.name = points.label = f"Light {k}"
        points.location = (200, -200 * k)
        tree.links.new(info.outputs["Location"], points.inputs["Position"])
        tree.links.new(points.outputs["Points"], join.inputs[0])
        fcurve = tree.driver_add(f'nodes["{points.name}"].inputs["Count"].default_value')
        common.straighten(fcurve)
        driver = fcurve.driver
        driver.type = "SCRIPTED"
        common.prop_variable(driver, "h", "OBJECT", obj, "hide_render")
        common.prop_variable(driver, "e", "LIGHT", obj.data, "energy")
        for i, channel in enumerate("rgb"):
            common.prop_variable(driver, channel, "LIGHT", obj.data, f"color[{i}]")
        names = {}
        for chain in paths:
            for c in chain:
                if c not in names:
                    names[c] = f"c{len(names)}"
                    common.prop_variable(driver, names[c], "COLLECTION", c, "hide_render")
        driver.expression = _light_expression(paths, names)


def ensure_shadow_lights(specs: list, signature: str) -> bpy.types.NodeTree:
    """SHADOW_LIGHTS_GROUP for ``specs``, [(light object, [chain of collections holding it, from the scene's top
    collection down; () when it is in the scene collection itself])]: built again only when ``signature`` (what
    ``specs`` were made from) is not what it was built for."""
    tree = shadow_lights_tree()
    if tree.get(SHADOW_LIGHTS_KEY) == signature:
        return tree
    common.clear_tree(tree, keep_interface=True)
    _build_shadow_lights(tree, specs)
    tree[SHADOW_LIGHTS_KEY] = signature
    return tree


def ensure_shadow_material() -> bpy.types.Material:
    """Black, its alpha the sprites' alpha times the fade along their length (the write-up's gradient sprite)."""
    mat = bpy.data.materials.get(SHADOW_MATERIAL)
    if mat is not None and mat.get(common.STAMP_KEY) == SHADOW_STAMP:
        return mat
    if mat is None or mat.library is not None:
        mat = bpy.data.materials.new(SHADOW_MATERIAL)
    if not bridge.BLENDER_5 or mat.node_tree is None:
        mat.use_nodes = True
    nt = mat.node_tree
    if nt is None:  # (use_nodes made it: the checker still sees the None tested above)
        raise RuntimeError(f"The material {mat.name!r} has no node tree to build the actor shadows' in")
    nt.nodes.clear()
    out = nt.nodes.new("ShaderNodeOutputMaterial")
    bsdf = nt.nodes.new("ShaderNodeBsdfPrincipled")
    cast(bpy.types.NodeSocketColor, bsdf.inputs["Base Color"]).default_value = (0.0, 0.0, 0.0, 1.0)
    cast(bpy.types.NodeSocketFloat, bsdf.inputs["Roughness"]).default_value = 1.0
    a = cast(bpy.types.ShaderNodeAttribute, nt.nodes.new("ShaderNodeAttribute"))
    a.attribute_name = ALPHA_ATTRIBUTE
    f = cast(bpy.types.ShaderNodeAttribute, nt.nodes.new("ShaderNodeAttribute"))
    f.attribute_name = FADE_ATTRIBUTE
    mul = cast(bpy.types.ShaderNodeMath, nt.nodes.new("ShaderNodeMath"))
    mul.operation = "MULTIPLY"
    nt.links.new(a.outputs["Fac"], mul.inputs[0])
    nt.links.new(f.outputs["Fac"], mul.inputs[1])
    nt.links.new(mul.outputs[0], bsdf.inputs["Alpha"])
    nt.links.new(bsdf.outputs["BSDF"], out.inputs["Surface"])
    mat.surface_render_method = "BLENDED"
    mat[common.STAMP_KEY] = SHADOW_STAMP
    return mat


# --- dirty lens (Day 6) ------------------------------------------------------------------------------------
# The write-up's Solution 1 and 2 in the compositor: the lens-dirt texture shows where the picture is bright, in
# the colour of the light (a blurred copy of the picture stands in for the buffer of lights), added on top:
#   out = image + strength * dirt * blur(image) * smoothstep(threshold, threshold + softness, lum(blur(image)))
# The compositor tree moved in Blender 5.0: a node group at scene.compositing_node_group (its output a group
# output) instead of 4.2's scene.node_tree (a Composite node); some nodes moved to the shared function nodes.

LENS_GROUP = "EnvFX Dirty Lens"
LENS_STAMP = "dirty-lens-1"
NEW_COMPOSITOR = bridge.BLENDER_5


def scene_compositor(scene: bpy.types.Scene) -> bpy.types.NodeTree | None:
    """The scene's compositor node tree, or None."""
    return scene.compositing_node_group if bridge.BLENDER_5 else (scene.node_tree if scene.use_nodes else None)


def is_own_compositor(tree: bpy.types.NodeTree | None) -> bool:
    return tree is not None and tree.get(common.STAMP_KEY) == LENS_STAMP


def _is_default_compositor(tree) -> bool:
    """4.2's tree as Use Nodes makes it (Render Layers into Composite), which a set-up may replace."""
    return {n.bl_idname for n in tree.nodes} <= {"CompositorNodeRLayers", "CompositorNodeComposite"}


def _mix(tree, blend: str, a, b, x):
    if bridge.BLENDER_5:
        n = tree.nodes.new("ShaderNodeMix")
        n.data_type = "RGBA"
        n.blend_type = blend
        n.inputs["Factor"].default_value = 1.0
        sa, sb = (next(s for s in n.inputs if s.name == k and s.type == "RGBA") for k in ("A", "B"))
        out = next(s for s in n.outputs if s.type == "RGBA")
    else:
        n = tree.nodes.new("CompositorNodeMixRGB")
        n.blend_type = blend
        n.inputs[0].default_value = 1.0
        sa, sb, out = n.inputs[1], n.inputs[2], n.outputs[0]
    n.location = (x, 0)
    for sock, value in ((sa, a), (sb, b)):
        if hasattr(value, "is_output"):
            tree.links.new(value, sock)
        else:
            sock.default_value = value
    return out


def _build_lens(tree, dirt_image, strength: float, threshold: float, softness: float, blur_px: int):
    nodes, links = tree.nodes, tree.links
    render = nodes.new("CompositorNodeRLayers")
    render.location = (-800, 0)
    blur = nodes.new("CompositorNodeBlur")
    blur.location = (-600, -200)
    if bridge.BLENDER_5:
        blur.inputs["Size"].default_value = (blur_px, blur_px)
    else:
        blur.size_x = blur.size_y = blur_px
    links.new(render.outputs["Image"], blur.inputs["Image"])
    lum = nodes.new("CompositorNodeRGBToBW")
    lum.location = (-400, -300)
    links.new(blur.outputs["Image"], lum.inputs["Image"])
    if bridge.BLENDER_5:
        rng = nodes.new("ShaderNodeMapRange")
        rng.clamp = True
        rng.interpolation_type = "SMOOTHSTEP"
        out_mask = rng.outputs["Result"]
    else:
        rng = nodes.new("CompositorNodeMapRange")
        rng.use_clamp = True
        out_mask = rng.outputs["Value"]
    rng.name = rng.label = "Threshold"
    rng.location = (-200, -300)
    links.new(lum.outputs["Val"], rng.inputs["Value"])
    rng.inputs["From Min"].default_value = threshold
    rng.inputs["From Max"].default_value = threshold + softness
    rng.inputs["To Min"].default_value = 0.0
    rng.inputs["To Max"].default_value = strength
    dirt = nodes.new("CompositorNodeImage")
    dirt.name = dirt.label = "Lens Dirt"
    dirt.image = dirt_image
    dirt.location = (-400, 200)
    # 4.2's Mix nodes take a single value as a grey colour; 5.0's Mix is typed, so the mask passes as a colour
    lit = _mix(tree, "MULTIPLY", dirt.outputs["Image"], blur.outputs["Image"], 0)
    glow = _mix(tree, "MULTIPLY", lit, out_mask, 200)
    final = _mix(tree, "ADD", render.outputs["Image"], glow, 400)
    if bridge.BLENDER_5:
        common.socket(tree, "Image", "OUTPUT", "NodeSocketColor")
        gout = nodes.new("NodeGroupOutput")
        gout.location = (650, 0)
        links.new(final, gout.inputs["Image"])
    else:
        comp = nodes.new("CompositorNodeComposite")
        comp.location = (650, 0)
        links.new(final, comp.inputs["Image"])
    viewer = nodes.new("CompositorNodeViewer")
    viewer.location = (650, -200)
    links.new(final, viewer.inputs["Image"])
    tree[common.STAMP_KEY] = LENS_STAMP


def ensure_dirty_lens(scene: bpy.types.Scene, dirt_image: bpy.types.Image | None, strength: float = 0.8,
                      threshold: float = 0.6, softness: float = 0.4, blur_px: int = 24) -> bpy.types.NodeTree:
    """Give ``scene`` the dirty-lens compositor set-up (made again on a second call). A compositor set-up of the
    user's is not replaced: ValueError saying so."""
    tree = scene_compositor(scene)
    if tree is not None and not is_own_compositor(tree) and not (not bridge.BLENDER_5 and _is_default_compositor(tree)):
        raise ValueError(f"Scene {scene.name!r} already has a compositor set-up of its own: remove it (or use a copy "
                         "of the scene) before adding the dirty lens")
    if bridge.BLENDER_5:
        if tree is None:
            tree = bpy.data.node_groups.new(LENS_GROUP, "CompositorNodeTree")
            scene.compositing_node_group = tree
        common.clear_tree(tree)
    else:
        scene.use_nodes = True
        tree = scene.node_tree
        if tree is None:  # (use_nodes made it; the API types it optional)
            raise RuntimeError(f"Scene {scene.name!r} has no compositor tree to build the dirty lens in")
        tree.nodes.clear()
    _build_lens(tree, dirt_image, strength, threshold, softness, blur_px)
    return tree
