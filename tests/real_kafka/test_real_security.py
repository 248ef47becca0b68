"""What a user of the exporter sees of real brokers' security (issue 31, part 3): collection over the real SASL_SSL
listener (SCRAM-SHA-512, the exporter's ``clusters[].security``), an ACL missing, a wrong password; and JMX over TLS
on the real JDK agent (the exporter's ``clusters[].jmx.tls``), trusted and not.

The shared brokers serve SASL_SSL without an authorizer. ACLs and JMX over TLS need a broker of this module's own:
one 4.4.0 node with KRaft's StandardAuthorizer (PLAINTEXT's ANONYMOUS a super user), two SCRAM users, ACLs made
with Kafka's Admin API, and JMX with a password over TLS. One ``collect-once`` over every case at once costs one
exporter start instead of one per case; each test then reads its clusters' part of that one exposition.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    ResourcePattern,
    ResourceType,
)
from kafka.errors import KafkaError

from harness.clients import ClientKind, start_client
from real_kafka import BrokerTls, JmxAuth, JmxTls, KafkaNode, NodeOptions
from tests.real_kafka.conftest import SCRAM_PASSWORD, SCRAM_USER, RealBrokers
from tests.real_kafka.own_brokers import AUTHORIZER, CollectOnce, admin_client, collect_once, own_node

pytestmark = [pytest.mark.real_kafka, pytest.mark.slow]

RELEASE = "4.4.0"
NODE_ID = 440
#: Has DescribeConfigs on the cluster, as docs/configuration.md asks of the exporter's principal.
EXPORTER_USER, EXPORTER_PASSWORD = "kce-exporter", "kce-Exporter-5"
#: Has no ACL at all.
BARE_USER, BARE_PASSWORD = "kce-bare", "kce-Bare-6"
JMX_USER, JMX_PASSWORD = "kce-monitor", "kce-Monitor-8"
SUBSCRIPTION = "kce-security-subscription"
#: The client the TLS JMX read must find on the own broker.
PROBE_NAME, PROBE_VERSION = "jmx-tls-probe", "3.1.4"
PROTOCOL_SOURCES = ("discovery", "api_versions", "client_metrics")


@dataclass(frozen=True)
class Secured:
    node: KafkaNode
    run: CollectOnce


def _sasl(bootstrap: str, user: str, password: str, ca_file: Path) -> dict[str, object]:
    return {
        "bootstrap_servers": [bootstrap],
        "security": {
            "protocol": "SASL_SSL",
            "sasl": {"mechanism": "SCRAM-SHA-512", "username": user, "password": password},
            "tls": {"ca_file": str(ca_file)},
        },
    }


def _jmx(node: KafkaNode, **tls: object) -> dict[str, object]:
    jmx: dict[str, object] = {"username": JMX_USER, "password": JMX_PASSWORD}
    if tls:
        jmx["tls"] = {key: str(value) for key, value in tls.items()}
    return {"brokers": [{"id": node.node_id, "jmx_url": node.jmx_url}], "jmx": jmx}


@pytest.fixture(scope="module")
def secured(real_brokers: RealBrokers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    tls = real_brokers.tls
    options = NodeOptions(
        tls=BrokerTls(tls.broker.cert, tls.broker.key),
        scram_users={EXPORTER_USER: EXPORTER_PASSWORD, BARE_USER: BARE_PASSWORD},
        jmx_auth=JmxAuth(JMX_USER, JMX_PASSWORD),
        jmx_tls=JmxTls(tls.broker.cert, tls.broker.key),
        extra_properties=AUTHORIZER,
    )
    directory = tmp_path_factory.mktemp("real-kafka-security")
    with own_node(directory / "broker", RELEASE, NODE_ID, options) as node:
        with admin_client(node.bootstrap()) as admin:
            cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", ACLResourcePatternType.LITERAL)
            allow = ACL(f"User:{EXPORTER_USER}", "*", ACLOperation.DESCRIBE_CONFIGS, ACLPermissionType.ALLOW, cluster)
            created = admin.create_acls([allow])
            assert created["failed"] == [], created
            # A subscription, so that the allowed user's read goes on to DescribeConfigs of CLIENT_METRICS.
            subscription = ConfigResource(
                ConfigResourceType.CLIENT_METRICS,
                SUBSCRIPTION,
                {
                    "metrics": (AlterConfigOp.SET, "org.apache.kafka.producer."),
                    "interval.ms": (AlterConfigOp.SET, "60000"),
                },
            )
            admin.alter_configs([subscription], raise_on_unknown=False, incremental=True)
        sasl_ssl, ca, foreign = node.bootstrap("SASL_SSL"), tls.ca_file, tls.foreign_ca_file
        for user, password in ((EXPORTER_USER, EXPORTER_PASSWORD), (BARE_USER, BARE_PASSWORD)):
            _wait_until_accepted(sasl_ssl, user, password, ca)
        clusters = [
            *(
                {
                    "name": f"shared-{release}",
                    **_sasl(real_brokers.node(release).bootstrap("SASL_SSL"), SCRAM_USER, SCRAM_PASSWORD, ca),
                }
                for release in real_brokers.clusters
            ),
            {"name": "allowed", **_sasl(sasl_ssl, EXPORTER_USER, EXPORTER_PASSWORD, ca), **_jmx(node, ca_file=ca)},
            {"name": "no-acl", **_sasl(sasl_ssl, BARE_USER, BARE_PASSWORD, ca)},
            {"name": "wrong-password", **_sasl(sasl_ssl, EXPORTER_USER, "not-" + EXPORTER_PASSWORD, ca)},
            {"name": "jmx-untrusted", **_jmx(node, ca_file=foreign)},
            {"name": "jmx-without-tls", **_jmx(node)},
        ]
        probe = start_client(
            ClientKind.KCAT, node.bootstrap(), software_name=PROBE_NAME, software_version=PROBE_VERSION
        )
        with probe:
            probe.wait_ready()
            # One cycle starts a bridge JVM per JMX TLS configuration (three at once): beside a loaded suite one of
            # them took over 6 s to start and connect, and the refused handshake read as a timeout. The JMX deadline
            # bounds a hang, not the answer: every JMX outcome here is an immediate one.
            # The protocol deadline too bounds a hang: beside the loaded suite (CI at bc3d312) both users of this
            # broker failed their discovery within 6 s while the wrong password got its answer. Only the wrong
            # password waits for it (kafka-python retries a refused SCRAM exchange until its bootstrap deadline).
            run = collect_once(
                directory, clusters, interval_seconds=60, protocol_timeout_seconds=15, jmx_timeout_seconds=45
            )
        yield Secured(node, run)


def _wait_until_accepted(bootstrap: str, user: str, password: str, ca_file: Path) -> None:
    """Until the broker accepts ``user``'s SCRAM exchange: kafka-python's bootstrap retries a refused one for 30 s,
    so a broker that has not applied the users formatted into its metadata yet is waited for, not blamed."""
    config = {"sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": user, "sasl_plain_password": password}
    try:
        with admin_client(bootstrap, security_protocol="SASL_SSL", ssl_cafile=str(ca_file), **config) as admin:
            admin.describe_cluster()
    except KafkaError as error:
        raise AssertionError(f"the broker never accepted SCRAM user {user!r} at {bootstrap}: {error}") from None


def _log(run: CollectOnce, cluster: str) -> str:
    """The run's log lines about ``cluster``: what an assertion on it shows."""
    return "\n".join(line for line in run.stderr.splitlines() if f"{cluster}/" in line or "level=error" in line)


def _up(run: CollectOnce, cluster: str, source: str, broker: str) -> float | None:
    return run.value("kafka_client_exporter_up", broker=broker, kafka_cluster=cluster, source=source)


def _errors(run: CollectOnce, cluster: str, source: str, broker: str) -> dict[str, float]:
    """errors_total of one source by reason."""
    return {
        dict(labels)["reason"]: value
        for (name, labels), value in run.series.items()
        if name == "kafka_client_exporter_errors_total"
        and {"kafka_cluster": cluster, "source": source, "broker": broker}.items() <= dict(labels).items()
    }


def _broker(source: str, node_id: int) -> str:
    return str(node_id) if source == "api_versions" else "bootstrap"


@pytest.mark.parametrize("release", ["3.9.2", "4.4.0"])
def test_collection_over_the_real_sasl_ssl_listener(secured: Secured, real_brokers: RealBrokers, release: str) -> None:
    node_id = real_brokers.node(release).node_id
    cluster = f"shared-{release}"
    for source in PROTOCOL_SOURCES:
        assert _up(secured.run, cluster, source, _broker(source, node_id)) == 1, (source, _log(secured.run, cluster))
    info = secured.run.value(
        "kafka_broker_release_info",
        broker=str(node_id),
        host="127.0.0.1",
        inferred_release={"3.9.2": "3.9.0", "4.4.0": "4.4.0"}[release],
        kafka_cluster=cluster,
    )
    assert info == 1, secured.run.stdout


def test_the_principal_with_the_acl_reads_everything_and_the_subscription(secured: Secured) -> None:
    run = secured.run
    for source in PROTOCOL_SOURCES:
        assert _up(run, "allowed", source, _broker(source, NODE_ID)) == 1, (source, _log(run, "allowed"))
    assert (
        run.value(
            "kafka_client_metrics_subscription_info", interval_ms="60000", kafka_cluster="allowed", name=SUBSCRIPTION
        )
        == 1
    )


def test_a_principal_without_describe_configs_gets_authorization_on_client_metrics_only(secured: Secured) -> None:
    run = secured.run
    assert _up(run, "no-acl", "client_metrics", "bootstrap") == 0, _log(run, "no-acl")
    assert _errors(run, "no-acl", "client_metrics", "bootstrap") == {"authorization": 1}
    # Metadata and ApiVersions need no ACL: everything else is collected.
    assert _up(run, "no-acl", "discovery", "bootstrap") == 1
    assert _up(run, "no-acl", "api_versions", str(NODE_ID)) == 1
    assert "no-acl/bootstrap (client_metrics): ListConfigResources denied (CLUSTER_AUTHORIZATION_FAILED)" in run.stderr
    assert "--operation DescribeConfigs --cluster" in run.stderr


def test_a_wrong_password_is_an_authentication_error(secured: Secured) -> None:
    run = secured.run
    assert _up(run, "wrong-password", "discovery", "bootstrap") == 0
    assert _errors(run, "wrong-password", "discovery", "bootstrap") == {"authentication": 1}, _log(
        run, "wrong-password"
    )
    assert f"wrong-password/bootstrap (discovery): bootstrap {secured.node.bootstrap('SASL_SSL')}" in run.stderr
    for secret in ("not-" + EXPORTER_PASSWORD, EXPORTER_PASSWORD, BARE_PASSWORD, SCRAM_PASSWORD, JMX_PASSWORD):
        assert secret not in run.stdout + run.stderr


def test_jmx_over_tls_with_the_ca_reads_the_clients(secured: Secured) -> None:
    run = secured.run
    assert _up(run, "allowed", "jmx", str(NODE_ID)) == 1, _log(run, "allowed")
    connections = {
        dict(labels)["listener"]: value
        for (name, labels), value in run.series.items()
        if name == "kafka_client_connections"
        and dict(labels)["kafka_cluster"] == "allowed"
        and dict(labels)["client_software_name"] == PROBE_NAME
    }
    assert connections.keys() == {"PLAINTEXT"} and connections["PLAINTEXT"] >= 1, run.stdout


def test_jmx_over_tls_without_the_ca_is_a_tls_error(secured: Secured) -> None:
    run = secured.run
    assert _up(run, "jmx-untrusted", "jmx", str(NODE_ID)) == 0
    assert _errors(run, "jmx-untrusted", "jmx", str(NODE_ID)) == {"tls": 1}, _log(run, "jmx-untrusted")
    assert f"jmx-untrusted/{NODE_ID} (jmx)" in run.stderr


def test_jmx_without_a_tls_section_against_a_tls_agent_fails(secured: Secured) -> None:
    run = secured.run
    assert _up(run, "jmx-without-tls", "jmx", str(NODE_ID)) == 0
    assert _errors(run, "jmx-without-tls", "jmx", str(NODE_ID)) == {"tls": 1}, _log(run, "jmx-without-tls")
