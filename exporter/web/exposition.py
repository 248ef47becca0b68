"""Render each snapshot once, before it is served, in every format and encoding a scraper may ask for.

A snapshot never changes, so its exposition (Prometheus text and OpenMetrics, plain and gzip — Prometheus
always asks for gzip) is rendered when the collection loop publishes it, off the event loop, and scrapes only
copy bytes: 20 scrapers at once never wait on a render. The exporter's own process metrics (CPU, memory)
change all the time and are appended per scrape; for gzip as a second gzip member, which every gzip reader
(Go's included) decodes as one concatenated stream (RFC 1952).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client import exposition as text_format
from prometheus_client.openmetrics import exposition as openmetrics_format

from exporter.collectors.snapshot_collector import SnapshotCollector
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


class Exposition:
    """The published snapshot and its pre-rendered bodies, swapped in one reference assignment."""

    def __init__(self, network_processor_label: bool = False) -> None:
        self._per_processor = network_processor_label
        self._process_registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self._process_registry)
        self._current = self._render(None)

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

    @property
    def snapshot(self) -> Snapshot | None:
        return self._current.snapshot

    def render(self, openmetrics: bool, compressed: bool = False) -> bytes:
        body = self._current.bodies[(openmetrics, compressed)]
        process = (openmetrics_format if openmetrics else text_format).generate_latest(self._process_registry)
        return body + (gzip.compress(process, GZIP_LEVEL) if compressed else process)


def negotiate(accept: str | None) -> tuple[bool, str]:
    """(openmetrics?, content type) for an Accept header, as prometheus_client's own server decides."""
    _, content_type = text_format.choose_encoder(accept or "")
    return content_type.startswith("application/openmetrics-text"), content_type


def wants_gzip(accept_encoding: str | None) -> bool:
    return any(part.split(";")[0].strip() == "gzip" for part in (accept_encoding or "").split(","))
