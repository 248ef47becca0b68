"""The ZooKeeper-to-KRaft migration of a real 3.9 ZooKeeper-mode cluster, step by step as Kafka's migration guide has
operators do it (KIP-866; docs/operations "ZooKeeper to KRaft Migration" of 3.9):

1. KRaft controllers in migration mode: ``process.roles=controller`` with ``zookeeper.metadata.migration.enable`` and
   the cluster's ``zookeeper.connect``, formatted with the ZooKeeper cluster's own id (its brokers'
   ``meta.properties``);
2. each broker rolled into migration mode (still ZooKeeper mode, registered with the KRaft quorum too); once all are,
   the active controller copies the metadata from ZooKeeper ("Completed migration of metadata from ZooKeeper to
   KRaft" in its log) and becomes the cluster's controller, writing to both (dual-write);
3. each broker rolled to KRaft (``process.roles=broker``, ``node.id``, no ZooKeeper);
4. the controllers finalized: restarted without the migration flag nor ZooKeeper.

``Migration.steps()`` yields an event after each change users can see, so that a test can check the exporter between
steps and the demo can say what to look at. A broker is rolled only once every partition is fully replicated.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.ports import free_ports
from real_kafka.broker import ClusterLayout, KafkaNode, NodeFailed, NodeOptions
from real_kafka.cluster import KafkaCluster
from real_kafka.config import NodePorts, NodeRoles
from real_kafka.rolling_upgrade import wait_in_sync

__all__ = ["MIGRATED", "Migration", "MigrationStep", "zookeeper_cluster_id"]

#: What the active KRaft controller logs once it has copied the metadata from ZooKeeper (KRaftMigrationDriver).
MIGRATED = "Completed migration of metadata from ZooKeeper to KRaft"
_CLUSTER_ID = re.compile(r"^cluster\.id=(\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class MigrationStep:
    """A step done: ``name`` (controllers_started, broker_migrating, metadata_migrated, broker_kraft, finalized), the
    node it concerns (None for the cluster), and how long it took."""

    name: str
    node_id: int | None
    seconds: float


def zookeeper_cluster_id(broker: KafkaNode) -> str:
    """The cluster id a ZooKeeper-mode broker wrote into its log directory's meta.properties at its first start."""
    meta = broker.data_dir / "meta.properties"
    match = _CLUSTER_ID.search(meta.read_text())
    if match is None:
        raise NodeFailed(f"no cluster.id in {meta}")
    return match.group(1)


class Migration:
    """Migrates ``cluster`` (ZooKeeper mode, release 3.9) to KRaft with ``controller_ids`` dedicated controllers under
    ``directory``; ``options`` hold for the controllers (JMX, JVM options)."""

    def __init__(
        self,
        cluster: KafkaCluster,
        directory: Path,
        *,
        controller_ids: tuple[int, ...] = (3000,),
        options: NodeOptions | None = None,
        sync_timeout: float = 120.0,
    ) -> None:
        if cluster.zookeeper is None:
            raise ValueError("only a ZooKeeper-mode cluster can be migrated to KRaft")
        self.cluster = cluster
        self.zookeeper_connect = cluster.zookeeper.connect
        self.sync_timeout = sync_timeout
        brokers = list(cluster.nodes.values())
        ports = {node_id: free_ports(3) for node_id in controller_ids}
        self.voters = {node_id: controller for node_id, (controller, _, _) in ports.items()}
        self.cluster_id = ""
        self.controllers = {
            node_id: KafkaNode(
                directory / f"node-{node_id}",
                brokers[0].release,
                node_id,
                NodeRoles(broker=False, controller=True),
                NodePorts(None, None, controller, jmx, jmx_rmi),
                ClusterLayout("", self.voters, brokers=len(brokers)),
                options or NodeOptions(),
            )
            for node_id, (controller, jmx, jmx_rmi) in ports.items()
        }

    def migration_flags(self) -> dict[str, str]:
        """A controller's settings while the migration runs: ZooKeeper, and the brokers' inter-broker listener its
        channels to the ZooKeeper-mode brokers use."""
        return {
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": self.zookeeper_connect,
            "inter.broker.listener.name": "PLAINTEXT",
        }

    def layout(self, *, zookeeper: bool) -> ClusterLayout:
        return ClusterLayout(
            self.cluster_id,
            self.voters,
            brokers=len(self.cluster.nodes),
            zookeeper_connect=self.zookeeper_connect if zookeeper else None,
        )

    def steps(self) -> Iterator[MigrationStep]:
        """Run the migration, yielding after each step (the caller checks what it wants meanwhile)."""
        began = time.monotonic()
        self.cluster_id = zookeeper_cluster_id(next(iter(self.cluster.nodes.values())))
        for controller in self.controllers.values():
            controller.reconfigure(self.layout(zookeeper=False), extra=self.migration_flags())
            controller.format()
            controller.launch()
        for controller in self.controllers.values():
            controller.wait_ready()
        yield MigrationStep("controllers_started", None, time.monotonic() - began)
        for broker in self.cluster.nodes.values():
            yield self._roll(broker, self.layout(zookeeper=True), "broker_migrating")
        began = time.monotonic()
        self.wait_migrated()
        yield MigrationStep("metadata_migrated", None, time.monotonic() - began)
        for broker in self.cluster.nodes.values():
            yield self._roll(broker, self.layout(zookeeper=False), "broker_kraft")
        began = time.monotonic()
        for controller in self.controllers.values():
            controller.stop()
            controller.reconfigure(self.layout(zookeeper=False))
            controller.launch()
            controller.wait_ready()
        wait_in_sync(self.cluster.bootstrap(), self.sync_timeout)
        yield MigrationStep("finalized", None, time.monotonic() - began)

    def wait_migrated(self, timeout: float = 120.0) -> None:
        """Until a controller has logged that the metadata is copied from ZooKeeper."""
        deadline = time.monotonic() + timeout
        while not any(self._logged(controller, MIGRATED) for controller in self.controllers.values()):
            if time.monotonic() > deadline:
                tails = "".join(controller.tails() for controller in self.controllers.values())
                raise NodeFailed(f"no controller logged {MIGRATED!r} within {timeout:.0f} s{tails}")
            time.sleep(0.2)

    def stop(self) -> None:
        for controller in self.controllers.values():
            controller.terminate()
        for controller in self.controllers.values():
            controller.wait_stopped(30.0)

    def _roll(self, broker: KafkaNode, layout: ClusterLayout, name: str) -> MigrationStep:
        began = time.monotonic()
        wait_in_sync(self.cluster.bootstrap(), self.sync_timeout)
        broker.stop()
        broker.reconfigure(layout)
        broker.launch()
        broker.wait_ready()
        wait_in_sync(self.cluster.bootstrap(), self.sync_timeout)
        return MigrationStep(name, broker.node_id, time.monotonic() - began)

    @staticmethod
    def _logged(node: KafkaNode, text: str) -> bool:
        log = node.logs.server_log
        return log.is_file() and text in log.read_text(errors="replace")
