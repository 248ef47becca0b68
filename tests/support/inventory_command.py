"""The inventory as a user runs it, in a process of its own: loopback only, and no Python worker allowed."""

from __future__ import annotations

import os
import subprocess
import sys

LOOPBACK_CONF = ["--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false"]
# A job that tried to start a Python worker would fail on this module, which does not exist.
NO_PYTHON_WORKERS = ["--conf", "spark.python.daemon.module=kce_the_inventory_job_starts_no_python_workers"]
TWO_PARTITIONS = ["--conf", "spark.sql.shuffle.partitions=2"]
#: The JIT options for the Spark JVMs of a test's job: a run over a few files ends before C2's compilations pay off,
#: and C1 alone with the serial collector halves the CPU a run costs (one run over samples/request-logs, local[2]:
#: 62 s of CPU with the JVM's defaults, 31 s with these; the output is the same).
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
QUICK_JVM = [
    "--conf",
    f"spark.driver.extraJavaOptions={QUICK_JVM_OPTIONS}",
    "--conf",
    f"spark.executor.extraJavaOptions={QUICK_JVM_OPTIONS}",
]


def inventory_command(*args: str, conf: list[str] = TWO_PARTITIONS) -> list[str]:
    return [sys.executable, "-m", "exporter", "inventory", *args, *LOOPBACK_CONF, *NO_PYTHON_WORKERS, *QUICK_JVM, *conf]


def loopback_env() -> dict[str, str]:
    """Spark binds to the machine's other address unless told otherwise."""
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")


def run_inventory(
    *args: str, timeout: float = 300, conf: list[str] = TWO_PARTITIONS
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        inventory_command(*args, conf=conf),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=loopback_env(),
        check=False,
    )
