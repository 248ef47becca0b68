"""Per-broker Prometheus endpoints of the double: each broker's MBeans rendered as a published rule set serves
them (docs/kafka-facts/metrics-endpoints.md), over HTTP or HTTPS, optionally behind basic auth or a bearer token.

Each scrape reads the broker's MBeans from the MBean host (``DUMP``), as jmx_exporter reads its JVM's MBeanServer,
so an endpoint shows exactly the MBeans a JMX client sees: those Kafka's Selector makes, lingering zeros and the
TLS-cipher gauge included.
"""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client.core import Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from exporter.sources.object_name import parse_object_name

from .registry import CLIENT_TAGS, Bean

PRESETS = ("strimzi", "confluent", "strimzi_reporter")


# A rendered sample: family name, family type, sample name, labels.
Rendered = tuple[str, str, str, dict[str, str]]


def _safe(name: str) -> str:
    # jmx_exporter's toSafeName: each run of characters outside [a-zA-Z0-9:_] becomes one "_".
    return re.sub(r"[^a-zA-Z0-9:_]+", "_", name)


_CIPHER = ("type", "cipher", "protocol", "listener", "networkProcessor")
_PROCESSOR = ("type", "listener", "networkProcessor")
_DEPRECATED = ("type", "name", "request", "version", "clientSoftwareName", "clientSoftwareVersion")


def _shape(domain: str, props: Mapping[str, str]) -> str | None:
    keys = tuple(props)
    if domain == "kafka.server" and props.get("type") == "socket-server-metrics":
        return {CLIENT_TAGS: "client", _CIPHER: "cipher", _PROCESSOR: "processor"}.get(keys)
    if domain == "kafka.network" and keys == _DEPRECATED and props["name"] == "DeprecatedRequestsPerSec":
        return "deprecated"
    return None


def _strimzi(shape: str, props: Mapping[str, str], attribute: str) -> Rendered | None:
    # strimzi/strimzi-kafka-operator@8541da1e336bdcda9647aeacfbc2048e57580a52, examples/metrics/kafka-metrics.yaml,
    # lowercaseOutputName only; jmx_exporter 1.x adds _total to counter samples.
    if shape == "client" and attribute == "connections":  # rule at lines 108-115
        name = "kafka_server_socket_server_metrics_connections_software"
        return name, "gauge", name, {k: props[k] for k in CLIENT_TAGS[1:]}
    if shape == "cipher" and attribute == "connections":  # rule at lines 100-107
        name = "kafka_server_socket_server_metrics_connections_tls_info"
        return name, "gauge", name, {k: props[k] for k in _CIPHER[1:]}
    if shape == "processor":  # rule at lines 122-127 (`-total` attributes take the counter rule at 116-121)
        name = _safe(f"kafka_server_socket-server-metrics_{attribute}").lower()
        return name, "gauge", name, {k: props[k] for k in _PROCESSOR[1:]}
    if shape == "deprecated" and attribute == "Count":
        # Lines 155-160, two key groups for four pairs: the greedy first key takes "request=R, version=V,
        # clientSoftwareName" (docs/kafka-facts/metrics-endpoints.md#strimzi).
        mangled = _safe(f"request={props['request']}, version={props['version']}, clientSoftwareName")
        labels = {mangled: props["clientSoftwareName"], "clientSoftwareVersion": props["clientSoftwareVersion"]}
        family = "kafka_network_requestmetrics_deprecatedrequests"
        return family, "counter", family + "_total", labels
    return None


def _confluent(shape: str, props: Mapping[str, str], attribute: str) -> Rendered | None:
    # confluentinc/jmx-monitoring-stacks@9707c1ab69e54770afef0b8d605c77a1e1208b52,
    # shared-assets/jmx-exporter/kafka_broker.yml; lowercase names and label names; the cipher MBeans are on
    # its blacklistObjectNames (line 19). jmx_exporter 1.x adds _total to counter samples.
    if shape == "client" and attribute == "connections":  # rule at lines 192-200
        name = "kafka_server_socketservermetrics_connections"
        labels = {
            "client_software_name": props["clientSoftwareName"],
            "client_software_version": props["clientSoftwareVersion"],
            "listener": props["listener"],
            "network_processor": props["networkProcessor"],
        }
        return name, "gauge", name, labels
    if shape == "processor":  # rule at lines 201-206
        name = _safe(f"kafka_server_socketservermetrics_{attribute}").lower()
        return name, "gauge", name, {"listener": props["listener"], "network_processor": props["networkProcessor"]}
    if shape == "deprecated" and attribute == "Count":  # rule at lines 30-38
        family = "kafka_network_requestmetrics_deprecatedrequestspersec_count"
        labels = {
            "api_name": props["request"],
            "api_version": props["version"],
            "client_software_name": props["clientSoftwareName"],
            "client_software_version": props["clientSoftwareVersion"],
        }
        return family, "counter", family + "_total", labels
    return None


def _strimzi_reporter(shape: str, props: Mapping[str, str], attribute: str) -> Rendered | None:
    # strimzi/metrics-reporter@7a1469980208a4f624ea6fe9f4dc4bf19409486f: Kafka metrics as
    # <namespace>_<group>_<name> with every tag a label (KafkaMetricWrapper), Yammer meters as counters named
    # <group>_<type>_<name> labelled by their scope's tags (YammerMetricWrapper, YammerCollector). The reporter also
    # serves each channel's connection-count and the app-info version (docs/kafka-facts/brokers-own-connections.md
    # #strimzi-metrics-reporter); the double opens no channels and registers no app-info, so it has none to render.
    if shape in ("client", "cipher", "processor"):
        name = _safe(f"kafka.server_socket-server-metrics_{attribute}").lower()
        return name, "gauge", name, {k: v for k, v in props.items() if k != "type"}
    if shape == "deprecated" and attribute == "Count":
        family = "kafka_network_requestmetrics_deprecatedrequestspersec"
        return family, "counter", family + "_total", {k: props[k] for k in _DEPRECATED[2:]}
    return None


RENDERERS: dict[str, Callable[[str, Mapping[str, str], str], Rendered | None]] = {
    "strimzi": _strimzi,
    "confluent": _confluent,
    "strimzi_reporter": _strimzi_reporter,
}


class _BeansCollector(Collector):
    def __init__(self, preset: str, beans: list[Bean]) -> None:
        self._render = RENDERERS[preset]
        self._beans = beans

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for object_name, attribute, value in sorted(self._beans, key=lambda bean: bean[:2]):
            if isinstance(value, str):
                continue
            name = parse_object_name(object_name)
            shape = _shape(name.domain, name.properties)
            rendered = self._render(shape, name.properties, attribute) if shape else None
            if rendered is None:
                continue
            family, type_, sample, labels = rendered
            metric = families.setdefault(family, Metric(family, f"{object_name.split(',')[0]} {attribute}", type_))
            metric.add_sample(sample, labels, float(value))
        yield from families.values()


def render(preset: str, beans: list[Bean]) -> bytes:
    """The exposition a broker with these MBeans serves under `preset`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_BeansCollector(preset, beans))
    return generate_latest(registry)


@dataclass(frozen=True)
class MetricsEndpointConfig:
    """How every broker of a double serves its endpoint."""

    preset: str = "strimzi"
    basic_auth: tuple[str, str] | None = field(default=None, repr=False)  # (username, password)
    bearer_token: str | None = field(default=None, repr=False)
    ssl_context: ssl.SSLContext | None = None

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"metrics endpoint preset {self.preset!r} is not emulated; allowed: {', '.join(PRESETS)}")

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"

    def authorized(self, header: str | None) -> bool:
        if self.basic_auth is not None:
            user, password = self.basic_auth
            return header == "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        if self.bearer_token is not None:
            return header == f"Bearer {self.bearer_token}"
        return True


class MetricsEndpoints:
    """One HTTP(S) server per running broker, on the double's event loop."""

    def __init__(self, config: MetricsEndpointConfig, dump: Callable[[int], list[Bean]], host: str) -> None:
        self.config = config
        self._dump = dump
        self._host = host
        self._runners: dict[int, web.AppRunner] = {}

    async def start_broker(self, broker_id: int, port: int) -> str:
        async def metrics(request: web.Request) -> web.Response:
            if not self.config.authorized(request.headers.get("Authorization")):
                return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="metrics"'})
            # The MBean host answers in order with everything else it is sent: off the double's event loop.
            body = render(self.config.preset, await asyncio.to_thread(self._dump, broker_id))
            return web.Response(body=body, content_type="text/plain", charset="utf-8")

        app = web.Application()
        app.router.add_get("/metrics", metrics)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, self._host, port, ssl_context=self.config.ssl_context).start()
        self._runners[broker_id] = runner
        return f"{self.config.scheme}://{self._host}:{port}/metrics"

    async def stop_broker(self, broker_id: int) -> None:
        runner = self._runners.pop(broker_id, None)
        if runner is not None:
            await runner.cleanup()
