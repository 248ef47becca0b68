"""The status page at `/` served by the exporter process against the broker double and opened in headless
Chromium, which also saves a screenshot (issue 4, part 5)."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.clients import ClientKind, start_client
from harness.exporter_process import running_exporter, write_config
from harness.ports import free_port
from kafka_double.cluster import BrokerSpec, DoubleCluster
from tests.support.status_page import tables_of

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "test-artifacts" / "status-page.png"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def chromium(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "chromium-profile"
    run = subprocess.run(
        ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *arguments],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run


@pytest.fixture(scope="module")
def double() -> Iterator[DoubleCluster]:
    with DoubleCluster([BrokerSpec(id=1), BrokerSpec(id=2)]) as cluster:
        yield cluster


def test_served_page_in_headless_chromium_shows_the_old_client_as_below_minimum(
    double: DoubleCluster, tmp_path: Path
) -> None:
    assert shutil.which("chromium"), "chromium is missing: run scripts/setup.sh (scripts/setup.d/40-chromium.sh)"
    brokers = {b: double.broker(b).jmx_url for b in (1, 2)}
    config = write_config(
        tmp_path / "exporter.yaml", "local", brokers, double.bootstrap(), interval_seconds=2, jmx_timeout_seconds=2
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    kcat = start_client(ClientKind.KCAT, double.bootstrap(), software_name="librdkafka", software_version="1.5.0")
    with kcat, running_exporter(config, port, stderr=subprocess.DEVNULL):
        kcat.wait_ready()
        deadline = time.monotonic() + 40
        served: list[dict[str, str]] = []
        while time.monotonic() < deadline:
            try:
                served = tables_of(fetch(url)).get("inventory-local", [])
            except OSError:
                served = []
            if any(r["software"] == "librdkafka" for r in served):
                break
            time.sleep(0.3)
        assert any(r["software"] == "librdkafka" for r in served), served

        dom = chromium(tmp_path, "--dump-dom", url).stdout
        tables = tables_of(dom)
        [old] = [r for r in tables["inventory-local"] if r["software"] == "librdkafka"]
        assert old["version"] == "1.5.0" and old["policy"] == "below_minimum" and int(old["connections"]) >= 1
        assert tables["inventory-local"][0] == old  # the violation is listed first
        assert {r["broker"] for r in tables["brokers-local"]} == {"1", "2"}
        assert all(r["jmx"].startswith("up") and r["api_versions"].startswith("up") for r in tables["brokers-local"])

        SCREENSHOT.parent.mkdir(exist_ok=True)
        SCREENSHOT.unlink(missing_ok=True)
        chromium(tmp_path, f"--screenshot={SCREENSHOT}", "--window-size=1280,900", url)
    png = SCREENSHOT.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert int.from_bytes(png[16:20], "big") == 1280 and int.from_bytes(png[20:24], "big") == 900
