"""A broker's socket-server bookkeeping, handed to Kafka's own code in the MBean host.

Each network processor is a real server-side ``org.apache.kafka.common.network.Selector`` in the MBean host's JVM
(see ``MBeanHost.java``); every connection the asyncio side accepts is opened there too, and its client and cipher
information go to the channel's metadata registry. Kafka's ``IntGaugeSuite`` and ``JmxReporter`` then make the
KIP-511 ``connections`` MBeans: unknown first, lingering zeros, eviction and the 100-key limit are Kafka's.

What stays here: the connection's current ``ClientInformation`` (a request is metered with the one its request
context was built with, docs/kafka-facts/request-log.md#client-information-lag), and the KIP-896 meter, a Yammer
meter in Kafka's core that kafka-clients does not hold, set as a plain MBean.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from exporter.sources.object_name import parse_object_name

from .releases import Release

UNKNOWN = "unknown"  # ClientInformation.UNKNOWN_NAME_OR_VERSION (clients/.../network/ClientInformation.java)
SOCKET_SERVER = "kafka.server:type=socket-server-metrics"
_KIP_511_GAUGES = r"kafka\.server:type=socket-server-metrics,(clientSoftwareName|cipher)=.*"
#: The key properties of a KIP-511 client gauge's ObjectName, in Kafka's order.
CLIENT_TAGS = ("type", "clientSoftwareName", "clientSoftwareVersion", "listener", "networkProcessor")

#: One MBean attribute as a JMX client reads it: (object name, attribute, value).
Bean = tuple[str, str, int | float | str]


class GaugeSink(Protocol):
    """The part of :class:`kafka_double.mbean_host.MBeanHost` a broker's metrics need."""

    def add_processor(self, broker_id: int, listener: str, processor_id: int) -> None: ...

    def exclude_from_jmx(self, broker_id: int, regex: str) -> None: ...

    def open_connection(self, broker_id: int, processor_id: int, connection_id: str) -> None: ...

    def register_client(
        self, broker_id: int, connection_id: str, software_name: str, software_version: str
    ) -> None: ...

    def register_cipher(self, broker_id: int, connection_id: str, cipher: str, protocol: str) -> None: ...

    def close_connection(self, broker_id: int, connection_id: str) -> None: ...

    def set(
        self, broker_id: int, object_name: str, attribute: str, value: int | float | str, type_: str = "int"
    ) -> None: ...

    def dump(self, broker_id: int, timeout: float | None = None) -> list[Bean]: ...

    def sync(self, timeout: float = 10.0) -> None: ...


@dataclass(frozen=True)
class ClientInformation:
    software_name: str = UNKNOWN
    software_version: str = UNKNOWN

    def __post_init__(self) -> None:
        # ClientInformation constructor maps an empty name or version to "unknown" individually.
        if not self.software_name:
            object.__setattr__(self, "software_name", UNKNOWN)
        if not self.software_version:
            object.__setattr__(self, "software_version", UNKNOWN)


EMPTY_CLIENT = ClientInformation()


def deprecated_requests_mbean(api_name: str, version: int, info: ClientInformation) -> str:
    # docs/kafka-facts/jmx-mbeans.md#deprecated-requests-meter: tags request, version, clientSoftwareName,
    # clientSoftwareVersion, in that order.
    return (
        f"kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,request={api_name},"
        f"version={version},clientSoftwareName={info.software_name},"
        f"clientSoftwareVersion={info.software_version}"
    )


class ChannelRegistry:
    """One connection's ``SelectorChannelMetadataRegistry``, held by Kafka's Selector in the MBean host."""

    def __init__(self, owner: BrokerMetrics, connection_id: str) -> None:
        self._owner = owner
        self.connection_id = connection_id
        # Selector.register(): every new connection is first counted as unknown/unknown.
        self.client_information: ClientInformation = EMPTY_CLIENT
        self._closed = False

    @property
    def current(self) -> ClientInformation:
        return self.client_information

    def register_client_information(self, info: ClientInformation) -> None:
        with self._owner.lock:
            if self._closed or info == self.client_information:
                return
            self.client_information = info
            self._owner.forward(
                lambda sink, broker: sink.register_client(
                    broker, self.connection_id, info.software_name, info.software_version
                )
            )

    def register_cipher_information(self, cipher: str, protocol: str) -> None:
        with self._owner.lock:
            if not self._closed:
                self._owner.forward(
                    lambda sink, broker: sink.register_cipher(broker, self.connection_id, cipher, protocol)
                )

    def close(self) -> None:
        with self._owner.lock:
            if self._closed:
                return
            self._closed = True
            self._owner.forward(lambda sink, broker: sink.close_connection(broker, self.connection_id))


class BrokerMetrics:
    """The JMX-visible state of one broker incarnation; detached when the broker is killed."""

    def __init__(self, broker_id: int, release: Release, sink: GaugeSink | None) -> None:
        self.broker_id = broker_id
        self.release = release
        self.lock = threading.RLock()
        self._sink = sink
        self._deprecated_counts: dict[str, int] = {}
        if not release.has_client_mbeans:
            # KIP-511's broker side (the client and cipher gauges) arrived in 2.5.0
            # (docs/kafka-facts/jmx-mbeans.md#client-gauges). Kafka's own Selector keeps counting the connections
            # (connection-count), and Kafka's JmxReporter is told to leave the newer gauges out of JMX (KIP-544's
            # metrics.jmx.exclude).
            self.forward(lambda sink, broker: sink.exclude_from_jmx(broker, _KIP_511_GAUGES))

    def add_processor(self, listener: str, processor_id: int) -> None:
        self.forward(lambda sink, broker: sink.add_processor(broker, listener, processor_id))

    def open_channel(self, processor_id: int, connection_id: str) -> ChannelRegistry:
        channel = ChannelRegistry(self, connection_id)
        self.forward(lambda sink, broker: sink.open_connection(broker, processor_id, connection_id))
        return channel

    def mark_deprecated_request(self, api_name: str, version: int, info: ClientInformation) -> None:
        # Yammer Meter created lazily on the first deprecated request; its `Count` is a long.
        name = deprecated_requests_mbean(api_name, version, info)
        with self.lock:
            count = self._deprecated_counts.get(name, 0) + 1
            self._deprecated_counts[name] = count
            self.forward(lambda sink, broker: sink.set(broker, name, "Count", count, "long"))

    def forward(self, call: _SinkCall) -> None:
        """Hand a change to the MBean host, unless the broker was killed (its JMX endpoint is gone)."""
        with self.lock:
            if self._sink is not None:
                call(self._sink, self.broker_id)

    def detach(self) -> None:
        """Broker killed: later channel closes must not reach the MBean host."""
        with self.lock:
            self._sink = None

    def view(self) -> dict[tuple[str, int, str, str], int]:
        """``{(listener, processor, name, version): connections}`` of the KIP-511 MBeans, lingering zeros
        included, as Kafka's Selector holds them now."""
        with self.lock:
            sink = self._sink
        if sink is None:
            return {}
        return client_gauges(sink.dump(self.broker_id))


def client_gauges(beans: list[Bean]) -> dict[tuple[str, int, str, str], int]:
    """The KIP-511 ``connections`` gauges among a broker's MBeans."""
    out: dict[tuple[str, int, str, str], int] = {}
    for object_name, attribute, value in beans:
        name = parse_object_name(object_name)
        if attribute != "connections" or name.domain != "kafka.server" or tuple(name.properties) != CLIENT_TAGS:
            continue
        props = name.properties
        key = (
            props["listener"],
            int(props["networkProcessor"]),
            props["clientSoftwareName"],
            props["clientSoftwareVersion"],
        )
        out[key] = int(value)
    return out


class _SinkCall(Protocol):
    def __call__(self, sink: GaugeSink, broker_id: int, /) -> None: ...
