"""The README's main job: a broker double with real clients connected, and the exporter watching it.

Run through `bash scripts/demo.sh` (which installs what is missing) or `python -m kafka_double.demo` from the
repository root (the double is not installed with the exporter).
Ctrl-C (or SIGTERM) stops the exporter, the clients, the brokers and the JVM; nothing is left running.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from kafka_double.clients import ClientKind, ClientMix, available_kinds
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.exporter_process import checkout_env, running_exporter, write_config
from kafka_double.mbean_host import free_port

LISTENERS = [ListenerSpec("PLAINTEXT", network_processors=3), ListenerSpec("INTERNAL", network_processors=2)]
# A 3.9 broker among 4.1 ones: the mix an operator sees in the middle of an upgrade.
BROKERS = [
    BrokerSpec(id=1, release="4.1.0", listeners=LISTENERS),
    BrokerSpec(id=2, release="4.1.0", listeners=LISTENERS),
    BrokerSpec(id=3, release="3.9.0", listeners=LISTENERS),
]
PLAINTEXT_CLIENTS: list[ClientKind | tuple[ClientKind, str, str]] = [
    (ClientKind.KCAT, "billing-service", "1.4.2"),
    (ClientKind.KCAT, "legacy-etl", "0.9.0-SNAPSHOT"),
    ClientKind.CONFLUENT,
    ClientKind.KAFKA_PYTHON,
    ClientKind.AIOKAFKA,
    ClientKind.JAVA,
]
INTERNAL_CLIENTS = [
    (ClientKind.KCAT, "inventory-sync", "3.2.0"),
    ClientKind.KAFKAJS,
    ClientKind.CONFLUENT,
    ClientKind.JAVA_3_9,
]


def _installed(specs: list) -> list:
    kinds = set(available_kinds())
    keep = [s for s in specs if (s[0] if isinstance(s, tuple) else s) in kinds]
    for spec in specs:
        if spec not in keep:
            print(f"demo: skipping {spec}: not installed here (run scripts/setup.sh)", file=sys.stderr)
    return keep


def _wait_ready(url: str, exporter: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exporter.poll() is not None:
            raise SystemExit(f"demo: the exporter exited with code {exporter.returncode}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.3)
    raise SystemExit(f"demo: the exporter was not ready at {url} within {timeout:.0f} s")


class InventoryJob:
    """`kafka-client-exporter inventory --incremental` over the brokers' request logs, once, in the background.

    The exporter starts meanwhile and picks the publication up on its next cycle, so the live series show at once
    and who runs them about half a minute later. Its output goes to a log file; a failed run leaves the live series
    as they are (the status page says why there is no inventory).
    """

    def __init__(self, logs: Path, output: Path, log_file: Path) -> None:
        self.output, self.log_file = output, log_file
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
        self._process: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._run, name="inventory-job", daemon=True)
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # a stop never misses a job starting at the same moment

    def start(self, after_seconds: float) -> None:
        self._after = after_seconds
        self._thread.start()

    def _run(self) -> None:
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
            code = self._process.wait()
        if self._stopping.is_set():
            return
        if code == 0:
            print(
                f"demo: the inventory job read the request logs: who runs each live version is on the status page "
                f"(its output: {self.output})"
            )
        else:
            lines = self.log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            print(
                f"demo: the inventory job failed (exit {code}): {lines[-1] if lines else 'no output'}; see "
                f"{self.log_file}. The live series go on without it.",
                file=sys.stderr,
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


def _port_free(port: int) -> bool:
    try:
        socket.create_server(("127.0.0.1", port)).close()
    except OSError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=9784, help="exporter port (a free one if taken)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path("demo-data"),
        help="where the exporter config and the brokers' request logs go",
    )
    parser.add_argument(
        "--no-inventory",
        action="store_true",
        help="do not run the inventory job (Spark) over the brokers' request logs",
    )
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    args.data_dir.mkdir(parents=True, exist_ok=True)
    port = args.port if _port_free(args.port) else free_port()

    print("demo: starting 3 emulated brokers (4.1.0, 4.1.0, 3.9.0) with listeners PLAINTEXT and INTERNAL ...")
    cluster = DoubleCluster(BROKERS, request_log_dir=args.data_dir / "request-logs")
    with contextlib.ExitStack() as running:
        running.enter_context(cluster)
        plaintext = running.enter_context(ClientMix(cluster.bootstrap("PLAINTEXT"), _installed(PLAINTEXT_CLIENTS)))
        internal = running.enter_context(ClientMix(cluster.bootstrap("INTERNAL"), _installed(INTERNAL_CLIENTS)))
        print(f"demo: connecting {len(plaintext) + len(internal)} real clients ...")
        plaintext.wait_ready()
        internal.wait_ready()
        brokers = {b.id: cluster.broker(b.id).jmx_url for b in BROKERS}
        inventory = None
        if not args.no_inventory:
            inventory = InventoryJob(
                args.data_dir / "request-logs", args.data_dir / "inventory", args.data_dir / "inventory-job.log"
            )
            running.callback(inventory.stop)
            inventory.start(after_seconds=3)
        config = write_config(
            args.data_dir / "exporter.yaml",
            "demo",
            brokers,
            cluster.bootstrap("PLAINTEXT"),
            inventory=inventory.output.resolve() if inventory else None,
            interval_seconds=5,
            jmx_timeout_seconds=5,
        )
        exporter = running.enter_context(running_exporter(config, port))
        _wait_ready(f"http://127.0.0.1:{port}/readyz", exporter)
        print(f"\ndemo: the exporter is live at http://127.0.0.1:{port}/ (metrics at /metrics)")
        print(f"demo: try  curl -s 127.0.0.1:{port}/metrics | grep ^kafka_client_connections")
        print(f"demo: request logs in {args.data_dir / 'request-logs'}; press Ctrl-C to stop everything")
        if inventory:
            print(
                "demo: the inventory job (Spark, about half a minute) is reading them; then clientIds, principals "
                f"and hosts show under each version on / and as kafka_client_identity_info (log: {inventory.log_file})"
            )
        print()
        while not stop.is_set() and exporter.poll() is None:
            stop.wait(0.5)
        print("demo: stopping the exporter, the clients and the brokers ...")
    print("demo: stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
