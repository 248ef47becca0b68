"""The alert rules and their promtool unit tests rendered from alerts/templates/ with the tunables of alerts/config.yaml
(the monitoring-mixins' ``_config``): one place for every ``for``, ``keep_firing_for`` and threshold, used by the
committed rules file and tests, the Helm chart (which renders the same templates, values over the same file), the
demo and the end-to-end tests (which shorten them).

A template names a setting as ``${Alert.setting}``. The unit tests' templates may also compute with it, so that they
follow any value: ``${Alert.for + 5m}``, ``${Alert.for + Alert.keepFiringFor - 1m}`` (a duration), ``${Alert.for +
20m / 1m}`` (how many 1m steps: a series' length), ``${Alert.maxAgeSeconds - 3600}`` (whole numbers are seconds),
``${Alert.maxAgeSeconds + 35m | humanizeDuration}`` (as Prometheus' template function prints it). The rules' template
uses plain names only (the chart's renderer substitutes no more).

``python -m alerts.render`` writes alerts/kafka-client-exporter.rules.yaml and alerts/tests/
(scripts/package-chart.sh runs it); ``--config FILE``, ``--set Alert.setting=value`` and ``--output DIR`` render
an operator's own values elsewhere.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

#: This directory (the rules, their templates and settings), in the checkout whose root is REPO_ROOT.
ALERTS = Path(__file__).resolve().parent
REPO_ROOT = ALERTS.parent
CONFIG = ALERTS / "config.yaml"
TEMPLATES = ALERTS / "templates"
RULES_NAME = "kafka-client-exporter.rules.yaml"
#: Settings every alert may be given in the chart besides its tunables (prometheusRule.rules.<Alert>).
CHART_ONLY = ("disabled", "severity", "labels")

Settings = dict[str, dict[str, str | int]]

_UNITS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}
_DURATION = re.compile(r"^(?:\d+(?:ms|s|m|h|d|w|y))+$")
_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_NAME = r"[A-Za-z]\w*\.[A-Za-z]\w*"
_OPERAND = rf"(?:{_NAME}|[0-9]+[a-z]*)"
_EXPRESSION = re.compile(
    rf"^\s*(?P<first>{_OPERAND})(?P<terms>(?:\s*[+-]\s*{_OPERAND})*)(?:\s*/\s*(?P<step>[0-9]+[a-z]+))?"
    r"(?:\s*\|\s*(?P<filter>humanizeDuration))?\s*$"
)
_TERM = re.compile(rf"([+-])\s*({_OPERAND})")
#: The JSON Schema of a duration setting, as Prometheus parses one.
DURATION_SCHEMA = {
    "description": "A Prometheus duration, e.g. 30m, 1h30m, 1d.",
    "type": "string",
    "pattern": "^([0-9]+(ms|s|m|h|d|w|y))+$",
}


def parse_duration(text: str) -> int:
    """Milliseconds of a Prometheus duration (``1h30m``)."""
    if not _DURATION.match(text):
        raise ValueError(f"{text!r} is not a Prometheus duration (30s, 15m, 1h30m, 2d)")
    return sum(int(count) * _UNITS[unit] for count, unit in _PART.findall(text))


def format_duration(milliseconds: int) -> str:
    """A duration as Prometheus writes one: the largest units first, ``0s`` for nothing."""
    if milliseconds < 0:
        raise ValueError(f"a negative duration ({milliseconds} ms)")
    parts = []
    for unit, size in _UNITS.items():
        count, milliseconds = divmod(milliseconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def humanize_duration(seconds: float) -> str:
    """Prometheus' humanizeDuration template function (2d 0h 35m 0s), for the annotations a unit test expects."""
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    if seconds < 1:
        raise ValueError(f"humanizeDuration of {seconds} s is not rendered here")
    whole = int(seconds)
    days, hours, minutes, rest = whole // 86400, whole // 3600 % 24, whole // 60 % 60, whole % 60
    if days:
        return f"{sign}{days}d {hours}h {minutes}m {rest}s"
    if hours:
        return f"{sign}{hours}h {minutes}m {rest}s"
    if minutes:
        return f"{sign}{minutes}m {rest}s"
    return f"{sign}{seconds:.4g}s"


def load_settings(config: Path = CONFIG, overrides: Mapping[str, Mapping[str, object]] | None = None) -> Settings:
    """The settings of ``config`` with ``overrides`` (alert -> setting -> value) over them. A setting is a duration
    or a whole number as its value in ``config`` is; an override of an alert or a setting ``config`` does not have
    is an error (a typo must not pass silently)."""
    loaded = yaml.safe_load(config.read_text(encoding="utf-8"))
    settings: Settings = {}
    for alert, values in loaded.items():
        settings[alert] = {key: _checked(f"{config.name}: {alert}.{key}", value) for key, value in values.items()}
    for alert, values in (overrides or {}).items():
        if alert not in settings:
            raise ValueError(f"no alert {alert}; the alerts are: {', '.join(sorted(settings))}")
        for key, value in values.items():
            default = settings[alert].get(key)
            if default is None:
                raise ValueError(f"{alert} has no setting {key}; its settings are: {', '.join(settings[alert])}")
            checked = _checked(f"{alert}.{key}", value)
            if isinstance(checked, int) != isinstance(default, int):
                kind = "a whole number" if isinstance(default, int) else "a duration"
                raise ValueError(f"{alert}.{key} must be {kind}, not {value!r}")
            settings[alert][key] = checked
    return settings


def _checked(where: str, value: object) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{where}: {value!r} is neither a duration nor a whole number")
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        parse_duration(value)
    return value


def render(text: str, settings: Settings, source: str) -> str:
    """``text`` with each ``${...}`` replaced (see the module's doc); an unknown setting fails naming ``source``."""

    def value_of(operand: str, placeholder: str) -> str | int:
        if operand.isdigit():
            return int(operand)
        if not re.fullmatch(_NAME, operand):
            return operand
        alert, key = operand.split(".")
        value = settings.get(alert, {}).get(key)
        if value is None:
            raise ValueError(f"{source}: {placeholder} names {operand}, no setting of {CONFIG.name}")
        return value

    def substitute(match: re.Match[str]) -> str:
        placeholder = match.group(0)
        expression = _EXPRESSION.match(match.group(1))
        if expression is None:
            raise ValueError(f"{source}: cannot read {placeholder}")
        first, terms = expression.group("first"), expression.group("terms")
        step, humanize = expression.group("step"), expression.group("filter") is not None
        values = [(sign, value_of(operand, placeholder)) for sign, operand in [("+", first), *_TERM.findall(terms)]]
        if len(values) == 1 and step is None and not humanize:
            return str(values[0][1])
        # Whole numbers are seconds (maxAgeSeconds); with no duration among the operands the result is one too.
        durations = any(isinstance(value, str) for _, value in values)
        total = sum(
            (1 if sign == "+" else -1) * (value * 1000 if isinstance(value, int) else parse_duration(value))
            for sign, value in values
        )
        if humanize:
            return humanize_duration(total / 1000)
        if step is not None:
            steps, rest = divmod(total, parse_duration(step))
            if rest or steps < 0:
                raise ValueError(f"{source}: {placeholder} is no whole number of {step} steps with these settings")
            return str(steps)
        if not durations:
            return str(total // 1000)
        if total < 0:
            raise ValueError(f"{source}: {placeholder} is negative with these settings")
        return format_duration(total)

    return _PLACEHOLDER.sub(substitute, text)


def _header(template: Path, config: Path) -> str:
    return (
        f"# Generated from {_shown(template)} with the settings of {_shown(config)} by python -m "
        "alerts.render\n# (scripts/package-chart.sh): edit those and run it again, not this file.\n"
    )


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def unit_test_templates() -> list[Path]:
    return sorted((TEMPLATES / "tests").glob("*.test.yaml"))


def render_rules(settings: Settings, config: Path = CONFIG) -> str:
    template = TEMPLATES / RULES_NAME
    return _header(template, config) + render(template.read_text(encoding="utf-8"), settings, _shown(template))


def render_tests(settings: Settings, config: Path = CONFIG) -> dict[str, str]:
    """File name -> promtool unit test file; each names the rules as ``../kafka-client-exporter.rules.yaml``."""
    return {
        template.name: _header(template, config) + render(template.read_text(encoding="utf-8"), settings, template.name)
        for template in unit_test_templates()
    }


def write(output: Path, settings: Settings, config: Path = CONFIG) -> list[Path]:
    """The rules as ``output/kafka-client-exporter.rules.yaml`` and their unit tests under ``output/tests/``; unit
    tests ``output/tests/`` holds that no template renders any more are removed. Returns what was written."""
    (output / "tests").mkdir(parents=True, exist_ok=True)
    rules = output / RULES_NAME
    rules.write_text(render_rules(settings, config), encoding="utf-8")
    written = [rules]
    tests = render_tests(settings, config)
    for name, text in tests.items():
        path = output / "tests" / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    for stale in (output / "tests").glob("*.test.yaml"):
        if stale.name not in tests:
            stale.unlink()
    return written


def write_rules(path: Path, overrides: Mapping[str, Mapping[str, object]] | None = None) -> Path:
    """The shipped rules with ``overrides`` over alerts/config.yaml, as one file at ``path`` (the demo and the
    end-to-end tests shorten the waits this way; the expressions stay the shipped ones)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_rules(load_settings(overrides=overrides)), encoding="utf-8")
    return path


def every(key: str, value: str, settings: Settings | None = None) -> dict[str, dict[str, object]]:
    """Overrides that set ``key`` to ``value`` on every alert that has it."""
    settings = settings if settings is not None else load_settings()
    return {alert: {key: value} for alert, values in settings.items() if key in values}


def merge(*overrides: Mapping[str, Mapping[str, object]]) -> dict[str, dict[str, object]]:
    merged: dict[str, dict[str, object]] = {}
    for layer in overrides:
        for alert, values in layer.items():
            merged.setdefault(alert, {}).update(values)
    return merged


def chart_rules_schema(settings: Settings) -> dict[str, Any]:
    """The JSON Schema of the chart's prometheusRule.rules: per alert, its tunables (as alerts/config.yaml types them)
    and the chart's own disabled, severity and labels. Other names pass the schema so that the chart's template can
    fail naming the alerts."""
    alerts: dict[str, Any] = {}
    for alert, values in settings.items():
        properties: dict[str, Any] = {
            "disabled": {"type": "boolean"},
            "severity": {"enum": ["critical", "warning", "info"]},
            "labels": {"$ref": "#/definitions/stringMap"},
        }
        for key, default in values.items():
            if isinstance(default, int):
                properties[key] = {"type": "integer", "minimum": 60 if key.endswith("Seconds") else 0}
            else:
                properties[key] = copy.deepcopy(DURATION_SCHEMA)
        alerts[alert] = {"type": "object", "additionalProperties": False, "properties": properties}
    return {
        "description": "Per-alert settings by alert name: the tunables of alerts/config.yaml over their defaults, "
        "disabled, severity and extra labels.",
        "type": "object",
        "properties": alerts,
        "additionalProperties": {"type": "object"},
    }


def update_chart_values_schema(path: Path, settings: Settings) -> bool:
    """Writes chart_rules_schema into the chart's values.schema.json; True when that changed the file."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    schema["properties"]["prometheusRule"]["properties"]["rules"] = chart_rules_schema(settings)
    after = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    if path.read_text(encoding="utf-8") == after:
        return False
    path.write_text(after, encoding="utf-8")
    return True


def _override(text: str) -> tuple[str, str, str]:
    name, separator, value = text.partition("=")
    alert, dot, key = name.partition(".")
    if not separator or not dot:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected Alert.setting=value, e.g. KafkaClientDeniedVersion.for=1h"
        )
    return alert, key, value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m alerts.render", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--config", type=Path, default=CONFIG, help="the settings (default: alerts/config.yaml)")
    parser.add_argument(
        "--set",
        type=_override,
        action="append",
        default=[],
        metavar="ALERT.SETTING=VALUE",
        help="a setting over the config's (repeatable)",
    )
    parser.add_argument("--output", type=Path, default=ALERTS, help="where the rules and tests/ go (default: alerts/)")
    parser.add_argument(
        "--chart-values-schema", type=Path, help="also write prometheusRule.rules of this chart values schema"
    )
    args = parser.parse_args(argv)
    overrides: dict[str, dict[str, object]] = {}
    for alert, key, value in args.set:
        overrides.setdefault(alert, {})[key] = value
    try:
        settings = load_settings(args.config, overrides)
        for path in write(args.output, settings, args.config):
            print(f"wrote {_shown(path.resolve())}", file=sys.stderr)
    except ValueError as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")
    if args.chart_values_schema and update_chart_values_schema(args.chart_values_schema, settings):
        print(f"wrote {_shown(args.chart_values_schema.resolve())}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
