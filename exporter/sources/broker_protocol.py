"""What the Kafka protocol says about brokers: ApiVersions per broker (KIP-35/KIP-511/KIP-584) and the
cluster's client-metrics subscriptions (KIP-714 resources, listed by key 74 and read with DescribeConfigs).

The coroutines run on kafka-python's IO loop (see ``KafkaSession.call``); they use the connections the
manager keeps open and build every request at an explicit version chosen from the broker's own answer.
"""

from __future__ import annotations

import functools
import logging

from kafka.net.manager import KafkaConnectionManager
from kafka.protocol.admin import DescribeConfigsRequest, ListConfigResourcesRequest
from kafka.protocol.metadata import ApiVersionsRequest

from exporter.kafka_releases.inference import infer_release
from exporter.kafka_releases.table import api_name
from exporter.snapshot import ApiRange, BrokerFacts, BrokerListeners, ClientMetricsReading, FeatureRange, Subscription
from exporter.sources.base import Reason
from exporter.sources.kafka_session import SOFTWARE_NAME, ProtocolError, software_version

log = logging.getLogger(__name__)

API_VERSIONS = 18
DESCRIBE_CONFIGS = 32
LIST_CONFIG_RESOURCES = 74
NONE = 0
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
CLIENT_METRICS = 16  # ConfigResource.Type
BROKER = 4  # ConfigResource.Type
# Where a broker's own channels connect (docs/kafka-facts/brokers-own-connections.md). KafkaConfig falls back to the
# listener named after security.inter.broker.protocol when inter.broker.listener.name is not set.
LISTENER_KEYS = [
    "inter.broker.listener.name",
    "security.inter.broker.protocol",
    "controller.listener.names",
    "control.plane.listener.name",
    "num.replica.fetchers",
]
SUBSCRIPTION_KEYS = ["metrics", "interval.ms", "match"]
DEFAULT_INTERVAL_MS = 300000  # ClientMetricsConfigs default interval.ms
ACL_HINT = (
    "the exporter's principal needs DESCRIBE_CONFIGS on the CLUSTER resource, e.g. kafka-acls.sh --add "
    "--allow-principal User:<exporter> --operation DescribeConfigs --cluster"
)


async def _connection(manager: KafkaConnectionManager, node_id: int):  # kafka-python is untyped
    conn = manager.get_connection(node_id)
    await conn  # the KIP-511 handshake (and SASL) of a new connection; immediate for an open one
    return conn


async def read_broker_facts(
    manager: KafkaConnectionManager, node_id: int, host: str, start_version: int | None
) -> BrokerFacts:
    """ApiVersions at the highest version both sides support, with KIP-511's fallback: on
    UNSUPPORTED_VERSION retry at the maximum the broker advertises for key 18 (v0 when it names none, as
    brokers before 2.4 do), and once answered below the broker's own maximum, ask again at that maximum."""
    conn = await _connection(manager, node_id)
    ours = ApiVersionsRequest.max_version
    # None: a broker not asked before, so start at our own maximum.
    version = ours if start_version is None else min(start_version, ours)
    tried: list[int] = []
    while True:
        tried.append(version)
        response = await conn.send_request(
            ApiVersionsRequest(
                version=version, client_software_name=SOFTWARE_NAME, client_software_version=software_version()
            )
        )
        own = next((k for k in response.api_keys if k.api_key == API_VERSIONS), None)
        if response.error_code == UNSUPPORTED_VERSION:
            fallback = min(own.max_version, ours) if own is not None else 0
            if fallback >= version or len(tried) > 3:
                raise ProtocolError(Reason.PROTOCOL, f"ApiVersions v{version} unsupported and no lower version offered")
            version = fallback
            continue
        if response.error_code != NONE:
            raise ProtocolError(Reason.PROTOCOL, f"ApiVersions v{version} failed with error code {response.error_code}")
        if own is not None and version < min(own.max_version, ours) and len(tried) <= 3:
            version = min(own.max_version, ours)
            continue
        break
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    apis, inferred = _advertised(tuple(sorted(advertised.items())))
    epoch = getattr(response, "finalized_features_epoch", None)
    return BrokerFacts(
        host=host,
        request_version=version,
        versions_tried=tuple(tried),
        apis=apis,
        supported_features=tuple(
            FeatureRange(f.name, f.min_version, f.max_version)
            for f in sorted(getattr(response, "supported_features", None) or (), key=lambda f: f.name)
        ),
        finalized_features=tuple(
            FeatureRange(f.name, f.min_version_level, f.max_version_level)
            for f in sorted(getattr(response, "finalized_features", None) or (), key=lambda f: f.name)
        ),
        finalized_features_epoch=epoch if isinstance(epoch, int) else -1,
        inferred_release=inferred,
    )


@functools.lru_cache(maxsize=64)
def _advertised(ranges: tuple[tuple[int, tuple[int, int]], ...]) -> tuple[tuple[ApiRange, ...], str]:
    """A broker's API ranges (key -> (min, max), sorted) as facts, and the release they say: the same answer every
    cycle until the broker restarts or its controllers roll, so worked out once per answer (inferring the release
    scores every release of the table)."""
    apis = tuple(ApiRange(key, api_name(key), low, high) for key, (low, high) in ranges)
    return apis, infer_release(dict(ranges))


def key74_support(facts: BrokerFacts) -> tuple[bool, bool]:
    rng = facts.api(LIST_CONFIG_RESOURCES)
    if rng is None:
        return False, False
    return rng.min_version <= 0 <= rng.max_version, rng.min_version <= 1 <= rng.max_version


def _describe_version(facts: BrokerFacts) -> int:
    rng = facts.api(DESCRIBE_CONFIGS)
    if rng is None:
        raise ProtocolError(Reason.PROTOCOL, "the broker does not advertise DescribeConfigs")
    version = min(rng.max_version, DescribeConfigsRequest.max_version)
    if version < rng.min_version:
        raise ProtocolError(Reason.PROTOCOL, f"no DescribeConfigs version in common (broker {rng.min_version}+)")
    return version


def _split_list(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


async def read_client_metrics(
    manager: KafkaConnectionManager, node_id: int, facts: BrokerFacts
) -> ClientMetricsReading:
    """List the subscriptions with key 74 (v1 with type CLIENT_METRICS when served, else v0, which is the
    same on the wire as ListClientMetricsResources), then describe them in one DescribeConfigs."""
    v0, v1 = key74_support(facts)
    if not (v0 or v1):
        return ClientMetricsReading(False, False, None)
    conn = await _connection(manager, node_id)
    if v1:
        api_used = "ListConfigResources"
        request = ListConfigResourcesRequest(version=1, resource_types=[CLIENT_METRICS])
    else:
        api_used = "ListClientMetricsResources"
        request = ListConfigResourcesRequest(version=0)
    response = await conn.send_request(request)
    if response.error_code == CLUSTER_AUTHORIZATION_FAILED:
        raise ProtocolError(Reason.AUTHORIZATION, f"{api_used} denied (CLUSTER_AUTHORIZATION_FAILED): {ACL_HINT}")
    if response.error_code != NONE:
        raise ProtocolError(Reason.PROTOCOL, f"{api_used} failed with error code {response.error_code}")
    names = sorted(r.resource_name for r in response.config_resources if not v1 or r.resource_type == CLIENT_METRICS)
    if not names:
        return ClientMetricsReading(v0, v1, api_used)
    describe = DescribeConfigsRequest(
        version=_describe_version(facts),
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=CLIENT_METRICS, resource_name=name, configuration_keys=SUBSCRIPTION_KEYS
            )
            for name in names
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    described = await conn.send_request(describe)
    subscriptions = []
    for result in described.results:
        if result.error_code == CLUSTER_AUTHORIZATION_FAILED:
            raise ProtocolError(
                Reason.AUTHORIZATION, f"DescribeConfigs of CLIENT_METRICS {result.resource_name!r} denied: {ACL_HINT}"
            )
        if result.error_code != NONE:
            raise ProtocolError(
                Reason.PROTOCOL,
                f"DescribeConfigs of CLIENT_METRICS {result.resource_name!r} failed with error code "
                f"{result.error_code}: {result.error_message}",
            )
        values = {c.name: c.value for c in result.configs}
        try:
            interval = int(values.get("interval.ms") or DEFAULT_INTERVAL_MS)
        except ValueError:
            raise ProtocolError(
                Reason.INVALID_RESPONSE, f"subscription {result.resource_name!r}: interval.ms {values['interval.ms']!r}"
            ) from None
        subscriptions.append(
            Subscription(
                result.resource_name, interval, _split_list(values.get("metrics")), _split_list(values.get("match"))
            )
        )
    return ClientMetricsReading(v0, v1, api_used, tuple(sorted(subscriptions, key=lambda s: s.name)))


async def read_broker_listeners(manager: KafkaConnectionManager, node_id: int, facts: BrokerFacts) -> BrokerListeners:
    """The broker's inter-broker and controller listener names and replica fetcher threads, from DescribeConfigs of
    the broker itself (static configuration: asked of that broker)."""
    conn = await _connection(manager, node_id)
    request = DescribeConfigsRequest(
        version=_describe_version(facts),
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=BROKER, resource_name=str(node_id), configuration_keys=LISTENER_KEYS
            )
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    response = await conn.send_request(request)
    result = response.results[0]
    if result.error_code == CLUSTER_AUTHORIZATION_FAILED:
        raise ProtocolError(Reason.AUTHORIZATION, f"DescribeConfigs of broker {node_id} denied: {ACL_HINT}")
    if result.error_code != NONE:
        raise ProtocolError(
            Reason.PROTOCOL,
            f"DescribeConfigs of broker {node_id} failed with error code {result.error_code}: {result.error_message}",
        )
    values = {c.name: c.value for c in result.configs}
    inter_broker = values.get("inter.broker.listener.name") or values.get("security.inter.broker.protocol")
    try:
        fetchers = int(values.get("num.replica.fetchers") or "")
    except ValueError:
        fetchers = -1
    if not inter_broker or fetchers < 1:
        raise ProtocolError(
            Reason.INVALID_RESPONSE,
            f"DescribeConfigs of broker {node_id}: no inter-broker listener or replica fetcher count in {values}",
        )
    controller = next(iter(_split_list(values.get("controller.listener.names"))), None)
    return BrokerListeners(inter_broker, controller, fetchers, values.get("control.plane.listener.name") or None)
