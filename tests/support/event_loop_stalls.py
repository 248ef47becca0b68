"""A collection cycle and how late the event loop ran during it: what a busy machine, or a fork of the bridge's JVM,
adds to every deadline the loop enforces, measured instead of guessed."""

from __future__ import annotations

import asyncio
import time

from exporter.collection import CollectionLoop
from exporter.snapshot import Snapshot


async def cycle_and_stall(loop: CollectionLoop) -> tuple[Snapshot, float]:
    """One cycle, and the event loop's longest stall during it."""
    late = [0.0]
    ticker = asyncio.create_task(_tick(late))
    try:
        return await loop.run_cycle(), late[0]
    finally:
        ticker.cancel()


async def _tick(late: list[float]) -> None:
    """How late the event loop woke a task asking for 50 ms, at most (late[0])."""
    while True:
        due = time.monotonic() + 0.05
        await asyncio.sleep(0.05)
        late[0] = max(late[0], time.monotonic() - due)
