"""Declarative configuration of the double's brokers (re-exported by :mod:`kafka_double.cluster`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ListenerSpec:
    name: str = "PLAINTEXT"
    # Only PLAINTEXT is served today; the field exists so SASL/SSL can be added per listener later.
    security_protocol: str = "PLAINTEXT"
    port: int = 0  # 0: pick a free port
    network_processors: int = 3  # Kafka's num.network.threads default is 3


def _default_listeners() -> list[ListenerSpec]:
    return [ListenerSpec("PLAINTEXT", "PLAINTEXT", 0, 3), ListenerSpec("INTERNAL", "PLAINTEXT", 0, 2)]


@dataclass
class BrokerSpec:
    id: int
    release: str = "4.1.0"
    listeners: list[ListenerSpec] = field(default_factory=_default_listeners)
    jmx_port: int = 0
    jmx_user: str | None = None
    jmx_password: str | None = None
    tls_cipher_gauges: bool = True
