"""The README's main job: the demo scenario (`kafka_double/demo_scenario.py`: a broker double mid-upgrade, real
clients among which some the policy flags, a legacy client an upgrade would break, the inventory job) with the
exporter watching it and Prometheus evaluating the shipped alerts.

Run through `bash scripts/demo.sh` (which installs what is missing) or `python -m kafka_double.demo` from the
repository root (the double is not installed with the exporter).
Ctrl-C (or SIGTERM) stops Prometheus, the exporter, the clients, the brokers and the JVM; nothing is left running.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from kafka_double.demo_scenario import port_free, running_demo
from kafka_double.mbean_host import free_port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9784, help="exporter port (a free one if taken)")
    parser.add_argument("--prometheus-port", type=int, default=9090, help="Prometheus port (a free one if taken)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path("demo-data"),
        help="where the exporter config, the brokers' request logs, the inventory and Prometheus' data go",
    )
    parser.add_argument(
        "--no-inventory",
        action="store_true",
        help="do not run the inventory job (Spark) over the brokers' request logs",
    )
    parser.add_argument("--no-prometheus", action="store_true", help="do not start Prometheus")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    port = args.port if port_free(args.port) else free_port()
    prometheus_port = args.prometheus_port if port_free(args.prometheus_port) else free_port()
    with running_demo(
        args.data_dir,
        port,
        inventory=not args.no_inventory,
        prometheus=not args.no_prometheus,
        prometheus_port=prometheus_port,
    ) as demo:
        print(f"\ndemo: the exporter is live at {demo.exporter_url}/ (metrics at /metrics, JSON at /api/clients)")
        print(f"demo: try  curl -s {demo.exporter_url}/metrics | grep ^kafka_client_connections")
        if demo.prometheus_url:
            print(
                f"demo: Prometheus at {demo.prometheus_url}/alerts with the shipped rules: within a minute or two "
                "the client-version and upgrade-blocker alerts are pending (they fire after their `for`)"
            )
        if demo.inventory:
            print(
                "demo: the inventory job (Spark, about half a minute) is reading the brokers' request logs; then "
                "clientIds, principals and hosts show under each version on / and as kafka_client_identity_info "
                f"(log: {demo.inventory.log_file})"
            )
        print(f"demo: files in {args.data_dir}; press Ctrl-C to stop everything\n")
        while not stop.is_set() and demo.exporter.poll() is None:
            stop.wait(0.5)
    print("demo: stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
