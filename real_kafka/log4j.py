"""A node's logging, in the format of its release's own distribution: log4j 1 properties read by reload4j up to 3.9
(``config/log4j.properties``, ``-Dlog4j.configuration=file:``), log4j2 YAML from 4.0 (``config/log4j2.yaml``,
``-Dlog4j2.configurationFile=``). Two files, as the distribution writes them and with its layout ``[%d] %p %m (%c)%n``:

* ``server.log``: every logger at INFO (the root logger, as shipped);
* ``kafka-request.log``: ``kafka.request.logger`` not additive, rolled by size instead of by the hour so that a test
  can make it rotate, in one of the three kinds of ``exporter.request_logs.log_kinds``: full DEBUG (the default),
  ApiVersions + INFO with the appender filters of the files the project ships in ``broker-config/`` (read from
  them, so the tests run what users copy), or INFO only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from exporter.request_logs.log_kinds import LogKind

__all__ = ["LogFiles", "write_logging_config"]

_PATTERN = "[%d] %p %m (%c)%n"
#: The broker logging configurations users copy (the README's "Opening the request log").
SHIPPED = Path(__file__).resolve().parent.parent / "broker-config"
_LOG4J1_FILTERS = "log4j.appender.requestAppender.filter."


@dataclass(frozen=True)
class LogFiles:
    """Where a node logs, and the JVM option that points its release's log4j at the configuration."""

    directory: Path
    jvm_option: str

    @property
    def server_log(self) -> Path:
        return self.directory / "server.log"

    @property
    def request_log(self) -> Path:
        return self.directory / "kafka-request.log"


def write_logging_config(
    config_dir: Path,
    logs_dir: Path,
    *,
    log4j2: bool,
    request_log_max_bytes: int,
    request_log_backups: int,
    request_log: LogKind = LogKind.FULL_DEBUG,
) -> LogFiles:
    """Write the configuration under ``config_dir`` for logs in ``logs_dir``; the request log rolls at
    ``request_log_max_bytes`` keeping ``request_log_backups`` old files (``kafka-request.log.1`` ...)."""
    if request_log == LogKind.UNKNOWN:
        raise ValueError(f"request_log: {request_log!r} is no kind a broker can be configured to write")
    logs_dir.mkdir(parents=True, exist_ok=True)
    level = "INFO" if request_log == LogKind.INFO_ONLY else "DEBUG"
    filtered = request_log == LogKind.API_VERSIONS_AND_INFO
    if log4j2:
        path = config_dir / "log4j2.yaml"
        filters = _shipped_log4j2_filters() if filtered else None
        path.write_text(_log4j2_yaml(logs_dir, request_log_max_bytes, request_log_backups, level, filters))
        option = f"-Dlog4j2.configurationFile={path}"
    else:
        path = config_dir / "log4j.properties"
        filters_text = _shipped_log4j1_filters() if filtered else ""
        path.write_text(_log4j_properties(logs_dir, request_log_max_bytes, request_log_backups, level) + filters_text)
        option = f"-Dlog4j.configuration=file:{path}"
    return LogFiles(logs_dir, option)


def _shipped_log4j1_filters() -> str:
    lines = (SHIPPED / "log4j.properties").read_text().splitlines()
    kept = [line for line in lines if line.startswith(_LOG4J1_FILTERS)]
    if not kept:
        raise ValueError(f"{SHIPPED / 'log4j.properties'} has no {_LOG4J1_FILTERS}* line")
    return "".join(f"{line}\n" for line in kept)


def _shipped_log4j2_filters() -> dict[str, Any]:
    path = SHIPPED / "log4j2.yaml"
    appenders = yaml.safe_load(path.read_text())["Configuration"]["Appenders"]["RollingFile"]
    [request] = [a for a in appenders if a["name"] == "RequestAppender"]
    if "Filters" not in request:
        raise ValueError(f"{path}: RequestAppender has no Filters")
    return dict(request["Filters"])


def _log4j_properties(logs: Path, max_bytes: int, backups: int, level: str) -> str:
    return f"""\
log4j.rootLogger=INFO, kafkaAppender

log4j.appender.kafkaAppender=org.apache.log4j.RollingFileAppender
log4j.appender.kafkaAppender.File={logs / "server.log"}
log4j.appender.kafkaAppender.MaxFileSize=50MB
log4j.appender.kafkaAppender.MaxBackupIndex=2
log4j.appender.kafkaAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.kafkaAppender.layout.ConversionPattern={_PATTERN}

log4j.appender.requestAppender=org.apache.log4j.RollingFileAppender
log4j.appender.requestAppender.File={logs / "kafka-request.log"}
log4j.appender.requestAppender.MaxFileSize={max_bytes}
log4j.appender.requestAppender.MaxBackupIndex={backups}
log4j.appender.requestAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.requestAppender.layout.ConversionPattern={_PATTERN}

log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka.request.logger={level}, requestAppender
log4j.additivity.kafka.request.logger=false
"""


def _log4j2_yaml(logs: Path, max_bytes: int, backups: int, level: str, filters: dict[str, Any] | None) -> str:
    filters_yaml = ""
    if filters is not None:
        dumped = yaml.safe_dump({"Filters": filters}, sort_keys=False, default_flow_style=False)
        filters_yaml = "".join(f"        {line}\n" for line in dumped.splitlines())
    return f"""\
Configuration:
  Properties:
    Property:
      - name: "logPattern"
        value: "{_PATTERN}"
  Appenders:
    RollingFile:
      - name: KafkaAppender
        fileName: "{logs / "server.log"}"
        filePattern: "{logs / "server.log"}.%i"
        PatternLayout:
          pattern: "${{logPattern}}"
        SizeBasedTriggeringPolicy:
          size: "50 MB"
        DefaultRolloverStrategy:
          max: 2
      - name: RequestAppender
        fileName: "{logs / "kafka-request.log"}"
        filePattern: "{logs / "kafka-request.log"}.%i"
        PatternLayout:
          pattern: "${{logPattern}}"
        SizeBasedTriggeringPolicy:
          size: "{max_bytes}"
        DefaultRolloverStrategy:
          max: {backups}
          fileIndex: min
{filters_yaml}  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: KafkaAppender
    Logger:
      - name: kafka
        level: INFO
      - name: org.apache.kafka
        level: INFO
      - name: kafka.request.logger
        level: {level}
        additivity: false
        AppenderRef:
          ref: RequestAppender
"""
