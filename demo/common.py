"""The demo's parts around its brokers (the scenario, demo/scenario.py, places them): the story's names and policy,
the inventory job run once in the background, a client that connects only once that job has run, the exporter's
readiness, the first live series' clock, Prometheus and Alertmanager with the shipped rules and example
configuration, and waits that Ctrl-C ends at once."""

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
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from alerts.render import every, merge, write_rules
from harness.alertmanager_process import (
    AlertReceiver,
    Notification,
    example_config,
    local_receivers,
    running_alertmanager,
    with_timings,
)
from harness.clients import ClientError, ClientKind, ClientSpec, RealClient, available_kinds, start_client
from harness.exporter_process import checkout_env, running_exporter
from harness.prometheus_process import running_prometheus
from harness.subscriptions import Subscription
from real_kafka.broker import KafkaNode, StartTiming

__all__ = [
    "CLUSTER",
    "DEMO_FOR",
    "DEMO_TIMINGS",
    "LEGACY_CLIENT_ID",
    "POLICY",
    "SUBSCRIPTION",
    "Alerting",
    "FirstSeries",
    "Interrupted",
    "InventoryJob",
    "LateClient",
    "RunningDemo",
    "installed",
    "interruptible",
    "port_free",
    "running_alerting",
    "say_line",
    "wait_exporter_ready",
]

CLUSTER = "demo"
POLICY = Path(__file__).resolve().with_name("policy.yaml")
SUBSCRIPTION = Subscription(
    "producer-telemetry",
    metrics=("org.apache.kafka.producer.",),
    interval_ms=60000,
    match=("client_software_name=apache-kafka-java",),
)
#: The clientId of the client an upgrade to 4.0 would break, which the inventory names behind the blocker.
LEGACY_CLIENT_ID = "legacy-billing-producer"
JMX_USER = "monitor"

T = TypeVar("T")

_OUTPUT = threading.Lock()


def say_line(text: str) -> None:
    """Print ``text`` and its newline in one write: the demo's threads (the roll, the inventory job, Alertmanager's
    messages, which arrive side by side) each say whole lines, never one run into another's."""
    with _OUTPUT:
        sys.stdout.write(f"{text}\n")
        sys.stdout.flush()


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM) arrived while the demo was starting."""


def interruptible(wait: Callable[[], T], stop: threading.Event | None, poll: float = 0.2) -> T:
    """``wait()``'s result; with ``stop`` (set by the signal handler), ``wait`` runs on a thread of its own and the
    caller returns Interrupted as soon as ``stop`` is set. Only waits go through here, never starts: whatever the
    abandoned thread waits on is stopped by the caller's clean-up (by pid), which ends the thread too. Raising in the
    signal handler instead could land between a process' start and the line that records its pid."""
    if stop is None:
        return wait()
    if stop.is_set():
        raise Interrupted
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(wait())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, name="demo-wait", daemon=True).start()
    while not wait_futures([future], timeout=poll).done:
        if stop.is_set():
            raise Interrupted
    return future.result()


def port_free(port: int) -> bool:
    try:
        socket.create_server(("127.0.0.1", port)).close()
    except OSError:
        return False
    return True


class DemoExporter:
    """The exporter the demo runs on ``port``, in a session of its own (a terminal's Ctrl-C reaches the demo only,
    which stops it in turn). ``start`` again with another configuration restarts it on the same port, as an operator
    restarts the daemon after adding nodes to its configuration (--migration's controller); ``poll`` is None while it
    runs and while it restarts."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._lock = threading.Lock()
        self._running = contextlib.ExitStack()
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, config: Path) -> None:
        with self._lock:
            self._running.close()
            self._running = contextlib.ExitStack()
            self._process = self._running.enter_context(running_exporter(config, self.port, start_new_session=True))

    def poll(self) -> int | None:
        with self._lock:
            return None if self._process is None else self._process.poll()

    def stop(self) -> None:
        with self._lock:
            self._running.close()


def node_line(node: KafkaNode, roles: str, timing: StartTiming | None) -> str:
    """The summary's line for a node: its release, roles, listeners, JMX URL, pid and logs."""
    kind = "broker" if node.roles.broker else "controller"
    listeners = ", ".join(
        f"{name} 127.0.0.1:{port}"
        for name, port in (("PLAINTEXT", node.ports.plaintext), ("CONTROLLER", node.ports.controller))
        if port is not None
    )
    ready = f", ready {timing.wall_seconds:.1f} s after launch" if timing else ""
    return (
        f"demo:   {kind} {node.node_id}: Apache Kafka {node.release}, {roles}; {listeners}; JMX {node.jmx_url} "
        f"(user {JMX_USER}); pid {node.pid}{ready}; logs in {node.logs.directory}"
    )


def wait_exporter_ready(url: str, exporter: DemoExporter, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (code := exporter.poll()) is not None:
            raise RuntimeError(f"the exporter exited with code {code}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"the exporter was not ready at {url} within {timeout:.0f} s")


def installed(specs: list[ClientSpec], say: Callable[[str], None]) -> list[ClientSpec]:
    """The specs whose client is installed here; each scenario places its legacy clients itself."""
    kinds = set(available_kinds(legacy=True))
    keep = [s for s in specs if (s[0] if isinstance(s, tuple) else s) in kinds]
    for spec in specs:
        if spec not in keep:
            say(f"demo: skipping {spec}: not installed here (run scripts/setup.sh)")
    return keep


class FirstSeries:
    """Polls the exporter's /metrics until it serves a ``kafka_client_connections`` series, and says how long after
    the command (``started_at``, a time.time()) that was: the number a newcomer waits for."""

    def __init__(self, metrics_url: str, started_at: float, say: Callable[[str], None]) -> None:
        self._url, self._started_at, self._say = metrics_url, started_at, say
        self.seconds: float | None = None
        self.seen = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="first-series", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError), urllib.request.urlopen(self._url, timeout=2) as response:
                if any(line.startswith(b"kafka_client_connections{") for line in response):
                    self.seconds = time.time() - self._started_at
                    self.seen.set()
                    self._say(f"demo: first live series on {self._url} {self.seconds:.1f} s after the command")
                    return
            self._stop.wait(0.25)


#: The kcat identities of the demo's story.
KCAT_IDENTITIES: list[ClientSpec] = [
    (ClientKind.KCAT, "billing-service", "1.4.2", "billing-ledger"),
    (ClientKind.KCAT, "legacy-etl", "0.9.0-SNAPSHOT", "etl-nightly"),
    # What an old librdkafka sends (KIP-511 since librdkafka 1.4): below the shipped floor 1.8.2.
    (ClientKind.KCAT, "librdkafka", "1.6.0", "orders-ingest"),
    # Denied by demo_policy.yaml.
    (ClientKind.KCAT, "librdkafka", "2.0.2", "payments-audit"),
]


class InventoryJob:
    """`kafka-client-exporter inventory --incremental` over the brokers' request logs (``logs``, a path or a glob),
    once, in the background.

    The exporter starts meanwhile and picks the publication up on its next cycle, so the live series show at once
    and who runs them about half a minute later. Its output goes to a log file; a failed run leaves the live series
    as they are (the status page says why there is no inventory).
    """

    def __init__(self, logs: str, output: Path, log_file: Path, say: Callable[[str], None]) -> None:
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
            # A run over the demo's few MB of logs ends before C2's compilations pay off: C1 alone with the serial
            # collector halves its CPU, and who runs each version shows sooner.
            "--conf",
            "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        ]
        self.returncode: int | None = None
        self.done = threading.Event()
        self._process: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._run, name="inventory-job", daemon=True)
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # a stop never misses a job starting at the same moment
        self._ready: Callable[[], bool] | None = None
        self._ready_timeout = 0.0

    def start(self, ready: Callable[[], bool] | None = None, timeout: float = 60.0) -> None:
        """Run the job once ``ready()`` holds (at once without it), or after ``timeout`` seconds anyway, saying so:
        the job reads the logs as they are when it starts."""
        self._ready, self._ready_timeout = ready, timeout
        self._thread.start()

    def _run(self) -> None:
        try:
            self._run_once()
        finally:
            self.done.set()

    def _run_once(self) -> None:
        # The clients' first requests must be in the logs before the job reads them.
        if self._ready is not None:
            deadline = time.monotonic() + self._ready_timeout
            while not self._ready():
                if time.monotonic() > deadline:
                    self._say(
                        f"demo: the request logs do not name every client after {self._ready_timeout:.0f} s; the "
                        "inventory job runs on what they hold"
                    )
                    break
                if self._stopping.wait(0.2):
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


class LateClient:
    """A client that first connects once the inventory job has run (at once without a job): its version is live but
    in no publication yet, which the status page and the dashboard's "Connected versions not in the inventory" show
    until the job's next run."""

    def __init__(
        self,
        kind: ClientKind,
        bootstrap: str,
        client_id: str,
        job: InventoryJob | None,
        say: Callable[[str], None],
    ) -> None:
        self.kind, self._bootstrap, self.client_id, self._job, self._say = kind, bootstrap, client_id, job, say
        self.client: RealClient | None = None
        self.connected = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # a stop never misses a client starting at the same moment
        self._thread = threading.Thread(target=self._run, name="late-client", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        if self._job is not None:
            while not self._job.done.wait(0.5):
                if self._stopping.is_set():
                    return
            if self._job.returncode != 0:
                return
        with self._lock:
            if self._stopping.is_set():
                return
            try:
                self.client = start_client(self.kind, self._bootstrap, client_id=self.client_id)
            except (ClientError, OSError) as exc:
                self._say(f"demo: the late client {self.kind.value} did not start: {exc}")
                return
        try:
            self.client.wait_ready(60)
        except ClientError as exc:
            if not self._stopping.is_set():
                self._say(f"demo: the late client {self.kind.value} did not connect: {exc}")
            return
        self.connected.set()
        identity = self.client.expected
        if self._job is not None:
            self._say(
                f"demo: {identity.software_name} {identity.software_version} ({self.client_id}) connected after the "
                "inventory job ran: the status page and the dashboards list it as not in the inventory"
            )

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
        if self.client is not None:
            self.client.close()


#: The alerts the demo is built to show (alerts/config.yaml's names), waiting a minute where they ship waiting 5 to
#: 30 minutes (12 hours for the release skew), and resolving a minute after their clients leave instead of an hour.
#: The exporter's own alerts keep theirs: the rolling upgrade's restarts must not fire them.
DEMO_ALERTS = (
    "KafkaClientBelowMinimumVersion",
    "KafkaClientDeniedVersion",
    "KafkaClientNotAllowed",
    "KafkaClientUnknownSoftware",
    "KafkaClientDeprecatedRequests",
    "KafkaBrokerReleaseSkew",
)
DEMO_FOR = "1m"
#: Alertmanager's waits in the demo: a message within seconds of an alert firing, and again a minute later with
#: what changed (the inventory's names arrive about a minute in); the example waits a minute, and a day to remind.
DEMO_TIMINGS = {"group_wait": "10s", "group_interval": "30s", "repeat_interval": "1m"}


@dataclass
class Alerting:
    """Prometheus and Alertmanager as the demo runs them, and the receiver that gets Alertmanager's messages."""

    prometheus_url: str
    alertmanager_url: str
    receiver: AlertReceiver
    #: What the summary says about them: the shortened waits.
    notes: list[str]


def demo_alert_settings(skew: bool = True, wait: str = DEMO_FOR) -> dict[str, dict[str, object]]:
    """alerts/config.yaml overrides for the demo: DEMO_ALERTS' for and keepFiringFor set to ``wait``; ``skew`` False
    leaves KafkaBrokerReleaseSkew waiting its 12 hours (a rolling upgrade mixes releases on purpose)."""
    alerts = [name for name in DEMO_ALERTS if skew or name != "KafkaBrokerReleaseSkew"]
    return merge(
        {name: {"for": wait} for name in alerts},
        {name: values for name, values in every("keepFiringFor", wait).items() if name in alerts},
    )


class MessagePrinter:
    """Says each Slack message Alertmanager sends that differs from the last one of its group (a reminder that says
    the same is not worth a screenful)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._last: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, notification: Notification) -> None:
        if notification.kind != "slack":
            return
        title, text = notification.slack_title, notification.slack_text
        group = title.split("] ", 1)[-1]
        with self._lock:
            if self._last.get(group) == text:
                return
            self._last[group] = text
        channel = notification.body.get("channel", "")
        lines = [f"        {line}" for line in text.splitlines() if line.strip()]
        # One say for the whole message: Alertmanager sends a group's messages side by side.
        self._say("\n".join([f"demo: Alertmanager -> {notification.receiver} (Slack {channel}): {title}", *lines]))


@contextlib.contextmanager
def running_alerting(
    directory: Path,
    exporter_port: int,
    interval_seconds: int,
    *,
    prometheus_port: int | None = None,
    alertmanager_port: int | None = None,
    skew: bool = True,
    say: Callable[[str], None] = say_line,
    wait: str = DEMO_FOR,
    timings: Mapping[str, str] = DEMO_TIMINGS,
) -> Iterator[Alerting]:
    """Alertmanager with the example configuration (alerts/alertmanager.example.yaml), its Slack and PagerDuty
    receivers replaced by a local one that says each new message, and Prometheus scraping the exporter with the
    shipped rules, their waits shortened (demo_alert_settings), sending it the alerts; files under ``directory``.
    ``wait`` and ``timings`` (Alertmanager's): the tests wait less than people watching."""
    rules = write_rules(directory / "prometheus" / "rules.yaml", demo_alert_settings(skew, wait))
    with contextlib.ExitStack() as running:
        receiver = running.enter_context(AlertReceiver(MessagePrinter(say)))
        config = with_timings(local_receivers(example_config(), receiver.url), **timings)
        alertmanager = running.enter_context(
            running_alertmanager(directory / "alertmanager", config, alertmanager_port)
        )
        prometheus = running.enter_context(
            running_prometheus(
                directory / "prometheus",
                exporter_port,
                rules,
                interval=f"{interval_seconds}s",
                port=prometheus_port,
                alertmanager=alertmanager.removeprefix("http://"),
            )
        )
        shortened = ", ".join(name for name in DEMO_ALERTS if skew or name != "KafkaBrokerReleaseSkew")
        notes = [
            f"demo: the alert rules wait {wait} here, not their shipped 5 to 30 minutes (12 hours for the release "
            f"skew; alerts/config.yaml), and resolve {wait} after their clients leave: {shortened}",
            f"demo: Alertmanager at {alertmanager} with alerts/alertmanager.example.yaml (its waits shortened: "
            f"{', '.join(f'{key} {value}' for key, value in timings.items())}); its Slack and PagerDuty "
            "messages come here instead, each new one printed below",
        ]
        yield Alerting(prometheus, alertmanager, receiver, notes)


@dataclass
class RunningDemo:
    """The started scenario."""

    #: What the summary says about the brokers: releases, roles, addresses.
    brokers: list[str]
    exporter: DemoExporter
    exporter_url: str
    prometheus_url: str | None
    inventory: InventoryJob | None
    first_series: FirstSeries | None = None
    late_client: LateClient | None = None
    #: More lines for the summary, in the scenario's words (--rolling-upgrade, --migration: when the roll starts).
    notes: list[str] = field(default_factory=list)
    #: Prometheus, Alertmanager and what reached Alertmanager's receivers (None with --no-prometheus).
    alerting: Alerting | None = None
