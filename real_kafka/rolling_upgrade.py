"""A rolling upgrade of a real KRaft cluster, the way the Kafka documentation has operators do it: one node at a time,
a controlled shutdown (SIGTERM), the new release started over the same storage and configuration, and the next node
only once every partition is fully replicated again (ISR == replicas, read with the Admin API's Metadata); after the
last node, the new metadata version finalized with Kafka's own ``kafka-features`` tool
(``org.apache.kafka.tools.FeatureCommand`` from the new release's kafka-tools jar).

``RollingUpgrade.steps()`` yields an event at each point where what users see changes (a node down, a node back on
the new release, the cluster in sync, the features finalized), so that the test can assert on the exporter between
steps and the demo can say what to look at. A combined controller quorum of three keeps its majority while one node
is down; the roll waits for the cluster to be in sync before it takes the next node, so no two are ever down.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from real_kafka.broker import KafkaNode
from real_kafka.distribution import distribution

__all__ = [
    "Finalized",
    "NodeBack",
    "NodeStopped",
    "RollEvent",
    "RollInterrupted",
    "RollingUpgrade",
    "features_tool",
    "out_of_sync",
    "wait_in_sync",
]

#: Short-lived JVMs of Kafka's tools: a small heap and C1 only, as for the nodes.
TOOL_JVM_OPTIONS = ("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
_UPGRADED = re.compile(r"^(?P<feature>\S+) was upgraded to (?P<level>\d+)\.$", re.MULTILINE)


class RollInterrupted(Exception):
    """The roll's ``stop`` event was set (the demo's Ctrl-C) while it waited."""


@dataclass(frozen=True)
class NodeStopped:
    """The node's controlled shutdown is over and its JVM has exited: nothing answers on its ports until the roll
    starts it again, which it does once the caller resumes it."""

    node_id: int
    release: str
    #: From SIGTERM to the JVM's exit: leadership moved away, the controller told, the logs closed.
    shutdown_seconds: float


@dataclass(frozen=True)
class NodeBack:
    """The node serves clients under the new release (listed in Metadata, unfenced) and every partition is fully
    replicated again (ISR == replicas): the roll may take the next node."""

    node_id: int
    release: str
    shutdown_seconds: float
    #: From launching the new release's JVM to the node answering Metadata as a registered broker.
    start_seconds: float
    #: From then to every partition in sync.
    catch_up_seconds: float
    #: How long the caller kept the roll at NodeStopped (the node stayed down meanwhile); not in restart_seconds.
    held_seconds: float

    @property
    def restart_seconds(self) -> float:
        """The node's own restart: shutdown, start and catch-up, as an operator waits for it."""
        return self.shutdown_seconds + self.start_seconds + self.catch_up_seconds


@dataclass(frozen=True)
class Finalized:
    """``kafka-features upgrade`` has raised the finalized feature levels (metadata.version among them)."""

    args: tuple[str, ...]
    #: Feature -> the level the tool says it was upgraded to (``metadata.version was upgraded to 33.``).
    upgraded: dict[str, int]
    seconds: float
    #: The tool's own output.
    output: str = field(repr=False)


RollEvent = NodeStopped | NodeBack | Finalized


def out_of_sync(topics: Sequence[dict[str, Any]]) -> list[str]:
    """The partitions of a Metadata answer (kafka-python's ``describe_topics()``) that are not fully replicated: no
    leader, or an ISR short of the replica set. Empty when the cluster has no under-replicated partition."""
    problems = []
    for topic in topics:
        if topic.get("error_code"):
            problems.append(f"{topic['name']}: error {topic['error_code']}")
            continue
        for partition in topic["partitions"]:
            replicas, isr = set(partition["replica_nodes"]), set(partition["isr_nodes"])
            if partition["leader_id"] < 0 or isr != replicas:
                problems.append(
                    f"{topic['name']}-{partition['partition_index']}: leader {partition['leader_id']}, replicas "
                    f"{sorted(replicas)}, in sync {sorted(isr)}"
                )
    return problems


def wait_in_sync(
    bootstrap: str,
    timeout: float = 120.0,
    *,
    stop: threading.Event | None = None,
    client_id: str = "rolling-upgrade",
    poll: float = 0.25,
) -> None:
    """Return once every partition of every topic is fully replicated, by the Metadata one of the brokers answers;
    TimeoutError naming the partitions still short after ``timeout`` seconds, RollInterrupted when ``stop`` is set.

    An Admin client per question, closed after it: one held across the roll would keep connections (and the
    brokers' gauges for them) that are not the cluster's clients."""
    stop = stop or threading.Event()
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=client_id, request_timeout_ms=10000)
            try:
                problems = out_of_sync(admin.describe_topics())
            finally:
                admin.close()
        except KafkaError as exc:
            problems = [f"Metadata failed: {exc!r}"]
        if not problems:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"partitions not in sync within {timeout:.0f} s: {'; '.join(problems[:10])}")
        if stop.wait(poll):
            raise RollInterrupted


def features_tool(release: str, bootstrap: str, *args: str, timeout: float = 60.0) -> str:
    """``kafka-features --bootstrap-server BOOTSTRAP ARGS`` of ``release`` (its kafka-tools jar); the tool's output,
    RuntimeError with it when it fails."""
    command = [
        "java",
        *TOOL_JVM_OPTIONS,
        "-cp",
        distribution(release).classpath,
        "org.apache.kafka.tools.FeatureCommand",
        "--bootstrap-server",
        bootstrap,
        *args,
    ]
    run = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = (run.stdout + run.stderr).strip()
    if run.returncode != 0:
        raise RuntimeError(f"kafka-features {' '.join(args)} exited with {run.returncode}: {output[-2000:]}")
    return output


class RollingUpgrade:
    """Restart ``nodes``, in order, under ``release``; then finalize with ``kafka-features upgrade UPGRADE_ARGS``.

    ``bootstrap`` is the cluster's PLAINTEXT bootstrap list (every broker: one of them is always up). ``say`` gets a
    line at each step, for a watching human. ``stop`` ends the roll between steps and in its waits
    (RollInterrupted); the node being restarted is left as it is, for the caller's clean-up to stop by pid."""

    def __init__(
        self,
        nodes: Sequence[KafkaNode],
        bootstrap: str,
        release: str,
        *,
        upgrade_args: Sequence[str] = ("--release-version", "4.4"),
        sync_timeout: float = 120.0,
        start_timeout: float = 120.0,
        shutdown_timeout: float = 60.0,
        stop: threading.Event | None = None,
        say: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.nodes = list(nodes)
        self.bootstrap = bootstrap
        self.release = release
        self.upgrade_args = tuple(upgrade_args)
        self.sync_timeout = sync_timeout
        self.start_timeout = start_timeout
        self.shutdown_timeout = shutdown_timeout
        self._stop = stop or threading.Event()
        self._say = say
        self.events: list[RollEvent] = []

    def steps(self) -> Iterator[RollEvent]:
        """Each event as it happens: the caller's code between two events runs while the roll waits (at NodeStopped,
        with the node down)."""
        for node in self.nodes:
            yield from self._restart(node)
        yield self._record(self._finalize())

    def run(self, on_event: Callable[[RollEvent], None] = lambda _: None) -> list[RollEvent]:
        for event in self.steps():
            on_event(event)
        return self.events

    def _restart(self, node: KafkaNode) -> Iterator[RollEvent]:
        self._check_stop()
        old = node.release
        self._say(f"stopping node {node.node_id} (Kafka {old}): controlled shutdown (SIGTERM, pid {node.pid})")
        began = time.monotonic()
        node.terminate()
        # A controlled shutdown moves leadership away and waits for the controller's answer: seconds. A node still
        # running at the deadline is killed (its storage recovers at start, as after a crash) and the roll goes on.
        deadline = began + self.shutdown_timeout
        while node.running and time.monotonic() < deadline:
            if self._stop.wait(0.05):
                raise RollInterrupted
        node.wait_stopped(0)
        shutdown = time.monotonic() - began
        held_from = time.monotonic()
        yield self._record(NodeStopped(node.node_id, old, shutdown))
        held = time.monotonic() - held_from
        self._check_stop()
        self._say(f"starting node {node.node_id} on Kafka {self.release} over the same storage and configuration")
        timing = node.restart(release=self.release, timeout=self.start_timeout)
        ready = time.monotonic()
        self._say(
            f"node {node.node_id} serves on Kafka {node.release} ({timing.wall_seconds:.1f} s after launch); waiting "
            "for every partition to be in sync again"
        )
        wait_in_sync(self.bootstrap, self.sync_timeout, stop=self._stop)
        catch_up = time.monotonic() - ready
        yield self._record(NodeBack(node.node_id, node.release, shutdown, timing.wall_seconds, catch_up, held))

    def _finalize(self) -> Finalized:
        self._check_stop()
        self._say(f"every node runs Kafka {self.release}: kafka-features upgrade {' '.join(self.upgrade_args)}")
        began = time.monotonic()
        output = features_tool(self.release, self.bootstrap, "upgrade", *self.upgrade_args)
        upgraded = {match["feature"]: int(match["level"]) for match in _UPGRADED.finditer(output)}
        return Finalized(self.upgrade_args, upgraded, time.monotonic() - began, output)

    def _record(self, event: RollEvent) -> RollEvent:
        self.events.append(event)
        return event

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise RollInterrupted
