"""The catalog is what /metrics really exposes: every family, in order, with its type, help text and labels."""

from __future__ import annotations

import re

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics import exposition as openmetrics_format
from prometheus_client.parser import text_string_to_metric_families

from exporter.collectors.catalog import BY_SAMPLE_NAME, CATALOG, ERRORS, Kind
from exporter.collectors.snapshot_collector import SnapshotCollector
from exporter.sources.base import Reason
from exporter.web.exposition import Exposition, render_snapshot
from tests.unit.collectors.rich_snapshot import rich_snapshot


@pytest.mark.parametrize("per_processor", [False, True])
def test_the_exposition_is_the_catalog_in_order(per_processor: bool) -> None:
    exposition = Exposition(network_processor_label=per_processor)
    exposition.publish(rich_snapshot())
    body = exposition.render(openmetrics=False).decode()
    # prometheus_client's process_* families follow ours and are not in the catalog.
    exposed = [f for f in text_string_to_metric_families(body) if not f.name.startswith("process_")]
    assert [(f.name, f.type, f.documentation) for f in exposed] == [(e.name, e.kind, e.help) for e in CATALOG]
    for family, entry in zip(exposed, CATALOG, strict=True):
        assert family.samples, f"the rich snapshot leaves {entry.name} empty"
        for sample in family.samples:
            assert sample.name == entry.sample_name
            assert set(sample.labels) == set(entry.label_names(per_processor)), sample


def test_without_a_snapshot_only_build_info_is_exposed() -> None:
    body = render_snapshot(None, openmetrics=False).decode()
    assert [f.name for f in text_string_to_metric_families(body)] == [CATALOG[0].name]


def test_only_the_client_families_make_network_processor_opt_in() -> None:
    opt_in = {e.sample_name for e in CATALOG if e.label_names(False) != e.label_names(True)}
    assert opt_in == {"kafka_client_connections", "kafka_client_policy_violation_connections"}


def test_counters_are_selected_with_total_and_gauges_as_named() -> None:
    assert BY_SAMPLE_NAME["kafka_client_exporter_errors_total"] is ERRORS
    assert all(name.endswith("_total") == (e.kind is Kind.COUNTER) for name, e in BY_SAMPLE_NAME.items())


def test_the_errors_help_lists_every_reason_in_order() -> None:
    listed = ERRORS.help.removeprefix("Failed polls by reason (").removesuffix(").").split(", ")
    assert listed == [reason.value for reason in Reason]


LEGACY_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LEGACY_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@pytest.mark.parametrize("per_processor", [False, True])
def test_every_name_is_a_legacy_one_so_the_openmetrics_escapings_agree(per_processor: bool) -> None:
    """The exposition renders OpenMetrics with the allow-utf-8 escaping for speed: the same bytes as the library's
    default only while no name needs escaping."""
    for entry in CATALOG:
        assert LEGACY_METRIC_NAME.fullmatch(entry.sample_name), entry.sample_name
        assert all(LEGACY_LABEL_NAME.fullmatch(label) for label in entry.label_names(per_processor)), entry.labels
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(rich_snapshot(), per_processor))
    default = openmetrics_format.generate_latest(registry).removesuffix(b"# EOF\n")
    assert render_snapshot(rich_snapshot(), openmetrics=True, network_processor_label=per_processor) == default
