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
    """Remove Wind looked for other users of each removed object's mesh among all of the file's objects, asking
    the sharers already taken out again and again: N^2 calls of ``wind_modifiers`` for N linked duplicates. Now
    one pass after the loop."""
    scene = bpy.context.scene
    plants = [_clump(mods, "Plant 0")]
    mods.ops.bake(scene, plants, ao_samples=0)
    plants += [_clump(mods, f"Plant {i}", plants[0].data) for i in range(1, 60)]  # linked duplicates
    own = [_clump(mods, f"Own {i}", plants[0].data.copy()) for i in range(20)]  # each its own baked mesh
    keep = _clump(mods, "Keeps Wind", own[0].data)  # stays in the wind: that mesh keeps its live data
    mods.ops.add_wind(scene, plants + own + [keep])
    calls = []
    real = mods.ops.wind_modifiers
    monkeypatch.setattr(mods.ops, "wind_modifiers", lambda obj: calls.append(obj.name) or real(obj))
    result = mods.ops.remove_wind(plants + own)
    n = len(plants) + len(own)
    assert len(result.changed) == n
    assert len(calls) <= 4 * n, len(calls)
    live = mods.core.LIVE_ATTRS[0]
    assert own[0].data.attributes.get(live) is not None
    assert all(o.data.attributes.get(live) is None for o in plants + own[1:])
    assert mods.ops.wind_modifiers(keep)
