"""The upgrade dashboard's "who sends the upgrade blockers" panel gives one row per identity and blocker, evaluated by
promtool on known series as Grafana sends it with every variable at "All": two exporters' copies of the same series
(two replicas scraped under one job) must not show a row twice."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.promql import ROOT, grafana_to_promql, promtool_expr_test

DASHBOARD = ROOT / "dashboards" / "grafana" / "kafka-upgrade-readiness.json"
TITLE = "Who sends the upgrade blockers"
BLOCKER = 'request="Produce",version="2",target_release="4.0.0"'
IDENTITY = 'kafka_cluster="prod",client_software_name="unknown",client_software_version="unknown"'


def panel_expr() -> str:
    [panel] = [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["title"] == TITLE]
    [target] = panel["targets"]
    return grafana_to_promql(target["expr"])


def blocker(job: str, instance: str, client_id: str, host: str) -> dict[str, str]:
    labels = (
        f'job="{job}",instance="{instance}",{IDENTITY},{BLOCKER},client_id="{client_id}",'
        f'principal="User:ANONYMOUS",source_host="{host}",listener="PLAINTEXT"'
    )
    return {"series": f"kafka_client_upgrade_blocker_info{{{labels}}}", "values": "1x10"}


def row(client_id: str, host: str) -> dict[str, Any]:
    labels = (
        f'{{{IDENTITY},{BLOCKER},client_id="{client_id}",principal="User:ANONYMOUS",source_host="{host}",'
        'listener="PLAINTEXT"}'
    )
    return {"labels": labels, "value": 1}


INPUT = [
    blocker("kafka-client-exporter", "replica-a", "legacy-billing-producer", "10.0.0.7"),
    blocker("kafka-client-exporter", "replica-b", "legacy-billing-producer", "10.0.0.7"),
    blocker("kafka-client-exporter", "replica-a", "legacy-audit", "10.0.0.8"),
]


def run(tmp_path: Path, expected: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    return promtool_expr_test(tmp_path, INPUT, panel_expr(), expected)


def test_one_row_per_identity_and_blocker_whatever_the_replicas(tmp_path: Path) -> None:
    result = run(tmp_path, [row("legacy-audit", "10.0.0.8"), row("legacy-billing-producer", "10.0.0.7")])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_check_fails_on_other_rows(tmp_path: Path) -> None:
    # What the panel would give without its max by: the billing producer once per replica.
    doubled = [row("legacy-audit", "10.0.0.8"), *[row("legacy-billing-producer", "10.0.0.7")] * 2]
    assert run(tmp_path, doubled).returncode != 0
