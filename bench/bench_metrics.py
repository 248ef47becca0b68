"""/metrics latency under load: 10,000 client series and 2,000 identity series, 20 concurrent scrapers, a fresh
snapshot every cycle.

The server (the real aiohttp app over a synthetic snapshot) runs in its own process; this process is the
loopback load generator. Prints p50/p99 per format, the cold render time, and the ratio to the 20 ms target.
The identities come from an inventory of 20 clients per connected version, joined by the daemon's own code, which
keeps `--identities` of them as kafka_client_identity_info series (inventory.max_identity_series).

    .venv/bin/python bench/bench_metrics.py [--series 10000] [--identities 2000] [--scrapers 20] [--requests 4000]
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
from exporter.judging.identities import join_identities
from exporter.policy import load_policy
from exporter.snapshot import (
    CLUSTER_BROKER,
    ClientConnections,
    ClientIdentity,
    InventoryReading,
    JmxReading,
    Snapshot,
    SourceKey,
    SourceResult,
)
from exporter.web.app import make_app
from exporter.web.exposition import Exposition, render_snapshot
from harness.ports import free_port

TARGET_P99_MS = 20.0


IDENTITIES_PER_PAIR = 20


def synthetic_inventory(pairs: set[tuple[str, str]]) -> InventoryReading:
    identities = {
        pair: tuple(
            ClientIdentity(
                f"{pair[0]}-{pair[1]}-app-{n}",
                f"User:CN=team-{n % 7}",
                f"10.1.{n}.{len(pair[1])}",
                "PLAINTEXT",
                *pair,
                "2026-11-24 00:00:00.000",
                "2026-11-24 23:59:59.000",
                1000 - n,
                1,
            )
            for n in range(IDENTITIES_PER_PAIR)
        )
        for pair in sorted(pairs)
    }
    return InventoryReading(
        directory="/var/lib/kafka-client-exporter/inventory/bench",
        run_id="bench",
        finished="2026-11-25T00:00:00+00:00",
        log_first="2026-11-24 00:00:00.000",
        log_last="2026-11-24 23:59:59.000",
        newest_line_timestamp=time.time(),
        identities=identities,
        identity_counts={pair: len(found) for pair, found in identities.items()},
        rows=sum(len(found) for found in identities.values()),
        not_loaded=0,
    )


def synthetic_snapshot(series: int, sequence: int, identity_series: int = 0, brokers: int = 50) -> Snapshot:
    per_broker = series // brokers
    results = []
    pairs: set[tuple[str, str]] = set()
    for broker in range(brokers):
        clients = tuple(
            ClientConnections("PLAINTEXT", str(i % 3), f"client-{i // 40}", f"1.{i % 40}.0", 1 + i % 5)
            for i in range(per_broker)
        )
        pairs.update((c.software_name, c.software_version) for c in clients)
        results.append(
            SourceResult(
                SourceKey("bench", str(broker), "jmx"), True, 0.2, time.time(), reading=JmxReading(clients=clients)
            )
        )
    if identity_series:
        results.append(
            SourceResult(
                SourceKey("bench", CLUSTER_BROKER, "inventory"),
                True,
                0.01,
                time.time(),
                reading=synthetic_inventory(pairs),
            )
        )
    # The daemon's own path: policy verdicts and the cardinality guard (cap above the bench's pair count).
    judged = ClientJudge(load_policy(None), max_versions_per_cluster=100000).judge(results)
    identities, dropped = join_identities(results, judged, {"bench": identity_series})
    return Snapshot(
        sequence,
        time.time(),
        1.0,
        tuple(results),
        clusters=("bench",),
        clients=judged,
        identities=identities,
        identity_series_dropped=dropped,
    )


def _publish(exposition: Exposition, series: int, identity_series: int, sequence: int) -> None:
    """Build and render one synthetic snapshot (run off the event loop, as the collection loop publishes)."""
    exposition.publish(synthetic_snapshot(series, sequence, identity_series))


def serve(port: int, series: int, identity_series: int, refresh_seconds: float) -> None:
    async def main() -> None:
        exposition = Exposition()
        exposition.publish(synthetic_snapshot(series, 1, identity_series))

        async def refresh() -> None:
            # A new snapshot per cycle forces a re-render, as a real collection cycle does.
            sequence = 1
            while True:
                await asyncio.sleep(refresh_seconds)
                sequence += 1
                # Built and rendered off the event loop, as the collection loop publishes.
                await asyncio.to_thread(_publish, exposition, series, identity_series, sequence)

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
    parser.add_argument("--identities", type=int, default=2000, help="kafka_client_identity_info series")
    parser.add_argument("--scrapers", type=int, default=20)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--refresh-seconds", type=float, default=5.0)
    args = parser.parse_args()

    started = time.perf_counter()
    body = render_snapshot(synthetic_snapshot(args.series, 1, args.identities), openmetrics=False)
    cold_ms = (time.perf_counter() - started) * 1000
    lines = sum(1 for line in body.splitlines() if line.startswith(b"kafka_client_connections{"))
    identity_lines = sum(1 for line in body.splitlines() if line.startswith(b"kafka_client_identity_info{"))

    port = free_port()
    server = multiprocessing.get_context("spawn").Process(
        target=serve, args=(port, args.series, args.identities, args.refresh_seconds)
    )
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
        print(
            f"series: {lines} kafka_client_connections samples, {identity_lines} kafka_client_identity_info samples, "
            f"body {len(body) / 1e6:.2f} MB"
        )
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
