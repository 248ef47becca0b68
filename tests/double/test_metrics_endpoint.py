"""The double's metrics endpoints (without a JVM): every preset's exposition reads back as the broker's registry,
TLS-cipher gauges and lingering zeros included, and a killed broker's endpoint goes with it."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from kafka.protocol.metadata import ApiVersionsRequest

from exporter.sources.exposition_mapping import PRESETS as EXPORTER_PRESETS
from exporter.sources.exposition_mapping import parse_exposition
from kafka_double.cluster import BrokerSpec, DoubleCluster, MetricsEndpointConfig
from kafka_double.mbean_host import MBeanHost
from kafka_double.metrics_endpoint import PRESETS
from kafka_double.raw_client import RawConnection


@pytest.mark.parametrize("preset", PRESETS)
def test_exposition_reads_back_as_the_registry(preset: str, mbean_host: MBeanHost) -> None:
    endpoint = MetricsEndpointConfig(preset)
    with DoubleCluster([BrokerSpec(1)], mbean_host=mbean_host, metrics_endpoint=endpoint) as c:
        broker = c.broker(1)
        with RawConnection(broker.listener_port("PLAINTEXT")) as first, RawConnection(broker.listener_port("INTERNAL")):
            first.request(ApiVersionsRequest(version=3, client_software_name="app", client_software_version="1.0"))
            c.sync()
            text = urllib.request.urlopen(broker.metrics_url, timeout=5).read().decode()
            expected = c.registry_view(1)
        broker.kill()
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(broker.metrics_url, timeout=5)

    reading = parse_exposition(text, EXPORTER_PRESETS[preset])
    read = {
        (x.listener, int(x.network_processor), x.software_name, x.software_version): x.connections
        for x in reading.clients
    }
    assert read == expected and ("PLAINTEXT", 0, "app", "1.0") in read


def test_unknown_preset_is_named() -> None:
    with pytest.raises(ValueError, match="allowed: strimzi, confluent, strimzi_reporter"):
        MetricsEndpointConfig("jolokia")
