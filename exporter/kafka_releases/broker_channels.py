"""The network channels a broker opens to other nodes itself, and how the node at the other end counts them in its
KIP-511 client gauges (docs/kafka-facts/brokers-own-connections.md).

Every such channel is a NetworkClient whose Selector registers `connection-count` under the channel's metric group
(the MBean type). A channel that sends ApiVersions is counted as Kafka's Java client at the holder's exact version;
one that never does is counted as `unknown`, like a client too old to name itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from exporter.policy.versions import parse_version

UNKNOWN_SOFTWARE = ("unknown", "unknown")
JAVA_CLIENT = "apache-kafka-java"


class Towards(StrEnum):
    """Which listener of the destination a channel connects to (each broker says its names in DescribeConfigs)."""

    INTER_BROKER = "inter_broker"  # inter.broker.listener.name (or security.inter.broker.protocol)
    # The active controller: a KRaft holder's first of controller.listener.names; a ZooKeeper-mode holder's
    # controller is a broker, reached on control.plane.listener.name or else the inter-broker listener
    # (MetadataCacheControllerNodeProvider).
    CONTROLLER = "controller"
    # From a ZooKeeper-mode controller to every broker: control.plane.listener.name, else the inter-broker listener
    # (ControllerChannelManager).
    CONTROL_PLANE = "control_plane"


@dataclass(frozen=True, slots=True)
class BrokerChannel:
    #: Kafka's metric group without "-metrics": the MBean type `<channel>-metrics`, and our `channel` label.
    name: str
    #: What the operator reads on the status page.
    title: str
    towards: Towards
    #: The MBean tag that names the destination node, when Kafka names it.
    destination_tag: str | None = None
    #: The first release whose channel sends ApiVersions (so names itself); None: no release does.
    names_itself_from: str | None = "0.0.0"
    #: The clientId its requests carry, a regular expression (see
    #: docs/kafka-facts/brokers-own-connections.md#client-ids-in-the-request-log); None where it could be a client's
    #: too (the controller channels send the bare node id).
    client_id: str | None = None
    #: Whether its connection goes to the cluster's active controller, the one node at a time (the ZooKeeper-mode
    #: controller broker, or the KRaft quorum's leader): then it is placed on that node when the readings say which.
    to_active_controller: bool = False
    #: The KRaft quorum's channel: a node other than the leader holds one connection to the leader (observers fetch
    #: from it, followers too) and may hold others to voters (votes, a former leader); the leader's go to voters.
    quorum: bool = False
    #: The first release that has the channel at all; None: every release the exporter knows of. What an unread
    #: broker may hold is reckoned from the channels its release has: one it cannot have would hide a client.
    exists_from: str | None = None

    def exists_in(self, holder_version: str) -> bool:
        """Whether a broker of ``holder_version`` can hold this channel (True when either version is unreadable)."""
        if self.exists_from is None:
            return True
        holder, first = parse_version(holder_version), parse_version(self.exists_from)
        return holder is None or first is None or holder >= first

    def appears_as(self, holder_version: str) -> tuple[str, str]:
        """The (software name, version) the destination's gauges count this channel's connections under."""
        if self.names_itself_from is None:
            return UNKNOWN_SOFTWARE
        holder = parse_version(holder_version)
        first = parse_version(self.names_itself_from)
        if holder is None or first is None or holder < first:
            return UNKNOWN_SOFTWARE
        return (JAVA_CLIENT, holder_version)


CHANNELS: tuple[BrokerChannel, ...] = (
    BrokerChannel(
        "replica-fetcher",
        "replica fetchers",
        Towards.INTER_BROKER,
        destination_tag="broker-id",
        names_itself_from=None,
        client_id=r"broker-\d+-fetcher-\d+",
    ),
    # KAFKA-20322 (commit a0203dc0fc): the marker channel sends ApiVersions from 4.2.1 and 4.3.0 on, not in 4.2.0.
    BrokerChannel(
        "txn-marker-channel",
        "transaction markers",
        Towards.INTER_BROKER,
        names_itself_from="4.2.1",
        client_id=r"broker-\d+-txn-marker-sender",
    ),
    # From 3.6.0 (KIP-890's verification); it sends ApiVersions from 3.7.1 on (047cbe7a2db on the 3.7 branch), in both
    # modes.
    BrokerChannel(
        "AddPartitionsManager-channel",
        "AddPartitionsToTxn verification",
        Towards.INTER_BROKER,
        names_itself_from="3.7.1",
        client_id=r"AddPartitionsManager-client--?\d+",
        exists_from="3.6.0",
    ),
    BrokerChannel("Persister-channel", "share-group state persister", Towards.INTER_BROKER),
    BrokerChannel("NetworkPartitionMetadataClient-channel", "share-group partition offsets", Towards.INTER_BROKER),
    BrokerChannel("ShareGroupDLQManager-channel", "share-group dead-letter queue", Towards.INTER_BROKER),
    BrokerChannel("raft-channel", "KRaft quorum", Towards.CONTROLLER, client_id=r"raft-client-\d+", quorum=True),
    BrokerChannel("forwarding", "request forwarding to the controller", Towards.CONTROLLER, to_active_controller=True),
    BrokerChannel("heartbeat", "broker heartbeats and registration", Towards.CONTROLLER, to_active_controller=True),
    BrokerChannel("registration", "controller registration (KIP-919)", Towards.CONTROLLER, to_active_controller=True),
    BrokerChannel("alter-partition", "AlterPartition (ISR changes)", Towards.CONTROLLER, to_active_controller=True),
    BrokerChannel("directory-assignments", "log directory assignments", Towards.CONTROLLER, to_active_controller=True),
    # ZooKeeper mode (2.8 to 3.9; docs/kafka-facts/brokers-own-connections.md#zookeeper-mode). The controller's
    # channel to each live broker, itself included, never sends ApiVersions.
    BrokerChannel(
        "controller-channel",
        "ZooKeeper-mode controller to brokers",
        Towards.CONTROL_PLANE,
        destination_tag="broker-id",
        names_itself_from=None,
    ),
    # Built only while the broker shuts down, to ask the controller to move its leaderships away; always on the
    # inter-broker listener, never the control plane's.
    BrokerChannel(
        "kafka-server-controlled-shutdown",
        "controlled shutdown",
        Towards.INTER_BROKER,
        names_itself_from=None,
        to_active_controller=True,
    ),
    # The ISR channel before it was named alter-partition in 3.5: alterIsrChannel (2.7-2.8), alterIsr (3.0-3.1),
    # alterPartition (3.2-3.4).
    BrokerChannel("alterIsrChannel", "AlterIsr (ISR changes)", Towards.CONTROLLER, to_active_controller=True),
    BrokerChannel("alterIsr", "AlterIsr (ISR changes)", Towards.CONTROLLER, to_active_controller=True),
    BrokerChannel("alterPartition", "AlterPartition (ISR changes)", Towards.CONTROLLER, to_active_controller=True),
    # A ZooKeeper-mode broker's registration and heartbeats to the KRaft controller during the migration (3.4+).
    BrokerChannel(
        "quorum", "migration heartbeats to the KRaft controller", Towards.CONTROLLER, to_active_controller=True
    ),
)
BY_NAME: dict[str, BrokerChannel] = {channel.name: channel for channel in CHANNELS}

_OWN_CLIENT_IDS = re.compile("|".join(f"(?:{c.client_id})" for c in CHANNELS if c.client_id is not None))


def is_broker_channel_client_id(client_id: str | None) -> bool:
    """Whether a request log's clientId is one of the brokers' own channels' (checked on 3.9.2 and 4.4.0 brokers'
    request logs): such an identity is a broker, not a client running that software."""
    return client_id is not None and _OWN_CLIENT_IDS.fullmatch(client_id) is not None
