"""The configuration's JSON schema, generated from the Settings model."""

from __future__ import annotations

import json

import jsonschema
import pytest

from exporter.config.json_schema import CHART_CONFIG_POINTER, chart_config_schema, config_json_schema, main

MINIMAL = {"clusters": [{"name": "prod", "bootstrap_servers": ["kafka:9092"]}]}


def errors(schema: dict, config: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return ["/".join(map(str, error.absolute_path)) + ": " + error.message for error in validator.iter_errors(config)]


def test_the_schema_accepts_a_configuration_and_rejects_what_the_exporter_rejects() -> None:
    schema = config_json_schema()
    assert errors(schema, MINIMAL) == []
    assert errors(schema, {**MINIMAL, "collection": {"discovery_timeout_seconds": 5}})
    assert errors(schema, {**MINIMAL, "log_level": "verbose"})
    assert errors(schema, {"clusters": []}), "the exporter needs a cluster"
    assert errors(schema, {}), "clusters is required"


def test_titles_and_section_defaults_are_dropped_and_references_point_at_the_definitions() -> None:
    text = json.dumps(config_json_schema())
    assert '"title"' not in text
    assert '"jmx_timeout_seconds": 10.0' not in text, "a default derived from the interval must not read as fixed"
    refs = [part.split('"')[0] for part in text.split('"$ref": "')[1:]]
    assert refs and all(ref.startswith("#/$defs/") for ref in refs)


def test_the_chart_variant_lets_clusters_be_empty_and_points_below_config() -> None:
    schema = chart_config_schema()
    refs = [part.split('"')[0] for part in json.dumps(schema).split('"$ref": "')[1:]]
    assert refs and all(ref.startswith(f"{CHART_CONFIG_POINTER}/definitions/") for ref in refs)
    wrapped = {"type": "object", "properties": {"config": schema}}
    assert errors(wrapped, {"config": {"clusters": []}}) == []
    assert errors(wrapped, {"config": {"clusters": [{"name": "prod", "jmx": {"pasword": "x"}}]}})


def test_main_prints_the_standalone_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert json.loads(capsys.readouterr().out) == config_json_schema()
