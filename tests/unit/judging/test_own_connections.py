"""The brokers' own connections told apart from the clients' (issue 37), on the counts real three-node clusters
showed (3.9.2 and 4.4.0, a topic with replication factor 3 and a transactional producer whose coordinator is
node 2): replica fetchers are `unknown` in both releases, the transaction markers `unknown` on 3.9 and
apache-kafka-java at the broker's release on 4.x, AddPartitionsToTxn verification apache-kafka-java in both."""

from __future__ import annotations

from collections.abc import Mapping

from exporter.judging.clients import ClientJudge
from exporter.judging.own_connections import account
from exporter.policy import load_policy
from exporter.snapshot import (
    BrokerFacts,
    BrokerListeners,
    ClientConnections,
    JmxReading,
    SourceKey,
    SourceResult,
)
from tests.unit.judging.readings import CLUSTER, UNKNOWN, jmx
from tests.unit.judging.readings import results as cycle


def facts(release: str, fetchers: int = 1) -> BrokerFacts:
    return BrokerFacts(
        "127.0.0.1", 4, (4,), (), (), (), 0, release, listeners=BrokerListeners("PLAINTEXT", "CONTROLLER", fetchers)
    )


def results(brokers: Mapping[str, JmxReading | None], release: str, **fetchers: int) -> list[SourceResult]:
    return cycle(brokers, lambda broker: facts(release, fetchers.get(f"b{broker}", 1)))


def cluster_39(extra_unknown_on_2: int = 0) -> dict[str, JmxReading | None]:
    """What the 3.9.2 cluster showed: each node fetches from the two others; node 2, the coordinator, holds a
    marker connection to every node (itself included); every node's AddPartitions channel goes to node 2."""
    fetch = [("replica-fetcher", other, 1) for other in "123"]
    return {
        "1": jmx(
            "3.9.2",
            [("PLAINTEXT", *UNKNOWN, 3), ("PLAINTEXT", "kafka-python", "3.0.12", 2)],
            [f for f in fetch if f[1] != "1"] + [("AddPartitionsManager-channel", None, 1)],
        ),
        "2": jmx(
            "3.9.2",
            [
                ("PLAINTEXT", *UNKNOWN, 3 + extra_unknown_on_2),
                ("PLAINTEXT", "apache-kafka-java", "3.9.2", 3),
                ("PLAINTEXT", "kafka-python", "3.0.12", 3),
            ],
            [f for f in fetch if f[1] != "2"]
            + [("AddPartitionsManager-channel", None, 1), ("txn-marker-channel", None, 3)],
        ),
        "3": jmx(
            "3.9.2",
            [("PLAINTEXT", *UNKNOWN, 3)],
            [f for f in fetch if f[1] != "3"] + [("AddPartitionsManager-channel", None, 1)],
        ),
    }


def violations(brokers: Mapping[str, JmxReading | None], release: str = "3.9.2", **fetchers: int) -> dict:
    polled = results(brokers, release, **fetchers)
    accounts = account([CLUSTER], polled)
    rows = ClientJudge(load_policy(None), 100).judge(polled, accounts)
    found = {(r.broker, r.software_name): r.violating for r in rows if r.violating}
    for listener in accounts[CLUSTER].by_listener:
        if listener.unattributed:
            found[("", listener.software_name)] = listener.unattributed
    return found


def test_a_healthy_39_cluster_has_no_unknown_clients_and_each_channel_is_counted_where_it_lands() -> None:
    brokers = cluster_39()
    assert violations(brokers) == {}
    own = account([CLUSTER], results(brokers, "3.9.2"))[CLUSTER]
    fetchers = {(row.broker, share.holder) for row in own.by_broker for share in row.own}
    assert fetchers == {(to, holder) for to in "123" for holder in "123" if to != holder}
    per_listener = {(o.software_name, o.listener): o for o in own.by_listener}
    unknown = per_listener[("unknown", "PLAINTEXT")]
    assert (unknown.own_placed, [(s.channel, s.connections) for s in unknown.own_unplaced]) == (
        6,
        [("txn-marker-channel", 3)],
    )
    java = per_listener[("apache-kafka-java", "PLAINTEXT")]
    assert [(s.channel, s.holder, s.connections) for s in java.own_unplaced] == [
        ("AddPartitionsManager-channel", holder, 1) for holder in "123"
    ]
    assert java.own_total == java.connections == 3
    assert own.channels_read == {"1": True, "2": True, "3": True}


def test_a_client_that_never_names_itself_violates_exactly_on_its_broker() -> None:
    # The 0.10.1.1 producer's two connections on node 2: node 2 can receive at most one marker connection from
    # its one coordinator, so the excess beyond the fetchers and that one is certain there.
    assert violations(cluster_39(extra_unknown_on_2=2)) == {("2", "unknown"): 2}


def test_what_no_broker_can_be_named_for_is_a_violation_without_a_broker() -> None:
    # The coordinator holds one marker connection, to node 1; an unnamed client sits on node 3. Either node could
    # hold the marker, so the excess is certain in the cluster but placed on neither.
    brokers = {
        "1": jmx("3.9.2", [("PLAINTEXT", *UNKNOWN, 1)], [("txn-marker-channel", None, 1)]),
        "3": jmx("3.9.2", [("PLAINTEXT", *UNKNOWN, 1)], []),
    }
    assert violations(brokers) == {("", "unknown"): 1}


def test_a_broker_whose_jmx_fails_while_it_replicates_puts_the_unknowns_in_doubt_not_in_violation() -> None:
    healthy = cluster_39()
    brokers = {**healthy, "3": None}
    # Nodes 1 and 2 still count node 3's fetcher: in doubt, no violation, no broker's connection hidden.
    assert violations(brokers) == {}
    own = account([CLUSTER], results(brokers, "3.9.2"))[CLUSTER]
    unknown = next(o for o in own.by_listener if o.software_name == "unknown")
    assert unknown.in_doubt == 2 and unknown.unread == ("3",)
    # An unnamed client with three connections on node 1: beyond what node 3 could hold towards it (one fetcher
    # thread and one marker connection, as far as the exporter can know) two are certain and violate.
    brokers["1"] = jmx(
        "3.9.2", [("PLAINTEXT", *UNKNOWN, 3 + 3)], [("replica-fetcher", "2", 1), ("replica-fetcher", "3", 1)]
    )
    assert violations(brokers) == {("1", "unknown"): 2}


def test_on_44_the_markers_name_themselves_and_only_the_fetchers_are_unknown() -> None:
    fetch = [("replica-fetcher", other, 1) for other in "12"]
    brokers = {
        "1": jmx("4.4.0", [("PLAINTEXT", *UNKNOWN, 1), ("PLAINTEXT", "apache-kafka-java", "4.4.0", 2)], [fetch[1]]),
        "2": jmx(
            "4.4.0",
            [("PLAINTEXT", *UNKNOWN, 1), ("PLAINTEXT", "apache-kafka-java", "4.4.0", 1)],
            [fetch[0], ("txn-marker-channel", None, 2), ("AddPartitionsManager-channel", None, 1)],
        ),
    }
    assert violations(brokers, "4.4.0") == {}
    own = account([CLUSTER], results(brokers, "4.4.0"))[CLUSTER]
    java = next(o for o in own.by_listener if o.software_name == "apache-kafka-java")
    assert {s.channel: s.connections for s in java.own_unplaced} == {
        "txn-marker-channel": 2,
        "AddPartitionsManager-channel": 1,
    }


def test_a_broker_that_holds_no_channels_needs_no_release_or_listeners() -> None:
    # The broker double: no channel MBeans, no app-info, no broker configs. Its unnamed clients violate as ever.
    polled = [
        SourceResult(
            SourceKey(CLUSTER, "1", "jmx"), True, 0.1, 0.0, reading=jmx(None, [("PLAINTEXT", *UNKNOWN, 2)], [])
        )
    ]
    rows = ClientJudge(load_policy(None), 100).judge(polled, account([CLUSTER], polled))
    assert [(r.violation, r.violating) for r in rows] == [("unknown_software", 2)]


def test_per_processor_the_certain_connections_are_listed_against_the_lowest_numbered_processors() -> None:
    # Which processor holds the replica fetcher is not known: of three unknown connections on processors 2 and 10,
    # one is broker 2's fetcher; the two certain ones are listed against processor 2 first, then 10.
    reading = JmxReading(
        clients=(
            ClientConnections("PLAINTEXT", "10", *UNKNOWN, 2),
            ClientConnections("PLAINTEXT", "2", *UNKNOWN, 1),
        ),
        channels_read=True,
        release="4.4.0",
    )
    fetcher = jmx("4.4.0", [], [("replica-fetcher", "1", 1)])
    polled = results({"1": reading, "2": fetcher}, "4.4.0")
    rows = ClientJudge(load_policy(None), 100).judge(polled, account([CLUSTER], polled))
    assert {(r.network_processor, r.violating) for r in rows} == {("2", 1), ("10", 1)}


def test_a_dedicated_replication_listener_takes_the_fetchers_and_the_client_listener_keeps_its_unnamed_client() -> None:
    # Brokers replicate on REPLICATION (inter.broker.listener.name), clients use PLAINTEXT: the fetchers are matched
    # on REPLICATION only, so an unnamed client on PLAINTEXT is not taken for one of them.
    def dedicated(release: str) -> BrokerFacts:
        return BrokerFacts(
            "127.0.0.1", 4, (4,), (), (), (), 0, release, listeners=BrokerListeners("REPLICATION", "CONTROLLER", 1)
        )

    brokers = {
        "1": jmx("4.4.0", [("REPLICATION", *UNKNOWN, 1), ("PLAINTEXT", *UNKNOWN, 1)], [("replica-fetcher", "2", 1)]),
        "2": jmx("4.4.0", [("REPLICATION", *UNKNOWN, 1)], [("replica-fetcher", "1", 1)]),
    }
    polled = [
        result
        for broker, gauges in brokers.items()
        for result in (
            SourceResult(SourceKey(CLUSTER, broker, "jmx"), True, 0.1, 0.0, reading=gauges),
            SourceResult(SourceKey(CLUSTER, broker, "api_versions"), True, 0.1, 0.0, reading=dedicated("4.4.0")),
        )
    ]
    rows = ClientJudge(load_policy(None), 100).judge(polled, account([CLUSTER], polled))
    assert {(r.broker, r.listener): r.violating for r in rows} == {
        ("1", "REPLICATION"): 0,
        ("1", "PLAINTEXT"): 1,
        ("2", "REPLICATION"): 0,
    }
