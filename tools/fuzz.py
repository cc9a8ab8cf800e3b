"""Random-scene fuzzer: hostile but realistic use of every EnvFX operator, setting and CLI command.

usage: $(tools/venv.sh 5.0) tools/fuzz.py [--scenes 40] [--seed 0] [--steps 25] [--per-process 10]
       [--log fuzz.jsonl] [--timeout 600]

Each scene (one seed) is built at random: meshes of every oddity (empty, loose vertices and edges, zero-area
faces, huge or tiny, unapplied and negative scales), curves, text, empties, lights, collection instances,
parenting, linked duplicates, hidden and excluded collections. Then ``--steps`` random steps: an EnvFX operator
on a random selection, a setting set to a hostile value (0, negative, NaN, inf, beyond its soft range), a
hostile edit (deleting the bend's pivot or the actor collection, Edit Mode, a Full Copy scene, a damaged output
file), a frame step, save and reopen, or an ``envfx`` command on the saved file. Every scene is checked after
each step: the evaluated positions of every mesh are finite.

Some scenes are built "the documented way" (a bent, snow-covered ground with trails, the player both the bend's
pivot and a snow actor, plants in wind on it, no hostile value): Blender must evaluate them without a
dependency cycle.

The scenes run in worker processes (``--per-process`` scenes each), so a crash of Blender is caught, recorded
with the last call, and the run goes on with the next scene. A defect is: a crash, an exception other than an
operator's refusal with a readable sentence, a traceback printed by a handler, NaN or inf in evaluated
positions, a dependency cycle in a documented scene. Prints one JSON line per defect and a summary line
(scenes, calls, successes, refusals, defects); exits 1 when there is any defect.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = "FUZZ "

# ------------------------------------------------------------------------------------------------------------
# The parent: runs workers, reads their records and what Blender printed, finds the defects.
# ------------------------------------------------------------------------------------------------------------

_REFUSAL_BAD = re.compile(r"Traceback|Error: Error:|\[Errno|Python: |object has no attribute|NoneType|"
                          r"unsupported operand|KeyError|IndexError|ZeroDivision")


def refusal_is_readable(message: str) -> bool:
    """An operator's refusal is a sentence for a person: no traceback, no raw exception text, no doubled
    prefix, and it says something."""
    text = message.strip()
    if text.startswith("Error: "):
        text = text[len("Error: "):]
    return len(text) >= 12 and not _REFUSAL_BAD.search(message)


def _worker_cmd(seeds: list[int], steps: int, log_dir: str) -> list[str]:
    return [sys.executable, "-u", os.path.abspath(__file__), "--worker", "--seeds", ",".join(map(str, seeds)),
            "--steps", str(steps), "--work", log_dir]


class Tally:
    def __init__(self):
        self.scenes = self.calls = self.ok = self.refused = 0
        self.cycles_elsewhere = 0
        self.defects: list[dict] = []

    def defect(self, seed, kind, detail, last=None):
        """Record a defect (the same kind and text twice in one scene is one defect)."""
        detail = re.sub(r"^\d+:\d+\.\d+\s+", "", detail)  # Blender's log time stamp
        if any(d["seed"] == seed and d["kind"] == kind and d["detail"] == detail[-2000:] for d in self.defects):
            return
        self.defects.append({"seed": seed, "kind": kind, "detail": detail[-2000:], "last_call": last})

    def summary(self) -> dict:
        return {"scenes": self.scenes, "calls": self.calls, "succeeded": self.ok, "refused": self.refused,
                "cycles_in_random_scenes": self.cycles_elsewhere, "defects": len(self.defects)}


def read_worker_output(lines, tally: Tally, documented: dict) -> tuple[int | None, dict | None, list[int]]:
    """Go through one worker's output. Returns (the seed running when it stopped, its last call, seeds done)."""
    seed, last, done = None, None, []
    for line in lines:
        if line.startswith(MARK):
            try:
                rec = json.loads(line[len(MARK):])
            except json.JSONDecodeError:
                continue
            kind = rec.get("event")
            if kind == "scene":
                seed = rec["seed"]
                documented[seed] = rec.get("documented", False)
                tally.scenes += 1
            elif kind == "call":
                last = rec
                tally.calls += 1
                if rec["result"] == "ok":
                    tally.ok += 1
                elif rec["result"] == "refused":
                    tally.refused += 1
                    if not refusal_is_readable(rec["message"]):
                        tally.defect(seed, "unreadable refusal", rec["message"], rec)
                else:
                    tally.defect(seed, "exception", rec["message"], rec)
            elif kind == "broken_vertex":  # (a NaN found next names it as the last thing done)
                last = rec
            elif kind == "nan":
                tally.defect(seed, "NaN or inf in evaluated positions", json.dumps(rec["objects"]), last)
            elif kind == "scene_done":
                done.append(rec["seed"])
                seed = None
            continue
        if "Traceback (most recent call last)" in line:
            tally.defect(seed, "traceback printed", line, last)
        elif "Dependency cycle detected" in line:
            if seed is not None and documented.get(seed):
                tally.defect(seed, "dependency cycle in a documented scene", line, last)
            else:
                tally.cycles_elsewhere += 1
    return seed, last, done


def _attach_continuations(lines: list[str]) -> list[str]:
    """Join the lines of a printed traceback, and of Blender's description of a dependency cycle, into the line
    that starts it (so a defect shows the whole of it); the cycle count Blender prints after one is dropped."""
    out = []
    for line in lines:
        if "Detected" in line and "dependency cycle" in line:
            continue
        head = out[-1].split("\n", 1)[0] if out else ""
        if not line.startswith(MARK) and (
                (head.startswith("Traceback (most recent call last)")
                 and (line.startswith(" ") or re.match(r"^\w*(Error|Exception)\b", line)))
                or ("Dependency cycle detected" in head and re.match(r"^\s+\|", line))):
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def run(seeds: list[int], steps: int, per_process: int, timeout: float, log=None) -> Tally:
    tally = Tally()
    documented: dict = {}
    todo = list(seeds)
    with tempfile.TemporaryDirectory(prefix="envfx-fuzz-") as work:
        env = dict(os.environ, HOME=work)
        while todo:
            chunk = todo[:per_process]
            try:
                proc = subprocess.run(_worker_cmd(chunk, steps, work), env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout)
                out, code = proc.stdout, proc.returncode
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
                code = "timeout"
            lines = _attach_continuations(out.splitlines())
            running, last, done = read_worker_output(lines, tally, documented)
            if log is not None:
                log.write(out)
            todo = [s for s in todo if s not in done]
            if code != 0:
                culprit = running if running is not None else (todo[0] if todo else None)
                what = f"worker exit {code}" if code != "timeout" else f"no answer within {timeout:.0f} s"
                tail = "\n".join(lines[-15:])
                tally.defect(culprit, "crash" if code != "timeout" else "hang", f"{what}\n{tail}", last)
                if culprit in todo:
                    todo.remove(culprit)  # the next worker goes on after the crashing scene
            elif todo and todo[0] in chunk:
                tally.defect(todo[0], "worker stopped early", "\n".join(lines[-15:]), last)
                todo.pop(0)
    return tally


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--scenes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0, help="first seed (scenes use seed, seed+1, ...)")
    parser.add_argument("--steps", type=int, default=25, help="random steps per scene")
    parser.add_argument("--per-process", type=int, default=10, help="scenes per worker process")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a worker may take")
    parser.add_argument("--log", help="write everything the workers printed to this file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seeds", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker([int(s) for s in args.seeds.split(",")], args.steps, args.work)
    t0 = time.perf_counter()
    seeds = list(range(args.seed, args.seed + args.scenes))
    log = open(args.log, "w", encoding="utf-8") if args.log else None
    try:
        tally = run(seeds, args.steps, args.per_process, args.timeout, log)
    finally:
        if log:
            log.close()
    for d in tally.defects:
        print(json.dumps(d))
    print(json.dumps(dict(tally.summary(), seconds=round(time.perf_counter() - t0, 1))))
    return 1 if tally.defects else 0


# ------------------------------------------------------------------------------------------------------------
# The worker: runs inside Blender (bpy as a module), one scene after another.
# ------------------------------------------------------------------------------------------------------------

def emit(**rec):
    print(MARK + json.dumps(rec, default=str), flush=True)


HOSTILE = [0.0, -1.0, -1e6, float("nan"), float("inf"), float("-inf"), 1e30, 1e-30]

# settings the fuzzer leaves alone or keeps small: they only make a call slow, not wrong
_SLOW = {"particles": (100, 3000), "iterations": (1, 5), "frame_iterations": (1, 3), "frames": (1, 2),
         "ao_samples": (1, 4), "buffer_resolution": (8, 32), "vertex_budget": (100, 5000), "lods": (1, 2),
         "supersample": (1, 2), "threads": (1, 2), "lifetime": (1, 20), "blur_interval": (1, 5)}
_NEVER = {"output_dir", "folder", "palette_cube_dir", "palette_path", "save_field_path", "load_field_path",
          "planet_name", "density_mask", "make_planet", "field_size", "cubemap_size", "equirect_width"}


class Worker:
    def __init__(self, work: str):
        import bpy

        self.bpy = bpy
        self.work = work
        self.rng = random.Random(0)
        self.envfx = None
        self.seed = None

    # --- set-up ---------------------------------------------------------------------------------------------

    def enable(self):
        import importlib

        import addon_utils

        bpy = self.bpy
        repo_dir = tempfile.mkdtemp(prefix="envfx-fuzz-repo-", dir=self.work)
        os.symlink(ROOT, os.path.join(repo_dir, "envfx"))
        preferences = bpy.context.preferences
        assert preferences is not None  # (optional in the API stubs; Blender as a module has them)
        preferences.extensions.repos.new(name="EnvFX Fuzz", module="envfx_fuzz", custom_directory=repo_dir,
                                         source="USER")
        addon_utils.enable("bl_ext.envfx_fuzz.envfx", default_set=True)
        self.envfx = importlib.import_module("bl_ext.envfx_fuzz.envfx")

    def new_file(self):
        self.bpy.ops.wm.read_homefile(app_template="", use_empty=True)
        self.out = tempfile.mkdtemp(prefix=f"scene{self.seed}-", dir=self.work)

    # --- random content -------------------------------------------------------------------------------------

    def mesh(self, name: str, kind: str):
        import numpy as np

        bpy, rng = self.bpy, self.rng
        me = bpy.data.meshes.new(name)
        if kind == "grid":
            n = rng.choice([2, 3, 8, 20])
            xs = np.linspace(-1, 1, n, dtype=np.float32)
            gx, gy = np.meshgrid(xs, xs)
            verts = np.stack([gx.ravel(), gy.ravel(), np.zeros(n * n, np.float32)], 1)
            idx = np.arange(n * n).reshape(n, n)
            faces = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)
            me.from_pydata(verts.tolist(), [], faces.tolist())
        elif kind == "cube":
            v = [(x, y, z) for x in (-.5, .5) for y in (-.5, .5) for z in (0, 1)]
            me.from_pydata(v, [], [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4),
                                   (1, 5, 7, 3)])
        elif kind == "empty_mesh":
            pass
        elif kind == "loose":
            me.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 2)], [(0, 1)], [])
        elif kind == "degenerate":
            me.from_pydata([(0, 0, 0), (0, 0, 0), (0, 0, 0), (1, 1, 0)], [], [(0, 1, 2), (0, 1, 3)])
        elif kind == "card":  # double-sided leaf card: two coincident faces with opposite normals
            v = [(0, 0, 0), (0.3, 0, 0), (0.3, 0, 0.6), (0, 0, 0.6)]
            me.from_pydata(v + v, [], [(0, 1, 2, 3), (7, 6, 5, 4)])
        me.update()
        return me

    def obj(self, name, data, coll):
        bpy, rng = self.bpy, self.rng
        ob = bpy.data.objects.new(name, data)
        coll.objects.link(ob)
        ob.location = [rng.uniform(-5, 5) for _ in range(3)]
        r = rng.random()
        if r < 0.1:
            ob.scale = (rng.choice([0.01, 100.0]),) * 3  # an import's unapplied centimetre scale, or a huge one
        elif r < 0.15:
            ob.scale = (1.0, -1.0, 1.0)
        elif r < 0.18:
            ob.scale = (1.0, 0.0, 1.0)
        if rng.random() < 0.2:
            ob.rotation_euler = (math.pi / 2, 0, rng.uniform(0, 6))  # a Y-up import
        return ob

    def build(self, documented: bool):
        bpy, rng = self.bpy, self.rng
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, 20
        if documented:
            return self.build_documented(scene)
        colls = [scene.collection]
        for i in range(rng.randint(0, 3)):
            c = bpy.data.collections.new(f"Coll{i}")
            rng.choice(colls).children.link(c)
            colls.append(c)
        kinds = ["grid", "cube", "empty_mesh", "loose", "degenerate", "card"]
        for i in range(rng.randint(1, 6)):
            kind = rng.choice(kinds)
            self.obj(f"{kind}{i}", self.mesh(f"{kind}{i}", kind), rng.choice(colls))
        extras = rng.sample(["curve", "text", "empty", "light", "instance", "linked", "parent"], rng.randint(0, 4))
        meshes = [o for o in scene.objects if o.type == "MESH"]
        for e in extras:
            if e == "curve":
                cu = bpy.data.curves.new("Curve", "CURVE")
                sp = cu.splines.new("POLY")
                sp.points.add(2)
                self.obj("Curve", cu, rng.choice(colls))
            elif e == "text":
                self.obj("Text", bpy.data.curves.new("Text", "FONT"), rng.choice(colls))
            elif e == "empty":
                self.obj("Empty", None, rng.choice(colls))
            elif e == "light":
                self.obj("Light", bpy.data.lights.new("Light", rng.choice(["POINT", "SUN", "SPOT", "AREA"])),
                         scene.collection)
            elif e == "instance" and len(colls) > 1:
                inst = self.obj("Instance", None, scene.collection)
                inst.instance_type = "COLLECTION"
                inst.instance_collection = rng.choice(colls[1:])
            elif e == "linked" and meshes:
                src = rng.choice(meshes)
                self.obj(src.name + "_dup", src.data, rng.choice(colls))
            elif e == "parent" and len(meshes) > 1:
                a, b = rng.sample(meshes, 2)
                if a.parent is None and b.parent is None:
                    a.parent = b
        for c in colls[1:]:
            if rng.random() < 0.15:
                c.hide_viewport = True
            if rng.random() < 0.1:
                layer_coll = self.layer_collection(bpy.context.view_layer.layer_collection, c.name)
                if layer_coll is not None:
                    layer_coll.exclude = True
        s = scene.envfx
        if rng.random() < 0.5 and len(colls) > 1:
            s.snow.actors = rng.choice(colls[1:])
        if rng.random() < 0.3 and len(colls) > 1:
            s.snow.occluders = rng.choice(colls[1:])
        if rng.random() < 0.5 and scene.objects:
            s.bend.pivot = rng.choice(list(scene.objects))

    def build_documented(self, scene):
        """The documented combination: bent, snow-covered ground with trails; the player is the bend's pivot
        and a snow actor; a plant in wind stands on the ground."""
        bpy, rng = self.bpy, self.rng
        ground = self.obj("Ground", self.mesh("Ground", "grid"), scene.collection)
        ground.location = (0, 0, 0)
        ground.scale = (5, 5, 1)
        ground.rotation_euler = (0, 0, 0)
        actors = bpy.data.collections.new("Actors")
        scene.collection.children.link(actors)
        player = self.obj("Player", self.mesh("Player", "cube"), actors)
        player.location = (0, 0, 0)
        player.scale = (0.5, 0.5, 0.5)
        player.rotation_euler = (0, 0, 0)
        player.keyframe_insert("location", frame=1)
        player.location = (2, 1, 0)
        player.keyframe_insert("location", frame=20)
        plant = self.obj("Plant", self.mesh("Plant", "card"), scene.collection)
        plant.location, plant.scale, plant.rotation_euler = (1, -1, 0), (1, 1, 1), (0, 0, 0)
        s = scene.envfx
        s.bend.pivot = player
        s.snow.actors = actors
        if rng.random() < 0.5:
            s.snow.occluders = actors
        s.snow.spacing = 0.5
        bent = [ground, plant] + ([player] if rng.random() < 0.5 else [])
        for obj in (plant, player):  # bent on the GPU, in its materials (or refused without one)
            if rng.random() < 0.3:
                obj.envfx.bend_gpu = True  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time
                if rng.random() < 0.7:
                    mat = bpy.data.materials.new(f"{obj.name} Material")
                    mat.use_nodes = True  # (4.2 makes one without nodes, which the GPU bend refuses)
                    obj.data.materials.append(mat)
        if rng.random() < 0.3:  # the plant in the wind on the GPU, in its materials (or refused without one)
            plant.envfx.wind.gpu = True  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time
            if not plant.data.materials and rng.random() < 0.7:
                mat = bpy.data.materials.new("Plant Wind Material")
                mat.use_nodes = True
                plant.data.materials.append(mat)
        # (operator, the objects it is called on; None: every object of the scene)
        plan: list[tuple[str, list | None]] = [("bend_add", bent), ("wind_bake_data", [plant]), ("wind_add", [plant])]
        if rng.random() < 0.5:  # a small prop swaying whole (rigid sway: drivers on its delta rotation)
            lamp = self.obj("Lamp", self.mesh("Lamp", "card"), scene.collection)
            lamp.location, lamp.scale, lamp.rotation_euler = (-1, 1, 0), (0.3, 0.3, 1), (0, 0, 0.5)
            lamp.envfx.wind.rigid = True  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time
            plan.append(("wind_add", [lamp]))
            if rng.random() < 0.5:
                bent.append(lamp)
        rng.shuffle(plan)
        # snow first or last, its trails right after it (on every object: the snow cover is the one they take)
        plan.insert(rng.choice([0, len(plan)]), ("snow_generate", [ground]))
        plan.insert(plan.index(("snow_generate", [ground])) + 1, ("snow_trails_add", None))
        for op, objs in plan:
            self.call(op, objs if objs is not None else list(scene.objects))
        for f in (1, 5, 12, 20):
            scene.frame_set(f)
            self.check_finite()

    @staticmethod
    def layer_collection(layer, name):
        if layer.collection.name == name:
            return layer
        for child in layer.children:
            found = Worker.layer_collection(child, name)
            if found is not None:
                return found
        return None

    # --- actions ----------------------------------------------------------------------------------------------

    OPERATORS = ["bend_add", "bend_remove", "bend_apply", "bend_exclude", "bend_export_engines", "wind_bake_data",
                 "wind_add", "wind_remove", "wind_preset", "snow_generate", "snow_trails_add", "snow_trails_remove",
                 "snow_bake_buffer", "snow_drive_from_bake", "snow_trails_simulate", "gasgiant_bake",
                 "gasgiant_preset", "gasgiant_randomize", "mips_bake", "vat_bake", "lightmap_bake",
                 "lightmap_actor_shadows", "wind_export_engines", "snow_export_engines"]

    def op_kwargs(self, op: str) -> dict:
        rng = self.rng
        if op == "bend_exclude":
            return {"exclude": rng.random() < 0.5}
        if op in ("bend_export_engines", "wind_export_engines", "snow_export_engines"):
            return {"directory": rng.choice([os.path.join(self.out, "engines"), "", "/proc/envfx/x"])}
        if op == "wind_preset":
            return {"preset": rng.choice(["TREE", "GRASS", "BANNER"])}
        if op == "gasgiant_preset":
            return {"preset": "JUPITER"}
        if op == "snow_drive_from_bake":
            return {"use_bake": rng.random() < 0.7}
        return {}

    def prepare(self, op: str):
        """Output folders and sizes that keep a bake quick (random values elsewhere stay hostile)."""
        scene = self.bpy.context.scene
        assert scene is not None  # (optional in the API stubs; a worker's file always has one)
        s = scene.envfx  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time (props.register)
        rng = self.rng
        if op == "snow_bake_buffer":
            s.snow.output_dir = rng.choice([os.path.join(self.out, "snow"), "/proc/envfx/snow"])
            s.snow.buffer_resolution = rng.choice([8, 16])
            s.snow.frame_start, s.snow.frame_end = 1, rng.choice([1, 3])
        elif op == "gasgiant_bake":
            g = s.gasgiant
            g.output_dir = rng.choice([os.path.join(self.out, "gg"), "/proc/envfx/gg"])
            g.particles, g.iterations, g.frames = 2000, 2, 1
            g.make_planet = rng.random() < 0.5
            for name in ("field_size", "cubemap_size", "equirect_width"):  # the smallest sizes
                items = [i.identifier for i in g.bl_rna.properties[name].enum_items]
                setattr(g, name, items[0])
        elif op == "vat_bake":  # a few frames (the frames and the loop are random elsewhere, up to the slider's)
            v = s.vat
            v.output_dir = rng.choice([os.path.join(self.out, "vat"), "/proc/envfx/vat"])
            v.frame_start = rng.randint(-1, 3)
            v.frame_end = v.frame_start + rng.randint(0, 5)
            v.step, v.loop_frames = rng.choice([1, 2]), rng.choice([2, 4, 6])
            if self.bpy.app.version < (5, 0, 0):  # Blender 4.2 as a module crashes as it exits after a glTF export
                v.export_mesh = False
        elif op == "lightmap_bake":
            lm = s.lightmap
            lm.output_dir = rng.choice([os.path.join(self.out, "lightmap"), "/proc/envfx/lightmap"])
            lm.resolution, lm.penumbra_samples = rng.choice([1, 8, 32, 64]), rng.choice([1, 2, 4])
            meshes = [o for o in scene.objects if o.type == "MESH"]
            if meshes and rng.random() < 0.8:
                lm.ground = rng.choice(meshes)
        elif op == "mips_bake":
            s.mips.output_dir = os.path.join(self.out, "mips")
            if rng.random() < 0.7:  # an image to bake (the Image Editor is never open here): sizes of 1 to 40,
                # some not multiples of 4 (the BC DDS refuse those), random texels with holes of alpha 0
                w, h = rng.randint(1, 40), rng.randint(1, 40)
                image = self.bpy.data.images.new(f"Fuzz Card {w}x{h}", w, h, alpha=True)
                texels = [rng.random() if i % 4 != 3 else rng.choice([0.0, 0.2, 0.5, 1.0]) for i in range(w * h * 4)]
                image.pixels.foreach_set(texels)  # pyright: ignore[reportAttributeAccessIssue] -- stubs: one float
                s.mips.source, s.mips.image = "ACTIVE", image

    def call(self, op: str, objects=None):
        bpy, rng = self.bpy, self.rng
        scene = bpy.context.scene
        pool = list(scene.objects)
        if objects is None:
            objects = rng.sample(pool, rng.randint(0, len(pool))) if pool else []
        objects = [o for o in objects if o.name in scene.objects]
        active = objects[0] if objects else None
        self.prepare(op)
        kwargs = self.op_kwargs(op)
        rec = {"op": op, "kwargs": kwargs, "objects": [o.name for o in objects]}
        try:
            for o in scene.objects:
                o.select_set(o in objects)
            bpy.context.view_layer.objects.active = active
        except RuntimeError:
            pass  # an object not in the view layer (an excluded collection): left unselected
        try:
            with bpy.context.temp_override(selected_objects=objects, active_object=active, object=active):
                result = getattr(bpy.ops.envfx, op)(**kwargs)
            emit(event="call", result="ok", message=str(result), **rec)
        except RuntimeError as exc:
            msg = str(exc)
            emit(event="call", result="refused" if not msg.startswith("Operator bpy.ops") else "ok",
                 message=msg, **rec)
        except Exception as exc:  # noqa: BLE001  (every other exception is what the fuzzer looks for)
            emit(event="call", result="exception", message=f"{type(exc).__name__}: {exc}", **rec)

    def set_setting(self):
        bpy, rng = self.bpy, self.rng
        scene = bpy.context.scene
        owners = [(scene.envfx.bend, "bend"), (scene.envfx.wind, "wind"), (scene.envfx.snow, "snow"),
                  (scene.envfx.gasgiant, "gasgiant"), (scene.envfx.mips, "mips"), (scene.envfx.vat, "vat"),
                  (scene.envfx.lightmap, "lightmap")]
        objs = [o for o in scene.objects]
        if objs:
            o = rng.choice(objs)
            owners += [(o.envfx.wind, f"{o.name}.wind"), (o.envfx.snow, f"{o.name}.snow"), (o.envfx, o.name)]
        owner, where = rng.choice(owners)
        props = [p for p in owner.bl_rna.properties if p.identifier not in ("rna_type", "name")
                 and p.identifier not in _NEVER and not p.is_readonly]
        if not props:
            return
        prop = rng.choice(props)
        name = prop.identifier
        try:
            if prop.type == "FLOAT" and prop.array_length == 0:
                value = rng.choice(HOSTILE + [rng.uniform(prop.soft_min, prop.soft_max)])
            elif prop.type == "INT" and prop.array_length == 0:
                lo, hi = _SLOW.get(name, (prop.soft_min, min(prop.soft_max, 10_000)))
                value = rng.choice([lo, hi, rng.randint(int(lo), int(hi)), 0, -1])
            elif prop.type == "BOOLEAN" and prop.array_length == 0:
                value = rng.random() < 0.5
            elif prop.type == "ENUM" and not prop.is_enum_flag:
                value = rng.choice([i.identifier for i in prop.enum_items])
            elif prop.type == "POINTER":
                pool = list(bpy.data.objects) if prop.fixed_type.identifier == "Object" else (
                    list(bpy.data.collections) if prop.fixed_type.identifier == "Collection" else [])
                value = rng.choice(pool + [None]) if pool else None
            else:
                return
            emit(event="set", where=where, name=name, value=value)
            setattr(owner, name, value)
        except (TypeError, ValueError, AttributeError, RuntimeError, OverflowError) as exc:
            emit(event="set_refused", where=where, name=name, message=str(exc))

    def hostile_edit(self):
        bpy, rng = self.bpy, self.rng
        scene = bpy.context.scene
        choice = rng.choice(["delete_pivot", "delete_actors", "edit_mode", "full_copy", "damage_outputs",
                             "delete_random", "delete_clock", "broken_vertex"])
        emit(event="edit", what=choice)
        try:
            if choice == "delete_pivot" and scene.envfx.bend.pivot is not None:
                bpy.data.objects.remove(scene.envfx.bend.pivot)
            elif choice == "delete_actors" and scene.envfx.snow.actors is not None:
                bpy.data.collections.remove(scene.envfx.snow.actors)
            elif choice == "delete_random" and scene.objects:
                bpy.data.objects.remove(rng.choice(list(scene.objects)))
            elif choice == "delete_clock":  # the wind's hidden clock (rigid sway and Wind on GPU read it)
                for tree in [t for t in bpy.data.node_groups if t.get("envfx_kind") == "wind_clock"]:
                    bpy.data.node_groups.remove(tree)
            elif choice == "edit_mode":
                meshes = [o for o in scene.objects if o.type == "MESH" and o.name in bpy.context.view_layer.objects]
                if meshes:
                    bpy.context.view_layer.objects.active = meshes[0]
                    bpy.ops.object.mode_set(mode="EDIT")
                    self.call(rng.choice(self.OPERATORS))
                    if bpy.context.mode != "OBJECT":
                        bpy.ops.object.mode_set(mode="OBJECT")
            elif choice == "broken_vertex":  # a broken import or a simulation that blew up: NaN or huge
                meshes = [o for o in scene.objects if o.type == "MESH" and len(o.data.vertices)
                          and o.data.library is None]
                if meshes:
                    ob = rng.choice(meshes)
                    vertex = ob.data.vertices[rng.randrange(len(ob.data.vertices))]
                    value = rng.choice([float("nan"), 1e30, -3e38])
                    vertex.co[rng.randrange(3)] = value
                    ob.data.update()
                    emit(event="broken_vertex", object=ob.name, value=value)
            elif choice == "full_copy":
                bpy.ops.scene.new(type="FULL_COPY")
            elif choice == "damage_outputs":
                # (not the EXR files: Blender's OpenEXR reader loops for ever on a file cut short in its header in
                # 4.2, and crashed once in 5.0, as the file reopened with the VAT player's textures cut short; the
                # refusals of EnvFX's own readers are tested in test_mips and test_snow)
                for root, _dirs, files in os.walk(self.out):
                    for f in files:
                        if f.lower().endswith(".exr"):
                            continue
                        if rng.random() < 0.5:
                            with open(os.path.join(root, f), "r+b") as fh:
                                fh.truncate(max(0, os.path.getsize(os.path.join(root, f)) // 3))
        except RuntimeError as exc:
            emit(event="edit_refused", what=choice, message=str(exc))

    def cli_call(self):
        bpy, rng = self.bpy, self.rng
        path = os.path.join(self.out, "cli.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
        cmd = rng.choice([["info", path], ["bend", path, "--strength", "0.02"], ["wind", path, "--add"],
                          ["wind", path, "--rigid"], ["wind", path, "--add", "--gpu"],
                          ["bend", path, "--strength", "nan"], ["bend", path, "--horizon-offset", "inf"],
                          ["wind", path, "--leaf-size", "-1"], ["bend", path, "--apply"], ["snow", path],
                          ["info", path + ".missing"]])
        assert self.envfx is not None  # (enable() ran first)
        main = self.envfx.cli.main
        try:
            code = main(cmd)
            emit(event="call", result="ok" if code == 0 else "refused", op="cli " + cmd[0], kwargs=cmd[1:],
                 objects=[], message=f"exit {code}: command line refusal" if code else "exit 0")
        except SystemExit as exc:
            emit(event="call", result="refused" if exc.code == 2 else "ok", op="cli " + cmd[0], kwargs=cmd[1:],
                 objects=[], message=f"exit {exc.code} from argparse (usage error)")
        except Exception as exc:  # noqa: BLE001
            emit(event="call", result="exception", op="cli " + cmd[0], kwargs=cmd[1:], objects=[],
                 message=f"{type(exc).__name__}: {exc}")
        # the command opened the copy: go back to a file like the one the scene was
        if bpy.data.filepath != path and os.path.exists(path):
            bpy.ops.wm.open_mainfile(filepath=path)

    def save_reopen(self):
        path = os.path.join(self.out, "reopen.blend")
        emit(event="edit", what="save_reopen")
        self.bpy.ops.wm.save_as_mainfile(filepath=path)
        self.bpy.ops.wm.open_mainfile(filepath=path)

    def sane_input(self, ob) -> bool:
        """Whether the mesh ``ob`` holds (before its modifiers) has only finite vertex positions within 1e15 of the
        origin (a hostile edit, ``broken_vertex``, puts NaN or 1e30 into some: any arithmetic on such a vertex, a
        bend's square of its distance or the world matrix's scale, overflows, in Blender's own code too)."""
        import numpy as np

        mesh = ob.data
        buf = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", buf)
        return bool(np.isfinite(buf).all() and (np.abs(buf) <= 1e15).all())

    def check_finite(self):
        import numpy as np

        bpy = self.bpy
        depsgraph = bpy.context.evaluated_depsgraph_get()
        bad = []
        scene = bpy.context.scene
        assert scene is not None  # (optional in the API stubs; a worker's file always has one)
        for ob in scene.objects:
            # every object's place (rigid sway turns it by drivers), and the vertices of those with a modifier
            if not all(math.isfinite(v) for row in ob.evaluated_get(depsgraph).matrix_world for v in row):
                bad.append(ob.name)
                continue
            if ob.type != "MESH" or not any(m.type == "NODES" for m in ob.modifiers):
                continue
            if not self.sane_input(ob):  # NaN in, NaN out: what other objects make of it is checked
                continue
            try:
                ev = ob.evaluated_get(depsgraph)
                me = ev.to_mesh()
            except RuntimeError:
                continue
            try:
                n = len(me.vertices)
                buf = np.empty(n * 3, np.float32)
                if n:
                    position = me.attributes["position"]
                    assert isinstance(position, bpy.types.FloatVectorAttribute)  # (typed as any Attribute)
                    position.data.foreach_get("vector", buf)
                if not np.isfinite(buf).all():
                    bad.append(ob.name)
            finally:
                ev.to_mesh_clear()
        for tree in bpy.data.node_groups:  # the numbers the GPU's groups (bend, wind) draw with, set by drivers
            if tree.get("envfx_kind") in ("bend_gpu", "wind_gpu"):
                values = [getattr(n.outputs[0], "default_value", 0.0) for n in tree.nodes
                          if n.bl_idname == "ShaderNodeValue"]
                if not all(math.isfinite(v) for v in values):
                    bad.append(tree.name)
        if bad:
            emit(event="nan", objects=bad)

    def step(self):
        bpy, rng = self.bpy, self.rng
        r = rng.random()
        if r < 0.45:
            self.call(rng.choice(self.OPERATORS))
        elif r < 0.7:
            self.set_setting()
        elif r < 0.8:
            self.hostile_edit()
        elif r < 0.93:
            scene = bpy.context.scene
            scene.frame_set(rng.randint(scene.frame_start - 2, scene.frame_end + 2))
        elif r < 0.97:
            self.save_reopen()
        else:
            self.cli_call()
        if bpy.context.mode != "OBJECT":
            try:
                bpy.ops.object.mode_set(mode="OBJECT")
            except RuntimeError:
                pass
        self.check_finite()

    def scene(self, seed: int, steps: int):
        self.seed = seed
        self.rng = random.Random(seed)
        documented = self.rng.random() < 0.25
        emit(event="scene", seed=seed, documented=documented)
        self.new_file()
        self.build(documented)
        self.check_finite()
        for _ in range(0 if documented else steps):
            self.step()
        emit(event="scene_done", seed=seed)


def worker(seeds: list[int], steps: int, work: str) -> int:
    w = Worker(work)
    w.enable()
    for seed in seeds:
        w.scene(seed, steps)
    sys.stdout.flush()
    if w.bpy.app.version < (4, 3, 0):
        # Blender 4.2 as a Python module can crash at exit, after Python has finalised: a registered SpaceType's
        # destructor calls into Python (bpy_class_free, PyGILState_Ensure; gdb). Blender's bug, not a scene's: the
        # worker leaves without running the module's exit code, as the benchmarks do (docs/vat.md)
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
