"""Every ZooKeeper-mode release real_kafka runs (2.8.2, 3.3.2, 3.7.2, 3.9.2), for real (issue 45, items 3 and 4).
In tests/e2e, not tests/real_kafka: it starts clusters of its own, so it need not share a worker with the session's
KRaft brokers.

Per release, one ZooKeeper-mode cluster of one broker (ZooKeeper from the release's own jars, the broker with
PLAINTEXT and SASL_SSL listeners, SCRAM user alice, JMX with a password, the full DEBUG request log and, beside it
from the same requests, the identities + INFO log broker-config/ ships: log4j 1.2.17 on 2.8.2, reload4j on 3.x),
all started at once; and per release the broker double of that release in ZooKeeper mode. The same clients connect to
both: kcat announcing a chosen name, kafka-python as alice over SASL_SSL, and a raw connection that announces
itself and sends DescribeConfigs v0 (deprecated from 3.7.0); the real brokers also get Kafka's Java client 4.3.0 and
the 0.10.2.2 producer, whose Produce v2 Kafka 4.0 refuses. Every client sends a clientId of its release.

While they are connected, both sides are read (the socket-server MBeans and the brokers' own channels' over JMX, a
raw ApiVersions v3 and v4); then every client closes, and once each broker has closed their connections (its logs
can no longer grow), the inventory job runs once over every broker's two request logs.

Item 3: the job names exactly the clients that connected, per release (clientId, principal, host, listener,
software), and the brokers' own channel by the broker's id; the 0.10.2.2 producer blocks 4.0 on every release; the
filtered log keeps exactly the ApiVersions, Metadata and INFO lines, and the job reads each of them under the same
client as in the full log (on 2.8.2's log4j 1.2.17 too). Before 3.9.1 no request is logged at INFO, so a filtered
log names the 0.10.2.2 producer (software unknown) but cannot show its Produce v2.

Item 4: the double's client gauges, TLS-cipher gauge, DeprecatedRequestsPerSec meters and ApiVersions answers (byte
for byte) equal the real broker's; the brokers' own channels' MBeans, which the double does not open, are listed per
release as what it lacks.

Measured alone on the 2-core machine while other work loaded it (load 8 to 20): 110 to 275 s of wall time, 97 to 122
s of CPU, every process of the module counted; in the dearest run the inventory's Spark JVM took 47 s (without the
suite's class-data archive), the four brokers 31 s, and the SCRAM set-up, the ZooKeepers, the jmxquery reads and the
Java clients 6 to 7 s each.
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jmxquery import JMXQuery

from exporter.request_logs import log_format as lf
from exporter.sources.object_name import parse_object_name
from harness.clients import ClientKind, ExpectedIdentity, RealClient, start_client
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.mbean_host import MBeanHost
from kafka_double.releases import ZOOKEEPER
from kafka_double.specs import ListenerTls
from real_kafka import ZOOKEEPER_RELEASES, BrokerTls, JmxAuth, KafkaCluster, KafkaNode, NodeOptions, start_clusters
from real_kafka.connections import established
from real_kafka.readiness import PROBE_SOFTWARE_NAME, PROBE_SOFTWARE_VERSION
from tests.support.double_fidelity import (
    LEGACY_NAME,
    LEGACY_VERSION,
    OURS,
    Bean,
    Side,
    api_versions_frame,
    cipher_gauges,
    client_gauges,
    decode_api_versions,
    deprecated_meters,
    dump,
    expected_deprecated_meter,
    fidelity_clients,
    sasl_ssl_settings,
    within,
)
from tests.support.inventory_command import run_inventory
from tests.support.tls_material import BrokerTlsMaterial
from tests.support.waiting import wait_for
from tests.unit.request_logs.test_log_forms import LINE_0_10, LINE_0_11

# A story of real clusters, its set-up included: the suite's 300 s per test is too short on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.real_kafka, pytest.mark.timeout(900)]

RELEASES = ZOOKEEPER_RELEASES
JMX = JmxAuth("monitor", "zk-Secret-45")
SCRAM_USER, SCRAM_PASSWORD = "alice", "alice-Secret-45"
ANONYMOUS, ALICE = "User:ANONYMOUS", "User:alice"
HOST = "127.0.0.1"
API_VERSIONS_PROBE = ("fidelity", "1.0")  # what double_fidelity.api_versions_frame announces
UNKNOWN = ExpectedIdentity("unknown", "unknown")
API_VERSIONS, METADATA = 18, 3
UNSUPPORTED_VERSION = 35
#: Every kafka.server MBean with a connection count: the socket server's, per listener and processor, and each of the
#: broker's own channels'; read in the same JVM as the gauges.
CHANNELS = JMXQuery("kafka.server:type=*,*", "connection-count")

#: What a one-broker ZooKeeper-mode cluster's broker registers for its own channels (type -> the keys after it), read
#: on the real brokers. The double opens no channel of its own, so it has none of them: written down here, not
#: emulated (docs/kafka-facts/brokers-own-connections.md#zookeeper-mode says what each is).
OWN_CHANNELS: dict[str, dict[str, tuple[str, ...]]] = {
    "2.8.2": {
        "controller-channel-metrics": ("broker-id",),
        "alterIsrChannel-metrics": ("BrokerId",),
        "txn-marker-channel-metrics": (),
    },
    "3.3.2": {
        "controller-channel-metrics": ("broker-id",),
        "alterPartition-metrics": ("BrokerId",),
        "forwarding-metrics": ("BrokerId",),
        "txn-marker-channel-metrics": (),
    },
    "3.7.2": {
        "controller-channel-metrics": ("broker-id",),
        "alter-partition-metrics": ("BrokerId",),
        "forwarding-metrics": ("BrokerId",),
        "txn-marker-channel-metrics": (),
        "AddPartitionsManager-channel-metrics": (),
    },
    "3.9.2": {
        "controller-channel-metrics": ("broker-id",),
        "alter-partition-metrics": ("BrokerId",),
        "forwarding-metrics": ("BrokerId",),
        "txn-marker-channel-metrics": (),
        "AddPartitionsManager-channel-metrics": (),
    },
}

_REQUEST_LINE = re.compile(r"^\[[^\]]+\] ([A-Z]+) Completed request:(\{.*\}) \(kafka\.request\.logger\)$")


def node_id(release: str) -> int:
    """28 for 2.8.2: which broker a clientId or an MBean belongs to is then plain to read."""
    major, minor, _ = release.split(".")
    return int(major) * 10 + int(minor)


def client_id(release: str, kind: str) -> str:
    """The clientId a client of ``kind`` sends to ``release``'s broker (double_fidelity.fidelity_clients' prefix)."""
    return f"zk-{release}-{kind}"


@dataclass
class Brokers:
    clusters: dict[str, KafkaCluster]
    doubles: dict[str, DoubleCluster]
    tls: BrokerTlsMaterial

    def node(self, release: str) -> KafkaNode:
        return self.clusters[release].node(node_id(release))

    def sides(self, release: str) -> dict[str, Side]:
        node, handle = self.node(release), self.doubles[release].broker(node_id(release))
        assert node.ports.plaintext is not None and node.ports.sasl_ssl is not None
        return {
            "real": Side(node.ports.plaintext, node.ports.sasl_ssl, node.jmx_url, JMX.username, JMX.password),
            "double": Side(
                handle.listener_port("PLAINTEXT"), handle.listener_port("SASL_SSL"), handle.jmx_url, None, None
            ),
        }

    def request_log_directories(self, release: str) -> dict[str, Path]:
        """The full DEBUG log's directory ("full", the broker's logs/) and the filtered copy's ("filtered")."""
        logs = self.node(release).logs
        assert logs.copy_directory is not None
        return {"full": logs.directory, "filtered": logs.copy_directory}


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory, mbean_host: MBeanHost) -> Iterator[Brokers]:
    directory = tmp_path_factory.mktemp("zookeeper-releases")
    (directory / "tls").mkdir()
    tls = BrokerTlsMaterial(directory / "tls")
    options = NodeOptions(
        tls=BrokerTls(tls.broker.cert, tls.broker.key),
        scram_users={SCRAM_USER: SCRAM_PASSWORD},
        jmx_auth=JMX,
        request_log_copy=True,
    )
    clusters = {
        release: KafkaCluster(
            directory / release, release, first_node_id=node_id(release), zookeeper=True, options=options
        )
        for release in RELEASES
    }
    listener_tls = ListenerTls(tls.broker.cert, tls.broker.key)
    with contextlib.ExitStack() as stack:
        # Three network processors per listener, as the real brokers' num.network.threads default.
        doubles = {
            release: stack.enter_context(
                DoubleCluster(
                    [
                        BrokerSpec(
                            node_id(release),
                            release=release,
                            metadata_mode=ZOOKEEPER,
                            listeners=[
                                ListenerSpec("PLAINTEXT", "PLAINTEXT", 0, 3),
                                ListenerSpec(
                                    "SASL_SSL", "SASL_SSL", 0, 3, sasl_mechanisms=("SCRAM-SHA-512",), tls=listener_tls
                                ),
                            ],
                        )
                    ],
                    mbean_host=mbean_host,
                    sasl_users={SCRAM_USER: SCRAM_PASSWORD},
                )
            )
            for release in RELEASES
        }
        start_clusters(*clusters.values())
        try:
            yield Brokers(clusters, doubles, tls)
        finally:
            for cluster in clusters.values():
                cluster.stop()


# ---------------------------------------------------------------------------------------------- what was observed


@dataclass(frozen=True)
class Driven:
    """A client that connected to a real broker, and what the inventory must say of it."""

    release: str
    client_id: str
    principal: str
    listener: str
    expected: ExpectedIdentity

    @property
    def row(self) -> tuple[str, str, str, str, str, str]:
        return (
            self.client_id,
            self.principal,
            HOST,
            self.listener,
            self.expected.software_name,
            self.expected.software_version,
        )


@dataclass
class Observed:
    brokers: Brokers
    driven: list[Driven]
    #: release -> side ("real", "double") -> MBeans read while every client was connected.
    beans: dict[str, dict[str, list[Bean]]]
    #: (release, ApiVersions version) -> side -> the answer frame.
    api_versions: dict[tuple[str, int], dict[str, bytes]]


def _real_only_clients(brokers: Brokers, release: str) -> list[tuple[RealClient, Driven]]:
    """Kafka's Java client 4.3.0 and the 0.10.2.2 producer (ApiVersions v0, Metadata v2, Produce v2), on PLAINTEXT,
    for the inventory: the real brokers only. The gauge comparison does without them: the producer's ``unknown``
    gauge cannot be told from the brokers' own channels', and a JVM per double would cost more than it tells."""
    bootstrap = brokers.node(release).bootstrap()
    java = start_client(ClientKind.JAVA, bootstrap, client_id=client_id(release, "java"))
    # Every client here makes the broker create topic "demo" at once: 0.10's producer retries nothing by default.
    legacy = start_client(
        ClientKind.JAVA_0_10_2, bootstrap, client_id=client_id(release, "legacy-0.10.2.2"), properties={"retries": "5"}
    )
    return [
        (java, Driven(release, client_id(release, "java"), ANONYMOUS, "PLAINTEXT", java.expected)),
        (legacy, Driven(release, client_id(release, "legacy-0.10.2.2"), ANONYMOUS, "PLAINTEXT", legacy.expected)),
    ]


def _fidelity_driven(release: str, clients: list[RealClient]) -> list[Driven]:
    """What double_fidelity.fidelity_clients' clients are on a real broker, with their clientIds."""
    kcat, kafka_python = clients
    return [
        Driven(release, client_id(release, "kcat"), ANONYMOUS, "PLAINTEXT", kcat.expected),
        Driven(release, client_id(release, "kafka-python"), ALICE, "SASL_SSL", kafka_python.expected),
        Driven(
            release,
            client_id(release, "raw-legacy"),
            ANONYMOUS,
            "PLAINTEXT",
            ExpectedIdentity(LEGACY_NAME, LEGACY_VERSION),
        ),
    ]


def _api_versions_driven(release: str, version: int) -> Driven:
    """The raw ApiVersions probe of ``version``. Brokers before 3.9 answer v4 with UNSUPPORTED_VERSION without reading
    its body: that connection registers no software, so the job names it unknown."""
    served = version <= 3 or release == "3.9.2"
    software = ExpectedIdentity(*API_VERSIONS_PROBE) if served else UNKNOWN
    return Driven(release, client_id(release, f"api-versions-v{version}"), ANONYMOUS, "PLAINTEXT", software)


def _open_on_the_broker(ports: set[int]) -> int:
    """Connections the broker accepted on ``ports`` and has not closed yet: established, or closed by the client
    only (CLOSE_WAIT until the broker's network thread has read the end of the stream)."""
    count = 0
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        with contextlib.suppress(FileNotFoundError):
            for line in table.read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 3 and fields[3] in ("01", "08") and int(fields[1].rsplit(":", 1)[1], 16) in ports:
                    count += 1
    return count


def _open_towards(ports: set[int]) -> int:
    """Connections to ``ports`` whose client end is established: once every client process is gone, the broker's
    own (its controller's channel to itself)."""
    return sum(1 for local, remote, _ in established() if remote in ports and local not in ports)


@pytest.fixture(scope="module")
def observed(brokers: Brokers) -> Observed:
    sasl_ssl = sasl_ssl_settings(SCRAM_USER, SCRAM_PASSWORD, str(brokers.tls.ca_file))
    driven: list[Driven] = []
    beans: dict[str, dict[str, list[Bean]]] = {}
    answers: dict[tuple[str, int], dict[str, bytes]] = {}
    with contextlib.ExitStack() as stack:
        clients: list[RealClient] = []
        for release in RELEASES:
            sides = brokers.sides(release)
            real = stack.enter_context(fidelity_clients(sides["real"], sasl_ssl, f"zk-{release}"))
            driven += _fidelity_driven(release, real)
            clients += real + stack.enter_context(fidelity_clients(sides["double"], sasl_ssl))
            for client, who in _real_only_clients(brokers, release):
                clients.append(stack.enter_context(client))
                driven.append(who)
        for client in clients:
            client.wait_ready(60)
        for release in RELEASES:
            sides = brokers.sides(release)
            for version in (3, 4):
                probe = client_id(release, f"api-versions-v{version}")
                answers[(release, version)] = {
                    name: api_versions_frame(side.plaintext, version, probe) for name, side in sides.items()
                }
                driven.append(_api_versions_driven(release, version))

            def settled(release: str = release, sides: dict[str, Side] = sides) -> bool:
                read = {name: dump(side, CHANNELS) for name, side in sides.items()}
                beans[release] = read
                return client_gauges(read["real"]) == client_gauges(read["double"])

            # Each client's connections settle (bootstrap, then the broker's own address) at their own pace on each
            # side; the test compares what was read last.
            within(settled, 60)
    # Every client has closed its end; once each broker has closed its own, the request logs hold their last lines.
    for release in RELEASES:
        node = brokers.node(release)
        ports = {port for port in (node.ports.plaintext, node.ports.sasl_ssl) if port is not None}

        def quiet(ports: set[int] = ports) -> bool:
            return _open_on_the_broker(ports) == _open_towards(ports)

        wait_for(quiet, timeout=60, what=f"{release}'s broker closing its clients' connections")
    return Observed(brokers, driven, beans, answers)


# ---------------------------------------------------------------------------------------------- the inventory


@dataclass(frozen=True)
class Inventory:
    """The job's one run over every broker's two request logs, and a log of a broker before 1.0."""

    output: Path
    summary: dict[str, Any]  # run.json
    stderr: str
    #: A request log as Kafka 0.11 and 0.10 brokers write it (CONSTRUCTED: tests/unit/request_logs/test_log_forms.py).
    older: Path

    def table(self, name: str) -> list[dict[str, str]]:
        with (self.output / "current" / f"{name}.csv").open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def inventory(observed: Observed, tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    brokers = observed.brokers
    inputs = [str(path) for release in RELEASES for path in brokers.request_log_directories(release).values()]
    base = tmp_path_factory.mktemp("zookeeper-inventory")
    older = base / "broker-0.11" / "kafka-request.log"
    older.parent.mkdir()
    older.write_text(f"{LINE_0_11}\n{LINE_0_10}\n", encoding="utf-8")
    output = base / "inventory"
    done = run_inventory("--input", *inputs, str(older.parent), "--output", str(output), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((output / "current" / "run.json").read_text(encoding="utf-8"))
    return Inventory(output, summary, done.stderr, older)


CLIENT_COLUMNS = ("client_id", "principal", "source_host", "listener", "software_name", "software_version")
#: A request as a broker logged it: (level, clientId, API key, version).
Logged = tuple[str, str | None, int, int]


def logged(directory: Path) -> Counter[Logged]:
    """Every line of the request log files in ``directory``, each of which must be a request line."""
    out: Counter[Logged] = Counter()
    for path in sorted(directory.glob("kafka-request.log*")):
        for line in path.read_text(encoding="utf-8").splitlines():
            match = _REQUEST_LINE.match(line)
            assert match is not None, f"{path}: {line[:300]}"
            header = json.loads(match.group(2))["requestHeader"]
            out[(match.group(1), header.get("clientId"), header["requestApiKey"], header["requestApiVersion"])] += 1
    return out


def client_rows(inventory: Inventory) -> set[tuple[str, ...]]:
    return {tuple(row[key] for key in CLIENT_COLUMNS) for row in inventory.table("clients")}


def own_rows(release: str) -> set[tuple[str, ...]]:
    """The broker's own channels as the job names them: the controller's channel to the broker (LeaderAndIsr,
    UpdateMetadata; it never sends ApiVersions, so unknown) and, from 3.0, the channel to the controller
    (``forwarding``) that asks it for a block of producer ids (AllocateProducerIds, KIP-730) when the Java producer's
    InitProducerId arrives: a NetworkClient that sends ApiVersions v3 with the broker's own release (3.3.2
    KafkaServer.scala:356-364). 2.8 takes producer ids from ZooKeeper itself."""
    base = (str(node_id(release)), ANONYMOUS, HOST, "PLAINTEXT")
    rows: set[tuple[str, ...]] = {(*base, UNKNOWN.software_name, UNKNOWN.software_version)}
    if not release.startswith("2."):
        rows.add((*base, "apache-kafka-java", release))
    return rows


def test_the_job_names_exactly_the_clients_that_connected(observed: Observed, inventory: Inventory) -> None:
    """Per release, by its clientIds: each client once, with the principal, host, listener and software its broker
    recorded. Besides them, only the broker's own channel (clientId its broker id: ControllerChannelManager and
    BrokerToControllerChannelManager give their NetworkClient ``config.brokerId.toString``) and real_kafka's
    readiness probe, which every broker saw."""
    rows = client_rows(inventory)
    for release in RELEASES:
        named = {row for row in rows if row[0].startswith(client_id(release, ""))}
        assert named == {d.row for d in observed.driven if d.release == release}, release
    own = {row for row in rows if row[0] in {str(node_id(release)) for release in RELEASES}}
    assert own == {row for release in RELEASES for row in own_rows(release)}
    probe = (PROBE_SOFTWARE_NAME, ANONYMOUS, HOST, "PLAINTEXT", PROBE_SOFTWARE_NAME, PROBE_SOFTWARE_VERSION)
    assert rows - {d.row for d in observed.driven} - own == {probe}


def test_the_0_10_producer_blocks_4_0_on_every_release(inventory: Inventory) -> None:
    """Its Produce v2, which 4.0 refuses; and the raw legacy connection's DescribeConfigs v0, which 4.0 removed.

    The ZooKeeper controller's own LeaderAndIsr and UpdateMetadata, under the broker's id (APIs of ZooKeeper mode only,
    which 4.0 no longer has), block nothing: the brokers' own requests, which the migration to KRaft ends."""
    rows = [row for row in inventory.table("upgrade_impact") if row["kind"] == "api_version"]
    brokers = {str(node_id(release)) for release in RELEASES}
    assert {
        (row["client_id"], row["api_name"], row["versions_used"], row["reason"])
        for row in rows
        if row["client_id"] not in brokers
    } == {
        blocker
        for release in RELEASES
        for blocker in (
            (client_id(release, "legacy-0.10.2.2"), "Produce", "2", "version_removed"),
            (client_id(release, "raw-legacy"), "DescribeConfigs", "0", "version_removed"),
        )
    }
    assert [row for row in rows if row["client_id"] in brokers] == []


def test_the_filtered_log_keeps_the_identity_and_info_lines(observed: Observed) -> None:
    """broker-config/log4j.properties' filters, on log4j 1.2.17 (2.8.2) and reload4j (3.x): every ApiVersions and
    Metadata line and every INFO line of the full log, nothing else. Only 3.9.1 and later log a request at INFO (one
    in a version deprecated by their specs): before, the 0.10.2.2 producer's Produce v2 is not in the filtered log."""
    for release in RELEASES:
        directories = observed.brokers.request_log_directories(release)
        full, filtered = logged(directories["full"]), logged(directories["filtered"])
        kept = Counter({key: n for key, n in full.items() if key[2] in (API_VERSIONS, METADATA) or key[0] == "INFO"})
        assert filtered == kept, release
        info = {(who, api, version) for level, who, api, version in full if level == "INFO"}
        expected_info = {(client_id(release, "legacy-0.10.2.2"), 0, 2), (client_id(release, "raw-legacy"), 32, 0)}
        assert info == (expected_info if release == "3.9.2" else set()), release


def test_the_job_reads_every_filtered_line_under_the_same_client(observed: Observed, inventory: Inventory) -> None:
    """Each client's requests per API version are its lines in the full log plus those in the filtered one: the job
    read every line of both, and (test_the_job_names_exactly_the_clients_that_connected: one row per client) the
    filtered log's under the identity the full log gives."""
    usage: Counter[tuple[str, int, int]] = Counter()
    for row in inventory.table("api_usage"):
        usage[(row["client_id"], int(row["api_key"]), int(row["api_version"]))] += int(row["requests"])
    for release in RELEASES:
        lines: Counter[tuple[str, int, int]] = Counter()
        for directory in observed.brokers.request_log_directories(release).values():
            for (_, who, api, version), n in logged(directory).items():
                if who is not None and who.startswith(client_id(release, "")):
                    lines[(who, api, version)] += n
        assert {key: n for key, n in usage.items() if key[0].startswith(client_id(release, ""))} == lines, release


def test_each_request_log_is_of_its_kind_and_every_line_is_read(observed: Observed, inventory: Inventory) -> None:
    summary = inventory.summary
    kinds = {Path(entry["directory"].removeprefix("file:")): entry["kind"] for entry in summary["request_logs"]}
    expected = {inventory.older.parent: "unknown"}
    total = 0
    for release in RELEASES:
        directories = observed.brokers.request_log_directories(release)
        expected[directories["full"]] = "full_debug"
        expected[directories["filtered"]] = "identities_and_info"
        total += sum(sum(logged(directory).values()) for directory in directories.values())
    assert kinds == expected
    # Every line of the real brokers was read; the two lines of the 0.11 and 0.10 brokers were not.
    assert (summary["lines"], summary["malformed_lines"]) == (total + 2, 2)


def test_the_log_of_a_broker_before_1_0_is_named_not_read(inventory: Inventory) -> None:
    """Its lines are counted as malformed under a reason naming the releases, and the run says which file holds them
    (a job that read nothing there must not look like a broker without clients)."""
    [warning] = [line for line in inventory.stderr.splitlines() if "whose form this job does not read" in line]
    assert str(inventory.older) in warning and "2 request line(s) written by Kafka 0.10 or 0.11" in warning
    rows = [row for row in inventory.table("malformed") if row["reason"] == lf.REASON_OLDER_FORM]
    # One row per sample line (two lines may share a sample bucket), each with the reason's total.
    assert {(Path(row["file"].removeprefix("file:")), row["lines"]) for row in rows} == {(inventory.older, "2")}
    assert {row["line"] for row in rows} <= {LINE_0_11, LINE_0_10}


# ---------------------------------------------------------------------------------------------- the double


@pytest.mark.parametrize("release", RELEASES)
def test_client_gauges_have_the_same_object_names(observed: Observed, release: str) -> None:
    real, emulated = observed.beans[release]["real"], observed.beans[release]["double"]
    assert client_gauges(real) == client_gauges(emulated)
    gauges = client_gauges(real)
    assert {key[2] for key in gauges} == OURS
    assert {key[0] for key in gauges} == {
        ("type", "clientSoftwareName", "clientSoftwareVersion", "listener", "networkProcessor")
    }


@pytest.mark.parametrize("release", RELEASES)
def test_the_cipher_gauge_is_the_same(observed: Observed, release: str) -> None:
    real, emulated = (cipher_gauges(observed.beans[release][side]) for side in ("real", "double"))
    assert real == emulated
    [(keys, cipher, protocol, listener)] = real  # TLS 1.3 from kafka-python to both: one suite
    assert keys == ("type", "cipher", "protocol", "listener", "networkProcessor")
    assert listener == "SASL_SSL" and protocol.startswith("TLSv") and re.fullmatch(r"TLS_[A-Z0-9_]+", cipher)


@pytest.mark.parametrize("release", RELEASES)
def test_deprecated_requests_meters_have_the_same_tags(observed: Observed, release: str) -> None:
    real, emulated = (deprecated_meters(observed.beans[release][side]) for side in ("real", "double"))
    assert real == emulated
    # KIP-896's meter arrived in 3.7.0.
    assert real == (expected_deprecated_meter() if release >= "3.7" else {})


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("release", RELEASES)
def test_api_versions_answers_are_the_same_bytes(observed: Observed, release: str, version: int) -> None:
    """A ZooKeeper-mode broker supports no feature and finalizes none, so the whole answer compares: ranges, the
    features' fields, the error of a v4 request to a broker before 3.9 (UNSUPPORTED_VERSION, written at v0)."""
    answers = observed.api_versions[(release, version)]
    assert answers["real"] == answers["double"]
    answer = decode_api_versions(answers["real"], version)
    refused = version == 4 and release != "3.9.2"
    assert answer.error_code == (UNSUPPORTED_VERSION if refused else 0)


def channels(beans: list[Bean]) -> dict[str, tuple[str, ...]]:
    """The channel MBeans other than the socket server's: type -> the ObjectName's keys after it."""
    out = {}
    for object_name, attribute, _ in beans:
        props = parse_object_name(object_name).properties
        if attribute == "connection-count" and props["type"] != "socket-server-metrics":
            out[props["type"]] = tuple(props)[1:]
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_the_double_lacks_only_the_brokers_own_channels(observed: Observed, release: str) -> None:
    """The real broker's own channels (OWN_CHANNELS, the controller's to the broker itself holding one connection)
    are what the double lacks; the socket server's per-processor MBeans are the same on both."""
    real, emulated = observed.beans[release]["real"], observed.beans[release]["double"]
    assert channels(real) == OWN_CHANNELS[release]
    assert channels(emulated) == {}
    controller = [
        (parse_object_name(name).properties, value)
        for name, attribute, value in real
        if attribute == "connection-count" and "controller-channel-metrics" in name
    ]
    assert controller == [({"type": "controller-channel-metrics", "broker-id": str(node_id(release))}, 1.0)]

    def processors(beans: list[Bean]) -> set[tuple[str, str]]:
        return {
            (props["listener"], props["networkProcessor"])
            for name, attribute, _ in beans
            if attribute == "connection-count"
            and (props := parse_object_name(name).properties)["type"] == "socket-server-metrics"
        }

    assert processors(real) == processors(emulated)
