"""The scene of the crash in Bake Interaction Buffer, run in a process of its own (a crash must fail a test, not
end the test run): a plane and a 0.5 m cube with a hair particle system, the cube the only object of a
collection used as both the snow actors and the snow occluders, Add Bend on both, Generate Snow on the plane,
Add Trails, Bake Interaction Buffer (3 frames, resolution 8); ``ROUNDS`` times in one process. Prints "ok" at the
end.

usage: <venv python> tests/blender/hair_actor_bake.py OUT_DIR [ROUNDS]
"""

import os
import sys
import tempfile

import bpy
import addon_utils

import api  # tests/blender/api.py: this script's folder is the first entry of sys.path (python runs it as a file)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(op: str, objects: list[bpy.types.Object]) -> None:
    with bpy.context.temp_override(selected_objects=objects, active_object=objects[0], object=objects[0]):
        result = getattr(api.ops, op)()
    assert result == {"FINISHED"}, (op, result)


def round_trip(out_dir: str) -> None:
    bpy.ops.wm.read_homefile(app_template="", use_empty=True)
    scene = api.scene()
    bpy.ops.mesh.primitive_plane_add(size=10)
    plane = api.active()
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0, 0, 0.25))
    cube = api.active()
    cube.modifiers.new("Hair", "PARTICLE_SYSTEM")
    api.of(bpy.types.ParticleSettings, cube.particle_systems[0].settings).type = "HAIR"
    actors = bpy.data.collections.new("Actors")
    scene.collection.children.link(actors)
    scene.collection.objects.unlink(cube)
    actors.objects.link(cube)
    s = api.envfx(scene).snow
    s.actors = actors
    s.occluders = actors
    run("bend_add", [plane, cube])
    run("snow_generate", [plane])
    run("snow_trails_add", list(scene.objects))
    s.frame_start, s.frame_end, s.buffer_resolution = 1, 3, 8
    s.output_dir = out_dir
    run("snow_bake_buffer", [plane])


if __name__ == "__main__":
    repo_dir = tempfile.mkdtemp(prefix="envfx-sub-")
    os.symlink(ROOT, os.path.join(repo_dir, "envfx"))
    api.preferences().extensions.repos.new(name="EnvFX Sub", module="envfx_sub", custom_directory=repo_dir,
                                           source="USER")
    addon_utils.enable("bl_ext.envfx_sub.envfx", default_set=True)
    for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
        round_trip(os.path.join(sys.argv[1], str(i)))
    print("ok", flush=True)
    sys.stdout.flush()
    os._exit(0)
