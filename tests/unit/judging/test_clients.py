"""Policy verdicts and the cardinality guard on the judged clients (issue 4, parts 1-2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from exporter.judging.clients import ClientJudge
from exporter.policy import load_policy
from exporter.snapshot import FOLDED_VERSION, ClientConnections, JmxReading, Snapshot, SourceKey, SourceResult
from exporter.web.exposition import render_snapshot


def jmx_result(broker: str, *clients: tuple[str, str, int], cluster: str = "c") -> SourceResult:
    reading = JmxReading(
        clients=tuple(ClientConnections("PLAINTEXT", "0", name, version, n) for name, version, n in clients)
    )
    return SourceResult(SourceKey(cluster, broker, "jmx"), True, 0.1, 0.0, reading=reading)


def series(snapshot: Snapshot) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    body = render_snapshot(snapshot, False).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }


def test_verdicts_on_real_versions_and_only_nonzero_violations() -> None:
    judge = ClientJudge(load_policy(None), max_versions_per_cluster=100)
    rows = judge.judge(
        [
            jmx_result(
                "1",
                ("librdkafka", "1.5.0", 2),  # below the KIP-896 floor 1.8.2
                ("apache-kafka-java", "3.9.0", 4),
                ("unknown", "unknown", 1),
                ("kafka-python", "1.4.7", 0),  # a lingering zero-valued MBean: no row, no violation
            )
        ]
    )
    verdicts = {(r.software_name, r.software_version): r.violation for r in rows}
    assert verdicts == {
        ("librdkafka", "1.5.0"): "below_minimum",
        ("apache-kafka-java", "3.9.0"): None,
        ("unknown", "unknown"): "unknown_software",
    }
    snapshot = Snapshot(1, 0.0, 0.1, (), clusters=("c",), clients=rows, folded_total=judge.folded_total)
    out = series(snapshot)
    violation = [k for k in out if k[0] == "kafka_client_policy_violation_connections"]
    assert len(violation) == 2
    key = (
        "kafka_client_policy_violation_connections",
        (
            ("broker", "1"),
            ("client_software_name", "librdkafka"),
            ("client_software_version", "1.5.0"),
            ("kafka_cluster", "c"),
            ("listener", "PLAINTEXT"),
            ("reason", "below_minimum"),
        ),
    )
    assert out[key] == 2
    assert out[("kafka_client_exporter_series_folded_total", (("kafka_cluster", "c"),))] == 0


def test_pairs_beyond_the_cap_fold_into_other_with_counts_and_verdicts_kept() -> None:
    judge = ClientJudge(load_policy(None), max_versions_per_cluster=2)
    first = judge.judge([jmx_result("1", ("apache-kafka-java", "3.9.0", 1), ("apache-kafka-java", "3.8.0", 1))])
    assert {r.software_version for r in first} == {"3.9.0", "3.8.0"}
    # Two more pairs arrive: the admitted ones keep their series, the newcomers fold; the old librdkafka is
    # still judged on its real version.
    second = judge.judge(
        [
            jmx_result(
                "1",
                ("apache-kafka-java", "3.9.0", 1),
                ("apache-kafka-java", "3.8.0", 1),
                ("librdkafka", "1.5.0", 3),
                ("apache-kafka-java", "3.7.0", 5),
            )
        ]
    )
    by_real = {(r.software_name, r.real_software_version): r for r in second}
    assert by_real[("librdkafka", "1.5.0")].software_version == FOLDED_VERSION
    assert by_real[("librdkafka", "1.5.0")].violation == "below_minimum"
    assert by_real[("apache-kafka-java", "3.7.0")].software_version == FOLDED_VERSION
    assert by_real[("apache-kafka-java", "3.9.0")].software_version == "3.9.0"
    assert sum(r.connections for r in second) == 10
    assert judge.folded_total == {"c": 2}
    snapshot = Snapshot(2, 0.0, 0.1, (), clusters=("c",), clients=second, folded_total=judge.folded_total)
    out = series(snapshot)
    other = {
        k: v
        for k, v in out.items()
        if k[0] == "kafka_client_connections" and ("client_software_version", "other") in k[1]
    }
    assert sorted(other.values()) == [3, 5]
    # A pair that disconnects frees its slot for the next cycle.
    third = judge.judge([jmx_result("1", ("apache-kafka-java", "3.9.0", 1), ("librdkafka", "1.5.0", 3))])
    assert {r.software_version for r in third} == {"3.9.0", "1.5.0"}


def test_invalid_policy_file_stops_start_up_with_exit_2(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("software:\n  librdkafka: {minimum_version: banana}\n")
    config = tmp_path / "exporter.yaml"
    config.write_text(f"policy_file: {policy}\nclusters:\n  - name: c\n    bootstrap_servers: [k:9092]\n")
    run = subprocess.run(
        [sys.executable, "-m", "exporter", "check-config", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr
    assert str(policy) in run.stderr
    assert "banana" in run.stderr
