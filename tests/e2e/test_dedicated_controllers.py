"""KRaft clusters laid out as in production (issue 51): dedicated controllers (``process.roles=controller``, node ids
from 3000 as in a cluster migrated from ZooKeeper) beside brokers-only nodes, checked against the kernel per process.

Two layouts, one after the other: 3.9.2 with one controller and three brokers, 4.4.0 with three controllers and two
brokers. Topic ``demo`` has a partition per broker replicated on every broker, each broker leading one, so that the
brokers fetch from each other; two kcat producers that name themselves are the only clients at first. One exporter (a
one-second cycle) polls the cluster under three names, as an operator might configure it:

- ``listed``: every node in ``brokers:`` with its JMX URL, the controllers too. The controllers are no brokers, so the
  exporter's Kafka-protocol side (discovery, ApiVersions, DescribeConfigs) never reaches them: their own channels
  (registration, KRaft) are read from their JMX alone, and their CONTROLLER listener is judged like a broker's;
- ``brokers``: the brokers only; nothing is known of the controllers' listener;
- ``dark``: every node listed, but the first controller's JMX and broker 2's point at a port where nothing listens.

1. Healthy, named clients only: in every view the account agrees with the kernel's table (``real_kafka.connections``:
   the established connections to each node's listeners, by the process holding the client end): the brokers' own
   connections on each listener are the node JVMs', the clients' are the client processes'; what lands on the
   controllers' listener is the brokers' heartbeats, forwarding, KRaft and the controllers' registration, all placed
   on the active controller or (KRaft to other voters) on the listener; every node's channels are read. No
   ``unknown_software`` violation in any scrape, and the status page warns of nothing. Then an admin tool given
   ``--bootstrap-controller`` connects to the last controller's listener, naming itself as Kafka's Java client at the
   cluster's release, as the nodes' own channels there do: it is counted as a client's.
2. Kafka's Java producer 0.10.1.1 (it sends no ApiVersions), one bootstrapped from each broker: exactly their
   connections violate, per broker and listener, in the listed and the brokers-only views. With the first
   controller and broker 2 dark, the status page names both nodes and why; what is in doubt on the brokers' listener
   is only what broker 2 could hold (its replica fetcher and, on 3.9, its transaction markers), never anything for
   the controller, which is no broker (before issue 51, every unknown connection was: the producers went unseen);
   the producers' connections beyond that still violate, and nothing is hidden.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import UnknownBrokerIdError
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from prometheus_client.parser import text_string_to_metric_families

from exporter import __version__ as EXPORTER_VERSION
from harness.clients import (
    UNKNOWN,
    RealClient,
)
from harness.exporter_process import cluster_entry, running_exporter, write_config
from harness.ports import free_port
from harness.raw_client import RawConnection
from real_kafka import JmxAuth, KafkaCluster, NodeOptions
from real_kafka.cluster import FIRST_CONTROLLER_ID
from real_kafka.connections import Listener, count_connections
from real_kafka.jmx import jmx_url
from real_kafka.rolling_upgrade import wait_in_sync
from tests.support.own_connections import Served, fetch, legacy_producer, start_kcat_clients, until
from tests.support.waiting import eventually

# A story of real clusters, its set-up included: the suite's 300 s per test is too short on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.real_kafka, pytest.mark.timeout(600)]

#: (release, dedicated controllers, brokers)
LAYOUTS = (("3.9.2", 1, 3), ("4.4.0", 3, 2))
JMX = JmxAuth("monitor", "dedicated-Secret-51")
INTERVAL = 1.0
TOPIC = "demo"  # kcat's topic and the 0.10.1.1 producer's
PROPERTIES = {
    "auto.create.topics.enable": "false"
}  # the 0.10.1.1 producer on 4.4.0 asks for a topic that stays missing
PLAINTEXT, CONTROLLER = "PLAINTEXT", "CONTROLLER"
UNKNOWN_PAIR = (UNKNOWN.software_name, UNKNOWN.software_version)
DARK_BROKER = "2"
DARK_CONTROLLER = str(FIRST_CONTROLLER_ID)
LISTED, BROKERS, DARK = "listed", "brokers", "dark"


@dataclass(frozen=True)
class View:
    """One name the exporter polls the cluster under: the nodes it lists, and those whose JMX points nowhere."""

    name: str
    polled: frozenset[str]
    dark: frozenset[str] = frozenset()


def scrape(base: str) -> dict[str, Served]:
    """The exporter's /metrics, per view (its kafka_cluster label)."""
    by_view: dict[str, list[tuple[str, dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(fetch(f"{base}/metrics")):
        for sample in family.samples:
            cluster = sample.labels.get("kafka_cluster")
            if cluster is not None:
                by_view.setdefault(cluster, []).append((sample.name, dict(sample.labels), sample.value))
    return {name: Served(samples) for name, samples in by_view.items()}


@dataclass(frozen=True)
class Kernel:
    """Established connections to the nodes' listeners: (holder, destination node, listener) -> count; a holder is
    ``node:<id>`` or a client process's identity as the brokers should record it, ``<name>\\0<version>``."""

    counts: Counter[tuple[str, str, str]]
    unowned: int

    def to(self, node: str, listener: str, holders: Callable[[str], bool] = lambda _: True) -> int:
        return sum(
            n for (who, dest, where), n in self.counts.items() if (dest, where) == (node, listener) and holders(who)
        )

    def clients(self) -> Counter[tuple[str, str, str, str]]:
        """(node, listener, name, version) -> the client processes' connections."""
        found: Counter[tuple[str, str, str, str]] = Counter()
        for (who, dest, where), n in self.counts.items():
            if not who.startswith("node:"):
                name, version = who.split("\0")
                found[(dest, where, name, version)] += n
        return found

    def unnamed(self) -> Counter[tuple[str, str]]:
        """(broker, listener) -> the connections of the client that names no software (the 0.10.1.1 producer)."""
        return Counter(
            {(dest, where): n for (dest, where, *pair), n in self.clients().items() if tuple(pair) == UNKNOWN_PAIR}
        )


@dataclass
class Layout:
    release: str
    directory: Path
    cluster: KafkaCluster
    views: dict[str, View]
    exporter: subprocess.Popen[bytes]
    base: str
    clients: list[RealClient]
    running: contextlib.ExitStack
    legacy: list[RealClient] = field(default_factory=list)
    journal: list[str] = field(default_factory=list)
    #: Who the test process's own connections are, while it holds one as a client would (``<name>\0<version>``).
    test_process_as: str | None = None

    def note(self, text: str) -> None:
        self.journal.append(f"[{self.release}] {text}")

    @property
    def brokers(self) -> list[str]:
        return [str(node.node_id) for node in self.cluster.brokers()]

    @property
    def controllers(self) -> list[str]:
        return [str(node.node_id) for node in self.cluster.controllers()]

    def view(self, name: str) -> str:
        return f"{self.release}-{name}"

    def kernel(self) -> Kernel:
        listeners: dict[int, Listener] = {}
        owners: dict[int, str] = {}
        for node in self.cluster.nodes.values():
            for port, name in ((node.ports.plaintext, PLAINTEXT), (node.ports.controller, CONTROLLER)):
                if port is not None:
                    listeners[port] = Listener(node.node_id, name)
            if node.pid is not None:
                owners[node.pid] = f"node:{node.node_id}"
        for client in [*self.clients, *self.legacy]:
            owners[client.pid] = f"{client.expected.software_name}\0{client.expected.software_version}"
        owners[self.exporter.pid] = f"kafka-client-exporter\0{EXPORTER_VERSION}"
        if self.test_process_as is not None:
            owners[os.getpid()] = self.test_process_as
        found = count_connections(listeners, owners)
        counts = Counter({(who, str(at.broker), at.name): n for (who, at), n in found.counts.items()})
        return Kernel(counts, sum(found.unowned.values()))

    def steady(self) -> tuple[Kernel, dict[str, Served]]:
        """A scrape with the kernel's table the same before and after it (the last pair after 20 tries)."""
        for _ in range(20):
            before = self.kernel()
            served = scrape(self.base)
            after = self.kernel()
            if before == after:
                break
        return after, served


# ---------------------------------------------------------------------------------------------- what must hold


def account(layout: Layout, view: View, kernel: Kernel, served: Served) -> list[str]:
    """Where the view's account disagrees with the kernel, in a cycle that read every broker it can (a read that
    missed its deadline on this loaded machine leaves a node unread for a cycle: the caller tries again)."""
    problems: list[str] = []
    if kernel.unowned:
        problems.append(f"{kernel.unowned} connections of no known process (the kernel's table is moving)")
    read = {node for node, value in served.channels_read().items() if value == 1}
    if read != view.polled:
        # Every node answered JMX in most cycles: a controller too is read, from its JMX alone (no DescribeConfigs
        # reaches it). A node that answered and is still unread is a fault; one whose read failed, the machine's.
        up = served.jmx_up()
        wrongly = sorted(node for node in view.polled - read if up.get(node) == 1)
        return [f"{view.name}: channels read {sorted(read)}, JMX up {up}, unread though JMX answered: {wrongly}"]
    raw, own = served.raw(), served.inter_broker()
    # Every read node's gauges count what the kernel shows on its listeners.
    for node in sorted(read):
        for listener in (PLAINTEXT, CONTROLLER):
            counted = sum(n for (b, where, _, _), n in raw.items() if (b, where) == (node, listener))
            if counted != kernel.to(node, listener):
                problems.append(f"{view.name}: {node} {listener}: gauges {counted}, kernel {kernel.to(node, listener)}")
    # The nodes' own connections: on each node read, those of the holders read, placed there (replica fetchers by
    # name, the controller-bound channels on the active controller); the KRaft channel's to other voters on the
    # listener only ("").
    by_read_holder = lambda who: who.startswith("node:") and who.removeprefix("node:") in read  # noqa: E731
    for listener in (PLAINTEXT, CONTROLLER):
        held = {node: kernel.to(node, listener, by_read_holder) for node in read}
        placed = {node: sum(n for (b, where, *_), n in own.items() if (b, where) == (node, listener)) for node in read}
        unplaced = sum(n for (b, where, *_), n in own.items() if (b, where) == ("", listener))
        for node in sorted(read):
            if not placed[node] <= held[node]:
                problems.append(f"{view.name}: {node} {listener}: {placed[node]} placed, the nodes hold {held[node]}")
        if listener == PLAINTEXT and (placed != held or unplaced):
            problems.append(f"{view.name}: {listener}: placed {placed} (+{unplaced}), the node JVMs hold {held}")
        if sum(placed.values()) + unplaced != sum(held.values()):
            problems.append(
                f"{view.name}: {listener}: {sum(placed.values())} placed + {unplaced} unplaced, the nodes hold "
                f"{sum(held.values())}"
            )
    # The clients': what the gauges count without the nodes' own is the client processes', per listener and software,
    # and per node where nothing is unplaced on that listener and software.
    clients = Counter({key: n for key, n in kernel.clients().items() if key[0] in read})
    for listener, name, version in {(where, n, v) for (_, where, n, v) in [*raw, *clients]}:
        counted = sum(n for (_, where, *pair), n in raw.items() if (where, *pair) == (listener, name, version))
        owned = sum(n for (_, where, *pair, _), n in own.items() if (where, *pair) == (listener, name, version))
        theirs = sum(n for (_, where, *pair), n in clients.items() if (where, *pair) == (listener, name, version))
        if counted - owned != theirs:
            problems.append(
                f"{view.name}: {listener} {name} {version}: raw {counted} - own {owned} != clients' {theirs}"
            )
    for node in sorted(read):
        for (b, listener, name, version), n in raw.items():
            if b != node:
                continue
            mine = sum(
                m for (at, where, *pair, _), m in own.items() if (at, where, *pair) == (node, listener, name, version)
            )
            spread = any((at, where, *pair) == ("", listener, name, version) for (at, where, *pair, _) in own)
            if not spread and n - mine != clients[(node, listener, name, version)]:
                problems.append(f"{view.name}: {node} {listener} {name} {version}: raw {n} - own {mine} != clients'")
    # Verdicts: unknown_software exactly the unnamed client's, on its brokers; nothing else violates; nothing in doubt.
    unnamed = Counter({key: n for key, n in kernel.unnamed().items() if key[0] in read})
    violating = served.count(
        "kafka_client_policy_violation_connections", "broker", "listener", reason="unknown_software"
    )
    if violating != unnamed:
        problems.append(
            f"{view.name}: unknown_software served {dict(violating)}, the unnamed client holds {dict(unnamed)}"
        )
    others = served.count("kafka_client_policy_violation_connections", "reason", "broker", "client_software_name")
    if any(reason != "unknown_software" for reason, *_ in others):
        problems.append(f"{view.name}: violations {dict(others)}")
    unverified = served.count("kafka_client_unverified_connections", "listener")
    if unverified:
        problems.append(f"{view.name}: unverified {dict(unverified)}")
    return problems


def doubt_line(layout: Layout, view: View) -> str:
    """The status page's list of what could not be read or is in doubt for the view ("" when there is none)."""
    page = fetch(f"{layout.base}/")
    found = re.search(rf"<ul id='own-doubt-{re.escape(layout.view(view.name))}'>(.*?)</ul>", page, re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1)))) if found else ""


def dark(layout: Layout, view: View, kernel: Kernel, served: Served) -> list[str]:
    """The dark view: the first controller's and broker 2's JMX unreachable. Broker 2 may hold, towards each other
    broker, one connection per replica fetcher thread (num.replica.fetchers, 1) and, on 3.9, one of its
    transaction-marker channel (named from 4.2.1 on): in doubt up to that, never more; the controller, no broker,
    holds nothing towards a broker. The unnamed client's connections beyond that violate; nothing is hidden."""
    read = {node for node, value in served.channels_read().items() if value == 1}
    if read != view.polled - view.dark:
        return [f"{view.name}: channels read {sorted(read)}"]
    could_hold = 1 + int(layout.release.startswith("3."))
    raw = served.count(
        "kafka_client_connections", "broker", "listener", "client_software_name", "client_software_version"
    )
    own = served.count("kafka_client_inter_broker_connections", "broker", "listener", "client_software_name", "channel")
    violating = served.count(
        "kafka_client_policy_violation_connections", "broker", "listener", reason="unknown_software"
    )
    unverified = served.count("kafka_client_unverified_connections", "listener", "client_software_name")
    problems = []
    brokers = sorted(set(layout.brokers) - view.dark)
    doubted = unverified[(PLAINTEXT, UNKNOWN.software_name)]
    if any(key not in {(broker, PLAINTEXT) for broker in brokers} for key in violating):
        problems.append(f"{view.name}: violations {dict(violating)}")
    if doubted > could_hold * len(brokers):
        problems.append(f"{view.name}: {doubted} unverified, broker {DARK_BROKER} could hold {could_hold} per broker")
    residual = 0
    for broker in brokers:
        legacy = kernel.unnamed()[(broker, PLAINTEXT)]
        placed = violating[(broker, PLAINTEXT)]
        if not legacy - could_hold <= placed <= legacy:
            problems.append(f"{view.name}: {placed} violating on {broker}, the unnamed client holds {legacy} there")
        residual += (
            raw[(broker, PLAINTEXT, *UNKNOWN_PAIR)] - own[(broker, PLAINTEXT, UNKNOWN.software_name, "replica-fetcher")]
        )
    placed_all = sum(violating.values())
    if placed_all + doubted != residual:
        problems.append(
            f"{view.name}: {placed_all} violating + {doubted} unverified != {residual} unknown not the nodes'"
        )
    return problems


def dark_page(layout: Layout, view: View) -> list[str]:
    """The status page says which nodes could not be read and why, and puts in doubt broker 2's channels only."""
    line = doubt_line(layout, view)
    problems = [
        f"no word of node {node} in {line!r}"
        for node in sorted(view.dark)
        if f"Broker {node}'s own channels could not be read this cycle (jmx down" not in line
    ]
    # On the brokers' listener, what is in doubt may be broker 2's; the controller, no broker, holds nothing there.
    for doubt in re.findall(rf"On listener {PLAINTEXT}, .*?could not be read", line):
        if not doubt.endswith(f"the own channels of broker {DARK_BROKER} could not be read"):
            problems.append(f"in doubt: {doubt!r}")
    return problems


# ---------------------------------------------------------------------------------------------- the clusters


def assignment(brokers: int) -> dict[int, list[int]]:
    """One partition per broker, replicated on every broker, each broker leading one: they all fetch from each other."""
    return {partition: [(partition + i) % brokers + 1 for i in range(brokers)] for partition in range(brokers)}


def create_topic(bootstrap: str, brokers: int, timeout: float = 60.0) -> None:
    """Create TOPIC as ``assignment`` places it, once the metadata the admin client reads knows every broker it names:
    a broker that has just registered may be unknown there for a moment on a loaded machine (UnknownBrokerIdError)."""
    placed = assignment(brokers)

    def created() -> bool:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="dedicated-setup")
        try:
            admin.create_topics([NewTopic(TOPIC, -1, -1, replica_assignments=placed)])
        except UnknownBrokerIdError:
            return False
        finally:
            admin.close()
        return True

    eventually(created, timeout, f"topic {TOPIC} created as {placed}", poll=0.5)


@pytest.fixture(scope="module", params=LAYOUTS, ids=[f"{r}-{c}c{b}b" for r, c, b in LAYOUTS])
def layout(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layout]:
    release, controllers, brokers = request.param
    directory = tmp_path_factory.mktemp(f"dedicated-{release}")
    options = NodeOptions(jmx_auth=JMX, extra_properties=PROPERTIES)
    cluster = KafkaCluster(directory / "kafka", release, nodes=brokers, controllers=controllers, options=options)
    began = time.monotonic()
    with contextlib.ExitStack() as running:
        cluster.start()
        running.callback(cluster.stop)
        started = time.monotonic() - began
        create_topic(cluster.bootstrap(), brokers)
        wait_in_sync(cluster.bootstrap(), 60)
        clients = list(start_kcat_clients(cluster.bootstrap(), running).values())
        every = {str(node.node_id): node.jmx_url for node in cluster.nodes.values()}
        brokers_only = {node_id: url for node_id, url in every.items() if int(node_id) < FIRST_CONTROLLER_ID}
        nowhere = jmx_url(free_port())  # nothing listens there
        blind = {
            node_id: nowhere if node_id in (DARK_CONTROLLER, DARK_BROKER) else url for node_id, url in every.items()
        }
        views = {
            LISTED: View(LISTED, frozenset(every)),
            BROKERS: View(BROKERS, frozenset(brokers_only)),
            DARK: View(DARK, frozenset(every), frozenset({DARK_CONTROLLER, DARK_BROKER})),
        }
        credentials = {"username": JMX.username, "password": JMX.password}
        entries = [
            cluster_entry(
                f"{release}-{name}", {int(k): v for k, v in urls.items()}, cluster.bootstrap(), jmx=credentials
            )
            for name, urls in ((BROKERS, brokers_only), (DARK, blind))
        ]
        config = write_config(
            directory / "exporter.yaml",
            f"{release}-{LISTED}",
            {int(k): v for k, v in every.items()},
            cluster.bootstrap(),
            jmx=credentials,
            more_clusters=entries,
            interval_seconds=INTERVAL,
        )
        for client in clients:
            client.wait_ready(60)
        port = free_port()
        log = running.enter_context((directory / "exporter.log").open("wb"))
        exporter = running.enter_context(running_exporter(config, port, stdout=log, stderr=subprocess.STDOUT))
        found = Layout(release, directory, cluster, views, exporter, f"http://127.0.0.1:{port}", clients, running)
        found.note(
            f"nodes ready in {started:.1f} s, clients and exporter {time.monotonic() - began - started:.1f} s later"
        )
        try:
            yield found
        finally:
            (directory / "journal.txt").write_text("\n".join(found.journal) + "\n")
            print("\n" + "\n".join(found.journal))


def settle(layout: Layout, views: list[str], check: Callable[[View, Kernel, Served], list[str]], what: str) -> None:
    """Until each view has had a scrape, with the kernel's table unchanged around it, that ``check`` passes."""
    pending = list(views)

    def step() -> list[str]:
        kernel, served = layout.steady()
        problems = []
        for name in list(pending):
            view = layout.views[name]
            found = check(view, kernel, served[layout.view(name)])
            if found:
                problems += found
            else:
                pending.remove(name)
        return problems

    began = time.monotonic()
    until(step, 90, what)
    layout.note(f"{what}: {time.monotonic() - began:.1f} s")


#: An admin tool given ``--bootstrap-controller`` (KIP-919), Kafka's own at the cluster's release: it names itself as
#: the nodes' own channels on that listener do, so only their count tells it from them.
ADMIN_TOOL = "apache-kafka-java"


@contextlib.contextmanager
def admin_tool_on(layout: Layout, node_id: int) -> Iterator[None]:
    """A connection to the controller ``node_id``'s listener that names itself as ADMIN_TOOL at the cluster's release
    (ApiVersions v3) and stays open, held by this test's process while the block runs."""
    port = layout.cluster.node(node_id).ports.controller
    assert port is not None
    with RawConnection(port, timeout=10) as connection:
        request = ApiVersionsRequest(version=3, client_software_name=ADMIN_TOOL, client_software_version=layout.release)
        frame = connection.request(request, correlation_id=1, client_id="admin-tool")
        assert ApiVersionsResponse.decode(frame, version=3, header=True, framed=True).error_code == 0
        layout.test_process_as = f"{ADMIN_TOOL}\0{layout.release}"
        try:
            yield
        finally:
            layout.test_process_as = None


def test_healthy_cluster_named_clients_only(layout: Layout) -> None:
    scrapes = 0

    def healthy(view: View, kernel: Kernel, served: Served) -> list[str]:
        nonlocal scrapes
        scrapes += 1
        # Never a false unnamed client, in any scrape, whatever was read.
        violating = served.count("kafka_client_policy_violation_connections", "broker", "listener", "reason")
        assert not violating, f"{view.name}: {dict(violating)}"
        if view.dark:
            return []
        return account(layout, view, kernel, served)

    settle(layout, [LISTED, BROKERS, DARK], healthy, "healthy account matching the kernel")
    # Nothing to warn of where every node is read (a cycle whose JMX read of a node failed on this loaded machine
    # says so: the page is asked again).
    until(lambda: [line] if (line := doubt_line(layout, layout.views[LISTED])) else [], 30, "a status page quiet")

    # The controllers' listener is judged in the listed view only (a controller that nobody connects to, a follower
    # whose leader has nothing to tell it, has only zero-valued gauges, which are not served). Asked until a scrape
    # shows it: a cycle on a loaded machine may have read no node in time, and serves nothing of them then.
    def judged_where_connected() -> list[str]:
        kernel, served = layout.steady()
        listed = served[layout.view(LISTED)]
        judged = {(b, where) for b, where in listed.count("kafka_client_connections", "broker", "listener")}
        connected = {(c, CONTROLLER) for c in layout.controllers if kernel.to(c, CONTROLLER)}
        brokers_view = served[layout.view(BROKERS)].count("kafka_client_connections", "broker", "listener")
        problems = []
        if not connected or not connected <= judged:
            problems.append(f"connected to {sorted(connected)}, judged {sorted(judged)}")
        if any(b in layout.controllers for b, _ in brokers_view):
            problems.append(f"a controller served in the brokers-only view: {dict(brokers_view)}")
        if not problems:
            layout.note(f"kernel: {sorted(kernel.counts.items())}")
            placed = listed.count("kafka_client_inter_broker_connections", "broker", "listener", "channel")
            layout.note(f"own connections placed (listed): {sorted(placed.items())}")
        return problems

    until(judged_where_connected, 30, "the controllers' listener judged where connected")

    # An admin tool on the last controller's listener is a client's connection, counted as such beside the nodes'
    # own. Where the nodes' KRaft connections to that voter are placed on the listener only (4.4.0's followers), the
    # account cannot say which controller holds the tool's, and the status page says so: only the account is checked.
    with admin_tool_on(layout, int(layout.controllers[-1])):
        settle(layout, [LISTED], lambda v, k, s: account(layout, v, k, s), "an admin tool on a controller, a client's")


def test_unnamed_producer_violates_exactly(layout: Layout) -> None:
    # 3.9 serves its Produce v2: it connects to each leader of the topic. 4.x refuses it (KIP-896), so there it asks
    # for a topic that stays missing and holds its Metadata connections: the one it bootstraps from, and one to a
    # broker of the metadata, the same one as often as not. One producer bootstrapped from each broker, so that
    # every broker holds its connections whichever it picks.
    topic = TOPIC if layout.release.startswith("3.") else "never-created"
    for node in layout.cluster.brokers():
        producer = legacy_producer(node.bootstrap(), topic)
        layout.running.callback(producer.close)
        layout.legacy.append(producer)

    def exact(view: View, kernel: Kernel, served: Served) -> list[str]:
        held = kernel.unnamed()
        if {b for b, _ in held} != set(layout.brokers):
            return [f"the 0.10.1.1 producers not connected to every broker yet: {dict(held)}"]
        if view.dark:
            return dark(layout, view, kernel, served) or dark_page(layout, view)
        return account(layout, view, kernel, served)

    settle(layout, [LISTED, BROKERS, DARK], exact, "the unnamed producer's connections violating exactly")
    kernel = layout.kernel()
    layout.note(f"0.10.1.1 producers hold {dict(kernel.unnamed())}")
    for name in (LISTED, DARK):
        layout.note(f"{name}: status page: {doubt_line(layout, layout.views[name])!r}")
