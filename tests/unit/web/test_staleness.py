"""Staleness is visible and bounded: once no cycle has completed within collection.stale_after_intervals
intervals, /healthz fails and nothing serves the old snapshot's client or broker facts as current."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from exporter import collection
from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from exporter.freshness import STALE_REASON, judge_freshness, stale_view
from exporter.snapshot import ClientConnections, JmxReading, SourceResult
from exporter.sources.base import Poll, Source, SourceName
from exporter.web.app import make_app
from exporter.web.exposition import Exposition
from tests.unit.collectors.rich_snapshot import rich_snapshot

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def series_of(body: bytes) -> Series:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def names(series: Series) -> set[str]:
    return {name for name, _ in series}


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- the decision ------------------------------------------------------------------------------------------


def test_the_age_counts_from_the_last_completed_cycle_or_from_start_up() -> None:
    snapshot = rich_snapshot()  # taken at 1001.5
    assert judge_freshness(snapshot, 0.0, 90.0, 1091.5).stale is False  # exactly at the limit: still fresh
    late = judge_freshness(snapshot, 0.0, 90.0, 1092.0)
    assert late.stale and late.describe() == "the last completed collection cycle is 90 s old"
    never = judge_freshness(None, 500.0, 90.0, 600.0)
    assert never.stale and never.describe() == "no collection cycle has completed in the 100 s since start-up"
    assert not judge_freshness(None, 500.0, 90.0, 590.0).stale


def test_the_stale_view_keeps_the_exporters_own_health_and_nothing_else() -> None:
    snapshot = rich_snapshot()
    view = stale_view(snapshot, judge_freshness(snapshot, 0.0, 90.0, 1200.0))
    assert view.stale and not snapshot.stale
    assert view.clients == () and list(view.readings(JmxReading)) == []
    assert [r.key for r in view.results] == [r.key for r in snapshot.results]
    assert all(not r.ok and r.error_reason == STALE_REASON and r.reading is None for r in view.results)
    assert view.results[0].error_message == (
        "the last completed collection cycle is 198 s old, over the 90 s limit: its data is withheld"
    )
    # Counters, last successes and the snapshot's own time stay: the age and the history remain visible.
    assert (view.taken_at, view.errors_total, view.last_success, view.folded_total) == (
        snapshot.taken_at,
        snapshot.errors_total,
        snapshot.last_success,
        snapshot.folded_total,
    )


def test_the_exposition_serves_the_stale_view_once_the_snapshot_is_too_old() -> None:
    clock = Clock(1001.5)
    exposition = Exposition(stale_after_seconds=90.0, clock=clock)
    exposition.publish(rich_snapshot())
    fresh = series_of(exposition.render(openmetrics=False))
    withheld = {"kafka_client_connections", "kafka_client_upgrade_blocking_requests_total", "kafka_broker_release_info"}
    assert withheld <= names(fresh)
    assert fresh[("kafka_client_exporter_snapshot_stale", ())] == 0

    clock.now += 91
    for openmetrics in (False, True):
        stale = series_of(exposition.render(openmetrics))
        assert not names(stale) & {
            "kafka_client_connections",
            "kafka_client_policy_violation_connections",
            "kafka_client_deprecated_requests_total",
            "kafka_client_upgrade_blocking_requests_total",
            "kafka_broker_release_info",
            "kafka_broker_api_version_max",
            "kafka_client_metrics_subscriptions",
            "kafka_client_exporter_api_supported",
        }
        ups = {labels: value for (name, labels), value in stale.items() if name == "kafka_client_exporter_up"}
        assert len(ups) == len(rich_snapshot().results) and set(ups.values()) == {0}
        assert stale[("kafka_client_exporter_snapshot_stale", ())] == 1
        assert stale[("kafka_client_exporter_snapshot_timestamp_seconds", ())] == 1001.5
        assert stale[("kafka_client_exporter_stale_after_seconds", ())] == 90
        errors = [(n, labels) for n, labels in stale if n == "kafka_client_exporter_errors_total"]
        assert len(errors) == 2  # the counters as they were

    exposition.publish(rich_snapshot())  # a cycle completes again (same time: the clock is what moved)
    clock.now = 1001.5
    assert "kafka_client_connections" in names(series_of(exposition.render(openmetrics=False)))


def test_the_configured_limit_is_a_number_of_intervals() -> None:
    settings = Settings.model_validate(
        {"clusters": [{"name": "c", "bootstrap_servers": ["k:1"]}], "collection": {"interval_seconds": 20}}
    )
    assert settings.collection.stale_after_seconds == 60
    with pytest.raises(ValueError, match=r"stale_after_intervals\n  Input should be greater than 1"):
        Settings.model_validate(
            {"clusters": [{"name": "c", "bootstrap_servers": ["k:1"]}], "collection": {"stale_after_intervals": 1}}
        )


# -- every cycle raises, served as `serve` serves it -------------------------------------------------------

SETTINGS = Settings.model_validate(
    {
        "clusters": [{"name": "c", "brokers": [{"id": 1, "jmx_url": "service:jmx:rmi:///jndi/rmi://h:1/jmxrmi"}]}],
        # Real cycles every 20 ms; the staleness limit (60 ms) is judged on the injected clock.
        "collection": {"interval_seconds": 0.02, "stale_after_intervals": 3},
    }
)


class BrokenAfterFirstCycle(Source):
    """Reads one client in the first cycle; every later read hits a bug (not a SourceError): the cycle raises."""

    name = SourceName.JMX

    def __init__(self) -> None:
        super().__init__("c")
        self.reads = 0

    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        return [Poll("1", self._read)]

    async def _read(self) -> JmxReading:
        self.reads += 1
        if self.reads > 1:
            raise RuntimeError("a bug in the exporter")
        return JmxReading(clients=(ClientConnections("PLAINTEXT", "0", "librdkafka", "2.3.0", 4),))


async def wait_for(condition: object, what: str) -> None:
    for _ in range(500):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def test_when_every_cycle_raises_healthz_fails_and_no_client_series_are_served(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    source = BrokenAfterFirstCycle()
    monkeypatch.setattr(collection, "cluster_sources", lambda cluster, settings, jmx: [source])
    clock = Clock(5000.0)
    exposition = Exposition(stale_after_seconds=SETTINGS.collection.stale_after_seconds, clock=clock)
    loop = CollectionLoop(
        SETTINGS, publish=exposition.publish, clock=clock, count_failed_cycle=exposition.count_failed_cycle
    )

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(loop.run_forever(stop))
        async with TestClient(TestServer(make_app(exposition, lambda: not task.done()))) as client:

            async def get(path: str) -> tuple[int, str]:
                response = await client.get(path)
                return response.status, await response.text()

            await wait_for(lambda: source.reads >= 4, "three failed cycles after the first")
            # Within the limit the last good snapshot is served, and the failures are counted.
            status, body = await get("/metrics")
            series = series_of(body.encode())
            assert series[("kafka_client_exporter_cycle_failures_total", ())] >= 3
            assert "kafka_client_connections" in names(series)
            assert (await get("/healthz"))[0] == 200

            clock.now += 0.5  # no cycle completes while the clock moves past the 60 ms limit
            status, text = await get("/healthz")
            assert (status, text) == (
                503,
                "stale: the last completed collection cycle is 0 s old, over the 0.06 s limit "
                "(collection.stale_after_intervals)\n",
            )
            series = series_of((await get("/metrics"))[1].encode())
            assert "kafka_client_connections" not in names(series)
            up = ("kafka_client_exporter_up", (("broker", "1"), ("kafka_cluster", "c"), ("source", "jmx")))
            assert series[up] == 0
            assert series[("kafka_client_exporter_snapshot_stale", ())] == 1
            assert series[("kafka_client_exporter_snapshot_timestamp_seconds", ())] == 5000.0
            # Still ready: a pod taken out of the Service would stop being scraped, and the alert with it.
            assert (await get("/readyz"))[0] == 200
            page = (await get("/"))[1]
            assert "id='stale'" in page and "librdkafka" not in page
            assert await (await client.get("/api/client-metrics")).json() == {}
            stop.set()
            await task

    with caplog.at_level(logging.INFO, logger="exporter.collection"):
        asyncio.run(scenario())
    failures = [r for r in caplog.records if r.name == "exporter.collection" and r.levelno == logging.ERROR]
    # The traceback once; then one line per failed cycle.
    assert failures[0].exc_info is not None and all(r.exc_info is None for r in failures[1:])
    assert failures[1].getMessage() == "collection cycle failed again (2 in a row): RuntimeError: a bug in the exporter"


def test_healthz_fails_when_the_first_cycle_never_completes() -> None:
    clock = Clock(100.0)
    exposition = Exposition(stale_after_seconds=90.0, clock=clock)

    async def probe() -> list[tuple[int, str]]:
        async with TestClient(TestServer(make_app(exposition, lambda: True))) as client:
            statuses = []
            for advance in (90.0, 1.0):
                clock.now += advance
                response = await client.get("/healthz")
                statuses.append((response.status, await response.text()))
            return statuses

    assert asyncio.run(probe()) == [
        (200, "ok\n"),
        (
            503,
            "stale: no collection cycle has completed in the 91 s since start-up, over the 90 s limit "
            "(collection.stale_after_intervals)\n",
        ),
    ]
