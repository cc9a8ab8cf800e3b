"""The manual (README.md and the pages of docs/) tells the truth about what scripts and pipelines call: every
``bpy.ops.envfx`` operator and keyword it shows, every ``scene.envfx`` / ``object.envfx`` setting and enum value (set
on a real scene, in both Blender versions), the Python functions of operators/, and every ``blender -c envfx``
example and option (parsed by the real parser; the argument checks run with the file work stubbed out).

The manual is read mechanically (tests/readme_doc.py): renaming a documented thing without its page fails here.
The parts that need no Blender: tests/core/test_readme.py.
"""

import argparse
import importlib
import inspect
import json
import os
import re
from typing import Any

import bpy
import pytest

from tests import readme_doc as doc  # tests/conftest.py puts the repository root on sys.path
from tests.blender import api

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

README = doc.text()
DOCS = doc.all_text()  # the README and every page of docs/
PROSE = doc.prose(DOCS)


def found(pattern: str, text: str) -> re.Match[str]:
    """``re.search`` that fails the test, naming the pattern, when the manual has no match."""
    match = re.search(pattern, text)
    assert match, f"the manual has nothing that matches {pattern!r}"
    return match


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def group_of(owner: str, path):
    """The settings (a PropertyGroup instance) at ``scene.envfx.<path>`` or ``object.envfx.<path>`` of a fresh
    file (the default cube for objects)."""
    root = api.envfx(api.scene()) if owner == "Scene" else api.envfx(bpy.data.objects["Cube"])
    for part in path:
        assert part in root.bl_rna.properties, f"{owner}.envfx has no {'.'.join(path)}"
        root = getattr(root, part)
    return root


def enum_items(group, name) -> set:
    prop = group.bl_rna.properties[name]
    assert prop.type == "ENUM", f"{name} is not an enum"
    return {item.identifier for item in prop.enum_items}


def all_enum_items(group) -> set:
    return {i.identifier for p in group.bl_rna.properties if p.type == "ENUM" for i in p.enum_items}


# --- operators ---------------------------------------------------------------------------------------------

OPS = doc.operator_refs(DOCS)


def test_operator_refs_are_read():
    names = {op.name for op in OPS}
    assert {"bend_add", "bend_export_engines", "wind_preset", "snow_drive_from_bake", "gasgiant_randomize",
            "mips_bake"} <= names
    assert len(names) >= 18


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.where)
def test_documented_operator_exists_with_its_keywords(envfx, op):
    assert hasattr(bpy.types, f"ENVFX_OT_{op.name}"), f"the manual names envfx.{op.name}, which is not registered"
    rna = getattr(api.ops, op.name).get_rna_type()
    for key, values in op.kwargs.items():
        assert key in rna.properties, f"envfx.{op.name} has no keyword {key!r} ({op.where})"
        prop = rna.properties[key]
        for value in values:
            if prop.type == "ENUM":
                assert value in {i.identifier for i in prop.enum_items}, f"{op.where}: {value!r} is not an item"
            else:
                kind = {"BOOLEAN": bool, "STRING": str, "INT": int, "FLOAT": (int, float)}[prop.type]
                assert isinstance(value, kind), f"{op.where}: {value!r} is not a {prop.type.lower()}"


def test_operator_keywords_in_comments(envfx):
    """``bpy.ops.envfx.snow_drive_from_bake()  # ... (use_bake=False: ...)``: the keyword is the operator's."""
    seen = 0
    for line in doc.setting_lines(DOCS):
        for key in re.findall(r"(?<![\w.])([a-z_]+)=(?!=)", re.sub(r"bpy\.ops\.envfx\.\w+\([^)]*\)", "",
                                                                   line.comment)):
            assert line.ops, line.source
            rna = getattr(api.ops, line.ops[-1]).get_rna_type()
            assert key in rna.properties, f"envfx.{line.ops[-1]} has no keyword {key!r}: {line.source}"
            seen += 1
    assert seen >= 1


def test_panel_tab_is_envfx(envfx):
    assert "the tab **EnvFX**" in README
    panels = [c for c in envfx.panels.classes if issubclass(c, bpy.types.Panel)]
    assert panels and all(hasattr(bpy.types, p.__name__) for p in panels)
    assert {p.bl_category for p in panels if hasattr(p, "bl_category")} == {"EnvFX"}
    # "Panels: Image Editor sidebar, tab EnvFX, and the EnvFX tab of the 3D viewport"
    assert "Panels: Image Editor sidebar, tab EnvFX, and the EnvFX tab of the 3D viewport" in flat(PROSE)
    assert {p.bl_space_type for p in panels} == {"VIEW_3D", "IMAGE_EDITOR"}


# --- settings in the python blocks ---------------------------------------------------------------------------

LINES = doc.setting_lines(DOCS)


def test_setting_lines_are_read():
    groups = {(line.owner, line.group) for line in LINES}
    assert {("Scene", ("bend",)), ("Scene", ("wind",)), ("Scene", ("snow",)), ("Scene", ("gasgiant",)),
            ("Scene", ("mips",)), ("Object", ("wind",))} <= groups
    assert sum(len(line.assigned) for line in LINES) >= 100


@pytest.mark.parametrize("line", LINES, ids=lambda line: line.source.strip()[:60])
def test_documented_setting_exists_and_takes_the_value_shown(envfx, line):
    group = group_of(line.owner, line.group)
    props = group.bl_rna.properties
    for name, value in line.assigned.items():
        assert name in props, f"{line.owner}.envfx.{'.'.join(line.group)} has no setting {name!r}: {line.source}"
        if value is ...:
            continue  # a value made at run time (an object, math.radians(...)): the name is what is checked
        setattr(group, name, value)  # a wrong enum item or type raises here
        got = getattr(group, name)
        if props[name].type == "FLOAT" and props[name].array_length == 0:
            assert got == pytest.approx(value, rel=1e-6), line.source
        elif props[name].type == "FLOAT":
            assert tuple(got) == pytest.approx(tuple(value), rel=1e-6), line.source
        else:
            assert got == value, line.source
    enums, names, refs = doc.comment_names(line.comment)
    for ref in refs:
        assert ref in props, f"comment names {ref!r}, not a setting of {'.'.join(line.group)}: {line.source}"
    for name in names:
        assert name in props, f"comment names {name!r}, not a setting of {'.'.join(line.group)}: {line.source}"
    if enums:
        enum_props = [n for n in [*line.assigned, *refs] if n in props and props[n].type == "ENUM"]
        allowed = set().union(*(enum_items(group, n) for n in enum_props)) if enum_props else all_enum_items(group)
        for value in enums:
            assert value in allowed, f"comment value {value!r} is not an item of {enum_props}: {line.source}"


def test_documented_object_settings(envfx):
    """``object.envfx.x`` / ``obj.envfx.x.y`` anywhere in the README (``object.envfx.snow.radius/depth``: both)."""
    found = re.findall(r"(?<![\w.])(?:object|obj)\.envfx((?:\.\w+(?:/\w+)*)+)", DOCS)
    assert len(found) >= 4
    for path in found:
        parts = path.strip(".").split(".")
        *head, last = parts
        for leaf in last.split("/"):
            group_of("Object", [*head, leaf])


def test_documented_scene_settings_in_prose(envfx):
    """``scene.envfx.wind.ao_samples`` in the prose, and in the sentence after a settings group or an enum setting,
    the bare names (settings of that group) and upper-case values (items of that enum) it lists."""
    checked = 0
    for para in doc.paragraphs(DOCS):
        for sentence in doc.sentences(para):
            scope = None
            for token in doc.backticks(sentence):
                m = re.fullmatch(r"(scene|object)\.envfx((?:\.\w+)+)", token)
                if m:
                    owner = "Scene" if m.group(1) == "scene" else "Object"
                    parts = m.group(2).strip(".").split(".")
                    *head, last = parts
                    group = group_of(owner, head)
                    assert last in group.bl_rna.properties, f"the manual names {token}, which does not exist"
                    prop = group.bl_rna.properties[last]
                    scope = ((getattr(group, last), None) if prop.type == "POINTER" else
                             (group, last) if prop.type == "ENUM" else None)
                    checked += 1
                    continue
                if scope is None:
                    continue
                group, enum = scope
                if enum is None and re.fullmatch(r"[a-z][a-z0-9_]*", token):
                    assert token in group.bl_rna.properties, f"{token!r} is not a setting ({sentence[:80]}...)"
                    checked += 1
                elif enum is not None and re.fullmatch(r"[A-Z][A-Z0-9_]+", token):
                    assert token in enum_items(group, enum), f"{token!r} is not an item of {enum}"
                    checked += 1
    assert checked >= 15


# Lower-case names in a feature's prose that are not its settings: JSON keys, file names and core functions (held
# to the code by tests/core/test_readme.py), material keywords, shader and Blender names. Any other lower-case
# name there must be a setting of the feature (scene.envfx.<feature>, object.envfx.<feature>) or of object.envfx.
NOT_SETTINGS = {
    "bend": {"envfx_bend", "scale_length", "world_vertex_coords", "envfx_pivot", "envfx_bend_gpu", "bend_gpu_per_frame",
             "bend_props_gpu_per_frame"},
    "wind": {"bark", "branch", "frond", "leaf", "leaves", "needle", "trunk", "s", "terrain_z", "foreach_set",
             "frame_change_pre", "node_cost_swing", "envfx_wind", "rigid_euler", "wind_props_rigid_per_frame",
             "envfx_wind_gpu", "envfx_wind_gpu_a"},
    "snow": {"bake", "bake_job", "camera_fade", "down", "envfx_snow_specs", "envfx_trail_track", "generate_cover",
             "read_exr", "resolution", "rim", "shown_offset", "simulate_points", "snow_coverage", "snow_thickness",
             "snow_trail", "stamp_points", "stamp_profile", "timeout", "u", "units_per_blender_unit", "up",
             "write_exr"},
    "gasgiant": {"alpha", "clamped_fraction", "clamped_texels", "colour_space", "content", "decode_flow",
                 "encode_flow", "engine_normal", "engine_right", "engine_slots", "engine_up", "flow", "format",
                 "gasgiant_flow", "gasgiant_nx", "gasgiant_ny", "gasgiant_nz", "gasgiant_px", "gasgiant_py",
                 "gasgiant_pz", "images", "iterations_per_frame", "layout", "max_speed_baked", "noise_norm", "normal",
                 "nz", "outputs", "pz", "read_exr", "right", "scale", "settings", "slot", "slot_index", "still_exr",
                 "still_png", "times", "unit", "up", "velocity", "version", "write_exr"},
    "mips": {"dds_format", "files", "null", "coverage", "coverage_dds"},
    "lightmap": set(),
    "vat": {"bounds", "coordinate_system", "fps", "frame_v_step", "frames", "height", "index", "layout", "mesh",
            "name", "null", "playback_fps", "precision", "remap", "rows_per_frame", "textures", "uv",
            "vertex_count", "width", "file", "units_per_blender_unit", "matrix_from_blender", "f", "i", "t",
            "remap_min", "remap_span", "normals", "position", "normal", "pos"},
}
SECTIONS = {"World Bend": "bend", "Wind": "wind", "Snow": "snow", "Gas Giant": "gasgiant", "Mip Chains": "mips",
            "2D Light Map": "lightmap", "Vertex Animation Textures": "vat"}


def feature_texts():
    """(feature, where, prose) for each feature's page in docs/ and its section of the README."""
    out = [(feature, page, doc.prose(doc.read(page))) for feature, page in doc.FEATURE_PAGES.items()]
    parts = re.split(r"^### (.+)$", doc.prose(README), flags=re.M)
    for title, body in zip(parts[1::2], parts[2::2]):
        feature = next(f for t, f in SECTIONS.items() if title.startswith(t))
        out.append((feature, f"README {title}", re.split(r"^## ", body, flags=re.M)[0]))
    return out


def test_settings_named_in_each_feature_section(envfx):
    named = {}
    for feature, where, body in feature_texts():
        obj = api.envfx(bpy.data.objects["Cube"])
        settings = set(getattr(api.envfx(api.scene()), feature).bl_rna.properties.keys()) | \
            set(obj.bl_rna.properties.keys())
        if feature in ("wind", "snow"):
            settings |= set(getattr(obj, feature).bl_rna.properties.keys())
        names = {t for t in doc.backticks(body) if re.fullmatch(r"[a-z][a-z0-9_]*", t)}
        unknown = names - settings - NOT_SETTINGS[feature]
        assert not unknown, f"{where}: {sorted(unknown)} are neither settings nor known other names"
        named.setdefault(feature, set()).update(names)
    assert set(named) == set(SECTIONS.values())
    assert sum(where.startswith("README") for _, where, _ in feature_texts()) == len(SECTIONS)
    for feature, names in named.items():
        stale = NOT_SETTINGS[feature] - names
        assert not stale, f"{feature}: NOT_SETTINGS lists {sorted(stale)}, which the manual no longer names"


def test_enum_values_written_as_assignments_in_prose(envfx):
    """``category='GRASS'``, ``color_source = 'CUBEMAP'``, ``file_format`` = ``EXR`` or ``PNG_EXR``."""
    scene_groups = [getattr(api.envfx(api.scene()), p.identifier) for p in api.envfx(api.scene()).bl_rna.properties
                    if p.type == "POINTER" and p.identifier != "rna_type"]
    object_groups = [api.envfx(bpy.data.objects["Cube"]).wind, api.envfx(bpy.data.objects["Cube"]).snow]
    pairs = [(n, [v]) for n, v in re.findall(r"`(\w+) ?= ?'([A-Z_0-9]+)'`", PROSE)
             if not re.search(rf"export with `{n}", flat(PROSE))]  # the exporters' options: the test below
    pairs += [(n, re.findall(r"`([A-Z_0-9]+)`", rest))
              for n, rest in re.findall(r"\(`(\w+)` = ((?:`[A-Z_0-9]+`(?: or |, )?)+)\)", flat(PROSE))]
    assert len(pairs) >= 3
    for name, values in pairs:
        owners = [g for g in scene_groups + object_groups if name in g.bl_rna.properties]
        assert owners, f"the manual's {name} is not a setting"
        for value in values:
            assert any(value in enum_items(g, name) for g in owners), f"{name} has no item {value!r}"


def test_exporter_options_the_wind_section_gives():
    """"export with `export_vertex_color='ACTIVE'`" (glTF), "`colors_type='LINEAR', prioritize_active_color=True`"
    (FBX): options of Blender's own exporters, with those values, in this Blender version."""
    import addon_utils

    addon_utils.enable("io_scene_gltf2")
    addon_utils.enable("io_scene_fbx")
    spans = re.findall(r"\*\*(glTF|FBX)\*\* \([^)]*\): export with `([^`]+)`", flat(PROSE))
    assert [fmt for fmt, _ in spans] == ["glTF", "FBX"]
    for fmt, span in spans:
        exporter: Any = bpy.ops.export_scene.gltf if fmt == "glTF" else bpy.ops.export_scene.fbx  # (an operator,
        rna = exporter.get_rna_type().properties                                   # typed as a plain function)
        for key, value in re.findall(r"(\w+)=([^,]+)", span):
            assert key in rna, f"the {fmt} exporter has no option {key}"
            value = eval(value)  # a literal: 'ACTIVE', True
            if rna[key].type == "ENUM":
                assert value in {i.identifier for i in rna[key].enum_items}, f"{fmt} {key}={value!r}"
            else:
                assert isinstance(value, bool) and rna[key].type == "BOOLEAN"


def test_wind_custom_sources_and_layouts(envfx):
    w = api.envfx(api.scene()).wind
    listed = found(r"\(`custom_r/g/b/a` from `([A-Z_, ]+)`\)", flat(PROSE)).group(1)
    for channel in "rgba":
        assert [s.strip() for s in listed.split(",")] == [i.identifier for i in
                                                          w.bl_rna.properties[f"custom_{channel}"].enum_items]
    categories = found(r"Spring response per category \(([^)]*)\)", flat(PROSE)).group(1)
    cube_wind = api.envfx(bpy.data.objects["Cube"]).wind
    assert set(re.findall(r"`([A-Z]+)`", categories)) == enum_items(cube_wind, "category")


# --- defaults and limits the README quotes ----------------------------------------------------------------

def default(owner_path, name):
    group = group_of("Scene", owner_path)
    return group.bl_rna.properties[name].default


def test_quoted_defaults(envfx):
    f = flat(PROSE)
    assert default(["snow"], "coverage_melt_time") == float(found(
        r"`coverage_melt_time` seconds \(default (\d+)", f).group(1))
    assert default(["snow"], "puffs") is False and "(`puffs`, off by default" in f
    assert default(["gasgiant"], "vortex_band_threshold") == pytest.approx(float(found(
        r"\(`--vortex-band-threshold`, default ([\d.]+)\)", f).group(1)))
    assert default(["gasgiant"], "field_interval") == int(found(r"`field_interval` frames \(default (\d+)\)",
                                                                    f).group(1))
    assert default(["gasgiant"], "opacity_start") == float(found(
        r"`opacity_start` above `opacity` does the same \(default (\d+)", f).group(1))
    assert "when that is 0 (the default)" in f and default(["gasgiant"], "flow_scale") == 0.0
    assert "`BLENDER` (default)" in f and group_of("Scene", ["gasgiant"]).bl_rna.properties["cube_layout"] \
        .default == "BLENDER"
    assert default(["wind"], "height_uv") is True
    assert default(["snow"], "sequence") is True  # "only `snow_buffer.exr` with `sequence = False`"


def test_max_memory_default_is_the_same_everywhere(envfx):
    from importlib import import_module

    core_mips = import_module(envfx.__name__ + ".core.mips")
    parser = doc_parser(envfx, "mips")
    option = next(a for a in parser._actions if "--max-memory-gb" in a.option_strings)
    assert option.default == core_mips.DEFAULT_MAX_MEMORY_GB == default(["mips"], "max_memory_gb")


# --- Python functions of operators/ ----------------------------------------------------------------------

def test_operator_module_functions(envfx):
    refs = [r for r in doc.api_refs(DOCS) if r.module.startswith("operators.")]
    assert {r.name for r in refs} >= {"bake", "add_wind", "remove_wind"}
    for ref in refs:
        module = importlib.import_module(f"{envfx.__name__}.{ref.module}")
        target = getattr(module, ref.name, None)
        assert target is not None, f"the manual names {ref.module}.{ref.name}, which does not exist"
        shape = doc.call_shape(ref.call)
        if shape:
            positional, keywords, _ = shape
            sig = inspect.signature(target)
            try:
                sig.bind(*([None] * positional), **{k: None for k in keywords if k is not None})  # (None: **mapping)
            except TypeError as exc:
                pytest.fail(f"the manual's {ref.call!r} does not fit {ref.module}.{ref.name}{sig}: {exc}")
            if keywords and not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
                continue
            # **kw passed on (bake -> bake_job): the keyword is a parameter of a function of that module
            for key in keywords:
                takers = [name for name, fn in inspect.getmembers(module, inspect.isfunction)
                          if fn.__module__ == module.__name__ and key in inspect.signature(fn).parameters]
                assert takers, f"{ref.call}: no function of {ref.module} takes {key}"


def test_edit_mode_message(envfx):
    common = importlib.import_module(f"{envfx.__name__}.operators.common")
    quoted = found(r'\("(Trunk, Leaf are in Edit Mode[^"]*)"\)', flat(PROSE)).group(1)
    assert common.edit_mode_text(["Trunk", "Leaf"]) == quoted


# --- the command line ------------------------------------------------------------------------------------

def doc_parser(envfx, command=None):
    parser = envfx.cli.build_parser()
    return envfx.cli.subcommand_parser(parser, command) if command else parser


def options_of(parser) -> dict:
    return {s: a for a in parser._actions for s in a.option_strings}


EXAMPLES = doc.cli_examples(DOCS)


def test_cli_examples_are_read():
    commands = {ex.argv[0] for ex in EXAMPLES}
    assert commands == {"--help", "info", "bend", "wind", "snow", "gas-giant", "mips", "lightmap", "vat", "farm"}
    assert sum(ex.synopsis for ex in EXAMPLES) == 1 and len(EXAMPLES) >= 18


def test_cli_is_registered_as_envfx(envfx):
    assert 'register_cli_command("envfx", cli.cli_command)' in open(os.path.join(ROOT, "__init__.py")).read()
    assert "`bpy.utils.register_cli_command`" in PROSE


@pytest.mark.parametrize("example", [e for e in EXAMPLES if not e.synopsis], ids=lambda e: e.source[:70])
def test_cli_example_passes_the_argument_checks(envfx, example, tmp_path, monkeypatch, capsys):
    """Each example parses with the real parser and passes every check made before a file is opened (the files
    it names exist, empty); the work on the files is stubbed out."""
    cli = envfx.cli
    if example.argv[0] == "farm" and "--help" not in example.argv:  # the job's command and its arguments
        _check_farm_example(cli, example.argv[1:])
        return
    argv = []
    for word in example.argv:
        if re.search(r"\.(blend|png|tga)$", word) or word.endswith("/*.blend") or word.endswith("/*.png"):
            path = tmp_path / word.replace("*", "a")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
            word = str(path)
        argv.append(word)
    monkeypatch.chdir(tmp_path)
    if "--help" in argv:
        assert cli.main(argv) == 0
        assert "usage: blender -c envfx" in capsys.readouterr().out
        return
    if argv[0] == "info" and len(argv) == 1:
        assert cli.main(argv) == 0  # no file: the version and the features
        assert "features: bend, wind, snow, gasgiant, mips" in capsys.readouterr().out
        return
    parser = cli.build_parser()
    options = options_of(cli.subcommand_parser(parser, argv[0]))
    for word in argv:  # written out in full (argparse would take an abbreviation: --ao for --ao-samples)
        assert not word.startswith("-") or word in options, f"envfx {argv[0]} has no option {word}"
    args = parser.parse_args(argv)
    cli.batch.check_text_options(cli.subcommand_parser(parser, args.command), args)
    if argv[0] in ("gas-giant", "mips"):
        return  # these do their work at once: parsed and checked above
    calls = []
    monkeypatch.setattr(cli.batch, "run_files", lambda command, paths, work, changes=True: calls.append(paths) or 0)
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert calls, "the command did not reach its files"


def _check_farm_example(cli, words):
    parser = cli.build_parser()
    if not words:
        return  # (`blender -c envfx farm` named in prose)
    farm = cli.subcommand_parser(parser, "farm")
    args = parser.parse_args(["farm", *words])
    before = {f"--{n}": getattr(args, n) for n in ("out", "chunk", "blender") if getattr(args, n)}
    tokens, after = cli.farm.split_farm_options(args.rest, taken=tuple(before))
    assert "--out" in {**before, **after}, "a farm job needs --out JOB_DIR"
    assert set(before) | set(after) <= set(options_of(farm))
    command = cli.subcommand_parser(parser, tokens[0])
    options = options_of(command)
    for word in tokens[1:]:
        assert not word.startswith("-") or word in options, f"envfx {tokens[0]} has no option {word}"
    command.parse_args(tokens[1:])


def test_cli_synopsis_lists_every_gas_giant_option(envfx):
    synopsis = next(e for e in EXAMPLES if e.synopsis)
    assert synopsis.argv[0] == "gas-giant"
    parser = doc_parser(envfx, "gas-giant")
    options = options_of(parser)
    shown = [w for w in synopsis.argv if w.startswith("--")]
    for option in shown:
        assert option in options, f"gas-giant has no option {option}"
    long_options = {s for s in options if s.startswith("--") and s != "--help"}
    assert set(shown) == long_options, f"the synopsis misses {sorted(long_options - set(shown))}"
    for option, value in zip(synopsis.argv, synopsis.argv[1:]):
        if "|" in value:
            assert set(value.split("|")) == set(options[option].choices), f"{option} {value}"


def test_cli_options_named_in_prose_exist(envfx):
    parser = doc_parser(envfx)
    commands = {name: options_of(doc_parser(envfx, name)) for name in ("info", "bend", "wind", "snow",
                                                                       "gas-giant", "mips", "lightmap", "vat",
                                                                       "farm")}
    every = set().union(*commands.values())
    mentions = doc.option_mentions(doc.all_text(exclude=("docs/benchmarks.md",)))
    assert len(mentions) >= 25
    not_ours = set(re.findall(r"`(--[\w-]+)`", flat(PROSE)[flat(PROSE).index("Options not taken over"):][:800]))
    assert {"--trap-nans", "--wstep-period", "--dump-flowmap"} <= not_ours
    for command, option in mentions:
        if option in not_ours:
            assert option not in commands["gas-giant"], f"{option} is said not to be taken over, but it is"
            continue
        if command is not None:
            assert option in commands[command], f"envfx {command} has no option {option}"
        elif option == "--puffs":
            continue  # benchmarks/bench_snow.py's (tests/core/test_readme.py)
        else:
            assert option in every, f"no envfx command has an option {option}"
    assert parser.prog == "blender -c envfx"


@pytest.mark.parametrize("argv", [
    ["bend", "x.blend", "--objects", ""], ["bend", "x.blend", "--collection", ""],
    ["bend", "x.blend", "--output", ""], ["bend", "x.blend", "--export-engines", ""],
    ["wind", "x.blend", "--remove", "--add"], ["wind", "x.blend", "--custom", "LEAF,LEAF,LEAF,LEAF"],
    ["bend", "a/level.blend", "b/level.blend", "--export-engines", "out"],
])
def test_cli_refusals_the_readme_lists(envfx, argv, tmp_path, monkeypatch, capsys):
    """"an option given empty or blank ... is refused with exit 2 ... so are options that would be ignored, like
    `wind --remove --add` or `--custom` without `--layout CUSTOM`"; two inputs of one file name with
    --export-engines are refused before any work."""
    f = flat(PROSE)
    assert '`--objects ""`, `--collection ""`, `--output ""`, `--export-engines ""`' in f
    assert "like `wind --remove --add` or `--custom` without `--layout CUSTOM`" in f
    assert "two inputs with the same file name (`a/level.blend b/level.blend`) are refused before any work" in f
    monkeypatch.chdir(tmp_path)
    for word in argv:
        if word.endswith(".blend"):
            os.makedirs(os.path.dirname(word) or ".", exist_ok=True)
            open(word, "wb").close()
    monkeypatch.setattr(envfx.cli.batch, "run_files", lambda *a, **k: pytest.fail("the arguments were not refused"))
    assert envfx.cli.main(argv) == 2
    assert capsys.readouterr().err.startswith(f"envfx {argv[0]}: error: ")


def test_cli_exit_codes_and_gas_giant_message(envfx, tmp_path, capsys):
    assert "Exit codes: 0 done, 1 the work failed, 2 bad arguments or input" in PROSE
    assert "0 done, 1 the work failed, 2 bad arguments or input" in envfx.cli.__doc__
    message = found(r"e\.g\. `(--turbulence inf: [^`]+)`", flat(PROSE)).group(1)
    assert envfx.cli.main(["gas-giant", "--out", str(tmp_path / "gg"), "--turbulence", "inf"]) == 2
    assert message in capsys.readouterr().err


def test_info_json_prints_one_object_per_scene(envfx, tmp_path, capfd):
    """`info --json` prints one JSON object per line (per scene) and nothing else on stdout; `jq .bend` works."""
    path = str(tmp_path / "level.blend")
    bpy.data.scenes.new("Level 2")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    capfd.readouterr()
    assert envfx.cli.main(["info", path, "--json"]) == 0
    lines = capfd.readouterr().out.splitlines()
    reports = [json.loads(line) for line in lines]
    assert sorted(r["scene"] for r in reports) == ["Level 2", "Scene"]
    assert all({"file", "bend", "wind", "snow"} <= set(r) for r in reports)
    assert "`blender -c envfx info levels/*.blend --json | jq .bend`" in PROSE


def test_bend_cli_choices_are_the_settings_enums(envfx):
    """`--mode PLANET` and the like: the command line takes the same values as scene.envfx.bend."""
    bend = options_of(doc_parser(envfx, "bend"))
    b = api.envfx(api.scene()).bend
    assert set(bend["--mode"].choices) == enum_items(b, "mode")
    assert set(bend["--axis"].choices) == enum_items(b, "axis")
    wind = options_of(doc_parser(envfx, "wind"))
    assert set(wind["--layout"].choices) == enum_items(api.envfx(api.scene()).wind, "channel_layout")
    preset = api.ops.wind_preset.get_rna_type().properties["preset"]
    assert set(wind["--preset"].choices) == {i.identifier for i in preset.enum_items}
    assert isinstance(wind["--height-uv"], argparse.BooleanOptionalAction)  # --no-height-uv
