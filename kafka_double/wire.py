"""Kafka framing and headers on top of kafka-python 3.0.12's spec-generated message classes
(docs/kafka-facts/protocol.md#headers). Nothing here hand-encodes a message body.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import kafka.protocol.admin
import kafka.protocol.consumer
import kafka.protocol.metadata
import kafka.protocol.producer
import kafka.protocol.sasl  # noqa: F401  (imported so its classes register below)
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.api_message import ApiMessage

from .releases import Release

API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7


def _message_classes() -> tuple[dict[int, type[ApiMessage]], dict[int, type[ApiMessage]]]:
    requests: dict[int, type[ApiMessage]] = {}
    responses: dict[int, type[ApiMessage]] = {}
    todo = list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is not None or getattr(cls, "_json", None) is None:
            continue  # versioned wrappers (Foo_v3) and abstract bases
        target = requests if cls.is_request() else responses
        target.setdefault(cls.API_KEY, cls)
    return requests, responses


REQUEST_CLASSES, RESPONSE_CLASSES = _message_classes()


class ProtocolError(Exception):
    """Anything that makes a real broker close the connection (parse failure, disabled API/version)."""


class RejectedHeader(ProtocolError):
    """A header the broker does not serve: an API outside its scope or a version outside its range, which Kafka's
    network processor rejects before any API sees the request (and logs in server.log)."""

    def __init__(self, message: str, api_key: int, api_name: str, version: int, known: bool) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_name = api_name
        self.version = version
        self.known = known  # the release's specs have this version: only this broker does not serve it


@dataclass
class RequestFrame:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int
    body: bytes


def request_header_version(release: Release, api_key: int, api_version: int) -> int:
    """docs/kafka-facts/protocol.md#headers: v2 for flexible request versions, else v1; ControlledShutdown v0 uses v0.

    Flexibility comes from the emulated release's spec (CSV flexible_versions). For an ApiVersions
    version above the release's max Kafka still parses header v2 from v3 on (generated
    ``requestHeaderVersion``), which the same rule gives.
    """
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    rng = release.api(api_key)
    if rng is not None and rng.is_flexible(api_version):
        return 2
    return 1


def parse_request(frame: bytes, release: Release) -> RequestFrame:
    if len(frame) < 8:
        raise ProtocolError(f"request frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame, 0)
    header_version = request_header_version(release, api_key, api_version)
    if header_version == 0:
        return RequestFrame(api_key, api_version, correlation_id, None, 0, frame[8:])
    buf = io.BytesIO(frame)
    try:
        header = RequestHeader.decode(buf, flexible=header_version == 2)
    except Exception as exc:  # malformed header: the broker closes the connection
        raise ProtocolError(f"cannot parse request header: {exc}") from exc
    body = frame[buf.tell() :]
    return RequestFrame(api_key, api_version, correlation_id, header.client_id, header_version, body)


def decode_body(req: RequestFrame) -> ApiMessage:
    cls = REQUEST_CLASSES.get(req.api_key)
    if cls is None:
        raise ProtocolError(f"no kafka-python message class for api key {req.api_key}")
    try:
        return cls.decode(req.body, version=req.api_version)
    except Exception as exc:
        raise ProtocolError(f"cannot parse api key {req.api_key} v{req.api_version}: {exc}") from exc


def response_class(api_key: int) -> type[ApiMessage]:
    return RESPONSE_CLASSES[api_key]


def encode_response(response: ApiMessage, correlation_id: int) -> bytes:
    """Frame + response header + body. Header v1 for flexible versions, v0 otherwise; kafka-python's
    ApiVersionsResponse forces header v0 at every version (docs/kafka-facts/protocol.md#headers)."""
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))
