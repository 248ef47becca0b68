"""Every reference to docs/kafka-facts/ names a file and a heading that exist, and nothing cites the Kafka notes
that live outside the repository (a reader could not follow them)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from docs_gen.mkdocs_hooks import github_anchor, github_anchors

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "docs" / "kafka-facts"
THIS_FILE = Path(__file__).resolve()

SKIPPED_DIRS = {".git", ".venv", ".tools", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache", "target"}
SCANNED_SUFFIXES = {".py", ".java", ".js", ".mjs", ".md", ".yaml", ".yml", ".sh", ".toml", ".tpl", ".txt", ".html"}
SCANNED_NAMES = {"Dockerfile"}

# A reference from anywhere in the repository: docs/kafka-facts/<file>.md, optionally with #<anchor>.
REFERENCE = re.compile(r"docs/kafka-facts/([\w.-]+?\.md)(?:#([\w-]+))?")
# A link inside docs/kafka-facts: [text](<file>.md#anchor), [text](<file>.md) or [text](#anchor).
RELATIVE_LINK = re.compile(r"\]\((?!https?:)([\w.-]+\.md)?(?:#([\w-]+))?\)")
# The notes outside the repository, by the names the code used to cite them.
OUTSIDE_NAMES = re.compile(
    r"kafka-reference|kip896_min_version_changes|api_versions_trunk_unreleased|kip-559-and-groups"
    r"|README[^\n]{0,20}Caveats"
    # Their file names, unless the name is one of ours (preceded by docs/kafka-facts/).
    r"|(?<!docs/kafka-facts/)(?<![\w/.-])(?:mbeans|protocol|request-log)\.md"
    # Their section numbers: "§3.4", "section 1" after a .md name; "RFC 5802 §5.1" is not one of them.
    r"|(?<!\d )§\s?\d|\.md section \d"
)


def source_files(root: Path) -> Iterator[Path]:
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            path = Path(directory) / name
            if (path.suffix in SCANNED_SUFFIXES or name in SCANNED_NAMES) and path.resolve() != THIS_FILE:
                yield path


def reference_problems(root: Path) -> list[str]:
    facts = root / "docs" / "kafka-facts"
    known = {path.name: github_anchors(path) for path in facts.glob("*.md")}
    problems: list[str] = []

    def check(where: str, name: str, anchor: str | None) -> None:
        if name not in known:
            problems.append(f"{where}: docs/kafka-facts/{name} does not exist; files: {', '.join(sorted(known))}")
        elif anchor is not None and anchor not in known[name]:
            problems.append(f"{where}: no heading with anchor #{anchor} in docs/kafka-facts/{name}")

    for path in source_files(root):
        relative = path.relative_to(root)
        inside_facts = relative.parts[:2] == ("docs", "kafka-facts")
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            where = f"{relative}:{number}"
            for match in REFERENCE.finditer(line):
                check(where, match.group(1), match.group(2))
            if inside_facts:
                for match in RELATIVE_LINK.finditer(line):
                    if match.group(1) or match.group(2):
                        check(where, match.group(1) or path.name, match.group(2))
            else:
                for match in OUTSIDE_NAMES.finditer(line):
                    problems.append(f"{where}: cites {match.group(0)!r} outside the repository; cite docs/kafka-facts/")
    return problems


def test_the_facts_directory_has_its_files() -> None:
    assert {path.name for path in FACTS.glob("*.md")} >= {
        "README.md",
        "jmx-mbeans.md",
        "protocol.md",
        "request-log.md",
        "releases.md",
    }


def test_every_reference_resolves_and_nothing_cites_outside_notes() -> None:
    assert reference_problems(ROOT) == []


def test_the_code_does_cite_the_facts() -> None:
    # Guards the scan itself: if REFERENCE stopped matching, the test above would pass on nothing.
    cited = {
        (match.group(1), match.group(2))
        for path in source_files(ROOT)
        if "kafka-facts" not in path.parts
        for match in REFERENCE.finditer(path.read_text(encoding="utf-8", errors="replace"))
    }
    assert ("jmx-mbeans.md", "gauge-suite-eviction") in cited
    assert ("protocol.md", "apiversions-fallback") in cited


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Feature fields (KIP-584)", "feature-fields-kip-584"),
        ("Key 74: ListConfigResources", "key-74-listconfigresources"),
        ("The `connections` gauge", "the-connections-gauge"),
        ("JSON form", "json-form"),
    ],
)
def test_github_anchor(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_broken_references_are_reported(tmp_path: Path) -> None:
    (tmp_path / "docs" / "kafka-facts").mkdir(parents=True)
    (tmp_path / "docs" / "kafka-facts" / "protocol.md").write_text(
        "# Protocol\n\n## Headers\n\nSee [the rest](#nowhere) and [more](other.md).\n", encoding="utf-8"
    )
    (tmp_path / "code.py").write_text(
        "# docs/kafka-facts/protocol.md#headers: fine\n"
        "# docs/kafka-facts/protocol.md#footers: no such heading\n"
        "# docs/kafka-facts/wire.md: no such file\n"
        "# see mbeans.md §1 (kafka-reference)\n"
        "# RFC 5802 §5.1 is not a citation of ours\n",
        encoding="utf-8",
    )
    problems = reference_problems(tmp_path)
    assert any("code.py:2" in p and "#footers" in p for p in problems), problems
    assert any("code.py:3" in p and "wire.md does not exist" in p for p in problems), problems
    assert sum("code.py:4" in p for p in problems) == 3, problems  # mbeans.md, §1 and kafka-reference
    assert not any("code.py:1" in p or "code.py:5" in p for p in problems), problems
    assert any("protocol.md:5" in p and "#nowhere" in p for p in problems), problems
    assert any("protocol.md:5" in p and "other.md does not exist" in p for p in problems), problems
