"""Declarative configuration of the double's brokers (re-exported by :mod:`kafka_double.cluster`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .sasl_server import MECHANISMS
from .tls import ListenerTls

# What the double's listeners speak: Kafka's four security protocols; SASL with PLAIN and SCRAM.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")


@dataclass
class ListenerSpec:
    name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"  # one of SECURITY_PROTOCOLS
    port: int = 0  # 0: pick a free port
    network_processors: int = 3  # Kafka's num.network.threads default is 3
    # sasl.enabled.mechanisms of a SASL listener.
    sasl_mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-512")
    tls: ListenerTls | None = None  # required by SSL and SASL_SSL, refused by the others

    def __post_init__(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"listener {self.name}: security_protocol {self.security_protocol!r} is not emulated; "
                f"allowed: {', '.join(SECURITY_PROTOCOLS)}"
            )
        unknown = [m for m in self.sasl_mechanisms if m not in MECHANISMS]
        if unknown:
            raise ValueError(f"listener {self.name}: SASL mechanisms {unknown} are not emulated; allowed: {MECHANISMS}")
        if self.security_protocol in TLS_PROTOCOLS and self.tls is None:
            raise ValueError(
                f"listener {self.name}: security_protocol {self.security_protocol} needs tls "
                "(ListenerTls with the broker's certificate chain and key)"
            )
        if self.security_protocol not in TLS_PROTOCOLS and self.tls is not None:
            raise ValueError(
                f"listener {self.name}: tls is given but security_protocol is {self.security_protocol}; "
                f"use one of {', '.join(TLS_PROTOCOLS)}"
            )


def _default_listeners() -> list[ListenerSpec]:
    return [ListenerSpec("PLAINTEXT", "PLAINTEXT", 0, 3), ListenerSpec("INTERNAL", "PLAINTEXT", 0, 2)]


@dataclass
class BrokerSpec:
    id: int
    release: str = "4.1.0"
    listeners: list[ListenerSpec] = field(default_factory=_default_listeners)
    jmx_port: int = 0
    metrics_port: int = 0  # the Prometheus endpoint, when the cluster serves them (0: pick a free port)
    jmx_user: str | None = None
    jmx_password: str | None = None
    # "zookeeper" or "kraft" (kafka_double.releases.METADATA_MODES): which broker listener's APIs and features it
    # advertises. None: ZooKeeper before 3.3.0, KRaft from 3.3.0; 4.x is KRaft only, KRaft starts at 2.8.0.
    metadata_mode: str | None = None
