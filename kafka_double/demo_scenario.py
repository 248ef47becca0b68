"""The demo's scenario on the broker double (`scripts/demo.sh --double`; by default the demo runs Apache Kafka's own
brokers, real_kafka/demo_scenario.py), shared with the test that checks every dashboard panel and the alerts against
it: an emulated cluster in the middle of an upgrade with every kind of client the product judges.

- Three brokers (4.1.0, 4.1.0 and 3.9.0: KafkaBrokerReleaseSkew) with two listeners each.
- Real clients: kcat announcing chosen identities, among them librdkafka 1.6.0 (below the shipped 1.8.2 floor)
  and 2.0.2 (denied by `demo_policy.yaml`), confluent-kafka, kafka-python, Kafka's Java clients 4.3.0 and 3.9.0,
  and aiokafka and kafkajs, which a real broker records as `unknown`.
- A legacy client on the 3.9.0 broker: an old Java producer's requests (ApiVersions v0, so `unknown`; Metadata v1
  and Produce v2, which Kafka 4.0 no longer serves) every two seconds, so the upgrade-blocker rates show.
- A client-metrics subscription defined on the cluster (KIP-714), as `kafka-client-metrics.sh --alter` would.
- The inventory job run once over the brokers' own request logs (who runs each version), Prometheus with the
  shipped rules (their waits shortened) scraping the exporter as job `kafka-client-exporter`, and Alertmanager with
  the example configuration, whose messages the demo prints.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from demo.common import (
    CLUSTER,
    DEMO_FOR,
    DEMO_TIMINGS,
    KCAT_IDENTITIES,
    LEGACY_CLIENT_ID,
    POLICY,
    SUBSCRIPTION,
    InventoryJob,
    RunningDemo,
    installed,
    running_alerting,
    wait_exporter_ready,
)
from kafka_double.clients import ClientKind, ClientMix, ClientSpec
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.exporter_process import running_exporter, write_config
from kafka_double.raw_client import RawConnection

LISTENERS = [ListenerSpec("PLAINTEXT", network_processors=3), ListenerSpec("INTERNAL", network_processors=2)]
# A 3.9 broker among 4.1 ones: the mix an operator sees in the middle of an upgrade.
BROKERS = [
    BrokerSpec(id=1, release="4.1.0", listeners=LISTENERS),
    BrokerSpec(id=2, release="4.1.0", listeners=LISTENERS),
    BrokerSpec(id=3, release="3.9.0", listeners=LISTENERS),
]
LEGACY_BROKER = 3
PLAINTEXT_CLIENTS: list[ClientSpec] = [
    *KCAT_IDENTITIES,
    ClientKind.CONFLUENT,
    ClientKind.KAFKA_PYTHON,
    ClientKind.AIOKAFKA,
    ClientKind.JAVA,
]
INTERNAL_CLIENTS: list[ClientSpec] = [
    (ClientKind.KCAT, "inventory-sync", "3.2.0", "inventory-sync"),
    ClientKind.KAFKAJS,
    ClientKind.CONFLUENT,
    ClientKind.JAVA_3_9,
]


class LegacyClient:
    """An old Java producer (0.10-era) on one broker, played over a raw connection: ApiVersions v0 (no software
    name: the broker records `unknown`), then Metadata v1 and Produce v2 every `period` seconds on the same
    connection, reconnecting when it drops."""

    def __init__(self, port: int, period: float = 2.0) -> None:
        self._port, self._period = port, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="legacy-client", daemon=True)
        self.requests_sent = 0

    def __enter__(self) -> LegacyClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with RawConnection(self._port) as legacy:
                    legacy.request(ApiVersionsRequest(version=0), client_id=LEGACY_CLIENT_ID)
                    correlation = 1
                    while not self._stop.is_set():
                        for request in (
                            MetadataRequest(version=1, topics=[]),
                            ProduceRequest(version=2, acks=1, timeout_ms=1000, topic_data=[]),
                        ):
                            correlation += 1
                            legacy.request(request, correlation_id=correlation, client_id=LEGACY_CLIENT_ID)
                            self.requests_sent += 1
                        self._stop.wait(self._period)
            except (OSError, ConnectionError):
                self._stop.wait(1.0)


@contextlib.contextmanager
def running_demo(
    data_dir: Path,
    port: int,
    *,
    inventory: bool = True,
    prometheus: bool = True,
    prometheus_port: int | None = None,
    alertmanager_port: int | None = None,
    alert_wait: str = DEMO_FOR,
    alert_timings: Mapping[str, str] = DEMO_TIMINGS,
    interval_seconds: int = 5,
    say: Callable[[str], None] = print,
) -> Iterator[RunningDemo]:
    """Everything above running, on loopback, its files under `data_dir`; stopped in reverse order on exit."""
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    say("demo: starting 3 emulated brokers (4.1.0, 4.1.0, 3.9.0) with listeners PLAINTEXT and INTERNAL ...")
    cluster = DoubleCluster(BROKERS, request_log_dir=data_dir / "request-logs")
    with contextlib.ExitStack() as running:
        running.enter_context(cluster)
        cluster.configs.put_subscription(SUBSCRIPTION)
        plaintext = running.enter_context(ClientMix(cluster.bootstrap("PLAINTEXT"), installed(PLAINTEXT_CLIENTS, say)))
        internal = running.enter_context(ClientMix(cluster.bootstrap("INTERNAL"), installed(INTERNAL_CLIENTS, say)))
        running.enter_context(LegacyClient(cluster.broker(LEGACY_BROKER).listener_port("PLAINTEXT")))
        say(f"demo: connecting {len(plaintext) + len(internal) + 1} clients ...")
        plaintext.wait_ready()
        internal.wait_ready()
        job = None
        if inventory:
            job = InventoryJob(data_dir / "request-logs", data_dir / "inventory", data_dir / "inventory-job.log", say)
            running.callback(job.stop)
            job.start(after_seconds=3)
        config = write_config(
            data_dir / "exporter.yaml",
            CLUSTER,
            {b.id: cluster.broker(b.id).jmx_url for b in BROKERS},
            cluster.bootstrap("PLAINTEXT"),
            inventory=job.output if job else None,
            policy_file=POLICY,
            interval_seconds=interval_seconds,
            jmx_timeout_seconds=min(5, interval_seconds),
        )
        exporter = running.enter_context(running_exporter(config, port))
        wait_exporter_ready(f"http://127.0.0.1:{port}/readyz", exporter)
        alerting = None
        if prometheus:
            alerting = running.enter_context(
                running_alerting(
                    data_dir,
                    port,
                    interval_seconds,
                    prometheus_port=prometheus_port,
                    alertmanager_port=alertmanager_port,
                    wait=alert_wait,
                    timings=alert_timings,
                    say=say,
                )
            )
        brokers = [
            "demo: the broker double (emulated brokers, not Apache Kafka): "
            + ", ".join(f"broker {b.id} as {b.release}" for b in BROKERS)
            + f"; the legacy producer emulated with raw requests on broker {LEGACY_BROKER}"
        ]
        prometheus_url = alerting.prometheus_url if alerting else None
        yield RunningDemo(False, brokers, exporter, f"http://127.0.0.1:{port}", prometheus_url, job, alerting=alerting)
        say("demo: stopping Alertmanager, Prometheus, the exporter, the clients and the brokers ...")
