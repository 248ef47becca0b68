"""A self-contained HTML report (inline SVG charts, no scripts, no external assets) from small, bounded lists.

This module lays the charts out as plain view data; `templates/report.html` holds the markup and escapes every
value, since client ids, hosts and software names in a request log are chosen by clients.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from exporter.templating import template_environment

BAR_HEIGHT = 18
LABEL_WIDTH = 360
CHART_WIDTH = 860
OK_COLOUR = "#3b7dd8"
BLOCKED_COLOUR = "#d8453b"
# Longer labels are cut to fit left of the bars; the tooltip keeps the whole label.
LABEL_CHARACTERS = 58

_TEMPLATES = template_environment("exporter.request_logs")
_TEMPLATES.filters["thousands"] = "{:,}".format
_TEMPLATES.globals.update(ok_colour=OK_COLOUR, blocked_colour=BLOCKED_COLOUR)


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
    rejections: int = 0  # requests server.log says were rejected (the rows show the first ones)
    rejection_rows: list[tuple[str, ...]] = field(default_factory=list)
    #: Per directory of request logs: its kind (log_kinds), files, lines by level and what it cannot tell.
    request_log_rows: list[tuple[str, ...]] = field(default_factory=list)


@dataclass(frozen=True)
class _DrawnBar:
    """One bar with its label, laid out in SVG user units."""

    label: str
    short_label: str
    value: int
    colour: str
    text_y: int
    rect_y: int
    width: str
    value_x: str


@dataclass(frozen=True)
class _Chart:
    width: int
    height: int
    label_x: int
    bar_x: int
    bar_height: int
    bars: list[_DrawnBar]


def _chart(bars: Sequence[Bar]) -> _Chart:
    top = max((b.value for b in bars), default=0) or 1
    scale = (CHART_WIDTH - LABEL_WIDTH - 90) / top
    drawn = []
    for i, bar in enumerate(bars):
        y = i * BAR_HEIGHT + 4
        width = max(bar.value * scale, 1.0)
        short = bar.label if len(bar.label) <= LABEL_CHARACTERS else bar.label[: LABEL_CHARACTERS - 3] + "..."
        drawn.append(
            _DrawnBar(
                label=bar.label,
                short_label=short,
                value=bar.value,
                colour=BLOCKED_COLOUR if bar.blocked else OK_COLOUR,
                text_y=y + 13,
                rect_y=y + 2,
                width=f"{width:.1f}",
                value_x=f"{LABEL_WIDTH + width + 4:.1f}",
            )
        )
    return _Chart(
        width=CHART_WIDTH,
        height=BAR_HEIGHT * len(bars) + 8,
        label_x=LABEL_WIDTH - 6,
        bar_x=LABEL_WIDTH,
        bar_height=BAR_HEIGHT - 4,
        bars=drawn,
    )


def render(data: ReportData) -> str:
    return _TEMPLATES.get_template("report.html").render(
        data=data,
        software=_chart(data.software),
        blockers=_chart(data.blockers),
        api_versions=_chart(data.api_versions),
    )
