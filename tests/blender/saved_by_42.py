"""Run by Blender 4.2's Python for the tests that open a file saved by 4.2 LTS in 5.0: enables EnvFX from this
checkout the way the tests do, builds one effect with the add-on's own commands and saves the file.

usage: <4.2 venv python> tests/blender/saved_by_42.py bend-PLANET|bend-RUNNER_2AXIS|wind|snow OUT.blend
"""

import importlib
import os
import sys
import tempfile
from typing import Any

import bpy
import addon_utils

import api  # tests/blender/api.py: this script's folder is the first entry of sys.path (python runs it as a file)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def enable() -> Any:
    """EnvFX from this checkout, enabled as an extension; its package (a module imported by name, so typed Any)."""
    repo_dir = tempfile.mkdtemp(prefix="envfx-42-")
    os.symlink(ROOT, os.path.join(repo_dir, "envfx"))
    api.preferences().extensions.repos.new(name="EnvFX 4.2", module="envfx_42", custom_directory=repo_dir,
                                           source="USER")
    addon_utils.enable("bl_ext.envfx_42.envfx", default_set=True)
    return importlib.import_module("bl_ext.envfx_42.envfx")


def mesh_object(name: str, positions, faces, edges=()) -> bpy.types.Object:
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, p)) for p in positions], [tuple(map(int, e)) for e in edges],
                     [tuple(map(int, f)) for f in faces])
    obj = bpy.data.objects.new(name, mesh)
    api.scene().collection.objects.link(obj)
    return obj


def select_only(obj: bpy.types.Object) -> None:
    for other in api.scene().objects:
        other.select_set(other == obj)
    api.view_layer().objects.active = obj


def build_bend(envfx: Any, mode: str) -> None:
    scene = api.scene()
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=24, y_subdivisions=24, size=40, location=(3.0, -2.0, 0.5),
                                    rotation=(0.0, 0.0, 0.3))
    ground = api.active()
    ground.name = "Bent"
    ground.scale = (1.5, 0.8, 1.0)
    pivot = bpy.data.objects.new("Pivot", None)
    scene.collection.objects.link(pivot)
    pivot.location = (1.0, 2.0, 0.0)
    s = api.envfx(scene).bend
    s.pivot, s.mode, s.strength, s.spread, s.side_strength, s.side_spread = pivot, mode, 0.02, 2.0, 0.03, 1.0
    envfx.operators.bend.add_bend(scene, [ground])


def build_wind(envfx: Any) -> None:
    scene = api.scene()
    shapes = importlib.import_module(envfx.__name__ + ".core.wind_shapes")
    tree = shapes.make_tree(n_branches=3, leaves_per_branch=2)
    obj = mesh_object("Tree", tree["positions"], tree["faces"], tree["edges"])
    obj.location = (2.0, 1.0, 0.0)
    obj.rotation_euler.z = 0.4
    select_only(obj)
    envfx.operators.wind.bake(scene, [obj], ao_samples=0)
    envfx.operators.wind.apply_preset([obj], "BUSH")
    w = api.envfx(scene).wind
    w.strength, w.gust_strength, w.loop_frames = 1.3, 0.7, 48
    envfx.operators.wind.add_wind(scene, [obj])


def build_snow(envfx: Any) -> None:
    scene = api.scene()
    for obj in list(scene.objects):
        bpy.data.objects.remove(obj)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=9, y_subdivisions=9, size=8)
    ground = api.active()
    s = api.envfx(scene).snow
    s.spacing, s.thickness, s.border_width = 0.1, 0.3, 0.3
    select_only(ground)
    assert api.ops.snow_generate() == {"FINISHED"}
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    s.actors = actors
    bpy.ops.mesh.primitive_uv_sphere_add(segments=8, ring_count=6, radius=0.5)
    walker = api.active()
    walker.name = "Walker"
    for coll in list(walker.users_collection):
        coll.objects.unlink(walker)
    actors.objects.link(walker)
    for frame, y in ((1, -2.0), (9, 2.0)):  # along y = -2 .. 2 at x = -2, 0.5 per frame, its bottom in the snow
        walker.location = (-2.0, y, 0.5)
        walker.keyframe_insert("location", frame=frame)
    action = api.of(bpy.types.AnimData, walker.animation_data).action
    assert action is not None
    if not api.BLENDER_5:  # 4.2's F-curves (5.0 keeps them in the channel bags of a layered action): main() runs 4.2
        for fc in action.fcurves:
            for key in fc.keyframe_points:
                key.interpolation = "LINEAR"
    scene.frame_set(1)
    snow = next(o for o in scene.objects if o.get("envfx_snow") == 0)
    select_only(snow)
    assert api.ops.snow_trails_add() == {"FINISHED"}


def main(argv: list[str]) -> int:
    kind, out = argv
    assert bpy.app.version[:2] == (4, 2), bpy.app.version_string
    envfx = enable()
    bpy.ops.wm.read_homefile(app_template="", use_empty=False)
    if kind.startswith("bend-"):
        build_bend(envfx, kind[len("bend-"):])
    elif kind == "wind":
        build_wind(envfx)
    elif kind == "snow":
        build_snow(envfx)
    else:
        raise SystemExit(f"unknown scene {kind!r}")
    bpy.ops.wm.save_as_mainfile(filepath=out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
