"""Every metric and label the dashboards use is one the exporter's catalog defines (no exporter needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.promql import (
    DASHBOARD_JOB_MATCHER,
    DASHBOARDS,
    LabelUse,
    dashboard_exprs,
    expr_problems,
    label_uses,
    unscoped_selectors,
    variable_definitions,
    variable_problems,
    variable_selector,
)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_panel_queries_use_catalog_metrics_and_their_labels(path: Path) -> None:
    problems = [problem for where, expr in dashboard_exprs(path) for problem in expr_problems(where, expr)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_variables_use_catalog_metrics_and_their_labels(path: Path) -> None:
    definitions = list(variable_definitions(path))
    assert definitions
    problems = [problem for where, definition in definitions for problem in variable_problems(where, definition)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_and_variable_is_scoped_by_the_job_variable(path: Path) -> None:
    # The job variable itself lists the jobs, so it is the one query that cannot be scoped by it.
    variables = [(w, variable_selector(d)) for w, d in variable_definitions(path) if not w.endswith("variable job")]
    queries = [*dashboard_exprs(path), *variables]
    unscoped = [f"{w}: {sel}" for w, query in queries for sel in unscoped_selectors(query, DASHBOARD_JOB_MATCHER)]
    assert not unscoped, "\n".join(unscoped)


@pytest.mark.parametrize(
    ("expr", "complaint"),
    [
        ("sum(kafka_client_connections_total)", "it is a gauge, selected as kafka_client_connections"),
        ("rate(kafka_client_exporter_errors[5m])", "it is a counter, selected as kafka_client_exporter_errors_total"),
        ("kafka_client_exporter_up_typo", "kafka_client_exporter_up_typo is not in the catalog"),
        ('kafka_client_exporter_up{listener="a"}', "matcher listener, not a label of kafka_client_exporter_up"),
        ("sum by (reason) (kafka_client_connections)", "by reason, not a label of kafka_client_connections"),
        ("sum(kafka_broker_release_info) by (api)", "by api, not a label of kafka_broker_release_info"),
        ("max without (host) (kafka_broker_api_version_max)", "without host, not a label of kafka_broker_api_"),
        (
            "kafka_client_exporter_up * on (cluster, broker, listener) group_left kafka_broker_release_info",
            "on listener, not a label of kafka_broker_release_info",
        ),
        (
            "sum by (network_processor) (kafka_client_connections)",
            "by network_processor (opt-in: collection.network_processor_label)",
        ),
    ],
)
def test_the_check_rejects_broken_queries(expr: str, complaint: str) -> None:
    assert complaint in "\n".join(expr_problems("panel", expr))


def test_the_check_accepts_target_labels_and_counters_by_their_series_name() -> None:
    expr = 'sum by (job, instance, reason) (rate(kafka_client_exporter_errors_total{source="jmx"}[5m]))'
    assert expr_problems("panel", expr) == []


def test_the_check_rejects_a_broken_variable() -> None:
    assert variable_problems(
        "var", 'label_values(kafka_client_exporter_up{kafka_cluster=~"$kafka_cluster"}, listener)'
    ) == ["var: label_values listener, not a label of kafka_client_exporter_up ['kafka_cluster', 'broker', 'source']"]
    assert "is not in the catalog" in variable_problems("var", "label_values(kafka_client_conns, broker)")[0]


def test_labels_are_attributed_to_the_metrics_they_apply_to() -> None:
    expr = (
        'sum by (a) (rate(foo_total{x="y,b=(",z=~"$cluster"}[5m])) / on (c) group_left sum (bar) without (d)'
        " > bool count by (e) (count by (e, f) (baz))"
    )
    foo, bar, baz, every = {"foo_total"}, {"bar"}, {"baz"}, {"foo_total", "bar", "baz"}
    assert set(label_uses(expr)) == {
        LabelUse("x", frozenset(foo), "matcher"),
        LabelUse("z", frozenset(foo), "matcher"),
        LabelUse("a", frozenset(foo), "by"),
        LabelUse("c", frozenset(every), "on"),
        LabelUse("d", frozenset(bar), "without"),
        LabelUse("e", frozenset(baz), "by"),
        LabelUse("f", frozenset(baz), "by"),
    }
