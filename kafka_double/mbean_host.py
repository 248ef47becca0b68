"""Python side of the broker double's JMX endpoints.

:class:`MBeanHost` starts ``MBeanHost.java`` (a single-file program, compiled once by ``java_program``, with Kafka's
kafka-clients jar on its class path) in one JVM. That JVM gives every emulated broker its own MBeanServer, RMI
registry and JMX connector server on one TCP port, so an exporter sees one "broker JVM" per port, and Kafka's own
server-side ``Selector`` per network processor, which makes the socket-server-metrics MBeans. The JVM is driven
through a line protocol on its stdin (see the Java file's header):

* ``BROKER``, ``STOP``, ``DUMP`` and ``SYNC`` get a reply, which a reader thread hands to the waiting call;
* ``PROCESSOR``, ``OPEN``, ``CLIENT``, ``CIPHER``, ``CLOSE``, ``SET`` and ``UNSET`` get no reply when they work
  (they must be cheap: thousands per second).
  When one fails the JVM writes an ``ERR`` line that nobody waits for; it is logged and raised by
  the next :meth:`MBeanHost.sync`.

The JVM reads EOF on stdin when this process goes away (even on SIGKILL) and then exits, so it
never outlives its Python parent.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import logging
import math
import re
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from harness.java_program import java_program_args
from harness.kafka_jars import kafka_clients_classpath
from harness.ports import free_port

__all__ = ["JAVA_SOURCE", "Bean", "JmxTls", "MBeanHost"]

log = logging.getLogger("kafka_double.jmx")

#: The Java program, shipped next to this module (package data).
JAVA_SOURCE = Path(__file__).with_name("MBeanHost.java")

DEFAULT_JVM_OPTIONS: tuple[str, ...] = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

_VALUE_TYPES = ("int", "long", "double", "string")
_INT_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
# Characters that would break the line protocol (Java's readLine also ends a line at \r).
_FORBIDDEN = re.compile(r"[\t\n\r]")
# Errors of commands that have a reply are tagged "<VERB> <key>: " by the JVM.
_TAGGED_ERROR = re.compile(r"^(BROKER|STOP|SYNC|DUMP) (\S+): ")

#: One MBean attribute as a JMX client reads it: (object name, attribute, value).
Bean = tuple[str, str, int | float | str]
_STDERR_TAIL = 40


@dataclass(frozen=True)
class JmxTls:
    """A broker's JMX over TLS, as with -Dcom.sun.management.jmxremote.ssl=true: the registry stays plain on the
    JMX port, the RMI server object answers TLS on `rmi_port` (a free one if 0). `client_ca_file` asks clients for
    a certificate signed by that CA (jmxremote.ssl.need.client.auth=true). The key file is unencrypted PKCS#8 PEM."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None
    rmi_port: int = 0


class _Waiter:
    """One call waiting for its reply line."""

    __slots__ = ("error", "event", "fields")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.fields: list[str] = []
        self.error: str | None = None


class MBeanHost:
    """One JVM that hosts the JMX endpoints of many emulated Kafka brokers.

    Thread-safe: writes to the JVM are serialised by one lock; replies are matched to callers by
    (command, key) in order. Usable as a context manager (start on enter, close on exit).
    """

    def __init__(
        self,
        java: str = "java",
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
        reply_timeout: float = 30.0,
    ) -> None:
        self._java = java
        self._jvm_options = tuple(jvm_options)
        self._reply_timeout = reply_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdin: IO[bytes] | None = None
        self._threads: list[threading.Thread] = []
        # Held while writing to the JVM (and while starting/closing). Never held while waiting.
        self._write_lock = threading.Lock()
        # Guards the reply bookkeeping below; the reader thread takes it, never the write lock.
        self._state_lock = threading.Lock()
        self._waiters: dict[tuple[str, str], collections.deque[_Waiter]] = collections.defaultdict(collections.deque)
        self._async_errors: list[str] = []
        self._dead: str | None = None  # why the JVM is gone, once it is
        self._closed = False
        self._ready = threading.Event()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
        self._tokens = itertools.count(1)

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 60.0) -> None:
        """Spawn the JVM and wait until it prints READY (the first start compiles the program: a second or two)."""
        with self._write_lock:
            if self._closed:
                raise RuntimeError("MBeanHost is closed; create a new one")
            if self._proc is not None:
                raise RuntimeError("MBeanHost already started")
            cmd = [self._java, *self._jvm_options, *java_program_args(JAVA_SOURCE, kafka_clients_classpath())]
            log.debug("starting %s", cmd)
            try:
                # Own session: a terminal's Ctrl-C reaches only our process, which then closes the JVM in
                # order; stdin EOF still ends the JVM if we die.
                proc = subprocess.Popen(
                    cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
                )
            except OSError as e:
                raise RuntimeError(f"cannot start the MBeanHost JVM ({self._java!r}): {e}") from e
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            self._proc = proc
            self._stdin = proc.stdin
            self._threads = [
                threading.Thread(target=self._read_stdout, args=(proc.stdout,), name="mbean-host-stdout", daemon=True),
                threading.Thread(target=self._read_stderr, args=(proc.stderr,), name="mbean-host-stderr", daemon=True),
            ]
            for thread in self._threads:
                thread.start()
        if not self._ready.wait(timeout):
            self.close()
            raise TimeoutError(f"MBeanHost JVM did not print READY within {timeout:g} s{self._stderr_hint()}")
        if self._dead is not None:
            self.close()
            raise RuntimeError(self._dead)

    def close(self, timeout: float = 10.0) -> None:
        """Ask the JVM to exit (EXIT, then EOF), kill it if it does not. Idempotent."""
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            proc, stdin = self._proc, self._stdin
            if proc is None or stdin is None:
                return
            try:
                stdin.write(b"EXIT\n")
                stdin.flush()
            except (OSError, ValueError):
                pass  # already dead
            with contextlib.suppress(OSError):
                stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("MBeanHost JVM (pid %s) did not exit within %g s; killing it", proc.pid, timeout)
            proc.kill()
            proc.wait()
        for thread in self._threads:
            thread.join(timeout)
        self._fail_all("MBeanHost was closed")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The JVM's process id (None before start)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The JVM's exit code once it has exited, else None."""
        return self._proc.poll() if self._proc is not None else None

    # ------------------------------------------------------------------ commands

    def add_broker(
        self,
        broker_id: int,
        port: int,
        user: str | None = None,
        password: str | None = None,
        tls: JmxTls | None = None,
    ) -> str:
        """Open a broker's JMX port (optionally password-protected, optionally over TLS); return its JMX service
        URL."""
        _check_int("broker_id", broker_id)
        _check_int("port", port)
        if not 1 <= port <= 65535:
            raise ValueError(f"port {port} is out of range 1-65535")
        if (user is None) != (password is None):
            raise ValueError("give both user and password, or neither")
        for what, text in (("user", user), ("password", password)):
            if text is not None:
                _check_field(what, text)
                if text == "-":
                    raise ValueError(f"{what} '-' is reserved by the protocol (it means 'none')")
                if not text or any(ch.isspace() for ch in text):
                    # One "user password" line of the JDK's password file (MBeanHost.passwordFile).
                    raise ValueError(f"JMX {what} {text!r} must be non-empty and hold no whitespace")
        line = f"BROKER\t{broker_id}\t{port}\t{user or '-'}\t{password or '-'}"
        if tls is not None:
            files = [tls.cert_file, tls.key_file] + ([tls.client_ca_file] if tls.client_ca_file else [])
            for path in files:
                _check_field("TLS file", str(path), allow_empty=False)
                if not Path(path).is_file():
                    raise ValueError(f"TLS file {path} does not exist or is not a file")
            rmi_port = tls.rmi_port or free_port()
            client_ca = str(tls.client_ca_file) if tls.client_ca_file else "-"
            line = (
                f"BROKER_TLS\t{broker_id}\t{port}\t{rmi_port}\t{user or '-'}\t{password or '-'}\t"
                f"{tls.cert_file}\t{tls.key_file}\t{client_ca}"
            )
        fields = self._request(("BROKER", str(broker_id)), line)
        return fields[0]

    def set(
        self, broker_id: int, object_name: str, attribute: str, value: int | float | str, type_: str = "int"
    ) -> None:
        """Create the MBean if needed and set one attribute (asynchronous: use :meth:`sync` to wait).

        ``type_`` picks the Java class that JMX clients get from getAttribute: ``int`` (Integer, what
        Kafka's ``connections`` gauge returns), ``long``, ``double`` or ``string``. Whatever the type,
        the MBeanInfo declares the attribute as ``double``, as Kafka's JmxReporter does.
        """
        _check_int("broker_id", broker_id)
        _check_field("object_name", object_name, allow_empty=False)
        _check_field("attribute", attribute, allow_empty=False)
        text = _format_value(value, type_)
        self._write(f"SET\t{broker_id}\t{object_name}\t{attribute}\t{type_}\t{text}")

    def unset(self, broker_id: int, object_name: str) -> None:
        """Unregister an MBean (no error if absent; asynchronous like :meth:`set`)."""
        _check_int("broker_id", broker_id)
        _check_field("object_name", object_name, allow_empty=False)
        self._write(f"UNSET\t{broker_id}\t{object_name}")

    def add_processor(self, broker_id: int, listener: str, processor_id: int) -> None:
        """Kafka's Selector for one network processor of a running broker (asynchronous like :meth:`set`)."""
        _check_int("broker_id", broker_id)
        _check_field("listener", listener, allow_empty=False)
        _check_int("processor_id", processor_id)
        self._write(f"PROCESSOR\t{broker_id}\t{listener}\t{processor_id}")

    def exclude_from_jmx(self, broker_id: int, regex: str) -> None:
        """KIP-544's ``metrics.jmx.exclude`` on a running broker's JmxReporter: matching MBeans leave JMX."""
        _check_int("broker_id", broker_id)
        _check_field("regex", regex, allow_empty=False)
        self._write(f"JMX_EXCLUDE\t{broker_id}\t{regex}")

    def open_connection(self, broker_id: int, processor_id: int, connection_id: str) -> None:
        """A connection that processor accepted: registered on its Selector, counted as unknown/unknown."""
        _check_int("broker_id", broker_id)
        _check_int("processor_id", processor_id)
        _check_field("connection_id", connection_id, allow_empty=False)
        self._write(f"OPEN\t{broker_id}\t{processor_id}\t{connection_id}")

    def register_client(self, broker_id: int, connection_id: str, software_name: str, software_version: str) -> None:
        """The channel's ``registerClientInformation`` (what a valid ApiVersionsRequest v3+ triggers)."""
        _check_int("broker_id", broker_id)
        for what, text in (("connection_id", connection_id), ("software_name", software_name)):
            _check_field(what, text)
        _check_field("software_version", software_version)
        self._write(f"CLIENT\t{broker_id}\t{connection_id}\t{software_name}\t{software_version}")

    def register_cipher(self, broker_id: int, connection_id: str, cipher: str, protocol: str) -> None:
        """The channel's ``registerCipherInformation`` (what a finished TLS handshake triggers)."""
        _check_int("broker_id", broker_id)
        for what, text in (("connection_id", connection_id), ("cipher", cipher), ("protocol", protocol)):
            _check_field(what, text, allow_empty=False)
        self._write(f"CIPHER\t{broker_id}\t{connection_id}\t{cipher}\t{protocol}")

    def close_connection(self, broker_id: int, connection_id: str) -> None:
        """``Selector.close(connection id)``: the channel's client and cipher keys are decremented."""
        _check_int("broker_id", broker_id)
        _check_field("connection_id", connection_id, allow_empty=False)
        self._write(f"CLOSE\t{broker_id}\t{connection_id}")

    def dump(self, broker_id: int, timeout: float | None = None) -> list[Bean]:
        """Every MBean attribute a running broker holds now, after every earlier command was applied."""
        _check_int("broker_id", broker_id)
        fields = self._request(("DUMP", str(broker_id)), f"DUMP\t{broker_id}", timeout)
        return [(str(name), str(attribute), value) for name, attribute, value in json.loads(fields[0])]

    def sync(self, timeout: float = 10.0) -> None:
        """Wait until the JVM has applied every earlier command (from any thread).

        Raises RuntimeError if any earlier SET/UNSET was rejected since the last sync.
        """
        token = str(next(self._tokens))
        self._request(("SYNC", token), f"SYNC\t{token}", timeout)
        with self._state_lock:
            errors, self._async_errors = self._async_errors, []
        if errors:
            shown = "; ".join(errors[:5]) + (f"; ... ({len(errors) - 5} more)" if len(errors) > 5 else "")
            raise RuntimeError(f"MBeanHost rejected {len(errors)} earlier command(s): {shown}")

    def stop_broker(self, broker_id: int) -> None:
        """Close a broker's JMX port so connections are refused (a killed broker).

        Its MBeans are dropped; SET/UNSET for it are ignored until :meth:`add_broker` restarts it empty.
        """
        _check_int("broker_id", broker_id)
        self._request(("STOP", str(broker_id)), f"STOP\t{broker_id}")

    # ------------------------------------------------------------------ plumbing

    def _write(self, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        with self._write_lock:
            self._check_alive()
            assert self._stdin is not None
            try:
                self._stdin.write(data)
                self._stdin.flush()
            except (OSError, ValueError) as e:
                raise RuntimeError(f"MBeanHost JVM is gone ({e}){self._stderr_hint()}") from e

    def _request(self, key: tuple[str, str], line: str, timeout: float | None = None) -> list[str]:
        """Send a command that gets a reply and wait for it (OK fields, or RuntimeError for ERR)."""
        waiter = _Waiter()
        with self._state_lock:
            self._waiters[key].append(waiter)
        try:
            self._write(line)
        except BaseException:
            self._forget(key, waiter)
            raise
        wait = self._reply_timeout if timeout is None else timeout
        if not waiter.event.wait(wait):
            self._forget(key, waiter)
            raise TimeoutError(f"no reply from MBeanHost to {key[0]} {key[1]} within {wait:g} s")
        if waiter.error is not None:
            raise RuntimeError(waiter.error)
        return waiter.fields

    def _forget(self, key: tuple[str, str], waiter: _Waiter) -> None:
        with self._state_lock:
            queue = self._waiters.get(key)
            if queue is not None and waiter in queue:
                queue.remove(waiter)

    def _check_alive(self) -> None:
        if self._proc is None:
            raise RuntimeError("MBeanHost not started (call start())")
        if self._closed:
            raise RuntimeError("MBeanHost is closed")
        if self._dead is not None:
            raise RuntimeError(self._dead)
        code = self._proc.poll()
        if code is not None:
            raise RuntimeError(f"MBeanHost JVM exited with code {code}{self._stderr_hint()}")

    def _stderr_hint(self) -> str:
        tail = list(self._stderr_tail)
        return ("; last JVM stderr: " + " | ".join(tail[-10:])) if tail else ""

    def _read_stdout(self, stream: IO[bytes]) -> None:
        try:
            for raw in stream:
                self._dispatch(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except Exception:  # never let the reader die silently
            log.exception("MBeanHost stdout reader failed")
        finally:
            code: int | None = None
            if self._proc is not None:
                try:
                    code = self._proc.wait(5)
                except subprocess.TimeoutExpired:
                    code = None
            reason = (
                "MBeanHost was closed"
                if self._closed
                else (f"MBeanHost JVM exited unexpectedly (code {code}){self._stderr_hint()}")
            )
            if not self._closed:
                log.error("%s", reason)
            self._fail_all(reason)

    def _dispatch(self, line: str) -> None:
        if line == "READY":
            self._ready.set()
            return
        fields = line.split("\t")
        if fields[0] == "OK" and len(fields) >= 3:
            self._resolve((fields[1], fields[2]), fields=fields[3:])
        elif fields[0] == "ERR":
            message = "\t".join(fields[1:])
            match = _TAGGED_ERROR.match(message)
            if match and self._resolve((match[1], match[2]), error=message):
                return
            log.warning("MBeanHost rejected a command: %s", message)
            with self._state_lock:
                self._async_errors.append(message)
        else:
            log.warning("unexpected line from MBeanHost: %r", line)

    def _resolve(self, key: tuple[str, str], fields: list[str] | None = None, error: str | None = None) -> bool:
        with self._state_lock:
            queue = self._waiters.get(key)
            waiter = queue.popleft() if queue else None
        if waiter is None:
            log.debug("reply nobody waits for: %s %s", key, error or fields)
            return False
        waiter.fields = fields or []
        waiter.error = error
        waiter.event.set()
        return True

    def _fail_all(self, reason: str) -> None:
        with self._state_lock:
            if self._dead is None:
                self._dead = reason
            waiters = [w for queue in self._waiters.values() for w in queue]
            self._waiters.clear()
        for waiter in waiters:
            waiter.error = reason
            waiter.event.set()
        self._ready.set()  # wakes start() if the JVM died before READY

    def _read_stderr(self, stream: IO[bytes]) -> None:
        # Drained continuously so the pipe never fills and blocks the JVM.
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._stderr_tail.append(line)
            log.info("jvm: %s", line)


def _check_int(what: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {value!r}")


def _check_field(what: str, text: object, allow_empty: bool = True) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {text!r}")
    if not allow_empty and not text:
        raise ValueError(f"{what} must not be empty")
    if _FORBIDDEN.search(text):
        raise ValueError(f"{what} must not contain tab or line-break characters: {text!r}")


def _format_value(value: int | float | str, type_: str) -> str:
    """The value as the JVM parses it (Integer.valueOf, Long.valueOf, Double.valueOf, raw string)."""
    if type_ not in _VALUE_TYPES:
        raise ValueError(f"type_ must be one of {', '.join(_VALUE_TYPES)}, got {type_!r}")
    if type_ == "string":
        _check_field("value", value)
        return str(value)
    if type_ in _INT_RANGES:
        _check_int("value", value)
        low, high = _INT_RANGES[type_]
        if not low <= int(value) <= high:
            raise ValueError(f"value {value} does not fit a Java {type_}")
        return str(int(value))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"value must be an int or float for type double, got {value!r}")
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return repr(number)
