"""Bend on the GPU: the world bend of ``core.bend.drop`` as vertex displacement in an object's materials.

Games bend their world in the vertex shader; Eevee and Cycles can too: a material whose Displacement output is
linked (method Displacement Only, or Displacement and Bump) moves its vertices on the GPU as it draws them. An
object with Bend on GPU (``object.envfx.bend_gpu``) has no bend modifier: its materials get the shader group "EnvFX
Bend GPU", which computes the drop of the undisplaced world position and hands it to the Material Output as a
world-space vector displacement. So a frame change computes nothing for it on the CPU, however many objects and
vertices; what draws it (the viewport's Material Preview and Rendered modes, Eevee and Cycles renders) bends it.

One group serves the file. Its numbers come from the scene being drawn (context-property drivers of the scene's
``envfx.bend``; the mode and axis are numbers too, so the group's nodes never change): the strength, spreads and
horizon offset, and the pivot's world position through the scene's ``PIVOT_KEY`` (the pivot, or a hidden empty at
the origin without one; ``sync_scene`` keeps it so). Only objects carrying ``GATE`` (an object property the group
reads) bend, so a material may be shared with objects that are not bent this way. Each material keeps what it
was (``MATERIAL_KEY``: its displacement method, its Displacement links, on Blender 5.0 its maximum vertex
displacement) and gets it back exactly when no object bent on the GPU uses it any more (``release``).
"""

from __future__ import annotations

import bpy

from ..core import bend as core_bend
from . import common, gpu_displace

GROUP_NAME = "EnvFX Bend GPU"
KIND = "bend_gpu"
VERSION = "2"  # 2: the input "Moved" (the wind on the GPU before the bend)
MOVED = "Moved"  # the group's input: the displacement before the bend (the wind on the GPU's; object space)
WIND_NODE_NAME = "EnvFX Wind GPU"  # (shader_nodes.wind_gpu.NODE_NAME: the wind's nodes in the same materials)
GATE = "envfx_bend_gpu"  # object property: 1 bends the object in its materials (0 or missing: not)
PIVOT_KEY = "envfx_bend_gpu_pivot"  # scene property: the object whose world position the group takes as pivot
ORIGIN_NAME = ".EnvFX Bend GPU Origin"  # that object for a scene without a pivot: an empty at the origin
MATERIAL_KEY = gpu_displace.KEYS[0]  # material property: its state before (JSON)
NODE_NAME = "EnvFX Bend GPU"
ADD_NAME = "EnvFX Bend GPU Add"

# the context-property variables of the group's drivers: name -> path on the scene being drawn
_VARIABLES = {
    "st": "envfx.bend.strength", "sst": "envfx.bend.side_strength", "sp": "envfx.bend.spread",
    "sd": "envfx.bend.side_spread", "ho": "envfx.bend.horizon_offset", "en": "envfx.bend.enabled",
    "md": "envfx.bend.mode", "ax": "envfx.bend.axis",
    "px": f'["{PIVOT_KEY}"].matrix_world[3][0]', "py": f'["{PIVOT_KEY}"].matrix_world[3][1]',
}
_MODE = {m: i for i, m in enumerate(core_bend.MODES)}  # the enum's order in props/bend.py
_AXIS = {a: i for i, a in enumerate(core_bend.AXES)}
_FX = f"(1 if ax == {_AXIS['POS_X']} else (-1 if ax == {_AXIS['NEG_X']} else 0))"
_FY = f"(1 if ax == {_AXIS['POS_Y']} else (-1 if ax == {_AXIS['NEG_Y']} else 0))"
# the group's Value nodes: label -> the expression their driver computes once a frame
DRIVEN = {
    "Fx": _FX, "Fy": _FY, "Gx": f"-{_FY}", "Gy": _FX,
    "Cx": f"px + ho * {_FX}", "Cy": f"py + ho * {_FY}",
    "Spread": "sp",
    "Side Spread": f"sp if md == {_MODE['CYLINDER']} else sd",
    "A Along": f"st if en and md in ({_MODE['RUNNER']}, {_MODE['RUNNER_2AXIS']}) else 0",
    "A Across": f"(st if md == {_MODE['CYLINDER']} else (sst if md == {_MODE['RUNNER_2AXIS']} else 0)) if en else 0",
    "A Radius": f"st if en and md == {_MODE['PLANET']} else 0",
}


def group() -> bpy.types.ShaderNodeTree | None:
    """The file's group, or None."""
    return gpu_displace.file_group(KIND)


def ensure_group() -> bpy.types.ShaderNodeTree:
    """The file's group, built when missing or outdated."""
    return gpu_displace.ensure_file_group(KIND, GROUP_NAME, VERSION, _build)


def _build(tree) -> None:
    b = common.Builder(tree)
    common.socket(tree, "Displacement", "OUTPUT", "NodeSocketVector")
    common.socket(tree, MOVED, "INPUT", "NodeSocketVector", default=(0.0, 0.0, 0.0),
                  description="Displacement before the bend (the wind on the GPU's, as a Material Output takes it: "
                              "object space): the bend is taken where it moved the vertex, as the modifiers sway "
                              "and then bend")
    out = b.node("NodeGroupOutput", "Group Output", location=(1400, 0))
    gin = b.node("NodeGroupInput", "Group Input", location=(-1200, 500))
    value = {label: b.value(label, 0.0) for label in DRIVEN}
    for i, label in enumerate(DRIVEN):
        tree.nodes[label].location = (-1200, -120 * i)
        fcurve = tree.driver_add(common.value_path(label))
        common.straighten(fcurve)
        driver = fcurve.driver
        driver.type = "SCRIPTED"
        for name, path in _VARIABLES.items():
            var = driver.variables.new()
            var.name = name
            var.type = "CONTEXT_PROP"
            var.targets[0].context_property = "ACTIVE_SCENE"
            var.targets[0].data_path = path
        driver.expression = DRIVEN[label]
    geometry = b.node("ShaderNodeNewGeometry", "Geometry", location=(-1000, 300))
    sep = b.node("ShaderNodeSeparateXYZ", "Position XYZ")
    moved = b.vmath("ADD", geometry.outputs["Position"], gin.outputs[MOVED], label="Moved Position")
    b.link(moved, sep.inputs[0])  # world space, as drawn before any displacement, moved by the wind
    rx = b.math("SUBTRACT", sep.outputs["X"], value["Cx"], label="Rel X")
    ry = b.math("SUBTRACT", sep.outputs["Y"], value["Cy"], label="Rel Y")

    def dot2(ux, uy, label):
        return b.math("MULTIPLY_ADD", rx, ux, b.math("MULTIPLY", ry, uy), label=label)

    def falloff(coord, spread, label):  # max(|coord| - spread, 0)^2
        d = b.math("MAXIMUM", b.math("SUBTRACT", b.math("ABSOLUTE", coord), spread), 0.0, label=f"{label} Beyond")
        return b.math("MULTIPLY", d, d, label=f"{label} Sq")

    along = falloff(dot2(value["Fx"], value["Fy"], "Along"), value["Spread"], "Along")
    across = falloff(dot2(value["Gx"], value["Gy"], "Across"), value["Side Spread"], "Across")
    radius = b.math("SQRT", dot2(rx, ry, "Radius Sq"), label="Radius")
    radial = falloff(radius, value["Spread"], "Radius")
    drop = b.math("MULTIPLY_ADD", along, value["A Along"],
                  b.math("MULTIPLY_ADD", across, value["A Across"], b.math("MULTIPLY", radial, value["A Radius"])),
                  label="Drop")
    gate = b.node("ShaderNodeAttribute", "Gate", attribute_type="OBJECT", attribute_name=GATE)
    down = b.math("MULTIPLY", b.math("MULTIPLY", drop, gate.outputs["Fac"]), -1.0, label="Down")
    vector = b.node("ShaderNodeVectorDisplacement", "World Displacement", space="WORLD")
    b.link(b.combine_xyz(0.0, 0.0, down, label="Offset"), vector.inputs["Vector"])
    vector.inputs["Midlevel"].default_value = 0.0
    vector.inputs["Scale"].default_value = 1.0  # (Blender 5.0's default is 0.01)
    b.link(vector.outputs[0], out.inputs[0])


def origin_object() -> bpy.types.Object:
    """The hidden empty at the origin a scene without a pivot points at (made once, in no scene)."""
    obj = bpy.data.objects.get(ORIGIN_NAME)
    if obj is None or obj.type != "EMPTY" or obj.library is not None:
        obj = bpy.data.objects.new(ORIGIN_NAME, None)
    return obj


def sync_scene(scene: bpy.types.Scene) -> bool:
    """Point the scene's ``PIVOT_KEY`` at its pivot (the origin's empty without one, or when the pivot was deleted
    or is not in the scene) and give the group's drivers a fresh chance when it changed. Only for a file with the
    group; returns whether anything changed."""
    trees = [t for t in bpy.data.node_groups
             if isinstance(t, bpy.types.ShaderNodeTree) and t.get(common.KIND_KEY) == KIND]
    if not trees:
        return False
    pivot = scene.envfx.bend.pivot  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time
    if pivot is None or scene.objects.get(pivot.name) is not pivot:
        pivot = origin_object()
    if scene.get(PIVOT_KEY) == pivot:
        return False
    scene[PIVOT_KEY] = pivot
    for tree in trees:  # (a group appended with a bent object from another file reads the scene too)
        anim = tree.animation_data
        if anim is not None and tree.library is None:
            for fcurve in anim.drivers:
                common.revive(fcurve)
        tree.update_tag()
    return True


# --- materials --------------------------------------------------------------------------------------------------

def material_reason(mat: bpy.types.Material | None) -> str | None:
    """Why ``mat`` cannot bend on the GPU, with what to do; None when it can (or already does)."""
    return gpu_displace.material_reason(mat, MATERIAL_KEY, "bending", "Bend on GPU")


def apply(mat: bpy.types.Material, tree: bpy.types.ShaderNodeTree, reach: float) -> None:
    """Bend ``mat``'s objects that carry ``GATE`` on the GPU (``material_reason`` first): the group's vector
    displacement into every Material Output, added to a displacement already linked (``gpu_displace.apply``);
    ``reach``: how far the bend moves a vertex (metres)."""
    gpu_displace.apply(mat, tree, reach, MATERIAL_KEY, NODE_NAME, ADD_NAME)
    couple(mat)


def couple(mat: bpy.types.Material) -> None:
    """Where ``mat`` holds the wind on the GPU and the bend on the GPU, the wind's displacement feeds the bend's
    "Moved": the bend is taken where the wind moved the vertex (as the modifiers sway and then bend)."""
    nt = mat.node_tree
    if nt is None:
        return
    for out in gpu_displace.outputs(mat):
        wind, bend = nt.nodes.get(f"{WIND_NODE_NAME} {out.name}"), nt.nodes.get(f"{NODE_NAME} {out.name}")
        if wind is None or bend is None or MOVED not in bend.inputs or bend.inputs[MOVED].is_linked:
            continue
        nt.links.new(wind.outputs[0], bend.inputs[MOVED])


def restore(mat: bpy.types.Material) -> None:
    """``mat`` without the GPU bend (as it was before ``apply``, when no other effect is on the GPU in it)."""
    gpu_displace.restore(mat, MATERIAL_KEY, NODE_NAME, ADD_NAME)


def is_gpu_bent(obj: bpy.types.Object) -> bool:
    return GATE in obj


materials_of = gpu_displace.materials_of  # (the slots' materials, its own in the wind view)


def release() -> None:
    """Give back every material no object bent on the GPU uses any more (and remove the group, and the origin's
    empty, when nothing is bent on the GPU)."""
    used = {m for o in bpy.data.objects if is_gpu_bent(o) for m in materials_of(o)}
    for mat in bpy.data.materials:
        if MATERIAL_KEY in mat and mat not in used and mat.library is None:
            restore(mat)
    if not any(is_gpu_bent(o) for o in bpy.data.objects):
        tree = group()
        if tree is not None and not tree.use_fake_user:
            bpy.data.node_groups.remove(tree)
        for scene in bpy.data.scenes:
            if PIVOT_KEY in scene:
                del scene[PIVOT_KEY]
        origin = bpy.data.objects.get(ORIGIN_NAME)
        if origin is not None and origin.users == 0:
            bpy.data.objects.remove(origin)
