"""The web config as it is now: re-read when the file or a certificate file it names changes.

cert-manager and Kubernetes Secret mounts replace certificate files under a running pod; exporter-toolkit
re-reads its config for every connection, and so does this, at most once per `check_every` seconds: the
files' contents are hashed, and a change loads the whole config again. New TLS handshakes then use the new
certificate, key, client CA, versions and ciphers (connections already open keep theirs); basic-auth users,
headers and allowed SANs apply from the next request. A broken new version (a key that does not match its
certificate mid-rotation, a YAML typo) is logged once, naming the file and the problem, and the last good
version keeps serving until the files change again.
"""

from __future__ import annotations

import hashlib
import logging
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from exporter.config.schema import ConfigError
from exporter.config.web_config import WebServing, load_web_config, watched_files

log = logging.getLogger(__name__)

CHECK_EVERY_SECONDS = 1.0


def _fingerprint(files: tuple[Path, ...]) -> bytes:
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path).encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError as exc:  # a file mid-replacement; loading will say what is wrong with it
            digest.update(f"\0unreadable: {exc.strerror}".encode())
        digest.update(b"\0")
    return digest.digest()


class LiveWebConfig:
    """The current WebServing of `path` (None: plain HTTP, never reloaded), starting from `initial`."""

    def __init__(
        self,
        path: Path | None,
        initial: WebServing,
        check_every: float = CHECK_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path = path
        self._current = initial
        self._check_every = check_every
        self._clock = clock
        self._next_check = clock() + check_every
        self._loaded = _fingerprint(watched_files(path)) if path is not None else b""
        self._rejected: bytes | None = None

    @property
    def reloads(self) -> bool:
        return self._path is not None

    def current(self) -> WebServing:
        if self._path is None or self._clock() < self._next_check:
            return self._current
        self._next_check = self._clock() + self._check_every
        fingerprint = _fingerprint(watched_files(self._path))
        if fingerprint not in (self._loaded, self._rejected):
            self._reload(self._path, fingerprint)
        return self._current

    def _reload(self, path: Path, fingerprint: bytes) -> None:
        try:
            serving = load_web_config(path)
            if (serving.ssl_context is None) != (self._current.ssl_context is None):
                raise ConfigError("switching TLS on or off changes the URL scheme: it takes a restart")
        except ConfigError as exc:
            problem = str(exc)
        except Exception as exc:  # whatever broke, the server keeps its last good config
            problem = f"{type(exc).__name__}: {exc}"
        else:
            self._current, self._loaded, self._rejected = serving, fingerprint, None
            log.info("web config %s reloaded: %s", path, serving.describe())
            return
        # Logged once per broken version: the check runs every second.
        self._rejected = fingerprint
        log.error("web config %s changed but was not reloaded, the last good one stays in use: %s", path, problem)


class LiveSSLContext(ssl.SSLContext):
    """The SSLContext given to the listening socket: every new connection is wrapped by the context of the
    current web config, so a handshake after a rotation presents the new certificate.

    asyncio (and so aiohttp's TCPSite) wraps each accepted connection with `wrap_bio`; that is the one method
    delegated. The instance's own settings are never used for a connection.
    """

    _current: Callable[[], ssl.SSLContext]

    def __new__(cls, current: Callable[[], ssl.SSLContext]) -> LiveSSLContext:
        context = super().__new__(cls, ssl.PROTOCOL_TLS_SERVER)
        context._current = current
        return context

    def __init__(self, current: Callable[[], ssl.SSLContext]) -> None:
        # ssl.SSLContext.__init__ takes the protocol, which __new__ already used.
        pass

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        return self._current().wrap_bio(*args, **kwargs)


def live_ssl_context(config: LiveWebConfig) -> ssl.SSLContext | None:
    """What the listening socket gets: None for plain HTTP, else a context that follows `config`."""
    if config.current().ssl_context is None:
        return None

    def current() -> ssl.SSLContext:
        context = config.current().ssl_context
        assert context is not None  # a reload never switches TLS off (LiveWebConfig._reload)
        return context

    return LiveSSLContext(current)
