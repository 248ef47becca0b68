"""The inventory's server.log pattern (exporter/request_logs/server_log.py REJECTION) over one rejection event of
each form a broker writes, each as a real broker's Processor logs it: the first of its two ERROR events and the
exception line after it (the record the job reads; the lines of 4.4.0 and 3.9.2 are those the tests' real brokers
wrote, tests/real_kafka/test_real_legacy_clients.py reads 4.4.0's from a live server.log)."""

from __future__ import annotations

import re

import pytest

from exporter.request_logs.server_log import REJECTION

CONNECTION = "127.0.0.1:9092-127.0.0.1:51234-1-7"
ERRORS = "org.apache.kafka.common.errors."


def event(exception: str, prefix: str = "") -> str:
    return (
        f"[2026-03-20 09:15:02,123] ERROR {prefix}Closing socket for {CONNECTION} because of error "
        f"(kafka.network.Processor)\n{ERRORS}{exception}"
    )


@pytest.mark.parametrize(
    ("exception", "read"),
    [
        # 4.0 to 4.4: a version a broker no longer serves (Produce v2, Fetch v3 on 4.x).
        (
            "UnsupportedVersionException: Received request for api with key 0 (Produce) and unsupported version 2",
            ("UnsupportedVersionException", "0", "Produce", "2"),
        ),
        (
            "UnsupportedVersionException: Received request for api with key 1 (Fetch) and unsupported version 3",
            ("UnsupportedVersionException", "1", "Fetch", "3"),
        ),
        # 4.0 to 4.3 name an API the listener does not serve by its message name ...
        (
            "InvalidRequestException: Received request for disabled api with key 52 (Vote) and version 0",
            ("InvalidRequestException", "52", "Vote", "0"),
        ),
        # ... 4.4.0 by its ApiKeys constant (KAFKA-20648).
        (
            "InvalidRequestException: Received request for disabled api with key 53 (BEGIN_QUORUM_EPOCH) and version 0",
            ("InvalidRequestException", "53", "BEGIN_QUORUM_EPOCH", "0"),
        ),
    ],
)
def test_a_4x_rejection_is_read_with_its_api_and_version(exception: str, read: tuple[str, ...]) -> None:
    match = re.match(REJECTION, event(exception))
    assert match is not None
    # No [SocketServer listenerType=..., nodeId=...] prefix: the Processor logs without one.
    assert match.group(2, 3, 4) == (None, None, CONNECTION)
    assert match.group(5, 7, 8, 9) == read
    assert match.group(6) == exception.split(": ", 1)[1]


def test_a_prefixed_event_is_read_too_and_keeps_its_node_id() -> None:
    exception = "UnsupportedVersionException: Received request for api with key 0 (Produce) and unsupported version 2"
    match = re.match(REJECTION, event(exception, "[SocketServer listenerType=BROKER, nodeId=3] "))
    assert match is not None and match.group(2, 3, 4, 8) == ("BROKER", "3", CONNECTION, "Produce")


@pytest.mark.parametrize(
    "exception",
    [
        # 3.5 to 3.9 (3.9.2 wrote this for Produce v12), KRaft and ZooKeeper mode alike: no API version is refused
        # that a client of the 4.0 upgrade would send, and the form is not the job's.
        "InvalidRequestException: Received request api key PRODUCE with version 12 which is not enabled",
        # 2.8 to 3.4: an API outside the listener's scope, no version named.
        "InvalidRequestException: Received request api key VOTE which is not enabled",
        # 2.7.
        "InvalidRequestException: Received request for disabled api key VOTE",
    ],
)
def test_the_3x_and_2x_forms_are_not_rejections_of_the_job(exception: str) -> None:
    assert re.match(REJECTION, event(exception)) is None
