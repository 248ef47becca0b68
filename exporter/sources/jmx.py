"""JMX source: the KIP-511 client gauges and KIP-896 deprecated-request meters of one broker.

Two transports read the same queries and return the same JSON items (so `parse_reading` serves both): the
long-lived bridge (exporter/sources/jmx_bridge/, one JVM keeping a connection per broker) and the per-call
path here, which starts jmxquery's bundled JMXQuery jar once per broker per cycle (every query batched in one
call). We launch that JVM ourselves: jmxquery's own timeout path crashes (it decodes a None output) and
without a timeout the jar waits 60 s on an endpoint that accepts TCP and never answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

from jmxquery import JAR_PATH, JMXQuery

from exporter.config.settings import ClusterConfig
from exporter.kafka_releases.broker_channels import BY_NAME as CHANNELS
from exporter.snapshot import ChannelConnections, ClientConnections, DeprecatedRequests, JmxReading, SourceResult
from exporter.sources.base import Poll, Reason, SourceError, SourceName
from exporter.sources.discovery import DiscoverySource, PerBrokerSource, url_host
from exporter.sources.gauge_reading import gauge_reading
from exporter.sources.object_name import ObjectName, parse_object_name

log = logging.getLogger(__name__)

# docs/kafka-facts/jmx-mbeans.md#client-gauges: the per-client gauge has exactly these tags, in this order. The
# TLS-cipher gauge shares type and attribute name (`connections`) but has cipher/protocol tags instead.
CLIENT_GAUGE_KEYS = frozenset({"type", "clientSoftwareName", "clientSoftwareVersion", "listener", "networkProcessor"})
# docs/kafka-facts/jmx-mbeans.md#deprecated-requests-meter: KIP-896 meter, created lazily for deprecated versions.
DEPRECATED_KEYS = frozenset({"type", "name", "request", "version", "clientSoftwareName", "clientSoftwareVersion"})

QUERIES: tuple[JMXQuery, ...] = (
    JMXQuery(
        "kafka.server:type=socket-server-metrics,clientSoftwareName=*,clientSoftwareVersion=*,"
        "listener=*,networkProcessor=*",
        "connections",
    ),
    JMXQuery("kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,*", "Count"),
    # The broker's own channels (docs/kafka-facts/brokers-own-connections.md): these patterns cover every channel
    # of 2.8 to 4.x; types that are not channels we know are left out by parse_reading.
    JMXQuery("kafka.server:type=replica-fetcher-metrics,broker-id=*,fetcher-id=*", "connection-count"),
    JMXQuery("kafka.server:type=*-channel-metrics", "connection-count"),
    JMXQuery("kafka.server:type=*-metrics,BrokerId=*", "connection-count"),
    JMXQuery("kafka.server:type=controller-channel-metrics,broker-id=*", "connection-count"),
    JMXQuery("kafka.server:type=kafka-server-controlled-shutdown-metrics", "connection-count"),
    JMXQuery("kafka.server:type=app-info,id=*", "Version"),
    # Which node the channels without a named destination go to: the active controller
    # (docs/kafka-facts/brokers-own-connections.md#which-node-holds-the-other-end).
    JMXQuery("kafka.controller:type=KafkaController,name=ActiveControllerCount", "Value"),
    JMXQuery("kafka.server:type=raft-metrics", "current-leader"),
    # The ZooKeeper-to-KRaft migration: its state, and the brokers a KRaft controller's migration channel manager
    # sends to, whose connections Kafka counts in no connection-count.
    JMXQuery("kafka.controller:type=KafkaController,name=ZkMigrationState", "Value"),
    JMXQuery("kafka.controller:type=ControllerChannelManager,name=QueueSize,broker-id=*", "Value"),
)

# How much of the jar's stderr/stdout goes into an error message: enough for the root cause.
_DETAIL_CHARS = 300


class JmxError(SourceError):
    """A failed JMX call."""


@dataclass(frozen=True)
class JmxTarget:
    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class JavaRuntime:
    path: str = "java"
    options: tuple[str, ...] = ()


def build_command(target: JmxTarget, java: JavaRuntime, queries: Sequence[JMXQuery] = QUERIES) -> list[str]:
    """The jar's command line (as jmxquery builds it). It holds the password: never log it."""
    command = [java.path, *java.options, "-jar", JAR_PATH, "-url", target.url, "-json"]
    if target.username:
        command += ["-u", target.username, "-p", target.password or ""]
    command += ["-q", "".join(query.to_query_string() + ";" for query in queries)]
    return command


def redact(text: str, target: JmxTarget) -> str:
    text = " ".join(text.split())[:_DETAIL_CHARS]
    if target.password:
        text = text.replace(target.password, "***")
    return text


def authentication_failed(target: JmxTarget) -> JmxError:
    return JmxError(
        Reason.AUTHENTICATION,
        f"JMX authentication failed at {target.url} for user {target.username or '(none)'}: "
        "check the JMX username and password",
    )


def _classify_failure(returncode: int, stdout: str, stderr: str, target: JmxTarget) -> JmxError:
    if "SecurityException" in stderr or "Authentication failed" in stderr or "Credentials required" in stderr:
        return authentication_failed(target)
    try:
        reported = json.loads(stdout, strict=False)
    except ValueError:
        reported = None
    if isinstance(reported, dict) and "error" in reported:
        return JmxError(
            Reason.CONNECTION,
            f"cannot connect to JMX at {target.url}: {redact(str(reported.get('message')), target)}",
        )
    detail = redact(stderr or stdout, target) or "no output"
    return JmxError(Reason.JMX_ERROR, f"JMX query at {target.url} failed (exit {returncode}): {detail}")


async def run_queries(
    target: JmxTarget, java: JavaRuntime, deadline_seconds: float, queries: Sequence[JMXQuery] = QUERIES
) -> list[dict]:
    """Run the jar once for all `queries`; kill it when `deadline_seconds` pass."""
    try:
        # No shell: the password stays an argv element of our own child, never a shell string or a log line.
        process = await asyncio.create_subprocess_exec(
            *build_command(target, java, queries),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise JmxError(Reason.JAVA_NOT_FOUND, f"java executable {java.path!r} not found; set java.path") from None
    try:
        stdout_bytes, stderr_bytes = await asyncio.wait_for(process.communicate(), deadline_seconds)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise JmxError(
            Reason.TIMEOUT, f"JMX query at {target.url} did not finish within {deadline_seconds:g} s"
        ) from None
    except asyncio.CancelledError:
        process.kill()
        await process.wait()
        raise
    stdout = stdout_bytes.decode("utf-8", "replace")
    stderr = stderr_bytes.decode("utf-8", "replace")
    if process.returncode != 0:
        raise _classify_failure(process.returncode or 0, stdout, stderr, target)
    try:
        # The jar writes raw control characters inside strings; strict=False accepts them.
        items = json.loads(stdout or "[]", strict=False)
    except ValueError:
        raise JmxError(
            Reason.INVALID_RESPONSE, f"JMX query at {target.url} returned no JSON: {redact(stdout, target)}"
        ) from None
    if not isinstance(items, list):
        raise JmxError(
            Reason.INVALID_RESPONSE, f"JMX query at {target.url} returned {type(items).__name__}, not a list"
        )
    return items


def _count(value: object) -> int | None:
    # Kafka's gauge is an Integer but its MBeanInfo says double; the jar may hand back either.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(value)


def _channel(name: ObjectName, count: int) -> ChannelConnections | None:
    """The channel an item's MBean is the selector metrics of, when it is one we know."""
    props = name.properties
    kind = props.get("type", "").removesuffix("-metrics")
    channel = CHANNELS.get(kind)
    if name.domain != "kafka.server" or channel is None or not props["type"].endswith("-metrics"):
        return None
    destination = props.get(channel.destination_tag) if channel.destination_tag else None
    if channel.destination_tag is not None and destination is None:
        return None
    return ChannelConnections(channel.name, destination, count)


def parse_reading(items: Iterable[dict]) -> JmxReading:
    """Turn the jar's JSON items into a reading; items of other MBean shapes are ignored."""
    clients: list[ClientConnections] = []
    deprecated: list[DeprecatedRequests] = []
    channels: list[ChannelConnections] = []
    release: str | None = None
    active_controller: bool | None = None
    quorum_leader: int | None = None
    migration_state: int | None = None
    propagating_to: list[str] = []
    for item in items:
        try:
            name = parse_object_name(str(item["mBeanName"]))
        except (KeyError, ValueError):
            log.debug("skipping JMX item without a valid mBeanName: %r", item)
            continue
        attribute = item.get("attribute")
        if attribute == "Version" and name.properties.get("type") == "app-info" and isinstance(item.get("value"), str):
            release = str(item["value"])
            continue
        count = _count(item.get("value"))
        if count is None:
            continue
        props = name.properties
        if attribute == "Value" and name.domain == "kafka.controller" and props.get("name") == "ActiveControllerCount":
            active_controller = count > 0
            continue
        if attribute == "Value" and name.domain == "kafka.controller" and props.get("name") == "ZkMigrationState":
            migration_state = count
            continue
        if attribute == "Value" and name.domain == "kafka.controller" and props.get("name") == "QueueSize":
            if "broker-id" in props:
                propagating_to.append(props["broker-id"])
            continue
        if attribute == "current-leader" and name.domain == "kafka.server" and props.get("type") == "raft-metrics":
            # -1 while the node knows no leader.
            quorum_leader = count if count >= 0 else None
            continue
        if attribute == "connection-count":
            channel = _channel(name, count)
            if channel is not None:
                channels.append(channel)
            continue
        if (
            name.domain == "kafka.server"
            and attribute == "connections"
            and name.keys == CLIENT_GAUGE_KEYS
            and props["type"] == "socket-server-metrics"
        ):
            clients.append(
                ClientConnections(
                    listener=props["listener"],
                    network_processor=props["networkProcessor"],
                    software_name=props["clientSoftwareName"],
                    software_version=props["clientSoftwareVersion"],
                    connections=count,
                )
            )
        elif (
            name.domain == "kafka.network"
            and attribute == "Count"
            and name.keys == DEPRECATED_KEYS
            and props["name"] == "DeprecatedRequestsPerSec"
        ):
            deprecated.append(
                DeprecatedRequests(
                    request=props["request"],
                    version=props["version"],
                    software_name=props["clientSoftwareName"],
                    software_version=props["clientSoftwareVersion"],
                    count=count,
                )
            )
    return gauge_reading(
        clients,
        deprecated,
        channels,
        channels_read=True,
        release=release,
        active_controller=active_controller,
        quorum_leader=quorum_leader,
        migration_state=migration_state,
        propagating_to=propagating_to,
    )


async def read_broker(target: JmxTarget, java: JavaRuntime, deadline_seconds: float) -> JmxReading:
    return parse_reading(await run_queries(target, java, deadline_seconds))


class JmxTransport(ABC):
    """How the JMX queries reach a broker; one per exporter, shared by every cluster's JmxSource."""

    # Whether each read takes one of the cycle's `collection.max_concurrency` slots (a read that starts a JVM).
    uses_slots: ClassVar[bool]

    @abstractmethod
    async def read(self, broker: str, target: JmxTarget, deadline_seconds: float) -> list[dict]:
        """The JSON items of `QUERIES` at `target`, as jmxquery's jar prints them; `broker` names the broker
        across cycles (cluster and broker id). Raises JmxError."""

    def close(self) -> None:  # noqa: B027 - the per-call transport holds nothing open
        """Release what the transport keeps open across cycles."""


class PerCallTransport(JmxTransport):
    """A new JVM per broker per cycle (jmxquery's jar); the password is on that JVM's command line."""

    uses_slots = True

    def __init__(self, java: JavaRuntime) -> None:
        self._java = java

    async def read(self, broker: str, target: JmxTarget, deadline_seconds: float) -> list[dict]:
        return await run_queries(target, self._java, deadline_seconds)


def jmx_url_for(host: str, port: int) -> str:
    return f"service:jmx:rmi:///jndi/rmi://{url_host(host)}:{port}/jmxrmi"


class JmxSource(PerBrokerSource):
    """The cluster's listed brokers at their JMX endpoints, or else the brokers discovery knows at jmx.port.
    Reads take the cycle's concurrency slots when the transport starts a JVM per read."""

    name = SourceName.JMX

    def __init__(
        self,
        cluster: ClusterConfig,
        transport: JmxTransport,
        deadline_seconds: float,
        discovery: DiscoverySource | None,
    ) -> None:
        super().__init__(cluster, discovery)
        self.uses_slots = transport.uses_slots
        self._transport = transport
        self._deadline_seconds = deadline_seconds
        # Each broker's last items and the reading made of them. A broker's answer is most cycles the same as the
        # one before (its gauges change when a client comes or goes): comparing the items took 1 us where parsing
        # them again took 80 (31 items of a real 4.4.0 broker), for about 15 KB kept per broker.
        self._last: dict[str, tuple[list[dict], JmxReading]] = {}

    def _targets(self) -> list[tuple[str, JmxTarget]]:
        cluster = self._config
        username, password = cluster.credentials()
        port = cluster.jmx.port if cluster.jmx else None
        urls = self._broker_urls(port, lambda broker: broker.jmx_url, jmx_url_for)
        return [(broker, JmxTarget(url, username, password)) for broker, url in urls]

    async def _read(self, broker: str, target: JmxTarget) -> JmxReading:
        items = await self._transport.read(f"{self.cluster}/{broker}", target, self._deadline_seconds)
        last = self._last.get(broker)
        if last is not None and last[0] == items:
            return last[1]
        reading = parse_reading(items)
        self._last[broker] = (items, reading)
        return reading

    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        targets = self._targets()
        polled = {broker for broker, _ in targets}
        for broker in [b for b in self._last if b not in polled]:
            del self._last[broker]
        return [Poll(broker, partial(self._read, broker, target)) for broker, target in targets]
