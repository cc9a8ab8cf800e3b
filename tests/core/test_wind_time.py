"""Wind core: time at large frame numbers (the frame is wrapped into the loop first, as the node group does)."""

from typing import Any

import numpy as np
import pytest

from core import wind
from core import wind_shapes


@pytest.mark.parametrize("category", ["TREE", "GRASS"])
def test_a_loop_is_wrapped_before_the_angles_so_far_frames_equal_their_loop_frame_exactly(category):
    """The twin wraps the frame into the loop as the group does: frame ``s`` and ``s mod loop`` are the same
    numbers (not only the same angles up to float error), at any frame number, negative ones too."""
    tree = wind_shapes.make_tree(n_branches=3, leaves_per_branch=2)
    res = wind.bake_wind_data(tree["positions"], tree["edges"])
    col = wind.pack_channels(res)
    normals = np.zeros_like(tree["positions"])
    normals[:, 2] = 1.0
    scene = wind.SceneWind(strength=1.5, gust_strength=0.5, loop_frames=96, fps=30 / 1.001)
    preset: dict[str, Any] = wind.PRESETS[category]  # AssetWind's keywords
    asset = wind.AssetWind(**preset, asset_height=res.asset_height)
    cam = np.eye(4)
    cam[:3, 3] = (3.0, -4.0, 10.0)

    def at(frame):
        return wind.wind_offsets(tree["positions"], res.height, col, normals, np.eye(4), frame, scene, asset,
                                 camera_matrix=cam)

    for far in (100001.0, 1000001.25, -50001.5):
        np.testing.assert_array_equal(at(far), at(far % 96))
    assert wind.loop_time(100001.0, scene) == pytest.approx(65.0 / scene.fps, rel=1e-15)
    assert wind.loop_time(-1.0, scene) == pytest.approx(95.0 / scene.fps, rel=1e-15)
    assert np.abs(at(17.0)).max() > 0.01
    # without a loop time is absolute
    free = wind.SceneWind(strength=1.5, loop_frames=0)
    assert wind.loop_time(100001.0, free) == 100001.0 / free.fps
