"""Wind on GPU (shader_nodes/wind_gpu.py): an object in the wind in its materials renders as the same object moved
by the wind's modifier (Eevee at several frames, with a loop, a ramp and a wind object; Cycles once), on both
Blender versions; its materials come back exactly, also beside Bend on GPU in the same material; grass,
pushed by a walker through a baked buffer, tilted and faded by the camera, moves as the modifier moves it;
switching between the modifier, rigid sway and the GPU; bad input is refused, saying why, with nothing changed; save and
reload; real imported vegetation moves the same both ways."""

import importlib
import json

import bpy
import numpy as np
import pytest

from tests.blender import api
from tests.blender.gpu_render import (appended_into_a_new_file, differ, displaced_material, drivers_valid, links,
                                      material, material_state, render, stage)


@pytest.fixture
def gpu(envfx):
    class G:
        ops = importlib.import_module(envfx.__name__ + ".operators.wind")
        bend_ops = importlib.import_module(envfx.__name__ + ".operators.bend")
        nodes = importlib.import_module(envfx.__name__ + ".shader_nodes.wind_gpu")
        rigid = importlib.import_module(envfx.__name__ + ".shader_nodes.wind_rigid")
        bend_gpu = importlib.import_module(envfx.__name__ + ".shader_nodes.bend_gpu")
        shapes = importlib.import_module(envfx.__name__ + ".core.wind_shapes")
    return G


def _stage(engine="EEVEE"):
    """A scene with a camera looking at a tree's place from the side, a sun, a strong wind along +X."""
    scene = stage(engine, 160, 120, (1.0, -14.0, 3.0), (1.5, 0.0, 0.0))
    w = api.envfx(scene).wind
    w.strength, w.gust_strength, w.direction = 5.0, 0.6, 0.3
    return scene


def _tree(gpu, name="Tree", location=(0.0, 0.0, 0.0), mat=None):
    shape = gpu.shapes.make_tree(height=5.0, n_branches=4, leaves_per_branch=3)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(shape["positions"].tolist(), [], shape["faces"].tolist())
    obj = bpy.data.objects.new(name, mesh)
    api.scene().collection.objects.link(obj)
    obj.location = location
    mesh.materials.append(mat or material(name))
    return obj


def _both_ways(gpu, scene, objects, frames, tmp_path, tag=""):
    """Renders at ``frames`` by the modifier, then on the GPU (Add Wind switching them), and still."""
    for obj in objects:
        api.envfx(obj).wind.gpu = False
    gpu.ops.add_wind(scene, objects)
    by_modifier = []
    for frame in frames:
        scene.frame_set(frame)
        by_modifier.append(render(tmp_path / f"{tag}modifier_{frame}.png"))
    for obj in objects:
        api.envfx(obj).wind.gpu = True
    result = gpu.ops.add_wind(scene, objects)
    assert sorted(result.changed) == sorted(o.name for o in objects), result.skipped
    assert not any(gpu.ops.wind_modifiers(o) for o in objects)
    on_gpu = []
    for frame in frames:
        scene.frame_set(frame)
        on_gpu.append(render(tmp_path / f"{tag}gpu_{frame}.png"))
    return by_modifier, on_gpu


@pytest.mark.parametrize("engine", ["EEVEE", "CYCLES"])
def test_in_the_wind_on_the_gpu_renders_as_moved_by_the_modifier(gpu, tmp_path, engine):
    scene = _stage(engine)
    tree = _tree(gpu)
    gpu.ops.bake(scene, [tree])
    still = render(tmp_path / "still.png")
    frames = (7, 31) if engine == "EEVEE" else (19,)
    by_modifier, on_gpu = _both_ways(gpu, scene, [tree], frames, tmp_path)
    for frame, a, b in zip(frames, by_modifier, on_gpu):
        assert differ(a, still) > 0.01, frame  # the wind shows
        assert differ(b, a) < 0.002, frame  # (a few silhouette pixels at one sample)
    assert gpu.ops.add_wind(scene, [tree]).unchanged == ["Tree"]  # (already on the GPU)
    gpu.ops.remove_wind([tree])
    assert gpu.nodes.group() is None and not gpu.nodes.is_gpu_wind(tree)
    assert gpu.rigid.clock_of(scene) is None
    assert differ(render(tmp_path / "after.png"), still) < 0.002


def test_a_loop_a_ramp_a_wind_object_and_a_turned_scaled_tree(gpu, tmp_path):
    """Away from the origin, turned and scaled as an import's root leaves it, with a loop, a ramp, no main bend and
    a wind object whose rotation is keyed: the GPU's wind is the modifier's."""
    scene = _stage()
    tree = _tree(gpu, location=(3.0, 2.0, 0.0))
    gpu.ops.bake(scene, [tree])
    tree.rotation_euler = (0.0, 0.0, 0.7)
    tree.scale = (0.8, 0.8, 0.8)
    w = api.envfx(tree).wind
    w.ramp, w.main_bend, w.rigidity, w.micro = 2.0, False, 0.7, 3.0
    api.envfx(scene).wind.loop_frames = 48
    bpy.ops.object.effector_add(type="WIND")
    source = api.active()
    api.field(source).strength = 3.0
    source.rotation_euler = (1.2, 0.0, 0.0)
    source.keyframe_insert("rotation_euler", frame=1)
    source.rotation_euler = (1.5, 0.0, 1.2)
    source.keyframe_insert("rotation_euler", frame=60)
    api.envfx(scene).wind.source_object = source
    still = render(tmp_path / "still.png")
    frames = (5, 53)  # (53: past the loop)
    by_modifier, on_gpu = _both_ways(gpu, scene, [tree], frames, tmp_path)
    for frame, a, b in zip(frames, by_modifier, on_gpu):
        assert differ(a, still) > 0.005, frame
        assert differ(b, a) < 0.002, frame
    w.rigidity = 3.0  # the settings reach the GPU's wind too
    assert tuple(tree[gpu.nodes.PARAMS[0]])[0] == pytest.approx(3.0)
    scene.frame_set(5)
    softer = render(tmp_path / "softer.png")
    assert differ(softer, on_gpu[0]) > 0.002


@pytest.mark.parametrize("order", ["wind first out", "bend first out"])
def test_materials_come_back_exactly_beside_the_gpu_bend_and_shared_ones_move_only_their_objects(gpu, tmp_path,
                                                                                                order):
    scene = _stage()
    shared = displaced_material("Shared")
    nt = api.node_tree(shared)
    before = material_state(shared)
    moved = _tree(gpu, "Moved", (-3.0, 0.0, 0.0), shared)
    other = _tree(gpu, "Other", (4.0, 0.0, 0.0), shared)
    gpu.ops.bake(scene, [moved, other])
    still = render(tmp_path / "still.png")
    api.envfx(moved).wind.gpu = True
    gpu.ops.add_wind(scene, [moved])
    scene.frame_set(12)
    shown = render(tmp_path / "moved.png")
    width = shown.shape[1]
    assert differ(shown[:, : width // 2], still[:, : width // 2]) > 0.005  # the one on the GPU (left) moves
    assert differ(shown[:, width // 2 + 10:], still[:, width // 2 + 10:]) < 0.002  # the other stays still
    api.envfx(moved).bend_gpu = True
    api.envfx(scene).bend.strength = 0.01
    gpu.bend_ops.add_bend(scene, [moved])
    assert gpu.nodes.MATERIAL_KEY in shared and gpu.bend_gpu.MATERIAL_KEY in shared
    if order == "wind first out":
        gpu.ops.remove_wind([moved])
        assert gpu.bend_gpu.MATERIAL_KEY in shared and shared.displacement_method == "BOTH"
        assert links(nt).count(("EnvFX Bend GPU Add Material Output", "Material Output")) == 1
        gpu.bend_ops.remove_bend([moved])
    else:
        gpu.bend_ops.remove_bend([moved])
        assert gpu.nodes.MATERIAL_KEY in shared and shared.displacement_method == "BOTH"
        assert links(nt).count(("EnvFX Wind GPU Add Material Output", "Material Output")) == 1
        scene.frame_set(12)
        assert differ(render(tmp_path / "wind_only.png"), shown) < 0.002
        gpu.ops.remove_wind([moved])
    assert material_state(shared) == before
    assert gpu.nodes.MATERIAL_KEY not in shared and gpu.bend_gpu.MATERIAL_KEY not in shared
    assert differ(render(tmp_path / "after.png"), still) < 0.002


def _swayed_and_bent_by_the_modifiers(gpu, tmp_path, scale=None):
    """A tree turned (the wind's offset turned into the world), scaled by a script just before its bake when
    ``scale`` is given, swaying far out in a strong bend: (scene, tree, the render of frame 23 by the modifiers),
    the tree left with neither, set to go on the GPU."""
    scene = stage("EEVEE", 160, 120, (6.0, -14.0, 2.0), (1.5, 0.0, 0.0))
    w = api.envfx(scene).wind
    w.strength, w.gust_strength, w.direction = 5.0, 0.6, 0.3
    b = api.envfx(scene).bend
    b.mode, b.axis, b.strength, b.spread = "RUNNER", "POS_X", 0.04, 0.5
    tree = _tree(gpu, location=(6.0, 0.0, 0.0))
    tree.rotation_euler.z = 0.7
    if scale is not None:
        tree.scale = scale
    gpu.ops.bake(scene, [tree])
    gpu.ops.add_wind(scene, [tree])
    gpu.bend_ops.add_bend(scene, [tree])
    scene.frame_set(23)
    by_modifiers = render(tmp_path / "modifiers.png")
    gpu.ops.remove_wind([tree])
    gpu.bend_ops.remove_bend([tree])
    api.envfx(tree).wind.gpu = api.envfx(tree).bend_gpu = True
    return scene, tree, by_modifiers


@pytest.mark.parametrize("first", ["wind", "bend"])
def test_in_the_wind_and_the_bend_on_the_gpu_renders_as_swayed_then_bent_by_the_modifiers(gpu, tmp_path, first):
    """The modifiers sway a plant, then bend it where it swayed to; on the GPU the wind's displacement feeds the
    bend's (whichever was added first), so a tree swaying far out in a strong bend, turned, renders the same both
    ways (without that link, the bend taken where it stands still: 3% of the pixels differ)."""
    scene, tree, by_modifiers = _swayed_and_bent_by_the_modifiers(gpu, tmp_path)
    for step in ((gpu.ops.add_wind, gpu.bend_ops.add_bend) if first == "wind" else
                 (gpu.bend_ops.add_bend, gpu.ops.add_wind)):
        step(scene, [tree])
    assert not tree.modifiers
    scene.frame_set(22)
    scene.frame_set(23)
    on_gpu = render(tmp_path / "gpu.png")
    assert differ(on_gpu, by_modifiers) < 0.003
    # without the wind feeding the bend, the bend is taken where the tree stands still: it shows
    nt = api.node_tree(tree.active_material)
    for link in list(nt.links):
        if link.to_socket is not None and link.to_socket.name == gpu.bend_gpu.MOVED:
            nt.links.remove(link)
    scene.frame_set(22)
    scene.frame_set(23)
    assert differ(render(tmp_path / "uncoupled.png"), by_modifiers) > 0.01


@pytest.mark.parametrize("scale", [(0.8, 0.8, 0.8), (0.7, 1.2, 0.8)])
def test_a_plant_scaled_by_a_script_sways_and_bends_the_same_by_the_modifiers_and_on_the_gpu(gpu, tmp_path, scale):
    """A script scales a plant and bakes it at once (no redraw between): the bake and Add Wind read its world matrix
    at its new size, so the modifiers and the GPU sway it as far (the bake read the matrix of its last evaluation,
    at scale 1, and the first Add Wind kept that size: 1.8% of the pixels differed at 0.8, where it sways)."""
    scene, tree, by_modifiers = _swayed_and_bent_by_the_modifiers(gpu, tmp_path, scale)
    gpu.ops.add_wind(scene, [tree])
    gpu.bend_ops.add_bend(scene, [tree])
    assert not tree.modifiers
    scene.frame_set(22)
    scene.frame_set(23)
    assert differ(render(tmp_path / "gpu.png"), by_modifiers) < 0.003


def test_switching_between_the_modifier_rigid_sway_and_the_gpu(gpu):
    scene = _stage()
    tree = _tree(gpu)
    gpu.ops.bake(scene, [tree])
    mesh = api.mesh(tree)
    gpu.ops.add_wind(scene, [tree])
    api.envfx(tree).wind.gpu = True
    assert gpu.ops.add_wind(scene, [tree]).changed == ["Tree"]
    assert not gpu.ops.wind_modifiers(tree) and gpu.nodes.is_gpu_wind(tree)
    assert gpu.rigid.clock_of(scene) is not None  # (the group reads the scene's clock)
    assert all(mesh.attributes.get(n) is not None for n in gpu.nodes.core_wind.LIVE_ATTRS)
    api.envfx(tree).wind.rigid = True  # rigid sway comes first
    assert gpu.ops.add_wind(scene, [tree]).changed == ["Tree"]
    assert gpu.rigid.is_rigid(tree) and not gpu.nodes.is_gpu_wind(tree) and gpu.nodes.group() is None
    assert gpu.nodes.MATERIAL_KEY not in mesh.materials[0]
    api.envfx(tree).wind.rigid = False
    assert gpu.ops.add_wind(scene, [tree]).changed == ["Tree"]
    assert not gpu.rigid.is_rigid(tree) and gpu.nodes.is_gpu_wind(tree)
    assert tuple(tree.delta_rotation_euler[i] for i in range(3)) == (0.0, 0.0, 0.0)
    api.envfx(tree).wind.gpu = False
    gpu.ops.add_wind(scene, [tree])
    assert gpu.ops.wind_modifiers(tree) and not gpu.nodes.is_gpu_wind(tree) and gpu.nodes.group() is None
    assert gpu.nodes.MATERIAL_KEY not in mesh.materials[0] and gpu.rigid.clock_of(scene) is None
    api.envfx(tree).wind.gpu = True
    gpu.ops.add_wind(scene, [tree])
    gpu.ops.remove_wind([tree])
    assert not any(mesh.attributes.get(n) is not None for n in gpu.nodes.core_wind.LIVE_ATTRS)
    assert not any(k in tree for k in (gpu.nodes.GATE, *gpu.nodes.PARAMS))


def test_objects_it_cannot_move_are_named_and_left_alone(gpu):
    scene = _stage()
    bare = _tree(gpu, "Bare")
    api.mesh(bare).materials.clear()
    bump = _tree(gpu, "Bump")
    nt = api.node_tree(api.mesh(bump).materials[0])
    disp = nt.nodes.new("ShaderNodeDisplacement")
    nt.links.new(disp.outputs[0], nt.nodes["Material Output"].inputs["Displacement"])
    empty_slot = _tree(gpu, "Empty Slot")
    api.mesh(empty_slot).materials.append(None)
    grass = _tree(gpu, "Grass")
    api.envfx(grass).wind.category = "GRASS"
    terrain = _tree(gpu, "Terrain", (0.0, -30.0, 0.0))
    api.envfx(scene).wind.terrain_object = terrain
    curve = bpy.data.objects.new("Curve", bpy.data.curves.new("Curve", "CURVE"))
    scene.collection.objects.link(curve)
    good = _tree(gpu, "Good", (0.0, 30.0, 0.0))
    objects = [bare, bump, empty_slot, grass, curve, good]
    for obj in objects:
        api.envfx(obj).wind.gpu = True
    bump_before = material_state(api.mesh(bump).materials[0])
    result = gpu.ops.add_wind(scene, objects)
    assert result.changed == ["Good"]
    assert "no material" in result.skipped["Bare"]
    assert "bump mapping only" in result.skipped["Bump"] and "Displacement and Bump" in result.skipped["Bump"]
    assert "empty material slot" in result.skipped["Empty Slot"]
    assert "terrain object 'Terrain'" in result.skipped["Grass"] and "Wind on GPU off" in result.skipped["Grass"]
    assert "not a mesh" in result.skipped["Curve"]
    assert material_state(api.mesh(bump).materials[0]) == bump_before
    for obj in (bare, bump, empty_slot, grass):
        assert not gpu.nodes.is_gpu_wind(obj) and not gpu.ops.wind_modifiers(obj)
        assert api.mesh(obj).attributes.get(gpu.nodes.core_wind.LIVE_ATTRS[0]) is None
    assert "no baked wind data" in " ".join(result.warnings)
    with pytest.raises(gpu.ops.WindInputError, match="Nothing to put in wind.*no material"):
        gpu.ops.add_wind(scene, [bare])


def test_the_wind_on_the_gpu_survives_save_and_reload(gpu, tmp_path, save_and_reopen):
    scene = _stage()
    tree = _tree(gpu)
    gpu.ops.bake(scene, [tree])
    api.envfx(tree).wind.gpu = True
    gpu.ops.add_wind(scene, [tree])
    scene.frame_set(14)
    before = render(tmp_path / "before.png")
    save_and_reopen("wind_gpu.blend")
    scene = api.scene()
    tree = bpy.data.objects["Tree"]
    assert gpu.nodes.is_gpu_wind(tree) and gpu.nodes.group() is not None
    scene.frame_set(1)
    scene.frame_set(14)
    assert differ(render(tmp_path / "after.png"), before) < 0.002
    record = json.loads(str(api.of(bpy.types.Material, api.mesh(tree).materials[0])[gpu.nodes.MATERIAL_KEY]))
    assert "method" in record


@pytest.mark.parametrize("asset, category", [("flower_blue", "PLANT"), ("grass", "GRASS")])
def test_real_vegetation_moves_the_same_on_the_gpu(gpu, corpus_asset, tmp_path, asset, category):
    """The corpus flower and grass tuft (OBJ, Y up, an unapplied centimetre scale, away from the origin; several
    materials; separate petal cards, blades): every vertex goes where the modifier moves it."""
    scene = _stage()
    objects = corpus_asset(asset)
    for obj in objects:
        if not obj.material_slots:
            api.mesh(obj).materials.append(material(obj.name))
        api.envfx(obj).wind.category = category
    for mat in {slot.material for obj in objects for slot in obj.material_slots}:
        _unlit(mat)  # (the fluttering petals' shading differs: their normals stay)
    cam = api.camera(scene)
    lo = np.min([np.min([obj.matrix_world @ v.co for v in api.mesh(obj).vertices], axis=0) for obj in objects], 0)
    hi = np.max([np.max([obj.matrix_world @ v.co for v in api.mesh(obj).vertices], axis=0) for obj in objects], 0)
    centre, size = (lo + hi) / 2, float(np.max(hi - lo))
    cam.location = (centre[0], centre[1] - 2.2 * size, centre[2])
    cam.rotation_euler = (1.5708, 0.0, 0.0)
    gpu.ops.bake(scene, objects)
    for obj in objects:
        api.envfx(obj).wind.category = category
    still = render(tmp_path / "still.png")
    by_modifier, on_gpu = _both_ways(gpu, scene, objects, (9,), tmp_path)
    assert differ(by_modifier[0], still) > 0.005
    assert differ(on_gpu[0], by_modifier[0]) < 0.002


def test_the_panel_says_how_the_object_is_in_the_wind(gpu, envfx):
    panel = importlib.import_module(envfx.__name__ + ".panels.wind")
    scene = _stage()
    tree = _tree(gpu)
    gpu.ops.bake(scene, [tree])
    assert panel.gpu_status(tree) == []
    gpu.ops.add_wind(scene, [tree])
    api.envfx(tree).wind.gpu = True
    assert "Add Wind switches it to the GPU" in panel.gpu_status(tree)[0][0]
    gpu.ops.add_wind(scene, [tree])
    assert panel.gpu_status(tree) == [("Moves in its materials: Material Preview or Rendered shows it", False)]
    api.envfx(tree).wind.gpu = False
    assert "switches it to the modifier" in panel.gpu_status(tree)[0][0]
    api.envfx(tree).wind.gpu = True
    api.envfx(tree).wind.category = "GRASS"  # (grass on the GPU, then a terrain object set for the scene's wind)
    api.envfx(scene).wind.terrain_object = _tree(gpu, "Terrain", (0.0, 30.0, 0.0))
    (text, alert), = panel.gpu_status(tree)
    assert alert and "does not follow the terrain object Terrain" in text


def test_an_appended_tree_a_copied_scene_and_a_deleted_clock_get_a_clock(gpu, tmp_path):
    """The group reads the clock of the scene being drawn: a scene showing objects in the wind on the GPU without
    one of its own gets one at the next update, and the group's drivers read it."""
    scene = _stage()
    tree = _tree(gpu)
    gpu.ops.bake(scene, [tree])
    api.envfx(tree).wind.gpu = True
    gpu.ops.add_wind(scene, [tree])
    scene = appended_into_a_new_file(tmp_path, ["Tree"])
    api.envfx(scene).wind.strength = 2.5
    api.view_layer().update()
    assert gpu.rigid.clock_of(scene) is not None
    scene.frame_set(3)
    group = gpu.nodes.group()
    assert group is not None and drivers_valid(group)
    assert api.socket(group.nodes["S"].outputs[0]).default_value == pytest.approx(2.5)
    for tree_ in [t for t in bpy.data.node_groups if gpu.rigid.is_clock(t)]:
        bpy.data.node_groups.remove(tree_)
    api.view_layer().update()
    assert gpu.rigid.clock_of(scene) is not None
    bpy.ops.scene.new(type="FULL_COPY")
    copy = api.scene()
    assert copy is not scene
    api.envfx(copy).wind.strength = 4.0
    api.view_layer().update()
    copy.frame_set(4)
    assert gpu.rigid.clock_of(copy) not in (None, gpu.rigid.clock_of(scene))
    assert api.socket(group.nodes["S"].outputs[0]).default_value == pytest.approx(4.0)


def _blades(count=160, seed=5):
    """A field of wide vertical blades (quads of two triangles each way, 0.5-0.8 m tall) over 5 x 5 m."""
    rng = np.random.default_rng(seed)
    verts, faces = [], []
    for i in range(count):
        x, y = rng.uniform(-2.5, 2.5, 2)
        h, w, a = rng.uniform(0.5, 0.8), 0.08, rng.uniform(0, np.pi)
        dx, dy = w * np.cos(a), w * np.sin(a)
        verts += [(x - dx, y - dy, 0.0), (x + dx, y + dy, 0.0), (x + dx, y + dy, h / 2), (x - dx, y - dy, h / 2),
                  (x + dx * 0.5, y + dy * 0.5, h), (x - dx * 0.5, y - dy * 0.5, h)]
        faces += [(6 * i, 6 * i + 1, 6 * i + 2, 6 * i + 3), (6 * i + 3, 6 * i + 2, 6 * i + 4, 6 * i + 5)]
    mesh = bpy.data.meshes.new("Field")
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new("Field", mesh)
    api.scene().collection.objects.link(obj)
    obj.location, obj.rotation_euler = (0.4, -0.3, 0.1), (0.0, 0.0, 0.3)
    mat = material("Field", (0.3, 0.6, 0.2, 1.0))
    _unlit(mat)  # (the blades turn: compared unlit, where every vertex goes)
    mesh.materials.append(mat)
    return obj


def _unlit(mat):
    """``mat`` drawn by an Emission shader: Eevee draws a vertex moved on the GPU with its rest normal, so a leaf or
    blade that turns is shaded as it stood (docs/wind.md); unlit, a render shows where every vertex goes."""
    nt = api.node_tree(mat)
    emission = nt.nodes.new("ShaderNodeEmission")
    nt.links.new(emission.outputs[0], nt.nodes["Material Output"].inputs["Surface"])


@pytest.mark.parametrize("push", ["none", "sequence", "image", "live"])
def test_grass_on_the_gpu_moves_as_the_modifier_moves_it(gpu, envfx, tmp_path, push):
    """Blade by blade (each its own gust and figure-eight), tilted by a camera that looks down and faded with its
    distance, pushed down and away by a walker through a baked buffer (a sequence, or one image), on both
    versions."""
    scene = _stage()
    cam = api.camera(scene)
    cam.location, cam.rotation_euler = (0.0, -5.5, 3.5), (0.95, 0.0, 0.0)
    w = api.envfx(scene).wind
    w.strength, w.grass_tilt, w.grass_fade_start, w.grass_fade_end = 1.5, 0.8, 4.0, 9.0
    field = _blades()
    api.envfx(field).wind.category = "GRASS"
    gpu.ops.bake(scene, [field])
    api.envfx(field).wind.category = "GRASS"
    frames = (5, 13)
    if push == "live":  # no bake: the live buffer stepped from the snow actors, a push field in one image
        from tests.blender.test_wind_push_live import _walker_scene
        _walker_scene()
        gpu.ops.add_wind(scene, [field])
        assert "pushed live" in gpu.ops.grass_push(scene)
        frames = (9, 13, 30)
    elif push != "none":
        from tests.blender.test_wind_push import _baked_buffer
        _baked_buffer(envfx, tmp_path / "buffer", sequence=push == "sequence")
        gpu.ops.add_wind(scene, [field])
        assert "pushed by the baked buffer" in gpu.ops.grass_push(scene)
        frames = (9, 13, 40)
    still = render(tmp_path / "still.png")
    by_modifier, on_gpu = _both_ways(gpu, scene, [field], frames, tmp_path)
    for frame, a, b in zip(frames, by_modifier, on_gpu):
        assert differ(a, still) > 0.01, frame
        assert differ(b, a) < 0.003, frame
    assert api.mesh(field).attributes.get(gpu.nodes.NORMAL_ATTR) is not None
    if push != "none":  # the push shows on the GPU: off, the same frame is drawn otherwise
        gpu.ops.grass_push(scene, on=False)
        scene.frame_set(13)
        # (one baked image pushes less: the walk's first frame)
        assert differ(render(tmp_path / "unpushed.png"), on_gpu[1]) > (0.0003 if push == "image" else 0.005)
    gpu.ops.remove_wind([field])
    assert api.mesh(field).attributes.get(gpu.nodes.NORMAL_ATTR) is None
