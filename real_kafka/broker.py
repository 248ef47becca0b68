"""One real Kafka node in its own JVM: ``java -cp '<libs>/*' kafka.Kafka server.properties``, as
``bin/kafka-server-start.sh`` runs it. A KRaft node first gets ``kafka.tools.StorageTool format`` (SCRAM credentials
included); a ZooKeeper-mode broker needs no format (its cluster writes the SCRAM credentials into ZooKeeper first).

Everything lives under the node's directory: ``config/`` (server.properties, log4j, JMX files), ``data/`` (the log
directory, the metadata log included), ``logs/`` (server.log, kafka-request.log) and ``stdout.log`` (the JVM's own
output: crashes before log4j is up, javaagent messages). The process is started in its own session and stopped by
its pid (``real_kafka.process``): SIGTERM (Kafka's controlled shutdown), SIGKILL after a deadline.
``restart(release=...)`` starts the same configuration and storage again, under another release if asked.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from exporter.request_logs.log_kinds import LogKind
from real_kafka.config import BrokerTls, NodePorts, NodeRoles, server_properties
from real_kafka.distribution import KRAFT_RELEASES, Distribution, distribution, jmx_exporter_agent
from real_kafka.jmx import JmxAuth, JmxTls, jmx_options, jmx_url
from real_kafka.log4j import LogFiles, write_logging_config
from real_kafka.process import JvmProcess, cpu_seconds, log_tails
from real_kafka.readiness import NotReady, probe

__all__ = ["DEFAULT_JVM_OPTIONS", "ClusterLayout", "KafkaNode", "NodeFailed", "NodeOptions", "StartTiming"]

log = logging.getLogger(__name__)

#: Small heap, and flags that start a JVM fast: C1 only (a test broker never runs long enough for C2 to pay off),
#: the serial collector (no GC threads to start), and the JDK's class-data archive.
DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-Xmx256m",
    "-Xms256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
)


class NodeFailed(RuntimeError):
    """The node's JVM exited or did not become ready in time; the message ends with its logs' tails."""


@dataclass(frozen=True)
class NodeOptions:
    """What a test chooses for every node of a cluster."""

    #: The SASL_SSL listener's certificate; without one the node has no SASL_SSL listener.
    tls: BrokerTls | None = None
    #: SCRAM-SHA-512 users written into the metadata at format time.
    scram_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    jmx_auth: JmxAuth | None = None
    jmx_tls: JmxTls | None = None
    #: A JMX exporter rules file: runs the javaagent on ports.metrics with it.
    jmx_exporter_rules: Path | None = None
    jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS
    request_log_max_bytes: int = 10 * 1024 * 1024
    request_log_backups: int = 5
    #: Which request log the node writes (broker-config/ ships the identities + INFO one).
    request_log: LogKind = LogKind.FULL_DEBUG
    #: A full DEBUG node also writes the identities + INFO log, from the same requests, in ``<node>/request-log-copy``
    #: (outside ``logs/``, so a run over the node's logs does not read it).
    request_log_copy: bool = False
    extra_properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterLayout:
    """What the nodes of a cluster must agree on."""

    cluster_id: str
    voters: Mapping[int, int]  # controller node id -> its CONTROLLER port (none in ZooKeeper mode)
    brokers: int
    #: ZooKeeper mode: the brokers' ``zookeeper.connect``; None: KRaft mode.
    zookeeper_connect: str | None = None


@dataclass(frozen=True)
class StartTiming:
    """From launching the JVM to the node answering: wall seconds, and the CPU seconds its JVM had used by then."""

    release: str
    wall_seconds: float
    cpu_seconds: float


class KafkaNode:
    """One node (broker, controller or both) of a KafkaCluster, which allocates its ports."""

    def __init__(
        self,
        directory: Path,
        release: str,
        node_id: int,
        roles: NodeRoles,
        ports: NodePorts,
        layout: ClusterLayout,
        options: NodeOptions,
    ) -> None:
        self.directory = directory
        self.node_id = node_id
        self.roles = roles
        self.ports = ports
        self.layout = layout
        self.options = options
        self._distribution: Distribution = distribution(release)
        if layout.zookeeper_connect is not None and not self._distribution.zookeeper_mode:
            raise ValueError(f"Kafka {release} has no ZooKeeper mode (removed in 4.0)")
        if layout.zookeeper_connect is None and not self._distribution.kraft_mode:
            raise ValueError(f"Kafka {release} is run in ZooKeeper mode only here (KRaft: {', '.join(KRAFT_RELEASES)})")
        self._jvm = JvmProcess(directory, f"Kafka node {node_id}")
        # server.properties settings beyond the layout's: the options' own, and a reconfiguration's (see reconfigure).
        self._extra: dict[str, str] = dict(options.extra_properties)
        self._launched_at = 0.0
        #: When the JVM was last launched, by the wall clock (which the node's logs use): what a log line written
        #: after it was written by that start.
        self.launched_at = 0.0
        self.timings: list[StartTiming] = []
        self.config_dir = directory / "config"
        self.data_dir = directory / "data"
        self.properties_file = self.config_dir / "server.properties"
        self.logs = LogFiles(directory / "logs", "")

    # ------------------------------------------------------------------ facts

    @property
    def release(self) -> str:
        return self._distribution.release

    @property
    def zookeeper_mode(self) -> bool:
        return self.layout.zookeeper_connect is not None

    @property
    def pid(self) -> int | None:
        return self._jvm.pid

    @property
    def running(self) -> bool:
        return self._jvm.running

    @property
    def jmx_url(self) -> str:
        return jmx_url(self.ports.jmx)

    @property
    def metrics_url(self) -> str:
        if self.ports.metrics is None or self.options.jmx_exporter_rules is None:
            raise ValueError(f"node {self.node_id} runs no JMX exporter javaagent")
        return f"http://127.0.0.1:{self.ports.metrics}/metrics"

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        ports = {"PLAINTEXT": self.ports.plaintext}
        if self.options.tls is not None:
            ports["SASL_SSL"] = self.ports.sasl_ssl
        port = ports.get(listener)
        if port is None or not self.roles.broker:
            raise ValueError(f"node {self.node_id} has no {listener} listener")
        return f"127.0.0.1:{port}"

    # ------------------------------------------------------------------ lifecycle

    def format(self) -> None:
        """Write the configuration and format the storage (first start only; a restart keeps both)."""
        self.finish_format(self.begin_format())

    def begin_format(self) -> subprocess.Popen[bytes] | None:
        """Write the configuration and start formatting; ``finish_format`` waits. A cluster formats its nodes in
        parallel: each format is a JVM start of its own. A ZooKeeper-mode broker has nothing to format (None)."""
        self._write_properties()
        self._write_logging()
        if self.zookeeper_mode:
            return None
        command = [
            "java",
            *self.options.jvm_options,
            self.logs.jvm_option,
            "-cp",
            self._distribution.classpath,
            "kafka.tools.StorageTool",
            "format",
            # One argument, not two: a ZooKeeper cluster's id (which a migration's controllers are formatted with)
            # may start with "-", and the tool's parser takes "--cluster-id -x..." for an option without its value.
            f"--cluster-id={self.layout.cluster_id}",
            "--config",
            str(self.properties_file),
        ]
        for user, password in self.options.scram_users.items():
            command += ["--add-scram", f"SCRAM-SHA-512=[name={user},password={password}]"]
        return subprocess.Popen(
            command, cwd=self.directory, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )

    def finish_format(self, formatting: subprocess.Popen[bytes] | None, timeout: float = 120.0) -> None:
        if formatting is None:
            return
        try:
            output, _ = formatting.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            formatting.kill()
            output, _ = formatting.communicate()
        if formatting.returncode != 0:
            # The command line holds the SCRAM passwords: only the tool's own output is shown.
            text = output.decode(errors="replace").strip()[-2000:]
            raise NodeFailed(
                f"formatting node {self.node_id} ({self.release}) failed ({formatting.returncode}): {text}"
            )

    def reconfigure(
        self, layout: ClusterLayout, roles: NodeRoles | None = None, extra: Mapping[str, str] | None = None
    ) -> None:
        """Rewrite server.properties for the next start (the node must be stopped): another layout (a ZooKeeper-mode
        broker moving to KRaft), other roles, settings added to the options' own (a migration's flags)."""
        if self.running:
            raise RuntimeError(f"node {self.node_id} must be stopped before it is reconfigured")
        self.layout = layout
        if roles is not None:
            self.roles = roles
        self._extra = {**self.options.extra_properties, **(extra or {})}
        self._write_properties()

    def launch(self) -> None:
        """Start the JVM and return at once (``wait_ready`` waits): nodes of one quorum must start together."""
        if not self.properties_file.is_file():
            self.format()
        # Written at every start: a restart under another release needs that release's logging format.
        self._write_logging()
        command = ["java", *self.options.jvm_options, self.logs.jvm_option, *self._jmx_options()]
        if self.options.jmx_exporter_rules is not None:
            if self.ports.metrics is None:
                raise ValueError(f"node {self.node_id} has no metrics port for the JMX exporter")
            agent = jmx_exporter_agent()
            command.append(f"-javaagent:{agent}=127.0.0.1:{self.ports.metrics}:{self.options.jmx_exporter_rules}")
        command += ["-cp", self._distribution.classpath, "kafka.Kafka", str(self.properties_file)]
        self._launched_at, self.launched_at = time.monotonic(), time.time()
        self._jvm.start(command)
        log.info("started Kafka %s node %d, pid %d", self.release, self.node_id, self.pid)

    def wait_ready(self, timeout: float = 90.0) -> StartTiming:
        """Poll until the node serves clients; NodeFailed (with the logs' tails) if its JVM exits or time runs out."""
        deadline = time.monotonic() + timeout
        why = "not probed yet"
        while True:
            pid = self._jvm.pid
            if pid is None:
                raise RuntimeError(f"node {self.node_id} was not launched")
            if (returncode := self._jvm.returncode) is not None:
                raise NodeFailed(f"Kafka {self.release} node {self.node_id} exited with {returncode}{self.tails()}")
            try:
                self._probe()
            except NotReady as exc:
                why = str(exc)
            else:
                timing = StartTiming(self.release, time.monotonic() - self._launched_at, cpu_seconds(pid))
                self.timings.append(timing)
                return timing
            if time.monotonic() > deadline:
                raise NodeFailed(
                    f"Kafka {self.release} node {self.node_id} not ready in {timeout}s ({why}){self.tails()}"
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (controlled shutdown), SIGKILL if it is still running after ``timeout`` seconds."""
        self.terminate()
        self.wait_stopped(timeout)

    def terminate(self) -> None:
        """Send SIGTERM and return: a cluster stops its nodes together (``wait_stopped`` next)."""
        self._jvm.terminate()

    def wait_stopped(self, timeout: float) -> None:
        """Wait for the JVM to exit after ``terminate``; SIGKILL it after ``timeout`` seconds."""
        self._jvm.wait_stopped(timeout)

    def kill(self) -> None:
        """SIGKILL: a crash, with no controlled shutdown."""
        self._jvm.kill()

    def restart(self, release: str | None = None, timeout: float = 90.0) -> StartTiming:
        """Stop, then start the same configuration and storage again (under ``release`` if given) and wait until
        it is ready."""
        self.stop()
        if release is not None and release != self.release:
            upgraded = distribution(release)
            if self.zookeeper_mode and not upgraded.zookeeper_mode:
                raise ValueError(f"node {self.node_id} runs in ZooKeeper mode, which Kafka {release} no longer has")
            self._distribution = upgraded
        self.launch()
        return self.wait_ready(timeout)

    # ------------------------------------------------------------------ helpers

    def tails(self) -> str:
        """The last lines of server.log and of the JVM's own output, for an error message."""
        return log_tails(self.logs.server_log, self.directory / "stdout.log")

    def _probe(self) -> None:
        if self.roles.broker:
            assert self.ports.plaintext is not None
            probe(self.ports.plaintext, self.node_id)
        else:
            assert self.ports.controller is not None
            probe(self.ports.controller, None)

    def _write_properties(self) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.properties_file.write_text(
            server_properties(
                self.node_id,
                self.roles,
                self.ports,
                self.layout.voters,
                self.data_dir,
                brokers=self.layout.brokers,
                tls=self.options.tls,
                extra=self._extra,
                zookeeper_connect=self.layout.zookeeper_connect,
            )
        )

    def _write_logging(self) -> None:
        self.logs = write_logging_config(
            self.config_dir,
            self.directory / "logs",
            log4j2=self._distribution.log4j2,
            request_log_max_bytes=self.options.request_log_max_bytes,
            request_log_backups=self.options.request_log_backups,
            request_log=self.options.request_log,
            copy_dir=self.directory / "request-log-copy" if self.options.request_log_copy else None,
        )

    def _jmx_options(self) -> list[str]:
        return jmx_options(
            self.config_dir,
            self.ports.jmx,
            auth=self.options.jmx_auth,
            tls=self.options.jmx_tls,
            rmi_port=self.ports.jmx_rmi,
        )
