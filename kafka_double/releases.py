"""What an emulated Kafka release advertises, derived from the exporter's release table
(``exporter.kafka_releases.table``, docs/kafka-facts/releases.md#the-release-table).

The CSV lists what each release's *specs* define; a broker advertises less. The rules applied here
are those of docs/kafka-facts/releases.md#specs-versus-advertisement.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from exporter.kafka_releases import table
from exporter.kafka_releases.table import ApiRange, known_releases

from .sasl_server import NonceCheck

__all__ = ["AdvertisedApi", "Feature", "Release", "get_release", "known_releases"]

_PRODUCE = 0
_API_VERSIONS = 18


@dataclass(frozen=True, slots=True)
class AdvertisedApi(ApiRange):
    """An advertised range plus what the double needs to parse and meter requests of that API."""

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
    apis: dict[int, AdvertisedApi] = field(repr=False)

    @property
    def key(self) -> tuple[int, int, int]:
        return table.release_key(self.version)

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
    def scram_nonce_check(self) -> NonceCheck:
        # docs/kafka-facts/protocol.md#scram-nonce: unchecked, then a suffix check in 3.7.2, 3.8.1 and 3.9.0, exact
        # from 4.0.0.
        if self.key >= (4, 0, 0):
            return "exact"
        if self.key >= (3, 8, 1) or (3, 7, 2) <= self.key < (3, 8, 0):
            return "suffix"
        return "none"

    @property
    def api_versions_max(self) -> int:
        return self.apis[_API_VERSIONS].max_version

    @property
    def has_features(self) -> bool:
        # docs/kafka-facts/protocol.md#feature-fields-kip-584: SupportedFeatures/FinalizedFeatures from 2.7.0.
        return self.key >= (2, 7, 0)

    def api(self, api_key: int) -> AdvertisedApi | None:
        return self.apis.get(api_key)

    def advertised(self) -> list[AdvertisedApi]:
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


def _advertised(row: table.SpecRow) -> AdvertisedApi | None:
    if not row.served_by_brokers or row.api_key in table.TELEMETRY_KEYS:
        return None  # removed, disabled, controller-only, or telemetry without a receiver
    spec = row.spec_range()
    lo, hi = spec.min_version, spec.max_version
    if row.latest_version_unstable:
        hi -= 1  # unstable latest version hidden unless unstable.api.versions.enable=true
        if hi < lo:
            return None
    accepted_min = lo
    if row.api_key == _PRODUCE and row.release_key >= (4, 0, 0):
        lo = 0  # KAFKA-18659: 4.0+ advertises Produce min 0 (docs/kafka-facts/releases.md#kip-896-exceptions)
    return AdvertisedApi(
        api_key=row.api_key,
        name=row.api_name,
        min_version=lo,
        max_version=hi,
        deprecated=row.deprecated_versions,
        flexible_from=row.flexible_from,
        accepted_min=accepted_min,
    )


@functools.cache
def get_release(release: str) -> Release:
    """What an emulated ``release`` advertises; raises UnknownReleaseError (a ValueError) naming the known ones."""
    apis = {row.api_key: api for row in table.release_rows(release) if (api := _advertised(row)) is not None}
    return Release(version=release, apis=apis)
