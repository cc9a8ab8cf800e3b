"""The "EnvFX Snow" material of the generated snow meshes."""

from __future__ import annotations

import bpy

from ... import bridge
from .. import common

MATERIAL_NAME = "EnvFX Snow"
MATERIAL_VERSION = 1


def ensure_material() -> bpy.types.Material:
    """The "EnvFX Snow" material: bright, soft subsurface snow with sparkle; the trails shade through the
    deformed normals (generated snow meshes are smooth-shaded). Works in Eevee and Cycles."""
    mat = bpy.data.materials.get(MATERIAL_NAME)
    if mat is not None and mat.get(common.STAMP_KEY) == MATERIAL_VERSION:
        return mat
    if mat is None:
        mat = bpy.data.materials.new(MATERIAL_NAME)
    if not bridge.BLENDER_5 or mat.node_tree is None:  # Blender 5 materials always have nodes
        mat.use_nodes = True
    nt = mat.node_tree
    if nt is None:  # (use_nodes made it: the checker still sees the None tested above)
        raise RuntimeError(f"The material {mat.name!r} has no node tree to build the snow's in")
    nt.nodes.clear()
    b = common.Builder(nt)
    out = b.node("ShaderNodeOutputMaterial", "Output", location=(900, 0))
    bsdf = b.node("ShaderNodeBsdfPrincipled", "Snow BSDF", location=(500, 0))
    bsdf.inputs["Base Color"].default_value = (0.9, 0.93, 0.97, 1.0)
    bsdf.inputs["Subsurface Weight"].default_value = 0.25
    bsdf.inputs["Subsurface Radius"].default_value = (0.6, 0.8, 1.0)
    bsdf.inputs["Subsurface Scale"].default_value = 0.05
    bsdf.inputs["Roughness"].default_value = 0.55
    # sparkle: tiny bright cells with a low roughness
    coord = b.node("ShaderNodeTexCoord", "Coords", location=(-700, 0))
    vor = b.node("ShaderNodeTexVoronoi", "Sparkle Cells", location=(-500, 0))
    vor.inputs["Scale"].default_value = 400.0
    b.link(coord.outputs["Object"], vor.inputs["Vector"])
    ramp = b.node("ShaderNodeMapRange", "Sparkle", location=(-300, 0))
    ramp.inputs["From Min"].default_value = 0.0
    ramp.inputs["From Max"].default_value = 0.08
    ramp.inputs["To Min"].default_value = 1.0
    ramp.inputs["To Max"].default_value = 0.0
    ramp.clamp = True
    b.link(vor.outputs["Distance"], ramp.inputs["Value"])
    spec = b.node("ShaderNodeMath", "Specular", location=(-100, 0), operation="MULTIPLY_ADD")
    b.link(ramp.outputs[0], spec.inputs[0])
    spec.inputs[1].default_value = 1.5
    spec.inputs[2].default_value = 0.5
    b.link(spec.outputs[0], bsdf.inputs["Specular IOR Level"])
    rough = b.node("ShaderNodeMath", "Sparkle Roughness", location=(100, -200), operation="MULTIPLY_ADD")
    b.link(ramp.outputs[0], rough.inputs[0])
    rough.inputs[1].default_value = -0.45
    rough.inputs[2].default_value = 0.55
    b.link(rough.outputs[0], bsdf.inputs["Roughness"])
    # fine grain bump on top of the deformation normals
    noise = b.node("ShaderNodeTexNoise", "Grain", location=(-300, -300))
    noise.inputs["Scale"].default_value = 60.0
    b.link(coord.outputs["Object"], noise.inputs["Vector"])
    bump = b.node("ShaderNodeBump", "Grain Bump", location=(200, -400))
    bump.inputs["Strength"].default_value = 0.08
    b.link(noise.outputs["Fac"], bump.inputs["Height"])
    b.link(bump.outputs["Normal"], bsdf.inputs["Normal"])
    b.link(bsdf.outputs[0], out.inputs["Surface"])
    mat[common.STAMP_KEY] = MATERIAL_VERSION
    return mat
