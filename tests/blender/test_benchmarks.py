"""Every benchmark still runs: each script, at its smallest size, exits cleanly and prints the JSON lines it
promises (the numbers go into closing notes, so a script broken by a rename must not wait for the next
measurement to be noticed). Timings are not checked; only that the lines are there, parse and are finite."""

import json
import math
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# script (":name" runs it a second time with other arguments), smallest arguments, the lines it prints:
# (key, value) -> how many
SMOKE = {
    "bench_bend.py": (["--verts", "2500", "--repeats", "1", "--rounds", "1", "--objects", "3", "--frames", "2",
                       "--frame-rounds", "1", "--props", "6", "--props-frames", "2", "--props-rounds", "1"],
                      {("bench", "per_vertex_sqrt_cost"): 1, ("bench", "bend_per_frame"): 12,
                       ("bench", "bend_floor_per_frame"): 4, ("bench", "bend_props_per_frame"): 4,
                       ("bench", "bend_props_floor"): 5, ("bench", "bend_many_objects"): 4,
                       ("bench", "bend_gpu_per_frame"): 4, ("bench", "bend_props_gpu_per_frame"): 1}),
    "bench_wind.py": (["--frames", "1", "--rounds", "1", "--branches", "4", "--leaves-per-branch", "2",
                       "--leaf-grid", "2", "--plants", "3", "--veg-branches", "3", "--veg-twigs", "2",
                       "--veg-leaves", "2", "--veg-sides", "8", "--no-corpus", "--grid-side", "20", "--fc-rounds", "2",
                       "--fc-frames", "1", "--before", "HEAD", "--alternatives", "--push-blades", "50",
                       "--push-actors", "2", "--push-rounds", "1", "--push-frames", "1", "--props", "3",
                       "--props-frames", "2", "--props-rounds", "1", "--props-alternatives"],
                      {("bench", "wind_bake_core"): 1, ("bench", "wind_bake_blender"): 1, ("bench", "wind_frame"): 1,
                       ("bench", "wind_frame_change"): 1, ("bench", "wind_frame_change_alternatives"): 1,
                       ("bench", "wind_push_frame_change"): 1, ("bench", "wind_props_per_frame"): 2,
                       ("bench", "wind_props_rigid_per_frame"): 2,
                       ("bench", "wind_props_alternatives"): 1,
                       ("bench", "wind_bake_vegetation"): 1,
                       ("bench", "wind_many_plants"): 2,
                       ("bench", "wind_terrain_follow"): 1}),
    "bench_live_push.py": (["--blades", "50", "--actors", "2", "--resolution", "16", "--frames", "2", "--rounds", "1"],
                           {("bench", "live_push_frame_change"): 1}),
    "bench_snow.py": (["--quick"],
                      {("bench", "cover_generation"): 1, ("bench", "buffer_bake"): 1,
                       ("bench", "trails_per_frame"): 2, ("bench", "trails_shot_per_frame"): 10,
                       ("bench", "trails_shot"): 1, ("bench", "coverage_per_frame"): 2}),
    "bench_snow.py:parts": (["--quick", "--only", "shot_parts,handler_shot"],
                            {("bench", "trails_shot_parts"): 10, ("bench", "trails_handler_shot_per_frame"): 10,
                             ("bench", "trails_handler_shot"): 1}),
    "bench_mips.py": (["--size", "64", "--repeat", "1"], {("bench", "mips"): 11}),
    "bench_node_costs.py": (["--verts", "400", "--objects", "2", "--chain", "2", "--frames", "1", "--rounds", "1"],
                            {("bench", "node_cost_per_vertex"): 16, ("bench", "node_cost_swing"): 7,
                             ("bench", "node_cost_per_object"): 2}),
    "bench_gasgiant.py": (["--quick", "--only", "field"], {("measure", "gasgiant_field_file"): 1}),
    "bench_lightmap.py": (["--size", "32", "--lights", "2", "--samples", "2", "--rounds", "1",
                           "--match-size", "16", "--windows", "1", "--match-samples", "1,2",
                           "--max-full-samples", "2"],
                          {("bench", "lightmap"): 5}),
    "bench_vat.py": (["--verts", "400", "--frames", "3", "--encodings", "EXR32,EXR16,PNG16"],
                     {("bench", "vat_bake"): 15, ("bench", "vat_bake_summary"): 3}),
    "bench_vat.py:wind": (["--verts", "400", "--frames", "3", "--encodings", "PNG16", "--rounds", "2", "--pages",
                           "plain,huge", "--scene", "wind"],
                          {("bench", "vat_bake"): 4, ("bench", "vat_bake_summary"): 2}),
    "bench_vat.py:cold": (["--verts", "400", "--frames", "3", "--encodings", "PNG16", "--cold", "1", "--idle", "0",
                           "--pages", "plain,huge"],
                          {("bench", "vat_bake_cold"): 2, ("bench", "vat_bake_cold_summary"): 1}),
    "bench_farm.py": (["--textures", "2", "--size", "16", "--frames", "2", "--rounds", "1", "--snow-frames", "4",
                       "--snow-resolution", "16"], {("bench", "farm"): 16}),
}


def _numbers(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_benchmark_runs_at_its_smallest_size(script, tmp_path):
    args, expected = SMOKE[script]
    env = dict(os.environ, HOME=str(tmp_path))
    path = os.path.join(ROOT, "benchmarks", script.split(":")[0])
    run = subprocess.run([sys.executable, path, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    got = {}
    for row in rows:
        assert "error" not in row, row
        assert all(math.isfinite(x) for x in _numbers(row)), row
        key = next(((k, row[k]) for k in ("bench", "measure") if k in row), None)
        got[key] = got.get(key, 0) + 1
    assert got == expected, run.stdout[-3000:]
    if script == "bench_wind.py":  # the numpy handler moves the grid as the twin does
        alternatives = next(r for r in rows if r["bench"] == "wind_frame_change_alternatives")
        assert alternatives["handler_max_error_m"] < 1e-4
        assert all(alternatives[name][2] > 0 for name in ("handler", "shape_keys", "simple_deform", "armature"))
        props = next(r for r in rows if r["bench"] == "wind_props_alternatives")  # every way moves its props
        assert set(props["moved_m"]) == {"wind", "state_swing", "state_offset", "handler_rotation", "driver_rotation"}
        assert all(m > 1e-4 for m in props["moved_m"].values()) and props["drivers_simple"], props
    if script == "bench_snow.py:parts":  # the numpy-held trail state equals the twin of every frame
        handler = next(r for r in rows if r["bench"] == "trails_handler_shot")
        assert handler["max_error_m"] < 1e-9 and handler["handler_numpy_ms"] > 0
    if script == "bench_vat.py:wind":  # both kinds of pages, the grid moving in the wind
        assert {(r["pages"], r["scene"]) for r in rows if r["bench"] == "vat_bake"} == {("plain", "wind"),
                                                                                        ("huge", "wind")}
        assert all(r["cpu_s"] > 0 and r["bytes_written"] > 0 for r in rows if r["bench"] == "vat_bake")
    if script == "bench_bend.py":
        floor = next(r for r in rows if r["bench"] == "per_vertex_sqrt_cost")
        assert floor["offset_floor_ratio"] > 0
        ratios = [r["ratio"] for r in rows if r["bench"] == "bend_per_frame"]  # forced: a number; frames: median...
        assert ratios and all((r["median"] if isinstance(r, dict) else r) > 0 for r in ratios)
