"""Which formats a published snapshot is rendered in before anyone asks: those scraped lately (OpenMetrics with gzip,
Prometheus' own choice, before the first scrape); another is rendered for the scrape that asks for it, then with
every snapshot until it has not been asked for in FORMAT_KEPT_SECONDS."""

from __future__ import annotations

import gzip

from exporter.web.exposition import FORMAT_KEPT_SECONDS, Exposition, render_snapshot
from tests.unit.collectors.rich_snapshot import rich_snapshot
from tests.unit.web.test_staleness import Clock

TEXT, OPENMETRICS_GZIP = (False, False), (True, True)


def test_before_any_scrape_only_what_prometheus_asks_for_is_rendered() -> None:
    exposition = Exposition(clock=Clock(1001.5))
    exposition.publish(rich_snapshot())
    assert exposition.rendered(*OPENMETRICS_GZIP)
    assert not exposition.rendered(*TEXT)


def test_a_format_asked_for_is_served_whole_then_rendered_with_each_snapshot_until_no_one_asks() -> None:
    clock = Clock(1001.5)
    exposition = Exposition(clock=clock)
    exposition.publish(rich_snapshot())
    body = exposition.render(*TEXT)
    assert body.startswith(render_snapshot(rich_snapshot(), openmetrics=False))
    assert b"process_cpu_seconds_total" in body  # the per-scrape process metrics follow the snapshot's families
    exposition.publish(rich_snapshot())
    assert exposition.rendered(*TEXT), "asked for a moment ago: rendered with the new snapshot"
    packed = exposition.render(*OPENMETRICS_GZIP)
    assert gzip.decompress(packed).startswith(render_snapshot(rich_snapshot(), openmetrics=True))

    clock.now += FORMAT_KEPT_SECONDS + 1
    exposition.render(*OPENMETRICS_GZIP)  # Prometheus keeps scraping; the text reader has gone
    exposition.publish(rich_snapshot())
    assert exposition.rendered(*OPENMETRICS_GZIP)
    assert not exposition.rendered(*TEXT)
