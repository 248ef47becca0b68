"""An old Java producer (0.10-era) played over a raw connection, for tests that need one on the broker double (real
brokers get Kafka's own 0.10.2.2 producer, harness.clients' legacy Java client): ApiVersions v0 (no software name:
the broker records ``unknown``), then Metadata v1 and Produce v2 every ``period`` seconds on the same connection,
reconnecting when it drops. A 3.9 broker counts Produce v2 as deprecated; 4.x refuses it."""

from __future__ import annotations

import threading

from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from harness.raw_client import RawConnection


class LegacyClient:
    """Runs on a thread of its own between ``__enter__`` and ``__exit__``; ``requests_sent`` counts its Metadata and
    Produce requests."""

    def __init__(self, port: int, client_id: str, period: float = 2.0) -> None:
        self._port, self._client_id, self._period = port, client_id, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="legacy-client", daemon=True)
        self.requests_sent = 0

    def __enter__(self) -> LegacyClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with RawConnection(self._port) as legacy:
                    legacy.request(ApiVersionsRequest(version=0), client_id=self._client_id)
                    correlation = 1
                    while not self._stop.is_set():
                        for request in (
                            MetadataRequest(version=1, topics=[]),
                            ProduceRequest(version=2, acks=1, timeout_ms=1000, topic_data=[]),
                        ):
                            correlation += 1
                            legacy.request(request, correlation_id=correlation, client_id=self._client_id)
                            self.requests_sent += 1
                        self._stop.wait(self._period)
            except (OSError, ConnectionError):
                self._stop.wait(1.0)
