"""Run `kafka-client-exporter serve` as its own process against a double (demo, benchmarks, tests)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import yaml


def write_config(
    path: Path, cluster: str, brokers: dict[int, str], bootstrap: str | None = None, **collection: object
) -> Path:
    """An exporter YAML config listing `brokers` (id -> JMX URL) of one cluster."""
    entry: dict[str, object] = {"name": cluster, "brokers": [{"id": i, "jmx_url": u} for i, u in brokers.items()]}
    if bootstrap:
        entry["bootstrap_servers"] = bootstrap.split(",")
    path.write_text(yaml.safe_dump({"collection": collection, "clusters": [entry]}))
    return path


@contextlib.contextmanager
def running_exporter(config: Path, port: int, *extra_args: str, **popen: object) -> Iterator[subprocess.Popen]:
    """The daemon on 127.0.0.1:`port`; stopped with SIGTERM (as Kubernetes does) on exit, killed if stuck."""
    command = [
        sys.executable,
        "-m",
        "exporter",
        "serve",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *extra_args,
    ]
    process = subprocess.Popen(command, **popen)  # type: ignore[call-overload]
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
