"""The metrics reference (docs/metrics.md), rendered from the collectors' catalog (exporter/collectors/catalog.py):
every family /metrics can serve, in exposition order, with its type, labels and HELP text, and the values of the
labels whose values the code enumerates."""

from __future__ import annotations

from docs_gen.regions import table
from exporter.collectors.catalog import CATALOG, NETWORK_PROCESSOR, Family
from exporter.sources.base import Reason, SourceName


def _labels(family: Family) -> str:
    always = family.label_names(network_processor_label=False)
    shown = ", ".join(always) if always else "(none)"
    if family.label_names(network_processor_label=True) != always:
        shown += f" (+ {NETWORK_PROCESSOR}, opt-in: `collection.network_processor_label`)"
    return shown


def rows() -> list[tuple[str, ...]]:
    return [(f"`{family.sample_name}`", family.kind.value, _labels(family), family.help) for family in CATALOG]


def render() -> str:
    values = table(
        ("label", "values"),
        [
            ("`source`", ", ".join(f"`{source}`" for source in SourceName)),
            ("`reason` (of `kafka_client_exporter_errors_total`)", ", ".join(f"`{reason}`" for reason in Reason)),
        ],
    )
    return "\n".join(
        [table(("metric", "type", "labels", "help"), rows()), "", "Label values the code enumerates:", "", values]
    )
