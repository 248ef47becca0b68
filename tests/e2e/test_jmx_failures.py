"""The real JMXQuery jar against endpoints that fail: deadlines hold, errors are classified."""

from __future__ import annotations

import asyncio
import time

import pytest

from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from exporter.sources.jmx import JavaRuntime, JmxError, JmxTarget, read_broker
from harness.ports import free_port

pytestmark = pytest.mark.slow
JAVA = JavaRuntime("java", ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"))


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
        asyncio.run(read_broker(JmxTarget(url(free_port()), "u", "pw-123"), JAVA, deadline_seconds=10))
    assert excinfo.value.reason == "connection"
    assert "Connection refused" in str(excinfo.value)
    assert "pw-123" not in str(excinfo.value)


def test_missing_java_is_reported() -> None:
    with pytest.raises(JmxError) as excinfo:
        asyncio.run(read_broker(JmxTarget(url(1)), JavaRuntime("/nonexistent/java"), deadline_seconds=5))
    assert excinfo.value.reason == "java_not_found"


def test_loop_survives_repeated_event_loops_under_contention() -> None:
    """One CollectionLoop driven by several asyncio.run calls, with more brokers than slots (a regression:
    a semaphore created once belonged to the first event loop and hung the second cycle)."""
    brokers = [{"id": i, "jmx_url": url(free_port())} for i in range(4)]
    settings = Settings(clusters=[{"name": "c", "brokers": brokers}], collection={"max_concurrency": 1})
    loop = CollectionLoop(settings)
    try:
        for _ in range(2):
            snapshot = asyncio.run(asyncio.wait_for(loop.run_cycle(), 60))
            assert [r.error_reason for r in snapshot.results] == ["connection"] * 4
    finally:
        loop.close()  # its bridge JVM, which a later module on this worker would otherwise find among its children
    assert snapshot.errors_total[(snapshot.results[0].key, "connection")] == 2
