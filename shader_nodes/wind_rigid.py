"""Rigid sway (``core.wind.rigid``): the drivers that sway small props whole, and the scene's wind clock.

A scene with rigid props has a clock: a hidden node group (no nodes; it is an ID that can carry drivers and that
the scene points at, as at its wind group) whose float arrays ``TIME_PROP`` and ``CLOCK_PROP`` are driven from the
scene's wind settings (or its wind object) by ``core.wind.rigid.time_expressions`` and ``clock_expressions``,
once a frame for the whole level. Each prop has three drivers, simple expressions that read its category's part
of the clock and hold the prop's own constants (its settings, where it stood, the delta rotation it had): its
wind, a custom property of the object (``PROP_WIND``), and its delta rotation X and Y. No Python runs per frame.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import bpy

from .. import bridge
from ..core.wind import rigid as core_rigid
from . import common
from . import wind as wind_nodes

KIND = "wind_clock"
CLOCK_NAME = ".EnvFX Wind Clock"
TIME_PROP = "envfx_time"
CLOCK_PROP = "envfx_clock"
PROP_WIND = core_rigid.PROP_WIND
PROP_SWAY = core_rigid.PROP_SWAY
SOURCE_KEY = "envfx_clock_source"  # on the clock: the name of the wind object its drivers read ("" for none)
SCENE_KEY = "envfx_clock_scene"  # and the scene whose settings they read
AXES = (0, 1)  # the delta rotation channels a rigid prop's drivers turn (and Z under a turned parent)
TURNED = 1e-6  # a parent whose rotation differs from none by more than this (in a matrix entry) is turned


def clock_of(scene: bpy.types.Scene) -> bpy.types.NodeTree | None:
    """The scene's clock, or None (a scene copied with its objects points at the clock of the scene it was copied
    from, which reads that scene: not its own)."""
    tree = scene.get(common.scene_key(KIND))
    if isinstance(tree, bpy.types.NodeTree) and tree.get(common.KIND_KEY) == KIND and tree.get(SCENE_KEY) == scene:
        return tree
    return None


def is_clock(id_data) -> bool:
    return isinstance(id_data, bpy.types.NodeTree) and id_data.get(common.KIND_KEY) == KIND


def ensure_clock(scene: bpy.types.Scene) -> bpy.types.NodeTree:
    """The scene's clock, made when missing, its drivers pointed at the scene and its wind object."""
    tree = clock_of(scene)
    if tree is None:
        tree = bpy.data.node_groups.new(CLOCK_NAME, "GeometryNodeTree")  # pyright: ignore[reportArgumentType]
        tree[common.KIND_KEY] = KIND
        tree[TIME_PROP] = [0.0] * len(core_rigid.TIME_NAMES)
        tree[CLOCK_PROP] = [0.0] * len(core_rigid.CLOCK_NAMES)
        tree[SCENE_KEY] = scene
        scene[common.scene_key(KIND)] = tree
    wire_clock(scene, tree, force=True)
    return tree


def wire_clock(scene: bpy.types.Scene, tree: bpy.types.NodeTree | None = None, force: bool = False) -> bool:
    """Point the clock's drivers at ``scene`` and its wind object when it changed (set, cleared, deleted) or
    ``force``; returns whether they were rewritten."""
    tree = tree or clock_of(scene)
    if tree is None or tree.library is not None:
        return False
    source = wind_nodes.source_object(scene)
    name = source.name if source is not None else ""
    if not force and tree.get(SOURCE_KEY) == name:
        return False
    if tree.animation_data is not None:
        for fcurve in list(tree.animation_data.drivers):
            tree.animation_data.drivers.remove(fcurve)
    for index, expression in enumerate(core_rigid.time_expressions(source is not None)):
        driver = _scripted(tree.driver_add(f'["{TIME_PROP}"]', index))
        words = set(re.findall(r"[A-Za-z_]\w*", expression))
        for var_name, (what, path) in core_rigid.time_variables(source is not None).items():
            if var_name in words:
                _read(driver, var_name, what, path, scene, source)
        driver.expression = expression
    time_names = {core_rigid.time_variable_name(n): i for i, n in enumerate(core_rigid.TIME_NAMES)}
    for index, expression in enumerate(core_rigid.clock_expressions()):
        driver = _scripted(tree.driver_add(f'["{CLOCK_PROP}"]', index))
        words = set(re.findall(r"[A-Za-z_]\w*", expression))
        for var_name, (what, path) in core_rigid.clock_variables(source is not None).items():
            if var_name in words:
                _read(driver, var_name, what, path, scene, source)
        for var_name, i in time_names.items():
            if var_name in words:
                common.prop_variable(driver, var_name, "NODETREE", tree, f'["{TIME_PROP}"][{i}]')
        driver.expression = expression
    tree[SOURCE_KEY] = name
    tree.update_tag()
    return True


def _read(driver, name: str, what: str, path: str, scene, source) -> None:
    """A variable ``name`` of ``driver`` reading ``path`` of the scene or of its wind object (``what``); a world
    rotation channel of the wind object (``ROT_X``...) is a Transform Channel variable."""
    if what == "source" and path.startswith("ROT_"):
        var = driver.variables.new()
        var.name = name
        var.type = "TRANSFORMS"
        target = var.targets[0]
        target.id = source
        target.transform_type = path
        target.transform_space = "WORLD_SPACE"
        target.rotation_mode = "XYZ"
    elif what == "source":
        common.prop_variable(driver, name, "OBJECT", source, path)
    else:
        common.prop_variable(driver, name, "SCENE", scene, path)


def _scripted(fcurve) -> bpy.types.Driver:
    """The driver of ``fcurve`` made a scripted one with no variables (its F-curve passing the value through)."""
    common.straighten(fcurve)
    driver = fcurve.driver
    driver.type = "SCRIPTED"
    while driver.variables:
        driver.variables.remove(driver.variables[0])
    return driver


def _rigid_curves(obj: bpy.types.Object, axes=AXES) -> list:
    """The drivers of ``obj``'s delta rotation ``axes`` and of the sway's custom properties."""
    anim = obj.animation_data
    if anim is None:
        return []
    return [fc for fc in anim.drivers if (fc.data_path == "delta_rotation_euler" and fc.array_index in axes)
            or fc.data_path in (f'["{PROP_WIND}"]', f'["{PROP_SWAY}"]')]


def parent_frame(obj: bpy.types.Object) -> tuple | None:
    """The matrix (row by row) that takes a turn about world axes to ``obj``'s delta rotation axes, the inverse of
    the rotation of the space Blender applies it in (its parent's world matrix times its parent inverse); None
    when that space is not turned (no parent, or one that is not turned)."""
    if obj.parent is None:
        return None
    space = obj.parent.matrix_world @ obj.matrix_parent_inverse
    rotation = space.to_quaternion().to_matrix()
    if all(abs(rotation[i][j] - (1.0 if i == j else 0.0)) <= TURNED for i in range(3) for j in range(3)):
        return None
    inverse = rotation.transposed()
    return tuple(inverse[i][j] for i in range(3) for j in range(3))


def prop_clock(obj: bpy.types.Object) -> bpy.types.NodeTree | None:
    """The clock ``obj``'s rigid-sway drivers read, or None when it is not in rigid sway."""
    for fcurve in _rigid_curves(obj, ()):
        if fcurve.data_path == f'["{PROP_WIND}"]':
            for var in fcurve.driver.variables:
                if is_clock(var.targets[0].id):
                    return var.targets[0].id
    return None


def is_rigid(obj: bpy.types.Object) -> bool:
    """Whether ``obj`` has rigid sway's drivers (also when its clock was deleted: Add Wind gives it a new one,
    Remove Wind takes them away)."""
    return any(fc.data_path == f'["{PROP_WIND}"]' for fc in _rigid_curves(obj, ()))


def foreign_rotation_reason(obj: bpy.types.Object) -> str | None:
    """Why ``obj``'s delta rotation cannot take the sway's drivers (X and Y, and Z under a turned parent: a driver
    or keyframes of its own are there, or a rotation mode that does not use it), or None."""
    axes = (0, 1, 2) if parent_frame(obj) is not None else AXES
    names = "X, Y or Z" if len(axes) == 3 else "X or Y"
    if not is_rigid(obj) and _rigid_curves(obj, axes):
        return (f"its Delta Rotation {names} already has a driver: rigid sway drives them; remove that driver "
                f"(right-click the field > Delete Driver) or switch Rigid Sway off")
    if any(fc.data_path == "delta_rotation_euler" and fc.array_index in axes for fc in common.action_fcurves(obj)):
        return (f"its Delta Rotation {names} is keyframed: rigid sway drives them; clear those keyframes or switch "
                f"Rigid Sway off")
    if obj.rotation_mode in ("QUATERNION", "AXIS_ANGLE"):
        mode = "Quaternion" if obj.rotation_mode == "QUATERNION" else "Axis Angle"
        return (f"its rotation mode is {mode}: rigid sway turns the Euler delta rotation, which Blender uses only "
                f"in an Euler mode; set Rotation Mode to XYZ Euler (Object > Transform)")
    return None


def prop_params(obj: bpy.types.Object) -> core_rigid.RigidProp:
    w = bridge.envfx_settings(obj).wind
    return core_rigid.RigidProp(origin=tuple(w.rigid_origin), base=tuple(w.rigid_base),
                                frame=tuple(w.rigid_frame) if w.rigid_framed else None)


def add_prop(clock: bpy.types.NodeTree, obj: bpy.types.Object) -> None:
    """Sway ``obj`` whole by the scene's ``clock`` (``ensure_clock``; check ``foreign_rotation_reason`` first). Its
    delta rotation X and Y are kept (the sway is added to them) and its world XY taken as where it stands; adding
    again refreshes that place and moves it to ``clock``."""
    w = bridge.envfx_settings(obj).wind
    if is_rigid(obj):  # (refreshed: its drivers go, its delta rotation is what it was, then it is read again)
        remove_prop(obj)
    w.rigid_base = obj.delta_rotation_euler.copy()
    w.rigid_origin = obj.matrix_world.translation.to_2d()
    frame = parent_frame(obj)
    w.rigid_framed = frame is not None
    if frame is not None:
        w.rigid_frame = frame
    _write_drivers(obj, clock)


def _write_drivers(obj: bpy.types.Object, clock: bpy.types.NodeTree) -> None:
    asset = wind_nodes.asset_params(obj)
    prop = prop_params(obj)
    if PROP_WIND not in obj:
        obj[PROP_WIND] = 0.0
    driver = _scripted(obj.driver_add(f'["{PROP_WIND}"]'))
    for name, index in core_rigid.wind_variables(asset.category).items():
        common.prop_variable(driver, name, "NODETREE", clock, f'["{CLOCK_PROP}"][{index}]')
    driver.expression = core_rigid.wind_expression(asset, prop)
    if prop.frame is not None and PROP_SWAY not in obj:
        obj[PROP_SWAY] = [0.0, 0.0]
    for axis in AXES:
        if prop.frame is None:
            driver = _scripted(obj.driver_add("delta_rotation_euler", axis))
        else:
            driver = _scripted(obj.driver_add(f'["{PROP_SWAY}"]', axis))
        common.prop_variable(driver, "e", "OBJECT", obj, f'["{PROP_WIND}"]')
        for name, index in core_rigid.rotation_variables(asset.category).items():
            common.prop_variable(driver, name, "NODETREE", clock, f'["{CLOCK_PROP}"][{index}]')
        driver.expression = core_rigid.rotation_expression(axis, asset, prop)
    if prop.frame is not None:
        for axis in (0, 1, 2):
            driver = _scripted(obj.driver_add("delta_rotation_euler", axis))
            common.prop_variable(driver, "sx", "OBJECT", obj, f'["{PROP_SWAY}"][0]')
            common.prop_variable(driver, "sy", "OBJECT", obj, f'["{PROP_SWAY}"][1]')
            driver.expression = core_rigid.frame_expression(axis, prop)


def sync_prop(obj: bpy.types.Object) -> None:
    """After ``object.envfx.wind`` changed: rewrite a rigid prop's expressions (they hold its settings)."""
    clock = prop_clock(obj)
    if clock is not None and obj.library is None:
        _write_drivers(obj, clock)


def remove_prop(obj: bpy.types.Object) -> None:
    """Take ``obj`` out of rigid sway: its drivers go and its delta rotation is what it was."""
    w = bridge.envfx_settings(obj).wind
    axes = (0, 1, 2) if w.rigid_framed else AXES
    for axis in axes:
        obj.driver_remove("delta_rotation_euler", axis)
    for key in (PROP_WIND, PROP_SWAY):
        if key in obj:
            obj.driver_remove(f'["{key}"]')
            del obj[key]
    for axis in axes:
        obj.delta_rotation_euler[axis] = w.rigid_base[axis]
    w.rigid_framed = False


def release_unused_clocks(keep: Callable[[bpy.types.Object], bool] | None = None) -> None:
    """Remove the clocks no prop reads any more (and the scenes' pointers at them); with ``keep``, also not the
    clock of a scene holding an object for which ``keep`` is true (Wind on GPU reads its scene's clock)."""
    clocks = [t for t in bpy.data.node_groups if is_clock(t) and t.library is None]
    if not clocks:
        return
    used = {prop_clock(o) for o in bpy.data.objects}
    if keep is not None:
        used |= {clock_of(s) for s in bpy.data.scenes if any(keep(o) for o in s.objects)}
    for tree in clocks:
        if tree in used or tree.use_fake_user:
            continue
        for scene in bpy.data.scenes:
            if scene.get(common.scene_key(KIND)) == tree:
                del scene[common.scene_key(KIND)]
        bpy.data.node_groups.remove(tree)


def claim_orphan_props(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Props of ``scene`` whose clock lost its scene (the scene ``scene`` was copied from with its objects, deleted:
    the clock's drivers read nothing any more, so the props would stand still) sway by ``scene``'s clock: the
    orphan becomes it when the scene has none, else their drivers move to it and the orphan goes. Returns the props
    moved; cheap when no clock lost its scene."""
    orphans = [t for t in bpy.data.node_groups if is_clock(t) and t.library is None and t.get(SCENE_KEY) is None]
    if not orphans or scene.library is not None:
        return []
    props = [o for o in scene.objects if o.library is None and prop_clock(o) in orphans]
    if not props:
        return []
    clock = clock_of(scene)
    if clock is None:
        clock = prop_clock(props[0])  # (one of the orphans)
        assert clock is not None
        clock[SCENE_KEY] = scene
        scene[common.scene_key(KIND)] = clock
        wire_clock(scene, clock, force=True)
    for obj in props:
        if prop_clock(obj) != clock:
            _write_drivers(obj, clock)
        for fcurve in _rigid_curves(obj, (0, 1, 2)):
            common.revive(fcurve)
    used = {prop_clock(o) for o in bpy.data.objects if o.users_scene}  # (not the deleted scene's own objects)
    for tree in orphans:
        if tree != clock and tree not in used and not tree.use_fake_user:
            bpy.data.node_groups.remove(tree)
    return props


def keep_in_sync(scene: bpy.types.Scene, *_args) -> None:
    """(depsgraph_update_post and frame_change_pre) Rewire the scene's clock when its wind object was set, cleared,
    deleted or unlinked; props whose clock lost its scene join the scene's (``claim_orphan_props``)."""
    claim_orphan_props(scene)
    tree = clock_of(scene)
    if tree is not None:
        wire_clock(scene, tree)
