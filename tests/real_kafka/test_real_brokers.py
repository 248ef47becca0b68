"""What a user of the exporter sees of real Kafka brokers (3.9.2 and 4.4.0, one-node KRaft clusters shared by the
whole module, see conftest.py): each client under its broker and listener with the name and version the broker
records, gone within a cycle of its disconnect; the brokers' own connections and the exporter's own; each broker's
release as inferred from its real ApiVersions answer; remote JMX with a password, right and wrong.

One module on purpose: scripts/test.sh keeps a module on one xdist worker (--dist loadscope), so the two brokers and
the exporter start once, not once per worker that got a piece of them.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from exporter import __version__
from harness.clients import ClientKind, start_client
from harness.exporter_process import checkout_env
from real_kafka import KRAFT_RELEASES
from real_kafka.readiness import PROBE_SOFTWARE_NAME
from tests.real_kafka.conftest import (
    INTERVAL_SECONDS,
    JMX_PASSWORD,
    JMX_USER,
    RealBrokers,
    api_clients,
    exporter_config,
    get,
    samples,
    scrape,
)
from tests.support.status_page import tables_of
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.real_kafka, pytest.mark.slow]

#: What the exporter infers (docs/metrics.md, "Broker release inference"): a lower bound, the oldest release whose specs
#: match. 3.9.2 advertises the same ranges as 3.9.0, so it shows as 3.9.0; 4.4.0 is the first release with
#: ApiVersions v5 and API keys up to 94, so it shows as itself.
INFERRED = {"3.9.2": "3.9.0", "4.4.0": "4.4.0"}


def connections(base: str, **match: str) -> dict[tuple[str, str, str, str], float]:
    """kafka_client_connections from /metrics as {(broker, listener, name, version): connections}."""
    out = {}
    for labels, value in samples(scrape(base), "kafka_client_connections", **match).items():
        found = dict(labels)
        key = (found["broker"], found["listener"], found["client_software_name"], found["client_software_version"])
        out[key] = value
    return out


def recorded_identities(brokers: RealBrokers, release: str) -> set[tuple[str, str]]:
    """(name, version) pairs the broker itself wrote in its request log for ApiVersions requests, rolled files
    included (the shared brokers roll their request logs at 1 MiB)."""
    identities = set()
    for body in brokers.request_log(release):
        if body["requestHeader"]["requestApiKey"] == 18 and body["requestHeader"]["requestApiVersion"] >= 3:
            identities.add((body["request"]["clientSoftwareName"], body["request"]["clientSoftwareVersion"]))
    return identities


@pytest.mark.parametrize("release", KRAFT_RELEASES)
def test_kcat_appears_as_the_broker_records_it_and_goes_within_a_cycle(
    real_brokers: RealBrokers, exporter: str, release: str
) -> None:
    node = real_brokers.node(release)
    name, version = f"kcat-on-{release}", "1.4.2-rc1"
    kcat = start_client(ClientKind.KCAT, node.bootstrap(), software_name=name, software_version=version)
    with kcat:
        kcat.wait_ready()
        # One scrape shows both: the next may come from a cycle whose JMX read of a loaded machine's broker failed.
        wait_for(
            lambda: (
                (seen := connections(exporter, client_software_name=name)).keys()
                == {(str(node.node_id), "PLAINTEXT", name, version)}
                and min(seen.values()) >= 1
            ),
            timeout=60,  # a wait for what must appear: it ends on the condition
            what=f"{name} {version} on broker {node.node_id}'s PLAINTEXT listener in /metrics, at least 1",
        )
        assert (name, version) in recorded_identities(real_brokers, release)
        clients = api_clients(exporter)["clusters"][real_brokers.cluster_name(release)]["clients"]
        assert [(c["software_version"], c["connections"] >= 1) for c in clients if c["software_name"] == name] == [
            (version, True)
        ]
    closed = time.monotonic()
    # Kafka keeps the gauge at 0; the exporter drops it at its next cycle.
    wait_for(
        lambda: not connections(exporter, client_software_name=name),
        timeout=15,
        what=f"{name} gone from /metrics",
        interval=0.1,
    )
    assert time.monotonic() - closed <= 2 * INTERVAL_SECONDS + 1.5, "gone later than the cycle after the disconnect"
    clients = api_clients(exporter)["clusters"][real_brokers.cluster_name(release)]["clients"]
    assert name not in {c["software_name"] for c in clients}


@pytest.mark.parametrize(
    ("release", "kind"),
    [
        ("3.9.2", ClientKind.KCAT),
        # kcat's librdkafka 2.0.2 repeats its nonce in SCRAM's final message, which 4.x brokers refuse (RFC 5802's
        # exact check, restored by CVE-2024-56128's fix; librdkafka fixed it in 2.6.1): confluent-kafka's newer
        # librdkafka signs in.
        ("4.4.0", ClientKind.CONFLUENT),
    ],
)
def test_client_on_the_sasl_ssl_listener_appears_under_it(
    real_brokers: RealBrokers, exporter: str, release: str, kind: ClientKind
) -> None:
    node = real_brokers.node(release)
    properties = real_brokers.sasl_ssl_properties()
    if kind is ClientKind.KCAT:
        client = start_client(
            kind,
            node.bootstrap("SASL_SSL"),
            software_name=f"scram-on-{release}",
            software_version="2.0.1",
            properties=properties,
        )
    else:
        client = start_client(kind, node.bootstrap("SASL_SSL"), properties=properties)
    with client:
        client.wait_ready()
        name, version = client.expected.software_name, client.expected.software_version
        wait_for(
            lambda: (
                (str(node.node_id), "SASL_SSL", name, version)
                in connections(exporter, client_software_name=name, listener="SASL_SSL")
            ),
            timeout=60,  # a wait for what must appear: it ends on the condition
            what=f"{name} {version} under SASL_SSL on broker {node.node_id}",
        )


@pytest.mark.parametrize("release", KRAFT_RELEASES)
def test_brokers_own_connections_and_the_exporters(real_brokers: RealBrokers, exporter: str, release: str) -> None:
    node = real_brokers.node(release)
    broker = str(node.node_id)
    seen = connections(exporter, broker=broker)
    # The broker's clients of its own controller (registration and heartbeats, forwarding, ...) are Kafka's Java
    # client at the broker's own release, on the CONTROLLER listener.
    own = {key: value for key, value in seen.items() if key[1] == "CONTROLLER"}
    assert set(own) == {(broker, "CONTROLLER", "apache-kafka-java", release)}
    assert own[(broker, "CONTROLLER", "apache-kafka-java", release)] >= 1
    # The exporter's own Kafka-protocol connection (discovery, ApiVersions) announces the exporter.
    assert seen.get((broker, "PLAINTEXT", "kafka-client-exporter", __version__), 0) >= 1
    # The readiness probe and every connection's first moments (counted as unknown/unknown until ApiVersions) left
    # gauges at 0 behind in the broker: none of them is exported.
    assert not [key for key in seen if key[2] in (PROBE_SOFTWARE_NAME, "unknown")]
    clients = api_clients(exporter)["clusters"][real_brokers.cluster_name(release)]["clients"]
    pairs = {(c["software_name"], c["software_version"]) for c in clients}
    assert {("apache-kafka-java", release), ("kafka-client-exporter", __version__)} <= pairs


def test_release_inferred_from_each_brokers_real_api_versions(real_brokers: RealBrokers, exporter: str) -> None:
    series = scrape(exporter)
    page = tables_of(get(f"{exporter}/"))
    for release in KRAFT_RELEASES:
        node = real_brokers.node(release)
        cluster = real_brokers.cluster_name(release)
        info = samples(series, "kafka_broker_release_info", kafka_cluster=cluster, broker=str(node.node_id))
        assert [dict(labels)["inferred_release"] for labels in info] == [INFERRED[release]], release
        assert [dict(labels)["host"] for labels in info] == ["127.0.0.1"]
        [row] = page[f"brokers-{cluster}"]
        assert (row["broker"], row["release"]) == (str(node.node_id), INFERRED[release])


def test_advertised_api_versions_are_the_brokers_own(real_brokers: RealBrokers, exporter: str) -> None:
    """The ranges on /metrics are what each broker sends: ApiVersions up to v4 on 3.9 and v5 on 4.4, Produce up to
    v11 and v13, from v0 on both (4.x refuses Produce v0-v2 but still advertises v0, KAFKA-18659)."""
    series = scrape(exporter)
    expected = {
        "3.9.2": {"ApiVersions": (0, 4), "Produce": (0, 11)},
        "4.4.0": {"ApiVersions": (0, 5), "Produce": (0, 13)},
    }
    for release in KRAFT_RELEASES:
        match = {"kafka_cluster": real_brokers.cluster_name(release), "broker": str(real_brokers.node(release).node_id)}
        for api, (low, high) in expected[release].items():
            assert list(samples(series, "kafka_broker_api_version_min", api=api, **match).values()) == [low], (
                release,
                api,
            )
            assert list(samples(series, "kafka_broker_api_version_max", api=api, **match).values()) == [high], (
                release,
                api,
            )


def test_jmx_with_the_password_reads_both_brokers(real_brokers: RealBrokers, exporter: str) -> None:
    series = scrape(exporter)
    for release in KRAFT_RELEASES:
        match = {"kafka_cluster": real_brokers.cluster_name(release), "broker": str(real_brokers.node(release).node_id)}
        assert list(samples(series, "kafka_client_exporter_up", source="jmx", **match).values()) == [1], release


def test_wrong_jmx_password_is_an_authentication_error(real_brokers: RealBrokers, tmp_path: Path) -> None:
    wrong = "not-" + JMX_PASSWORD
    # One cycle, so the interval only bounds the deadline. A new bridge's JVM start and JMX handshake beside three
    # busy workers took longer than the suite's one-second interval once, and longer than a user's default 10 s
    # another time: the refused password was reported, honestly, as a timeout. What is tested is the reason given
    # once the broker answers, so the deadline is one no loaded machine reaches.
    config = exporter_config(
        tmp_path / "exporter.yaml", real_brokers, jmx_password=wrong, interval_seconds=60, jmx_timeout_seconds=45
    )
    run = subprocess.run(
        [sys.executable, "-m", "exporter", "collect-once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env=checkout_env(),
    )
    # Every broker's JMX failed, but its ApiVersions did not: not every poll failed.
    assert run.returncode == 0, run.stderr
    for release in KRAFT_RELEASES:
        node = real_brokers.node(release)
        cluster = real_brokers.cluster_name(release)
        labels = f'broker="{node.node_id}",kafka_cluster="{cluster}"'
        assert f'kafka_client_exporter_up{{{labels},source="jmx"}} 0.0' in run.stdout
        assert (
            f'kafka_client_exporter_errors_total{{{labels},reason="authentication",source="jmx"}} 1.0' in run.stdout
        ), run.stderr
        assert f'kafka_client_exporter_up{{{labels},source="api_versions"}} 1.0' in run.stdout
        assert (
            f"{cluster}/{node.node_id} (jmx): JMX authentication failed at {node.jmx_url} for user {JMX_USER}"
            in run.stderr
        )
    for secret in (JMX_PASSWORD, wrong):
        assert secret not in run.stdout + run.stderr
