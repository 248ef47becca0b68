"""Inventory benchmark: the Spark job against the single-process Python parser, on generated request logs.

    .venv/bin/python bench/bench_inventory.py                # ~1 GB and ~4 GB under bench/results/inventory
    .venv/bin/python bench/bench_inventory.py --sizes 200 800 --clients 20000   # a quicker look

Generates the logs once (bench/inventory_logs.py: both formats, tens of thousands of distinct clients; kept for
later runs), runs the whole Spark job (every table, CSVs and the report) on each size in its own process
(local[*]), runs the Python parser on the smallest size, asserts that both `clients` tables are equal, and
prints both throughputs (Spark: the pass over the logs and the `clients` table written, the same work as the
Python parser; the whole job's time is printed beside it), their ratio, the largest/smallest Spark time ratio
and the peak RSS of the Spark driver (JVM + Python) per size. It also times a "floor" job (read every line, extract
one field with one regex, aggregate) to show how much of the 2x budget Spark's fixed costs take here. Targets on a
2-core machine: Spark >= 2x Python at 1 GB; time ratio <= 4.5 for 4x the data; driver memory flat.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import reference_parser  # noqa: E402
from bench.inventory_logs import generate  # noqa: E402

DRIVER_MEMORY = "2g"


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def spark_run(data: Path, out: Path, dump: Path | None) -> dict[str, float]:
    """Runs in a child process: one full inventory job, then the JVM's and this process's peak RSS."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from bench.spark_clients import clients_as_logged
    from exporter.request_logs.job import InventoryOptions, run_inventory
    from exporter.request_logs.session import build_session

    started = time.monotonic()
    spark = build_session(None, {"spark.driver.memory": DRIVER_MEMORY, "spark.ui.enabled": "false"})
    startup = time.monotonic() - started
    summary = run_inventory(spark, InventoryOptions(inputs=[str(data)], output=str(out)))
    jvm_pid = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]  # the driver JVM pyspark launched
    jvm_peak = _peak_rss_kb(jvm_pid)
    if dump is not None:
        clients = clients_as_logged(spark.read.parquet(str(out / "clients")))
        with dump.open("w", encoding="utf-8") as fh:
            for row in clients.toLocalIterator():  # streamed partition by partition, never collected whole
                fh.write(json.dumps(list(row)) + "\n")
    spark.stop()
    return {
        # Comparable with the Python parser, which builds only `clients`: the pass over the logs plus the
        # clients table written as Parquet (the first table the job writes).
        "seconds": summary.milestones["clients"],
        "job_seconds": summary.seconds,
        "startup_seconds": startup,
        "lines": summary.lines,
        "clients": summary.clients,
        "jvm_peak_rss_mb": jvm_peak / 1024,
        "python_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def floor_run(data: Path) -> dict[str, float]:
    """Runs in a child process: about the least a Spark job that reads every line can do here - read the logs,
    take each line's time, pull ONE field (a JSON line's connection id) out with one literal-led regular
    expression, aggregate on it - timed from a started session like the inventory run, which needs nine fields
    a line and then its tables. It shows how much of the 2x budget Spark's fixed costs alone take here."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from pyspark.sql import functions as F

    from exporter.request_logs import log_format as lf
    from exporter.request_logs.parse import read_lines
    from exporter.request_logs.session import build_session

    spark = build_session(None, {"spark.driver.memory": DRIVER_MEMORY, "spark.ui.enabled": "false"})
    started = time.monotonic()
    line = F.col("line")
    when = F.translate(F.substr(line, F.lit(2), F.lit(23)), lf.TIMESTAMP_SEPARATORS, "").try_cast("long")
    # A pattern that starts with a literal, which Java searches with Boyer-Moore: the cheapest regex there is.
    connection = F.regexp_extract(line, r',"connection":"([^"]*)"', 1)
    groups = (
        read_lines(spark, [str(data)])
        .groupBy(connection.alias("connection"))
        .agg(F.count(F.lit(1)), F.min(when), F.max(when))
        .count()
    )
    seconds = time.monotonic() - started
    spark.stop()
    return {"seconds": seconds, "groups": groups}


def _dataset(root: Path, megabytes: int, clients: int) -> tuple[Path, int]:
    data = root / f"logs-{megabytes}mb-{clients}c"
    stamp = data / ".complete"
    if not stamp.exists():
        print(f"generating ~{megabytes} MB of request logs ({clients} clients) in {data} ...", flush=True)
        written = generate(data, megabytes * 1_000_000, clients)
        stamp.write_text(str(written))
    return data, int(stamp.read_text())


def _spark_child(data: Path, out: Path | None, dump: Path | None) -> dict[str, float]:
    argv = [sys.executable, __file__]
    argv += ["--spark-run", str(data), str(out)] if out is not None else ["--floor-run", str(data)]
    if dump is not None:
        argv += ["--dump", str(dump)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-5000:])
        raise SystemExit(f"the Spark run on {data} failed ({done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=2, default=[1000, 4000], metavar=("SMALL_MB", "LARGE_MB"))
    parser.add_argument("--clients", type=int, default=30_000)
    parser.add_argument("--data-dir", type=Path, default=REPO / "bench" / "results" / "inventory")
    parser.add_argument("--spark-run", nargs=2, type=Path, metavar=("DATA", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--floor-run", type=Path, metavar="DATA", help=argparse.SUPPRESS)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.floor_run:
        print(json.dumps(floor_run(args.floor_run)))
        return 0
    if args.spark_run:
        print(json.dumps(spark_run(args.spark_run[0], args.spark_run[1], args.dump)))
        return 0

    small_mb, large_mb = args.sizes
    small, small_bytes = _dataset(args.data_dir, small_mb, args.clients)
    large, large_bytes = _dataset(args.data_dir, large_mb, args.clients)
    dump = args.data_dir / "spark-clients.jsonl"

    print(f"Spark on {small_bytes / 1e6:.0f} MB ...", flush=True)
    spark_small = _spark_child(small, args.data_dir / "out-small", dump)
    print(f"Spark on {large_bytes / 1e6:.0f} MB ...", flush=True)
    spark_large = _spark_child(large, args.data_dir / "out-large", None)

    print(f"Spark floor on {small_bytes / 1e6:.0f} MB ...", flush=True)
    floor = _spark_child(small, None, None)
    print(f"Python parser on {small_bytes / 1e6:.0f} MB ...", flush=True)
    started = time.monotonic()
    reference = reference_parser.run([str(small)])
    python_seconds = time.monotonic() - started

    expected = sorted(json.dumps(list(vars(row).values())) for row in reference.clients)
    got = sorted(line.strip() for line in dump.open(encoding="utf-8"))
    assert got == expected, f"clients differ: Spark {len(got)} rows, Python {len(expected)} rows"
    assert spark_small["lines"] == reference.lines, (spark_small["lines"], reference.lines)

    python_mbs = small_bytes / 1e6 / python_seconds
    spark_mbs = small_bytes / 1e6 / spark_small["seconds"]
    ratio = spark_mbs / python_mbs
    time_ratio = spark_large["seconds"] / spark_small["seconds"]
    print()
    print(f"clients table equal: {len(expected):,} rows from {reference.lines:,} lines ({small_bytes / 1e6:.0f} MB)")
    print(f"Python parser  {small_bytes / 1e6:6.0f} MB  {python_seconds:7.1f} s  {python_mbs:6.1f} MB/s")
    for name, size, run in (("small", small_bytes, spark_small), ("large", large_bytes, spark_large)):
        print(
            f"Spark ({name})  {size / 1e6:6.0f} MB  {run['seconds']:7.1f} s  {size / 1e6 / run['seconds']:6.1f} MB/s"
            f"  (+{run['startup_seconds']:.1f} s session start; whole job with every table, CSV and report "
            f"{run['job_seconds']:.1f} s)  driver peak RSS: JVM {run['jvm_peak_rss_mb']:.0f} MB,"
            f" Python {run['python_peak_rss_mb']:.0f} MB"
        )
    print(f"Spark / Python throughput at {small_bytes / 1e6:.0f} MB: {ratio:.2f}x   (target >= 2)")
    budget = python_seconds / 2
    print(
        f"Spark floor at {small_bytes / 1e6:.0f} MB (read, one regex field, aggregate): {floor['seconds']:.1f} s"
        f" = {floor['seconds'] / budget:.2f} of the {budget:.1f} s that 2x the Python parser allows"
    )
    print(f"Spark time {large_bytes / 1e6:.0f} MB / {small_bytes / 1e6:.0f} MB: {time_ratio:.2f}   (target <= 4.5)")
    jvm_growth = spark_large["jvm_peak_rss_mb"] / spark_small["jvm_peak_rss_mb"]
    print(f"driver JVM peak RSS large / small: {jvm_growth:.2f}   (flat: heap capped at {DRIVER_MEMORY})")
    print(f"cpu cores: {os.cpu_count()}; load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
