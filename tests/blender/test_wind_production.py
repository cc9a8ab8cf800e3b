"""Wind in production-style scenes: many plant objects, objects Blender does not evaluate, scaled linked duplicates,
large frame numbers, a wind object deleted by a script."""

import importlib

import bpy
import pytest


@pytest.fixture
def mods(envfx):
    class M:
        core = importlib.import_module(envfx.__name__ + ".core.wind")
        shapes = importlib.import_module(envfx.__name__ + ".core.wind_shapes")
        ops = importlib.import_module(envfx.__name__ + ".operators.wind")
        nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.wind")
        bridge = importlib.import_module(envfx.__name__ + ".bridge")
    return M


@pytest.fixture
def helpers(load_helper):
    """tests/blender/test_wind.py's helpers (``_tree``, ``_read``, ``_gn_vs_core``)."""
    return load_helper("test_wind_helpers", "tests", "blender", "test_wind.py")


def _clump(mods, name, mesh=None):
    """A small two-card plant (its own mesh, or ``mesh``)."""
    if mesh is None:
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata([(-0.1, 0, 0), (0.1, 0, 0), (0.1, 0, 0.5), (-0.1, 0, 0.5),
                          (0, -0.1, 0), (0, 0.1, 0), (0, 0.1, 0.5), (0, -0.1, 0.5)], [],
                         [(0, 1, 2, 3), (4, 5, 6, 7)])
        mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def test_remove_wind_is_linear_in_the_number_of_objects(mods, monkeypatch):
    """Remove Wind looked for other users of each removed object's mesh among all of the file's objects: N^2
    calls of ``wind_modifiers`` (457,185 for 1000 plants). Now one pass after the loop."""
    scene = bpy.context.scene
    plants = [_clump(mods, f"Plant {i}") for i in range(60)]
    mods.ops.bake(scene, plants[:1], ao_samples=0)
    for plant in plants[1:]:  # each its own baked mesh
        plant.data = plants[0].data.copy()
    shared = _clump(mods, "Sharer", plants[0].data)  # stays in the wind: the mesh keeps its live data
    mods.ops.add_wind(scene, plants + [shared])
    calls = []
    real = mods.ops.wind_modifiers
    monkeypatch.setattr(mods.ops, "wind_modifiers", lambda obj: calls.append(obj.name) or real(obj))
    result = mods.ops.remove_wind(plants)
    assert len(result.changed) == len(plants)
    assert len(calls) <= 4 * len(plants), len(calls)
    live = mods.core.LIVE_ATTRS[0]
    assert plants[0].data.attributes.get(live) is not None  # the sharer is still in the wind
    assert all(p.data.attributes.get(live) is None for p in plants[1:])
    assert mods.ops.wind_modifiers(shared)
