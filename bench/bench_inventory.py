"""Inventory benchmark: what does a fleet pay for the job? Ratios measured in one run (issue 23's targets).

    .venv/bin/python bench/bench_inventory.py                     # ~1, ~2 and ~4 GB under bench/results/inventory
    .venv/bin/python bench/bench_inventory.py --sizes 100 200 400  # a quicker look (the ratios mean less there)

Generates the logs once (bench/inventory_logs.py: both formats, tens of thousands of distinct clients; kept for
later runs): "day 1" is the smallest size, "day 2" the same fleet's next day (as many bytes, other files and
timestamps). Then runs, each in its own process with a fresh session and local[2], no Python worker allowed
(spark.python.daemon.module points at nothing), timing the whole job (every table, its CSV, the report) from a
started session:
- a full run on each size, and on day 2 alone, and on an input holding only an empty kafka-request.log;
- --incremental on one output over a directory holding day 1, then day 1 and day 2 (day 2 new), then the same
  again (nothing new);
- the single-process Python parser (bench/reference_parser.py) on day 1: its `clients` must equal Spark's;
- as information (issue 16's retired targets): the "floor" job on day 1 (read every line, pull one field with one
  literal-led regex, aggregate), the Python parser's and DuckDB's MB/s per core (DuckDB's result checked against a
  JSON parser's).
Then prints each figure next to its target:
| incremental run with day 2 new / full run over day 2 alone | <= 1.3 |
| incremental run with nothing new / full run over an empty input | <= 1.5 |
| state size / bytes of logs read | <= 0.1 |
| time(largest) / time(smallest), full runs | <= 2.2 |
| driver JVM peak RSS, largest / smallest | flat (<= 1.2) |
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import reference_parser  # noqa: E402
from bench.inventory_logs import EPOCH, generate  # noqa: E402
from exporter.request_logs import log_format as lf  # noqa: E402

DRIVER_MEMORY = "2g"
#: A Python worker started during the job fails it: this module does not exist.
NO_PYTHON_WORKERS = {"spark.python.daemon.module": "kce_the_inventory_job_starts_no_python_workers"}


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def spark_run(data: Path, out: Path, dump: Path | None, master: str, incremental: bool = False) -> dict[str, object]:
    """Runs in a child process: one inventory job (full, or --incremental), then the JVM's and this process's peak
    RSS."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from bench.spark_clients import clients_as_logged
    from exporter.request_logs.job import InventoryOptions, run_inventory
    from exporter.request_logs.session import build_session

    started = time.monotonic()
    conf = {"spark.driver.memory": DRIVER_MEMORY, "spark.ui.enabled": "false", **NO_PYTHON_WORKERS}
    spark = build_session(master, conf)
    startup = time.monotonic() - started
    summary = run_inventory(spark, InventoryOptions(inputs=[str(data)], output=str(out), incremental=incremental))
    jvm_pid = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]  # the driver JVM pyspark launched
    jvm_peak = _peak_rss_kb(jvm_pid)
    if dump is not None:
        clients = clients_as_logged(spark.read.parquet(summary.outputs["clients"]))
        with dump.open("w", encoding="utf-8") as fh:
            for row in clients.toLocalIterator():  # streamed partition by partition, never collected whole
                fh.write(json.dumps(list(row)) + "\n")
    spark.stop()
    return {
        # Comparable with the Python parser, which builds only `clients`: the pass over the logs plus the
        # clients table written as Parquet (the first table the job writes).
        "seconds": summary.milestones.get("clients", summary.seconds),  # a run that found nothing new writes none
        "job_seconds": summary.seconds,
        "startup_seconds": startup,
        "lines": summary.lines,
        "clients": summary.clients,
        "files": summary.files,
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


def _dataset(root: Path, megabytes: int, clients: int, day: int = 0) -> tuple[Path, int]:
    data = root / (f"logs-{megabytes}mb-{clients}c" + (f"-day{day + 1}" if day else ""))
    stamp = data / ".complete"
    if not stamp.exists():
        print(f"generating ~{megabytes} MB of request logs ({clients} clients) in {data} ...", flush=True)
        written = generate(data, megabytes * 1_000_000, clients, start=EPOCH + day * 86_400)
        stamp.write_text(str(written))
    return data, int(stamp.read_text())


def _link_tree(source: Path, target: Path) -> None:
    """Hard links of ``source``'s log files under ``target``: a log directory that gains a day's files."""
    for path in source.rglob("kafka-request.log*"):
        link = target / path.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            os.link(path, link)


def _tree_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-5000:])
        raise SystemExit(f"bench child {args} failed ({done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check(label: str, value: float, target: str, passed: bool) -> str:
    return f"{label:<78} {value:8.2f}   target {target:<8} {'PASS' if passed else 'FAIL'}"


def _info(label: str, value: float) -> str:
    return f"{label:<78} {value:8.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=3, default=[1000, 2000, 4000], metavar=("S", "M", "L"))
    parser.add_argument("--clients", type=int, default=30_000)
    parser.add_argument("--data-dir", type=Path, default=REPO / "bench" / "results" / "inventory")
    parser.add_argument("--spark-run", nargs=3, metavar=("DATA", "OUT", "MASTER"), help=argparse.SUPPRESS)
    parser.add_argument("--incremental", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--floor-run", nargs=2, metavar=("DATA", "MASTER"), help=argparse.SUPPRESS)
    parser.add_argument("--duckdb-run", nargs=2, metavar=("DATA", "THREADS"), help=argparse.SUPPRESS)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.floor_run:
        print(json.dumps(floor_run(Path(args.floor_run[0]), args.floor_run[1])))
        return 0
    if args.spark_run:
        data, out, master = args.spark_run
        print(json.dumps(spark_run(Path(data), Path(out), args.dump, master, args.incremental)))
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
    day2, day2_bytes = _dataset(args.data_dir, args.sizes[0], args.clients, day=1)
    mb = {
        "small": small_bytes / 1e6,
        "middle": middle_bytes / 1e6,
        "large": large_bytes / 1e6,
        "day2": day2_bytes / 1e6,
    }
    dump = args.data_dir / "spark-clients.jsonl"
    # Outputs and the incremental input are made anew each run: a run must not find an earlier one's state.
    scratch = args.data_dir / "runs"
    shutil.rmtree(scratch, ignore_errors=True)
    empty = scratch / "empty-input"
    empty.mkdir(parents=True)
    (empty / "kafka-request.log").touch()
    growing = scratch / "incremental-input"

    def spark(data: Path, name: str, *, with_dump: bool = False, incremental: bool = False) -> dict:
        print(f"Spark {'--incremental ' if incremental else ''}{name} on {data.name} ...", flush=True)
        extra = (["--dump", str(dump)] if with_dump else []) + (["--incremental"] if incremental else [])
        return _child("--spark-run", str(data), str(scratch / f"out-{name}"), "local[2]", *extra)

    runs = {
        "small": spark(small, "small", with_dump=True),
        "middle": spark(middle, "middle"),
        "large": spark(large, "large"),
        "day2": spark(day2, "day2"),
        "empty": spark(empty, "empty"),
    }
    _link_tree(small, growing)
    runs["inc_day1"] = spark(growing, "incremental", incremental=True)
    _link_tree(day2, growing)
    runs["inc_day2"] = spark(growing, "incremental", incremental=True)
    runs["inc_nothing"] = spark(growing, "incremental", incremental=True)
    day_files = sum(1 for _ in small.rglob("kafka-request.log*"))
    # The runs must have done what they are timed for: day 2 read alone, then nothing read.
    assert runs["inc_day2"]["files"]["read"] == day_files, runs["inc_day2"]["files"]
    assert runs["inc_day2"]["files"]["skipped_unchanged"] == day_files, runs["inc_day2"]["files"]
    assert runs["inc_nothing"]["files"]["read"] == 0, runs["inc_nothing"]["files"]
    assert runs["inc_nothing"]["lines"] == runs["inc_day2"]["lines"] == runs["small"]["lines"] + runs["day2"]["lines"]
    state_bytes = _tree_bytes(scratch / "out-incremental" / "state")

    print(f"Spark floor on {small.name} ...", flush=True)
    floor = _child("--floor-run", str(small), "local[2]")
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

    job = {name: run["job_seconds"] for name, run in runs.items()}
    passes = {name: run["seconds"] for name, run in runs.items()}
    spark_marginal_per_core = (mb["middle"] - mb["small"]) / (passes["middle"] - passes["small"]) / 2
    python_per_core = mb["small"] / python_seconds
    duckdb_per_core = mb["small"] / duck_1["seconds"]
    rss = {name: runs[name]["jvm_peak_rss_mb"] for name in ("small", "middle", "large")}
    read_bytes = small_bytes + day2_bytes
    targets = [
        (
            f"incremental run, {mb['day2']:.0f} MB new / full run over those {mb['day2']:.0f} MB alone",
            job["inc_day2"] / job["day2"],
            1.3,
        ),
        ("incremental run, nothing new / full run over an empty input", job["inc_nothing"] / job["empty"], 1.5),
        (
            f"state size / bytes of logs read ({state_bytes / 1e6:.1f} MB / {read_bytes / 1e6:.0f} MB)",
            state_bytes / read_bytes,
            0.1,
        ),
        (f"time({mb['large']:.0f} MB) / time({mb['small']:.0f} MB), full runs", job["large"] / job["small"], 2.2),
        ("driver JVM peak RSS, largest / smallest", rss["large"] / rss["small"], 1.2),
    ]
    figures = [_check(label, value, f"<= {target}", value <= target) for label, value, target in targets]
    print()
    print(f"clients table equal to the Python parser's: {len(expected):,} rows from {reference.lines:,} lines")
    sizes = {"small": small_bytes, "middle": middle_bytes, "large": large_bytes, "day2": day2_bytes}
    for name, run in runs.items():
        size = sizes.get(name)
        speed = f" ({size / 1e6 / run['job_seconds']:5.1f} MB/s)" if size else ""
        print(
            f"Spark {name:<12} whole job {run['job_seconds']:6.1f} s{speed}, pass {run['seconds']:6.1f} s,"
            f" session start {run['startup_seconds']:.1f} s, driver peak RSS JVM {run['jvm_peak_rss_mb']:.0f} MB"
            f" + Python {run['python_peak_rss_mb']:.0f} MB; files {run['files']}"
        )
    print(f"Spark floor    {mb['small']:6.0f} MB: {floor['seconds']:6.1f} s")
    print(f"Python parser  {mb['small']:6.0f} MB: {python_seconds:6.1f} s ({python_per_core:5.1f} MB/s, one core)")
    print(
        f"DuckDB         {mb['small']:6.0f} MB: {duck_1['seconds']:6.1f} s with 1 thread ({duckdb_per_core:5.1f} MB/s),"
        f" {duck_2['seconds']:.1f} s with 2"
    )
    print()
    print("\n".join(figures))
    print("information (issue 16's retired targets):")
    print(_info(f"  inventory pass / floor job, {mb['small']:.0f} MB", passes["small"] / floor["seconds"]))
    print(_info("  Spark marginal MB/s per core (middle - smallest)", spark_marginal_per_core))
    print(_info("  Spark marginal per core / Python parser per core", spark_marginal_per_core / python_per_core))
    print(
        _info(
            "  Spark marginal per core / DuckDB per core (the single-machine anchor)",
            spark_marginal_per_core / duckdb_per_core,
        )
    )
    print(_info("  first --incremental run over day 1 / full run over day 1", job["inc_day1"] / job["small"]))
    print(f"cpu cores: {os.cpu_count()}; load average at the end: {os.getloadavg()[0]:.2f}")
    return 0 if all(line.endswith("PASS") for line in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
