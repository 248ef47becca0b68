"""The fixed client load of bench/bench_request_log_modes.py, run in a process of its own so that its CPU is never
counted as the benchmark's, and so that the same load runs, unchanged, under every request-log mode.

Two loads, each paced by the clock (a sender that fell behind catches up, but never by more than a second's worth):

* ``mix``, a realistic request mix: ``--producers`` confluent-kafka (librdkafka) producers sending ``--records``
  records a second between them, batched (``linger.ms``, several records per Produce request), a consumer in a
  group fetching them (Fetch, heartbeats, offset commits), metadata (the short-lived connections' below, and the
  clients' own refreshes at librdkafka's default interval);
* ``tiny``, the worst case for a per-request cost: ``--producers`` producers with ``linger.ms=0`` and ``acks=1``,
  ``--rate`` records a second between them, each record its own Produce request.

In both, ``--connections`` new connections a second, each a short-lived client that opens a connection, sends
ApiVersions (v3: it names its software, as every current client does) and Metadata, and closes it. Every
``--deprecated-every``-th one also sends DescribeConfigs v0, a version 3.9 serves but deprecates (Kafka logs such a
request at INFO): 4.x no longer serves it, so the benchmark passes 0 there.

Prints ``ready`` once every producer has had a record delivered, the consumer has read one and a short-lived
connection was served; runs until its stdin closes; then prints one JSON line of what it did (records delivered,
failures, connections).

    python -m bench.request_log_load --bootstrap 127.0.0.1:9092 --topic t --load mix|tiny [...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOADS = ("mix", "tiny")
#: A value of the mix's records: a few hundred bytes, as typical events are.
MIX_VALUE = b"m" * 200
TINY_VALUE = b"t" * 100
CHURN_SOFTWARE = ("bench-churn", "1.0.0")


@dataclass
class Counts:
    """What the load did, counted by its threads under one lock (two producers' callbacks add to the same
    fields, and ``+=`` is not atomic across threads)."""

    produced: int = 0
    delivered: int = 0
    delivery_failures: int = 0
    consumed: int = 0
    connections: int = 0
    connection_failures: int = 0
    deprecated_requests: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, n: int = 1, error: str | None = None) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + n)
            if error is not None and len(self.errors) < 5:
                self.errors.append(error)

    def to_json(self) -> dict[str, Any]:
        with self.lock:
            return {key: value for key, value in self.__dict__.items() if key != "lock"}


class Pacer:
    """Calls at a set rate, by the clock: ``due()`` says how many calls are owed now."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.next_at = time.monotonic()

    def due(self) -> int:
        now = time.monotonic()
        if now - self.next_at > 1.0:
            # A stall (the machine is shared) is not made up in a burst: a burst would batch records that the
            # tiny load means to send one per request.
            self.next_at = now
        owed = 0
        while self.next_at <= now:
            owed += 1
            self.next_at += self.interval
        return owed

    def sleep(self, stop: threading.Event, tick: float) -> None:
        stop.wait(max(0.0, min(tick, self.next_at - time.monotonic())))


# -- the clients -----------------------------------------------------------------------------------------------


def producer_config(load: str, bootstrap: str, index: int) -> dict[str, Any]:
    common: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "client.id": f"bench-{load}-producer-{index}",
        # Metadata refreshed at librdkafka's default (five minutes): the shipped filters keep Metadata lines, so a
        # faster refresh than real clients' would inflate the filtered log.
        "enable.idempotence": False,
    }
    if load == "mix":
        return {**common, "linger.ms": 10, "acks": "all", "compression.type": "none"}
    # One record per request: no lingering, and a stall is not made up in a burst (Pacer).
    return {**common, "linger.ms": 0, "acks": 1, "batch.num.messages": 1}


def run_producer(
    load: str, bootstrap: str, topic: str, index: int, rate: float, stop: threading.Event, counts: Counts
) -> None:
    from confluent_kafka import KafkaError, Producer

    def delivered(error: KafkaError | None, _message: object) -> None:
        if error is None:
            counts.add("delivered")
        else:
            counts.add("delivery_failures", error=f"producer {index}: {error}")

    producer = Producer(producer_config(load, bootstrap, index))
    pacer = Pacer(rate)
    # The mix's records come a few at a time (linger batches them anyway); the tiny load's one at a time.
    tick = 0.002 if load == "mix" else pacer.interval
    value = MIX_VALUE if load == "mix" else TINY_VALUE
    while not stop.is_set():
        for _ in range(pacer.due()):
            try:
                producer.produce(topic, value, on_delivery=delivered)
                counts.add("produced")
            except BufferError:
                counts.add("delivery_failures", error=f"producer {index}: its queue is full")
        producer.poll(0)
        pacer.sleep(stop, tick)
    producer.flush(10)


def run_consumer(bootstrap: str, topic: str, stop: threading.Event, counts: Counts) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "bench-mix-consumer",
            "group.id": "bench-mix-group",
            "auto.offset.reset": "latest",
            "enable.auto.commit": True,
        }
    )
    consumer.subscribe([topic])
    try:
        while not stop.is_set():
            for message in consumer.consume(num_messages=500, timeout=0.2):
                if message.error() is None:
                    counts.add("consumed")
    finally:
        consumer.close()


def short_lived_connection(host: str, port: int, topic: str, deprecated: bool) -> None:
    """A client that connects, says who it is (ApiVersions v3), asks for the topic's metadata and leaves."""
    from kafka.protocol.admin import DescribeConfigsRequest
    from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

    from harness.raw_client import RawConnection

    name, version = CHURN_SOFTWARE
    with RawConnection(port, host) as connection:
        hello = ApiVersionsRequest(version=3, client_software_name=name, client_software_version=version)
        connection.request(hello, correlation_id=1, client_id="bench-churn")
        metadata = MetadataRequest(
            version=12, topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False
        )
        connection.request(metadata, correlation_id=2, client_id="bench-churn")
        if deprecated:
            connection.request(
                DescribeConfigsRequest(version=0, resources=[]), correlation_id=3, client_id="bench-churn"
            )


def run_churn(
    bootstrap: str, topic: str, rate: float, deprecated_every: int, stop: threading.Event, counts: Counts
) -> None:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    pacer = Pacer(rate)
    opened = 0
    while not stop.is_set():
        for _ in range(pacer.due()):
            opened += 1
            deprecated = deprecated_every > 0 and opened % deprecated_every == 0
            try:
                short_lived_connection(host, int(port), topic, deprecated)
            except OSError as error:  # ConnectionError included
                counts.add("connection_failures", error=f"short-lived connection: {error}")
            else:
                counts.add("connections")
                counts.add("deprecated_requests", int(deprecated))
        pacer.sleep(stop, 0.05)


# -- the process -----------------------------------------------------------------------------------------------


def _thread(target: Callable[..., None], *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--load", choices=LOADS, required=True)
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--records", type=float, default=4000.0, help="mix: records a second, all producers")
    parser.add_argument("--rate", type=float, default=2000.0, help="tiny: records (= requests) a second, all producers")
    parser.add_argument("--connections", type=float, default=2.0, help="short-lived connections a second")
    parser.add_argument("--deprecated-every", type=int, default=0, help="every n-th also sends DescribeConfigs v0")
    args = parser.parse_args()

    counts = Counts()
    stop = threading.Event()
    per_producer = (args.records if args.load == "mix" else args.rate) / args.producers
    threads = [
        _thread(run_producer, args.load, args.bootstrap, args.topic, i, per_producer, stop, counts)
        for i in range(args.producers)
    ]
    if args.load == "mix":
        threads.append(_thread(run_consumer, args.bootstrap, args.topic, stop, counts))
    threads.append(
        _thread(run_churn, args.bootstrap, args.topic, args.connections, args.deprecated_every, stop, counts)
    )

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        consumed = args.load != "mix" or counts.consumed > 0
        if counts.delivered >= args.producers and consumed and counts.connections > 0:
            print("ready", flush=True)
            break
        time.sleep(0.1)
    else:
        print(json.dumps({"not_ready": counts.to_json()}), flush=True)
        stop.set()
        return 1
    sys.stdin.read()  # until the benchmark closes our stdin
    stop.set()
    deadline = time.monotonic() + 15
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    print(json.dumps(counts.to_json()), flush=True)
    return 0


# -- the benchmark's side --------------------------------------------------------------------------------------


@dataclass
class RunningLoad:
    process: subprocess.Popen[str]
    summary: dict[str, Any] = field(default_factory=dict)


@contextlib.contextmanager
def running_load(
    bootstrap: str,
    topic: str,
    load: str,
    *,
    producers: int,
    records: float,
    rate: float,
    connections: float,
    deprecated_every: int,
    env: dict[str, str],
) -> Iterator[RunningLoad]:
    """The load in its own process, ready; on leaving, its stdin is closed and its summary read (killed by its pid
    if it does not finish)."""
    command = [
        sys.executable,
        "-m",
        "bench.request_log_load",
        f"--bootstrap={bootstrap}",
        f"--topic={topic}",
        f"--load={load}",
        f"--producers={producers}",
        f"--records={records}",
        f"--rate={rate}",
        f"--connections={connections}",
        f"--deprecated-every={deprecated_every}",
    ]
    root = Path(__file__).resolve().parents[1]
    process = subprocess.Popen(
        command, cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    running = RunningLoad(process)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"the {load} load did not start: {line or f'exit code {process.wait(10)}'}")
        yield running
    finally:
        try:
            # Closing its stdin (communicate does, after writing nothing) is the load's signal to stop.
            output, _ = process.communicate(input="", timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        lines = [line for line in (output or "").splitlines() if line.startswith("{")]
        if lines:
            running.summary = json.loads(lines[-1])


if __name__ == "__main__":
    raise SystemExit(main())
