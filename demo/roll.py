"""The demo's roll to 4.4.0 in front of the newcomer (``--rolling-upgrade``, and ``--migration`` once migrated), on a
thread of its own: real_kafka.rolling_upgrade restarts one node at a time, and each step is said with where to look."""

from __future__ import annotations

import csv
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from demo.common import InventoryJob
from real_kafka.broker import KafkaNode
from real_kafka.rolling_upgrade import Finalized, NodeBack, NodeStopped, RollEvent, RollingUpgrade, RollInterrupted

__all__ = ["CREATED_WITH", "UPGRADE_TO", "DemoRoll", "RolledCluster", "brokers_log_dirs"]

#: The release the cluster was created with: it formats every node's storage, so metadata.version is its own.
CREATED_WITH = "3.9.2"
UPGRADE_TO = "4.4.0"


class RolledCluster(Protocol):
    """What the roll needs of the demo's cluster: its nodes (rolled in this order) and where clients connect."""

    @property
    def nodes(self) -> dict[int, KafkaNode]: ...

    def bootstrap(self) -> str: ...


def brokers_log_dirs(data_dir: Path) -> str:
    """What an operator gives the inventory job: the nodes' log directories (a glob), not their data directories
    beside them."""
    return str(data_dir / "kafka" / "node-*" / "logs")


class DemoRoll:
    """The rolling upgrade of ``--rolling-upgrade``, on a thread of its own: it starts once the inventory job has run
    (so that who runs the legacy producer is named before the roll; at once without a job), says at each step which
    node is restarting and where to look, holds each state for a few cycles so that the pages can show it, and runs
    the inventory job again after the roll. ``stop`` (the demo's Ctrl-C) ends it between steps and in its waits; the
    nodes are stopped by the demo's clean-up, by pid."""

    #: What the demo says failed when a step raises.
    story = "the rolling upgrade"

    def __init__(
        self,
        cluster: RolledCluster,
        first_job: InventoryJob | None,
        data_dir: Path,
        interval_seconds: float,
        say: Callable[[str], None],
        stop: threading.Event | None,
    ) -> None:
        self._cluster, self._first_job, self._data_dir, self._say = cluster, first_job, data_dir, say
        self._interval = interval_seconds
        self._outer_stop = stop or threading.Event()
        self._stop = threading.Event()
        self.events: list[RollEvent] = []
        self.done = threading.Event()
        self.second_job: InventoryJob | None = None
        self._thread = threading.Thread(target=self._run, name="demo-roll", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self.second_job is not None:
            self.second_job.stop()
        # A node being started keeps the thread in its wait until the demo's clean-up stops that node.
        self._thread.join(2)

    def _stopping(self) -> bool:
        return self._stop.is_set() or self._outer_stop.is_set()

    def _hold(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._stopping():
                raise RollInterrupted
            self._stop.wait(0.2)

    def _run(self) -> None:
        try:
            self._roll()
        except RollInterrupted:
            pass
        except Exception as exc:  # the demo goes on, on whatever the cluster now runs
            if not self._stopping():
                self._say(f"demo: {self.story} failed: {exc}")
        finally:
            self.done.set()

    def _roll(self) -> None:
        self._await_first_job()
        self._upgrade(list(self._cluster.nodes.values()), self._cluster.bootstrap())
        self._inventory_again()

    def _await_first_job(self) -> None:
        """Until the inventory job has named who runs what, then a few cycles of the cluster as it is, with the job's
        names on the page."""
        if self._first_job is not None:
            while not self._first_job.done.wait(0.5):
                if self._stopping():
                    raise RollInterrupted
        self._hold(3 * self._interval)

    def _upgrade(self, nodes: list[KafkaNode], bootstrap: str) -> None:
        self._say(
            f"demo: the rolling upgrade from {CREATED_WITH} to {UPGRADE_TO} starts now, one node at a time "
            f"({', '.join(str(node.node_id) for node in nodes)}). Watch the status page's Brokers table and upgrade "
            "blockers, Prometheus' /alerts, and in the dashboards: Kafka upgrade readiness > Inferred broker "
            "releases and Feature levels, Kafka client inventory > Connections by broker and listener"
        )
        stop = threading.Event()
        watcher = threading.Thread(target=self._relay_stop, args=(stop,), name="demo-roll-stop", daemon=True)
        watcher.start()
        roll = RollingUpgrade(nodes, bootstrap, UPGRADE_TO, stop=stop, say=self._step)
        releases = {node.node_id: node.release for node in nodes}
        try:
            for event in roll.steps():
                self.events.append(event)
                self._upgrade_step(event, releases)
        finally:
            stop.set()

    def _upgrade_step(self, event: RollEvent, releases: dict[int, str]) -> None:
        if isinstance(event, NodeStopped):
            del releases[event.node_id]
            moved = (
                "its clients reconnect to the other brokers (Connections by broker and listener)"
                if self._is_broker(event.node_id)
                else "the brokers keep serving their clients, but no metadata changes while the quorum's only voter "
                "is down"
            )
            self._say(
                f"demo: roll: node {event.node_id} is down after a {event.shutdown_seconds:.1f} s controlled "
                f"shutdown. Status page: its row says 'down: connection' and nothing is listed under it; {moved}; "
                "KafkaClientExporterBrokerDown goes pending in Prometheus"
            )
            self._hold(2 * self._interval)
        elif isinstance(event, NodeBack):
            releases[event.node_id] = event.release
            mixed = len(set(releases.values())) > 1
            skew = (
                "KafkaBrokerReleaseSkew is pending: 3.9 and 4.4 brokers answer side by side"
                if mixed
                else "KafkaBrokerReleaseSkew is inactive: every broker answering runs 4.4"
            )
            refused = (
                "the legacy producer's Produce v2 is refused wherever a 4.4 broker leads its partition (its "
                "server.log: Closing socket ... UnsupportedVersionException)"
                if self._is_broker(event.node_id)
                else "the brokers' channels to it (CONTROLLER listener) are back, counted as theirs, never a client's"
            )
            self._say(
                f"demo: roll: node {event.node_id} is back on Kafka {event.release}, every partition in sync "
                f"(restart {event.restart_seconds:.1f} s: shutdown {event.shutdown_seconds:.1f} s, start "
                f"{event.start_seconds:.1f} s, catch-up {event.catch_up_seconds:.1f} s). Its inferred release is "
                f"{UPGRADE_TO} (kafka_broker_release_info); {skew}; {refused}"
            )
            self._hold(3 * self._interval)
        elif isinstance(event, Finalized):
            levels = ", ".join(f"{feature} {level}" for feature, level in sorted(event.upgraded.items()))
            self._say(
                f"demo: roll: every node runs {UPGRADE_TO}; kafka-features upgrade {' '.join(event.args)} raised "
                f"the finalized features ({levels}; metadata.version was 21, 3.9-IV0): "
                "kafka_broker_finalized_feature_level (Feature levels) shows them from the next cycle. The "
                "legacy producer now fails on every broker"
            )

    def _is_broker(self, node_id: int) -> bool:
        """False for a dedicated controller, which serves no client: its restart moves the quorum, not clients."""
        return self._cluster.nodes[node_id].roles.broker

    def _relay_stop(self, roll_stop: threading.Event) -> None:
        while not roll_stop.is_set():
            if self._stopping():
                roll_stop.set()
                return
            time.sleep(0.2)

    def _step(self, line: str) -> None:
        self._say(f"demo: roll: {line}")

    def _inventory_again(self) -> None:
        if self._first_job is None or self._stopping():
            self._say(f"demo: the cluster runs Kafka {UPGRADE_TO}; Ctrl-C stops everything")
            return
        self._say(
            "demo: the inventory job runs again over the request logs and server.log (--incremental: only what is new "
            "since its first run); its rejections table will name the refused producer"
        )
        job = InventoryJob(
            brokers_log_dirs(self._data_dir),
            self._first_job.output,
            self._data_dir / "inventory-job-after-roll.log",
            self._say,
        )
        self.second_job = job
        job.start()
        while not job.done.wait(0.5):
            if self._stopping():
                return
        rejections = job.output / "current" / "rejections.csv"
        if job.returncode == 0 and rejections.is_file():
            with rejections.open(encoding="utf-8", newline="") as table:
                rows = [row for row in csv.DictReader(table) if row["api_name"] == "Produce"]
            named = sorted({row["client_id"] for row in rows if row["matched_by"] == "connection"})
            self._say(
                f"demo: the brokers refused {len(rows)} Produce v2 requests since the roll, from "
                f"{', '.join(named) or 'clients named by host only'} ({rejections})"
            )
        self._say(f"demo: the cluster runs Kafka {UPGRADE_TO}; Ctrl-C stops everything")
