"""Demo part: a lit top-down level (Tile Rider's 2D light map). A 20 x 14 m ground among wall blocks, three coloured
point lights; the light map is baked with the operator (EXR, PNG, JSON and the distance map into demo_out/lightmap/),
shown on the ground through its material, the walls get the light in their vertex colours, a crate gets a live
actor shadow, and the level is rendered from above in Eevee to demo_out/lightmap.png."""

import math
import os


def _material(bpy, name, colour, vertex_colours=False):
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = colour
    if vertex_colours:  # the walls show the light merged into their vertex colours (Day 1)
        attr = mat.node_tree.nodes.new("ShaderNodeVertexColor")
        attr.layer_name = "EnvFX Light"
        mix = mat.node_tree.nodes.new("ShaderNodeMix")
        mix.data_type = "RGBA"
        mix.blend_type = "MULTIPLY"
        mix.inputs["Factor"].default_value = 1.0
        mix.inputs[6].default_value = colour
        mat.node_tree.links.new(attr.outputs["Color"], mix.inputs[7])
        mat.node_tree.links.new(mix.outputs[2], bsdf.inputs["Base Color"])
    return mat


def build(ctx):
    bpy = ctx.bpy
    scene = ctx.scene
    ox, oy = 0.0, 120.0  # this part's area
    coll = ctx.collection("Light Map")
    walls = bpy.data.collections.new("Light Map Walls")
    coll.children.link(walls)
    lights = bpy.data.collections.new("Light Map Lights")
    coll.children.link(lights)

    mesh = bpy.data.meshes.new("Level Ground")
    mesh.from_pydata([(ox - 10, oy - 7, 0), (ox + 10, oy - 7, 0), (ox + 10, oy + 7, 0), (ox - 10, oy + 7, 0)], [],
                     [(0, 1, 2, 3)])
    mesh.materials.append(_material(bpy, "Level Floor", (0.8, 0.75, 0.65, 1.0)))
    ground = bpy.data.objects.new("Level Ground", mesh)
    coll.objects.link(ground)
    wall_mat = _material(bpy, "Level Wall", (0.6, 0.6, 0.65, 1.0), vertex_colours=True)
    layout = ((-10, 0, 0.4, 14), (10, 0, 0.4, 14), (0, -7, 20, 0.4), (0, 7, 20, 0.4),  # the outer walls
              (-3, -2.5, 0.5, 9), (4, 3, 8, 0.5), (5, -3, 1.5, 1.5), (-6.5, 3.5, 2, 2))
    for k, (x, y, sx, sy) in enumerate(layout):
        wm = bpy.data.meshes.new(f"Level Wall {k}")
        verts = [(ox + x + dx * sx / 2, oy + y + dy * sy / 2, z) for z in (0, 3)
                 for dx, dy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]
        wm.from_pydata(verts, [], [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)])
        wm.materials.append(wall_mat)
        walls.objects.link(bpy.data.objects.new(f"Level Wall {k}", wm))
    for k, (x, y, colour, power) in enumerate(((-6, -3, (1.0, 0.75, 0.45), 900), (1.5, 0.5, (0.5, 0.7, 1.0), 700),
                                               (7, 5, (1.0, 0.5, 0.35), 500))):
        data = bpy.data.lights.new(f"Level Lamp {k}", "POINT")
        data.color, data.energy, data.shadow_soft_size = colour, power, 0.35
        lamp = bpy.data.objects.new(f"Level Lamp {k}", data)
        lamp.location = (ox + x, oy + y, 2.0)
        lights.objects.link(lamp)

    s = scene.envfx.lightmap
    s.ground, s.obstacles, s.lights = ground, walls, lights
    s.resolution, s.penumbra_samples = 512, 12
    s.smoothing, s.smoothing_levels = "MIPS", 2
    s.occlusion_distance, s.occlusion_strength = 0.6, 0.5
    s.vertex_colours = True
    s.output_dir = os.path.join(ctx.out_dir, "lightmap")
    result = bpy.ops.envfx.lightmap_bake()
    assert result == {"FINISHED"}, result
    files = [os.path.join(s.output_dir, n) for n in sorted(os.listdir(s.output_dir))]

    # a crate moving through the level gets a live shadow from the nearest lamp (Day 5)
    crate_mesh = bpy.data.meshes.new("Level Crate")
    crate_mesh.from_pydata([(dx * 0.3, dy * 0.3, z) for z in (0, 0.6) for dx, dy in ((-1, -1), (1, -1), (1, 1),
                                                                                       (-1, 1))], [],
                           [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)])
    crate_mesh.materials.append(_material(bpy, "Level Crate", (0.55, 0.35, 0.2, 1.0)))
    crate = bpy.data.objects.new("Level Crate", crate_mesh)
    crate.location = (ox + 3.5, oy - 0.5, 0.0)
    coll.objects.link(crate)
    envfx_ops = _envfx_module("operators.lightmap")
    envfx_ops.add_actor_shadows(scene, [crate])
    # the lamps are baked: the render shows the map, not Eevee's own light from them
    for lamp in lights.objects:
        lamp.hide_render = True

    cam_data = bpy.data.cameras.new("Light Map Camera")
    cam_data.type = "ORTHO"
    cam_data.ortho_scale = 21.0
    cam = bpy.data.objects.new("Light Map Camera", cam_data)
    cam.location = (ox, oy - 3.0, 20.0)
    cam.rotation_euler = (math.radians(10), 0.0, 0.0)
    coll.objects.link(cam)
    ctx.only_visible(coll)
    files.insert(0, ctx.render(cam, "lightmap"))
    for lamp in lights.objects:
        lamp.hide_render = False
    return files


def _envfx_module(name):
    import importlib
    import sys

    pkg = next(mod for key, mod in sys.modules.items() if key.startswith("bl_ext.") and key.endswith(".envfx"))
    return importlib.import_module(f"{pkg.__name__}.{name}")
