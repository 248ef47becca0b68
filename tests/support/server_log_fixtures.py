"""A 4.0 broker's server.log with rejected requests, next to its request log (hosts and ids invented).

The rejection events follow Kafka's own templates (exporter/request_logs/server_log.py cites them): the processor logs
"Closing socket for <connection id> because of error" with the exception on the next line, then "Exception while
processing request from <connection id>" with it again; ``ApiException`` carries no stack trace. They have no
``[SocketServer listenerType=..., nodeId=...]`` prefix: ``Processor`` sets no ``logIdent`` (real 3.9.2 and 4.4.0 brokers
write none); only ``SocketServer``'s own events, such as "Enabling request processing.", have it.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.support import request_log_fixtures as fx

#: SocketServer's log context; the Processor's events have none.
SOCKET_SERVER = "[SocketServer listenerType=BROKER, nodeId=4] "
PROCESSOR = " (kafka.network.Processor)"
UNSUPPORTED = "org.apache.kafka.common.errors.UnsupportedVersionException"
INVALID = "org.apache.kafka.common.errors.InvalidRequestException"

# The listener CLIENTS is on port 9094; 4.x connection ids carry the processor id before the index.
R_CONNECTION = "10.20.1.14:9094-10.20.6.7:51234-1-17"  # its ApiVersions and Metadata are in the request log
R_HOST = "10.20.1.14:9094-10.20.6.8:40001-2-3"  # only another connection of its host is in the request log
R_UNKNOWN = "10.20.1.14:9093-10.20.9.77:33000-0-1"  # neither it nor its host nor its listener's port logged
R_ROLLED = "10.20.1.14:9094-10.20.6.8:40007-0-9"  # in yesterday's rolled, gzipped file
SEEN_CONNECTION = "10.20.1.14:9094-10.20.6.8:40000-0-2"

FETCH_V3 = "Received request for api with key 1 (Fetch) and unsupported version 3"
OFFSET_COMMIT_V1 = "Received request for api with key 8 (OffsetCommit) and unsupported version 1"
VOTE_DISABLED = "Received request for disabled api with key 52 (Vote) and version 0"


def rejection(ts: str, connection: str, exception: str, message: str) -> list[str]:
    """The two ERROR events of one rejected request, as log4j2's ``[%d] %p %m (%c)%n`` writes them."""
    return [
        f"[{ts}] ERROR Closing socket for {connection} because of error{PROCESSOR}",
        f"{exception}: {message}",
        f"[{ts}] ERROR Exception while processing request from {connection}{PROCESSOR}",
        f"{exception}: {message}",
    ]


REQUEST_LOG = [
    fx.json_line(
        18,
        "API_VERSIONS",
        0,
        "billing-legacy",
        R_CONNECTION,
        request="{}",
        listener="CLIENTS",
        ts="[2026-03-20 10:15:42,101] DEBUG ",
    ),
    fx.json_line(
        3,
        "METADATA",
        4,
        "billing-legacy",
        R_CONNECTION,
        request='{"topics":null}',
        listener="CLIENTS",
        ts="[2026-03-20 10:15:42,110] DEBUG ",
    ),
    fx.json_line(
        18,
        "API_VERSIONS",
        3,
        "inventory-sync",
        SEEN_CONNECTION,
        ("librdkafka", "1.9.2"),
        request='{"clientSoftwareName":"librdkafka","clientSoftwareVersion":"1.9.2"}',
        listener="CLIENTS",
        ts="[2026-03-20 10:14:01,000] DEBUG ",
    ),
]

SERVER_LOG = [
    f"[2026-03-20 10:02:11,907] INFO {SOCKET_SERVER}Enabling request processing. (kafka.network.SocketServer)",
    "[2026-03-20 10:02:12,015] INFO [BrokerServer id=4] Transition from STARTING to STARTED "
    "(kafka.server.BrokerServer)",
    *rejection("2026-03-20 10:15:42,123", R_CONNECTION, UNSUPPORTED, FETCH_V3),
    "[2026-03-20 10:15:50,004] WARN [ReplicaFetcher replicaId=4, leaderId=2, fetcherId=0] Error in response for fetch "
    "request (kafka.server.ReplicaFetcherThread)",
    "java.io.IOException: Connection to 2 was disconnected before the response was read",
    "\tat org.apache.kafka.clients.NetworkClientUtils.sendAndReceive(NetworkClientUtils.java:99)",
    *rejection("2026-03-20 10:16:03,550", R_HOST, UNSUPPORTED, OFFSET_COMMIT_V1),
    *rejection("2026-03-20 10:17:30,001", R_UNKNOWN, INVALID, VOTE_DISABLED),
]

ROLLED_SERVER_LOG = [
    *rejection("2026-03-20 09:59:59,999", R_ROLLED, UNSUPPORTED, OFFSET_COMMIT_V1),
]


def write_rejection_fixture(root: Path) -> Path:
    """broker-4: a 4.0 broker's request log, its server.log and an hourly rolled, gzipped server.log."""
    broker = root / "broker-4"
    broker.mkdir(parents=True)
    (broker / "kafka-request.log").write_text("\n".join(REQUEST_LOG) + "\n", encoding="utf-8")
    (broker / "server.log").write_text("\n".join(SERVER_LOG) + "\n", encoding="utf-8")
    with gzip.open(broker / "server.log.2026-03-20-09.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(ROLLED_SERVER_LOG) + "\n")
    return root
