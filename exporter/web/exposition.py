"""Render each snapshot once, before it is served, in every format and encoding a scraper may ask for.

A snapshot never changes, so its exposition (Prometheus text and OpenMetrics, plain and gzip — Prometheus
always asks for gzip) is rendered when the collection loop publishes it, off the event loop, and scrapes only
copy bytes: 20 scrapers at once never wait on a render. The exporter's own process metrics (CPU, memory)
change all the time and are appended per scrape, with the count of failed collection cycles; for gzip as a
second gzip member, which every gzip reader (Go's included) decodes as one concatenated stream (RFC 1952).

What is served is decided here, per request: the latest snapshot while it is fresh, its stale view
(exporter/freshness.py) once it is older than the limit. The HTTP layer only asks.
"""

from __future__ import annotations

import gzip
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client import exposition as text_format
from prometheus_client.core import Metric
from prometheus_client.openmetrics import exposition as openmetrics_format
from prometheus_client.registry import Collector

from exporter.collectors.health import cycle_failures
from exporter.collectors.snapshot_collector import SnapshotCollector
from exporter.freshness import Freshness, judge_freshness, stale_view
from exporter.snapshot import Snapshot

OPENMETRICS_EOF = b"# EOF\n"
# Level 1: a 1.5 MB exposition compresses ~10x at a fraction of the CPU of the default level.
GZIP_LEVEL = 1


def render_snapshot(snapshot: Snapshot | None, openmetrics: bool, network_processor_label: bool = False) -> bytes:
    """The snapshot's own families, freshly built, without the OpenMetrics EOF marker."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot, network_processor_label))
    body = (openmetrics_format if openmetrics else text_format).generate_latest(registry)
    return body.removesuffix(OPENMETRICS_EOF)


@dataclass(frozen=True, slots=True)
class _Rendered:
    snapshot: Snapshot | None
    bodies: dict[tuple[bool, bool], bytes]  # (openmetrics, gzip) -> body


class _FailedCycles(Collector):
    def __init__(self) -> None:
        self.count = 0

    def collect(self) -> Iterator[Metric]:
        yield cycle_failures(self.count)


class Exposition:
    """The published snapshot and its pre-rendered bodies, swapped in one reference assignment; the stale view
    of a snapshot is rendered once, when it is first needed."""

    def __init__(
        self,
        network_processor_label: bool = False,
        stale_after_seconds: float = math.inf,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._per_processor = network_processor_label
        self._stale_after_seconds = stale_after_seconds
        self._clock = clock
        self._started_at = clock()
        self._failed_cycles = _FailedCycles()
        self._per_scrape_registry = CollectorRegistry(auto_describe=False)
        self._per_scrape_registry.register(self._failed_cycles)
        ProcessCollector(registry=self._per_scrape_registry)
        self._current = self._render(None)
        self._stale: _Rendered | None = None

    def _render(self, snapshot: Snapshot | None) -> _Rendered:
        bodies = {}
        for openmetrics in (False, True):
            plain = render_snapshot(snapshot, openmetrics, self._per_processor)
            bodies[(openmetrics, False)] = plain
            bodies[(openmetrics, True)] = gzip.compress(plain, GZIP_LEVEL)
        return _Rendered(snapshot, bodies)

    def publish(self, snapshot: Snapshot) -> None:
        """Render `snapshot` (CPU-bound: call it from a worker thread), then serve it."""
        self._current = self._render(snapshot)

    def count_failed_cycle(self) -> None:
        self._failed_cycles.count += 1

    @property
    def snapshot(self) -> Snapshot | None:
        """The latest published snapshot, stale or not; pages show `view()` instead."""
        return self._current.snapshot

    def freshness(self) -> Freshness:
        return judge_freshness(self._current.snapshot, self._started_at, self._stale_after_seconds, self._clock())

    def view(self) -> Snapshot | None:
        """The snapshot as every page serves it now: the latest one, or its stale view once it is too old."""
        snapshot, freshness = self._current.snapshot, self.freshness()
        if snapshot is None or not freshness.stale:
            return snapshot
        return stale_view(snapshot, freshness)

    def _served(self) -> _Rendered:
        current, freshness = self._current, self.freshness()
        if current.snapshot is None or not freshness.stale:
            return current
        stale = self._stale
        if stale is None or stale.snapshot is not current.snapshot:
            # Keyed by the snapshot it withholds; only the age in the status messages changes between scrapes,
            # and the exposition does not show those.
            rendered = self._render(stale_view(current.snapshot, freshness))
            stale = self._stale = _Rendered(current.snapshot, rendered.bodies)
        return stale

    def render(self, openmetrics: bool, compressed: bool = False) -> bytes:
        body = self._served().bodies[(openmetrics, compressed)]
        per_scrape = (openmetrics_format if openmetrics else text_format).generate_latest(self._per_scrape_registry)
        return body + (gzip.compress(per_scrape, GZIP_LEVEL) if compressed else per_scrape)


def negotiate(accept: str | None) -> tuple[bool, str]:
    """(openmetrics?, content type) for an Accept header, as prometheus_client's own server decides."""
    _, content_type = text_format.choose_encoder(accept or "")
    return content_type.startswith("application/openmetrics-text"), content_type


def wants_gzip(accept_encoding: str | None) -> bool:
    return any(part.split(";")[0].strip() == "gzip" for part in (accept_encoding or "").split(","))
