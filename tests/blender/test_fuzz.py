"""A fixed budget of the random-scene fuzzer (tools/fuzz.py) on this Blender version: random scenes, every
operator, hostile settings and edits, frame steps, save and reopen, envfx commands. Zero defects: no crash, no
exception other than a readable refusal, no traceback printed by a handler, no NaN or inf in evaluated positions,
no dependency cycle in scenes combined the documented way. A longer run: ``tools/fuzz.py --scenes 1000``."""

import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENES = int(os.environ.get("ENVFX_FUZZ_SCENES", "8"))


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("envfx_fuzz_tool", os.path.join(ROOT, "tools", "fuzz.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_fixed_budget_of_random_scenes_finds_no_defect(tmp_path):
    run = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fuzz.py"), "--scenes", str(SCENES),
                          "--seed", "1000", "--steps", "12", "--per-process", "4", "--log", str(tmp_path / "log")],
                         capture_output=True, text=True, timeout=1800, env=dict(os.environ, HOME=str(tmp_path)))
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    summary = lines[-1]
    assert summary["scenes"] == SCENES and summary["calls"] > SCENES, run.stdout[-3000:] + run.stderr[-3000:]
    assert summary["defects"] == 0 and run.returncode == 0, "\n".join(json.dumps(d)[:1500] for d in lines[:-1])


def test_the_fuzzer_tells_a_refusal_from_a_defect():
    fuzz = _fuzz_module()
    assert fuzz.refusal_is_readable("Error: Nothing to apply: select bent mesh objects\n")
    for bad in ("Error: Error: Object \"Light\" is not a mesh", "Error: [Errno 2] No such file or directory: '/x'",
                "Error: Python: Traceback (most recent call last):", "Error: 'NoneType' object has no attribute x"):
        assert not fuzz.refusal_is_readable(bad), bad
    tally = fuzz.Tally()
    lines = ['FUZZ {"event": "scene", "seed": 3, "documented": true}',
             'FUZZ {"event": "call", "result": "ok", "message": "", "op": "bend_add", "kwargs": {}, "objects": []}',
             "00:01.0  depsgraph | WARNING Dependency cycle detected:\n  |  OBA depends on OBB",
             'FUZZ {"event": "call", "result": "exception", "message": "KeyError: x", "op": "wind_add", '
             '"kwargs": {}, "objects": []}',
             'FUZZ {"event": "broken_vertex", "object": "Rock", "value": 1e30}',
             'FUZZ {"event": "nan", "objects": ["Ground"]}',
             "Traceback (most recent call last):\n  File x\nValueError: y",
             'FUZZ {"event": "scene_done", "seed": 3}']
    running, _last, done = fuzz.read_worker_output(lines, tally, {})
    kinds = sorted(d["kind"] for d in tally.defects)
    assert kinds == ["NaN or inf in evaluated positions", "dependency cycle in a documented scene", "exception",
                     "traceback printed"]
    assert done == [3] and running is None and tally.calls == 2 and tally.ok == 1
    nan = next(d for d in tally.defects if d["kind"].startswith("NaN"))
    assert nan["last_call"]["event"] == "broken_vertex"  # (what made the NaN, if anything did)
