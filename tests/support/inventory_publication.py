"""An inventory publication written as the job leaves one (a run's clients.csv, then publication.json), for tests
that need the exporter to name who runs a client without running the Spark job."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path

from exporter.request_logs.layout import CLIENTS_COLUMNS, FORMAT


def spark_csv_line(row: Sequence[str | None]) -> str:
    """A row as the job's CSV writer (Spark) gives it: a null is an empty field, an empty string is "" (Python's
    csv.writer writes both as an empty field)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(["\0" if value == "" else value for value in row])
    return out.getvalue().replace("\0", '""')


def publish(directory: Path, run_id: str, rows: list[list[str]] | list[list[str | None]], **pointer: object) -> None:
    """A publication as the job leaves it: the run's directory with clients.csv (rows in CLIENTS_COLUMNS' order),
    then publication.json."""
    run_dir = directory / "runs" / run_id
    run_dir.mkdir(parents=True)
    with (run_dir / "clients.csv").open("w", encoding="utf-8", newline="") as handle:
        handle.write(spark_csv_line(CLIENTS_COLUMNS))
        handle.writelines(spark_csv_line(row) for row in rows)
    document = {
        "format": FORMAT,
        "run_id": run_id,
        "run_dir": f"runs/{run_id}",
        "finished": "2026-01-01T12:00:00+00:00",
        "log_time_range": {"first": "2026-01-01 10:00:00.000", "last": "2026-01-01 11:00:00.000"},
        **pointer,
    }
    (directory / "publication.tmp").write_text(json.dumps(document), encoding="utf-8")
    os.replace(directory / "publication.tmp", directory / "publication.json")
