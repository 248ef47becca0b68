"""A node's remote JMX, as operators turn it on: the JDK's own agent through ``com.sun.management.jmxremote.*`` system
properties (what ``bin/kafka-run-class.sh`` does with ``JMX_PORT``), bound to 127.0.0.1, with a password and, for
the TLS variant, an RMI connector that speaks TLS.

Plain or with a password, the registry and the RMI connector share one port (``rmi.port`` = ``port``, as the
script sets it). With TLS the connector cannot share the registry's port: the registry stays plain (the default
``registry.ssl=false``, which is what JMX clients expect) and an RMI object exported with TLS socket factories needs
a listening socket of its own, so the connector gets a second port.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

__all__ = ["JmxAuth", "JmxTls", "jmx_options", "jmx_url"]


@dataclass(frozen=True)
class JmxAuth:
    """One read-only JMX user (``jmxremote.access``: ``<user> readonly``)."""

    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class JmxTls:
    """The RMI connector's certificate chain and unencrypted PKCS#8 key (PEM), turned into the PKCS12 key store the
    JDK agent reads."""

    cert_file: Path
    key_file: Path


def jmx_url(port: int) -> str:
    return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi"


def jmx_options(
    config_dir: Path, port: int, *, auth: JmxAuth | None, tls: JmxTls | None, rmi_port: int | None = None
) -> list[str]:
    """The JVM options for JMX on 127.0.0.1:``port`` (``rmi_port`` for the TLS connector), writing the password,
    access and TLS files they name under ``config_dir``."""
    if tls is not None and rmi_port is None:
        raise ValueError("JMX over TLS needs its own RMI port")
    options = [
        "-Dcom.sun.management.jmxremote",
        f"-Dcom.sun.management.jmxremote.port={port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={rmi_port if tls is not None else port}",
        "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        # The address written into the RMI stubs a client dials after the registry lookup.
        "-Djava.rmi.server.hostname=127.0.0.1",
        f"-Dcom.sun.management.jmxremote.authenticate={'true' if auth else 'false'}",
        f"-Dcom.sun.management.jmxremote.ssl={'true' if tls else 'false'}",
    ]
    if auth is not None:
        # The agent refuses to start unless the password file is readable by its owner only.
        password_file = _private_file(config_dir / "jmxremote.password", f"{auth.username} {auth.password}\n")
        access_file = _private_file(config_dir / "jmxremote.access", f"{auth.username} readonly\n")
        options += [
            f"-Dcom.sun.management.jmxremote.password.file={password_file}",
            f"-Dcom.sun.management.jmxremote.access.file={access_file}",
        ]
    if tls is not None:
        # The key store and its password go in the agent's own SSL config file, not in javax.net.ssl.* system
        # properties: those would become every TLS default of the broker JVM, and the password would be on its
        # command line.
        password = os.urandom(12).hex()
        keystore = config_dir / "jmx-keystore.p12"
        keystore.write_bytes(_pkcs12(tls, password))
        ssl_config = _private_file(
            config_dir / "jmxremote-ssl.properties",
            f"javax.net.ssl.keyStore={keystore}\njavax.net.ssl.keyStorePassword={password}\n"
            "javax.net.ssl.keyStoreType=PKCS12\n",
        )
        options += [
            "-Dcom.sun.management.jmxremote.registry.ssl=false",
            "-Dcom.sun.management.jmxremote.ssl.need.client.auth=false",
            f"-Dcom.sun.management.jmxremote.ssl.config.file={ssl_config}",
        ]
    return options


def _private_file(path: Path, text: str) -> Path:
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    return path


def _pkcs12(tls: JmxTls, password: str) -> bytes:
    key = serialization.load_pem_private_key(tls.key_file.read_bytes(), None)
    chain = x509.load_pem_x509_certificates(tls.cert_file.read_bytes())
    return pkcs12.serialize_key_and_certificates(
        b"jmx",
        key,  # type: ignore[arg-type]
        chain[0],
        chain[1:] or None,
        serialization.BestAvailableEncryption(password.encode()),
    )
