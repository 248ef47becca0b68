"""The exporter-toolkit web config file (`--web.config.file`): TLS, client certificates, basic auth, headers.

Same keys, defaults and checks as Prometheus' exporter-toolkit, so a file written for node_exporter works here.
Where Python's ssl module cannot do what Go's crypto/tls does, the key or value is rejected with the reason
instead of being silently ignored. `serve` re-reads the file and the certificate files it names when they
change, as exporter-toolkit does (exporter/web/live_config.py); this module reads and checks one version.
"""

from __future__ import annotations

import ipaddress
import re
import ssl
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator

from exporter.config.schema import ConfigError, ErrorFormat, StrictModel, format_validation_error
from exporter.config.yaml_file import parse_mapping, read_text

TlsVersionName = Literal["TLS10", "TLS11", "TLS12", "TLS13"]
TLS_VERSIONS: dict[str, ssl.TLSVersion] = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}

ClientAuthType = Literal[
    "NoClientCert",
    "RequestClientCert",
    "RequireAnyClientCert",
    "RequireClientCert",  # exporter-toolkit's old name for RequireAnyClientCert
    "VerifyClientCertIfGiven",
    "RequireAndVerifyClientCert",
]
VERIFY_MODES: dict[str, ssl.VerifyMode] = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
# OpenSSL (through Python) verifies every client certificate it asks for: it cannot ask without verifying.
_UNVERIFIED_CLIENT_CERT = (
    "Python's ssl module cannot accept a client certificate without verifying it against client_ca_file; "
    "use RequireAndVerifyClientCert (or VerifyClientCertIfGiven) with client_ca_file"
)
UNSUPPORTED_CLIENT_AUTH: dict[str, str] = {
    "RequestClientCert": _UNVERIFIED_CLIENT_CERT,
    "RequireAnyClientCert": _UNVERIFIED_CLIENT_CERT,
    "RequireClientCert": _UNVERIFIED_CLIENT_CERT,
}

# Go's tls.CipherSuites() (the only names exporter-toolkit accepts) with their IANA code points. The OpenSSL
# name of each is looked up by code point in the linked OpenSSL, so the mapping cannot drift from the library.
GO_CIPHER_SUITES: dict[str, int] = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": 0x002F,
    "TLS_RSA_WITH_AES_256_CBC_SHA": 0x0035,
    "TLS_RSA_WITH_AES_128_GCM_SHA256": 0x009C,
    "TLS_RSA_WITH_AES_256_GCM_SHA384": 0x009D,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": 0xC009,
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": 0xC00A,
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": 0xC013,
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": 0xC014,
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": 0xC02B,
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": 0xC02C,
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": 0xC02F,
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": 0xC030,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA9,
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA8,
    "TLS_AES_128_GCM_SHA256": 0x1301,
    "TLS_AES_256_GCM_SHA384": 0x1302,
    "TLS_CHACHA20_POLY1305_SHA256": 0x1303,
}
# As in Go, TLS 1.3 suites are not configurable: they are always on when TLS 1.3 is allowed.
TLS13_CIPHER_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})

# exporter-toolkit's fixed set of settable response headers; a tuple lists the only values allowed.
EXTRA_HEADERS: dict[str, tuple[str, ...]] = {
    "Strict-Transport-Security": (),
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": (),
    "Content-Security-Policy": (),
}

# Keys exporter-toolkit knows that this exporter cannot honour, with the reason (an error names it).
UNSUPPORTED_KEYS: dict[tuple[str, ...], str] = {
    ("tls_server_config", "cert"): "inline certificates are not supported; mount the file and use cert_file",
    ("tls_server_config", "key"): "inline keys are not supported; mount the file (from a Secret) and use key_file",
    ("tls_server_config", "curve_preferences"): (
        "Python's ssl module cannot set a list of ECDHE curves; remove it to use OpenSSL's defaults"
    ),
    ("rate_limit",): "rate limiting is not implemented; put a rate-limiting proxy in front if you need it",
    ("auth_excluded_paths",): "the exclusions are fixed: /healthz and /readyz are open, every other path is protected",
}

# $2a$/$2b$/$2y$ (what htpasswd -B, Go and Python's bcrypt write), a two-digit cost, 53 characters of salt+hash.
_BCRYPT_HASH = re.compile(r"^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$")


class WebConfigError(ConfigError):
    """The web config file is unreadable or invalid (exit code 2, like any configuration problem)."""


class TlsServerConfig(StrictModel):
    cert_file: Path | None = None
    key_file: Path | None = None
    client_ca_file: Path | None = None
    client_ca: str | None = Field(default=None, description="PEM CA certificates inline")
    client_auth_type: ClientAuthType = "NoClientCert"
    client_allowed_sans: list[str] | None = None
    min_version: TlsVersionName = "TLS12"
    max_version: TlsVersionName = "TLS13"
    cipher_suites: list[str] | None = None
    prefer_server_cipher_suites: bool = True

    @field_validator("client_auth_type")
    @classmethod
    def _supported_client_auth(cls, value: str) -> str:
        if value in UNSUPPORTED_CLIENT_AUTH:
            raise ValueError(f"{value} is not supported: {UNSUPPORTED_CLIENT_AUTH[value]}")
        return value

    @field_validator("cipher_suites")
    @classmethod
    def _known_cipher_suites(cls, suites: list[str] | None) -> list[str] | None:
        for suite in suites or ():
            if suite not in GO_CIPHER_SUITES:
                raise ValueError(f"unknown cipher suite {suite!r}; allowed (Go names): {', '.join(GO_CIPHER_SUITES)}")
        if suites and all(suite in TLS13_CIPHER_SUITES for suite in suites):
            raise ValueError(
                "lists only TLS 1.3 suites, which cannot be restricted (they are always on with TLS 1.3); "
                "list TLS 1.2 suites, or set min_version: TLS13 and drop cipher_suites"
            )
        return suites

    @model_validator(mode="after")
    def _consistent(self) -> TlsServerConfig:
        if self.cert_file is None or self.key_file is None:
            raise ValueError("cert_file and key_file are both required when tls_server_config is given")
        if TLS_VERSIONS[self.min_version] > TLS_VERSIONS[self.max_version]:
            raise ValueError(f"min_version {self.min_version} is above max_version {self.max_version}")
        if self.client_ca_file is not None and self.client_ca is not None:
            raise ValueError("give either client_ca_file or client_ca, not both")
        has_ca = self.client_ca_file is not None or self.client_ca is not None
        if has_ca and self.client_auth_type == "NoClientCert":
            raise ValueError(
                "a client CA is configured but client_auth_type is NoClientCert; "
                "set client_auth_type: RequireAndVerifyClientCert"
            )
        if not has_ca and self.client_auth_type != "NoClientCert":
            raise ValueError(f"client_auth_type {self.client_auth_type} needs client_ca_file (or client_ca)")
        if self.client_allowed_sans is not None and self.client_auth_type != "RequireAndVerifyClientCert":
            raise ValueError("client_allowed_sans requires client_auth_type: RequireAndVerifyClientCert")
        return self


class HttpServerConfig(StrictModel):
    http2: bool = Field(default=True, description="accepted for compatibility; the server speaks HTTP/1.1")
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("headers", mode="before")
    @classmethod
    def _allowed_headers(cls, headers: Any) -> Any:
        if headers is None:
            return {}
        if not isinstance(headers, dict):
            return headers
        for name, value in headers.items():
            if name not in EXTRA_HEADERS:
                raise ValueError(f"HTTP header {name!r} cannot be configured; allowed: {', '.join(EXTRA_HEADERS)}")
            allowed = EXTRA_HEADERS[name]
            if allowed and value not in allowed:
                raise ValueError(f"invalid value {value!r} for {name}; allowed: {', '.join(allowed)}")
        return headers


class WebConfigFile(StrictModel):
    tls_server_config: TlsServerConfig | None = None
    http_server_config: HttpServerConfig = HttpServerConfig()
    basic_auth_users: dict[str, SecretStr] = Field(default_factory=dict)

    @field_validator("http_server_config", "basic_auth_users", mode="before")
    @classmethod
    def _empty_block(cls, value: Any, info: Any) -> Any:
        # `basic_auth_users:` with nothing under it is YAML null: the same as leaving the key out.
        if value is None:
            return HttpServerConfig() if info.field_name == "http_server_config" else {}
        return value

    @field_validator("basic_auth_users")
    @classmethod
    def _bcrypt_hashes(cls, users: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for user, hashed in users.items():
            if not user or ":" in user or not user.isprintable():
                raise ValueError(f"user name {user!r} is not usable in basic auth (empty, ':' or control characters)")
            match = _BCRYPT_HASH.match(hashed.get_secret_value())
            if match is None or not 4 <= int(match.group(1)) <= 31:
                raise ValueError(
                    f"the value for user {user!r} is not a bcrypt hash ($2a$/$2b$/$2y$, cost 04-31, then 53 "
                    "characters); create one with: htpasswd -nBC 10 \"\" | tr -d ':\\n'"
                )
        return users


_ERRORS = ErrorFormat(
    root=WebConfigFile,
    unknown="unknown key",
    sort_allowed=False,  # the order of exporter-toolkit's documentation
    secret_words=("basic_auth_users",),  # bcrypt hashes
    unsupported=UNSUPPORTED_KEYS,
)


@dataclass(frozen=True)
class WebServing:
    """What the HTTP server needs from the web config: TLS context, users, headers, allowed client SANs."""

    ssl_context: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash
    headers: dict[str, str] = field(default_factory=dict)
    allowed_sans: frozenset[str] | None = None
    source: Path | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context else "http"

    def describe(self) -> str:
        if self.source is None:
            return "no web config (plain HTTP, no authentication)"
        tls = "TLS off"
        if self.ssl_context is not None:
            tls = "TLS on" + (
                ", client certificates required" if self.ssl_context.verify_mode == ssl.CERT_REQUIRED else ""
            )
        return f"web config {self.source}: {tls}, basic auth for {len(self.users)} user(s)"


def _read_document(path: Path) -> dict[str, Any]:
    return parse_mapping(read_text(path, "web config file", WebConfigError), f"web config file {path}", WebConfigError)


def _resolve(path: Path, base: Path) -> Path:
    # As in exporter-toolkit: relative paths are relative to the web config file, not the working directory.
    return path if path.is_absolute() else base / path


def _check_readable(path: Path, key: str) -> None:
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise WebConfigError(f"tls_server_config.{key}: cannot read {path}: {exc.strerror}") from None


def _refuse_key_password() -> bytes:
    raise WebConfigError(
        "tls_server_config.key_file is encrypted; the web config has no key password: give an unencrypted key "
        "(keep it in a Secret mounted read-only)"
    )


def _openssl_cipher_names(suites: list[str]) -> list[str]:
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    probe.set_ciphers("ALL:@SECLEVEL=0")
    by_code_point = {cipher["id"] & 0xFFFF: cipher["name"] for cipher in probe.get_ciphers()}
    names = []
    for suite in suites:
        if suite in TLS13_CIPHER_SUITES:
            continue
        name = by_code_point.get(GO_CIPHER_SUITES[suite])
        if name is None:
            raise WebConfigError(
                f"tls_server_config.cipher_suites: {suite} is not available in {ssl.OPENSSL_VERSION}; remove it"
            )
        names.append(name)
    return names


def build_ssl_context(tls: TlsServerConfig, base: Path) -> ssl.SSLContext:
    """A server SSLContext that does what exporter-toolkit's tls.Config does for the same settings."""
    assert tls.cert_file is not None and tls.key_file is not None  # guaranteed by TlsServerConfig._consistent
    cert_file, key_file = _resolve(tls.cert_file, base), _resolve(tls.key_file, base)
    _check_readable(cert_file, "cert_file")
    _check_readable(key_file, "key_file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with warnings.catch_warnings():
        # Python warns on TLS 1.0/1.1; exporter-toolkit allows them on request, and so do we.
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = TLS_VERSIONS[tls.min_version]
        context.maximum_version = TLS_VERSIONS[tls.max_version]
    try:
        context.load_cert_chain(cert_file, key_file, password=_refuse_key_password)
    except ssl.SSLError as exc:
        raise WebConfigError(
            f"tls_server_config: cert_file {cert_file} and key_file {key_file} are not a matching PEM certificate "
            f"and private key ({exc.reason or exc})"
        ) from None
    if tls.client_ca_file is not None or tls.client_ca is not None:
        ca_file = _resolve(tls.client_ca_file, base) if tls.client_ca_file else None
        if ca_file:
            _check_readable(ca_file, "client_ca_file")
        try:
            context.load_verify_locations(cafile=ca_file, cadata=tls.client_ca)
        except (ssl.SSLError, ValueError) as exc:
            origin = f"client_ca_file {ca_file}" if ca_file else "client_ca"
            raise WebConfigError(f"tls_server_config.{origin} holds no usable PEM CA certificate ({exc})") from None
    context.verify_mode = VERIFY_MODES[tls.client_auth_type]
    if tls.cipher_suites:
        context.set_ciphers(":".join(_openssl_cipher_names(tls.cipher_suites)))
    if tls.prefer_server_cipher_suites:
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    return context


def _normalise_san(value: str) -> str:
    try:
        return ipaddress.ip_address(value).compressed
    except ValueError:
        return value


def watched_files(path: Path) -> tuple[Path, ...]:
    """The web config file and the files its tls_server_config names, as far as the file can be read now:
    a change to any of them is a change of the web config."""
    try:
        document = _read_document(path)
    except WebConfigError:
        return (path,)
    tls = document.get("tls_server_config")
    named = [tls.get(key) for key in ("cert_file", "key_file", "client_ca_file")] if isinstance(tls, dict) else []
    return (path, *(_resolve(Path(name), path.parent) for name in named if isinstance(name, str) and name))


def load_web_config(path: Path | None) -> WebServing:
    """Read and check the web config file (None: plain HTTP without authentication)."""
    if path is None:
        return WebServing()
    document = _read_document(path)
    try:
        parsed = WebConfigFile.model_validate(document)
    except ValidationError as exc:
        raise WebConfigError(format_validation_error(exc, f"web config file {path}", _ERRORS)) from None
    tls = parsed.tls_server_config
    return WebServing(
        ssl_context=build_ssl_context(tls, path.parent) if tls else None,
        users={user: hashed.get_secret_value().encode() for user, hashed in parsed.basic_auth_users.items()},
        headers={name: value for name, value in parsed.http_server_config.headers.items() if value},
        allowed_sans=(
            frozenset(_normalise_san(san) for san in tls.client_allowed_sans)
            if tls and tls.client_allowed_sans is not None
            else None
        ),
        source=path,
    )
