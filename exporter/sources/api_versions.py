"""ApiVersions source: what each broker the cluster's discovery knows says about itself (KIP-35/511/584), and
where its own channels connect (DescribeConfigs of the broker, re-read every few minutes: those settings change
only with a restart)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from functools import partial

from exporter.snapshot import BrokerFacts, BrokerListeners, SourceResult
from exporter.sources.base import Poll, Source, SourceError, SourceName
from exporter.sources.broker_protocol import API_VERSIONS, read_broker_facts, read_broker_listeners
from exporter.sources.discovery import DiscoverySource
from exporter.sources.kafka_session import BrokerAddress, KafkaSession

log = logging.getLogger(__name__)

# How long a broker's listener names are kept before they are asked again, and how long at the most after a failure.
LISTENERS_TTL_SECONDS = 600.0
LISTENERS_RETRY_SECONDS = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class _Listeners:
    """A broker's listener names as last asked (None after a failure), and when to ask again."""

    known: BrokerListeners | None
    ask_at: float  # time.monotonic()
    failures: int = 0  # in a row
    polls_to_skip: int = 0  # after a failure, the polls that ask no more before ask_at


class ApiVersionsSource(Source):
    name = SourceName.API_VERSIONS

    def __init__(self, discovery: DiscoverySource, session: KafkaSession) -> None:
        super().__init__(discovery.cluster, after=(SourceName.DISCOVERY,))
        self._discovery = discovery
        self._session = session
        # The highest ApiVersions version each broker advertised last time: where its next poll starts.
        self._start_version: dict[int, int] = {}
        self._listeners: dict[int, _Listeners] = {}

    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        brokers = self._discovery.brokers()
        polled = {broker.node_id for broker in brokers}
        for node_id in [n for n in self._start_version if n not in polled]:
            del self._start_version[node_id]  # forgotten by discovery; a broker coming back starts afresh
        for node_id in [n for n in self._listeners if n not in polled]:
            del self._listeners[node_id]
        return [Poll(str(broker.node_id), partial(self._read, broker)) for broker in brokers]

    async def _read(self, broker: BrokerAddress) -> BrokerFacts:
        start_version = self._start_version.get(broker.node_id)
        facts = await self._session.call(read_broker_facts, broker.node_id, broker.host, start_version)
        own = facts.api(API_VERSIONS)
        if own is not None:
            self._start_version[broker.node_id] = own.max_version
        return dataclasses.replace(facts, listeners=await self._broker_listeners(broker.node_id, facts))

    async def _broker_listeners(self, node_id: int, facts: BrokerFacts) -> BrokerListeners | None:
        """The broker's listener names, asked again every LISTENERS_TTL_SECONDS. A failure does not fail the
        ApiVersions poll: its own channels then count as unread (exporter/judging/own_connections.py) until they are
        asked again, at the next poll, then after 1, 3, 7 ... polls more and LISTENERS_RETRY_SECONDS at the most. A
        request that timed out on a loaded broker is asked again at once: waiting a minute left its channels unread
        for sixty cycles of a one-second interval (a suite run with the cores shared); one the broker refuses, say
        for want of an ACL, costs a request a minute once it has failed six times."""
        last = self._listeners.get(node_id)
        now = time.monotonic()
        if last is not None and now < last.ask_at:
            if last.known is not None:
                return last.known
            if last.polls_to_skip > 0:
                self._listeners[node_id] = dataclasses.replace(last, polls_to_skip=last.polls_to_skip - 1)
                return None
        try:
            listeners = await self._session.call(read_broker_listeners, node_id, facts)
        except SourceError as error:
            failures = last.failures + 1 if last is not None and last.known is None else 1
            if failures == 1:
                log.warning(
                    "%s/%s: cannot read the broker's listener names, so its own connections cannot be told from "
                    "clients': %s",
                    self.cluster,
                    node_id,
                    error,
                )
            skip = 2 ** (failures - 1) - 1
            self._listeners[node_id] = _Listeners(None, time.monotonic() + LISTENERS_RETRY_SECONDS, failures, skip)
            return None
        self._listeners[node_id] = _Listeners(listeners, time.monotonic() + LISTENERS_TTL_SECONDS)
        return listeners
