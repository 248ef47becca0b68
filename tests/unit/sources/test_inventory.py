"""The inventory source reads the job's latest whole publication, keeps the last good one through a bad one, and
holds at most max_loaded_identities rows; the join exports identities of live pairs only, under the series limit."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.config.settings import ClusterInventory
from exporter.judging.identities import join_identities
from exporter.request_logs.layout import UPGRADE_IMPACT_COLUMNS
from exporter.snapshot import CLUSTER_BROKER, InventoryReading, JudgedClient, Reading, SourceKey, SourceResult
from exporter.sources.base import Reason, SourceError
from exporter.sources.inventory import InventorySource, load_publication
from tests.support.inventory_publication import publish, spark_csv_line

CLIENTS = [
    ["orders", "User:CN=orders", "10.0.0.5", "SSL", "apache-kafka-java", "3.9.0", "2026-01-01T10:00:00.000",
     "2026-01-01T11:00:00.000", "120", "3"],
    ['weird,"quoted",id', "User:ANONYMOUS", "10.0.0.6", "PLAINTEXT", "librdkafka", "1.6.0", "2026-01-01T10:00:00.000",
     "2026-01-01T10:30:00.000", "40", "1"],
    ["", "User:ANONYMOUS", "10.0.0.7", "PLAINTEXT", "librdkafka", "1.6.0", "2026-01-01T10:00:00.000",
     "2026-01-01T10:30:00.000", "7", "1"],
    ["billing", "User:CN=billing", "10.0.0.8", "SSL", "apache-kafka-java", "3.9.0", "2026-01-01T10:05:00.000",
     "2026-01-01T10:55:00.000", "300", "2"],
]  # fmt: skip


async def _poll(source: InventorySource) -> Reading | None:
    (poll,) = source.polls({})
    assert poll.broker == CLUSTER_BROKER
    return await poll.read()


def read(source: InventorySource) -> InventoryReading:
    reading = asyncio.run(_poll(source))
    assert isinstance(reading, InventoryReading)
    return reading


def failure(source: InventorySource) -> SourceError:
    with pytest.raises(SourceError) as raised:
        asyncio.run(_poll(source))
    return raised.value


def test_a_publication_is_read_with_its_identities_most_active_first(tmp_path: Path) -> None:
    publish(tmp_path, "r1", CLIENTS)
    reading = load_publication(tmp_path, max_loaded=100)
    assert reading.run_id == "r1" and reading.rows == 4 and reading.not_loaded == 0
    assert reading.newest_line_timestamp == 1767265200.0  # 2026-01-01 11:00:00 read as UTC
    java = reading.identities[("apache-kafka-java", "3.9.0")]
    assert [i.client_id for i in java] == ["billing", "orders"]
    rdkafka = reading.identities[("librdkafka", "1.6.0")]
    assert [(i.client_id, i.requests) for i in rdkafka] == [('weird,"quoted",id', 40), ("", 7)]


def test_a_null_and_an_empty_client_id_are_told_apart(tmp_path: Path) -> None:
    # As the job writes them: `,User:...` for a client that sent no clientId, `"",User:...` for an empty one.
    rows = [[client_id, "User:ANONYMOUS", "10.0.0.7", "PLAINTEXT", "kafkajs", "unknown", "2026-01-01T10:00:00.000",
             "2026-01-01T10:30:00.000", str(requests), "1"]
            for client_id, requests in ((None, 9), ("", 8), ("multi\nline", 7), (None, 6))]  # fmt: skip
    publish(tmp_path, "r1", rows)
    assert (tmp_path / "runs/r1/clients.csv").read_text().splitlines()[1:3] == [
        ",User:ANONYMOUS,10.0.0.7,PLAINTEXT,kafkajs,unknown,2026-01-01T10:00:00.000,2026-01-01T10:30:00.000,9,1",
        '"",User:ANONYMOUS,10.0.0.7,PLAINTEXT,kafkajs,unknown,2026-01-01T10:00:00.000,2026-01-01T10:30:00.000,8,1',
    ]
    reading = load_publication(tmp_path, max_loaded=100)
    assert [i.client_id for i in reading.identities[("kafkajs", "unknown")]] == [None, "", "multi\nline", None]


def impact(client_id: str | None, kind: str, api_name: str = "", versions: str = "") -> list[str | None]:
    """An upgrade_impact row of a legacy producer (or of a replica fetcher, which only breaks the policy)."""
    api = [None, None, None, None] if kind == "policy" else ["0", api_name, versions, "3"]
    return [client_id, "User:ANONYMOUS", "10.0.0.9", "PLAINTEXT", "unknown", "unknown", kind,
            "unknown_software" if kind == "policy" else "version_removed", api[0], api[1], api[2], api[3], "12",
            "detail"]  # fmt: skip


def test_who_sent_each_blocking_request_is_read_from_upgrade_impact(tmp_path: Path) -> None:
    # What a real three-broker cluster's logs give: the replica fetchers send no ApiVersions, so they are `unknown`
    # like the 0.10 producers, but only the producers sent Produce v2 (and one of them v1 too).
    publish(tmp_path, "r1", CLIENTS)
    rows = [
        impact("broker-2-fetcher-0", "policy"),
        impact("legacy-0.10.2", "api_version", "Produce", "2"),
        impact(None, "api_version", "Produce", "1,2"),
        impact("", "api_version", "Produce", "2"),
    ]
    with (tmp_path / "runs/r1/upgrade_impact.csv").open("w", encoding="utf-8", newline="") as handle:
        handle.write(spark_csv_line(UPGRADE_IMPACT_COLUMNS))
        handle.writelines(spark_csv_line(row) for row in rows)
    senders = load_publication(tmp_path, max_loaded=100).blocking_senders
    who = ("User:ANONYMOUS", "10.0.0.9", "PLAINTEXT")
    assert dict(senders) == {
        ("unknown", "unknown", "Produce", "2"): {("legacy-0.10.2", *who), (None, *who), ("", *who)},
        ("unknown", "unknown", "Produce", "1"): {(None, *who)},
    }


def test_the_exporter_reads_upgrade_impact_as_the_job_writes_it() -> None:
    from exporter.request_logs.upgrade import IMPACT_COLUMNS, KIND_API

    assert (tuple(IMPACT_COLUMNS), KIND_API) == (UPGRADE_IMPACT_COLUMNS, "api_version")


def test_a_run_without_upgrade_impact_names_no_sender_and_a_damaged_one_is_invalid(tmp_path: Path) -> None:
    publish(tmp_path, "r1", CLIENTS)
    assert not load_publication(tmp_path, max_loaded=100).blocking_senders
    (tmp_path / "runs/r1/upgrade_impact.csv").write_text("client_id,who\n", encoding="utf-8")
    source = InventorySource("prod", ClusterInventory(path=tmp_path))
    assert failure(source).reason == Reason.INVALID_DATA


def test_memory_holds_the_most_active_rows_only_and_counts_the_rest(tmp_path: Path) -> None:
    publish(tmp_path, "r1", CLIENTS)
    reading = load_publication(tmp_path, max_loaded=2)
    assert reading.rows == 4 and reading.not_loaded == 2
    kept = [i.client_id for identities in reading.identities.values() for i in identities]
    assert set(kept) == {"billing", "orders"} and len(kept) == 2
    assert reading.identity_counts == {("apache-kafka-java", "3.9.0"): 2, ("librdkafka", "1.6.0"): 2}


def test_a_reading_formats_without_its_identities(tmp_path: Path) -> None:
    # asyncio formats the result of a finished task; with 100,000 identities that was a 60 MB string.
    publish(tmp_path, "r1", CLIENTS * 500)
    text = repr(load_publication(tmp_path, max_loaded=10_000))
    assert "run_id='r1'" in text and "rows=2000" in text
    assert "billing" not in text and len(text) < 1000


@pytest.mark.parametrize(
    ("damage", "reason", "says"),
    [
        (lambda d: None, Reason.MISSING, "no inventory published in"),
        (lambda d: (d / "publication.json").write_text("{half", encoding="utf-8"), Reason.INVALID_DATA, "not JSON"),
        (
            lambda d: (d / "publication.json").write_text('{"format": 99, "run_id": "x", "run_dir": "runs/x"}'),
            Reason.INVALID_DATA,
            "has format 99; this exporter reads format 1",
        ),
        (
            lambda d: (d / "publication.json").write_text('{"format": 1, "run_id": "x", "run_dir": "../../etc"}'),
            Reason.INVALID_DATA,
            "names a run outside",
        ),
        (
            lambda d: (d / "publication.json").write_text('{"format": 1, "run_id": "x", "run_dir": "runs/x"}'),
            Reason.INVALID_DATA,
            "clients.csv is missing: the run was written with --no-csv",
        ),
        (lambda d: (d / "publication.json").mkdir(), Reason.UNREADABLE, "cannot read"),
    ],
    ids=["missing", "garbage", "future-format", "outside", "no-csv", "unreadable"],
)
def test_what_cannot_be_read_is_said_with_a_reason(tmp_path: Path, damage, reason: Reason, says: str) -> None:
    damage(tmp_path)
    error = failure(InventorySource("prod", ClusterInventory(path=tmp_path)))
    assert error.reason == reason and says in str(error) and error.kept is None


def test_a_bad_row_names_its_line(tmp_path: Path) -> None:
    publish(tmp_path, "r1", [*CLIENTS[:2], [*CLIENTS[2][:8], "many", "1"]])
    error = failure(InventorySource("prod", ClusterInventory(path=tmp_path)))
    assert error.reason == Reason.INVALID_DATA
    assert "clients.csv line 4: requests and connections must be whole numbers" in str(error)


def test_the_last_good_publication_is_kept_through_a_bad_one_and_a_new_one_replaces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []

    def counted_load(directory: Path, max_loaded: int) -> InventoryReading:
        loads.append(json.loads((directory / "publication.json").read_text())["run_id"])
        return load_publication(directory, max_loaded)

    monkeypatch.setattr("exporter.sources.inventory.load_publication", counted_load)
    source = InventorySource("prod", ClusterInventory(path=tmp_path))
    assert failure(source).reason == Reason.MISSING  # before the job's first run
    publish(tmp_path, "r1", CLIENTS)
    first = read(source)
    assert read(source) is first  # nothing new: not parsed again
    (tmp_path / "publication.json").write_text('{"format": 1, "run_id": "r2", "run_dir": "runs/r2"}')
    error = failure(source)
    assert error.reason == Reason.INVALID_DATA and error.kept is first
    assert str(failure(source)) == str(error) and "runs/r2/clients.csv is missing" in str(error)
    publish(tmp_path, "r3", CLIENTS[:1])
    assert read(source).run_id == "r3"
    assert loads == ["r1", "r2", "r3"]  # each publication parsed once: unchanged ones, valid or not, are not again


def judged(name: str, version: str, connections: int, shown: str | None = None) -> JudgedClient:
    return JudgedClient("prod", "1", "SSL", "0", name, shown or version, version, connections)


def test_only_live_pairs_are_joined_and_the_series_limit_keeps_the_most_active(tmp_path: Path) -> None:
    publish(tmp_path, "r1", CLIENTS)
    reading = load_publication(tmp_path, max_loaded=100)
    results = [SourceResult(SourceKey("prod", CLUSTER_BROKER, "inventory"), True, 0.0, 0.0, reading=reading)]
    clients = [judged("librdkafka", "1.6.0", 2), judged("kafka-python", "2.0.2", 1), judged("librdkafka", "1.6.0", 1)]
    pairs, dropped = join_identities(results, clients, {"prod": 1})
    assert [(p.software_name, p.connections, p.identities_total, p.exported) for p in pairs] == [
        ("librdkafka", 3, 2, 1),  # live, in the inventory: its most active identity is the one series
        ("kafka-python", 1, 0, 0),  # live, not in the inventory
    ]
    assert pairs[0].identities[0].client_id == 'weird,"quoted",id' and dropped == {"prod": 1}
    # apache-kafka-java 3.9.0 is in the inventory but not connected: no identity outlives its connections.
    folded, _ = join_identities(results, [judged("apache-kafka-java", "3.9.0", 4, shown="other")], {"prod": 10})
    assert [(p.software_version, p.real_software_version, p.exported) for p in folded] == [("other", "3.9.0", 2)]
    kept = SourceResult(
        SourceKey("prod", CLUSTER_BROKER, "inventory"), False, 0.0, 0.0, error_reason="invalid_data", reading=reading
    )
    assert join_identities([kept], clients, {"prod": 5})[0][0].exported == 2  # the last good one still joins


def test_the_daemon_reads_the_inventory_without_importing_spark() -> None:
    probe = "import sys, exporter.sources.inventory, exporter.cli; print('pyspark' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


def test_each_directorys_log_kind_is_read_and_an_unknown_or_damaged_entry_does_not_fail_the_reading(
    tmp_path: Path,
) -> None:
    from exporter.request_logs.log_kinds import LogKind

    entries = [
        {"directory": "file:/logs/b1", "kind": "identities_and_info"},
        {"directory": "file:/logs/b2", "kind": "a kind of a later version"},
        {"kind": "full_debug"},
        "not an entry",
    ]
    publish(tmp_path, "r1", CLIENTS, request_logs=entries)
    assert load_publication(tmp_path, 100).request_logs == (
        ("file:/logs/b1", LogKind.IDENTITIES_AND_INFO),
        ("file:/logs/b2", LogKind.UNKNOWN),
    )
    publish(tmp_path / "older", "r1", CLIENTS)
    assert load_publication(tmp_path / "older", 100).request_logs == ()
