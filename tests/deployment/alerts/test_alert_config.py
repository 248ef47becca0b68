"""alerts/config.yaml is the one place of the rules' durations and thresholds: the committed rules file and promtool
unit tests are its rendering of alerts/templates/, the unit tests follow other values too, and the renderer refuses
what is not a setting."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from alerts.render import (
    CONFIG,
    RULES_NAME,
    TEMPLATES,
    format_duration,
    humanize_duration,
    load_settings,
    main,
    parse_duration,
    render,
    render_rules,
    render_tests,
)
from tests.support.promql import ROOT, RULES_FILE, promtool

PACKAGING = "run bash scripts/package-chart.sh"
#: Every kind of setting away from its default, so that a unit test that does not follow them fails.
TUNED = {
    "KafkaClientBelowMinimumVersion.for": "40m",
    "KafkaClientBelowMinimumVersion.keepFiringFor": "30m",
    "KafkaClientDeniedVersion.for": "1h",
    "KafkaClientNotAllowed.for": "20m",
    "KafkaClientUnknownSoftware.for": "2h",
    "KafkaClientDeprecatedRequests.for": "10m",
    "KafkaClientDeprecatedRequests.window": "1h",
    "KafkaClientDeprecatedRequests.keepFiringFor": "0s",
    "KafkaClientInventoryIncomplete.for": "30m",
    "KafkaBrokerReleaseSkew.for": "1d",
    "KafkaClientExporterBrokerDown.for": "10m",
    "KafkaClientExporterDown.for": "2m",
    "KafkaClientExporterDown.lookback": "30m",
    "KafkaClientInventoryStale.for": "1h",
    "KafkaClientInventoryStale.maxAgeSeconds": "7200",
    "KafkaClientExporterCollectSlow.for": "30m",
    "KafkaClientExporterStale.for": "10m",
    "KafkaClientMetricsAuthorizationFailed.for": "2m",
    "KafkaClientMetricsAuthorizationFailed.window": "30m",
}


def test_the_committed_rules_and_unit_tests_are_the_templates_rendered_with_the_config() -> None:
    settings = load_settings()
    assert RULES_FILE.read_text() == render_rules(settings), f"{RULES_FILE.name} differs from its template: {PACKAGING}"
    rendered = render_tests(settings)
    committed = {path.name: path.read_text() for path in sorted((ROOT / "alerts" / "tests").glob("*.yaml"))}
    assert committed.keys() == rendered.keys(), (
        f"alerts/tests lists other files than alerts/templates/tests: {PACKAGING}"
    )
    for name, text in rendered.items():
        assert committed[name] == text, f"alerts/tests/{name} differs from its template: {PACKAGING}"


def test_every_setting_is_used_and_every_alert_has_one() -> None:
    settings = load_settings()
    templates = [TEMPLATES / RULES_NAME, *(TEMPLATES / "tests").glob("*.yaml")]
    named = {name for path in templates for name in re.findall(r"[A-Za-z]+\.[A-Za-z]+", _placeholders(path))}
    assert named == {f"{alert}.{key}" for alert, values in settings.items() for key in values}
    alerts = [rule["alert"] for group in yaml.safe_load(RULES_FILE.read_text())["groups"] for rule in group["rules"]]
    assert sorted(settings) == sorted(alerts)


def _placeholders(path: Path) -> str:
    return " ".join(re.findall(r"\$\{([^}]*)\}", path.read_text()))


def test_the_rules_template_names_settings_only_so_that_the_chart_can_render_it() -> None:
    # The chart substitutes plain names (templates/prometheusrule.yaml); arithmetic is for the unit tests only.
    for placeholder in re.findall(r"\$\{([^}]*)\}", (TEMPLATES / RULES_NAME).read_text()):
        assert re.fullmatch(r"[A-Za-z]+\.[A-Za-z]+", placeholder), placeholder


def test_each_alert_waits_and_keeps_firing_as_configured() -> None:
    settings = load_settings()
    for group in yaml.safe_load(RULES_FILE.read_text())["groups"]:
        for rule in group["rules"]:
            assert rule["for"] == settings[rule["alert"]]["for"], rule["alert"]
            assert rule.get("keep_firing_for") == settings[rule["alert"]].get("keepFiringFor"), rule["alert"]


def test_the_unit_tests_follow_other_settings(tmp_path: Path) -> None:
    """Rendered with every setting changed, the rules and their unit tests still agree, on promtool 3.x; the same
    tests fail against the default rules (they really moved with the settings)."""
    arguments = [argument for key, value in TUNED.items() for argument in ("--set", f"{key}={value}")]
    assert main(["--output", str(tmp_path), *arguments]) == 0
    tests = sorted(str(path) for path in (tmp_path / "tests").glob("*.test.yaml"))
    run = subprocess.run([promtool(), "test", "rules", *tests], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    (tmp_path / RULES_NAME).write_text(RULES_FILE.read_text())
    run = subprocess.run([promtool(), "test", "rules", *tests], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0


@pytest.mark.parametrize(
    ("text", "milliseconds", "written"),
    [("15m", 900_000, "15m"), ("1h30m", 5_400_000, "1h30m"), ("90m", 5_400_000, "1h30m"), ("2d", 172_800_000, "2d"),
     ("0s", 0, "0s"), ("7d", 604_800_000, "1w"), ("1500ms", 1500, "1s500ms")],
)  # fmt: skip
def test_durations_read_and_write_as_prometheus_does(text: str, milliseconds: int, written: str) -> None:
    assert parse_duration(text) == milliseconds
    assert format_duration(milliseconds) == written


def test_placeholders_compute_durations_steps_seconds_and_prometheus_humanized_ages() -> None:
    settings = load_settings(overrides={"KafkaClientDeniedVersion": {"for": "15m", "keepFiringFor": "10m"}})
    assert render("${KafkaClientDeniedVersion.for}", settings, "t") == "15m"
    assert render("${KafkaClientDeniedVersion.for + KafkaClientDeniedVersion.keepFiringFor - 1m}", settings, "t") == (
        "24m"
    )
    assert render("'1x${KafkaClientDeniedVersion.for + 25m / 1m}'", settings, "t") == "'1x40'"
    assert render("${KafkaClientInventoryStale.maxAgeSeconds - 3600}", settings, "t") == "169200"
    assert render("${KafkaClientInventoryStale.maxAgeSeconds + 35m | humanizeDuration}", settings, "t") == (
        "2d 0h 35m 0s"
    )
    assert humanize_duration(45) == "45s" and humanize_duration(3725) == "1h 2m 5s"


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("${KafkaClientDeniedVersion.window}", "names KafkaClientDeniedVersion.window, no setting"),
        ("${KafkaClientDeniedVersion.for - 1h}", "is negative"),
        ("${KafkaClientDeniedVersion.for / 7m}", "no whole number of 7m steps"),
        ("${KafkaClientDeniedVersion}", "cannot read"),
    ],
)
def test_a_placeholder_that_is_no_setting_or_cannot_be_computed_fails_naming_itself(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)):
        render(text, load_settings(), "some.test.yaml")


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"KafkaClientDeniedVersoin": {"for": "1h"}}, "no alert KafkaClientDeniedVersoin; the alerts are: "),
        ({"KafkaClientDeniedVersion": {"window": "1h"}}, "KafkaClientDeniedVersion has no setting window"),
        ({"KafkaClientDeniedVersion": {"for": "soon"}}, "'soon' is not a Prometheus duration"),
        ({"KafkaClientDeniedVersion": {"for": 60}}, "must be a duration"),
        ({"KafkaClientInventoryStale": {"maxAgeSeconds": "2d"}}, "must be a whole number"),
    ],
)
def test_an_override_the_config_does_not_have_is_refused(overrides: dict, complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)):
        load_settings(overrides=overrides)


def test_the_command_renders_an_operators_own_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = yaml.safe_load(CONFIG.read_text())
    config["KafkaClientDeniedVersion"]["for"] = "2h"
    own = tmp_path / "my-alerts.yaml"
    own.write_text(yaml.safe_dump(config))
    assert main(["--config", str(own), "--output", str(tmp_path / "out")]) == 0
    rules = yaml.safe_load((tmp_path / "out" / RULES_NAME).read_text())
    denied = next(r for g in rules["groups"] for r in g["rules"] if r["alert"] == "KafkaClientDeniedVersion")
    assert denied["for"] == "2h"
    assert f"with the settings of {own}" in (tmp_path / "out" / RULES_NAME).read_text()
    with pytest.raises(SystemExit):
        main(["--set", "KafkaClientDeniedVersion.for=2 hours", "--output", str(tmp_path / "bad")])
    assert "'2 hours' is not a Prometheus duration" in capsys.readouterr().err
