"""Polling until something the double, the brokers or the exporter do asynchronously has happened."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

#: The collection settings of a test that needs a cycle to complete, every read answered: a JMX deadline that bounds a
#: hang, not the answer. A cycle's first read starts a bridge JVM and connects it; beside the loaded suite on two
#: cores (load 13) that took over 5 s, and the double's healthy brokers read as timeouts.
SURE_CYCLE: dict[str, object] = {"interval_seconds": 60, "jmx_timeout_seconds": 45}


def wait_for(cond: Callable[[], bool], timeout: float = 15.0, what: str = "condition", interval: float = 0.05) -> None:
    """Return once ``cond()`` is true; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(interval)
    raise AssertionError(f"{what} not met within {timeout}s")


def eventually(
    check: Callable[[], T | None],
    timeout: float,
    what: str,
    poll: float = 0.25,
    context: Callable[[], str] | None = None,
) -> T:
    """``check()``'s first truthy value within ``timeout`` seconds. An OSError (a server not listening yet, an HTTP
    error) counts as not yet: the failure names ``what``, the last value or error seen and ``context()``."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            found = check()
        except OSError as exc:
            last = exc
        else:
            if found:
                return found
            last = found
        if time.monotonic() > deadline:
            more = f"\n{context()}" if context is not None else ""
            pytest.fail(f"{what}: not within {timeout:.0f} s; last: {last!r}"[:4000] + more)
        time.sleep(poll)
