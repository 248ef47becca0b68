"""Server-side TLS over an accepted plain connection, driven through memory BIOs the way Kafka's SslTransportLayer
drives an SSLEngine over a SocketChannel.

asyncio's own server TLS (``start_server(ssl=...)``) would not do: it runs the handshake before the connection is
handed over (Kafka's Selector counts a connection from accept, handshake included) and on a failed handshake it
drops the connection without sending the TLS alert, where SslTransportLayer.handshakeFailure flushes it first
(docs/kafka-facts/jmx-mbeans.md#tls-cipher-gauge), so a client without an acceptable certificate reads
"certificate required" instead of a bare disconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl

_CHUNK = 65536


class TlsHandshakeFailed(Exception):
    """The handshake failed; the alert has been sent (as far as the peer still reads)."""


class TlsConnection:
    """The plaintext side of one TLS connection: ``readexactly``, ``write`` and ``drain`` like asyncio's streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, context: ssl.SSLContext) -> None:
        self._reader = reader
        self._writer = writer
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self.ssl_object = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._plain = bytearray()

    async def handshake(self) -> None:
        """Raises TlsHandshakeFailed (alert sent), or ConnectionError when the peer goes away mid-handshake."""
        while True:
            try:
                self.ssl_object.do_handshake()
            except ssl.SSLWantReadError:
                await self._flush()
                if not await self._fill():
                    raise ConnectionError("connection closed during the TLS handshake") from None
            except ssl.SSLError as exc:
                # The alert tells the client why; if it already hung up, the failure is still the handshake's.
                with contextlib.suppress(ConnectionError):
                    await self._flush()
                reason = exc.verify_message if isinstance(exc, ssl.SSLCertVerificationError) else str(exc)
                raise TlsHandshakeFailed(reason) from exc
            else:
                await self._flush()
                return

    async def readexactly(self, n: int) -> bytes:
        while len(self._plain) < n:
            try:
                chunk = self.ssl_object.read(_CHUNK)
            except ssl.SSLWantReadError:
                # TLS 1.3 sends session tickets after the handshake: keep the records flowing both ways.
                await self._flush()
                if not await self._fill():
                    raise asyncio.IncompleteReadError(bytes(self._plain), n) from None
                continue
            except ssl.SSLZeroReturnError:
                chunk = b""  # close_notify
            except ssl.SSLError as exc:
                raise ConnectionError(f"TLS error while reading: {exc}") from exc
            if not chunk:
                raise asyncio.IncompleteReadError(bytes(self._plain), n)
            self._plain += chunk
        data = bytes(self._plain[:n])
        del self._plain[:n]
        return data

    def write(self, data: bytes) -> None:
        self.ssl_object.write(data)
        self._writer.write(self._outgoing.read())

    async def drain(self) -> None:
        await self._writer.drain()

    async def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self._writer.write(data)
            await self._writer.drain()

    async def _fill(self) -> bool:
        data = await self._reader.read(_CHUNK)
        if not data:
            self._incoming.write_eof()
            return False
        self._incoming.write(data)
        return True
