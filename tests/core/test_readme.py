"""The manual (README.md and the pages of docs/) tells the truth about the code (the parts that need no Blender): the
set-up commands, the paths and scripts it names, the Python API of core/, the files and JSON keys the bakes write,
the numbers it quotes; its links resolve, the README stays a front door, and the pages build into a website.

The manual is read mechanically (tests/readme_doc.py), so renaming a documented thing without its page fails here.
tests/blender/test_readme.py checks the operators, settings and command line in Blender.
"""

import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from core import bend as core_bend
from core import bend_engines, gasgiant, mips, snow
from tests import readme_doc as doc  # tests/conftest.py puts the repository root on sys.path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

README = doc.text()
DOCS = doc.all_text()  # the README and every page of docs/
PROSE = doc.prose(DOCS)
SPANS = doc.backticks(PROSE)
README_MAX_LINES = 250


def read(*parts) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as fh:
        return fh.read()


def flat(text: str) -> str:
    """Prose with its line breaks and runs of spaces made single spaces (sentences wrap anywhere)."""
    return re.sub(r"\s+", " ", text)


def quoted(pattern: str, where: str = PROSE) -> re.Match:
    """The manual's prose must say this (a regex over the prose with line breaks made spaces)."""
    m = re.search(pattern, flat(where))
    assert m, f"the manual no longer says {pattern!r}: update the page and this test together"
    return m


# --- set-up: the two commands are what tools/ and CI run ---------------------------------------------------

def setup_commands() -> list:
    block = next(b for b in doc.blocks(README) if b.section.startswith("Set-up"))
    return [line.split("#")[0].strip() for line in block.body.splitlines() if line.split("#")[0].strip()]


def test_setup_commands_are_the_scripts_ci_runs():
    commands = setup_commands()
    assert commands == ["bash tools/demo.sh", "bash tools/test.sh"]
    ci = read(".ci", "run")
    for command in commands:
        assert os.path.isfile(os.path.join(ROOT, command.split()[1]))
        assert re.search(rf"^\s*(if ! )?{re.escape(command)}\b", ci, re.M), f".ci/run does not run {command}"
    quoted(r"CI \(`\.ci/run`, on a clean clone\) runs both")


def test_test_command_runs_what_the_readme_says():
    """tests/core, and tests/blender on 5.0.1 and 4.2 (5.0 beside the types, core, then 4.2), pytest arguments passed
    on, one summary line last."""
    test_sh, venv_sh = read("tools", "test.sh"), read("tools", "venv.sh")
    quoted(r"bash tools/test.sh # the tests: tests/core, and tests/blender on Blender 5\.0\.1 and 4\.2 LTS", README)
    runs = re.findall(r'^\(? *run (\S+) "\$(\w+)" (\S+) "\$@"', test_sh, re.M)
    assert runs == [("core", "PY50", "tests/core"), ("blender-4.2", "PY42", "tests/blender"),
                    ("blender-5.0", "PY50", "tests/blender")]
    # the corpus fetched before any run; types, core and 4.2 in the background, one after the other
    assert test_sh.index("tools/fetch_assets.py") < test_sh.index("\n(\n")
    chain = test_sh[test_sh.index("\n(\n"):test_sh.index(") &\n")]
    assert re.search(r'for v in 4\.2 5\.0; do\n +"\$ROOT/tools/types\.sh" "\$v"', chain)
    assert chain.index("types.sh") < chain.index("run core") < chain.index("run blender-4.2")
    assert "run blender-5.0" not in chain
    assert re.search(r"^wait \$other \|\| status=1$", test_sh, re.M)
    quoted(r"The 5\.0 run goes beside the others \(the static types, core, then 4\.2\)",
           read("docs", "CONTRIBUTING.md"))
    assert 'BPY="bpy==5.0.1"' in venv_sh and 'BPY="bpy==4.2.*"' in venv_sh
    assert "(3, 11)" in venv_sh and ":-$ROOT/.venvs}" in venv_sh
    quoted(r"virtual environments \(Python 3\.11 and `pip install bpy`, Blender as a Python module\) under `\.venvs/`")
    # the closing line: the README quotes its form
    form = quoted(r"ends with one `([^`]+)` line over all runs").group(1)
    printed = re.findall(r'print\(f"(\{p\} passed[^"]*)"\)', test_sh)
    assert printed and re.sub(r"\{\w+\}", "N", printed[-1]) == form
    quoted(r"`tools/test\.sh` accepts pytest arguments \(`bash tools/test\.sh -k bend`\)")


def test_demo_command_writes_where_the_readme_says():
    demo_sh, demo_py = read("tools", "demo.sh"), read("tools", "demo.py")
    assert 'tools/venv.sh 5.0' in demo_sh and "tools/demo.py" in demo_sh
    assert 'default=os.path.join(ROOT, "demo_out")' in demo_py
    assert 'os.path.join(args.out, "demo.blend")' in demo_py
    quoted(r"writes the bakes into `demo_out/`, and saves `demo_out/demo\.blend`")
    # every feature the extension has is a demo part
    init = read("core", "features.py")
    found_features, found_parts = re.search(r"FEATURES = \(([^)]*)\)", init), re.search(r"PARTS = \(([^)]*)\)", demo_py)
    assert found_features and found_parts, "core/features.py has no FEATURES = (...) or tools/demo.py no PARTS = (...)"
    features, parts = found_features.group(1), found_parts.group(1)
    assert features == parts
    for part in re.findall(r'"(\w+)"', parts):
        assert os.path.isfile(os.path.join(ROOT, "tools", "demo_parts", f"{part}.py"))


def test_install_zip_name_and_version():
    manifest = tomllib.loads(read("blender_manifest.toml"))
    build = read("tools", "build.py")
    assert "f\"{m['id']}-{m['version']}.zip\"" in build and 'os.path.join(ROOT, "dist")' in build
    quoted(r"`\$\(tools/venv\.sh 5\.0\) tools/build\.py` writes `dist/envfx-<version>\.zip`")
    assert manifest["id"] == "envfx"
    shown = re.findall(r"dist/envfx-(\d[\w.]*)\.zip", DOCS)
    assert shown and set(shown) == {manifest["version"]}, "the install example names another version"
    quoted(r"Blender extension \(Blender 4\.2 LTS to 5\.0\)")
    assert manifest["blender_version_min"].startswith("4.2")


# --- paths the manual names ---------------------------------------------------------------------------------------

def test_layout_lists_what_exists():
    """CONTRIBUTING's Layout block lists what the repository holds. A folder listed (``cli/``) may still be the module
    it grows from (``cli.py``): a module that becomes a package keeps its name."""
    contributing = doc.read("docs/CONTRIBUTING.md")
    block = next(b for b in doc.blocks(contributing) if b.section == "Layout")
    listed = []
    for line in block.body.splitlines():
        names = line.split("  ")[0].split()  # "operators/ shader_nodes/ panels/   one module per ..."
        listed.extend(names)
    assert "cli/" in listed and "tests/core" in listed and "docs/" in listed

    def exists(name):
        return os.path.exists(os.path.join(ROOT, name)) or (
            name.endswith("/") and os.path.isfile(os.path.join(ROOT, name.rstrip("/") + ".py")))

    for name in listed:
        assert exists(name), f"CONTRIBUTING's Layout lists {name}, which does not exist"
    for name in os.listdir(ROOT):  # and every top-level module or package of the add-on is listed
        if name.endswith(".py") or os.path.isfile(os.path.join(ROOT, name, "__init__.py")):
            folder = name.removesuffix(".py") + "/"
            assert name in listed or folder in listed, f"CONTRIBUTING's Layout does not list {name}"


def test_readme_is_a_front_door():
    """The README stays short (the detail is in docs/) and links to every page of the manual."""
    lines = len(README.splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move the detail into docs/"
    linked = {os.path.normpath(target.split("#")[0]) for target in doc.links(README)}
    for page in doc.pages()[1:]:
        assert page in linked, f"README does not link to {page}"


def test_relative_links_and_anchors_resolve():
    """Every relative link and picture of the README and the pages names a file of the repository, and an anchor
    (``#section`` or ``page.md#section``) names a heading of that page."""
    checked = 0
    for page in doc.pages():
        text = doc.read(page)
        for target in doc.links(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            assert not where.startswith(".."), f"{page} links to {target}, outside the repository"
            assert os.path.exists(os.path.join(ROOT, where)), f"{page} links to {target}, which does not exist"
            if page.startswith("docs/") and path:
                assert where.startswith("docs/"), f"{page} links to {target}, which the website does not hold"
            if anchor:
                assert where.endswith(".md"), f"{page}: {target} has an anchor into a file that is not a page"
                assert anchor in doc.anchors(doc.read(where)), f"{page} links to {target}: no such heading"
            checked += 1
    assert checked >= 40


def test_website_lists_every_page():
    nav = re.findall(r"^\s*- [^:]+: (\S+\.md)$", doc.read("mkdocs.yml"), re.M)
    assert sorted(nav) == sorted(os.path.basename(p) for p in doc.pages()[1:])
    assert nav[0] == "index.md"


def test_website_builds(tmp_path):
    """tools/docs.py builds the pages with MkDocs in strict mode (a broken link or anchor fails). Skipped only when
    MkDocs cannot be installed (no network on a first run)."""
    env = dict(os.environ)
    out = tmp_path / "site"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "docs.py"), "--out", str(out), "--strict"],
                          capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode == 3:
        pytest.skip(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    for page in doc.pages()[1:]:
        name = os.path.basename(page)[:-3]
        html = out / ("index.html" if name == "index" else os.path.join(name, "index.html"))
        assert html.is_file(), f"the site has no page for {page}"
    assert "Wind force-field" in (out / "wind" / "index.html").read_text(encoding="utf-8")


def test_every_repository_path_named_exists():
    paths = set()
    for span in SPANS + [b.body for b in doc.blocks(DOCS) if b.lang in ("sh", "")]:
        paths.update(re.findall(r"(?<![\w/.])((?:tools|benchmarks|core|docs|tests|\.ci)/[\w./-]*\w)", span))
    paths.update(re.findall(r"\]\((docs/[^)]+)\)", README))  # pictures and pages
    assert len(paths) > 15
    for path in sorted(paths):
        where = re.split("[:#]", path)[0]  # tests/core/test_bend.py::test_x, docs/index.md#install
        assert os.path.exists(os.path.join(ROOT, where)), f"the manual names {path}, which does not exist"


def test_benchmark_table_lists_every_benchmark_and_its_options():
    section = doc.read("docs/benchmarks.md")
    rows = re.findall(r"^\| `(bench_\w+\.py)` \| (.*) \|$", section, re.M)
    on_disk = sorted(f for f in os.listdir(os.path.join(ROOT, "benchmarks")) if re.fullmatch(r"bench_\w+\.py", f))
    assert sorted(name for name, _ in rows) == on_disk
    for name, what in rows:  # an option a row names is an option of that script
        for option in re.findall(r"`(--[a-z-]+)", what):
            assert f'"{option}"' in read("benchmarks", name), f"{name} has no option {option}"
    for script, option in re.findall(r"`benchmarks/(bench_\w+\.py) (--[a-z-]+)", PROSE):
        assert f'"{option}"' in read("benchmarks", script), f"{script} has no option {option}"


# --- Python API of core/ -----------------------------------------------------------------------------------

CORE_REFS = [r for r in doc.api_refs(DOCS) if r.module.startswith("core.")]


def resolve(ref):
    """The object an ApiRef names (pytest.fail when there is none)."""
    if ref.module == "core.*":  # Class.method with no module given: a class of some core module
        klass, attr = ref.name.split(".")
        owners = [getattr(importlib.import_module(f"core.{m.removesuffix('.py')}"), klass, None)
                  for m in sorted(os.listdir(os.path.join(ROOT, "core")))
                  if m.endswith(".py") or os.path.isfile(os.path.join(ROOT, "core", m, "__init__.py"))]
        owners = [o for o in owners if inspect.isclass(o)]
        assert owners, f"the manual names {ref.call}: no core module has a class {klass}"
        return getattr(owners[0], attr, None) or pytest.fail(f"the manual names {ref.call}: {klass} has no {attr}")
    module = importlib.import_module(ref.module)
    found = getattr(module, ref.name, None)
    if found is None and ref.klass:
        found = getattr(getattr(module, ref.klass), ref.name, None)
    assert found is not None, f"the manual names {ref.module}.{ref.name} ({ref.call!r}), which does not exist"
    return found


def check_call(target, call: str, module=None):
    """A call as the README writes it binds to the real signature (argument count and keyword names)."""
    shape = doc.call_shape(call)
    if shape is None:
        return
    positional, keywords, nested = shape
    if not callable(target):
        pytest.fail(f"README calls {call}, but it is not callable")
    sig = inspect.signature(target)
    params = list(sig.parameters.values())
    if params and params[0].name == "self" and inspect.isfunction(target):
        positional += 1  # a method named after its class: the instance is the first argument
    try:
        sig.bind(*([None] * positional), **{k: None for k in keywords if k is not None})  # (None: a **mapping)
    except TypeError as exc:
        pytest.fail(f"the manual's {call!r} does not fit {target.__qualname__}{sig}: {exc}")
    for inner in nested:  # MipSettings(ref=0.5) inside build_chain(...)
        inner_target = getattr(module, inner.split("(")[0], None) if module else None
        assert module is not None and inner_target is not None, \
            f"the manual's {call!r}: {inner.split('(')[0]} is not in {module.__name__ if module else 'a module'}"
        check_call(inner_target, inner)


def test_core_api_refs_are_read():
    """The the manual's API sentences are found (a change to their wording must not silently check nothing)."""
    names = {(r.module, r.name) for r in CORE_REFS}
    assert {("core.bend", "pick"), ("core.gasgiant", "run_bake"), ("core.mips", "build_chain"),
            ("core.snow", "generate_cover"), ("core.wind", "bake_wind_data"), ("core.exr", "read_exr"),
            ("core.*", "BendParams.validate"), ("core.gasgiant", "step")} <= names
    assert len(CORE_REFS) >= 40


@pytest.mark.parametrize("ref", CORE_REFS, ids=lambda r: f"{r.module}.{r.name}")
def test_core_api_named_in_readme_exists(ref):
    target = resolve(ref)
    module = importlib.import_module(ref.module) if ref.module != "core.*" else None
    check_call(target, ref.call, module)


# --- files and JSON keys the bakes write -------------------------------------------------------------------

def test_mips_output_names():
    spans = set(SPANS)
    assert {"<name>.dds", "<name>_mipNN.png", "<name>_mips.json", "<name>_compare.png"} <= spans
    names = mips.output_names("leaf", 3, ("dds", "png"), compare=True)
    assert names == ["leaf.dds", "leaf_mip00.png", "leaf_mip01.png", "leaf_mip02.png", "leaf_mips.json",
                     "leaf_compare.png"]
    quoted(r"images over the memory limit \(`--max-memory-gb`, default (\d+); about (\d+) bytes per pixel\)")
    m = quoted(r"default (\d+); about (\d+) bytes per\s*pixel")
    assert (float(m.group(1)), int(m.group(2))) == (mips.DEFAULT_MAX_MEMORY_GB, mips.BYTES_PER_PIXEL)
    assert int(quoted(r"\((\d)x\1 per texel by default\)").group(1)) == mips.MipSettings().supersample


def test_mips_report_dds_format_as_quoted():
    m = re.search(r"`(\{\"dxgi_format\".*?\})`", flat(PROSE))
    assert m and json.loads(m.group(1)) == mips.dds_format(True)
    assert mips.dds_format(True)["dxgi_format"] == int(quoted(r"`DXGI_FORMAT_R8G8B8A8_UNORM_SRGB` \((\d+)\)").group(1))
    assert mips.dds_format(False)["name"] == "R8G8B8A8_UNORM"
    quoted(r"alpha mode straight \(`miscFlags2` = (\d)")
    assert int(quoted(r"`miscFlags2` = (\d)").group(1)) == mips.DDS_ALPHA_MODE_STRAIGHT


def test_mips_writes_the_files_and_report(tmp_path):
    rgba = mips.make_leaf_card(32)
    chain = mips.build_chain(rgba, mips.MipSettings())
    mips.write_outputs([("leaf", "leaf.png", chain)], str(tmp_path))
    written = sorted(os.listdir(tmp_path))
    assert written == sorted(mips.output_names("leaf", len(chain.levels), mips.FORMATS))
    report = json.loads((tmp_path / "leaf_mips.json").read_text())
    assert "dds_format" in report
    assert report["files"] == mips.output_names("leaf", len(chain.levels), mips.FORMATS)
    quoted(r"the `files` written")


def test_bend_engine_files(tmp_path):
    table = re.findall(r"^\| `([\w.]+)` \| (Godot|Unity|Unreal|all) ", DOCS, re.M)
    paths = bend_engines.export_files(core_bend.BendParams(), str(tmp_path))
    assert sorted(os.path.basename(p) for p in paths) == sorted(name for name, _ in table)
    assert bend_engines.JSON_NAME == "envfx_bend.json"
    for name, engine in table:  # each file in its engine's row: the include or one of its examples
        if engine != "all":
            assert name in (bend_engines.ENGINES[engine.upper()][3], *bend_engines.EXAMPLE_FILES[engine.upper()])
    assert "EnvFXBend" in read("core", "bend_engines.py")  # the Unity Custom Function's name


def test_bend_limits():
    assert float(quoted(r"A strength beyond (\d+)").group(1)) == core_bend.MAX_STRENGTH
    assert float(quoted(r"horizon\s*offset beyond ([\d,]+) m").group(1).replace(",", "")) == core_bend.MAX_DISTANCE
    assert tuple(core_bend.MODES) == ("RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER")
    table = re.findall(r"^\| `([A-Z_0-9]+)` \| ", DOCS, re.M)
    assert set(core_bend.MODES) <= set(table)


def test_gasgiant_output_names_and_metadata(tmp_path):
    names = gasgiant.output_names(gasgiant.GasGiantParams(), None)
    assert {"gasgiant_equirect.png", "gasgiant_flow.png"} <= set(names.values())
    faces = {layout: sorted(v for k, v in gasgiant.output_names(gasgiant.GasGiantParams(cube_layout=layout),
                                                                 None).items() if k.startswith("cube_"))
             for layout in gasgiant.CUBE_LAYOUTS}
    assert faces["BLENDER"] == sorted(f"gasgiant_{f}.png" for f in ("px", "nx", "py", "ny", "pz", "nz"))
    assert faces["GLTF"] == faces["UNITY"] == sorted(f"gasgiant_{f}.png" for f in
                                                     ("posx", "negx", "posy", "negy", "posz", "negz"))
    quoted(r"`gasgiant_\{px,nx,py,ny,pz,nz\}\.png` = Blender's")
    quoted(r"`gasgiant_\{posx,negx,posy,negy,posz,negz\}\.png` = the standard")
    animated = gasgiant.output_names(gasgiant.GasGiantParams(frames=3), 1)
    assert "gasgiant_flow_0001.png" in animated.values()
    assert gasgiant.METADATA_NAME == "gasgiant.json"
    # gasgiant.json: format, version and every key the the manual names
    params = gasgiant.GasGiantParams(particles=2000, iterations=2, field_size=16, cubemap_size=64,
                                     equirect_width=128, threads=1, frames=2, frame_iterations=1)
    gasgiant.run_bake(params, str(tmp_path))
    written = set(os.listdir(tmp_path))
    assert written == {"gasgiant.json"} | {n for f in (1, 2) for n in gasgiant.output_names(params, f).values()}
    meta = json.loads((tmp_path / "gasgiant.json").read_text())
    fmt = quoted(r"\*\*`gasgiant\.json`\*\* \(`format` = `([\w-]+)`, `version` = (\d+)\)")
    assert (meta["format"], meta["version"]) == (fmt.group(1), int(fmt.group(2)))
    keys = _keys(meta)
    para = flat(PROSE)[flat(PROSE).index("**`gasgiant.json`**"):]
    para = para[:para.index("**Cube faces**")]
    for key in ("frames", "cube_layout", "flow", "unit", "iterations_per_frame", "scale", "still_png", "still_exr",
                "max_speed_baked", "clamped_texels", "clamped_fraction", "images", "content", "colour_space",
                "layout", "normal", "right", "up", "outputs"):
        assert f"`{key}`" in para, f"the gasgiant.json paragraph no longer names {key}"
        assert key in keys, f"gasgiant.json has no key {key!r}"
    keys |= _keys(gasgiant.bake_metadata(gasgiant.GasGiantParams(cube_layout="GLTF")))  # the engine layouts' keys
    for key in ("engine_slots", "slot", "slot_index", "engine_normal", "engine_right", "engine_up"):
        assert f"`{key}`" in PROSE and key in keys, key
    assert "gasgiant_flow_{frame:04d}.png" in json.dumps(meta["images"])
    quoted(r"a sequence as a pattern `gasgiant_flow_\{frame:04d\}\.png` with `frames` \[1, N\]")
    assert meta["flow"]["still_png"] == 0.5 and meta["flow"]["still_exr"] == 0
    quoted(r"`still_png` 0\.5, `still_exr` 0")


def _keys(obj) -> set:
    found = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            found.add(k)
            found |= _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            found |= _keys(v)
    return found


def test_gasgiant_field_file_keys(tmp_path):
    params = gasgiant.GasGiantParams(field_size=16)
    path = str(tmp_path / "field.npz")
    gasgiant.save_fields(path, params, {0.0: gasgiant.build_field(params)})
    with np.load(path) as data:
        keys = set(data.files)
        fmt, version = str(data["format"]), int(data["version"])
    para = flat(PROSE)[flat(PROSE).index("**Velocity field files**"):][:1500]
    m = re.search(r"`format` = `([\w-]+)`, `version` = (\d+)", para)
    assert m and (fmt, version) == (m.group(1), int(m.group(2)))
    for key in ("settings", "field_size", "times", "noise_norm", "velocity"):
        assert f"`{key}`" in para and key in keys, key


def test_gasgiant_limits():
    m = quoted(r"Sizes: field (\d+)\.\.(\d+), cube faces (\d+)\.\.(\d+), equirect (\d+)\.\.(\d+)")
    sizes = [int(g) for g in m.groups()]
    eq = [w for w in gasgiant.EQUIRECT_WIDTHS if w]
    assert sizes == [min(gasgiant.FIELD_SIZES), max(gasgiant.FIELD_SIZES), min(gasgiant.CUBEMAP_SIZES),
                     max(gasgiant.CUBEMAP_SIZES), min(eq), max(eq)]
    gb = float(quoted(r"8M particles take about ([\d.]+) GB").group(1))
    estimate = gasgiant.estimate_memory(gasgiant.GasGiantParams(particles=8_000_000)) / 2**30
    assert abs(estimate - gb) / gb < 0.1
    assert float(quoted(r"all at most ([\d,]+) in size").group(1).replace(",", "")) == gasgiant.MAX_MAGNITUDE
    m = quoted(r"the command line names its option, e\.g\. `(--[\w-]+) (\w+): ([^`]+)`")
    assert m.group(1) == "--turbulence"  # the message itself: tests/blender/test_readme.py
    assert hasattr(gasgiant, "FLOAT_RANGES") and "noise_speed" in gasgiant.FLOAT_RANGES
    frames = quoted(r"\*\*Animated bakes\*\* \(`frames` > 1, at most ([\d,]+): Blender's last frame").group(1)
    assert int(frames.replace(",", "")) == gasgiant.MAX_FRAMES


def test_snow_bake_files_and_json(tmp_path):
    t = np.linspace(0, 1, 3)[:, None]
    tracks = np.concatenate([-2 + 4 * t, np.zeros((3, 2))], 1)[:, None, :]
    buf = snow.BufferParams(resolution=8, size=8.0, origin=(-4.0, -4.0))
    result = snow.bake(tracks, [0.5], [0.2], snow.StampParams(), buf, out_dir=str(tmp_path / "seq"))
    assert sorted(os.listdir(tmp_path / "seq")) == ["snow_buffer.json", "snow_buffer_0001.exr",
                                                     "snow_buffer_0002.exr", "snow_buffer_0003.exr"]
    snow.bake(tracks, [0.5], [0.2], snow.StampParams(), buf, out_dir=str(tmp_path / "one"), sequence=False)
    assert sorted(os.listdir(tmp_path / "one")) == ["snow_buffer.exr", "snow_buffer.json"]
    quoted(r"\(`snow_buffer_0001\.exr`\.\.\. or only `snow_buffer\.exr` with `sequence = False`\) and "
           r"`snow_buffer\.json`")
    meta = json.loads((tmp_path / "seq" / "snow_buffer.json").read_text())
    keys = _keys(meta)
    quoted(r"`uv = \(dot\(P, u_from_world\), dot\(P, v_from_world\)\) \+ frames\[i\]\.uv_offset\[engine\]`")
    for key in ("u_from_world", "v_from_world", "frames", "uv_offset", "units_per_blender_unit", "up", "resolution"):
        assert key in keys, f"snow_buffer.json has no key {key!r}"
    assert set(meta["frames"][0]["uv_offset"]) == set(bend_engines.ENGINES)
    assert result.metadata_path is not None and result.metadata_path.endswith("snow_buffer.json")
    # the size estimate the README quotes
    quoted(r"takes 16 bytes a texel \(a 512 buffer 4 MB a frame, 1:100000 frames 391 GB\)")
    assert round(snow.bake_output_bytes(512, 1) / 2**20) == 4
    assert round(snow.bake_output_bytes(512, 100000) / 2**30) == 391
    about = int(quoted(r"the JSON up to about (\d+) bytes for every frame").group(1))
    assert abs(snow.files._json_frame_bytes("snow_buffer") - about) <= 10
    assert snow.TEMP_PREFIX == ".envfx-staging-snow-" and "`.envfx-staging-snow-<pid>-*`" in PROSE


def test_snow_and_wind_names_in_the_code():
    """Attribute, vertex-group, node-group and material names the README gives appear in the code."""
    source = "".join(read(folder, f) for d in ("core", "operators", "shader_nodes")  # packages included
                     for folder, _dirs, files in sorted(os.walk(os.path.join(ROOT, d))) for f in sorted(files)
                     if f.endswith(".py"))
    names = {s for s in SPANS if re.fullmatch(r"\.?EnvFX_\w+|snow_(thickness|coverage)|envfx_bend_applied", s)}
    assert {"EnvFX_Height", "EnvFX_Wind", "EnvFX_Wind_Export", "EnvFX_Height_UV", "EnvFX_Trunk",
            "snow_coverage", "envfx_bend_applied"} <= names
    for name in names:
        assert f'"{name}"' in source, f"the manual names {name}, which the code does not write or read"
    groups = set(re.findall(r'"(EnvFX [A-Z][\w ]*?)(?: \((?:its name|<image>)\))?"', flat(PROSE)))
    assert {"EnvFX Bend", "EnvFX Wind", "EnvFX Snow Trails", "EnvFX Snow Coverage", "EnvFX Snow Surfaces",
            "EnvFX Snow Buffer", "EnvFX Snow"} <= groups
    for group in groups:
        assert f'"{group}' in source, f"the manual names {group!r}, which the code does not make"
    hidden = [s for s in SPANS if s.startswith(".EnvFX_Wind_")]
    from core import wind as core_wind
    # the wind page lists them (and the blades' roots per face, and a face per vertex); the engines page maps
    # channels
    assert set(hidden) == set(core_wind.LIVE_ATTRS) | {core_wind.LIVE_ROOT, core_wind.LIVE_FACE}
