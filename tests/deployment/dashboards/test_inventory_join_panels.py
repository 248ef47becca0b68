"""The inventory dashboard's "who" panels give the rows an operator expects, evaluated by promtool on known series.

The shipped expressions are evaluated as Grafana sends them with every variable at "All", over two exporters'
copies of the same identities (two replicas scraped under one job), a version connected on two brokers, a version
without identities and another cluster without an inventory.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.promql import ROOT, grafana_to_promql, promtool_expr_test

DASHBOARD = ROOT / "dashboards" / "grafana" / "kafka-client-inventory.json"


def panel_expr(title: str) -> str:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    [panel] = [p for p in panels if p["title"] == title]
    [target] = panel["targets"]
    return grafana_to_promql(target["expr"])


def connections(instance: str, cluster: str, broker: str, name: str, version: str, count: int) -> dict[str, str]:
    labels = (
        f'job="kafka-client-exporter",instance="{instance}",kafka_cluster="{cluster}",broker="{broker}",'
        f'listener="PLAINTEXT",client_software_name="{name}",client_software_version="{version}"'
    )
    return {"series": f"kafka_client_connections{{{labels}}}", "values": f"{count}x10"}


def identity(instance: str, client_id: str, host: str) -> dict[str, str]:
    labels = (
        f'job="kafka-client-exporter",instance="{instance}",kafka_cluster="prod",client_software_name="librdkafka",'
        f'client_software_version="1.6.0",client_id="{client_id}",principal="User:billing",source_host="{host}",'
        'listener="PLAINTEXT"'
    )
    return {"series": f"kafka_client_identity_info{{{labels}}}", "values": "1x10"}


INPUT = [
    connections("replica-a", "prod", "1", "librdkafka", "1.6.0", 2),
    connections("replica-a", "prod", "2", "librdkafka", "1.6.0", 1),
    connections("replica-a", "prod", "1", "apache-kafka-java", "3.9.0", 4),
    connections("replica-a", "staging", "1", "librdkafka", "2.5.0", 1),
    # Two replicas export the same identities: the table must not show each twice.
    identity("replica-a", "billing-loader", "10.0.0.7"),
    identity("replica-b", "billing-loader", "10.0.0.7"),
    identity("replica-a", "billing-audit", "10.0.0.8"),
]


def who_row(client_id: str, host: str) -> dict[str, Any]:
    labels = (
        '{kafka_cluster="prod",client_software_name="librdkafka",client_software_version="1.6.0",'
        f'client_id="{client_id}",principal="User:billing",source_host="{host}",listener="PLAINTEXT"}}'
    )
    return {"labels": labels, "value": 3}


def pair_row(cluster: str, name: str, version: str, value: int) -> dict[str, Any]:
    labels = f'{{kafka_cluster="{cluster}",client_software_name="{name}",client_software_version="{version}"}}'
    return {"labels": labels, "value": value}


CASES = [
    ("Who runs each connected version", [who_row("billing-audit", "10.0.0.8"), who_row("billing-loader", "10.0.0.7")]),
    (
        "Connected versions not in the inventory",
        [pair_row("prod", "apache-kafka-java", "3.9.0", 4), pair_row("staging", "librdkafka", "2.5.0", 1)],
    ),
]


def run_promtool(tmp_path: Path, title: str, expected: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    return promtool_expr_test(tmp_path, INPUT, panel_expr(title), expected)


@pytest.mark.parametrize(("title", "expected"), CASES, ids=[title for title, _ in CASES])
def test_the_panel_gives_the_expected_rows(tmp_path: Path, title: str, expected: list[dict[str, Any]]) -> None:
    run = run_promtool(tmp_path, title, expected)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_check_fails_on_other_rows(tmp_path: Path) -> None:
    # The duplicate a plain join over both replicas would give.
    doubled = [who_row("billing-audit", "10.0.0.8"), *[who_row("billing-loader", "10.0.0.7")] * 2]
    run = run_promtool(tmp_path, "Who runs each connected version", doubled)
    assert run.returncode != 0
