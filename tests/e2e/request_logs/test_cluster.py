"""The inventory on a real Spark standalone cluster (a master and two workers started from the installed pyspark):
through ``--master spark://`` and through ``spark-submit`` it writes the same bytes as in local mode, whatever the
partitioning, and a worker lost in the middle of the pass changes nothing in the output."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter.request_logs.job import CSV_TABLES
from harness.ports import free_port
from tests.support.inventory_command import (
    LOOPBACK_CONF,
    NO_PYTHON_WORKERS,
    TWO_PARTITIONS,
    inventory_command,
    quick_jvm,
    run_inventory,
)
from tests.support.inventory_command import loopback_env as spark_loopback_env
from tests.support.samples_run import SAMPLES, CommandRun
from tests.support.spark_cluster import SPARK_SUBMIT, StandaloneCluster, loopback_env
from tests.support.waiting import wait_for

# Each test runs the job two or three times, on a cluster and in local mode: minutes beside three busy workers.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    running = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield running.start(workers=2, cores=1, memory="2g")
    finally:
        running.stop()


def csvs(output: Path) -> dict[str, bytes]:
    return {name: (output / "current" / f"{name}.csv").read_bytes() for name in CSV_TABLES}


def inventory(*args: str, conf: list[str] = TWO_PARTITIONS) -> None:
    done = run_inventory(*args, timeout=600, conf=conf)
    assert done.returncode == 0, done.stderr[-3000:]


def test_local_standalone_and_spark_submit_write_the_same_bytes(
    cluster: StandaloneCluster, samples_run: CommandRun, tmp_path: Path
) -> None:
    # Local mode's bytes are the session's run of the command over the same samples (its own test checks it).
    assert samples_run.returncode == 0, samples_run.stderr[-3000:]
    standalone, submitted = tmp_path / "standalone", tmp_path / "submitted"
    inventory(
        "--input",
        str(SAMPLES),
        "--output",
        str(standalone),
        "--master",
        cluster.url,
        # Another partitioning than local mode's: the rows must not depend on it.
        conf=["--conf", "spark.sql.shuffle.partitions=7", "--conf", "spark.sql.files.maxPartitionBytes=4k"],
    )
    python = sys.executable
    done = subprocess.run(
        [
            str(SPARK_SUBMIT),
            "--master",
            cluster.url,
            *LOOPBACK_CONF,
            *NO_PYTHON_WORKERS,
            *quick_jvm(),
            "--conf",
            "spark.sql.shuffle.partitions=3",
            str(REPO / "exporter" / "request_logs" / "__main__.py"),
            "--input",
            str(SAMPLES),
            "--output",
            str(submitted),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**loopback_env(tmp_path), "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = csvs(samples_run.output)
    assert b"legacy-billing" in expected["clients"] and expected["rejections"].count(b"\n") == 2
    assert csvs(standalone) == expected
    assert csvs(submitted) == expected


@pytest.fixture(scope="module")
def generated_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.inventory_logs import generate

    logs = tmp_path_factory.mktemp("generated") / "logs"
    # 24 files of 0.7 MB: in 1 MB splits (the run's), the pass over them is 24 tasks on two one-core executors,
    # twelve rounds to land in (files four times as big only made each round, and both runs over them, longer).
    generate(logs, 16_000_000, 5_000)
    return logs


def _running_pass(ui: str) -> bool:
    """Whether the driver's stage list (its REST API) shows the pass over the files with tasks running and tasks
    still to run; the job's own progress lines come every 5 s, which a pass on an idle machine can fall between."""
    try:
        with urllib.request.urlopen(f"{ui}/api/v1/applications", timeout=5) as answer:
            [application] = json.load(answer)
        active = f"{ui}/api/v1/applications/{application['id']}/stages?status=active"
        with urllib.request.urlopen(active, timeout=5) as answer:
            stages = json.load(answer)
    except (OSError, ValueError):
        return False  # the UI is not up yet, or has no application yet
    return any(
        stage["numTasks"] >= 8 and stage["numActiveTasks"] > 0 and stage["numCompleteTasks"] < stage["numTasks"]
        for stage in stages
    )


def test_a_worker_killed_mid_stage_changes_nothing_in_the_output(
    cluster: StandaloneCluster, generated_logs: Path, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    inventory("--input", str(generated_logs), "--output", str(local), "--master", "local[2]")
    stderr = tmp_path / "cluster.stderr"
    output = tmp_path / "cluster"
    ui_port = free_port()
    with stderr.open("w") as log:
        run = subprocess.Popen(
            inventory_command(
                "--input",
                str(generated_logs),
                "--output",
                str(output),
                "--master",
                cluster.url,
                conf=[
                    *("--conf", "spark.sql.files.maxPartitionBytes=1m"),
                    *("--conf", "spark.ui.enabled=true", "--conf", f"spark.ui.port={ui_port}"),
                ],
            ),
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=spark_loopback_env(),
        )
    victim = cluster.workers[0]

    def pass_running() -> bool:
        assert run.poll() is None, stderr.read_text()[-3000:]
        return _running_pass(f"http://127.0.0.1:{ui_port}")

    try:
        wait_for(pass_running, timeout=300, what="the pass showing running tasks", interval=0.1)
        cluster.kill_worker(victim)
        assert run.wait(timeout=600) == 0, stderr.read_text()[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        cluster.workers.remove(victim)
        cluster.add_worker(cores=1, memory="2g")
        cluster.wait_for_workers(2)
    assert csvs(output) == csvs(local)
