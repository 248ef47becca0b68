"""The panel lists of docs/dashboards.md, rendered from the dashboards Grafana imports (dashboards/grafana/*.json):
each panel's title, kind, unit, the series it queries and its description, under the dashboard's rows. Grafana does
not run here, so this list and the written tour above it are what the page can show of them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from docs_gen.regions import REPO_ROOT, table
from exporter.collectors.catalog import CATALOG

DASHBOARDS = REPO_ROOT / "dashboards" / "grafana"
_KNOWN = {family.sample_name for family in CATALOG}
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def _series(panel: dict[str, Any]) -> list[str]:
    """The exporter's series a panel's queries select, in the order they first appear."""
    found: list[str] = []
    for target in panel.get("targets", []):
        for name in _NAME.findall(target.get("expr", "")):
            if name in _KNOWN and name not in found:
                found.append(name)
    return found


def _panel_row(panel: dict[str, Any]) -> tuple[str, ...]:
    unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit") or ""
    series = ", ".join(f"`{name}`" for name in _series(panel))
    return (panel.get("title", ""), panel["type"], unit, series, " ".join(panel.get("description", "").split()))


def render_one(path: Path) -> str:
    dashboard = json.loads(path.read_text(encoding="utf-8"))
    header = ("panel", "kind", "unit", "series", "what it shows")
    parts = [f"### {dashboard['title']}", "", f"`{path.name}`, uid `{dashboard['uid']}`: {dashboard['description']}"]
    group: list[tuple[str, ...]] = []
    heading: str | None = None

    def flush() -> None:
        if group:
            parts.extend(["", f"**{heading}**" if heading else "**Top**", "", table(header, group)])
            group.clear()

    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            flush()
            heading = panel.get("title", "")
            # A collapsed row carries its panels inside it.
            for inner in panel.get("panels", []):
                group.append(_panel_row(inner))
            continue
        group.append(_panel_row(panel))
    flush()
    return "\n".join(parts)


def render() -> str:
    return "\n\n".join(render_one(path) for path in sorted(DASHBOARDS.glob("*.json"))) + "\n"
