"""A real rolling upgrade, end to end (issue 32): what a user of the exporter sees while Apache Kafka's own brokers are
rolled from 3.9.2 to 4.4.0, asserted as it happens.

One module-scoped KRaft cluster of its own (three combined controller+broker nodes, so the quorum keeps its majority
while one is down), shared with no other module: real clients connected (kcat with chosen identities, Kafka's Java
client 4.3.0, and the legacy Java producers 2.8.2, 0.10.2.2 and 0.10.1.1), the exporter with a two-second cycle, a
real Prometheus evaluating the shipped rules every second, and the inventory job over the brokers' own request logs
and server.log. The controller moves leadership back to a restarted node after a few seconds (Kafka's automatic
leader rebalance, its check interval shortened), so clients come back to it as they would after five minutes.

The module's tests run in order, each a chapter of one story: the cluster before the roll (every connection the
kernel shows is served, the 0.10 producers are upgrade blockers named on the status page), one node SIGKILLed in the
middle of a collection cycle and started again, the roll itself (``real_kafka.rolling_upgrade``: controlled shutdown,
4.4.0 over the same storage, in sync, next node; then ``kafka-features upgrade --release-version 4.4``), what is
left after it, the status page and /api/clients polled throughout, and the inventory's runs across the kill.

What the exporter serves is judged against the kernel: ``real_kafka.connections`` counts every established TCP
connection to the brokers' listeners by the process holding its client end, and each process is a client whose
KIP-511 identity is known (a broker JVM is ``apache-kafka-java`` at its release towards a controller, ``unknown`` as
a replica fetcher, which sends no ApiVersions; the exporter is itself). The journal
printed at the end (and written next to the cluster) says what the exporter showed at each step and how long each
node's restart took.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from prometheus_client.parser import text_string_to_metric_families

from exporter import __version__ as EXPORTER_VERSION
from exporter.kafka_releases.broker_channels import is_broker_channel_client_id
from exporter.request_logs.layout import CLIENT_KEY
from harness.clients import ClientKind, RealClient, start_client
from harness.exporter_process import REPO_ROOT, running_exporter, write_config
from harness.ports import free_port
from harness.prometheus_process import running_prometheus
from real_kafka import JmxAuth, KafkaCluster, KafkaNode, NodeOptions
from real_kafka.connections import Listener, count_connections
from real_kafka.rolling_upgrade import Finalized, NodeBack, NodeStopped, RollingUpgrade, wait_in_sync
from tests.support.inventory_command import inventory_command, loopback_env
from tests.support.own_connections import CLIENT_REFUSED, REFUSED_PRODUCE
from tests.support.status_page import tables_of
from tests.support.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.real_kafka]

FROM, TO = "3.9.2", "4.4.0"
#: What the exporter's release table infers for each (a patch release reads as its x.y.0: identical specs).
INFERRED = {FROM: "3.9.0", TO: "4.4.0"}
#: metadata.version as a KIP-584 level: 3.9-IV0, what 3.9.2 formats a cluster with, and 4.4-IV2 (4.4.0's newest).
METADATA_VERSION = {FROM: 21, TO: 33}
CLUSTER = "rolling"
INTERVAL = 2.0
TOPIC = "demo"  # kcat's and the Java clients' topic
RULES = REPO_ROOT / "alerts" / "kafka-client-exporter.rules.yaml"
TARGET_RELEASE = "4.0.0"
JMX = JmxAuth("monitor", "roll-Secret-32")
#: The controller's automatic leader rebalance, every 3 s instead of 300: leadership, and the producers following
#: it, come back to a restarted node within seconds.
BROKER_PROPERTIES = {"leader.imbalance.check.interval.seconds": "3"}
#: Small enough that log4j rolls each request log a few times during the story (the inventory's runs then see
#: rotations), with backups enough that it never deletes one: a full run must read every file the incremental runs
#: read.
REQUEST_LOG_MAX_BYTES = 384 * 1024
REQUEST_LOG_BACKUPS = 100
KILLED = 2
LEGACY = {ClientKind.JAVA_0_10_2: "legacy-0.10.2", ClientKind.JAVA_0_10_1: "legacy-0.10.1"}
#: (kind, kcat's software name and version or None, clientId)
CLIENTS: list[tuple[ClientKind, tuple[str, str] | None, str]] = [
    (ClientKind.KCAT, ("orders-app", "2.3.0"), "orders"),
    (ClientKind.KCAT, ("billing", "1.4.2"), "billing"),
    (ClientKind.JAVA, None, "java-app"),
    (ClientKind.JAVA_2_8, None, "reporting-2.8"),
    (ClientKind.JAVA_0_10_2, None, LEGACY[ClientKind.JAVA_0_10_2]),
    (ClientKind.JAVA_0_10_1, None, LEGACY[ClientKind.JAVA_0_10_1]),
]
#: Families that describe a broker's clients or the broker itself: none may be served for a broker that is down.
BROKER_FAMILIES = (
    "kafka_client_connections",
    "kafka_client_policy_violation_connections",
    "kafka_client_deprecated_requests_total",
    "kafka_client_upgrade_blocking_requests_total",
    "kafka_client_exporter_client_suite_full",
    "kafka_broker_release_info",
    "kafka_broker_api_version_min",
    "kafka_broker_api_version_max",
    "kafka_broker_finalized_feature_level",
    "kafka_broker_supported_feature_max_level",
)
_REQUEST_LINE = re.compile(r"^\[([^\]]+)\] \w+ Completed request:(\{.*\}) \(kafka\.request\.logger\)$")

#: What truth() calls a broker JVM's own end of a connection, before it knows the listener.
BROKER = "broker"
UNKNOWN_PAIR = ("unknown", "unknown")
#: (broker, listener, client software name, version), as kafka_client_connections labels them.
Conn = tuple[str, str, str, str]


# ---------------------------------------------------------------------------------------------- what is served


@dataclass(frozen=True)
class Scrape:
    """One /metrics page: the snapshot it renders (when its cycle started and ended) and every sample."""

    fetched_at: float
    taken_at: float
    cycle_started: float
    samples: list[tuple[str, dict[str, str], float]]

    def values(self, name: str, **match: str) -> list[tuple[dict[str, str], float]]:
        return [
            (labels, value)
            for sample, labels, value in self.samples
            if sample == name and all(labels.get(key) == want for key, want in match.items())
        ]

    def unknown_violations(self) -> Counter[str]:
        """Per broker, the connections served as unknown_software violations."""
        found: Counter[str] = Counter()
        for labels, value in self.values(
            "kafka_client_policy_violation_connections", kafka_cluster=CLUSTER, reason="unknown_software"
        ):
            found[labels["broker"]] += int(value)
        return found

    def connections(self) -> Counter[Conn]:
        counts: Counter[Conn] = Counter()
        for labels, value in self.values("kafka_client_connections", kafka_cluster=CLUSTER):
            key = (
                labels["broker"],
                labels["listener"],
                labels["client_software_name"],
                labels["client_software_version"],
            )
            counts[key] += int(value)
        return counts

    def up(self, broker: int, source: str) -> float | None:
        found = self.values("kafka_client_exporter_up", kafka_cluster=CLUSTER, broker=str(broker), source=source)
        return found[0][1] if found else None

    def errors(self, broker: int) -> dict[tuple[str, str], float]:
        found = self.values("kafka_client_exporter_errors_total", kafka_cluster=CLUSTER, broker=str(broker))
        return {(labels["source"], labels["reason"]): value for labels, value in found}

    def releases(self) -> dict[int, str]:
        found = self.values("kafka_broker_release_info", kafka_cluster=CLUSTER)
        return {int(labels["broker"]): labels["inferred_release"] for labels, _ in found}

    def feature(self, feature: str, family: str = "kafka_broker_finalized_feature_level") -> dict[int, int]:
        found = self.values(family, kafka_cluster=CLUSTER, feature=feature)
        return {int(labels["broker"]): int(value) for labels, value in found}

    def finalized(self, broker: int) -> dict[str, int]:
        found = self.values("kafka_broker_finalized_feature_level", kafka_cluster=CLUSTER, broker=str(broker))
        return {labels["feature"]: int(value) for labels, value in found}

    def about(self, broker: int) -> list[str]:
        """Samples of the broker families served for ``broker``: stale if it is down."""
        return [
            f"{sample}{labels}"
            for sample, labels, _ in self.samples
            if sample in BROKER_FAMILIES and labels.get("broker") == str(broker)
        ]


def fetch(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode())


def scrape(base: str) -> Scrape:
    fetched_at = time.time()
    samples = [
        (sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(fetch(f"{base}/metrics"))
        for sample in family.samples
    ]
    single = {name: value for name, labels, value in samples if not labels}
    taken_at = single["kafka_client_exporter_snapshot_timestamp_seconds"]
    return Scrape(fetched_at, taken_at, taken_at - single["kafka_client_exporter_cycle_duration_seconds"], samples)


# ---------------------------------------------------------------------------------------------- the story


@dataclass
class Poller:
    """GETs the status page and /api/clients in turn on a thread of its own, each with one cycle's deadline."""

    base: str
    results: list[tuple[float, str, str, float]] = field(default_factory=list)  # at, path, outcome, seconds
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="status-poller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        paths = ("/", "/api/clients")
        turn = 0
        while not self._stop.is_set():
            path = paths[turn % 2]
            turn += 1
            began = time.monotonic()
            try:
                with urllib.request.urlopen(f"{self.base}{path}", timeout=INTERVAL) as response:
                    body = response.read()
                    outcome = str(response.status)
                    if path == "/api/clients":
                        json.loads(body)
            except urllib.error.HTTPError as exc:
                outcome = str(exc.code)
            except (OSError, ValueError) as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            self.results.append((time.time(), path, outcome, time.monotonic() - began))
            self._stop.wait(0.4)


@dataclass
class Sampler:
    """Reads /metrics on a thread of its own and keeps every snapshot it saw once: what was served all along, also
    while the test was busy elsewhere."""

    base: str
    scrapes: list[Scrape] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="metrics-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, ValueError, KeyError):
                served = scrape(self.base)
                if not self.scrapes or served.taken_at != self.scrapes[-1].taken_at:
                    self.scrapes.append(served)
            self._stop.wait(INTERVAL / 4)

    def cycles(self, started_after: float, ended_before: float = float("inf")) -> list[Scrape]:
        """The snapshots whose cycle started after ``started_after`` and ended before ``ended_before``."""
        return [s for s in list(self.scrapes) if s.cycle_started > started_after and s.taken_at < ended_before]

    def spanning(self, moment: float) -> Scrape | None:
        """The snapshot whose cycle ran at ``moment``, if one did."""
        return next((s for s in list(self.scrapes) if s.cycle_started <= moment <= s.taken_at), None)


@dataclass
class Journal:
    """What the exporter showed at each step, with the time since the cluster's start: printed at the end."""

    path: Path
    began: float = field(default_factory=time.monotonic)
    lines: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        line = f"[{time.monotonic() - self.began:6.1f} s] {text}"
        self.lines.append(line)
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")


@dataclass
class Story:
    directory: Path
    cluster: KafkaCluster
    exporter: subprocess.Popen[bytes]
    base: str
    prometheus: str
    clients: dict[str, RealClient]
    poller: Poller
    sampler: Sampler
    journal: Journal
    inventory_output: Path
    #: The inventory run before the kill (--incremental), started with the clients.
    first_run: subprocess.Popen[bytes]
    first_run_log: Path
    #: Identities whose connections churn (the 0.10 producers once a 4.4.0 broker refuses them): not compared.
    churning: set[tuple[str, str]] = field(default_factory=set)
    #: When each node's JVM was gone in the roll.
    down_since: dict[int, float] = field(default_factory=dict)
    roll_done_at: float = 0.0

    @property
    def nodes(self) -> list[KafkaNode]:
        return list(self.cluster.nodes.values())

    def scrape(self) -> Scrape:
        return scrape(self.base)

    def truth(self) -> tuple[Counter[Conn], int]:
        """What the kernel shows, labelled as the brokers should record it; and the connections of no known
        process (a readiness probe, an Admin client of the roll, a process that just exited).

        A broker's connections to a controller are Kafka's Java client at the broker's release; those to another
        broker's PLAINTEXT listener are its replica fetchers, which send no ApiVersions (Kafka builds their
        NetworkClient with discoverBrokerVersions false), so the leader records them as unknown."""
        listeners: dict[int, Listener] = {}
        owners: dict[int, str] = {}
        for node in self.nodes:
            for port, name in ((node.ports.plaintext, "PLAINTEXT"), (node.ports.controller, "CONTROLLER")):
                assert port is not None
                listeners[port] = Listener(node.node_id, name)
            if node.running and node.pid is not None:
                owners[node.pid] = f"{BROKER}\0{node.release}"
        for client in self.clients.values():
            if client.returncode is None:
                owners[client.pid] = f"{client.expected.software_name}\0{client.expected.software_version}"
        owners[self.exporter.pid] = f"kafka-client-exporter\0{EXPORTER_VERSION}"
        found = count_connections(listeners, owners)
        counts: Counter[Conn] = Counter()
        for (owner, listener), n in found.counts.items():
            name, version = owner.split("\0")
            if name == BROKER:
                name, version = ("apache-kafka-java", version) if listener.name == "CONTROLLER" else UNKNOWN_PAIR
            counts[(str(listener.broker), listener.name, name, version)] += n
        return counts, sum(found.unowned.values())

    def unnamed_clients(self) -> Counter[str]:
        """Per broker, the PLAINTEXT connections the kernel shows held by client processes that send no KIP-511 name
        (the 0.10 producers): the only ones that may count as unknown_software, never the brokers' own."""
        listeners = {node.ports.plaintext: Listener(node.node_id, "PLAINTEXT") for node in self.nodes}
        owners = {
            client.pid: "unnamed"
            for client in self.clients.values()
            if client.returncode is None
            and (client.expected.software_name, client.expected.software_version) == UNKNOWN_PAIR
        }
        found = count_connections({port: listener for port, listener in listeners.items() if port}, owners)
        return Counter({str(listener.broker): n for (_, listener), n in found.counts.items()})

    def settled(self, what: str, timeout: float = 30.0) -> tuple[Scrape, Counter[Conn]]:
        """Wait until the exporter serves exactly the connections the kernel shows (leaving out churning identities),
        the kernel's count being the same before and after the scrape; the scrape and that count."""
        mismatch = ["not compared yet"]
        deadline = time.monotonic() + timeout
        while True:
            before, unowned = self.truth()
            served = self.scrape()
            after, _ = self.truth()
            if unowned or before != after:
                mismatch[:] = [f"{unowned} connections of no known process, or the kernel's count changing"]
            else:
                want, got = self._kept(before), self._kept(served.connections())
                if want == got:
                    return served, want
                mismatch[:] = [
                    f"only the kernel: {sorted((want - got).items())}; only served: {sorted((got - want).items())}"
                ]
            if time.monotonic() > deadline:
                pytest.fail(
                    f"{what}: the exporter does not serve what the kernel shows within {timeout:.0f} s: {mismatch[0]}"
                )
            time.sleep(0.25)

    def cycle_after(self, moment: float) -> Scrape | None:
        """The served snapshot if its cycle started after ``moment``."""
        served = self.scrape()
        return served if served.cycle_started > moment else None

    def _kept(self, counts: Counter[Conn]) -> Counter[Conn]:
        return Counter({key: n for key, n in counts.items() if (key[2], key[3]) not in self.churning and n > 0})

    def alerts(self, name: str) -> list[dict[str, Any]]:
        query = fetch(f"{self.prometheus}/api/v1/alerts")
        return [a for a in json.loads(query)["data"]["alerts"] if a["labels"]["alertname"] == name]


def by_version(counts: Counter[Conn]) -> dict[tuple[str, str], Counter[str]]:
    """Connections of each software version by broker."""
    found: dict[tuple[str, str], Counter[str]] = {}
    for (broker, _, name, version), n in counts.items():
        found.setdefault((name, version), Counter())[broker] += n
    return found


def show(counts: Counter[Conn]) -> str:
    return "; ".join(
        f"{name} {version}: " + " ".join(f"b{b}={n}" for b, n in sorted(brokers.items()))
        for (name, version), brokers in sorted(by_version(counts).items())
    )


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    directory = tmp_path_factory.mktemp("rolling-upgrade")
    journal = Journal(directory / "journal.txt")
    options = NodeOptions(
        jmx_auth=JMX,
        extra_properties=BROKER_PROPERTIES,
        request_log_max_bytes=REQUEST_LOG_MAX_BYTES,
        request_log_backups=REQUEST_LOG_BACKUPS,
        # The log broker-config/ ships, written from the same requests: the last chapter compares what it tells.
        request_log_copy=True,
    )
    cluster = KafkaCluster(directory / "kafka", FROM, nodes=3, options=options)
    with contextlib.ExitStack() as running:
        running.callback(lambda: print("\n" + "\n".join(journal.lines)))
        timings = cluster.start()
        running.callback(cluster.stop)
        journal.note(f"three combined {FROM} nodes ready: " + ", ".join(f"{t.wall_seconds:.1f} s" for t in timings))
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(), client_id="rolling-upgrade-setup")
        try:
            admin.create_topics([NewTopic(TOPIC, 3, 3)])
        finally:
            admin.close()
        # Every broker's own Metadata, not one's: a broker that has not learnt the new topic's leaders yet answered
        # the 0.10.2.2 producer's first record with UnknownTopicOrPartition, which 0.10 does not retry (seen once).
        for node in cluster.nodes.values():
            wait_in_sync(node.bootstrap(), 60)
        inventory_output = directory / "inventory"
        config = write_config(
            directory / "exporter.yaml",
            CLUSTER,
            {node.node_id: node.jmx_url for node in cluster.nodes.values()},
            cluster.bootstrap(),
            inventory=inventory_output,
            jmx={"username": JMX.username, "password": JMX.password},
            interval_seconds=INTERVAL,
        )
        port = free_port()
        exporter_log = running.enter_context((directory / "exporter.log").open("wb"))
        exporter = running.enter_context(running_exporter(config, port, stdout=exporter_log, stderr=subprocess.STDOUT))
        base = f"http://127.0.0.1:{port}"
        clients: dict[str, RealClient] = {}
        for kind, identity, client_id in CLIENTS:
            name, version = identity or (None, None)
            client = start_client(
                kind,
                cluster.bootstrap(),
                software_name=name,
                software_version=version,
                client_id=client_id,
                bootstrap_timeout=60,
            )
            running.callback(client.close)
            clients[client_id] = client
        prometheus = running.enter_context(running_prometheus(directory / "prometheus", port, RULES, interval="1s"))
        for client in clients.values():
            client.wait_ready(90)
        eventually(lambda: fetch(f"{base}/readyz") is not None, 60, "the exporter's first cycle")
        journal.note(f"{len(clients)} clients ready; exporter at {base}, Prometheus at {prometheus}")
        # The first inventory run reads what the clients' first requests left in the request logs; its publication
        # is read by the exporter at its next cycle.
        first_run_log = directory / "inventory-first.log"
        first_run = running.enter_context(_inventory(story_dirs(cluster), inventory_output, first_run_log))
        poller, sampler = Poller(base), Sampler(base)
        for thread in (poller, sampler):
            thread.start()
            running.callback(thread.stop)
        yield Story(
            directory,
            cluster,
            exporter,
            base,
            prometheus,
            clients,
            poller,
            sampler,
            journal,
            inventory_output,
            first_run,
            first_run_log,
        )


def story_dirs(cluster: KafkaCluster) -> list[str]:
    return [str(node.logs.directory) for node in cluster.nodes.values()]


@contextlib.contextmanager
def _inventory(
    inputs: list[str], output: Path, log: Path, *, incremental: bool = True
) -> Iterator[subprocess.Popen[bytes]]:
    """``kafka-client-exporter inventory`` over ``inputs`` in the background, in its own session (the Spark JVM goes
    with it when it is stopped early)."""
    command = inventory_command(
        *(["--incremental"] if incremental else []), "--input", *inputs, "--output", str(output)
    )
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=loopback_env(), start_new_session=True
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 9)
            process.wait()


def finished(process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the inventory run did not finish in {timeout:.0f} s: {log.read_text()[-2000:]}")
    assert process.returncode == 0, log.read_text(errors="replace")[-3000:]


# ---------------------------------------------------------------------------------------------- before the roll


def test_before_the_roll_every_connection_the_kernel_shows_is_served(story: Story) -> None:
    served, truth = story.settled("before the roll")
    story.journal.note(f"before the roll, served = kernel: {show(truth)}")
    brokers = {node.node_id for node in story.nodes}
    assert {int(b) for b, _, _, _ in truth} == brokers, "every broker has connections"
    for client in story.clients.values():
        identity = (client.expected.software_name, client.expected.software_version)
        assert identity in by_version(truth), f"{client.kind.value} connected"
    assert served.releases() == dict.fromkeys(brokers, INFERRED[FROM])

    # Every broker leads a replicated partition, so every broker counts replica fetchers as unknown: the violations
    # and KafkaClientUnknownSoftware are exactly the 0.10 producers' connections, on their brokers, never the brokers'.
    def unnamed_as_violations() -> Counter[str] | None:
        kernel = story.unnamed_clients()
        return kernel if kernel and kernel == story.scrape().unknown_violations() else None

    unnamed = eventually(
        # A new `unknown` connection is judged once it was there for ten seconds (exporter/judging/not_named_yet.py).
        unnamed_as_violations,
        60,
        "unknown_software violations equal to the 0.10 producers' connections in the kernel",
    )
    assert served.values("kafka_client_inter_broker_connections", channel="replica-fetcher"), "fetchers told apart"

    def alerted() -> set[str]:
        return {a["labels"]["broker"] for a in story.alerts("KafkaClientUnknownSoftware")}

    eventually(lambda: alerted() == set(unnamed), 15, "KafkaClientUnknownSoftware pending for the 0.10 producers only")
    story.journal.note(f"before the roll, unknown_software violations = the 0.10 producers' connections: {unnamed}")
    # 3.9-IV0 finalizes metadata.version only: every other feature is at level 0, which ApiVersions leaves out.
    finalized = {broker: served.finalized(broker) for broker in brokers}
    assert finalized == {broker: {"metadata.version": METADATA_VERSION[FROM]} for broker in brokers}
    assert all(served.up(broker, source) == 1 for broker in brokers for source in ("jmx", "api_versions"))
    assert not story.alerts("KafkaBrokerReleaseSkew")


def produce_v2_lines(node: KafkaNode) -> list[tuple[float, str]]:
    """(log time as a Unix time, clientId) of every Produce v2 in the node's request log files."""
    found = []
    for path in sorted(node.logs.directory.glob("kafka-request.log*")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _REQUEST_LINE.match(line)
            if match is None or '"requestApiKey":0,"requestApiVersion":2,' not in match[2]:
                continue
            header = json.loads(match[2])["requestHeader"]
            when = time.mktime(time.strptime(match[1][:19], "%Y-%m-%d %H:%M:%S")) + int(match[1][20:23]) / 1000
            found.append((when, header["clientId"]))
    return found


def test_before_the_roll_both_0_10_producers_block_the_upgrade_and_the_status_page_names_them(story: Story) -> None:
    produce = {
        "request": "Produce",
        "version": "2",
        "client_software_name": "unknown",
        "client_software_version": "unknown",
    }

    def older_counted(served: Scrape, broker: int, count: float) -> bool:
        """Whether ``count`` proves 0.10.1.1's Produce v2 counted: more than 0.10.2.2 had sent by the scrape's end.
        Inconclusive (False) while 0.10.1.1 has sent no more in that time than 0.10.2.2 sent during the cycle."""
        lines = produce_v2_lines(story.cluster.node(broker))
        newer_alone = sum(
            1 for when, cid in lines if when <= served.taken_at + 0.01 and cid == LEGACY[ClientKind.JAVA_0_10_2]
        )
        older_before = any(cid == LEGACY[ClientKind.JAVA_0_10_1] for when, cid in lines if when <= served.cycle_started)
        return not older_before or count > newer_alone

    def counted() -> tuple[Scrape, dict[int, float]] | None:
        served = story.scrape()
        found = served.values("kafka_client_upgrade_blocking_requests_total", target_release=TARGET_RELEASE, **produce)
        counts = {int(labels["broker"]): value for labels, value in found}
        if sum(counts.values()) < 6 or not all(older_counted(served, b, c) for b, c in counts.items()):
            return None
        return served, counts

    # The meter counts both 0.10 producers, though 0.10.1.1 never sends ApiVersions: above what 0.10.2.2 sent alone
    # (a later cycle when one cycle's counts cannot tell), and between the request log's count of their Produce v2
    # when the cycle began and when it ended.
    served, counts = eventually(counted, 60, "Produce v2 of both 0.10 producers counted as blocking")
    for broker, count in counts.items():
        lines = produce_v2_lines(story.cluster.node(broker))
        both_at_start = sum(1 for when, _ in lines if when <= served.cycle_started - 0.01)
        # A request is counted and logged within a millisecond or so: the log's time may trail the meter a little.
        both_at_end = sum(1 for when, _ in lines if when <= served.taken_at + 0.25)
        assert both_at_start <= count <= both_at_end, (broker, count, both_at_start, both_at_end)
        assert {cid for _, cid in lines} <= set(LEGACY.values())
    story.journal.note(f"before the roll, Produce v2 counted as blocking by broker: {counts}")

    def pending() -> list[dict[str, Any]]:
        return [
            a
            for a in story.alerts("KafkaClientDeprecatedRequests")
            if a["labels"].get("request") == "Produce" and a["labels"].get("client_software_name") == "unknown"
        ]

    [alert] = eventually(pending, 30, "KafkaClientDeprecatedRequests for Produce v2")
    assert alert["state"] == "pending" and alert["labels"]["target_release"] == TARGET_RELEASE
    story.journal.note("before the roll: KafkaClientDeprecatedRequests pending (unknown unknown, Produce v2)")

    finished(story.first_run, story.first_run_log, 200)
    story.journal.note("the first inventory run (before the kill) is published")

    def named() -> dict[str, str] | None:
        rows = tables_of(fetch(f"{story.base}/")).get(f"blockers-{CLUSTER}", [])
        row = next((r for r in rows if r["request"] == "Produce v2" and r["software"] == "unknown"), None)
        if row is None or not all(f"{cid} on 127.0.0.1" in row["run-by"] for cid in LEGACY.values()):
            return None
        return row

    row = eventually(named, 30, "the status page naming both 0.10 producers behind Produce v2")
    assert row["target"] == TARGET_RELEASE and set(row["brokers"].split(", ")) == {str(b) for b in counts}
    # Only them: the replica fetchers are `unknown` too (they send no ApiVersions) and far more active, but the
    # inventory saw only the producers send Produce v2.
    assert sorted(row["run-by"].split(", ")) == sorted(f"{cid} on 127.0.0.1" for cid in LEGACY.values()), row
    story.journal.note(f"status page, upgrade blockers: unknown unknown Produce v2, run by: {row['run-by']}")


# ---------------------------------------------------------------------------------------------- the hard kill


#: What comes back to a node after its return: the exporter's own connection at its next cycle, and the producers,
#: which follow the leadership the controller gives back to the node (the idle clients stay where they reconnected).
RETURNING = {
    ("PLAINTEXT", "kafka-client-exporter", EXPORTER_VERSION),
    ("PLAINTEXT", "apache-kafka-java", "2.8.2"),
    ("PLAINTEXT", "unknown", "unknown"),
}


def on_broker(counts: Counter[Conn], broker: int) -> set[tuple[str, str, str]]:
    return {(listener, name, version) for (b, listener, name, version), n in counts.items() if b == str(broker) and n}


def nothing_served_while_down(story: Story, node: int, since: float, until: float) -> int:
    """Every cycle that ran wholly between ``since`` (the JVM gone) and ``until`` (its next launch) says the broker is
    down and serves nothing of it; how many there were."""
    cycles = story.sampler.cycles(since, until)
    for cycle in cycles:
        assert cycle.up(node, "jmx") == 0 and cycle.up(node, "api_versions") == 0, cycle.taken_at
        assert not cycle.about(node), f"stale series for broker {node}: {cycle.about(node)[:5]}"
    return len(cycles)


def kill_mid_cycle(node: KafkaNode, timeout: float = 3 * INTERVAL) -> float:
    """SIGKILL ``node`` as soon as its request log shows the exporter's next ApiVersions; when the signal was sent."""
    log = node.logs.request_log

    def size_now() -> int:
        # log4j renames the full file before it creates the next one: for a moment there is none.
        try:
            return log.stat().st_size
        except FileNotFoundError:
            return 0

    offset = size_now()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        size = size_now()
        if size < offset:  # log4j rolled the file: the new one starts empty
            offset = 0
        if size > offset:
            try:
                with log.open("rb") as file:
                    file.seek(offset)
                    fresh = file.read(size - offset)
            except FileNotFoundError:  # rolled between the two calls
                offset = 0
                continue
            offset = size
            if b'"clientId":"kafka-client-exporter' in fresh and b'"requestApiKeyName":"API_VERSIONS"' in fresh:
                break
        time.sleep(0.005)
    sent = time.time()
    node.kill()
    return sent


def test_a_node_killed_mid_cycle_is_down_within_a_cycle_and_its_clients_are_back_within_two(story: Story) -> None:
    node = story.cluster.node(KILLED)
    _, before = story.settled("before the kill")
    returning = on_broker(before, KILLED) & RETURNING
    # In the middle of a cycle: at the exporter's ApiVersions to this broker, which each cycle sends while it reads
    # the brokers' gauges; the sampler's snapshots then say whether the kill fell inside one.
    kill_sent = kill_mid_cycle(node)
    killed_at = time.time()
    others = [n.node_id for n in story.nodes if n.node_id != KILLED]

    down = eventually(lambda: story.cycle_after(killed_at), 3 * INTERVAL + 5, "a cycle started after the kill")
    assert down.up(KILLED, "jmx") == 0 and down.up(KILLED, "api_versions") == 0, "down within one cycle"
    assert not down.about(KILLED), f"stale series for the killed broker: {down.about(KILLED)[:5]}"
    assert all(down.up(b, s) == 1 for b in others for s in ("jmx", "api_versions"))
    reasons = sorted(down.errors(KILLED))
    _, while_down = story.settled("while the killed node is down")
    assert not any(b == str(KILLED) for b, _, _, _ in while_down)
    spanning = story.sampler.spanning(kill_sent)
    story.journal.note(
        f"node {KILLED} SIGKILLed "
        + (
            f"mid-cycle ({kill_sent - spanning.cycle_started:.2f} s into a "
            f"{spanning.taken_at - spanning.cycle_started:.2f} s cycle)"
            if spanning
            else "between two cycles"
        )
        + f"; the first cycle after it (started {down.cycle_started - killed_at:.2f} s later) reports up 0, errors "
        f"{reasons}, nothing served for it; served = kernel on the others: {show(while_down)}"
    )

    launched_at = time.time()
    node.launch()
    timing = node.wait_ready(120)
    returned_at = time.time()
    assert nothing_served_while_down(story, KILLED, killed_at, launched_at) >= 1
    story.journal.note(f"node {KILLED} started again on {node.release}: ready {timing.wall_seconds:.1f} s after launch")
    # Every identity the kernel shows on it from now on is served by the second cycle that starts after the kernel
    # first showed it; until the exporter's own connection and the producers are back.
    first_seen: dict[tuple[str, str, str], float] = {}
    judged: set[tuple[str, str, str]] = set()
    deadline = time.monotonic() + 60
    while True:
        seen_at = time.time()
        now = on_broker(story.truth()[0], KILLED)
        for identity in now:
            first_seen.setdefault(identity, seen_at)
        for identity, seen in first_seen.items():
            later = story.sampler.cycles(seen)[:2]
            if len(later) < 2 or identity in judged:
                continue
            judged.add(identity)
            if identity in on_broker(story.truth()[0], KILLED):
                served = [identity in on_broker(cycle.connections(), KILLED) for cycle in later]
                assert any(served), (
                    f"{identity} on node {KILLED} from {seen - returned_at:.1f} s after its return, not served by "
                    "the second cycle after"
                )
        if returning <= judged:
            break
        if time.monotonic() > deadline:
            pytest.fail(
                f"not back on node {KILLED} within 60 s: {sorted(returning - set(first_seen))}; judged {sorted(judged)}"
            )
        time.sleep(0.2)
    story.journal.note(
        f"node {KILLED}'s returning clients ({', '.join(f'{n} {v}' for _, n, v in sorted(returning))}) back "
        f"{max(first_seen[i] for i in returning) - returned_at:.1f} s after its return, each served within two "
        f"cycles; all there before the kill: {sorted(on_broker(before, KILLED))}; there now: {sorted(first_seen)}"
    )
    wait_in_sync(story.cluster.bootstrap(), 120)
    _, after = story.settled("after the killed node's return")
    story.journal.note(f"after node {KILLED}'s return, served = kernel: {show(after)}")


# ---------------------------------------------------------------------------------------------- the roll


def test_the_rolling_upgrade_node_by_node(story: Story) -> None:
    releases = {node.node_id: FROM for node in story.nodes}
    roll = RollingUpgrade(story.nodes, story.cluster.bootstrap(), TO, say=story.journal.note)
    for event in roll.steps():
        if isinstance(event, NodeStopped):
            del releases[event.node_id]
            while_down(story, event, releases)
        elif isinstance(event, NodeBack):
            releases[event.node_id] = TO
            # A 4.4.0 broker refuses the 0.10 producers from now on: they connect, are refused and connect again.
            story.churning.add(UNKNOWN_PAIR)
            back_on_the_new_release(story, event, releases)
        else:
            finalized(story, event)
    story.roll_done_at = time.time()
    assert not story.alerts("KafkaBrokerReleaseSkew")


def skew_expected(releases: dict[int, str]) -> bool:
    """The brokers answering run more than one release (a down broker answers nothing, so it counts for none)."""
    return len(set(releases.values())) > 1


def alert_is(story: Story, name: str, active: bool, **labels: str) -> None:
    def matches() -> bool:
        found = [a for a in story.alerts(name) if all(a["labels"].get(k) == v for k, v in labels.items())]
        return bool(found) == active

    eventually(matches, 15, f"{name} {labels} {'pending' if active else 'inactive'}")


def while_down(story: Story, event: NodeStopped, releases: dict[int, str]) -> None:
    stopped_at = time.time()
    node = event.node_id
    down = eventually(lambda: story.cycle_after(stopped_at), 3 * INTERVAL + 5, "a cycle after the shutdown")
    assert down.up(node, "jmx") == 0 and down.up(node, "api_versions") == 0
    assert not down.about(node), down.about(node)[:5]
    for other, release in releases.items():
        assert down.up(other, "jmx") == 1 and down.up(other, "api_versions") == 1
        assert down.releases()[other] == INFERRED[release]
    rows = tables_of(fetch(f"{story.base}/"))[f"brokers-{CLUSTER}"]
    row = next(r for r in rows if r["broker"] == str(node))
    assert row["jmx"].startswith("down: ") and row["api_versions"].startswith("down: "), row
    assert row["release"] == "unknown", row
    _, truth = story.settled(f"node {node} down")
    assert not any(b == str(node) for b, _, _, _ in truth)
    for source in ("jmx", "api_versions"):
        alert_is(story, "KafkaClientExporterBrokerDown", True, broker=str(node), source=source)
    skew = skew_expected(releases)
    alert_is(story, "KafkaBrokerReleaseSkew", skew)
    story.down_since[node] = stopped_at
    story.journal.note(
        f"node {node} down after a {event.shutdown_seconds:.1f} s controlled shutdown: up 0, status page "
        f"'{row['jmx'][:60]}', nothing served for it; served = kernel: {show(truth)}; KafkaClientExporterBrokerDown "
        f"pending; KafkaBrokerReleaseSkew {'pending' if skew else 'inactive'}"
    )


def back_on_the_new_release(story: Story, event: NodeBack, releases: dict[int, str]) -> None:
    node = event.node_id
    # The roll launched the node once while_down had returned: every cycle in between ran with it down.
    held = nothing_served_while_down(story, node, story.down_since[node], story.down_since[node] + event.held_seconds)

    def inferred() -> Scrape | None:
        served = story.scrape()
        return served if served.releases().get(node) == INFERRED[TO] else None

    back = eventually(inferred, 3 * INTERVAL + 5, f"node {node} inferred as {INFERRED[TO]}")
    assert back.releases() == {broker: INFERRED[release] for broker, release in releases.items()}
    assert back.feature("metadata.version") == dict.fromkeys(releases, METADATA_VERSION[FROM])
    supported = back.feature("metadata.version", "kafka_broker_supported_feature_max_level")
    assert supported[node] == METADATA_VERSION[TO]
    _, truth = story.settled(f"node {node} back on {TO}")
    skew = skew_expected(releases)
    alert_is(story, "KafkaBrokerReleaseSkew", skew)
    story.journal.note(
        f"node {node} back on {TO}: shutdown {event.shutdown_seconds:.1f} s + start {event.start_seconds:.1f} s + "
        f"catch-up {event.catch_up_seconds:.1f} s = {event.restart_seconds:.1f} s (kept down {event.held_seconds:.1f} "
        f"s more by the checks, {held} cycles with it down, none serving it); releases {back.releases()}; "
        f"served = kernel: {show(truth)}; "
        f"KafkaBrokerReleaseSkew {'pending' if skew else 'inactive'}"
    )


def finalized(story: Story, event: Finalized) -> None:
    brokers = [node.node_id for node in story.nodes]
    assert event.upgraded["metadata.version"] == METADATA_VERSION[TO], event.output
    raised_to = {feature: level for feature, level in event.upgraded.items() if level > 0}

    def raised() -> Scrape | None:
        served = story.scrape()
        return served if served.feature("metadata.version") == dict.fromkeys(brokers, METADATA_VERSION[TO]) else None

    served = eventually(raised, 3 * INTERVAL + 10, "metadata.version raised on every broker")
    for broker in brokers:
        levels = served.finalized(broker)
        assert {feature: levels.get(feature) for feature in raised_to} == raised_to, (broker, levels)
    story.journal.note(
        f"kafka-features upgrade {' '.join(event.args)} ({event.seconds:.1f} s): finalized "
        f"{served.finalized(brokers[0])} on every broker"
    )


# ---------------------------------------------------------------------------------------------- after the roll


def test_after_the_roll_the_0_10_producers_are_refused_by_every_broker(story: Story) -> None:
    assert story.roll_done_at, "the roll did not complete"
    for client_id in LEGACY.values():
        refused_client(story.clients[client_id])

    def refusals() -> dict[int, int] | None:
        found = {
            node.node_id: node.logs.server_log.read_text(errors="replace").count(REFUSED_PRODUCE)
            for node in story.nodes
        }
        return found if all(found.values()) else None

    # The last node refuses them once the controller has given it back its partition's leadership.
    refused = eventually(refusals, 30, "every broker refusing the 0.10 producers' Produce v2")
    served = story.scrape()
    assert not served.values("kafka_client_deprecated_requests_total", kafka_cluster=CLUSTER)
    assert not served.values("kafka_client_upgrade_blocking_requests_total", kafka_cluster=CLUSTER)
    # The alert looks 15 minutes back: it stays pending (and would fire) while those counts are in its window.
    states = {a["state"] for a in story.alerts("KafkaClientDeprecatedRequests")}
    assert states and states <= {"pending", "firing"}, "the blocker alert still looks back at the 3.9 brokers' counts"
    story.journal.note(
        f"after the roll: the 0.10 producers fail every send ({CLIENT_REFUSED}...); server.log refusals by node "
        f"{refused}; no deprecated-request series; KafkaClientDeprecatedRequests {states or 'inactive'}"
    )
    # Without them nothing churns: every connection is counted again, the replica fetchers of the 4.4.0 brokers as
    # unknown (they send no ApiVersions either).
    for client_id in LEGACY.values():
        story.clients[client_id].close()
    story.churning.clear()
    _, truth = story.settled("after the roll, the 0.10 producers closed")
    assert ("unknown", "unknown") in by_version(truth), "the 4.4.0 replica fetchers"
    # They are the brokers' own: no unknown-software violation is left, and the alert goes.
    eventually(lambda: not story.scrape().unknown_violations(), 15, "no unknown_software violation left")
    eventually(lambda: not story.alerts("KafkaClientUnknownSoftware"), 15, "KafkaClientUnknownSoftware inactive")
    story.journal.note(f"after the roll, the 0.10 producers closed, served = kernel: {show(truth)}")


def test_the_roll_logged_no_error_and_one_warning_per_source_of_each_node_down(story: Story) -> None:
    """The exporter's log over the story: kafka-python's connection errors stay out of it; each node's outage is a
    warning per source with its cause (another if the cause changes while it is down), and its return one line.
    Before the fix, kafka-python logged 242 error lines over this story."""
    lines = (story.directory / "exporter.log").read_text(encoding="utf-8", errors="replace").splitlines()
    errors = [line for line in lines if "level=error" in line]
    assert not errors, errors[:10]
    for node in story.nodes:
        for source in ("jmx", "api_versions"):
            down = [line for line in lines if "level=warn" in line and f"{CLUSTER}/{node.node_id} ({source}):" in line]
            back = [line for line in lines if f'msg="{CLUSTER}/{node.node_id} ({source}) recovered"' in line]
            restarts = 2 if node.node_id == KILLED else 1
            # One warning when it goes (another if the cause changes), not one per cycle; a read that failed for
            # another reason on a loaded machine (a JMX timeout) is an outage of its own, with its own recovery.
            assert len(back) >= restarts and len(back) <= len(down) <= 2 * len(back), (node.node_id, source, down)
    story.journal.note(f"the exporter logged {len(lines)} lines over the story, no error")


def refused_client(client: RealClient) -> None:
    """The client still runs, and its last sends failed the way 0.10 reports a broker closing on its request."""
    assert client.returncode is None, f"{client.kind.value} exited: {client.stderr_tail()}"
    eventually(lambda: CLIENT_REFUSED in client.stderr_tail(5), 20, f"{client.kind.value} failing to produce")


def test_the_status_page_and_api_answered_throughout(story: Story) -> None:
    story.poller.stop()
    results = story.poller.results
    assert results, "the poller never ran"
    bad = [r for r in results if r[2] != "200"]
    slowest = max(seconds for _, _, _, seconds in results)
    story.journal.note(
        f"status page and /api/clients: {len(results)} requests, {len(bad)} failed, slowest {slowest:.2f} s"
    )
    assert not bad, bad[:10]
    assert slowest < INTERVAL


# ---------------------------------------------------------------------------------------------- the inventory


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as table:
        return list(csv.DictReader(table))


def test_the_inventory_across_the_kill_reads_every_line_once_and_names_the_refused_clients(story: Story) -> None:
    # The brokers stop, so both runs read the same files: the incremental one after the first, and a full one.
    for client in story.clients.values():
        client.close()
    story.cluster.stop()
    full_output = story.directory / "inventory-full"
    second_log, full_log = story.directory / "inventory-second.log", story.directory / "inventory-full.log"
    inputs = story_dirs(story.cluster)
    with (
        _inventory(inputs, story.inventory_output, second_log) as second,
        _inventory(inputs, full_output, full_log, incremental=False) as full,
    ):
        # Both within pytest's 300 s hang guard: they run side by side.
        finished(second, second_log, 240)
        finished(full, full_log, 240)
    incremental = json.loads((story.inventory_output / "current" / "run.json").read_text())
    whole = json.loads((full_output / "current" / "run.json").read_text())
    assert incremental["incremental"] and incremental["previous_run_id"], incremental
    story.journal.note(
        f"inventory: the incremental run after the kill read files {incremental['files']}; the full run "
        f"{whole['files']}; lines {incremental['lines']} and {whole['lines']}"
    )
    assert incremental["lines"] == whole["lines"]
    for table in ("clients", "api_usage", "upgrade_impact", "rejections", "malformed", "group_protocols"):
        mine = (story.inventory_output / "current" / f"{table}.csv").read_text()
        theirs = (full_output / "current" / f"{table}.csv").read_text()
        assert mine == theirs, f"{table}.csv differs between the incremental runs and the full run"
    rejections = [r for r in read_csv(full_output / "current" / "rejections.csv") if r["api_name"] == "Produce"]
    assert rejections and all(r["api_version"] == "2" for r in rejections)
    by_connection = {r["client_id"] for r in rejections if r["matched_by"] == "connection"}
    by_host = [r for r in rejections if r["matched_by"] == "host"]
    assert LEGACY[ClientKind.JAVA_0_10_2] in by_connection, by_connection
    assert any(LEGACY[ClientKind.JAVA_0_10_1] in r["client_id"].split(",") for r in by_host)
    assert {r["source_host"] for r in rejections} == {"127.0.0.1"}
    story.journal.note(
        f"inventory rejections: {len(rejections)} refused Produce v2, by connection {sorted(by_connection)}, "
        f"{len(by_host)} by host only"
    )


def test_the_log_at_one_line_per_connection_names_the_same_clients_and_blockers(story: Story) -> None:
    """The identities + INFO log (broker-config/'s filters), written by the same nodes from the same requests
    through the roll (3.9.2's log4j 1, then 4.4.0's log4j2): its clients table names every client the full DEBUG
    log names, with the same identity columns, except the brokers' own replica fetchers, which send no ApiVersions
    (and which the exporter never shows as clients). The 0.10.2.2 producer's Produce v2 is still an upgrade blocker,
    and the refused 0.10.1.1 producer is still found by its host."""
    full_output = story.directory / "inventory-full"
    assert (full_output / "current" / "clients.csv").exists(), "the previous chapter's full run is missing"
    # Each node's filtered request log and its server.log, which a broker writes beside it (the rejections' source).
    copies = [
        path
        for node in story.cluster.nodes.values()
        for path in (str(node.logs.copy_directory), str(node.logs.directory / "server.log*"))
    ]
    filtered_output, filtered_log = story.directory / "inventory-filtered", story.directory / "inventory-filtered.log"
    with _inventory(copies, filtered_output, filtered_log, incremental=False) as run:
        finished(run, filtered_log, 240)
    filtered_run = json.loads((filtered_output / "current" / "run.json").read_text())
    full_run = json.loads((full_output / "current" / "run.json").read_text())
    assert {e["kind"] for e in filtered_run["request_logs"]} == {"identities_and_info"}, filtered_run
    assert {e["kind"] for e in full_run["request_logs"]} == {"full_debug"}, full_run

    def identities(output: Path) -> set[tuple[str, ...]]:
        rows = read_csv(output / "current" / "clients.csv")
        return {tuple(r[c] for c in CLIENT_KEY) for r in rows if not is_broker_channel_client_id(r["client_id"])}

    full_ids, filtered_ids = identities(full_output), identities(filtered_output)
    assert filtered_ids == full_ids, (sorted(full_ids - filtered_ids), sorted(filtered_ids - full_ids))
    story.journal.note(
        f"identities + INFO log: {filtered_run['lines']} lines against {full_run['lines']} for full DEBUG, "
        f"the same {len(full_ids)} client identities"
    )

    blockers = [r for r in read_csv(filtered_output / "current" / "upgrade_impact.csv") if r["kind"] == "api_version"]
    assert any(
        r["client_id"] == LEGACY[ClientKind.JAVA_0_10_2] and r["api_name"] == "Produce" and "2" in r["versions_used"]
        for r in blockers
    ), blockers
    rejections = read_csv(filtered_output / "current" / "rejections.csv")
    by_host = [r for r in rejections if r["api_name"] == "Produce" and r["matched_by"] == "host"]
    assert any(LEGACY[ClientKind.JAVA_0_10_1] in r["client_id"].split(",") for r in by_host), rejections
