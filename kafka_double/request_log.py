"""``kafka.request.logger`` "Completed request:" lines (docs/kafka-facts/request-log.md).

2.8.0+ writes docs/kafka-facts/request-log.md#json-form, older releases docs/kafka-facts/request-log.md#text-form.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.protocol.api_message import ApiMessage

from exporter.kafka_releases.table import enum_name

from .registry import ClientInformation
from .releases import Release
from .wire import RequestFrame

# kafka-python renames these bitfields; Kafka's JSON converters use the spec names (ints).
_AUTHORIZED_OPS_NAMES = {0: "clusterAuthorizedOperations", 1: "topicAuthorizedOperations"}
_INT32_MIN = -2147483648


def _camel(spec_name: str) -> str:
    # Generated JsonConverters use the spec field name with a lower-case first letter.
    return spec_name[:1].lower() + spec_name[1:]


def _kafka_uuid(value: uuid.UUID) -> str:
    # org.apache.kafka.common.Uuid.toString(): URL-safe base64 without padding.
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def _json_value(field: Any, value: Any) -> Any:
    type_str = field._type_str
    if type_str == "uuid":
        # kafka-python leaves an unset uuid as None; Kafka's default is Uuid.ZERO_UUID.
        return _kafka_uuid(value) if isinstance(value, uuid.UUID) else _kafka_uuid(uuid.UUID(int=0))
    if value is None:
        return None
    if type_str in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode()  # Jackson writes binary nodes as base64
    return value


def message_json(container: Any, version: int, depth: int = 0) -> dict[str, Any]:
    """camelCase rendering of a kafka-python message/struct, only fields present in ``version`` and
    tagged fields only when set to a non-default value (docs/kafka-facts/request-log.md#json-form)."""
    out: dict[str, Any] = {}
    for field in container._struct._fields:
        if not field.for_version_q(version):
            continue
        value = getattr(container, field.name)
        if field.tagged_field_q(version) and value == field.default:
            continue
        key = _camel(field._name)
        if field.name == "authorized_operations":
            key = _AUTHORIZED_OPS_NAMES[min(depth, 1)]
            out[key] = _INT32_MIN if value is None else value
        elif field._type_str == "records":
            # Produce/Fetch record data is replaced by its size (docs/kafka-facts/request-log.md#json-form).
            out[key + "SizeInBytes"] = len(bytes(value)) if value is not None else 0
        elif field.is_struct():
            out[key] = None if value is None else message_json(value, version, depth + 1)
        elif field.is_struct_array():
            out[key] = None if value is None else [message_json(v, version, depth + 1) for v in value]
        elif field.is_array():
            out[key] = None if value is None else [_json_value(field.array_of, v) for v in value]
        else:
            out[key] = _json_value(field, value)
    return out


# Spec fields renamed since the release that logs them; kafka-python carries the newest spec
# (docs/kafka-facts/request-log.md#json-form). Keyed by the API's name in the emulated release.
_OLDER_FIELD_NAMES = {
    "ListClientMetricsResources": {"configResources": "clientMetricsResources", "resourceName": "name"},
}


def _renamed(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {names.get(key, key): _renamed(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, names) for item in value]
    return value


def release_message_json(api_name: str, container: Any, version: int) -> dict[str, Any]:
    """``message_json`` with the field names of the spec the emulated release was built from."""
    body = message_json(container, version)
    names = _OLDER_FIELD_NAMES.get(api_name)
    return body if names is None else _renamed(body, names)


def _text_scalar(field: Any, value: Any) -> str:
    if value is None:
        return "null"
    if field._type_str in ("bytes", "records"):
        n = len(bytes(value))
        return f"java.nio.HeapByteBuffer[pos=0 lim={n} cap={n}]"  # ByteBuffer.toString()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def message_text(container: Any, version: int, flexible: bool) -> str:
    """2.x ``Struct.toString()``: ``{snake_name=value,...}``, flexible versions end with
    ``_tagged_fields={}`` (docs/kafka-facts/request-log.md#text-form)."""
    parts = []
    for field in container._struct._fields:
        if not field.for_version_q(version) or field.tagged_field_q(version):
            continue
        value = getattr(container, field.name)
        if value is None:
            text = "null"
        elif field.is_struct():
            text = message_text(value, version, flexible)
        elif field.is_struct_array():
            text = "[" + ",".join(message_text(v, version, flexible) for v in value) + "]"
        elif field.is_array():
            text = "[" + ",".join(_text_scalar(field.array_of, v) for v in value) + "]"
        else:
            text = _text_scalar(field, value)
        parts.append(f"{field.name}={text}")
    if flexible:
        parts.append("_tagged_fields={}")
    return "{" + ",".join(parts) + "}"


def _text_body(rel: Release, api_key: int, message: ApiMessage | None) -> str:
    if message is None:
        return ""
    version = message.version
    if api_key == 0 and message.is_request():
        # ProduceRequest.toString(verbose=false) at DEBUG (docs/kafka-facts/request-log.md#text-form).
        n = sum(len(t.partition_data) for t in message.topic_data)
        return f"{{acks={message.acks},timeout={message.timeout_ms},numPartitions={n}}}"
    rng = rel.api(api_key)
    return message_text(message, version, rng is not None and rng.is_flexible(version))


@dataclass
class CompletedRequest:
    frame: RequestFrame
    api_name: str
    request: ApiMessage | None
    response: ApiMessage | None
    connection_id: str
    listener: str
    security_protocol: str
    # Captured BEFORE an ApiVersions registration (docs/kafka-facts/request-log.md#client-information-lag).
    client_information: ClientInformation
    received_at: float  # time.monotonic()
    dequeued_at: float
    handled_at: float
    sent_at: float
    principal: str = "User:ANONYMOUS"


def _ms(a: float, b: float) -> float:
    return round(max(b - a, 0.0) * 1000.0, 3)


def _version(message: ApiMessage, fallback: int) -> int:
    # Unknown-version ApiVersions: handled as an empty v0 request (docs/kafka-facts/protocol.md#apiversions-fallback).
    return message.version if message.version is not None else fallback


def json_message(rel: Release, c: CompletedRequest) -> str:
    f = c.frame
    header: dict[str, Any] = {
        "requestApiKey": f.api_key,
        "requestApiVersion": f.api_version,
        "correlationId": f.correlation_id,
    }
    if f.header_version >= 1:
        header["clientId"] = f.client_id  # absent for header v0
    header["requestApiKeyName"] = enum_name(c.api_name)
    if rel.key >= (3, 7, 0) and rel.is_deprecated(f.api_key, f.api_version):
        header["requestApiVersionDeprecated"] = True  # KIP-896, only ever true
    body = {
        "isForwarded": False,
        "requestHeader": header,
        "request": (
            release_message_json(c.api_name, c.request, _version(c.request, f.api_version))
            if c.request is not None
            else ""
        ),
        # An unknown-version ApiVersions is answered in v0 (docs/kafka-facts/protocol.md#apiversions-fallback).
        "response": (
            release_message_json(c.api_name, c.response, c.response.version) if c.response is not None else ""
        ),
        "connection": c.connection_id,
        "totalTimeMs": _ms(c.received_at, c.sent_at),
        "requestQueueTimeMs": _ms(c.received_at, c.dequeued_at),
        "localTimeMs": _ms(c.dequeued_at, c.handled_at),
        "remoteTimeMs": 0.0,
        "throttleTimeMs": 0,
        "responseQueueTimeMs": 0.0,
        "sendTimeMs": _ms(c.handled_at, c.sent_at),
        "securityProtocol": c.security_protocol,
        "principal": c.principal,
        "listener": c.listener,
        "clientInformation": {
            "softwareName": c.client_information.software_name,
            "softwareVersion": c.client_information.software_version,
        },
    }
    return "Completed request:" + json.dumps(body, separators=(",", ":"))


def text_message(rel: Release, c: CompletedRequest) -> str:
    f = c.frame
    line = (
        f"Completed request:RequestHeader(apiKey={enum_name(c.api_name)}, apiVersion={f.api_version}, "
        f"clientId={'null' if f.client_id is None else f.client_id}, correlationId={f.correlation_id}) -- "
        f"{_text_body(rel, f.api_key, c.request)},response:{_text_body(rel, f.api_key, c.response)}"
        f" from connection {c.connection_id};"
        f"totalTime:{_ms(c.received_at, c.sent_at)},requestQueueTime:{_ms(c.received_at, c.dequeued_at)},"
        f"localTime:{_ms(c.dequeued_at, c.handled_at)},remoteTime:0.0,"
        # throttleTime is a Double in 2.0-2.5 and a Long in 2.6-2.7 (docs/kafka-facts/request-log.md#text-form).
        f"throttleTime:{'0.0' if rel.key < (2, 6, 0) else '0'},responseQueueTime:0.0,"
        f"sendTime:{_ms(c.handled_at, c.sent_at)},securityProtocol:{c.security_protocol},"
        f"principal:{c.principal},listener:{c.listener}"
    )
    if rel.has_client_mbeans:
        ci = c.client_information
        line += (
            f",clientInformation:ClientInformation(softwareName={ci.software_name}, "
            f"softwareVersion={ci.software_version})"
        )
    return line


def log4j_timestamp(wall_time: float | None = None) -> str:
    """``%d`` of Kafka's log4j layout ``[%d] %p %m (%c)%n``: local time, ``yyyy-MM-dd HH:mm:ss,SSS``."""
    now = time.time() if wall_time is None else wall_time
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"


def format_line(rel: Release, c: CompletedRequest, wall_time: float | None = None) -> str:
    """Full log4j line: ``[yyyy-MM-dd HH:mm:ss,SSS] DEBUG <message> (kafka.request.logger)``."""
    stamp = log4j_timestamp(wall_time)
    message = json_message(rel, c) if rel.json_request_log else text_message(rel, c)
    return f"[{stamp}] DEBUG {message} (kafka.request.logger)"


class RequestLog:
    """``<dir>/broker-<id>/kafka-request.log``; appends one line per completed request."""

    def __init__(self, directory: Path, broker_id: int, release: Release) -> None:
        self.path = Path(directory) / f"broker-{broker_id}" / "kafka-request.log"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.release = release
        self._lock = threading.Lock()
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, completed: CompletedRequest) -> None:
        line = format_line(self.release, completed)
        with self._lock:
            if not self._fh.closed:
                self._fh.write(line + "\n")
                self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._fh.close()
