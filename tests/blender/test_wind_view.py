"""View Wind Data: each channel shows as colour on every baked object through object-linked slots; Off puts every
slot back as it was (the meshes' materials never change) and the view materials go."""

import importlib

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


def _with_nodes(mat):
    if mat.node_tree is None:  # (Blender 4.2 makes a material without nodes; 5.0 always gives it nodes)
        mat.use_nodes = True
    return mat


def test_a_material_linked_to_the_object_comes_back_and_what_works_in_materials_uses_the_objects_own(mods, envfx):
    """A slot may show a material linked to the object: Off gives it back. While the view shows, Wind on GPU and
    Bend on GPU go into (and come out of) the objects' own materials, not the view's, and a bake reads the
    material-name overrides of the own materials."""
    wind_gpu = importlib.import_module(envfx.__name__ + ".shader_nodes.wind_gpu")
    bend_gpu = importlib.import_module(envfx.__name__ + ".shader_nodes.bend_gpu")
    bend_ops = importlib.import_module(envfx.__name__ + ".operators.bend")
    scene = api.scene()
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    wood, leaves, bare = _objects(mods)
    own = _with_nodes(bpy.data.materials.new("Own bark"))
    for mat in bpy.data.materials:
        _with_nodes(mat)
    leaves.material_slots[1].link = "OBJECT"
    leaves.material_slots[1].material = own
    mods.ops.bake(scene, [wood, leaves], ao_samples=0)
    labels = [mods.ops.material_labels(o).tolist() for o in (wood, leaves)]
    assert all(any(v) for v in labels)  # "Bark" marks the wood as trunk, "Leaf" and "Own bark" the leaves' faces
    before = _state([wood, leaves, bare])
    assert api.ops.wind_view(channel="B") == {"FINISHED"}
    assert [mods.ops.material_labels(o).tolist() for o in (wood, leaves)] == labels  # what a bake now reads
    mine = [bpy.data.materials[n] for n in ("Bark", "Leaf", "Own bark")]
    view = bpy.data.materials["EnvFX Wind View B"]
    for obj in (wood, leaves):
        api.envfx(obj).wind.gpu = True
        api.envfx(obj).bend_gpu = True
    mods.ops.add_wind(scene, [wood, leaves])
    bend_ops.add_bend(scene, [wood, leaves])
    for key in (wind_gpu.MATERIAL_KEY, bend_gpu.MATERIAL_KEY):
        assert all(key in m for m in mine) and key not in view
    mods.ops.remove_wind([wood, leaves])
    bend_ops.remove_bend([wood, leaves])
    assert not any(k in m for m in mine + [view] for k in (wind_gpu.MATERIAL_KEY, bend_gpu.MATERIAL_KEY))
    mods.ops.add_wind(scene, [wood, leaves])
    assert api.ops.wind_view(channel="OFF") == {"FINISHED"}
    assert _state([wood, leaves, bare]) == before
    assert all(wind_gpu.MATERIAL_KEY in m for m in mine)
