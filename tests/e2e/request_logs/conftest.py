"""One local SparkSession for every inventory test module (a session start costs seconds), and one run of the
command over the shipped samples for the session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.samples_run import CommandRun
from tests.support.samples_run import samples_run as shared_samples_run
from tests.support.spark_jvm import jvm_options


@pytest.fixture(scope="session")
def spark() -> Iterator:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from exporter.request_logs.session import build_session

    session = build_session(
        "local[2]",
        {
            "spark.driver.host": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            # This JVM runs dozens of jobs: C2's compilations pay off here (test_incremental's longest test: 183 s of
            # CPU with the JIT's defaults, 199 s with C1 alone).
            "spark.driver.extraJavaOptions": jvm_options(quick=False),
            # A run generates more classes than the compiled-code cache keeps (100), so every run compiled them all
            # again with Janino (a quarter of a warm run's CPU); and each query's plan description for the UI
            # (the UI is off; the listener events still carry it) was made in the costly "formatted" mode. Ten runs
            # over the samples in one session: 159 s of CPU before, 123 s with these two (the job's output is the
            # same; a one-run JVM, the command's, gains nothing from them).
            "spark.sql.codegen.cache.maxEntries": "2000",
            "spark.sql.ui.explainMode": "simple",
        },
    )
    yield session
    jvm = session.sparkContext._gateway.proc  # type: ignore[union-attr]  # the driver JVM pyspark launched
    session.stop()
    # stop() ends Spark, not its JVM, which exits once its stdin pipe from this process closes: at the worker's exit,
    # and then for seconds after the suite has returned (a fresh clone's run saw it still running). Closed and
    # waited for here, by its pid.
    jvm.stdin.close()
    jvm.wait(timeout=60)


@pytest.fixture(scope="session")
def samples_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> CommandRun:
    """The inventory command's one run over the shipped samples (tests/support/samples_run.py)."""
    base = tmp_path_factory.getbasetemp()
    # xdist's workers each have a base directory under the session's own; without xdist there is only one.
    shared = base if worker_id == "master" else base.parent
    return shared_samples_run(shared / "samples-run")
