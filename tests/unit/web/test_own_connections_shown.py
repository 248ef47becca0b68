"""The brokers' own connections on the status page and in /api/clients (issue 37, parts 3 and 4), on a 3.9.2
cluster judged the way a collection cycle judges it (tests/unit/web/own_cluster.py): replica fetchers placed on the
broker they fetch from, transaction markers and AddPartitionsToTxn verification counted per listener, and a 0.10
producer whose two connections are the only unknown client."""

from __future__ import annotations

import re
from dataclasses import replace

from exporter.judging.clients import ClientJudge
from exporter.judging.own_connections import account
from exporter.policy import load_policy
from exporter.snapshot import JmxReading, SourceResult
from exporter.web.clients_api import clients_document
from exporter.web.status_page import render_status_page
from tests.support.status_page import tables_of, titles_of
from tests.unit.web.own_cluster import NOW, cluster_39


def text(page: str) -> str:
    """The page's words as a browser shows them, markup gone and whitespace folded."""
    return " ".join(re.sub(r"<[^>]+>", " ", page).replace("&quot;", '"').replace("&#39;", "'").split())


def test_the_unknown_clients_listed_are_only_those_no_broker_channel_explains() -> None:
    page = render_status_page(cluster_39(), NOW)
    rows = {row["software"]: row for row in tables_of(page)["inventory-prod"]}
    # Nine of the eleven unknown connections are fetchers and markers; the producer's two are what violates.
    unknown = rows["unknown"]
    assert (unknown["connections"], unknown["own"], unknown["clients"]) == ("11", "9", "2")
    assert unknown["policy"] == "unknown_software: 2 of 11 connections"
    # AddPartitionsToTxn verification names itself as Kafka's Java client: all three are the brokers' own.
    java = rows["apache-kafka-java"]
    assert (java["connections"], java["own"], java["clients"], java["policy"]) == ("3", "3", "0", "OK")
    assert (rows["kafka-python"]["own"], rows["kafka-python"]["clients"]) == ("0", "5")
    assert "own-doubt-prod" not in page


def test_own_connections_per_broker_and_listener_beside_the_clients() -> None:
    page = render_status_page(cluster_39(), NOW)
    own = [
        (row["broker"], row["connections"], row["own"], row["clients"], row["channels"])
        for row in tables_of(page)["own-prod"]
    ]
    assert own == [
        ("1", "5", "2", "3", "replica fetchers from brokers 2 and 3: 2"),
        ("2", "11", "2", "9", "replica fetchers from brokers 1 and 3: 2"),
        ("3", "3", "2", "1", "replica fetchers from brokers 1 and 2: 2"),
        (
            "all brokers",
            "19",
            "12",
            "7",
            "replica fetchers from brokers 1, 2 and 3: 6; AddPartitionsToTxn verification from brokers 1, 2 and 3: 3; "
            "transaction markers from broker 2: 3",
        ),
    ]
    # The channels Kafka names no destination for are not subtracted on any one broker, and the page says so.
    assert "Kafka names no destination for the AddPartitionsToTxn verification and transaction markers" in text(page)
    assert "may include the AddPartitionsToTxn" in (titles_of(page, "own-prod")[1]["clients"] or "")


def test_an_unread_broker_is_named_and_what_it_may_hold_is_in_doubt_not_alerted_on() -> None:
    page = render_status_page(cluster_39(jmx_down=("3",)), NOW)
    words = text(page)
    assert "Broker 3's own channels could not be read this cycle (jmx down: connection)" in words
    assert (
        "On listener PLAINTEXT, 3 connections counted as unknown unknown may be the brokers' own channels or "
        "clients': the own channels of broker 3 could not be read. In doubt, they are neither alerted on as clients' "
        "nor hidden as the brokers' own"
    ) in words
    assert "On listener PLAINTEXT, 2 connections counted as apache-kafka-java 3.9.2 may be" in words
    rows = {row["software"]: row for row in tables_of(page)["inventory-prod"]}
    # Of the unknown connections on nodes 1 and 2, the fetchers of 1 and 2 and the markers are the brokers'; of the
    # producer's two, one is beyond what broker 3 could hold, so certain; the rest is in doubt.
    assert rows["unknown"]["policy"] == "unknown_software: 1 of 8 connections; 3 in doubt"
    assert rows["apache-kafka-java"]["policy"] == "OK"
    [total] = [row for row in tables_of(page)["own-prod"] if row["broker"] == "all brokers"]
    assert total["in-doubt"] == "5"


def test_an_unread_broker_that_explains_every_unknown_leaves_none_violating() -> None:
    # Without the producer, what is left unexplained is what broker 3's fetcher and marker channels could be.
    snapshot = cluster_39(jmx_down=("3",))
    results = []
    for result in snapshot.results:
        reading = result.reading_of(JmxReading)
        if reading is not None and result.key.broker == "2":
            clients = tuple(replace(c, connections=3) if c.software_name == "unknown" else c for c in reading.clients)
            result = SourceResult(result.key, True, 0.1, NOW, reading=replace(reading, clients=clients))
        results.append(result)
    accounts = account(["prod"], results)
    snapshot = replace(
        snapshot,
        results=tuple(results),
        clients=ClientJudge(load_policy(None), 100).judge(results, accounts),
        own_by_broker=accounts["prod"].by_broker,
        own_by_listener=accounts["prod"].by_listener,
    )
    rows = {row["software"]: row for row in tables_of(render_status_page(snapshot, NOW))["inventory-prod"]}
    assert rows["unknown"]["policy"].startswith("unknown_software: none certain; ")
    assert clients_document(snapshot)["clusters"]["prod"]["clients"][0]["violating_connections"] == 0


def test_api_clients_gives_raw_own_and_clients_only_per_pair() -> None:
    prod = clients_document(cluster_39())["clusters"]["prod"]
    counts = {
        (c["software_name"], c["software_version"]): (
            c["connections"],
            c["brokers_own_connections"],
            c["clients_only_connections"],
            c["violating_connections"],
        )
        for c in prod["clients"]
    }
    assert counts == {
        ("unknown", "unknown"): (11, 9, 2, 2),
        ("apache-kafka-java", "3.9.2"): (3, 3, 0, 0),
        ("kafka-python", "3.0.12"): (5, 0, 5, 0),
    }


def test_api_clients_lists_own_connections_per_listener_by_channel_and_broker() -> None:
    own = clients_document(cluster_39())["clusters"]["prod"]["brokers_own"]
    assert own["channels_read"] == {"1": True, "2": True, "3": True}
    unknown = next(entry for entry in own["listeners"] if entry["software_name"] == "unknown")
    assert (unknown["listener"], unknown["connections"], unknown["own_connections"]) == ("PLAINTEXT", 11, 9)
    channels = {channel["channel"]: channel for channel in unknown["channels"]}
    fetchers, markers = channels["replica-fetcher"], channels["txn-marker-channel"]
    assert fetchers["title"] == "replica fetchers" and fetchers["by_broker"] == {"1": 2, "2": 2, "3": 2}
    # Kafka names no destination for the markers: held by node 2, placed on no broker.
    assert (markers["connections"], markers["holders"], markers["by_broker"]) == (3, {"2": 3}, None)
    assert (unknown["unattributed_connections"], unknown["unverified_connections"], unknown["unread_brokers"]) == (
        0,
        0,
        [],
    )


def test_api_clients_names_the_unread_broker_and_what_is_in_doubt() -> None:
    prod = clients_document(cluster_39(jmx_down=("3",)))["clusters"]["prod"]
    assert prod["brokers_own"]["channels_read"]["3"] is False
    doubt = {
        (entry["software_name"], entry["listener"]): (entry["unverified_connections"], entry["unread_brokers"])
        for entry in prod["brokers_own"]["listeners"]
    }
    assert doubt == {("unknown", "PLAINTEXT"): (3, ["3"]), ("apache-kafka-java", "PLAINTEXT"): (2, ["3"])}
    unknown = next(c for c in prod["clients"] if c["software_name"] == "unknown")
    assert (unknown["unverified_connections"], unknown["violating_connections"]) == (3, 1)


def test_the_migrations_uncounted_connections_are_named_as_the_reason_for_the_doubt() -> None:
    # The dual-write phase of a real 3.9.2 migration (tests/unit/judging/test_own_connections_controller.py): the
    # KRaft controller's connections to the ZooKeeper-mode brokers, which Kafka counts nowhere, are in doubt.
    from tests.unit.judging.readings import results as cycle
    from tests.unit.judging.test_own_connections_controller import FACTS_KRAFT_BROKER, migrating_39

    polled = [
        r.__class__(replace(r.key, cluster="prod"), *[getattr(r, f) for f in r.__dataclass_fields__ if f != "key"])
        for r in cycle(migrating_39(), lambda _: FACTS_KRAFT_BROKER)
        if not (r.key.broker == "3000" and r.key.source == "api_versions")
    ]
    accounts = account(["prod"], polled)
    snapshot = replace(
        cluster_39(),
        results=tuple(polled),
        clients=ClientJudge(load_policy(None), 100).judge(polled, accounts),
        own_by_broker=accounts["prod"].by_broker,
        own_by_listener=accounts["prod"].by_listener,
        broker_channels_read={("prod", b): read for b, read in accounts["prod"].channels_read.items()},
    )
    words = text(render_status_page(snapshot, NOW))
    assert (
        "On listener PLAINTEXT, 2 connections counted as unknown unknown may be the brokers' own channels or clients': "
        "in the migration to KRaft the controller 3000 holds a connection to each ZooKeeper-mode broker that Kafka "
        "counts in no MBean."
    ) in words
    prod = clients_document(snapshot)["clusters"]["prod"]
    unknown = next(e for e in prod["brokers_own"]["listeners"] if e["software_name"] == "unknown")
    assert unknown["uncounted_from"] == ["3000"]


def test_a_connection_too_new_to_have_named_itself_is_in_doubt_and_the_page_says_why() -> None:
    # The 0.10 producer's two connections on node 2 were not there the cycle before (judging/not_named_yet.py).
    from exporter.judging.not_named_yet import NotNamedYet

    first, now = cluster_39(jmx_down=("2",)), cluster_39()
    hold = NotNamedYet()
    hold.hold(first.results, account(["prod"], first.results), 0.0)
    accounts = hold.hold(now.results, account(["prod"], now.results), 30.0)
    snapshot = replace(
        now,
        clients=ClientJudge(load_policy(None), 100).judge(now.results, accounts),
        own_by_broker=accounts["prod"].by_broker,
        own_by_listener=accounts["prod"].by_listener,
    )
    words = text(render_status_page(snapshot, NOW))
    assert (
        "On listener PLAINTEXT, 2 connections counted as unknown unknown were accepted within the last ten seconds or "
        "since the last cycle and may not have sent their ApiVersions yet (a broker counts every new connection so "
        "until then): in doubt until then, judged if they stay unnamed (kafka_client_unverified_connections)."
    ) in words
    assert "may be the brokers' own channels" not in words
    rows = {row["software"]: row for row in tables_of(render_status_page(snapshot, NOW))["inventory-prod"]}
    assert rows["unknown"]["policy"] == "unknown_software: none certain; 2 in doubt"
    prod = clients_document(snapshot)["clusters"]["prod"]
    unknown = next(e for e in prod["brokers_own"]["listeners"] if e["software_name"] == "unknown")
    assert (unknown["unverified_connections"], unknown["not_named_yet"]) == (2, 2)
