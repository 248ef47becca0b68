"""Our alert rules in a Prometheus that also scrapes kafka_exporter and jmx_exporter: their real series, with values
that would be trouble if our rules read them, fire none of our alerts; our own series in trouble fire exactly ours.

Every alert of the rules file is covered, read at test time. The other exporters' series are named as their sources
name them (tests/unit/collectors/other_exporters_names.yaml cites the commits):
- danielqsj/kafka_exporter (kafka_exporter.go): every series carries the pairs of --kafka.labels, which the
  prometheus-kafka-exporter chart builds from `kafkaLabels` (documented as `cluster: "prod-cluster"`, `env: "prod"`).
  Deployment "prod" uses such labels; deployment "stage" sets `kafka_cluster`, as kafka-observ-lib's users must for
  its dashboards, which group kafka_exporter's series by kafka_cluster.
- Strimzi's and Confluent's jmx_exporter rules, for the MBeans we read ourselves (KIP-511 connections per client
  software, KIP-896 DeprecatedRequestsPerSec), relabelled with kafka_cluster the way kafka-observ-lib expects.
"""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.promql import RULES_FILE, promtool

RULES = yaml.safe_load(RULES_FILE.read_text())
ALERTS = {rule["alert"]: rule for group in RULES["groups"] for rule in group["rules"] if "alert" in rule}
SAMPLES = 1440  # 24h at 1m: longer than every `for:` (KafkaBrokerReleaseSkew waits 12h)
EVAL_TIMES = ["30m", "6h30m", "12h30m", "23h50m"]
OUR_JOB = {"job": "kafka-client-exporter", "instance": "kafka-client-exporter:9784"}


def series(name: str, labels: dict[str, str], values: str = f"1x{SAMPLES}") -> dict[str, str]:
    matchers = ",".join(f'{key}="{value}"' for key, value in labels.items())
    return {"series": f"{name}{{{matchers}}}", "values": values}


def kafka_exporter_series() -> list[dict[str, str]]:
    deployments = {
        "prod": {"job": "kafka-exporter", "instance": "kafka-exporter-prod:9308", "cluster": "prod", "env": "prod"},
        "stage": {"job": "kafka-exporter", "instance": "kafka-exporter-stage:9308", "kafka_cluster": "stage"},
    }
    half = SAMPLES // 2
    found = []
    for labels in deployments.values():
        found += [
            series("up", {"job": labels["job"], "instance": labels["instance"]}),
            series("kafka_brokers", labels, f"3x{SAMPLES}"),
            series("kafka_exporter_build_info", {**labels, "version": "1.9.0"}),
            series("kafka_broker_info", {**labels, "id": "1", "address": "b-1.kafka:9092"}),
            series("kafka_broker_info", {**labels, "id": "2", "address": "b-2.kafka:9092"}),
            # Broker 3 is replaced by broker 4 half-way: the info series changes its label set.
            series("kafka_broker_info", {**labels, "id": "3", "address": "b-3.kafka:9092"}, f"1x{half}"),
            series("kafka_broker_info", {**labels, "id": "4", "address": "b-4.kafka:9092"}, f"_x{half} 1x{half}"),
            series("kafka_topic_partitions", {**labels, "topic": "orders"}, f"6x{SAMPLES}"),
            series(
                "kafka_topic_partition_current_offset",
                {**labels, "topic": "orders", "partition": "0"},
                f"0+500x{SAMPLES}",
            ),
            series(
                "kafka_topic_partition_oldest_offset",
                {**labels, "topic": "orders", "partition": "0"},
                f"0+100x{SAMPLES}",
            ),
            series(
                "kafka_consumergroup_current_offset",
                {**labels, "consumergroup": "billing", "topic": "orders", "partition": "0"},
                f"0+450x{SAMPLES}",
            ),
            series(
                "kafka_consumergroup_lag",
                {**labels, "consumergroup": "billing", "topic": "orders", "partition": "0"},
                f"0+50x{SAMPLES}",
            ),
            series("kafka_consumergroup_members", {**labels, "consumergroup": "billing"}, f"2x{SAMPLES}"),
        ]
    return found


def jmx_exporter_series() -> list[dict[str, str]]:
    # An old Java client (0.10.2.1) sends Produce v2, which Kafka 4.0 removes; a client sends no software name; the
    # Confluent broker's jmx_exporter cannot be scraped for an hour.
    strimzi = {"job": "kafka-jmx", "instance": "my-cluster-kafka-0:9404", "kafka_cluster": "prod"}
    confluent = {"job": "kafka-jmx", "instance": "broker-1:1234", "kafka_cluster": "stage"}
    processor = {"listener": "PLAIN", "networkProcessor": "1"}
    return [
        series("up", {"job": "kafka-jmx", "instance": strimzi["instance"]}),
        series("up", {"job": "kafka-jmx", "instance": confluent["instance"]}, f"1x359 0x59 1x{SAMPLES - 420}"),
        series(
            "kafka_server_socket_server_metrics_connections_software",
            {**strimzi, "clientSoftwareName": "apache-kafka-java", "clientSoftwareVersion": "0.10.2.1", **processor},
            f"4x{SAMPLES}",
        ),
        series(
            "kafka_server_socket_server_metrics_connections_software",
            {**strimzi, "clientSoftwareName": "unknown", "clientSoftwareVersion": "unknown", **processor},
            f"2x{SAMPLES}",
        ),
        # Strimzi's generic PerSec rule takes two key=value pairs; its greedy groups fold the MBean's first three
        # keys (request, version, clientSoftwareName) into one label name.
        series(
            "kafka_network_requestmetrics_deprecatedrequests_total",
            {
                **strimzi,
                "request_Produce_version_2_clientSoftwareName": "apache-kafka-java",
                "clientSoftwareVersion": "0.10.2.1",
            },
            f"0+30x{SAMPLES}",
        ),
        series(
            "kafka_server_socketservermetrics_connections",
            {
                **confluent,
                "client_software_name": "apache-kafka-java",
                "client_software_version": "0.10.2.1",
                "listener": "PLAIN",
                "network_processor": "1",
            },
            f"4x{SAMPLES}",
        ),
        series(
            "kafka_network_requestmetrics_deprecatedrequestspersec_count",
            {
                **confluent,
                "api_name": "Produce",
                "api_version": "2",
                "client_software_name": "apache-kafka-java",
                "client_software_version": "0.10.2.1",
            },
            f"0+30x{SAMPLES}",
        ),
    ]


def our_series(broker_info: str = "kafka_broker_release_info", down_from: int | None = None) -> list[dict[str, str]]:
    """A healthy exporter watching clusters prod and stage; with `down_from`, prod broker 2's JMX source fails for an
    hour from that minute."""
    found = [
        series("up", OUR_JOB),
        series("kafka_client_exporter_build_info", {**OUR_JOB, "version": "1.0.0"}),
        series("kafka_client_exporter_snapshot_timestamp_seconds", OUR_JOB, f"0+60x{SAMPLES}"),
        series("kafka_client_exporter_stale_after_seconds", OUR_JOB, f"180x{SAMPLES}"),
        series("kafka_client_exporter_snapshot_stale", OUR_JOB, f"0x{SAMPLES}"),
        series("kafka_client_exporter_cycle_duration_seconds", OUR_JOB, f"4x{SAMPLES}"),
        series("kafka_client_exporter_collection_interval_seconds", OUR_JOB, f"60x{SAMPLES}"),
        series("kafka_client_exporter_cycle_failures_total", OUR_JOB, f"0x{SAMPLES}"),
    ]
    for cluster in ("prod", "stage"):
        ours = {**OUR_JOB, "kafka_cluster": cluster}
        found.append(series("kafka_client_metrics_subscriptions", ours, f"0x{SAMPLES}"))
        for broker in ("1", "2", "3"):
            at = {**ours, "broker": broker}
            found += [
                series(broker_info, {**at, "host": f"b-{broker}.kafka", "inferred_release": "3.9.0"}),
                series(
                    "kafka_client_exporter_errors_total",
                    {**at, "source": "client_metrics", "reason": "authorization"},
                    f"0x{SAMPLES}",
                ),
                series(
                    "kafka_client_exporter_client_suite_full",
                    {**at, "listener": "PLAIN", "network_processor": "1"},
                    f"0x{SAMPLES}",
                ),
                # A policy-clean client, and the deprecated requests of one that stopped before the test began.
                series(
                    "kafka_client_connections",
                    {
                        **at,
                        "listener": "PLAIN",
                        "client_software_name": "apache-kafka-java",
                        "client_software_version": "3.9.0",
                    },
                    f"5x{SAMPLES}",
                ),
                series(
                    "kafka_client_deprecated_requests_total",
                    {
                        **at,
                        "request": "Produce",
                        "version": "2",
                        "client_software_name": "apache-kafka-java",
                        "client_software_version": "2.0.0",
                    },
                    f"17x{SAMPLES}",
                ),
            ]
            for source in ("jmx", "api_versions"):
                values = f"1x{SAMPLES}"
                if down_from is not None and (cluster, broker, source) == ("prod", "2", "jmx"):
                    values = f"1x{down_from - 1} 0x59 1x{SAMPLES - down_from - 60}"
                found.append(series("kafka_client_exporter_up", {**at, "source": source}, values))
    return found


def expected(alert: str, labels: dict[str, str], value: str = "") -> dict[str, Any]:
    """The alert as promtool reports it: the rule's labels and annotations, templates filled in."""
    rule = ALERTS[alert]

    def fill(text: str) -> str:
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)
        return text.replace("{{ $value }}", value)

    return {
        "exp_labels": {**rule["labels"], **labels},
        "exp_annotations": {key: fill(text) for key, text in rule["annotations"].items()},
    }


def run_promtool(
    tmp_path: Path,
    input_series: list[dict[str, str]],
    firing: dict[tuple[str, str], list[dict[str, Any]]],
    rules_file: Path = RULES_FILE,
) -> None:
    """Every alert at every EVAL_TIMES is expected quiet, except the (alert, time) pairs in `firing`."""
    checks = [
        {"eval_time": at, "alertname": alert, "exp_alerts": firing.get((alert, at), [])}
        for alert in sorted(ALERTS)
        for at in EVAL_TIMES
    ]
    test = {
        "rule_files": [str(rules_file)],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": input_series, "alert_rule_test": checks}],
    }
    test_file = tmp_path / "coexistence.test.yaml"
    test_file.write_text(yaml.safe_dump(test, sort_keys=False))
    run = subprocess.run([promtool(), "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_other_exporters_series_fire_none_of_our_alerts(tmp_path: Path) -> None:
    run_promtool(tmp_path, kafka_exporter_series() + jmx_exporter_series() + our_series(), firing={})


def test_our_series_in_trouble_fire_exactly_our_alert(tmp_path: Path) -> None:
    down = {**OUR_JOB, "kafka_cluster": "prod", "broker": "2", "source": "jmx"}
    alert = expected("KafkaClientExporterBrokerDown", down)
    series_ = kafka_exporter_series() + jmx_exporter_series() + our_series(down_from=6 * 60)
    run_promtool(tmp_path, series_, firing={("KafkaClientExporterBrokerDown", "6h30m"): [alert]})


def test_without_the_job_matcher_and_the_rename_kafka_exporter_would_fire_release_skew(tmp_path: Path) -> None:
    # The scenario, rebuilt: rules without job matchers reading our release info under its old name
    # kafka_broker_info, which kafka_exporter exports too. Its series have no inferred_release, and "" counts as a
    # second release in the cluster that both exporters label alike.
    old_rules = copy.deepcopy(RULES)
    for group in old_rules["groups"]:
        for rule in group["rules"]:
            expr = re.sub(r'job="kafka-client-exporter",?', "", rule["expr"]).replace("{}", "")
            rule["expr"] = expr.replace("kafka_broker_release_info", "kafka_broker_info")
            assert "kafka-client-exporter" not in rule["expr"], rule["expr"]
    rules_file = tmp_path / "old.rules.yaml"
    rules_file.write_text(yaml.safe_dump(old_rules))
    skew = expected("KafkaBrokerReleaseSkew", {"kafka_cluster": "stage"}, value="2")
    firing = {("KafkaBrokerReleaseSkew", at): [skew] for at in ("12h30m", "23h50m")}
    # And the Confluent broker's jmx_exporter, which Prometheus cannot scrape for an hour, would be our exporter down.
    jmx_down = expected("KafkaClientExporterDown", {"job": "kafka-jmx", "instance": "broker-1:1234"})
    jmx_down["exp_annotations"]["description"] = (
        f"Prometheus has failed to scrape broker-1:1234 (job kafka-jmx) for {ALERTS['KafkaClientExporterDown']['for']}."
    )
    firing[("KafkaClientExporterDown", "6h30m")] = [jmx_down]
    series_ = kafka_exporter_series() + jmx_exporter_series() + our_series(broker_info="kafka_broker_info")
    run_promtool(tmp_path, series_, firing, rules_file)
