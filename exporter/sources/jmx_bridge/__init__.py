"""The long-lived JMX bridge: one JVM (JmxBridge.java, shipped prebuilt as jmx-bridge.jar) that keeps one JMX
connection per broker open across cycles and answers JSON-lines requests on its stdin.

The bridge runs jmxquery's own classes, so its items are those the per-call jar prints and `parse_reading`
reads both. Credentials travel in the requests on stdin, never on a command line. The bridge answers every
request by its deadline itself (a black-holed broker costs its own read only); when it answers nothing at all
for a whole deadline, or exits, the waiting reads fail with reason `jmx_bridge` and the next read starts a
new bridge. The pipes are served by threads, so any event loop may read and `close` may run on any thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import logging
import os
import subprocess
import threading
import time
from dataclasses import dataclass, fields
from importlib.resources import files
from pathlib import Path
from typing import IO

from jmxquery import JAR_PATH

from exporter.sources.base import Reason
from exporter.sources.jmx import (
    QUERIES,
    JavaRuntime,
    JmxError,
    JmxTarget,
    JmxTransport,
    authentication_failed,
    redact,
)

log = logging.getLogger(__name__)

BRIDGE_JAR = str(files(__name__) / "jmx-bridge.jar")
BRIDGE_SOURCE = str(files(__name__) / "JmxBridge.java")

# The bridge answers a little before the exporter's deadline, so a late answer is a broker's, not a bridge's.
_ANSWER_MARGIN_SECONDS = 0.25
# How long a new bridge may take to say it is ready (its JVM started) before it counts as broken: a JVM starts in
# well under a second on an idle machine, and in several on a loaded one.
START_ALLOWANCE_SECONDS = 60.0
# How long a bridge may say nothing at all before it counts as stuck, when that is longer than a read's deadline. It
# answers every read by the deadline itself, but a JVM starved of CPU (a loaded machine; just started, loading RMI's
# classes for its first connections) misses a short deadline's answers by a second or two, and restarting it then
# only starts another JVM into the same starvation: with a 1 s interval under the suite's load, three restarts in ten
# seconds left the exporter stale (a suite run at 8a6e8f6).
STALL_SECONDS = 5.0
_STOP_SECONDS = 5.0
# The JVM's initial heap is 1/64 of the RAM it sees (377 MB on a 24 GB host), and serial GC sizes its young generation
# from it: the bridge sat at 268 MB RSS polling 500 brokers, 166 MB with this (live heap ~22 MB; bench_jmx_transports).
# The heap still grows on demand; options in `java.options` come later on the command line and win.
# -XX:-UsePerfData: without it the JVM's periodic task thread samples its performance counters every 50 ms, which
# cost the bridge 0.04 s of CPU a minute whatever it reads (about a sixth of its CPU reading three real brokers
# every 3 s, bench/bench_real_brokers.py). Only jps and jstat need those counters; jcmd <pid> still attaches.
_BRIDGE_JVM_OPTIONS = ("-Xms16m", "-XX:-UsePerfData")

_REASONS = {
    "connection": Reason.CONNECTION,
    "timeout": Reason.TIMEOUT,
    "jmx_error": Reason.JMX_ERROR,
}


@dataclass(frozen=True)
class BridgeTls:
    """A bridge's JMX over TLS: its JVM's default SSL context, which the brokers' RMI stubs use. One bridge per
    distinct value. Only paths (passwords as files the bridge reads), so the command line holds no secret."""

    ca_file: Path | None = None
    trust_store: Path | None = None
    trust_store_password_file: Path | None = None
    trust_store_type: str = "PKCS12"
    cert_file: Path | None = None
    key_file: Path | None = None  # unencrypted PKCS#8 PEM
    key_store: Path | None = None
    key_store_password_file: Path | None = None
    key_store_type: str = "PKCS12"
    check_hostname: bool = True

    def arguments(self) -> list[str]:
        """The bridge's TLS arguments, name=value."""
        files = [f"{f.name}={value}" for f in fields(self) if isinstance(value := getattr(self, f.name), Path)]
        types = [f"trust_store_type={self.trust_store_type}"] if self.trust_store else []
        types += [f"key_store_type={self.key_store_type}"] if self.key_store else []
        return [*files, *types, f"check_hostname={str(self.check_hostname).lower()}"]


@dataclass(frozen=True)
class _Pending:
    future: asyncio.Future[list[dict]]
    loop: asyncio.AbstractEventLoop
    broker: str
    target: JmxTarget
    process: subprocess.Popen[bytes]


def _settle(future: asyncio.Future[list[dict]], items: list[dict] | None, error: JmxError | None) -> None:
    if future.done():  # the read gave up already
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(items or [])


class JmxBridge(JmxTransport):
    """The exporter's one bridge JVM, started on the first read and again after it died."""

    uses_slots = False  # the bridge bounds its own concurrency with `workers` threads

    def __init__(
        self,
        java: JavaRuntime,
        workers: int,
        deadline_seconds: float,
        idle_seconds: float,
        tls: BridgeTls | None = None,
        start_allowance_seconds: float = START_ALLOWANCE_SECONDS,
        stall_seconds: float = STALL_SECONDS,
    ) -> None:
        self._java = java
        self._tls = tls
        self._workers = workers
        self._deadline_seconds = deadline_seconds
        self._idle_seconds = idle_seconds
        self._start_allowance_seconds = start_allowance_seconds
        self._stall_seconds = stall_seconds
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._pending: dict[int, _Pending] = {}
        # Per bridge process, done once it said it is ready or exited: what reads sent while it starts wait for.
        self._ready: dict[subprocess.Popen[bytes], concurrent.futures.Future[None]] = {}
        self._ids = itertools.count(1)
        self._last_answer = time.monotonic()

    def command(self) -> list[str]:
        """The bridge's command line: no credentials, they come over stdin."""
        rmi_ms = str(max(1, round(self._deadline_seconds * 1000)))
        idle = max(1, round(self._idle_seconds))
        # RMI's own timeouts free a worker stuck on a black-holed broker; defaults are minutes or forever.
        rmi = [
            f"-D{name}={rmi_ms}"
            for name in ("sun.rmi.transport.tcp.handshakeTimeout", "sun.rmi.transport.tcp.responseTimeout")
        ]
        # How long RMI keeps an unused socket to a broker for its next call (sun.rmi.transport.tcp.TCPChannel's
        # idleTimeout, 15 s by default), not a connect timeout: as long as the bridge keeps the broker's JMX
        # connection. Shorter than the interval, every cycle connects anew (TCP, RMI's handshake, TLS's).
        rmi.append(f"-Dsun.rmi.transport.connectionTimeout={idle * 1000}")
        classpath = os.pathsep.join((BRIDGE_JAR, JAR_PATH))
        tls = self._tls.arguments() if self._tls is not None else []
        return [
            self._java.path,
            *_BRIDGE_JVM_OPTIONS,
            *self._java.options,
            *rmi,
            "-cp",
            classpath,
            "JmxBridge",
            str(self._workers),
            str(idle),
            *tls,
        ]

    @property
    def pid(self) -> int | None:
        """The running bridge's process id (None before the first read and after it died)."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def pending_brokers(self) -> list[str]:
        """The brokers (``cluster/broker``) whose reads wait for the bridge's answer now, in the order they were sent:
        what a cycle still waits on (read only; for diagnostics and tests)."""
        with self._lock:
            return [pending.broker for pending in self._pending.values()]

    async def read(self, broker: str, target: JmxTarget, deadline_seconds: float) -> list[dict]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[dict]] = loop.create_future()
        request_id = next(self._ids)
        request = {
            "id": request_id,
            "broker": broker,
            "url": target.url,
            "username": target.username or None,
            "password": target.password if target.username else None,
            "timeout_ms": round(1000 * max(deadline_seconds * 0.5, deadline_seconds - _ANSWER_MARGIN_SECONDS)),
            "queries": [query.to_query_string() for query in QUERIES],
        }
        process = self._send(request_id, future, loop, broker, target, (json.dumps(request) + "\n").encode())
        waiting_since = time.monotonic()
        try:
            await self._started(process)
            # The deadline runs from here: a bridge starting for this cycle's reads takes its JVM's start-up first,
            # which on a loaded machine took longer than a deadline and failed every broker of the cycle.
            waiting_since = time.monotonic()
            return await asyncio.wait_for(future, deadline_seconds)
        except TimeoutError:
            # Nothing at all came back since the deadline began (the bridge answers every read by its deadline
            # itself, a slow broker's too), nor for the stall allowance: it is stuck.
            silent = time.monotonic() - self._last_answer
            if self._last_answer < waiting_since and silent >= max(deadline_seconds, self._stall_seconds):
                if self._kill(process):  # every read waiting on it lands here: one log line
                    log.warning("the JMX bridge answered nothing for %.1f s; restarting it", silent)
                raise JmxError(
                    Reason.JMX_BRIDGE,
                    f"the JMX bridge answered nothing for {silent:.1f} s (reading {target.url}); it is restarted",
                ) from None
            raise JmxError(
                Reason.TIMEOUT, f"JMX query at {target.url} did not finish within {deadline_seconds:g} s"
            ) from None
        finally:
            with self._lock:
                self._pending.pop(request_id, None)
            # A read that ends without its answer (cancelled, or given up while the bridge started) may still be
            # failed by the bridge's exit, queued from its reader thread: that failure has nobody to go to, and
            # asyncio would log it as "Future exception was never retrieved" (seen at a suite's teardown).
            if not future.cancel() and not future.cancelled():
                future.exception()

    async def _started(self, process: subprocess.Popen[bytes]) -> None:
        """Until ``process`` has said it is ready, or has exited (its reads then fail with its exit); a bridge that
        says nothing within the start allowance is killed."""
        ready = self._ready.get(process)
        if ready is None or ready.done():
            return
        try:
            # Shielded: a read that gives up must not cancel what the other reads of this bridge wait for.
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(ready)), self._start_allowance_seconds)
        except TimeoutError:
            if self._kill(process):
                log.warning("the JMX bridge did not start within %g s; restarting it", self._start_allowance_seconds)
            raise JmxError(
                Reason.JMX_BRIDGE,
                f"the JMX bridge did not start within {self._start_allowance_seconds:g} s; it is restarted",
            ) from None

    def close(self) -> None:
        """Stop the bridge: it closes its connections when its stdin closes; killed if it does not exit."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
            process.wait(_STOP_SECONDS)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()

    # -- the pipes ---------------------------------------------------------------------------------------

    def _send(
        self,
        request_id: int,
        future: asyncio.Future[list[dict]],
        loop: asyncio.AbstractEventLoop,
        broker: str,
        target: JmxTarget,
        line: bytes,
    ) -> subprocess.Popen[bytes]:
        with self._lock:
            process = self._process
            if process is None or process.poll() is not None:
                process = self._process = self._start()
            self._pending[request_id] = _Pending(future, loop, broker, target, process)
            try:
                assert process.stdin is not None
                process.stdin.write(line)
                process.stdin.flush()
            except OSError as error:
                del self._pending[request_id]
                self._process = None
                process.kill()
                raise JmxError(Reason.JMX_BRIDGE, f"the JMX bridge did not take the request: {error}") from None
            return process

    def _start(self) -> subprocess.Popen[bytes]:
        """A new bridge; called with the lock held."""
        try:
            process = subprocess.Popen(
                self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except FileNotFoundError:
            raise JmxError(
                Reason.JAVA_NOT_FOUND, f"java executable {self._java.path!r} not found; set java.path"
            ) from None
        log.info("started the JMX bridge (pid %d, %d workers)", process.pid, self._workers)
        self._ready[process] = concurrent.futures.Future()
        assert process.stdout is not None and process.stderr is not None
        threading.Thread(
            target=self._read_answers, args=(process, process.stdout), name="jmx-bridge-stdout", daemon=True
        ).start()
        threading.Thread(target=self._read_log, args=(process.stderr,), name="jmx-bridge-stderr", daemon=True).start()
        return process

    def _kill(self, process: subprocess.Popen[bytes]) -> bool:
        """Kill `process`; whether it was still the bridge in use (not already let go of)."""
        with self._lock:
            current = self._process is process
            if current:
                self._process = None
        process.kill()  # its stdout reader fails what is still waiting on it
        return current

    def _read_answers(self, process: subprocess.Popen[bytes], stream: IO[bytes]) -> None:
        for line in stream:
            self._last_answer = time.monotonic()
            try:
                answer = json.loads(line, strict=False)  # jmxquery's items may hold raw control characters
                if answer.get("ready") is True:
                    if not self._ready[process].done():
                        self._ready[process].set_result(None)
                    continue
                request_id = answer["id"]
            except (ValueError, KeyError, TypeError, AttributeError):
                log.warning("unreadable answer from the JMX bridge: %r", line[:200])
                continue
            with self._lock:
                pending = self._pending.pop(request_id, None)
            if pending is not None:
                self._resolve(pending, answer)
        code = process.wait()
        ready = self._ready.pop(process)
        if not ready.done():  # exited before it was ready: its reads go on to fail with the exit
            ready.set_result(None)
        with self._lock:
            unexpected = self._process is process  # close() and _kill() let go of it first
            if unexpected:
                self._process = None
            orphans = [(rid, p) for rid, p in self._pending.items() if p.process is process]
            for request_id, _ in orphans:
                del self._pending[request_id]
        if unexpected:
            log.warning("the JMX bridge (pid %d) exited with code %s; it restarts on the next read", process.pid, code)
        for _, pending in orphans:
            error = JmxError(
                Reason.JMX_BRIDGE, f"the JMX bridge exited (code {code}) while reading {pending.target.url}"
            )
            self._call(pending, None, error)

    def _resolve(self, pending: _Pending, answer: dict) -> None:
        target = pending.target
        items = answer.get("items")
        if isinstance(items, list):
            self._call(pending, items, None)
            return
        kind = str(answer.get("error"))
        message = redact(str(answer.get("message")), target)
        if kind == "authentication":
            error = authentication_failed(target)
        elif kind == "tls":
            cluster, _, broker = pending.broker.rpartition("/")
            error = JmxError(Reason.TLS, f"JMX over TLS to broker {broker} of cluster {cluster} failed: {message}")
        elif kind in _REASONS:
            error = JmxError(_REASONS[kind], message)
        else:
            error = JmxError(Reason.INVALID_RESPONSE, f"the JMX bridge answered {kind!r} for {target.url}: {message}")
        self._call(pending, None, error)

    @staticmethod
    def _call(pending: _Pending, items: list[dict] | None, error: JmxError | None) -> None:
        # A closed event loop raises RuntimeError: nobody waits for that read any more.
        with contextlib.suppress(RuntimeError):
            pending.loop.call_soon_threadsafe(_settle, pending.future, items, error)

    @staticmethod
    def _read_log(stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip()
            # The bridge's own lines are routine (connects, reconnects); anything else is the JVM complaining.
            if line.startswith("jmx-bridge: "):
                log.debug("%s", line)
            elif line:
                log.warning("JMX bridge: %s", line)
