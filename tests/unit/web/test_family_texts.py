"""A family is rendered again only when it differs from the one its last text came from: every body is the bytes
one render of the whole snapshot by prometheus_client makes, whatever was rendered before it, in both formats."""

from __future__ import annotations

import dataclasses

import pytest
from prometheus_client import CollectorRegistry

from exporter.collectors.snapshot_collector import SnapshotCollector
from exporter.freshness import Freshness, stale_view
from exporter.snapshot import Snapshot
from exporter.web import exposition
from exporter.web.exposition import OPENMETRICS_EOF, render_snapshot
from tests.unit.collectors.rich_snapshot import rich_snapshot


def _library(snapshot: Snapshot | None, openmetrics: bool, per_processor: bool = False) -> bytes:
    """The whole snapshot in one call of the library, nothing kept."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot, per_processor))
    return exposition._generate(registry, openmetrics).removesuffix(OPENMETRICS_EOF)


def _with_connections(snapshot: Snapshot, index: int, connections: int) -> Snapshot:
    clients = list(snapshot.clients)
    clients[index] = dataclasses.replace(clients[index], connections=connections)
    return dataclasses.replace(snapshot, clients=tuple(clients))


@pytest.mark.parametrize("openmetrics", [False, True])
def test_every_body_is_the_librarys_own_whatever_came_before(openmetrics: bool) -> None:
    first = rich_snapshot()
    more = _with_connections(first, 0, 4321)
    fewer = _with_connections(more, 2, 0)
    stale = stale_view(more, Freshness(95.0, 60.0, True))
    # Each after the others: a count up, one down to 0, back to the first, its stale view, per network processor.
    for snapshot, per_processor in [
        (first, False),
        (more, False),
        (fewer, False),
        (first, False),
        (stale, False),
        (first, True),
        (first, False),
        (None, False),
    ]:
        assert render_snapshot(snapshot, openmetrics, per_processor) == _library(snapshot, openmetrics, per_processor)
    assert render_snapshot(more, openmetrics) != render_snapshot(first, openmetrics)  # the change is served


def test_only_the_families_that_changed_are_rendered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[str] = []
    generate = exposition._generate

    def counting(registry: CollectorRegistry, openmetrics: bool) -> bytes:
        rendered.extend(family.name for family in registry.collect())
        return generate(registry, openmetrics)

    monkeypatch.setattr(exposition, "_generate", counting)
    first = rich_snapshot()
    render_snapshot(first, True)
    rendered.clear()
    render_snapshot(dataclasses.replace(first, sequence=first.sequence + 1), True)
    assert rendered == []  # nothing differs but the sequence number, which no family shows
    render_snapshot(_with_connections(first, 0, 4321), True)
    assert rendered and all(name.startswith("kafka_client") for name in rendered), rendered
    assert len(rendered) < len(list(SnapshotCollector(first).collect())) / 4
