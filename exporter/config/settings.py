"""Configuration: a YAML file plus `KCE_`-prefixed environment variables (pydantic-settings).

Environment variables override the file; nested fields use `__` (for example
`KCE_COLLECTION__INTERVAL_SECONDS=15`), lists take JSON (`KCE_CLUSTERS='[...]'`). Secrets may be given
inline, or as `*_file` paths whose content is read at start-up (Kubernetes Secret mounts).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError, YamlConfigSettingsSource

from exporter.config.schema import ConfigError, ErrorFormat, Location, StrictModel, format_validation_error
from exporter.config.yaml_file import parse_mapping, read_text
from exporter.kafka_releases.table import UnknownReleaseError
from exporter.kafka_releases.upgrade_target import DEFAULT_TARGET_RELEASE, check_target_release

ENV_PREFIX = "KCE_"
_HTTP_URL = re.compile(r"^https?://([^/\s?#]+)(/[^\s#]*)?$")
_HOST_PORT = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")


def _read_secret_file(path: Path | None, field: str) -> SecretStr | None:
    if path is None:
        return None
    try:
        # Secret files from Kubernetes and Docker end with a newline that is not part of the secret.
        return SecretStr(path.read_text(encoding="utf-8").rstrip("\r\n"))
    except OSError as exc:
        raise ValueError(f"{field}: cannot read {path}: {exc.strerror}") from None


def _read_secret_env(name: str | None, field: str) -> SecretStr | None:
    if name is None:
        return None
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"{field}: environment variable {name} is not set")
    return SecretStr(value)


class _Password(StrictModel):
    """A password given inline, as a file (Kubernetes Secret mounts) or as an environment variable name."""

    password: SecretStr | None = Field(
        default=None, description="the password inline (prefer `password_file`); never in logs or `/metrics`"
    )
    password_file: Path | None = Field(default=None, description="file holding the password")
    password_env: str | None = Field(default=None, description="environment variable holding the password")

    @model_validator(mode="after")
    def _resolve_password(self) -> _Password:
        given = [name for name in ("password", "password_file", "password_env") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of password, password_file, password_env; got {', '.join(given)}")
        if self.password_file is not None:
            object.__setattr__(self, "password", _read_secret_file(self.password_file, "password_file"))
        if self.password_env is not None:
            object.__setattr__(self, "password", _read_secret_env(self.password_env, "password_env"))
        return self

    def secret(self) -> str | None:
        return self.password.get_secret_value() if self.password is not None else None


class JmxCredentials(_Password):
    username: str | None = Field(default=None, description="the JMX user (the brokers' `jmxremote.access`)")

    @model_validator(mode="after")
    def _password_needs_user(self) -> JmxCredentials:
        if self.password is not None and not self.username:
            raise ValueError("a JMX password needs a username")
        return self


class JmxTls(StrictModel):
    """JMX over TLS, as brokers started with -Dcom.sun.management.jmxremote.ssl=true serve it (the RMI registry
    plain, the RMI connection over TLS). Trust: ca_file or trust_store; mutual TLS: cert_file and key_file, or
    key_store. Store passwords only as files: the bridge JVM reads them, so they reach no command line."""

    ca_file: Path | None = Field(
        default=None, description="PEM bundle of the CA(s) that signed the brokers' JMX certificates"
    )
    trust_store: Path | None = Field(default=None, description="or: a PKCS12 or JKS trust store holding those CAs")
    trust_store_password_file: Path | None = Field(default=None, description="file holding the trust store password")
    trust_store_type: Literal["PKCS12", "JKS"] = Field(default="PKCS12", description="type of `trust_store`")
    cert_file: Path | None = Field(
        default=None, description="client certificate chain, PEM (mutual TLS: jmxremote.ssl.need.client.auth=true)"
    )
    key_file: Path | None = Field(default=None, description="the client certificate's key, unencrypted PKCS#8 PEM")
    key_store: Path | None = Field(default=None, description="or: a PKCS12 or JKS key store with the client key")
    key_store_password_file: Path | None = Field(
        default=None, description="file holding the key store password (also the key's)"
    )
    key_store_type: Literal["PKCS12", "JKS"] = Field(default="PKCS12", description="type of `key_store`")
    check_hostname: bool = Field(
        default=True,
        description="the broker certificate must name the host in the broker's RMI stub (its java.rmi.server.hostname)",
    )

    @model_validator(mode="after")
    def _files(self) -> JmxTls:
        for name in type(self).model_fields:
            path = getattr(self, name)
            if isinstance(path, Path) and not path.is_file():
                raise ValueError(f"{name} {path} does not exist or is not a file")
        if (self.ca_file is None) == (self.trust_store is None):
            raise ValueError(
                "give either ca_file (PEM) or trust_store (PKCS12/JKS) to trust the brokers' JMX certificates, not "
                + ("both" if self.ca_file else "neither")
            )
        if self.trust_store_password_file is not None and self.trust_store is None:
            raise ValueError("trust_store_password_file is set but trust_store is not")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together (mutual TLS)")
        if self.cert_file is not None and self.key_store is not None:
            raise ValueError("give either cert_file and key_file or key_store for mutual TLS, not both")
        if self.key_store_password_file is not None and self.key_store is None:
            raise ValueError("key_store_password_file is set but key_store is not")
        if self.key_file is not None and b"-----BEGIN PRIVATE KEY-----" not in self.key_file.read_bytes():
            raise ValueError(
                f"key_file {self.key_file} is not an unencrypted PKCS#8 PEM key (-----BEGIN PRIVATE KEY-----); "
                "convert it with: openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8"
            )
        return self


class ClusterJmx(JmxCredentials):
    """JMX settings shared by the brokers of a cluster."""

    port: int | None = Field(default=None, ge=1, le=65535, description="JMX RMI port on each broker host")
    tls: JmxTls | None = Field(
        default=None,
        description="when the brokers serve JMX over TLS; needs `collection.jmx_transport` bridge, not per_call",
    )


class BrokerConfig(StrictModel):
    id: int = Field(ge=0, description="the broker's node id: the `broker` label")
    host: str | None = Field(default=None, description="host of the broker's JMX or metrics endpoint")
    jmx_url: str | None = Field(
        default=None,
        description="the broker's JMX service URL, e.g. `service:jmx:rmi:///jndi/rmi://kafka-0.example:9999/jmxrmi`",
    )
    metrics_url: str | None = Field(
        default=None,
        description="the broker's Prometheus metrics endpoint (prometheus block), e.g. http://kafka-0:9404/metrics",
    )

    @field_validator("metrics_url")
    @classmethod
    def _metrics_url_form(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not _HTTP_URL.match(value):
            raise ValueError(
                f"{value!r} is not an http:// or https:// URL; expected e.g. 'http://kafka-0.example:9404/metrics'"
            )
        return value

    @field_validator("jmx_url")
    @classmethod
    def _jmx_url_form(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("service:jmx:"):
            raise ValueError(
                f"{value!r} is not a JMX service URL; expected e.g. "
                "'service:jmx:rmi:///jndi/rmi://kafka-0.example:9999/jmxrmi'"
            )
        return value


PrometheusPreset = Literal["strimzi", "confluent", "strimzi_reporter"]
_METRIC_NAME = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
_LABEL_NAME = r"^[a-zA-Z_][a-zA-Z0-9_]*$"


class PrometheusDeprecatedMapping(StrictModel):
    """Where a home-made rule puts the KIP-896 DeprecatedRequestsPerSec count."""

    metric: str = Field(pattern=_METRIC_NAME, description="sample name of the count, as served (with any _total)")
    request_label: str = Field(
        default="request", pattern=_LABEL_NAME, description="label holding the request (API) name"
    )
    version_label: str = Field(default="version", pattern=_LABEL_NAME, description="label holding the request version")
    software_name_label: str = Field(
        default="clientSoftwareName", pattern=_LABEL_NAME, description="label holding the client software name"
    )
    software_version_label: str = Field(
        default="clientSoftwareVersion", pattern=_LABEL_NAME, description="label holding the client software version"
    )


class PrometheusChannelsMapping(StrictModel):
    """That the brokers' rules export their own channels as the home-made rule of
    docs/kafka-facts/brokers-own-connections.md#home-made-jmx_exporter-rules does (jmx_exporter's default naming,
    `kafka_server_<type>_connection_count` with the tags as labels), and the series that holds their release."""

    release_metric: str = Field(
        pattern=_METRIC_NAME,
        description="sample name of the series whose label holds the broker's release (app-info Version), as served",
    )
    release_label: str = Field(default="version", pattern=_LABEL_NAME, description="the label holding the release")

    @field_validator("release_metric")
    @classmethod
    def _not_a_channel(cls, value: str) -> str:
        if value.lower().endswith("_connection_count"):
            raise ValueError(
                "a channel's connection count is not the release series: give the sample whose label holds the "
                "app-info Version (e.g. kafka_server_app_info)"
            )
        return value


class PrometheusMapping(StrictModel):
    """Where a home-made jmx_exporter rule puts the KIP-511 client gauge: its sample name and four label names."""

    connections_metric: str = Field(pattern=_METRIC_NAME, description="sample name of the per-client connections gauge")
    software_name_label: str = Field(pattern=_LABEL_NAME, description="label holding the client software name")
    software_version_label: str = Field(pattern=_LABEL_NAME, description="label holding the client software version")
    listener_label: str = Field(pattern=_LABEL_NAME, description="label holding the listener")
    network_processor_label: str = Field(pattern=_LABEL_NAME, description="label holding the network processor")
    deprecated: PrometheusDeprecatedMapping | None = Field(
        default=None, description="the DeprecatedRequestsPerSec count, when the rules export it"
    )
    channels: PrometheusChannelsMapping | None = Field(
        default=None,
        description="set when the rules export every channel's connection-count with jmx_exporter's default naming "
        "and the broker's release: then the brokers' own connections are told apart from clients'",
    )

    @model_validator(mode="after")
    def _release_is_not_the_gauge(self) -> PrometheusMapping:
        if self.channels is not None and self.channels.release_metric == self.connections_metric:
            raise ValueError(
                f"channels.release_metric {self.channels.release_metric!r} is the connections_metric: give the "
                "series whose label holds the broker's release"
            )
        return self


class PrometheusBasicAuth(_Password):
    username: str = Field(min_length=1, description="the user")

    @model_validator(mode="after")
    def _needs_password(self) -> PrometheusBasicAuth:
        if self.password is None:
            raise ValueError("basic_auth needs a password (password, password_file or password_env)")
        return self


class PrometheusTls(StrictModel):
    ca_file: Path | None = Field(default=None, description="CA bundle to verify the endpoints; system CAs if unset")
    cert_file: Path | None = Field(default=None, description="client certificate (mutual TLS)")
    key_file: Path | None = Field(default=None, description="the client certificate's key (mutual TLS)")
    check_hostname: bool = Field(default=True, description="the endpoint's certificate must name the host dialled")

    @model_validator(mode="after")
    def _files(self) -> PrometheusTls:
        for name in ("ca_file", "cert_file", "key_file"):
            path = getattr(self, name)
            if isinstance(path, Path) and not path.is_file():
                raise ValueError(f"{name} {path} does not exist or is not a file")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together (mutual TLS)")
        return self


class ClusterPrometheus(StrictModel):
    """The brokers' own Prometheus endpoints (jmx_exporter or the Strimzi Metrics Reporter) as the source of the
    client gauges, instead of JMX."""

    preset: PrometheusPreset | None = Field(
        default=None,
        description="the published rule set the brokers serve: strimzi (Strimzi's kafka-metrics.yaml for "
        "jmx_exporter), confluent (jmx-monitoring-stacks' kafka_broker.yml), strimzi_reporter (Strimzi Metrics "
        "Reporter); or give mapping",
    )
    mapping: PrometheusMapping | None = Field(
        default=None, description="for rules of your own, instead of a `preset` (give one of the two)"
    )
    port: int | None = Field(default=None, ge=1, le=65535, description="metrics port on each discovered broker host")
    scheme: Literal["http", "https"] = Field(
        default="http", description="scheme of the endpoints built from host and port"
    )
    path: str = Field(default="/metrics", description="URL path of the endpoints built from host and port")
    tls: PrometheusTls | None = Field(default=None, description="TLS of `https` endpoints")
    basic_auth: PrometheusBasicAuth | None = Field(default=None, description="HTTP basic auth of the endpoints")
    bearer_token_file: Path | None = Field(default=None, description="file holding a bearer token; re-read every poll")

    @field_validator("path")
    @classmethod
    def _path_form(cls, path: str) -> str:
        if not path.startswith("/") or any(c.isspace() or c in "?#" for c in path):
            raise ValueError(f"{path!r} is not a URL path: it must start with '/' and hold no space, '?' or '#'")
        return path

    @model_validator(mode="after")
    def _consistent(self) -> ClusterPrometheus:
        if (self.preset is None) == (self.mapping is None):
            raise ValueError(
                "give either preset (strimzi, confluent, strimzi_reporter) or mapping (connections_metric and "
                "the four label names), not " + ("both" if self.preset else "neither")
            )
        if self.basic_auth is not None and self.bearer_token_file is not None:
            raise ValueError("give either basic_auth or bearer_token_file, not both")
        if self.bearer_token_file is not None and not self.bearer_token_file.is_file():
            raise ValueError(f"bearer_token_file {self.bearer_token_file} does not exist or is not a file")
        return self


SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"]


class SaslConfig(_Password):
    """SASL for the Kafka protocol; kafka-python runs the mechanism."""

    mechanism: SaslMechanism = Field(description="the SASL mechanism")
    username: str | None = Field(default=None, description="the SASL user (PLAIN, SCRAM)")
    token_file: Path | None = Field(
        default=None,
        description="OAUTHBEARER: file holding the bearer token, re-read for each new connection (a sidecar or a "
        "projected service-account token may refresh it)",
    )
    kerberos_service_name: str = Field(default="kafka", description="GSSAPI: the brokers' Kerberos service name")
    kerberos_domain_name: str | None = Field(
        default=None, description="GSSAPI: the brokers' Kerberos domain, when not their host's"
    )

    @model_validator(mode="after")
    def _mechanism_inputs(self) -> SaslConfig:
        if self.mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            if not self.username or self.password is None:
                raise ValueError(
                    f"mechanism {self.mechanism} needs username and a password (password, password_file or "
                    "password_env)"
                )
        elif self.mechanism == "OAUTHBEARER":
            if self.token_file is None:
                raise ValueError("mechanism OAUTHBEARER needs token_file (a file holding the bearer token)")
            if not self.token_file.is_file():
                raise ValueError(f"token_file {self.token_file} does not exist or is not a file")
        elif self.mechanism == "GSSAPI":
            try:
                import gssapi  # noqa: F401  (kafka-python's GSSAPI mechanism needs it)
            except ImportError:
                raise ValueError(
                    "mechanism GSSAPI needs the Python package 'gssapi' (pip install gssapi) and a Kerberos "
                    "ticket or keytab"
                ) from None
        return self


class TlsConfig(StrictModel):
    ca_file: Path | None = Field(default=None, description="CA bundle to verify the brokers; system CAs if unset")
    cert_file: Path | None = Field(default=None, description="client certificate (mutual TLS)")
    key_file: Path | None = Field(default=None, description="the client certificate's key (mutual TLS)")
    key_password: SecretStr | None = Field(
        default=None, description="the key's password inline (prefer `key_password_file`); never in logs or `/metrics`"
    )
    key_password_file: Path | None = Field(default=None, description="file holding the key's password")
    crl_file: Path | None = Field(
        default=None, description="certificate revocation list to check the brokers' certificates against"
    )
    check_hostname: bool = Field(default=True, description="the broker certificate must name the host dialled")

    @model_validator(mode="after")
    def _files(self) -> TlsConfig:
        for name in ("ca_file", "cert_file", "key_file", "crl_file"):
            path = getattr(self, name)
            if isinstance(path, Path) and not path.is_file():
                raise ValueError(f"{name} {path} does not exist or is not a file")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together (mutual TLS)")
        if self.key_password is not None and self.key_password_file is not None:
            raise ValueError("give either key_password or key_password_file, not both")
        if self.key_password_file is not None:
            object.__setattr__(self, "key_password", _read_secret_file(self.key_password_file, "key_password_file"))
        return self


class KafkaSecurity(StrictModel):
    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        default="PLAINTEXT", description="the listener's security protocol"
    )
    sasl: SaslConfig | None = Field(
        default=None,
        description="the SASL mechanism and credentials, for protocol SASL_PLAINTEXT or SASL_SSL (which need it)",
    )
    tls: TlsConfig | None = Field(default=None, description="TLS of the Kafka-protocol side (protocol SSL or SASL_SSL)")

    @model_validator(mode="after")
    def _consistent(self) -> KafkaSecurity:
        uses_sasl = self.protocol.startswith("SASL_")
        if uses_sasl and self.sasl is None:
            raise ValueError(f"protocol {self.protocol} needs a sasl section (mechanism and credentials)")
        if not uses_sasl and self.sasl is not None:
            raise ValueError(f"a sasl section needs protocol SASL_PLAINTEXT or SASL_SSL, not {self.protocol}")
        if self.tls is not None and not self.protocol.endswith("SSL"):
            raise ValueError(f"a tls section needs protocol SSL or SASL_SSL, not {self.protocol}")
        return self


class ClusterInventory(StrictModel):
    """The inventory job's output for this cluster's brokers: who (clientId, principal, host, listener) runs each
    client software version, joined with the live connections."""

    path: Path = Field(
        description="the --output directory of `kafka-client-exporter inventory` run over this cluster's brokers' "
        "request logs (a local or mounted path; read only)"
    )
    max_identity_series: int = Field(
        default=2000,
        ge=0,
        description="at most this many kafka_client_identity_info series for the cluster, the most active "
        "identities first; the rest are counted in kafka_client_exporter_identity_series_dropped and stay on the "
        "status page and /api/clients",
    )
    max_loaded_identities: int = Field(
        default=100_000,
        ge=1,
        description="at most this many identities (rows of the clients table) held in memory, the most active "
        "first; the count of the others is kept",
    )


class ClusterConfig(StrictModel):
    name: str = Field(
        min_length=1,
        pattern=r"^[A-Za-z0-9_.\-]+$",
        description="the cluster's name: the `kafka_cluster` label of every series",
    )
    bootstrap_servers: list[str] = Field(
        default_factory=list,
        description="`host:port` of brokers to bootstrap from: the cluster is then polled over the Kafka protocol "
        "(metadata, ApiVersions, client-metrics subscriptions) and its brokers are discovered",
    )
    security: KafkaSecurity = Field(
        default=KafkaSecurity(), description="how the Kafka-protocol side connects; default PLAINTEXT"
    )
    jmx: ClusterJmx | None = Field(
        default=None, description="the cluster is polled over JMX (connected clients) when given"
    )
    prometheus: ClusterPrometheus | None = Field(
        default=None,
        description="or: the same gauges read from the brokers' own Prometheus endpoints (give `jmx` or `prometheus`, "
        "not both)",
    )
    brokers: list[BrokerConfig] | None = Field(
        default=None, description="brokers listed by hand; without it they are discovered from cluster metadata"
    )
    inventory: ClusterInventory | None = Field(
        default=None,
        description="who runs each connected version: the inventory job's latest publication (see "
        "docs/inventory.md#the-exporter-reads-the-inventory)",
    )

    @field_validator("bootstrap_servers")
    @classmethod
    def _host_port(cls, servers: list[str]) -> list[str]:
        for server in servers:
            match = _HOST_PORT.match(server)
            if not match or not 1 <= int(match.group(1)) <= 65535:
                raise ValueError(f"{server!r} is not host:port (port 1-65535)")
        return servers

    @model_validator(mode="after")
    def _something_to_poll(self) -> ClusterConfig:
        if self.prometheus is not None:
            return self._prometheus_endpoints(self.prometheus)
        jmx_port = self.jmx.port if self.jmx else None
        if self.brokers is None:
            if not self.bootstrap_servers:
                raise ValueError(
                    "nothing to poll: give bootstrap_servers (Kafka protocol; brokers are discovered from "
                    "metadata) or list brokers with a jmx_url each"
                )
            if self.jmx is not None and jmx_port is None:
                raise ValueError(
                    "jmx is set but has no port: set jmx.port (brokers are discovered from bootstrap_servers) "
                    "or list brokers with a jmx_url each"
                )
            return self
        self._unique_broker_ids(self.brokers)
        for broker in self.brokers:
            if broker.metrics_url is not None:
                raise ValueError(f"broker {broker.id} has a metrics_url: add a prometheus block to read it")
            if broker.jmx_url is None and (broker.host is None or jmx_port is None):
                raise ValueError(f"broker {broker.id} has no jmx_url; give it one, or give it a host and set jmx.port")
        return self

    def _prometheus_endpoints(self, prometheus: ClusterPrometheus) -> ClusterConfig:
        if self.jmx is not None:
            # Both would report the same client gauges of the same brokers as the same series.
            raise ValueError(
                "give jmx or prometheus, not both: both read the brokers' client gauges (pick one per cluster)"
            )
        if self.brokers is None:
            if not self.bootstrap_servers or prometheus.port is None:
                raise ValueError(
                    "prometheus: set prometheus.port and bootstrap_servers (brokers are discovered from metadata), "
                    "or list brokers with a metrics_url each"
                )
            if prometheus.tls is not None and prometheus.scheme != "https":
                raise ValueError("prometheus.tls is set but scheme is http: set prometheus.scheme to https")
            return self
        self._unique_broker_ids(self.brokers)
        for broker in self.brokers:
            if broker.metrics_url is not None and "@" in broker.metrics_url.split("/")[2]:
                # Checked here, where the error does not echo the value: the URL goes into error messages, logs
                # and the status page, and so would a password in it.
                raise ValueError(
                    f"broker {broker.id}: metrics_url must not hold credentials (user@host); use prometheus.basic_auth"
                )
            if broker.jmx_url is not None:
                raise ValueError(f"broker {broker.id} has a jmx_url, but this cluster reads prometheus endpoints")
            if broker.metrics_url is None and (broker.host is None or prometheus.port is None):
                raise ValueError(
                    f"broker {broker.id} has no metrics_url; give it one, or give it a host and set prometheus.port"
                )
        if prometheus.tls is not None and not any(
            (broker.metrics_url or f"{prometheus.scheme}:").startswith("https:") for broker in self.brokers
        ):
            raise ValueError("prometheus.tls is set but every endpoint is http: set scheme https or https metrics_urls")
        return self

    @staticmethod
    def _unique_broker_ids(brokers: list[BrokerConfig]) -> None:
        ids = [broker.id for broker in brokers]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"broker ids must be unique; repeated: {duplicates}")

    def credentials(self) -> tuple[str | None, str | None]:
        if self.jmx is None:
            return None, None
        return self.jmx.username, self.jmx.secret()

    @property
    def polls_jmx(self) -> bool:
        return self.jmx is not None or (self.brokers is not None and self.prometheus is None)

    @property
    def polls_prometheus(self) -> bool:
        return self.prometheus is not None

    @property
    def polls_protocol(self) -> bool:
        return bool(self.bootstrap_servers)


DEFAULT_TELEMETRY_PATH = "/metrics"
# Paths the exporter serves itself; the telemetry path must not hide one of them.
RESERVED_PATHS = ("/", "/healthz", "/readyz", "/api/client-metrics")


def check_telemetry_path(path: str) -> str:
    """`path` when it can serve the metrics, else ValueError saying what is allowed."""
    if not path.startswith("/") or any(c.isspace() or c in "?#" for c in path):
        raise ValueError(f"{path!r} is not a URL path: it must start with '/' and hold no space, '?' or '#'")
    if path in RESERVED_PATHS:
        raise ValueError(f"{path!r} is taken by the exporter itself ({', '.join(RESERVED_PATHS)})")
    return path


class WebConfig(StrictModel):
    host: str = Field(default="0.0.0.0", description="address to listen on; `0.0.0.0` is every IPv4 interface")
    port: int = Field(default=9784, ge=1, le=65535, description="port to listen on")
    config_file: Path | None = Field(
        default=None, description="exporter-toolkit web config (TLS, basic auth); --web.config.file overrides it"
    )
    telemetry_path: str = Field(default=DEFAULT_TELEMETRY_PATH, description="--web.telemetry-path overrides it")

    @field_validator("telemetry_path")
    @classmethod
    def _telemetry_path(cls, path: str) -> str:
        return check_telemetry_path(path)


class CollectionConfig(StrictModel):
    interval_seconds: float = Field(
        default=30.0, gt=0, le=3600, description="one collection cycle every this many seconds"
    )
    max_concurrency: int = Field(
        default=8, ge=1, le=256, description="JMX reads running at once (bridge threads, or per_call JVMs)"
    )
    jmx_transport: Literal["bridge", "per_call"] = Field(
        default="bridge",
        description="bridge: one long-lived JVM keeps a JMX connection per broker open; "
        "per_call: a new JVM per broker per cycle (the password is on its command line)",
    )
    jmx_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        le=600,
        description="hard deadline of one broker's gauge read (JMX or metrics endpoint), enforced by the exporter; "
        "unset: 10 s, or the interval when that is shorter",
    )
    protocol_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        le=600,
        description="deadline of each Kafka request and bootstrap (metadata, ApiVersions, ListConfigResources, "
        "DescribeConfigs); unset: 10 s, or the interval when that is shorter",
    )
    network_processor_label: bool = Field(
        default=False, description="keep the networkProcessor tag as a label instead of summing over it"
    )
    max_versions_per_cluster: int = Field(
        default=300,
        ge=1,
        le=100000,
        description="cardinality guard: at most this many (software name, version) pairs of a cluster get their own "
        'series; further pairs fold into client_software_version="other" (their counts kept)',
    )
    # Staleness limit in intervals, so it follows interval_seconds: past it /healthz answers 503 and /metrics
    # withholds the client and broker series of the old snapshot. Above 1: one interval late is normal.
    stale_after_intervals: float = Field(
        default=3.0,
        gt=1,
        le=1000,
        description="intervals without a completed cycle after which the served data counts as stale",
    )

    @model_validator(mode="after")
    def _deadline_fits_interval(self) -> CollectionConfig:
        for name in ("jmx_timeout_seconds", "protocol_timeout_seconds"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, min(10.0, self.interval_seconds))
        for name in ("jmx_timeout_seconds", "protocol_timeout_seconds"):
            if getattr(self, name) > self.interval_seconds:
                raise ValueError(
                    f"{name} ({getattr(self, name)}) must not exceed interval_seconds ({self.interval_seconds})"
                )
        return self

    @property
    def stale_after_seconds(self) -> float:
        """Age of the last completed cycle past which the exporter's data is stale."""
        return self.stale_after_intervals * self.interval_seconds


class JavaConfig(StrictModel):
    path: str = Field(default="java", description="the `java` executable")
    # A JMX query JVM lives ~0.2 s: the C1-only JIT and serial GC cut its start-up CPU.
    options: list[str] = Field(
        default_factory=lambda: ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k", "-Xshare:auto"],
        description="JVM options of the JMX query processes (a short-lived JVM starts faster with the C1-only JIT "
        "and the serial collector)",
    )


class PolicyConfig(StrictModel):
    """How connected clients are judged beyond the version policy file (``policy_file``)."""

    target_release: str = Field(
        default=DEFAULT_TARGET_RELEASE,
        description="Kafka release the deprecated requests are judged against "
        "(kafka_client_upgrade_blocking_requests_total); any release of api_versions_by_release.csv",
    )

    @field_validator("target_release")
    @classmethod
    def _known_release(cls, release: str) -> str:
        try:
            return check_target_release(release)
        except UnknownReleaseError as exc:
            raise ValueError(str(exc)) from None


# Prometheus' names (--log.level); the Python names the exporter took before are accepted too.
LogLevel = Literal["debug", "info", "warn", "error"]
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "warn", "error")
LogFormat = Literal["logfmt", "json"]


def normalise_log_level(value: object) -> object:
    """`warn` for `WARNING`/`warning`/`WARN`, and lower case for the others; anything else is left to fail."""
    if not isinstance(value, str):
        return value
    lowered = value.lower()
    return "warn" if lowered == "warning" else lowered


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True)

    # The schema (the chart's values.schema.json among others) also admits the upper-case names the exporter and
    # the chart's default took before, which the validator below still accepts.
    log_level: LogLevel = Field(
        "info",
        json_schema_extra={"enum": [*LOG_LEVELS, "DEBUG", "INFO", "WARN", "WARNING", "ERROR"]},
        description="`--log.level` overrides it; the upper-case names (`WARNING`, ...) still work",
    )
    log_format: LogFormat = Field(
        "logfmt",
        description='`logfmt` (`ts=... level=info logger=exporter msg="..."`) or `json` (one object per line); '
        "`--log.format` overrides it",
    )
    web: WebConfig = Field(
        default=WebConfig(), description="where `serve` listens (`--web.listen-address` overrides host and port)"
    )
    collection: CollectionConfig = Field(
        default=CollectionConfig(),
        description="the background collection cycle; `/metrics` always serves the last complete one",
    )
    java: JavaConfig = Field(
        default=JavaConfig(), description="the Java runtime of the JMX queries (the bridge, or a JVM per call)"
    )
    policy_file: Path | None = Field(
        default=None,
        description="version policy file extending or overriding the shipped default (see docs/policy.md); unset: "
        "the default",
    )
    policy: PolicyConfig = Field(
        default=PolicyConfig(), description="the Kafka release the clients' deprecated requests are judged against"
    )
    clusters: list[ClusterConfig] = Field(
        min_length=1, description="the Kafka clusters to watch: one entry per cluster"
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _log_level(cls, value: object) -> object:
        return normalise_log_level(value)

    @field_validator("clusters")
    @classmethod
    def _unique_names(cls, clusters: list[ClusterConfig]) -> list[ClusterConfig]:
        names = [c.name for c in clusters]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"cluster names must be unique; repeated: {repeated}")
        return clusters

    @model_validator(mode="after")
    def _tls_needs_the_bridge(self) -> Settings:
        # The per-call jar takes no TLS options, and PEM files cannot be handed to a JVM as system properties.
        if self.collection.jmx_transport == "per_call":
            with_tls = [c.name for c in self.clusters if c.jmx is not None and c.jmx.tls is not None]
            if with_tls:
                raise ValueError(
                    f"jmx.tls (clusters {', '.join(with_tls)}) needs collection.jmx_transport bridge, not per_call"
                )
        return self

    @classmethod
    def settings_customise_sources(
        cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
    ):
        sources = [init_settings, env_settings]
        if settings_cls.model_config.get("yaml_file"):
            sources.append(YamlConfigSettingsSource(settings_cls))
        return tuple(sources)


_SECRET_WORDS = ("password", "token")


def _environment_variable(location: Location) -> str | None:
    """The KCE_* variable that set ``location`` or the section or list holding it (KCE_CLUSTERS for
    clusters.0.name), if one is set: pydantic-settings matches names case-insensitively, and so does this."""
    names = {name.upper(): name for name in os.environ}
    for end in range(len(location), 0, -1):
        wanted = (ENV_PREFIX + "__".join(str(part) for part in location[:end])).upper()
        if wanted in names:
            return names[wanted]
    return None


def _environment_source(location: Location) -> str | None:
    variable = _environment_variable(location)
    return f"environment variable {variable}" if variable else None


_ERRORS = ErrorFormat(
    root=Settings,
    # password, password_file, password_env, key_password(_file), token_file: never echoed.
    secret_words=_SECRET_WORDS,
    hint=f"Environment variables {ENV_PREFIX}* override the file (nested keys joined with '__').",
    source_of=_environment_source,
)
_UNPARSED_FIELD = re.compile(r'error parsing value for field "([^"]+)" from source "EnvSettingsSource"')


def _unparsed_variable(exc: SettingsError) -> str:
    """A KCE_* variable holding a list or section that is not JSON: name it, its value unless secret, and why."""
    found = _UNPARSED_FIELD.search(str(exc))
    variable = _environment_variable((found.group(1),)) if found else None
    if variable is None:
        return f"the environment is invalid: {exc}"
    value = os.environ[variable]
    shown = "" if any(word in variable.lower() for word in _SECRET_WORDS) else f" (got {value!r})"
    why = f": {exc.__cause__}" if exc.__cause__ is not None else ""
    return f"environment variable {variable} is invalid: lists and sections take JSON, and this is not JSON{why}{shown}"


def _check_yaml(path: Path) -> None:
    """Fail with the file's own position when the YAML itself is broken or not a mapping."""
    parse_mapping(
        read_text(path, "config file", ConfigError),
        f"config file {path}",
        ConfigError,
        "a mapping with a 'clusters' list",
    )


def load_settings(path: Path | None) -> Settings:
    """Load the YAML file (optional when everything comes from the environment) and the environment."""
    settings_cls: type[Settings] = Settings
    if path is not None:
        _check_yaml(path)
        settings_cls = type("FileSettings", (Settings,), {"model_config": {**Settings.model_config, "yaml_file": path}})
    try:
        return settings_cls()
    except SettingsError as exc:
        raise ConfigError(_unparsed_variable(exc)) from None
    except ValidationError as exc:
        origin = f"config file {path}" if path else "configuration"
        variables = sorted({v for error in exc.errors() if (v := _environment_variable(tuple(error["loc"])))})
        if variables:
            origin += f" with the environment override{'s' if len(variables) > 1 else ''} {', '.join(variables)}"
        raise ConfigError(format_validation_error(exc, origin, _ERRORS)) from None
