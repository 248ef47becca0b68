"""Infer a broker's Kafka release from the API version ranges it advertises in ApiVersions.

Method (documented in docs/metrics.md, "Broker release inference"): every release in the packaged
``api_versions_by_release.csv`` (the specs of 2.0.0 ... 4.4.0) is compared with the advertisement.

* A release is ruled out when the broker advertises an API key that release does not define, or a
  maximum version above that release's spec: a broker cannot serve what its release never had.
* Otherwise each API counts a mismatch when its maximum differs from the spec's (a spec maximum marked
  unstable is hidden by default, so spec max - 1 is expected there) and when its minimum differs (except Produce
  min 0 on 4.x, KAFKA-18659); each API the release requires but the broker does not advertise counts
  one too. Listener-scoped APIs that only ZooKeeper-mode or only KRaft brokers serve (2.8-3.9) and the
  telemetry APIs (71/72, hidden without a receiver) are not required.
* The release with the fewest mismatches wins; ties go to the oldest, so the answer is a lower bound:
  releases whose specs are identical (4.3.0 and 4.3.1; an x.y.0 and its later patch releases, which are
  not in the CSV) cannot be told apart, and the earliest is reported. Forwarded admin APIs intersected
  with an older controller, or a broker that advertises unstable versions, add mismatches; when the best
  release still has more than a tenth of the advertised APIs mismatched, the answer is ``unknown``
  (also for releases newer than the CSV, which advertise keys or versions it does not define).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from exporter.kafka_releases import table

UNKNOWN = "unknown"
_PRODUCE = 0


@dataclass(frozen=True, slots=True)
class _Spec:
    """What a broker of one release should advertise for one API key (names left out: renames are no evidence)."""

    min_version: int
    max_version: int
    unstable_top: bool
    required: bool


@dataclass(frozen=True, slots=True)
class _Release:
    name: str
    key: table.ReleaseKey
    apis: dict[int, _Spec]


def _spec(row: table.SpecRow) -> _Spec | None:
    if not row.served_by_brokers:
        return None  # removed, disabled (2.7.0's quorum APIs) or controller-only
    # Pre-2.8 rows have no scope (every API served); 2.8-3.9 split ZooKeeper and KRaft brokers.
    required = (
        not row.listeners or {"broker", "zkBroker"} <= row.listeners or row.release_key >= (4, 0, 0)
    ) and row.api_key not in table.TELEMETRY_KEYS
    spec = row.spec_range()
    return _Spec(spec.min_version, spec.max_version, row.latest_version_unstable, required)


@functools.cache
def _releases() -> tuple[_Release, ...]:
    releases = []
    for name in table.known_releases():
        specs = {row.api_key: _spec(row) for row in table.release_rows(name)}
        apis = {api_key: spec for api_key, spec in specs.items() if spec is not None}
        if apis:
            releases.append(_Release(name, table.release_key(name), apis))
    return tuple(releases)


def _mismatches(release: _Release, advertised: dict[int, tuple[int, int]]) -> int | None:
    count = 0
    for api_key, (low, high) in advertised.items():
        spec = release.apis.get(api_key)
        if spec is None or high > spec.max_version:
            return None
        # Brokers hide an unstable top version unless unstable.api.versions.enable=true (rare: a mismatch).
        expected_high = spec.max_version - 1 if spec.unstable_top else spec.max_version
        if high != expected_high:
            count += 1
        produce_caveat = api_key == _PRODUCE and release.key >= (4, 0, 0) and low == 0
        if low != spec.min_version and not produce_caveat:
            count += 1
    for api_key, spec in release.apis.items():
        hidden_when_unstable = spec.unstable_top and spec.max_version - 1 < spec.min_version
        if spec.required and api_key not in advertised and not hidden_when_unstable:
            count += 1
    return count


def infer_release(advertised: dict[int, tuple[int, int]]) -> str:
    """``advertised`` maps api key -> (min, max) as the broker sent them."""
    if not advertised:
        return UNKNOWN
    best: tuple[int, str] | None = None
    for release in _releases():
        score = _mismatches(release, advertised)
        if score is not None and (best is None or score < best[0]):
            best = (score, release.name)
    if best is None or best[0] > max(1, len(advertised) // 10):
        return UNKNOWN
    return best[1]
