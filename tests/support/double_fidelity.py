"""Comparing the broker double with a real broker of the release it emulates: the same clients on both, then both read
the same way (one jmxquery dump per broker; a raw ApiVersions request). Shared by the KRaft comparison
(tests/real_kafka/test_real_double_fidelity.py) and the ZooKeeper-mode one (tests/e2e/test_zookeeper_releases.py).

The clients: kcat announcing ``KCAT_NAME``/``KCAT_VERSION`` on PLAINTEXT, kafka-python over SASL_SSL (SCRAM-SHA-512)
and a raw connection that announces ``LEGACY_NAME``/``LEGACY_VERSION`` and sends DescribeConfigs v0 once (deprecated
by 3.7.0's specs, removed in 4.0: 4.x answers UNSUPPORTED_VERSION and closes the connection).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jmxquery import JMXConnection, JMXQuery
from kafka.protocol.admin import DescribeConfigsRequest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from exporter.sources.object_name import parse_object_name
from harness.clients import ClientKind, RealClient, start_client
from harness.raw_client import RawConnection
from tests.support.waiting import wait_for

KCAT_NAME, KCAT_VERSION = "fidelity-kcat", "5.6.7"
LEGACY_NAME, LEGACY_VERSION = "fidelity-legacy", "0.9.9"
#: The software names of the clients ``fidelity_clients`` starts: only their gauges are compared.
OURS = frozenset({KCAT_NAME, "kafka-python", LEGACY_NAME})
SOCKET_SERVER = "kafka.server:type=socket-server-metrics,*"
DEPRECATED = "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,*"
#: DescribeConfigs v0: deprecated from 3.7.0's specs on, removed in 4.0.
DEPRECATED_REQUEST = (32, 0)

#: One MBean attribute as read: (ObjectName, attribute, value).
Bean = tuple[str, str, Any]
#: One gauge as compared: its ObjectName's keys in order, then listener, software name and version (client gauge)
#: or cipher, protocol and listener (TLS-cipher gauge).
Gauge = tuple[tuple[str, ...], str, str, str]


@dataclass(frozen=True)
class Side:
    """One broker, real or double: where its clients connect, its JMX and credentials."""

    plaintext: int
    sasl_ssl: int
    jmx_url: str
    jmx_user: str | None
    jmx_password: str | None


def sasl_ssl_settings(user: str, password: str, ca_file: str) -> dict[str, str]:
    """kafka-python's settings for a SASL_SSL listener with SCRAM-SHA-512."""
    return {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": password,
        "ssl_cafile": ca_file,
    }


@contextlib.contextmanager
def fidelity_clients(
    side: Side, sasl_ssl: Mapping[str, str], client_id_prefix: str | None = None
) -> Iterator[list[RealClient]]:
    """The comparison's clients on ``side``, open until the context ends (the caller waits for them to be ready).
    With ``client_id_prefix`` each sends ``<prefix>-kcat``, ``<prefix>-kafka-python`` and ``<prefix>-raw-legacy`` as
    its clientId (a request log then tells them apart); without, kcat and kafka-python send their defaults and the
    raw connection ``LEGACY_NAME``."""

    def client_id(kind: str) -> str | None:
        return None if client_id_prefix is None else f"{client_id_prefix}-{kind}"

    with contextlib.ExitStack() as stack:
        clients = [
            stack.enter_context(
                start_client(
                    ClientKind.KCAT,
                    f"127.0.0.1:{side.plaintext}",
                    software_name=KCAT_NAME,
                    software_version=KCAT_VERSION,
                    client_id=client_id("kcat"),
                )
            ),
            stack.enter_context(
                start_client(
                    ClientKind.KAFKA_PYTHON,
                    f"127.0.0.1:{side.sasl_ssl}",
                    properties=sasl_ssl,
                    client_id=client_id("kafka-python"),
                )
            ),
        ]
        legacy = stack.enter_context(RawConnection(side.plaintext))
        hello = ApiVersionsRequest(version=3, client_software_name=LEGACY_NAME, client_software_version=LEGACY_VERSION)
        legacy_id = client_id("raw-legacy") or LEGACY_NAME
        legacy.request(hello, correlation_id=1, client_id=legacy_id)
        # 4.x: no DescribeConfigs v0 any more; the broker closes the connection.
        with contextlib.suppress(ConnectionError):
            legacy.request(DescribeConfigsRequest(version=0, resources=[]), correlation_id=2, client_id=legacy_id)
        yield clients


def within(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether ``condition`` came true within ``seconds`` (polled every second)."""
    try:
        wait_for(condition, timeout=seconds, interval=1.0)
    except AssertionError:
        return False
    return True


def dump(side: Side, *more: JMXQuery) -> list[Bean]:
    """The socket-server gauges and the deprecated-requests meters (and ``more``), in one JVM."""
    queries = [JMXQuery(SOCKET_SERVER, "connections"), JMXQuery(DEPRECATED, "Count"), *more]
    results = JMXConnection(side.jmx_url, side.jmx_user, side.jmx_password).query(queries, timeout=60)
    return [(q.mBeanName, q.attribute, q.value) for q in results]


def client_gauges(beans: list[Bean], ours: frozenset[str] = OURS) -> set[Gauge]:
    """The live gauges of the clients named ``ours``. Neither the processor a connection lands on (the broker's
    round robin) nor the number of connections is compared: kafka-python keeps its bootstrap connection beside the
    broker's for a while or not, at its own pace, against either broker."""
    live: dict[Gauge, int] = {}
    for object_name, attribute, value in beans:
        props = parse_object_name(object_name).properties
        if attribute != "connections" or props.get("clientSoftwareName") not in ours:
            continue
        key = (tuple(props), props["listener"], props["clientSoftwareName"], props["clientSoftwareVersion"])
        live[key] = live.get(key, 0) + int(value)
    # Zeros linger after a close (Kafka keeps them until a processor holds 100 keys), also from other modules.
    return {key for key, count in live.items() if count > 0}


def cipher_gauges(beans: list[Bean]) -> set[Gauge]:
    """The TLS-cipher gauges, live or lingering at 0 (a shared real broker keeps earlier modules' zeros, which name
    the same cipher suites)."""
    out: set[Gauge] = set()
    for object_name, attribute, _ in beans:
        props = parse_object_name(object_name).properties
        if attribute == "connections" and "cipher" in props:
            out.add((tuple(props), props["cipher"], props["protocol"], props["listener"]))
    return out


def deprecated_meters(beans: list[Bean]) -> dict[tuple[tuple[str, str], ...], int]:
    """The raw legacy connection's DeprecatedRequestsPerSec meters: {ObjectName key/value pairs in order: Count}."""
    return {
        tuple(parse_object_name(object_name).properties.items()): int(value)
        for object_name, attribute, value in beans
        if attribute == "Count" and f"clientSoftwareName={LEGACY_NAME}," in object_name
    }


def expected_deprecated_meter() -> dict[tuple[tuple[str, str], ...], int]:
    """What a 3.7-3.9 broker meters for the raw legacy connection's one DescribeConfigs v0."""
    _, version = DEPRECATED_REQUEST
    return {
        (
            ("type", "RequestMetrics"),
            ("name", "DeprecatedRequestsPerSec"),
            ("request", "DescribeConfigs"),
            ("version", str(version)),
            ("clientSoftwareName", LEGACY_NAME),
            ("clientSoftwareVersion", LEGACY_VERSION),
        ): 1
    }


def api_versions_frame(port: int, version: int, client_id: str = "fidelity") -> bytes:
    """The whole answer frame to a raw ApiVersions request of ``version`` announcing software "fidelity" 1.0."""
    request = ApiVersionsRequest(version=version, client_software_name="fidelity", client_software_version="1.0")
    with RawConnection(port) as connection:
        return connection.request(request, correlation_id=1, client_id=client_id)


def api_versions(port: int, version: int, client_id: str = "fidelity") -> ApiVersionsResponse:
    return decode_api_versions(api_versions_frame(port, version, client_id), version)


def decode_api_versions(frame: bytes, version: int) -> ApiVersionsResponse:
    return ApiVersionsResponse.decode(frame, version=version, header=True, framed=True)


def features(response: ApiVersionsResponse) -> dict[str, tuple[int, int]]:
    supported = {f"supported:{f.name}": (f.min_version, f.max_version) for f in response.supported_features}
    finalized = {f"finalized:{f.name}": (f.min_version_level, f.max_version_level) for f in response.finalized_features}
    return supported | finalized
