"""Small constructed request-log fixtures (shapes from docs/kafka-facts/request-log.md; hosts and ids invented)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

TS = "[2024-03-12 09:41:05,118] DEBUG "
SUFFIX = " (kafka.request.logger)"
TIMES_JSON = (
    '"totalTimeMs":0.347,"requestQueueTimeMs":0.052,"localTimeMs":0.171,"remoteTimeMs":0.0,"throttleTimeMs":0,'
    '"responseQueueTimeMs":0.041,"sendTimeMs":0.083'
)
TIMES_TEXT = (
    "totalTime:0.712,requestQueueTime:0.083,localTime:0.391,remoteTime:0.0,throttleTime:0,"
    "responseQueueTime:0.064,sendTime:0.105"
)


def json_line(
    api_key: int,
    api_name: str,
    version: int,
    client_id: str | type[KeyError] | None,
    connection: str,
    info: tuple[str, str] = ("unknown", "unknown"),
    request: str = "{}",
    response: str = '{"errorCode":0}',
    principal: str = "User:ANONYMOUS",
    listener: str = "PLAINTEXT",
    protocol: str = "PLAINTEXT",
    ts: str = TS,
) -> str:
    cid = f'"clientId":"{client_id}",'
    if client_id is KeyError:  # header v0: no clientId key at all
        cid = ""
    elif client_id is None:
        cid = '"clientId":null,'
    return (
        f'{ts}Completed request:{{"isForwarded":false,"requestHeader":{{"requestApiKey":{api_key},'
        f'"requestApiVersion":{version},"correlationId":3,{cid}"requestApiKeyName":"{api_name}"}},'
        f'"request":{request},"response":{response},"connection":"{connection}",{TIMES_JSON},'
        f'"securityProtocol":"{protocol}","principal":{json.dumps(principal)},"listener":"{listener}",'
        f'"clientInformation":{{"softwareName":"{info[0]}","softwareVersion":"{info[1]}"}}}}{SUFFIX}'
    )


def text_line(
    api: str,
    version: int,
    client_id: str,
    connection: str,
    info: tuple[str, str] | None = ("unknown", "unknown"),
    request: str = "{}",
    response: str = "{error_code=0}",
    principal: str = "User:ANONYMOUS",
    listener: str = "PLAINTEXT",
    protocol: str = "PLAINTEXT",
    ts: str = "[2020-06-03 14:07:21,482] DEBUG ",
) -> str:
    ci = (
        ""
        if info is None
        else f",clientInformation:ClientInformation(softwareName={info[0]}, softwareVersion={info[1]})"
    )
    return (
        f"{ts}Completed request:RequestHeader(apiKey={api}, apiVersion={version}, clientId={client_id}, "
        f"correlationId=7) -- {request},response:{response} from connection {connection};{TIMES_TEXT},"
        f"securityProtocol:{protocol},principal:{principal},listener:{listener}{ci}{SUFFIX}"
    )


# Connections
C_JAVA = "10.20.1.11:9092-10.20.4.52:60218-7"  # 3.7 JSON, ApiVersions caveat
C_IPV6 = "fd00:0:0:0:0:0:0:1:9094-fd00:0:0:0:0:0:0:42:38114-5-2207"  # 4.x processor segment, IPv6
C_ONLY_API_VERSIONS = "10.20.1.11:9092-10.20.4.60:41000-9"
C_TEXT_RDKAFKA = "10.20.1.12:9092-10.20.5.81:38114-2207"
C_TEXT_LEGACY = "10.20.1.11:9092-10.20.7.9:41822-35"
C_NULLS = "10.20.1.13:9092-10.20.8.1:40000-1"
C_TRUNK = "10.20.1.13:9092-10.20.8.2:40100-0-3"  # a 4.x connection id (processor 0, index 3)
C_GROUP = "10.20.1.12:9093-10.20.9.9:50000-4"
SSL_DN = "User:CN=etl.example.com,OU=Data Platform,O=Example\\, Inc.,C=US"

JSON_LINES = [
    # ApiVersions on PLAINTEXT: the line's clientInformation is unknown, the body names the software.
    json_line(
        18,
        "API_VERSIONS",
        3,
        "producer-1",
        C_JAVA,
        request='{"clientSoftwareName":"apache-kafka-java","clientSoftwareVersion":"3.7.0"}',
        response='{"errorCode":0,"apiKeys":[{"apiKey":0,"minVersion":0,"maxVersion":10}],"throttleTimeMs":0}',
    ),
    json_line(
        0,
        "PRODUCE",
        9,
        "producer-1",
        C_JAVA,
        ("apache-kafka-java", "3.7.0"),
        request='{"acks":-1,"timeoutMs":30000,"topicData":[{"name":"orders","partitionData":[]}]}',
    ),
    # A connection seen only through its ApiVersions line.
    json_line(
        18,
        "API_VERSIONS",
        3,
        "lonely",
        C_ONLY_API_VERSIONS,
        request='{"clientSoftwareName":"librdkafka","clientSoftwareVersion":"2.3.0"}',
    ),
    # A rejected ApiVersions: INVALID_REQUEST (42), the software name fails Kafka's pattern. KafkaApis answers
    # getErrorResponse in the request's version: no ApiKeys, ThrottleTimeMs from v1 (4.3 KafkaApis.scala:1529-1530,
    # ApiVersionsRequest.java:111-117); the body names nothing the broker registered.
    json_line(
        18,
        "API_VERSIONS",
        3,
        "rejected",
        "10.20.1.11:9092-10.20.4.61:41001-10",
        request='{"clientSoftwareName":"-bad-","clientSoftwareVersion":"1"}',
        response='{"errorCode":42,"apiKeys":[],"throttleTimeMs":0}',
    ),
    # A version the 3.x broker does not know (v5 > its max 4): UNSUPPORTED_VERSION (35). The body is not parsed
    # but handled as an empty v0 request, and the v0 response carries only ApiVersions' own range (4.3
    # RequestContext.java:112-116 and :158-163, ApiVersionsRequest.java:119-123); the header keeps version 5.
    json_line(
        18,
        "API_VERSIONS",
        5,
        "too-new",
        "10.20.1.11:9092-10.20.4.62:41002-11",
        request="{}",
        response='{"errorCode":35,"apiKeys":[{"apiKey":18,"minVersion":0,"maxVersion":4}]}',
    ),
    # 4.x SASL_SSL over IPv6 with an SSL distinguished-name principal.
    json_line(
        12,
        "HEARTBEAT",
        4,
        "consumer-billing-2",
        C_IPV6,
        ("apache-kafka-java", "4.1.0"),
        request='{"groupId":"billing","generationId":41,"memberId":"m","groupInstanceId":null}',
        principal=SSL_DN,
        listener="SASL_SSL",
        protocol="SASL_SSL",
    ),
    # null clientId, header v0 (no clientId), empty clientId; request/response not captured ("").
    json_line(3, "METADATA", 12, None, C_NULLS, ("librdkafka", "2.3.0")),
    json_line(3, "METADATA", 12, KeyError, C_NULLS, ("librdkafka", "2.3.0")),
    json_line(3, "METADATA", 12, "", C_NULLS, ("librdkafka", "2.3.0"), request='""', response='""'),
    # The next release (trunk, 4.4) writes a body it did not capture as JSON null, not "" (apache/kafka PR #22295,
    # 9505119f2f: RequestConvertToJson.requestDesc/requestDescMetrics use NullNode); on an ApiVersions line the
    # software then comes from the line's clientInformation alone.
    json_line(3, "METADATA", 13, "trunk-app", C_TRUNK, ("apache-kafka-java", "4.4.0"), request="null", response="null"),
    json_line(
        18, "API_VERSIONS", 4, "trunk-app", C_TRUNK, ("apache-kafka-java", "4.4.0"), request="null", response="null"
    ),
    # KIP-559 on JSON: JoinGroup v9 then SyncGroup v5.
    json_line(
        11,
        "JOIN_GROUP",
        9,
        "consumer-orders-1",
        C_GROUP,
        ("apache-kafka-java", "3.9.0"),
        request='{"groupId":"orders","protocolType":"consumer","protocols":[{"name":"range","metadata":""},'
        '{"name":"cooperative-sticky","metadata":""}]}',
        response='{"errorCode":0,"protocolType":"consumer","protocolName":"range","members":[]}',
    ),
    json_line(
        14,
        "SYNC_GROUP",
        5,
        "consumer-orders-1",
        C_GROUP,
        ("apache-kafka-java", "3.9.0"),
        request='{"groupId":"orders","protocolType":"consumer","protocolName":"range","assignments":[]}',
        response='{"errorCode":0,"protocolType":"consumer","protocolName":"range","assignment":""}',
    ),
]

TEXT_LINES = [
    # 2.5 ApiVersions: clientInformation unknown, body names librdkafka 1.9.2; then Metadata with the real values.
    text_line(
        "API_VERSIONS",
        3,
        "rdkafka",
        C_TEXT_RDKAFKA,
        request="{client_software_name=librdkafka,client_software_version=1.9.2,_tagged_fields={}}",
        response="{error_code=0,api_keys=[{api_key=0,min_version=0,max_version=8}],throttle_time_ms=0}",
    ),
    text_line("METADATA", 9, "rdkafka", C_TEXT_RDKAFKA, ("librdkafka", "1.9.2"), request="{topics=null}"),
    # A legacy client: Metadata v1 (still served by 4.0), Fetch v3 and OffsetCommit v1 (removed in 4.0).
    text_line("METADATA", 1, "legacy-etl", C_TEXT_LEGACY, request="{topics=[{name=orders}]}"),
    text_line("FETCH", 3, "legacy-etl", C_TEXT_LEGACY, request="{replica_id=-1,max_wait_time=500}"),
    text_line("OFFSET_COMMIT", 1, "legacy-etl", C_TEXT_LEGACY, request="{group_id=etl,generation_id=1}"),
    # null clientId and an SSL DN with commas, on a 2.4 broker line without clientInformation.
    text_line(
        "HEARTBEAT",
        2,
        "null",
        "10.20.1.14:9093-10.20.9.1:45000-3",
        None,
        principal=SSL_DN,
        listener="SSL",
        protocol="SSL",
        request="{group_id=etl,generation_id=1,member_id=m}",
    ),
    # KIP-559 on text: JoinGroup v5 (protocol name in the response) and SyncGroup v3 (no protocol fields).
    text_line(
        "JOIN_GROUP",
        5,
        "connect-1",
        "10.20.1.12:9092-10.20.9.40:40110-8",
        ("apache-kafka-java", "2.5.0"),
        request="{group_id=connect-cluster,session_timeout_ms=10000,rebalance_timeout_ms=60000,member_id=,"
        "group_instance_id=null,protocol_type=connect,protocols=[{name=sessioned,metadata=java.nio.HeapByteBuffer"
        "[pos=0 lim=0 cap=0]},{name=compatible,metadata=java.nio.HeapByteBuffer[pos=0 lim=0 cap=0]}]}",
        response="{throttle_time_ms=0,error_code=0,generation_id=1,protocol_name=sessioned,leader=l,member_id=m,"
        "members=[]}",
    ),
    text_line(
        "SYNC_GROUP",
        3,
        "connect-1",
        "10.20.1.12:9092-10.20.9.40:40110-8",
        ("apache-kafka-java", "2.5.0"),
        request="{group_id=connect-cluster,generation_id=1,member_id=m,group_instance_id=null,assignments=[]}",
    ),
]

GARBAGE = [
    "",
    "java.lang.IllegalStateException: something else entirely",
    "[2024-03-12 09:41:05,118] WARN Attempting to send response via channel for which there is no open connection "
    "(kafka.network.RequestChannel$)",
    'Completed request:{"requestHeader":{}} (kafka.request.logger)',  # no timestamp
    # A time that is no date (month 13): malformed, not a crash when the job turns times into timestamps.
    "[2024-13-12 09:41:05,118]" + JSON_LINES[0][JSON_LINES[0].index("]") + 1 :],
    TS + "Completed request:RequestHeader(apiKey=FETCH, apiVersion=3, clientId=x, correlationId=1) -- {} broken",
    TS + "Completed request:RequestHeader(apiKey=NOT_AN_API, apiVersion=3, clientId=x, correlationId=1) -- {},"
    "response:{} from connection 1.2.3.4:9092-5.6.7.8:1234-1;" + TIMES_TEXT + ",securityProtocol:PLAINTEXT,"
    "principal:User:ANONYMOUS,listener:PLAINTEXT" + SUFFIX,
]
TRUNCATED = json_line(1, "FETCH", 13, "cut", C_JAVA, ("apache-kafka-java", "3.7.0"))[:140]


def write_fixture(root: Path) -> Path:
    """broker-1: text (plain); broker-2: JSON gzipped under an hourly name, with garbage; broker-3: JSON whose last
    line is cut off without a newline; plus a server.log that the name filter must skip."""
    (root / "broker-1").mkdir(parents=True)
    (root / "broker-1" / "kafka-request.log").write_text("\n".join(TEXT_LINES) + "\n", encoding="utf-8")
    (root / "broker-2").mkdir()
    with gzip.open(root / "broker-2" / "kafka-request.log.2024-03-12-09.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(JSON_LINES[:5] + GARBAGE) + "\n")
    (root / "broker-3").mkdir()
    (root / "broker-3" / "kafka-request.log").write_text("\n".join([*JSON_LINES[5:], TRUNCATED]), encoding="utf-8")
    (root / "broker-3" / "server.log").write_text(JSON_LINES[0] + "\n", encoding="utf-8")
    return root
