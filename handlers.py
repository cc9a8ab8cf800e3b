"""Application handlers (registered in __init__.register, removed in unregister)."""

import bpy
from bpy.app.handlers import persistent

from . import bridge, progress
from .operators import bend as bend_ops
from .operators import common as ops_common
from .operators import lightmap as lightmap_ops
from .operators.snow import bake as snow_bake
from .operators.snow import live_push
from .operators.snow import numpy_trails
from .operators.snow import render as snow_render
from .operators.snow import trails as snow_trails
from .shader_nodes import bend as bend_nodes
from .shader_nodes import common
from .shader_nodes import lightmap as lightmap_nodes
from .shader_nodes import vat as vat_nodes
from .shader_nodes import wind as wind_nodes
from .shader_nodes import wind_gpu, wind_rigid
from .shader_nodes import bend_gpu


@persistent
def on_load_post(*_args):
    """Files saved with an older EnvFX keep working: outdated node groups are rebuilt in place, and drivers made
    by Blender 5.0 with its default keyframes pass their values through unchanged (``common.straighten``). First,
    before anything is evaluated, EnvFX's modifiers that read a texture cut short are turned off
    (``operators.common.guard_damaged_images``: Blender 4.2 would never finish opening the file)."""
    try:
        ops_common.guard_damaged_images()
        ops_common.report_missing_images()
    except Exception as exc:  # a handler must never break loading
        print(f"EnvFX: the textures of EnvFX's modifiers could not be checked: {exc}")
    common.straighten_drivers()
    bend_nodes.refresh_after_load()
    wind_nodes.refresh_after_load()
    vat_nodes.refresh_after_load()


# --- objects appended from another file join the scene's bend, wind and snow trails ---
# An appended bent, windy or trailed object brings its group from its file (no scene: the group's values read
# the scene being evaluated), with that file's structure (the bend's mode and pivot, the wind's source object,
# the trails' actors). At the next update it joins the scene's own group; so does a library override of a bent,
# windy or trailed asset (its modifier uses the library's group). Checked only when the number of node groups,
# objects or scenes, or the scene's snow actors, changed: appending or linking adds groups, making an override or
# a Full Copy adds objects, deleting the scene a Linked Copy was made from leaves its objects on that scene's
# group, and trailed snow waits for the scene's actors. After each dependency-graph update, a Full Copy's bend
# also gets its own group when its pivot (Blender points the copy at the copied player) is not its group's.

_seen: dict = {}  # scene name -> (node groups, objects, scenes, snow actors) at the last check


@persistent
def on_follow_own_pivot(scene, *_args):
    """depsgraph_update_post and frame_change_post: a Full Copy's bend gets its own group (cheap when the scene's
    pivot is its group's: one node lookup). Blender copies a scene inside a frame change of the new scene; not in
    its frame_change_pre, where Blender 4.2 crashed when a copied scene's modifiers were re-pointed before its
    first evaluation (see the snow handlers below), but in the frame_change_post of that same change."""
    try:
        bend_nodes.follow_own_pivot(scene)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the copied scene's bend could not follow its own pivot: {exc}")


@persistent
def on_bend_gpu_sync(scene, *_args):
    """depsgraph_update_post and frame_change_pre: a scene's pivot set, cleared, deleted or unlinked reaches the
    materials bent on the GPU (shader_nodes/bend_gpu.py: the pivot they read)."""
    try:
        bend_gpu.sync_scene(scene)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the GPU bend could not follow the scene's pivot: {exc}")


@persistent
def on_wind_gpu_sync(scene, *_args):
    """depsgraph_update_post and frame_change_pre: a scene's camera or grass push set, cleared, deleted or switched
    reaches the materials in the wind on the GPU (shader_nodes/wind_gpu.py: the camera and buffer they read)."""
    try:
        wind_gpu.sync_scene(scene)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the wind on the GPU could not follow the scene's camera or grass push: {exc}")


@persistent
def on_claim_appended(scene, *_args):
    actors = scene.envfx.snow.actors
    counts = (len(bpy.data.node_groups), len(bpy.data.objects), len(bpy.data.scenes),
              actors.name if actors is not None else "")
    if _seen.get(scene.name) == counts:
        return
    _seen[scene.name] = counts
    try:
        bend_nodes.claim_appended(scene)
        wind_nodes.claim_appended(scene)
        snow_trails.claim_appended(scene)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: appended objects could not join the scene's bend, wind and snow trails: {exc}")


@persistent
def on_claim_load_post(*_args):
    _seen.clear()


# --- snow: the live trails follow the actor collection ---
# A scene copied with its snow (Scene > New > Full Copy) shares its original's trails and coverage groups until the
# handler gives it its own. Not in frame_change_pre: Blender runs that handler for the new scene inside the copy,
# between building its dependency graph and evaluating it the first time, and Blender 4.2 crashes when a
# modifier's group or a driver changes there (the graph's rebuild reads copies not made yet). The split waits for
# the frame_change_post of that same frame change (the graph is evaluated then) or the next depsgraph update.

_split_later: set = set()  # names of scenes whose split frame_change_pre left to frame_change_post


def _follow(scene, may_split: bool, depsgraph=None):
    try:
        # snow unlinked from the scene (moved out, not deleted) leaves what its actors sink into at once. Only
        # when collections changed, and only in the dependency-graph handler: while the trails play, every frame
        # tags the collections the coverage reads, and the per-frame check must stay cheap
        if depsgraph is not None and depsgraph.id_type_updated("COLLECTION") and snow_trails.surfaces_left_scene(scene):
            snow_trails.forget_followed(scene)
        if snow_trails.follow_actors(scene, may_split=may_split) is None:
            _split_later.add(scene.name)
        if snow_trails.pending_clean_up() and timers_run() and not bpy.app.timers.is_registered(snow_clean_up):
            bpy.app.timers.register(snow_clean_up, first_interval=0.0)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the snow trails could not follow the actors: {exc}")


def timers_run() -> bool:
    """Whether Blender runs timers: not in background mode (``blender -b``, Blender as a Python module), which has
    no event loop; there the next save (or Remove Trails) cleans up. (Blender 4.2 also crashes at exit when a
    timer is still registered.)"""
    return not bpy.app.background


def snow_clean_up():
    """One-shot timer: what trails removed by hand (or snow that left its scene) left behind goes (the modifiers'
    drivers, the actors' coverage, the groups and surfaces of a scene without trails: operators.snow
    clean_up_pending). A timer runs in the main loop outside any evaluation, so removing data is safe there
    (not in the frame or dependency-graph handlers that book the work); it waits while a job reads the scenes:
    a render or bake, any job that locks the interface (Blender asks timers not to change data then), or an
    EnvFX bake run from the UI."""
    wm = getattr(bpy.context, "window_manager", None)
    if (any(bpy.app.is_job_running(job) for job in ("RENDER", "OBJECT_BAKE", "COMPOSITE"))
            or (wm is not None and wm.is_interface_locked) or progress.job_running()):
        return 1.0
    try:
        snow_trails.clean_up_pending()
    except Exception as exc:  # a timer must not raise into the main loop
        print(f"EnvFX: the left-overs of removed snow trails could not be removed: {exc}")
    return None


@persistent
def on_snow_follow_actors(scene, depsgraph=None, *_args):
    """Actors added to or removed from the snow actor collection (or resized) change the live trails; cheap
    when nothing changed."""
    _follow(scene, may_split=True, depsgraph=depsgraph)


@persistent
def on_snow_follow_actors_pre(scene, *_args):
    """frame_change_pre: as on_snow_follow_actors, except that a copied scene's split waits (see above)."""
    _follow(scene, may_split=False)


@persistent
def on_snow_follow_actors_post(scene, *_args):
    """frame_change_post: the split frame_change_pre left, and an actor whose size changed with this frame (its
    scale keyed, or its parent's): frame_change_pre still sees the last frame's world matrices, so the trails
    would take the new size one frame late; here the frame is evaluated, and a change of the trails group is
    evaluated again before the frame is shown (cheap when nothing changed: the signature follow_actors
    compares)."""
    _split_later.discard(scene.name)
    _follow(scene, may_split=True)


@persistent
def on_snow_load_pre(*_args):
    """The booked clean-up belongs to the file being closed (and Blender 4.2 crashes at exit after a file was
    loaded with a timer pending)."""
    if bpy.app.timers.is_registered(snow_clean_up):
        bpy.app.timers.unregister(snow_clean_up)


@persistent
def on_snow_load_post(*_args):
    snow_render.forget()  # the new file has simulated nothing
    snow_trails.forget_followed()
    _split_later.clear()
    try:
        snow_trails.split_shared_snow()  # a file saved when all scenes' snow went into one collection
    except Exception as exc:  # a handler must never break loading
        print(f"EnvFX: the scenes could not get their own snow collections: {exc}")
    try:
        snow_trails.claim_legacy_surfaces()  # a file saved when all scenes shared one snow surfaces collection
    except Exception as exc:  # a handler must never break loading
        print(f"EnvFX: the scenes could not get their own snow surfaces: {exc}")
    # each scene's snow surfaces hold exactly its trailed snow from the load on, not from a later frame change:
    # Blender 4.2 crashed when a frame change unlinked a stale member while it switched to that scene
    try:
        for scene in bpy.data.scenes:
            snow_trails.sync_surfaces(scene)
    except Exception as exc:  # a handler must never break loading
        print(f"EnvFX: the scenes' snow surfaces could not be brought up to date: {exc}")
    try:
        snow_bake.refresh_buffer_groups()  # Snow from Bake groups of an older EnvFX rebuilt; each bake as it is now
    except Exception as exc:  # a handler must never break loading
        print(f"EnvFX: the snow driven by a bake could not be brought up to date (press Snow from Bake): {exc}")


@persistent
def on_snow_save_pre(*_args):
    """Before a save: what trails removed by hand left behind is not written into the file (background scripts
    run no timers). No evaluation runs here, so removing data is safe."""
    try:
        snow_trails.clean_up_pending(list(bpy.data.scenes))
    except Exception as exc:  # a handler must never break saving
        print(f"EnvFX: the left-overs of removed snow trails could not be removed: {exc}")


# --- library overrides keep their per-object settings ---

@persistent
def on_save_pre_overrides(*_args):
    """Blender 5.0 saves a change of an add-on setting on a library override (Exclude from Bend, the wind
    settings of a linked plant) only when the linked original holds that setting's group too; otherwise the
    change is lost at the next load. Give the override and its original the groups of ``Object.envfx`` before
    each save (reading a group makes it; the library file is not written)."""
    for obj in bpy.data.objects:
        reference = obj.override_library.reference if obj.override_library is not None else None
        if reference is None:
            continue
        for o in (obj, reference):
            settings = bridge.envfx_settings(o)
            _ = settings.wind, settings.snow  # reading makes the groups


# --- groups that nothing moves any more ---

@persistent
def on_save_pre_release_groups(*_args):
    """A scene's bend or wind group whose last object was deleted by hand (not taken out with Remove Bend or
    Remove Wind, which let go of it at once) is let go of before the file is saved, so the file does not keep a
    group, with its drivers, that moves nothing. Not done in the depsgraph or frame handlers: removing data while
    Blender evaluates it can crash it; a save is a safe point. The scenes' settings stay, and Add Bend or Add Wind
    builds the group again."""
    try:
        for kind in (bend_nodes.KIND, wind_nodes.KIND):
            for tree in [t for t in bpy.data.node_groups if t.get(common.KIND_KEY) == kind]:
                common.release_if_unused(tree, kind)
    except Exception as exc:  # a handler must never stop a save
        print(f"EnvFX: unused bend and wind groups could not be removed before saving: {exc}")


# --- groups that read another object's bent geometry follow its bend ---

@persistent
def on_bend_readers(scene, *_args):
    """depsgraph_update_post: the wind's terrain follow and the snow coverage read the bend their target shows now
    (``operators.bend.sync_readers``): a bend modifier switched on or off by hand, a terrain or snow that got
    or lost its bend, a bend group rebuilt for a new mode. Only pointers and links change here, no data is
    removed; cheap when nothing changed (a few modifiers)."""
    try:
        bend_ops.sync_readers(scene)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the wind's terrain follow and the snow coverage could not follow the bend: {exc}")


# --- snow: the Numpy trails engine ---
# A scene whose Trails Engine is Numpy keeps its trails in numpy (operators.snow.numpy_trails): after the frame is
# evaluated (the actors' world locations are this frame's) its state is brought to the frame and written into the
# snow mesh, which Blender evaluates again before the frame is shown (a handler's change is picked up in the same
# frame change); after a dependency-graph update (an actor moved by hand, a setting changed) the same, cheap when
# nothing changed. Registered after the handlers that follow the actors (the group's actors are this frame's).

@persistent
def on_snow_numpy_trails(scene, depsgraph=None, *_args):
    """frame_change_post and depsgraph_update_post: the Numpy engine's trails of ``scene`` at its frame."""
    try:
        numpy_trails.show(scene, depsgraph)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the numpy snow trails could not be brought to frame {scene.frame_current}: {exc}")


@persistent
def on_snow_numpy_load_post(*_args):
    """The states belonged to the file closed; the new file's tracks are read from its scenes."""
    numpy_trails.forget()


@persistent
def on_snow_numpy_undo(scene, *_args):
    """undo_post and redo_post: the snow meshes came back with another step's snow_trail; written again now."""
    try:
        numpy_trails.write_again()
        numpy_trails.show(scene)
    except Exception as exc:  # a handler must never break undo
        print(f"EnvFX: the numpy snow trails could not be shown again after undo: {exc}")


@persistent
def on_snow_numpy_save_pre(*_args):
    """The Numpy engine's tracks go into the file, so a reopened file (or a render of it) plays them again."""
    try:
        numpy_trails.save_tracks()
    except Exception as exc:  # a handler must never stop a save
        print(f"EnvFX: the numpy snow trails' track could not be saved (play the shot again after loading): {exc}")


# --- grass push with no bake: the live interaction buffer ---
# A scene whose grass push reads its live buffer (operators.snow.live_push): before the frame is evaluated the
# buffer of that frame is written into its image (the grass reads it in the same evaluation); after it, the
# actors as evaluated are checked against the paths read from their animation (an animation edited since is read
# again). A file opened, or an undo, drops the paths held: they are read again from the animation when first shown.

@persistent
def on_live_push_frame(scene, *_args):
    """frame_change_pre: the live buffer of ``scene``'s frame into its image."""
    try:
        live_push.show(scene)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the live grass push could not be brought to frame {scene.frame_current}: {exc}")


@persistent
def on_live_push_verify(scene, depsgraph=None, *_args):
    """frame_change_post: an actor whose evaluated position is not its path's makes the paths be read again."""
    try:
        live_push.verify(scene, depsgraph)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the live grass push could not check the actors at frame {scene.frame_current}: {exc}")


@persistent
def on_live_push_load_post(*_args):
    """The held paths belonged to the file closed; each scene with live push shows its current frame again (read
    from the actors' animation: the image of a generated buffer is blank in a file just opened)."""
    live_push.forget()
    for scene in bpy.data.scenes:
        try:
            live_push.show(scene)
        except Exception as exc:  # a handler must never break loading
            print(f"EnvFX: the live grass push of scene {scene.name!r} could not be shown (Push Grass again): {exc}")


@persistent
def on_live_push_undo(scene, *_args):
    """undo_post and redo_post: the actors' animation may be another step's; read again and shown."""
    try:
        live_push.changed()
        live_push.show(scene)
    except Exception as exc:  # a handler must never break undo
        print(f"EnvFX: the live grass push could not be shown again after undo: {exc}")


LIVE_PUSH_HANDLERS = (("frame_change_pre", on_live_push_frame), ("frame_change_post", on_live_push_verify),
                      ("load_post", on_live_push_load_post), ("undo_post", on_live_push_undo),
                      ("redo_post", on_live_push_undo))


SNOW_HANDLERS = (("frame_change_pre", on_snow_follow_actors_pre), ("frame_change_post", on_snow_follow_actors_post),
                 ("depsgraph_update_post", on_snow_follow_actors), ("load_post", on_snow_load_post),
                 ("save_pre", on_snow_save_pre), ("load_pre", on_snow_load_pre),
                 ("frame_change_post", on_snow_numpy_trails), ("depsgraph_update_post", on_snow_numpy_trails),
                 ("load_post", on_snow_numpy_load_post), ("save_pre", on_snow_numpy_save_pre),
                 ("undo_post", on_snow_numpy_undo), ("redo_post", on_snow_numpy_undo))
CLAIM_HANDLERS = (("depsgraph_update_post", on_claim_appended), ("frame_change_pre", on_claim_appended),
                  ("depsgraph_update_post", on_follow_own_pivot), ("frame_change_post", on_follow_own_pivot),
                  ("load_post", on_claim_load_post), ("depsgraph_update_post", on_bend_gpu_sync),
                  ("frame_change_pre", on_bend_gpu_sync), ("depsgraph_update_post", on_wind_gpu_sync),
                  ("frame_change_pre", on_wind_gpu_sync))
@persistent
def on_render_init_trails(scene, *_args):
    """render_init: a background render of live snow trails not simulated in this process warns (the render shows
    the snow as last simulated: untouched in a fresh process); with the Numpy engine, one of frames its track
    lacks."""
    if numpy_trails.uses_numpy(scene):  # recomputed from the saved track: warns only of frames it lacks
        numpy_trails.warn_untracked_render(scene)
        return
    snow_render.warn_unsimulated_render(scene)


SAVE_HANDLERS = (("save_pre", on_save_pre_overrides), ("save_pre", on_save_pre_release_groups))
@persistent
def on_trails_frame(scene, *_args):
    """frame_change_post: what Blender has simulated of the trails (``snow_render.note_frame``)."""
    snow_render.note_frame(scene)


@persistent
def on_trails_update(scene, *_args):
    """depsgraph_update_post: a change on the start frame restarts the trails (``snow_render.note_update``)."""
    snow_render.note_update(scene)


RENDER_HANDLERS = (("render_init", on_render_init_trails), ("frame_change_post", on_trails_frame),
                   ("depsgraph_update_post", on_trails_update))
READER_HANDLERS = (("depsgraph_update_post", on_bend_readers),)


@persistent
def on_wind_sync(scene, depsgraph=None):
    """depsgraph_update_post: a deleted or unlinked wind object (or terrain) lets go of the scene's wind group; a
    scene showing objects in the wind on the GPU has a clock."""
    wind_nodes.keep_in_sync(scene, depsgraph)
    wind_rigid.keep_in_sync(scene)
    try:
        wind_gpu.keep_clock(scene)
    except Exception as exc:  # a handler must never break playback
        print(f"EnvFX: the wind on the GPU could not get its scene's clock: {exc}")


@persistent
def on_wind_sync_frame(scene, *_args):
    """frame_change_pre: the same before the frame is evaluated (a script stepping frames fires no depsgraph
    update in background mode)."""
    wind_nodes.keep_in_sync_on_frame(scene)
    wind_rigid.keep_in_sync(scene)


WIND_HANDLERS = (("depsgraph_update_post", on_wind_sync), ("frame_change_pre", on_wind_sync_frame))


# --- light map: the actors' shadows follow the lights that light a render ---
# Which lights there are, and the collections that hold them, is the structure of the group the shadows read
# (operators.lightmap.sync_shadow_lights); hidden from renders, power and colour its drivers read live. After an
# edit (a light added, deleted or moved to another collection, a collection excluded) and after a file is opened.

def _lights_may_have_changed(depsgraph) -> bool:
    """Whether the update can have changed which lights there are or the collections that hold them: a light (object
    or data), a collection or a scene was updated. Not when only other objects were (an object moved, an actor and
    its shadow): reading every collection of the file then cost ~3 ms an update with 5,000 objects."""
    if not any(depsgraph.id_type_updated(kind) for kind in ("COLLECTION", "LIGHT", "SCENE")):
        return depsgraph.id_type_updated("OBJECT") and any(
            isinstance(u.id, bpy.types.Object) and u.id.type == "LIGHT" for u in depsgraph.updates)
    return True


@persistent
def on_lightmap_shadow_lights(scene=None, depsgraph=None, *_args):
    """depsgraph_update_post: the lights the actors' shadows follow, up to date (cheap when the file has no actor
    shadows, or when no light, collection or scene changed)."""
    if depsgraph is not None and not _lights_may_have_changed(depsgraph):
        return
    try:
        lightmap_ops.sync_shadow_lights()
    except Exception as exc:  # a handler must never break playback or loading
        print(f"EnvFX: the actors' shadows could not follow the lights (press Add Actor Shadows again): {exc}")


@persistent
def on_lightmap_load_post(*_args):
    """load_post: a file saved by an older EnvFX gets the current shadow group (its shadows keep their settings),
    and the lights it follows are brought up to date."""
    try:
        if lightmap_nodes.SHADOW_GROUP in bpy.data.node_groups:
            lightmap_nodes.ensure_shadow_group()
        lightmap_ops.sync_shadow_lights()
    except Exception as exc:  # a handler must never break loading
        print(f"EnvFX: the actors' shadows could not follow the lights (press Add Actor Shadows again): {exc}")


LIGHTMAP_HANDLERS = (("depsgraph_update_post", on_lightmap_shadow_lights), ("load_post", on_lightmap_load_post))


# --- EnvFX enabled with a file open ---
# While EnvFX is disabled, Blender cannot read the envfx.* properties that the bend, wind and snow drivers read,
# marks those drivers invalid and never evaluates them again. Opening a file clears the marks (and runs the
# load_post handlers); enabling EnvFX with a file open does the same here, so the file's effects come back at once.

def _data_available() -> bool:
    """Whether add-on code may read ``bpy.data`` now: not while Blender registers add-ons at start-up or on
    Reload Scripts, which hide it (``bpy.data`` is a stand-in then)."""
    return isinstance(bpy.data, bpy.types.BlendData)


def revive_open_file():
    """What opening the open file with EnvFX enabled would do: the dead drivers of EnvFX come back
    (``common.revive_drivers``) and the load_post handlers run (outdated groups rebuilt and rewired, appended
    objects and copied scenes handled as after a load)."""
    try:
        common.revive_drivers()
        on_load_post()
        on_claim_load_post()
        on_snow_load_post()
    except Exception as exc:  # enabling EnvFX must not fail because of one file's state
        print(f"EnvFX: the effects of the open file could not be brought back (reopen the file): {exc}")


def _revive_later():
    """One-shot timer for when ``register`` could not read ``bpy.data``."""
    if _data_available():
        revive_open_file()
        return None
    return 0.1


def register():
    bpy.app.handlers.load_post.append(on_load_post)
    for name, fn in (SNOW_HANDLERS + CLAIM_HANDLERS + SAVE_HANDLERS + READER_HANDLERS + RENDER_HANDLERS + WIND_HANDLERS
                     + LIVE_PUSH_HANDLERS + LIGHTMAP_HANDLERS):
        getattr(bpy.app.handlers, name).append(fn)
    # Enabled by hand (Preferences, addon_utils.enable, installing the zip): the open file is there to revive.
    # Registered at start-up or by Reload Scripts, bpy.data is hidden: at start-up a file load (and load_post)
    # follows; for Reload Scripts in the UI, a one-shot timer does it as soon as the main loop runs. Background
    # mode runs no timers (and Blender 4.2 crashes at exit with one still registered), so none is left there.
    if _data_available():
        revive_open_file()
    elif timers_run():
        bpy.app.timers.register(_revive_later, first_interval=0.0)


def unregister():
    if bpy.app.timers.is_registered(_revive_later):
        bpy.app.timers.unregister(_revive_later)
    if bpy.app.timers.is_registered(snow_clean_up):
        bpy.app.timers.unregister(snow_clean_up)
    if on_load_post in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(on_load_post)
    for name, fn in (SNOW_HANDLERS + CLAIM_HANDLERS + SAVE_HANDLERS + READER_HANDLERS + RENDER_HANDLERS + WIND_HANDLERS
                     + LIVE_PUSH_HANDLERS + LIGHTMAP_HANDLERS):
        if fn in getattr(bpy.app.handlers, name):
            getattr(bpy.app.handlers, name).remove(fn)
