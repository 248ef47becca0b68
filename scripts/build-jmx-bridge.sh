#!/usr/bin/env bash
# Compiles the JMX bridge (exporter/sources/jmx_bridge/JmxBridge.java) into the jar the exporter ships
# (exporter/sources/jmx_bridge/jmx-bridge.jar). The runtime image has a JRE only, so the jar is committed; its
# manifest records the sha256 of the source it was built from, and a unit test fails when the source changed
# without this script being run again. Needs the JDK that scripts/setup.sh installs (javac, jar).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=exporter/sources/jmx_bridge
source=$dir/JmxBridge.java
jmxquery_jar=$(.venv/bin/python -c 'from jmxquery import JAR_PATH; print(JAR_PATH)')
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

mkdir "$build/classes"
# --release 11: the oldest JRE a user is likely to point java.path at.
javac --release 11 -nowarn -g:none -cp "$jmxquery_jar" -d "$build/classes" "$source"
printf 'Source-SHA256: %s\n' "$(sha256sum "$source" | cut -d' ' -f1)" >"$build/manifest.txt"
# A fixed timestamp keeps the jar byte-identical across rebuilds of the same source.
jar --create --file "$build/jmx-bridge.jar" --manifest "$build/manifest.txt" --date 2026-01-01T00:00:00Z \
  -C "$build/classes" .
mv "$build/jmx-bridge.jar" "$dir/jmx-bridge.jar"
echo "built $dir/jmx-bridge.jar ($(stat -c %s "$dir/jmx-bridge.jar") bytes)" >&2
