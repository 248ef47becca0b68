"""Inventory benchmark: is the Spark job efficient? Ratios measured in one run (issue 16's targets).

    .venv/bin/python bench/bench_inventory.py                     # ~1, ~2 and ~4 GB under bench/results/inventory
    .venv/bin/python bench/bench_inventory.py --sizes 100 200 400  # a quicker look (the ratios mean less there)

Generates the logs once (bench/inventory_logs.py: both formats, tens of thousands of distinct clients; kept for
later runs) and runs, each in its own process with a fresh session:
- the inventory job (every table, CSVs and the report) on each size with local[2], and on the middle size with
  local[1]; its "pass" is the time until the `clients` table is written (the pass over the logs plus the table the
  Python parser also builds); no Python worker may start (spark.python.daemon.module points at nothing);
- the "floor" job on the smallest size: read every line, pull one field with one literal-led regex, aggregate;
  and on the middle size with local[2] and local[1]: its speed-up is what this machine gives the simplest job;
- the single-process Python parser (bench/reference_parser.py) on the smallest size: its `clients` must equal
  Spark's;
- DuckDB (the single-machine anchor, not part of the job) on the smallest size, 1 and 2 threads: five fields per
  JSON line by regexp_extract, aggregated per client; its result must equal the same aggregation done by a
  JSON parser in Python.
Then prints each figure next to its target:
| inventory pass / floor job, smallest size | <= 2.0 |
| Spark marginal throughput per core (middle - smallest) / Python parser per core | >= 1.5 |
| Spark local[2] / local[1] speed-up, middle size | >= 1.8 |
| time(largest) / time(smallest) | <= 3.0 |
| driver peak RSS, largest / smallest | flat (<= 1.2) |
and, without targets, the floor job's own local[2] / local[1] speed-up (the machine's ceiling for the job's)
and Spark's marginal throughput per core against DuckDB's per core.
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
from exporter.request_logs import log_format as lf  # noqa: E402

DRIVER_MEMORY = "2g"
#: A Python worker started during the job fails it: this module does not exist.
NO_PYTHON_WORKERS = {"spark.python.daemon.module": "kce_the_inventory_job_starts_no_python_workers"}


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def spark_run(data: Path, out: Path, dump: Path | None, master: str) -> dict[str, float]:
    """Runs in a child process: one full inventory job, then the JVM's and this process's peak RSS."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from bench.spark_clients import clients_as_logged
    from exporter.request_logs.job import InventoryOptions, run_inventory
    from exporter.request_logs.session import build_session

    started = time.monotonic()
    conf = {"spark.driver.memory": DRIVER_MEMORY, "spark.ui.enabled": "false", **NO_PYTHON_WORKERS}
    spark = build_session(master, conf)
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


def floor_run(data: Path, master: str) -> dict[str, float]:
    """Runs in a child process: about the least a Spark job that reads every line can do here - read the logs,
    take each line's time, pull ONE field (a JSON line's connection id) out with one literal-led regular
    expression, aggregate on it - timed from a started session like the inventory run, which needs nine fields
    a line and then its tables. It shows how much of the 2x budget Spark's fixed costs alone take here."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from pyspark.sql import functions as F

    from exporter.request_logs import log_format as lf
    from exporter.request_logs.parse import read_lines
    from exporter.request_logs.session import build_session

    spark = build_session(master, {"spark.driver.memory": DRIVER_MEMORY, "spark.ui.enabled": "false"})
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


# DuckDB: five fields of every JSON line (the tail's are anchored on "securityProtocol", which no request body
# holds), aggregated per client. RE2 syntax; a JSON string is matched with its escapes, as written.
_JSON_STRING = r'"((?:[^"\\]|\\.)*)"'
DUCKDB_QUERY = f"""
SELECT client_id, tail.principal, tail.listener, tail.software_name, tail.software_version, count(*) AS lines
FROM (
    SELECT regexp_extract(line, '"requestHeader":\\{{[^}}]*?"clientId":(null|"(?:[^"\\\\]|\\\\.)*")', 1)
               AS client_id,
           regexp_extract(line, ',"securityProtocol":"[A-Z_]+","principal":{_JSON_STRING},"listener":{_JSON_STRING},'
                          '"clientInformation":\\{{"softwareName":{_JSON_STRING},"softwareVersion":{_JSON_STRING}\\}}',
                          ['principal', 'listener', 'software_name', 'software_version']) AS tail
    FROM read_csv(?, columns={{'line': 'VARCHAR'}}, delim=chr(1), quote='', escape='', header=false,
                  auto_detect=false, filename=false)
    WHERE contains(line, 'Completed request:{{')
)
WHERE tail.listener <> ''  -- the tail did not match: a cut-off or damaged line (a listener is never empty)
GROUP BY ALL
"""


def duckdb_run(data: Path, threads: int) -> dict[str, object]:
    """Runs in a child process: the DuckDB query over every kafka-request.log* file (gzipped ones too)."""
    import duckdb

    files = sorted(str(f) for f in data.rglob("kafka-request.log*"))
    connection = duckdb.connect(config={"threads": threads})
    started = time.monotonic()
    rows = connection.execute(DUCKDB_QUERY, [files]).fetchall()
    seconds = time.monotonic() - started
    return {"seconds": seconds, "rows": sorted(json.dumps(list(row)) for row in rows)}


def _json_escaped(value: str) -> str:
    # Jackson escapes only what JSON requires and writes other characters as UTF-8, as this does.
    return json.dumps(value, ensure_ascii=False)[1:-1]


def json_line_aggregate(data: Path) -> list[str]:
    """DuckDB's aggregation done by a JSON parser: what its output must equal."""
    counts: dict[tuple[str, ...], int] = {}
    for line in reference_parser.read_lines(reference_parser.expand_inputs([str(data)])):
        start = line.find(lf.JSON_MARKER)
        if start < 0:
            continue
        payload = line[start + len(lf.COMPLETED) :].removesuffix(lf.LOGGER_SUFFIX)
        try:
            obj = json.loads(payload)
            header, info = obj["requestHeader"], obj["clientInformation"]
            key = (
                "" if "clientId" not in header else json.dumps(header["clientId"], ensure_ascii=False),
                _json_escaped(obj["principal"]),
                _json_escaped(obj["listener"]),
                _json_escaped(info["softwareName"]),
                _json_escaped(info["softwareVersion"]),
            )
        except (ValueError, KeyError, TypeError):
            continue  # a cut-off or damaged line, which DuckDB's anchored patterns cannot read either
        counts[key] = counts.get(key, 0) + 1
    return sorted(json.dumps([*key, n]) for key, n in counts.items())


def _dataset(root: Path, megabytes: int, clients: int) -> tuple[Path, int]:
    data = root / f"logs-{megabytes}mb-{clients}c"
    stamp = data / ".complete"
    if not stamp.exists():
        print(f"generating ~{megabytes} MB of request logs ({clients} clients) in {data} ...", flush=True)
        written = generate(data, megabytes * 1_000_000, clients)
        stamp.write_text(str(written))
    return data, int(stamp.read_text())


def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-5000:])
        raise SystemExit(f"bench child {args} failed ({done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check(label: str, value: float, target: str, passed: bool) -> str:
    return f"{label:<78} {value:8.2f}   target {target:<8} {'PASS' if passed else 'FAIL'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=3, default=[1000, 2000, 4000], metavar=("S", "M", "L"))
    parser.add_argument("--clients", type=int, default=30_000)
    parser.add_argument("--data-dir", type=Path, default=REPO / "bench" / "results" / "inventory")
    parser.add_argument("--spark-run", nargs=3, metavar=("DATA", "OUT", "MASTER"), help=argparse.SUPPRESS)
    parser.add_argument("--floor-run", nargs=2, metavar=("DATA", "MASTER"), help=argparse.SUPPRESS)
    parser.add_argument("--duckdb-run", nargs=2, metavar=("DATA", "THREADS"), help=argparse.SUPPRESS)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.floor_run:
        print(json.dumps(floor_run(Path(args.floor_run[0]), args.floor_run[1])))
        return 0
    if args.spark_run:
        data, out, master = args.spark_run
        print(json.dumps(spark_run(Path(data), Path(out), args.dump, master)))
        return 0
    if args.duckdb_run:
        print(json.dumps(duckdb_run(Path(args.duckdb_run[0]), int(args.duckdb_run[1]))))
        return 0
    try:
        import duckdb  # noqa: F401  # the baseline only; the job never uses it
    except ImportError:
        raise SystemExit(
            "bench_inventory: DuckDB (the baseline) is missing: run scripts/setup.sh (it installs the bench extra)"
        ) from None

    datasets = [_dataset(args.data_dir, mb, args.clients) for mb in args.sizes]
    (small, small_bytes), (middle, middle_bytes), (large, large_bytes) = datasets
    mb = {"small": small_bytes / 1e6, "middle": middle_bytes / 1e6, "large": large_bytes / 1e6}
    dump = args.data_dir / "spark-clients.jsonl"

    def spark(data: Path, name: str, master: str, with_dump: bool = False) -> dict:
        print(f"Spark {master} on {data.name} ...", flush=True)
        extra = ["--dump", str(dump)] if with_dump else []
        return _child("--spark-run", str(data), str(args.data_dir / f"out-{name}"), master, *extra)

    runs = {
        "small": spark(small, "small", "local[2]", with_dump=True),
        "middle": spark(middle, "middle", "local[2]"),
        "middle_1": spark(middle, "middle-1", "local[1]"),
        "large": spark(large, "large", "local[2]"),
    }
    print(f"Spark floor on {small.name}, and on {middle.name} with local[2] and local[1] ...", flush=True)
    floor = _child("--floor-run", str(small), "local[2]")
    floor_middle = {m: _child("--floor-run", str(middle), m)["seconds"] for m in ("local[2]", "local[1]")}
    print(f"DuckDB on {small.name} ...", flush=True)
    duck_1 = _child("--duckdb-run", str(small), "1")
    duck_2 = _child("--duckdb-run", str(small), "2")
    print(f"Python parser on {small.name} ...", flush=True)
    started = time.monotonic()
    reference = reference_parser.run([str(small)])
    python_seconds = time.monotonic() - started

    expected = sorted(json.dumps(list(vars(row).values())) for row in reference.clients)
    got = sorted(line.strip() for line in dump.open(encoding="utf-8"))
    assert got == expected, f"clients differ: Spark {len(got)} rows, Python {len(expected)} rows"
    assert runs["small"]["lines"] == reference.lines, (runs["small"]["lines"], reference.lines)
    print("checking DuckDB's result against a JSON parser ...", flush=True)
    assert duck_1["rows"] == duck_2["rows"] == json_line_aggregate(small), "DuckDB's aggregation differs"

    passes = {name: run["seconds"] for name, run in runs.items()}
    spark_marginal_per_core = (mb["middle"] - mb["small"]) / (passes["middle"] - passes["small"]) / 2
    python_per_core = mb["small"] / python_seconds
    duckdb_per_core = mb["small"] / duck_1["seconds"]
    rss = {name: runs[name]["jvm_peak_rss_mb"] for name in ("small", "middle", "large")}
    targets = [
        (f"inventory pass / floor job, {mb['small']:.0f} MB", passes["small"] / floor["seconds"], "<=", 2.0),
        (
            "Spark marginal MB/s per core / Python parser MB/s per core",
            spark_marginal_per_core / python_per_core,
            ">=",
            1.5,
        ),
        (
            f"Spark local[2] / local[1] speed-up, {mb['middle']:.0f} MB",
            passes["middle_1"] / passes["middle"],
            ">=",
            1.8,
        ),
        (f"time({mb['large']:.0f} MB) / time({mb['small']:.0f} MB)", passes["large"] / passes["small"], "<=", 3.0),
        ("driver JVM peak RSS, largest / smallest", rss["large"] / rss["small"], "<=", 1.2),
    ]
    figures = [
        _check(label, value, f"{op} {target}", value <= target if op == "<=" else value >= target)
        for label, value, op, target in targets
    ]
    print()
    print(f"clients table equal to the Python parser's: {len(expected):,} rows from {reference.lines:,} lines")
    for name in ("small", "middle", "middle_1", "large"):
        run = runs[name]
        size = mb["middle" if name == "middle_1" else name]
        print(
            f"Spark {'local[1]' if name == 'middle_1' else 'local[2]'} {size:6.0f} MB: pass {run['seconds']:6.1f} s"
            f" ({size / run['seconds']:5.1f} MB/s), whole job {run['job_seconds']:6.1f} s, session start"
            f" {run['startup_seconds']:.1f} s, driver peak RSS JVM {run['jvm_peak_rss_mb']:.0f} MB"
            f" + Python {run['python_peak_rss_mb']:.0f} MB"
        )
    print(f"Spark floor    {mb['small']:6.0f} MB: {floor['seconds']:6.1f} s")
    print(
        f"Spark floor    {mb['middle']:6.0f} MB: {floor_middle['local[2]']:6.1f} s with local[2],"
        f" {floor_middle['local[1]']:.1f} s with local[1]"
    )
    print(f"Python parser  {mb['small']:6.0f} MB: {python_seconds:6.1f} s ({python_per_core:5.1f} MB/s, one core)")
    print(
        f"DuckDB         {mb['small']:6.0f} MB: {duck_1['seconds']:6.1f} s with 1 thread ({duckdb_per_core:5.1f} MB/s),"
        f" {duck_2['seconds']:.1f} s with 2"
    )
    print(f"Spark marginal per core: {spark_marginal_per_core:.1f} MB/s")
    print()
    print("\n".join(figures))
    print(
        f"{'floor job local[2] / local[1] speed-up, ' + format(mb['middle'], '.0f') + ' MB (this machine)':<78} "
        f"{floor_middle['local[1]'] / floor_middle['local[2]']:8.2f}"
    )
    print(
        f"{'Spark marginal per core / DuckDB per core (the single-machine anchor)':<78} "
        f"{spark_marginal_per_core / duckdb_per_core:8.2f}"
    )
    print(f"cpu cores: {os.cpu_count()}; load average at the end: {os.getloadavg()[0]:.2f}")
    return 0 if all(line.endswith("PASS") for line in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
