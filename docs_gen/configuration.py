"""The configuration reference (docs/configuration.md), rendered from the JSON schema of the `Settings` model that
the exporter validates its file with (exporter/config/json_schema.py), so that the page can neither miss a key the
exporter takes nor list one it refuses.

Every description comes from the model, which is their one source: a field's from its `Field(description=...)`, a
section's from the field holding it, followed by the section model's docstring. The model names docs pages by their
path (`docs/policy.md`), which the page turns into links. tests/unit/docs/ checks that every property has one."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from docs_gen.regions import table
from exporter.config.json_schema import config_json_schema
from exporter.config.settings import ENV_PREFIX, Settings

_DEFS = "#/$defs/"

#: A docs page named in a description (`docs/policy.md`, `docs/inventory.md#a-heading`): the model names it by its
#: path, as a JSON schema shown in an editor has nowhere to link to; this page links it.
_DOCS_MENTION = re.compile(r"(?<![\w/`\[])(?<!\]\()docs/([\w./-]+\.md(?:#[\w-]+)?)")


@dataclass(frozen=True)
class Field:
    key: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Section:
    path: str  # dotted, `[]` after a list; "" for the top level
    description: str
    environment: str
    fields: tuple[Field, ...]


def sections() -> list[Section]:
    """Every section of the configuration, depth first in the model's order."""
    schema = config_json_schema()
    found: list[Section] = []
    _walk(schema, schema["$defs"], "", "", None, found, Settings)
    return found


def _models(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The section models reachable from ``model`` by the names the schema's definitions carry."""
    found: dict[str, type[BaseModel]] = {}
    pending = [model]
    while pending:
        current = pending.pop()
        for field in current.model_fields.values():
            for candidate in _annotation_models(field.annotation):
                if candidate.__name__ not in found:
                    found[candidate.__name__] = candidate
                    pending.append(candidate)
    return found


def _annotation_models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in getattr(annotation, "__args__", ()):
        yield from _annotation_models(argument)


def _factory_default(model: type[BaseModel], key: str) -> str | None:
    """A default made by a factory, which the JSON schema leaves out (a list of JVM options, an empty list)."""
    field = model.model_fields.get(key)
    if field is None or field.default_factory is None:
        return None
    value = field.get_default(call_default_factory=True)
    return None if value is PydanticUndefined else f"`{json.dumps(value)}`"


def _walk(
    node: dict[str, Any],
    defs: dict[str, Any],
    path: str,
    holder: str,
    in_list: str | None,
    out: list[Section],
    model: type[BaseModel],
) -> None:
    """One section and, after it, those below it; `holder` is the description of the property holding it."""
    models = _models(Settings)
    rows: list[Field] = []
    nested: list[tuple[str, str, str, str | None]] = []
    required = set(node.get("required", []))
    for key, spec in node.get("properties", {}).items():
        child = f"{path}.{key}" if path else key
        reference, is_list = _reference(spec)
        if reference is not None:
            child_path = child + ("[]" if is_list else "")
            nested.append(
                (child_path, reference, spec.get("description", ""), in_list or (child_path if is_list else None))
            )
            continue
        default = "required" if key in required else (_factory_default(model, key) or _default(spec))
        rows.append(
            Field(key=f"`{key}`", type=_type(spec), default=default, description=_linked(spec.get("description", "")))
        )
    if rows:
        out.append(Section(path, _section_description(holder, node), _environment(path, in_list), tuple(rows)))
    for child_path, reference, child_holder, child_list in nested:
        _walk(defs[reference], defs, child_path, child_holder, child_list, out, models[reference])


def _reference(spec: dict[str, Any]) -> tuple[str | None, bool]:
    """The definition a property holds (a section, or a list of them), and whether it is a list."""
    for option in [spec, *spec.get("anyOf", [])]:
        if "$ref" in option:
            return option["$ref"].removeprefix(_DEFS), False
        if "$ref" in option.get("items", {}):
            return option["items"]["$ref"].removeprefix(_DEFS), True
    return None, False


def _linked(text: str) -> str:
    """A description with its mentions of docs pages (`docs/x.md#y`) as links relative to this page."""
    return _DOCS_MENTION.sub(lambda found: f"[{found.group(0)}]({found.group(1)})", text)


def _section_description(holder: str, node: dict[str, Any]) -> str:
    """What the property holding the section says, then the section model's docstring."""
    own = " ".join(node.get("description", "").split())
    if holder and own:
        return _linked(f"{holder}. {own}")
    return _linked(holder or own)


def _environment(path: str, in_list: str | None) -> str:
    if in_list is not None:
        variable = ENV_PREFIX + in_list.split("[]")[0].replace(".", "__").upper()
        return f"only as part of `{variable}` (the whole list, JSON)"
    if not path:
        return f"`{ENV_PREFIX}<KEY>`, e.g. `{ENV_PREFIX}LOG_LEVEL=debug`"
    return f"`{ENV_PREFIX}{path.replace('.', '__').upper()}__<KEY>`"


def _type(spec: dict[str, Any]) -> str:
    options = [option for option in spec.get("anyOf", [spec]) if option.get("type") != "null"]
    return " or ".join(_one_type(option) for option in options)


def _one_type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(f"`{value}`" for value in spec["enum"])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_one_type(spec.get('items', {}))}"
    if spec.get("format") == "path":
        return "path"
    if spec.get("format") == "password" or spec.get("writeOnly"):
        return "string (secret)"
    return kind + "".join(_bounds(spec))


def _bounds(spec: dict[str, Any]) -> Iterator[str]:
    if "minimum" in spec and "maximum" in spec:
        yield f", {_number(spec['minimum'])} to {_number(spec['maximum'])}"
    else:
        limits = (("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<"), ("maximum", "≤"))
        found = [f"{sign} {_number(spec[keyword])}" for keyword, sign in limits if keyword in spec]
        if found:
            yield ", " + " and ".join(found)
    if "minLength" in spec:
        yield f", at least {spec['minLength']} character" + ("s" if spec["minLength"] > 1 else "")
    if "pattern" in spec:
        yield f" matching `{spec['pattern']}`"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _default(spec: dict[str, Any]) -> str:
    if "default" not in spec or spec["default"] is None:
        return "unset"
    value = spec["default"]
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{_number(value)}`"
    if isinstance(value, str):
        return f"`{value}`"
    return f"`{json.dumps(value)}`"


def render() -> str:
    parts: list[str] = []
    for section in sections():
        parts.append(f"### `{section.path}`" if section.path else "### Top level")
        parts.append("")
        if section.description:
            parts.append(section.description[0].upper() + section.description[1:].rstrip(".") + ".")
            parts.append("")
        parts.append(f"Environment: {section.environment}.")
        parts.append("")
        parts.append(
            table(
                ("key", "type", "default", "meaning"),
                [(f.key, f.type, f.default, f.description) for f in section.fields],
            )
        )
        parts.append("")
    return "\n".join(parts)
