"""Demo part: a snowy slope with a rock, a nest held free of snow, and three characters walking through deep
snow, leaving trails with rims; the interaction buffer is baked next to the render."""

import math
import os

ORIGIN = (0.0, 200.0)  # away from the other parts


def _material(bpy, name, color, roughness=0.7):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    return mat


def _snow_covered(bpy, mat):
    """Mix white into a material where the actor is in the snow (the snow_coverage attribute)."""
    nt = mat.node_tree
    bsdf = nt.nodes.get("Principled BSDF")
    attr = nt.nodes.new("ShaderNodeAttribute")
    attr.attribute_name = "snow_coverage"
    mix = nt.nodes.new("ShaderNodeMix")
    mix.data_type = "RGBA"
    mix.inputs["A"].default_value = bsdf.inputs["Base Color"].default_value
    mix.inputs["B"].default_value = (0.92, 0.95, 1.0, 1.0)
    nt.links.new(attr.outputs["Fac"], mix.inputs["Factor"])
    nt.links.new(mix.outputs["Result"], bsdf.inputs["Base Color"])
    return mat


def _mesh_object(bpy, coll, name, build, mat, location=(0, 0, 0)):
    import bmesh

    me = bpy.data.meshes.new(name)
    bm = bmesh.new()
    build(bmesh, bm)
    bm.to_mesh(me)
    bm.free()
    me.materials.append(mat)
    obj = bpy.data.objects.new(name, me)
    obj.location = location
    coll.objects.link(obj)
    return obj


def build(ctx):
    bpy = ctx.bpy
    scene = ctx.scene
    ox, oy = ORIGIN
    coll = ctx.collection("Snow World")
    ground_mat = _material(bpy, "Demo Frozen Ground", (0.25, 0.22, 0.2))
    rock_mat = _material(bpy, "Demo Rock", (0.35, 0.35, 0.38))
    body_mats = [_snow_covered(bpy, _material(bpy, f"Demo Walker {i}", c, 0.4)) for i, c in
                 enumerate([(0.9, 0.3, 0.5), (0.2, 0.6, 0.9), (0.95, 0.7, 0.1)])]

    def slope(bmesh, bm):
        bmesh.ops.create_grid(bm, x_segments=60, y_segments=60, size=10.0)
        for v in bm.verts:
            x, y = v.co.x, v.co.y
            v.co.z = 0.12 * y + 0.25 * math.sin(x * 0.6) * math.cos(y * 0.45)

    terrain = _mesh_object(bpy, coll, "Snow Slope", slope, ground_mat, (ox, oy, 0.0))
    rock = _mesh_object(bpy, coll, "Rock",
                        lambda bmesh, bm: bmesh.ops.create_icosphere(bm, subdivisions=2, radius=1.0), rock_mat,
                        (ox + 4.0, oy + 3.0, 0.5))
    rock.scale = (1.4, 1.0, 0.8)

    walkers = ctx.bpy.data.collections.new("Snow Walkers")
    coll.children.link(walkers)
    occluders = ctx.bpy.data.collections.new("Snow Occluders")
    coll.children.link(occluders)
    nest = _mesh_object(bpy, occluders, "Nest Patch",
                        lambda bmesh, bm: bmesh.ops.create_circle(bm, cap_ends=True, radius=1.0, segments=16),
                        rock_mat, (ox - 4.0, oy - 2.0, 0.0))
    nest.location.z = 0.12 * (-2.0) + 0.05

    paths = [((-8, -6), (7, 5), 0.55), ((-7, 4), (8, -3), 0.45), ((2, -8), (-3, 8), 0.35)]
    frames = 48
    for i, ((x0, y0), (x1, y1), r) in enumerate(paths):
        body = _mesh_object(bpy, walkers, f"Walker {i}",
                            lambda bmesh, bm, r=r: bmesh.ops.create_uvsphere(bm, u_segments=24, v_segments=12,
                                                                             radius=r),
                            body_mats[i])
        for frame, t in ((1, 0.0), (frames, 1.0)):
            x = x0 + (x1 - x0) * t
            y = y0 + (y1 - y0) * t
            z = 0.12 * y + 0.25 * math.sin(x * 0.6) * math.cos(y * 0.45) + r * 0.9
            body.location = (ox + x, oy + y, z)
            body.keyframe_insert("location", frame=frame)

    s = scene.envfx.snow
    s.spacing = 0.06
    s.thickness = 0.3
    s.border_width = 0.6
    s.noise = 0.25
    s.noise_scale = 3.0
    s.drift = 0.3
    s.lods = 2
    s.actors = walkers
    s.occluders = occluders
    s.camera_fade_start = 60.0
    s.camera_fade_end = 120.0
    s.puffs = True  # the walkers kick up snow
    # the walkers and the nest are not scenery: snow is generated over the slope only, the rock blocks it
    for o in scene.objects:
        o.select_set(False)
    terrain.select_set(True)
    bpy.context.view_layer.objects.active = terrain
    result = bpy.ops.envfx.snow_generate()
    assert result == {"FINISHED"}, result
    result = bpy.ops.envfx.snow_trails_add()
    assert result == {"FINISHED"}, result
    # keep the part in its own collection (renders show one part at a time)
    for obj in [o for o in scene.objects if o.get("envfx_snow") is not None]:
        for c in list(obj.users_collection):
            c.objects.unlink(obj)
        coll.objects.link(obj)

    cam_data = bpy.data.cameras.new("Snow Camera")
    cam_data.lens = 32
    cam = bpy.data.objects.new("Snow Camera", cam_data)
    coll.objects.link(cam)
    cam.location = (ox + 0.0, oy - 17.0, 9.0)
    cam.rotation_euler = (math.radians(62), 0.0, 0.0)

    files = []
    s.frame_start, s.frame_end = 1, frames
    s.buffer_resolution = 256
    s.sequence = False
    s.output_dir = os.path.join(ctx.out_dir, "snow_buffer")
    result = bpy.ops.envfx.snow_bake_buffer()
    assert result == {"FINISHED"}, result
    files += [os.path.join(s.output_dir, n) for n in sorted(os.listdir(s.output_dir))]

    scene.frame_start = 1
    for f in range(1, frames + 1):  # the trails are a simulation: step every frame
        scene.frame_set(f)
    ctx.only_visible(coll)
    files.append(ctx.render(cam, "snow"))
    return files
