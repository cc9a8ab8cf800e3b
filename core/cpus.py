"""The CPUs this process may use: how many threads the numpy work of a bake runs on at once."""

from __future__ import annotations

import os


def usable_cpus(at_most: int) -> int:
    """The CPUs this process may run on (its affinity: a farm worker pinned to some cores gets those), at least 1
    and at most ``at_most``."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (no affinity on macOS and Windows)
        n = os.cpu_count() or 1
    return max(1, min(n, int(at_most)))
