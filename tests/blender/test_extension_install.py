"""End to end, as a user: build the zip with Blender's builder, validate it, install it into a throw-away user
folder with bpy.ops.extensions.package_install_files, enable it, run the bend operator, check the result."""

import json
import os
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = r"""
import json, sys
import bpy
import numpy as np
zip_path = sys.argv[1]
result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default", enable_on_install=True)
import bl_ext.user_default.envfx as envfx
bpy.ops.wm.read_homefile(app_template="")
cube = bpy.data.objects["Cube"]
cube.location = (0.0, 15.0, 0.0)
pivot = bpy.data.objects.new("Player", None)
bpy.context.scene.collection.objects.link(pivot)
s = bpy.context.scene.envfx.bend
s.pivot = pivot
s.strength = 0.05
bend = bpy.ops.envfx.bend_add()
dg = bpy.context.evaluated_depsgraph_get()
got = envfx.bridge.evaluated_positions(cube, dg)
want = envfx.core.bend.forward_local(envfx.bridge.get_positions(cube.data),
                                     envfx.bridge.matrix_to_numpy(cube.matrix_world),
                                     envfx.shader_nodes.bend.params_from_scene(bpy.context.scene))
ops = sorted(name for name in dir(bpy.ops.envfx) if not name.startswith("_"))
print("RESULT " + json.dumps({
    "features": list(envfx.FEATURES), "operators": ops,
    "install": sorted(result), "bend": sorted(bend), "file": envfx.__file__,
    "enabled": "bl_ext.user_default.envfx" in bpy.context.preferences.addons,
    "error": float(np.abs(got - want).max()), "moved": float(np.abs(got - envfx.bridge.get_positions(cube.data)).max()),
}))
"""


def test_built_zip_installs_enables_and_bends(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "build.py"), "--output-dir", str(dist)],
                           capture_output=True, text=True, check=True)
    zip_path = build.stdout.strip().splitlines()[-1]
    names = zipfile.ZipFile(zip_path).namelist()
    assert "blender_manifest.toml" in names and "core/bend.py" in names
    assert not any(n.startswith(("tests/", "benchmarks/", "tools/", ".ci/", "docs/")) for n in names), names
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    env.pop("BLENDER_USER_RESOURCES", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, zip_path], capture_output=True, text=True, env=env,
                          cwd=str(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    assert result["install"] == ["FINISHED"] and result["bend"] == ["FINISHED"] and result["enabled"]
    assert result["file"].startswith(str(home))  # the installed copy, not this checkout
    assert result["error"] < 1e-4 and result["moved"] > 1.0
    # every feature made it into the zip and registered its operators
    assert result["features"] == ["bend", "wind", "snow", "gasgiant", "mips"]
    for op in ("bend_add", "wind_bake_data", "wind_add", "snow_generate", "snow_trails_add", "snow_bake_buffer",
               "gasgiant_bake", "mips_bake"):
        assert op in result["operators"], op
