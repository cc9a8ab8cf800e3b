"""View Wind Data: each channel shows as colour on every baked object through object-linked slots; Off puts every
slot back as it was (the meshes' materials never change) and the view materials go."""

import bpy
import numpy as np
import pytest

from tests.blender import api


def _objects(mods):
    t = mods.shapes.make_vegetation("quad", "touch", n_branches=3, twigs=2, leaves_per_twig=2)
    bark, leaf = bpy.data.materials.new("Bark"), bpy.data.materials.new("Leaf")
    out = []
    for kinds, name, mats in (((1, 2), "Wood", [bark]), ((3,), "Leaves", [leaf, bark]), ((3,), "Bare", [])):
        keep = np.isin(t["kind"], kinds)
        remap = -np.ones(len(keep), np.int64)
        remap[keep] = np.arange(keep.sum())
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata(t["positions"][keep].tolist(), [],
                         remap[t["faces"][keep[t["faces"]].all(1)]].tolist())
        for m in mats:
            mesh.materials.append(m)
        obj = bpy.data.objects.new(name, mesh)
        api.scene().collection.objects.link(obj)
        out.append(obj)
    return out


def _state(objs):
    return [(o.name, [(s.link, s.material.name if s.material else None) for s in o.material_slots],
             [m.name if m else None for m in o.data.materials]) for o in objs]


def test_view_each_channel_and_off_restores(mods):
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    wood, leaves, bare = _objects(mods)
    mods.ops.bake(api.scene(), [wood, leaves], ao_samples=0)
    before = _state([wood, leaves, bare])
    for channel in ("R", "G", "B", "A", "HEIGHT"):
        assert api.ops.wind_view(channel=channel) == {"FINISHED"}
        mat = bpy.data.materials["EnvFX Wind View " + channel]
        for obj in (wood, leaves):
            assert obj.material_slots and all(s.link == "OBJECT" and s.material == mat for s in obj.material_slots)
        attr = api.of(bpy.types.ShaderNodeAttribute, next(n for n in api.node_tree(mat).nodes if n.type == "ATTRIBUTE"))
        assert attr.attribute_name == ("EnvFX_Height" if channel == "HEIGHT" else "EnvFX_Wind")
        assert not bare.material_slots  # not baked: left alone
        assert [m.name for m in leaves.data.materials] == ["Leaf", "Bark"]  # the mesh's own materials stay
    assert api.ops.wind_view(channel="OFF") == {"FINISHED"}
    assert _state([wood, leaves, bare]) == before
    assert not any(m.name.startswith("EnvFX Wind View") for m in bpy.data.materials)


def test_view_without_baked_data_says_so(mods):
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    _objects(mods)
    with pytest.raises(mods.ops.WindInputError, match="Bake Wind Data first"):
        __import__(mods.ops.__name__.rsplit(".", 1)[0] + ".wind_view", fromlist=["x"]).show_channel(
            api.scene(), "B")
