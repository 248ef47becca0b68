"""Regenerates the shipped sample request logs: ``PYTHONPATH=. .venv/bin/python samples/request-logs/generate.py``
(needs setup.sh; the double is imported from the checkout, it is not installed).

``double/``: written by the broker double (kafka_double) while REAL clients talk to it: kcat (librdkafka) with
chosen software names, confluent-kafka, kafka-python, aiokafka and kafkajs, on three brokers of different eras:
broker 1 runs 2.6.0 (2.x text form with clientInformation), broker 2 runs 3.9.0 (JSON form), broker 3 runs
4.1.0 (JSON form, connection ids with a processor segment). A raw legacy client (kafka_double.raw_client)
sends Produce v2 and Metadata v1 to broker 2, as a pre-2.1 client would: the 4.0 upgrade blocker; broker 3 closes
the connection on its Produce v2 and writes the rejection to its ``server.log``. Broker 1's log is gzipped under an
hourly roll-over name.

``synthetic/``: JoinGroup and SyncGroup lines. The double serves no group APIs, so these are rendered by the
double's own request-log writer (kafka_double.request_log.format_line) from kafka-python JoinGroup/SyncGroup
messages for a Java consumer group and a Connect group, without a connection behind them. Every line there
is synthetic (the 3.9 ones are checked against kafka-clients 3.9.0's JSON converters by
tests/double/test_request_log_oracle.py); every line under ``double/`` was produced by a real request.

``../request-logs-info-only/``: what broker 2 writes with ``kafka.request.logger`` at INFO once it runs 3.9.1, the
first 3.9 release with KAFKA-18272 (backport 22a9127fe1): only the requests in a deprecated version, each at INFO.
The backport changed only that choice (RequestChannel.isRequestLoggingEnabled and the level of the line), so these
are broker 2's own lines marked ``requestApiVersionDeprecated`` (RequestConvertToJson), with the level INFO.
"""

from __future__ import annotations

import contextlib
import gzip
import shutil
import sys
import time
from pathlib import Path

from kafka_double.clients import ClientKind, ClientMix, ClientSpec, available_kinds
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec

# The demo's PLAINTEXT mix: the sample shows the same fleet the README's main job shows.
from kafka_double.demo_scenario import PLAINTEXT_CLIENTS
from kafka_double.raw_client import RawConnection
from kafka_double.registry import ClientInformation
from kafka_double.releases import get_release
from kafka_double.request_log import CompletedRequest, format_line
from kafka_double.wire import REQUEST_CLASSES, RESPONSE_CLASSES, RequestFrame

ProduceRequest, MetadataRequest = REQUEST_CLASSES[0], REQUEST_CLASSES[3]
JoinGroupRequest, JoinGroupResponse = REQUEST_CLASSES[11], RESPONSE_CLASSES[11]
SyncGroupRequest, SyncGroupResponse = REQUEST_CLASSES[14], RESPONSE_CLASSES[14]

HERE = Path(__file__).resolve().parent
LISTENERS = [ListenerSpec("PLAINTEXT", network_processors=2), ListenerSpec("INTERNAL", network_processors=1)]
BROKERS = [
    BrokerSpec(id=1, release="2.6.0", listeners=LISTENERS),
    BrokerSpec(id=2, release="3.9.0", listeners=LISTENERS),
    BrokerSpec(id=3, release="4.1.0", listeners=LISTENERS),
]
INTERNAL_CLIENTS: list[ClientSpec] = [
    (ClientKind.KCAT, "inventory-sync", "3.2.0"),
    ClientKind.KAFKAJS,
]


def _real_logs(target: Path) -> None:
    kinds = set(available_kinds())
    missing = [s for s in PLAINTEXT_CLIENTS + INTERNAL_CLIENTS if (s[0] if isinstance(s, tuple) else s) not in kinds]
    if missing:
        raise SystemExit(f"generate: clients not installed: {missing}; run scripts/setup.sh")
    with DoubleCluster(BROKERS, request_log_dir=target) as cluster:
        with contextlib.ExitStack() as clients:
            # Each broker as its clients' only bootstrap server, so every era's log gets every client.
            for broker in BROKERS:
                for listener, specs in (("PLAINTEXT", PLAINTEXT_CLIENTS), ("INTERNAL", INTERNAL_CLIENTS)):
                    port = cluster.broker(broker.id).listener_port(listener)
                    clients.enter_context(ClientMix(f"{cluster.host}:{port}", specs))
            time.sleep(2.0)  # let every client finish its bootstrap requests
        produce = ProduceRequest(version=2, acks=1, timeout_ms=30000, topic_data=[])
        with RawConnection(cluster.broker(2).listener_port("PLAINTEXT")) as legacy:
            legacy.request(MetadataRequest(version=1, topics=None), correlation_id=1, client_id="legacy-billing")
            legacy.request(produce, correlation_id=2, client_id="legacy-billing")
        # The same client against the 4.1 broker: its Metadata v4 is served, its Produce v2 is not, and the broker
        # closes the connection and says so in server.log (the inventory's `rejections`).
        with RawConnection(cluster.broker(3).listener_port("PLAINTEXT")) as legacy:
            legacy.request(MetadataRequest(version=4, topics=None), correlation_id=1, client_id="legacy-billing")
            with contextlib.suppress(ConnectionError):
                legacy.request(produce, correlation_id=2, client_id="legacy-billing")
        cluster.sync()
    old = target / "broker-1" / "kafka-request.log"
    with old.open("rb") as src, gzip.open(old.with_name("kafka-request.log.2026-01-01-10.gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    old.unlink()


def _group_request(frame: RequestFrame, request, response, connection: str, software: tuple[str, str]):
    return CompletedRequest(
        frame=frame,
        api_name="JoinGroup" if frame.api_key == 11 else "SyncGroup",
        request=request,
        response=response,
        connection_id=connection,
        listener="PLAINTEXT",
        security_protocol="PLAINTEXT",
        client_information=ClientInformation(*software),
        received_at=0.0,
        dequeued_at=0.0001,
        handled_at=0.0004,
        sent_at=0.0006,
    )


def synthetic_group_requests() -> list[tuple[str, CompletedRequest]]:
    """A Java 3.9 consumer (range/cooperative-sticky) and a Connect 2.6 worker (sessioned) joining groups, each
    request with the release of the broker that logs it (tests/double/test_request_log_oracle.py reads them)."""
    completed = []
    members = [
        (
            "3.9.0",
            "orders-svc",
            "consumer-orders-svc-1",
            "consumer",
            ["range", "cooperative-sticky"],
            "range",
            "10.0.0.2:9092-10.0.7.21:51220-3",
            ("apache-kafka-java", "3.9.0"),
            9,
            5,
        ),
        (
            "2.6.0",
            "connect-cluster",
            "connect-1",
            "connect",
            ["sessioned", "compatible"],
            "sessioned",
            "10.0.0.1:9092-10.0.7.40:40110-8",
            ("apache-kafka-java", "2.6.0"),
            7,
            5,
        ),
    ]
    for release, group, client_id, ptype, offered, chosen, conn, software, join_v, sync_v in members:
        rel = get_release(release)
        protocols = [JoinGroupRequest.JoinGroupRequestProtocol(version=join_v, name=n, metadata=b"") for n in offered]
        join = JoinGroupRequest(
            version=join_v,
            group_id=group,
            session_timeout_ms=45000,
            rebalance_timeout_ms=300000,
            member_id="",
            group_instance_id=None,
            protocol_type=ptype,
            protocols=protocols,
            reason=None,
        )
        joined = JoinGroupResponse(
            version=join_v,
            throttle_time_ms=0,
            error_code=0,
            generation_id=1,
            protocol_type=ptype,
            protocol_name=chosen,
            leader=f"{client_id}-m1",
            skip_assignment=False,
            member_id=f"{client_id}-m1",
            members=[],
        )
        sync = SyncGroupRequest(
            version=sync_v,
            group_id=group,
            generation_id=1,
            member_id=f"{client_id}-m1",
            group_instance_id=None,
            protocol_type=ptype,
            protocol_name=chosen,
            assignments=[],
        )
        synced = SyncGroupResponse(
            version=sync_v,
            throttle_time_ms=0,
            error_code=0,
            protocol_type=ptype,
            protocol_name=chosen,
            assignment=b"",
        )
        for api_key, version, correlation, request, response in (
            (11, join_v, 10, join, joined),
            (14, sync_v, 11, sync, synced),
        ):
            advertised = rel.api(api_key)
            assert advertised is not None, f"release {rel.version} has no API {api_key}"
            header_version = 2 if advertised.is_flexible(version) else 1
            frame = RequestFrame(api_key, version, correlation, client_id, header_version, b"")
            completed.append((release, _group_request(frame, request, response, conn, software)))
    return completed


def _synthetic_groups(target: Path) -> None:
    lines = [
        format_line(get_release(release), c, wall_time=1767261600.0 + c.frame.correlation_id)
        for release, c in synthetic_group_requests()
    ]
    out = target / "broker-9" / "kafka-request.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


DEPRECATED_MARK = '"requestApiVersionDeprecated":true'
INFO_ONLY = HERE.parent / "request-logs-info-only"


def _info_only(double: Path, target: Path) -> None:
    """Broker 2's log as a 3.9.1 broker writes it at INFO: its deprecated-version lines, at level INFO."""
    source = double / "broker-2" / "kafka-request.log"
    lines = [
        line.replace("] DEBUG Completed request:", "] INFO Completed request:", 1)
        for line in source.read_text(encoding="utf-8").splitlines()
        if DEPRECATED_MARK in line
    ]
    if not lines:
        raise SystemExit(f"generate: {source} has no deprecated-version line to keep")
    out = target / "broker-2" / "kafka-request.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    for directory in (HERE / "double", HERE / "synthetic", INFO_ONLY):
        shutil.rmtree(directory, ignore_errors=True)
    _real_logs(HERE / "double")
    _synthetic_groups(HERE / "synthetic")
    _info_only(HERE / "double", INFO_ONLY)
    total = sum(p.stat().st_size for p in HERE.rglob("kafka-request.log*"))
    print(f"samples written under {HERE} ({total:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
