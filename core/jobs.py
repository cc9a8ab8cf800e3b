"""Long work written as job generators (see progress.py: they yield fractions in [0, 1] between steps and return
their result), for core's modules, which do not import bpy."""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

T = TypeVar("T")


def finish(job: Generator[float, None, T]) -> T:
    """Run ``job`` to its end and return its result (the plain call beside a job generator)."""
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return stop.value


def within(job: Generator[float, None, T], start: float, span: float) -> Generator[float, None, T]:
    """``job`` as the part ``[start, start + span]`` of a larger job: its fractions mapped there; returns its
    result."""
    while True:
        try:
            fraction = next(job)
        except StopIteration as stop:
            return stop.value
        yield start + span * fraction
