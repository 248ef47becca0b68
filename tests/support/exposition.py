"""A snapshot's /metrics exposition as ``{(sample name, sorted labels): value}``, for comparing series in tests."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from exporter.snapshot import Snapshot
from exporter.web.exposition import render_snapshot

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def series_of(snapshot: Snapshot, network_processor_label: bool = False) -> Series:
    body = render_snapshot(snapshot, False, network_processor_label).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    }
