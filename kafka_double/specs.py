"""Declarative configuration of the double's brokers (re-exported by :mod:`kafka_double.cluster`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .mbean_host import JmxTls
from .sasl_server import MECHANISMS
from .tls import TLS_VERSIONS

# What the double's listeners speak: Kafka's four security protocols; SASL with PLAIN and SCRAM.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")


@dataclass(frozen=True)
class ListenerTls:
    """A TLS listener's key material, as PEM files (Kafka: ssl.keystore.type=PEM, ssl.truststore.type=PEM)."""

    cert_file: Path  # the broker's certificate chain (ssl.keystore.certificate.chain)
    key_file: Path  # its unencrypted private key (ssl.keystore.key)
    # CA bundle trusted for client certificates; set means ssl.client.auth=required (mutual TLS).
    client_ca_file: Path | None = None
    # Cap the negotiated protocol ("TLSv1.2" lets tests see TLS 1.2 cipher names); None: TLSv1.2 and TLSv1.3.
    max_version: str | None = None

    def __post_init__(self) -> None:
        for name in ("cert_file", "key_file", "client_ca_file"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ValueError(f"listener TLS {name} {path} does not exist or is not a file")
        if self.max_version is not None and self.max_version not in TLS_VERSIONS:
            raise ValueError(f"listener TLS max_version {self.max_version!r}: allowed {', '.join(TLS_VERSIONS)}")


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
    jmx_tls: JmxTls | None = None  # JMX over TLS (optionally asking for a client certificate)
    # "zookeeper" or "kraft" (kafka_double.releases.METADATA_MODES): which broker listener's APIs and features it
    # advertises. None: ZooKeeper before 3.3.0, KRaft from 3.3.0; 4.x is KRaft only, KRaft starts at 2.8.0.
    metadata_mode: str | None = None
