"""The exporter's inventory source on a large publication: load time, memory growth and event-loop stalls.

A publication with 100,000 identities (clients.csv rows) is written as the job leaves it, then read by the real
`InventorySource` in a fresh process, as the daemon's first cycle after a new publication does. Printed, with the
targets of issue 24: the load time (<= 2 s), the process's RSS growth (peak and retained, <= 100 MB), and the
longest the event loop was held up meanwhile (the load runs in a worker thread, so a 10 ms ticker keeps ticking).
A second, larger table (1,000,000 rows by default) shows that memory stays bounded by
`inventory.max_loaded_identities` whatever the size of the table: only the time grows.

    .venv/bin/python bench/bench_inventory_source.py [--rows 100000] [--large-rows 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import gc
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter.config.settings import ClusterInventory
from exporter.request_logs.layout import CLIENTS_COLUMNS, CLIENTS_CSV, FORMAT, PUBLICATION
from exporter.snapshot import InventoryReading
from exporter.sources.inventory import InventorySource

TARGET_LOAD_SECONDS = 2.0
TARGET_RSS_GROWTH_MB = 100.0
SOFTWARE = [("apache-kafka-java", "3.9.0"), ("librdkafka", "2.5.0"), ("librdkafka", "1.6.0"), ("unknown", "unknown")]


def write_publication(directory: Path, rows: int) -> int:
    """A publication of `rows` identities spread over 200 software versions; returns the CSV's size in bytes."""
    run_dir = directory / "runs" / "bench"
    run_dir.mkdir(parents=True)
    path = run_dir / CLIENTS_CSV
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CLIENTS_COLUMNS)
        for i in range(rows):
            name, version = SOFTWARE[i % len(SOFTWARE)]
            writer.writerow(
                [
                    f"team-{i % 997}-service-{i}-consumer",
                    f"User:CN=svc-{i % 4093},OU=streaming,O=example",
                    f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
                    "SASL_SSL" if i % 3 else "PLAINTEXT",
                    name,
                    f"{version}-{i % 50}",
                    "2026-11-24 00:00:01.123",
                    "2026-11-24 23:59:58.456",
                    str(1 + (i * 7919) % 1_000_003),
                    str(1 + i % 7),
                ]
            )
    pointer = {
        "format": FORMAT,
        "run_id": "bench",
        "run_dir": "runs/bench",
        "finished": "2026-11-25T00:05:00+00:00",
        "log_time_range": {"first": "2026-11-24 00:00:01.123", "last": "2026-11-24 23:59:58.456"},
    }
    (directory / PUBLICATION).write_text(json.dumps(pointer), encoding="utf-8")
    return path.stat().st_size


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure(directory: str, results: multiprocessing.Queue) -> None:
    """In a fresh process: the first poll of the source, as the daemon's cycle awaits it."""
    source = InventorySource("bench", ClusterInventory(path=Path(directory)))
    (poll,) = source.polls({})
    gc.collect()
    # Everything is imported and the heap settled: from here, growth is the publication's.
    rss_before = _status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux 4.0+)

    async def main() -> tuple[InventoryReading, float, float]:
        longest_stall = 0.0
        done = False

        async def ticker() -> None:
            nonlocal longest_stall
            while not done:
                before = time.perf_counter()
                await asyncio.sleep(0.01)
                longest_stall = max(longest_stall, time.perf_counter() - before - 0.01)

        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        reading = await poll.read()
        elapsed = time.perf_counter() - started
        done = True
        await ticking
        assert isinstance(reading, InventoryReading)
        return reading, elapsed, longest_stall

    reading, elapsed, stall = asyncio.run(main())
    gc.collect()
    loaded = sum(len(identities) for identities in reading.identities.values())
    results.put(
        {
            "rows": reading.rows,
            "loaded": loaded,
            "seconds": elapsed,
            "peak_mb": (_status_kb("VmHWM") - rss_before) / 1024,
            "retained_mb": (_status_kb("VmRSS") - rss_before) / 1024,
            "stall_ms": stall * 1000,
        }
    )


def run(directory: Path) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=measure, args=(str(directory), results))
    process.start()
    figures = results.get(timeout=600)
    process.join()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--large-rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-inventory-source-") as scratch:
        for label, rows in (("target", args.rows), ("large", args.large_rows)):
            directory = Path(scratch) / label
            directory.mkdir()
            size = write_publication(directory, rows)
            figures = run(directory)
            assert figures["rows"] == rows, figures
            print(
                f"{rows:,} identities ({size / 1e6:.1f} MB clients.csv): loaded {figures['loaded']:,} in "
                f"{figures['seconds']:.2f} s; RSS growth peak {figures['peak_mb']:.1f} MB, retained "
                f"{figures['retained_mb']:.1f} MB; longest event-loop stall {figures['stall_ms']:.1f} ms"
            )
            if label == "target":
                load = figures["seconds"] / TARGET_LOAD_SECONDS
                memory = figures["peak_mb"] / TARGET_RSS_GROWTH_MB
                print(f"  load time / {TARGET_LOAD_SECONDS:.0f} s target: {load:.2f} {'PASS' if load <= 1 else 'FAIL'}")
                print(
                    f"  peak RSS growth / {TARGET_RSS_GROWTH_MB:.0f} MB target: {memory:.2f} "
                    f"{'PASS' if memory <= 1 else 'FAIL'}"
                )


if __name__ == "__main__":
    main()
