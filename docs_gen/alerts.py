"""The alert table of docs/alerts.md, rendered from the rules Prometheus loads (alerts/kafka-client-exporter.rules.yaml,
itself rendered from alerts/templates/ with alerts/config.yaml): so the durations shown are the ones shipped."""

from __future__ import annotations

from typing import Any

import yaml

from docs_gen.regions import REPO_ROOT, table

RULES = REPO_ROOT / "alerts" / "kafka-client-exporter.rules.yaml"


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"] if "alert" in rule]


def render() -> str:
    rows = []
    for rule in rules():
        name = rule["alert"]
        rows.append(
            (
                f"[{name}](../alerts/runbook.md#{name.lower()})",
                rule["labels"]["severity"],
                rule.get("for", "0s"),
                rule.get("keep_firing_for", "0s"),
                " ".join(rule["annotations"]["summary"].split()),
            )
        )
    return table(("alert", "severity", "for", "keep firing for", "summary"), rows)
