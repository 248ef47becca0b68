"""Immutable results of one collection cycle: what sources produce and collectors render.

Nothing here knows about Prometheus or about how a value was fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class ClientConnections:
    """One KIP-511 gauge: connections of one client software/version on one listener and processor."""

    listener: str
    network_processor: str
    software_name: str
    software_version: str
    connections: int


@dataclass(frozen=True, slots=True)
class DeprecatedRequests:
    """KIP-896 DeprecatedRequestsPerSec meter count for one request version and client software."""

    request: str
    version: str
    software_name: str
    software_version: str
    count: int


@dataclass(frozen=True, slots=True)
class ProcessorSuite:
    """How full one network processor's client gauge suite is (Kafka tracks at most 100 keys)."""

    listener: str
    network_processor: str
    keys: int
    live_keys: int

    @property
    def full(self) -> bool:
        # A processor drops new (name, version) keys only when none of its keys can be evicted,
        # i.e. when every one of them still has connections (mbeans.md section 1).
        return self.live_keys >= SUITE_MAX_ENTRIES


SUITE_MAX_ENTRIES = 100


@dataclass(frozen=True, slots=True)
class JmxReading:
    clients: tuple[ClientConnections, ...] = ()
    deprecated_requests: tuple[DeprecatedRequests, ...] = ()
    suites: tuple[ProcessorSuite, ...] = ()


@dataclass(frozen=True, slots=True, order=True)
class SourceKey:
    cluster: str
    broker: str
    source: str


@dataclass(frozen=True, slots=True)
class SourceResult:
    """The outcome of polling one source of one broker in one cycle."""

    key: SourceKey
    ok: bool
    duration_seconds: float
    finished_at: float
    error_reason: str | None = None
    error_message: str | None = None
    jmx: JmxReading | None = None


def _frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything /metrics shows, as of the end of one cycle."""

    sequence: int
    taken_at: float
    cycle_duration_seconds: float
    results: tuple[SourceResult, ...]
    # Counters and timestamps carry over between cycles; copied here so a snapshot is self-contained.
    errors_total: Mapping[tuple[SourceKey, str], int] = field(default_factory=dict)
    last_success: Mapping[SourceKey, float] = field(default_factory=dict)
    clusters: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors_total", _frozen(self.errors_total))
        object.__setattr__(self, "last_success", _frozen(self.last_success))
