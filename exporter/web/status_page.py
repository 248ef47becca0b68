"""The status page at `/`: per cluster the live client inventory, the brokers' own connections told apart from the
clients' (exporter/judging/own_connections.py), the brokers and the exporter's own health.

Server-rendered HTML with inline CSS only (no scripts, no external assets) so it works offline and behind
strict proxies. This module turns a snapshot into plain view data; `templates/status_page.html` holds the markup
and escapes every value, since client software names are chosen by clients and error messages by brokers.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from exporter import __version__
from exporter.config.settings import DEFAULT_TELEMETRY_PATH
from exporter.kafka_releases.broker_channels import BY_NAME
from exporter.request_logs.log_kinds import CANNOT_TELL, LogKind
from exporter.request_logs.log_kinds import TITLES as LOG_KIND_TITLES
from exporter.snapshot import (
    CLUSTER_BROKER,
    FOLDED_VERSION,
    BrokerFacts,
    ChannelShare,
    ClientIdentity,
    ClientMetricsReading,
    InventoryReading,
    JmxReading,
    JudgedClient,
    ListenerOwn,
    Snapshot,
    SourceResult,
    inventories,
)
from exporter.sources.base import GAUGE_SOURCES, SourceName
from exporter.templating import template_environment

# After the metrics, which are at --web.telemetry-path.
LINKS = (
    ("/api/clients", "clients and who runs them (JSON)"),
    ("/api/client-metrics", "client-metrics subscriptions (JSON)"),
    ("/healthz", "healthz"),
    ("/readyz", "readyz"),
)
# Names beyond this many stay out of the tooltip of a folded version; the count still says how many there are.
FOLDED_NAMES_SHOWN = 20
# Identities shown under each software/version line, the most active first; "and N more" says how many are not.
IDENTITIES_SHOWN = 10

_TEMPLATES = template_environment("exporter.web")
_TEMPLATES.globals.update(version=__version__, folded_version=FOLDED_VERSION, folded_names_shown=FOLDED_NAMES_SHOWN)
_TEMPLATES.filters["broker_phrase"] = lambda brokers: _phrase(brokers)


def render_status_page(snapshot: Snapshot | None, now: float, telemetry_path: str = DEFAULT_TELEMETRY_PATH) -> str:
    """The whole page for `snapshot` as served (None before the first collection cycle has finished; its stale
    view once it is too old) as seen at `now`."""
    template = _TEMPLATES.get_template("status_page.html")
    links = ((telemetry_path, "metrics"), *LINKS)
    if snapshot is None:
        return template.render(links=links, health=None, clusters=())
    return template.render(
        links=links,
        health=_health(snapshot, now),
        clusters=[_cluster(snapshot, cluster) for cluster in snapshot.clusters],
    )


# -- exporter health ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Health:
    age: str
    age_css: str
    sequence: int
    taken: str
    cycle_duration: str
    interval: str
    overrun: bool
    folded_total: int
    stale: bool
    stale_after: str


def _health(snapshot: Snapshot, now: float) -> _Health:
    age = max(0.0, now - snapshot.taken_at)
    # Past half the staleness limit a snapshot is late: worth a colour before it is withheld.
    late = snapshot.stale or (snapshot.stale_after_seconds > 0 and age > snapshot.stale_after_seconds / 2)
    overrun = snapshot.interval_seconds > 0 and snapshot.cycle_duration_seconds > snapshot.interval_seconds
    return _Health(
        age=f"{age:.1f}",
        age_css="bad" if snapshot.stale else _flag(late),
        sequence=snapshot.sequence,
        taken=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(snapshot.taken_at)),
        cycle_duration=f"{snapshot.cycle_duration_seconds:.2f}",
        interval=f"{snapshot.interval_seconds:g} s" if snapshot.interval_seconds > 0 else "not configured",
        overrun=overrun,
        folded_total=sum(snapshot.folded_total.values()),
        stale=snapshot.stale,
        stale_after=f"{snapshot.stale_after_seconds:g} s",
    )


def _flag(bad: bool) -> str:
    return "warn" if bad else "ok"


@dataclass(frozen=True)
class _SourceStatus:
    """How one source fared in the cycle; `message` is empty when the source is up or gave no message."""

    source: str
    ok: bool
    duration: str
    reason: str
    message: str


def _source_status(result: SourceResult) -> _SourceStatus:
    return _SourceStatus(
        source=result.key.source,
        ok=result.ok,
        duration=f"{result.duration_seconds:.2f}",
        reason=result.error_reason or "error",
        message=result.error_message or "",
    )


# -- one cluster -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _InventoryStatus:
    """The cluster's inventory publication as the page shows it above the connected clients."""

    reading: InventoryReading | None  # the one read, or the last good one kept through a failure
    status: _SourceStatus

    @property
    def log_kinds(self) -> list[tuple[str, list[str], tuple[str, ...]]]:
        """Per kind of request log the run read: its title, the directories of that kind, what it cannot tell
        (grouped: a fleet of fifty brokers has one line per kind, not fifty)."""
        if self.reading is None:
            return []
        directories: dict[LogKind, list[str]] = {}
        for directory, kind in self.reading.request_logs:
            directories.setdefault(kind, []).append(directory)
        return [(LOG_KIND_TITLES[kind], sorted(dirs), CANNOT_TELL[kind]) for kind, dirs in directories.items()]


@dataclass
class _Blocker:
    """Requests of one software/version in a request version the target release no longer serves, summed over
    the brokers that counted them (each broker's count since it started)."""

    software_name: str
    software_version: str
    request: str
    version: str
    target_release: str
    count: int = 0
    brokers: set[str] = field(default_factory=set)
    # Who runs that software/version now, per the inventory; when nobody is named, why.
    identities: list[ClientIdentity] = field(default_factory=list)
    unnamed: str = ""

    @property
    def broker_list(self) -> list[str]:
        return sorted(self.brokers, key=_broker_order)

    @property
    def identities_shown(self) -> list[ClientIdentity]:
        return (self.identities or [])[:IDENTITIES_SHOWN]


def _blockers(snapshot: Snapshot, cluster: str, lines: list[_InventoryLine]) -> list[_Blocker]:
    found: dict[tuple[str, str, str, str, str], _Blocker] = {}
    for row in snapshot.blocking_requests:
        if row.cluster != cluster or row.count <= 0:
            continue
        key = (row.software_name, row.software_version, row.request, row.version, row.target_release)
        blocker = found.setdefault(key, _Blocker(*key))
        blocker.count += row.count
        blocker.brokers.add(row.broker)
    who = {(line.software_name, line.software_version): line.identities for line in lines}
    reading = inventories(snapshot.results).get(cluster)
    senders = reading.blocking_senders if reading is not None else {}
    for blocker in found.values():
        pair = (blocker.software_name, blocker.software_version)
        if pair not in who:
            # The brokers' counts outlive the connections (and a version folded into `other` has no line).
            blocker.unnamed = "not connected now"
        elif who[pair] is None:
            blocker.unnamed = "no inventory"
        elif not who[pair]:
            blocker.unnamed = "not in the inventory"
        else:
            identities = who[pair] or []
            # Everyone running the version is not everyone sending the request: `unknown` gathers every client that
            # sends no name, replica fetchers (which send no ApiVersions) among them. Those the job saw sending it,
            # when it saw any.
            sent = senders.get((*pair, blocker.request, blocker.version))
            if sent:
                identities = [i for i in identities if i.key in sent]
                if not identities:
                    blocker.unnamed = "its senders are not among the identities loaded (max_loaded_identities)"
            blocker.identities = identities
    return sorted(found.values(), key=lambda b: (-b.count, b.software_name, b.software_version, b.request))


@dataclass(frozen=True)
class _Cluster:
    name: str
    inventory: list[_InventoryLine]
    own: _OwnAccount | None  # None: nothing of the brokers' own to tell apart (or the snapshot is stale)
    blockers: list[_Blocker]
    who: _InventoryStatus | None  # None: no inventory configured for the cluster
    broker_sources: list[str]
    brokers: list[_BrokerLine]
    client_metrics: ClientMetricsReading | None
    cluster_sources: list[_SourceStatus]
    folded: int
    errors: list[tuple[str, str, int]]  # source, reason, errors since start


def _cluster(snapshot: Snapshot, cluster: str) -> _Cluster:
    broker_sources, brokers = _brokers(snapshot, cluster)
    cluster_sources = [r for r in snapshot.results if r.key.cluster == cluster and r.key.broker == CLUSTER_BROKER]
    errors: dict[tuple[str, str], int] = defaultdict(int)
    for (key, reason), count in snapshot.errors_total.items():
        if key.cluster == cluster:
            errors[(key.source, reason)] += count
    own = _own_account(snapshot, cluster)
    lines = _inventory_lines(
        (row for row in snapshot.clients if row.cluster == cluster),
        [o for o in snapshot.own_by_listener if o.cluster == cluster],
    )
    inventory = next((r for r in cluster_sources if r.key.source == SourceName.INVENTORY), None)
    if inventory is not None:
        _add_identities(snapshot, cluster, lines)
    return _Cluster(
        name=cluster,
        inventory=lines,
        own=own,
        blockers=_blockers(snapshot, cluster, lines),
        who=(
            _InventoryStatus(inventory.kept_reading_of(InventoryReading), _source_status(inventory))
            if inventory is not None
            else None
        ),
        broker_sources=broker_sources,
        brokers=brokers,
        client_metrics=snapshot.client_metrics_by_cluster().get(cluster),
        cluster_sources=[_source_status(r) for r in sorted(cluster_sources, key=_by_key)],
        folded=snapshot.folded_total.get(cluster, 0),
        errors=[(source, reason, count) for (source, reason), count in sorted(errors.items())],
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
    # Who runs it, per the cluster's inventory (None: the cluster has none readable); the most active first.
    identities: list[ClientIdentity] | None = None
    identities_total: int = 0
    # Of `connections`: the brokers' own channels', those that may be (in doubt), and those that break the policy
    # (the clients' for certain, on a broker or placed on none).
    own: int = 0
    in_doubt: int = 0
    violating: int = 0

    def add(self, row: JudgedClient) -> None:
        self.connections += row.connections
        if row.connections > 0:
            self.brokers.add(row.broker)
        self.real_versions.add(row.real_software_version)
        if row.violation is not None:
            self.violations.setdefault(row.violation, set())
            if row.violation_detail:
                self.violations[row.violation].add(row.violation_detail)
        self.violating += row.violating
        self.unparseable = self.unparseable or row.unparseable

    def add_own(self, on_listener: ListenerOwn) -> None:
        self.own += on_listener.own_total
        self.in_doubt += on_listener.in_doubt
        if self.violations:
            # Certain in the cluster, on no one broker: still a client's, still breaking the policy.
            self.violating += on_listener.unattributed

    @property
    def clients(self) -> int:
        """The connections that are not the brokers' own: the gauges' count without the channels'."""
        return self.connections - self.own

    @property
    def rank(self) -> int:
        return 0 if self.violating else 1 if self.unparseable or self.in_doubt else 2

    @property
    def policy(self) -> tuple[str, str, str]:
        """What the policy column says: (text, css class, title)."""
        doubt = f"{self.in_doubt} in doubt" if self.in_doubt else ""
        if self.violating:
            text = ", ".join(sorted(self.violations))
            if self.violating != self.connections:
                text += f": {self.violating} of {self.connections} connections"
            return (f"{text}; {doubt}" if doubt else text, "bad", "; ".join(self.violation_details))
        if self.violations and self.in_doubt:
            title = "may be the own channels of brokers whose channels could not be read: not alerted on, not hidden"
            return (f"{', '.join(sorted(self.violations))}: none certain; {doubt}", "warn", title)
        if self.violations:
            return ("OK: the brokers' own connections", "ok", "every connection is one of the brokers' own channels")
        if self.unparseable:
            return ("unparseable version", "warn", "a version rule applies but this version did not parse")
        return ("OK", "ok", "")

    @property
    def broker_list(self) -> list[str]:
        return sorted(self.brokers, key=_broker_order)

    @property
    def folded_versions(self) -> list[str]:
        """The real versions behind a folded row; empty for every other row."""
        if self.software_version != FOLDED_VERSION:
            return []
        return sorted(self.real_versions - {FOLDED_VERSION})

    @property
    def identities_shown(self) -> list[ClientIdentity]:
        return (self.identities or [])[:IDENTITIES_SHOWN]

    @property
    def identities_more(self) -> int:
        return self.identities_total - len(self.identities_shown)

    @property
    def violation_reasons(self) -> list[str]:
        return sorted(self.violations)

    @property
    def violation_details(self) -> list[str]:
        return sorted(detail for details in self.violations.values() for detail in details)


def _inventory_lines(rows: Iterable[JudgedClient], own: Iterable[ListenerOwn] = ()) -> list[_InventoryLine]:
    lines: dict[tuple[str, str], _InventoryLine] = {}
    shown: dict[tuple[str, str], _InventoryLine] = {}  # by real version: the line it is shown on
    for row in rows:
        key = (row.software_name, row.software_version)
        line = lines.setdefault(key, _InventoryLine(*key))
        line.add(row)
        shown[(row.software_name, row.real_software_version)] = line
    for on_listener in own:
        own_line = shown.get((on_listener.software_name, on_listener.software_version))
        if own_line is not None:
            own_line.add_own(on_listener)
    live = [line for line in lines.values() if line.connections > 0]
    return sorted(live, key=lambda line: (line.rank, line.software_name, line.software_version))


# -- the brokers' own connections ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _OwnRow:
    """On one listener, one broker's gauges (`broker`), or every broker's (`broker` is None: the listener's total,
    which alone holds the channels whose destination Kafka does not name)."""

    listener: str
    broker: str | None
    connections: int
    own: int
    channels: str  # e.g. "replica fetchers from brokers 2 and 3: 2; transaction markers from broker 2: 3"
    in_doubt: int = 0  # of the clients' (listener rows only): may be the brokers' own

    @property
    def clients(self) -> int:
        return self.connections - self.own


@dataclass(frozen=True)
class _Unread:
    broker: str
    why: str


@dataclass(frozen=True)
class _OwnAccount:
    rows: list[_OwnRow]
    unplaced: str  # the channels counted per listener only, Kafka naming no destination for them ("" if none)
    unread: list[_Unread]  # brokers whose own channels could not be read this cycle
    in_doubt: list[ListenerOwn]
    unattributed: list[tuple[ListenerOwn, bool]]  # and whether the pair breaks the policy


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _phrase(brokers: Iterable[str]) -> str:
    """For instance "broker 2", "brokers 2 and 3", "brokers 1, 2 and 3"."""
    ordered = sorted(set(brokers), key=_broker_order)
    return f"broker {ordered[0]}" if len(ordered) == 1 else f"brokers {_and(ordered)}"


def _title(channel: str) -> str:
    spec = BY_NAME.get(channel)
    return spec.title if spec is not None else channel


def _channels_text(shares: Iterable[ChannelShare]) -> str:
    by_channel: dict[str, list[ChannelShare]] = defaultdict(list)
    for share in shares:
        if share.connections > 0:
            by_channel[share.channel].append(share)
    parts = []
    for channel, found in sorted(by_channel.items(), key=lambda item: -sum(s.connections for s in item[1])):
        parts.append(f"{_title(channel)} from {_phrase(s.holder for s in found)}: {sum(s.connections for s in found)}")
    return "; ".join(parts)


def _unread_why(snapshot: Snapshot, cluster: str, broker: str) -> str:
    """Why a broker's own channels could not be matched, as far as its poll says (own_connections._Holder.read)."""
    for result in snapshot.results:
        key = result.key
        if key.cluster != cluster or key.broker != broker or key.source not in GAUGE_SOURCES:
            continue
        if not result.ok:
            return f"{key.source} down: {result.error_reason or 'error'}"
        reading = result.reading_of(JmxReading)
        if reading is not None and not reading.channels_read:
            return f"its {key.source} source does not show the channels' metrics"
        return "its release or its listener names (DescribeConfigs) are not known"
    return "not polled"


def _own_account(snapshot: Snapshot, cluster: str) -> _OwnAccount | None:
    on_listeners = [o for o in snapshot.own_by_listener if o.cluster == cluster]
    unread = sorted(
        (broker for (c, broker), read in snapshot.broker_channels_read.items() if c == cluster and not read),
        key=_broker_order,
    )
    if not on_listeners and not unread:
        return None
    raw: dict[tuple[str, str], int] = defaultdict(int)
    for client in snapshot.clients:
        if client.cluster == cluster:
            raw[(client.listener, client.broker)] += client.connections
    placed: dict[tuple[str, str], list[ChannelShare]] = defaultdict(list)
    for at_broker in snapshot.own_by_broker:
        if at_broker.cluster == cluster:
            placed[(at_broker.listener, at_broker.broker)].extend(at_broker.own)
    unplaced: dict[str, list[ChannelShare]] = defaultdict(list)
    in_doubt: dict[str, int] = defaultdict(int)
    for on_listener in on_listeners:
        unplaced[on_listener.listener].extend(on_listener.own_unplaced)
        in_doubt[on_listener.listener] += on_listener.in_doubt
    rows = []
    for listener in sorted({listener for listener, _ in raw} | set(unplaced)):
        brokers = sorted({b for lst, b in raw if lst == listener}, key=_broker_order)
        shares: list[ChannelShare] = []
        for broker in brokers:
            own = placed.get((listener, broker), [])
            shares += own
            n = sum(s.connections for s in own)
            rows.append(_OwnRow(listener, broker, raw[(listener, broker)], n, _channels_text(own)))
        shares += unplaced.get(listener, [])
        total = sum(s.connections for s in shares)
        connections = sum(raw[(listener, broker)] for broker in brokers)
        rows.append(_OwnRow(listener, None, connections, total, _channels_text(shares), in_doubt[listener]))
    violating = {(row.software_name, row.real_software_version) for row in snapshot.clients if row.violation}
    return _OwnAccount(
        rows=rows,
        unplaced=_and(titles) if (titles := sorted({_title(s.channel) for v in unplaced.values() for s in v})) else "",
        unread=[_Unread(broker, _unread_why(snapshot, cluster, broker)) for broker in unread],
        in_doubt=[o for o in on_listeners if o.in_doubt],
        unattributed=[(o, (o.software_name, o.software_version) in violating) for o in on_listeners if o.unattributed],
    )


def _add_identities(snapshot: Snapshot, cluster: str, lines: list[_InventoryLine]) -> None:
    """Each line's identities from the join (a folded line gathers those of every version behind it)."""
    by_line = {(line.software_name, line.software_version): line for line in lines}
    for pair in snapshot.identities:
        line = by_line.get((pair.software_name, pair.software_version))
        if pair.cluster != cluster or line is None:
            continue
        line.identities = [*(line.identities or []), *pair.identities]
        line.identities_total += pair.identities_total
    for line in lines:
        if line.identities is not None:
            line.identities.sort(key=lambda identity: -identity.requests)


def _broker_order(broker: str) -> tuple[int, int | str]:
    return (0, int(broker)) if broker.isdigit() else (1, broker)


def _by_key(result: SourceResult) -> tuple[tuple[int, int | str], str]:
    return (_broker_order(result.key.broker), result.key.source)


@dataclass(frozen=True)
class _BrokerLine:
    broker: str
    facts: BrokerFacts | None  # None until a protocol source has answered
    statuses: list[tuple[str, _SourceStatus | None]]  # per source column; None when not polled
    # From its JMX: how it keeps its metadata (zookeeper, migrating, kraft) and its exact release; None: not said.
    mode: str | None = None
    release: str | None = None


def _brokers(snapshot: Snapshot, cluster: str) -> tuple[list[str], list[_BrokerLine]]:
    """The source columns and one line per broker of `cluster`."""
    by_broker: dict[str, dict[str, SourceResult]] = defaultdict(dict)
    for result in snapshot.results:
        if result.key.cluster == cluster and result.key.broker != CLUSTER_BROKER:
            by_broker[result.key.broker][result.key.source] = result
    sources = sorted({source for results in by_broker.values() for source in results})
    lines = []
    for broker in sorted(by_broker, key=_broker_order):
        results = by_broker[broker]
        facts = next((f for r in results.values() if (f := r.reading_of(BrokerFacts)) is not None), None)
        reading = next((j for r in results.values() if (j := r.reading_of(JmxReading)) is not None), None)
        statuses = [(source, _source_status(results[source]) if source in results else None) for source in sources]
        mode, release = (reading.metadata_mode, reading.release) if reading is not None else (None, None)
        lines.append(_BrokerLine(broker, facts, statuses, mode, release))
    return sources, lines
