"""End to end: a real Prometheus scrapes the exporter watching the broker double, an old librdkafka connects,
KafkaClientBelowMinimumVersion fires (seen through Prometheus' HTTP API) and resolves after the client leaves."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from alerts.render import every, merge, write_rules
from harness.clients import ClientKind, start_client
from harness.exporter_process import running_exporter, write_config
from harness.ports import free_port
from harness.prometheus_process import running_prometheus
from kafka_double.cluster import BrokerSpec, DoubleCluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.slow
ALERT = "KafkaClientBelowMinimumVersion"


def short_for_rules(target: Path) -> Path:
    """The shipped rules with every `for:` and `keep_firing_for:` cut to 5s (alerts/config.yaml's settings): the
    expressions under test are the shipped ones, only the waiting is shortened so the test takes seconds instead of
    15 minutes."""
    return write_rules(target, merge(every("for", "5s"), every("keepFiringFor", "5s")))


def api(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)["data"]


def prometheus_tail(log: Path) -> str:
    tail = "\n".join(log.read_text().splitlines()[-20:]) if log.exists() else ""
    return f"prometheus log tail:\n{tail}"


def old_librdkafka_alerts(base: str) -> list[dict[str, Any]]:
    return [
        alert
        for alert in api(f"{base}/api/v1/alerts")["alerts"]
        if alert["labels"]["alertname"] == ALERT and alert["labels"].get("client_software_version") == "1.5.0"
    ]


def test_old_client_fires_and_resolves(tmp_path: Path) -> None:
    with DoubleCluster([BrokerSpec(id=1)]) as double:
        config = write_config(
            tmp_path / "exporter.yaml",
            "local",
            {1: double.broker(1).jmx_url},
            interval_seconds=2,
            jmx_timeout_seconds=2,
        )
        exporter_port = free_port()
        rules = short_for_rules(tmp_path / "rules.yaml")
        log = tmp_path / "prometheus.log"
        with (
            running_exporter(config, exporter_port),
            running_prometheus(tmp_path, exporter_port, rules) as base,
        ):
            eventually(
                lambda: any(t["health"] == "up" for t in api(f"{base}/api/v1/targets")["activeTargets"]),
                60,
                "Prometheus' first successful scrape of the exporter",
                context=lambda: prometheus_tail(log),
            )
            assert old_librdkafka_alerts(base) == []
            client = start_client(
                ClientKind.KCAT, double.bootstrap(), software_name="librdkafka", software_version="1.5.0"
            )
            with client:
                client.wait_ready()
                eventually(
                    lambda: any(a["state"] == "firing" for a in old_librdkafka_alerts(base)),
                    60,
                    f"{ALERT} firing for librdkafka 1.5.0",
                    context=lambda: prometheus_tail(log),
                )
                firing = old_librdkafka_alerts(base)[0]
                assert firing["labels"]["client_software_name"] == "librdkafka"
                assert firing["labels"]["kafka_cluster"] == "local"
                assert re.search(r"below the policy minimum", firing["annotations"]["description"])
            eventually(
                lambda: old_librdkafka_alerts(base) == [],
                60,
                f"{ALERT} to resolve after the client left",
                context=lambda: prometheus_tail(log),
            )
