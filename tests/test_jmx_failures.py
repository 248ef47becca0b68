"""The real JMXQuery jar against endpoints that fail: deadlines hold, errors are classified."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from exporter.sources.jmx import JavaRuntime, JmxError, JmxTarget, read_broker

pytestmark = pytest.mark.slow
JAVA = JavaRuntime("java", ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"))


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word (a wedged JVM, a firewall)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def url(port: int) -> str:
    return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi"


def test_silent_endpoint_is_cut_at_the_deadline(silent_port: int) -> None:
    started = time.monotonic()
    with pytest.raises(JmxError) as excinfo:
        asyncio.run(read_broker(JmxTarget(url(silent_port)), JAVA, deadline_seconds=2.0))
    elapsed = time.monotonic() - started
    assert excinfo.value.reason == "timeout"
    assert 1.9 <= elapsed < 4.0, elapsed
    assert "did not finish within 2 s" in str(excinfo.value)


def test_closed_port_is_a_connection_error() -> None:
    with pytest.raises(JmxError) as excinfo:
        asyncio.run(read_broker(JmxTarget(url(closed_port()), "u", "pw-123"), JAVA, deadline_seconds=10))
    assert excinfo.value.reason == "connection"
    assert "Connection refused" in str(excinfo.value)
    assert "pw-123" not in str(excinfo.value)


def test_missing_java_is_reported() -> None:
    with pytest.raises(JmxError) as excinfo:
        asyncio.run(read_broker(JmxTarget(url(1)), JavaRuntime("/nonexistent/java"), deadline_seconds=5))
    assert excinfo.value.reason == "java_not_found"
