"""The README's "## Metrics" table lists exactly the catalog's families, each with its labels."""

from __future__ import annotations

import re
from pathlib import Path

from exporter.collectors.catalog import CATALOG, NETWORK_PROCESSOR

README = Path(__file__).resolve().parents[3] / "README.md"
OPT_IN = f" (+ {NETWORK_PROCESSOR}, opt-in)"


def metrics_table(readme: str) -> dict[str, tuple[list[str], bool]]:
    """metric name -> (labels as listed, whether network_processor is listed as opt-in)."""
    section = readme.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[list[str], bool]] = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        names_cell, labels_cell = (cell.strip() for cell in line.strip("|").split("|")[:2])
        opt_in = labels_cell.endswith(OPT_IN)
        labels = [label.strip() for label in labels_cell.removesuffix(OPT_IN).split(",") if label.strip()]
        for name in re.findall(r"`([a-z_:]+)`", names_cell):
            assert name not in rows, f"{name} is listed twice"
            rows[name] = (labels, opt_in)
    return rows


def catalog_table() -> dict[str, tuple[list[str], bool]]:
    return {
        entry.sample_name: (entry.label_names(False), entry.label_names(False) != entry.label_names(True))
        for entry in CATALOG
    }


def mismatches(readme: str) -> list[str]:
    listed, catalog = metrics_table(readme), catalog_table()
    problems = [f"{name} is missing from the README" for name in catalog if name not in listed]
    problems += [f"{name} is in the README but not in the catalog" for name in listed if name not in catalog]
    problems += [
        f"{name}: README says (labels, opt-in) {listed[name]}, the catalog {catalog[name]}"
        for name in catalog.keys() & listed.keys()
        if listed[name] != catalog[name]
    ]
    return sorted(problems)


def test_the_readme_lists_the_catalog() -> None:
    problems = mismatches(README.read_text())
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_wrong_row() -> None:
    readme = README.read_text()
    up = "| `kafka_client_exporter_up` | kafka_cluster, broker, source |"
    assert mismatches(readme.replace(up, "| `kafka_client_exporter_up` | kafka_cluster, broker |")) == [
        "kafka_client_exporter_up: README says (labels, opt-in) (['kafka_cluster', 'broker'], False), "
        "the catalog (['kafka_cluster', 'broker', 'source'], False)"
    ]
    assert mismatches(readme.replace("`kafka_broker_api_version_min`, ", "")) == [
        "kafka_broker_api_version_min is missing from the README"
    ]
    assert mismatches(readme.replace(up, up.replace("_up`", "_down`"))) == [
        "kafka_client_exporter_down is in the README but not in the catalog",
        "kafka_client_exporter_up is missing from the README",
    ]
    opt_in = "client_software_version, reason (+ network_processor, opt-in) |"
    assert mismatches(readme.replace(opt_in, "client_software_version, reason |")) == [
        "kafka_client_policy_violation_connections: README says (labels, opt-in) (['kafka_cluster', 'broker', "
        "'listener', 'client_software_name', 'client_software_version', 'reason'], False), the catalog "
        "(['kafka_cluster', 'broker', 'listener', 'client_software_name', 'client_software_version', 'reason'], True)"
    ]
