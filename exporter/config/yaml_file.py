"""Reading the operator's YAML files (config, web config, policy) with errors that name the file and position.

Each caller passes its own exception type, so every failure stays a start-up error of that file (exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def read_text(path: Path, what: str, error: type[Exception]) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise error(f"{what} {path} cannot be read: {exc.strerror}") from None


def parse_mapping(text: str, origin: str, error: type[Exception], expected: str = "a mapping") -> dict[str, Any]:
    """The document as a dict (empty for an empty file); ``expected`` phrases what a top level must be."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error(f"{origin} is not valid YAML{where}: {problem}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise error(f"{origin} must hold {expected}, not a {type(document).__name__}")
    return document
