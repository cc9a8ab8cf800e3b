"""Bake Wind Data on real third-party vegetation (the corpus of tools/fetch_assets.py, imported as OBJ with Y up
and an unapplied centimetre scale, moved away from the origin) and on one synthetic asset per construction (separate
unwelded pieces, every kind of leaf card, several objects sharing an alpha leaf material). Per asset: R runs 0..1
over every leaf, G is one value per island and differs between branches, B is 0 at the trunk's base and grows
outwards, A is not black and brighter outside the foliage than inside it."""

import importlib
import json
import os

import bpy
import numpy as np
import pytest
from mathutils import Matrix

from tests.blender import api

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFEST = json.load(open(os.path.join(ROOT, "tools", "assets", "manifest.json")))
AWAY = (25.0, -12.0, 3.0)


@pytest.fixture(scope="session")
def corpus(load_helper):
    """name -> OBJ path of every corpus asset (fetched once into the cache); skips, saying why, when none could be
    fetched."""
    fetch = load_helper("fetch_assets", "tools", "fetch_assets.py")
    index = fetch.fetch(fetch.cache_dir(), quiet=True)
    if not index["assets"]:
        pytest.skip(f"no corpus asset could be fetched: {index['skipped']}")
    return {a["name"]: a["obj"] for a in index["assets"]}, index["skipped"]


def _import(path):
    before = set(bpy.data.objects)
    assert bpy.ops.wm.obj_import(filepath=path, up_axis="Y", forward_axis="NEGATIVE_Z", global_scale=0.01) == {
        "FINISHED"}
    objects = sorted((o for o in bpy.data.objects if o not in before and o.type == "MESH"), key=lambda o: o.name)
    for o in objects:
        o.location = [a + b for a, b in zip(o.location.to_tuple(), AWAY)]
    api.view_layer().update()
    return objects


def _gather(mods, objects):
    """World positions, edges (offset), wind colour and height of the objects as one asset."""
    pos, edges, rgba, off = [], [], [], 0
    for o in objects:
        co = mods.bridge.get_positions(o.data).astype(np.float64)
        m = np.array(o.matrix_world)
        pos.append(co @ m[:3, :3].T + m[:3, 3])
        e = np.empty(len(o.data.edges) * 2, np.int32)
        o.data.edges.foreach_get("vertices", e)
        edges.append(e.reshape(-1, 2) + off)
        c = np.empty(len(o.data.vertices) * 4, np.float32)
        o.data.attributes["EnvFX_Wind"].data.foreach_get("color", c)
        rgba.append(c.reshape(-1, 4))
        off += len(co)
    return np.concatenate(pos), np.concatenate(edges), np.concatenate(rgba)


def _islands(mods, p, edges):
    hier = __import__(mods.core.__name__.rsplit(".", 1)[0] + ".wind_hierarchy", fromlist=["x"])
    comp = mods.core.connected_components(len(p), np.concatenate([edges, hier.coincident_pairs(p)]))
    return np.unique(comp, return_inverse=True)[1]


def check_asset(p, isl, rgba, levels, leaves_expected=True):
    r, g, b, a = rgba.T
    k = isl.max() + 1
    # R per leaf: 0 where it attaches, 1 at its far end
    r_hi = np.zeros(k)
    np.maximum.at(r_hi, isl, r)
    r_lo = np.full(k, np.inf)
    np.minimum.at(r_lo, isl, r)
    leafy = r_hi > 0
    # G: one value per leaf
    g_lo, g_hi = np.full(k, np.inf), np.full(k, -np.inf)
    np.minimum.at(g_lo, isl, g)
    np.maximum.at(g_hi, isl, g)
    assert np.all(g_hi[leafy] - g_lo[leafy] < 1e-6)
    if leaves_expected:
        assert leafy.sum() > 0
        assert np.allclose(r_hi[leafy], 1.0, atol=1e-5) and np.allclose(r_lo[leafy], 0.0, atol=1e-5)
        # G differs between first-level branches: the leaves carry at least half as many values as there are
        g_leaf = np.unique(np.round(g_lo[leafy], 5))
        if levels and levels[0] >= 2:
            assert len(g_leaf) >= 0.5 * levels[0], (len(g_leaf), levels)
    # B: 0 on the trunk (its base the lowest point of it), 1 at the farthest tip, growing with the distance from
    # the trunk
    still = np.nonzero(b == 0.0)[0]
    assert len(still) and b.max() == pytest.approx(1.0, abs=1e-5)
    rng = np.random.default_rng(0)
    still = rng.choice(still, min(len(still), 3000), replace=False)
    moving = np.nonzero(b > 0)[0]
    moving = rng.choice(moving, min(len(moving), 5000), replace=False)
    d = np.min(np.linalg.norm(p[moving, None, :] - p[None, still, :], axis=2), axis=1)
    assert np.corrcoef(d, b[moving])[0, 1] > 0.3
    # A: 0..1, not black on the leaves, brighter outside than inside
    assert a.min() >= 0.0 and a.max() <= 1.0
    foliage = leafy[isl] if leaves_expected else np.ones(len(p), bool)
    assert a[foliage].mean() > 0.1
    centre = 0.5 * (p.min(axis=0) + p.max(axis=0))
    out = np.linalg.norm(p - centre, axis=1)[foliage]
    assert a[foliage][out > np.percentile(out, 75)].mean() > a[foliage][out < np.percentile(out, 25)].mean()


@pytest.mark.parametrize("name", [a["name"] for a in MANIFEST["assets"]])
def test_corpus_asset(mods, corpus, name):
    paths, skipped = corpus
    if name not in paths:
        pytest.skip(f"{name} could not be made: {skipped.get(name)}")
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    objects = _import(paths[name])
    assert any(abs(o.matrix_world.to_euler().x) > 1.0 for o in objects)  # Y-up import: a turned object
    assert all(abs(o.scale.x - 0.01) < 1e-9 for o in objects)  # centimetres, scale unapplied
    result = mods.ops.bake(api.scene(), objects, ao_samples=16)
    p, edges, rgba = _gather(mods, objects)
    isl = _islands(mods, p, edges)
    if name == "grass":  # a clump of blades standing on the ground: no trunk, every blade a stem with its root
        assert result.stats["structure"].startswith("no trunk, "), result.stats["structure"]
        assert not any(w.startswith("No trunk found") for w in result.warnings), result.warnings
        return
    assert result.stats["levels"] and "0 branches" not in result.stats["structure"]
    check_asset(p, isl, rgba, result.stats["levels"])


CONSTRUCTIONS = [(card, place) for card, place in zip(
    ("quad", "tris", "crossed", "double", "strip", "clump"), ("touch", "hover", "tip", "touch", "hover", "tip"))]


@pytest.mark.parametrize("card,place", CONSTRUCTIONS)
def test_synthetic_construction(mods, card, place):
    """Trunk, branches and leaves as four objects, Y-up with an unapplied centimetre scale, away from the origin,
    one bark material on trunk and branches, one leaf material on two leaf objects."""
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    t = mods.shapes.make_vegetation(card, place)
    m = Matrix.Translation(AWAY) @ Matrix.Rotation(np.pi / 2, 4, "X") @ Matrix.Diagonal((0.01, 0.01, 0.01, 1.0))
    inv = np.linalg.inv(np.array(m))
    leaf_mat, bark = bpy.data.materials.new("Leaf Alpha"), bpy.data.materials.new("Bark")
    objects = []
    half = t["branch_id"] < 3
    for keep, name, mat in ((t["kind"] == 1, "Trunk", bark), (t["kind"] == 2, "Branches", bark),
                            ((t["kind"] == 3) & half, "Leaves", leaf_mat),
                            ((t["kind"] == 3) & ~half, "Leaves Back", leaf_mat)):
        remap = -np.ones(len(keep), np.int64)
        remap[keep] = np.arange(keep.sum())
        faces = remap[t["faces"][keep[t["faces"]].all(1)]]
        local = t["positions"][keep] @ inv[:3, :3].T + inv[:3, 3]
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata(local.tolist(), [], faces.tolist())
        mesh.materials.append(mat)  # a bark shared by trunk and branches, a leaf material by two objects
        obj = bpy.data.objects.new(name, mesh)
        obj.matrix_world = m
        api.scene().collection.objects.link(obj)
        objects.append((obj, keep))
    api.view_layer().update()
    result = mods.ops.bake(api.scene(), [o for o, _ in objects], ao_samples=16)
    assert result.stats["levels"] == [5, 15]
    assert "trunk, 5 level-1 branches, 15 level-2 branches" in result.stats["structure"]
    p, edges, rgba = _gather(mods, [o for o, _ in objects])
    order = np.concatenate([np.nonzero(keep)[0] for _, keep in objects])
    isl = _islands(mods, p, edges)
    check_asset(p, isl, rgba, result.stats["levels"])
    # the ground truth: G one per first-level branch, R 0 at each card's attached end
    bid = t["branch_id"][order]
    g = [np.unique(rgba[(bid == i) & (t["kind"][order] > 1), 1]) for i in range(5)]
    assert all(len(v) == 1 for v in g) and len({round(float(v[0]), 5) for v in g}) == 5
    if card != "clump":
        assert rgba[t["leaf_base"][order], 0].max() < 0.2 and rgba[t["leaf_tip"][order], 0].max() > 0.95


@pytest.mark.parametrize("name, encoding", [("flower_blue", "EXR32"), ("ez_aspen_small_single", "EXR32"),
                                            ("flower_blue", "EXR16"), ("flower_blue", "PNG16")])
def test_corpus_asset_in_wind_bakes_into_a_vat_that_plays_it_back(mods, envfx, corpus, tmp_path, name, encoding):
    """A real asset (imported Y-up in centimetres, away from the origin) baked for wind, put in the live wind and
    baked into vertex animation textures: the VAT player's proxy equals the swaying asset at every baked frame
    (float EXR: within 1e-5 of the asset's size; EXR16 and PNG16 within the precision their JSON states)."""
    paths, skipped = corpus
    if name not in paths:
        pytest.skip(f"{name} could not be made: {skipped.get(name)}")
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    objects = _import(paths[name])
    scene = api.scene()
    api.envfx(scene).wind.strength = 3.0
    mods.ops.bake(scene, objects, ao_samples=0)
    mods.ops.add_wind(scene, objects)
    vat_ops = importlib.import_module(envfx.__name__ + ".operators.vat")
    opts = vat_ops.VatOptions(frame_start=1, frame_end=13, step=4, encoding=encoding, export_mesh=False)
    result = vat_ops.bake_vat(scene, objects, str(tmp_path / "vat"), opts)
    assert sorted(result.meta) == sorted(o.name for o in objects) and not result.skipped
    moved = 0.0
    for frame in (1, 5, 9, 13):
        scene.frame_set(frame)
        dg = bpy.context.evaluated_depsgraph_get()
        for obj in objects:
            want = mods.bridge.evaluated_positions(obj, dg)
            got = mods.bridge.evaluated_positions(bpy.data.objects[obj.name + "_VAT"], dg)
            size = float(np.ptp(want, axis=0).max())
            allowed = 0.0 if encoding == "EXR32" else result.meta[obj.name]["precision"]
            assert np.abs(got - want).max() <= allowed + 1e-5 * size + 1e-6, (obj.name, frame)
            moved = max(moved, float(np.abs(want - mods.bridge.get_positions(obj.data)).max()) / size)
    assert moved > 1e-3  # the wind really moved it
