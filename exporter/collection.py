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

from exporter.config.settings import Settings
from exporter.judging.clients import ClientJudge
from exporter.judging.identities import join_identities
from exporter.judging.not_named_yet import NotNamedYet
from exporter.judging.own_connections import account
from exporter.judging.upgrade import UpgradeJudge
from exporter.policy import Policy, load_policy
from exporter.snapshot import Reading, Snapshot, SourceKey, SourceResult
from exporter.sources.base import Poll, Source, SourceError, SourceName
from exporter.sources.cluster_sources import JmxTransports, cluster_sources

log = logging.getLogger(__name__)


def _check_order(sources: list[Source]) -> None:
    """Each source after those it runs after, and one of each per cluster: the cycle relies on both."""
    seen: set[SourceName] = set()
    for source in sources:
        if source.name in seen:
            raise ValueError(f"cluster {source.cluster}: two sources named {source.name}")
        missing = ", ".join(name for name in source.after if name not in seen)
        if missing:
            raise ValueError(f"cluster {source.cluster}: source {source.name} runs after {missing}, not before it")
        seen.add(source.name)


class CollectionLoop:
    def __init__(
        self,
        settings: Settings,
        publish: Callable[[Snapshot], None] | None = None,
        clock: Callable[[], float] = time.time,
        policy: Policy | None = None,
        count_failed_cycle: Callable[[], None] | None = None,
    ) -> None:
        self._settings = settings
        self._count_failed_cycle = count_failed_cycle
        policy = policy if policy is not None else load_policy(settings.policy_file)
        self._judge = ClientJudge(policy, settings.collection.max_versions_per_cluster)
        self._not_named_yet = NotNamedYet()
        self._upgrade_judge = UpgradeJudge(settings.policy.target_release)
        self._max_identity_series = {
            cluster.name: cluster.inventory.max_identity_series
            for cluster in settings.clusters
            if cluster.inventory is not None
        }
        self._publish = publish
        self._clock = clock
        # One bridge JVM per distinct JMX TLS configuration, shared by the clusters having it; closed with the loop.
        self._jmx = JmxTransports(settings)
        # Per configured cluster, in the order of the configuration.
        self._sources = [
            cluster_sources(cluster, settings, self._jmx.for_cluster(cluster)) for cluster in settings.clusters
        ]
        for sources in self._sources:
            _check_order(sources)
        self._errors_total: dict[tuple[SourceKey, str], int] = {}
        self._last_success: dict[SourceKey, float] = {}
        self._last_error: dict[SourceKey, str | None] = {}
        self._sequence = 0
        self._last_traceback: str | None = None  # the error whose traceback was logged last in this run of failures
        self._failed_in_a_row = 0

    # -- one cycle -------------------------------------------------------------------------------------

    def _result(
        self,
        key: SourceKey,
        started: float,
        error: SourceError | None,
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
        return SourceResult(
            key, False, duration, now, error_reason=error.reason, error_message=str(error), reading=reading
        )

    async def _poll(self, source: Source, poll: Poll, slots: asyncio.Semaphore) -> SourceResult:
        key = SourceKey(source.cluster, poll.broker, source.name)
        async with slots if source.uses_slots else contextlib.nullcontext():
            started = time.monotonic()
            try:
                reading = await poll.read()
            except SourceError as error:
                return self._result(key, started, error, error.kept)
        return self._result(key, started, None, reading)

    async def _run_source(
        self,
        source: Source,
        before: dict[SourceName, asyncio.Task[list[SourceResult]]],
        slots: asyncio.Semaphore,
    ) -> list[SourceResult]:
        earlier = {name: await task for name, task in before.items()}
        return list(await asyncio.gather(*(self._poll(source, poll, slots) for poll in source.polls(earlier))))

    async def _poll_cluster(self, sources: list[Source], slots: asyncio.Semaphore) -> list[SourceResult]:
        """Every source as its own task, started once those it runs after have finished: JMX reads run
        while ApiVersions and client metrics do. Results come in the order of the sources."""
        tasks: dict[SourceName, asyncio.Task[list[SourceResult]]] = {}
        for source in sources:
            before = {name: tasks[name] for name in source.after}
            tasks[source.name] = asyncio.create_task(self._run_source(source, before, slots))
        per_source = await asyncio.gather(*tasks.values())
        return [result for results in per_source for result in results]

    async def run_cycle(self) -> Snapshot:
        started = time.monotonic()
        # Made per cycle: an asyncio primitive belongs to the event loop that first waits on it.
        slots = asyncio.Semaphore(self._settings.collection.max_concurrency)
        per_cluster = await asyncio.gather(*(self._poll_cluster(sources, slots) for sources in self._sources))
        results = [r for cluster_results in per_cluster for r in cluster_results]
        self._forget_gone({r.key for r in results})
        self._sequence += 1
        clusters = tuple(c.name for c in self._settings.clusters)
        accounts = self._not_named_yet.hold(results, account(clusters, results), started)
        clients = self._judge.judge(results, accounts)
        identities, identity_series_dropped = join_identities(results, clients, self._max_identity_series)
        return Snapshot(
            sequence=self._sequence,
            taken_at=self._clock(),
            cycle_duration_seconds=time.monotonic() - started,
            results=tuple(results),
            errors_total=self._errors_total,
            last_success=self._last_success,
            clusters=clusters,
            interval_seconds=self._settings.collection.interval_seconds,
            stale_after_seconds=self._settings.collection.stale_after_seconds,
            clients=clients,
            folded_total=self._judge.folded_total,
            blocking_requests=self._upgrade_judge.judge(results),
            identities=identities,
            identity_series_dropped=identity_series_dropped,
            own_by_broker=tuple(own for a in accounts.values() for own in a.by_broker),
            own_by_listener=tuple(own for a in accounts.values() for own in a.by_listener),
            broker_channels_read={
                (cluster, broker): read for cluster, a in accounts.items() for broker, read in a.channels_read.items()
            },
        )

    def _forget_gone(self, current: set[SourceKey]) -> None:
        """Drop counters of brokers that left the cluster, or they would linger as stale series."""
        for counted in [k for k in self._errors_total if k[0] not in current]:
            del self._errors_total[counted]
        for key in [k for k in self._last_success if k not in current]:
            del self._last_success[key]
        for key in [k for k in self._last_error if k not in current]:
            del self._last_error[key]

    def _cycle_failed(self, error: Exception) -> None:
        """Count a cycle that raised; the traceback is logged once per run of failures with the same error."""
        if self._count_failed_cycle is not None:
            self._count_failed_cycle()
        self._failed_in_a_row += 1
        described = f"{type(error).__name__}: {error}"
        if described != self._last_traceback:
            log.error("collection cycle failed; the served snapshot is not refreshed", exc_info=error)
            self._last_traceback = described
        else:
            log.error("collection cycle failed again (%d in a row): %s", self._failed_in_a_row, described)

    def _cycle_completed(self) -> None:
        if self._failed_in_a_row:
            log.info("collection cycles complete again after %d failed", self._failed_in_a_row)
        self._last_traceback, self._failed_in_a_row = None, 0

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
            except Exception as error:  # a bug in one cycle must not end collection for good
                # Nothing is published: the served snapshot ages until exporter/freshness.py calls it stale.
                self._cycle_failed(error)
            else:
                self._cycle_completed()
            # Cycles never overlap: a slow cycle delays the next one instead of piling JVMs up.
            remaining = interval - (time.monotonic() - started)
            if remaining > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), remaining)

    def close(self) -> None:
        for sources in self._sources:
            for source in sources:
                source.close()
        self._jmx.close()
