"""The brokers' own connections that go to the active controller (issue 45), on the counts real clusters showed.

ZooKeeper mode, two brokers of 3.9.2 (the same shape on 2.8.2, 3.3.2 and 3.7.2; real_kafka, a topic replicated on
both, a transactional producer whose coordinator is node 2, kafka-python clients), node 1 the controller
(ActiveControllerCount 1): node 1's controller channel holds one connection to each broker, itself included, never
named (`unknown`); node 2's forwarding channel goes to the controller on its inter-broker listener (ZooKeeper-mode
brokers have no controller listener) and names itself; both AddPartitionsToTxn channels go to node 2. KRaft, three
combined nodes, node 1 the quorum's leader: the heartbeat, forwarding, alter-partition and directory-assignments
channels of every node go to node 1 on its CONTROLLER listener, and each follower's raft channel holds one connection
to the leader.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from exporter.judging.clients import ClientJudge
from exporter.judging.own_connections import account, active_controller
from exporter.policy import load_policy
from exporter.snapshot import (
    CLUSTER_BROKER,
    BrokerFacts,
    BrokerListeners,
    ChannelConnections,
    ClientConnections,
    JmxReading,
    SourceKey,
    SourceResult,
)
from tests.unit.judging.readings import CLUSTER, UNKNOWN, jmx
from tests.unit.judging.readings import results as cycle

ZK_LISTENERS = BrokerListeners("PLAINTEXT", None, 1)
KRAFT_LISTENERS = BrokerListeners("PLAINTEXT", "CONTROLLER", 1)
FACTS_KRAFT_BROKER = BrokerFacts("127.0.0.1", 4, (4,), (), (), (), 0, "3.9", listeners=KRAFT_LISTENERS)


def results(brokers: Mapping[str, JmxReading | None], listeners: BrokerListeners) -> list[SourceResult]:
    return cycle(brokers, lambda _: BrokerFacts("127.0.0.1", 3, (3,), (), (), (), 0, "3.9", listeners=listeners))


def violations(brokers: Mapping[str, JmxReading | None], listeners: BrokerListeners = ZK_LISTENERS) -> dict:
    polled = results(brokers, listeners)
    accounts = account([CLUSTER], polled)
    rows = ClientJudge(load_policy(None), 100).judge(polled, accounts)
    found = {(r.broker, r.listener, r.software_name): r.violating for r in rows if r.violating}
    for listener in accounts[CLUSTER].by_listener:
        if listener.unattributed:
            found[("", listener.listener, listener.software_name)] = listener.unattributed
        assert not listener.in_doubt, listener
    return found


def zookeeper_39(controller: str = "1", unnamed_client_on: Mapping[str, int] | None = None) -> dict[str, JmxReading]:
    """The two 3.9.2 ZooKeeper-mode brokers as JMX showed them, with `controller` the active controller (its
    channel to each broker, itself included) and `unnamed_client_on` connections of a client that never names
    itself (the 0.10.1.1 producer)."""
    extra = dict(unnamed_client_on or {})
    other = "2" if controller == "1" else "1"
    readings = {}
    for broker in ("1", "2"):
        peer = "2" if broker == "1" else "1"
        # Fetcher from the peer, the controller's channel, and (node 2, the coordinator) a marker connection each.
        unknown = 1 + 1 + 1 + extra.get(broker, 0)
        # The AddPartitionsToTxn channels of both go to node 2; the other broker's forwarding goes to the controller.
        java = (2 if broker == "2" else 0) + (1 if broker == controller else 0)
        channels: list[tuple[str, str | None, int]] = [
            ("replica-fetcher", peer, 1),
            ("AddPartitionsManager-channel", None, 1),
        ]
        if broker == "2":
            channels.append(("txn-marker-channel", None, 2))
        if broker == controller:
            channels += [("controller-channel", "1", 1), ("controller-channel", "2", 1)]
        if broker == other:
            channels.append(("forwarding", None, 1))
        readings[broker] = jmx(
            "3.9.2",
            [
                ("PLAINTEXT", *UNKNOWN, unknown),
                ("PLAINTEXT", "apache-kafka-java", "3.9.2", java),
                ("PLAINTEXT", "kafka-python", "3.0.12", 1),
            ],
            channels,
            active_controller=broker == controller,
        )
    return readings


def test_a_healthy_zookeeper_cluster_has_no_unknown_clients() -> None:
    assert violations(zookeeper_39()) == {}
    own = account([CLUSTER], results(zookeeper_39(), ZK_LISTENERS))[CLUSTER]
    placed = {
        (row.broker, share.channel, share.holder, share.connections) for row in own.by_broker for share in row.own
    }
    assert placed == {
        ("1", "replica-fetcher", "2", 1),
        ("2", "replica-fetcher", "1", 1),
        ("1", "controller-channel", "1", 1),
        ("2", "controller-channel", "1", 1),
        # Forwarding names its destination nowhere; the controller's ActiveControllerCount places it.
        ("1", "forwarding", "2", 1),
    }


def test_the_unnamed_clients_violate_exactly_where_they_are() -> None:
    assert violations(zookeeper_39(unnamed_client_on={"1": 2, "2": 1})) == {
        ("1", "PLAINTEXT", "unknown"): 2,
        ("2", "PLAINTEXT", "unknown"): 1,
    }


def test_the_account_follows_the_controller_to_another_broker() -> None:
    readings = zookeeper_39(controller="2", unnamed_client_on={"2": 1})
    assert active_controller(readings) == "2"
    assert violations(readings) == {("2", "PLAINTEXT", "unknown"): 1}


def test_a_controller_in_its_own_controlled_shutdown_still_takes_the_channels_to_it() -> None:
    # What a real 3.9.2 controller showed while its own controlled shutdown waited (a partition whose only in-sync
    # replica it was): its ActiveControllerCount query answered nothing, the others' 0; its controlled-shutdown
    # connection went to its own listener, counted `unknown` there beside its channel to itself. The one holder of the
    # controller's channels is the controller: the connection is placed on it, not left to the cluster.
    readings = zookeeper_39(controller="1")
    one = readings["1"]
    clients = tuple(
        dataclasses.replace(c, connections=c.connections + 1) if (c.software_name, c.software_version) == UNKNOWN else c
        for c in one.clients
    )
    channels = (*one.channels, ChannelConnections("kafka-server-controlled-shutdown", None, 1))
    readings["1"] = dataclasses.replace(one, clients=clients, channels=channels, active_controller=None)
    assert active_controller(readings) == "1"
    own = account([CLUSTER], results(readings, ZK_LISTENERS))[CLUSTER]
    placed = {(row.broker, share.channel, share.holder) for row in own.by_broker for share in row.own}
    assert ("1", "kafka-server-controlled-shutdown", "1") in placed
    assert violations(readings) == {}
    # Two holders of the controller's channels (across a move) agree on none.
    readings["2"] = dataclasses.replace(
        readings["2"], channels=(*readings["2"].channels, ChannelConnections("controller-channel", "2", 1))
    )
    assert active_controller(readings) is None


def test_while_two_brokers_say_they_control_the_forwarding_connection_is_placed_on_neither() -> None:
    # Read at two moments across an election, both brokers said they were the controller: the forwarding connection
    # stays the cluster's, unplaced, and is counted as a client on neither broker.
    readings = zookeeper_39()
    readings["2"] = dataclasses.replace(readings["2"], active_controller=True)
    assert active_controller(readings) is None
    own = account([CLUSTER], results(readings, ZK_LISTENERS))[CLUSTER]
    java = next(o for o in own.by_listener if o.software_name == "apache-kafka-java")
    assert ("forwarding", "2", 1) in {(s.channel, s.holder, s.connections) for s in java.own_unplaced}
    certain = {(r.broker, r.software_name): r.clients_certain for r in own.by_broker}
    assert certain[("1", "apache-kafka-java")] == 0
    assert violations(readings) == {}


def test_a_control_plane_listener_takes_the_controller_channels() -> None:
    control_plane = BrokerListeners("PLAINTEXT", None, 1, control_plane="CONTROL")
    readings = zookeeper_39()
    for broker, reading in readings.items():
        # The controller's channels (and forwarding) land on CONTROL, the replication on PLAINTEXT.
        moved = [
            ClientConnections("CONTROL", "0", *UNKNOWN, 1),
            ClientConnections("PLAINTEXT", "0", *UNKNOWN, 2),
            *(ClientConnections("CONTROL", "0", "apache-kafka-java", "3.9.2", 1) for _ in [1] if broker == "1"),
            *(c for c in reading.clients if c.software_name == "kafka-python"),
            *(ClientConnections("PLAINTEXT", "0", "apache-kafka-java", "3.9.2", 2) for _ in [1] if broker == "2"),
        ]
        readings[broker] = JmxReading(
            clients=tuple(moved),
            channels=reading.channels,
            channels_read=True,
            release="3.9.2",
            active_controller=reading.active_controller,
        )
    assert violations(readings, control_plane) == {}


def kraft_44(leader: int = 1) -> dict[str, JmxReading]:
    """Three combined 4.4.0 nodes, `leader` the quorum's leader: every node's controller channels go to it, each
    follower's raft channel holds one connection to it and the leader's go to the followers."""
    readings = {}
    nodes = ("1", "2", "3")
    for broker in nodes:
        is_leader = broker == str(leader)
        to_leader = ("heartbeat", "forwarding", "alter-partition", "directory-assignments")
        channels: list[tuple[str, str | None, int]] = [(c, None, 1) for c in to_leader]
        channels += [("raft-channel", None, 2 if is_leader else 1)]
        controller_clients = 4 * 3 + 2 if is_leader else 1  # everyone's four, the followers' raft; or the leader's
        readings[broker] = jmx(
            "4.4.0",
            [("CONTROLLER", "apache-kafka-java", "4.4.0", controller_clients)],
            channels,
            quorum_leader=leader,
            active_controller=is_leader,
        )
    return readings


def test_kraft_controller_channels_are_placed_on_the_quorum_leader() -> None:
    own = account([CLUSTER], results(kraft_44(), KRAFT_LISTENERS))[CLUSTER]
    certain = {row.broker: row.clients_certain for row in own.by_broker}
    # Node 1's 14 connections are the nodes' own, all placed there; the followers' one each is the leader's raft
    # connection, which cannot be told apart from another voter's: not placed, so not counted as a client there.
    assert certain["1"] == 0
    controller = next(o for o in own.by_listener if o.listener == "CONTROLLER")
    assert controller.own_placed == 14 and controller.unattributed == 0 and controller.in_doubt == 0
    assert [(s.channel, s.holder, s.connections) for s in controller.own_unplaced] == [("raft-channel", "1", 2)]


def test_nodes_that_disagree_on_the_leader_place_nothing_on_either() -> None:
    readings = kraft_44()
    readings["3"] = kraft_44(leader=2)["3"]
    assert active_controller(readings) is None


def test_a_dedicated_controller_listed_with_the_brokers_puts_nothing_in_doubt_on_them() -> None:
    # Issue 51: a 3.9.2 cluster migrated to KRaft, brokers 1 and 2 (process.roles=broker), controller 3000 listed
    # with its JMX URL. The Kafka protocol side reaches brokers only, so 3000 has no DescribeConfigs facts; with two
    # listeners in its gauges, which of them its channels land on is not known, and it counts as unread; what its JMX
    # says it holds (its raft and registration channels, both towards the controllers) can put no `unknown`
    # connection on a broker, so the 0.10.1.1 producer's connections there are certain.
    brokers = {
        b: jmx(
            "3.9.2",
            # The peer's fetcher, the producer, one of node 1's two marker connections.
            [("PLAINTEXT", *UNKNOWN, 1 + 1 + 1)],
            [
                ("replica-fetcher", "2" if b == "1" else "1", 1),
                *([("txn-marker-channel", None, 2)] if b == "1" else []),
            ],
            quorum_leader=3000,
        )
        for b in ("1", "2")
    }
    controller = jmx(
        "3.9.2",
        [("CONTROLLER", "apache-kafka-java", "3.9.2", 3), ("CONTROLLER_SSL", "apache-kafka-java", "3.9.2", 0)],
        [("raft-channel", None, 1), ("registration", None, 1)],
        quorum_leader=3000,
        active_controller=True,
    )
    polled = cycle({**brokers, "3000": controller}, lambda b: FACTS_KRAFT_BROKER)
    polled = [r for r in polled if not (r.key.broker == "3000" and r.key.source == "api_versions")]
    accounts = account([CLUSTER], polled)
    assert accounts[CLUSTER].channels_read["3000"] is False
    rows = ClientJudge(load_policy(None), 100).judge(polled, accounts)
    assert {(r.broker, r.software_name): r.violating for r in rows if r.violating} == {
        ("1", "unknown"): 1,
        ("2", "unknown"): 1,
    }
    assert not any(o.in_doubt for o in accounts[CLUSTER].by_listener if o.listener == "PLAINTEXT")


def dedicated_39(legacy: Mapping[str, int]) -> dict[str, JmxReading]:
    """Issue 51 on real_kafka (3.9.2, KafkaCluster(nodes=2, controllers=1)), as JMX showed it: brokers 1 and 2
    fetching from each other; broker 1's forwarding, heartbeat and raft channels and broker 2's heartbeat and raft
    channels go to controller 3000, the quorum's leader, whose own registration channel goes to itself, 6
    connections on its CONTROLLER listener in all; `legacy`: the 0.10.1.1 producer's connections per broker."""
    readings = {
        b: jmx(
            "3.9.2",
            [("PLAINTEXT", *UNKNOWN, 1 + legacy.get(b, 0)), ("PLAINTEXT", "orders-app", "2.3.0", 1)],
            [
                ("replica-fetcher", "2" if b == "1" else "1", 1),
                ("heartbeat", None, 1),
                ("raft-channel", None, 1),
                *([("forwarding", None, 1)] if b == "1" else []),
            ],
            quorum_leader=3000,
        )
        for b in ("1", "2")
    }
    readings["3000"] = jmx(
        "3.9.2",
        [("CONTROLLER", "apache-kafka-java", "3.9.2", 6), ("CONTROLLER", *UNKNOWN, 0)],
        [("registration", None, 1)],
        quorum_leader=3000,
        active_controller=True,
    )
    return readings


def without_controller_facts(readings: Mapping[str, JmxReading | None]) -> list[SourceResult]:
    # The exporter's Kafka protocol side reaches brokers only: no ApiVersions or DescribeConfigs of 3000.
    polled = cycle(readings, lambda b: FACTS_KRAFT_BROKER)
    return [r for r in polled if not (r.key.broker == "3000" and r.key.source == "api_versions")]


def test_a_dedicated_controller_listed_with_the_brokers_is_read_from_its_jmx_alone() -> None:
    # Its JMX shows the registration channel (controllers only) and no heartbeat (every broker's), and gauges on one
    # listener, which Kafka requires to be its controller.listener.names: its channels land there, as the brokers'
    # DescribeConfigs say theirs do. Every connection on its listener is the nodes' own, and nothing is in doubt.
    polled = without_controller_facts(dedicated_39({"1": 1, "2": 1}))
    accounts = account([CLUSTER], polled)
    assert accounts[CLUSTER].channels_read == {"1": True, "2": True, "3000": True}
    on_controller = [o for o in accounts[CLUSTER].by_broker if o.broker == "3000"]
    assert [(o.listener, o.connections, o.clients_certain) for o in on_controller] == [("CONTROLLER", 6, 0)]
    assert sorted((s.channel, s.holder, s.connections) for s in on_controller[0].own) == [
        ("forwarding", "1", 1),
        ("heartbeat", "1", 1),
        ("heartbeat", "2", 1),
        ("raft-channel", "1", 1),
        ("raft-channel", "2", 1),
        ("registration", "3000", 1),
    ]
    assert not any(o.in_doubt or o.unattributed for o in accounts[CLUSTER].by_listener)
    rows = ClientJudge(load_policy(None), 100).judge(polled, accounts)
    assert {(r.broker, r.listener, r.software_name): r.violating for r in rows if r.violating} == {
        ("1", "PLAINTEXT", "unknown"): 1,
        ("2", "PLAINTEXT", "unknown"): 1,
    }


def test_clients_on_a_dedicated_controllers_listener_are_judged_beyond_the_nodes_own() -> None:
    # An admin tool given --bootstrap-controller (KIP-919) connects to the controller's listener: Kafka's Java client
    # at the brokers' own release, so only the count tells it from the nodes' channels; and a client that never
    # names itself there is as unnamed as on a broker.
    readings = dedicated_39({})
    controller = readings["3000"]
    readings["3000"] = dataclasses.replace(
        controller,
        clients=tuple(
            dataclasses.replace(c, connections=c.connections + (1 if c.software_name == "apache-kafka-java" else 2))
            for c in controller.clients
        ),
    )
    polled = without_controller_facts(readings)
    accounts = account([CLUSTER], polled)
    on_controller = {
        (o.software_name, o.software_version): o for o in accounts[CLUSTER].by_broker if o.broker == "3000"
    }
    named = on_controller[("apache-kafka-java", "3.9.2")]
    assert (named.listener, named.connections, named.clients_certain, sum(s.connections for s in named.own)) == (
        "CONTROLLER",
        7,
        1,
        6,
    )
    assert not any(o.in_doubt or o.unattributed for o in accounts[CLUSTER].by_listener)
    rows = ClientJudge(load_policy(None), 100).judge(polled, accounts)
    assert {(r.broker, r.listener, r.software_name): r.violating for r in rows if r.violating} == {
        ("3000", "CONTROLLER", "unknown"): 2,
    }


def test_a_node_with_a_heartbeat_channel_is_no_dedicated_controller() -> None:
    # A combined node holds both: without DescribeConfigs, which of its listeners is the inter-broker one is not
    # known, so it stays unread (and so does a controller whose gauges name a listener the brokers do not).
    readings = dedicated_39({})
    controller = readings["3000"]
    readings["3000"] = dataclasses.replace(
        controller, channels=(*controller.channels, ChannelConnections("heartbeat", None, 1))
    )
    assert account([CLUSTER], without_controller_facts(readings))[CLUSTER].channels_read["3000"] is False
    readings["3000"] = dataclasses.replace(
        controller, clients=tuple(dataclasses.replace(c, listener="QUORUM") for c in controller.clients)
    )
    assert account([CLUSTER], without_controller_facts(readings))[CLUSTER].channels_read["3000"] is False


def with_discovery(polled: list[SourceResult], answered: bool = True) -> list[SourceResult]:
    key = SourceKey(CLUSTER, CLUSTER_BROKER, "discovery")
    return [*polled, SourceResult(key, answered, 0.1, 0.0, error_reason=None if answered else "timeout")]


def test_a_listed_controller_whose_jmx_fails_hides_no_unnamed_client() -> None:
    # Its JMX read timed out (seen on a loaded machine) or refused: it was never in the cluster's metadata, so it is
    # no broker and holds nothing towards a broker's listener. Before, every `unknown` connection on every broker
    # was in doubt for that cycle: the 0.10.1.1 producer's violations went to 0 and the alert's `for` began again.
    readings: dict[str, JmxReading | None] = {**dedicated_39({"1": 1, "2": 1}), "3000": None}
    polled = with_discovery(without_controller_facts(readings))
    accounts = account([CLUSTER], polled)
    assert accounts[CLUSTER].channels_read["3000"] is False
    assert not any(o.in_doubt for o in accounts[CLUSTER].by_listener)
    rows = ClientJudge(load_policy(None), 100).judge(polled, accounts)
    assert {(r.broker, r.software_name): r.violating for r in rows if r.violating} == {
        ("1", "unknown"): 1,
        ("2", "unknown"): 1,
    }
    # Without an answer from discovery, whether 3000 is a broker is not known: what it may hold is unbounded.
    accounts = account([CLUSTER], with_discovery(without_controller_facts(readings), answered=False))
    assert {o.listener: o.in_doubt for o in accounts[CLUSTER].by_listener if o.in_doubt} == {"PLAINTEXT": 2}


def test_a_controller_unread_in_the_migration_may_hold_one_connection_to_each_zookeeper_mode_broker() -> None:
    # The KRaft controller of a ZooKeeper migration sends to every ZooKeeper-mode broker over a channel Kafka counts
    # in no connection-count; its brokers say they are ZooKeeper-mode brokers in the migration (ZkMigrationState 4,
    # ActiveControllerCount 0: the KRaft controller is the active one).
    readings: dict[str, JmxReading | None] = {
        b: dataclasses.replace(reading, active_controller=False, migration_state=4)
        for b, reading in dedicated_39({"1": 1, "2": 2}).items()
        if b != "3000"
    }
    readings["3000"] = None
    accounts = account([CLUSTER], with_discovery(without_controller_facts(readings)))
    doubted = {o.listener: (o.in_doubt, o.unread) for o in accounts[CLUSTER].by_listener if o.in_doubt}
    assert doubted == {"PLAINTEXT": (2, ("3000",))}
    rows = ClientJudge(load_policy(None), 100).judge(with_discovery(without_controller_facts(readings)), accounts)
    assert {(r.broker, r.software_name): r.violating for r in rows if r.violating} == {("2", "unknown"): 1}


def migrating_39(producer_on_2: int = 0) -> dict[str, JmxReading]:
    """What JMX showed on 3.9.2 in the migration's dual-write phase (real_kafka: brokers 1 and 2 rolled into migration
    mode, the metadata copied to KRaft controller 3000): each broker's quorum channel to the controller, node 1
    leading both partitions, its marker connection to itself, and the controller's migration connection to each
    broker, which Kafka counts nowhere: only its QueueSize gauges name them."""
    common: dict[str, Any] = {"quorum_leader": 3000, "migration_state": 4, "active_controller": False}
    return {
        "1": dataclasses.replace(
            jmx(
                "3.9.2",
                [("PLAINTEXT", *UNKNOWN, 3), ("PLAINTEXT", "apache-kafka-java", "3.9.2", 1)],
                [
                    ("txn-marker-channel", None, 1),
                    ("raft-channel", None, 1),
                    ("alter-partition", None, 1),
                    ("AddPartitionsManager-channel", None, 1),
                    ("quorum", None, 1),
                ],
            ),
            **common,
        ),
        "2": dataclasses.replace(
            jmx(
                "3.9.2",
                [("PLAINTEXT", *UNKNOWN, 1 + producer_on_2)],
                [("quorum", None, 1), ("raft-channel", None, 1), ("replica-fetcher", "1", 1)],
            ),
            **common,
        ),
        "3000": dataclasses.replace(
            jmx("3.9.2", [("CONTROLLER", "apache-kafka-java", "3.9.2", 6)], [("registration", None, 1)]),
            quorum_leader=3000,
            active_controller=True,
            migration_state=1,
            propagating_to=("1", "2"),
        ),
    }


def test_in_the_migration_the_controllers_uncounted_connections_are_in_doubt_never_violations() -> None:
    readings = migrating_39()
    assert [readings[n].metadata_mode for n in ("1", "2", "3000")] == ["migrating", "migrating", "kraft"]
    polled = [r for r in cycle(readings, lambda _: FACTS_KRAFT_BROKER) if r.key.broker != "3000" or r.reading]
    polled = [r for r in polled if not (r.key.broker == "3000" and r.key.source == "api_versions")]
    accounts = account([CLUSTER], polled)
    rows = ClientJudge(load_policy(None), 100).judge(polled, accounts)
    assert [r for r in rows if r.violating] == []
    unknown = next(o for o in accounts[CLUSTER].by_listener if o.software_name == "unknown")
    assert (unknown.in_doubt, unknown.uncounted_from) == (2, ("3000",))
    # The quorum channels land on the controller's listener, placed on it.
    controller = next(o for o in accounts[CLUSTER].by_listener if o.listener == "CONTROLLER")
    assert controller.in_doubt == 0 and controller.unattributed == 0


def test_zookeeper_and_kraft_nodes_say_their_mode() -> None:
    assert jmx("3.9.2", [], [], active_controller=False).metadata_mode == "zookeeper"
    assert jmx("4.4.0", [], [], quorum_leader=1).metadata_mode == "kraft"
    assert jmx("4.4.0", [], []).metadata_mode is None


def test_an_idle_channel_still_on_a_former_controller_is_left_unplaced_not_lost() -> None:
    # Node 3's forwarding channel kept its connection to node 2, the controller before node 1 (a channel moves only
    # when a request fails): node 1 counts one fewer, node 2 one more. Seen on a real 3.9.2 cluster under load.
    readings = kraft_44()
    readings["1"] = dataclasses.replace(
        readings["1"], clients=(ClientConnections("CONTROLLER", "0", "apache-kafka-java", "4.4.0", 13),)
    )
    readings["2"] = dataclasses.replace(
        readings["2"], clients=(ClientConnections("CONTROLLER", "0", "apache-kafka-java", "4.4.0", 2),)
    )
    own = account([CLUSTER], results(readings, KRAFT_LISTENERS))[CLUSTER]
    certain = {row.broker: row.clients_certain for row in own.by_broker}
    assert certain["1"] == 0 and certain.get("2", 0) == 0
    controller = next(o for o in own.by_listener if o.listener == "CONTROLLER")
    # Every connection is the nodes' own; which of node 3's controller-bound ones is the stale one, nothing says.
    assert controller.own_total == controller.connections == 16
    assert controller.unattributed == controller.in_doubt == 0


def test_an_unread_2_8_broker_is_reckoned_without_the_channels_its_release_lacks() -> None:
    # zk-2.8.2 on real brokers (test_own_connections_real.py, chapter 4): node 3, the controller, unread. Towards each
    # broker it may hold its replica fetcher, its transaction markers, its controller channel and its
    # controlled-shutdown connection: 4, never the AddPartitionsToTxn channel that 3.6 brought. Broker 2's `unknown`
    # beyond node 1's fetcher and those 4 is an unnamed client's for certain. Counting the channel 2.8 lacks held it in
    # doubt (2 runs in 4 of that chapter, when node 3 held its 4 there).
    def broker(peer: str, unnamed: int) -> JmxReading:
        return jmx("2.8.2", [("PLAINTEXT", *UNKNOWN, 1 + 4 + unnamed)], [("replica-fetcher", peer, 1)])

    readings: dict[str, JmxReading | None] = {"1": broker("2", 0), "2": broker("1", 1), "3": None}
    readings = {b: r if r is None else dataclasses.replace(r, active_controller=False) for b, r in readings.items()}
    polled = cycle(
        readings, lambda _: BrokerFacts("127.0.0.1", 3, (3,), (), (), (), 0, "2.8.0", listeners=ZK_LISTENERS)
    )
    accounts = account([CLUSTER], polled)
    rows = ClientJudge(load_policy(None), 100).judge(polled, accounts)
    assert {(r.broker, r.software_name): r.violating for r in rows if r.violating} == {("2", "unknown"): 1}
    # The rest may be node 3's: in doubt, never a violation.
    assert {o.listener: o.in_doubt for o in accounts[CLUSTER].by_listener if o.in_doubt} == {"PLAINTEXT": 8}
    # A 3.6 broker may hold that channel too, unnamed until 3.7.1: one more in doubt towards each broker.
    facts_36 = BrokerFacts("127.0.0.1", 3, (3,), (), (), (), 0, "3.6.0", listeners=ZK_LISTENERS)
    polled = cycle(readings, lambda _: facts_36)
    rows = ClientJudge(load_policy(None), 100).judge(polled, account([CLUSTER], polled))
    assert not any(r.violating for r in rows)
