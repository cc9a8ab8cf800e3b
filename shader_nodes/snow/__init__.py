"""Node groups of the snow: "EnvFX Snow Trails" (geometry nodes, live trails), "EnvFX Snow Coverage" (the actors
sink into the snow), "EnvFX Snow Buffer" (snow driven by a bake) and the "EnvFX Snow" material.

The modules, each importing only those before it:

    base      the trails group's state and value names, and the node builder the groups share
    material  the "EnvFX Snow" material
    puffs     the puffs of the live trails (part of the trails graph)
    graph     the trails group's node graph, built stage by stage (how it works: its docstring)
    trails    each scene's trails group: ensured, its actor part rebuilt in place, its modifiers driven
    coverage  the actors' snow coverage and the scene's snow surfaces collection
    buffer    the group of a baked buffer

This package re-exports the names the operators, panels, props and tests use (``snow_nodes.group_for``).
"""

from . import base, buffer, coverage, graph, material, puffs, trails
from .base import ACTORS_KEY, CELLS, DRIVEN, GROUND_KEEP, STATE, TRAIL_ATTRIBUTE, SnowBuilder
from .buffer import (BUFFER_GROUP, BUFFER_KIND, BUFFER_VERSION, RIPPLES_GROUP, ensure_buffer_group,
                     ensure_ripples_group, is_buffer_group, is_ripples_group)
from .coverage import (COVERAGE_GROUP, COVERAGE_KIND, COVERAGE_VERSION, SURFACES_COLLECTION, SURFACES_KEY,
                       SURFACES_NODE, ensure_coverage, ensure_surfaces_collection, surfaces_bend, surfaces_for,
                       surfaces_shared, sync_coverage_bend)
from .material import MATERIAL_NAME, MATERIAL_VERSION, ensure_material
from .trails import (GROUP_NAME, KEYS_KEY, KIND, SPECS_KEY, VERSION, _actor_stamp, actor_input, drive_modifier,
                     ensure_trails, group_for, is_numpy_build, is_trails_group, occluders_read, set_engine, shares_snow,
                     sync_occluders, undrive_modifier)

__all__ = (
    "base", "buffer", "coverage", "graph", "material", "puffs", "trails",
    "ACTORS_KEY", "CELLS", "DRIVEN", "GROUND_KEEP", "STATE", "TRAIL_ATTRIBUTE", "SnowBuilder",
    "BUFFER_GROUP", "BUFFER_KIND", "BUFFER_VERSION", "ensure_buffer_group", "is_buffer_group",
    "RIPPLES_GROUP", "ensure_ripples_group", "is_ripples_group",
    "COVERAGE_GROUP", "COVERAGE_KIND", "COVERAGE_VERSION", "SURFACES_COLLECTION", "SURFACES_KEY", "SURFACES_NODE",
    "ensure_coverage", "ensure_surfaces_collection", "surfaces_bend", "surfaces_for", "surfaces_shared",
    "sync_coverage_bend",
    "MATERIAL_NAME", "MATERIAL_VERSION", "ensure_material",
    "GROUP_NAME", "KEYS_KEY", "KIND", "VERSION", "_actor_stamp", "actor_input", "drive_modifier", "ensure_trails",
    "occluders_read", "sync_occluders", "SPECS_KEY", "set_engine",
    "group_for", "is_numpy_build", "is_trails_group", "shares_snow", "undrive_modifier",
)
