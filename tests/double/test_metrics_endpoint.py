"""The double's metrics endpoints: every preset's exposition reads back as the MBeans Kafka's Selector holds, the
TLS-cipher gauge of a real handshake and lingering zeros included, and a killed broker's endpoint goes with it."""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kafka.protocol.metadata import ApiVersionsRequest

from exporter.sources.exposition_mapping import PRESETS as EXPORTER_PRESETS
from exporter.sources.exposition_mapping import parse_exposition
from harness.raw_client import RawConnection
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec, MetricsEndpointConfig
from kafka_double.mbean_host import MBeanHost
from kafka_double.metrics_endpoint import PRESETS
from kafka_double.specs import ListenerTls
from tests.support.tls_material import BrokerTlsMaterial


@pytest.mark.parametrize("preset", PRESETS)
def test_exposition_reads_back_as_the_registry(preset: str, mbean_host: MBeanHost, tmp_path: Path) -> None:
    endpoint = MetricsEndpointConfig(preset)
    material = BrokerTlsMaterial(tmp_path)
    listeners = [ListenerSpec(), ListenerSpec("SSL", "SSL", tls=ListenerTls(material.broker.cert, material.broker.key))]
    trust = ssl.create_default_context(cafile=str(material.ca_file))
    with DoubleCluster([BrokerSpec(1, listeners=listeners)], mbean_host=mbean_host, metrics_endpoint=endpoint) as c:
        broker = c.broker(1)
        tls_socket = socket.create_connection(("127.0.0.1", broker.listener_port("SSL")), timeout=5)
        with (
            RawConnection(broker.listener_port("PLAINTEXT")) as first,
            trust.wrap_socket(tls_socket, server_hostname="127.0.0.1") as handshaken,
        ):
            first.request(ApiVersionsRequest(version=3, client_software_name="app", client_software_version="1.0"))
            negotiated = handshaken.cipher()
            assert negotiated is not None  # the handshake is done once wrap_socket returns
            cipher, protocol = negotiated[0], handshaken.version()
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
    # The handshake's cipher (TLS 1.3: OpenSSL and JSSE use the IANA name) as Kafka's sslCiphers gauge; Confluent's
    # rules blacklist the cipher MBeans.
    assert protocol == "TLSv1.3"
    assert (f'cipher="{cipher}"' in text) == (preset != "confluent"), text


def test_unknown_preset_is_named() -> None:
    with pytest.raises(ValueError, match="allowed: strimzi, confluent, strimzi_reporter"):
        MetricsEndpointConfig("jolokia")
