"""Where a broker's metrics endpoint puts the KIP-511 client gauges, the KIP-896 deprecated-request counters and,
where the rules export them, the broker's own channels and release: the published rule sets (presets) and home-made
mappings, and the reading they give from an exposition.

The text is parsed by prometheus-client's parser; only the lines of the wanted series are handed to it, since a
broker's whole exposition (every topic and partition) can be tens of thousands of lines.
docs/kafka-facts/metrics-endpoints.md holds the rule files each preset follows and what they make of the MBeans.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from exporter.kafka_releases.broker_channels import CHANNELS, BrokerChannel
from exporter.snapshot import ChannelConnections, ClientConnections, DeprecatedRequests, JmxReading
from exporter.sources.gauge_reading import gauge_reading


@dataclass(frozen=True, slots=True)
class ConnectionsMapping:
    """The series of the per-client `connections` gauge: sample names and the four label names."""

    samples: tuple[str, ...]
    software_name_label: str
    software_version_label: str
    listener_label: str
    network_processor_label: str


@dataclass(frozen=True, slots=True)
class DeprecatedMapping:
    """The series of the DeprecatedRequestsPerSec count. `request_version_in_label_name` is set when a rule
    put request and version into the name of the software-name label (see the `strimzi` preset)."""

    samples: tuple[str, ...]
    software_name_label: str | None  # None: the name is the value of the label matched by the pattern below
    software_version_label: str
    request_label: str = "request"
    version_label: str = "version"
    request_version_in_label_name: re.Pattern[str] | None = None


@dataclass(frozen=True, slots=True)
class ChannelSeries:
    """The series of one channel's `connection-count`, and the labels its destination tag may be under."""

    channel: BrokerChannel
    destination_labels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChannelsMapping:
    """Where the rules put the broker's own channels (docs/kafka-facts/brokers-own-connections.md#on-metrics-endpoints):
    each channel's sample names, and the series whose label holds the broker's release (app-info Version)."""

    samples: Mapping[str, ChannelSeries]
    release_samples: tuple[str, ...]
    release_label: str


@dataclass(frozen=True, slots=True)
class ExpositionMapping:
    name: str  # the preset's name, or "mapping"
    connections: ConnectionsMapping
    deprecated: DeprecatedMapping | None = None
    # None: the rules do not export the channels (or not all of them), so the reading cannot tell them apart.
    channels: ChannelsMapping | None = None

    @property
    def sample_names(self) -> tuple[str, ...]:
        deprecated = self.deprecated.samples if self.deprecated else ()
        channels = (*self.channels.samples, *self.channels.release_samples) if self.channels else ()
        return self.connections.samples + deprecated + channels


def _reporter_safe(name: str) -> str:
    # client_java's PrometheusNaming.sanitizeMetricName / sanitizeLabelName, as the Strimzi Metrics Reporter calls
    # them: each character outside the name alphabet becomes one "_" (no reserved suffix ends these names).
    return re.sub(r"[^a-zA-Z0-9_:]", "_", name)


def _jmx_exporter_safe(name: str) -> str:
    # jmx_exporter's toSafeName: each run of characters outside [a-zA-Z0-9:_], and of underscores, becomes one "_".
    return re.sub(r"[^a-zA-Z0-9:]+", "_", name)


def _reporter_channels() -> ChannelsMapping:
    """docs/kafka-facts/brokers-own-connections.md#strimzi-metrics-reporter: every Kafka metric as
    `kafka.server_<group>_<name>` sanitized and lowercased, its tags as labels of sanitized names (case kept); the
    string app-info `version` as an info metric, which client_java's text format (and OpenMetrics) serve with the
    suffix `_info`, the value in the label `version`."""
    samples = {
        _reporter_safe(f"kafka.server_{channel.name}-metrics_connection-count").lower(): ChannelSeries(
            channel, (_reporter_safe(channel.destination_tag),) if channel.destination_tag else ()
        )
        for channel in CHANNELS
    }
    release = _reporter_safe("kafka.server_app-info_version").lower() + "_info"
    return ChannelsMapping(samples, (release,), "version")


# client_java 1.x (jmx_exporter 1.x) strips these from a rule's name (docs/kafka-facts/metrics-endpoints.md).
_RESERVED_SUFFIXES = ("_total", "_created", "_bucket", "_info")


def _client_java_1(name: str) -> str:
    while name.endswith(_RESERVED_SUFFIXES):
        name = name[: name.rindex("_")]
    return name


def jmx_exporter_default_channels(release_metric: str, release_label: str) -> ChannelsMapping:
    """docs/kafka-facts/brokers-own-connections.md#home-made-jmx_exporter-rules: the rule without `name` gives
    jmx_exporter's default export, `<domain>_<type>_<attribute>` through toSafeName (lowercased only under
    lowercaseOutputName: both are read), the tags after `type` as labels through toSafeName (`broker-id` is
    `broker_id` either way). The release series is the operator's, as served: a name that jmx_exporter 1.x
    serves without its reserved suffix (`kafka_server_app_info` as `kafka_server_app`) is read both ways."""
    samples: dict[str, ChannelSeries] = {}
    for channel in CHANNELS:
        name = _jmx_exporter_safe(f"kafka.server_{channel.name}-metrics_connection-count")
        tag = channel.destination_tag
        labels = tuple(dict.fromkeys((_jmx_exporter_safe(tag), _jmx_exporter_safe(tag).lower()))) if tag else ()
        for variant in (name, name.lower()):
            samples[variant] = ChannelSeries(channel, labels)
    release = tuple(dict.fromkeys((release_metric, _client_java_1(release_metric))))
    return ChannelsMapping(samples, release, release_label)


# docs/kafka-facts/metrics-endpoints.md#strimzi: jmx_exporter with Strimzi's kafka-metrics.yaml. Its generic
# PerSec rule takes two key=value pairs; the meter has four after `name`, so the greedy first key group swallows
# "request=R, version=V, clientSoftwareName" and jmx_exporter turns it into this label name.
_STRIMZI_MANGLED = re.compile(r"^request_(?P<request>[A-Za-z0-9]+)_version_(?P<version>\d+)_clientSoftwareName$")

# The brokers' own channels (docs/kafka-facts/brokers-own-connections.md#on-metrics-endpoints) are read only where
# the rules export every channel's connection-count and the release: the strimzi_reporter preset and a mapping that
# says so. Strimzi's kafka-metrics.yaml keeps only the KRaft channel (kafka_server_raftchannelmetrics_connection_count)
# and no app-info, jmx-monitoring-stacks' kafka_broker.yml keeps none: under those presets the brokers' channels stay
# unread, and what they may put on other brokers' gauges stays in doubt.
PRESETS: Mapping[str, ExpositionMapping] = {
    "strimzi": ExpositionMapping(
        "strimzi",
        ConnectionsMapping(
            ("kafka_server_socket_server_metrics_connections_software",),
            "clientSoftwareName",
            "clientSoftwareVersion",
            "listener",
            "networkProcessor",
        ),
        DeprecatedMapping(
            ("kafka_network_requestmetrics_deprecatedrequests_total",),
            software_name_label=None,
            software_version_label="clientSoftwareVersion",
            request_version_in_label_name=_STRIMZI_MANGLED,
        ),
    ),
    # docs/kafka-facts/metrics-endpoints.md#confluent: jmx-monitoring-stacks' kafka_broker.yml.
    "confluent": ExpositionMapping(
        "confluent",
        ConnectionsMapping(
            ("kafka_server_socketservermetrics_connections",),
            "client_software_name",
            "client_software_version",
            "listener",
            "network_processor",
        ),
        DeprecatedMapping(
            # jmx_exporter 0.x keeps the rule's name; 1.x appends _total to a counter.
            (
                "kafka_network_requestmetrics_deprecatedrequestspersec_count",
                "kafka_network_requestmetrics_deprecatedrequestspersec_count_total",
            ),
            "client_software_name",
            "client_software_version",
            request_label="api_name",
            version_label="api_version",
        ),
    ),
    # docs/kafka-facts/metrics-endpoints.md#strimzi-metrics-reporter: names built from the metric's group and name.
    # The TLS-cipher gauge has the same name (other labels): the missing software labels leave it out. Every channel
    # and the release are exported too (its default allowlist is .*).
    "strimzi_reporter": ExpositionMapping(
        "strimzi_reporter",
        ConnectionsMapping(
            ("kafka_server_socket_server_metrics_connections",),
            "clientSoftwareName",
            "clientSoftwareVersion",
            "listener",
            "networkProcessor",
        ),
        DeprecatedMapping(
            ("kafka_network_requestmetrics_deprecatedrequestspersec_total",),
            "clientSoftwareName",
            "clientSoftwareVersion",
        ),
        _reporter_channels(),
    ),
}


def _count(value: float) -> int | None:
    return round(value) if math.isfinite(value) else None


def _wanted_lines(text: str, sample_names: tuple[str, ...]) -> str:
    # A prefix filter, not a parser: it keeps a superset of the wanted samples (the parser and the exact name
    # match below decide). Comment lines go too: the parser takes untyped samples under their own names.
    return "\n".join(line for line in text.splitlines() if line.startswith(sample_names)) + "\n"


def _deprecated(mapping: DeprecatedMapping, labels: dict[str, str], count: int) -> DeprecatedRequests | None:
    version = labels.get(mapping.software_version_label)
    if version is None:
        return None
    if mapping.request_version_in_label_name is not None:
        for label, value in labels.items():
            match = mapping.request_version_in_label_name.match(label)
            if match:
                return DeprecatedRequests(match["request"], match["version"], value, version, count)
        return None
    request = labels.get(mapping.request_label)
    api_version = labels.get(mapping.version_label)
    name = labels.get(mapping.software_name_label or "")
    if request is None or api_version is None or name is None:
        return None
    return DeprecatedRequests(request, api_version, name, version, count)


def parse_exposition(text: str, mapping: ExpositionMapping) -> JmxReading:
    """The reading a broker's exposition holds under `mapping`; other series are ignored, and so are samples that
    lack one of the mapped labels (the TLS-cipher gauge, when a rule gives it the same name). Raises ValueError
    when the text is not the Prometheus text format."""
    connections = mapping.connections
    clients: list[ClientConnections] = []
    deprecated: list[DeprecatedRequests] = []
    channels: list[ChannelConnections] = []
    channels_seen = False
    release: str | None = None
    wanted = _wanted_lines(text, mapping.sample_names)
    for family in text_string_to_metric_families(wanted):
        for sample in family.samples:
            count = _count(sample.value)
            if count is None:
                continue
            if sample.name in connections.samples:
                labels = sample.labels
                try:
                    clients.append(
                        ClientConnections(
                            listener=labels[connections.listener_label],
                            network_processor=labels[connections.network_processor_label],
                            software_name=labels[connections.software_name_label],
                            software_version=labels[connections.software_version_label],
                            connections=count,
                        )
                    )
                except KeyError:
                    continue
            elif mapping.deprecated is not None and sample.name in mapping.deprecated.samples:
                request = _deprecated(mapping.deprecated, sample.labels, count)
                if request is not None:
                    deprecated.append(request)
            elif mapping.channels is not None and (series := mapping.channels.samples.get(sample.name)):
                channels_seen = True
                channel = _channel(series, sample.labels, count)
                if channel is not None:
                    channels.append(channel)
            elif mapping.channels is not None and sample.name in mapping.channels.release_samples:
                release = release or sample.labels.get(mapping.channels.release_label) or None
    # Read only with evidence that the rules export the channels (every KRaft node has the raft channel; a reporter
    # allowlist may leave them out), and only with the release unless nothing is held: without it, where the
    # channels land cannot be told (exporter/judging/own_connections.py, _Holder.read).
    read = channels_seen and (release is not None or not any(channel.connections for channel in channels))
    return gauge_reading(clients, deprecated, channels if read else (), channels_read=read, release=release)


def _channel(series: ChannelSeries, labels: Mapping[str, str], count: int) -> ChannelConnections | None:
    """A channel sample's connections; None when the label naming the destination is missing."""
    if not series.destination_labels:
        return ChannelConnections(series.channel.name, None, count)
    destination = next((labels[label] for label in series.destination_labels if label in labels), None)
    return None if destination is None else ChannelConnections(series.channel.name, destination, count)
