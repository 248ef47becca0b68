"""The web config and the certificate files it names are re-read when they change, while serving: the next
handshake presents a rotated certificate, new users apply to the next request, and a broken version keeps the
last good one in use."""

from __future__ import annotations

import logging
import socket
import ssl
from pathlib import Path

import bcrypt
import pytest
import trustme

from exporter.config.web_config import load_web_config
from exporter.web.live_config import LiveWebConfig
from tests.support.web import Pki, basic, client_context, get, make_pki, served_from, write_web_config

HASH = bcrypt.hashpw(b"first", bcrypt.gensalt(rounds=4)).decode()
OTHER_HASH = bcrypt.hashpw(b"second", bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path)


def tls(pki: Pki) -> dict:
    return {"tls_server_config": {"cert_file": str(pki.cert_file), "key_file": str(pki.key_file)}}


def issue(pki: Pki) -> trustme.LeafCert:
    return pki.ca.issue_cert("localhost", "127.0.0.1", key_type=trustme.KeyType.ECDSA)


def install(pki: Pki, leaf: trustme.LeafCert, key_of: trustme.LeafCert | None = None) -> None:
    """Overwrite the served certificate and key files, as cert-manager does (the key of `key_of` if given)."""
    pki.cert_file.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    pki.key_file.write_bytes((key_of or leaf).private_key_pem.bytes())


def der(leaf: trustme.LeafCert) -> bytes:
    return ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())


def presented(url: str, pki: Pki) -> bytes:
    """The certificate the server presents in a new handshake."""
    port = int(url.rsplit(":", 1)[1])
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        client_context(pki).wrap_socket(raw, server_hostname="localhost") as connection,
    ):
        certificate = connection.getpeercert(binary_form=True)
    assert certificate is not None
    return certificate


def test_a_rotated_certificate_is_presented_in_the_next_handshake(pki: Pki, tmp_path: Path) -> None:
    original = ssl.PEM_cert_to_DER_cert(pki.cert_file.read_text())  # one certificate: trustme adds no intermediate
    with served_from(write_web_config(tmp_path, tls(pki))) as url:
        assert presented(url, pki) == original
        rotated = issue(pki)
        install(pki, rotated)
        assert presented(url, pki) == der(rotated)
        assert get(f"{url}/metrics", client_context(pki))[0] == 200


def test_a_broken_rotation_keeps_the_last_good_certificate(
    pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write_web_config(tmp_path, tls(pki))
    with caplog.at_level(logging.INFO, logger="exporter.web.live_config"), served_from(config) as url:
        good = presented(url, pki)
        # Mid-rotation: the new certificate is written, the key is still another one.
        half = issue(pki)
        install(pki, half, key_of=issue(pki))
        assert presented(url, pki) == good
        assert presented(url, pki) == good
        config.write_text("tls_server_config: [not, a, mapping]\n")
        assert presented(url, pki) == good
        config.write_text(write_web_config(tmp_path, tls(pki)).read_text())
        install(pki, half)
        assert presented(url, pki) == der(half)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    # Once per broken version, however many handshakes saw it.
    assert len(errors) == 2
    assert errors[0].startswith(f"web config {config} changed but was not reloaded, the last good one stays in use: ")
    assert f"cert_file {pki.cert_file} and key_file {pki.key_file} are not a matching PEM certificate" in errors[0]
    assert "tls_server_config" in errors[1]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        f"web config {config} reloaded: web config {config}: TLS on, basic auth for 0 user(s)"
    ]


def test_changed_users_apply_to_the_next_request(tmp_path: Path) -> None:
    config = write_web_config(tmp_path, {"basic_auth_users": {"prometheus": HASH}})
    with served_from(config) as url:
        assert get(f"{url}/metrics", headers=basic("prometheus", "first"))[0] == 200
        write_web_config(tmp_path, {"basic_auth_users": {"prometheus": OTHER_HASH}})
        assert get(f"{url}/metrics", headers=basic("prometheus", "first"))[0] == 401
        assert get(f"{url}/metrics", headers=basic("prometheus", "second"))[0] == 200
        write_web_config(tmp_path, {})
        assert get(f"{url}/metrics")[0] == 200


def test_switching_tls_off_takes_a_restart(pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = write_web_config(tmp_path, tls(pki))
    with served_from(config) as url:
        write_web_config(tmp_path, {})
        assert get(f"{url}/metrics", client_context(pki))[0] == 200
    assert "switching TLS on or off changes the URL scheme: it takes a restart" in caplog.text


def test_the_files_are_checked_at_most_once_per_interval(tmp_path: Path) -> None:
    now = [0.0]
    config = write_web_config(tmp_path, {"basic_auth_users": {"prometheus": HASH}})
    live = LiveWebConfig(config, load_web_config(config), check_every=1.0, clock=lambda: now[0])
    first = live.current()
    write_web_config(tmp_path, {"basic_auth_users": {"prometheus": OTHER_HASH}})
    now[0] = 0.9
    assert live.current() is first
    now[0] = 1.0
    assert live.current().users == {"prometheus": OTHER_HASH.encode()}
    assert live.reloads and not LiveWebConfig(None, first).reloads
