"""Log lines as Prometheus and its exporters write them: `--log.format` logfmt (the default) or json.

    ts=2026-11-22T10:00:00.000Z level=info logger=exporter msg="kafka-client-exporter 0.9.0 serving ..."
    {"ts": "2026-11-22T10:00:00.000Z", "level": "info", "logger": "exporter", "msg": "..."}

structlog renders both (quoting and escaping included) from the standard library's records, so the rest of the
code keeps using `logging.getLogger`. A traceback goes into one `exception` field: one event, one line.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor

from exporter.config.settings import LogFormat, LogLevel

# Prometheus' level names (go-kit / slog) for Python's.
LEVELS: dict[str, int] = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error"}


def _prometheus_fields(_: Any, __: str, event: EventDict) -> EventDict:
    """ts, level, logger and msg first, in that order, then whatever else the event carries."""
    record: logging.LogRecord = event.pop("_record")
    event.pop("_from_structlog", None)
    ordered: EventDict = {
        "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "level": _NAMES.get(record.levelno, "error" if record.levelno > logging.ERROR else "debug"),
        "logger": record.name,
        "msg": event.pop("event"),
    }
    ordered.update(event)
    return ordered


def formatter(log_format: LogFormat) -> logging.Formatter:
    renderer: Processor = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.processors.LogfmtRenderer(bool_as_flag=False)
    )
    return structlog.stdlib.ProcessorFormatter(
        processors=[_prometheus_fields, structlog.processors.format_exc_info, renderer]
    )


class _ExporterHandler(logging.StreamHandler):
    """Ours, so a second set-up replaces it and leaves other handlers (a test runner's) alone."""


def setup_logging(level: LogLevel, log_format: LogFormat, stream: TextIO | None = None) -> None:
    handler = _ExporterHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter(log_format))
    root = logging.getLogger()
    for previous in [h for h in root.handlers if isinstance(h, _ExporterHandler)]:
        root.removeHandler(previous)
    root.addHandler(handler)
    root.setLevel(LEVELS[level])
    # kafka-python logs every reconnect attempt at WARNING; our own per-broker state lines say it once.
    logging.getLogger("kafka").setLevel(max(LEVELS[level], logging.ERROR))
