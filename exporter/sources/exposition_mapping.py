"""Where a broker's metrics endpoint puts the KIP-511 client gauges and the KIP-896 deprecated-request counters:
the published rule sets (presets) and home-made mappings, and the reading they give from an exposition.

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

from exporter.snapshot import ClientConnections, DeprecatedRequests, JmxReading
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
class ExpositionMapping:
    name: str  # the preset's name, or "mapping"
    connections: ConnectionsMapping
    deprecated: DeprecatedMapping | None = None

    @property
    def sample_names(self) -> tuple[str, ...]:
        deprecated = self.deprecated.samples if self.deprecated else ()
        return self.connections.samples + deprecated


# docs/kafka-facts/metrics-endpoints.md#strimzi: jmx_exporter with Strimzi's kafka-metrics.yaml. Its generic
# PerSec rule takes two key=value pairs; the meter has four after `name`, so the greedy first key group swallows
# "request=R, version=V, clientSoftwareName" and jmx_exporter turns it into this label name.
_STRIMZI_MANGLED = re.compile(r"^request_(?P<request>[A-Za-z0-9]+)_version_(?P<version>\d+)_clientSoftwareName$")

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
    # The TLS-cipher gauge has the same name (other labels): the missing software labels leave it out.
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
    return gauge_reading(clients, deprecated, channels_read=False)
