"""Who is behind each live series: the inventory job runs over the double's own request logs, and `serve` with
`inventory.path` joins its clients with the live connections in /metrics, on the status page and in /api/clients;
a corrupted publication turns `up{source="inventory"}` to 0 while the last good identities stay."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from kafka_double.clients import ClientKind, start_client
from kafka_double.cluster import BrokerSpec, DoubleCluster
from kafka_double.exporter_process import running_exporter, write_config
from kafka_double.mbean_host import free_port
from tests.support.inventory_command import run_inventory

pytestmark = pytest.mark.slow
SOFTWARE = ("who-check", "1.2.3")
CLIENT_ID = 'billing "ledger",v2'
T = TypeVar("T")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DoubleCluster, Path]]:
    directory = tmp_path_factory.mktemp("broker-logs")
    with DoubleCluster([BrokerSpec(id=1)], request_log_dir=directory) as cluster:
        yield cluster, directory


def samples(body: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (sample.labels, sample.value)
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == name
    ]


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def wait_for(check: Callable[[], T | None], timeout: float = 40) -> T:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except OSError:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def test_identities_join_the_live_series_and_survive_a_corrupted_publication(
    logs: tuple[DoubleCluster, Path], tmp_path: Path
) -> None:
    double, directory = logs
    output = tmp_path / "inventory"
    kcat = start_client(
        ClientKind.KCAT,
        double.bootstrap(),
        software_name=SOFTWARE[0],
        software_version=SOFTWARE[1],
        client_id=CLIENT_ID,
    )
    with kcat:
        kcat.wait_ready()
        time.sleep(1.5)  # its requests are in the request log
        done = run_inventory("--input", str(directory), "--output", str(output))
        assert done.returncode == 0, done.stderr[-3000:]
        config = write_config(
            tmp_path / "exporter.yaml",
            "local",
            {1: double.broker(1).jmx_url},
            interval_seconds=2,
            jmx_timeout_seconds=2,
        )
        document = yaml.safe_load(config.read_text())
        document["clusters"][0]["inventory"] = {"path": str(output), "max_identity_series": 50}
        config.write_text(yaml.safe_dump(document))
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        with running_exporter(config, port):
            identity = {
                "kafka_cluster": "local",
                "client_software_name": SOFTWARE[0],
                "client_software_version": SOFTWARE[1],
                "client_id": CLIENT_ID,
                "listener": "PLAINTEXT",
            }

            def identity_series() -> list[dict[str, str]]:
                found = samples(get(f"{base}/metrics"), "kafka_client_identity_info")
                return [labels for labels, _ in found if identity.items() <= labels.items()]

            (series,) = wait_for(identity_series)
            assert series["principal"] == "User:ANONYMOUS" and series["source_host"] == "127.0.0.1"
            body = get(f"{base}/metrics")
            up = dict((labels["source"], value) for labels, value in samples(body, "kafka_client_exporter_up"))
            assert up["inventory"] == 1.0
            (stamp,) = samples(body, "kafka_client_exporter_inventory_timestamp_seconds")
            assert abs(stamp[1] - time.time()) < 600  # the double logs in UTC: the newest line is minutes old

            page = get(f"{base}/")
            assert "billing &#34;ledger&#34;,v2" in page and "Who runs them: the inventory in" in page
            api = json.loads(get(f"{base}/api/clients"))
            pairs = {(c["software_name"], c["software_version"]): c for c in api["clusters"]["local"]["clients"]}
            assert CLIENT_ID in [i["client_id"] for i in pairs[SOFTWARE]["identities"]]
            assert api["clusters"]["local"]["inventory"]["up"] is True

            # A publication.json overwritten in place by something else: the last good identities stay.
            (output / "publication.json").write_text("{not json", encoding="utf-8")

            def inventory_down() -> bool:
                found = samples(get(f"{base}/metrics"), "kafka_client_exporter_errors_total")
                return any(labels.get("reason") == "invalid_data" for labels, _ in found)

            wait_for(inventory_down)
            body = get(f"{base}/metrics")
            up = dict((labels["source"], value) for labels, value in samples(body, "kafka_client_exporter_up"))
            assert up["inventory"] == 0.0 and up["jmx"] == 1.0
            assert identity_series(), "the last good identities were dropped"
            assert "showing the last good run" in get(f"{base}/")
