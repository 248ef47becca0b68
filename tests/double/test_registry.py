"""IntGaugeSuite / SelectorChannelMetadataRegistry semantics (docs/kafka-facts/jmx-mbeans.md) and release data."""

from __future__ import annotations

import pytest

from kafka_double.registry import (
    MAX_ENTRIES,
    BrokerMetrics,
    ClientInformation,
    MemorySink,
    client_mbean,
    processor_mbean,
)
from kafka_double.releases import get_release, known_releases


def _metrics(release: str = "4.1.0", cipher: bool = False) -> tuple[BrokerMetrics, MemorySink]:
    sink = MemorySink()
    m = BrokerMetrics(1, get_release(release), sink)
    m.add_processor("PLAINTEXT", 0, cipher)
    return m, sink


def _gauge(sink: MemorySink, name: str, version: str, processor: int = 0) -> object:
    bean = sink.beans.get((1, client_mbean("PLAINTEXT", processor, ClientInformation(name, version))))
    return None if bean is None else bean["connections"]


def test_new_connection_is_unknown_then_reregistered() -> None:
    m, sink = _metrics()
    ch = m.open_channel(0)
    assert m.view() == {("PLAINTEXT", 0, "unknown", "unknown"): 1}
    ch.register_client_information(ClientInformation("app", "1.0"))
    assert m.view() == {("PLAINTEXT", 0, "unknown", "unknown"): 0, ("PLAINTEXT", 0, "app", "1.0"): 1}
    # Same information again is a no-op.
    ch.register_client_information(ClientInformation("app", "1.0"))
    assert m.view()[("PLAINTEXT", 0, "app", "1.0")] == 1
    assert _gauge(sink, "app", "1.0") == 1
    assert sink.beans[(1, processor_mbean("PLAINTEXT", 0))]["connection-count"] == 1.0


def test_empty_name_or_version_maps_to_unknown_individually() -> None:
    assert ClientInformation("", "1.0") == ClientInformation("unknown", "1.0")
    assert ClientInformation("app", "") == ClientInformation("app", "unknown")


def test_close_decrements_and_mbean_lingers_at_zero() -> None:
    m, sink = _metrics()
    ch = m.open_channel(0)
    ch.register_client_information(ClientInformation("app", "1.0"))
    ch.close()
    ch.close()  # idempotent
    assert m.view() == {("PLAINTEXT", 0, "unknown", "unknown"): 0, ("PLAINTEXT", 0, "app", "1.0"): 0}
    assert _gauge(sink, "app", "1.0") == 0
    assert sink.beans[(1, processor_mbean("PLAINTEXT", 0))]["connection-count"] == 0.0


def test_cap_evicts_a_removable_key() -> None:
    m, sink = _metrics()
    first = m.open_channel(0)
    first.register_client_information(ClientInformation("old", "1"))
    first.close()  # "old" and "unknown" are now removable zeros
    live = []
    for i in range(MAX_ENTRIES - 2):
        ch = m.open_channel(0)
        ch.register_client_information(ClientInformation(f"app{i}", "1"))
        live.append(ch)
    view = m.view()
    assert len(view) == MAX_ENTRIES  # full: 98 live + 2 zeros, "unknown" is 0 again after each re-register
    newcomer = m.open_channel(0)
    # A new key while full evicts the oldest removable key (Kafka: any removable key) and its MBean.
    newcomer.register_client_information(ClientInformation("new", "1"))
    view = m.view()
    assert len(view) == MAX_ENTRIES
    assert ("PLAINTEXT", 0, "new", "1") in view
    evicted = {("PLAINTEXT", 0, "unknown", "unknown"), ("PLAINTEXT", 0, "old", "1")} - set(view)
    assert len(evicted) == 1
    (_, _, name, version) = evicted.pop()
    assert _gauge(sink, name, version) is None


def test_cap_with_no_removable_key_does_not_track() -> None:
    m, sink = _metrics()
    channels = [m.open_channel(0) for _ in range(MAX_ENTRIES)]  # all "unknown" for now
    for i, ch in enumerate(channels[1:]):
        ch.register_client_information(ClientInformation(f"app{i}", "1"))
    # 99 live app keys + "unknown" (1 live connection) = 100 live keys, none removable.
    assert len(m.view()) == MAX_ENTRIES and min(m.view().values()) == 1
    extra = m.open_channel(0)  # "unknown" exists: just incremented
    extra.register_client_information(ClientInformation("late", "1"))
    view = m.view()
    assert ("PLAINTEXT", 0, "late", "1") not in view  # not tracked: counted nowhere
    assert _gauge(sink, "late", "1") is None
    assert view[("PLAINTEXT", 0, "unknown", "unknown")] == 1
    extra.close()  # closing an untracked connection changes nothing
    assert m.view() == view


def test_release_before_2_5_has_no_client_mbeans_but_counts_connections() -> None:
    m, sink = _metrics("2.4.0", cipher=True)
    ch = m.open_channel(0)
    ch.register_client_information(ClientInformation("app", "1"))
    assert m.view() == {}
    names = [name for (_, name) in sink.beans]
    assert names == [processor_mbean("PLAINTEXT", 0)]  # no cipher gauge either (sslCiphers is 2.5.0+)
    assert sink.beans[(1, names[0])]["connection-count"] == 1.0


def test_cipher_gauge_shares_attribute_name() -> None:
    _, sink = _metrics(cipher=True)
    cipher = [n for (_, n) in sink.beans if "cipher=" in n]
    assert cipher == [
        "kafka.server:type=socket-server-metrics,cipher=TLS_AES_256_GCM_SHA384,"
        "protocol=TLSv1.3,listener=PLAINTEXT,networkProcessor=0"
    ]
    assert sink.beans[(1, cipher[0])] == {"connections": 2}


def test_deprecated_request_meter_counts_per_client() -> None:
    m, sink = _metrics("3.8.0")
    info = ClientInformation("app", "1")
    m.mark_deprecated_request("Metadata", 2, info)
    m.mark_deprecated_request("Metadata", 2, info)
    name = (
        "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,request=Metadata,version=2,"
        "clientSoftwareName=app,clientSoftwareVersion=1"
    )
    assert sink.beans[(1, name)] == {"Count": 2}


def test_detached_metrics_stop_publishing() -> None:
    m, sink = _metrics()
    ch = m.open_channel(0)
    m.detach()
    sink.stop_broker(1)
    ch.close()
    assert sink.beans == {}


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
