"""Collectors: turn one Snapshot into fresh Prometheus metric families (nothing is kept between scrapes)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from exporter import __version__
from exporter.snapshot import BrokerFacts, ClientMetricsReading, JmxReading, Snapshot

CLIENT_MBEAN = (
    "kafka.server:type=socket-server-metrics,clientSoftwareName,clientSoftwareVersion,listener,networkProcessor"
)


class SnapshotCollector(Collector):
    """Renders exactly one snapshot; build a new one per snapshot so no label set outlives its source."""

    def __init__(self, snapshot: Snapshot | None, network_processor_label: bool = False) -> None:
        self._snapshot = snapshot
        self._per_processor = network_processor_label

    def collect(self) -> Iterator[Metric]:
        build = GaugeMetricFamily(
            "kafka_client_exporter_build_info",
            "Version of kafka-client-exporter; always 1.",
            labels=["version"],
        )
        build.add_metric([__version__], 1)
        yield build
        if self._snapshot is None:
            return
        yield from self._client_families(self._snapshot)
        yield from self._broker_families(self._snapshot)
        yield from self._client_metrics_families(self._snapshot)
        yield from self._health_families(self._snapshot)

    def _client_families(self, snapshot: Snapshot) -> Iterator[Metric]:
        base = ["cluster", "broker", "listener"]
        processor = ["network_processor"] if self._per_processor else []
        connections = GaugeMetricFamily(
            "kafka_client_connections",
            f"Open connections per client software name and version (KIP-511), from JMX {CLIENT_MBEAN} "
            "attribute connections, summed over network processors unless network_processor is a label. "
            "Only non-zero values are exported: Kafka keeps zero-valued MBeans, we drop them. "
            "Collected in the background; see kafka_client_exporter_snapshot_timestamp_seconds.",
            labels=[*base, *processor, "client_software_name", "client_software_version"],
        )
        deprecated = CounterMetricFamily(
            "kafka_client_deprecated_requests",
            "Requests in API versions deprecated by KIP-896 per client software, from JMX "
            "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec attribute Count (brokers 3.7-3.9).",
            labels=[
                "cluster",
                "broker",
                "request",
                "version",
                "client_software_name",
                "client_software_version",
            ],
        )
        suite_full = GaugeMetricFamily(
            "kafka_client_exporter_client_suite_full",
            "1 when a network processor tracks 100 client name/version keys that all have connections: Kafka "
            "then silently stops tracking new clients there, so the inventory of that processor is incomplete.",
            labels=["cluster", "broker", "listener", "network_processor"],
        )
        violations = GaugeMetricFamily(
            "kafka_client_policy_violation_connections",
            "Open connections of client software that breaks the version policy, by reason (below_minimum, "
            "denied_version, unknown_software, not_allowed); judged on the real version before any folding. "
            "Only non-zero values are exported.",
            labels=[*base, *processor, "client_software_name", "client_software_version", "reason"],
        )
        sums: dict[tuple[str, ...], int] = defaultdict(int)
        violating: dict[tuple[str, ...], int] = defaultdict(int)
        for row in snapshot.clients:
            key = (
                row.cluster,
                row.broker,
                row.listener,
                *([row.network_processor] if self._per_processor else []),
                row.software_name,
                row.software_version,
            )
            sums[key] += row.connections
            if row.violation is not None:
                violating[(*key, row.violation)] += row.connections
        for key, total in sorted(sums.items()):
            connections.add_metric(list(key), total)
        for key, total in sorted(violating.items()):
            violations.add_metric(list(key), total)
        for result in snapshot.results:
            jmx = result.reading_of(JmxReading)
            if jmx is None:
                continue
            cluster, broker = result.key.cluster, result.key.broker
            for request in jmx.deprecated_requests:
                deprecated.add_metric(
                    [
                        cluster,
                        broker,
                        request.request,
                        request.version,
                        request.software_name,
                        request.software_version,
                    ],
                    request.count,
                )
            for suite in jmx.suites:
                suite_full.add_metric([cluster, broker, suite.listener, suite.network_processor], int(suite.full))
        folded = CounterMetricFamily(
            "kafka_client_exporter_series_folded",
            'Client software name/version pairs folded into client_software_version="other" because the '
            "cluster has more distinct pairs than collection.max_versions_per_cluster (counted once per cycle).",
            labels=["cluster"],
        )
        for cluster in snapshot.clusters:
            folded.add_metric([cluster], snapshot.folded_total.get(cluster, 0))
        yield violations
        yield folded
        yield connections
        yield deprecated
        yield suite_full

    def _broker_families(self, snapshot: Snapshot) -> Iterator[Metric]:
        labels = ["cluster", "broker", "api"]
        api_min = GaugeMetricFamily(
            "kafka_broker_api_version_min",
            "Lowest version of each API the broker advertises in ApiVersions (KIP-35/KIP-511).",
            labels=labels,
        )
        api_max = GaugeMetricFamily(
            "kafka_broker_api_version_max",
            "Highest version of each API the broker advertises in ApiVersions (KIP-35/KIP-511).",
            labels=labels,
        )
        info = GaugeMetricFamily(
            "kafka_broker_info",
            "Broker facts from ApiVersions; always 1. inferred_release is the oldest Kafka release whose API "
            "specs match the advertised ranges (a lower bound: releases with identical specs cannot be told "
            "apart), or unknown.",
            labels=["cluster", "broker", "host", "inferred_release"],
        )
        finalized = GaugeMetricFamily(
            "kafka_broker_finalized_feature_level",
            "Finalized (cluster-wide) max level of each KIP-584 feature, e.g. metadata.version, from ApiVersions "
            "v3+ tagged field FinalizedFeatures.",
            labels=["cluster", "broker", "feature"],
        )
        supported = GaugeMetricFamily(
            "kafka_broker_supported_feature_max_level",
            "Highest level of each KIP-584 feature this broker supports, from ApiVersions v3+ tagged field "
            "SupportedFeatures.",
            labels=["cluster", "broker", "feature"],
        )
        for result in snapshot.results:
            facts = result.reading_of(BrokerFacts)
            if facts is None:
                continue
            cluster, broker = result.key.cluster, result.key.broker
            info.add_metric([cluster, broker, facts.host, facts.inferred_release], 1)
            for api in facts.apis:
                api_min.add_metric([cluster, broker, api.name], api.min_version)
                api_max.add_metric([cluster, broker, api.name], api.max_version)
            for feature in facts.finalized_features:
                finalized.add_metric([cluster, broker, feature.name], feature.max_version)
            for feature in facts.supported_features:
                supported.add_metric([cluster, broker, feature.name], feature.max_version)
        yield from (info, api_min, api_max, finalized, supported)

    def _client_metrics_families(self, snapshot: Snapshot) -> Iterator[Metric]:
        count = GaugeMetricFamily(
            "kafka_client_metrics_subscriptions",
            "KIP-714 client-metrics subscriptions in the cluster, listed with ListClientMetricsResources / "
            "ListConfigResources (key 74).",
            labels=["cluster"],
        )
        subscription = GaugeMetricFamily(
            "kafka_client_metrics_subscription_info",
            "One client-metrics subscription (DescribeConfigs of CLIENT_METRICS); always 1. Its metrics and match "
            "lists are on the landing page and at /api/client-metrics.",
            labels=["cluster", "name", "interval_ms"],
        )
        supported = GaugeMetricFamily(
            "kafka_client_exporter_api_supported",
            "1 when the cluster's brokers serve this API: ListClientMetricsResources is key 74 v0 (3.7+), "
            "ListConfigResources key 74 v1 (4.1+).",
            labels=["cluster", "api"],
        )
        for result in snapshot.results:
            reading = result.reading_of(ClientMetricsReading)
            if reading is None:
                continue
            cluster = result.key.cluster
            supported.add_metric([cluster, "ListClientMetricsResources"], int(reading.list_v0_supported))
            supported.add_metric([cluster, "ListConfigResources"], int(reading.list_v1_supported))
            if reading.api_used is None:
                continue  # a broker older than 3.7 has no subscriptions to count
            count.add_metric([cluster], len(reading.subscriptions))
            for sub in reading.subscriptions:
                subscription.add_metric([cluster, sub.name, str(sub.interval_ms)], 1)
        yield from (count, subscription, supported)

    def _health_families(self, snapshot: Snapshot) -> Iterator[Metric]:
        labels = ["cluster", "broker", "source"]
        up = GaugeMetricFamily(
            "kafka_client_exporter_up",
            "1 when the last poll of this broker's source succeeded, else 0.",
            labels=labels,
        )
        duration = GaugeMetricFamily(
            "kafka_client_exporter_collect_duration_seconds",
            "Wall time of the last poll of this broker's source.",
            labels=labels,
        )
        for result in snapshot.results:
            values = [result.key.cluster, result.key.broker, result.key.source]
            up.add_metric(values, int(result.ok))
            duration.add_metric(values, result.duration_seconds)
        errors = CounterMetricFamily(
            "kafka_client_exporter_errors",
            "Failed polls by reason (timeout, connection, authentication, authorization, jmx_error, "
            "invalid_response, java_not_found, protocol).",
            labels=[*labels, "reason"],
        )
        for (key, reason), count in sorted(snapshot.errors_total.items()):
            errors.add_metric([key.cluster, key.broker, key.source, reason], count)
        last_success = GaugeMetricFamily(
            "kafka_client_exporter_last_success_timestamp_seconds",
            "Unix time of the last successful poll of this broker's source.",
            labels=labels,
        )
        for key, when in sorted(snapshot.last_success.items()):
            last_success.add_metric([key.cluster, key.broker, key.source], when)
        yield up
        yield duration
        yield errors
        yield last_success
        yield GaugeMetricFamily(
            "kafka_client_exporter_snapshot_timestamp_seconds",
            "Unix time the served snapshot was completed; /metrics serves the latest background cycle, so "
            "time() minus this is the age of the data.",
            value=snapshot.taken_at,
        )
        yield GaugeMetricFamily(
            "kafka_client_exporter_cycle_duration_seconds",
            "Wall time of the last complete collection cycle over all clusters and brokers.",
            value=snapshot.cycle_duration_seconds,
        )
        yield GaugeMetricFamily(
            "kafka_client_exporter_collection_interval_seconds",
            "Configured pause between the starts of two collection cycles; a cycle_duration_seconds above it "
            "means collection cannot keep up.",
            value=snapshot.interval_seconds,
        )
