"""Generated blocks inside hand-written pages: the prose around a reference stays editable, the block between its
two markers is rewritten from the code and checked against it."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "python -m docs_gen"


def begin_marker(name: str) -> str:
    return f"<!-- BEGIN GENERATED {name}: written by `{REGENERATE}`; edit its source, not this block -->"


def end_marker(name: str) -> str:
    return f"<!-- END GENERATED {name} -->"


@dataclass(frozen=True)
class Region:
    """One generated block: which page holds it, its name in the markers, and how it is rendered."""

    page: str  # relative to the repository root
    name: str
    source: str  # what it is generated from, for messages
    render: Callable[[], str]


class MissingRegion(Exception):
    """A page lacks the markers of a block it should hold."""


def _span(text: str, name: str) -> tuple[int, int]:
    """Where the block's body starts and ends in ``text`` (between the two marker lines)."""
    begin, end = begin_marker(name), end_marker(name)
    found = re.search(re.escape(begin) + r"\n(.*?)" + re.escape(end), text, flags=re.DOTALL)
    if found is None:
        raise MissingRegion(f"no block between {begin!r} and {end!r}")
    return found.start(1), found.end(1)


def replace_body(text: str, name: str, body: str) -> str:
    start, stop = _span(text, name)
    return text[:start] + body.rstrip("\n") + "\n" + text[stop:]


def current_body(text: str, name: str) -> str:
    start, stop = _span(text, name)
    return text[start:stop]


def stale(region: Region, root: Path = REPO_ROOT) -> str | None:
    """Why the committed block differs from what the code renders, or None when they agree."""
    page = root / region.page
    try:
        text = page.read_text(encoding="utf-8")
        committed = current_body(text, region.name)
    except (OSError, MissingRegion) as exc:
        return f"{region.page}: {exc}"
    if committed != region.render().rstrip("\n") + "\n":
        return f"{region.page}: block {region.name} differs from {region.source}: run `{REGENERATE}`"
    return None


def write(region: Region, root: Path = REPO_ROOT) -> bool:
    """Rewrite the block from the code; True when the page changed."""
    page = root / region.page
    before = page.read_text(encoding="utf-8")
    after = replace_body(before, region.name, region.render())
    if after != before:
        page.write_text(after, encoding="utf-8")
    return after != before


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """A Markdown table; a pipe inside a cell would end the cell, so it is escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in row) + " |" for row in rows]
    return "\n".join(lines)
