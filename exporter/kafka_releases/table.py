"""The packaged ``api_versions_by_release.csv``: what each Kafka release's message specs define, per API key.

One loader for every reader: release inference, the Spark job's target ranges and enum names, and the broker
double's advertisements all start from :func:`rows`. The CSV lists what the *specs* define, which is what a broker
accepts; what a broker advertises is less (unstable top versions, listener scopes) and is each reader's business.
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass
from importlib import resources

CSV_NAME = "api_versions_by_release.csv"

ReleaseKey = tuple[int, int, int]
# Client-telemetry APIs (KIP-714): a broker hides them unless a telemetry receiver is configured
# (docs/kafka-facts/protocol.md#what-a-broker-advertises).
TELEMETRY_KEYS = frozenset({71, 72})


class UnknownReleaseError(ValueError):
    """A release that is not in the table; the message names the known ones."""


@dataclass(frozen=True, slots=True)
class ApiRange:
    """The [min, max] versions of one API key, as a spec defines or a broker advertises them."""

    api_key: int
    name: str
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class SpecRow:
    """One CSV row: one release's spec of one API key."""

    release: str
    api_key: int
    api_name: str
    # None for both: the key is listed but the release no longer serves it (validVersions=none, 4.0's removals).
    min_version: int | None
    max_version: int | None
    deprecated_versions: frozenset[int]
    flexible_from: int | None  # None: never flexible
    latest_version_unstable: bool
    listeners: frozenset[str]  # empty before 2.8 (specs were not scoped)
    notes: str

    @property
    def release_key(self) -> ReleaseKey:
        return release_key(self.release)

    @property
    def removed(self) -> bool:
        return self.min_version is None

    @property
    def disabled(self) -> bool:
        # 2.7.0's quorum APIs: in the code but ApiKeys isEnabled=false, so never advertised.
        return "disabled" in self.notes

    @property
    def served_by_brokers(self) -> bool:
        """Whether a broker listener serves this row's range: it is neither removed nor disabled, and it is
        scoped to brokers (docs/kafka-facts/protocol.md#what-a-broker-advertises). No scope is a pre-2.8 spec
        (all served); ``broker`` is a KRaft broker; a row whose only broker scope is ``zkBroker`` (2.8-3.9, e.g.
        InitProducerId in 2.8) is served by the ZooKeeper-mode brokers 2.8-3.9 clusters normally run."""
        scoped = not self.listeners or bool(self.listeners & {"broker", "zkBroker"})
        return not self.removed and not self.disabled and scoped

    def spec_range(self) -> ApiRange:
        if self.min_version is None or self.max_version is None:
            raise ValueError(f"{self.release} API key {self.api_key} ({self.api_name}) has no range: removed")
        return ApiRange(self.api_key, self.api_name, self.min_version, self.max_version)


def release_key(release: str) -> ReleaseKey:
    """'3.9.1' -> (3, 9, 1), for ordering releases."""
    parts = release.split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"Kafka release {release!r} is not of the form major.minor.patch, e.g. 3.9.1")
    major, minor, patch = (int(part) for part in parts)
    return major, minor, patch


def enum_name(api_name: str) -> str:
    """Java ``ApiKeys`` constant name (request logs write it), e.g. ApiVersions -> API_VERSIONS."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api_name).upper()


def _version_set(text: str) -> frozenset[int]:
    """deprecated_versions: '', '0' or '0-3' (the specs' deprecatedVersions)."""
    out: set[int] = set()
    for part in text.split():
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return frozenset(out)


def _flexible_from(text: str) -> int | None:
    """flexible_versions: '' or 'none' (never flexible), or 'N+'."""
    text = text.strip()
    return None if not text or text == "none" else int(text.rstrip("+"))


def _optional_int(text: str) -> int | None:
    return int(text) if text else None


def _row(raw: dict[str, str], line: int) -> SpecRow:
    try:
        release_key(raw["kafka_release"])
        row = SpecRow(
            release=raw["kafka_release"],
            api_key=int(raw["api_key"]),
            api_name=raw["api_name"],
            min_version=_optional_int(raw["min_version"]),
            max_version=_optional_int(raw["max_version"]),
            deprecated_versions=_version_set(raw["deprecated_versions"]),
            flexible_from=_flexible_from(raw["flexible_versions"]),
            latest_version_unstable=raw["latest_version_unstable"] == "true",
            listeners=frozenset(raw["listeners"].split()),
            notes=raw["notes"],
        )
    except ValueError as exc:
        raise ValueError(f"{CSV_NAME} line {line}: {exc}") from exc
    if (row.min_version is None) != (row.max_version is None):
        raise ValueError(f"{CSV_NAME} line {line}: min_version and max_version must both be set or both empty")
    return row


@functools.cache
def rows() -> tuple[SpecRow, ...]:
    """Every row, oldest release first (file order within a release)."""
    text = resources.files("exporter.kafka_releases").joinpath(CSV_NAME).read_text(encoding="utf-8")
    # Line 1 is the header.
    parsed = [_row(raw, line) for line, raw in enumerate(csv.DictReader(text.splitlines()), start=2)]
    return tuple(sorted(parsed, key=lambda row: row.release_key))


@functools.cache
def known_releases() -> tuple[str, ...]:
    """Every release in the table, oldest first."""
    return tuple(dict.fromkeys(row.release for row in rows()))


def release_rows(release: str) -> tuple[SpecRow, ...]:
    """The rows of one release; raises UnknownReleaseError naming the known releases."""
    found = _rows_by_release().get(release)
    if found is None:
        raise UnknownReleaseError(
            f"Kafka release {release!r} is not in {CSV_NAME}; known: {', '.join(known_releases())}"
        )
    return found


@functools.cache
def _rows_by_release() -> dict[str, tuple[SpecRow, ...]]:
    grouped: dict[str, list[SpecRow]] = {}
    for row in rows():
        grouped.setdefault(row.release, []).append(row)
    return {release: tuple(of_release) for release, of_release in grouped.items()}


def ranges(release: str) -> dict[int, ApiRange]:
    """API key -> spec range of every API ``release`` serves; raises UnknownReleaseError naming the known ones."""
    return {row.api_key: row.spec_range() for row in release_rows(release) if not row.removed}


@functools.cache
def api_names() -> dict[int, str]:
    """API key -> its name in the newest release that has it (key 74 is ListConfigResources since 4.1)."""
    return {row.api_key: row.api_name for row in rows()}


def api_name(api_key: int) -> str:
    """The API's name in the newest release that defines it; UnknownApiN for a key no release has."""
    return api_names().get(api_key, f"UnknownApi{api_key}")


@functools.cache
def api_keys_by_enum_name() -> dict[str, int]:
    """Every enum spelling any release used (ListOffset/ListOffsets, AlterIsr/AlterPartition, ...) -> key."""
    return {enum_name(row.api_name): row.api_key for row in rows()}


@functools.cache
def api_keys_by_name() -> dict[str, int]:
    """Every spec name any release used (ListOffset/ListOffsets, AlterIsr/AlterPartition, ...) -> key: the
    ``request`` tag of the broker's RequestMetrics MBeans."""
    return {row.api_name: row.api_key for row in rows()}
