"""The broker's ``server.log``: the events of a request its network processor rejects before any API handles it.

A header the broker does not serve (a version removed by KIP-896 after an upgrade to 4.x, or an API its kind of
broker does not serve) makes ``Processor.parseRequestHeader`` throw; ``processChannelException`` closes the
connection and logs ERROR "Closing socket for <connection id> because of error" with the exception, then
``processException`` logs ERROR "Exception while processing request from <connection id>" with it again. Logger
``kafka.network.Processor``, prefix ``[SocketServer listenerType=<BROKER|ZK_BROKER>, nodeId=<id>]``, layout
``[%d] %p %m (%c)%n`` (config/log4j2.yaml, log4j.properties before 4.0); Kafka's ApiException keeps no stack trace,
so the exception is one line. The exception differs by release (core/src/main/scala/kafka/network/SocketServer.scala):

* 4.0.0-4.3.0 (4ae681446f18:801-810, a9ce3221537b:775-784): InvalidRequestException "Received request for disabled
  api with key K (Name) and version V" when the release knows the version but this broker does not serve the API,
  else UnsupportedVersionException "Received request for api with key K (Name) and unsupported version V";
* 3.x (cc53a632edcf:1119-1126): InvalidRequestException "Received request api key ENUM_NAME with version V which is
  not enabled".
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TextIO

from exporter.kafka_releases.table import enum_name

from .releases import ZOOKEEPER, Release
from .request_log import log4j_timestamp

_ERRORS = "org.apache.kafka.common.errors."


def rejection_events(
    release: Release, broker_id: int, connection_id: str, api_key: int, api_name: str, version: int, known: bool
) -> list[str]:
    """The lines one rejected request adds; ``known``: the release's ApiKeys has this version of this API (it is
    only not served by this broker), so 4.x says "disabled api" instead of "unsupported version"."""
    stamp = log4j_timestamp()
    listener_type = "ZK_BROKER" if release.metadata_mode == ZOOKEEPER else "BROKER"
    prefix = f"[{stamp}] ERROR [SocketServer listenerType={listener_type}, nodeId={broker_id}] "
    if release.key >= (4, 0, 0):
        if known:
            exception = f"{_ERRORS}InvalidRequestException: Received request for disabled api with key {api_key} "
            exception += f"({api_name}) and version {version}"
        else:
            exception = f"{_ERRORS}UnsupportedVersionException: Received request for api with key {api_key} "
            exception += f"({api_name}) and unsupported version {version}"
    else:
        exception = f"{_ERRORS}InvalidRequestException: Received request api key {enum_name(api_name)} with version "
        exception += f"{version} which is not enabled"
    return [
        f"{prefix}Closing socket for {connection_id} because of error (kafka.network.Processor)",
        exception,
        f"{prefix}Exception while processing request from {connection_id} (kafka.network.Processor)",
        exception,
    ]


class ServerLog:
    """``<dir>/broker-<id>/server.log``, appended to as the broker rejects requests."""

    def __init__(self, directory: Path, broker_id: int, release: Release) -> None:
        self.path = Path(directory) / f"broker-{broker_id}" / "server.log"
        self.broker_id = broker_id
        self.release = release
        self._lock = threading.Lock()
        # Opened on the first event: the double writes no other server.log line, so no event means no file.
        self._fh: TextIO | None = None
        self._closed = False

    def rejected(self, connection_id: str, api_key: int, api_name: str, version: int, known: bool) -> None:
        lines = rejection_events(self.release, self.broker_id, connection_id, api_key, api_name, version, known)
        with self._lock:
            if self._closed:
                return
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("a", encoding="utf-8")
            self._fh.write("\n".join(lines) + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._fh is not None:
                self._fh.close()
