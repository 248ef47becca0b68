"""The brokers' advertised API ranges and feature levels are rendered again only when they change: the bytes are
always those of a whole render of the snapshot served, and a broker that restarts into another release shows its
new ranges at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from exporter.collectors import snapshot_collector
from exporter.collectors.brokers import AdvertisedKey
from exporter.collectors.snapshot_collector import SnapshotCollector
from exporter.snapshot import BrokerFacts, Snapshot
from exporter.web import exposition
from exporter.web.exposition import OPENMETRICS_EOF, render_snapshot
from tests.unit.collectors.rich_snapshot import rich_snapshot


def _whole(snapshot: Snapshot | None, openmetrics: bool) -> bytes:
    """One render of every family at once by the library, nothing kept."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot))
    return exposition._generate(registry, openmetrics).removesuffix(OPENMETRICS_EOF)


def _with_produce_max(snapshot: Snapshot, max_version: int) -> Snapshot:
    """The snapshot with its first broker's Produce range ending at ``max_version`` (a restart into another release)."""
    results = list(snapshot.results)
    index = next(i for i, r in enumerate(results) if isinstance(r.reading, BrokerFacts))
    facts = results[index].reading
    assert isinstance(facts, BrokerFacts)
    apis = tuple(dataclasses.replace(api, max_version=max_version) if api.api_key == 0 else api for api in facts.apis)
    assert apis != facts.apis, "the rich snapshot's broker advertises Produce"
    results[index] = dataclasses.replace(results[index], reading=dataclasses.replace(facts, apis=apis))
    return dataclasses.replace(snapshot, results=tuple(results))


@pytest.mark.parametrize("openmetrics", [False, True])
def test_kept_ranges_are_served_only_while_they_are_the_brokers_own(openmetrics: bool, monkeypatch) -> None:
    built: list[object] = []
    original = snapshot_collector.advertised_families

    def counting(key: AdvertisedKey) -> Iterator[Metric]:
        built.append(key)
        return original(key)

    monkeypatch.setattr(snapshot_collector, "advertised_families", counting)
    first = rich_snapshot()
    assert render_snapshot(first, openmetrics) == _whole(first, openmetrics)
    rendered_before = len(built)

    # The next cycle: other client counts, the same ranges: not rendered again, the same bytes as a whole render.
    again = dataclasses.replace(first, sequence=first.sequence + 1)
    assert render_snapshot(again, openmetrics) == _whole(again, openmetrics)
    assert len(built) == rendered_before + 1  # only _whole's own

    # A broker restarted into another release: its new range is served in the very next render.
    restarted = _with_produce_max(first, 99)
    body = render_snapshot(restarted, openmetrics)
    assert body == _whole(restarted, openmetrics)
    assert b'kafka_broker_api_version_max{api="Produce",broker="1",kafka_cluster="prod"} 99.0' in body
    assert b'kafka_broker_api_version_max{api="Produce",broker="1",kafka_cluster="prod"} 12.0' in render_snapshot(
        first, openmetrics
    )


def test_a_snapshot_without_brokers_renders_as_before() -> None:
    assert render_snapshot(None, True) == _whole(None, True)
