"""Render snapshots in the Prometheus text and OpenMetrics formats, once per snapshot and format.

A snapshot never changes, so its rendering is cached until the next cycle: 20 scrapers at once cost one
render. The exporter's own process metrics (CPU, memory) change all the time and are appended per scrape.
"""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client import exposition as text_format
from prometheus_client.openmetrics import exposition as openmetrics_format

from exporter.metrics import SnapshotCollector
from exporter.snapshot import Snapshot

OPENMETRICS_EOF = b"# EOF\n"


class ExpositionCache:
    def __init__(self, network_processor_label: bool = False) -> None:
        self._per_processor = network_processor_label
        self._lock = threading.Lock()
        self._cache: dict[bool, tuple[int, bytes]] = {}
        self._process_registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self._process_registry)

    def render_snapshot(self, snapshot: Snapshot | None, openmetrics: bool) -> bytes:
        sequence = snapshot.sequence if snapshot else 0
        with self._lock:
            cached = self._cache.get(openmetrics)
            if cached is None or cached[0] != sequence:
                registry = CollectorRegistry(auto_describe=False)
                registry.register(SnapshotCollector(snapshot, self._per_processor))
                body = (openmetrics_format if openmetrics else text_format).generate_latest(registry)
                cached = self._cache[openmetrics] = (sequence, body.removesuffix(OPENMETRICS_EOF))
            return cached[1]

    def render(self, snapshot: Snapshot | None, openmetrics: bool) -> bytes:
        process = (openmetrics_format if openmetrics else text_format).generate_latest(self._process_registry)
        return self.render_snapshot(snapshot, openmetrics) + process


def negotiate(accept: str | None) -> tuple[bool, str]:
    """(openmetrics?, content type) for an Accept header, as prometheus_client's own server decides."""
    _, content_type = text_format.choose_encoder(accept or "")
    return content_type.startswith("application/openmetrics-text"), content_type
