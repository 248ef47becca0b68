"""One emulated broker's socket server: listeners, network processors, connections (asyncio).

Mirrors kafka.network.SocketServer/Processor where it matters for client inventory:
processor ids from one counter per broker (docs/kafka-facts/jmx-mbeans.md#processor-ids), round-robin
assignment of accepted connections, one in-flight request per connection (Kafka mutes a channel until its
response is sent), ApiVersions interception before KafkaApis (docs/kafka-facts/jmx-mbeans.md#how-the-count-changes),
and closing the connection on anything the broker cannot parse or does not serve.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import ssl
from dataclasses import dataclass, field
from typing import Protocol

from kafka.protocol.api_message import ApiMessage

from exporter.kafka_releases import table

from .client_metrics import ClusterConfigState
from .handler_context import HandlerContext
from .handlers import api_versions, handler_for
from .registry import BrokerMetrics, ChannelRegistry
from .releases import Release
from .sasl_server import SASL_AUTHENTICATION_FAILED, SaslFailure, SaslSession
from .specs import SASL_PROTOCOLS, ListenerSpec
from .tls import negotiated, peer_principal, server_context
from .tls_transport import TlsConnection, TlsHandshakeFailed
from .topology import Topology
from .wire import (
    API_VERSIONS,
    ProtocolError,
    RejectedHeader,
    RequestFrame,
    decode_body,
    encode_response,
    parse_request,
    response_class,
)

log = logging.getLogger("kafka_double")

# socket.request.max.bytes default (100 MiB): larger frames make Kafka close the connection.
MAX_REQUEST_BYTES = 104857600
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
# connection.failed.authentication.delay.ms default. Kafka's Selector mutes the channel for that long and only then
# sends the SASL_AUTHENTICATION_FAILED answer and closes at once (Selector.handleCloseOnAuthenticationFailure), so the
# answer and the close reach the client together.
FAILED_AUTHENTICATION_DELAY = 0.1


class _Inbound(Protocol):
    async def readexactly(self, n: int) -> bytes: ...


class _Outbound(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


@dataclass
class _Dispatched:
    request: ApiMessage | None
    response: ApiMessage | None
    api_name: str
    close_after: bool = False  # Kafka closes the connection once this response is sent
    close_delay: float = 0.0  # ... and waits this long before sending it (connection.failed.authentication.delay.ms)
    # The SASL exchange (and a SASL listener's ApiVersions before it) runs in the authenticator, outside the request
    # channel: Kafka meters none of it (RequestChannel.updateRequestMetrics never sees it).
    metered: bool = True


@dataclass
class _Listener:
    spec: ListenerSpec
    port: int
    processor_ids: list[int]
    server: asyncio.Server | None = None
    ssl_context: ssl.SSLContext | None = None  # SSL and SASL_SSL listeners
    _rr: itertools.cycle = field(init=False)

    def __post_init__(self) -> None:
        self._rr = itertools.cycle(self.processor_ids)

    def next_processor(self) -> int:
        return next(self._rr)


class BrokerServer:
    """One broker incarnation: created on start, discarded on kill; ``restart`` makes a new one."""

    def __init__(
        self,
        broker_id: int,
        release: Release,
        listeners: list[tuple[ListenerSpec, int]],
        host: str,
        topology: Topology,
        metrics: BrokerMetrics,
        configs: ClusterConfigState,
        sasl_users: dict[str, str],
    ) -> None:
        self.broker_id = broker_id
        self.release = release
        self.host = host
        self.topology = topology
        self.metrics = metrics
        self.configs = configs
        self.sasl_users = sasl_users
        ids = itertools.count()  # SocketServer.nextProcessorId: one counter across all listeners
        self.listeners: list[_Listener] = []
        for spec, port in listeners:
            pids = [next(ids) for _ in range(spec.network_processors)]
            for pid in pids:
                metrics.add_processor(spec.name, pid)
            context = server_context(spec.tls) if spec.tls is not None else None
            self.listeners.append(_Listener(spec, port, pids, ssl_context=context))
        # Processor.nextConnectionIndex: per processor, part of the connection id.
        self._conn_index = {pid: itertools.count() for lst in self.listeners for pid in lst.processor_ids}
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        for lst in self.listeners:
            # Plain TCP even for TLS listeners: _accept runs the handshake (see tls_transport).
            lst.server = await asyncio.start_server(
                functools.partial(self._accept, lst), self.host, lst.port, reuse_address=True
            )
            self.topology.set_listener_port(self.broker_id, lst.spec.name, lst.port)
        self.topology.set_alive(self.broker_id, True)

    async def stop(self) -> None:
        """Kill: listeners stop accepting, open connections are dropped, JMX state is detached."""
        self.topology.set_alive(self.broker_id, False)
        self.metrics.detach()
        for lst in self.listeners:
            if lst.server is not None:
                lst.server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for lst in self.listeners:
            if lst.server is not None:
                await lst.server.wait_closed()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)

    async def _accept(self, lst: _Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        pid = lst.next_processor()
        conn_id = self._connection_id(writer, pid)
        channel = self.metrics.open_channel(pid, conn_id)
        ctx = HandlerContext(self.release, self.broker_id, lst.spec.name, self.topology, self.configs)
        sasl = (
            SaslSession(self.sasl_users, tuple(lst.spec.sasl_mechanisms), self.release.scram_nonce_check)
            if lst.spec.security_protocol in SASL_PROTOCOLS
            else None
        )
        inbound: _Inbound = reader
        outbound: _Outbound = writer
        try:
            if lst.ssl_context is not None:
                tls = TlsConnection(reader, writer, lst.ssl_context)
                await tls.handshake()
                inbound = outbound = tls
                # SslTransportLayer.handshakeFinished registers the session's cipher suite and protocol
                # (docs/kafka-facts/jmx-mbeans.md#tls-cipher-gauge).
                channel.register_cipher_information(*negotiated(tls.ssl_object))
                if lst.spec.security_protocol == "SSL":
                    # DefaultKafkaPrincipalBuilder.build: an SSL listener's principal is the peer certificate's
                    # subject DN, ANONYMOUS without one (docs/kafka-facts/jmx-mbeans.md#tls-principal).
                    ctx.principal = peer_principal(tls.ssl_object)
            while True:
                size = int.from_bytes(await inbound.readexactly(4), "big", signed=True)
                if size < 0 or size > MAX_REQUEST_BYTES:
                    log.warning("broker %s: closing %s: invalid request size %d", self.broker_id, conn_id, size)
                    break
                frame = await inbound.readexactly(size)
                if not await self._handle(lst, ctx, channel, sasl, conn_id, outbound, frame):
                    break
        except TlsHandshakeFailed as failed:
            # Selector logs this at INFO, SslTransportLayer the cause at DEBUG
            # (docs/kafka-facts/jmx-mbeans.md#tls-cipher-gauge).
            peer = writer.get_extra_info("peername")
            log.info(
                "broker %s: Failed authentication with /%s (channelId=%s) (SSL handshake failed)",
                self.broker_id,
                peer[0] if peer else "?",
                conn_id,
            )
            log.debug("broker %s: SSL handshake of %s failed: %s", self.broker_id, conn_id, failed)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # client went away (or the broker was killed)
        except Exception:
            log.exception("broker %s: unexpected error on %s", self.broker_id, conn_id)
        finally:
            channel.close()  # decrements the connection's key (docs/kafka-facts/jmx-mbeans.md#how-the-count-changes)
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(task)

    def _connection_id(self, writer: asyncio.StreamWriter, pid: int) -> str:
        local = writer.get_extra_info("sockname")
        remote = writer.get_extra_info("peername")
        index = next(self._conn_index[pid])
        base = f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}"
        # docs/kafka-facts/request-log.md#connection-ids: 4.0+ adds the processor id before the index.
        return f"{base}-{pid}-{index}" if self.release.connection_id_has_processor else f"{base}-{index}"

    async def _handle(
        self,
        lst: _Listener,
        ctx: HandlerContext,
        channel: ChannelRegistry,
        sasl: SaslSession | None,
        conn_id: str,
        writer: _Outbound,
        frame: bytes,
    ) -> bool:
        """Serve one request; False means close the connection (as Kafka does on these errors)."""
        # Request context (incl. client information) is built before ApiVersions registers anything
        # (docs/kafka-facts/request-log.md#client-information-lag).
        info_before = channel.current
        try:
            req = parse_request(frame, self.release)
            dispatched = self._dispatch(ctx, channel, sasl, req)
        except ProtocolError as exc:
            log.warning(
                "broker %s: closing connection %s (listener %s): %s", self.broker_id, conn_id, lst.spec.name, exc
            )
            return False
        response, api_name = dispatched.response, dispatched.api_name
        if dispatched.close_delay:
            await asyncio.sleep(dispatched.close_delay)
        if response is not None:
            writer.write(encode_response(response, req.correlation_id))
            await writer.drain()
        if not dispatched.metered:
            return not dispatched.close_after
        if self.release.deprecated_metrics and self.release.is_deprecated(req.api_key, req.api_version):
            # docs/kafka-facts/jmx-mbeans.md#deprecated-requests-meter: marked by RequestChannel.updateRequestMetrics.
            self.metrics.mark_deprecated_request(api_name, req.api_version, info_before)
        return not dispatched.close_after

    def _dispatch(
        self, ctx: HandlerContext, channel: ChannelRegistry, sasl: SaslSession | None, req: RequestFrame
    ) -> _Dispatched:
        rng = self.release.api(req.api_key)
        if req.api_key == API_VERSIONS:
            assert rng is not None
            decision = api_versions(ctx, req, lambda: decode_body(req))
            if decision.register is not None:
                channel.register_client_information(decision.register)
            # Before authentication a SASL listener's ApiVersions is answered by SaslServerAuthenticator, which
            # registers the client but never reaches the request channel: no request metrics.
            in_authenticator = sasl is not None and not sasl.authenticated
            return _Dispatched(decision.request_body, decision.response, rng.name, metered=not in_authenticator)
        if sasl is not None and not sasl.authenticated:
            return self._authenticate(ctx, sasl, req)
        if rng is None or not rng.accepts(req.api_version):
            # Kafka: a header this broker does not serve fails request parsing -> connection closed.
            raise self._rejected(req)
        body = decode_body(req)
        return _Dispatched(body, handler_for(req.api_key)(ctx, req, body), rng.name)

    def _rejected(self, req: RequestFrame) -> ProtocolError:
        spec = table.ranges(self.release.specs_release).get(req.api_key)
        if spec is None:
            # Not an API of this release at all: Kafka fails earlier, in RequestHeader.parse.
            return ProtocolError(f"api key {req.api_key} is not an API of Kafka {self.release.version}")
        served = self.release.api(req.api_key)
        what = "is not served by" if served is None else f"v{req.api_version} is not supported by"
        return RejectedHeader(
            f"{spec.name} {what} emulated {self.release.version}",
            req.api_key,
            spec.name,
            req.api_version,
            known=spec.min_version <= req.api_version <= spec.max_version,
        )

    def _authenticate(self, ctx: HandlerContext, sasl: SaslSession, req: RequestFrame) -> _Dispatched:
        """SaslServerAuthenticator: only SaslHandshake and SaslAuthenticate until the exchange succeeds."""
        rng = self.release.api(req.api_key)
        if rng is None or not rng.accepts(req.api_version) or req.api_key not in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            raise ProtocolError(f"Unexpected Kafka request of type {req.api_key} during SASL handshake")
        body = decode_body(req)
        resp_cls = response_class(req.api_key)
        version = req.api_version
        if req.api_key == SASL_HANDSHAKE:
            if sasl.mechanism is not None:
                raise ProtocolError("SaslHandshake received twice during SASL authentication")
            error = sasl.handshake(body.mechanism)
            response = resp_cls(version=version, error_code=error, mechanisms=list(sasl.enabled))
            if version == 0 and not error:
                # v0 is followed by unframed SASL tokens, which the double does not speak.
                log.warning("broker %s: SaslHandshake v0 (unframed tokens) is not emulated", self.broker_id)
                return _Dispatched(body, response, rng.name, close_after=True, metered=False)
            return _Dispatched(body, response, rng.name, close_after=bool(error), metered=False)
        try:
            token = sasl.authenticate(bytes(body.auth_bytes))
        except SaslFailure as failure:
            response = resp_cls(
                version=version, error_code=SASL_AUTHENTICATION_FAILED, error_message=str(failure), auth_bytes=b""
            )
            return _Dispatched(
                body, response, rng.name, close_after=True, close_delay=FAILED_AUTHENTICATION_DELAY, metered=False
            )
        if sasl.principal is not None:
            ctx.principal = sasl.principal
        response = resp_cls(version=version, error_code=0, error_message=None, auth_bytes=token, session_lifetime_ms=0)
        return _Dispatched(body, response, rng.name, metered=False)
