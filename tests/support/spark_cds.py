"""A class-data-sharing (AppCDS) archive of the classes a Spark driver loads, for the tests' Spark JVMs.

Every inventory run in the suite starts a JVM that loads and verifies some 18,000 classes of Spark, Hadoop and Scala
before the job's first stage; the suite starts dozens. With the classes mapped from an archive a run over the sample
logs costs a quarter less CPU (31 s -> 23 s here). The archive is made once per checkout (``python -m
tests.support.spark_cds``, which scripts/test.sh runs before the tests): one inventory run over the samples whose
driver JVM writes the classes it loaded as it exits (a dynamic archive, ``-XX:ArchiveClassesAtExit``, over the
JDK's own). That takes 55 s here; listing the classes and then ``java -Xshare:dump``, which verifies all of them
again in one thread, took 75 s for an archive that saved no more.

It only changes how fast classes load. The JVM checks the class path and every jar's size and time against the
archive and loads classes the usual way on any difference (a reinstalled pyspark, another class path), so a test
never depends on it; tests/support/spark_jvm.py names it in the JVM options only once it is complete.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.spark_jvm import QUICK_JVM_OPTIONS, archive_path


def _jvm_running_with(option: str) -> bool:
    """Whether a process whose command line holds ``option`` is still running (Linux's /proc)."""
    needle = option.encode()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and needle in (entry / "cmdline").read_bytes():
                return True
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return False


def build() -> Path:
    """Make the archive unless it exists; returns its path. A partial archive never takes its final name."""
    from tests.support import samples_run
    from tests.support.inventory_command import TWO_PARTITIONS, inventory_command, loopback_env
    from tests.support.waiting import wait_for

    target = archive_path()
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="spark-cds-", dir=target.parent) as work:
        partial = Path(work) / target.name
        dump = f"-XX:ArchiveClassesAtExit={partial}"
        # The listing run is the command over the samples, as the tests run it: where test.sh asks, its result is
        # kept for them (tests/support/samples_run.py). Its own JVM options come last and win over
        # inventory_command's.
        kept = os.environ.get(samples_run.ENV)
        command = inventory_command(
            *samples_run.command_arguments(Path(kept) if kept else Path(work)),
            conf=[*TWO_PARTITIONS, "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM_OPTIONS} {dump}"],
        )
        listed = subprocess.run(command, capture_output=True, text=True, timeout=600, env=loopback_env(), check=False)
        if listed.returncode != 0:
            raise RuntimeError(f"the class-listing inventory run failed:\n{listed.stderr[-3000:]}")
        if kept:
            samples_run.record(Path(kept), listed)
        # The driver's JVM writes the archive as it exits, which can be after the command has returned.
        wait_for(lambda: not _jvm_running_with(dump), timeout=300, what="the listing run's JVM exits", interval=0.5)
        if not partial.is_file():
            raise RuntimeError(f"the listing run's JVM wrote no archive at {partial}:\n{listed.stderr[-3000:]}")
        for old in target.parent.glob("spark-driver-*.jsa"):
            old.unlink()  # archives of an earlier pyspark
        os.replace(partial, target)
    return target


if __name__ == "__main__":
    try:
        print(f"spark-cds: {build()}")
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        # The suite runs without the archive, only slower.
        print(f"spark-cds: no archive ({exc})", file=sys.stderr)
