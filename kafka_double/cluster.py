"""Public API of the broker double: a cluster of emulated brokers with real JMX endpoints."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Self

from harness.ports import free_ports

from .client_metrics import ClusterConfigState
from .mbean_host import JmxTls, MBeanHost
from .metrics_endpoint import MetricsEndpointConfig, MetricsEndpoints
from .registry import BrokerMetrics
from .releases import Release, get_release
from .server import BrokerServer
from .specs import BrokerSpec, ListenerSpec
from .topology import Topology

__all__ = ["BrokerHandle", "BrokerSpec", "DoubleCluster", "JmxTls", "ListenerSpec", "MetricsEndpointConfig"]

DEFAULT_CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"  # 22-char base64 UUID, the shape Kafka cluster ids have


class BrokerHandle:
    def __init__(self, cluster: DoubleCluster, spec: BrokerSpec, release: Release) -> None:
        self._cluster = cluster
        self.spec = spec
        self.release = release
        self.broker_id = spec.id
        self.jmx_port = spec.jmx_port
        self.jmx_url = ""
        self.metrics_url = ""  # set when the cluster serves Prometheus endpoints
        self._server: BrokerServer | None = None
        self.metrics: BrokerMetrics | None = None

    @property
    def alive(self) -> bool:
        return self._server is not None

    def listener_port(self, name: str) -> int:
        for lst in self.spec.listeners:
            if lst.name == name:
                return lst.port
        raise KeyError(f"broker {self.broker_id} has no listener {name!r}")

    def kill(self) -> None:
        """Like a crashed broker: listeners and open connections close, the JMX port closes."""
        self._cluster._kill(self)

    def restart(self) -> None:
        """Start again on the same ports with fresh (empty) metrics, as a restarted JVM would."""
        self._cluster._start_broker(self)


class DoubleCluster:
    def __init__(
        self,
        brokers: list[BrokerSpec],
        *,
        host: str = "127.0.0.1",
        cluster_id: str = DEFAULT_CLUSTER_ID,
        topics: dict[str, int] | None = None,
        mbean_host: MBeanHost | None = None,
        sasl_users: dict[str, str] | None = None,
        metrics_endpoint: MetricsEndpointConfig | None = None,
    ) -> None:
        """``sasl_users`` (name -> password) is the credential store of every SASL listener, for PLAIN
        and SCRAM alike (Kafka keeps them in JAAS and in SCRAM credentials; one table is enough here).
        ``metrics_endpoint``: every broker also serves its MBeans as that rule set would, at ``metrics_url``."""
        if not brokers:
            raise ValueError("a cluster needs at least one broker")
        if len({b.id for b in brokers}) != len(brokers):
            raise ValueError("broker ids must be unique")
        for b in brokers:
            try:  # fail early with the list of known releases, or the modes the release has
                get_release(b.release, b.metadata_mode)
            except ValueError as exc:
                raise ValueError(f"broker {b.id}: {exc}") from None
        self.host = host
        self.cluster_id = cluster_id
        self.topics = dict(topics) if topics is not None else {"demo": 3}
        self.sasl_users = dict(sasl_users or {})
        # Client-metrics subscriptions and the DESCRIBE_CONFIGS ACL switch, shared by all brokers.
        self.configs = ClusterConfigState()
        self._given_host = mbean_host
        self._jmx: MBeanHost | None = mbean_host
        self._owns_jmx = mbean_host is None
        self._metrics_endpoint = metrics_endpoint
        self._endpoints: MetricsEndpoints | None = None
        # Copies, so resolving port 0 does not mutate the caller's specs.
        self._specs = [dataclasses.replace(b, listeners=[dataclasses.replace(x) for x in b.listeners]) for b in brokers]
        self._handles: dict[int, BrokerHandle] = {}
        self.topology = Topology(cluster_id, host, [b.id for b in brokers], self.topics)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()
        self._started = False
        self._stopped = False

    # ---------------------------------------------------------------- lifecycle

    def start(self, timeout: float = 60.0) -> None:
        with self._lock:
            if self._started:
                raise RuntimeError("DoubleCluster already started")
            self._started = True
            for spec in self._specs:
                self._handles[spec.id] = BrokerHandle(self, spec, get_release(spec.release, spec.metadata_mode))
            # Resolve ports before anything listens, so Metadata is stable; allocated together so that
            # 50 brokers never draw the same released port twice.
            per_endpoint = 1 if self._metrics_endpoint is not None else 0
            wanted = sum(1 + per_endpoint + len(spec.listeners) for spec in self._specs)
            ports = iter(free_ports(wanted, self.host))
            for spec in self._specs:
                spec.jmx_port = spec.jmx_port or next(ports)
                if per_endpoint:
                    spec.metrics_port = spec.metrics_port or next(ports)
                self._handles[spec.id].jmx_port = spec.jmx_port
                for lst in spec.listeners:
                    lst.port = lst.port or next(ports)
            try:
                if self._jmx is None:
                    host = MBeanHost()
                    host.start(timeout=timeout)
                    self._jmx = host
                if self._metrics_endpoint is not None:
                    self._endpoints = MetricsEndpoints(self._metrics_endpoint, self._jmx.dump, self.host)
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="kafka-double-loop", daemon=True)
                self._thread.start()
                for handle in self._handles.values():
                    self._start_broker(handle, timeout)
                self.sync()
            except BaseException:
                self.stop()
                raise

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            for handle in self._handles.values():
                if handle.alive and self._loop is not None:
                    with contextlib.suppress(Exception):  # best effort: keep closing the rest
                        self._kill(handle)
            if self._loop is not None and self._thread is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(10)
                if not self._thread.is_alive():
                    self._loop.close()
            if self._owns_jmx and self._jmx is not None:
                self._jmx.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ---------------------------------------------------------------- queries

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        return ",".join(
            f"{self.host}:{h.listener_port(listener)}"
            for h in self._handles.values()
            if any(x.name == listener for x in h.spec.listeners)
        )

    def broker(self, broker_id: int) -> BrokerHandle:
        return self._handles[broker_id]

    @property
    def brokers(self) -> list[BrokerHandle]:
        return list(self._handles.values())

    def registry_view(self, broker_id: int) -> dict[tuple[str, int, str, str], int]:
        metrics = self._handles[broker_id].metrics
        return metrics.view() if metrics is not None else {}

    def sync(self, timeout: float = 10.0) -> None:
        """Everything the loop has done so far is visible over JMX once this returns."""
        if self._loop is not None and self._loop.is_running():
            self._run(asyncio.sleep(0), timeout)
        if self._jmx is not None:
            self._jmx.sync(timeout)

    # ---------------------------------------------------------------- internals

    def _run(self, coro: Coroutine[Any, Any, Any], timeout: float = 30.0) -> Any:
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def _start_broker(self, handle: BrokerHandle, timeout: float = 60.0) -> None:
        with self._lock:
            if handle.alive:
                raise RuntimeError(f"broker {handle.broker_id} is already running")
            assert self._jmx is not None
            spec = handle.spec
            handle.jmx_url = self._jmx.add_broker(spec.id, spec.jmx_port, spec.jmx_user, spec.jmx_password)
            metrics = BrokerMetrics(spec.id, handle.release, self._jmx)
            server = BrokerServer(
                spec.id,
                handle.release,
                [(x, x.port) for x in spec.listeners],
                self.host,
                self.topology,
                metrics,
                self.configs,
                self.sasl_users,
            )
            self._run(server.start(), timeout)
            if self._endpoints is not None:
                handle.metrics_url = self._run(self._endpoints.start_broker(spec.id, spec.metrics_port), timeout)
            handle.metrics = metrics
            handle._server = server

    def _kill(self, handle: BrokerHandle) -> None:
        with self._lock:
            server = handle._server
            if server is None:
                return
            handle._server = None
            self._run(server.stop())
            if self._endpoints is not None:
                self._run(self._endpoints.stop_broker(handle.broker_id))
            assert self._jmx is not None
            self._jmx.stop_broker(handle.broker_id)
