"""Reading the client gauges out of the expositions each published rule set serves, and out of home-made rules."""

from __future__ import annotations

import pytest

from exporter.snapshot import ChannelConnections, ClientConnections, DeprecatedRequests, ProcessorSuite
from exporter.sources.exposition_mapping import (
    PRESETS,
    ConnectionsMapping,
    DeprecatedMapping,
    ExpositionMapping,
    jmx_exporter_default_channels,
    parse_exposition,
)

# jmx_exporter 1.x with Strimzi's kafka-metrics.yaml (docs/kafka-facts/metrics-endpoints.md#strimzi).
STRIMZI = """\
# HELP kafka_server_socket_server_metrics_connection_count connection-count
# TYPE kafka_server_socket_server_metrics_connection_count gauge
kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT",networkProcessor="0"} 5.0
# HELP kafka_server_socket_server_metrics_connections_software connections
# TYPE kafka_server_socket_server_metrics_connections_software gauge
kafka_server_socket_server_metrics_connections_software{clientSoftwareName="apache-kafka-java",\
clientSoftwareVersion="3.7.0",listener="PLAINTEXT",networkProcessor="0"} 2.0
kafka_server_socket_server_metrics_connections_software{clientSoftwareName="apache-kafka-java",\
clientSoftwareVersion="3.7.0",listener="PLAINTEXT",networkProcessor="1"} 3.0
kafka_server_socket_server_metrics_connections_software{clientSoftwareName="librdkafka",\
clientSoftwareVersion="2.0.2",listener="PLAINTEXT",networkProcessor="0"} 0.0
kafka_server_socket_server_metrics_connections_software{clientSoftwareName="we\\"ird",\
clientSoftwareVersion="1,0",listener="INTERNAL",networkProcessor="3"} 1.0
# HELP kafka_server_socket_server_metrics_connections_tls_info connections
# TYPE kafka_server_socket_server_metrics_connections_tls_info gauge
kafka_server_socket_server_metrics_connections_tls_info{cipher="TLS_AES_256_GCM_SHA384",listener="SSL",\
networkProcessor="4",protocol="TLSv1.3"} 7.0
# HELP kafka_network_requestmetrics_deprecatedrequests_total Count
# TYPE kafka_network_requestmetrics_deprecatedrequests_total counter
kafka_network_requestmetrics_deprecatedrequests_total{clientSoftwareVersion="unknown",\
request_Metadata_version_2_clientSoftwareName="unknown"} 42.0
kafka_network_requestmetrics_deprecatedrequests_total{clientSoftwareVersion="1.0",\
request_OffsetCommit_version_1_clientSoftwareName="old-client"} 3.0
# HELP kafka_server_brokertopicmetrics_bytesin_total Count
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total{topic="demo"} 1234.0
"""

# jmx_exporter 1.x with jmx-monitoring-stacks' kafka_broker.yml (docs/kafka-facts/metrics-endpoints.md#confluent):
# the cipher MBeans are on its blacklist, so they are not served at all.
CONFLUENT = """\
# TYPE kafka_server_socketservermetrics_connections gauge
kafka_server_socketservermetrics_connections{client_software_name="apache-kafka-java",\
client_software_version="3.7.0",listener="PLAINTEXT",network_processor="0"} 2.0
kafka_server_socketservermetrics_connections{client_software_name="apache-kafka-java",\
client_software_version="3.7.0",listener="PLAINTEXT",network_processor="1"} 3.0
kafka_server_socketservermetrics_connections{client_software_name="librdkafka",\
client_software_version="2.0.2",listener="PLAINTEXT",network_processor="0"} 0.0
kafka_server_socketservermetrics_connections{client_software_name="we\\"ird",\
client_software_version="1,0",listener="INTERNAL",network_processor="3"} 1.0
# TYPE kafka_server_socketservermetrics_connection_count gauge
kafka_server_socketservermetrics_connection_count{listener="PLAINTEXT",network_processor="0"} 5.0
# TYPE kafka_network_requestmetrics_deprecatedrequestspersec_count counter
kafka_network_requestmetrics_deprecatedrequestspersec_count_total{api_name="Metadata",api_version="2",\
client_software_name="unknown",client_software_version="unknown"} 42.0
kafka_network_requestmetrics_deprecatedrequestspersec_count_total{api_name="OffsetCommit",api_version="1",\
client_software_name="old-client",client_software_version="1.0"} 3.0
# TYPE kafka_network_requestmetrics_deprecatedrequestspersec_oneminuterate gauge
kafka_network_requestmetrics_deprecatedrequestspersec_oneminuterate{api_name="Metadata",api_version="2",\
client_software_name="unknown",client_software_version="unknown"} 0.5
"""

# Strimzi Metrics Reporter (docs/kafka-facts/metrics-endpoints.md#strimzi-metrics-reporter): the TLS-cipher gauge
# shares the name of the client gauge.
STRIMZI_REPORTER = """\
# HELP kafka_server_socket_server_metrics_connections The current number of connections
# TYPE kafka_server_socket_server_metrics_connections gauge
kafka_server_socket_server_metrics_connections{clientSoftwareName="apache-kafka-java",\
clientSoftwareVersion="3.7.0",listener="PLAINTEXT",networkProcessor="0"} 2.0
kafka_server_socket_server_metrics_connections{clientSoftwareName="apache-kafka-java",\
clientSoftwareVersion="3.7.0",listener="PLAINTEXT",networkProcessor="1"} 3.0
kafka_server_socket_server_metrics_connections{clientSoftwareName="librdkafka",\
clientSoftwareVersion="2.0.2",listener="PLAINTEXT",networkProcessor="0"} 0.0
kafka_server_socket_server_metrics_connections{clientSoftwareName="we\\"ird",\
clientSoftwareVersion="1,0",listener="INTERNAL",networkProcessor="3"} 1.0
kafka_server_socket_server_metrics_connections{cipher="TLS_AES_256_GCM_SHA384",listener="SSL",\
networkProcessor="4",protocol="TLSv1.3"} 7.0
# HELP kafka_network_requestmetrics_deprecatedrequestspersec_total DeprecatedRequestsPerSec
# TYPE kafka_network_requestmetrics_deprecatedrequestspersec_total counter
kafka_network_requestmetrics_deprecatedrequestspersec_total{clientSoftwareName="unknown",\
clientSoftwareVersion="unknown",request="Metadata",version="2"} 42.0
kafka_network_requestmetrics_deprecatedrequestspersec_total{clientSoftwareName="old-client",\
clientSoftwareVersion="1.0",request="OffsetCommit",version="1"} 3.0
"""

CLIENTS = {
    ClientConnections("PLAINTEXT", "0", "apache-kafka-java", "3.7.0", 2),
    ClientConnections("PLAINTEXT", "1", "apache-kafka-java", "3.7.0", 3),
    ClientConnections("PLAINTEXT", "0", "librdkafka", "2.0.2", 0),  # judging drops it; the suite counts it
    ClientConnections("INTERNAL", "3", 'we"ird', "1,0", 1),
}
DEPRECATED = {
    DeprecatedRequests("Metadata", "2", "unknown", "unknown", 42),
    DeprecatedRequests("OffsetCommit", "1", "old-client", "1.0", 3),
}
SUITES = (
    ProcessorSuite("INTERNAL", "3", keys=1, live_keys=1),
    ProcessorSuite("PLAINTEXT", "0", keys=2, live_keys=1),
    ProcessorSuite("PLAINTEXT", "1", keys=1, live_keys=1),
)


@pytest.mark.parametrize(
    ("preset", "text"), [("strimzi", STRIMZI), ("confluent", CONFLUENT), ("strimzi_reporter", STRIMZI_REPORTER)]
)
def test_each_preset_reads_clients_deprecated_requests_and_suites_and_skips_ciphers(preset: str, text: str) -> None:
    reading = parse_exposition(text, PRESETS[preset])
    assert set(reading.clients) == CLIENTS
    assert len(reading.clients) == len(CLIENTS)
    assert set(reading.deprecated_requests) == DEPRECATED
    assert reading.suites == SUITES


def test_confluent_counter_as_jmx_exporter_0x_names_it() -> None:
    # jmx_exporter 0.x serves the COUNTER under the rule's own name, without _total.
    text = CONFLUENT.replace("_count_total{", "_count{")
    assert set(parse_exposition(text, PRESETS["confluent"]).deprecated_requests) == DEPRECATED


def test_a_preset_does_not_read_another_rule_sets_names() -> None:
    reading = parse_exposition(CONFLUENT, PRESETS["strimzi"])
    assert reading.clients == () and reading.deprecated_requests == () and reading.suites == ()


def suite_text(live: int, zero: int) -> str:
    lines = [
        f'kafka_server_socketservermetrics_connections{{client_software_name="c{i}",client_software_version="1",'
        f'listener="PLAINTEXT",network_processor="2"}} {1.0 if i < live else 0.0}'
        for i in range(live + zero)
    ]
    return "\n".join(lines) + "\n"


def test_suite_saturation_counts_live_keys_of_a_processor() -> None:
    full = parse_exposition(suite_text(100, 0), PRESETS["confluent"]).suites
    assert full == (ProcessorSuite("PLAINTEXT", "2", keys=100, live_keys=100),) and full[0].full
    evictable = parse_exposition(suite_text(99, 1), PRESETS["confluent"]).suites
    assert evictable[0].keys == 100 and not evictable[0].full


HOME_MADE = ExpositionMapping(
    "mapping",
    ConnectionsMapping(("kafka_clients_connected",), "software", "software_version", "lst", "proc"),
    DeprecatedMapping(("kafka_old_requests_total",), "software", "software_version", "api", "api_version"),
)


def test_home_made_mapping_skips_samples_without_the_mapped_labels() -> None:
    text = """\
kafka_clients_connected{software="kcat",software_version="1.7.1",lst="PLAINTEXT",proc="0"} 4
kafka_clients_connected{cipher="TLS_AES_128_GCM_SHA256",protocol="TLSv1.3",lst="SSL",proc="0"} 9
kafka_clients_connected{software="kcat",software_version="1.7.1",lst="PLAINTEXT",proc="1"} NaN
kafka_old_requests_total{api="Fetch",api_version="3",software="kcat",software_version="1.7.1"} 12
kafka_old_requests_total{api="Fetch",software="kcat",software_version="1.7.1"} 1
"""
    reading = parse_exposition(text, HOME_MADE)
    assert reading.clients == (ClientConnections("PLAINTEXT", "0", "kcat", "1.7.1", 4),)
    assert reading.deprecated_requests == (DeprecatedRequests("Fetch", "3", "kcat", "1.7.1", 12),)


def test_broken_wanted_line_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_exposition('kafka_server_socketservermetrics_connections{listener="P" 1\n', PRESETS["confluent"])


# The brokers' own channels and release of a 4.2.0 broker (node 2) as the Strimzi Metrics Reporter serves them in
# the text format 0.0.4 (client_java 1.x: labels sorted, an info metric with the suffix _info and the value 1;
# docs/kafka-facts/brokers-own-connections.md#strimzi-metrics-reporter). Two fetcher threads towards leader 1, one
# towards 3; the socket server's own connection-count and the channels' TLS-cipher gauge are no channels.
REPORTER_CHANNELS = """\
# HELP kafka_server_app_info_version_info Use kafka_server_app_info_version in allowlist
# TYPE kafka_server_app_info_version_info gauge
kafka_server_app_info_version_info{version="4.2.0"} 1
kafka_server_app_info_version_info{client_id="2",version="4.2.0"} 1
# HELP kafka_server_app_info_commit_id_info Use kafka_server_app_info_commit_id in allowlist
# TYPE kafka_server_app_info_commit_id_info gauge
kafka_server_app_info_commit_id_info{commit_id="a18251bae0b8"} 1
# HELP kafka_server_replica_fetcher_metrics_connection_count Use kafka_server_replica_fetcher_metrics_connection_count \
in allowlist
# TYPE kafka_server_replica_fetcher_metrics_connection_count gauge
kafka_server_replica_fetcher_metrics_connection_count{broker_id="1",fetcher_id="0"} 1.0
kafka_server_replica_fetcher_metrics_connection_count{broker_id="1",fetcher_id="1"} 1.0
kafka_server_replica_fetcher_metrics_connection_count{broker_id="3",fetcher_id="0"} 1.0
# HELP kafka_server_replica_fetcher_metrics_connections Use kafka_server_replica_fetcher_metrics_connections in \
allowlist
# TYPE kafka_server_replica_fetcher_metrics_connections gauge
kafka_server_replica_fetcher_metrics_connections{broker_id="1",cipher="TLS_AES_256_GCM_SHA384",fetcher_id="0",\
protocol="TLSv1.3"} 1.0
# TYPE kafka_server_txn_marker_channel_metrics_connection_count gauge
kafka_server_txn_marker_channel_metrics_connection_count 2.0
# TYPE kafka_server_addpartitionsmanager_channel_metrics_connection_count gauge
kafka_server_addpartitionsmanager_channel_metrics_connection_count 0.0
# TYPE kafka_server_persister_channel_metrics_connection_count gauge
kafka_server_persister_channel_metrics_connection_count 0.0
# TYPE kafka_server_networkpartitionmetadataclient_channel_metrics_connection_count gauge
kafka_server_networkpartitionmetadataclient_channel_metrics_connection_count 0.0
# TYPE kafka_server_raft_channel_metrics_connection_count gauge
kafka_server_raft_channel_metrics_connection_count 1.0
# TYPE kafka_server_forwarding_metrics_connection_count gauge
kafka_server_forwarding_metrics_connection_count{BrokerId="2"} 1.0
# TYPE kafka_server_heartbeat_metrics_connection_count gauge
kafka_server_heartbeat_metrics_connection_count{BrokerId="2"} 1.0
# TYPE kafka_server_alter_partition_metrics_connection_count gauge
kafka_server_alter_partition_metrics_connection_count{BrokerId="2"} 0.0
# TYPE kafka_server_directory_assignments_metrics_connection_count gauge
kafka_server_directory_assignments_metrics_connection_count{BrokerId="2"} 1.0
# TYPE kafka_server_socket_server_metrics_connection_count gauge
kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT",networkProcessor="0"} 5.0
kafka_server_socket_server_metrics_connection_count{listener="CONTROLLER",networkProcessor="1"} 1.0
"""
HELD = {
    ChannelConnections("replica-fetcher", "1", 2),  # one per fetcher thread, summed per leader
    ChannelConnections("replica-fetcher", "3", 1),
    ChannelConnections("txn-marker-channel", None, 2),
    ChannelConnections("raft-channel", None, 1),
    ChannelConnections("forwarding", None, 1),
    ChannelConnections("heartbeat", None, 1),
    ChannelConnections("directory-assignments", None, 1),
}


def without(text: str, *prefixes: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith(prefixes)) + "\n"


def test_strimzi_reporter_reads_the_channels_and_the_release() -> None:
    reading = parse_exposition(STRIMZI_REPORTER + REPORTER_CHANNELS, PRESETS["strimzi_reporter"])
    assert set(reading.channels) == HELD and len(reading.channels) == len(HELD)
    assert reading.release == "4.2.0" and reading.channels_read
    # The socket server's connection-count and the channel's TLS-cipher gauge are neither channels nor clients.
    assert set(reading.clients) == CLIENTS and reading.suites == SUITES
    # Before 4.2 the version has no client_id copy.
    older = parse_exposition(
        without(REPORTER_CHANNELS, "kafka_server_app_info_version_info{client_id"), PRESETS["strimzi_reporter"]
    )
    assert older.release == "4.2.0" and older.channels_read


def test_strimzi_reporter_without_the_release_reads_channels_only_when_none_is_held() -> None:
    no_release = without(REPORTER_CHANNELS, "kafka_server_app_info_version_info")
    reading = parse_exposition(no_release, PRESETS["strimzi_reporter"])
    assert reading.release is None and not reading.channels_read and reading.channels == ()
    idle = "\n".join(line.replace(" 1.0", " 0.0").replace(" 2.0", " 0.0") for line in no_release.splitlines())
    reading = parse_exposition(idle + "\n", PRESETS["strimzi_reporter"])
    assert reading.release is None and reading.channels_read and reading.channels == ()


def test_strimzi_reporter_without_any_channel_series_has_not_read_them() -> None:
    # An allowlist that leaves the channels out (or the broker double, which has no channel MBeans): nothing shows
    # that the broker holds none, even with the release served.
    assert not parse_exposition(STRIMZI_REPORTER, PRESETS["strimzi_reporter"]).channels_read
    release_only = STRIMZI_REPORTER + 'kafka_server_app_info_version_info{version="3.9.2"} 1\n'
    reading = parse_exposition(release_only, PRESETS["strimzi_reporter"])
    assert reading.release == "3.9.2" and not reading.channels_read


@pytest.mark.parametrize(
    ("preset", "text"),
    [
        # Strimzi's kafka-metrics.yaml keeps only the KRaft channel, without labels, and no app-info.
        (
            "strimzi",
            STRIMZI + "# TYPE kafka_server_raftchannelmetrics_connection_count gauge\n"
            "kafka_server_raftchannelmetrics_connection_count 1.0\n",
        ),
        ("strimzi", STRIMZI + REPORTER_CHANNELS),
        ("confluent", CONFLUENT + REPORTER_CHANNELS),
    ],
)
def test_the_jmx_exporter_presets_do_not_read_the_channels(preset: str, text: str) -> None:
    reading = parse_exposition(text, PRESETS[preset])
    assert not reading.channels_read and reading.channels == () and reading.release is None
    assert set(reading.clients) == CLIENTS


# The home-made rule of docs/kafka-facts/brokers-own-connections.md#home-made-jmx_exporter-rules under jmx_exporter
# 1.x without lowercaseOutputName: the default export keeps the type's case; `kafka_server_app_info` is served
# without its reserved suffix. A ZooKeeper controller's channel and a catch-all rule's socket-server series are no
# channels of the table.
HOME_MADE_CHANNELS = """\
# TYPE kafka_server_replica_fetcher_metrics_connection_count gauge
kafka_server_replica_fetcher_metrics_connection_count{broker_id="1",fetcher_id="0"} 1.0
kafka_server_replica_fetcher_metrics_connection_count{broker_id="3",fetcher_id="0"} 1.0
kafka_server_txn_marker_channel_metrics_connection_count 1.0
kafka_server_AddPartitionsManager_channel_metrics_connection_count 1.0
kafka_server_forwarding_metrics_connection_count{BrokerId="2"} 1.0
kafka_server_controller_channel_metrics_connection_count{broker_id="1"} 1.0
kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT",networkProcessor="0"} 5.0
# TYPE kafka_server_app gauge
kafka_server_app{node_id="2",version="3.9.2"} 1.0
"""
HOME_MADE_HELD = {
    ChannelConnections("replica-fetcher", "1", 1),
    ChannelConnections("replica-fetcher", "3", 1),
    ChannelConnections("txn-marker-channel", None, 1),
    ChannelConnections("AddPartitionsManager-channel", None, 1),
    ChannelConnections("forwarding", None, 1),
    # The ZooKeeper-mode controller's channel names its destination with the same tag as the replica fetchers.
    ChannelConnections("controller-channel", "1", 1),
}


def home_made(release_metric: str = "kafka_server_app_info", release_label: str = "version") -> ExpositionMapping:
    return ExpositionMapping(
        "mapping", HOME_MADE.connections, None, jmx_exporter_default_channels(release_metric, release_label)
    )


def test_home_made_channels_under_jmx_exporter_default_naming() -> None:
    reading = parse_exposition(HOME_MADE_CHANNELS, home_made())
    assert set(reading.channels) == HOME_MADE_HELD and reading.release == "3.9.2" and reading.channels_read
    # lowercaseOutputName and lowercaseOutputLabelNames; jmx_exporter 0.x keeps the rule's name.
    lowered = HOME_MADE_CHANNELS.replace("AddPartitionsManager", "addpartitionsmanager").replace("BrokerId", "brokerid")
    lowered = lowered.replace("kafka_server_app{", "kafka_server_app_info{")
    reading = parse_exposition(lowered, home_made())
    assert set(reading.channels) == HOME_MADE_HELD and reading.release == "3.9.2" and reading.channels_read
    # The release under another label, or a series the endpoint does not serve: the channels stay unread.
    assert parse_exposition(HOME_MADE_CHANNELS, home_made(release_label="node_id")).release == "2"
    missing = parse_exposition(HOME_MADE_CHANNELS, home_made("kafka_broker_release"))
    assert missing.release is None and not missing.channels_read and missing.channels == ()
    # A mapping without channels reads none of them.
    assert not parse_exposition(HOME_MADE_CHANNELS, HOME_MADE).channels_read
