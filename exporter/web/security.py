"""Request-time enforcement of the web config: basic auth, allowed client-certificate SANs, response headers.

/healthz and /readyz stay open: they say only whether collection is alive and ready (and how old its data is),
and a kubelet probe cannot send credentials without writing them into the pod spec. Every other path (/metrics,
the landing page with its inventory) is protected.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import secrets
from collections.abc import Mapping

import bcrypt
from aiohttp import BasicAuth, hdrs, web
from aiohttp.typedefs import Handler, Middleware

from exporter.config.web_config import WebServing
from exporter.web.live_config import LiveWebConfig

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
# Enough for every scraper and user of one exporter; a full cache is simply emptied.
MAX_CACHED_LOGINS = 256


class BasicAuthenticator:
    """Checks `Authorization: Basic` against bcrypt hashes, remembering logins that succeeded.

    A bcrypt check costs tens to hundreds of milliseconds by design; Prometheus sends the same credentials
    every scrape, so (as exporter-toolkit does) a verified login is remembered, keyed by an HMAC under a
    per-process random key: the cache holds no password and no hash that can be attacked offline.
    """

    def __init__(self, users: Mapping[str, bytes]) -> None:
        self._users = dict(users)
        # Unknown users are checked against a real hash of the same kind, so timing does not reveal user names.
        self._decoy = next(iter(self._users.values()))
        self._cache_key = secrets.token_bytes(32)
        self._verified: set[bytes] = set()
        # One bcrypt at a time: a burst of bad logins must not take every CPU from collection.
        self._bcrypt_slot = asyncio.Lock()

    async def verify(self, authorization: str | None) -> bool:
        if not authorization:
            return False
        try:
            credentials = BasicAuth.decode(authorization, encoding="utf-8")
        except ValueError:
            return False
        user, password = credentials.login, credentials.password.encode()
        fingerprint = hmac.digest(self._cache_key, user.encode() + b":" + password, "sha256")
        if fingerprint in self._verified:
            return True
        stored = self._users.get(user)
        async with self._bcrypt_slot:
            matches = await asyncio.to_thread(_checkpw, password, stored or self._decoy)
        if not (matches and stored is not None):
            return False
        if len(self._verified) >= MAX_CACHED_LOGINS:
            self._verified.clear()
        self._verified.add(fingerprint)
        return True


def _checkpw(password: bytes, hashed: bytes) -> bool:
    try:
        return bcrypt.checkpw(password, hashed)
    except ValueError:  # bcrypt refuses passwords over 72 bytes; such a password matches no hash here
        return False


def _peer_sans(request: web.Request) -> set[str]:
    """DNS, e-mail, IP and URI SANs of the verified client certificate (what exporter-toolkit matches)."""
    certificate = request.transport.get_extra_info("peercert") if request.transport else None
    sans: set[str] = set()
    for kind, value in (certificate or {}).get("subjectAltName", ()):
        if kind in ("DNS", "email", "URI"):
            sans.add(value)
        elif kind == "IP Address":
            sans.add(ipaddress.ip_address(value.strip()).compressed)
    return sans


def _unauthorized() -> web.Response:
    return web.Response(status=401, text="Unauthorized\n", headers={hdrs.WWW_AUTHENTICATE: "Basic"})


class _Authenticators:
    """The authenticator of the web config in use: a reload starts a new one (and forgets remembered logins)."""

    def __init__(self) -> None:
        self._serving: WebServing | None = None
        self._authenticator: BasicAuthenticator | None = None

    def of(self, serving: WebServing) -> BasicAuthenticator | None:
        if serving is not self._serving:
            self._serving = serving
            self._authenticator = BasicAuthenticator(serving.users) if serving.users else None
        return self._authenticator


def _asks_nothing_per_request(serving: WebServing) -> bool:
    return not (serving.users or serving.headers or serving.allowed_sans is not None)


def security_middlewares(config: LiveWebConfig) -> list[Middleware]:
    """The aiohttp middleware enforcing the current web config; none when it cannot change and asks for
    nothing per request."""
    if not config.reloads and _asks_nothing_per_request(config.current()):
        return []
    authenticators = _Authenticators()

    async def respond(request: web.Request, handler: Handler, serving: WebServing) -> web.StreamResponse:
        if serving.allowed_sans is not None and not _peer_sans(request) & serving.allowed_sans:
            return web.Response(status=403, text="client certificate has none of the allowed SANs\n")
        authenticator = authenticators.of(serving)
        if authenticator is not None and request.path not in OPEN_PATHS:
            authorized = await authenticator.verify(request.headers.get(hdrs.AUTHORIZATION))
            if not authorized:
                return _unauthorized()
        return await handler(request)

    @web.middleware
    async def web_config_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        serving = config.current()
        try:
            response = await respond(request, handler, serving)
        except web.HTTPException as exc:  # 404s and other responses raised by aiohttp itself
            exc.headers.update(serving.headers)
            raise
        response.headers.update(serving.headers)
        return response

    return [web_config_middleware]
