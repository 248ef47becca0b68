"""The inventory job's latest publication for one cluster: who (clientId, principal, source host, listener) runs
each client software version, as of the job's last run.

The job replaces ``DIR/publication.json`` by rename once a run is complete, so reading the run it names never sees
half a run. Each cycle costs one stat of that file; a new publication is parsed in a worker thread. When a newer
one cannot be read, the last good reading is handed over with the error: `up` says 0 and why, the identities stay
with their age. Memory is bounded by ``max_loaded_identities`` (the most active rows are kept, the rest counted).
"""

from __future__ import annotations

import asyncio
import csv
import heapq
import json
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from exporter.config.settings import ClusterInventory
from exporter.request_logs.layout import (
    CLIENTS_COLUMNS,
    CLIENTS_CSV,
    FORMAT,
    KIND_API_VERSION,
    PUBLICATION,
    UPGRADE_IMPACT_COLUMNS,
    UPGRADE_IMPACT_CSV,
)
from exporter.request_logs.log_kinds import LogKind
from exporter.snapshot import CLUSTER_BROKER, ClientIdentity, IdentityKey, InventoryReading, SourceResult
from exporter.sources.base import Poll, Reason, Source, SourceError, SourceName

#: publication.json is a few KB; anything much larger is not one.
_MAX_POINTER_BYTES = 1 << 20
_LOG_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


@dataclass(frozen=True)
class InventoryProblem(Exception):
    """Why a publication cannot be read, phrased for the operator."""

    reason: Reason
    message: str

    def __str__(self) -> str:
        return self.message


def _log_time(text: str | None) -> float | None:
    """The brokers' log time carries no zone: read as UTC (the true time for brokers that log in UTC)."""
    if not text:
        return None
    try:
        return datetime.strptime(text, _LOG_TIME_FORMAT).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _not_published(directory: Path) -> InventoryProblem:
    return InventoryProblem(
        Reason.MISSING,
        f"no inventory published in {directory} yet: run `kafka-client-exporter inventory --output {directory}`",
    )


def _pointer(directory: Path) -> dict:
    path = directory / PUBLICATION
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_POINTER_BYTES + 1)
    except FileNotFoundError:
        raise _not_published(directory) from None
    except OSError as exc:
        raise InventoryProblem(Reason.UNREADABLE, f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > _MAX_POINTER_BYTES:
        raise InventoryProblem(Reason.INVALID_DATA, f"{path} is over {_MAX_POINTER_BYTES} bytes: not a publication")
    try:
        pointer = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InventoryProblem(Reason.INVALID_DATA, f"{path} is not JSON: {exc}") from None
    if not isinstance(pointer, dict):
        raise InventoryProblem(Reason.INVALID_DATA, f"{path} is not a JSON object")
    if pointer.get("format") != FORMAT:
        raise InventoryProblem(
            Reason.INVALID_DATA,
            f"{path} has format {pointer.get('format')!r}; this exporter reads format {FORMAT}: "
            "run the inventory job of the exporter's own version",
        )
    run_dir = pointer.get("run_dir")
    if not isinstance(run_dir, str) or not isinstance(pointer.get("run_id"), str):
        raise InventoryProblem(Reason.INVALID_DATA, f"{path} names no run (run_dir, run_id)")
    resolved = (directory / run_dir).resolve()
    if not resolved.is_relative_to(directory.resolve()):
        raise InventoryProblem(Reason.INVALID_DATA, f"{path} names a run outside {directory}: {run_dir!r}")
    return pointer


class _RecordStarts:
    """A CSV file's lines for csv.reader, remembering the first physical line of the record being read.

    Python 3.11's csv module reads an empty field and a quoted empty string alike, while the job writes a null
    clientId as the one and an empty clientId as the other (the record starts `,` or `"",`); clients send both.
    """

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines
        self._fresh = True
        self.first = ""

    def __iter__(self) -> _RecordStarts:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        if self._fresh:
            self.first, self._fresh = line, False
        return line

    def next_record(self) -> None:
        self._fresh = True


#: A clients row as read: ClientIdentity's fields in a plain tuple of strings and numbers, which the garbage
#: collector stops tracking (a NamedTuple it tracks for good; 100,000 of them made each collection in the loading
#: thread, GIL held, last over 100 ms). Only the rows kept in the end become ClientIdentity.
_Fields = tuple[str | None, str, str, str, str, str, str, str, int, int]


def _fields(row: Sequence[str], line: int, path: Path, null_client_id: bool) -> _Fields:
    if len(row) != len(CLIENTS_COLUMNS):
        raise InventoryProblem(
            Reason.INVALID_DATA, f"{path} line {line}: {len(row)} fields, the clients table has {len(CLIENTS_COLUMNS)}"
        )
    try:
        requests, connections = int(row[8]), int(row[9])
    except ValueError:
        raise InventoryProblem(
            Reason.INVALID_DATA, f"{path} line {line}: requests and connections must be whole numbers"
        ) from None
    client_id, principal, source_host, listener, software_name, software_version, first_seen, last_seen = row[:8]
    # Principals, hosts, listeners and versions repeat across rows: one string each, not one per row. Interned
    # strings are freed with their last user, so rows that fall out of the load limit take theirs along.
    return (
        None if null_client_id and not client_id else client_id,
        sys.intern(principal),
        sys.intern(source_host),
        sys.intern(listener),
        sys.intern(software_name),
        sys.intern(software_version),
        first_seen,
        last_seen,
        requests,
        connections,
    )


def _csv_records(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[list[str], int, bool]]:
    """The records of one of the job's CSVs after its header, checked against ``columns``: each with its line
    number and whether its first field was quoted (an empty field against "": a null clientId against an empty
    one). The caller maps read and decoding errors to its own reasons."""
    with path.open(encoding="utf-8", newline="") as handle:
        starts = _RecordStarts(iter(handle))
        reader = csv.reader(starts)
        header = next(reader, None)
        if header is None or tuple(header) != columns:
            raise InventoryProblem(Reason.INVALID_DATA, f"{path}: header {header!r}, expected {','.join(columns)}")
        while True:
            starts.next_record()
            if (row := next(reader, None)) is None:
                return
            yield row, reader.line_num, starts.first.startswith('"')


_IMPACT = {column: index for index, column in enumerate(UPGRADE_IMPACT_COLUMNS)}


def _blocking_senders(path: Path) -> dict[tuple[str, str, str, str], frozenset[IdentityKey]]:
    """From the run's upgrade_impact table, who sent each request version the job's target release no longer serves:
    (software name, version, request, request version) -> identity keys. A run without the file (a job older than
    the table) names nobody in particular: the status page then falls back on everyone running the version."""
    found: dict[tuple[str, str, str, str], set[IdentityKey]] = {}
    try:
        for row, line, quoted in _csv_records(path, UPGRADE_IMPACT_COLUMNS):
            if len(row) != len(UPGRADE_IMPACT_COLUMNS):
                raise InventoryProblem(
                    Reason.INVALID_DATA,
                    f"{path} line {line}: {len(row)} fields, upgrade_impact has {len(UPGRADE_IMPACT_COLUMNS)}",
                )
            if row[_IMPACT["kind"]] != KIND_API_VERSION:
                continue
            client_id: str | None = row[_IMPACT["client_id"]]
            if not client_id and not quoted:
                client_id = None
            key: IdentityKey = (
                client_id,
                sys.intern(row[_IMPACT["principal"]]),
                sys.intern(row[_IMPACT["source_host"]]),
                sys.intern(row[_IMPACT["listener"]]),
            )
            pair = (sys.intern(row[_IMPACT["software_name"]]), sys.intern(row[_IMPACT["software_version"]]))
            for version in row[_IMPACT["versions_used"]].split(","):
                found.setdefault((*pair, row[_IMPACT["api_name"]], version), set()).add(key)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InventoryProblem(Reason.UNREADABLE, f"cannot read {path}: {exc.strerror or exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InventoryProblem(Reason.INVALID_DATA, f"{path} is not a UTF-8 CSV: {exc}") from None
    return {request: frozenset(keys) for request, keys in found.items()}


def _request_logs(pointer: Mapping[str, object]) -> tuple[tuple[str, LogKind], ...]:
    """run.json's per-directory log kinds; a publication from before they were recorded has none, and a kind this
    version does not know reads as unknown rather than failing the whole reading."""
    entries = pointer.get("request_logs")
    if not isinstance(entries, list):
        return ()
    kinds = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("directory"), str):
            kind = entry.get("kind")
            named = LogKind(kind) if isinstance(kind, str) and kind in {k.value for k in LogKind} else LogKind.UNKNOWN
            kinds.append((entry["directory"], named))
    return tuple(kinds)


def load_publication(directory: Path, max_loaded: int) -> InventoryReading:
    """The publication in `directory`; InventoryProblem when there is none or it cannot be read whole."""
    pointer = _pointer(directory)
    clients = directory / pointer["run_dir"] / CLIENTS_CSV
    # The most active identities, at most `max_loaded` of them (a heap keyed on requests; ties: first read wins).
    kept: list[tuple[int, int, _Fields]] = []
    counts: dict[tuple[str, str], int] = {}
    rows = 0
    try:
        for row, line, quoted in _csv_records(clients, CLIENTS_COLUMNS):
            fields = _fields(row, line, clients, null_client_id=not quoted)
            rows += 1
            if not rows % 2000:
                # Hands the GIL over: the event loop's thread otherwise waited up to 800 ms at a time for it
                # while a million rows went by.
                time.sleep(0)
            pair = (fields[4], fields[5])
            counts[pair] = counts.get(pair, 0) + 1
            entry = (fields[8], -rows, fields)
            if len(kept) < max_loaded:
                heapq.heappush(kept, entry)
            elif entry[:2] > kept[0][:2]:
                heapq.heapreplace(kept, entry)
    except FileNotFoundError:
        raise InventoryProblem(
            Reason.INVALID_DATA,
            f"{clients} is missing: the run was written with --no-csv, which the exporter cannot read",
        ) from None
    except OSError as exc:
        raise InventoryProblem(Reason.UNREADABLE, f"cannot read {clients}: {exc.strerror or exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InventoryProblem(Reason.INVALID_DATA, f"{clients} is not a UTF-8 CSV: {exc}") from None
    per_pair: dict[tuple[str, str], list[ClientIdentity]] = {}
    # Most requests first, then in the table's order (each row's number is unique: the fields never compare).
    kept.sort(reverse=True)
    for _, _, fields in kept:
        identity = ClientIdentity._make(fields)
        per_pair.setdefault((identity.software_name, identity.software_version), []).append(identity)
    log_range = pointer.get("log_time_range")
    first, last = (log_range.get("first"), log_range.get("last")) if isinstance(log_range, dict) else (None, None)
    first, last = (first if isinstance(first, str) else None), (last if isinstance(last, str) else None)
    return InventoryReading(
        directory=str(directory),
        run_id=pointer["run_id"],
        finished=str(pointer.get("finished", "")),
        log_first=first,
        log_last=last,
        newest_line_timestamp=_log_time(last),
        identities={pair: tuple(identities) for pair, identities in per_pair.items()},
        identity_counts=counts,
        rows=rows,
        not_loaded=rows - len(kept),
        blocking_senders=_blocking_senders(directory / pointer["run_dir"] / UPGRADE_IMPACT_CSV),
        request_logs=_request_logs(pointer),
    )


def _stamp(directory: Path) -> tuple[int, int, int]:
    """What changes when the job publishes (a new file renamed over the old): inode, modification time, size."""
    stat = os.stat(directory / PUBLICATION)
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


class InventorySource(Source):
    name = SourceName.INVENTORY

    def __init__(self, cluster: str, config: ClusterInventory) -> None:
        super().__init__(cluster)
        self._directory = config.path
        self._max_loaded = config.max_loaded_identities
        self._last: InventoryReading | None = None  # the last good reading, kept through a bad publication
        # The publication last parsed, and why it was invalid (None: it was read): parsed once, valid or not, until
        # publication.json is replaced (a broken 100,000-row table costs half a second a time). One that could not
        # be read is not recorded, so it is tried again: that may pass.
        self._parsed_stamp: tuple[int, int, int] | None = None
        self._invalid: str | None = None

    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        return [Poll(CLUSTER_BROKER, self._read)]

    async def _read(self) -> InventoryReading:
        try:
            # In a thread too: a stat of a hung network mount must not stall the event loop.
            stamp = await asyncio.to_thread(_stamp, self._directory)
            if stamp == self._parsed_stamp:
                if self._invalid is not None:
                    raise InventoryProblem(Reason.INVALID_DATA, self._invalid)
                if self._last is not None:
                    return self._last
            try:
                reading = await asyncio.to_thread(load_publication, self._directory, self._max_loaded)
            except InventoryProblem as invalid:
                if invalid.reason == Reason.INVALID_DATA:
                    self._parsed_stamp, self._invalid = stamp, invalid.message
                raise
        except FileNotFoundError:
            problem = _not_published(self._directory)
            raise SourceError(problem.reason, str(problem), kept=self._last) from None
        except OSError as exc:
            message = f"cannot read {self._directory / PUBLICATION}: {exc.strerror or exc}"
            raise SourceError(Reason.UNREADABLE, message, kept=self._last) from None
        except InventoryProblem as problem:
            raise SourceError(problem.reason, str(problem), kept=self._last) from None
        self._last, self._parsed_stamp, self._invalid = reading, stamp, None
        return reading
