"""The double's SSL, SASL_SSL and mutual-TLS listeners: spec checks, the per-cipher `connections` gauge Kafka's
Selector keeps (cipher and protocol as JSSE names them), the certificate principal of an mTLS client (what the
broker authorizes: DESCRIBE_CONFIGS on CLUSTER denied to it), and real clients (kcat, kafka-python, Kafka's Java
client) connecting over TLS."""

from __future__ import annotations

import functools
import logging
import socket
import ssl
import subprocess
from collections.abc import Iterator

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from kafka.protocol.admin import ListConfigResourcesRequest, ListConfigResourcesResponse
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import ApiVersionsRequest

from harness.clients import ClientError, ClientKind, expected_identity, missing_reason, start_client
from kafka_double import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.mbean_host import MBeanHost
from kafka_double.registry import SOCKET_SERVER
from kafka_double.specs import ListenerTls
from kafka_double.tls import jsse_cipher_name, rfc2253_name
from tests.support.tls_material import BrokerTlsMaterial
from tests.support.waiting import wait_for

SASL_USERS = {"alice": "alice-Secret-1"}
ALL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> BrokerTlsMaterial:
    return BrokerTlsMaterial(tmp_path_factory.mktemp("listener-tls"))


def tls_listeners(m: BrokerTlsMaterial) -> list[ListenerSpec]:
    return [
        ListenerSpec("SSL", "SSL", 0, 2, tls=ListenerTls(m.broker.cert, m.broker.key)),
        ListenerSpec("MTLS", "SSL", 0, 1, tls=ListenerTls(m.broker.cert, m.broker.key, m.ca_file)),
        ListenerSpec(
            "SASL_SSL", "SASL_SSL", 0, 1, sasl_mechanisms=ALL_MECHANISMS, tls=ListenerTls(m.broker.cert, m.broker.key)
        ),
        ListenerSpec("TLS12", "SSL", 0, 1, tls=ListenerTls(m.broker.cert, m.broker.key, max_version="TLSv1.2")),
    ]


@pytest.fixture(scope="module")
def double(material: BrokerTlsMaterial, mbean_host: MBeanHost) -> Iterator[DoubleCluster]:
    spec = BrokerSpec(1, listeners=tls_listeners(material))
    with DoubleCluster([spec], mbean_host=mbean_host, sasl_users=SASL_USERS) as cluster:
        yield cluster


def cipher_beans(double: DoubleCluster, listener: str) -> dict[str, int]:
    """The `connections` value of every per-cipher MBean of one listener, by object name (Kafka's Selector)."""
    double.sync()
    host = double._jmx
    assert host is not None
    return {
        name: int(value)
        for name, attribute, value in host.dump(1)
        if attribute == "connections"
        and name.startswith(f"{SOCKET_SERVER},cipher=")
        and f",listener={listener}," in name
    }


def tls_socket(double: DoubleCluster, listener: str, context: ssl.SSLContext) -> ssl.SSLSocket:
    port = double.broker(1).listener_port(listener)
    return context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5), server_hostname="127.0.0.1")


def exchange(sock: ssl.SSLSocket, request: ApiMessage, correlation_id: int) -> bytes:
    """Send one request and return its whole response frame (size prefix included)."""
    request.with_header(correlation_id=correlation_id, client_id="probe")
    sock.sendall(bytes(request.encode(header=True, framed=True)))
    frame = b""
    while len(frame) < 4:
        frame += sock.recv(4 - len(frame))
    size = int.from_bytes(frame[:4], "big")
    while len(frame) < 4 + size:
        frame += sock.recv(4 + size - len(frame))
    return frame


def request_api_versions(sock: ssl.SSLSocket) -> None:
    exchange(sock, ApiVersionsRequest(version=3, client_software_name="tls-probe", client_software_version="1.0"), 1)


def denied_as(double: DoubleCluster, sock: ssl.SSLSocket, principal: str) -> bool:
    """Whether this connection's principal is ``principal``: ListConfigResources (key 74) fails with
    CLUSTER_AUTHORIZATION_FAILED (31) once DESCRIBE_CONFIGS on CLUSTER is denied to that principal, as Kafka's
    authorizer decides on the connection's principal (docs/kafka-facts/jmx-mbeans.md#tls-principal)."""
    double.configs.deny_describe_configs(principal)
    try:
        reply = exchange(sock, ListConfigResourcesRequest(version=0), 74)
    finally:
        double.configs.deny_describe_configs(principal, denied=False)
    return bool(ListConfigResourcesResponse.decode(reply, version=0, header=True, framed=True).error_code == 31)


# ------------------------------------------------------------------------------------------ specs (no sockets)


def test_tls_protocols_need_key_material_and_plain_ones_refuse_it(
    material: BrokerTlsMaterial, mbean_host: MBeanHost
) -> None:
    tls = ListenerTls(material.broker.cert, material.broker.key)
    with pytest.raises(ValueError, match="listener SECURE: security_protocol SASL_SSL needs tls"):
        ListenerSpec("SECURE", "SASL_SSL")
    with pytest.raises(ValueError, match="tls is given but security_protocol is PLAINTEXT"):
        ListenerSpec("PLAIN", "PLAINTEXT", tls=tls)
    with pytest.raises(ValueError, match=r"client_ca_file .*missing\.pem does not exist"):
        ListenerTls(material.broker.cert, material.broker.key, material.directory / "missing.pem")
    with pytest.raises(ValueError, match=r"max_version 'TLSv1\.1'"):
        ListenerTls(material.broker.cert, material.broker.key, max_version="TLSv1.1")
    with pytest.raises(ValueError, match="cannot load the listener's TLS material"):
        # A CA certificate without its key cannot serve a listener: refused before anything listens.
        unusable = ListenerTls(material.ca_file, material.ca_file)
        DoubleCluster(
            [BrokerSpec(9, listeners=[ListenerSpec("SSL", "SSL", tls=unusable)])], mbean_host=mbean_host
        ).start()


def test_cipher_names_are_jsses_and_dns_are_x500principal_rfc2253() -> None:
    # JSSE's SSLSession.getCipherSuite() gives the IANA names.
    assert jsse_cipher_name("ECDHE-RSA-AES256-GCM-SHA384") == "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
    assert jsse_cipher_name("ECDHE-ECDSA-CHACHA20-POLY1305") == "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
    assert jsse_cipher_name("TLS_AES_128_GCM_SHA256") == "TLS_AES_128_GCM_SHA256"
    with pytest.raises(RuntimeError, match="no standard"):
        jsse_cipher_name("NOT-A-CIPHER")
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme, Inc."),
            x509.NameAttribute(NameOID.COMMON_NAME, "#billing+app "),
        ]
    )
    # Most specific RDN first; ',' '+' escaped, a leading '#' and a trailing space escaped (RFC 2253 2.4).
    assert rfc2253_name(name) == "CN=\\#billing\\+app\\ ,O=Acme\\, Inc.,C=DE"
    with pytest.raises(ValueError, match=r"1\.2\.840\.113549\.1\.9\.1 has no RFC 2253 keyword"):
        rfc2253_name(x509.Name([x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@example.com")]))


# ------------------------------------------------------------------------------------------ raw TLS connections


def test_mtls_connection_counts_its_cipher_and_has_the_certificate_principal(
    double: DoubleCluster, material: BrokerTlsMaterial
) -> None:
    context = ssl.create_default_context(cafile=str(material.ca_file))
    context.load_cert_chain(str(material.client.cert), str(material.client.key))
    with tls_socket(double, "MTLS", context) as sock:
        assert sock.version() == "TLSv1.3"
        negotiated = sock.cipher()
        assert negotiated is not None
        request_api_versions(sock)
        beans = cipher_beans(double, "MTLS")
        # One processor (id 2: after SSL's 0 and 1): the cipher this client negotiated, as Kafka tags it.
        name = f"{SOCKET_SERVER},cipher={negotiated[0]},protocol=TLSv1.3,listener=MTLS,networkProcessor=2"
        assert beans == {name: 1}
        assert denied_as(double, sock, material.client_identity.principal)
        assert not denied_as(double, sock, "User:ANONYMOUS")
    wait_for(lambda: cipher_beans(double, "MTLS") == {name: 0}, what="the cipher gauge back at 0 (it lingers)")


def test_a_tls_1_2_connection_is_tagged_with_the_iana_cipher_name(
    double: DoubleCluster, material: BrokerTlsMaterial
) -> None:
    context = ssl.create_default_context(cafile=str(material.ca_file))
    context.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")  # trustme's keys are ECDSA
    with tls_socket(double, "TLS12", context) as sock:
        request_api_versions(sock)
        assert cipher_beans(double, "TLS12") == {
            f"{SOCKET_SERVER},cipher=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,protocol=TLSv1.2,listener=TLS12,"
            "networkProcessor=4": 1
        }
        # Without a client certificate the principal is ANONYMOUS.
        assert denied_as(double, sock, "User:ANONYMOUS")


def test_mtls_listener_refuses_a_client_without_certificate_with_an_alert(
    double: DoubleCluster, material: BrokerTlsMaterial, caplog: pytest.LogCaptureFixture
) -> None:
    context = ssl.create_default_context(cafile=str(material.ca_file))
    before = cipher_beans(double, "MTLS")
    with caplog.at_level(logging.INFO, logger="kafka_double"):
        # TLS 1.3: the client's side of the handshake completes before the broker checks the (missing)
        # certificate; the broker's refusal arrives as an alert, as JSSE sends it, not as a bare disconnect.
        with tls_socket(double, "MTLS", context) as sock, pytest.raises(ssl.SSLError, match="CERTIFICATE_REQUIRED"):
            sock.recv(1)
        # Selector's INFO line for a failed handshake (docs/kafka-facts/jmx-mbeans.md#tls-cipher-gauge).
        wait_for(lambda: "(SSL handshake failed)" in caplog.text, what="the failed handshake logged")
    assert "broker 1: Failed authentication with /127.0.0.1 (channelId=127.0.0.1:" in caplog.text
    # No cipher is counted for a failed handshake, and the connection (counted from accept) is released.
    assert cipher_beans(double, "MTLS") == before
    assert double.registry_view(1)[("MTLS", 2, "unknown", "unknown")] == 0


# ------------------------------------------------------------------------------------------ real clients


def skip_if_missing(kind: ClientKind) -> None:
    reason = missing_reason(kind)
    if reason is not None:
        pytest.skip(reason)


def registered(double: DoubleCluster, listener: str, kind: ClientKind) -> bool:
    identity = expected_identity(kind)
    return any(
        key[0] == listener and key[2:] == (identity.software_name, identity.software_version) and count >= 1
        for key, count in double.registry_view(1).items()
    )


def live_cipher(double: DoubleCluster, listener: str) -> set[tuple[str, str]]:
    """(cipher, protocol) of the listener's live per-cipher gauges."""
    found = set()
    for name, count in cipher_beans(double, listener).items():
        if count:
            tags = dict(part.split("=", 1) for part in name.split(",")[1:])
            found.add((tags["cipher"], tags["protocol"]))
    return found


KCAT_TLS = {
    "SSL": {"security.protocol": "SSL"},
    "MTLS": {"security.protocol": "SSL", "ssl.certificate.location": "client.pem", "ssl.key.location": "client.key"},
    "SASL_SSL": {
        "security.protocol": "SASL_SSL",
        # PLAIN: kcat's SCRAM fails against 4.x brokers (docs/kafka-facts/protocol.md#scram-nonce), see below.
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": SASL_USERS["alice"],
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("listener", sorted(KCAT_TLS))
def test_kcat_over_tls_is_counted_by_identity_and_cipher(
    double: DoubleCluster, material: BrokerTlsMaterial, listener: str
) -> None:
    skip_if_missing(ClientKind.KCAT)
    properties = {"ssl.ca.location": str(material.ca_file)}
    for key, value in KCAT_TLS[listener].items():
        properties[key] = str(material.directory / value) if key.endswith(".location") else value
    with start_client(ClientKind.KCAT, double.bootstrap(listener), properties=properties) as client:
        client.wait_ready()
        wait_for(lambda: registered(double, listener, ClientKind.KCAT), what=f"kcat registered on {listener}")
        # librdkafka with OpenSSL 3 negotiates TLS 1.3; the gauge names what the handshake chose.
        assert live_cipher(double, listener) == {("TLS_AES_256_GCM_SHA384", "TLSv1.3")}


@pytest.mark.slow
def test_kafka_python_over_sasl_ssl_and_tls_1_2(double: DoubleCluster, material: BrokerTlsMaterial) -> None:
    skip_if_missing(ClientKind.KAFKA_PYTHON)
    common = {"ssl_cafile": str(material.ca_file)}
    sasl = common | {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "alice",
        "sasl_plain_password": SASL_USERS["alice"],
    }
    with (
        start_client(ClientKind.KAFKA_PYTHON, double.bootstrap("SASL_SSL"), properties=sasl) as over_sasl,
        start_client(
            ClientKind.KAFKA_PYTHON, double.bootstrap("TLS12"), properties=common | {"security_protocol": "SSL"}
        ) as over_tls12,
    ):
        over_sasl.wait_ready()
        over_tls12.wait_ready()
        wait_for(lambda: registered(double, "SASL_SSL", ClientKind.KAFKA_PYTHON), what="registered on SASL_SSL")
        wait_for(lambda: registered(double, "TLS12", ClientKind.KAFKA_PYTHON), what="registered on TLS12")
        assert {protocol for _cipher, protocol in live_cipher(double, "SASL_SSL")} == {"TLSv1.3"}
        [(cipher, protocol)] = live_cipher(double, "TLS12")
        # Python's ssl prefers AES-256-GCM with ECDHE; Kafka names it the IANA way.
        assert (cipher, protocol) == ("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLSv1.2")


def kcat_metadata(bootstrap: str, properties: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = ["kcat", "-b", bootstrap, "-L", "-m", "4"]
    for key, value in properties.items():
        argv += ["-X", f"{key}={value}"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.slow
def test_kcats_scram_passes_a_3_9_broker_and_fails_a_4_x_one_as_kafka_does(
    double: DoubleCluster, material: BrokerTlsMaterial, mbean_host: MBeanHost
) -> None:
    """librdkafka < 2.6.1 repeats its nonce in the SCRAM client-final message: 3.9 checks only the suffix,
    4.x the whole nonce (docs/kafka-facts/protocol.md#scram-nonce)."""
    skip_if_missing(ClientKind.KCAT)
    properties = {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(material.ca_file),
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": SASL_USERS["alice"],
    }
    tls = ListenerTls(material.broker.cert, material.broker.key)
    listener = ListenerSpec("SASL_SSL", "SASL_SSL", 0, 1, sasl_mechanisms=ALL_MECHANISMS, tls=tls)
    with DoubleCluster([BrokerSpec(5, "3.9.0", [listener])], mbean_host=mbean_host, sasl_users=SASL_USERS) as old:
        accepted = kcat_metadata(old.bootstrap("SASL_SSL"), properties)
    assert accepted.returncode == 0 and "1 brokers:" in accepted.stdout, accepted.stderr
    refused = kcat_metadata(double.bootstrap("SASL_SSL"), properties)
    assert refused.returncode != 0
    assert "SASL authentication error: Authentication failed: Invalid nonce" in refused.stderr


@pytest.mark.slow
def test_the_java_client_over_ssl_mtls_and_sasl_ssl(double: DoubleCluster, material: BrokerTlsMaterial) -> None:
    """Kafka's own client (kafka-clients 4.3.0, JSSE) handshakes with the double's listeners: PEM trust and key
    stores, mutual TLS, SCRAM-SHA-512 over TLS."""
    skip_if_missing(ClientKind.JAVA)
    # Kafka's PEM key store reads an unencrypted PKCS#8 key and its chain from one file.
    key_store = material.directory / "client-keystore.pem"
    key_store.write_bytes(material.client.key.read_bytes() + material.client.cert.read_bytes())
    trust = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(material.ca_file)}
    scram = (
        f'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
        f'password="{SASL_USERS["alice"]}";'
    )
    settings = {
        "SSL": {"security.protocol": "SSL", **trust},
        "MTLS": {
            "security.protocol": "SSL",
            **trust,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(key_store),
        },
        "SASL_SSL": {
            "security.protocol": "SASL_SSL",
            **trust,
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": scram,
        },
    }
    # Four JVMs start at once: on a loaded machine each takes its time to reach its first handshake, which the
    # clients' own deadline (bootstrap_timeout) counts. The refused one fails at that handshake, not at its deadline:
    # with 5 s it once timed out first (a CI run on a loaded machine), which says nothing about the handshake.
    clients = [
        start_client(ClientKind.JAVA, double.bootstrap(name), bootstrap_timeout=60, properties=props)
        for name, props in settings.items()
    ]
    # Without a key store on the mTLS listener: the alert after the TLS 1.3 handshake, as Kafka's client reports it.
    refused = start_client(ClientKind.JAVA, double.bootstrap("MTLS"), bootstrap_timeout=60, properties=settings["SSL"])
    with refused, pytest.raises(ClientError, match="SslAuthenticationException: Failed to process post-handshake"):
        refused.wait_ready(timeout=90)
    try:
        for client in clients:  # the JVMs started in parallel
            client.wait_ready(timeout=90)
        for listener in settings:
            java_registered = functools.partial(registered, double, listener, ClientKind.JAVA)
            wait_for(java_registered, what=f"Java client on {listener}")
            assert {protocol for _cipher, protocol in live_cipher(double, listener)} == {"TLSv1.3"}, listener
    finally:
        for client in clients:
            client.close()
