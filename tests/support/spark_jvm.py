"""The JVM options of the tests' Spark JVMs: C1 only and the serial collector for a run of one job, and the class-data
sharing archive of tests/support/spark_cds.py once that is complete (which this module only names: building it runs
the inventory command, tests/support/inventory_command.py, which reads its options here)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARCHIVE_DIR = REPO / ".tools" / "spark-cds"
#: The JIT options for the Spark JVMs of a test's job: a run over a few files ends before C2's compilations pay off,
#: and C1 alone with the serial collector halves the CPU a run costs (one run over samples/request-logs, local[2]:
#: 62 s of CPU with the JVM's defaults, 31 s with these; the output is the same).
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@functools.cache
def archive_path() -> Path:
    """Where the archive of this checkout's pyspark is (a new pyspark, another name)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    listing = sorted(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in jars.glob("spark-core*.jar"))
    key = hashlib.sha256("\n".join([pyspark.__version__, str(jars), *listing]).encode()).hexdigest()[:16]
    return ARCHIVE_DIR / f"spark-driver-{key}.jsa"


def archive_options() -> str:
    """The JVM options that map the archive, once it is complete (empty before). A JVM given it on another class
    path cannot use it and prints a CDS warning on its standard output, where a test reads the command's: CDS's
    log is off."""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} -Xlog:cds*=off" if path.is_file() else ""


def jvm_options(quick: bool = True) -> str:
    """``spark.driver/executor.extraJavaOptions`` for a test's Spark JVMs: ``quick`` adds C1 only and the serial
    collector (for a JVM that runs one job); a long-lived one keeps the JIT's defaults."""
    return " ".join(filter(None, [QUICK_JVM_OPTIONS if quick else "-XX:+UseSerialGC", archive_options()]))
