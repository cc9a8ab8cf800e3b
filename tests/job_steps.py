"""Stepping a job generator as the sidebar's modal bake steps it (Blender's event loop runs between two steps), to
check that no worker thread of the job is busy whenever it hands control back to Blender: Blender's Python API is
not thread-safe. Shared by tests/core and tests/blender."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator
from typing import Any


class Slowed:
    """``owner.name`` (a function a job runs on its threads) replaced, through pytest's ``monkeypatch``, by one that
    sleeps ``seconds`` first, so a task left running when the job yields shows. ``running``: how many calls run
    now; ``calls``: the positional arguments of every call made."""

    def __init__(self, monkeypatch: Any, owner: Any, name: str, seconds: float):
        self.running = 0
        self.calls: list[tuple] = []
        lock = threading.Lock()  # (the job's threads count at once: += is no atomic step)
        real = getattr(owner, name)

        def slow(*args, **kwargs):
            with lock:
                self.running += 1
            try:
                time.sleep(seconds)
                return real(*args, **kwargs)
            finally:
                with lock:
                    self.calls.append(args)
                    self.running -= 1

        monkeypatch.setattr(owner, name, slow)


def step(job: Generator[Any, None, Any], busy: Callable[[], bool]) -> tuple[list[bool], Any]:
    """Run ``job`` to its end one step at a time; returns whether ``busy()`` was true at each step it yielded, and
    what it returned."""
    at_yields = []
    while True:
        try:
            next(job)
        except StopIteration as stop:
            return at_yields, stop.value
        at_yields.append(busy())
