"""The shipped Alertmanager configuration (alerts/alertmanager.example.yaml): amtool accepts it, as shipped and with
its receivers pointed at a local endpoint (as the demo and tests/e2e/test_alert_path.py run it); it routes by
severity; and its inhibition agrees with the rules' settings (it mutes exactly the alerts that keep firing through an
exporter outage, while they still fire). The path itself is followed end to end in tests/e2e/test_alert_path.py."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from alerts.render import load_settings, parse_duration
from harness.alertmanager_process import AMTOOL, EXAMPLE_CONFIG, example_config, local_receivers, with_timings
from tests.support.promql import RULES_FILE

ALERTS = [rule for group in yaml.safe_load(RULES_FILE.read_text())["groups"] for rule in group["rules"]]


def amtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AMTOOL, *args], capture_output=True, text=True, timeout=60)


def test_amtool_accepts_the_example() -> None:
    run = amtool("check-config", EXAMPLE_CONFIG)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 receivers" in run.stdout and "1 inhibit rules" in run.stdout


def test_amtool_accepts_it_with_local_receivers_and_short_timings(tmp_path: Path) -> None:
    local = with_timings(local_receivers(example_config(), "http://127.0.0.1:9"), group_wait="1s")
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(local))
    run = amtool("check-config", path)
    assert run.returncode == 0, run.stdout + run.stderr
    kafka_route = local["route"]["routes"][0]
    assert kafka_route["group_wait"] == "1s" and "group_wait" not in kafka_route["routes"][0]


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        ({"alertname": "KafkaClientDeniedVersion", "severity": "warning"}, "kafka-clients-tickets"),
        ({"alertname": "KafkaClientDeniedVersion", "severity": "critical"}, "kafka-clients-oncall"),
        ({"alertname": "KafkaClientUnknownSoftware", "severity": "info"}, "kafka-clients-info"),
        ({"alertname": "KafkaBrokerReleaseSkew", "severity": "warning"}, "kafka-clients-tickets"),
        ({"alertname": "KafkaClientExporterDown", "severity": "warning"}, "kafka-clients-tickets"),
        # Another product's alerts stay on the operator's own routes.
        ({"alertname": "KafkaTopicUnderReplicated", "severity": "critical"}, "default"),
        ({"alertname": "Watchdog", "severity": "none"}, "default"),
    ],
)
def test_alerts_are_routed_by_severity(labels: dict[str, str], receiver: str) -> None:
    pairs = [f"{key}={value}" for key, value in {**labels, "kafka_cluster": "prod"}.items()]
    verify = f"--verify.receivers={receiver}"
    run = amtool("config", "routes", "test", f"--config.file={EXAMPLE_CONFIG}", verify, *pairs)
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_shipped_alert_takes_the_kafka_route_grouped_by_cluster_and_alert() -> None:
    route = example_config()["route"]["routes"][0]
    assert route["group_by"] == ["kafka_cluster", "alertname"]
    (matcher,) = route["matchers"]
    pattern = re.fullmatch(r'alertname=~"(.+)"', matcher)
    assert pattern
    assert all(re.fullmatch(pattern.group(1), rule["alert"]) for rule in ALERTS)


def _alternatives(matcher: str) -> set[str]:
    """The alert names an `alertname=~"A|B(C|D)"` matcher matches, among the shipped alerts."""
    pattern = re.fullmatch(r'alertname=~"(.+)"', matcher)
    assert pattern, matcher
    return {rule["alert"] for rule in ALERTS if re.fullmatch(pattern.group(1), rule["alert"])}


def test_the_inhibition_mutes_the_alerts_that_keep_firing_through_an_outage_while_they_do() -> None:
    (rule,) = example_config()["inhibit_rules"]
    assert rule["equal"] == ["kafka_cluster"]
    (source,) = rule["source_matchers"]
    (target,) = rule["target_matchers"]
    sources = _alternatives(source)
    assert sources == {"KafkaClientExporterDown", "KafkaClientExporterStale"}
    settings = load_settings()
    kept = {alert for alert, values in settings.items() if "keepFiringFor" in values}
    assert _alternatives(target) == kept
    # Kept firing longer than an outage takes to raise an inhibiting alert, and named in it for as long.
    lookback = parse_duration(str(settings["KafkaClientExporterDown"]["lookback"]))
    for alert in kept:
        keep = parse_duration(str(settings[alert]["keepFiringFor"]))
        assert all(keep > parse_duration(str(settings[s]["for"])) for s in sources), alert
        assert keep <= lookback, alert
    # The sources carry the label the rule matches on.
    assert all("kafka_cluster" in r["expr"] for r in ALERTS if r["alert"] in sources)
