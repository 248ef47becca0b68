"""The demo's scenario, shared by `scripts/demo.sh` and the test that checks every dashboard panel and the alerts
against it: a cluster in the middle of an upgrade with every kind of client the product judges.

- Three brokers (4.1.0, 4.1.0 and 3.9.0: KafkaBrokerReleaseSkew) with two listeners each.
- Real clients: kcat announcing chosen identities, among them librdkafka 1.6.0 (below the shipped 1.8.2 floor)
  and 2.0.2 (denied by `demo_policy.yaml`), confluent-kafka, kafka-python, Kafka's Java clients 4.3.0 and 3.9.0,
  and aiokafka and kafkajs, which a real broker records as `unknown`.
- A legacy client on the 3.9.0 broker: an old Java producer's requests (ApiVersions v0, so `unknown`; Metadata v1
  and Produce v2, which Kafka 4.0 no longer serves) every two seconds, so the upgrade-blocker rates show.
- A client-metrics subscription defined on the cluster (KIP-714), as `kafka-client-metrics.sh --alter` would.
- The inventory job run once over the brokers' own request logs (who runs each version), and Prometheus with the
  shipped rules scraping the exporter as job `kafka-client-exporter`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from kafka_double.client_metrics import Subscription
from kafka_double.clients import ClientKind, ClientMix, ClientSpec, available_kinds
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.exporter_process import REPO_ROOT, checkout_env, running_exporter, write_config
from kafka_double.prometheus_process import running_prometheus
from kafka_double.raw_client import RawConnection

CLUSTER = "demo"
LISTENERS = [ListenerSpec("PLAINTEXT", network_processors=3), ListenerSpec("INTERNAL", network_processors=2)]
# A 3.9 broker among 4.1 ones: the mix an operator sees in the middle of an upgrade.
BROKERS = [
    BrokerSpec(id=1, release="4.1.0", listeners=LISTENERS),
    BrokerSpec(id=2, release="4.1.0", listeners=LISTENERS),
    BrokerSpec(id=3, release="3.9.0", listeners=LISTENERS),
]
LEGACY_BROKER = 3
PLAINTEXT_CLIENTS: list[ClientSpec] = [
    (ClientKind.KCAT, "billing-service", "1.4.2", "billing-ledger"),
    (ClientKind.KCAT, "legacy-etl", "0.9.0-SNAPSHOT", "etl-nightly"),
    # What an old librdkafka sends (KIP-511 since librdkafka 1.4): below the shipped floor 1.8.2.
    (ClientKind.KCAT, "librdkafka", "1.6.0", "orders-ingest"),
    # Denied by demo_policy.yaml.
    (ClientKind.KCAT, "librdkafka", "2.0.2", "payments-audit"),
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
POLICY = Path(__file__).with_name("demo_policy.yaml")
RULES = REPO_ROOT / "alerts" / "kafka-client-exporter.rules.yaml"
SUBSCRIPTION = Subscription(
    "producer-telemetry",
    metrics=("org.apache.kafka.producer.",),
    interval_ms=60000,
    match=("client_software_name=apache-kafka-java",),
)
LEGACY_CLIENT_ID = "legacy-billing-producer"


def installed(specs: list[ClientSpec], say: Callable[[str], None]) -> list[ClientSpec]:
    kinds = set(available_kinds())
    keep = [s for s in specs if (s[0] if isinstance(s, tuple) else s) in kinds]
    for spec in specs:
        if spec not in keep:
            say(f"demo: skipping {spec}: not installed here (run scripts/setup.sh)")
    return keep


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


class InventoryJob:
    """`kafka-client-exporter inventory --incremental` over the brokers' request logs, once, in the background.

    The exporter starts meanwhile and picks the publication up on its next cycle, so the live series show at once
    and who runs them about half a minute later. Its output goes to a log file; a failed run leaves the live series
    as they are (the status page says why there is no inventory).
    """

    def __init__(self, logs: Path, output: Path, log_file: Path, say: Callable[[str], None]) -> None:
        self.output, self.log_file, self._say = output, log_file, say
        self.command = [
            sys.executable,
            "-m",
            "exporter",
            "inventory",
            "--incremental",
            "--input",
            str(logs),
            "--output",
            str(output),
            "--master",
            "local[2]",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.ui.enabled=false",
        ]
        self.returncode: int | None = None
        self.done = threading.Event()
        self._process: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._run, name="inventory-job", daemon=True)
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # a stop never misses a job starting at the same moment
        self._after = 0.0

    def start(self, after_seconds: float) -> None:
        self._after = after_seconds
        self._thread.start()

    def _run(self) -> None:
        try:
            self._run_once()
        finally:
            self.done.set()

    def _run_once(self) -> None:
        # The clients' first requests must be in the logs before the job reads them.
        if self._stopping.wait(self._after):
            return
        # Spark binds to the machine's other address unless told otherwise.
        env = checkout_env(dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
        with self.log_file.open("w", encoding="utf-8") as log:
            with self._lock:
                if self._stopping.is_set():
                    return
                self._process = subprocess.Popen(
                    self.command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )
            self.returncode = self._process.wait()
        if self._stopping.is_set():
            return
        if self.returncode == 0:
            self._say(
                "demo: the inventory job read the request logs: who runs each live version is on the status page "
                f"(its output: {self.output})"
            )
        else:
            lines = self.log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            self._say(
                f"demo: the inventory job failed (exit {self.returncode}): {lines[-1] if lines else 'no output'}; "
                f"see {self.log_file}. The live series go on without it."
            )

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
        if self._process is not None and self._process.poll() is None:
            # Its own session: the Spark JVM goes with the Python driver.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()


@dataclass
class RunningDemo:
    cluster: DoubleCluster
    exporter: subprocess.Popen
    exporter_url: str
    prometheus_url: str | None
    inventory: InventoryJob | None
    legacy: LegacyClient


def port_free(port: int) -> bool:
    try:
        socket.create_server(("127.0.0.1", port)).close()
    except OSError:
        return False
    return True


def _wait_ready(url: str, exporter: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exporter.poll() is not None:
            raise RuntimeError(f"the exporter exited with code {exporter.returncode}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"the exporter was not ready at {url} within {timeout:.0f} s")


@contextlib.contextmanager
def running_demo(
    data_dir: Path,
    port: int,
    *,
    inventory: bool = True,
    prometheus: bool = True,
    prometheus_port: int | None = None,
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
        legacy = running.enter_context(LegacyClient(cluster.broker(LEGACY_BROKER).listener_port("PLAINTEXT")))
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
        _wait_ready(f"http://127.0.0.1:{port}/readyz", exporter)
        prometheus_url = None
        if prometheus:
            prometheus_url = running.enter_context(
                running_prometheus(
                    data_dir / "prometheus", port, RULES, interval=f"{interval_seconds}s", port=prometheus_port
                )
            )
        yield RunningDemo(cluster, exporter, f"http://127.0.0.1:{port}", prometheus_url, job, legacy)
        say("demo: stopping Prometheus, the exporter, the clients and the brokers ...")
