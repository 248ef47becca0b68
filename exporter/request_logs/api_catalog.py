"""API version ranges per Kafka release, from the packaged ``api_versions_by_release.csv``.

The CSV lists what each release's message specs define, which is what the broker accepts: in 4.x Produce
starts at v3 although brokers still advertise v0 (KAFKA-18659), Metadata v0-3 and FindCoordinator v0 stayed
(KAFKA-18648, KAFKA-18270), and JoinGroup v0-1 came back in 4.0.1 (KAFKA-19444). So the spec range of the
target release is exactly the range an upgraded broker will still serve.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from dataclasses import dataclass
from importlib import resources

DEFAULT_TARGET_RELEASE = "4.0.0"


@dataclass(frozen=True)
class ApiRange:
    api_key: int
    api_name: str
    min_version: int
    max_version: int


class UnknownReleaseError(ValueError):
    pass


def enum_name(api_name: str) -> str:
    """Java ``ApiKeys`` constant name written by 2.x text lines, e.g. ApiVersions -> API_VERSIONS."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api_name).upper()


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


@functools.cache
def _rows() -> tuple[dict[str, str], ...]:
    text = (
        resources.files("exporter.kafka_releases").joinpath("api_versions_by_release.csv").read_text(encoding="utf-8")
    )
    return tuple(csv.DictReader(io.StringIO(text)))


def known_releases() -> list[str]:
    return sorted({row["kafka_release"] for row in _rows()}, key=_release_key)


def ranges(release: str) -> dict[int, ApiRange]:
    """API key -> range served by ``release``; raises UnknownReleaseError naming the known releases."""
    out = {
        int(row["api_key"]): ApiRange(
            int(row["api_key"]), row["api_name"], int(row["min_version"]), int(row["max_version"])
        )
        for row in _rows()
        # Rows with no range are APIs the release no longer serves at all (4.0 removed the ZooKeeper-era ones).
        if row["kafka_release"] == release and row["min_version"]
    }
    if not out:
        raise UnknownReleaseError(
            f"--target-release {release!r} is not a release in api_versions_by_release.csv; "
            f"known: {', '.join(known_releases())}"
        )
    return out


@functools.cache
def api_keys_by_enum_name() -> dict[str, int]:
    """Every enum spelling any release used (ListOffset/ListOffsets, AlterIsr/AlterPartition, ...) -> key."""
    return {enum_name(row["api_name"]): int(row["api_key"]) for row in _rows()}


@functools.cache
def latest_api_names() -> dict[int, str]:
    """API key -> its name in the newest release that has it."""
    names: dict[int, str] = {}
    for row in sorted(_rows(), key=lambda r: _release_key(r["kafka_release"])):
        names[int(row["api_key"])] = row["api_name"]
    return names
