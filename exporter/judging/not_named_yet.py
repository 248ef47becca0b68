"""Connections a broker has just accepted, counted as ``unknown`` until their ApiVersions arrives.

Kafka registers every accepted connection under ``ClientInformation.EMPTY`` (unknown, unknown) and moves it to the
name and version its ApiVersions carries once the network processor reads that request
(docs/kafka-facts/jmx-mbeans.md#how-the-count-changes). A JMX read in that window, a millisecond or so, sees a client
that names itself as one that does not. One connection in a quiet cycle is rare; a broker roll, when every client and
every other broker reconnects within seconds, is when it happens, and is when an operator watches the verdicts most
(seen on a real 3.9.2 controller during the migration to KRaft: one `unknown_software` violation for one cycle, while
a broker restarted in KRaft mode reconnected to it).

So an ``unknown`` connection that the account says is a client's for certain is judged once it was there in every
cycle of the last HOLD_SECONDS and in the cycle before: those beyond the smallest count those cycles saw on that broker
and listener are in doubt (`kafka_client_unverified_connections`, the status page says why), neither a violation nor
hidden. The window is in seconds, not cycles, because the moment lasts as long as the broker takes to read the
request, not as long as the exporter's interval: a 3.9.2 controller starved of CPU, with its brokers reconnecting to it
after a restart, showed one connection `unknown` in two cycles one second apart (a suite run on a loaded machine). At
the default interval (30 s) the window is the cycle before; at 1 s it is ten cycles. A client that really names no
software stays, and is judged HOLD_SECONDS (or one cycle) later. The exporter's first cycle of a cluster has no
previous one and judges as it finds.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping

from exporter.judging.own_connections import ClusterAccount
from exporter.kafka_releases.broker_channels import UNKNOWN_SOFTWARE
from exporter.snapshot import BrokerListenerOwn, JmxReading, ListenerOwn, SourceResult

# (broker, listener)
_Where = tuple[str, str]

#: How long at the least a new `unknown` connection stays in doubt (see the module's docstring).
HOLD_SECONDS = 10.0


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
    """Holds new `unknown` client connections in doubt until they were seen for HOLD_SECONDS and one cycle.
    Stateful across cycles: per cluster, the certain `unknown` connections per broker and listener of the cycles
    that the next one may look back on."""

    def __init__(self, hold_seconds: float = HOLD_SECONDS) -> None:
        self._hold_seconds = hold_seconds
        # Per cluster, oldest first: (when the cycle began, its counts).
        self._seen: dict[str, deque[tuple[float, dict[_Where, int]]]] = {}

    def hold(
        self, results: Iterable[SourceResult], accounts: Mapping[str, ClusterAccount], now: float
    ) -> dict[str, ClusterAccount]:
        """``accounts`` with the `unknown` connections that are clients' for certain now but were not in every cycle
        since ``now`` (a monotonic clock's reading at the cycle's start) less the hold, nor in the cycle before,
        moved from certain to in doubt."""
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
            seen = self._seen.setdefault(cluster, deque())
            since = now - self._hold_seconds
            window = [counts for when, counts in seen if when >= since] or [counts for _, counts in list(seen)[-1:]]
            newcomers = {}
            if window:
                for where, n in certain.items():
                    surely = min(counts.get(where, 0) for counts in window)
                    if n > surely:
                        newcomers[where] = n - surely
            seen.append((now, certain))
            while seen[0][0] < since and len(seen) > 1:
                seen.popleft()
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
