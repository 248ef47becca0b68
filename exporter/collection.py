"""The background collection loop: poll every broker's sources, build one immutable Snapshot per cycle.

/metrics only ever reads the latest snapshot, so a slow or dead broker delays nothing but its own entry,
and a failing broker contributes its `up` = 0 and no client series (never last cycle's data).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from exporter.config.settings import ClusterConfig, Settings
from exporter.judging.clients import ClientJudge
from exporter.policy import Policy, load_policy
from exporter.snapshot import CLUSTER_BROKER, BrokerFacts, Reading, Snapshot, SourceKey, SourceResult
from exporter.sources.broker_protocol import key74_support, read_broker_facts, read_client_metrics
from exporter.sources.jmx import JavaRuntime, JmxError, JmxTarget, read_broker
from exporter.sources.kafka_session import BrokerAddress, KafkaSession, ProtocolError

log = logging.getLogger(__name__)

SOURCE_JMX = "jmx"
SOURCE_DISCOVERY = "discovery"
SOURCE_API_VERSIONS = "api_versions"
SOURCE_CLIENT_METRICS = "client_metrics"
# A broker that drops out of the metadata (killed, fenced) keeps being polled, and reported down, this
# long after it was last in the metadata; after that it is taken as decommissioned and its series go.
FORGET_ABSENT_BROKER_SECONDS = 600.0


def jmx_url_for(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"service:jmx:rmi:///jndi/rmi://{host}:{port}/jmxrmi"


@dataclass(frozen=True, slots=True)
class BrokerTarget:
    cluster: str
    broker: str
    jmx: JmxTarget


@dataclass
class _KnownBroker:
    address: BrokerAddress
    last_seen: float  # monotonic time it was last in the metadata


async def _no_results() -> list[SourceResult]:
    return []


class CollectionLoop:
    def __init__(
        self,
        settings: Settings,
        publish: Callable[[Snapshot], None] | None = None,
        clock: Callable[[], float] = time.time,
        policy: Policy | None = None,
    ) -> None:
        self._settings = settings
        policy = policy if policy is not None else load_policy(settings.policy_file)
        self._judge = ClientJudge(policy, settings.collection.max_versions_per_cluster)
        self._publish = publish
        self._clock = clock
        self._java = JavaRuntime(settings.java.path, tuple(settings.java.options))
        timeout = settings.collection.protocol_timeout_seconds
        assert timeout is not None  # resolved by CollectionConfig
        self._sessions = {c.name: KafkaSession(c, timeout) for c in settings.clusters if c.polls_protocol}
        self._known: dict[str, dict[int, _KnownBroker]] = {name: {} for name in self._sessions}
        # The highest ApiVersions version each broker advertised last time: where the next poll starts.
        self._api_versions_start: dict[tuple[str, int], int] = {}
        self._errors_total: dict[tuple[SourceKey, str], int] = {}
        self._last_success: dict[SourceKey, float] = {}
        self._last_error: dict[SourceKey, str | None] = {}
        self._sequence = 0

    # -- targets ---------------------------------------------------------------------------------------

    def _jmx_targets(self, cluster: ClusterConfig, brokers: list[BrokerAddress]) -> list[BrokerTarget]:
        """Listed brokers with their JMX endpoints, or the metadata's brokers at jmx.port."""
        username, password = cluster.credentials()
        port = cluster.jmx.port if cluster.jmx else None
        if cluster.brokers is not None:
            return [
                BrokerTarget(
                    cluster.name,
                    str(b.id),
                    JmxTarget(b.jmx_url or jmx_url_for(b.host or "", port or 0), username, password),
                )
                for b in cluster.brokers
            ]
        if port is None:
            return []
        return [
            BrokerTarget(cluster.name, str(b.node_id), JmxTarget(jmx_url_for(b.host, port), username, password))
            for b in brokers
        ]

    async def _metadata(self, cluster: ClusterConfig) -> tuple[list[BrokerAddress], SourceResult]:
        """The brokers to poll: those in the metadata now, plus those that left it recently (so a dead
        broker shows as down instead of vanishing). On failure, the brokers known before."""
        key = SourceKey(cluster.name, CLUSTER_BROKER, SOURCE_DISCOVERY)
        known = self._known[cluster.name]
        started = time.monotonic()
        try:
            current = await self._sessions[cluster.name].brokers()
        except ProtocolError as error:
            return [k.address for k in known.values()], self._result(key, started, error)
        now = time.monotonic()
        for address in current:
            known[address.node_id] = _KnownBroker(address, now)
        for node_id in [n for n, k in known.items() if now - k.last_seen > FORGET_ABSENT_BROKER_SECONDS]:
            log.info(
                "%s: broker %s left the metadata %.0f s ago; no longer polled",
                cluster.name,
                node_id,
                now - known[node_id].last_seen,
            )
            del known[node_id]
            self._api_versions_start.pop((cluster.name, node_id), None)
        return [known[n].address for n in sorted(known)], self._result(key, started, None)

    # -- one cycle -------------------------------------------------------------------------------------

    def _result(
        self,
        key: SourceKey,
        started: float,
        error: JmxError | ProtocolError | None,
        reading: Reading | None = None,
    ) -> SourceResult:
        now = self._clock()
        duration = time.monotonic() - started
        previous = self._last_error.get(key, "never polled")
        if error is None:
            self._last_success[key] = now
            self._last_error[key] = None
            if previous not in (None, "never polled"):
                log.info("%s/%s (%s) recovered", key.cluster, key.broker, key.source)
            return SourceResult(key, True, duration, now, reading=reading)
        self._errors_total[(key, error.reason)] = self._errors_total.get((key, error.reason), 0) + 1
        # One line per change of state: a broker that stays down must not flood the log every cycle.
        if previous != error.reason:
            log.warning("%s/%s (%s): %s", key.cluster, key.broker, key.source, error)
        else:
            log.debug("%s/%s (%s): %s", key.cluster, key.broker, key.source, error)
        self._last_error[key] = error.reason
        return SourceResult(key, False, duration, now, error_reason=error.reason, error_message=str(error))

    async def _poll_jmx(self, target: BrokerTarget, slots: asyncio.Semaphore) -> SourceResult:
        key = SourceKey(target.cluster, target.broker, SOURCE_JMX)
        async with slots:
            started = time.monotonic()
            try:
                reading = await read_broker(target.jmx, self._java, self._settings.collection.jmx_timeout_seconds)
            except JmxError as error:
                return self._result(key, started, error)
        return self._result(key, started, None, reading)

    async def _poll_api_versions(self, cluster: str, broker: BrokerAddress) -> SourceResult:
        key = SourceKey(cluster, str(broker.node_id), SOURCE_API_VERSIONS)
        started = time.monotonic()
        start_version = self._api_versions_start.get((cluster, broker.node_id))
        try:
            facts = await self._sessions[cluster].call(read_broker_facts, broker.node_id, broker.host, start_version)
        except ProtocolError as error:
            return self._result(key, started, error)
        own = facts.api(18)
        if own is not None:
            self._api_versions_start[(cluster, broker.node_id)] = own.max_version
        return self._result(key, started, None, facts)

    async def _poll_client_metrics(self, cluster: str, brokers: list[SourceResult]) -> SourceResult | None:
        """Ask the broker that serves the highest key-74 version (brokers differ during an upgrade)."""
        answered = [(r.key.broker, facts) for r in brokers if (facts := r.reading_of(BrokerFacts)) is not None]
        if not answered:
            return None  # nothing known about the cluster this cycle; the broker results say why
        chosen_broker, chosen_facts = max(answered, key=lambda pair: (key74_support(pair[1])[::-1], pair[0]))
        key = SourceKey(cluster, CLUSTER_BROKER, SOURCE_CLIENT_METRICS)
        started = time.monotonic()
        try:
            reading = await self._sessions[cluster].call(read_client_metrics, int(chosen_broker), chosen_facts)
        except ProtocolError as error:
            return self._result(key, started, error)
        return self._result(key, started, None, reading)

    async def _poll_protocol(self, cluster: ClusterConfig, brokers: list[BrokerAddress]) -> list[SourceResult]:
        results = list(await asyncio.gather(*(self._poll_api_versions(cluster.name, b) for b in brokers)))
        client_metrics = await self._poll_client_metrics(cluster.name, results)
        return results + ([client_metrics] if client_metrics is not None else [])

    async def _poll_cluster(self, cluster: ClusterConfig, slots: asyncio.Semaphore) -> list[SourceResult]:
        results: list[SourceResult] = []
        brokers: list[BrokerAddress] = []
        if cluster.polls_protocol:
            brokers, metadata = await self._metadata(cluster)
            results.append(metadata)
        targets = self._jmx_targets(cluster, brokers) if cluster.polls_jmx else []
        protocol_results, jmx_results = await asyncio.gather(
            self._poll_protocol(cluster, brokers) if cluster.polls_protocol else _no_results(),
            asyncio.gather(*(self._poll_jmx(t, slots) for t in targets)),
        )
        return results + protocol_results + list(jmx_results)

    async def run_cycle(self) -> Snapshot:
        started = time.monotonic()
        # Made per cycle: an asyncio primitive belongs to the event loop that first waits on it.
        slots = asyncio.Semaphore(self._settings.collection.max_concurrency)
        per_cluster = await asyncio.gather(*(self._poll_cluster(c, slots) for c in self._settings.clusters))
        results = [r for cluster_results in per_cluster for r in cluster_results]
        self._forget_gone({r.key for r in results})
        self._sequence += 1
        return Snapshot(
            sequence=self._sequence,
            taken_at=self._clock(),
            cycle_duration_seconds=time.monotonic() - started,
            results=tuple(results),
            errors_total=self._errors_total,
            last_success=self._last_success,
            clusters=tuple(c.name for c in self._settings.clusters),
            interval_seconds=self._settings.collection.interval_seconds,
            clients=self._judge.judge(results),
            folded_total=self._judge.folded_total,
        )

    def _forget_gone(self, current: set[SourceKey]) -> None:
        """Drop counters of brokers that left the cluster, or they would linger as stale series."""
        for key in [k for k in self._errors_total if k[0] not in current]:
            del self._errors_total[key]
        for key in [k for k in self._last_success if k not in current]:
            del self._last_success[key]
        for key in [k for k in self._last_error if k not in current]:
            del self._last_error[key]

    async def run_forever(self, stop: asyncio.Event) -> None:
        interval = self._settings.collection.interval_seconds
        while not stop.is_set():
            started = time.monotonic()
            try:
                snapshot = await self.run_cycle()
                if self._publish is not None:
                    # Rendering is CPU-bound; a worker thread keeps /metrics answering meanwhile.
                    await asyncio.to_thread(self._publish, snapshot)
                log.debug("cycle %d took %.2f s", snapshot.sequence, snapshot.cycle_duration_seconds)
            except Exception:  # a bug in one cycle must not end collection for good
                log.exception("collection cycle failed")
            # Cycles never overlap: a slow cycle delays the next one instead of piling JVMs up.
            remaining = interval - (time.monotonic() - started)
            if remaining > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), remaining)

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
