"""Helpers shared by the dashboard and alert tests: PromQL expressions in our files, the metric names and labels
they use, and a promtool syntax check."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from exporter.collectors.catalog import BY_SAMPLE_NAME, NETWORK_PROCESSOR, Kind
from harness.prometheus_process import PROMTOOL, built

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
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_SELECTOR = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
_CLAUSE = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_LABEL_VALUES_CALL = re.compile(r"label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$")


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects (label matchers, ranges, grouping clauses and functions removed)."""
    stripped = re.sub(r"\{[^}]*\}", " ", expr)
    stripped = re.sub(r"\[[^\]]*\]", " ", stripped)
    stripped = _GROUPING.sub(" ", stripped)
    return {name for name in _IDENTIFIER.findall(stripped) if name.lower() not in _KEYWORDS}


@dataclass(frozen=True)
class LabelUse:
    """A label an expression filters or groups by, and the metrics whose series must carry it."""

    label: str
    metrics: frozenset[str]
    clause: str  # `matcher`, `by`, `without`, `on`, `ignoring`, `group_left`, `group_right` or `label_values`


def label_uses(expr: str) -> list[LabelUse]:
    """Labels in `{label=...}` matchers (of the selector they belong to), in `by`/`without` (of the metrics in the
    aggregated expression) and in `on`/`ignoring`/`group_left`/`group_right` (of every metric in the expression:
    vector matching joins both sides on them)."""
    # Blank out string contents (keeping offsets) so `=`, parentheses or braces in a value are not syntax.
    masked = _STRING.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], expr)
    uses = [
        LabelUse(label, frozenset({metric}), "matcher")
        for metric, body in _SELECTOR.findall(masked)
        for label in _MATCHER.findall(body)
    ]
    everything = frozenset(metric_names(masked))
    for clause in _CLAUSE.finditer(masked):
        keyword, labels = clause.group(1), [label.strip() for label in clause.group(2).split(",") if label.strip()]
        if keyword in ("by", "without"):
            metrics = frozenset(metric_names(_aggregated(masked, clause.start(), clause.end())))
        else:
            metrics = everything
        uses.extend(LabelUse(label, metrics, keyword) for label in labels)
    return uses


def _aggregated(expr: str, start: int, end: int) -> str:
    """The argument of the aggregation whose `by`/`without` clause spans expr[start:end]: the parenthesised
    expression after it (`sum by (a) (x)`) or, in the trailing form, before it (`sum (x) by (a)`)."""
    after = expr[end:].lstrip()
    if after.startswith("("):
        opening = len(expr) - len(after)
        return expr[opening : _matching(expr, opening, +1) + 1]
    before = expr[:start].rstrip()
    assert before.endswith(")"), f"no aggregated expression next to {expr[start:end]!r} in {expr!r}"
    closing = len(before) - 1
    return expr[_matching(expr, closing, -1) : closing + 1]


def _matching(expr: str, index: int, step: int) -> int:
    depth = 0
    while 0 <= index < len(expr):
        depth += {"(": step, ")": -step}.get(expr[index], 0)
        if depth == 0:
            return index
        index += step
    raise AssertionError(f"unbalanced parentheses in {expr!r}")


# The matcher that keeps our alerts and dashboards off other jobs' series of the same names.
RULES_JOB_MATCHER = 'job="kafka-client-exporter"'
DASHBOARD_JOB_MATCHER = 'job=~"$job"'


def unscoped_selectors(expr: str, job_matcher: str) -> list[str]:
    """The metric selectors of an expression that lack `job_matcher`: bare names and `{...}` selectors without it."""
    masked = _STRING.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], expr)
    unscoped = []
    for selector in _SELECTOR.finditer(masked):
        body = expr[selector.start(2) : selector.end(2)]
        if job_matcher not in [matcher.strip() for matcher in body.split(",")]:
            unscoped.append(expr[selector.start() : selector.end()])
    unscoped.extend(sorted(metric_names(_SELECTOR.sub(" ", masked))))
    return unscoped


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


def variable_definitions(path: Path) -> Iterator[tuple[str, str]]:
    """(where, definition) for every query variable of a dashboard."""
    dashboard = json.loads(path.read_text())
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield f"{path.name} variable {variable['name']}", variable["definition"]


def variable_metric_names(path: Path) -> set[str]:
    return {name for _, definition in variable_definitions(path) for name in _LABEL_VALUES.findall(definition)}


def variable_selector(definition: str) -> str:
    """The selector of a `label_values(selector, label)` variable."""
    call = _LABEL_VALUES_CALL.match(definition.strip())
    assert call, f"not a label_values(selector, label) query: {definition!r}"
    return call.group(1)


def variable_label_uses(definition: str) -> list[LabelUse]:
    """The matchers of a `label_values(selector, label)` variable, and the label whose values it lists."""
    call = _LABEL_VALUES_CALL.match(definition.strip())
    assert call, f"not a label_values(selector, label) query: {definition!r}"
    selector, label = call.groups()
    return [*label_uses(selector), LabelUse(label, frozenset(metric_names(selector)), "label_values")]


def rule_exprs() -> Iterator[tuple[str, str]]:
    for group in yaml.safe_load(RULES_FILE.read_text())["groups"]:
        for rule in group["rules"]:
            yield f"{RULES_FILE.name} {rule.get('alert') or rule.get('record')}", rule["expr"]


# Target labels Prometheus attaches to every scraped series.
PROMETHEUS_LABELS = frozenset({"job", "instance"})
# Series Prometheus itself writes for every target (its health), which the rules may read: only those labels.
PROMETHEUS_SERIES = frozenset({"up"})


def catalog_problems(where: str, names: Iterable[str], uses: Iterable[LabelUse]) -> list[str]:
    """What an expression selects or groups by that the exporter's catalog does not define. Opt-in labels count as
    missing: shipped dashboards and alerts must work with the default settings."""
    problems = [
        f"{where}: {name} is not in the catalog{_suffix_hint(name)}"
        for name in sorted(set(names))
        if name not in BY_SAMPLE_NAME and name not in PROMETHEUS_SERIES
    ]
    for use in uses:
        for metric in sorted(use.metrics & BY_SAMPLE_NAME.keys()):
            labels = BY_SAMPLE_NAME[metric].label_names(network_processor_label=False)
            if use.label not in labels and use.label not in PROMETHEUS_LABELS:
                opt_in = " (opt-in: collection.network_processor_label)" if use.label == NETWORK_PROCESSOR else ""
                problems.append(f"{where}: {use.clause} {use.label}{opt_in}, not a label of {metric} {labels}")
    return problems


def expr_problems(where: str, expr: str) -> list[str]:
    return catalog_problems(where, metric_names(expr), label_uses(expr))


def variable_problems(where: str, definition: str) -> list[str]:
    return catalog_problems(where, _LABEL_VALUES.findall(definition), variable_label_uses(definition))


def _suffix_hint(name: str) -> str:
    if (counter := BY_SAMPLE_NAME.get(f"{name}_total")) is not None and counter.kind is Kind.COUNTER:
        return f"; it is a counter, selected as {counter.sample_name}"
    if (gauge := BY_SAMPLE_NAME.get(name.removesuffix("_total"))) is not None and gauge.kind is Kind.GAUGE:
        return f"; it is a gauge, selected as {gauge.sample_name}"
    return ""


def promtool() -> str:
    """Prometheus 3.x's promtool, as the set-up builds it (scripts/setup.d/05-prometheus.sh)."""
    return built(PROMTOOL)


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


def promtool_expr_test(
    workdir: Path, input_series: list[dict[str, str]], expr: str, expected: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` of one PromQL expression over `input_series` (1 m apart), evaluated at 5 m against the
    `expected` samples; the file is written under `workdir`."""
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": input_series,
                "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": expected}],
            }
        ],
    }
    path = workdir / "panel.test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run([promtool(), "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
