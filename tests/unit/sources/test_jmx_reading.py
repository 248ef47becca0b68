"""Turning the JMXQuery jar's JSON into a reading, and a reading into Prometheus series."""

from __future__ import annotations

import asyncio
import copy

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.config.settings import Settings
from exporter.judging.clients import ClientJudge
from exporter.policy import load_policy
from exporter.snapshot import JmxReading, Snapshot, SourceKey, SourceResult
from exporter.sources import jmx
from exporter.sources.jmx import JmxSource, JmxTarget, JmxTransport, parse_reading
from exporter.sources.object_name import parse_object_name
from exporter.web.exposition import Exposition, render_snapshot

CLIENT = (
    "kafka.server:type=socket-server-metrics,"
    "clientSoftwareName={n},clientSoftwareVersion={v},listener={l},networkProcessor={p}"
)


def gauge(name: str, version: str, listener: str, processor: int, value: float) -> dict:
    return {
        "mBeanName": CLIENT.format(n=name, v=version, l=listener, p=processor),
        "attribute": "connections",
        "attributeType": "Double",
        "value": value,
    }


ITEMS = [
    gauge("apache-kafka-java", "3.7.0", "PLAINTEXT", 0, 2.0),
    gauge("apache-kafka-java", "3.7.0", "PLAINTEXT", 1, 3.0),
    gauge("apache-kafka-java", "3.7.0", "INTERNAL", 3, 1.0),
    gauge("librdkafka", "2.0.2", "PLAINTEXT", 0, 0.0),  # lingering zero-valued MBean
    gauge("unknown", "unknown", "PLAINTEXT", 2, 4.0),
    {  # TLS-cipher gauge: same type and attribute, other tags; never a client
        "mBeanName": "kafka.server:type=socket-server-metrics,cipher=TLS_AES_256_GCM_SHA384,protocol=TLSv1.3,"
        "listener=SSL,networkProcessor=4",
        "attribute": "connections",
        "attributeType": "Integer",
        "value": 7,
    },
    {
        "mBeanName": "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,request=Metadata,version=2,"
        "clientSoftwareName=unknown,clientSoftwareVersion=unknown",
        "attribute": "Count",
        "attributeType": "Long",
        "value": 42,
    },
    {"mBeanName": "garbage", "attribute": "connections", "value": 1},
    {"mBeanName": CLIENT.format(n="x", v="1", l="P", p=0), "attribute": "connections", "value": "NaN"},
]


def test_object_name_keeps_order_and_unquotes() -> None:
    name = parse_object_name('kafka.server:type=a,clientSoftwareName="we,ird\\"name",listener=L')
    assert list(name.properties) == ["type", "clientSoftwareName", "listener"]
    assert name.properties["clientSoftwareName"] == 'we,ird"name'


@pytest.mark.parametrize(
    "text",
    [
        "kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=0,clientSoftwareName=k,v=a=b",
        'kafka.server:type=socket-server-metrics,listener="PLAINTEXT",networkProcessor=0,clientSoftwareName=k,v=a=b',
    ],
    ids=["unquoted", "quoted"],
)
def test_a_name_parses_the_same_with_or_without_quoted_values(text: str) -> None:
    assert parse_object_name(text).properties == {
        "type": "socket-server-metrics",
        "listener": "PLAINTEXT",
        "networkProcessor": "0",
        "clientSoftwareName": "k",
        "v": "a=b",
    }


@pytest.mark.parametrize("text", ["kafka.server:type=a,,listener=L", "kafka.server:type=a,broken", "kafka.server:"])
def test_a_malformed_name_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a JMX ObjectName"):
        parse_object_name(text)


def test_reading_filters_cipher_gauges_and_garbage() -> None:
    reading = parse_reading(ITEMS)
    names = {(c.software_name, c.listener) for c in reading.clients}
    assert ("apache-kafka-java", "INTERNAL") in names
    assert all(c.listener != "SSL" for c in reading.clients)
    assert len(reading.clients) == 5
    assert [(d.request, d.version, d.count) for d in reading.deprecated_requests] == [("Metadata", "2", 42)]
    suites = {(s.listener, s.network_processor): (s.keys, s.live_keys) for s in reading.suites}
    assert suites[("PLAINTEXT", "0")] == (2, 1)


def test_suite_full_only_when_every_key_is_live() -> None:
    live = [gauge(f"c{i}", "1.0", "PLAINTEXT", 0, 1) for i in range(100)]
    assert parse_reading(live).suites[0].full
    # With one zero-valued key Kafka evicts it for a new client: still visible, so not full.
    assert not parse_reading([*live[:99], gauge("gone", "1.0", "PLAINTEXT", 0, 0)]).suites[0].full


def snapshot_of(*results: SourceResult) -> Snapshot:
    inventory = ClientJudge(load_policy(None), max_versions_per_cluster=1000).judge(results)
    return Snapshot(
        sequence=1, taken_at=1.0, cycle_duration_seconds=0.5, results=results, clusters=("prod",), clients=inventory
    )


def samples(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def render(snapshot: Snapshot, per_processor: bool = False) -> dict:
    return samples(render_snapshot(snapshot, openmetrics=False, network_processor_label=per_processor))


def ok(broker: str, reading: JmxReading) -> SourceResult:
    return SourceResult(SourceKey("prod", broker, "jmx"), True, 0.2, 1.0, reading=reading)


def test_series_summed_over_processors_and_zero_dropped() -> None:
    series = render(snapshot_of(ok("1", parse_reading(ITEMS))))
    conns = {
        dict(k[1])["client_software_name"] + "/" + dict(k[1])["listener"]: v
        for k, v in series.items()
        if k[0] == "kafka_client_connections"
    }
    assert conns == {"apache-kafka-java/PLAINTEXT": 5, "apache-kafka-java/INTERNAL": 1, "unknown/PLAINTEXT": 4}
    labels = dict(next(k[1] for k in series if k[0] == "kafka_client_deprecated_requests_total"))
    assert labels == {
        "kafka_cluster": "prod",
        "broker": "1",
        "request": "Metadata",
        "version": "2",
        "client_software_name": "unknown",
        "client_software_version": "unknown",
    }


def test_network_processor_label_is_opt_in() -> None:
    series = render(snapshot_of(ok("1", parse_reading(ITEMS))), per_processor=True)
    processors = sorted(dict(k[1])["network_processor"] for k in series if k[0] == "kafka_client_connections")
    assert processors == ["0", "1", "2", "3"]


def test_failed_broker_has_up_zero_and_no_client_series() -> None:
    failed = SourceResult(SourceKey("prod", "2", "jmx"), False, 3.0, 1.0, error_reason="timeout", error_message="x")
    series = render(snapshot_of(ok("1", parse_reading(ITEMS)), failed))
    assert series[("kafka_client_exporter_up", (("broker", "2"), ("kafka_cluster", "prod"), ("source", "jmx")))] == 0
    assert series[("kafka_client_exporter_up", (("broker", "1"), ("kafka_cluster", "prod"), ("source", "jmx")))] == 1
    assert not [k for k in series if k[0] == "kafka_client_connections" and ("broker", "2") in k[1]]


def test_openmetrics_rendering_ends_once_with_eof() -> None:
    exposition = Exposition()
    exposition.publish(snapshot_of(ok("1", parse_reading(ITEMS))))
    body = exposition.render(openmetrics=True)
    assert body.endswith(b"# EOF\n") and body.count(b"# EOF") == 1
    assert b"kafka_client_deprecated_requests_total{" in body
    assert b"process_resident_memory_bytes" in body


def test_gzip_body_is_one_stream_with_process_metrics() -> None:
    import gzip

    exposition = Exposition()
    exposition.publish(snapshot_of(ok("1", parse_reading(ITEMS))))
    plain = gzip.decompress(exposition.render(openmetrics=False, compressed=True))
    assert plain.startswith(b"# HELP kafka_client_exporter_build_info")
    assert b"kafka_client_connections{" in plain and b"process_cpu_seconds_total" in plain


def test_the_brokers_own_channels_and_release_as_a_real_4_4_broker_answers_them() -> None:
    # The items a 4.4.0 broker with num.replica.fetchers=2 gives for the channel queries: two fetcher threads towards
    # leader 1 (one connection each), one towards 3, markers to three brokers, channels holding nothing now, the
    # network processors' own connection-count (not a channel) and a *-channel-metrics type no release has.
    def count(mbean: str, value: float) -> dict:
        return {"mBeanName": f"kafka.server:{mbean}", "attribute": "connection-count", "value": value}

    items = [
        count("type=replica-fetcher-metrics,broker-id=1,fetcher-id=0", 1.0),
        count("type=replica-fetcher-metrics,broker-id=1,fetcher-id=1", 1.0),
        count("type=replica-fetcher-metrics,broker-id=3,fetcher-id=0", 1.0),
        count("type=txn-marker-channel-metrics", 3.0),
        count("type=Persister-channel-metrics", 0.0),
        count("type=heartbeat-metrics,BrokerId=2", 1.0),
        count("type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=0", 5.0),
        count("type=Future-channel-metrics", 2.0),
        {"mBeanName": "kafka.server:type=app-info,id=2", "attribute": "Version", "value": "4.4.0"},
    ]
    reading = parse_reading(items)
    assert (reading.channels_read, reading.release) == (True, "4.4.0")
    assert {(c.channel, c.destination_broker): c.connections for c in reading.channels} == {
        ("heartbeat", None): 1,
        ("replica-fetcher", "1"): 2,
        ("replica-fetcher", "3"): 1,
        ("txn-marker-channel", None): 3,
    }


def test_a_zookeeper_mode_controller_says_so_and_names_its_channels_destinations() -> None:
    # What a real 3.9.2 ZooKeeper-mode controller of two brokers answered (real_kafka, zookeeper=True): its channel
    # to each broker (itself included), the ISR channel under its 3.5+ name, ActiveControllerCount 1; no raft-metrics.
    items = [
        {"mBeanName": f"kafka.server:type={mbean}", "attribute": "connection-count", "value": value}
        for mbean, value in (
            ("controller-channel-metrics,broker-id=2", 1.0),
            ("controller-channel-metrics,broker-id=1", 1.0),
            ("alter-partition-metrics,BrokerId=1", 0.0),
            ("forwarding-metrics,BrokerId=1", 0.0),
            ("AddPartitionsManager-channel-metrics", 1.0),
        )
    ]
    items += [
        {
            "mBeanName": "kafka.controller:type=KafkaController,name=ActiveControllerCount",
            "attribute": "Value",
            "value": 1,
        },
        {"mBeanName": "kafka.server:type=app-info,id=1", "attribute": "Version", "value": "3.9.2"},
    ]
    reading = parse_reading(items)
    assert (reading.active_controller, reading.quorum_leader, reading.release) == (True, None, "3.9.2")
    assert {(c.channel, c.destination_broker): c.connections for c in reading.channels} == {
        ("controller-channel", "1"): 1,
        ("controller-channel", "2"): 1,
        ("AddPartitionsManager-channel", None): 1,
    }


def test_a_kraft_node_names_the_quorum_leader_and_none_while_it_knows_no_leader() -> None:
    def leader(value: float) -> dict:
        return {"mBeanName": "kafka.server:type=raft-metrics", "attribute": "current-leader", "value": value}

    assert parse_reading([leader(3.0)]).quorum_leader == 3
    assert parse_reading([leader(-1.0)]).quorum_leader is None
    assert parse_reading([]).active_controller is None


class _Answers(JmxTransport):
    """A transport that answers each broker's reads from a list, in turn."""

    uses_slots = False

    def __init__(self, answers: dict[str, list[list[dict]]]) -> None:
        self.answers = answers

    async def read(self, broker: str, target: JmxTarget, deadline_seconds: float) -> list[dict]:
        return copy.deepcopy(self.answers[broker].pop(0))  # a new list every read, as the bridge's JSON is


def test_a_broker_answering_as_last_cycle_is_not_parsed_again_and_a_change_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fewer = [item for item in ITEMS if item["value"] != 3.0]
    url = "service:jmx:rmi:///jndi/rmi://h:9999/jmxrmi"
    settings = Settings(clusters=[{"name": "c", "brokers": [{"id": 1, "jmx_url": url}, {"id": 2, "jmx_url": url}]}])
    transport = _Answers({"c/1": [ITEMS, ITEMS, fewer, ITEMS], "c/2": [ITEMS]})
    source = JmxSource(settings.clusters[0], transport, 1.0, None)
    parsed: list[int] = []

    def counted(items: list[dict]) -> JmxReading:
        parsed.append(len(items))
        return parse_reading(items)

    monkeypatch.setattr(jmx, "parse_reading", counted)

    async def read_all(brokers: list[str]) -> list[JmxReading]:
        readings = [await poll.read() for poll in source.polls({}) if poll.broker in brokers]
        return [r for r in readings if isinstance(r, JmxReading)]

    def cycle(brokers: list[str]) -> list[JmxReading]:
        return asyncio.run(read_all(brokers))

    first, again = cycle(["1", "2"]), cycle(["1"])
    assert again[0] == first[0] == first[1] and parsed == [len(ITEMS), len(ITEMS)]  # broker 1 parsed once
    changed = cycle(["1"])[0]
    assert parsed[-1] == len(fewer)
    assert sum(c.connections for c in changed.clients) == sum(c.connections for c in first[0].clients) - 3
    assert cycle(["1"])[0] == first[0]  # back to the first answer: parsed again, not served from the change
    assert parsed == [len(ITEMS), len(ITEMS), len(fewer), len(ITEMS)]
