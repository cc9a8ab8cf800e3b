"""Geometry-nodes group "EnvFX Bend": the world bend of ``core.bend`` evaluated per frame.

One group per scene is shared by every object it bends, so the scene's settings change them all at once:
strength, spreads, horizon offset and the on/off switch reach the nodes' input sockets through drivers that read
``scene.envfx.bend`` of the scene being evaluated (context-property drivers, so they follow keyframes during
playback and need no pointer to the scene; what depends on the settings alone, such as the two-axes bend's
folded strengths, is a driver's simple expression: computed once per frame, not once per object by a node, and
evaluated without Python), the pivot is an Object Info node pointing at a stand-in Empty that copies the pivot's
transform (``common.point_at_transform``: moving or animating the pivot re-evaluates the bend at once, and the
bend does not depend on the pivot's geometry, which may itself read the bent world). Switched off, the geometry
passes through untouched.

The math runs in world space without moving every vertex to world space and back: per object (single values)
the group computes the forward axis in object space ``A = L^T f``, the constant ``c0 = f.(t - pivot) - offset``
and the object-space "down" vector ``U = L^-1 (0, 0, -1)``; per vertex it is then a dot product and a handful
of scalar operations: ``offset = U * a * max(0, |A.p + c0| - s)^2``. Mode and axis choose which chain is built
(the group is rebuilt in place when they change), so no vertex pays for a mode it does not use.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import cast

import bpy

from ..core import bend as core_bend
from . import common

GROUP_NAME = "EnvFX Bend"
KIND = "bend"  # one group per scene (common.ensure_scene_group)
VERSION = 13

# Scene settings the group reads (scene.envfx.bend.<prop>), by the name its drivers' expressions give them
PROPS = ("strength", "spread", "side_strength", "side_spread", "horizon_offset", "enabled")
DRIVES_KEY = "envfx_bend_drives"  # the group's property: {"<index>|<socket value path>": expression}


def _sign(name: str) -> str:
    return f"(1.0 if {name} > 0 else (-1.0 if {name} < 0 else 0.0))"


# The per-object constants of the two-axes bend that depend on the scene's settings only (``_two_axes``): computed
# once per frame by the drivers, not once per object by nodes
_FOLD = {"strength": "sqrt(abs(strength))", "side_strength": "sqrt(abs(side_strength))"}
_SIGN_G = (f"({_sign('strength')} if strength != 0 else {_sign('side_strength')})")
_RHO = f"({_sign('side_strength')} * {_SIGN_G})"


class _Drives:
    """The sockets of a group being built that its drivers set (``_wire``): an unlinked input socket takes the
    value of an expression of the scene's settings (a bare setting, or a driver's simple expression, which
    Blender evaluates without Python). A node evaluates once per object, a driver once per frame, so whatever
    depends only on the scene's settings is computed by a driver."""

    def __init__(self):
        self.items: dict[str, str] = {}

    def drive(self, sock, expr: str, index: int = -1):
        self.items[f"{index}|{sock.path_from_id()}.default_value"] = expr


def _bendable(b, drives, scale, down):
    """Per object: whether the bend moves it, i.e. it is switched on and the object's matrix has a usable
    object-space "down" (``core.bend.has_down``): the length of ``down`` (L^-1 (0, 0, -1)) times the length of L
    (the length of its column lengths ``scale``) is finite and below 1 / FLAT_RATIO. False (NaN and inf compare
    false) for a matrix scaled to nothing, whose inverse is huge or not a number. One comparison of lengths,
    |down * |L|| < |(limit, 0, 0)|, with the limit 0 while the bend is switched off (set by a driver)."""
    reach = b.vmath("SCALE", down, scale=b.vmath("LENGTH", scale, label="Matrix Length"), label="Down Reach")
    node = b.node("FunctionNodeCompare", "Bends", data_type="VECTOR", mode="LENGTH", operation="LESS_THAN")
    sockets = [s for s in node.inputs if s.enabled]
    b.link(reach, sockets[0])
    sockets[1].default_value = (0.0, 0.0, 0.0)
    drives.drive(sockets[1], f"{1.0 / core_bend.FLAT_RATIO!r} if enabled else 0.0", 0)
    return node.outputs[0]


def _stamp(mode: str, axis: str) -> str:
    return f"{VERSION}:{mode}:{axis}"


def _build(tree, mode: str, axis: str):
    b = common.Builder(tree)
    drives = _Drives()
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    group_in = b.node("NodeGroupInput", "Group Input", location=(-1400, 0))
    group_out = b.node("NodeGroupOutput", "Group Output", location=(1800, 0))

    self_obj = b.node("GeometryNodeSelfObject", "Self", location=(-1200, 300))
    self_info = b.node("GeometryNodeObjectInfo", "Self Info", location=(-1000, 300), transform_space="ORIGINAL")
    b.link(self_obj.outputs[0], self_info.inputs["Object"])
    matrix = self_info.outputs["Transform"]
    pivot_info = b.node("GeometryNodeObjectInfo", "Pivot", location=(-1000, 600), transform_space="ORIGINAL")
    pivot_loc = pivot_info.outputs["Location"]

    transpose = b.node("FunctionNodeTransposeMatrix", "Transpose", location=(-800, 300))
    b.link(matrix, transpose.inputs[0])
    invert = b.node("FunctionNodeInvertMatrix", "Invert", location=(-800, 150))
    b.link(matrix, invert.inputs[0])

    def to_local_direction(vec, label):
        node = b.node("FunctionNodeTransformDirection", label)
        b.link(transpose.outputs[0], node.inputs["Transform"])
        b.feed(node.inputs["Direction"], vec)
        return node

    origin = self_info.outputs["Location"]  # the matrix's translation
    down = b.node("FunctionNodeTransformDirection", "Down Local")
    down.inputs["Direction"].default_value = (0.0, 0.0, -1.0)
    b.link(invert.outputs[0], down.inputs["Transform"])

    f_vec, side_vec = core_bend.axis_vectors(axis)
    f_vec = tuple(float(v) for v in f_vec)
    side_vec = tuple(float(v) for v in side_vec)
    # centre = pivot + offset * forward; rel_origin = object origin - centre (world) = (origin - pivot) - offset *
    # forward: the second term is a vector the drivers set (forward is a world axis: one component is +-offset).
    # Every node here is evaluated once per object, and in a level of many small props that is what the bend costs
    rel = b.node("ShaderNodeVectorMath", "Origin Rel", operation="ADD")
    b.link(b.vmath("SUBTRACT", origin, pivot_loc, label="Origin From Pivot"), rel.inputs[0])
    rel.inputs[1].default_value = (0.0, 0.0, 0.0)
    i_f = next(i for i, v in enumerate(f_vec) if v != 0.0)
    drives.drive(rel.inputs[1], f"{-f_vec[i_f]} * horizon_offset", i_f)
    rel_origin = rel.outputs["Vector"]

    position = b.node("GeometryNodeInputPosition", "Position").outputs[0]

    def axis_falloff(vec, spread: str, tag, fold: str | None = None):
        """max(0, |dot(world - centre, vec)| - spread) per vertex, with the object-space axis; with a factor
        ``fold`` (an expression of the settings, >= 0) it is fold times that (axis and spread scaled by it, by the
        drivers). ``spread`` is the setting's name."""
        local = to_local_direction(vec, f"{tag} Axis Local")
        c0 = b.vmath("DOT_PRODUCT", rel_origin, vec, label=f"{tag} C0")
        if fold is not None:  # the axis is a world axis: one component is +-1
            i = next(i for i, v in enumerate(vec) if v != 0.0)
            drives.drive(local.inputs["Direction"], f"{vec[i]} * {fold}", i)
            drives.drive(c0.node.inputs[1], f"{vec[i]} * {fold}", i)
            spread = f"{spread} * {fold}"
        coord = b.math("ADD", b.vmath("DOT_PRODUCT", position, local.outputs[0], label=f"{tag} Dot"), c0,
                       label=f"{tag} Coord")
        beyond = b.math("SUBTRACT", b.math("ABSOLUTE", coord), 0.0, label=f"{tag} Beyond Spread")
        drives.drive(beyond.node.inputs[1], spread)
        return b.math("MAXIMUM", beyond, 0.0, label=f"{tag} Beyond")

    def squared(d, tag):
        return b.math("MULTIPLY", d, d, label=f"{tag} Sq")

    def down_by(expr: str, label: str = "Down Scaled"):
        out = b.vmath("SCALE", down.outputs[0], scale=0.0, label=label)
        drives.drive(out.node.inputs["Scale"], expr)
        return out

    if mode == "RUNNER":
        amount = squared(axis_falloff(f_vec, "spread", "Fwd"), "Fwd")
        down_scaled = down_by("strength")
    elif mode == "CYLINDER":
        amount = squared(axis_falloff(side_vec, "spread", "Side"), "Side")
        down_scaled = down_by("strength")
    elif mode == "RUNNER_2AXIS":
        amount = _two_axes(b, drives, axis_falloff, squared, f_vec, side_vec)
        down_scaled = down_by(_SIGN_G, "Down Signed")
    elif mode == "PLANET":
        centre = b.vmath("SUBTRACT", origin, rel_origin, label="Centre")
        amount = _planet_amount(b, drives, to_local_direction, rel_origin, position, matrix, invert, centre)
        down_scaled = down_by("strength")
    else:
        raise core_bend.BendError(f"Unknown bend mode {mode!r}")

    offset = b.vmath("SCALE", down_scaled, scale=amount, label="Offset")
    set_pos = b.node("GeometryNodeSetPosition", "Set Position", location=(1600, 0))
    b.link(group_in.outputs[0], set_pos.inputs["Geometry"])
    b.link(offset, set_pos.inputs["Offset"])
    # switched off (scene.envfx.bend.enabled), the geometry passes through: no vertex is computed at all; so does
    # an object whose matrix has no object-space "down" (scaled to nothing on an axis, its own or a parent's)
    bends = _bendable(b, drives, self_info.outputs["Scale"], down.outputs[0])
    b.link(b.switch("On Off", bends, set_pos.outputs[0], group_in.outputs[0], "GEOMETRY"), group_out.inputs[0])
    tree[DRIVES_KEY] = drives.items


def _two_axes(b, drives, axis_falloff, squared, f_vec, side_vec):
    """The amount of the two-axes bend along ``down`` times g (the sign below): a_f d_f^2 + a_s d_s^2.

    The strengths are folded into the axes: with k = sqrt(|a|), k d is the dead-zone distance along the axis
    scaled by k (axis and spread scaled by k), so a vertex needs one multiply-add instead of two multiplies and a
    multiply-add (two scalar chains measure faster than one chain of vector operations). With g the sign of the
    forward strength (of the side strength when the forward one is zero) folded into the down vector, amount =
    (k_f d_f)^2 + rho (k_s d_s)^2 with rho = sign(a_s) g; rho is 1 or 0 unless the strengths have opposite signs,
    and only then does a vertex pay one more multiply. k, g and rho depend on the settings only: the drivers
    compute them (``_FOLD``, ``_SIGN_G``, ``_RHO``)."""
    fwd = squared(axis_falloff(f_vec, "spread", "Fwd", _FOLD["strength"]), "Fwd")
    side = axis_falloff(side_vec, "side_spread", "Side", _FOLD["side_strength"])
    negated = b.math("MULTIPLY", side, 0.0, label="Side Negated")
    drives.drive(negated.node.inputs[1], _RHO)
    side_signed = b.switch("Side Signed", False, negated, side)
    drives.drive(side_signed.node.inputs["Switch"], f"{_RHO} < 0")
    return b.math("MULTIPLY_ADD", side_signed, side, fwd, label="Sum")


def _planet_amount(b, drives, to_local_direction, rel_origin, position, matrix, invert, centre):
    """max(0, r - s)^2 per vertex, r the horizontal world distance from the centre.

    The square root is the most expensive per-vertex operation of the bend (about 0.2 of a bare Set Position
    on its own), so without a flat spread (s = 0: the classic little planet, drop = a r^2) the amount is the
    squared distance and no vertex takes a root. Either way the distance comes in a cheaper form for upright
    objects (``_planet_radius_axis_aligned``)."""
    sq_general = _planet_radius_sq_general(b, to_local_direction, rel_origin, position)
    axis_aligned, r_fast, sq_fast = _planet_radius_axis_aligned(b, matrix, invert, centre, position)
    r = b.switch("Radius", axis_aligned, r_fast, b.math("SQRT", sq_general, label="Radius General"))
    beyond = b.math("SUBTRACT", r, 0.0, label="Beyond Spread")
    drives.drive(beyond.node.inputs[1], "spread")
    d = b.math("MAXIMUM", beyond, 0.0, label="Beyond")
    radius_sq = b.switch("Radius Sq", axis_aligned, sq_fast, sq_general)
    amount = b.switch("Amount", False, radius_sq, b.math("MULTIPLY", d, d, label="Sq"))
    drives.drive(amount.node.inputs["Switch"], "spread <= 0")  # no flat spread: no vertex takes a root
    return amount


def _planet_radius_sq_general(b, to_local_direction, rel_origin, position):
    """Squared horizontal world distance from the centre for any object transform: two dot products (a
    per-vertex matrix product measures ~4x slower than a dot product in geometry nodes)."""
    def horizontal(vec, tag):
        a_local = to_local_direction(vec, f"{tag} Axis Local").outputs[0]
        c0 = b.vmath("DOT_PRODUCT", rel_origin, vec, label=f"{tag} C0")
        return b.math("ADD", b.vmath("DOT_PRODUCT", position, a_local, label=f"{tag} Dot"), c0, label=tag)

    x = horizontal((1.0, 0.0, 0.0), "X")
    y = horizontal((0.0, 1.0, 0.0), "Y")
    return b.math("MULTIPLY_ADD", x, x, b.math("MULTIPLY", y, y), label="Radius Sq General")


def _planet_radius_axis_aligned(b, matrix, invert, centre, position):
    """(whether the fast form holds for this object, the horizontal distance and its square in the fast form).

    With M the horizontal rows of the object's matrix, r = |M (p - q)| (q = the centre in object space). When
    M's columns are orthogonal (objects standing upright with any rotation about Z and any scale, the usual
    case) that is |k * (p - q)| with k the columns' lengths: one vector product and a distance per vertex, about
    10% cheaper than the general form."""
    flat = b.vector("Horizontal", (1.0, 1.0, 0.0))
    cols = []
    for i in range(3):
        col = b.node("FunctionNodeTransformDirection", f"Column {i}")
        b.link(matrix, col.inputs["Transform"])
        col.inputs["Direction"].default_value = tuple(1.0 if j == i else 0.0 for j in range(3))
        cols.append(b.vmath("MULTIPLY", col.outputs[0], flat, label=f"Horizontal Column {i}"))
    k = b.combine_xyz(*(b.vmath("LENGTH", c, label=f"Column {i} Length") for i, c in enumerate(cols)),
                      label="Column Lengths")
    off = [b.math("ABSOLUTE", b.vmath("DOT_PRODUCT", cols[i], cols[j]), label=f"Cross Term {i}{j}")
           for i, j in ((0, 1), (0, 2), (1, 2))]
    off_sum = b.math("ADD", b.math("ADD", off[0], off[1]), off[2], label="Cross Terms")
    tolerance = b.math("MULTIPLY", b.vmath("DOT_PRODUCT", k, k), 1e-6, label="Tolerance")
    aligned = b.compare("LESS_EQUAL", off_sum, tolerance, data_type="FLOAT", label="Axis Aligned")
    q = b.node("FunctionNodeTransformPoint", "Centre Local")
    b.link(centre, q.inputs["Vector"])
    b.link(invert.outputs[0], q.inputs["Transform"])
    q_scaled = b.vmath("MULTIPLY", q.outputs[0], k, label="Centre Scaled")
    radius = b.vmath("DISTANCE", b.vmath("MULTIPLY", position, k, label="Position Scaled"), q_scaled,
                     label="Radius Fast")
    rel = b.node("ShaderNodeVectorMath", "Rel Scaled", operation="MULTIPLY_ADD")
    b.link(position, rel.inputs[0])
    b.link(k, rel.inputs[1])
    b.link(b.vmath("SCALE", q_scaled, scale=-1.0, label="Centre Scaled Neg"), rel.inputs[2])
    radius_sq = b.vmath("DOT_PRODUCT", rel.outputs[0], rel.outputs[0], label="Radius Sq Fast")
    return aligned, radius, radius_sq


def is_bend_group(tree: bpy.types.NodeTree | None) -> bool:
    """Whether ``tree`` is a scene's bend group."""
    return common.is_scene_group(tree, KIND, GROUP_NAME)


def group_for(scene: bpy.types.Scene) -> bpy.types.NodeTree | None:
    """The bend group of ``scene``, or None when the scene bends nothing yet."""
    return common.scene_group(scene, KIND, GROUP_NAME)


def claim_appended(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Bent objects appended into ``scene`` from another file join the scene's bend (its mode, axis and pivot;
    the values already came from the scene). Returns the objects that joined."""
    return common.claim_orphans(scene, KIND, ensure_bend)


def follow_own_pivot(scene) -> None:
    """A scene whose group's pivot is not its own (a Full Copy: Blender points the copy's settings at the copied
    player, but its objects share the original's group) gets its own group, following its own pivot. A group
    two scenes share with one pivot (a Linked Copy) stays shared. A group that reads the pivot itself (saved by
    an older EnvFX) is pointed at a stand-in (see ``_wire``)."""
    tree = group_for(scene)
    node = tree.nodes.get("Pivot") if tree is not None else None
    if node is None:
        return
    read = cast(bpy.types.NodeSocketObject, node.inputs["Object"]).default_value
    # a group saved by an older EnvFX reads the pivot itself (geometry too): it gets a stand-in
    old_reader = read is not None and not common.is_transform_proxy(read)
    if old_reader or common.proxy_target(read) != scene.envfx.bend.pivot:
        sync(scene, tree)


def ensure_bend(scene) -> bpy.types.NodeTree:
    """The scene's bend group, built for its mode and axis and wired to its settings.

    Every scene of a file has its own group (the first one made is "EnvFX Bend", others are named after their
    scene), so two scenes with different bends render each with its own settings; all bent objects of one
    scene share its group, so one change of a setting changes all of them."""
    mode, axis = scene.envfx.bend.mode, scene.envfx.bend.axis
    tree, built = common.ensure_scene_group(scene, KIND, GROUP_NAME, _stamp(mode, axis),
                                            lambda t: _build(t, mode, axis))
    if built:
        common.relink_bend_readers(tree)
    sync(scene, tree)
    return tree


def sync(scene, tree: bpy.types.NodeTree | None = None) -> bpy.types.NodeTree | None:
    """Wire the scene's group to ``scene``: its pivot node to the scene's pivot object, its values to the scene
    being evaluated (a scene without a bend group is left alone; a group shared with a copied scene is split)."""
    tree = tree or group_for(scene)
    if tree is None:
        return None
    settings = scene.envfx.bend
    if tree.get(common.STAMP_KEY) != _stamp(settings.mode, settings.axis) or not common.is_own_group(scene, tree, KIND):
        return ensure_bend(scene)
    return _wire(scene, tree)


def _wire(scene, tree):
    node = tree.nodes.get("Pivot")
    if node is not None:  # the pivot's transform only (a pivot that is a snow actor would make a cycle)
        common.point_at_transform(node.inputs["Object"], scene.envfx.bend.pivot, f"EnvFX Pivot ({tree.name})")
    _drive(tree, scene)
    return tree


def _evaluate(expr: str, settings) -> float:
    """``expr`` (one of the group's driver expressions) with ``settings``' values, as its driver computes it."""
    names = {prop: float(getattr(settings, prop)) for prop in PROPS}
    return float(eval(expr, {"__builtins__": {}, "sqrt": math.sqrt, "abs": abs}, names))  # our own strings


def _drive(tree, scene) -> None:
    """Drive every socket of the group's DRIVES_KEY by its expression of the settings of the scene being
    evaluated, unless a driver already computes exactly that; a socket that gets its driver now also gets the
    expression's current value (the driver itself runs at the next evaluation). A bare setting is a plain driver
    (as ``common.drive_values`` makes), any other expression a simple expression (no Python: it works with
    auto-run scripts disabled). A driver Blender gave up on is revived (``common.revive``)."""
    drives = tree.get(DRIVES_KEY)
    if drives is None:
        return
    anim = tree.animation_data
    have = {(fc.data_path, fc.array_index): fc for fc in anim.drivers} if anim is not None else {}
    for key, expr in drives.items():
        index, path = key.split("|", 1)
        index = int(index)
        names = [prop for prop in PROPS if re.search(rf"\b{prop}\b", expr)]
        fcurve = have.get((path, max(index, 0)))
        if fcurve is not None and _computes(fcurve, expr, names):
            if common.is_dead(fcurve):
                common.revive(fcurve)
            continue
        if fcurve is not None:
            tree.driver_remove(path, index)
        holder = tree.path_resolve(path.rsplit(".", 1)[0])
        value = _evaluate(expr, scene.envfx.bend)
        if index >= 0:
            holder.default_value[index] = value
        else:
            holder.default_value = value if not isinstance(holder.default_value, bool) else bool(value)
        fcurve = tree.driver_add(path, index)
        if expr in PROPS:
            target = common.new_variable(fcurve, "v", "CONTEXT_PROP").targets[0]
            target.context_property = "ACTIVE_SCENE"
            target.data_path = f"envfx.bend.{expr}"
            continue
        common.new_variable(fcurve, "v", "CONTEXT_PROP")
        fcurve.driver.variables.remove(fcurve.driver.variables[0])
        fcurve.driver.type = "SCRIPTED"
        for prop in names:
            var = fcurve.driver.variables.new()
            var.name, var.type = prop, "CONTEXT_PROP"
            var.targets[0].context_property = "ACTIVE_SCENE"
            var.targets[0].data_path = f"envfx.bend.{prop}"
        fcurve.driver.expression = expr


def _computes(fcurve, expr: str, names: list[str]) -> bool:
    driver = fcurve.driver
    if expr in PROPS:
        var = driver.variables[0] if len(driver.variables) == 1 else None
        return (driver.type == "AVERAGE" and var is not None and var.type == "CONTEXT_PROP"
                and var.targets[0].context_property == "ACTIVE_SCENE"
                and var.targets[0].data_path == f"envfx.bend.{expr}")
    found = {v.name: v for v in driver.variables}
    return (driver.type == "SCRIPTED" and driver.expression == expr and sorted(found) == sorted(names)
            and all(v.type == "CONTEXT_PROP" and v.targets[0].context_property == "ACTIVE_SCENE"
                    and v.targets[0].data_path == f"envfx.bend.{name}" for name, v in found.items()))


def params_from_scene(scene) -> core_bend.BendParams:
    """The scene's bend settings as ``core.bend.BendParams`` (pivot location read from the evaluated pivot)."""
    s = scene.envfx.bend
    pivot = (0.0, 0.0, 0.0)
    if s.pivot is not None:
        pivot = tuple(s.pivot.matrix_world.translation)
    return core_bend.BendParams(
        mode=s.mode,
        axis=s.axis,
        pivot=pivot,
        horizon_offset=s.horizon_offset,
        strength=s.strength,
        spread=s.spread,
        side_strength=s.side_strength,
        side_spread=s.side_spread,
        enabled=s.enabled,
    )


def params_shown_in(scene, owner) -> core_bend.BendParams:
    """What ``scene`` shows of an object on ``owner``'s group: the owner's mode, axis and pivot (the group's
    structure) with ``scene``'s numbers (the group's drivers read the scene being evaluated). They differ only
    for an object shared by two scenes, such as a Linked Copy and its original."""
    own = params_from_scene(owner)
    if scene == owner:
        return own
    return dataclasses.replace(params_from_scene(scene), mode=own.mode, axis=own.axis, pivot=own.pivot)


def refresh_after_load() -> None:
    """Rebuild outdated bend groups (saved by an older EnvFX) in place for their scenes and rewire them (a
    group that a scene shares with its copy stays shared)."""
    for scene, tree in common.adopt_after_load(KIND, GROUP_NAME):
        mode, axis = scene.envfx.bend.mode, scene.envfx.bend.axis
        if common.rebuild_if_outdated(tree, _stamp(mode, axis), lambda t, m=mode, a=axis: _build(t, m, a)):
            common.relink_bend_readers(tree)
        _wire(scene, tree)


def shown_group(obj) -> bpy.types.NodeTree | None:
    """The bend group of ``obj``'s first bend modifier it shows (switched on in the viewport: not excluded), or
    None: what a group that reads ``obj``'s evaluated geometry must undo (``common.point_bend_reader``)."""
    if obj is None:
        return None
    for mod in obj.modifiers:
        if mod.type == "NODES" and mod.show_viewport and is_bend_group(mod.node_group):
            return mod.node_group
    return None


def add_modifier_before_bend(obj, name: str, node_group: bpy.types.NodeTree) -> bpy.types.NodesModifier:
    """Add a geometry-nodes modifier using ``node_group`` to ``obj``, placed before the world bend (the bend
    is always the last deformation, as in the write-up's vertex shader). Returns the modifier."""
    mod = obj.modifiers.new(name, "NODES")
    mod.node_group = node_group
    bend_index = next(
        (i for i, m in enumerate(obj.modifiers) if m.type == "NODES" and is_bend_group(m.node_group)), None)
    if bend_index is not None and bend_index < len(obj.modifiers) - 1:
        obj.modifiers.move(len(obj.modifiers) - 1, bend_index)
    return mod
