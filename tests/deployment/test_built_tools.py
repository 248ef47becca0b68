"""The Prometheus, promtool, Alertmanager and amtool the suite and the demo run are the ones the set-up builds from
the pins in scripts/go/ (not Debian's 2.x packages on PATH), and they say which release they are."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness.alertmanager_process import ALERTMANAGER, AMTOOL
from harness.prometheus_process import PROMETHEUS, PROMTOOL

ROOT = Path(__file__).resolve().parents[2]


def pinned_version(module: str) -> str:
    match = re.search(r"^version=(\S+)$", (ROOT / "scripts" / "go" / module / "build.env").read_text(), re.M)
    assert match, module
    return match.group(1)


@pytest.mark.parametrize(
    ("binary", "module"),
    [(PROMETHEUS, "prometheus"), (PROMTOOL, "prometheus"), (ALERTMANAGER, "alertmanager"), (AMTOOL, "alertmanager")],
    ids=lambda value: value.name if isinstance(value, Path) else value,
)
def test_each_built_program_prints_its_pinned_version(binary: Path, module: str) -> None:
    run = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    first_line = (run.stdout + run.stderr).splitlines()[0]
    assert first_line.startswith(f"{binary.name}, version {pinned_version(module)} "), first_line


def test_prometheus_is_pinned_to_the_3_x_line() -> None:
    assert pinned_version("prometheus").startswith("3.")
    assert "github.com/prometheus/prometheus v0.316.0" in (ROOT / "scripts/go/prometheus/go.mod").read_text()
