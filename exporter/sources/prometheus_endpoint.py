"""Prometheus source: the KIP-511 client gauges and KIP-896 deprecated-request counts of one broker (and its own
channels and release, where the rules export them), read from the metrics endpoint the broker already serves
(jmx_exporter with a published or home-made rule set, or the Strimzi Metrics Reporter), so no remote JMX needs
opening. Gives the same reading as the JMX source."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import aiohttp

from exporter.config.settings import ClusterConfig, ClusterPrometheus, PrometheusMapping
from exporter.snapshot import JmxReading, SourceResult
from exporter.sources.base import Poll, Reason, SourceError, SourceName
from exporter.sources.discovery import DiscoverySource, PerBrokerSource, url_host
from exporter.sources.exposition_mapping import (
    PRESETS,
    ConnectionsMapping,
    DeprecatedMapping,
    ExpositionMapping,
    jmx_exporter_default_channels,
    parse_exposition,
)

# The classic text format: what prometheus-client's parser reads (no OpenMetrics, no protobuf).
_ACCEPT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"
_DETAIL_CHARS = 200
# application/octet-stream: what aiohttp reports when a server sends no Content-Type at all.
_TEXT_TYPES = frozenset({"text/plain", "application/openmetrics-text", "application/octet-stream"})


class EndpointError(SourceError):
    """A failed read of a broker's metrics endpoint."""


@dataclass(frozen=True)
class EndpointAccess:
    """How every endpoint of a cluster is reached: TLS and credentials."""

    ssl_context: ssl.SSLContext | None = None
    basic_auth: str | None = field(default=None, repr=False)  # the Authorization header's value
    bearer_token_file: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {"Accept": _ACCEPT}
        if self.basic_auth is not None:
            headers["Authorization"] = self.basic_auth
        if self.bearer_token_file is not None:
            # Re-read every poll: a projected service-account token or a sidecar rotates it.
            try:
                with open(self.bearer_token_file, encoding="utf-8") as token_file:
                    token = token_file.read().strip()
            except OSError as exc:
                raise EndpointError(
                    Reason.AUTHENTICATION, f"cannot read bearer_token_file {self.bearer_token_file}: {exc.strerror}"
                ) from None
            headers["Authorization"] = f"Bearer {token}"
        return headers


def mapping_of(config: ClusterPrometheus) -> ExpositionMapping:
    if config.preset is not None:
        return PRESETS[config.preset]
    mapping: PrometheusMapping | None = config.mapping
    assert mapping is not None  # ClusterPrometheus requires preset or mapping
    deprecated = None
    if mapping.deprecated is not None:
        d = mapping.deprecated
        deprecated = DeprecatedMapping(
            (d.metric,), d.software_name_label, d.software_version_label, d.request_label, d.version_label
        )
    return ExpositionMapping(
        "mapping",
        ConnectionsMapping(
            (mapping.connections_metric,),
            mapping.software_name_label,
            mapping.software_version_label,
            mapping.listener_label,
            mapping.network_processor_label,
        ),
        deprecated,
        None
        if mapping.channels is None
        else jmx_exporter_default_channels(mapping.channels.release_metric, mapping.channels.release_label),
    )


def access_of(config: ClusterPrometheus) -> EndpointAccess:
    context = None
    tls = config.tls
    if tls is not None or config.scheme == "https":
        context = ssl.create_default_context(cafile=str(tls.ca_file) if tls and tls.ca_file else None)
        if tls is not None:
            context.check_hostname = tls.check_hostname
            if tls.cert_file is not None and tls.key_file is not None:
                context.load_cert_chain(str(tls.cert_file), str(tls.key_file))
    basic = None
    if config.basic_auth is not None:
        # RFC 7617; aiohttp's BasicAuth helper is deprecated in favour of passing the header.
        user_pass = f"{config.basic_auth.username}:{config.basic_auth.secret() or ''}".encode()
        basic = "Basic " + base64.b64encode(user_pass).decode("ascii")
    token_file = str(config.bearer_token_file) if config.bearer_token_file is not None else None
    return EndpointAccess(context, basic, token_file)


def endpoint_url(scheme: str, host: str, port: int, path: str) -> str:
    return f"{scheme}://{url_host(host)}:{port}{path}"


def _short(text: str) -> str:
    return " ".join(text.split())[:_DETAIL_CHARS]


async def fetch_exposition(url: str, access: EndpointAccess, deadline_seconds: float) -> str:
    """The endpoint's text, or EndpointError phrased for the operator."""
    headers = access.headers()
    try:
        async with (
            asyncio.timeout(deadline_seconds),
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session,
            # No redirects: the credentials would follow them to wherever they point.
            session.get(url, headers=headers, ssl=access.ssl_context or True, allow_redirects=False) as response,
        ):
            if response.status == 401:
                raise EndpointError(
                    Reason.AUTHENTICATION,
                    f"metrics endpoint {url} answered 401 Unauthorized: "
                    "check prometheus.basic_auth or bearer_token_file",
                )
            if response.status == 403:
                raise EndpointError(
                    Reason.AUTHORIZATION,
                    f"metrics endpoint {url} answered 403 Forbidden: the credentials are not allowed to read it",
                )
            if 300 <= response.status < 400:
                raise EndpointError(
                    Reason.INVALID_RESPONSE,
                    f"metrics endpoint {url} redirects (HTTP {response.status}) to "
                    f"{response.headers.get('Location', '(no Location)')}: give that URL instead",
                )
            if response.status != 200:
                raise EndpointError(
                    Reason.INVALID_RESPONSE,
                    f"metrics endpoint {url} answered HTTP {response.status}: check the URL (prometheus.path)",
                )
            if response.content_type not in _TEXT_TYPES:
                # Only the wanted lines reach the parser, so a web page would otherwise read as "no clients".
                raise EndpointError(
                    Reason.INVALID_RESPONSE,
                    f"metrics endpoint {url} served {response.content_type}, not the Prometheus text format: "
                    "check the URL (prometheus.path)",
                )
            # The text format is UTF-8 by definition, whatever charset the server names (or leaves out).
            return (await response.read()).decode("utf-8", "replace")
    except TimeoutError:
        raise EndpointError(
            Reason.TIMEOUT, f"metrics endpoint {url} did not answer within {deadline_seconds:g} s"
        ) from None
    except aiohttp.ClientSSLError as exc:
        raise EndpointError(Reason.CONNECTION, f"TLS with metrics endpoint {url} failed: {_short(str(exc))}") from None
    except (aiohttp.ClientError, OSError) as exc:
        raise EndpointError(
            Reason.CONNECTION, f"cannot read metrics endpoint {url}: {_short(str(exc)) or type(exc).__name__}"
        ) from None


async def read_endpoint(
    url: str, access: EndpointAccess, mapping: ExpositionMapping, deadline_seconds: float
) -> JmxReading:
    text = await fetch_exposition(url, access, deadline_seconds)
    try:
        return parse_exposition(text, mapping)
    except ValueError as exc:
        raise EndpointError(
            Reason.INVALID_RESPONSE,
            f"metrics endpoint {url} did not serve the Prometheus text format: {_short(str(exc))}",
        ) from None


class PrometheusEndpointSource(PerBrokerSource):
    """The cluster's listed brokers at their metrics_url, or else the brokers discovery knows at
    prometheus.port. No JVM: the reads take no concurrency slot. The deadline per broker is
    collection.jmx_timeout_seconds, the deadline of a gauge read whichever way it is made."""

    name = SourceName.PROMETHEUS

    def __init__(self, cluster: ClusterConfig, deadline_seconds: float, discovery: DiscoverySource | None) -> None:
        assert cluster.prometheus is not None  # chosen by cluster_sources
        super().__init__(cluster, discovery)
        self._prometheus = cluster.prometheus
        self._deadline_seconds = deadline_seconds
        self._mapping = mapping_of(cluster.prometheus)
        self._access = access_of(cluster.prometheus)

    def _targets(self) -> list[tuple[str, str]]:
        prometheus = self._prometheus
        return self._broker_urls(
            prometheus.port,
            lambda broker: broker.metrics_url,
            lambda host, port: endpoint_url(prometheus.scheme, host, port, prometheus.path),
        )

    def polls(self, earlier: Mapping[SourceName, Sequence[SourceResult]]) -> list[Poll]:
        return [
            Poll(broker, partial(read_endpoint, url, self._access, self._mapping, self._deadline_seconds))
            for broker, url in self._targets()
        ]
