"""Every public function of the add-on's code (``core/``, ``bridge.py``, ``cli/``, ``operators/``) is typed: each
parameter (but a method's ``self``/``cls``) and the return carry an annotation, so pyright checks callers against
them (an unannotated parameter is ``Any`` to it, and nothing a caller passes is checked).

Public: a module-level function or a method of a module-level class whose name does not start with ``_``
(``__init__`` counts, without a return annotation). Functions nested in functions are not API."""

from __future__ import annotations

import ast
import os
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AREAS = ("core", "bridge.py", "cli", "operators")


def _files(area: str) -> list[str]:
    path = os.path.join(ROOT, area)
    if path.endswith(".py"):
        return [path]
    return sorted(os.path.join(d, f) for d, _dirs, names in os.walk(path) for f in names
                  if f.endswith(".py") and "__pycache__" not in d)


def untyped(source: str) -> list[tuple[int, str, list[str]]]:
    """(line, function, what lacks an annotation) for the public functions of ``source``."""
    found = []

    def check(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> None:
        a = fn.args
        params = a.posonlyargs + a.args + a.kwonlyargs
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
        if method and not static and params:
            params = params[1:]
        missing = [p.arg for p in params if p.annotation is None]
        missing += [v.arg for v in (a.vararg, a.kwarg) if v is not None and v.annotation is None]
        if fn.returns is None and fn.name != "__init__":
            missing.append("return")
        if missing:
            found.append((fn.lineno, fn.name, missing))

    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            check(node, False)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        not m.name.startswith("_") or m.name == "__init__"):
                    check(m, True)
    return found


def test_the_scan_finds_what_lacks_a_type() -> None:
    source = textwrap.dedent("""
        def typed(a: int, *rest: str, k: float = 1.0, **more: int) -> int: ...
        def no_return(a: int): ...
        def no_param(a, b: int) -> None: ...
        def _private(a): ...
        class Public:
            def __init__(self, a): ...
            def method(self, x: int) -> None: ...
            @classmethod
            def poll(cls, context) -> bool: ...
            @staticmethod
            def helper(v) -> None: ...
            def _hidden(self, y): ...
        class _Private:
            def method(self, z): ...
        def outer(a: int) -> None:
            def inner(b): ...
    """)
    assert untyped(source) == [(3, "no_return", ["return"]), (4, "no_param", ["a"]), (7, "__init__", ["a"]),
                               (10, "poll", ["context"]), (12, "helper", ["v"])]


def test_every_public_function_is_typed() -> None:
    lines = []
    for area in AREAS:
        for path in _files(area):
            with open(path, encoding="utf-8") as f:
                found = untyped(f.read())
            rel = os.path.relpath(path, ROOT)
            lines += [f"{rel}:{line} {name}: {', '.join(missing)}" for line, name, missing in found]
    assert not lines, f"{len(lines)} public functions lack annotations:\n" + "\n".join(lines)
