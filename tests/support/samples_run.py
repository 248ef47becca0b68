"""One run of the inventory command over the shipped samples (samples/request-logs) for the whole test session.

Three places ran that same command on the same logs, each in a fresh Spark JVM (some 20 s of CPU apiece): the
class-archive build (tests/support/spark_cds.py, before the tests), the test of the command's output, and the
cluster test's local-mode reference. They now share one run: the first of them to need it runs it, under a lock
in a directory every xdist worker of the session sees, and the others read what it recorded. When scripts/test.sh
built the archive in this invocation, it names in ``KCE_SAMPLES_RUN`` where the archive's listing run left its
result (only when it succeeded: its JVM also writes the archive), and that run is the shared one. Each test still
asserts on the command's exit code, output and tables; a failed run of the tests' own is recorded as it failed, and
every test that reads it fails with its stderr.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Set by scripts/test.sh: a directory made for this invocation, where the class-archive build records its run.
ENV = "KCE_SAMPLES_RUN"
SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "request-logs"
RESULT = "result.json"
OUTPUT = "inventory"


@dataclass(frozen=True)
class CommandRun:
    returncode: int
    stdout: str
    stderr: str
    #: The run's --output directory: read it, never write to it (other tests read it too).
    output: Path


def command_arguments(directory: Path) -> list[str]:
    """The command's arguments for a run recorded in ``directory``."""
    return ["--input", str(SAMPLES), "--output", str(directory / OUTPUT)]


def record(directory: Path, done: subprocess.CompletedProcess[str]) -> None:
    """Keep ``done`` as the run recorded in ``directory`` (written whole, then renamed: a reader never sees half)."""
    partial = directory / f".{RESULT}.partial"
    partial.write_text(
        json.dumps({"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}), encoding="utf-8"
    )
    os.replace(partial, directory / RESULT)


def _read(directory: Path) -> CommandRun | None:
    try:
        recorded = json.loads((directory / RESULT).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return CommandRun(recorded["returncode"], recorded["stdout"], recorded["stderr"], directory / OUTPUT)


def samples_run(shared: Path) -> CommandRun:
    """The run over the samples: the archive build's, if test.sh says it made one, else the one recorded under
    ``shared`` by whichever test of the session came first (made now if none has)."""
    from tests.support.inventory_command import run_inventory

    given = os.environ.get(ENV)
    if given and (recorded := _read(Path(given))) is not None:
        return recorded
    shared.mkdir(parents=True, exist_ok=True)
    with (shared / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when a killed worker's process ends
        recorded = _read(shared)
        if recorded is None:
            record(shared, run_inventory(*command_arguments(shared), timeout=600))
            recorded = _read(shared)
    assert recorded is not None
    return recorded
