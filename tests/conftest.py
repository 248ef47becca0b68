"""Shared fixtures: the broker double's MBean host, and endpoints that misbehave the way real networks do."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_double.mbean_host import MBeanHost

pytest_plugins = ["tests.support.module_cost"]


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


# ---------------------------------------------------------------------------------------------- parallel runs
# scripts/test.sh runs the suite on pytest-xdist workers, a module per unit of work (--dist loadscope), so a module's
# fixtures start once. Two refinements:
# - every module under tests/real_kafka/ is one unit: they share the session's real brokers, which would otherwise
#   start again on each worker that got one of those modules;
# - units start longest first, so that no long one is left to start at the end while the other workers are idle:
#   the longest modules (_LONGEST), the real brokers' unit, then every module with slow tests, then the rest, each
#   group in collection order and each module's tests in their own order.
#   (xdist's own --loadscope-reorder sorts by the number of tests, which puts the unit tests first; test.sh turns
#   it off.)
_REAL_KAFKA = "tests/real_kafka"


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RealBrokersShareOneUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(f"{_REAL_KAFKA}/"):
                return _REAL_KAFKA
            return str(super()._split_scope(nodeid))

        def _reschedule(self, node: Any) -> None:
            # xdist hands a worker its next module once two of its tests are left, so a worker on a module of two
            # long tests (the Spark cluster's) takes the next module too and holds it for minutes while other
            # workers run dry. A worker needs another module only when it is down to its last test (it must know
            # the next test before it runs one).
            if not node.shutting_down and self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
                return
            super()._reschedule(node)

    return RealBrokersShareOneUnit(config, log)


#: The modules that take longest on one worker (minutes of real clusters each), started before everything else: the
#: own-connections stories on six clusters one after another, the real ZooKeeper releases, the migration.
_LONGEST = (
    "tests/e2e/test_own_connections_real.py",
    "tests/e2e/test_zookeeper_releases.py",
    "tests/e2e/test_migration.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        module = item.nodeid.split("::", 1)[0]
        if module in _LONGEST:
            return -1
        if item.nodeid.startswith(f"{_REAL_KAFKA}/"):
            return 0
        return 1 if item.get_closest_marker("slow") else 2

    # A module moves as a whole, by its most urgent test: its tests keep their order (a module's tests may rely on
    # it, as they do when run alone).
    module_rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        module_rank[module] = min(module_rank.get(module, 2), rank(item))
    items.sort(key=lambda item: module_rank[item.nodeid.split("::", 1)[0]])  # stable: collection order within a rank
