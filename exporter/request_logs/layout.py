"""The inventory's published layout, shared by the job that writes it and the exporter that reads it.

Kept free of Spark: the daemon imports it (``exporter.sources.inventory``) and never imports pyspark.
"""

from __future__ import annotations

PUBLICATION = "publication.json"
CURRENT_LINK = "current"
RUNS = "runs"
SEGMENTS = "state/segments"
LOCK = ".lock"
RUN_METADATA = "run.json"
STATE_MANIFEST = "state.json"
#: The layout of publication.json and state.json; a job that reads another refuses to extend its state, and the
#: exporter refuses to read a publication of another.
FORMAT = 1
#: The clients table as a CSV in the run's directory, and its columns in order (RFC 4180, header row).
CLIENTS_CSV = "clients.csv"
CLIENT_KEY = ("client_id", "principal", "source_host", "listener", "software_name", "software_version")
CLIENTS_COLUMNS = (*CLIENT_KEY, "first_seen", "last_seen", "requests", "connections")
#: The upgrade_impact table as a CSV in the run's directory: who blocks the upgrade to the job's target release (kind
#: ``api_version``: an API version it no longer serves, with the versions used) and who breaks the version policy
#: (kind ``policy``). The exporter reads the first kind to name who sends each blocking request.
UPGRADE_IMPACT_CSV = "upgrade_impact.csv"
UPGRADE_IMPACT_COLUMNS = (
    *CLIENT_KEY,
    "kind",
    "reason",
    "api_key",
    "api_name",
    "versions_used",
    "min_version_required",
    "requests",
    "detail",
)
KIND_API_VERSION = "api_version"
