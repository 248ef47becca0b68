"""A node's ``server.properties``: a KRaft node's roles and static controller quorum, or a ZooKeeper-mode broker's
``broker.id`` and ``zookeeper.connect``; listeners on 127.0.0.1 only.

Listeners, each its own port: PLAINTEXT (brokers talk to each other on it too), SASL_SSL with SCRAM-SHA-512 when the
node has a certificate (a PEM key store, given inline so an unencrypted key needs no key password), CONTROLLER
(PLAINTEXT) on controllers. The quorum is static (``controller.quorum.voters``): 3.9 and 4.x both read it and it
needs no ``--standalone``/``--initial-controllers`` at format time, so one storage directory can be restarted
under either release (the rolling upgrade of issue 32).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BrokerTls", "NodePorts", "NodeRoles", "server_properties"]

SCRAM_MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class BrokerTls:
    """The SASL_SSL listener's certificate chain (leaf first) and its unencrypted PKCS#8 key, PEM files."""

    cert_file: Path
    key_file: Path


@dataclass(frozen=True)
class NodePorts:
    plaintext: int | None  # brokers only
    sasl_ssl: int | None  # brokers with a certificate only
    controller: int | None  # controllers only
    jmx: int
    jmx_rmi: int  # the TLS connector's port; unused without JMX TLS
    metrics: int | None = None  # the JMX exporter javaagent's HTTP port, when it runs


@dataclass(frozen=True)
class NodeRoles:
    broker: bool = True
    controller: bool = True

    @property
    def process_roles(self) -> str:
        return ",".join(role for role, on in (("broker", self.broker), ("controller", self.controller)) if on)


def server_properties(
    node_id: int,
    roles: NodeRoles,
    ports: NodePorts,
    voters: Mapping[int, int],
    data_dir: Path,
    *,
    brokers: int,
    tls: BrokerTls | None,
    extra: Mapping[str, str] | None = None,
    zookeeper_connect: str | None = None,
) -> str:
    """The file's text. ``voters`` maps each controller's node id to its CONTROLLER port; ``brokers`` is the
    cluster's broker count (internal topics are replicated up to 3). With ``zookeeper_connect`` the node is a
    ZooKeeper-mode broker (``broker.id``, no roles): ``roles`` must be a broker's only, and ``voters``, when given,
    are the KRaft quorum it migrates to."""
    listeners: dict[str, int | None] = {}
    if roles.broker:
        listeners["PLAINTEXT"] = ports.plaintext
        if tls is not None:
            listeners["SASL_SSL"] = ports.sasl_ssl
    if roles.controller:
        listeners["CONTROLLER"] = ports.controller
    missing = [name for name, port in listeners.items() if port is None]
    if missing:
        raise ValueError(f"node {node_id} has no port for {', '.join(missing)}")
    advertised = {name: port for name, port in listeners.items() if name != "CONTROLLER"}
    replication = min(3, brokers)
    settings: dict[str, str]
    if zookeeper_connect is not None:
        if roles.controller:
            raise ValueError(f"node {node_id}: a ZooKeeper-mode broker has no KRaft controller role")
        # The ZooKeeper-mode controller is elected among the brokers and talks to them on the inter-broker listener.
        settings = {"broker.id": str(node_id), "zookeeper.connect": zookeeper_connect}
        if voters:
            # A broker in the ZooKeeper-to-KRaft migration (3.4+): still in ZooKeeper mode, registered with the KRaft
            # quorum too, which becomes its controller (Kafka's migration guide, "Enter Migration Mode on the
            # Brokers"; the inter-broker protocol pinned to the release's, as the guide requires).
            settings |= {
                "zookeeper.metadata.migration.enable": "true",
                "controller.quorum.voters": _voters(voters),
                "controller.listener.names": "CONTROLLER",
            }
    else:
        settings = {
            "process.roles": roles.process_roles,
            "node.id": str(node_id),
            "controller.quorum.voters": _voters(voters),
            "controller.listener.names": "CONTROLLER",
        }
    settings |= {
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in listeners.items()),
        "listener.security.protocol.map": ",".join(
            f"{name}:{protocol}"
            # CONTROLLER in ZooKeeper mode too: a broker in migration reaches the KRaft controllers on it.
            for name, protocol in (("PLAINTEXT", "PLAINTEXT"), ("SASL_SSL", "SASL_SSL"), ("CONTROLLER", "PLAINTEXT"))
        ),
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": str(replication),
        "transaction.state.log.replication.factor": str(replication),
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # A test's broker has little to do: fewer threads start faster and use less memory.
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "2",
    }
    if zookeeper_connect is None:
        # Share groups (KIP-932) are 4.x and KRaft only; a ZooKeeper-mode release would log them as unknown.
        settings |= {
            "share.coordinator.state.topic.replication.factor": str(replication),
            "share.coordinator.state.topic.min.isr": "1",
        }
    if roles.broker:
        settings["advertised.listeners"] = ",".join(f"{name}://127.0.0.1:{port}" for name, port in advertised.items())
        settings["inter.broker.listener.name"] = "PLAINTEXT"
    if roles.broker and tls is not None:
        chain = _one_line_pem(tls.cert_file.read_text())
        key = _one_line_pem(tls.key_file.read_text())
        # PEM key stores are read from 2.7 on (KIP-651), so by every release fetched here.
        settings |= {
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
            "listener.name.sasl_ssl.ssl.keystore.certificate.chain": chain,
            "listener.name.sasl_ssl.ssl.keystore.key": key,
        }
    settings |= dict(extra or {})
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _voters(voters: Mapping[int, int]) -> str:
    return ",".join(f"{voter}@127.0.0.1:{port}" for voter, port in sorted(voters.items()))


def _one_line_pem(text: str) -> str:
    # A properties value ends at the line's end; Java's Properties turns the escaped \n back into new lines.
    return text.strip().replace("\n", "\\n")
