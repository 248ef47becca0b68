"""Loading the exporter-toolkit web config: what is accepted, and the message for everything that is not."""

from __future__ import annotations

import ssl
from pathlib import Path

import bcrypt
import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from exporter.cli import EXIT_CONFIG, main
from exporter.config.web_config import (
    GO_CIPHER_SUITES,
    TLS13_CIPHER_SUITES,
    WebConfigError,
    _openssl_cipher_names,
    load_web_config,
)
from tests.support.web import Pki, make_pki, write_web_config

HASH = bcrypt.hashpw(b"secret", bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def tls(pki: Pki, **extra: object) -> dict:
    return {"tls_server_config": {"cert_file": str(pki.cert_file), "key_file": str(pki.key_file), **extra}}


def error_for(tmp_path: Path, document: dict) -> str:
    with pytest.raises(WebConfigError) as caught:
        load_web_config(write_web_config(tmp_path, document))
    return str(caught.value)


def test_no_file_and_empty_file_mean_plain_http_without_auth(tmp_path: Path) -> None:
    assert load_web_config(None).ssl_context is None
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    serving = load_web_config(empty)
    assert serving.ssl_context is None and serving.users == {} and serving.scheme == "http"


def test_full_toolkit_file_builds_a_verifying_context(pki: Pki, tmp_path: Path) -> None:
    document = tls(
        pki,
        client_ca_file=str(pki.ca_file),
        client_auth_type="RequireAndVerifyClientCert",
        min_version="TLS13",
        client_allowed_sans=["scraper.example", "::1"],
    )
    document |= {
        "http_server_config": {"http2": False, "headers": {"X-Frame-Options": "deny", "Content-Security-Policy": ""}},
        "basic_auth_users": {"prometheus": HASH},
    }
    serving = load_web_config(write_web_config(tmp_path, document))
    assert serving.scheme == "https"
    assert serving.ssl_context is not None
    assert serving.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert serving.ssl_context.minimum_version == ssl.TLSVersion.TLSv1_3
    assert serving.users == {"prometheus": HASH.encode()}
    assert serving.headers == {"X-Frame-Options": "deny"}  # blank means unset, as in exporter-toolkit
    assert serving.allowed_sans == {"scraper.example", "::1"}
    assert "TLS on, client certificates required, basic auth for 1 user(s)" in serving.describe()


def test_relative_paths_are_relative_to_the_web_config_file(pki: Pki) -> None:
    path = pki.cert_file.parent / "relative.yaml"
    path.write_text("tls_server_config: {cert_file: server.crt, key_file: server.key}\n")
    assert load_web_config(path).ssl_context is not None


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"tls_config": {}}, "tls_config: unknown key; allowed: tls_server_config, http_server_config"),
        ({"basic_auth_users": {"alice": "plain-text"}}, "basic_auth_users: the value for user 'alice' is not a bcrypt"),
        ({"basic_auth_users": {"a:b": HASH}}, "user name 'a:b' is not usable in basic auth"),
        ({"basic_auth_users": ["alice"]}, "basic_auth_users: Input should be a valid dictionary"),
        ({"http_server_config": {"headers": {"Server": "x"}}}, "HTTP header 'Server' cannot be configured; allowed:"),
        ({"http_server_config": {"headers": {"X-Frame-Options": "allow"}}}, "allowed: deny, sameorigin"),
        ({"http_server_config": {"http2": "sometimes"}}, "http_server_config.http2: Input should be a valid boolean"),
        ({"rate_limit": {"burst": 1}}, "rate_limit: not supported by kafka-client-exporter: rate limiting"),
        ({"auth_excluded_paths": ["/metrics"]}, "/healthz and /readyz are open, every other path is protected"),
        ({"tls_server_config": {"min_version": "TLS12"}}, "cert_file and key_file are both required"),
    ],
)
def test_invalid_documents_name_the_field_and_what_is_allowed(tmp_path: Path, document: dict, expected: str) -> None:
    message = error_for(tmp_path, document)
    assert expected in message
    assert message.startswith(f"web config file {tmp_path / 'web-config.yaml'} is invalid:")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"curve_preferences": ["X25519"]}, "cannot set a list of ECDHE curves"),
        ({"cert": "PEM"}, "inline certificates are not supported"),
        ({"client_auth_type": "RequireAnyClientCert"}, "RequireAnyClientCert is not supported: Python's ssl module"),
        ({"client_auth_type": "RequestClientCert"}, "RequestClientCert is not supported"),
        ({"client_auth_type": "Sometimes"}, "Input should be 'NoClientCert', 'RequestClientCert'"),
        ({"client_auth_type": "RequireAndVerifyClientCert"}, "needs client_ca_file (or client_ca)"),
        ({"min_version": "TLS14"}, "min_version: Input should be 'TLS10', 'TLS11', 'TLS12' or 'TLS13' (got 'TLS14')"),
        ({"min_version": 12}, "min_version: Input should be 'TLS10'"),
        ({"min_version": "TLS13", "max_version": "TLS12"}, "min_version TLS13 is above max_version TLS12"),
        ({"cipher_suites": ["TLS_RSA_WITH_RC4_128_SHA"]}, "unknown cipher suite 'TLS_RSA_WITH_RC4_128_SHA'; allowed"),
        ({"cipher_suites": ["TLS_AES_128_GCM_SHA256"]}, "lists only TLS 1.3 suites"),
        ({"client_allowed_sans": ["a"]}, "client_allowed_sans requires client_auth_type: RequireAndVerifyClientCert"),
        ({"unknown": 1}, "tls_server_config.unknown: unknown key; allowed: cert_file, key_file, client_ca_file"),
    ],
)
def test_invalid_tls_settings(pki: Pki, tmp_path: Path, extra: dict, expected: str) -> None:
    assert expected in error_for(tmp_path, tls(pki, **extra))


def test_client_ca_without_client_auth_is_refused(pki: Pki, tmp_path: Path) -> None:
    assert "client_auth_type is NoClientCert" in error_for(tmp_path, tls(pki, client_ca_file=str(pki.ca_file)))


def test_bcrypt_hashes_never_appear_in_errors(tmp_path: Path) -> None:
    message = error_for(tmp_path, {"basic_auth_users": {"alice": HASH[:-1]}})
    assert HASH[:20] not in message and "htpasswd -nBC 10" in message


def test_unreadable_and_mismatched_tls_files(pki: Pki, tmp_path: Path) -> None:
    missing = {"tls_server_config": {"cert_file": str(tmp_path / "nope.crt"), "key_file": str(pki.key_file)}}
    assert f"tls_server_config.cert_file: cannot read {tmp_path / 'nope.crt'}: No such file" in error_for(
        tmp_path, missing
    )
    other = make_pki(tmp_path)
    mismatched = {"tls_server_config": {"cert_file": str(pki.cert_file), "key_file": str(other.key_file)}}
    assert "are not a matching PEM certificate and private key" in error_for(tmp_path, mismatched)
    not_a_ca = tls(pki, client_ca_file=str(pki.key_file), client_auth_type="RequireAndVerifyClientCert")
    assert "holds no usable PEM CA certificate" in error_for(tmp_path, not_a_ca)


def test_encrypted_key_is_refused_instead_of_prompting(pki: Pki, tmp_path: Path) -> None:
    key = serialization.load_pem_private_key(pki.key_file.read_bytes(), password=None)
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pass"),
        )
    )
    document = {"tls_server_config": {"cert_file": str(pki.cert_file), "key_file": str(encrypted)}}
    assert "key_file is encrypted" in error_for(tmp_path, document)


def test_broken_files(tmp_path: Path) -> None:
    with pytest.raises(WebConfigError, match="does not exist"):
        load_web_config(tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("basic_auth_users: [\n")
    with pytest.raises(WebConfigError, match=r"is not valid YAML at line 2"):
        load_web_config(broken)
    broken.write_text("- a\n")
    with pytest.raises(WebConfigError, match="must hold a mapping, not a list"):
        load_web_config(broken)


def test_every_go_cipher_suite_maps_to_its_openssl_cipher() -> None:
    tls12 = [name for name in GO_CIPHER_SUITES if name not in TLS13_CIPHER_SUITES]
    names = _openssl_cipher_names(tls12)
    assert len(set(names)) == len(tls12)
    openssl_name = dict(zip(tls12, names, strict=True))
    assert openssl_name["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"] == "ECDHE-RSA-AES128-GCM-SHA256"


def write_exporter_config(tmp_path: Path, web: dict | None = None) -> Path:
    config = tmp_path / "exporter.yaml"
    cluster = {"name": "c", "brokers": [{"id": 1, "jmx_url": "service:jmx:rmi:///jndi/rmi://127.0.0.1:1/jmxrmi"}]}
    config.write_text(yaml.safe_dump({"web": web or {}, "clusters": [cluster]}))
    return config


def test_cli_exits_2_on_an_invalid_web_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_web_config(tmp_path, {"basic_auth_users": {"alice": "x"}})
    config = write_exporter_config(tmp_path)
    assert main(["check-config", "--config", str(config), "--web.config.file", str(bad)]) == EXIT_CONFIG
    assert "basic_auth_users: the value for user 'alice' is not a bcrypt hash" in capsys.readouterr().err


def test_flag_overrides_the_setting_which_the_environment_can_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good = write_web_config(tmp_path, {"basic_auth_users": {"alice": HASH}})
    bad = tmp_path / "absent.yaml"
    config = write_exporter_config(tmp_path, {"config_file": str(bad)})
    assert main(["check-config", "--config", str(config)]) == EXIT_CONFIG
    assert f"web config file {bad} does not exist" in capsys.readouterr().err
    assert main(["check-config", "--config", str(config), "--web.config.file", str(good)]) == 0
    assert f"web config {good}: TLS off, basic auth for 1 user(s)" in capsys.readouterr().out
    monkeypatch.setenv("KCE_WEB__CONFIG_FILE", str(good))
    assert main(["check-config", "--config", str(config)]) == 0
