"""The README's main job: the demo scenario with the exporter watching it and Prometheus evaluating the shipped
alerts, which Alertmanager (the example configuration) turns into the messages it prints, on Apache Kafka's own
brokers (demo/scenario.py): one KRaft cluster in the middle of a rolling upgrade from 3.9.2 to 4.4.0, or with
--rolling-upgrade a 3.9.2 cluster rolled to 4.4.0 while it runs (real_kafka/rolling_upgrade.py does the roll), or with
--migration a 3.9.2 ZooKeeper-mode cluster migrated to KRaft and then rolled to 4.4.0 (demo/migration.py).

Run through `bash scripts/demo.sh` (which installs what is missing) or `python -m demo` from the repository root
(neither the demo nor the brokers' launcher is installed with the exporter).
Ctrl-C (or SIGTERM) stops Alertmanager, Prometheus, the inventory job, the exporter, the clients and the brokers,
each by its pid; nothing is left running.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from demo.common import Interrupted, RunningDemo, port_free, say_line
from demo.scenario import running_demo
from harness.ports import free_port

#: Set by scripts/demo.sh before its set-up step (seconds since the epoch): the clock of the first live series
#: starts when the command does, not when Python does.
STARTED_ENV = "KCE_DEMO_STARTED"


def _started_at() -> float:
    try:
        return float(os.environ[STARTED_ENV])
    except (KeyError, ValueError):
        return time.time()


def tcp_port(text: str) -> int:
    """A port argument: 0 to 65535 (0 or a taken one: a free one is picked)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port: give 0 to 65535 (0: any free port)")
    return port


def chosen_port(wanted: int) -> int:
    """``wanted``, or a free port when it is 0 or taken: the port the URLs printed and Prometheus' targets name."""
    return wanted if wanted and port_free(wanted) else free_port()


def main(argv: list[str] | None = None) -> int:
    started_at = _started_at()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    scenarios = parser.add_mutually_exclusive_group()
    scenarios.add_argument(
        "--rolling-upgrade",
        action="store_true",
        help="start a 3.9.2 cluster of three nodes and roll it to 4.4.0 while you watch (each step is printed), then "
        "keep it running on 4.4.0",
    )
    scenarios.add_argument(
        "--migration",
        action="store_true",
        help="start a 3.9.2 cluster of three brokers in ZooKeeper mode, migrate it to KRaft while you watch (a "
        "dedicated controller, each broker rolled into migration mode then to KRaft, the controller finalized), then "
        "roll it to 4.4.0; each step is printed",
    )
    parser.add_argument("--port", type=tcp_port, default=9784, help="exporter port (a free one if taken or 0)")
    parser.add_argument(
        "--prometheus-port", type=tcp_port, default=9090, help="Prometheus port (a free one if taken or 0)"
    )
    parser.add_argument(
        "--alertmanager-port", type=tcp_port, default=9093, help="Alertmanager port (a free one if taken or 0)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path("demo-data"),
        help="where the exporter config, the brokers (their storage and logs), the inventory and Prometheus' data go; "
        "the real brokers' kafka/ and the inventory/ in it are new at each run",
    )
    parser.add_argument(
        "--no-inventory",
        action="store_true",
        help="do not run the inventory job (Spark) over the brokers' request logs",
    )
    parser.add_argument("--no-prometheus", action="store_true", help="do not start Prometheus (nor Alertmanager)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    port, prometheus_port, alertmanager_port = map(
        chosen_port, (args.port, args.prometheus_port, args.alertmanager_port)
    )
    inventory, prometheus = not args.no_inventory, not args.no_prometheus
    scenario = running_demo(
        args.data_dir,
        port,
        inventory=inventory,
        prometheus=prometheus,
        prometheus_port=prometheus_port,
        alertmanager_port=alertmanager_port,
        stop=stop,
        started_at=started_at,
        rolling_upgrade=args.rolling_upgrade,
        migration=args.migration,
    )
    try:
        with scenario as demo:
            _summary(demo, args.data_dir, started_at)
            while not stop.is_set() and demo.exporter.poll() is None:
                stop.wait(0.5)
    except Interrupted:
        say_line("demo: interrupted while starting; everything it had started is stopped")
        return 130
    say_line("demo: stopped")
    return 0


def _summary(demo: RunningDemo, data_dir: Path, started_at: float) -> None:
    say_line("")
    for line in demo.brokers:
        say_line(line)
    say_line(f"demo: the exporter is live at {demo.exporter_url}/ (metrics at /metrics, JSON at /api/clients)")
    say_line(f"demo: try  curl -s {demo.exporter_url}/metrics | grep ^kafka_client_connections")
    if demo.alerting:
        say_line(
            f"demo: Prometheus at {demo.alerting.prometheus_url}/alerts with the shipped rules: within a minute the "
            "client-version and upgrade-blocker alerts are pending, a minute later firing, and Alertmanager's "
            "messages about them are printed here"
        )
        for note in demo.alerting.notes:
            say_line(note)
    if demo.inventory:
        say_line(
            "demo: the inventory job (Spark, about half a minute) is reading the brokers' request logs; then "
            "clientIds, principals and hosts show under each version on / and as kafka_client_identity_info "
            f"(log: {demo.inventory.log_file})"
        )
    if demo.late_client is not None and demo.inventory:
        say_line(
            f"demo: once it has run, one more client ({demo.late_client.kind.value}, clientId "
            f"{demo.late_client.client_id}) connects: live, but not in the inventory until the job's next run"
        )
    for note in demo.notes:
        say_line(note)
    say_line(
        f"demo: started in {time.time() - started_at:.1f} s; files in {data_dir}; press Ctrl-C to stop everything\n"
    )


if __name__ == "__main__":
    sys.exit(main())
