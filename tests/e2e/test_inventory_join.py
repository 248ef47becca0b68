"""Who is behind each live series: `serve` with `inventory.path` joins the clients of an inventory publication with
the live connections of the double's broker in /metrics, on the status page and in /api/clients; a corrupted
publication turns `up{source="inventory"}` to 0 while the last good identities stay. The publication is written as
the job leaves one (tests/support/inventory_publication.py); the job itself, over the request logs of real brokers,
joined the same way: tests/real_kafka/test_real_inventory.py."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from harness.clients import ClientKind, start_client
from harness.exporter_process import running_exporter, write_config
from harness.ports import free_port
from kafka_double.cluster import BrokerSpec, DoubleCluster
from tests.support.inventory_publication import publish
from tests.support.waiting import eventually

pytestmark = pytest.mark.slow
SOFTWARE = ("who-check", "1.2.3")
CLIENT_ID = 'billing "ledger",v2'


@pytest.fixture(scope="module")
def double() -> Iterator[DoubleCluster]:
    with DoubleCluster([BrokerSpec(id=1)]) as cluster:
        yield cluster


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


def test_identities_join_the_live_series_and_survive_a_corrupted_publication(
    double: DoubleCluster, tmp_path: Path
) -> None:
    output = tmp_path / "inventory"
    # Read as fresh: the newest line of the logs it read is now (UTC, as brokers log).
    now = datetime.now(UTC)
    stamp = now.strftime("%Y-%m-%d %H:%M:%S.000")
    row = [CLIENT_ID, "User:ANONYMOUS", "127.0.0.1", "PLAINTEXT", *SOFTWARE, stamp, stamp, "3", "1"]
    publish(output, "r1", [row], log_time_range={"first": stamp, "last": stamp})
    kcat = start_client(
        ClientKind.KCAT,
        double.bootstrap(),
        software_name=SOFTWARE[0],
        software_version=SOFTWARE[1],
        client_id=CLIENT_ID,
    )
    with kcat:
        kcat.wait_ready()
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

            (series,) = eventually(identity_series, 40, "the identity series")
            assert series["principal"] == "User:ANONYMOUS" and series["source_host"] == "127.0.0.1"
            body = get(f"{base}/metrics")
            up = dict((labels["source"], value) for labels, value in samples(body, "kafka_client_exporter_up"))
            assert up["inventory"] == 1.0
            (newest,) = samples(body, "kafka_client_exporter_inventory_timestamp_seconds")
            assert abs(newest[1] - now.replace(microsecond=0).timestamp()) < 1  # the publication's newest line

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

            eventually(inventory_down, 40, "an invalid_data error for the overwritten publication")
            body = get(f"{base}/metrics")
            up = dict((labels["source"], value) for labels, value in samples(body, "kafka_client_exporter_up"))
            assert up["inventory"] == 0.0 and up["jmx"] == 1.0
            assert identity_series(), "the last good identities were dropped"
            assert "showing the last good run" in get(f"{base}/")
