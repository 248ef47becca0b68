"""What an emulated Kafka release advertises, derived from the exporter's copy of
``api_versions_by_release.csv`` (docs/kafka-facts/releases.md#the-release-table).

The CSV lists what each release's *specs* define; a broker advertises less. The rules applied here
are those of docs/kafka-facts/releases.md#specs-versus-advertisement.
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass, field
from importlib import resources

_CSV_PACKAGE = "exporter.kafka_releases"
_CSV_NAME = "api_versions_by_release.csv"

# Telemetry APIs are hidden without a telemetry receiver (docs/kafka-facts/protocol.md#what-a-broker-advertises).
_TELEMETRY_KEYS = frozenset({71, 72})
_PRODUCE = 0
_API_VERSIONS = 18


def parse_release(release: str) -> tuple[int, int, int]:
    parts = release.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a Kafka release string: {release!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def _parse_version_set(text: str) -> frozenset[int]:
    """CSV deprecated_versions: '', '0', '0-3' (ranges from the specs' deprecatedVersions)."""
    text = text.strip()
    if not text:
        return frozenset()
    out: set[int] = set()
    for part in text.split():
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def _parse_flexible(text: str) -> int | None:
    """CSV flexible_versions: 'none'/'' (never flexible) or 'N+'."""
    text = text.strip()
    if not text or text == "none":
        return None
    return int(text.rstrip("+"))


def enum_name(api_name: str) -> str:
    """Java ``ApiKeys`` constant name, e.g. API_VERSIONS (docs/kafka-facts/request-log.md#json-form)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api_name).upper()


@dataclass(frozen=True)
class ApiRange:
    api_key: int
    name: str
    min_version: int
    max_version: int
    deprecated: frozenset[int] = frozenset()
    flexible_from: int | None = None
    # Lowest version the broker actually parses; differs from min_version only for 4.0+ Produce.
    accepted_min: int | None = None

    def accepts(self, version: int) -> bool:
        lo = self.min_version if self.accepted_min is None else self.accepted_min
        return lo <= version <= self.max_version

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from


@dataclass(frozen=True)
class Feature:
    name: str
    min_version: int
    max_version: int
    finalized_level: int


@dataclass(frozen=True)
class Release:
    version: str
    apis: dict[int, ApiRange] = field(repr=False)

    @property
    def key(self) -> tuple[int, int, int]:
        return parse_release(self.version)

    @property
    def has_client_mbeans(self) -> bool:
        # docs/kafka-facts/jmx-mbeans.md#client-gauges: KIP-511's broker side (gauge + clientInformation) is 2.5.0+.
        return self.key >= (2, 5, 0)

    @property
    def connection_id_has_processor(self) -> bool:
        # docs/kafka-facts/request-log.md#connection-ids: processor-id segment in connection ids from 4.0.0.
        return self.key >= (4, 0, 0)

    @property
    def deprecated_metrics(self) -> bool:
        # docs/kafka-facts/jmx-mbeans.md#deprecated-requests-meter: from 3.7.0; 4.x specs have no deprecatedVersions.
        return (3, 7, 0) <= self.key < (4, 0, 0)

    @property
    def json_request_log(self) -> bool:
        # docs/kafka-facts/request-log.md#json-form: JSON request log from 2.8.0 (KIP-673).
        return self.key >= (2, 8, 0)

    @property
    def api_versions_max(self) -> int:
        return self.apis[_API_VERSIONS].max_version

    @property
    def has_features(self) -> bool:
        # docs/kafka-facts/protocol.md#feature-fields-kip-584: SupportedFeatures/FinalizedFeatures from 2.7.0.
        return self.key >= (2, 7, 0)

    def api(self, api_key: int) -> ApiRange | None:
        return self.apis.get(api_key)

    def advertised(self) -> list[ApiRange]:
        return [self.apis[k] for k in sorted(self.apis)]

    def is_deprecated(self, api_key: int, version: int) -> bool:
        rng = self.apis.get(api_key)
        return rng is not None and version in rng.deprecated

    def features(self) -> list[Feature]:
        return _features_for(self.key)


# metadata.version levels are NOT in the reference; these are approximate "latest production level of
# that release" values so the SupportedFeatures/FinalizedFeatures fields look plausible (3.3+ KRaft).
_METADATA_VERSION_MAX: list[tuple[tuple[int, int], int]] = [
    ((3, 3), 7),
    ((3, 4), 8),
    ((3, 5), 11),
    ((3, 6), 14),
    ((3, 7), 19),
    ((3, 8), 20),
    ((3, 9), 21),
    ((4, 0), 25),
    ((4, 1), 27),
    ((4, 2), 28),
    ((4, 3), 29),
]


def _features_for(key: tuple[int, int, int]) -> list[Feature]:
    major_minor = key[:2]
    if major_minor < (3, 3):
        # 2.7-3.2: KIP-584 fields exist but ZooKeeper-mode brokers support no features by default.
        return []
    level = max(lvl for mm, lvl in _METADATA_VERSION_MAX if mm <= major_minor)
    feats = [Feature("metadata.version", 1, level, level)]
    if major_minor >= (3, 9):
        # kraft.version (KIP-853, 3.9) has MinVersion 0: the one KAFKA-17492 hides from v<4 requests.
        feats.append(Feature("kraft.version", 0, 1, 1))
    if major_minor >= (4, 0):
        feats += [Feature("group.version", 0, 1, 1), Feature("transaction.version", 0, 2, 2)]
    if major_minor >= (4, 1):
        feats.append(Feature("eligible.leader.replicas.version", 0, 1, 0))
    return feats


def _is_broker_scoped(listeners: str) -> bool:
    """Only APIs scoped to broker listeners are advertised (docs/kafka-facts/protocol.md#what-a-broker-advertises).

    Per row: an empty column is a pre-2.8 spec without scoping (all served); ``broker`` is a KRaft
    broker; a row whose only broker scope is ``zkBroker`` (2.8-3.9, e.g. InitProducerId in 2.8,
    LeaderAndIsr in 3.x) is served by the ZooKeeper-mode brokers that 2.8-3.9 clusters normally run.
    """
    scopes = set(listeners.split())
    if not scopes:
        return True
    return "broker" in scopes or "zkBroker" in scopes


@functools.cache
def _load() -> dict[str, Release]:
    text = resources.files(_CSV_PACKAGE).joinpath(_CSV_NAME).read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    by_release: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_release.setdefault(row["kafka_release"], []).append(row)
    return {rel: _build(rel, rel_rows) for rel, rel_rows in by_release.items()}


def _build(release: str, rows: list[dict[str, str]]) -> Release:
    key = parse_release(release)
    apis: dict[int, ApiRange] = {}
    for row in rows:
        api_key = int(row["api_key"])
        notes = row["notes"]
        if not row["min_version"] or not row["max_version"]:
            continue  # "removed in this release: validVersions=none"
        if "disabled" in notes:
            continue  # 2.7.0's disabled quorum APIs (docs/kafka-facts/protocol.md#what-a-broker-advertises)
        if api_key in _TELEMETRY_KEYS:
            continue
        if not _is_broker_scoped(row["listeners"]):
            continue
        lo, hi = int(row["min_version"]), int(row["max_version"])
        if row["latest_version_unstable"] == "true":
            hi -= 1  # unstable latest version hidden unless unstable.api.versions.enable=true
            if hi < lo:
                continue
        accepted_min = lo
        if api_key == _PRODUCE and key >= (4, 0, 0):
            lo = 0  # KAFKA-18659: 4.0+ advertises Produce min 0 (docs/kafka-facts/releases.md#kip-896-exceptions)
        apis[api_key] = ApiRange(
            api_key=api_key,
            name=row["api_name"],
            min_version=lo,
            max_version=hi,
            deprecated=_parse_version_set(row["deprecated_versions"]),
            flexible_from=_parse_flexible(row["flexible_versions"]),
            accepted_min=accepted_min,
        )
    return Release(version=release, apis=apis)


def known_releases() -> list[str]:
    return sorted(_load(), key=parse_release)


def get_release(release: str) -> Release:
    releases = _load()
    if release not in releases:
        raise ValueError(f"unknown Kafka release {release!r}; known: {', '.join(known_releases())}")
    return releases[release]
