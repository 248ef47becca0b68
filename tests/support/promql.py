"""Helpers shared by the dashboard and alert tests: PromQL expressions in our files, the metric names they use,
and a promtool syntax check."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "dashboards" / "grafana").glob("*.json"))
RULES_FILE = ROOT / "alerts" / "kafka-client-exporter.rules.yaml"

_KEYWORDS = frozenset(
    {
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "inf",
        "nan",
    }
)
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()")
_LABEL_VALUES = re.compile(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)")


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects (label matchers, ranges, grouping clauses and functions removed)."""
    stripped = re.sub(r"\{[^}]*\}", " ", expr)
    stripped = re.sub(r"\[[^\]]*\]", " ", stripped)
    stripped = _GROUPING.sub(" ", stripped)
    return {name for name in _IDENTIFIER.findall(stripped) if name.lower() not in _KEYWORDS}


def grafana_to_promql(expr: str) -> str:
    """Replace Grafana's variables with values Prometheus parses (the variables only occur in strings and ranges)."""
    expr = re.sub(r"\$__(?:rate_interval|interval|range)\b", "5m", expr)
    return re.sub(r"\$\{?\w+\}?", ".*", expr)


def dashboard_exprs(path: Path) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target of a dashboard."""
    dashboard = json.loads(path.read_text())
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield f"{path.name} panel {panel['id']} ({panel['title']}) {target['refId']}", target["expr"]


def variable_metric_names(path: Path) -> set[str]:
    dashboard = json.loads(path.read_text())
    names: set[str] = set()
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            names.update(_LABEL_VALUES.findall(variable["definition"]))
    return names


def rule_exprs() -> Iterator[tuple[str, str]]:
    for group in yaml.safe_load(RULES_FILE.read_text())["groups"]:
        for rule in group["rules"]:
            yield f"{RULES_FILE.name} {rule.get('alert') or rule.get('record')}", rule["expr"]


def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is not on PATH; run bash scripts/setup.sh (scripts/setup.d/20-prometheus.sh installs it)"
    return path


def check_parses(exprs: list[tuple[str, str]], workdir: Path) -> None:
    """Fail naming the expression that promtool cannot parse (each wrapped into a recording rule)."""
    rules = {
        "groups": [{"name": "exprs", "rules": [{"record": f"expr_{i}", "expr": e} for i, (_, e) in enumerate(exprs)]}]
    }
    rules_file = workdir / "exprs.rules.yaml"
    rules_file.write_text(yaml.safe_dump(rules))
    run = subprocess.run([promtool(), "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        failing = [where for i, (where, _) in enumerate(exprs) if f'expr_{i}"' in run.stderr + run.stdout]
        raise AssertionError(f"promtool rejects {failing or 'an expression'}:\n{run.stdout}\n{run.stderr}")
