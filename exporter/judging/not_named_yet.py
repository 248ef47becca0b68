"""Connections a broker has just accepted, counted as ``unknown`` until their ApiVersions arrives.

Kafka registers every accepted connection under ``ClientInformation.EMPTY`` (unknown, unknown) and moves it to the
name and version its ApiVersions carries once the network processor reads that request
(docs/kafka-facts/jmx-mbeans.md#how-the-count-changes). A JMX read in that window, a millisecond or so, sees a client
that names itself as one that does not. One connection in a quiet cycle is rare; a broker roll, when every client and
every other broker reconnects within seconds, is when it happens, and is when an operator watches the verdicts most
(seen on a real 3.9.2 controller during the migration to KRaft: one `unknown_software` violation for one cycle, while
a broker restarted in KRaft mode reconnected to it).

So an ``unknown`` connection that the account says is a client's for certain is judged once it was there in the
cycle before: those beyond the previous cycle's count on that broker and listener are in doubt for this cycle
(`kafka_client_unverified_connections`, the status page says why), neither a violation nor hidden. A client that
really names no software stays, and is judged one cycle later. The exporter's first cycle of a cluster has no
previous one and judges as it finds.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping

from exporter.judging.own_connections import ClusterAccount
from exporter.kafka_releases.broker_channels import UNKNOWN_SOFTWARE
from exporter.snapshot import BrokerListenerOwn, JmxReading, ListenerOwn, SourceResult

# (broker, listener)
_Where = tuple[str, str]


def _unknown_counted(results: Iterable[SourceResult]) -> dict[str, dict[_Where, int]]:
    """Per cluster, (broker, listener) -> the `unknown` connections its gauges count, over its network processors."""
    found: dict[str, dict[_Where, int]] = defaultdict(lambda: defaultdict(int))
    for result in results:
        reading = result.reading_of(JmxReading)
        if reading is None:
            continue
        for clients in reading.clients:
            if (clients.software_name, clients.software_version) == UNKNOWN_SOFTWARE:
                found[result.key.cluster][(result.key.broker, clients.listener)] += clients.connections
    return found


class NotNamedYet:
    """Holds each cycle's new `unknown` client connections in doubt for that cycle. Stateful across cycles: the
    previous cycle's certain `unknown` connections per cluster, broker and listener."""

    def __init__(self) -> None:
        self._before: dict[str, dict[_Where, int]] = {}

    def hold(
        self, results: Iterable[SourceResult], accounts: Mapping[str, ClusterAccount]
    ) -> dict[str, ClusterAccount]:
        """``accounts`` with the `unknown` connections that are clients' for certain now but were not in the cycle
        before moved from certain to in doubt."""
        counted = _unknown_counted(results)
        held: dict[str, ClusterAccount] = {}
        for cluster, cluster_account in accounts.items():
            mine = {
                (own.broker, own.listener): own
                for own in cluster_account.by_broker
                if (own.software_name, own.software_version) == UNKNOWN_SOFTWARE
            }
            certain = {where: n for where, n in counted.get(cluster, {}).items() if n}
            certain.update({where: own.clients_certain for where, own in mine.items()})
            before = self._before.get(cluster)
            self._before[cluster] = certain
            newcomers = {
                where: n - before.get(where, 0)
                for where, n in certain.items()
                if before is not None and n > before.get(where, 0)
            }
            held[cluster] = cluster_account
            if newcomers:
                held[cluster] = _held(cluster, cluster_account, newcomers, counted[cluster])
        return held


def _held(
    cluster: str, account: ClusterAccount, newcomers: Mapping[_Where, int], counted: Mapping[_Where, int]
) -> ClusterAccount:
    by_broker = [
        dataclasses.replace(own, clients_certain=own.clients_certain - newcomers[(own.broker, own.listener)])
        if _is_held(own, newcomers)
        else own
        for own in account.by_broker
    ]
    listed = {(own.broker, own.listener) for own in account.by_broker if _is_unknown(own)}
    name, version = UNKNOWN_SOFTWARE
    for (broker, listener), n in sorted(newcomers.items()):
        if (broker, listener) not in listed:  # every connection was certain: the account listed none there
            raw = counted[(broker, listener)]
            by_broker.append(BrokerListenerOwn(cluster, broker, listener, name, version, raw, (), raw - n))
    per_listener: dict[str, int] = defaultdict(int)
    for (_, listener), n in newcomers.items():
        per_listener[listener] += n
    by_listener = []
    for own in account.by_listener:
        n = per_listener.pop(own.listener, 0) if _is_unknown(own) else 0
        by_listener.append(dataclasses.replace(own, in_doubt=own.in_doubt + n, not_named_yet=n) if n else own)
    for listener, n in sorted(per_listener.items()):
        raw = sum(count for (_, where), count in counted.items() if where == listener)
        by_listener.append(ListenerOwn(cluster, listener, name, version, raw, 0, (), 0, n, (), not_named_yet=n))
    return ClusterAccount(tuple(by_broker), tuple(by_listener), account.channels_read)


def _is_unknown(own: BrokerListenerOwn | ListenerOwn) -> bool:
    return (own.software_name, own.software_version) == UNKNOWN_SOFTWARE


def _is_held(own: BrokerListenerOwn, newcomers: Mapping[_Where, int]) -> bool:
    return _is_unknown(own) and (own.broker, own.listener) in newcomers
