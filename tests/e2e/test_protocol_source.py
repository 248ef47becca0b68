"""The protocol source (issue 3) with real kafka-python against the broker double: ApiVersions per broker,
release inference, features, key 74 + DescribeConfigs, SASL, authorization, reconnects and fd hygiene."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator

import pytest

from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from exporter.snapshot import BrokerFacts, ClientMetricsReading, Snapshot, SourceResult
from kafka_double.client_metrics import Subscription
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.mbean_host import MBeanHost
from kafka_double.releases import get_release
from tests.support.exposition import series_of
from tests.support.kafka_releases import releases_with_same_specs

pytestmark = pytest.mark.slow

SASL_PASSWORD = "s3cret-Sasl-pw"
SUBSCRIPTION = Subscription(
    "producers", ("org.apache.kafka.producer.record.send",), 60000, ("client_software_name=kafka-python",)
)
PLAIN_AND_SASL = [ListenerSpec("PLAINTEXT", "PLAINTEXT", 0, 2), ListenerSpec("SASL", "SASL_PLAINTEXT", 0, 2)]


@pytest.fixture(scope="module")
def mbean_host() -> Iterator[MBeanHost]:
    with MBeanHost() as host:
        yield host


def protocol_settings(double: DoubleCluster, listener: str = "PLAINTEXT", **cluster: object) -> Settings:
    return Settings(
        clusters=[{"name": "proto", "bootstrap_servers": double.bootstrap(listener).split(","), **cluster}],
        collection={"interval_seconds": 5},
    )


def run_cycles(settings: Settings, cycles: int = 1) -> list[Snapshot]:
    loop = CollectionLoop(settings)

    async def run() -> list[Snapshot]:
        return [await loop.run_cycle() for _ in range(cycles)]

    try:
        return asyncio.run(run())
    finally:
        loop.close()


def by_source(snapshot: Snapshot, source: str) -> list[SourceResult]:
    return [r for r in snapshot.results if r.key.source == source]


# (release, metadata mode; None: the double's default) -> (inferred release, key-74 RPC used, ApiVersions version)
RELEASES = {
    ("2.4.0", None): ("2.4.0", None, 3),
    ("3.6.0", None): ("3.6.0", None, 3),
    ("3.9.0", "kraft"): ("3.9.0", "ListClientMetricsResources", 4),
    # A ZooKeeper-mode broker has no key 74 (ListClientMetricsResourcesRequest.json "listeners": ["broker"]):
    # kafka_client_exporter_api_supported is 0 and the client-metrics source reports nothing, without an error.
    ("3.9.0", "zookeeper"): ("3.9.0", None, 4),
    ("4.1.0", None): ("4.1.0", "ListConfigResources", 4),
    # 4.3.0 and 4.3.1 advertise identical ranges; inference reports the lower bound.
    ("4.3.1", None): ("4.3.0", "ListConfigResources", 4),
}


@pytest.mark.parametrize(("release", "mode"), sorted(RELEASES, key=str), ids=lambda x: x or "default")
def test_release_facts(mbean_host: MBeanHost, release: str, mode: str | None) -> None:
    inferred, api_used, request_version = RELEASES[release, mode]
    spec = BrokerSpec(3, release=release, metadata_mode=mode)
    with DoubleCluster([spec], mbean_host=mbean_host) as double:
        double.configs.put_subscription(SUBSCRIPTION)
        [snapshot] = run_cycles(protocol_settings(double))
        double.sync()
        # The exporter announced itself (KIP-511) and Kafka's regex accepted it.
        registered = {(name, version) for (_l, _p, name, version) in double.registry_view(3)}
    assert all(r.ok for r in snapshot.results), [r.error_message for r in snapshot.results]
    [broker] = by_source(snapshot, "api_versions")
    facts = broker.reading_of(BrokerFacts)
    assert facts is not None
    assert facts.inferred_release == inferred
    if inferred != release:
        assert release in releases_with_same_specs(inferred)
    assert facts.request_version == request_version
    advertised = {a.api_key: (a.min_version, a.max_version) for a in get_release(release, mode).advertised()}
    assert {a.api_key: (a.min_version, a.max_version) for a in facts.apis} == advertised
    # Features: a v4 request gets every supported feature, including those with MinVersion 0 (KAFKA-17492).
    features = get_release(release, mode).features()
    assert {f.name: f.max_version for f in facts.supported_features} == {f.name: f.max_version for f in features}
    assert {f.name: f.max_version for f in facts.finalized_features} == {
        f.name: f.finalized_level for f in features if f.finalized_level >= 1
    }
    [metrics_result] = by_source(snapshot, "client_metrics")
    reading = metrics_result.reading_of(ClientMetricsReading)
    assert reading is not None and reading.api_used == api_used
    series = series_of(snapshot)
    supported = {
        api: series[("kafka_client_exporter_api_supported", (("api", api), ("kafka_cluster", "proto")))]
        for api in ("ListClientMetricsResources", "ListConfigResources")
    }
    if api_used is None:
        assert supported == {"ListClientMetricsResources": 0, "ListConfigResources": 0}
        assert not [k for k in series if k[0] == "kafka_client_metrics_subscriptions"]
    else:
        assert supported["ListClientMetricsResources"] == 1
        assert supported["ListConfigResources"] == (api_used == "ListConfigResources")
        assert reading.subscriptions[0].metrics == SUBSCRIPTION.metrics
        assert reading.subscriptions[0].match == SUBSCRIPTION.match
        assert series[("kafka_client_metrics_subscriptions", (("kafka_cluster", "proto"),))] == 1
        key = (
            "kafka_client_metrics_subscription_info",
            (("interval_ms", "60000"), ("kafka_cluster", "proto"), ("name", "producers")),
        )
        assert series[key] == 1
    assert (
        series[
            (
                "kafka_broker_release_info",
                (("broker", "3"), ("host", "127.0.0.1"), ("inferred_release", inferred), ("kafka_cluster", "proto")),
            )
        ]
        == 1
    )
    produce = ("kafka_broker_api_version_max", (("api", "Produce"), ("broker", "3"), ("kafka_cluster", "proto")))
    assert series[produce] == advertised[0][1]
    if get_release(release).has_client_mbeans:  # KIP-511's broker side arrived in 2.5.0
        assert ("kafka-client-exporter", "0.1.0") in registered
    assert not [k for k in series if k[0] == "kafka_client_exporter_errors_total"]


def test_api_versions_fallback_on_a_broker_whose_maximum_is_2(mbean_host: MBeanHost) -> None:
    assert get_release("2.3.0").api(18).max_version == 2  # type: ignore[union-attr]
    with DoubleCluster([BrokerSpec(1, release="2.3.0")], mbean_host=mbean_host) as double:
        first, second = run_cycles(protocol_settings(double), cycles=2)
    [one] = by_source(first, "api_versions")
    [two] = by_source(second, "api_versions")
    one_facts, two_facts = one.reading_of(BrokerFacts), two.reading_of(BrokerFacts)
    assert one.ok and one_facts is not None and two_facts is not None
    # Start high (v4); UNSUPPORTED_VERSION with no key-18 entry (pre-2.4) -> v0; v0 names max 2 -> v2.
    assert one_facts.versions_tried == (4, 0, 2)
    assert one_facts.request_version == 2
    # Next cycle starts at what the broker advertised.
    assert two_facts.versions_tried == (2,)
    assert one_facts.inferred_release == "2.3.0"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_sasl_good_and_bad_credentials(mbean_host: MBeanHost, mechanism: str, caplog: pytest.LogCaptureFixture) -> None:
    specs = [BrokerSpec(1, release="4.1.0", listeners=PLAIN_AND_SASL)]
    wrong = "not-" + SASL_PASSWORD
    with DoubleCluster(specs, mbean_host=mbean_host, sasl_users={"exporter": SASL_PASSWORD}) as double:
        double.configs.put_subscription(SUBSCRIPTION)

        def settings(password: str) -> Settings:
            security = {
                "protocol": "SASL_PLAINTEXT",
                "sasl": {"mechanism": mechanism, "username": "exporter", "password": password},
            }
            return Settings(
                clusters=[
                    {"name": "sasl", "bootstrap_servers": double.bootstrap("SASL").split(","), "security": security}
                ],
                collection={"interval_seconds": 4},
            )

        # As the exporter's CLI sets it up: our loggers at DEBUG, kafka-python's never below ERROR (its DEBUG
        # lines print request bodies, SASL tokens included).
        caplog.set_level(logging.ERROR, logger="kafka")
        with caplog.at_level(logging.DEBUG, logger="exporter"):
            [good] = run_cycles(settings(SASL_PASSWORD))
            [bad] = run_cycles(settings(wrong))
    assert all(r.ok for r in good.results), [r.error_message for r in good.results]
    assert by_source(good, "client_metrics")[0].reading_of(ClientMetricsReading).subscriptions  # type: ignore[union-attr]
    [failed] = bad.results
    assert (failed.key.source, failed.error_reason) == ("discovery", "authentication")
    assert "SaslAuthenticationFailedError" in (failed.error_message or "")
    series = series_of(bad)
    key = (
        "kafka_client_exporter_errors_total",
        (("broker", "bootstrap"), ("kafka_cluster", "sasl"), ("reason", "authentication"), ("source", "discovery")),
    )
    assert series[key] == 1
    for secret in (SASL_PASSWORD, wrong):
        assert secret not in caplog.text
        assert secret not in repr(series)
        assert secret not in (failed.error_message or "")


def test_authorization_denied_is_one_clear_line_and_isolated(
    mbean_host: MBeanHost, caplog: pytest.LogCaptureFixture
) -> None:
    with DoubleCluster(
        [BrokerSpec(1, release="4.1.0"), BrokerSpec(2, release="4.1.0")], mbean_host=mbean_host
    ) as double:
        double.configs.put_subscription(SUBSCRIPTION)
        double.configs.deny_describe_configs("User:ANONYMOUS")
        with caplog.at_level(logging.INFO, logger="exporter"):
            snapshots = run_cycles(protocol_settings(double), cycles=3)
    last = snapshots[-1]
    [denied] = by_source(last, "client_metrics")
    assert denied.error_reason == "authorization"
    assert all(r.ok for r in last.results if r.key.source != "client_metrics")
    acl_lines = [r for r in caplog.records if "DESCRIBE_CONFIGS on the CLUSTER" in r.getMessage()]
    assert len(acl_lines) == 1, [r.getMessage() for r in acl_lines]
    series = series_of(last)
    key = (
        "kafka_client_exporter_errors_total",
        (
            ("broker", "bootstrap"),
            ("kafka_cluster", "proto"),
            ("reason", "authorization"),
            ("source", "client_metrics"),
        ),
    )
    assert series[key] == 3
    assert (
        "kafka_client_exporter_up",
        (("broker", "bootstrap"), ("kafka_cluster", "proto"), ("source", "client_metrics")),
    ) in series
    assert len([k for k in series if k[0] == "kafka_broker_release_info"]) == 2


def _open_fds() -> int:
    """Sockets, pipes and selectors this process holds: what a leaked connection leaves. Files are left out, as other
    threads of the worker open and close them at any moment (a sampler reading /proc once counted two more)."""
    held = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            held += not os.readlink(f"/proc/self/fd/{fd}").startswith("/")
        except FileNotFoundError:  # the listing's own descriptor, closed since
            continue
    return held


def test_restarted_broker_is_reconnected_and_no_descriptor_leaks(mbean_host: MBeanHost) -> None:
    with DoubleCluster(
        [BrokerSpec(1, release="4.1.0"), BrokerSpec(2, release="3.9.0")], mbean_host=mbean_host
    ) as double:
        loop = CollectionLoop(protocol_settings(double))
        fds: list[int] = []
        snapshots: list[Snapshot] = []

        async def run() -> None:
            for cycle in range(50):
                if cycle == 10:
                    double.broker(2).kill()
                    double.broker(2).restart()
                snapshots.append(await loop.run_cycle())
                fds.append(_open_fds())

        try:
            asyncio.run(run())
        finally:
            loop.close()
    # The broker restarted before cycle 10: reconnected within two cycles, and for good.
    for snapshot in snapshots[12:]:
        assert all(r.ok for r in snapshot.results), [r.error_message for r in snapshot.results if not r.ok]
    # Connections are reused: after warm-up the descriptor count does not grow over 40 cycles.
    assert max(fds[12:]) <= fds[12] + 1, fds


def test_subscription_lists_are_served_as_json_and_on_the_landing_page(mbean_host: MBeanHost) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from exporter.web.app import make_app
    from exporter.web.exposition import Exposition

    with DoubleCluster([BrokerSpec(1, release="4.1.0")], mbean_host=mbean_host) as double:
        double.configs.put_subscription(SUBSCRIPTION)
        [snapshot] = run_cycles(protocol_settings(double))
    exposition = Exposition()
    exposition.publish(snapshot)

    async def fetch() -> tuple[object, str]:
        async with TestClient(TestServer(make_app(exposition, lambda: True))) as client:
            api = await (await client.get("/api/client-metrics")).json()
            page = await (await client.get("/")).text()
            return api, page

    api, page = asyncio.run(fetch())
    assert api == {
        "proto": {
            "api": "ListConfigResources",
            "subscriptions": [
                {
                    "name": "producers",
                    "interval_ms": 60000,
                    "metrics": list(SUBSCRIPTION.metrics),
                    "match": list(SUBSCRIPTION.match),
                }
            ],
        }
    }
    assert "client_software_name=kafka-python" in page and "4.1.0" in page
