"""A node's logging, in the format of its release's own distribution: log4j 1 properties read by reload4j up to 3.9
(``config/log4j.properties``, ``-Dlog4j.configuration=file:``), log4j2 YAML from 4.0 (``config/log4j2.yaml``,
``-Dlog4j2.configurationFile=``). Two files, as the distribution writes them and with its layout ``[%d] %p %m (%c)%n``:

* ``server.log``: every logger at INFO (the root logger, as shipped);
* ``kafka-request.log``: ``kafka.request.logger`` not additive, rolled by size instead of by the hour so that a test
  can make it rotate, in one of the three kinds of ``exporter.request_logs.log_kinds``: full DEBUG (the default),
  identities + INFO with the appender filters of the files the project ships in ``broker-config/`` (read from
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
#: The broker logging configurations users copy (docs/brokers.md, "The request log").
SHIPPED = Path(__file__).resolve().parent.parent / "broker-config"
_LOG4J1_FILTERS = "log4j.appender.requestAppender.filter."


@dataclass(frozen=True)
class LogFiles:
    """Where a node logs, and the JVM option that points its release's log4j at the configuration."""

    directory: Path
    jvm_option: str
    #: Where the identities + INFO copy of the request log goes, when the node writes one beside its own.
    copy_directory: Path | None = None

    @property
    def server_log(self) -> Path:
        return self.directory / "server.log"

    @property
    def request_log(self) -> Path:
        return self.directory / "kafka-request.log"


@dataclass(frozen=True)
class _RequestAppender:
    name: str
    directory: Path
    filtered: bool


def write_logging_config(
    config_dir: Path,
    logs_dir: Path,
    *,
    log4j2: bool,
    request_log_max_bytes: int,
    request_log_backups: int,
    request_log: LogKind = LogKind.FULL_DEBUG,
    copy_dir: Path | None = None,
) -> LogFiles:
    """Write the configuration under ``config_dir`` for logs in ``logs_dir``; the request log rolls at
    ``request_log_max_bytes`` keeping ``request_log_backups`` old files (``kafka-request.log.1`` ...). With
    ``copy_dir``, a full DEBUG node also writes the identities + INFO log there, from the same requests: the two
    kinds can then be compared over the very same traffic."""
    if request_log == LogKind.UNKNOWN:
        raise ValueError(f"request_log: {request_log!r} is no kind a broker can be configured to write")
    if copy_dir is not None and request_log != LogKind.FULL_DEBUG:
        raise ValueError(f"copy_dir: a filtered copy is written beside a full DEBUG log only, not {request_log}")
    logs_dir.mkdir(parents=True, exist_ok=True)
    appenders = [_RequestAppender("RequestAppender", logs_dir, request_log == LogKind.IDENTITIES_AND_INFO)]
    if copy_dir is not None:
        copy_dir.mkdir(parents=True, exist_ok=True)
        appenders.append(_RequestAppender("RequestCopyAppender", copy_dir, True))
    level = "INFO" if request_log == LogKind.INFO_ONLY else "DEBUG"
    if log4j2:
        path = config_dir / "log4j2.yaml"
        config = _log4j2_config(logs_dir, appenders, request_log_max_bytes, request_log_backups, level)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        option = f"-Dlog4j2.configurationFile={path}"
    else:
        path = config_dir / "log4j.properties"
        path.write_text(_log4j_properties(logs_dir, appenders, request_log_max_bytes, request_log_backups, level))
        option = f"-Dlog4j.configuration=file:{path}"
    return LogFiles(logs_dir, option, copy_dir)


def _shipped_log4j1_filters() -> list[tuple[str, str]]:
    """The shipped request appender's filter settings, as (key after ``...requestAppender.``, value)."""
    lines = (SHIPPED / "log4j.properties").read_text().splitlines()
    kept = [line.split("=", 1) for line in lines if line.startswith(_LOG4J1_FILTERS)]
    if not kept:
        raise ValueError(f"{SHIPPED / 'log4j.properties'} has no {_LOG4J1_FILTERS}* line")
    prefix = "log4j.appender.requestAppender."
    return [(key[len(prefix) :], value) for key, value in kept]


def _shipped_log4j2_filters() -> dict[str, Any]:
    path = SHIPPED / "log4j2.yaml"
    appenders = yaml.safe_load(path.read_text())["Configuration"]["Appenders"]["RollingFile"]
    [request] = [a for a in appenders if a["name"] == "RequestAppender"]
    if "Filters" not in request:
        raise ValueError(f"{path}: RequestAppender has no Filters")
    return dict(request["Filters"])


def _log4j_properties(logs: Path, appenders: list[_RequestAppender], max_bytes: int, backups: int, level: str) -> str:
    lines = [
        "log4j.rootLogger=INFO, kafkaAppender",
        "log4j.appender.kafkaAppender=org.apache.log4j.RollingFileAppender",
        f"log4j.appender.kafkaAppender.File={logs / 'server.log'}",
        "log4j.appender.kafkaAppender.MaxFileSize=50MB",
        "log4j.appender.kafkaAppender.MaxBackupIndex=2",
        "log4j.appender.kafkaAppender.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.kafkaAppender.layout.ConversionPattern={_PATTERN}",
    ]
    for appender in appenders:
        # log4j 1 names appenders in lowerCamelCase by convention; the names only have to be unique.
        key = f"log4j.appender.{appender.name[0].lower()}{appender.name[1:]}"
        lines += [
            f"{key}=org.apache.log4j.RollingFileAppender",
            f"{key}.File={appender.directory / 'kafka-request.log'}",
            f"{key}.MaxFileSize={max_bytes}",
            f"{key}.MaxBackupIndex={backups}",
            f"{key}.layout=org.apache.log4j.PatternLayout",
            f"{key}.layout.ConversionPattern={_PATTERN}",
        ]
        if appender.filtered:
            lines += [f"{key}.{setting}={value}" for setting, value in _shipped_log4j1_filters()]
    names = ", ".join(f"{a.name[0].lower()}{a.name[1:]}" for a in appenders)
    lines += [
        "log4j.logger.kafka=INFO",
        "log4j.logger.org.apache.kafka=INFO",
        f"log4j.logger.kafka.request.logger={level}, {names}",
        "log4j.additivity.kafka.request.logger=false",
    ]
    return "".join(f"{line}\n" for line in lines)


def _log4j2_config(
    logs: Path, appenders: list[_RequestAppender], max_bytes: int, backups: int, level: str
) -> dict[str, Any]:
    request_appenders = []
    for appender in appenders:
        path = str(appender.directory / "kafka-request.log")
        request_appenders.append(
            {
                "name": appender.name,
                "fileName": path,
                "filePattern": f"{path}.%i",
                "PatternLayout": {"pattern": "${logPattern}"},
                "SizeBasedTriggeringPolicy": {"size": str(max_bytes)},
                "DefaultRolloverStrategy": {"max": backups, "fileIndex": "min"},
                **({"Filters": _shipped_log4j2_filters()} if appender.filtered else {}),
            }
        )
    server = str(logs / "server.log")
    return {
        "Configuration": {
            "Properties": {"Property": [{"name": "logPattern", "value": _PATTERN}]},
            "Appenders": {
                "RollingFile": [
                    {
                        "name": "KafkaAppender",
                        "fileName": server,
                        "filePattern": f"{server}.%i",
                        "PatternLayout": {"pattern": "${logPattern}"},
                        "SizeBasedTriggeringPolicy": {"size": "50 MB"},
                        "DefaultRolloverStrategy": {"max": 2},
                    },
                    *request_appenders,
                ]
            },
            "Loggers": {
                "Root": {"level": "INFO", "AppenderRef": [{"ref": "KafkaAppender"}]},
                "Logger": [
                    {"name": "kafka", "level": "INFO"},
                    {"name": "org.apache.kafka", "level": "INFO"},
                    {
                        "name": "kafka.request.logger",
                        "level": level,
                        "additivity": False,
                        "AppenderRef": [{"ref": a.name} for a in appenders],
                    },
                ],
            },
        }
    }
