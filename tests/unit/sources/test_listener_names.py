"""When a broker's listener names (DescribeConfigs, exporter/sources/api_versions.py) are asked again: every ten
minutes while known; after a failure at the next poll, then less and less often, a minute apart at the most. A request
that timed out once on a loaded broker left its channels unread for a minute before (sixty cycles of the suite's
one-second interval)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from exporter.snapshot import BrokerFacts, BrokerListeners
from exporter.sources import api_versions
from exporter.sources.api_versions import ApiVersionsSource
from exporter.sources.base import Reason, SourceError
from exporter.sources.broker_protocol import read_broker_facts, read_broker_listeners
from exporter.sources.kafka_session import BrokerAddress

LISTENERS = BrokerListeners(inter_broker="REPLICATION", controller=None, replica_fetchers=1)
FACTS = BrokerFacts("127.0.0.1", 3, (3,), (), (), (), 0, "3.9.2")


class _Discovery:
    cluster = "prod"

    def brokers(self) -> list[BrokerAddress]:
        return [BrokerAddress(1, "127.0.0.1", 9092)]


class _Session:
    """Answers ApiVersions; DescribeConfigs fails while ``failing`` and counts each time it is asked."""

    def __init__(self) -> None:
        self.failing = True
        self.asked = 0

    async def call(self, coroutine: Any, *args: Any) -> Any:
        if coroutine is read_broker_facts:
            return FACTS
        assert coroutine is read_broker_listeners
        self.asked += 1
        if self.failing:
            raise SourceError(Reason.TIMEOUT, "Request timed out after 999 ms")
        return LISTENERS


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(api_versions.time, "monotonic", clock)
    return clock


def poll(source: ApiVersionsSource) -> BrokerListeners | None:
    [one] = source.polls({})

    async def read() -> object:
        return await one.read()

    facts = asyncio.run(read())
    assert isinstance(facts, BrokerFacts)
    return facts.listeners


def test_a_failure_is_asked_again_at_the_next_poll_then_less_often(clock: _Clock) -> None:
    session = _Session()
    source = ApiVersionsSource(_Discovery(), session)  # type: ignore[arg-type]
    asked = []
    for _ in range(16):  # one poll a second
        assert poll(source) is None
        asked.append(session.asked)
        clock.now += 1
    # Asked at polls 1 and 2, then after skipping 1, 3 and 7 polls.
    assert asked == [1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5]
    session.failing = False
    # Failing for long, it is asked a minute after the last failure at the latest, whatever the polls' pace.
    clock.now += 60
    assert poll(source) == LISTENERS
    assert session.asked == 6
    # Known: kept for ten minutes, then asked again.
    clock.now += 599
    assert poll(source) == LISTENERS
    assert session.asked == 6
    clock.now += 1
    assert poll(source) == LISTENERS
    assert session.asked == 7


def test_a_failure_after_a_success_starts_at_the_next_poll_again(clock: _Clock) -> None:
    session = _Session()
    source = ApiVersionsSource(_Discovery(), session)  # type: ignore[arg-type]
    for _ in range(4):
        poll(source)
        clock.now += 1
    session.failing = False
    clock.now += 60
    assert poll(source) == LISTENERS
    session.failing = True
    clock.now += 600
    asked = session.asked
    assert poll(source) is None
    clock.now += 1
    assert poll(source) is None
    assert session.asked == asked + 2
