"""The double cluster's shared, thread-safe view: which brokers are up, where their listeners are,
and how the configured topics' partitions are spread over them (what Metadata describes)."""

from __future__ import annotations

import itertools
import threading
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    index: int
    leader: int
    replicas: tuple[int, ...]


class Topology:
    def __init__(self, cluster_id: str, host: str, broker_ids: list[int], topics: dict[str, int]) -> None:
        self.cluster_id = cluster_id
        self.host = host
        self.broker_ids = sorted(broker_ids)
        self.topics = dict(topics)
        self._alive: set[int] = set()
        self._ports: dict[tuple[int, str], int] = {}
        self._lock = threading.Lock()
        self._producer_ids = itertools.count(1000)
        self._offsets: dict[tuple[str, int], int] = {}

    def set_listener_port(self, broker_id: int, listener: str, port: int) -> None:
        with self._lock:
            self._ports[(broker_id, listener)] = port

    def set_alive(self, broker_id: int, alive: bool) -> None:
        with self._lock:
            (self._alive.add if alive else self._alive.discard)(broker_id)

    def alive(self) -> list[int]:
        with self._lock:
            return sorted(self._alive)

    def endpoints(self, listener: str) -> list[Endpoint]:
        """Brokers as seen on ``listener``: Kafka returns the endpoints of the listener the request came
        in on, and only for brokers currently registered (alive)."""
        with self._lock:
            return [
                Endpoint(b, self.host, self._ports[(b, listener)])
                for b in sorted(self._alive)
                if (b, listener) in self._ports
            ]

    def controller_id(self) -> int:
        alive = self.alive()
        return alive[0] if alive else -1

    def topic_id(self, topic: str) -> uuid.UUID:
        # Stable per cluster so clients that cache topic ids (Metadata v10+) see no changes.
        return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-double:{self.cluster_id}:{topic}")

    def partitions(self, topic: str) -> list[PartitionInfo]:
        n_brokers = len(self.broker_ids)
        rf = min(3, n_brokers)
        alive = set(self.alive())
        out = []
        for p in range(self.topics[topic]):
            replicas = tuple(self.broker_ids[(p + i) % n_brokers] for i in range(rf))
            # Leadership moves to the first live replica when the preferred leader is down.
            leader = next((r for r in replicas if r in alive), -1)
            out.append(PartitionInfo(p, leader, replicas))
        return out

    def next_producer_id(self) -> int:
        with self._lock:
            return next(self._producer_ids)

    def append(self, topic: str, partition: int, records: int) -> int:
        """Returns the base offset of an appended batch of ``records`` records."""
        with self._lock:
            base = self._offsets.get((topic, partition), 0)
            self._offsets[(topic, partition)] = base + max(records, 1)
            return base
