"""A JVM of the launcher's (a Kafka node, a ZooKeeper server): started in its own session with its output in a file,
stopped by its pid.

Its own session: a terminal's Ctrl-C goes to the test runner only, whose teardown then stops the JVM (a JVM that got
the SIGINT itself would be gone before the tests using it are). Its directory as working directory: a JVM crash
report (hs_err_pid*.log) lands there too.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO

__all__ = ["JvmProcess", "cpu_seconds", "log_tails"]

_TAIL_LINES = 30

log = logging.getLogger(__name__)


class JvmProcess:
    """One JVM at a time for ``what`` (named in log lines), its output appended to ``<directory>/stdout.log``."""

    def __init__(self, directory: Path, what: str) -> None:
        self.directory = directory
        self.what = what
        self._process: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit status once it has exited (None while it runs or before it started)."""
        return self._process.poll() if self._process is not None else None

    @property
    def stdout_log(self) -> Path:
        return self.directory / "stdout.log"

    def start(self, command: Sequence[str]) -> None:
        if self.running:
            raise RuntimeError(f"{self.what} is already running (pid {self.pid})")
        self._close_stdout()
        self._stdout = self.stdout_log.open("ab")
        self._process = subprocess.Popen(
            list(command),
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def terminate(self) -> None:
        """SIGTERM, and return (``wait_stopped`` next)."""
        process = self._process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)

    def wait_stopped(self, timeout: float) -> None:
        """Wait for the JVM to exit after ``terminate``; SIGKILL it after ``timeout`` seconds."""
        process = self._process
        if process is not None and process.poll() is None:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("%s (pid %d) still runs %ss after SIGTERM; killing it", self.what, process.pid, timeout)
                process.kill()
                process.wait()
        self._close_stdout()

    def kill(self) -> None:
        """SIGKILL: a crash, with no clean shutdown."""
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        self._close_stdout()

    def _close_stdout(self) -> None:
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process, from /proc (0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # After the command name: state is field 3, utime and stime are fields 14 and 15 (man 5 proc).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def log_tails(*paths: Path) -> str:
    """The last lines of each of ``paths`` that exists, for an error message."""
    parts = []
    for path in paths:
        if path.is_file():
            lines = path.read_text(errors="replace").splitlines()[-_TAIL_LINES:]
            parts.append(f"\n--- {path.name} (last {len(lines)} lines) ---\n" + "\n".join(lines))
    return "".join(parts)
