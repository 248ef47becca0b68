"""Log lines in Prometheus' formats: logfmt (quoted and escaped where needed) and JSON, one event per line."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from exporter.config.settings import LogFormat, LogLevel
from exporter.logging_config import setup_logging

TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    root, kafka = logging.getLogger(), logging.getLogger("kafka")
    levels = root.level, kafka.level
    stream = io.StringIO()
    yield stream
    for handler in [h for h in root.handlers if getattr(h, "stream", None) is stream]:
        root.removeHandler(handler)
    root.setLevel(levels[0])
    kafka.setLevel(levels[1])
    for name in ("kafka.net.transport", "kafka.net.connection", "kafka.net.manager", "kafka.cluster"):
        logger = logging.getLogger(name)
        for installed in [f for f in logger.filters if type(f).__name__ == "_DropConnectionFailures"]:
            logger.removeFilter(installed)


def emit(stream: io.StringIO, level: LogLevel, log_format: LogFormat) -> list[str]:
    setup_logging(level, log_format, stream)
    log = logging.getLogger("exporter.test")
    log.debug("hidden at info")
    log.info("serving %s", "https://:9784/metrics")
    log.warning('value "x=1" at C:\\path')
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("cycle failed")
    logging.getLogger("kafka.conn").warning("reconnecting")  # kafka-python's noise stays below ERROR
    return stream.getvalue().splitlines()


def test_logfmt_is_the_default_form(captured: io.StringIO) -> None:
    info, warn, error = emit(captured, "info", "logfmt")
    assert re.fullmatch(rf'ts={TS} level=info logger=exporter.test msg="serving https://:9784/metrics"', info)
    assert warn.endswith(r'level=warn logger=exporter.test msg="value \"x=1\" at C:\\path"')
    assert re.fullmatch(
        rf'ts={TS} level=error logger=exporter.test msg="cycle failed" exception="Traceback \(most recent call '
        r'last\):\\n.*\\nRuntimeError: boom"',
        error,
    )


def test_json_is_one_object_per_line(captured: io.StringIO) -> None:
    lines = [json.loads(line) for line in emit(captured, "info", "json")]
    assert [list(line)[:4] for line in lines] == [["ts", "level", "logger", "msg"]] * 3
    assert [(line["level"], line["msg"]) for line in lines] == [
        ("info", "serving https://:9784/metrics"),
        ("warn", 'value "x=1" at C:\\path'),
        ("error", "cycle failed"),
    ]
    assert lines[2]["exception"].endswith("RuntimeError: boom")
    assert re.fullmatch(TS, lines[0]["ts"])


def test_debug_shows_debug_lines_but_kafka_python_stays_at_error(captured: io.StringIO) -> None:
    lines = emit(captured, "debug", "logfmt")
    assert 'msg="hidden at info"' in lines[0] and not any("reconnecting" in line for line in lines)


def connection_lost() -> None:
    """What kafka-python 3.0.12 logs when a broker closes its connection (a controlled shutdown) and while it is away
    (each reconnect attempt, each metadata refresh), and a SASL failure, which it logs at the same level and must
    still be shown."""
    transport, connection = logging.getLogger("kafka.net.transport"), logging.getLogger("kafka.net.connection")
    manager, cluster = logging.getLogger("kafka.net.manager"), logging.getLogger("kafka.cluster")
    transport.error("%s: socket disconnected", "<KafkaTCPTransport [127.0.0.1:9092<-51828]>")
    transport.error("%s: Abort (%s)", "<KafkaTCPTransport [127.0.0.1:9092<-51828]>", "socket disconnected")
    connection.error("%s: Connection lost: %s", "<KafkaConnection node_id=1>", "socket disconnected")
    manager.error("Connection failed: %s", "KafkaConnectionError: 111 ECONNREFUSED")
    manager.error("Bootstrap attempt to bootstrap-0 failed: 111 ECONNREFUSED (backoff 0.05 secs)")
    cluster.error("Metadata refresh: failed %s", "KafkaConnectionError: 111 ECONNREFUSED")
    connection.error("%s: SaslHandshake failed: %s", "<KafkaConnection node_id=1>", "IllegalSaslStateError")


def test_a_broker_going_away_logs_no_kafka_python_error_lines_but_a_sasl_failure_still_does(
    captured: io.StringIO,
) -> None:
    setup_logging("info", "logfmt", captured)
    connection_lost()
    lines = captured.getvalue().splitlines()
    assert len(lines) == 1 and "SaslHandshake failed" in lines[0], lines
    # At debug they are all there, for whoever chases a connection problem.
    setup_logging("debug", "logfmt", captured)
    connection_lost()
    assert len(captured.getvalue().splitlines()) == 1 + 7


def test_a_second_set_up_replaces_the_first(captured: io.StringIO) -> None:
    setup_logging("info", "json", captured)
    setup_logging("info", "logfmt", captured)
    logging.getLogger("exporter.test").info("once")
    assert captured.getvalue().count("once") == 1 and captured.getvalue().startswith("ts=")
