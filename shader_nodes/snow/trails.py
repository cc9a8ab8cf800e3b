"""The "EnvFX Snow Trails" group of each scene: built for its actors (``_build_actors`` rebuilds only that part, in
place) and occluders, and the drivers of its modifiers' actor inputs. The graph itself is ``graph._build``'s."""

from __future__ import annotations

import hashlib

from typing import cast

import bpy

from ... import bridge
from .. import common
from .base import ACTORS_KEY, ACTORS_NODE, DRIVEN, GRAVITY, SnowBuilder
from .graph import _build

GROUP_NAME = "EnvFX Snow Trails"
KIND = "snow_trails"  # one group per scene (common.ensure_scene_group)
VERSION = 31
SLOT = "Slot "  # name prefix of the per-actor nodes (rebuilt in place by _build_actors)
KEYS_KEY = "envfx_snow_keys"  # the group's custom property: {actor name: key}
SPECS_KEY = "envfx_snow_specs"  # the group's custom property: the actors it was built for, their sizes and keys


NUMPY_STAMP = ":numpy"  # the end of the stamp of a group built for the Numpy engine (its display only)


def _stamp(has_occluders: bool, numpy: bool = False) -> str:
    """What the group's structure was built for: the version, whether there are occluders (which collection
    is a value of its "Occluders" node, so choosing another one keeps the running trails) and, for the Numpy
    engine, that it is that engine's display only."""
    return f"{VERSION}:{'occluders' if has_occluders else 'open'}{NUMPY_STAMP if numpy else ''}"


def is_numpy_build(tree: bpy.types.NodeTree | None) -> bool:
    """Whether the trails group ``tree`` is built for the Numpy engine (the display of the attribute the engine's
    frame handler writes: no simulation zone, its modifiers' actor inputs not driven)."""
    return tree is not None and str(tree.get(common.STAMP_KEY, "")).endswith(NUMPY_STAMP)


def _wants_numpy(scene) -> bool:
    return bridge.envfx_settings(scene).snow.trails_engine == "NUMPY"


def _specs_of(tree) -> list:
    """The actors the group ``tree`` was built for, as ``ensure_trails`` takes them (those still in the file)."""
    specs = tree.get(SPECS_KEY)
    if specs is None:
        return []
    return [(n, float(r), float(d), float(o)) for n, r, d, o in zip(specs["names"], specs["radius"],
                                                                   specs["depth"], specs["offset"])
            if bpy.data.objects.get(n) is not None]


def _actor_stamp(specs) -> str:
    """What the actor part of the group was built for: the actors' names, radii, depths and bottom offsets."""
    text = repr([(n, round(r, 6), round(d, 6), round(o, 6)) for n, r, d, o in specs])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def actor_input(i: int) -> str:
    return f"Actor {i}"


def _build_actors(tree, specs):
    """(Re)build the actor part of the group in place: the "Actor i" inputs and one point per actor joined into
    the "Actors" node. The rest of the group, and so the simulation zone and its state, is left as it is: actors
    can come and go while the trails run (the zone matches an actor to its previous point by its key)."""
    b = SnowBuilder(tree)
    for node in [n for n in tree.nodes if n.name.startswith(SLOT)]:
        tree.nodes.remove(node)
    items = tree.interface.items_tree
    panel = next(item for item in items if item.item_type == "PANEL" and item.name == "Actors")
    have = {item.name: item for item in items if item.item_type == "SOCKET" and item.in_out == "INPUT"
            and item.name.startswith("Actor ")}
    for i, (name, *_) in enumerate(specs):
        item = have.pop(actor_input(i), None)
        if item is None:
            item = tree.interface.new_socket(name=actor_input(i), in_out="INPUT", socket_type="NodeSocketVector",
                                             parent=panel)
        item.description = f"World location of actor {name} (driven)"
    for item in have.values():
        tree.interface.remove(item)
    # a key per actor name, kept while the actor stays (1, 2, ...: exact in float, never 0)
    keys = {k: int(v) for k, v in tree.get(KEYS_KEY, {}).items()}
    next_key = max(keys.values(), default=0) + 1
    for name, *_ in specs:
        if name not in keys:
            keys[name] = next_key
            next_key += 1
    tree[KEYS_KEY] = {name: keys[name] for name, *_ in specs}
    # what the Numpy engine's frame handler stamps with (operators.snow.numpy_trails): the same actors, sizes and
    # keys as the group's points
    tree[SPECS_KEY] = {"names": [n for n, *_ in specs], "keys": [keys[n] for n, *_ in specs],
                       "radius": [float(r) for _, r, _, _ in specs], "depth": [float(d) for _, _, d, _ in specs],
                       "offset": [float(o) for *_, o in specs]}
    group_in, joined = tree.nodes["Group Input"], tree.nodes[ACTORS_NODE]
    if specs:
        # one point cloud of N points whose values are picked by index (Index Switch nodes): a handful of nodes
        # per frame for any number of actors (a point node and two stores per actor cost ~1 ms a frame at 32).
        # The location comes through drivers on the modifier's inputs (transform only): an Object Info node
        # would make the snow depend on the actor's geometry, and the actor's snow coverage depends on the
        # snow; a driven value inside the group would make every frame a change of the group (re-analysed
        # each frame)
        index = b.node("GeometryNodeInputIndex", f"{SLOT}Index", location=(-2000, 600)).outputs[0]

        def by_index(tag, data_type, values, x):
            node = b.node("GeometryNodeIndexSwitch", f"{SLOT}{tag}", location=(x, 600), data_type=data_type)
            node.index_switch_items.clear()
            for _ in values:
                node.index_switch_items.new()
            b.link(index, node.inputs["Index"])
            for i, value in enumerate(values):
                b.feed(node.inputs[i + 1], value)
            return node.outputs[0]

        location = by_index("Location", "VECTOR", [group_in.outputs[actor_input(i)] for i in range(len(specs))],
                            -1800)
        lift = by_index("Offset", "VECTOR", [(0.0, 0.0, offset) for *_, offset in specs], -1800)
        bottom = b.vmath("SUBTRACT", location, lift, label=f"{SLOT}Bottom")
        bottom.node.location = (-1600, 600)
        pts = b.node("GeometryNodePoints", f"{SLOT}Points", location=(-1400, 600))
        pts.inputs["Count"].default_value = len(specs)
        b.link(bottom, pts.inputs["Position"])
        b.link(by_index("Radius", "FLOAT", [radius for _, radius, _, _ in specs], -1600), pts.inputs["Radius"])
        geo = b.store(pts.outputs[0], "depth", by_index("Depth", "FLOAT", [depth for _, _, depth, _ in specs], -1400),
                      label=f"{SLOT}Depth")
        geo = b.store(geo, "key", by_index("Key", "INT", [keys[name] for name, *_ in specs], -1200), data_type="INT",
                      label=f"{SLOT}Key")
        b.link(geo, joined.inputs[0])
    tree[ACTORS_KEY] = _actor_stamp(specs)


def is_trails_group(tree) -> bool:
    """Whether ``tree`` is a scene's live-trails group."""
    return common.is_scene_group(tree, KIND, GROUP_NAME)


def group_for(scene: bpy.types.Scene) -> bpy.types.NodeTree | None:
    """The live-trails group of ``scene``, or None when none of its snow has trails yet."""
    return common.scene_group(scene, KIND, GROUP_NAME)


def shares_snow(scene, tree=None) -> bool:
    """Whether ``scene`` shares its trails group with another scene through the snow itself: an object of the
    scene that carries the group is in one of those scenes too (Scene > New > Linked Copy links the same snow
    into both). A snow object carries one trails group only, so such scenes keep one trails group, coverage group
    and snow surfaces between them instead of splitting (a split would leave the shared snow on the other
    scene's group and give this one empty groups). ~30 us per object carrying the group among 5000 objects;
    called on changes only."""
    tree = tree or group_for(scene)
    if tree is None:
        return False
    others = [s for s in common.scenes_using(tree, KIND) if s != scene]
    if not others:
        return False
    return any(common.in_scene(obj, s) for obj in common.users_in(scene, tree) for s in others)


def _scene_group(scene, kind, name, stamp, build, keep_shared: bool):
    """``common.ensure_scene_group``, except that with ``keep_shared`` a group the scene shares with another
    scene stays shared (rebuilt in place when outdated) instead of being split."""
    tree = common.scene_group(scene, kind, name) if keep_shared else None
    if tree is not None:
        common.rebuild_if_outdated(tree, stamp, build)
        return tree
    return common.ensure_scene_group(scene, kind, name, stamp, build)[0]


DERIVED_KEY = "envfx_occluders_without_actors"  # a collection's custom property: the occluder collection it mirrors


def occluders_read(scene, actor_names) -> bpy.types.Collection | None:
    """The collection the scene's trails read as occluders: its Occluders setting, or, when some of its objects
    are also actors (``actor_names``), a collection in no scene holding the others (made or brought up to date).
    An actor's snow coverage reads the snow, so snow held down by that actor's geometry would depend on the
    actor's own coverage: a dependency cycle (and Blender crashed evaluating one). An actor in the occluders is
    read as an actor only: its trail stamps the snow where it walks."""
    occ = scene.envfx.snow.occluders
    if occ is None:
        return None
    overlap = [o for o in occ.all_objects if o.name in actor_names]
    if not overlap:
        return occ
    derived = next((c for c in bpy.data.collections if c.get(DERIVED_KEY) == occ.name and c.library is None
                    and c.users <= 1), None)
    if derived is None:
        derived = bpy.data.collections.new(f"EnvFX Occluders ({occ.name}, no actors)")
        derived[DERIVED_KEY] = occ.name
    want = {o.name: o for o in occ.all_objects if o.name not in actor_names}
    for obj in list(derived.objects):
        if obj.name not in want:
            derived.objects.unlink(obj)
    for name, obj in want.items():
        if derived.objects.get(name) is None:
            derived.objects.link(obj)
    return derived


def sync_occluders(scene, tree, specs) -> bool:
    """Point the trails group ``tree`` at what ``occluders_read`` gives for the actors ``specs``; True when the
    node changed."""
    node = tree.nodes.get("Occluders")
    if node is None:
        return False
    read = occluders_read(scene, {name for name, *_ in specs})
    if node.inputs["Collection"].default_value == read:
        return False
    node.inputs["Collection"].default_value = read
    return True


def ensure_trails(scene, specs) -> bpy.types.NodeTree:
    """The scene's "EnvFX Snow Trails" group (each scene of a file has its own: the first one made has that
    name, others are named after their scene), built for the scene's actors and occluders and driven by its
    settings. Rebuilt in place when the scene gets or loses its occluder collection; another occluder collection
    is a value of the "Occluders" node, and when only the actors or their sizes change just the actor part is
    rebuilt (the running trails stay in both cases). The actor inputs of every modifier using it are driven by
    the actors' locations. Scenes that share their snow (``shares_snow``) keep sharing the group. ``specs``: the
    actors as ``operators.snow.actor_specs`` measures them ([(object name, radius, depth, bottom offset)]; lights
    are skipped)."""
    occ = scene.envfx.snow.occluders
    numpy = _wants_numpy(scene)
    tree = _scene_group(scene, KIND, GROUP_NAME, _stamp(occ is not None, numpy),
                        lambda t: _build(t, occ is not None, numpy), shares_snow(scene))
    sync_occluders(scene, tree, specs)
    if tree.get(ACTORS_KEY) != _actor_stamp(specs):
        _build_actors(tree, specs)
    _drive(scene, tree)
    for obj in bpy.data.objects:
        for mod in obj.modifiers:
            if mod.type == "NODES" and cast(bpy.types.NodesModifier, mod).node_group == tree:
                drive_modifier(obj, mod, specs)
    return tree


def set_engine(scene: bpy.types.Scene, tree: bpy.types.NodeTree | None = None) -> bool:
    """Build the scene's trails group for its Trails Engine (in place, for the actors it was built for: the
    simulation zone's graph, its modifiers' actor inputs driven by the actors; or the Numpy engine's display,
    nothing driven); True when it changed. Switching to the simulation zone starts its simulation afresh."""
    tree = tree or group_for(scene)
    if tree is None or tree.library is not None or is_numpy_build(tree) == _wants_numpy(scene):
        return False
    ensure_trails(scene, _specs_of(tree))
    return True


def _modifier_drivers(obj, mod):
    if obj.animation_data is None:
        return {}
    prefix = f'modifiers["{mod.name}"]['
    return {(fc.data_path, fc.array_index): fc for fc in obj.animation_data.drivers
            if fc.data_path.startswith(prefix)}


def undrive_modifier(obj, mod) -> None:
    """Remove the actor drivers of a trails modifier, before the modifier goes (Blender 4.2 keeps drivers of a
    removed modifier)."""
    for fc in _modifier_drivers(obj, mod).values():
        obj.animation_data.drivers.remove(fc)


def drive_modifier(obj, mod, specs: list) -> None:
    """Drive a trails modifier's actor inputs with the actors' world locations (transform channels, no
    Python); drivers of inputs the group no longer has are removed, and all of them when the group is built for
    the Numpy engine (``is_numpy_build``)."""
    tree = mod.node_group
    mod.node_group = tree  # make sure the modifier has the group's current inputs
    drivers = _modifier_drivers(obj, mod)
    wanted = set()
    # the Numpy engine's handler reads the actors itself: a driven input would make the snow follow the actors'
    # animation, and every frame change would evaluate it before the handler wrote its trail
    for i, (name, *_) in enumerate([] if is_numpy_build(tree) else specs):
        actor = cast(bpy.types.Object, bpy.data.objects.get(name))  # one of specs: measured in the scene
        ident = common.input_identifier(tree, actor_input(i))
        path = f'modifiers["{mod.name}"]["{ident}"]'
        mod[ident] = actor.matrix_world.translation.to_tuple()
        for k, axis in enumerate("XYZ"):
            wanted.add((path, k))
            fcurve = drivers.get((path, k))
            var = fcurve.driver.variables[0] if fcurve and fcurve.driver.variables else None
            if (var is not None and var.type == "TRANSFORMS" and var.targets[0].id == actor
                    and var.targets[0].transform_type == f"LOC_{axis}"):
                continue
            if fcurve is None:
                fcurve = obj.driver_add(path, k)
            target = common.new_variable(fcurve, "loc", "TRANSFORMS").targets[0]
            target.id = actor
            target.transform_type = f"LOC_{axis}"
            target.transform_space = "WORLD_SPACE"
    for key, fc in drivers.items():
        if key not in wanted:
            obj.animation_data.drivers.remove(fc)


def _drive(scene, tree, driven=DRIVEN):
    common.drive_values(tree, scene, {label: f"envfx.snow.{prop}" for label, prop in driven.items()})
    if GRAVITY in tree.nodes:  # the puffs fall with the scene's gravity
        common.drive_values(tree, scene, {GRAVITY: "gravity[2]"})
