"""Broker-side client-software bookkeeping: Kafka's ``IntGaugeSuite`` and
``Selector.SelectorChannelMetadataRegistry`` (docs/kafka-facts/jmx-mbeans.md), pushed to a gauge sink.

All mutation goes through :class:`BrokerMetrics`, which holds one lock so tests can read a consistent
view from another thread while the asyncio loop mutates it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from .releases import Release

if TYPE_CHECKING:
    from .mbean_host import JmxTls

UNKNOWN = "unknown"  # ClientInformation.UNKNOWN_NAME_OR_VERSION: docs/kafka-facts/jmx-mbeans.md#unknown-client-software
MAX_ENTRIES = 100  # IntGaugeSuite "clients" maxEntries (docs/kafka-facts/jmx-mbeans.md#gauge-suite-eviction)
SOCKET_SERVER = "kafka.server:type=socket-server-metrics"


class GaugeSink(Protocol):
    """The narrow part of :class:`kafka_double.mbean_host.MBeanHost` the registry needs."""

    def set(
        self, broker_id: int, object_name: str, attribute: str, value: int | float | str, type_: str = "int"
    ) -> None: ...

    def unset(self, broker_id: int, object_name: str) -> None: ...

    def sync(self, timeout: float = 10.0) -> None: ...


class MemorySink:
    """In-memory stand-in for MBeanHost (tests without a JVM): ``{(broker_id, object_name): {attr: value}}``."""

    def __init__(self) -> None:
        self.beans: dict[tuple[int, str], dict[str, object]] = {}
        self._lock = threading.Lock()

    def set(self, broker_id: int, object_name: str, attribute: str, value: object, type_: str = "int") -> None:
        with self._lock:
            self.beans.setdefault((broker_id, object_name), {})[attribute] = value

    def unset(self, broker_id: int, object_name: str) -> None:
        with self._lock:
            self.beans.pop((broker_id, object_name), None)

    def sync(self, timeout: float = 10.0) -> None:
        return None

    def add_broker(
        self,
        broker_id: int,
        port: int,
        user: str | None = None,
        password: str | None = None,
        tls: JmxTls | None = None,
    ) -> str:
        # Same shape as MBeanHost.add_broker, so a DoubleCluster can run without a JVM.
        return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi"

    def stop_broker(self, broker_id: int) -> None:
        # A killed broker's JMX endpoint disappears with every MBean on it.
        with self._lock:
            for key in [k for k in self.beans if k[0] == broker_id]:
                del self.beans[key]


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
K = TypeVar("K")


class IntGaugeSuite(Generic[K]):
    """org.apache.kafka.common.metrics.internals.IntGaugeSuite (docs/kafka-facts/jmx-mbeans.md#gauge-suite-eviction).

    A key at 0 becomes *removable* but keeps its metric; it is evicted only when a new key arrives
    while ``max_entries`` keys exist. With no removable key the new key is not tracked at all.
    Kafka keeps removable keys in a HashSet (arbitrary eviction order); we evict the oldest one.
    """

    def __init__(
        self,
        max_entries: int,
        on_value: Callable[[K, int], None],
        on_remove: Callable[[K], None],
    ) -> None:
        self.max_entries = max_entries
        self._on_value = on_value
        self._on_remove = on_remove
        self._gauges: dict[K, int] = {}
        self._removable: dict[K, None] = {}  # ordered set
        self._closed = False

    def increment(self, key: K) -> bool:
        if self._closed:
            return False
        if key in self._gauges:
            value = self._gauges[key] + 1
            self._gauges[key] = value
            if value > 0:
                self._removable.pop(key, None)
            self._on_value(key, value)
            return True
        if len(self._gauges) >= self.max_entries:
            if not self._removable:
                return False  # Kafka: debug log "not tracking", the key is counted nowhere
            victim = next(iter(self._removable))
            del self._removable[victim]
            del self._gauges[victim]
            self._on_remove(victim)
        self._gauges[key] = 1  # StoredIntGauge starts at 1 when the key is first seen
        self._on_value(key, 1)
        return True

    def decrement(self, key: K) -> None:
        if self._closed:
            return
        if key not in self._gauges:
            return  # Kafka: untracked key, debug log only
        value = self._gauges[key] - 1
        self._gauges[key] = value
        if value <= 0:
            self._removable[key] = None
        self._on_value(key, value)  # the MBean lingers at 0

    def close(self) -> None:
        # Suite close (processor shutdown) removes every metric, zeros included.
        if self._closed:
            return
        self._closed = True
        for key in list(self._gauges):
            self._on_remove(key)
        self._gauges.clear()
        self._removable.clear()

    def values(self) -> dict[K, int]:
        return dict(self._gauges)


def client_mbean(listener: str, processor: int, info: ClientInformation) -> str:
    # Tag order of Selector's LinkedHashMap: clientSoftwareName, clientSoftwareVersion, then the
    # Processor's listener, networkProcessor (docs/kafka-facts/jmx-mbeans.md#client-gauges).
    return (
        f"{SOCKET_SERVER},clientSoftwareName={info.software_name},"
        f"clientSoftwareVersion={info.software_version},listener={listener},networkProcessor={processor}"
    )


def processor_mbean(listener: str, processor: int) -> str:
    return f"{SOCKET_SERVER},listener={listener},networkProcessor={processor}"


def cipher_mbean(listener: str, processor: int, cipher: str, protocol: str) -> str:
    # docs/kafka-facts/jmx-mbeans.md#tls-cipher-gauge: same type and attribute `connections`, tags cipher/protocol.
    return f"{SOCKET_SERVER},cipher={cipher},protocol={protocol},listener={listener},networkProcessor={processor}"


def deprecated_requests_mbean(api_name: str, version: int, info: ClientInformation) -> str:
    # docs/kafka-facts/jmx-mbeans.md#deprecated-requests-meter: tags request, version, clientSoftwareName,
    # clientSoftwareVersion, in that order.
    return (
        f"kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,request={api_name},"
        f"version={version},clientSoftwareName={info.software_name},"
        f"clientSoftwareVersion={info.software_version}"
    )


class ProcessorMetrics:
    """One network Processor's Selector metrics (``listener``/``networkProcessor`` tags)."""

    def __init__(self, owner: BrokerMetrics, listener: str, processor_id: int, cipher_gauge: bool) -> None:
        self.owner = owner
        self.listener = listener
        self.processor_id = processor_id
        self.open_channels = 0
        self.clients: IntGaugeSuite[ClientInformation] | None = None
        if owner.release.has_client_mbeans:
            self.clients = IntGaugeSuite(MAX_ENTRIES, self._push_client, self._remove_client)
        # Selector's "sslCiphers" suite (docs/kafka-facts/jmx-mbeans.md#tls-cipher-gauge, 2.5.0+), fed by
        # ChannelRegistry.register_cipher_information after each TLS handshake.
        self.ciphers: IntGaugeSuite[tuple[str, str]] | None = None
        if owner.release.has_client_mbeans:
            self.ciphers = IntGaugeSuite(MAX_ENTRIES, self._push_cipher, self._remove_cipher)
        self._cipher_name: str | None = None
        if cipher_gauge and owner.release.has_client_mbeans:
            # Static stand-in for the "sslCiphers" suite (docs/kafka-facts/jmx-mbeans.md#tls-cipher-gauge, 2.5.0+):
            # lets an exporter prove it filters socket-server-metrics `connections` MBeans by tag keys.
            self._cipher_name = cipher_mbean(listener, processor_id, "TLS_AES_256_GCM_SHA384", "TLSv1.3")
            owner.sink_set(self._cipher_name, "connections", 2, "int")
        self._push_count()

    def _push_client(self, info: ClientInformation, value: int) -> None:
        self.owner.sink_set(client_mbean(self.listener, self.processor_id, info), "connections", value, "int")

    def _remove_client(self, info: ClientInformation) -> None:
        self.owner.sink_unset(client_mbean(self.listener, self.processor_id, info))

    def _push_cipher(self, key: tuple[str, str], value: int) -> None:
        self.owner.sink_set(cipher_mbean(self.listener, self.processor_id, *key), "connections", value, "int")

    def _remove_cipher(self, key: tuple[str, str]) -> None:
        self.owner.sink_unset(cipher_mbean(self.listener, self.processor_id, *key))

    def _push_count(self) -> None:
        # connection-count is a Measurable (double) in Kafka's Selector metrics.
        self.owner.sink_set(
            processor_mbean(self.listener, self.processor_id),
            "connection-count",
            float(self.open_channels),
            "double",
        )


class ChannelRegistry:
    """SelectorChannelMetadataRegistry of one connection (docs/kafka-facts/jmx-mbeans.md#how-the-count-changes)."""

    def __init__(self, processor: ProcessorMetrics) -> None:
        self._processor = processor
        self.client_information: ClientInformation | None = None
        self.cipher_information: tuple[str, str] | None = None
        self._closed = False
        with processor.owner.lock:
            processor.open_channels += 1
            processor._push_count()
            # Selector.register(): every new connection is first counted as unknown/unknown.
            self._register_locked(EMPTY_CLIENT)

    @property
    def current(self) -> ClientInformation:
        return self.client_information or EMPTY_CLIENT

    def register_client_information(self, info: ClientInformation) -> None:
        with self._processor.owner.lock:
            if not self._closed:
                self._register_locked(info)

    def register_cipher_information(self, cipher: str, protocol: str) -> None:
        """SelectorChannelMetadataRegistry.registerCipherInformation, called by SslTransportLayer once a
        handshake has finished (docs/kafka-facts/jmx-mbeans.md#tls-cipher-gauge); CipherInformation maps an empty
        cipher or protocol to "unknown"."""
        key = (cipher or UNKNOWN, protocol or UNKNOWN)
        with self._processor.owner.lock:
            if self._closed or self.cipher_information == key:
                return
            suite = self._processor.ciphers
            if suite is not None:
                if self.cipher_information is not None:
                    suite.decrement(self.cipher_information)
                suite.increment(key)
            self.cipher_information = key

    def _register_locked(self, info: ClientInformation) -> None:
        suite = self._processor.clients
        if self.client_information is not None:
            if self.client_information == info:
                return  # no-op if equal
            if suite is not None:
                suite.decrement(self.client_information)
        self.client_information = info
        if suite is not None:
            suite.increment(info)

    def close(self) -> None:
        with self._processor.owner.lock:
            if self._closed:
                return
            self._closed = True
            proc = self._processor
            if self.client_information is not None and proc.clients is not None:
                proc.clients.decrement(self.client_information)
            self.client_information = None
            if self.cipher_information is not None and proc.ciphers is not None:
                proc.ciphers.decrement(self.cipher_information)
            self.cipher_information = None
            proc.open_channels -= 1
            proc._push_count()


class BrokerMetrics:
    """All JMX-visible state of one broker incarnation; detached when the broker is killed."""

    def __init__(self, broker_id: int, release: Release, sink: GaugeSink | None) -> None:
        self.broker_id = broker_id
        self.release = release
        self.lock = threading.RLock()
        self._sink = sink
        self.processors: dict[int, ProcessorMetrics] = {}
        self._deprecated_counts: dict[str, int] = {}

    def add_processor(self, listener: str, processor_id: int, cipher_gauge: bool) -> ProcessorMetrics:
        with self.lock:
            proc = ProcessorMetrics(self, listener, processor_id, cipher_gauge)
            self.processors[processor_id] = proc
            return proc

    def open_channel(self, processor_id: int) -> ChannelRegistry:
        return ChannelRegistry(self.processors[processor_id])

    def mark_deprecated_request(self, api_name: str, version: int, info: ClientInformation) -> None:
        # Yammer Meter created lazily on the first deprecated request; its `Count` is a long.
        name = deprecated_requests_mbean(api_name, version, info)
        with self.lock:
            count = self._deprecated_counts.get(name, 0) + 1
            self._deprecated_counts[name] = count
            self.sink_set(name, "Count", count, "long")

    def detach(self) -> None:
        """Broker killed: its JMX endpoint is gone, so later channel closes must not reach the sink."""
        with self.lock:
            self._sink = None

    def sink_set(self, name: str, attribute: str, value: int | float | str, type_: str) -> None:
        if self._sink is not None:
            self._sink.set(self.broker_id, name, attribute, value, type_)

    def sink_unset(self, name: str) -> None:
        if self._sink is not None:
            self._sink.unset(self.broker_id, name)

    def view(self) -> dict[tuple[str, int, str, str], int]:
        """``{(listener, processor, name, version): count}`` including lingering zeros."""
        with self.lock:
            out: dict[tuple[str, int, str, str], int] = {}
            for pid, proc in self.processors.items():
                if proc.clients is None:
                    continue
                for info, count in proc.clients.values().items():
                    out[(proc.listener, pid, info.software_name, info.software_version)] = count
            return out
