"""What a SASL listener's request log holds: Kafka's SaslServerAuthenticator answers ApiVersions, SaslHandshake and
SaslAuthenticate before authentication itself (SaslServerAuthenticator.handleApiVersionsRequest registers the client
information and sends the response without the request channel), so none of them is logged or metered; requests
after authentication, ApiVersions included, go through KafkaApis and are."""

from __future__ import annotations

import json
from pathlib import Path

from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest

from kafka_double import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.mbean_host import MBeanHost
from kafka_double.raw_client import RawConnection


def logged(path: Path) -> list[dict]:
    return [
        json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
        for line in path.read_text().splitlines()
    ]


def test_only_requests_after_authentication_are_logged(mbean_host: MBeanHost, tmp_path: Path) -> None:
    spec = BrokerSpec(1, release="4.1.0", listeners=[ListenerSpec("SASL", "SASL_PLAINTEXT", 0, 1)])
    users = {"alice": "alice-secret"}
    with DoubleCluster([spec], mbean_host=mbean_host, request_log_dir=tmp_path, sasl_users=users) as double:
        with RawConnection(double.broker(1).listener_port("SASL")) as conn:
            conn.request(ApiVersionsRequest(version=3, client_software_name="app", client_software_version="1.0"))
            conn.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"), correlation_id=2)
            reply = conn.request(SaslAuthenticateRequest(version=2, auth_bytes=b"\0alice\0alice-secret"), 3)
            assert SaslAuthenticateResponse.decode(reply, version=2, header=True, framed=True).error_code == 0
            conn.request(ApiVersionsRequest(version=3, client_software_name="app", client_software_version="1.0"), 4)
            conn.request(MetadataRequest(version=12, topics=[]), correlation_id=5)
            double.sync()
            # The pre-authentication ApiVersions registered the client all the same.
            assert double.registry_view(1)[("SASL", 0, "app", "1.0")] == 1
        lines = logged(tmp_path / "broker-1" / "kafka-request.log")
    got = [(x["requestHeader"]["requestApiKeyName"], x["requestHeader"]["correlationId"]) for x in lines]
    assert got == [("API_VERSIONS", 4), ("METADATA", 5)]
    assert {x["principal"] for x in lines} == {"User:alice"}
    assert {x["clientInformation"]["softwareName"] for x in lines} == {"app"}
