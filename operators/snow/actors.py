"""Snow actors: what the objects of the scene's actor collection carve (radius, depth, bottom offset), measured as
they physically stand (without the world bend)."""

from __future__ import annotations

import bpy
import numpy as np

from ... import bridge
from ...core import bend as core_bend
from ...core import snow as core_snow
from ...shader_nodes import bend as bend_nodes
from ...shader_nodes import common
from .collection import SnowInputError

ACTOR_TYPES = {"MESH", "CURVE", "CURVES", "POINTCLOUD", "SURFACE", "META", "FONT", "EMPTY", "ARMATURE", "VOLUME"}


def _actor_extent(obj, corners=None):
    """(world size x, y, z measured along the actor's own heading, height of its origin above its lowest point)
    of the box ``corners`` (8, 3) in the object's space (default: its bounding box).

    The size is taken in the actor's heading (its rotation about world Z taken out), so an actor's radius is the
    same whichever way it faces: the live trails (built when the actors change) and a bake (started at any
    frame) give a walking, turning actor one radius. The world matrix brings in the parents' scale, and a
    negative scale gives the same size as a positive one."""
    if corners is None:
        corners = np.array([list(c) for c in obj.bound_box], dtype=np.float64)
    m = bridge.matrix_to_numpy(obj.matrix_world)
    rel = corners @ m[:3, :3].T  # world offsets of the bounding box corners from the origin
    hx, hy = m[0, 0], m[1, 0]  # the heading: the local X axis seen from above ...
    if hx * hx + hy * hy < 1e-18:  # ... or, with X upright, the local Y axis turned back by 90 degrees
        hx, hy = m[1, 1], -m[0, 1]
    n = float(np.hypot(hx, hy))
    c, s = (hx / n, hy / n) if n > 0 else (1.0, 0.0)
    x = c * rel[:, 0] + s * rel[:, 1]
    y = -s * rel[:, 0] + c * rel[:, 1]
    dims = np.array([np.ptp(x), np.ptp(y), np.ptp(rel[:, 2])])
    return dims, float(-rel[:, 2].min())


def bent_actors(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """The actors of ``scene`` that show a bend (their measure needs their evaluated mesh, ``_unbent_box``)."""
    coll = bridge.envfx_settings(scene).snow.actors
    return [o for o in coll.all_objects if bend_nodes.shown_group(o) is not None] if coll is not None else []


def _unbent_box(obj, scene, depsgraph=None):
    """The 8 corners (object space) of the bounding box of ``obj`` as its modifiers before the bend make it, for an
    actor that shows a bend; None otherwise. ``bound_box`` includes every modifier, the bend too: an actor away
    from the player's flat zone would measure its feet lower by the bend's drop there, sink below the snow and
    carve nothing. The bend moves a point along world Z only, by a drop that depends on its world X and Y, so
    adding it back to the evaluated vertices (``core.bend.inverse``) gives them exactly as before the bend.
    Read in ``depsgraph`` (default: the context's)."""
    group = bend_nodes.shown_group(obj)
    if group is None or obj.type != "MESH" or scene != getattr(bpy.context, "scene", None):
        return None
    depsgraph = depsgraph or bpy.context.evaluated_depsgraph_get()
    local = bridge.evaluated_positions(obj, depsgraph).astype(np.float64)
    if not len(local):
        return None
    owner = common.group_owner(group) or scene
    params = bend_nodes.params_shown_in(scene, owner)
    m = bridge.matrix_to_numpy(obj.evaluated_get(depsgraph).matrix_world)
    if core_bend.is_flattened(m):
        return None
    world = core_bend.inverse(local @ m[:3, :3].T + m[:3, 3], params)
    local = np.linalg.solve(m[:3, :3], (world - m[:3, 3]).T).T
    return _box_corners(local.min(axis=0), local.max(axis=0))


def _box_corners(lo, hi) -> np.ndarray:
    """(8, 3) corners of the axis-aligned box from ``lo`` to ``hi``."""
    return np.array([(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])],
                    dtype=np.float64)


def measure_actor(obj: bpy.types.Object, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None
                  ) -> tuple[float, float, float] | str:
    """(radius, depth, bottom offset) of the actor ``obj`` as it is now, or why it does not touch snow (a str).
    With ``depsgraph``, as evaluated there (the buffer bake measures each actor at each frame it bakes: an actor
    whose size is animated, or a hidden one the context's evaluation leaves at an old frame)."""
    if obj.type not in ACTOR_TYPES:
        return f"{obj.type.lower()} objects do not touch snow"
    s = bridge.envfx_settings(scene).snow
    o = bridge.envfx_settings(obj).snow
    ev = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    if obj.type == "EMPTY":
        # its display size in world units (parents' and negative scale included, as for meshes); its origin is its
        # bottom
        k = float(ev.empty_display_size)
        dims = _actor_extent(ev, _box_corners((-k,) * 3, (k,) * 3))[0] if o.radius <= 0 else (0.0, 0.0, 0.0)
        offset = 0.0
    else:
        dims, offset = _actor_extent(ev, _unbent_box(obj, scene, depsgraph))
    radius, depth = core_snow.actor_size(dims, o.radius, o.depth, s.thickness)
    if not (np.isfinite(bridge.matrix_to_numpy(ev.matrix_world)).all() and np.isfinite([radius, depth, offset]).all()):
        return NOT_A_NUMBER
    if radius <= 0:
        return NO_SIZE
    return radius, depth, offset


NO_SIZE = "has no size: set its Snow Radius"  # measure_actor's reason for an actor of size 0 (now)
# measure_actor's reason for an actor whose place or size is not a number (now): it carves nothing
NOT_A_NUMBER = ("its location, rotation or scale (or its parent's) is not a number (NaN or infinite): "
                "fix its transform; it carves nothing meanwhile")


def actor_specs(scene: bpy.types.Scene, sizeless: bool = False
                ) -> tuple[list[tuple[str, float, float, float]], dict[str, str]]:
    """([(name, radius, depth, bottom offset)], {name: why skipped}) for the scene's actor collection. A bent
    actor is measured as before its bend (``_unbent_box``), so it carves where it physically stands. With
    ``sizeless``, an actor of size 0 now (a keyed grow-in: the buffer bake measures it at each frame) counts, as
    radius 0, instead of being skipped."""
    s = bridge.envfx_settings(scene).snow
    coll = s.actors
    if coll is None:
        raise SnowInputError("No actor collection: choose the collection of snow actors in the Snow panel "
                             "(scene.envfx.snow.actors)",
                             cli="No actor collection: pass --actors COLLECTION (the collection of snow actors)")
    if bpy.data.collections.get(coll.name) is None:
        raise SnowInputError(f"The actor collection {coll.name!r} was deleted: choose another",
                             cli=f"The actor collection {coll.name!r} was deleted: pass --actors COLLECTION")
    specs, skipped = [], {}
    for obj in sorted(coll.all_objects, key=lambda o: o.name):
        measured = measure_actor(obj, scene)
        if sizeless and measured == NO_SIZE:
            specs.append((obj.name, 0.0, 0.0, 0.0))
        elif isinstance(measured, str):
            skipped[obj.name] = measured
        else:
            specs.append((obj.name, *measured))
    if not specs:
        why = "; ".join(f"{n} ({r})" for n, r in skipped.items())
        raise SnowInputError(f"The actor collection {coll.name!r} has no usable actors" + (f": {why}" if why else
                             ": add characters to it"))
    return specs, skipped
