"""Requests a broker rejected because it no longer serves their version, read from its ``server.log``.

After an upgrade to 4.x, a client that sends a removed version (or an API the broker disabled) gets no answer: the
network processor fails to parse the header and closes the connection. That never reaches the request log; it is
two ERROR events in ``server.log`` (Apache Kafka 4.0.0-4.3.0, ``core/src/main/scala/kafka/network/SocketServer.scala``
at 4.3.0 ``a9ce3221537b``: ``Processor.parseRequestHeader`` lines 775-784 throws, ``processChannelException`` line
927 logs "Closing socket for <connection id> because of error" with the exception, then ``processException`` logs
"Exception while processing request from <connection id>"; the same lines at 4.0.0 ``4ae681446f18``: 801-810, 951,
1074). The message has no logger prefix: ``Processor`` mixes in ``Logging`` without setting ``logIdent`` (only
``SocketServer`` itself sets the ``[SocketServer listenerType=..., nodeId=...]`` log context, line 91), and a real 4.4.0
broker writes ``ERROR Closing socket for <connection id> because of error (kafka.network.Processor)``
(tests/real_kafka/test_real_legacy_clients.py); a line with that prefix is still read, its node id kept. Kafka's
``ApiException`` keeps no stack trace (``ApiException.java:47``), so the exception is one line after the message. The
first event of each rejection is read.

Events, not lines: ``config/log4j2.yaml``'s ``[%d] %p %m (%c)%n`` starts every event with ``[`` on a new line, so the
files are read with ``\\n[`` as the record separator and an event keeps its exception line.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from exporter.request_logs import log_format as lf

#: File names of the broker's main log (``server.log`` and its hourly roll-overs, maybe gzipped).
FILE_GLOB = "server.log*"
EVENT_SEPARATOR = "\n["
CLOSING = "Closing socket for "

#: One rejection event (its leading ``[`` is the previous record's separator, except in a file's first event).
#: Groups: 1 time, 2 listener type, 3 node id (both empty without the prefix, as real brokers write it), 4 connection
#: id, 5 exception class, 6 message, 7 API key, 8 API name as the broker wrote it (the message name, ``Produce``, as
#: in the request metrics; but 4.4.0 names an API it does not serve by its constant, ``BEGIN_QUORUM_EPOCH``:
#: server/src/main/java/org/apache/kafka/network/Processor.java, KAFKA-20648; the key says which API either way),
#: 9 version.
REJECTION = (
    r"^\[?" + lf.TIMESTAMP_GROUP + r"\] ERROR (?:\[SocketServer listenerType=([A-Z_]+), nodeId=(-?\d+)\] )?"
    r"Closing socket for (\S+) because of error \(kafka\.network\.Processor\)\r?\n"
    r"org\.apache\.kafka\.common\.errors\.(UnsupportedVersionException|InvalidRequestException): "
    r"(Received request for (?:disabled )?api with key (-?\d+) \(([A-Za-z_]+)\) and (?:unsupported )?version (-?\d+))"
)
_GROUPS = {
    "ts": 1,
    "listener_type": 2,
    "node_id": 3,
    "connection": 4,
    "exception": 5,
    "message": 6,
    "api_key": 7,
    "api_name": 8,
    "api_version": 9,
}
#: The local end of a connection id (``<localIp>:<localPort>``): which listener accepted it.
LOCAL_ENDPOINT = r"^([^-]+:\d+)-"

REJECTION_COLUMNS = [
    "time",
    "broker_file",
    "node_id",
    "listener",
    "source_host",
    "connection",
    "api_key",
    "api_name",
    "api_version",
    "exception",
    "message",
    "matched_by",
    "client_id",
    "principal",
    "software_name",
    "software_version",
]


def read_events(spark: SparkSession, inputs: Sequence[str]) -> DataFrame:
    """``event`` and ``file`` of every log4j event in the ``server.log*`` files under the inputs (files,
    directories, globs; any Hadoop file system; ``.gz`` decompressed by extension)."""
    return (
        spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", FILE_GLOB)
        .option("lineSep", EVENT_SEPARATOR)
        .text(list(inputs))
        .select(F.col("value").alias("event"), F.col("_metadata.file_path").alias("file"))
    )


def no_events(spark: SparkSession) -> DataFrame:
    """``read_events``' columns without a row (a run with no server.log to read), made in the JVM."""
    return spark.range(0).select(F.lit(None).cast("string").alias("event"), F.lit(None).cast("string").alias("file"))


#: The columns of ``parse_rejections``.
PARSED_COLUMNS = [
    "time",
    "broker_file",
    "node_id",
    "source_host",
    "connection",
    "api_key",
    "api_name",
    "api_version",
    "exception",
    "message",
]


def parse_rejections(events: DataFrame) -> DataFrame:
    """One row per rejection event: the fields of ``REJECTION``, typed; any other event is dropped."""
    event = F.col("event")
    # The cheap test first: nearly every event of a server.log is something else.
    candidates = events.where(F.instr(event, CLOSING) > 0).select(
        "file", *[F.regexp_extract(event, REJECTION, group).alias(name) for name, group in _GROUPS.items()]
    )
    ts = F.to_timestamp_ntz(F.col("ts"), F.lit(lf.TIMESTAMP_FORMAT))
    return candidates.where(F.col("connection") != "").select(
        ts.alias("time"),
        F.col("file").alias("broker_file"),
        F.nullif(F.col("node_id"), F.lit("")).cast("int").alias("node_id"),
        F.nullif(F.regexp_extract("connection", lf.CONNECTION, 1), F.lit("")).alias("source_host"),
        "connection",
        F.col("api_key").cast("int").alias("api_key"),
        "api_name",
        F.col("api_version").cast("int").alias("api_version"),
        "exception",
        "message",
    )


def _local_endpoint(connection: Column) -> Column:
    return F.nullif(F.regexp_extract(connection, LOCAL_ENDPOINT, 1), F.lit(""))


def _joined_set(column: str) -> Column:
    return F.array_join(F.array_sort(F.collect_set(column)), ",")


#: The table's order (the report lists the first rows).
REJECTION_ORDER = ("time", "broker_file", "connection")


def rejections(rejected: DataFrame, usage: DataFrame) -> DataFrame:
    """``parse_rejections`` rows with what the request logs say of them (``usage`` is ``tables.resolved_usage``):
    the listener that accepted the connection (by its local address:port), and the client: by the connection id
    when the request log has it (a client's ApiVersions passes before its removed version is rejected), else by
    the source host (every client id and software seen from it, comma-separated). ``matched_by`` says which."""
    by_connection = usage.groupBy("connection").agg(
        F.max(F.struct("requests", "client_id", "principal", "software_name", "software_version")).alias("seen")
    )
    by_host = usage.groupBy("source_host").agg(
        _joined_set("client_id").alias("host_client_id"),
        _joined_set("principal").alias("host_principal"),
        _joined_set("software_name").alias("host_software_name"),
        _joined_set("software_version").alias("host_software_version"),
    )
    listeners = (
        usage.select(_local_endpoint(F.col("connection")).alias("local_endpoint"), "listener")
        .where(F.col("local_endpoint").isNotNull() & F.col("listener").isNotNull())
        .groupBy("local_endpoint")
        .agg(_joined_set("listener").alias("listener"))
    )
    seen = F.col("seen")
    by_conn = seen.isNotNull()
    by_host_found = F.col("host_client_id").isNotNull()

    def pick(connection_value: Column, host_value: str) -> Column:
        return F.when(by_conn, connection_value).otherwise(F.col(host_value))

    return (
        rejected.select("*", _local_endpoint(F.col("connection")).alias("local_endpoint"))
        .join(F.broadcast(listeners), "local_endpoint", "left")
        .join(by_connection, "connection", "left")
        .join(by_host, "source_host", "left")
        .select(
            "*",
            F.when(by_conn, F.lit("connection")).when(by_host_found, F.lit("host")).alias("matched_by"),
            pick(seen.client_id, "host_client_id").alias("client_id"),
            pick(seen.principal, "host_principal").alias("principal"),
            pick(seen.software_name, "host_software_name").alias("software_name"),
            pick(seen.software_version, "host_software_version").alias("software_version"),
        )
        .select(*REJECTION_COLUMNS)
        .orderBy(*REJECTION_ORDER)
    )
