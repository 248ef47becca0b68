"""Which request versions an upgrade target no longer serves: the one rule behind the Spark job's ``upgrade_impact``
and the exporter's ``kafka_client_upgrade_blocking_requests_total``.

A request blocks the upgrade to a release when that release does not serve its API at all (ZooKeeper-era APIs
removed in 4.0) or serves it only from a higher version. The floor is the release's *spec* minimum from
``api_versions_by_release.csv``, which already carries what 4.x kept or restored after KIP-896 marked it
deprecated (docs/kafka-facts/releases.md#kip-896-exceptions): Metadata v0-3, FindCoordinator v0, SaslHandshake v0,
DeleteGroups v0 and Produce v3-6 stay; JoinGroup v0-1 are back in 4.0.1. Produce is the trap: 4.x brokers
*advertise* min 0 (KAFKA-18659) but reject v0-2, and the spec says 3, so the floor is 3. Versions above the
release's maximum never block: clients negotiate down through ApiVersions.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from exporter.kafka_releases import table

#: The release fleets are judged against unless the configuration (``policy.target_release``) or the inventory
#: command (``--target-release``) names another.
DEFAULT_TARGET_RELEASE = "4.0.0"


#: The APIs only brokers send one another in ZooKeeper mode: the controller's LeaderAndIsr, StopReplica and
#: UpdateMetadata to every broker, and a broker's ControlledShutdown to the controller (their specs' listeners are
#: zkBroker, and controller for ControlledShutdown: no client listener serves them). 4.0 has none of them, but the
#: migration to KRaft ends them before the upgrade, so they never block it: a request log of a ZooKeeper-mode
#: cluster holds them under the controller's broker id.
ZOOKEEPER_MODE_BROKER_APIS = frozenset({4, 5, 6, 7})


@dataclass(frozen=True, slots=True)
class UpgradeTarget:
    """One release to upgrade to, with the spec range of every API it serves (an API it dropped has none)."""

    release: str
    served: Mapping[int, table.ApiRange]

    def blocks(self, api_key: int, version: int) -> bool:
        """Whether a request of ``api_key`` at ``version`` fails against this release (never one of the APIs only
        ZooKeeper-mode brokers send one another, which the migration to KRaft ends)."""
        if api_key in ZOOKEEPER_MODE_BROKER_APIS:
            return False
        served = self.served.get(api_key)
        return served is None or version < served.min_version


@functools.cache
def upgrade_target(release: str) -> UpgradeTarget:
    """The target ``release``; raises table.UnknownReleaseError (naming the known releases) for one not in the table."""
    return UpgradeTarget(release, MappingProxyType(table.ranges(release)))


def check_target_release(release: str) -> str:
    """``release`` when it is in the table; else table.UnknownReleaseError naming the known releases."""
    return upgrade_target(release).release
