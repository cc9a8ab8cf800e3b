"""What every part of the snow core shares: its error and its limits."""

from __future__ import annotations


CHANNELS = ("R", "G", "B", "A")
FRAMINGS = ("AREA", "FOLLOW")
MAX_RESOLUTION = 8192
DEFAULT_VERTEX_BUDGET = 2_000_000


class SnowError(ValueError):
    """Invalid snow input; the message says what is wrong and what to do."""
