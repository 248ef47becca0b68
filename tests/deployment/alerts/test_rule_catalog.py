"""Every metric and label the alert rules use is one the exporter's catalog defines (no exporter needed)."""

from __future__ import annotations

from tests.support.promql import expr_problems, rule_exprs


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
        "['cluster', 'broker', 'listener', 'network_processor']"
    ]


def test_the_check_rejects_a_rule_filtering_on_a_label_its_metric_lacks() -> None:
    where, expr = next((w, e) for w, e in rule_exprs() if "KafkaClientMetricsAuthorizationFailed" in w)
    broken = expr.replace('source="client_metrics"', 'api="ListClientMetricsResources"')
    assert expr_problems(where, broken) == [
        f"{where}: matcher api, not a label of kafka_client_exporter_errors_total "
        "['cluster', 'broker', 'source', 'reason']"
    ]


def test_the_check_rejects_a_rule_selecting_a_counter_without_total() -> None:
    where, expr = next((w, e) for w, e in rule_exprs() if "KafkaClientDeprecatedRequests" in w)
    broken = expr.replace("kafka_client_deprecated_requests_total", "kafka_client_deprecated_requests")
    assert [p for p in expr_problems(where, broken) if "not in the catalog" in p] == [
        f"{where}: kafka_client_deprecated_requests is not in the catalog; it is a counter, selected as "
        "kafka_client_deprecated_requests_total"
    ]
