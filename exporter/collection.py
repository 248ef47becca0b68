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

from exporter.config import ClusterConfig, Settings
from exporter.snapshot import JmxReading, Snapshot, SourceKey, SourceResult
from exporter.sources.discovery import BrokerDiscovery, DiscoveredBroker, DiscoveryError
from exporter.sources.jmx import JavaRuntime, JmxError, JmxTarget, read_broker

log = logging.getLogger(__name__)

SOURCE_JMX = "jmx"
SOURCE_DISCOVERY = "discovery"
# Discovery is a cluster-level source; it is reported under this pseudo broker label.
DISCOVERY_BROKER = "bootstrap"


def jmx_url_for(host: str, port: int) -> str:
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"service:jmx:rmi:///jndi/rmi://{host}:{port}/jmxrmi"


@dataclass(frozen=True, slots=True)
class BrokerTarget:
    cluster: str
    broker: str
    jmx: JmxTarget


class CollectionLoop:
    def __init__(
        self,
        settings: Settings,
        publish: Callable[[Snapshot], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._publish = publish
        self._clock = clock
        self._java = JavaRuntime(settings.java.path, tuple(settings.java.options))
        self._discovery = {
            cluster.name: BrokerDiscovery(
                cluster.name, cluster.bootstrap_servers, settings.collection.discovery_timeout_seconds
            )
            for cluster in settings.clusters
            if cluster.brokers is None
        }
        self._last_discovered: dict[str, list[DiscoveredBroker]] = {}
        self._errors_total: dict[tuple[SourceKey, str], int] = {}
        self._last_success: dict[SourceKey, float] = {}
        self._last_error: dict[SourceKey, str | None] = {}
        self._sequence = 0

    # -- targets ---------------------------------------------------------------------------------------

    def _configured_targets(self, cluster: ClusterConfig) -> list[BrokerTarget]:
        username, password = cluster.credentials()
        port = cluster.jmx.port if cluster.jmx else None
        targets = []
        for broker in cluster.brokers or ():
            url = broker.jmx_url or jmx_url_for(broker.host or "", port or 0)
            targets.append(BrokerTarget(cluster.name, str(broker.id), JmxTarget(url, username, password)))
        return targets

    async def _discovered_targets(self, cluster: ClusterConfig) -> tuple[list[BrokerTarget], SourceResult]:
        key = SourceKey(cluster.name, DISCOVERY_BROKER, SOURCE_DISCOVERY)
        started = time.monotonic()
        try:
            brokers = await asyncio.wait_for(
                asyncio.to_thread(self._discovery[cluster.name].brokers),
                self._settings.collection.discovery_timeout_seconds + 1,
            )
            self._last_discovered[cluster.name] = brokers
            result = self._result(key, started, None)
        except (DiscoveryError, TimeoutError) as exc:
            # Keep polling the brokers we knew: JMX may well work while the Kafka listener does not.
            brokers = self._last_discovered.get(cluster.name, [])
            error = (
                exc
                if isinstance(exc, DiscoveryError)
                else DiscoveryError("timeout", f"cluster {cluster.name}: broker discovery timed out")
            )
            result = self._result(key, started, error)
        username, password = cluster.credentials()
        port = cluster.jmx.port if cluster.jmx else 0
        targets = [
            BrokerTarget(cluster.name, str(b.id), JmxTarget(jmx_url_for(b.host, port or 0), username, password))
            for b in brokers
        ]
        return targets, result

    # -- one cycle -------------------------------------------------------------------------------------

    def _result(
        self, key: SourceKey, started: float, error: JmxError | DiscoveryError | None, jmx: JmxReading | None = None
    ) -> SourceResult:
        now = self._clock()
        duration = time.monotonic() - started
        previous = self._last_error.get(key, "never polled")
        if error is None:
            self._last_success[key] = now
            self._last_error[key] = None
            if previous not in (None, "never polled"):
                log.info("%s/%s (%s) recovered", key.cluster, key.broker, key.source)
            return SourceResult(key, True, duration, now, jmx=jmx)
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
        return self._result(key, started, None, jmx=reading)

    async def run_cycle(self) -> Snapshot:
        started = time.monotonic()
        results: list[SourceResult] = []
        targets: list[BrokerTarget] = []
        discovery = [self._discovered_targets(c) for c in self._settings.clusters if c.brokers is None]
        for cluster_targets, discovery_result in await asyncio.gather(*discovery):
            targets += cluster_targets
            results.append(discovery_result)
        for cluster in self._settings.clusters:
            if cluster.brokers is not None:
                targets += self._configured_targets(cluster)
        # Made per cycle: an asyncio primitive belongs to the event loop that first waits on it.
        slots = asyncio.Semaphore(self._settings.collection.max_concurrency)
        results += await asyncio.gather(*(self._poll_jmx(t, slots) for t in targets))
        self._forget_gone({r.key for r in results})
        self._sequence += 1
        snapshot = Snapshot(
            sequence=self._sequence,
            taken_at=self._clock(),
            cycle_duration_seconds=time.monotonic() - started,
            results=tuple(results),
            errors_total=self._errors_total,
            last_success=self._last_success,
            clusters=tuple(c.name for c in self._settings.clusters),
        )
        return snapshot

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
        for discovery in self._discovery.values():
            discovery.close()
