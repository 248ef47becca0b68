"""Issue 14's collection targets in one run: the JMX bridge against the per-call path, and the `prometheus` source.

One broker double (its own process, bench/double_fleet.py) carries 500 brokers: one MBeanHost JVM with 500 JMX RMI
connector servers and Kafka's Selectors, and per broker a Prometheus endpoint rendering the same MBeans as Strimzi's
jmx_exporter rule does; every broker holds `--clients` connections with distinct software names. Measured here:

- 50 brokers (one cluster), bridge and per_call: cycle wall time (median over `--cycles` after one warm-up cycle,
  which starts the bridge and opens its connections) and CPU per broker-cycle = this process (the collection loop
  and the bridge's pipe threads) + the bridge JVM (/proc/<pid>/stat utime+stime, it stays alive) + the reaped
  per-call JVMs (RUSAGE_CHILDREN). per_call is measured at 50 brokers only: at 500 one cycle takes minutes.
- 500 brokers (10 clusters x 50), bridge: cycle wall time and CPU per broker-cycle.
- RSS at 500 brokers: a real `kafka-client-exporter serve` daemon polling the 10 clusters, VmRSS of the daemon plus
  its bridge JVM after a few cycles (and the daemon's peak, VmHWM).
- 500 brokers (10 clusters x 50), `prometheus` source (strimzi preset): cycle wall time.

The double's own CPU (its JVM, its Python) is not counted. Prints one table (figure, target, measured, ratio to
per_call, PASS/FAIL); the exit code is 1 when a target is missed. Takes about three minutes on 2 cores.

    .venv/bin/python bench/bench_jmx_transports.py [--clients 20] [--cycles 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

# The double is not installed (the wheel ships exporter/ only): import it, and this exporter, from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.double_fleet import start_double, stop_double
from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from harness.exporter_process import running_exporter
from harness.ports import free_port

CLUSTERS, PER_CLUSTER = 10, 50
TARGET_WALL_50 = 0.5
TARGET_CPU_MS = 10.0
TARGET_WALL_500 = 3.0
TARGET_RSS_MB = 300.0
TARGET_PROMETHEUS_500 = 2.0
_TICKS = os.sysconf("SC_CLK_TCK")


# -- /proc ---------------------------------------------------------------------------------------------------


def proc_cpu_seconds(stat: str) -> float:
    """utime + stime of a /proc/<pid>/stat line. The command name (field 2) is in parentheses and may hold spaces
    or parentheses itself, so the fields are counted from its last closing parenthesis."""
    fields = stat[stat.rindex(")") + 2 :].split()
    # After the name: state is field 3, utime field 14, stime field 15 (proc(5)).
    return (int(fields[11]) + int(fields[12])) / _TICKS


def proc_rss_mb(status: str, field: str = "VmRSS") -> float:
    """A memory field (kB) of /proc/<pid>/status, in MiB."""
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0]) / 1024
    raise ValueError(f"no {field} in /proc/<pid>/status")


def pid_cpu_seconds(pid: int) -> float:
    return proc_cpu_seconds(Path(f"/proc/{pid}/stat").read_text())


def pid_rss_mb(pid: int, field: str = "VmRSS") -> float:
    return proc_rss_mb(Path(f"/proc/{pid}/status").read_text(), field)


def child_pids(pid: int) -> list[int]:
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return children


def own_cpu_seconds() -> float:
    """This process (every thread) plus its reaped children (the per-call JVMs)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# -- measuring -------------------------------------------------------------------------------------------------


def clusters(urls: list[dict], count: int, source: str) -> list[dict]:
    """`count` clusters of PER_CLUSTER brokers each, read through `source` (jmx or prometheus)."""
    out: list[dict] = []
    for c in range(count):
        brokers = urls[c * PER_CLUSTER : (c + 1) * PER_CLUSTER]
        if source == "jmx":
            out.append({"name": f"bench-{c}", "brokers": [{"id": b["id"], "jmx_url": b["jmx_url"]} for b in brokers]})
        else:
            out.append(
                {
                    "name": f"bench-{c}",
                    "prometheus": {"preset": "strimzi"},
                    "brokers": [{"id": b["id"], "metrics_url": b["metrics_url"]} for b in brokers],
                }
            )
    return out


@dataclass(frozen=True)
class Cycles:
    brokers: int
    wall: float  # median seconds per cycle
    cpu_per_broker_ms: float  # median
    failed: int  # failed polls over the measured cycles
    seen: int  # connections seen in the last cycle (proves the gauges were read)


def progress(message: str) -> None:
    print(f"[bench] {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def run_cycles(label: str, cluster_list: list[dict], transport: str, cycles: int, double_pid: int) -> Cycles:
    settings = Settings(clusters=cluster_list, collection={"jmx_transport": transport})
    brokers = sum(len(c["brokers"]) for c in cluster_list)
    loop = CollectionLoop(settings)
    try:
        progress(f"{label}: warm-up cycle")
        asyncio.run(loop.run_cycle())  # starts the bridge, opens its connections; page cache for per_call
        # Between cycles the only live child besides the double is the bridge JVM (per-call JVMs have exited).
        live = [pid for pid in child_pids(os.getpid()) if pid != double_pid]
        walls, cpus, failed, seen = [], [], 0, 0
        for n in range(cycles):
            cpu, live_cpu, wall = own_cpu_seconds(), sum(map(pid_cpu_seconds, live)), time.perf_counter()
            snapshot = asyncio.run(loop.run_cycle())
            walls.append(time.perf_counter() - wall)
            cpus.append(own_cpu_seconds() - cpu + sum(map(pid_cpu_seconds, live)) - live_cpu)
            failed += sum(1 for r in snapshot.results if not r.ok)
            seen = sum(c.connections for c in snapshot.clients)
            progress(f"{label}: cycle {n + 1}: {walls[-1]:.2f} s wall, {cpus[-1]:.2f} s CPU")
    finally:
        loop.close()
    return Cycles(brokers, statistics.median(walls), 1000 * statistics.median(cpus) / brokers, failed, seen)


def daemon_rss_mb(cluster_list: list[dict], settle_seconds: float) -> tuple[float, float, float]:
    """(daemon VmRSS, bridge JVM VmRSS, daemon VmHWM) of `serve` polling `cluster_list` after `settle_seconds`."""
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "exporter.yaml"
        config.write_text(yaml.safe_dump({"collection": {"interval_seconds": 5}, "clusters": cluster_list}))
        with running_exporter(config, free_port(), "--log-level", "WARNING") as daemon:
            time.sleep(settle_seconds)
            if daemon.poll() is not None:
                raise SystemExit(f"the exporter daemon exited with code {daemon.returncode}")
            jvms = child_pids(daemon.pid)
            if len(jvms) != 1:
                raise SystemExit(f"expected one bridge JVM under the daemon, found child processes {jvms}")
            return pid_rss_mb(daemon.pid), pid_rss_mb(jvms[0]), pid_rss_mb(daemon.pid, "VmHWM")


# -- the table -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    figure: str
    target: float
    measured: float
    unit: str
    per_call: float | None = None  # the same figure on the per-call path, when measured

    @property
    def passed(self) -> bool:
        return self.measured <= self.target

    def line(self) -> str:
        ratio = f"{self.measured / self.per_call:.3f}" if self.per_call else "-"
        per_call = f"{self.per_call:.3g} {self.unit}" if self.per_call else "-"
        return (
            f"{self.figure:<52} {'<= ' + format(self.target, 'g') + ' ' + self.unit:>12} "
            f"{format(self.measured, '.3g') + ' ' + self.unit:>12} {per_call:>12} {ratio:>8} "
            f"{'PASS' if self.passed else 'FAIL':>5}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20, help="channels (distinct software names) per broker")
    parser.add_argument("--cycles", type=int, default=3, help="measured cycles per figure, after one warm-up")
    args = parser.parse_args()

    progress(f"starting the double: {CLUSTERS * PER_CLUSTER} brokers, {args.clients} clients each")
    double, urls = start_double(CLUSTERS * PER_CLUSTER, args.clients)
    try:
        jmx_50 = clusters(urls, 1, "jmx")
        jmx_500 = clusters(urls, CLUSTERS, "jmx")
        prom_500 = clusters(urls, CLUSTERS, "prometheus")
        bridge_50 = run_cycles("50 brokers, bridge", jmx_50, "bridge", args.cycles, double.pid)
        per_call_50 = run_cycles("50 brokers, per_call", jmx_50, "per_call", max(2, args.cycles - 1), double.pid)
        bridge_500 = run_cycles("500 brokers, bridge", jmx_500, "bridge", args.cycles, double.pid)
        prometheus_500 = run_cycles("500 brokers, prometheus", prom_500, "bridge", args.cycles, double.pid)
        progress("500 brokers: RSS of a serve daemon (interval 5 s) after four cycles")
        daemon_rss, bridge_rss, daemon_peak = daemon_rss_mb(jmx_500, settle_seconds=22)
    finally:
        stop_double(double)

    rows = [
        Row("50 brokers, cycle wall time (bridge)", TARGET_WALL_50, bridge_50.wall, "s", per_call_50.wall),
        Row(
            "CPU per broker-cycle, exporter + bridge (50 brokers)",
            TARGET_CPU_MS,
            bridge_50.cpu_per_broker_ms,
            "ms",
            per_call_50.cpu_per_broker_ms,
        ),
        Row("CPU per broker-cycle, exporter + bridge (500 brokers)", TARGET_CPU_MS, bridge_500.cpu_per_broker_ms, "ms"),
        Row("500 brokers (10 clusters x 50), cycle wall time", TARGET_WALL_500, bridge_500.wall, "s"),
        Row("exporter RSS incl. the bridge JVM, 500 brokers", TARGET_RSS_MB, daemon_rss + bridge_rss, "MB"),
        Row("prometheus source, 500 brokers, cycle wall time", TARGET_PROMETHEUS_500, prometheus_500.wall, "s"),
    ]
    print(
        f"{'figure':<52} {'target':>12} {'measured':>12} {'per_call':>12} {'ratio':>8} {'':>5}\n"
        + "\n".join(row.line() for row in rows)
    )
    print(
        f"\nper_call measured at 50 brokers only (one 500-broker cycle would take minutes). RSS: daemon "
        f"{daemon_rss:.0f} MB (peak {daemon_peak:.0f} MB) + bridge JVM {bridge_rss:.0f} MB. prometheus source CPU "
        f"(exporter only): {prometheus_500.cpu_per_broker_ms:.2f} ms per broker-cycle."
    )
    for label, cycles in (
        ("bridge, 50", bridge_50),
        ("per_call, 50", per_call_50),
        ("bridge, 500", bridge_500),
        ("prometheus, 500", prometheus_500),
    ):
        print(f"{label}: {cycles.failed} failed polls in the measured cycles; {cycles.seen} connections seen")
    failed_polls = any(c.failed for c in (bridge_50, per_call_50, bridge_500, prometheus_500))
    return 0 if all(row.passed for row in rows) and not failed_polls else 1


if __name__ == "__main__":
    raise SystemExit(main())
