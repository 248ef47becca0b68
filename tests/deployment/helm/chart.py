"""Running helm on the chart and reading what it renders (shared by the chart tests)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "helm" / "kafka-client-exporter"
HELM = ROOT / ".tools" / "helm" / "helm"
NODE_MODULES = ROOT / ".tools" / "node" / "node_modules"
ALL_TOGGLES = Path(__file__).with_name("all-toggles.values.yaml")
PACKAGING = "run scripts/package-chart.sh"

Helm = Callable[..., subprocess.CompletedProcess]


def make_helm(home: Path, kubeconfig: Path | None = None) -> Helm:
    """helm with its cache, config and data under `home` (no state shared with the user's helm), talking to the
    cluster of `kubeconfig` (none: helm template and lint only)."""
    assert HELM.exists(), "helm is missing: run scripts/setup.sh (scripts/setup.d/30-helm.sh)"
    env = {**os.environ, **{f"HELM_{kind}_HOME": str(home / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")}}
    env.pop("KUBECONFIG", None)
    if kubeconfig is not None:
        # client-go's discovery cache too: the user's ~/.kube/cache must not answer for this cluster.
        env.update(KUBECONFIG=str(kubeconfig), KUBECACHEDIR=str(home / "kube-cache"))

    def run(*args: str | Path) -> subprocess.CompletedProcess:
        return subprocess.run([HELM, *args], capture_output=True, text=True, env=env, timeout=120)

    return run


def render(helm: Helm, *args: str | Path, release: str = "kce") -> str:
    result = helm("template", release, CHART, "--namespace", "monitoring", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def documents(manifest: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(manifest) if doc]


def by_kind(manifest: str, kind: str) -> list[dict]:
    return [doc for doc in documents(manifest) if doc["kind"] == kind]
