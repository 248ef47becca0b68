"""Every metric and label the alert rules use is one the exporter's catalog defines (no exporter needed)."""

from __future__ import annotations

from tests.support.promql import RULES_JOB_MATCHER, expr_problems, rule_exprs, unscoped_selectors


def test_rules_use_catalog_metrics_and_their_labels() -> None:
    rules = list(rule_exprs())
    assert rules
    problems = [problem for where, expr in rules for problem in expr_problems(where, expr)]
    assert not problems, "\n".join(problems)


def test_the_check_rejects_a_rule_grouping_by_a_label_its_metric_lacks() -> None:
    where, expr = next((w, e) for w, e in rule_exprs() if "KafkaClientInventoryIncomplete" in w)
    assert expr_problems(where, expr) == []
    broken = expr.replace("network_processor", "client_software_name")
    assert expr_problems(where, broken) == [
        f"{where}: by client_software_name, not a label of kafka_client_exporter_client_suite_full "
        "['kafka_cluster', 'broker', 'listener', 'network_processor']"
    ]


def test_the_check_rejects_a_rule_filtering_on_a_label_its_metric_lacks() -> None:
    where, expr = next((w, e) for w, e in rule_exprs() if "KafkaClientMetricsAuthorizationFailed" in w)
    broken = expr.replace('source="client_metrics"', 'api="ListClientMetricsResources"')
    assert expr_problems(where, broken) == [
        f"{where}: matcher api, not a label of kafka_client_exporter_errors_total "
        "['kafka_cluster', 'broker', 'source', 'reason']"
    ]


def test_the_check_rejects_a_rule_selecting_a_counter_without_total() -> None:
    where, expr = next((w, e) for w, e in rule_exprs() if "KafkaClientDeprecatedRequests" in w)
    broken = expr.replace("kafka_client_upgrade_blocking_requests_total", "kafka_client_upgrade_blocking_requests")
    assert [p for p in expr_problems(where, broken) if "not in the catalog" in p] == [
        f"{where}: kafka_client_upgrade_blocking_requests is not in the catalog; it is a counter, selected as "
        "kafka_client_upgrade_blocking_requests_total"
    ]


def test_every_selector_is_scoped_to_the_exporters_job() -> None:
    unscoped = [
        f"{where}: {selector}"
        for where, expr in rule_exprs()
        for selector in unscoped_selectors(expr, RULES_JOB_MATCHER)
    ]
    assert not unscoped, "\n".join(unscoped)


def test_the_scope_check_sees_a_bare_name_and_a_selector_without_the_job() -> None:
    expr = 'sum(a{job="kafka-client-exporter",x="1"}) / b{x="job=\\"kafka-client-exporter\\""} > c'
    assert unscoped_selectors(expr, RULES_JOB_MATCHER) == ['b{x="job=\\"kafka-client-exporter\\""}', "c"]
