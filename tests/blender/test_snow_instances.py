"""Snow and instanced geometry in real Blender: collection instances, geometry-nodes and particle instances keep
snow from under them (generation and the interaction-buffer bake) and can be the terrain; helpers that are never
rendered or drawn only as Wire/Bounds do not keep snow off."""

import json

import bmesh
import bpy
import numpy as np
import pytest

from tests.blender import api


@pytest.fixture(scope="module")
def snow_tests(load_helper):
    """tests/blender/test_snow.py as a module (its scene helpers)."""
    return load_helper("snow_test_helpers", "tests", "blender", "test_snow.py")


def slab_mesh(name, size=(4.0, 4.0, 0.2)):
    """A box mesh ``size`` big centred on its origin (the size is in the mesh, so instances of it, however they
    are placed, are that big)."""
    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.scale(bm, vec=size, verts=list(bm.verts))
    bm.to_mesh(me)
    bm.free()
    return me


def instance_on_points(name, points, source, location=(0.0, 0.0, 0.0), coll=None):
    """A point object whose geometry-nodes modifier puts an instance of ``source``'s geometry on each of
    ``points`` (its own mesh has no faces)."""
    pts = bpy.data.meshes.new(name)
    pts.from_pydata([tuple(p) for p in points], [], [])
    obj = bpy.data.objects.new(name, pts)
    obj.location = location
    (coll or api.scene().collection).objects.link(obj)
    ng = api.new_tree(name, bpy.types.GeometryNodeTree)
    assert ng.interface is not None
    ng.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    ng.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    gi, go = ng.nodes.new("NodeGroupInput"), ng.nodes.new("NodeGroupOutput")
    iop, info = ng.nodes.new("GeometryNodeInstanceOnPoints"), ng.nodes.new("GeometryNodeObjectInfo")
    api.socket(info.inputs["Object"]).default_value = source
    ng.links.new(gi.outputs[0], iop.inputs["Points"])
    ng.links.new(info.outputs["Geometry"], iop.inputs["Instance"])
    ng.links.new(iop.outputs[0], go.inputs[0])
    api.of(bpy.types.NodesModifier, obj.modifiers.new(name, "NODES")).node_group = ng
    return obj


def collection_instance(name, coll, location):
    """An Empty showing the collection ``coll`` at ``location``."""
    inst = bpy.data.objects.new(name, None)
    inst.instance_type, inst.instance_collection = "COLLECTION", coll
    inst.location = location
    api.scene().collection.objects.link(inst)
    return inst


def source_collection(name, *objects):
    """A collection (not in the scene) holding ``objects``."""
    coll = bpy.data.collections.new(name)
    for obj in objects:
        coll.objects.link(obj)
    return coll


def generate(snow_tests, envfx, *terrain):
    snow_tests.select_only(*terrain)
    api.view_layer().update()
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = [o for o in api.scene().objects if o.get("envfx_snow") == 0]
    assert len(snow) == 1
    return snow[0]


def snow_near(envfx, snow, x, y, r=1.5):
    """Number of snow vertices (world x, y) within ``r`` (a square) of ``x``, ``y``."""
    co = envfx.bridge.get_positions(snow.data).astype(np.float64)
    m = envfx.bridge.matrix_to_numpy(snow.matrix_world)
    co = co @ m[:3, :3].T + m[:3, 3]
    return int(((np.abs(co[:, 0] - x) < r) & (np.abs(co[:, 1] - y) < r)).sum())


def snowfield(snow_tests, spacing=0.25):
    snow_tests.clear_scene()
    s = api.envfx(api.scene()).snow
    s.spacing, s.noise, s.drift, s.border_width = spacing, 0.0, 0.0, 0.0
    return snow_tests.grid_object("Terrain", size=20.0, segments=4)


# --- occluders during generation --------------------------------------------------------------------------

def test_instanced_rocks_keep_snow_from_under_them(envfx, snow_tests):
    """A 4 x 4 m rock slab 2 m up, shown as a plain object, a collection instance, a geometry-nodes scatter and a
    particle instance: no snow under any of them (README: no snow where other rendered geometry is above)."""
    terrain = snowfield(snow_tests)
    rock = bpy.data.objects.new("RockSrc", slab_mesh("Rock"))
    rocks = source_collection("Rocks", rock)                     # the source is not in the scene
    plain = bpy.data.objects.new("PlainRock", rock.data)
    api.scene().collection.objects.link(plain)
    plain.location = (5, -5, 2)
    collection_instance("RockInstance", rocks, (-5, -5, 2))
    instance_on_points("RockScatter", [(0, 0, 0)], rock, location=(5, 5, 2))
    emitter = snow_tests.grid_object("Emitter", size=3.0, segments=1, location=(-5, 5, 2))
    emitter.modifiers.new("Boulders", "PARTICLE_SYSTEM")
    ps = emitter.particle_systems[0].settings
    ps.type, ps.count, ps.hair_length = "HAIR", 1, 1.0
    ps.emit_from, ps.use_emit_random, ps.use_even_distribution = "VERT", False, False
    ps.render_type, ps.particle_size, ps.use_scale_instance = "OBJECT", 1.0, False
    ps.instance_object = bpy.data.objects.new("BoulderSrc", slab_mesh("Boulder", (2.0, 2.0, 2.0)))
    emitter.show_instancer_for_render = False                  # only the particle's boulder is drawn
    snow = generate(snow_tests, envfx, terrain)
    assert snow_near(envfx, snow, 5, -5) == 0                  # plain
    assert snow_near(envfx, snow, -5, -5) == 0                 # collection instance
    assert snow_near(envfx, snow, 5, 5) == 0                   # geometry-nodes instance
    assert snow_near(envfx, snow, -6.5, 3.5, r=0.9) == 0       # particle instance (on the emitter's first corner)
    assert snow_near(envfx, snow, 0, 0) == 121                  # open ground
    # the emitter hides itself in renders: only its boulder keeps the snow off, not its own plate
    assert snow_near(envfx, snow, -4, 6, r=0.4) == snow_near(envfx, snow, 0, 6, r=0.4) > 0
    emitter.show_instancer_for_render = True
    bpy.data.objects.remove(snow)
    snow = generate(snow_tests, envfx, terrain)
    assert snow_near(envfx, snow, -4, 6, r=0.4) == 0


@pytest.mark.parametrize("hidden", [False, True])
def test_instanced_rocks_keep_the_snow_off_in_the_bake_as_in_the_live_trails(envfx, snow_tests, tmp_path, hidden):
    """The interaction-buffer bake reads the occluders collection as the live trails do (Collection Info with
    Realize Instances): a crate scattered by geometry nodes and one shown by a collection instance hold the baked
    snow down like the plain crate, also when they are hidden in the viewport (the trails still read them)."""
    scene, snow, actors = snow_tests.snow_scene(envfx, spacing=0.1, size=8.0, thickness=0.3, border=0.2)
    walker = bpy.data.objects.new("Walker", None)
    actors.objects.link(walker)
    walker.location, walker.empty_display_size = (-3, -3, 0), 0.3
    occ = bpy.data.collections.new("Occluders")
    scene.collection.children.link(occ)
    s = scene.envfx.snow
    s.occluders = occ
    crate = bpy.data.meshes.new("Crate")
    bm = bmesh.new()
    bmesh.ops.create_cube(bm, size=1.0)
    bmesh.ops.translate(bm, vec=(0, 0, 0.5), verts=list(bm.verts))
    bm.to_mesh(crate)
    bm.free()
    plain = bpy.data.objects.new("CratePlain", crate)
    occ.objects.link(plain)
    plain.location = (2, 0, 0)
    src = bpy.data.objects.new("CrateSrc", crate)                # not in the scene
    scatter = instance_on_points("CrateScatter", [(0, 0, 0)], src, location=(-2, 0, 0), coll=occ)
    inst = bpy.data.objects.new("CrateInstance", None)
    inst.instance_type, inst.instance_collection = "COLLECTION", source_collection("Crates", src)
    inst.location = (0, 2.5, 0)
    occ.objects.link(inst)
    if hidden:
        for obj in (plain, scatter, inst):
            obj.hide_set(True)
    s.frame_start, s.frame_end, s.buffer_resolution, s.framing, s.sequence = 1, 3, 64, "AREA", False
    s.output_dir = str(tmp_path)
    scene.frame_set(1)
    snow_tests.select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    for f in range(1, 4):
        scene.frame_set(f)
    rest, live = snow_tests.evaluated_offset(envfx, snow)
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    core = envfx.core.snow
    meta = json.loads((tmp_path / "snow_buffer.json").read_text())
    buf = core.read_exr(str(tmp_path / "snow_buffer.exr"))
    baked = core.sample_buffer(buf, meta["frames"][-1]["origin"], meta["texel_size"], rest[:, :2], 0)
    for x, y in [(2, 0), (-2, 0), (0, 2.5)]:
        under = (np.abs(rest[:, 0] - x) < 0.3) & (np.abs(rest[:, 1] - y) < 0.3)
        assert under.sum() > 10
        assert live[under].max() < -0.28                       # the live trails hold it down ...
        np.testing.assert_allclose(baked[under], -0.3, atol=1e-4)   # ... and so does the bake
    assert not [d.name for d in (*bpy.data.objects, *bpy.data.meshes, *bpy.data.node_groups)
                if d.name.startswith(envfx.operators.snow.OCCLUDER_READER)]   # the reader is gone


# --- what does not count as an occluder ---------------------------------------------------------------------

def test_unrendered_and_wire_helpers_do_not_keep_snow_off(envfx, snow_tests):
    """Objects never rendered or drawn only as Wire/Bounds (trigger volumes, nav blockers, collision helpers) are
    not the rocks and bridges that keep snow off; rendered solid geometry still does."""
    terrain = snowfield(snow_tests)
    scene = api.scene()
    slab = slab_mesh("Slab", (2.0, 2.0, 0.2))

    def helper(name, x, y, coll=None):
        obj = bpy.data.objects.new(name, slab)
        obj.location = (x, y, 2)
        (coll or scene.collection).objects.link(obj)
        return obj

    trigger = helper("Trigger", -6, -6)
    trigger.display_type, trigger.hide_render = "WIRE", True
    helper("NavBlocker", -6, 0).display_type = "BOUNDS"
    helper("NotRendered", -6, 6).hide_render = True
    helper("WireOnly", 0, -6).display_type = "WIRE"
    helpers = bpy.data.collections.new("Helpers")
    scene.collection.children.link(helpers)
    helpers.hide_render = True
    helper("InHelpers", 0, 6, helpers)
    boxed = collection_instance("BoundsInstance", source_collection("SlabSrc", bpy.data.objects.new("Src", slab)),
                                (6, -6, 2))
    boxed.display_type = "BOUNDS"                              # the instancer draws its instances as boxes
    hidden_src = bpy.data.objects.new("HiddenSrc", slab)
    hidden_src.hide_render = True
    collection_instance("UnrenderedInside", source_collection("HiddenSrc", hidden_src), (6, 0, 2))
    helper("Rock", 6, 6)                                       # rendered and solid: keeps snow off
    snow = generate(snow_tests, envfx, terrain)
    for x, y in [(-6, -6), (-6, 0), (-6, 6), (0, -6), (0, 6), (6, -6), (6, 0)]:
        assert snow_near(envfx, snow, x, y, r=0.9) == 49, (x, y)
    assert snow_near(envfx, snow, 6, 6, r=0.9) == 0


# --- instanced terrain ------------------------------------------------------------------------------------

def tile_object(name, size=4.0):
    """A ``size`` square tile (2 x 2 faces) with a planar UV map (u, v from 0 to 1 across it), not in the scene."""
    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_grid(bm, x_segments=2, y_segments=2, size=size / 2)
    uv = bm.loops.layers.uv.new("UVMap")
    for face in bm.faces:
        for loop in face.loops:
            loop[uv].uv = (loop.vert.co.x / size + 0.5, loop.vert.co.y / size + 0.5)
    bm.to_mesh(me)
    bm.free()
    return bpy.data.objects.new(name, me)


def snow_xy(envfx, snow):
    co = envfx.bridge.get_positions(snow.data).astype(np.float64)
    m = envfx.bridge.matrix_to_numpy(snow.matrix_world)
    return (co @ m[:3, :3].T + m[:3, 3])[:, :2]


def test_collection_instance_and_geometry_nodes_tiles_are_covered(envfx, snow_tests):
    """Terrain drawn by a collection instance (mirrored: its faces still look up) or by a geometry-nodes modifier
    instancing tiles is covered where its instances are; the cover takes trails and is regenerated in place."""
    snow_tests.clear_scene()
    scene = api.scene()
    s = api.envfx(scene).snow
    s.spacing, s.noise, s.drift, s.border_width = 0.25, 0.0, 0.0, 0.0
    tile = tile_object("TileSrc")
    inst = collection_instance("TileInstance", source_collection("TileLib", tile), (0, 20, 0))
    inst.scale = (-1, 1, 1)
    snow = generate(snow_tests, envfx, inst)
    xy = snow_xy(envfx, snow)
    np.testing.assert_allclose([xy[:, 0].min(), xy[:, 0].max(), xy[:, 1].min(), xy[:, 1].max()],
                               [-2, 2, 18, 22], atol=1e-5)
    assert len(xy) == 17 * 17
    assert snow.name == "TileInstance Snow"
    assert envfx.operators.snow.covers_of(scene, [inst]) == [snow]

    modular = instance_on_points("ModularTerrain", [(x * 4.0, y * 4.0, 0) for x in range(3) for y in range(3)], tile)
    snow_tests.select_only(modular)
    assert api.ops.snow_generate() == {"FINISHED"}
    snow = bpy.data.objects["ModularTerrain Snow"]
    xy = snow_xy(envfx, snow)
    np.testing.assert_allclose([xy[:, 0].min(), xy[:, 0].max(), xy[:, 1].min(), xy[:, 1].max()],
                               [-2, 10, -2, 10], atol=1e-5)
    assert len(xy) == 49 * 49
    # trails on it, then the same terrain again: the cover is regenerated in place and keeps its trails
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    s.actors = actors
    actors.objects.link(bpy.data.objects.new("Walker", None))
    snow_tests.select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}
    s.spacing = 0.5
    made = envfx.operators.snow.generate_snow(scene, [modular], bpy.context.evaluated_depsgraph_get(), replace=True)
    assert list(made) == [snow] and len(api.mesh(snow).vertices) == 25 * 25
    assert envfx.operators.snow.trails_modifiers(snow)
    assert sorted(o.name for o in envfx.operators.snow.snow_objects(scene)) == ["ModularTerrain Snow",
                                                                                "TileInstance Snow"]


def test_density_texture_on_instanced_tiles(envfx, snow_tests):
    """The density texture is read at each instance's own UVs: a mask white on the left half of the UV square
    leaves snow on the left half of every tile."""
    snow_tests.clear_scene()
    s = api.envfx(api.scene()).snow
    s.spacing, s.noise, s.drift, s.border_width = 0.1, 0.0, 0.0, 0.0
    img = bpy.data.images.new("Mask", 16, 16, float_buffer=True)
    px = np.zeros((16, 16, 4), dtype=np.float32)
    px[:, :8, :] = 1.0
    api.pixels(img).foreach_set(px.ravel())
    s.density_texture = img
    tiles = instance_on_points("Tiles", [(0, 0, 0), (8, 0, 0)], tile_object("TileSrc"))
    snow = generate(snow_tests, envfx, tiles)
    x = snow_xy(envfx, snow)[:, 0]
    local = np.where(x > 4, x - 8, x)                            # x across its own tile
    assert local.max() < 0.125 and local.min() < -1.8            # bilinear: black from the texel centre u = 0.53
    assert (x > 4).any() and (x < 4).any()                       # both tiles


def test_terrain_blender_does_not_evaluate_is_refused(envfx):
    """A terrain disabled in viewports (its collection's monitor icon) keeps the place and mesh of its last
    evaluation: moved since, the snow was made where it had been (100 m away). It is refused, named with what to
    do, and nothing is made."""
    scene = api.scene()
    coll = bpy.data.collections.new("Level")
    scene.collection.children.link(coll)
    mesh = bpy.data.meshes.new("Ground")
    mesh.from_pydata([(-2, -2, 0), (2, -2, 0), (2, 2, 0), (-2, 2, 0)], [], [(0, 1, 2, 3)])
    ground = bpy.data.objects.new("Ground", mesh)
    coll.objects.link(ground)
    api.view_layer().update()
    coll.hide_viewport = True
    api.view_layer().update()
    ground.location.x = 100.0
    objects = set(bpy.data.objects.keys())
    with pytest.raises(envfx.operators.snow.SnowInputError,
                       match="Ground is not evaluated: collection 'Level' is disabled in viewports.*generate the snow"):
        envfx.operators.snow.generate_snow(scene, [ground], bpy.context.evaluated_depsgraph_get())
    assert set(bpy.data.objects.keys()) == objects


def test_helpers_inside_an_instanced_tile_are_not_terrain(envfx, snow_tests):
    """A level tile shown by a collection instance carries a trigger volume (drawn as Wire, never rendered): the
    snow covers the tile's ground under it, not the helper (before: a slab of snow floated on the invisible box
    and the ground under it was bare), as when the tile's ground is selected itself."""
    ground = snowfield(snow_tests)
    api.scene().collection.objects.unlink(ground)
    trigger = bpy.data.objects.new("TriggerVolume", slab_mesh("TriggerVolume", (4.0, 4.0, 3.0)))
    trigger.location = (0.0, 0.0, 1.5)
    trigger.display_type, trigger.hide_render = "WIRE", True
    inst = collection_instance("Tile", source_collection("TileSource", ground, trigger), (0.0, 0.0, 0.0))
    snow = generate(snow_tests, envfx, inst)
    co = envfx.bridge.get_positions(snow.data)
    assert (co[:, 2] > 2.5).sum() == 0
    assert snow_near(envfx, snow, 0.0, 0.0, 1.9) > 200
