"""A self-contained HTML report (inline SVG charts, no scripts, no external assets) from small, bounded lists."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

BAR_HEIGHT = 18
LABEL_WIDTH = 360
CHART_WIDTH = 860
OK_COLOUR = "#3b7dd8"
BLOCKED_COLOUR = "#d8453b"


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    blocked: bool = False


@dataclass
class ReportData:
    target_release: str
    lines: int
    malformed_lines: int
    clients: int
    blocking_clients: int
    policy_clients: int
    software: list[Bar] = field(default_factory=list)  # label "name version", value: clients
    blockers: list[Bar] = field(default_factory=list)  # label names the client, value: blocked requests
    blocker_rows: list[tuple[str, ...]] = field(default_factory=list)
    api_versions: list[Bar] = field(default_factory=list)  # label "Api vN", blocked when outside the target
    policy_rows: list[tuple[str, ...]] = field(default_factory=list)
    group_rows: list[tuple[str, ...]] = field(default_factory=list)
    malformed_rows: list[tuple[str, ...]] = field(default_factory=list)


def bar_chart(title: str, bars: Sequence[Bar], unit: str) -> str:
    if not bars:
        return f"<h3>{html.escape(title)}</h3><p class=empty>nothing to show</p>"
    top = max(b.value for b in bars) or 1
    scale = (CHART_WIDTH - LABEL_WIDTH - 90) / top
    height = BAR_HEIGHT * len(bars) + 8
    rows = []
    for i, bar in enumerate(bars):
        y = i * BAR_HEIGHT + 4
        width = max(bar.value * scale, 1.0)
        colour = BLOCKED_COLOUR if bar.blocked else OK_COLOUR
        label = bar.label if len(bar.label) <= 58 else bar.label[:55] + "..."
        rows.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{y + 13}" text-anchor="end">{html.escape(label)}</text>'
            f'<rect x="{LABEL_WIDTH}" y="{y + 2}" width="{width:.1f}" height="{BAR_HEIGHT - 4}" fill="{colour}">'
            f"<title>{html.escape(bar.label)}: {bar.value:,} {html.escape(unit)}</title></rect>"
            f'<text x="{LABEL_WIDTH + width + 4:.1f}" y="{y + 13}">{bar.value:,}</text>'
        )
    return (
        f"<h3>{html.escape(title)}</h3>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_WIDTH}" height="{height}" '
        f'role="img" aria-label="{html.escape(title)}">{"".join(rows)}</svg>'
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return "<p class=empty>none</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:1.5em}h2{margin-top:2em;border-bottom:1px solid #ccc}h3{font-size:1em;margin-bottom:.3em}
svg text{font-size:12px;font-family:system-ui,sans-serif}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
th{background:#f3f3f3}.empty{color:#777}.figures span{display:inline-block;margin-right:2em}
.figures b{font-size:1.4em;display:block}.legend i{display:inline-block;width:12px;height:12px;margin:0 4px}
"""


def render(data: ReportData) -> str:
    target = html.escape(data.target_release)
    figures = "".join(
        f"<span><b>{value:,}</b>{html.escape(label)}</span>"
        for label, value in (
            ("request lines", data.lines),
            ("lines not parsed", data.malformed_lines),
            ("clients", data.clients),
            (f"clients blocking {data.target_release}", data.blocking_clients),
            ("clients below the version policy", data.policy_clients),
        )
    )
    legend = (
        f'<p class=legend><i style="background:{OK_COLOUR}"></i>served by {target}'
        f'<i style="background:{BLOCKED_COLOUR}"></i>not served by {target}</p>'
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Kafka client inventory</title><style>{_STYLE}</style></head>
<body>
<h1>Kafka client inventory from broker request logs</h1>
<p class=figures>{figures}</p>
<h2>Client software</h2>
{bar_chart("Clients per software name and version", data.software, "clients")}
<h2>Who blocks the upgrade to Kafka {target}</h2>
{
        bar_chart(
            f"Top clients using API versions Kafka {data.target_release} no longer serves",
            data.blockers,
            "blocked requests",
        )
    }
{
        table(
            ["clientId", "principal", "source host", "software", "APIs (versions used; minimum)", "requests"],
            data.blocker_rows,
        )
    }
<h2>API versions in use</h2>
{legend}
{bar_chart("Requests per API and version", data.api_versions, "requests")}
<h2>Version policy</h2>
{table(["reason", "software", "version", "clients", "detail"], data.policy_rows)}
<h2>Consumer group protocols (KIP-559)</h2>
{table(["group", "clientId", "protocol type", "protocol name", "offered"], data.group_rows)}
<h2>Lines not parsed</h2>
{table(["reason", "lines"], data.malformed_rows)}
</body></html>
"""
