"""When the served data is too old to be shown as current, and what is shown instead.

The collection loop publishes a snapshot only when a cycle completes; a cycle that raises or hangs publishes
nothing. A snapshot older than `collection.stale_after_intervals` intervals is therefore the sign that the
exporter's own collection is broken (a cycle with every broker down still completes and is fresh). Such a
snapshot is never served as current: its view keeps the exporter's own health (every `up` at 0, the counters,
the snapshot's time) and drops every client and broker fact.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from exporter.snapshot import Snapshot, SourceResult

# The status page's reason for a source that is shown down because its data is stale (not a poll failure, so
# not a `reason` of errors_total).
STALE_REASON = "stale"


@dataclass(frozen=True, slots=True)
class Freshness:
    """How old the served data is: since the last completed cycle, or since start-up before the first one."""

    age_seconds: float
    limit_seconds: float
    first_cycle_done: bool

    @property
    def stale(self) -> bool:
        return self.age_seconds > self.limit_seconds

    def describe(self) -> str:
        """One line for /healthz and the status page."""
        if not self.first_cycle_done:
            return f"no collection cycle has completed in the {self.age_seconds:.0f} s since start-up"
        return f"the last completed collection cycle is {self.age_seconds:.0f} s old"


def judge_freshness(snapshot: Snapshot | None, started_at: float, limit_seconds: float, now: float) -> Freshness:
    """The freshness of `snapshot` (None before the first cycle) at `now`, for a process started at `started_at`."""
    completed_at = snapshot.taken_at if snapshot is not None else started_at
    return Freshness(max(0.0, now - completed_at), limit_seconds, snapshot is not None)


def stale_view(snapshot: Snapshot, freshness: Freshness) -> Snapshot:
    """`snapshot` as served once stale: every poll failed with STALE_REASON, no readings, no client or blocking rows.

    Counters (errors, folded series), last-success times and the snapshot's own time are kept, so the age of
    the data and what happened before stay visible."""
    message = f"{freshness.describe()}, over the {freshness.limit_seconds:g} s limit: its data is withheld"
    results = tuple(
        SourceResult(r.key, False, r.duration_seconds, r.finished_at, error_reason=STALE_REASON, error_message=message)
        for r in snapshot.results
    )
    return replace(
        snapshot,
        results=results,
        clients=(),
        blocking_requests=(),
        identities=(),
        own_by_broker=(),
        own_by_listener=(),
        broker_channels_read={},
        stale=True,
    )
