"""Bend on GPU (shader_nodes/bend_gpu.py): an object bent in its materials renders as the same object bent by the
modifier (Eevee in every mode, and Cycles), on both Blender versions; its materials come back exactly; a material
shared with an object not bent that way leaves that object flat; the pivot's deletion, switching, Apply Bend,
exclusion and bad input behave as documented; a real asset bends the same both ways."""

import importlib
import json

import bpy
import numpy as np
import pytest

from tests.blender import api
from tests.blender.gpu_render import (appended_into_a_new_file, differ, displaced_material, drivers_valid, links,
                                      material, material_state, render, stage)

MODES = ("RUNNER", "RUNNER_2AXIS", "PLANET", "CYLINDER")


@pytest.fixture
def gpu(envfx):
    class G:
        ops = importlib.import_module(envfx.__name__ + ".operators.bend")
        nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.bend_gpu")
    return G


def _grid(name, location=(0.0, 0.0, 0.0), mat=None):
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=40, y_subdivisions=40, size=20, location=location)
    obj = api.active()
    obj.name = name
    api.mesh(obj).materials.append(mat or material(name))
    return obj


def _stage(engine="EEVEE"):
    """A scene with a camera looking over the ground ahead, a sun and the bend's settings (pivot keyed)."""
    scene = stage(engine, 160, 90, (0.0, -14.0, 6.0), (1.2, 0.0, 0.0))
    b = api.envfx(scene).bend
    b.strength, b.side_strength, b.spread, b.side_spread, b.horizon_offset = 0.02, 0.03, 2.0, 1.0, 1.0
    pivot = bpy.data.objects.new("Pivot", None)
    scene.collection.objects.link(pivot)
    pivot.location = (0.5, -3.0, 0.0)
    b.pivot = pivot
    return scene


@pytest.mark.parametrize("engine", ["EEVEE", "CYCLES"])
def test_bent_on_the_gpu_renders_as_bent_by_the_modifier(gpu, tmp_path, engine):
    scene = _stage(engine)
    ground = _grid("Ground")
    modes = MODES if engine == "EEVEE" else ("PLANET",)
    flat = render(tmp_path / "flat.png")
    for mode in modes:
        api.envfx(scene).bend.mode = mode
        api.envfx(ground).bend_gpu = False
        gpu.ops.add_bend(scene, [ground])
        assert gpu.ops.bend_modifiers(ground)
        by_modifier = render(tmp_path / f"{mode}_modifier.png")
        api.envfx(ground).bend_gpu = True
        result = gpu.ops.add_bend(scene, [ground])
        assert result.changed == ["Ground"] and not ground.modifiers  # (switched from the modifier)
        assert gpu.ops.add_bend(scene, [ground]).unchanged == ["Ground"]  # (already bent on the GPU)
        on_gpu = render(tmp_path / f"{mode}_gpu.png")
        assert differ(by_modifier, flat) > 0.01, mode  # the bend shows
        assert differ(on_gpu, by_modifier) < 0.002, mode  # (a few silhouette pixels at one sample)
        gpu.ops.remove_bend([ground])
        assert gpu.nodes.group() is None and not gpu.nodes.is_gpu_bent(ground)


def test_a_group_rebuilt_for_a_newer_envfx_keeps_its_links_in_the_materials(gpu, tmp_path):
    """A file bent on the GPU by an older EnvFX: the next Add Bend rebuilds the file's group in place, keeping its
    sockets (new identifiers would drop each material's link from the group node), so the ground still bends."""
    scene = _stage()
    ground = _grid("Ground")
    api.envfx(ground).bend_gpu = True
    gpu.ops.add_bend(scene, [ground])
    bent = render(tmp_path / "bent.png")
    group = gpu.nodes.group()
    group["envfx_stamp"] = "1"
    nt = api.node_tree(ground.active_material)
    before = links(nt)
    gpu.ops.add_bend(scene, [ground])  # (already bent on the GPU: the group brought up to date)
    assert gpu.nodes.group() == group and group["envfx_stamp"] == gpu.nodes.VERSION
    assert links(nt) == before
    assert differ(render(tmp_path / "rebuilt.png"), bent) < 0.002


def test_materials_come_back_exactly_and_shared_ones_bend_only_their_gpu_objects(gpu, tmp_path):
    scene = _stage()
    shared = displaced_material("Shared")
    nt = api.node_tree(shared)
    before = material_state(shared)
    bent = _grid("Bent", (-11.0, 0.0, 0.0), shared)
    _grid("Other", (11.0, 0.0, 0.0), shared)
    flat = render(tmp_path / "flat.png")
    api.envfx(bent).bend_gpu = True
    gpu.ops.add_bend(scene, [bent])
    assert links(nt).count(("EnvFX Bend GPU Add Material Output", "Material Output")) == 1
    shown = render(tmp_path / "bent.png")
    width = shown.shape[1]
    assert differ(shown[:, : width // 2], flat[:, : width // 2]) > 0.01  # the bent one (left) drops
    assert differ(shown[:, width // 2 + 10:], flat[:, width // 2 + 10:]) < 0.002  # the other stays as it was
    gpu.ops.remove_bend([bent])
    assert material_state(shared) == before and gpu.nodes.MATERIAL_KEY not in shared
    assert differ(render(tmp_path / "after.png"), flat) < 0.002


def test_pivot_switching_apply_and_exclude(gpu, tmp_path):
    scene = _stage()
    ground = _grid("Ground")
    api.envfx(ground).bend_gpu = True
    gpu.ops.add_bend(scene, [ground])
    tree = gpu.nodes.group()
    assert tree is not None
    value = {label: api.socket(tree.nodes[label].outputs[0]) for label in gpu.nodes.DRIVEN}
    scene.frame_set(2)
    assert value["Cy"].default_value == pytest.approx(-3.0 + 1.0)  # the pivot's y plus the horizon offset
    pivot = bpy.data.objects["Pivot"]
    pivot.location.y = 4.0
    scene.frame_set(3)
    assert value["Cy"].default_value == pytest.approx(5.0)
    bpy.data.objects.remove(pivot)  # deleted: the world origin, as the modifier's bend
    scene.frame_set(4)
    scene.frame_set(5)
    assert value["Cy"].default_value == pytest.approx(1.0)
    assert drivers_valid(tree)
    with pytest.raises(gpu.ops.BendInputError, match="Apply Bend cannot bake"):
        gpu.ops.apply_bend(scene, [ground])
    api.envfx(ground).bend_exclude = True
    assert ground[gpu.nodes.GATE] == 0.0
    api.envfx(ground).bend_exclude = False
    assert ground[gpu.nodes.GATE] == 1.0
    api.envfx(ground).bend_gpu = False  # back to the modifier: the material lets go
    mat = api.mesh(ground).materials[0]
    gpu.ops.add_bend(scene, [ground])
    assert gpu.ops.bend_modifiers(ground) and gpu.nodes.MATERIAL_KEY not in mat and gpu.nodes.group() is None


def test_objects_it_cannot_bend_are_named_and_left_alone(gpu):
    scene = _stage()
    bare = _grid("Bare")
    api.mesh(bare).materials.clear()
    bump = _grid("Bump")
    nt = api.node_tree(api.mesh(bump).materials[0])
    disp = nt.nodes.new("ShaderNodeDisplacement")
    nt.links.new(disp.outputs[0], nt.nodes["Material Output"].inputs["Displacement"])
    empty_slot = _grid("Empty Slot")
    api.mesh(empty_slot).materials.append(None)
    good = _grid("Good", (0.0, 30.0, 0.0))
    for obj in (bare, bump, empty_slot, good):
        api.envfx(obj).bend_gpu = True
    result = gpu.ops.add_bend(scene, [bare, bump, empty_slot, good])
    assert result.changed == ["Good"]
    assert "no material" in result.skipped["Bare"]
    assert "bump mapping only" in result.skipped["Bump"] and "Displacement and Bump" in result.skipped["Bump"]
    assert "empty material slot" in result.skipped["Empty Slot"]
    assert gpu.nodes.MATERIAL_KEY not in api.mesh(bump).materials[0] and not gpu.nodes.is_gpu_bent(bump)
    with pytest.raises(gpu.ops.BendInputError, match="Nothing to bend.*no material"):
        gpu.ops.add_bend(scene, [bare])


def test_a_gpu_bend_survives_save_and_reload(gpu, tmp_path, save_and_reopen):
    scene = _stage()
    ground = _grid("Ground")
    api.envfx(ground).bend_gpu = True
    gpu.ops.add_bend(scene, [ground])
    before = render(tmp_path / "before.png")
    save_and_reopen()
    scene = api.scene()
    mat = api.of(bpy.types.Material, api.mesh(bpy.data.objects["Ground"]).materials[0])
    state = json.loads(str(mat[gpu.nodes.MATERIAL_KEY]))
    assert state["method"] == "BUMP"
    bpy.data.objects["Pivot"].location.y = -3.0  # (the same place: the drivers follow after the reload)
    scene.frame_set(1)
    assert differ(render(tmp_path / "after.png"), before) < 0.002


def test_real_vegetation_bends_the_same_on_the_gpu(gpu, corpus_asset, tmp_path):
    """The corpus flower (OBJ, Y up, an unapplied centimetre scale, away from the origin; several materials)."""
    scene = _stage()
    objects = corpus_asset("flower_blue")
    for obj in objects:
        if not obj.material_slots:
            api.mesh(obj).materials.append(material(obj.name))
    cam = api.camera(scene)
    centre = np.mean([np.array(o.matrix_world.translation) for o in objects], axis=0)
    cam.location = (centre[0], centre[1] - 6.0, centre[2] + 3.0)
    api.envfx(scene).bend.pivot.location = (centre[0], centre[1] - 8.0, 0.0)
    api.envfx(scene).bend.strength = 0.05
    api.envfx(scene).bend.spread = 0.5
    gpu.ops.add_bend(scene, objects)
    by_modifier = render(tmp_path / "modifier.png")
    for obj in objects:
        api.envfx(obj).bend_gpu = True
    result = gpu.ops.add_bend(scene, objects)
    assert sorted(result.changed) == sorted(o.name for o in objects), result.skipped
    on_gpu = render(tmp_path / "gpu.png")
    gpu.ops.remove_bend(objects)
    flat = render(tmp_path / "flat.png")
    assert differ(by_modifier, flat) > 0.005
    assert differ(on_gpu, by_modifier) < 0.002


def test_an_appended_object_bent_on_the_gpu_follows_its_new_scene(gpu, tmp_path):
    """Appended into another file (its material and the group come along, the new scene has no pivot yet): the
    group's drivers read the new scene, its settings and the origin."""
    scene = _stage()
    ground = _grid("Ground")
    api.envfx(ground).bend_gpu = True
    gpu.ops.add_bend(scene, [ground])
    scene = appended_into_a_new_file(tmp_path, ["Ground"])
    api.envfx(scene).bend.horizon_offset = 2.5
    scene.frame_set(1)
    scene.frame_set(2)
    tree = gpu.nodes.group()
    assert tree is not None and drivers_valid(tree)
    assert api.socket(tree.nodes["Cy"].outputs[0]).default_value == pytest.approx(2.5)  # the origin, offset ahead


def test_rigid_sway_and_the_gpu_bend_on_one_prop(gpu, envfx, tmp_path):
    """A prop swaying whole (wind, rigid sway) and bent on the GPU: the sway turns its transform, the bend its drawn
    vertices after it, each as on its own; Remove Wind and Remove Bend each take back only their part."""
    scene = _stage()
    ground = _grid("Ground")
    bpy.ops.mesh.primitive_cone_add(radius1=0.5, depth=2.0, location=(1.0, 8.0, 1.0))
    prop = api.active()
    api.mesh(prop).materials.append(material("Prop", (0.9, 0.2, 0.2, 1.0)))
    for obj in (ground, prop):
        api.envfx(obj).bend_gpu = True
    api.envfx(prop).wind.rigid = True
    api.envfx(scene).wind.strength = 4.0
    wind = importlib.import_module(envfx.__name__ + ".operators.wind")
    rigid = importlib.import_module(envfx.__name__ + ".shader_nodes.wind_rigid")
    gpu.ops.add_bend(scene, [ground, prop])
    wind.add_wind(scene, [prop])
    scene.frame_set(9)
    assert rigid.is_rigid(prop) and gpu.nodes.is_gpu_bent(prop)
    both = render(tmp_path / "both.png")
    wind.remove_wind([prop])
    assert gpu.nodes.is_gpu_bent(prop) and not rigid.is_rigid(prop)
    scene.frame_set(9)
    bent_only = render(tmp_path / "bent.png")
    assert differ(both, bent_only) > 0.0005  # the sway shows on the bent prop
    gpu.ops.remove_bend([ground, prop])
    assert not gpu.nodes.is_gpu_bent(prop) and tuple(prop.delta_rotation_euler[i] for i in range(3)) == (0, 0, 0)


def test_a_coarse_mesh_bent_on_the_gpu_is_named_or_subdivided(gpu):
    """The GPU bend moves vertices only, as the modifier does: a mesh too coarse for it is named, or (Subdivide
    Coarse Meshes) gets the Simple subdivision as its last modifier, which Remove Bend takes away again."""
    scene = _stage()
    bpy.ops.mesh.primitive_plane_add(size=40.0, location=(0.0, 20.0, 0.0))
    wall = api.active()
    api.mesh(wall).materials.append(material("Wall"))
    api.envfx(wall).bend_gpu = True
    result = gpu.ops.add_bend(scene, [wall])
    assert any("Too coarse for the bend" in w and wall.name in w for w in result.warnings), result.warnings
    assert [r[0] for r in gpu.ops.coarse_in_scene(scene)] == [wall.name]
    api.envfx(scene).bend.subdivide = True
    result = gpu.ops.add_bend(scene, [wall])
    subdivisions = gpu.ops.bend_subdivisions(wall)
    assert len(subdivisions) == 1 and list(wall.modifiers)[-1] == subdivisions[0] and subdivisions[0].levels >= 1
    assert wall.name not in [r[0] for r in gpu.ops.coarse_in_scene(scene)]  # (subdivided enough for the tolerance)
    gpu.ops.remove_bend([wall])
    assert not wall.modifiers
