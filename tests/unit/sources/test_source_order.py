"""How the collection loop runs a cluster's sources: each after those it names, concurrently otherwise, and a
failing one reported on its own while the others still report."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter import collection
from exporter.collection import CollectionLoop
from exporter.config.settings import ClusterConfig, Settings
from exporter.snapshot import CLUSTER_BROKER, JmxReading, Reading, Snapshot, SourceResult
from exporter.sources.base import Poll, Reason, Source, SourceError, SourceName
from exporter.sources.cluster_sources import cluster_sources, jmx_transport
from exporter.web.exposition import render_snapshot

JMX_URL = "service:jmx:rmi:///jndi/rmi://127.0.0.1:1/jmxrmi"
SETTINGS = Settings.model_validate({"clusters": [{"name": "c", "brokers": [{"id": 1, "jmx_url": JMX_URL}]}]})

Read = Callable[[Mapping[SourceName, Sequence[SourceResult]]], Awaitable[Reading | None]]


def scripted(label: SourceName, read: Read, after: tuple[SourceName, ...] = (), broker: str = "1") -> Source:
    """A source of one poll whose read is `read`, called with what the loop passed as `earlier`."""

    class Scripted(Source):
        name = label

        def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
            return [Poll(broker, lambda: read(earlier))]

    return Scripted("c", after)


def run_with(monkeypatch: pytest.MonkeyPatch, sources: list[Source]) -> Snapshot:
    monkeypatch.setattr(collection, "cluster_sources", lambda cluster, settings, jmx: sources)
    loop = CollectionLoop(SETTINGS)
    # A source waiting for one that waits for it would hang the cycle; the deadline turns that into a failure.
    return asyncio.run(asyncio.wait_for(loop.run_cycle(), 5))


def test_a_source_runs_after_those_it_names_and_concurrently_with_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[SourceName, Mapping[SourceName, Sequence[SourceResult]]] = {}
    jmx_started = asyncio.Event()

    async def discover(earlier: Mapping[SourceName, Sequence[SourceResult]]) -> None:
        # Finishes only once JMX has started: JMX must not wait for discovery.
        await jmx_started.wait()

    async def read_jmx(earlier: Mapping[SourceName, Sequence[SourceResult]]) -> JmxReading:
        jmx_started.set()
        return JmxReading()

    def recorder(label: SourceName) -> Read:
        async def read(earlier: Mapping[SourceName, Sequence[SourceResult]]) -> None:
            seen[label] = earlier

        return read

    snapshot = run_with(
        monkeypatch,
        [
            scripted(SourceName.DISCOVERY, discover, broker=CLUSTER_BROKER),
            scripted(SourceName.API_VERSIONS, recorder(SourceName.API_VERSIONS), after=(SourceName.DISCOVERY,)),
            scripted(
                SourceName.CLIENT_METRICS,
                recorder(SourceName.CLIENT_METRICS),
                after=(SourceName.API_VERSIONS,),
                broker=CLUSTER_BROKER,
            ),
            scripted(SourceName.JMX, read_jmx),
        ],
    )
    assert [r.key.source for r in snapshot.results] == ["discovery", "api_versions", "client_metrics", "jmx"]
    assert all(r.ok for r in snapshot.results)
    [discovery] = seen[SourceName.API_VERSIONS][SourceName.DISCOVERY]
    assert discovery is snapshot.results[0]
    assert list(seen[SourceName.CLIENT_METRICS]) == [SourceName.API_VERSIONS]
    assert seen[SourceName.CLIENT_METRICS][SourceName.API_VERSIONS][0] is snapshot.results[1]


def test_a_failing_source_is_down_with_its_reason_and_the_others_still_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def refuse(earlier: Mapping[SourceName, Sequence[SourceResult]]) -> None:
        raise SourceError(Reason.CONNECTION, "bootstrap refused")

    async def answer(earlier: Mapping[SourceName, Sequence[SourceResult]]) -> JmxReading:
        return JmxReading()

    snapshot = run_with(
        monkeypatch,
        [
            scripted(SourceName.DISCOVERY, refuse, broker=CLUSTER_BROKER),
            scripted(SourceName.JMX, answer, after=(SourceName.DISCOVERY,)),
        ],
    )
    failed, jmx = snapshot.results
    assert (failed.ok, failed.error_reason, failed.error_message) == (False, "connection", "bootstrap refused")
    assert jmx.ok and jmx.reading == JmxReading()
    body = render_snapshot(snapshot, False, False).decode()
    series = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }
    up = "kafka_client_exporter_up"
    assert series[(up, (("broker", "bootstrap"), ("kafka_cluster", "c"), ("source", "discovery")))] == 0
    assert series[(up, (("broker", "1"), ("kafka_cluster", "c"), ("source", "jmx")))] == 1
    errors = (
        "kafka_client_exporter_errors_total",
        (("broker", "bootstrap"), ("kafka_cluster", "c"), ("reason", "connection"), ("source", "discovery")),
    )
    assert series[errors] == 1


def test_a_source_listed_before_one_it_runs_after_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    async def nothing(earlier: Mapping[SourceName, Sequence[SourceResult]]) -> None:
        return None

    sources = [
        scripted(SourceName.API_VERSIONS, nothing, after=(SourceName.DISCOVERY,)),
        scripted(SourceName.DISCOVERY, nothing),
    ]
    monkeypatch.setattr(collection, "cluster_sources", lambda cluster, settings, jmx: sources)
    with pytest.raises(ValueError, match="cluster c: source api_versions runs after discovery, not before it"):
        CollectionLoop(SETTINGS)


def cluster(**config: object) -> ClusterConfig:
    return ClusterConfig.model_validate({"name": "c", **config})


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"bootstrap_servers": ["k:9092"], "jmx": {"port": 9999}},
            [
                ("discovery", ()),
                ("api_versions", ("discovery",)),
                ("client_metrics", ("api_versions",)),
                ("jmx", ("discovery",)),  # JMX polls the brokers discovery finds
            ],
        ),
        (
            {"bootstrap_servers": ["k:9092"], "brokers": [{"id": 1, "jmx_url": JMX_URL}]},
            [
                ("discovery", ()),
                ("api_versions", ("discovery",)),
                ("client_metrics", ("api_versions",)),
                ("jmx", ()),  # listed brokers: no need to wait for discovery
            ],
        ),
        ({"brokers": [{"id": 1, "jmx_url": JMX_URL}]}, [("jmx", ())]),
        (
            {"bootstrap_servers": ["k:9092"]},
            [("discovery", ()), ("api_versions", ("discovery",)), ("client_metrics", ("api_versions",))],
        ),
    ],
)
def test_a_clusters_configuration_enables_its_sources(
    config: dict, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    sources = cluster_sources(cluster(**config), SETTINGS, jmx_transport(SETTINGS))
    try:
        assert [(s.name, s.after) for s in sources] == expected
    finally:
        for source in sources:
            source.close()
