"""Typed handles on Blender's API for the tests (``from tests.blender import api``).

The API stubs (fake-bpy-module) type ``bpy.context.scene`` as optional, ``obj.data`` as the union of every kind of
object data, lookups such as ``tree.nodes[...]`` and ``obj.modifiers[...]`` by their base class, and do not know what
EnvFX registers at run time (``bpy.ops.envfx``, ``Scene.envfx``, ``Object.envfx``). These helpers check at run time
what a test takes for granted (a scene, a mesh, a Geometry Nodes modifier) and return it as that type, so the
type checker reads the rest of the test against the real API.
"""

from typing import Any, Protocol, TypeVar, cast

import bpy
from mathutils import Vector

T = TypeVar("T")

# Blender 5.0 or newer. tools/types.sh defines BLENDER_5 per stub set, so code behind ``if BLENDER_5:`` is checked
# against the version it runs on only (as ``bridge.BLENDER_5``)
BLENDER_5 = bpy.app.version >= (5, 0, 0)

# The add-on's operators, ``bpy.ops.envfx.<name>(...)``: registered by the add-on, unknown to the stubs
ops: Any = bpy.ops.envfx  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time


def of(kind: type[T], value: object) -> T:
    """``value`` as a ``kind`` (an assertion that it is one): ``api.of(bpy.types.ShaderNodeAttribute, node)``."""
    assert isinstance(value, kind), f"expected a {kind.__name__}, got {type(value).__name__}"
    return value


def fcurves(obj: bpy.types.Object) -> list[bpy.types.FCurve]:
    """The F-curves of ``obj``'s action (Blender 5: of its layered action's channel bags)."""
    anim = obj.animation_data
    assert anim is not None and anim.action is not None, f"{obj.name} has no action"
    action = anim.action
    if not BLENDER_5:
        return list(action.fcurves)
    return [fc for layer in action.layers for strip in layer.strips
            for bag in of(bpy.types.ActionKeyframeStrip, strip).channelbags for fc in bag.fcurves]


def linear(obj: bpy.types.Object) -> None:
    """Every keyframe of ``obj``'s action interpolated linearly (a walker at constant speed)."""
    for fc in fcurves(obj):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"


def scene() -> bpy.types.Scene:
    """``bpy.context.scene`` (optional in the API; the tests always run with one)."""
    return of(bpy.types.Scene, bpy.context.scene)


def view_layer() -> bpy.types.ViewLayer:
    """``bpy.context.view_layer`` (optional in the API)."""
    return of(bpy.types.ViewLayer, bpy.context.view_layer)


def active() -> bpy.types.Object:
    """``bpy.context.object``, the active object (optional in the API; set by the operators that add one)."""
    return of(bpy.types.Object, bpy.context.object)


def window() -> bpy.types.Window:
    """``bpy.context.window`` (optional in the API; Blender as a module has one)."""
    return of(bpy.types.Window, bpy.context.window)


def preferences() -> bpy.types.Preferences:
    """``bpy.context.preferences`` (optional in the API)."""
    return of(bpy.types.Preferences, bpy.context.preferences)


def camera(scene: bpy.types.Scene) -> bpy.types.Object:
    """``scene.camera`` (optional in the API; the factory file has one)."""
    return of(bpy.types.Object, scene.camera)


def field(obj: bpy.types.Object) -> bpy.types.FieldSettings:
    """``obj.field``, the force field settings of an effector object (optional in the API)."""
    return of(bpy.types.FieldSettings, obj.field)


def load_objects(path: str, names: list[str], link: bool) -> list[bpy.types.Object]:
    """The objects ``names`` of the .blend file at ``path``, appended or linked (``bpy.data.libraries.load``)."""
    with bpy.data.libraries.load(path, link=link) as (_src, dst):  # pyright: ignore[reportGeneralTypeIssues] -- a context manager, typed None
        dst.objects = names
    return [of(bpy.types.Object, obj) for obj in dst.objects]


def envfx(data: bpy.types.ID | None = None) -> Any:
    """The add-on's settings of a scene or an object (``scene.envfx``, ``obj.envfx``; the context's scene when
    ``data`` is None): registered at run time, so typed Any (as ``bridge.envfx_settings``)."""
    owner = scene() if data is None else data
    return owner.envfx  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time (props.register)


def mesh(obj: bpy.types.Object | None) -> bpy.types.Mesh:
    """The mesh of a mesh object (``obj.data``, typed as any object data)."""
    assert obj is not None, "expected a mesh object, got None"
    return of(bpy.types.Mesh, obj.data)


def node_tree(owner: Any) -> bpy.types.NodeTree:
    """``owner.node_tree`` of a material, world, group node or compositor scene (optional in the API)."""
    return of(bpy.types.NodeTree, owner.node_tree)


def nodes_modifier(obj: bpy.types.Object, name: str | None = None) -> bpy.types.NodesModifier:
    """The Geometry Nodes modifier ``name`` of ``obj`` (its first one when None)."""
    if name is None:
        found = [m for m in obj.modifiers if m.type == "NODES"]
        assert found, f"{obj.name} has no Geometry Nodes modifier"
        return of(bpy.types.NodesModifier, found[0])
    return of(bpy.types.NodesModifier, obj.modifiers[name])


def new_tree(name: str, kind: type[T]) -> T:
    """A new node group of the type ``kind`` (``bpy.types.GeometryNodeTree``, ``ShaderNodeTree``...), typed as one."""
    tree = bpy.data.node_groups.new(name, kind.__name__)  # pyright: ignore[reportArgumentType] -- the 4.2 stubs list only "DUMMY" for the tree type
    return of(kind, tree)


def id_keys(data: bpy.types.ID) -> list[str]:
    """The names of the custom properties of ``data`` (``data.keys()``, which the 4.2 stubs type as None)."""
    keys: Any = data.keys()  # (a list of names; typed as returning None by the 4.2 stubs)
    return list(keys)


def modifier_group(obj: bpy.types.Object, name: str) -> bpy.types.NodeTree:
    """The node group of ``obj``'s Geometry Nodes modifier ``name`` (asserted to have one)."""
    return of(bpy.types.NodeTree, nodes_modifier(obj, name).node_group)


def set_colorspace(image: bpy.types.Image, name: str) -> None:
    """``image.colorspace_settings.name = name``: the stubs list the colour spaces of one OpenColorIO config."""
    settings = image.colorspace_settings
    assert settings is not None
    settings.name = name  # pyright: ignore[reportAttributeAccessIssue] -- the config's names, not the stubs'


def pixels(image: bpy.types.Image) -> "bpy.types.bpy_prop_array[float]":
    """``image.pixels``, which the API stubs type as one float: the flat RGBA array (``foreach_get``, ``_set``)."""
    return of(bpy.types.bpy_prop_array, image.pixels)


def eevee_engine() -> str:
    """The render engine id of Eevee: ``BLENDER_EEVEE_NEXT`` in 4.2, ``BLENDER_EEVEE`` from 4.4 on."""
    return "BLENDER_EEVEE" if BLENDER_5 else "BLENDER_EEVEE_NEXT"


def set_engine(scene: bpy.types.Scene, engine: str) -> None:
    """``scene.render.engine = engine``: the stubs list only the engines registered when they were made (Eevee),
    not Cycles, Workbench or a test's own engine."""
    scene.render.engine = engine  # pyright: ignore[reportAttributeAccessIssue] -- the stubs' enum is Eevee only



class Valued(Protocol):
    """A node socket that holds a value (the stubs type sockets by the base class, which has none)."""
    default_value: Any


def socket(sock: bpy.types.NodeSocket | bpy.types.NodeTreeInterfaceSocket) -> Valued:
    """``sock`` as a socket with a ``default_value`` (asserted), whatever its data type."""
    assert hasattr(sock, "default_value"), f"the socket {sock.name!r} holds no value"
    return cast(Valued, sock)


def load_collections(path: str, names: list[str], link: bool) -> list[bpy.types.Collection]:
    """The collections ``names`` of the .blend file at ``path``, appended or linked (``bpy.data.libraries.load``)."""
    with bpy.data.libraries.load(path, link=link) as (_src, dst):  # pyright: ignore[reportGeneralTypeIssues] -- a context manager, typed None
        dst.collections = names
    return [of(bpy.types.Collection, coll) for coll in dst.collections]


def ray_cast(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph, origin: Vector,
             direction: Vector) -> tuple[bool, Vector, Vector, int]:
    """``scene.ray_cast(depsgraph, origin, direction)``: (hit, location, normal, face index) of the first face the
    ray meets (the object and matrix it also returns are left off). The 4.2 stubs type its result as None."""
    result: Any = scene.ray_cast(depsgraph, origin, direction)  # (a tuple; typed as returning None by the 4.2 stubs)
    hit, location, normal, index = result[:4]
    return bool(hit), of(Vector, location), of(Vector, normal), int(index)


def multi_layer_exr(path: str) -> str:
    """A multi-layer OpenEXR at ``path`` (a render's passes: channels ``ViewLayer.Combined.R`` ...; Blender's own
    matcaps are such files on 5.0, plain ones on 4.2), rendered by Workbench at 8 x 8 in a scene of its own, which
    is removed again. Blender reads it as an image of no pixels. Returns ``path``."""
    render_scene = bpy.data.scenes.new("EnvFX multi-layer EXR")
    camera = bpy.data.objects.new("EnvFX multi-layer EXR", bpy.data.cameras.new("EnvFX multi-layer EXR"))
    try:
        render_scene.collection.objects.link(camera)
        render_scene.camera = camera
        set_engine(render_scene, "BLENDER_WORKBENCH")
        render_scene.render.resolution_x = render_scene.render.resolution_y = 8
        render_scene.render.resolution_percentage = 100
        settings = render_scene.render.image_settings
        if hasattr(settings, "media_type"):  # (5.0: the multi-layer formats are a media type of their own)
            settings.media_type = "MULTI_LAYER_IMAGE"  # pyright: ignore[reportAttributeAccessIssue] -- not in 4.2's stubs
        settings.file_format = "OPEN_EXR_MULTILAYER"
        render_scene.render.filepath = path
        bpy.ops.render.render(write_still=True, scene=render_scene.name)
    finally:
        data = camera.data
        bpy.data.objects.remove(camera)
        bpy.data.cameras.remove(of(bpy.types.Camera, data))
        bpy.data.scenes.remove(render_scene)
    return path
