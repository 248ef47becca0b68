"""`GET /api/clients`: per cluster, each client software version connected now, its connections, and who runs it
per the cluster's inventory (all identities loaded, the most active first, beyond the series limit too)."""

from __future__ import annotations

from typing import Any

from exporter.snapshot import InventoryReading, Snapshot
from exporter.sources.base import SourceName


def clients_document(snapshot: Snapshot | None) -> dict[str, Any]:
    if snapshot is None:
        return {"ready": False, "clusters": {}}
    clusters: dict[str, Any] = {cluster: {"inventory": None, "clients": {}} for cluster in snapshot.clusters}
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
                    "identities": None,
                },
            )
            entry["connections"] += row.connections
    for pair in snapshot.identities:
        entry = clusters[pair.cluster]["clients"].get(f"{pair.software_name}\x00{pair.real_software_version}")
        if entry is not None:
            entry["identities_total"] = pair.identities_total
            entry["identities"] = [identity._asdict() for identity in pair.identities]
    for body in clusters.values():
        body["clients"] = sorted(body["clients"].values(), key=lambda e: (-e["connections"], e["software_name"]))
    return {"ready": True, "stale": snapshot.stale, "clusters": clusters}
