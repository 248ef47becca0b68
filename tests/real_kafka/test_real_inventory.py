"""The inventory job over the real brokers' own request logs (3.9.2 writes them with log4j 1, 4.4.0 with log4j2; both
rolled by size, see conftest.py), and `serve` joining its output with the live series.

Clients on both brokers and both listeners (SCRAM user alice on SASL_SSL, ANONYMOUS on PLAINTEXT) make their
bootstrap requests; filler ApiVersions requests then roll each broker's request log, so their lines are read from a
rolled file. The first `--incremental` run must find each client as its broker logged it (clientId, principal, host,
listener, software); a second one, after one more client, reads only the active files again; `serve` with
`inventory.path` on the job's output names the still-connected client on the status page, in /api/clients and in
kafka_client_identity_info.

Two Spark runs in all (each costs seconds of both cores): every check reads one of them.
"""

from __future__ import annotations

import csv
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from harness.clients import ClientKind, ExpectedIdentity, RealClient, start_client
from harness.raw_client import RawConnection
from real_kafka import KRAFT_RELEASES
from tests.real_kafka.conftest import RealBrokers, api_clients, exporter_config, get, samples, scrape, serving
from tests.support.inventory_command import run_inventory
from tests.support.status_page import tables_of
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.real_kafka, pytest.mark.slow]

FILLER_CLIENT_ID = "real-inventory-filler"
#: A client whose Metadata request makes the broker create a topic: the broker forwards CreateTopics, under this
#: clientId, to its controller, which logs it on the broker's own CONTROLLER connection.
AUTO_CREATOR = ("real-inventory-auto-creator", "1.0.0")
LIVE = ("real-inventory-live", "2.4.6")
LIVE_CLIENT_ID = "real-inventory-live-kcat"
ANONYMOUS, ALICE = "User:ANONYMOUS", "User:alice"


@dataclass(frozen=True)
class Driven:
    """A client the module drove, and what the job must say of it."""

    client_id: str
    release: str
    listener: str
    principal: str
    expected: ExpectedIdentity


@dataclass(frozen=True)
class Run:
    output: Path
    summary: dict[str, Any]  # run.json
    state: dict[str, Any]  # state.json

    def table(self, name: str) -> list[dict[str, str]]:
        with (self.output / "current" / f"{name}.csv").open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))

    def contributions(self, kind: str = "request") -> list[dict[str, Any]]:
        return [entry for entry in self.state["contributions"] if entry["kind"] == kind]


@dataclass
class Scenario:
    brokers: RealBrokers
    output: Path
    driven: list[Driven]
    live: RealClient
    #: Per release, the request-log files holding the driven clients' lines once the log had rolled.
    rolled_with_clients: dict[str, set[str]]
    first: Run


def start(brokers: RealBrokers, kind: ClientKind, release: str, listener: str, client_id: str) -> RealClient:
    node = brokers.node(release)
    properties = None
    if listener == "SASL_SSL":
        properties = brokers.java_sasl_ssl_properties() if kind is ClientKind.JAVA else brokers.sasl_ssl_properties()
    return start_client(kind, node.bootstrap(listener), client_id=client_id, properties=properties)


def auto_create_a_topic(brokers: RealBrokers, release: str) -> Driven:
    """ApiVersions v3 announcing AUTO_CREATOR, then Metadata v8 for a new topic with auto-creation allowed; returns
    once the controller has logged the forwarded CreateTopics."""
    node = brokers.node(release)
    port = int(node.bootstrap().rsplit(":", 1)[1])
    name, version = AUTO_CREATOR
    topic = f"real-inventory-auto-{uuid.uuid4().hex[:8]}"
    with RawConnection(port) as raw:
        raw.request(
            ApiVersionsRequest(version=3, client_software_name=name, client_software_version=version),
            client_id=name,
        )
        metadata = MetadataRequest(
            version=8, topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
        )
        raw.request(metadata, correlation_id=2, client_id=name)

    def forwarded() -> bool:
        return any(
            entry.get("isForwarded") and entry["requestHeader"].get("clientId") == name
            for entry in brokers.request_log(release)
        )

    wait_for(forwarded, timeout=15, what=f"the CreateTopics of {topic} forwarded to {release}'s controller")
    return Driven(name, release, "PLAINTEXT", ANONYMOUS, ExpectedIdentity(name, version))


def roll_request_log(brokers: RealBrokers, release: str) -> None:
    """ApiVersions v0 requests on one connection until log4j has rolled the broker's request log (each answer is a
    line of a few KB; the log rolls at conftest.REQUEST_LOG_MAX_BYTES)."""
    node = brokers.node(release)
    active = node.logs.request_log
    before = active.stat().st_ino
    port = int(node.bootstrap().rsplit(":", 1)[1])

    def rolled() -> bool:
        try:
            return active.stat().st_ino != before
        except FileNotFoundError:  # between log4j's rename and the new file
            return False

    with RawConnection(port) as raw:
        for correlation in range(1, 2000):
            raw.request(ApiVersionsRequest(version=0), correlation_id=correlation, client_id=FILLER_CLIENT_ID)
            if correlation % 25 == 0 and rolled():
                return
    raise AssertionError(f"{release}'s request log did not roll after 2000 requests")


def inventory(output: Path, brokers: RealBrokers) -> Run:
    inputs = [str(brokers.node(release).logs.directory) for release in KRAFT_RELEASES]
    done = run_inventory("--incremental", "--input", *inputs, "--output", str(output), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    current = output / "current"
    return Run(
        output,
        json.loads((current / "run.json").read_text(encoding="utf-8")),
        json.loads((current / "state.json").read_text(encoding="utf-8")),
    )


def files_with(brokers: RealBrokers, release: str, client_ids: set[str]) -> set[str]:
    marks = [f'"clientId":"{client_id}"' for client_id in client_ids]
    return {
        path.name
        for path in brokers.request_log_files(release)
        if any(mark in path.read_text(encoding="utf-8", errors="replace") for mark in marks)
    }


@pytest.fixture(scope="module")
def scenario(real_brokers: RealBrokers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    plan = [
        (ClientKind.JAVA, "3.9.2", "SASL_SSL", ALICE, "real-inventory-java-alice"),
        (ClientKind.CONFLUENT, "4.4.0", "SASL_SSL", ALICE, "real-inventory-confluent-alice"),
        (ClientKind.KAFKA_PYTHON, "4.4.0", "PLAINTEXT", ANONYMOUS, "real-inventory-kafka-python"),
    ]
    live = start_client(
        ClientKind.KCAT,
        real_brokers.node("3.9.2").bootstrap(),
        software_name=LIVE[0],
        software_version=LIVE[1],
        client_id=LIVE_CLIENT_ID,
    )
    with live:
        clients = [
            start(real_brokers, kind, release, listener, client_id) for kind, release, listener, _, client_id in plan
        ]
        try:
            for client in [live, *clients]:
                client.wait_ready(timeout=60)
        finally:
            for client in clients:
                client.close()
        driven = [
            Driven(LIVE_CLIENT_ID, "3.9.2", "PLAINTEXT", ANONYMOUS, live.expected),
            *(
                Driven(client_id, release, listener, principal, client.expected)
                for (_, release, listener, principal, client_id), client in zip(plan, clients, strict=True)
            ),
        ]
        driven.append(auto_create_a_topic(real_brokers, "4.4.0"))
        for release in KRAFT_RELEASES:
            roll_request_log(real_brokers, release)
        rolled = {
            release: files_with(real_brokers, release, {d.client_id for d in driven if d.release == release})
            for release in KRAFT_RELEASES
        }
        output = tmp_path_factory.mktemp("real-inventory") / "inventory"
        yield Scenario(real_brokers, output, driven, live, rolled, inventory(output, real_brokers))


@pytest.fixture(scope="module")
def second(scenario: Scenario) -> tuple[Driven, Run]:
    """One more client on 4.4.0, then the second incremental run."""
    brokers = scenario.brokers
    client_id = "real-inventory-aiokafka"
    with start(brokers, ClientKind.AIOKAFKA, "4.4.0", "PLAINTEXT", client_id) as client:
        client.wait_ready(timeout=60)
    return Driven(client_id, "4.4.0", "PLAINTEXT", ANONYMOUS, client.expected), inventory(scenario.output, brokers)


def logged(brokers: RealBrokers, client: Driven) -> set[tuple[str, str, str, str, str]]:
    """(principal, host, listener, software name, version) of the client's requests in its broker's request log,
    its ApiVersions lines left out (logged before the connection registered its software)."""
    out = set()
    for entry in brokers.request_log(client.release):
        header = entry["requestHeader"]
        if header.get("clientId") != client.client_id or entry.get("isForwarded") or header["requestApiKey"] == 18:
            continue
        host = entry["connection"].split("-")[1].rsplit(":", 1)[0]
        information = entry["clientInformation"]
        out.add(
            (entry["principal"], host, entry["listener"], information["softwareName"], information["softwareVersion"])
        )
    return out


def clients_rows(run: Run, client: Driven) -> set[tuple[str, str, str, str, str]]:
    return {
        (row["principal"], row["source_host"], row["listener"], row["software_name"], row["software_version"])
        for row in run.table("clients")
        if row["client_id"] == client.client_id and row["listener"] == client.listener
    }


def test_the_clients_table_has_each_client_as_its_broker_logged_it(scenario: Scenario) -> None:
    for client in scenario.driven:
        expected = (
            client.principal,
            "127.0.0.1",
            client.listener,
            client.expected.software_name,
            client.expected.software_version,
        )
        # The broker's own record of the client, and the job's reading of it.
        assert logged(scenario.brokers, client) == {expected}, client
        assert clients_rows(scenario.first, client) == {expected}, client


def test_the_log_at_one_line_per_connection_names_each_client_alike(scenario: Scenario, tmp_path: Path) -> None:
    """Each broker also writes the identities + INFO log broker-config/ ships, from the same requests: read alone,
    it names every driven client (SCRAM user alice on SASL_SSL, ANONYMOUS on PLAINTEXT, on 3.9.2's log4j 1 and 4.4.0's
    log4j2) with the identity the full DEBUG log gives."""
    copies = [str(scenario.brokers.node(release).logs.copy_directory) for release in KRAFT_RELEASES]
    output = tmp_path / "filtered"
    done = run_inventory("--input", *copies, "--output", str(output), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    filtered = Run(output, json.loads((output / "current" / "run.json").read_text(encoding="utf-8")), {})
    assert {entry["kind"] for entry in filtered.summary["request_logs"]} == {"identities_and_info"}
    for client in scenario.driven:
        assert clients_rows(filtered, client) == clients_rows(scenario.first, client), client


def test_a_request_forwarded_to_the_controller_is_not_a_client_of_it(scenario: Scenario) -> None:
    """The controller logs a forwarded request with the client's clientId and principal but on the broker's own
    connection: read as the client's, it would name the client as running the broker's software on CONTROLLER."""
    [creator] = [client for client in scenario.driven if client.client_id == AUTO_CREATOR[0]]
    forwarded = [
        entry
        for entry in scenario.brokers.request_log(creator.release)
        if entry.get("isForwarded") and entry["requestHeader"].get("clientId") == creator.client_id
    ]
    assert {(entry["requestHeader"]["requestApiKeyName"], entry["listener"]) for entry in forwarded} == {
        ("CREATE_TOPICS", "CONTROLLER")
    }
    rows = [row for row in scenario.first.table("clients") if row["client_id"] == creator.client_id]
    assert [(row["listener"], row["software_name"], row["software_version"]) for row in rows] == [
        ("PLAINTEXT", *AUTO_CREATOR)
    ]
    assert not [
        row
        for row in scenario.first.table("api_usage")
        if row["client_id"] == creator.client_id and row["api_name"] == "CreateTopics"
    ]


def test_the_rolled_request_logs_are_read(scenario: Scenario) -> None:
    summary = scenario.first.summary
    assert summary["files"]["read"] == summary["files"]["listed"]
    assert summary["unreadable"] == []
    for release in KRAFT_RELEASES:
        node = scenario.brokers.node(release)
        read = {
            Path(entry["path"].removeprefix("file:")).name
            for entry in scenario.first.contributions()
            if Path(entry["path"].removeprefix("file:")).parent == node.logs.directory
        }
        # The clients' lines were in the active file when they ran; by the job's run the log had rolled.
        assert scenario.rolled_with_clients[release], release
        assert all(name.startswith("kafka-request.log.") for name in scenario.rolled_with_clients[release]), release
        assert scenario.rolled_with_clients[release] <= read, release
        assert "kafka-request.log" in read, release


def test_serve_names_the_live_client_the_request_log_recorded(scenario: Scenario, tmp_path: Path) -> None:
    """A user runs one job per cluster; this one read both brokers, and only the 3.9.2 cluster is pointed at it:
    the live client's software is of its own, so no identity of the other broker can join it."""
    config = exporter_config(tmp_path / "exporter.yaml", scenario.brokers)
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    cluster = scenario.brokers.cluster_name("3.9.2")
    [entry] = [entry for entry in document["clusters"] if entry["name"] == cluster]
    entry["inventory"] = {"path": str(scenario.output)}
    config.write_text(yaml.safe_dump(document), encoding="utf-8")
    identity = {
        "kafka_cluster": cluster,
        "client_software_name": LIVE[0],
        "client_software_version": LIVE[1],
    }
    with serving(config) as base:

        def named() -> list[dict[str, str]]:
            return [dict(labels) for labels in samples(scrape(base), "kafka_client_identity_info", **identity)]

        wait_for(lambda: bool(named()), timeout=30, what="kafka_client_identity_info of the live client")
        assert named() == [
            {
                **identity,
                "client_id": LIVE_CLIENT_ID,
                "principal": ANONYMOUS,
                "source_host": "127.0.0.1",
                "listener": "PLAINTEXT",
            }
        ]
        [row] = [
            row
            for row in api_clients(base)["clusters"][cluster]["clients"]
            if (row["software_name"], row["software_version"]) == LIVE
        ]
        assert [who["client_id"] for who in row["identities"]] == [LIVE_CLIENT_ID]
        [who] = tables_of(get(f"{base}/"))[f"who-{cluster}-{LIVE[0]}-{LIVE[1]}"]
        assert (who["client-id"], who["principal"], who["host"], who["listener"]) == (
            LIVE_CLIENT_ID,
            ANONYMOUS,
            "127.0.0.1",
            "PLAINTEXT",
        )


def test_an_incremental_run_reads_only_the_active_files_again(scenario: Scenario, second: tuple[Driven, Run]) -> None:
    newcomer, run = second
    first_id, second_id = scenario.first.summary["run_id"], run.summary["run_id"]
    assert second_id != first_id and run.summary["previous_run_id"] == first_id
    # What this run parsed: the two active request logs and whatever server.log grew; every rolled file is known.
    fresh = [entry for entry in run.state["contributions"] if entry["segment"] == second_id]
    assert fresh, "the second run read nothing"
    assert {Path(entry["path"]).name for entry in fresh} <= {"kafka-request.log", "server.log"}
    kept = [entry for entry in run.contributions() if entry["segment"] == first_id]
    assert {Path(entry["path"]).name for entry in kept} >= {"kafka-request.log.1"}
    assert run.summary["files"]["skipped_unchanged"] >= len(kept)
    assert run.summary["files"]["read"] == len(fresh)
    # The tables cover every line both runs read; this one parsed only the lines of the files it read again, fewer
    # than the rolled megabyte it kept from the first.
    assert {entry["segment"] for entry in run.contributions()} == {first_id, second_id}
    assert run.summary["lines"] == sum(entry["lines"] for entry in run.contributions())
    parsed = sum(entry["lines"] for entry in fresh if entry["kind"] == "request")
    assert 0 < parsed < sum(entry["lines"] for entry in kept)
    # The tables still cover both runs: the newcomer, and the clients of the first run.
    software = (newcomer.expected.software_name, newcomer.expected.software_version)
    expected = (ANONYMOUS, "127.0.0.1", "PLAINTEXT", *software)
    assert clients_rows(run, newcomer) == {expected}
    for client in scenario.driven:
        assert clients_rows(run, client) == clients_rows(scenario.first, client), client
