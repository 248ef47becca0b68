"""Configuration: a YAML file plus `KCE_`-prefixed environment variables (pydantic-settings).

Environment variables override the file; nested fields use `__` (for example
`KCE_COLLECTION__INTERVAL_SECONDS=15`), lists take JSON (`KCE_CLUSTERS='[...]'`). Secrets may be given
inline, or as `*_file` paths whose content is read at start-up (Kubernetes Secret mounts).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict, YamlConfigSettingsSource

ENV_PREFIX = "KCE_"
_HOST_PORT = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")


class ConfigError(Exception):
    """A configuration problem, already phrased for the operator (field, value, what is allowed)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _read_secret_file(path: Path | None, field: str) -> SecretStr | None:
    if path is None:
        return None
    try:
        # Secret files from Kubernetes and Docker end with a newline that is not part of the secret.
        return SecretStr(path.read_text(encoding="utf-8").rstrip("\r\n"))
    except OSError as exc:
        raise ValueError(f"{field}: cannot read {path}: {exc.strerror}") from None


class JmxCredentials(_Strict):
    username: str | None = None
    password: SecretStr | None = None
    password_file: Path | None = Field(default=None, description="file holding the JMX password")

    @model_validator(mode="after")
    def _load_password_file(self) -> JmxCredentials:
        if self.password is not None and self.password_file is not None:
            raise ValueError("give either password or password_file, not both")
        if self.password_file is not None:
            object.__setattr__(self, "password", _read_secret_file(self.password_file, "password_file"))
        if self.password is not None and not self.username:
            raise ValueError("a JMX password needs a username")
        return self


class ClusterJmx(JmxCredentials):
    """JMX settings shared by the brokers of a cluster."""

    port: int | None = Field(default=None, ge=1, le=65535, description="JMX RMI port on each broker host")


class BrokerConfig(_Strict):
    id: int = Field(ge=0)
    host: str | None = Field(default=None, description="host of the broker's JMX endpoint")
    jmx_url: str | None = None

    @field_validator("jmx_url")
    @classmethod
    def _jmx_url_form(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("service:jmx:"):
            raise ValueError(
                f"{value!r} is not a JMX service URL; expected e.g. "
                "'service:jmx:rmi:///jndi/rmi://kafka-0.example:9999/jmxrmi'"
            )
        return value


class ClusterConfig(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    bootstrap_servers: list[str] = Field(default_factory=list)
    jmx: ClusterJmx | None = None
    brokers: list[BrokerConfig] | None = None

    @field_validator("bootstrap_servers")
    @classmethod
    def _host_port(cls, servers: list[str]) -> list[str]:
        for server in servers:
            match = _HOST_PORT.match(server)
            if not match or not 1 <= int(match.group(1)) <= 65535:
                raise ValueError(f"{server!r} is not host:port (port 1-65535)")
        return servers

    @model_validator(mode="after")
    def _jmx_reachable(self) -> ClusterConfig:
        jmx_port = self.jmx.port if self.jmx else None
        if self.brokers is None:
            if jmx_port is None:
                raise ValueError(
                    "no JMX endpoint: set jmx.port (brokers are then discovered from bootstrap_servers) "
                    "or list brokers with a jmx_url each"
                )
            if not self.bootstrap_servers:
                raise ValueError("broker discovery needs bootstrap_servers (or list brokers explicitly)")
            return self
        ids = [broker.id for broker in self.brokers]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"broker ids must be unique; repeated: {duplicates}")
        for broker in self.brokers:
            if broker.jmx_url is None and (broker.host is None or jmx_port is None):
                raise ValueError(f"broker {broker.id} has no jmx_url; give it one, or give it a host and set jmx.port")
        return self

    def credentials(self) -> tuple[str | None, str | None]:
        if self.jmx is None:
            return None, None
        password = self.jmx.password.get_secret_value() if self.jmx.password else None
        return self.jmx.username, password


class WebConfig(_Strict):
    host: str = "0.0.0.0"
    port: int = Field(default=9784, ge=1, le=65535)


class CollectionConfig(_Strict):
    interval_seconds: float = Field(default=30.0, gt=0, le=3600)
    max_concurrency: int = Field(default=8, ge=1, le=256, description="JMX calls (JVMs) running at once")
    jmx_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    discovery_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    network_processor_label: bool = Field(
        default=False, description="keep the networkProcessor tag as a label instead of summing over it"
    )

    @model_validator(mode="after")
    def _deadline_fits_interval(self) -> CollectionConfig:
        if self.jmx_timeout_seconds > self.interval_seconds:
            raise ValueError(
                f"jmx_timeout_seconds ({self.jmx_timeout_seconds}) must not exceed "
                f"interval_seconds ({self.interval_seconds})"
            )
        return self


class JavaConfig(_Strict):
    path: str = "java"
    # A JMX query JVM lives ~0.2 s: the C1-only JIT and serial GC cut its start-up CPU.
    options: list[str] = Field(
        default_factory=lambda: ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k", "-Xshare:auto"]
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True)

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    web: WebConfig = WebConfig()
    collection: CollectionConfig = CollectionConfig()
    java: JavaConfig = JavaConfig()
    clusters: list[ClusterConfig] = Field(min_length=1)

    @field_validator("clusters")
    @classmethod
    def _unique_names(cls, clusters: list[ClusterConfig]) -> list[ClusterConfig]:
        names = [c.name for c in clusters]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"cluster names must be unique; repeated: {repeated}")
        return clusters

    @classmethod
    def settings_customise_sources(
        cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
    ):  # type: ignore[no-untyped-def]
        sources = [init_settings, env_settings]
        if settings_cls.model_config.get("yaml_file"):
            sources.append(YamlConfigSettingsSource(settings_cls))
        return tuple(sources)


def _check_yaml(path: Path) -> None:
    """Fail with the file's own position when the YAML itself is broken or not a mapping."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"config file {path} is not valid YAML{where}: {problem}") from None
    if document is not None and not isinstance(document, dict):
        raise ConfigError(
            f"config file {path} must hold a mapping with a 'clusters' list, not a {type(document).__name__}"
        )


def load_settings(path: Path | None) -> Settings:
    """Load the YAML file (optional when everything comes from the environment) and the environment."""
    settings_cls: type[Settings] = Settings
    if path is not None:
        _check_yaml(path)
        settings_cls = type("FileSettings", (Settings,), {"model_config": {**Settings.model_config, "yaml_file": path}})
    try:
        return settings_cls()
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, path)) from None


def _allowed_fields(location: tuple[Any, ...]) -> list[str]:
    """The field names valid at `location`'s parent, to name them when an unknown key is found."""
    model: Any = Settings
    for part in location[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return []
        annotation = field.annotation
        for candidate in (annotation, *getattr(annotation, "__args__", ())):
            for inner in (candidate, *getattr(candidate, "__args__", ())):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    model = inner
                    break
            else:
                continue
            break
        else:
            return []
    return sorted(model.model_fields)


def format_validation_error(exc: ValidationError, path: Path | None) -> str:
    origin = f"config file {path}" if path else "configuration"
    lines = [f"{origin} is invalid:"]
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            allowed = _allowed_fields(error["loc"])
            message = "unknown field" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
        elif error["type"] == "missing":
            message = "required field is missing"
        value = error.get("input")
        shown = (
            ""
            if error["type"] in ("missing", "extra_forbidden") or isinstance(value, dict | list)
            else (f" (got {value!r})")
        )
        if "password" in location:
            shown = ""
        lines.append(f"  {location}: {message}{shown}")
    lines.append(f"Environment variables {ENV_PREFIX}* override the file (nested keys joined with '__').")
    return "\n".join(lines)
