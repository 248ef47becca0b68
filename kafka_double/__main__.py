"""``python -m kafka_double``: run a double cluster in the foreground until SIGINT/SIGTERM.

From the repository root (or with it on PYTHONPATH): the double is not installed with the exporter.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading

from .cluster import BrokerSpec, DoubleCluster, ListenerSpec, MetricsEndpointConfig
from .metrics_endpoint import PRESETS
from .releases import METADATA_MODES, known_releases


def _topics(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        name, _, parts = item.partition(":")
        out[name] = int(parts or 3)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafka_double", description=__doc__)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--release", default="4.1.0", choices=known_releases())
    p.add_argument(
        "--metadata-mode",
        choices=METADATA_MODES,
        default=None,
        help="2.8-3.9: ZooKeeper-mode or KRaft brokers (default: zookeeper before 3.3.0, kraft from 3.3.0)",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--topics", type=_topics, default={"demo": 3}, help="name:partitions,...")
    p.add_argument("--network-processors", type=int, default=3, help="per PLAINTEXT listener")
    p.add_argument(
        "--metrics-endpoints",
        choices=PRESETS,
        default=None,
        help="each broker also serves its MBeans on a Prometheus endpoint, as this rule set renders them",
    )
    p.add_argument("--log-level", default="WARNING")
    args = p.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    specs = [
        BrokerSpec(
            i,
            release=args.release,
            metadata_mode=args.metadata_mode,
            listeners=[
                ListenerSpec("PLAINTEXT", "PLAINTEXT", 0, args.network_processors),
                ListenerSpec("INTERNAL", "PLAINTEXT", 0, 2),
            ],
        )
        for i in range(1, args.brokers + 1)
    ]
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    endpoint = MetricsEndpointConfig(args.metrics_endpoints) if args.metrics_endpoints else None
    try:
        cluster = DoubleCluster(specs, host=args.host, topics=args.topics, metrics_endpoint=endpoint)
    except ValueError as exc:
        p.error(str(exc))
    cluster.start()
    try:
        print(
            json.dumps(
                {
                    "bootstrap_servers": cluster.bootstrap("PLAINTEXT"),
                    "internal_bootstrap_servers": cluster.bootstrap("INTERNAL"),
                    "release": args.release,
                    "metadata_mode": cluster.brokers[0].release.metadata_mode,
                    "brokers": [
                        {
                            "id": b.broker_id,
                            "jmx_url": b.jmx_url,
                            "jmx_port": b.jmx_port,
                            **({"metrics_url": b.metrics_url} if b.metrics_url else {}),
                            "listeners": {x.name: x.port for x in b.spec.listeners},
                        }
                        for b in cluster.brokers
                    ],
                }
            ),
            flush=True,
        )
        while not stop.wait(0.5):
            pass
    finally:
        cluster.stop()  # closes listeners, connections and the MBeanHost JVM
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
