"""Effects drawn by the GPU: a shader group's vector displacement fed into a material's Material Output.

An effect on the GPU (Bend on GPU, Wind on GPU) moves an object's vertices in its materials instead of in a
modifier: each of its materials gets the effect's group in front of every Material Output, its displacement added
to what the output had (a chain: the material's own displacement, then each effect's, summed), and true
displacement on. Each effect keeps its own record on the material (``key``, JSON: the displacement method and, on
Blender 5.0, the maximum vertex displacement the material had before any EnvFX effect), so the effects come and go
in any order: one taken away splices its nodes out of the chain, and the last one gives the material back its method
and maximum exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import bpy

from . import common, wind_view

KEYS = ("envfx_bend_gpu", "envfx_wind_gpu")  # the records of every effect on the GPU (bend, wind)


def materials_of(obj: bpy.types.Object) -> list:
    """The materials of ``obj``'s slots (None for an empty slot), each once, in slot order (its own while it shows
    the wind data view)."""
    return list(dict.fromkeys(wind_view.own_materials(obj)))


def file_group(kind: str) -> bpy.types.ShaderNodeTree | None:
    """The file's own shader group of ``kind`` (an effect's, marked by ``common.KIND_KEY``), or None."""
    for tree in bpy.data.node_groups:
        if isinstance(tree, bpy.types.ShaderNodeTree) and tree.get(common.KIND_KEY) == kind and tree.library is None:
            return tree
    return None


def ensure_file_group(kind: str, name: str, version: str, build: Callable) -> bpy.types.ShaderNodeTree:
    """The file's shader group of ``kind``, made as ``name`` when missing and built again by ``build(tree)`` when
    its stamp is not ``version``."""
    tree = file_group(kind)
    if tree is None:
        tree = bpy.data.node_groups.new(name, "ShaderNodeTree")  # pyright: ignore[reportArgumentType]
        tree[common.KIND_KEY] = kind
    if tree.get(common.STAMP_KEY) != version:
        # (its sockets kept: the materials' group nodes keep their links, which new identifiers would drop)
        common.clear_tree(tree, keep_interface=True)
        build(tree)
        tree[common.STAMP_KEY] = version
    return tree  # pyright: ignore[reportReturnType] -- made as a ShaderNodeTree


def outputs(mat: bpy.types.Material) -> list:
    tree = mat.node_tree
    return [] if tree is None else [n for n in tree.nodes if n.bl_idname == "ShaderNodeOutputMaterial"]


def material_reason(mat: bpy.types.Material | None, key: str, effect: str, off: str) -> str | None:
    """Why ``mat`` cannot take the effect recorded as ``key`` (``effect``: "bending", "the wind"; ``off``: what to
    switch off for the modifier instead), with what to do; None when it can (or already does)."""
    if mat is None:
        return f"it has an empty material slot: give every slot a material ({effect} on the GPU works in them)"
    if mat.library is not None:
        return f"its material {mat.name!r} is linked from {mat.library.filepath!r}: make it local first"
    if key in mat:
        return None
    if mat.node_tree is None or not outputs(mat):
        return f"its material {mat.name!r} has no Material Output node: turn on Use Nodes for it"
    linked = any(out.inputs["Displacement"].is_linked for out in outputs(mat))
    if linked and mat.displacement_method == "BUMP" and not any(k in mat for k in KEYS):
        return (f"its material {mat.name!r} uses its displacement as bump mapping only; {effect} on the GPU needs "
                f"true displacement, which would turn that bump into geometry: set the material's Displacement to "
                f"Displacement and Bump yourself, or use the modifier ({off} off)")
    return None


def apply(mat: bpy.types.Material, tree: bpy.types.ShaderNodeTree, reach: float, key: str, node_name: str,
          add_name: str) -> None:
    """Feed ``tree``'s displacement into every Material Output of ``mat`` (``material_reason`` first), added to what
    the output had; true displacement on; on Blender 5.0 a maximum vertex displacement of at least ``reach``
    (metres), so Eevee draws what the effect moves into view. Nodes named ``node_name``/``add_name`` and the output's
    name; the record in ``key``."""
    if key in mat:
        if hasattr(mat, "max_vertex_displacement"):
            mat.max_vertex_displacement = max(mat.max_vertex_displacement, reach)
        return
    nt = mat.node_tree
    assert nt is not None  # (material_reason)
    other = next((k for k in KEYS if k in mat and k != key), None)
    state: dict[str, Any]
    if other is not None:  # (the record of what the material had before any effect)
        state = {k: v for k, v in json.loads(str(mat[other])).items() if k in ("method", "max")}
    else:
        state = {"method": mat.displacement_method}
        if hasattr(mat, "max_vertex_displacement"):
            state["max"] = mat.max_vertex_displacement
    for out in outputs(mat):
        node = nt.nodes.new("ShaderNodeGroup")
        node.name = node.label = f"{node_name} {out.name}"
        node.node_tree = tree  # pyright: ignore[reportAttributeAccessIssue] -- a ShaderNodeGroup
        node.location = (out.location[0] - 200, out.location[1] - 250 - (150 if other else 0))
        socket = out.inputs["Displacement"]
        if socket.is_linked:
            link = socket.links[0]
            add = nt.nodes.new("ShaderNodeVectorMath")
            add.name = add.label = f"{add_name} {out.name}"
            add.operation = "ADD"  # pyright: ignore[reportAttributeAccessIssue] -- a ShaderNodeVectorMath
            add.location = (out.location[0] - 100, out.location[1] - 150 - (150 if other else 0))
            nt.links.new(link.from_socket, add.inputs[0])
            nt.links.new(node.outputs[0], add.inputs[1])
            nt.links.new(add.outputs[0], socket)
        else:
            nt.links.new(node.outputs[0], socket)
    if mat.displacement_method == "BUMP":
        mat.displacement_method = "DISPLACEMENT"
    if hasattr(mat, "max_vertex_displacement"):
        mat.max_vertex_displacement = max(mat.max_vertex_displacement, reach)
    mat[key] = json.dumps(state)


def restore(mat: bpy.types.Material, key: str, node_name: str, add_name: str) -> None:
    """Take the effect recorded as ``key`` out of ``mat``: its nodes spliced out of each output's chain (what fed
    its Add node feeds what the Add node fed); the material's method and maximum back as they were once no other
    effect is left in it."""
    if key not in mat:
        return
    state = json.loads(str(mat[key]))
    nt = mat.node_tree
    if nt is not None:
        for out in outputs(mat):
            add = nt.nodes.get(f"{add_name} {out.name}")
            if add is not None:
                before = next((link.from_socket for link in add.inputs[0].links or ()), None)
                targets = [link.to_socket for link in add.outputs[0].links or ()]
                nt.nodes.remove(add)
                for target in targets:
                    if before is not None and target is not None:
                        nt.links.new(before, target)
            node = nt.nodes.get(f"{node_name} {out.name}")
            if node is not None:
                nt.nodes.remove(node)
    del mat[key]
    if not any(k in mat for k in KEYS):
        mat.displacement_method = state["method"]
        if "max" in state and hasattr(mat, "max_vertex_displacement"):
            mat.max_vertex_displacement = state["max"]
