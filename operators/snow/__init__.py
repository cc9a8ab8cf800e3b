"""Snow operators: generate a snow cover, add/remove live trails, bake the interaction buffer, simulate the trails
for renders.

Each operator gathers inputs and calls one plain function that scripts and the CLI call too. The modules, each
importing only those before it:

    collection  the snow objects, each scene's snow collection, SnowInputError
    terrain     the terrain and occluders read from Blender (through ``bridge``)
    cover       Generate Snow
    actors      what the snow actors carve, measured
    trails      the live trails: adding, following the actors, removing, cleaning up
    render      Simulate Trails, and the warning of a background render that would show no trails
    bake        Bake Interaction Buffer, Snow from Bake
    engines     Export for Game Engines (the snow's displacement from the buffer as shader code)
    numpy_trails  the Numpy trails engine: the trails' state held in numpy by a frame handler
    live_push   the live interaction buffer (the bake's fields at the frame shown) that grass push reads

This package re-exports the names scripts, the CLI and the tests use (``operators.snow.add_trails``).
"""

from . import actors, bake, collection, cover, engines, live_push, numpy_trails, render, terrain, trails
from .actors import actor_specs
from .bake import (bake_counts, bake_inputs, bake_job, buffer_modifiers, drive_from_bake, drive_from_trails,
                   load_bake, range_warning, ripples_modifiers, stamp_params, water_ripples)
from .collection import COLLECTION_KEY, SnowInputError, is_snow_object, snow_objects
from .cover import covers_of, generate_snow, mesh_from_cover
from .terrain import OCCLUDER_READER
from .trails import (MODIFIER_NAME, add_trails, follow_actors, pending_clean_up, remove_trails, surfaces_left_scene,
                     trails_modifiers)

__all__ = (
    "actors", "bake", "collection", "cover", "engines", "live_push", "numpy_trails", "render", "terrain", "trails",
    "COLLECTION_KEY", "MODIFIER_NAME", "OCCLUDER_READER", "SnowInputError",
    "actor_specs", "add_trails", "bake_counts", "bake_inputs", "bake_job", "buffer_modifiers", "covers_of",
    "drive_from_bake", "drive_from_trails", "follow_actors", "generate_snow", "is_snow_object", "mesh_from_cover",
    "pending_clean_up", "range_warning", "remove_trails", "snow_objects", "stamp_params", "surfaces_left_scene",
    "trails_modifiers", "load_bake", "ripples_modifiers", "water_ripples",
)

# registered in this order (as before the package)
classes = (
    cover.ENVFX_OT_snow_generate,
    bake.ENVFX_OT_snow_drive_from_bake,
    trails.ENVFX_OT_snow_trails_add,
    trails.ENVFX_OT_snow_trails_remove,
    bake.ENVFX_OT_snow_bake_buffer,
    render.ENVFX_OT_snow_trails_simulate,
    engines.ENVFX_OT_snow_export_engines,
    bake.ENVFX_OT_snow_water_ripples,
)
