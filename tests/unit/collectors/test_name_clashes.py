"""No metric name of ours is one that another Kafka exporter exports: Prometheus would keep both under one name, and
every query, dashboard and alert that selects it would mix the two (kafka_exporter's `kafka_broker_info` once made
KafkaBrokerReleaseSkew fire forever). The other projects' names are read from their sources; see the data file."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from exporter.collectors.catalog import CATALOG, Kind

OTHER_EXPORTERS = yaml.safe_load((Path(__file__).parent / "other_exporters_names.yaml").read_text())


def our_names() -> list[str]:
    """Every series name our families can produce, including the `_created` a counter may carry."""
    names = [family.sample_name for family in CATALOG]
    names += [f"{family.name}_created" for family in CATALOG if family.kind is Kind.COUNTER]
    return names


def clashes(names: Iterable[str]) -> list[str]:
    """`name: project (name or pattern)` for every name another project exports too."""
    found = []
    for name in names:
        for project, entry in OTHER_EXPORTERS.items():
            if name in entry.get("names", []):
                found.append(f"{name}: {project} exports it")
            found += [
                f"{name}: {project} pattern {pattern}"
                for pattern in entry.get("patterns", [])
                if re.fullmatch(pattern, name)
            ]
    return found


def test_no_name_of_ours_is_another_exporters() -> None:
    assert clashes(our_names()) == []


@pytest.mark.parametrize(
    ("name", "project"),
    [
        ("kafka_broker_info", "danielqsj/kafka_exporter"),  # our name until kafka_broker_release_info
        ("kafka_server_socket_server_metrics_connections_software", "strimzi/strimzi-kafka-operator"),
        ("kafka_network_requestmetrics_deprecatedrequestspersec_count", "confluentinc/jmx-monitoring-stacks"),
        ("kafka_consumergroup_lag", "grafana/jsonnet-libs kafka-observ-lib"),
    ],
)
def test_the_check_catches_a_clash(name: str, project: str) -> None:
    assert any(f": {project} " in clash for clash in clashes([name])), clashes([name])


def test_every_project_is_cited_and_its_derived_names_match_its_patterns() -> None:
    for project, entry in OTHER_EXPORTERS.items():
        source = entry["source"]
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), project
        assert source["repo"] and source["path"], project
        assert entry.get("names") or entry.get("patterns"), project
        for name in entry.get("derived", []):
            assert any(re.fullmatch(pattern, name) for pattern in entry["patterns"]), f"{project}: {name}"
