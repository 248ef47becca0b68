"""`serve --web.config.file` as an operator runs it: HTTPS with basic auth, and exit 2 on a bad file."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import bcrypt
import pytest

from harness.exporter_process import running_exporter, write_config
from harness.ports import free_port
from tests.support.web import basic, client_context, get, make_pki, write_web_config

pytestmark = pytest.mark.slow


def exporter_config(tmp_path: Path) -> Path:
    # Nothing listens there: the daemon serves its own health while every JMX poll fails.
    dead = f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{free_port()}/jmxrmi"
    return write_config(tmp_path / "exporter.yaml", "local", {1: dead}, interval_seconds=30, jmx_timeout_seconds=5)


def test_serve_over_https_with_basic_auth(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    hashed = bcrypt.hashpw(b"scrape", bcrypt.gensalt(rounds=4)).decode()
    web_config = write_web_config(
        tmp_path,
        {
            "tls_server_config": {"cert_file": "server.crt", "key_file": "server.key"},
            "basic_auth_users": {"prometheus": hashed},
        },
    )
    port = free_port()
    url = f"https://localhost:{port}"
    context = client_context(pki)
    config = exporter_config(tmp_path)
    with running_exporter(
        config, port, "--web.config.file", str(web_config), stderr=subprocess.PIPE, text=True
    ) as daemon:
        deadline = time.monotonic() + 30
        while True:
            try:
                assert get(f"{url}/healthz", context)[0] == 200
                break
            except OSError:
                assert daemon.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert get(f"{url}/metrics", context)[0] == 401
        status, _, body = get(f"{url}/metrics", context, basic("prometheus", "scrape"))
        assert status == 200 and "kafka_client_exporter_build_info" in body
    assert daemon.returncode == 0
    assert daemon.stderr is not None
    assert f"serving https://127.0.0.1:{port}/metrics" in daemon.stderr.read()


def test_serve_exits_2_on_an_invalid_web_config(tmp_path: Path) -> None:
    web_config = write_web_config(tmp_path, {"tls_server_config": {"cert_file": "missing.crt", "key_file": "k"}})
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "serve",
            "--config",
            str(exporter_config(tmp_path)),
            "--web.config.file",
            str(web_config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert f"tls_server_config.cert_file: cannot read {tmp_path / 'missing.crt'}" in run.stderr
