"""A three-node 3.9.2 cluster's snapshot with the brokers' own connections in its gauges, judged the way a collection
cycle judges it (exporter/collection.py): the counts a real cluster showed (tests/unit/judging/
test_own_connections.py), a topic replicated on every node and a transactional producer whose coordinator is
node 2. Each node fetches from the two others (`unknown` at the leader); node 2 holds a transaction-marker connection
to every node (`unknown` on 3.9); every node's AddPartitionsToTxn channel goes to node 2 (apache-kafka-java 3.9.2).
Besides: a kafka-python application on nodes 1 and 2, and a 0.10 producer (it names no software) with two
connections on node 2."""

from __future__ import annotations

from exporter.judging.clients import ClientJudge
from exporter.judging.own_connections import account
from exporter.policy import load_policy
from exporter.snapshot import (
    BrokerFacts,
    BrokerListeners,
    ChannelConnections,
    ClientConnections,
    JmxReading,
    Snapshot,
    SourceKey,
    SourceResult,
)

CLUSTER = "prod"
NOW = 1_700_000_100.0
UNKNOWN = ("unknown", "unknown")


def _jmx(clients: list[tuple[str, str, int]], channels: list[tuple[str, str | None, int]]) -> JmxReading:
    return JmxReading(
        clients=tuple(ClientConnections("PLAINTEXT", "0", name, version, n) for name, version, n in clients),
        channels=tuple(ChannelConnections(channel, to, n) for channel, to, n in channels),
        channels_read=True,
        release="3.9.2",
    )


def _fetchers(holder: str) -> list[tuple[str, str | None, int]]:
    return [("replica-fetcher", leader, 1) for leader in "123" if leader != holder]


READINGS = {
    "1": _jmx(
        [(*UNKNOWN, 3), ("kafka-python", "3.0.12", 2)],
        [*_fetchers("1"), ("AddPartitionsManager-channel", None, 1)],
    ),
    "2": _jmx(
        [(*UNKNOWN, 3 + 2), ("apache-kafka-java", "3.9.2", 3), ("kafka-python", "3.0.12", 3)],
        [*_fetchers("2"), ("AddPartitionsManager-channel", None, 1), ("txn-marker-channel", None, 3)],
    ),
    "3": _jmx([(*UNKNOWN, 3)], [*_fetchers("3"), ("AddPartitionsManager-channel", None, 1)]),
}


def cluster_39(jmx_down: tuple[str, ...] = ()) -> Snapshot:
    """The cluster's snapshot; the JMX of the brokers in `jmx_down` refused the connection this cycle."""
    results = []
    for broker, reading in READINGS.items():
        jmx = SourceKey(CLUSTER, broker, "jmx")
        if broker in jmx_down:
            results.append(SourceResult(jmx, False, 1.0, NOW, "connection", "Connection refused"))
        else:
            results.append(SourceResult(jmx, True, 0.1, NOW, reading=reading))
        facts = BrokerFacts(
            f"kafka-{broker}", 4, (4,), (), (), (), 0, "3.9", listeners=BrokerListeners("PLAINTEXT", "CONTROLLER", 1)
        )
        results.append(SourceResult(SourceKey(CLUSTER, broker, "api_versions"), True, 0.1, NOW, reading=facts))
    accounts = account([CLUSTER], results)
    return Snapshot(
        sequence=7,
        taken_at=NOW - 2.0,
        cycle_duration_seconds=1.25,
        results=tuple(results),
        clusters=(CLUSTER,),
        interval_seconds=30.0,
        clients=ClientJudge(load_policy(None), 100).judge(results, accounts),
        own_by_broker=accounts[CLUSTER].by_broker,
        own_by_listener=accounts[CLUSTER].by_listener,
        broker_channels_read={(CLUSTER, broker): read for broker, read in accounts[CLUSTER].channels_read.items()},
    )
