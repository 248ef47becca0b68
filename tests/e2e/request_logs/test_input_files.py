"""Listing the inputs while brokers write under them: a broker rewrites its checkpoint files every few seconds (a
``.tmp`` file written, then renamed over the old one) and log4j deletes its oldest request log as it rolls. An
operator may give the job a directory holding both; files that come and go there must never stop the run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from exporter.request_logs.input_files import list_input_files

LINE = (
    '[2026-11-23 10:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":18,'
    '"requestApiVersion":3,"correlationId":1,"clientId":"a"}}\n'
)


@contextmanager
def churning(step: Callable[[int], None]) -> Iterator[threading.Event]:
    """``step(n)`` run over and over in a thread until the block ends; the event is set once it has run 50 times."""
    stop, warmed = threading.Event(), threading.Event()

    def loop() -> None:
        n = 0
        while not stop.is_set():
            step(n)
            n += 1
            if n == 50:
                warmed.set()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield warmed
    finally:
        stop.set()
        thread.join(10)


def test_files_created_and_deleted_during_the_listing_never_stop_it(spark, tmp_path: Path) -> None:
    broker = tmp_path / "node-1"
    logs, partition = broker / "logs", broker / "data" / "orders-0"
    logs.mkdir(parents=True)
    partition.mkdir(parents=True)
    kept = [logs / "kafka-request.log", logs / "kafka-request.log.1"]
    for path in kept:
        path.write_text(LINE)
    dropped = logs / "kafka-request.log.2"
    deleted_dir = broker / "data" / "orders-1.deleted"

    def broker_writes(n: int) -> None:
        # What a broker does to its data directory and log4j to its logs, many times a second here.
        for directory in (broker / "data", partition):
            tmp = directory / "replication-offset-checkpoint.tmp"
            tmp.write_text(f"0\n{n}\n")
            tmp.replace(directory / "replication-offset-checkpoint")
        dropped.write_text(LINE)
        dropped.unlink()
        deleted_dir.mkdir()
        (deleted_dir / "00000000000000000000.log").write_bytes(b"")
        (deleted_dir / "00000000000000000000.log").unlink()
        deleted_dir.rmdir()

    with churning(broker_writes) as warmed:
        assert warmed.wait(30)
        listings = [
            {Path(f.read_path.removeprefix("file:")) for f in list_input_files(spark, [str(tmp_path)])}
            for _ in range(15)
        ]
    for listed in listings:
        # The rolled file is listed only when it was there for the whole listing of it: never a file half seen.
        assert set(kept) <= listed <= {*kept, dropped}, listed


def test_the_listing_selects_the_files_spark_itself_would_read(spark, tmp_path: Path) -> None:
    from exporter.request_logs import log_format

    listed_names = [
        "kafka-request.log",
        "broker-1/kafka-request.log.2026-11-23-10",
        "broker-1/nested/deeper/kafka-request.log.1",
        "broker-1/server.log",  # another kind, listed as such
        "broker-1/_metadata_kept/kafka-request.log",  # Spark keeps "_metadata*" names
    ]
    skipped_names = [
        "broker-1/kafka-request.log._COPYING_",  # a copy under way (hdfs dfs -put)
        "broker-1/_temporary/kafka-request.log",
        "broker-1/.snapshot/kafka-request.log",
        "broker-2/.kafka-request.log.swp",
        "broker-2/controller.log",
    ]
    names = listed_names + skipped_names
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(LINE)
    read_by_spark = {
        row.path
        for row in spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", log_format.FILE_GLOB)
        .text(str(tmp_path))
        .selectExpr("_metadata.file_path AS path")
        .distinct()
        .collect()
    }
    listed = list_input_files(spark, [str(tmp_path)])
    assert {f.path for f in listed if f.kind == "request"} == read_by_spark
    assert [Path(f.read_path.removeprefix("file:")).relative_to(tmp_path).as_posix() for f in listed] == sorted(
        listed_names
    )
