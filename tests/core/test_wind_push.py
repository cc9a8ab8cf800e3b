"""Grass push core (#23 part 4): the buffer's bilinear read, the push's direction away from an actor's path, the
wobble, and blades that keep their lengths while pushed."""

import math

import numpy as np

from core import snow, wind
from core import wind_shapes


def _walker_buffer(frames=30, res=64, size=8.0):
    """A walker along +x through (0, 0) (frames 1-20 from x = -3 to x = 3), baked: (buffer per frame, params)."""
    f = np.arange(1, frames + 1)
    x = -3.0 + 6.0 * np.clip((f - 1) / 19.0, 0.0, 1.0)
    tracks = np.stack([x, np.zeros_like(x), np.zeros_like(x)], 1)[:, None, :]
    buf = snow.BufferParams(resolution=res, size=size, origin=(-size / 2, -size / 2))
    # one bake per prefix of the walk: the buffer as it is at each frame
    images = [snow.bake(tracks[:k], [0.6], [0.2], snow.StampParams(fps=24.0), buf).final for k in range(1, frames + 1)]
    return images, buf


def test_sample_uv_is_the_buffer_s_bilinear_read():
    rng = np.random.default_rng(1)
    img = rng.normal(size=(16, 16, 4)).astype(np.float32)
    xy = rng.uniform(-1.0, 9.0, (200, 2))  # inside and beyond the window (extended edges)
    origin, size = (0.5, -0.2), 8.0
    got = wind.sample_uv(img, (xy[:, 0] - origin[0]) / size, (xy[:, 1] - origin[1]) / size)
    for c in range(4):
        np.testing.assert_allclose(got[:, c], snow.sample_buffer(img, origin, size / 16, xy, c), atol=1e-6)


def test_one_sample_of_the_push_field_is_the_three_samples_of_the_buffer():
    """push_field's single bilinear read at field_uv equals, for gx, G, gy and A, what push_lean's three reads of
    the buffer give, inside the window, on its edges and beyond them (extended edges), on square and oblong
    buffers and on a baked walk."""
    rng = np.random.default_rng(7)
    images, _buf = _walker_buffer(frames=14, res=24)
    for img in (rng.normal(size=(16, 16, 4)).astype(np.float32), rng.normal(size=(9, 13, 4)).astype(np.float32),
                images[-1]):
        h, w = img.shape[:2]
        u, v = rng.uniform(-0.3, 1.3, (2, 500))
        u[:4], v[:4] = (0.0, 1.0, 0.5 / w, 1.0 - 0.5 / w), (0.0, 1.0, 0.5 / h, 1.0 - 0.5 / h)  # edges, edge centres
        field = wind.push_field(img)
        assert field.shape == (h + 1, w + 1, 4) and field.dtype == np.float32
        got = wind.sample_uv(field, *wind.field_uv(u, v, w, h))
        here = wind.sample_uv(img, u, v)
        a_x = wind.sample_uv(img[..., 3:], u + 1.0 / w, v)[:, 0]
        a_y = wind.sample_uv(img[..., 3:], u, v + 1.0 / h)[:, 0]
        np.testing.assert_allclose(got[:, 0], a_x - here[:, 3], atol=2e-5)
        np.testing.assert_allclose(got[:, 1], here[:, 1], atol=2e-5)
        np.testing.assert_allclose(got[:, 2], a_y - here[:, 3], atol=2e-5)
        np.testing.assert_allclose(got[:, 3], here[:, 3], atol=2e-5)


def test_push_leans_away_from_the_path_and_wobbles_back():
    images, buf = _walker_buffer()
    push = lambda k, **kw: wind.GrassPush(buffer=images[k - 1], origin=buf.origin, size=buf.size, **kw)  # noqa: E731
    roots = np.array([[0.0, 0.3, 0.0], [0.0, -0.3, 0.0], [0.2, 0.45, 0.0], [0.0, 2.5, 0.0]])
    lean = wind.push_lean(roots, push(11))  # the walker is at about (0.16, 0) at frame 11
    assert lean[0, 1] > 0.5 and lean[1, 1] < -0.5  # away from the path on either side
    assert abs(lean[0, 0]) < 0.5 * lean[0, 1]
    assert lean[2, 1] > 0.2
    np.testing.assert_array_equal(lean[3], 0.0)  # far away: nothing
    np.testing.assert_array_equal(lean[:, 2], 0.0)
    # the wobble alone (strength 0): away while G rises, then back past upright towards the path
    sway = [wind.push_lean(roots[:1], push(k, strength=0.0))[0, 1] for k in range(11, 30)]
    assert sway[0] > 0.05 and min(sway) < -0.02, sway
    # before the bake's first frame nothing pushes
    np.testing.assert_array_equal(wind.push_lean(roots, push(11, started=False)), 0.0)


def test_pushed_blades_keep_their_lengths():
    """A grass clump in the wind, pushed: every vertex keeps its distance from its blade's root."""
    g = wind_shapes.make_grass(blades=12, height=0.8, seed=4)
    res = wind.bake_wind_data(g["positions"], g["edges"])
    m = np.eye(4)
    m[:3, 3] = (0.1, 0.2, 0.0)
    images, buf = _walker_buffer()
    scene = wind.SceneWind(strength=1.5)
    asset = wind.AssetWind(category="GRASS", asset_height=0.8)
    rgba = np.c_[res.leaf, res.phase, res.branch, np.ones(len(res.leaf))]
    live = wind.live_attributes(g["positions"], res.height, rgba)
    normals = np.tile([0.0, 1.0, 0.0], (len(g["positions"]), 1))
    push = wind.GrassPush(buffer=images[10], origin=buf.origin, size=buf.size, strength=4.0)
    off = wind.wind_offsets(g["positions"], res.height, rgba, normals, m, 11, scene, asset, live=live)
    on = wind.wind_offsets(g["positions"], res.height, rgba, normals, m, 11, scene, asset, live=live, push=push)
    assert np.abs(on - off).max() > 0.1
    rel = live[wind.LIVE_ATTRS[3]].astype(np.float64)
    root = g["positions"] - rel
    for moved in (off, on):
        np.testing.assert_allclose(np.linalg.norm(g["positions"] + moved - root, axis=1),
                                   np.linalg.norm(rel, axis=1), atol=1e-5)
    assert math.isfinite(float(np.abs(on).max()))


def test_blade_roots_are_each_face_s_blade_root():
    """The face attribute the grass reads the push at (``blade_roots``): every face's value is the root ``p - Pivot``
    of each of its vertices (a blade's faces all stand on its root), in the corner order of the mesh."""
    g = wind_shapes.make_grass(blades=9, height=0.7, seed=2)
    res = wind.bake_wind_data(g["positions"], g["edges"])
    rgba = np.c_[res.leaf, res.phase, res.branch, np.ones(len(res.leaf))]
    live = wind.live_attributes(g["positions"], res.height, rgba)
    faces = g["faces"]
    roots = wind.blade_roots(g["positions"], live, faces.reshape(-1), np.arange(0, faces.size, faces.shape[1]))
    assert roots.shape == (len(faces), 3) and roots.dtype == np.float32
    per_vertex = g["positions"] - live[wind.LIVE_ATTRS[3]].astype(np.float64)
    for k in range(faces.shape[1]):
        np.testing.assert_allclose(roots, per_vertex[faces[:, k]], atol=1e-5)
    assert np.ptp(roots[:, :2], axis=0).min() > 0.05  # (the blades stand apart: not one point for all)
    assert wind.blade_roots(g["positions"], live, [], []).shape == (0, 3)


def test_vertex_faces_names_a_face_of_each_vertex_and_minus_one_for_loose_ones():
    """The point attribute grass gathers a blade's wind and push from (``vertex_faces``): a face that holds the
    vertex, whatever the faces' sizes, and -1 for a vertex in no face."""
    # a triangle, a quad sharing an edge with it, a pentagon apart, and two loose vertices (9 and 10)
    corners = [0, 1, 2, 1, 3, 4, 2, 5, 6, 7, 8, 11]
    starts = [0, 3, 7]
    got = wind.vertex_faces(12, corners, starts)
    assert got.dtype == np.int32 and got.shape == (12,)
    for v in range(12):
        holding = [f for f, (a, b) in enumerate(zip(starts, starts[1:] + [len(corners)])) if v in corners[a:b]]
        assert (got[v] in holding) if holding else got[v] == -1, (v, got[v], holding)
    np.testing.assert_array_equal(wind.vertex_faces(3, [], []), [-1, -1, -1])


def test_grass_vertices_in_no_face_take_no_blade_wind_and_no_push():
    """The twin of the group's gather: with ``faces``, a vertex in no face takes neither the blade's wind (its
    gust, figure-eight and wobble) nor the push; the others move exactly as without ``faces``."""
    g = wind_shapes.make_grass(blades=12, height=0.8, seed=4)
    res = wind.bake_wind_data(g["positions"], g["edges"])
    rgba = np.c_[res.leaf, res.phase, res.branch, np.ones(len(res.leaf))]
    live = wind.live_attributes(g["positions"], res.height, rgba)
    normals = np.tile([0.0, 1.0, 0.0], (len(g["positions"]), 1))
    images, buf = _walker_buffer()
    push = wind.GrassPush(buffer=images[10], origin=buf.origin, size=buf.size, strength=4.0)
    scene, asset = wind.SceneWind(strength=1.5), wind.AssetWind(category="GRASS", asset_height=0.8)
    faces = np.arange(len(g["positions"]), dtype=np.int32) // 4
    loose = np.zeros(len(faces), bool)
    loose[[3, 17, 30]] = True
    faces[loose] = -1
    args = (g["positions"], res.height, rgba, normals, np.eye(4), 11, scene, asset)
    every = wind.wind_offsets(*args, live=live, push=push)
    some = wind.wind_offsets(*args, live=live, push=push, faces=faces)
    np.testing.assert_array_equal(some[~loose], every[~loose])
    np.testing.assert_allclose(some[loose], 0.0, atol=1e-7)  # (still air but the wind's own: no camera, no tilt)
    assert np.abs(every[loose]).max() > 1e-3
