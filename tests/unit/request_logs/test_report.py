"""The inventory job's HTML report: self-contained, and every client-chosen value shown as text, never as markup."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from exporter.request_logs.report import Bar, ReportData, render

HOSTILE = "<script>alert('x')</script>"
BREAKOUT = 'x" onmouseover="alert(1)" data-x=\'y'


class Report(HTMLParser):
    """Tag and attribute names, SVG labels and tooltips, and table cells of the report, as a browser reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.aria_labels: list[str] = []
        self.texts: dict[str, list[str]] = {"text": [], "title": [], "td": []}
        self._open: str | None = None
        self._data: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)
        if (label := dict(attrs).get("aria-label")) is not None:
            self.aria_labels.append(label)
        if tag in self.texts:
            self._open, self._data = tag, []

    def handle_endtag(self, tag: str) -> None:
        if tag == self._open:
            self.texts[tag].append("".join(self._data))
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._data.append(data)


def hostile_report() -> ReportData:
    blocker = f"{BREAKOUT} @ {HOSTILE} (sarama 1.2)"
    return ReportData(
        target_release="4.0.0",
        lines=1_234_567,
        malformed_lines=0,
        clients=2,
        blocking_clients=1,
        policy_clients=1,
        software=[Bar(f"{HOSTILE} 1.0", 2)],
        blockers=[Bar(blocker, 7, True)],
        blocker_rows=[(BREAKOUT, "User:<b>bold</b>", HOSTILE, "sarama 1.2", "Fetch (3; min 4)", "7")],
        api_versions=[Bar("Fetch v3", 7, True)],
        policy_rows=[("unknown_software", HOSTILE, "1.0", "1", BREAKOUT)],
    )


def test_client_chosen_names_and_hosts_are_text_in_charts_and_tables() -> None:
    page = render(hostile_report())
    report = Report()
    report.feed(page)
    assert "<script" not in page.lower() and "<b>bold" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert report.tags == {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "b"} | {
        "svg", "text", "rect", "i", "table", "thead", "tbody", "tr", "th", "td"
    }  # fmt: skip
    allowed = {"lang", "charset", "class", "style", "xmlns", "width", "height", "role", "aria-label"}
    assert report.attributes == allowed | {"x", "y", "text-anchor", "fill"}
    assert f"{HOSTILE} 1.0" in report.texts["text"]
    assert f"{BREAKOUT} @ {HOSTILE} (sarama 1.2): 7 blocked requests" in report.texts["title"]
    assert report.texts["td"][:3] == [BREAKOUT, "User:<b>bold</b>", HOSTILE]
    assert report.texts["td"][-1] == BREAKOUT


def test_a_hostile_target_release_stays_inside_the_chart_label() -> None:
    data = hostile_report()
    data.target_release = BREAKOUT
    report = Report()
    report.feed(render(data))
    assert f"Top clients using API versions Kafka {BREAKOUT} no longer serves" in report.aria_labels
    assert "onmouseover" not in report.attributes


def test_report_is_self_contained_and_says_when_there_is_nothing_to_show() -> None:
    page = render(ReportData("4.0.0", 0, 0, 0, 0, 0))
    assert "<script" not in page.lower() and "<svg" not in page
    assert not re.search(r"""(src|href)\s*=|<link|@import|url\(""", page)
    assert page.count("<p class=empty>nothing to show</p>") == 3
    assert page.count("<p class=empty>none</p>") == 6


def test_long_labels_are_cut_in_the_chart_and_whole_in_the_tooltip() -> None:
    label = "client-" + "x" * 80
    report = Report()
    report.feed(render(ReportData("4.0.0", 1, 0, 1, 0, 0, software=[Bar(label, 1_500)])))
    assert report.texts["text"] == [label[:55] + "...", "1,500"]
    assert report.texts["title"] == ["Kafka client inventory", f"{label}: 1,500 clients"]


def test_rejections_section_counts_and_escapes_what_clients_chose() -> None:
    row = ("2026-03-20 10:15:42.123", "server.log", "CLIENTS", "10.20.6.7", "c-1", "Fetch v3", HOSTILE, "x 1", "m")
    page = render(ReportData("4.0.0", 10, 0, 1, 0, 0, rejections=30, rejection_rows=[row]))
    report = Report()
    report.feed(page)
    assert "<script" not in page.lower() and HOSTILE in report.texts["td"]
    assert "<h2>Rejected by an upgraded broker (server.log)</h2>" in page
    assert "(the first 1 of 30)" in page and "<span><b>30</b>requests rejected (server.log)</span>" in page
