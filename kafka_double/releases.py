"""What an emulated Kafka release advertises, derived from the exporter's release table
(``exporter.kafka_releases.table``, docs/kafka-facts/releases.md#the-release-table).

The CSV lists what each release's *specs* define; a broker advertises less. The rules applied here
are those of docs/kafka-facts/releases.md#specs-versus-advertisement, per metadata mode: a 2.8-3.9 broker is either a
ZooKeeper-mode or a KRaft broker, never the union (docs/kafka-facts/protocol.md#zookeeper-mode-and-kraft-brokers).
tests/double/test_api_versions_oracle.py checks the result against Kafka's own kafka-clients 4.3.0 and 3.9.0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from exporter.kafka_releases import table
from exporter.kafka_releases.table import ApiRange, known_releases

from .sasl_server import NonceCheck

__all__ = [
    "KRAFT",
    "METADATA_MODES",
    "ZOOKEEPER",
    "AdvertisedApi",
    "Feature",
    "Release",
    "check_metadata_mode",
    "default_metadata_mode",
    "get_release",
    "known_releases",
]

_PRODUCE = 0
_API_VERSIONS = 18

# How a broker keeps its metadata: a ZooKeeper-mode broker (KafkaServer) or a KRaft broker (BrokerServer).
ZOOKEEPER = "zookeeper"
KRAFT = "kraft"
METADATA_MODES = (ZOOKEEPER, KRAFT)
# Each message spec's "listeners" field (clients/src/main/resources/common/message/*.json, 2.8.0+) names the
# listener types that serve it; ApiKeys.apisForListener(ListenerType) collects them, and the broker's
# DefaultApiVersionManager advertises exactly that set (3.9 core/src/main/scala/kafka/server/ApiVersionManager.scala:
# enabledApis = ApiKeys.apisForListener(listenerType); ApiVersionsResponse.filterApis). A ZooKeeper-mode broker's
# client listeners are ListenerType.ZK_BROKER ("zkBroker"), a KRaft broker's ListenerType.BROKER ("broker").
_LISTENER_TYPE = {ZOOKEEPER: "zkBroker", KRAFT: "broker"}
# KRaft brokers first shipped in 2.8.0 (KIP-500 early access); ZooKeeper mode was removed in 4.0.0 (KIP-833).
_FIRST_KRAFT = (2, 8, 0)
_LAST_ZOOKEEPER_BEFORE = (4, 0, 0)
# KRaft was declared production-ready in 3.3.0 (KIP-833); before that, clusters ran in ZooKeeper mode.
_KRAFT_PRODUCTION_READY = (3, 3, 0)


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
    metadata_mode: str = KRAFT  # ZOOKEEPER or KRAFT
    #: The release table's row whose specs this release has: ``version`` itself, or for a patch release the table
    #: lacks, the release of its line whose specs it shares (``PATCH_RELEASES``).
    specs_release: str = ""

    def __post_init__(self) -> None:
        if not self.specs_release:
            object.__setattr__(self, "specs_release", self.version)

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
        if self.metadata_mode == ZOOKEEPER:
            # A ZooKeeper-mode broker supports no features: KafkaServer's brokerFeatures is
            # BrokerFeatures.createEmpty() (3.9 core/src/main/scala/kafka/server/KafkaServer.scala:186; 2.8-3.2
            # createDefault() is empty too), and the controller finalizes its (empty) default features in the
            # /feature znode (3.9 core/src/main/scala/kafka/controller/KafkaController.scala:430-437).
            return []
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
        # KRaft 2.8-3.2: KIP-584 fields exist but no feature is defined before metadata.version (KIP-778, 3.3).
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


def default_metadata_mode(release: str) -> str:
    """The mode a broker of ``release`` runs in when none is chosen: ZooKeeper before 3.3.0 (KRaft was early access
    or preview), KRaft from 3.3.0 (production-ready, and the only mode with KIP-714 client metrics)."""
    return KRAFT if table.release_key(release) >= _KRAFT_PRODUCTION_READY else ZOOKEEPER


def check_metadata_mode(release: str, metadata_mode: str) -> None:
    """A clear error for a mode no broker of ``release`` can run in."""
    if metadata_mode not in METADATA_MODES:
        raise ValueError(f"metadata_mode {metadata_mode!r} is not one of {', '.join(METADATA_MODES)}")
    key = table.release_key(release)
    if metadata_mode == KRAFT and key < _FIRST_KRAFT:
        raise ValueError(f"Kafka {release} has no KRaft mode (KRaft brokers arrived in 2.8.0): use zookeeper")
    if metadata_mode == ZOOKEEPER and key >= _LAST_ZOOKEEPER_BEFORE:
        raise ValueError(f"Kafka {release} has no ZooKeeper mode (removed in 4.0.0, KIP-833): use kraft")


def _in_scope(row: table.SpecRow, metadata_mode: str) -> bool:
    # Pre-2.8 specs carry no "listeners" field: every API is served (and every broker is a ZooKeeper one).
    return not row.listeners or _LISTENER_TYPE[metadata_mode] in row.listeners


def _advertised(row: table.SpecRow, metadata_mode: str) -> AdvertisedApi | None:
    if row.removed or row.disabled or not _in_scope(row, metadata_mode) or row.api_key in table.TELEMETRY_KEYS:
        return None  # removed, disabled, not served by this mode's broker listener, or telemetry without a receiver
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


#: Patch releases the table does not list, emulated from the specs of the release of their line that it does: their
#: message specs give every API the same versions (``git diff <x.y.0> <patch> --
#: clients/src/main/resources/common/message``: 2.8.2 rewrote a comment of MetadataRequest.json, 3.3.2 made
#: JoinGroupResponse's GroupInstanceId ignorable, 3.7.1 and 3.7.2 changed no spec). What else a patch changed is
#: told by its own number (``Release.key``: 3.7.2's SCRAM nonce check, for one). These are the ZooKeeper-mode
#: releases real_kafka runs, and tests/e2e/test_zookeeper_releases.py compares them with the real brokers.
PATCH_RELEASES: dict[str, str] = {"2.8.2": "2.8.0", "3.3.2": "3.3.0", "3.7.2": "3.7.0"}


@functools.cache
def get_release(release: str, metadata_mode: str | None = None) -> Release:
    """What an emulated ``release`` advertises in ``metadata_mode`` (None: :func:`default_metadata_mode`); raises
    UnknownReleaseError (a ValueError) naming the known releases, or a ValueError for a mode the release lacks."""
    specs = PATCH_RELEASES.get(release, release)
    rows = table.release_rows(specs)
    mode = default_metadata_mode(release) if metadata_mode is None else metadata_mode
    check_metadata_mode(release, mode)
    apis = {row.api_key: api for row in rows if (api := _advertised(row, mode)) is not None}
    return Release(version=release, apis=apis, metadata_mode=mode, specs_release=specs)
