"""The worker's one local SparkSession for the inventory tests, and how it is started again when a test broke it."""

from __future__ import annotations

import contextlib
from typing import Any

from tests.support.spark_jvm import jvm_options

#: The shared session's settings (the inventory job's own defaults are layered under them by build_session).
SESSION_CONF = {
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
}


class SharedSession:
    """The worker's one local SparkSession, started again when a test left it unusable.

    pytest-timeout's signal interrupts a py4j call mid-answer; the gateway then hands each later call the answer
    of the one before ("org does not exist in the JVM", ``KeyError: 'p'``), and every later test of the worker
    failed with it, far from the one that timed out. A session that cannot add two numbers is stopped, its JVM
    killed by its pid, and a new one started, so that one failure stays one."""

    def __init__(self) -> None:
        self._session: Any = None

    def get(self) -> Any:
        if self._session is not None and not self._healthy():
            self._discard()
        if self._session is None:
            from exporter.request_logs.session import build_session

            self._session = build_session("local[2]", SESSION_CONF)
        return self._session

    def _healthy(self) -> bool:
        try:
            return bool(self._session.sparkContext._jvm.java.lang.Math.addExact(4700, 11) == 4711)
        except Exception:
            return False

    def _discard(self) -> None:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        jvm = self._session.sparkContext._gateway.proc
        jvm.kill()
        jvm.wait(timeout=60)
        with contextlib.suppress(Exception):
            self._session.sparkContext._gateway.shutdown()
        # pyspark keeps the dead gateway in class attributes; getOrCreate would return it.
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
        SparkSession._instantiatedSession = None
        SparkSession._activeSession = None
        self._session = None

    def close(self) -> None:
        if self._session is None:
            return
        if not self._healthy():
            self._discard()
            return
        jvm = self._session.sparkContext._gateway.proc  # the driver JVM pyspark launched
        self._session.stop()
        # stop() ends Spark, not its JVM, which exits once its stdin pipe from this process closes: at the worker's
        # exit, and then for seconds after the suite has returned (a fresh clone's run saw it still running). Closed
        # and waited for here, by its pid.
        jvm.stdin.close()
        jvm.wait(timeout=60)
