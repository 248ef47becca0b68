"""Real Kafka clients (harness.clients): what each one really sends, and that each one is recorded by the
broker double with the identity a real broker would record, and released on close.

Two layers:
* a recording TCP listener that reads only the first request frame of each connection, to pin down what
  each client library really sends (ApiVersions version, client id, software name/version);
* end-to-end against ``kafka_double.cluster.DoubleCluster``: READY, ``registry_view`` labels, count -> 0.
"""

from __future__ import annotations

import collections
import logging
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from harness.clients import (
    JAVA_CLIENT_OPTIONS,
    JAVA_CLIENT_SOURCE,
    LEGACY_JAVA_RELEASES,
    UNKNOWN,
    ClientError,
    ClientKind,
    ClientMix,
    ExpectedIdentity,
    available_kinds,
    expected_identity,
    kcat_librdkafka_version,
    librdkafka_sanitize,
    missing_reason,
    start_client,
)
from harness.kafka_jars import kafka_clients_classpath

API_VERSIONS_KEY = 18


def require(kind: ClientKind) -> None:
    reason = missing_reason(kind)
    if reason is not None:
        pytest.skip(f"{kind.value} not installed: {reason}")


# ---------------------------------------------------------------------------------------------------------
# Unit tests (no processes)


def test_librdkafka_sanitize_mirrors_rd_kafka_sw_str_sanitize() -> None:
    assert librdkafka_sanitize("my-app") == "my-app"
    assert librdkafka_sanitize("_my app_") == "my-app"
    assert librdkafka_sanitize("1.0.0+build") == "1.0.0-build"
    assert librdkafka_sanitize("-x.") == "x"


def test_expected_identities_come_from_installed_versions() -> None:
    import importlib.metadata

    assert expected_identity(ClientKind.AIOKAFKA) == UNKNOWN
    assert expected_identity(ClientKind.KAFKAJS) == UNKNOWN
    assert expected_identity(ClientKind.KAFKA_PYTHON) == ExpectedIdentity(
        "kafka-python", importlib.metadata.version("kafka-python")
    )
    assert expected_identity(ClientKind.KCAT, "my-app", "1.2.3") == ExpectedIdentity("my-app", "1.2.3")
    if missing_reason(ClientKind.CONFLUENT) is None:
        ident = expected_identity(ClientKind.CONFLUENT)
        assert ident.software_name == "confluent-kafka-python"
        assert ident.software_version.startswith(importlib.metadata.version("confluent-kafka") + "-rdkafka-")
    if missing_reason(ClientKind.KCAT) is None:
        assert expected_identity(ClientKind.KCAT) == ExpectedIdentity("librdkafka", kcat_librdkafka_version())
    assert expected_identity(ClientKind.JAVA) == ExpectedIdentity("apache-kafka-java", "4.3.0")
    assert expected_identity(ClientKind.JAVA_3_9) == ExpectedIdentity("apache-kafka-java", "3.9.0")
    assert expected_identity(ClientKind.JAVA_2_8) == ExpectedIdentity("apache-kafka-java", "2.8.2")
    assert expected_identity(ClientKind.JAVA_0_10_2) == UNKNOWN
    assert expected_identity(ClientKind.JAVA_0_10_1) == UNKNOWN


def test_software_identity_only_for_kcat() -> None:
    with pytest.raises(ValueError, match="only be chosen for kcat"):
        start_client(ClientKind.AIOKAFKA, "127.0.0.1:1", software_name="x")


def test_available_kinds_is_consistent_with_missing_reason() -> None:
    assert available_kinds(legacy=True) == [k for k in ClientKind if missing_reason(k) is None]
    assert available_kinds() == [k for k in available_kinds(legacy=True) if k not in LEGACY_JAVA_RELEASES]


# ---------------------------------------------------------------------------------------------------------
# Recording listener: what each client really sends first


@dataclass(frozen=True)
class FirstRequest:
    api_key: int
    api_version: int
    client_id: str | None
    software_name: str | None  # None when the ApiVersions version has no such field (v0-v2)
    software_version: str | None


class RecordingListener:
    """Accepts connections, decodes the first request frame of each, then drops the connection.

    Dropping the connection makes the client reconnect and resend, which is harmless: we only look at what
    is sent first.
    """

    def __init__(self) -> None:
        self.requests: list[FirstRequest] = []
        self.errors: list[str] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @staticmethod
    def _read_exact(conn: socket.socket, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise EOFError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return buf

    @classmethod
    def decode(cls, frame: bytes) -> FirstRequest:
        # Request header v1/v2 both start with api_key, api_version, correlation_id, client_id (int16-length
        # string, never compact); only ApiVersions bodies are decoded further.
        api_key, api_version, _correlation_id, id_len = struct.unpack(">hhih", frame[:10])
        client_id = None if id_len < 0 else frame[10 : 10 + id_len].decode()
        name = version = None
        if api_key == API_VERSIONS_KEY and api_version >= 3:
            req = ApiVersionsRequest.decode(frame, version=api_version, header=True)
            name, version = req.client_software_name, req.client_software_version
        return FirstRequest(api_key, api_version, client_id, name, version)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    (size,) = struct.unpack(">i", self._read_exact(conn, 4))
                    self.requests.append(self.decode(self._read_exact(conn, size)))
                except (OSError, EOFError, ValueError, struct.error) as exc:
                    # e.g. kcat connects and closes without a request if its stdin is already at EOF
                    self.errors.append(repr(exc))

    def wait_first(self, timeout: float = 15.0) -> FirstRequest:
        deadline = time.monotonic() + timeout
        while not self.requests:
            if time.monotonic() > deadline:
                raise AssertionError(f"no request recorded within {timeout}s; errors: {self.errors}")
            time.sleep(0.05)
        return self.requests[0]

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(2)


@pytest.fixture
def recorder() -> Iterator[RecordingListener]:
    listener = RecordingListener()
    yield listener
    listener.close()


def _record_first(
    recorder: RecordingListener, kind: ClientKind, **kwargs: Any
) -> tuple[FirstRequest, ExpectedIdentity]:
    client = start_client(kind, recorder.bootstrap, **kwargs)
    try:
        first = recorder.wait_first()
    finally:
        # The client never gets an answer and cannot finish bootstrap; don't wait long for a graceful exit.
        client.close(timeout=1.0)
    return first, client.expected


@pytest.mark.slow
def test_kcat_default_identity_is_librdkafka(recorder: RecordingListener) -> None:
    require(ClientKind.KCAT)
    first, expected = _record_first(recorder, ClientKind.KCAT, client_id="kcat-rec")
    assert first == FirstRequest(API_VERSIONS_KEY, 3, "kcat-rec", "librdkafka", kcat_librdkafka_version())
    assert expected == ExpectedIdentity("librdkafka", kcat_librdkafka_version())


@pytest.mark.slow
def test_kcat_sends_exactly_the_chosen_identity(recorder: RecordingListener) -> None:
    require(ClientKind.KCAT)
    identity = {"software_name": "my-app", "software_version": "1.2.3"}
    first, expected = _record_first(recorder, ClientKind.KCAT, **identity)
    assert (first.api_key, first.api_version) == (API_VERSIONS_KEY, 3)
    assert (first.software_name, first.software_version) == ("my-app", "1.2.3")
    assert expected == ExpectedIdentity("my-app", "1.2.3")


@pytest.mark.slow
def test_kcat_identity_is_sanitized_by_librdkafka(recorder: RecordingListener) -> None:
    require(ClientKind.KCAT)
    identity = {"software_name": "_my app_", "software_version": "1.0+build"}
    first, expected = _record_first(recorder, ClientKind.KCAT, **identity)
    assert (first.software_name, first.software_version) == ("my-app", "1.0-build")
    assert expected == ExpectedIdentity("my-app", "1.0-build")


@pytest.mark.slow
def test_confluent_kafka_sends_v3_with_its_identity(recorder: RecordingListener) -> None:
    require(ClientKind.CONFLUENT)
    first, expected = _record_first(recorder, ClientKind.CONFLUENT, client_id="ck-rec")
    assert first.api_key == API_VERSIONS_KEY
    assert first.api_version == 3
    assert first.client_id == "ck-rec"
    assert ExpectedIdentity(first.software_name or "", first.software_version or "") == expected
    assert expected.software_name == "confluent-kafka-python"


@pytest.mark.slow
def test_kafka_python_sends_v4_with_its_identity(recorder: RecordingListener) -> None:
    require(ClientKind.KAFKA_PYTHON)
    first, expected = _record_first(recorder, ClientKind.KAFKA_PYTHON, client_id="kp-rec")
    assert (first.api_key, first.api_version, first.client_id) == (API_VERSIONS_KEY, 4, "kp-rec")
    assert ExpectedIdentity(first.software_name or "", first.software_version or "") == expected


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "api_version"), [(ClientKind.AIOKAFKA, 0), (ClientKind.KAFKAJS, 2)])
def test_old_apiversions_clients_are_unknown(recorder: RecordingListener, kind: ClientKind, api_version: int) -> None:
    """aiokafka sends ApiVersions v0 and kafkajs v2: no name/version in the body, so a broker says unknown."""
    require(kind)
    first, expected = _record_first(recorder, kind, client_id="old-rec")
    assert first == FirstRequest(API_VERSIONS_KEY, api_version, "old-rec", None, None)
    assert expected == UNKNOWN


@pytest.mark.slow
def test_wait_ready_reports_stderr_when_the_client_cannot_bootstrap(recorder: RecordingListener) -> None:
    require(ClientKind.KAFKA_PYTHON)
    # The recorder never answers, so kafka-python's bootstrap times out and the process exits non-zero.
    client = start_client(ClientKind.KAFKA_PYTHON, recorder.bootstrap, bootstrap_timeout=1.0)
    with client, pytest.raises(ClientError, match="before bootstrap completed"):
        client.wait_ready(timeout=20)
    assert client.returncode not in (None, 0)


# ---------------------------------------------------------------------------------------------------------
# End to end against the broker double


def _identity_counts(cluster: Any) -> collections.Counter[ExpectedIdentity]:
    """Open connections per identity, summed over brokers, listeners and network processors."""
    cluster.sync()
    counts: collections.Counter[ExpectedIdentity] = collections.Counter()
    for broker in cluster.brokers:
        for (_listener, _processor, name, version), n in cluster.registry_view(broker.broker_id).items():
            counts[ExpectedIdentity(name, version)] += n
    return counts


def _wait_for(
    cluster: Any, predicate: Callable[[collections.Counter[ExpectedIdentity]], bool], timeout: float = 10.0
) -> collections.Counter[ExpectedIdentity]:
    # Connections to brokers learned from Metadata open (and close) asynchronously after READY / exit.
    deadline = time.monotonic() + timeout
    while True:
        counts = _identity_counts(cluster)
        if predicate(counts):
            return counts
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; counts: {dict(counts)}")
        time.sleep(0.1)


@pytest.fixture
def cluster(mbean_host: Any) -> Iterator[Any]:
    # Imported here so the recording tests above still run if the double is broken.
    from kafka_double.cluster import BrokerSpec, DoubleCluster

    with DoubleCluster([BrokerSpec(id=1), BrokerSpec(id=2)], mbean_host=mbean_host) as c:
        yield c


E2E_CASES: list[tuple[ClientKind, dict[str, str]]] = [
    (ClientKind.KCAT, {}),
    (ClientKind.KCAT, {"software_name": "kafka-client-exporter-test", "software_version": "9.8.7"}),
    (ClientKind.CONFLUENT, {}),
    (ClientKind.KAFKA_PYTHON, {}),
    (ClientKind.AIOKAFKA, {}),
    (ClientKind.KAFKAJS, {}),
    (ClientKind.JAVA, {}),
    (ClientKind.JAVA_3_9, {}),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "identity_kwargs"), E2E_CASES, ids=[f"{k.value}{'-named' if kw else ''}" for k, kw in E2E_CASES]
)
def test_client_is_recorded_with_expected_identity_then_released(
    cluster: Any, kind: ClientKind, identity_kwargs: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    require(kind)
    caplog.set_level(logging.WARNING, logger="kafka_double")
    assert sum(_identity_counts(cluster).values()) == 0
    with start_client(kind, cluster.bootstrap("PLAINTEXT"), **identity_kwargs) as client:
        client.wait_ready()
        if identity_kwargs:
            assert client.expected == ExpectedIdentity(
                identity_kwargs["software_name"], identity_kwargs["software_version"]
            )
        # Every open connection ends up labelled with the client's identity (a connection is briefly
        # unknown between accept and ApiVersions, hence the wait).
        counts = _wait_for(
            cluster,
            lambda c: c[client.expected] >= 1 and {k for k, n in c.items() if n > 0} == {client.expected},
        )
        assert counts[client.expected] >= 1
    # A clean exit means the client closed itself on stdin EOF (not killed); close() is idempotent.
    assert client.returncode == 0, client.stderr_tail()
    client.close()
    _wait_for(cluster, lambda c: c[client.expected] == 0 and sum(c.values()) == 0)
    # The double closes a connection on a request it does not serve, as Kafka does; a client that bootstraps and
    # holds its connections must not have met one (the Java Producer, for one, needs InitProducerId).
    closed = [r.getMessage() for r in caplog.records if "closing connection" in r.getMessage()]
    assert closed == []


@pytest.mark.slow
def test_client_mix_all_kinds_ready_counted_and_closed(cluster: Any) -> None:
    kinds: list[ClientKind | tuple[ClientKind, str, str]] = list(available_kinds())
    if ClientKind.KCAT in kinds:
        kinds.append((ClientKind.KCAT, "mix-app", "1.0.0"))
    with ClientMix(cluster.bootstrap("PLAINTEXT"), kinds) as mix:
        assert len(mix) == len(kinds)
        expected = mix.expected_counts()
        # Each client holds at least one connection under its identity.
        _wait_for(cluster, lambda c: all(c[ident] >= n for ident, n in expected.items()))
    assert all(client.returncode == 0 for client in mix), [(c.kind, c.stderr_tail()) for c in mix]
    _wait_for(cluster, lambda c: sum(c.values()) == 0)


@pytest.mark.slow
def test_java_client_that_cannot_bootstrap_says_why(silent_port: int) -> None:
    require(ClientKind.JAVA)
    with pytest.raises(ValueError, match="not aiokafka"):
        start_client(ClientKind.AIOKAFKA, f"127.0.0.1:{silent_port}", properties={"security_protocol": "SSL"})
    with (
        start_client(ClientKind.JAVA, f"127.0.0.1:{silent_port}", bootstrap_timeout=1.0) as client,
        pytest.raises(ClientError, match="exited with code 1") as failure,
    ):
        client.wait_ready(timeout=30)
    assert f"bootstrap against 127.0.0.1:{silent_port} failed" in str(failure.value)
    assert "TimeoutException" in str(failure.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["consumer", "127.0.0.1:9"], "unknown role 'consumer'"),
        (["admin", "127.0.0.1:9", "--property", "security.protocol"], "--property takes KEY=VALUE"),
        (["admin", "127.0.0.1:9", "--client-id"], "option --client-id needs a value"),
        (["admin", "127.0.0.1:9", "--acks", "all"], "unknown option --acks"),
    ],
)
def test_java_client_refuses_bad_arguments_before_connecting(args: list[str], message: str) -> None:
    require(ClientKind.JAVA)
    argv = ["java", *JAVA_CLIENT_OPTIONS, "-cp", kafka_clients_classpath("4.3.0"), str(JAVA_CLIENT_SOURCE), *args]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "READY" not in done.stdout
