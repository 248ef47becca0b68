"""Render each snapshot once, before it is served, in every format and encoding its scrapers ask for.

A snapshot never changes, so its exposition (Prometheus text or OpenMetrics, plain or gzip — Prometheus always asks
for gzip, and for OpenMetrics by default) is rendered when the collection loop publishes it, off the event loop,
and scrapes only copy bytes: 20 scrapers at once never wait on a render. Only the formats asked for in the last
FORMAT_KEPT_SECONDS are rendered that way (OpenMetrics with gzip before the first scrape): rendering is most of the
exporter's CPU per cycle (bench/bench_real_brokers.py), and rendering every format for every snapshot doubled it. A
format asked for the first time is rendered for that request, once per snapshot, in a worker thread. The
exporter's own process metrics (CPU, memory) change all the time and are appended per scrape, with the count of
failed collection cycles; for gzip as a second gzip member, which every gzip reader (Go's included) decodes as one
concatenated stream (RFC 1952).

What is served is decided here, per request: the latest snapshot while it is fresh, its stale view
(exporter/freshness.py) once it is older than the limit. The HTTP layer only asks.
"""

from __future__ import annotations

import functools
import gzip
import math
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client import exposition as text_format
from prometheus_client.core import Metric
from prometheus_client.openmetrics import exposition as openmetrics_format
from prometheus_client.registry import Collector

from exporter.collectors.health import cycle_failures
from exporter.collectors.snapshot_collector import FamilyGroup, KeptGroup, SnapshotCollector
from exporter.freshness import Freshness, judge_freshness, stale_view
from exporter.snapshot import Snapshot

OPENMETRICS_EOF = b"# EOF\n"
FORMAT_KEPT_SECONDS = 600.0
# (openmetrics, gzip): what Prometheus asks for unless told otherwise.
PROMETHEUS_DEFAULT = (True, True)
# Level 1: a 1.5 MB exposition compresses ~10x at a fraction of the CPU of the default level.
GZIP_LEVEL = 1


class _Families(Collector):
    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        yield from self._families


def _generate(registry: Collector, openmetrics: bool) -> bytes:
    if not openmetrics:
        return text_format.generate_latest(registry)
    # Every name and label name of the catalog is a legacy one (tests/unit/collectors/test_catalog.py), which both
    # escapings write unchanged: the same bytes. The default one rewrites each sample's name character by character
    # first: a third of a render (0.73 against 0.50 ms for the unit tests' rich snapshot).
    return openmetrics_format.generate_latest(registry, escaping=openmetrics_format.ALLOWUTF8)


class _FamilyTexts:
    """Each family's text as last rendered, by format and name, given again while the family is equal to the one it
    was rendered from. Most of a snapshot's families are the same as the last snapshot's (a connection count changes
    when a client comes or goes): comparing them costs a fraction of rendering, which escapes and formats every
    label of every sample, and the render was an eighth of the exporter's CPU on three real 4.4.0 brokers
    (bench/bench_real_brokers.py). Equal families render the same bytes: the library writes each family on its own,
    sorts a sample's labels and writes a value as the float it is equal to (the catalog sets no timestamps)."""

    def __init__(self) -> None:
        # Render threads share it without a lock: an entry is set whole, and an entry is only ever trusted after
        # comparing its family.
        self._last: dict[tuple[bool, str], tuple[Metric, bytes]] = {}

    def text(self, family: Metric, openmetrics: bool) -> bytes:
        key = (openmetrics, family.name)
        last = self._last.get(key)
        if last is not None and last[0] == family:
            return last[1]
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Families((family,)))
        text = _generate(registry, openmetrics).removesuffix(OPENMETRICS_EOF)
        self._last[key] = (family, text)
        return text


_FAMILY_TEXTS = _FamilyTexts()


def _render_families(families: Iterable[Metric], openmetrics: bool) -> bytes:
    return b"".join(_FAMILY_TEXTS.text(family, openmetrics) for family in families)


@functools.lru_cache(maxsize=8)
def _kept_text(build: Callable[[Any], Iterable[Metric]], key: Hashable, openmetrics: bool) -> bytes:
    """The text of a KeptGroup, rendered again only when its key changes (a broker restarts or leaves; the stale view
    of a snapshot has a key of its own). On three real 4.4.0 brokers the brokers' advertised API ranges are three
    quarters of the samples, and rendering them every cycle was over a quarter of the exporter's own CPU
    (bench/bench_real_brokers.py)."""
    return _render_families(build(key), openmetrics)


def _group_text(group: FamilyGroup, openmetrics: bool) -> bytes:
    if isinstance(group, KeptGroup):
        return _kept_text(group.build, group.key, openmetrics)
    return _render_families(group(), openmetrics)


def render_snapshot(snapshot: Snapshot | None, openmetrics: bool, network_processor_label: bool = False) -> bytes:
    """The snapshot's own families, without the OpenMetrics EOF marker: the same bytes as one render of them all
    (each family's text is its own), the groups that did not change since an earlier render taken as they were."""
    groups = SnapshotCollector(snapshot, network_processor_label).groups()
    return b"".join(_group_text(group, openmetrics) for group in groups)


Format = tuple[bool, bool]  # (openmetrics, gzip)


@dataclass(frozen=True, slots=True)
class _Rendered:
    """A snapshot and its bodies; a body missing when first asked for is added (several threads may add the same
    one: the same bytes, so the last write is as good as the first)."""

    snapshot: Snapshot | None  # what is rendered: the published snapshot, or its stale view
    per_processor: bool
    bodies: dict[Format, bytes]
    published: Snapshot | None  # the published snapshot it stands for

    def body(self, wanted: Format) -> bytes:
        found = self.bodies.get(wanted)
        if found is not None:
            return found
        openmetrics, compressed = wanted
        plain = self.bodies.get((openmetrics, False))
        if plain is None:
            plain = self.bodies[(openmetrics, False)] = render_snapshot(self.snapshot, openmetrics, self.per_processor)
        if not compressed:
            return plain
        packed = self.bodies[wanted] = gzip.compress(plain, GZIP_LEVEL)
        return packed


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
        # When each format was last asked for.
        self._asked: dict[Format, float] = {}
        self._current = self._render(None)
        self._stale: _Rendered | None = None

    def _render(self, snapshot: Snapshot | None) -> _Rendered:
        rendered = _Rendered(snapshot, self._per_processor, {}, snapshot)
        now = self._clock()
        recent = [wanted for wanted, at in self._asked.items() if now - at <= FORMAT_KEPT_SECONDS]
        for wanted in recent or [PROMETHEUS_DEFAULT]:
            rendered.body(wanted)
        return rendered

    def publish(self, snapshot: Snapshot) -> None:
        """Render `snapshot` (CPU-bound: call it from a worker thread), then serve it."""
        self._current = self._render(snapshot)

    def rendered(self, openmetrics: bool, compressed: bool = False) -> bool:
        """Whether `render` of this format only copies bytes (else it renders: call it from a worker thread)."""
        return (openmetrics, compressed) in self._served().bodies

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
        if stale is None or stale.published is not current.snapshot:
            # Keyed by the snapshot it withholds; only the age in the status messages changes between scrapes,
            # and the exposition does not show those.
            rendered = self._render(stale_view(current.snapshot, freshness))
            stale = self._stale = _Rendered(rendered.snapshot, self._per_processor, rendered.bodies, current.snapshot)
        return stale

    def render(self, openmetrics: bool, compressed: bool = False) -> bytes:
        """The body of one scrape; its format is rendered with each new snapshot from now on."""
        self._asked[(openmetrics, compressed)] = self._clock()
        body = self._served().body((openmetrics, compressed))
        per_scrape = _generate(self._per_scrape_registry, openmetrics)
        return body + (gzip.compress(per_scrape, GZIP_LEVEL) if compressed else per_scrape)


def negotiate(accept: str | None) -> tuple[bool, str]:
    """(openmetrics?, content type) for an Accept header, as prometheus_client's own server decides."""
    _, content_type = text_format.choose_encoder(accept or "")
    return content_type.startswith("application/openmetrics-text"), content_type


def wants_gzip(accept_encoding: str | None) -> bool:
    return any(part.split(";")[0].strip() == "gzip" for part in (accept_encoding or "").split(","))
