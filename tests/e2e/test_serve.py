"""The daemon as an operator runs it: `serve`, `collect-once` and `check-config` as processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter import __version__
from harness.clients import ClientKind, start_client
from harness.exporter_process import checkout_env, running_exporter, write_config
from harness.ports import free_port
from kafka_double.cluster import BrokerSpec, DoubleCluster
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow
EXPORTER = [sys.executable, "-m", "exporter"]


@pytest.fixture(scope="module")
def double() -> Iterator[DoubleCluster]:
    with DoubleCluster([BrokerSpec(id=1), BrokerSpec(id=2)]) as cluster:
        yield cluster


def config_for(tmp_path: Path, brokers: dict[int, str], **collection: object) -> Path:
    settings: dict[str, Any] = {"interval_seconds": 2, "jmx_timeout_seconds": 2, **collection}
    return write_config(tmp_path / "exporter.yaml", "local", brokers, **settings)


def get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def wait_ready(base: str) -> None:
    def ready() -> bool:
        try:
            return get(f"{base}/readyz")[0] == 200
        except OSError:  # not listening yet
            return False

    wait_for(ready, timeout=30, what=f"{base}/readyz answering 200", interval=0.2)


def wait_for_series(url: str, series: str, timeout: float = 30) -> None:
    """Until ``series`` is in the exposition at ``url``; on failure the exporter's own series say why."""
    body = ""

    def exposed() -> bool:
        nonlocal body
        body = get(url)[2]
        return series in body

    try:
        wait_for(exposed, timeout=timeout, what=series, interval=0.5)
    except AssertionError as missing:
        own = [line for line in body.splitlines() if line.startswith("kafka_client_exporter_")]
        raise AssertionError(f"{missing}; the exporter's own series at {url}:\n" + "\n".join(own)) from None


def test_serve_exposes_live_clients_and_stops_cleanly(double: DoubleCluster, tmp_path: Path) -> None:
    config = config_for(tmp_path, {b: double.broker(b).jmx_url for b in (1, 2)})
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    kcat = start_client(ClientKind.KCAT, double.bootstrap(), software_name="serve-check", software_version="0.9.1")
    with kcat, running_exporter(config, port, stderr=subprocess.PIPE, text=True) as daemon:
        kcat.wait_ready()
        wait_ready(base)
        assert get(f"{base}/healthz")[0] == 200
        # Ready means one cycle done, not every broker read: under load a first JMX read can miss its deadline.
        wait_for_series(f"{base}/metrics", 'client_software_name="serve-check",client_software_version="0.9.1"')
        _, content_type, body = get(f"{base}/metrics")
        assert content_type.startswith("text/plain; version=0.0.4")
        assert 'kafka_client_exporter_build_info{version="' in body
        _, content_type, body = get(f"{base}/metrics", accept="application/openmetrics-text; version=1.0.0")
        assert content_type.startswith("application/openmetrics-text")
        assert body.endswith("# EOF\n")
        status, _, page = get(f"{base}/")
        assert status == 200 and "serve-check" in page and "href='/metrics'" in page
    # Leaving the block sent SIGTERM, as Kubernetes does.
    assert daemon.returncode == 0
    assert daemon.stderr is not None
    assert "stopping" in daemon.stderr.read()


def test_serve_takes_the_prometheus_flags(double: DoubleCluster, tmp_path: Path) -> None:
    config = config_for(tmp_path, {1: double.broker(1).jmx_url})
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    flags = ["--web.listen-address", f"127.0.0.1:{port}", "--web.telemetry-path", "/prom"]
    command = [*EXPORTER, "serve", "--config", str(config), *flags, "--log.format", "json", "--log.level", "DEBUG"]
    daemon = subprocess.Popen(command, env=checkout_env(), stderr=subprocess.PIPE, text=True)
    try:
        wait_ready(base)
        wait_for_series(f"{base}/prom", 'kafka_client_exporter_up{broker="1",kafka_cluster="local",source="jmx"} 1.0')
        assert get(f"{base}/prom")[0] == 200
        assert get(f"{base}/metrics")[0] == 404
        assert "<a href='/prom'>metrics</a>" in get(f"{base}/")[2]
    finally:
        daemon.send_signal(signal.SIGTERM)
        _, stderr = daemon.communicate(timeout=15)
    assert daemon.returncode == 0, stderr
    lines = [json.loads(line) for line in stderr.splitlines()]
    assert all({"ts", "level", "logger", "msg"} <= set(line) for line in lines)
    serving = f"kafka-client-exporter {__version__} serving {base}/prom"
    assert [(line["level"], line["logger"]) for line in lines if line["msg"] == serving] == [("info", "exporter")]
    assert any(line["level"] == "debug" for line in lines)


def test_collect_once_prints_and_fails_only_when_every_broker_fails(double: DoubleCluster, tmp_path: Path) -> None:
    dead = f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{free_port()}/jmxrmi"
    # The dead port refuses at once, so the deadline costs nothing here; 2 s was twice too short for the healthy
    # broker's read (suite runs with the cores shared): a new JVM's first JMX connection loads RMI's and JNDI's
    # classes, 0.45 s beside two busy loops, more at a load of 15.
    config = config_for(tmp_path, {1: double.broker(1).jmx_url, 9: dead}, interval_seconds=10, jmx_timeout_seconds=10)
    run = subprocess.run(
        [*EXPORTER, "collect-once", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert 'kafka_client_exporter_up{broker="1",kafka_cluster="local",source="jmx"} 1.0' in run.stdout
    assert 'kafka_client_exporter_up{broker="9",kafka_cluster="local",source="jmx"} 0.0' in run.stdout
    config = config_for(tmp_path, {9: dead})
    run = subprocess.run(
        [*EXPORTER, "collect-once", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 1
    assert "every broker failed" in run.stderr


def test_a_bridge_slow_to_start_costs_no_broker_its_read(double: DoubleCluster, tmp_path: Path) -> None:
    """The bridge JVM's start is not the brokers' time. Started seven seconds late (as a JVM on a loaded machine), with
    a 5 s deadline, the one cycle of collect-once still reads the broker: before, it counted the start against the
    deadline and failed every broker ("did not finish within 2 s", a suite run with the cores shared). The deadline
    leaves the first read, a new JVM's first JMX connection, room on a loaded machine (2 s did not, twice)."""
    java = tmp_path / "slow-java"
    java.write_text(f'#!/bin/sh\nsleep 7\nexec "{shutil.which("java")}" "$@"\n')
    java.chmod(0o755)
    config = config_for(tmp_path, {1: double.broker(1).jmx_url}, interval_seconds=5, jmx_timeout_seconds=5)
    document = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**document, "java": {"path": str(java)}}))
    run = subprocess.run(
        [*EXPORTER, "collect-once", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert 'kafka_client_exporter_up{broker="1",kafka_cluster="local",source="jmx"} 1.0' in run.stdout


def test_console_script_exits_2_on_invalid_config(tmp_path: Path) -> None:
    config = config_for(tmp_path, {1: "service:jmx:rmi:///jndi/rmi://h:1/jmxrmi"}, max_concurrency=0)
    script = Path(sys.executable).with_name("kafka-client-exporter")
    run = subprocess.run(
        [str(script), "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "KCE_WEB__PORT": "9"},
    )
    assert run.returncode == 2
    assert "collection.max_concurrency: Input should be greater than or equal to 1 (got 0)" in run.stderr
