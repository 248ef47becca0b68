"""The alert rules: promtool accepts them, their unit tests pass, and they follow the mixin conventions."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from harness.prometheus_process import PROMTOOL_2
from tests.support.promql import ROOT, RULES_FILE, promtool

TESTS = sorted((ROOT / "alerts" / "tests").glob("*.yaml"))
RUNBOOK = ROOT / "alerts" / "runbook.md"
RUNBOOK_BASE = "https://github.com/kafka-client-exporter/kafka-client-exporter/blob/main/alerts/runbook.md#"
REQUIRED = {
    "KafkaClientBelowMinimumVersion",
    "KafkaClientUnknownSoftware",
    "KafkaClientDeprecatedRequests",
    "KafkaClientInventoryIncomplete",
    "KafkaBrokerReleaseSkew",
    "KafkaClientExporterBrokerDown",
    "KafkaClientExporterCollectSlow",
    "KafkaClientMetricsAuthorizationFailed",
}


def alerts() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES_FILE.read_text())["groups"] for rule in group["rules"]]


def test_promtool_accepts_the_rules() -> None:
    run = subprocess.run([promtool(), "check", "rules", str(RULES_FILE)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_promtool_unit_tests_pass() -> None:
    assert TESTS
    run = subprocess.run(
        [promtool(), "test", "rules", *map(str, TESTS)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_rules_load_and_pass_their_unit_tests_on_prometheus_2() -> None:
    """Users still on the 2.x line load the same file: Debian's promtool 2.42 checks it and runs the unit tests (the
    suite's Prometheus is 3.x, scripts/setup.d/05-prometheus.sh)."""
    assert PROMTOOL_2.exists(), f"{PROMTOOL_2} is missing: scripts/setup.sh installs Debian's prometheus package"
    version = subprocess.run([PROMTOOL_2, "--version"], capture_output=True, text=True, timeout=60)
    assert version.stdout.startswith("promtool, version 2."), version.stdout + version.stderr
    check = subprocess.run([PROMTOOL_2, "check", "rules", RULES_FILE], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    run = subprocess.run([PROMTOOL_2, "test", "rules", *TESTS], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


def test_promtool_unit_tests_can_fail(tmp_path: Path) -> None:
    # The same test with the firing expectation removed must fail: the tests really evaluate the rules.
    source = yaml.safe_load((ROOT / "alerts" / "tests" / "policy.test.yaml").read_text())
    source["rule_files"] = [str(RULES_FILE)]
    source["tests"] = source["tests"][:1]
    for case in source["tests"][0]["alert_rule_test"]:
        case["exp_alerts"] = []
    broken = tmp_path / "broken.test.yaml"
    broken.write_text(yaml.safe_dump(source))
    run = subprocess.run([promtool(), "test", "rules", str(broken)], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0


def test_required_alerts_exist() -> None:
    assert {rule["alert"] for rule in alerts()} >= REQUIRED


def test_mixin_conventions() -> None:
    anchors = {
        re.sub(r"[^a-z0-9-]", "", line[3:].strip().lower().replace(" ", "-"))
        for line in RUNBOOK.read_text().splitlines()
        if line.startswith("## ")
    }
    for rule in alerts():
        name = rule["alert"]
        assert re.fullmatch(r"Kafka(Client|Broker)[A-Za-z]+", name), name
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        annotations = rule["annotations"]
        assert set(annotations) == {"summary", "description", "runbook_url"}, name
        assert annotations["summary"].endswith(".") and "{{" not in annotations["summary"], name
        assert "{{ $labels." in annotations["description"] or "{{ $value" in annotations["description"], name
        assert annotations["runbook_url"] == RUNBOOK_BASE + name.lower(), name
        assert name.lower() in anchors, f"{name} has no section in {RUNBOOK.name}"


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    for path in TESTS:
        for test in yaml.safe_load(path.read_text())["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names - firing == set(), "never seen firing"
    assert names - quiet == set(), "never seen not firing"


def test_unknown_software_waits_out_new_connections() -> None:
    unknown = next(rule for rule in alerts() if rule["alert"] == "KafkaClientUnknownSoftware")
    assert unknown["for"] in {"30m", "1h"}
