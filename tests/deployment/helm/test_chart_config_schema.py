"""The `config` part of the chart's values schema is the exporter's settings model: generated from it, and helm
and the exporter accept and reject the same configurations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.config.json_schema import chart_config_schema, write_chart_values_schema
from exporter.config.schema import ConfigError
from exporter.config.settings import load_settings
from tests.deployment.helm.chart import CHART, Helm, by_kind, render

VALUES_SCHEMA = CHART / "values.schema.json"
REGENERATE = (
    "values.schema.json `config` differs from the exporter's Settings model; run "
    ".venv/bin/python -m exporter.config.json_schema "
    "--chart-values-schema helm/kafka-client-exporter/values.schema.json"
)


def test_the_config_schema_is_generated_from_the_settings_model(tmp_path: Path) -> None:
    assert json.loads(VALUES_SCHEMA.read_text())["properties"]["config"] == chart_config_schema(), REGENERATE
    copy = tmp_path / "values.schema.json"
    shutil.copyfile(VALUES_SCHEMA, copy)
    assert not write_chart_values_schema(copy), (
        f"values.schema.json is not formatted as the generator writes it: {REGENERATE}"
    )


def full_config(files: Path) -> dict:
    """Every section of the configuration, with the files it names under `files`."""
    for name in ("ca.crt", "client.crt", "client.key", "key-password", "jmx-password", "policy.yaml"):
        (files / name).write_text("x\n")
    return {
        "log_level": "debug",
        "log_format": "json",
        "web": {"host": "0.0.0.0", "port": 9784, "telemetry_path": "/metrics", "config_file": str(files / "web.yml")},
        "collection": {
            "interval_seconds": 15,
            "max_concurrency": 4,
            "jmx_timeout_seconds": 5,
            "protocol_timeout_seconds": 5,
            "network_processor_label": True,
            "max_versions_per_cluster": 50,
            "stale_after_intervals": 4,
        },
        "java": {"path": "/usr/bin/java", "options": ["-Xss512k"]},
        "policy_file": str(files / "policy.yaml"),
        "policy": {"target_release": "4.0.0"},
        "clusters": [
            {
                "name": "prod",
                "bootstrap_servers": ["kafka-0.kafka:9093"],
                "jmx": {"port": 9999, "username": "monitor", "password_file": str(files / "jmx-password")},
                "brokers": [
                    {"id": 0, "host": "kafka-0.kafka"},
                    {"id": 1, "jmx_url": "service:jmx:rmi:///jndi/rmi://kafka-1.kafka:9999/jmxrmi"},
                ],
                "security": {
                    "protocol": "SASL_SSL",
                    "sasl": {"mechanism": "SCRAM-SHA-512", "username": "exporter", "password": "inline"},
                    "tls": {
                        "ca_file": str(files / "ca.crt"),
                        "cert_file": str(files / "client.crt"),
                        "key_file": str(files / "client.key"),
                        "key_password_file": str(files / "key-password"),
                        "check_hostname": False,
                    },
                },
            },
            {"name": "staging", "bootstrap_servers": ["kafka.staging:9092"]},
        ],
    }


def values_file(directory: Path, config: dict) -> Path:
    path = directory / "values.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def test_a_full_configuration_passes_helm_and_the_exporter(helm: Helm, tmp_path: Path) -> None:
    config = full_config(tmp_path)
    manifest = render(helm, "--values", values_file(tmp_path, config))
    (config_map,) = by_kind(manifest, "ConfigMap")
    assert yaml.safe_load(config_map["data"]["config.yaml"]) == config
    rendered = tmp_path / "config.yaml"
    rendered.write_text(config_map["data"]["config.yaml"])
    assert [cluster.name for cluster in load_settings(rendered).clusters] == ["prod", "staging"]


def change(path: str, value: object) -> dict:
    """A one-cluster configuration with `value` at the dotted `path` (a number is a list index)."""
    config: dict = {"clusters": [{"name": "prod", "bootstrap_servers": ["kafka:9092"]}]}
    node: Any = config
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[int(last) if isinstance(node, list) else last] = value
    return config


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        # Accepted by the schema before it was generated; the exporter exits 2 on it.
        ("collection.discovery_timeout_seconds", 5, "/config/collection"),
        ("collection.max_concurrency", 0, "/config/collection/max_concurrency"),
        ("collection.interval_seconds", "fast", "/config/collection/interval_seconds"),
        ("log_level", "verbose", "/config/log_level"),
        ("log_format", "text", "/config/log_format"),
        ("web.port", 70000, "/config/web/port"),
        ("clusters.0.name", "prod cluster", "/config/clusters/0/name"),
        ("clusters.0.jmx", {"port": 9999, "pasword_file": "/x"}, "/config/clusters/0/jmx"),
        ("clusters.0.security", {"protocol": "SASL_SSL", "sasl": {"mechanism": "MD5"}}, "/config/clusters/0/security"),
        ("clusters.0.brokers", [{"id": -1, "host": "kafka"}], "/config/clusters/0/brokers/0/id"),
        ("polcy_file", "/policy.yaml", "polcy_file"),
    ],
)
def test_helm_and_the_exporter_reject_the_same_configurations(
    helm: Helm, tmp_path: Path, path: str, value: object, where: str
) -> None:
    config = change(path, value)
    result = helm("template", "kce", CHART, "--values", values_file(tmp_path, config))
    assert result.returncode != 0
    assert where in result.stderr, result.stderr
    rendered = tmp_path / "config.yaml"
    rendered.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError):
        load_settings(rendered)


@pytest.mark.parametrize("level", ["warn", "WARNING", "INFO"])
def test_helm_and_the_exporter_accept_the_log_level_names_of_before_and_now(
    helm: Helm, tmp_path: Path, level: str
) -> None:
    config = change("log_level", level)
    result = helm("template", "kce", CHART, "--values", values_file(tmp_path, config))
    assert result.returncode == 0, result.stderr
    rendered = tmp_path / "config.yaml"
    rendered.write_text(yaml.safe_dump(config))
    assert load_settings(rendered).log_level == level.lower().replace("warning", "warn")


def test_the_chart_renders_without_a_cluster_and_warns() -> None:
    """The one difference from the exporter: the chart's defaults have no cluster (NOTES.txt warns)."""
    config = json.loads(VALUES_SCHEMA.read_text())["properties"]["config"]
    assert "clusters" not in config.get("required", []) and "minItems" not in config["properties"]["clusters"]
    assert "config.clusters is empty" in (CHART / "templates" / "NOTES.txt").read_text()
