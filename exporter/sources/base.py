"""What every source shares: the `source` label values, the reasons a poll fails (stable label values of
kafka_client_exporter_errors_total), the exception that carries one, and the Source interface the
collection loop runs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from exporter.snapshot import Reading, SourceResult


class Reason(StrEnum):
    """Why a poll failed; the value is the `reason` label, so renaming one is a breaking change."""

    TIMEOUT = "timeout"
    CONNECTION = "connection"
    AUTHENTICATION = "authentication"
    AUTHORIZATION = "authorization"
    JMX_ERROR = "jmx_error"
    INVALID_RESPONSE = "invalid_response"
    JAVA_NOT_FOUND = "java_not_found"
    TLS = "tls"  # a TLS handshake failed: untrusted certificate, host name mismatch, refused client certificate
    JMX_BRIDGE = "jmx_bridge"  # the long-lived JMX bridge JVM died or stopped answering; it is restarted
    PROTOCOL = "protocol"
    MISSING = "missing"  # nothing published yet where the inventory should be (normal before the job's first run)
    UNREADABLE = "unreadable"  # a file that is there cannot be read (permissions, I/O)
    INVALID_DATA = "invalid_data"  # a file that was read is not what its format says (garbage, another version)


class SourceName(StrEnum):
    """What was polled; the value is the `source` label, so renaming one is a breaking change."""

    DISCOVERY = "discovery"  # cluster metadata over the Kafka protocol: which brokers there are
    API_VERSIONS = "api_versions"  # one broker's ApiVersions answer
    CLIENT_METRICS = "client_metrics"  # the cluster's KIP-714 subscriptions
    JMX = "jmx"  # one broker's KIP-511 client gauges
    PROMETHEUS = "prometheus"  # the same gauges, from one broker's own Prometheus metrics endpoint
    INVENTORY = "inventory"  # the inventory job's latest publication: who runs each client version


# The sources that read a broker's client gauges (and its own channels): one of them per broker.
GAUGE_SOURCES = frozenset({SourceName.JMX, SourceName.PROMETHEUS})


class SourceError(Exception):
    """A failed poll, already phrased for the operator; `reason` goes into the errors counter."""

    def __init__(self, reason: Reason, message: str, kept: Reading | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        # The last good reading of a source that keeps it across failures (see SourceResult.kept_reading_of).
        self.kept = kept


@dataclass(frozen=True, slots=True)
class Poll:
    """One read a source wants done this cycle: of `broker`, or of the whole cluster under CLUSTER_BROKER.
    `read` returns what was read (None when the poll's only product is the source's own state) or raises
    SourceError."""

    broker: str
    read: Callable[[], Awaitable[Reading | None]]


class Source(ABC):
    """One kind of poll of one cluster. Each cycle the loop waits for the sources named in `after`, asks
    `polls` for this cycle's reads and runs them concurrently; it times each one and turns its reading or
    SourceError into a SourceResult, so a source never sees counters, logs of state changes or Prometheus."""

    name: ClassVar[SourceName]
    # Whether the reads take one of the cycle's `collection.max_concurrency` slots (those that start a JVM).
    # A class default that a source may set per instance (JmxSource follows its transport).
    uses_slots: bool = False

    def __init__(self, cluster: str, after: tuple[SourceName, ...] = ()) -> None:
        self.cluster = cluster
        self.after = after

    @abstractmethod
    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        """This cycle's reads; `earlier` holds this cycle's results of each source named in `after`."""

    def close(self) -> None:  # noqa: B027 - most sources hold nothing open; those that do override this
        """Release what the source keeps open across cycles."""
