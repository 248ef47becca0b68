"""jmx.tls: which files it takes and the errors for wrong ones; TLS needs the bridge transport."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from exporter.config.settings import Settings

URL = "service:jmx:rmi:///jndi/rmi://kafka-0.example:9999/jmxrmi"
PKCS8 = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n"


def settings(tls: dict, **collection: object) -> Settings:
    return Settings(
        clusters=[{"name": "prod", "jmx": {"tls": tls}, "brokers": [{"id": 1, "jmx_url": URL}]}],
        collection=collection,
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {"ca_file": tmp_path / "ca.pem", "cert_file": tmp_path / "client.pem", "key_file": tmp_path / "client.key"}
    paths["ca_file"].write_text("ca")
    paths["cert_file"].write_text("cert")
    paths["key_file"].write_text(PKCS8)
    return {name: str(path) for name, path in paths.items()}


def test_ca_file_alone_and_mutual_tls_are_accepted(files: dict[str, str]) -> None:
    tls = settings({"ca_file": files["ca_file"]}).clusters[0].jmx.tls  # type: ignore[union-attr]
    assert tls is not None and tls.check_hostname and tls.cert_file is None
    mutual = settings(files | {"check_hostname": False}).clusters[0].jmx.tls  # type: ignore[union-attr]
    assert mutual is not None and str(mutual.key_file) == files["key_file"] and not mutual.check_hostname


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"ca_file": None}, "give either ca_file (PEM) or trust_store (PKCS12/JKS)"),
        ({"trust_store": "CA"}, "not both"),
        ({"key_store": "CA"}, "give either cert_file and key_file or key_store for mutual TLS, not both"),
        ({"key_store_password_file": "CA"}, "key_store_password_file is set but key_store is not"),
        ({"trust_store_type": "PEM"}, "'PKCS12' or 'JKS'"),
        ({"ca_file": "/nonexistent/ca.pem"}, "ca_file /nonexistent/ca.pem does not exist"),
        ({"key_file": None}, "cert_file and key_file go together"),
        ({"cert_file": "/nonexistent/c.pem"}, "cert_file /nonexistent/c.pem does not exist"),
    ],
)
def test_wrong_files_are_refused_naming_the_field(files: dict[str, str], change: dict, expected: str) -> None:
    # "CA" stands for an existing file.
    tls = {k: files["ca_file"] if v == "CA" else v for k, v in (files | change).items() if v is not None}
    with pytest.raises(ValidationError) as excinfo:
        settings(tls)
    assert expected in str(excinfo.value)


def test_a_key_that_is_not_pkcs8_is_refused_with_the_conversion(files: dict[str, str], tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.key"
    legacy.write_text("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")
    with pytest.raises(ValidationError) as excinfo:
        settings(files | {"key_file": str(legacy)})
    message = str(excinfo.value)
    assert f"key_file {legacy} is not an unencrypted PKCS#8 PEM key" in message and "openssl pkcs8" in message


def test_tls_with_the_per_call_transport_is_refused(files: dict[str, str]) -> None:
    with pytest.raises(ValidationError) as excinfo:
        settings({"ca_file": files["ca_file"]}, jmx_transport="per_call")
    assert "jmx.tls (clusters prod) needs collection.jmx_transport bridge, not per_call" in str(excinfo.value)
