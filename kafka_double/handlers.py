"""Request handlers (the double's KafkaApis). Each returns a kafka-python response message, or None
when Kafka sends no response (acks=0 Produce)."""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from kafka.protocol.api_message import ApiMessage

from .config_handlers import describe_configs, list_config_resources
from .handler_context import HandlerContext
from .registry import EMPTY_CLIENT, ClientInformation
from .releases import ZOOKEEPER, Release
from .wire import API_VERSIONS, REQUEST_CLASSES, ProtocolError, RequestFrame, response_class

# docs/kafka-facts/protocol.md#software-name-pattern: ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN, full match.
SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
COORDINATOR_NOT_AVAILABLE = 15
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
FINALIZED_FEATURES_EPOCH = 42  # any epoch >= 0 marks FinalizedFeatures valid (ApiVersionsResponse spec)
ZK_FEATURE_ZNODE_VERSION = 0  # the /feature znode's version right after the controller creates it


@dataclass
class ApiVersionsDecision:
    """What Processor/KafkaApis do with one ApiVersions request (docs/kafka-facts/protocol.md#apiversions-fallback)."""

    response: ApiMessage
    register: ClientInformation | None  # None: nothing is registered
    request_body: ApiMessage  # an empty v0 request when the version was unknown (body not parsed)


def request_class(api_key: int) -> type[ApiMessage]:
    return REQUEST_CLASSES[api_key]


def api_versions(ctx: HandlerContext, req: RequestFrame, decode: Callable[[], ApiMessage]) -> ApiVersionsDecision:
    resp_cls = response_class(API_VERSIONS)
    release = ctx.release
    own = release.api(API_VERSIONS)
    assert own is not None
    if req.api_version > own.max_version:
        # docs/kafka-facts/protocol.md#apiversions-fallback step 1: body not parsed, handled as an empty v0
        # request (so the connection is re-registered as unknown); v0 reply with UNSUPPORTED_VERSION and, from
        # 2.4.0, a single entry with the broker's own ApiVersions range (earlier releases: empty array).
        keys = (
            []
            if release.key < (2, 4, 0)
            else [
                resp_cls.ApiVersion(
                    version=0, api_key=API_VERSIONS, min_version=own.min_version, max_version=own.max_version
                )
            ]
        )
        resp = resp_cls(version=0, error_code=UNSUPPORTED_VERSION, api_keys=keys)
        return ApiVersionsDecision(resp, EMPTY_CLIENT, request_class(API_VERSIONS)(version=0))
    body = decode()
    version = req.api_version
    if version >= 3:
        name = body.client_software_name or ""
        sw_version = body.client_software_version or ""
        if not (SOFTWARE_NAME_VERSION.fullmatch(name) and SOFTWARE_NAME_VERSION.fullmatch(sw_version)):
            # docs/kafka-facts/protocol.md#apiversions-fallback step 2: INVALID_REQUEST in the request's version,
            # empty ApiKeys, nothing registered.
            resp = resp_cls(version=version, error_code=INVALID_REQUEST, api_keys=[], throttle_time_ms=0)
            return ApiVersionsDecision(resp, None, body)
        info = ClientInformation(name, sw_version)
    else:
        info = EMPTY_CLIENT  # v0-v2 carry no name/version (docs/kafka-facts/jmx-mbeans.md#unknown-client-software)
    keys = [
        resp_cls.ApiVersion(version=version, api_key=r.api_key, min_version=r.min_version, max_version=r.max_version)
        for r in release.advertised()
    ]
    fields: dict[str, object] = {"error_code": NONE, "api_keys": keys, "throttle_time_ms": 0}
    if version >= 3 and release.has_features:
        fields.update(_feature_fields(release, version, resp_cls))
    return ApiVersionsDecision(resp_cls(version=version, **fields), info, body)


def _feature_fields(release: Release, version: int, resp_cls: type[ApiMessage]) -> dict[str, object]:
    if release.metadata_mode == ZOOKEEPER:
        # A ZooKeeper-mode broker supports and finalizes no feature, but its FinalizedFeatureCache holds the
        # /feature znode the controller created (version 0 in a fresh cluster): 2.8.0 ApiVersionManager.scala:80-90
        # sends that epoch, 3.9 ZkMetadataCache.features() likewise (ZkMetadataCache.scala:620-626).
        return {"finalized_features_epoch": ZK_FEATURE_ZNODE_VERSION}
    feats = release.features()
    if not feats:
        return {}  # 2.8-3.2 KRaft brokers: no feature defined yet; tagged fields stay at their defaults
    supported = feats
    if version < 4 and release.key >= (3, 9, 0):
        # KAFKA-17492 (docs/kafka-facts/protocol.md#feature-fields-kip-584): v<4 requests get no feature whose
        # MinVersion is 0.
        supported = [f for f in feats if f.min_version != 0]
    return {
        "supported_features": [
            resp_cls.SupportedFeatureKey(
                version=version, name=f.name, min_version=f.min_version, max_version=f.max_version
            )
            for f in supported
        ],
        "finalized_features_epoch": FINALIZED_FEATURES_EPOCH,
        # Only features finalized at a level >= 1 are listed (level 0 = disabled).
        "finalized_features": [
            resp_cls.FinalizedFeatureKey(
                version=version, name=f.name, max_version_level=f.finalized_level, min_version_level=f.finalized_level
            )
            for f in feats
            if f.finalized_level >= 1
        ],
    }


def metadata(ctx: HandlerContext, req: RequestFrame, body: ApiMessage) -> ApiMessage:
    v = req.api_version
    cls = response_class(3)
    topo = ctx.topology
    requested = body.topics
    if requested is None or (v == 0 and not requested):
        names = sorted(topo.topics)  # v0: empty list means all topics; v1+: null means all topics
    else:
        names = [t.name for t in requested if t.name is not None]
    alive = set(topo.alive())
    topics = []
    for name in names:
        if name not in topo.topics:
            # auto.create.topics.enable is treated as false: unknown topics stay unknown.
            topics.append(
                cls.MetadataResponseTopic(version=v, error_code=UNKNOWN_TOPIC_OR_PARTITION, name=name, partitions=[])
            )
            continue
        parts = []
        for p in topo.partitions(name):
            isr = [r for r in p.replicas if r in alive]
            parts.append(
                cls.MetadataResponseTopic.MetadataResponsePartition(
                    version=v,
                    error_code=NONE if p.leader >= 0 else LEADER_NOT_AVAILABLE,
                    partition_index=p.index,
                    leader_id=p.leader,
                    leader_epoch=0,
                    replica_nodes=list(p.replicas),
                    isr_nodes=isr,
                    offline_replicas=[r for r in p.replicas if r not in alive],
                )
            )
        topics.append(
            cls.MetadataResponseTopic(
                version=v, error_code=NONE, name=name, topic_id=topo.topic_id(name), is_internal=False, partitions=parts
            )
        )
    brokers = [
        cls.MetadataResponseBroker(version=v, node_id=e.node_id, host=e.host, port=e.port, rack=e.rack)
        for e in topo.endpoints(ctx.listener)
    ]
    return cls(
        version=v,
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=topo.cluster_id,
        controller_id=topo.controller_id(),
        topics=topics,
    )


def _record_count(records: object) -> int:
    # RecordBatch v2 header: recordsCount int32 at byte 57 (magic byte at 16); older formats count 1.
    data = bytes(records) if isinstance(records, (bytes, bytearray, memoryview)) else b""
    if len(data) >= 61 and data[16] == 2:
        return int(struct.unpack_from(">i", data, 57)[0])
    return 1


def produce(ctx: HandlerContext, req: RequestFrame, body: ApiMessage) -> ApiMessage | None:
    v = req.api_version
    cls = response_class(0)
    topo = ctx.topology
    by_id = {topo.topic_id(t): t for t in topo.topics}
    responses = []
    for td in body.topic_data:
        name = td.name if v < 13 else by_id.get(td.topic_id, "")
        parts = []
        for pd in td.partition_data:
            leaders = {p.index: p.leader for p in topo.partitions(name)} if name in topo.topics else {}
            if pd.index not in leaders:
                err, base = UNKNOWN_TOPIC_OR_PARTITION, -1
            elif leaders[pd.index] != ctx.broker_id:
                err, base = NOT_LEADER_OR_FOLLOWER, -1
            else:
                err, base = NONE, topo.append(name, pd.index, _record_count(pd.records))
            parts.append(
                cls.TopicProduceResponse.PartitionProduceResponse(
                    version=v,
                    index=pd.index,
                    error_code=err,
                    base_offset=base,
                    log_append_time_ms=-1,
                    log_start_offset=0 if err == NONE else -1,
                    record_errors=[],
                )
            )
        responses.append(
            cls.TopicProduceResponse(version=v, name=td.name, topic_id=td.topic_id, partition_responses=parts)
        )
    if body.acks == 0:
        return None  # acks=0: no response, logged with "" (docs/kafka-facts/request-log.md#when-a-line-is-written)
    return cls(version=v, responses=responses, throttle_time_ms=0)


def init_producer_id(ctx: HandlerContext, req: RequestFrame, body: ApiMessage) -> ApiMessage:
    cls = response_class(22)
    return cls(
        version=req.api_version,
        throttle_time_ms=0,
        error_code=NONE,
        producer_id=ctx.topology.next_producer_id(),
        producer_epoch=0,
    )


def _coordinator(ctx: HandlerContext, key: str) -> tuple[int, str, int] | None:
    endpoints = ctx.topology.endpoints(ctx.listener)
    if not endpoints:
        return None
    e = endpoints[zlib.crc32(key.encode()) % len(endpoints)]
    return e.node_id, e.host, e.port


def find_coordinator(ctx: HandlerContext, req: RequestFrame, body: ApiMessage) -> ApiMessage:
    v = req.api_version
    cls = response_class(10)
    keys = list(body.coordinator_keys or []) if v >= 4 else [body.key]
    entries = []
    for key in keys:
        coord = _coordinator(ctx, key or "")
        node, host, port = coord or (-1, "", -1)
        entries.append((key, node, host, port, NONE if coord else COORDINATOR_NOT_AVAILABLE))
    if v >= 4:
        return cls(
            version=v,
            throttle_time_ms=0,
            coordinators=[
                # docs/kafka-facts/protocol.md#findcoordinator-error-message: v4 errorMessage is "" on success.
                cls.Coordinator(version=v, key=k, node_id=n, host=h, port=p, error_code=e, error_message="")
                for k, n, h, p, e in entries
            ],
        )
    _, node, host, port, err = entries[0]
    # docs/kafka-facts/protocol.md#findcoordinator-error-message: v1-3 carry "NONE" on success.
    return cls(version=v, throttle_time_ms=0, error_code=err, error_message="NONE", node_id=node, host=host, port=port)


def describe_cluster(ctx: HandlerContext, req: RequestFrame, body: ApiMessage) -> ApiMessage:
    v = req.api_version
    cls = response_class(60)
    brokers = [
        cls.DescribeClusterBroker(version=v, broker_id=e.node_id, host=e.host, port=e.port, rack=None)
        for e in ctx.topology.endpoints(ctx.listener)
    ]
    return cls(
        version=v,
        throttle_time_ms=0,
        error_code=NONE,
        error_message=None,
        endpoint_type=1,
        cluster_id=ctx.topology.cluster_id,
        controller_id=ctx.topology.controller_id(),
        brokers=brokers,
    )


Handler = Callable[[HandlerContext, RequestFrame, ApiMessage], "ApiMessage | None"]

HANDLERS: dict[int, Handler] = {
    0: produce,
    3: metadata,
    10: find_coordinator,
    22: init_producer_id,
    32: describe_configs,
    60: describe_cluster,
    74: list_config_resources,
}


def handler_for(api_key: int) -> Handler:
    try:
        return HANDLERS[api_key]
    except KeyError:
        raise ProtocolError(f"the broker double has no handler for api key {api_key}") from None
