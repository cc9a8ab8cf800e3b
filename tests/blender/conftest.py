"""Real-Blender tests (bpy as a Python module).

The add-on is loaded the way Blender loads a development extension: a throw-away extension repository whose
folder holds a link named ``envfx`` to this checkout, enabled through ``addon_utils`` (so it has a real
preferences entry and is imported as ``bl_ext.<repo>.envfx``). Every test starts from a fresh factory file.
"""

import importlib
import os
import shutil
import tempfile

import pytest

import bpy  # noqa: E402  (Blender as a Python module)
import addon_utils  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPO_MODULE = "envfx_dev"
ADDON_MODULE = f"bl_ext.{REPO_MODULE}.envfx"

_repo_dir = tempfile.mkdtemp(prefix="envfx-repo-")
os.symlink(ROOT, os.path.join(_repo_dir, "envfx"))


def _ensure_repo():
    repos = bpy.context.preferences.extensions.repos
    for repo in repos:
        if repo.module == REPO_MODULE:
            return repo
    repo = repos.new(name="EnvFX Dev", module=REPO_MODULE, custom_directory=_repo_dir, source="USER")
    return repo


def enable_addon():
    _ensure_repo()
    addon_utils.enable(ADDON_MODULE, default_set=True, handle_error=_raise)
    return importlib.import_module(ADDON_MODULE)


def disable_addon():
    addon_utils.disable(ADDON_MODULE, default_set=True, handle_error=_raise)


def _raise(exc):
    raise exc


@pytest.fixture(scope="session")
def envfx():
    """The enabled add-on's package (``bl_ext.envfx_dev.envfx``)."""
    module = enable_addon()
    yield module
    if ADDON_MODULE in bpy.context.preferences.addons:
        disable_addon()
    shutil.rmtree(_repo_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def fresh_file(envfx):
    bpy.ops.wm.read_homefile(app_template="", use_empty=False)
    yield


@pytest.fixture
def addon_switch():
    """(enable, disable) functions for tests that unregister and register the add-on again."""
    return enable_addon, disable_addon
