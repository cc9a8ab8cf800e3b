"""The add-on's layers, read from its source: every import goes down the layers, never up or in a circle.

    core -> bridge, progress -> shader_nodes -> operators -> props / panels / handlers / cli -> __init__

(``core`` is pure numpy; ``bridge`` moves data between Blender and numpy; ``progress`` is the one job model the
operators and the command line share.) A module may import modules of its own layer's package (operators/bend
imports operators/common), and only layers below it otherwise. An import inside a function is allowed only
where a comment on its line or the line above says why (a heavy module loaded on first use).
"""

from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# top-level name (package or module of the add-on) -> rank; a module imports only lower ranks, or its own package
LAYERS = {
    "core": 0,
    "bridge": 1,
    "progress": 1,
    "shader_nodes": 2,
    "operators": 3,
    "props": 4,
    "panels": 4,
    "handlers": 4,
    "cli": 4,
    "__init__": 5,
}
NOT_ADDON = {"tests", "tools", "benchmarks", "docs", ".git", ".venvs", "site", "__pycache__"}
BLENDER_MODULES = {"bpy", "mathutils", "bmesh", "gpu", "bl_math", "addon_utils", "idprop"}


def addon_modules() -> list[str]:
    """Repository-relative paths of the add-on's Python files."""
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        dirnames[:] = [d for d in dirnames if d not in NOT_ADDON and not d.startswith(".")]
        found += [os.path.normpath(os.path.join(rel, f)) for f in filenames if f.endswith(".py")]
    return sorted(found)


def layer_of(rel_path: str) -> str:
    parts = rel_path.split(os.sep)
    return parts[0] if len(parts) > 1 else os.path.splitext(parts[0])[0]


def package_parts(rel_path: str) -> list[str]:
    """The package a module sits in, as path parts from the root (``operators/snow/bake.py`` -> operators, snow)."""
    parts = rel_path.split(os.sep)[:-1]
    return parts


def imported_layers(rel_path: str, node: ast.ImportFrom) -> list[str]:
    """The add-on layers a relative ``from ... import ...`` reaches (absolute imports are not the add-on's)."""
    if node.level == 0:
        return []
    base = package_parts(rel_path)
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)] if node.level - 1 <= len(base) else None
    if base is None:
        return ["(above the add-on)"]
    target = base + (node.module.split(".") if node.module else [])
    if target:
        return [target[0]]
    # ``from . import a, b`` at the root: each name is a layer, or a name the root package defines
    return [alias.name if alias.name in LAYERS else "__init__" for alias in node.names]


def _imports(tree: ast.AST):
    """(import node, enclosing function or None) for every import in a module."""
    out = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, func))
            visit(child, inner)

    visit(tree, None)
    return out


def _source(rel_path: str) -> str:
    with open(os.path.join(ROOT, rel_path), encoding="utf-8") as fh:
        return fh.read()


def upward_imports(rel_path: str, source: str) -> list[str]:
    layer = layer_of(rel_path)
    rank = LAYERS[layer]
    bad = []
    for node, _func in _imports(ast.parse(source)):
        if isinstance(node, ast.Import):
            if layer == "core" and any(a.name.split(".")[0] in BLENDER_MODULES for a in node.names):
                bad.append(f"{rel_path}:{node.lineno} core imports Blender ({', '.join(a.name for a in node.names)})")
            continue
        if layer == "core" and node.level == 0 and (node.module or "").split(".")[0] in BLENDER_MODULES:
            bad.append(f"{rel_path}:{node.lineno} core imports Blender ({node.module})")
        for target in imported_layers(rel_path, node):
            if target == layer:
                continue
            if target not in LAYERS:
                bad.append(f"{rel_path}:{node.lineno} imports {target!r}, which is in no layer")
            elif LAYERS[target] >= rank:
                bad.append(f"{rel_path}:{node.lineno} {layer} imports {target} (not below it)")
    return bad


def unexplained_local_imports(rel_path: str, source: str) -> list[str]:
    lines = source.splitlines()
    bad = []
    for node, func in _imports(ast.parse(source)):
        if func is None:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        here = lines[node.lineno - 1]
        above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        if "#" in here or above.startswith("#"):
            continue
        bad.append(f"{rel_path}:{node.lineno} import inside {func.name}() without a comment saying why")
    return bad


def _module_file(parts: list[str]) -> str | None:
    """The repository-relative file of the add-on module ``parts`` (a module file or a package's __init__)."""
    base = os.path.join(*parts) if parts else ""
    for rel in (base + ".py", os.path.join(base, "__init__.py")):
        if rel != ".py" and os.path.isfile(os.path.join(ROOT, rel)):
            return os.path.normpath(rel)
    return None


def imported_files(rel_path: str, source: str) -> set[str]:
    """The add-on files a module imports (relative imports, top level and inside functions)."""
    parts = rel_path.split(os.sep)
    package = parts[:-1] if parts[-1] != "__init__.py" else parts[:-1]
    out = set()
    for node, _func in _imports(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package[: len(package) - (node.level - 1)] if node.level > 1 else list(package)
        target = base + (node.module.split(".") if node.module else [])
        for alias in node.names:
            sub = _module_file(target + [alias.name])  # ``from .pkg import module``
            found = sub or _module_file(target)  # ``from .module import name``
            if found and found != rel_path:
                out.add(found)
    return out


def import_circles(graph: dict | None = None) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a circle (strongly connected components)."""
    if graph is None:
        graph = {p: imported_files(p, _source(p)) for p in addon_modules()}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in graph:
        if v not in index:
            connect(v)
    return circles


def test_no_import_circles():
    """A package importing its own modules in its __init__ and a module importing its package's __init__ for a
    shared name would be a circle too: shared names live in a module of their own."""
    assert import_circles() == []


def test_the_circle_check_finds_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert imported_files("operators/bend.py", "from .. import bridge\nfrom .common import x\n") == {
        "bridge.py", os.path.join("operators", "common.py")}


def test_the_addon_has_every_layer():
    layers = {layer_of(p) for p in addon_modules()}
    assert {"core", "bridge", "shader_nodes", "operators", "props", "panels", "handlers", "cli", "__init__"} <= layers
    assert layers <= set(LAYERS), f"modules outside every layer: {sorted(layers - set(LAYERS))}"


def test_imports_only_go_down_the_layers():
    bad = [b for p in addon_modules() for b in upward_imports(p, _source(p))]
    assert not bad, "imports that go up or sideways:\n" + "\n".join(bad)


def test_imports_inside_functions_say_why():
    bad = [b for p in addon_modules() for b in unexplained_local_imports(p, _source(p))]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path, source, expected", [
    ("core/x.py", "import bpy\n", "core imports Blender"),
    ("core/x.py", "from mathutils import Vector\n", "core imports Blender"),
    ("bridge.py", "from .shader_nodes import bend\n", "bridge imports shader_nodes"),
    ("operators/bend.py", "from ..props import PATH_OPTIONS\n", "operators imports props"),
    ("operators/snow/bake.py", "from ...cli import main\n", "operators imports cli"),
    ("shader_nodes/snow.py", "def f():\n    from ..operators import snow  # x\n", "shader_nodes imports operators"),
    ("cli/bend.py", "from .. import FEATURES\n", "cli imports __init__"),
    ("props/bend.py", "from .. import panels\n", "props imports panels"),
])
def test_the_check_finds_an_upward_import(path, source, expected):
    assert any(expected in b for b in upward_imports(path, source))


@pytest.mark.parametrize("path, source", [
    ("operators/snow/bake.py", "from ...core import snow\nfrom .. import common\nfrom . import trails\n"),
    ("props/bend.py", "from ..operators.common import PATH_OPTIONS\n"),
    ("__init__.py", "from . import cli, handlers, operators, panels, props\n"),
    ("core/gasgiant/field.py", "from ..png import write_png\nimport numpy as np\n"),
])
def test_the_check_lets_downward_imports_pass(path, source):
    assert upward_imports(path, source) == []


def test_a_local_import_needs_a_comment():
    src = "def f():\n    import json\n\ndef g():\n    import json  # heavy: first use only\n"
    assert len(unexplained_local_imports("core/x.py", src)) == 1
    src2 = "def f():\n    # loaded on first use: heavy\n    import json\n"
    assert unexplained_local_imports("core/x.py", src2) == []
