"""Helpers for building node groups from Python, shared by every feature.

Every group is built by an idempotent ``ensure_<group>()``: look the group up by its prefixed name, build it
if missing, rebuild it in place when its stored stamp differs from the code's (so links from modifiers and
materials to the group survive), and return it.
"""

from __future__ import annotations

from typing import cast

import bpy

STAMP_KEY = "envfx_stamp"


def ensure_tree(name: str, tree_type: str, stamp: str, build) -> bpy.types.NodeTree:
    """Return node group ``name`` of ``tree_type``, (re)building it with ``build(tree)`` when its stamp is not
    ``stamp``. A group of that name but another type is renamed out of the way, never overwritten."""
    tree = bpy.data.node_groups.get(name)
    if tree is not None and (tree.bl_idname != tree_type or tree.library is not None):
        tree.name = name + ".user"
        tree = None
    if tree is not None and tree.get(STAMP_KEY) == stamp:
        return tree
    if tree is None:
        tree = bpy.data.node_groups.new(name, tree_type)  # pyright: ignore[reportArgumentType] -- a tree idname
    clear_tree(tree)
    build(tree)
    tree[STAMP_KEY] = stamp
    return tree


# --- groups of a scene -----------------------------------------------------------------------------------
# A live effect's group holds per-scene structure (the bend's mode and pivot, the wind's source object, the
# snow's actors and occluders), so each scene of a file gets its own group: the first one made has the plain
# name, later ones "<name> (<scene>)". The scene points at its group (a scene ID property); the group does not
# point at the scene, and its values read the scene being evaluated (``drive_values``), so an object appended
# or linked into another file brings its group but not the scene it came from, and follows the settings of the
# scene it is in. A group saved before scenes pointed at their groups has the plain name and belongs to the
# scene its drivers read.

KIND_KEY = "envfx_kind"


def scene_key(kind: str) -> str:
    """The scene ID property that points at the scene's group of ``kind``."""
    return f"envfx_group_{kind}"


def is_scene_group(tree, kind: str, legacy_name: str) -> bool:
    return (tree is not None and tree.bl_idname == "GeometryNodeTree"
            and (tree.get(KIND_KEY) == kind or (KIND_KEY not in tree and tree.name == legacy_name)))


def scene_groups(kind: str, legacy_name: str) -> list:
    return [t for t in bpy.data.node_groups if is_scene_group(t, kind, legacy_name)]


def _legacy_scene(tree):
    """The scene a group saved before scenes pointed at their groups reads through its drivers, or None."""
    if KIND_KEY in tree or tree.animation_data is None:
        return None
    for fcurve in tree.animation_data.drivers:
        for var in fcurve.driver.variables:
            if var.type == "SINGLE_PROP" and isinstance(var.targets[0].id, bpy.types.Scene):
                return var.targets[0].id
    return None


def scenes_using(tree, kind: str) -> list:
    """The scenes whose group of ``kind`` is ``tree`` (more than one after a scene was copied)."""
    return [s for s in bpy.data.scenes if s.get(scene_key(kind)) == tree]


def in_scene(obj, scene) -> bool:
    """Whether ``obj`` is in ``scene`` (in its collection tree). A name lookup in the tree's objects: ~30 us among
    5000 objects, where ``scene in obj.users_scene`` walks every object of every scene (~740 us)."""
    return scene.collection.all_objects.get(obj.name) == obj


def group_owner(tree):
    """The (first) scene whose group ``tree`` is, or None (an appended group, or its scene was deleted)."""
    kind = tree.get(KIND_KEY)
    if kind is None:
        return _legacy_scene(tree)
    return next(iter(scenes_using(tree, kind)), None)


def owner_text(tree) -> str:
    """Whose group ``tree`` is, for messages."""
    scene = group_owner(tree)
    return f"scene {scene.name!r}" if scene is not None else f"{tree.name!r} (from another file or a deleted scene)"


def is_own_group(scene, tree, kind: str) -> bool:
    """Whether ``tree`` is ``scene``'s group of ``kind`` and no other scene's (else ``ensure_scene_group`` claims or
    splits it)."""
    return tree.get(KIND_KEY) == kind and scenes_using(tree, kind) == [scene]


def scene_group(scene, kind: str, legacy_name: str):
    """The local group of ``kind`` of ``scene``, or None. Cheap: the frame handlers ask it."""
    tree = scene.get(scene_key(kind))
    if isinstance(tree, bpy.types.NodeTree) and tree.library is None and is_scene_group(tree, kind, legacy_name):
        return tree
    legacy = bpy.data.node_groups.get(legacy_name)
    if legacy is not None and legacy.library is None and KIND_KEY not in legacy and _legacy_scene(legacy) == scene:
        return legacy
    return None


def orphan_users(scene, kind: str) -> list:
    """[(object, modifier)] of ``scene`` whose group of ``kind`` no scene has: it came with objects appended
    from another file (or its scene was deleted), or it is the library's group on a library override (an asset
    that had the effect in its library file). Cheap when there is no such group."""
    orphans = {t for t in bpy.data.node_groups if t.get(KIND_KEY) == kind and (
        t.library is not None or not scenes_using(t, kind))}
    if not orphans:
        return []
    return [(obj, m) for obj in scene.objects for m in obj.modifiers if m.type == "NODES" and m.node_group in orphans
            and (m.node_group.library is None or obj.override_library is not None)]


def _orphan_used_in(scene, kind: str):
    """A local group of ``kind`` that no scene has and an object of ``scene`` uses: the scene takes it over."""
    return next((m.node_group for _obj, m in orphan_users(scene, kind) if m.node_group.library is None), None)


def claim_orphans(scene, kind: str, ensure) -> list:
    """Objects of ``scene`` that use a group of ``kind`` no scene has (appended from another file, or library
    overrides of an asset that had the effect in its library file) join the scene's own group (``ensure(scene)``
    makes or adopts it): they take the scene's structure (mode, pivot, source object...) as well as its values.
    Returns the objects moved."""
    users = orphan_users(scene, kind)
    if not users:
        return []
    tree = ensure(scene)
    moved = []
    for obj, mod in users:
        if mod.node_group != tree:
            mod.node_group = tree
        moved.append(obj)
    return moved


def move_to_group(mods, tree, add):
    """Put an object on its scene's group ``tree`` of an effect, given ``mods``, the object's modifiers of that
    effect. Returns ``tree`` when one of them uses it already (nothing changes); else the group its first one
    used (another scene's or file's), now repointed to ``tree``; else None, after ``add()`` gave it one."""
    if any(m.node_group == tree for m in mods):
        return tree
    if mods:
        previous = mods[0].node_group
        mods[0].node_group = tree
        return previous
    add()
    return None


def ensure_scene_group(scene, kind: str, name: str, stamp: str, build):
    """(the group of ``kind`` of ``scene``, whether it was built now): made when missing, rebuilt in place when
    its stamp is not ``stamp`` (modifiers keep pointing at it). A scene without a group takes over a group no
    scene has that its objects use (appended with them). A scene copied from another shares that scene's group
    until its structure changes: then it gets its own, and its objects' modifiers move to it."""
    tree = scene_group(scene, kind, name) or _orphan_used_in(scene, kind)
    others = [s for s in scenes_using(tree, kind) if s != scene] if tree is not None else []
    moved = []
    if tree is None or others:
        shared = tree
        taken = bpy.data.node_groups.get(name) is not None
        tree = bpy.data.node_groups.new(
            f"{name} ({scene.name})" if taken else name,
            "GeometryNodeTree")  # pyright: ignore[reportArgumentType] -- 4.2 stubs: only "DUMMY"
        if shared is not None:  # objects also in the other scenes (a linked copy) keep the shared group
            moved = [mod for obj in scene.objects if not any(obj.name in s.objects for s in others)
                     for mod in obj.modifiers if mod.type == "NODES" and mod.node_group == shared]
    tree[KIND_KEY] = kind
    scene[scene_key(kind)] = tree
    built = rebuild_if_outdated(tree, stamp, build)
    # moved once built: a modifier moved to the empty group would lose its input values (a copied actor's
    # coverage band became 0, so it never showed snow)
    for mod in moved:
        mod.node_group = tree
    return tree, built


def release_if_unused(tree, kind: str) -> bool:
    """After modifiers left ``tree`` (a scene's group of ``kind``): when nothing but the scenes' pointers uses it any
    more, the scenes let go of it and it is removed, so the file does not keep (and save) a group, with its
    drivers, that moves nothing. The scenes' settings stay; the next ``ensure_scene_group`` builds it again. A
    group with a fake user, or that anything else uses (another scene's objects, a node group it is nested in),
    is kept; EnvFX's own bend readers (``point_bend_reader``) do not count, and let go of it. Returns whether it
    was removed."""
    if tree is None or tree.library is not None or tree.use_fake_user or tree.get(KIND_KEY) != kind:
        return False
    scenes = scenes_using(tree, kind)
    readers = bend_readers_of(tree)
    if tree.users != len(scenes) + len(readers):
        return False
    for reader in readers:
        point_bend_reader(reader, None)
    for scene in scenes:
        del scene[scene_key(kind)]
    stand_ins = [node.inputs["Object"].default_value for node in tree.nodes
                 if node.bl_idname == "GeometryNodeObjectInfo" and not node.inputs["Object"].is_linked]
    bpy.data.node_groups.remove(tree)
    for obj in stand_ins:  # (the pivot's stand-in: nothing else uses it, nor shows it)
        if is_transform_proxy(obj) and obj.users == 0 and obj.library is None:
            bpy.data.objects.remove(obj)
    return True


# --- groups that read another object's bent geometry -------------------------------------------------------
# Every EnvFX deformation sits before the object's own bend and works in physical (unbent) space, but a vertical
# ray at another object's evaluated geometry (the wind's terrain follow, the snow coverage's snow below) hits that
# geometry as its bend draws it. The bend moves a point along world Z only, by -drop(x, y), with drop a function
# of the world x and y alone; the ray is vertical, so it hits at the reading vertex's own x and y, and the target's
# physical height there is the hit's height plus drop(x, y): what the target's bend group does to the reader's own
# vertices. So a reading group nests the target's bend group (the group node BEND_READER, applied to the group's
# own input geometry) while the target shows a bend, and reads per vertex how far it moved that vertex down. The
# reference is kept only while the target is bent (``point_bend_reader``), and ``release_if_unused`` does not count
# it: when the last object leaves a scene's bend, its group still goes.

BEND_READER = "Target Bend"  # group node: the target's bend group applied to the reader's own geometry, or none
BEND_READER_FLAG = "Target Bent"  # Value node: 1 while BEND_READER has a bend group (then the drop is read)
BEND_READER_SAMPLE = "Target Bend Sample"  # Sample Index: each vertex's position after that bend


def build_bend_drop(b, geometry, position, matrix, label: str = "Target Drop"):
    """Build the reading half of a bend reader into ``b``'s tree: per vertex of ``geometry`` (the group's input
    geometry, with ``position`` its positions in object space and ``matrix`` the object's world matrix) the drop
    the target's bend gives that vertex's world x and y (world Z units, positive down), 0 while the group node
    BEND_READER has no bend group (then nothing of it is evaluated). ``point_bend_reader`` sets the bend group."""
    flag = b.value(BEND_READER_FLAG, 0.0)
    b.node("GeometryNodeGroup", BEND_READER)
    sample = b.node("GeometryNodeSampleIndex", BEND_READER_SAMPLE, data_type="FLOAT_VECTOR", domain="POINT")
    b.link(position, sample.inputs["Value"])
    b.link(b.node("GeometryNodeInputIndex", f"{label} Index").outputs[0], sample.inputs["Index"])
    moved = b.vmath("SUBTRACT", sample.outputs["Value"], position, label=f"{label} Moved")
    world = b.node("FunctionNodeTransformDirection", f"{label} World")
    b.link(moved, world.inputs["Direction"])
    b.link(matrix, world.inputs["Transform"])
    sep = b.node("ShaderNodeSeparateXYZ", f"{label} XYZ")
    b.link(world.outputs[0], sep.inputs[0])
    drop = b.math("MULTIPLY", sep.outputs["Z"], -1.0, label=f"{label} Down")
    bent = b.compare("GREATER_THAN", flag, 0.5, data_type="FLOAT", label=f"{label} On")
    tree = b.tree
    tree[_READER_INPUT_KEY] = geometry.node.name
    return b.switch(label, bent, drop, 0.0)


_READER_INPUT_KEY = "envfx_bend_reader_input"  # the reading group's property: the node whose Geometry it bends


def point_bend_reader(tree, bend_tree) -> bool:
    """Make the bend reader of ``tree`` (a group built with ``build_bend_drop``) read ``bend_tree`` (a scene's bend
    group, or None: the target is not bent). Also links it again when a rebuild of ``bend_tree`` in place (a new
    mode or axis) dropped its links. Returns whether anything changed."""
    node = tree.nodes.get(BEND_READER)
    if node is None:
        return False
    sample = tree.nodes[BEND_READER_SAMPLE].inputs["Geometry"]
    flag = tree.nodes[BEND_READER_FLAG].outputs[0]
    value = 0.0 if bend_tree is None else 1.0
    linked = bend_tree is None or (sample.is_linked and node.inputs.get("Geometry") is not None
                                   and node.inputs["Geometry"].is_linked)
    if node.node_tree == bend_tree and linked and flag.default_value == value:
        return False
    if node.node_tree != bend_tree:
        node.node_tree = bend_tree
    if bend_tree is not None:
        source = tree.nodes[tree[_READER_INPUT_KEY]].outputs["Geometry"]
        tree.links.new(source, node.inputs["Geometry"])
        tree.links.new(node.outputs["Geometry"], sample)
    flag.default_value = value
    return True


def bend_readers_of(bend_tree) -> list:
    """The local EnvFX groups whose bend reader reads ``bend_tree``."""
    out = []
    for tree in bpy.data.node_groups:
        if tree.library is None and KIND_KEY in tree:
            node = tree.nodes.get(BEND_READER)
            if node is not None and node.node_tree == bend_tree:
                out.append(tree)
    return out


def relink_bend_readers(bend_tree):
    """After ``bend_tree`` was rebuilt in place: its interface is new, so its readers' links went; link them
    again."""
    for reader in bend_readers_of(bend_tree):
        point_bend_reader(reader, bend_tree)


def rebuild_if_outdated(tree, stamp: str, build) -> bool:
    """Rebuild ``tree`` in place when its stamp is not ``stamp`` (whoever shares it); True when rebuilt."""
    if tree.get(STAMP_KEY) == stamp:
        return False
    clear_tree(tree)
    build(tree)
    tree[STAMP_KEY] = stamp
    return True


def adopt_after_load(kind: str, name: str):
    """For a load_post handler: [(scene, group)] for every local group of ``kind`` that a scene has (the first
    such scene: a group shared by a scene and its copy stays shared), with a group saved before scenes pointed
    at their groups adopted by the scene its drivers read (else the current scene, unless that has a group
    already)."""
    out = []
    for tree in scene_groups(kind, name):
        if tree.library is not None:
            continue
        if KIND_KEY not in tree:
            scene = _legacy_scene(tree) or bpy.context.scene
            if scene is None or isinstance(scene.get(scene_key(kind)), bpy.types.NodeTree):
                continue
            tree[KIND_KEY] = kind
            scene[scene_key(kind)] = tree
        scene = group_owner(tree)
        if scene is not None:
            out.append((scene, tree))
    return out


def clear_tree(tree, keep_interface: bool = False):
    """Empty ``tree`` for a rebuild: its drivers, its nodes and (unless ``keep_interface``) its sockets."""
    if tree.animation_data is not None:
        tree.animation_data_clear()
    tree.nodes.clear()
    if not keep_interface:
        tree.interface.clear()


def socket(tree, name: str, in_out: str, socket_type: str, default=None, min_value=None, max_value=None,
           description: str = ""):
    """Add an interface socket; ``in_out`` is 'INPUT' or 'OUTPUT'. A socket of that name, side and type the
    interface has already (a group rebuilt with its interface kept: ``clear_tree(tree, keep_interface=True)``) is
    reused, so it keeps its identifier and what is linked to it in the groups' users."""
    item = next((i for i in tree.interface.items_tree if getattr(i, "item_type", "SOCKET") == "SOCKET"
                 and i.name == name and i.in_out == in_out and i.socket_type == socket_type), None)
    if item is None:
        item = tree.interface.new_socket(name=name, in_out=in_out, socket_type=socket_type, description=description)
    if default is not None and hasattr(item, "default_value"):
        item.default_value = default
    if min_value is not None and hasattr(item, "min_value"):
        item.min_value = min_value
    if max_value is not None and hasattr(item, "max_value"):
        item.max_value = max_value
    return item


def input_identifier(tree, name: str) -> str:
    """Identifier of the group input called ``name`` (what modifiers are keyed by)."""
    for item in tree.interface.items_tree:
        if getattr(item, "item_type", "SOCKET") == "SOCKET" and item.in_out == "INPUT" and item.name == name:
            return item.identifier
    raise KeyError(f"node group {tree.name!r} has no input {name!r}")


class Builder:
    """Small fluent helper: create nodes, set inputs by name, link by socket name."""

    def __init__(self, tree):
        self.tree = tree
        self.x = 0

    def node(self, node_type: str, label: str = "", location=None, **props):
        node = self.tree.nodes.new(node_type)
        if label:
            node.label = label
            node.name = label
        for key, value in props.items():
            setattr(node, key, value)
        if location is None:
            self.x += 180
            location = (self.x, 0)
        node.location = location
        return node

    def link(self, from_socket, to_socket):
        return self.tree.links.new(from_socket, to_socket)

    def value(self, label: str, value: float = 0.0):
        node = self.node("ShaderNodeValue", label)
        node.outputs[0].default_value = value
        return node.outputs[0]

    def math(self, operation: str, a, b=None, c=None, label: str = "", use_clamp: bool = False):
        node = self.node("ShaderNodeMath", label, operation=operation, use_clamp=use_clamp)
        self.feed(node.inputs[0], a)
        if b is not None:
            self.feed(node.inputs[1], b)
        if c is not None:
            self.feed(node.inputs[2], c)
        return node.outputs[0]

    def vmath(self, operation: str, a, b=None, scale=None, label: str = ""):
        node = self.node("ShaderNodeVectorMath", label, operation=operation)
        self.feed(node.inputs[0], a)
        if b is not None:
            self.feed(node.inputs[1], b)
        if scale is not None:
            self.feed(node.inputs["Scale"], scale)
        out = "Value" if operation in {"DOT_PRODUCT", "LENGTH", "DISTANCE"} else "Vector"
        return node.outputs[out]

    def compare(self, operation, a, b, data_type="INT", label=""):
        node = self.node("FunctionNodeCompare", label, data_type=data_type, operation=operation)
        sockets = [s for s in node.inputs if s.enabled] if data_type != "FLOAT" else list(node.inputs)[:2]
        self.feed(sockets[0], a)
        self.feed(sockets[1], b)
        return node.outputs[0]

    def switch(self, label: str, condition, if_true, if_false=None, input_type: str = "FLOAT"):
        """A Switch node. On a single-value condition (per object) geometry nodes evaluate only the input it
        chooses (an unlinked input: empty geometry, zero)."""
        node = self.node("GeometryNodeSwitch", label, input_type=input_type)
        self.feed(node.inputs["Switch"], condition)
        self.feed(node.inputs["True"], if_true)
        if if_false is not None:
            self.feed(node.inputs["False"], if_false)
        return node.outputs[0]

    def vector(self, label: str, vec):
        node = self.node("FunctionNodeInputVector", label)
        node.vector = vec
        return node.outputs[0]

    def combine_xyz(self, x=0.0, y=0.0, z=0.0, label: str = ""):
        node = self.node("ShaderNodeCombineXYZ", label)
        for sock, value in zip(node.inputs, (x, y, z)):
            self.feed(sock, value)
        return node.outputs[0]

    def feed(self, sock, value):
        """Link ``value`` into ``sock`` when it is a socket, else set it as the socket's value."""
        if isinstance(value, bpy.types.NodeSocket):
            self.tree.links.new(value, sock)
        else:
            sock.default_value = value


def straighten(fcurve) -> bool:
    """Make the driver ``fcurve`` pass its driver's value through unchanged; returns whether it had to change.
    Blender 5.0's ``driver_add`` gives a new driver F-curve two keyframes, (0, 0) and (1, 1), where 4.2 gave an
    identity Generator; an F-curve read within about 1e-4 of a keyframe returns the keyframe's value, so such a
    driver turns every value in (0, 1e-4] into 0 and [0.9999, 1) into 1 (a bend strength of 1e-4 per centimetre
    showed no bend). An F-curve without keyframes or modifiers returns the driver's value as it is. Anything else
    (keys or modifiers a user shaped on purpose) is left alone."""
    keys = [tuple(k.co) for k in fcurve.keyframe_points]
    if keys != [(0.0, 0.0), (1.0, 1.0)] or len(fcurve.modifiers):
        return False
    fcurve.keyframe_points.clear()
    return True


def straighten_drivers() -> int:
    """``straighten`` every driver of EnvFX's node groups, and those of objects that drive an EnvFX modifier's
    inputs (the snow actors' locations), in files saved by Blender 5.0 before the drivers were straightened at
    creation. Linked (library) data is left alone. Returns how many changed."""
    count = 0
    for tree in bpy.data.node_groups:
        anim = tree.animation_data
        if anim is None or tree.library is not None or tree.get(KIND_KEY) is None:
            continue
        count += sum(straighten(fcurve) for fcurve in anim.drivers)
    for obj in bpy.data.objects:
        anim = obj.animation_data
        if anim is None or obj.library is not None:
            continue
        count += sum(straighten(fcurve) for fcurve in anim.drivers if fcurve.data_path.startswith('modifiers["EnvFX'))
    return count


def action_fcurves(id_data) -> list:
    """The F-curves of ``id_data``'s action (none without one): the action's own on 4.2, its layers' channel bags
    on 5.0 (where an action has no F-curves of its own)."""
    action = id_data.animation_data.action if id_data.animation_data else None
    if action is None:
        return []
    if hasattr(action, "fcurves") and bpy.app.version < (5, 0, 0):
        return list(action.fcurves)
    return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
            for fc in bag.fcurves]


def new_variable(fcurve, name: str, var_type: str):
    """Make ``fcurve`` a plain driver (no Python, so it also works with auto-run scripts disabled) with one
    fresh variable, which is returned for its targets to be set; the F-curve passes the value through unchanged
    (``straighten``)."""
    straighten(fcurve)
    driver = fcurve.driver
    driver.type = "AVERAGE"
    while driver.variables:
        driver.variables.remove(driver.variables[0])
    var = driver.variables.new()
    var.name = name
    var.type = var_type
    return var


def prop_variable(driver, name: str, id_type: str, id_data, path: str) -> None:
    """Add to ``driver`` a variable ``name`` reading ``path`` of ``id_data`` (of ``id_type``: a single property)."""
    var = driver.variables.new()
    var.name = name
    var.type = "SINGLE_PROP"
    target = var.targets[0]
    target.id_type = id_type
    target.id = id_data
    target.data_path = path


def add_prop_driver(id_data, data_path: str, target_id, prop_path: str, index: int = -1, id_type: str = "SCENE"):
    """Drive ``id_data.<data_path>`` with ``target_id.<prop_path>`` (a single-property driver)."""
    fcurve = id_data.driver_add(data_path, index) if index >= 0 else id_data.driver_add(data_path)
    target = new_variable(fcurve, "v", "SINGLE_PROP").targets[0]
    target.id_type = id_type
    target.id = target_id
    target.data_path = prop_path
    return fcurve


def value_path(label: str) -> str:
    """Data path of the output value of the Value node ``label``."""
    return f'nodes["{label}"].outputs[0].default_value'


def add_scene_driver(id_data, data_path: str, prop_path: str):
    """Drive ``id_data.<data_path>`` with ``<prop_path>`` of the scene being evaluated (a context-property
    driver: no pointer to a scene, so each scene evaluates it with its own settings)."""
    fcurve = id_data.driver_add(data_path)
    target = new_variable(fcurve, "v", "CONTEXT_PROP").targets[0]
    target.context_property = "ACTIVE_SCENE"
    target.data_path = prop_path
    return fcurve


def is_dead(fcurve) -> bool:
    """Whether Blender has given up on the driver ``fcurve``: once a target cannot be read (an EnvFX property
    while EnvFX is disabled), Blender marks the driver invalid and never evaluates it again, even after the
    property is back. Only reopening the file clears the mark (or ``revive``)."""
    return not (fcurve.driver.is_valid and fcurve.is_valid)


def revive(fcurve):
    """Give the dead driver ``fcurve`` a fresh chance, as reopening the file does: clear the invalid marks and
    set its targets' paths again, which also makes Blender rebuild the dependency graph's relations (clearing
    the marks alone evaluates the driver once but not when its targets change)."""
    fcurve.driver.is_valid = True
    fcurve.is_valid = True
    for var in fcurve.driver.variables:
        for target in var.targets:
            target.data_path = target.data_path


def _reads_envfx(fcurve) -> bool:
    return any(target.data_path.startswith("envfx.") for var in fcurve.driver.variables for target in var.targets)


def _id_collections():
    """The collections of ``bpy.data`` that hold IDs (the ones that can carry drivers)."""
    for prop in bpy.data.bl_rna.properties:
        struct = cast(bpy.types.CollectionProperty, prop).fixed_type if prop.type == "COLLECTION" else None
        while struct is not None and struct.identifier != "ID":
            struct = struct.base
        if struct is not None:
            yield getattr(bpy.data, prop.identifier)


def revive_drivers() -> int:
    """Revive (``revive``) every dead driver of EnvFX: those of EnvFX's node groups and any driver that reads an
    EnvFX property (``envfx.``), wherever it is. For when EnvFX is enabled with a file open: while it was
    disabled, Blender could not read those properties and gave up on the drivers. Linked (library) data is left
    alone: it cannot be changed here, and reopening the file reloads it. Returns how many were revived."""
    count = 0
    for ids in _id_collections():
        for id_data in ids:
            anim = getattr(id_data, "animation_data", None)
            if anim is None or id_data.library is not None:
                continue
            ours = id_data.get(KIND_KEY) is not None if isinstance(id_data, bpy.types.NodeTree) else False
            for fcurve in anim.drivers:
                if is_dead(fcurve) and (ours or _reads_envfx(fcurve)):
                    revive(fcurve)
                    count += 1
    return count


def drive_values(tree, target_id, driven: dict, id_type: str = "SCENE"):
    """Drive each Value node of ``tree`` ({label: property path}) by ``target_id.<property path>``, unless a
    driver already reads exactly that; a node that gets its driver now also gets the property's current value
    (the driver itself runs at the next evaluation). A scene is read as the scene being evaluated
    (``add_scene_driver``), anything else by pointer. A driver that reads the right thing but that Blender gave
    up on (``is_dead``: its property could not be read while EnvFX was disabled) is revived."""
    drivers = {fc.data_path: fc for fc in tree.animation_data.drivers} if tree.animation_data else {}
    from_scene = isinstance(target_id, bpy.types.Scene)
    for label, prop in driven.items():
        path = value_path(label)
        fcurve = drivers.get(path)
        var = fcurve.driver.variables[0] if fcurve and fcurve.driver.variables else None
        if from_scene:
            ok = (var is not None and var.type == "CONTEXT_PROP" and var.targets[0].context_property == "ACTIVE_SCENE"
                  and var.targets[0].data_path == prop)
        else:
            ok = (var is not None and var.type == "SINGLE_PROP" and var.targets[0].id == target_id
                  and var.targets[0].data_path == prop)
        if ok:
            if is_dead(fcurve):
                revive(fcurve)
        else:
            tree.nodes[label].outputs[0].default_value = float(target_id.path_resolve(prop))
            if from_scene:
                add_scene_driver(tree, path, prop)
            else:
                add_prop_driver(tree, path, target_id, prop, id_type=id_type)


def modifier_for(obj, tree):
    """The first nodes modifier of ``obj`` that uses ``tree``, or None."""
    for mod in obj.modifiers:
        if mod.type == "NODES" and mod.node_group == tree:
            return mod
    return None


def users_in(scene, tree) -> list:
    """The objects of ``scene`` with a nodes modifier that uses ``tree``."""
    return [obj for obj in scene.objects if modifier_for(obj, tree) is not None]


# --- objects read for their transform only ----------------------------------------------------------------
# An Object Info node makes its group depend on the object's geometry as well as its transform, even when only
# the Location output is used. A group reading a player that itself reads the group's object (the bend's pivot
# is a snow actor whose coverage reads the snow, which is bent) is then a dependency cycle. So such a node
# points at a stand-in: an Empty in no scene (the node keeps it alive) whose Copy Transforms constraint follows
# the object; an Empty has no geometry, and a constraint is a transform-only relation.

PROXY_KEY = "envfx_transform_of"


def is_transform_proxy(obj) -> bool:
    return obj is not None and obj.type == "EMPTY" and obj.get(PROXY_KEY) is not None


def proxy_target(obj):
    """The object a stand-in follows (None when it follows nothing), or ``obj`` itself when it is no stand-in."""
    if not is_transform_proxy(obj):
        return obj
    con = obj.constraints.get(PROXY_KEY)
    return con.target if con is not None else None


def point_at_transform(socket, target, name: str):
    """Point the Object input ``socket`` (of an Object Info node) at a stand-in following ``target``'s world
    transform (``target`` None: a stand-in at the origin, as an Object Info node of nothing gives). A stand-in
    another node also points at is not changed: this socket gets its own (named ``name``)."""
    proxy = socket.default_value
    if is_transform_proxy(proxy) and proxy_target(proxy) == target:
        return proxy
    if not is_transform_proxy(proxy) or proxy.users > 1 or proxy.library is not None:
        proxy = bpy.data.objects.new(name, None)
        proxy[PROXY_KEY] = True
        proxy.empty_display_size = 0.25
        proxy.hide_render = True
    con = cast(bpy.types.CopyTransformsConstraint,  # ours: named PROXY_KEY, or the one made here
               proxy.constraints.get(PROXY_KEY) or proxy.constraints.new("COPY_TRANSFORMS"))
    con.name = PROXY_KEY
    con.target = target
    socket.default_value = proxy
    return proxy
