"""Certificates from a throw-away CA, and the exporter's HTTP app served in a background thread."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import trustme
import yaml
from aiohttp import web

from exporter.config.web_config import WebServing, load_web_config
from exporter.web.app import make_app
from exporter.web.exposition import Exposition
from exporter.web.live_config import LiveWebConfig, live_ssl_context
from exporter.web.security import security_middlewares


@dataclass(frozen=True)
class Pki:
    """A CA with a server certificate for localhost/127.0.0.1, all written as PEM files."""

    ca: trustme.CA
    ca_file: Path
    cert_file: Path
    key_file: Path


def make_pki(directory: Path, key_type: trustme.KeyType = trustme.KeyType.ECDSA) -> Pki:
    ca = trustme.CA(key_type=key_type)
    server = ca.issue_cert("localhost", "127.0.0.1", key_type=key_type)
    ca.cert_pem.write_to_path(directory / "ca.crt")
    for blob in server.cert_chain_pems:
        blob.write_to_path(directory / "server.crt", append=True)
    server.private_key_pem.write_to_path(directory / "server.key")
    return Pki(ca, directory / "ca.crt", directory / "server.crt", directory / "server.key")


def write_web_config(directory: Path, document: dict) -> Path:
    path = directory / "web-config.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def client_context(pki: Pki, client: trustme.LeafCert | None = None, **versions: ssl.TLSVersion) -> ssl.SSLContext:
    context = ssl.create_default_context()
    pki.ca.configure_trust(context)
    if client is not None:
        client.configure_cert(context)
    for attribute, version in versions.items():
        setattr(context, attribute, version)
    return context


@contextlib.contextmanager
def served(serving: WebServing | LiveWebConfig) -> Iterator[str]:
    """The exporter's app (no snapshot yet) behind `serving`, on an ephemeral port; yields the base URL."""
    config = serving if isinstance(serving, LiveWebConfig) else LiveWebConfig(None, serving)
    loop = asyncio.new_event_loop()
    app = make_app(Exposition(), lambda: True, security_middlewares(config))
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=live_ssl_context(config))
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"{config.current().scheme}://localhost:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.run_until_complete(runner.cleanup())
        loop.close()


@contextlib.contextmanager
def served_from(path: Path) -> Iterator[str]:
    """Served as `serve --web.config.file path` does, checking the files for changes at every request."""
    with served(LiveWebConfig(path, load_web_config(path), check_every=0)) as url:
        yield url


def get(
    url: str, context: ssl.SSLContext | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
