"""The `prometheus` block of a cluster: presets or a mapping, endpoints listed or discovered, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.config.schema import ConfigError
from exporter.config.settings import load_settings
from exporter.snapshot import ChannelConnections, ClientConnections, DeprecatedRequests
from exporter.sources.cluster_sources import cluster_sources
from exporter.sources.exposition_mapping import parse_exposition
from exporter.sources.jmx import JavaRuntime, PerCallTransport
from exporter.sources.prometheus_endpoint import mapping_of

# These clusters read no JMX: the transport is never asked.
NO_JMX = PerCallTransport(JavaRuntime())


def load(tmp_path: Path, cluster: str):
    path = tmp_path / "config.yaml"
    path.write_text(f"clusters:\n  - name: prod\n{cluster}")
    return load_settings(path)


def test_listed_endpoints_with_a_preset_give_one_prometheus_source(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        """    prometheus: {preset: strimzi, port: 9404}
    brokers:
      - {id: 1, metrics_url: "https://kafka-0.example:9404/metrics"}
      - {id: 2, host: kafka-1.example}
""",
    )
    cluster = settings.clusters[0]
    assert cluster.polls_prometheus and not cluster.polls_jmx and not cluster.polls_protocol
    sources = cluster_sources(cluster, settings, NO_JMX)
    assert [(s.name, s.after) for s in sources] == [("prometheus", ())]
    urls = [poll.read.args[0] for poll in sources[0].polls({})]  # type: ignore[attr-defined]
    assert urls == ["https://kafka-0.example:9404/metrics", "http://kafka-1.example:9404/metrics"]


def test_discovered_brokers_wait_for_discovery(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        """    bootstrap_servers: ["kafka-0.example:9092"]
    prometheus:
      port: 9404
      path: /prom
      mapping: {connections_metric: c, software_name_label: n, software_version_label: v, listener_label: l,
                network_processor_label: p}
""",
    )
    sources = cluster_sources(settings.clusters[0], settings, NO_JMX)
    assert [(s.name, s.after) for s in sources][-1] == ("prometheus", ("discovery",))
    for source in sources:
        source.close()


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        ("    prometheus: {port: 9404}\n    bootstrap_servers: [k:9092]\n", "give either preset"),
        (
            "    prometheus: {preset: strimzi, port: 1, mapping: {connections_metric: c, software_name_label: n,"
            " software_version_label: v, listener_label: l, network_processor_label: p}}\n"
            "    bootstrap_servers: [k:9092]\n",
            "not both",
        ),
        ("    prometheus: {preset: jmx_exporter, port: 9404}\n", "'strimzi', 'confluent' or 'strimzi_reporter'"),
        ("    prometheus: {preset: strimzi}\n    bootstrap_servers: [k:9092]\n", "set prometheus.port"),
        (
            "    prometheus: {preset: strimzi, port: 9404}\n    jmx: {port: 9999}\n    bootstrap_servers: [k:9092]\n",
            "give jmx or prometheus, not both",
        ),
        ("    prometheus: {preset: strimzi}\n    brokers: [{id: 1, host: h}]\n", "broker 1 has no metrics_url"),
        ("    prometheus: {preset: strimzi}\n    brokers: [{id: 1, metrics_url: 'kafka:9404'}]\n", "http://"),
        (
            "    prometheus: {preset: strimzi}\n    brokers: [{id: 1, metrics_url: 'http://u:hunter2@k:1/metrics'}]\n",
            "must not hold credentials",
        ),
        ("    jmx: {port: 9999}\n    brokers: [{id: 1, metrics_url: 'http://k:1/metrics'}]\n", "add a prometheus"),
        (
            "    prometheus: {preset: confluent, port: 9404, scheme: http, tls: {check_hostname: false}}\n"
            "    bootstrap_servers: [k:9092]\n",
            "set prometheus.scheme to https",
        ),
        (
            "    prometheus: {preset: confluent, tls: {check_hostname: false}}\n"
            "    brokers: [{id: 1, metrics_url: 'http://k:1/metrics'}]\n",
            "every endpoint is http",
        ),
        (
            "    prometheus: {preset: confluent, port: 9404, basic_auth: {username: u}}\n"
            "    bootstrap_servers: [k:9092]\n",
            "basic_auth needs a password",
        ),
        (
            "    prometheus: {preset: confluent, port: 9404, bearer_token_file: /nonexistent/token}\n"
            "    bootstrap_servers: [k:9092]\n",
            "does not exist",
        ),
        (
            "    prometheus: {preset: confluent, port: 9404, path: metrics}\n    bootstrap_servers: [k:9092]\n",
            "must start with '/'",
        ),
    ],
)
def test_bad_prometheus_block_is_named(tmp_path: Path, cluster: str, expected: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load(tmp_path, cluster)
    assert expected in str(excinfo.value)
    assert "hunter2" not in str(excinfo.value)  # a password in a metrics_url is never echoed


def test_a_configured_mapping_reads_its_series(tmp_path: Path) -> None:
    settings = load(
        tmp_path,
        """    prometheus:
      mapping:
        connections_metric: kafka_clients
        software_name_label: sw
        software_version_label: swv
        listener_label: l
        network_processor_label: p
        deprecated: {metric: kafka_old_total, request_label: api, version_label: v, software_name_label: sw,
                     software_version_label: swv}
    brokers: [{id: 1, metrics_url: "http://k:1/metrics"}]
""",
    )
    prometheus = settings.clusters[0].prometheus
    assert prometheus is not None
    text = (
        'kafka_clients{sw="kcat",swv="1.7.1",l="PLAINTEXT",p="0"} 2\n'
        'kafka_old_total{api="Fetch",v="3",sw="kcat",swv="1.7.1"} 5\n'
    )
    reading = parse_exposition(text, mapping_of(prometheus))
    assert reading.clients == (ClientConnections("PLAINTEXT", "0", "kcat", "1.7.1", 2),)
    assert reading.deprecated_requests == (DeprecatedRequests("Fetch", "3", "kcat", "1.7.1", 5),)


MAPPING = """    prometheus:
      mapping:
        connections_metric: kafka_clients
        software_name_label: sw
        software_version_label: swv
        listener_label: l
        network_processor_label: p
{channels}
    brokers: [{{id: 1, metrics_url: "http://k:1/metrics"}}]
"""


def test_a_mapping_with_channels_reads_them_and_the_release(tmp_path: Path) -> None:
    settings = load(tmp_path, MAPPING.format(channels="        channels: {release_metric: kafka_server_app_info}"))
    prometheus = settings.clusters[0].prometheus
    assert prometheus is not None and prometheus.mapping is not None and prometheus.mapping.channels is not None
    assert prometheus.mapping.channels.release_label == "version"
    text = (
        'kafka_server_replica_fetcher_metrics_connection_count{broker_id="2",fetcher_id="0"} 1.0\n'
        'kafka_server_app_info{node_id="1",version="4.3.0"} 1.0\n'
    )
    reading = parse_exposition(text, mapping_of(prometheus))
    assert reading.channels == (ChannelConnections("replica-fetcher", "2", 1),)
    assert reading.release == "4.3.0" and reading.channels_read
    without = load(tmp_path, MAPPING.format(channels=""))
    assert without.clusters[0].prometheus is not None
    assert not parse_exposition(text, mapping_of(without.clusters[0].prometheus)).channels_read


@pytest.mark.parametrize(
    ("channels", "expected"),
    [
        ("channels: {}", "release_metric"),
        ("channels: {release_metric: kafka_server_app_info, lowercase: true}", "lowercase"),
        ("channels: {release_metric: 'app info'}", "app info"),
        ("channels: {release_metric: kafka_server_app_info, release_label: 'my-version'}", "my-version"),
        ("channels: {release_metric: kafka_clients}", "is the connections_metric"),
        (
            "channels: {release_metric: kafka_server_raft_channel_metrics_connection_count}",
            "connection count is not the release series",
        ),
    ],
)
def test_bad_channels_mapping_is_named(tmp_path: Path, channels: str, expected: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load(tmp_path, MAPPING.format(channels="        " + channels))
    assert expected in str(excinfo.value)
    assert "channels" in str(excinfo.value)
