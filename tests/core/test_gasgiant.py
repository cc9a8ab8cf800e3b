"""Gas giant core: the field's physics, particle transport, seams, determinism, files, bad input."""

import argparse
import ast
import dataclasses
import json
import inspect
import math
import os
import re
import stat
import tracemalloc

import numpy as np
import pytest

from core import colour, exr
from core.png import to_uint8
from core import gasgiant as gg
from core.gasgiant import params as gg_params
from core.gasgiant import settings as gg_settings
from tests.job_steps import Slowed, step

SMALL = dict(particles=60_000, iterations=40, field_size=64, cubemap_size=128, equirect_width=256, threads=1)


def _unit(n, seed=0):
    p = np.random.default_rng(seed).normal(size=(n, 3))
    return p / np.linalg.norm(p, axis=1, keepdims=True)


def _circulation(fn, p, h):
    """Vorticity by circulation around a small circle (the scale the divergence is judged against)."""
    t1 = np.cross(p, np.where(np.abs(p[:, 2:3]) < 0.9, [[0, 0, 1.0]], [[1.0, 0, 0]]))
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(p, t1)
    total = np.zeros(len(p))
    for k in range(16):
        a = 2 * math.pi * k / 16
        q = math.cos(h) * p + math.sin(h) * (math.cos(a) * t1 + math.sin(a) * t2)
        tang = np.cross(q, math.cos(a) * t1 + math.sin(a) * t2)
        tang -= q * np.sum(tang * q, axis=1, keepdims=True)
        tang /= np.linalg.norm(tang, axis=1, keepdims=True)
        total += np.sum(fn(q) * tang, axis=1)
    return total / 16 * (2 * math.pi * math.sin(h)) / (2 * math.pi * (1 - math.cos(h)))


def test_field_is_tangent_and_divergence_free():
    params = gg.GasGiantParams(vortices=8, vortex_size=0.1, field_size=64, seed=3)
    p = _unit(400)
    v = gg.velocity_at(p, params)
    speed = np.linalg.norm(v, axis=1)
    assert np.all(np.abs(np.sum(v * p, axis=1)) <= 1e-9 * (speed + 1e-12))
    fn = lambda q: gg.velocity_at(q, params)  # noqa: E731
    div = gg.surface_divergence(fn, p, h=2e-3)
    vort = _circulation(fn, p, h=2e-3)
    assert np.sqrt(np.mean(vort ** 2)) > 0
    assert np.sqrt(np.mean(div ** 2)) < 1e-2 * np.sqrt(np.mean(vort ** 2))


def test_stored_field_matches_analytic_and_is_nearly_divergence_free():
    params = gg.GasGiantParams(field_size=256, seed=5, vortices=3, vortex_size=0.12)
    fld = gg.build_field(params)
    p = _unit(500, seed=1)
    exact = gg.velocity_at(p, params)
    grid = gg.sample_field(fld, p)
    err = np.linalg.norm(grid - exact, axis=1)
    assert np.sqrt(np.mean(err ** 2)) < 0.06 * np.sqrt(np.mean(np.sum(exact ** 2, axis=1)))
    fn = lambda q: gg.sample_field(fld, q)  # noqa: E731
    h = 4 * (math.pi / 2) / 256
    div = gg.surface_divergence(fn, p, h=h)
    vort = _circulation(fn, p, h=h)
    assert np.sqrt(np.mean(div ** 2)) < 0.05 * np.sqrt(np.mean(vort ** 2))


def test_band_velocities_follow_the_profile():
    params = gg.GasGiantParams(bands=5.0, band_speed=2.0, band_power=3, pole_attenuation=0.7, noise_speed=0.0,
                               vortices=0)
    lat = np.linspace(-1.45, 1.45, 301)
    lon = np.linspace(-3, 3, 301)
    p = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=1)
    v = gg.velocity_at(p, params)
    east = np.stack([-np.sin(lon), np.cos(lon), np.zeros_like(lon)], axis=1)
    k = math.radians(params.velocity_factor) / 20.0
    expected = k * params.band_speed * (0.3 + 0.7 * np.cos(lat)) * np.cos(5 * lat) ** 3
    np.testing.assert_allclose(np.sum(v * east, axis=1), expected, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(v - np.sum(v * east, axis=1)[:, None] * east, axis=1), 0, atol=1e-12)
    # counter-rotating: the sign alternates from band to band
    centres = np.arange(-2, 3) * math.pi / 5
    assert list(np.sign(gg.band_profile(centres, params))) == [1, -1, 1, -1, 1]
    # no pole singularity: zero at the poles
    assert gg.band_profile(np.array([math.pi / 2, -math.pi / 2]), params).tolist() == [0.0, 0.0]


def test_particles_stay_uniform_per_latitude_band():
    params = gg.GasGiantParams(particles=200_000, field_size=64, cubemap_size=64, equirect_width=0,
                               velocity_factor=6.0, vortices=6, vortex_size=0.1, seed=2, threads=1,
                               lifetime=60, respawn_batches=4, blur_interval=0)
    with gg.Simulation(params) as sim:
        sim.step(150)
        counts = sim.density_by_latitude(10)
        moved = sim.directions()
    mean = params.particles / 10
    assert np.all(np.abs(counts - mean) <= 0.05 * mean), counts
    np.testing.assert_allclose(np.linalg.norm(moved, axis=1), 1.0, atol=1e-6)


def test_particles_move_with_the_bands(monkeypatch):
    # keep particle order (identities) over the measured steps
    monkeypatch.setattr(gg.simulation, "SORT_INTERVAL", 1000)
    params = gg.GasGiantParams(particles=5000, field_size=64, cubemap_size=64, noise_speed=0.0, vortices=0,
                               bands=3.0, pole_attenuation=0.0, seed=1, threads=1)
    with gg.Simulation(params) as sim:
        sim.step(1)  # the first step sorts the particles by texel
        p0 = sim.directions()
        sim.step(20)
        p1 = sim.directions()
    lat0 = np.arcsin(p0[:, 2])
    dlon = np.angle(np.exp(1j * (np.arctan2(p1[:, 1], p1[:, 0]) - np.arctan2(p0[:, 1], p0[:, 0]))))
    sel = np.abs(lat0) < 1.3
    expected = 20 * math.radians(params.velocity_factor) / 20 * gg.band_profile(lat0[sel], params) / np.cos(lat0[sel])
    np.testing.assert_allclose(dlon[sel], expected, atol=2e-3)
    np.testing.assert_allclose(np.arcsin(p1[:, 2]), lat0, atol=2e-3)  # latitude kept


def _small_sim(**kw):
    params = gg.GasGiantParams(**{**SMALL, **kw})
    sim = gg.Simulation(params)
    sim.step(params.iterations)
    return sim


def test_same_seed_same_result_and_thread_count_does_not_matter():
    a = _small_sim(seed=4)
    b = _small_sim(seed=4, threads=2)
    c = _small_sim(seed=5)
    for s in (a, b, c):
        s.close()
    np.testing.assert_array_equal(a.image, b.image)
    np.testing.assert_array_equal(a.uv, b.uv)
    assert np.abs(a.texels() - c.texels()).mean() > 1e-3


def test_work_items_join_chunks_of_one_batch_and_move_as_chunk_by_chunk():
    # batches of 100,000 particles (three chunks and a short one) with their own alphas, waves across batches
    params = gg.GasGiantParams(**{**SMALL, "particles": 300_000, "iterations": 6, "lifetime": 5,
                                  "respawn_batches": 3, "threads": 2})
    joined, single = gg.Simulation(params), gg.Simulation(params)
    for s in (joined, single):
        s.close()
    assert len(joined.waves) == 1 and len(joined.waves[0]) == 12  # batches of 100,000: 3 chunks and a short one
    for items in joined.items:
        assert [s for _, s, _ in items] == [0, 100_000, 200_000]  # four chunks at most, one batch each
        assert [e for _, _, e in items] == [100_000, 200_000, 300_000]
        assert [b for b, _, _ in items] == [0, 1, 2]
    assert [gg_params.item_chunks(t) for t in (1, 2, 4, 8, 16)] == [4, 4, 2, 1, 1]
    one_batch = gg.Simulation(gg.GasGiantParams(**{**SMALL, "particles": 600_000, "iterations": 1, "threads": 2}))
    one_batch.close()
    assert [len(w) for w in one_batch.waves] == [16, 3]
    assert [[e - s for _, s, e in items] for items in one_batch.items] == [[4 * 32_768] * 4, [600_000 - 16 * 32_768]]
    single.items = [list(wave) for wave in single.waves]  # one chunk per call
    joined.step(params.iterations)
    single.step(params.iterations)
    np.testing.assert_array_equal(joined.image, single.image)
    np.testing.assert_array_equal(joined.uv, single.uv)
    np.testing.assert_array_equal(joined.col, single.col)


def _neighbour_diffs(img):
    return np.abs(np.diff(img, axis=1)).mean()


def test_seams_at_cube_edges_and_longitude_wrap():
    sim = _small_sim(seed=1, iterations=60)
    sim.close()
    faces = sim.cube_faces()
    pad = gg.pad_cube(faces)
    edge_diffs = []
    for f in range(6):
        edge_diffs += [np.abs(pad[f, 0, 1:-1] - pad[f, 1, 1:-1]), np.abs(pad[f, -1, 1:-1] - pad[f, -2, 1:-1]),
                       np.abs(pad[f, 1:-1, 0] - pad[f, 1:-1, 1]), np.abs(pad[f, 1:-1, -1] - pad[f, 1:-1, -2])]
    across = np.mean([d.mean() for d in edge_diffs])
    inside = np.mean([_neighbour_diffs(faces[f, 1:-1, 1:-1]) for f in range(6)])
    assert across < 1.5 * inside, (across, inside)
    # every edge on its own, too (no single bad edge hidden by the mean)
    assert max(d.mean() for d in edge_diffs) < 3.0 * inside
    eq = sim.equirect(256)
    wrap = np.abs(eq[:, 0] - eq[:, -1]).mean()
    assert wrap < 1.5 * _neighbour_diffs(eq), (wrap, _neighbour_diffs(eq))
    # no pinching: the top row is nearly one colour (all columns look at the same small cap)
    assert eq[0].std(axis=0).max() < 0.05


def test_pad_cube_border_is_the_neighbour_texel():
    r = 8
    cube = np.arange(6 * r * r, dtype=np.float64).reshape(6, r, r, 1)
    pad = gg.pad_cube(cube)
    d_border = gg.face_directions(r, pad=1)[0, 0, 4]  # above row 0 of +X
    face, u, v = gg.dir_to_face_uv(d_border[None])
    assert gg.FACES[face[0]] == "pz"
    col = int((u[0] + 1) / 2 * r)
    row = int((v[0] + 1) / 2 * r)
    assert pad[0, 0, 4, 0] == cube[face[0], row, col, 0]


def test_palette_mappings():
    h, w = 32, 64
    pal = np.zeros((h, w, 3), np.float32)
    pal[..., 0] = np.linspace(0, 1, h)[:, None]  # red by row (latitude)
    pal[..., 1] = np.linspace(0, 1, w)[None, :]  # green by column
    p = _unit(2000, seed=9)
    stripes = gg.colors_at(p, gg.GasGiantParams(palette=pal, mapping="STRIPES"))
    assert np.ptp(stripes[:, 1]) == 0.0  # one column: colour by latitude only
    north = gg.colors_at(np.array([[0, 0, 1.0], [0, 0, -1.0]]), gg.GasGiantParams(palette=pal))
    assert north[0, 0] == 0.0 and north[1, 0] == 1.0  # row 0 (top) is the north pole
    sin = gg.colors_at(p, gg.GasGiantParams(palette=pal))
    assert np.ptp(sin[:, 1]) > 0.5
    # sinusoidal wraps without a jump at longitude +-180
    eps = 1e-4
    lat = np.linspace(-1.2, 1.2, 50)
    a = np.stack([np.cos(lat) * math.cos(math.pi - eps), np.cos(lat) * math.sin(math.pi - eps), np.sin(lat)], 1)
    b = np.stack([np.cos(lat) * math.cos(-math.pi + eps), np.cos(lat) * math.sin(-math.pi + eps), np.sin(lat)], 1)
    par = gg.GasGiantParams(palette=pal)
    assert np.abs(gg.colors_at(a, par) - gg.colors_at(b, par)).max() <= 1.0 / w + 1e-6
    ramp = gg.colors_at(p, gg.GasGiantParams(ramp=((0.0, (1, 0, 0)), (1.0, (0, 0, 1)))))
    np.testing.assert_allclose(ramp[:, 0], 1 - (np.arcsin(p[:, 2]) / math.pi + 0.5), atol=1e-6)


def test_lifetime_respawns_one_batch_at_a_time_and_fades():
    params = gg.GasGiantParams(**{**SMALL, "lifetime": 20, "respawn_batches": 4, "fade_in": 0.25,
                                  "fade_out": 0.25, "opacity": 0.5, "velocity_factor": 0.0})
    with gg.Simulation(params) as sim:
        ages = [sim.batch_age(b) for b in range(4)]
        assert sorted(ages) == [0, 5, 10, 15]
        before = sim.uv.copy()
        sim.step(5)  # batch 3 (age 15) reaches 20 at iteration 5 and respawns at the next step
        sim.step(1)
        # particles are re-ordered by texel inside their batch: compare each batch's set of positions
        per_batch = [(np.sort(before[s:e]) != np.sort(sim.uv[s:e])).mean() for s, e in sim.batches]
    assert per_batch[3] > 0.99 and max(per_batch[:3]) == 0.0  # the field is still: only respawn moves
    assert sim.batch_alpha(3) < 0.5 * params.opacity  # just born: fading in
    alphas = [gg.Simulation.batch_alpha(sim, b) for b in range(4)]
    assert max(alphas) == pytest.approx(params.opacity)


def test_blur_and_fade_toward_centre_colour():
    params = gg.GasGiantParams(**{**SMALL, "blur": 1.0, "fade_rate": 0.5, "blur_interval": 1})
    with gg.Simulation(params) as sim:
        sim.image[:, :3] = np.random.default_rng(0).integers(0, gg.TEXEL_MAX + 1, (len(sim.image), 3))
        v0 = sim.texels()[:, :3].std()
        sim.blur_and_fade()
        assert sim.texels()[:, :3].std() < 0.5 * v0
        for _ in range(30):
            sim.blur_and_fade()
        np.testing.assert_allclose(sim.texels()[:, :3].mean(axis=0), sim.centre, atol=1e-3)


def test_bake_writes_readable_pngs_and_sequences(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    params = gg.GasGiantParams(**{**SMALL, "frames": 3, "frame_iterations": 5})
    result = gg.run_bake(params, str(tmp_path / "out"))
    names = sorted(os.listdir(tmp_path / "out"))
    assert len(names) == 3 * 8 + 1 and "gasgiant_equirect_0002.png" in names and "gasgiant.json" in names
    assert [os.path.basename(f) for f in result.equirect] == [f"gasgiant_equirect_000{i}.png" for i in (1, 2, 3)]
    eq = [np.asarray(Image.open(f)) for f in result.equirect]
    assert eq[0].shape == (128, 256, 3)
    assert np.abs(eq[0].astype(int) - eq[2]).mean() > 0.5  # the planet keeps changing
    face = np.asarray(Image.open(tmp_path / "out" / "gasgiant_px_0003.png"))
    assert face.shape == (128, 128, 3) and face.std() > 1


def test_png_writer_round_trip(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    img = np.random.default_rng(0).random((17, 23, 3)).astype(np.float32)
    gg.write_png(str(tmp_path / "a.png"), img)
    back = np.asarray(Image.open(tmp_path / "a.png"))
    np.testing.assert_array_equal(back, (img * 255 + 0.5).astype(np.uint8))
    rgba = np.random.default_rng(1).integers(0, 256, (5, 7, 4)).astype(np.uint8)
    gg.write_png(str(tmp_path / "b.png"), rgba)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "b.png")), rgba)


@pytest.mark.parametrize("kw, msg", [
    (dict(particles=0), "positive number of particles"),
    (dict(particles=-5), "positive number of particles"),
    (dict(iterations=0), "positive number of iterations"),
    (dict(iterations=-1), "positive number of iterations"),
    (dict(field_size=100), "Velocity field size 100 is not supported"),
    (dict(cubemap_size=1000), "Cube map size 1000 is not supported"),
    (dict(equirect_width=3000), "Equirectangular width 3000 is not supported"),
    (dict(band_power=2), "odd whole number"),
    (dict(palette=np.zeros((4, 4))), "RGB or RGBA"),
])
def test_bad_settings(kw, msg, tmp_path):
    with pytest.raises(gg.GasGiantError, match=msg):
        gg.run_bake(gg.GasGiantParams(**{**SMALL, **kw}), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_too_many_particles_for_the_memory_is_refused_with_the_estimate():
    params = gg.GasGiantParams(particles=8_000_000)
    est = gg.estimate_memory(params)
    assert est < 1 * 2**30  # the target: 8M particles in at most 1 GB
    with pytest.raises(gg.GasGiantError, match=r"need about 0\.\d\d GB but only 0\.10 GB"):
        params.validate(available_bytes=int(0.1 * 2**30))
    params.validate(available_bytes=est)


def test_unwritable_output_folder(tmp_path):
    params = gg.GasGiantParams(**SMALL)
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    with pytest.raises(gg.GasGiantError, match="is a file"):
        gg.run_bake(params, str(afile))
    for below in (afile / "sub", afile / "sub" / "deeper"):  # below a file: no one can create it
        with pytest.raises(gg.GasGiantError, match=re.escape(f"{str(below)!r} cannot be made: part of its path, "
                                                             f"{str(afile)!r}, is a file, not a folder")):
            gg.run_bake(params, str(below))
    assert afile.read_text() == "x"
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if not os.access(ro, os.W_OK):  # (root can write anywhere)
            denied = re.escape(f"cannot be written (Permission denied in {str(ro)!r})")
            with pytest.raises(gg.GasGiantError, match=denied):
                gg.run_bake(params, str(ro / "sub"))
        assert os.listdir(ro) == []
    finally:
        ro.chmod(stat.S_IRWXU)
    assert sorted(os.listdir(tmp_path)) == ["file.txt", "ro"]
    if os.path.isdir("/proc/self"):  # os.access says root can write there: a real write is tried
        with pytest.raises(gg.GasGiantError, match=r"Output folder '/proc/envfx/planet' cannot be written \("):
            gg.run_bake(params, "/proc/envfx/planet")


def test_cancel_halfway_leaves_no_files(tmp_path):
    out = tmp_path / "existing"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    job = gg.bake(gg.GasGiantParams(**{**SMALL, "iterations": 200}), str(out))
    fraction = 0.0
    for _ in range(5):
        fraction = next(job)
    assert 0 < fraction < 0.9
    assert any(n.startswith(".envfx-staging-gasgiant-") for n in os.listdir(out))
    job.close()
    assert os.listdir(out) == ["keep.txt"]
    job = gg.bake(gg.GasGiantParams(**SMALL), str(tmp_path / "new" / "deeper"))
    next(job)
    next(job)
    assert (tmp_path / "new" / "deeper").is_dir()
    job.close()
    assert sorted(os.listdir(tmp_path)) == ["existing"]  # the folders it made are gone too


TINY_BAKE = dict(particles=2000, iterations=2, field_size=16, cubemap_size=64, equirect_width=128, threads=1,
                 frame_iterations=1)
USER_FILES = ("notes.txt", "gasgiant_equirect_0009.png", "gasgiant_sky.png", "my_gasgiant_px_0003.png",
              "gasgiant_px_0001.png.bak")


def _bake_names(**kw):
    return set(gg.all_output_names(gg.GasGiantParams(**{**TINY_BAKE, **kw})))


def test_rebake_removes_the_previous_bakes_files_it_does_not_write_and_nothing_else(tmp_path):
    """A shorter sequence, a still or another cube layout baked into the folder of an earlier bake removes the
    earlier bake's frames and faces that gasgiant.json lists and the new bake does not write (before: they stayed
    beside the new gasgiant.json, and an engine importing gasgiant_equirect_*.png mixed two simulations); files
    the user put there, also ones named like outputs, stay."""
    out = tmp_path / "out"
    first = gg.run_bake(gg.GasGiantParams(**{**TINY_BAKE, "frames": 3, "file_format": "PNG_EXR"}), str(out))
    assert first.removed == [] and first.removed_note() == ""
    old = _bake_names(frames=3, file_format="PNG_EXR")
    meta = json.loads((out / "gasgiant.json").read_text())
    assert set(meta["outputs"]) == old == set(os.listdir(out)) - {"gasgiant.json"} and len(old) == 3 * 16
    for name in USER_FILES:
        (out / name).write_text("mine")
    (out / "gasgiant_flow_0005.png").mkdir()  # not a file: never touched
    steps = [(dict(frames=2, cube_layout="GLTF"), "engine faces, 2 frames, PNG only"),
             (dict(frames=1), "a still"), (dict(frames=2, file_format="EXR", equirect_width=0), "EXR, no equirect")]
    before = old
    for kw, why in steps:
        result = gg.run_bake(gg.GasGiantParams(**{**TINY_BAKE, **kw}), str(out))
        new = _bake_names(**kw)
        assert set(os.listdir(out)) == new | {"gasgiant.json", "gasgiant_flow_0005.png", *USER_FILES}, why
        assert result.removed == sorted(before - new), why
        assert result.removed_note().startswith(f"removed {len(before - new)} file(s) of the previous bake"), why
        assert json.loads((out / "gasgiant.json").read_text())["outputs"] == gg.all_output_names(
            gg.GasGiantParams(**{**TINY_BAKE, **kw}))
        before = new
    assert all((out / name).read_text() == "mine" for name in USER_FILES)


def test_rebake_over_a_gasgiant_json_without_an_output_list_removes_only_what_its_settings_wrote(tmp_path):
    """An older gasgiant.json has no ``outputs``: only the names that bake wrote, as its frames, cube layout, file
    types and images give them, are removed; a foreign or unreadable gasgiant.json, or an output list naming
    other files (paths, user files), removes nothing else."""
    out = tmp_path / "out"
    gg.run_bake(gg.GasGiantParams(**{**TINY_BAKE, "frames": 3, "cube_layout": "UNITY"}), str(out))
    meta = json.loads((out / "gasgiant.json").read_text())
    del meta["outputs"]
    (out / "gasgiant.json").write_text(json.dumps(meta))
    # named like outputs, but not written by that bake: frame 4 of 3, an EXR of a PNG bake, a Blender face
    mine = ["gasgiant_equirect_0004.png", "gasgiant_posx_0001.exr", "gasgiant_px_0002.png", "gasgiant_flow.png",
            "gasgiant_negz_01.png", "gasgiant_negz_00002.png"]
    for name in mine:
        (out / name).write_text("mine")
    result = gg.run_bake(gg.GasGiantParams(**{**TINY_BAKE, "frames": 1}), str(out))
    old = _bake_names(frames=3, cube_layout="UNITY")
    assert result.removed == sorted(old) and len(old) == 3 * 8
    # the still's gasgiant_flow.png replaced the user's file of that name (as any bake into this folder did)
    assert set(os.listdir(out)) == _bake_names(frames=1) | {"gasgiant.json", *mine}
    # nothing is removed without a gas-giant gasgiant.json that can be read, or for names not written by a bake
    outputs = sorted(_bake_names(frames=1))
    for text in ('{"format": "something-else", "outputs": %s}' % json.dumps(outputs), "{not json",
                 json.dumps({"format": gg.METADATA_FORMAT, "outputs": ["../out/notes.txt", "notes.txt",
                                                                         str(out / "gasgiant_px.png")]})):
        (out / "gasgiant.json").write_text(text)
        (out / "notes.txt").write_text("mine")
        result = gg.run_bake(gg.GasGiantParams(**{**TINY_BAKE, "frames": 2}), str(out))
        assert result.removed == [] and set(outputs) <= set(os.listdir(out)), text
        gg.run_bake(gg.GasGiantParams(**{**TINY_BAKE, "frames": 1}), str(out))  # back to a still
        assert (out / "notes.txt").read_text() == "mine"


def test_rebake_that_is_cancelled_or_cannot_remove_a_file_keeps_the_previous_files(tmp_path, monkeypatch):
    """A cancelled re-bake leaves the previous bake as it was; a file that cannot be removed is kept and named."""
    out = tmp_path / "out"
    gg.run_bake(gg.GasGiantParams(**{**TINY_BAKE, "frames": 2}), str(out))
    before = {n: (out / n).read_bytes() for n in os.listdir(out)}
    job = gg.bake(gg.GasGiantParams(**{**TINY_BAKE, "iterations": 50}), str(out))
    for _ in range(3):
        next(job)
    job.close()  # cancel: the previous bake is as it was
    assert {n: (out / n).read_bytes() for n in os.listdir(out)} == before
    real = os.remove

    def remove(path):
        if path.endswith("gasgiant_px_0002.png"):
            raise PermissionError(13, "Permission denied")
        real(path)

    monkeypatch.setattr(os, "remove", remove)
    result = gg.run_bake(gg.GasGiantParams(**TINY_BAKE), str(out))
    assert "gasgiant_px_0002.png" not in result.removed and len(result.removed) == len(before) - 2
    assert result.not_removed == [("gasgiant_px_0002.png", "Permission denied")]
    assert "could not remove 1 file(s) of the previous bake: gasgiant_px_0002.png (Permission denied)" in \
        result.removed_note()
    assert (out / "gasgiant_px_0002.png").exists()


def test_presets():
    for name in ("jupiter", "Neptune", "STORMY"):
        p = gg.preset(name, particles=10)
        p.validate()
    assert gg.preset("stormy").vortices > gg.preset("jupiter").vortices
    with pytest.raises(gg.GasGiantError, match="Unknown preset"):
        gg.preset("saturnish")


def test_fade_to_start_colours():
    params = gg.GasGiantParams(**{**SMALL, "blur": 0.0, "fade_rate": 1.0, "fade_to_palette": True})
    with gg.Simulation(params) as sim:
        start = sim.texels()
        sim.step(10)
        assert np.abs(sim.texels() - start).max() > 0.01  # particles painted something
        sim.blur_and_fade()
        np.testing.assert_array_equal(sim.texels(), start)  # exactly: the start colours are kept as they were


def test_flow_map_encodes_the_band_velocities():
    params = gg.GasGiantParams(**{**SMALL, "noise_speed": 0.0, "vortices": 0, "bands": 3.0, "band_power": 1})
    with gg.Simulation(params) as sim:
        flow = sim.flow_equirect(256)
    h = flow.shape[0]
    lat = math.pi / 2 - (np.arange(h) + 0.5) / h * math.pi
    band = gg.band_profile(lat, params)
    east = flow[:, :, 0].mean(axis=1) - 0.5
    strong = np.abs(band) > 0.3 * np.abs(band).max()
    assert np.all(np.sign(east[strong]) == np.sign(band[strong]))
    np.testing.assert_allclose(flow[:, :, 1], 0.5, atol=0.01)  # no north-south flow
    np.testing.assert_allclose(east / np.abs(east).max(), band / np.abs(band).max(), atol=0.05)


def test_field_build_does_not_depend_on_the_thread_count():
    a = gg.build_field(gg.GasGiantParams(field_size=128, threads=1, vortices=2))
    b = gg.build_field(gg.GasGiantParams(field_size=128, threads=2, vortices=2))
    np.testing.assert_array_equal(a.chart, b.chart)


def test_no_field_block_is_built_while_the_job_hands_control_back(monkeypatch):
    """Blender's Python API is not thread-safe and a modal bake runs Blender's event loop between the job's steps:
    at every step the field's job yields, no block is being built on a thread (a slowed block makes one left
    running show); the field is the same as built on one thread."""
    params = gg.GasGiantParams(field_size=128, threads=2, vortices=2)
    one = gg.build_field(dataclasses.replace(params, threads=1))
    chart = Slowed(monkeypatch, gg.field, "_chart_block", 0.002)
    busy, field = step(gg.build_field_steps(params), lambda: chart.running > 0)
    assert busy == [False] * len(busy) and len(busy) >= 3
    np.testing.assert_array_equal(field.chart, one.chart)


# --- vertical bands -------------------------------------------------------------------------------------------

def test_vertical_bands_turn_around_the_x_axis_with_the_configured_profile():
    params = gg.GasGiantParams(vertical_bands=True, bands=5.0, band_speed=2.0, band_power=3, pole_attenuation=0.7,
                               noise_speed=0.0, vortices=0)
    p = _unit(600, seed=4)
    p = p[np.abs(p[:, 0]) < 0.99]
    v = gg.velocity_at(p, params)
    lat_x = np.arcsin(p[:, 0])  # latitude measured from the bands' equator, the plane x = 0
    east = np.cross([1.0, 0, 0], p)
    east /= np.linalg.norm(east, axis=1, keepdims=True)
    k = math.radians(params.velocity_factor) / 20.0
    expected = k * params.band_speed * (0.3 + 0.7 * np.cos(lat_x)) * np.cos(5 * lat_x) ** 3
    np.testing.assert_allclose(np.sum(v * east, axis=1), expected, atol=1e-12)
    np.testing.assert_allclose(v, expected[:, None] * east, atol=1e-12)  # no other component
    np.testing.assert_allclose(gg.band_latitude(p, params), lat_x)
    # the flow is a rigid turn about X: points keep their x (their band) as they move
    assert np.abs(np.sum(v * [[1.0, 0, 0]], axis=1)).max() < 1e-12


def test_vertical_bands_field_is_tangent_divergence_free_with_vortices_between_bands():
    params = gg.GasGiantParams(vertical_bands=True, vortices=12, vortex_size=0.08, bands=4.0, seed=6)
    p = _unit(300, seed=2)
    v = gg.velocity_at(p, params)
    assert np.abs(np.sum(v * p, axis=1)).max() <= 1e-9 * np.linalg.norm(v, axis=1).max()
    fn = lambda q: gg.velocity_at(q, params)  # noqa: E731
    div = gg.surface_divergence(fn, p, h=2e-3)
    vort = _circulation(fn, p, h=2e-3)
    assert np.sqrt(np.mean(div ** 2)) < 1e-2 * np.sqrt(np.mean(vort ** 2))
    # vortices sit between the bands (where cos(bands * lat) changes sign) of the turned bands ...
    centres, _, _ = gg.vortex_set(params)
    lat_x = np.arcsin(centres[:, 0])
    assert np.all(np.abs(np.cos(params.bands * lat_x)) < 0.45), np.cos(params.bands * lat_x)
    # ... not of the pole-axis bands (the same seed without vertical bands places them by z)
    lat_z = np.arcsin(centres[:, 2])
    assert np.mean(np.abs(np.cos(params.bands * lat_z))) > 0.3


def test_vertical_bands_palette_stripes_follow_the_bands_and_seams_stay_closed():
    h, w = 32, 8
    pal = np.zeros((h, w, 3), np.float32)
    pal[..., 0] = np.linspace(0, 1, h)[:, None]
    par = gg.GasGiantParams(palette=pal, mapping="STRIPES", vertical_bands=True)
    ang = np.linspace(0, 2 * math.pi, 40)
    for x in (-0.6, 0.1, 0.7):  # a ring of constant x has one colour
        r = math.sqrt(1 - x * x)
        ring = np.stack([np.full_like(ang, x), r * np.cos(ang), r * np.sin(ang)], 1)
        assert np.ptp(gg.colors_at(ring, par)[:, 0]) == 0.0
    assert gg.colors_at(np.array([[1.0, 0, 0]]), par)[0, 0] == 0.0  # +X is the bands' north: image row 0
    sim = _small_sim(seed=1, iterations=60, vertical_bands=True, vortices=4)
    sim.close()
    faces = sim.cube_faces()
    pad = gg.pad_cube(faces)
    edge = [np.abs(pad[f, 0, 1:-1] - pad[f, 1, 1:-1]).mean() for f in range(6)]
    edge += [np.abs(pad[f, 1:-1, -1] - pad[f, 1:-1, -2]).mean() for f in range(6)]
    inside = np.mean([_neighbour_diffs(faces[f, 1:-1, 1:-1]) for f in range(6)])
    assert max(edge) < 3.0 * inside
    eq = sim.equirect(256)
    assert np.abs(eq[:, 0] - eq[:, -1]).mean() < 1.5 * _neighbour_diffs(eq)


def test_plain_mapping_lays_the_image_on_every_face():
    pal = np.zeros((8, 8, 3), np.float32)
    pal[:, :4, 1] = 1.0  # left half green
    par = gg.GasGiantParams(palette=pal, mapping="PLAIN")
    d = gg.face_directions(8).reshape(6, 64, 3)
    for f in range(6):
        cols = gg.colors_at(d[f], par).reshape(8, 8, 3)
        np.testing.assert_array_equal(cols, pal)


# --- cloud mode ------------------------------------------------------------------------------------------------

def test_cloud_mode_paints_white_clouds_over_transparency():
    kw = dict(cloud_mode=True, ramp=((0.0, (0.9, 0.9, 0.9)), (1.0, (0.9, 0.9, 0.9))), blur_interval=0)
    with gg.Simulation(gg.GasGiantParams(**{**SMALL, **kw, "cloud_noise": 0.0})) as sim:
        f0 = np.array(sim.face_rgb(0))
        assert f0.shape == (128, 128, 4) and f0[..., 3].max() == 0.0  # transparent before any particle painted
        np.testing.assert_array_equal(f0[..., :3], 1.0)  # white
        sim.step(30)
        a = sim.cube_faces()[..., 3]
        # without the noise mask the alpha is the painted brightness: 0.9 where particles went, 0 elsewhere
        assert 0.3 < a.mean() < 0.9 and a.max() == pytest.approx(0.9, abs=0.01)
        sim.params = gg.GasGiantParams(**{**SMALL, **kw, "cloud_noise": 0.0, "fade_rate": 0.5, "blur": 0.0})
        sim.blur_and_fade()
        assert sim.cube_faces()[..., 3].mean() == pytest.approx(0.5 * a.mean(), rel=1e-3)  # fades to clear
    with gg.Simulation(gg.GasGiantParams(**{**SMALL, **kw})) as sim:
        # each particle carries the palette brightness x the cloud mask where it started (so the patches swirl)
        mask = sim.cloud_mask_at(sim.directions())
        for c in range(3):
            np.testing.assert_allclose(sim.col[:, c] / gg.TEXEL_MAX, 0.9 * mask, atol=1e-5)
        sim.step(30)
        masked = sim.cube_faces()[..., 3]
    assert 0.0 < mask.min() and mask.max() <= 1.0 and mask.std() > 0.05  # patches
    full = a > 0.85  # texels painted to the full brightness without the mask ...
    assert masked[full].std() > 3 * a[full].std() and masked.mean() < 0.8 * a.mean()  # ... broken into patches
    # dark particles make no clouds
    with gg.Simulation(gg.GasGiantParams(**{**SMALL, **kw, "ramp": ((0.0, (0, 0, 0)), (1.0, (0, 0, 0)))})) as sim:
        sim.step(10)
        assert sim.cube_faces()[..., 3].max() == 0.0


def test_cloud_mode_alpha_is_seamless_and_bakes_rgba_pngs(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    params = gg.GasGiantParams(**{**SMALL, "cloud_mode": True, "cloud_color": (1.0, 0.9, 0.8), "iterations": 60})
    result = gg.run_bake(params, str(tmp_path / "c"))
    eq = np.asarray(Image.open(result.equirect[0]))
    assert eq.shape == (128, 256, 4)
    assert np.all(eq[..., 0] == 255) and np.all(eq[..., 2] == 204)  # the cloud colour
    assert eq[..., 3].std() > 5 and eq[..., 3].min() < 40  # patchy alpha, clear gaps
    face = np.asarray(Image.open(tmp_path / "c" / "gasgiant_pz.png"))
    assert face.shape == (128, 128, 4)
    alpha = eq[..., 3].astype(float)
    assert np.abs(alpha[:, 0] - alpha[:, -1]).mean() < 1.5 * np.abs(np.diff(alpha, axis=1)).mean()
    faces = np.stack([np.asarray(Image.open(tmp_path / "c" / f"gasgiant_{f}.png"))[..., 3:] for f in gg.FACES])
    pad = gg.pad_cube(faces.astype(float))
    edge = max(np.abs(pad[f, 0, 1:-1] - pad[f, 1, 1:-1]).mean() for f in range(6))
    inside = np.mean([_neighbour_diffs(faces[f].astype(float)) for f in range(6)])
    assert edge < 3.0 * inside


def test_cloud_mode_exr_holds_premultiplied_colour_and_the_png_straight(tmp_path):
    """OpenEXR colour is premultiplied: the cloud EXR holds linear cloud colour x alpha, the PNG the cloud colour
    with straight alpha, and gasgiant.json says which (before: the EXR held the full colour over every alpha, which
    EXR readers show as over-bright clouds)."""

    Image = pytest.importorskip("PIL.Image")
    cloud = (0.2, 0.4, 0.8)
    params = gg.GasGiantParams(**{**SMALL, "iterations": 20, "cloud_mode": True, "cloud_color": cloud,
                                  "file_format": "PNG_EXR"})
    gg.run_bake(params, str(tmp_path / "c"))
    for name in ("gasgiant_equirect", "gasgiant_pz"):
        png = np.asarray(Image.open(tmp_path / "c" / f"{name}.png")).astype(np.float32) / 255
        back, _ = exr.read_exr(str(tmp_path / "c" / f"{name}.exr"))
        rgba = back[..., ::-1]
        alpha = rgba[..., 3:]
        np.testing.assert_array_equal(png[..., :3], np.broadcast_to(np.asarray(cloud, np.float32), png[..., :3].shape))
        np.testing.assert_allclose(alpha, png[..., 3:], atol=0.5 / 255 + 1e-6)
        assert ((alpha > 0.05) & (alpha < 0.5)).sum() > 100  # partly covered texels
        np.testing.assert_allclose(rgba[..., :3], colour.srgb_to_linear(np.asarray(cloud, np.float32)) * alpha,
                                   rtol=1e-6, atol=1e-9)
    meta = json.loads((tmp_path / "c" / "gasgiant.json").read_text())
    alphas = {i["file"].rsplit(".", 1)[1]: set() for i in meta["images"]}
    for item in meta["images"]:
        if not item["content"].startswith("flow map"):
            alphas[item["file"].rsplit(".", 1)[1]].add(item["alpha"])
            assert item["alpha"] in item["content"]
        else:
            assert "alpha" not in item
    assert alphas == {"png": {"straight"}, "exr": {"premultiplied"}}
    assert not [i for i in gg.bake_metadata(gg.GasGiantParams(file_format="PNG_EXR"))["images"] if "alpha" in i]


def test_hot_pink_shows_where_no_particle_paints():
    params = gg.GasGiantParams(**{**SMALL, "particles": 2000, "hot_pink": True, "fade_rate": 0.3, "blur": 0.0,
                                  "blur_interval": 1})
    with gg.Simulation(params) as sim:
        sim.step(20)
        img = sim.cube_faces().reshape(-1, 3)
    pink = np.all(np.abs(img - np.array(gg.HOT_PINK, np.float32)) < 0.02, axis=1)
    assert pink.mean() > 0.9  # 2000 particles leave most texels unpainted: they turned hot pink


# --- velocity field files ----------------------------------------------------------------------------------------

FIELD_SMALL = dict(SMALL, iterations=10, particles=20_000)


def test_velocity_field_save_and_load_give_the_same_bake(tmp_path, monkeypatch):
    Image = pytest.importorskip("PIL.Image")
    path = tmp_path / "field.npz"
    params = gg.GasGiantParams(**{**FIELD_SMALL, "vortices": 3, "save_field": str(path)})
    a = gg.run_bake(params, str(tmp_path / "a"))
    with np.load(path) as z:
        assert str(z["format"]) == gg.FIELD_FILE_FORMAT and int(z["version"]) == gg.FIELD_FILE_VERSION
        assert z["velocity"].shape == (1, 6, 66, 66, 3) and z["velocity"].dtype == np.float32
        assert '"vortices": 3' in str(z["settings"])
    assert sorted(os.listdir(tmp_path)) == ["a", "field.npz"]  # no temporary file left
    fresh = gg.build_field(params)
    loaded = gg.load_fields(str(path), params)[0.0]
    np.testing.assert_array_equal(loaded.chart, fresh.chart)
    monkeypatch.setattr(gg.job, "build_field_steps", lambda *a, **k: pytest.fail("the field was built again"))
    b = gg.run_bake(gg.GasGiantParams(**{**FIELD_SMALL, "vortices": 3, "load_field": str(path)}), str(tmp_path / "b"))
    for fa, fb in zip(a.files, b.files, strict=True):
        np.testing.assert_array_equal(np.asarray(Image.open(fa)), np.asarray(Image.open(fb)))


def _field_file(tmp_path, **kw):
    path = tmp_path / "f.npz"
    gg.run_bake(gg.GasGiantParams(**{**FIELD_SMALL, "iterations": 1, "save_field": str(path), **kw}),
                str(tmp_path / "first"))
    return path


@pytest.mark.parametrize("case, msg", [
    ("missing", "does not exist"),
    ("corrupt", "cannot be read"),
    ("truncated", "cannot be read"),
    ("size", "holds a 64-per-face field but the settings ask for 128"),
    ("settings", r"other settings \(bands: 6.0 in the file, 9.0 now\)"),
    ("version", "has version 99"),
])
def test_velocity_field_load_bad_input(tmp_path, case, msg):
    path = tmp_path / "f.npz"
    kw = {}
    if case == "corrupt":
        path.write_bytes(b"not a field" * 100)
    elif case != "missing":
        path = _field_file(tmp_path)
        if case == "truncated":
            path.write_bytes(path.read_bytes()[:5000])
        elif case == "size":
            kw = {"field_size": 128}
        elif case == "settings":
            kw = {"bands": 9.0}
        elif case == "version":
            with np.load(path) as z:
                data = dict(z)
            data["version"] = np.array(99)
            with open(path, "wb") as fh:
                np.savez(fh, **data)
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(gg.GasGiantError, match=msg):
        gg.run_bake(gg.GasGiantParams(**{**FIELD_SMALL, "load_field": str(path), **kw}), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert (path.read_bytes() if path.exists() else None) == before


def test_velocity_field_save_bad_input_and_cancel(tmp_path):
    for target, msg in ((tmp_path / "f.txt", "ending in .npz"), (tmp_path / "no" / "f.npz", "does not exist"),
                        (tmp_path, "ending in .npz")):
        with pytest.raises(gg.GasGiantError, match=msg):
            gg.run_bake(gg.GasGiantParams(**{**FIELD_SMALL, "save_field": str(target)}), str(tmp_path / "out"))
    assert os.listdir(tmp_path) == []
    job = gg.bake(gg.GasGiantParams(**{**FIELD_SMALL, "iterations": 200, "save_field": str(tmp_path / "f.npz")}),
                  str(tmp_path / "out"))
    for _ in range(4):
        next(job)
    job.close()
    assert os.listdir(tmp_path) == []  # cancelled: no field file, no images


# --- EXR ---------------------------------------------------------------------------------------------------------

def test_exr_writer_round_trip(tmp_path):
    img = np.random.default_rng(0).normal(size=(37, 23, 4)).astype(np.float32)
    img[:5] = 0.25  # compressible rows
    for comp in (exr.NO_COMPRESSION, exr.ZIP_COMPRESSION):
        exr.write_exr(str(tmp_path / "a.exr"), img, compression=comp)
        back, names = exr.read_exr(str(tmp_path / "a.exr"))
        assert names == ["A", "B", "G", "R"]
        np.testing.assert_array_equal(back, img[..., [3, 2, 1, 0]])
    data = (tmp_path / "a.exr").read_bytes()
    assert data[:4] == bytes([0x76, 0x2F, 0x31, 0x01])  # the OpenEXR magic number
    np.testing.assert_allclose(colour.srgb_to_linear(np.array([0.0, 0.5, 1.0])), [0.0, 0.21404, 1.0], atol=1e-5)


def test_bake_writes_float_exr_next_to_png(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    params = gg.GasGiantParams(**{**SMALL, "iterations": 10, "file_format": "PNG_EXR"})
    gg.run_bake(params, str(tmp_path / "o"))
    names = sorted(os.listdir(tmp_path / "o"))
    assert len(names) == 17 and "gasgiant_equirect.exr" in names and "gasgiant_px.png" in names
    with gg.Simulation(params) as sim:
        sim.step(params.iterations)
        face = np.array(sim.face_rgb(0))
        eq = sim.equirect()
        flow = sim.flow_velocity(256)
    back, _ = exr.read_exr(str(tmp_path / "o" / "gasgiant_px.exr"))
    np.testing.assert_allclose(back[..., ::-1], colour.srgb_to_linear(face), rtol=1e-6)  # linear colour, float
    png = np.asarray(Image.open(tmp_path / "o" / "gasgiant_px.png")).astype(float) / 255
    assert np.abs(png - face).max() <= 0.5 / 255 + 1e-6
    back, _ = exr.read_exr(str(tmp_path / "o" / "gasgiant_equirect.exr"))
    np.testing.assert_allclose(back[..., ::-1], colour.srgb_to_linear(eq), rtol=1e-6)
    back, _ = exr.read_exr(str(tmp_path / "o" / "gasgiant_flow.exr"))
    np.testing.assert_array_equal(back[..., ::-1], flow)  # real velocities (radians per frame), not colour
    assert len(np.unique(back)) > 100  # float precision, not 8-bit steps
    with pytest.raises(gg.GasGiantError, match="File format 'TIFF'"):
        gg.run_bake(gg.GasGiantParams(**{**SMALL, "file_format": "TIFF"}), str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()


# --- animated bakes: key-frame fields --------------------------------------------------------------------------

def test_animated_bake_builds_the_field_only_at_key_frames(tmp_path, monkeypatch):
    calls = []
    real = gg.build_field_steps

    def counting(params, time=0.0, noise_norm=None):
        calls.append(time)
        return real(params, time, noise_norm)

    monkeypatch.setattr(gg.job, "build_field_steps", counting)
    base = {**SMALL, "particles": 5000, "iterations": 2, "frames": 9, "frame_iterations": 1, "equirect_width": 0}
    gg.run_bake(gg.GasGiantParams(**base, field_interval=4), str(tmp_path / "a"))
    assert calls == pytest.approx([0.0, 0.2, 0.4])  # frames 1, 5, 9 (0-based 0, 4, 8) at 0.05 per frame
    calls.clear()
    gg.run_bake(gg.GasGiantParams(**base, field_interval=1), str(tmp_path / "b"))
    assert len(calls) == 9
    calls.clear()
    gg.run_bake(gg.GasGiantParams(**base, time_step=0.0), str(tmp_path / "c"))  # the noise does not move
    assert calls == [0.0]
    keys, at = gg.field_times(gg.GasGiantParams(frames=7, field_interval=4))
    assert keys == [0, 4, 6] and at(5) == (4, 6, 0.5) and at(4) == (4, 6, 0.0)


def test_memory_estimate_counts_the_key_frames_without_listing_them(monkeypatch):
    """The panel redraws the estimate on every change: it counts the key frames arithmetically. On small cases it
    equals the estimate from the listed key frames (field_times); at the largest Frames it lists nothing (no
    memory grows with the frames: a set of every key frame took ~60 MB at a million frames) and is refused
    beyond it."""
    cases = [dict(frames=frames, field_interval=k, time_step=ts, noise_speed=ns, save_field=save)
             for frames in range(1, 30) for k in (1, 2, 3, 4, 7, 28, 29, 50)
             for ts, ns in ((0.002, 0.6), (0.0, 0.6), (0.002, 0.0)) for save in ("", "f.npz")]
    new = [gg.estimate_memory(gg.GasGiantParams(**c)) for c in cases]
    for c in cases:
        assert gg.key_frame_count(gg.GasGiantParams(**c)) == len(gg.field_times(gg.GasGiantParams(**c))[0]), c
    monkeypatch.setattr(gg.params, "key_frame_count", lambda p: len(gg.field_times(p)[0]))  # the old estimate
    assert new == [gg.estimate_memory(gg.GasGiantParams(**c)) for c in cases]
    monkeypatch.undo()

    def listing(*_args):
        raise AssertionError("the estimate listed the key frames")

    monkeypatch.setattr(gg.params, "field_times", listing)
    huge = gg.GasGiantParams(frames=gg.MAX_FRAMES, field_interval=1, save_field="f.npz")
    tracemalloc.start()
    try:
        est = gg.estimate_memory(huge)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000
    assert est > (gg.MAX_FRAMES - 1) * 6 * (huge.field_size + 2) ** 2 * 20  # each key field kept until saved
    huge.validate()
    with pytest.raises(gg.GasGiantError, match=r"Frames 1048575: at most 1048574 \(Blender's last frame"):
        dataclasses.replace(huge, frames=gg.MAX_FRAMES + 1).validate()


def test_interpolated_field_is_tangent_and_frames_stay_continuous(tmp_path):
    params = gg.GasGiantParams(field_size=64, vortices=3, seed=2)
    a = gg.build_field(params, 0.0)
    b = gg.build_field(params, 0.4, a.noise_norm)
    mid = gg.lerp_field(a, b, 0.5)
    d = gg.face_directions(64, pad=1)
    v = mid.velocity
    assert np.abs(np.sum(v * d, axis=-1)).max() < 1e-6 * np.abs(v).max()
    np.testing.assert_allclose(v, 0.5 * (a.velocity + b.velocity), atol=1e-9)
    p = _unit(300, seed=3)
    h = 4 * (math.pi / 2) / 64

    def div(fld):
        return gg.surface_divergence(lambda q: gg.sample_field(fld, q), p, h)

    # no divergence of its own: the mix has exactly the (discretisation-level) divergence of the built fields
    np.testing.assert_allclose(div(mid), 0.5 * (div(a) + div(b)), atol=1e-9)
    rms = np.sqrt(np.mean(div(mid) ** 2))
    assert rms < 0.15 * np.sqrt(np.mean(_circulation(lambda q: gg.sample_field(mid, q), p, h) ** 2))
    exact = gg.build_field(params, 0.2, a.noise_norm)  # the interpolation is close to the field it stands for
    err = np.linalg.norm(mid.velocity - exact.velocity, axis=-1)
    assert np.sqrt(np.mean(err ** 2)) < 0.35 * np.sqrt(np.mean(np.sum(exact.velocity ** 2, axis=-1)))
    # frames of an animated bake change little from one to the next, and the key-frame bake stays close to the
    # bake that builds every frame
    base = {**SMALL, "particles": 40_000, "iterations": 30, "frames": 6, "frame_iterations": 4,
            "equirect_width": 0, "file_format": "EXR"}
    def frames(interval, out):
        gg.run_bake(gg.GasGiantParams(**base, field_interval=interval), str(tmp_path / out))
        return [exr.read_exr(str(tmp_path / out / f"gasgiant_pz_{f:04d}.exr"))[0] for f in range(1, 7)]

    key, every = frames(3, "key"), frames(1, "every")
    steps = [np.abs(key[i + 1] - key[i]).mean() for i in range(5)]
    span = np.abs(key[5] - key[0]).mean()
    assert max(steps) < 0.6 * span and min(steps) > 0
    assert max(np.abs(k - e).mean() for k, e in zip(key, every, strict=True)) < 0.5 * span


# --- vortex band threshold, cube-map palette, random look ------------------------------------------------------

def test_vortices_sit_where_the_bands_are_slow():
    base = dict(vortices=40, bands=6.0, band_power=1, seed=3)
    top = np.abs(gg.band_profile(np.linspace(-1.4, 1.4, 2001), gg.GasGiantParams(**base))).max()

    def rel_speed(threshold):
        params = gg.GasGiantParams(**base, vortex_band_threshold=threshold)
        centres, _, _ = gg.vortex_set(params)
        assert len(centres) == 40
        return np.abs(gg.band_profile(gg.band_latitude(centres, params), params)) / top

    assert rel_speed(0.1).max() <= 0.1 + 1e-9
    anywhere = rel_speed(1.0)
    assert anywhere.max() > 0.5 and anywhere.mean() > 2 * rel_speed(0.2).mean()
    with pytest.raises(gg.GasGiantError, match="Vortex band threshold 0.0: use 0.05 to 1"):
        gg.GasGiantParams(vortex_band_threshold=0.0).validate()


def test_cube_map_palette_carries_on_from_earlier_faces():
    r = 16
    rng = np.random.default_rng(0)
    cube = rng.random((6, r, r, 3)).astype(np.float32)
    params = gg.GasGiantParams(palette_cube=cube, palette=np.zeros((2, 2, 3)))  # the cube map wins
    d = gg.face_directions(r).reshape(-1, 3)
    np.testing.assert_array_equal(gg.colors_at(d, params).reshape(6, r, r, 3), cube)
    with gg.Simulation(gg.GasGiantParams(**{**SMALL, "cubemap_size": 64}, palette_cube=cube)) as sim:
        start = sim.cube_faces()
    # the texture starts as the given faces (to the texture's 16-bit steps: 8-bit values are exact)
    np.testing.assert_allclose(start[:, ::4, ::4], cube, rtol=0, atol=0.5 / gg.TEXEL_MAX + 1e-7)
    with pytest.raises(gg.GasGiantError, match="six RGB or RGBA faces"):
        gg.GasGiantParams(palette_cube=cube[:5]).validate()


def test_random_look_is_seeded():
    a, b, c = gg.random_look(1), gg.random_look(1), gg.random_look(2)
    assert a == b and a != c and set(a) == set(gg.RANDOM_KEYS)
    assert a["vertical_bands"] is True and 4 <= a["bands"] <= 20
    gg.GasGiantParams(**a).validate()


def test_velocity_field_file_without_a_time_the_bake_uses(tmp_path):
    params = gg.GasGiantParams(**FIELD_SMALL)
    path = tmp_path / "late.npz"
    gg.save_fields(str(path), params, {0.5: gg.build_field(params, 0.5)})
    assert gg.load_fields(str(path), params).keys() == {0.5}
    with pytest.raises(gg.GasGiantError, match=r"noise times \[0.5\], none of which this bake uses"):
        gg.run_bake(gg.GasGiantParams(**FIELD_SMALL, load_field=str(path)), str(tmp_path / "out"))
    assert sorted(os.listdir(tmp_path)) == ["late.npz"]


def test_start_opacity_shrinks_to_the_opacity():
    with gg.Simulation(gg.GasGiantParams(**{**SMALL, "opacity_start": 1.0, "opacity": 0.2})) as sim:
        assert sim.batch_alpha(0) == 1.0
        sim.step(10)
        assert sim.batch_alpha(0) == pytest.approx(0.95 ** 10)
        sim.step(40)
        assert sim.batch_alpha(0) == pytest.approx(0.2)
    change = []
    for extra in ({}, {"opacity_start": 1.0}):
        with gg.Simulation(gg.GasGiantParams(**{**SMALL, **extra})) as sim:
            start = sim.texels()
            sim.step(1)
            change.append(np.abs(sim.texels() - start).sum())
    assert change[1] > 3.5 * change[0]  # the first coat paints at full strength (1.0 against 0.2)
    with pytest.raises(gg.GasGiantError, match="Start opacity 1.5"):
        gg.GasGiantParams(opacity_start=1.5).validate()


# --- outputs a game engine reads: the flow map's fixed scale, gasgiant.json, engine cube-map faces ---------------

def _read_json(folder):
    with open(os.path.join(folder, gg.METADATA_NAME), encoding="utf-8") as fh:
        return json.load(fh)


def _equirect_lookup(img, d):
    """Nearest pixel of an equirectangular image (row 0 north, column 0 at longitude -180) at directions d."""
    h, w = img.shape[:2]
    lon = np.arctan2(d[:, 1], d[:, 0])
    lat = np.arcsin(np.clip(d[:, 2], -1, 1))
    col = np.clip(np.floor((lon + math.pi) / (2 * math.pi) * w).astype(int), 0, w - 1)
    row = np.clip(np.floor((math.pi / 2 - lat) / math.pi * h).astype(int), 0, h - 1)
    return img[row, col], row, col


def test_flow_map_has_one_documented_scale_for_every_frame(tmp_path):
    """Decoding each frame's 8-bit flow PNG with the scale in gasgiant.json gives that frame's real velocity
    (the analytic field at the frame's noise time, in radians per frame), the same scale in every frame."""
    Image = pytest.importorskip("PIL.Image")
    params = gg.GasGiantParams(**{**SMALL, "iterations": 4, "frames": 3, "frame_iterations": 6, "time_step": 1.5,
                                  "field_interval": 1, "file_format": "PNG_EXR", "vortices": 4, "noise_speed": 2.0,
                                  "octaves": 2, "noise_scale": 1.5, "vortex_size": 0.2})
    gg.run_bake(params, str(tmp_path / "o"))
    meta = _read_json(tmp_path / "o")
    flow = meta["flow"]
    scale = flow["scale"]
    # fixed: from the settings alone, not from any frame's data
    k = math.radians(params.velocity_factor) / 20 * params.frame_iterations
    assert scale == pytest.approx(k * (1.0 + gg.FLOW_NOISE_PEAK * 2.0 + 2 * gg.FLOW_VORTEX_PEAK * 1.0))
    assert flow["iterations_per_frame"] == 6 and flow["still_png"] == 0.5 and flow["same_for_all_frames"]
    pngs = {i["file"]: i for i in meta["images"]}
    assert pngs["gasgiant_flow_{frame:04d}.png"]["frames"] == [1, 3]
    assert "clamped" in pngs["gasgiant_flow_{frame:04d}.png"]["clamped"]
    assert pngs["gasgiant_flow_{frame:04d}.png"]["colour_space"].startswith("non-colour")
    d = gg.equirect_directions(256).reshape(-1, 3)
    east = np.stack([-d[:, 1], d[:, 0], np.zeros(len(d))], -1)
    east /= np.maximum(np.linalg.norm(east, axis=1, keepdims=True), 1e-9)
    north = np.cross(d, east)
    blues = []
    for f in range(3):
        png = np.asarray(Image.open(tmp_path / "o" / f"gasgiant_flow_{f + 1:04d}.png")).astype(np.float64) / 255
        decoded = gg.decode_flow(png, scale).reshape(-1, 3)
        v = gg.velocity_at(d, params, time=f * params.time_step) * params.frame_iterations
        truth = np.stack([np.sum(v * east, 1), np.sum(v * north, 1)], -1)
        np.testing.assert_allclose(decoded[:, :2], truth, atol=0.04 * scale)  # field grid + 8 bits
        np.testing.assert_allclose(decoded[:, 2], np.linalg.norm(truth, axis=1), atol=0.04 * scale)
        real, _ = exr.read_exr(str(tmp_path / "o" / f"gasgiant_flow_{f + 1:04d}.exr"))
        real = real[..., ::-1].reshape(-1, 3)  # the float EXR holds the velocities themselves
        np.testing.assert_allclose(real[:, :2], truth, atol=0.04 * scale)
        np.testing.assert_allclose(decoded, real, atol=0.5 / 255 * 2 * scale + 1e-6)
        blues.append(png[..., 2].max())
    assert max(blues) < 0.9 and len({round(b, 3) for b in blues}) > 1  # not each frame's own maximum
    assert flow["clamped_texels"] == 0 and flow["max_speed_baked"] < scale


def test_flow_map_clamps_beyond_the_scale_and_takes_a_set_scale(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    params = gg.GasGiantParams(**{**SMALL, "iterations": 2, "noise_speed": 0.0, "band_speed": 2.0,
                                  "pole_attenuation": 0.0, "flow_scale": 0.01})
    gg.run_bake(params, str(tmp_path / "o"))
    meta = _read_json(tmp_path / "o")
    assert meta["flow"]["scale"] == 0.01 and meta["flow"]["scale_source"] == "flow_scale setting"
    png = np.asarray(Image.open(tmp_path / "o" / "gasgiant_flow.png")).astype(np.float64) / 255
    fastest = math.radians(1.0) / 20 * params.frame_iterations * 2.0  # the equator band, radians per frame
    assert fastest > 0.01
    assert png[..., 0].max() == 1.0 and png[..., 0].min() == 0.0 and png[..., 2].max() == 1.0  # clamped
    assert meta["flow"]["clamped_texels"] > 0 and meta["flow"]["max_speed_baked"] == pytest.approx(fastest, rel=0.02)
    with pytest.raises(gg.GasGiantError, match="Flow scale -1"):
        gg.GasGiantParams(flow_scale=-1.0).validate()


def _gl_cube_lookup(faces, d):
    """Nearest texel of a cube map in the D3D/OpenGL slot order +X, -X, +Y, -Y, +Z, -Z at directions d, by the
    OpenGL spec's major-axis table (s = (sc / |ma| + 1) / 2, t = (tc / |ma| + 1) / 2; column = s, row = t)."""
    x, y, z = d[:, 0], d[:, 1], d[:, 2]
    ax, ay, az = np.abs(d).T
    slot = np.where((ax >= ay) & (ax >= az), np.where(x > 0, 0, 1),
                    np.where(ay >= az, np.where(y > 0, 2, 3), np.where(z > 0, 4, 5)))
    sc = np.choose(slot, [-z, z, x, x, x, -x])
    tc = np.choose(slot, [-y, -y, z, -z, -y, -y])
    ma = np.choose(slot, [ax, ax, ay, ay, az, az])
    n = faces.shape[1]
    s = (sc / ma + 1) / 2
    t = (tc / ma + 1) / 2
    col = np.clip(np.floor(s * n).astype(int), 0, n - 1)
    row = np.clip(np.floor(t * n).astype(int), 0, n - 1)
    return faces[slot, row, col]


@pytest.mark.parametrize("layout, to_engine", [("GLTF", [[1, 0, 0], [0, 0, 1], [0, -1, 0]]),
                                               ("UNITY", [[-1, 0, 0], [0, 0, 1], [0, -1, 0]])])
def test_engine_cube_faces_sample_like_the_equirect(tmp_path, layout, to_engine):
    """A cube sampler given an engine-space direction returns the colour the equirect image shows for that
    direction (the planet's colours: each texel starts as a smooth colour of its Blender direction)."""
    Image = pytest.importorskip("PIL.Image")
    m = 64
    dirs = gg.face_directions(m)  # a palette cube whose colour is the Blender direction: no symmetry hides a flip
    palette = (0.5 + 0.5 * dirs).astype(np.float32)
    params = gg.GasGiantParams(**{**SMALL, "particles": 10, "iterations": 1, "cubemap_size": 64,
                                  "equirect_width": 512, "opacity": 0.001, "blur_interval": 0,
                                  "palette_cube": palette, "cube_layout": layout})
    gg.run_bake(params, str(tmp_path / "o"))
    meta = _read_json(tmp_path / "o")
    files = [i["file"] for i in meta["images"] if i["layout"] == "cube face"]
    assert files == [f"gasgiant_{n}.png" for n in ("posx", "negx", "posy", "negy", "posz", "negz")]
    assert [i["slot"] for i in meta["images"] if i["layout"] == "cube face"] == ["+X", "-X", "+Y", "-Y", "+Z", "-Z"]
    faces = np.stack([np.asarray(Image.open(tmp_path / "o" / f)) for f in files]).astype(np.float64) / 255
    equirect = np.asarray(Image.open(tmp_path / "o" / "gasgiant_equirect.png")).astype(np.float64) / 255
    m_eng = np.array(to_engine, dtype=np.float64)
    d_engine = _unit(300, seed=11)
    d_blender = d_engine @ m_eng  # engine = M @ blender, M orthogonal -> blender = M^T @ engine
    d_blender[:3] = [[0, 0, 1], [0.6, 0.0, 0.8], [0.0, -0.6, -0.8]]  # poles and near-poles too
    d_engine = d_blender @ m_eng.T
    got = _gl_cube_lookup(faces, d_engine)
    want, _, _ = _equirect_lookup(equirect, d_blender)
    np.testing.assert_allclose(got, want, atol=0.04)
    np.testing.assert_allclose(got, 0.5 + 0.5 * d_blender, atol=0.04)
    # the JSON's axes say the same: each face's engine normal / right / up are the table's
    for item in (i for i in meta["images"] if i["layout"] == "cube face"):
        assert np.allclose(m_eng @ np.array(item["normal"]), item["engine_normal"])
        assert np.allclose(_gl_cube_lookup(faces, np.array([item["engine_normal"]]))[0],
                           0.5 + 0.5 * np.array(item["normal"]), atol=0.04)


def test_blender_cube_faces_do_not_fit_an_engine_cube_map_as_is_and_json_says_how(tmp_path):
    """The Blender layout (faces seen from outside) sampled as an engine cube map gives wrong colours; the
    transforms gasgiant.json names for each face turn it into the engine layout exactly."""
    Image = pytest.importorskip("PIL.Image")
    dirs = gg.face_directions(64)
    params = gg.GasGiantParams(**{**SMALL, "particles": 10, "iterations": 1, "cubemap_size": 64,
                                  "opacity": 0.001, "blur_interval": 0,
                                  "palette_cube": (0.5 + 0.5 * dirs).astype(np.float32)})
    gg.run_bake(params, str(tmp_path / "b"))
    gg.run_bake(gg.GasGiantParams(**{**params.__dict__, "cube_layout": "GLTF"}), str(tmp_path / "g"))
    meta = _read_json(tmp_path / "b")
    items = [i for i in meta["images"] if i["layout"] == "cube face"]
    assert [i["file"] for i in items] == [f"gasgiant_{f}.png" for f in gg.FACES]
    blender = {i["file"]: np.asarray(Image.open(tmp_path / "b" / i["file"])) for i in items}
    ops = {"as is": lambda a: a, "mirror left-right": lambda a: a[:, ::-1], "mirror top-bottom": lambda a: a[::-1],
           "rotate 180": lambda a: a[::-1, ::-1], "rotate 90 clockwise": lambda a: np.rot90(a, -1),
           "rotate 90 counter-clockwise": lambda a: np.rot90(a, 1), "transpose": lambda a: a.swapaxes(0, 1),
           "anti-transpose": lambda a: a[::-1, ::-1].swapaxes(0, 1)}
    slot_files = dict(zip(["+X", "-X", "+Y", "-Y", "+Z", "-Z"],
                          [f"gasgiant_{n}.png" for n in gg.ENGINE_FACES], strict=True))
    for item in items:
        how = item["engine_slots"]["gltf"]
        engine = np.asarray(Image.open(tmp_path / "g" / slot_files[how["slot"]]))
        np.testing.assert_array_equal(ops[how["transform"]](blender[item["file"]]), engine)
    naive = np.stack([blender[f"gasgiant_{f}.png"] for f in gg.FACES]).astype(np.float64) / 255
    d = _unit(300, seed=12)
    wrong = np.abs(_gl_cube_lookup(naive, d @ gg.ENGINE_AXES["GLTF"].T) - (0.5 + 0.5 * d)).max()
    assert wrong > 0.3


TINY = dict(particles=2_000, iterations=2, field_size=16, cubemap_size=64, equirect_width=128, threads=1)
NUMBER_FIELDS = [f.name for f in dataclasses.fields(gg.GasGiantParams) if f.type in ("int", "float")]
FLOAT_FIELDS = [f.name for f in dataclasses.fields(gg.GasGiantParams) if f.type == "float"]


def test_every_float_setting_has_a_range():
    assert set(FLOAT_FIELDS) == set(gg.FLOAT_RANGES)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", NUMBER_FIELDS)
def test_non_finite_numbers_are_refused_before_the_bake(name, value, tmp_path):
    """nan and inf in any number (a script's or the command line's) is refused with the setting named, instead of
    a bake that loses its particles (IndexError) or writes black."""
    params = gg.GasGiantParams(**{**TINY, name: value, "vortices": 3 if name != "vortices" else value})
    with pytest.raises(gg.GasGiantError) as err:
        gg.run_bake(params, str(tmp_path / "out"))
    assert str(value) in str(err.value)
    if name in FLOAT_FIELDS:
        assert err.value.field == name and err.value.advice.startswith("use ")
        assert str(err.value).startswith(gg.FLOAT_RANGES[name][0])  # the setting's name, as the UI shows it
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", [n for n, r in gg.FLOAT_RANGES.items() if r[2] == gg.MAX_MAGNITUDE])
def test_enormous_numbers_are_refused(name):
    with pytest.raises(gg.GasGiantError, match="1,000,000") as err:
        gg.GasGiantParams(**{name: 1e300}).validate()
    assert err.value.field == name


def test_the_largest_allowed_speeds_still_bake(tmp_path):
    """The magnitude limit is one a bake survives: every speed at the limit at once gives finite images."""
    top = gg.MAX_MAGNITUDE
    params = gg.GasGiantParams(**TINY, velocity_factor=top, band_speed=-top, noise_speed=top, vortices=4,
                               vortex_strength=top, w_offset=-top, bands=top, gain=top, time_step=top, frames=2,
                               frame_iterations=1, file_format="EXR")
    result = gg.run_bake(params, str(tmp_path / "out"))
    exrs = [path for path in result.files if path.endswith(".exr")]
    assert len(exrs) == 2 * 8
    for path in exrs:
        assert np.isfinite(exr.read_exr(path)[0]).all(), path


@pytest.mark.parametrize("colour", [(5.0, -3.0, 1.0), (math.nan, 1.0, 1.0), (1.0, 1.0, math.inf), (1.0, 1.0),
                                    (1.0, 0.5, 0.5, 1.0)])
def test_cloud_colour_is_three_numbers_from_0_to_1(colour):
    with pytest.raises(gg.GasGiantError, match="Cloud colour .*: use three numbers from 0 to 1") as err:
        gg.GasGiantParams(cloud_mode=True, cloud_color=colour).validate()
    assert err.value.field == "cloud_color"
    gg.GasGiantParams(cloud_mode=True, cloud_color=(0.0, 0.5, 1.0)).validate()


@pytest.mark.parametrize("bad", [(0.0, (2.0, 0.5, 0.5)), (0.0, (math.nan, 0.5, 0.5)), (math.nan, (0.5, 0.5, 0.5)),
                                 (1.5, (0.5, 0.5, 0.5))])
def test_ramp_colours_and_stops_from_0_to_1(bad):
    with pytest.raises(gg.GasGiantError, match="Colour ramp"):
        gg.GasGiantParams(ramp=((0.0, (0.1, 0.2, 0.3)), bad)).validate()


@pytest.mark.parametrize("layout", gg.CUBE_LAYOUTS)
def test_engine_faces_turn_back_into_the_blender_faces_exactly(layout):
    """A palette read from an engine-layout bake: blender_face_image undoes layout_face_image for every face (a
    flip, a transpose or both), so the faces are the Blender ones texel for texel."""
    rng = np.random.default_rng(3)
    for entry in gg.cube_layout_faces(layout):
        face = rng.random((5, 5, 3), dtype=np.float32)
        engine = gg.layout_face_image(face, entry)
        np.testing.assert_array_equal(gg.blender_face_image(engine, entry), face)
    assert any(e["t"][0][0] == 0 for e in gg.cube_layout_faces("GLTF"))  # the transposing branch is exercised


# --- the settings table ------------------------------------------------------------------------------------------

def test_the_dataclass_is_the_settings_table():
    """GasGiantParams has one field per parameter of the table, in its order, with its type and default."""
    fields = dataclasses.fields(gg.GasGiantParams)
    assert [(f.name, f.type) for f in fields] == [(s.name, s.type) for s in gg.PARAM_SETTINGS]
    for f, s in zip(fields, gg.PARAM_SETTINGS, strict=True):
        assert f.default is s.default or f.default == s.default, s.name
        assert f.compare == f.repr == s.compare, s.name
    assert {s.name for s in gg.SETTINGS if s.type == "float" and s.param} == set(gg.FLOAT_RANGES)
    names = [s.name for s in gg.SETTINGS]
    assert len(names) == len(set(names))


def test_the_ui_limits_are_inside_the_ranges_the_core_accepts():
    """A value the UI lets a user type is one the bake accepts, and every UI default is inside the UI's limits."""
    for s in gg.UI_SETTINGS:
        if s.ui in ("INT", "FLOAT"):
            assert s.min is None or s.default >= s.min, s.name
            assert s.max is None or s.default <= s.max, s.name
        if s.ui in ("SIZE", "ENUM"):
            assert s.default in ([i[0] for i in s.items] if s.ui == "ENUM" else s.items), s.name
        if s.check:
            _, lo, hi, _ = s.check
            assert s.min is None or (s.min > lo if s.above else s.min >= lo), s.name
            assert s.max is None or s.max <= hi, s.name
    for s in gg.PARAM_SETTINGS:  # the UI's hard limits themselves, one setting at a time
        for limit in (s.min, s.max) if s.ui in ("INT", "FLOAT") else ():
            if limit is not None:
                # (fade in + fade out: at most 1 together, so the other one is 0 here)
                gg.GasGiantParams(**{"fade_in": 0.0, "fade_out": 0.0, s.name: limit}).validate()


def test_the_command_line_options_come_from_the_table():
    parser = argparse.ArgumentParser()
    for option in gg.cli_options():
        parser.add_argument(option.flag, **option.kwargs)
    assert gg.cli_flag("noise_speed") == "--turbulence" and gg.cli_flag("fade_in") is None
    assert len([o for o in gg.cli_options() if o.kwargs.get("type") is float and "nargs" not in o.kwargs]) == 20
    args = parser.parse_args(["--turbulence", "2.5", "--equirect", "0", "--format", "png_exr", "--cube-layout",
                              "gltf", "--cloud-color", "1", "0.5", "0", "--vertical-bands", "--save-field", "f.npz",
                              "--mapping", "plain", "--field-interval", "3"])
    assert gg.cli_changes(args) == dict(noise_speed=2.5, equirect_width=0, file_format="PNG_EXR", cube_layout="GLTF",
                                        cloud_color=(1.0, 0.5, 0.0), vertical_bands=True,
                                        save_field=os.path.abspath("f.npz"), mapping="PLAIN", field_interval=3)
    assert gg.cli_changes(parser.parse_args([])) == {}
    dataclasses.replace(gg.GasGiantParams(), **gg.cli_changes(args)).validate()


def test_png_faces_are_the_float_faces_in_8_bits():
    for extra in ({}, {"cloud_mode": True}):
        with gg.Simulation(gg.GasGiantParams(**{**SMALL, **extra})) as sim:
            sim.step(25)  # painted and blurred once
            for f in range(6):  # the PNG writer's own conversion of the float faces
                np.testing.assert_array_equal(sim.face_png_pixels(f), to_uint8(sim.face_rgb(f)))


def _files(folder):
    return {n: (folder / n).read_bytes() for n in sorted(os.listdir(folder))}


@pytest.mark.parametrize("extra", [dict(), dict(lifetime=3, respawn_batches=2, blur_interval=2, field_interval=2,
                                                cloud_mode=True)])
def test_a_sequence_baked_in_parts_is_the_bake_of_every_frame_byte_for_byte(tmp_path, extra):
    """Parts of frames 1-2, 3-5, 6 (a farm's tasks), each starting from the state the part before saved, write the
    files of one bake of the 6 frames, gasgiant.json included; a part run again (a retry) writes the same."""
    params = gg.GasGiantParams(**{**TINY_BAKE, "frames": 6, "noise_speed": 0.5, "time_step": 0.1, **extra})
    whole = gg.run_bake(params, str(tmp_path / "whole"))
    states = str(tmp_path / "states")
    for part in [(1, 2), (3, 5), (6, 6)]:
        result = gg.run_bake(params, str(tmp_path / "parts"), part=part, state_dir=states)
        assert result.frames == part[1] - part[0] + 1
    assert _files(tmp_path / "parts") == _files(tmp_path / "whole")
    assert sorted(os.listdir(states)) == ["gasgiant_state_0002.npz", "gasgiant_state_0005.npz"]
    assert [os.path.basename(p) for p in result.equirect] == [os.path.basename(p) for p in whole.equirect]  # (--save)
    gg.run_bake(params, str(tmp_path / "parts"), part=(3, 5), state_dir=states)  # run twice: the same files
    assert _files(tmp_path / "parts") == _files(tmp_path / "whole")


def test_a_part_refuses_a_missing_or_foreign_state_and_writes_nothing(tmp_path):
    params = gg.GasGiantParams(**{**TINY_BAKE, "frames": 4})
    states = str(tmp_path / "states")
    with pytest.raises(gg.GasGiantError, match="No saved state .* of frame 2: bake the frames up to 2 first"):
        gg.run_bake(params, str(tmp_path / "out"), part=(3, 4), state_dir=states)
    assert not (tmp_path / "out").exists()
    gg.run_bake(params, str(tmp_path / "out"), part=(1, 2), state_dir=states)
    other = dataclasses.replace(params, seed=params.seed + 1)
    with pytest.raises(gg.GasGiantError, match="was baked with other settings"):
        gg.run_bake(other, str(tmp_path / "out2"), part=(3, 4), state_dir=states)
    with pytest.raises(gg.GasGiantError, match="is of frame 2, not 3"):
        os.replace(gg.state_path(states, 2), gg.state_path(states, 3))
        gg.run_bake(params, str(tmp_path / "out2"), part=(4, 4), state_dir=states)
    assert not (tmp_path / "out2").exists()
    with pytest.raises(gg.GasGiantError, match="Frames 3-5 are not a part"):
        gg.run_bake(params, str(tmp_path / "out2"), part=(3, 5), state_dir=states)
    with pytest.raises(gg.GasGiantError, match="needs the folder of the states"):
        gg.run_bake(params, str(tmp_path / "out2"), part=(1, 2))
    with pytest.raises(gg.GasGiantError, match="--save-field saves the velocity fields of the whole sequence"):
        gg.run_bake(dataclasses.replace(params, save_field=str(tmp_path / "f.npz")), str(tmp_path / "out2"),
                    part=(1, 2), state_dir=states)
    assert not (tmp_path / "out2").exists()


def test_typed_fields_match_the_settings_table():
    """GasGiantParams is made at run time from the settings table; the type checker reads its fields from the
    ``if TYPE_CHECKING:`` block of ``_GasGiantParamsMethods`` instead. The two lists must agree (name, type, order)."""
    tree = ast.parse(inspect.getsource(gg_params))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_GasGiantParamsMethods")
    block = next(n for n in cls.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    typed = [(n.target.id, ast.unparse(n.annotation)) for n in block.body
             if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    assert typed == [(s.name, s.type) for s in gg_settings.PARAM_SETTINGS]


def test_fill_transparent_gives_the_card_the_colours_of_the_picture_on_it():
    """A picture on a transparent card (a planet's disc): the opaque pixels keep their colour exactly, every pixel
    less than half opaque takes an average of opaque ones (never the card's own colour), the nearer ones first, at
    any size (odd ones too); a card with nothing on it is refused."""
    rng = np.random.default_rng(1)
    for h, w in ((128, 128), (37, 53), (1, 9)):
        rgb = np.zeros((h, w, 3), np.float32)          # the card: black
        alpha = np.zeros((h, w), np.float32)
        left = rng.uniform(0.6, 0.7, 3).astype(np.float32)
        right = rng.uniform(0.2, 0.3, 3).astype(np.float32)
        rgb[:, : w // 4], alpha[:, : w // 4] = left, 1.0
        rgb[:, -(w // 4):], alpha[:, -(w // 4):] = right, 0.8
        alpha[0, 0] = 0.49  # less than half opaque: card
        out = colour.fill_transparent(rgb, alpha)
        keep = alpha >= 0.5
        np.testing.assert_array_equal(out[keep], rgb[keep])
        card = out[~keep]
        assert card.min() >= min(left.min(), right.min()) - 1e-6 and card.max() <= max(left.max(), right.max()) + 1e-6
        # the card next to each side wears mostly that side's colour
        assert np.abs(out[:, w // 4] - left).max() < np.abs(out[:, w // 4] - right).max()
        assert np.abs(out[:, -(w // 4) - 1] - right).max() < np.abs(out[:, -(w // 4) - 1] - left).max()
    opaque = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(colour.fill_transparent(np.full((4, 4, 3), 0.3, np.float32), opaque),
                                  np.float32(0.3))  # (numpy 2 compares a float32 with a Python float as float64)
    with pytest.raises(ValueError, match="no pixel is opaque"):
        colour.fill_transparent(np.zeros((4, 4, 3)), np.full((4, 4), 0.2))
