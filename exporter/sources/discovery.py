"""Broker discovery from cluster metadata (kafka-python), for clusters that do not list their brokers."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from kafka import KafkaAdminClient

from exporter import __version__

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DiscoveredBroker:
    id: int
    host: str


class DiscoveryError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class BrokerDiscovery:
    """Keeps one admin connection per cluster across cycles; its calls block, so run them in a thread."""

    def __init__(self, cluster: str, bootstrap_servers: list[str], timeout_seconds: float) -> None:
        self._cluster = cluster
        self._bootstrap = bootstrap_servers
        self._timeout_ms = int(timeout_seconds * 1000)
        self._admin: KafkaAdminClient | None = None
        self._lock = threading.Lock()

    def _client(self) -> KafkaAdminClient:
        if self._admin is None:
            self._admin = KafkaAdminClient(
                bootstrap_servers=self._bootstrap,
                client_id=f"kafka-client-exporter-{__version__}",
                request_timeout_ms=self._timeout_ms,
                bootstrap_timeout_ms=self._timeout_ms,
            )
        return self._admin

    def brokers(self) -> list[DiscoveredBroker]:
        with self._lock:
            try:
                description = self._client().describe_cluster()
            except Exception as exc:  # kafka-python raises many types; any of them means "no answer"
                self._close_locked()
                raise DiscoveryError(
                    "discovery",
                    f"cluster {self._cluster}: broker discovery via {','.join(self._bootstrap)} "
                    f"failed: {type(exc).__name__}: {exc}",
                ) from None
        return sorted(
            (DiscoveredBroker(int(b["broker_id"]), str(b["host"])) for b in description["brokers"]),
            key=lambda broker: broker.id,
        )

    def _close_locked(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # closing a broken client must not hide the original error
                log.debug("closing admin client of %s failed", self._cluster, exc_info=True)
            self._admin = None

    def close(self) -> None:
        with self._lock:
            self._close_locked()
