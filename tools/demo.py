"""Headless demo: every EnvFX effect that exists, applied to a built-in scene, rendered in Eevee.

Run through tools/demo.sh (it makes the virtual environment). Steps, as a user would do them:
1. build the extension zip with Blender's own builder and install it into a throw-away user folder;
2. build the demo scene: each feature's part (tools/demo_parts/<feature>.py) adds its own area, collection
   and camera to one file, using the add-on's operators;
3. render one Eevee still per part into demo_out/, write the bakes there, save demo_out/demo.blend.
"""

import argparse
import importlib
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

# demo parts in the order they are built; each module has build(ctx) -> list of files written
PARTS = ("bend", "wind", "snow", "gasgiant", "mips", "lightmap", "vat")


class DemoContext:
    def __init__(self, out_dir, samples, resolution):
        import bpy

        self.bpy = bpy
        self.out_dir = out_dir
        self.samples = samples
        self.resolution = resolution
        scene = bpy.context.scene
        assert scene is not None  # (optional in the API stubs; the demo's file has one)
        self.scene = scene

    def collection(self, name):
        bpy = self.bpy
        coll = bpy.data.collections.new(name)
        self.scene.collection.children.link(coll)
        return coll

    def only_visible(self, coll):
        """Show only ``coll`` (and the shared world) for a part's render."""
        for child in self.scene.collection.children:
            child.hide_render = child != coll

    def render(self, camera, name, frame=None):
        bpy = self.bpy
        scene = self.scene
        if frame is not None:
            scene.frame_set(frame)
        scene.camera = camera
        # Eevee's id: BLENDER_EEVEE_NEXT before 5.0 (tools/types.sh defines BLENDER_5 per stub set, so the type
        # check reads each branch against the version that runs it)
        BLENDER_5 = bpy.app.version >= (5, 0, 0)
        if BLENDER_5:
            scene.render.engine = "BLENDER_EEVEE"
        else:
            scene.render.engine = "BLENDER_EEVEE_NEXT"
        eevee = scene.eevee
        assert eevee is not None  # (optional in the API stubs; every scene has its Eevee settings)
        eevee.taa_render_samples = self.samples
        scene.render.resolution_x, scene.render.resolution_y = self.resolution
        scene.render.resolution_percentage = 100
        scene.render.image_settings.file_format = "PNG"
        path = os.path.join(self.out_dir, name + ".png")
        scene.render.filepath = path
        t0 = time.time()
        bpy.ops.render.render(write_still=True)
        print(f"demo: rendered {path} in {time.time() - t0:.1f} s", flush=True)
        return path


def side_by_side(paths, out_path):
    """Join same-sized PNG renders left to right into one PNG (for comparisons)."""
    import bpy
    import numpy as np

    images = [bpy.data.images.load(p) for p in paths]
    w, h = images[0].size
    arrays = []
    for img in images:
        px = np.empty(w * h * 4, dtype=np.float32)
        pixels = img.pixels
        assert isinstance(pixels, bpy.types.bpy_prop_array)  # (the API stubs type it as one float)
        pixels.foreach_get(px)
        arrays.append(px.reshape(h, w, 4))
        bpy.data.images.remove(img)
    joined = np.concatenate(arrays, axis=1)
    out = bpy.data.images.new("envfx_side_by_side", joined.shape[1], h, alpha=True)
    pixels = out.pixels
    assert isinstance(pixels, bpy.types.bpy_prop_array)  # (as above)
    pixels.foreach_set(joined.ravel())
    out.filepath_raw = out_path
    out.file_format = "PNG"
    out.save()
    bpy.data.images.remove(out)
    return out_path


def install_extension(zip_path):
    import bpy

    result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                                      enable_on_install=True)
    envfx_ops = bpy.ops.envfx  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time (by this install)
    if result != {"FINISHED"} or not hasattr(envfx_ops, "bend_add"):
        raise SystemExit(f"demo: installing {zip_path} failed")


def setup_world(scene):
    import bpy

    world = scene.world or bpy.data.worlds.new("World")
    scene.world = world
    if bpy.app.version < (5, 0, 0):  # always on (and deprecated) from 5.0
        world.use_nodes = True
    tree = world.node_tree
    assert tree is not None  # (optional in the API stubs; a world using nodes has its tree)
    bg = tree.nodes.get("Background")
    if bg is not None:
        color, strength = bg.inputs["Color"], bg.inputs["Strength"]
        assert isinstance(color, bpy.types.NodeSocketColor) and isinstance(strength, bpy.types.NodeSocketFloat)
        color.default_value = (0.55, 0.7, 0.95, 1.0)
        strength.default_value = 0.8
    sun_data = bpy.data.lights.new("Demo Sun", "SUN")
    assert isinstance(sun_data, bpy.types.SunLight)  # (the stubs type a new light as any Light)
    sun_data.energy = 3.0
    sun = bpy.data.objects.new("Demo Sun", sun_data)
    sun.rotation_euler = (0.7, 0.2, 0.6)
    scene.collection.objects.link(sun)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=os.path.join(ROOT, "demo_out"))
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=360)
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated subset of parts")
    args = parser.parse_args(argv)

    import bpy
    import build

    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        zip_path = build.build(tmp)
        print(f"demo: built {zip_path}", flush=True)
        install_extension(zip_path)

    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = bpy.context.scene
    assert scene is not None  # (optional in the API stubs; the empty file has one)
    scene.name = "EnvFX Demo"
    setup_world(scene)
    ctx = DemoContext(args.out, args.samples, (args.width, args.height))
    written = []
    for name in [p for p in args.parts.split(",") if p]:
        module = importlib.import_module(f"demo_parts.{name}")
        t0 = time.time()
        files = module.build(ctx)
        written.extend(files)
        print(f"demo: part {name} done in {time.time() - t0:.1f} s", flush=True)
    for child in scene.collection.children:
        child.hide_render = False
    blend = os.path.join(args.out, "demo.blend")
    bpy.ops.wm.save_as_mainfile(filepath=blend, check_existing=False)
    written.append(blend)
    print("demo: wrote\n  " + "\n  ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
