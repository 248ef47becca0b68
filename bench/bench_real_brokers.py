"""Issue 37's target on real brokers: the exporter's CPU per broker and cycle against Apache Kafka 4.4.0.

A three-node KRaft cluster of 4.4.0 (every node combined, remote JMX with a password; `--nodes` for more, `--release`
for another release, `--zookeeper` for ZooKeeper-mode brokers beside a ZooKeeper of the release's own), a topic
replicated on three nodes (replication factor 3), and in a process of its own (so its CPU is not the exporter's) a
kafka-python transactional producer committing one transaction a second and a read_committed consumer in a group:
the brokers' own channels (replica fetchers, transaction markers, AddPartitionsToTxn) all hold connections, as in
production. With `--lingering N`, N clients of distinct versions connect and leave first: their gauges stay at 0, as
on a broker that has seen clients come and go for months.

Then a real `kafka-client-exporter serve` daemon, with a `--interval` (3 s) cycle, in three configurations:

- `jmx`: the brokers listed with their JMX URLs, no bootstrap_servers (the JMX source only, new channel reads
  included);
- `protocol`: bootstrap_servers only (discovery, ApiVersions with the brokers' DescribeConfigs, client metrics);
- `together`: both.

For each, after `--warmup` cycles (40 by default, two minutes: the bridge JVM's compiler has done most of its work;
with 3 its compilations still fall in the window, about 2.5 ms more; it is still at work after 40, a twentieth of the
figure, and done after `--warmup 200`, ten minutes, as in a daemon that runs for days), the daemon's CPU over a
window of `--cycles` completed cycles: utime + stime of the daemon (all its threads), of its live children (the JMX
bridge JVM) and of the children it reaped in the window (/proc/<pid>/stat fields 14-17), divided by brokers x cycles.
The cycles are counted from `kafka_client_exporter_snapshot_timestamp_seconds` on /metrics: the window opens when a
new snapshot is published and closes when the `--cycles`-th after it is (a cycle here is much shorter than the
interval, so the cycles start one interval apart; the count is the timestamps' distance over the interval, checked to
be whole). /metrics is read about every 0.25 s only around the window's two ends, a handful of requests per window:
they are counted, a Prometheus scrape costing about as much. Failed polls in the window
(kafka_client_exporter_errors_total) are reported and fail the run. The warm-up's own figure (its cycles after the
first, the same sum) is printed too: what the daemon's first minutes cost.

With `--single` (the default), the same three figures on a one-node cluster of the same kind after the main one is
stopped. Prints the table (figure, target, measured, PASS/FAIL), the ratios jmx/together and protocol/together,
the load average before and after, and with `--threads` the CPU of each thread of the daemon and the bridge. Exit
code 1 when the main cluster's `together` figure misses the target. Everything is on 127.0.0.1 and every process is
stopped by its pid. Takes about twelve minutes on 2 cores (four with `--no-single --only together`).

    .venv/bin/python bench/bench_real_brokers.py [--cycles 20] [--warmup 40] [--interval 3] [--no-single] [--threads]
        [--nodes 3] [--release 4.4.0] [--zookeeper] [--lingering 0] [--java-option=OPTION ...]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

# The double and real_kafka are not installed (the wheel ships exporter/ only): import them from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter.config.settings import JavaConfig
from harness.clients import ClientKind, start_client
from harness.exporter_process import checkout_env, running_exporter
from harness.ports import free_port
from real_kafka import JmxAuth, KafkaCluster, NodeOptions

RELEASE = "4.4.0"
TARGET_MS = 10.0
JMX_USER, JMX_PASSWORD = "monitor", "bench-Jmx-Secret-37"
TOPIC = "bench-replicated"
CONFIGURATIONS = ("jmx", "protocol", "together")
_TICKS = os.sysconf("SC_CLK_TCK")

#: The clients, in a process of their own: a transactional producer (one transaction a second) and a consumer in a
#: group reading committed records. Prints "ready" once a transaction is committed and the consumer is assigned;
#: runs until its stdin closes.
CLIENTS = textwrap.dedent(
    """
    import sys, threading, time
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    bootstrap, topic, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3])
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-admin", request_timeout_ms=30000)
    admin.create_topics([NewTopic(topic, partitions, int(sys.argv[4]))])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="bench-producer", transactional_id="bench-txn")
    producer.init_transactions()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, client_id="bench-consumer", group_id="bench-group",
                             isolation_level="read_committed", auto_offset_reset="earliest")
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    ready = False
    n = 0
    while not stop.is_set():
        producer.begin_transaction()
        for p in range(partitions):
            producer.send(topic, value=b"x" * 100, partition=p)
        producer.commit_transaction()
        n += len(consumer.poll(timeout_ms=500).values())
        if not ready and consumer.assignment():
            print("ready", flush=True)
            ready = True
        stop.wait(1.0)
    consumer.close()
    producer.close()
    """
)


def progress(message: str) -> None:
    print(f"[bench] {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- /proc -----------------------------------------------------------------------------------------------------


def _stat_fields(stat: str) -> list[str]:
    """The fields of a /proc/<pid>/stat line after the command name (which may hold spaces and parentheses):
    index 0 is field 3 (state), so utime (field 14) is index 11."""
    return stat[stat.rindex(")") + 2 :].split()


def _comm(stat: str) -> str:
    return stat[stat.index("(") + 1 : stat.rindex(")")]


def process_cpu(pid: int) -> tuple[float, float]:
    """(utime + stime, cutime + cstime) of a process, in seconds: its threads, and the children it has reaped."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat").read_text())
    return (int(fields[11]) + int(fields[12])) / _TICKS, (int(fields[13]) + int(fields[14])) / _TICKS


def child_pids(pid: int) -> list[int]:
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            children += [int(c) for c in (task / "children").read_text().split()]
    return children


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Each thread of a process: tid -> (its name, utime + stime seconds)."""
    threads: dict[int, tuple[str, float]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            stat = (task / "stat").read_text()
            fields = _stat_fields(stat)
            threads[int(task.name)] = (_comm(stat), (int(fields[11]) + int(fields[12])) / _TICKS)
    return threads


@dataclass(frozen=True)
class CpuSample:
    own: float  # the daemon's threads
    reaped: float  # children the daemon has waited for
    children: dict[int, float]  # live children (the bridge JVM) -> their threads' CPU
    threads: dict[int, dict[int, tuple[str, float]]]  # pid -> thread_cpu(pid), daemon and children


def sample_cpu(pid: int) -> CpuSample:
    own, reaped = process_cpu(pid)
    children = {child: process_cpu(child)[0] for child in child_pids(pid)}
    threads = {p: thread_cpu(p) for p in (pid, *children)}
    return CpuSample(own, reaped, children, threads)


# -- /metrics --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scrape:
    timestamp: float  # kafka_client_exporter_snapshot_timestamp_seconds
    errors: float  # sum of kafka_client_exporter_errors_total
    up: dict[tuple[str, str], float]  # (broker, source) -> kafka_client_exporter_up
    channel_series: int  # kafka_broker_outbound_connections samples (the brokers' own channels were read)
    channels_read: int  # brokers with kafka_client_exporter_broker_channels_read 1


#: What Prometheus sends (OpenMetrics first, gzip): the exporter pre-renders the formats its scrapers ask for, so the
#: window's reads must not be of a format no Prometheus asks for.
PROMETHEUS_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,"
    "text/plain;version=0.0.4;q=0.3,*/*;q=0.1",
    "Accept-Encoding": "gzip",
}


def scrape(base: str) -> Scrape | None:
    request = urllib.request.Request(f"{base}/metrics", headers=PROMETHEUS_HEADERS)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            text = gzip.decompress(response.read()).decode()
    except OSError:
        return None
    timestamp, errors, up, channel_series, channels_read = 0.0, 0.0, {}, 0, 0
    for family in openmetrics_families(text):
        for sample in family.samples:
            if sample.name == "kafka_client_exporter_snapshot_timestamp_seconds":
                timestamp = sample.value
            elif sample.name == "kafka_client_exporter_errors_total":
                errors += sample.value
            elif sample.name == "kafka_client_exporter_up":
                up[(sample.labels.get("broker", ""), sample.labels.get("source", ""))] = sample.value
            elif sample.name == "kafka_broker_outbound_connections":
                channel_series += 1
            elif sample.name == "kafka_client_exporter_broker_channels_read" and sample.value == 1:
                channels_read += 1
    return Scrape(timestamp, errors, up, channel_series, channels_read) if timestamp else None


def next_snapshot(base: str, after: float, deadline: float, daemon: subprocess.Popen[bytes]) -> tuple[Scrape, int]:
    """The first scrape whose snapshot is newer than ``after``, and how many requests it took."""
    requests = 0
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise SystemExit(f"the exporter daemon exited with code {daemon.returncode}")
        requests += 1
        current = scrape(base)
        if current is not None and current.timestamp > after:
            return current, requests
        time.sleep(0.25)
    raise SystemExit(f"no new snapshot on {base} after {after}")


def cycles_later(
    base: str, since: Scrape, cycles: int, interval: float, daemon: subprocess.Popen[bytes]
) -> tuple[Scrape, int]:
    """The snapshot ``cycles`` intervals after ``since``, slept through and then read about every 0.25 s."""
    time.sleep(max(0.0, cycles * interval - 1.0))
    return next_snapshot(base, since.timestamp + (cycles - 0.5) * interval, time.monotonic() + 3 * interval, daemon)


# -- one measurement -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    brokers: int
    cycles: int
    window: float  # wall seconds between the two snapshots
    cpu: float  # seconds: daemon + children
    bridge_cpu: float  # seconds of that in the live children (the bridge JVM)
    requests: int  # /metrics requests inside the window
    failed: float  # failed polls in the window
    up: dict[tuple[str, str], float]
    channel_series: int
    channels_read: int
    threads: list[tuple[str, float]]  # (process/thread name, seconds), highest first
    warmup_cycles: int  # the cycles between the first snapshot and the window's opening one
    warmup_cpu: float  # seconds: daemon + children over those cycles

    @property
    def ms_per_broker_cycle(self) -> float:
        return 1000 * self.cpu / (self.brokers * self.cycles)

    @property
    def warmup_ms_per_broker_cycle(self) -> float:
        return 1000 * self.warmup_cpu / (self.brokers * max(1, self.warmup_cycles))


def exporter_cluster(cluster: KafkaCluster, configuration: str) -> dict[str, object]:
    entry: dict[str, object] = {"name": f"bench-{len(cluster.nodes)}-nodes"}
    if configuration in ("protocol", "together"):
        entry["bootstrap_servers"] = cluster.bootstrap().split(",")
    if configuration in ("jmx", "together"):
        entry["brokers"] = [{"id": node.node_id, "jmx_url": node.jmx_url} for node in cluster.brokers()]
        entry["jmx"] = {"username": JMX_USER, "password": JMX_PASSWORD}
    return entry


def thread_deltas(before: CpuSample, after: CpuSample, daemon: int) -> list[tuple[str, float]]:
    rows = []
    for pid, threads in after.threads.items():
        kind = "daemon" if pid == daemon else f"child {pid}"
        for tid, (name, seconds) in threads.items():
            start = before.threads.get(pid, {}).get(tid, (name, 0.0 if pid in before.threads else seconds))[1]
            if seconds - start > 0:
                rows.append((f"{kind} {tid} {name}", seconds - start))
    return sorted(rows, key=lambda row: -row[1])


def cpu_between(before: CpuSample, after: CpuSample) -> tuple[float, float]:
    """(daemon + children, of it the live and new children) CPU seconds between two samples of one daemon."""
    live = sum(after.children.get(pid, 0.0) - seconds for pid, seconds in before.children.items())
    new_children = sum(seconds for pid, seconds in after.children.items() if pid not in before.children)
    return (after.own - before.own) + (after.reaped - before.reaped) + live + new_children, live + new_children


def measure(
    directory: Path,
    cluster: KafkaCluster,
    configuration: str,
    interval: float,
    warmup: int,
    cycles: int,
    java_options: list[str],
) -> Measured:
    brokers = len(list(cluster.brokers()))
    config = directory / f"exporter-{len(cluster.nodes)}-{configuration}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "collection": {"interval_seconds": interval},
                "clusters": [exporter_cluster(cluster, configuration)],
                # Added to the defaults, not in their place: the figure compares with one run without the option.
                "java": {"options": [*JavaConfig().options, *java_options]},
            }
        )
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    label = f"{len(cluster.nodes)} node(s), {configuration}"
    with running_exporter(config, port) as daemon:
        first, _ = next_snapshot(base, 0.0, time.monotonic() + 60 + 2 * interval, daemon)
        at_first = sample_cpu(daemon.pid)
        progress(f"{label}: first cycle done; {warmup} warm-up cycles")
        # Read like the window (a handful of /metrics requests, not four a second): the two figures compare.
        warm = cycles_later(base, first, warmup, interval, daemon)[0] if warmup else first
        # The window opens as the snapshot after the warm-up is published (its CPU sample right after it).
        opening, _ = next_snapshot(base, warm.timestamp, time.monotonic() + 3 * interval, daemon)
        before = sample_cpu(daemon.pid)
        progress(f"{label}: window of {cycles} cycles")
        closing, requests = cycles_later(base, opening, cycles, interval, daemon)
        after = sample_cpu(daemon.pid)
    counted = (closing.timestamp - opening.timestamp) / interval
    if abs(counted - round(counted)) > 0.2:
        progress(f"{label}: snapshots {counted:.2f} intervals apart: a cycle took longer than the interval?")
    if set(after.children) != set(before.children):
        progress(f"{label}: children changed in the window: {sorted(before.children)} -> {sorted(after.children)}")
    cpu, bridge_cpu = cpu_between(before, after)
    measured = Measured(
        brokers=brokers,
        cycles=round(counted),
        window=closing.timestamp - opening.timestamp,
        cpu=cpu,
        bridge_cpu=bridge_cpu,
        requests=requests,
        failed=closing.errors - opening.errors,
        up=closing.up,
        channel_series=closing.channel_series,
        channels_read=closing.channels_read,
        threads=thread_deltas(before, after, daemon.pid),
        warmup_cycles=round((opening.timestamp - first.timestamp) / interval),
        warmup_cpu=cpu_between(at_first, before)[0],
    )
    progress(
        f"{label}: {measured.cpu:.2f} s CPU over {measured.cycles} cycles ({measured.window:.1f} s): "
        f"{measured.ms_per_broker_cycle:.2f} ms per broker-cycle; load average {load_average()}"
    )
    return measured


# -- the cluster and its clients -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    release: str
    zookeeper: bool

    def describe(self, nodes: int) -> str:
        return f"{nodes} x {self.release}{' ZooKeeper mode' if self.zookeeper else ''}"


def leave_lingering_gauges(cluster: KafkaCluster, count: int) -> None:
    """``count`` kcat clients of distinct versions, connected to every broker and gone again: Kafka keeps each one's
    gauge at 0 on every processor it used until its suite of 100 needs the room, as on a broker that has seen
    clients come and go for months."""
    progress(f"connecting and closing {count} clients of distinct versions (gauges that linger at 0)")
    for batch in range(0, count, 10):
        clients = [
            start_client(ClientKind.KCAT, cluster.bootstrap(), software_name="departed-app", software_version=f"1.{n}")
            for n in range(batch, min(batch + 10, count))
        ]
        for client in clients:
            client.wait_ready()
        for client in clients:
            client.close()


@contextlib.contextmanager
def cluster_with_clients(directory: Path, nodes: int, layout: Layout, lingering: int = 0) -> Iterator[KafkaCluster]:
    """A started cluster of ``nodes`` nodes (combined KRaft nodes, or ZooKeeper-mode brokers) with the clients'
    process running against it, and ``lingering`` gone clients' gauges left at 0."""
    cluster = KafkaCluster(
        directory,
        layout.release,
        nodes=nodes,
        options=NodeOptions(jmx_auth=JmxAuth(JMX_USER, JMX_PASSWORD)),
        zookeeper=layout.zookeeper,
    )
    progress(f"starting a cluster of {layout.describe(nodes)}")
    with cluster:
        partitions = 3
        command = [sys.executable, "-c", CLIENTS, cluster.bootstrap(), TOPIC, str(partitions), str(min(3, nodes))]
        clients = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=checkout_env()
        )
        try:
            assert clients.stdout is not None
            line = clients.stdout.readline()  # "ready", or "" when it died
            if line.strip() != b"ready":
                raise SystemExit(f"the clients' process did not start (exit code {clients.wait(10)})")
            progress(f"clients running (pid {clients.pid}): transactional producer and read_committed consumer")
            leave_lingering_gauges(cluster, lingering)
            yield cluster
        finally:
            if clients.stdin is not None:
                with contextlib.suppress(BrokenPipeError):
                    clients.stdin.close()
            try:
                clients.wait(15)
            except subprocess.TimeoutExpired:
                clients.kill()
                clients.wait()


# -- the table -------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=20, help="measured cycles per configuration")
    parser.add_argument("--warmup", type=int, default=40, help="cycles before the window (after the first)")
    parser.add_argument("--interval", type=float, default=3.0, help="the exporter's collection interval, seconds")
    parser.add_argument("--single", action=argparse.BooleanOptionalAction, default=True, help="also a one-node cluster")
    parser.add_argument("--only", choices=CONFIGURATIONS, action="append", help="measure these configurations only")
    parser.add_argument("--threads", action="store_true", help="print each thread's CPU in the window")
    parser.add_argument("--nodes", type=int, default=3, help="nodes of the main cluster (the target's figure)")
    parser.add_argument("--release", default=RELEASE, help="the brokers' Kafka release (fetched by the set-up)")
    parser.add_argument("--zookeeper", action="store_true", help="ZooKeeper-mode brokers (releases 2.8 to 3.9)")
    parser.add_argument(
        "--java-option",
        action="append",
        default=[],
        metavar="OPTION",
        help="a JVM option of the JMX bridge after the exporter's defaults, as --java-option=-XX:... (repeat for more)",
    )
    parser.add_argument(
        "--lingering", type=int, default=0, help="clients of distinct versions connected and gone before the window"
    )
    args = parser.parse_args()
    if args.nodes < 1:
        parser.error(f"--nodes {args.nodes}: a cluster needs at least one node")
    configurations = tuple(args.only or CONFIGURATIONS)
    layout = Layout(args.release, args.zookeeper)

    loads = [load_average()]
    results: dict[tuple[int, str], Measured] = {}
    with tempfile.TemporaryDirectory(prefix="bench-real-brokers-") as tmp:
        for nodes in (args.nodes, 1) if args.single and args.nodes > 1 else (args.nodes,):
            with cluster_with_clients(Path(tmp) / f"cluster-{nodes}", nodes, layout, args.lingering) as cluster:
                for configuration in configurations:
                    results[(nodes, configuration)] = measure(
                        Path(tmp), cluster, configuration, args.interval, args.warmup, args.cycles, args.java_option
                    )
                    loads.append(load_average())

    print(f"\n{'figure':<58} {'target':>10} {'measured':>10} {'':>5}")
    for (nodes, configuration), m in results.items():
        passed = m.ms_per_broker_cycle <= TARGET_MS
        print(
            f"{f'CPU per broker-cycle, {layout.describe(nodes)}, {configuration}':<58} {f'<= {TARGET_MS:g} ms':>10} "
            f"{f'{m.ms_per_broker_cycle:.2f} ms':>10} {'PASS' if passed else 'FAIL':>5}"
        )
    print()
    for nodes in sorted({n for n, _ in results}, reverse=True):
        together = results.get((nodes, "together"))
        for part in ("jmx", "protocol"):
            if together is not None and (nodes, part) in results:
                ratio = results[(nodes, part)].ms_per_broker_cycle / together.ms_per_broker_cycle
                print(f"{nodes} node(s): {part}/together = {ratio:.2f}")
    print()
    for (nodes, configuration), m in results.items():
        down = sorted(f"{broker}/{source}" for (broker, source), up in m.up.items() if up != 1)
        print(
            f"{nodes} node(s), {configuration}: {m.cycles} cycles in {m.window:.1f} s, {m.cpu:.2f} s CPU of which "
            f"the bridge JVM {m.bridge_cpu:.2f} s; {m.requests} /metrics requests in the window; {m.failed:g} failed "
            f"polls; "
            f"{len(m.up)} up series, down: {down or 'none'}; {m.channel_series} outbound-connection series, "
            f"{m.channels_read} brokers with channels read; the {m.warmup_cycles} warm-up cycles before the window "
            f"(the first one's excluded) {m.warmup_cpu:.2f} s, {m.warmup_ms_per_broker_cycle:.2f} ms per broker-cycle"
        )
    print(f"\nload average (1, 5, 15 min) at the start and after each figure: {' | '.join(loads)}")
    if args.threads:
        for (nodes, configuration), m in results.items():
            print(f"\nthreads, {nodes} node(s), {configuration} (CPU seconds in the window):")
            for name, seconds in m.threads[:12]:
                print(f"  {seconds:7.2f}  {name}")
    together = results.get((args.nodes, "together"))
    failed = any(m.failed for m in results.values())
    return 0 if together is not None and together.ms_per_broker_cycle <= TARGET_MS and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
