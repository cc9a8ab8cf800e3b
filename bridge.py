"""The one place that moves data between Blender and numpy (bulk attribute access, matrices)."""

from __future__ import annotations

import bpy
import numpy as np

# Object types that can carry a geometry-nodes modifier and hold geometry worth deforming.
GEOMETRY_TYPES = {"MESH", "CURVE", "CURVES", "POINTCLOUD"}


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


def is_linked(obj) -> bool:
    """Library data (or an override of it) cannot take new modifiers here."""
    return obj.library is not None or obj.override_library is not None
