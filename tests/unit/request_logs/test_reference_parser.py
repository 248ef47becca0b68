"""The single-process parser (the benchmark baseline and the Spark job's oracle) on constructed fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.reference_parser import ParsedLine, parse_line, run, source_host
from exporter.request_logs import log_format as lf
from tests.support import request_log_fixtures as fx


@pytest.fixture
def result(tmp_path: Path):
    return run([str(fx.write_fixture(tmp_path / "logs"))])


def by_client(result) -> dict:
    return {(c.client_id, c.listener): c for c in result.clients}


def test_api_versions_line_takes_the_software_from_its_body(result) -> None:
    clients = by_client(result)
    producer = clients[("producer-1", "PLAINTEXT")]
    assert (producer.software_name, producer.software_version, producer.requests) == ("apache-kafka-java", "3.7.0", 2)
    assert clients[("lonely", "PLAINTEXT")].software_name == "librdkafka"  # only its ApiVersions line was seen
    assert clients[("rejected", "PLAINTEXT")].software_name == "unknown"  # the broker rejected that body (42)
    assert clients[("too-new", "PLAINTEXT")].software_name == "unknown"  # unsupported version (35): body unread
    rdkafka = clients[("rdkafka", "PLAINTEXT")]  # the same caveat in the 2.x text form
    assert (rdkafka.software_name, rdkafka.software_version, rdkafka.requests) == ("librdkafka", "1.9.2", 2)


def test_ipv6_connection_with_processor_segment_and_dn_principal(result) -> None:
    billing = by_client(result)[("consumer-billing-2", "SASL_SSL")]
    assert billing.source_host == "fd00:0:0:0:0:0:0:42"
    assert billing.principal == fx.SSL_DN
    assert source_host("10.0.0.1:9092-10.0.0.2:5000-3-17") == "10.0.0.2"
    assert source_host("10.0.0.1:9092-10.0.0.2:5000-17") == "10.0.0.2"
    assert source_host("not-a-connection") is None


def test_null_absent_and_empty_client_ids(result) -> None:
    rows = {c.client_id: c for c in result.clients if c.source_host == "10.20.8.1"}
    assert rows[None].requests == 2  # JSON null and header v0 (no key) are both null
    assert rows[""].requests == 1
    text_null = [c for c in result.clients if c.listener == "SSL"]
    assert [(c.client_id, c.principal, c.software_name) for c in text_null] == [(None, fx.SSL_DN, "unknown")]


def test_every_line_is_counted_and_bad_ones_have_reasons(result) -> None:
    good = len(fx.JSON_LINES) + len(fx.TEXT_LINES)
    assert result.lines == good + len(fx.GARBAGE) + 1  # + the truncated last line; server.log is skipped
    assert sum(c.requests for c in result.clients) == good
    assert result.malformed == {
        lf.REASON_NOT_REQUEST_LINE: 3,
        lf.REASON_NO_TIMESTAMP: 2,
        lf.REASON_BAD_TEXT: 1,
        lf.REASON_UNKNOWN_API: 1,
        lf.REASON_BAD_JSON: 1,
    }


def test_text_line_fields() -> None:
    parsed = parse_line(fx.TEXT_LINES[1])
    assert isinstance(parsed, ParsedLine)
    assert (parsed.api_key, parsed.client_id, parsed.connection, parsed.listener) == (
        3,
        "rdkafka",
        fx.C_TEXT_RDKAFKA,
        "PLAINTEXT",
    )
    assert parsed.software == (lf.PRIORITY_CLIENT_INFORMATION, "librdkafka", "1.9.2")


def test_missing_input_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere"):
        run([str(tmp_path / "nowhere")])
