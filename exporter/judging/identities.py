"""One cycle's live client software versions joined with each cluster's inventory: who is behind each of them.

Only pairs connected now are joined (no identity outlives its connections). Per cluster, the most active
identities become series, at most ``inventory.max_identity_series``; the others are counted, and stay on the status
page and in /api/clients. The brokers' own channels are in the request logs too (replica fetchers as `unknown`):
they are brokers, not clients running that software, so they are left out (docs/own-connections.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from exporter.kafka_releases.broker_channels import is_broker_channel_client_id
from exporter.snapshot import ClientIdentity, JudgedClient, LivePairIdentities, SourceResult, inventories


def _clients(identities: tuple[ClientIdentity, ...]) -> tuple[ClientIdentity, ...]:
    return tuple(identity for identity in identities if not is_broker_channel_client_id(identity.client_id))


def join_identities(
    results: Iterable[SourceResult], clients: Iterable[JudgedClient], max_series: Mapping[str, int]
) -> tuple[tuple[LivePairIdentities, ...], dict[str, int]]:
    """The live pairs of every cluster with an inventory, with their identities, most connections first; and per
    such cluster how many identities the series limit (`max_series`, per cluster) left out."""
    found_inventories = inventories(results)
    live: dict[tuple[str, str, str, str], int] = {}
    for row in clients:
        if row.cluster in found_inventories and row.connections > 0:
            key = (row.cluster, row.software_name, row.software_version, row.real_software_version)
            live[key] = live.get(key, 0) + row.connections
    pairs: list[LivePairIdentities] = []
    dropped: dict[str, int] = {}
    for cluster, inventory in sorted(found_inventories.items()):
        keys = sorted((k for k in live if k[0] == cluster), key=lambda k: (-live[k], k))
        found = [_clients(inventory.identities.get((name, real), ())) for _, name, _, real in keys]
        # The most active identities of the cluster become series; sorting is stable and each pair's identities
        # come most active first, so each pair's exported ones are a prefix of its list.
        ranked = sorted(
            ((index, identity.requests) for index, identities in enumerate(found) for identity in identities),
            key=lambda entry: -entry[1],
        )
        limit = max_series.get(cluster, 0)
        exported = [0] * len(keys)
        for index, _ in ranked[:limit]:
            exported[index] += 1
        dropped[cluster] = max(0, len(ranked) - limit)
        for (_, name, version, real), identities, count in zip(keys, found, exported, strict=True):
            pairs.append(
                LivePairIdentities(
                    cluster=cluster,
                    software_name=name,
                    software_version=version,
                    real_software_version=real,
                    connections=live[(cluster, name, version, real)],
                    identities=identities,
                    identities_total=inventory.identity_counts.get((name, real), 0)
                    - (len(inventory.identities.get((name, real), ())) - len(identities)),
                    exported=count,
                )
            )
    return tuple(pairs), dropped
