"""One long-lived Kafka protocol session per cluster, on kafka-python 3's connection manager.

kafka-python runs its own network loop on a dedicated IO thread; everything here is scheduled onto that
loop with the manager's thread-safe ``call_soon`` and awaited from asyncio through a bridged future, so
the exporter's event loop (and /metrics) never blocks on Kafka. Connections to brokers are opened once
and reused across cycles; a connection that breaks (broker restart) is dropped by kafka-python and
reopened on the next request, with its own KIP-511 ApiVersions handshake.
"""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import kafka.errors as Errors
from kafka.future import Future as KafkaFuture
from kafka.net.manager import KafkaConnectionManager
from kafka.net.sasl.oauth import AbstractTokenProvider
from kafka.net.selector import NetworkSelector

from exporter import __version__
from exporter.config.settings import ClusterConfig
from exporter.sources import kafka_transport
from exporter.sources.base import Reason, SourceError

log = logging.getLogger(__name__)

# Before any connection: a wrong password must read as the broker's answer, not as a lost connection.
kafka_transport.apply()

SOFTWARE_NAME = "kafka-client-exporter"
# ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN (docs/kafka-facts/protocol.md#software-name-pattern): anything
# else makes the broker answer INVALID_REQUEST and record the connection as unknown.
_SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

T = TypeVar("T")


def software_version(version: str = __version__) -> str:
    """Our version as Kafka's regex allows it (a local '+build' or '_' would be rejected)."""
    cleaned = re.sub(r"[^a-zA-Z0-9\-.]", "-", version).strip("-.")
    return cleaned if _SOFTWARE_PATTERN.fullmatch(cleaned) else "unknown"


class ProtocolError(SourceError):
    """A failed Kafka protocol call."""


# kafka-python (kafka/net/manager.py, _build_transport) turns any failure of the transport's handshake, which
# only the TLS transport has, into KafkaConnectionError("Handshake failed: <the SSLError>").
_HANDSHAKE_FAILED = "Handshake failed: "


# TLS alerts by which a broker refuses the client's certificate (none sent, or not trusted by its truststore).
_CLIENT_CERTIFICATE_REFUSED = ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN")


def _tls_error(exc: BaseException) -> ssl.SSLError | None:
    """The SSLError behind ``exc``: the KafkaConnectionError's context (a failed handshake, unless a later
    re-raise inside another except block replaced that context) or its argument (a failed read, e.g. the alert
    a broker sends after a TLS 1.3 handshake when it refuses the client certificate)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return current
        if current.args and isinstance(current.args[0], ssl.SSLError):
            return current.args[0]
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _failed_handshake(exc: BaseException) -> str | None:
    """What kafka-python said about a failed TLS handshake, or None when ``exc`` is not one."""
    if not isinstance(exc, Errors.KafkaConnectionError) or not exc.args:
        return None
    message = str(exc.args[0])
    return message.removeprefix(_HANDSHAKE_FAILED) if message.startswith(_HANDSHAKE_FAILED) else None


def classify(exc: BaseException) -> Reason:
    if _tls_error(exc) is not None or _failed_handshake(exc) is not None:
        return Reason.TLS
    if isinstance(exc, TimeoutError | Errors.KafkaTimeoutError | Errors.RequestTimedOutError):
        return Reason.TIMEOUT
    if isinstance(exc, Errors.SaslAuthenticationFailedError):
        return Reason.AUTHENTICATION
    if isinstance(exc, Errors.AuthorizationError):
        return Reason.AUTHORIZATION
    if isinstance(
        exc,
        Errors.KafkaConnectionError
        | Errors.NodeNotReadyError
        | Errors.UnknownBrokerIdError
        | OSError,  # refused, reset
    ):
        return Reason.CONNECTION
    return Reason.PROTOCOL


def describe(exc: BaseException) -> str:
    """One line for the operator: what failed, without kafka-python's repeated class names."""
    tls = _tls_error(exc)
    if isinstance(tls, ssl.SSLCertVerificationError):
        # e.g. "certificate has expired", "unable to get local issuer certificate", "Hostname mismatch, ..."
        return f"TLS handshake failed: the broker's certificate was refused: {tls.verify_message}"
    if tls is not None and any(alert in str(tls) for alert in _CLIENT_CERTIFICATE_REFUSED):
        return (
            f"TLS handshake failed: the broker refused the client certificate (none configured, or not trusted "
            f"by the broker): {getattr(tls, 'reason', None) or tls}"
        )
    if tls is not None:
        # `reason` (OpenSSL's, e.g. WRONG_VERSION_NUMBER) exists only on errors raised by the ssl module itself.
        return f"TLS handshake failed: {getattr(tls, 'reason', None) or tls.strerror or tls}"
    handshake = _failed_handshake(exc)
    if handshake is not None:
        # e.g. "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)"
        return f"TLS handshake failed: {handshake}"
    text = str(exc)
    name = type(exc).__name__
    # KafkaError.__str__ already starts with the class name (after "[Error N] " for broker error codes).
    return text if name in text.split(":", 1)[0] else f"{name}: {text}"


class _TokenFileProvider(AbstractTokenProvider):
    """OAUTHBEARER token read from a file for each new connection (rotated by whoever writes the file)."""

    def __init__(self, path: Any) -> None:
        self._path = path

    def token(self) -> str:
        return self._path.read_text(encoding="utf-8").strip()


def client_config(cluster: ClusterConfig, timeout_seconds: float) -> dict[str, Any]:
    """kafka-python configuration for one cluster; the only place secrets reach kafka-python."""
    timeout_ms = int(timeout_seconds * 1000)
    config: dict[str, Any] = {
        "bootstrap_servers": list(cluster.bootstrap_servers),
        "client_id": f"{SOFTWARE_NAME}-{__version__}",
        "client_software_name": SOFTWARE_NAME,
        "client_software_version": software_version(),
        "request_timeout_ms": timeout_ms,
        "socket_connection_setup_timeout_ms": timeout_ms,
        "socket_connection_setup_timeout_max_ms": timeout_ms,
        # A restarted broker is retried within a cycle or two, not after kafka-python's 30 s ceiling.
        "reconnect_backoff_max_ms": 2000,
        # Connections are kept across cycles; never close them as idle between two polls.
        "connections_max_idle_ms": 24 * 3600 * 1000,
        "security_protocol": cluster.security.protocol,
    }
    sasl = cluster.security.sasl
    if sasl is not None:
        config["sasl_mechanism"] = sasl.mechanism
        config["sasl_plain_username"] = sasl.username
        config["sasl_plain_password"] = sasl.secret()
        config["sasl_kerberos_service_name"] = sasl.kerberos_service_name
        config["sasl_kerberos_domain_name"] = sasl.kerberos_domain_name
        if sasl.token_file is not None:
            config["sasl_oauth_token_provider"] = _TokenFileProvider(sasl.token_file)
    tls = cluster.security.tls
    if tls is not None:
        config["ssl_cafile"] = str(tls.ca_file) if tls.ca_file else None
        config["ssl_certfile"] = str(tls.cert_file) if tls.cert_file else None
        config["ssl_keyfile"] = str(tls.key_file) if tls.key_file else None
        config["ssl_password"] = tls.key_password.get_secret_value() if tls.key_password else None
        config["ssl_crlfile"] = str(tls.crl_file) if tls.crl_file else None
        config["ssl_check_hostname"] = tls.check_hostname
    return config


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    node_id: int
    host: str
    port: int


def _bridge(future: KafkaFuture, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
    """An asyncio future completed (on ``loop``) when kafka-python's future completes on its IO thread."""
    result: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if result.done():
            return
        if error is not None:
            result.set_exception(error)
        else:
            result.set_result(value)

    future.add_callback(lambda value: loop.call_soon_threadsafe(settle, value, None))
    future.add_errback(lambda error: loop.call_soon_threadsafe(settle, None, error))
    return result


class KafkaSession:
    """The cluster's connection manager and IO thread, created on first use and rebuilt after an
    authentication failure (kafka-python caches those per node and would never retry)."""

    def __init__(self, cluster: ClusterConfig, timeout_seconds: float) -> None:
        self.cluster = cluster.name
        self._config = client_config(cluster, timeout_seconds)
        self._timeout = timeout_seconds
        self._net: NetworkSelector | None = None
        self._manager: KafkaConnectionManager | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> KafkaConnectionManager:
        with self._lock:
            if self._manager is None:
                self._net = NetworkSelector(**self._config)
                self._manager = KafkaConnectionManager(self._net, **self._config)
                self._net.start()
            return self._manager

    async def call(self, coroutine: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Run ``coroutine(manager, *args)`` on kafka-python's IO loop and await it here."""
        manager = self._ensure()
        future = manager.call_soon(coroutine, manager, *args)
        try:
            return await asyncio.wait_for(_bridge(future, asyncio.get_running_loop()), self._timeout + 1)
        except ProtocolError:
            raise
        except Exception as exc:
            reason = classify(exc)
            if isinstance(exc, Errors.UnknownBrokerIdError):
                raise ProtocolError(
                    reason,
                    f"broker {exc.args[0] if exc.args else '?'} is not in the cluster "
                    "metadata (stopped, fenced or removed)",
                ) from None
            if reason == Reason.AUTHENTICATION:
                await asyncio.to_thread(self.close)
            raise ProtocolError(reason, describe(exc)) from None

    async def brokers(self) -> list[BrokerAddress]:
        """Bootstrap when needed, refresh metadata, and return the brokers it lists (sorted by id)."""
        try:
            return await self.call(_refresh_brokers, int(self._timeout * 1000))
        except ProtocolError as error:
            if error.reason == Reason.AUTHENTICATION:
                await asyncio.to_thread(self.close)
            raise

    def close(self) -> None:
        with self._lock:
            manager, net = self._manager, self._net
            self._manager = self._net = None
        if manager is None or net is None:
            return
        try:
            manager.close()
            net.close()
        finally:
            net.stop()


async def _refresh_brokers(manager: KafkaConnectionManager, timeout_ms: int) -> list[BrokerAddress]:
    if not manager.bootstrapped:
        try:
            await manager.bootstrap_async(int(timeout_ms * 0.6), refresh=True)
        except Errors.KafkaTimeoutError:
            raise await _bootstrap_failure(manager, int(timeout_ms * 0.35)) from None
        except Exception as exc:
            node = manager.cluster.bootstrap_brokers()[0]
            raise ProtocolError(classify(exc), f"bootstrap {node.host}:{node.port}: {describe(exc)}") from None
    else:
        await manager.cluster.refresh_metadata()
    return sorted(
        (BrokerAddress(b.node_id, b.host, b.port) for b in manager.cluster.brokers()),
        key=lambda b: b.node_id,
    )


async def _bootstrap_failure(manager: KafkaConnectionManager, timeout_ms: int) -> ProtocolError:
    """kafka-python retries every failure (refused connection, failed SASL exchange, TLS error) until its
    bootstrap deadline and then only says "timeout"; one more attempt, awaited directly, says why."""
    node = manager.cluster.bootstrap_brokers()[0]
    manager.reset_backoff(node.node_id)
    error: BaseException
    try:
        conn = manager.get_connection(node.node_id, timeout_ms=timeout_ms)
        await conn
    except Exception as exc:  # the failure is the answer
        error = exc
    else:
        conn.close()
        error = Errors.KafkaTimeoutError("no metadata within the timeout")
    return ProtocolError(classify(error), f"bootstrap {node.host}:{node.port}: {describe(error)}")
