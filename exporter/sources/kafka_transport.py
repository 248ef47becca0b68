"""One fix to kafka-python 3.0.12's transport, applied when the Kafka-protocol sources are imported.

Its read loop (``KafkaTCPTransport._read_from_sock``, which the TLS transport inherits) drains the socket and, when
the drain ends at the peer's close, aborts the connection with "socket disconnected" and drops the bytes read
before the close. A real broker answers a failed SASL authentication (a wrong password) with a SaslAuthenticate
error and closes the connection at once (``Selector.handleCloseOnAuthenticationFailure``): when both arrive in one
drain, which over TLS is most of the time, kafka-python never sees the answer and the exporter reported a wrong
password as reason ``connection`` (found against real 4.4.0 brokers, tests/real_kafka/test_real_security.py).

Here the bytes are handed to the connection first, and the abort waits one turn of kafka-python's loop, so that
the request those bytes answer (the SASL exchange) fails with the broker's own error before the connection is lost.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import kafka
import kafka.errors as Errors
from kafka.net.transport import KafkaTCPTransport

log = logging.getLogger(__name__)

#: The kafka-python release whose read loop this replaces (pyproject.toml pins it).
PATCHED_RELEASE = "3.0.12"


async def _read_from_sock(self: Any) -> None:
    # kafka-python's own loop, except where the drain ended at the peer's close.
    while self._read and not self._closed:
        await self._net.wait_read(self._sock)
        received, error = self._sock_recv()
        if received:
            self.last_read = time.monotonic()
            if self._protocol and self._protocol._sensors:
                self._protocol._sensors.bytes_received.record(len(received))
            try:
                self._protocol.data_received(received)
            except Errors.KafkaProtocolError as exc:
                return self.abort(error=exc)
        if error:
            if received:
                # Whoever the last bytes answered runs before the connection is lost.
                await self._net.sleep(0)
            return self.abort(error=error)


def apply() -> None:
    """Replace the read loop on the pinned kafka-python only: another release may have fixed or changed it."""
    if kafka.__version__ != PATCHED_RELEASE:
        log.debug("kafka-python %s: its transport read loop is left as it is", kafka.__version__)
        return
    KafkaTCPTransport._read_from_sock = _read_from_sock
