"""Which files an incremental run reads, from their fingerprints alone (the Spark side is in tests/e2e)."""

from __future__ import annotations

import gzip

from exporter.request_logs.file_state import Contribution, forget, new_contribution, plan_reads
from exporter.request_logs.input_files import HEAD_BYTES, InputFile


def log_file(path: str, content: bytes, mtime_ms: int = 1, compressed: bool = False) -> InputFile:
    stored = gzip.compress(content, mtime=0) if compressed else content
    return InputFile(
        path=path,
        read_path=path,
        kind="request",
        size=len(stored),
        mtime_ms=mtime_ms,
        compressed=compressed,
        head=content[:HEAD_BYTES],
    )


def read(file: InputFile, last_ts: int = 20260320100000000) -> Contribution:
    known = new_contribution(file, f"r1/{file.path}", "r1")
    return Contribution(**{**known.to_json(), "lines": 10, "last_ts": last_ts})


LONG = b"".join(b"[2026-03-20 10:00:%02d,000] DEBUG Completed request:{...}\n" % (i % 60) for i in range(200))


def test_a_short_active_file_that_grew_past_the_head_is_read_again_replacing_its_first_read() -> None:
    short = log_file("file:/logs/kafka-request.log", LONG[:300])
    grown = log_file("file:/logs/kafka-request.log", LONG, mtime_ms=2)
    plan = plan_reads([grown], [read(short)])
    assert [(item.file.path, item.reason, [c.path for c in item.replaces]) for item in plan.to_read] == [
        ("file:/logs/kafka-request.log", "grown", ["file:/logs/kafka-request.log"])
    ]


def test_rotation_renamed_without_new_lines_is_skipped_and_gzipped_is_read_again() -> None:
    active = log_file("file:/logs/kafka-request.log", LONG)
    renamed = log_file("file:/logs/kafka-request.log.2026-03-20-10", LONG)  # a rename keeps size and mtime
    new_active = log_file("file:/logs/kafka-request.log", b"[2026-03-20 11:00:00,000] DEBUG other\n", mtime_ms=3)
    plan = plan_reads([renamed, new_active], [read(active)])
    assert [c.path for c in plan.unchanged] == ["file:/logs/kafka-request.log.2026-03-20-10"]
    assert [(item.file.path, item.reason) for item in plan.to_read] == [("file:/logs/kafka-request.log", "new")]

    gzipped = log_file("file:/logs/kafka-request.log.2026-03-20-10.gz", LONG, compressed=True)
    plan = plan_reads([gzipped], [read(active)])
    assert [(item.reason, len(item.replaces)) for item in plan.to_read] == [("rotated", 1)]


def test_a_file_beside_its_gzip_is_read_once_and_a_shrunk_file_is_flagged() -> None:
    plain = log_file("file:/logs/kafka-request.log.2026-03-20-10", LONG)
    gzipped = log_file("file:/logs/kafka-request.log.2026-03-20-10.gz", LONG, compressed=True)
    plan = plan_reads([gzipped, plain], [])
    assert [item.file.path for item in plan.to_read] == [plain.path]
    assert [(d.path, chosen.path) for d, chosen in plan.duplicates] == [(gzipped.path, plain.path)]

    shrunk = log_file(plain.path, LONG[: len(LONG) // 2], mtime_ms=5)
    assert [item.reason for item in plan_reads([shrunk], [read(plain)]).to_read] == ["shrank"]


def test_forgotten_files_stay_known_so_a_file_still_there_is_not_read_again() -> None:
    old = log_file("file:/logs/kafka-request.log.2026-03-19-10", LONG)
    recent = log_file("file:/logs/kafka-request.log.2026-03-21-10", LONG.replace(b"03-20", b"03-21"))
    known, dropped = forget([read(old, 20260319105959000), read(recent, 20260321105959000)], 20260320000000000)
    assert dropped == 1 and [c.forgotten for c in known] == [True, False]
    plan = plan_reads([old, recent], known)
    assert plan.to_read == [] and len(plan.unchanged) == 2


def test_empty_files_are_neither_read_nor_remembered() -> None:
    plan = plan_reads([log_file("file:/logs/kafka-request.log", b"")], [])
    assert plan.to_read == [] and [f.path for f in plan.empty] == ["file:/logs/kafka-request.log"]


def test_a_run_is_skipped_only_when_it_would_publish_the_same_tables() -> None:
    from exporter import __version__
    from exporter.request_logs.job import InventoryOptions, nothing_new

    rotated = log_file("file:/logs/kafka-request.log.2026-03-20-10", LONG)
    known = [read(rotated)]
    published = {"job_version": __version__, "target_release": "4.0.0", "policy_sha256": "p", "unreadable": []}
    options = InventoryOptions(inputs=["/logs"], output="/out", incremental=True)
    files = nothing_new(options, published, [rotated], known, "p")
    assert files is not None and (files["read"], files["skipped_unchanged"]) == (0, 1)
    # Deleted by retention: still nothing to derive anew (its lines stay as history).
    assert nothing_new(options, published, [], known, "p") == {
        **files,
        "listed": 0,
        "skipped_unchanged": 0,
        "history_only": 1,
    }
    # Each of these would change the tables: the run goes on.
    renamed = log_file("file:/logs/kafka-request.log.1", LONG)  # the manifest's path changes
    grown = log_file(rotated.path, LONG + LONG[:100], mtime_ms=2)
    assert nothing_new(options, published, [renamed], known, "p") is None
    assert nothing_new(options, published, [grown], known, "p") is None
    assert nothing_new(options, published, [rotated], known, "another policy") is None
    assert nothing_new(options, {**published, "target_release": "3.9.0"}, [rotated], known, "p") is None
    assert nothing_new(options, {**published, "job_version": "0.0.1"}, [rotated], known, "p") is None
    forgetting = InventoryOptions(inputs=["/logs"], output="/out", incremental=True, forget_before=20260101000000000)
    assert nothing_new(forgetting, published, [rotated], known, "p") is None
