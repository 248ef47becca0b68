"""The wheel ships the exporter alone: exporter/ with its data files and the dist-info; no broker double, tests,
benchmarks, Java or JavaScript (those run from the checkout).

Built as ``pip install .`` builds it: in an isolated environment with pyproject's build requirements, which pip
takes from its cache or the package index (the venv's own setuptools has no bdist_wheel).
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from exporter import __version__

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
# Local state that is not source; everything else of the checkout (kafka_double/, tests/, bench/ ...) is copied,
# so that the packaging configuration, not the copy, has to leave it out.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", ".tools", "node_modules", "__pycache__", "*.pyc", "*.egg-info", "build", "dist", "demo-data"
)
DATA_FILES = {
    "exporter/kafka_releases/api_versions_by_release.csv",
    "exporter/policy/default_policy.yaml",
    "exporter/sources/jmx_bridge/jmx-bridge.jar",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    work = tmp_path_factory.mktemp("wheel")
    # A copy: an in-tree build would leave build/ and *.egg-info in the checkout.
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE, symlinks=True)
    out = work / "dist"
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [built] = out.glob("*.whl")
    assert built.name.startswith(f"kafka_client_exporter-{__version__}-")
    return zipfile.ZipFile(built)


def test_only_the_exporter_package_and_its_data_ship(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    dist_info = f"kafka_client_exporter-{__version__}.dist-info/"
    outside = [n for n in names if not n.startswith(("exporter/", dist_info))]
    assert outside == []
    shipped = [PurePosixPath(n) for n in names if n.startswith("exporter/")]
    unexpected = [
        str(p)
        for p in shipped
        if p.suffix != ".py" and str(p) not in DATA_FILES and not (p.suffix == ".html" and p.parent.name == "templates")
    ]
    assert unexpected == []
    assert {str(p) for p in shipped} >= DATA_FILES
    assert "exporter/request_logs/templates/report.html" in names
    assert any(p.parent.name == "templates" and p.parts[1] == "web" for p in shipped)  # the status page
    # Belt and braces against a future include pattern: nothing of the double, the tests or the benchmarks.
    assert not [n for n in names if n.split("/")[0] in {"kafka_double", "tests", "bench", "samples"}]
    assert not [n for n in names if n.endswith((".java", ".js"))]


def test_the_wheel_holds_every_exporter_module_of_the_checkout(wheel: zipfile.ZipFile) -> None:
    in_checkout = {p.relative_to(ROOT).as_posix() for p in (ROOT / "exporter").rglob("*.py")}
    assert in_checkout <= set(wheel.namelist())


def test_the_command_is_declared(wheel: zipfile.ZipFile) -> None:
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(f"kafka_client_exporter-{__version__}.dist-info/entry_points.txt").decode())
    assert dict(entry_points["console_scripts"]) == {"kafka-client-exporter": "exporter.cli:main"}
