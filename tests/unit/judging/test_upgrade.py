"""Deprecated requests judged against the upgrade target: only the versions it rejects become blocking rows."""

from __future__ import annotations

import logging

import pytest

from exporter.freshness import judge_freshness, stale_view
from exporter.judging.upgrade import UpgradeJudge
from exporter.snapshot import BlockingRequests, DeprecatedRequests, JmxReading, Snapshot, SourceKey, SourceResult

REQUESTS = (
    DeprecatedRequests("Metadata", "2", "librdkafka", "1.5.0", 40),
    DeprecatedRequests("Produce", "5", "librdkafka", "1.5.0", 30),
    DeprecatedRequests("Fetch", "3", "librdkafka", "1.5.0", 20),
    DeprecatedRequests("Produce", "2", "kafka-python", "2.0.2", 10),
    DeprecatedRequests("JoinGroup", "1", "librdkafka", "2.3.0", 5),
)


def results(*requests: DeprecatedRequests) -> tuple[SourceResult, ...]:
    return (
        SourceResult(SourceKey("prod", "1", "jmx"), True, 0.1, 10.0, reading=JmxReading(deprecated_requests=requests)),
        SourceResult(SourceKey("prod", "2", "jmx"), False, 2.0, 10.0, error_reason="timeout", error_message="late"),
    )


def blocking(target: str, *requests: DeprecatedRequests) -> set[tuple[str, str]]:
    return {(row.request, row.version) for row in UpgradeJudge(target).judge(results(*requests))}


def test_only_versions_the_target_rejects_block() -> None:
    assert blocking("4.0.0", *REQUESTS) == {("Fetch", "3"), ("Produce", "2"), ("JoinGroup", "1")}
    assert blocking("4.0.1", *REQUESTS) == {("Fetch", "3"), ("Produce", "2")}


def test_a_row_keeps_the_meter_labels_and_count_and_names_the_target() -> None:
    [row] = UpgradeJudge("4.0.1").judge(results(*REQUESTS[2:3]))
    assert row == BlockingRequests("prod", "1", "Fetch", "3", "librdkafka", "1.5.0", 20, "4.0.1")


def test_an_unknown_request_counts_as_blocking_and_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    judge = UpgradeJudge("4.0.0")
    odd = (DeprecatedRequests("FancyNewApi", "0", "x", "1", 1), DeprecatedRequests("Fetch", "v3", "x", "1", 1))
    with caplog.at_level(logging.WARNING, logger="exporter.judging.upgrade"):
        for _ in range(3):
            assert {(row.request, row.version) for row in judge.judge(results(*odd))} == {
                ("FancyNewApi", "0"),
                ("Fetch", "v3"),
            }
    assert [r.getMessage() for r in caplog.records] == [
        "deprecated request FancyNewApi v0 is not an API version the release table knows; counted as blocking "
        "Kafka 4.0.0",
        "deprecated request Fetch vv3 is not an API version the release table knows; counted as blocking Kafka 4.0.0",
    ]


def test_a_stale_snapshot_serves_no_blocking_rows() -> None:
    polled = results(*REQUESTS)
    snapshot = Snapshot(
        sequence=1,
        taken_at=10.0,
        cycle_duration_seconds=0.5,
        results=polled,
        blocking_requests=UpgradeJudge("4.0.0").judge(polled),
    )
    assert snapshot.blocking_requests
    stale = stale_view(snapshot, judge_freshness(snapshot, 0.0, 90.0, 200.0))
    assert stale.blocking_requests == ()
