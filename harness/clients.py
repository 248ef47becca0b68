"""Open and close REAL Kafka client connections, each client in its own OS process.

A broker, real or the double, records which client software each connection announces (KIP-511); to test that, and
to drive the demo and benchmarks, we need connections made by the real libraries, not by our own encoder. Each
client runs in a child process so that closing it is a real socket close and nothing leaks between tests:

* kcat (librdkafka):  ``kcat -P`` reading from a stdin pipe we keep open; a producer with nothing to send
  holds its connections. Ready when librdkafka's ``-d metadata`` debug log shows a Metadata response.
* confluent-kafka, kafka-python, aiokafka: ``client_scripts/python_client.py`` under this interpreter.
* kafkajs: ``node/client.js`` under ``node`` with ``NODE_PATH`` pointing at ``node/node_modules``.
* Kafka's own Java client (Admin and Producer), 4.3.0 and 3.9.0: ``client_scripts/JavaClient.java``, a single-file
  program, in its own JVM with that release's kafka-clients jar (``harness.kafka_jars``); with
  ``java_role="share-consumer"`` a KafkaShareConsumer (KIP-932 share group) instead.
* Old Java clients, kafka-clients 2.8.2, 0.10.2.2 and 0.10.1.1: ``client_scripts/LegacyJavaClient.java`` (a
  KafkaProducer only: 0.10 has no Admin) sending a record every ``LEGACY_PRODUCE_INTERVAL`` seconds, with the
  release's own jars (``kafka_jars.legacy_clients_classpath``). 0.10.1.1 never asks ApiVersions, 0.10.2.2 asks v0
  (so both are ``unknown``) and both produce with Produce v2, which Kafka 4.0 removed (KIP-896).

The script clients print ``READY`` on stdout after bootstrap (ApiVersions + Metadata done) and close cleanly
when their stdin reaches EOF. ``close()`` closes stdin, waits, and only then terminates/kills.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import IO, Literal, Self

from .java_program import java_program_args
from .kafka_jars import KafkaJarsMissing, kafka_clients_classpath, legacy_clients_classpath

__all__ = [
    "LEGACY_JAVA_RELEASES",
    "UNKNOWN",
    "ClientError",
    "ClientKind",
    "ClientMix",
    "ExpectedIdentity",
    "RealClient",
    "available_kinds",
    "expected_identity",
    "librdkafka_sanitize",
    "missing_reason",
    "start_client",
]

_PKG_DIR = Path(__file__).resolve().parent
PYTHON_CLIENT_SCRIPT = _PKG_DIR / "client_scripts" / "python_client.py"
JAVA_CLIENT_SOURCE = _PKG_DIR / "client_scripts" / "JavaClient.java"
LEGACY_JAVA_CLIENT_SOURCE = _PKG_DIR / "client_scripts" / "LegacyJavaClient.java"
#: Seconds between two records of a legacy Java client: steady traffic of old request versions for the broker's
#: deprecated-request meter, as an old application's producer would send.
LEGACY_PRODUCE_INTERVAL = 2.0
#: Small and quick to start: a client JVM holds a few connections and sends a handful of requests. Measured here
#: (JDK 17, 2 cores, source compiled at each start): READY about 0.8 s after exec, about 112 MiB RSS per JVM.
JAVA_CLIENT_OPTIONS = ("-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k")
NODE_DIR = _PKG_DIR / "node"
NODE_CLIENT_SCRIPT = NODE_DIR / "client.js"
NODE_MODULES = NODE_DIR / "node_modules"

#: Topic kcat's producer is created for. It never produces, so the topic need not exist.
KCAT_TOPIC = "demo"
READY_LINE = "READY"
# librdkafka logs this (category METADATA) for every Metadata response it has parsed, in 1.x and 2.x.
_KCAT_READY_MARKER = "Received metadata"
_TAIL_LINES = 200


class ClientKind(StrEnum):
    KCAT = "kcat"
    CONFLUENT = "confluent-kafka"
    KAFKA_PYTHON = "kafka-python"
    AIOKAFKA = "aiokafka"
    KAFKAJS = "kafkajs"
    JAVA = "apache-kafka-java"  # kafka-clients 4.3.0
    JAVA_3_9 = "apache-kafka-java-3.9"  # kafka-clients 3.9.0
    JAVA_2_8 = "apache-kafka-java-2.8"  # kafka-clients 2.8.2, LegacyJavaClient.java
    JAVA_0_10_2 = "apache-kafka-java-0.10.2"  # kafka-clients 0.10.2.2, LegacyJavaClient.java
    JAVA_0_10_1 = "apache-kafka-java-0.10.1"  # kafka-clients 0.10.1.1, LegacyJavaClient.java


#: The kafka-clients release each Java kind runs.
JAVA_RELEASES = {ClientKind.JAVA: "4.3.0", ClientKind.JAVA_3_9: "3.9.0"}
#: The old kafka-clients release each legacy Java kind runs (a producer only).
LEGACY_JAVA_RELEASES = {
    ClientKind.JAVA_2_8: "2.8.2",
    ClientKind.JAVA_0_10_2: "0.10.2.2",
    ClientKind.JAVA_0_10_1: "0.10.1.1",
}


@dataclass(frozen=True)
class ExpectedIdentity:
    """The (clientSoftwareName, clientSoftwareVersion) a real broker records for a client's connections."""

    software_name: str
    software_version: str


#: What a broker records for clients whose ApiVersions is v0-v2 (no name/version fields in the body).
UNKNOWN = ExpectedIdentity("unknown", "unknown")


#: What JavaClient.java runs: an Admin and a Producer, or a KIP-932 share-group consumer.
JavaRole = Literal["both", "share-consumer"]


class ClientError(RuntimeError):
    """A client process failed to start, bootstrap or close."""


# ---------------------------------------------------------------------------------------------------------
# Installed versions -> expected identities


def librdkafka_sanitize(value: str) -> str:
    """Mirror librdkafka's ``rd_kafka_sw_str_sanitize_inplace``, applied to client.software.name/version.

    Leading and trailing non-alphanumerics are stripped and any other character outside ``[A-Za-z0-9.-]`` is
    replaced by ``-``, so what the broker records can differ from what was configured.
    """
    value = re.sub(r"^[^A-Za-z0-9]+", "", value)
    value = re.sub(r"[^A-Za-z0-9.\-]", "-", value)
    return re.sub(r"[^A-Za-z0-9]+$", "", value)


@functools.cache
def kcat_librdkafka_version() -> str:
    """librdkafka version kcat is linked with, from ``kcat -V`` (kcat's default software version)."""
    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10, check=False).stdout
    match = re.search(r"librdkafka (\S+)", out)
    if match is None:
        raise ClientError(f"cannot find the librdkafka version in `kcat -V` output: {out!r}")
    return match.group(1)


@functools.cache
def _confluent_identity() -> ExpectedIdentity:
    # confluent-kafka-python sets client.software.version to "<its version>-rdkafka-<librdkafka version>";
    # the bundled librdkafka version is only known by importing the extension.
    import confluent_kafka

    # version() is a str in current releases and a (str, int) tuple in old ones; libversion() is a tuple.
    own = confluent_kafka.version()
    own_version = own if isinstance(own, str) else own[0]
    librdkafka_version = confluent_kafka.libversion()[0]
    return ExpectedIdentity("confluent-kafka-python", f"{own_version}-rdkafka-{librdkafka_version}")


def expected_identity(
    kind: ClientKind, software_name: str | None = None, software_version: str | None = None
) -> ExpectedIdentity:
    """What a real (2.5+) broker records for a client of this kind, computed from the installed versions."""
    kind = ClientKind(kind)
    if kind is ClientKind.KCAT:
        sanitize = librdkafka_sanitize
        name = "librdkafka" if software_name is None else sanitize(software_name)
        version = kcat_librdkafka_version() if software_version is None else sanitize(software_version)
        # The broker maps an empty name or version to "unknown" individually.
        return ExpectedIdentity(name or "unknown", version or "unknown")
    if kind is ClientKind.CONFLUENT:
        return _confluent_identity()
    if kind is ClientKind.KAFKA_PYTHON:
        # kafka-python 3 sends ApiVersions v4 with client_software_version = kafka.version.__version__.
        return ExpectedIdentity("kafka-python", importlib.metadata.version("kafka-python"))
    if kind in JAVA_RELEASES:
        # ApiVersionsRequest.Builder's defaults: "apache-kafka-java" and AppInfoParser's version (JavaClient.java).
        return ExpectedIdentity("apache-kafka-java", JAVA_RELEASES[kind])
    if kind is ClientKind.JAVA_2_8:
        # KIP-511's client side is in kafka-clients since 2.4: 2.8.2 sends ApiVersions v3 with the same defaults as
        # the newer releases, which a real 3.9.2 or 4.4.0 broker records (tests/real_kafka/test_real_clients.py).
        return ExpectedIdentity("apache-kafka-java", LEGACY_JAVA_RELEASES[kind])
    # 0.10.2.2 sends ApiVersions v0 and 0.10.1.1 none at all: the broker never learns a name or version.
    # aiokafka sends ApiVersions v0 and kafkajs v2: neither body carries a name/version.
    return UNKNOWN


# ---------------------------------------------------------------------------------------------------------
# Availability


_PYTHON_MODULES = {
    ClientKind.CONFLUENT: "confluent_kafka",
    ClientKind.KAFKA_PYTHON: "kafka",
    ClientKind.AIOKAFKA: "aiokafka",
}


def _java_classpath(kind: ClientKind) -> str:
    """The jars a Java client kind runs on: its release's kafka-clients (0.10-2.x: the release's own jars)."""
    if kind in LEGACY_JAVA_RELEASES:
        return legacy_clients_classpath(LEGACY_JAVA_RELEASES[kind])
    return kafka_clients_classpath(JAVA_RELEASES[kind])


def missing_reason(kind: ClientKind) -> str | None:
    """Why a client kind cannot run here, or None if it can."""
    kind = ClientKind(kind)
    if kind is ClientKind.KCAT:
        return None if shutil.which("kcat") else "kcat is not on PATH (apt-get install kcat)"
    if kind is ClientKind.KAFKAJS:
        if shutil.which("node") is None:
            return "node is not on PATH"
        if not (NODE_MODULES / "kafkajs" / "package.json").is_file():
            return f"kafkajs is not installed in {NODE_MODULES} (npm ci in {NODE_DIR})"
        return None
    if kind in JAVA_RELEASES or kind in LEGACY_JAVA_RELEASES:
        if shutil.which("java") is None:
            return "java is not on PATH (apt-get install openjdk-17-jdk-headless)"
        try:
            _java_classpath(kind)
        except KafkaJarsMissing as missing:
            return str(missing)
        return None
    module = _PYTHON_MODULES[kind]
    # The client script runs under this same interpreter, so importable here means importable there.
    if importlib.util.find_spec(module) is None:
        return f"Python package {kind.value} is not installed in {sys.executable}"
    return None


def available_kinds(*, legacy: bool = False) -> list[ClientKind]:
    """The client kinds installed on this machine, in enum order; the legacy Java kinds only with ``legacy``.

    Callers start every kind this returns against one broker and expect each to bootstrap (the double's mixes, the
    request-log oracle, the samples): 0.10's Produce v2 is refused by any 4.x broker, and every legacy kind keeps
    producing, so they are asked for by name or with ``legacy=True``."""
    wanted = [kind for kind in ClientKind if legacy or kind not in LEGACY_JAVA_RELEASES]
    return [kind for kind in wanted if missing_reason(kind) is None]


# ---------------------------------------------------------------------------------------------------------
# One client process


class _StreamReader:
    """Drains one pipe on a thread (a full pipe would block the client) and keeps the last lines."""

    def __init__(self, stream: IO[str], on_line: Callable[[str], None] | None = None) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._stream = stream
        self._on_line = on_line
        self._thread = threading.Thread(target=self._run, daemon=True, name="client-pipe-reader")
        self._thread.start()

    def _run(self) -> None:
        try:
            for raw in self._stream:
                line = raw.rstrip("\r\n")
                self.lines.append(line)
                if self._on_line is not None:
                    self._on_line(line)
        except (OSError, ValueError):
            pass  # pipe closed under us while the process was being killed

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def tail(self, n: int = 30) -> str:
        return "\n".join(list(self.lines)[-n:])


class RealClient:
    """A real Kafka client running in a child process; see the module docstring.

    Use ``start_client()`` to create one. It is a context manager that closes the client on exit.
    """

    def __init__(
        self,
        kind: ClientKind,
        argv: Sequence[str],
        expected: ExpectedIdentity,
        *,
        ready_on_stderr: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.expected = expected
        self.argv = list(argv)
        self._ready = threading.Event()
        self._close_lock = threading.Lock()
        self._closed = False
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=env,
            # Own session: a terminal's Ctrl-C reaches only the demo, which closes clients in order; every
            # client also exits on stdin EOF, so none outlives its parent.
            start_new_session=True,
        )
        self.pid = self.proc.pid
        assert self.proc.stdout is not None and self.proc.stderr is not None

        def stdout_line(line: str) -> None:
            if ready_on_stderr is None and line.strip() == READY_LINE:
                self._ready.set()

        def stderr_line(line: str) -> None:
            if ready_on_stderr is not None and ready_on_stderr in line:
                self._ready.set()

        self._stdout = _StreamReader(self.proc.stdout, stdout_line)
        self._stderr = _StreamReader(self.proc.stderr, stderr_line)

    def __repr__(self) -> str:
        return f"RealClient(kind={self.kind.value!r}, pid={self.pid}, expected={self.expected})"

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def stderr_tail(self, n: int = 30) -> str:
        return self._stderr.tail(n)

    def stdout_tail(self, n: int = 30) -> str:
        return self._stdout.tail(n)

    def _failure(self, what: str) -> ClientError:
        return ClientError(
            f"{self.kind.value} client (pid {self.pid}) {what}\n"
            f"command: {' '.join(self.argv)}\n--- stderr tail ---\n{self.stderr_tail()}"
        )

    def wait_ready(self, timeout: float = 20.0) -> None:
        """Return once the client has finished bootstrap; raise ClientError if it exits or times out first."""
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            rc = self.proc.poll()
            if rc is not None:
                # The exit can race with the reader thread seeing READY: give it a moment to drain.
                self._stdout.join(1.0)
                self._stderr.join(1.0)
                if self._ready.is_set():
                    break
                raise self._failure(f"exited with code {rc} before bootstrap completed")
            if time.monotonic() >= deadline:
                raise self._failure(f"did not finish bootstrap within {timeout:.1f}s")
        if self._closed:
            raise self._failure("was closed")

    def _request_close(self) -> None:
        """Ask the client to close by closing its stdin (EOF); does not wait."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            # BrokenPipeError here only means the client is already gone.
            with contextlib.suppress(OSError):
                stdin.close()

    def close(self, timeout: float = 10.0) -> None:
        """Close gracefully (stdin EOF -> the client closes its connections and exits), then kill if needed.

        Idempotent. Returns once the process has exited, so its sockets are closed by then.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._request_close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(3.0)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self._stdout.join(2.0)
            self._stderr.join(2.0)
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def start_client(
    kind: ClientKind,
    bootstrap: str,
    *,
    software_name: str | None = None,
    software_version: str | None = None,
    client_id: str | None = None,
    bootstrap_timeout: float = 20.0,
    properties: Mapping[str, str] | None = None,
    java_role: JavaRole = "both",
) -> RealClient:
    """Start one real client against ``bootstrap`` ("host:port,host:port"); call ``wait_ready()`` next.

    ``software_name``/``software_version`` are only settable for kcat (librdkafka's client.software.*); the
    other clients always send their own identity (or none). ``properties`` are extra client settings in the
    client's own names (security.protocol, ssl.*, sasl.* for kcat, confluent-kafka and the Java client;
    security_protocol, ssl_cafile... for kafka-python), e.g. for TLS and SASL listeners. ``java_role`` is
    JavaClient.java's role for the Java kinds: an Admin and a Producer ("both"), or a share-group consumer
    ("share-consumer", 4.x: its group is the ``group.id`` property, default "share-group"; topic ``demo``).
    """
    kind = ClientKind(kind)
    reason = missing_reason(kind)
    if reason is not None:
        raise ClientError(f"cannot start {kind.value}: {reason}")
    if kind is not ClientKind.KCAT and (software_name is not None or software_version is not None):
        raise ValueError(f"software_name/software_version can only be chosen for kcat, not {kind.value}")
    if java_role != "both" and kind not in JAVA_RELEASES:
        raise ValueError(f"java_role can only be chosen for {', '.join(JAVA_RELEASES)}, not {kind.value}")
    if properties and kind in (ClientKind.AIOKAFKA, ClientKind.KAFKAJS):
        raise ValueError(
            f"properties can be given to kcat, confluent-kafka, kafka-python and the Java clients, not {kind.value}"
        )
    extra = [f"{key}={value}" for key, value in (properties or {}).items()]
    expected = expected_identity(kind, software_name, software_version)

    if kind is ClientKind.KCAT:
        # -d metadata: the only way to see from outside that librdkafka's bootstrap Metadata has arrived.
        argv = ["kcat", "-b", bootstrap, "-P", "-t", KCAT_TOPIC, "-d", "metadata"]
        if client_id is not None:
            argv += ["-X", f"client.id={client_id}"]
        if software_name is not None:
            argv += ["-X", f"client.software.name={software_name}"]
        if software_version is not None:
            argv += ["-X", f"client.software.version={software_version}"]
        for setting in extra:
            argv += ["-X", setting]
        return RealClient(kind, argv, expected, ready_on_stderr=_KCAT_READY_MARKER)

    if kind in JAVA_RELEASES or kind in LEGACY_JAVA_RELEASES:
        classpath = _java_classpath(kind)
        if kind in JAVA_RELEASES:
            program = [*java_program_args(JAVA_CLIENT_SOURCE, classpath), java_role, bootstrap]
        else:
            program = [*java_program_args(LEGACY_JAVA_CLIENT_SOURCE, classpath), bootstrap]
            program += ["--interval", str(LEGACY_PRODUCE_INTERVAL)]
        argv = ["java", *JAVA_CLIENT_OPTIONS, *program, "--timeout", str(bootstrap_timeout)]
        if client_id is not None:
            argv += ["--client-id", client_id]
        for key, value in (properties or {}).items():
            argv += ["--property", f"{key}={value}"]
        return RealClient(kind, argv, expected)

    if kind is ClientKind.KAFKAJS:
        argv = ["node", str(NODE_CLIENT_SCRIPT), bootstrap, client_id or "", str(bootstrap_timeout)]
        env = dict(os.environ, NODE_PATH=str(NODE_MODULES))
        return RealClient(kind, argv, expected, env=env)

    argv = [sys.executable, str(PYTHON_CLIENT_SCRIPT), kind.value, bootstrap]
    argv += ["--timeout", str(bootstrap_timeout)]
    if client_id is not None:
        argv += ["--client-id", client_id]
    for setting in extra:
        argv += ["--config", setting]
    return RealClient(kind, argv, expected)


# ---------------------------------------------------------------------------------------------------------
# Several clients at once


#: A client kind, or kcat announcing (software name, version), optionally with its clientId.
ClientSpec = ClientKind | tuple[ClientKind, str, str] | tuple[ClientKind, str, str, str]


class ClientMix:
    """A set of clients started together and closed together (used by the demo and benchmarks).

    ``kinds`` items are a ClientKind, or ``(ClientKind.KCAT, software_name, software_version[, client_id])`` for
    a kcat announcing a chosen identity. As a context manager it starts all clients and waits until all are ready.
    """

    def __init__(self, bootstrap: str, kinds: Sequence[ClientSpec]) -> None:
        self.bootstrap = bootstrap
        self.specs: list[ClientSpec] = list(kinds)
        self.clients: list[RealClient] = []

    def start(self) -> None:
        if self.clients:
            raise ClientError("ClientMix already started")
        try:
            for spec in self.specs:
                if isinstance(spec, tuple):
                    kind, name, version, *client_id = spec
                    self.clients.append(
                        start_client(
                            kind,
                            self.bootstrap,
                            software_name=name,
                            software_version=version,
                            client_id=client_id[0] if client_id else None,
                        )
                    )
                else:
                    self.clients.append(start_client(spec, self.bootstrap))
        except BaseException:
            self.close()
            raise

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until every client is ready; ``timeout`` bounds the whole set (they bootstrap in parallel)."""
        deadline = time.monotonic() + timeout
        for client in self.clients:
            client.wait_ready(max(0.1, deadline - time.monotonic()))

    def close(self, timeout: float = 10.0) -> None:
        # Signal every client first so they close in parallel, then reap them one by one.
        for client in self.clients:
            client._request_close()
        for client in self.clients:
            client.close(timeout)

    def expected_counts(self) -> collections.Counter[ExpectedIdentity]:
        """How many clients announce each identity (each may open several connections)."""
        return collections.Counter(client.expected for client in self.clients)

    def __iter__(self) -> Iterator[RealClient]:
        return iter(self.clients)

    def __len__(self) -> int:
        return len(self.clients)

    def __enter__(self) -> Self:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
