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


def get_edges(mesh) -> np.ndarray:
    """(E, 2) int32 vertex indices of a mesh's edges."""
    buf = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    if buf.size:
        mesh.edges.foreach_get("vertices", buf)
    return buf.reshape(-1, 2)


def world_positions(obj) -> np.ndarray:
    """(N, 3) float64 world positions of the vertices of a mesh object's own mesh (no modifiers)."""
    m = matrix_to_numpy(obj.matrix_world)
    return get_positions(obj.data).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


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


def get_image_pixels(image) -> np.ndarray:
    """(width * height * channels,) float32 pixels of an image, as ``image.pixels`` holds them (rows from the
    bottom, channels interleaved)."""
    w, h = image.size
    buf = np.empty(w * h * image.channels, dtype=np.float32)
    image.pixels.foreach_get(buf)
    return buf


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
