"""Client-metrics source: the cluster's KIP-714 subscriptions, asked of one broker chosen from this cycle's
ApiVersions answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from exporter.snapshot import CLUSTER_BROKER, BrokerFacts, ClientMetricsReading, SourceResult
from exporter.sources.base import Poll, Source, SourceName
from exporter.sources.broker_protocol import key74_support, read_client_metrics
from exporter.sources.kafka_session import KafkaSession


class ClientMetricsSource(Source):
    name = SourceName.CLIENT_METRICS

    def __init__(self, cluster: str, session: KafkaSession) -> None:
        super().__init__(cluster, after=(SourceName.API_VERSIONS,))
        self._session = session

    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        """Ask the broker that serves the highest key-74 version (brokers differ during an upgrade)."""
        answered = [
            (r.key.broker, facts)
            for r in earlier[SourceName.API_VERSIONS]
            if (facts := r.reading_of(BrokerFacts)) is not None
        ]
        if not answered:
            return []  # nothing known about the cluster this cycle; the ApiVersions results say why
        broker, facts = max(answered, key=lambda pair: (key74_support(pair[1])[::-1], pair[0]))
        return [Poll(CLUSTER_BROKER, partial(self._read, int(broker), facts))]

    async def _read(self, node_id: int, facts: BrokerFacts) -> ClientMetricsReading:
        return await self._session.call(read_client_metrics, node_id, facts)
