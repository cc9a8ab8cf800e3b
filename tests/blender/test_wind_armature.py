"""Wind data from an armature: a tree skinned by Blender's own tools (envelope and automatic weights), and the same
tree through the glTF exporter and importer, bakes B along every bone chain and one G per first-level branch bone;
without the armature the bake falls back to the geometry and says so; an armature weighting nothing is refused with
nothing changed."""

import importlib

import bpy
import numpy as np
import pytest

from tests.blender import api

# bone name -> (head, tail, parent, connected)
BONES = {
    "Trunk": ((0, 0, 0), (0, 0, 2.0), None, False),
    "Trunk.001": ((0, 0, 2.0), (0, 0, 4.0), "Trunk", True),
    "Branch.A": ((0, 0, 1.5), (1.6, 0, 2.3), "Trunk", False),
    "Twig.A": ((1.6, 0, 2.3), (2.4, 0, 2.9), "Branch.A", True),
    "Branch.B": ((0, 0, 2.6), (-1.6, 0, 3.3), "Trunk.001", False),
    "Branch.C": ((0, 0, 3.2), (0, 1.5, 3.9), "Trunk.001", False),
}
FIRST = ("Branch.A", "Branch.B", "Branch.C")


def _tube(head, tail, radius, rings=10, sides=6):
    h, t = np.array(head, float), np.array(tail, float)
    axis = (t - h) / np.linalg.norm(t - h)
    ref = np.array([1.0, 0, 0]) if abs(axis[0]) < 0.9 else np.array([0, 1.0, 0])
    u = np.cross(axis, ref)
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    verts, faces = [], []
    for r in range(rings):
        c = h + (t - h) * r / (rings - 1)
        for s in range(sides):
            a = 2 * np.pi * s / sides
            verts.append(c + radius * (np.cos(a) * u + np.sin(a) * v))
    for r in range(rings - 1):
        for s in range(sides):
            a, b = r * sides + s, r * sides + (s + 1) % sides
            faces.append((a, b, b + sides, a + sides))
    return np.array(verts), faces


def _tree_mesh():
    """Tubes along the bones (the trunk thicker) and a leaf card at each branch tip; returns the object and, per
    vertex, the bone it was made along (-1 for the leaves)."""
    verts, faces, owner = [], [], []
    for i, (name, (head, tail, _p, _c)) in enumerate(BONES.items()):
        v, f = _tube(head, tail, 0.12 if name.startswith("Trunk") else 0.05)
        faces += [tuple(x + len(verts) for x in q) for q in f]
        verts += list(v)
        owner += [i] * len(v)
    for name in ("Twig.A", "Branch.B", "Branch.C"):
        tip = np.array(BONES[name][1], float)
        card = [tip + d for d in ((-0.12, -0.12, 0.02), (0.12, -0.12, 0.02), (0.12, 0.12, 0.02), (-0.12, 0.12, 0.02))]
        faces.append(tuple(range(len(verts), len(verts) + 4)))
        verts += card
        owner += [-1] * 4
    mesh = bpy.data.meshes.new("Tree")
    mesh.from_pydata([tuple(p) for p in verts], [], faces)
    mesh.update()
    obj = bpy.data.objects.new("Tree", mesh)
    api.scene().collection.objects.link(obj)
    return obj, np.array(owner)


def _armature():
    data = bpy.data.armatures.new("TreeRig")
    arm = bpy.data.objects.new("TreeRig", data)
    api.scene().collection.objects.link(arm)
    api.view_layer().objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for name, (head, tail, parent, connected) in BONES.items():
        eb = data.edit_bones.new(name)
        eb.head, eb.tail = head, tail
        eb.envelope_distance = 0.3
        eb.head_radius = eb.tail_radius = 0.15
        if parent:
            eb.parent = data.edit_bones[parent]
            eb.use_connect = connected
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def _skin(obj, arm, how):
    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    arm.select_set(True)
    api.view_layer().objects.active = arm
    assert bpy.ops.object.parent_set(type=how) == {"FINISHED"}


def _clear_scene():
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)


def _wind(obj, mods):
    return mods.bridge.point_attribute(obj.data, "EnvFX_Wind").reshape(-1, 4)


def _dominant(arm_ops, obj, scene, names):
    """Each vertex's heaviest bone (-1: none) and the dense weights, read through the bake's own reader."""
    idx, iw = arm_ops.read_influences(obj, names, scene)
    w = np.zeros((len(idx), len(names)), np.float32)
    if idx.shape[1]:
        np.put_along_axis(w, idx, iw, axis=1)
    return np.where(w.max(1) > 0, np.argmax(w, 1), -1), w


def _segment_distance(p, a, b):
    ab = b - a
    t = np.clip((p - a) @ ab / (ab @ ab), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=1)


def _check_chains(res_wind, positions, dominant, weights, names, heads, tails):
    """B grows along every bone (by where its vertices project on it), each first-level branch has one G that its
    chain shares and no other branch has, and the trunk bones give B 0."""
    b, g = res_wind[:, 2], res_wind[:, 1]
    branch_cols = [i for i, n in enumerate(names) if not n.startswith("Trunk")]
    trunk_only = (weights.sum(1) > 0) & (weights[:, branch_cols].max(1) < 1e-4)
    assert trunk_only.sum() > 10
    assert np.all(b[trunk_only] == 0.0) and np.all(g[trunk_only] == 0.0)
    phases = {}
    for i, name in enumerate(names):
        sel = np.nonzero(dominant == i)[0]
        assert len(sel) > 4, f"no vertices on {name}"
        axis = tails[i] - heads[i]
        along = (positions[sel] - heads[i]) @ axis / np.linalg.norm(axis)
        order = np.argsort(along)
        # means over four slices along the bone rise
        bins = np.array_split(order, 4)
        means = [float(b[sel[part]].mean()) for part in bins]
        if name.startswith("Trunk"):
            continue
        assert all(m1 > m0 for m0, m1 in zip(means, means[1:])), (name, means)
        top = name if name in FIRST else "Branch.A"
        phases.setdefault(top, set()).update(np.round(g[sel], 5).tolist())
    assert all(len(p) == 1 for p in phases.values()), phases
    values = [next(iter(p)) for p in phases.values()]
    assert len(set(values)) == 3 and min(values) > 0, phases
    # the twig goes on from its branch
    ia, it = names.index("Branch.A"), names.index("Twig.A")
    assert b[dominant == it].mean() > b[dominant == ia].mean()


@pytest.fixture
def arm_ops(envfx):
    return importlib.import_module(envfx.__name__ + ".operators.wind_armature")


@pytest.mark.parametrize("how", ["ARMATURE_ENVELOPE", "ARMATURE_AUTO"])
def test_a_skinned_tree_bakes_from_its_bones(mods, arm_ops, how):
    _clear_scene()
    scene = api.scene()
    obj, _owner = _tree_mesh()
    arm = _armature()
    _skin(obj, arm, how)
    result = mods.ops.bake(scene, [obj, arm])
    assert "armature 'TreeRig'" in result.stats["from"] and "Armature modifier" in result.stats["from"]
    assert "3 level-1 branch bones" in result.stats["from"]
    assert "TreeRig" not in result.skipped
    heads, tails, _parents, names = arm_ops.bone_arrays(arm)
    dominant, w = _dominant(arm_ops, obj, scene, names)
    positions = mods.bridge.get_positions(obj.data).astype(np.float64)
    _check_chains(_wind(obj, mods), positions, dominant, w, names, heads, tails)

    # the same tree without the armature: the geometry, and the bake says so
    bpy.data.objects.remove(arm)
    geo = mods.ops.bake(scene, [obj])
    assert geo.stats["from"] == arm_ops.FROM_GEOMETRY
    reports = []

    class Op:
        def report(self, kind, text):
            reports.append(text)

    mods.ops._report(Op(), geo, "Baked wind data of")
    assert any("B and G from the geometry (no armature)" in r for r in reports)


def test_an_armature_weighting_nothing_is_refused(mods):
    _clear_scene()
    scene = api.scene()
    obj, _owner = _tree_mesh()
    arm = _armature()
    mod = api.of(bpy.types.ArmatureModifier, obj.modifiers.new("Armature", "ARMATURE"))
    mod.object = arm
    with pytest.raises(mods.ops.WindInputError, match="No vertex of Tree is weighted"):
        mods.ops.bake(scene, [obj])
    assert api.mesh(obj).attributes.get("EnvFX_Wind") is None
    for name in BONES:  # groups named after the bones, all empty
        obj.vertex_groups.new(name=name)
    with pytest.raises(mods.ops.WindInputError, match="weight the mesh"):
        mods.ops.bake(scene, [obj])
    assert api.mesh(obj).attributes.get("EnvFX_Wind") is None


def test_a_skinned_tree_through_gltf(mods, arm_ops, tmp_path):
    """Exported by Blender's glTF exporter with its skin and imported again (the importer makes the armature,
    the Armature modifier and the vertex groups): the bake reads the imported bones."""
    _clear_scene()
    scene = api.scene()
    obj, _owner = _tree_mesh()
    arm = _armature()
    _skin(obj, arm, "ARMATURE_ENVELOPE")
    path = str(tmp_path / "tree.glb")
    bpy.ops.object.select_all(action="SELECT")
    assert bpy.ops.export_scene.gltf(filepath=path, export_format="GLB", use_selection=True,
                                     export_skins=True, export_animations=False) == {"FINISHED"}
    _clear_scene()
    for mesh in list(bpy.data.meshes):
        bpy.data.meshes.remove(mesh)
    for armature in list(bpy.data.armatures):
        bpy.data.armatures.remove(armature)
    assert bpy.ops.import_scene.gltf(filepath=path) == {"FINISHED"}
    # (the importer also makes an icosphere as the bones' display shape)
    meshes = [o for o in scene.objects if o.type == "MESH" and any(m.type == "ARMATURE" for m in o.modifiers)]
    arms = [o for o in scene.objects if o.type == "ARMATURE"]
    assert len(meshes) == 1 and len(arms) == 1
    tree, rig = meshes[0], arms[0]
    assert any(m.type == "ARMATURE" for m in tree.modifiers)
    result = mods.ops.bake(scene, [tree])
    assert f"armature {rig.name!r}" in result.stats["from"], result.stats
    heads, tails, _parents, names = arm_ops.bone_arrays(rig)
    assert set(BONES) <= set(names)
    dominant, w = _dominant(arm_ops, tree, scene, names)
    m = mods.bridge.matrix_to_numpy(tree.matrix_world)
    positions = mods.bridge.get_positions(tree.data).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    order = [names.index(n) for n in BONES]
    remap = np.full(len(names), -1)
    remap[order] = np.arange(len(order))
    dom = np.where(dominant >= 0, remap[np.maximum(dominant, 0)], -1)
    _check_chains(_wind(tree, mods), positions, dom, w[:, order], list(BONES), heads[order], tails[order])
