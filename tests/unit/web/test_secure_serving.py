"""The exporter's HTTP app behind a web config: TLS, mutual TLS, basic auth, client SANs and headers."""

from __future__ import annotations

import asyncio
import socket
import ssl
import urllib.error
from pathlib import Path

import bcrypt
import pytest
import trustme

from exporter.config.web_config import WebServing
from exporter.web import security as web_security
from exporter.web.live_config import LiveWebConfig
from exporter.web.security import BasicAuthenticator
from tests.support.web import Pki, basic, client_context, get, make_pki, served, served_from, write_web_config

PASSWORD = "s3cret pass"
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def tls(pki: Pki, **extra: object) -> dict:
    return {"tls_server_config": {"cert_file": str(pki.cert_file), "key_file": str(pki.key_file), **extra}}


def mtls(pki: Pki, **extra: object) -> dict:
    return tls(pki, client_ca_file=str(pki.ca_file), client_auth_type="RequireAndVerifyClientCert", **extra)


def refused(url: str, context: ssl.SSLContext | None) -> bool:
    """True when the TLS layer turns the client away (a handshake alert, or a reset right after it)."""
    try:
        get(url, context)
    except (urllib.error.URLError, ssl.SSLError, ConnectionError):
        return True
    return False


def test_tls_serves_metrics_and_refuses_plain_http(pki: Pki, tmp_path: Path) -> None:
    with served_from(write_web_config(tmp_path, tls(pki))) as url:
        status, _, body = get(f"{url}/metrics", client_context(pki))
        assert status == 200 and "kafka_client_exporter_build_info" in body
        assert refused(url.replace("https:", "http:") + "/metrics", None)
        assert refused(f"{url}/metrics", ssl.create_default_context())  # the server's CA is not trusted


def test_min_version_turns_away_older_clients(pki: Pki, tmp_path: Path) -> None:
    with served_from(write_web_config(tmp_path, tls(pki, min_version="TLS13"))) as url:
        assert refused(f"{url}/metrics", client_context(pki, maximum_version=ssl.TLSVersion.TLSv1_2))
        assert get(f"{url}/metrics", client_context(pki))[0] == 200


def test_cipher_suites_decide_the_tls12_cipher(pki: Pki, tmp_path: Path) -> None:
    suites = ["TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]
    serving_path = write_web_config(tmp_path, tls(pki, cipher_suites=suites, max_version="TLS12"))
    with served_from(serving_path) as url:
        port = int(url.rsplit(":", 1)[1])
        context = client_context(pki)
        context.set_ciphers("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256")
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            context.wrap_socket(raw, server_hostname="localhost") as tls_socket,
        ):
            cipher = tls_socket.cipher()
            assert cipher is not None
            name, version, _ = cipher
        # The server's order wins (prefer_server_cipher_suites defaults to true, as in exporter-toolkit).
        assert (name, version) == ("ECDHE-ECDSA-CHACHA20-POLY1305", "TLSv1.2")
        context.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
        assert refused(f"{url}/metrics", context)


def test_mutual_tls_requires_a_certificate_from_the_client_ca(pki: Pki, tmp_path: Path) -> None:
    client = pki.ca.issue_cert("prometheus.monitoring.svc")
    stranger = trustme.CA().issue_cert("prometheus.monitoring.svc")
    with served_from(write_web_config(tmp_path, mtls(pki))) as url:
        assert get(f"{url}/metrics", client_context(pki, client))[0] == 200
        assert refused(f"{url}/metrics", client_context(pki))
        assert refused(f"{url}/metrics", client_context(pki, stranger))


def test_verify_client_cert_if_given_admits_clients_without_one(pki: Pki, tmp_path: Path) -> None:
    document = tls(pki, client_ca_file=str(pki.ca_file), client_auth_type="VerifyClientCertIfGiven")
    stranger = trustme.CA().issue_cert("prometheus.monitoring.svc")
    with served_from(write_web_config(tmp_path, document)) as url:
        assert get(f"{url}/metrics", client_context(pki))[0] == 200
        assert refused(f"{url}/metrics", client_context(pki, stranger))


def test_client_allowed_sans(pki: Pki, tmp_path: Path) -> None:
    document = mtls(pki, client_allowed_sans=["prometheus.monitoring.svc", "10.0.0.7"])
    with served_from(write_web_config(tmp_path, document)) as url:
        for allowed in ("prometheus.monitoring.svc", "10.0.0.7"):
            assert get(f"{url}/metrics", client_context(pki, pki.ca.issue_cert("other.svc", allowed)))[0] == 200
        status, _, body = get(f"{url}/metrics", client_context(pki, pki.ca.issue_cert("grafana.monitoring.svc")))
        assert status == 403 and "none of the allowed SANs" in body


def test_basic_auth(tmp_path: Path) -> None:
    with served_from(write_web_config(tmp_path, {"basic_auth_users": {"prometheus": HASH}})) as url:
        status, headers, _ = get(f"{url}/metrics")
        assert status == 401 and headers["WWW-Authenticate"] == "Basic"
        for wrong in (
            basic("prometheus", "wrong"),
            basic("nobody", PASSWORD),
            basic("prometheus", PASSWORD + "x" * 80),  # bcrypt refuses passwords over 72 bytes
            {"Authorization": "Basic not-base64!"},
            {"Authorization": "Bearer token"},
        ):
            assert get(f"{url}/metrics", headers=wrong)[0] == 401
        status, _, body = get(f"{url}/metrics", headers=basic("prometheus", PASSWORD))
        assert status == 200 and "kafka_client_exporter_build_info" in body
        assert get(f"{url}/", headers=basic("prometheus", "wrong"))[0] == 401  # the inventory page is protected
        # Probes need no credentials and reveal nothing but their state.
        assert get(f"{url}/healthz")[0] == 200
        assert get(f"{url}/readyz")[0] == 503  # no snapshot yet, and not 401


def test_basic_auth_over_mutual_tls(pki: Pki, tmp_path: Path) -> None:
    document = mtls(pki) | {"basic_auth_users": {"prometheus": HASH}}
    client = client_context(pki, pki.ca.issue_cert("prometheus.monitoring.svc"))
    with served_from(write_web_config(tmp_path, document)) as url:
        assert get(f"{url}/metrics", client)[0] == 401
        assert get(f"{url}/metrics", client, basic("prometheus", PASSWORD))[0] == 200


def test_configured_headers_are_on_every_response(tmp_path: Path) -> None:
    headers = {"X-Frame-Options": "deny", "X-Content-Type-Options": "nosniff"}
    document = {"basic_auth_users": {"prometheus": HASH}, "http_server_config": {"headers": headers}}
    with served_from(write_web_config(tmp_path, document)) as url:
        for path, credentials, status in (
            ("/metrics", basic("prometheus", PASSWORD), 200),
            ("/metrics", {}, 401),
            ("/nothing-here", basic("prometheus", PASSWORD), 404),
        ):
            got_status, got_headers, _ = get(url + path, headers=credentials)
            assert got_status == status
            assert {name: got_headers.get(name) for name in headers} == headers


def test_a_verified_login_is_remembered_and_a_failed_one_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []
    real = bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        calls.append(password)
        return real(password, hashed)

    monkeypatch.setattr(web_security.bcrypt, "checkpw", counting)
    good = basic("prometheus", PASSWORD)["Authorization"]
    bad = basic("prometheus", "wrong")["Authorization"]

    async def scrape() -> list[bool]:
        authenticator = BasicAuthenticator({"prometheus": HASH.encode()})
        return [await authenticator.verify(header) for header in (good, good, good, bad, bad)]

    assert asyncio.run(scrape()) == [True, True, True, False, False]
    assert calls == [PASSWORD.encode(), b"wrong", b"wrong"]


def test_plain_serving_adds_no_middleware() -> None:
    assert web_security.security_middlewares(LiveWebConfig(None, WebServing())) == []
    with served(WebServing()) as url:
        assert get(f"{url}/metrics")[0] == 200
