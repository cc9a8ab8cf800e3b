"""Real-Blender tests (bpy as a Python module).

The add-on is loaded the way Blender loads a development extension: a throw-away extension repository whose
folder holds a link named ``envfx`` to this checkout, enabled through ``addon_utils`` (so it has a real
preferences entry and is imported as ``bl_ext.<repo>.envfx``). Every test starts from a fresh factory file.
"""

import importlib
import importlib.util
import os
import shutil
import subprocess
import tempfile

import pytest

import bpy  # noqa: E402  (Blender as a Python module)
import addon_utils  # noqa: E402

from tests.blender import api

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPO_MODULE = "envfx_dev"
ADDON_MODULE = f"bl_ext.{REPO_MODULE}.envfx"

_repo_dir = tempfile.mkdtemp(prefix="envfx-repo-")
os.symlink(ROOT, os.path.join(_repo_dir, "envfx"))


def _ensure_repo():
    repos = api.preferences().extensions.repos
    for repo in repos:
        if repo.module == REPO_MODULE:
            return repo
    repo = repos.new(name="EnvFX Dev", module=REPO_MODULE, custom_directory=_repo_dir, source="USER")
    return repo


def enable_addon():
    _ensure_repo()
    addon_utils.enable(ADDON_MODULE, default_set=True, handle_error=_raise)  # pyright: ignore[reportArgumentType] -- the stubs type handle_error without its exception argument
    return importlib.import_module(ADDON_MODULE)


def disable_addon():
    addon_utils.disable(ADDON_MODULE, default_set=True, handle_error=_raise)  # pyright: ignore[reportArgumentType] -- as enable


def _raise(exc):
    raise exc


@pytest.fixture(scope="session")
def envfx():
    """The enabled add-on's package (``bl_ext.envfx_dev.envfx``)."""
    module = enable_addon()
    yield module
    if ADDON_MODULE in api.preferences().addons:
        disable_addon()
    shutil.rmtree(_repo_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def load_helper():
    """A function: a test helper module by its path under the repository (``"tests", "blender",
    "fbx_reader.py"``), loaded from its file (the test folders are not packages)."""
    def load(name, *parts):
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *parts))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load


@pytest.fixture(scope="session")
def corpus_asset(load_helper):
    """A function: the objects of a real-vegetation corpus asset by name (tools/fetch_assets.py, fetched once into
    the cache), imported as tests/blender/test_wind_assets.py imports them (OBJ, Y up, an unapplied centimetre
    scale, away from the origin); skips the test, saying why, when the asset could not be fetched."""
    fetch = load_helper("fetch_assets", "tools", "fetch_assets.py")
    index = fetch.fetch(fetch.cache_dir(), quiet=True)
    paths = {a["name"]: a["obj"] for a in index["assets"]}
    assets = load_helper("envfx_test_wind_assets", "tests", "blender", "test_wind_assets.py")

    def load(name):
        if name not in paths:
            pytest.skip(f"the corpus asset {name} could not be fetched: "
                        f"{index['skipped'].get(name) or index['skipped'] or 'not in the index'}")
        return assets._import(paths[name])
    return load


@pytest.fixture(scope="session")
def corpus_content(load_helper):
    """A function: the path of a real-content corpus file by name (the manifest's ``content``: leaf textures, a
    terrain, an actor, a level; tools/fetch_assets.py, fetched once into the cache); skips the test, saying why,
    when it could not be fetched."""
    fetch = load_helper("fetch_assets", "tools", "fetch_assets.py")
    index = fetch.fetch(fetch.cache_dir(), quiet=True)
    paths = {c["name"]: c["path"] for c in index.get("content", ())}

    def path(name):
        if name not in paths:
            pytest.skip(f"the corpus file {name} could not be fetched: "
                        f"{index['skipped'].get(name) or index['skipped'] or 'not in the index'}")
        return paths[name]
    return path


@pytest.fixture
def mods(envfx):
    """The wind's modules of the enabled add-on, by short name (the wind tests' shared handle)."""
    class M:
        core = importlib.import_module(envfx.__name__ + ".core.wind")
        shapes = importlib.import_module(envfx.__name__ + ".core.wind_shapes")
        ops = importlib.import_module(envfx.__name__ + ".operators.wind")
        nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.wind")
        bridge = importlib.import_module(envfx.__name__ + ".bridge")
        cli = importlib.import_module(envfx.__name__ + ".cli")
    return M


@pytest.fixture
def save_and_reopen(tmp_path):
    """A function: save the open file as ``tmp_path / name`` and open that file again, as a user's save and
    reload does (load handlers run, groups saved by the file are what the session gets)."""
    def reopen(name="reopened.blend"):
        path = str(tmp_path / name)
        bpy.ops.wm.save_as_mainfile(filepath=path)
        bpy.ops.wm.open_mainfile(filepath=path)
    return reopen


@pytest.fixture(autouse=True)
def fresh_file(envfx):
    bpy.ops.wm.read_homefile(app_template="", use_empty=False)
    yield


@pytest.fixture
def open_saved_by_blender_42(tmp_path):
    """A function: scene kind (see tests/blender/saved_by_42.py) -> opens a .blend in which Blender 4.2 LTS (the 4.2
    virtual environment's Python, made by tools/venv.sh if missing) built that scene with EnvFX and saved it.
    The tests that use it check the file in a newer Blender, so they are skipped on 4.2 itself."""
    if bpy.app.version < (5, 0, 0):
        pytest.skip("opens in Blender 5.0 a file saved by 4.2 LTS")

    def open_saved(kind):
        python = subprocess.run(["bash", os.path.join(ROOT, "tools", "venv.sh"), "4.2"], capture_output=True,
                                text=True, check=True).stdout.strip()
        path = str(tmp_path / f"{kind}-saved-by-4.2.blend")
        run = subprocess.run([python, os.path.join(ROOT, "tests", "blender", "saved_by_42.py"), kind, path],
                             env=dict(os.environ, HOME=str(tmp_path)), capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        bpy.ops.wm.open_mainfile(filepath=path)
        assert tuple(bpy.data.version[:2]) == (4, 2)
    return open_saved


@pytest.fixture
def addon_switch():
    """(enable, disable) functions for tests that unregister and register the add-on again."""
    return enable_addon, disable_addon


class RecordingLayout:
    """Stands in for a UILayout (there is no UI in background mode). draw() code runs against it; it records
    what is shown (property names, operator ids, "label:<text>") and fails on names that do not exist."""

    def __init__(self, log=None):
        self.log = [] if log is None else log
        self.use_property_split = self.use_property_decorate = False
        self.active = self.enabled = True
        self.alert = False
        self.scale_y = 1.0

    def _child(self, *args, **kwargs):
        return RecordingLayout(self.log)

    row = column = box = split = column_flow = grid_flow = _child

    def label(self, text="", **kwargs):
        self.log.append("label:" + text)

    def separator(self, **kwargs):
        pass

    def prop(self, data, name, **kwargs):
        assert data is not None, f"prop {name!r} drawn for None"
        assert name in data.bl_rna.properties, f"{type(data).__name__} has no property {name!r}"
        self.log.append(name)

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        self.prop(data, name)
        assert search_name in search_data.bl_rna.properties

    def template_ID(self, data, name, **kwargs):
        self.prop(data, name)

    def operator(self, idname, **kwargs):
        module, op = idname.split(".")
        assert hasattr(getattr(bpy.ops, module), op), f"no operator {idname}"
        self.log.append(idname)
        return type("OperatorProperties", (), {})()

    def operator_menu_enum(self, idname, prop, **kwargs):
        self.operator(idname)
        self.log.append(prop)


@pytest.fixture
def recording_layout():
    """The RecordingLayout class (a UILayout stand-in for testing panels' draw())."""
    return RecordingLayout


def _as_saved_by_old_envfx(tree, scene):
    """Make ``tree`` (a live effect's group of ``scene``) look as EnvFX saved it before scenes pointed at their
    groups: no kind mark, no pointer from the scene, and drivers that read ``scene`` by pointer."""
    kind = tree.pop("envfx_kind")
    del scene[f"envfx_group_{kind}"]
    for fcurve in tree.animation_data.drivers:
        var = fcurve.driver.variables[0]
        if var.type == "CONTEXT_PROP":
            path = var.targets[0].data_path
            var.type = "SINGLE_PROP"
            var.targets[0].id_type = "SCENE"
            var.targets[0].id = scene
            var.targets[0].data_path = path


@pytest.fixture
def as_saved_by_old_envfx():
    """A function (group, scene) that turns a live effect's group into one saved by an older EnvFX."""
    return _as_saved_by_old_envfx


def _scene_depsgraph(scene):
    """The evaluated dependency graph of ``scene`` (any scene of the file, not only the window's), up to date."""
    with bpy.context.temp_override(scene=scene, view_layer=scene.view_layers[0]):
        depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    return depsgraph


@pytest.fixture
def scene_depsgraph():
    """A function scene -> that scene's evaluated dependency graph, up to date."""
    return _scene_depsgraph



_SESSION = {}


def pytest_sessionfinish(session, exitstatus):
    _SESSION["status"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Blender 4.2 as a Python module crashes as the process exits after a glTF export (a bare
    ``bpy.ops.export_scene.gltf`` and exit: segmentation fault, exit code 139; 5.0 exits cleanly), and the VAT
    tests export glTF. On 4.2 the run ends here with pytest's own status, after every report is written."""
    if bpy.app.version < (5, 0, 0) and "status" in _SESSION:
        import sys  # (only here: this hook is its only user)

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_SESSION["status"])
