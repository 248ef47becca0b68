"""What an incremental run knows of the files earlier runs read, and which files it must read now.

A file is known by its content, not by its path: the SHA-256 of its first decompressed bytes (``head``), its stored
size, its modification time and whether it is compressed. Log rotation renames the active ``kafka-request.log``
(and often gzips it) while a new, empty active file starts: the renamed file keeps its head, so the run knows its
lines are the ones it read under the old name; the new active file has a head of its own.

Each read of a file is one *contribution*: the per-connection aggregates of its lines (or the rejections of a
``server.log``), kept in the state and summed into the tables. A file that extends what was read (the active file
grew, or was rotated and gzipped) is read again whole and its new contribution replaces the old one, so no line is
counted twice and a line cut off at the end of the earlier read is counted once, complete. A contribution stays
after its file is deleted (history) until ``--forget-before`` drops it; a dropped one is kept as a tombstone without
rows, so that a file still present is not read again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from exporter.request_logs.input_files import FileKind, InputFile

Reason = Literal["new", "grown", "rotated", "changed", "shrank"]
#: The reasons that mean a file's known content was altered, not extended: the user is warned.
SUSPICIOUS: frozenset[Reason] = frozenset({"changed", "shrank"})


def head_digest(head: bytes) -> str:
    return hashlib.sha256(head).hexdigest()


@dataclass(frozen=True)
class Contribution:
    id: str
    kind: FileKind
    path: str  # where the file was last seen (the tables name it there)
    size: int
    mtime_ms: int
    compressed: bool
    head_len: int
    head_sha256: str
    #: The run whose state segment holds the rows; None once forgotten.
    segment: str | None
    lines: int = 0
    #: Log time range of the lines (yyyyMMddHHmmssSSS), None when no line carried a valid timestamp.
    first_ts: int | None = None
    last_ts: int | None = None
    #: A request log's usable lines by level and API (log_kinds.LineLevels' fields); None for a server.log, and for
    #: a file an older version of the job read (its kind is then unknown until it is read again).
    levels: dict[str, int] | None = None

    @property
    def forgotten(self) -> bool:
        return self.segment is None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Contribution:
        return cls(**data)


@dataclass(frozen=True)
class FileToRead:
    file: InputFile
    reason: Reason
    replaces: tuple[Contribution, ...] = ()


@dataclass
class ReadPlan:
    to_read: list[FileToRead] = field(default_factory=list)
    #: Known contributions whose file is present with the same content (their path is updated).
    unchanged: list[Contribution] = field(default_factory=list)
    #: Present files whose content is another present file's (a copy, or a rotated file and its .gz at once).
    duplicates: list[tuple[InputFile, InputFile]] = field(default_factory=list)
    #: Files with no content yet (a new active file): nothing to read, nothing to remember.
    empty: list[InputFile] = field(default_factory=list)

    @property
    def replaced_ids(self) -> set[str]:
        return {c.id for item in self.to_read for c in item.replaces}


def _same_content(file: InputFile, known: Contribution) -> bool:
    return (file.size, file.mtime_ms, file.compressed) == (known.size, known.mtime_ms, known.compressed)


def _reason(file: InputFile, known: Sequence[Contribution]) -> Reason:
    if not known:
        return "new"
    old = max(known, key=lambda c: c.size)
    if file.compressed and not old.compressed:
        return "rotated"
    if file.compressed == old.compressed:
        if file.size > old.size:
            return "grown" if not file.compressed else "changed"
        if file.size < old.size:
            return "shrank"
    return "changed"


def _stream_key(file: InputFile) -> tuple[int, str]:
    return len(file.head), head_digest(file.head)


def _pick(files: list[InputFile], known_same: dict[str, Contribution]) -> InputFile:
    """One file of several with the same head: the one already known unchanged, else the plain one (a .gz beside
    it is still being written), else the largest."""
    return min(files, key=lambda f: (f.path not in known_same, f.compressed, -f.size, f.path))


def plan_reads(files: Iterable[InputFile], known: Iterable[Contribution]) -> ReadPlan:
    by_head: dict[tuple[int, str], list[Contribution]] = {}
    for contribution in known:
        by_head.setdefault((contribution.head_len, contribution.head_sha256), []).append(contribution)
    head_lengths = sorted({length for length, _ in by_head})
    plan = ReadPlan()

    def matches(file: InputFile) -> list[Contribution]:
        found = []
        for length in head_lengths:
            if length <= len(file.head):
                found.extend(by_head.get((length, head_digest(file.head[:length])), []))
        return found

    streams: dict[tuple[int, str], list[InputFile]] = {}
    for file in files:
        if not file.head:
            plan.empty.append(file)
        else:
            streams.setdefault(_stream_key(file), []).append(file)
    for same_head in streams.values():
        candidates = {f.path: matches(f) for f in same_head}
        unchanged = {f.path: c for f in same_head for c in candidates[f.path] if _same_content(f, c)}
        chosen = _pick(same_head, unchanged)
        plan.duplicates.extend((f, chosen) for f in same_head if f is not chosen)
        if chosen.path in unchanged:
            plan.unchanged.append(replace(unchanged[chosen.path], path=chosen.path))
            continue
        known_here = tuple(candidates[chosen.path])
        plan.to_read.append(FileToRead(chosen, _reason(chosen, known_here), known_here))
    plan.to_read.sort(key=lambda item: item.file.path)
    return plan


def new_contribution(file: InputFile, contribution_id: str, segment: str) -> Contribution:
    return Contribution(
        id=contribution_id,
        kind=file.kind,
        path=file.path,
        size=file.size,
        mtime_ms=file.mtime_ms,
        compressed=file.compressed,
        head_len=len(file.head),
        head_sha256=head_digest(file.head),
        segment=segment,
    )


def forget(contributions: Iterable[Contribution], before_ts: int) -> tuple[list[Contribution], int]:
    """Tombstones for the contributions whose newest line is older than ``before_ts``; how many were dropped."""
    kept, dropped = [], 0
    for contribution in contributions:
        if not contribution.forgotten and contribution.last_ts is not None and contribution.last_ts < before_ts:
            kept.append(replace(contribution, segment=None, lines=0))
            dropped += 1
        else:
            kept.append(contribution)
    return kept, dropped
