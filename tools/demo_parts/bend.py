"""Demo part: a rolling world. A long road with houses and trees drops away ahead of the player."""

import math
import random


def _material(bpy, name, color):
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.8
    return mat


def _add(bpy, coll, op, mat, **kwargs):
    op(**kwargs)
    obj = bpy.context.active_object
    for c in obj.users_collection:
        c.objects.unlink(obj)
    coll.objects.link(obj)
    obj.data.materials.append(mat)
    return obj


def build(ctx):
    bpy = ctx.bpy
    scene = ctx.scene
    rng = random.Random(7)
    coll = ctx.collection("Bend World")
    origin_x = 0.0
    grass = _material(bpy, "Demo Grass", (0.22, 0.45, 0.12))
    road = _material(bpy, "Demo Road", (0.45, 0.38, 0.3))
    wall = _material(bpy, "Demo Wall", (0.85, 0.75, 0.6))
    roof = _material(bpy, "Demo Roof", (0.6, 0.15, 0.1))
    leaf = _material(bpy, "Demo Leaves", (0.1, 0.35, 0.1))
    hero = _material(bpy, "Demo Hero", (0.9, 0.8, 0.1))

    ground = _add(bpy, coll, bpy.ops.mesh.primitive_grid_add, grass, x_subdivisions=60, y_subdivisions=240,
                  size=1.0, location=(origin_x, 40.0, 0.0))
    ground.scale = (30.0, 120.0, 1.0)
    ground.name = "Ground"
    path = _add(bpy, coll, bpy.ops.mesh.primitive_grid_add, road, x_subdivisions=4, y_subdivisions=240, size=1.0,
                location=(origin_x, 40.0, 0.02))
    path.scale = (3.0, 120.0, 1.0)
    path.name = "Road"
    for i in range(16):
        y = -10.0 + i * 6.5
        for side in (-1, 1):
            x = origin_x + side * (6.0 + rng.uniform(0.0, 3.0))
            if rng.random() < 0.5:
                house = _add(bpy, coll, bpy.ops.mesh.primitive_cube_add, wall, size=1.0, location=(x, y, 1.2))
                house.scale = (2.4, 2.0, 2.4)
                top = _add(bpy, coll, bpy.ops.mesh.primitive_cone_add, roof, vertices=4, radius1=2.2, depth=1.6,
                           location=(x, y, 3.2), rotation=(0.0, 0.0, math.pi / 4))
                top.name = f"Roof {i} {side}"
            else:
                trunk = _add(bpy, coll, bpy.ops.mesh.primitive_cylinder_add, road, radius=0.2, depth=2.0,
                             location=(x, y, 1.0))
                crown = _add(bpy, coll, bpy.ops.mesh.primitive_ico_sphere_add, leaf, subdivisions=2,
                             radius=rng.uniform(1.2, 1.8), location=(x, y, 2.8))
                trunk.name, crown.name = f"Trunk {i} {side}", f"Crown {i} {side}"
    for obj in coll.objects:  # the houses and trees bend on the GPU, in their materials (no modifier, no CPU work
        if obj not in (ground, path):  # per frame); the ground and the road keep the modifier
            obj.envfx.bend_gpu = True

    player = _add(bpy, coll, bpy.ops.mesh.primitive_uv_sphere_add, hero, radius=0.6, location=(origin_x, 0.0, 0.6))
    player.name = "Player"

    cam_data = bpy.data.cameras.new("Bend Camera")
    cam_data.lens = 30
    cam = bpy.data.objects.new("Bend Camera", cam_data)
    coll.objects.link(cam)
    cam.location = (origin_x, -12.0, 6.0)
    cam.rotation_euler = (math.radians(75), 0.0, 0.0)

    settings = scene.envfx.bend
    settings.mode = "RUNNER_2AXIS"
    settings.axis = "POS_Y"
    settings.pivot = player
    settings.horizon_offset = 4.0
    settings.strength = 0.012
    settings.spread = 3.0
    settings.side_strength = 0.01
    settings.side_spread = 4.0
    result = bpy.ops.envfx.bend_add(collection=coll.name)
    assert result == {"FINISHED"}, result
    bpy.ops.object.select_all(action="DESELECT")
    player.select_set(True)
    bpy.context.view_layer.objects.active = player
    bpy.ops.envfx.bend_exclude(exclude=True)

    ctx.only_visible(coll)
    files = [ctx.render(cam, "bend")]
    settings.enabled = False
    files.append(ctx.render(cam, "bend_flat"))
    settings.enabled = True
    from demo import side_by_side

    files.append(side_by_side([files[1], files[0]], f"{ctx.out_dir}/bend_compare.png"))
    # the same bend for the game: shader includes for Godot, Unity and Unreal and its JSON
    result = bpy.ops.envfx.bend_export_engines(directory=f"{ctx.out_dir}/bend_engines")
    assert result == {"FINISHED"}, result
    files.append(f"{ctx.out_dir}/bend_engines/envfx_bend.json")
    return files
