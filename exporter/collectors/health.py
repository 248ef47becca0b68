"""The exporter's own families: build info, per-source poll health, the age, pace and freshness of the snapshot,
and the failed cycles."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from exporter import __version__
from exporter.collectors import catalog
from exporter.snapshot import Snapshot


def build_info() -> Metric:
    build = catalog.BUILD_INFO.new()
    build.add_metric([__version__], 1)
    return build


def health_families(snapshot: Snapshot) -> Iterator[Metric]:
    up = catalog.UP.new()
    duration = catalog.COLLECT_DURATION.new()
    for result in snapshot.results:
        values = [result.key.cluster, result.key.broker, result.key.source]
        up.add_metric(values, int(result.ok))
        duration.add_metric(values, result.duration_seconds)
    errors = catalog.ERRORS.new()
    for (key, reason), count in sorted(snapshot.errors_total.items()):
        errors.add_metric([key.cluster, key.broker, key.source, reason], count)
    last_success = catalog.LAST_SUCCESS.new()
    for key, when in sorted(snapshot.last_success.items()):
        last_success.add_metric([key.cluster, key.broker, key.source], when)
    yield from (up, duration, errors, last_success)
    yield _single(catalog.SNAPSHOT_TIMESTAMP, snapshot.taken_at)
    yield _single(catalog.CYCLE_DURATION, snapshot.cycle_duration_seconds)
    yield _single(catalog.COLLECTION_INTERVAL, snapshot.interval_seconds)
    yield _single(catalog.STALE_AFTER, snapshot.stale_after_seconds)
    yield _single(catalog.SNAPSHOT_STALE, int(snapshot.stale))


def cycle_failures(count: int) -> Metric:
    """Counted by the collection loop as cycles fail, so rendered per scrape rather than from a snapshot."""
    return _single(catalog.CYCLE_FAILURES, count)


def _single(entry: catalog.Family, value: float) -> Metric:
    family = entry.new()
    family.add_metric([], value)
    return family
