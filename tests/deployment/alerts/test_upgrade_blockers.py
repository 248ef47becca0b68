"""KafkaClientDeprecatedRequests fires only on the requests the target release rejects, with input series the exporter
itself renders.

alerts/tests/upgrade.test.yaml holds the issue's cases: a 3.8 broker counts Metadata v2, Produce v5, Fetch v3,
Produce v2 and JoinGroup v1 as deprecated; with policy.target_release 4.0.0 Fetch v3, Produce v2 and JoinGroup v1
fire, with 4.0.1 JoinGroup v1 no longer does, and Metadata v2 and Produce v5 (served by 4.0) never do. Its input
series must be what judging, the collectors and the exposition make of those requests; after an intended change,
print them with:
    PYTHONPATH=$PWD .venv/bin/python -m tests.deployment.alerts.test_upgrade_blockers
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from exporter.collectors.catalog import DEPRECATED_REQUESTS, UPGRADE_BLOCKING_REQUESTS
from exporter.judging.upgrade import UpgradeJudge
from exporter.snapshot import DeprecatedRequests, JmxReading, Snapshot, SourceKey, SourceResult
from exporter.web.exposition import render_snapshot
from tests.support.promql import ROOT, RULES_FILE, promtool

UPGRADE_TESTS = ROOT / "alerts" / "tests" / "upgrade.test.yaml"
JOB = "kafka-client-exporter"
ALERT = "KafkaClientDeprecatedRequests"
# What a 3.8 broker's DeprecatedRequestsPerSec meters count: per request version, requests per minute.
DEPRECATED_ON_3_8 = (
    DeprecatedRequests("Metadata", "2", "librdkafka", "1.5.0", 6),
    DeprecatedRequests("Produce", "5", "librdkafka", "1.5.0", 30),
    DeprecatedRequests("Fetch", "3", "librdkafka", "1.5.0", 12),
    DeprecatedRequests("Produce", "2", "kafka-python", "2.0.2", 4),
    DeprecatedRequests("JoinGroup", "1", "librdkafka", "2.3.0", 2),
)
# The issue's cases: which (request, version) fire per target release.
FIRING = {"4.0.0": {("Fetch", "3"), ("Produce", "2"), ("JoinGroup", "1")}, "4.0.1": {("Fetch", "3"), ("Produce", "2")}}
NEVER_FIRING = {("Metadata", "2"), ("Produce", "5")}
MINUTES = 30


def exposed_input_series(target_release: str) -> list[dict[str, str]]:
    """The two request families as the exporter renders them for DEPRECATED_ON_3_8, as promtool input series:
    the job label Prometheus adds, and each counter growing by its count every minute."""
    polled = (
        SourceResult(
            SourceKey("prod", "1", "jmx"), True, 0.2, 100.0, reading=JmxReading(deprecated_requests=DEPRECATED_ON_3_8)
        ),
    )
    snapshot = Snapshot(
        sequence=1,
        taken_at=100.0,
        cycle_duration_seconds=0.2,
        results=polled,
        clusters=("prod",),
        blocking_requests=UpgradeJudge(target_release).judge(polled),
    )
    wanted = (DEPRECATED_REQUESTS.sample_name, UPGRADE_BLOCKING_REQUESTS.sample_name)
    series = []
    for family in text_string_to_metric_families(render_snapshot(snapshot, False, False).decode()):
        for sample in family.samples:
            if sample.name in wanted:
                labels = ",".join(f'{k}="{v}"' for k, v in {"job": JOB, **sample.labels}.items())
                series.append({"series": f"{sample.name}{{{labels}}}", "values": f"0+{sample.value:g}x{MINUTES}"})
    return series


def load_cases() -> dict[str, dict[str, Any]]:
    """upgrade.test.yaml's test cases by the target release their name starts with."""
    cases = {}
    for case in yaml.safe_load(UPGRADE_TESTS.read_text())["tests"]:
        match = re.match(r"policy\.target_release (\d+\.\d+\.\d+):", case["name"])
        assert match, f"{UPGRADE_TESTS.name}: test {case['name']!r} does not start with 'policy.target_release X.Y.Z:'"
        cases[match.group(1)] = case
    return cases


def fired(case: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (alert["exp_labels"]["request"], str(alert["exp_labels"]["version"]))
        for check in case["alert_rule_test"]
        if check["alertname"] == ALERT
        for alert in check["exp_alerts"]
    }


@pytest.mark.parametrize("target_release", sorted(FIRING))
def test_input_series_are_what_the_exporter_renders(target_release: str) -> None:
    expected = exposed_input_series(target_release)
    given = load_cases()[target_release]["input_series"]
    assert sorted(given, key=str) == sorted(expected, key=str), (
        f"{UPGRADE_TESTS.name} target {target_release}: input series differ from the exporter's; print them with "
        "python -m tests.deployment.alerts.test_upgrade_blockers"
    )


def test_the_cases_are_the_issues() -> None:
    cases = load_cases()
    assert set(cases) == set(FIRING)
    for target_release, case in cases.items():
        assert fired(case) == FIRING[target_release], target_release
        raw = {line["series"] for line in case["input_series"] if line["series"].startswith(DEPRECATED_REQUESTS.name)}
        for request, version in NEVER_FIRING:
            assert any(f'request="{request}"' in s and f'version="{version}"' in s for s in raw), (request, version)


def test_promtool_sees_joingroup_v1_fire_for_4_0_0_only(tmp_path: Path) -> None:
    source = yaml.safe_load(UPGRADE_TESTS.read_text())
    source["rule_files"] = [str(RULES_FILE)]
    written = tmp_path / "upgrade.test.yaml"
    written.write_text(yaml.safe_dump(source))
    run = subprocess.run([promtool(), "test", "rules", str(written)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    # Expecting JoinGroup v1 for 4.0.1 too must fail: promtool really tells the two targets apart.
    four_zero_one = next(c for c in source["tests"] if c["name"].startswith("policy.target_release 4.0.1:"))
    four_zero_zero = next(c for c in source["tests"] if c["name"].startswith("policy.target_release 4.0.0:"))
    join_group = [
        alert
        for check in four_zero_zero["alert_rule_test"]
        for alert in check["exp_alerts"]
        if alert["exp_labels"]["request"] == "JoinGroup"
    ]
    for check in four_zero_one["alert_rule_test"]:
        if check["exp_alerts"]:
            check["exp_alerts"] += [
                {**alert, "exp_labels": {**alert["exp_labels"], "target_release": "4.0.1"}} for alert in join_group
            ]
    written.write_text(yaml.safe_dump(source))
    run = subprocess.run([promtool(), "test", "rules", str(written)], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0, run.stdout


if __name__ == "__main__":
    for target in sorted(FIRING):
        print(f"# policy.target_release {target}")
        print(yaml.safe_dump({"input_series": exposed_input_series(target)}, width=1000, sort_keys=False))
