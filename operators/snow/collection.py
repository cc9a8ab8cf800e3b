"""The snow objects and the collection each scene's new snow goes into; the error every snow function raises.

Submodules of ``operators.snow`` import this one; it imports none of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import bpy

from ...shader_nodes import common

SNOW_TAG = "envfx_snow"            # custom property on generated snow objects (value: the LOD level)
TERRAIN_TAG = "envfx_snow_terrain"  # custom property on generated snow objects: JSON list of the terrain names
TERRAIN_REFS = "envfx_snow_terrain_objects"  # ... and the terrain objects themselves (they follow a rename)
COLLECTION_NAME = "EnvFX Snow"
COLLECTION_KEY = "envfx_snow_collection"  # the scene's ID property pointing at its snow collection


class SnowInputError(ValueError):
    """Nothing could be done; the scene is unchanged. ``cli`` (when given): the same advice for ``envfx snow``,
    which names its command-line options where the message names the panel's buttons."""

    def __init__(self, message: str, cli: str | None = None):
        super().__init__(message)
        self.cli = cli


def update_view_layer() -> None:
    """Evaluate the context's view layer (``bpy.context.view_layer``, which the API types as optional): a temporary
    modifier's result is read from the depsgraph after it."""
    view_layer = bpy.context.view_layer
    if view_layer is None:
        raise RuntimeError("EnvFX needs a view layer here and the context has none: run it with a scene open")
    view_layer.update()


def is_snow_object(obj: bpy.types.Object) -> bool:
    return obj.get(SNOW_TAG) is not None


def snow_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    return [o for o in scene.objects if is_snow_object(o)]


def in_scene_tree(coll: bpy.types.Collection, scene: bpy.types.Scene) -> bool:
    return coll == scene.collection or coll in scene.collection.children_recursive


def snow_collection(scene: bpy.types.Scene) -> bpy.types.Collection | None:
    """The collection ``scene``'s new snow goes into, or None: one per scene, like the groups ("EnvFX Snow", later
    ones "EnvFX Snow (scene name)"), so snow generated in one scene of a file is in no other. The scene points at
    it; a file saved before scenes had their own has one "EnvFX Snow" (``split_shared_snow`` shares it out after
    loading): a scene it is in takes it when no other scene has. A collection the scene points at that is not in
    the scene (copied with Scene > New > Copy Settings) is not its own."""
    coll = scene.get(COLLECTION_KEY)
    if isinstance(coll, bpy.types.Collection) and coll.library is None and in_scene_tree(coll, scene):
        return coll
    legacy = bpy.data.collections.get(COLLECTION_NAME)
    if (legacy is not None and legacy.library is None and in_scene_tree(legacy, scene)
            and not any(s != scene and s.get(COLLECTION_KEY) == legacy for s in bpy.data.scenes)):
        return legacy
    return None


def ensure_snow_collection(scene: bpy.types.Scene) -> bpy.types.Collection:
    """``scene``'s snow collection (``snow_collection``), made and linked into the scene when it has none."""
    coll = snow_collection(scene)
    if coll is None:
        taken = bpy.data.collections.get(COLLECTION_NAME) is not None
        coll = bpy.data.collections.new(f"{COLLECTION_NAME} ({scene.name})" if taken else COLLECTION_NAME)
        scene.collection.children.link(coll)
    if scene.get(COLLECTION_KEY) != coll:
        scene[COLLECTION_KEY] = coll
    return coll


def cover_terrain(obj: bpy.types.Object) -> list[bpy.types.Object] | None:
    """The terrain objects the snow object ``obj`` was generated over, as they are now named (TERRAIN_REFS), or
    None when that is not known (snow made before the references were kept, or a terrain object deleted)."""
    refs = obj.get(TERRAIN_REFS)
    terrain = list(refs.values()) if refs is not None and hasattr(refs, "values") else []
    if not terrain or not all(isinstance(t, bpy.types.Object) for t in terrain):
        return None
    return terrain


def set_cover_terrain(obj: bpy.types.Object, terrain: Iterable[bpy.types.Object]) -> None:
    """Tag the snow object ``obj`` with its terrain: their names (TERRAIN_TAG) and the objects (TERRAIN_REFS)."""
    terrain = sorted(terrain, key=lambda o: o.name)
    obj[TERRAIN_TAG] = json.dumps([o.name for o in terrain])
    obj[TERRAIN_REFS] = {str(i): t for i, t in enumerate(terrain)}


def terrain_scenes(obj: bpy.types.Object, scenes: Iterable[bpy.types.Scene]) -> list[bpy.types.Scene] | None:
    """The scenes of ``scenes`` that hold the terrain snow object ``obj`` was generated over (TERRAIN_REFS, else
    TERRAIN_TAG), or None when that is not known (no tag, or a terrain object no longer in the file)."""
    terrain = cover_terrain(obj)
    if terrain is None:
        try:
            names = json.loads(obj.get(TERRAIN_TAG) or "[]")
        except (TypeError, ValueError):
            return None
        terrain = [bpy.data.objects.get(n) for n in names] if isinstance(names, list) else []
    if not terrain or any(t is None for t in terrain):
        return None
    return [s for s in scenes if any(common.in_scene(t, s) for t in terrain)]
