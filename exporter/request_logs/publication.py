"""The output directory's layout, and how a run is published there all at once.

::

    OUT/publication.json     the published run: its directory and metadata (replaced atomically, by rename)
    OUT/current -> runs/ID   the same, as a symbolic link (local directories only)
    OUT/runs/ID/             one run's tables (Parquet + CSV), report.html, run.json, state.json (incremental)
    OUT/state/segments/ID/   the per-file aggregates an incremental run read (immutable; state.json lists them)
    OUT/.lock                held while a run writes (an flock, so a killed run leaves no stale lock)

A run writes everything under new names and then replaces ``publication.json``: a reader that follows it sees a
whole run, and the previous run stays in place until the next publication, so a reader that has just read the
pointer can still read the directory it names. A run that fails or is killed before the rename leaves the last
publication and its state as they were; what it wrote is removed by the next run.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

from pyspark.sql import SparkSession

from exporter import __version__
from exporter.request_logs.layout import (  # noqa: F401  # re-exported: the job and its tests name them here
    CURRENT_LINK,
    FORMAT,
    LOCK,
    PUBLICATION,
    RUN_METADATA,
    RUNS,
    SEGMENTS,
    STATE_MANIFEST,
)


class PublicationError(Exception):
    """The output cannot be written or extended; the message says why and what to do."""


def is_local(output: str) -> bool:
    return urlparse(output).scheme in ("", "file")


def local_path(output: str) -> Path:
    parsed = urlparse(output)
    return Path(parsed.path if parsed.scheme == "file" else output)


def join(output: str, *parts: str) -> str:
    return "/".join([output.rstrip("/"), *parts])


def new_run_id() -> str:
    """Sortable by time; the random suffix keeps two runs in the same second apart."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@contextlib.contextmanager
def output_lock(output: str) -> Iterator[None]:
    """Held for a whole run. A second run on the same output refuses, naming the first; the kernel drops the lock
    of a killed run. Only for local (or mounted) directories: object stores have no lock to take."""
    if not is_local(output):
        yield
        return
    directory = local_path(output)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise PublicationError(
                f"{directory}: another inventory run is writing this output ({_holder(handle)}); "
                "wait for it to finish, or give this run another --output"
            ) from None
        _write_holder(handle)
        try:
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_holder(handle: IO[str]) -> None:
    handle.seek(0)
    handle.truncate(0)
    handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": now_iso()}))
    handle.flush()


def _holder(handle: IO[str]) -> str:
    handle.seek(0)
    try:
        holder = json.loads(handle.read() or "{}")
    except json.JSONDecodeError:
        holder = {}
    if not holder:
        return "holder unknown"
    return f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}"


def read_publication(output: str) -> dict[str, Any] | None:
    """The published run's metadata, or None when nothing was published (local outputs only)."""
    if not is_local(output):
        return None
    path = local_path(output) / PUBLICATION
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PublicationError(f"{path}: not valid JSON ({exc}); was it edited by hand?") from exc
    if not isinstance(data, dict) or not isinstance(data.get("run_dir"), str):
        raise PublicationError(f"{path}: no run_dir; this is not a publication of kafka-client-exporter inventory")
    return data


def read_run_json(output: str, run_dir: str, name: str) -> dict[str, Any] | None:
    path = local_path(output) / run_dir / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise PublicationError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise PublicationError(f"{path}: expected a JSON object")
    return data


def write_json(spark: SparkSession, path: str, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    if is_local(path):
        local = local_path(path)
        local.parent.mkdir(parents=True, exist_ok=True)
        temporary = local.with_name(f".{local.name}.tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, local)
        return
    _hadoop_replace(spark, path, text)


def _hadoop_replace(spark: SparkSession, path: str, text: str) -> None:
    """Write to a temporary name and rename over ``path`` (atomic on HDFS; a single PUT on object stores)."""
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    target = jvm.org.apache.hadoop.fs.Path(path)
    temporary = jvm.org.apache.hadoop.fs.Path(target.getParent(), f".{target.getName()}.tmp")
    fs = target.getFileSystem(conf)
    stream = fs.create(temporary, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
    context = jvm.org.apache.hadoop.fs.FileContext.getFileContext(target.toUri(), conf)
    rename = jvm.org.apache.hadoop.fs.Options.Rename
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    options = gateway.new_array(rename, 1)
    options[0] = rename.OVERWRITE
    context.rename(temporary, target, options)


def publish(spark: SparkSession, output: str, run_id: str, metadata: dict[str, Any]) -> None:
    """Make ``runs/<run_id>`` the published run: its metadata beside its tables, then the pointer, then the link."""
    run_dir = f"{RUNS}/{run_id}"
    record = {**metadata, "format": FORMAT, "job_version": __version__, "run_id": run_id, "run_dir": run_dir}
    write_json(spark, join(output, run_dir, RUN_METADATA), record)
    write_json(spark, join(output, PUBLICATION), record)
    if is_local(output):
        directory = local_path(output)
        temporary = directory / f".{CURRENT_LINK}.tmp"
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        temporary.symlink_to(run_dir)
        os.replace(temporary, directory / CURRENT_LINK)


def remove_unpublished(output: str, keep_runs: set[str], keep_segments: set[str]) -> list[str]:
    """Delete runs and state segments that no kept publication refers to: those of failed or killed runs, and those
    older than the previous publication. Runs under the lock, so no other run is writing. Local outputs only."""
    if not is_local(output):
        return []
    removed = []
    directory = local_path(output)
    for parent, keep in ((directory / RUNS, keep_runs), (directory / SEGMENTS, keep_segments)):
        if not parent.is_dir():
            continue
        for child in sorted(parent.iterdir()):
            if child.name not in keep:
                shutil.rmtree(child, ignore_errors=True)
                removed.append(str(child))
    return removed
