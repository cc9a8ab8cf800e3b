"""2D light map operators: gather the ground, the obstacles and the lights of a scene, call core.lightmap2d, write the
files, show the map on the ground.

Scripts call ``bake_lightmap`` (or ``bake_lightmap_job`` for progress); the operator does exactly that, and a
command line calls ``bake_file`` (open a .blend, settings from its scene with overrides, bake, write).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import bpy
import numpy as np
import numpy.typing as npt
from mathutils import Vector

from .. import bridge, progress
from ..core import jobs
from ..core import lightmap2d as core_lm
from ..shader_nodes import common as nodes_common
from ..shader_nodes import lightmap as lightmap_nodes
from .common import NeedsScene, colour_space, mesh_of, nodes_modifiers, output_folder, path_in_file

if TYPE_CHECKING:  # the stubs' name for an operator's result literals (no such module at run time)
    from bpy.stub_internal.rna_enums import OperatorReturnItems

IMAGE_NAME = "EnvFX Light Map"
DISTANCE_IMAGE_NAME = "EnvFX Light Map Distance"
SHADOW_SUFFIX = " Shadow"
COLOUR_ATTRIBUTE = "EnvFX Light"
# the settings of scene.envfx.lightmap a bake reads, in the order lightmap.json lists them
SETTING_NAMES = ("resolution", "penumbra_samples", "falloff", "smoothing", "smoothing_levels", "occlusion_distance",
                 "occlusion_strength", "light_circles", "vertex_colours", "apply_to_ground")


# the map's region of the world: (x min, y min, x max, y max)
Region = tuple[float, float, float, float]


class LightmapInputError(ValueError):
    """Nothing could be baked; nothing was written and the scene is unchanged."""


@dataclass
class Inputs:
    """Everything a bake needs, read from the scene (names, never Blender objects: they survive undo)."""
    ground: str
    region: Region
    ground_z: float
    triangles: npt.NDArray[np.float32]
    obstacles: list[str]
    lights: list[core_lm.Light]
    settings: core_lm.Settings
    options: dict[str, bool]     # light_circles, vertex_colours, apply_to_ground
    folder: str
    warnings: list[str] = field(default_factory=list)


@dataclass
class LightmapResult:
    files: list[str]
    region: Region
    resolution: tuple[int, int]
    lights: list[str]
    materials: list[str] = field(default_factory=list)
    coloured: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    removed: list[str] = field(default_factory=list)  # an earlier bake's files in the folder this one does not write
    stale_removed: list[str] = field(default_factory=list)  # staging folders killed bakes left there (names)


def removed_text(result: LightmapResult) -> str:
    """'' or what a bake removed, for its report line."""
    parts = []
    if result.removed:
        parts.append(f"removed {len(result.removed)} file(s) an earlier bake wrote and this one does not: "
                     + ", ".join(os.path.basename(p) for p in result.removed))
    if result.stale_removed:
        parts.append("removed the temporary folder(s) of an earlier bake that was killed: "
                     + ", ".join(result.stale_removed))
    return "; ".join(parts)


# the job generator of a bake: yields progress fractions, returns the LightmapResult
LightmapJob = Generator[float, None, LightmapResult]


# --- gathering ---------------------------------------------------------------------------------------------

def _drawable(obj) -> bool:
    return obj.type in bridge.GEOMETRY_TYPES or obj.type in {"SURFACE", "META"}


# A light lights a render when it is not hidden from renders and some chain of collections holds it in the view
# layer, none of them excluded from the view layer or hidden from renders (a light in the scene collection itself
# has the empty chain). The bake and the actors' shadows both go by this rule.
Chain = tuple  # of bpy.types.Collection, from the view layer's top collection down to the one holding the light


def light_chains(view_layers: Iterable[bpy.types.ViewLayer]) -> dict[bpy.types.Object, list[Chain]]:
    """{light object: [its chains of collections]} in ``view_layers``: the chains through collections not
    excluded there (whether hidden from renders is read by ``lights_render``, or by the shadows' drivers)."""
    found: dict[bpy.types.Object, list[Chain]] = {}

    def walk(layer: bpy.types.LayerCollection, chain: Chain) -> None:
        if layer.exclude:
            return
        for obj in layer.collection.objects:
            if obj.type == "LIGHT" and chain not in found.setdefault(obj, []):
                found[obj].append(chain)
        for child in layer.children:
            walk(child, chain + (child.collection,))

    for view_layer in view_layers:
        walk(view_layer.layer_collection, ())
    return found


def lights_render(obj: bpy.types.Object, chains: list[Chain]) -> bool:
    """Whether light ``obj``, held by ``chains`` (``light_chains``), is in a render: not hidden from renders, and
    in a chain of collections none of which is hidden from renders."""
    return not obj.hide_render and any(not any(c.hide_render for c in chain) for chain in chains)


def scene_lights(scene: bpy.types.Scene, collection: bpy.types.Collection | None = None,
                 view_layer: bpy.types.ViewLayer | None = None) -> list[bpy.types.Object]:
    """The light objects a bake uses: the collection's (and its children's), else every light of the scene; lights
    that are not in a render of ``view_layer`` (default: the scene's first) are left out, as Cycles leaves them
    out: hidden from renders, or only in collections hidden from renders or excluded from the view layer."""
    objs = collection.all_objects if collection is not None else scene.objects
    chains = light_chains([view_layer or scene.view_layers[0]])
    return [o for o in objs if o.type == "LIGHT" and lights_render(o, chains.get(o, []))]


def core_light(obj: bpy.types.Object, warnings: list[str]) -> core_lm.Light | None:
    """A Blender light as a core Light, or None (a sun, which has no position, with a warning)."""
    data = cast(bpy.types.Light, obj.data)  # (scene_lights gives light objects)
    if data.type not in core_lm.LIGHT_KINDS:
        warnings.append(f"{obj.name}: a {data.type.lower()} light has no place on the map; left out (use point, "
                        "spot or area lights)")
        return None
    light = cast(bpy.types.PointLight | bpy.types.SpotLight | bpy.types.AreaLight, data)  # LIGHT_KINDS
    m = obj.matrix_world
    loc = m.translation
    axis = m.to_3x3() @ Vector((0.0, 0.0, -1.0))
    axis.normalize()
    sx, sy, sz = (abs(v) for v in m.to_scale())
    if isinstance(light, bpy.types.AreaLight):
        size_y = light.size_y if light.shape in {"RECTANGLE", "ELLIPSE"} else light.size
        radius = 0.5 * max(light.size * sx, size_y * sy)
    else:
        radius = float(light.shadow_soft_size)
    influence = float(light.cutoff_distance) if getattr(light, "use_custom_distance", False) else 0.0
    return core_lm.Light(
        x=float(loc.x), y=float(loc.y), z=float(loc.z), colour=tuple(float(c) for c in light.color),
        power=float(light.energy), radius=radius, kind=light.type, direction=tuple(float(c) for c in axis),
        spot_size=float(getattr(light, "spot_size", math.pi / 4)), spot_blend=float(getattr(light, "spot_blend", 0)),
        influence=influence, name=obj.name)


def settings_from_scene(scene: bpy.types.Scene,
                        overrides: Mapping[str, Any] | None = None) -> tuple[core_lm.Settings, dict[str, bool], str]:
    """(core Settings, options dict, output folder setting) from ``scene.envfx.lightmap``, with ``overrides`` (by
    setting name) on top."""
    s = bridge.envfx_settings(scene).lightmap
    values = {name: getattr(s, name) for name in SETTING_NAMES}
    values["output_dir"] = s.output_dir
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    settings = core_lm.Settings(
        resolution=int(values["resolution"]), penumbra_samples=int(values["penumbra_samples"]),
        falloff=values["falloff"], smoothing=values["smoothing"], smoothing_levels=int(values["smoothing_levels"]),
        occlusion_distance=float(values["occlusion_distance"]),
        occlusion_strength=float(values["occlusion_strength"]))
    options = {k: bool(values[k]) for k in ("light_circles", "vertex_colours", "apply_to_ground")}
    return settings, options, values["output_dir"]


def gather(scene: bpy.types.Scene, selected: Iterable[bpy.types.Object] = (),
           overrides: Mapping[str, Any] | None = None) -> Inputs:
    """Read and check everything a bake needs from ``scene`` (``selected``: the obstacles when no Obstacles
    collection is set). Raises LightmapInputError; changes nothing."""
    s = bridge.envfx_settings(scene).lightmap
    try:
        settings, options, out = settings_from_scene(scene, overrides)
        settings.validate()
    except core_lm.LightmapError as exc:
        raise LightmapInputError(str(exc)) from None
    overrides = overrides or {}
    ground = overrides.get("ground") or s.ground
    if isinstance(ground, str):
        name = ground
        ground = scene.objects.get(name)
        if ground is None:
            raise LightmapInputError(f"No object named {name!r} in scene {scene.name!r} to use as the ground")
    if ground is None:
        raise LightmapInputError("No ground: choose the Ground object of the light map (its bounds seen from above "
                                 "are the map's region)")
    obstacles_coll = _collection(overrides.get("obstacles"), s.obstacles, "obstacles")
    lights_coll = _collection(overrides.get("lights"), s.lights, "lights")
    warnings = []
    depsgraph = bpy.context.evaluated_depsgraph_get()
    if bpy.context.scene != scene:
        layer_graph = scene.view_layers[0].depsgraph  # optional in the API; Blender makes one when asked
        if layer_graph is None:
            raise RuntimeError(f"Scene {scene.name!r} has no dependency graph to evaluate its objects with")
        depsgraph = layer_graph
        depsgraph.update()
    ground_tris = bridge.triangle_corners(ground, depsgraph)
    if len(ground_tris) == 0:
        raise LightmapInputError(f"Ground {ground.name!r} has no surface: use a mesh (a plane) for the ground")
    _check_finite(ground_tris, f"Ground {ground.name!r}", "choose another ground")
    lo, hi = ground_tris.reshape(-1, 3).min(0), ground_tris.reshape(-1, 3).max(0)
    region = (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))
    if not (hi[0] - lo[0] > 1e-6 and hi[1] - lo[1] > 1e-6):
        raise LightmapInputError(f"Ground {ground.name!r} has no area seen from above ({hi[0] - lo[0]:g} x "
                                 f"{hi[1] - lo[1]:g}): use a ground lying flat (a plane facing up) with a size")
    ground_z = float(hi[2])
    if obstacles_coll is not None:
        candidates = list(obstacles_coll.all_objects)
    else:
        candidates = list(selected)
    obstacles = [o for o in dict.fromkeys(candidates)
                 if o != ground and _drawable(o) and not o.hide_render]
    if any(o == ground for o in candidates):
        warnings.append(f"The ground {ground.name!r} is among the obstacles; it is not treated as one")
    tris = [bridge.triangle_corners(o, depsgraph) for o in obstacles]
    for o, corners in zip(obstacles, tris):
        _check_finite(corners, f"Obstacle {o.name!r}", "take it out of the obstacles")
    triangles = np.concatenate(tris) if tris else np.zeros((0, 3, 3), dtype=np.float32)
    objs = scene_lights(scene, lights_coll, bpy.context.view_layer if bpy.context.scene == scene else None)
    lights = [lt for lt in (core_light(o, warnings) for o in objs) if lt is not None]
    if not lights:
        where = f"collection {lights_coll.name!r}" if lights_coll is not None else f"scene {scene.name!r}"
        raise LightmapInputError(f"No lights: {where} has no point, spot or area light (visible in renders); add one "
                                 "or choose another Lights collection")
    under_top = [lt.name for lt in lights if lo[2] < lt.z <= ground_z]
    if under_top:  # (a ground that is not flat, the level mesh itself say: "raise them" would lift them over it)
        raise LightmapInputError(f"Light(s) {', '.join(under_top)} are below the top of the ground {ground.name!r}, "
                                 f"which is not flat (z {lo[2]:g} to {ground_z:g}; the map lies at its top): choose "
                                 f"a flat ground under the level (a plane), or raise the lights above z {ground_z:g}")
    triangles = core_lm.wall_triangles(triangles, ground_z, [lt.z for lt in lights])
    folder = output_folder(out, "Output folder", "No output folder: set the Output Folder of the light map",
                           LightmapInputError)
    try:
        grid = core_lm.make_grid(region, settings.resolution)
        _check_memory(grid)
        occ = core_lm.rasterise(grid, triangles)
        core_lm.check_lights_at_resolution(grid, occ, triangles, lights, ground_z)
        core_lm.check_output_folder(folder)
    except core_lm.LightmapError as exc:
        raise LightmapInputError(str(exc)) from None
    return Inputs(ground=ground.name, region=region, ground_z=ground_z, triangles=triangles,
                  obstacles=[o.name for o in obstacles], lights=lights, settings=settings, options=options,
                  folder=folder, warnings=warnings)


def _check_finite(corners: np.ndarray, what: str, otherwise: str) -> None:
    """Refuse triangles (T, 3, 3) with a corner that is NaN or infinite (a broken import or a simulation that blew
    up): they would spread over the map's region, or past the rasteriser's sizes."""
    if corners.size and not np.isfinite(corners).all():
        bad = int(np.count_nonzero(np.any(~np.isfinite(corners), axis=(1, 2))))
        raise LightmapInputError(f"{what} has {bad} triangle{'s' if bad != 1 else ''} with a corner that is not a "
                                 f"number (NaN or infinite): fix the mesh (Mesh > Clean Up, or delete the vertex), "
                                 f"or {otherwise}")


def _check_memory(grid):
    need = grid.width * grid.height * 4 * 24  # float32 working arrays of a light's area of influence and the map
    if need > 2 * 1024 ** 3:
        raise core_lm.LightmapError(f"A {grid.width} x {grid.height} map needs about {need / 1024 ** 3:.1f} GB: "
                                    "lower the Resolution")


def _collection(override, setting, what):
    if override is None:
        return setting
    if isinstance(override, str):
        coll = bpy.data.collections.get(override)
        if coll is None:
            raise LightmapInputError(f"No collection named {override!r} for the {what}")
        return coll
    return override


# --- baking ------------------------------------------------------------------------------------------------

def bake_lightmap_job(scene: bpy.types.Scene, selected: Iterable[bpy.types.Object] = (),
                      overrides: Mapping[str, Any] | None = None) -> LightmapJob:
    """Check now (raises LightmapInputError), then return a job generator that bakes, writes the files and shows the
    map on the ground; its result is a LightmapResult."""
    inputs = gather(scene, selected, overrides)
    return _bake(scene.name, inputs)


def _bake(scene_name: str, inputs: Inputs) -> LightmapJob:
    start = time.perf_counter()
    grid = core_lm.make_grid(inputs.region, inputs.settings.resolution)
    occ = core_lm.rasterise(grid, inputs.triangles)
    yield 0.05
    job = core_lm.bake_job(grid, occ, inputs.lights, inputs.ground_z, inputs.settings)
    try:
        result = yield from jobs.within(job, 0.05, 0.85)
    except core_lm.LightmapError as exc:  # (found while baking: a light too strong to store)
        raise LightmapInputError(f"{exc}; nothing was written") from None
    circles = core_lm.light_circles(grid, inputs.lights, inputs.ground_z) if inputs.options["light_circles"] else None
    distance, _ = core_lm.distance_image(grid, occ)
    white = core_lm.white_point(result.rgb, result.occupancy)
    meta = {
        "ground": inputs.ground, "ground_z": inputs.ground_z, "obstacles": inputs.obstacles,
        "lights": [{"name": lt.name, "kind": lt.kind, "position": [lt.x, lt.y, lt.z], "power": lt.power,
                    "colour": list(lt.colour), "radius": lt.radius} for lt in inputs.lights],
        "settings": {name: getattr(inputs.settings, name) for name in
                     ("resolution", "penumbra_samples", "falloff", "smoothing", "smoothing_levels",
                      "occlusion_distance", "occlusion_strength", "seed")} | inputs.options,
        "units": "irradiance on the ground in W/m^2 as Cycles computes it (PHYSICAL); the EXR holds it linear",
        "png_white": white,
    }
    yield 0.9
    # no yield from here to the end: a cancel (taken at a yield) either comes before the files are moved in, or not
    # at all, so "cancelled; nothing was written" holds and the scene is never left pointing at a half-finished bake
    try:
        files = core_lm.write_outputs(inputs.folder, result, meta, circles, distance)
    except (core_lm.LightmapError, OSError) as exc:
        raise LightmapInputError(f"Writing the light map failed: {exc}; nothing was written") from None
    scene = bpy.data.scenes[scene_name]
    out = LightmapResult(files=list(files), region=grid.region, resolution=(grid.width, grid.height),
                         lights=[lt.name for lt in inputs.lights], warnings=inputs.warnings + result.warnings,
                         removed=files.removed, stale_removed=files.stale_removed)
    out.warnings.extend(f"could not remove {p}, which an earlier bake wrote ({why}): remove it by hand"
                        for p, why in files.not_removed)
    s = bridge.envfx_settings(scene).lightmap
    old_ground_z = s.baked_ground_z
    s.baked_region = grid.region
    s.baked_ground_z = inputs.ground_z
    distance_map = _load_image(DISTANCE_IMAGE_NAME, os.path.join(inputs.folder, core_lm.DISTANCE_FILE), data=True)
    # kept with the file: until actors' shadows use it nothing does, and Blender saves no image without a user (a
    # reopened file would refuse Add Actor Shadows until the next bake)
    distance_map.use_fake_user = True
    follow_new_bake(scene, distance_map, old_ground_z)
    if inputs.options["apply_to_ground"]:
        out.materials = show_on_ground(scene, inputs.ground, files[0], grid.region, 1.0 / white)
    if inputs.options["vertex_colours"]:
        out.coloured = colour_vertices(scene, inputs, grid, occ, 1.0 / white, out.warnings)
    out.seconds = time.perf_counter() - start
    return out


def follow_new_bake(scene: bpy.types.Scene, distance_map: bpy.types.Image, old_ground_z: float) -> None:
    """The actors' shadows of ``scene`` that read ``distance_map`` take the region and ground height of the bake
    that has just replaced it (else they would read the new map as if it covered the old region, and reach into
    walls); a Ground Height changed by hand is kept."""
    tree = bpy.data.node_groups.get(lightmap_nodes.SHADOW_GROUP)
    if tree is None:
        return
    s = bridge.envfx_settings(scene).lightmap
    ids = {name: nodes_common.input_identifier(tree, name)
           for name in ("Distance Map", "Region Min", "Region Max", "Ground Height")}
    for obj in scene.objects:
        if obj.library is not None:
            continue
        for mod in nodes_modifiers(obj):
            if mod.node_group != tree or mod.get(ids["Distance Map"]) != distance_map:
                continue
            mod[ids["Region Min"]] = (s.baked_region[0], s.baked_region[1], 0.0)
            mod[ids["Region Max"]] = (s.baked_region[2], s.baked_region[3], 0.0)
            height = mod.get(ids["Ground Height"])
            if height is None or abs(float(height) - old_ground_z) < 1e-6:
                mod[ids["Ground Height"]] = s.baked_ground_z
            obj.update_tag()


def follow_lights_setting(scene: bpy.types.Scene) -> None:
    """(The Lights setting changed) ``scene``'s actor shadows read the collection it names now, as Add Actor Shadows
    would give them; cleared, they keep theirs (shadows need a collection: Add Actor Shadows refuses none)."""
    lights = bridge.envfx_settings(scene).lightmap.lights
    tree = bpy.data.node_groups.get(lightmap_nodes.SHADOW_GROUP)
    if lights is None or tree is None:
        return
    ident = nodes_common.input_identifier(tree, "Lights")
    for obj in scene.objects:
        if obj.library is not None:
            continue
        for mod in nodes_modifiers(obj):
            if mod.node_group == tree and mod.get(ident) != lights:
                mod[ident] = lights
                obj.update_tag()


def _load_image(name: str, path: str, data: bool = False) -> bpy.types.Image:
    """Image ``name`` showing the file at ``path`` (loaded, or pointed there and reloaded)."""
    image = bpy.data.images.get(name)
    if image is None or image.library is not None:
        image = bpy.data.images.load(path, check_existing=False)
        image.name = name
    image.filepath = path_in_file(path)
    image.reload()
    if data:
        colour_space(image).is_data = True
    return image


def image_name(ground_name: str) -> str:
    """The image of the light map on ground ``ground_name``: one per ground, as its group (a bake of another ground,
    into another folder, leaves this ground showing its own map)."""
    return f"{IMAGE_NAME} ({ground_name})"


def show_on_ground(scene: bpy.types.Scene, ground_name: str, exr_path: str, region: Region,
                   scale: float) -> list[str]:
    """Load (or reload) the EXR as the ground's image (``image_name``) and put the light-map group on the ground's
    materials."""
    image = _load_image(image_name(ground_name), exr_path)
    tree = lightmap_nodes.ensure_lightmap_group(ground_name, image, region, scale)
    ground = scene.objects.get(ground_name)
    return lightmap_nodes.apply_to_ground(ground, tree) if ground is not None else []


def colour_vertices(scene: bpy.types.Scene, inputs: Inputs, grid: core_lm.Grid, occ: npt.NDArray[Any], scale: float,
                    warnings: list[str]) -> list[str]:
    """Day 1: the light of the static 3D obstacles merged into a per-vertex colour attribute (COLOUR_ATTRIBUTE),
    scaled like the PNG (1 = its white)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    done = []
    for name in inputs.obstacles:
        obj = scene.objects.get(name)
        if obj is None or obj.type != "MESH" or mesh_of(obj).library is not None:
            continue
        points, normals = bridge.world_points_and_normals(obj, depsgraph)
        if len(points) != len(mesh_of(obj).vertices):
            warnings.append(f"{name}: its modifiers change its vertex count; no vertex colours")
            continue
        light = core_lm.vertex_light(points, normals, inputs.lights, grid, occ) * np.float32(scale)
        colours = np.concatenate([light, np.ones((len(light), 1), np.float32)], axis=1)
        bridge.set_point_colours(mesh_of(obj), COLOUR_ATTRIBUTE, colours)
        done.append(name)
    return done


def bake_lightmap(scene: bpy.types.Scene, selected: Iterable[bpy.types.Object] = (),
                  overrides: Mapping[str, Any] | None = None) -> LightmapResult:
    """Bake with the scene's settings (``overrides`` by setting name on top), reporting progress."""
    return progress.run(bake_lightmap_job(scene, selected, overrides), "Light map")


def bake_file(path: str, out_dir: str, scene: str | None = None, overrides: Mapping[str, Any] | None = None,
              save: bool = False) -> LightmapResult:
    """What ``blender -c envfx lightmap FILE.blend --out DIR`` does for one file: open it, take scene ``scene``
    (default: the file's active scene), bake with its settings and ``overrides`` (keys as in scene.envfx.lightmap:
    ground, obstacles, lights by name, resolution, penumbra_samples, falloff, smoothing, ...), write into
    ``out_dir``; with ``save`` the file is saved with the map on its ground. Raises LightmapInputError
    (FileNotFoundError for a missing file)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such .blend file {path!r}")
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    target = bpy.data.scenes.get(scene) if scene else bpy.context.scene
    if target is None:
        raise LightmapInputError(f"{os.path.basename(path)} has no scene {scene!r}: choose one of "
                                 + ", ".join(repr(s.name) for s in bpy.data.scenes))
    if bpy.context.window is not None and bpy.context.window.scene != target:
        bpy.context.window.scene = target
    merged = dict(overrides or {})
    merged["output_dir"] = os.path.abspath(out_dir)
    result = bake_lightmap(target, (), merged)
    if save:
        bpy.ops.wm.save_mainfile()
    return result


# --- actors' shadows (Day 5) ------------------------------------------------------------------------------

def shadow_light_specs() -> tuple[list[tuple[bpy.types.Object, list[Chain]]], str]:
    """What the actors' shadows need to follow the lights as the bake does: ([(light, its chains of collections)]
    over every view layer of every scene, for the lights of a kind the bake takes (suns are left out); a signature
    of it, which changes when a light, its kind or its chains do."""
    chains = light_chains([layer for scene in bpy.data.scenes for layer in scene.view_layers])
    specs = sorted(((o, c) for o, c in chains.items()
                    if cast(bpy.types.Light, o.data).type in core_lm.LIGHT_KINDS), key=lambda item: item[0].name)
    signature = repr([(o.name, o.library.filepath if o.library else "", cast(bpy.types.Light, o.data).name,
                       cast(bpy.types.Light, o.data).type, [[c.name for c in chain] for chain in c])
                      for o, c in specs])
    return specs, signature


def sync_shadow_lights() -> bool:
    """Bring the lights the actors' shadows follow (shader_nodes.lightmap SHADOW_LIGHTS_GROUP) up to date with the
    file's lights: a light added or removed, moved to another collection, a collection excluded or included again.
    Only when the file has actors' shadows; cheap when nothing changed. Returns whether the group was rebuilt.
    (Hidden from renders, power and colour are read live by the group's drivers, animated too.)"""
    if lightmap_nodes.SHADOW_GROUP not in bpy.data.node_groups:
        return False
    specs, signature = shadow_light_specs()
    tree = bpy.data.node_groups.get(lightmap_nodes.SHADOW_LIGHTS_GROUP)
    if tree is not None and tree.get(lightmap_nodes.SHADOW_LIGHTS_KEY) == signature:
        return False
    lightmap_nodes.ensure_shadow_lights(specs, signature)
    return True


def add_actor_shadows(scene: bpy.types.Scene, actors: Iterable[bpy.types.Object]) -> list[str]:
    """Give each actor a live shadow: an object "<actor> Shadow" at the origin whose geometry-nodes modifier
    (shader_nodes.lightmap SHADOW_GROUP) draws 1-2 soft sprites away from the nearest light of the Lights collection,
    kept out of the walls by the last bake's distance map. Again on an actor that has one: its inputs are renewed.
    Returns the shadow objects' names. Raises LightmapInputError before changing anything."""
    s = bridge.envfx_settings(scene).lightmap
    if s.lights is None:
        raise LightmapInputError("Actor shadows follow the lights of a collection: choose the Lights collection of the "
                                 "light map")
    image = bpy.data.images.get(DISTANCE_IMAGE_NAME)
    if image is None or tuple(s.baked_region[2:]) == tuple(s.baked_region[:2]):
        raise LightmapInputError("Bake the light map first: the actors' shadows are kept out of walls by its "
                                 "distance map")
    actors = [a for a in dict.fromkeys(actors) if a.type != "LIGHT" and a != s.ground
              and not a.name.endswith(SHADOW_SUFFIX)]
    if not actors:
        raise LightmapInputError("No actors: select the moving objects that should cast shadows (not lights, the "
                                 "ground or shadows)")
    tree = lightmap_nodes.ensure_shadow_group()
    sync_shadow_lights()
    mat = lightmap_nodes.ensure_shadow_material()
    names = []
    for actor in actors:
        name = actor.name + SHADOW_SUFFIX
        obj = bpy.data.objects.get(name)
        if obj is None:
            obj = bpy.data.objects.new(name, bpy.data.meshes.new(name))
            for coll in actor.users_collection:
                coll.objects.link(obj)
        mod = next((m for m in nodes_modifiers(obj) if m.node_group == tree), None)
        if mod is None:
            mod = cast(bpy.types.NodesModifier, obj.modifiers.new(lightmap_nodes.SHADOW_GROUP, "NODES"))
            mod.node_group = tree
        values = {"Actor": actor, "Lights": s.lights, "Distance Map": image, "Material": mat,
                  "Region Min": (s.baked_region[0], s.baked_region[1], 0.0),
                  "Region Max": (s.baked_region[2], s.baked_region[3], 0.0), "Ground Height": s.baked_ground_z}
        for key, value in values.items():
            mod[nodes_common.input_identifier(tree, key)] = value
        obj.update_tag()
        names.append(obj.name)
    return names


class ENVFX_OT_lightmap_actor_shadows(NeedsScene, bpy.types.Operator):
    """Give the selected moving objects live soft shadows cast away from the nearest light (Day 5)"""

    bl_idname = "envfx.lightmap_actor_shadows"
    bl_label = "Add Actor Shadows"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            names = add_actor_shadows(bridge.context_scene(context),
                                      list(getattr(context, "selected_objects", None) or []))
        except LightmapInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Shadows: {', '.join(names)}")
        return {"FINISHED"}


# --- dirty lens (Day 6) ------------------------------------------------------------------------------------

LENS_DIRT_IMAGE = "EnvFX Lens Dirt"


def setup_dirty_lens(scene: bpy.types.Scene, dirt: bpy.types.Image | None = None, strength: float | None = None,
                     threshold: float | None = None) -> bpy.types.NodeTree | None:
    """Give ``scene`` the dirty-lens compositor set-up (shader_nodes.lightmap.ensure_dirty_lens) with the dirt image
    ``dirt`` (default: the Lens Dirt setting, else a generated EnvFX Lens Dirt image). Returns the compositor tree.
    Raises LightmapInputError when the scene has a compositor set-up of the user's (nothing changed)."""
    s = bridge.envfx_settings(scene).lightmap
    tree = lightmap_nodes.scene_compositor(scene)
    if tree is not None and not lightmap_nodes.is_own_compositor(tree) and (
            lightmap_nodes.NEW_COMPOSITOR or not lightmap_nodes._is_default_compositor(tree)):
        raise LightmapInputError(f"Scene {scene.name!r} already has a compositor set-up of its own: remove it (or "
                                 "use a copy of the scene) before adding the dirty lens")
    dirt = dirt or s.lens_dirt
    if dirt is None:
        dirt = bpy.data.images.get(LENS_DIRT_IMAGE)
        if dirt is None:
            dirt = bpy.data.images.new(LENS_DIRT_IMAGE, 512, 512, float_buffer=True)
            grey = core_lm.lens_dirt(512, 512)
            bridge.set_image_pixels(dirt, np.stack([grey, grey, grey, np.ones_like(grey)], axis=2))
            dirt.pack()
    return lightmap_nodes.ensure_dirty_lens(scene, dirt, s.lens_strength if strength is None else strength,
                                            s.lens_threshold if threshold is None else threshold)


class ENVFX_OT_lightmap_dirty_lens(NeedsScene, bpy.types.Operator):
    """Set up the compositor so a lens-dirt texture shows over the bright parts of the picture (Day 6)"""

    bl_idname = "envfx.lightmap_dirty_lens"
    bl_label = "Add Dirty Lens"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        try:
            setup_dirty_lens(bridge.context_scene(context))
        except LightmapInputError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, "Dirty lens added to the compositor")
        return {"FINISHED"}


# --- operator ----------------------------------------------------------------------------------------------

class ENVFX_OT_lightmap_bake(NeedsScene, progress.ModalJobOperator, bpy.types.Operator):
    """Bake the 2D light map of the ground: soft shadows of the obstacles from the scene's lights, written as EXR, PNG
    and JSON and shown on the ground"""

    bl_idname = "envfx.lightmap_bake"
    bl_label = "Bake 2D Light Map"
    bl_options = {"REGISTER", "UNDO"}

    job_label = "Light map"

    def make_job(self, context: bpy.types.Context) -> LightmapJob | None:
        try:
            return bake_lightmap_job(bridge.context_scene(context),
                                     list(getattr(context, "selected_objects", None) or []))
        except LightmapInputError as exc:
            self.report({"ERROR"}, str(exc))
            return None

    def finish(self, context: bpy.types.Context, result: LightmapResult) -> set[OperatorReturnItems]:
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        w, h = result.resolution
        self.report({"INFO"}, f"Light map {w} x {h} of {len(result.lights)} light(s) in {result.seconds:.1f} s: "
                    f"{os.path.dirname(result.files[0])}"
                    + (f"; shown on {', '.join(result.materials)}" if result.materials else "")
                    + (f"; {removed_text(result)}" if removed_text(result) else ""))
        return {"FINISHED"}


classes = (ENVFX_OT_lightmap_bake, ENVFX_OT_lightmap_actor_shadows, ENVFX_OT_lightmap_dirty_lens)
