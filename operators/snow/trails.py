"""Live snow trails: the actors carve trails into the snow meshes as the scene plays (geometry nodes, a group per
scene); the trails follow the actor collection, the actors sink into the snow (their coverage), and what is left
behind when trails go by hand is cleaned up."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import bpy

from ... import bridge
from ...shader_nodes import bend as bend_nodes
from ...core import bend as core_bend
from ...core import snow as core_snow
from ...shader_nodes import common
from ...shader_nodes import snow as snow_nodes
from ..common import (ObjectsResult, changeable, kept_by_override_reason, linked_reason, nodes_modifiers,
                      report_result)
from .actors import ACTOR_TYPES, actor_specs, bent_actors
from .collection import (COLLECTION_KEY, COLLECTION_NAME, SnowInputError, ensure_snow_collection, in_scene_tree,
                         is_snow_object, snow_objects, terrain_scenes)

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

MODIFIER_NAME = "EnvFX Snow Trails"
COVERAGE_MODIFIER = "EnvFX Snow Coverage"
COVERAGE_TYPES = {"MESH", "CURVES", "POINTCLOUD"}


def trails_modifiers(obj: bpy.types.Object) -> list[bpy.types.NodesModifier]:
    """The object's live-trails modifiers (of any scene's trails group)."""
    return [m for m in nodes_modifiers(obj) if snow_nodes.is_trails_group(m.node_group)]


def _cannot_carry_snow_reason(obj) -> str | None:
    if obj.type != "MESH":
        return f"{obj.type.lower()} objects cannot carry snow"
    return linked_reason(obj)


def numpy_unsupported(scene: bpy.types.Scene) -> str | None:
    """Why ``scene``'s trails settings need the Simulation Zone engine when its Trails Engine is Numpy (puffs and
    occluders are not ported to numpy), or None."""
    s = bridge.envfx_settings(scene).snow
    if s.trails_engine != "NUMPY":
        return None
    wanted = [name for name, on in (("Snow Puffs", s.puffs), ("Occluders", s.occluders is not None)) if on]
    if not wanted:
        return None
    return (f"The Numpy trails engine has no {' or '.join(wanted)}: switch "
            f"{'them' if len(wanted) > 1 else 'it'} off, or set Trails Engine to Simulation Zone")


def add_trails(scene: bpy.types.Scene, objects: Sequence[bpy.types.Object]) -> tuple[list[str], dict[str, str]]:
    """Give ``objects`` (snow meshes) the live trails; returns (changed names, skipped {name: why}). Snow with
    the trails of another scene of the file (linked into both) takes this scene's trails and actors. With the
    Numpy engine, settings it cannot run (``numpy_unsupported``) are refused, nothing changed."""
    unsupported = numpy_unsupported(scene)
    if unsupported is not None:
        raise SnowInputError(unsupported)
    specs, skipped = actor_specs(scene)
    candidates = changeable(objects, ObjectsResult(skipped=skipped), _cannot_carry_snow_reason)
    if not candidates and not any(trails_modifiers(o) for o in objects):
        raise SnowInputError("No snow mesh to add trails to: generate snow first or select snow meshes",
                             cli="No snow mesh to add trails to: add --generate --objects TERRAIN to make the snow "
                             "first")
    tree = snow_nodes.ensure_trails(scene, specs)
    targets = []
    for obj in candidates:
        # snow with the trails of another scene (linked into both) or of another file takes this scene's
        previous = common.move_to_group(trails_modifiers(obj), tree,
                                        lambda o=obj: bend_nodes.add_modifier_before_bend(o, MODIFIER_NAME, tree))
        if previous == tree:
            continue
        for mod in trails_modifiers(obj):
            snow_nodes.drive_modifier(obj, mod, specs)  # also drops the drivers of the other group's actors
        targets.append(obj)
    _give_coverage(scene, specs)
    sync_surfaces(scene, tree)
    return [o.name for o in targets], skipped


def claim_appended(scene: bpy.types.Scene) -> list[str]:
    """Snow with live trails appended into ``scene`` from another file, or a library override of such snow,
    takes the scene's trails and actors (when the scene has usable actors; else it keeps its own). Returns the
    names that joined."""
    users = common.orphan_users(scene, snow_nodes.KIND)
    if not users:
        return []
    objects = list({obj.name: obj for obj, _mod in users}.values())
    try:
        add_trails(scene, objects)
    except SnowInputError:
        return []
    return [obj.name for obj in objects]


def _give_coverage(scene, specs):
    """Actors get the snow_coverage attribute where they are in the snow."""
    coverage = snow_nodes.ensure_coverage(scene)
    for name, *_ in specs:
        actor = bpy.data.objects[name]
        if actor.type not in COVERAGE_TYPES or actor.library is not None:
            continue
        mods = [m for m in actor.modifiers if m.type == "NODES" and common.is_scene_group(
            m.node_group, snow_nodes.COVERAGE_KIND, snow_nodes.COVERAGE_GROUP)]
        # another scene's or file's coverage becomes this one's
        common.move_to_group(mods, coverage,
                             lambda a=actor: bend_nodes.add_modifier_before_bend(a, COVERAGE_MODIFIER, coverage))


# --- following the actors ---------------------------------------------------------------------------------
# The app handlers (handlers.py) call follow_actors on every frame change and dependency-graph update: actors
# added to or removed from the actor collection, or given another Snow Radius / Snow Depth, change the trails
# without pressing Add Trails again; so does an actor whose world scale changes (animated, or a parent's). Cheap
# when nothing changed: the collection's object names, the actors' world scales and the group's actor stamp
# are compared with what they were; the actors' sizes are measured again only after a change.

_followed: dict = {}  # scene name -> signature of what the trails were last brought up to date with
_clean_later: set = set()  # names of scenes follow_actors found left-overs in (see clean_up_pending)
_surface_users: dict = {}  # scene name -> the user counts of its surfaces' snow at surfaces_left_scene's last look


def forget_followed(scene: bpy.types.Scene | None = None) -> None:
    """After loading a file, or when an actor's Snow Radius / Snow Depth changes: check every scene again (or
    ``scene``). After loading, nothing is left to clean up either."""
    if scene is not None:
        _followed.pop(scene.name, None)
        return
    _followed.clear()
    _clean_later.clear()
    _surface_users.clear()


def surfaces_left_scene(scene: bpy.types.Scene) -> bool:
    """Whether an object of ``scene``'s snow surfaces collection is in none of the scenes that read it any more
    (unlinked or moved out, not deleted). For the dependency-graph handler when collections changed (edits, not
    frames). It looks again only when a snow mesh's user count or the scene's object count changed since the last
    look (unlinking a snow mesh takes one of its users; moving it to a collection outside the scene keeps its
    users but takes an object from the scene). Among 5000 objects the check costs ~0.2 ms, and a look ~30 us more
    per snow mesh."""
    coll = snow_nodes.surfaces_for(scene)
    if coll is None or not coll.objects:
        return False
    users = (len(scene.objects), *((obj.name, obj.users) for obj in coll.objects))
    if _surface_users.get(scene.name) == users:
        return False
    _surface_users[scene.name] = users
    readers = [s for s in bpy.data.scenes if snow_nodes.surfaces_for(s) == coll]
    return any(not any(common.in_scene(obj, s) for s in readers) for obj in coll.objects)


def _signature(scene, tree):
    # the group's users and the file's objects: snow copied (Shift-D), deleted or losing its trails by hand
    # changes which snow the actors sink into (the scene's surfaces collection). (The file's object count, not
    # the scene's: counting a scene's objects walks its collections, ~90 us a frame for 2000 objects here, ~3x
    # the file's.)
    own = (tree.users, len(bpy.data.objects))
    occ = scene.envfx.snow.occluders  # (an actor among them is read as an actor only: snow_nodes.occluders_read)
    own += (occ.name, tuple(occ.all_objects.keys())) if occ is not None else ()
    coll = scene.envfx.snow.actors
    if coll is None:
        return ("", (), (), tree.get(snow_nodes.ACTORS_KEY), own)
    objs = coll.all_objects
    # an actor's size follows its world scale (a character that grows, or squashes and stretches): ~2 us an actor
    scales = tuple(tuple(round(v, 4) for v in o.matrix_world.to_scale()) for o in objs if o.type in ACTOR_TYPES)
    return (coll.name, tuple(objs.keys()), scales, tree.get(snow_nodes.ACTORS_KEY), own)


def trails_users(scene: bpy.types.Scene, tree: bpy.types.NodeTree | None = None) -> list[bpy.types.Object]:
    """The objects of ``scene`` that carry the scene's live trails."""
    tree = tree or snow_nodes.group_for(scene)
    if tree is None:
        return []
    return common.users_in(scene, tree)


def scene_has_trails(scene: bpy.types.Scene, tree: bpy.types.NodeTree | None = None) -> bool:
    """Whether an object of ``scene`` carries the scene's live trails (a scene without them leaves its group
    alone: no rebuild for its actors)."""
    return bool(trails_users(scene, tree))


def sync_surfaces(scene: bpy.types.Scene, tree: bpy.types.NodeTree | None = None) -> bool:
    """The scene's snow surfaces collection (what its actors' coverage reads) holds exactly the objects of the
    scene that carry the scene's trails: copies made with Shift-D join, deleted snow and snow whose trails were
    removed leave. A collection other scenes share (scenes that share their snow, a Linked Copy) holds those of
    each of them. True when it changed."""
    coll = snow_nodes.surfaces_for(scene)
    if coll is None or coll.library is not None:
        return False
    wanted = {obj.name: obj for obj in trails_users(scene, tree)}
    for other in bpy.data.scenes:
        if other != scene and snow_nodes.surfaces_for(other) == coll:
            wanted.update((obj.name, obj) for obj in trails_users(other))
    changed = False
    for obj in list(coll.objects):
        if obj.name not in wanted:
            coll.objects.unlink(obj)
            changed = True
    for name, obj in wanted.items():
        if name not in coll.objects:
            coll.objects.link(obj)
            changed = True
    return changed


def claim_legacy_surfaces(scenes: Iterable[bpy.types.Scene] | None = None) -> list[str]:
    """A file saved before each scene had its own snow surfaces collection (one "EnvFX Snow Surfaces" that every
    scene's coverage group read): each scene whose coverage group reads a collection but that has none of its own
    gets one (the first takes the old one over) and it is brought up to date, so syncing one scene no longer takes
    the other scenes' snow out of what their actors sink into. A coverage group two scenes share (a scene copy)
    is left to its split. Returns the names of the scenes that got one; run after a file is loaded."""
    claimed = []
    for scene in bpy.data.scenes if scenes is None else scenes:
        if snow_nodes.surfaces_for(scene) is not None:
            continue
        coverage = common.scene_group(scene, snow_nodes.COVERAGE_KIND, snow_nodes.COVERAGE_GROUP)
        if coverage is None or snow_nodes.SURFACES_NODE not in coverage.nodes:
            continue
        if any(s != scene for s in common.scenes_using(coverage, snow_nodes.COVERAGE_KIND)):
            continue
        socket = coverage.nodes[snow_nodes.SURFACES_NODE].inputs["Collection"]
        coll = snow_nodes.ensure_surfaces_collection(scene, socket.default_value)
        if socket.default_value != coll:
            socket.default_value = coll
        sync_surfaces(scene)
        claimed.append(scene.name)
    return claimed


_SCENE_KEYS = (common.scene_key(snow_nodes.KIND), common.scene_key(snow_nodes.COVERAGE_KIND), snow_nodes.SURFACES_KEY)


def drop_copied_pointers(scenes: Iterable[bpy.types.Scene]) -> list[str]:
    """Scenes of ``scenes`` that point at the snow groups or surfaces collection of another scene (Scene > New >
    Copy Settings and Linked Copy copy the scene's properties) but have no snow carrying those trails let go of
    them, so the scene that uses them keeps its surfaces in sync and Remove Trails can remove them. Returns the
    names of the scenes that let go."""
    dropped = []
    for scene in scenes:
        shared = [key for key in _SCENE_KEYS if scene.get(key) is not None
                  and any(other != scene and other.get(key) == scene.get(key) for other in bpy.data.scenes)]
        if not shared or scene_has_trails(scene):
            continue
        for key in shared:
            del scene[key]
        dropped.append(scene.name)
    return dropped


def _shares_groups(scene, tree) -> bool:
    """Whether ``scene`` still shares its trails or coverage group with another scene (a scene copy)."""
    if any(s != scene for s in common.scenes_using(tree, snow_nodes.KIND)):
        return True
    coverage = common.scene_group(scene, snow_nodes.COVERAGE_KIND, snow_nodes.COVERAGE_GROUP)
    return coverage is not None and any(s != scene for s in common.scenes_using(coverage, snow_nodes.COVERAGE_KIND))


def follow_actors(scene: bpy.types.Scene, may_split: bool = True) -> bool | None:
    """Bring the live trails up to date with ``scene``'s actor collection; True when they changed. Only the
    actor part of the trails group is rebuilt: the trails already carved stay. An empty collection (or one
    without usable actors) leaves the trails as they are, with no actor stamping. The scene's snow surfaces
    follow the snow that carries its trails.

    A scene that still shares its groups with the scene it was copied from gets its own here (unless the two
    share their snow, ``snow_nodes.shares_snow``: a Linked Copy keeps one set of groups); with
    ``may_split=False`` (Blender's frame_change_pre, see handlers.py) nothing is done and None is returned, to be
    called again after the frame change; so it is when the actors changed and one of them is bent (it is measured
    on its evaluated mesh, ``_unbent_box``, which frame_change_pre must not evaluate). A scene none of whose snow
    carries its trails any more, or whose snow kept the drivers of a trails modifier removed by hand, is booked
    for ``clean_up_pending``."""
    tree = snow_nodes.group_for(scene)
    if tree is None or tree.users == 0 or tree.library is not None:
        return False
    sig = _signature(scene, tree)
    if _followed.get(scene.name) == sig:
        return False
    if _shares_groups(scene, tree) and not snow_nodes.shares_snow(scene, tree):  # a copy: a split, or let go
        if not may_split:
            return None
        if drop_copied_pointers(bpy.data.scenes):  # a Copy Settings without snow
            tree = snow_nodes.group_for(scene)
            if tree is None:
                return False
            sig = _signature(scene, tree)
    if any(_stale_trails_drivers(o) for o in snow_objects(scene) if o.animation_data is not None):
        _clean_later.add(scene.name)
    if not scene_has_trails(scene, tree):  # no snow of the scene has its trails (any more)
        sync_surfaces(scene, tree)
        _followed[scene.name] = _signature(scene, tree)
        _clean_later.add(scene.name)
        return False
    if not may_split and bent_actors(scene):  # a bent actor is measured on its evaluated mesh: not in there
        return None
    try:
        specs = actor_specs(scene)[0]
    except SnowInputError:
        specs = []
    changed = tree.get(snow_nodes.ACTORS_KEY) != snow_nodes._actor_stamp(specs)
    if changed:
        tree = snow_nodes.ensure_trails(scene, specs)
        _give_coverage(scene, specs)
    else:
        snow_nodes.sync_occluders(scene, tree, specs)
    sync_surfaces(scene, tree)
    _followed[scene.name] = _signature(scene, tree)
    return changed


# a library override cannot remove a modifier that came from its library: what to do instead
SWITCH_OFF_INSTEAD = ("switch it off instead (the modifier's viewport and render toggles), or make it local "
                       "(Object > Relations > Make Local)")


def _stale_trails_drivers(obj) -> list:
    """The drivers of ``obj`` that drove the actor inputs of a trails modifier that is gone (removed by hand with
    the X or Apply: Blender keeps the drivers, invalid, and a later modifier of that name would take them)."""
    if obj.animation_data is None:
        return []
    names = {m.name for m in obj.modifiers}
    stale = []
    for fc in obj.animation_data.drivers:
        if not fc.data_path.startswith('modifiers["'):
            continue
        name = fc.data_path[len('modifiers["'):].split('"]', 1)[0]
        if name in names:
            continue
        ours = fc.driver.variables and all(v.name == "loc" and v.type == "TRANSFORMS" for v in fc.driver.variables)
        if name.startswith(MODIFIER_NAME) or ours:
            stale.append(fc)
    return stale


def remove_trails(objects: Iterable[bpy.types.Object], scene: bpy.types.Scene | None = None) -> ObjectsResult:
    """Remove the live trails from ``objects`` (snow meshes), with their actor drivers, and the drivers a trails
    modifier removed by hand left behind. When no snow of ``scene`` (default: the context's) carries its trails
    any more, its actors lose their snow coverage, and its trails and coverage groups (unless something else uses
    them) and its snow surfaces collection go too."""
    scene = scene or bridge.context_scene(bpy.context)
    result = ObjectsResult()
    for obj in changeable(objects, result):
        mods = trails_modifiers(obj)
        stale = _stale_trails_drivers(obj)
        if not mods and not stale:
            result.unchanged.append(obj.name)
            continue
        reason = kept_by_override_reason(obj, mods, "live trails", SWITCH_OFF_INSTEAD) if mods else None
        if reason is not None:
            result.skipped[obj.name] = reason
            continue
        for mod in mods:
            snow_nodes.undrive_modifier(obj, mod)
            obj.modifiers.remove(mod)
        anim = obj.animation_data
        if anim is not None:
            for fc in _stale_trails_drivers(obj):
                anim.drivers.remove(fc)
        result.changed.append(obj.name)
    tree = snow_nodes.group_for(scene)
    claim_legacy_surfaces([scene])  # a file saved before scenes had their own (and not loaded since)
    drop_copied_pointers([s for s in bpy.data.scenes if s != scene])  # copies without snow let go of its groups
    sync_surfaces(scene, tree)
    if not scene_has_trails(scene, tree):
        _remove_scene_snow_groups(scene, tree)
    return result


# --- clean-up of trails removed by hand ---------------------------------------------------------------------
# A trails modifier removed by hand (its X, or Apply) leaves its actor drivers on the snow, and once no snow of
# the scene carries the trails (removed, deleted or unlinked from the scene) the actors keep their coverage
# modifiers, evaluated every frame for nothing, and the file keeps the groups and the surfaces collection.
# follow_actors (called from the frame and dependency-graph handlers) only books the scene: removing modifiers,
# drivers, node groups or collections while Blender evaluates the scene can crash it. clean_up_pending does the
# work at a safe point: a one-shot bpy.app.timers callback (the main loop, between events, outside any
# evaluation: like an operator), and save_pre (before the file is written: no evaluation runs; it also covers
# background scripts, which run no timers).

def pending_clean_up() -> bool:
    """Whether a scene is booked for ``clean_up_pending`` (cheap: the frame handlers ask)."""
    return bool(_clean_later)


def clean_up_dropped_trails(scene: bpy.types.Scene) -> ObjectsResult | None:
    """What Remove Trails does for trails that went by other means: the drivers a trails modifier removed by hand
    left on ``scene``'s snow go, and when no snow of the scene carries its trails any more, its actors' coverage
    modifiers, its trails and coverage groups (unless something else uses them) and its surfaces collection go.
    Snow that still carries the trails keeps them. None when there was nothing to do."""
    tree = snow_nodes.group_for(scene)
    stale = [o for o in snow_objects(scene) if o.animation_data is not None and o.library is None
             and not trails_modifiers(o) and _stale_trails_drivers(o)]
    if not stale and (tree is None or scene_has_trails(scene, tree)):
        return None
    return remove_trails(stale, scene)


def clean_up_pending(scenes: Iterable[bpy.types.Scene] | None = None) -> list[str]:
    """Clean up (``clean_up_dropped_trails``) the scenes follow_actors booked, or ``scenes``. Not from a frame or
    dependency-graph handler (see above). Returns the names of the scenes cleaned up."""
    if scenes is None:
        scenes = [bpy.data.scenes[n] for n in sorted(_clean_later) if n in bpy.data.scenes]
    _clean_later.clear()
    return [scene.name for scene in scenes if clean_up_dropped_trails(scene) is not None]


def _used_by_modifiers(tree) -> bool:
    return any(m.node_group == tree for o in bpy.data.objects for m in nodes_modifiers(o))


def _remove_scene_snow_groups(scene, tree):
    """No snow of ``scene`` carries its trails: its actors' coverage modifiers, its coverage and trails groups
    (when no other object uses them and no other scene has them) and its surfaces collection go. A group with a
    fake user, or nested in another node group, is kept, and stays the scene's (as ``common.release_if_unused``
    keeps one): this runs at every save and from the clean-up timer, not only when asked."""
    coverage = common.scene_group(scene, snow_nodes.COVERAGE_KIND, snow_nodes.COVERAGE_GROUP)
    if coverage is not None and common.scenes_using(coverage, snow_nodes.COVERAGE_KIND) in ([], [scene]):
        for obj in scene.objects:
            if obj.library is not None or obj.override_library is not None:
                continue
            for mod in [m for m in obj.modifiers if m.type == "NODES" and m.node_group == coverage]:
                obj.modifiers.remove(mod)
    kept = set()
    for group, kind in ((coverage, snow_nodes.COVERAGE_KIND), (tree, snow_nodes.KIND)):
        if group is None or _used_by_modifiers(group):
            continue
        scenes = common.scenes_using(group, kind)
        if scenes not in ([], [scene]):
            continue
        if group.use_fake_user or group.users > len(scenes):  # kept by the user, or nested in another group
            kept.add(common.scene_key(kind))
            continue
        bpy.data.node_groups.remove(group)
    surfaces = snow_nodes.surfaces_for(scene)
    if surfaces is not None and not snow_nodes.surfaces_shared(scene, surfaces) and surfaces.library is None:
        bpy.data.collections.remove(surfaces)
    for key in (common.scene_key(snow_nodes.KIND), common.scene_key(snow_nodes.COVERAGE_KIND), snow_nodes.SURFACES_KEY):
        if key in scene and key not in kept:
            del scene[key]
    _followed.pop(scene.name, None)


# --- a file saved when all scenes' snow went into one collection ---------------------------------------------

def split_shared_snow() -> list[str]:
    """A file saved when every scene's snow went into one "EnvFX Snow" collection, linked into each scene that
    generated snow (so each scene showed, rendered and trailed the others' snow): the snow whose terrain is in only
    some of those scenes moves to their own snow collection (the first scene keeps "EnvFX Snow"), and the shared
    one leaves the scenes none of its snow belongs to. Snow whose terrain is in all of them (a Linked Copy of the
    scene) or unknown stays shared. Nothing is done in a file whose scenes point at their collections already.
    Returns the names of the snow objects moved; run after a file is loaded."""
    legacy = bpy.data.collections.get(COLLECTION_NAME)
    if (legacy is None or legacy.library is not None
            or any(isinstance(s.get(COLLECTION_KEY), bpy.types.Collection) for s in bpy.data.scenes)):
        return []
    sharing = [s for s in bpy.data.scenes if in_scene_tree(legacy, s)]
    if len(sharing) < 2:
        return []
    owner = sharing[0]
    owner[COLLECTION_KEY] = legacy
    moved, needed, trailed = [], {owner.name}, {}
    for obj in list(legacy.objects):
        homes = terrain_scenes(obj, sharing) if is_snow_object(obj) else None
        if not homes or len(homes) == len(sharing) or owner in homes:
            needed.update(s.name for s in (homes or sharing))
            continue
        for scene in homes:
            ensure_snow_collection(scene).objects.link(obj)
        legacy.objects.unlink(obj)
        moved.append(obj.name)
        if trails_modifiers(obj) and len(homes) == 1:
            trailed.setdefault(homes[0], []).append(obj)
    for scene in sharing:
        if scene.name not in needed and legacy.name in scene.collection.children:
            scene.collection.children.unlink(legacy)
    for scene, objs in trailed.items():  # trailed by another scene's group (Add Trails there took it): its own
        try:
            add_trails(scene, objs)
        except (SnowInputError, core_snow.SnowError, core_bend.BendError) as exc:
            print(f"EnvFX: the snow {', '.join(o.name for o in objs)} moved to scene {scene.name!r} keeps the trails "
                  f"it had ({exc}); press Add Trails in {scene.name!r}")
    return moved


# --- operators --------------------------------------------------------------------------------------------

class ENVFX_OT_snow_trails_add(bpy.types.Operator):
    """Let the scene's snow actors carve live trails into the selected snow meshes (all snow meshes when none
    is selected)"""

    bl_idname = "envfx.snow_trails_add"
    bl_label = "Add Trails"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = bridge.context_scene(context)
        selected = [o for o in getattr(context, "selected_objects", []) or [] if is_snow_object(o)]
        objects = selected or snow_objects(scene)
        try:
            changed, skipped = add_trails(scene, objects)
        except (SnowInputError, core_snow.SnowError, core_bend.BendError) as exc:  # (a bent actor is measured)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if skipped:
            self.report({"WARNING"}, "Skipped: " + "; ".join(f"{n} ({r})" for n, r in skipped.items()))
        self.report({"INFO"}, f"Trails on {len(changed)} new snow mesh(es); actors updated")
        return {"FINISHED"}


class ENVFX_OT_snow_trails_remove(bpy.types.Operator):
    """Remove the live trails from the selected snow meshes (all snow meshes when none is selected)"""

    bl_idname = "envfx.snow_trails_remove"
    bl_label = "Remove Trails"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = bridge.context_scene(context)
        selected = [o for o in getattr(context, "selected_objects", []) or [] if is_snow_object(o)]
        report_result(self, remove_trails(selected or snow_objects(scene), scene),
                      "Removed the trails from")
        return {"FINISHED"}
