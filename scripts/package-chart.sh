#!/usr/bin/env bash
# Renders the alert rules and their promtool unit tests (alerts/kafka-client-exporter.rules.yaml, alerts/tests/) from
# alerts/templates/ with the tunables of alerts/config.yaml (alerts/render.py), then copies the rules'
# templates, that config, the example Alertmanager configuration (the chart's AlertmanagerConfig reads it) and the
# Grafana dashboards (dashboards/grafana/*.json) into the Helm chart
# (helm/kafka-client-exporter/files/), removing copies whose source is gone: the chart renders the same templates with
# its values over the same config. The rendered files and the copies are committed so that Prometheus loads the rules,
# and the chart installs from a checkout or a packaged .tgz, as they are; the tests fail when they differ from their
# sources, naming this script. It also regenerates the parts of the chart's values.schema.json that follow the code:
# `config` from the exporter's settings model, `prometheusRule.rules` from alerts/config.yaml. Run it after changing
# an alert template or setting, a dashboard or an exporter setting.
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

# The checkout's own packages, whatever the venv's editable install points at.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
.venv/bin/python -m alerts.render --chart-values-schema helm/kafka-client-exporter/values.schema.json

sync_dir alerts/templates '*.rules.yaml' "$chart_files/alerts"
cp alerts/config.yaml alerts/alertmanager.example.yaml "$chart_files/alerts/"
sync_dir dashboards/grafana '*.json' "$chart_files/dashboards"

.venv/bin/python -m exporter.config.json_schema --chart-values-schema helm/kafka-client-exporter/values.schema.json
