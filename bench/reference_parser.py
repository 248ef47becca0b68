"""A plain single-process Python parser that builds the ``clients`` table: the benchmark baseline and the
oracle the Spark job is checked against. It reads line by line, with ``re`` and ``json``, and keeps
dictionaries; it follows exactly the rules of ``parse``/``tables`` (see ``log_format`` for the patterns).
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import IO, Any

from exporter.kafka_releases.table import api_keys_by_enum_name
from exporter.request_logs import log_format as lf

_TIMESTAMP = re.compile(lf.TIMESTAMP)
_TEXT_LINE = re.compile(lf.TEXT_LINE)
_TEXT_API_VERSIONS = re.compile(lf.TEXT_API_VERSIONS_REQUEST)
_TEXT_ERROR_CODE = re.compile(lf.TEXT_RESPONSE_ERROR_CODE)
_CONNECTION = re.compile(lf.CONNECTION)

Software = tuple[int, str, str]  # (priority, name, version); the highest wins per connection
ClientKey = tuple[str | None, str | None, str | None, str | None, str, str]


@dataclass(frozen=True)
class ClientRow:
    client_id: str | None
    principal: str | None
    source_host: str | None
    listener: str | None
    software_name: str
    software_version: str
    first_seen: str  # yyyy-MM-dd HH:mm:ss,SSS as logged
    last_seen: str
    requests: int
    connections: int


@dataclass(frozen=True)
class ParsedLine:
    timestamp: str
    api_key: int
    client_id: str | None
    connection: str
    principal: str | None
    listener: str | None
    software: Software


@dataclass
class _Usage:
    first_seen: str
    last_seen: str
    requests: int = 0


@dataclass
class ReferenceResult:
    clients: list[ClientRow]
    lines: int
    malformed: Counter[str] = field(default_factory=Counter)


def _known(value: Any) -> str:
    return value if isinstance(value, str) and value else lf.UNKNOWN


def _line_software(api_key: int, body_name: Any, body_version: Any, ok: bool, info: tuple[Any, Any]) -> Software:
    if api_key == lf.API_VERSIONS_KEY and ok and isinstance(body_name, str) and body_name:
        return (lf.PRIORITY_API_VERSIONS_BODY, body_name, _known(body_version))
    name, version = _known(info[0]), _known(info[1])
    if name != lf.UNKNOWN or version != lf.UNKNOWN:
        return (lf.PRIORITY_CLIENT_INFORMATION, name, version)
    return (lf.PRIORITY_UNKNOWN, lf.UNKNOWN, lf.UNKNOWN)


def _parse_json(line: str, timestamp: str) -> ParsedLine | str:
    payload = line[line.find(lf.COMPLETED) + len(lf.COMPLETED) :]
    if payload.endswith(lf.LOGGER_SUFFIX):
        payload = payload[: -len(lf.LOGGER_SUFFIX)]
    try:
        obj = json.loads(payload)
    except ValueError:
        return lf.REASON_BAD_JSON
    header = obj.get("requestHeader") if isinstance(obj, dict) else None
    if not isinstance(header, dict):
        return lf.REASON_BAD_JSON
    api_key, api_version = header.get("requestApiKey"), header.get("requestApiVersion")
    connection = obj.get("connection")
    if not isinstance(api_key, int) or not isinstance(api_version, int) or not isinstance(connection, str):
        return lf.REASON_BAD_JSON
    if obj.get("isForwarded") is True:
        return lf.REASON_FORWARDED
    request, response, info = obj.get("request"), obj.get("response"), obj.get("clientInformation")
    request = request if isinstance(request, dict) else {}
    response = response if isinstance(response, dict) else {}
    info = info if isinstance(info, dict) else {}
    client_id = header.get("clientId")
    software = _line_software(
        api_key,
        request.get("clientSoftwareName"),
        request.get("clientSoftwareVersion"),
        response.get("errorCode") == 0,
        (info.get("softwareName"), info.get("softwareVersion")),
    )
    return ParsedLine(
        timestamp,
        api_key,
        client_id if isinstance(client_id, str) else None,
        connection,
        obj.get("principal"),
        obj.get("listener"),
        software,
    )


def _parse_text(line: str, timestamp: str) -> ParsedLine | str:
    match = _TEXT_LINE.match(line)
    if match is None:
        return lf.REASON_BAD_TEXT
    api_name, _version, client_id, connection, principal, listener, info_name, info_version = match.groups()
    api_key = api_keys_by_enum_name().get(api_name)
    if api_key is None:
        return lf.REASON_UNKNOWN_API
    body_name = body_version = None
    ok = False
    if api_key == lf.API_VERSIONS_KEY:
        body = _TEXT_API_VERSIONS.search(line)
        if body is not None:
            body_name, body_version = body.group(1), body.group(2)
        error = _TEXT_ERROR_CODE.search(line)
        ok = error is not None and error.group(1) == "0"
    software = _line_software(api_key, body_name, body_version, ok, (info_name, info_version))
    return ParsedLine(
        timestamp, api_key, None if client_id == "null" else client_id, connection, principal, listener, software
    )


def parse_line(line: str) -> ParsedLine | str:
    """The parsed line, or the reason (a ``log_format.REASON_*``) it cannot be used."""
    # The form is what follows the first "Completed request:". A broker before 1.0 writes a form the job names, not
    # reads (log_format.OLDER_FORM_STARTS).
    if lf.older_form(line):
        return lf.REASON_OLDER_FORM
    at = line.find(lf.COMPLETED)
    if at >= 0 and line.startswith(lf.JSON_MARKER, at):
        parse = _parse_json
    elif at >= 0 and line.startswith(lf.TEXT_MARKER, at):
        parse = _parse_text
    else:
        return lf.REASON_NOT_REQUEST_LINE
    stamp = _TIMESTAMP.match(line)
    if stamp is None:
        return lf.REASON_NO_TIMESTAMP
    return parse(line, stamp.group(1))


def source_host(connection: str) -> str | None:
    match = _CONNECTION.match(connection)
    return match.group(1) if match else None


def expand_inputs(inputs: Iterable[str]) -> list[Path]:
    """Local files named ``kafka-request.log*`` under the given files, directories (recursively) and globs."""
    found: list[Path] = []
    for pattern in inputs:
        for match in sorted(glob.glob(pattern)) or [pattern]:
            path = Path(match)
            if path.is_dir():
                for root, _dirs, files in sorted(os.walk(path)):
                    found += [Path(root, f) for f in sorted(files) if fnmatch(f, lf.FILE_GLOB)]
            elif path.is_file():
                found.append(path)
            else:
                raise FileNotFoundError(f"input {pattern!r} matches no file or directory")
    return found


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return path.open(encoding="utf-8", errors="replace")


def read_lines(paths: Iterable[Path]) -> Iterator[str]:
    for path in paths:
        with _open(path) as fh:
            for line in fh:
                yield line.rstrip("\n")


def build_clients(lines: Iterable[str]) -> ReferenceResult:
    # (connection, client_id, principal, listener) -> usage; connection -> best software seen on it.
    usage: dict[tuple[str, str | None, str | None, str | None], _Usage] = {}
    software: dict[str, Software] = {}
    malformed: Counter[str] = Counter()
    total = 0
    for line in lines:
        total += 1
        parsed = parse_line(line)
        if isinstance(parsed, str):
            if parsed != lf.REASON_FORWARDED:
                malformed[parsed] += 1
            continue
        key = (parsed.connection, parsed.client_id, parsed.principal, parsed.listener)
        entry = usage.get(key)
        if entry is None:
            entry = usage[key] = _Usage(parsed.timestamp, parsed.timestamp)
        entry.requests += 1
        entry.first_seen = min(entry.first_seen, parsed.timestamp)
        entry.last_seen = max(entry.last_seen, parsed.timestamp)
        best = software.get(parsed.connection)
        if best is None or parsed.software > best:
            software[parsed.connection] = parsed.software

    clients: dict[ClientKey, tuple[_Usage, set[str]]] = {}
    for (connection, client_id, principal, listener), entry in usage.items():
        _priority, name, version = software[connection]
        client_key = (client_id, principal, source_host(connection), listener, name, version)
        found = clients.get(client_key)
        if found is None:
            clients[client_key] = (_Usage(entry.first_seen, entry.last_seen, entry.requests), {connection})
        else:
            total_usage, connections = found
            total_usage.requests += entry.requests
            total_usage.first_seen = min(total_usage.first_seen, entry.first_seen)
            total_usage.last_seen = max(total_usage.last_seen, entry.last_seen)
            connections.add(connection)
    rows = [
        ClientRow(*key, u.first_seen, u.last_seen, u.requests, len(connections))
        for key, (u, connections) in clients.items()
    ]
    return ReferenceResult(rows, total, malformed)


def run(inputs: Iterable[str]) -> ReferenceResult:
    return build_clients(read_lines(expand_inputs(inputs)))
