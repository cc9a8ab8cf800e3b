"""Geometry-nodes group "EnvFX Wind": the live vegetation wind of ``core.wind.wind_offsets``, per frame.

One group is shared by every asset in wind. Scene settings reach it through Value nodes driven by
``scene.envfx.wind`` and the render frame rate (plain drivers: they follow keyframes during playback); the wind
source object is an Object Info node (its rotation gives the direction live) and its field strength a driver.
Per-asset settings (rigidity, bend, sway, lift, micro, ramp, main bend, the category's spring and branch
frequencies, the asset's height, grass mode) are inputs of each object's modifier, kept in sync with
``object.envfx.wind`` by ``sync_object``.

Per asset (single values) the group computes the spring-filtered gust at the asset's origin and the effective
wind; per vertex it reads ``EnvFX_Height`` and ``EnvFX_Wind`` (R leaf, G branch phase, B branch) and sums the
whole-asset bend, the branch bend/sway/lift and the leaf micro motion (plus grass ambient motion), in world
space, then turns the offset into object space. Every number and formula mirrors ``core.wind``.
"""

from __future__ import annotations

import math

import bpy

from ..core import wind as core_wind
from . import common

GROUP_NAME = "EnvFX Wind"
VERSION = 1

# Value nodes driven from the scene: label -> data path on the scene
DRIVEN = {
    "Direction": "envfx.wind.direction",
    "Strength": "envfx.wind.strength",
    "Gust Strength": "envfx.wind.gust_strength",
    "Gust Frequency": "envfx.wind.gust_frequency",
    "Loop Frames": "envfx.wind.loop_frames",
    "Ambient": "envfx.wind.ambient",
    "FPS": "render.fps",
    "FPS Base": "render.fps_base",
}

# modifier inputs: name -> (default, min, max)
ASSET_INPUTS = {
    "Rigidity": (1.0, 0.01, 100.0),
    "Bend": (1.0, -10.0, 10.0),
    "Sway": (1.0, -10.0, 10.0),
    "Lift": (1.0, -10.0, 10.0),
    "Micro": (1.0, 0.0, 10.0),
    "Ramp": (0.0, 0.0, 100.0),
    "Main Bend": (1.0, 0.0, 1.0),
    "Spring Hz": (core_wind.SPRING_HZ["TREE"], 0.01, 100.0),
    "Branch Hz": (core_wind.BRANCH_HZ["TREE"], 0.0, 100.0),
    "Asset Height": (1.0, 0.0, 1e6),
    "Grass": (0.0, 0.0, 1.0),
}

TWO_PI = 2.0 * math.pi


def _build(tree):
    b = common.Builder(tree)
    common.socket(tree, "Geometry", "INPUT", "NodeSocketGeometry")
    for name, (default, lo, hi) in ASSET_INPUTS.items():
        common.socket(tree, name, "INPUT", "NodeSocketFloat", default, lo, hi)
    common.socket(tree, "Geometry", "OUTPUT", "NodeSocketGeometry")
    gi = b.node("NodeGroupInput", "Group Input", location=(-2400, 0))
    go = b.node("NodeGroupOutput", "Group Output", location=(3000, 0))
    inp = {name: gi.outputs[name] for name in ASSET_INPUTS}

    val = {label: b.value(label, 0.0) for label in DRIVEN}
    use_source = b.value("Use Source", 0.0)
    source_strength = b.value("Source Strength", 0.0)
    for i, label in enumerate(list(DRIVEN) + ["Use Source", "Source Strength"]):
        tree.nodes[label].location = (-2400, -600 - 90 * i)

    def m(op, x, y=None, z=None):
        return b.math(op, x, y, z)

    def mul(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = m("MULTIPLY", out, x)
        return out

    def add(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = m("ADD", out, x)
        return out

    # time and loop quantisation
    scene_time = b.node("GeometryNodeInputSceneTime", "Scene Time")
    t = m("DIVIDE", mul(scene_time.outputs["Frame"], val["FPS Base"]), val["FPS"])
    period = m("DIVIDE", mul(val["Loop Frames"], val["FPS Base"]), val["FPS"])
    looped = m("GREATER_THAN", val["Loop Frames"], 0.5)

    def quant(f):
        fq = m("DIVIDE", m("MAXIMUM", m("ROUND", mul(f, period)), 1.0), period)
        return add(f, mul(looped, m("SUBTRACT", fq, f)))

    def wave(f, phase):
        """sin(2 pi f t + phase) with f already quantised."""
        return m("SINE", add(mul(f, t, TWO_PI), phase))

    # asset origin and matrix
    self_obj = b.node("GeometryNodeSelfObject", "Self")
    self_info = b.node("GeometryNodeObjectInfo", "Self Info", transform_space="ORIGINAL")
    b.link(self_obj.outputs[0], self_info.inputs["Object"])
    sep_o = b.node("ShaderNodeSeparateXYZ", "Origin XYZ")
    b.link(self_info.outputs["Location"], sep_o.inputs[0])
    ox, oy = sep_o.outputs["X"], sep_o.outputs["Y"]
    invert = b.node("FunctionNodeInvertMatrix", "Invert")
    b.link(self_info.outputs["Transform"], invert.inputs[0])

    # wind direction (horizontal, unit) and strength: scene settings or the source object
    a = val["Direction"]
    d_scene = b.combine_xyz(m("COSINE", a), m("SINE", a), 0.0, label="Scene Dir")
    src_info = b.node("GeometryNodeObjectInfo", "Source", transform_space="ORIGINAL")
    d_field = b.node("FunctionNodeTransformDirection", "Source Z")
    d_field.inputs["Direction"].default_value = (0.0, 0.0, 1.0)
    b.link(src_info.outputs["Transform"], d_field.inputs["Transform"])
    mix = b.vmath("ADD", d_scene, b.vmath("SCALE", b.vmath("SUBTRACT", d_field.outputs[0], d_scene), scale=use_source))
    flat = b.vmath("MULTIPLY", mix, b.vector("Flatten", (1.0, 1.0, 0.0)))
    d = b.vmath("NORMALIZE", flat, label="Wind Dir")
    sep_d = b.node("ShaderNodeSeparateXYZ", "Dir XYZ")
    b.link(d, sep_d.inputs[0])
    across = b.combine_xyz(m("MULTIPLY", sep_d.outputs["Y"], -1.0), sep_d.outputs["X"], 0.0, label="Across")
    strength = add(val["Strength"], mul(use_source, m("SUBTRACT", source_strength, val["Strength"])))

    # spring-filtered gust at the origin and the effective wind
    f0 = inp["Spring Hz"]
    f0sq = mul(f0, f0)
    gust = None
    for amp, mult, ph, (wx, wy) in zip(core_wind.GUST_AMPS, core_wind.GUST_MULTS, core_wind.GUST_PHASES,
                                        core_wind.GUST_WAVES):
        f = quant(mul(val["Gust Frequency"], mult))
        gain = m("DIVIDE", f0sq, add(f0sq, mul(f, f)))
        lag = mul(m("ARCTANGENT", m("DIVIDE", f, f0)), 2.0)
        phase = m("SUBTRACT", add(mul(ox, wx), mul(oy, wy), ph), lag)
        term = mul(wave(f, phase), amp, gain)
        gust = term if gust is None else add(gust, term)
    w = m("MAXIMUM", mul(strength, add(mul(val["Gust Strength"], gust), 1.0)), 0.0)
    k = inp["Ramp"]
    eff = m("DIVIDE", mul(w, add(k, 1.0)), add(mul(k, w), 1.0))
    c = m("DIVIDE", 1.0, inp["Rigidity"])
    hs = inp["Asset Height"]
    ceh = mul(c, eff, hs)

    # per vertex
    h_attr = b.node("GeometryNodeInputNamedAttribute", "Height Attr", data_type="FLOAT")
    h_attr.inputs["Name"].default_value = "EnvFX_Height"
    h = h_attr.outputs["Attribute"]
    col_attr = b.node("GeometryNodeInputNamedAttribute", "Wind Attr", data_type="FLOAT_COLOR")
    col_attr.inputs["Name"].default_value = "EnvFX_Wind"
    sep_c = b.node("FunctionNodeSeparateColor", "Wind RGBA")
    b.link(col_attr.outputs["Attribute"], sep_c.inputs[0])
    r_leaf, g_phase, b_branch = sep_c.outputs["Red"], sep_c.outputs["Green"], sep_c.outputs["Blue"]
    position = b.node("GeometryNodeInputPosition", "Position").outputs[0]

    main = mul(inp["Main Bend"], ceh, core_wind.MAIN_SCALE, h, h)
    psi = mul(g_phase, TWO_PI)
    osc = []
    for i, mult in enumerate(core_wind.BRANCH_MULTS):
        fb = quant(mul(inp["Branch Hz"], mult))
        osc.append(wave(fb, add(mul(psi, float(i + 1)), core_wind.BRANCH_PHASES[i])))
    bamp = mul(ceh, core_wind.BRANCH_SCALE, b_branch)
    along = add(main, mul(inp["Bend"], bamp, add(mul(osc[0], 0.3), 1.0)))
    side = mul(inp["Sway"], bamp, 0.5, osc[1])
    lift = mul(inp["Lift"], bamp, 0.4, osc[2])
    off = b.vmath("ADD", b.vmath("SCALE", d, scale=along), b.vmath("SCALE", across, scale=side))

    mamp = mul(inp["Micro"], ceh, core_wind.MICRO_SCALE, r_leaf)
    micro = []
    for fm, wv in zip(core_wind.MICRO_HZ, core_wind.MICRO_WAVES):
        dot = b.vmath("DOT_PRODUCT", position, b.vector("Micro Wave", wv))
        micro.append(mul(mamp, wave(quant(fm), add(dot, psi))))

    # grass ambient figure-eight, per asset
    grass_amp = mul(inp["Grass"], val["Ambient"], core_wind.AMBIENT_SCALE, hs, h)
    po = add(mul(ox, core_wind.OBJECT_PHASE[0]), mul(oy, core_wind.OBJECT_PHASE[1]))
    e8x = mul(grass_amp, wave(quant(core_wind.AMBIENT_HZ), po))
    e8y = mul(grass_amp, 0.5, wave(quant(2.0 * core_wind.AMBIENT_HZ), mul(po, 2.0)))
    extra = b.combine_xyz(add(micro[0], e8x), add(micro[1], e8y), add(micro[2], lift), label="Extra")
    world_off = b.vmath("ADD", off, extra, label="World Offset")
    to_local = b.node("FunctionNodeTransformDirection", "To Object")
    b.link(world_off, to_local.inputs["Direction"])
    b.link(invert.outputs[0], to_local.inputs["Transform"])

    # grass wobble along the normal (object space)
    normal = b.node("GeometryNodeInputNormal", "Normal").outputs[0]
    wdot = b.vmath("DOT_PRODUCT", position, b.vector("Wobble Wave", core_wind.WOBBLE_WAVE))
    wamp = mul(inp["Grass"], val["Ambient"], core_wind.WOBBLE_SCALE, hs, h, wave(quant(core_wind.WOBBLE_HZ), wdot))
    local = b.vmath("ADD", to_local.outputs[0], b.vmath("SCALE", normal, scale=wamp), label="Local Offset")

    set_pos = b.node("GeometryNodeSetPosition", "Set Position", location=(2800, 0))
    b.link(gi.outputs["Geometry"], set_pos.inputs["Geometry"])
    b.link(local, set_pos.inputs["Offset"])
    b.link(set_pos.outputs[0], go.inputs["Geometry"])


def ensure_wind(scene) -> bpy.types.NodeTree:
    """The shared "EnvFX Wind" group, wired to the scene's wind settings and source object."""
    tree = common.ensure_tree(GROUP_NAME, "GeometryNodeTree", str(VERSION), _build)
    sync(scene, tree)
    return tree


def _driver(tree, label, id_type, target_id, data_path):
    path = f'nodes["{label}"].outputs[0].default_value'
    fcurve = tree.driver_add(path)
    driver = fcurve.driver
    driver.type = "AVERAGE"
    while driver.variables:
        driver.variables.remove(driver.variables[0])
    var = driver.variables.new()
    var.name = "v"
    var.type = "SINGLE_PROP"
    var.targets[0].id_type = id_type
    var.targets[0].id = target_id
    var.targets[0].data_path = data_path


def sync(scene, tree=None):
    """Point the group's drivers at ``scene`` and its Source node at the scene's wind object."""
    tree = tree or bpy.data.node_groups.get(GROUP_NAME)
    if tree is None:
        return None
    drivers = {fc.data_path: fc for fc in tree.animation_data.drivers} if tree.animation_data else {}
    for label, prop in DRIVEN.items():
        fcurve = drivers.get(f'nodes["{label}"].outputs[0].default_value')
        target = fcurve.driver.variables[0].targets[0] if fcurve and fcurve.driver.variables else None
        if target is None or target.id != scene or target.data_path != prop:
            tree.nodes[label].outputs[0].default_value = float(scene.path_resolve(prop))
            _driver(tree, label, "SCENE", scene, prop)
    source = source_object(scene)
    node = tree.nodes["Source"]
    if node.inputs["Object"].default_value != source:
        node.inputs["Object"].default_value = source
    tree.nodes["Use Source"].outputs[0].default_value = 1.0 if source is not None else 0.0
    path = 'nodes["Source Strength"].outputs[0].default_value'
    if source is not None:
        fcurve = drivers.get(path)
        target = fcurve.driver.variables[0].targets[0] if fcurve and fcurve.driver.variables else None
        if target is None or target.id != source:
            tree.nodes["Source Strength"].outputs[0].default_value = float(source.field.strength)
            _driver(tree, "Source Strength", "OBJECT", source, "field.strength")
    elif path in drivers:
        tree.driver_remove(path)
    return tree


def source_object(scene):
    """The scene's wind object when it is set, still in the scene and a Wind force field; else None."""
    obj = scene.envfx.wind.source_object
    if obj is None or scene.objects.get(obj.name) is not obj:
        return None
    if obj.field is None or obj.field.type != "WIND":
        return None
    return obj


def params_from_scene(scene) -> core_wind.SceneWind:
    """The scene's wind as ``core.wind.SceneWind`` (direction and strength from the source object if any)."""
    s = scene.envfx.wind
    source = source_object(scene)
    if source is not None:
        z_axis = source.matrix_world.to_3x3().col[2]
        direction, strength = (z_axis[0], z_axis[1], 0.0), source.field.strength
    else:
        direction, strength = (math.cos(s.direction), math.sin(s.direction), 0.0), s.strength
    return core_wind.SceneWind(
        direction=direction, strength=strength, gust_strength=s.gust_strength, gust_frequency=s.gust_frequency,
        loop_frames=s.loop_frames, fps=scene.render.fps / scene.render.fps_base, ambient=s.ambient)


def asset_params(obj) -> core_wind.AssetWind:
    w = obj.envfx.wind
    return core_wind.AssetWind(
        category=w.category, rigidity=w.rigidity, bend=w.bend, sway=w.sway, lift=w.lift, micro=w.micro,
        ramp=w.ramp, main_bend=w.main_bend, asset_height=w.asset_height)


def asset_input_values(obj) -> dict:
    """Modifier input values for ``obj`` from ``object.envfx.wind``."""
    w = obj.envfx.wind
    return {
        "Rigidity": w.rigidity, "Bend": w.bend, "Sway": w.sway, "Lift": w.lift, "Micro": w.micro, "Ramp": w.ramp,
        "Main Bend": 1.0 if w.main_bend else 0.0,
        "Spring Hz": core_wind.SPRING_HZ[w.category], "Branch Hz": core_wind.BRANCH_HZ[w.category],
        "Asset Height": w.asset_height, "Grass": 1.0 if w.category == "GRASS" else 0.0,
    }


def sync_object(obj, tree=None):
    """Copy ``object.envfx.wind`` into the object's wind modifier inputs."""
    tree = tree or bpy.data.node_groups.get(GROUP_NAME)
    if tree is None:
        return
    mod = common.modifier_for(obj, tree)
    if mod is None:
        return
    for name, value in asset_input_values(obj).items():
        ident = common.input_identifier(tree, name)
        if mod[ident] != value:
            mod[ident] = float(value)
    obj.update_tag()
