"""Shared fixtures: the broker double's MBean host, and endpoints that misbehave the way real networks do."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from kafka_double.mbean_host import MBeanHost


@pytest.fixture(scope="session")
def mbean_host() -> Iterator[MBeanHost]:
    """One JVM with Kafka's Selector for every double of the session (it compiles MBeanHost.java once)."""
    with MBeanHost() as host:
        yield host


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word (a wedged JVM, a half-open firewall)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
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
