"""A real Kafka cluster on 127.0.0.1: KRaft nodes (one combined node, ``process.roles=broker,controller``, or
several: combined, or dedicated controllers, ``process.roles=controller``, beside brokers) or ZooKeeper-mode brokers
beside a ZooKeeper server of their release's own (``zookeeper=True``, releases before 4.0). Every port is free at
start, every file under the given directory.

Dedicated controllers (``controllers=N``) are numbered apart from the brokers, from 3000 as in a cluster migrated
from ZooKeeper (whose brokers keep their ids and whose new controllers take ids no broker has), and are the quorum's
only voters; the brokers run ``process.roles=broker``. Such a cluster stops its brokers first, then its controllers:
a broker's controlled shutdown asks the active controller.

A ZooKeeper-mode cluster starts as an operator starts one: ZooKeeper first, then the SCRAM credentials written into
it with ``kafka-configs --zookeeper`` (``kafka.admin.ConfigCommand``, which keeps ``--zookeeper`` for SCRAM users
from 3.0 on exactly so that brokers can authenticate each other before any of them runs, KIP-554), then the
brokers; it stops the other way round (a broker's controlled shutdown needs ZooKeeper).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import logging
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from harness.ports import free_ports
from real_kafka.broker import ClusterLayout, KafkaNode, NodeFailed, NodeOptions, StartTiming
from real_kafka.config import SCRAM_MECHANISM, NodePorts, NodeRoles
from real_kafka.distribution import distribution
from real_kafka.zookeeper import ZooKeeperServer

log = logging.getLogger(__name__)

__all__ = ["FIRST_CONTROLLER_ID", "KafkaCluster", "new_cluster_id", "start_clusters"]

#: Where dedicated controllers' node ids begin (KafkaCluster(controllers=N)).
FIRST_CONTROLLER_ID = 3000


def new_cluster_id() -> str:
    """A random cluster id as Kafka writes one (``kafka-storage random-uuid``: a UUID in URL-safe base64, no
    padding). Like Kafka's ``Uuid.randomUuid`` (clients/src/main/java/org/apache/kafka/common/Uuid.java), never one
    that starts with "-" (a ZooKeeper-mode broker's own id can: broker.py formats with ``--cluster-id=<id>``)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class KafkaCluster:
    """Nodes of one cluster; a context manager that starts them all and stops them all."""

    def __init__(
        self,
        directory: Path,
        release: str,
        *,
        nodes: int = 1,
        separate_controller: bool = False,
        first_node_id: int = 1,
        options: NodeOptions | None = None,
        node_properties: Mapping[int, Mapping[str, str]] | None = None,
        zookeeper: bool = False,
        controllers: int = 0,
        first_controller_id: int = FIRST_CONTROLLER_ID,
    ) -> None:
        """``nodes`` nodes of ``release``, numbered from ``first_node_id``; with ``separate_controller`` the first
        one is a controller only and the others brokers only; with ``controllers`` that many dedicated controllers
        (``process.roles=controller``, the quorum's voters) numbered from ``first_controller_id`` beside ``nodes``
        brokers only; otherwise every node is combined and a voter. With ``zookeeper`` every node is a
        ZooKeeper-mode broker and the cluster runs a ZooKeeper server. ``options`` hold for every node;
        ``node_properties`` (node id -> server.properties settings) add to or override ``options.extra_properties``
        on the nodes they name only."""
        options = options or NodeOptions()
        if nodes < 1 or (separate_controller and nodes < 2):
            raise ValueError("a cluster needs a node, and a separate controller needs a broker beside it")
        if controllers < 0 or (controllers and separate_controller):
            raise ValueError("dedicated controllers are either counted (controllers=N) or the first node, not both")
        if zookeeper and (separate_controller or controllers):
            raise ValueError("a ZooKeeper-mode cluster has no KRaft controller: its controller is one of its brokers")
        broker_ids = range(first_node_id, first_node_id + nodes)
        controller_ids = range(first_controller_id, first_controller_id + controllers)
        if set(broker_ids) & set(controller_ids):
            raise ValueError(f"controller ids from {first_controller_id} overlap the brokers' from {first_node_id}")
        self.directory = directory
        self.scram_users = dict(options.scram_users)
        self.zookeeper = ZooKeeperServer(directory / "zookeeper", release, free_ports(1)[0]) if zookeeper else None
        ids = [*broker_ids, *controller_ids]
        node_properties = node_properties or {}
        strangers = sorted(set(node_properties) - set(ids))
        if strangers:
            raise ValueError(f"node_properties name nodes the cluster does not have: {strangers}")
        node_options = {
            node_id: dataclasses.replace(
                options, extra_properties={**options.extra_properties, **node_properties[node_id]}
            )
            if node_id in node_properties
            else options
            for node_id in ids
        }
        if controllers:
            roles = {
                node_id: NodeRoles(broker=node_id in broker_ids, controller=node_id in controller_ids)
                for node_id in ids
            }
        else:
            roles = {
                node_id: NodeRoles(
                    broker=not (separate_controller and node_id == ids[0]),
                    controller=not zookeeper and (not separate_controller or node_id == ids[0]),
                )
                for node_id in ids
            }
        ports = {
            node_id: self._ports(roles[node_id], with_metrics=options.jmx_exporter_rules is not None) for node_id in ids
        }
        voters = {node_id: port.controller for node_id, port in ports.items() if port.controller is not None}
        layout = ClusterLayout(
            new_cluster_id(),
            voters,
            brokers=sum(role.broker for role in roles.values()),
            zookeeper_connect=self.zookeeper.connect if self.zookeeper is not None else None,
        )
        self.nodes = {
            node_id: KafkaNode(
                directory / f"node-{node_id}",
                release,
                node_id,
                roles[node_id],
                ports[node_id],
                layout,
                node_options[node_id],
            )
            for node_id in ids
        }

    @staticmethod
    def _ports(roles: NodeRoles, *, with_metrics: bool) -> NodePorts:
        plaintext, sasl_ssl, controller, jmx, jmx_rmi, metrics = free_ports(6)
        return NodePorts(
            plaintext=plaintext if roles.broker else None,
            sasl_ssl=sasl_ssl if roles.broker else None,
            controller=controller if roles.controller else None,
            jmx=jmx,
            jmx_rmi=jmx_rmi,
            metrics=metrics if with_metrics else None,
        )

    @property
    def cluster_id(self) -> str:
        return next(iter(self.nodes.values())).layout.cluster_id

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id]

    def brokers(self) -> Iterator[KafkaNode]:
        return (node for node in self.nodes.values() if node.roles.broker)

    def controllers(self) -> Iterator[KafkaNode]:
        """The KRaft voters: dedicated controllers, or combined nodes (none in ZooKeeper mode)."""
        return (node for node in self.nodes.values() if node.roles.controller)

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        return ",".join(node.bootstrap(listener) for node in self.brokers())

    def start(self, timeout: float = 120.0) -> list[StartTiming]:
        """Format every node, launch them all, wait for each (see ``start_clusters``)."""
        return start_clusters(self, timeout=timeout)[0]

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to every node at once, SIGKILL to those still running after ``timeout`` seconds. One node at a
        time would hang: the last voters of a quorum whose majority is gone cannot finish a controlled shutdown.
        Dedicated controllers once the brokers are gone (a broker's controlled shutdown asks the active
        controller), ZooKeeper last."""
        deadline = time.monotonic() + timeout
        dedicated = [node for node in self.nodes.values() if node.roles.controller and not node.roles.broker]
        others = [node for node in self.nodes.values() if node not in dedicated]
        for group in (others, dedicated):
            for node in group:
                node.terminate()
            for node in group:
                node.wait_stopped(max(0.0, deadline - time.monotonic()))
        if self.zookeeper is not None:
            self.zookeeper.terminate()
            self.zookeeper.wait_stopped(10.0)

    def launch_zookeeper(self) -> None:
        """ZooKeeper-mode only: start ZooKeeper and return; ``add_scram_users`` waits for it. ``start_clusters``
        calls both, each for every cluster at once: a ZooKeeper and each user's tool are a JVM start each."""
        if self.zookeeper is not None:
            self.zookeeper.launch()

    def add_scram_users(self) -> list[tuple[str, subprocess.Popen[bytes]]]:
        """Once ZooKeeper answers, start writing the SCRAM users into it (the brokers' first start needs them);
        ``finish_scram_users`` waits."""
        if self.zookeeper is None:
            return []
        self.zookeeper.wait_ready()
        classpath = distribution(next(iter(self.nodes.values())).release).classpath
        return [
            (
                user,
                subprocess.Popen(
                    [
                        "java",
                        "-Xshare:auto",
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        classpath,
                        "kafka.admin.ConfigCommand",
                        "--zookeeper",
                        self.zookeeper.connect,
                        "--alter",
                        "--entity-type",
                        "users",
                        "--entity-name",
                        user,
                        "--add-config",
                        f"{SCRAM_MECHANISM}=[password={password}]",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                ),
            )
            for user, password in self.scram_users.items()
        ]

    @staticmethod
    def finish_scram_users(adding: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
        for user, process in adding:
            output, _ = process.communicate(timeout=120)
            if process.returncode != 0:
                # The command line holds the password: only the tool's own output is shown.
                text = output.decode(errors="replace").strip()[-2000:]
                raise NodeFailed(f"kafka-configs --zookeeper could not add SCRAM user {user!r}: {text}")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


#: What a KRaft controller (3.7 to 3.9) logs when the cluster's bootstrap records were lost: the quorum's first leader
#: appended them (the metadata.version the storage was formatted with) and lost the leadership before they were
#: committed, so the next leader found a log without a metadata.version and took it for 3.0-IV1 for good
#: (ActivationRecordsGenerator). A suite run met it once: six elections in two seconds while three JVMs started on two
#: cores; the cluster then ran at 3.0-IV1 and 4.4.0 refused its log.
LOST_BOOTSTRAP = "No metadata.version feature level record was found in the log"


def lost_bootstrap(cluster: KafkaCluster, since: Mapping[int, int]) -> bool:
    """Whether a controller of ``cluster`` logged LOST_BOOTSTRAP after byte ``since[node_id]`` of its server.log."""
    for node in cluster.controllers():
        with contextlib.suppress(FileNotFoundError), node.logs.server_log.open("rb") as log:
            log.seek(since.get(node.node_id, 0))
            if LOST_BOOTSTRAP.encode() in log.read():
                return True
    return False


def start_clusters(*clusters: KafkaCluster, timeout: float = 120.0) -> list[list[StartTiming]]:
    """Start several clusters together: every node formatted in parallel, then every node launched (a quorum
    elects a leader only once a majority runs), then each waited for. A KRaft cluster whose bootstrap records were
    lost (LOST_BOOTSTRAP) is stopped, its storage formatted again and started once more. On failure everything is
    stopped."""
    nodes = [node for cluster in clusters for node in cluster.nodes.values()]
    formatting: list[tuple[KafkaNode, subprocess.Popen[bytes] | None]] = []
    adding: list[tuple[str, subprocess.Popen[bytes]]] = []
    try:
        for cluster in clusters:
            cluster.launch_zookeeper()
        adding += [process for cluster in clusters for process in cluster.add_scram_users()]
        formatting += [(node, node.begin_format()) for node in nodes]
        KafkaCluster.finish_scram_users(adding)
        for node, process in formatting:
            node.finish_format(process)
        for node in nodes:
            node.launch()
        timings = [[node.wait_ready(timeout) for node in cluster.nodes.values()] for cluster in clusters]
        for index, cluster in enumerate(clusters):
            if cluster.zookeeper is not None or not lost_bootstrap(cluster, {}):
                continue
            log.warning("Kafka lost the bootstrap metadata.version of %s; formatting it again", cluster.directory)
            cluster.stop()
            since = {node.node_id: node.logs.server_log.stat().st_size for node in cluster.controllers()}
            for node in cluster.nodes.values():
                shutil.rmtree(node.data_dir)
            formatting = [(node, node.begin_format()) for node in cluster.nodes.values()]
            for node, process in formatting:
                node.finish_format(process)
            for node in cluster.nodes.values():
                node.launch()
            timings[index] = [node.wait_ready(timeout) for node in cluster.nodes.values()]
            if lost_bootstrap(cluster, since):
                raise NodeFailed(f"Kafka lost the bootstrap metadata.version of {cluster.directory} twice")
        return timings
    except BaseException:
        for _, process in [*formatting, *adding]:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        for cluster in clusters:
            cluster.stop()
        raise
