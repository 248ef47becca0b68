"""Which request-log forms the inventory job reads, on lines of each form. Every line here is CONSTRUCTED from the
Kafka source of its release (the launcher runs no broker before 2.8): the builder in
core/src/main/scala/kafka/network/RequestChannel.scala (2.7.0: lines 229-248; 0.11.0.3: 193; 0.10.2.2: 157),
``RequestHeader.toString()`` and ``Struct.toString()``. The JSON form of 2.8 and later is read from real brokers'
logs in tests/e2e/test_zookeeper_releases.py and tests/real_kafka/.

The patterns of ``log_format`` are the ones the Spark job runs (Java regular expressions in the common subset), so
reading a line with them here is reading it as the job's general path and fast path do; the reference parser is the
job's oracle for the rest.
"""

from __future__ import annotations

import re

import pytest

from bench.reference_parser import ParsedLine, parse_line
from exporter.kafka_releases.table import api_keys_by_enum_name
from exporter.request_logs import log_format as lf

TS = "[2026-11-27 10:15:42,123] DEBUG "
SUFFIX = " (kafka.request.logger)"
TIMES = (
    "totalTime:0.712,requestQueueTime:0.081,localTime:0.43,remoteTime:0.0,throttleTime:0,responseQueueTime:0.05,"
    "sendTime:0.15"
)
#: A 2.7.0 broker's line for an ApiVersions v3 request on PLAINTEXT (CONSTRUCTED): the body names the software, the
#: line's own clientInformation is still unknown (the broker registers the software after it captured the context).
LINE_2_7 = (
    TS + "Completed request:RequestHeader(apiKey=API_VERSIONS, apiVersion=3, clientId=billing-service, "
    "correlationId=1) -- {client_software_name=librdkafka,client_software_version=1.6.0,_tagged_fields={}}"
    ",response:{error_code=0,api_keys=[{api_key=0,min_version=0,max_version=8,_tagged_fields={}}],"
    "throttle_time_ms=0,_tagged_fields={}} from connection 10.20.1.14:9092-10.20.6.7:51234-3;" + TIMES + ","
    "securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,listener:PLAINTEXT,"
    "clientInformation:ClientInformation(softwareName=unknown, softwareVersion=unknown)" + SUFFIX
)
#: The same broker's next line on that connection (CONSTRUCTED): Metadata, with the registered software.
METADATA_2_7 = (
    TS + "Completed request:RequestHeader(apiKey=METADATA, apiVersion=9, clientId=billing-service, correlationId=2) -- "
    "{topics=null,allow_auto_topic_creation=true,include_cluster_authorized_operations=false,"
    "include_topic_authorized_operations=false,_tagged_fields={}},response:{throttle_time_ms=0,brokers=[],"
    "cluster_id=abc,controller_id=1,topics=[],cluster_authorized_operations=-2147483648,_tagged_fields={}} "
    "from connection 10.20.1.14:9092-10.20.6.7:51234-3;" + TIMES + ",securityProtocol:PLAINTEXT,"
    "principal:User:ANONYMOUS,listener:PLAINTEXT,"
    "clientInformation:ClientInformation(softwareName=librdkafka, softwareVersion=1.6.0)" + SUFFIX
)
#: A 0.11.0.3 broker's line (CONSTRUCTED): the header as a Struct, no response, times as %f, no clientInformation.
LINE_0_11 = (
    TS + "Completed request:{api_key=0,api_version=2,correlation_id=7,client_id=legacy-billing-producer} -- "
    "{acks=1,timeout=30000,numPartitions=1} from connection 10.20.1.14:9092-10.20.6.7:51240;totalTime:1.200000,"
    "requestQueueTime:0.100000,localTime:0.900000,remoteTime:0.000000,throttleTime:0.000000,"
    "responseQueueTime:0.100000,sendTime:0.100000,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,"
    "listener:PLAINTEXT" + SUFFIX
)
#: A 0.10.2.2 broker's ControlledShutdown v0 at TRACE (CONSTRUCTED): the Scala request object's own description.
LINE_0_10 = (
    "[2026-11-27 10:15:42,123] TRACE Completed request:Name: ControlledShutdownRequest; Version: 0; CorrelationId: 3;"
    " BrokerId: 2 from connection 10.20.1.14:9092-10.20.1.15:40000;totalTime:2,requestQueueTime:0,localTime:2,"
    "remoteTime:0,responseQueueTime:0,sendTime:0,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,"
    "listener:PLAINTEXT" + SUFFIX
)


def test_a_2_7_line_is_read_by_the_text_pattern() -> None:
    match = re.match(lf.TEXT_LINE, LINE_2_7)
    assert match is not None
    api, version, client_id, connection, principal, listener, name, software_version = match.groups()
    assert (api, version, client_id, connection) == (
        "API_VERSIONS",
        "3",
        "billing-service",
        "10.20.1.14:9092-10.20.6.7:51234-3",
    )
    assert (principal, listener, name, software_version) == ("User:ANONYMOUS", "PLAINTEXT", "unknown", "unknown")
    assert api_keys_by_enum_name()[api] == lf.API_VERSIONS_KEY
    body = re.search(lf.TEXT_API_VERSIONS_REQUEST, LINE_2_7)
    error = re.search(lf.TEXT_RESPONSE_ERROR_CODE, LINE_2_7)
    assert body is not None and body.groups() == ("librdkafka", "1.6.0")
    assert error is not None and error.group(1) == "0"


@pytest.mark.parametrize("line", [LINE_2_7, METADATA_2_7])
def test_the_fast_path_reads_a_2_7_line_as_the_general_path_does(line: str) -> None:
    """The job cuts the header before the first ") -- " and the tail after the last " from connection " and matches
    each on its own; both must give TEXT_LINE's fields."""
    head = re.match(lf.TEXT_HEAD, line.split(lf.TEXT_HEAD_END, 1)[0])
    tail = re.match(lf.TEXT_TAIL, line.rsplit(lf.TEXT_TAIL_START, 1)[1])
    whole = re.match(lf.TEXT_LINE, line)
    assert head is not None and tail is not None and whole is not None
    assert head.groups()[1:] + tail.groups() == whole.groups()


def test_the_reference_parser_names_the_2_7_client_from_the_body() -> None:
    parsed = parse_line(LINE_2_7)
    assert isinstance(parsed, ParsedLine)
    assert (parsed.client_id, parsed.connection, parsed.software) == (
        "billing-service",
        "10.20.1.14:9092-10.20.6.7:51234-3",
        (lf.PRIORITY_API_VERSIONS_BODY, "librdkafka", "1.6.0"),
    )


@pytest.mark.parametrize("line", [LINE_0_11, LINE_0_10])
def test_a_line_of_a_broker_before_1_0_is_told_apart(line: str) -> None:
    """Neither the JSON nor the text form: the job counts it under its own reason, which names the releases, instead
    of taking it for a JSON line cut off or for a line of another logger."""
    assert lf.older_form(line)
    assert re.match(lf.TEXT_LINE, line) is None
    assert "0.10 or 0.11" in lf.REASON_OLDER_FORM


@pytest.mark.parametrize("line", [LINE_2_7, METADATA_2_7, TS + 'Completed request:{"isForwarded":false}' + SUFFIX, ""])
def test_lines_of_1_0_and_later_are_not_of_an_older_form(line: str) -> None:
    assert not lf.older_form(line)
