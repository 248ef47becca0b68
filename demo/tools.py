"""The builds the demo's set-up left running in the background (scripts/setup.sh --demo): Prometheus and Alertmanager
from the Go module proxy, minutes of CPU on a new machine. The brokers, clients, exporter and status page need
neither, so the demo starts them first and waits here, saying so, only before it starts Prometheus."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Where scripts/setup.sh --demo leaves each background build's NAME.pid (while it runs), NAME.log and NAME.rc.
BACKGROUND = REPO / ".tools" / "background"
#: What Prometheus and its alerts need, by the names of their set-up fragments (scripts/setup.d/0x-NAME.sh).
ALERTING_BUILDS = ("prometheus", "alertmanager")
#: How often a waiting demo says it still waits.
PROGRESS_SECONDS = 30.0


@dataclass(frozen=True)
class Build:
    name: str
    directory: Path = BACKGROUND

    @property
    def log(self) -> Path:
        return self.directory / f"{self.name}.log"

    def running(self) -> bool:
        try:
            os.kill(int((self.directory / f"{self.name}.pid").read_text().strip()), 0)
        except (OSError, ValueError):
            return False
        return True

    def exit_code(self) -> int | None:
        """The build's exit code once it ended; None while it runs or when none ran (a full set-up built it)."""
        try:
            return int((self.directory / f"{self.name}.rc").read_text().strip())
        except (OSError, ValueError):
            return None

    def problem(self) -> str | None:
        """Why the tool is not there: a build that failed or stopped before its end."""
        code = self.exit_code()
        if code not in (None, 0):
            return f"the build of {self.name} failed (exit code {code}; its log: {self.log})"
        if code is None and not self.running() and self.log.exists():
            return f"the build of {self.name} stopped before its end (its log: {self.log}); run bash scripts/setup.sh"
        return None


def wait_for_builds(
    names: Sequence[str],
    say: Callable[[str], None],
    stop: threading.Event | None = None,
    meanwhile: str = "",
    clock: Callable[[], float] = time.monotonic,
    directory: Path = BACKGROUND,
) -> list[str]:
    """Wait for the named background builds to end, saying first ``meanwhile`` (what can be used already), then what
    is still built every PROGRESS_SECONDS; returns the problems of those that did not succeed (empty when all did, or
    when none was running)."""
    stop = stop or threading.Event()
    builds = [Build(name, directory) for name in names]
    pending = [b for b in builds if b.running()]
    if pending:
        began = clock()
        if meanwhile:
            say(meanwhile)
        say(
            f"demo: {' and '.join(b.name for b in pending)} still being built from the Go module proxy (the set-up's "
            f"background build, minutes on a new machine); they join when built (logs: {directory})"
        )
        said = began
        while pending and not stop.is_set():
            stop.wait(1.0)
            pending = [b for b in pending if b.running()]
            if pending and clock() - said >= PROGRESS_SECONDS:
                said = clock()
                say(f"demo: still building {' and '.join(b.name for b in pending)} ({said - began:.0f} s so far)")
        if not pending:
            say(f"demo: built in {clock() - began:.0f} s; starting Prometheus and Alertmanager")
    return [problem for b in builds if (problem := b.problem()) is not None]
