"""Every client kind the project runs, against real Kafka brokers (3.9.2 and 4.4.0, see conftest.py): each appears on
/metrics and in /api/clients under its broker and listener with the name and version the broker itself records in
its request log, and is gone from /metrics at the first collection cycle that starts after it disconnected.

The clients run in waves, both brokers at once: a wave holds at most one client per (broker, software name, version),
so every client is the only one behind its series and its disappearance is its own. Clients that announce a name of
their own (kcat, confluent-kafka, kafka-python, the Java clients) all go in the first wave; those a broker records as
`unknown` (aiokafka, kafkajs, and the 0.10 Java clients) need a wave each. The 0.10 clients only run against 3.9.2:
4.x refuses their Produce v2 (test_real_legacy_clients.py).

The waves run once, in a module fixture that records what /metrics, /api/clients and the request log said of each
client; each parametrized test then judges one client.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.clients import (
    LEGACY_JAVA_RELEASES,
    UNKNOWN,
    ClientError,
    ClientKind,
    ExpectedIdentity,
    RealClient,
    expected_identity,
    missing_reason,
    start_client,
)
from real_kafka import KRAFT_RELEASES
from tests.real_kafka.conftest import INTERVAL_SECONDS, RealBrokers, api_clients, samples, scrape
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.real_kafka, pytest.mark.slow]

#: The broker closes its side of a connection a moment after the client's process has exited; a cycle that starts
#: later than this after the exit must not see the client any more.
CLOSE_MARGIN_SECONDS = INTERVAL_SECONDS / 2
#: How long a wave's clients get to bootstrap: up to six client JVMs start at once on a small, shared machine.
BOOTSTRAP_SECONDS = 60.0
KCAT_VERSION = "5.0.1-rc1"
API_VERSIONS = 18

#: (broker, listener, software name, software version), as kafka_client_connections labels them.
SeriesKey = tuple[str, str, str, str]


@dataclass(frozen=True)
class Case:
    release: str
    kind: ClientKind
    listener: str = "PLAINTEXT"

    @property
    def name(self) -> str:
        return f"{self.kind.value}-on-{self.release}" + ("" if self.listener == "PLAINTEXT" else f"-{self.listener}")

    @property
    def client_id(self) -> str:
        return f"real-clients-{self.name}"

    @property
    def kcat_identity(self) -> tuple[str, str] | None:
        return (f"real-clients-kcat-{self.release}", KCAT_VERSION) if self.kind is ClientKind.KCAT else None

    @property
    def expected(self) -> ExpectedIdentity:
        identity = self.kcat_identity
        return expected_identity(self.kind, *(identity if identity else (None, None)))


def _cases() -> list[Case]:
    cases = []
    for release in KRAFT_RELEASES:
        cases += [
            Case(release, ClientKind.KCAT),
            Case(release, ClientKind.CONFLUENT),
            Case(release, ClientKind.KAFKA_PYTHON),
            Case(release, ClientKind.AIOKAFKA),
            Case(release, ClientKind.KAFKAJS),
            # Kafka's current Java client signs in with SCRAM over TLS: the series is the SASL_SSL listener's.
            Case(release, ClientKind.JAVA, "SASL_SSL"),
            Case(release, ClientKind.JAVA_3_9),
            Case(release, ClientKind.JAVA_2_8),
        ]
    return [*cases, Case("3.9.2", ClientKind.JAVA_0_10_2), Case("3.9.2", ClientKind.JAVA_0_10_1)]


CASES = _cases()


def waves(cases: list[Case]) -> list[list[Case]]:
    """At most one client per (broker, identity) in each wave, the first wave as large as possible."""
    sharing: dict[tuple[str, ExpectedIdentity], list[Case]] = defaultdict(list)
    for case in cases:
        sharing[(case.release, case.expected)].append(case)
    out: list[list[Case]] = []
    for group in sharing.values():
        for index, case in enumerate(group):
            if index == len(out):
                out.append([])
            out[index].append(case)
    return out


@dataclass
class Observed:
    """What a user could see of one client while it ran and after it closed."""

    case: Case
    broker: str
    #: kafka_client_connections series of the client's identity on its broker while it ran, with their values.
    series: dict[SeriesKey, float] = field(default_factory=dict)
    #: (software name, version, connections >= 1) of /api/clients rows of the cluster with the client's identity.
    api_rows: list[tuple[str, str, bool]] = field(default_factory=list)
    #: (listener, name, version) the broker's request log records for the client's clientId (clientInformation of
    #: its requests other than ApiVersions, whose own line is logged before the connection registers the name).
    recorded: set[tuple[str, str, str]] = field(default_factory=set)
    #: The clientSoftwareName/Version bodies of its ApiVersions v3+ requests (none for v0-v2).
    announced: set[tuple[str, str]] = field(default_factory=set)
    closed_at: float | None = None
    #: Seconds after the exit at which a scrape first showed no series for it.
    gone_after: float | None = None
    #: Cycle starts (seconds after the exit, beyond CLOSE_MARGIN_SECONDS) of scrapes that still showed it.
    late_sightings: list[float] = field(default_factory=list)
    error: str | None = None


def identity_series(series: Any, broker: str, identity: ExpectedIdentity) -> dict[SeriesKey, float]:
    found = samples(
        series,
        "kafka_client_connections",
        broker=broker,
        client_software_name=identity.software_name,
        client_software_version=identity.software_version,
    )
    return {
        (
            labels["broker"],
            labels["listener"],
            labels["client_software_name"],
            labels["client_software_version"],
        ): value
        for labels, value in ((dict(key), value) for key, value in found.items())
    }


def cycle_start(series: Any) -> float:
    """When the collection cycle behind a scrape started: its completion time less its duration."""
    [completed] = samples(series, "kafka_client_exporter_snapshot_timestamp_seconds").values()
    [duration] = samples(series, "kafka_client_exporter_cycle_duration_seconds").values()
    return completed - duration


def read_broker(series: Any, broker: str) -> bool:
    """Whether the cycle behind a scrape read ``broker``'s gauges. On a loaded machine a read can miss its deadline:
    that cycle then serves none of the broker's series (never the last cycle's), which says nothing about a client."""
    return list(samples(series, "kafka_client_exporter_up", source="jmx", broker=broker).values()) == [1.0]


class WaveRunner:
    def __init__(self, brokers: RealBrokers, exporter: str) -> None:
        self.brokers = brokers
        self.exporter = exporter

    def start(self, case: Case) -> RealClient:
        node = self.brokers.node(case.release)
        properties: dict[str, str] | None = None
        if case.listener == "SASL_SSL":
            java = case.kind is ClientKind.JAVA or case.kind in LEGACY_JAVA_RELEASES
            properties = self.brokers.java_sasl_ssl_properties() if java else self.brokers.sasl_ssl_properties()
        identity = case.kcat_identity
        return start_client(
            case.kind,
            node.bootstrap(case.listener),
            software_name=identity[0] if identity else None,
            software_version=identity[1] if identity else None,
            client_id=case.client_id,
            bootstrap_timeout=BOOTSTRAP_SECONDS / 2,
            properties=properties,
        )

    def run(self, wave: list[Case], observed: dict[Case, Observed]) -> None:
        running: dict[Case, RealClient] = {}
        try:
            for case in wave:
                try:
                    running[case] = self.start(case)
                except ClientError as error:
                    observed[case].error = str(error)
            deadline = time.monotonic() + BOOTSTRAP_SECONDS
            for case, client in list(running.items()):
                try:
                    client.wait_ready(max(0.1, deadline - time.monotonic()))
                except ClientError as error:
                    observed[case].error = str(error)
                    client.close()
                    del running[case]
            self.watch_while_running(running, observed)
        finally:
            self.close_all(running, observed)
        self.watch_going(running, observed)

    def watch_while_running(self, running: dict[Case, RealClient], observed: dict[Case, Observed]) -> None:
        def all_seen(series: Any = None) -> bool:
            series = scrape(self.exporter) if series is None else series
            for case in running:
                seen = observed[case]
                seen.series = identity_series(series, seen.broker, case.expected)
            return all(
                (observed[case].broker, case.listener, case.expected.software_name, case.expected.software_version)
                in observed[case].series
                for case in running
            )

        # On time out, each test says which of its client's series is missing.
        with contextlib.suppress(AssertionError):
            wait_for(all_seen, timeout=60, what="every client of the wave on /metrics", interval=0.2)
        # A connection is counted as unknown from its accept until its ApiVersions (longer over TLS and SASL): a
        # client of the wave still connecting somewhere can add such a series to one scrape. Kept: what the next
        # cycle that read the wave's brokers shows too.
        first = {case: dict(observed[case].series) for case in running}
        after = cycle_start(scrape(self.exporter))
        brokers = {observed[case].broker for case in running}
        complete: list[Any] = []

        def next_complete() -> bool:
            series = scrape(self.exporter)
            if cycle_start(series) > after and all(read_broker(series, broker) for broker in brokers):
                complete.append(series)
            return bool(complete)

        wait_for(next_complete, timeout=30, what="the exporter's next cycle that read the wave's brokers", interval=0.2)
        all_seen(complete[0])
        for case in running:
            seen = observed[case]
            seen.series = {key: value for key, value in seen.series.items() if key in first[case]}
        document = api_clients(self.exporter)
        for case in running:
            rows = document["clusters"][self.brokers.cluster_name(case.release)]["clients"]
            observed[case].api_rows = [
                (row["software_name"], row["software_version"], row["connections"] >= 1)
                for row in rows
                if (row["software_name"], row["software_version"])
                == (case.expected.software_name, case.expected.software_version)
            ]
        for release in {case.release for case in running}:
            entries = self.brokers.request_log(release)
            for case in (case for case in running if case.release == release):
                record(observed[case], entries)

    def close_all(self, running: dict[Case, RealClient], observed: dict[Case, Observed]) -> None:
        def close(case: Case) -> None:
            running[case].close()
            observed[case].closed_at = time.time()

        with ThreadPoolExecutor(max_workers=max(1, len(running))) as pool:
            list(pool.map(close, running))

    def watch_going(self, closed: dict[Case, RealClient], observed: dict[Case, Observed]) -> None:
        waiting = set(closed)

        def all_gone() -> bool:
            series = scrape(self.exporter)
            started = cycle_start(series)
            now = time.time()
            for case in list(waiting):
                seen = observed[case]
                assert seen.closed_at is not None
                key = (seen.broker, case.listener, case.expected.software_name, case.expected.software_version)
                if key in identity_series(series, seen.broker, case.expected):
                    if started > seen.closed_at + CLOSE_MARGIN_SECONDS:
                        seen.late_sightings.append(round(started - seen.closed_at, 2))
                elif read_broker(series, seen.broker):
                    seen.gone_after = round(now - seen.closed_at, 2)
                    waiting.discard(case)
            return not waiting

        # On time out, each test says its client stayed.
        with contextlib.suppress(AssertionError):
            wait_for(all_gone, timeout=30, what="every closed client gone from /metrics", interval=0.1)


def record(seen: Observed, entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        header = entry["requestHeader"]
        # A forwarded request (CreateTopics sent on by the broker to its controller) keeps the client's clientId
        # but arrives on the broker's own CONTROLLER connection.
        if header.get("clientId") != seen.case.client_id or entry.get("isForwarded"):
            continue
        if header["requestApiKey"] == API_VERSIONS:
            body = entry.get("request") or {}
            if "clientSoftwareName" in body:
                seen.announced.add((body["clientSoftwareName"], body["clientSoftwareVersion"]))
            continue
        information = entry["clientInformation"]
        seen.recorded.add((entry["listener"], information["softwareName"], information["softwareVersion"]))


@pytest.fixture(scope="module")
def observed(real_brokers: RealBrokers, exporter: str) -> Iterator[dict[Case, Observed]]:
    missing = {kind: reason for kind in {case.kind for case in CASES} if (reason := missing_reason(kind))}
    out = {
        case: Observed(case, str(real_brokers.node(case.release).node_id), error=missing.get(case.kind))
        for case in CASES
    }
    runner = WaveRunner(real_brokers, exporter)

    def run(wave: list[Case]) -> None:
        try:
            runner.run(wave, out)
        except Exception as error:  # reported by each test of the wave
            for case in wave:
                out[case].error = out[case].error or f"the wave failed: {error!r}"

    for wave in waves([case for case in CASES if case.kind not in missing]):
        # Both brokers' clients of a wave at once: each broker is its own series.
        threads = [
            threading.Thread(target=run, args=([case for case in wave if case.release == release],))
            for release in KRAFT_RELEASES
            if any(case.release == release for case in wave)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    yield out


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_client_appears_as_the_broker_records_it_and_goes_within_a_cycle(
    observed: dict[Case, Observed], case: Case
) -> None:
    seen = observed[case]
    if seen.error is not None and missing_reason(case.kind) is not None:
        pytest.skip(seen.error)
    assert seen.error is None, seen.error
    expected = case.expected
    identity = (expected.software_name, expected.software_version)
    # What the broker itself recorded for the client's connections is what the project expects of the kind ...
    assert seen.recorded == {(case.listener, *identity)}, "the broker's request log"
    if expected == UNKNOWN:
        assert seen.announced == set(), "an unknown client announced a name in ApiVersions v3+"
    else:
        assert seen.announced == {identity}
    # ... and what /metrics and /api/clients show under its broker and listener, and only there.
    assert seen.series.keys() == {(seen.broker, case.listener, *identity)}, "kafka_client_connections"
    assert min(seen.series.values()) >= 1
    assert seen.api_rows == [(*identity, True)], "/api/clients"
    # Gone at the first cycle that started after the disconnect.
    assert seen.gone_after is not None, f"still on /metrics 30 s after it disconnected: {seen.late_sightings}"
    assert seen.late_sightings == [], (
        f"seen in cycles that started {seen.late_sightings} s after it disconnected (gone {seen.gone_after} s after)"
    )
