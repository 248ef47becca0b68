"""ApiVersions source: what each broker the cluster's discovery knows says about itself (KIP-35/511/584)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from exporter.snapshot import BrokerFacts, SourceResult
from exporter.sources.base import Poll, Source, SourceName
from exporter.sources.broker_protocol import API_VERSIONS, read_broker_facts
from exporter.sources.discovery import DiscoverySource
from exporter.sources.kafka_session import BrokerAddress, KafkaSession


class ApiVersionsSource(Source):
    name = SourceName.API_VERSIONS

    def __init__(self, discovery: DiscoverySource, session: KafkaSession) -> None:
        super().__init__(discovery.cluster, after=(SourceName.DISCOVERY,))
        self._discovery = discovery
        self._session = session
        # The highest ApiVersions version each broker advertised last time: where its next poll starts.
        self._start_version: dict[int, int] = {}

    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        brokers = self._discovery.brokers()
        polled = {broker.node_id for broker in brokers}
        for node_id in [n for n in self._start_version if n not in polled]:
            del self._start_version[node_id]  # forgotten by discovery; a broker coming back starts afresh
        return [Poll(str(broker.node_id), partial(self._read, broker)) for broker in brokers]

    async def _read(self, broker: BrokerAddress) -> BrokerFacts:
        start_version = self._start_version.get(broker.node_id)
        facts = await self._session.call(read_broker_facts, broker.node_id, broker.host, start_version)
        own = facts.api(API_VERSIONS)
        if own is not None:
            self._start_version[broker.node_id] = own.max_version
        return facts
