"""Throw-away TLS material for the TLS tests (JMX over TLS, the double's SSL/SASL_SSL/mTLS listeners): CAs and
leaf certificates made with trustme, written as PEM files that the double, the exporter and kcat read."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography.hazmat.primitives import serialization

# What a broker certificate must name for clients that connect to 127.0.0.1 and check the host name.
BROKER_IDENTITIES = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class Leaf:
    cert: Path  # the certificate chain, leaf first, PEM
    key: Path  # its private key, unencrypted PKCS#8 PEM (what Java's PEM key stores and OpenSSL both read)


def write_ca(ca: trustme.CA, path: Path) -> Path:
    ca.cert_pem.write_to_path(str(path))
    return path


def write_leaf(
    ca: trustme.CA,
    directory: Path,
    name: str,
    *identities: str,
    common_name: str | None = None,
    organization_name: str | None = None,
    organization_unit_name: str | None = None,
    not_before: datetime.datetime | None = None,
    not_after: datetime.datetime | None = None,
) -> Leaf:
    """A leaf certificate of ``ca`` for ``identities`` (SANs), written as ``name.pem`` and ``name.key``."""
    leaf = ca.issue_cert(
        *identities,
        common_name=common_name,
        organization_name=organization_name,
        organization_unit_name=organization_unit_name,
        not_before=not_before,
        not_after=not_after,
    )
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    cert.write_bytes(b"".join(pem.bytes() for pem in leaf.cert_chain_pems))
    private = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return Leaf(cert, key)


@dataclass(frozen=True)
class ClientIdentity:
    """The subject fields of the test client certificate, and the principal Kafka derives from them."""

    common_name: str = "bench-client"
    organization_unit_name: str = "tests"
    organization_name: str = "kafka-client-exporter"

    @property
    def principal(self) -> str:
        # X500Principal.getName() lists the RDNs most specific first; trustme writes O, OU, CN in that order.
        return f"User:CN={self.common_name},OU={self.organization_unit_name},O={self.organization_name}"


class BrokerTlsMaterial:
    """One CA that signs a broker certificate, an expired broker certificate and a client certificate, and a
    foreign CA that signed none of them (a client trusting only it must refuse the brokers)."""

    def __init__(self, directory: Path, client: ClientIdentity = ClientIdentity()) -> None:
        self.directory = directory
        self.client_identity = client
        ca, foreign = trustme.CA(organization_name="bench-ca"), trustme.CA(organization_name="foreign-ca")
        self.ca_file = write_ca(ca, directory / "ca.pem")
        self.foreign_ca_file = write_ca(foreign, directory / "foreign-ca.pem")
        self.broker = write_leaf(ca, directory, "broker", *BROKER_IDENTITIES)
        now = datetime.datetime.now(datetime.UTC)
        self.expired_broker = write_leaf(
            ca,
            directory,
            "expired-broker",
            *BROKER_IDENTITIES,
            not_before=now - datetime.timedelta(days=30),
            not_after=now - datetime.timedelta(days=1),
        )
        # A SAN too: with none, trustme writes an empty SubjectAlternativeName, which Java refuses to parse.
        self.client = write_leaf(
            ca,
            directory,
            "client",
            f"{client.common_name}.example",
            common_name=client.common_name,
            organization_name=client.organization_name,
            organization_unit_name=client.organization_unit_name,
        )
