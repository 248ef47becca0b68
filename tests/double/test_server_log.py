"""The double's server.log events for a rejected request: what each release's processor logs (no logger prefix in
any of them), and read back by the inventory's server.log pattern."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from exporter.request_logs.server_log import REJECTION
from kafka_double.cluster import BrokerSpec, DoubleCluster
from kafka_double.mbean_host import MBeanHost
from kafka_double.raw_client import RawConnection
from kafka_double.releases import get_release
from kafka_double.server_log import ServerLog, rejection_events
from kafka_double.wire import REQUEST_CLASSES

CONNECTION = "127.0.0.1:9092-127.0.0.1:51234-1-7"
ERRORS = "org.apache.kafka.common.errors."
STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] ")


def _event(lines: list[str]) -> str:
    # What the job reads as one record: a log4j event and its exception line.
    return "\n".join(lines[:2])


def _unstamped(lines: list[str]) -> list[str]:
    return [STAMP.sub("", line) for line in lines]


def _real(exception: str) -> list[str]:
    """The four lines a real broker wrote for one rejection on CONNECTION, without their time stamps."""
    return [
        f"ERROR Closing socket for {CONNECTION} because of error (kafka.network.Processor)",
        exception,
        f"ERROR Exception while processing request from {CONNECTION} (kafka.network.Processor)",
        exception,
    ]


@pytest.mark.parametrize(
    ("release", "api_key", "api_name", "version", "known", "exception"),
    [
        # As a real 4.4.0 broker wrote them for a PLAINTEXT connection (real_kafka, KRaft combined node).
        (
            "4.4.0",
            53,
            "BeginQuorumEpoch",
            0,
            True,
            "InvalidRequestException: Received request for disabled api with key 53 (BEGIN_QUORUM_EPOCH) and version 0",
        ),
        (
            "4.4.0",
            0,
            "Produce",
            2,
            False,
            "UnsupportedVersionException: Received request for api with key 0 (Produce) and unsupported version 2",
        ),
        # As a real 3.9.2 broker wrote them: a controller-only API and a version past Produce's 11 alike.
        (
            "3.9.2",
            53,
            "BeginQuorumEpoch",
            0,
            True,
            "InvalidRequestException: Received request api key BEGIN_QUORUM_EPOCH with version 0 which is not enabled",
        ),
        (
            "3.9.2",
            0,
            "Produce",
            12,
            False,
            "InvalidRequestException: Received request api key PRODUCE with version 12 which is not enabled",
        ),
    ],
)
def test_the_lines_are_those_a_real_broker_wrote(
    release: str, api_key: int, api_name: str, version: int, known: bool, exception: str
) -> None:
    lines = rejection_events(get_release(release), CONNECTION, api_key, api_name, version, known)
    assert all(STAMP.match(line) for line in lines[::2])
    assert _unstamped(lines) == _real(ERRORS + exception)


def test_4x_removed_version_reads_back_as_unsupported_version() -> None:
    lines = rejection_events(get_release("4.1.0"), CONNECTION, 1, "Fetch", 3, known=False)
    assert len(lines) == 4 and lines[1] == lines[3]  # Kafka logs the exception with both ERROR events
    match = re.match(REJECTION, _event(lines))
    assert match is not None
    assert match.group(2, 3, 4, 5, 7, 8, 9) == (
        None,  # no [SocketServer listenerType=..., nodeId=...] prefix: the Processor logs without one
        None,
        CONNECTION,
        "UnsupportedVersionException",
        "1",
        "Fetch",
        "3",
    )
    assert match.group(6) == "Received request for api with key 1 (Fetch) and unsupported version 3"


def test_40_to_43_name_a_disabled_api_by_its_message_name_and_read_back() -> None:
    for release in ("4.0.0", "4.3.1"):
        lines = rejection_events(get_release(release), CONNECTION, 52, "Vote", 0, known=True)
        match = re.match(REJECTION, _event(lines))
        assert match is not None and match.group(5, 6) == (
            "InvalidRequestException",
            "Received request for disabled api with key 52 (Vote) and version 0",
        )


def test_44_names_a_disabled_api_by_its_constant_and_the_job_reads_it_back() -> None:
    lines = rejection_events(get_release("4.4.0"), CONNECTION, 53, "BeginQuorumEpoch", 0, known=True)
    match = re.match(REJECTION, _event(lines))
    assert match is not None, lines
    assert match.group(5, 7, 8, 9) == ("InvalidRequestException", "53", "BEGIN_QUORUM_EPOCH", "0")


def test_3x_zookeeper_mode_has_no_prefix_either_and_its_form_is_not_the_jobs() -> None:
    lines = rejection_events(get_release("3.9.0", "zookeeper"), CONNECTION, 0, "Produce", 13, known=False)
    assert _unstamped(lines) == _real(
        ERRORS + "InvalidRequestException: Received request api key PRODUCE with version 13 which is not enabled"
    )
    assert re.match(REJECTION, _event(lines)) is None


def test_28_to_34_reject_an_api_outside_the_listeners_scope_without_naming_a_version() -> None:
    release = get_release("3.4.0")
    assert release.api(52) is None  # Vote: controller-only
    lines = rejection_events(release, CONNECTION, 52, "Vote", 0, known=True)
    assert _unstamped(lines) == _real(
        ERRORS + "InvalidRequestException: Received request api key VOTE which is not enabled"
    )


def test_27_rejects_the_api_keys_it_disables() -> None:
    lines = rejection_events(get_release("2.7.0"), CONNECTION, 52, "Vote", 0, known=True)
    assert _unstamped(lines) == _real(ERRORS + "InvalidRequestException: Received request for disabled api key VOTE")


@pytest.mark.parametrize(("release", "version"), [("3.4.0", 10), ("2.8.0", 10), ("2.7.0", 9), ("2.0.0", 7)])
def test_before_35_a_version_past_a_served_apis_range_is_no_header_rejection(
    release: str, version: int, tmp_path: Path
) -> None:
    """These releases check the API, not the version: the body parser gets the request, and the double writes no
    line for what happens there."""
    assert rejection_events(get_release(release), CONNECTION, 0, "Produce", version, known=False) == []
    log = ServerLog(tmp_path, 1, get_release(release))
    log.rejected(CONNECTION, 0, "Produce", version, known=False)
    log.close()
    assert not log.path.exists()


def test_a_41_broker_closes_on_produce_v2_and_logs_it_where_the_inventory_reads_it(
    tmp_path: Path, mbean_host: MBeanHost
) -> None:
    produce = REQUEST_CLASSES[0](version=2, acks=1, timeout_ms=30000, topic_data=[])
    with DoubleCluster([BrokerSpec(1, release="4.1.0")], mbean_host=mbean_host, request_log_dir=tmp_path) as c:
        port = c.broker(1).listener_port("PLAINTEXT")
        with RawConnection(port) as legacy, pytest.raises(ConnectionError):
            legacy.request(produce, client_id="legacy-billing")
    text = (tmp_path / "broker-1" / "server.log").read_text(encoding="utf-8")
    assert re.match(r"\[[^\]]+\] ERROR Closing socket for ", text), text
    match = re.match(REJECTION, text)
    assert match is not None, text
    assert match.group(5, 6) == (
        "UnsupportedVersionException",
        "Received request for api with key 0 (Produce) and unsupported version 2",
    )
    assert match.group(4).startswith(f"127.0.0.1:{port}-127.0.0.1:")
    assert "legacy-billing" not in (tmp_path / "broker-1" / "kafka-request.log").read_text(encoding="utf-8")
