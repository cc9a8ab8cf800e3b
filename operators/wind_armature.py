"""Wind data from an armature: the Blender side of ``core.wind.armature``, called by the wind bake
(``operators/wind.py bake_job``) between the geometric structure and the packing of the channels.

An asset is skinned when one of its meshes has an Armature modifier with an armature object, or has vertex groups
named after the bones of an armature in the asset (an armature among the selected objects, or the mesh's parent).
Then B and G come from the bone hierarchy (trunk bones B 0, B along each bone chain, one G per first-level branch
bone, leaves by their weights); otherwise the geometric detection stands. Either way the bake says which it used
(``WindResult.stats["from"]``). The bones are read in their rest position (``head_local`` / ``tail_local``), as the
mesh's own vertices are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast

import bpy
import numpy as np
import numpy.typing as npt

from .. import bridge
from ..core.wind import WindError
from ..core.wind import armature as core_armature
from ..core.wind.bake import BakeResult
from .common import mesh_of

FROM_GEOMETRY = "the geometry (no armature)"


class BakeReport(Protocol):
    """What ``from_armature`` writes into: the wind bake's ``operators.wind.WindResult`` (that module imports this
    one, so it is named by what it has)."""

    stats: dict[str, Any]
    skipped: dict[str, str]
    warnings: list[str]


def _armature_candidates(obj, objects) -> list:
    """(armature object, how it belongs to ``obj``) in order of precedence."""
    out = []
    for mod in obj.modifiers:
        if mod.type == "ARMATURE" and mod.object is not None and mod.object.type == "ARMATURE":
            out.append((mod.object, f"Armature modifier {mod.name!r}"))
    if obj.parent is not None and obj.parent.type == "ARMATURE":
        out.append((obj.parent, "parent armature"))
    out += [(o, "selected armature") for o in objects if o.type == "ARMATURE"]
    return out


def find_armature(meshes: Sequence[bpy.types.Object], objects: Sequence[bpy.types.Object]
                  ) -> tuple[bpy.types.Object, str] | tuple[None, None]:
    """The asset's armature object and how it was found, or (None, None). Vertex groups must name its bones (an
    Armature modifier counts even with none: its weights are then missing, which the bake refuses)."""
    for obj in meshes:
        for arm, how in _armature_candidates(obj, objects):
            bones = set(arm.data.bones.keys())
            if how.startswith("Armature modifier") or any(g.name in bones for g in obj.vertex_groups):
                return arm, how
    return None, None


def bone_arrays(arm: bpy.types.Object) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64],
                                              list[str]]:
    """World-space rest heads and tails (B, 3) and parent indices (B,) of ``arm``'s bones, and their names."""
    bones = cast(bpy.types.Armature, arm.data).bones  # (an armature object's data)
    nb = len(bones)
    heads = np.empty(nb * 3, np.float32)
    tails = np.empty(nb * 3, np.float32)
    if nb:
        bones.foreach_get("head_local", heads)
        bones.foreach_get("tail_local", tails)
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    parents = np.array([index[b.parent.name] if b.parent is not None else -1 for b in bones], np.int64)
    m = bridge.matrix_to_numpy(arm.matrix_world)
    heads = heads.reshape(nb, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    tails = tails.reshape(nb, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    return heads, tails, parents, names


BATCH = 32  # vertex groups read per evaluation (memory: vertices x BATCH floats at a time)


def read_influences(obj: bpy.types.Object, bone_names: Sequence[str], scene: bpy.types.Scene,
                    k: int = core_armature.MAX_INFLUENCES) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The skinning of ``obj`` as each vertex's ``k`` heaviest bones: (bone indices (N, k), weights (N, k)), the
    bones numbered as in ``bone_names`` (its vertex groups of those names). Read in bulk, ``BATCH`` groups at a
    time (``bridge.vertex_group_weights``)."""
    n = len(mesh_of(obj).vertices)
    idx = np.zeros((n, 0), np.int64)
    w = np.zeros((n, 0), np.float32)
    present = [(i, name) for i, name in enumerate(bone_names) if obj.vertex_groups.get(name) is not None]
    for start in range(0, len(present), BATCH):
        batch = present[start:start + BATCH]
        cols = bridge.vertex_group_weights(obj, [name for _i, name in batch], scene)
        idx, w = core_armature.merge_influences(idx, w, np.tile([i for i, _name in batch], (n, 1)), cols, k)
    return idx, w


def from_armature(scene: bpy.types.Scene, meshes: Sequence[bpy.types.Object], objects: Sequence[bpy.types.Object],
                  positions: npt.NDArray[np.float64], counts: Sequence[int], res: BakeResult, result: BakeReport
                  ) -> BakeResult:
    """The bake ``res`` with B and G from the asset's armature when it has one (else unchanged); names the source
    in ``result.stats["from"]`` and drops the armature from the objects the bake skipped (it was used). Raises
    ``WindError`` (nothing changed yet) for an armature whose bones weight no vertex."""
    arm, how = find_armature(meshes, objects)
    if arm is None:
        result.stats["from"] = FROM_GEOMETRY
        return res
    heads, tails, parents, names = bone_arrays(arm)
    if not names:
        raise WindError(f"Armature {arm.name!r} ({how}) has no bones: add bones, or remove the Armature modifier to "
                        f"bake from the geometry")
    read = [read_influences(obj, names, scene) for obj in meshes]
    k = max(r[0].shape[1] for r in read)
    idx = np.concatenate([np.pad(r[0], ((0, 0), (0, k - r[0].shape[1]))) for r in read])
    weights = np.concatenate([np.pad(r[1], ((0, 0), (0, k - r[1].shape[1]))) for r in read])
    if not (weights >= core_armature.MIN_WEIGHT).any():
        raise WindError(f"No vertex of {', '.join(o.name for o in meshes)} is weighted to a bone of armature "
                        f"{arm.name!r} ({how}): weight the mesh to its bones (Ctrl+P > With Automatic Weights, or "
                        f"Weight Paint), or remove the Armature modifier to bake the wind data from the geometry")
    wind = core_armature.armature_wind(positions, heads, tails, parents, influences=(idx, weights))
    out = core_armature.with_armature(res, wind)
    loose = int((~wind.weighted).sum())
    if loose:
        result.warnings.append(f"{loose} vertices are weighted to no bone of {arm.name!r}: they took the nearest "
                               f"bone's B and G")
    result.stats["from"] = f"the bones of armature {arm.name!r} ({how}: {core_armature.bones_text(wind)})"
    result.skipped.pop(arm.name, None)
    return out
