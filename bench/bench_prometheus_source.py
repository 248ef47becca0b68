"""Cycle cost of the `prometheus` source against N emulated brokers serving their client gauges the way a published
rule set does (the double's per-broker endpoints, kafka_double/metrics_endpoint.py, which read the MBeans that Kafka's
Selector makes in the double's MBean host at each scrape).

Each broker gets `--clients` channels with distinct software names spread over its processors (registered in the
double's registry directly, as its network layer does after ApiVersions and a TLS handshake, so 500 brokers do not need
10,000 client sockets), plus the lingering zero-valued `unknown` gauges. Reported per cycle: wall
time, the CPU of the exporter's own thread (the collection loop; the double runs on another thread of this process)
and the CPU of the whole process (exporter + the double serving N endpoints).

    .venv/bin/python bench/bench_prometheus_source.py [--brokers 500] [--clients 20] [--preset strimzi] [--cycles 3]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from pathlib import Path

# The double is not installed (the wheel ships exporter/ only): import it, and this exporter, from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec, MetricsEndpointConfig
from kafka_double.metrics_endpoint import PRESETS
from kafka_double.registry import ClientInformation

TARGET_WALL_500 = 2.0  # issue 14: the prometheus source, 500 brokers, per cycle


def thread_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", type=int, default=500)
    parser.add_argument("--clients", type=int, default=20, help="channels (distinct software names) per broker")
    parser.add_argument("--preset", choices=PRESETS, default="strimzi")
    parser.add_argument("--cycles", type=int, default=3)
    args = parser.parse_args()

    listeners = [ListenerSpec("PLAINTEXT", network_processors=3)]
    specs = [BrokerSpec(i, listeners=listeners) for i in range(1, args.brokers + 1)]
    double = DoubleCluster(specs, metrics_endpoint=MetricsEndpointConfig(args.preset))
    double.start(timeout=300)
    try:
        for broker in double.brokers:
            metrics = broker.metrics
            assert metrics is not None  # set once the broker runs
            for n in range(args.clients):
                channel = metrics.open_channel(n % 3, f"bench-{n}")
                channel.register_client_information(ClientInformation(f"app-{n}", "1.0"))
                channel.register_cipher_information("TLS_AES_256_GCM_SHA384", "TLSv1.3")
        double.sync()
        settings = Settings(
            clusters=[
                {
                    "name": "bench",
                    "prometheus": {"preset": args.preset},
                    "brokers": [{"id": b.broker_id, "metrics_url": b.metrics_url} for b in double.brokers],
                }
            ],
            collection={"interval_seconds": 30, "jmx_timeout_seconds": 10},
        )
        loop = CollectionLoop(settings)
        walls = []
        for cycle in range(args.cycles):
            wall, own, process = time.monotonic(), thread_cpu(), time.process_time()
            snapshot = asyncio.run(loop.run_cycle())
            wall, own, process = time.monotonic() - wall, thread_cpu() - own, time.process_time() - process
            failed = [r for r in snapshot.results if not r.ok]
            clients = sum(c.connections for c in snapshot.clients)
            walls.append(wall)
            print(
                f"cycle {cycle + 1}: {args.brokers} brokers ({args.preset}), {wall:.2f} s wall, "
                f"exporter thread {own:.2f} s CPU ({own / args.brokers * 1000:.1f} ms per broker), "
                f"process {process:.2f} s CPU; {len(failed)} failed polls; {clients} connections seen"
            )
        loop.close()
    finally:
        double.stop()
    best = min(walls)
    if args.brokers == 500:
        verdict = "meets" if best <= TARGET_WALL_500 else "misses"
        print(f"best cycle {best:.2f} s: {verdict} the {TARGET_WALL_500:g} s target for 500 brokers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
