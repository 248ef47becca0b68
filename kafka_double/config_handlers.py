"""Handlers for the configuration RPCs: ListClientMetricsResources / ListConfigResources (key 74) and
DescribeConfigs (key 32) as far as client-metrics subscriptions need them (docs/kafka-facts/protocol.md)."""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from .handler_context import HandlerContext
from .wire import RequestFrame, response_class

LIST_CONFIG_RESOURCES = 74
DESCRIBE_CONFIGS = 32

NONE = 0
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
# ConfigResource.Type numbers (docs/kafka-facts/protocol.md#describeconfigs-for-client-metrics).
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# ConfigEntry.ConfigSource.CLIENT_METRICS_CONFIG.
CLIENT_METRICS_CONFIG_SOURCE = 7
_V1_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


def list_config_resources(ctx: HandlerContext, req: RequestFrame, body: ApiMessage) -> ApiMessage:
    resp_cls = response_class(LIST_CONFIG_RESOURCES)
    version = req.api_version

    def reply(error: int, resources: list[tuple[str, int]]) -> ApiMessage:
        return resp_cls(
            version=version,
            throttle_time_ms=0,
            error_code=error,
            config_resources=[
                resp_cls.ConfigResource(version=version, resource_name=name, resource_type=rtype)
                for name, rtype in resources
            ],
        )

    # KafkaApis.handleListConfigResources: authorization first, the same ACL under both names.
    if not ctx.configs.may_describe_configs(ctx.principal):
        return reply(CLUSTER_AUTHORIZATION_FAILED, [])
    wanted = list(body.resource_types or ()) if version >= 1 else [CLIENT_METRICS]
    if version >= 1 and not wanted:
        wanted = list(_V1_TYPES)
    if any(t not in _V1_TYPES for t in wanted):
        return reply(UNSUPPORTED_VERSION, [])
    resources: list[tuple[str, int]] = []
    for rtype in wanted:
        if rtype == CLIENT_METRICS:
            resources += [(s.name, CLIENT_METRICS) for s in ctx.configs.subscriptions()]
        elif rtype == TOPIC:
            resources += [(topic, TOPIC) for topic in sorted(ctx.topology.topics)]
        elif rtype in (BROKER, BROKER_LOGGER):
            resources += [(str(e.node_id), rtype) for e in ctx.topology.endpoints(ctx.listener)]
        # GROUP: only groups with dynamic group configs are listed; the double has none.
    return reply(NONE, resources)


def describe_configs(ctx: HandlerContext, req: RequestFrame, body: ApiMessage) -> ApiMessage:
    resp_cls = response_class(DESCRIBE_CONFIGS)
    version = req.api_version
    result_cls = resp_cls.DescribeConfigsResult
    entry_cls = result_cls.DescribeConfigsResourceResult
    results = []
    for resource in body.resources:
        error, message, entries = NONE, None, []
        if resource.resource_type != CLIENT_METRICS:
            # Only what the exporter reads is emulated; say so rather than invent topic/broker configs.
            error, message = INVALID_REQUEST, "the broker double describes CLIENT_METRICS resources only"
        elif not resource.resource_name:
            error, message = INVALID_REQUEST, "Client metrics subscription name must not be empty"
        elif not ctx.configs.may_describe_configs(ctx.principal):
            error, message = CLUSTER_AUTHORIZATION_FAILED, None
        else:
            subscription = ctx.configs.subscription(resource.resource_name)
            values = subscription.configs() if subscription is not None else {}
            keys = resource.configuration_keys
            for name in sorted(values):
                if keys is not None and name not in keys:
                    continue
                entries.append(
                    entry_cls(
                        version=version,
                        name=name,
                        value=values[name],
                        read_only=False,
                        is_default=False,
                        config_source=CLIENT_METRICS_CONFIG_SOURCE,
                        is_sensitive=False,
                        synonyms=[],
                        config_type=0,
                        documentation=None,
                    )
                )
        results.append(
            result_cls(
                version=version,
                error_code=error,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=entries,
            )
        )
    return resp_cls(version=version, throttle_time_ms=0, results=results)
