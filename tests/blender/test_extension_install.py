"""End to end, as a user: build the zip with Blender's builder, validate it, install it into a throw-away user
folder with bpy.ops.extensions.package_install_files, enable it, run the bend operator, check the result. The zip
is built from a copy of the checkout holding every developer-only file a checkout can have, which must stay out."""

import json
import os
import shutil
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


# Written into a checkout by the tools a developer runs here, besides what .gitignore lists: ruff (configured by
# ruff.toml) writes .ruff_cache/ where it runs, pytest .pytest_cache/, editors their settings, swap, autosave and
# backup files, a merge its .orig and .rej files.
TOOL_LEFTOVERS = (".ruff_cache/", ".mypy_cache/", ".idea/", ".vscode/", ".DS_Store", "tests/.ruff_cache/",
                  "core/.pytest_cache/", "core/__pycache__/", "operators/stray.pyc", "core/.cli.py.swp",
                  "core/.bend.py.swo", "core/bend.py~", "core/#bend.py#", "core/.#bend.py", "core/bend.py.orig",
                  "core/bend.py.rej")


def developer_leftovers() -> list:
    """Paths (a trailing / for a folder) of developer-only files: each .gitignore entry (the benchmarks' bench_out/,
    the demo's demo_out/, the build's dist/, the venvs, caches) and TOOL_LEFTOVERS."""
    out = []
    with open(os.path.join(ROOT, ".gitignore"), encoding="utf-8") as fh:
        for line in fh:
            line = line.strip().lstrip("/")
            if line and not line.startswith(("#", "!")):
                out.append(line.replace("*", "stray"))
    return out + list(TOOL_LEFTOVERS)


def checkout_with_leftovers(dest) -> set:
    """Copy the checkout's files (git's, or every file but .git when it is not a git checkout) to ``dest`` and add
    developer_leftovers() there, as in a developer's checkout; returns the copied files (relative, /)."""
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout:
        files = {f for f in listed.stdout.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))}
    else:
        files = {os.path.relpath(os.path.join(d, f), ROOT).replace(os.sep, "/")
                 for d, dirs, names in os.walk(ROOT) if ".git" not in d.split(os.sep) for f in names}
    for f in files:
        os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), os.path.join(dest, f))
    for path in developer_leftovers():
        target = os.path.join(dest, path, "leftover.txt") if path.endswith("/") else os.path.join(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as fh:
            fh.write("developer only\n")
    return files


def test_built_zip_installs_enables_and_bends(tmp_path):
    source, dist = tmp_path / "envfx", tmp_path / "dist"
    shipped = checkout_with_leftovers(str(source))
    build = subprocess.run([sys.executable, os.path.join(str(source), "tools", "build.py"), "--output-dir", str(dist)],
                           capture_output=True, text=True, check=True)
    zip_path = build.stdout.strip().splitlines()[-1]
    names = zipfile.ZipFile(zip_path).namelist()
    assert "blender_manifest.toml" in names and "core/bend.py" in names
    assert not any(n.startswith(("tests/", "benchmarks/", "tools/", ".ci/", "docs/", "site/")) for n in names), names
    assert "mkdocs.yml" not in names and "README.md" not in names
    # nothing but the checkout's own files: no developer leftover (paths_exclude_pattern in blender_manifest.toml)
    assert sorted(set(names) - shipped) == []
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
    assert result["features"] == ["bend", "wind", "snow", "gasgiant", "mips", "lightmap", "vat"]
    for op in ("bend_add", "wind_bake_data", "wind_add", "snow_generate", "snow_trails_add", "snow_bake_buffer",
               "gasgiant_bake", "mips_bake", "vat_bake"):
        assert op in result["operators"], op
