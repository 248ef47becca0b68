"""The SparkSession for an inventory run: ``local[*]`` unless a master is given or spark-submit chose one."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pyspark.sql import SparkSession

APP_NAME = "kafka-client-exporter inventory"
DEFAULT_MASTER = "local[*]"
# Input splits of 64 MB instead of 128 MB keep every core busy to the end on small machines.
DEFAULT_CONF = {
    "spark.sql.files.maxPartitionBytes": "64m",
    "spark.ui.showConsoleProgress": "false",
}
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
#: The one big aggregation shrinks the logs to distinct connections x APIs, so every shuffle after it is small:
#: Spark's default of 200 partitions (or even 32) costs more in task overhead than it spreads. Two per core of
#: the session (its default parallelism) unless --conf sets it.
SHUFFLE_PARTITIONS_PER_CORE = 2


def launched_by_spark_submit() -> bool:
    # spark-submit starts the Python driver with a gateway to its already-configured JVM.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(master: str | None = None, conf: Mapping[str, str] | None = None) -> SparkSession:
    builder = SparkSession.builder.appName(APP_NAME)
    if master is not None:
        builder = builder.master(master)
    elif not launched_by_spark_submit():
        builder = builder.master(DEFAULT_MASTER)
    # Our own progress lines (progress.py) replace the console progress bar, which garbles stderr.
    # Under spark-submit its own --conf values rule, so no defaults of ours are layered over them.
    defaults = {} if launched_by_spark_submit() else DEFAULT_CONF
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    _quiet_task_failures(spark)
    if SHUFFLE_PARTITIONS not in (conf or {}) and not launched_by_spark_submit():
        partitions = SHUFFLE_PARTITIONS_PER_CORE * spark.sparkContext.defaultParallelism
        spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))
    return spark


#: In local mode a failed task's stack trace is printed by these loggers of the driver's JVM before the job sees the
#: failure. The job handles the one failure it expects (a file Spark cannot read: unreadable.py names it in one
#: line and goes on); any other failure still reaches the driver with Spark's whole message and trace.
_TASK_FAILURE_LOGGERS = ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager")


def _quiet_task_failures(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log4j = jvm.org.apache.logging.log4j
    for name in _TASK_FAILURE_LOGGERS:
        log4j.core.config.Configurator.setLevel(name, log4j.Level.FATAL)
