"""Every metric a dashboard or an alert rule uses is one the exporter really emits (checked on a live /metrics), or
one Prometheus writes itself for every target (up)."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator

import pytest

from harness.exporter_process import running_exporter, write_config
from harness.ports import free_port
from kafka_double.cluster import BrokerSpec, DoubleCluster
from tests.support.promql import (
    DASHBOARDS,
    PROMETHEUS_SERIES,
    dashboard_exprs,
    metric_names,
    rule_exprs,
    variable_metric_names,
)

pytestmark = pytest.mark.slow


def exposed_families(body: str) -> set[str]:
    """Names from `# TYPE` lines (families without samples still print them), with counters' `_total` form."""
    names: set[str] = set()
    for line in body.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            names.add(name)
            if kind == "counter":
                names.add(name.removesuffix("_total") + "_total")
    return names


@pytest.fixture(scope="module")
def live_metrics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[set[str]]:
    with DoubleCluster([BrokerSpec(id=1)]) as double:
        config = write_config(
            tmp_path_factory.mktemp("exporter") / "exporter.yaml",
            "local",
            {1: double.broker(1).jmx_url},
            bootstrap=double.bootstrap(),
            interval_seconds=3,
            jmx_timeout_seconds=2,
        )
        port = free_port()
        with running_exporter(config, port, stderr=subprocess.PIPE, text=True) as daemon:
            deadline = time.monotonic() + 60
            while True:
                if daemon.poll() is not None:
                    assert daemon.stderr is not None
                    pytest.fail(f"the exporter exited with {daemon.returncode}: {daemon.stderr.read()}")
                if time.monotonic() > deadline:
                    pytest.fail("the exporter was not ready within 60 s")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as ready:
                        if ready.status == 200:
                            break
                except OSError:
                    time.sleep(0.3)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
                body = response.read().decode()
            yield exposed_families(body)


def used_names() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {}
    for path in DASHBOARDS:
        for where, expr in dashboard_exprs(path):
            for name in metric_names(expr):
                used.setdefault(name, set()).add(where)
        for name in variable_metric_names(path):
            used.setdefault(name, set()).add(f"{path.name} variables")
    for where, expr in rule_exprs():
        for name in metric_names(expr):
            used.setdefault(name, set()).add(where)
    return used


def test_dashboards_and_rules_use_only_emitted_metrics(live_metrics: set[str]) -> None:
    missing = {
        name: sorted(places)
        for name, places in used_names().items()
        if name not in live_metrics and name not in PROMETHEUS_SERIES
    }
    assert not missing, "not in the exporter's /metrics:\n" + "\n".join(
        f"  {name}: {', '.join(places)}" for name, places in sorted(missing.items())
    )


def test_the_check_sees_the_core_families(live_metrics: set[str]) -> None:
    # Guards against an empty or wrong /metrics making the test above pass vacuously.
    assert {"kafka_client_connections", "kafka_client_exporter_up", "kafka_client_exporter_build_info"} <= live_metrics
