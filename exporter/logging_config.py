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


#: What kafka-python 3 logs at ERROR whenever a broker cannot be reached or closes a connection: three lines for each
#: broker that goes away (a broker's controlled shutdown in a rolling upgrade among them), then one per reconnect
#: attempt and metadata refresh while it is away, hundreds during a roll. The exporter reports each failure itself
#: (the broker's `up`, its errors counter, one warning per change of state with the cause; bootstrap and metadata
#: failures as the `discovery` source), so at info these would only be errors about nothing wrong with the exporter.
#: Matched by logger and format string (a prefix where kafka-python formats the message itself), not by the text.
_CONNECTION_FAILURES: dict[str, tuple[str, ...]] = {
    "kafka.net.transport": ("%s: socket disconnected", "%s: Abort (%s)"),
    "kafka.net.connection": ("%s: Connection lost: %s",),
    "kafka.net.manager": ("Connection failed: %s", "Bootstrap failed: %s", "Bootstrap attempt to "),
    "kafka.cluster": ("Metadata refresh: failed %s",),
}


class _DropConnectionFailures(logging.Filter):
    def __init__(self, formats: tuple[str, ...]) -> None:
        super().__init__()
        self._formats = formats

    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is not None or not str(record.msg).startswith(self._formats)


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
    for name, formats in _CONNECTION_FAILURES.items():
        logger = logging.getLogger(name)
        for installed in [f for f in logger.filters if isinstance(f, _DropConnectionFailures)]:
            logger.removeFilter(installed)
        if level != "debug":
            logger.addFilter(_DropConnectionFailures(formats))
