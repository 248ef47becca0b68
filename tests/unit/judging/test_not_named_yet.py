"""Connections just accepted are `unknown` until their ApiVersions arrives (judging/not_named_yet.py): an `unknown`
connection that is a client's for certain is judged once it was there in every cycle of the last ten seconds and in the
cycle before; until then it is in doubt.
Counts from the 3.9.2 cluster of test_own_connections (each node fetching from the two others, node 2 the
transaction coordinator)."""

from __future__ import annotations

from collections.abc import Mapping

from exporter.judging.clients import ClientJudge
from exporter.judging.not_named_yet import NotNamedYet
from exporter.judging.own_connections import account
from exporter.policy import load_policy
from exporter.snapshot import JmxReading
from tests.unit.judging.readings import CLUSTER, UNKNOWN, jmx
from tests.unit.judging.test_own_connections import cluster_39, results


class Cycles:
    """The exporter's judging, cycle after cycle, as the collection loop runs it."""

    def __init__(self, interval: float = 30.0) -> None:
        self._hold = NotNamedYet()
        self._judge = ClientJudge(load_policy(None), 100)
        self._interval = interval
        self._now = 1000.0

    def judge(self, brokers: Mapping[str, JmxReading | None]) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        """(broker, listener) -> unknown_software violations; listener -> unknown connections in doubt."""
        polled = results(brokers, "3.9.2")
        self._now += self._interval
        accounts = self._hold.hold(polled, account([CLUSTER], polled), self._now)
        rows = self._judge.judge(polled, accounts)
        violating = {(r.broker, r.listener): r.violating for r in rows if r.violating and r.software_name == "unknown"}
        doubt = {o.listener: o.in_doubt for o in accounts[CLUSTER].by_listener if o.in_doubt}
        return violating, doubt


def test_the_first_cycle_judges_what_it_finds() -> None:
    # No cycle before it to compare with: an exporter started beside an old client reports it at once.
    assert Cycles().judge(cluster_39(extra_unknown_on_2=2)) == ({("2", "PLAINTEXT"): 2}, {})


def test_a_new_unknown_connection_is_in_doubt_for_one_cycle_then_judged() -> None:
    cycles = Cycles()
    assert cycles.judge(cluster_39()) == ({}, {})
    # One more `unknown` on node 2 than the brokers' channels account for: a client just accepted, or one that
    # never names itself. In doubt this cycle, not a violation, not hidden.
    assert cycles.judge(cluster_39(extra_unknown_on_2=1)) == ({}, {"PLAINTEXT": 1})
    # Still there a cycle later: it names no software.
    assert cycles.judge(cluster_39(extra_unknown_on_2=1)) == ({("2", "PLAINTEXT"): 1}, {})
    # A second one joins: the first stays judged, the second waits a cycle.
    assert cycles.judge(cluster_39(extra_unknown_on_2=2)) == ({("2", "PLAINTEXT"): 1}, {"PLAINTEXT": 1})


def test_a_connection_that_names_itself_by_the_next_cycle_never_violates() -> None:
    # What a real 3.9.2 controller showed while a broker restarted into KRaft mode reconnected to it: one new
    # connection still `unknown` in one read, apache-kafka-java the next.
    quiet = {"3000": jmx("3.9.2", [("CONTROLLER", "apache-kafka-java", "3.9.2", 1)], [])}
    caught = {"3000": jmx("3.9.2", [("CONTROLLER", *UNKNOWN, 1), ("CONTROLLER", "apache-kafka-java", "3.9.2", 1)], [])}
    named = {"3000": jmx("3.9.2", [("CONTROLLER", "apache-kafka-java", "3.9.2", 3)], [])}
    cycles = Cycles()
    assert [cycles.judge(brokers) for brokers in (quiet, caught, named)] == [
        ({}, {}),
        ({}, {"CONTROLLER": 1}),
        ({}, {}),
    ]


def test_a_broker_back_from_a_restart_holds_its_reconnections_a_cycle() -> None:
    # Node 2 unread for a cycle (restarting), then back with an unnamed client's connection among its others:
    # nothing of it was there the cycle before.
    cycles = Cycles()
    cycles.judge(cluster_39(extra_unknown_on_2=1))
    cycles.judge(cluster_39(extra_unknown_on_2=1))
    assert cycles.judge({**cluster_39(), "2": None})[0] == {}
    assert cycles.judge(cluster_39(extra_unknown_on_2=1)) == ({}, {"PLAINTEXT": 1})
    assert cycles.judge(cluster_39(extra_unknown_on_2=1)) == ({("2", "PLAINTEXT"): 1}, {})


def test_at_a_short_interval_a_connection_is_held_ten_seconds() -> None:
    # The controller of the migration story (1 s interval) on a loaded machine: a broker's new connection still
    # `unknown` in two reads a second apart, then named. Never a violation.
    quiet = {"3000": jmx("3.9.2", [("CONTROLLER", "apache-kafka-java", "3.9.2", 1)], [])}
    caught = {"3000": jmx("3.9.2", [("CONTROLLER", *UNKNOWN, 1), ("CONTROLLER", "apache-kafka-java", "3.9.2", 1)], [])}
    named = {"3000": jmx("3.9.2", [("CONTROLLER", "apache-kafka-java", "3.9.2", 2)], [])}
    cycles = Cycles(interval=1.0)
    assert [cycles.judge(brokers) for brokers in (quiet, caught, caught, named)] == [
        ({}, {}),
        ({}, {"CONTROLLER": 1}),
        ({}, {"CONTROLLER": 1}),
        ({}, {}),
    ]


def test_at_a_short_interval_an_unnamed_client_is_judged_once_there_ten_seconds() -> None:
    cycles = Cycles(interval=1.0)
    cycles.judge(cluster_39())
    held = [cycles.judge(cluster_39(extra_unknown_on_2=1)) for _ in range(11)]
    # In doubt while the cycle without it is within the last ten seconds: judged once there for ten.
    assert held == [({}, {"PLAINTEXT": 1})] * 10 + [({("2", "PLAINTEXT"): 1}, {})]
    # A cycle where it is gone (it reconnected): its successor waits the ten seconds again.
    cycles.judge(cluster_39())
    assert cycles.judge(cluster_39(extra_unknown_on_2=1)) == ({}, {"PLAINTEXT": 1})
