"""Demo part: a small forest and a grass field in wind. Trees and grass clumps are built from numpy meshes with
bark / leaf materials (the material names double as the bake's trunk / leaf overrides), their wind data is baked
with the add-on's operator, a Wind force field drives the scene wind, the vegetation look colorizes them by where
they stand, and two frames of a seamless loop render. A walker then crosses the meadow: its interaction buffer is
baked (the Snow panel's Bake Interaction Buffer, with the walker as the actor) and the grass reads it (Push Grass):
blades around the walker bend down and away from it and wobble back after it passes (a third render)."""

import math

X0 = 200.0  # away from the other parts


def _material(bpy, name, color):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.8
    return mat


def _mesh(bpy, name, positions, faces, material_index=None, materials=()):
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(positions))
    mesh.vertices.foreach_set("co", positions.astype("float32").ravel())
    mesh.loops.add(len(faces) * 3)
    mesh.loops.foreach_set("vertex_index", faces.astype("int32").ravel())
    mesh.polygons.add(len(faces))
    import numpy as np

    mesh.polygons.foreach_set("loop_start", (np.arange(len(faces)) * 3).astype("int32"))
    mesh.polygons.foreach_set("loop_total", np.full(len(faces), 3, "int32"))
    for mat in materials:
        mesh.materials.append(mat)
    if material_index is not None:
        mesh.polygons.foreach_set("material_index", material_index.astype("int32"))
    mesh.update(calc_edges=True)
    mesh.validate()
    return mesh


def _select(bpy, objects):
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    for o in objects:
        o.select_set(True)
    bpy.context.view_layer.objects.active = objects[0]


def _colorize(bpy, scene, trees, grass, rng):
    """The vegetation look (docs/vegetation.md): a colorize set from four picked colours, a world-data ramp across
    the meadow (lush on the left, dry on the right), a band per tree, grass per vertex; AO and translucent leaves."""
    import numpy as np

    v = scene.envfx.vegetation
    v.colour_1, v.colour_2, v.colour_3, v.colour_4 = (0.04, 0.25, 0.03), (0.12, 0.35, 0.04), (0.45, 0.4, 0.1), \
        (0.62, 0.42, 0.15)
    assert bpy.ops.envfx.vegetation_new_set() == {"FINISHED"}
    y, x = np.mgrid[0:64, 0:64] / 63.0
    world = bpy.data.images.new("Wind World Data", 64, 64, float_buffer=True)
    world.colorspace_settings.name = "Non-Color"  # before the pixels: a generated image is remade when it changes
    px = np.ones((64, 64, 4), np.float32)
    px[..., :3] = (0.1 + 0.8 * x + 0.08 * np.sin(9 * y))[..., None].clip(0, 1)  # lush on the left, dry on the right
    world.pixels.foreach_set(px.ravel())
    world.file_format = "OPEN_EXR"  # packed as floats
    world.pack()
    v.world_data = world
    v.region_min, v.region_size = (X0 - 12.0, -6.0), 24.0
    for obj in trees:
        obj.envfx.colorize_band = int(rng.integers(2, 7))
    for obj in grass:
        obj.envfx.colorize_band = 4
    _select(bpy, trees + grass)
    assert bpy.ops.envfx.vegetation_apply() == {"FINISHED"}
    # the colour comes from the set: leaves and grass mid-grey under it (as Neutralise Albedo makes textures); the
    # bark keeps its own colour (mask 0)
    for mat in {s.material for o in trees + grass for s in o.material_slots}:
        node = mat.node_tree.nodes["EnvFX Vegetation"]
        if "Bark" in mat.name:
            node.inputs["Mask"].default_value = 0.0
        else:
            node.inputs["Albedo"].default_value = (0.5, 0.5, 0.5, 1.0)


def build(ctx):
    import importlib

    import numpy as np

    bpy = ctx.bpy
    scene = ctx.scene
    pkg = next(name for name in bpy.context.preferences.addons.keys() if name.endswith(".envfx"))
    shapes = importlib.import_module(pkg + ".core.wind_shapes")
    coll = ctx.collection("Wind Forest")
    bark = _material(bpy, "Wind Bark", (0.28, 0.18, 0.1))
    leaf = _material(bpy, "Wind Leaf", (0.12, 0.42, 0.1))
    grass_mat = _material(bpy, "Wind Grass Leaf", (0.3, 0.55, 0.12))
    ground_mat = _material(bpy, "Wind Ground", (0.25, 0.2, 0.12))

    ground = bpy.data.objects.new("Wind Ground", _mesh(
        bpy, "Wind Ground", np.array([[-30, -30, 0], [30, -30, 0], [30, 30, 0], [-30, 30, 0.0]]),
        np.array([[0, 1, 2], [0, 2, 3]]), materials=(ground_mat,)))
    ground.location = (X0, 10.0, 0.0)
    coll.objects.link(ground)

    trees = []
    rng = np.random.default_rng(3)
    for i in range(5):
        t = shapes.make_tree(height=rng.uniform(5.0, 7.0), n_branches=10, leaves_per_branch=8, seed=i,
                             lean=tuple(rng.uniform(-0.4, 0.4, 2)), leaf_size=0.9)
        index = (t["kind"][t["faces"][:, 0]] == 3).astype(np.int32)
        obj = bpy.data.objects.new(f"Wind Tree {i}", _mesh(bpy, f"Wind Tree {i}", t["positions"], t["faces"],
                                                            index, (bark, leaf)))
        obj.location = (X0 - 8.0 + 4.0 * i, 14.0 + rng.uniform(-2, 4), 0.0)
        obj.rotation_euler = (0.0, 0.0, rng.uniform(0, 2 * math.pi))
        coll.objects.link(obj)
        trees.append(obj)
    bpy.context.view_layer.update()
    for obj in trees:  # each tree is its own asset
        _select(bpy, [obj])
        assert bpy.ops.envfx.wind_bake_data() == {"FINISHED"}
    _select(bpy, trees)
    assert bpy.ops.envfx.wind_preset(preset="TREE") == {"FINISHED"}

    g = shapes.make_grass(blades=14, height=0.7, seed=1)
    grass_mesh = _mesh(bpy, "Wind Grass", g["positions"], g["faces"], materials=(grass_mat,))
    grass = []
    for i in range(220):  # instances share one mesh; each moves with its own phase and gust
        obj = bpy.data.objects.new(f"Wind Grass {i}", grass_mesh)
        if i >= 120:  # a denser strip along the walker's path (see _walker)
            u = rng.uniform(0.0, 1.0)
            obj.location = (X0 - 7.0 + 14.0 * u, 1.0 + 2.0 * u + rng.uniform(-1.1, 1.1), 0.0)
        else:
            obj.location = (X0 + rng.uniform(-9, 9), rng.uniform(-1.0, 9.0), 0.0) if i else (X0, 4.0, 0.0)
        obj.rotation_euler = (0.0, 0.0, rng.uniform(0, 2 * math.pi))
        coll.objects.link(obj)
        grass.append(obj)
    bpy.context.view_layer.update()
    _select(bpy, [grass[0]])
    assert bpy.ops.envfx.wind_bake_data() == {"FINISHED"}  # baking one clump bakes the shared mesh
    _select(bpy, grass)
    assert bpy.ops.envfx.wind_preset(preset="GRASS") == {"FINISHED"}

    b = shapes.make_tree(height=1.1, n_branches=3, leaves_per_branch=3, seed=7, leaf_size=0.5)
    bush_mesh = _mesh(bpy, "Wind Bush", b["positions"], b["faces"],
                      (b["kind"][b["faces"][:, 0]] == 3).astype(np.int32),
                      (_material(bpy, "Wind Bush Bark", (0.3, 0.2, 0.1)), _material(bpy, "Wind Bush Leaf",
                                                                                     (0.2, 0.45, 0.12))))
    props = []
    for i in range(14):  # small props in rigid sway: each turns whole about its base, by drivers, no bake
        obj = bpy.data.objects.new(f"Wind Bush {i}", bush_mesh)
        obj.location = (X0 - 7.0 + 14.0 * i / 13 + rng.uniform(-0.3, 0.3), -3.0 + rng.uniform(-0.6, 0.6), 0.0)
        obj.rotation_euler = (0.0, 0.0, rng.uniform(0, 2 * math.pi))
        coll.objects.link(obj)
        props.append(obj)
    _select(bpy, props)
    assert bpy.ops.envfx.wind_preset(preset="BUSH") == {"FINISHED"}
    for obj in props:
        obj.envfx.wind.rigid = True

    field = bpy.data.objects.new("Wind Field", None)
    coll.objects.link(field)
    field.location = (X0 - 10.0, 0.0, 3.0)
    _select(bpy, [field])
    bpy.ops.object.forcefield_toggle()
    field.field.type = "WIND"
    field.field.strength = 1.6
    field.rotation_euler = (math.radians(90), 0.0, math.radians(-70))
    for obj in trees[::2]:  # three of the trees move on the GPU, in their (shared) materials: no modifier
        obj.envfx.wind.gpu = True
    w = scene.envfx.wind
    w.source_object = field
    w.gust_strength = 0.7
    w.gust_frequency = 0.25
    w.loop_frames = 96
    _select(bpy, trees + grass + props)
    assert bpy.ops.envfx.wind_add() == {"FINISHED"}
    _colorize(bpy, scene, trees, grass, rng)

    cam_data = bpy.data.cameras.new("Wind Camera")
    cam_data.lens = 28
    cam = bpy.data.objects.new("Wind Camera", cam_data)
    coll.objects.link(cam)
    cam.location = (X0, -9.0, 3.2)
    cam.rotation_euler = (math.radians(80), 0.0, 0.0)
    ctx.only_visible(coll)
    files = [ctx.render(cam, "wind", frame=1), ctx.render(cam, "wind_gust", frame=40)]
    files += _walker(ctx, coll, cam)
    scene.frame_set(1)
    return files


def _walker(ctx, coll, cam):
    """Grass that actors push (docs/vegetation.md): a walker crosses the meadow over frames 1-60; its interaction
    buffer is baked (frames 1-96) into demo_out/grass_buffer and the grass reads its G and A channels."""
    import os

    bpy = ctx.bpy
    scene = ctx.scene
    walkers = bpy.data.collections.new("Wind Walker")
    coll.children.link(walkers)
    body = bpy.data.meshes.new("Wind Walker")
    import bmesh

    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=24, v_segments=12, radius=0.45)
    bm.to_mesh(body)
    bm.free()
    body.materials.append(_material(bpy, "Wind Walker", (0.7, 0.25, 0.15)))
    walker = bpy.data.objects.new("Wind Walker", body)
    walkers.objects.link(walker)
    for frame, x, y in ((1, -7.0, 1.0), (60, 7.0, 3.0)):
        walker.location = (X0 + x, y, 0.4)
        walker.keyframe_insert("location", frame=frame)
    s = scene.envfx.snow
    s.actors, s.frame_start, s.frame_end = walkers, 1, 96
    s.buffer_resolution, s.sequence = 256, True
    s.output_dir = os.path.join(ctx.out_dir, "grass_buffer")
    assert bpy.ops.envfx.snow_bake_buffer() == {"FINISHED"}
    assert bpy.ops.envfx.wind_grass_push() == {"FINISHED"}
    # closer, looking down on the walker's path: at frame 44 the grass parts around the walker and behind it; at 72
    # (12 frames after it stopped) the blades it pushed wobble back up
    cam_data = bpy.data.cameras.new("Wind Push Camera")
    cam_data.lens = 30
    push_cam = bpy.data.objects.new("Wind Push Camera", cam_data)
    coll.objects.link(push_cam)
    push_cam.location = (X0 + 0.5, -3.2, 3.6)
    push_cam.rotation_euler = (math.radians(57), 0.0, math.radians(-12))
    files = [ctx.render(push_cam, "wind_push", frame=44), ctx.render(push_cam, "wind_push_after", frame=72)]
    from demo import side_by_side

    files.append(side_by_side(files, os.path.join(ctx.out_dir, "wind_push_pair.png")))
    return files + [os.path.join(s.output_dir, "snow_buffer.json")]
