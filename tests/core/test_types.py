"""The static type check (tools/types.sh: pyright against fake-bpy-module 4.2 and 5.0) catches what it is there for:
a type error in core/, and a call to an API that Blender 4.2 lacks outside a ``BLENDER_5`` branch. Checked on
snippets written to a temporary folder, with the repository's settings (pyrightconfig.json, through tools/types.sh).
Skips when tools/types.sh has not installed the checker and the stubs yet (tools/test.sh runs it before the tests)."""

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENVS = os.environ.get("ENVFX_VENV_DIR") or os.path.join(ROOT, ".venvs")

SNIPPETS = {
    # a deliberate type error in core code: a text where make_leaf_card takes a number of pixels
    "core_error.py": 'from core import mips\n\ncard = mips.make_leaf_card(height="tall")\n',
    # the compositor's node group is a Blender 5.0 API (Scene.compositing_node_group), used unguarded
    "api_unguarded.py": ("import bpy\n\n\ndef compositor(scene: bpy.types.Scene):\n"
                         "    return scene.compositing_node_group\n"),
    # the same behind the version branch the checker understands (BLENDER_5 is defined per stub set)
    "api_branched.py": ("import bpy\n\nBLENDER_5 = bpy.app.version >= (5, 0, 0)\n\n\n"
                        "def compositor(scene: bpy.types.Scene):\n    if BLENDER_5:\n"
                        "        return scene.compositing_node_group\n    return scene.node_tree\n"),
}


def _installed(version):
    def stamped(folder):
        return os.path.isdir(folder) and any(n.startswith(".envfx-") for n in os.listdir(folder))

    return stamped(os.path.join(VENVS, f"stubs-{version}")) and stamped(os.path.join(VENVS, "pyright"))


def _check(version, tmp_path):
    if not _installed(version):
        pytest.skip(f"pyright and fake-bpy-module-{version} are not installed in {VENVS}: run tools/types.sh {version}")
    files = []
    for name, text in SNIPPETS.items():
        path = tmp_path / name
        path.write_text(text)
        files.append(str(path))
    run = subprocess.run(["bash", os.path.join(ROOT, "tools", "types.sh"), version, ""] + files,
                         capture_output=True, text=True, timeout=600)
    errors = {}
    for line in run.stdout.splitlines():
        m = re.match(r"\s*(\S+?\.py):\d+:\d+ - error", line)
        if m:
            errors.setdefault(os.path.basename(m.group(1)), []).append(line)
    return run, errors


def test_types_42_fail_on_core_error_and_unguarded_50_api(tmp_path):
    run, errors = _check("4.2", tmp_path)
    assert run.returncode != 0, run.stdout
    assert "types-4.2: 2 errors" in run.stdout, run.stdout
    assert len(errors.get("core_error.py", [])) == 1 and "make_leaf_card" in errors["core_error.py"][0] + run.stdout
    assert len(errors.get("api_unguarded.py", [])) == 1
    assert "compositing_node_group" in errors["api_unguarded.py"][0]
    assert "api_branched.py" not in errors, run.stdout


def test_types_50_fail_on_core_error_only(tmp_path):
    run, errors = _check("5.0", tmp_path)
    assert run.returncode != 0, run.stdout
    assert "types-5.0: 1 errors" in run.stdout, run.stdout
    assert list(errors) == ["core_error.py"], run.stdout


def test_pyrightconfig_parses_and_includes_files():
    """pyright reads a pyrightconfig.json it cannot parse as no config, checks nothing and reports 0 errors (a
    comment that swallowed the line of "include" did that): the file must be JSON once its // comments are gone,
    with a non-empty "include" whose entries exist."""
    import json

    text = open(os.path.join(ROOT, "pyrightconfig.json"), encoding="utf-8").read()
    # drop // comments outside strings (the config's strings hold no quote or //)
    stripped = "\n".join(re.sub(r'^((?:[^"/]|"[^"]*")*)//.*$', r"\1", line) for line in text.splitlines())
    config = json.loads(stripped)
    include = config.get("include")
    assert isinstance(include, list) and include, "pyrightconfig.json: \"include\" is missing or empty"
    missing = [p for p in include if not os.path.exists(os.path.join(ROOT, p))]
    assert not missing, f"pyrightconfig.json includes paths that do not exist: {missing}"
