"""mkdocs hooks (mkdocs.yml `hooks:`): the site is built from the Markdown as GitHub shows it.

Pages link the way they read on GitHub: by their path relative to the page, across the repository (README.md to
docs/configuration.md, docs/alerts.md to ../alerts/runbook.md, a page to ../exporter/cli.py). mkdocs knows only
docs/, so these hooks
- add README.md (as the home page) and the Markdown kept beside what it documents (the runbook, the chart's
  README) to the site, from their files in the repository;
- rewrite each relative link to where its target is in the site, or, for a repository file that is not a page
  (code, a configuration file), to that file on GitHub; a link to nothing is a warning, so `mkdocs build --strict`
  fails on it, as mkdocs itself does on a missing page or heading.

Loaded by mkdocs from its path, so it imports nothing of the project.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.repository_links")

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Markdown outside docs/ that the site shows, by repository path -> path in the site.
EXTRA_PAGES: dict[str, str] = {
    "README.md": "index.md",
    "alerts/runbook.md": "runbook.md",
    "helm/kafka-client-exporter/README.md": "helm-chart.md",
}
DOCS = "docs/"
_FENCE = re.compile(r"^(?:```|~~~)")
# An inline link or image: [text](target) or ![alt](target), the target without spaces (no title used here).
_LINK = re.compile(r"(!?\[(?:[^\[\]]|\[[^\]]*\])*\]\()([^)\s]+)(\))")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def site_path(repo_path: str) -> str | None:
    """Where a repository file is in the site, when it is part of it."""
    if repo_path in EXTRA_PAGES:
        return EXTRA_PAGES[repo_path]
    if repo_path.startswith(DOCS):
        return repo_path.removeprefix(DOCS)
    return None


def repo_path_of(site: str) -> str:
    """The repository file a page of the site is built from."""
    for repo, mapped in EXTRA_PAGES.items():
        if mapped == site:
            return repo
    return DOCS + site


def rewrite_target(target: str, page_repo_path: str, repo_url: str, root: Path = REPO_ROOT) -> tuple[str, str | None]:
    """(the link's target in the site, a problem or None) for ``target`` written in ``page_repo_path``."""
    if _SCHEME.match(target) or target.startswith(("#", "/")):
        return target, None
    path, _, anchor = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page_repo_path), path))
    suffix = f"#{anchor}" if anchor else ""
    if resolved.startswith("../") or resolved == "..":
        return target, f"{page_repo_path}: link {target!r} leaves the repository"
    file = root / resolved
    if not file.exists():
        return target, f"{page_repo_path}: link {target!r}: {resolved} does not exist"
    here = posixpath.dirname(site_path(page_repo_path) or "")
    in_site = site_path(resolved)
    if in_site is not None:
        return posixpath.relpath(in_site, here or ".") + suffix, None
    kind = "tree" if file.is_dir() else "blob"
    if anchor and resolved.endswith(".md") and anchor not in github_anchors(file):
        return target, f"{page_repo_path}: link {target!r}: no heading #{anchor} in {resolved}"
    return f"{repo_url.rstrip('/')}/{kind}/main/{resolved}{suffix}", None


def rewrite_links(markdown: str, page_repo_path: str, repo_url: str, root: Path = REPO_ROOT) -> tuple[str, list[str]]:
    """``markdown`` with every relative link outside fenced code rewritten, and the problems found."""
    problems: list[str] = []

    def replace(match: re.Match[str]) -> str:
        new, problem = rewrite_target(match.group(2), page_repo_path, repo_url, root)
        if problem:
            problems.append(problem)
        return match.group(1) + new + match.group(3)

    # Prose is rewritten a run of lines at a time, as a link's text may wrap onto the next line.
    out: list[str] = []
    prose: list[str] = []
    in_fence = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line.lstrip()):
            if not in_fence:
                out.append(_LINK.sub(replace, "".join(prose)))
                prose.clear()
            in_fence = not in_fence
            out.append(line)
        elif in_fence:
            out.append(line)
        else:
            prose.append(line)
    out.append(_LINK.sub(replace, "".join(prose)))
    return "".join(out), problems


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading (the site's toc uses pymdownx's GitHub-like slugs to match it)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def github_anchors(markdown_file: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    in_fence = False
    for line in markdown_file.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line.lstrip()):
            in_fence = not in_fence
            continue
        heading = None if in_fence else re.match(r"^#{1,6}\s+(.+?)\s*#*\s*$", line)
        if heading:
            base = github_anchor(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    for repo, site in EXTRA_PAGES.items():
        content = (REPO_ROOT / repo).read_text(encoding="utf-8")
        files.append(File.generated(config, site, content=content))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **_: Any) -> str:
    rewritten, problems = rewrite_links(markdown, repo_path_of(page.file.src_uri), config.repo_url or "")
    for problem in problems:
        log.warning(problem)
    return rewritten
