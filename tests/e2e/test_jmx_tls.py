"""JMX over TLS against the double's TLS endpoints (as brokers with -Dcom.sun.management.jmxremote.ssl=true): the
right CA reads the same series as plain JMX, mutual TLS, a wrong CA or a host name mismatch is `up` 0 with reason
`tls` naming cluster and broker, and a cluster without TLS in the same exporter is unaffected."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from exporter.snapshot import JmxReading, Snapshot
from harness.ports import free_port
from kafka_double.mbean_host import JmxTls, MBeanHost
from tests.support.tls_material import write_leaf
from tests.support.waiting import SURE_CYCLE

pytestmark = pytest.mark.slow

GAUGE = (
    "kafka.server:type=socket-server-metrics,clientSoftwareName=kcat,clientSoftwareVersion=1.7.1,"
    "listener=PLAINTEXT,networkProcessor={processor}"
)


class Bench:
    def __init__(self, host: MBeanHost, directory: Path) -> None:
        self.directory = directory
        self.ca, self.client_ca, self.other_ca = trustme.CA(), trustme.CA(), trustme.CA()
        for name, ca in (("ca", self.ca), ("client-ca", self.client_ca), ("other-ca", self.other_ca)):
            ca.cert_pem.write_to_path(str(directory / f"{name}.pem"))
        client = write_leaf(self.client_ca, directory, "client", "exporter")
        self.client_cert, self.client_key = client.cert, client.key
        self.write_stores()
        # The double's RMI stubs name 127.0.0.1 (java.rmi.server.hostname): that is the host checked.
        broker = write_leaf(self.ca, directory, "broker", "127.0.0.1")
        elsewhere = write_leaf(self.ca, directory, "elsewhere", "kafka-9.example")
        cert, key = broker.cert, broker.key
        wrong_cert, wrong_key = elsewhere.cert, elsewhere.key
        self.urls = {
            "plain": self.add(host, 1, None),
            "tls": self.add(host, 2, JmxTls(cert, key)),
            "mtls": self.add(host, 3, JmxTls(cert, key, directory / "client-ca.pem")),
            "mismatch": self.add(host, 4, JmxTls(wrong_cert, wrong_key)),
        }
        host.sync()

    def write_stores(self) -> None:
        """The same trust and client key as PKCS12 stores, their passwords in files (as Secrets mount them)."""
        directory = self.directory
        password = b"store-Secret-5"
        (directory / "store-password").write_bytes(password + b"\n")
        encryption = serialization.BestAvailableEncryption(password)
        ca = x509.load_pem_x509_certificate(self.ca.cert_pem.bytes())
        trust = pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(ca, b"ca")], encryption)
        (directory / "trust.p12").write_bytes(trust)
        key = serialization.load_pem_private_key(self.client_key.read_bytes(), None)
        cert = x509.load_pem_x509_certificate(self.client_cert.read_bytes())
        keys = pkcs12.serialize_key_and_certificates(b"client", key, cert, None, encryption)  # type: ignore[arg-type]
        (directory / "client.p12").write_bytes(keys)

    @staticmethod
    def add(host: MBeanHost, broker_id: int, tls: JmxTls | None) -> str:
        url = host.add_broker(broker_id, free_port(), tls=tls)
        host.set(broker_id, GAUGE.format(processor=0), "connections", 2)
        host.set(broker_id, GAUGE.format(processor=1), "connections", 3)
        host.set(broker_id, GAUGE.format(processor=2), "connections", 0)
        return url

    def cluster(self, name: str, endpoint: str, **tls: object) -> dict:
        jmx = {"tls": {"ca_file": str(self.directory / "ca.pem")} | tls}
        return {"name": name, "jmx": jmx, "brokers": [{"id": 1, "jmx_url": self.urls[endpoint]}]}


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    with MBeanHost() as host:
        yield Bench(host, tmp_path_factory.mktemp("jmx-tls"))


def collect(clusters: list[dict]) -> Snapshot:
    loop = CollectionLoop(Settings(clusters=clusters, collection=SURE_CYCLE))
    try:
        return asyncio.run(loop.run_cycle())
    finally:
        loop.close()


def outcome(snapshot: Snapshot) -> dict[str, tuple[str | None, str | None]]:
    return {r.key.cluster: (r.error_reason, r.error_message) for r in snapshot.results}


def reading(snapshot: Snapshot, cluster: str) -> JmxReading:
    [found] = [r.reading for r in snapshot.results if r.key.cluster == cluster]
    assert isinstance(found, JmxReading) and found.clients
    return found


def test_tls_and_mutual_tls_read_what_plain_jmx_reads(bench: Bench) -> None:
    plain = {"name": "plain", "brokers": [{"id": 1, "jmx_url": bench.urls["plain"]}]}
    mtls = {"cert_file": str(bench.client_cert), "key_file": str(bench.client_key)}
    snapshot = collect([plain, bench.cluster("tls", "tls"), bench.cluster("mtls", "mtls", **mtls)])
    assert outcome(snapshot) == {"plain": (None, None), "tls": (None, None), "mtls": (None, None)}
    assert reading(snapshot, "tls") == reading(snapshot, "plain") == reading(snapshot, "mtls")


def test_a_wrong_ca_is_a_tls_error_naming_cluster_and_broker_and_spares_the_others(bench: Bench) -> None:
    wrong = bench.cluster("wrong-ca", "tls", ca_file=str(bench.directory / "other-ca.pem"))
    no_client_cert = bench.cluster("no-client-cert", "mtls")
    plain = {"name": "plain", "brokers": [{"id": 1, "jmx_url": bench.urls["plain"]}]}
    found = outcome(collect([wrong, no_client_cert, plain, bench.cluster("tls", "tls")]))
    assert found["plain"] == (None, None) and found["tls"] == (None, None)
    for cluster in ("wrong-ca", "no-client-cert"):
        reason, message = found[cluster]
        assert reason == "tls", found[cluster]
        assert message is not None and f"broker 1 of cluster {cluster}" in message
    assert "PKIX" in (found["wrong-ca"][1] or "")


def test_a_host_name_mismatch_fails_unless_host_checking_is_off(bench: Bench) -> None:
    found = outcome(
        collect([bench.cluster("checked", "mismatch"), bench.cluster("unchecked", "mismatch", check_hostname=False)])
    )
    assert found["unchecked"] == (None, None)
    reason, message = found["checked"]
    assert reason == "tls" and message is not None
    assert "broker 1 of cluster checked" in message and "kafka-9.example" in message and "127.0.0.1" in message


def test_trust_and_key_stores_with_password_files(bench: Bench, tmp_path: Path) -> None:
    directory = bench.directory
    stores = {
        "ca_file": None,
        "trust_store": str(directory / "trust.p12"),
        "trust_store_password_file": str(directory / "store-password"),
        "key_store": str(directory / "client.p12"),
        "key_store_password_file": str(directory / "store-password"),
    }
    wrong_password = tmp_path / "wrong-password"
    wrong_password.write_text("not-it\n")
    wrong = stores | {"trust_store_password_file": str(wrong_password)}
    clusters = [bench.cluster("stores", "mtls", **stores), bench.cluster("wrong-password", "tls", **wrong)]
    for cluster in clusters:
        cluster["jmx"]["tls"] = {k: v for k, v in cluster["jmx"]["tls"].items() if v is not None}
    snapshot = collect(clusters)
    found = outcome(snapshot)
    assert found["stores"] == (None, None)
    assert reading(snapshot, "stores").clients
    reason, message = found["wrong-password"]
    assert reason == "tls" and message is not None
    assert "broker 1 of cluster wrong-password" in message and "cannot be used" in message
    assert "not-it" not in message
