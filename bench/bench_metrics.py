"""/metrics latency under load: 10,000 client series, 20 concurrent scrapers, a fresh snapshot every cycle.

The server (the real aiohttp app over a synthetic snapshot) runs in its own process; this process is the
loopback load generator. Prints p50/p99 per format, the cold render time, and the ratio to the 20 ms target.

    .venv/bin/python bench/bench_metrics.py [--series 10000] [--scrapers 20] [--requests 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import aiohttp
from aiohttp import web

# The double is not installed (the wheel ships exporter/ only): import it, and this exporter, from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter.judging.clients import ClientJudge
from exporter.policy import load_policy
from exporter.snapshot import ClientConnections, JmxReading, Snapshot, SourceKey, SourceResult
from exporter.web.app import make_app
from exporter.web.exposition import Exposition, render_snapshot
from kafka_double.mbean_host import free_port

TARGET_P99_MS = 20.0


def synthetic_snapshot(series: int, sequence: int, brokers: int = 50) -> Snapshot:
    per_broker = series // brokers
    results = []
    for broker in range(brokers):
        clients = tuple(
            ClientConnections("PLAINTEXT", str(i % 3), f"client-{i // 40}", f"1.{i % 40}.0", 1 + i % 5)
            for i in range(per_broker)
        )
        results.append(
            SourceResult(
                SourceKey("bench", str(broker), "jmx"), True, 0.2, time.time(), reading=JmxReading(clients=clients)
            )
        )
    # The daemon's own path: policy verdicts and the cardinality guard (cap above the bench's pair count).
    inventory = ClientJudge(load_policy(None), max_versions_per_cluster=100000).judge(results)
    return Snapshot(sequence, time.time(), 1.0, tuple(results), clusters=("bench",), clients=inventory)


def _publish(exposition: Exposition, series: int, sequence: int) -> None:
    """Build and render one synthetic snapshot (run off the event loop, as the collection loop publishes)."""
    exposition.publish(synthetic_snapshot(series, sequence))


def serve(port: int, series: int, refresh_seconds: float) -> None:
    async def main() -> None:
        exposition = Exposition()
        exposition.publish(synthetic_snapshot(series, 1))

        async def refresh() -> None:
            # A new snapshot per cycle forces a re-render, as a real collection cycle does.
            sequence = 1
            while True:
                await asyncio.sleep(refresh_seconds)
                sequence += 1
                # Built and rendered off the event loop, as the collection loop publishes.
                await asyncio.to_thread(_publish, exposition, series, sequence)

        app = make_app(exposition, lambda: True)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        await refresh()

    asyncio.run(main())


async def load(url: str, scrapers: int, requests: int, accept: str | None) -> list[float]:
    latencies: list[float] = []
    remaining = requests
    # Like Prometheus: ask for gzip; decompressing is the scraper's cost, not the exporter's.
    headers = {"Accept-Encoding": "gzip", **({"Accept": accept} if accept else {})}
    async with aiohttp.ClientSession(auto_decompress=False) as session:

        async def scraper() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                async with session.get(url, headers=headers) as response:
                    await response.read()
                    assert response.status == 200
                latencies.append((time.perf_counter() - started) * 1000)

        await asyncio.gather(*(scraper() for _ in range(scrapers)))
    return latencies


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[int(q * 1000) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--scrapers", type=int, default=20)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--refresh-seconds", type=float, default=5.0)
    args = parser.parse_args()

    started = time.perf_counter()
    body = render_snapshot(synthetic_snapshot(args.series, 1), openmetrics=False)
    cold_ms = (time.perf_counter() - started) * 1000
    lines = sum(1 for line in body.splitlines() if line.startswith(b"kafka_client_connections{"))

    port = free_port()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(port, args.series, args.refresh_seconds))
    server.start()
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 20
        while True:
            try:
                asyncio.run(load(url, 1, 1, None))
                break
            except (aiohttp.ClientError, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        print(f"series: {lines} kafka_client_connections samples, body {len(body) / 1e6:.2f} MB")
        print(
            f"cold render of one snapshot: {cold_ms:.1f} ms "
            "(once per format and cycle, before publishing, off the event loop)"
        )
        for label, accept in (("prometheus text", None), ("openmetrics", "application/openmetrics-text")):
            latencies = asyncio.run(load(url, args.scrapers, args.requests, accept))
            p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
            print(
                f"{label}: {len(latencies)} scrapes by {args.scrapers} scrapers: p50 {p50:.2f} ms, "
                f"p99 {p99:.2f} ms, max {max(latencies):.1f} ms; p99 / target {p99 / TARGET_P99_MS:.2f}"
            )
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    main()
