"""Run ``blender -c envfx ARGS...`` in a process of its own (for tests that signal or kill it): enables EnvFX from
this checkout the way the tests do and exits with the command's exit code.

usage: <venv python> tests/blender/cli_in_subprocess.py ARGS...
"""

import importlib
import os
import sys
import tempfile

import bpy  # noqa: F401  (first: Blender's own modules, addon_utils among them, are importable after it)
import addon_utils

import api  # tests/blender/api.py: this script's folder is the first entry of sys.path (python runs it as a file)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if __name__ == "__main__":
    repo_dir = tempfile.mkdtemp(prefix="envfx-sub-")
    os.symlink(ROOT, os.path.join(repo_dir, "envfx"))
    api.preferences().extensions.repos.new(name="EnvFX Sub", module="envfx_sub", custom_directory=repo_dir,
                                           source="USER")
    addon_utils.enable("bl_ext.envfx_sub.envfx", default_set=True)
    code = importlib.import_module("bl_ext.envfx_sub.envfx").cli.main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
