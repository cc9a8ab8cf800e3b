"""The bend shows up in an Eevee render (what artists and the demo see), on both Blender versions."""

import math

import bpy
import numpy as np

from tests.blender import api


def eevee_engine():
    return "BLENDER_EEVEE_NEXT" if bpy.app.version < (5, 0, 0) else "BLENDER_EEVEE"


def render_sky_fraction(path):
    scene = api.scene()
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(path)
    px = np.empty(img.size[0] * img.size[1] * 4, dtype=np.float32)
    api.pixels(img).foreach_get(px)
    bpy.data.images.remove(img)
    px = px.reshape(-1, 4)
    sky = (px[:, 2] > 0.5) & (px[:, 0] < 0.2)  # the pure blue background
    return sky.mean()


def test_bent_ground_drops_below_the_view_in_eevee(envfx, tmp_path):
    scene = api.scene()
    bpy.data.objects.remove(bpy.data.objects["Cube"])
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=400, size=1.0, location=(0, 100, 0))
    ground = api.active()
    ground.scale = (20, 200, 1)
    mat = bpy.data.materials.new("White")
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = True
    api.socket(api.node_tree(mat).nodes["Principled BSDF"].inputs["Base Color"]).default_value = (0.9, 0.9, 0.9, 1)
    api.mesh(ground).materials.append(mat)
    world = api.of(bpy.types.World, scene.world)
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        world.use_nodes = True
    api.socket(api.node_tree(world).nodes["Background"].inputs["Color"]).default_value = (0.0, 0.0, 1.0, 1.0)
    cam = bpy.data.objects["Camera"]
    cam.location = (0, -5, 2)
    cam.rotation_euler = (math.radians(80), 0, 0)
    scene.camera = cam
    api.set_engine(scene, eevee_engine())
    api.of(bpy.types.SceneEEVEE, scene.eevee).taa_render_samples = 1
    scene.render.resolution_x, scene.render.resolution_y = 96, 64
    scene.render.image_settings.file_format = "PNG"

    flat = render_sky_fraction(str(tmp_path / "flat.png"))
    for obj in scene.objects:
        obj.select_set(obj == ground)
    s = api.envfx(scene).bend
    s.strength, s.spread = 0.05, 2.0
    assert api.ops.bend_add() == {"FINISHED"}
    bent = render_sky_fraction(str(tmp_path / "bent.png"))
    assert 0.2 < flat < 0.7
    assert bent > flat + 0.1, (flat, bent)
