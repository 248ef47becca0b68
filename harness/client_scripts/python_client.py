"""Run one real Python Kafka client against a bootstrap address, in its own process.

Protocol with the parent (harness.clients): the client bootstraps (ApiVersions + Metadata), prints
``READY`` on stdout, then holds its connections open until stdin reaches EOF, closes the client cleanly and
exits 0. Anything else (logs, tracebacks) goes to stderr, so stdout carries only the handshake line.

Usage: python_client.py {confluent-kafka|kafka-python|aiokafka} BOOTSTRAP [--client-id ID] [--timeout S]
       [--config KEY=VALUE ...]   (extra client settings in the client's own names; not for aiokafka)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

READY = "READY"


def _ready() -> None:
    # flush immediately: the parent waits for this line on a pipe, which is block-buffered by default
    print(READY, flush=True)


def _wait_for_eof() -> None:
    # The parent closes our stdin to ask us to close; if the parent dies, the pipe closes too, so the
    # client never outlives it.
    while sys.stdin.buffer.read(65536):
        pass


def run_confluent(bootstrap: str, client_id: str | None, timeout: float, extra: dict[str, str]) -> None:
    from confluent_kafka import Producer

    conf: dict[str, str | int] = {"bootstrap.servers": bootstrap, **extra}
    if client_id:
        conf["client.id"] = client_id
    producer = Producer(conf)
    # list_topics() returns only after a Metadata response, i.e. bootstrap is complete.
    producer.list_topics(timeout=timeout)
    _ready()
    _wait_for_eof()
    producer.flush(timeout)
    # close() (confluent-kafka >= 2.13) destroys the rd_kafka handle now instead of at garbage collection.
    close = getattr(producer, "close", None)
    if close is not None:
        close()


def run_kafka_python(bootstrap: str, client_id: str | None, timeout: float, extra: dict[str, str]) -> None:
    from kafka import KafkaAdminClient

    kwargs: dict[str, object] = {
        "bootstrap_servers": bootstrap,
        "bootstrap_timeout_ms": int(timeout * 1000),
        **extra,
    }
    if client_id:
        kwargs["client_id"] = client_id
    # The constructor bootstraps (ApiVersions + Metadata) and raises if that fails within the timeout, but
    # then closes its bootstrap connection: an idle admin client would hold no connection at all.
    admin = KafkaAdminClient(**kwargs)
    try:
        # list_topics() opens a connection to a broker node and keeps it (until connections_max_idle_ms).
        admin.list_topics()
        _ready()
        _wait_for_eof()
    finally:
        admin.close()


async def _run_aiokafka(bootstrap: str, client_id: str | None, timeout: float) -> None:
    from aiokafka import AIOKafkaProducer

    kwargs: dict[str, object] = {"bootstrap_servers": bootstrap, "request_timeout_ms": int(timeout * 1000)}
    if client_id:
        kwargs["client_id"] = client_id
    producer = AIOKafkaProducer(**kwargs)
    # start() returns once the bootstrap Metadata arrived, but it closes the bootstrap connection; a
    # metadata refresh goes through a connection to a broker node, which the client then keeps open.
    await asyncio.wait_for(producer.start(), timeout)
    try:
        await asyncio.wait_for(producer.client.force_metadata_update(), timeout)
        _ready()
        # Read stdin in a thread so the event loop keeps serving the client's connections meanwhile.
        await asyncio.get_running_loop().run_in_executor(None, _wait_for_eof)
    finally:
        await producer.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kind", choices=["confluent-kafka", "kafka-python", "aiokafka"])
    parser.add_argument("bootstrap")
    parser.add_argument("--client-id")
    parser.add_argument("--timeout", type=float, default=20.0, help="bootstrap timeout in seconds")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="extra client setting")
    args = parser.parse_args(argv)
    extra = {}
    for setting in args.config:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            parser.error(f"--config {setting!r}: expected KEY=VALUE")
        extra[key] = value
    if extra and args.kind == "aiokafka":
        parser.error("--config is not supported for aiokafka")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.kind == "confluent-kafka":
        run_confluent(args.bootstrap, args.client_id, args.timeout, extra)
    elif args.kind == "kafka-python":
        run_kafka_python(args.bootstrap, args.client_id, args.timeout, extra)
    else:
        asyncio.run(_run_aiokafka(args.bootstrap, args.client_id, args.timeout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
