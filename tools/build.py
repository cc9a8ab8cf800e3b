"""Build (and validate) the extension zip with Blender's own extension builder.

usage: python tools/build.py [--output-dir dist]   (run with a venv python that has bpy installed)
Prints the path of the zip. Importable: ``build(output_dir) -> path``.
"""

import argparse
import glob
import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def builder_script() -> str:
    import importlib.util

    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bpy is not installed in this Python: run through tools/venv.sh")
    pattern = os.path.join(spec.submodule_search_locations[0], "*", "scripts", "addons_core", "bl_pkg", "cli",
                           "blender_ext.py")
    found = sorted(glob.glob(pattern))
    if not found:
        raise SystemExit(f"Blender's extension builder not found ({pattern})")
    return found[-1]


def build(output_dir: str) -> str:
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(ROOT, "blender_manifest.toml"), "rb") as fh:
        m = tomllib.load(fh)
    out = os.path.join(os.path.abspath(output_dir), f"{m['id']}-{m['version']}.zip")
    if os.path.exists(out):
        os.remove(out)
    script = builder_script()
    subprocess.run([sys.executable, script, "build", "--source-dir", ROOT, "--output-filepath", out], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, script, "validate", out], check=True, stdout=subprocess.DEVNULL)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output-dir", default=os.path.join(ROOT, "dist"))
    print(build(parser.parse_args().output_dir))
