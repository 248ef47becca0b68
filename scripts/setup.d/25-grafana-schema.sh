# JSON Schema of Grafana dashboards, generated from @grafana/schema's TypeScript types, for the dashboard tests
# (tests/deployment/dashboards). Written to .tools/grafana-schema/dashboard.schema.json once; needs npm and the registry.
# Sourced by scripts/setup.sh.
grafana_schema_version=13.2.3
grafana_schema_dir=.tools/grafana-schema
grafana_schema_file=$grafana_schema_dir/dashboard.schema.json
if [ ! -s "$grafana_schema_file" ]; then
  echo "setup: generating the Grafana dashboard JSON Schema from @grafana/schema@$grafana_schema_version" >&2
  mkdir -p "$grafana_schema_dir"
  grafana_schema_log=$(mktemp)
  if ! (
    cd "$grafana_schema_dir" &&
      npm pack --silent "@grafana/schema@$grafana_schema_version" &&
      tar -xzf "grafana-schema-$grafana_schema_version.tgz" &&
      npm install --silent --no-audit --no-fund --no-save ts-json-schema-generator &&
      npx --no-install ts-json-schema-generator \
        --path package/dist/types/raw/dashboard/x/types.gen.d.ts --type Dashboard \
        --no-type-check --additional-properties -o dashboard.schema.json.tmp &&
      mv dashboard.schema.json.tmp dashboard.schema.json
  ) >"$grafana_schema_log" 2>&1; then
    cat "$grafana_schema_log" >&2
    rm -f "$grafana_schema_log"
    echo "setup: generating $grafana_schema_file failed" >&2
    exit 1
  fi
  rm -f "$grafana_schema_log"
fi
