"""A broker's connections reach Kafka's own Selector in the MBean host, and its KIP-511 MBeans are Kafka's
(docs/kafka-facts/jmx-mbeans.md): read back over the host's DUMP, as a JMX client would see them."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from harness.ports import free_port
from kafka_double.mbean_host import MBeanHost
from kafka_double.registry import BrokerMetrics, ChannelRegistry, ClientInformation
from kafka_double.releases import get_release, known_releases

MAX_ENTRIES = 100  # Selector's "clients" IntGaugeSuite maxEntries (Selector.java:1251 at 4.3.0)
_ids = itertools.count(9000)
_connection_ids = itertools.count()
Beans = dict[str, dict[str, object]]


@pytest.fixture
def broker(mbean_host: MBeanHost) -> Iterator[Callable[..., BrokerMetrics]]:
    started: list[int] = []

    def start(release: str = "4.1.0") -> BrokerMetrics:
        broker_id = next(_ids)
        mbean_host.add_broker(broker_id, free_port())
        started.append(broker_id)
        metrics = BrokerMetrics(broker_id, get_release(release), mbean_host)
        metrics.add_processor("PLAINTEXT", 0)
        return metrics

    yield start
    for broker_id in started:
        mbean_host.stop_broker(broker_id)


def _open(metrics: BrokerMetrics) -> ChannelRegistry:
    return metrics.open_channel(0, f"127.0.0.1:9092-127.0.0.1:{next(_connection_ids)}-0-0")


def _beans(host: MBeanHost, metrics: BrokerMetrics) -> Beans:
    out: Beans = {}
    for name, attribute, value in host.dump(metrics.broker_id):
        out.setdefault(name, {})[attribute] = value
    return out


def _client(name: str, version: str) -> str:
    return (
        f"kafka.server:type=socket-server-metrics,clientSoftwareName={name},clientSoftwareVersion={version},"
        "listener=PLAINTEXT,networkProcessor=0"
    )


PROCESSOR = "kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=0"


def test_new_connection_is_unknown_then_reregistered(mbean_host: MBeanHost, broker) -> None:
    m = broker()
    ch = m.open_channel(0, "c-1")
    assert m.view() == {("PLAINTEXT", 0, "unknown", "unknown"): 1}
    ch.register_client_information(ClientInformation("app", "1.0"))
    ch.register_client_information(ClientInformation("app", "1.0"))  # the same again changes nothing
    assert m.view() == {("PLAINTEXT", 0, "unknown", "unknown"): 0, ("PLAINTEXT", 0, "app", "1.0"): 1}
    beans = _beans(mbean_host, m)
    # Kafka's IntGaugeSuite gauge is an Integer; Selector's connection-count a double measurable.
    assert beans[_client("app", "1.0")] == {"connections": 1}
    assert type(beans[_client("app", "1.0")]["connections"]) is int
    assert beans[PROCESSOR]["connection-count"] == 1.0
    assert "kafka.server:type=kafka-metrics-count" in beans  # Kafka's Metrics registers itself too


def test_empty_name_or_version_maps_to_unknown_individually() -> None:
    assert ClientInformation("", "1.0") == ClientInformation("unknown", "1.0")
    assert ClientInformation("app", "") == ClientInformation("app", "unknown")


def test_close_decrements_and_mbean_lingers_at_zero(mbean_host: MBeanHost, broker) -> None:
    m = broker()
    ch = m.open_channel(0, "c-1")
    ch.register_client_information(ClientInformation("app", "1.0"))
    ch.close()
    ch.close()  # idempotent
    assert m.view() == {("PLAINTEXT", 0, "unknown", "unknown"): 0, ("PLAINTEXT", 0, "app", "1.0"): 0}
    assert _beans(mbean_host, m)[PROCESSOR]["connection-count"] == 0.0


def test_full_suite_evicts_a_zero_key(broker) -> None:
    m = broker()
    first = _open(m)
    first.register_client_information(ClientInformation("old", "1"))
    first.close()  # "old" and "unknown" are now removable zeros
    live = []
    for i in range(MAX_ENTRIES - 2):
        ch = _open(m)
        ch.register_client_information(ClientInformation(f"app{i}", "1"))
        live.append(ch)
    assert len(m.view()) == MAX_ENTRIES
    newcomer = _open(m)
    newcomer.register_client_information(ClientInformation("new", "1"))
    view = m.view()
    # Kafka keeps removable keys in a HashSet: which zero goes is Kafka's choice, that one goes is the rule.
    assert len(view) == MAX_ENTRIES and view[("PLAINTEXT", 0, "new", "1")] == 1
    assert len({("PLAINTEXT", 0, "unknown", "unknown"), ("PLAINTEXT", 0, "old", "1")} - set(view)) == 1


def test_full_suite_with_no_zero_key_does_not_track(broker) -> None:
    m = broker()
    channels = [_open(m) for _ in range(MAX_ENTRIES)]  # all "unknown" for now
    for i, ch in enumerate(channels[1:]):
        ch.register_client_information(ClientInformation(f"app{i}", "1"))
    # 99 live app keys + "unknown" (1 live connection) = 100 live keys, none removable.
    assert len(m.view()) == MAX_ENTRIES and min(m.view().values()) == 1
    extra = _open(m)  # "unknown" exists: just incremented
    extra.register_client_information(ClientInformation("late", "1"))
    view = m.view()
    assert ("PLAINTEXT", 0, "late", "1") not in view  # not tracked: counted nowhere
    assert view[("PLAINTEXT", 0, "unknown", "unknown")] == 1
    extra.close()  # closing an untracked connection changes nothing
    assert m.view() == view


def test_release_before_2_5_has_processor_metrics_but_no_client_or_cipher_gauges(mbean_host: MBeanHost, broker) -> None:
    m = broker("2.4.0")
    ch = m.open_channel(0, "c-1")
    ch.register_client_information(ClientInformation("app", "1"))
    ch.register_cipher_information("TLS_AES_256_GCM_SHA384", "TLSv1.3")
    assert m.view() == {}
    beans = _beans(mbean_host, m)
    assert not [name for name in beans if "clientSoftwareName=" in name or "cipher=" in name]
    assert PROCESSOR in beans


def test_cipher_gauge_comes_from_the_channel_and_shares_the_attribute_name(mbean_host: MBeanHost, broker) -> None:
    m = broker()
    ch = m.open_channel(0, "c-1")
    ch.register_cipher_information("TLS_AES_256_GCM_SHA384", "TLSv1.3")
    cipher = "kafka.server:type=socket-server-metrics,cipher=TLS_AES_256_GCM_SHA384,protocol=TLSv1.3,"
    assert _beans(mbean_host, m)[cipher + "listener=PLAINTEXT,networkProcessor=0"] == {"connections": 1}
    ch.close()
    assert _beans(mbean_host, m)[cipher + "listener=PLAINTEXT,networkProcessor=0"] == {"connections": 0}


def test_deprecated_request_meter_counts_per_client(mbean_host: MBeanHost, broker) -> None:
    m = broker("3.8.0")
    info = ClientInformation("app", "1")
    m.mark_deprecated_request("Metadata", 2, info)
    m.mark_deprecated_request("Metadata", 2, info)
    name = (
        "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,request=Metadata,version=2,"
        "clientSoftwareName=app,clientSoftwareVersion=1"
    )
    assert _beans(mbean_host, m)[name] == {"Count": 2}


def test_detached_metrics_stop_publishing(mbean_host: MBeanHost, broker) -> None:
    m = broker()
    ch = m.open_channel(0, "c-1")
    m.detach()
    ch.close()
    ch.register_client_information(ClientInformation("app", "1"))
    mbean_host.sync()  # nothing was sent for a detached broker, so nothing was rejected
    assert m.view() == {}


@pytest.mark.parametrize(
    ("release", "api_versions_max", "metadata_max"),
    [("2.4.0", 3, 9), ("3.6.0", 3, 12), ("3.9.0", 4, 12), ("4.1.0", 4, 13), ("4.3.1", 4, 13)],
)
def test_release_advertised_maxima(release: str, api_versions_max: int, metadata_max: int) -> None:
    rel = get_release(release)
    assert rel.api_versions_max == api_versions_max
    api = rel.api(3)
    assert api is not None and api.max_version == metadata_max


def test_release_rules() -> None:
    r41 = get_release("4.1.0")
    assert 71 not in r41.apis and 72 not in r41.apis  # telemetry hidden
    produce = r41.api(0)
    assert produce is not None and produce.min_version == 0 and not produce.accepts(2)  # KAFKA-18659
    offset_commit = r41.api(8)
    assert offset_commit is not None and offset_commit.max_version == 9  # unstable v10 hidden
    assert 52 not in get_release("3.8.0").apis  # Vote is controller-only
    assert 52 not in get_release("2.7.0").apis  # disabled in 2.7.0
    assert get_release("3.8.0").is_deprecated(3, 2)
    assert not get_release("4.1.0").is_deprecated(3, 2)
    assert [get_release(r).deprecated_metrics for r in ("3.6.0", "3.7.0", "3.9.0", "4.0.0")] == [
        False,
        True,
        True,
        False,
    ]
    assert not get_release("2.4.0").has_client_mbeans and get_release("2.5.0").has_client_mbeans
    assert get_release("4.0.0").connection_id_has_processor and not get_release("3.9.0").connection_id_has_processor


def test_unknown_release_lists_known_ones() -> None:
    with pytest.raises(ValueError, match=r"4\.3\.1"):
        get_release("9.9.9")
    assert "2.4.0" in known_releases()
