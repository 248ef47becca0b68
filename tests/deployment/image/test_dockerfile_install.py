"""The package installs the way the Dockerfile installs it: its own COPY and RUN lines, into a fresh venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from exporter import __version__
from tests.deployment.image.dockerfile import parse

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]

SAMPLE_CONFIG = """\
collection: {interval_seconds: 30}
clusters:
  - name: prod
    bootstrap_servers: ["kafka-0.kafka:9093"]
    jmx: {port: 9999}
"""


def test_dockerfile_install_commands_give_a_working_exporter(tmp_path: Path) -> None:
    build, _ = parse(ROOT / "Dockerfile")
    context = tmp_path / "src"
    context.mkdir()
    for args in build.arguments("COPY"):
        *sources, destination = args.split()
        for source in sources:
            target = context / destination
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, target)
    # `python` is the bare interpreter, as in the python:3.11-slim image, not this test's venv.
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python").symlink_to(os.path.realpath(sys._base_executable))  # type: ignore[attr-defined]  # the interpreter behind any venv
    venv = tmp_path / "venv"
    env = {
        **os.environ,
        **build.env(),
        "VENV": str(venv),
        "WHEELS": str(tmp_path / "wheels"),
        "PATH": f"{shims}:{os.environ['PATH']}",
    }
    # A PYTHONPATH naming a checkout (with its .egg-info) would make pip see the package as installed already.
    for outer in ("VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(outer, None)
    for command in build.install_block:
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=context,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, f"{command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"

    exporter = venv / "bin" / "kafka-client-exporter"
    version = subprocess.run([exporter, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.strip() == f"kafka-client-exporter {__version__}"
    config = tmp_path / "config.yaml"
    config.write_text(SAMPLE_CONFIG)
    check = subprocess.run([exporter, "check-config", "--config", config], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("configuration OK: 1 cluster(s)")
    # A real install (not this checkout) that carries its package data.
    probe = subprocess.run(
        [
            venv / "bin" / "python",
            "-c",
            "import exporter, importlib.resources as r; print(exporter.__file__);"
            "print(r.files('exporter.kafka_releases').joinpath('api_versions_by_release.csv').is_file())",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    location, has_data = probe.stdout.split()
    assert location.startswith(str(venv)) and has_data == "True"
