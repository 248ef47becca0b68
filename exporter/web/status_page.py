"""The status page at `/`: per cluster the live client inventory, the brokers and the exporter's own health.

Server-rendered HTML with inline CSS only (no scripts, no external assets) so it works offline and behind
strict proxies; every value from a snapshot is escaped, since client software names are chosen by clients.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape

from exporter import __version__
from exporter.snapshot import (
    CLUSTER_BROKER,
    FOLDED_VERSION,
    BrokerFacts,
    ClientMetricsReading,
    JudgedClient,
    Snapshot,
    SourceResult,
)

LINKS = (
    ("/metrics", "metrics"),
    ("/api/client-metrics", "client-metrics subscriptions (JSON)"),
    ("/healthz", "healthz"),
    ("/readyz", "readyz"),
)
STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222}"
    "h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:2px solid #ddd}h3{font-size:1.05em;margin-bottom:.3em}"
    "table{border-collapse:collapse;margin-bottom:1em}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}td.num{text-align:right}"
    ".ok{color:#176e17}.bad{color:#b00;font-weight:600}.warn{color:#a65f00;font-weight:600}"
    ".muted{color:#777}nav a{margin-right:1em}"
)


def render_status_page(snapshot: Snapshot | None, now: float) -> str:
    """The whole page for `snapshot` (None before the first collection cycle has finished) as seen at `now`."""
    parts = [_head(), _nav()]
    if snapshot is None:
        parts.append(
            "<p class='warn' id='not-ready'>The first collection cycle has not finished yet: no inventory to show. "
            "Reload this page in a few seconds.</p>"
        )
    else:
        parts.append(_health(snapshot, now))
        for cluster in snapshot.clusters:
            parts.append(_cluster_section(snapshot, cluster))
    parts.append("</body></html>\n")
    return "".join(parts)


def _head() -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>kafka-client-exporter</title><style>{STYLE}</style></head><body>"
        f"<h1>kafka-client-exporter {escape(__version__)}</h1>"
    )


def _nav() -> str:
    return "<nav>" + "".join(f"<a href='{href}'>{escape(text)}</a>" for href, text in LINKS) + "</nav>"


def _cell(column: str, content: str, css: str = "", title: str | None = None) -> str:
    """One <td>; `content` must already be escaped (it may hold markup)."""
    attributes = f" data-col='{escape(column)}'"
    if css:
        attributes += f" class='{css}'"
    if title:
        attributes += f" title='{escape(title)}'"
    return f"<td{attributes}>{content}</td>"


def _table(table_id: str | None, headers: Iterable[str], rows: Iterable[str]) -> str:
    id_attribute = f" id='{escape(table_id)}'" if table_id else ""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table{id_attribute}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


# -- exporter health ---------------------------------------------------------------------------------------


def _health(snapshot: Snapshot, now: float) -> str:
    age = max(0.0, now - snapshot.taken_at)
    # The cached snapshot is stale once it is older than two intervals plus the cycle itself.
    stale = snapshot.interval_seconds > 0 and age > 2 * snapshot.interval_seconds + snapshot.cycle_duration_seconds
    overrun = snapshot.interval_seconds > 0 and snapshot.cycle_duration_seconds > snapshot.interval_seconds
    taken = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(snapshot.taken_at))
    interval = f"{snapshot.interval_seconds:g} s" if snapshot.interval_seconds > 0 else "not configured"
    rows = [
        "<tr><th>snapshot</th>"
        + _cell("snapshot-age", f"{age:.1f} s old (cycle {snapshot.sequence}, taken {escape(taken)})", _flag(stale))
        + "</tr>",
        "<tr><th>cycle duration</th>"
        + _cell(
            "cycle-duration",
            f"{snapshot.cycle_duration_seconds:.2f} s of a {escape(interval)} interval"
            + (" (longer than the interval)" if overrun else ""),
            _flag(overrun),
        )
        + "</tr>",
        "<tr><th>folded series</th>" + _cell("folded-total", str(sum(snapshot.folded_total.values())), "num") + "</tr>",
    ]
    return "<h2>Exporter health</h2><table id='exporter-health'><tbody>" + "".join(rows) + "</tbody></table>"


def _flag(bad: bool) -> str:
    return "warn" if bad else "ok"


def _cluster_health(snapshot: Snapshot, cluster: str) -> str:
    errors: dict[tuple[str, str], int] = defaultdict(int)
    for (key, reason), count in snapshot.errors_total.items():
        if key.cluster == cluster:
            errors[(key.source, reason)] += count
    cluster_sources = [r for r in snapshot.results if r.key.cluster == cluster and r.key.broker == CLUSTER_BROKER]
    parts = ["<h3>Exporter health for this cluster</h3>"]
    if cluster_sources:
        parts.append(
            "<p>Cluster-level sources: "
            + ", ".join(f"{escape(r.key.source)} {_source_status(r)}" for r in sorted(cluster_sources, key=_by_key))
            + "</p>"
        )
    folded = snapshot.folded_total.get(cluster, 0)
    parts.append(
        f"<p>Series folded into version &quot;{FOLDED_VERSION}&quot; since start: "
        f"<span data-col='folded' class='{'warn' if folded else 'ok'}'>{folded}</span></p>"
    )
    if errors:
        rows = [
            "<tr>"
            + _cell("source", escape(source))
            + _cell("reason", escape(reason), "bad")
            + _cell("errors", str(count), "num")
            + "</tr>"
            for (source, reason), count in sorted(errors.items())
        ]
        parts.append(_table(f"errors-{cluster}", ("source", "reason", "errors since start"), rows))
    else:
        parts.append("<p class='ok'>No collection errors since start.</p>")
    return "".join(parts)


# -- one cluster -------------------------------------------------------------------------------------------


def _cluster_section(snapshot: Snapshot, cluster: str) -> str:
    return "".join(
        (
            f"<section id='cluster-{escape(cluster)}'><h2>Cluster {escape(cluster)}</h2>",
            _clients(snapshot, cluster),
            _brokers(snapshot, cluster),
            _subscriptions(snapshot.client_metrics_by_cluster().get(cluster)),
            _cluster_health(snapshot, cluster),
            "</section>",
        )
    )


@dataclass
class _InventoryLine:
    """One software/version row of the page, summed over brokers, listeners and processors."""

    software_name: str
    software_version: str
    connections: int = 0
    brokers: set[str] = field(default_factory=set)
    real_versions: set[str] = field(default_factory=set)
    violations: dict[str, set[str]] = field(default_factory=dict)  # reason -> details
    unparseable: bool = False

    def add(self, row: JudgedClient) -> None:
        self.connections += row.connections
        if row.connections > 0:
            self.brokers.add(row.broker)
        self.real_versions.add(row.real_software_version)
        if row.violation is not None:
            self.violations.setdefault(row.violation, set())
            if row.violation_detail:
                self.violations[row.violation].add(row.violation_detail)
        self.unparseable = self.unparseable or row.unparseable

    @property
    def rank(self) -> int:
        return 0 if self.violations else 1 if self.unparseable else 2


def _inventory_lines(rows: Iterable[JudgedClient]) -> list[_InventoryLine]:
    lines: dict[tuple[str, str], _InventoryLine] = {}
    for row in rows:
        key = (row.software_name, row.software_version)
        lines.setdefault(key, _InventoryLine(*key)).add(row)
    live = [line for line in lines.values() if line.connections > 0]
    return sorted(live, key=lambda line: (line.rank, line.software_name, line.software_version))


def _broker_order(broker: str) -> tuple[int, int | str]:
    return (0, int(broker)) if broker.isdigit() else (1, broker)


def _by_key(result: SourceResult) -> tuple[tuple[int, int | str], str]:
    return (_broker_order(result.key.broker), result.key.source)


def _clients(snapshot: Snapshot, cluster: str) -> str:
    lines = _inventory_lines(row for row in snapshot.clients if row.cluster == cluster)
    heading = "<h3>Connected client software</h3>"
    if not lines:
        return heading + f"<p id='inventory-{escape(cluster)}-empty' class='muted'>No client connections seen.</p>"
    rows = []
    for line in lines:
        version_title = None
        if line.software_version == FOLDED_VERSION and line.real_versions - {FOLDED_VERSION}:
            folded = sorted(line.real_versions - {FOLDED_VERSION})
            version_title = f"{len(folded)} versions folded by the cardinality cap: " + ", ".join(folded[:20])
        rows.append(
            "<tr>"
            + _cell("software", escape(line.software_name))
            + _cell("version", escape(line.software_version), "muted" if version_title else "", version_title)
            + _cell("connections", str(line.connections), "num")
            + _policy_cell(line)
            + _cell("brokers", escape(", ".join(sorted(line.brokers, key=_broker_order))))
            + "</tr>"
        )
    headers = ("software", "version", "connections", "policy status", "brokers")
    return heading + _table(f"inventory-{cluster}", headers, rows)


def _policy_cell(line: _InventoryLine) -> str:
    if line.violations:
        reasons = sorted(line.violations)
        details = sorted(detail for reason in reasons for detail in line.violations[reason])
        return _cell("policy", escape(", ".join(reasons)), "bad", "; ".join(details) or None)
    if line.unparseable:
        return _cell("policy", "unparseable version", "warn", "a version rule applies but this version did not parse")
    return _cell("policy", "OK", "ok")


def _brokers(snapshot: Snapshot, cluster: str) -> str:
    by_broker: dict[str, dict[str, SourceResult]] = defaultdict(dict)
    for result in snapshot.results:
        if result.key.cluster == cluster and result.key.broker != CLUSTER_BROKER:
            by_broker[result.key.broker][result.key.source] = result
    if not by_broker:
        return ""
    sources = sorted({source for results in by_broker.values() for source in results})
    rows = []
    for broker in sorted(by_broker, key=_broker_order):
        results = by_broker[broker]
        facts = next((f for r in results.values() if (f := r.reading_of(BrokerFacts)) is not None), None)
        unknown = "<span class='muted'>unknown</span>"
        cells = [
            _cell("broker", escape(broker)),
            _cell("host", escape(facts.host) if facts else unknown),
            _cell("release", escape(facts.inferred_release) if facts else unknown),
            _cell("api-versions", f"v{facts.request_version}" if facts else unknown),
        ]
        for source in sources:
            result = results.get(source)
            cells.append(_cell(source, _source_status(result) if result else "<span class='muted'>not polled</span>"))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    headers = ("broker", "host", "inferred release", "ApiVersions", *sources)
    return "<h3>Brokers</h3>" + _table(f"brokers-{cluster}", headers, rows)


def _source_status(result: SourceResult) -> str:
    if result.ok:
        return f"<span class='ok'>up</span> <span class='muted'>({result.duration_seconds:.2f} s)</span>"
    reason = escape(result.error_reason or "error")
    return f"<span class='bad' title='{escape(result.error_message or '')}'>down: {reason}</span>" + (
        f"<br><span class='muted'>{escape(result.error_message)}</span>" if result.error_message else ""
    )


def _subscriptions(reading: ClientMetricsReading | None) -> str:
    if reading is None:
        return ""
    if reading.api_used is None:
        return (
            "<h3>Client-metrics subscriptions</h3><p class='muted'>The brokers serve neither "
            "ListClientMetricsResources nor ListConfigResources (KIP-714 needs Kafka 3.7+).</p>"
        )
    heading = f"<h3>Client-metrics subscriptions (via {escape(reading.api_used)})</h3>"
    if not reading.subscriptions:
        return heading + "<p class='muted'>No subscriptions defined.</p>"
    rows = [
        "<tr>"
        + _cell("name", escape(sub.name))
        + _cell("interval", str(sub.interval_ms), "num")
        + _cell("metrics", escape(", ".join(sub.metrics)))
        + _cell("match", escape(", ".join(sub.match)))
        + "</tr>"
        for sub in reading.subscriptions
    ]
    return heading + _table(None, ("name", "interval.ms", "metrics", "match"), rows)
