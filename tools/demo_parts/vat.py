"""Demo part: vertex animation textures. A flag (a grid waving through two driven shape keys) is baked over a loop of
48 frames with the operator into demo_out/vat/ (16-bit PNG textures, the JSON file and the proxy as .glb for
Godot); demo.blend holds the flag beside its proxy Flag_VAT, which plays the bake."""

import math
import os


def build(ctx):
    bpy = ctx.bpy
    coll = ctx.collection("VAT")
    mesh = bpy.data.meshes.new("Flag")
    flag = bpy.data.objects.new("Flag", mesh)
    coll.objects.link(flag)
    size, n = 2.0, 24
    verts = [(x * size / n, 0.0, 1.0 + z * size / n) for z in range(n + 1) for x in range(n + 1)]
    faces = [(z * (n + 1) + x, z * (n + 1) + x + 1, (z + 1) * (n + 1) + x + 1, (z + 1) * (n + 1) + x)
             for z in range(n) for x in range(n)]
    mesh.from_pydata(verts, [], faces)
    flag.location = (60.0, 0.0, 0.0)
    # a travelling wave as two shape keys (sine and cosine of x) mixed by drivers of the frame: exactly periodic,
    # so the 48-frame loop closes
    flag.shape_key_add(name="Basis")
    for name, phase in (("Sin", 0.0), ("Cos", math.pi / 2)):
        key = flag.shape_key_add(name=name, from_mix=False)
        key.slider_min, key.slider_max = -1.0, 1.0
        for v, (x, y, z) in zip(key.data, verts):
            v.co = (x, y + 0.2 * math.sin(math.pi * x + phase) * x / size, z)
        fcurve = key.driver_add("value")
        fcurve.driver.type = "SCRIPTED"
        fcurve.driver.expression = f"{'cos' if phase == 0 else 'sin'}(frame * 2 * pi / 48)"
    view_layer = bpy.context.view_layer
    view_layer.update()  # the new object joins the view layer's objects
    for obj in view_layer.objects:
        obj.select_set(obj == flag)
    view_layer.objects.active = flag
    s = ctx.scene.envfx.vat
    s.frame_start = 1
    s.loop = True
    s.loop_frames = 48
    s.encoding = "PNG16"
    s.engine = "GODOT"
    s.output_dir = os.path.join(ctx.out_dir, "vat")
    result = bpy.ops.envfx.vat_bake()
    assert result == {"FINISHED"}, result
    bpy.data.objects["Flag_VAT"].location.x += 3.0
    out_dir = s.output_dir
    return sorted(os.path.join(out_dir, f) for f in os.listdir(out_dir))
