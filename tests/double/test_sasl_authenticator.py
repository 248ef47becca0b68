"""What a SASL listener does before authentication: Kafka's SaslServerAuthenticator answers ApiVersions, SaslHandshake
and SaslAuthenticate itself (SaslServerAuthenticator.handleApiVersionsRequest registers the client information and
sends the response without the request channel), so the connection is counted under the client's name from its
first ApiVersions on, the requests after authentication run as the SASL user, and only those reach the request
channel (the real brokers' request logs show it: tests/real_kafka/test_real_inventory.py finds SCRAM clients on
SASL_SSL by their Metadata lines)."""

from __future__ import annotations

from kafka.protocol.admin import ListConfigResourcesRequest, ListConfigResourcesResponse
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest, MetadataResponse
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest

from harness.raw_client import RawConnection
from kafka_double import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.mbean_host import MBeanHost


def test_the_pre_authentication_api_versions_registers_the_client(mbean_host: MBeanHost) -> None:
    spec = BrokerSpec(1, release="4.1.0", listeners=[ListenerSpec("SASL", "SASL_PLAINTEXT", 0, 1)])
    users = {"alice": "alice-secret"}
    with (
        DoubleCluster([spec], mbean_host=mbean_host, sasl_users=users) as double,
        RawConnection(double.broker(1).listener_port("SASL")) as conn,
    ):
        conn.request(ApiVersionsRequest(version=3, client_software_name="app", client_software_version="1.0"))
        double.sync()
        assert double.registry_view(1)[("SASL", 0, "app", "1.0")] == 1
        conn.request(SaslHandshakeRequest(version=1, mechanism="PLAIN"), correlation_id=2)
        reply = conn.request(SaslAuthenticateRequest(version=2, auth_bytes=b"\0alice\0alice-secret"), 3)
        assert SaslAuthenticateResponse.decode(reply, version=2, header=True, framed=True).error_code == 0
        conn.request(ApiVersionsRequest(version=3, client_software_name="app", client_software_version="1.0"), 4)
        reply = conn.request(MetadataRequest(version=12, topics=[]), correlation_id=5)
        assert MetadataResponse.decode(reply, version=12, header=True, framed=True).brokers
        double.sync()
        # One connection, one name: the second ApiVersions registers the same client again.
        assert double.registry_view(1)[("SASL", 0, "app", "1.0")] == 1
        # The requests after the exchange run as the SASL user: DESCRIBE_CONFIGS denied to User:alice (and only to
        # it) fails ListConfigResources with CLUSTER_AUTHORIZATION_FAILED (31).
        for principal, error in (("User:alice", 31), ("User:ANONYMOUS", 0)):
            double.configs.deny_describe_configs(principal)
            reply = conn.request(ListConfigResourcesRequest(version=0), correlation_id=6)
            double.configs.deny_describe_configs(principal, denied=False)
            assert ListConfigResourcesResponse.decode(reply, version=0, header=True, framed=True).error_code == error
