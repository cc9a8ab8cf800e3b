"""A .blend opened in a fresh process with EnvFX enabled (as tests/blender/test_cli.py loads it), for what happens as
a file opens: ``open_in_fresh_process(path, ...)`` runs this file as a script, which prints the file's state as one
JSON line after a frame change: every object's modifiers (name, on in the viewport, on in renders), its evaluated
mesh's highest z, EnvFX's messages of damaged textures (operators.common.DAMAGED), the modifiers turned off for them
(TURNED_OFF) and the images' paths.

usage: <venv python> tests/blender/fresh_open.py CHECKOUT FILE.blend FRAME [vat OBJECT FOLDER | render]
(``vat OBJECT FOLDER``: bake OBJECT's VAT into FOLDER first, frames 1 to FRAME, before the frame change; ``render``:
render the frame with Eevee, 1 sample, 16 x 16, after it; the state then says "rendered")"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def open_in_fresh_process(path, frame, *args, timeout=300):
    """(exit code, the JSON state or None, stdout and stderr together) of this script on ``path``; a file that
    never finishes opening fails the caller at ``timeout`` seconds instead of hanging it."""
    home = tempfile.mkdtemp(prefix="envfx-home-")
    try:
        run = subprocess.run([sys.executable, os.path.abspath(__file__), ROOT, str(path), str(frame), *args],
                             capture_output=True, text=True, timeout=timeout, env=dict(os.environ, HOME=home))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith('{"modifiers"')]
    return run.returncode, json.loads(lines[-1]) if lines else None, run.stdout + run.stderr


def main(argv):
    import atexit
    import importlib

    import bpy  # (first: Blender as a module puts addon_utils on the path)

    import addon_utils
    import numpy as np

    root, path, frame = argv[0], argv[1], int(argv[2])
    repo = tempfile.mkdtemp(prefix="envfx-repo-")
    atexit.register(shutil.rmtree, repo, True)
    os.symlink(root, os.path.join(repo, "envfx"))
    preferences = bpy.context.preferences
    assert preferences is not None
    preferences.extensions.repos.new(name="EnvFX Dev", module="envfx_dev", custom_directory=repo, source="USER")
    addon_utils.enable("bl_ext.envfx_dev.envfx", default_set=True)
    package = "bl_ext.envfx_dev.envfx"
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = bpy.context.scene
    assert scene is not None
    if argv[3:4] == ["vat"]:
        ops = importlib.import_module(package + ".operators.vat")
        ops.bake_vat(scene, [bpy.data.objects[argv[4]]], argv[5], ops.VatOptions(1, frame, export_mesh=False))
    scene.frame_set(frame)
    rendered = False
    if argv[3:4] == ["render"]:
        sys.path.insert(0, ROOT)  # (run as a script: the checkout's tests package)
        from tests.blender import api

        # Eevee: Blender 4.2 hangs drawing a texture cut short (its Cycles render got through)
        api.set_engine(scene, api.eevee_engine())
        api.of(bpy.types.SceneEEVEE, scene.eevee).taa_render_samples = 1
        scene.render.resolution_x = scene.render.resolution_y = 16
        folder = tempfile.mkdtemp(prefix="envfx-render-")
        atexit.register(shutil.rmtree, folder, True)
        scene.render.filepath = os.path.join(folder, "frame.png")
        bpy.ops.render.render(write_still=True)
        rendered = os.path.isfile(scene.render.filepath)
    common = importlib.import_module(package + ".operators.common")
    depsgraph = bpy.context.evaluated_depsgraph_get()
    top = {}
    for obj in bpy.data.objects:
        mesh = obj.evaluated_get(depsgraph).data
        if isinstance(mesh, bpy.types.Mesh):
            co = np.empty(len(mesh.vertices) * 3, np.float32)
            mesh.vertices.foreach_get("co", co)
            top[obj.name] = float(co[2::3].max()) if len(co) else None
    print(json.dumps({
        "modifiers": {o.name: [[m.name, m.show_viewport, m.show_render] for m in o.modifiers]
                      for o in bpy.data.objects},
        "top": top,
        "damaged": common.DAMAGED,
        "turned_off": {name: sorted(mods) for name, mods in common.TURNED_OFF.items()},
        "muted": {m.name: [n.name for n in m.node_tree.nodes if n.mute] for m in bpy.data.materials if m.node_tree},
        "rendered": rendered,
        "images": {i.name: i.filepath for i in bpy.data.images}}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
