"""The PrometheusRules of the chart: the rules templates rendered as alerts/ renders them (alerts/config.yaml's
settings, or the values' over them), with the documented substitutions (job selector, runbook location, per-alert
overrides) and nothing else, each substitution on its own, and promtool accepting the result."""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from alerts.render import RULES_NAME, load_settings, render_rules
from tests.deployment.helm.chart import ALL_TOGGLES, CHART, PACKAGING, ROOT, Helm, by_kind, render
from tests.support.promql import promtool

SOURCE_SELECTOR = 'job="kafka-client-exporter"'
SOURCE_RUNBOOK = "https://github.com/kafka-client-exporter/kafka-client-exporter/blob/main/alerts/runbook.md"
ENABLED = ("--set", "prometheusRule.enabled=true")

Spec = dict
Transform = Callable[[Spec], None]


def source_specs() -> dict[str, Spec]:
    specs = {
        f"alerts/{path.name}": yaml.safe_load(path.read_text()) for path in sorted(ROOT.glob("alerts/*.rules.yaml"))
    }
    assert specs, "alerts/ holds no *.rules.yaml"
    return specs


def rendered_specs(helm: Helm, *args: str, release: str = "kafka-client-exporter") -> dict[str, Spec]:
    manifest = render(helm, *ENABLED, *args, release=release)
    return {
        rule["metadata"]["annotations"]["kafka-client-exporter/source"]: rule["spec"]
        for rule in by_kind(manifest, "PrometheusRule")
    }


def rules(spec: Spec) -> list[dict]:
    return [rule for group in spec["groups"] for rule in group["rules"]]


def alert_names() -> list[str]:
    return [rule["alert"] for spec in source_specs().values() for rule in rules(spec) if "alert" in rule]


def expected(transform: Transform) -> dict[str, Spec]:
    specs = copy.deepcopy(source_specs())
    for spec in specs.values():
        transform(spec)
    return specs


def alert(spec: Spec, name: str) -> dict | None:
    return next((rule for rule in rules(spec) if rule.get("alert") == name), None)


def test_the_sources_carry_what_the_chart_substitutes() -> None:
    """Every expression has the job matcher and every runbook_url the runbook prefix the chart replaces."""
    for spec in source_specs().values():
        for rule in rules(spec):
            assert SOURCE_SELECTOR in rule["expr"], rule.get("alert")
            if "alert" in rule:
                assert rule["annotations"]["runbook_url"].startswith(f"{SOURCE_RUNBOOK}#"), rule["alert"]


def test_with_the_release_named_after_the_chart_the_rules_equal_their_sources(helm: Helm) -> None:
    """The Service, hence the scrape job, is then called kafka-client-exporter: no substitution changes a thing."""
    assert rendered_specs(helm) == source_specs(), f"rendered PrometheusRules differ from alerts/: {PACKAGING}"


def selector_of(selector: str) -> Transform:
    """The matcher replaced in every expression, and in the queries of descriptions that name who runs a client."""

    def transform(spec: Spec) -> None:
        for rule in rules(spec):
            rule["expr"] = rule["expr"].replace(SOURCE_SELECTOR, selector)
            annotations = rule.get("annotations", {})
            if "description" in annotations:
                annotations["description"] = annotations["description"].replace(SOURCE_SELECTOR, selector)

    return transform


def test_descriptions_that_name_who_runs_a_client_query_with_the_job_matcher() -> None:
    named = [r["alert"] for spec in source_specs().values() for r in rules(spec) if "kafka_client_identity_info{" in
             r.get("annotations", {}).get("description", "")]  # fmt: skip
    assert len(named) == 5
    for spec in source_specs().values():
        for rule in rules(spec):
            if rule.get("alert") in named:
                assert f"kafka_client_identity_info{{{SOURCE_SELECTOR}," in rule["annotations"]["description"]


def test_the_inventory_age_limit_is_set_in_its_alert_only(helm: Helm) -> None:
    change = override(
        "KafkaClientInventoryStale", lambda rule: rule.update(expr=rule["expr"].replace("> 172800", "> 7200"))
    )
    assert rendered_specs(helm, "--set", "prometheusRule.inventoryMaxAgeSeconds=7200") == expected(change)


def rendered_with(overrides: dict[str, dict[str, object]]) -> dict[str, Spec]:
    """What scripts/package-chart.sh would have rendered into alerts/ with these settings over alerts/config.yaml."""
    return {f"alerts/{RULES_NAME}": yaml.safe_load(render_rules(load_settings(overrides=overrides)))}


@pytest.mark.parametrize(
    ("setting", "overrides"),
    [
        ("KafkaClientDeprecatedRequests.window=1h", {"KafkaClientDeprecatedRequests": {"window": "1h"}}),
        ("KafkaClientDeprecatedRequests.for=1h30m", {"KafkaClientDeprecatedRequests": {"for": "1h30m"}}),
        (
            "KafkaClientBelowMinimumVersion.keepFiringFor=30m",
            {"KafkaClientBelowMinimumVersion": {"keepFiringFor": "30m"}},
        ),
        ("KafkaClientInventoryStale.maxAgeSeconds=7200", {"KafkaClientInventoryStale": {"maxAgeSeconds": 7200}}),
        ("KafkaClientExporterDown.lookback=3h", {"KafkaClientExporterDown": {"lookback": "3h"}}),
    ],
)
def test_a_setting_renders_as_alerts_config_renders_it(helm: Helm, setting: str, overrides: dict) -> None:
    assert rendered_specs(helm, "--set", f"prometheusRule.rules.{setting}") == rendered_with(overrides)


def test_settings_from_a_values_file_keep_their_numbers_whole(helm: Helm, tmp_path: Path) -> None:
    # YAML numbers reach the template as floats, which Go prints as 1e+06.
    values = tmp_path / "settings.values.yaml"
    rules = {"KafkaClientInventoryStale": {"maxAgeSeconds": 1000000, "for": "1h"}}
    values.write_text(yaml.safe_dump({"prometheusRule": {"rules": rules}}))
    assert rendered_specs(helm, "--values", str(values)) == rendered_with(rules)


def test_a_maximum_age_in_rules_wins_over_the_older_inventory_max_age_seconds(helm: Helm) -> None:
    args = "prometheusRule.inventoryMaxAgeSeconds=7200,prometheusRule.rules.KafkaClientInventoryStale.maxAgeSeconds=600"
    assert rendered_specs(helm, "--set", args) == rendered_with({"KafkaClientInventoryStale": {"maxAgeSeconds": 600}})


def test_the_default_job_selector_is_the_scrape_job(helm: Helm) -> None:
    assert rendered_specs(helm, release="kce") == expected(selector_of('job="kce-kafka-client-exporter"'))
    assert rendered_specs(helm, "--set", "fullnameOverride=kafka-clients") == expected(
        selector_of('job="kafka-clients"')
    )


def test_the_job_selector_follows_the_service_monitors_job_label(helm: Helm) -> None:
    args = ("--set", "serviceMonitor.enabled=true,serviceMonitor.jobLabel=team,service.labels.team=streaming")
    assert rendered_specs(helm, *args) == expected(selector_of('job="streaming"'))
    result = helm("template", "kce", CHART, *ENABLED, "--set", "serviceMonitor.jobLabel=team")
    assert result.returncode != 0
    assert 'serviceMonitor.jobLabel "team" is not a label of the Service' in result.stderr


def job_selector_values(selector: str, directory: Path) -> Path:
    """A values file setting the selector (--set would split it at its commas)."""
    path = directory / "job-selector.values.yaml"
    path.write_text(yaml.safe_dump({"prometheusRule": {"jobSelector": selector}}))
    return path


def test_a_job_selector_replaces_the_matcher_in_every_expression(helm: Helm, tmp_path: Path) -> None:
    selector = 'job=~"kafka/kce.*",namespace="monitoring"'
    values = job_selector_values(selector, tmp_path)
    assert rendered_specs(helm, "--values", str(values)) == expected(selector_of(selector))


def test_a_runbook_base_url_replaces_the_runbook_location_and_keeps_the_anchors(helm: Helm) -> None:
    base = "https://wiki.example/kafka/runbook"

    def transform(spec: Spec) -> None:
        for rule in rules(spec):
            rule["annotations"]["runbook_url"] = rule["annotations"]["runbook_url"].replace(SOURCE_RUNBOOK, base)

    assert rendered_specs(helm, "--set", f"prometheusRule.runbookBaseUrl={base}/") == expected(transform)


def override(name: str, change: Callable[[dict], None]) -> Transform:
    def transform(spec: Spec) -> None:
        rule = alert(spec, name)
        if rule is not None:
            change(rule)

    return transform


def disable(name: str) -> Transform:
    def transform(spec: Spec) -> None:
        for group in spec["groups"]:
            group["rules"] = [rule for rule in group["rules"] if rule.get("alert") != name]
        spec["groups"] = [group for group in spec["groups"] if group["rules"]]

    return transform


@pytest.mark.parametrize(
    ("setting", "transform"),
    [
        ("KafkaClientUnknownSoftware.disabled=true", disable("KafkaClientUnknownSoftware")),
        ("KafkaClientUnknownSoftware.disabled=false", lambda spec: None),
        # The only alert of its group: the group goes too.
        ("KafkaBrokerReleaseSkew.disabled=true", disable("KafkaBrokerReleaseSkew")),
        (
            "KafkaClientDeprecatedRequests.for=1h30m",
            override("KafkaClientDeprecatedRequests", lambda r: r.update({"for": "1h30m"})),
        ),
        # An alert that fires at once (for: 0s) can wait.
        (
            "KafkaClientMetricsAuthorizationFailed.for=30m",
            override("KafkaClientMetricsAuthorizationFailed", lambda r: r.update({"for": "30m"})),
        ),
        (
            "KafkaClientNotAllowed.severity=critical",
            override("KafkaClientNotAllowed", lambda r: r["labels"].update(severity="critical")),
        ),
        (
            "KafkaClientNotAllowed.labels.team=streaming",
            override("KafkaClientNotAllowed", lambda r: r["labels"].update(team="streaming")),
        ),
    ],
)
def test_each_alert_override_changes_that_alert_only(helm: Helm, setting: str, transform: Transform) -> None:
    assert rendered_specs(helm, "--set", f"prometheusRule.rules.{setting}") == expected(transform)


def test_an_override_of_an_unknown_alert_fails_naming_the_alerts(helm: Helm) -> None:
    result = helm(
        "template", "kce", CHART, *ENABLED, "--set", "prometheusRule.rules.KafkaClientUnknownSofware.disabled=true"
    )
    assert result.returncode != 0
    assert "prometheusRule.rules.KafkaClientUnknownSofware: no such alert; the alerts are: " in result.stderr
    listed = result.stderr.split("the alerts are: ", 1)[1].splitlines()[0].split(", ")
    assert sorted(listed) == sorted(alert_names())


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("prometheusRule.jobSelector=kafka-client-exporter", "/prometheusRule/jobSelector"),
        (
            "prometheusRule.rules.KafkaClientNotAllowed.severity=page",
            "/prometheusRule/rules/KafkaClientNotAllowed/severity",
        ),
        ("prometheusRule.rules.KafkaClientNotAllowed.for=soon", "/prometheusRule/rules/KafkaClientNotAllowed/for"),
        ("prometheusRule.rules.KafkaClientNotAllowed.disable=true", "disable"),
        ("prometheusRule.runbookBaseUrl=wiki/runbook", "/prometheusRule/runbookBaseUrl"),
        # A setting of another alert, a threshold that is not a duration, an age under a minute.
        ("prometheusRule.rules.KafkaClientDeniedVersion.window=1h", "window"),
        (
            "prometheusRule.rules.KafkaClientDeprecatedRequests.window=soon",
            "/prometheusRule/rules/KafkaClientDeprecatedRequests/window",
        ),
        (
            "prometheusRule.rules.KafkaClientInventoryStale.maxAgeSeconds=10",
            "/prometheusRule/rules/KafkaClientInventoryStale/maxAgeSeconds",
        ),
    ],
)
def test_wrong_rule_settings_are_rejected(helm: Helm, setting: str, complaint: str) -> None:
    result = helm("template", "kce", CHART, *ENABLED, "--set", setting)
    assert result.returncode != 0
    assert complaint in result.stderr


def test_promtool_accepts_the_rendered_rules(helm: Helm, tmp_path: Path) -> None:
    values = job_selector_values('job=~"a|b", x!="y"', tmp_path)
    manifest = render(helm, "--values", ALL_TOGGLES, "--values", values)
    (rule,) = by_kind(manifest, "PrometheusRule")
    assert 'job=~"a|b", x!="y"' in rule["spec"]["groups"][0]["rules"][0]["expr"]
    path = tmp_path / "rendered.rules.yaml"
    path.write_text(yaml.safe_dump(rule["spec"]))
    run = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
