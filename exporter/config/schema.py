"""The base of every schema an operator writes (config, web config, policy) and how its validation errors read.

One line per problem: the dotted location, what is wrong, and the value given unless it is secret, a whole block or
absent. An unknown key lists the keys allowed in its place, found by walking the schema from its root model.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

Location = tuple[int | str, ...]


class ConfigError(Exception):
    """A configuration problem, already phrased for the operator (field, value, what is allowed)."""


class StrictModel(BaseModel):
    """A section of an operator's file: an unknown key is an error (a typo must not pass), values never change."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class ErrorFormat:
    """What differs between the files whose validation errors are phrased here."""

    root: type[BaseModel]
    #: How an unknown key is named in its line.
    unknown: str = "unknown field"
    #: False: allowed keys in the schema's own order (the order of the format's documentation).
    sort_allowed: bool = True
    #: A location with a part containing one of these words never shows its value.
    secret_words: tuple[str, ...] = ()
    #: Keys the format knows but this exporter refuses, by location, with the reason.
    unsupported: Mapping[tuple[str, ...], str] = field(default_factory=dict)
    #: A last line after the problems.
    hint: str | None = None
    #: Where a location's value came from when not from the file (an environment variable's name), or None.
    source_of: Callable[[Location], str | None] | None = None


def format_validation_error(exc: ValidationError, origin: str, how: ErrorFormat) -> str:
    """``<origin> is invalid:`` and one indented line per problem."""
    lines = [f"{origin} is invalid:"]
    for error in exc.errors(include_url=False):
        location: Location = tuple(error["loc"])
        where = ".".join(str(part) for part in location) or "(top level)"
        source = how.source_of(location) if how.source_of is not None else None
        given = _given(error, how) + (f" from {source}" if source else "")
        lines.append(f"  {where}: {_message(error['type'], error['msg'], location, how)}{given}")
    if how.hint is not None:
        lines.append(how.hint)
    return "\n".join(lines)


def _message(kind: str, text: str, location: Location, how: ErrorFormat) -> str:
    if kind == "missing":
        return "required field is missing"
    if kind != "extra_forbidden":
        return text.removeprefix("Value error, ")
    reason = how.unsupported.get(tuple(str(part) for part in location))
    if reason is not None:
        return f"not supported by kafka-client-exporter: {reason}"
    allowed = allowed_keys(how.root, location[:-1])
    if how.sort_allowed:
        allowed.sort()
    return how.unknown + (f"; allowed: {', '.join(allowed)}" if allowed else "")


def _given(error: Any, how: ErrorFormat) -> str:
    value = error.get("input")
    secret = any(word in str(part) for part in error["loc"] for word in how.secret_words)
    if secret or error["type"] in ("missing", "extra_forbidden") or isinstance(value, dict | list):
        return ""
    return f" (got {value!r})"


def allowed_keys(root: type[BaseModel], location: Location) -> list[str]:
    """The field names of the model at ``location`` below ``root`` (empty when no model is there)."""
    annotation: Any = root
    for part in location:
        annotation = _below(annotation, part)
        if annotation is None:
            return []
    model = _model(annotation)
    return list(model.model_fields) if model is not None else []


def _below(annotation: Any, part: int | str) -> Any:
    """The annotation of the value at ``part`` inside a value of ``annotation`` (None: nothing known there)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        return next((found for arg in args if (found := _below(arg, part)) is not None), None)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        model_field = annotation.model_fields.get(part) if isinstance(part, str) else None
        return model_field.annotation if model_field is not None else None
    if isinstance(origin, type) and args:
        # dict[str, X] -> X; list[X], tuple[X, ...] -> X.
        if issubclass(origin, Mapping):
            return args[-1]
        if issubclass(origin, Collection):
            return args[0]
    return None


def _model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, UnionType):
        return next((model for arg in get_args(annotation) if (model := _model(arg)) is not None), None)
    return None
