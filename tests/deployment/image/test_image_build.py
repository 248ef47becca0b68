"""The container images, built from the Dockerfile by scripts/build-image.sh and run here with buildah: the
exporter inside its image checks a configuration and collects from the broker double, JMX included, and the
inventory image runs the Helm chart's job over the sample logs, both as user 10001."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter import __version__
from harness.clients import ClientKind, start_client
from harness.exporter_process import write_config
from kafka_double.cluster import BrokerSpec, DoubleCluster

# The first test builds both images (its fixture): about 140 s alone, far more beside three busy workers.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[3]
CONFIG_DIR = "/etc/kafka-client-exporter"


@pytest.fixture(scope="module")
def images() -> list[str]:
    """Both images, the inventory image first (the exporter's name and size are the script's last two lines)."""
    started = time.monotonic()
    build = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-image.sh")], capture_output=True, text=True, timeout=1200
    )
    assert build.returncode == 0, build.stderr[-4000:]
    lines = build.stdout.splitlines()
    pairs = list(zip(lines[-4::2], lines[-3::2], strict=True))
    print(f"\nimages {pairs}, built in {time.monotonic() - started:.0f} s")
    return [name for name, _ in pairs]


@pytest.fixture(scope="module")
def image(images: list[str]) -> str:
    name = images[-1]
    assert name.startswith("localhost/kafka-client-exporter:")
    return name


@contextlib.contextmanager
def container(image: str) -> Iterator[str]:
    created = subprocess.run(["buildah", "from", image], capture_output=True, text=True, check=True)
    name = created.stdout.strip()
    try:
        yield name
    finally:
        subprocess.run(["buildah", "rm", name], capture_output=True, check=False)


def run_in(
    name: str, *command: str, config_dir: Path | None = None, options: tuple[str, ...] = (), timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    # chroot isolation shares the host's network namespace, so 127.0.0.1 inside reaches the double outside.
    mount = ["--volume", f"{config_dir}:{CONFIG_DIR}:ro"] if config_dir else []
    return subprocess.run(
        ["buildah", "run", "--isolation", "chroot", *mount, *options, name, "--", *command],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_image_carries_its_oci_labels_and_runs_as_a_non_root_user(image: str) -> None:
    inspected = subprocess.run(["buildah", "inspect", "--type", "image", image], capture_output=True, text=True)
    config = json.loads(inspected.stdout)["OCIv1"]["config"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == __version__
    assert labels["org.opencontainers.image.title"] == "kafka-client-exporter"
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert len(labels["org.opencontainers.image.revision"]) == 40  # the commit it was built from
    assert labels["org.opencontainers.image.base.name"].startswith("localhost/kafka-client-exporter-base:bookworm-")
    assert config["User"] == "10001:10001"
    with container(image) as name:
        who = run_in(name, "id", "-u")
        assert who.stdout.strip() == "10001", who.stderr
        version = run_in(name, "kafka-client-exporter", "--version")
        assert version.stdout.strip() == f"kafka-client-exporter {__version__}", version.stderr


def test_the_exporter_in_the_image_checks_its_config_and_collects_from_the_double(image: str, tmp_path: Path) -> None:
    with DoubleCluster([BrokerSpec(id=1)]) as double:
        kcat = start_client(ClientKind.KCAT, double.bootstrap(), software_name="image-check", software_version="1.2.3")
        with kcat, container(image) as name:
            kcat.wait_ready()
            write_config(
                tmp_path / "config.yaml",
                "imaged",
                {1: double.broker(1).jmx_url},
                bootstrap=double.bootstrap(),
                jmx_timeout_seconds=20,
            ).chmod(0o644)
            tmp_path.chmod(0o755)  # pytest makes it 0700: the image's user 10001 could not read the config
            check = run_in(name, "kafka-client-exporter", "check-config", "--config", f"{CONFIG_DIR}/config.yaml",
                           config_dir=tmp_path)  # fmt: skip
            assert check.returncode == 0 and check.stdout.startswith("configuration OK: 1 cluster(s)"), check.stderr
            collected = run_in(name, "kafka-client-exporter", "collect-once", "--config", f"{CONFIG_DIR}/config.yaml",
                               config_dir=tmp_path)  # fmt: skip
    assert collected.returncode == 0, collected.stderr
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(collected.stdout)
        for sample in family.samples
    }
    up = {dict(labels)["source"]: value for (metric, labels), value in samples.items() if metric.endswith("_up")}
    # JMX through the image's own JRE, and the Kafka protocol through its Python.
    assert up == {"jmx": 1.0, "api_versions": 1.0, "discovery": 1.0, "client_metrics": 1.0}
    connections = [
        value
        for (metric, labels), value in samples.items()
        if metric == "kafka_client_connections" and dict(labels)["client_software_name"] == "image-check"
    ]
    assert connections == [1.0]


def test_the_inventory_image_runs_the_charts_command_as_a_non_root_user(images: list[str], tmp_path: Path) -> None:
    inventory = images[0]
    assert inventory.startswith("localhost/kafka-client-exporter-inventory:")
    inspected = subprocess.run(["buildah", "inspect", "--type", "image", inventory], capture_output=True, text=True)
    config = json.loads(inspected.stdout)["OCIv1"]["config"]
    assert config["Labels"]["org.opencontainers.image.title"] == "kafka-client-exporter-inventory"
    assert config["User"] == "10001:10001"
    output = tmp_path / "inventory"
    output.mkdir()
    output.chmod(0o777)  # the image's user 10001 writes there (in the chart: the claim, with fsGroup)
    tmp_path.chmod(0o755)
    out_dir = "/var/lib/kafka-client-exporter/inventory"
    # What the chart's CronJob runs (templates/inventory-cronjob.yaml, with values.yaml's sparkConf), on one core.
    options = (
        "--env", "HOME=/tmp",
        "--env", "SPARK_LOCAL_IP=127.0.0.1",
        "--volume", f"{ROOT / 'samples' / 'request-logs'}:/var/log/kafka:ro",
        "--volume", f"{output}:{out_dir}",
    )  # fmt: skip
    with container(inventory) as name:
        job = run_in(
            name,
            "kafka-client-exporter", "inventory", "--incremental",
            "--input", "/var/log/kafka", "--output", f"{out_dir}/prod", "--master", "local[1]",
            "--conf", "spark.driver.memory=1g",
            "--conf", "spark.driver.host=127.0.0.1",
            "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.jars.ivy=/tmp/.ivy2",
            options=options,
            timeout=600,
        )  # fmt: skip
    assert job.returncode == 0, job.stderr[-4000:]
    publication = json.loads((output / "prod" / "publication.json").read_text())
    assert (output / "prod" / publication["run_dir"] / "clients.csv").is_file()
