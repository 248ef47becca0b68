"""The generated blocks of docs/ agree with the code they are generated from (as the chart's committed copies do,
scripts/package-chart.sh): the configuration reference with the settings model, the metrics table with the catalog,
the alert table with the rules, the panel lists with the dashboards."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docs_gen import metrics, regions
from docs_gen.generated import REGIONS
from exporter.collectors.catalog import CATALOG
from exporter.config.json_schema import config_json_schema

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("region", REGIONS, ids=lambda region: region.name)
def test_the_committed_block_is_what_the_code_renders(region: regions.Region) -> None:
    assert regions.stale(region) is None


def test_a_block_that_differs_is_named_with_the_command(tmp_path: Path) -> None:
    region = next(r for r in REGIONS if r.name == "metrics")
    page = tmp_path / region.page
    page.parent.mkdir(parents=True)
    shutil.copy(ROOT / region.page, page)
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("`kafka_client_exporter_up` | gauge", "`kafka_client_exporter_down` | gauge"))
    assert regions.stale(region, tmp_path) == (
        "docs/metrics.md: block metrics differs from the collectors' catalog (exporter/collectors/catalog.py): "
        "run `python -m docs_gen`"
    )
    assert regions.write(region, tmp_path)
    assert regions.stale(region, tmp_path) is None
    page.write_text(text.replace(regions.end_marker("metrics"), ""))
    problem = regions.stale(region, tmp_path)
    assert problem is not None and problem.startswith("docs/metrics.md: no block between")


def _undescribed(node: dict[str, Any], defs: dict[str, Any], path: str = "") -> Iterator[str]:
    """The dotted paths (`[]` after a list) of the properties below ``node`` without a description, a property
    holding a section included, and those inside the sections it holds."""
    for key, spec in node.get("properties", {}).items():
        child = f"{path}.{key}" if path else key
        if not spec.get("description", "").strip():
            yield child
        for option in [spec, *spec.get("anyOf", [])]:
            for held, suffix in ((option, ""), (option.get("items", {}), "[]")):
                if "$ref" in held:
                    yield from _undescribed(defs[held["$ref"].removeprefix("#/$defs/")], defs, child + suffix)


def test_every_property_of_the_config_schema_has_a_description() -> None:
    """The model is the one source of what a setting means: the schemas users see (`python -m
    exporter.config.json_schema` for an editor, the chart's values.schema.json) and docs/configuration.md all take
    it from there."""
    schema = config_json_schema()
    bare = list(_undescribed(schema, schema["$defs"]))
    assert not bare, f"settings without a description (give their Field one in exporter/config/settings.py): {bare}"


def test_the_reference_names_every_setting_under_its_section() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for path in ("collection", "clusters[].jmx.tls", "clusters[].prometheus.mapping.deprecated"):
        assert f"### `{path}`" in page
    assert "| `interval_seconds` | number, > 0 and ≤ 3600 | `30` |" in page
    assert '| `options` | list of string | `["-XX:TieredStopAtLevel=1"' in page
    assert "Environment: `KCE_COLLECTION__<KEY>`." in page
    assert "Environment: only as part of `KCE_CLUSTERS` (the whole list, JSON)." in page


def test_the_metrics_table_lists_every_family_with_its_labels() -> None:
    rows = {row[0].strip("`"): row for row in metrics.rows()}
    assert list(rows) == [family.sample_name for family in CATALOG]
    assert rows["kafka_client_connections"][2] == (
        "kafka_cluster, broker, listener, client_software_name, client_software_version "
        "(+ network_processor, opt-in: `collection.network_processor_label`)"
    )
    assert rows["kafka_client_exporter_snapshot_stale"][2] == "(none)"
    assert rows["kafka_client_exporter_errors_total"][1] == "counter"
