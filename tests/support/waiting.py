"""Polling until something the double or the exporter does asynchronously has happened."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(cond: Callable[[], bool], timeout: float = 15.0, what: str = "condition", interval: float = 0.05) -> None:
    """Return once ``cond()`` is true; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(interval)
    raise AssertionError(f"{what} not met within {timeout}s")
