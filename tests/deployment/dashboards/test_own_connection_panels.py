"""The inventory dashboard's panels on the brokers' own connections give the rows an operator expects, evaluated by
promtool on known series with every variable at "All": the clients-only count is the gauges' count minus the
brokers' own, and a listener or client pair without any own connection still shows, with all its connections."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.promql import ROOT, grafana_to_promql, promtool_expr_test

DASHBOARD = ROOT / "dashboards" / "grafana" / "kafka-client-inventory.json"
JOB = 'job="kafka-client-exporter",instance="a",kafka_cluster="prod"'


def target_expr(title: str, ref: str) -> str:
    [panel] = [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["title"] == title]
    [target] = [t for t in panel["targets"] if t["refId"] == ref]
    return grafana_to_promql(target["expr"])


def series(metric: str, value: int, **labels: str) -> dict[str, str]:
    rendered = ",".join(f'{name}="{text}"' for name, text in labels.items())
    return {"series": f"{metric}{{{JOB},{rendered}}}", "values": f"{value}x10"}


def pair(listener: str, name: str, version: str) -> dict[str, str]:
    return {"listener": listener, "client_software_name": name, "client_software_version": version}


# A 3.9 cluster: fetchers on both brokers, markers placed on no broker (broker=""), a controller listener without
# any own connection, and a kafka-python application with none either.
INPUT = [
    series("kafka_client_connections", 3, broker="1", **pair("PLAINTEXT", "unknown", "unknown")),
    series("kafka_client_connections", 2, broker="2", **pair("PLAINTEXT", "unknown", "unknown")),
    series("kafka_client_connections", 4, broker="1", **pair("PLAINTEXT", "kafka-python", "3.0.12")),
    series("kafka_client_connections", 2, broker="1", **pair("CONTROLLER", "apache-kafka-java", "3.9.2")),
    series(
        "kafka_client_inter_broker_connections",
        1,
        broker="1",
        channel="replica-fetcher",
        **pair("PLAINTEXT", "unknown", "unknown"),
    ),
    series(
        "kafka_client_inter_broker_connections",
        1,
        broker="2",
        channel="replica-fetcher",
        **pair("PLAINTEXT", "unknown", "unknown"),
    ),
    series(
        "kafka_client_inter_broker_connections",
        2,
        broker="",
        channel="txn-marker-channel",
        **pair("PLAINTEXT", "unknown", "unknown"),
    ),
]


def row(value: int, **labels: str) -> dict[str, Any]:
    rendered = ",".join(f'{name}="{text}"' for name, text in {"kafka_cluster": "prod", **labels}.items())
    return {"labels": f"{{{rendered}}}", "value": value}


CASES = [
    (
        "Brokers' own connections by channel, beside the clients'",
        "B",
        [row(5, listener="PLAINTEXT"), row(2, listener="CONTROLLER")],
    ),
    (
        "Clients' connections without the brokers' own",
        "C",
        [
            row(1, **pair("PLAINTEXT", "unknown", "unknown")),
            row(4, **pair("PLAINTEXT", "kafka-python", "3.0.12")),
            row(2, **pair("CONTROLLER", "apache-kafka-java", "3.9.2")),
        ],
    ),
    (
        "Brokers' own connections by channel, beside the clients'",
        "A",
        [
            row(2, listener="PLAINTEXT", channel="replica-fetcher"),
            row(2, listener="PLAINTEXT", channel="txn-marker-channel"),
        ],
    ),
]


def run_promtool(tmp_path: Path, expr: str, expected: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    return promtool_expr_test(tmp_path, INPUT, expr, expected)


@pytest.mark.parametrize(("title", "ref", "expected"), CASES, ids=[f"{t} {r}" for t, r, _ in CASES])
def test_the_panel_gives_the_expected_rows(
    tmp_path: Path, title: str, ref: str, expected: list[dict[str, Any]]
) -> None:
    run = run_promtool(tmp_path, target_expr(title, ref), expected)
    assert run.returncode == 0, run.stdout + run.stderr
