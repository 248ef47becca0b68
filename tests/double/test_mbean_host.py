"""The broker double's JMX half (kafka_double/MBeanHost.java + mbean_host.py), checked with real jmxquery."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from jmxquery import JMXConnection, JMXQuery

from harness.ports import free_port, free_ports
from kafka_double.mbean_host import JmxTls, MBeanHost

pytestmark = pytest.mark.slow

CONNECTIONS_MBEAN = (
    "kafka.server:type=socket-server-metrics,clientSoftwareName=apache-kafka-java,"
    "clientSoftwareVersion=3.7.0,listener=PLAINTEXT,networkProcessor=2"
)
SOCKET_SERVER_PATTERN = "kafka.server:type=socket-server-metrics,*"
JMXQUERY_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def host() -> Iterator[MBeanHost]:
    with MBeanHost() as h:
        yield h


def query(url: str, mbean: str, attribute: str, user: str | None = None, password: str | None = None) -> list[JMXQuery]:
    return JMXConnection(url, user, password).query([JMXQuery(mbean, attribute)], timeout=JMXQUERY_TIMEOUT)


def values(url: str, mbean: str, attribute: str) -> dict[str, object]:
    return {q.mBeanName: q.value for q in query(url, mbean, attribute)}


def refuses_tcp(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return False
    except ConnectionRefusedError:
        return True


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_connections_mbean_keeps_key_order_and_integer_value(host: MBeanHost) -> None:
    port = free_port()
    url = host.add_broker(1, port)
    assert url == f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi"
    host.set(1, CONNECTIONS_MBEAN, "connections", 3)
    host.sync()

    [result] = query(url, SOCKET_SERVER_PATTERN, "connections")
    # Key order as given (Kafka's tag order), not the canonical (sorted) order.
    assert result.mBeanName == CONNECTIONS_MBEAN
    assert result.value == 3
    # getAttribute returns the real java.lang.Integer although MBeanInfo declares "double".
    assert result.value_type == "Integer"

    host.set(1, CONNECTIONS_MBEAN, "connections", 4)
    host.sync()
    assert values(url, SOCKET_SERVER_PATTERN, "connections") == {CONNECTIONS_MBEAN: 4}


def test_brokers_are_isolated_unset_removes_and_long_count(host: MBeanHost) -> None:
    url_a = host.add_broker(10, free_port())
    url_b = host.add_broker(11, free_port())
    name_a = CONNECTIONS_MBEAN.replace("networkProcessor=2", "networkProcessor=0")
    name_b = CONNECTIONS_MBEAN.replace("3.7.0", "2.8.1")
    requests = "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=ApiVersions,version=3"
    host.set(10, name_a, "connections", 1)
    host.set(10, name_a.replace("apache-kafka-java", "kcat"), "connections", 2)
    host.set(11, name_b, "connections", 5)
    host.set(11, requests, "Count", 2**40, type_="long")
    host.set(11, requests, "OneMinuteRate", 0.25, type_="double")
    host.sync()

    assert values(url_a, SOCKET_SERVER_PATTERN, "connections") == {
        name_a: 1,
        name_a.replace("apache-kafka-java", "kcat"): 2,
    }
    assert values(url_b, SOCKET_SERVER_PATTERN, "connections") == {name_b: 5}
    assert values(url_a, "kafka.network:type=RequestMetrics,*", "Count") == {}
    [count] = query(url_b, "kafka.network:type=RequestMetrics,*", "Count")
    assert (count.mBeanName, count.value, count.value_type) == (requests, 2**40, "Long")
    assert values(url_b, requests, "OneMinuteRate") == {requests: 0.25}

    host.unset(10, name_a)
    host.unset(10, "kafka.server:type=not-there")  # absent: no error
    host.sync()
    assert values(url_a, SOCKET_SERVER_PATTERN, "connections") == {name_a.replace("apache-kafka-java", "kcat"): 2}


def test_password_protected_broker(host: MBeanHost) -> None:
    url = host.add_broker(20, free_port(), user="monitor", password="s3cret")
    host.set(20, CONNECTIONS_MBEAN, "connections", 7)
    host.sync()

    assert [q.value for q in query(url, SOCKET_SERVER_PATTERN, "connections", "monitor", "s3cret")] == [7]
    # The JDK's own file-based authenticator answers, as on a broker with jmxremote.password.file.
    with pytest.raises(subprocess.CalledProcessError) as wrong:
        query(url, SOCKET_SERVER_PATTERN, "connections", "monitor", "wrong")
    assert "Authentication failed! Invalid username or password" in wrong.value.stderr.decode()
    with pytest.raises(subprocess.CalledProcessError) as anonymous:
        query(url, SOCKET_SERVER_PATTERN, "connections")
    assert "Authentication failed! Credentials required" in anonymous.value.stderr.decode()
    host.stop_broker(20)
    assert not list(Path("/tmp").glob("kafka-double-jmx-20-*.password"))  # java.io.tmpdir on Linux: none left


def test_stop_closes_the_port_and_restart_works(host: MBeanHost) -> None:
    port = free_port()
    url = host.add_broker(30, port)
    host.set(30, CONNECTIONS_MBEAN, "connections", 1)
    host.sync()
    assert values(url, SOCKET_SERVER_PATTERN, "connections") == {CONNECTIONS_MBEAN: 1}

    host.stop_broker(30)
    assert refuses_tcp(port)
    with pytest.raises(subprocess.CalledProcessError):
        query(url, SOCKET_SERVER_PATTERN, "connections")
    # A killed broker ignores updates (the Kafka side may race a kill).
    host.set(30, CONNECTIONS_MBEAN, "connections", 9)
    host.sync()

    assert host.add_broker(30, port) == url
    host.sync()
    assert values(url, SOCKET_SERVER_PATTERN, "connections") == {}  # restarted empty, like a real broker
    host.set(30, CONNECTIONS_MBEAN, "connections", 2)
    host.sync()
    assert values(url, SOCKET_SERVER_PATTERN, "connections") == {CONNECTIONS_MBEAN: 2}


def test_errors_are_reported(host: MBeanHost) -> None:
    port = free_port()
    host.add_broker(40, port)
    with pytest.raises(RuntimeError, match="already running"):
        host.add_broker(40, free_port())
    with pytest.raises(RuntimeError, match=f"cannot open port {port}"):
        host.add_broker(41, port)
    with pytest.raises(RuntimeError, match=f"cannot open port {port}"):
        host.add_broker(43, port, user="monitor", password="s3cret")
    assert not list(Path("/tmp").glob("kafka-double-jmx-43-*.password"))  # the failed broker left no credential
    with pytest.raises(RuntimeError, match="not running"):
        host.stop_broker(41)

    host.set(40, "no-key-properties", "connections", 1)
    host.set(999, CONNECTIONS_MBEAN, "connections", 1)
    with pytest.raises(RuntimeError, match=r"2 earlier command\(s\).*bad object name.*no broker 999"):
        host.sync()
    host.sync()  # errors are reported once

    for bad in ("a\tb", "a\nb", "a\rb"):
        with pytest.raises(ValueError):
            host.set(40, CONNECTIONS_MBEAN, "connections", bad, type_="string")
        with pytest.raises(ValueError):
            host.set(40, bad, "connections", 1)
        with pytest.raises(ValueError):
            host.add_broker(42, free_port(), user="u", password=bad)
    for bad in ("two words", ""):
        with pytest.raises(ValueError, match="no whitespace"):
            host.add_broker(42, free_port(), user="u", password=bad)
    with pytest.raises(ValueError):
        host.set(40, CONNECTIONS_MBEAN, "connections", 2**31)
    with pytest.raises(ValueError):
        host.set(40, CONNECTIONS_MBEAN, "connections", 1, type_="float")
    with pytest.raises(TypeError):
        host.set(40, CONNECTIONS_MBEAN, "connections", "1")


def test_many_sets_per_second(host: MBeanHost) -> None:
    url = host.add_broker(50, free_port())
    started = time.perf_counter()
    n = 20_000
    for i in range(n):
        host.set(
            50,
            f"kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor={i % 50}",
            "connection-count",
            i,
            type_="long",
        )
    host.sync(timeout=60)
    elapsed = time.perf_counter() - started
    print(f"\n{n} SETs + SYNC: {elapsed:.2f} s ({n / elapsed:,.0f}/s)")
    got = values(url, SOCKET_SERVER_PATTERN, "connection-count")
    assert len(got) == 50
    assert max(got.values()) == n - 1  # type: ignore[type-var]


def test_concurrent_callers(host: MBeanHost) -> None:
    url = host.add_broker(60, free_port())
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            for i in range(500):
                host.set(60, f"kafka.server:type=socket-server-metrics,worker={w}", "connections", i)
                if i % 100 == 0:
                    host.sync()
            host.sync()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    got = values(url, SOCKET_SERVER_PATTERN, "connections")
    assert got == {f"kafka.server:type=socket-server-metrics,worker={w}": 499 for w in range(8)}


def test_fifty_brokers_in_one_jvm() -> None:
    started = time.perf_counter()
    with MBeanHost() as h:
        jvm_start = time.perf_counter() - started
        assert h.pid is not None
        rss_empty = rss_kib(h.pid)
        ports = free_ports(50)  # held at once: single picks can repeat a port, and RMI shares a port per JVM
        started = time.perf_counter()
        urls = [h.add_broker(b, port) for b, port in enumerate(ports)]
        for b in range(50):
            h.set(b, CONNECTIONS_MBEAN, "connections", b)
        h.sync()
        brokers_start = time.perf_counter() - started
        [last] = query(urls[49], SOCKET_SERVER_PATTERN, "connections")
        assert last.value == 49
        rss_50 = rss_kib(h.pid)
        print(
            f"\nJVM start {jvm_start:.2f} s; 50 brokers {brokers_start:.2f} s; "
            f"RSS {rss_empty / 1024:.0f} MiB empty, {rss_50 / 1024:.0f} MiB with 50 brokers"
        )
        assert brokers_start < 30


def test_close_ends_the_jvm() -> None:
    h = MBeanHost()
    h.start()
    pid = h.pid
    assert pid is not None and os.path.exists(f"/proc/{pid}")
    h.add_broker(1, free_port())
    h.close()
    assert h.returncode == 0
    assert not os.path.exists(f"/proc/{pid}")
    h.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        h.set(1, CONNECTIONS_MBEAN, "connections", 1)


def test_dead_jvm_raises_instead_of_hanging() -> None:
    with MBeanHost() as h:
        assert h.pid is not None
        h.add_broker(1, free_port())
        os.kill(h.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while h.returncode is None and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(RuntimeError, match="exit"):
            h.sync(timeout=5)
        with pytest.raises(RuntimeError, match="exit"):
            h.set(1, CONNECTIONS_MBEAN, "connections", 1)


def test_a_tls_broker_refuses_plain_clients_and_bad_tls_files(
    host: MBeanHost, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    cert, key, garbage = tmp_path / "broker.pem", tmp_path / "broker.key", tmp_path / "garbage.key"
    cert.write_bytes(b"".join(pem.bytes() for pem in leaf.cert_chain_pems))
    private = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    pkcs8 = serialization.PrivateFormat.PKCS8
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, pkcs8, serialization.NoEncryption()))
    garbage.write_text("not a key")
    url = host.add_broker(80, free_port(), tls=JmxTls(cert, key))
    host.set(80, CONNECTIONS_MBEAN, "connections", 1)
    host.sync()
    # A client without the test CA fails the handshake on the RMI connection (the registry stays plain).
    with pytest.raises(subprocess.CalledProcessError):
        JMXConnection(url).query([JMXQuery(CONNECTIONS_MBEAN, "connections")])
    assert "SSLHandshakeException: PKIX path building failed" in caplog.text
    with pytest.raises(ValueError, match=r"TLS file .*missing\.pem does not exist"):
        host.add_broker(81, free_port(), tls=JmxTls(tmp_path / "missing.pem", key))
    with pytest.raises(RuntimeError, match="BROKER 82"):
        host.add_broker(82, free_port(), tls=JmxTls(cert, garbage))
