"""The JMX bridge JVM alone against three real 4.4.0 brokers: its CPU per broker-read, for one jar or two in turn (or
one jar with and without more JVM options).

Issue 49's bench (`bench_real_brokers.py`) measures the whole daemon at its 3 s cycle, where a change worth a tenth of
the bridge is smaller than what the machine's own drift moves the figure by from one run to the next. This one drives
the bridge as the exporter does (its command line and JVM options, the exporter's own queries, one request per broker
per cycle, answers awaited) and nothing else, on the cluster of `bench_real_brokers.py` (three combined nodes, a
replicated topic, a transactional producer and a read_committed consumer), and alternates the jars run after run
(A B B A A B ...) so that a drift falls on both: each run starts a new bridge, reads `--warmup` cycles, then
measures `--cycles` cycles (utime + stime of the bridge JVM from /proc, per thread group). Prints each run, the mean
per jar and the ratio of each jar's mean to the first's.

    .venv/bin/python bench/bench_bridge_jars.py [--jar old.jar --jar new.jar] [--rounds 3] [--cycles 300]
        [--warmup 150] [--gap 0.1] [--java-option=-XX:...] [--versus-option=-XX:...]

Without `--jar`, the shipped jar alone. With `--versus-option` (one jar only), that jar against itself started with
those options too: the way to weigh a JVM option of the bridge. A jar built from another revision of JmxBridge.java:
`git show REV:exporter/sources/jmx_bridge/jmx-bridge.jar > old.jar`. Everything is on 127.0.0.1 and every process is
stopped by its pid. Takes about two minutes per run with the defaults, plus the cluster's start.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_real_brokers import (
    JMX_PASSWORD,
    JMX_USER,
    Layout,
    cluster_with_clients,
    process_cpu,
    progress,
    thread_cpu,
)
from exporter.config.settings import JavaConfig
from exporter.sources.jmx import QUERIES, JavaRuntime
from exporter.sources.jmx_bridge import BRIDGE_JAR, JmxBridge
from real_kafka import KafkaCluster

DEADLINE_MS = 2000


@dataclass(frozen=True)
class Variant:
    jar: str
    options: tuple[str, ...]  # after the exporter's defaults and --java-option

    @property
    def label(self) -> str:
        return " ".join((self.jar[-50:] if not self.options else Path(self.jar).name, *self.options))


@dataclass(frozen=True)
class Run:
    variant: Variant
    ms_per_read: float
    threads: dict[str, float]  # thread group (workers, compiler, main...) -> CPU seconds in the window


def _group(name: str) -> str:
    if name.startswith("jmx-bridge-work"):
        return "workers"
    if "Compiler" in name:
        return "compiler"
    return "main" if name == "java" else name


def measure(cluster: KafkaCluster, variant: Variant, options: list[str], warmup: int, cycles: int, gap: float) -> Run:
    """One bridge of the variant's jar and options, as the exporter starts it, reading every broker each cycle."""
    # The exporter's own command line (JVM options, RMI deadlines, workers), with `jar` in place of the shipped one.
    jar = variant.jar
    java = JavaRuntime("java", (*JavaConfig().options, *options, *variant.options))
    command = JmxBridge(java, 8, DEADLINE_MS / 1000, 600).command()
    classpath = command.index("-cp") + 1
    command[classpath] = command[classpath].replace(BRIDGE_JAR, jar)
    bridge = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert bridge.stdin is not None and bridge.stdout is not None
    stdin, stdout = bridge.stdin, bridge.stdout
    try:
        while "ready" not in (line := stdout.readline()):
            if not line:
                raise SystemExit(f"the bridge of {jar} exited with code {bridge.wait()}")
        brokers = [(node.node_id, node.jmx_url) for node in cluster.brokers()]
        queries = [query.to_query_string() for query in QUERIES]
        ids = iter(range(1, 1 << 62))

        def cycle() -> None:
            for node_id, url in brokers:
                request = {
                    "id": next(ids),
                    "broker": f"bench/{node_id}",
                    "url": url,
                    "username": JMX_USER,
                    "password": JMX_PASSWORD,
                    "timeout_ms": DEADLINE_MS,
                    "queries": queries,
                }
                stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            for _ in brokers:
                answer = json.loads(stdout.readline())
                if "items" not in answer:
                    raise SystemExit(f"the bridge of {jar} answered {answer}")
            time.sleep(gap)

        for _ in range(warmup):
            cycle()
        before, threads_before = process_cpu(bridge.pid)[0], thread_cpu(bridge.pid)
        for _ in range(cycles):
            cycle()
        after, threads_after = process_cpu(bridge.pid)[0], thread_cpu(bridge.pid)
    finally:
        stdin.close()
        try:
            bridge.wait(10)
        except subprocess.TimeoutExpired:
            bridge.kill()
            bridge.wait()
    groups: collections.defaultdict[str, float] = collections.defaultdict(float)
    for tid, (name, seconds) in threads_after.items():
        groups[_group(name)] += seconds - threads_before.get(tid, (name, 0.0))[1]
    return Run(variant, 1000 * (after - before) / (cycles * len(brokers)), dict(groups))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jar", action="append", help="a bridge jar (repeat to compare; the first is the baseline)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each jar")
    parser.add_argument("--cycles", type=int, default=300, help="measured cycles per run")
    parser.add_argument("--warmup", type=int, default=150, help="cycles before each run's window")
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between a cycle's answers and the next")
    parser.add_argument("--java-option", action="append", default=[], help="one more JVM option of every bridge")
    parser.add_argument(
        "--versus-option",
        action="append",
        default=[],
        help="a JVM option of a second variant of the one jar, as --versus-option=-XX:... (repeat for more)",
    )
    args = parser.parse_args()
    jars = [str(Path(jar).resolve()) for jar in args.jar or [BRIDGE_JAR]]
    for jar in jars:
        if not Path(jar).is_file():
            parser.error(f"--jar {jar}: no such file")
    if args.versus_option and len(jars) > 1:
        parser.error("--versus-option compares one jar with itself: give one --jar at the most")
    variants = [Variant(jar, ()) for jar in jars]
    if args.versus_option:
        variants.append(Variant(jars[0], tuple(args.versus_option)))
    if args.rounds < 1 or args.cycles < 1 or args.warmup < 0 or args.gap < 0:
        parser.error("--rounds and --cycles must be at least 1, --warmup and --gap at least 0")

    runs: list[Run] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-bridge-jars-") as tmp,
        cluster_with_clients(Path(tmp) / "cluster", 3, Layout("4.4.0", zookeeper=False)) as cluster,
    ):
        for round_ in range(args.rounds):
            # A B, then B A: a machine that drifts during the bench moves every variant alike.
            for variant in variants if round_ % 2 == 0 else variants[::-1]:
                run = measure(cluster, variant, args.java_option, args.warmup, args.cycles, args.gap)
                runs.append(run)
                shares = ", ".join(
                    f"{n} {s:.2f} s" for n, s in sorted(run.threads.items(), key=lambda t: -t[1]) if s >= 0.005
                )
                figure = f"{run.ms_per_read:.3f} ms per broker-read"
                progress(f"round {round_ + 1}, {variant.label}: {figure} ({shares})")

    print(f"\n{'jar':<50} {'runs (ms of bridge CPU per broker-read)':<42} {'mean':>7} {'ratio':>6}")
    baseline = None
    for variant in variants:
        figures = [run.ms_per_read for run in runs if run.variant == variant]
        mean = sum(figures) / len(figures)
        baseline = baseline or mean
        print(f"{variant.label:<50} {' '.join(f'{f:.3f}' for f in figures):<42} {mean:7.3f} {mean / baseline:6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
