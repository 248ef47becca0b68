"""Discovery source: which brokers the cluster has, from its metadata over the Kafka protocol. The other
sources of the cluster poll the brokers it knows."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from exporter.config.settings import BrokerConfig, ClusterConfig
from exporter.snapshot import CLUSTER_BROKER, SourceResult
from exporter.sources.base import Poll, Source, SourceName
from exporter.sources.kafka_session import BrokerAddress, KafkaSession

log = logging.getLogger(__name__)

# A broker that drops out of the metadata (killed, fenced) keeps being polled, and reported down, this
# long after it was last in the metadata; after that it is taken as decommissioned and its series go.
FORGET_ABSENT_BROKER_SECONDS = 600.0


@dataclass
class _KnownBroker:
    address: BrokerAddress
    last_seen: float  # monotonic time it was last in the metadata


class DiscoverySource(Source):
    """Refreshes the metadata once a cycle through the cluster's session, which it owns (the other protocol
    sources of the cluster share it) and closes."""

    name = SourceName.DISCOVERY

    def __init__(self, cluster: str, session: KafkaSession) -> None:
        super().__init__(cluster)
        self._session = session
        self._known: dict[int, _KnownBroker] = {}

    def brokers(self) -> list[BrokerAddress]:
        """The brokers to poll: those in the metadata at the last discovery, plus those that left it recently
        (so a dead broker shows as down instead of vanishing). A failed discovery leaves them as they were."""
        return [self._known[node_id].address for node_id in sorted(self._known)]

    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        return [Poll(CLUSTER_BROKER, self._discover)]

    async def _discover(self) -> None:
        current = await self._session.brokers()
        now = time.monotonic()
        for address in current:
            self._known[address.node_id] = _KnownBroker(address, now)
        for node_id in [n for n, k in self._known.items() if now - k.last_seen > FORGET_ABSENT_BROKER_SECONDS]:
            log.info(
                "%s: broker %s left the metadata %.0f s ago; no longer polled",
                self.cluster,
                node_id,
                now - self._known[node_id].last_seen,
            )
            del self._known[node_id]

    def close(self) -> None:
        self._session.close()


def url_host(host: str) -> str:
    """`host` as it goes into a URL: an IPv6 literal in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class PerBrokerSource(Source):
    """A source read at one endpoint per broker (JMX, a metrics endpoint): the cluster's listed brokers, or else
    the brokers discovery knows (it then runs after discovery)."""

    def __init__(self, cluster: ClusterConfig, discovery: DiscoverySource | None) -> None:
        listed = cluster.brokers is not None
        super().__init__(cluster.name, after=() if listed or discovery is None else (SourceName.DISCOVERY,))
        self._config = cluster
        self._discovery = None if listed else discovery

    def _broker_urls(
        self, port: int | None, listed_url: Callable[[BrokerConfig], str | None], url_at: Callable[[str, int], str]
    ) -> list[tuple[str, str]]:
        """(broker id, URL): a listed broker's own URL or its host at `port`; a discovered broker's host at `port`."""
        if self._config.brokers is not None:
            return [(str(b.id), listed_url(b) or url_at(b.host or "", port or 0)) for b in self._config.brokers]
        if port is None or self._discovery is None:
            return []
        return [(str(b.node_id), url_at(b.host, port)) for b in self._discovery.brokers()]
