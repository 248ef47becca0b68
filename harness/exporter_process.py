"""Run `kafka-client-exporter serve` as its own process against brokers, real or the double (demo, benchmarks,
tests)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import yaml

# The checkout the bench runs from: harness, the brokers' packages and the demo are not installed (the wheel ships
# exporter/ only).
REPO_ROOT = Path(__file__).resolve().parents[1]


def checkout_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this environment) with the checkout first on PYTHONPATH, so that a child Python
    imports this checkout's exporter and bench whatever its working directory."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def cluster_entry(
    cluster: str,
    brokers: dict[int, str],
    bootstrap: str | None = None,
    *,
    inventory: Path | None = None,
    jmx: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """One cluster of an exporter config: `brokers` (id -> JMX URL), its bootstrap servers, the inventory job's
    output directory and the cluster's `jmx` section (credentials, TLS) when given."""
    entry: dict[str, object] = {"name": cluster, "brokers": [{"id": i, "jmx_url": u} for i, u in brokers.items()]}
    if bootstrap:
        entry["bootstrap_servers"] = bootstrap.split(",")
    if inventory is not None:
        entry["inventory"] = {"path": str(inventory)}
    if jmx is not None:
        entry["jmx"] = dict(jmx)
    return entry


def write_config(
    path: Path,
    cluster: str,
    brokers: dict[int, str],
    bootstrap: str | None = None,
    *,
    inventory: Path | None = None,
    policy_file: Path | None = None,
    jmx: Mapping[str, object] | None = None,
    more_clusters: Sequence[dict[str, object]] = (),
    **collection: object,
) -> Path:
    """An exporter YAML config listing `brokers` (id -> JMX URL) of one cluster (see cluster_entry), then
    `more_clusters` (cluster_entry's), with a version policy file when given."""
    entry = cluster_entry(cluster, brokers, bootstrap, inventory=inventory, jmx=jmx)
    document: dict[str, object] = {"collection": collection, "clusters": [entry, *more_clusters]}
    if policy_file is not None:
        document["policy_file"] = str(policy_file)
    path.write_text(yaml.safe_dump(document))
    return path


@contextlib.contextmanager
def running_exporter(config: Path, port: int, *extra_args: str, **popen: object) -> Iterator[subprocess.Popen]:
    """The daemon on 127.0.0.1:`port`, this checkout's exporter; stopped with SIGTERM (as Kubernetes does) on exit,
    killed if stuck. ``popen`` goes to subprocess.Popen (an ``env`` there gets the checkout added too)."""
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
    popen["env"] = checkout_env(popen.get("env"))  # type: ignore[arg-type]
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
