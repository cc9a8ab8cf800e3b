"""The per-frame benchmarks' harness (benchmarks/framebench.py): what it times is what playback pays.

No timing is asserted: these check that the reference scene really moves its vertices at every frame change (a
reference that evaluated once would make every ratio meaningless), that both scenes are stepped through the same
frames, and the arithmetic of the ratios quoted."""

import bpy
import numpy as np
import pytest

from tests.blender import api


@pytest.fixture
def fb(load_helper):
    return load_helper("framebench", "benchmarks", "framebench.py")


def _evaluated_z(scene, obj):
    dg = scene.view_layers[0].depsgraph
    ev = obj.evaluated_get(dg)
    co = np.empty(3 * len(ev.data.vertices), np.float32)
    ev.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)[:, 2]


def test_reference_scene_moves_every_vertex_at_every_frame_change(fb):
    effect = api.scene()
    effect.frame_start, effect.frame_end = 1, 11
    mesh = fb.grid_mesh("Grid", 5, size=2.0)
    ref = fb.reference_scene(effect, [mesh])
    obj = ref.collection.objects[0]
    fps = ref.render.fps / ref.render.fps_base
    for frame in (3, 7):
        ref.frame_set(frame)
        z = _evaluated_z(ref, obj)
        assert z.shape == (25,)
        assert np.allclose(z, 1e-4 * frame / fps, atol=1e-7)
    assert ref.frame_start == 1 and ref.frame_end == 11


def test_frame_change_steps_both_scenes_through_the_same_frames(fb):
    effect = api.scene()
    mesh = fb.grid_mesh("Grid", 3, size=1.0)
    ref = fb.reference_scene(effect, [mesh])
    seen = []

    def note(scene, *_args):
        seen.append((scene.name, scene.frame_current))

    bpy.app.handlers.frame_change_post.append(note)
    try:
        got = fb.frame_change(effect, ref, range(1, 5), 2, before_round=lambda r: seen.append(("round", r)))
    finally:
        bpy.app.handlers.frame_change_post.remove(note)
    assert got["frames"] == [2, 3, 4]
    assert len(got["effect"]) == len(got["reference"]) == 2
    assert all(len(t) == 3 and min(t) > 0 for t in got["effect"] + got["reference"])
    timed = [s for s in seen if s[0] != "round"]
    for f in (2, 3, 4):  # each timed frame of each round: both scenes, back to back
        assert timed.count((effect.name, f)) == 2 and timed.count((ref.name, f)) == 2
    # which scene goes first alternates frame by frame
    first = [timed[i][0] for i in range(2, len(timed), 2)][:3]
    assert first[0] != first[1] and first[1] != first[2]
    assert seen[0] == ("round", 0)


def test_ratio_summary_and_per_frame_spans(fb):
    got = {"frames": list(range(2, 12)),
           "effect": [[2.0] * 5 + [6.0] * 5, [3.0] * 5 + [9.0] * 5],
           "reference": [[1.0] * 10, [1.0] * 10]}
    out = fb.summary(got, skip=0)
    assert out["method"] == "frame_change" and out["quoted"] is True
    assert out["ratio"]["min"] == pytest.approx(4.0) and out["ratio"]["max"] == pytest.approx(6.0)
    assert out["ratio"]["median"] == pytest.approx(5.0)
    spans = fb.per_frame(got, bins=2)
    assert [s["frames"] for s in spans] == [[2, 6], [7, 11]]
    assert spans[0]["ratio_median"] == pytest.approx(2.5) and spans[1]["ratio_median"] == pytest.approx(7.5)
    assert spans[1]["ratio_min"] == pytest.approx(6.0) and spans[1]["ratio_max"] == pytest.approx(9.0)


def test_every_scene_is_timed_with_an_active_dependency_graph(fb):
    """Blender does more for an active graph (the one a window plays), and only the file's own scene had one: a
    reference timed with an inactive graph made every ratio larger than the user pays. An active graph writes
    the evaluated bounds back to the original object, which shows that both scenes' graphs are active."""
    effect = bpy.data.scenes.new("Effect")  # not the file's scene: its graph is not made active by anything else
    effect.frame_start, effect.frame_end = 1, 11
    mesh = fb.grid_mesh("Grid", 3, size=2.0)
    obj = bpy.data.objects.new("Effect Grid", mesh)
    api.of(bpy.types.NodesModifier, obj.modifiers.new("Reference", "NODES")).node_group = fb.reference_group()
    effect.collection.objects.link(obj)
    ref = fb.reference_scene(effect, [mesh])
    fb.frame_change(effect, ref, range(1, 4), 1)
    fps = effect.render.fps / effect.render.fps_base
    for scene, o in ((effect, obj), (ref, ref.collection.objects[0])):
        top = max(corner[2] for corner in o.bound_box)
        assert top == pytest.approx(1e-4 * 3 / fps, abs=1e-7), scene.name
