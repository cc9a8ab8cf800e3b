"""Demo part: a Jupiter-like gas giant baked from particles and curl noise, on a planet sphere in space."""

import math
import os


def build(ctx):
    bpy = ctx.bpy
    scene = ctx.scene
    coll = ctx.collection("Gas Giant")
    out = os.path.join(ctx.out_dir, "gasgiant")

    s = scene.envfx.gasgiant
    s.preset = "JUPITER"
    s.vortices = 8
    # small enough for the demo (well under a minute on two busy cores); ~2 particles per texel keeps it smooth
    s.particles = 1_000_000
    s.iterations = 300
    s.field_size = "256"
    s.cubemap_size = "512"
    s.equirect_width = "1024"
    s.velocity_factor = 1.5
    s.output_dir = out
    s.planet_name = "Demo Gas Giant"
    s.make_planet = True
    result = bpy.ops.envfx.gasgiant_bake()
    assert result == {"FINISHED"}, result
    planet = bpy.data.objects[s.planet_name]
    # a thin cloud deck over it: cloud mode (white with alpha), its own flow, on a slightly larger sphere
    s.cloud_mode = True
    s.particles = 400_000
    s.iterations = 150
    s.seed = 11
    s.noise_scale = 1.5
    s.cubemap_size = "256"  # ~1 particle per texel
    s.equirect_width = "512"
    s.blur_interval = 10
    s.blur = 0.8
    s.output_dir = out + "_clouds"
    s.planet_name = "Demo Gas Giant Clouds"
    result = bpy.ops.envfx.gasgiant_bake()
    assert result == {"FINISHED"}, result
    clouds = bpy.data.objects[s.planet_name]
    s.cloud_mode = False
    for obj, scale in ((planet, 3.0), (clouds, 3.05)):
        for c in obj.users_collection:
            c.objects.unlink(obj)
        coll.objects.link(obj)
        obj.location = (0.0, 400.0, 0.0)
        obj.scale = (scale, scale, scale)
        obj.rotation_euler = (math.radians(8), 0.0, math.radians(-30))

    sun_data = bpy.data.lights.new("Gas Giant Sun", "SUN")
    sun_data.energy = 4.0
    sun = bpy.data.objects.new("Gas Giant Sun", sun_data)
    sun.rotation_euler = (math.radians(80), 0.0, math.radians(-150))
    coll.objects.link(sun)

    cam_data = bpy.data.cameras.new("Gas Giant Camera")
    cam_data.lens = 50
    cam = bpy.data.objects.new("Gas Giant Camera", cam_data)
    coll.objects.link(cam)
    cam.location = (0.0, 400.0 - 18.0, 0.0)
    cam.rotation_euler = (math.radians(90), 0.0, 0.0)

    ctx.only_visible(coll)
    world = scene.world
    bg = world.node_tree.nodes.get("Background") if world and world.node_tree else None
    old = None
    if bg is not None:
        old = tuple(bg.inputs["Color"].default_value), bg.inputs["Strength"].default_value
        bg.inputs["Color"].default_value = (0.0, 0.0, 0.0, 1.0)  # space
        bg.inputs["Strength"].default_value = 0.0
    files = [ctx.render(cam, "gasgiant")]
    if bg is not None and old is not None:  # (old is set exactly when there is a background node)
        bg.inputs["Color"].default_value, bg.inputs["Strength"].default_value = old
    files += [os.path.join(out, f) for f in sorted(os.listdir(out))]
    files += [os.path.join(out + "_clouds", f) for f in sorted(os.listdir(out + "_clouds"))]
    return files
