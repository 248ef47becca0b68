"""A real Prometheus (the set-up's Debian package) scraping the exporter with the shipped alert rules, on loopback:
for the demo and the tests that check alerts and dashboards against live data."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import yaml

from kafka_double.mbean_host import free_port

#: The job the shipped rules and dashboards select (job="kafka-client-exporter").
JOB = "kafka-client-exporter"


def prometheus_config(exporter_port: int, rules: Path, interval: str) -> dict:
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
    }


@contextlib.contextmanager
def running_prometheus(
    workdir: Path, exporter_port: int, rules: Path, interval: str = "1s", port: int | None = None
) -> Iterator[str]:
    """Prometheus on 127.0.0.1 (a free port unless given) with its data and log under `workdir`, scraping the
    exporter as job kafka-client-exporter; yields its base URL once it answers /-/ready, stops it on exit."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise RuntimeError("prometheus is not on PATH; run bash scripts/setup.sh (scripts/setup.d/20-prometheus.sh)")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus_config(exporter_port, rules, interval)))
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    with (workdir / "prometheus.log").open("w") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_ready(base, process, workdir / "prometheus.log")
            yield base
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(base: str, process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = "\n".join(log.read_text().splitlines()[-10:])
            raise RuntimeError(f"prometheus exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{base}/-/ready", timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"prometheus did not answer {base}/-/ready within {timeout:.0f} s")
