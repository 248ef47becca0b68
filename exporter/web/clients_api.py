"""`GET /api/clients`: per cluster, each client software version connected now, its connections, and who runs it
per the cluster's inventory (all identities loaded, the most active first, beyond the series limit too); and the
brokers' own connections told apart from the clients' (exporter/judging/own_connections.py).

The document::

    ready                  false before the first collection cycle (then `clusters` is empty)
    stale                  whether the snapshot is served as stale (its clients and own connections withheld)
    clusters.<name>:
      inventory            null without an inventory; else up, error {reason, message}, run_id, finished,
                           log_time_range {first, last}, clients (rows of its clients table)
      clients[]            one per connected software name and real version, the most connections first:
        software_name, software_version
        connections        what the brokers' gauges count (kafka_client_connections), the brokers' own included
        brokers_own_connections   of those, the brokers' own channels' (kafka_client_inter_broker_connections)
        clients_only_connections  connections minus brokers_own_connections
        unverified_connections    of the clients-only ones, those that may be channels of brokers whose channels
                           could not be read (kafka_client_unverified_connections): neither alerted on nor hidden
        violating_connections     those that break the version policy: clients' for certain (what
                           kafka_client_policy_violation_connections counts), 0 when the version is allowed
        identities, identities_total   who runs it per the inventory (null identities: no inventory)
      brokers_own:
        channels_read      broker -> whether its own channels were read this cycle
                           (kafka_client_exporter_broker_channels_read)
        listeners[]        one per listener and software name/version under which the brokers' own channels, or
                           connections in doubt or not placeable on a broker, are counted:
          listener, software_name, software_version
          connections      the gauges' count there, summed over the brokers read
          own_connections  the brokers' own, placed on a broker or not
          channels[]       per channel (`replica-fetcher`, `txn-marker-channel`, ...; `title` for humans):
            channel, title, connections
            holders        broker -> connections it holds (the channels' source)
            by_broker      destination broker -> connections counted on it, where Kafka names the destination
                           (replica fetchers); null where it names none: counted per cluster and listener only
          unattributed_connections  clients' for certain, but no one broker can be named for them
          unverified_connections    may be the channels of the `unread_brokers`, or `not_named_yet`
          unread_brokers   the brokers whose own channels could not be read, when some connections are in doubt
          uncounted_from   the KRaft controllers whose migration connections to ZooKeeper-mode brokers (counted in
                           no MBean) may be among those in doubt
          not_named_yet    of those in doubt, `unknown` connections accepted in the last ten seconds or since the
                           last cycle, which may not have sent their ApiVersions yet (judged once they stayed
                           unnamed that long)
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from exporter.kafka_releases.broker_channels import BY_NAME
from exporter.snapshot import ChannelShare, InventoryReading, Snapshot
from exporter.sources.base import SourceName


def clients_document(snapshot: Snapshot | None) -> dict[str, Any]:
    if snapshot is None:
        return {"ready": False, "clusters": {}}
    clusters: dict[str, Any] = {
        cluster: {"inventory": None, "clients": {}, "brokers_own": _brokers_own(snapshot, cluster)}
        for cluster in snapshot.clusters
    }
    for result in snapshot.results:
        if result.key.source == SourceName.INVENTORY and result.key.cluster in clusters:
            reading = result.kept_reading_of(InventoryReading)
            clusters[result.key.cluster]["inventory"] = {
                "up": result.ok,
                "error": None if result.ok else {"reason": result.error_reason, "message": result.error_message},
                "run_id": reading.run_id if reading else None,
                "finished": reading.finished if reading else None,
                "log_time_range": {"first": reading.log_first, "last": reading.log_last} if reading else None,
                "clients": reading.rows if reading else None,
            }
    violating_pairs = set()
    for row in snapshot.clients:
        if row.connections > 0:
            pairs = clusters[row.cluster]["clients"]
            key = f"{row.software_name}\x00{row.real_software_version}"
            entry = pairs.setdefault(
                key,
                {
                    "software_name": row.software_name,
                    "software_version": row.real_software_version,
                    "connections": 0,
                    "brokers_own_connections": 0,
                    "clients_only_connections": 0,
                    "unverified_connections": 0,
                    "violating_connections": 0,
                    "identities": None,
                },
            )
            entry["connections"] += row.connections
            entry["clients_only_connections"] += row.connections
            entry["violating_connections"] += row.violating
            if row.violation is not None:
                violating_pairs.add((row.cluster, key))
    for on_listener in snapshot.own_by_listener:
        key = f"{on_listener.software_name}\x00{on_listener.software_version}"
        entry = clusters.get(on_listener.cluster, {}).get("clients", {}).get(key)
        if entry is None:
            continue
        entry["brokers_own_connections"] += on_listener.own_total
        entry["clients_only_connections"] -= on_listener.own_total
        entry["unverified_connections"] += on_listener.in_doubt
        if (on_listener.cluster, key) in violating_pairs:
            entry["violating_connections"] += on_listener.unattributed
    for pair in snapshot.identities:
        entry = clusters[pair.cluster]["clients"].get(f"{pair.software_name}\x00{pair.real_software_version}")
        if entry is not None:
            entry["identities_total"] = pair.identities_total
            entry["identities"] = [identity._asdict() for identity in pair.identities]
    for body in clusters.values():
        body["clients"] = sorted(body["clients"].values(), key=lambda e: (-e["connections"], e["software_name"]))
    return {"ready": True, "stale": snapshot.stale, "clusters": clusters}


def _brokers_own(snapshot: Snapshot, cluster: str) -> dict[str, Any]:
    # (listener, name, version) -> channel -> destination broker -> connections
    placed: dict[tuple[str, str, str], dict[str, dict[str, list[ChannelShare]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for at_broker in snapshot.own_by_broker:
        if at_broker.cluster == cluster:
            where = (at_broker.listener, at_broker.software_name, at_broker.software_version)
            for share in at_broker.own:
                placed[where][share.channel][at_broker.broker].append(share)
    listeners = []
    for on_listener in snapshot.own_by_listener:
        if on_listener.cluster != cluster:
            continue
        where = (on_listener.listener, on_listener.software_name, on_listener.software_version)
        channels = [
            _channel(channel, [s for shares in by_broker.values() for s in shares], by_broker)
            for channel, by_broker in sorted(placed.get(where, {}).items())
        ]
        unplaced: dict[str, list[ChannelShare]] = defaultdict(list)
        for share in on_listener.own_unplaced:
            unplaced[share.channel].append(share)
        channels += [_channel(channel, shares, None) for channel, shares in sorted(unplaced.items())]
        listeners.append(
            {
                "listener": on_listener.listener,
                "software_name": on_listener.software_name,
                "software_version": on_listener.software_version,
                "connections": on_listener.connections,
                "own_connections": on_listener.own_total,
                "channels": channels,
                "unattributed_connections": on_listener.unattributed,
                "unverified_connections": on_listener.in_doubt,
                "unread_brokers": list(on_listener.unread),
                "uncounted_from": list(on_listener.uncounted_from),
                "not_named_yet": on_listener.not_named_yet,
            }
        )
    return {
        "channels_read": {
            broker: read
            for (in_cluster, broker), read in sorted(snapshot.broker_channels_read.items())
            if in_cluster == cluster
        },
        "listeners": listeners,
    }


def _channel(
    channel: str, shares: list[ChannelShare], by_broker: dict[str, list[ChannelShare]] | None
) -> dict[str, Any]:
    holders: dict[str, int] = defaultdict(int)
    for share in shares:
        holders[share.holder] += share.connections
    spec = BY_NAME.get(channel)
    return {
        "channel": channel,
        "title": spec.title if spec is not None else channel,
        "connections": sum(holders.values()),
        "holders": dict(sorted(holders.items())),
        "by_broker": (
            None
            if by_broker is None
            else {broker: sum(s.connections for s in found) for broker, found in sorted(by_broker.items())}
        ),
    }
