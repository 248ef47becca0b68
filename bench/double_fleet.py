"""A broker double of N brokers in its own process, for the collection benchmarks: its cost (the MBean host JVM with
Kafka's Selectors, the per-broker Prometheus endpoints rendering them) must not be counted as the exporter's.

Every broker holds `clients` channels with distinct software names spread over its three processors, registered
in the double's registry directly, as its network layer does after ApiVersions and a TLS handshake, so 500 brokers
do not need 10,000 client sockets. :func:`start_double` returns the process and the brokers' JMX and metrics URLs;
closing the process's stdin stops it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

# The double is not installed (the wheel ships exporter/ only): import it from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.exporter_process import checkout_env


def serve_double(brokers: int, clients: int, preset: str) -> None:
    """The double in this (child) process: prints the brokers' URLs as one JSON line, runs until stdin closes."""
    from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec, MetricsEndpointConfig
    from kafka_double.registry import ClientInformation

    listeners = [ListenerSpec("PLAINTEXT", network_processors=3)]
    specs = [BrokerSpec(i, listeners=listeners) for i in range(1, brokers + 1)]
    double = DoubleCluster(specs, metrics_endpoint=MetricsEndpointConfig(preset))
    double.start(timeout=600)
    try:
        for broker in double.brokers:
            assert broker.metrics is not None  # set once the broker runs
            for n in range(clients):
                channel = broker.metrics.open_channel(n % 3, f"bench-{n}")
                channel.register_client_information(ClientInformation(f"app-{n}", "1.0"))
                channel.register_cipher_information("TLS_AES_256_GCM_SHA384", "TLSv1.3")
        double.sync(timeout=300)
        urls = [{"id": b.broker_id, "jmx_url": b.jmx_url, "metrics_url": b.metrics_url} for b in double.brokers]
        print(json.dumps(urls), flush=True)
        sys.stdin.read()
    finally:
        double.stop()


def start_double(brokers: int, clients: int, preset: str = "strimzi") -> tuple[subprocess.Popen[str], list[dict]]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--brokers", str(brokers), "--clients", str(clients), "--preset", preset],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=checkout_env(),
    )
    line = process.stdout.readline() if process.stdout else ""
    if not line:
        process.kill()
        raise SystemExit("the broker double did not start")
    return process, json.loads(line)


def stop_double(process: subprocess.Popen[str]) -> None:
    if process.stdin:
        process.stdin.close()
    process.wait(120)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--brokers", type=int, required=True)
    parser.add_argument("--clients", type=int, required=True)
    parser.add_argument("--preset", default="strimzi")
    args = parser.parse_args()
    serve_double(args.brokers, args.clients, args.preset)
