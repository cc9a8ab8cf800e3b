"""Wind in real Blender: the bake writes the attributes, the geometry-nodes wind equals the numpy twin, operators,
bad inputs leave the scene unchanged, the glTF round trip carries the channels."""

import math
from typing import Any
import os
import importlib

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Vector

from tests.blender import api


def _mesh_object(name, positions, faces, matrix=None, edges=()):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, p)) for p in positions], [tuple(map(int, e)) for e in edges],
                     [tuple(map(int, f)) for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    api.scene().collection.objects.link(obj)
    if matrix is not None:
        obj.matrix_world = matrix
    return obj


def _tree(mods, matrix=None, split=False, **kw):
    """The constructed tree as one object (or trunk / branches / leaves objects) standing upright in the world
    with ``matrix`` on its object(s) (the mesh data carries the inverse, like an imported Y-up file)."""
    tree = mods.shapes.make_tree(**kw)
    m = np.eye(4) if matrix is None else np.array(matrix)
    inv = np.linalg.inv(m)
    local = tree["positions"] @ inv[:3, :3].T + inv[:3, 3]
    mat = Matrix(m.tolist())
    if not split:
        return tree, [_mesh_object("Tree", local, tree["faces"], mat, tree["edges"])]
    objects = []
    for kind, name in ((1, "Trunk"), (2, "Branches"), (3, "Leaves")):
        keep = tree["kind"] == kind
        remap = -np.ones(len(keep), np.int64)
        remap[keep] = np.arange(keep.sum())
        faces = tree["faces"][keep[tree["faces"]].all(1)]
        objects.append(_mesh_object(name, local[keep], remap[faces], mat))
    return tree, objects


def _read(mesh, name, width):
    attr = mesh.attributes[name]
    buf = np.empty(len(mesh.vertices) * width, np.float32)
    attr.data.foreach_get({4: "color", 3: "vector"}.get(width, "value"), buf)
    return buf.reshape(-1, width) if width > 1 else buf


def _faces(mods, mesh):
    """A face of each vertex of ``mesh`` (-1: in none), as the twin takes it for grass (``core.wind.vertex_faces``)."""
    return mods.core.vertex_faces(len(mesh.vertices), mods.bridge.corner_vertices(mesh), mods.bridge.face_starts(mesh))


def _select(objects):
    for o in api.view_layer().objects:
        o.select_set(False)
    for o in objects:
        o.select_set(True)
    api.view_layer().objects.active = objects[0]


def test_bake_writes_attributes_matching_core(mods):
    rot = Matrix.Translation((4.0, -2.0, 0.5)) @ Matrix.Rotation(math.radians(90), 4, "X") @ Matrix.Diagonal(
        (2.0, 2.0, 2.0, 1.0))
    tree, (obj,) = _tree(mods, matrix=rot, welded=True)
    _select([obj])
    assert api.ops.wind_bake_data() == {"FINISHED"}
    ref = mods.core.bake_wind_data(tree["positions"], tree["edges"])
    h = _read(obj.data, "EnvFX_Height", 1)
    rgba = _read(obj.data, "EnvFX_Wind", 4)
    # vertex order is kept; world positions equal up to float error
    np.testing.assert_allclose(h, ref.height, atol=1e-4)
    np.testing.assert_allclose(rgba[:, 2], ref.branch, atol=2e-3)
    np.testing.assert_allclose(rgba[:, 0], ref.leaf, atol=2e-3)
    assert api.envfx(obj).wind.asset_height == pytest.approx(ref.asset_height, rel=1e-4)
    assert api.mesh(obj).color_attributes.default_color_name == "EnvFX_Wind"
    # an instance sharing the mesh gets the asset height too, at its own size (scale 1 against the tree's 2)
    twin = bpy.data.objects.new("Tree Instance", obj.data)
    api.scene().collection.objects.link(twin)
    result = mods.ops.bake(api.scene(), [obj, twin], ao_samples=0)
    assert result.changed == ["Tree"] and "shares its mesh with Tree" in result.skipped["Tree Instance"]
    assert api.envfx(twin).wind.asset_height == pytest.approx(ref.asset_height / 2, rel=1e-4)


def test_multi_object_asset_bakes_together(mods):
    tree, objects = _tree(mods, split=True)
    _select(objects)
    assert api.ops.wind_bake_data() == {"FINISHED"}
    trunk, branches, leaves = objects
    # height over the whole asset: the trunk's base is 0, the top of everything is 1
    hs = [_read(o.data, "EnvFX_Height", 1) for o in objects]
    assert min(h.min() for h in hs) == pytest.approx(0.0, abs=1e-6)
    assert max(h.max() for h in hs) == pytest.approx(1.0, abs=1e-6)
    assert np.all(_read(trunk.data, "EnvFX_Wind", 4)[:, 2] == 0.0)
    leaf_rgba = _read(leaves.data, "EnvFX_Wind", 4)
    assert leaf_rgba[:, 0].max() == pytest.approx(1.0) and leaf_rgba[:, 2].min() >= 0.0
    # B grows along the branches and on along the leaves: 1 at the farthest leaf tip
    assert _read(branches.data, "EnvFX_Wind", 4)[:, 2].max() < leaf_rgba[:, 2].max() == pytest.approx(1.0)


def _gn_vs_core(mods, obj, frames, terrain_z=None):
    scene = api.scene()
    tree = bpy.data.node_groups["EnvFX Wind"]
    mesh = obj.data
    rest = mods.bridge.get_positions(mesh).astype(np.float64)
    h = _read(mesh, "EnvFX_Height", 1)
    rgba = _read(mesh, "EnvFX_Wind", 4)
    normals = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertex_normals.foreach_get("vector", normals)
    worst = 0.0
    for frame in frames:
        scene.frame_set(frame)
        dg = bpy.context.evaluated_depsgraph_get()
        got = mods.bridge.evaluated_positions(obj, dg)
        cam = mods.bridge.matrix_to_numpy(scene.camera.matrix_world) if scene.camera else None
        expect = rest + mods.core.wind_offsets(rest, h, rgba, normals.reshape(-1, 3),
                                               mods.bridge.matrix_to_numpy(obj.matrix_world), frame,
                                               mods.nodes.params_from_scene(scene), mods.nodes.asset_params(obj),
                                               camera_matrix=cam, terrain_z=terrain_z, faces=_faces(mods, mesh))
        worst = max(worst, float(np.abs(got - expect).max()))
    assert tree is not None
    return worst


@pytest.mark.parametrize("case", ["tree", "bush_loop", "grass_source"])
def test_geometry_nodes_wind_matches_core(mods, case):
    scene = api.scene()
    w = api.envfx(scene).wind
    matrix = Matrix.Translation((3.0, 1.0, 0.0)) @ Matrix.Rotation(0.4, 4, "Z")
    tree, (obj,) = _tree(mods, matrix=matrix, n_branches=4, leaves_per_branch=3)
    _select([obj])
    mods.ops.bake(scene, [obj], ao_samples=0)
    w.strength, w.gust_strength, w.gust_frequency, w.direction = 1.3, 0.7, 0.31, math.radians(35)
    if case == "bush_loop":
        mods.ops.apply_preset([obj], "BUSH")
        w.loop_frames = 48
        api.envfx(obj).wind.ramp = 2.5
    elif case == "grass_source":
        mods.ops.apply_preset([obj], "GRASS")
        bpy.ops.object.effector_add(type="WIND", location=(0, 0, 0), rotation=(math.radians(90), 0, 0.6))
        field = api.active()
        api.field(field).strength = 2.2
        w.source_object = field
        _select([obj])
    mods.ops.add_wind(scene, [obj])
    worst = _gn_vs_core(mods, obj, (1, 17, 60, 133))
    assert worst < 1e-4, worst
    # and it does move
    scene.frame_set(30)
    moved = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
    assert np.abs(moved - mods.bridge.get_positions(obj.data)).max() > 0.05


def _length_asset(mods, name, matrix):
    """#26's three assets as one object each, standing upright in the world with ``matrix``: a tall grass card
    (12 vertices), the constructed tree and bush. Returns the object and (vertex indices, pivot vertex indices,
    carried) triples: each vertex keeps its distance from the mean of its pivot's vertices (the card's bottom
    edge, the trunk's base, a stem's root: in the ground; a branch's first ring, as it is carried)."""
    if name == "card":
        z = np.linspace(0.0, 2.0, 6)
        pos = np.array([[x, 0.0, zz] for zz in z for x in (-0.05, 0.05)])
        faces = [[a, a + 1, a + 3, a + 2] for a in range(0, 10, 2)]
        return _mesh_object("Card", pos, faces, matrix), [(np.arange(12), np.array([0, 1]), False)]
    shape = mods.shapes.make_tree() if name == "tree" else mods.shapes.make_bush()
    obj = _mesh_object(name.title(), shape["positions"], shape["faces"], matrix, shape["edges"])
    kind, branch, along, p = shape["kind"], shape["branch_id"], shape["along"], shape["positions"]
    pairs = []
    if name == "tree":
        trunk = np.nonzero(kind == 1)[0]
        pairs.append((trunk, trunk[p[trunk, 2] <= p[trunk, 2].min() + 1e-6], False))
    for b in np.unique(branch[branch >= 0]):
        ring = np.nonzero((branch == b) & (kind == 2) & (along == 0.0))[0]
        pairs.append((np.nonzero(branch == b)[0], ring, name == "tree"))
    return obj, pairs


@pytest.mark.parametrize("name, preset", [("card", "GRASS"), ("tree", "TREE"), ("bush", "BUSH"), ("bush", "BANNER")])
def test_evaluated_wind_bends_without_stretching_at_any_strength(mods, name, preset):
    """#26 in the evaluated geometry: at strengths 0.5, 1, 3 and 10 (beyond the slider) every vertex keeps its
    distance from its base (card, trunk, stem) or its branch's attach point to within 2%, and the group still
    equals its numpy twin (a rotated, moved object)."""
    scene = api.scene()
    w = api.envfx(scene).wind
    matrix = Matrix.Translation((2.0, -1.0, 0.3)) @ Matrix.Rotation(0.7, 4, "Z")
    obj, pairs = _length_asset(mods, name, matrix)
    _select([obj])
    mods.ops.bake(scene, [obj], ao_samples=0)
    mods.ops.apply_preset([obj], preset)
    w.direction, w.loop_frames = math.radians(35), 96
    mods.ops.add_wind(scene, [obj])
    rest = mods.bridge.get_positions(obj.data).astype(np.float64)
    height = api.envfx(obj).wind.asset_height
    worst = moved = 0.0
    for strength in (0.5, 1.0, 3.0, 10.0):
        w.strength = strength
        assert _gn_vs_core(mods, obj, (1, 40)) < 1e-4
        for frame in (1, 25, 50, 75):
            scene.frame_set(frame)
            got = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get()).astype(np.float64)
            moved = max(moved, float(np.abs(got - rest).max()))
            for verts, pivot, carried in pairs:
                before = np.linalg.norm(rest[verts] - rest[pivot].mean(0), axis=1)
                now = np.linalg.norm(got[verts] - (got if carried else rest)[pivot].mean(0), axis=1)
                far = before > 0.1 * height
                worst = max(worst, float(np.abs(now[far] / before[far] - 1.0).max(initial=0.0)))
    assert moved > 0.05 * height
    assert worst < 0.02, worst


def test_a_plant_saved_by_blender_42_sways_the_same_in_50(mods, open_saved_by_blender_42):
    open_saved_by_blender_42("wind")
    scene = api.scene()
    obj = bpy.data.objects["Tree"]
    assert mods.ops.wind_modifiers(obj) and api.envfx(scene).wind.loop_frames == 48
    assert _gn_vs_core(mods, obj, (1, 17, 60)) < 1e-4
    api.envfx(scene).wind.strength = 2.0  # the scene's settings still reach the saved group
    assert _gn_vs_core(mods, obj, (23,)) < 1e-4
    scene.frame_set(30)
    moved = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
    assert np.abs(moved - mods.bridge.get_positions(obj.data)).max() > 0.05


def test_live_data_follows_rebake_and_leaves_with_the_wind(mods):
    """The hidden per-vertex attributes the live wind reads are written by Add Wind, refreshed by a re-bake (the
    wind still equals the twin computed from the new EnvFX_Wind) and removed with the wind."""
    scene = api.scene()
    api.envfx(scene).wind.strength, api.envfx(scene).wind.gust_strength = 1.4, 0.5
    tree, (obj,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    mods.ops.bake(scene, [obj], ao_samples=0)
    assert not any(name in api.mesh(obj).attributes for name in mods.core.LIVE_ATTRS)  # a bake alone adds nothing
    mods.ops.add_wind(scene, [obj])
    assert all(name in api.mesh(obj).attributes for name in mods.core.LIVE_ATTRS)
    before = _read(obj.data, mods.core.LIVE_ATTRS[1], 3).copy()  # Leaf: (Rc, Rs, H^2)
    group = obj.vertex_groups.new(name="EnvFX_Branch")  # a leaf marked as a branch: other R
    group.add([int(i) for i in np.nonzero(tree["leaf_id"] == 0)[0]], 1.0, "REPLACE")
    mods.ops.bake(scene, [obj], ao_samples=0)
    assert np.abs(_read(obj.data, mods.core.LIVE_ATTRS[1], 3) - before).max() > 1e-3
    assert _gn_vs_core(mods, obj, (9, 70)) < 1e-4
    mods.ops.remove_wind([obj])
    assert not any(name in api.mesh(obj).attributes for name in mods.core.LIVE_ATTRS)
    assert "EnvFX_Wind" in api.mesh(obj).attributes and "EnvFX_Height" in api.mesh(obj).attributes


def test_vertices_without_faces_neither_make_the_trunk_nor_break_the_live_wind(mods):
    """A stray vertex just below the base (left by a merge), a strand of loose edges hanging from a leaf and a loose
    edge floating beside the trunk: the faced vertices get exactly the data of the clean tree (the real trunk stays
    the trunk, B = 0 on it), the face-less ones the data (AO too) of their nearest vertex with faces, a warning
    names the object, and the live wind moves them as its numpy twin says."""
    scene = api.scene()
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    tree = mods.shapes.make_tree(n_branches=3, leaves_per_branch=2)
    p, n = tree["positions"], len(tree["positions"])
    clean = _mesh_object("Clean", p, tree["faces"], edges=tree["edges"])
    base = p[np.argmin(p[:, 2])]
    tip = int(np.nonzero(tree["leaf_id"] == 0)[0][2])
    strand = p[tip] + np.outer(np.arange(1, 5), [0.0, 0.0, -0.04])
    extra = np.concatenate([[base + (0.01, 0.01, -0.01)], strand, [p[0] + (0.3, 0.0, 0.5), p[0] + (0.3, 0.0, 0.9)]])
    loose_edges = [(tip, n + 1), (n + 1, n + 2), (n + 2, n + 3), (n + 3, n + 4), (n + 5, n + 6)]
    obj = _mesh_object("Tree", np.concatenate([p, extra]), tree["faces"],
                       edges=np.concatenate([tree["edges"], loose_edges]))
    ref = mods.ops.bake(scene, [clean], ao_samples=0)
    result = mods.ops.bake(scene, [obj], ao_samples=0)
    assert result.stats == ref.stats | {"vertices": n + len(extra)}
    assert [w for w in result.warnings if "without faces" in w] == [
        "Tree: 7 vertices without faces (loose points or edges) were left out of the trunk and branch detection and "
        "take the wind data of the nearest vertex with faces; if stray, delete them (Edit Mode: Mesh > Clean Up > "
        "Delete Loose)"]
    rgba, h = _read(obj.data, "EnvFX_Wind", 4), _read(obj.data, "EnvFX_Height", 1)
    np.testing.assert_array_equal(rgba[:n], _read(clean.data, "EnvFX_Wind", 4))
    np.testing.assert_array_equal(h[:n], _read(clean.data, "EnvFX_Height", 1))
    assert np.all(rgba[:n][tree["kind"] == 1, 2] == 0.0)
    nearest = np.argmin(np.linalg.norm(extra[:, None, :] - p[None, :, :], axis=2), axis=1)
    np.testing.assert_array_equal(rgba[n:], rgba[nearest])
    np.testing.assert_array_equal(h[n:], h[nearest])
    # AO: Cycles bakes none off the faces, so a face-less vertex takes its nearest faced vertex's too
    api.view_layer().update()
    mods.ops.bake(scene, [obj], ao_samples=2)
    ao = _read(obj.data, "EnvFX_Wind", 4)[:, 3]
    np.testing.assert_array_equal(ao[n:], ao[nearest])
    # the live wind, loose vertices included, is its numpy twin's; the stray vertex at the base does not move
    api.envfx(scene).wind.strength, api.envfx(scene).wind.gust_strength = 1.5, 0.6
    mods.ops.add_wind(scene, [obj])
    assert _gn_vs_core(mods, obj, (7, 41)) < 1e-4
    mods.ops.apply_preset([obj], "GRASS")
    assert _gn_vs_core(mods, obj, (7, 41)) < 1e-4
    mods.ops.apply_preset([obj], "TREE")
    scene.frame_set(30)
    moved = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
    rest = mods.bridge.get_positions(obj.data)
    np.testing.assert_array_equal(moved[n], rest[n])
    assert np.abs(moved[n + 1:n + 5] - rest[n + 1:n + 5]).max() > 1e-3  # the strand sways with its leaf


def test_zero_wind_rest_pose_base_still_and_loop(mods):
    scene = api.scene()
    w = api.envfx(scene).wind
    tree, (obj,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    mods.ops.bake(scene, [obj], ao_samples=0)
    mods.ops.add_wind(scene, [obj])
    rest = mods.bridge.get_positions(obj.data)
    w.strength, w.ambient = 0.0, 0.0
    for frame in (1, 40, 99):
        scene.frame_set(frame)
        got = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
        np.testing.assert_array_equal(got, rest)
    w.strength, w.loop_frames = 1.5, 50
    base = rest[:, 2] <= rest[:, 2].min() + 1e-6
    frames = {}
    for frame in (1, 26, 51):
        scene.frame_set(frame)
        frames[frame] = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
        np.testing.assert_array_equal(frames[frame][base], rest[base])
    np.testing.assert_allclose(frames[1], frames[51], atol=1e-4)
    assert np.abs(frames[1] - frames[26]).max() > 1e-2


def _grass_clump(mods, scene):
    """A baked grass clump (the GRASS preset) standing turned at (2, 3, 0.4)."""
    g = mods.shapes.make_grass(blades=10, height=0.8, seed=2)
    obj = _mesh_object("Grass", g["positions"], g["faces"],
                       Matrix.Translation((2.0, 3.0, 0.4)) @ Matrix.Rotation(0.7, 4, "Z"))
    mods.ops.bake(scene, [obj], ao_samples=0)
    mods.ops.apply_preset([obj], "GRASS")
    return obj


def test_grass_ambient_motion_follows_the_wind_and_still_air_leaves_grass_still(mods):
    """The grass's ambient motion (figure-eight and wobble) is driven by the wind at the clump (the write-up:
    "driven by the length of the force field"): the live wind equals its twin at a light, the default and a
    strong wind, and in still air (gusts or not) the grass, ambient on, stands exactly at rest."""
    scene = api.scene()
    w = api.envfx(scene).wind
    obj = _grass_clump(mods, scene)
    bpy.data.objects.remove(api.camera(scene))  # no camera: no tilt, no fade
    mods.ops.add_wind(scene, [obj])
    w.ambient, w.loop_frames = 1.0, 96
    rest = mods.bridge.get_positions(obj.data)
    moved = {}
    for strength in (0.25, 1.0, 3.0):
        w.strength = strength
        worst = _gn_vs_core(mods, obj, (1, 23, 50))
        assert worst < 1e-4, (strength, worst)
        moved[strength] = np.abs(mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
                                 - rest).max()
    assert 1e-3 < moved[0.25] < moved[1.0] < moved[3.0]
    w.strength = 0.0
    for gusts in (0.0, 1.0):
        w.gust_strength = gusts
        for frame in (1, 40, 77):
            scene.frame_set(frame)
            got = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
            np.testing.assert_array_equal(got, rest)


def test_add_remove_and_settings_reach_modifier(mods):
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=1)
    _select([obj])
    assert api.ops.wind_bake_data() == {"FINISHED"}
    assert api.ops.wind_add() == {"FINISHED"}
    assert api.ops.wind_add() == {"FINISHED"}  # idempotent: still one modifier
    assert len(mods.ops.wind_modifiers(obj)) == 1
    api.envfx(obj).wind.rigidity = 4.0
    mod = mods.ops.wind_modifiers(obj)[0]
    tree_ng = mod.node_group
    ident = next(i.identifier for i in tree_ng.interface.items_tree
                 if getattr(i, "in_out", "") == "INPUT" and i.name == "Rigidity")
    assert mod[ident] == pytest.approx(4.0)
    assert api.ops.wind_preset(preset="BANNER") == {"FINISHED"}
    assert api.envfx(obj).wind.category == "SPECIAL"
    assert api.ops.wind_remove() == {"FINISHED"}
    assert not mods.ops.wind_modifiers(obj)


def test_add_wind_says_what_many_separate_objects_cost(mods, monkeypatch):
    """A level's worth of separate plants in one scene's wind (MANY_OBJECTS, lowered here): Add Wind warns that each
    pays the per-object part every frame and says what plays faster; one object fewer, no such warning. The
    objects are put in the wind either way."""
    monkeypatch.setattr(mods.ops, "MANY_OBJECTS", 4)
    scene = api.scene()
    g = mods.shapes.make_grass(blades=3, height=0.5, seed=1)
    plants = [_mesh_object(f"Clump {i}", g["positions"], g["faces"], Matrix.Translation((i, 0.0, 0.0)))
              for i in range(4)]
    for plant in plants:  # (one mesh per clump, each its own asset)
        mods.ops.bake(scene, [plant], ao_samples=0)
    result = mods.ops.add_wind(scene, plants[:3])
    assert not any("separate objects" in w for w in result.warnings), result.warnings
    result = mods.ops.add_wind(scene, plants[3:])
    (warning,) = [w for w in result.warnings if "separate objects" in w]
    assert warning.startswith("4 separate objects are in this scene's wind") and "join grass clumps" in warning
    assert all(mods.ops.wind_modifiers(p) for p in plants)
    _select(plants)
    assert api.ops.wind_add() == {"FINISHED"}  # reported as a warning, not refused


def test_objects_that_are_not_meshes_are_skipped_by_add_wind_as_by_the_bake(mods):
    """A curve (or text) holds no wind data, so it can never move: Add Wind names it with why, as the bake does,
    and gives it nothing."""
    scene = api.scene()
    curve = bpy.data.objects.new("Vine", bpy.data.curves.new("Vine", "CURVE"))
    scene.collection.objects.link(curve)
    why = r"Vine \(curve object, not a mesh: wind data is baked on meshes only; convert it first"
    with pytest.raises(mods.ops.WindInputError, match="Nothing to put in wind: " + why):
        mods.ops.add_wind(scene, [curve])
    with pytest.raises(mods.ops.WindInputError, match="Nothing to bake: " + why):
        mods.ops.bake(scene, [curve])
    assert not curve.modifiers and mods.nodes.group_for(scene) is None
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=1)
    mods.ops.bake(scene, [obj], ao_samples=0)
    result = mods.ops.add_wind(scene, [obj, curve])
    assert result.changed == ["Tree"] and list(result.skipped) == ["Vine"] and not curve.modifiers
    _select([curve])
    with pytest.raises(RuntimeError, match=why):
        api.ops.wind_add()


def test_the_last_object_out_of_the_wind_takes_the_group_with_it_and_add_wind_builds_it_again(mods, save_and_reopen):
    """The scene's pointer alone does not keep the group (with its drivers) in the file; the scene's settings
    stay."""
    scene = api.scene()
    api.envfx(scene).wind.strength = 7.0
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=1)
    mods.ops.bake(scene, [obj], ao_samples=0)
    twin = obj.copy()
    scene.collection.objects.link(twin)
    mods.ops.add_wind(scene, [obj, twin])
    group = mods.nodes.group_for(scene)
    mods.ops.remove_wind([obj])
    assert mods.nodes.group_for(scene) == group  # the twin still uses it
    mods.ops.remove_wind([twin])
    assert mods.nodes.group_for(scene) is None and "envfx_group_wind" not in scene
    assert not [g for g in bpy.data.node_groups if mods.nodes.is_wind_group(g)]
    save_and_reopen("out.blend")
    scene, obj = api.scene(), bpy.data.objects["Tree"]
    assert not [g.name for g in bpy.data.node_groups if "Wind" in g.name]
    assert api.envfx(scene).wind.strength == pytest.approx(7.0)
    mods.ops.add_wind(scene, [obj])
    group = mods.nodes.group_for(scene)
    assert group.name == "EnvFX Wind" and mods.ops.wind_modifiers(obj)[0].node_group == group
    assert group.animation_data is not None and len(group.animation_data.drivers) > 0


def test_wind_stays_before_bend(mods):
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=1)
    _select([obj])
    assert api.ops.bend_add() == {"FINISHED"}
    assert api.ops.wind_add() == {"FINISHED"}
    assert [m.name for m in obj.modifiers] == ["EnvFX Wind", "EnvFX Bend"]


def test_apply_bend_on_a_plant_in_the_wind_keeps_the_live_wind_equal_to_its_twin(mods):
    """Apply Bend writes new rest positions; the live wind's hidden per-vertex data is made from them (leaf
    flutter phases), so it is made again: afterwards the plant still sways as its numpy twin of the baked mesh."""
    scene = api.scene()
    tree, (obj,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    obj.location = (0.0, 25.0, 0.0)  # far ahead of the pivot: the bend changes the mesh a lot
    mods.ops.bake(scene, [obj], ao_samples=0)
    api.envfx(scene).wind.strength = 1.5
    _select([obj])
    assert api.ops.wind_add() == {"FINISHED"}
    assert api.ops.bend_add() == {"FINISHED"}
    scene.frame_set(7)
    assert api.ops.bend_apply() == {"FINISHED"}
    assert [m.name for m in obj.modifiers] == ["EnvFX Wind"]
    assert _gn_vs_core(mods, obj, (7, 20)) < 1e-4


def _snapshot():
    out = {}
    for o in bpy.data.objects:
        attrs = sorted(a.name for a in api.mesh(o).attributes) if o.type == "MESH" else []
        out[o.name] = (tuple(m.name for m in o.modifiers), tuple(attrs))
    return out, len(bpy.data.node_groups)


def _expect_error(op, match, **kw):
    before = _snapshot()
    with pytest.raises(RuntimeError, match=match):
        op(**kw)
    assert _snapshot() == before


def test_bad_inputs_leave_scene_unchanged(mods):
    scene = api.scene()
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    # nothing selected
    with pytest.raises(RuntimeError, match="poll"):
        api.ops.wind_bake_data()
    # non-mesh objects only
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    scene.collection.objects.link(cam)
    _select([cam])
    _expect_error(api.ops.wind_bake_data, "camera object, not a mesh")
    # points only / loose edges only
    pts = _mesh_object("Points", [(0, 0, 0), (0, 0, 1)], [])
    _select([pts])
    _expect_error(api.ops.wind_bake_data, "no faces \\(points only\\)")
    edge_mesh = bpy.data.meshes.new("Edges")
    edge_mesh.from_pydata([(0, 0, 0), (0, 0, 1)], [(0, 1)], [])
    edges = bpy.data.objects.new("Edges", edge_mesh)
    scene.collection.objects.link(edges)
    _select([edges])
    _expect_error(api.ops.wind_bake_data, "no faces \\(loose edges only\\)")
    # flat asset
    flat = _mesh_object("Flat", [(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 2)])
    _select([flat])
    _expect_error(api.ops.wind_bake_data, "flat")
    # a bad custom layout
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=1)
    _select([obj, cam])
    api.envfx(scene).wind.channel_layout = "CUSTOM"
    before = _snapshot()
    with pytest.raises(ValueError, match="four of"):
        mods.ops.bake(scene, [obj], custom=("LEAF",))
    assert _snapshot() == before
    api.envfx(scene).wind.channel_layout = "HZD"
    before = _snapshot()
    # AO samples out of range are refused before the structure bake, not by Cycles in the AO step after it
    for samples in (-1, mods.core.MAX_AO_SAMPLES + 1, 3_000_000_000):
        with pytest.raises(mods.ops.WindInputError, match=f"AO samples {samples} must be 0 .no AO. to 4096"):
            next(mods.ops.bake_job(scene, [obj], ao_samples=samples))
        assert _snapshot() == before
    # a mix: the camera is skipped with a warning, the tree is baked
    result = mods.ops.bake(scene, [obj, cam], ao_samples=0)
    assert "Cam" in result.skipped and result.changed == ["Tree"]
    # an object given twice is baked once, not skipped as sharing its own mesh
    result = mods.ops.bake(scene, [obj, obj], ao_samples=0)
    assert result.changed == ["Tree"] and not result.skipped and not any("shares" in w for w in result.warnings)
    # a deleted wind object
    bpy.ops.object.effector_add(type="WIND")
    field = api.active()
    api.envfx(scene).wind.source_object = field
    for coll in field.users_collection:
        coll.objects.unlink(field)
    _select([obj])
    _expect_error(api.ops.wind_add, "was deleted or is not in this scene")


def test_a_transform_a_script_just_set_is_baked_and_unusable_ones_are_refused_naming_the_object(mods):
    """The bake's checks read the asset as a script has just placed it (not where the scene last evaluated it), and
    refuse a transform that is not a number, an asset too tall for the wind's Asset Height or one scaled to
    nothing, saying what is wrong, with nothing changed."""
    scene = api.scene()
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=1)
    height = 2.0 * float(np.ptp(tree["positions"][:, 2]))
    obj.scale = (0.0, 0.0, 0.0)  # a keyed grow-in at its first frame
    api.view_layer().update()
    before = _snapshot()
    with pytest.raises(mods.ops.WindInputError, match="Tree is scaled to nothing at this frame"):
        mods.ops.bake(scene, [obj], ao_samples=0)
    assert _snapshot() == before
    obj.scale = (2.0, 2.0, 2.0)  # a script gives it its size and bakes at once: not refused as flat
    result = mods.ops.bake(scene, [obj], ao_samples=0)
    assert result.changed == ["Tree"] and result.stats["height"] == pytest.approx(height, rel=1e-3)
    assert api.envfx(obj).wind.asset_height == pytest.approx(result.stats["height"])
    for attr, value, match in (("location", float("nan"), "Tree's location, rotation or scale is not a number"),
                               ("rotation_euler", float("nan"), "Tree.s location, rotation or scale is not a number"),
                               ("scale", 1e7, "Tree is .* units tall: the wind takes assets up to 1e.06 units")):
        good = tuple(getattr(obj, attr))
        setattr(obj, attr, (value,) * 3)
        before = _snapshot()
        with pytest.raises(mods.ops.WindInputError, match=match):
            mods.ops.bake(scene, [obj], ao_samples=0)
        assert _snapshot() == before and api.envfx(obj).wind.asset_height == pytest.approx(height, rel=1e-3)
        setattr(obj, attr, good)


def test_a_bake_in_a_scene_that_does_not_hold_the_asset_says_so(mods):
    """A script baking an asset with another scene of the file is told the asset is not in that scene (not that
    its collection is excluded from the view layer), and nothing changes."""
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=1)
    other = bpy.data.scenes.new("Other")
    before = _snapshot()
    with pytest.raises(mods.ops.WindInputError, match="Tree .is not in scene 'Other', so Blender does not update its "
                       "world transform there: link it into that scene, or bake again in a scene that holds it"):
        mods.ops.bake(other, [obj], ao_samples=0)
    assert _snapshot() == before


def test_single_island_and_vertex_count_modifier_warn(mods):
    scene = api.scene()
    bpy.ops.mesh.primitive_cylinder_add(depth=4.0, location=(0, 0, 2))
    obj = api.active()
    sub = api.of(bpy.types.SubsurfModifier, obj.modifiers.new("Sub", "SUBSURF"))
    sub.levels = 1
    api.view_layer().update()
    result = mods.ops.bake(scene, [obj], bpy.context.evaluated_depsgraph_get(), ao_samples=0)
    text = " ".join(result.warnings)
    assert "single island" in text
    assert "Sub change the vertex count" in text and "base mesh was baked" in text


def test_ao_bake_and_cancel_leaves_nothing(mods):
    scene = api.scene()
    for o in list(bpy.data.objects):  # the factory cube would enclose ours
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_plane_add(size=6.0)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0, 0, 0.5))
    cube = api.active()
    bpy.ops.object.transform_apply(location=True)
    job = mods.ops.bake_job(scene, [cube], ao_samples=4)
    next(job)
    next(job)
    job.close()  # cancelled half way: nothing written
    assert "EnvFX_Wind" not in api.mesh(cube).attributes and "EnvFX_AO_tmp" not in api.mesh(cube).attributes
    engine = scene.render.engine
    result = mods.ops.bake(scene, [cube], ao_samples=4)
    assert result.changed == [cube.name]
    ao = _read(cube.data, "EnvFX_Wind", 4)[:, 3]
    z = mods.bridge.get_positions(cube.data)[:, 2]
    # vertices on the ground are occluded by the plane, the top ones are open to the sky
    assert ao[z < 0.01].mean() < ao[z > 0.99].mean() - 0.1
    assert "EnvFX_AO_tmp" not in api.mesh(cube).attributes
    assert scene.render.engine == engine


@pytest.mark.parametrize("layout", ["HZD", "CRYENGINE"])
def test_export_layout_and_gltf_round_trip(mods, tmp_path, layout):
    scene = api.scene()
    tree, (obj,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    result = mods.ops.bake(scene, [obj], ao_samples=0, layout="CRYENGINE")
    assert result.changed == ["Tree"]
    exported = _read(obj.data, "EnvFX_Wind_Export", 4)
    ref = mods.core.bake_wind_data(tree["positions"], tree["edges"])
    np.testing.assert_allclose(exported[:, 1], ref.leaf_phase, atol=1e-6)
    np.testing.assert_allclose(exported[:, 0], ref.leaf, atol=1e-6)
    if layout == "HZD":
        mods.ops.bake(scene, [obj], ao_samples=0)  # back to HZD: the export attribute goes away
        assert "EnvFX_Wind_Export" not in api.mesh(obj).attributes
        baked = _read(obj.data, "EnvFX_Wind", 4)
    else:
        baked = exported
    pos = mods.bridge.get_positions(obj.data)
    path = str(tmp_path / "tree.glb")
    _select([obj])
    _export_gltf(str(tmp_path / "tree.blend"), path)
    assert os.path.getsize(path) > 0
    # read the GLB back (its JSON and binary chunks, as any engine's loader does)
    positions, colors, uv = _read_glb(path)
    # match each exported vertex to the original by position (glTF splits vertices, never moves them)
    m = mods.bridge.matrix_to_numpy(obj.matrix_world)
    world = pos @ m[:3, :3].T + m[:3, 3]
    # glTF is Y-up: Blender (x, y, z) is exported as (x, z, -y)
    gl = np.stack([world[:, 0], world[:, 2], -world[:, 1]], 1)
    d = ((positions[:, None, :] - gl[None, :, :]) ** 2).sum(-1)
    nearest = np.argmin(d, axis=1)
    assert np.sqrt(d[np.arange(len(positions)), nearest]).max() < 1e-4
    assert len(np.unique(nearest)) == len(gl)
    np.testing.assert_allclose(colors, baked[nearest], atol=1e-4)
    # the height gradient arrives as the UV map EnvFX_Height_UV (the mesh's only one here: TEXCOORD_0; glTF
    # stores V flipped)
    np.testing.assert_allclose(uv[:, 0], _read(obj.data, "EnvFX_Height", 1)[nearest], atol=1e-6)
    np.testing.assert_allclose(uv[:, 1], 1.0, atol=1e-6)


def test_fbx_export_with_linear_colours_carries_the_bake(mods, tmp_path, load_helper):
    """With the settings the README gives (linear colours, the active colour first, modifiers not applied),
    Blender's FBX exporter writes the plant at rest though it sways in the live wind, the export layout as the
    first colour set (the one Unity and Unreal read) and the HZD data second, both with the baked numbers, and the
    height gradient as the UV map EnvFX_Height_UV; its default (sRGB, modifiers applied) changes the numbers and
    writes the swayed plant of the current frame, as the README warns."""
    fbx = load_helper("fbx_reader", "tests", "blender", "fbx_reader.py")
    scene = api.scene()
    _tree_data, (obj,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    api.mesh(obj).uv_layers.new(name="Texture")
    mods.ops.bake(scene, [obj], ao_samples=0, layout="CRYENGINE")
    mods.ops.add_wind(scene, [obj])
    scene.frame_set(40)
    mesh = api.mesh(obj)
    export, hzd = _read(mesh, "EnvFX_Wind_Export", 4), _read(mesh, "EnvFX_Wind", 4)
    height = _read(mesh, "EnvFX_Height", 1)
    _select([obj])
    path = str(tmp_path / "tree.fbx")
    assert bpy.ops.export_scene.fbx(filepath=path, use_selection=True, colors_type="LINEAR",
                                    prioritize_active_color=True, use_mesh_modifiers=False) == {"FINISHED"}
    (geometry,) = fbx.objects(fbx.read(path), "Geometry").values()
    rest = np.array([v.co for v in mesh.vertices])
    np.testing.assert_allclose(fbx.vertices(geometry), rest, atol=1e-5)  # at rest: the game sways it
    corners = fbx.corner_vertices(geometry)
    assert len(corners) == len(mesh.loops)
    colours = fbx.layers(geometry, "LayerElementColor", "Colors", "ColorIndex", 4)
    assert list(colours) == ["EnvFX_Wind_Export", "EnvFX_Wind"]
    np.testing.assert_allclose(colours["EnvFX_Wind_Export"], export[corners], atol=1e-6)
    np.testing.assert_allclose(colours["EnvFX_Wind"], hzd[corners], atol=1e-6)
    uvs = fbx.layers(geometry, "LayerElementUV", "UV", "UVIndex", 2)
    assert list(uvs) == ["Texture", "EnvFX_Height_UV"]
    np.testing.assert_allclose(uvs["EnvFX_Height_UV"][:, 0], height[corners], atol=1e-6)
    np.testing.assert_allclose(uvs["EnvFX_Height_UV"][:, 1], 0.0, atol=1e-6)

    assert bpy.ops.export_scene.fbx(filepath=path, use_selection=True) == {"FINISHED"}  # the default: sRGB
    (geometry,) = fbx.objects(fbx.read(path), "Geometry").values()
    assert np.abs(fbx.vertices(geometry) - rest).max() > 0.01  # swayed: the wind applied
    # the README's way to apply other modifiers but not EnvFX's: its modifier off in the viewport
    (wind,) = [m for m in obj.modifiers if m.type == "NODES"]
    wind.show_viewport = False
    assert bpy.ops.export_scene.fbx(filepath=path, use_selection=True) == {"FINISHED"}
    (geometry,) = fbx.objects(fbx.read(path), "Geometry").values()
    np.testing.assert_allclose(fbx.vertices(geometry), rest, atol=1e-5)
    default = fbx.layers(geometry, "LayerElementColor", "Colors", "ColorIndex", 4)
    assert list(default)[0] == "EnvFX_Wind"
    assert np.abs(default["EnvFX_Wind_Export"][:, :3] - export[corners][:, :3]).max() > 0.1


def _height_uv(mesh):
    uv = mesh.uv_layers["EnvFX_Height_UV"]
    coords = np.empty(len(mesh.loops) * 2, np.float32)
    uv.data.foreach_get("uv", coords)
    loops = np.empty(len(mesh.loops), np.int64)
    mesh.loops.foreach_get("vertex_index", loops)
    return coords.reshape(-1, 2), loops


def test_height_uv_map_carries_the_height_and_keeps_the_mesh_uv_maps(mods):
    """FBX and glTF export UV maps, not float attributes: the bake also writes the height gradient into the U of
    the UV map EnvFX_Height_UV (V 0), leaving the mesh's active and render UV maps as they were; switched off, a
    bake removes it; a mesh at Blender's limit of 8 UV maps gets none, with a warning."""
    scene = api.scene()
    _tree_data, (obj,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    mesh = api.mesh(obj)
    mesh.uv_layers.new(name="Texture")
    mesh.uv_layers.new(name="Lightmap")
    mesh.uv_layers.active = mesh.uv_layers["Lightmap"]
    result = mods.ops.bake(scene, [obj], ao_samples=0)
    assert result.warnings == []
    coords, loops = _height_uv(mesh)
    height = _read(mesh, "EnvFX_Height", 1)
    np.testing.assert_allclose(coords[:, 0], height[loops], atol=1e-7)
    assert np.all(coords[:, 1] == 0.0)
    assert height.min() < 0.01 and height.max() > 0.99
    assert mesh.uv_layers.active.name == "Lightmap"
    assert [u.name for u in mesh.uv_layers if u.active_render] == ["Texture"]
    assert [u.name for u in mesh.uv_layers] == ["Texture", "Lightmap", "EnvFX_Height_UV"]
    mods.ops.bake(scene, [obj], ao_samples=0)  # again: the same map, rewritten
    assert [u.name for u in mesh.uv_layers] == ["Texture", "Lightmap", "EnvFX_Height_UV"]
    api.envfx(scene).wind.height_uv = False
    mods.ops.bake(scene, [obj], ao_samples=0)
    assert [u.name for u in mesh.uv_layers] == ["Texture", "Lightmap"]
    assert "EnvFX_Height" in mesh.attributes  # the live wind's height stays

    _tree_data, (full,) = _tree(mods, n_branches=2, leaves_per_branch=1)
    for i in range(8):
        api.mesh(full).uv_layers.new(name=f"UV{i}")
    result = mods.ops.bake(scene, [full], ao_samples=0, height_uv=True)
    assert len(result.warnings) == 1 and "already has 8 UV maps" in result.warnings[0]
    assert "switch Height UV Map off" in result.warnings[0]
    assert "EnvFX_Height_UV" not in api.mesh(full).uv_layers and "EnvFX_Wind" in api.mesh(full).attributes


def _export_gltf(blend, path):
    """Blender's own glTF exporter on the saved file, in a separate Blender process: the 4.2 bpy module crashes
    at interpreter exit once the exporter has run, so the export runs where that cannot take the test run down."""
    import subprocess
    import sys

    bpy.ops.wm.save_as_mainfile(filepath=blend, copy=True)
    script = (
        "import bpy, os\n"
        f"bpy.ops.wm.open_mainfile(filepath={blend!r})\n"
        f"bpy.ops.export_scene.gltf(filepath={path!r}, use_selection=True, export_format='GLB', "
        "export_apply=False, export_vertex_color='ACTIVE')\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def _read_glb(path):
    import json
    import struct

    with open(path, "rb") as fh:
        data = fh.read()
    magic, _version, _length = struct.unpack_from("<III", data, 0)
    assert magic == 0x46546C67
    jlen, _ = struct.unpack_from("<II", data, 12)
    doc = json.loads(data[20:20 + jlen])
    blen, _ = struct.unpack_from("<II", data, 20 + jlen)
    binary = data[28 + jlen:28 + jlen + blen]
    comp = {5126: (np.float32, 1.0), 5123: (np.uint16, 65535.0), 5121: (np.uint8, 255.0)}
    width = {"VEC2": 2, "VEC3": 3, "VEC4": 4}

    def accessor(i):
        acc = doc["accessors"][i]
        view = doc["bufferViews"][acc["bufferView"]]
        dtype, scale = comp[acc["componentType"]]
        start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
        arr = np.frombuffer(binary, dtype, acc["count"] * width[acc["type"]], start)
        arr = arr.reshape(acc["count"], width[acc["type"]]).astype(np.float64)
        return arr / scale if acc.get("normalized") or dtype is not np.float32 else arr

    pos, col, uv = [], [], []
    for mesh in doc["meshes"]:
        for prim in mesh["primitives"]:
            pos.append(accessor(prim["attributes"]["POSITION"]))
            col.append(accessor(prim["attributes"]["COLOR_0"]))
            uv.append(accessor(prim["attributes"]["TEXCOORD_0"]))
    return np.concatenate(pos), np.concatenate(col), np.concatenate(uv)


def test_cli_batch_bake(envfx, mods, tmp_path, capsys):
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=2)
    cam = bpy.data.objects.new("Cam", bpy.data.cameras.new("Cam"))
    api.scene().collection.objects.link(cam)
    for o in list(bpy.data.objects):
        if o.type == "MESH" and o is not obj:
            bpy.data.objects.remove(o)
    path = str(tmp_path / "asset.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    before = open(path, "rb").read()
    # bad input: exit code 2, message, the file untouched
    assert mods.cli.main(["wind", path, "--custom", "LEAF,NOPE"]) == 2
    assert mods.cli.main(["wind", path, "--ao-samples", "-1"]) == 2
    assert mods.cli.main(["wind", path, "--objects", "Cam"]) == 2
    assert mods.cli.main(["wind", path, str(tmp_path / "missing.blend")]) == 2
    err = capsys.readouterr().err
    assert "four of" in err and "use 0 (no AO)" in err and "camera object, not a mesh" in err
    assert "No such file" in err and "missing.blend" in err
    assert not (d := envfx.core.blendfile.differences(open(path, "rb").read(), before)), d
    out = str(tmp_path / "out.blend")
    assert mods.cli.main(["wind", path, "--ao-samples", "0", "--preset", "BUSH", "--add", "-o", out]) == 0
    bpy.ops.wm.open_mainfile(filepath=out)
    obj = bpy.data.objects["Tree"]
    assert "EnvFX_Wind" in api.mesh(obj).attributes and "EnvFX_Height" in api.mesh(obj).attributes
    assert api.envfx(obj).wind.category == "PLANT" and mods.ops.wind_modifiers(obj)


def test_overrides_from_vertex_groups_and_materials(mods):
    scene = api.scene()
    tree, (obj,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    branch0 = np.nonzero((tree["branch_id"] == 0) & (tree["kind"] == 2))[0]
    vg = obj.vertex_groups.new(name="EnvFX_Leaf")
    vg.add([int(i) for i in branch0], 1.0, "REPLACE")
    # a leaf card put in a "Branch" material is no longer a leaf
    leaf0 = np.nonzero(tree["leaf_id"] == 0)[0]
    api.mesh(obj).materials.append(bpy.data.materials.new("Plain"))
    api.mesh(obj).materials.append(bpy.data.materials.new("Oak Branch"))
    index = np.zeros(len(api.mesh(obj).polygons), np.int32)
    index[np.isin(tree["faces"], leaf0).all(1)] = 1
    api.mesh(obj).polygons.foreach_set("material_index", index)
    n_objects, n_groups = len(bpy.data.objects), len(bpy.data.node_groups)
    mods.ops.bake(scene, [obj], ao_samples=0)
    rgba = _read(obj.data, "EnvFX_Wind", 4)
    assert rgba[branch0, 0].max() == pytest.approx(1.0)   # the marked branch flutters like a leaf
    assert np.all(rgba[leaf0, 0] == 0.0)                    # the marked leaf does not
    assert len(bpy.data.objects) == n_objects and len(bpy.data.node_groups) == n_groups  # temporaries gone


def test_negative_scale_warns_and_bakes(mods):
    scene = api.scene()
    tree, (obj,) = _tree(mods, matrix=Matrix.Diagonal((-1.0, 1.0, 1.0, 1.0)), n_branches=2, leaves_per_branch=2)
    result = mods.ops.bake(scene, [obj], ao_samples=0)
    assert any("negative scale" in w for w in result.warnings)
    ref = mods.core.bake_wind_data(tree["positions"], tree["edges"])
    np.testing.assert_allclose(_read(obj.data, "EnvFX_Height", 1), ref.height, atol=1e-5)


def test_large_bake_progress_and_cancel(mods, capsys):
    scene = api.scene()
    progress = importlib.import_module(mods.ops.__name__.rsplit(".", 2)[0] + ".progress")
    tree, (obj,) = _tree(mods, n_branches=30, leaves_per_branch=10, leaf_grid=8)
    steps = []

    def cancel_after_three():
        steps.append(1)
        return len(steps) >= 3

    with pytest.raises(progress.Cancelled):
        progress.run(mods.ops.bake_job(scene, [obj], ao_samples=0), "Wind bake", should_cancel=cancel_after_three)
    assert "EnvFX_Wind" not in api.mesh(obj).attributes and "EnvFX_Height" not in api.mesh(obj).attributes
    mods.ops.bake(scene, [obj], ao_samples=0)
    out = capsys.readouterr().out
    assert "EnvFX Wind bake:   0%" in out and "EnvFX Wind bake: 100%" in out
    assert "EnvFX_Wind" in api.mesh(obj).attributes


@pytest.mark.parametrize("with_camera", [True, False])
def test_grass_tilt_fade_terrain_match_core(mods, with_camera):
    scene = api.scene()
    w = api.envfx(scene).wind
    obj = _grass_clump(mods, scene)
    # a tilted terrain plane: z = 0.2 x - 0.1 y + 0.3
    bpy.ops.mesh.primitive_plane_add(size=400.0, location=(0.0, 0.0, 0.3))
    terrain = api.active()
    terrain.rotation_euler = (math.atan(-0.1), -math.atan(0.2), 0.0)
    api.view_layer().update()
    nrm = np.array(terrain.matrix_world.to_3x3().col[2])
    w.terrain_object = terrain
    w.grass_tilt, w.grass_fade_start, w.grass_fade_end = 0.8, 4.0, 30.0
    cam = api.camera(scene)
    if with_camera:
        cam.location = (2.0, -8.0, 9.0)
        cam.rotation_euler = (math.radians(35), 0.0, 0.0)
    else:
        bpy.data.objects.remove(cam)
    mods.ops.add_wind(scene, [obj])
    rest = mods.bridge.get_positions(obj.data).astype(np.float64)
    m = mods.bridge.matrix_to_numpy(obj.matrix_world)
    world = rest @ m[:3, :3].T + m[:3, 3]
    p0 = np.array(terrain.matrix_world.translation)
    tz = p0[2] - (nrm[0] * (world[:, 0] - p0[0]) + nrm[1] * (world[:, 1] - p0[1])) / nrm[2]
    worst = _gn_vs_core(mods, obj, (1, 23, 77), terrain_z=tz)
    assert worst < 1e-4, worst
    fade = mods.core.grass_fade(mods.bridge.matrix_to_numpy(cam.matrix_world) if with_camera else None,
                                m[:3, 3], mods.nodes.params_from_scene(scene))
    assert (0.0 < fade < 1.0) if with_camera else fade == 1.0
    # still air, no ambient, no tilt, no fade: the grass only follows the terrain; its base sits on the plane
    w.strength, w.ambient, w.grass_tilt, w.grass_fade_end = 0.0, 0.0, 0.0, 0.0
    scene.frame_set(5)
    got = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
    got_world = got @ m[:3, :3].T + m[:3, 3]
    base = rest[:, 2] <= 1e-6
    np.testing.assert_allclose(got_world[base, 2], tz[base], atol=1e-4)
    np.testing.assert_allclose(got_world[:, :2], world[:, :2], atol=1e-5)


def test_terrain_rays_are_cast_in_the_terrain_space_onto_its_mesh_as_it_is(mods):
    """Speed (``wind_terrain_follow`` in benchmarks/bench_wind.py): every clump casts its rays onto the terrain's
    evaluated mesh as it is (Object Info in ORIGINAL space), in the terrain's own space, so all clumps hit one mesh
    whose BVH tree Blender keeps (a RELATIVE Object Info made a new mesh, and tree, per clump and frame). The rays
    are the same world segments as before: a scaled, rotated terrain far below a scaled clump is hit where the
    twin says, and only within the rays' reach (``TERRAIN_RAY`` object units of the clump above and below)."""
    scene = api.scene()
    w = api.envfx(scene).wind
    g = mods.shapes.make_grass(blades=8, height=0.8, seed=3)
    obj = _mesh_object("Grass", g["positions"], g["faces"], Matrix.Translation((2.0, 3.0, 0.0))
                       @ Matrix.Rotation(0.7, 4, "Z") @ Matrix.Diagonal((1.5, 2.5, 2.0, 1.0)))
    mods.ops.bake(scene, [obj], ao_samples=0)
    mods.ops.apply_preset([obj], "GRASS")
    bpy.ops.mesh.primitive_plane_add(size=4000.0, location=(5.0, -3.0, -150.0))
    terrain = api.active()
    terrain.rotation_euler = (0.15, -0.2, 0.9)
    terrain.scale = (0.1, 0.05, 3.0)
    api.view_layer().update()
    w.terrain_object = terrain
    w.grass_fade_end = 0.0
    mods.ops.add_wind(scene, [obj])
    tree = mods.nodes.group_for(scene)
    assert tree.nodes["Terrain"].transform_space == "ORIGINAL"
    assert tree.nodes["Terrain Ray"].inputs["Target Geometry"].links[0].from_node == tree.nodes["Terrain"]
    mt = np.array(terrain.matrix_world)
    nrm = np.linalg.inv(mt[:3, :3]).T @ (0.0, 0.0, 1.0)
    p0 = mt[:3, 3]

    def terrain_z():
        m = mods.bridge.matrix_to_numpy(obj.matrix_world)
        world = mods.bridge.get_positions(obj.data).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
        return p0[2] - (nrm[0] * (world[:, 0] - p0[0]) + nrm[1] * (world[:, 1] - p0[1])) / nrm[2]

    tz = terrain_z()
    assert (tz < -100.0).all() and (tz > -200.0).all()  # within 200 m below (the clump's z scale is 2), not 100
    worst = _gn_vs_core(mods, obj, (1, 23), terrain_z=tz)
    assert worst < 1e-4, worst
    obj.scale.z = 1.0  # the rays reach 100 m down now: they miss the terrain, the grass does not follow it
    api.view_layer().update()
    worst = _gn_vs_core(mods, obj, (5,), terrain_z=np.full(len(tz), np.nan))
    assert worst < 1e-4, worst


def _bent_grass_on_terrain(mods, envfx):
    """Grass in the wind 25 m ahead of the pivot following a tilted terrain plane (physical z = 0.2 x - 0.1 y +
    0.3), both bent by the scene's bend (Runner along +Y, strength 0.01, spread 2). Returns (scene, grass,
    terrain, physical terrain z under each grass vertex)."""
    scene = api.scene()
    w = api.envfx(scene).wind
    g = mods.shapes.make_grass(blades=10, height=0.8, seed=2)
    obj = _mesh_object("Grass", g["positions"], g["faces"],
                       Matrix.Translation((2.0, 25.0, 0.4)) @ Matrix.Rotation(0.7, 4, "Z"))
    mods.ops.bake(scene, [obj], ao_samples=0)
    mods.ops.apply_preset([obj], "GRASS")
    # a grid: the bend moves vertices, so a bent terrain needs them (0.5 m apart)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=120, y_subdivisions=120, size=60.0, location=(0.0, 0.0, 0.3))
    terrain = api.active()
    terrain.rotation_euler = (math.atan(-0.1), -math.atan(0.2), 0.0)
    api.view_layer().update()
    nrm = np.array(terrain.matrix_world.to_3x3().col[2])
    w.terrain_object = terrain
    w.strength, w.gust_strength = 1.2, 0.5
    pivot = bpy.data.objects.new("Player", None)
    scene.collection.objects.link(pivot)
    b = api.envfx(scene).bend
    b.mode, b.axis, b.pivot, b.strength, b.spread = "RUNNER", "POS_Y", pivot, 0.01, 2.0
    mods.ops.add_wind(scene, [obj])
    envfx.operators.bend.add_bend(scene, [terrain, obj])
    envfx.operators.bend.sync_readers(scene)  # what operators.bend will call itself
    m = mods.bridge.matrix_to_numpy(obj.matrix_world)
    world = mods.bridge.get_positions(obj.data).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    p0 = np.array(terrain.matrix_world.translation)
    tz = p0[2] - (nrm[0] * (world[:, 0] - p0[0]) + nrm[1] * (world[:, 1] - p0[1])) / nrm[2]
    return scene, obj, terrain, tz


def _drawn_terrain_z(mods, terrain, obj):
    """World z of the terrain as drawn (evaluated: bend included) straight below each rest vertex of ``obj`` (rays
    from z = 20: mathutils and the ray cast are float32, so a far start would cost precision)."""
    m = mods.bridge.matrix_to_numpy(obj.matrix_world)
    world = mods.bridge.get_positions(obj.data).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    dg = bpy.context.evaluated_depsgraph_get()
    inv = terrain.matrix_world.inverted()
    down = (inv.to_3x3() @ Matrix.Identity(3).col[2]) * -1.0
    out = np.full(len(world), np.nan)
    for i, (x, y, _z) in enumerate(world):
        hit, loc, _n, _f = terrain.ray_cast(inv @ Vector((x, y, 20.0)), down, distance=1e3, depsgraph=dg)
        if hit:
            out[i] = (terrain.matrix_world @ loc).z
    return out


def _physical_terrain_z(mods, envfx, terrain, obj):
    """What ``terrain_z`` means on a bent level: the terrain's physical (unbent) height under each rest vertex,
    read as the live wind reads it: its drawn height plus the drop its bend gives that x, y."""
    drawn = _drawn_terrain_z(mods, terrain, obj)
    if envfx.shader_nodes.bend.shown_group(terrain) is None:
        return drawn
    m = mods.bridge.matrix_to_numpy(obj.matrix_world)
    world = mods.bridge.get_positions(obj.data).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    flat = np.column_stack([world[:, :2], np.zeros(len(world))])
    drop = -envfx.core.bend.forward(flat, envfx.shader_nodes.bend.params_from_scene(api.scene()))[:, 2]
    return drawn + drop


def _bent_gn_vs_core(mods, envfx, obj, frames, terrain_z=None):
    """Largest difference between the evaluated (windy, then bent) grass and the twins: the bend of the rest
    pose plus the wind's offsets with ``terrain_z`` the terrain's physical height (default: read from the scene's
    terrain object, ``_physical_terrain_z``)."""
    scene = api.scene()
    if terrain_z is None and api.envfx(scene).wind.terrain_object is not None:
        terrain_z = _physical_terrain_z(mods, envfx, api.envfx(scene).wind.terrain_object, obj)
    mesh = obj.data
    rest = mods.bridge.get_positions(mesh).astype(np.float64)
    h, rgba = _read(mesh, "EnvFX_Height", 1), _read(mesh, "EnvFX_Wind", 4)
    normals = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertex_normals.foreach_get("vector", normals)
    m = mods.bridge.matrix_to_numpy(obj.matrix_world)
    worst = 0.0
    for frame in frames:
        scene.frame_set(frame)
        got = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
        cam = mods.bridge.matrix_to_numpy(scene.camera.matrix_world) if scene.camera else None
        unbent = rest + mods.core.wind_offsets(rest, h, rgba, normals.reshape(-1, 3), m, frame,
                                               mods.nodes.params_from_scene(scene), mods.nodes.asset_params(obj),
                                               camera_matrix=cam, terrain_z=terrain_z, faces=_faces(mods, mesh))
        bend = envfx.shader_nodes.bend.params_from_scene(scene)
        expect = envfx.core.bend.forward_local(unbent, m, bend) if envfx.operators.bend.bend_modifiers(obj) \
            else unbent
        worst = max(worst, float(np.abs(got - expect).max()))
    return worst


def test_grass_on_bent_terrain_stands_on_it_bent_once(mods, envfx):
    """Grass following a bent terrain reads the terrain's physical (unbent) surface, like every EnvFX deformation
    before the bend: the live wind equals its twin with ``terrain_z`` the physical terrain height, bent once by
    the grass's own bend, so the grass stands on the terrain as drawn (it was bent twice: metres below it). Holds
    when the bend's mode changes (its group is rebuilt), when the terrain is excluded from the bend or leaves it
    (then the grass stands on the flat terrain's physical surface and its own bend draws it)."""
    scene, obj, terrain, tz = _bent_grass_on_terrain(mods, envfx)
    physical = _physical_terrain_z(mods, envfx, terrain, obj)
    np.testing.assert_allclose(physical, tz, atol=0.01)  # the plane, up to the bent grid's interpolation
    assert _bent_gn_vs_core(mods, envfx, obj, (1, 23)) < 1e-4
    # still air: the grass's base is drawn on the bent terrain
    w = api.envfx(scene).wind
    w.strength, w.ambient = 0.0, 0.0
    scene.frame_set(5)
    m = mods.bridge.matrix_to_numpy(obj.matrix_world)
    got = mods.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get()) @ m[:3, :3].T + m[:3, 3]
    base = mods.bridge.get_positions(obj.data)[:, 2] <= 1e-6
    drawn = _drawn_terrain_z(mods, terrain, obj)
    assert drawn[base].max() < tz[base].min() - 4.0  # the bend drops the ground there by metres
    np.testing.assert_allclose(got[base, 2], drawn[base], atol=1e-4)
    w.strength, w.ambient = 1.2, 1.0
    api.envfx(scene).bend.mode = "PLANET"  # the bend group is rebuilt in place: the terrain follow reads it still
    assert _bent_gn_vs_core(mods, envfx, obj, (7,)) < 1e-4
    api.envfx(terrain).bend_exclude = True  # the terrain is drawn flat: its physical surface is what the ray hits
    assert _bent_gn_vs_core(mods, envfx, obj, (9,), tz) < 1e-4
    api.envfx(terrain).bend_exclude = False
    assert _bent_gn_vs_core(mods, envfx, obj, (10,)) < 1e-4
    envfx.operators.bend.remove_bend([terrain])
    envfx.operators.bend.sync_readers(scene)
    assert _bent_gn_vs_core(mods, envfx, obj, (11,), tz) < 1e-4


def test_grass_on_bent_terrain_after_save_and_reopen_and_in_a_full_copy(mods, envfx, save_and_reopen):
    """The terrain follow keeps reading the terrain's bend after the file is saved and opened again; a full copy
    of the level that gets its own bend (another mode) reads its own terrain's bend, the original its own."""
    _bent_grass_on_terrain(mods, envfx)
    save_and_reopen("bent_grass.blend")
    scene, common, bend = api.scene(), envfx.shader_nodes.common, envfx.shader_nodes.bend
    obj = bpy.data.objects["Grass"]
    assert mods.nodes.group_for(scene).nodes[common.BEND_READER].node_tree == bend.group_for(scene)
    assert _bent_gn_vs_core(mods, envfx, obj, (3,)) < 1e-4
    original = scene
    assert bpy.ops.scene.new(type="FULL_COPY") == {"FINISHED"}
    copy = api.scene()
    assert copy != original
    api.envfx(copy).bend.mode = "PLANET"
    api.envfx(copy).bend.strength = 0.005
    api.view_layer().update()  # the handlers give the copy its own wind group at the next update
    assert bend.group_for(copy) != bend.group_for(original)
    for s in (original, copy):
        assert mods.nodes.group_for(s).nodes[common.BEND_READER].node_tree == bend.group_for(s)
    grass_copy = next(o for o in copy.objects if o.name.startswith("Grass") and o != obj)
    assert api.envfx(copy).wind.terrain_object != api.envfx(original).wind.terrain_object
    assert _bent_gn_vs_core(mods, envfx, grass_copy, (4,)) < 1e-4


def test_a_full_copy_with_a_plant_in_edit_mode_takes_its_first_wind_setting(mods, capfd):
    """A Full Copy of the level gets its own wind group at its first wind setting, which writes the live data of
    its plants again; a plant in Edit Mode then (its attributes are Edit Mode's own, not the mesh's) is left as it
    is, with no error, and sways by the copy's wind, as the twin says, once it is back in Object Mode."""
    _tree_data, (obj,) = _tree(mods)
    scene = api.scene()
    mods.ops.bake(scene, [obj], ao_samples=0)
    mods.ops.add_wind(scene, [obj])
    assert bpy.ops.scene.new(type="FULL_COPY") == {"FINISHED"}
    copy = api.scene()
    plant = next(o for o in copy.objects if o.name.startswith("Tree") and o != obj)
    _select([plant])
    assert bpy.ops.object.mode_set(mode="EDIT") == {"FINISHED"}
    capfd.readouterr()
    api.envfx(copy).wind.strength = 3.0  # the copy's first wind setting: its own group
    assert "Traceback" not in "".join(capfd.readouterr())
    assert bpy.ops.object.mode_set(mode="OBJECT") == {"FINISHED"}
    assert mods.nodes.group_for(copy) not in (None, mods.nodes.group_for(scene))
    assert api.nodes_modifier(plant).node_group == mods.nodes.group_for(copy)
    assert _gn_vs_core(mods, plant, (7, 30)) < 1e-4
    moved = mods.bridge.evaluated_positions(plant, bpy.context.evaluated_depsgraph_get())
    assert np.abs(moved - mods.bridge.get_positions(api.mesh(plant))).max() > 1e-3


@pytest.mark.parametrize("leave", ["remove", "apply", "delete"])
def test_bend_group_goes_with_its_last_object_though_the_terrain_follow_read_it(mods, envfx, leave, save_and_reopen):
    """The wind's terrain follow nests the bend group of a bent terrain, but that does not keep the group: when
    the last object leaves the bend (Remove Bend, Apply Bend, or deleted by hand and the file saved) it goes,
    and nothing points at it any more."""
    scene, obj, terrain, tz = _bent_grass_on_terrain(mods, envfx)
    ops, nodes, common = envfx.operators.bend, envfx.shader_nodes.bend, envfx.shader_nodes.common
    group = nodes.group_for(scene)
    wind = mods.nodes.group_for(scene)
    assert wind.nodes[common.BEND_READER].node_tree == group
    ops.remove_bend([obj])  # the grass leaves first: the terrain is the last bent object
    assert nodes.group_for(scene) == group
    if leave == "remove":
        ops.remove_bend([terrain])
    elif leave == "apply":
        ops.apply_bend(scene, [terrain])
    else:
        bpy.data.objects.remove(terrain)
        save_and_reopen("deleted.blend")
        scene, wind = api.scene(), mods.nodes.group_for(api.scene())
    assert nodes.group_for(scene) is None and "envfx_group_bend" not in scene
    assert not [g.name for g in bpy.data.node_groups if nodes.is_bend_group(g) or "Bend" in g.name]
    assert wind.nodes[common.BEND_READER].node_tree is None
    assert wind.nodes[common.BEND_READER_FLAG].outputs[0].default_value == 0.0
    obj = bpy.data.objects["Grass"]
    if leave != "delete":
        assert _bent_gn_vs_core(mods, envfx, obj, (4,)) < 1e-4


@pytest.mark.parametrize("engine", ["CYCLES", "EEVEE"])
def test_wind_animates_in_renders(mods, tmp_path, engine):
    from PIL import Image

    scene = api.scene()
    for o in list(bpy.data.objects):
        if o.type == "MESH":
            bpy.data.objects.remove(o)
    tree, (obj,) = _tree(mods, n_branches=6, leaves_per_branch=4)
    mods.ops.bake(scene, [obj], ao_samples=0)
    api.envfx(scene).wind.strength = 2.0
    mods.ops.add_wind(scene, [obj])
    cam = api.camera(scene)
    cam.location, cam.rotation_euler = (0.0, -16.0, 4.0), (math.radians(90), 0.0, 0.0)
    if engine == "EEVEE":
        api.set_engine(scene, api.eevee_engine())
        api.of(bpy.types.SceneEEVEE, scene.eevee).taa_render_samples = 1
    else:
        api.set_engine(scene, "CYCLES")
        cycles: Any = scene.cycles  # Cycles' own settings (an add-on's PropertyGroup, unknown to the stubs)
        cycles.samples = 1
        cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = 64, 48, 100
    images = []
    for frame in (1, 31):
        scene.frame_set(frame)
        scene.render.filepath = str(tmp_path / f"f{frame}.png")
        bpy.ops.render.render(write_still=True)
        images.append(np.asarray(Image.open(scene.render.filepath).convert("L"), np.float32))
    # the tree is in the picture (darker than the sky) and it moved between the frames
    assert images[0].min() < images[0].max() - 30
    assert np.abs(images[0] - images[1]).max() > 30


def test_deleted_wind_object_falls_back_to_scene_settings(mods):
    scene = api.scene()
    w = api.envfx(scene).wind
    tree, (obj,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    mods.ops.bake(scene, [obj], ao_samples=0)
    bpy.ops.object.effector_add(type="WIND", rotation=(math.radians(90), 0.0, 1.2))
    field = api.active()
    api.field(field).strength = 3.0
    w.source_object = field
    w.direction, w.strength = math.radians(200), 0.8
    mods.ops.add_wind(scene, [obj])
    assert _gn_vs_core(mods, obj, (7, 40)) < 1e-4
    strength_path = 'nodes["Source Strength"].outputs[0].default_value'
    group = bpy.data.node_groups["EnvFX Wind"]
    assert group.animation_data is not None
    driver = group.animation_data.drivers.find(strength_path).driver
    assert driver is not None and driver.variables[0].targets[0].id == field
    bpy.data.objects.remove(field)  # deleted: the pointer clears, the group follows the scene settings
    api.view_layer().update()
    assert mods.nodes.params_from_scene(scene).strength == pytest.approx(0.8)
    assert group.animation_data.drivers.find(strength_path) is None  # no driver left reading a deleted object
    assert _gn_vs_core(mods, obj, (7, 40)) < 1e-4


def test_outdated_group_is_rebuilt_after_load(mods, as_saved_by_old_envfx, save_and_reopen):
    scene = api.scene()
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=2)
    mods.ops.bake(scene, [obj], ao_samples=0)
    mods.ops.add_wind(scene, [obj])
    group = bpy.data.node_groups["EnvFX Wind"]
    group["envfx_stamp"] = "0"  # as saved by an older version, before scenes pointed at their groups
    as_saved_by_old_envfx(group, scene)
    bpy.data.scenes.new("Other")
    save_and_reopen("old.blend")
    mods.nodes.refresh_after_load()
    group = bpy.data.node_groups["EnvFX Wind"]
    assert group["envfx_stamp"] == str(mods.nodes.VERSION)
    assert mods.nodes.group_for(bpy.data.scenes["Scene"]) == group  # the scene its drivers read
    assert mods.nodes.group_for(bpy.data.scenes["Other"]) is None
    obj = bpy.data.objects["Tree"]
    assert mods.ops.wind_modifiers(obj)
    assert _gn_vs_core(mods, obj, (3, 50)) < 1e-4


@pytest.mark.parametrize("layout", ["HZD", "CUSTOM"])
def test_panel_draws_every_setting(envfx, recording_layout, layout):
    scene = api.scene()
    api.envfx(scene).wind.channel_layout = layout
    bpy.ops.object.effector_add(type="WIND")
    field = api.active()
    api.envfx(scene).wind.source_object = field
    for coll in field.users_collection:
        coll.objects.unlink(field)  # a wind object that left the scene is called out
    log = []
    panel = type("P", (), {"layout": recording_layout(log)})()
    api.view_layer().objects.active = bpy.data.objects["Cube"]
    envfx.panels.wind.VIEW3D_PT_envfx_wind.draw(panel, bpy.context)
    for name in ("source_object", "direction", "strength", "gust_strength", "gust_frequency", "loop_frames",
                 "ambient", "grass_tilt", "grass_fade_start", "grass_fade_end", "terrain_object", "ao_samples",
                 "leaf_size", "channel_layout", "category", "rigidity", "bend", "sway", "lift", "micro", "ramp",
                 "main_bend", "envfx.wind_bake_data", "envfx.wind_add", "envfx.wind_remove", "envfx.wind_preset"):
        assert name in log, name
    assert ("custom_r" in log) == (layout == "CUSTOM")
    assert any("not in this scene" in entry for entry in log)


def test_each_scene_of_a_file_has_its_own_wind(mods, scene_depsgraph):
    """Two scenes with different winds (levels of one file): each sways its plants with its own settings, and
    evaluating one scene does not take the other's wind over (the depsgraph handler keeps each group to its
    scene)."""
    scene_a = api.scene()
    tree, (obj_a,) = _tree(mods, n_branches=3, leaves_per_branch=2)
    mods.ops.bake(scene_a, [obj_a], ao_samples=0)
    w = api.envfx(scene_a).wind
    w.strength, w.direction = 1.3, math.radians(35)
    mods.ops.add_wind(scene_a, [obj_a])
    scene_b = bpy.data.scenes.new("Windy")
    scene_b.render.fps = 30  # the live wind follows each scene's own frame rate too
    obj_b = bpy.data.objects.new("Tree B", api.mesh(obj_a).copy())
    scene_b.collection.objects.link(obj_b)
    obj_b.location = (4.0, -2.0, 0.0)
    wb = api.envfx(scene_b).wind
    wb.strength, wb.direction, wb.gust_strength = 0.5, math.radians(140), 0.9
    mods.ops.add_wind(scene_b, [obj_b])
    group_a, group_b = mods.nodes.group_for(scene_a), mods.nodes.group_for(scene_b)
    assert group_a.name == "EnvFX Wind" and group_b.name == "EnvFX Wind (Windy)"

    def check(scene, obj, frame):
        scene.frame_current = frame
        dg = scene_depsgraph(scene)
        mesh = obj.data
        rest = mods.bridge.get_positions(mesh).astype(np.float64)
        normals = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertex_normals.foreach_get("vector", normals)
        want = rest + mods.core.wind_offsets(rest, _read(mesh, "EnvFX_Height", 1), _read(mesh, "EnvFX_Wind", 4),
                                             normals.reshape(-1, 3), mods.bridge.matrix_to_numpy(obj.matrix_world),
                                             frame, mods.nodes.params_from_scene(scene),
                                             mods.nodes.asset_params(obj))
        got = mods.bridge.evaluated_positions(obj, dg)
        assert np.abs(got - want).max() < 1e-4, scene.name
        return got

    for frame in (7, 40):
        got_a = check(scene_a, obj_a, frame)
        got_b = check(scene_b, obj_b, frame)
        check(scene_a, obj_a, frame)
        assert np.abs(got_a - got_b).max() > 0.01  # the same plant in two winds
    wb.strength = 2.0  # B's settings are B's alone
    np.testing.assert_array_equal(check(scene_a, obj_a, 40), got_a)
    check(scene_b, obj_b, 40)
    # a plant linked into both scenes follows the scene that put it in the wind last, and says so
    scene_b.collection.objects.link(obj_a)
    result = mods.ops.add_wind(scene_b, [obj_a])
    assert result.changed == [obj_a.name] and "was in the wind of scene 'Scene'" in " ".join(result.warnings)
    assert [m.node_group for m in mods.ops.wind_modifiers(obj_a)] == [group_b]
    assert mods.ops.add_wind(scene_b, [obj_a]).unchanged == [obj_a.name]


def test_appending_a_plant_in_the_wind_brings_no_scene_and_it_sways_with_the_scene_it_lands_in(mods, tmp_path):
    """A plant appended from an asset file keeps its live wind but does not bring the asset file's scene along:
    it sways with the wind of the scene it is appended into."""
    scene = api.scene()
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=2)
    mods.ops.bake(scene, [obj], ao_samples=0)
    bpy.ops.object.effector_add(type="WIND", location=(0, 0, 0), rotation=(math.radians(90), 0, 2.0))
    api.envfx(scene).wind.source_object = api.active()  # the asset file's own wind, left behind
    mods.ops.add_wind(scene, [obj])
    path = str(tmp_path / "plants.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    api.envfx(scene).wind.strength, api.envfx(scene).wind.direction = 1.7, math.radians(200)
    (obj,) = api.load_objects(path, ["Tree"], link=False)
    scene.collection.objects.link(obj)
    api.view_layer().update()  # what the UI does after an append
    assert [s.name for s in bpy.data.scenes] == [scene.name]
    assert _gn_vs_core(mods, obj, (5, 30)) < 1e-4  # the scene's wind, not the asset file's wind object
    # it joined the scene's wind
    assert mods.nodes.group_for(scene) == api.of(bpy.types.NodesModifier, obj.modifiers[0]).node_group
    assert mods.ops.add_wind(scene, [obj]).unchanged == ["Tree"]


def _linked_plant(mods, tmp_path, in_wind: bool):
    """A plant "Tree" with baked wind data (and in the wind, with ``in_wind``) written to a library file, then
    linked into a new file: (scene, the linked plant)."""
    tree, (obj,) = _tree(mods, n_branches=2, leaves_per_branch=2)
    mods.ops.bake(api.scene(), [obj], ao_samples=0)
    if in_wind:
        mods.ops.add_wind(api.scene(), [obj])
    lib = str(tmp_path / "plants.blend")
    bpy.data.libraries.write(lib, {obj})
    bpy.ops.wm.read_homefile(app_template="")
    scene = api.scene()
    (linked,) = api.load_objects(lib, ["Tree"], link=True)
    scene.collection.objects.link(linked)
    return scene, linked


@pytest.mark.parametrize("wind_in_library", [False, True])
def test_a_linked_plant_is_named_and_its_library_override_takes_the_wind(mods, tmp_path, wind_in_library):
    """A plant linked from an asset library cannot take a modifier: it is named with what to do. A library
    override of it can when its (library) mesh carries the live wind's data, that is when the plant is in the
    wind in the library file, and then sways like the numpy twin; otherwise it is named with what to do."""
    scene, linked = _linked_plant(mods, tmp_path, wind_in_library)
    cube = bpy.data.objects["Cube"]
    with pytest.raises(mods.ops.WindInputError, match="Tree .linked from library .*library override first"):
        mods.ops.add_wind(scene, [linked])
    assert len(linked.modifiers) == int(wind_in_library) and mods.nodes.group_for(scene) is None
    override = linked.override_create(remap_local_usages=True)
    if not wind_in_library:
        with pytest.raises(mods.ops.WindInputError, match="mesh is linked from library .*without live wind data"):
            mods.ops.add_wind(scene, [override])
        assert not override.modifiers and mods.nodes.group_for(scene) is None
        return
    result = mods.ops.add_wind(scene, [override, cube])
    assert sorted(result.changed) == sorted([override.name, "Cube"]) and api.mesh(override).library is not None
    assert [m.node_group for m in mods.ops.wind_modifiers(override)] == [mods.nodes.group_for(scene)]
    assert _gn_vs_core(mods, override, (5, 30)) < 1e-4


def test_an_override_of_a_windy_plant_joins_the_scene_wind_by_itself(mods, tmp_path):
    """Like an appended plant, a library override of a plant in the wind in its library file joins the wind of
    the scene it lands in at the next update, without Add Wind, and sways with that scene's wind."""
    scene, linked = _linked_plant(mods, tmp_path, in_wind=True)
    api.envfx(scene).wind.strength, api.envfx(scene).wind.direction = 1.7, math.radians(200)
    override = linked.override_create(remap_local_usages=True)
    api.view_layer().update()  # what the UI does after making the override
    assert [m.node_group for m in mods.ops.wind_modifiers(override)] == [mods.nodes.group_for(scene)]
    assert _gn_vs_core(mods, override, (5, 30)) < 1e-4


def test_linked_plants_are_left_alone_and_an_override_keeps_its_library_wind_and_its_preset(mods, tmp_path,
                                                                                            save_and_reopen):
    """Remove Wind and the presets skip a plant linked from a library (a change would be lost at the next load)
    and say what to do. On a library override, Remove Wind refuses the library's wind for the same reason,
    while a preset applies and is kept through save and reload, and the plant sways with it."""
    scene, linked = _linked_plant(mods, tmp_path, in_wind=True)
    for result in (mods.ops.remove_wind([linked]), mods.ops.apply_preset([linked], "GRASS")):
        assert result.changed == [] and "Tree" in result.skipped
        assert "linked from library" in result.skipped["Tree"] and "make it local first" in result.skipped["Tree"]
    assert len(mods.ops.wind_modifiers(linked)) == 1 and api.envfx(linked).wind.category == "TREE"
    override = linked.override_create(remap_local_usages=True)
    api.view_layer().update()
    result = mods.ops.remove_wind([override])
    assert result.changed == [] and len(mods.ops.wind_modifiers(override)) == 1
    assert "its wind came from library" in result.skipped["Tree"]
    assert "a library override cannot remove it; make it local" in result.skipped["Tree"]
    assert mods.ops.apply_preset([override], "GRASS").changed == ["Tree"]
    save_and_reopen("level.blend")
    override = next(o for o in bpy.data.objects if o.override_library is not None)
    assert api.envfx(override).wind.category == "GRASS"
    assert [m.node_group for m in mods.ops.wind_modifiers(override)] == [mods.nodes.group_for(api.scene())]
    assert _gn_vs_core(mods, override, (5, 30)) < 1e-4


def _grass_field(blades: int, seed: int = 3):
    """One mesh of ``blades`` thin vertical quads (0.4-0.6 m tall) scattered over 6 x 6 m: a field of grass."""
    rng = np.random.default_rng(seed)
    verts, faces = [], []
    for i in range(blades):
        x, y = rng.uniform(-3, 3, 2)
        h, w, a = rng.uniform(0.4, 0.6), 0.02, rng.uniform(0, math.pi)
        dx, dy = w * math.cos(a), w * math.sin(a)
        verts += [(x - dx, y - dy, 0.0), (x + dx, y + dy, 0.0), (x + dx, y + dy, h), (x - dx, y - dy, h)]
        faces.append(tuple(range(4 * i, 4 * i + 4)))
    mesh = bpy.data.meshes.new("Field")
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new("Field", mesh)
    api.scene().collection.objects.link(obj)
    return obj


def test_a_grass_field_baked_with_defaults_is_named_as_blades_and_the_grass_category_recommended(mods, capsys):
    """#29: 300 blades in one object, baked with the defaults (category Tree): the report calls them stems standing
    with no trunk and recommends the Grass category; set to Grass, no recommendation; a bush of 4 stems gets none."""
    field = _grass_field(300)
    _select([field])
    assert api.ops.wind_bake_data() == {"FINISHED"}
    out = capsys.readouterr().out
    assert "no trunk, 300 stems" in out and "Category to Grass" in out, out
    api.envfx(field).wind.category = "GRASS"
    assert api.ops.wind_bake_data() == {"FINISHED"}
    assert "Category to Grass" not in capsys.readouterr().out
    bush = _grass_field(4, seed=5)
    _select([bush])
    assert api.ops.wind_bake_data() == {"FINISHED"}
    assert "Category to Grass" not in capsys.readouterr().out


def test_a_grass_field_in_one_object_sways_blade_by_blade(mods):
    """#29 part 2: a field of 300 blades in one object (rotated, away from the world origin), baked with the defaults
    and set to Grass as the bake recommends, in the default wind: the tips lean differently (the spread across the
    blades at least a third of the mean at every sampled frame; one gust per object gave a fifth), the node group
    equals its twin, and with a loop length the loop stays seamless."""
    scene = api.scene()
    field = _grass_field(300)
    field.matrix_world = Matrix.Translation((9.0, -4.0, 0.0)) @ Matrix.Rotation(0.7, 4, "Z")
    _select([field])
    assert api.ops.wind_bake_data() == {"FINISHED"}
    api.envfx(field).wind.category = "GRASS"
    mods.ops.add_wind(scene, [field])
    rest = mods.bridge.get_positions(field.data).astype(np.float64)
    m3 = np.array(field.matrix_world.to_3x3())
    for frame in (1, 20, 47, 90):
        scene.frame_set(frame)
        got = mods.bridge.evaluated_positions(field, bpy.context.evaluated_depsgraph_get())
        tips = ((got - rest) @ m3.T).reshape(300, 4, 3)[:, 2:, :2].mean(1)
        lean = np.linalg.norm(tips, axis=1)
        assert lean.mean() > 0.02 and lean.std() >= lean.mean() / 3, (frame, lean.mean(), lean.std())
    assert _gn_vs_core(mods, field, (1, 20, 47, 90)) < 1e-4
    api.envfx(scene).wind.loop_frames = 48
    ends = []
    for frame in (5, 53):
        scene.frame_set(frame)
        ends.append(mods.bridge.evaluated_positions(field, bpy.context.evaluated_depsgraph_get()))
    assert np.abs(ends[0] - ends[1]).max() < 1e-4
    assert np.abs(ends[0] - rest).max() > 0.01
    assert _gn_vs_core(mods, field, (5, 53)) < 1e-4
