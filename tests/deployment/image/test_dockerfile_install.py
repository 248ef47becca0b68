"""The package installs the way the Dockerfile installs it: its own COPY and RUN lines, into a fresh venv, for the
exporter image and for the inventory image."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from exporter import __version__
from tests.deployment.image.dockerfile import Stage, lineage, parse, stage

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]

SAMPLE_CONFIG = """\
collection: {interval_seconds: 30}
clusters:
  - name: prod
    bootstrap_servers: ["kafka-0.kafka:9093"]
    jmx: {port: 9999}
"""


def clean_env(env: dict[str, str]) -> dict[str, str]:
    # A PYTHONPATH naming a checkout (with its .egg-info) would make pip see the package as installed already, and
    # the venv's Python import the checkout instead of what was installed.
    return {name: value for name, value in env.items() if name not in ("VIRTUAL_ENV", "PYTHONPATH")}


def install(tmp_path: Path, target: Stage, extra_env: dict[str, str] | None = None) -> Path:
    """Runs the install blocks of `target` and the stages it is built on, in a copy of their build context, as the
    build would: in one file system, one after the other. Returns the venv."""
    stages = parse(ROOT / "Dockerfile")
    chain = lineage(stages, target)
    context = tmp_path / "src"
    context.mkdir()
    for layer in chain:
        for args in layer.arguments("COPY"):
            *sources, destination = args.split()
            for source in sources:
                copied = context / destination
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, copied, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
                else:
                    copied.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / source, copied)
    # `python` is the bare interpreter, as in the python:3.11-slim image, not this test's venv.
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python").symlink_to(os.path.realpath(sys._base_executable))  # type: ignore[attr-defined]  # the interpreter behind any venv
    venv = tmp_path / "venv"
    env = clean_env(
        {
            **os.environ,
            **{name: value for layer in chain for name, value in layer.env().items()},
            "VENV": str(venv),
            "WHEELS": str(tmp_path / "wheels"),
            "PATH": f"{shims}:{os.environ['PATH']}",
            **(extra_env or {}),
        }
    )
    for command in [command for layer in chain for command in layer.install_block]:
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=context,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert run.returncode == 0, f"{command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return venv


def test_dockerfile_install_commands_give_a_working_exporter(tmp_path: Path) -> None:
    venv = install(tmp_path, stage(parse(ROOT / "Dockerfile"), "build"))
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
        env=clean_env(dict(os.environ)),
    )
    location, has_data = probe.stdout.split()
    assert location.startswith(str(venv)) and has_data == "True"


def cached_wheel_dirs(requirement: str) -> list[str]:
    """Directories of pip's wheel cache holding a wheel of `requirement` (NAME==VERSION) that pip built before."""
    name, _, version = requirement.partition("==")
    cache = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True, timeout=60, check=False
    )
    if cache.returncode != 0:
        return []
    return sorted({str(path.parent) for path in Path(cache.stdout.strip()).glob(f"wheels/**/{name}-{version}-*.whl")})


def test_dockerfile_install_commands_give_a_working_inventory_job(tmp_path: Path) -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["inventory"]
    (pyspark,) = [requirement for requirement in extra if requirement.startswith("pyspark==")]
    # pyspark is an sdist: turning it into a wheel takes minutes. The wheel pip built from the same sdist when the
    # project's venv was installed is offered next to the index (the image build itself builds it).
    found = cached_wheel_dirs(pyspark)
    find_links = " ".join([os.environ.get("PIP_FIND_LINKS", ""), *found]).strip()
    started = time.monotonic()
    venv = install(
        tmp_path,
        stage(parse(ROOT / "Dockerfile"), "inventory-build"),
        {"PIP_FIND_LINKS": find_links} if find_links else None,
    )
    installed = time.monotonic() - started
    source = f"the cached {pyspark} wheel" if found else f"{pyspark} built from its sdist"
    print(f"\ninstall lines: {installed:.0f} s, with {source}")

    # The image's real build runs these lines too, and the chart's command in the image (test_image_build.py):
    # here the installed command and the Spark side of the job load.
    usage = subprocess.run(
        [venv / "bin" / "kafka-client-exporter", "inventory", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=clean_env(dict(os.environ)),
    )
    assert usage.returncode == 0 and "--incremental" in usage.stdout, usage.stderr[-3000:]
    probe = subprocess.run(
        [
            venv / "bin" / "python",
            "-c",
            "import exporter.request_logs.job as job, pyspark; print(job.__file__, pyspark.__version__)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=clean_env(dict(os.environ)),
    )
    location, spark_version = probe.stdout.split()
    assert location.startswith(str(venv)) and pyspark == f"pyspark=={spark_version}"
