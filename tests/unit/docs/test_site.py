"""The documentation site builds with `mkdocs build --strict`: every link and heading anchor of README.md and docs/
resolves (mkdocs checks those between pages; docs_gen/mkdocs_hooks.py those to the repository's other files)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from docs_gen import mkdocs_hooks as hooks

ROOT = Path(__file__).resolve().parents[3]
GITHUB = "https://github.com/o/r"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "docs" / "images").mkdir(parents=True)
    (tmp_path / "docs" / "metrics.md").write_text("# Metrics\n\n## Every series\n")
    (tmp_path / "docs" / "images" / "a.png").write_bytes(b"")
    (tmp_path / "alerts").mkdir()
    (tmp_path / "alerts" / "runbook.md").write_text("# Runbook\n\n## KafkaClientExporterDown\n")
    (tmp_path / "alerts" / "README.md").write_text("# Alert rules\n\n## Files `here`\n")
    (tmp_path / "exporter").mkdir()
    (tmp_path / "exporter" / "cli.py").write_text("")
    (tmp_path / "README.md").write_text("# x\n")
    return tmp_path


@pytest.mark.parametrize(
    ("page", "target", "expected"),
    [
        # Pages of the site: where they are in it, anchors kept for mkdocs to check.
        ("README.md", "docs/metrics.md#every-series", "metrics.md#every-series"),
        ("README.md", "docs/images/a.png", "images/a.png"),
        ("README.md", "alerts/runbook.md#kafkaclientexporterdown", "runbook.md#kafkaclientexporterdown"),
        ("docs/metrics.md", "../alerts/runbook.md", "runbook.md"),
        ("docs/metrics.md", "../README.md", "index.md"),
        ("alerts/runbook.md", "../docs/metrics.md", "metrics.md"),
        # Other files of the repository: on GitHub.
        ("docs/metrics.md", "../exporter/cli.py", f"{GITHUB}/blob/main/exporter/cli.py"),
        ("docs/metrics.md", "../exporter/", f"{GITHUB}/tree/main/exporter"),
        ("README.md", "alerts/README.md#files-here", f"{GITHUB}/blob/main/alerts/README.md#files-here"),
        # Left alone.
        ("docs/metrics.md", "https://prometheus.io/", "https://prometheus.io/"),
        ("docs/metrics.md", "#every-series", "#every-series"),
    ],
)
def test_links_point_where_their_target_is(repo: Path, page: str, target: str, expected: str) -> None:
    assert hooks.rewrite_target(target, page, GITHUB, repo) == (expected, None)


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("../exporter/gone.py", "docs/metrics.md: link '../exporter/gone.py': exporter/gone.py does not exist"),
        ("../../elsewhere.md", "docs/metrics.md: link '../../elsewhere.md' leaves the repository"),
        (
            "../alerts/README.md#nowhere",
            "docs/metrics.md: link '../alerts/README.md#nowhere': no heading #nowhere in alerts/README.md",
        ),
    ],
)
def test_a_link_to_nothing_is_a_problem(repo: Path, target: str, problem: str) -> None:
    assert hooks.rewrite_target(target, "docs/metrics.md", GITHUB, repo) == (target, problem)


def test_links_are_rewritten_across_lines_and_never_in_code(repo: Path) -> None:
    markdown = (
        "See [the\nmetrics](docs/metrics.md) and ![a](docs/images/a.png).\n"
        "```sh\necho [x](docs/metrics.md)\n```\n"
        "[cli](exporter/cli.py)\n"
    )
    rewritten, problems = hooks.rewrite_links(markdown, "README.md", GITHUB, repo)
    assert problems == []
    assert rewritten == (
        "See [the\nmetrics](metrics.md) and ![a](images/a.png).\n"
        "```sh\necho [x](docs/metrics.md)\n```\n"
        f"[cli]({GITHUB}/blob/main/exporter/cli.py)\n"
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    warnings = [line for line in build.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert build.returncode == 0, "\n".join(warnings) or build.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "runbook" / "index.html").is_file()
