"""A Spark standalone cluster from the installed pyspark: one master and workers started with its own
``bin/spark-class``, loopback only, each with its own work and log directories, stopped by pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from harness.ports import free_port

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def loopback_env(root: Path) -> dict[str, str]:
    """Spark binds to the machine's other address unless told otherwise; logs and pids stay under ``root``."""
    return dict(
        os.environ,
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(root / "logs"),
        SPARK_PID_DIR=str(root / "pids"),
        SPARK_NO_DAEMONIZE="1",
    )


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    work_dir: Path
    web_port: int


@dataclass
class StandaloneCluster:
    root: Path
    master: subprocess.Popen[bytes] | None = None
    port: int = 0
    web_port: int = 0
    workers: list[Worker] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        log = (self.root / "logs" / f"{name}.out").open("ab")
        # A session of its own: killing a worker's group takes its executor JVM with it, as a lost machine would.
        return subprocess.Popen(
            [str(SPARK_CLASS), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=loopback_env(self.root),
            start_new_session=True,
        )

    def start(self, workers: int = 2, cores: int = 1, memory: str = "2g") -> StandaloneCluster:
        self.port, self.web_port = free_port(), free_port()
        self.master = self._spawn(
            "master", MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.web_port)
        )
        for _ in range(workers):
            self.add_worker(cores, memory)
        self.wait_for_workers(workers)
        return self

    def add_worker(self, cores: int = 1, memory: str = "2g") -> Worker:
        index = len(self.workers)
        work_dir = self.root / f"worker-{index}"
        work_dir.mkdir(parents=True, exist_ok=True)
        web_port = free_port()
        process = self._spawn(
            f"worker-{index}",
            WORKER_CLASS,
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
            "--webui-port",
            str(web_port),
            "--cores",
            str(cores),
            "--memory",
            memory,
            "--work-dir",
            str(work_dir),
            self.url,
        )
        worker = Worker(process, work_dir, web_port)
        self.workers.append(worker)
        return worker

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=5) as response:
            return json.loads(response.read())

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except (OSError, ValueError):
            # Not answering yet, or answering with its HTML page: the master's UI serves its port before it has
            # attached /json/ (seen on a busy machine).
            return 0

    def wait_for_workers(self, count: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.alive_workers() < count:
            for process in [self.master, *(w.process for w in self.workers)]:
                if process is not None and process.poll() is not None:
                    raise RuntimeError(f"a Spark process exited ({process.returncode}); see {self.root / 'logs'}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{count} workers did not register within {timeout} s; see {self.root / 'logs'}")
            time.sleep(0.5)

    def kill_worker(self, worker: Worker) -> None:
        """SIGKILL to the worker and its executor, as when a machine is lost."""
        os.killpg(worker.process.pid, signal.SIGKILL)
        worker.process.wait(timeout=10)

    def stop(self) -> None:
        """Workers first (their executors with them), then the master; SIGKILL what does not stop in 20 s."""
        processes = [w.process for w in self.workers] + ([self.master] if self.master else [])
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
