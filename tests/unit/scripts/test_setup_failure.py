"""scripts/setup.sh when one of its parts fails: the set-up ends at once naming it, and the parts still running
(a Go build, pip) are stopped with everything they started, not left writing caches after the set-up said it failed
(seen on a new machine: apt-get refused dpkg's lock, and Prometheus's build went on for minutes without a parent)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXTRAS = ".[test,inventory,bench,docs]"


def _project(tmp_path: Path, fragments: dict[str, str]) -> Path:
    """A copy of the set-up scripts with only the given fragments, and a venv and Node clients it takes as done."""
    project = tmp_path / "project"
    (project / "scripts" / "setup.d").mkdir(parents=True)
    for script in ("setup.sh", "run-fragment.sh"):
        shutil.copy(ROOT / "scripts" / script, project / "scripts" / script)
    for name, body in fragments.items():
        (project / "scripts" / "setup.d" / name).write_text(body)
    (project / "pyproject.toml").write_text("")
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "bin" / "python").write_text("#!/bin/sh\n")
    (project / ".venv" / "bin" / "python").chmod(0o755)
    stamp = hashlib.sha256(f"{EXTRAS}\n".encode()).hexdigest()[:16]
    (project / ".venv" / f".installed-{stamp}").touch()
    (project / "harness" / "node" / "node_modules" / "kafkajs").mkdir(parents=True)
    # On a machine without the suite's Debian packages the script would run apt-get: it finds this one first.
    (project / "bin").mkdir()
    (project / "bin" / "apt-get").write_text("#!/bin/sh\nexit 0\n")
    (project / "bin" / "apt-get").chmod(0o755)
    return project


def _setup(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{project / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )


def _alive(pid: int) -> bool:
    try:
        # A killed child not yet reaped by init is a zombie: gone for our purpose.
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_failing_fragment_ends_the_set_up_at_once_and_stops_the_others(tmp_path: Path) -> None:
    pid_file = tmp_path / "slow.pid"
    project = _project(
        tmp_path,
        {
            # A long build (as Prometheus's), started before the failure, with a child process of its own.
            "05-slow.sh": f"sleep 600 &\necho $! > {pid_file}\nwait\n",
            "15-fails.sh": f"while [ ! -s {pid_file} ]; do sleep 0.05; done\nfalse\n",
        },
    )
    began = time.monotonic()
    try:
        ran = _setup(project)
        took = time.monotonic() - began
        sleeper = int(pid_file.read_text())
        assert ran.returncode == 1
        assert "setup: failed: 15-fails\n" in ran.stderr
        assert "setup: stopping 05-slow, still running\n" in ran.stderr
        assert took < 60, f"the set-up waited {took:.0f} s for the slow part before failing"
        assert not _alive(sleeper), "the slow fragment's child outlived the failed set-up"
    finally:
        if pid_file.exists() and _alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_every_part_succeeding_ends_with_each_ones_time(tmp_path: Path) -> None:
    project = _project(tmp_path, {"05-first.sh": "sleep 0.2\n", "15-second.sh": "true\n"})
    ran = _setup(project)
    assert ran.returncode == 0, ran.stderr
    for part in ("apt", "venv", "node-clients", "05-first", "15-second"):
        assert f"setup: {part} took " in ran.stderr
    assert "failed" not in ran.stderr and "stopping" not in ran.stderr
