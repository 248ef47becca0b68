#!/usr/bin/env bash
# Copies the alert rules (alerts/*.rules.yaml) and Grafana dashboards (dashboards/grafana/*.json) into the Helm
# chart (helm/kafka-client-exporter/files/), removing copies whose source is gone. The copies are committed so
# the chart installs from a checkout or a packaged .tgz as it is; tests/deployment/helm fails when they differ from the
# sources, naming this script. It also regenerates the `config` part of the chart's values.schema.json from the
# exporter's settings model. Run it after changing an alert rule file, a dashboard or a setting.
set -euo pipefail
cd "$(dirname "$0")/.."
chart_files=helm/kafka-client-exporter/files

sync_dir() {  # sync_dir SOURCE_GLOB_DIR PATTERN TARGET_DIR
  local source_dir=$1 pattern=$2 target_dir=$3 source name
  mkdir -p "$target_dir"
  for source in "$source_dir"/$pattern; do
    [ -e "$source" ] || continue
    cp "$source" "$target_dir/$(basename "$source")"
  done
  for name in "$target_dir"/$pattern; do
    [ -e "$name" ] || continue
    [ -e "$source_dir/$(basename "$name")" ] || rm "$name"
  done
}

sync_dir alerts '*.rules.yaml' "$chart_files/alerts"
sync_dir dashboards/grafana '*.json' "$chart_files/dashboards"

# The checkout's own exporter package, whatever the venv's editable install points at.
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m exporter.config.json_schema \
  --chart-values-schema helm/kafka-client-exporter/values.schema.json
