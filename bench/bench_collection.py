"""Collection cycle cost against 1, 10 and 50 emulated brokers with the same real-client mix.

For each size: wall time and CPU (our process + the JMX query JVMs it ran) of a cycle with the default
concurrency; CPU per broker-cycle against a bare `jmxquery.JMXConnection.query` call on the same broker;
and the RSS of a `kafka-client-exporter serve` daemon polling that many brokers. All ratios are measured
in this one run.

    .venv/bin/python bench/bench_collection.py [--sizes 1,10,50] [--cycles 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jmxquery import JMXConnection

# The double is not installed (the wheel ships exporter/ only): import it, and this exporter, from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from exporter.sources.jmx import QUERIES
from kafka_double.clients import ClientKind, ClientMix, available_kinds
from kafka_double.exporter_process import checkout_env, running_exporter, write_config
from kafka_double.mbean_host import free_port

TARGET_WALL_50 = 8.0
TARGET_CPU_RATIO = 1.2
TARGET_RSS_MB = 150.0
MIX: list[ClientKind | tuple[ClientKind, str, str]] = [
    (ClientKind.KCAT, "billing-service", "1.4.2"),
    (ClientKind.KCAT, "legacy-etl", "0.9.0"),
    ClientKind.CONFLUENT,
    ClientKind.KAFKA_PYTHON,
    ClientKind.AIOKAFKA,
    ClientKind.KAFKAJS,
]


def cpu_seconds() -> float:
    """CPU of this process plus its reaped children (the query JVMs; the double runs in another process)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def start_double(brokers: int) -> tuple[subprocess.Popen, dict]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kafka_double", "--brokers", str(brokers)],
        stdout=subprocess.PIPE,
        text=True,
        env=checkout_env(),
    )
    line = process.stdout.readline() if process.stdout else ""
    if not line:
        process.kill()
        raise SystemExit("the broker double did not start")
    return process, json.loads(line)


def settings_for(info: dict) -> Settings:
    return Settings(
        clusters=[{"name": "bench", "brokers": [{"id": b["id"], "jmx_url": b["jmx_url"]} for b in info["brokers"]]}]
    )


def bare_jmxquery_cpu(url: str, calls: int) -> float:
    connection = JMXConnection(url)
    before = cpu_seconds()
    for _ in range(calls):
        connection.query(list(QUERIES))
    return (cpu_seconds() - before) / calls


def daemon_rss_mb(info: dict, cycles: int) -> tuple[float, float]:
    brokers = {b["id"]: b["jmx_url"] for b in info["brokers"]}
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp) / "exporter.yaml", "bench", brokers, interval_seconds=2, jmx_timeout_seconds=2)
        with running_exporter(config, free_port(), "--log-level", "WARNING") as daemon:
            time.sleep(2.0 * cycles + 8)
            status = Path(f"/proc/{daemon.pid}/status").read_text()
    fields = {line.split(":")[0]: line.split()[1] for line in status.splitlines() if line.startswith("Vm")}
    return int(fields["VmRSS"]) / 1024, int(fields["VmHWM"]) / 1024


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def measure(brokers: int, cycles: int) -> dict:
    progress(f"{brokers} brokers: starting the double")
    double, info = start_double(brokers)
    kinds = set(available_kinds())
    mix = [k for k in MIX if (k[0] if isinstance(k, tuple) else k) in kinds]
    try:
        with ClientMix(info["bootstrap_servers"], mix) as clients:
            clients.wait_ready()
            progress(f"{brokers} brokers: {len(clients)} clients connected; running cycles")
            settings = settings_for(info)
            loop = CollectionLoop(settings)
            asyncio.run(loop.run_cycle())  # warm-up: page cache, class data sharing archive
            walls, cpus = [], []
            for _ in range(cycles):
                cpu_before, wall_before = cpu_seconds(), time.perf_counter()
                snapshot = asyncio.run(loop.run_cycle())
                walls.append(time.perf_counter() - wall_before)
                cpus.append(cpu_seconds() - cpu_before)
                failed = [r.key.broker for r in snapshot.results if not r.ok]
                if failed:
                    raise SystemExit(f"brokers failed during the benchmark: {failed}")
            loop.close()
            progress(f"{brokers} brokers: bare jmxquery calls")
            bare = bare_jmxquery_cpu(info["brokers"][0]["jmx_url"], calls=5)
            rss, peak = daemon_rss_mb(info, cycles) if brokers == max(SIZES) else (float("nan"), float("nan"))
    finally:
        double.terminate()
        double.wait(30)
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    return {
        "brokers": brokers,
        "wall": wall,
        "cpu": cpu,
        "cpu_per_broker": cpu / brokers,
        "bare": bare,
        "rss": rss,
        "peak": peak,
        "concurrency": settings.collection.max_concurrency,
    }


SIZES: list[int] = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,10,50")
    parser.add_argument("--cycles", type=int, default=3)
    args = parser.parse_args()
    SIZES.extend(int(s) for s in args.sizes.split(","))
    rows = [measure(n, args.cycles) for n in SIZES]
    print(
        f"{'brokers':>7} {'cycle wall s':>12} {'cycle CPU s':>11} {'CPU/broker s':>12} "
        f"{'bare jmxquery CPU/call s':>24} {'ratio':>6}"
    )
    for row in rows:
        print(
            f"{row['brokers']:>7} {row['wall']:>12.2f} {row['cpu']:>11.2f} {row['cpu_per_broker']:>12.3f} "
            f"{row['bare']:>24.3f} {row['cpu_per_broker'] / row['bare']:>6.2f}"
        )
    largest = rows[-1]
    print(
        f"\n{largest['brokers']} brokers, default concurrency {largest['concurrency']}: cycle {largest['wall']:.2f} s "
        f"(target {TARGET_WALL_50} s, ratio {largest['wall'] / TARGET_WALL_50:.2f})"
    )
    worst = max(row["cpu_per_broker"] / row["bare"] for row in rows)
    print(
        f"exporter CPU per broker-cycle / bare jmxquery CPU per call: worst {worst:.2f} (target <= {TARGET_CPU_RATIO})"
    )
    print(
        f"daemon RSS polling {largest['brokers']} brokers: {largest['rss']:.0f} MB now, {largest['peak']:.0f} MB peak "
        f"(target {TARGET_RSS_MB:.0f} MB, ratio {largest['peak'] / TARGET_RSS_MB:.2f})"
    )


if __name__ == "__main__":
    main()
