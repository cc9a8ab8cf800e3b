"""Export layouts of the baked wind data: which value goes to which channel of the vertex colour."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .bake import BakeResult
from .params import WindError

LAYOUTS = ("HZD", "CRYENGINE", "CUSTOM")
SOURCES = ("LEAF", "BRANCH_PHASE", "BRANCH", "AO", "HEIGHT", "LEAF_PHASE", "ZERO", "ONE")
HZD_LAYOUT = ("LEAF", "BRANCH_PHASE", "BRANCH", "AO")
CRYENGINE_LAYOUT = ("LEAF", "LEAF_PHASE", "BRANCH", "AO")


def pack_channels(result: BakeResult, ao: npt.ArrayLike | None = None, layout: str = "HZD",
                  custom: Sequence[str] | None = None) -> npt.NDArray[np.float32]:
    """(N, 4) float32 RGBA in an export layout: HZD (R leaf, G branch phase, B branch, A AO), CRYENGINE
    (R edge stiffness = leaf, G per-leaf phase, B overall stiffness = branch, A AO) or CUSTOM (four names
    from ``SOURCES``)."""
    n = len(result.height)
    ao = np.ones(n, np.float32) if ao is None else np.asarray(ao, np.float32).reshape(n)
    names: tuple[str, ...]
    if layout == "HZD":
        names = HZD_LAYOUT
    elif layout == "CRYENGINE":
        names = CRYENGINE_LAYOUT
    elif layout == "CUSTOM":
        names = tuple(custom or ())
        if len(names) != 4 or any(s not in SOURCES for s in names):
            raise WindError(f"Custom channel mapping {names!r} needs four of {', '.join(SOURCES)}")
    else:
        raise WindError(f"Unknown channel layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    src = {
        "LEAF": result.leaf, "BRANCH_PHASE": result.phase, "BRANCH": result.branch, "AO": ao,
        "HEIGHT": result.height, "LEAF_PHASE": result.leaf_phase,
        "ZERO": np.zeros(n, np.float32), "ONE": np.ones(n, np.float32),
    }
    return np.stack([src[s] for s in names], axis=1).astype(np.float32)

