"""Realistic broker request logs for the inventory benchmark (and the Spark/reference equality test).

A fleet of distinct clients (clientId, principal, source host, software) spread over six brokers of three eras:
2.6.0 (2.x text form with clientInformation), 3.9.0 (JSON) and 4.1.0 (JSON, connection ids with a processor
segment). Each PLAINTEXT or SSL connection starts with its ApiVersions line (clientInformation still unknown, the
request body naming the software); on SASL_SSL the SASL authenticator answers ApiVersions before authentication and
Kafka logs no line for it, so those connections start with their first request after it. Then a request mix of
Fetch, Produce, Heartbeat, OffsetCommit, Metadata, FindCoordinator, ListOffsets, JoinGroup and SyncGroup at the
versions the client's era uses: legacy clients use versions Kafka 4.0 removed. Some hosts are IPv6, SSL principals
are distinguished names with commas, some clientIds are null or empty; a few garbage lines and a cut-off last line
per file are mixed in. Hourly files.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

EPOCH = 1767261600  # 2026-01-01 10:00:00 UTC: the first hourly file of every broker
FILES_PER_BROKER = 4
GARBAGE_EVERY = 40_000


@dataclass(frozen=True)
class Broker:
    broker_id: int
    json_form: bool
    processor_segment: bool
    address: str


BROKERS = [
    Broker(1, False, False, "10.1.0.1"),
    Broker(2, False, False, "10.1.0.2"),
    Broker(3, True, False, "10.1.0.3"),
    Broker(4, True, False, "10.1.0.4"),
    Broker(5, True, True, "10.1.0.5"),
    Broker(6, True, True, "10.1.0.6"),
]

# API key -> (JSON enum name, text enum name)
API_NAMES = {
    0: "PRODUCE",
    1: "FETCH",
    2: "LIST_OFFSETS",
    3: "METADATA",
    8: "OFFSET_COMMIT",
    10: "FIND_COORDINATOR",
    11: "JOIN_GROUP",
    12: "HEARTBEAT",
    14: "SYNC_GROUP",
    18: "API_VERSIONS",
}
# Era -> API versions used. "legacy" is a pre-2.1 client: Produce v2, Fetch v3, OffsetCommit v1, JoinGroup v1
# are gone in 4.0; Metadata v1 and FindCoordinator v0 stay served.
ERAS = {
    "legacy": {0: 2, 1: 3, 2: 0, 3: 1, 8: 1, 10: 0, 11: 1, 12: 0, 14: 0, 18: 0},
    "old": {0: 7, 1: 11, 2: 5, 3: 8, 8: 7, 10: 2, 11: 5, 12: 3, 14: 3, 18: 3},
    "modern": {0: 9, 1: 13, 2: 7, 3: 12, 8: 8, 10: 4, 11: 9, 12: 4, 14: 5, 18: 3},
}
SOFTWARE = [  # (name, version, era, weight); "unknown" clients send ApiVersions v0-v2
    ("apache-kafka-java", "3.9.0", "modern", 20),
    ("apache-kafka-java", "3.6.1", "modern", 15),
    ("apache-kafka-java", "2.8.2", "old", 10),
    ("apache-kafka-java", "2.4.1", "old", 5),
    ("librdkafka", "2.3.0", "modern", 10),
    ("librdkafka", "1.6.0", "old", 5),
    ("confluent-kafka-python", "2.3.0-rdkafka-2.3.0", "modern", 8),
    ("kafka-python", "2.0.2", "old", 5),
    ("sarama", "1.38.1", "modern", 4),
    ("unknown", "unknown", "legacy", 6),
    ("unknown", "unknown", "old", 6),
]
API_MIX = [(1, 40), (0, 25), (12, 10), (8, 8), (3, 8), (10, 3), (2, 2), (11, 2), (14, 2)]
PROTOCOL = ["PLAINTEXT", "SASL_SSL", "SSL"]
# Listeners whose ApiVersions (sent before authentication) the SASL authenticator answers outside the request log.
SASL_LISTENERS = frozenset({"SASL_SSL"})


@dataclass
class Connection:
    broker: Broker
    connection_id: str
    client_id: str | None
    principal: str
    listener: str
    software: tuple[str, str]
    versions: dict[int, int]
    group: str


def _fleet(rng: random.Random, clients: int) -> list[Connection]:
    weights = [w for *_, w in SOFTWARE]
    out = []
    for n in range(clients):
        name, version, era, _w = rng.choices(SOFTWARE, weights)[0]
        broker = rng.choice(BROKERS)
        protocol = rng.choice(PROTOCOL)
        if protocol == "PLAINTEXT":
            principal = "User:ANONYMOUS"
        elif protocol == "SSL":
            principal = f"User:CN=svc-{n},OU=Payments,O=Example Corp,C=US"
        else:
            principal = f"User:svc-{n % 5000}"
        if n % 20 == 0:
            host, local = f"fd00:0:0:0:0:0:{n >> 16 & 0xFFFF:x}:{n & 0xFFFF:x}", "fd00:0:0:0:0:0:0:1"
        else:
            host, local = f"10.{2 + (n >> 16) % 200}.{n >> 8 & 255}.{n & 255}", broker.address
        client_id: str | None = f"{'consumer' if n % 2 else 'producer'}-app{n}-1"
        if n % 97 == 0:
            client_id = None
        elif n % 101 == 0:
            client_id = ""
        port = {"PLAINTEXT": 9092, "SASL_SSL": 9094, "SSL": 9093}[protocol]
        for c in range(1 + n % 2):
            index = n * 2 + c
            middle = f"-{index % 8}" if broker.processor_segment else ""
            conn_id = f"{local}:{port}-{host}:{30000 + index % 30000}{middle}-{index}"
            out.append(
                Connection(broker, conn_id, client_id, principal, protocol, (name, version), ERAS[era], f"grp{n // 8}")
            )
    return out


def _bodies_json(conn: Connection, api: int) -> tuple[str, str]:
    g = conn.group
    if api == 0:
        return (
            '{"transactionalId":null,"acks":-1,"timeoutMs":30000,"topicData":[{"name":"orders","partitionData":'
            '[{"index":3,"recordsSizeInBytes":1843}]}]}',
            '{"responses":[{"name":"orders","partitionResponses":[{"index":3,"errorCode":0,"baseOffset":99312,'
            '"logAppendTimeMs":-1,"logStartOffset":0,"recordErrors":[],"errorMessage":null}]}],"throttleTimeMs":0}',
        )
    if api == 1:
        return (
            '{"replicaId":-1,"maxWaitMs":500,"minBytes":1,"maxBytes":52428800,"isolationLevel":0,"sessionId":0,'
            '"sessionEpoch":-1,"topics":[{"topic":"orders","partitions":[{"partition":3,"currentLeaderEpoch":7,'
            '"fetchOffset":99120,"lastFetchedEpoch":-1,"logStartOffset":-1,"partitionMaxBytes":1048576}]}],'
            '"forgottenTopicsData":[],"rackId":""}',
            '{"throttleTimeMs":0,"errorCode":0,"sessionId":0,"responses":[{"topic":"orders","partitions":'
            '[{"partitionIndex":3,"errorCode":0,"highWatermark":99313,"lastStableOffset":99313,"logStartOffset":0,'
            '"abortedTransactions":null,"preferredReadReplica":-1,"recordsSizeInBytes":3686}]}]}',
        )
    if api == 3:
        brokers = ",".join(
            f'{{"nodeId":{b.broker_id},"host":"broker-{b.broker_id}.example.internal","port":9092,"rack":null}}'
            for b in BROKERS[:3]
        )
        parts = ",".join(
            f'{{"errorCode":0,"partitionIndex":{p},"leaderId":{p % 3 + 1},"leaderEpoch":7,"replicaNodes":[1,2,3],'
            f'"isrNodes":[1,2,3],"offlineReplicas":[]}}'
            for p in range(4)
        )
        return (
            '{"topics":[{"name":"orders"}],"allowAutoTopicCreation":false}',
            f'{{"throttleTimeMs":0,"brokers":[{brokers}],"clusterId":"q3Vd0yS7TgKcJm0a9xR2Lw","controllerId":1,'
            f'"topics":[{{"errorCode":0,"name":"orders","isInternal":false,"partitions":[{parts}]}}]}}',
        )
    if api == 8:
        return (
            f'{{"groupId":"{g}","generationIdOrMemberEpoch":41,"memberId":"m-1","groupInstanceId":null,'
            '"topics":[{"name":"orders","partitions":[{"partitionIndex":3,"committedOffset":99120,'
            '"committedLeaderEpoch":7,"committedMetadata":""}]}]}',
            '{"throttleTimeMs":0,"topics":[{"name":"orders","partitions":[{"partitionIndex":3,"errorCode":0}]}]}',
        )
    if api == 10:
        return (
            f'{{"keyType":0,"coordinatorKeys":["{g}"]}}',
            f'{{"throttleTimeMs":0,"coordinators":[{{"key":"{g}","nodeId":2,"host":"broker-2.example.internal",'
            '"port":9092,"errorCode":0,"errorMessage":""}]}',
        )
    if api == 2:
        return (
            '{"replicaId":-1,"isolationLevel":0,"topics":[{"name":"orders","partitions":[{"partitionIndex":3,'
            '"currentLeaderEpoch":7,"timestamp":-1}]}]}',
            '{"throttleTimeMs":0,"topics":[{"name":"orders","partitions":[{"partitionIndex":3,"errorCode":0,'
            '"timestamp":-1,"offset":99313,"leaderEpoch":7}]}]}',
        )
    if api == 11:
        return (
            f'{{"groupId":"{g}","sessionTimeoutMs":45000,"rebalanceTimeoutMs":300000,"memberId":"m-1",'
            '"groupInstanceId":null,"protocolType":"consumer","protocols":[{"name":"range","metadata":"AAEAAAAB"},'
            '{"name":"cooperative-sticky","metadata":"AAEAAAAB"}],"reason":null}',
            '{"throttleTimeMs":0,"errorCode":0,"generationId":41,"protocolType":"consumer","protocolName":"range",'
            '"leader":"m-1","skipAssignment":false,"memberId":"m-1","members":[]}',
        )
    if api == 14:
        return (
            f'{{"groupId":"{g}","generationId":41,"memberId":"m-1","groupInstanceId":null,"protocolType":"consumer",'
            '"protocolName":"range","assignments":[]}',
            '{"throttleTimeMs":0,"errorCode":0,"protocolType":"consumer","protocolName":"range","assignment":"AAEAAA"}',
        )
    if api == 12:
        return (
            f'{{"groupId":"{g}","generationId":41,"memberId":"m-1","groupInstanceId":null}}',
            '{"throttleTimeMs":0,"errorCode":0}',
        )
    raise ValueError(api)


def _json_to_text(body: str) -> str:
    """The body in 2.x Struct.toString() shape, {snake_name=value,...} (docs/kafka-facts/request-log.md#text-form)."""

    def render(value: object) -> str:
        if isinstance(value, dict):
            parts = []
            for key, inner in value.items():
                snake = "".join("_" + ch.lower() if ch.isupper() else ch for ch in key)
                parts.append(f"{snake}={render(inner)}")
            return "{" + ",".join(parts) + "}"
        if isinstance(value, list):
            return "[" + ",".join(render(v) for v in value) + "]"
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return render(json.loads(body))


class Renderer:
    """Pre-renders per-connection constant parts; one f-string per line."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int], tuple[str, str, str, str]] = {}

    def line(self, conn: Connection, api: int, stamp: str, corr: int) -> str:
        version = conn.versions[api]
        name = API_NAMES[api]
        sw_name, sw_version = conn.software
        first = api == 18
        if first and conn.listener in SASL_LISTENERS:
            raise ValueError(f"{conn.connection_id}: ApiVersions before SASL authentication is never logged")
        # The ApiVersions line's own clientInformation is still unknown: the request context is built before
        # ApiVersions registers the software (docs/kafka-facts/request-log.md#client-information-lag).
        info_name, info_version = ("unknown", "unknown") if first else conn.software
        if first:
            body_known = version >= 3
            req_j = (
                f'{{"clientSoftwareName":"{sw_name}","clientSoftwareVersion":"{sw_version}"}}' if body_known else "{}"
            )
            resp_j = '{"errorCode":0,"apiKeys":[{"apiKey":0,"minVersion":0,"maxVersion":11}],"throttleTimeMs":0}'
        else:
            key = (conn.group if api in (8, 10, 11, 12, 14) else "", api)
            cached = self._cache.get(key)
            if cached is None:
                req_j, resp_j = _bodies_json(conn, api)
                cached = self._cache[key] = (req_j, resp_j, _json_to_text(req_j), _json_to_text(resp_j))
            req_j, resp_j = cached[0], cached[1]
        if conn.broker.json_form:
            cid = "" if conn.client_id is None else f'"clientId":{json.dumps(conn.client_id)},'
            if conn.client_id is None and corr % 2:
                cid = '"clientId":null,'
            return (
                f'[{stamp}] DEBUG Completed request:{{"isForwarded":false,"requestHeader":{{"requestApiKey":{api},'
                f'"requestApiVersion":{version},"correlationId":{corr},{cid}"requestApiKeyName":"{name}"}},'
                f'"request":{req_j},"response":{resp_j},"connection":"{conn.connection_id}","totalTimeMs":0.712,'
                f'"requestQueueTimeMs":0.083,"localTimeMs":0.391,"remoteTimeMs":0.0,"throttleTimeMs":0,'
                f'"responseQueueTimeMs":0.064,"sendTimeMs":0.105,"securityProtocol":"{conn.listener}",'
                f'"principal":"{conn.principal}","listener":"{conn.listener}","clientInformation":'
                f'{{"softwareName":"{info_name}","softwareVersion":"{info_version}"}}}} (kafka.request.logger)'
            )
        if first:
            req_t = (
                f"{{client_software_name={sw_name},client_software_version={sw_version},_tagged_fields={{}}}}"
                if version >= 3
                else "{}"
            )
            resp_t = "{error_code=0,api_keys=[{api_key=0,min_version=0,max_version=8}],throttle_time_ms=0}"
        else:
            assert cached is not None  # every request but a connection's first ApiVersions went through the cache
            req_t, resp_t = cached[2], cached[3]
        cid_t = "null" if conn.client_id is None else conn.client_id
        return (
            f"[{stamp}] DEBUG Completed request:RequestHeader(apiKey={name}, apiVersion={version}, clientId={cid_t}, "
            f"correlationId={corr}) -- {req_t},response:{resp_t} from connection {conn.connection_id};"
            "totalTime:0.712,requestQueueTime:0.083,localTime:0.391,remoteTime:0.0,throttleTime:0,"
            f"responseQueueTime:0.064,sendTime:0.105,securityProtocol:{conn.listener},principal:{conn.principal},"
            f"listener:{conn.listener},clientInformation:ClientInformation(softwareName={info_name}, "
            f"softwareVersion={info_version}) (kafka.request.logger)"
        )


def _stamp(seconds: float) -> str:
    whole = int(seconds)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(whole)) + f",{int((seconds - whole) * 1000):03d}"


def generate(out_dir: Path, total_bytes: int, clients: int, seed: int = 7, start: int = EPOCH) -> int:
    """Writes ``broker-N/kafka-request.log.<hour>`` files totalling about ``total_bytes``, the first hour at
    ``start`` (UTC seconds; another day gives files of other names and content, as the next day's logs are);
    returns bytes written."""
    rng = random.Random(seed)
    fleet = _fleet(rng, clients)
    renderer = Renderer()
    apis, weights = zip(*API_MIX, strict=True)
    written = 0
    per_file = max(total_bytes // (len(BROKERS) * FILES_PER_BROKER), 1)
    for broker in BROKERS:
        conns = [c for c in fleet if c.broker is broker]
        corr = 0
        for hour in range(FILES_PER_BROKER):
            stamp_at = float(start + hour * 3600)
            name = "kafka-request.log." + time.strftime("%Y-%m-%d-%H", time.gmtime(start + hour * 3600))
            path = out_dir / f"broker-{broker.broker_id}" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            size = 0
            buffer: list[str] = []
            if hour == 0:
                for conn in conns:
                    if conn.listener in SASL_LISTENERS:
                        continue  # SaslServerAuthenticator answered its ApiVersions: no request-log line
                    buffer.append(renderer.line(conn, 18, _stamp(stamp_at), corr))
                    corr += 1
            step = 3600.0 / max(per_file // 900, 1)
            with path.open("w", encoding="utf-8") as fh:
                while size < per_file:
                    batch = rng.choices(apis, weights, k=256)
                    picks = rng.choices(conns, k=256)
                    stamp = _stamp(stamp_at)
                    for api, conn in zip(batch, picks, strict=True):
                        corr += 1
                        if corr % GARBAGE_EVERY == 0:
                            buffer.append("java.lang.IllegalStateException: unexpected thing at kafka.network")
                        buffer.append(renderer.line(conn, api, stamp, corr))
                        stamp_at += step
                        if corr % 64 == 0:
                            stamp = _stamp(stamp_at)
                    chunk = "\n".join(buffer) + "\n"
                    fh.write(chunk)
                    size += len(chunk)
                    buffer = []
                # A broker killed mid-write leaves a cut-off last line without a newline.
                fh.write(renderer.line(conns[0], 3, _stamp(stamp_at), corr)[:150])
            written += path.stat().st_size
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--mb", type=int, default=100, help="total size in MB")
    parser.add_argument("--clients", type=int, default=30_000, help="distinct clients")
    args = parser.parse_args(argv)
    written = generate(args.out_dir, args.mb * 1_000_000, args.clients)
    print(f"{written / 1e6:.0f} MB under {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
