"""Wind on the GPU: the live wind of ``core.wind.wind_offsets`` as vertex displacement in an object's materials.

A game moves its vegetation in the vertex shader; Eevee and Cycles can too (``gpu_displace``). An object with Wind
on GPU (``object.envfx.wind.gpu``) has no wind modifier: its materials get the shader group "EnvFX Wind GPU", which
computes the wind's object-space offset of each vertex from the hidden per-vertex data the wind writes on the mesh
(``core.wind.LIVE_ATTRS``) and hands it to the Material Output as an object-space vector displacement. A frame
change computes nothing for it on the CPU beyond the group's few drivers, however many vertices it has.

One group serves the file. Its scene numbers come from the scene being drawn (context-property drivers): the loop
time, the quantised gust frequencies, the wind's direction and strength from the scene's wind clock
(``wind_rigid``: the clock follows the scene's settings or its wind object), the gust strength and the loop from
the scene's settings. Per object it reads the asset's settings from object properties (``GATE`` and ``PARAMS``,
kept by ``sync_object``), its origin and matrix from the object being drawn, so it computes the gust at the asset's
origin, the effective wind and every oscillator as the modifier's group does, then per vertex the swing and the
motion that keeps lengths (``core.wind.keep_lengths``). Objects without ``GATE`` do not move, so a material may be
shared with objects that are not in the wind this way. Grass is not drawn this way: each blade takes its own wind
(``core.wind.blade_wind``) from face data, which the modifier computes.
"""

from __future__ import annotations

import math

import bpy

from .. import bridge
from ..core import wind as core_wind
from . import common, gpu_displace
from . import wind_rigid

GROUP_NAME = "EnvFX Wind GPU"
KIND = "wind_gpu"
VERSION = "1"
GATE = "envfx_wind_gpu"  # object property: the asset's height; present: the object moves in its materials
PARAMS = ("envfx_wind_gpu_a", "envfx_wind_gpu_b", "envfx_wind_gpu_c")  # (rigidity, bend, sway), (lift, micro,
# ramp), (main bend, spring Hz, branch Hz)
MATERIAL_KEY = gpu_displace.KEYS[1]  # material property: its state before (JSON)
NODE_NAME = "EnvFX Wind GPU"
ADD_NAME = "EnvFX Wind GPU Add"

_CLOCK = common.scene_key(wind_rigid.KIND)
# the context-property variables of the group's drivers: name -> path on the scene being drawn
_VARIABLES = {
    "t": f'["{_CLOCK}"]["{wind_rigid.TIME_PROP}"][0]',
    **{f"q{i + 1}": f'["{_CLOCK}"]["{wind_rigid.TIME_PROP}"][{i + 1}]' for i in range(3)},
    "dx": f'["{_CLOCK}"]["{wind_rigid.CLOCK_PROP}"][0]', "dy": f'["{_CLOCK}"]["{wind_rigid.CLOCK_PROP}"][1]',
    "s": f'["{_CLOCK}"]["{wind_rigid.CLOCK_PROP}"][2]',
    "g": "envfx.wind.gust_strength", "L": "envfx.wind.loop_frames", "fps": "render.fps", "fpsb": "render.fps_base",
}
_PERIOD = "L*fpsb/fps"


def _quantized(freq: float) -> str:
    return f"max(floor({freq!r}*{_PERIOD}+0.5),1)/({_PERIOD}) if L>0.5 else {freq!r}"


# the group's Value nodes: label -> the expression their driver computes once a frame
DRIVEN = {
    "T": "t", "Q1": "q1", "Q2": "q2", "Q3": "q3", "Dx": "dx", "Dy": "dy", "S": "s", "G": "g",
    "Period": f"{_PERIOD} if L>0.5 else 1", "Looped": "1 if L>0.5 else 0",
    **{f"M{j + 1}": _quantized(f) for j, f in enumerate(core_wind.MICRO_HZ)},
}


def group() -> bpy.types.ShaderNodeTree | None:
    """The file's group, or None."""
    for tree in bpy.data.node_groups:
        if isinstance(tree, bpy.types.ShaderNodeTree) and tree.get(common.KIND_KEY) == KIND and tree.library is None:
            return tree
    return None


def ensure_group() -> bpy.types.ShaderNodeTree:
    """The file's group, built when missing or outdated."""
    tree = group()
    if tree is None:
        tree = bpy.data.node_groups.new(GROUP_NAME, "ShaderNodeTree")  # pyright: ignore[reportArgumentType]
        tree[common.KIND_KEY] = KIND
    if tree.get(common.STAMP_KEY) != VERSION:
        common.clear_tree(tree)
        _build(tree)
        tree[common.STAMP_KEY] = VERSION
    return tree  # pyright: ignore[reportReturnType] -- made as a ShaderNodeTree


def _drive(tree, label: str, expression: str) -> None:
    fcurve = tree.driver_add(common.value_path(label))
    common.straighten(fcurve)
    driver = fcurve.driver
    driver.type = "SCRIPTED"
    words = set(expression.replace("(", " ").replace(")", " ").replace("*", " ").replace("/", " ")
                .replace("+", " ").replace(",", " ").replace(">", " ").split())
    for name, path in _VARIABLES.items():
        if name in words:
            var = driver.variables.new()
            var.name = name
            var.type = "CONTEXT_PROP"
            var.targets[0].context_property = "ACTIVE_SCENE"
            var.targets[0].data_path = path
    driver.expression = expression


def _build(tree) -> None:
    b = common.Builder(tree)
    common.socket(tree, "Displacement", "OUTPUT", "NodeSocketVector")
    out = b.node("NodeGroupOutput", "Group Output", location=(4000, 0))
    val = {label: b.value(label, 0.0) for label in DRIVEN}
    for i, (label, expression) in enumerate(DRIVEN.items()):
        tree.nodes[label].location = (-1400, -120 * i)
        _drive(tree, label, expression)
    m = b.math

    def sep(vec, label):
        node = b.node("ShaderNodeSeparateXYZ", label)
        b.link(vec, node.inputs[0])
        return node.outputs["X"], node.outputs["Y"], node.outputs["Z"]

    def attr(name, kind, label):
        return b.node("ShaderNodeAttribute", label, attribute_type=kind, attribute_name=name)

    def to_object(vec, label):  # a world direction in object space (the inverse of the object's 3x3 matrix)
        node = b.node("ShaderNodeVectorTransform", label, vector_type="VECTOR", convert_from="WORLD",
                      convert_to="OBJECT")
        b.feed(node.inputs[0], vec)
        return node.outputs[0]

    def quantize(freq, label):  # core.wind.quantize with the loop's period (Period 1 without a loop)
        rounded = m("MAXIMUM", m("FLOOR", m("MULTIPLY_ADD", freq, val["Period"], 0.5)), 1.0)
        looped = m("DIVIDE", rounded, val["Period"])
        return m("ADD", freq, m("MULTIPLY", m("SUBTRACT", looped, freq), val["Looped"]), label=label)

    # --- the asset's settings and place ---
    gate = attr(GATE, "OBJECT", "Height").outputs["Fac"]  # (0 for an object not on the GPU: nothing moves)
    rig, bend_s, sway_s = sep(attr(PARAMS[0], "OBJECT", "Rigidity Bend Sway").outputs["Vector"], "Asset A")
    lift_s, micro_s, ramp = sep(attr(PARAMS[1], "OBJECT", "Lift Micro Ramp").outputs["Vector"], "Asset B")
    main_on, spring, branch_hz = sep(attr(PARAMS[2], "OBJECT", "Main Spring Branch").outputs["Vector"], "Asset C")
    info = b.node("ShaderNodeObjectInfo", "Object Info")
    ox, oy, _oz = sep(info.outputs["Location"], "Origin")

    # --- the gust at the origin, spring-filtered (core.wind.gust), and the effective wind ---
    gust = 0.0
    for i, (amp, ph, wave) in enumerate(zip(core_wind.GUST_AMPS, core_wind.GUST_PHASES, core_wind.GUST_WAVES)):
        q = val[f"Q{i + 1}"]
        ratio = m("DIVIDE", q, spring, label=f"Gust {i + 1} Ratio")
        gain = m("DIVIDE", amp, m("MULTIPLY_ADD", ratio, ratio, 1.0), label=f"Gust {i + 1} Gain")
        spatial = m("MULTIPLY_ADD", ox, wave[0], m("MULTIPLY", oy, wave[1]))
        angle = m("ADD", m("MULTIPLY_ADD", m("MULTIPLY", q, 2.0 * math.pi), val["T"], spatial),
                  m("SUBTRACT", ph, m("MULTIPLY", m("ARCTANGENT", ratio), 2.0)), label=f"Gust {i + 1} Angle")
        term = m("MULTIPLY", gain, m("SINE", angle))
        gust = term if i == 0 else m("ADD", gust, term)
    raw = m("MAXIMUM", m("MULTIPLY", val["S"], m("MULTIPLY_ADD", val["G"], gust, 1.0)), 0.0, label="Wind")
    eff = m("DIVIDE", m("MULTIPLY", raw, m("ADD", ramp, 1.0)), m("MULTIPLY_ADD", ramp, raw, 1.0), label="Effective")
    k = m("DIVIDE", m("MULTIPLY", eff, gate), rig, label="K")
    main = m("MULTIPLY", m("MULTIPLY", k, main_on), core_wind.MAIN_SCALE, label="Main")
    bend = m("MULTIPLY", m("MULTIPLY", k, bend_s), core_wind.BRANCH_SCALE, label="Bend")

    # --- branch oscillations along the wind, across it and up (core.wind.live_terms) ---
    d = b.combine_xyz(val["Dx"], val["Dy"], 0.0, label="Wind Dir")
    across = b.combine_xyz(m("MULTIPLY", val["Dy"], -1.0), val["Dx"], 0.0, label="Across")
    amps = (m("MULTIPLY", bend, 0.3), m("MULTIPLY", m("MULTIPLY", k, sway_s), 0.5 * core_wind.BRANCH_SCALE),
            m("MULTIPLY", m("MULTIPLY", k, lift_s), 0.4 * core_wind.BRANCH_SCALE))
    vc = vs = None
    for j, (mult, ph, amp, axis) in enumerate(zip(core_wind.BRANCH_MULTS, core_wind.BRANCH_PHASES, amps,
                                                  (d, across, (0.0, 0.0, 1.0)))):
        f = quantize(m("MULTIPLY", branch_hz, mult), f"Branch {j + 1} Hz")
        arg = m("MULTIPLY_ADD", m("MULTIPLY", f, 2.0 * math.pi), val["T"], ph, label=f"Branch {j + 1} Angle")
        sin_part = b.vmath("SCALE", axis, scale=m("MULTIPLY", amp, m("SINE", arg)))
        cos_part = b.vmath("SCALE", axis, scale=m("MULTIPLY", amp, m("COSINE", arg)))
        vc = sin_part if vc is None else b.vmath("ADD", vc, sin_part)
        vs = cos_part if vs is None else b.vmath("ADD", vs, cos_part)
    d_l, vc_l, vs_l = to_object(d, "Dir Local"), to_object(vc, "Vc Local"), to_object(vs, "Vs Local")
    up_l = to_object((0.0, 0.0, 1.0), "Up Local")

    # --- leaf flutter per object axis ---
    mamp = m("MULTIPLY", m("MULTIPLY", k, micro_s), core_wind.MICRO_SCALE, label="Micro Amp")
    margs = [m("MULTIPLY_ADD", m("MULTIPLY", val[f"M{j + 1}"], 2.0 * math.pi), val["T"], ph)
             for j, ph in enumerate(core_wind.MICRO_PHASES)]
    mc = b.vmath("SCALE", b.combine_xyz(*(m("SINE", a) for a in margs)), scale=mamp, label="Mc")
    ms = b.vmath("SCALE", b.combine_xyz(*(m("COSINE", a) for a in margs)), scale=mamp, label="Ms")

    # --- per vertex: the swing (core.wind.wind_swing), then motion that keeps lengths (core.wind.keep_lengths) ---
    names = core_wind.LIVE_ATTRS
    ba, bac, bas = sep(attr(names[0], "GEOMETRY", "Branch").outputs["Vector"], "Branch XYZ")
    rc, rs, h2 = sep(attr(names[1], "GEOMETRY", "Leaf").outputs["Vector"], "Leaf XYZ")
    rel = attr(names[3], "GEOMETRY", "Pivot").outputs["Vector"]
    ha = attr(names[4], "GEOMETRY", "Carry").outputs["Fac"]
    along = m("MULTIPLY_ADD", h2, main, m("MULTIPLY", ba, bend), label="Along")
    swing = b.vmath("SCALE", d_l, scale=along)
    for weight, vec in ((bac, vc_l), (bas, vs_l), (rc, mc), (rs, ms)):
        swing = b.vmath("ADD", swing, b.vmath("SCALE", vec, scale=weight))
    q = b.vmath("ADD", rel, swing, label="Swung")
    ratio = m("DIVIDE", b.vmath("LENGTH", rel), b.vmath("LENGTH", q), label="Keep")  # (0 / 0 is 0)
    turned = b.vmath("SUBTRACT", b.vmath("SCALE", q, scale=ratio), rel, label="Turned")
    lean = b.vmath("ADD", up_l, b.vmath("SCALE", d_l, scale=m("DIVIDE", m("MULTIPLY", ha, main), gate)), label="Lean")
    chord = b.vmath("SUBTRACT", b.vmath("NORMALIZE", lean), b.vmath("NORMALIZE", up_l))
    carry = b.vmath("SCALE", chord, scale=m("MULTIPLY", m("MULTIPLY", ha, gate), b.vmath("LENGTH", up_l)),
                    label="Carry")
    offset = b.vmath("ADD", turned, carry, label="Offset")
    vector = b.node("ShaderNodeVectorDisplacement", "Object Displacement", space="OBJECT")
    b.link(offset, vector.inputs["Vector"])
    vector.inputs["Midlevel"].default_value = 0.0
    vector.inputs["Scale"].default_value = 1.0  # (Blender 5.0's default is 0.01)
    b.link(vector.outputs[0], out.inputs[0])


# --- objects and materials ------------------------------------------------------------------------------------

def is_gpu_wind(obj: bpy.types.Object) -> bool:
    return GATE in obj


def object_values(obj: bpy.types.Object) -> dict[str, float | tuple[float, float, float]]:
    """The object properties the group reads for ``obj`` (``GATE``, ``PARAMS``) from ``object.envfx.wind``."""
    w = bridge.envfx_settings(obj).wind
    return {GATE: float(w.asset_height),
            PARAMS[0]: (float(w.rigidity), float(w.bend), float(w.sway)),
            PARAMS[1]: (float(w.lift), float(w.micro), float(w.ramp)),
            PARAMS[2]: (1.0 if w.main_bend else 0.0, core_wind.SPRING_HZ[w.category],
                        core_wind.BRANCH_HZ[w.category])}


def sync_object(obj: bpy.types.Object) -> None:
    """After ``object.envfx.wind`` changed: the properties the group reads follow (an object on the GPU only)."""
    if not is_gpu_wind(obj) or obj.library is not None:
        return
    changed = False
    for key, value in object_values(obj).items():
        now = obj.get(key)
        now = tuple(now) if hasattr(now, "__len__") else now
        if now != value:
            obj[key] = value
            changed = True
    if changed:
        obj.update_tag()


def material_reason(mat: bpy.types.Material | None) -> str | None:
    """Why ``mat`` cannot take the wind on the GPU, with what to do; None when it can (or already does)."""
    return gpu_displace.material_reason(mat, MATERIAL_KEY, "the wind", "Wind on GPU")


def materials_of(obj: bpy.types.Object) -> list:
    """The materials of ``obj``'s slots (None for an empty slot), each once, in slot order."""
    return list(dict.fromkeys(slot.material for slot in obj.material_slots))


def reach_of(obj: bpy.types.Object) -> float:
    """How far (metres) the wind may move a vertex of ``obj``: about its size (a vertex keeps its distance from its
    attach point, and a branch is carried by at most the asset's height), with room to spare."""
    size = max(obj.dimensions[i] for i in range(3))
    height = bridge.envfx_settings(obj).wind.asset_height * max(abs(obj.scale[i]) for i in range(3))
    return 2.0 * max(size, height) + 0.1


def add(obj: bpy.types.Object, tree: bpy.types.ShaderNodeTree) -> None:
    """Move ``obj`` in its materials (check ``material_reason`` for each first; its mesh holds the live data):
    the group in every material, its settings as the properties the group reads."""
    reach = reach_of(obj)
    for mat in materials_of(obj):
        gpu_displace.apply(mat, tree, reach, MATERIAL_KEY, NODE_NAME, ADD_NAME)
    for key, value in object_values(obj).items():
        obj[key] = value
    obj.update_tag()


def remove(obj: bpy.types.Object) -> None:
    """Take ``obj`` out of the wind on the GPU (its materials let go in ``release``)."""
    for key in (GATE, *PARAMS):
        if key in obj:
            del obj[key]
    obj.update_tag()


def release() -> None:
    """Give back every material no object in the wind on the GPU uses any more (and remove the group when nothing
    is)."""
    used = {m for o in bpy.data.objects if is_gpu_wind(o) for m in materials_of(o)}
    for mat in bpy.data.materials:
        if MATERIAL_KEY in mat and mat not in used and mat.library is None:
            gpu_displace.restore(mat, MATERIAL_KEY, NODE_NAME, ADD_NAME)
    if not any(is_gpu_wind(o) for o in bpy.data.objects):
        tree = group()
        if tree is not None and not tree.use_fake_user:
            bpy.data.node_groups.remove(tree)


def keep_clock(scene: bpy.types.Scene) -> bool:
    """(depsgraph_update_post) Give ``scene`` a clock when it shows objects in the wind on the GPU and has none of
    its own (an object appended from another file, a full copy of a scene, a deleted clock): the group reads the
    clock of the scene being drawn. Cheap when nothing is to do; returns whether a clock was made."""
    if scene.library is not None or wind_rigid.clock_of(scene) is not None or group() is None:
        return False
    if not any(is_gpu_wind(o) for o in scene.objects):
        return False
    wind_rigid.ensure_clock(scene)
    revive()
    return True


def revive() -> None:
    """Evaluate the group's drivers again (Blender stops evaluating a driver that failed: one that read a scene
    with no clock)."""
    for tree in [t for t in bpy.data.node_groups if t.get(common.KIND_KEY) == KIND and t.library is None]:
        for fcurve in tree.animation_data.drivers if tree.animation_data is not None else ():
            common.revive(fcurve)
        tree.update_tag()


def reason(obj: bpy.types.Object) -> str | None:
    """Why ``obj`` cannot take the wind on the GPU (besides what any wind needs), with what to do; None when it
    can."""
    if bridge.envfx_settings(obj).wind.category == "GRASS":
        return ("it is grass: each blade takes its own wind and the actors' push from face data, which only the "
                "wind's modifier computes; switch Wind on GPU off for grass")
    if not obj.material_slots:
        return ("it has no material: Wind on GPU moves an object in its materials; give it one, or switch Wind on "
                "GPU off to move it with the modifier")
    for mat in materials_of(obj):
        why = material_reason(mat)
        if why is not None:
            return why
    return None

