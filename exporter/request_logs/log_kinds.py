"""What kind of request log a broker writes, told from its lines, and what each kind cannot tell.

A broker's ``kafka.request.logger`` writes one of three logs (broker-config/ ships the middle one):

* **full DEBUG**: a line per request, DEBUG, or INFO for a request in a deprecated API version;
* **identities + INFO**: the appender's filters keep the DEBUG lines of the requests that say who a client is, and
  every INFO line. Those requests are ApiVersions (API key 18), which a client sends on each new connection with its
  software name and version (KIP-511), and Metadata (API key 3): a client that sends ApiVersions before it
  authenticates with SASL (librdkafka does) is answered by the authenticator, never logged
  (``SaslServerAuthenticator.handleApiVersionsRequest``, 4.3.0 lines 528-529 and 572-581), and its first logged
  request is Metadata, which every client then repeats at each metadata refresh (five minutes by default);
* **INFO only**: the logger at INFO writes only the deprecated-version requests (3.9.1 and later; older brokers log
  no request at INFO, so their filtered log holds the identities alone).

The kind is read from the lines' levels and API keys: a DEBUG line of another API than those two means full DEBUG;
DEBUG lines that are all of them mean the filtered log; INFO lines alone, INFO only. A filtered log over a time when
no client connected or refreshed its metadata holds only INFO lines and reads as INFO only, which is what it could
tell then.

Kept free of Spark: the job classifies per-file counts it aggregated, the exporter reads the published result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

#: The API keys whose DEBUG lines the filtered log keeps: ApiVersions and Metadata.
IDENTITY_API_KEYS = (18, 3)


class LogKind(StrEnum):
    FULL_DEBUG = "full_debug"
    IDENTITIES_AND_INFO = "identities_and_info"
    INFO_ONLY = "info_only"
    #: Lines were read but none tells the logger's level (no usable request line), or an older job version read
    #: them and kept no levels.
    UNKNOWN = "unknown"


TITLES: Mapping[LogKind, str] = {
    LogKind.FULL_DEBUG: "full DEBUG",
    LogKind.IDENTITIES_AND_INFO: "identities + INFO",
    LogKind.INFO_ONLY: "INFO only",
    LogKind.UNKNOWN: "unknown",
}

#: What the inventory's tables cannot say when read from such a log.
CANNOT_TELL: Mapping[LogKind, tuple[str, ...]] = {
    LogKind.FULL_DEBUG: (),
    LogKind.IDENTITIES_AND_INFO: (
        "request counts per API and version: requests counts only the ApiVersions, Metadata and deprecated-version "
        "lines",
        "which APIs a client uses in current versions (api_usage lists ApiVersions, Metadata and deprecated "
        "versions only)",
        "consumer groups' protocols (JoinGroup and SyncGroup are not kept)",
        "clients connected before the filtered log began, until they reconnect or refresh their metadata",
        "on brokers before 3.9.1, requests in deprecated versions: those log every request at DEBUG, so the filter "
        "drops them (the clients sending them are named, not their requests)",
    ),
    LogKind.INFO_ONLY: (
        "who runs each client software version: only clients sending a deprecated API version are named",
        "clients that only use current API versions: they are not in the tables at all",
        "request counts per API, except deprecated versions",
        "client software names and versions (ApiVersions is not logged): senders appear as unknown",
    ),
    LogKind.UNKNOWN: ("what the log holds: no request line told the logger's level",),
}


@dataclass(frozen=True)
class LineLevels:
    """A log's usable request lines by what they tell of its kind."""

    identity_debug: int = 0
    other_debug: int = 0
    info: int = 0

    FIELDS: ClassVar[tuple[str, ...]] = ("identity_debug", "other_debug", "info")

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> LineLevels:
        """From a mapping with the fields (a Spark row's ``asDict()``, a state file's JSON)."""
        return cls(**{name: int(data.get(name) or 0) for name in cls.FIELDS})

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> LineLevels | None:
        return None if data is None else cls.of(data)

    def to_json(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __add__(self, other: LineLevels) -> LineLevels:
        return LineLevels(
            self.identity_debug + other.identity_debug,
            self.other_debug + other.other_debug,
            self.info + other.info,
        )

    @property
    def kind(self) -> LogKind:
        if self.other_debug:
            return LogKind.FULL_DEBUG
        if self.identity_debug:
            return LogKind.IDENTITIES_AND_INFO
        if self.info:
            return LogKind.INFO_ONLY
        return LogKind.UNKNOWN


@dataclass(frozen=True)
class DirectoryKind:
    """The request log files of one directory (one broker's log directory) and their kind."""

    directory: str
    files: int
    levels: LineLevels
    #: Files an older job version read without keeping levels: their kind is unknown.
    files_without_levels: int = 0

    @property
    def kind(self) -> LogKind:
        return self.levels.kind

    def to_json(self) -> dict[str, object]:
        return {
            "directory": self.directory,
            "kind": self.kind.value,
            "title": TITLES[self.kind],
            "files": self.files,
            "files_without_levels": self.files_without_levels,
            "lines": self.levels.to_json(),
            "cannot_tell": list(CANNOT_TELL[self.kind]),
        }


def directory_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def by_directory(files: Iterable[tuple[str, LineLevels | None]]) -> list[DirectoryKind]:
    """Per directory of the given request log files (path, its line levels or None when not recorded)."""
    totals: dict[str, tuple[int, LineLevels, int]] = {}
    for path, levels in files:
        count, summed, without = totals.get(directory_of(path), (0, LineLevels(), 0))
        totals[directory_of(path)] = (
            count + 1,
            summed + (levels or LineLevels()),
            without + (levels is None),
        )
    return [DirectoryKind(d, count, summed, without) for d, (count, summed, without) in sorted(totals.items())]
