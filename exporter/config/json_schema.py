"""The configuration file's JSON schema, generated from the `Settings` model, so that tools check a configuration
before the exporter starts and can never accept a key the exporter rejects (or miss one it takes).

The Helm chart embeds it as the `config` value of its values.schema.json; regenerate that after changing a setting:

    python -m exporter.config.json_schema --chart-values-schema helm/kafka-client-exporter/values.schema.json

Without an argument the standalone schema of a config.yaml is printed (for an editor's YAML language server).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from exporter.config.settings import Settings

#: Where pydantic points its references; replaced by the location the definitions end up at.
_PYDANTIC_DEFS = "#/$defs/"
#: Schema keywords whose value is one subschema, and those whose value is a list or a name -> subschema map of them.
_ONE_SCHEMA = ("items", "additionalProperties", "not")
_SCHEMA_LIST = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_MAP = ("properties", "$defs", "definitions")

#: JSON pointer of the `config` value inside the chart's values schema; its definitions sit right below it.
CHART_CONFIG_POINTER = "#/properties/config"


def config_json_schema(defs_pointer: str = "#/$defs") -> dict[str, Any]:
    """The schema of a config.yaml, definitions under `defs_pointer` (a JSON pointer ending in the defs keyword).

    Titles go (they repeat the field names) and so do the defaults of whole sections, which pydantic takes from a
    validated instance (a timeout derived from the interval would read as a fixed default).
    """
    schema = Settings.model_json_schema()
    definitions = schema.pop("$defs", {})
    _tidy(schema, defs_pointer + "/")
    for definition in definitions.values():
        _tidy(definition, defs_pointer + "/")
    schema.pop("description", None)
    keyword = defs_pointer.rsplit("/", 1)[-1]
    return {**schema, keyword: dict(sorted(definitions.items()))}


def chart_config_schema() -> dict[str, Any]:
    """The `config` value of the chart's values schema (draft-07, so the definitions go under `definitions`).

    The one difference from the exporter: `clusters` may be empty, so that `helm lint` and `helm template` work
    with the chart's defaults; the chart's NOTES warn that the exporter will not start without a cluster.
    """
    schema = config_json_schema(f"{CHART_CONFIG_POINTER}/definitions")
    schema["required"] = [name for name in schema.get("required", []) if name != "clusters"]
    if not schema["required"]:
        del schema["required"]
    schema["properties"]["clusters"].pop("minItems", None)
    schema["description"] = (
        "The exporter's configuration file (docs/configuration.md), generated from its Settings model by "
        "`python -m exporter.config.json_schema --chart-values-schema <this file>`."
    )
    return schema


def write_chart_values_schema(path: Path) -> bool:
    """Put `chart_config_schema()` into the values schema at `path`; True when the file changed."""
    before = path.read_text(encoding="utf-8")
    values_schema = json.loads(before)
    values_schema["properties"]["config"] = chart_config_schema()
    after = json.dumps(values_schema, indent=2, ensure_ascii=False) + "\n"
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def _tidy(node: dict[str, Any], defs_prefix: str) -> None:
    """Drop titles and section defaults, point references at `defs_prefix`, recursively over subschemas."""
    node.pop("title", None)
    if "$ref" in node:
        node["$ref"] = defs_prefix + node["$ref"].removeprefix(_PYDANTIC_DEFS)
        node.pop("default", None)
    elif isinstance(node.get("default"), dict) and "anyOf" in node:
        node.pop("default")
    for keyword in _ONE_SCHEMA:
        if isinstance(node.get(keyword), dict):
            _tidy(node[keyword], defs_prefix)
    for keyword in _SCHEMA_LIST:
        for child in node.get(keyword, []):
            _tidy(child, defs_prefix)
    for keyword in _SCHEMA_MAP:
        for child in node.get(keyword, {}).values():
            _tidy(child, defs_prefix)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m exporter.config.json_schema",
        description="Print the JSON schema of the exporter's configuration file, or write it into a Helm chart.",
    )
    parser.add_argument(
        "--chart-values-schema",
        type=Path,
        metavar="PATH",
        help="write the schema into the `config` value of this Helm values.schema.json instead of printing it",
    )
    args = parser.parse_args(argv)
    if args.chart_values_schema is None:
        json.dump(config_json_schema(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    changed = write_chart_values_schema(args.chart_values_schema)
    print(f"{args.chart_values_schema}: {'updated' if changed else 'already up to date'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
