"""What renders show of the live snow trails (a simulation): Simulate Trails, and the background-render warning."""

import importlib

import bpy
import numpy as np
import pytest

from tests.blender import api

SEEN = {}  # object name -> world positions in the last render's depsgraph


class ProbeEngine(bpy.types.RenderEngine):
    """A render engine that draws nothing: it keeps the world positions of the meshes its render depsgraph holds
    (what any engine would render)."""

    bl_idname = "ENVFX_TEST_PROBE"
    bl_label = "EnvFX Test Probe"

    def render(self, depsgraph):
        for inst in depsgraph.object_instances:
            obj = inst.object
            if inst.is_instance or obj.type != "MESH":
                continue
            mesh = obj.to_mesh()
            co = np.empty(3 * len(mesh.vertices), np.float32)
            mesh.vertices.foreach_get("co", co)
            obj.to_mesh_clear()
            m = np.array(obj.matrix_world)
            SEEN[obj.name] = co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
        scene = depsgraph.scene
        self.end_result(self.begin_result(0, 0, scene.render.resolution_x, scene.render.resolution_y))


@pytest.fixture
def probe():
    bpy.utils.register_class(ProbeEngine)
    yield render_probe
    for scene in bpy.data.scenes:  # 4.2 crashes at exit with a Python engine still in use
        api.set_engine(scene, "CYCLES")
    bpy.utils.unregister_class(ProbeEngine)


def render_probe(scene, name):
    """The world positions of mesh ``name`` in a render of the scene's current frame."""
    api.set_engine(scene, ProbeEngine.bl_idname)
    scene.render.resolution_x = scene.render.resolution_y = 8
    if scene.camera is None:
        cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
        scene.collection.objects.link(cam)
        cam.location = (0.0, 0.0, 50.0)
        scene.camera = cam
    SEEN.clear()
    bpy.ops.render.render()
    return SEEN[name]


def _walker_file(envfx, load_helper, tmp_path):
    """A saved file with trailed snow and an actor walking across it over frames 1..10, opened again (a fresh
    simulation cache, as in a new process): (scene, snow name, the snow's rest world positions). The walk turns a
    corner, so a render that jumps from frame 1 to 10 without the frames between shows another trail."""
    ts = load_helper("snow_helpers", "tests", "blender", "test_snow.py")
    scene, snow, actors = ts.snow_scene(envfx)
    walker = bpy.data.objects.new("Walker", None)
    walker.empty_display_size = 0.5
    actors.objects.link(walker)
    ts.animate(walker, [(1, (-3.0, -3.0, 0.3)), (5, (3.0, -3.0, 0.3)), (10, (3.0, 3.0, 0.3))])  # an L
    api.linear(walker)
    scene.frame_start, scene.frame_end = 1, 10
    scene.frame_set(1)
    envfx.operators.snow.add_trails(scene, [snow])
    path, name = str(tmp_path / "walk.blend"), snow.name
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = api.scene()
    snow = bpy.data.objects[name]
    rest = np.array([snow.matrix_world @ v.co for v in snow.data.vertices])
    return scene, name, rest


def test_simulate_trails_makes_a_render_of_a_fresh_file_show_them(envfx, load_helper, tmp_path, probe, capfd):
    """A render only reads what Blender simulated in this session: in a freshly opened file (``blender -b file
    -a``) frame 10 renders without the walk's trail, and a background render says so with what to do. Simulate
    Trails steps the scene from its start frame as playback does; then the render shows the trails the viewport
    shows, and the scene is back on its frame."""
    scene, name, rest = _walker_file(envfx, load_helper, tmp_path)
    scene.frame_set(1)
    capfd.readouterr()
    scene.frame_current = 10
    before = render_probe(scene, name)
    err = capfd.readouterr().err
    assert "simulated up to frame 1:" in err and "snow_trails_simulate" in err

    scene.frame_set(4)
    assert api.ops.snow_trails_simulate() == {"FINISHED"}
    assert scene.frame_current == 10  # left on the last frame: on the start frame a change restarts the trails
    scene.render.filepath = str(tmp_path / "shot_")  # a change before rendering, as a render script makes
    obj = bpy.data.objects[name]
    shown = envfx.bridge.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
    shown_z = (shown @ np.array(obj.matrix_world)[:3, :3].T)[:, 2] - rest[:, 2]
    assert (shown_z < -0.05).sum() > 100  # the walk's trail
    np.testing.assert_allclose(render_probe(scene, name)[:, 2] - rest[:, 2], shown_z, atol=1e-5)
    assert np.abs(before[:, 2] - rest[:, 2] - shown_z).max() > 0.1  # before: not the trail the viewport shows
    assert "snow_trails_simulate" not in capfd.readouterr().err


def test_simulate_trails_without_trails_is_refused_and_changes_nothing(envfx):
    scene = api.scene()
    scene.frame_set(7)
    with pytest.raises(RuntimeError, match="no snow with live trails"):
        api.ops.snow_trails_simulate()
    assert scene.frame_current == 7


def test_snow_from_bake_stores_the_buffer_relative_to_the_saved_file(envfx, load_helper, tmp_path):
    """A saved file stores the buffer images it reads relative to itself (``//``, Blender's Relative Paths
    preference, on by default), so the project folder can move (another machine, a render farm's mount). Before,
    the image kept its absolute path and a moved project lost the snow's bake."""
    ts = load_helper("snow_helpers", "tests", "blender", "test_snow.py")
    ts.play_and_bake(envfx, tmp_path, sequence=False)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "level.blend"))
    assert api.ops.snow_drive_from_bake() == {"FINISHED"}
    (image,) = [i for i in bpy.data.images if i.filepath.endswith(".exr")]
    assert image.filepath.startswith("//") and image.size[0] > 0


def test_the_render_warning_follows_what_blender_simulated(envfx, load_helper, tmp_path, probe, capfd):
    """A script that plays the frames one by one renders the trails without a warning; a change of the scene on
    the start frame (an output path) makes Blender restart the simulation, and the render warns again."""
    scene, name, rest = _walker_file(envfx, load_helper, tmp_path)
    for frame in range(1, 11):
        scene.frame_set(frame)
    capfd.readouterr()
    render_probe(scene, name)
    assert "EnvFX warning" not in capfd.readouterr().err
    scene.frame_set(1)
    scene.render.filepath = str(tmp_path / "shot_")
    api.view_layer().update()
    scene.frame_current = 10
    render_probe(scene, name)
    assert "simulated up to frame 1:" in capfd.readouterr().err


def test_an_empty_on_the_root_bone_carves_a_root_motion_walk(envfx, load_helper):
    """A character whose walk is in its bones (the objects stand still) carves along the walk through an Empty
    parented to its root bone, as the README says: the actor's stamps follow its world position, bone parent
    included."""
    ts = load_helper("snow_helpers", "tests", "blender", "test_snow.py")
    scene, snow, actors = ts.snow_scene(envfx)
    arm = bpy.data.armatures.new("Rig")
    rig = bpy.data.objects.new("Rig", arm)
    scene.collection.objects.link(rig)
    api.view_layer().objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    bone = arm.edit_bones.new("Root")
    bone.head, bone.tail = (0.0, 0.0, 0.0), (0.0, 0.5, 0.0)
    bpy.ops.object.mode_set(mode="OBJECT")
    assert rig.pose is not None
    pose_bone = rig.pose.bones["Root"]
    for frame, y in ((1, -3.0), (10, 3.0)):
        pose_bone.location = (0.0, y, 0.0)  # bone space: the bone points along +Y, so local Y is world Y
        pose_bone.keyframe_insert("location", frame=frame)
    foot = bpy.data.objects.new("Foot", None)
    foot.empty_display_size = 0.3
    actors.objects.link(foot)
    foot.parent, foot.parent_type, foot.parent_bone = rig, "BONE", "Root"
    scene.frame_start, scene.frame_end = 1, 10
    scene.frame_set(1)
    envfx.operators.snow.add_trails(scene, [snow])
    for frame in range(1, 11):
        scene.frame_set(frame)
    world = envfx.bridge.evaluated_positions(snow, bpy.context.evaluated_depsgraph_get())
    rest = envfx.bridge.get_positions(snow.data)
    dz = world[:, 2] - rest[:, 2]
    walked = np.abs(rest[:, 0]) < 0.1
    for y in (-1.0, 0.0, 1.5):  # along the walk, far from the rig's origin at y = 0 ... and at it
        near = walked & (np.abs(rest[:, 1] - y) < 0.1)
        assert dz[near].min() < -0.1, y


def test_the_render_warning_is_not_fooled(envfx, load_helper, tmp_path, probe, capfd):
    """The record of what Blender simulated: going back to the start frame keeps it (a render then reads the
    simulated frames: no warning); the buffer bake's frame stepping (the trails off) is no simulation; opening a
    file forgets it; a scene renamed keeps it; trails off in the viewport (on for renders) simulate nothing, so
    Simulate Trails refuses them, saying what to do."""
    scene, name, rest = _walker_file(envfx, load_helper, tmp_path)
    sr = importlib.import_module(envfx.__name__ + ".operators.snow.render")
    assert api.ops.snow_trails_simulate() == {"FINISHED"}
    scene.frame_set(scene.frame_start)
    scene.name = "Shot010"
    assert sr.simulated_up_to(scene) == 10
    capfd.readouterr()
    scene.frame_current = 10
    render_probe(scene, name)
    assert "EnvFX warning" not in capfd.readouterr().err
    scene.frame_set(10)
    s = api.envfx(scene).snow
    s.frame_start, s.frame_end, s.output_dir, s.buffer_resolution = 1, 10, str(tmp_path / "buffer"), 32
    assert api.ops.snow_bake_buffer() == {"FINISHED"}
    assert sr.simulated_up_to(scene) is None  # the trails were off while it stepped, and start over
    assert api.ops.snow_trails_simulate() == {"FINISHED"}
    bpy.ops.wm.open_mainfile(filepath=bpy.data.filepath)
    assert sr.simulated_up_to(api.scene()) is None
    scene = api.scene()
    (mod,) = envfx.operators.snow.trails_modifiers(bpy.data.objects[name])
    mod.show_viewport = False
    with pytest.raises(RuntimeError, match="off in the viewport .on for renders.*monitor icon"):
        api.ops.snow_trails_simulate()
    for frame in range(1, 11):
        scene.frame_set(frame)
    capfd.readouterr()
    render_probe(scene, name)
    assert "EnvFX warning" in capfd.readouterr().err
