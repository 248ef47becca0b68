"""The broker's ``server.log``: the events of a request its network processor rejects before any API handles it.

A header the broker does not serve (a version removed by KIP-896 after an upgrade to 4.x, or an API its kind of
broker does not serve) makes ``Processor.parseRequestHeader`` throw; ``processChannelException`` closes the
connection and logs ERROR "Closing socket for <connection id> because of error" with the exception, then
``processException`` logs ERROR "Exception while processing request from <connection id>" with it again. Logger
``kafka.network.Processor``, layout ``[%d] %p %m (%c)%n`` (config/log4j2.yaml, log4j.properties before 4.0); Kafka's
ApiException keeps no stack trace, so the exception is one line.

No logger prefix, in any release: ``Processor`` mixes in ``Logging`` without setting ``logIdent``, which Logging
prepends only when set (core/src/main/scala/kafka/utils/Logging.scala, 3.9.0 cc53a632edcf:51-52, 4.3.0
a9ce3221537b:55-56); only ``SocketServer`` itself sets ``[SocketServer listenerType=..., nodeId=...] ``. Checked in
core/src/main/scala/kafka/network/SocketServer.scala at every release commit the double's table names, 2.0.0-4.3.1
(``SocketServer`` sets it at 2.0.0 3402a8361b73:64, 3.9.0 cc53a632edcf:92, 4.0.0 4ae681446f18:91, 4.3.0
a9ce3221537b:91; ``class Processor`` at 492, 902, 823 and 797 never does, and logs the two events at 613/709,
1044/1176, 951/1074 and 927/1056; the ``this.logIdent = logPrefix`` of 2.8-3.1 at line 558 is the Acceptor's), and in
the 4.4.0 jar (kafka_2.13-4.4.0.jar: kafka.network.Processor never calls ``logIdent_$eq``). Real 3.9.2 and 4.4.0
brokers write ``[<stamp>] ERROR Closing socket for <connection id> because of error (kafka.network.Processor)``.

The exception differs by release:

* 4.4.0 (server/src/main/java/org/apache/kafka/network/Processor.java:38-40, KAFKA-20648 155640c0a7 on the 4.4
  branch; the same in the 4.4.0 jar and on a real 4.4.0 broker): InvalidRequestException "Received request for disabled
  api with key K (ENUM_NAME) and version V" when the release knows the version but this broker does not serve the
  API (``ApiKeys.name()``: ``(BEGIN_QUORUM_EPOCH)``), else UnsupportedVersionException "Received request for api with
  key K (Name) and unsupported version V" (the ``name`` field: ``(Produce)``);
* 4.0.0-4.3.x (SocketServer.scala 4ae681446f18:801-810, a9ce3221537b:775-784): the same two, both with the message
  name (``(Vote)``): Scala's ``header.apiKey().name`` reads the field, as RequestChannel's ``header.apiKey.name`` does
  for the request metrics' ``request=Produce`` (inferred so; no 4.0-4.3 broker has been run to see it);
* 3.5.0-3.9.x (c97b88d5db4d:1116-1123, cc53a632edcf:1119-1126; a real 3.9.2 broker, for BeginQuorumEpoch v0, Vote v0
  and Produce v12): InvalidRequestException "Received request api key ENUM_NAME with version V which is not enabled",
  for an API outside the listener's scope and for a version outside ApiKeys' range alike;
* 2.8.0-3.4.x (ebb1d6e21cc9:998-1005, 2e1947d24060:1064-1071): InvalidRequestException "Received request api key
  ENUM_NAME which is not enabled", only for an API outside the listener's scope: ``isApiEnabled`` checks no version
  (core/src/main/scala/kafka/server/ApiVersionManager.scala 2e1947d24060:96-98);
* 2.7.x (448719dc99a1:932-938): InvalidRequestException "Received request for disabled api key ENUM_NAME", for the
  APIs ApiKeys disables (the quorum APIs);
* 2.0.0-2.6.x: no header check.

Before 3.5 a version outside the range passes the header check: the request body is parsed
(``RequestContext.parseRequest``), and what the broker then logs depends on the body (an InvalidRequestException
naming the listener and principal, with the parser's cause and its stack trace, when the parse fails). The double does
not emulate that: it writes nothing for those rejections.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TextIO

from exporter.kafka_releases.table import enum_name

from .releases import Release
from .request_log import log4j_timestamp

_ERRORS = "org.apache.kafka.common.errors."


def rejection_exception(release: Release, api_key: int, api_name: str, version: int, known: bool) -> str | None:
    """The exception line ``release``'s processor logs for a header it rejects, None when it has no header check
    for this request (before 3.5: a version outside the range of an API the listener serves; before 2.7: any).
    ``known``: the release's ApiKeys has this version of this API (it is only not served by this broker)."""
    invalid = "InvalidRequestException"
    if release.key >= (4, 0, 0):
        if known:
            # 4.4.0's Java Processor names the ApiKeys constant (``name()``); 4.0-4.3's Scala read the ``name`` field.
            name = enum_name(api_name) if release.key >= (4, 4, 0) else api_name
            disabled = f"Received request for disabled api with key {api_key} ({name}) and version {version}"
            return f"{_ERRORS}{invalid}: {disabled}"
        unsupported = f"Received request for api with key {api_key} ({api_name}) and unsupported version {version}"
        return f"{_ERRORS}UnsupportedVersionException: {unsupported}"
    constant = enum_name(api_name)
    if release.key >= (3, 5, 0):
        return f"{_ERRORS}{invalid}: Received request api key {constant} with version {version} which is not enabled"
    if release.api(api_key) is not None:
        return None  # 2.x-3.4 check the API, not the version: this one went on to the body parser
    if release.key >= (2, 8, 0):
        return f"{_ERRORS}{invalid}: Received request api key {constant} which is not enabled"
    if release.key >= (2, 7, 0):
        return f"{_ERRORS}{invalid}: Received request for disabled api key {constant}"
    return None


def rejection_events(
    release: Release, connection_id: str, api_key: int, api_name: str, version: int, known: bool
) -> list[str]:
    """The lines one rejected request adds (none where ``rejection_exception`` is None)."""
    exception = rejection_exception(release, api_key, api_name, version, known)
    if exception is None:
        return []
    stamp = log4j_timestamp()
    return [
        f"[{stamp}] ERROR Closing socket for {connection_id} because of error (kafka.network.Processor)",
        exception,
        f"[{stamp}] ERROR Exception while processing request from {connection_id} (kafka.network.Processor)",
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
        lines = rejection_events(self.release, connection_id, api_key, api_name, version, known)
        with self._lock:
            if self._closed or not lines:
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
