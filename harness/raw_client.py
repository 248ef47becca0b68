"""A minimal Kafka connection speaking through kafka-python's message classes, for requests no client library
sends any more (old or deprecated versions, malformed software names): tests use it to play a legacy client."""

from __future__ import annotations

import socket
import struct

from kafka.protocol.api_message import ApiMessage


class RawConnection:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)

    def send(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._read(4))[0]
        return struct.pack(">i", size) + self._read(size)

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by the broker")
            data += chunk
        return data

    def request(self, msg: ApiMessage, correlation_id: int = 1, client_id: str = "probe") -> bytes:
        """Send one request and return the whole response frame (size prefix included)."""
        msg.with_header(correlation_id=correlation_id, client_id=client_id)
        self.send(bytes(msg.encode(header=True, framed=True)))
        return self.recv_frame()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
