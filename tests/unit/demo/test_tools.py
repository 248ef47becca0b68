"""The demo's wait for the set-up's background builds (scripts/setup.sh --demo), against real processes."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from demo.tools import wait_for_builds


def _background(directory: Path, name: str, script: str) -> subprocess.Popen[bytes]:
    """A build as setup.sh's start_in_background leaves it: NAME.pid while it runs, NAME.log, then NAME.rc."""
    directory.mkdir(exist_ok=True)
    process = subprocess.Popen(["bash", "-c", script], cwd=directory)
    (directory / f"{name}.pid").write_text(f"{process.pid}\n")
    (directory / f"{name}.log").write_text("")
    return process


def test_a_running_build_is_waited_for_and_said_and_its_success_is_no_problem(tmp_path: Path) -> None:
    release = tmp_path / "release"
    finish = "echo 0 > prometheus.rc; rm prometheus.pid"
    build = _background(tmp_path, "prometheus", f"while [ ! -e {release} ]; do sleep 0.05; done; {finish}")
    said: list[str] = []

    def finish_later() -> None:
        while not said:  # the demo has said it waits
            threading.Event().wait(0.05)
        release.touch()

    threading.Thread(target=finish_later, daemon=True).start()
    problems = wait_for_builds(["prometheus", "alertmanager"], said.append, meanwhile="page live", directory=tmp_path)
    build.wait(5)
    assert problems == []
    assert said[0] == "page live" and "prometheus still being built" in said[1] and "alertmanager" not in said[1]
    assert said[-1].startswith("demo: built in ")


def test_a_failed_and_a_vanished_build_are_named_with_their_logs(tmp_path: Path) -> None:
    _background(tmp_path, "prometheus", "echo 2 > prometheus.rc; rm prometheus.pid").wait(5)
    # Killed before it wrote its exit code (its pid file left behind, naming a process that is gone).
    _background(tmp_path, "alertmanager", "exit 0").wait(5)
    said: list[str] = []
    problems = wait_for_builds(["prometheus", "alertmanager"], said.append, directory=tmp_path)
    assert problems == [
        f"the build of prometheus failed (exit code 2; its log: {tmp_path / 'prometheus.log'})",
        f"the build of alertmanager stopped before its end (its log: {tmp_path / 'alertmanager.log'}); "
        "run bash scripts/setup.sh",
    ]
    assert said == []  # nothing was running: nothing to wait for


def test_nothing_built_in_the_background_is_nothing_to_wait_for(tmp_path: Path) -> None:
    said: list[str] = []
    assert wait_for_builds(["prometheus"], said.append, stop=threading.Event(), directory=tmp_path / "none") == []
    assert said == []
