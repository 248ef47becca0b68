"""Client families: connections and policy violations of the judged clients, folded pairs, KIP-896 deprecated
requests and those the upgrade target rejects, and full gauge suites."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from prometheus_client.core import Metric

from exporter.collectors import catalog
from exporter.collectors.own_connections import NO_BROKER, shown_versions
from exporter.snapshot import JmxReading, Snapshot


def client_families(snapshot: Snapshot, network_processor_label: bool) -> Iterator[Metric]:
    connections = catalog.CONNECTIONS.new(network_processor_label)
    violations = catalog.POLICY_VIOLATION_CONNECTIONS.new(network_processor_label)
    sums: dict[tuple[str, ...], int] = defaultdict(int)
    shown = shown_versions(snapshot)
    violating: dict[tuple[str, ...], int] = defaultdict(int)
    for row in snapshot.clients:
        key = (
            row.cluster,
            row.broker,
            row.listener,
            *([row.network_processor] if network_processor_label else []),
            row.software_name,
            row.software_version,
        )
        sums[key] += row.connections
        if row.violation is not None and row.violating:
            violating[(*key, row.violation)] += row.violating
    for key, total in sorted(sums.items()):
        connections.add_metric(list(key), total)
    reasons = {(row.cluster, row.software_name, row.real_software_version): row.violation for row in snapshot.clients}
    for on_listener in snapshot.own_by_listener:
        # Clients' connections that are certain in the cluster but that no broker can be named for.
        reason = reasons.get((on_listener.cluster, on_listener.software_name, on_listener.software_version))
        if on_listener.unattributed and reason is not None:
            version = shown.get(
                (on_listener.cluster, on_listener.software_name, on_listener.software_version),
                on_listener.software_version,
            )
            key = (
                on_listener.cluster,
                NO_BROKER,
                on_listener.listener,
                *([NO_BROKER] if network_processor_label else []),
                on_listener.software_name,
                version,
            )
            violating[(*key, reason)] += on_listener.unattributed
    for key, total in sorted(violating.items()):
        violations.add_metric(list(key), total)

    deprecated = catalog.DEPRECATED_REQUESTS.new()
    suite_full = catalog.CLIENT_SUITE_FULL.new()
    for polled, jmx in snapshot.readings(JmxReading):
        cluster, broker = polled.cluster, polled.broker
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

    blocking = catalog.UPGRADE_BLOCKING_REQUESTS.new()
    for blocked in snapshot.blocking_requests:
        blocking.add_metric(
            [
                blocked.cluster,
                blocked.broker,
                blocked.request,
                blocked.version,
                blocked.software_name,
                blocked.software_version,
                blocked.target_release,
            ],
            blocked.count,
        )

    folded = catalog.SERIES_FOLDED.new()
    for cluster in snapshot.clusters:
        folded.add_metric([cluster], snapshot.folded_total.get(cluster, 0))
    yield from (violations, folded, connections, deprecated, blocking, suite_full)
