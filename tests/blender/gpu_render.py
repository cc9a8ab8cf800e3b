"""What the tests of effects drawn on the GPU (Bend on GPU, Wind on GPU) share: a material with nodes, a lit stage,
a one-sample render read back as pixels, the share of pixels two renders differ by, a node tree's links."""

import bpy
import numpy as np

from tests.blender import api


def material(name, colour=(0.8, 0.8, 0.8, 1.0)):
    """A Principled material of ``colour`` with nodes (Blender 4.2 makes one without)."""
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        mat.use_nodes = True
    api.socket(api.node_tree(mat).nodes["Principled BSDF"].inputs["Base Color"]).default_value = colour
    return mat


def displaced_material(name, colour=(0.2, 0.6, 0.2, 1.0)):
    """A material with a displacement of its own (a faint noise, Displacement and Bump), as a user's may have: an
    effect on the GPU adds to it and gives it back exactly."""
    mat = material(name, colour)
    nt = api.node_tree(mat)
    noise = nt.nodes.new("ShaderNodeTexNoise")
    disp = nt.nodes.new("ShaderNodeDisplacement")
    api.socket(disp.inputs["Scale"]).default_value = 0.001
    nt.links.new(noise.outputs["Fac"], disp.inputs["Height"])
    nt.links.new(disp.outputs[0], nt.nodes["Material Output"].inputs["Displacement"])
    mat.displacement_method = "BOTH"
    return mat


def material_state(mat) -> tuple:
    """What an effect on the GPU must give back: ``mat``'s node names, links, displacement method and (5.0) maximum
    vertex displacement."""
    nt = api.node_tree(mat)
    return (sorted(n.name for n in nt.nodes), links(nt), mat.displacement_method,
            getattr(mat, "max_vertex_displacement", None))


def stage(engine, width, height, camera_at, camera_turn):
    """The current scene emptied, rendering with ``engine`` ("EEVEE" or "CYCLES") at one sample, ``width`` x
    ``height``, from a camera at ``camera_at`` turned ``camera_turn`` (Euler), lit by a sun."""
    scene = api.scene()
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    api.set_engine(scene, api.eevee_engine() if engine == "EEVEE" else "CYCLES")
    api.of(bpy.types.SceneEEVEE, scene.eevee).taa_render_samples = 1
    scene.cycles.samples = 1  # pyright: ignore[reportOptionalMemberAccess] -- Cycles' settings, registered by it
    scene.render.resolution_x, scene.render.resolution_y = width, height
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    scene.camera = cam
    cam.location, cam.rotation_euler = camera_at, camera_turn
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    scene.collection.objects.link(sun)
    sun.rotation_euler = (0.5, 0.2, 0.0)
    return scene


def render(path):
    """The scene rendered into ``path`` and read back: (height, width, 3) float32."""
    scene = api.scene()
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(str(path))
    width, height = img.size
    px = np.empty(width * height * 4, dtype=np.float32)
    api.pixels(img).foreach_get(px)
    bpy.data.images.remove(img)
    return px.reshape(height, width, 4)[:, :, :3]


def differ(a, b):
    """The share of pixels that differ by more than 0.05 in a channel."""
    return float(np.mean(np.abs(a - b).max(axis=2) > 0.05))


def links(tree) -> list:
    """(from node, to node) of every link of ``tree``, sorted."""
    return sorted((api.of(bpy.types.Node, lk.from_node).name, api.of(bpy.types.Node, lk.to_node).name)
                  for lk in tree.links)


def appended_into_a_new_file(folder, names):
    """The open file saved into ``folder``, an empty file opened and the objects ``names`` appended from the saved one
    into its scene, which is returned (their materials and the effect's group come along)."""
    path = str(folder / "library.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    for obj in api.load_objects(path, names, link=False):
        scene.collection.objects.link(obj)
    return scene


def drivers_valid(tree) -> bool:
    """Whether ``tree`` has drivers and every one of them is valid (none failed to read what it reads)."""
    return tree is not None and tree.animation_data is not None and all(
        api.of(bpy.types.Driver, fc.driver).is_valid for fc in tree.animation_data.drivers)
