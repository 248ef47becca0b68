"""Issue 38, item 3: what each request-log mode costs a real broker, on Apache Kafka 3.9.2 and 4.4.0.

The four modes of ``kafka.request.logger``:

- ``off``: WARN (Kafka's shipped level: nothing is logged);
- ``INFO only``: requests in deprecated API versions only (3.9.1 and later; 4.x has no deprecated versions left);
- ``identities + INFO``: DEBUG, with the appender filters shipped in broker-config/ keeping the lines that say who
  a client is (ApiVersions, sent once per connection, and Metadata: log_kinds.IDENTITY_API_KEYS) and the INFO lines;
- ``full DEBUG``: a line per request.

Per release, two one-node KRaft brokers on 127.0.0.1 (real_kafka.KafkaCluster), with Kafka's own production JVM
options (``--jvm kafka``: bin/kafka-server-start.sh's 1 GB heap, kafka-run-class.sh's G1 flags, C2 as in
production): one started with the shipped filters (LogKind.IDENTITIES_AND_INFO), one with full DEBUG. The
filtered broker's three modes are one JVM whose request logger is switched **at run time**, with no restart, through
Kafka's dynamic broker loggers (IncrementalAlterConfigs on the BROKER_LOGGER resource: what ``kafka-configs.sh
--alter --entity-type broker-loggers --entity-name <id> --add-config kafka.request.logger=LEVEL`` sends). That
checks issue 38's question too: after each switch the level is read back (DescribeConfigs), and each window's new
lines must be what its mode writes (off: none; INFO only: no DEBUG line; identities + INFO: no DEBUG line but
ApiVersions and Metadata ones; over all of a mode's windows, on 3.9.2, INFO lines for the deprecated requests
sent, and as many ApiVersions lines as connections opened). The full-DEBUG broker is switched between WARN and
DEBUG the same way, so that full DEBUG is compared with ``off`` of its own JVM. At the end, no request line may be
in server.log.

Two loads (bench/request_log_load.py, a process of its own), each at a set rate, the same in every mode:

- ``mix``: batched produce (``linger.ms=10``, about ten records per request), a consumer group fetching, metadata
  (the clients' own refreshes, at librdkafka's default every five minutes, and the short-lived connections' below);
- ``tiny``: one-record Produce requests (``linger.ms=0``, ``acks=1``), the worst case for a per-request cost;

plus, in both, ``--connections`` short-lived connections a second (ApiVersions v3, Metadata, close; on 3.9.2 every
fourth also sends DescribeConfigs v0, deprecated there, so that INFO lines exist).

First, per release, ``--warmup`` seconds with every load against both brokers, with ``--warmup-scale`` times its
producers and rate, while their loggers go through the levels: C2 compiles a method once it has run often enough,
which at the measured rates takes minutes, and a branch first taken inside a window would cost a deoptimisation
there. Then per load and broker, after ``--rewarm`` seconds for the load's clients to connect, ``--seconds`` per
mode measured in windows of ``--slot`` seconds, the modes alternating window by window (forwards in one cycle,
backwards in the next), each window opening ``--settle`` seconds after its switch: the modes compared run back to
back under the same background load, whatever else the shared machine does. Per window:

- **broker CPU**: utime + stime of the broker's JVM, all its threads (request handlers, network, GC, JIT), read to
  the nanosecond from the kernel's process CPU clock, which /proc/<pid>/stat rounds to 10 ms ticks (both are
  recorded). Process CPU time, not wall time: the machine's 2 cores are shared with other work. The GC and JIT
  compiler threads' share is shown apart, and the CPU without the JIT's (what compiling left over from the warm-up
  adds to whichever window it falls in) beside it; the targets judge the CPU with it;
- **requests**: counted by the broker, ``kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*,version=*``
  Count summed (but FetchConsumer and FetchFollower, which count a Fetch again; a combined node's controller
  requests included), read over JMX through the project's JMX bridge
  (one long-lived connection: a read takes milliseconds, so the count and the CPU cover the same window);
- **connections opened**: ``kafka.server:type=socket-server-metrics,listener=*,networkProcessor=*``
  connection-creation-total, summed;
- **request log**: the bytes kafka-request.log grew by (it rolls at 100 GB, i.e. never here), scaled to an hour,
  and its new lines by level and API key.

Prints, per release and load, a table (CPU seconds per 100k requests, against ``off`` of the same JVM, log bytes
per hour, lines per connection opened), the CPU ratios (of the sums, and the per-cycle pairs' mean and standard
error), what the bytes ratio depends on, whether the runtime switch works with the filters in place, and PASS/FAIL
against issue 38's targets: the identities + INFO log at most 1 % of full DEBUG's bytes, its CPU within 5 % of
INFO only's. Writes every window as JSON (``--json``, by default under the git-ignored test-artifacts/). Exit code 0
when every target is met, 1 when one is missed, 2 when a mode did not behave as expected (its figures are then not
those of the mode they name). About nine minutes on 2 cores with the defaults; every process is stopped by its pid.

    PYTHONPATH=$PWD .venv/bin/python -m bench.bench_request_log_modes [--seconds 15] [--slot 3] [--warmup 60]
        [--warmup-scale 2] [--rate 2000] [--records 4000] [--connections 2] [--releases 3.9.2 4.4.0]
        [--loads mix tiny] [--jvm kafka]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# real_kafka, the double and the bench are not installed (the wheel ships exporter/ only): import from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka.admin import KafkaAdminClient, NewTopic

from bench.request_log_load import RunningLoad, running_load
from exporter.request_logs.log_kinds import IDENTITY_API_KEYS, TITLES, LogKind
from exporter.sources.jmx import JavaRuntime
from exporter.sources.jmx_bridge import JmxBridge
from harness.exporter_process import checkout_env
from real_kafka import KafkaCluster, KafkaNode, NodeOptions, start_clusters
from real_kafka.broker import DEFAULT_JVM_OPTIONS
from real_kafka.broker_loggers import set_logger_level
from real_kafka.distribution import KRAFT_RELEASES

ROOT = Path(__file__).resolve().parents[1]
LOADS = ("mix", "tiny")
#: Kafka's own start scripts: bin/kafka-server-start.sh sets KAFKA_HEAP_OPTS, bin/kafka-run-class.sh
#: KAFKA_JVM_PERFORMANCE_OPTS (its MaxInlineLevel=15 is Java 17's default). The project's test options (C1 only,
#: serial GC) would price a line's JSON at what an unoptimised JVM pays, not at what production pays.
KAFKA_JVM_OPTIONS: tuple[str, ...] = (
    "-Xmx1G",
    "-Xms1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
    # Not Kafka's: keeps the JIT's compiler threads alive once started (they idle when done), so that the JIT
    # column counts all their CPU; by default the JVM lets idle ones exit, and their CPU with them.
    "-XX:-UseDynamicNumberOfCompilerThreads",
)
JVMS = {"kafka": KAFKA_JVM_OPTIONS, "test": tuple(DEFAULT_JVM_OPTIONS)}
#: Never rolled within a run: a window's bytes are the file's growth.
NO_ROLL_BYTES = 100 * 1024**3
BYTES_TARGET = 0.01
CPU_TARGET = 0.05
_TICKS = os.sysconf("SC_CLK_TCK")
API_VERSIONS_KEY = 18
_API_NAMES = {18: "ApiVersions", 3: "Metadata"}
IDENTITY_NAMES = " and ".join(_API_NAMES.get(key, f"API key {key}") for key in IDENTITY_API_KEYS)
#: RequestsPerSec meters that count a Fetch a second time, by who sent it (RequestChannel's fetchMetricNames).
FETCH_SUBSETS = frozenset({"FetchConsumer", "FetchFollower"})
#: A request line of the layout ``[%d] %p %m (%c)%n``: its level and its request header's API key.
_LINE = re.compile(r'^\[[^]]*\] (?P<level>[A-Z]+) Completed request:\{.*?"requestApiKey":(?P<key>\d+),')


@dataclass(frozen=True)
class Mode:
    key: str
    title: str
    level: str  # the request logger's level in this mode
    filtered: bool  # on the broker started with the shipped filters (else on the full-DEBUG one)


OFF = Mode("off", "off (WARN)", "WARN", True)
INFO_ONLY = Mode("info", "INFO only", "INFO", True)
FILTERED = Mode("filtered", TITLES[LogKind.IDENTITIES_AND_INFO], "DEBUG", True)
FULL = Mode("full", "full DEBUG", "DEBUG", False)
FULL_OFF = Mode("full_off", "off (full-DEBUG JVM)", "WARN", False)
MODES = (OFF, INFO_ONLY, FILTERED, FULL, FULL_OFF)
#: One cycle of each broker, forwards in even cycles and backwards in odd ones: the modes compared (INFO only and
#: identities + INFO; off and full DEBUG) are neighbours, each as often before as after the other.
FILTERED_CYCLE = (OFF, INFO_ONLY, FILTERED)
FULL_CYCLE = (FULL_OFF, FULL)


def progress(message: str) -> None:
    print(f"[bench] {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- the broker's CPU ------------------------------------------------------------------------------------------


def process_cpu(pid: int) -> float:
    """utime + stime of a process, all its threads (exited ones included), in seconds, to the nanosecond: the
    kernel's process CPU clock (clock_getcpuclockid: CPUCLOCK_SCHED of the thread group, encoded as
    ``~pid << 3 | 2``), which /proc/<pid>/stat's utime and stime split and round to 10 ms ticks. A 3 s window of
    the tiny load holds about 40 ticks: the ticks alone would be a 2-3 % error per window."""
    return time.clock_gettime((~pid << 3) | 2)


def stat_cpu(pid: int) -> float:
    """utime + stime from /proc/<pid>/stat (fields 14 and 15), in seconds: the cross-check of process_cpu."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def thread_groups(pid: int) -> dict[str, float]:
    """CPU seconds of the JVM's garbage collector and JIT compiler threads (by their names; schedstat's on-CPU
    nanoseconds): where a mode's cost lands besides building and writing lines, and whether the JIT was still
    compiling in a window. Live threads only (the ``kafka`` JVM options keep the compiler threads alive): a
    diagnosis, not a figure."""
    totals = {"gc": 0.0, "jit": 0.0}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            on_cpu = int((task / "schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
        if name.startswith(("GC Thread", "G1 ")):
            totals["gc"] += on_cpu
        elif "CompilerThre" in name:
            totals["jit"] += on_cpu
    return totals


# -- the broker's own counts, over JMX -------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerCounts:
    requests: Counter[str]  # API name -> requests completed
    records_in: int  # MessagesInPerSec: records appended
    connections: int  # connections accepted, every listener


class JmxCounters:
    """The project's JMX bridge (exporter/sources/jmx_bridge), spoken to directly: one JVM that keeps a JMX
    connection per broker open, so that a read takes milliseconds instead of a JVM start, and the requests counted
    and the CPU measured cover the same window."""

    QUERIES = (
        "kafka.network:type=RequestMetrics,name=RequestsPerSec,*/Count",
        "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec/Count",
        "kafka.server:type=socket-server-metrics,listener=*,networkProcessor=*/connection-creation-total",
    )

    def __init__(self) -> None:
        command = JmxBridge(JavaRuntime(), workers=1, deadline_seconds=10.0, idle_seconds=3600.0).command()
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self._ids = 0

    def read(self, node: KafkaNode) -> BrokerCounts:
        assert self.process.stdin is not None and self.process.stdout is not None
        self._ids += 1
        request = {
            "id": self._ids,
            "broker": f"bench/{node.release}/{node.directory.name}",
            "url": node.jmx_url,
            "username": None,
            "password": None,
            "timeout_ms": 10000,
            "queries": list(self.QUERIES),
        }
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        answer: dict[str, Any] = json.loads(line, strict=False) if line else {"error": "the bridge exited"}
        items: list[dict[str, Any]] | None = answer.get("items")
        if items is None:
            raise RuntimeError(f"JMX read of {node.jmx_url} failed: {answer}")
        requests: Counter[str] = Counter()
        records_in = connections = 0
        for item in items:
            name, value = item["mBeanName"], item.get("value") or 0
            api = re.search(r"request=([^,]+)", name)
            if "name=RequestsPerSec" in name and api and api.group(1) not in FETCH_SUBSETS:
                requests[api.group(1)] += int(value)
            elif "MessagesInPerSec" in name:
                records_in += int(value)
            elif item["attribute"] == "connection-creation-total":
                connections += round(float(value))
        return BrokerCounts(requests, records_in, connections)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# -- the request log -------------------------------------------------------------------------------------------


@dataclass
class LogLines:
    """New request-log lines by level, the DEBUG ones split into those the shipped filters keep (ApiVersions and
    Metadata: log_kinds.IDENTITY_API_KEYS) and the rest."""

    bytes: int = 0
    api_versions_debug: int = 0
    metadata_debug: int = 0  # the identity lines that are not ApiVersions
    other_debug: int = 0
    info: int = 0
    unreadable: int = 0

    @property
    def identity_debug(self) -> int:
        return self.api_versions_debug + self.metadata_debug

    @property
    def debug(self) -> int:
        return self.identity_debug + self.other_debug

    @property
    def lines(self) -> int:
        return self.debug + self.info + self.unreadable


def new_lines(path: Path, start: int, end: int) -> LogLines:
    result = LogLines(bytes=end - start)
    if end <= start:
        return result
    with path.open("rb") as file:
        file.seek(start)
        data = file.read(end - start)
    for raw in data.splitlines():
        match = _LINE.match(raw.decode("utf-8", "replace"))
        if match is None or match["level"] not in ("DEBUG", "INFO"):
            result.unreadable += 1
        elif match["level"] == "INFO":
            result.info += 1
        elif int(match["key"]) == API_VERSIONS_KEY:
            result.api_versions_debug += 1
        elif int(match["key"]) in IDENTITY_API_KEYS:
            result.metadata_debug += 1
        else:
            result.other_debug += 1
    return result


def log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


# -- one broker under test -------------------------------------------------------------------------------------


@dataclass
class Window:
    """One measured slot: a mode, on one broker, under one load, in one cycle."""

    release: str
    load: str
    mode: str
    cycle: int
    level_read_back: str
    seconds: float
    cpu_seconds: float
    stat_cpu_seconds: float
    gc_seconds: float
    jit_seconds: float
    requests: dict[str, int]
    records_in: int
    connections: int
    log: LogLines
    problems: list[str] = field(default_factory=list)

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def cpu_per_100k(self) -> float:
        return 1e5 * self.cpu_seconds / max(1, self.total_requests)

    @property
    def cpu_without_jit_per_100k(self) -> float:
        return 1e5 * (self.cpu_seconds - self.jit_seconds) / max(1, self.total_requests)


class Broker:
    """One broker of the benchmark: its node, an Admin client to switch its request logger, its JMX counts."""

    def __init__(self, node: KafkaNode, jmx: JmxCounters) -> None:
        self.node = node
        self.jmx = jmx
        self.broker_id = str(node.node_id)
        self.admin = KafkaAdminClient(
            bootstrap_servers=node.bootstrap(), client_id="bench-request-log-modes", request_timeout_ms=30000
        )

    @property
    def pid(self) -> int:
        if self.node.pid is None or not self.node.running:
            raise RuntimeError(f"the {self.node.release} broker in {self.node.directory} is not running")
        return self.node.pid

    def create_topic(self, topic: str) -> None:
        self.admin.create_topics([NewTopic(topic, 3, 1)])

    def set_level(self, level: str) -> str:
        return set_logger_level(self.admin, self.broker_id, level)

    def measure(self, release: str, load: str, mode: Mode, cycle: int, settings: Settings) -> Window:
        read_back = self.set_level(mode.level)
        # Requests in flight at the switch complete (and log) at the old level before the window opens.
        time.sleep(settings.settle)
        pid, path = self.pid, self.node.logs.request_log
        before = self.jmx.read(self.node)
        cpu0, stat0, threads0, size0, opened = (
            process_cpu(pid),
            stat_cpu(pid),
            thread_groups(pid),
            log_size(path),
            time.monotonic(),
        )
        time.sleep(settings.slot)
        after = self.jmx.read(self.node)
        cpu1, stat1, threads1, size1, closed = (
            process_cpu(pid),
            stat_cpu(pid),
            thread_groups(pid),
            log_size(path),
            time.monotonic(),
        )
        window = Window(
            release=release,
            load=load,
            mode=mode.key,
            cycle=cycle,
            level_read_back=read_back,
            seconds=closed - opened,
            cpu_seconds=cpu1 - cpu0,
            stat_cpu_seconds=stat1 - stat0,
            gc_seconds=max(0.0, threads1["gc"] - threads0["gc"]),
            jit_seconds=max(0.0, threads1["jit"] - threads0["jit"]),
            requests=dict(after.requests - before.requests),
            records_in=after.records_in - before.records_in,
            connections=after.connections - before.connections,
            log=new_lines(path, size0, size1),
        )
        window.problems = check_window(window, mode)
        return window

    def close(self) -> None:
        self.admin.close()


def check_window(window: Window, mode: Mode) -> list[str]:
    """What the mode may write in any window; each miss is a problem the run reports (exit code 2)."""
    log, problems = window.log, []
    if window.level_read_back != mode.level:
        problems.append(f"the broker reports the logger at {window.level_read_back}, not {mode.level}")
    if log.unreadable:
        problems.append(f"{log.unreadable} lines that are no DEBUG or INFO request line")
    if mode.level == "WARN" and log.lines:
        problems.append(f"{log.lines} lines written with the logger at WARN")
    if mode.level == "INFO" and log.debug:
        problems.append(f"{log.debug} DEBUG lines with the logger at INFO")
    if mode is FILTERED and log.other_debug:
        problems.append(f"{log.other_debug} DEBUG lines of other APIs than {IDENTITY_NAMES} got through the filters")
    return problems


def check_mode(windows: Sequence[Window], mode: Mode, *, deprecated_sent: bool) -> list[str]:
    """What the mode must have written over all its windows of a load (one window may see no deprecated request)."""
    if not windows:
        return []
    api_versions = sum(w.log.api_versions_debug for w in windows)
    info = sum(w.log.info for w in windows)
    connections = sum(w.connections for w in windows)
    problems = []
    if mode in (INFO_ONLY, FILTERED) and deprecated_sent and not info:
        problems.append("no INFO line although deprecated requests were sent")
    if mode is FILTERED:
        if not api_versions:
            problems.append("no ApiVersions line: the logger is not at DEBUG, or the filters drop it")
        # Connections counted at accept and their ApiVersions lines logged at completion straddle window edges.
        elif abs(api_versions - connections) > max(3, 0.1 * connections):
            problems.append(f"{api_versions} ApiVersions lines for {connections} connections opened")
    if mode is FULL and not sum(w.log.other_debug for w in windows):
        problems.append(f"no DEBUG line of other APIs than {IDENTITY_NAMES} at full DEBUG")
    return problems


# -- a release's run -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    seconds: float  # measured per mode, broker and load
    slot: float  # one window
    settle: float
    warmup: float  # once per release, every load against both brokers
    warmup_scale: float  # the warm-up's producers and rates, times the loads'
    rewarm: float  # per broker and load, after its clients connected
    producers: int
    records: float
    rate: float
    connections: float
    loads: tuple[str, ...]

    @property
    def cycles(self) -> int:
        return max(1, round(self.seconds / self.slot))


def load_for(
    broker: Broker, release: str, load: str, settings: Settings, scale: float = 1.0
) -> contextlib.AbstractContextManager[RunningLoad]:
    return running_load(
        broker.node.bootstrap(),
        f"bench-{load}",
        load,
        # More producers rather than faster ones: the mix's requests are paced by linger.ms, not by its records.
        producers=round(scale * settings.producers),
        records=scale * settings.records,
        rate=scale * settings.rate,
        connections=settings.connections,
        deprecated_every=deprecated_every(release),
        env=checkout_env(),
    )


def deprecated_every(release: str) -> int:
    """Every how many short-lived connections one sends a deprecated request: only 3.9 serves one (4.x closes the
    connection on DescribeConfigs v0)."""
    return 4 if release.startswith("3.") else 0


def cycle_levels(brokers: Sequence[tuple[Broker, Sequence[Mode]]], seconds: float, slot: float) -> None:
    """Switch each broker through the levels its windows use, a slot each, for ``seconds``: the JIT sees every
    branch before the first window (a branch first taken in a window would cost a deoptimisation and a
    recompilation inside it)."""
    for index in range(max(1, round(seconds / slot))):
        for broker, cycle in brokers:
            broker.set_level(cycle[index % len(cycle)].level)
        time.sleep(slot)


def run_release(release: str, directory: Path, settings: Settings, jvm: Sequence[str]) -> list[Window]:
    """Both brokers of a release, started and warmed up together; then each load against each, in turn."""
    clusters = [
        KafkaCluster(
            directory / name,
            release,
            options=NodeOptions(request_log=kind, jvm_options=tuple(jvm), request_log_max_bytes=NO_ROLL_BYTES),
        )
        for name, kind in (("filtered", LogKind.IDENTITIES_AND_INFO), ("full", LogKind.FULL_DEBUG))
    ]
    progress(f"starting two {release} brokers: with the shipped filters, and with full DEBUG")
    start_clusters(*clusters)
    jmx: JmxCounters | None = None
    brokers: list[Broker] = []
    windows: list[Window] = []
    try:
        jmx = JmxCounters()
        brokers = [Broker(cluster.node(1), jmx) for cluster in clusters]
        for broker in brokers:
            for load in settings.loads:
                broker.create_topic(f"bench-{load}")
        cycles = list(zip(brokers, (FILTERED_CYCLE, FULL_CYCLE), strict=True))
        # C2 compiles a method once it has run often enough: at the measured rates the broker's paths take minutes
        # to get there. Every load at a multiple of its rate, against both brokers at once, pays that once.
        with contextlib.ExitStack() as stack:
            for broker in brokers:
                for load in settings.loads:
                    stack.enter_context(load_for(broker, release, load, settings, settings.warmup_scale))
            progress(
                f"{release}: warm-up, every load against both brokers at {settings.warmup_scale:g} x its rate, "
                f"{settings.warmup:g} s"
            )
            cycle_levels(cycles, settings.warmup, settings.slot)
        for load in settings.loads:
            for broker, cycle in cycles:
                windows += run_load(release, load, broker, cycle, settings)
        for broker in brokers:
            # The request logger is not additive: none of its lines may reach server.log, whatever the switches.
            leaked = broker.node.logs.server_log.read_text(errors="replace").count("Completed request:")
            if leaked:
                windows[-1].problems.append(f"{leaked} request lines in {broker.node.logs.server_log}")
            rolled = sorted(broker.node.logs.directory.glob("kafka-request.log.*"))
            if rolled:
                windows[-1].problems.append(f"the request log rolled ({rolled[0].name}): bytes are undercounted")
    finally:
        for broker in brokers:
            broker.close()
        if jmx is not None:
            jmx.close()
        for cluster in clusters:
            cluster.stop()
    return windows


def run_load(release: str, load: str, broker: Broker, cycle: Sequence[Mode], settings: Settings) -> list[Window]:
    which = "filtered" if cycle[0].filtered else "full-DEBUG"
    windows: list[Window] = []
    with load_for(broker, release, load, settings) as running:
        progress(f"{release} {which} broker, {load} load (pid {running.process.pid})")
        # The load's clients have just connected (a consumer group just rebalanced): their start is no window's.
        cycle_levels([(broker, cycle)], settings.rewarm, settings.slot)
        for number in range(settings.cycles):
            for mode in cycle if number % 2 == 0 else reversed(cycle):
                windows.append(broker.measure(release, load, mode, number, settings))
        for mode in cycle:
            mine = [w for w in windows if w.mode == mode.key]
            per_100k = 1e5 * sum(w.cpu_seconds for w in mine) / max(1, sum(w.total_requests for w in mine))
            progress(f"{release} {load} {mode.title}: {per_100k:.2f} CPU s/100k requests over {len(mine)} windows")
            mine[-1].problems += check_mode(mine, mode, deprecated_sent=deprecated_every(release) > 0)
    summary = running.summary
    failures = summary.get("delivery_failures", 0) + summary.get("connection_failures", 0)
    if not summary:
        windows[-1].problems.append("the load printed no summary")
    elif failures:
        windows[-1].problems.append(f"the load had {failures} failures: {summary.get('errors')}")
    for problem in (p for w in windows for p in w.problems):
        progress(f"PROBLEM {release} {load} {which}: {problem}")
    return windows


# -- the figures -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModeFigures:
    """One mode's windows of one release and load, summed."""

    mode: Mode
    windows: tuple[Window, ...]

    def _sum(self, value: Callable[[Window], float]) -> float:
        return sum(value(w) for w in self.windows)

    @property
    def requests(self) -> int:
        return sum(w.total_requests for w in self.windows)

    @property
    def seconds(self) -> float:
        return max(1e-9, self._sum(lambda w: w.seconds))

    def per_100k(self, value: Callable[[Window], float]) -> float:
        return 1e5 * self._sum(value) / max(1, self.requests)

    @property
    def cpu_per_100k(self) -> float:
        return self.per_100k(lambda w: w.cpu_seconds)

    @property
    def cpu_without_jit_per_100k(self) -> float:
        return self.per_100k(lambda w: w.cpu_seconds - w.jit_seconds)

    @property
    def bytes_per_hour(self) -> float:
        return 3600 * self._sum(lambda w: w.log.bytes) / self.seconds

    @property
    def connections(self) -> int:
        return sum(w.connections for w in self.windows)

    @property
    def lines(self) -> int:
        return sum(w.log.lines for w in self.windows)

    @property
    def bytes_per_line(self) -> float:
        return self._sum(lambda w: w.log.bytes) / max(1, self.lines)

    @property
    def lines_per_connection(self) -> float:
        return self.lines / max(1, self.connections)

    def share(self, api: str) -> float:
        return self._sum(lambda w: w.requests.get(api, 0)) / max(1, self.requests)

    @property
    def records_per_produce(self) -> float:
        return self._sum(lambda w: w.records_in) / max(1.0, self._sum(lambda w: w.requests.get("Produce", 0)))


def figures(windows: Sequence[Window], release: str, load: str) -> dict[str, ModeFigures]:
    return {
        mode.key: ModeFigures(
            mode, tuple(w for w in windows if (w.release, w.load, w.mode) == (release, load, mode.key))
        )
        for mode in MODES
    }


@dataclass(frozen=True)
class Ratio:
    """A CPU ratio of two modes: of their sums over all windows (the figure), and the mean and standard error of
    the per-cycle ratios (each cycle's two windows ran back to back, under the same background load)."""

    pooled: float
    mean: float
    standard_error: float
    cycles: int

    def text(self) -> str:
        return (
            f"{self.pooled:.3f} ({100 * (self.pooled - 1):+.1f} %; per cycle {100 * (self.mean - 1):+.1f} % "
            f"± {100 * self.standard_error:.1f} s.e., n={self.cycles})"
        )


def ratio(numerator: ModeFigures, denominator: ModeFigures, *, without_jit: bool = False) -> Ratio:
    def per_100k(figure: ModeFigures | Window) -> float:
        return figure.cpu_without_jit_per_100k if without_jit else figure.cpu_per_100k

    by_cycle = {w.cycle: w for w in denominator.windows}
    pairs = [per_100k(w) / max(1e-9, per_100k(by_cycle[w.cycle])) for w in numerator.windows if w.cycle in by_cycle]
    pooled = per_100k(numerator) / max(1e-9, per_100k(denominator))
    if len(pairs) < 2:
        return Ratio(pooled, pairs[0] if pairs else pooled, float("nan"), len(pairs))
    return Ratio(pooled, statistics.fmean(pairs), statistics.stdev(pairs) / math.sqrt(len(pairs)), len(pairs))


def human_bytes(value: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"


def print_table(release: str, load: str, by_mode: dict[str, ModeFigures]) -> tuple[float, tuple[Ratio, Ratio]]:
    """The release and load's table and ratios; returns the bytes ratio and the CPU ratio the targets judge."""
    off, info, filtered, full, full_off = (by_mode[mode.key] for mode in MODES)
    every = ModeFigures(OFF, tuple(w for figure in by_mode.values() for w in figure.windows))
    print(
        f"\nKafka {release}, {load} load: {every.requests / every.seconds:.0f} requests/s (Produce "
        f"{100 * every.share('Produce'):.0f} %, Fetch {100 * every.share('Fetch'):.0f} %, Metadata "
        f"{100 * every.share('Metadata'):.1f} %, ApiVersions {100 * every.share('ApiVersions'):.1f} %, other "
        f"{100 * (1 - sum(every.share(api) for api in ('Produce', 'Fetch', 'Metadata', 'ApiVersions'))):.0f} %; "
        f"{every.records_per_produce:.1f} records per Produce request), "
        f"{every.connections / every.seconds:.1f} connections opened/s"
    )
    header = (
        f"{'mode':<21} {'windows':>7} {'requests':>8} {'CPU s/100k req':>14} {'vs off':>7} {'GC':>5} {'JIT':>5} "
        f"{'w/o JIT':>7} {'vs off':>7} {'log bytes/h':>11} {'bytes/line':>10} {'lines/conn':>10}"
    )
    print(header)
    print("-" * len(header))
    for figure, baseline in ((off, off), (info, off), (filtered, off), (full_off, full_off), (full, full_off)):
        print(
            f"{figure.mode.title:<21} {len(figure.windows):>7} {figure.requests:>8} {figure.cpu_per_100k:>14.2f} "
            f"{figure.cpu_per_100k / max(1e-9, baseline.cpu_per_100k):>6.3f}x "
            f"{figure.per_100k(lambda w: w.gc_seconds):>5.2f} {figure.per_100k(lambda w: w.jit_seconds):>5.2f} "
            f"{figure.cpu_without_jit_per_100k:>7.2f} "
            f"{figure.cpu_without_jit_per_100k / max(1e-9, baseline.cpu_without_jit_per_100k):>6.3f}x "
            f"{human_bytes(figure.bytes_per_hour):>11} {figure.bytes_per_line:>10.0f} "
            f"{figure.lines_per_connection:>10.2f}"
        )
    jit = every.per_100k(lambda w: w.jit_seconds) / max(1e-9, every.cpu_per_100k)
    if jit > 0.05:
        print(f"NOTE: the JIT compiler used {100 * jit:.0f} % of the windows' CPU: raise --warmup for steadier figures")
    bytes_ratio = filtered.bytes_per_hour / max(1.0, full.bytes_per_hour)
    against_info = ratio(filtered, info), ratio(filtered, info, without_jit=True)
    for name, numerator, denominator in (
        ("identities+INFO / INFO only", filtered, info),
        ("INFO only / off", info, off),
        ("identities+INFO / off", filtered, off),
        ("full DEBUG / off (its JVM)", full, full_off),
    ):
        print(
            f"CPU {name + ':':<29} {ratio(numerator, denominator).text()}; "
            f"w/o JIT {ratio(numerator, denominator, without_jit=True).text()}"
        )
    # The filtered log grows by connection, the full one by request: the bytes ratio is the load's mix of both.
    per_connection = filtered.bytes_per_hour / 3600 / max(1e-9, filtered.connections / filtered.seconds)
    per_request = full.bytes_per_hour / 3600 / max(1e-9, full.requests / full.seconds)
    print(
        f"bytes identities+INFO / full DEBUG: {100 * bytes_ratio:.2f} %. The filtered log wrote "
        f"{per_connection:.0f} bytes per connection opened (its Metadata and INFO lines included), full DEBUG "
        f"{per_request:.0f} bytes per request: 1 % holds while connections opened stay under "
        f"{100 * 0.01 * per_request / max(1e-9, per_connection):.2f} % of requests "
        f"(here {100 * filtered.connections / max(1, filtered.requests):.2f} %)"
    )
    return bytes_ratio, against_info


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds per mode, broker and load")
    parser.add_argument("--slot", type=float, default=3.0, help="one window; the modes alternate window by window")
    parser.add_argument("--settle", type=float, default=0.4, help="seconds from a switch to its window")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds of load on both brokers of a release first")
    parser.add_argument(
        "--warmup-scale", type=float, default=2.0, help="the warm-up's producers and rates, times the loads'"
    )
    parser.add_argument("--rewarm", type=float, default=6.0, help="seconds after a load's clients connect")
    parser.add_argument("--rate", type=float, default=2000.0, help="tiny load: one-record Produce requests a second")
    parser.add_argument("--records", type=float, default=4000.0, help="mix load: records produced a second")
    parser.add_argument("--producers", type=int, default=4, help="producers of each load")
    parser.add_argument("--connections", type=float, default=2.0, help="short-lived connections opened a second")
    parser.add_argument("--releases", nargs="+", choices=KRAFT_RELEASES, default=list(KRAFT_RELEASES))
    parser.add_argument("--loads", nargs="+", choices=LOADS, default=list(LOADS))
    parser.add_argument("--jvm", choices=sorted(JVMS), default="kafka", help="the brokers' JVM options")
    parser.add_argument(
        "--json", type=Path, default=ROOT / "test-artifacts" / "bench_request_log_modes.json", help="figures file"
    )
    args = parser.parse_args()
    settings = Settings(
        seconds=args.seconds,
        slot=args.slot,
        settle=args.settle,
        warmup=args.warmup,
        warmup_scale=args.warmup_scale,
        rewarm=args.rewarm,
        producers=args.producers,
        records=args.records,
        rate=args.rate,
        connections=args.connections,
        loads=tuple(args.loads),
    )

    started, load_averages = time.monotonic(), [load_average()]
    windows: list[Window] = []
    with tempfile.TemporaryDirectory(prefix="bench-request-log-modes-") as tmp:
        for release in args.releases:
            windows += run_release(release, Path(tmp) / release, settings, JVMS[args.jvm])
            load_averages.append(load_average())

    clock = sum(w.cpu_seconds for w in windows)
    ticks = sum(w.stat_cpu_seconds for w in windows)
    print(
        "\nBroker CPU is PROCESS CPU TIME, not wall time (the 2 cores are shared with other work): utime + stime of the"
        " broker's JVM, all threads,\nread to the nanosecond from the kernel's process CPU clock (over all windows "
        f"{clock:.2f} s; /proc/<pid>/stat's 10 ms ticks say {ticks:.2f} s).\nRequests and connections opened are the "
        "broker's own counts (JMX RequestsPerSec and connection-creation-total). 'vs off' is against off on the\n"
        "same JVM (full DEBUG: the full-DEBUG broker switched to WARN); GC and JIT: CPU s/100k requests of those "
        "threads; w/o JIT: the CPU\nless the JIT compiler threads' (compiling left over from the warm-up, in any "
        "mode's window). The targets judge the CPU with it. Per broker and load\n"
        f"after a {args.warmup:g} s warm-up per release (at {args.warmup_scale:g} x the rates), {settings.cycles} "
        f"cycles of {args.slot:g} s windows, the modes alternating window by window.\n"
        f"Brokers' JVM options: {args.jvm} ({' '.join(JVMS[args.jvm])})."
    )
    targets: list[tuple[str, str, float, bool, str]] = []
    for release in args.releases:
        for load in args.loads:
            bytes_ratio, (cpu, cpu_without_jit) = print_table(release, load, figures(windows, release, load))
            name = f"{release} {load}: identities+INFO"
            targets.append(
                (f"{name} bytes, % of full DEBUG's", "<= 1 %", 100 * bytes_ratio, bytes_ratio <= BYTES_TARGET, "")
            )
            beside = (
                f"(w/o JIT {100 * (cpu_without_jit.pooled - 1):+.1f} %; per cycle {100 * (cpu.mean - 1):+.1f} "
                f"± {100 * cpu.standard_error:.1f} s.e.)"
            )
            targets.append(
                (
                    f"{name} CPU, % over INFO only's",
                    "<= +5 %",
                    100 * (cpu.pooled - 1),
                    cpu.pooled - 1 <= CPU_TARGET,
                    beside,
                )
            )

    print()
    switch_works: dict[str, bool] = {}
    for release in args.releases:
        mine = [w for w in windows if w.release == release and w.mode in (OFF.key, INFO_ONLY.key, FILTERED.key)]
        switch_works[release] = bool(mine) and not any(w.problems for w in mine)
        switches = len(mine)
        print(
            f"runtime switch works with filters in place ({release}): {'yes' if switch_works[release] else 'no'} "
            f"({switches} measured windows after a switch, each level read back and each window's lines as expected)"
        )
    problems = [(w, problem) for w in windows for problem in w.problems]
    for window, problem in problems:
        print(f"PROBLEM {window.release} {window.load} {window.mode} (cycle {window.cycle}): {problem}")

    print(f"\n{'target':<52} {'limit':>8} {'measured':>9}")
    for name, limit, value, passed, beside in targets:
        print(f"{name:<52} {limit:>8} {value:>8.2f}% {'PASS' if passed else 'FAIL'} {beside}".rstrip())
    print(f"\nload average (1, 5, 15 min) at the start and after each release: {' | '.join(load_averages)}")
    print(f"run took {time.monotonic() - started:.0f} s")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "settings": asdict(settings),
                "jvm": list(JVMS[args.jvm]),
                "windows": [asdict(w) for w in windows],
                "switch_works_with_filters": switch_works,
                "targets": [
                    dict(zip(("target", "limit", "percent", "passed", "beside"), t, strict=True)) for t in targets
                ],
                "load_averages": load_averages,
            },
            indent=1,
        )
    )
    print(f"figures written to {args.json}")
    if problems:
        return 2
    return 0 if all(passed for *_, passed in targets) else 1


if __name__ == "__main__":
    raise SystemExit(main())
