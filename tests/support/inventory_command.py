"""The inventory as a user runs it, in a process of its own: loopback only, and no Python worker allowed."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.spark_jvm import jvm_options

LOOPBACK_CONF = ["--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false"]
# A job that tried to start a Python worker would fail on this module, which does not exist.
NO_PYTHON_WORKERS = ["--conf", "spark.python.daemon.module=kce_the_inventory_job_starts_no_python_workers"]
TWO_PARTITIONS = ["--conf", "spark.sql.shuffle.partitions=2"]


def quick_jvm() -> list[str]:
    """The driver's and executors' JVM options for one job (spark_jvm.jvm_options), as --conf arguments."""
    options = jvm_options()
    return [
        *("--conf", f"spark.driver.extraJavaOptions={options}"),
        *("--conf", f"spark.executor.extraJavaOptions={options}"),
    ]


def inventory_command(*args: str, conf: list[str] = TWO_PARTITIONS) -> list[str]:
    spark = [*LOOPBACK_CONF, *NO_PYTHON_WORKERS, *quick_jvm(), *conf]
    return [sys.executable, "-m", "exporter", "inventory", *args, *spark]


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
