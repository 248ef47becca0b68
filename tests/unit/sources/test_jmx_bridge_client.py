"""The bridge client against a stand-in bridge (a small Python program speaking the same JSON lines): answers are
matched by id, a dead or silent bridge fails its reads with reason jmx_bridge and is replaced on the next read."""

from __future__ import annotations

import asyncio
import gc
import os
import re
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from exporter.sources.base import Reason
from exporter.sources.jmx import JavaRuntime, JmxError, JmxTarget
from exporter.sources.jmx_bridge import STALL_SECONDS, START_ALLOWANCE_SECONDS, JmxBridge

# argv: [script, mode, marker, <the bridge's JVM options and arguments>]. Says it is ready, as the bridge does once
# its JVM started, then answers in reverse order of arrival ("pairs"), so matching by id is tested; "die-once" exits
# on its first request while the marker is absent; "slow-start" is ready only after a second, as a JVM starting on a
# loaded machine; "mute" never says it is ready; "silent" answers nothing.
STAND_IN = textwrap.dedent(
    """
    import json, os, sys, time
    mode, marker = sys.argv[1], sys.argv[2]
    if mode == "slow-start":
        time.sleep(1.0)
    if mode != "mute":
        print(json.dumps({"ready": True}), flush=True)
    held = []
    for line in sys.stdin:
        request = json.loads(line)
        if mode in ("silent", "mute"):
            continue
        if mode == "die-once" and not os.path.exists(marker):
            open(marker, "w").close()
            sys.exit(3)
        if request["broker"] == "c/bad":
            answer = {"id": request["id"], "error": "connection", "message": "refused " + str(request["password"])}
        else:
            answer = {"id": request["id"], "items": [{"mBeanName": request["broker"], "value": 1}]}
        held.append(answer)
        if len(held) == 2 or mode != "pairs":
            for answer in reversed(held):
                print(json.dumps(answer), flush=True)
            held.clear()
    """
)


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[Callable[..., JmxBridge]]:
    script = tmp_path / "bridge.py"
    script.write_text(STAND_IN)
    bridges: list[JmxBridge] = []

    def make(
        mode: str, start_allowance_seconds: float = START_ALLOWANCE_SECONDS, stall_seconds: float = STALL_SECONDS
    ) -> JmxBridge:
        java = JavaRuntime(sys.executable, (str(script), mode, str(tmp_path / "died")))
        bridge = JmxBridge(
            java, 2, 1.0, 60, start_allowance_seconds=start_allowance_seconds, stall_seconds=stall_seconds
        )
        bridges.append(bridge)
        return bridge

    yield make
    for bridge in bridges:
        bridge.close()


def test_answers_are_matched_by_id_and_errors_keep_no_password(stand_in: Callable[..., JmxBridge]) -> None:
    bridge = stand_in("pairs")

    async def cycle() -> list[object]:
        return await asyncio.gather(
            bridge.read("c/1", JmxTarget("u1"), 1.0),
            bridge.read("c/bad", JmxTarget("u2", "admin", "s3cret"), 1.0),
            return_exceptions=True,
        )

    first, second = asyncio.run(cycle())
    assert first == [{"mBeanName": "c/1", "value": 1}]
    assert isinstance(second, JmxError) and second.reason == Reason.CONNECTION
    assert "s3cret" not in str(second) and "refused ***" in str(second)


def test_a_bridge_that_dies_fails_its_reads_and_the_next_read_gets_a_new_one(
    stand_in: Callable[..., JmxBridge],
) -> None:
    bridge = stand_in("die-once")
    # A deadline far beyond the stand-in's start: on a loaded machine (load 20 on two cores) a 1 s one was lost to the
    # start itself (TIMEOUT), which is not what this test is about. The stand-in dies or answers at once.
    with pytest.raises(JmxError) as excinfo:
        asyncio.run(bridge.read("c/1", JmxTarget("u1"), 30.0))
    assert excinfo.value.reason == Reason.JMX_BRIDGE
    assert "exited (code 3)" in str(excinfo.value)
    assert asyncio.run(bridge.read("c/1", JmxTarget("u1"), 30.0)) == [{"mBeanName": "c/1", "value": 1}]


def test_a_silent_bridge_is_killed_and_replaced_once_silent_for_the_stall_allowance(
    stand_in: Callable[..., JmxBridge],
) -> None:
    bridge = stand_in("silent", stall_seconds=2.0)
    # Ready, then nothing. Within the allowance a read just times out and the bridge lives on: a JVM starved of CPU
    # misses a short deadline's answers, and restarting it into the same starvation only repeats that. Past it, the
    # bridge is stuck (it answers every read by its deadline, a slow broker's too).
    reasons, pids = [], []
    for _ in range(10):
        pids.append(bridge.pid)
        with pytest.raises(JmxError) as excinfo:
            asyncio.run(bridge.read("c/1", JmxTarget("u1"), 0.5))
        reasons.append(excinfo.value.reason)
        if excinfo.value.reason != Reason.TIMEOUT:
            break
    assert reasons[0] == Reason.TIMEOUT and reasons[-1] == Reason.JMX_BRIDGE, reasons
    assert set(reasons[:-1]) == {Reason.TIMEOUT} and len(set(pids[1:])) == 1  # one bridge until then
    assert re.search(r"answered nothing for (2|3)\.\d s", str(excinfo.value)), excinfo.value
    assert bridge.pid is None  # killed; the next read starts another


def test_a_bridge_that_never_says_it_is_ready_is_killed_after_the_start_allowance(
    stand_in: Callable[..., JmxBridge],
) -> None:
    bridge = stand_in("mute", start_allowance_seconds=1.0)
    with pytest.raises(JmxError) as excinfo:
        asyncio.run(bridge.read("c/1", JmxTarget("u1"), 0.5))
    assert excinfo.value.reason == Reason.JMX_BRIDGE
    assert "did not start within 1 s" in str(excinfo.value)
    assert bridge.pid is None


def test_missing_java_is_reported() -> None:
    bridge = JmxBridge(JavaRuntime("/nonexistent/java"), 2, 1.0, 60)
    with pytest.raises(JmxError) as excinfo:
        asyncio.run(bridge.read("c/1", JmxTarget("u1"), 1.0))
    assert excinfo.value.reason == Reason.JAVA_NOT_FOUND


def test_reads_sent_while_the_bridge_starts_get_their_whole_deadline_once_it_is_ready(
    stand_in: Callable[..., JmxBridge],
) -> None:
    bridge = stand_in("slow-start")

    async def cycle() -> list[object]:
        return await asyncio.gather(
            bridge.read("c/1", JmxTarget("u1"), 0.5), bridge.read("c/2", JmxTarget("u2"), 0.5), return_exceptions=True
        )

    # A start twice as long as their deadline: not the brokers' time (it failed every broker of the first cycle).
    assert asyncio.run(cycle()) == [[{"mBeanName": "c/1", "value": 1}], [{"mBeanName": "c/2", "value": 1}]]
    started = bridge.pid
    assert started is not None
    assert asyncio.run(bridge.read("c/1", JmxTarget("u1"), 5.0)) == [{"mBeanName": "c/1", "value": 1}]
    assert bridge.pid == started


def test_pending_brokers_are_the_reads_still_waiting_for_an_answer(stand_in: Callable[..., JmxBridge]) -> None:
    bridge = stand_in("pairs")  # holds the first answer until a second request arrives

    async def cycle() -> tuple[list[str], list[str], object]:
        first = asyncio.create_task(bridge.read("c/1", JmxTarget("u1"), 5.0))
        deadline = asyncio.get_running_loop().time() + 5
        while bridge.pending_brokers() != ["c/1"]:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        waiting = bridge.pending_brokers()
        second = await bridge.read("c/2", JmxTarget("u2"), 5.0)
        await first
        return waiting, bridge.pending_brokers(), second

    waiting, after, second = asyncio.run(cycle())
    assert waiting == ["c/1"]
    assert after == []  # answered, and a read that ends leaves no entry
    assert second == [{"mBeanName": "c/2", "value": 1}]


def test_a_read_cancelled_as_its_bridge_exits_leaves_no_failure_unretrieved(
    stand_in: Callable[..., JmxBridge], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The exporter stopping while its bridge is killed: the bridge's reader thread fails the reads it still lists,
    # and a read cancelled at that moment is gone before its failure lands. asyncio then logged "Future exception
    # was never retrieved" for JmxError('the JMX bridge exited (code -9) ...') at a suite run's teardown.
    failed = threading.Event()
    queue_failure = JmxBridge._call

    def call(pending: object, items: object, error: object) -> None:
        queue_failure(pending, items, error)  # type: ignore[arg-type]
        failed.set()

    monkeypatch.setattr(JmxBridge, "_call", staticmethod(call))
    bridge = stand_in("mute")  # never ready: the read waits for its start
    unretrieved: list[dict[str, object]] = []

    async def cycle() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
        read = asyncio.create_task(bridge.read("c/1", JmxTarget("u1"), 30.0))
        deadline = loop.time() + 30
        while bridge.pending_brokers() != ["c/1"]:
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        pid = bridge.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        # Not yielding to the loop: the thread queues the read's failure before the cancellation below.
        assert failed.wait(30)
        read.cancel()
        with pytest.raises(asyncio.CancelledError):
            await read
        del read
        gc.collect()

    asyncio.run(cycle())
    gc.collect()
    assert unretrieved == []
