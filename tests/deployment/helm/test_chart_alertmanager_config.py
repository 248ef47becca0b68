"""The chart's AlertmanagerConfig: off by default, valid against the operator's CRD schema, and the example
Alertmanager configuration (alerts/alertmanager.example.yaml) in the operator's form, its Slack and PagerDuty
credentials taken from Secrets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from harness.alertmanager_process import example_config
from tests.deployment.helm.chart import ALL_TOGGLES, CHART, Helm, by_kind, render
from tests.deployment.helm.test_chart import validate_crds

SLACK = ("--set", "alertmanagerConfig.enabled=true,alertmanagerConfig.slack.apiURL.name=kafka-alerting")
PAGERDUTY = ("--set", "alertmanagerConfig.pagerduty.routingKey.name=kafka-alerting")


def matchers(written: list[str]) -> list[dict[str, str]]:
    """The example's `name<op>"value"` matchers in the operator's form."""
    parsed = []
    for matcher in written:
        found = re.fullmatch(r'\s*(\w+)\s*(=~|!~|!=|=)\s*"(.*)"\s*', matcher)
        assert found, matcher
        parsed.append({"name": found.group(1), "matchType": found.group(2), "value": found.group(3)})
    return parsed


def rendered(helm: Helm, *args: str | Path) -> dict[str, Any]:
    (config,) = by_kind(render(helm, *args), "AlertmanagerConfig")
    return dict(config)


def test_there_is_none_by_default(helm: Helm) -> None:
    assert not by_kind(render(helm), "AlertmanagerConfig")


def test_with_every_toggle_it_is_valid_against_the_crd_schema(helm: Helm, tmp_path: Path) -> None:
    config = rendered(helm, "--values", ALL_TOGGLES)
    assert config["metadata"]["labels"]["alertmanagerConfig"] == "kafka"
    manifest = render(helm, "--values", ALL_TOGGLES)
    assert "ok AlertmanagerConfig kce-kafka-client-exporter" in validate_crds(manifest, tmp_path)


def test_it_routes_groups_and_inhibits_as_the_example_does(helm: Helm) -> None:
    example = example_config()
    route = example["route"]["routes"][0]
    spec = rendered(helm, *SLACK, *PAGERDUTY)["spec"]
    assert spec["route"] == {
        "receiver": route["receiver"],
        "groupBy": route["group_by"],
        "groupWait": route["group_wait"],
        "groupInterval": route["group_interval"],
        "repeatInterval": route["repeat_interval"],
        "matchers": matchers(route["matchers"]),
        "routes": [
            {
                "receiver": child["receiver"],
                "matchers": matchers(child["matchers"]),
                "repeatInterval": child["repeat_interval"],
            }
            for child in route["routes"]
        ],
    }
    assert spec["inhibitRules"] == [
        {
            "sourceMatch": matchers(rule["source_matchers"]),
            "targetMatch": matchers(rule["target_matchers"]),
            "equal": rule["equal"],
        }
        for rule in example["inhibit_rules"]
    ]


def test_its_messages_are_the_examples_with_the_credentials_from_secrets(helm: Helm) -> None:
    example = {receiver["name"]: receiver for receiver in example_config()["receivers"]}
    receivers = {receiver["name"]: receiver for receiver in rendered(helm, *SLACK, *PAGERDUTY)["spec"]["receivers"]}
    assert set(receivers) == {"kafka-clients-oncall", "kafka-clients-tickets", "kafka-clients-info"}
    for name, channel in (("kafka-clients-tickets", "#kafka-clients"), ("kafka-clients-info", "#kafka-clients-info")):
        (slack,) = example[name]["slack_configs"]
        assert receivers[name]["slackConfigs"] == [
            {
                "apiURL": {"name": "kafka-alerting", "key": "url"},
                "channel": channel,
                "sendResolved": slack["send_resolved"],
                "title": slack["title"],
                "titleLink": slack["title_link"],
                "text": slack["text"],
            }
        ]
    (pagerduty,) = example["kafka-clients-oncall"]["pagerduty_configs"]
    assert receivers["kafka-clients-oncall"]["pagerdutyConfigs"] == [
        {
            "routingKey": {"name": "kafka-alerting", "key": "routing-key"},
            "sendResolved": pagerduty["send_resolved"],
            "description": pagerduty["description"],
            "details": [{"key": key, "value": value} for key, value in sorted(pagerduty["details"].items())],
            "pagerDutyLinkConfigs": [{"href": link["href"], "alt": link["text"]} for link in pagerduty["links"]],
        }
    ]


def test_without_pagerduty_critical_alerts_go_to_the_warnings_channel(helm: Helm) -> None:
    spec = rendered(helm, *SLACK)["spec"]
    assert {receiver["name"] for receiver in spec["receivers"]} == {"kafka-clients-tickets", "kafka-clients-info"}
    critical = next(r for r in spec["route"]["routes"] if r["matchers"][0]["value"] == "critical")
    assert critical["receiver"] == "kafka-clients-tickets"


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (("--set", "alertmanagerConfig.enabled=true"), "alertmanagerConfig.slack.apiURL.name: the Secret"),
        ((*SLACK, "--set", "alertmanagerConfig.slack.apiURL.key="), "/alertmanagerConfig/slack/apiURL/key"),
        ((*SLACK, "--set", "alertmanagerConfig.webhook=x"), "webhook"),
    ],
)
def test_wrong_values_are_rejected(helm: Helm, args: tuple[str, ...], complaint: str) -> None:
    result = helm("template", "kce", CHART, *args)
    assert result.returncode != 0
    assert complaint in result.stderr
