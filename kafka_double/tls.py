"""TLS on the double's SSL and SASL_SSL listeners: the server context, and what Kafka's SslTransportLayer and
DefaultKafkaPrincipalBuilder make of a finished handshake (cipher name, protocol, peer principal).

Kafka reads the cipher suite from JSSE's ``SSLSession.getCipherSuite()``, which gives IANA names
(``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384``); Python's ``ssl`` gives OpenSSL's names, identical to IANA's for
TLS 1.3 only (``ECDHE-RSA-AES256-GCM-SHA384`` for TLS 1.2). OpenSSL's ``SSL_CIPHER_standard_name`` is not
exposed by Python, and ``SSLContext.get_ciphers()`` carries no standard name (only ``name``, ``id``,
``description``...), so the mapping comes from the OpenSSL CLI, which prints both names side by side
(``openssl ciphers -stdname``, OpenSSL 1.1.1+: https://docs.openssl.org/3.0/man1/openssl-ciphers/).
"""

from __future__ import annotations

import functools
import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import NameOID

TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


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


# The attribute keywords X500Principal.getName() (RFC 2253 format) writes; any other attribute it writes as
# OID=#<DER hex>, which the double does not reproduce (see rfc2253_name).
_RFC2253_KEYWORDS = {
    NameOID.COMMON_NAME: "CN",
    NameOID.COUNTRY_NAME: "C",
    NameOID.LOCALITY_NAME: "L",
    NameOID.STATE_OR_PROVINCE_NAME: "ST",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.STREET_ADDRESS: "STREET",
    NameOID.DOMAIN_COMPONENT: "DC",
    NameOID.USER_ID: "UID",
}


def server_context(tls: ListenerTls) -> ssl.SSLContext:
    """The listener's ssl.keystore (chain + key) and, for mutual TLS, ssl.truststore + ssl.client.auth=required."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    # Kafka's default ssl.enabled.protocols is TLSv1.2,TLSv1.3.
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls.max_version is not None:
        context.maximum_version = TLS_VERSIONS[tls.max_version]
    try:
        context.load_cert_chain(str(tls.cert_file), str(tls.key_file))
        if tls.client_ca_file is not None:
            context.load_verify_locations(cafile=str(tls.client_ca_file))
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(
            f"cannot load the listener's TLS material ({tls.cert_file}, {tls.key_file}, "
            f"client CA {tls.client_ca_file}): {exc}"
        ) from exc
    context.verify_mode = ssl.CERT_REQUIRED if tls.client_ca_file is not None else ssl.CERT_NONE
    return context


@functools.cache
def _standard_names() -> dict[str, str]:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError(
            "the openssl command is needed to name TLS 1.2 cipher suites as Kafka (JSSE) does; "
            "install it (apt-get install openssl)"
        )
    out = subprocess.run(
        [openssl, "ciphers", "-stdname", "ALL:COMPLEMENTOFALL"], capture_output=True, text=True, timeout=10, check=True
    ).stdout
    names: dict[str, str] = {}
    for line in out.splitlines():
        # "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 - ECDHE-RSA-AES256-GCM-SHA384 TLSv1.2 Kx=ECDH ..."
        standard, sep, rest = line.partition(" - ")
        if sep and rest.split() and standard.strip() != "(NONE)":
            names[rest.split()[0]] = standard.strip()
    return names


def jsse_cipher_name(openssl_name: str) -> str:
    """The cipher suite as ``SSLSession.getCipherSuite()`` names it (the IANA name)."""
    if openssl_name.startswith("TLS_"):
        return openssl_name  # TLS 1.3 suites: OpenSSL already uses the IANA name
    try:
        return _standard_names()[openssl_name]
    except KeyError:
        raise RuntimeError(f"OpenSSL knows no standard (IANA) name for cipher {openssl_name!r}") from None


def negotiated(ssl_object: ssl.SSLObject | ssl.SSLSocket) -> tuple[str, str]:
    """(cipher, protocol) as SslTransportLayer registers them after a handshake."""
    cipher = ssl_object.cipher()
    version = ssl_object.version()
    if cipher is None or version is None:
        raise RuntimeError("the TLS handshake has not completed")
    # Python's version() and JSSE's SSLSession.getProtocol() both say "TLSv1.2" / "TLSv1.3".
    return jsse_cipher_name(cipher[0]), version


def rfc2253_name(name: x509.Name) -> str:
    """``X500Principal.getName()``: RDNs most specific first, keywords CN, O, OU... and RFC 2253 escaping.

    Attributes without an RFC 2253 keyword (emailAddress, serialNumber...) are refused: Java writes them as
    ``OID=#<hex of the DER value>``, which this double does not reproduce.
    """
    rdns = []
    for rdn in reversed(list(name.rdns)):
        parts = []
        for attribute in rdn:
            keyword = _RFC2253_KEYWORDS.get(attribute.oid)
            if keyword is None:
                raise ValueError(
                    f"client certificate subject attribute {attribute.oid.dotted_string} has no RFC 2253 keyword; "
                    f"the double names only {', '.join(sorted(_RFC2253_KEYWORDS.values()))}"
                )
            parts.append(f"{keyword}={_escape(str(attribute.value))}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


def _escape(value: str) -> str:
    # RFC 2253 section 2.4: these characters anywhere, '#' or space first, space last, get a backslash.
    out = "".join("\\" + ch if ch in ',+"\\<>;' else ch for ch in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def peer_principal(ssl_object: ssl.SSLObject | ssl.SSLSocket) -> str:
    """DefaultKafkaPrincipalBuilder on an SSL listener: ``User:`` + the client certificate's subject DN, or
    ``User:ANONYMOUS`` when the client sent none (SslTransportLayer.peerPrincipal)."""
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return "User:ANONYMOUS"
    return "User:" + rfc2253_name(x509.load_der_x509_certificate(der).subject)
