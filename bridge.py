"""The one place that moves data between Blender and numpy (bulk attribute access, matrices)."""

from __future__ import annotations

import numpy as np

# Object types that can carry a geometry-nodes modifier and hold geometry worth deforming (text too: Blender
# evaluates it as curves, then a mesh).
GEOMETRY_TYPES = {"MESH", "CURVE", "FONT", "CURVES", "POINTCLOUD"}


def matrix_to_numpy(matrix) -> np.ndarray:
    """A mathutils 4x4 matrix as a float64 numpy array (row-major, like mathutils)."""
    return np.array([list(row) for row in matrix], dtype=np.float64)


def get_positions(mesh) -> np.ndarray:
    """(N, 3) float32 vertex positions of a mesh, through the position attribute (fast path)."""
    n = len(mesh.vertices)
    buf = np.empty(n * 3, dtype=np.float32)
    if n:
        mesh.attributes["position"].data.foreach_get("vector", buf)
    return buf.reshape(n, 3)


def set_positions(mesh, positions: np.ndarray):
    """Write (N, 3) positions back; the count must match the mesh."""
    n = len(mesh.vertices)
    arr = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1)
    if arr.size != n * 3:
        raise ValueError(f"mesh {mesh.name!r} has {n} vertices, got {arr.size // 3} positions")
    if n:
        mesh.attributes["position"].data.foreach_set("vector", arr)
    mesh.update()


def evaluated_positions(obj, depsgraph) -> np.ndarray:
    """(N, 3) object-space vertex positions of the evaluated object (all modifiers applied)."""
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        return get_positions(mesh).copy()
    finally:
        ev.to_mesh_clear()


def image_pixels(image) -> np.ndarray:
    """(H, W, C) float32 pixels of a Blender image as Blender stores them: bottom row first, C = its channels."""
    w, h = image.size
    c = image.channels
    buf = np.empty(w * h * c, dtype=np.float32)
    if buf.size:
        image.pixels.foreach_get(buf)
    return buf.reshape(h, w, c)


def get_shape_key_positions(key_block) -> np.ndarray:
    n = len(key_block.data)
    buf = np.empty(n * 3, dtype=np.float32)
    if n:
        key_block.data.foreach_get("co", buf)
    return buf.reshape(n, 3)


def set_shape_key_positions(key_block, positions: np.ndarray):
    arr = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1)
    if arr.size:
        key_block.data.foreach_set("co", arr)


def add_modifier_before_bend(obj, name: str, node_group):
    """Add a geometry-nodes modifier using ``node_group`` to ``obj``, placed before the world bend (the bend
    is always the last deformation, as in the write-up's vertex shader). Returns the modifier."""
    from .shader_nodes.bend import is_bend_group

    mod = obj.modifiers.new(name, "NODES")
    mod.node_group = node_group
    bend_index = next(
        (i for i, m in enumerate(obj.modifiers) if m.type == "NODES" and is_bend_group(m.node_group)), None)
    if bend_index is not None and bend_index < len(obj.modifiers) - 1:
        obj.modifiers.move(len(obj.modifiers) - 1, bend_index)
    return mod


def fill_mesh(mesh, positions: np.ndarray, loop_vertices: np.ndarray, loop_starts: np.ndarray):
    """Add vertices at ``positions`` (N, 3) and polygons to an empty mesh: polygon k has the corners
    ``loop_vertices[loop_starts[k]:loop_starts[k + 1]]``. The caller then makes the edges (``mesh.update``)."""
    mesh.vertices.add(len(positions))
    mesh.vertices.foreach_set("co", np.ascontiguousarray(positions, dtype=np.float32).ravel())
    mesh.loops.add(len(loop_vertices))
    mesh.loops.foreach_set("vertex_index", np.ascontiguousarray(loop_vertices, dtype=np.int32))
    mesh.polygons.add(len(loop_starts))
    mesh.polygons.foreach_set("loop_start", np.ascontiguousarray(loop_starts, dtype=np.int32))


def set_corner_uvs(uv_layer, uvs: np.ndarray):
    """Write (corners, 2) UVs into a UV map."""
    uv_layer.data.foreach_set("uv", np.ascontiguousarray(uvs, dtype=np.float32).ravel())


def set_smooth(mesh, smooth: np.ndarray):
    """Shade each polygon smooth (True) or flat."""
    mesh.polygons.foreach_set("use_smooth", np.ascontiguousarray(smooth, dtype=bool))


def world_triangles(obj, depsgraph) -> np.ndarray:
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


def world_points_and_normals(obj, depsgraph) -> tuple:
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


def set_point_colours(mesh, name: str, colours: np.ndarray):
    """Write (N, 4) float colours to the mesh's per-vertex colour attribute ``name`` (made if missing)."""
    attr = mesh.color_attributes.get(name)
    if attr is not None and (attr.domain != "POINT" or attr.data_type != "FLOAT_COLOR"):
        mesh.color_attributes.remove(attr)
        attr = None
    if attr is None:
        attr = mesh.color_attributes.new(name, "FLOAT_COLOR", "POINT")
    arr = np.ascontiguousarray(colours, dtype=np.float32).reshape(-1)
    if arr.size != len(mesh.vertices) * 4:
        raise ValueError(f"mesh {mesh.name!r} has {len(mesh.vertices)} vertices, got {arr.size // 4} colours")
    attr.data.foreach_set("color", arr)
    mesh.update()
    return attr


def set_image_pixels(image, pixels: np.ndarray):
    """Write (H, W, 4) float pixels, row 0 at the top, into a Blender image of that size (Blender stores the bottom
    row first)."""
    w, h = image.size
    arr = np.ascontiguousarray(np.asarray(pixels, dtype=np.float32)[::-1]).reshape(-1)
    if arr.size != w * h * 4:
        raise ValueError(f"image {image.name!r} is {w} x {h}, got {arr.size // 4} pixels")
    image.pixels.foreach_set(arr)
    image.update()


def mesh_counts(mesh) -> tuple:
    """(vertices, edges, faces, corners): what must not change over a vertex animation."""
    return len(mesh.vertices), len(mesh.edges), len(mesh.polygons), len(mesh.loops)


def vertex_normals(mesh) -> np.ndarray:
    """(N, 3) float32 vertex normals (object space) of a mesh."""
    n = len(mesh.vertices)
    buf = np.empty(n * 3, dtype=np.float32)
    if n:
        mesh.vertex_normals.foreach_get("vector", buf)
    return buf.reshape(n, 3)


# attribute data type -> (foreach key, components)
_ATTR_KINDS = {"FLOAT": ("value", 1), "INT": ("value", 1), "FLOAT2": ("vector", 2), "FLOAT_VECTOR": ("vector", 3),
               "FLOAT_COLOR": ("color", 4), "BYTE_COLOR": ("color", 4)}


def point_attribute(mesh, name: str) -> np.ndarray:
    """(N, C) float32 values per vertex of the attribute ``name`` (point domain; a corner attribute is averaged
    over each vertex's corners). KeyError when the mesh has no such attribute, TypeError for a type that is not
    numbers (bool, string, quaternion...)."""
    attr = mesh.attributes[name]
    if attr.data_type not in _ATTR_KINDS or attr.domain not in ("POINT", "CORNER"):
        raise TypeError(f"attribute {name!r} is {attr.data_type.lower()} on the {attr.domain.lower()} domain: only "
                        f"numbers and colours on points or face corners can be baked")
    key, c = _ATTR_KINDS[attr.data_type]
    buf = np.empty(len(attr.data) * c, dtype=np.float32)
    if buf.size:
        attr.data.foreach_get(key, buf)
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


def set_vertex_uv(mesh, name: str, uv_per_vertex: np.ndarray):
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
