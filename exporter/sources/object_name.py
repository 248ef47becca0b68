"""Parse JMX ObjectName strings as the JMXQuery jar prints them (key order kept, values maybe quoted)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

_QUOTE_ESCAPES = {"\\": "\\", '"': '"', "*": "*", "?": "?", "n": "\n"}


@dataclass(frozen=True, slots=True)
class ObjectName:
    domain: str
    properties: Mapping[str, str]  # read-only: parsed names are shared

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.properties)


def _unquote(value: str) -> str:
    # Kafka's Sanitizer.jmxSanitize quotes values holding JMX-special characters (ObjectName.quote).
    if len(value) < 2 or not (value.startswith('"') and value.endswith('"')):
        return value
    out: list[str] = []
    chars = iter(value[1:-1])
    for char in chars:
        if char == "\\":
            nxt = next(chars, "")
            out.append(_QUOTE_ESCAPES.get(nxt, nxt))
        else:
            out.append(char)
    return "".join(out)


def _split_properties(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    in_quotes = False
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\" and in_quotes:
            current.append(char)
            escaped = True
        elif char == '"':
            current.append(char)
            in_quotes = not in_quotes
        elif char == "," and not in_quotes:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


# A broker's MBean names are the same from cycle to cycle, and mostly the same from broker to broker (none names
# the broker): each is parsed once while it is among the most recently seen.
@functools.lru_cache(maxsize=4096)
def parse_object_name(name: str) -> ObjectName:
    """Split `domain:k1=v1,k2=v2` into its parts; raise ValueError when it is not an ObjectName."""
    domain, sep, rest = name.partition(":")
    if not sep or not rest:
        raise ValueError(f"not a JMX ObjectName: {name!r}")
    properties: dict[str, str] = {}
    # Unquoted values (nearly every MBean: Kafka quotes only values with JMX-special characters) split in C; names
    # are parsed for every MBean of every broker in every cycle.
    for part in _split_properties(rest) if '"' in rest else rest.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise ValueError(f"not a JMX ObjectName: {name!r}")
        properties[key] = _unquote(value)
    return ObjectName(domain, MappingProxyType(properties))
