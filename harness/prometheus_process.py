"""A real Prometheus (3.x, built by the set-up: scripts/setup.d/05-prometheus.sh) scraping the exporter with the
shipped alert rules, on loopback, optionally sending its alerts to an Alertmanager: for the demo and the tests that
check alerts and dashboards against live data."""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import yaml

from harness.exporter_process import REPO_ROOT
from harness.ports import free_port
from harness.processes import stop_process

#: The job the shipped rules and dashboards select (job="kafka-client-exporter").
JOB = "kafka-client-exporter"
#: Built by the set-up from the Go module proxy. Debian's prometheus package (2.x) may be on PATH too: it is never
#: picked up by accident, only named where the 2.x line is what a test means (tests/deployment/alerts).
PROMETHEUS = REPO_ROOT / ".tools" / "prometheus" / "prometheus"
PROMTOOL = REPO_ROOT / ".tools" / "prometheus" / "promtool"
#: Debian's promtool of the 2.x line (scripts/setup.sh installs the prometheus package for it).
PROMTOOL_2 = Path("/usr/bin/promtool")


def built(binary: Path) -> str:
    """The path of a program the set-up builds under .tools/, or an error that says how to get it."""
    if not binary.is_file():
        raise RuntimeError(f"{binary} is missing; run bash scripts/setup.sh (scripts/setup.d builds it)")
    return str(binary)


def prometheus_config(
    exporter_port: int, rules: Path, interval: str, alertmanager: str | None = None
) -> dict[str, object]:
    config: dict[str, object] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
    }
    if alertmanager is not None:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]}
    return config


@contextlib.contextmanager
def running_prometheus(
    workdir: Path,
    exporter_port: int,
    rules: Path,
    interval: str = "1s",
    port: int | None = None,
    alertmanager: str | None = None,
) -> Iterator[str]:
    """Prometheus on 127.0.0.1 (a free port unless given) with its data and log under `workdir`, scraping the
    exporter as job kafka-client-exporter and sending alerts to `alertmanager` (host:port) when given; yields its
    base URL once it answers /-/ready, stops it on exit."""
    binary = built(PROMETHEUS)
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus_config(exporter_port, rules, interval, alertmanager)))
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    with (workdir / "prometheus.log").open("w") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                # An alert is sent again at every evaluation rather than every minute: an Alertmanager started
                # after Prometheus, or restarted, learns of the firing alerts within an interval.
                f"--rules.alert.resend-delay={interval}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        with serving("prometheus", base, process, workdir / "prometheus.log"):
            yield base


@contextlib.contextmanager
def serving(program: str, base: str, process: subprocess.Popen[bytes], log: Path) -> Iterator[None]:
    """``process`` (Prometheus or Alertmanager, which answer /-/ready alike) once it is ready; stopped on leaving,
    killed if it does not stop within 15 s."""
    try:
        _wait_ready(program, base, process, log)
        yield
    finally:
        stop_process(process)


def _wait_ready(program: str, base: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = "\n".join(log.read_text().splitlines()[-10:])
            raise RuntimeError(f"{program} exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{base}/-/ready", timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"{program} did not answer {base}/-/ready within {timeout:.0f} s")
