"""Running the oracles: single-file Java programs in this folder that ask kafka-clients (Kafka's own code, fetched by
scripts/setup.d/15-kafka-clients.sh) what a broker of its release would send or log."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.java_program import java_program_args
from harness.kafka_jars import kafka_clients_classpath

HERE = Path(__file__).resolve().parent
API_VERSIONS_ORACLE = HERE / "ApiVersionsOracle.java"
REQUEST_LOG_ORACLE = HERE / "RequestLogOracle.java"


def run_oracle(source: Path, kafka_clients: str, *args: str, stdin: str = "", jackson: bool = False) -> str:
    """The oracle's standard output, run on kafka-clients ``kafka_clients`` (and Jackson for the JSON converters);
    an AssertionError with its standard error when it fails."""
    done = subprocess.run(
        ["java", *java_program_args(source, kafka_clients_classpath(kafka_clients, jackson=jackson)), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
