"""The one place that moves data between Blender and numpy (bulk attribute access, matrices)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import bpy
import mathutils
import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # the stubs' names for attribute types and domains (no such module at run time)
    from bpy.stub_internal.rna_enums import AttributeDomainItems, AttributeTypeItems

# Blender 5.0 or newer (else 4.2 LTS). Code that differs between the two branches on this name: the type check
# (tools/types.sh) defines it per stub set, so each branch is checked against its own version's API only.
BLENDER_5 = bpy.app.version >= (5, 0, 0)

# Object types that can carry a geometry-nodes modifier and hold geometry worth deforming (text too: Blender
# evaluates it as curves, then a mesh).
GEOMETRY_TYPES = {"MESH", "CURVE", "FONT", "CURVES", "POINTCLOUD"}


def matrix_to_numpy(matrix: mathutils.Matrix) -> npt.NDArray[np.float64]:
    """A mathutils 4x4 matrix as a float64 numpy array (row-major, like mathutils)."""
    return np.array([row[:] for row in matrix], dtype=np.float64)


def get_positions(mesh: bpy.types.Mesh) -> npt.NDArray[np.float32]:
    """(N, 3) float32 vertex positions of a mesh, through the position attribute (fast path; a mesh in Edit Mode
    has no attributes until it leaves it: its vertices are read then)."""
    n = len(mesh.vertices)
    buf = np.empty(n * 3, dtype=np.float32)
    if n:
        attr = mesh.attributes.get("position")
        if attr is not None:
            _values(attr).foreach_get("vector", buf)
        else:
            mesh.vertices.foreach_get("co", buf)
    return buf.reshape(n, 3)


def set_positions(mesh: bpy.types.Mesh, positions: npt.ArrayLike) -> None:
    """Write (N, 3) positions back; the count must match the mesh."""
    n = len(mesh.vertices)
    arr = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1)
    if arr.size != n * 3:
        raise ValueError(f"mesh {mesh.name!r} has {n} vertices, got {arr.size // 3} positions")
    if n:
        _values(mesh.attributes["position"]).foreach_set("vector", arr)
    mesh.update()


def _values(attr: bpy.types.Attribute) -> bpy.types.bpy_prop_collection[Any]:
    """``attr.data``, the values of an attribute: every attribute type (FloatAttribute, IntAttribute...) has them,
    the API stubs' base class Attribute does not declare them."""
    return attr.data  # pyright: ignore[reportAttributeAccessIssue] -- declared by each attribute type only


def _read_internal(mesh: bpy.types.Mesh, name: str, buf: npt.NDArray[np.int32]) -> bool:
    """Fill ``buf`` from the mesh's internal int attribute ``name`` (".edge_verts" two per edge, ".corner_vert"
    one per corner): a plain copy, about a hundred times faster than the same numbers through ``mesh.edges`` /
    ``mesh.loops``. False when the mesh has no such attribute that fills ``buf`` (in Edit Mode), for the caller to
    read them the slow way."""
    attr = mesh.attributes.get(name)
    per = 2 if name == ".edge_verts" else 1
    if attr is None or len(_values(attr)) * per != buf.size:
        return False
    _values(attr).foreach_get("value", buf)
    return True


def get_edges(mesh: bpy.types.Mesh) -> npt.NDArray[np.int32]:
    """(E, 2) int32 vertex indices of a mesh's edges."""
    buf = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    if buf.size and not _read_internal(mesh, ".edge_verts", buf):
        mesh.edges.foreach_get("vertices", buf)
    return buf.reshape(-1, 2)


def world_positions(obj: bpy.types.Object) -> npt.NDArray[np.float64]:
    """(N, 3) float64 world positions of the vertices of a mesh object's own mesh (no modifiers)."""
    m = matrix_to_numpy(obj.matrix_world)
    return get_positions(cast(bpy.types.Mesh, obj.data)).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def evaluated_positions(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> npt.NDArray[np.float32]:
    """(N, 3) object-space vertex positions of the evaluated object (all modifiers applied); none for an object
    that evaluates to no mesh (a curve or text with nothing to draw)."""
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        if mesh is None:
            return np.zeros((0, 3), dtype=np.float32)
        return get_positions(mesh).copy()
    finally:
        ev.to_mesh_clear()


def get_shape_key_positions(key_block: bpy.types.ShapeKey) -> npt.NDArray[np.float32]:
    n = len(key_block.data)
    buf = np.empty(n * 3, dtype=np.float32)
    if n:
        key_block.data.foreach_get("co", buf)
    return buf.reshape(n, 3)


def set_shape_key_positions(key_block: bpy.types.ShapeKey, positions: npt.ArrayLike) -> None:
    arr = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1)
    if arr.size:
        key_block.data.foreach_set("co", arr)


# --- geometry from Blender --------------------------------------------------------------------------------
# An object's geometry is what it draws: its own evaluated mesh and every instance it makes (a collection
# instance, geometry-nodes instances, particle or vertex/face instances, nested ones included), each placed by its
# world matrix. ``to_mesh`` of the object alone has no instances, so they are read from the depsgraph's
# ``object_instances``, in one pass for all the objects asked about.


def instances_collection(obj: bpy.types.Object) -> bool:
    """Whether ``obj`` is a collection instance (an Empty showing a collection)."""
    return obj.instance_type == "COLLECTION" and obj.instance_collection is not None


def _makes_instances(obj) -> bool:
    """Whether ``obj`` may put instances into the scene (only then are the depsgraph's instances walked)."""
    return (obj.instance_type != "NONE" or len(obj.particle_systems) > 0
            or any(m.type == "NODES" for m in obj.modifiers))


def _shows_itself(obj) -> bool:
    """Whether the object's own geometry is drawn: an object instancing on its vertices, faces or particles can
    hide itself (Instancing > Render, the emitter's Show Emitter in renders)."""
    if obj.instance_type in {"VERTS", "FACES"} or len(obj.particle_systems):
        return obj.show_instancer_for_render
    return True


GEOMETRY_OBJECT_TYPES = GEOMETRY_TYPES | {"SURFACE", "META"}  # object types whose geometry can be read

# One part of the geometry an object draws: (world triangles (T, 3, 3), weights (T, 3) or None, UVs (T, 3, 2) or
# None), see ``evaluated_parts``; an object's triangles and weights, its parts joined (``objects_triangles``); and
# the filter ``counts(instancer, source)`` of the instances that count.
Part = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64] | None, npt.NDArray[np.float32] | None]
Triangles = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64] | None]
Counts = Callable[[bpy.types.Object, bpy.types.Object], bool]


def _local_mesh(ev, with_weights: str = "", with_uvs: bool = False):
    """(positions (N, 3), triangle corners (T, 3) as vertex indices, weights (T, 3) of the point attribute
    ``with_weights`` or None, UVs (T, 3, 2) of the active UV map or None) of the evaluated object ``ev``'s mesh,
    object space; None when it has no mesh or no faces."""
    if ev.type not in GEOMETRY_OBJECT_TYPES:  # an Empty, a light...: to_mesh would complain on the console
        return None
    try:
        mesh = ev.to_mesh()
    except RuntimeError:
        return None
    try:
        if mesh is None:
            return None
        mesh.calc_loop_triangles()
        nt = len(mesh.loop_triangles)
        if not nt:  # a point scatter's own points, an instancer's empty mesh: nothing to draw, no UVs needed
            return None
        pos = get_positions(mesh).astype(np.float64)
        idx = np.empty(nt * 3, dtype=np.int32)
        mesh.loop_triangles.foreach_get("vertices", idx)
        idx = idx.reshape(nt, 3)
        weights = None
        attr = mesh.attributes.get(with_weights) if with_weights else None
        if attr is not None and attr.domain == "POINT" and attr.data_type == "FLOAT":
            buf = np.empty(len(mesh.vertices), dtype=np.float32)
            attr.data.foreach_get("value", buf)
            weights = buf.astype(np.float64)[idx]
        uvs = None
        if with_uvs and mesh.uv_layers.active is not None:
            loops = np.empty(nt * 3, dtype=np.int32)
            mesh.loop_triangles.foreach_get("loops", loops)
            uv = np.empty(len(mesh.loops) * 2, dtype=np.float32)
            mesh.uv_layers.active.uv.foreach_get("vector", uv)
            uvs = uv.reshape(-1, 2)[loops.reshape(nt, 3)]
        return pos, idx, weights, uvs
    finally:
        ev.to_mesh_clear()


def _placed(local, m):
    """(world triangles (T, 3, 3), weights, UVs) of a ``_local_mesh`` placed by the world matrix ``m``, wound for
    the world (``_world_winding``; the weights and UVs corner for corner with the triangles)."""
    pos, idx, weights, uvs = local
    pos = pos @ m[:3, :3].T + m[:3, 3]
    idx, weights, uvs = (None if a is None else _world_winding(a, m) for a in (idx, weights, uvs))
    return pos[idx], weights, uvs


def _original(ev: bpy.types.Object | None) -> bpy.types.Object:
    """The original object of an evaluated one of the depsgraph (an instance's parent or object, which are always
    there for an instance: the API types them and the original optional)."""
    return cast(bpy.types.Object, cast(bpy.types.Object, ev).original)


def evaluated_parts(objects: Iterable[bpy.types.Object], depsgraph: bpy.types.Depsgraph, with_weights: str = "",
                    with_uvs: bool = False, counts: Counts | None = None) -> list[list[Part]]:
    """For each of ``objects``, the list of the parts of the geometry it draws, each (world triangles (T, 3, 3),
    weights (T, 3) or None, UVs (T, 3, 2) or None; see ``_local_mesh``): its own evaluated mesh (unless it hides
    itself, ``_shows_itself``) and its instances. ``counts(instancer, source)`` (original objects; default: all)
    says whether an instance of ``source`` made by ``instancer`` counts. Instances sharing a mesh read it once."""
    objects = list(objects)
    parts = [[] for _ in objects]
    instancers = {}
    for i, obj in enumerate(objects):
        if _shows_itself(obj):
            ev = obj.evaluated_get(depsgraph)
            local = _local_mesh(ev, with_weights, with_uvs)
            if local is not None:
                parts[i].append(_placed(local, matrix_to_numpy(ev.matrix_world)))
        if _makes_instances(obj):
            instancers[obj.as_pointer()] = i
    if not instancers:
        return parts
    meshes = {}  # an instance's evaluated mesh is owned by the depsgraph: read each one once
    for inst in depsgraph.object_instances:  # an instance's objects are valid only during its step
        if not inst.is_instance:
            continue
        i = instancers.get(_original(inst.parent).as_pointer())
        if i is None:
            continue
        ev = cast(bpy.types.Object, inst.object)  # (always there for an instance; the API types it optional)
        if counts is not None and not counts(objects[i], _original(ev)):
            continue
        key = ev.data.as_pointer() if ev.type == "MESH" and ev.data is not None else None
        local = meshes.get(key) if key is not None else None
        if local is None:
            local = _local_mesh(ev, with_weights, with_uvs)
            if local is None:
                continue
            if key is not None:
                meshes[key] = local
        parts[i].append(_placed(local, matrix_to_numpy(inst.matrix_world)))
    return parts


def _joined(parts: Sequence[Part]) -> Triangles:
    """(triangles, weights) of the parts of one object, joined; parts without weights count as weight 1 (None
    when no part has any)."""
    if not parts:
        return np.zeros((0, 3, 3)), None
    tris = np.concatenate([t for t, _w, _uv in parts])
    if all(w is None for _t, w, _uv in parts):
        return tris, None
    return tris, np.concatenate([np.ones((t.shape[0], 3)) if w is None else w for t, w, _uv in parts])


def objects_triangles(objects: Iterable[bpy.types.Object], depsgraph: bpy.types.Depsgraph, with_weights: str = "",
                      counts: Counts | None = None) -> list[Triangles]:
    """[(world triangles, weights)] of each of ``objects`` (``world_triangles`` for many objects at once, one
    walk through the instances; ``counts`` as in ``evaluated_parts``)."""
    return [_joined(p) for p in evaluated_parts(objects, depsgraph, with_weights, counts=counts)]


def _world_winding(idx, m):
    """Triangle corner indices (T, 3), or anything per corner (weights, UVs), wound for the world: a mirroring
    matrix (negative determinant, e.g. a tile scaled -1 on one axis) turns a counter-clockwise triangle clockwise,
    so its normal would point away from the side Blender shows as the front; swapping two corners keeps the
    normals as Blender draws them."""
    if np.linalg.det(m[:3, :3]) < 0:
        return idx[:, ::-1]
    return idx


def world_triangles(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, with_weights: str = "") -> Triangles:
    """(T, 3, 3) world-space triangles of the geometry the evaluated object draws, its instances included
    (``evaluated_parts``; wound so that their normals are Blender's world normals, mirrored objects included),
    and (T, 3) weights of the point attribute ``with_weights`` of the evaluated meshes (None when no part has
    one; parts without it count as 1)."""
    return objects_triangles([obj], depsgraph, with_weights)[0]


def rest_triangles(obj: bpy.types.Object) -> npt.NDArray[np.float64]:
    """(T, 3, 3) world-space triangles of a mesh object's own data (no modifiers)."""
    mesh = cast(bpy.types.Mesh, obj.data)
    mesh.calc_loop_triangles()
    nt = len(mesh.loop_triangles)
    idx = np.empty(nt * 3, dtype=np.int32)
    if nt:
        mesh.loop_triangles.foreach_get("vertices", idx)
    pos = get_positions(mesh).astype(np.float64)
    m = matrix_to_numpy(obj.matrix_world)
    pos = pos @ m[:3, :3].T + m[:3, 3]
    return pos[_world_winding(idx.reshape(nt, 3), m)]


def _pixels(image: bpy.types.Image) -> bpy.types.bpy_prop_array[float]:
    """``image.pixels``, the flat RGBA array, which the API stubs type as one float."""
    return cast("bpy.types.bpy_prop_array[float]", image.pixels)


def image_pixels(image: bpy.types.Image) -> npt.NDArray[np.float32]:
    """(H, W, C) float32 pixels of a Blender image as Blender stores them: bottom row first, C = its channels."""
    w, h = image.size
    c = image.channels
    buf = np.empty(w * h * c, dtype=np.float32)
    if buf.size:
        _pixels(image).foreach_get(buf)
    return buf.reshape(h, w, c)


def quad_mesh(name: str, vertices: npt.NDArray[np.floating], faces: npt.NDArray[np.integer],
              point_floats: Mapping[str, npt.NDArray[np.floating]] | None = None) -> bpy.types.Mesh:
    """A new mesh ``name`` of ``vertices`` (N, 3) and quads ``faces`` (F, 4), shaded smooth, with a float point
    attribute for each {name: (N,) values} of ``point_floats``."""
    mesh = bpy.data.meshes.new(name)
    nv, nf = vertices.shape[0], faces.shape[0]
    mesh.vertices.add(nv)
    # the stubs type attributes by their base class; position is a float vector attribute
    cast(bpy.types.FloatVectorAttribute, mesh.attributes["position"]).data.foreach_set(
        "vector", vertices.astype(np.float32).ravel())
    mesh.loops.add(nf * 4)
    mesh.polygons.add(nf)
    mesh.polygons.foreach_set("loop_start", np.arange(0, nf * 4, 4, dtype=np.int32))
    mesh.loops.foreach_set("vertex_index", faces.astype(np.int32).ravel())
    calc_edges(mesh)
    mesh.validate(clean_customdata=False)
    for attr_name, values in (point_floats or {}).items():
        attr = cast(bpy.types.FloatAttribute, mesh.attributes.new(attr_name, "FLOAT", "POINT"))
        attr.data.foreach_set("value", values.astype(np.float32))
    mesh.polygons.foreach_set("use_smooth", np.ones(nf, dtype=bool))
    mesh.update()
    return mesh


def calc_edges(mesh: bpy.types.Mesh) -> None:
    """``mesh.update(calc_edges=True)``, with the edges' selection as a boolean layer. Blender 5.0 makes
    ``.select_edge`` an INT32_2D attribute and fills only its first byte per edge (the booleans it meant), so 7 of
    every 8 bytes saved are whatever was in memory: the booleans are read back from those first bytes and the layer
    made again as BOOLEAN (as Blender 4.2 makes it)."""
    mesh.update(calc_edges=True)
    attr = mesh.attributes.get(".select_edge")
    if attr is None or attr.data_type == "BOOLEAN":
        return
    count = len(mesh.edges)
    words = np.zeros(2 * count, np.int32)
    cast(bpy.types.Int2Attribute, attr).data.foreach_get("value", words)
    selected = words.view(np.uint8)[:count] != 0
    mesh.attributes.remove(attr)
    cast(bpy.types.BoolAttribute, mesh.attributes.new(".select_edge", "BOOLEAN", "EDGE")).data.foreach_set(
        "value", selected)


# --- meshes, images and attributes made or read by the bakes ------------------------------------------------

def fill_mesh(mesh: bpy.types.Mesh, positions: npt.NDArray[np.floating], loop_vertices: npt.NDArray[np.integer],
              loop_starts: npt.NDArray[np.integer]) -> None:
    """Add vertices at ``positions`` (N, 3) and polygons to an empty mesh: polygon k has the corners
    ``loop_vertices[loop_starts[k]:loop_starts[k + 1]]``. The caller then makes the edges (``mesh.update``)."""
    mesh.vertices.add(len(positions))
    mesh.vertices.foreach_set("co", np.ascontiguousarray(positions, dtype=np.float32).ravel())
    mesh.loops.add(len(loop_vertices))
    mesh.loops.foreach_set("vertex_index", np.ascontiguousarray(loop_vertices, dtype=np.int32))
    mesh.polygons.add(len(loop_starts))
    mesh.polygons.foreach_set("loop_start", np.ascontiguousarray(loop_starts, dtype=np.int32))


def set_corner_uvs(uv_layer: bpy.types.MeshUVLoopLayer, uvs: npt.ArrayLike) -> None:
    """Write (corners, 2) UVs into a UV map."""
    uv_layer.data.foreach_set("uv", np.ascontiguousarray(uvs, dtype=np.float32).ravel())


def set_smooth(mesh: bpy.types.Mesh, smooth: npt.ArrayLike) -> None:
    """Shade each polygon smooth (True) or flat."""
    mesh.polygons.foreach_set("use_smooth", np.ascontiguousarray(smooth, dtype=bool))


def triangle_corners(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> npt.NDArray[np.float32]:
    """(T, 3, 3) float32 world-space corners of the evaluated object's triangles (modifiers applied); empty for an
    object with no surface."""
    ev = obj.evaluated_get(depsgraph)
    try:
        mesh = ev.to_mesh()
    except RuntimeError:  # no geometry to make a mesh of
        return np.zeros((0, 3, 3), dtype=np.float32)
    if mesh is None:
        return np.zeros((0, 3, 3), dtype=np.float32)
    try:
        mesh.calc_loop_triangles()
        n = len(mesh.loop_triangles)
        pos = get_positions(mesh).astype(np.float64)
        idx = np.empty(n * 3, dtype=np.int32)
        if n:
            mesh.loop_triangles.foreach_get("vertices", idx)
        m = matrix_to_numpy(ev.matrix_world)
        world = pos @ m[:3, :3].T + m[:3, 3]
        return world[idx.reshape(n, 3)].astype(np.float32)
    finally:
        ev.to_mesh_clear()


def world_points_and_normals(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph
                             ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """((N, 3) world positions, (N, 3) unit world normals) of the evaluated mesh's vertices (for vertex colours:
    the counts match ``obj.data`` when no modifier changes the topology)."""
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        n = len(mesh.vertices)
        pos = get_positions(mesh).astype(np.float64)
        nor = np.empty(n * 3, dtype=np.float32)
        if n:
            mesh.vertex_normals.foreach_get("vector", nor)
        m = matrix_to_numpy(ev.matrix_world)
        world = pos @ m[:3, :3].T + m[:3, 3]
        normal_matrix = np.linalg.inv(m[:3, :3]).T
        wn = nor.reshape(n, 3).astype(np.float64) @ normal_matrix.T
        wn /= np.maximum(np.linalg.norm(wn, axis=1, keepdims=True), 1e-12)
        return world.astype(np.float32), wn.astype(np.float32)
    finally:
        ev.to_mesh_clear()


def set_point_colours(mesh: bpy.types.Mesh, name: str, colours: npt.ArrayLike) -> bpy.types.FloatColorAttribute:
    """Write (N, 4) float colours to the mesh's per-vertex colour attribute ``name`` (made if missing)."""
    # (a float colour point attribute once made or kept here; the API types attributes by their base class)
    attr = cast("bpy.types.FloatColorAttribute | None", mesh.color_attributes.get(name))
    if attr is not None and (attr.domain != "POINT" or attr.data_type != "FLOAT_COLOR"):
        mesh.color_attributes.remove(attr)
        attr = None
    if attr is None:
        attr = cast(bpy.types.FloatColorAttribute, mesh.color_attributes.new(name, "FLOAT_COLOR", "POINT"))
    arr = np.ascontiguousarray(colours, dtype=np.float32).reshape(-1)
    if arr.size != len(mesh.vertices) * 4:
        raise ValueError(f"mesh {mesh.name!r} has {len(mesh.vertices)} vertices, got {arr.size // 4} colours")
    attr.data.foreach_set("color", arr)
    mesh.update()
    return attr


def set_image_pixels(image: bpy.types.Image, pixels: npt.ArrayLike) -> None:
    """Write (H, W, 4) float pixels, row 0 at the top, into a Blender image of that size (Blender stores the bottom
    row first)."""
    w, h = image.size
    arr = np.ascontiguousarray(np.asarray(pixels, dtype=np.float32)[::-1]).reshape(-1)
    if arr.size != w * h * 4:
        raise ValueError(f"image {image.name!r} is {w} x {h}, got {arr.size // 4} pixels")
    _pixels(image).foreach_set(arr)
    image.update()


def mesh_counts(mesh: bpy.types.Mesh) -> tuple[int, int, int, int]:
    """(vertices, edges, faces, corners): what must not change over a vertex animation."""
    return len(mesh.vertices), len(mesh.edges), len(mesh.polygons), len(mesh.loops)


def vertex_normals(mesh: bpy.types.Mesh) -> npt.NDArray[np.float32]:
    """(N, 3) float32 vertex normals (object space) of a mesh."""
    n = len(mesh.vertices)
    buf = np.empty(n * 3, dtype=np.float32)
    if n:
        mesh.vertex_normals.foreach_get("vector", buf)
    return buf.reshape(n, 3)


_ATTR_KINDS = {"FLOAT": ("value", 1), "INT": ("value", 1), "FLOAT2": ("vector", 2), "FLOAT_VECTOR": ("vector", 3),
               "FLOAT_COLOR": ("color", 4), "BYTE_COLOR": ("color", 4)}


def vertex_group_weights(obj: bpy.types.Object, names: Sequence[str], scene: bpy.types.Scene
                         ) -> npt.NDArray[np.float32]:
    """(vertices, len(names)) float32 weights of ``obj``'s vertex groups ``names`` (0 where a vertex is not in a
    group), read in bulk: a throw-away object sharing the mesh gets a geometry-nodes modifier that stores each group
    as a float attribute, the evaluated mesh is read (``point_attribute``), and everything temporary is removed."""
    n = len(cast(bpy.types.Mesh, obj.data).vertices)
    out = np.zeros((n, len(names)), np.float32)
    if n == 0 or not names:
        return out
    group = cast(bpy.types.GeometryNodeTree, bpy.data.node_groups.new(  # (a node tree of that type)
        "EnvFX Read Vertex Groups (temporary)", "GeometryNodeTree"))  # pyright: ignore[reportArgumentType] -- the 4.2 stubs list only "DUMMY" for the tree type
    tmp = bpy.data.objects.new("EnvFX Read Vertex Groups (temporary)", obj.data)
    try:
        interface = group.interface
        assert interface is not None  # every node group has one
        interface.new_socket(name="Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        interface.new_socket(name="Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
        gi = group.nodes.new("NodeGroupInput")
        go = group.nodes.new("NodeGroupOutput")
        geo = gi.outputs[0]
        for i, name in enumerate(names):
            # (nodes.new and the socket lookups are typed by their base classes: cast to the node made)
            read = cast(bpy.types.GeometryNodeInputNamedAttribute, group.nodes.new("GeometryNodeInputNamedAttribute"))
            read.data_type = "FLOAT"
            cast(bpy.types.NodeSocketString, read.inputs["Name"]).default_value = name
            store = cast(bpy.types.GeometryNodeStoreNamedAttribute, group.nodes.new("GeometryNodeStoreNamedAttribute"))
            store.data_type = "FLOAT"
            store.domain = "POINT"
            cast(bpy.types.NodeSocketString, store.inputs["Name"]).default_value = f"envfx_tmp_group_{i}"
            group.links.new(geo, store.inputs["Geometry"])
            group.links.new(read.outputs["Attribute"], store.inputs["Value"])
            geo = store.outputs["Geometry"]
        group.links.new(geo, go.inputs[0])
        scene.collection.objects.link(tmp)
        mod = cast(bpy.types.NodesModifier, tmp.modifiers.new("read", "NODES"))
        mod.node_group = group
        depsgraph = bpy.context.evaluated_depsgraph_get()
        depsgraph.update()
        ev = tmp.evaluated_get(depsgraph)
        mesh = ev.to_mesh()
        try:
            for i in range(len(names)):
                out[:, i] = point_attribute(mesh, f"envfx_tmp_group_{i}").reshape(n)
        finally:
            ev.to_mesh_clear()
    finally:
        bpy.data.objects.remove(tmp)
        bpy.data.node_groups.remove(group)
    return out


def point_attribute(mesh: bpy.types.Mesh, name: str) -> npt.NDArray[np.float32]:
    """(N, C) float32 values per vertex of the attribute ``name`` (point domain; a corner attribute is averaged
    over each vertex's corners). KeyError when the mesh has no such attribute, TypeError for a type that is not
    numbers (bool, string, quaternion...)."""
    attr = mesh.attributes[name]
    if attr.data_type not in _ATTR_KINDS or attr.domain not in ("POINT", "CORNER"):
        raise TypeError(f"attribute {name!r} is {attr.data_type.lower()} on the {attr.domain.lower()} domain: only "
                        f"numbers and colours on points or face corners can be baked")
    key, c = _ATTR_KINDS[attr.data_type]
    buf = np.empty(len(_values(attr)) * c, dtype=np.float32)
    if buf.size:
        _values(attr).foreach_get(key, buf)
    values = buf.reshape(-1, c)
    if attr.domain == "POINT":
        return values
    loops = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", loops)
    n = len(mesh.vertices)
    total = np.zeros((n, c), np.float64)
    np.add.at(total, loops, values)
    count = np.bincount(loops, minlength=n)[:, None]
    return (total / np.maximum(count, 1)).astype(np.float32)


def write_point_attribute(mesh: bpy.types.Mesh, name: str, data_type: str, values: npt.ArrayLike | None,
                          domain: str = "POINT") -> bpy.types.Attribute | None:
    """Write per-vertex ``values`` (N or (N, C) numbers) to the point attribute ``name`` of type ``data_type``
    ("FLOAT", "FLOAT_VECTOR", "FLOAT_COLOR"...), made if missing and remade when its domain or type differ;
    ``values`` None removes the attribute. Returns the attribute (None when removed). ``domain``: another domain
    ("FACE": one value per face)."""
    attrs = mesh.attributes
    attr = attrs.get(name)
    if attr is not None and (attr.domain != domain or attr.data_type != data_type or values is None):
        attrs.remove(attr)
        attr = None
    if values is None:
        return None
    # (an unknown data_type is a KeyError below, an unknown domain Blender's TypeError, as before the cast)
    attr = attr or attrs.new(name, cast("AttributeTypeItems", data_type), cast("AttributeDomainItems", domain))
    kind = np.int32 if data_type == "INT" else np.float32
    _values(attr).foreach_set(_ATTR_KINDS[data_type][0], np.ascontiguousarray(values, kind).reshape(-1))
    return attr


def corner_vertices(mesh: bpy.types.Mesh) -> npt.NDArray[np.int32]:
    """(corners,) int32 vertex index of every face corner (loop) of a mesh."""
    loops = np.empty(len(mesh.loops), dtype=np.int32)
    if loops.size and not _read_internal(mesh, ".corner_vert", loops):
        mesh.loops.foreach_get("vertex_index", loops)
    return loops


def face_starts(mesh: bpy.types.Mesh) -> npt.NDArray[np.int32]:
    """(faces,) int32 first corner (loop) of every face of a mesh."""
    starts = np.empty(len(mesh.polygons), dtype=np.int32)
    if starts.size:
        mesh.polygons.foreach_get("loop_start", starts)
    return starts


def face_materials(mesh: bpy.types.Mesh) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """(material slot index, corner count) per face of a mesh, int32 each."""
    nf = len(mesh.polygons)
    mat = np.empty(nf, np.int32)
    mesh.polygons.foreach_get("material_index", mat)
    totals = np.empty(nf, np.int32)
    mesh.polygons.foreach_get("loop_total", totals)
    return mat, totals


def loop_triangle_vertices(mesh: bpy.types.Mesh) -> npt.NDArray[np.int32]:
    """(T, 3) int32 vertex indices of a mesh's loop triangles as they are (not recalculated here)."""
    tris = mesh.loop_triangles
    buf = np.empty(len(tris) * 3, np.int32)
    tris.foreach_get("vertices", buf)
    return buf.reshape(-1, 3)


def set_vertex_uv(mesh: bpy.types.Mesh, name: str, uv_per_vertex: npt.ArrayLike) -> bpy.types.MeshUVLoopLayer:
    """Add (or replace) the UV map ``name`` whose every corner gets the UV of its vertex ((N, 2) array)."""
    old = mesh.uv_layers.get(name)
    if old is not None:
        mesh.uv_layers.remove(old)
    layer = mesh.uv_layers.new(name=name, do_init=False)
    loops = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", loops)
    data = np.ascontiguousarray(np.asarray(uv_per_vertex, dtype=np.float32)[loops]).reshape(-1)
    if data.size:
        layer.uv.foreach_set("vector", data)
    return layer


def envfx_settings(data: bpy.types.ID) -> Any:
    """The add-on's settings of a scene or an object (``scene.envfx``, ``obj.envfx``). They are registered by
    ``props.register()``, so the API stubs do not know them, and their PropertyGroups' fields are bpy property
    declarations rather than types: the settings are typed Any."""
    return data.envfx  # pyright: ignore[reportAttributeAccessIssue] -- registered at run time (props.register)


def context_scene(context: bpy.types.Context) -> bpy.types.Scene:
    """``context.scene``, which the API types as optional: a panel's draw() and an operator of the 3D view always
    have one, so None is refused with a message rather than left to fail as "None has no attribute"."""
    scene = context.scene
    if scene is None:
        raise RuntimeError("EnvFX needs a scene here and the context has none: run it from a window with a scene")
    return scene


def panel_layout(panel: bpy.types.Panel) -> bpy.types.UILayout:
    """The layout ``panel`` draws into, which the API types as optional: Blender sets it for draw() and
    draw_header()."""
    layout = panel.layout
    if layout is None:
        raise RuntimeError(f"{type(panel).__name__} drew outside draw() or draw_header(): it has no layout")
    return layout
