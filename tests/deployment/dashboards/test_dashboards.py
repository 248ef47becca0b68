"""The Grafana dashboards: schema, conventions, and PromQL that parses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support.promql import (
    DASHBOARDS,
    ROOT,
    check_parses,
    dashboard_exprs,
    grafana_to_promql,
    metric_names,
)

SCHEMA = ROOT / ".tools" / "grafana-schema" / "dashboard.schema.json"
EXPECTED = {"kafka-client-inventory.json", "kafka-upgrade-readiness.json", "kafka-client-exporter-health.json"}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_the_three_dashboards_are_shipped() -> None:
    assert {path.name for path in DASHBOARDS} == EXPECTED


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    assert SCHEMA.is_file(), f"{SCHEMA} is missing; run bash scripts/setup.sh (scripts/setup.d/25-grafana-schema.sh)"
    return json.loads(SCHEMA.read_text())


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_validates_against_the_grafana_schema(path: Path, schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft7Validator(schema)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(load(path))]
    assert not errors, "\n".join(errors)


def test_schema_check_catches_a_broken_dashboard(schema: dict[str, Any]) -> None:
    broken = load(DASHBOARDS[0])
    broken["panels"][0]["gridPos"] = {"h": "tall"}
    assert not jsonschema.Draft7Validator(schema).is_valid(broken)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_variables_datasource_and_cascade(path: Path) -> None:
    dashboard = load(path)
    assert dashboard["schemaVersion"] >= 39
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    # job first: every other variable and query is scoped by it, so other jobs' kafka_* series never show.
    assert [v["name"] for v in dashboard["templating"]["list"]][:3] == ["datasource", "job", "kafka_cluster"]
    for name in ("job", "kafka_cluster", "broker", "listener"):
        assert variables[name]["type"] == "query"
        assert variables[name]["datasource"]["uid"] == "${datasource}"
        assert variables[name]["multi"] and variables[name]["includeAll"]
    assert "$job" in variables["kafka_cluster"]["definition"]
    assert "$kafka_cluster" in variables["broker"]["definition"]
    assert "$kafka_cluster" in variables["listener"]["definition"] and "$broker" in variables["listener"]["definition"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_panels_use_the_datasource_variable_units_and_regex_matchers(path: Path) -> None:
    dashboard = load(path)
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels:
        where = f"{path.name} panel {panel['title']!r}"
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, where
        assert panel["fieldConfig"]["defaults"].get("unit"), f"{where} has no unit"
        assert panel.get("description"), f"{where} has no description"
        assert panel["targets"], f"{where} has no query"
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", where
            # Multi-value variables expand to a regex: an exact matcher would match nothing for "All".
            assert not re.search(r'[!]?="\$', target["expr"]), f"{where} uses = with a variable; use =~"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_expression_parses(path: Path, tmp_path: Path) -> None:
    exprs = [(where, grafana_to_promql(expr)) for where, expr in dashboard_exprs(path)]
    check_parses(exprs, tmp_path)


def test_the_parse_check_rejects_broken_promql(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="promtool rejects"):
        check_parses([("broken", "sum by (a (foo)")], tmp_path)


def test_metric_names_are_extracted_from_promql() -> None:
    expr = (
        'sum by (a, b) (rate(foo_total{x="y",z=~"$cluster"}[5m])) / on (a) group_left sum by (a) (bar)'
        " or vector(0) + time() - baz:recorded offset 5m"
    )
    assert metric_names(expr) == {"foo_total", "bar", "baz:recorded"}
