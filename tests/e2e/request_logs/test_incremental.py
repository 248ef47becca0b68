"""``inventory --incremental`` against what real log directories do between runs: the active file grows (its last
line cut off mid-write), is rotated and gzipped while a new one starts, new rotated files and server.logs appear,
retention deletes old files. After every step the tables must be what one full run over every file the runs have
seen writes, byte for byte."""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from exporter.request_logs import publication
from exporter.request_logs.job import CSV_TABLES, InventoryOptions, InventorySummary, run_inventory
from tests.support.inventory_command import inventory_command, loopback_env

# The first test runs the job eighteen times in the worker's session: 160-190 s on a quiet machine, 570 s and more
# beside three workers' real clusters on two cores.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "samples" / "request-logs" / "double"
#: Columns that name a log file: a file deleted by retention is compared by its name, as the reference run reads
#: it from another directory.
FILE_COLUMNS = {"malformed": "file", "rejections": "broker_file"}


def sample_lines(broker: str, name: str = "kafka-request.log") -> list[str]:
    return (SAMPLES / broker / name).read_text(encoding="utf-8").splitlines(keepends=True)


def older(lines: list[str]) -> list[str]:
    """The same lines logged on an earlier day (for --forget-before)."""
    return [line.replace("[2026-11-23 ", "[2026-03-19 ", 1) for line in lines]


def log4j_roll(directory: Path, active_text: str) -> None:
    """What log4j's size-based rolling does to ``directory``: each backup .N renamed to .N+1 from the oldest, the
    active kafka-request.log to .1, and a new active file (here with ``active_text`` already in it)."""
    active = directory / "kafka-request.log"
    backups = sorted(int(p.suffix[1:]) for p in directory.glob("kafka-request.log.*") if p.suffix[1:].isdigit())
    for n in reversed(backups):
        (directory / f"kafka-request.log.{n}").rename(directory / f"kafka-request.log.{n + 1}")
    active.rename(directory / "kafka-request.log.1")
    active.write_text(active_text, encoding="utf-8")


def csvs(output: Path) -> dict[str, str]:
    return {name: (output / "current" / f"{name}.csv").read_text(encoding="utf-8") for name in CSV_TABLES}


def by_file_name(tables: dict[str, str]) -> dict[str, str]:
    """CSV text with every file URI cut to its name."""
    import csv
    import io

    named = {}
    for table, text in tables.items():
        rows = list(csv.reader(io.StringIO(text)))
        if table in FILE_COLUMNS and rows:
            column = rows[0].index(FILE_COLUMNS[table])
            for row in rows[1:]:
                row[column] = row[column].rsplit("/", 1)[-1]
        named[table] = "\n".join(",".join(row) for row in rows)
    return named


class Runs:
    def __init__(self, spark, tmp_path: Path) -> None:
        self.spark = spark
        self.tmp = tmp_path
        self.output = tmp_path / "inventory"
        self.count = 0

    def incremental(self, *inputs: Path, forget_before: int | None = None) -> InventorySummary:
        return run_inventory(
            self.spark,
            InventoryOptions(
                inputs=[str(p) for p in inputs],
                output=str(self.output),
                incremental=True,
                forget_before=forget_before,
            ),
        )

    def full(self, *inputs: Path) -> dict[str, str]:
        self.count += 1
        reference = self.tmp / f"full-{self.count}"
        run_inventory(self.spark, InventoryOptions(inputs=[str(p) for p in inputs], output=str(reference)))
        return csvs(reference)


def test_incremental_runs_equal_a_full_run_at_every_step(spark, tmp_path: Path, caplog) -> None:
    logs, deleted = tmp_path / "logs", tmp_path / "deleted"
    broker2, broker3 = logs / "broker-2", logs / "broker-3"
    broker2.mkdir(parents=True)
    deleted.mkdir()
    runs = Runs(spark, tmp_path)
    lines = older(sample_lines("broker-2"))
    active = broker2 / "kafka-request.log"

    # 1. The active file, its last line cut off mid-write: counted as cut off, as a full run would now.
    cut = len(lines[20]) // 2
    active.write_text("".join(lines[:20]) + lines[20][:cut], encoding="utf-8")
    first = runs.incremental(logs)
    assert first.files["read"] == 1 and first.malformed_lines == 1
    assert csvs(runs.output) == runs.full(logs)

    # 2. The line completed and more written: the file is read again whole, the cut-off line counted once, whole.
    with active.open("a", encoding="utf-8") as handle:
        handle.write(lines[20][cut:] + "".join(lines[21:30]))
    second = runs.incremental(logs)
    assert (second.files["reread"], second.lines, second.malformed_lines) == (1, 30, 0)
    assert csvs(runs.output) == runs.full(logs)

    # 3. Rotation: renamed with its hour and gzipped by an external tool; a new active file starts.
    rotated = broker2 / "kafka-request.log.2026-03-19-03.gz"
    rotated.write_bytes(gzip.compress(active.read_bytes()))
    active.unlink()
    active.write_text("".join(sample_lines("broker-2")[30:]), encoding="utf-8")
    third = runs.incremental(logs)
    assert (third.files["read_new"], third.files["reread"], third.lines) == (1, 1, 35)
    assert csvs(runs.output) == runs.full(logs)

    # 4. Another broker's rotated log and its server.log (a rejection) appear.
    broker3.mkdir()
    (broker3 / "kafka-request.log.2026-11-23-03.gz").write_bytes(
        gzip.compress((SAMPLES / "broker-3" / "kafka-request.log").read_bytes())
    )
    shutil.copy(SAMPLES / "broker-3" / "server.log", broker3 / "server.log")
    fourth = runs.incremental(logs)
    assert (fourth.files["read_new"], fourth.files["skipped_unchanged"], fourth.rejections) == (2, 2, 1)
    assert csvs(runs.output) == runs.full(logs)

    # 5. Retention deletes the rotated file: what it contributed stays (history).
    shutil.move(rotated, deleted / rotated.name)
    fifth = runs.incremental(logs)
    assert (fifth.files["read"], fifth.files["history_only"], fifth.lines) == (0, 1, 35 + 32)
    kept = csvs(runs.output)
    assert by_file_name(kept) == by_file_name(runs.full(logs, deleted))

    # 6. Nothing new: nothing read, and no new run either (its tables would be the published ones).
    pointer = (runs.output / publication.PUBLICATION).read_bytes()
    sixth = runs.incremental(logs)
    assert sixth.unchanged and sixth.files["read"] == 0 and csvs(runs.output) == kept
    assert (runs.output / publication.PUBLICATION).read_bytes() == pointer

    # 7. The user drops the deleted file's lines (all logged before 2026-03-20); files still present keep theirs.
    seventh = runs.incremental(logs, forget_before=20260320000000000)
    assert seventh.files["forgotten_now"] == 1 and str(seventh.time_range[0]).startswith("2026-11-23")
    assert csvs(runs.output) == runs.full(logs)

    # 8. A known file rewritten shorter in place: read again whole, with a warning naming it.
    content = active.read_text(encoding="utf-8").splitlines(keepends=True)
    active.write_text("".join(content[:-1]), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="exporter.request_logs"):
        eighth = runs.incremental(logs)
    assert eighth.files["reread"] == 1
    assert any("shrank" in r.getMessage() and str(active) in r.getMessage() for r in caplog.records)
    assert csvs(runs.output) == runs.full(logs)

    # What a reader sees: one publication, its run metadata beside the tables, the previous run still there.
    published = json.loads((runs.output / publication.PUBLICATION).read_text(encoding="utf-8"))
    assert published["run_dir"] == f"runs/{published['run_id']}" and published["incremental"] is True
    assert (runs.output / "current").resolve() == (runs.output / published["run_dir"]).resolve()
    assert published["log_time_range"]["last"].startswith("2026-11-23 03:18:08")
    assert sorted(p.name for p in (runs.output / publication.RUNS).iterdir()) == sorted(
        [published["run_id"], published["previous_run_id"]]
    )


def test_a_copy_and_a_rotated_file_beside_its_gzip_are_read_once(spark, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    plain = logs / "kafka-request.log.2026-11-23-03"
    shutil.copy(SAMPLES / "broker-2" / "kafka-request.log", plain)
    (logs / f"{plain.name}.gz").write_bytes(gzip.compress(plain.read_bytes()))  # gzip still running
    summary = Runs(spark, tmp_path).incremental(logs)
    assert (summary.files["read"], summary.files["skipped_duplicate"], summary.lines) == (1, 1, 35)


def test_output_of_a_full_run_is_not_extended(spark, tmp_path: Path) -> None:
    runs = Runs(spark, tmp_path)
    run_inventory(spark, InventoryOptions(inputs=[str(SAMPLES / "broker-2")], output=str(runs.output)))
    before = (runs.output / publication.PUBLICATION).read_bytes()
    with pytest.raises(publication.PublicationError, match=r"holds a full run's tables.*new --output directory"):
        runs.incremental(SAMPLES / "broker-2")
    other = Runs(spark, tmp_path / "other")
    other.incremental(SAMPLES / "broker-2")
    with pytest.raises(publication.PublicationError, match=r"state of incremental runs.*run with --incremental"):
        run_inventory(spark, InventoryOptions(inputs=[str(SAMPLES / "broker-2")], output=str(other.output)))
    assert (runs.output / publication.PUBLICATION).read_bytes() == before


def test_a_file_deleted_between_listing_and_reading_is_read_when_seen_again(spark, tmp_path: Path, monkeypatch) -> None:
    from exporter.request_logs import job

    logs = tmp_path / "logs"
    for broker in ("broker-2", "broker-3"):
        shutil.copytree(SAMPLES / broker, logs / broker)
    victim, aside = logs / "broker-3" / "kafka-request.log", tmp_path / "aside"
    listed = job.list_input_files

    def retention_right_after_the_listing(*args):
        files = listed(*args)
        victim.rename(aside)
        return files

    monkeypatch.setattr(job, "list_input_files", retention_right_after_the_listing)
    runs = Runs(spark, tmp_path)
    first = runs.incremental(logs)
    assert (first.files["read"], first.files["skipped_unreadable"], first.lines) == (2, 1, 35)
    monkeypatch.undo()
    aside.rename(victim)  # it was being moved, not deleted: the next run finds it and reads it, once
    second = runs.incremental(logs)
    assert (second.files["read_new"], second.files["skipped_unchanged"], second.lines) == (1, 2, 35 + 32)
    assert csvs(runs.output) == runs.full(logs)


def test_a_rotation_between_listing_and_reading_is_read_again_and_every_line_counted_once(
    spark, tmp_path: Path, monkeypatch, caplog
) -> None:
    """log4j's size-based rolling renames kafka-request.log to .1 and .1 to .2 while a run reads: each path then
    holds another file than the one listed. Recorded under the listed files' identities, the lines of one file
    were counted twice and those of another never (the real brokers' rolling-upgrade story: 5,061 lines where the
    logs held 5,048)."""
    from exporter.request_logs import job

    logs = tmp_path / "logs"
    broker = logs / "broker-2"
    broker.mkdir(parents=True)
    lines = sample_lines("broker-2")
    oldest, active = broker / "kafka-request.log.1", broker / "kafka-request.log"
    oldest.write_text("".join(lines[:10]), encoding="utf-8")
    active.write_text("".join(lines[10:20]), encoding="utf-8")
    listed = job.list_input_files
    rolled: list[int] = []

    def log4j_rolls_right_after_the_first_listing(*args):
        files = listed(*args)
        if not rolled:
            log4j_roll(broker, "".join(lines[20:]))
            rolled.append(len(files))
        return files

    monkeypatch.setattr(job, "list_input_files", log4j_rolls_right_after_the_first_listing)
    runs = Runs(spark, tmp_path)
    with caplog.at_level(logging.WARNING, logger="exporter.request_logs"):
        first = runs.incremental(logs)
    assert rolled == [2]
    warned = [r.getMessage() for r in caplog.records if "renamed while this run read" in r.getMessage()]
    assert len(warned) == 1 and str(oldest.name) in warned[0] and "listing and reading again" in warned[0]
    assert (first.files["read_new"], first.lines) == (3, 35)
    monkeypatch.undo()
    assert csvs(runs.output) == runs.full(logs)
    # The state names each file by what it holds: nothing is read again, nothing is missing.
    second = runs.incremental(logs)
    assert second.unchanged and second.files["skipped_unchanged"] == 3
    # One more roll, as log4j makes it: each file is recognised under its new name, only the new one is read.
    log4j_roll(broker, "".join(older(lines[:5])))
    third = runs.incremental(logs)
    assert (third.files["read_new"], third.files["skipped_unchanged"], third.lines) == (1, 3, 40)
    assert csvs(runs.output) == runs.full(logs)


def test_files_rotating_under_every_attempt_are_left_to_the_next_run_and_the_rest_is_published(
    spark, tmp_path: Path, monkeypatch, caplog
) -> None:
    """A busy broker's size-based rolling can rename its files during every read of a run: the run used to fail
    with nothing published after three attempts (the real brokers' rolling-upgrade story did, in CI). Now the
    reads that stood are kept, each attempt reads only what moved, and what still moves is left to the next run."""
    from exporter.request_logs import job

    logs = tmp_path / "logs"
    busy, quiet = logs / "broker-2", logs / "broker-3"
    busy.mkdir(parents=True)
    shutil.copytree(SAMPLES / "broker-3", quiet)
    quiet_lines = len(sample_lines("broker-3"))
    lines = sample_lines("broker-2")
    chunks = [lines[:8], lines[8:16], lines[16:24], lines[24:]]
    active = busy / "kafka-request.log"
    active.write_text("".join(chunks[0]), encoding="utf-8")
    listed = job.list_input_files
    listings: list[int] = []

    def log4j_rolls_right_after_every_listing(*args):
        files = listed(*args)
        log4j_roll(busy, "".join(chunks[len(listings) + 1]))
        listings.append(len(files))
        return files

    monkeypatch.setattr(job, "list_input_files", log4j_rolls_right_after_every_listing)
    runs = Runs(spark, tmp_path)
    with caplog.at_level(logging.WARNING, logger="exporter.request_logs"):
        first = runs.incremental(logs)
    monkeypatch.undo()
    # The quiet broker's two files are read once, in the first attempt; the busy one's move under every read.
    assert listings == [3, 4, 5]
    assert (first.files["read_new"], first.files["skipped_unchanged"], first.files["skipped_renamed_while_read"]) == (
        2,
        0,
        3,
    )
    assert first.lines == quiet_lines
    warned = [r.getMessage() for r in caplog.records if "renamed while this run read" in r.getMessage()]
    assert len(warned) == 3 and "left for the next run" in warned[-1]
    assert "broker-2/kafka-request.log" in warned[-1]
    # The next run reads the four busy files once each, and no line is missing or counted twice.
    second = runs.incremental(logs)
    assert (second.files["read_new"], second.files["skipped_unchanged"], second.lines) == (4, 2, quiet_lines + 35)
    assert csvs(runs.output) == runs.full(logs)


def test_a_rotation_that_leaves_the_active_path_empty_is_read_again(spark, tmp_path: Path, monkeypatch) -> None:
    """log4j opens the new kafka-request.log empty: a run that reads the path in that instant gets no line from a
    file listed with content. The real brokers' rolling-upgrade story met it ('lines of .../kafka-request.log were
    read but not attributed to the file'), and the run failed."""
    from exporter.request_logs import job

    broker = tmp_path / "logs" / "broker-2"
    broker.mkdir(parents=True)
    lines = sample_lines("broker-2")
    active = broker / "kafka-request.log"
    active.write_text("".join(lines), encoding="utf-8")
    listed = job.list_input_files
    rolled: list[bool] = []

    def log4j_rolls_right_after_the_first_listing(*args):
        files = listed(*args)
        if not rolled:
            active.rename(broker / "kafka-request.log.1")
            active.write_bytes(b"")
            rolled.append(True)
        return files

    monkeypatch.setattr(job, "list_input_files", log4j_rolls_right_after_the_first_listing)
    runs = Runs(spark, tmp_path)
    first = runs.incremental(tmp_path / "logs")
    assert rolled == [True]
    assert (first.files["read_new"], first.files["skipped_empty"], first.lines) == (1, 1, len(lines))
    monkeypatch.undo()
    assert csvs(runs.output) == runs.full(tmp_path / "logs")


def test_each_brokers_log_kind_is_told_from_its_lines_and_published_with_what_it_cannot_tell(
    spark, tmp_path: Path
) -> None:
    """Three brokers, three kinds: a full DEBUG log, the filtered one broker-config/ ships (ApiVersions lines and
    INFO) and an INFO-only one. A full run and incremental runs (a second one reads only the filtered broker's new
    file) tell each directory's kind alike, in run.json (which the exporter reads) and the report."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLES / "broker-2", logs / "full")
    info_lines = (REPO / "samples" / "request-logs-info-only" / "broker-2" / "kafka-request.log").read_text()
    (logs / "info").mkdir()
    (logs / "info" / "kafka-request.log").write_text(info_lines, encoding="utf-8")
    api_versions = [line for line in sample_lines("broker-2") if '"requestApiKey":18,' in line]
    assert api_versions and len(api_versions) < len(sample_lines("broker-2"))
    (logs / "filtered").mkdir()
    (logs / "filtered" / "kafka-request.log.1").write_text("".join(api_versions), encoding="utf-8")
    expected = {"filtered": "identities_and_info", "full": "full_debug", "info": "info_only"}

    def kinds(output: Path) -> dict[str, str]:
        published = json.loads((output / "current" / publication.RUN_METADATA).read_text())
        return {entry["directory"].rsplit("/", 1)[-1]: entry["kind"] for entry in published["request_logs"]}

    runs = Runs(spark, tmp_path)
    runs.incremental(logs)
    assert kinds(runs.output) == expected
    # The legacy client's Produce v2 again an hour later, not the info broker's file itself: a file of the same
    # content is read once, wherever it is.
    [info_line] = info_lines.splitlines(keepends=True)
    later = info_line.replace("[2026-11-23 03:", "[2026-11-23 04:", 1)
    assert later != info_line
    (logs / "filtered" / "kafka-request.log").write_text(later, encoding="utf-8")
    second = runs.incremental(logs)
    assert second.files["read_new"] == 1 and kinds(runs.output) == expected
    runs.full(logs)
    assert kinds(tmp_path / f"full-{runs.count}") == expected
    published = json.loads((runs.output / "current" / publication.RUN_METADATA).read_text())
    [filtered] = [e for e in published["request_logs"] if e["directory"].endswith("/filtered")]
    assert filtered["files"] == 2 and filtered["lines"] == {
        "identity_debug": len(api_versions),
        "other_debug": 0,
        "info": 1,
    }
    assert any("request counts per API" in text for text in filtered["cannot_tell"])
    report = (runs.output / "current" / "report.html").read_text()
    assert "What the request logs could tell" in report and "identities + INFO" in report and "INFO only" in report


def test_a_second_run_on_the_same_output_refuses_naming_the_first(tmp_path: Path) -> None:
    output = tmp_path / "inventory"
    with publication.output_lock(str(output)):
        done = subprocess.run(
            inventory_command("--incremental", "--input", str(SAMPLES), "--output", str(output)),
            capture_output=True,
            text=True,
            timeout=240,
            env=loopback_env(),
            check=False,
        )
    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert f"another inventory run is writing this output (pid {os.getpid()} on" in last
    assert not (output / publication.PUBLICATION).exists()


def test_a_killed_run_leaves_the_last_publication_and_the_next_run_is_correct(spark, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLES / "broker-2", logs / "broker-2")
    runs = Runs(spark, tmp_path)
    runs.incremental(logs)
    published = (runs.output / publication.PUBLICATION).read_bytes()
    shutil.copytree(SAMPLES / "broker-3", logs / "broker-3")
    run = subprocess.Popen(
        inventory_command("--incremental", "--input", str(logs), "--output", str(runs.output)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=loopback_env(),
    )
    try:
        # Killed once it has written part of its state: the moment a half-done run is most dangerous.
        deadline = time.monotonic() + 180
        segments = runs.output / publication.SEGMENTS
        while time.monotonic() < deadline and len(list(segments.iterdir())) < 2:
            assert run.poll() is None, "the run ended before it could be killed"
            time.sleep(0.05)
        run.send_signal(signal.SIGKILL)
    finally:
        run.wait(timeout=30)
    assert (runs.output / publication.PUBLICATION).read_bytes() == published
    after = runs.incremental(logs)
    assert after.files["read_new"] == 2 and after.files["skipped_unchanged"] == 1
    assert csvs(runs.output) == runs.full(logs)
    assert len(list(segments.iterdir())) == 2  # the killed run's segment was removed


#: Root reads any file; without these capabilities it is held to the permission bits like any user.
AS_A_USER = (
    ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]
    if os.geteuid() == 0
    else []
)


def test_an_unreadable_input_stops_the_run_before_anything_is_written(spark, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLES / "broker-2", logs / "broker-2")
    runs = Runs(spark, tmp_path)
    runs.incremental(logs)
    published = (runs.output / publication.PUBLICATION).read_bytes()
    unreadable = logs / "broker-2" / "kafka-request.log.2026-11-23-02"
    shutil.copy(SAMPLES / "broker-2" / "kafka-request.log", unreadable)
    unreadable.chmod(0)
    done = subprocess.run(
        [*AS_A_USER, *inventory_command("--incremental", "--input", str(logs), "--output", str(runs.output))],
        capture_output=True,
        text=True,
        timeout=240,
        env=loopback_env(),
        check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kafka-client-exporter inventory: cannot read file:{unreadable}: "), last
    assert "Permission denied" in last
    from exporter.request_logs.input_files import InputError

    with pytest.raises(InputError, match=r"--input .*/missing: no such file or directory"):
        runs.incremental(tmp_path / "missing")
    assert (runs.output / publication.PUBLICATION).read_bytes() == published
    assert len(list((runs.output / publication.RUNS).iterdir())) == 1
    assert len(list((runs.output / publication.SEGMENTS).iterdir())) == 1
